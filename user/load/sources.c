// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * UDP replies counted by the address they came from. A run sees a handful
 * of sources (the shards and their replicas), so a short array searched
 * linearly is enough; anything past LD_MAX_SOURCES is still counted, as
 * "other", so the totals stay exact.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include "load.h"

int ld_addr_same(const union ld_addr *a, const union ld_addr *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return 0;
	if (a->sa.sa_family == AF_INET6)
		return a->v6.sin6_port == b->v6.sin6_port &&
		       !memcmp(&a->v6.sin6_addr, &b->v6.sin6_addr,
			       sizeof(a->v6.sin6_addr));
	return a->v4.sin_addr.s_addr == b->v4.sin_addr.s_addr &&
	       a->v4.sin_port == b->v4.sin_port;
}

void ld_addr_text(const union ld_addr *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "";

	if (a->sa.sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &a->v6.sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(a->v6.sin6_port));
	} else {
		inet_ntop(AF_INET, &a->v4.sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(a->v4.sin_port));
	}
}

void ld_sources_add(struct ld_sources *s, const union ld_addr *sa, __u64 n)
{
	__u32 i;

	for (i = 0; i < s->n; i++)
		if (ld_addr_same(&s->v[i].sa, sa))
			break;
	if (i == s->n) {
		if (s->n == LD_MAX_SOURCES) {
			s->other += n;
			return;
		}
		memset(&s->v[i], 0, sizeof(s->v[i]));
		s->v[i].sa = *sa;
		if (sa->sa.sa_family == AF_INET6) {
			s->v[i].sa.v6.sin6_flowinfo = 0;
			s->v[i].sa.v6.sin6_scope_id = 0;
		}
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
