/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * estimate.h - pure interval arithmetic of the agent: merging per-CPU
 * sketch rows, count-min point queries, per-key rate estimates with an
 * error bound, top-K selection and class rates. No BPF calls, no I/O, so
 * the unit tests drive it with synthetic sketches.
 */
#ifndef KS_ESTIMATE_H
#define KS_ESTIMATE_H

#include <stddef.h>
#include "keysteer.h"

/* One epoch's count-min sketch, summed over CPUs: [class][row][column]. */
struct ks_sketch {
	__u32 c[KS_CMS_CLASSES][KS_CMS_DEPTH][KS_CMS_WIDTH];
};

/* Datapath counters summed over CPUs (cumulative since load). */
struct ks_totals {
	struct ks_op_stats ops[KS_OP_MAX];
	__u64 errors[KS_ERR_MAX];
	__u64 pkts[KS_PKT_MAX];
};

/*
 * Adds the lone gets the datapath's fast path counted in ks_pkts
 * (KS_PKT_FAST_GET: requests, one key each; KS_PKT_FAST_GET_BYTES) to
 * ops[KS_OP_GET], which ks_ops alone lacks. Call it once, where ops and
 * pkts are summed from the maps (ks_read_totals); every total made from
 * those then has each get once. pkts keeps the two as they are: how many
 * of the gets the fast path took.
 */
void ks_ops_fold_fast(struct ks_op_stats ops[KS_OP_MAX],
		      const __u64 pkts[KS_PKT_MAX]);

/* What one interval contributes besides the sketch. */
struct ks_interval {
	/* What the sketch's counts still need multiplying by: 1 in N keys
	 * was sketched, or 1 when the merge already weighted each CPU by
	 * its own rate (ks_cms_merge_row_weighted). */
	__u32 sample_n;
	/* The largest 1 in N in force on any CPU in the interval, for the
	 * sampling bound; 0: sample_n. */
	__u32 rate_max;
	__u64 elapsed_ns; /* length of the interval */
	/* Sampled keys fed to each class's sketch: the stream length N of
	 * the count-min bound. */
	__u64 class_sampled[KS_CMS_CLASSES];
	__u64 total_requests; /* every request of every class, unsampled */
};

/*
 * An interval's inputs besides the sketch, from two totals snapshots: the
 * stream length of each class's sketch (ks_class_stream_len) and every
 * request of every class.
 */
void ks_interval_init(struct ks_interval *iv, const struct ks_sketch *s,
		      const struct ks_totals *prev, const struct ks_totals *cur,
		      __u32 sample_n, __u64 elapsed_ns);

/* A percpu map lookup returns one value per possible CPU, each padded to
 * a multiple of 8 bytes. */
static inline size_t ks_percpu_stride(size_t value_size)
{
	return (value_size + 7) & ~(size_t)7;
}

/*
 * Adds the ncpus per-CPU copies of one segment of a sketch row (a percpu
 * lookup buffer, copies stride bytes apart) into dst, saturating at
 * UINT32_MAX.
 */
void ks_cms_merge_row(__u32 dst[KS_CMS_SEG], const void *percpu, int ncpus,
		      size_t stride);
/*
 * The same with each CPU's counters multiplied by its 1 in N (n[cpu];
 * NULL: 1), so that CPUs sampling at different rates add up to keys: the
 * estimate stays exact in expectation whatever rate each CPU had.
 */
void ks_cms_merge_row_weighted(__u32 dst[KS_CMS_SEG], const void *percpu,
			       int ncpus, size_t stride, const __u32 *n);

/* Count-min point query: the minimum over rows at ks_cms_col(hash, r). */
__u32 ks_cms_point(const struct ks_sketch *s, __u32 cls, __u64 hash);

/*
 * Stream length of a class's sketch for the count-min bound: the sampled
 * keys the counters imply (class keys / sample_n, rounded up), or the
 * largest row sum if that is more (conservative update makes row sums at
 * most the stream length, so this never undercounts a row).
 */
__u64 ks_class_stream_len(const struct ks_sketch *s, __u32 cls,
			  __u64 class_keys, __u32 sample_n);

/*
 * Count-min overestimate bound in sketch counts: (e / width) * N. With
 * depth rows it holds with probability 1 - e^-depth (98% for depth 4).
 */
double ks_cms_bound(__u64 stream_len);

/*
 * Two-sigma error of scaling a sampled count back up by n, in keys:
 * 2 * sqrt(count * n * (n - 1)); 0 when every key is sampled.
 */
double ks_sampling_bound(double count, __u32 n);

struct ks_key_estimate {
	__u32 reads; /* sketch estimates, sampled keys */
	__u32 writes;
	double reads_ps; /* scaled to all keys per second */
	double writes_ps;
	double err_ps; /* +/- bound on reads_ps + writes_ps */
	double share;  /* reads+writes over all requests, 0..1 */
};

void ks_estimate_key(const struct ks_sketch *s, const struct ks_interval *iv,
		     __u64 hash, struct ks_key_estimate *out);

/*
 * A candidate slot worth estimating: occupied, sane length, touched in the
 * interval that started at seq (or later), and key bytes that still hash
 * to the stored hash (a slot read while the datapath rewrote it is torn).
 */
int ks_cand_usable(const struct ks_cand *c, __u32 seq);

/* Keeps one slot per hash, the one with the highest count (of equal
 * counts the first), in the order the slots had; returns the new count.
 * Out of memory it sorts the slots by hash instead (the same slots). */
size_t ks_cands_dedup(struct ks_cand *c, size_t n);

/*
 * A key's column in every row of the sketch, packed. Keys with the same
 * signature are one key to the sketch: each gets the sum of their counts.
 * The datapath's columns come from 23 bits of the hash (double hashing
 * of two 12-bit halves), so among millions of keys in an interval a heavy
 * key has twins, and a key seen once that lands in the candidate table
 * would show the heavy key's count (docs/accuracy.md).
 */
__u64 ks_cms_signature(__u64 hash);

/*
 * Estimates every candidate and writes the k heaviest (reads + writes,
 * then hash for a stable order) into out; keys estimated at zero are
 * dropped, and so are twins: of candidates with one sketch signature only
 * the one whose slot holds the highest count (the datapath's estimate at
 * its last sampled hit: the key that kept being seen) is kept. Returns the
 * number written.
 */
size_t ks_top_select(const struct ks_sketch *s, const struct ks_interval *iv,
		     const struct ks_cand *c, size_t n,
		     struct ks_top_entry *out, size_t k);

/*
 * The interval's ranking: the heaviest cap candidates (ks_top_select) into
 * ranked, for the hot-key table, and the first top of them (at most
 * KS_REPORT_TOP) into rep->top and rep->n_top, which is what
 * ks_top_select(..., top) would have written there: the order is total,
 * so the report does not depend on cap (given cap >= top). Returns the
 * number ranked.
 */
size_t ks_top_rank(const struct ks_sketch *s, const struct ks_interval *iv,
		   const struct ks_cand *c, size_t n,
		   struct ks_top_entry *ranked, size_t cap, __u32 top,
		   struct ks_report *rep);

/* Per-second rate in milli-per-second, rounded, never negative. */
__u64 ks_to_mps(double per_s);

/* Keys of the classes sketched (read, write) and of all classes between
 * two totals snapshots. */
/* Requests of every op between two readings. */
__u64 ks_total_requests(const struct ks_totals *prev,
			const struct ks_totals *cur);
void ks_class_keys(const struct ks_totals *prev, const struct ks_totals *cur,
		   __u64 keys[KS_CLASS_MAX]);

/*
 * Fills rep's class_req/key/byte_mps and err_mps from the counter deltas
 * between two snapshots over elapsed_ns (a counter that went backwards,
 * e.g. after a reload, counts as 0).
 */
void ks_fill_rates(const struct ks_totals *prev, const struct ks_totals *cur,
		   __u64 elapsed_ns, struct ks_report *rep);

#endif
