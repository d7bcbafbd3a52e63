/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * run_steer.h - the hot-key table pushed into the datapath ('agent run'):
 * every table entry gets a ks_hot slot (so writes to it are seen and its
 * TCP reads counted); a read-hot key with L1 replicas (--replicas) gets
 * its copies chosen by rendezvous hashing, filled from the owner (--self)
 * and armed. A write dirties the slot in the datapath; the agent hears of
 * it on ks_hot_events, waits KS_STEER_SETTLE_NS for the owner to apply it,
 * copies the new value and re-arms at the sequence it read before the
 * copy, so a refill never re-arms over a newer write. Armed slots expire
 * after a few intervals unless refreshed: a dead agent leaves no steering.
 */
#ifndef KS_RUN_STEER_H
#define KS_RUN_STEER_H

#include <stddef.h>
#include <stdio.h>
#include "collect.h"
#include "hot_map.h"
#include "hotkeys.h"
#include "mc_client.h"
#include "replicas.h"

/* A write reaches XDP before memcached applies it; copying sooner could
 * copy the old value. */
#define KS_STEER_SETTLE_NS   2000000ULL
#define KS_STEER_RETRY_NS    200000000ULL /* after a failed copy */
#define KS_STEER_MC_TIMEOUT  200          /* ms per memcached call */
#define KS_STEER_TTL_INTERVALS 3          /* armed slots live this long */
/* A replica that failed a copy is left out of new choices this long (its
 * keys move to the others), doubling up to the maximum while it fails. */
#define KS_STEER_DOWN_NS     1000000000ULL
#define KS_STEER_DOWN_MAX_NS 16000000000ULL

enum ks_steer_state {
	KS_SL_FREE = 0,
	KS_SL_COUNT,   /* in the datapath for counting only: one copy */
	KS_SL_REGRACE, /* disarmed; its copies change after a grace period */
	KS_SL_FILL,    /* copies to (re)fill, then arm */
	KS_SL_ARMED,
};

struct ks_steer_slot {
	__u8 state;         /* enum ks_steer_state */
	__u8 ncopies;       /* wanted: owner + replicas */
	__u8 reps[KS_MAX_COPIES - 1];
	__u64 due_ns;       /* KS_SL_FILL: not before */
	__u64 prev_steered, prev_tcp;
	int seen;           /* still in the table this interval */
	int dirty;          /* woken by a write: the next arming is a re-arm */
};

struct ks_run_steer {
	const char *replicas_arg;   /* --replicas; NULL: count, never steer */
	double owner_share;         /* --owner-share: the owner's part of an
				     * armed key's reads (default 0: replicas
				     * are idle L1s, the owner is the hot spot) */
	struct ks_replica_set rs;
	struct ks_replica_addr owner;
	__u64 interval_ns;
	__u64 ttl_ns;
	long copy_ttl_s;

	struct ks_hot_map map;
	int map_open;
	struct ring_buffer *rb;
	struct ks_mc_conn owner_conn;
	struct ks_mc_conn conn[KS_MAX_REPLICAS];
	struct ks_steer_slot sl[KS_HOT_SLOTS];
	__u64 prev_rep_steered[KS_MAX_REPLICAS];
	__u64 down_until[KS_MAX_REPLICAS]; /* CLOCK_MONOTONIC; 0: up */
	__u64 down_for[KS_MAX_REPLICAS];   /* the last back-off */
	__u64 prev_ns;

	/* counters for the status line and the report */
	__u64 fills, fill_errors, events, no_slot, unfillable;
	__u64 rearms;
	double rearm_ms_sum, rearm_ms_max; /* write seen -> re-armed */
};

/* Before anything is attached: the replica list, the owner (--self,
 * required with --replicas) and the interface's IPv4 forwarding, which
 * bpf_fib_lookup needs. */
int ks_run_steer_prepare(struct ks_run_steer *s, const char *self,
			 const char *ifname, __u32 interval_ms, char *err,
			 size_t errlen);
int ks_run_steer_start(struct ks_run_steer *s, const struct ks_maps *m);
/* One interval: the table into the slots, refills, report fields.
 * Returns the number of slots in use (ks_config.hot). */
unsigned ks_run_steer_interval(struct ks_run_steer *s,
			       const struct ks_hot_table *t, double interval_s);
/*
 * Taking over a dead agent's attachment: the slots it left become this
 * agent's (armed ones stay armed and are refreshed at the first interval)
 * and their keys go back into the hot-key table t.
 */
void ks_run_steer_adopt(struct ks_run_steer *s, struct ks_hot_table *t,
			const struct ks_hot_policy *p);
/* Handles dirty events and due refills; call after every wake-up. */
void ks_run_steer_poll(struct ks_run_steer *s);
/* fd to poll for dirty events (-1 when none), and ms until a refill is
 * due (-1: none). */
int ks_run_steer_fd(const struct ks_run_steer *s);
int ks_run_steer_timeout_ms(const struct ks_run_steer *s);
/* One status line for 'agent run -v'. */
void ks_run_steer_status(const struct ks_run_steer *s, FILE *f, __u32 seq);
void ks_run_steer_free(struct ks_run_steer *s);

#endif
