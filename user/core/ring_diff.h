/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ring_diff.h - what moves between two rings ('agent ring diff'): two
 * shard lists, two distributions, or both. A key moves when its owner's
 * host:port differs between the rings. Pure counting; the command prints.
 */
#ifndef KS_RING_DIFF_H
#define KS_RING_DIFF_H

#include <stddef.h>
#include <linux/types.h>
#include "core/ring.h"
#include "core/shards.h"

struct ks_ring_diff {
	const struct ks_ring *rf, *rt; /* from, to */
	const struct ks_shards *sf, *st;
	__u32 *before; /* keys per from-shard */
	__u32 *after;  /* keys per to-shard */
	__u32 *out;    /* per from-shard: keys that left it */
	__u32 *in;     /* per to-shard: keys that came to it */
	__u32 *pairs;  /* [from * st->n + to]: keys moved */
	int *same;     /* to-shard -> from-shard of that host:port, or -1 */
	__u64 keys, moved;
};

/* 0, or -ENOMEM. The rings and lists must outlive d. */
int ks_ring_diff_init(struct ks_ring_diff *d, const struct ks_ring *rf,
		      const struct ks_shards *sf, const struct ks_ring *rt,
		      const struct ks_shards *st);

/* Places one key on both rings; 1 when it moved, 0 when not, -1 when a
 * ring has no owner for it (an empty ring). */
int ks_ring_diff_key(struct ks_ring_diff *d, const void *key, size_t len);

void ks_ring_diff_free(struct ks_ring_diff *d);

/*
 * The share of the key space a change of sf's shards and weights into
 * st's ideally moves (shards matched by host:port): the larger of
 * - the least any placement must move to turn the old weight shares into
 *   the new (their total variation distance: the sum, over shards whose
 *   share grows, of the growth; a shard absent on a side weighs 0), and
 * - what a consistent ring moves when shards come and go: the shares of
 *   the shards removed (their keys leave) plus those of the shards added
 *   (their keys arrive); a replaced shard counts both,
 * at most 1. Adding one shard to N of equal weight: 1/(N+1); removing one
 * of N: 1/N; replacing one of N: 2/N; the same shards and weights under
 * another distribution, key hash or names: 0.
 */
double ks_ring_ideal_moved(const struct ks_shards *sf,
			   const struct ks_shards *st);

/* 'ring set' refuses, without --force, a change that moves more than
 * KS_RING_MOVE_FACTOR times the ideal fraction plus KS_RING_MOVE_SLACK
 * (docs/operations.md has why these two numbers). */
#define KS_RING_MOVE_FACTOR 2.0
#define KS_RING_MOVE_SLACK  0.01

/* The largest fraction of keys a change whose ideal is ideal may move. */
double ks_ring_move_limit(double ideal);

/* 1 when moved (a fraction of the keys placed, 0..1) exceeds the limit
 * for ideal; 0 when not. */
int ks_ring_move_excessive(double moved, double ideal);

/* The shards of a (host:port) that b does not have. */
__u32 ks_ring_shards_missing(const struct ks_shards *a,
			     const struct ks_shards *b);

/*
 * The one rule for a change written without --force, which 'ring set'
 * holds an operator to and under which every agent purges (core/purge.h):
 * at most one shard added and at most one removed (a replacement is one
 * of each; more at once is more often a wrong list than a plan), and
 * moved (the share of sample keys whose owner changes) within the limit
 * of the change's ideal share (ks_ring_move_limit). 0 when the change
 * keeps to it; 1 when not, with the reason as one line in why.
 */
int ks_ring_change_needs_force(const struct ks_shards *sf,
			       const struct ks_shards *st, double moved,
			       char *why, size_t len);

#endif
