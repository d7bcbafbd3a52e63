/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * steer_fill.h - the fill worker of 'agent run': one thread that copies hot
 * keys from the owner (--self) to their L1 replicas (memcached meta
 * commands, KS_STEER_MC_TIMEOUT per call), so that no memcached call ever
 * runs on the thread that flips epochs and answers HTTP. Jobs go in a FIFO
 * (one per slot at most: the state machine keeps one fill out per slot),
 * results come back in another, with an eventfd to poll for them. Jobs run
 * in the order given, so two fills of one key reach a replica in the order
 * they were started.
 *
 * The worker decides nothing about steering: it reports per replica what
 * failed, and the state machine (steer_fsm.h) backs replicas off. Only to
 * keep a queue of jobs from each waiting a timeout on a dead host, a host
 * (owner or replica) whose call failed is not called again for
 * KS_STEER_DOWN_NS (the machine's shortest back-off); jobs meanwhile fail
 * on it at once.
 *
 * The worker allocates nothing. Should it ever stop unasked (today: it
 * could not drop its capabilities), it says so on the eventfd and
 * ks_filler_dead() holds why: queued invalidations will never run, so
 * the caller must take every copy as stale (run_steer.c stops steering).
 */
#ifndef KS_STEER_FILL_H
#define KS_STEER_FILL_H

#include <pthread.h>
#include "net/mc_client.h"
#include "core/replicas.h"
#include "core/steer_fsm.h"

#define KS_STEER_MC_TIMEOUT 200 /* ms per memcached call */
#define KS_FILL_QUEUE       KS_HOT_SLOTS

struct ks_fill_job {
	int invalidate; /* 1: mark every replica's copy stale, no result */
	int slot;
	__u32 gen;
	__u64 seq; /* write_seq read before the copy */
	__u8 nrep;
	__u8 reps[KS_MAX_COPIES - 1]; /* indices into the replica set */
	__u16 len;
	__u8 key[KS_KEY_BUF];
};

struct ks_steer_filler {
	int started;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	int dead;                 /* -errno once the worker stopped unasked */
	struct ks_fill_job *jobs; /* ring of KS_FILL_QUEUE */
	unsigned jhead, jn;
	struct ks_steer_fill_result *res; /* ring of KS_FILL_QUEUE */
	unsigned rhead, rn;
	int efd; /* eventfd: results waiting */
	/* the worker's own */
	struct ks_mc_conn owner;
	struct ks_mc_conn conn[KS_MAX_REPLICAS];
	unsigned nrep;
	__u64 bad_until[KS_MAX_REPLICAS + 1]; /* the owner last */
	long copy_ttl_s;
	struct ks_fill_opts fill; /* test controls, set before the first job */
	/* under mu, for the status line */
	__u64 done, busy_ns, longest_ns;
	__u64 invalidations, inval_errors;
	/* the owner's reads it made (its memcached answered): they reach
	 * memcached without passing the datapath, so the load document's
	 * counters add them (core/host_doc.h "fills"); written by the
	 * worker, read by any thread, atomically */
	__u64 owner_reads;
};

/* Starts the thread (it drops every capability of its own first). */
int ks_filler_start(struct ks_steer_filler *w, const struct ks_replica_set *rs,
		    const struct ks_replica_addr *owner, long copy_ttl_s);
/* The owner's reads the worker has made (see owner_reads). */
__u64 ks_filler_owner_reads(const struct ks_steer_filler *w);
/* Queues a job; -ENOSPC when full, -ENOTCONN when not started, -EPIPE
 * when the worker is dead. */
int ks_filler_submit(struct ks_steer_filler *w, const struct ks_fill_job *j);
/* Takes up to max results, oldest first. */
unsigned ks_filler_take(struct ks_steer_filler *w,
			struct ks_steer_fill_result *out, unsigned max);
/* Readable while results wait; -1 when not started. */
int ks_filler_fd(const struct ks_steer_filler *w);
/* 0 while the worker runs (or was never started), else why it died
 * (-errno). */
int ks_filler_dead(struct ks_steer_filler *w);
/* Jobs queued or running. */
unsigned ks_filler_pending(struct ks_steer_filler *w);
/* Stops the thread (after the call it is in) and frees everything. */
void ks_filler_stop(struct ks_steer_filler *w);

#endif
