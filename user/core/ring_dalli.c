// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ring_dalli.c - Ruby dalli's ring, as read in dalli 3.0.6 lib/dalli/
 * ring.rb and protocol/binary.rb (not copied):
 *  - a server named "host:port" (always with the port; a unix socket is
 *    its path) gets floor(nservers * 160 * weight / total_weight) points,
 *    the division in floating point;
 *  - point idx is the first 4 bytes, big-endian, of SHA-1("name:idx");
 *  - a key hashes to Zlib.crc32(key) and belongs to the point with the
 *    greatest value <= the hash, or to the last point when the hash is
 *    below them all.
 * keysteer's search finds the first point >= the hash, so every value is
 * stored complemented (~v) and ks_ring_owner() looks up the key hash
 * complemented too (bpf/ks_ring.h): ~ reverses the order, turning one rule into the other, and
 * the wrap to point 0 is then dalli's wrap to its greatest point.
 * dalli sorts with Ruby's sort_by, which is not stable: on two servers'
 * points with one value its winner is arbitrary; keysteer's is the lower
 * index (ties: about one 100-server ring in 30).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "core/ring_build.h"
#include "core/sha1.h"

/* dalli's Ring::POINTS_PER_SERVER */
#define DALLI_POINTS 160

int ks_ring_build_dalli(struct ks_ring_builder *b, const struct ks_shards *s,
			char *err, size_t errlen)
{
	char name[KS_SHARD_HOST_MAX + KS_SHARD_NAME_MAX + 32];
	__u64 total = 0;
	__u32 i, j;
	__u8 d[20];

	for (i = 0; i < s->n; i++)
		total += s->v[i].weight;
	for (i = 0; i < s->n; i++) {
		const struct ks_shard *sh = &s->v[i];
		__u64 count = (__u64)floor(
			(double)((__u64)s->n * DALLI_POINTS * sh->weight) /
			(double)total);
		size_t blen;

		if (ks_ring_room(b, s->n, count, err, errlen))
			return -E2BIG;
		if (sh->name[0])
			blen = (size_t)snprintf(name, sizeof(name),
						"%s:", sh->name);
		else
			blen = (size_t)snprintf(name, sizeof(name),
						"%s:%u:", sh->host, sh->port);
		for (j = 0; j < count; j++) {
			char *end = ks_put_u32(name + blen, j);

			ks_sha1(name, (size_t)(end - name), d);
			ks_ring_add_point(b,
					  ~((__u32)d[0] << 24 |
					    (__u32)d[1] << 16 |
					    (__u32)d[2] << 8 | d[3]),
					  i);
		}
	}
	return 0;
}
