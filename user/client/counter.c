// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* counter.c - split counters' pure decisions (see counter.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "client/counter.h"
#include "core/mc_key.h"

int ksc_counter_key(const void *key, size_t klen, int part, char *buf,
		    size_t len)
{
	char sfx[8];
	int n;

	if (part == 0)
		sfx[0] = '\0';
	else if (part == KSC_PART_WIDTH)
		strcpy(sfx, "~ksw");
	else if (part == KSC_PART_FOLD)
		strcpy(sfx, "~ksf");
	else if (part > 0 && part < KSC_SPLIT_MAX)
		snprintf(sfx, sizeof(sfx), "~ks%d", part);
	else
		return -EINVAL;
	if (part && klen > KSC_SPLIT_KEY_MAX)
		return -ENAMETOOLONG;
	n = snprintf(buf, len, "%.*s%s", (int)klen, (const char *)key, sfx);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
}

static unsigned clamp_k(unsigned k)
{
	return k < 1 ? 1 : k > KSC_SPLIT_MAX ? KSC_SPLIT_MAX : k;
}

unsigned ksc_split_k(const struct ksc_hot *e)
{
	return e ? clamp_k(e->subkeys) : 1;
}

unsigned ksc_split_union(struct ksc_hot *e, __u64 now_ms, __u64 grace_ms)
{
	unsigned k = ksc_split_k(e);

	if (!e || !e->subkeys_prev)
		return k;
	if (!e->subkeys_since_ms)
		e->subkeys_since_ms = now_ms;
	if (now_ms - e->subkeys_since_ms >= grace_ms) {
		e->subkeys_prev = 0;
		return k;
	}
	return e->subkeys_prev > k ? e->subkeys_prev : k;
}

unsigned ksc_split_pick(unsigned k, int decr, __u64 *rng)
{
	__u64 x = *rng;

	x ^= x << 13; /* xorshift64: cheap, and spread enough for load */
	x ^= x >> 7;
	x ^= x << 17;
	*rng = x;
	k = clamp_k(k);
	if (k == 1)
		return 0;
	return decr ? 1 + (unsigned)(x % (k - 1)) : (unsigned)(x % k);
}

void ksc_split_layout(const struct ksc_view *v, struct ksc_hot *e,
		      const void *key, size_t klen, unsigned k)
{
	char name[KS_MC_KEY_MAX + 1];
	unsigned i;
	int n;

	k = clamp_k(k);
	if (e->part_k == k && e->part_ring == v->ring_rev)
		return;
	for (i = 0; i < k; i++) {
		n = ksc_counter_key(key, klen, (int)i, name, sizeof(name));
		e->part_owner[i] = (__u16)(n < 0 ? KSC_NONE
						 : ksc_view_owner(v, name,
								  (size_t)n));
	}
	e->part_k = (__u16)k;
	e->part_ring = v->ring_rev;
}

unsigned ksc_split_pick_spread(const struct ksc_hot *e, unsigned k, int decr,
			       __u64 *rng)
{
	unsigned i = 0, j, same, try;

	k = clamp_k(k);
	if (!e || e->part_k != k)
		return ksc_split_pick(k, decr, rng);
	/* the base keeps 1/K of the increments: its owner's agent sizes K
	 * on K times what it sees (hotkeys.c, split_total) */
	if (!decr && ksc_split_pick(k, 0, rng) == 0)
		return 0;
	/* a sub-key at random, kept with 1 / (sub-keys on its shard): each
	 * shard equally likely, then each of its sub-keys */
	for (try = 0; try < 4 * KSC_SPLIT_MAX; try++) {
		i = ksc_split_pick(k, 1, rng);
		for (j = 1, same = 0; j < k; j++)
			same += e->part_owner[j] == e->part_owner[i];
		/* a fresh draw: the one that chose i says much of i % same */
		if (same <= 1 || ksc_split_pick(same + 1, 1, rng) == 1)
			return i;
	}
	return i;
}

__u64 ksc_subkey_initial(__u64 delta, int decr)
{
	return decr ? KSC_SUBKEY_OFFSET - delta : KSC_SUBKEY_OFFSET + delta;
}

unsigned ksc_counter_width(unsigned view_union, int found, __u64 width)
{
	unsigned w = found ? (width > KSC_SPLIT_MAX ? KSC_SPLIT_MAX
						    : (unsigned)width)
			   : 1;

	return clamp_k(view_union > w ? view_union : w);
}

int ksc_counter_add(__s64 *sum, int part, __u64 raw)
{
	__s64 v;

	if (part == 0 && raw > (__u64)INT64_MAX)
		return -ERANGE;
	v = part == 0 ? (__s64)raw : (__s64)(raw - KSC_SUBKEY_OFFSET);
	if (__builtin_add_overflow(*sum, v, sum))
		return -ERANGE;
	return 0;
}

int ksc_fold_decide(unsigned k, unsigned width, __u64 age_ms, __u64 lag_ms,
		    __u64 grace_ms, int fresh, int all, struct ksc_fold_plan *p)
{
	memset(p, 0, sizeof(*p));
	k = clamp_k(k);
	p->from = all ? 1 : k;
	p->to = clamp_k(width);
	if (p->to <= p->from || !fresh)
		return 0;
	if (!all && age_ms < lag_ms)
		return 0;
	p->lower = !all && age_ms >= grace_ms;
	return 1;
}
