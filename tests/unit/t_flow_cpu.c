// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* t_flow_cpu.c - reading an rps_cpus mask (user/net/flow_cpu.c). */
#include "ktest.h"
#include "net/flow_cpu.h"
#include "unit.h"

void test_flow_cpu(void)
{
	kt_begin("rps_mask_read");
	CHECK(!ks_rps_mask_set("0\n"), "a lone 0 is no CPU");
	CHECK(!ks_rps_mask_set("00000000,00000000\n"), "zeros in words");
	CHECK(ks_rps_mask_set("3\n"), "CPUs 0 and 1");
	CHECK(ks_rps_mask_set("00000000,00000100\n"), "CPU 8 in the low word");
	CHECK(ks_rps_mask_set("80000000,00000000"), "the high word alone");
	CHECK(!ks_rps_mask_set(""), "an empty file");
	CHECK(!ks_rps_mask_set(",\n"), "commas alone");
	CHECK(!ks_rps_mask_set("zz\n"), "no mask");
	CHECK(!ks_rps_mask_set(NULL), "no text");
	kt_end();
	kt_begin("flow_cpu_not_veth");
	/* loopback is no veth: never a warning */
	CHECK(ks_flow_cpu_risk("lo") == 0, "lo");
	CHECK(ks_flow_cpu_risk("no-such-if0") == 0, "a missing device");
	kt_end();
}
