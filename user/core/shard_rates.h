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

/*
 * The uncertainty of each shard's load (issue 27; docs/accuracy.md, "How
 * sure a shard's load is"). A CPU at 1 in N sampled and 1 in P placed
 * places every W = N P-th key it meets (two countdowns), each placement
 * adding P to its owner's count, so the count of a shard that had t of
 * the CPU's T keys, times N, estimates t. With the shards' keys
 * interleaved in no step with W, the m = T / W placed keys are a simple
 * random sample of the T (without replacement: m is fixed by the
 * countdowns, not random), so the shard's estimate has variance
 * t (W - 1) (1 - t / T): at W = 1 none (every key counted), and never
 * more than a Poisson count of the placements would give (t W).
 */
#define KS_SHARD_Z 1.96 /* two-sided 95% of a normal */

/*
 * The variance of one shard's estimated keys in an interval, summed over
 * ncpus CPUs: d[c] its count's delta on CPU c (reads + writes, sampled
 * keys, each placement P of them), tot[c] the delta of every shard on
 * CPU c, n[c] and p[c] the 1 in N and 1 in P in force there (0 reads as
 * 1), the estimate scale times the sum of the d[c] (scale <= 0: each
 * CPU's N d[c], summed). In keys squared: scale^2 / N^2 times each CPU's
 * t (W - 1) (1 - t / T), with N d for t and N tot for T.
 */
double ks_shard_load_var(const __u64 *d, const __u64 *tot, const __u32 *n,
			 const __u32 *p, int ncpus, double scale);

/*
 * The +/- of a 95% interval for a load estimated with variance var, when
 * the largest W - 1 of a CPU is wmax1: z sqrt(var + (z wmax1 / 2)^2) +
 * z^2 wmax1 / 2, the upper end of the score interval of a count whose
 * variance grows as wmax1 times the load (Wilson's, solved for the load
 * rather than plugged in), so a shard with few placements, or none, still
 * gets the room its unseen keys may take (z^2 wmax1, about 4 placements'
 * worth, where nothing was placed). Symmetric: it covers the score
 * interval's lower end too. 0 when every CPU counted every key.
 */
double ks_shard_load_halfwidth(double var, double wmax1);

/*
 * Fills load_err_mps of the first n rows of rep from each shard's
 * per-CPU load (reads + writes) at the start (prev) and end (cur) of the
 * interval, n x ncpus values laid out shard by shard (cur[i * ncpus + c]),
 * and each CPU's 1 in N and 1 in P in force (cpu_n, cpu_p: ncpus each;
 * NULL reads as all 1), for rates that scale the summed counts by scale
 * (ks_shard_fill's sample_n), over elapsed_ns. A counter that went backwards
 * counts as 0.
 */
void ks_shard_fill_err(struct ks_shard_report *rep, const __u64 *prev,
		       const __u64 *cur, __u32 n, int ncpus, const __u32 *cpu_n,
		       const __u32 *cpu_p, double scale, __u64 elapsed_ns);

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
