// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fleet.c - a follower's view follows /keysteer/CLUSTER/ (docs/client.md,
 * "The view" and "One view per process"): one range read of the prefix
 * before the first handle's keysteer_open returns, then the follower's
 * thread watches the prefix from the read's revision + 1 (net/etcd.h: it
 * reconnects by itself, from the revision after the last event, so
 * nothing is missed) and applies every event to the view under the
 * view's write lock. A compacted start revision reads the prefix again;
 * so does every later open of a handle on the same follower (the thread
 * reads for it, so one etcd client serves all). While the watch is not
 * established the view stays as it was; once that has lasted
 * stale_view_ms, reads go to the owners only (ksc_fleet_owners_only),
 * until the watch is back.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "client/client.h"
#include "net/etcd.h"

#define LOAD(p)     __atomic_load_n(&(p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELEASE)

void ksc_fleet_mark_up(struct ksc_follower *f, int up, __u64 now)
{
	/* events may be missed until the watch is back: every handle's L1
	 * is flushed at its next look */
	if (!up && LOAD(f->view_up))
		__atomic_add_fetch(&f->l1_epoch, 1, __ATOMIC_ACQ_REL);
	if (up)
		STORE(f->last_up_ms, now);
	STORE(f->view_up, up);
}

int ksc_fleet_owners_only(struct keysteer *ks, __u64 now_ms)
{
	if (!ks->follows || LOAD(ks->fo->view_up))
		return 0;
	return now_ms - LOAD(ks->fo->last_up_ms) > ks->stale_view_ms;
}

/*
 * The whole prefix, into the view; its revision into *rev, the failure's
 * line into why. A read older than what the watch has applied already
 * changes nothing (the view is newer); else the view is the read's, and
 * the watch's events up to its revision, which the read holds, are
 * passed over when they come (load_rev).
 */
static int read_all(struct ksc_follower *f, int64_t *rev, char *why)
{
	struct ks_etcd_range r;
	int err = 0;

	err = ks_etcd_range(f->etcd, f->view.prefix, f->view.plen,
			    KS_ETCD_PREFIX, &r);
	if (err) {
		snprintf(why, KSC_ERR_MAX, "etcd: reading %s: %s",
			 f->view.prefix, ks_etcd_errmsg(f->etcd));
		return err;
	}
	pthread_rwlock_wrlock(&f->lock);
	if (r.revision > f->view.revision) {
		err = ksc_view_load(&f->view, r.kvs, r.n, r.revision,
				    ksc_now_ms());
		if (!err)
			f->load_rev = r.revision;
	}
	pthread_rwlock_unlock(&f->lock);
	*rev = r.revision;
	ks_etcd_range_free(&r);
	if (err)
		snprintf(why, KSC_ERR_MAX, "etcd: %s: %s", f->view.prefix,
			 f->view.why);
	return err;
}

int ksc_fleet_stopping(struct ksc_follower *f, int wait_ms)
{
	struct pollfd p = { .fd = f->stop_fd, .events = POLLIN };

	return poll(&p, 1, wait_ms) > 0;
}

/* An event the view takes: not one the last whole read holds already,
 * nor, in a test's control (view_skip=hot), a hot/ entry's. */
static int event_wanted(struct ksc_follower *f, const struct ks_etcd_event *ev)
{
	static const char hot[] = "hot/";

	if (ev->kv.mod_revision <= f->load_rev)
		return 0;
	if (f->skip_hot && ev->kv.key_len > f->view.plen + 4 &&
	    !memcmp(ev->kv.key + f->view.plen, hot, 4)) {
		__atomic_add_fetch(&f->skipped, 1, __ATOMIC_RELAXED);
		return 0;
	}
	return 1;
}

static void apply(struct ksc_follower *f, struct ks_etcd_event *ev, __u64 now)
{
	if (event_wanted(f, ev))
		ksc_view_event(&f->view, ev, now);
	ks_etcd_event_free(ev);
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
static void delay_apply(struct ksc_follower *f, struct delayq *d, __u64 now)
{
	while (d->n && d->q[d->head].at_ms + f->view_delay_ms <= now) {
		apply(f, &d->q[d->head].ev, now);
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
		pthread_rwlock_rdlock(&ks->fo->lock);
		pthread_mutex_lock(&ks->wlog_lock);
		/* the writes of one grace before: a lag longer is not covered
		 * by the grace either (docs/client.md) */
		n = ksc_wlog_catchup(&ks->wlog, &ks->fo->view, grace, cu,
				     KSC_WLOG_KEYS, &lost);
		pthread_mutex_unlock(&ks->wlog_lock);
		pthread_rwlock_unlock(&ks->fo->lock);
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

/* A handle's own writes under the old ring, after a new one (its
 * ring_union= says whether). */
static void catchup_one(struct keysteer *ks)
{
	if (ks->ring_union == KSC_UNION_ON)
		ksc_ring_catchup(ks);
}

void ksc_fleet_catchup_all(struct ksc_follower *f)
{
	ksc_share_each(f, catchup_one);
}

__u64 ksc_fleet_read_wanted(struct ksc_follower *f)
{
	__u64 ticket, drain;
	ssize_t r = read(f->wake_fd, &drain, sizeof(drain));

	(void)r; /* nonblocking: empty when a read served it already */
	pthread_mutex_lock(&f->olock);
	ticket = f->read_want;
	pthread_mutex_unlock(&f->olock);
	return ticket;
}

void ksc_fleet_read_answer(struct ksc_follower *f, __u64 ticket, int err,
			   const char *why)
{
	pthread_mutex_lock(&f->olock);
	f->read_done = ticket;
	f->read_err = err;
	snprintf(f->read_why, sizeof(f->read_why), "%s", why);
	pthread_cond_broadcast(&f->ocond);
	pthread_mutex_unlock(&f->olock);
}

/* The opens waiting for a read: one read for all that asked before it. */
static void serve_reads(struct ksc_follower *f, int64_t *next, int watching)
{
	char why[KSC_ERR_MAX] = "";
	__u64 ticket = ksc_fleet_read_wanted(f);
	int64_t rev;
	int err;

	if (ticket == f->read_done)
		return;
	err = read_all(f, &rev, why);
	/* without a watch, the next starts after the read */
	if (!err && !watching)
		*next = rev + 1;
	ksc_fleet_read_answer(f, ticket, err, why);
}

static void *watch_main(void *arg)
{
	struct delayq dq = { 0 };
	struct ksc_follower *f = arg;
	struct ks_etcd_watch *w = NULL;
	int64_t next = f->view.revision + 1, rev;
	__u64 now, purged = 0, regs = 0, changes = f->view.ring_changes;
	struct ks_etcd_event ev;
	struct pollfd p[3];
	char why[KSC_ERR_MAX];
	int rc, t;

	for (;;) {
		serve_reads(f, &next, w != NULL);
		if (!w &&
		    ks_etcd_watch_start(f->etcd, f->view.prefix, f->view.plen,
					KS_ETCD_PREFIX, next, &w)) {
			w = NULL;
			if (ksc_fleet_stopping(f, 500))
				break;
			continue;
		}
		p[0] = (struct pollfd){ .fd = ks_etcd_watch_fd(w),
					.events = POLLIN };
		p[1] = (struct pollfd){ .fd = f->stop_fd, .events = POLLIN };
		p[2] = (struct pollfd){ .fd = f->wake_fd, .events = POLLIN };
		t = ks_etcd_watch_timeout_ms(w);
		if (t < 0 || t > 250)
			t = 250;
		if (poll(p, 3, t) > 0 && p[1].revents)
			break;
		rc = ks_etcd_watch_run(w);
		now = ksc_now_ms();
		if (rc > 0 || dq.n) {
			pthread_rwlock_wrlock(&f->lock);
			while (rc > 0 && ks_etcd_watch_next(w, &ev) == 1) {
				if (f->view_delay_ms) {
					delay_push(&dq, &ev, now);
					continue;
				}
				apply(f, &ev, now);
			}
			delay_apply(f, &dq, now);
			pthread_rwlock_unlock(&f->lock);
		}
		if (p[2].revents)
			serve_reads(f, &next, 1);
		if (__atomic_load_n(&f->view.ring_changes, __ATOMIC_RELAXED) !=
		    changes) {
			changes = f->view.ring_changes;
			ksc_fleet_catchup_all(f);
		}
		ksc_fleet_mark_up(f, ks_etcd_watch_created(w), now);
		if (rc == -ERANGE || rc == -EACCES || rc == -EPERM) {
			/* the watch ended: read everything again */
			ks_etcd_watch_stop(w);
			w = NULL;
			ksc_fleet_mark_up(f, 0, now);
			if (rc != -ERANGE && ksc_fleet_stopping(f, 1000))
				break;
			if (!read_all(f, &rev, why))
				next = rev + 1;
			else if (ksc_fleet_stopping(f, 500))
				break;
		} else {
			next = ks_etcd_watch_next_revision(w);
		}
		if (now - purged > 1000) {
			pthread_rwlock_wrlock(&f->lock);
			ksc_view_purge(&f->view, now, KSC_GONE_KEEP_MS);
			pthread_rwlock_unlock(&f->lock);
			purged = now;
		}
		/* a few times a second, not once per event; at once when a
		 * handle made a bucket (it woke the thread) */
		if (now - regs >= 200 || p[2].revents) {
			ksc_limit_reg_tick(f);
			regs = now;
		}
	}
	ks_etcd_watch_stop(w);
	delay_free(&dq);
	/* an open still waiting gets its answer: the follower is going */
	ksc_fleet_read_answer(f, ksc_fleet_read_wanted(f), -ESHUTDOWN,
			      "the view's follower stopped");
	return NULL;
}

int ksc_fleet_join(struct keysteer *ks)
{
	struct ksc_follower *f = ks->fo;
	/* the thread's read is bounded by its client's timeout per
	 * endpoint and a poll turn of 250 ms; this by a few of those */
	int wait_ms = 4 * ks->etcd_timeout_ms + 1000;
	struct timespec dl;
	__u64 ticket, one = 1;
	int ret = 0;
	ssize_t wr;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += wait_ms / 1000;
	dl.tv_nsec += (long)(wait_ms % 1000) * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&f->olock);
	ticket = ++f->read_want;
	wr = write(f->wake_fd, &one, sizeof(one));
	(void)wr; /* fails only at overflow: a wake is pending then */
	while (f->read_done < ticket && !ret)
		ret = pthread_cond_clockwait(&f->ocond, &f->olock,
					     CLOCK_MONOTONIC, &dl);
	if (f->read_done >= ticket)
		ret = f->read_err ? ksc_err(ks, f->read_err, "%s", f->read_why)
				  : 0;
	else
		ret = ksc_err(ks, -ETIMEDOUT,
			      "the view's follower did not read %s "
			      "within %d ms",
			      f->view.prefix, wait_ms);
	pthread_mutex_unlock(&f->olock);
	return ret;
}

int ksc_fleet_open(struct keysteer *ks, const struct ks_etcd_opts *opts,
		   int fresh)
{
	struct ksc_follower *f = ks->fo;
	struct ks_etcd_opts o = *opts;
	char err[KSC_ERR_MAX];
	int64_t rev;
	int ret;

	ks->follows = 1;
	if (!fresh)
		return ksc_fleet_join(ks);
	o.timeout_ms = ks->etcd_timeout_ms;
	ret = ks_etcd_open(&f->etcd, &o, err, sizeof(err));
	if (ret)
		return ksc_err(ks, ret, "etcd=%s: %s", o.endpoints, err);
	ret = read_all(f, &rev, err);
	if (ret)
		return ksc_err(ks, ret, "%s", err);
	/* the client moves to the thread: one client, one thread */
	return ksc_fleet_thread_start(ks, watch_main, f);
}

int ksc_fleet_thread_start(struct keysteer *ks, void *(*main)(void *),
			   void *arg)
{
	struct ksc_follower *f = ks->fo;
	int ret;

	f->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	f->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (f->stop_fd < 0 || f->wake_fd < 0)
		return ksc_err(ks, -errno, "eventfd: %s", strerror(errno));
	ks->follows = f->follows = 1;
	ksc_fleet_mark_up(f, 1, ksc_now_ms());
	ret = pthread_create(&f->thread, NULL, main, arg);
	if (ret)
		return ksc_err(ks, -ret, "cannot start the view's thread: %s",
			       strerror(ret));
	f->thread_on = 1;
	return 0;
}

void ksc_follower_stop(struct ksc_follower *f)
{
	__u64 one = 1;

	if (f->thread_on) {
		/* an eventfd write fails only at overflow: never here */
		ssize_t w = write(f->stop_fd, &one, sizeof(one));

		(void)w;
		pthread_join(f->thread, NULL);
		f->thread_on = 0;
	}
	ksc_limit_reg_end(f); /* the thread's etcd client is ours now */
	if (f->stop_fd >= 0)
		close(f->stop_fd);
	if (f->wake_fd >= 0)
		close(f->wake_fd);
	f->stop_fd = f->wake_fd = -1;
	ks_etcd_close(f->etcd);
	f->etcd = NULL;
	ksc_vfile_close(f->vfile);
	f->vfile = NULL;
}
