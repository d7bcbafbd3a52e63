// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench_ring.c - the rings the ring scenarios load, built by the agent's
 * own builder (user/core/ring.c) so the benchmark times the layout the agent
 * pushes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench.h"
#include "core/ring.h"
#include "core/shards.h"

struct ks_ring_half *bench_ring(enum ks_dist dist, __u32 nshards,
				const void *key, size_t klen, bool misdirected)
{
	return bench_ring_keyed(dist, NULL, nshards, key, klen, misdirected);
}

struct ks_ring_half *bench_ring_keyed(enum ks_dist dist,
				      const struct ks_ring_key *rk,
				      __u32 nshards, const void *key,
				      size_t klen, bool misdirected)
{
	size_t cap = (size_t)nshards * 24 + 1, len = 0;
	char *list = malloc(cap), err[512];
	struct ks_shards shards;
	struct ks_ring ring;
	struct ks_ring_half *h = NULL;
	__u32 i, owner;

	memset(&shards, 0, sizeof(shards));
	memset(&ring, 0, sizeof(ring));
	if (!list)
		return NULL;
	for (i = 0; i < nshards; i++)
		len += (size_t)snprintf(list + len, cap - len,
					"%s10.0.%u.%u:11211", i ? "," : "",
					i / 250, i % 250 + 1);
	if (ks_shards_parse_list("--shards", list, &shards, err, sizeof(err)) ||
	    ks_ring_build_keyed(&ring, &shards, dist, rk, 0, 1, err,
				sizeof(err))) {
		fprintf(stderr, "bench: building a %s ring of %u shards: %s\n",
			ks_dist_name(dist), nshards, err);
		goto out;
	}
	owner = ks_ring_lookup(&ring, key, klen);
	ring.half->meta.self = misdirected ? (owner + 1) % nshards : owner;
	h = ring.half;
	ring.half = NULL;
out:
	ks_ring_free(&ring);
	ks_shards_free(&shards);
	free(list);
	return h;
}
