// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* --balance (user/core/balance.c): the fleet's loads, and a simulated
 * fleet of 8 shards whose busiest carries keys below the hot threshold. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "ktest.h"
#include "core/balance.h"
#include "core/hotkeys.h"
#include "unit.h"

static void loads_table(void)
{
	static struct ks_fleet_loads l;
	char name[KS_BALANCE_SELF + 8];
	size_t n, i;
	double m;

	kt_begin("balance_fleet_loads");
	ks_fleet_loads_clear(&l);
	m = ks_fleet_loads_mean(&l, "a:1", 90, &n);
	CHECK(n == 1 && m == 90, "alone: %zu shards, mean %f", n, m);
	CHECK_EQ(ks_fleet_loads_put(&l, "b:1", 100), 0);
	CHECK_EQ(ks_fleet_loads_put(&l, "c:1", 200), 0);
	m = ks_fleet_loads_mean(&l, "a:1", 300, &n);
	CHECK(n == 3 && m == 200, "own before its entry: %zu, %f", n, m);
	/* its entry as published counts, not the fresh figure */
	CHECK_EQ(ks_fleet_loads_put(&l, "a:1", 600), 0);
	m = ks_fleet_loads_mean(&l, "a:1", 300, &n);
	CHECK(n == 3 && m == 300, "own entry: %zu, %f", n, m);
	CHECK_EQ(ks_fleet_loads_put(&l, "b:1", 400), 0); /* replaced */
	CHECK_EQ(l.n, 3);
	ks_fleet_loads_del(&l, "c:1");
	ks_fleet_loads_del(&l, "nobody:1");
	m = ks_fleet_loads_mean(&l, "a:1", 0, &n);
	CHECK(n == 2 && m == 500, "after a delete: %zu, %f", n, m);
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	CHECK_EQ(ks_fleet_loads_put(&l, name, 1), -EINVAL);
	ks_fleet_loads_clear(&l);
	for (i = 0; i < KS_BALANCE_HOSTS; i++) {
		snprintf(name, sizeof(name), "h%zu:1", i);
		if (ks_fleet_loads_put(&l, name, 1))
			break;
	}
	CHECK_EQ(i, KS_BALANCE_HOSTS);
	CHECK_EQ(ks_fleet_loads_put(&l, "one-more:1", 1), -ENOSPC);
	kt_end();

	/* a schema-2 agent's load document wins over the hosts/ entry it
	 * writes for old readers, and each watch's reset forgets only its
	 * own figures */
	kt_begin("balance_fleet_loads_prefer_load_documents");
	ks_fleet_loads_clear(&l);
	CHECK_EQ(ks_fleet_loads_put_from(&l, "old:1", 100, KS_LOAD_FROM_HOSTS),
		 0);
	CHECK_EQ(ks_fleet_loads_put_from(&l, "new:1", 300, KS_LOAD_FROM_LOAD),
		 0);
	CHECK_EQ(ks_fleet_loads_put_from(&l, "new:1", 5, KS_LOAD_FROM_HOSTS),
		 0);
	m = ks_fleet_loads_mean(&l, "old:1", 0, &n);
	CHECK(n == 2 && m == 200, "hosts/ replaced a load figure: %zu, %f", n,
	      m);
	ks_fleet_loads_del_from(&l, "new:1", KS_LOAD_FROM_HOSTS);
	CHECK_EQ(l.n, 2);
	/* an agent upgraded in place: its load document takes over */
	CHECK_EQ(ks_fleet_loads_put_from(&l, "old:1", 500, KS_LOAD_FROM_LOAD),
		 0);
	ks_fleet_loads_clear_from(&l, KS_LOAD_FROM_HOSTS);
	m = ks_fleet_loads_mean(&l, "x:1", 0, &n);
	CHECK(n == 3 && m == 800.0 / 3, "after a hosts/ reset: %zu, %f", n, m);
	ks_fleet_loads_clear_from(&l, KS_LOAD_FROM_LOAD);
	CHECK_EQ(l.n, 0);
	kt_end();
}

/*
 * 8 shards, each with 40 keys at 10 reads/s and one at 80; shard 0 has
 * 12 more keys at 30/s: 1.55x the mean, no key of it above the hot
 * threshold (100/s). Each interval every shard's agent sees its keys'
 * rates, the mean of every shard's served reads, and decides; an armed
 * key keeps 1/64 of its reads on its owner.
 */
#define SHARDS 8
#define KEYS   53

struct shard {
	struct ks_hot_table t;
	struct ks_balance b;
	char key[KEYS][16];
	double rate[KEYS];
	unsigned n;
	double served;
};

static void fleet_init(struct shard *sh, double over)
{
	unsigned i, k;

	for (i = 0; i < SHARDS; i++) {
		memset(&sh[i], 0, sizeof(sh[i]));
		ks_hot_init(&sh[i].t);
		sh[i].b.over = over;
		for (k = 0; k < 41 + (i == 0) * 12; k++) {
			snprintf(sh[i].key[k], sizeof(sh[i].key[k]), "s%uk%u",
				 i, k);
			sh[i].rate[k] = k < 40 ? 10 : k == 40 ? 80 : 30;
		}
		sh[i].n = k;
	}
}

static double served(const struct shard *s, double share)
{
	const struct ks_hot_entry *e;
	double sum = 0;
	unsigned k;

	for (k = 0; k < s->n; k++) {
		e = ks_hot_find(&s->t, (const __u8 *)s->key[k],
				strlen(s->key[k]));
		sum += s->rate[k] * (e && e->read_hot ? share : 1);
	}
	return sum;
}

/* One interval of the whole fleet; the busiest shard over the mean. */
static double fleet_step(struct shard *sh, const struct ks_hot_policy *p,
			 __u32 seq, double *thr0)
{
	struct ks_hot_sample s[KEYS];
	struct ks_hot_policy q;
	double mean = 0, busiest = 0, share = 1.0 / 64, thr;
	unsigned i, k;

	for (i = 0; i < SHARDS; i++)
		mean += sh[i].served = served(&sh[i], share);
	mean /= SHARDS;
	for (i = 0; i < SHARDS; i++) {
		for (k = 0; k < sh[i].n; k++)
			s[k] = (struct ks_hot_sample){
				.key = (const __u8 *)sh[i].key[k],
				.len = (__u16)strlen(sh[i].key[k]),
				.hash = ut_hash(sh[i].key[k]),
				.reads_ps = sh[i].rate[k],
			};
		thr = ks_balance_step(&sh[i].b, p, sh[i].served, mean, SHARDS,
				      &sh[i].t, s, sh[i].n, share);
		if (!i)
			*thr0 = thr;
		ks_balance_policy(p, thr, &q);
		ks_hot_update(&sh[i].t, &q, s, sh[i].n, seq);
		busiest = sh[i].served > busiest ? sh[i].served : busiest;
	}
	return busiest / mean;
}

static void simulated_fleet(void)
{
	static struct shard on[SHARDS], off[SHARDS];
	struct ks_hot_policy p;
	double r_on = 0, r_off = 0, thr, lo = 1e9;
	unsigned long long entered = 0, left = 0, changes = 0;
	unsigned i;
	__u32 seq;

	kt_begin("balance_busiest_shard_near_the_mean");
	ks_hot_policy_default(&p);
	p.shard_capacity_ops = 1000; /* threshold 100/s */
	p.max_copies = 5;
	fleet_init(on, 0.10);
	fleet_init(off, 0); /* the control: --balance 0 */
	for (seq = 1; seq <= 60; seq++) {
		r_on = fleet_step(on, &p, seq, &thr);
		r_off = fleet_step(off, &p, seq, &thr);
		if (seq == 40) {
			entered = on[0].t.entered;
			left = on[0].t.left;
			changes = on[0].b.lowered + on[0].b.raised;
		}
	}
	fleet_step(on, &p, 61, &thr);
	CHECK(r_off > 1.5, "control: busiest/mean %.3f without balance", r_off);
	CHECK(r_on <= 1.10, "balance: busiest/mean %.3f", r_on);
	CHECK(thr >= 100.0 / KS_BALANCE_FLOOR && thr < 100,
	      "shard 0's threshold %.1f", thr);
	CHECK(on[0].t.entered == entered && on[0].t.left == left &&
		      on[0].b.lowered + on[0].b.raised == changes,
	      "keys flap after it settled: entered %llu->%llu, left %llu->%llu",
	      entered, (unsigned long long)on[0].t.entered, left,
	      (unsigned long long)on[0].t.left);
	for (i = 1; i < SHARDS; i++)
		lo = on[i].b.lowered < lo ? (double)on[i].b.lowered : lo;
	CHECK(lo == 0 && on[1].b.thr == 0,
	      "a shard at the mean lowered its threshold");
	/* the sale ends: shard 0's extra keys are no longer read, its
	 * threshold goes back */
	for (i = 41; i < on[0].n; i++)
		on[0].rate[i] = 0;
	for (seq = 62; seq < 140; seq++)
		fleet_step(on, &p, seq, &thr);
	CHECK(thr == 100 && on[0].b.thr == 0,
	      "after the load left, the threshold %.1f", thr);
	kt_end();
}

/* 40 keys k0..k39 at 1 to 40 reads/s, every one under a threshold of
 * 100/s */
static void ramp(struct ks_hot_sample s[40], char keys[40][8])
{
	unsigned i;

	for (i = 0; i < 40; i++) {
		snprintf(keys[i], 8, "k%u", i);
		s[i] = (struct ks_hot_sample){ .key = (const __u8 *)keys[i],
					       .len = (__u16)strlen(keys[i]),
					       .hash = ut_hash(keys[i]),
					       .reads_ps = 1 + i };
	}
}

/* A mean that moves by more than KS_BALANCE_STABLE holds every step for
 * KS_BALANCE_SETTLE intervals; a step down halves at most, and the
 * threshold never goes under 1/KS_BALANCE_FLOOR of the policy's. */
static void steps_and_guards(void)
{
	static struct ks_hot_table t;
	struct ks_hot_sample s[40];
	struct ks_hot_policy p;
	struct ks_balance b = { .over = 0.1 };
	char keys[40][8];
	double thr = 0, prev = 100;
	unsigned i, steps = 0;

	kt_begin("balance_steps_and_guards");
	ks_hot_policy_default(&p);
	p.shard_capacity_ops = 1000;
	ks_hot_init(&t);
	ramp(s, keys);
	/* a shard far over the mean, its keys all under the threshold (1 to
	 * 40 reads/s): down in halving steps, settling between them, to the
	 * coldest key over the floor; none colder lets any more in */
	for (i = 0; i < 40; i++) {
		thr = ks_balance_step(&b, &p, 5000, 100, 8, &t, s, 40, 0);
		CHECK(thr >= prev * KS_BALANCE_STEP &&
			      thr >= 100.0 / KS_BALANCE_FLOOR,
		      "step %u: %.2f after %.2f", i, thr, prev);
		steps += thr != prev;
		prev = thr;
	}
	CHECK(thr == 13, "at the coldest key over the floor: %.2f", thr);
	CHECK(steps == 3, "%u steps from 100 to 13 (want 3)", steps);
	/* a moving mean: nothing for the settle period */
	b = (struct ks_balance){ .over = 0.1 };
	for (i = 0; i < 2 + KS_BALANCE_SETTLE; i++)
		ks_balance_step(&b, &p, 100, 100, 8, &t, s, 40, 0);
	thr = ks_balance_step(&b, &p, 5000, 200, 8, &t, s, 40, 0);
	CHECK(thr == 100, "stepped while the mean doubled: %.1f", thr);
	/* off, or one shard: the policy's threshold */
	b = (struct ks_balance){ .over = 0 };
	CHECK(ks_balance_step(&b, &p, 5000, 100, 8, &t, s, 40, 0) == 100,
	      "off");
	b = (struct ks_balance){ .over = 0.1 };
	CHECK(ks_balance_step(&b, &p, 5000, 5000, 1, &t, s, 40, 0) == 100,
	      "one shard");
	kt_end();
}

/*
 * --balance X lets a shard carry up to (1 + X) times the fleet's mean
 * before it lowers its threshold: one at 1.05x the mean with X 0.10 keeps
 * the policy's, and one lowered goes back to it once within X / 2. A
 * lowered threshold lets more keys in, but sizes their copies and judges
 * writes as the policy does: more keys steered, not more copies of each.
 */
static void margin_and_policy(void)
{
	static struct ks_hot_table t;
	struct ks_hot_sample s[40];
	struct ks_hot_policy p, q;
	struct ks_balance b = { .over = 0.1 };
	char keys[40][8];
	double thr;
	unsigned i;

	kt_begin("balance_within_margin_and_lowered_policy");
	ks_hot_policy_default(&p);
	p.shard_capacity_ops = 1000;
	p.max_copies = 8;
	ks_hot_init(&t);
	ramp(s, keys);
	for (i = 0; i < 10 * (KS_BALANCE_SETTLE + 1); i++) {
		thr = ks_balance_step(&b, &p, 105, 100, 8, &t, s, 40, 0);
		CHECK(thr == 100, "interval %u at 1.05x the mean: %.1f", i,
		      thr);
	}
	CHECK_EQ(b.lowered, 0);
	/* far over: lowered; then back within half the margin (1.02x, no
	 * hot key to let go): raised in steps to the policy's again */
	for (i = 0; i < 10 * (KS_BALANCE_SETTLE + 1); i++)
		thr = ks_balance_step(&b, &p, 5000, 100, 8, &t, s, 40, 0);
	CHECK(thr < 100 && b.lowered, "not lowered at 50x the mean: %.1f", thr);
	for (i = 0; i < 200 && thr < 100; i++)
		thr = ks_balance_step(&b, &p, 102, 100, 8, &t, s, 40, 0);
	CHECK(thr == 100 && b.thr == 0 && b.raised,
	      "at 1.02x the mean the threshold stays %.1f (%llu raises)", thr,
	      b.raised);
	ks_balance_policy(&p, 50, &q);
	CHECK(ks_hot_read_threshold(&q) == 50, "read threshold %.1f",
	      ks_hot_read_threshold(&q));
	CHECK(ks_hot_write_threshold(&q) == ks_hot_write_threshold(&p),
	      "write threshold %.1f", ks_hot_write_threshold(&q));
	for (i = 1; i <= 8; i++)
		CHECK(ks_hot_copies_for(&q, 100.0 * i) ==
			      ks_hot_copies_for(&p, 100.0 * i),
		      "at %u00/s: %u copies lowered, %u not", i,
		      ks_hot_copies_for(&q, 100.0 * i),
		      ks_hot_copies_for(&p, 100.0 * i));
	/* at or over the policy's threshold: the policy's own */
	ks_balance_policy(&p, 200, &q);
	CHECK(ks_hot_read_threshold(&q) == 100 &&
		      ks_hot_write_threshold(&q) == 100 &&
		      ks_hot_copies_for(&q, 800) == ks_hot_copies_for(&p, 800),
	      "over the threshold: read %.1f write %.1f",
	      ks_hot_read_threshold(&q), ks_hot_write_threshold(&q));
	kt_end();
}

void test_balance(void)
{
	loads_table();
	simulated_fleet();
	steps_and_guards();
	margin_and_policy();
}
