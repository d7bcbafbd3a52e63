// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* balance.c - the busiest shard near the fleet's mean (see balance.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/balance.h"

void ks_fleet_loads_clear(struct ks_fleet_loads *l)
{
	l->n = 0;
}

static struct ks_fleet_load *find(struct ks_fleet_loads *l, const char *self)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (!strcmp(l->e[i].self, self))
			return &l->e[i];
	return NULL;
}

int ks_fleet_loads_put_from(struct ks_fleet_loads *l, const char *self,
			    double served_ps, int from)
{
	struct ks_fleet_load *e = find(l, self);

	if (strlen(self) >= KS_BALANCE_SELF)
		return -EINVAL;
	if (e && e->from > from)
		return 0;
	if (!e) {
		if (l->n == KS_BALANCE_HOSTS)
			return -ENOSPC;
		e = &l->e[l->n++];
		strcpy(e->self, self);
	}
	e->served_ps = served_ps;
	e->from = from;
	return 0;
}

int ks_fleet_loads_put(struct ks_fleet_loads *l, const char *self,
		       double served_ps)
{
	return ks_fleet_loads_put_from(l, self, served_ps, KS_LOAD_FROM_HOSTS);
}

void ks_fleet_loads_del_from(struct ks_fleet_loads *l, const char *self,
			     int from)
{
	struct ks_fleet_load *e = find(l, self);

	if (e && e->from == from)
		*e = l->e[--l->n];
}

void ks_fleet_loads_del(struct ks_fleet_loads *l, const char *self)
{
	ks_fleet_loads_del_from(l, self, KS_LOAD_FROM_HOSTS);
}

void ks_fleet_loads_clear_from(struct ks_fleet_loads *l, int from)
{
	size_t i;

	for (i = l->n; i-- > 0;)
		if (l->e[i].from == from)
			l->e[i] = l->e[--l->n];
}

double ks_fleet_loads_mean(const struct ks_fleet_loads *l, const char *self,
			   double own_ps, size_t *shards)
{
	double sum = 0;
	size_t i, n = 0;
	int own = 0;

	for (i = 0; i < l->n; i++) {
		own |= !strcmp(l->e[i].self, self);
		sum += l->e[i].served_ps, n++;
	}
	if (!own)
		sum += own_ps, n++;
	*shards = n;
	return sum / (double)n;
}

static int by_rate_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The threshold that lets in enough of the candidates below cur to cover
 * excess (they keep share of their reads here); cur when none is left. */
static double cover(double cur, double floor, double excess, double share,
		    const struct ks_hot_table *t, const struct ks_hot_sample *s,
		    size_t n)
{
	double *r = malloc((n ? n : 1) * sizeof(*r)), got = 0, thr = cur;
	size_t i, m = 0;

	if (!r)
		return cur;
	for (i = 0; i < n; i++) {
		const struct ks_hot_entry *e = ks_hot_find(t, s[i].key,
							   s[i].len);

		if ((e && e->read_hot) || s[i].reads_ps >= cur ||
		    s[i].reads_ps < floor)
			continue;
		r[m++] = s[i].reads_ps;
	}
	qsort(r, m, sizeof(*r), by_rate_desc);
	for (i = 0; i < m && got < excess; i++) {
		got += r[i] * (1 - share);
		thr = r[i];
	}
	free(r);
	return thr;
}

/* The reads that would come back to the owner if the threshold were
 * thr: the read-hot keys whose rate is under its leave threshold. */
static double let_go(const struct ks_hot_table *t,
		     const struct ks_hot_policy *p, double thr, double share)
{
	const struct ks_hot_entry *e;
	double back = 0;
	size_t pos = 0;

	while ((e = ks_hot_next(t, &pos)))
		if (e->read_hot && e->state == KS_HOT_HOT &&
		    e->reads_ps < p->leave_ratio * thr)
			back += e->reads_ps * (1 - share);
	return back;
}

double ks_balance_step(struct ks_balance *b, const struct ks_hot_policy *p,
		       double own_ps, double mean_ps, size_t shards,
		       const struct ks_hot_table *t,
		       const struct ks_hot_sample *s, size_t n, double share)
{
	double base = ks_hot_read_threshold(p);
	double cur = b->thr > 0 ? b->thr : base, next = cur, up;

	/* smoothed as the keys' rates are: one interval is noisy */
	own_ps = b->started ? KS_BALANCE_ALPHA * own_ps +
				      (1 - KS_BALANCE_ALPHA) * b->own_ps
			    : own_ps;
	b->own_ps = own_ps;
	b->prev_mean_ps = b->mean_ps;
	b->mean_ps = mean_ps;
	b->shards = shards;
	if (b->over <= 0 || shards < 2 || mean_ps <= 0 || base <= 0) {
		b->thr = 0;
		b->settle = 0;
		return base;
	}
	if (b->prev_mean_ps > 0 &&
	    (mean_ps > (1 + KS_BALANCE_STABLE) * b->prev_mean_ps ||
	     mean_ps < (1 - KS_BALANCE_STABLE) * b->prev_mean_ps))
		b->settle = KS_BALANCE_SETTLE; /* the fleet's load moves */
	if (b->settle) {
		b->settle--;
		return cur;
	}
	if (!b->started) {
		/* the fleet's first intervals: agents and clients still
		 * starting, their figures not the load */
		b->started = 1;
		b->settle = KS_BALANCE_SETTLE;
		return cur;
	}
	if (own_ps > (1 + b->over) * mean_ps) {
		next = cover(cur, base / KS_BALANCE_FLOOR,
			     own_ps - (1 + b->over) * mean_ps, share, t, s, n);
		if (next < cur * KS_BALANCE_STEP)
			next = cur * KS_BALANCE_STEP;
	} else if (b->thr > 0) {
		up = cur * KS_BALANCE_RAISE < base ? cur * KS_BALANCE_RAISE
						   : base;
		if (own_ps + let_go(t, p, up, share) <
		    (1 + b->over / 2) * mean_ps)
			next = up;
	}
	if (next == cur)
		return cur;
	b->lowered += next < cur;
	b->raised += next > cur;
	b->settle = KS_BALANCE_SETTLE;
	b->thr = next >= base ? 0 : next;
	return b->thr > 0 ? b->thr : base;
}

void ks_balance_policy(const struct ks_hot_policy *p, double thr,
		       struct ks_hot_policy *out)
{
	*out = *p;
	if (p->shard_capacity_ops <= 0 || thr >= ks_hot_read_threshold(p))
		return;
	out->per_copy_budget_ops = ks_hot_copy_budget(p);
	out->write_hot_fraction = ks_hot_write_threshold(p) /
				  p->shard_capacity_ops;
	out->hot_fraction = thr / p->shard_capacity_ops;
}
