/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * config_file.h - 'agent run --config FILE': one 'key = value' per line,
 * the keys being the long options of 'agent run' without the dashes.
 *
 * The file is parsed into settings (ks_conf_parse), then each setting is
 * looked up in the option table (cli_options.h) and its value given to the
 * same handler the command line's value goes to (ks_conf_apply), at the
 * place of "--config FILE" among the options: options after it override
 * the file. Every refusal names FILE:LINE.
 */
#ifndef KS_CONFIG_FILE_H
#define KS_CONFIG_FILE_H

#include <stddef.h>
#include "util/opts.h"
#include "util/test_switches.h"

#define KS_CONF_FILE_MAX (1u << 20) /* bytes of a config file */
/* A line holds a whole --shards list of KS_MAX_SHARDS IPv4 shards. */
#define KS_CONF_LINE_MAX 65536

/* One setting: its line, its key and its value (quotes removed). */
struct ks_conf_entry {
	unsigned int line;
	char *key;
	char *value;
};

struct ks_conf {
	char *name; /* the file as given, for messages */
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
int ks_conf_load(const char *path, struct ks_conf *c, char *err, size_t errlen);

void ks_conf_free(struct ks_conf *c);

/*
 * Where argv (run's, argv[0] = "run") names the config file: *at is the
 * index of "--config" or "--config=FILE", *span 2 or 1, *path the file.
 * Returns 0 with *at = -1 when there is none, -EINVAL with a message when
 * the value is missing or --config is given twice. Stops at "--".
 */
int ks_conf_find(int argc, char **argv, int *at, int *span, const char **path,
		 char *err, size_t errlen);

/*
 * Sets one option from a value, as a command's parser does with getopt's
 * result: val is the option's ks_cli_opt.val, arg its value (NULL for a
 * flag). Returns 1 when set, 0 when val is no option of the command, -1
 * when the value is refused, with "<what>; <what to do>" in err.
 */
typedef int (*ks_opt_set_fn)(void *ctx, int val, const char *arg, char *err,
			     size_t errlen);

/*
 * A command's setter behind the gate of the test-only switches (entries
 * flagged KS_OPT_TEST): ks_opt_gated_set is a ks_opt_set_fn over a
 * struct ks_opt_gate, given to ks_conf_apply and called for the command
 * line's options alike, so each switch is gated in this one place. A
 * switch passes on to set only with KEYSTEER_TEST_SWITCHES=1, and is then
 * noted in ts for the warning at start; else -1 with the message.
 */
struct ks_opt_gate {
	unsigned int cmd; /* a KS_CMD_* bit */
	ks_opt_set_fn set;
	void *ctx;
	struct ks_test_switches ts; /* the switches taken */
};

int ks_opt_gated_set(void *gate, int val, const char *arg, char *err,
		     size_t errlen);

/* Why ks_conf_apply refused a file. */
struct ks_conf_error {
	char value[KS_ERRLEN * 2]; /* the option's own message, or "" */
	char *line; /* "NAME:LINE: <what>; <what to do>", any length (keys
		     * and values are quoted whole); malloc'd, free() it.
		     * NULL with -ENOMEM */
};

/*
 * Gives c's settings, in line order, to set(ctx, ...) as options of the
 * command cmd (a KS_CMD_* bit; cmdname names it in messages). A key is the
 * full long name of one of cmd's options a config file may set; a flag
 * takes 'yes' (set) or 'no' (left alone), any other option its value as
 * written. Returns 0, or -EINVAL at the first refused setting with e
 * filled: e->line always, e->value too when the option's handler refused
 * the value (print it first); -ENOMEM when the message found no memory.
 */
int ks_conf_apply(const struct ks_conf *c, unsigned int cmd,
		  const char *cmdname, ks_opt_set_fn set, void *ctx,
		  struct ks_conf_error *e);

#endif
