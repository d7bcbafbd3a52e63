// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* limit.c - per-key rate limits in the client (see limit.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ks_limit.h"
#include "client/limit.h"
#include "core/limits.h"

int ksc_limits_init(struct ksc_limits *l, unsigned share)
{
	memset(l, 0, sizeof(*l));
	l->share = share;
	/* made on the first limited key's call: most views have no limits */
	return 0;
}

void ksc_limits_free(struct ksc_limits *l)
{
	free(l->b);
	l->b = NULL;
	l->used = 0;
}

void ksc_limit_params(__u32 rate, unsigned share, __u64 *interval_ns,
		      __u64 *tau_ns)
{
	__u32 r = rate ? rate : 1;

	share = share ? share : 1;
	/* the interval exactly (a share of 3 of 100/s is one call per 30 ms,
	 * not per 1/33 s); the burst as the datapath's for the share's rate */
	*interval_ns = 1000000000ULL * share / r;
	*tau_ns = (__u64)(ks_limit_burst(r / share) - 1) * *interval_ns;
}

unsigned ksc_limit_share(unsigned explicit_share, unsigned registered,
			 int self_in)
{
	unsigned n;

	if (explicit_share)
		return explicit_share;
	/* this view calls the key: it is one of them, registered or not
	 * yet (a new process takes its share at once, not the whole rate
	 * until its put comes back through the watch) */
	n = registered + !self_in;
	return n ? n : 1;
}

static size_t home(__u64 hash)
{
	return (size_t)(hash * 0x9e3779b97f4a7c15ULL >> 20) &
	       (KSC_LIMIT_KEYS - 1);
}

static struct ksc_limit_bucket *find(const struct ksc_limits *l,
				     const void *key, size_t len, __u64 hash)
{
	size_t i, n;

	if (!l->b)
		return NULL;
	for (i = home(hash), n = 0; n < KSC_LIMIT_KEYS;
	     i = (i + 1) & (KSC_LIMIT_KEYS - 1), n++) {
		struct ksc_limit_bucket *b = &l->b[i];

		if (!b->hash)
			return NULL;
		/* the bytes, not the hash: a key whose hash equals a limited
		 * key's is not that key (docs/limits.md) */
		if (b->hash == hash &&
		    (l->hash_only ||
		     (b->len == len && !memcmp(b->key, key, len))))
			return b;
	}
	return NULL;
}

const struct ksc_limit_bucket *ksc_limit_find(const struct ksc_limits *l,
					      const void *key, size_t len,
					      __u64 hash)
{
	return find(l, key, len, hash ? hash : 1);
}

/* The table again with only the buckets keep() keeps (linear probing:
 * a removal puts the rest back in place). */
static void rebuild(struct ksc_limits *l,
		    int (*keep)(const struct ksc_limit_bucket *, const void *),
		    const void *arg)
{
	struct ksc_limit_bucket *old = l->b;
	size_t i, j;

	l->b = calloc(KSC_LIMIT_KEYS, sizeof(*l->b));
	if (!l->b) { /* keep them all rather than lose the table */
		l->b = old;
		return;
	}
	l->used = 0;
	for (i = 0; i < KSC_LIMIT_KEYS; i++) {
		if (!old[i].hash || !keep(&old[i], arg))
			continue;
		for (j = home(old[i].hash); l->b[j].hash;
		     j = (j + 1) & (KSC_LIMIT_KEYS - 1))
			;
		l->b[j] = old[i];
		l->used++;
	}
	free(old);
}

static int busy(const struct ksc_limit_bucket *b, const void *arg)
{
	/* a bucket not ahead of now is as full as a new one */
	return b->tat_ns > *(const __u64 *)arg;
}

static int named(const struct ksc_limit_bucket *b, const void *arg)
{
	return b->automatic || ks_limit_rule_match(arg, b->key, b->len) != NULL;
}

void ksc_limits_prune(struct ksc_limits *l, const struct ks_hot_rules *rules)
{
	static const struct ks_hot_rules none;

	if (l->b)
		rebuild(l, named, rules ? rules : &none);
}

static void bucket_set(struct ksc_limit_bucket *b, const struct ks_hot_rule *r,
		       unsigned share)
{
	b->rate = r->count;
	b->rule_len = r->type == KS_RULE_LIMIT_PREFIX ? r->len : 0;
	b->automatic = r->type == KS_RULE_LIMIT_AUTO;
	b->tat_ns = 0;
	b->share = share;
	ksc_limit_params(r->count, share, &b->interval_ns, &b->tau_ns);
}

enum ksc_limit_verdict ksc_limit_take(struct ksc_limits *l,
				      const struct ks_hot_rules *rules,
				      const void *key, size_t len, __u64 hash,
				      __u64 now_ns,
				      const struct ks_hot_rule **rule)
{
	const struct ks_hot_rule *r = NULL;

	if (rules)
		r = ks_limit_rule_match(rules, key, len);
	if (rule)
		*rule = r;
	if (!r)
		return KSC_LIM_NONE;
	return ksc_limit_take_rule(l, r, key, len, hash, now_ns, 0);
}

enum ksc_limit_verdict ksc_limit_take_rule(struct ksc_limits *l,
					   const struct ks_hot_rule *r,
					   const void *key, size_t len,
					   __u64 hash, __u64 now_ns,
					   unsigned share)
{
	return ksc_limit_take_cold(l, r, key, len, hash, now_ns, share, 0);
}

enum ksc_limit_verdict ksc_limit_take_cold(struct ksc_limits *l,
					   const struct ks_hot_rule *r,
					   const void *key, size_t len,
					   __u64 hash, __u64 now_ns,
					   unsigned share, int cold)
{
	struct ksc_limit_bucket *b;
	size_t i;

	if (!share)
		share = l->share ? l->share : 1;
	hash = hash ? hash : 1; /* 0 marks a free slot */
	if (!l->b && !(l->b = calloc(KSC_LIMIT_KEYS, sizeof(*l->b)))) {
		l->no_room++;
		return KSC_LIM_NO_ROOM;
	}
	b = find(l, key, len, hash);
	if (!b) {
		/* at most 3/4 full, so a probe ends soon */
		if (l->used >= KSC_LIMIT_KEYS * 3 / 4)
			rebuild(l, busy, &now_ns);
		if (l->used >= KSC_LIMIT_KEYS * 3 / 4) {
			l->no_room++;
			return KSC_LIM_NO_ROOM;
		}
		for (i = home(hash); l->b[i].hash;
		     i = (i + 1) & (KSC_LIMIT_KEYS - 1))
			;
		b = &l->b[i];
		memset(b, 0, sizeof(*b));
		b->hash = hash;
		b->len = (__u16)len;
		memcpy(b->key, key, len);
		bucket_set(b, r, share);
		if (cold) /* empty: tau ahead, so one call, then the rate */
			b->tat_ns = now_ns + b->tau_ns;
		l->used++;
		l->made++;
	} else if (b->rate != r->count ||
		   b->automatic != (r->type == KS_RULE_LIMIT_AUTO)) {
		/* a new rate: the bucket restarts, its counters run on (as
		 * the agent's, core/limits.c) */
		bucket_set(b, r, share);
	} else if (b->share != share) {
		/* a view came or went: the same bucket at the new share, its
		 * time stamp kept, so a change of share is no new burst */
		b->share = share;
		ksc_limit_params(r->count, share, &b->interval_ns, &b->tau_ns);
	}
	b->last_ns = now_ns;
	if (!ks_limit_take(&b->tat_ns, now_ns, b->interval_ns, b->tau_ns)) {
		b->refused++;
		l->refused++;
		return KSC_LIM_REFUSED;
	}
	b->allowed++;
	l->allowed++;
	return KSC_LIM_ALLOWED;
}
