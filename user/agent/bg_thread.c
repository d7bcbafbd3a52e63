// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bg_thread.c - a pass function on a thread of its own, by period and on
 * request, with a stop that never waits long (see bg_thread.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "agent/bg_thread.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/thread.h"

struct ks_bg {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC: passes, requests, stop */
	ks_bg_fn fn;
	void *ud;
	__u64 period_ns;
	int efd;
	/* under mu */
	__u64 req, tried, done, next_ns;
	struct ks_bg_stats st;
	int stop, exited, abandoned;
	char name[16];
};

static void bg_free(struct ks_bg *b)
{
	if (b->efd >= 0)
		close(b->efd);
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	free(b);
}

static void deadline_ts(__u64 ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / 1000000000ULL);
	ts->tv_nsec = (long)(ns % 1000000000ULL);
}

static void *bg_main(void *arg)
{
	struct ks_bg *b = arg;
	__u64 one = 1, v, t0, dt;
	struct timespec ts;
	int abandoned, err;

	pthread_mutex_lock(&b->mu);
	while (!b->stop) {
		__u64 now = ks_mono_ns();

		if (b->req <= b->tried && (!b->period_ns || now < b->next_ns)) {
			if (b->period_ns) {
				deadline_ts(b->next_ns, &ts);
				pthread_cond_timedwait(&b->cv, &b->mu, &ts);
			} else {
				pthread_cond_wait(&b->cv, &b->mu);
			}
			continue;
		}
		v = b->req;
		t0 = now;
		b->st.busy_since_ns = t0;
		pthread_mutex_unlock(&b->mu);
		err = b->fn(b->ud, v);
		pthread_mutex_lock(&b->mu);
		dt = ks_mono_ns() - t0;
		b->st.busy_since_ns = 0;
		b->st.passes++;
		if (dt > b->st.pass_max_ns)
			b->st.pass_max_ns = dt;
		b->tried = v;
		if (!err && v > b->done)
			b->done = v;
		/* the period counts from the pass's end: a slow pass is
		 * not followed by a burst of catching up */
		b->next_ns = ks_mono_ns() + b->period_ns;
		if (write(b->efd, &one, sizeof(one)) < 0) {
			/* EAGAIN: the counter is full, so already readable */
		}
		pthread_cond_broadcast(&b->cv);
	}
	b->exited = 1;
	abandoned = b->abandoned;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	if (abandoned)
		bg_free(b);
	return NULL;
}

int ks_bg_start(struct ks_bg **out, const char *name, ks_bg_fn fn, void *ud,
		__u64 period_ns, unsigned long long keep_caps)
{
	struct ks_bg *b = calloc(1, sizeof(*b));
	struct ks_thread_opts to = { .name = name, .keep = keep_caps };
	pthread_condattr_t ca;
	int err;

	*out = NULL;
	if (!b)
		return -ENOMEM;
	b->fn = fn;
	b->ud = ud;
	b->period_ns = period_ns;
	b->next_ns = ks_mono_ns(); /* a periodic thread's first pass */
	snprintf(b->name, sizeof(b->name), "%s", name);
	b->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (b->efd < 0) {
		err = -errno;
		free(b);
		return err;
	}
	pthread_mutex_init(&b->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cv, &ca);
	pthread_condattr_destroy(&ca);
	/* signals stay with the main thread, whose poll they must end */
	err = ks_thread_start(&b->th, &to, bg_main, b);
	if (err) {
		bg_free(b);
		return err;
	}
	*out = b;
	return 0;
}

void ks_bg_request(struct ks_bg *b, __u64 v)
{
	if (!b)
		return;
	pthread_mutex_lock(&b->mu);
	if (v > b->req) {
		b->req = v;
		pthread_cond_broadcast(&b->cv);
	}
	pthread_mutex_unlock(&b->mu);
}

__u64 ks_bg_done(struct ks_bg *b)
{
	__u64 v;

	if (!b)
		return 0;
	pthread_mutex_lock(&b->mu);
	v = b->done;
	pthread_mutex_unlock(&b->mu);
	return v;
}

int ks_bg_fd(const struct ks_bg *b)
{
	return b ? b->efd : -1;
}

void ks_bg_ack(struct ks_bg *b)
{
	__u64 v;

	if (b && read(b->efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing signalled since the last ack */
	}
}

void ks_bg_stats(struct ks_bg *b, struct ks_bg_stats *st)
{
	if (!b) {
		memset(st, 0, sizeof(*st));
		return;
	}
	pthread_mutex_lock(&b->mu);
	*st = b->st;
	pthread_mutex_unlock(&b->mu);
}

int ks_bg_stop(struct ks_bg *b, __u64 wait_ns)
{
	__u64 until = ks_mono_ns() + wait_ns;
	struct timespec ts;

	if (!b)
		return 0;
	pthread_mutex_lock(&b->mu);
	b->stop = 1;
	pthread_cond_broadcast(&b->cv);
	deadline_ts(until, &ts);
	while (!b->exited && ks_mono_ns() < until)
		pthread_cond_timedwait(&b->cv, &b->mu, &ts);
	if (!b->exited) {
		/* inside a call that does not return (the rtnl lock held
		 * elsewhere): not waited for; it frees itself if it ever
		 * comes back before the process ends */
		b->abandoned = 1;
		pthread_mutex_unlock(&b->mu);
		pthread_detach(b->th);
		return -ETIMEDOUT;
	}
	pthread_mutex_unlock(&b->mu);
	pthread_join(b->th, NULL);
	bg_free(b);
	return 0;
}
