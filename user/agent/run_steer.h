/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * run_steer.h - the hot-key table pushed into the datapath ('agent run'):
 * the I/O around the steering state machine (steer_fsm.h). It reads the
 * events (the interval's table, dirty events from ks_hot_events, fill
 * results from the fill worker, steer_fill.h), hands them to the machine
 * and performs its actions on the mmapped slots (hot_map.h) and the
 * worker's queue; no memcached call runs on the caller's thread.
 *
 * Every table entry gets a ks_hot slot (so writes to it are seen and its
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
#include "dp/collect.h"
#include "dp/hot_map.h"
#include "core/hotkeys.h"
#include "net/mc_client.h"
#include "core/replicas.h"
#include "agent/steer_fill.h"
#include "agent/bg_thread.h"
#include "core/steer_fsm.h"
#include "core/limit_auto.h"
#include "core/unseen.h"
#include "net/vlan_devs.h"

/* How long the exit path waits for a grace period in progress (it does
 * not need it: everything is disarmed and freed after). */
#define KS_GRACE_STOP_WAIT_NS 100000000ULL

/* The steering options, as 'agent run' parsed them. */
struct ks_run_steer_opts {
	const char *replicas_arg; /* --replicas; NULL: count, never steer */
	double owner_share;       /* --owner-share: the owner's part of an
				     * armed key's reads (default 0: replicas
				     * are idle L1s, the owner is the hot spot) */
	/* test controls (docs/client.md): unconditional stores, and a wait
	 * between a fill's owner read and its stores */
	int unconditional_fills;
	unsigned fill_delay_ms;
};

struct ks_run_steer {
	struct ks_run_steer_opts o;

	/* prepared from the options before anything is attached */
	struct ks_replica_set rs;
	struct ks_replica_addr owner;
	__u64 interval_ns;
	long copy_ttl_s;

	/* the live parts */
	struct ks_hot_map map;
	int map_open;
	struct ring_buffer *rb;
	int epfd; /* the dirty events and the fill results */
	struct ks_steer_filler filler;
	struct ks_steer_fsm fsm; /* the decisions (steer_fsm.h) */
	/* each slot's counters at the last ks_run_steer_sample */
	__u64 prev_steered[KS_HOT_SLOTS], prev_tcp[KS_HOT_SLOTS];
	/* UDP reads left to the owner: at the last sample, and per second
	 * over the interval before it (the automatic cap's steered share) */
	__u64 prev_owner[KS_HOT_SLOTS];
	double owner_ps[KS_HOT_SLOTS];
	/* the owner's replies at the last interval (--owner-replies) */
	struct ks_hot_replies prev_replies[KS_HOT_SLOTS];
	int replies; /* ks_tc_egress counts them (the attachment's egress) */
	/* each armed slot's owner reads, pooled (core/unseen.h); was_armed:
	 * armed at the last sample too, so the interval since was all
	 * armed (the one it was armed in had the key's reads on the owner) */
	struct ks_unseen_window unseen[KS_HOT_SLOTS];
	__u8 was_armed[KS_HOT_SLOTS];
	__u8 tcp_seen[KS_HOT_SLOTS]; /* read over TCP since installed */
	__u64 prev_rep_steered[KS_MAX_REPLICAS];
	/* told at once when a key's steering changes between intervals: a
	 * write made it dirty (the datapath's event), its copies were
	 * refreshed and it is armed again (ks_run_steer_view says how it
	 * stands); the fleet's hot/ entry follows. NULL: nobody */
	void (*on_state)(void *ud, const struct ks_run_steer *s, __u64 hash);
	void *on_state_ud;
	/* debug: the longest the caller's thread spent in one call here */
	__u64 step_max_ns;
	/* the RCU grace periods the machine asks for (KS_ACT_GRACE), on a
	 * thread of their own; the last ticket seen done */
	struct ks_bg *grace;
	__u64 grace_seen;
	/* armings of copies (first, refresh, re-arm), the last one's time
	 * and the longest gap between two while keys had copies */
	__u64 arms, last_arm_ns, arm_gap_max_ns;
	__u64 inval_dropped; /* invalidations not queued (queue full) */
	/* the fill worker died: every slot disarmed, none armed again */
	int fill_dead;
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
/*
 * Before the hot-key table's update, once an interval: reads each slot's
 * counters once, for its published rates (steered/s, TCP reads/s) and,
 * for each armed key, the reads per second that its copies took over
 * TCP, unseen by this datapath, pooled over intervals (core/unseen.h), or
 * a hold while too few of the owner's reads have come in to tell (needs
 * an owner share of at least 1/KS_STEER_SCHED, see --owner-share). Up to
 * max into out; how many.
 */
size_t ks_run_steer_sample(struct ks_run_steer *s, double interval_s,
			   struct ks_hot_unseen *out, size_t max);

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
/* fd to poll for dirty events and fill results (-1 when none), and ms
 * until a refill is due (-1: none). */
int ks_run_steer_fd(const struct ks_run_steer *s);
int ks_run_steer_timeout_ms(const struct ks_run_steer *s);
/*
 * How a hot key is steered, for the fleet (hot/<hash>, core/hot_doc.h):
 * *state an enum ks_hot_doc_state, *write_seq the sequence it is armed at
 * (the datapath's own once a write made it dirty), reps[0..*nreps) the
 * replicas holding its copies. A refresh of unchanged copies (the
 * datapath still armed at the same sequence) counts as armed. 0, or
 * -ENOENT when no slot holds it (not in the datapath: counting only).
 */
int ks_run_steer_view(const struct ks_run_steer *s, __u64 hash, __u8 *state,
		      __u64 *write_seq, const char **reps, unsigned *nreps);
/* The owner's hits and misses of a hot key per second (the slot's, from
 * ks_tc_egress): 0, or -ENOENT when no slot holds it or replies are not
 * counted (s->replies 0). */
int ks_run_steer_owner_rates(const struct ks_run_steer *s, __u64 hash,
			     double *hits_ps, double *misses_ps);
/* One status line for 'agent run -v'. */
void ks_run_steer_status(const struct ks_run_steer *s, FILE *f, __u32 seq);
void ks_run_steer_free(struct ks_run_steer *s);

/* The owner's turns of KS_STEER_SCHED in a hot key's read schedule
 * (--owner-share), as the datapath and the fleet's documents have it. */
unsigned ks_run_steer_owner_turns(const struct ks_run_steer *s);

/*
 * What the datapath measured of each key in a slot over the last
 * ks_run_steer_sample's interval, for the automatic cap (core/
 * limit_auto.h): up to max into out, whose keys point into s's slots
 * (valid until the next interval); how many.
 */
size_t ks_run_steer_auto_dp(const struct ks_run_steer *s,
			    struct ks_auto_dp *out, size_t max);

/* Lone UDP gets the datapath sent to copies per second, summed over the
 * slots, as the last ks_run_steer_sample measured them; 0 without
 * steering. */
double ks_run_steer_steered_ps(const struct ks_run_steer *s);
/* The owner's reads the fill worker made since the agent started (its
 * memcached answered them; the datapath never saw them); 0 without
 * steering. */
__u64 ks_run_steer_owner_reads(const struct ks_run_steer *s);

#endif
