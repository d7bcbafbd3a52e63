// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ring_spy.c - spymemcached's KetamaNodeLocator (2.12, Debian's
 * libspymemcached-java), as read from its class files with javap (not
 * copied):
 *  - 160 repetitions a node (DefaultKetamaNodeLocatorConfiguration), 40
 *    MD5 digests of "nodekey-i", four points each (bytes 4h..4h+3
 *    little-endian); keys hashed with KETAMA_HASH, MD5 bytes 0..3 of the
 *    key's UTF-8, to the first point >= the hash, wrapping to the first;
 *  - node key, format SPYMEMCACHED (KetamaConnectionFactory's default):
 *    String.valueOf(InetSocketAddress) without its leading '/', which is
 *    "ip:port" for an address given as a literal and "name/ip:port" for a
 *    resolved name; format LIBMEMCACHED: getHostName(), plus ":port"
 *    unless the port is 11211. keysteer hashes the host as written, or the
 *    shard's name when one is given (give "name/ip:port", or the name a
 *    literal's reverse lookup returns, as the name);
 *  - with a weights map (isWeightedKetama: the map is not empty) a node
 *    gets (int)(floor((double)(pct * 160 / 4 * n) + 1e-10) * 4) points,
 *    the product in float; keysteer uses the weighted rule when any
 *    weight is not 1 (a map of all 1s is the weighted rule too, which
 *    gives 156 points a node for some n: give one weight as 1 and say so);
 *  - points go into a TreeMap, so of two nodes' points on one value the
 *    later node's stays: keysteer adds the shards last to first, and the
 *    stable sort then puts the later shard first among equal values.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "core/ring_build.h"

#define SPY_REPETITIONS 160

static __u32 spy_points(const struct ks_shards *s, __u32 i, __u64 total,
			int weighted)
{
	float pct, t;

	if (!weighted)
		return SPY_REPETITIONS;
	pct = (float)s->v[i].weight / (float)total;
	t = pct * (float)SPY_REPETITIONS / 4.0F * (float)s->n;
	return (__u32)(floor((double)t + 1e-10) * 4.0);
}

int ks_ring_build_spy(struct ks_ring_builder *b, const struct ks_shards *s,
		      enum ks_dist dist, char *err, size_t errlen)
{
	__u64 total = 0;
	int weighted = 0;
	__u32 i;

	for (i = 0; i < s->n; i++) {
		total += s->v[i].weight;
		weighted |= s->v[i].weight != 1;
	}
	for (i = s->n; i-- > 0;) {
		const struct ks_shard *sh = &s->v[i];
		__u32 count = spy_points(s, i, total, weighted);
		char base[KS_SHARD_HOST_MAX + 16];
		size_t blen;

		if (ks_ring_room(b, s->n, count, err, errlen))
			return -E2BIG;
		if (sh->name[0])
			blen = (size_t)snprintf(base, sizeof(base), "%s",
						sh->name);
		else if (dist == KS_DIST_SPY)
			blen = (size_t)snprintf(base, sizeof(base), "%s:%u",
						sh->host, sh->port);
		else
			blen = ks_client_base(sh, base, sizeof(base));
		ks_ring_add_ketama_points(b, i, base, blen, '-', count);
	}
	return 0;
}
