// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * agent.c - main(): picks the subcommand. "--report" anywhere on the
 * command line is an alias for the report command, so
 * 'agent --report --iface eth1' and 'agent report --iface eth1' agree.
 * Whatever the command, its exit code says whether stdout got all of it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "keysteer.h"
#include "cli/cmds.h"
#include "dp/bpf_log.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "run", cmd_run },       { "detach", cmd_detach },
	{ "report", cmd_report }, { "trace", cmd_trace },
	{ "ring", cmd_ring },     { "replay", cmd_replay },
	{ "fleet", cmd_fleet },   { "pins", cmd_pins },
	{ "follow", cmd_follow },
};

/* Drops every "--report" and returns whether there was one. */
static int take_report_alias(int *argc, char **argv)
{
	int i, o = 1, found = 0;

	for (i = 1; i < *argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--report")) {
			found = 1;
			continue;
		}
		argv[o++] = argv[i];
	}
	for (; i < *argc; i++)
		argv[o++] = argv[i];
	argv[o] = NULL;
	*argc = o;
	return found;
}

static int dispatch(int argc, char **argv)
{
	const char *cmd;
	size_t i;

	if (take_report_alias(&argc, argv)) {
		/* argv[0] stands in for the command name getopt skips;
		 * a leading "report" left over is dropped too. */
		if (argc > 1 && !strcmp(argv[1], "report"))
			return cmd_report(argc - 1, argv + 1);
		return cmd_report(argc, argv);
	}
	/* "agent -v run ..." reads as "agent run -v ...". */
	if (argc > 2 &&
	    (!strcmp(argv[1], "-v") || !strcmp(argv[1], "--verbose"))) {
		char *v = argv[1];

		argv[1] = argv[2];
		argv[2] = v;
	}
	if (argc < 2) {
		ks_help_main(stderr);
		return KS_EXIT_USAGE;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V") ||
	    !strcmp(cmd, "version")) {
		printf("keysteer %s\n", KS_VERSION_STR);
		return KS_EXIT_OK;
	}
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		ks_help_main(stdout);
		return KS_EXIT_OK;
	}
	if (!strcmp(cmd, "help")) {
		if (argc > 2 && ks_help_for(argv[2], stdout)) {
			fprintf(stderr,
				"agent: no command '%s'; the commands are run, report, trace, detach, ring, replay, fleet\n",
				argv[2]);
			return KS_EXIT_USAGE;
		}
		if (argc <= 2)
			ks_help_main(stdout);
		return KS_EXIT_OK;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (!strcmp(cmd, commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr,
		"agent: unknown command '%s'; the commands are run, report, trace, detach, ring, replay, fleet (see 'agent --help')\n",
		cmd);
	return KS_EXIT_USAGE;
}

int main(int argc, char **argv)
{
	/* Trace and report lines reach a pipe promptly. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	ks_log_init(KS_LOG_INFO);
	return ks_stdout_close(dispatch(argc, argv));
}
