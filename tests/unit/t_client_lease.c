// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_client_lease.c - keysteer_fetch's pure parts (user/client/lease.c):
 * what each lease reply of memcached's meta get means (only W fills, a
 * placeholder is never a value, a stale value only where the caller
 * allows it), the pauses between re-reads (growing, capped, never past
 * the caller's bound), and the single-flight table (one leader per key
 * however many threads join at once, followers get its answer, a wait is
 * bounded, a hung flight is not joined).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include "client/lease.h"
#include "net/mc_client.h"
#include "ktest.h"
#include "unit.h"
#include "util/clock.h"

static enum ksc_lease_act decide(int found, size_t len, int w, int z, int x,
				 int allow)
{
	struct ksc_lease_reply r = { found, len, w, z, x };

	return ksc_lease_decide(&r, allow);
}

static void test_decide(void)
{
	kt_begin("client_lease_decide_replies");
	/* VA 0 W: the placeholder this caller created */
	CHECK(decide(1, 0, 1, 0, 0, 0) == KSC_LEASE_FILL, "W not a fill");
	/* VA 0 Z: another's placeholder, never a value */
	CHECK(decide(1, 0, 0, 1, 0, 0) == KSC_LEASE_WAIT, "Z placeholder");
	CHECK(decide(1, 0, 0, 1, 0, 1) == KSC_LEASE_WAIT,
	      "Z placeholder served as stale");
	/* a value, with or without another's early-refresh win */
	CHECK(decide(1, 5, 0, 0, 0, 0) == KSC_LEASE_HIT, "a value");
	CHECK(decide(1, 5, 0, 1, 0, 0) == KSC_LEASE_HIT, "a value with Z");
	CHECK(decide(1, 0, 0, 0, 0, 0) == KSC_LEASE_HIT, "an empty value");
	/* X W: stale, its refresh falls to this caller */
	CHECK(decide(1, 5, 1, 0, 1, 1) == KSC_LEASE_FILL, "X W not a fill");
	/* X Z: stale, another refreshes */
	CHECK(decide(1, 5, 0, 1, 1, 1) == KSC_LEASE_STALE,
	      "X Z with stale allowed");
	CHECK(decide(1, 5, 0, 1, 1, 0) == KSC_LEASE_WAIT,
	      "X Z served while the caller wants fresh");
	/* EN: no placeholder (memcached out of memory): no lease to wait
	 * for */
	CHECK(decide(0, 0, 0, 0, 0, 0) == KSC_LEASE_FILL, "EN");
	kt_end();
}

static enum ks_mc_mark plan(int found, size_t len, int w, int z, int x,
			    long ttl, long max, long *out)
{
	struct ks_mc_item it = { .found = found,
				 .len = len,
				 .win = w,
				 .taken = z,
				 .stale = x,
				 .ttl = ttl };

	*out = 0;
	return ks_mc_mark_plan(&it, max, out);
}

/* What a write's stale mark does with what the owner holds, and which
 * owner items a reader may take as fresh (net/mc_client.h). */
static void test_swr_decide(void)
{
	struct ks_mc_item fresh = { .found = 1, .len = 3 },
			  stale = { .found = 1, .len = 3, .stale = 1 },
			  none = { 0 };
	long t;

	kt_begin("client_swr_decisions");
	CHECK(ks_mc_owner_value(&fresh), "a fresh owner item refused");
	CHECK(!ks_mc_owner_value(&stale), "a stale owner item taken as fresh");
	CHECK(!ks_mc_owner_value(&none), "no item taken");
	CHECK(plan(0, 0, 0, 0, 0, 0, 5, &t) == KS_MC_MARK_NONE, "no item");
	CHECK(plan(1, 3, 0, 0, 0, 100, 5, &t) == KS_MC_MARK_FIRST && t == 5,
	      "fresh, 100 s left: %ld", t);
	CHECK(plan(1, 3, 0, 0, 0, -1, 5, &t) == KS_MC_MARK_FIRST && t == 5,
	      "fresh, never expires: %ld", t);
	CHECK(plan(1, 3, 0, 0, 0, 2, 5, &t) == KS_MC_MARK_FIRST && t == 2,
	      "fresh, 2 s left: the mark outlives the value (%ld)", t);
	CHECK(plan(1, 3, 0, 0, 0, 0, 5, &t) == KS_MC_MARK_DELETE,
	      "fresh, under 1 s left: not deleted");
	CHECK(plan(1, 3, 0, 0, 1, 100, 5, &t) == KS_MC_MARK_RESTALE,
	      "already stale: its first mark's end moved");
	CHECK(plan(1, 3, 1, 0, 1, 100, 5, &t) == KS_MC_MARK_RESTALE,
	      "stale with W: not re-marked");
	CHECK(plan(1, 0, 0, 1, 0, 3, 5, &t) == KS_MC_MARK_DELETE,
	      "a placeholder marked (a 0-byte stale value)");
	CHECK(plan(1, 0, 0, 0, 0, 100, 5, &t) == KS_MC_MARK_FIRST,
	      "a real empty value not marked");
	/* readers after a mark: X without W is never a fresh hit */
	CHECK(decide(1, 3, 0, 1, 1, 0) == KSC_LEASE_WAIT &&
		      decide(1, 3, 0, 1, 1, 1) == KSC_LEASE_STALE &&
		      decide(1, 3, 1, 0, 1, 0) == KSC_LEASE_FILL,
	      "a stale reply's decision");
	kt_end();
}

static void test_pause(void)
{
	unsigned a, p, prev = 0;

	kt_begin("client_lease_pause_bounds");
	for (a = 0; a < 40; a++) {
		p = ksc_lease_pause_ms(a, 1000, 100000);
		CHECK(p >= 2 && p <= 64, "attempt %u: %u ms", a, p);
		CHECK(p >= prev, "attempt %u: %u after %u", a, p, prev);
		prev = p;
	}
	CHECK(ksc_lease_pause_ms(0, 1000, 100000) == 2, "the first pause");
	CHECK(ksc_lease_pause_ms(39, 1000, 100000) == 64, "the cap");
	/* never past the caller's own bound */
	CHECK(ksc_lease_pause_ms(10, 1000, 1005) == 5, "past the deadline");
	CHECK(ksc_lease_pause_ms(0, 1000, 1000) == 0 &&
		      ksc_lease_pause_ms(3, 2000, 1000) == 0,
	      "a pause at or after the deadline");
	kt_end();
}

static void test_flight_basic(void)
{
	struct ksc_flights t = KSC_FLIGHTS_INIT;
	struct ksc_flight *a, *b, *c, *d;

	kt_begin("client_lease_flight_one_leader_followers_answered");
	CHECK(ksc_flight_join(&t, "s\0k1", 4, 100, 3000, &a) == 1, "leader");
	CHECK(ksc_flight_join(&t, "s\0k1", 4, 110, 3000, &b) == 0 && b == a,
	      "a second caller of the key did not follow");
	CHECK(ksc_flight_join(&t, "s\0k2", 4, 110, 3000, &c) == 1 && c != a,
	      "another key followed");
	CHECK(ksc_flight_join(&t, "t\0k1", 4, 110, 3000, &d) == 1 && d != a,
	      "the key on another owner followed");
	CHECK(t.n == 3, "%u flights", t.n);
	ksc_flight_finish(&t, a, 1, "val", 3, 9, NULL);
	CHECK(ksc_flight_wait(&t, b, ks_mono_ns() / 1000000 + 1000) == 0,
	      "a finished flight waited on");
	CHECK(b->ret == 1 && b->len == 3 && !memcmp(b->value, "val", 4) &&
		      b->flags == 9,
	      "the follower's answer: ret %d len %zu", b->ret, b->len);
	/* done: later callers start afresh, the cache has the answer */
	CHECK(ksc_flight_join(&t, "s\0k1", 4, 120, 3000, &a) == 1 && a != b,
	      "a done flight joined");
	ksc_flight_leave(&t, b);
	ksc_flight_leave(&t, b);
	ksc_flight_finish(&t, a, -EIO, NULL, 0, 0, "fill failed");
	CHECK(a->ret == -EIO && !a->value && !strcmp(a->err, "fill failed"),
	      "an error's outcome");
	ksc_flight_leave(&t, a);
	ksc_flight_finish(&t, c, 1, "", 0, 0, NULL);
	CHECK(c->value && c->len == 0, "an empty value lost");
	ksc_flight_leave(&t, c);
	ksc_flight_finish(&t, d, -ETIMEDOUT, NULL, 0, 0, "x");
	ksc_flight_leave(&t, d);
	CHECK(t.n == 0 && !t.head, "%u flights left", t.n);
	kt_end();
}

static void test_flight_bounds(void)
{
	struct ksc_flights t = KSC_FLIGHTS_INIT;
	struct ksc_flight *a, *b, *c;
	__u64 t0;
	int ret;

	kt_begin("client_lease_flight_wait_bounded_hung_not_joined");
	CHECK(ksc_flight_join(&t, "k", 1, 1000, 3000, &a) == 1, "leader");
	CHECK(ksc_flight_join(&t, "k", 1, 2000, 3000, &b) == 0, "follower");
	t0 = ks_mono_ns() / 1000000;
	ret = ksc_flight_wait(&t, b, t0 + 30);
	/* the bound is the property; the floor only: a loaded machine may
	 * wake it late, never early */
	CHECK(ret == -ETIMEDOUT && ks_mono_ns() / 1000000 >= t0 + 30U,
	      "an unfinished flight: %d", ret);
	/* past max_age the leader's fill hangs: a new flight, not joined */
	CHECK(ksc_flight_join(&t, "k", 1, 4001, 3000, &c) == 1 && c != a,
	      "a hung flight joined");
	CHECK(t.n == 1, "%u flights: the hung one stays in the table", t.n);
	ksc_flight_leave(&t, b);
	/* the hung leader comes back: its answer reaches nobody new */
	ksc_flight_finish(&t, a, 1, "old", 3, 0, NULL);
	ksc_flight_leave(&t, a);
	CHECK(t.n == 1 && t.head == c, "the new flight lost");
	ksc_flight_finish(&t, c, 1, "new", 3, 0, NULL);
	ksc_flight_leave(&t, c);
	CHECK(t.n == 0, "%u flights left", t.n);
	kt_end();
}

struct racer {
	struct ksc_flights *t;
	pthread_barrier_t *go;
	pthread_barrier_t *joined;
	int led;
	int ret;
	char got[8];
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct ksc_flight *f;

	pthread_barrier_wait(r->go);
	r->led = ksc_flight_join(r->t, "hot", 3, 5, 60000, &f);
	pthread_barrier_wait(r->joined);
	if (r->led == 1) {
		ksc_flight_finish(r->t, f, 1, "db", 2, 0, NULL);
		r->ret = 0;
	} else {
		r->ret = ksc_flight_wait(r->t, f,
					 ks_mono_ns() / 1000000 + 60000);
		if (!r->ret && f->value)
			memcpy(r->got, f->value, 3);
	}
	ksc_flight_leave(r->t, f);
	return NULL;
}

static void test_flight_threads(void)
{
	enum {
		N = 16
	};
	struct ksc_flights t = KSC_FLIGHTS_INIT;
	pthread_barrier_t go, joined;
	struct racer r[N];
	pthread_t th[N];
	int i, leaders = 0, answered = 0;

	kt_begin("client_lease_flight_threads_share_one_leader");
	pthread_barrier_init(&go, NULL, N);
	pthread_barrier_init(&joined, NULL, N);
	for (i = 0; i < N; i++) {
		r[i] = (struct racer){ .t = &t, .go = &go, .joined = &joined };
		pthread_create(&th[i], NULL, race, &r[i]);
	}
	for (i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		leaders += r[i].led == 1;
		answered += r[i].led == 0 && !r[i].ret &&
			    !strcmp(r[i].got, "db");
	}
	CHECK(leaders == 1, "%d leaders of one key", leaders);
	CHECK(answered == N - 1, "%d of %d followers got the answer", answered,
	      N - 1);
	CHECK(t.n == 0 && !t.head, "%u flights left", t.n);
	pthread_barrier_destroy(&go);
	pthread_barrier_destroy(&joined);
	kt_end();
}

void test_client_lease(void)
{
	test_decide();
	test_swr_decide();
	test_pause();
	test_flight_basic();
	test_flight_bounds();
	test_flight_threads();
}
