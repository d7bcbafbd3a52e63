// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_bg_thread.c - the agent's background thread (user/agent/bg_thread.c):
 * a request is done only by a pass that started after it, a failed pass
 * leaves it not done, passes come by period, and the stop never waits for
 * a pass stuck in a call (the housekeeping's rtnl wait) beyond its bound.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ktest.h"
#include "agent/bg_thread.h"
#include "util/clock.h"
#include "unit.h"

#define MS 1000000ULL

struct probe {
	pthread_mutex_t mu;
	int fail;       /* the next passes return -EIO */
	__u64 hold_ms;  /* each pass sleeps this long, no signal ends it */
	__u64 last_req; /* what the last pass was given */
	unsigned passes;
};

static int pass(void *ud, __u64 req)
{
	struct probe *p = ud;
	struct timespec ts;
	int fail;
	__u64 hold;

	pthread_mutex_lock(&p->mu);
	p->last_req = req;
	p->passes++;
	fail = p->fail;
	hold = p->hold_ms;
	pthread_mutex_unlock(&p->mu);
	if (hold) {
		ts.tv_sec = (time_t)(hold / 1000);
		ts.tv_nsec = (long)(hold % 1000 * MS);
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	return fail ? -EIO : 0;
}

/* Waits (bounded) until done reaches want; 1 if it did. */
static int wait_done(struct ks_bg *b, __u64 want, __u64 ms)
{
	__u64 until = ks_mono_ns() + ms * MS;
	struct pollfd pfd = { .fd = ks_bg_fd(b), .events = POLLIN };

	while (ks_bg_done(b) < want && ks_mono_ns() < until) {
		poll(&pfd, 1, 50);
		ks_bg_ack(b);
	}
	return ks_bg_done(b) >= want;
}

static unsigned passes(struct probe *p)
{
	unsigned n;

	pthread_mutex_lock(&p->mu);
	n = p->passes;
	pthread_mutex_unlock(&p->mu);
	return n;
}

static void t_requests(void)
{
	struct probe *p = calloc(1, sizeof(*p));
	struct ks_bg *b = NULL;

	kt_begin("bg_thread_requests");
	pthread_mutex_init(&p->mu, NULL);
	CHECK_EQ(ks_bg_start(&b, "t-bg", pass, p, 0, 0), 0);
	CHECK_EQ(ks_bg_done(b), 0);
	ks_bg_request(b, 3);
	CHECK(wait_done(b, 3, 10000), "request 3 not done: %llu",
	      (unsigned long long)ks_bg_done(b));
	/* a smaller value asks for nothing */
	ks_bg_request(b, 2);
	CHECK_EQ(ks_bg_done(b), 3);
	/* a failed pass leaves it undone, and is not retried in a loop */
	pthread_mutex_lock(&p->mu);
	p->fail = 1;
	pthread_mutex_unlock(&p->mu);
	ks_bg_request(b, 5);
	{
		__u64 until = ks_mono_ns() + 10000 * MS;

		while (p->last_req != 5 && ks_mono_ns() < until)
			wait_done(b, 5, 50);
	}
	CHECK_EQ(ks_bg_done(b), 3);
	{
		unsigned n = passes(p);

		wait_done(b, 5, 200);
		CHECK_EQ(passes(p), n);
	}
	/* a new request tries again */
	pthread_mutex_lock(&p->mu);
	p->fail = 0;
	pthread_mutex_unlock(&p->mu);
	ks_bg_request(b, 6);
	CHECK(wait_done(b, 6, 10000), "request 6 not done after a failure");
	CHECK_EQ(ks_bg_stop(b, 1000 * MS), 0);
	free(p);
	kt_end();
}

static void t_period(void)
{
	struct probe *p = calloc(1, sizeof(*p));
	struct ks_bg_stats st;
	struct ks_bg *b = NULL;
	__u64 until;

	kt_begin("bg_thread_period");
	pthread_mutex_init(&p->mu, NULL);
	CHECK_EQ(ks_bg_start(&b, "t-bg", pass, p, 20 * MS, 0), 0);
	until = ks_mono_ns() + 10000 * MS;
	while (passes(p) < 3 && ks_mono_ns() < until)
		wait_done(b, 1, 50);
	CHECK(passes(p) >= 3, "%u passes by period", passes(p));
	ks_bg_stats(b, &st);
	CHECK(st.passes >= 3 - 1, "stats say %llu passes",
	      (unsigned long long)st.passes);
	CHECK_EQ(ks_bg_stop(b, 1000 * MS), 0);
	free(p);
	kt_end();
}

/* The stop's bound holds while a pass is stuck: it returns after about
 * its wait, not after the pass; the thread is left to end on its own. */
static void t_stop_abandons(void)
{
	struct probe *p = calloc(1, sizeof(*p));
	struct ks_bg *b = NULL;
	__u64 t0, took;

	kt_begin("bg_thread_stop_abandons_a_stuck_pass");
	pthread_mutex_init(&p->mu, NULL);
	p->hold_ms = 3000;
	CHECK_EQ(ks_bg_start(&b, "t-bg", pass, p, 0, 0), 0);
	ks_bg_request(b, 1);
	t0 = ks_mono_ns();
	while (!passes(p) && ks_mono_ns() - t0 < 10000 * MS)
		wait_done(b, 1, 10);
	CHECK(passes(p) == 1, "the pass did not start");
	t0 = ks_mono_ns();
	CHECK_EQ(ks_bg_stop(b, 100 * MS), -ETIMEDOUT);
	took = ks_mono_ns() - t0;
	/* 100 ms asked; the pass holds 3 s: anything near 3 s waited */
	CHECK(took < 2000 * MS, "the stop waited %llu ms for a stuck pass",
	      (unsigned long long)(took / MS));
	/* p is the abandoned thread's until its pass returns: leaked */
	kt_end();
}

/* A stop with nothing running ends the thread at once. */
static void t_stop_idle(void)
{
	struct probe *p = calloc(1, sizeof(*p));
	struct ks_bg *b = NULL;

	kt_begin("bg_thread_stop_idle");
	pthread_mutex_init(&p->mu, NULL);
	CHECK_EQ(ks_bg_start(&b, "t-bg", pass, p, 3600000 * MS, 0), 0);
	CHECK_EQ(ks_bg_stop(b, 5000 * MS), 0);
	CHECK_EQ(ks_bg_stop(NULL, 0), 0);
	free(p);
	kt_end();
}

void test_bg_thread(void)
{
	t_requests();
	t_period();
	t_stop_idle();
	t_stop_abandons();
}
