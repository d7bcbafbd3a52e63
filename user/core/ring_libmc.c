// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ring_libmc.c - libmemcached's unweighted ketama, as read in
 * libmemcached 1.1 hosts.cc update_continuum() (not copied): without
 * MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED a server gets
 * MEMCACHED_POINTS_PER_SERVER (100) points, one per name "host-i"
 * (port 11211) or "host:port-i", i = 0..99, each point the instance's key
 * hash of its name. MEMCACHED_BEHAVIOR_KETAMA and DISTRIBUTION_CONSISTENT
 * leave that hash at the default, one_at_a_time (checked by running
 * pylibmc and php-memcached, tests/compat/), so points and keys are hashed
 * with it. A server weight above 1 turns weighting on by itself
 * (server_add()), which is another ring: such lists are refused.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "core/ring_build.h"

/* libmemcached's MEMCACHED_POINTS_PER_SERVER */
#define LIBMC_POINTS_PLAIN 100

int ks_ring_unweighted(const struct ks_shards *s, const char *what,
		       const char *instead, char *err, size_t errlen)
{
	__u32 i;

	for (i = 0; i < s->n; i++) {
		if (s->v[i].weight == 1)
			continue;
		snprintf(
			err, errlen,
			"shard %s:%u (%s line %u) has weight %u; %s has no weights, %s",
			s->v[i].host, s->v[i].port, s->source, s->v[i].line,
			s->v[i].weight, what, instead);
		return -EINVAL;
	}
	return 0;
}

int ks_ring_build_ketama_plain(struct ks_ring_builder *b,
			       const struct ks_shards *s, char *err,
			       size_t errlen)
{
	char name[KS_SHARD_HOST_MAX + 32];
	__u32 i, j;
	int rc;

	rc = ks_ring_unweighted(
		s, "libmemcached's unweighted ketama",
		"drop it (with a weight libmemcached switches to the weighted ring: --client libmemcached-weighted)",
		err, errlen);
	if (rc)
		return rc;
	if (ks_ring_room(b, s->n, (__u64)s->n * LIBMC_POINTS_PLAIN, err,
			 errlen))
		return -E2BIG;
	for (i = 0; i < s->n; i++) {
		size_t blen = ks_client_base(&s->v[i], name, sizeof(name) - 12);

		name[blen++] = '-';
		for (j = 0; j < LIBMC_POINTS_PLAIN; j++) {
			char *end = ks_put_u32(name + blen, j);

			ks_ring_add_point(b,
					  ks_kh_bytes(KS_KH_ONE_AT_A_TIME, name,
						      (__u64)(end - name)),
					  i);
		}
	}
	return 0;
}
