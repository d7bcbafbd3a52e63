/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cmds.h - the agent's subcommands (each takes its own argv, argv[0] being
 * the subcommand name) and what they share: exit codes, help texts, root
 * check, finding the pin folder of a running agent.
 */
#ifndef KS_CMDS_H
#define KS_CMDS_H

#include <stdio.h>
#include <limits.h>
#include <net/if.h>

#define KS_EXIT_OK    0
#define KS_EXIT_FAIL  1 /* run-time error, or nothing attached */
#define KS_EXIT_USAGE 2 /* bad command line */

int cmd_run(int argc, char **argv);
int cmd_detach(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_ring(int argc, char **argv);
/* 'agent ring plan' (cmd_ring_plan.c) */
int ks_ring_plan_cmd(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_fleet(int argc, char **argv);
int cmd_pins(int argc, char **argv);
int cmd_follow(int argc, char **argv);

/* Help texts (USAGE and EXAMPLES) of the whole tool and each command. */
void ks_help_main(FILE *f);
void ks_help_run(FILE *f);
void ks_help_detach(FILE *f);
void ks_help_report(FILE *f);
void ks_help_trace(FILE *f);
void ks_help_ring(FILE *f);
void ks_help_replay(FILE *f);
void ks_help_fleet(FILE *f);
void ks_help_pins(FILE *f);
void ks_help_follow(FILE *f);
/* Help by command name; 0 if the name is a command. */
int ks_help_for(const char *cmd, FILE *f);

/* The usage error of an unknown or malformed option, exit code 2. */
int ks_usage_error(const char *cmd, const char *what);
/* The usage error of getopt's ':' (no value) or '?' (unknown option). */
int ks_bad_option(const char *cmd, int c, char **argv);
/* The usage error of a leftover argument, or 0 when there is none. */
int ks_no_args(const char *cmd, int argc, char **argv);

/*
 * A command's result on stdout, checked: a full disk or a closed pipe
 * must not pass for a complete report. ks_stdout_flush() is for loops that
 * print until stopped (nonzero once a write failed: stop printing);
 * ks_stdout_close() is main()'s last word, turning a clean exit code into
 * KS_EXIT_FAIL, with a message, when any of the output was lost.
 */
int ks_stdout_flush(void);
int ks_stdout_close(int rc);

/* Prints why and returns KS_EXIT_FAIL when not root; 0 when root. */
int ks_require_root(const char *doing);

/*
 * The pin folder of the agent on ifname, or of the only attached
 * interface when ifname is NULL. Fills out_ifname and pin_dir; on failure
 * prints why and returns the exit code.
 */
int ks_find_attached(const char *ifname, char out_ifname[IF_NAMESIZE],
		     char *pin_dir, size_t len);

#endif
