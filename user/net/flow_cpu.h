/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * flow_cpu.h - does the device hand one TCP connection's segments to the
 * program one at a time? The stream state (bpf/ks_flow.bpf.h) is made
 * for that; a veth receiving its peer's TSO frames without RPS parses
 * them on the sending CPUs, two at once (docs/operations.md, "One CPU
 * per flow"). The agent warns at attach; it changes nothing.
 */
#ifndef KS_FLOW_CPU_H
#define KS_FLOW_CPU_H

#include <stdbool.h>

/* An rps_cpus file's text ("00000000,00000003\n"): true when any CPU is
 * in it, false when none is or the text is no mask. */
bool ks_rps_mask_set(const char *text);

/*
 * 1 when ifname is a veth none of whose receive queues has RPS (a flow's
 * segments may be parsed on two CPUs at once), 0 when it is not or has
 * RPS, and 0 too when it cannot tell (the sysfs in view is another
 * namespace's, as under `nsenter --net`).
 */
int ks_flow_cpu_risk(const char *ifname);

#endif
