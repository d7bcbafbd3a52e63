// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The publisher (user/net/etcd_pub.h) against a real etcd: a value the
 * same as the one wanted costs nothing, 200 keys go in a few transactions
 * under the publisher's lease, a lease lost (revoked behind its back) is
 * granted again and every key written again, deletes, and a stop that
 * revokes removes every key at once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "net/etcd.h"
#include "net/etcd_pub.h"
#include "ktest.h"
#include "pub_test.h"

#define NKEYS 200

static long long ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Keys under prefix now, and how many of them are under lease (0: any). */
static size_t count(struct ks_etcd *c, const char *prefix, int64_t lease,
		    size_t *leased)
{
	struct ks_etcd_range r;
	size_t i, n = 0;

	*leased = 0;
	if (ks_etcd_range(c, prefix, strlen(prefix), KS_ETCD_PREFIX, &r))
		return (size_t)-1;
	n = r.n;
	for (i = 0; i < r.n; i++)
		*leased += !lease || r.kvs[i].lease == lease;
	ks_etcd_range_free(&r);
	return n;
}

/* Waits up to limit ms for count == want (all leased); the ms it took or
 * -1. */
static long long wait_count(struct ks_etcd *c, const char *prefix,
			    int64_t lease, size_t want, long long limit)
{
	long long t0 = ms();
	size_t n, leased;

	do {
		n = count(c, prefix, lease, &leased);
		if (n == want && leased == want)
			return ms() - t0;
		usleep(20000);
	} while (ms() - t0 < limit);
	return -1;
}

static void set_all(struct ks_etcd_pub *p, const char *val, int *changes)
{
	char key[32];
	int i;

	*changes = 0;
	for (i = 0; i < NKEYS; i++) {
		snprintf(key, sizeof(key), "pub/k%03d", i);
		*changes += ks_etcd_pub_set(p, key, val, strlen(val)) == 1;
	}
}

void t_pub(const char *plain)
{
	struct ks_etcd_opts o = { .endpoints = plain, .timeout_ms = 2000 };
	struct ks_etcd_pub_stats st, st2;
	struct ks_etcd_pub *p = NULL;
	struct ks_etcd *c = NULL;
	char err[256], key[32];
	int64_t lease1;
	long long t;
	int changes, i;

	kt_begin("etcd_pub_batches_coalesces_republishes");
	if (!plain) {
		kt_skipf("no plain etcd given");
		goto out;
	}
	if (ks_etcd_open(&c, &o, err, sizeof(err)) ||
	    ks_etcd_pub_start(&p, c, 3, 1000, "pub test", err, sizeof(err))) {
		CHECK(0, "start: %s", err);
		goto out;
	}
	ks_etcd_delete(c, "pub/", 4, KS_ETCD_PREFIX, NULL);
	set_all(p, "v1", &changes);
	CHECK_EQ(changes, NKEYS);
	/* 60 s: a guard for a loaded machine, not a bound (the time is
	 * printed); then the publisher's own account of the writes, which
	 * it makes when etcd's answer reaches it, after etcd has them */
	t = wait_count(c, "pub/", 0, NKEYS, 60000);
	for (i = 0; i < 600; i++) {
		ks_etcd_pub_stats(p, &st);
		if (st.puts == NKEYS && !st.pending)
			break;
		usleep(100000);
	}
	CHECK(t >= 0 && st.lease && st.puts == NKEYS && !st.pending,
	      "200 keys: %lld ms, %llu puts, %zu pending", t,
	      (unsigned long long)st.puts, st.pending);
	CHECK(st.txns >= 2 && st.txns <= 20,
	      "%llu transactions for 200 keys (128 at most each)",
	      (unsigned long long)st.txns);
	CHECK(wait_count(c, "pub/", st.lease, NKEYS, 100) >= 0,
	      "not every key under the publisher's lease");
	printf("  200 keys in %lld ms, %llu transactions\n", t,
	       (unsigned long long)st.txns);
	/* the same values again: no change, no write. Then a sentinel key
	 * (outside pub/): once the publisher has accounted for its write,
	 * anything the same values had made it write would be counted too
	 * (a time waited, 300 ms, would pass a late write unseen) */
	set_all(p, "v1", &changes);
	ks_etcd_pub_set(p, "pubs/sentinel", "s", 1);
	for (i = 0; i < 600; i++) {
		ks_etcd_pub_stats(p, &st2);
		if (st2.puts > st.puts && !st2.pending)
			break;
		usleep(100000);
	}
	CHECK(!changes && st2.txns == st.txns + 1 && st2.puts == st.puts + 1,
	      "the same values and a sentinel: %d changes, txns %llu -> %llu, puts %llu -> %llu (want +1 each, the sentinel's)",
	      changes, (unsigned long long)st.txns,
	      (unsigned long long)st2.txns, (unsigned long long)st.puts,
	      (unsigned long long)st2.puts);
	/* the lease revoked behind its back: a new one, every key again */
	lease1 = st.lease;
	CHECK(!ks_etcd_lease_revoke(c, lease1), "revoke: %s",
	      ks_etcd_errmsg(c));
	t = -1;
	for (i = 0; i < 100 && t < 0; i++) {
		ks_etcd_pub_stats(p, &st);
		if (st.lease && st.lease != lease1)
			t = wait_count(c, "pub/", st.lease, NKEYS, 3000);
		else
			usleep(50000);
	}
	ks_etcd_pub_stats(p, &st);
	CHECK(t >= 0 && st.grants == 2,
	      "after the lease was lost: %lld ms, %llu grants, lease %llx", t,
	      (unsigned long long)st.grants, (unsigned long long)st.lease);
	/* deletes */
	for (i = 0; i < NKEYS / 2; i++) {
		snprintf(key, sizeof(key), "pub/k%03d", i);
		ks_etcd_pub_delete(p, key);
	}
	CHECK(wait_count(c, "pub/", st.lease, NKEYS / 2, 60000) >= 0,
	      "half deleted: not 100 keys left");
	/* a stop that revokes: every key gone at once */
	ks_etcd_pub_stop(p, 1);
	p = NULL;
	CHECK(wait_count(c, "pub/", 0, 0, 100) >= 0,
	      "keys left after the stop");
out:
	ks_etcd_pub_stop(p, 1);
	ks_etcd_close(c);
	kt_end();
}

/* A write that takes longer than the lease's TTL (the writer stalled, as
 * behind an overloaded etcd) does not lose the lease: the keeper renews
 * it meanwhile. With the keepalives on the writer's thread, the lease
 * would expire during the stall and the write be refused (grants 2). */
void t_pub_keeper(const char *plain)
{
	struct ks_etcd_opts o = { .endpoints = plain, .timeout_ms = 2000 };
	struct ks_etcd_pub_stats st0, st;
	struct ks_etcd_pub *p = NULL;
	struct ks_etcd *c = NULL;
	char err[256];
	long long t;

	kt_begin("etcd_pub_lease_outlives_a_stalled_write");
	if (!plain) {
		kt_skipf("no plain etcd given");
		goto out;
	}
	if (ks_etcd_open(&c, &o, err, sizeof(err)) ||
	    ks_etcd_pub_start(&p, c, 3, 1000, "keeper test", err,
			      sizeof(err))) {
		CHECK(0, "start: %s", err);
		goto out;
	}
	ks_etcd_delete(c, "pubk/", 5, KS_ETCD_PREFIX, NULL);
	ks_etcd_pub_set(p, "pubk/a", "1", 1);
	CHECK(wait_count(c, "pubk/", 0, 1, 60000) >= 0,
	      "first key not written");
	ks_etcd_pub_stats(p, &st0);
	/* 4.5 s: half again the lease's 3 s TTL */
	ks_etcd_pub_test_stall(p, 4500);
	ks_etcd_pub_set(p, "pubk/b", "2", 1);
	t = wait_count(c, "pubk/", st0.lease, 2, 60000); /* a guard */
	ks_etcd_pub_stats(p, &st);
	/* the lease kept (one grant, the same lease) is the property; one
	 * renewal at least shows the keeper did it (a keeper starved at load
	 * renews less often than its 1 s, so no more is asked) */
	CHECK(t >= 4000 && st.grants == 1 && st.lease == st0.lease &&
		      st.keepalives >= st0.keepalives + 1,
	      "a write stalled 4.5 s: written after %lld ms, %llu grants, lease %llx -> %llx, %llu -> %llu keepalives",
	      t, (unsigned long long)st.grants, (unsigned long long)st0.lease,
	      (unsigned long long)st.lease, (unsigned long long)st0.keepalives,
	      (unsigned long long)st.keepalives);
	printf("  a write stalled 4.5 s landed after %lld ms under the same lease, %llu keepalives meanwhile\n",
	       t, (unsigned long long)(st.keepalives - st0.keepalives));
	ks_etcd_pub_test_stall(p, 0);
out:
	ks_etcd_pub_stop(p, 1);
	ks_etcd_close(c);
	kt_end();
}

/* The version etcd counts for key (modifications since it was created),
 * and its value into val; -1 when absent or unreadable. */
static int64_t key_version(struct ks_etcd *c, const char *key, char *val,
			   size_t vlen)
{
	struct ks_etcd_range r;
	int64_t v = -1;

	if (ks_etcd_range(c, key, strlen(key), 0, &r))
		return -1;
	if (r.n == 1) {
		v = r.kvs[0].version;
		snprintf(val, vlen, "%.*s", (int)r.kvs[0].value_len,
			 r.kvs[0].value);
	}
	ks_etcd_range_free(&r);
	return v;
}

/* Sets "dirty" then, at once, "armed" before the writer gets to either
 * (held: ks_etcd_pub_hold); how many versions etcd stored and the last
 * value. ordered: the first with ks_etcd_pub_set_ordered. What decides
 * is whether "dirty" is still unwritten when "armed" comes (etcd_pub.c
 * want()), which the hold makes so. The writer was once kept busy
 * instead (stalled 300 ms in a write of another key set 50 ms before),
 * which held only while this thread set "armed" before the writer took
 * "dirty": held between the two calls (a loaded machine; 400 ms planted
 * there), the writer wrote "dirty" alone and the plain control stored 2
 * versions with the publisher right. Each wait 60 s by the clock, a
 * guard (it was 100 polls, 2 s, for an etcd at load). */
static int64_t two_states(struct ks_etcd_pub *p, struct ks_etcd *c,
			  const char *key, int ordered, char *val, size_t vlen)
{
	int64_t v0, v1 = -1;
	long long t0 = ms();

	ks_etcd_pub_set(p, key, "counting", 8);
	while (key_version(c, key, val, vlen) < 0 && ms() - t0 < 60000)
		usleep(20000);
	v0 = key_version(c, key, val, vlen);
	ks_etcd_pub_hold(p);
	if (ordered)
		ks_etcd_pub_set_ordered(p, key, "dirty", 5);
	else
		ks_etcd_pub_set(p, key, "dirty", 5);
	ks_etcd_pub_set(p, key, "armed", 5);
	ks_etcd_pub_release(p);
	for (t0 = ms(); ms() - t0 < 60000;) {
		v1 = key_version(c, key, val, vlen);
		if (!strcmp(val, "armed"))
			break;
		usleep(20000);
	}
	return v0 > 0 && v1 > 0 ? v1 - v0 : -1;
}

/* A state set with ks_etcd_pub_set_ordered reaches etcd even when the
 * next one follows before the writer got to it; a plain set is replaced
 * (the control: it must show the state lost). */
void t_pub_ordered(const char *plain)
{
	struct ks_etcd_opts o = { .endpoints = plain, .timeout_ms = 2000 };
	struct ks_etcd_pub *p = NULL;
	struct ks_etcd *c = NULL;
	char err[256], val[32];
	int64_t n;

	kt_begin("etcd_pub_ordered_state_not_coalesced");
	if (!plain) {
		kt_skipf("no plain etcd given");
		goto out;
	}
	if (ks_etcd_open(&c, &o, err, sizeof(err)) ||
	    ks_etcd_pub_start(&p, c, 3, 1000, "ordered test", err,
			      sizeof(err))) {
		CHECK(0, "start: %s", err);
		goto out;
	}
	ks_etcd_delete(c, "pubo/", 5, KS_ETCD_PREFIX, NULL);
	n = two_states(p, c, "pubo/ordered", 1, val, sizeof(val));
	CHECK(n == 2 && !strcmp(val, "armed"),
	      "ordered: %lld versions after counting (want 2: dirty, armed), now '%s'",
	      (long long)n, val);
	printf("  ordered: dirty and armed both stored (%lld versions)\n",
	       (long long)n);
	n = two_states(p, c, "pubo/plain", 0, val, sizeof(val));
	CHECK(n == 1 && !strcmp(val, "armed"),
	      "control, plain sets: %lld versions (want 1: dirty replaced), now '%s'",
	      (long long)n, val);
	printf("  control: plain sets coalesced dirty away (%lld version)\n",
	       (long long)n);
out:
	ks_etcd_pub_stop(p, 1);
	ks_etcd_close(c);
	kt_end();
}
