// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * steer_fsm.c - the steering controller's decisions (see steer_fsm.h for
 * the states; docs/steering.md for why a read of an armed key is never
 * stale).
 */
#include <string.h>
#include "core/mc_key.h"
#include "core/steer_fsm.h"

#define LOAD(p) __atomic_load_n(&(p), __ATOMIC_ACQUIRE)

static struct ks_steer_action *push(struct ks_steer_fsm *f, __u8 type, int slot)
{
	struct ks_steer_action *a;

	if (f->nact >= KS_STEER_ACT_MAX) {
		/* cannot happen: one call emits at most 3 per slot; the
		 * caller drains after every call */
		f->overflow++;
		return NULL;
	}
	a = &f->act[f->nact++];
	memset(a, 0, sizeof(*a));
	a->type = type;
	a->slot = slot;
	return a;
}

/* Slot-bound actions; a dropped one (overflow) must not be a disarm the
 * datapath waits for, so those go first in every path below. */
static void act_slot(struct ks_steer_fsm *f, __u8 type, int i)
{
	struct ks_steer_action *a = push(f, type, i);

	if (a)
		a->gen = f->sl[i].gen;
}

static void act_copies(struct ks_steer_fsm *f, int i)
{
	const struct ks_steer_slot *sl = &f->sl[i];
	struct ks_steer_action *a = push(f, KS_ACT_SET_COPIES, i);

	if (!a)
		return;
	a->ncopies = sl->ncopies;
	memcpy(a->reps, sl->reps, sizeof(a->reps));
}

void ks_steer_fsm_init(struct ks_steer_fsm *f, const struct ks_replica_set *rs,
		       const struct ks_hot_slot *dp, __u64 interval_ns,
		       unsigned owner_turns)
{
	memset(f, 0, sizeof(*f));
	if (rs)
		f->rs = *rs;
	f->dp = dp;
	f->interval_ns = interval_ns;
	f->ttl_ns = interval_ns * KS_STEER_TTL_INTERVALS;
	f->owner_turns = owner_turns;
	f->grace_next = 1;
}

int ks_steer_replica_up(const struct ks_steer_fsm *f, unsigned r, __u64 now)
{
	return f->down_until[r] <= now;
}

/* The datapath's write_seq for slot i, noting when this value was first
 * seen (the settle runs from then as well as from last_write_ns). */
static __u64 observe(struct ks_steer_fsm *f, int i, __u64 now)
{
	struct ks_steer_slot *sl = &f->sl[i];
	__u64 seq = LOAD(f->dp[i].write_seq);

	if (seq != sl->obs_seq) {
		sl->obs_seq = seq;
		sl->obs_ns = now;
	}
	return seq;
}

void ks_steer_fsm_adopt(struct ks_steer_fsm *f, __u64 now)
{
	unsigned i, j;

	for (i = 0; i < KS_HOT_SLOTS; i++) {
		const struct ks_hot_slot *hs = &f->dp[i];
		struct ks_steer_slot *sl = &f->sl[i];

		memset(sl, 0, sizeof(*sl));
		sl->hash = LOAD(hs->hash);
		if (!sl->hash)
			continue;
		f->used++;
		sl->gen = 1;
		sl->ncopies = hs->ncopies ? hs->ncopies : 1;
		if (sl->ncopies > KS_MAX_COPIES)
			sl->ncopies = KS_MAX_COPIES;
		for (j = 0; j + 1 < KS_MAX_COPIES; j++)
			sl->reps[j] = hs->replica[j];
		observe(f, i, now);
		sl->obs_ns = now;
		if (sl->ncopies < 2) {
			sl->state = KS_SL_COUNT;
		} else if (LOAD(hs->expires_ns) &&
			   LOAD(hs->armed_seq) == LOAD(hs->write_seq)) {
			sl->state = KS_SL_ARMED;
			sl->armed_seq = LOAD(hs->armed_seq);
			sl->expires_ns = LOAD(hs->expires_ns);
		} else {
			sl->state = KS_SL_FILL;
		}
	}
}

/* Copies wanted for an entry, and which replicas: rendezvous over the
 * replicas that are up, so a dead one's keys move and nobody else's. */
static unsigned want_copies(const struct ks_steer_fsm *f,
			    const struct ks_hot_entry *e, __u8 *reps, __u64 now)
{
	unsigned n = e->read_hot || e->state == KS_HOT_PINNED ? e->copies : 1;
	struct ks_replica_set up = { .n = 0 };
	__u8 map[KS_MAX_REPLICAS], pick[KS_MAX_COPIES - 1];
	unsigned i, got;

	for (i = 0; i < f->rs.n; i++) {
		if (!ks_steer_replica_up(f, i, now))
			continue;
		map[up.n] = i;
		up.r[up.n++] = f->rs.r[i];
	}
	if (n > up.n + 1)
		n = up.n + 1;
	if (n > KS_MAX_COPIES)
		n = KS_MAX_COPIES;
	if (n < 2 || ks_mc_key_check(e->key, e->len))
		return 1;
	got = ks_rendezvous_pick(e->hash, &up, n - 1, pick);
	for (i = 0; i < got; i++)
		reps[i] = map[pick[i]];
	return got + 1;
}

int ks_steer_fsm_find(const struct ks_steer_fsm *f, __u64 hash)
{
	int base = ks_hot_bucket(hash) * KS_HOT_WAYS, w;

	for (w = 0; w < KS_HOT_WAYS; w++) {
		const struct ks_steer_slot *sl = &f->sl[base + w];

		if (sl->hash == hash && sl->state != KS_SL_FREE &&
		    sl->state != KS_SL_RELEASING)
			return base + w;
	}
	return -1;
}

/* A free way of the hash's bucket; a released one is not free until its
 * grace period is over. */
static int alloc_slot(const struct ks_steer_fsm *f, __u64 hash)
{
	int base = ks_hot_bucket(hash) * KS_HOT_WAYS, w;

	for (w = 0; w < KS_HOT_WAYS; w++)
		if (f->sl[base + w].state == KS_SL_FREE)
			return base + w;
	return -1;
}

static void install(struct ks_steer_fsm *f, int i, const struct ks_hot_entry *e,
		    unsigned n, const __u8 *reps, __u64 now)
{
	struct ks_steer_slot *sl = &f->sl[i];
	__u32 gen = sl->gen + 1;
	struct ks_steer_action *a;

	memset(sl, 0, sizeof(*sl));
	sl->gen = gen;
	sl->hash = e->hash;
	sl->ncopies = n;
	memcpy(sl->reps, reps, sizeof(sl->reps));
	sl->seen = 1;
	/* a cleared slot starts at write_seq 0; writes the datapath saw
	 * before the hash was stored are settled from now */
	sl->obs_seq = 0;
	sl->obs_ns = now;
	sl->state = n > 1 ? KS_SL_FILL : KS_SL_COUNT;
	f->used++;
	a = push(f, KS_ACT_INSTALL, i);
	if (a) {
		a->gen = gen;
		a->hash = e->hash;
		a->key = e->key;
		a->len = e->len;
	}
	act_copies(f, i);
}

/* The key leaves its copies: no reads to the old ones from here on. */
static void leave_copies(struct ks_steer_fsm *f, int i)
{
	struct ks_steer_slot *sl = &f->sl[i];

	if (sl->state == KS_SL_FILLING)
		f->filling--;
	sl->gen++; /* a fill still out is for the old copies */
	sl->dirty = 0;
}

static int same_copies(const struct ks_steer_slot *sl, unsigned n,
		       const __u8 *reps)
{
	return sl->ncopies == n && !memcmp(sl->reps, reps, sizeof(sl->reps));
}

static void sync_entry(struct ks_steer_fsm *f, const struct ks_hot_entry *e,
		       __u64 now)
{
	__u8 reps[KS_MAX_COPIES - 1] = {};
	unsigned n = want_copies(f, e, reps, now);
	struct ks_steer_slot *sl;
	int i = ks_steer_fsm_find(f, e->hash);

	if (i < 0) {
		i = alloc_slot(f, e->hash);
		if (i < 0)
			f->no_slot++;
		else
			install(f, i, e, n, reps, now);
		return;
	}
	sl = &f->sl[i];
	sl->seen = 1;
	if (same_copies(sl, n, reps)) {
		if (sl->state == KS_SL_ARMED) {
			sl->state = KS_SL_FILL; /* the interval's refresh */
			sl->due_ns = now;
		}
		return;
	}
	/* new copies: no packet may pick a replica from the old list once
	 * the new one is written, so disarm and wait a grace period */
	act_slot(f, KS_ACT_DISARM, i);
	leave_copies(f, i);
	sl->ncopies = n;
	memcpy(sl->reps, reps, sizeof(reps));
	sl->state = KS_SL_REGRACE;
	sl->grace_ticket = f->grace_next;
}

void ks_steer_fsm_tick(struct ks_steer_fsm *f, const struct ks_hot_table *t,
		       __u64 now)
{
	const struct ks_hot_entry *e;
	size_t pos = 0;
	int i, grace = 0;

	for (i = 0; i < KS_HOT_SLOTS; i++)
		f->sl[i].seen = 0;
	while (t && (e = ks_hot_next(t, &pos)))
		sync_entry(f, e, now);
	for (i = 0; i < KS_HOT_SLOTS; i++) {
		struct ks_steer_slot *sl = &f->sl[i];

		if (sl->state == KS_SL_FREE)
			continue;
		if (sl->state != KS_SL_RELEASING && !sl->seen) {
			act_slot(f, KS_ACT_RELEASE, i);
			leave_copies(f, i);
			sl->state = KS_SL_RELEASING;
			sl->grace_ticket = f->grace_next;
			f->used--;
		}
		if (sl->state == KS_SL_RELEASING || sl->state == KS_SL_REGRACE)
			grace = 1;
	}
	/* after the disarms above: the grace period asked for starts once
	 * they are performed. Asked again every tick while a slot waits:
	 * a later ticket covers every earlier one, and a failed wait is
	 * tried again. */
	if (grace) {
		struct ks_steer_action *a = push(f, KS_ACT_GRACE, -1);

		if (a)
			a->seq = f->grace_next++;
	}
}

void ks_steer_fsm_grace_done(struct ks_steer_fsm *f, __u64 ticket, __u64 now)
{
	int i;

	for (i = 0; i < KS_HOT_SLOTS; i++) {
		struct ks_steer_slot *sl = &f->sl[i];

		/* disarmed after that grace period started: packets that
		 * saw it armed may still run */
		if (sl->grace_ticket > ticket)
			continue;
		if (sl->state == KS_SL_RELEASING) {
			__u32 gen = sl->gen;

			act_slot(f, KS_ACT_CLEAR, i);
			memset(sl, 0, sizeof(*sl));
			sl->gen = gen;
		} else if (sl->state == KS_SL_REGRACE) {
			act_copies(f, i);
			sl->state = sl->ncopies > 1 ? KS_SL_FILL : KS_SL_COUNT;
			sl->due_ns = now;
		}
	}
}

/* Back to FILL: the copies are to be made again, from due on. */
static void refill(struct ks_steer_slot *sl, __u64 due)
{
	sl->state = KS_SL_FILL;
	sl->due_ns = due;
}

void ks_steer_fsm_dirty(struct ks_steer_fsm *f, unsigned slot, __u64 now)
{
	struct ks_steer_slot *sl;

	if (slot >= KS_HOT_SLOTS)
		return;
	f->events++;
	sl = &f->sl[slot];
	observe(f, slot, now);
	if (sl->state == KS_SL_ARMED || sl->state == KS_SL_FILL) {
		sl->dirty = 1;
		refill(sl, now); /* the dispatch waits for the settle */
	} else if (sl->state == KS_SL_FILLING) {
		sl->dirty = 1; /* its result will not arm: write_seq moved */
	}
}

/* After a failed copy: the replicas that failed are left out for a
 * back-off, so one dead replica costs one timeout per back-off, not one
 * per copy, and new choices go around it. */
static void back_off(struct ks_steer_fsm *f, __u32 failed, __u64 now)
{
	unsigned r;

	for (r = 0; r < f->rs.n; r++) {
		struct ks_steer_action *a;

		/* already left out: the other jobs that were queued with it
		 * fail too, and are no second failure */
		if (!(failed >> r & 1) || !ks_steer_replica_up(f, r, now))
			continue;
		f->down_for[r] = f->down_for[r] ? 2 * f->down_for[r]
						: KS_STEER_DOWN_NS;
		if (f->down_for[r] > KS_STEER_DOWN_MAX_NS)
			f->down_for[r] = KS_STEER_DOWN_MAX_NS;
		f->down_until[r] = now + f->down_for[r];
		a = push(f, KS_ACT_REPLICA_DOWN, r);
		if (a)
			a->seq = f->down_for[r];
	}
}

/* A copy's CAS: one more change if it differs from the copy before. */
static void note_cas(struct ks_steer_slot *sl, __u64 cas)
{
	if (sl->cas_known && cas != sl->last_cas) {
		sl->cas_changes++;
		sl->last_cas = cas;
	}
}

/*
 * Whether the owner has applied every write the datapath saw up to the
 * copy's sequence, as far as its CAS tells: as many changes of it since
 * the last arming as writes seen since (any applied write was seen, so a
 * change is one of them or one the sequence check refuses anyway); or,
 * when two of them were applied between two copies, a change and a copy
 * read well after the last write seen.
 * *retry: when to copy again if not.
 */
static int owner_applied(struct ks_steer_slot *sl,
			 const struct ks_steer_fill_result *r, __u64 now,
			 __u64 *retry)
{
	unsigned shift;

	if (!sl->cas_known || sl->cas_changes >= r->seq - sl->cas_seq ||
	    (sl->cas_changes &&
	     sl->job_ns >= sl->job_last_ns + KS_STEER_APPLY_QUIET_NS))
		return 1;
	if (!sl->unapplied_since) {
		sl->unapplied_since = now;
		sl->unapplied_tries = 0;
	} else if (now - sl->unapplied_since >= KS_STEER_APPLY_WAIT_NS) {
		return 1;
	}
	shift = sl->unapplied_tries < 16 ? sl->unapplied_tries++ : 16;
	*retry = KS_STEER_SETTLE_NS << shift;
	if (*retry > KS_STEER_APPLY_RETRY_MAX_NS)
		*retry = KS_STEER_APPLY_RETRY_MAX_NS;
	return 0;
}

void ks_steer_fsm_fill_done(struct ks_steer_fsm *f,
			    const struct ks_steer_fill_result *r, __u64 now)
{
	struct ks_steer_slot *sl;
	struct ks_steer_action *a;
	__u64 retry = 0;
	unsigned j;

	if (r->slot < 0 || r->slot >= KS_HOT_SLOTS)
		return;
	sl = &f->sl[r->slot];
	if (sl->gen != r->gen || sl->state != KS_SL_FILLING ||
	    sl->job_seq != r->seq) {
		f->stale_results++; /* the key or its copies changed */
		return;
	}
	f->filling--;
	f->fills++;
	if (r->status == KS_FILL_RACED) {
		/* its copies were refused, but it read the owner's CAS:
		 * evidence of the writes memcached applied, for the next
		 * copy's check (owner_applied). Dropped, a write between
		 * this fill and the next showed one change for two writes,
		 * and the key was held back until KS_STEER_APPLY_WAIT_NS:
		 * at a write every 10 ms, where races are common under load,
		 * half a second without copies after each race, for no
		 * reason of freshness. */
		note_cas(sl, r->owner_cas);
		/* a write invalidated a copy under the fill: its value may
		 * be older than that write; copy again once it settled */
		act_slot(f, KS_ACT_DISARM, r->slot);
		f->raced++;
		sl->dirty = 1;
		refill(sl, now);
		return;
	}
	if (r->status == KS_FILL_MISS)
		note_cas(sl, 0); /* a delete applied */
	if (r->status != KS_FILL_OK) {
		/* some replica may not hold the value: no reads to any */
		act_slot(f, KS_ACT_DISARM, r->slot);
		if (r->status == KS_FILL_FAILED) {
			f->fill_errors++;
			if (!r->owner_failed)
				back_off(f, r->failed_reps, now);
		}
		refill(sl,
		       now + (r->status == KS_FILL_FAILED ? KS_STEER_RETRY_NS
							  : f->interval_ns));
		return;
	}
	note_cas(sl, r->owner_cas);
	if (observe(f, r->slot, now) != r->seq) {
		/* a write during the copy: stays dirty, copy again */
		sl->dirty = 1;
		refill(sl, now);
		return;
	}
	if (!owner_applied(sl, r, now, &retry)) {
		/* the copies hold the value from before those writes */
		act_slot(f, KS_ACT_DISARM, r->slot);
		f->unapplied++;
		sl->dirty = 1;
		refill(sl, now + retry);
		return;
	}
	a = push(f, KS_ACT_ARM, r->slot);
	if (!a) {
		refill(sl, now);
		return;
	}
	sl->cas_known = 1;
	sl->cas_seq = r->seq;
	sl->last_cas = r->owner_cas;
	sl->cas_changes = 0;
	sl->unapplied_since = 0;
	a->gen = sl->gen;
	a->seq = r->seq;
	a->expires_ns = now + f->ttl_ns;
	sl->state = KS_SL_ARMED;
	sl->armed_seq = r->seq;
	sl->expires_ns = a->expires_ns;
	for (j = 0; j + 1 < sl->ncopies; j++)
		f->down_for[sl->reps[j]] = 0; /* a good copy ends the back-off */
	if (sl->dirty && sl->job_last_ns && now > sl->job_last_ns) {
		double ms = (double)(now - sl->job_last_ns) / 1e6;

		f->rearms++;
		f->rearm_ms_sum += ms;
		if (ms > f->rearm_ms_max)
			f->rearm_ms_max = ms;
	}
	sl->dirty = 0;
}

/* A FILL slot whose time has come: out as a job at the write_seq read
 * now, or put off until settled / its replicas are back. */
static void dispatch(struct ks_steer_fsm *f, int i, __u64 now)
{
	struct ks_steer_slot *sl = &f->sl[i];
	struct ks_steer_action *a;
	__u64 seq = observe(f, i, now);
	__u64 last = LOAD(f->dp[i].last_write_ns);
	__u64 ready = (last > sl->obs_ns ? last : sl->obs_ns) +
		      KS_STEER_SETTLE_NS;
	unsigned j;

	if (now < ready) {
		sl->due_ns = ready;
		return;
	}
	for (j = 0; j + 1 < sl->ncopies; j++) {
		if (!ks_steer_replica_up(f, sl->reps[j], now)) {
			/* the next tick chooses copies without it */
			sl->due_ns = now + f->interval_ns;
			return;
		}
	}
	a = push(f, KS_ACT_FILL, i);
	if (!a)
		return;
	a->gen = sl->gen;
	a->seq = seq;
	a->ncopies = sl->ncopies;
	memcpy(a->reps, sl->reps, sizeof(a->reps));
	sl->state = KS_SL_FILLING;
	sl->job_seq = seq;
	sl->job_last_ns = last;
	sl->job_ns = now;
	f->filling++;
}

void ks_steer_fsm_poll(struct ks_steer_fsm *f, __u64 now)
{
	int i;

	for (i = 0; i < KS_HOT_SLOTS; i++) {
		struct ks_steer_slot *sl = &f->sl[i];

		if (sl->state == KS_SL_ARMED) {
			/* a write with its event lost (ring full), a write
			 * between the check and the arm, a disarm-all */
			if (LOAD(f->dp[i].write_seq) != sl->armed_seq) {
				observe(f, i, now);
				sl->dirty = 1;
				refill(sl, now);
			} else if (sl->expires_ns <= now) {
				f->expired++;
				refill(sl, now);
			}
		}
		if (sl->state == KS_SL_FILL && sl->due_ns <= now)
			dispatch(f, i, now);
	}
}

long long ks_steer_fsm_next_due(const struct ks_steer_fsm *f, __u64 now)
{
	__u64 first = 0;
	int i, any = 0;

	for (i = 0; i < KS_HOT_SLOTS; i++) {
		const struct ks_steer_slot *sl = &f->sl[i];
		__u64 t;

		if (sl->state == KS_SL_FILL)
			t = sl->due_ns;
		else if (sl->state == KS_SL_ARMED)
			t = sl->expires_ns;
		else
			continue;
		if (!any || t < first)
			first = t;
		any = 1;
	}
	if (!any)
		return -1;
	return first <= now ? 0 : (long long)(first - now);
}

unsigned ks_steer_fsm_count(const struct ks_steer_fsm *f,
			    enum ks_steer_state st)
{
	unsigned i, n = 0;

	for (i = 0; i < KS_HOT_SLOTS; i++)
		n += f->sl[i].state == st;
	return n;
}
