// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * limit_auto.c - which keys the automatic cap limits, once per interval
 * (core/limit_auto.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "core/limit_auto.h"
#include "ks_limit.h"

int ks_limit_auto_check(double fraction, int capacity_given, char *err,
			size_t errlen)
{
	const char *why = NULL;

	if (!(fraction > 0 && fraction <= 1))
		why = "--limit-auto must be a fraction of --shard-capacity above 0 and at most 1, as in 0.5";
	else if (!capacity_given)
		why = "--limit-auto needs --shard-capacity: the cap is a fraction of what one shard serves";
	if (!why)
		return 0;
	if (err && errlen)
		snprintf(err, errlen, "%s", why);
	return -EINVAL;
}

void ks_limit_auto_init(struct ks_limit_auto *a, double fraction,
			double capacity)
{
	double r;

	memset(a, 0, sizeof(*a));
	a->line = fraction * capacity;
	r = ceil(a->line);
	a->rate = r < 1                   ? 1
		  : r > KS_LIMIT_RATE_MAX ? KS_LIMIT_RATE_MAX
					  : (__u32)r;
}

unsigned ks_limit_auto_remedy(const struct ks_hot_entry *e)
{
	unsigned m = 0;

	if (!e)
		return 0;
	if (e->read_hot && e->copies >= 2 && !e->write_hot)
		m |= KS_AUTO_COPIES;
	/* split_ps: the table's own reading that the split is in effect */
	if (e->write_hot && e->subkeys >= 2 && e->split_ps > 0)
		m |= KS_AUTO_SPLIT;
	return m;
}

double ks_limit_auto_residual(const struct ks_top_entry *r,
			      const struct ks_auto_dp *d)
{
	double reads = r->reads_mps / 1000.0, writes = r->writes_mps / 1000.0;
	double udp, passed, share = 0, res;

	if (d) {
		passed = d->steered_ps + d->owner_ps;
		if (passed > 0)
			share = d->steered_ps / passed;
		/* the TCP reads stay: a connection is not steered */
		udp = reads - d->tcp_ps;
		if (udp > 0)
			reads -= share * udp;
	}
	res = reads + writes;
	return res > 0 ? res : 0;
}

/* The verdict's residual (the test switch): what the policy says it
 * leaves here, as the cap had it before it measured. */
static double verdict_residual(const struct ks_top_entry *r, unsigned rem)
{
	return (rem & KS_AUTO_COPIES ? 0 : r->reads_mps / 1000.0) +
	       (rem & KS_AUTO_SPLIT ? 0 : r->writes_mps / 1000.0);
}

/* The datapath's measurement of ranked key r, or NULL (no slot). */
static const struct ks_auto_dp *dp_of(const struct ks_auto_dp *dp, size_t ndp,
				      const __u8 *key, size_t len, __u64 hash)
{
	size_t i;

	for (i = 0; i < ndp; i++)
		if (dp[i].hash == hash && dp[i].len == len &&
		    !memcmp(dp[i].key, key, len))
			return &dp[i];
	return NULL;
}

static struct ks_auto_key *find(struct ks_limit_auto *a, const __u8 *key,
				size_t len)
{
	size_t i;

	for (i = 0; i < KS_LIMIT_AUTO_KEYS; i++) {
		struct ks_auto_key *k = &a->k[i];

		if (k->used && k->len == len && !memcmp(k->key, key, len))
			return k;
	}
	return NULL;
}

const struct ks_auto_key *ks_limit_auto_find(const struct ks_limit_auto *a,
					     const __u8 *key, size_t len)
{
	return find((struct ks_limit_auto *)a, key, len);
}

static void forget(struct ks_limit_auto *a, struct ks_auto_key *k,
		   size_t *changes)
{
	if (k->capped) {
		a->capped--;
		a->releases++;
		(*changes)++;
	}
	memset(k, 0, sizeof(*k));
}

/* One interval's residual of a followed key. */
static void count(struct ks_limit_auto *a, struct ks_auto_key *k, double res)
{
	k->residual_ps = res;
	k->over = res > a->line ? k->over + 1 : 0;
	k->under = res < KS_LIMIT_AUTO_LEAVE_RATIO * a->line ? k->under + 1 : 0;
}

size_t ks_limit_auto_update(struct ks_limit_auto *a,
			    const struct ks_hot_rules *rules,
			    const struct ks_hot_table *t,
			    const struct ks_top_entry *ranked, size_t n,
			    const struct ks_auto_dp *dp, size_t ndp)
{
	size_t i, j, changes = 0;

	for (j = 0; j < KS_LIMIT_AUTO_KEYS; j++)
		a->k[j].seen = 0;
	for (i = 0; i < n; i++) {
		const struct ks_top_entry *r = &ranked[i];
		size_t len = r->len > KS_MAX_KEY_LEN ? KS_MAX_KEY_LEN : r->len;
		struct ks_auto_key *k = find(a, r->key, len);
		unsigned rem;
		double res;

		/* explicit rules win: such a key is the rule's */
		if (rules && ks_limit_rule_match(rules, r->key, len)) {
			if (k)
				forget(a, k, &changes);
			continue;
		}
		if (k && k->seen)
			continue; /* a key ranked twice counts once */
		rem = ks_limit_auto_remedy(t ? ks_hot_find(t, r->key, len)
					     : NULL);
		res = a->verdict
			      ? verdict_residual(r, rem)
			      : ks_limit_auto_residual(r, dp_of(dp, ndp, r->key,
								len, r->hash));
		if (!k) {
			if (!(res > a->line))
				continue;
			for (j = 0; j < KS_LIMIT_AUTO_KEYS && a->k[j].used; j++)
				;
			if (j == KS_LIMIT_AUTO_KEYS) {
				a->untracked++;
				continue;
			}
			k = &a->k[j];
			k->used = 1;
			memcpy(k->key, r->key, len);
			k->len = (__u16)len;
			k->hash = r->hash;
		}
		k->seen = 1;
		k->remedy = (__u8)rem;
		count(a, k, res);
		/* the policy's first word on a key over the line: its copies
		 * or its split get the whole ENTER intervals to show in what
		 * is measured, once per bit while the key is followed */
		if (!a->verdict && !k->capped && (rem & ~k->graced)) {
			k->graced |= (__u8)rem;
			k->over = 0;
		}
	}
	for (j = 0; j < KS_LIMIT_AUTO_KEYS; j++) {
		struct ks_auto_key *k = &a->k[j];

		if (!k->used)
			continue;
		if (!k->seen) /* not among the ranked keys: far under */
			count(a, k, 0);
		if (!k->capped && k->over >= KS_LIMIT_AUTO_ENTER) {
			k->capped = 1;
			a->capped++;
			a->caps++;
			changes++;
		} else if (k->capped && k->under >= KS_LIMIT_AUTO_LEAVE) {
			forget(a, k, &changes);
		} else if (!k->capped && !k->over &&
			   !(k->residual_ps > a->line)) {
			/* back under: not followed (a key over the line whose
			 * count the policy's verdict restarted stays) */
			memset(k, 0, sizeof(*k));
		}
	}
	return changes;
}

size_t ks_limit_auto_wants(const struct ks_limit_auto *a,
			   struct ks_limit_want *out, size_t max)
{
	size_t i, n = 0;

	for (i = 0; i < KS_LIMIT_AUTO_KEYS && n < max; i++) {
		const struct ks_auto_key *k = &a->k[i];

		if (!k->capped)
			continue;
		out[n].key = k->key;
		out[n].len = k->len;
		out[n].rate = a->rate;
		out[n].residual_ps = k->residual_ps;
		n++;
	}
	return n;
}
