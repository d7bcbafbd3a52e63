/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * config_file.h - 'agent run --config FILE': one 'key = value' per line,
 * the keys being the long options of 'agent run' without the dashes.
 *
 * The file becomes command-line words ("--sample=8", "--verbose") spliced
 * in where "--config FILE" stood, so parse_run()'s getopt table stays the
 * one list of keys and its checks the one set of value checks. What getopt
 * or a value check refuses is traced back to its FILE:LINE through the
 * word's address (ks_conf_bad_option, called from ks_bad_option).
 */
#ifndef KS_CONFIG_FILE_H
#define KS_CONFIG_FILE_H

#include <stddef.h>

#define KS_CONF_FILE_MAX (1u << 20) /* bytes of a config file */
/* A line holds a whole --shards list of KS_MAX_SHARDS IPv4 shards. */
#define KS_CONF_LINE_MAX 65536

/* One setting: its line, and the word it became (NULL for 'flag = no'). */
struct ks_conf_entry {
	unsigned int line;
	char *key;
	char *value;
	char *word;
};

struct ks_conf {
	char *name;                 /* the file as given, for messages */
	struct ks_conf_entry *e;
	size_t n;
};

/*
 * Parses buf (len bytes, need not be NUL-terminated) into c. name is the
 * file name messages start with. Returns 0, or -EINVAL with
 * "NAME:LINE: <what is wrong>; <what to do>" in err (-ENOMEM: out of
 * memory). Pure: no file or global state.
 */
int ks_conf_parse(const char *name, const char *buf, size_t len,
		  struct ks_conf *c, char *err, size_t errlen);

/* Reads path (at most KS_CONF_FILE_MAX bytes) and parses it. */
int ks_conf_load(const char *path, struct ks_conf *c, char *err,
		 size_t errlen);

void ks_conf_free(struct ks_conf *c);

/* The entry whose word is exactly this pointer, or NULL. */
const struct ks_conf_entry *ks_conf_entry_of(const struct ks_conf *c,
					     const char *word);

/*
 * Where argv (run's, argv[0] = "run") names the config file: *at is the
 * index of "--config" or "--config=FILE", *span 2 or 1, *path the file.
 * Returns 0 with *at = -1 when there is none, -EINVAL with a message when
 * the value is missing or --config is given twice. Stops at "--".
 */
int ks_conf_find(int argc, char **argv, int *at, int *span, const char **path,
		 char *err, size_t errlen);

/*
 * A new argv: argv with its span words at index at replaced by the
 * config's words, then "--" unless argv already has one (so getopt always
 * stops on a word of its own, and an error on the last config word can
 * be told from an error found after the options). The array is malloc'd
 * (free it alone: the words belong to argv and c); *out_argc its length.
 */
int ks_conf_splice(int argc, char **argv, int at, int span,
		   const struct ks_conf *c, char ***out, int *out_argc);

/*
 * For ks_bad_option(): when word came from the config file that the
 * running 'agent run' read, prints "agent: FILE:LINE: ..." for getopt's
 * result c (':' no value, '?' unknown key or a value given to a flag)
 * and returns 1; otherwise prints nothing and returns 0.
 */
int ks_conf_bad_option(int c, const char *word);

/*
 * getopt_long takes a unique prefix of an option ("samp" for "sample"); a
 * config file must name keys in full. When word came from the running
 * config file and its key is not name (the option getopt matched), prints
 * "agent: FILE:LINE: unknown key ..." and returns 1; else returns 0.
 */
int ks_conf_abbreviated(const char *word, const char *name);

/* 'agent run' with --config expanded; argv[0] is "run". */
int cmd_run_config(int argc, char **argv);

#endif
