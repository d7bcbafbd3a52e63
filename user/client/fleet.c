// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fleet.c - a handle's view follows /keysteer/CLUSTER/ (docs/client.md,
 * "The view"): one range read of the prefix before keysteer_open returns,
 * then a thread of the handle's own watches the prefix from the read's
 * revision + 1 (net/etcd.h: it reconnects by itself, from the revision
 * after the last event, so nothing is missed) and applies every event to
 * the view under the handle's lock. A compacted start revision reads the
 * prefix again. While the watch is not established the view stays as it
 * was; once that has lasted stale_view_ms, reads go to the owners only
 * (ksc_fleet_owners_only), until the watch is back.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "client/client.h"
#include "net/etcd.h"

#define LOAD(p)     __atomic_load_n(&(p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELEASE)

void ksc_fleet_mark_up(struct keysteer *ks, int up, __u64 now)
{
	/* events may be missed until the watch is back: the L1 is flushed */
	if (!up && LOAD(ks->view_up))
		__atomic_add_fetch(&ks->l1_epoch, 1, __ATOMIC_ACQ_REL);
	if (up)
		STORE(ks->last_up_ms, now);
	STORE(ks->view_up, up);
}

int ksc_fleet_owners_only(struct keysteer *ks, __u64 now_ms)
{
	if (!ks->follows || LOAD(ks->view_up))
		return 0;
	return now_ms - LOAD(ks->last_up_ms) > ks->stale_view_ms;
}

/* The whole prefix, into the view; its revision into *rev. */
static int read_all(struct keysteer *ks, int64_t *rev)
{
	struct ks_etcd_range r;
	int err;

	err = ks_etcd_range(ks->etcd, ks->view.prefix, ks->view.plen,
			    KS_ETCD_PREFIX, &r);
	if (err)
		return ksc_err(ks, err, "etcd: reading %s: %s", ks->view.prefix,
			       ks_etcd_errmsg(ks->etcd));
	pthread_mutex_lock(&ks->lock);
	err = ksc_view_load(&ks->view, r.kvs, r.n, r.revision, ksc_now_ms());
	pthread_mutex_unlock(&ks->lock);
	*rev = r.revision;
	ks_etcd_range_free(&r);
	return err;
}

int ksc_fleet_stopping(struct keysteer *ks, int wait_ms)
{
	struct pollfd p = { .fd = ks->stop_fd, .events = POLLIN };

	return poll(&p, 1, wait_ms) > 0;
}

/*
 * The test-only view_delay_ms: events held back that long before they are
 * applied, so a test can have a handle whose view lags while others move
 * (docs/operations.md, "Test-only switches"). A FIFO: events arrive in
 * order and wait the same time each.
 */
struct held {
	struct ks_etcd_event ev;
	__u64 at_ms;
};

struct delayq {
	struct held *q;
	size_t head, n, cap;
};

static void delay_push(struct delayq *d, const struct ks_etcd_event *ev,
		       __u64 now)
{
	if (d->head + d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 64;
		struct held *q;

		if (d->head) { /* room at the front first */
			memmove(d->q, d->q + d->head, d->n * sizeof(*d->q));
			d->head = 0;
		}
		q = d->n == d->cap ? realloc(d->q, cap * sizeof(*q)) : d->q;
		if (!q)
			return; /* a lost event: a test's handle only */
		if (d->n == d->cap)
			d->cap = cap;
		d->q = q;
	}
	d->q[d->head + d->n++] = (struct held){ *ev, now };
}

/* Applies (under the lock, held by the caller) the events held delay_ms. */
static void delay_apply(struct keysteer *ks, struct delayq *d, __u64 now)
{
	while (d->n && d->q[d->head].at_ms + ks->view_delay_ms <= now) {
		ksc_view_event(&ks->view, &d->q[d->head].ev, now);
		ks_etcd_event_free(&d->q[d->head].ev);
		d->head++;
		d->n--;
	}
	if (!d->n)
		d->head = 0;
}

static void delay_free(struct delayq *d)
{
	while (d->n) {
		ks_etcd_event_free(&d->q[d->head++].ev);
		d->n--;
	}
	free(d->q);
}

void ksc_ring_catchup(struct keysteer *ks)
{
	struct ksc_catchup *cu = malloc(KSC_WLOG_KEYS * sizeof(*cu));
	unsigned grace, i, j, n = 0, ndone = 0, *done_srv;
	struct ks_mc_conn *mc;
	int lost = 0;

	done_srv = calloc(KSC_WLOG_KEYS, sizeof(*done_srv));
	mc = calloc(KSC_WLOG_KEYS, sizeof(*mc));
	if (cu && done_srv && mc) {
		grace = ks->ring_grace_ms ? ks->ring_grace_ms
					  : 3 * (ks->stale_view_ms + 1000);
		pthread_mutex_lock(&ks->lock);
		/* the writes of one grace before: a lag longer is not covered
		 * by the grace either (docs/client.md) */
		n = ksc_wlog_catchup(&ks->wlog, &ks->view, grace, cu,
				     KSC_WLOG_KEYS, &lost);
		pthread_mutex_unlock(&ks->lock);
	} else {
		lost = 1;
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < ndone && done_srv[j] != cu[i].srv; j++)
			;
		if (j == ndone) {
			if (ksc_conn_init(ks, cu[i].srv, &mc[j])) {
				__atomic_add_fetch(&ks->catchup_missed, 1,
						   __ATOMIC_RELAXED);
				continue;
			}
			done_srv[ndone++] = cu[i].srv;
		}
		if (ks_mc_delete(&mc[j], (const __u8 *)cu[i].key, cu[i].len))
			__atomic_add_fetch(&ks->catchup_missed, 1,
					   __ATOMIC_RELAXED);
		else
			__atomic_add_fetch(&ks->catchups, 1, __ATOMIC_RELAXED);
	}
	if (lost)
		__atomic_add_fetch(&ks->catchup_missed, 1, __ATOMIC_RELAXED);
	for (j = 0; j < ndone; j++)
		ks_mc_close(&mc[j]);
	free(mc);
	free(done_srv);
	free(cu);
}

static void *watch_main(void *arg)
{
	struct delayq dq = { 0 };
	struct keysteer *ks = arg;
	struct ks_etcd_watch *w = NULL;
	int64_t next = ks->view.revision + 1, rev;
	__u64 now, purged = 0, changes = ks->view.ring_changes;
	struct ks_etcd_event ev;
	struct pollfd p[2];
	int rc, t;

	for (;;) {
		if (!w && ks_etcd_watch_start(ks->etcd, ks->view.prefix,
					      ks->view.plen, KS_ETCD_PREFIX,
					      next, &w)) {
			w = NULL;
			if (ksc_fleet_stopping(ks, 500))
				break;
			continue;
		}
		p[0] = (struct pollfd){ .fd = ks_etcd_watch_fd(w),
					.events = POLLIN };
		p[1] = (struct pollfd){ .fd = ks->stop_fd, .events = POLLIN };
		t = ks_etcd_watch_timeout_ms(w);
		if (t < 0 || t > 250)
			t = 250;
		if (poll(p, 2, t) > 0 && p[1].revents)
			break;
		rc = ks_etcd_watch_run(w);
		now = ksc_now_ms();
		if (rc > 0 || dq.n) {
			pthread_mutex_lock(&ks->lock);
			while (rc > 0 && ks_etcd_watch_next(w, &ev) == 1) {
				if (ks->view_delay_ms) {
					delay_push(&dq, &ev, now);
					continue;
				}
				ksc_view_event(&ks->view, &ev, now);
				ks_etcd_event_free(&ev);
			}
			delay_apply(ks, &dq, now);
			pthread_mutex_unlock(&ks->lock);
		}
		if (__atomic_load_n(&ks->view.ring_changes, __ATOMIC_RELAXED) !=
			    changes &&
		    ks->ring_union == KSC_UNION_ON) {
			changes = ks->view.ring_changes;
			ksc_ring_catchup(ks);
		}
		ksc_fleet_mark_up(ks, ks_etcd_watch_created(w), now);
		if (rc == -ERANGE || rc == -EACCES || rc == -EPERM) {
			/* the watch ended: read everything again */
			ks_etcd_watch_stop(w);
			w = NULL;
			ksc_fleet_mark_up(ks, 0, now);
			if (rc != -ERANGE && ksc_fleet_stopping(ks, 1000))
				break;
			if (!read_all(ks, &rev))
				next = rev + 1;
			else if (ksc_fleet_stopping(ks, 500))
				break;
		} else {
			next = ks_etcd_watch_next_revision(w);
		}
		if (now - purged > 1000) {
			pthread_mutex_lock(&ks->lock);
			ksc_view_purge(&ks->view, now, KSC_GONE_KEEP_MS);
			pthread_mutex_unlock(&ks->lock);
			purged = now;
		}
	}
	ks_etcd_watch_stop(w);
	delay_free(&dq);
	return NULL;
}

int ksc_fleet_open(struct keysteer *ks, const struct ks_etcd_opts *opts)
{
	struct ks_etcd_opts o = *opts;
	char err[KSC_ERR_MAX];
	int64_t rev;
	int ret;

	o.timeout_ms = ks->etcd_timeout_ms;
	ret = ks_etcd_open(&ks->etcd, &o, err, sizeof(err));
	if (ret)
		return ksc_err(ks, ret, "etcd=%s: %s", o.endpoints, err);
	ret = read_all(ks, &rev);
	if (ret)
		return ret;
	/* the client moves to the thread: one client, one thread */
	return ksc_fleet_thread_start(ks, watch_main);
}

int ksc_fleet_thread_start(struct keysteer *ks, void *(*main)(void *))
{
	int ret;

	ks->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ks->stop_fd < 0)
		return ksc_err(ks, -errno, "eventfd: %s", strerror(errno));
	ks->follows = 1;
	ksc_fleet_mark_up(ks, 1, ksc_now_ms());
	ret = pthread_create(&ks->thread, NULL, main, ks);
	if (ret)
		return ksc_err(ks, -ret, "cannot start the view's thread: %s",
			       strerror(ret));
	ks->thread_on = 1;
	return 0;
}

void ksc_fleet_close(struct keysteer *ks)
{
	__u64 one = 1;

	if (ks->thread_on) {
		/* an eventfd write fails only at overflow: never here */
		ssize_t w = write(ks->stop_fd, &one, sizeof(one));

		(void)w;
		pthread_join(ks->thread, NULL);
		ks->thread_on = 0;
	}
	if (ks->stop_fd > 0)
		close(ks->stop_fd);
	ks->stop_fd = -1;
	ks_etcd_close(ks->etcd);
	ks->etcd = NULL;
}
