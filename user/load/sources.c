// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * UDP replies counted by the address they came from. A run sees a handful
 * of sources (the shards and their replicas), so a short array searched
 * linearly is enough; anything past LD_MAX_SOURCES is still counted, as
 * "other", so the totals stay exact.
 */
#include <string.h>
#include "load.h"

void ld_sources_add(struct ld_sources *s, const struct sockaddr_in *sa, __u64 n)
{
	__u32 i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].sa.sin_addr.s_addr == sa->sin_addr.s_addr &&
		    s->v[i].sa.sin_port == sa->sin_port)
			break;
	if (i == s->n) {
		if (s->n == LD_MAX_SOURCES) {
			s->other += n;
			return;
		}
		memset(&s->v[i], 0, sizeof(s->v[i]));
		s->v[i].sa.sin_family = AF_INET;
		s->v[i].sa.sin_addr = sa->sin_addr;
		s->v[i].sa.sin_port = sa->sin_port;
		s->n++;
	}
	s->v[i].replies += n;
}

void ld_sources_merge(struct ld_sources *dst, const struct ld_sources *src)
{
	__u32 i;

	for (i = 0; i < src->n; i++)
		ld_sources_add(dst, &src->v[i].sa, src->v[i].replies);
	dst->other += src->other;
	dst->steered += src->steered;
	if (src->first_steered_ns &&
	    (!dst->first_steered_ns ||
	     src->first_steered_ns < dst->first_steered_ns))
		dst->first_steered_ns = src->first_steered_ns;
}
