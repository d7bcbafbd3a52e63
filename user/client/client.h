/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * client.h - the inside of a libkeysteer handle, shared by its modules:
 * api.c (the public calls), fleet.c (the thread that follows etcd) and
 * servers.c (one memcached connection per server). Not installed.
 */
#ifndef KSC_CLIENT_H
#define KSC_CLIENT_H

#include <pthread.h>
#include "client/libkeysteer.h"
#include "client/l1.h"
#include "client/limit.h"
#include "client/route.h"
#include "client/view.h"
#include "net/mc_client.h"

#define KSC_ERR_MAX            512
#define KSC_TIMEOUT_MS         500
#define KSC_STALE_VIEW_MS      10000
#define KSC_INVAL_TTL_S        10
#define KSC_GONE_KEEP_MS       60000     /* a deleted hot/ entry's replicas */
#define KSC_REPLICA_BACKOFF_MS 1000      /* a copy that failed: not tried */
#define KSC_L1_TTL_MS          1000      /* l1_ttl_ms= by default */
#define KSC_ROUTING_POLL_MS    500       /* routing_poll_ms= by default */
#define KSC_ROUTING_DOC_MAX    (4 << 20) /* bytes of one document */

struct ks_etcd;

/* One server's connection, indexed by its view server id. */
struct ksc_conn {
	int resolved; /* 1: mc holds its address; -1: it does not resolve */
	struct ks_mc_conn mc;
	__u64 skip_until_ms; /* a replica that failed: reads skip it */
};

/*
 * The view and what follows the fleet for it (docs/client.md, "One view
 * per process"): shared by every handle of the process whose spec reads
 * the same fleet the same way (ksc_share_key), refcounted, the first open
 * reads and starts it, the last close stops it. A servers= or routing=
 * handle, or one with view=own, has one of its own that no other joins.
 */
struct ksc_follower {
	/* the view: written by the follower's thread (or an opener's read)
	 * under the write lock, read by every handle under the read lock,
	 * so a reader never sees half an event applied */
	pthread_rwlock_t lock;
	struct ksc_view view;
	/* the thread that follows (etcd's watch, or a routing poll) */
	int follows; /* 1: etcd mode */
	struct ks_etcd *etcd;
	pthread_t thread;
	int thread_on;
	int stop_fd;       /* eventfd: the thread's stop */
	int view_up;       /* atomics: the watch is established */
	__u64 last_up_ms;  /* ... last seen so */
	unsigned l1_epoch; /* atomic: raised each time the watch drops */
	/* an open while the thread runs: a read of the prefix done by the
	 * thread for it, so the opener's view is no older than etcd at its
	 * open (olock guards the rest of this block) */
	pthread_mutex_t olock;
	pthread_cond_t ocond;
	int wake_fd;                /* eventfd: a read is wanted */
	__u64 read_want, read_done; /* tickets */
	int read_err;
	char read_why[KSC_ERR_MAX];
	__s64 load_rev; /* events at or below it are in the view already */
	/* test-only: events held back (view_delay_ms=), hot/ events
	 * dropped (view_skip=hot) */
	unsigned view_delay_ms;
	int skip_hot;
	__u64 skipped; /* atomic */
	/* or the host follower's view file instead of a watch
	 * (fleet_file.c): the snapshot in the view, and its writer */
	struct ksc_vfile *vfile;
	unsigned vfile_lag_ms; /* its heartbeat older: the view is down */
	__s64 vfile_rev;
	__u64 vfile_pid;
	/* rate limits (limit.h): the buckets of the limited keys, shared by
	 * the view's handles under llock (taken inside the view's read lock,
	 * which keeps the rules in place, or alone; never the other way);
	 * lim_version: the view's rules they follow */
	pthread_mutex_t llock;
	struct ksc_limits limits;
	__u64 lim_version;
	/* the view's registrations for the limited keys it calls
	 * (limit_clients/HASH/ID under reg_lease, docs/limits.md "How the
	 * limit is shared"): the thread's alone (fleet.c), but reg_id, set
	 * at start, and reg_off, the test-only limit_clients=off (neither
	 * registered nor counting: each process takes the whole rate) */
	__u64 reg_id;
	int reg_off;
	int64_t reg_lease;
	__u64 reg_kept_ms, reg_tried_ms, reg_retry_ms;
	__u64 *regd; /* the hashes registered now */
	size_t nregd, regd_size;
	__u64 reg_puts, reg_dels, reg_errors; /* atomics: stats read them */
	/* the handles that use it (the catch-up runs for each) */
	pthread_mutex_t hlock;
	struct keysteer **h;
	unsigned nh, hcap;
	/* the process's list (share.c) */
	char *key;    /* NULL: a handle's own */
	int pid;      /* a child after fork() has no thread: never joined */
	int starting; /* listed, its first read under way */
	struct ksc_follower *next;
};

struct keysteer {
	char err[KSC_ERR_MAX];
	int timeout_ms, etcd_timeout_ms, inval_ttl_s, inval_all;
	unsigned stale_view_ms;
	/* the view, perhaps shared with other handles (fo->lock) */
	struct ksc_follower *fo;
	int follows;    /* 1: etcd mode */
	int own_view;   /* view=own: a follower no other handle joins */
	__u64 since_ms; /* when the handle opened */
	/* connections */
	unsigned nconn;
	struct ksc_conn *conn;
	struct keysteer_stats st;
	/* batches */
	int batch_skip_inval; /* batch_invalidate=off: a test control */
	int batch_skip_limit; /* batch_limit=off: a test control (items of
			       * limited keys sent as if no rule named them) */
	/* L1: the caller's thread's alone; fo->l1_epoch is the follower's,
	 * raised each time the watch drops, seen by every handle */
	struct ksc_l1 l1;
	int l1_on, l1_follow; /* l1_follow 0: l1_drop=ttl, the control */
	unsigned l1_seen_epoch;
	/* routing documents (routing=): the poll thread's alone after open
	 * (a routing handle's follower is its own) */
	char **rt_url;
	unsigned rt_n, rt_poll_ms;
	__s64 rt_round;
	void *rt_curl;
	/* split counters (counter_io.c) */
	unsigned split_grace_ms;   /* 0: 3 x stale_view_ms */
	int fold_unsafe;           /* a test control: folds lose counts */
	__u64 split_rng;           /* xorshift state, not 0 */
	__u64 stuck_seq, stuck_ms; /* a fold sequence seen odd, since */
	/* ring changes (docs/client.md "Ring changes") */
	unsigned ring_grace_ms; /* 0: 3 x (stale_view_ms + 1000) */
	int ring_union;         /* KSC_UNION_*: not ON only in a control */
	int stale_as_fresh;     /* stale_read=fresh: the control's readers
				 * take a stale owner item as a hit */
	unsigned view_delay_ms; /* a test's lagging view: events held back */
	int view_skip_hot;      /* a test's follower that drops hot/ events */
	unsigned vfile_lag_ms;  /* view_file_lag_ms= (its follower's key) */
	pthread_mutex_t wlog_lock;
	struct ksc_wlog wlog; /* the keys written (wlog_lock, fo->lock read) */
	__u64 catchups, catchup_missed; /* atomics: both threads count */
	/* rate limits: keysteer_fetch took the key's token already, so the
	 * keysteer_get it makes does not take a second one; limit_share=
	 * (the view's buckets take rate / it; handles with another value do
	 * not share the view) */
	int lim_taken;
	unsigned limit_share;  /* 0: the fleet's count of views */
	int limit_clients_off; /* limit_clients=off: a test control (no
				* registration, each process the whole rate) */
};

enum {
	KSC_UNION_ON,        /* writes delete at the old owner, reads try it */
	KSC_UNION_NOINVAL,   /* control: writes leave the old owner alone */
	KSC_UNION_OFF,       /* control/bench: the previous ring ignored */
	KSC_UNION_NOCATCHUP, /* control: no catch-up after a lagging view */
};

__u64 ksc_now_ms(void);
int ksc_err(struct keysteer *ks, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The view under its lock: read (every lookup) or write (a change). */
/* A reader changes nothing in the view but a hot entry's rr (atomic). */
static inline struct ksc_view *ksc_rdlock(struct keysteer *ks)
{
	pthread_rwlock_rdlock(&ks->fo->lock);
	return &ks->fo->view;
}

static inline struct ksc_view *ksc_wrlock(struct keysteer *ks)
{
	pthread_rwlock_wrlock(&ks->fo->lock);
	return &ks->fo->view;
}

static inline void ksc_unlock(struct keysteer *ks)
{
	pthread_rwlock_unlock(&ks->fo->lock);
}

/* fleet.c: the first read, then the thread that watches; o's endpoints,
 * TLS files and credentials (its timeout is the handle's). With a shared
 * follower already up, a read of its own (by the follower's thread) in
 * the view instead, before this returns. */
struct ks_etcd_opts;
int ksc_fleet_open(struct keysteer *ks, const struct ks_etcd_opts *o,
		   int fresh);
/* fleet.c: the follower's thread stopped and its etcd client closed (the
 * last handle's close). */
void ksc_follower_stop(struct ksc_follower *f);
/* The view follows the fleet now (up), or not: a watch or a poll failed. */
void ksc_fleet_mark_up(struct ksc_follower *f, int up, __u64 now);
/* The follower's thread (main(arg)) started, the view up since its first
 * read. 0, or an error with ks->err. */
int ksc_fleet_thread_start(struct keysteer *ks, void *(*main)(void *),
			   void *arg);
/* Waits up to wait_ms for the follower's stop: 1 when it came. */
int ksc_fleet_stopping(struct ksc_follower *f, int wait_ms);
/* An open on a follower that runs: its thread reads for it (the whole
 * prefix, or the newest view file) before this returns. 0, or an error
 * with ks->err. */
int ksc_fleet_join(struct keysteer *ks);
/* The follower's side of that: the newest open's ticket (the wake
 * drained), and the answer to every open up to a ticket (err 0: the read
 * is in the view; else why). */
__u64 ksc_fleet_read_wanted(struct ksc_follower *f);
void ksc_fleet_read_answer(struct ksc_follower *f, __u64 ticket, int err,
			   const char *why);
/* After a ring change in the view: each handle's own catch-up. */
void ksc_fleet_catchup_all(struct ksc_follower *f);

/* share.c: the handle's follower: an existing one of the same key (the
 * process's list), or a new one with key (NULL: the handle's own, never
 * listed). *fresh 1 when new: the caller reads and starts it. 0, or
 * -ENOMEM / -EINVAL with ks->err. */
int ksc_share_get(struct keysteer *ks, const char *key, const char *cluster,
		  int *fresh);
/* The first open's read and start done (ok) or failed: the handles
 * waiting for it join it, or make another. */
void ksc_share_ready(struct keysteer *ks, int ok);
/* The handle off its follower; the last one out stops and frees it. */
void ksc_share_put(struct keysteer *ks);
/* The follower's handles, for each fn(ks) under its handle lock (a
 * closing handle waits for it). */
void ksc_share_each(struct ksc_follower *f, void (*fn)(struct keysteer *));
/* Handles on f now. */
unsigned ksc_share_handles(struct ksc_follower *f);
/* routing.c: the first poll of every routing document, then the thread
 * that polls them every routing_poll_ms (the handle's close stops it). */
int ksc_routing_open(struct keysteer *ks, const char *urls);
/* After the poll thread stopped: the URLs and the curl handle freed. */
void ksc_routing_close(struct keysteer *ks);
/* fleet_file.c: the follower's view from a host follower's file at path
 * (must: a file the spec named; else the default path, taken only when
 * fresh, -ENOENT or -ESTALE when not), and its thread; fresh as
 * ksc_share_get says (0: the follower runs, a join). */
int ksc_file_open(struct keysteer *ks, const char *path, int must, int fresh);
#define KSC_VFILE_LAG_MS 2000 /* view_file_lag_ms= by default */
/* The source alone (narrow: a process's shared follower can take it):
 * open, the newest snapshot, the poll (1: a new one, 0: none, < 0: the
 * path's new file refused, ksc_vfile_why), and the follower's liveness. */
struct ksc_vfile;
struct ks_view_snap;
int ksc_vfile_open(struct ksc_vfile **f, const char *path, const char *prefix,
		   char *err, size_t errlen);
int ksc_vfile_fd(const struct ksc_vfile *f);
const struct ks_view_snap *ksc_vfile_snap(const struct ksc_vfile *f);
int ksc_vfile_poll(struct ksc_vfile *f);
/* The snapshot read: its array freed and the mapping's pages given back. */
void ksc_vfile_release(struct ksc_vfile *f);
int ksc_vfile_fresh(const struct ksc_vfile *f, __u64 now_ms, unsigned lag_ms,
		    __u64 *at_ms);
const char *ksc_vfile_why(const struct ksc_vfile *f);
void ksc_vfile_close(struct ksc_vfile *f);
/* Whether reads go to owners only: etcd away longer than stale_view_ms. */
int ksc_fleet_owners_only(struct keysteer *ks, __u64 now_ms);

/* servers.c: server id's connection, opened on first use; NULL with
 * ks->err when its name does not resolve. */
struct ksc_conn *ksc_conn_get(struct keysteer *ks, unsigned id);
void ksc_conns_close(struct keysteer *ks);
/* A connection of the view thread's own to server id (not the caller's
 * table): 0 after ks_mc_init, or -EHOSTUNREACH. */
int ksc_conn_init(struct keysteer *ks, unsigned id, struct ks_mc_conn *mc);
/* The server's name (for messages), copied under the lock. */
void ksc_server_name(struct keysteer *ks, unsigned id, char *buf, size_t len);

/* batch.c: the spec word batch_invalidate=on|off. */
int ksc_batch_option(struct keysteer *ks, const char *val);
/* api.c: every replica that may hold a copy of key, invalidated: 0, or
 * -EIO naming the first that could not be. */
int ksc_invalidate(struct keysteer *ks, unsigned owner, const void *key,
		   size_t klen, __u64 hash);
/* A public call's end: a failure counted, a success clears the message. */
/* "md KEY I C<cas>" on the owner after a read got the W of a stale item
 * it does not refill (net/mc_client.h ks_mc_hand_back). */
void ksc_owner_hand_back(struct keysteer *ks, unsigned owner, const void *key,
			 size_t klen, __u64 cas);

static inline int ksc_done(struct keysteer *ks, int ret)
{
	if (ret < 0)
		ks->st.errors++;
	else
		ks->err[0] = '\0';
	return ret;
}

/* api.c: a key's move now (route.h), under the handle's lock and with
 * its options: all KSC_NONE/0 with ring_union=off. */
void ksc_move_now(struct keysteer *ks, const void *key, size_t klen,
		  struct ksc_move *m);
/* api.c: the key deleted at its old owner m->old and old's replicas
 * invalidated, after a write of it to the new owner: 0, or -EIO with
 * the message. */
int ksc_inval_old(struct keysteer *ks, const struct ksc_move *m,
		  const void *key, size_t klen, __u64 hash);
/* api.c: a write of key acknowledged, routed as m said: logged for the
 * catch-up, or caught up at once when the view changed meanwhile. */
void ksc_ring_log(struct keysteer *ks, const void *key, size_t klen,
		  const struct ksc_move *m);
/* fleet.c: after the view applied a new ring, the keys this handle
 * wrote under the old one deleted at their new owners (the view
 * thread's, with connections of its own). */
void ksc_ring_catchup(struct keysteer *ks);
/* api.c: 0, or -EINVAL with the message for a key memcached refuses. */
int ksc_check_key(struct keysteer *ks, const void *key, size_t klen);
/* limit_reg.c: the view's registrations for the limited keys it calls
 * made to match its buckets (the view's thread, a few times a second),
 * and dropped with its lease when the follower stops. */
void ksc_limit_reg_tick(struct ksc_follower *f);
void ksc_limit_reg_end(struct ksc_follower *f);

/* api.c: a call of key through its rate limit (limit.h): 0 (no rule, or
 * under it), or -KEYSTEER_ELIMIT with the message (counted). */
int ksc_limit_check(struct keysteer *ks, const void *key, size_t klen);
/* counter_io.c: a spec word of its own (1: not one; else 0 or -EINVAL),
 * and whether a plain set of key must be refused (a split counter: -EBUSY
 * with the message). */
int ksc_counter_option(struct keysteer *ks, const char *name, const char *val);
int ksc_counter_refuse_set(struct keysteer *ks, const void *key, size_t klen,
			   __u64 hash);

#endif
