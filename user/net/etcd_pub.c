// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* etcd_pub.c - keys kept in etcd under a lease, from a thread (etcd_pub.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "net/etcd.h"
#include "net/etcd_pub.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/thread.h"

struct entry {
	char *key;
	char *val; /* NULL: the key should be gone */
	size_t vlen;
	/* val must reach etcd before a later value replaces it
	 * (ks_etcd_pub_set_ordered); that later value waits in next */
	int must;
	int has_next, next_must;
	char *next; /* NULL with has_next: then gone */
	size_t next_len;
	uint64_t gen;      /* bumped on every change */
	uint64_t done_gen; /* the generation etcd holds */
	uint64_t since_ns; /* when the oldest unwritten change came */
};

struct ks_etcd_pub {
	/* Two threads, each with a client of its own: the writer (grants,
	 * writes) and the keeper (keepalives), so that a write stuck in a
	 * slow etcd for up to the client's timeout cannot let the lease
	 * expire, and a lease lost is not found only after the writes. */
	struct ks_etcd *c, *kc;
	pthread_t th, kth;
	int kth_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;  /* wakes the writer */
	pthread_cond_t kcv; /* wakes the keeper */
	int stop;
	unsigned stall_ms; /* test hook: the writer sleeps before each write */
	/* test control: the keeper renews once per tick (ks_etcd_pub_tick) */
	int ka_on_tick;
	uint64_t ticks,
		ka_tick; /* ticks seen; the tick the last renewal used */
	/* when the last renewal that went through was sent: the start of
	 * the gap the next one closes (stats' max_renew_gap_ns) */
	uint64_t renew_sent_ns;
	unsigned seed; /* jitter of retries and re-puts */
	int held;      /* ks_etcd_pub_hold: no write until released */
	int64_t ttl_s;
	uint64_t keepalive_ns;
	uint64_t next_keepalive_ns;
	uint64_t retry_ns;  /* the writer's next try after a failure */
	uint64_t kretry_ns; /* the keeper's */
	char name[200];
	struct entry *e;
	size_t n, cap;
	uint64_t gen;
	struct ks_etcd_pub_stats st;
};

static int pending(const struct entry *x)
{
	return x->gen != x->done_gen;
}

static struct entry *find(struct ks_etcd_pub *p, const char *key)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (!strcmp(p->e[i].key, key))
			return &p->e[i];
	return NULL;
}

static void drop(struct ks_etcd_pub *p, struct entry *x)
{
	free(x->key);
	free(x->val);
	free(x->next);
	*x = p->e[--p->n];
}

/* Under the lock: a change to x. */
static void changed(struct ks_etcd_pub *p, struct entry *x)
{
	if (!pending(x))
		x->since_ns = ks_mono_ns();
	x->gen = ++p->gen;
	pthread_cond_signal(&p->cv);
}

/* Under the lock: the entry of key, made (wanted gone) when absent; NULL
 * when out of memory. */
static struct entry *entry_of(struct ks_etcd_pub *p, const char *key)
{
	struct entry *x = find(p, key);

	if (x)
		return x;
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		struct entry *e = realloc(p->e, cap * sizeof(*e));

		if (!e)
			return NULL;
		p->e = e;
		p->cap = cap;
	}
	x = &p->e[p->n];
	memset(x, 0, sizeof(*x));
	x->key = strdup(key);
	if (!x->key)
		return NULL;
	p->n++;
	return x;
}

static int same(const char *a, size_t alen, const char *b, size_t blen)
{
	if (!a || !b)
		return a == b;
	return alen == blen && !memcmp(a, b, alen);
}

/* Under the lock: x should come to hold v (taken over; NULL: gone). 1 when
 * that is a change, 0 when it is what was wanted already. */
static int want(struct ks_etcd_pub *p, struct entry *x, char *v, size_t vlen,
		int must)
{
	if (x->has_next ? same(x->next, x->next_len, v, vlen)
			: same(x->val, x->vlen, v, vlen)) {
		free(v);
		return 0;
	}
	if (pending(x) && x->must) {
		/* the value not yet written must be: this one comes after */
		free(x->next);
		x->next = v;
		x->next_len = vlen;
		x->next_must = must;
		x->has_next = 1;
		return 1;
	}
	free(x->val);
	x->val = v;
	x->vlen = vlen;
	x->must = must;
	changed(p, x);
	return 1;
}

/* Under the lock, once x's pending value is in etcd: the one waiting
 * behind it, if any, is next to write. 0 when x is to be dropped. */
static int written(struct ks_etcd_pub *p, struct entry *x)
{
	x->done_gen = x->gen;
	if (x->has_next) {
		free(x->val);
		x->val = x->next;
		x->vlen = x->next_len;
		x->must = x->next_must;
		x->next = NULL;
		x->has_next = 0;
		changed(p, x);
		return 1;
	}
	return x->val != NULL;
}

static int set(struct ks_etcd_pub *p, const char *key, const void *val,
	       size_t vlen, int must)
{
	struct entry *x;
	char *v = malloc(vlen + 1);
	int rc = -ENOMEM;

	if (!v)
		return -ENOMEM;
	memcpy(v, val, vlen);
	v[vlen] = '\0';
	pthread_mutex_lock(&p->mu);
	x = entry_of(p, key);
	if (x)
		rc = want(p, x, v, vlen, must);
	else
		free(v);
	pthread_mutex_unlock(&p->mu);
	return rc;
}

int ks_etcd_pub_set(struct ks_etcd_pub *p, const char *key, const void *val,
		    size_t vlen)
{
	return set(p, key, val, vlen, 0);
}

int ks_etcd_pub_set_ordered(struct ks_etcd_pub *p, const char *key,
			    const void *val, size_t vlen)
{
	return set(p, key, val, vlen, 1);
}

int ks_etcd_pub_delete(struct ks_etcd_pub *p, const char *key)
{
	struct entry *x;
	int rc = 0;

	pthread_mutex_lock(&p->mu);
	x = find(p, key);
	if (x)
		rc = want(p, x, NULL, 0, 0);
	pthread_mutex_unlock(&p->mu);
	return rc;
}

void ks_etcd_pub_hold(struct ks_etcd_pub *p)
{
	pthread_mutex_lock(&p->mu);
	p->held = 1;
	pthread_mutex_unlock(&p->mu);
}

void ks_etcd_pub_release(struct ks_etcd_pub *p)
{
	pthread_mutex_lock(&p->mu);
	p->held = 0;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void ks_etcd_pub_stats(struct ks_etcd_pub *p, struct ks_etcd_pub_stats *out)
{
	size_t i;

	pthread_mutex_lock(&p->mu);
	*out = p->st;
	out->keys = out->pending = 0;
	for (i = 0; i < p->n; i++) {
		out->keys += p->e[i].val != NULL;
		out->pending += pending(&p->e[i]);
	}
	pthread_mutex_unlock(&p->mu);
}

/* Under the lock, after a call on client c: its outcome into the stats,
 * logged once per outage. */
static void outcome(struct ks_etcd_pub *p, const struct ks_etcd *c, int rc,
		    const char *doing)
{
	if (!rc) {
		if (!p->st.up && p->st.errors)
			ks_info("etcd: %s: writing again", p->name);
		p->st.up = 1;
		p->st.err[0] = '\0';
		return;
	}
	p->st.errors++;
	snprintf(p->st.err, sizeof(p->st.err), "%s: %s", doing,
		 ks_etcd_errmsg(c));
	if (p->st.up || p->st.errors == 1)
		ks_warn("etcd: %s: %s failed (%s); retrying about every %llu ms",
			p->name, doing, ks_etcd_errmsg(c),
			KS_ETCD_PUB_RETRY_NS / 1000000ULL);
	p->st.up = 0;
}

/* Under the lock: base_ns, give or take half, so that agents that lost
 * etcd together do not all come back in the same millisecond. */
static uint64_t jitter(struct ks_etcd_pub *p, uint64_t base_ns)
{
	return base_ns / 2 + (uint64_t)rand_r(&p->seed) % (base_ns + 1);
}

static void retry_later(struct ks_etcd_pub *p, uint64_t *when)
{
	*when = ks_mono_ns() + jitter(p, KS_ETCD_PUB_RETRY_NS);
}

/* Under the lock; unlocks for the call. A lease, and every key again
 * when an old one was lost. */
static void grant(struct ks_etcd_pub *p)
{
	int64_t id = 0, ttl = 0;
	int rc, lost = p->st.grants > 0;
	uint64_t sent = ks_mono_ns();
	size_t i;

	pthread_mutex_unlock(&p->mu);
	rc = ks_etcd_lease_grant(p->c, p->ttl_s, &id, &ttl);
	pthread_mutex_lock(&p->mu);
	outcome(p, p->c, rc, "granting a lease");
	if (rc) {
		retry_later(p, &p->retry_ns);
		return;
	}
	/* a new lease: its first renewal's gap starts here */
	p->renew_sent_ns = sent;
	p->ka_tick = p->ticks;
	p->st.lease = id;
	p->st.lease_ttl = ttl;
	p->st.grants++;
	p->next_keepalive_ns = ks_mono_ns() + p->keepalive_ns;
	pthread_cond_signal(&p->kcv);
	/* After a loss every agent of the fleet may be putting everything
	 * again at once (etcd was away for all of them): spread the puts
	 * over up to KS_ETCD_PUB_REPUT_SPREAD_NS; the keys are gone
	 * meanwhile anyway. */
	if (lost)
		p->retry_ns = ks_mono_ns() +
			      (uint64_t)rand_r(&p->seed) %
				      KS_ETCD_PUB_REPUT_SPREAD_NS;
	/* the keys went with the old lease: what should be there is put
	 * again, what should be gone is */
	for (i = 0; i < p->n;) {
		struct entry *x = &p->e[i];

		/* a delete is moot (the key went with the lease); what
		 * waits behind it is not */
		if (!x->val && !written(p, x)) {
			drop(p, x);
			continue;
		}
		if (!pending(x)) {
			x->done_gen = 0;
			x->since_ns = ks_mono_ns();
		}
		i++;
	}
	if (lost)
		ks_warn("etcd: %s: the lease was gone (no renewal reached etcd within its %lld s: etcd away or this host held up; or revoked); a new one, %zu keys written again",
			p->name, (long long)p->st.lease_ttl, p->n);
}

/* Under the lock: the lease is gone; the writer grants a new one. */
static void lease_lost(struct ks_etcd_pub *p, int64_t id)
{
	if (p->st.lease != id)
		return; /* the writer has replaced it already */
	p->st.lease = 0;
	p->retry_ns = 0;
	pthread_cond_signal(&p->cv);
}

/* Under the lock: a keepalive sent at sent answered (or found lease id
 * gone) now; the gap since the renewal before it into the stats. */
static void renew_gap(struct ks_etcd_pub *p, int64_t id, uint64_t sent)
{
	uint64_t gap;

	if (id != p->st.lease)
		return; /* the writer granted another meanwhile */
	gap = ks_mono_ns() - p->renew_sent_ns;
	if (gap > p->st.max_renew_gap_ns)
		p->st.max_renew_gap_ns = gap;
	p->renew_sent_ns = sent;
}

/* The keeper, under the lock; unlocks for the call. */
static void keepalive(struct ks_etcd_pub *p)
{
	int64_t id = p->st.lease;
	uint64_t sent = ks_mono_ns();
	int rc;

	p->ka_tick = p->ticks;
	pthread_mutex_unlock(&p->mu);
	rc = ks_etcd_lease_keepalive(p->kc, id, NULL);
	pthread_mutex_lock(&p->mu);
	if (rc == -ENOENT) {
		/* not an outage: etcd is there and says the lease is gone;
		 * the gap that lost it counts too */
		renew_gap(p, id, sent);
		lease_lost(p, id);
		return;
	}
	outcome(p, p->kc, rc, "keeping the lease alive");
	if (rc) {
		retry_later(p, &p->kretry_ns);
		return;
	}
	p->st.keepalives++;
	renew_gap(p, id, sent);
	p->next_keepalive_ns = ks_mono_ns() + p->keepalive_ns;
}

/* Under the lock: the keeper may renew now (the test control holds it
 * to one renewal per tick). */
static int keeper_may(const struct ks_etcd_pub *p)
{
	return !p->ka_on_tick || p->ticks != p->ka_tick;
}

/* The oldest changes first, at most one transaction's worth. */
static size_t batch(struct ks_etcd_pub *p, struct ks_etcd_write *w,
		    uint64_t *gens, size_t max)
{
	size_t i, n = 0;
	uint64_t after = 0;

	while (n < max) {
		size_t best = p->n;

		for (i = 0; i < p->n; i++)
			if (pending(&p->e[i]) && p->e[i].gen > after &&
			    (best == p->n || p->e[i].gen < p->e[best].gen))
				best = i;
		if (best == p->n)
			break;
		after = p->e[best].gen;
		w[n].key = strdup(p->e[best].key);
		w[n].klen = strlen(p->e[best].key);
		w[n].val = p->e[best].val ? malloc(p->e[best].vlen + 1) : NULL;
		w[n].vlen = p->e[best].vlen;
		if (!w[n].key || (p->e[best].val && !w[n].val)) {
			free((void *)w[n].key);
			free((void *)w[n].val);
			break;
		}
		if (w[n].val)
			memcpy((void *)w[n].val, p->e[best].val, w[n].vlen);
		gens[n++] = p->e[best].gen;
	}
	return n;
}

static void write_changes(struct ks_etcd_pub *p)
{
	struct ks_etcd_write w[KS_ETCD_TXN_MAX];
	uint64_t gens[KS_ETCD_TXN_MAX], now;
	int64_t lease = p->st.lease;
	size_t n = batch(p, w, gens, KS_ETCD_TXN_MAX), i;
	int rc;

	if (!n)
		return;
	pthread_mutex_unlock(&p->mu);
	if (p->stall_ms)
		usleep(p->stall_ms * 1000U);
	rc = ks_etcd_write_many(p->c, w, n, lease, NULL);
	pthread_mutex_lock(&p->mu);
	if (rc == -ENOENT) {
		/* "requested lease not found": it expired while etcd was
		 * away; a new one, and everything again */
		lease_lost(p, lease);
	} else {
		outcome(p, p->c, rc, "writing");
		if (rc)
			retry_later(p, &p->retry_ns);
	}
	now = ks_mono_ns();
	for (i = 0; i < n; i++) {
		struct entry *x = find(p, w[i].key);

		if (!rc) {
			if (w[i].val)
				p->st.puts++;
			else
				p->st.deletes++;
		}
		if (!rc && x && x->gen == gens[i]) {
			if (now - x->since_ns > p->st.max_wait_ns)
				p->st.max_wait_ns = now - x->since_ns;
			if (!written(p, x))
				drop(p, x);
		}
		free((void *)w[i].key);
		free((void *)w[i].val);
	}
	if (!rc)
		p->st.txns++;
}

static int any_pending(const struct ks_etcd_pub *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (pending(&p->e[i]))
			return 1;
	return 0;
}

/* The condition variable runs on CLOCK_MONOTONIC, as ks_mono_ns. */
static void wait_until(struct ks_etcd_pub *p, pthread_cond_t *cv,
		       uint64_t mono_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(mono_ns / 1000000000ULL),
		.tv_nsec = (long)(mono_ns % 1000000000ULL),
	};

	if (mono_ns > ks_mono_ns())
		pthread_cond_timedwait(cv, &p->mu, &ts);
}

static void *pub_main(void *arg)
{
	struct ks_etcd_pub *p = arg;

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		uint64_t now = ks_mono_ns();

		if (now < p->retry_ns) {
			wait_until(p, &p->cv, p->retry_ns);
			continue;
		}
		if (!p->st.lease) {
			grant(p);
			continue;
		}
		if (!p->held && any_pending(p)) {
			write_changes(p);
			continue;
		}
		/* a change, a release, a lost lease or the stop signal it */
		wait_until(p, &p->cv, now + 1000000000ULL);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static void *keeper_main(void *arg)
{
	struct ks_etcd_pub *p = arg;

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		uint64_t now = ks_mono_ns();

		if (now < p->kretry_ns) {
			wait_until(p, &p->kcv, p->kretry_ns);
			continue;
		}
		if (p->st.lease && now >= p->next_keepalive_ns &&
		    keeper_may(p)) {
			keepalive(p);
			continue;
		}
		/* no lease: the writer's grant signals; a tick too */
		wait_until(p, &p->kcv,
			   p->st.lease && now < p->next_keepalive_ns
				   ? p->next_keepalive_ns
				   : now + 1000000000ULL);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Everything but the threads, which are stopped or were never started. */
static void pub_free(struct ks_etcd_pub *p)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		free(p->e[i].key);
		free(p->e[i].val);
		free(p->e[i].next);
	}
	free(p->e);
	pthread_cond_destroy(&p->cv);
	pthread_cond_destroy(&p->kcv);
	pthread_mutex_destroy(&p->mu);
	ks_etcd_close(p->c);
	ks_etcd_close(p->kc);
	free(p);
}

static void stop_threads(struct ks_etcd_pub *p, int writer)
{
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_signal(&p->cv);
	pthread_cond_signal(&p->kcv);
	pthread_mutex_unlock(&p->mu);
	if (writer)
		pthread_join(p->th, NULL);
	if (p->kth_started)
		pthread_join(p->kth, NULL);
}

int ks_etcd_pub_start(struct ks_etcd_pub **out, const struct ks_etcd *c,
		      int64_t ttl_s, unsigned keepalive_ms, const char *name,
		      char *err, size_t errlen)
{
	struct ks_etcd_pub *p = calloc(1, sizeof(*p));
	struct ks_thread_opts to = { .keep = 0 };
	pthread_condattr_t ca;
	uint64_t ka;
	int rc;

	*out = NULL;
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = ks_etcd_clone(c, &p->c, err, errlen);
	if (!rc)
		rc = ks_etcd_clone(c, &p->kc, err, errlen);
	if (rc) {
		ks_etcd_close(p->c);
		free(p);
		return rc;
	}
	p->ttl_s = ttl_s < 1 ? 1 : ttl_s;
	ka = (uint64_t)keepalive_ms * 1000000ULL;
	if (!ka || ka > (uint64_t)p->ttl_s * 1000000000ULL / 3)
		ka = (uint64_t)p->ttl_s * 1000000000ULL / 3;
	p->keepalive_ns = ka;
	p->seed = (unsigned)getpid() ^ (unsigned)ks_mono_ns();
	snprintf(p->name, sizeof(p->name), "%s", name);
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cv, &ca);
	pthread_cond_init(&p->kcv, &ca);
	pthread_condattr_destroy(&ca);
	/* HTTP to etcd only: no capability (they start before the
	 * agent's own drop, so they drop theirs: util/thread.h); curl's
	 * resolver threads inherit their mask and sets */
	to.name = "ks-etcd-keep";
	rc = ks_thread_start(&p->kth, &to, keeper_main, p);
	if (!rc) {
		p->kth_started = 1;
		to.name = "ks-etcd-pub";
		rc = ks_thread_start(&p->th, &to, pub_main, p);
	}
	if (rc) {
		snprintf(err, errlen, "cannot start the etcd publisher (%s)",
			 strerror(-rc));
		stop_threads(p, 0);
		pub_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

void ks_etcd_pub_test_stall(struct ks_etcd_pub *p, unsigned ms)
{
	pthread_mutex_lock(&p->mu);
	p->stall_ms = ms;
	pthread_mutex_unlock(&p->mu);
}

void ks_etcd_pub_test_keepalive_on_tick(struct ks_etcd_pub *p, int on)
{
	pthread_mutex_lock(&p->mu);
	p->ka_on_tick = on;
	pthread_mutex_unlock(&p->mu);
}

void ks_etcd_pub_tick(struct ks_etcd_pub *p)
{
	pthread_mutex_lock(&p->mu);
	p->ticks++;
	pthread_cond_signal(&p->kcv);
	pthread_mutex_unlock(&p->mu);
}

void ks_etcd_pub_stop(struct ks_etcd_pub *p, int revoke)
{
	if (!p)
		return;
	stop_threads(p, 1);
	if (revoke && p->st.lease)
		ks_etcd_lease_revoke(p->c, p->st.lease);
	pub_free(p);
}
