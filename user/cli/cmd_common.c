// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_common.c - what the commands share (see cmds.h): the root check,
 * finding the pin folder of a running agent, and checking that stdout got
 * the whole result.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dp/attach.h"
#include "cli/cmds.h"
#include "util/log.h"
#include "util/opts.h"

int ks_require_root(const char *doing)
{
	if (geteuid() == 0)
		return 0;
	ks_err("%s needs root (CAP_BPF, CAP_NET_ADMIN and CAP_SYS_ADMIN); run it with sudo",
	       doing);
	return KS_EXIT_FAIL;
}

int ks_stdout_flush(void)
{
	return fflush(stdout) == EOF || ferror(stdout) ? -EIO : 0;
}

/*
 * A write that fails inside printf() sets only the stream's error flag
 * (glibc drops the buffer, so a later fflush() succeeds and errno is long
 * gone): the flag is what says the output is incomplete, and errno is
 * named only when the last flush or the close saw it. A closed pipe
 * kills the command by SIGPIPE (exit 141 in a shell) unless SIGPIPE is
 * ignored, as a watching command or an inherited SIG_IGN has it; then it
 * is this EPIPE.
 */
int ks_stdout_close(int rc)
{
	int err = 0, failed;

	failed = fflush(stdout) == EOF;
	if (failed)
		err = errno;
	failed |= ferror(stdout) != 0;
	/* EBADF with nothing lost: stdout was closed (>&-) and the command
	 * wrote nothing to it, which is no failure (as gnulib's close_stdout) */
	if (fclose(stdout) == EOF && (failed || errno != EBADF)) {
		if (!failed)
			err = errno;
		failed = 1;
	}
	if (!failed)
		return rc;
	ks_err("the output on stdout is incomplete: writing it failed%s%s%s; check the disk space or the pipe it goes to",
	       err ? " (" : "", err ? strerror(err) : "", err ? ")" : "");
	return rc ? rc : KS_EXIT_FAIL;
}

static int no_bpffs(void)
{
	ks_err("keysteer is not attached: no BPF filesystem is mounted on %s in this mount namespace; start it with 'agent run --iface IF' (note: 'ip netns exec' gives every command its own /sys, so run the agent and report under 'nsenter --net=/run/netns/NS' to share the pins)",
	       KS_BPFFS);
	return KS_EXIT_FAIL;
}

int ks_find_attached(const char *ifname, char out_ifname[IF_NAMESIZE],
		     char *pin_dir, size_t len)
{
	char names[8][IF_NAMESIZE], err[KS_ERRLEN];
	struct stat st;
	int n, i;

	if (ifname) {
		if (ks_check_ifname_syntax(ifname, err, sizeof(err))) {
			ks_err("%s", err);
			return KS_EXIT_USAGE;
		}
		if (!ks_bpffs_mounted())
			return no_bpffs();
		ks_pin_dir(ifname, pin_dir, len);
		if (stat(pin_dir, &st)) {
			ks_err("keysteer is not attached to %s; start it with 'agent run --iface %s'",
			       ifname, ifname);
			return KS_EXIT_FAIL;
		}
		snprintf(out_ifname, IF_NAMESIZE, "%s", ifname);
		return 0;
	}
	if (!ks_bpffs_mounted())
		return no_bpffs();
	n = ks_list_attached(names, 8);
	if (n == 0) {
		ks_err("keysteer is not attached to any interface; start it with 'agent run --iface IF'");
		return KS_EXIT_FAIL;
	}
	if (n > 1) {
		char list[8 * (IF_NAMESIZE + 2)] = "";

		for (i = 0; i < n && i < 8; i++) {
			strcat(list, i ? ", " : "");
			strcat(list, names[i]);
		}
		ks_err("keysteer is attached to %d interfaces (%s%s); choose one with --iface",
		       n, list, n > 8 ? ", ..." : "");
		return KS_EXIT_USAGE;
	}
	snprintf(out_ifname, IF_NAMESIZE, "%s", names[0]);
	ks_pin_dir(names[0], pin_dir, len);
	return 0;
}
