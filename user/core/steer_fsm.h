/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * steer_fsm.h - the steering controller as pure code: which hot key holds
 * which ks_hot slot, with which replicas, when its copies are made, when it
 * is armed, refreshed, disarmed and freed, and which replicas are left out
 * after a failed copy. No libbpf, no sockets, no threads, no clock of its
 * own: time comes in with every event, and the only thing it reads is the
 * datapath's side of the slots (write_seq, last_write_ns, and at a
 * take-over what the previous agent left) through a read-only view. Its
 * outputs are actions (struct ks_steer_action) that the caller performs in
 * order: user/agent/run_steer.c against the mmapped map and the fill worker, the
 * unit tests against a plain array.
 *
 * Per slot (enum ks_steer_state):
 *
 *   FREE --tick: a new table entry--> INSTALL, then COUNT (one copy) or
 *        FILL (copies wanted)
 *   FILL --poll, due, settled, replicas up--> FILL action (the write_seq s
 *        read now travels with the job), FILLING
 *   FILLING --fill ok, write_seq still s--> ARM at s, ARMED
 *           --fill ok, the owner's CAS changed fewer times since the last
 *             arming than the datapath saw writes (memcached has not
 *             applied them all)--> DISARM, FILL again (armed anyway
 *             after KS_STEER_APPLY_WAIT_NS)
 *           --fill ok, write_seq moved (a write during the copy)--> FILL
 *           --fill raced (a copy invalidated under it)--> DISARM, FILL
 *           --fill failed--> DISARM, replicas that failed backed off, FILL
 *             in KS_STEER_RETRY_NS (the next tick chooses copies without
 *             them: REGRACE)
 *           --owner has no such key--> DISARM, FILL in an interval
 *   ARMED --dirty event, or poll sees write_seq != armed seq--> FILL
 *         --tick (refresh)--> FILL; --poll past expiry--> FILL
 *   COUNT/FILL/FILLING/ARMED --tick: other copies wanted--> DISARM, REGRACE
 *   REGRACE --grace period over--> SET_COPIES, then FILL or COUNT
 *     (a grace period asked for after the disarm: its ticket, below)
 *   any --tick: entry gone--> RELEASE, RELEASING
 *   RELEASING --grace period over--> CLEAR, FREE (only now reusable)
 *
 * A FILL/FILLING slot keeps steering while the datapath still has it armed
 * at the old sequence (a refresh of unchanged copies); a write ends that
 * in the datapath itself. Fill results carry the slot's generation: a
 * result for a slot whose key or copies changed since it was started is
 * dropped.
 */
#ifndef KS_STEER_FSM_H
#define KS_STEER_FSM_H

#include <linux/types.h>
#include "core/hotkeys.h"
#include "keysteer.h"
#include "core/replicas.h"

/* A write reaches XDP before memcached applies it; copying sooner could
 * copy the old value. */
#define KS_STEER_SETTLE_NS 2000000ULL
/* On a loaded host memcached may apply a write far later than the settle
 * (a worker thread not scheduled, a datagram's later fragments or a
 * value's later segments still to come). Every store gives the item a new
 * CAS, so a copy is armed only once the owner's CAS has changed, over the
 * fills since the last arming, at least as often as the datapath saw
 * writes; until then it is copied again, the retries doubling up to the
 * cap. Two writes applied between two copies never catch up: once the
 * CAS has changed at all and the copy was read KS_STEER_APPLY_QUIET_NS
 * after the last write seen, it is armed. Writes that change nothing (a
 * refused add or cas, a touch) and the datapath's disarm-all: after
 * KS_STEER_APPLY_WAIT_NS since the first copy held back. */
#define KS_STEER_APPLY_QUIET_NS     20000000ULL
#define KS_STEER_APPLY_WAIT_NS      500000000ULL
#define KS_STEER_APPLY_RETRY_MAX_NS 8000000ULL
#define KS_STEER_RETRY_NS           200000000ULL /* after a failed copy */
#define KS_STEER_TTL_INTERVALS      3 /* armed slots live this long */
/* A replica that failed a copy is left out of new choices this long (its
 * keys move to the others), doubling up to the maximum while it fails. */
#define KS_STEER_DOWN_NS     1000000000ULL
#define KS_STEER_DOWN_MAX_NS 16000000000ULL

enum ks_steer_state {
	KS_SL_FREE = 0,
	KS_SL_COUNT,   /* in the datapath for counting only: one copy */
	KS_SL_REGRACE, /* disarmed; its copies change after a grace period */
	KS_SL_FILL,    /* copies to (re)fill, then arm: not before due_ns */
	KS_SL_FILLING, /* a fill job is out (at job_seq) */
	KS_SL_ARMED,
	KS_SL_RELEASING, /* removed; free after a grace period */
};

struct ks_steer_slot {
	__u8 state;   /* enum ks_steer_state */
	__u8 ncopies; /* wanted: owner + replicas */
	__u8 reps[KS_MAX_COPIES - 1];
	__u8 seen;  /* still in the table this tick */
	__u8 dirty; /* woken by a write: the next arming is a re-arm */
	__u32 gen;  /* bumped when key or copies change */
	__u64 hash;
	__u64 due_ns;      /* KS_SL_FILL: not before */
	__u64 job_seq;     /* KS_SL_FILLING: write_seq read before the copy */
	__u64 job_last_ns; /* last_write_ns read with it */
	__u64 job_ns;      /* when it went out */
	__u64 armed_seq;   /* KS_SL_ARMED: the sequence armed at */
	__u64 expires_ns;  /* KS_SL_ARMED: the expiry armed with */
	/* Settle from the first sight of a sequence too: a write whose
	 * write_seq increment is visible but whose last_write_ns store is
	 * not yet, or one the datapath saw before the slot existed, must
	 * still get KS_STEER_SETTLE_NS before a copy is read. */
	__u64 obs_seq, obs_ns;
	/* The owner's CAS: the sequence of the last arming (cas_known), the
	 * CAS of the latest copy since, and how often it changed between
	 * copies: a lower bound on the writes memcached applied since. */
	__u64 cas_seq, last_cas, cas_changes;
	__u64 unapplied_since; /* first copy held back since the arming */
	__u8 cas_known;
	__u8 unapplied_tries;
	/* REGRACE, RELEASING: the first grace ticket that covers the
	 * disarm (its KS_ACT_GRACE comes after it) */
	__u64 grace_ticket;
};

enum ks_steer_act {
	KS_ACT_INSTALL = 1,  /* key, len, hash: write the key, then the hash */
	KS_ACT_SET_COPIES,   /* ncopies, reps, owner_turns (slot disarmed) */
	KS_ACT_FILL,         /* copy the key from the owner to reps; report
			     * with ks_steer_fsm_fill_done(gen, seq) */
	KS_ACT_ARM,          /* armed_seq = seq, then expires_ns */
	KS_ACT_DISARM,       /* expires_ns = 0 */
	KS_ACT_RELEASE,      /* expires_ns = 0, then hash = 0 */
	KS_ACT_GRACE,        /* seq: a ticket. Start an RCU grace period
			     * (after the actions before it), and when it
			     * is over call ks_steer_fsm_grace_done() with
			     * the ticket (or a later one's): the wait may
			     * run on another thread while the machine
			     * goes on */
	KS_ACT_CLEAR,        /* after the grace period: zero the slot */
	KS_ACT_REPLICA_DOWN, /* replica (slot field) left out for seq ns */
};

struct ks_steer_action {
	__u8 type; /* enum ks_steer_act */
	__u8 ncopies;
	__u8 reps[KS_MAX_COPIES - 1];
	__u16 len; /* KS_ACT_INSTALL */
	int slot;  /* KS_ACT_REPLICA_DOWN: the replica index */
	__u32 gen;
	__u64 seq;        /* FILL, ARM; REPLICA_DOWN: the back-off */
	__u64 expires_ns; /* ARM */
	__u64 hash;       /* INSTALL */
	const __u8 *key;  /* INSTALL: points into the table given to tick */
};

/* Fill outcomes (ks_steer_fill_result.status). */
enum ks_fill_status {
	KS_FILL_OK = 0, /* every replica holds the owner's value */
	KS_FILL_MISS,   /* the owner has no such key; copies deleted */
	KS_FILL_FAILED, /* a replica or the owner failed: no arming */
	KS_FILL_RACED,  /* a copy was invalidated while the fill ran (a
			 * write): not armed, filled again */
};

struct ks_steer_fill_result {
	int slot;
	__u32 gen;
	__u64 seq;         /* the job's: write_seq read before the copy */
	__u8 status;       /* enum ks_fill_status */
	__u8 owner_failed; /* the owner did not answer */
	__u32 failed_reps; /* bit r: replica r (rs index) was not updated */
	__u64 owner_cas;   /* the owner's CAS at the copy (0: no item) */
};

#define KS_STEER_ACT_MAX (4 * KS_HOT_SLOTS + 16)

struct ks_steer_fsm {
	/* configuration (ks_steer_fsm_init) */
	struct ks_replica_set rs;
	const struct ks_hot_slot *dp; /* the datapath's slots, read only */
	__u64 interval_ns, ttl_ns;
	unsigned owner_turns; /* of KS_STEER_SCHED, for SET_COPIES */

	struct ks_steer_slot sl[KS_HOT_SLOTS];
	__u64 down_until[KS_MAX_REPLICAS]; /* back-off end; 0 (or past): up */
	__u64 down_for[KS_MAX_REPLICAS];   /* the last back-off */
	unsigned used;                     /* slots holding a key */
	unsigned filling;                  /* jobs out */
	__u64 grace_next; /* the next KS_ACT_GRACE's ticket (from 1) */

	/* counters for the status line, the report and the metrics */
	__u64 fills, fill_errors, events, no_slot, stale_results, raced;
	__u64 expired, overflow;
	__u64 unapplied; /* copies held back: writes not applied yet */
	__u64 rearms;
	double rearm_ms_sum, rearm_ms_max; /* write seen -> re-armed */

	/* the actions of the last calls, in order; the caller performs
	 * act[0..nact) and sets nact to 0 */
	unsigned nact;
	struct ks_steer_action act[KS_STEER_ACT_MAX];
};

/* dp: KS_HOT_SLOTS slots the datapath writes write_seq/last_write_ns of. */
void ks_steer_fsm_init(struct ks_steer_fsm *f, const struct ks_replica_set *rs,
		       const struct ks_hot_slot *dp, __u64 interval_ns,
		       unsigned owner_turns);
/* Taking over: the slots a previous agent left in dp become this
 * machine's (armed ones ARMED, to be refreshed at the first tick). */
void ks_steer_fsm_adopt(struct ks_steer_fsm *f, __u64 now);
/* One interval: the hot-key table into the slots (install, new copies,
 * refresh of armed ones, release of keys that left). */
void ks_steer_fsm_tick(struct ks_steer_fsm *f, const struct ks_hot_table *t,
		       __u64 now);
/* The grace period a KS_ACT_GRACE asked for with ticket (or a later
 * one) is over: the slots it covers move on; ones that waited for a later
 * ticket wait on. */
void ks_steer_fsm_grace_done(struct ks_steer_fsm *f, __u64 ticket, __u64 now);
/* The datapath reported a write that dirtied armed slot 'slot'. */
void ks_steer_fsm_dirty(struct ks_steer_fsm *f, unsigned slot, __u64 now);
/* A fill job's outcome. */
void ks_steer_fsm_fill_done(struct ks_steer_fsm *f,
			    const struct ks_steer_fill_result *r, __u64 now);
/* Due fills out, dirty and expired armed slots found (call after every
 * wake-up, and after performing KS_ACT_ARM). */
void ks_steer_fsm_poll(struct ks_steer_fsm *f, __u64 now);
/* ns until the next fill is due, 0 if one is due now, -1 if none. */
long long ks_steer_fsm_next_due(const struct ks_steer_fsm *f, __u64 now);

/* The slot holding hash, or -1. */
int ks_steer_fsm_find(const struct ks_steer_fsm *f, __u64 hash);
int ks_steer_replica_up(const struct ks_steer_fsm *f, unsigned r, __u64 now);
unsigned ks_steer_fsm_count(const struct ks_steer_fsm *f,
			    enum ks_steer_state st);

#endif
