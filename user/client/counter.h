/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * counter.h - split write-hot counters in the client library
 * (docs/client.md, "Split counters"): the names of a counter's parts, which
 * part an increment takes, how many parts a read sums, what a fold moves.
 * Pure code, no I/O: counter_io.c does the memcached calls.
 *
 * A counter KEY the view marks write-hot with K sub-keys is kept in K
 * parts: the base KEY (part 0, a plain memcached counter) and the sub-keys
 * KEY~ks1 .. KEY~ks<K-1>, each on the shard the ring gives its own name.
 * A sub-key holds KSC_SUBKEY_OFFSET plus its net count, so a decrement
 * never clamps at zero there. Beside them, KEY~ksw holds the width: one
 * more than the highest sub-key any handle may have written (raised
 * before a handle writes a new sub-key, re-raised while it keeps writing),
 * and KEY~ksf the fold's sequence number (odd while a fold moves counts).
 */
#ifndef KSC_COUNTER_H
#define KSC_COUNTER_H

#include <stddef.h>
#include <linux/types.h>
#include "client/view.h"

#define KSC_SPLIT_MAX     64                       /* parts of one counter */
#define KSC_SUBKEY_OFFSET (1ULL << 63)             /* a sub-key's zero */
#define KSC_SPLIT_SUFFIX  5                        /* "~ks63", "~ksw", "~ksf" */
#define KSC_SPLIT_KEY_MAX (250 - KSC_SPLIT_SUFFIX) /* longer: never split */
#define KSC_PART_WIDTH    (-1)
#define KSC_PART_FOLD     (-2)

/* The name of part (0: the base, 1..KSC_SPLIT_MAX-1 a sub-key, or
 * KSC_PART_WIDTH / KSC_PART_FOLD) of key into buf: its length, or
 * -ENAMETOOLONG. */
int ksc_counter_key(const void *key, size_t klen, int part, char *buf,
		    size_t len);

/* K for increments: the entry's (1 without one). */
unsigned ksc_split_k(const struct ksc_hot *e);
/* The parts a read sums by the view alone: max(K, the previous K while
 * grace_ms since the change have not passed). Stamps an unstamped change
 * with now_ms and forgets the previous K once its grace is over. */
unsigned ksc_split_union(struct ksc_hot *e, __u64 now_ms, __u64 grace_ms);

/* The part an increment (decr 0) or decrement takes, of k parts: any of
 * 0..k-1 for an increment, a sub-key 1..k-1 for a decrement (the base
 * clamps at zero). *rng: the caller's xorshift state, not 0. */
unsigned ksc_split_pick(unsigned k, int decr, __u64 *rng);
/*
 * The part an increment or decrement takes when the parts' owners are
 * known (ksc_split_layout): the base 1/K of the increments (what its
 * owner's agent expects), and of the rest every shard holding sub-keys an
 * equal share, however many of them its ring arcs happen to hold, so a
 * shard with three sub-keys of a counter is not three times as busy as
 * one with one.
 */
unsigned ksc_split_pick_spread(const struct ksc_hot *e, unsigned k, int decr,
			       __u64 *rng);
/* The owners of the entry's k parts of key under the view's ring, kept
 * until k or the ring changes. */
void ksc_split_layout(const struct ksc_view *v, struct ksc_hot *e,
		      const void *key, size_t klen, unsigned k);

/* The value a missing sub-key is created with so that its first delta is
 * counted (memcached's auto-create stores the initial value only). */
__u64 ksc_subkey_initial(__u64 delta, int decr);
/* The parts a read sums: the view's union and the width read from
 * memcached (found 0: none there, 1 part), at most KSC_SPLIT_MAX. */
unsigned ksc_counter_width(unsigned view_union, int found, __u64 width);

/* A part's raw value added to *sum: the base as it is, a sub-key less
 * the offset. -ERANGE when the sum leaves int64. */
int ksc_counter_add(__s64 *sum, int part, __u64 raw);
/* Whether a read whose fold sequence was seq0 before and seq1 after saw
 * no fold move counts. */
static inline int ksc_fold_seq_ok(__u64 seq0, __u64 seq1)
{
	return seq0 == seq1 && !(seq0 & 1);
}

/*
 * What a fold of a counter moves into its base: sub-keys [from, to), and
 * whether the width may then be lowered to from. Nothing (0) when the
 * view is too old to say what is retired, when the change to K is younger
 * than lag_ms (handles whose views lag may still write the old sub-keys),
 * or when there is nothing past K. all: every sub-key (safe at any time:
 * a move is an atomic decrement and increment; never lowers the width).
 */
struct ksc_fold_plan {
	unsigned from, to;
	int lower;
};
int ksc_fold_decide(unsigned k, unsigned width, __u64 age_ms, __u64 lag_ms,
		    __u64 grace_ms, int fresh, int all,
		    struct ksc_fold_plan *p);

#endif
