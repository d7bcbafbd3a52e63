/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * shard_rates.h - pure arithmetic of the per-shard report: per-CPU
 * counters summed, interval deltas scaled by the sample rate into rates,
 * share of all keys placed on the ring, ratio to the mean shard, the
 * busiest shard, the display order, and the recent misdirected clients.
 * No BPF calls, no I/O: the unit tests drive it with synthetic counters.
 */
#ifndef KS_SHARD_RATES_H
#define KS_SHARD_RATES_H

#include <stddef.h>
#include "keysteer.h"
#include "ks_shard_report.h"
#include "core/shards.h"

/* One ks_shards entry summed over CPUs: sampled keys since load. */
struct ks_shard_counts {
	__u64 reads;
	__u64 writes;
	__u64 misdirected;
};

/* Sums the ncpus copies of one per-CPU struct ks_shard_stats (a percpu
 * lookup buffer, copies stride bytes apart). */
void ks_shard_sum(const void *percpu, int ncpus, size_t stride,
		  struct ks_shard_counts *out);

/*
 * Fills the per-shard rows of rep for n shards and rep->busiest and
 * rep->hits_mps from three readings of the counters: base (taken when the
 * ring was pushed), prev (start of the interval) and cur (end of it),
 * over elapsed_ns, each sampled key standing for sample_n keys (not a
 * whole number under --sample auto: ks_rates_effective). Leaves
 * the names and the header alone. A counter that went backwards counts
 * as 0. share and ratio are of reads + writes.
 */
void ks_shard_fill(struct ks_shard_report *rep,
		   const struct ks_shard_counts *base,
		   const struct ks_shard_counts *prev,
		   const struct ks_shard_counts *cur, __u32 n, double sample_n,
		   __u64 elapsed_ns);

/* Writes each shard's "host:port" into rep's rows, cut to fit ("..." at
 * the end when cut). */
void ks_shard_names(struct ks_shard_report *rep, const struct ks_shards *s);

/*
 * The display order: indexes 0..n-1 by reads+writes per second, busiest
 * first, then by index. order has n entries.
 */
void ks_shard_order(const struct ks_shard_report *rep, __u32 n, __u32 *order);

/*
 * Recent misdirected clients from the n slots of ks_misdirect (every CPU's
 * copy): slots written at or after since_ns (the ring's push: an older
 * slot's owner index is of another ring), newest first, one per client
 * (address, port, protocol: its newest slot, whose owner is the shard of
 * the last key it sent here by mistake); at most max into out. Returns how
 * many.
 */
size_t ks_misdirect_recent(const struct ks_misdirect *all, size_t n,
			   __u64 since_ns, struct ks_misdirect *out,
			   size_t max);

#endif
