// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Program tests: the real keysteer BPF object under BPF_PROG_TEST_RUN.
 * Needs root (loading BPF); without it every group is one SKIP line.
 */
#include <string.h>
#include <unistd.h>
#include "kp.h"
#include "groups.h"

int main(void)
{
	int err;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		kt_begin("prog_tests");
		kt_skipf("needs root to load BPF programs");
		kt_end();
		return kt_summary("prog");
	}
	err = kp_setup();
	if (err) {
		kt_begin("prog_load");
		kt_failf(__FILE__, __LINE__, "cannot load build/keysteer.bpf.o: %s",
			 strerror(-err));
		kt_end();
		kp_teardown();
		return kt_summary("prog");
	}
	t_setup_group();
	t_encap_group();
	t_text_group();
	t_binary_group();
	t_pipeline_group();
	t_ports_group();
	t_sampling_group();
	t_fastpath_group();
	t_malformed_group();
	t_trace_group();
	t_ring_group();
	t_ring_swap_group();
	t_fuzz_found_group();
	t_hot_group();
	/* moves this process into a network namespace of its own */
	t_steer_group();
	kp_teardown();
	return kt_summary("prog");
}
