// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* route.c - reads to copies or owners, writes' invalidations (route.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "client/route.h"
#include "core/hot_doc.h"

void ksc_route_read(struct ksc_view *v, const void *key, size_t len, __u64 hash,
		    int owners_only, struct ksc_read_plan *p)
{
	struct ksc_hot *e;
	unsigned turn;

	p->owner = ksc_view_owner(v, key, len);
	p->copy = KSC_NONE;
	p->stamp = 0;
	if (owners_only || p->owner == KSC_NONE)
		return;
	e = ksc_view_armed(v, hash, p->owner);
	if (!e)
		return;
	p->stamp = e->arm_rev;
	/* every handle of the process turns the one cursor, under the
	 * view's read lock: the process's reads follow the schedule */
	turn = e->sched[__atomic_fetch_add(&e->rr, 1, __ATOMIC_RELAXED) &
			(KS_STEER_SCHED - 1)];
	if (turn && turn <= e->nrep)
		p->copy = e->rep[turn - 1];
}

static void add(__u16 *out, unsigned *n, unsigned max, unsigned owner,
		const __u16 *ids, unsigned nids)
{
	unsigned i, j;

	for (i = 0; i < nids; i++) {
		if (ids[i] == owner)
			continue;
		for (j = 0; j < *n && out[j] != ids[i]; j++)
			;
		if (j == *n && *n < max)
			out[(*n)++] = ids[i];
	}
}

unsigned ksc_route_inval(const struct ksc_view *v, unsigned owner, __u64 hash,
			 int all, __u16 *out, unsigned max)
{
	const struct ksc_hot *e = ksc_view_hot(v, hash);
	unsigned n = 0;

	if (!all && !e)
		return 0;
	if (owner < v->nsrv)
		add(out, &n, max, owner, v->srv[owner].reps,
		    v->srv[owner].nreps);
	add(out, &n, max, owner, v->static_reps, v->nstatic);
	if (e) {
		add(out, &n, max, owner, e->seen, e->nseen);
		if (e->owner != owner && e->owner < v->nsrv)
			add(out, &n, max, owner, v->srv[e->owner].reps,
			    v->srv[e->owner].nreps);
	}
	return n;
}

void ksc_route_move(const struct ksc_view *v, const void *key, size_t len,
		    __u64 now_ms, unsigned grace_ms, struct ksc_move *m)
{
	__u64 age = now_ms - v->ring_since_ms;

	m->owner = ksc_view_owner(v, key, len);
	m->old = KSC_NONE;
	m->read_old = m->inval_old = 0;
	m->rev = v->ring_rev;
	/* a clock behind the stamp (a test's) counts as the change's start */
	if (now_ms < v->ring_since_ms)
		age = 0;
	if (!v->have_prev || m->owner == KSC_NONE || age >= 2ULL * grace_ms)
		return;
	m->old = ksc_view_prev_owner(v, key, len);
	if (m->old == m->owner || m->old == KSC_NONE) {
		m->old = KSC_NONE;
		return;
	}
	m->inval_old = 1;
	m->read_old = age < grace_ms;
}

int ksc_wlog_add(struct ksc_wlog *l, const void *key, size_t klen, __s64 rev,
		 __u64 now_ms)
{
	struct ksc_wlog_ent *e;

	if (!l->e && !(l->e = calloc(KSC_WLOG_KEYS, sizeof(*l->e))))
		return -ENOMEM;
	if (klen > KS_MC_KEY_MAX)
		klen = KS_MC_KEY_MAX; /* the key check refused longer ones */
	e = &l->e[l->next];
	e->at_ms = now_ms;
	e->rev = rev;
	e->len = (__u8)klen;
	memcpy(e->key, key, klen);
	l->next = (l->next + 1) % KSC_WLOG_KEYS;
	if (l->n < KSC_WLOG_KEYS)
		l->n++;
	return 0;
}

void ksc_wlog_free(struct ksc_wlog *l)
{
	free(l->e);
	memset(l, 0, sizeof(*l));
}

unsigned ksc_wlog_catchup(const struct ksc_wlog *l, const struct ksc_view *v,
			  unsigned window_ms, struct ksc_catchup *out,
			  unsigned max, int *lost)
{
	__u64 from = v->ring_since_ms > window_ms ? v->ring_since_ms - window_ms
						  : 0;
	unsigned i, k, n = 0, po, no;

	*lost = 0;
	if (!v->have_prev || !l->n)
		return 0;
	/* the oldest entry kept is inside the window: older ones are gone */
	*lost = l->n == KSC_WLOG_KEYS && l->e[l->next].at_ms > from;
	for (i = 0; i < l->n && n < max; i++) {
		const struct ksc_wlog_ent *e =
			&l->e[(l->next + KSC_WLOG_KEYS - l->n + i) %
			      KSC_WLOG_KEYS];

		if (e->rev != v->prev_rev || e->at_ms < from)
			continue;
		po = ksc_view_prev_owner(v, e->key, e->len);
		no = ksc_view_owner(v, e->key, e->len);
		if (po == no || no == KSC_NONE)
			continue;
		/* once per key: a key written often is in the log often */
		for (k = 0; k < n; k++)
			if (out[k].len == e->len &&
			    !memcmp(out[k].key, e->key, e->len))
				break;
		if (k < n)
			continue;
		out[n].srv = no;
		out[n].len = e->len;
		memcpy(out[n].key, e->key, e->len);
		n++;
	}
	return n;
}
