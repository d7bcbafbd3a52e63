/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cli_options.h - the one table of the agent's command-line options. Each
 * entry names an option (long name, getopt value, argument and metavar),
 * the commands that take it, whether a config file may set it, and its
 * --help text. From it come every command's getopt_long table
 * (ks_cli_getopt_init), the option lists of --help (ks_cli_help), the keys
 * of 'agent run --config FILE' (ks_cli_find, config_file.c), and the check
 * that the man page lists the same options (tests/unit/t_cli_options.c).
 *
 * An option whose help differs between commands (--top, --iface, ...) has
 * one entry per wording, each with its own commands; no command has a name
 * or a getopt value twice. Values are letters as the command parsers and
 * their shared handlers (ks_view_opt, ks_ring_spec_opt) switch on them;
 * only entries flagged KS_OPT_SHORT are also short options (-v, -h).
 */
#ifndef KS_CLI_OPTIONS_H
#define KS_CLI_OPTIONS_H

#include <getopt.h>
#include <stdio.h>
#include "core/ring.h"

/* The commands, as bits of ks_cli_opt.cmds. */
#define KS_CMD_RUN         (1u << 0)
#define KS_CMD_REPORT      (1u << 1)
#define KS_CMD_TRACE       (1u << 2)
#define KS_CMD_DETACH      (1u << 3)
#define KS_CMD_RING_LOOKUP (1u << 4)
#define KS_CMD_RING_DIFF   (1u << 5)
#define KS_CMD_REPLAY      (1u << 6)
#define KS_CMD_RING_GET    (1u << 7)
#define KS_CMD_RING_SET    (1u << 8)
#define KS_CMD_FLEET       (1u << 9)
#define KS_CMD_PINS_GET    (1u << 10)
#define KS_CMD_PINS_SET    (1u << 11)
#define KS_CMD_PINS        (KS_CMD_PINS_GET | KS_CMD_PINS_SET)
#define KS_CMD_FOLLOW      (1u << 12)
#define KS_CMD_RING_PLAN   (1u << 20) /* issue 26; far from the others' */
#define KS_CMD_RING                                                            \
	(KS_CMD_RING_LOOKUP | KS_CMD_RING_DIFF | KS_CMD_RING_GET |             \
	 KS_CMD_RING_SET | KS_CMD_RING_PLAN)
/* the commands that talk to etcd */
#define KS_CMD_ETCD                                                            \
	(KS_CMD_RUN | KS_CMD_RING_GET | KS_CMD_RING_SET | KS_CMD_FLEET |       \
	 KS_CMD_PINS | KS_CMD_FOLLOW | KS_CMD_RING_PLAN)

/* ks_cli_opt.flags */
#define KS_OPT_CONF  (1u << 0) /* a key of 'agent run --config FILE' */
#define KS_OPT_SHORT (1u << 1) /* val is a short option too (-v, -h) */
#define KS_OPT_HIDE  (1u << 2) /* in no option list: --help itself */
/* a test-only switch (util/test_switches.h): refused unless the
 * environment allows it (ks_opt_gated_set), and hidden like KS_OPT_HIDE */
#define KS_OPT_TEST (1u << 3)

/* The option list of --help an entry is printed in. */
enum ks_opt_group {
	KS_GRP_OPTIONS, /* OPTIONS */
	KS_GRP_RING,    /* RING: the clients' ring (run, replay) */
	KS_GRP_HOT,     /* HOT KEYS (run) */
	KS_GRP_METRICS, /* METRICS (run) */
	KS_GRP_ETCD,    /* ETCD: the fleet's ring (run, ring get/set) */
};

/* getopt values of options without a letter of their own */
#define KS_OPTV_STREAM_STATE 0x1001
#define KS_OPTV_CONFIG       0x1002
/* the etcd options (cli/etcd_cli.c) */
#define KS_OPTV_ETCD          0x1010
#define KS_OPTV_CLUSTER       0x1011
#define KS_OPTV_ETCD_CA       0x1012
#define KS_OPTV_ETCD_CERT     0x1013
#define KS_OPTV_ETCD_KEY      0x1014
#define KS_OPTV_ETCD_USER     0x1015
#define KS_OPTV_ETCD_PWFILE   0x1016
#define KS_OPTV_ETCD_OPTIONAL 0x1017
#define KS_OPTV_IF_REVISION   0x1018
#define KS_OPTV_FORCE         0x1019
#define KS_OPTV_ETCD_TIMEOUT  0x101a
#define KS_OPTV_VIEW_FILE     0x101b
#define KS_OPTV_VIEW_DROP     0x101c
#define KS_OPTV_HOT_EVENTS    0x1030
#define KS_OPTV_HASH_ONLY     0x1031
#define KS_OPTV_COPY_PROTOCOL 0x1032
#define KS_OPTV_FILL_DELAY    0x1033
#define KS_OPTV_BALANCE       0x1036
#define KS_OPTV_FLEET_COMPAT  0x1037
#define KS_OPTV_LOAD_EVERY    0x1038
#define KS_OPTV_FLEET_SCHEMA  0x1039
#define KS_OPTV_KEEPALIVE     0x103a
/* 'agent replay --interval' */
#define KS_OPTV_RANKED       0x1034
#define KS_OPTV_HOT_FRACTION 0x1035 /* replay's 'H' is --hash-only */
/* the ring's client presets (core/ring.h) and ring diff's sides */
#define KS_OPTV_CLIENT        KS_RING_OPT_CLIENT
#define KS_OPTV_FROM_DIST     0x1041
#define KS_OPTV_TO_DIST       0x1042
#define KS_OPTV_FROM_CLIENT   0x1043
#define KS_OPTV_TO_CLIENT     0x1044
#define KS_OPTV_SHARDS_FILE2  0x1045 /* diff: 'F' is --from there */
#define KS_OPTV_KEYS_FILE     0x1046
#define KS_OPTV_OWNER_REPLIES 0x1070
/* a ring of explicit points (issue 26, docs/placement.md) */
#define KS_OPTV_PLAN          0x10c0
#define KS_OPTV_FROM_PLAN     0x10c1
#define KS_OPTV_TO_PLAN       0x10c2
#define KS_OPTV_CLIENTS       0x10c3
#define KS_OPTV_WINDOW        0x10c4
#define KS_OPTV_TARGET        0x10c5
#define KS_OPTV_OUT           0x10c6
#define KS_OPTV_RING_FILE     0x10c7
#define KS_OPTV_LOAD_FILE     0x10c8
#define KS_OPTV_MAX_POINTS    0x10c9
#define KS_OPTV_RATE_SCALING  0x1071
#define KS_OPTV_LIMIT_AUTO    0x10d0 /* the automatic cap (docs/limits.md) */
#define KS_OPTV_LIMIT_HEAD    0x1072
#define KS_OPTV_STALL         0x1073
#define KS_OPTV_SAMPLE_LOG    0x1074 /* the sample log (issue 27) */
#define KS_OPTV_DRAIN_THREADS 0x1075 /* its drain threads */
#define KS_OPTV_DRAIN_SHARE   0x1076 /* test only: a log drained twice */
#define KS_OPTV_HK            0x1077 /* test: --housekeeping thread|loop */
#define KS_OPTV_HK_DELAY      0x1078 /* test: --housekeeping-delay-ms */
#define KS_OPTV_THREAD_CAPS   0x1079 /* test: --thread-caps drop|keep */
#define KS_OPTV_PLACE_TARGET  0x107a /* the ring placement's bound */
#define KS_OPTV_PLACE_SCALING 0x107b /* test only: a placement adds 1 */

/* test only: the automatic cap from the policy's verdict */
#define KS_OPTV_LIMIT_AUTO_RESIDUAL 0x10d1
#define KS_OPTV_ETCD_LOOP_CALL      0x10d2

/* 'agent ring diff --keys N' */
#define KS_DIFF_KEYS_DEFAULT 100000
#define KS_DIFF_KEYS_MAX     10000000

struct ks_cli_opt {
	const char *name;    /* the long name, without the dashes */
	int val;             /* what getopt_long returns for it */
	int has_arg;         /* no_argument or required_argument */
	const char *metavar; /* the value's name in help and man page */
	unsigned int cmds;   /* KS_CMD_* of the commands that take it */
	unsigned int flags;  /* KS_OPT_* */
	enum ks_opt_group group;
	/* --help text, a printf format of arg[]: the first line follows the
	 * option, the others are indented under it */
	const char *help;
	int arg[2];
};

extern const struct ks_cli_opt ks_cli_opts[];
extern const unsigned int ks_cli_nopts;

/* Most options one command takes (a unit test checks it). */
#define KS_CLI_MAX_OPTS 96

/* A command's getopt_long arguments, built from the table. */
struct ks_cli_getopt {
	struct option lo[KS_CLI_MAX_OPTS + 1];
	char shorts[16]; /* ":" and the KS_OPT_SHORT letters */
	unsigned int n;
};

/* Fills g for the one command cmd (a KS_CMD_* bit). */
void ks_cli_getopt_init(struct ks_cli_getopt *g, unsigned int cmd);

/* The entry of cmd named exactly name, or NULL. */
const struct ks_cli_opt *ks_cli_find(unsigned int cmd, const char *name);

/* The entry of cmd whose getopt value is val, or NULL. */
const struct ks_cli_opt *ks_cli_by_val(unsigned int cmd, int val);

/*
 * The entry of cmd whose name starts with prefix, when exactly one does
 * (what getopt_long would take for an abbreviation), else NULL; the entry
 * named except (or NULL) is left out.
 */
const struct ks_cli_opt *ks_cli_prefix(unsigned int cmd, const char *prefix,
				       const char *except);

/* "-v, --verbose", "--iface IF", "--json": the entry as --help shows it. */
void ks_cli_synopsis(const struct ks_cli_opt *o, char *buf, size_t len);

/* Prints the --help lines of cmd's entries in group, in table order. */
void ks_cli_help(FILE *f, unsigned int cmd, enum ks_opt_group group);

#endif
