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

#endif
