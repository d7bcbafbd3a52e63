// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* ring_plan.c - explicit points from measured load (see ring_plan.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/ring_plan.h"
#include "core/ring_points.h"

#define PLAN_STEPS_DEFAULT 4096
/* A sampled key is given an arc of its own when its load is at least
 * this fraction of the load the step wants moved: such a key moves one
 * key where a slice of the same load moves many; below it, one slice
 * is one step where keys would be many steps of two points each. */
#define PLAN_KEY_MIN_SHARE 0.125

/* An arc: the hashes (previous end, end] (from 0 for the first), its
 * shard, and the density of its spread load (requests/s per hash
 * value), which it keeps when it changes hands. */
struct arc {
	__u32 end;
	__u32 shard;
	double dens;
};

struct plan {
	struct arc *a;
	__u32 n, cap;
	const struct ks_plan_key *keys; /* sorted by hash */
	__u32 nkeys;
	double *load; /* per shard, modelled */
	__u32 nshards;
};

static int key_cmp(const void *x, const void *y)
{
	const struct ks_plan_key *a = x, *b = y;

	return a->hash < b->hash ? -1 : a->hash > b->hash;
}

static __u32 arc_start(const struct plan *p, __u32 j)
{
	return j ? p->a[j - 1].end + 1 : 0;
}

/* The arc holding hash h: the first whose end is >= h (the last arc ends
 * at 0xffffffff, so there is one). */
static __u32 arc_of(const struct plan *p, __u32 h)
{
	__u32 lo = 0, hi = p->n - 1;

	while (lo < hi) {
		__u32 mid = lo + (hi - lo) / 2;

		if (p->a[mid].end < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* First key index with hash >= h. */
static __u32 key_from(const struct plan *p, __u32 h)
{
	__u32 lo = 0, hi = p->nkeys;

	while (lo < hi) {
		__u32 mid = lo + (hi - lo) / 2;

		if (p->keys[mid].hash < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Gives [lo, hi], inside arc j, to shard r: arc j becomes up to three. */
static void assign(struct plan *p, __u32 j, __u32 lo, __u32 hi, __u32 r)
{
	struct arc old = p->a[j], piece[3];
	__u32 k = 0, start = arc_start(p, j);

	if (lo > start)
		piece[k++] = (struct arc){ lo - 1, old.shard, old.dens };
	piece[k++] = (struct arc){ hi, r, old.dens };
	if (hi < old.end)
		piece[k++] = old;
	memmove(&p->a[j + k], &p->a[j + 1], (p->n - j - 1) * sizeof(*p->a));
	memcpy(&p->a[j], piece, k * sizeof(*piece));
	p->n += k - 1;
}

static void extremes(const struct plan *p, __u32 *hi, __u32 *lo, double *sum)
{
	__u32 s;

	*hi = *lo = 0;
	*sum = 0;
	for (s = 0; s < p->nshards; s++) {
		*sum += p->load[s];
		if (p->load[s] > p->load[*hi])
			*hi = s;
		if (p->load[s] < p->load[*lo])
			*lo = s;
	}
}

/* The movable sampled key of donor whose load is nearest want and
 * below gap (moving it must lower the pair's maximum); -1 for none. */
static long pick_key(const struct plan *p, __u32 donor, double want, double gap)
{
	long best = -1;
	double bd = 0;
	__u32 i;

	for (i = 0; i < p->nkeys; i++) {
		const struct ks_plan_key *k = &p->keys[i];
		double d;

		if (k->fixed || k->load <= 0 || k->load >= gap ||
		    k->load < want * PLAN_KEY_MIN_SHARE)
			continue;
		if (p->a[arc_of(p, k->hash)].shard != donor)
			continue;
		d = k->load > want ? k->load - want : want - k->load;
		if (best < 0 || d < bd) {
			best = (long)i;
			bd = d;
		}
	}
	return best;
}

/* The first hash of arc j above its last sampled key (keys stay put:
 * their load is known, not spread); 0 when the arc ends on a key. */
static int arc_free(const struct plan *p, __u32 j, __u32 *lo)
{
	__u32 start = arc_start(p, j), end = p->a[j].end, k;

	k = end == 0xffffffffU ? p->nkeys : key_from(p, end + 1);
	*lo = start;
	if (k && p->keys[k - 1].hash >= start) {
		if (p->keys[k - 1].hash == end)
			return 0;
		*lo = p->keys[k - 1].hash + 1;
	}
	return 1;
}

/* One slice: the end of donor's densest arc, as wide as want needs (or
 * down to the arc's last sampled key). 0 when a slice moved. */
static int slice(struct plan *p, __u32 donor, __u32 recv, double want,
		 double *moved_space)
{
	long best = -1;
	double bd = 0, len, room;
	__u32 j, lo;

	for (j = 0; j < p->n; j++)
		if (p->a[j].shard == donor && p->a[j].dens > bd &&
		    arc_free(p, j, &lo)) {
			best = (long)j;
			bd = p->a[j].dens;
		}
	if (best < 0)
		return -1;
	j = (__u32)best;
	arc_free(p, j, &lo);
	room = (double)(p->a[j].end - lo) + 1.0;
	len = want / p->a[j].dens;
	if (len < 1)
		len = 1;
	if (len > room)
		len = room;
	len = (double)(__u32)(len - 1) + 1; /* whole hash values */
	lo = p->a[j].end - (__u32)(len - 1);
	*moved_space += len / 4294967296.0;
	p->load[donor] -= len * p->a[j].dens;
	p->load[recv] += len * p->a[j].dens;
	assign(p, j, lo, p->a[j].end, recv);
	return 0;
}

int ks_ring_plan(const struct ks_plan_in *in, struct ks_plan_out *out,
		 char *err, size_t errlen)
{
	const struct ks_ring_meta *m = &in->base->half->meta;
	struct ks_ring_point *eff = NULL;
	struct ks_plan_key *keys = NULL;
	struct plan p = { 0 };
	double *space = NULL, sum;
	__u32 i, ne, maxp, maxs, hi, lo, s;
	int rc = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (ks_ring_points_dist_ok(m->dist, err, errlen))
		return -EINVAL;
	if (!(in->target > 1.0)) {
		snprintf(err, errlen,
			 "a plan's target busiest/mean must be above 1, not %g",
			 in->target);
		return -EINVAL;
	}
	if (m->nshards < 2 || !m->npoints) {
		snprintf(err, errlen,
			 "a ring of %u shards has nothing to balance",
			 m->nshards);
		return -EINVAL;
	}
	maxp = in->max_points ? in->max_points : KS_RING_MAX_POINTS;
	if (maxp > KS_RING_MAX_POINTS)
		maxp = KS_RING_MAX_POINTS;
	maxs = in->max_steps ? in->max_steps : PLAN_STEPS_DEFAULT;
	p.nshards = m->nshards;
	if (ks_ring_points_effective(in->base, &eff, &ne))
		goto nomem;
	p.cap = ne + 1 + 2 * maxs + 2;
	p.a = calloc(p.cap, sizeof(*p.a));
	p.load = calloc(p.nshards, sizeof(*p.load));
	out->before = calloc(p.nshards, sizeof(double));
	out->after = calloc(p.nshards, sizeof(double));
	space = calloc(p.nshards, sizeof(*space));
	keys = calloc(in->nkeys + 1, sizeof(*keys));
	if (!p.a || !p.load || !out->before || !out->after || !space || !keys)
		goto nomem;
	for (i = 0; i < ne; i++)
		p.a[p.n++] = (struct arc){ eff[i].value, eff[i].shard, 0 };
	/* the hashes past the last point wrap to point 0: an arc of
	 * their own, so no arc wraps */
	if (p.a[p.n - 1].end != 0xffffffffU)
		p.a[p.n++] = (struct arc){ 0xffffffffU, eff[0].shard, 0 };
	memcpy(keys, in->keys, in->nkeys * sizeof(*keys));
	qsort(keys, in->nkeys, sizeof(*keys), key_cmp);
	p.keys = keys;
	p.nkeys = in->nkeys;
	/* each shard's space, its keys' load, and the rest spread evenly */
	for (i = 0; i < p.n; i++)
		space[p.a[i].shard] += (double)(p.a[i].end - arc_start(&p, i)) +
				       1;
	for (i = 0; i < p.nkeys; i++)
		p.load[p.a[arc_of(&p, keys[i].hash)].shard] += keys[i].load;
	for (s = 0; s < p.nshards; s++) {
		double rest = in->load[s] - p.load[s];

		if (rest < 0) /* sampling noise: the keys say more */
			rest = 0;
		p.load[s] += rest;
		out->before[s] = p.load[s];
		space[s] = space[s] > 0 ? rest / space[s] : 0;
	}
	for (i = 0; i < p.n; i++)
		p.a[i].dens = space[p.a[i].shard];
	extremes(&p, &hi, &lo, &sum);
	if (sum <= 0) {
		snprintf(err, errlen,
			 "no load measured on any shard: nothing to plan from");
		rc = -EINVAL;
		goto fail;
	}
	out->ratio_before = p.load[hi] / (sum / p.nshards);
	for (out->steps = 0; out->steps < maxs && p.n + 2 <= maxp;
	     out->steps++) {
		double mean, want, gap;
		long k;

		extremes(&p, &hi, &lo, &sum);
		mean = sum / p.nshards;
		if (p.load[hi] <= in->target * mean)
			break;
		want = p.load[hi] - mean;
		if (mean - p.load[lo] < want)
			want = mean - p.load[lo];
		gap = p.load[hi] - p.load[lo];
		if (want <= 0)
			break;
		k = pick_key(&p, hi, want, gap);
		if (k >= 0) {
			__u32 h = keys[k].hash;

			assign(&p, arc_of(&p, h), h, h, lo);
			p.load[hi] -= keys[k].load;
			p.load[lo] += keys[k].load;
			out->keys_carved++;
			continue;
		}
		if (slice(&p, hi, lo, want, &out->moved_space))
			break; /* nothing left to move off the busiest */
		out->slices++;
	}
	extremes(&p, &hi, &lo, &sum);
	out->ratio_after = p.load[hi] / (sum / p.nshards);
	out->reached = out->ratio_after <= in->target;
	memcpy(out->after, p.load, p.nshards * sizeof(double));
	if (!out->steps) { /* nothing to change: the ring as it is */
		out->pts = eff;
		out->npts = ne;
		eff = NULL;
	} else {
		out->pts = malloc(p.n * sizeof(*out->pts));
		if (!out->pts)
			goto nomem;
		for (i = 0; i < p.n; i++)
			out->pts[i] = (struct ks_ring_point){ p.a[i].end,
							      p.a[i].shard };
		out->npts = p.n;
	}
	rc = 0;
	goto done;
nomem:
	snprintf(err, errlen, "out of memory planning the ring");
fail:
	ks_ring_plan_free(out);
done:
	free(eff);
	free(keys);
	free(space);
	free(p.a);
	free(p.load);
	return rc;
}

void ks_plan_span_take(struct ks_plan_span *s, const struct ks_load_totals *t)
{
	/* what its memcached answered: the clients' reads and writes, and
	 * its agent's own reads for copies */
	double c = (double)t->served + (double)t->writes + (double)t->fills;

	if (!t->base_ms)
		return;
	if (!s->docs || t->base_ms != s->base_ms) {
		/* a newer base: counts from before it are of another count
		 * (an older one, read out of order, is left out) */
		if (s->docs && t->base_ms < s->base_ms)
			return;
		s->rebased += s->docs ? 1 : 0;
		s->base_ms = t->base_ms;
		s->ms0 = s->ms1 = t->ms;
		s->c0 = s->c1 = c;
		s->docs = 1;
		return;
	}
	s->docs++;
	if (t->ms > s->ms1) {
		s->ms1 = t->ms;
		s->c1 = c;
	}
}

int ks_plan_span_rate(const struct ks_plan_span *s, __u64 min_ms, double *out)
{
	if (!s->docs || s->ms1 <= s->ms0 || s->ms1 - s->ms0 < min_ms ||
	    s->c1 < s->c0)
		return -1;
	*out = (s->c1 - s->c0) * 1000.0 / (double)(s->ms1 - s->ms0);
	return 0;
}

void ks_ring_plan_free(struct ks_plan_out *out)
{
	free(out->pts);
	free(out->before);
	free(out->after);
	memset(out, 0, sizeof(*out));
}
