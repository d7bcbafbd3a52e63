// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_steer_fsm.c - the steering state machine (user/core/steer_fsm.c) against a
 * simulated datapath: a plain array of ks_hot_slot that the test writes as
 * the XDP program does (write_seq + 1 and last_write_ns per write, one
 * dirty event per armed-to-dirty transition) and onto which the machine's
 * actions are performed as run_steer.c performs them. After every step the
 * test asks the datapath's own question: would a read be steered
 * (armed_seq == write_seq, expires_ns in the future)? A read steered while
 * the replicas do not hold the latest write is a stale read; each race in
 * docs/steering.md is played here step by step.
 */
#include <string.h>
#include <stdlib.h>
#include "ktest.h"
#include "core/steer_fsm.h"
#include "unit.h"

#define MS 1000000ULL
#define IV (500 * MS) /* the interval */
#define T0 (1000000 * MS)

struct env {
	struct ks_hot_slot dp[KS_HOT_SLOTS];
	struct ks_steer_fsm f;
	struct ks_hot_table t;
	struct ks_replica_set rs;
	__u64 now;
	/* fill jobs the machine sent out, not yet answered */
	struct ks_steer_action job[KS_HOT_SLOTS];
	unsigned njobs;
	int hold_grace; /* leave KS_ACT_GRACE pending */
	int grace_pending;
	__u64 grace_ticket; /* the last KS_ACT_GRACE's */
	unsigned graces, downs, arms, disarms;
	unsigned down_rep;
	__u64 down_for;
	/* the owner: each applied write gives the item a new CAS, which a
	 * fill reports; with apply_late set a write reaches the datapath
	 * but memcached applies it only at owner_apply() */
	__u64 owner_cas[KS_HOT_SLOTS];
	__u64 job_cas[KS_HOT_SLOTS]; /* what a job read, when it went out */
	__u64 next_cas;
	int apply_late;
};

static struct env *env_new(unsigned nrep)
{
	struct env *e = calloc(1, sizeof(*e));
	char list[256] = "", err[128];
	unsigned i;

	if (!e)
		return NULL;
	for (i = 0; i < nrep; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
			 "%s198.18.0.%u:11211", i ? "," : "", 10 + i);
	if (nrep && ks_replicas_parse(list, &e->rs, err, sizeof(err)))
		kt_failf(__FILE__, __LINE__, "replicas: %s", err);
	ks_hot_init(&e->t);
	e->now = T0;
	ks_steer_fsm_init(&e->f, &e->rs, e->dp, IV, 0);
	return e;
}

/* The datapath's rule for a lone UDP get of slot i. */
static int steers(const struct env *e, int i)
{
	const struct ks_hot_slot *s = &e->dp[i];

	return i >= 0 && s->hash && s->ncopies > 1 && s->expires_ns > e->now &&
	       s->armed_seq == s->write_seq;
}

/* Performs the actions as run_steer.c does, on the array. */
static void apply(struct env *e)
{
	struct ks_steer_fsm *f = &e->f;
	unsigned i, j;

	for (i = 0; i < f->nact; i++) {
		const struct ks_steer_action *a = &f->act[i];
		struct ks_hot_slot *s = a->slot >= 0 && a->slot < KS_HOT_SLOTS
						? &e->dp[a->slot]
						: NULL;

		switch (a->type) {
		case KS_ACT_INSTALL:
			if (s->hash)
				kt_failf(__FILE__, __LINE__,
					 "install over slot %d in use",
					 a->slot);
			s->len = a->len;
			memcpy(s->key, a->key, a->len);
			s->ncopies = 1;
			s->hash = a->hash;
			break;
		case KS_ACT_SET_COPIES:
			if (s->expires_ns)
				kt_failf(__FILE__, __LINE__,
					 "copies of armed slot %d changed",
					 a->slot);
			for (j = 0; j + 1 < KS_MAX_COPIES; j++)
				s->replica[j] = j + 1 < a->ncopies ? a->reps[j]
								   : 0;
			s->ncopies = a->ncopies;
			break;
		case KS_ACT_FILL:
			e->job[e->njobs++] = *a;
			e->job_cas[a->slot] = e->owner_cas[a->slot];
			break;
		case KS_ACT_ARM:
			s->armed_seq = a->seq;
			s->expires_ns = a->expires_ns;
			e->arms++;
			break;
		case KS_ACT_DISARM:
			s->expires_ns = 0;
			e->disarms++;
			break;
		case KS_ACT_RELEASE:
			s->expires_ns = 0;
			s->hash = 0;
			break;
		case KS_ACT_GRACE:
			e->graces++;
			e->grace_ticket = a->seq;
			if (e->hold_grace)
				e->grace_pending = 1;
			else
				ks_steer_fsm_grace_done(f, a->seq, e->now);
			break;
		case KS_ACT_CLEAR:
			memset(s, 0, sizeof(*s));
			break;
		case KS_ACT_REPLICA_DOWN:
			e->downs++;
			e->down_rep = a->slot;
			e->down_for = a->seq;
			break;
		}
	}
	f->nact = 0;
}

static void poll_(struct env *e)
{
	ks_steer_fsm_poll(&e->f, e->now);
	apply(e);
}

/* The interval, as ks_run_steer_interval() runs it: the table, then a
 * poll (refreshes go out at once). */
static void tick(struct env *e)
{
	ks_steer_fsm_tick(&e->f, &e->t, e->now);
	apply(e);
	poll_(e);
}

static void advance(struct env *e, __u64 ns)
{
	e->now += ns;
}

/* A write as the datapath sees it; the event goes to the machine unless
 * lost (the ring buffer full). Returns whether an event was due. */
static int dp_write(struct env *e, int i, int deliver)
{
	struct ks_hot_slot *s = &e->dp[i];
	int ev;

	s->write_seq++;
	s->last_write_ns = e->now;
	if (!e->apply_late)
		e->owner_cas[i] = ++e->next_cas;
	ev = s->write_seq - 1 == s->armed_seq && s->expires_ns;
	if (ev && deliver)
		ks_steer_fsm_dirty(&e->f, i, e->now);
	return ev;
}

/* memcached applies the write of slot i it held back (apply_late). */
static void owner_apply(struct env *e, int i)
{
	e->owner_cas[i] = ++e->next_cas;
}

/* Index of the job for slot i, or -1. */
static int job_of(const struct env *e, int i)
{
	unsigned k;

	for (k = 0; k < e->njobs; k++)
		if (e->job[k].slot == i)
			return (int)k;
	return -1;
}

/* Answers the job of slot i; its result goes in without being applied. */
static int answer_raw(struct env *e, int i, enum ks_fill_status st,
		      __u32 failed_reps, int owner_failed)
{
	int k = job_of(e, i);
	struct ks_steer_fill_result r;

	if (k < 0)
		return -1;
	memset(&r, 0, sizeof(r));
	r.slot = i;
	r.gen = e->job[k].gen;
	r.seq = e->job[k].seq;
	r.status = st;
	r.failed_reps = failed_reps;
	r.owner_failed = owner_failed;
	r.owner_cas = e->job_cas[i];
	e->job[k] = e->job[--e->njobs];
	ks_steer_fsm_fill_done(&e->f, &r, e->now);
	return 0;
}

static int answer(struct env *e, int i, enum ks_fill_status st,
		  __u32 failed_reps)
{
	int ret = answer_raw(e, i, st, failed_reps, 0);

	apply(e);
	return ret;
}

/* A table entry: hot with 'copies' copies (1: counted only). */
static struct ks_hot_entry *entry(struct env *e, const char *key, __u64 hash,
				  unsigned copies)
{
	struct ks_hot_entry *x = NULL;
	unsigned i;

	for (i = 0; i < KS_HOT_CAP; i++)
		if (e->t.e[i].state == KS_HOT_FREE) {
			x = &e->t.e[i];
			break;
		}
	if (!x)
		return NULL;
	memset(x, 0, sizeof(*x));
	x->len = (__u16)strlen(key);
	memcpy(x->key, key, x->len);
	x->hash = hash ? hash : ut_hash(key);
	x->state = KS_HOT_PINNED;
	x->read_hot = copies > 1;
	x->copies = copies;
	e->t.used++;
	return x;
}

static void drop_entry(struct env *e, struct ks_hot_entry *x)
{
	memset(x, 0, sizeof(*x));
	e->t.used--;
}

/* A key installed, filled and armed; returns its slot. */
static int armed_key(struct env *e, const char *key, unsigned copies)
{
	struct ks_hot_entry *x = entry(e, key, 0, copies);
	int i;

	tick(e);
	i = ks_steer_fsm_find(&e->f, x->hash);
	advance(e, KS_STEER_SETTLE_NS);
	poll_(e);
	if (job_of(e, i) < 0)
		kt_failf(__FILE__, __LINE__, "%s: no fill went out", key);
	while (e->njobs) /* the other keys' refreshes too */
		answer(e, e->job[0].slot, KS_FILL_OK, 0);
	return i;
}

static void t_install_fill_arm(void)
{
	struct env *e = env_new(3);
	struct ks_hot_entry *x;
	int i, k;

	kt_begin("steer_fsm_install_fill_arm");
	x = entry(e, "k:hot", 0, 3);
	tick(e);
	i = ks_steer_fsm_find(&e->f, x->hash);
	CHECK(i >= 0 && e->dp[i].hash == x->hash, "not installed (slot %d)", i);
	CHECK_EQ(e->dp[i].ncopies, 3);
	CHECK_EQ(e->f.sl[i].state, KS_SL_FILL);
	CHECK_EQ(e->f.used, 1);
	/* the interval's own poll comes at once: too soon after install */
	poll_(e);
	CHECK_EQ(e->njobs, 0);
	CHECK_EQ(ks_steer_fsm_next_due(&e->f, e->now), KS_STEER_SETTLE_NS);
	advance(e, KS_STEER_SETTLE_NS);
	poll_(e);
	k = job_of(e, i);
	CHECK(k >= 0, "no fill after the settle");
	if (k >= 0) {
		CHECK_EQ(e->job[k].seq, 0);
		CHECK_EQ(e->job[k].ncopies, 3);
		CHECK(e->job[k].reps[0] == e->dp[i].replica[0] &&
			      e->job[k].reps[1] == e->dp[i].replica[1],
		      "the job's replicas are not the slot's");
	}
	CHECK_EQ(e->f.sl[i].state, KS_SL_FILLING);
	CHECK(!steers(e, i), "steered before the copies exist");
	/* one job per slot: polls while it is out send no other */
	poll_(e);
	CHECK_EQ(e->njobs, 1);
	advance(e, MS);
	answer(e, i, KS_FILL_OK, 0);
	CHECK_EQ(e->f.sl[i].state, KS_SL_ARMED);
	CHECK(steers(e, i), "not steered after a good fill");
	CHECK_EQ(e->dp[i].armed_seq, 0);
	CHECK_EQ(e->dp[i].expires_ns, e->now + KS_STEER_TTL_INTERVALS * IV);
	CHECK_EQ(e->f.fills, 1);
	CHECK_EQ(e->f.rearms, 0); /* a first arming is no re-arm */
	kt_end();
	free(e);
}

static void t_count_only(void)
{
	struct env *e = env_new(2);
	struct ks_hot_entry *a, *b;
	int i, j;

	kt_begin("steer_fsm_count_only");
	a = entry(e, "k:cold", 0, 1);
	b = entry(e, "k:has space", 0,
		  3); /* the text protocol cannot carry it */
	tick(e);
	i = ks_steer_fsm_find(&e->f, a->hash);
	j = ks_steer_fsm_find(&e->f, b->hash);
	CHECK(i >= 0 && j >= 0, "not installed");
	CHECK_EQ(e->f.sl[i].state, KS_SL_COUNT);
	CHECK_EQ(e->f.sl[j].state, KS_SL_COUNT);
	CHECK_EQ(e->dp[j].ncopies, 1);
	advance(e, IV);
	poll_(e);
	CHECK_EQ(e->njobs, 0);
	CHECK_EQ(ks_steer_fsm_next_due(&e->f, e->now), -1);
	/* no replicas at all: counted too */
	free(e);
	e = env_new(0);
	a = entry(e, "k:hot", 0, 3);
	tick(e);
	CHECK_EQ(e->f.sl[ks_steer_fsm_find(&e->f, a->hash)].state, KS_SL_COUNT);
	kt_end();
	free(e);
}

/* A write to an armed key: reads go to the owner at once (the datapath),
 * the copy waits the settle, and the re-arm is at the new sequence. */
static void t_write_settle_rearm(void)
{
	struct env *e = env_new(3);
	int i, k;

	kt_begin("steer_fsm_write_settle_rearm");
	i = armed_key(e, "k:hot", 3);
	CHECK(steers(e, i), "not armed");
	advance(e, 10 * MS);
	CHECK(dp_write(e, i, 1), "no event for an armed key");
	CHECK(!steers(e, i), "steered after a write");
	CHECK_EQ(e->f.sl[i].state, KS_SL_FILL);
	CHECK_EQ(e->f.events, 1);
	advance(e, KS_STEER_SETTLE_NS / 2);
	poll_(e);
	CHECK_EQ(e->njobs, 0);
	CHECK_EQ(ks_steer_fsm_next_due(&e->f, e->now), KS_STEER_SETTLE_NS / 2);
	advance(e, KS_STEER_SETTLE_NS / 2);
	poll_(e);
	k = job_of(e, i);
	CHECK(k >= 0 && e->job[k].seq == 1,
	      "no fill at seq 1 after the settle");
	advance(e, MS);
	answer(e, i, KS_FILL_OK, 0);
	CHECK(steers(e, i), "not re-armed");
	CHECK_EQ(e->dp[i].armed_seq, 1);
	CHECK_EQ(e->f.rearms, 1);
	CHECK(e->f.rearm_ms_max > 2.9 && e->f.rearm_ms_max < 3.1,
	      "re-arm took %.2f ms, want 3", e->f.rearm_ms_max);
	/* a second event for the same write (two writers racing in the
	 * datapath) changes nothing once re-armed at that sequence */
	ks_steer_fsm_dirty(&e->f, i, e->now);
	poll_(e);
	CHECK(steers(e, i), "a duplicate event unarmed the key");
	kt_end();
	free(e);
}

/* docs/steering.md: a write during the copy must not be armed over. */
static void t_write_during_fill(void)
{
	struct env *e = env_new(3);
	int i, k;

	kt_begin("steer_fsm_write_during_fill");
	/* the first fill: not armed yet, so the write sends no event */
	entry(e, "k:new", 0, 3);
	tick(e);
	i = ks_steer_fsm_find(&e->f, ut_hash("k:new"));
	advance(e, KS_STEER_SETTLE_NS);
	poll_(e);
	CHECK(job_of(e, i) >= 0, "no fill");
	advance(e, MS);
	CHECK(!dp_write(e, i, 1), "an event for a key never armed");
	advance(e, MS);
	answer(e, i, KS_FILL_OK, 0); /* the copy may hold the old value */
	CHECK(!steers(e, i), "armed over a write made during the copy");
	CHECK_EQ(e->arms, 0);
	CHECK_EQ(e->f.sl[i].state, KS_SL_FILL);
	advance(e, KS_STEER_SETTLE_NS);
	poll_(e);
	k = job_of(e, i);
	CHECK(k >= 0 && e->job[k].seq == 1, "no refill at seq 1");
	answer(e, i, KS_FILL_OK, 0);
	CHECK(steers(e, i) && e->dp[i].armed_seq == 1, "not armed at seq 1");

	/* a refill of an armed key (the dirty event comes while it runs) */
	advance(e, 10 * MS);
	dp_write(e, i, 1);
	advance(e, KS_STEER_SETTLE_NS);
	poll_(e);
	CHECK(job_of(e, i) >= 0 && e->job[job_of(e, i)].seq == 2,
	      "no refill at seq 2");
	advance(e, MS);
	CHECK(!dp_write(e, i, 1), "no event: already dirty");
	answer(e, i, KS_FILL_OK, 0);
	CHECK(!steers(e, i), "re-armed over the second write");
	CHECK_EQ(e->f.sl[i].state, KS_SL_FILL);
	advance(e, KS_STEER_SETTLE_NS);
	poll_(e);
	answer(e, i, KS_FILL_OK, 0);
	CHECK(steers(e, i) && e->dp[i].armed_seq == 3, "not armed at seq 3");
	kt_end();
	free(e);
}

/* docs/steering.md: a refill armed at a stale sequence does not steer. */
static void t_stale_refill(void)
{
	struct env *e = env_new(3);
	struct ks_steer_fill_result r;
	int i, k;

	kt_begin("steer_fsm_stale_refill");
	i = armed_key(e, "k:hot", 3);
	/* the interval's refresh goes out at seq 0 */
	advance(e, IV);
	tick(e);
	k = job_of(e, i);
	CHECK(k >= 0 && e->job[k].seq == 0, "no refresh at seq 0");
	CHECK(steers(e, i), "a refresh of unchanged copies stopped steering");
	/* the arm check passes, then a write lands before the arm is
	 * stored (its event lost: the slot is still armed at 0 here, but
	 * say the ring is full) */
	answer_raw(e, i, KS_FILL_OK, 0, 0);
	CHECK_EQ(e->f.nact, 1);
	CHECK_EQ(e->f.act[0].type, KS_ACT_ARM);
	dp_write(e, i, 0);
	apply(e); /* armed_seq = 0 stored after write_seq became 1 */
	CHECK(!steers(e, i), "steered at a stale sequence");
	/* the next poll sees write_seq past what it armed at */
	poll_(e);
	CHECK_EQ(e->f.sl[i].state, KS_SL_FILL);
	CHECK(e->f.sl[i].dirty, "not marked dirty");
	advance(e, KS_STEER_SETTLE_NS);
	poll_(e);
	k = job_of(e, i);
	CHECK(k >= 0 && e->job[k].seq == 1, "no refill at seq 1");

	/* a result that does not match the job out: dropped */
	memset(&r, 0, sizeof(r));
	r.slot = i;
	r.gen = e->job[k].gen;
	r.seq = 0; /* an older job's */
	r.status = KS_FILL_OK;
	ks_steer_fsm_fill_done(&e->f, &r, e->now);
	apply(e);
	CHECK(!steers(e, i), "armed by a result for another job");
	CHECK_EQ(e->f.stale_results, 1);
	r.seq = 1;
	r.gen = e->job[k].gen - 1; /* before the copies changed */
	ks_steer_fsm_fill_done(&e->f, &r, e->now);
	apply(e);
	CHECK(!steers(e, i), "armed by a result of another generation");
	CHECK_EQ(e->f.stale_results, 2);
	answer(e, i, KS_FILL_OK, 0);
	CHECK(steers(e, i) && e->dp[i].armed_seq == 1, "not armed at seq 1");
	kt_end();
	free(e);
}

/* A replica fails mid-fill: no copy is read until the key's copies are
 * chosen again without it; then it is armed on the others. */
static void t_replica_fails(void)
{
	struct env *e = env_new(3);
	__u8 bad;
	int i, k, j;

	kt_begin("steer_fsm_replica_fails_mid_fill");
	i = armed_key(e, "k:hot", 3); /* owner + 2 of the 3 replicas */
	bad = e->dp[i].replica[1];
	advance(e, IV);
	tick(e); /* the refresh */
	CHECK(job_of(e, i) >= 0, "no refresh");
	advance(e, 200 * MS); /* a timeout */
	answer(e, i, KS_FILL_FAILED, 1U << bad);
	CHECK(!steers(e, i), "still steered after a failed copy");
	CHECK_EQ(e->f.fill_errors, 1);
	CHECK_EQ(e->downs, 1);
	CHECK_EQ(e->down_rep, bad);
	CHECK_EQ(e->down_for, KS_STEER_DOWN_NS);
	CHECK(!ks_steer_replica_up(&e->f, bad, e->now), "replica still up");
	CHECK_EQ(ks_steer_fsm_next_due(&e->f, e->now), KS_STEER_RETRY_NS);
	/* the retry finds it down: nothing goes out until the next tick */
	advance(e, KS_STEER_RETRY_NS);
	poll_(e);
	CHECK_EQ(e->njobs, 0);
	/* the next tick: copies without it, after a grace period */
	advance(e, IV - KS_STEER_RETRY_NS - 200 * MS);
	e->hold_grace = 1;
	tick(e);
	CHECK_EQ(e->f.sl[i].state, KS_SL_REGRACE);
	CHECK(e->grace_pending, "no grace period asked for");
	CHECK(e->dp[i].replica[1] == bad,
	      "copies changed before the grace period");
	poll_(e);
	CHECK_EQ(e->njobs, 0);
	e->grace_pending = 0;
	ks_steer_fsm_grace_done(&e->f, e->grace_ticket, e->now);
	apply(e);
	for (j = 0; j + 1 < 3; j++)
		CHECK(e->dp[i].replica[j] != bad, "the failed replica kept");
	CHECK_EQ(e->dp[i].ncopies, 3);
	poll_(e);
	k = job_of(e, i);
	CHECK(k >= 0, "no fill to the new copies");
	answer(e, i, KS_FILL_OK, 0);
	CHECK(steers(e, i), "not armed on the other replicas");

	/* it fails again when back: the back-off doubles; a good copy
	 * with it ends the back-off */
	e->hold_grace = 0;
	advance(e, KS_STEER_DOWN_NS);
	CHECK(ks_steer_replica_up(&e->f, bad, e->now), "back-off did not end");
	tick(e); /* its keys come back to it */
	poll_(e);
	CHECK(e->dp[i].replica[0] == bad || e->dp[i].replica[1] == bad,
	      "rendezvous did not give the key back");
	advance(e, KS_STEER_SETTLE_NS);
	poll_(e);
	answer(e, i, KS_FILL_FAILED, 1U << bad);
	CHECK_EQ(e->down_for, 2 * KS_STEER_DOWN_NS);
	advance(e, 2 * KS_STEER_DOWN_NS);
	tick(e);
	advance(e, KS_STEER_SETTLE_NS);
	poll_(e);
	answer(e, i, KS_FILL_OK, 0);
	CHECK(steers(e, i), "not armed with the replica back");
	CHECK_EQ(e->f.down_for[bad], 0);

	/* the owner failing backs off no replica */
	advance(e, IV);
	tick(e);
	e->downs = 0;
	answer_raw(e, i, KS_FILL_FAILED, 0x7, 1);
	apply(e);
	CHECK(!steers(e, i), "steered after the owner failed");
	CHECK_EQ(e->downs, 0);
	kt_end();
	free(e);
}

/* Jobs queued with a replica that then fails all fail (the worker does
 * not wait a timeout for each): one failure, one back-off, not doubled
 * once per job. */
static void t_one_backoff_per_failure(void)
{
	struct env *e = env_new(2);
	int a, b;

	kt_begin("steer_fsm_one_backoff_per_failure");
	a = armed_key(e, "k:a", 3); /* both replicas each */
	b = armed_key(e, "k:b", 3);
	advance(e, IV);
	tick(e);
	CHECK_EQ(e->njobs, 2);
	answer(e, a, KS_FILL_FAILED, 1U << 1);
	answer(e, b, KS_FILL_FAILED, 1U << 1);
	CHECK(!steers(e, a) && !steers(e, b), "steered after failed copies");
	CHECK_EQ(e->downs, 1);
	CHECK_EQ(e->f.down_for[1], KS_STEER_DOWN_NS);
	CHECK_EQ(e->f.down_until[1], e->now + KS_STEER_DOWN_NS);
	CHECK_EQ(e->f.fill_errors, 2);
	kt_end();
	free(e);
}

/* Four keys of one bucket; one leaves, a fifth comes: it waits for the
 * grace period, so no packet still holding the old key's slot reads it. */
static void t_reuse_after_grace(void)
{
	struct env *e = env_new(2);
	struct ks_hot_entry *x[5];
	char key[16];
	int i, k, old;
	unsigned w;

	kt_begin("steer_fsm_slot_reuse_waits_grace");
	for (w = 0; w < 5; w++) {
		snprintf(key, sizeof(key), "k:%u", w);
		/* bucket 7 for all: (hash >> 20) % KS_HOT_BUCKETS */
		x[w] = entry(e, key, (7ULL << 20) | ((__u64)(w + 1) << 40), 2);
	}
	drop_entry(e, x[4]);
	tick(e);
	CHECK_EQ(e->f.used, 4);
	old = ks_steer_fsm_find(&e->f, x[1]->hash);
	advance(e, KS_STEER_SETTLE_NS);
	poll_(e);
	for (w = 0; w < 4; w++)
		answer(e, ks_steer_fsm_find(&e->f, x[w]->hash), KS_FILL_OK, 0);
	CHECK(steers(e, old), "not armed");
	/* k:1 leaves; its refresh job is out when it does */
	advance(e, IV);
	tick(e);
	CHECK(job_of(e, old) >= 0, "no refresh of k:1");
	e->hold_grace = 1;
	drop_entry(e, x[1]);
	x[4] = entry(e, "k:4", (7ULL << 20) | (5ULL << 40), 2);
	advance(e, IV);
	tick(e);
	CHECK(!e->dp[old].hash && !steers(e, old), "k:1 still in the datapath");
	CHECK_EQ(e->f.sl[old].state, KS_SL_RELEASING);
	CHECK_EQ(ks_steer_fsm_find(&e->f, x[4]->hash), -1);
	CHECK_EQ(e->f.no_slot, 1);
	CHECK(e->grace_pending, "no grace period asked for");
	/* k:1's late fill result must not arm anything */
	answer(e, old, KS_FILL_OK, 0);
	CHECK_EQ(e->f.stale_results, 1);
	CHECK(!steers(e, old), "armed by a late result");
	/* another tick before the grace period is over: still refused */
	advance(e, IV);
	tick(e);
	CHECK_EQ(ks_steer_fsm_find(&e->f, x[4]->hash), -1);
	CHECK_EQ(e->f.no_slot, 2);
	e->grace_pending = 0;
	ks_steer_fsm_grace_done(&e->f, e->grace_ticket, e->now);
	apply(e);
	CHECK_EQ(e->f.sl[old].state, KS_SL_FREE);
	e->dp[old].write_seq = 0; /* cleared: nothing left of k:1 */
	advance(e, IV);
	tick(e);
	i = ks_steer_fsm_find(&e->f, x[4]->hash);
	CHECK_EQ(i, old);
	advance(e, KS_STEER_SETTLE_NS);
	poll_(e);
	k = job_of(e, i);
	CHECK(k >= 0 && e->job[k].seq == 0, "k:4 not filled");
	answer(e, i, KS_FILL_OK, 0);
	CHECK(steers(e, i), "k:4 not armed");
	kt_end();
	free(e);
}

/* Armed slots stop steering at expiry without a refresh (a stalled or
 * dead agent); the machine refills them when it sees the expiry. */
static void t_expiry(void)
{
	struct env *e = env_new(2);
	__u64 armed_at;
	int i;

	kt_begin("steer_fsm_expiry");
	i = armed_key(e, "k:hot", 2);
	armed_at = e->now;
	CHECK_EQ(ks_steer_fsm_next_due(&e->f, e->now),
		 KS_STEER_TTL_INTERVALS * IV);
	advance(e, KS_STEER_TTL_INTERVALS * IV - 1);
	CHECK(steers(e, i), "expired early");
	advance(e, 1);
	CHECK(!steers(e, i), "steered at its expiry");
	poll_(e);
	CHECK_EQ(e->f.expired, 1);
	CHECK(job_of(e, i) >= 0, "no refill after expiry");
	answer(e, i, KS_FILL_OK, 0);
	CHECK(steers(e, i), "not re-armed");
	CHECK_EQ(e->dp[i].expires_ns, e->now + KS_STEER_TTL_INTERVALS * IV);
	/* the interval's refresh moves the expiry on */
	advance(e, IV);
	tick(e);
	answer(e, i, KS_FILL_OK, 0);
	CHECK_EQ(e->dp[i].expires_ns, e->now + KS_STEER_TTL_INTERVALS * IV);
	CHECK(e->dp[i].expires_ns > armed_at + KS_STEER_TTL_INTERVALS * IV,
	      "refresh did not extend");
	kt_end();
	free(e);
}

/* The datapath's fail safe (bytes of a stream went by unparsed) bumps the
 * write_seq of every armed slot at once: each turns dirty and is refilled
 * at its new sequence, events delivered or lost. */
static void t_disarm_all(void)
{
	struct env *e = env_new(3);
	int slot[8], i, k, deliver;
	char key[16];

	kt_begin("steer_fsm_disarm_all");
	for (i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "k:%d", i);
		slot[i] = armed_key(e, key, 3);
	}
	for (deliver = 1; deliver >= 0; deliver--) {
		advance(e, 10 * MS);
		for (i = 0; i < 8; i++)
			CHECK(dp_write(e, slot[i], deliver), "no event for %d",
			      i);
		for (i = 0; i < 8; i++)
			CHECK(!steers(e, slot[i]), "slot %d still steered", i);
		poll_(e);
		CHECK_EQ(e->njobs, 0); /* the settle */
		for (i = 0; i < 8; i++)
			CHECK_EQ(e->f.sl[slot[i]].state, KS_SL_FILL);
		advance(e, KS_STEER_SETTLE_NS);
		poll_(e);
		CHECK_EQ(e->njobs, 8);
		for (i = 0; i < 8; i++) {
			k = job_of(e, slot[i]);
			CHECK(k >= 0 &&
				      e->job[k].seq == e->dp[slot[i]].write_seq,
			      "slot %d: no refill at its new sequence", i);
			answer(e, slot[i], KS_FILL_OK, 0);
			CHECK(steers(e, slot[i]), "slot %d not re-armed", i);
		}
	}
	CHECK_EQ(e->f.events, 8);
	CHECK_EQ(e->f.rearms, 16);
	kt_end();
	free(e);
}

/* The owner has no such key: the copies are deleted, nothing is armed
 * until an interval later. */
static void t_miss(void)
{
	struct env *e = env_new(2);
	int i;

	kt_begin("steer_fsm_owner_miss");
	i = armed_key(e, "k:hot", 2);
	advance(e, IV);
	tick(e);
	answer(e, i, KS_FILL_MISS, 0);
	CHECK(!steers(e, i), "steered to deleted copies");
	CHECK_EQ(e->f.sl[i].state, KS_SL_FILL);
	CHECK_EQ(ks_steer_fsm_next_due(&e->f, e->now), IV);
	kt_end();
	free(e);
}

/* docs/client.md: a fill a write's invalidation raced is not armed, backs
 * no replica off, and is copied again at once (after the settle time). */
static void t_raced(void)
{
	struct env *e = env_new(3);
	__u64 due;
	int i, k;

	kt_begin("steer_fsm_raced_fill_refilled");
	i = armed_key(e, "k:hot", 3);
	advance(e, IV);
	tick(e); /* the refresh */
	answer(e, i, KS_FILL_RACED, 0);
	CHECK(!steers(e, i), "armed over a raced copy");
	CHECK_EQ(e->f.sl[i].state, KS_SL_FILL);
	CHECK_EQ(e->f.raced, 1);
	CHECK(ks_steer_replica_up(&e->f, 0, e->now) &&
		      ks_steer_replica_up(&e->f, 1, e->now),
	      "a race backed a replica off");
	due = (__u64)ks_steer_fsm_next_due(&e->f, e->now);
	CHECK(due <= KS_STEER_SETTLE_NS, "refill in %llu ns",
	      (unsigned long long)due);
	advance(e, KS_STEER_SETTLE_NS);
	poll_(e);
	k = job_of(e, i);
	CHECK(k >= 0, "no refill after the race");
	answer(e, i, KS_FILL_OK, 0);
	CHECK(steers(e, i), "not armed after the refill");
	kt_end();
	free(e);
}

/*
 * A write the datapath saw that memcached applies only much later than the
 * settle (a loaded host): the refill copies the old value, and arming it
 * would serve it after the write's acknowledgement. The owner's CAS,
 * changed fewer times since the last arming than writes were seen,
 * holds it back until they are in; the retries back off; and a write
 * that never changes the item (here: never applied) is armed after
 * KS_STEER_APPLY_WAIT_NS.
 */
/* Time moves on to the slot's next fill; whether one went out. */
static int fill_when_due(struct env *e, int i)
{
	int n;

	for (n = 0; n < 4 && job_of(e, i) < 0; n++) {
		advance(e, (__u64)ks_steer_fsm_next_due(&e->f, e->now));
		poll_(e);
	}
	return job_of(e, i) >= 0;
}

static void t_write_applied_late(void)
{
	struct env *e = env_new(3);
	__u64 t_seen, due;
	int i, k, tries;

	kt_begin("steer_fsm_write_applied_after_the_settle");
	i = armed_key(e, "k:hot", 3);
	advance(e, 10 * MS);
	e->apply_late = 1;
	dp_write(e, i, 1);
	t_seen = e->now;
	for (tries = 0; tries < 3; tries++) {
		CHECK(fill_when_due(e, i), "no refill");
		k = job_of(e, i);
		CHECK(k >= 0 && e->job[k].seq == 1, "no refill at seq 1");
		answer(e, i, KS_FILL_OK,
		       0); /* memcached: still the old value */
		CHECK(!steers(e, i),
		      "armed over a write not yet applied (try %d)", tries);
	}
	CHECK_EQ(e->f.unapplied, 3);
	due = (__u64)ks_steer_fsm_next_due(&e->f, e->now);
	CHECK_EQ(due, 4 * KS_STEER_SETTLE_NS); /* doubling */
	/* the write lands; the next copy has it and is armed */
	owner_apply(e, i);
	CHECK(fill_when_due(e, i), "no refill");
	answer(e, i, KS_FILL_OK, 0);
	CHECK(steers(e, i) && e->dp[i].armed_seq == 1,
	      "not armed once applied");

	/* the next write seen while a copy waits for the one before (a
	 * writer that sends it as soon as the first is acknowledged): the
	 * CAS changed once, two writes were seen */
	advance(e, 10 * MS);
	dp_write(e, i, 1);
	CHECK(fill_when_due(e, i), "no refill");
	answer(e, i, KS_FILL_OK, 0);
	owner_apply(e, i);
	dp_write(e, i, 1);
	CHECK(fill_when_due(e, i), "no refill");
	k = job_of(e, i);
	CHECK(k >= 0 && e->job[k].seq == 3, "no refill at seq 3");
	answer(e, i, KS_FILL_OK, 0); /* the first write's value */
	CHECK(!steers(e, i), "armed without the second write applied");
	owner_apply(e, i);
	CHECK(fill_when_due(e, i), "no refill");
	answer(e, i, KS_FILL_OK, 0);
	CHECK(steers(e, i) && e->dp[i].armed_seq == 3,
	      "not armed once both were applied");
	CHECK_EQ(e->f.unapplied, 5);

	/* two writes applied between two copies: one change seen for two
	 * writes; armed once a copy is read well after the last write */
	advance(e, 10 * MS);
	e->apply_late = 0;
	dp_write(e, i, 1);
	dp_write(e, i, 1);
	t_seen = e->now;
	CHECK(fill_when_due(e, i), "no refill");
	answer(e, i, KS_FILL_OK, 0);
	CHECK(!steers(e, i), "armed on one change for two writes at once");
	while (!steers(e, i) && fill_when_due(e, i))
		answer(e, i, KS_FILL_OK, 0);
	CHECK(steers(e, i) && e->dp[i].armed_seq == 5, "never armed at seq 5");
	CHECK(e->now - t_seen >= KS_STEER_APPLY_QUIET_NS &&
		      e->now - t_seen <= KS_STEER_APPLY_QUIET_NS +
						 KS_STEER_APPLY_RETRY_MAX_NS,
	      "armed %llu ms after the writes",
	      (unsigned long long)((e->now - t_seen) / MS));
	e->apply_late = 1;

	/* a write that changes nothing: armed after the wait, not before */
	advance(e, 10 * MS);
	dp_write(e, i, 1);
	t_seen = e->now;
	for (tries = 0; tries < 100 && !steers(e, i); tries++) {
		CHECK(fill_when_due(e, i), "no refill");
		answer(e, i, KS_FILL_OK, 0);
		if (steers(e, i))
			CHECK(e->now - t_seen >= KS_STEER_APPLY_WAIT_NS,
			      "armed %llu ms after a write never applied",
			      (unsigned long long)((e->now - t_seen) / MS));
	}
	CHECK(steers(e, i) && e->dp[i].armed_seq == 6,
	      "never armed after a write that changed nothing");
	CHECK(e->now - t_seen <= KS_STEER_APPLY_WAIT_NS +
					 KS_STEER_APPLY_RETRY_MAX_NS +
					 KS_STEER_SETTLE_NS,
	      "armed %llu ms after the write",
	      (unsigned long long)((e->now - t_seen) / MS));
	/* a refresh at the same sequence is armed as it is */
	advance(e, IV);
	tick(e);
	answer(e, i, KS_FILL_OK, 0);
	CHECK(steers(e, i), "a refresh with no new write held back");
	kt_end();
	free(e);
}

/*
 * A fill that raced (a writer's invalidation reached a copy between the
 * fill's reads) still read the owner: the CAS it saw counts toward the
 * writes memcached applied. Left out, a write
 * between that fill and the next showed one change for two writes and the
 * key was held back ("before the owner applied a write") until
 * KS_STEER_APPLY_WAIT_NS: with a write every 10 ms, where races are
 * common on a loaded machine, half a second without copies after every
 * race (test_client_fresh beside stress-ng, docs/testing.md).
 */
static void t_raced_fill_counts_owner_cas(void)
{
	struct env *e = env_new(3);
	__u64 t_seen;
	int i, k;

	kt_begin("steer_fsm_raced_fill_counts_the_owner_cas");
	i = armed_key(e, "k:hot", 3);
	advance(e, 10 * MS);
	dp_write(e, i, 1); /* applied at once: a new CAS */
	t_seen = e->now;
	CHECK(fill_when_due(e, i), "no refill");
	answer(e, i, KS_FILL_RACED, 0); /* it read that CAS */
	CHECK(!steers(e, i), "armed after a raced fill");
	dp_write(e, i, 1); /* the next write, applied too */
	CHECK(fill_when_due(e, i), "no refill");
	k = job_of(e, i);
	CHECK(k >= 0 && e->job[k].seq == e->dp[i].write_seq,
	      "no refill at the second write");
	answer(e, i, KS_FILL_OK, 0);
	CHECK(steers(e, i),
	      "held back after a raced fill: 2 writes applied, 2 CAS changes "
	      "read (%llu copies held back)",
	      (unsigned long long)e->f.unapplied);
	CHECK_EQ(e->f.unapplied, 0);
	CHECK(e->now - t_seen < KS_STEER_APPLY_QUIET_NS,
	      "re-armed %llu ms after the first write",
	      (unsigned long long)((e->now - t_seen) / MS));
	kt_end();
	free(e);
}

/* A key leaving stops steering at once; its slot clears after the grace
 * period. A key whose copies change is disarmed before they change. */
static void t_leave_and_regrace(void)
{
	struct env *e = env_new(3);
	struct ks_hot_entry *x;
	int i;

	kt_begin("steer_fsm_leave_and_new_copies");
	i = armed_key(e, "k:hot", 3);
	x = &e->t.e[0];
	x->copies = 4; /* hotter: one more copy */
	e->hold_grace = 1;
	advance(e, IV);
	tick(e);
	CHECK_EQ(e->f.sl[i].state, KS_SL_REGRACE);
	CHECK(!steers(e, i), "steered while its copies change");
	CHECK_EQ(e->dp[i].ncopies, 3);
	ks_steer_fsm_grace_done(&e->f, e->grace_ticket, e->now);
	apply(e);
	CHECK_EQ(e->dp[i].ncopies, 4);
	advance(e, KS_STEER_SETTLE_NS);
	poll_(e);
	answer(e, i, KS_FILL_OK, 0);
	CHECK(steers(e, i), "not armed with 4 copies");
	drop_entry(e, x);
	advance(e, IV);
	tick(e);
	CHECK(!steers(e, i) && !e->dp[i].hash,
	      "the key that left is still there");
	CHECK_EQ(e->f.used, 0);
	ks_steer_fsm_grace_done(&e->f, e->grace_ticket, e->now);
	apply(e);
	CHECK_EQ(e->f.sl[i].state, KS_SL_FREE);
	CHECK_EQ(e->dp[i].ncopies, 0);
	kt_end();
	free(e);
}

/* Settle from the first sight of a sequence: the datapath adds to
 * write_seq before it stores last_write_ns. */
static void t_settle_first_sight(void)
{
	struct env *e = env_new(2);
	int i;

	kt_begin("steer_fsm_settle_from_first_sight");
	i = armed_key(e, "k:hot", 2);
	advance(e, IV);
	e->dp[i].write_seq++; /* last_write_ns not stored yet */
	ks_steer_fsm_dirty(&e->f, i, e->now);
	poll_(e);
	CHECK_EQ(e->njobs, 0);
	advance(e, KS_STEER_SETTLE_NS - 1);
	poll_(e);
	CHECK_EQ(e->njobs, 0);
	advance(e, 1);
	poll_(e);
	CHECK(job_of(e, i) >= 0, "no fill after the settle");
	kt_end();
	free(e);
}

/* Taking over: armed slots stay armed (refreshed at the first tick),
 * dirty ones are refilled, one-copy ones counted. */
static void t_adopt(void)
{
	struct env *e = env_new(2);
	struct ks_hot_slot *s;
	int k;

	kt_begin("steer_fsm_adopt");
	s = &e->dp[3];
	s->hash = 0x123;
	s->ncopies = 2;
	s->replica[0] = 1;
	s->armed_seq = s->write_seq = 5;
	s->expires_ns = e->now + IV;
	s = &e->dp[4];
	s->hash = 0x456;
	s->ncopies = 2;
	s->armed_seq = 5;
	s->write_seq = 6;
	s->expires_ns = e->now + IV;
	e->dp[5].hash = 0x789;
	e->dp[5].ncopies = 1;
	ks_steer_fsm_adopt(&e->f, e->now);
	CHECK_EQ(e->f.used, 3);
	CHECK_EQ(e->f.sl[3].state, KS_SL_ARMED);
	CHECK_EQ(e->f.sl[4].state, KS_SL_FILL);
	CHECK_EQ(e->f.sl[5].state, KS_SL_COUNT);
	CHECK(steers(e, 3), "adopted armed slot not steering");
	advance(e, KS_STEER_SETTLE_NS);
	poll_(e);
	k = job_of(e, 4);
	CHECK(k >= 0 && e->job[k].seq == 6, "dirty adopted slot not refilled");
	CHECK_EQ(job_of(e, 3), -1);
	kt_end();
	free(e);
}

/* The grace period runs on another thread (agent/run_steer.c) while the
 * machine goes on: one asked for before a slot was disarmed must not free
 * it or change its copies; the next one, asked for after, does. */
static void t_grace_ticket_after_disarm(void)
{
	struct env *e = env_new(3);
	struct ks_hot_entry *xa, *xb;
	__u64 t1, t2;
	int a, b;

	kt_begin("steer_fsm_grace_ticket_after_disarm");
	a = armed_key(e, "k:a", 3);
	xa = &e->t.e[0];
	b = armed_key(e, "k:b", 3);
	xb = &e->t.e[1];
	CHECK(steers(e, a) && steers(e, b), "both keys not armed");
	e->hold_grace = 1;
	drop_entry(e, xa);
	advance(e, IV);
	tick(e);
	CHECK(e->grace_pending, "no grace period asked for k:a");
	t1 = e->grace_ticket;
	/* k:b leaves, and then would get other copies, while k:a's grace
	 * period is still running */
	drop_entry(e, xb);
	advance(e, IV);
	tick(e);
	t2 = e->grace_ticket;
	CHECK(t2 > t1, "ticket %llu after %llu", (unsigned long long)t2,
	      (unsigned long long)t1);
	ks_steer_fsm_grace_done(&e->f, t1, e->now);
	apply(e);
	CHECK_EQ(e->f.sl[a].state, KS_SL_FREE);
	CHECK_EQ(e->f.sl[b].state, KS_SL_RELEASING);
	CHECK(e->dp[b].ncopies == 3,
	      "k:b's slot cleared by a grace period asked for before its release");
	ks_steer_fsm_grace_done(&e->f, t2, e->now);
	apply(e);
	CHECK_EQ(e->f.sl[b].state, KS_SL_FREE);
	CHECK_EQ(e->dp[b].ncopies, 0);
	kt_end();
	free(e);
}

/* New copies wait for a grace period asked for after their disarm. */
static void t_grace_ticket_regrace(void)
{
	struct env *e = env_new(3);
	struct ks_hot_entry *xa, *xb;
	__u64 t1;
	int a, b;

	kt_begin("steer_fsm_grace_ticket_regrace");
	a = armed_key(e, "k:a", 3);
	xa = &e->t.e[0];
	b = armed_key(e, "k:b", 3);
	xb = &e->t.e[1];
	e->hold_grace = 1;
	drop_entry(e, xa);
	advance(e, IV);
	tick(e);
	t1 = e->grace_ticket;
	xb->copies = 4;
	advance(e, IV);
	tick(e);
	CHECK_EQ(e->f.sl[b].state, KS_SL_REGRACE);
	ks_steer_fsm_grace_done(&e->f, t1, e->now);
	apply(e);
	CHECK_EQ(e->f.sl[b].state, KS_SL_REGRACE);
	CHECK(e->dp[b].ncopies == 3,
	      "k:b's copies changed after a grace period asked for before its disarm");
	ks_steer_fsm_grace_done(&e->f, e->grace_ticket, e->now);
	apply(e);
	CHECK_EQ(e->dp[b].ncopies, 4);
	CHECK(e->f.sl[a].state == KS_SL_FREE, "k:a not freed");
	kt_end();
	free(e);
}

void test_steer_fsm(void)
{
	t_install_fill_arm();
	t_count_only();
	t_write_settle_rearm();
	t_write_during_fill();
	t_stale_refill();
	t_replica_fails();
	t_one_backoff_per_failure();
	t_reuse_after_grace();
	t_expiry();
	t_disarm_all();
	t_miss();
	t_raced();
	t_write_applied_late();
	t_raced_fill_counts_owner_cas();
	t_leave_and_regrace();
	t_grace_ticket_after_disarm();
	t_grace_ticket_regrace();
	t_settle_first_sight();
	t_adopt();
}
