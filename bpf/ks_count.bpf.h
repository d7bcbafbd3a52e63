/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_count.bpf.h - per-CPU counters. Per-CPU arrays need no atomics; the
 * agent sums the CPUs.
 */
#ifndef KS_COUNT_BPF_H
#define KS_COUNT_BPF_H

#include "ks_maps.bpf.h"

static __always_inline struct ks_pkt_counters *ks_pkt_counters(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&ks_pkts, &zero);
}

static __always_inline void ks_count_pkt(__u32 what)
{
	struct ks_pkt_counters *pc = ks_pkt_counters();

	if (pc && what < KS_PKT_MAX)
		pc->n[what] += 1;
}

static __always_inline void ks_count_err(__u32 reason)
{
	__u64 *v = bpf_map_lookup_elem(&ks_errors, &reason);

	if (v)
		*v += 1;
}

static __always_inline void ks_count_op(__u32 op, __u64 requests, __u64 keys,
					__u64 bytes)
{
	struct ks_op_stats *st = bpf_map_lookup_elem(&ks_ops, &op);

	if (st) {
		st->requests += requests;
		st->keys += keys;
		st->bytes += bytes;
	}
}

#endif
