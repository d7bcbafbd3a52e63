/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * libkeysteer.h - keysteer's client library (docs/client.md): a memcached
 * client for TCP that follows a keysteer fleet's ring and hot-key table,
 * reads armed hot keys from their copies on L1 replicas, and invalidates
 * the copies on every write it makes, so that no read through the library
 * returns a value older than a write through the library acknowledged
 * before the read began.
 *
 *   struct keysteer *ks;
 *   if (keysteer_open(&ks, "etcd=http://10.0.0.9:2379 cluster=web") < 0)
 *           errx(1, "%s", keysteer_errmsg(ks)); (ks is NULL-safe here)
 *   keysteer_set(ks, "k", 1, "v1", 2, 0, 0);
 *   keysteer_get(ks, "k", 1, &val, &len, &flags);    1: found, 0: miss
 *   keysteer_free(val);
 *   keysteer_close(ks);
 *
 * Every call returns 0 (or 1 for a hit) or a negative errno, and then
 * keysteer_errmsg(ks) says in one line what went wrong. A handle is used by
 * one thread at a time (its connections and counters are not locked); the
 * view of the fleet it follows is updated by a thread that every handle of
 * the process following the same fleet shares (one etcd watch per process,
 * docs/client.md "One view per process"). Give each thread of an
 * application a handle of its own.
 *
 * The API and struct keysteer_stats only grow: fields are added at the
 * end, and keysteer_stats() takes the size the caller knows.
 */
#ifndef LIBKEYSTEER_H
#define LIBKEYSTEER_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KEYSTEER_VERSION "0.1.0"

struct keysteer;

/*
 * Opens a handle. spec is a list of NAME=VALUE words, separated by spaces:
 *
 *   etcd=URL[,URL...]   the fleet's etcd (v3 JSON gateway), as the agents'
 *                       --etcd; the ring, hosts/ and hot/ under
 *                       /keysteer/CLUSTER/ are read, then watched
 *   cluster=NAME        the fleet's --cluster (default "default")
 *   view_file=PATH      the view from the host follower's file ('agent
 *                       follow') instead of etcd (etcd= not needed);
 *                       without it, etcd= takes /run/keysteer/CLUSTER.view
 *                       while a follower keeps it fresh; none: never
 *   view_file_lag_ms=N  the follower's heartbeat older: the view is down
 *                       (default 2000; owners only stale_view_ms after)
 *   etcd_user=NAME      etcd auth, with etcd_password_file=PATH: the
 *                       password on its first line, read at open (never a
 *                       spec word: etcd_password= is refused)
 *   etcd_ca=F etcd_cert=F etcd_key=F  TLS with https:// endpoints, as the
 *                       agents' --etcd-ca/--etcd-cert/--etcd-key
 *   servers=H:P[,H:P...] a static ring (tests, no fleet): these shards in
 *                       index order, distribution=ketama|twemproxy|...
 *                       (default ketama), no hot keys
 *   replicas=H:P[,...]  with servers=: every shard's L1 replicas (what a
 *                       write invalidates)
 *   timeout_ms=N        per memcached call, connect included (default 500)
 *   etcd_timeout_ms=N   per etcd call (default 2000)
 *   stale_view_ms=N     etcd unreachable for longer than this: reads go to
 *                       the owners only (default 10000)
 *   inval_ttl_s=N       seconds the stale mark or tombstone of an
 *                       invalidation lives (default 10)
 *   routing=URL[,URL...] with servers=: the hot keys from every agent's
 *                       routing document (http://H:P/routing.json, the
 *                       agents' --listen) instead of etcd, polled every
 *   routing_poll_ms=N   (default 500); each poll bounded by
 *                       etcd_timeout_ms; down stale_view_ms: owners only
 *   l1_keys=N           an in-process L1 of up to N armed hot keys (off by
 *                       default; etcd= only). A write through another
 *                       handle or client reaches it only as the etcd
 *                       event of the key turning dirty: until then (a few
 *                       ms, docs/client.md) it may serve the old value
 *   l1_ttl_ms=N         the L1's TTL cap (default 1000)
 *   l1_bytes=N          the L1's bound in bytes (default 16 MiB)
 *   ring_grace_ms=N     after the ring changes, how long a read of a key
 *                       that moved tries its old owner first (and adds
 *                       what it finds to the new one); writes delete it at
 *                       the old owner for twice as long (default 3 x
 *                       (stale_view_ms + 1000))
 *   limit_share=N       the fleet's limit rules split over N client
 *                       processes: this process's buckets take rate / N
 *                       (default: N counted, the views registered in
 *                       etcd for the key, docs/limits.md, "How the limit
 *                       is shared"; 1: each process the rule's rate)
 *   view=shared|own     with etcd=: share the process's follower of the
 *                       same fleet (default), or follow etcd with a
 *                       connection, watch and thread of the handle's own
 *
 * The words fold=, batch_invalidate=, batch_limit=, l1_drop=, invalidate=,
 * ring_union=, view_delay_ms=, view_skip= and stale_read= exist
 * only so a test's control run can break a guarantee (a write's
 * invalidations, the L1's drops on etcd's events, a fold's counts): a
 * spec naming one is refused unless the environment has
 * KEYSTEER_TEST_SWITCHES=1, and then the open warns on stderr
 * (docs/operations.md, "Test-only switches").
 *
 * The first read of the fleet happens before this returns (bounded by the
 * etcd timeout): a fleet that cannot be read is an error. On
 * error *ks holds a handle that only keysteer_errmsg() and keysteer_close()
 * accept (NULL when out of memory).
 */
int keysteer_open(struct keysteer **ks, const char *spec);
void keysteer_close(struct keysteer *ks); /* NULL is fine */

/* The last error's one line ("" after a success; never NULL). */
const char *keysteer_errmsg(const struct keysteer *ks);

/*
 * A call of a key the fleet's pins document limits (`limit KEY RATE/s`,
 * `limit PREFIX* RATE/s`, docs/limits.md) over its token bucket returns
 * -KEYSTEER_ELIMIT and sends nothing: keysteer_get, keysteer_set,
 * keysteer_delete, keysteer_delete_stale, keysteer_incr/decr (a split
 * counter's delta takes its key's token, whichever sub-key it lands on),
 * keysteer_counter_get, keysteer_counter_fold and keysteer_fetch, one
 * token a call; keysteer_set_many one token an item, refusing only the
 * items over their keys' limits (below). The bucket is
 * the process's: every handle sharing a view (docs/client.md, "One view per process") takes
 * from one bucket per key, at rate / N, N the views that call the key
 * (each registers in etcd under its lease; limit_share=N sets N), so a
 * process never calls a limited key more than that per second plus a
 * burst of a tenth of it, and the fleet the rule's rate plus N bursts
 * (docs/limits.md). EDQUOT, an errno no memcached call returns.
 */
#define KEYSTEER_ELIMIT EDQUOT

/* A call's result as one line: the library's own codes (-KEYSTEER_ELIMIT:
 * "over the key's rate limit") and strerror's text for other errnos. */
const char *keysteer_strerror(int err);

/*
 * Reads key (1..250 bytes, no spaces or control bytes). 1 and *value (a
 * malloc'd copy, NUL-terminated, free it with keysteer_free), *len and
 * *flags (may be NULL) when found; 0 when not (value NULL). An armed hot
 * key is read from one of its copies, the next in its schedule; a copy
 * that is stale, a tombstone, missing or unreachable is read from the
 * owner instead.
 */
int keysteer_get(struct keysteer *ks, const void *key, size_t klen,
		 void **value, size_t *len, uint32_t *flags);

/*
 * Writes key on its owner (flags: memcached's client flags; exptime 0:
 * never, else seconds up to 30 days), then invalidates the key on every
 * L1 replica that may hold a copy, before returning. 0, or -EIO when the
 * owner took the write but a replica could not be invalidated (the
 * message names it: until its copy expires, readers that reach it may read
 * the old value), or another error from the owner.
 */
int keysteer_set(struct keysteer *ks, const void *key, size_t klen,
		 const void *value, size_t len, uint32_t flags,
		 uint32_t exptime);
/* Deletes key on its owner (absent is success too), then invalidates as
 * keysteer_set does. */
int keysteer_delete(struct keysteer *ks, const void *key, size_t klen);
/*
 * Stale-while-revalidate (docs/client.md): for a write to the database
 * behind the cache, instead of keysteer_delete. The owner's item is marked
 * stale rather than removed, for at most max_stale_s seconds (1..30 days;
 * never past the item's own expiry; an item already stale keeps its first
 * mark's end), and the replicas are invalidated as keysteer_delete does.
 * Until one keysteer_fetch caller's fill replaces it, keysteer_fetch
 * callers that set allow_stale get the old value at once as
 * KEYSTEER_STALE; no read through the library returns it as fresh
 * (keysteer_get takes it as a miss). Plain memcached clients' text gets
 * still read the old value until then: memcached's stale mark is a meta
 * notion. 0, or as keysteer_delete.
 */
int keysteer_delete_stale(struct keysteer *ks, const void *key, size_t klen,
			  uint32_t max_stale_s);

void keysteer_free(void *value);

struct keysteer_stats {
	uint64_t gets;          /* keysteer_get calls */
	uint64_t hits;          /* ... that found the key */
	uint64_t copy_reads;    /* answered from a copy on a replica */
	uint64_t owner_reads;   /* answered by the owner */
	uint64_t fallbacks;     /* a copy tried, then the owner */
	uint64_t sets, deletes; /* writes acknowledged by the owner */
	uint64_t invalidations; /* replicas invalidated by writes */
	uint64_t inval_errors;  /* replicas a write could not invalidate */
	uint64_t errors;        /* calls that returned an error */
	int64_t view_revision;  /* etcd revision of the view (0: none) */
	int64_t ring_revision;  /* the ring's mod_revision (0: none) */
	uint64_t hot_keys;      /* hot/ entries in the view */
	uint64_t armed_keys;    /* ... armed */
	uint64_t view_updates;  /* documents applied */
	uint64_t view_refused;  /* documents refused */
	int32_t view_up;        /* 1: the view follows the fleet now */
	int32_t owners_only;    /* 1: the view is too old, reads go to owners */
	uint64_t view_age_ms;   /* since the view last followed the fleet */
	/* batches */
	uint64_t batches;    /* keysteer_set_many calls that wrote */
	uint64_t batch_keys; /* ... their items (each also in sets) */
	/* L1 */
	uint64_t l1_hits;        /* gets answered from the in-process L1 */
	uint64_t l1_misses;      /* gets of armed keys it did not answer */
	uint64_t l1_drops;       /* entries whose hot/ entry changed */
	uint64_t l1_write_drops; /* entries dropped by this handle's writes */
	uint64_t l1_flushes;     /* whole flushes: the watch dropped */
	uint64_t l1_evictions;   /* entries pushed out by l1_keys/l1_bytes */
	uint64_t l1_expired;     /* entries past their TTL */
	uint64_t l1_keys;        /* entries now */
	uint64_t l1_bytes;       /* their keys' and values' bytes now */
	/* split counters */
	uint64_t incrs, decrs;    /* keysteer_incr/decr acknowledged */
	uint64_t subkey_writes;   /* ... that went to a sub-key */
	uint64_t counter_reads;   /* keysteer_counter_get calls answered */
	uint64_t counter_retries; /* sums read again: a fold moved counts */
	uint64_t folds;           /* folds this handle made */
	uint64_t folded;          /* sub-keys they moved into a base */
	uint64_t split_refused;   /* keysteer_set of a split counter */
	/* ring changes (docs/client.md, "Ring changes") */
	uint64_t ring_changes;      /* rings the view replaced */
	uint64_t ring_old_reads;    /* gets answered by a key's old owner */
	uint64_t ring_warmups;      /* ... whose value was added to the new */
	uint64_t ring_warm_undone;  /* ... and deleted again (a write raced) */
	uint64_t ring_invals;       /* writes that deleted at the old owner */
	uint64_t ring_inval_errors; /* ... that could not */
	uint64_t ring_grace_ms;     /* left of the read grace now (0: none) */
	uint64_t ring_catchups;     /* keys this handle wrote on the old ring
				     * deleted at their new owners after */
	uint64_t ring_catchup_missed; /* ... that could not be, or a log that
				       * no longer had them all */
	/* read-through (keysteer_fetch) */
	uint64_t fetches;        /* keysteer_fetch calls */
	uint64_t fills;          /* fill callbacks this handle ran */
	uint64_t fill_errors;    /* ... that returned an error */
	uint64_t lease_wins;     /* leases won at the owner (meta W) */
	uint64_t lease_waits;    /* calls that waited for another's fill */
	uint64_t shared_fills;   /* ... answered by a fill of this process */
	uint64_t stale_serves;   /* stale values served, flagged */
	uint64_t fetch_timeouts; /* calls whose wait bound passed */
	uint64_t refreshes;      /* early refreshes won (meta R) */
	/* stale-while-revalidate (keysteer_delete_stale) */
	uint64_t stale_marks;  /* keysteer_delete_stale calls acknowledged */
	uint64_t stale_misses; /* gets that found the owner's item stale */
	uint64_t hand_backs;   /* refill tokens of stale items handed back */
	/* one view per process (docs/client.md, "One view per process") */
	uint64_t view_handles; /* handles sharing this one's view, itself in */
	uint64_t view_skipped; /* events its follower dropped (a test's) */
	/* rate limits (docs/limits.md, "TCP through libkeysteer") */
	uint64_t limit_allowed; /* calls of limited keys let through */
	uint64_t limit_refused; /* ... refused with -KEYSTEER_ELIMIT */
	uint64_t limit_rules;   /* limit rules in the view now */
	uint64_t limit_keys;    /* keys with a bucket in the view's table */
	uint64_t limit_no_room; /* calls of limited keys let through with no
				 * bucket free (the view's, all handles) */
	/* the view's registrations for the limited keys it calls
	 * (limit_clients/, docs/limits.md "How the limit is shared"): puts,
	 * deletes, and etcd's refusals (a user without write on
	 * limit_clients/: the others do not count this view) */
	uint64_t limit_reg_puts, limit_reg_dels, limit_reg_errors;
};

/*
 * One limited key's bucket in the handle's view (shared by the process's
 * handles on it, so the counts are theirs together): keysteer_limit_stat
 * fills st for key and returns 1, or 0 when no bucket holds the key (no
 * rule names it, or it was never called), or -EINVAL.
 */
struct keysteer_limit_stat {
	uint32_t rate;    /* the rule's, calls/s */
	uint32_t burst;   /* calls the bucket holds */
	uint64_t allowed; /* calls let through since the bucket was made */
	uint64_t refused; /* ... refused */
	int prefix_rule;  /* 1: a prefix rule made it */
	uint32_t share;   /* the views the rate is split over (limit_share=N,
			   * else those registered for the key, this one
			   * counted): this view takes rate / share */
};
int keysteer_limit_stat(struct keysteer *ks, const void *key, size_t klen,
			struct keysteer_limit_stat *st, size_t size);

/* Copies min(size, sizeof(struct keysteer_stats)) bytes of the handle's
 * counters into st. 0, or -EINVAL. */
int keysteer_stats(struct keysteer *ks, struct keysteer_stats *st, size_t size);

/* ---- batches (docs/client.md, "Batches") ---- */

/*
 * Writes n items (at most KEYSTEER_BATCH_MAX) as keysteer_set writes each,
 * in far fewer round trips: every owner gets its items as one pipeline of
 * meta sets, all owners at once, then every replica that may hold a copy
 * of any of them gets the invalidations of all of them as pipelines, all
 * replicas at once; returns when every invalidation is done. Items with
 * the same key are written in their order. Each item's result: 0, -EIO
 * when the owner took it but a replica could not be invalidated (or the
 * owner's answer does not say whether it took it: memcached names no item
 * in its errors), or the owner's error. Returns 0 when every item
 * succeeded, else the first failure (keysteer_errmsg names the item). A
 * bad item (key, value, exptime as keysteer_set takes them) writes
 * nothing: -EINVAL, that item's result -EINVAL, the others -ECANCELED.
 * Rate limits are decided per item, in item order, one token each: an
 * item of a limited key over its limit is not sent (result
 * -KEYSTEER_ELIMIT) and the others are written; the call then returns
 * -KEYSTEER_ELIMIT if nothing else failed (any other failure is returned
 * first), keysteer_errmsg naming how many and the first.
 */
#define KEYSTEER_BATCH_MAX 1024

struct keysteer_item {
	const void *key;
	size_t klen;
	const void *value;
	size_t len;
	uint32_t flags;
	uint32_t exptime;
	int result; /* out */
};

int keysteer_set_many(struct keysteer *ks, struct keysteer_item *items,
		      size_t n);
/* ---- split counters (docs/client.md, "Split counters") ---- */

/*
 * Adds delta to the counter key (keysteer_decr: subtracts it). A missing
 * counter is created: at delta by keysteer_incr, at 0 by keysteer_decr
 * (memcached clamps a plain counter at zero). For a key the fleet marks
 * write-hot with K sub-keys, the delta goes to one of K parts: the base
 * key or a sub-key KEY~ks<i> on the shard its own name gives.
 *
 * Returns 0 with *value (may be NULL) the counter's new value when the
 * delta landed on the base key of a counter that is not split; 1 when it
 * landed on a part of a split counter (*value is not set: read the total
 * with keysteer_counter_get); or a negative errno: -EDOM when the key
 * holds something that is not a number, -ECONNABORTED when the request
 * went out and no whole reply came back in time (it may or may not have
 * been counted; it is never sent twice).
 */
int keysteer_incr(struct keysteer *ks, const void *key, size_t klen,
		  uint64_t delta, uint64_t *value);
int keysteer_decr(struct keysteer *ks, const void *key, size_t klen,
		  uint64_t delta, uint64_t *value);

/*
 * The counter's value: the base key plus the net of every sub-key any
 * handle may have written, read from the owners (never from copies) and
 * checked against the counter's fold sequence, so a fold moving counts
 * meanwhile is never seen twice or not at all. 1 and *value when any part
 * exists, 0 (and *value 0) when none does, or a negative errno (-EBUSY: a
 * fold held the counter for longer than the call's time). A split
 * counter's sum may be below zero (decrements are not clamped).
 *
 * A counter whose sub-keys are no longer used (K fell, or the key cooled
 * down) is folded by the reads that find them: their counts moved into
 * the base, the width lowered once the change is older than the grace.
 */
int keysteer_counter_get(struct keysteer *ks, const void *key, size_t klen,
			 int64_t *value);

/*
 * Folds the counter's unused sub-keys into its base now (flags 0), or
 * with KEYSTEER_FOLD_ALL every sub-key, also those in use (each move is
 * an atomic decrement of the sub-key and increment of the base under the
 * fold sequence, so it is safe at any time). 0 (nothing to do counts),
 * -EBUSY when another handle is folding it, or an error.
 */
#define KEYSTEER_FOLD_ALL 1u
int keysteer_counter_fold(struct keysteer *ks, const void *key, size_t klen,
			  unsigned flags);

/* ---- read-through (docs/client.md, "Read-through") ---- */

/*
 * The value of key, read through from the caller's database on a miss, so
 * that one miss costs the database one read however many callers miss at
 * once. A hit is keysteer_get's (copies and L1 included). On a miss at
 * the key's owner, callers take memcached's lease (meta get with N): the
 * one that wins calls fill, stores its value (only if no write through
 * the library came meanwhile: the placeholder's CAS), and returns it; the
 * others re-read the owner with short pauses until the value is there,
 * the lease is theirs (the winner failed, or died and its lease lapsed
 * after lease_s), or their own wait_ms has passed (-ETIMEDOUT; no call
 * waits longer). Callers of one key in one process share one flight,
 * whatever handle they use: one of them reads the owner, the rest wait
 * for its answer.
 *
 * fill(arg, key, klen, &value, &len): 0 with *value a malloc'd buffer of
 * len bytes (the library frees it), or a negative errno, which the call
 * that ran it returns (the message says fill failed); its lease is then
 * released at once, and the next caller fills. A fill that hangs holds
 * its own caller only; others fill after lease_s.
 *
 * With o->refresh_s, a key read all the time never expires: one caller
 * refreshes it (fill, then store) while the others keep its value.
 *
 * Returns 1 with *value (keysteer_free it), *len and *flags (may be NULL)
 * as keysteer_get; KEYSTEER_STALE (2) when o->allow_stale and the owner's
 * item is marked stale while another caller refreshes it (served at once,
 * never as fresh); or a negative errno.
 */
struct keysteer_fetch_opts {
	uint32_t exptime; /* the filled value's TTL in s (0: never) */
	uint32_t flags;   /* its client flags */
	uint32_t lease_s; /* the lease's life, s: a hung or dead filler's
			    * lease lapses after it (0: 3; 1..3600) */
	uint32_t wait_ms; /* the most this call waits for another's fill
			    * (0: lease_s * 1000 + 1000) */
	int allow_stale;  /* 1: a stale value may be served, flagged */
	/* early refresh (0: off): reads go to the owner (never to copies
	 * or the L1), and the first reader of a value with less than
	 * refresh_s left refills it before it expires (meta R), while the
	 * rest keep reading the value */
	uint32_t refresh_s;
};

#define KEYSTEER_STALE 2

typedef int (*keysteer_fill_fn)(void *arg, const void *key, size_t klen,
				void **value, size_t *len);

int keysteer_fetch(struct keysteer *ks, const void *key, size_t klen,
		   keysteer_fill_fn fill, void *arg,
		   const struct keysteer_fetch_opts *o, void **value,
		   size_t *len, uint32_t *flags);

/*
 * The etcd revision the handle's view has applied (0: none, or no etcd=):
 * every event up to it is in the view. Cheap (one lock, no scan): for a
 * caller that wrote to the fleet's prefix and waits until a handle sees
 * it, comparing with the revision etcd gave the write.
 */
int64_t keysteer_view_revision(struct keysteer *ks);

#ifdef __cplusplus
}
#endif

#endif
