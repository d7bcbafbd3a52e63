/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * lease.h - the pure parts of keysteer_fetch (fetch.c, docs/client.md
 * "Read-through"): what a lease reply from the owner means, how long a
 * caller sleeps between re-reads, and the process-wide table that makes
 * the callers of one key in one process share one fill (single-flight).
 * No I/O here, so the unit tier tests it whole (t_client_lease.c).
 */
#ifndef KSC_LEASE_H
#define KSC_LEASE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

/* What memcached's "mg <key> v f t c N<ttl>" said (doc/protocol.txt). */
struct ksc_lease_reply {
	int found;  /* VA: an item, maybe the vivified placeholder */
	size_t len; /* its bytes */
	int win;    /* W: this caller holds the key's lease */
	int taken;  /* Z: another caller holds it */
	int stale;  /* X: marked stale (md I) */
};

enum ksc_lease_act {
	KSC_LEASE_HIT,   /* a fresh value: serve it */
	KSC_LEASE_STALE, /* a stale value another refreshes: serve, flagged */
	KSC_LEASE_FILL,  /* this caller holds the lease: fill, then store */
	KSC_LEASE_WAIT,  /* another fills: re-read after a pause */
};

/*
 * The decision on one reply. A vivified placeholder is 0 bytes with W (to
 * its creator) or Z (to everyone after): never a value. A real value of 0
 * bytes that an R win marked (Z) reads as a placeholder too, so it is
 * filled again once that lease ends: docs/client.md says so.
 */
enum ksc_lease_act ksc_lease_decide(const struct ksc_lease_reply *r,
				    int allow_stale);

/* The pause before re-read number attempt (0...): 2 ms doubling to 64 ms,
 * never past the caller's own remaining time; 0 when none is left. */
unsigned ksc_lease_pause_ms(unsigned attempt, __u64 now_ms, __u64 deadline_ms);

/* ---- single-flight ---- */

/* One in-flight fetch of one key on one owner, shared by its callers. */
struct ksc_flight {
	struct ksc_flight *next;
	char *id; /* owner name, NUL, key */
	size_t idlen;
	__u64 born_ms;
	unsigned refs;
	int done;
	/* the leader's outcome: ret as keysteer_fetch returns it */
	int ret;
	void *value; /* malloc'd, len + 1 bytes */
	size_t len;
	uint32_t flags;
	char err[256];
	int fill_failed; /* the leader's own fill failed: a follower retries */
};

struct ksc_flights {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a flight done */
	struct ksc_flight *head;
	unsigned n; /* flights in the table (for tests) */
};

#define KSC_FLIGHTS_INIT                                                       \
	{                                                                      \
		PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0   \
	}

/*
 * Joins the flight of id, or starts one: 1 and *f when the caller leads
 * (it fetches, then ksc_flight_finish), 0 and *f when it follows (it
 * ksc_flight_waits), -ENOMEM. A flight older than max_age_ms (its leader's
 * fill hangs past the lease) is not joined: it leaves the table and a new
 * one starts, so a hung fill holds no caller past the lease.
 */
int ksc_flight_join(struct ksc_flights *t, const char *id, size_t idlen,
		    __u64 now_ms, unsigned max_age_ms, struct ksc_flight **f);
/* The leader's outcome, handed to every follower (value copied; NULL is
 * fine with len 0 when ret has none). */
void ksc_flight_finish(struct ksc_flights *t, struct ksc_flight *f, int ret,
		       const void *value, size_t len, uint32_t flags,
		       const char *err);
/* A follower waits until the flight is done or deadline (CLOCK_MONOTONIC
 * ms): 0 when done (read f's outcome, then leave), -ETIMEDOUT. */
int ksc_flight_wait(struct ksc_flights *t, struct ksc_flight *f,
		    __u64 deadline_ms);
/* Every caller, leader or follower, leaves once: the last frees it. */
void ksc_flight_leave(struct ksc_flights *t, struct ksc_flight *f);

#endif
