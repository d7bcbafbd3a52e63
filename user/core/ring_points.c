// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* ring_points.c - rings with explicit points (see ring_points.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/ring_points.h"

int ks_ring_points_dist_ok(__u32 dist, char *err, size_t errlen)
{
	switch (dist) {
	case KS_DIST_KETAMA:
	case KS_DIST_TWEMPROXY:
	case KS_DIST_TWEMPROXY_MD5:
	case KS_DIST_VNODE:
	case KS_DIST_KETAMA_PLAIN:
	case KS_DIST_SPY:
	case KS_DIST_SPY_LIBMC:
		return 0;
	default:
		snprintf(
			err, errlen,
			"the %s distribution takes no explicit points (only rings whose owner is the first point >= the key's hash: ketama, twemproxy, twemproxy-md5, vnode, ketama-plain, spymemcached, spymemcached-libmemcached)",
			ks_dist_name(dist));
		return -EINVAL;
	}
}

int ks_ring_build_points(struct ks_ring *r, const struct ks_ring *base,
			 const struct ks_shards *s,
			 const struct ks_ring_point *pts, __u32 n, char *err,
			 size_t errlen)
{
	const struct ks_ring_meta *bm = &base->half->meta;
	__u32 i;

	memset(r, 0, sizeof(*r));
	if (ks_ring_points_dist_ok(bm->dist, err, errlen))
		return -EINVAL;
	if (!n || n > KS_RING_MAX_POINTS) {
		snprintf(
			err, errlen,
			"a ring of explicit points needs 1 to %d points, not %u",
			KS_RING_MAX_POINTS, n);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		if (pts[i].shard >= bm->nshards) {
			snprintf(
				err, errlen,
				"explicit point %u (value %u) names shard %u of a ring of %u shards",
				i, pts[i].value, pts[i].shard, bm->nshards);
			return -EINVAL;
		}
		if (i && pts[i].value <= pts[i - 1].value) {
			snprintf(
				err, errlen,
				"explicit point %u (value %u) is not above point %u (value %u); give the points in increasing order, one per value",
				i, pts[i].value, i - 1, pts[i - 1].value);
			return -EINVAL;
		}
	}
	r->half = calloc(1, sizeof(*r->half));
	if (!r->half) {
		snprintf(err, errlen,
			 "out of memory building a ring; free some memory");
		return -ENOMEM;
	}
	r->half->meta = *bm;
	memcpy(r->half->points, pts, (size_t)n * sizeof(*pts));
	r->half->meta.npoints = n;
	r->half->meta.planned = 1;
	ks_ring_index(r->half);
	r->half->meta.digest = ks_ring_digest(r->half, s);
	r->vnodes = base->vnodes;
	return 0;
}

int ks_ring_points_effective(const struct ks_ring *r,
			     struct ks_ring_point **out, __u32 *n)
{
	const struct ks_ring_half *h = r->half;
	__u32 i, k = 0, np = h->meta.npoints;
	struct ks_ring_point *p = malloc(((size_t)np + 1) * sizeof(*p));

	if (!p)
		return -ENOMEM;
	for (i = 0; i < np; i++)
		if (!k || h->points[i].value != p[k - 1].value)
			p[k++] = h->points[i];
	*out = p;
	*n = k;
	return 0;
}
