// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * limit_reg.c - a view's registrations for the limited keys it calls
 * (docs/limits.md, "How the limit is shared"): the view's thread keeps
 * one etcd key, limit_clients/HASH/ID, per limited key its handles called
 * within KSC_LIMIT_REG_IDLE_MS, all under one lease of the view's. Every
 * view watches the prefix already, so each counts the views registered
 * for a key (ksc_view_limit_clients) and its bucket takes rate / that
 * count: the fleet-wide limit without an operator counting processes.
 * A process that ends revokes the lease (its keys go at once); one that
 * dies takes its keys with it when the lease runs out (KSC_LIMIT_REG_TTL_S).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "client/client.h"
#include "net/etcd.h"
#include "util/clock.h"

#define KSC_LIMIT_REG_TTL_S 5   /* a dead process's share, at most this long */
#define KSC_LIMIT_REG_MAX   256 /* keys one view registers at once */

static int has(const __u64 *set, size_t n, __u64 h)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (set[i] == h)
			return 1;
	return 0;
}

/* The hashes of the keys called within the idle time, at most max. */
static size_t wanted(struct ksc_follower *f, __u64 now_ns, __u64 *out,
		     size_t max)
{
	const struct ksc_limits *l = &f->limits;
	size_t i, n = 0;

	pthread_mutex_lock(&f->llock);
	for (i = 0; l->b && i < KSC_LIMIT_KEYS && n < max; i++) {
		const struct ksc_limit_bucket *b = &l->b[i];

		/* a call after the thread read its clock is ahead of now_ns:
		 * compared so that it counts as recent, not as ancient */
		if (b->hash &&
		    b->last_ns + KSC_LIMIT_REG_IDLE_MS * 1000000ULL > now_ns &&
		    !has(out, n, b->hash))
			out[n++] = b->hash;
	}
	pthread_mutex_unlock(&f->llock);
	return n;
}

static void err_count(struct ksc_follower *f)
{
	__atomic_add_fetch(&f->reg_errors, 1, __ATOMIC_RELAXED);
}

/* Keeps the lease, or takes one: 0, or -errno (tried again a second on). */
static int lease(struct ksc_follower *f, __u64 now_ms)
{
	int err;

	if (f->reg_lease) {
		if (now_ms - f->reg_kept_ms < KSC_LIMIT_REG_TTL_S * 1000 / 3)
			return 0;
		err = ks_etcd_lease_keepalive(f->etcd, f->reg_lease, NULL);
		if (!err) {
			f->reg_kept_ms = now_ms;
			return 0;
		}
		if (err != -ENOENT)
			return err;
		/* expired (the thread stalled past its TTL): its keys are
		 * gone with it, so all are put again under a new one */
		f->reg_lease = 0;
		f->nregd = 0;
	}
	if (now_ms - f->reg_tried_ms < 1000)
		return -EAGAIN;
	f->reg_tried_ms = now_ms;
	err = ks_etcd_lease_grant(f->etcd, KSC_LIMIT_REG_TTL_S, &f->reg_lease,
				  NULL);
	if (err) {
		f->reg_lease = 0;
		return err;
	}
	f->reg_kept_ms = now_ms;
	return 0;
}

void ksc_limit_reg_tick(struct ksc_follower *f)
{
	__u64 want[KSC_LIMIT_REG_MAX], now_ns = ks_mono_ns();
	__u64 now_ms = now_ns / 1000000;
	char key[KSC_PREFIX_MAX + 64];
	size_t n, i;
	int len, err;

	if (f->reg_off || !f->etcd)
		return;
	n = wanted(f, now_ns, want, KSC_LIMIT_REG_MAX);
	if (!n && !f->nregd)
		return;
	if (!n) { /* nothing called lately: the lease and its keys go */
		if (f->reg_lease && ks_etcd_lease_revoke(f->etcd, f->reg_lease))
			err_count(f);
		__atomic_add_fetch(&f->reg_dels, f->nregd, __ATOMIC_RELAXED);
		f->reg_lease = 0;
		f->nregd = 0;
		return;
	}
	err = lease(f, now_ms);
	if (err) {
		if (err != -EAGAIN)
			err_count(f);
		return;
	}
	if (f->regd_size < KSC_LIMIT_REG_MAX) {
		__u64 *r = realloc(f->regd, KSC_LIMIT_REG_MAX * sizeof(*r));

		if (!r)
			return;
		f->regd = r;
		f->regd_size = KSC_LIMIT_REG_MAX;
	}
	/* a refused put (a user without write on limit_clients/) is
	 * tried again 5 s on, not at every tick */
	for (i = 0; i < n && now_ms >= f->reg_retry_ms; i++) {
		if (has(f->regd, f->nregd, want[i]))
			continue;
		len = ksc_lim_reg_key(&f->view, want[i], f->reg_id, key,
				      sizeof(key));
		if (len < 0 || ks_etcd_put(f->etcd, key, (size_t)len, "1", 1,
					   f->reg_lease, NULL)) {
			err_count(f);
			f->reg_retry_ms = now_ms + 5000;
			break;
		}
		f->regd[f->nregd++] = want[i];
		__atomic_add_fetch(&f->reg_puts, 1, __ATOMIC_RELAXED);
	}
	i = 0;
	while (i < f->nregd) {
		if (has(want, n, f->regd[i])) {
			i++;
			continue;
		}
		len = ksc_lim_reg_key(&f->view, f->regd[i], f->reg_id, key,
				      sizeof(key));
		if (len < 0 ||
		    ks_etcd_delete(f->etcd, key, (size_t)len, 0, NULL)) {
			err_count(f);
			i++;
			continue;
		}
		f->regd[i] = f->regd[--f->nregd];
		__atomic_add_fetch(&f->reg_dels, 1, __ATOMIC_RELAXED);
	}
}

void ksc_limit_reg_end(struct ksc_follower *f)
{
	/* the keys go with the lease, at once: the other views' shares
	 * grow now, not when the TTL runs out */
	if (f->etcd && f->reg_lease)
		ks_etcd_lease_revoke(f->etcd, f->reg_lease);
	f->reg_lease = 0;
	f->nregd = 0;
	free(f->regd);
	f->regd = NULL;
	f->regd_size = 0;
}
