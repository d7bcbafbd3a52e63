/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ring_plan.h - explicit ring points planned from measured load (issue
 * 26, docs/placement.md): from every shard's load and the loads of the
 * keys sampled on it, the points that bring the busiest shard close to
 * the mean while moving the fewest keys.
 *
 * The model of where load sits on the ring: each sampled key at its own
 * ring hash, and the rest of a shard's load (its measured load less its
 * sampled keys') spread evenly over the hash space the shard owns, as
 * keys spread by the hash are. An arc keeps the density of the shard it
 * was taken from.
 *
 * The plan moves load from the busiest shard to the least busy, one step
 * at a time, until busiest / mean <= target:
 *   1. a sampled key whose load fits (the largest that does) gets an arc
 *      of its own, one hash value wide, given to the light shard: two
 *      points, about one key moved;
 *   2. when no sampled key fits, a slice of the donor's densest arc, as
 *      wide as the load to move needs: one or two points, the slice's
 *      share of the hash space moved (keys spread evenly on it).
 * Keys moved is the sum of both: the plan says how many of each.
 *
 * Pure code (no I/O): the unit tier tests it.
 */
#ifndef KS_RING_PLAN_H
#define KS_RING_PLAN_H

#include <stddef.h>
#include <linux/types.h>
#include "core/host_doc.h"
#include "core/ring.h"

/*
 * One shard's load over a plan's window from its agent's counters (the
 * load documents' "totals", core/host_doc.h): the first and the last
 * counts of one base seen in the window. Their difference over their
 * time is the shard's exact mean between those two documents, however
 * often or late the agent wrote in between (the rates beside them are
 * one interval's each, and a document stays until the agent writes
 * another).
 */
struct ks_plan_span {
	__u64 base_ms;    /* 0: no counters seen */
	__u64 ms0, ms1;   /* the first and last counts' times from the base */
	double c0, c1;    /* served + writes + fills at them */
	unsigned docs;    /* documents taken on this base */
	unsigned rebased; /* bases dropped for a newer one (the agent
			   * restarted or pushed its ring again) */
};

/* A document's counters into s: a document without them (base 0) is
 * left out; another base starts the span again from this document. */
void ks_plan_span_take(struct ks_plan_span *s, const struct ks_load_totals *t);

/* The span's mean per second into *out: 0, or -1 when it covers less
 * than min_ms (one document, none with counters, a base begun late). */
int ks_plan_span_rate(const struct ks_plan_span *s, __u64 min_ms, double *out);

struct ks_plan_key {
	__u32 hash;  /* the key's ring hash (ks_ring_hash) */
	double load; /* requests/s its owner serves */
	int fixed;   /* 1: counted where it is, never given an arc (a key
		      * served by copies: moving it moves little) */
};

struct ks_plan_in {
	const struct ks_ring *base; /* the ring the load was measured on */
	const double *load;         /* per shard: requests/s served */
	const struct ks_plan_key *keys;
	__u32 nkeys;
	double target;    /* busiest / mean to reach, > 1 */
	__u32 max_points; /* 0: KS_RING_MAX_POINTS */
	__u32 max_steps;  /* 0: 4096 */
};

struct ks_plan_out {
	struct ks_ring_point *pts; /* the plan's points, malloc'ed */
	__u32 npts;
	double *before, *after; /* per shard, modelled load (nshards) */
	double ratio_before, ratio_after; /* busiest / mean */
	double moved_space; /* share of the hash space given to another
			     * shard by slices (keys spread evenly: that
			     * share of the keys) */
	__u32 keys_carved;  /* sampled keys given arcs of their own */
	__u32 slices;       /* slices moved */
	__u32 steps;
	int reached; /* ratio_after <= target */
};

/*
 * Plans. 0 (out filled; free with ks_ring_plan_free, also after an
 * error), -EINVAL with err (a distribution that takes no points, no
 * load, a target <= 1), -ENOMEM.
 */
int ks_ring_plan(const struct ks_plan_in *in, struct ks_plan_out *out,
		 char *err, size_t errlen);
void ks_ring_plan_free(struct ks_plan_out *out);

#endif
