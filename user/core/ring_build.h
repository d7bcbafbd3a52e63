/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ring_build.h - what the point builders of each client share (ring.c
 * and one file per client family: ring_libmc.c, ring_dalli.c,
 * ring_spy.c). Not for users of the ring: they include core/ring.h.
 */
#ifndef KS_RING_BUILD_H
#define KS_RING_BUILD_H

#include <stddef.h>
#include <linux/types.h>
#include "ks_ring.h"
#include "core/shards.h"

struct ks_ring_builder {
	struct ks_ring_point *pts; /* unsorted; sorted stably by value later */
	__u32 n;
	__u32 cap;
};

void ks_ring_add_point(struct ks_ring_builder *b, __u32 value, __u32 shard);

/* 0 when count more points fit in b, else -E2BIG with err (it cannot
 * happen with the clients' rules: at most 160 points a shard). */
int ks_ring_room(const struct ks_ring_builder *b, __u32 nshards, __u64 count,
		 char *err, size_t errlen);

/* Decimal digits of v appended at p; returns the new end. */
char *ks_put_u32(char *p, __u32 v);

/* "host" for the default port, else "host:port": how libmemcached names
 * a server's points, and twemproxy a server without a name. */
size_t ks_client_base(const struct ks_shard *sh, char *buf, size_t len);

/* count / 4 points names base + sep + 0..count/4-1, four per MD5 digest
 * (bytes 4a..4a+3 little-endian): libmemcached's weighted ketama, and
 * spymemcached's. */
void ks_ring_add_ketama_points(struct ks_ring_builder *b, __u32 shard,
			       const char *base, size_t blen, char sep,
			       __u32 count);

/* The builders of ring_libmc.c, ring_dalli.c and ring_spy.c: the points
 * of every shard into b (unsorted), or a negative errno with err. */
int ks_ring_build_ketama_plain(struct ks_ring_builder *b,
			       const struct ks_shards *s, char *err,
			       size_t errlen);
int ks_ring_build_dalli(struct ks_ring_builder *b, const struct ks_shards *s,
			char *err, size_t errlen);
int ks_ring_build_spy(struct ks_ring_builder *b, const struct ks_shards *s,
		      enum ks_dist dist, char *err, size_t errlen);

/* Refuses a shard list whose weights are not all 1 for a ring that has
 * none; what names the client in the message. */
int ks_ring_unweighted(const struct ks_shards *s, const char *what,
		       const char *instead, char *err, size_t errlen);

#endif
