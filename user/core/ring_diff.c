// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* ring_diff.c - the counting of 'agent ring diff' (core/ring_diff.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/ring_diff.h"

int ks_ring_diff_init(struct ks_ring_diff *d, const struct ks_ring *rf,
		      const struct ks_shards *sf, const struct ks_ring *rt,
		      const struct ks_shards *st)
{
	__u32 j;

	memset(d, 0, sizeof(*d));
	d->rf = rf;
	d->rt = rt;
	d->sf = sf;
	d->st = st;
	d->before = calloc(sf->n, sizeof(*d->before));
	d->out = calloc(sf->n, sizeof(*d->out));
	d->after = calloc(st->n, sizeof(*d->after));
	d->in = calloc(st->n, sizeof(*d->in));
	d->same = calloc(st->n, sizeof(*d->same));
	d->pairs = calloc((size_t)sf->n * st->n, sizeof(*d->pairs));
	if (!d->before || !d->out || !d->after || !d->in || !d->same ||
	    !d->pairs) {
		ks_ring_diff_free(d);
		return -ENOMEM;
	}
	for (j = 0; j < st->n; j++)
		d->same[j] = ks_shards_find(sf, st->v[j].host, st->v[j].port);
	return 0;
}

int ks_ring_diff_key(struct ks_ring_diff *d, const void *key, size_t len)
{
	__u32 a = ks_ring_lookup(d->rf, key, len);
	__u32 b = ks_ring_lookup(d->rt, key, len);

	if (a >= d->sf->n || b >= d->st->n)
		return -1;
	d->keys++;
	d->before[a]++;
	d->after[b]++;
	if (d->same[b] == (int)a)
		return 0;
	d->moved++;
	d->out[a]++;
	d->in[b]++;
	d->pairs[(size_t)a * d->st->n + b]++;
	return 1;
}

void ks_ring_diff_free(struct ks_ring_diff *d)
{
	free(d->before);
	free(d->out);
	free(d->after);
	free(d->in);
	free(d->same);
	free(d->pairs);
	memset(d, 0, sizeof(*d));
}

/* w's share of its list, or 0 when it is not on it. */
static double share_of(const struct ks_shards *s, double total,
		       const struct ks_shard *w)
{
	int i = ks_shards_find(s, w->host, w->port);

	return i < 0 || total <= 0 ? 0.0 : s->v[i].weight / total;
}

static double weight_sum(const struct ks_shards *s)
{
	double t = 0;
	__u32 i;

	for (i = 0; i < s->n; i++)
		t += s->v[i].weight;
	return t;
}

/* The weight shares on s of the shards of other that s does not have. */
static double shares_missing(const struct ks_shards *s, double total,
			     const struct ks_shards *other)
{
	double sum = 0;
	__u32 i;

	for (i = 0; i < s->n; i++)
		if (ks_shards_find(other, s->v[i].host, s->v[i].port) < 0)
			sum += share_of(s, total, &s->v[i]);
	return sum;
}

double ks_ring_ideal_moved(const struct ks_shards *sf,
			   const struct ks_shards *st)
{
	double wf = weight_sum(sf), wt = weight_sum(st), gain = 0, churn;
	__u32 j;

	/* what every gaining shard must receive; a shard only on the from
	 * side gains nothing, one only on the to side gains its share */
	for (j = 0; j < st->n; j++) {
		double d = share_of(st, wt, &st->v[j]) -
			   share_of(sf, wf, &st->v[j]);

		if (d > 0)
			gain += d;
	}
	/* a consistent ring gives a new shard keys from every old one
	 * while a removed shard's keys go to the others: a replacement
	 * moves both, which the shares alone count once */
	churn = shares_missing(sf, wf, st) + shares_missing(st, wt, sf);
	if (churn > gain)
		gain = churn;
	return gain > 1.0 ? 1.0 : gain;
}

double ks_ring_move_limit(double ideal)
{
	double l = KS_RING_MOVE_FACTOR * ideal + KS_RING_MOVE_SLACK;

	return l > 1.0 ? 1.0 : l;
}

int ks_ring_move_excessive(double moved, double ideal)
{
	return moved > ks_ring_move_limit(ideal);
}

__u32 ks_ring_shards_missing(const struct ks_shards *a,
			     const struct ks_shards *b)
{
	__u32 i, n = 0;

	for (i = 0; i < a->n; i++)
		n += ks_shards_find(b, a->v[i].host, a->v[i].port) < 0;
	return n;
}

int ks_ring_change_needs_force(const struct ks_shards *sf,
			       const struct ks_shards *st, double moved,
			       char *why, size_t len)
{
	__u32 out = ks_ring_shards_missing(sf, st);
	__u32 in = ks_ring_shards_missing(st, sf);
	double ideal = ks_ring_ideal_moved(sf, st);

	if (in > 1 || out > 1) {
		snprintf(
			why, len,
			"it adds %u shards and removes %u: at most one of each at a time (a wrong shard list?)",
			in, out);
		return 1;
	}
	if (ks_ring_move_excessive(moved, ideal)) {
		snprintf(
			why, len,
			"it moves %.2f%% of the keys, more than %.0f x the ideal %.2f%% + %.0f%% (%.2f%%): a change of distribution or key hash, or a wrong shard list?",
			100.0 * moved, KS_RING_MOVE_FACTOR, 100.0 * ideal,
			100.0 * KS_RING_MOVE_SLACK,
			100.0 * ks_ring_move_limit(ideal));
		return 1;
	}
	if (len)
		why[0] = '\0';
	return 0;
}
