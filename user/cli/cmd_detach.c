// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* cmd_detach.c - 'agent detach --iface IF': removes what a run left. */
#include <getopt.h>
#include <string.h>
#include "dp/attach.h"
#include "cli/cli_options.h"
#include "cli/cmds.h"
#include "dp/bpf_log.h"
#include "util/opts.h"

int cmd_detach(int argc, char **argv)
{
	struct ks_cli_getopt g;
	const char *ifname = NULL;
	char err[KS_ERRLEN];
	int c, verbose = 0, rc;

	ks_cli_getopt_init(&g, KS_CMD_DETACH);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, g.shorts, g.lo, NULL)) != -1) {
		switch (c) {
		case 'i':
			ifname = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			ks_help_detach(stdout);
			return KS_EXIT_OK;
		default:
			return ks_bad_option("detach", c, argv);
		}
	}
	if (optind < argc)
		return ks_no_args("detach", argc, argv);
	ks_log_init(verbose ? KS_LOG_DEBUG : KS_LOG_INFO);
	if (!ifname) {
		ks_err("detach needs --iface IF; name the interface keysteer was attached to");
		return KS_EXIT_USAGE;
	}
	/* The interface may be gone already: its pin folder still is not. */
	if (ks_check_ifname_syntax(ifname, err, sizeof(err))) {
		ks_err("%s", err);
		return KS_EXIT_USAGE;
	}
	rc = ks_require_root("detaching keysteer");
	if (rc)
		return rc;
	if (ks_detach_iface(ifname)) {
		ks_err("nothing attached to %s; nothing to do (see 'agent report' for where keysteer runs)",
		       ifname);
		return KS_EXIT_FAIL;
	}
	return KS_EXIT_OK;
}
