/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * etcd_pub.h - a set of keys kept in etcd under one lease of their own,
 * written by a thread of its own (issue 12, docs/fleet.md: hosts/<self>
 * and hot/<hash>).
 *
 * The caller says what each key should hold (set, delete) and never
 * waits: etcd being slow, blackholed or gone costs the agent's interval
 * loop nothing, and a hot key's dirty event reaches etcd at once rather
 * than at the next interval. The thread keeps the lease alive, grants a
 * new one when it is lost (etcd away longer than its TTL) and then puts
 * every key again, and writes what changed in one transaction per wake-up
 * (up to KS_ETCD_TXN_MAX keys): at steady state one keepalive per
 * interval, under churn one request per change burst, not one per key.
 * A value the same as the one already wanted is no change and costs
 * nothing.
 *
 * Two threads, each with a client of its own (ks_etcd_clone: a client
 * belongs to one thread): the writer grants the lease and writes; the
 * keeper only keeps the lease alive, so a write waiting on an overloaded
 * etcd for up to the client's timeout cannot let the lease expire under
 * it. Failures are logged once per outage, counted, and retried after
 * KS_ETCD_PUB_RETRY_NS give or take half; after a lost lease the puts of
 * every key again start up to KS_ETCD_PUB_REPUT_SPREAD_NS late, at random, so
 * that a fleet coming back from an outage together does not write all
 * at once. Nothing here ever stops the agent.
 */
#ifndef KS_ETCD_PUB_H
#define KS_ETCD_PUB_H

#include <stddef.h>
#include <stdint.h>

struct ks_etcd;
struct ks_etcd_pub;

#define KS_ETCD_PUB_RETRY_NS 250000000ULL /* after a failed call */
/* the puts after a lost lease start this late at most, at random */
#define KS_ETCD_PUB_REPUT_SPREAD_NS 500000000ULL

struct ks_etcd_pub_stats {
	uint64_t txns;       /* write transactions that went through */
	uint64_t puts;       /* keys written by them */
	uint64_t deletes;    /* keys deleted by them */
	uint64_t keepalives; /* lease renewals */
	uint64_t grants;     /* leases granted: the first, then after a loss */
	uint64_t errors;     /* calls that failed */
	int64_t lease;     /* the lease now; 0: none (not granted yet, lost) */
	int64_t lease_ttl; /* seconds, as etcd granted */
	int up;            /* the last call went through */
	size_t keys;       /* keys wanted in etcd */
	size_t pending;    /* of them, not yet as wanted */
	uint64_t max_wait_ns; /* the longest a change waited to be written */
	/* The longest from the send of one renewal (a grant, a keepalive)
	 * to the answer of the next that went through: etcd never went
	 * longer between two renewals, so the lease holds while this stays
	 * under its TTL. The margin a loaded machine leaves. */
	uint64_t max_renew_gap_ns;
	char err[256]; /* the last failure; "" when none */
};

/*
 * Starts the thread with a clone of c's endpoints and credentials: a lease
 * of ttl_s seconds, kept alive every keepalive_ms (at most a third of the
 * TTL); name (e.g. the hosts/ key) is only for log lines. 0, or a negative
 * errno with err.
 */
int ks_etcd_pub_start(struct ks_etcd_pub **p, const struct ks_etcd *c,
		      int64_t ttl_s, unsigned keepalive_ms, const char *name,
		      char *err, size_t errlen);

/* key (a C string) should hold val; 1 when that is a change (the thread
 * wakes to write it), 0 when it is what was wanted already, -ENOMEM. */
int ks_etcd_pub_set(struct ks_etcd_pub *p, const char *key, const void *val,
		    size_t vlen);
/* The same, but this value reaches etcd before any later set or delete
 * of key replaces it (a later one waits behind it): a state every watcher
 * must see, such as a hot key turning dirty, even when the next state
 * follows within a millisecond and the thread was busy meanwhile. */
int ks_etcd_pub_set_ordered(struct ks_etcd_pub *p, const char *key,
			    const void *val, size_t vlen);
/* key should be gone: 1 when that is a change, 0 when it was not wanted. */
int ks_etcd_pub_delete(struct ks_etcd_pub *p, const char *key);

/* Between hold and release the thread writes nothing (it still keeps the
 * lease alive): an interval's changes go out as one transaction, not as
 * the first change and then the rest. A change made outside a hold (a
 * dirty event) is written at once. */
void ks_etcd_pub_hold(struct ks_etcd_pub *p);
void ks_etcd_pub_release(struct ks_etcd_pub *p);

void ks_etcd_pub_stats(struct ks_etcd_pub *p, struct ks_etcd_pub_stats *out);

/* Test hook: the writer sleeps ms before each write (a slow etcd for the
 * writes only); 0 turns it off. */
void ks_etcd_pub_test_stall(struct ks_etcd_pub *p, unsigned ms);

/* Test control (the agent's --etcd-keepalive loop): the keeper renews
 * the lease at most once per ks_etcd_pub_tick, as a keeper on the
 * caller's interval loop would, so work that holds the loop up holds the
 * keepalives up too. Off by default: the keeper runs on its own timer. */
void ks_etcd_pub_test_keepalive_on_tick(struct ks_etcd_pub *p, int on);
/* The caller's interval went by (only the test control above reads it). */
void ks_etcd_pub_tick(struct ks_etcd_pub *p);

/* Stops the threads; revoke: then ends the lease, so every key goes at
 * once (one call, bounded by the client's timeout). NULL is fine. */
void ks_etcd_pub_stop(struct ks_etcd_pub *p, int revoke);

#endif
