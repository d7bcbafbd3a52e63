// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Program tests: the real keysteer BPF object under BPF_PROG_TEST_RUN.
 * Needs root (loading BPF); without it every group is one SKIP line.
 *
 *   prog_test [-l] [-g GROUP]... [TEST-GLOB]...
 *
 * -g runs only the named groups (repeatable; default all, in order);
 * TEST-GLOB reports only the tests whose name matches one of the shell
 * globs (the rest of their group still runs, silently); -l lists groups.
 * Example: prog_test -g stream 'stream_text_*'
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kp.h"
#include "groups.h"

static const struct kt_group groups[] = {
	{ "setup", t_setup_group },
	{ "encap", t_encap_group },
	{ "text", t_text_group },
	{ "binary", t_binary_group },
	{ "pipeline", t_pipeline_group },
	{ "stream", t_stream_group },
	{ "ports", t_ports_group },
	{ "sampling", t_sampling_group },
	{ "slog", t_slog_group },
	{ "fastpath", t_fastpath_group },
	{ "malformed", t_malformed_group },
	{ "trace", t_trace_group },
	{ "ring", t_ring_group },
	{ "ring_swap", t_ring_swap_group },
	{ "ring_cache", t_ring_cache_group },
	{ "place", t_place_group },
	{ "dedicated", t_dedicated_group },
	{ "key_run", t_key_run_group },
	{ "fuzz_found", t_fuzz_found_group },
	{ "hot", t_hot_group },
	{ "reply", t_reply_group },
	{ "limit", t_limit_group },
	{ "stack", t_stack_group },
	/* moves this process into a network namespace of its own: last */
	{ "steer", t_steer_group },
};
#define NGROUPS (sizeof(groups) / sizeof(groups[0]))

int main(int argc, char **argv)
{
	bool want[NGROUPS];
	size_t i;
	int err, rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = kt_parse_groups("prog_test", argc, argv, groups, NGROUPS, want);
	if (rc >= 0)
		return rc;
	if (geteuid() != 0) {
		kt_begin("prog_tests");
		kt_skipf("needs root to load BPF programs");
		kt_end();
		return kt_summary("prog");
	}
	err = kp_setup();
	if (err) {
		kt_begin("prog_load");
		kt_failf(__FILE__, __LINE__,
			 "cannot load build/keysteer.bpf.o: %s",
			 strerror(-err));
		kt_end();
		kp_teardown();
		return kt_summary("prog");
	}
	for (i = 0; i < NGROUPS; i++)
		if (want[i])
			groups[i].run();
	kp_teardown();
	return kt_summary("prog");
}
