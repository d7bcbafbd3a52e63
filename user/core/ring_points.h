/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ring_points.h - a ring with explicit points (issue 26): the points are
 * given, not built from the shards' names, so a planner can put a point
 * where it takes load off a busy shard (docs/placement.md). The key hash,
 * hash tag, shards and search are the base distribution's: the datapath
 * and every user-space lookup follow such a ring with no code of their
 * own (ks_ring_owner() reads whatever points the half holds).
 *
 * Only rings whose owner is "the first point >= the key's hash" take
 * explicit points: ketama, twemproxy, twemproxy-md5, vnode, ketama-plain,
 * spymemcached and spymemcached-libmemcached. dalli (points stored
 * complemented), the modulas and pymemcache (no points) are refused.
 *
 * Pure code: the unit tier tests it.
 */
#ifndef KS_RING_POINTS_H
#define KS_RING_POINTS_H

#include <stddef.h>
#include <linux/types.h>
#include "core/ring.h"

/* 0 when dist can carry explicit points, else -EINVAL with why. */
int ks_ring_points_dist_ok(__u32 dist, char *err, size_t errlen);

/*
 * Builds r as base (distribution, key hash, tag, self, version) with the
 * points pts[0..n) instead of base's: values strictly increasing (the
 * one point of a value is the one a lookup finds, so a list with a tie
 * has an equivalent list without it), each shard < base's nshards,
 * 1 <= n <= KS_RING_MAX_POINTS. meta.planned is 1 and the digest is
 * ks_ring_digest() over the new points (so equal points, equal digest:
 * a plan that changes nothing has the base ring's digest). -EINVAL or
 * -ENOMEM with err; r is then empty.
 */
int ks_ring_build_points(struct ks_ring *r, const struct ks_ring *base,
			 const struct ks_shards *s,
			 const struct ks_ring_point *pts, __u32 n, char *err,
			 size_t errlen);

/*
 * The points of r as a lookup sees them: sorted, one per value (of tied
 * values the first, the one ks_ring_search finds), into a malloc'ed
 * array; *n their count. 0, or -ENOMEM.
 */
int ks_ring_points_effective(const struct ks_ring *r,
			     struct ks_ring_point **out, __u32 *n);

#endif
