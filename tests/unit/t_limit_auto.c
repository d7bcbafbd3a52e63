// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The automatic cap (user/core/limit_auto.c): which keys it caps (those
 * the hot-key policy, run for real here, neither copies nor splits), that
 * explicit rules win, its hysteresis, and its place in the datapath's
 * table (user/core/limits.c) when the table is full. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ktest.h"
#include "client/limit.h"
#include "client/view.h"
#include "core/fleet_doc.h"
#include "core/fleet_view.h"
#include "core/host_doc.h"
#include "core/hot_doc.h"
#include "core/hotkeys.h"
#include "core/limits.h"
#include "core/limit_auto.h"
#include "unit.h"

/* capacity 1000, F 0.5: the line is 500 reads+writes/s */
#define CAP  1000.0
#define FRAC 0.5

static struct ks_top_entry topr(const char *key, double reads, double writes)
{
	struct ks_top_entry t = {};

	t.len = (__u16)strlen(key);
	memcpy(t.key, key, t.len);
	t.hash = ut_hash(key);
	t.reads_mps = (__u64)(reads * 1000);
	t.writes_mps = (__u64)(writes * 1000);
	return t;
}

static int parse(struct ks_hot_rules *r, const char *text)
{
	char err[128];

	return ks_hot_rules_parse(r, text, strlen(text), "pins", err,
				  sizeof(err));
}

static const struct ks_auto_key *afind(const struct ks_limit_auto *a,
				       const char *key)
{
	return ks_limit_auto_find(a, (const __u8 *)key, strlen(key));
}

static int capped(const struct ks_limit_auto *a, const char *key)
{
	const struct ks_auto_key *k = afind(a, key);

	return k && k->capped;
}

static void option_check(void)
{
	char err[256] = "";

	kt_begin("limit_auto_option");
	CHECK(!ks_limit_auto_check(0.5, 1, err, sizeof(err)), "0.5: %s", err);
	CHECK(!ks_limit_auto_check(1, 1, err, sizeof(err)), "1: %s", err);
	CHECK(ks_limit_auto_check(0, 1, err, sizeof(err)) == -EINVAL, "0");
	CHECK(strstr(err, "above 0 and at most 1") != NULL, "%s", err);
	CHECK(ks_limit_auto_check(1.5, 1, err, sizeof(err)) == -EINVAL, "1.5");
	CHECK(ks_limit_auto_check(-0.1, 1, err, sizeof(err)) == -EINVAL,
	      "-0.1");
	CHECK(ks_limit_auto_check(0.5, 0, err, sizeof(err)) == -EINVAL,
	      "no capacity");
	CHECK(strstr(err, "needs --shard-capacity") != NULL, "%s", err);
	{
		static struct ks_limit_auto a;

		ks_limit_auto_init(&a, 0.333, 1000);
		CHECK(a.rate == 333 && a.line > 332.9 && a.line < 333.1,
		      "rate %u line %f", a.rate, a.line);
	}
	kt_end();
}

/* The policy's verdict of single entries. */
static void remedy(void)
{
	struct ks_hot_entry e;

	kt_begin("limit_auto_remedy");
	CHECK_EQ(ks_limit_auto_remedy(NULL), 0);
	memset(&e, 0, sizeof(e));
	e.read_hot = 1;
	e.copies = 3;
	CHECK_EQ(ks_limit_auto_remedy(&e), KS_AUTO_COPIES);
	e.copies = 1; /* no replicas: nowhere to copy to */
	CHECK_EQ(ks_limit_auto_remedy(&e), 0);
	e.copies = 3;
	e.write_hot = 1; /* its writes keep the copies dirty */
	e.subkeys = 4;
	CHECK_EQ(ks_limit_auto_remedy(&e), 0);
	e.split_ps = 800; /* the split in effect takes its writes */
	CHECK_EQ(ks_limit_auto_remedy(&e), KS_AUTO_SPLIT);
	e.read_hot = 0;
	e.subkeys = 1;
	CHECK_EQ(ks_limit_auto_remedy(&e), 0);
	kt_end();
}

/*
 * The real policy (capacity 1000, hot at 0.1, 3 copies) and the cap at
 * 0.5: per interval, the ranked keys go to the hot-key table first, then
 * the cap, as 'agent run' does.
 */
struct world {
	struct ks_hot_table t;
	struct ks_hot_policy p;
	struct ks_limit_auto a;
	struct ks_hot_rules r;
	__u32 seq;
};

static void world_init(struct world *w)
{
	memset(w, 0, sizeof(*w));
	ks_hot_init(&w->t);
	ks_hot_policy_default(&w->p);
	w->p.shard_capacity_ops = CAP;
	w->p.max_copies = 3;
	ks_limit_auto_init(&w->a, FRAC, CAP);
}

/* dp[0..ndp): what the datapath measured of the keys in its slots */
static size_t step_dp(struct world *w, const struct ks_top_entry *top, size_t n,
		      const struct ks_auto_dp *dp, size_t ndp)
{
	struct ks_hot_sample s[16];
	size_t i;

	for (i = 0; i < n; i++)
		ks_hot_sample_from_top(&top[i], &s[i]);
	ks_hot_update(&w->t, &w->p, s, n, ++w->seq);
	return ks_limit_auto_update(&w->a, &w->r, &w->t, top, n, dp, ndp);
}

static size_t step(struct world *w, const struct ks_top_entry *top, size_t n)
{
	return step_dp(w, top, n, NULL, 0);
}

/* A key's slot counts over the interval (steered, owner, TCP). */
static struct ks_auto_dp dpr(const char *key, double steered, double owner,
			     double tcp)
{
	return (struct ks_auto_dp){ .key = (const __u8 *)key,
				    .len = (__u16)strlen(key),
				    .hash = ut_hash(key),
				    .steered_ps = steered,
				    .owner_ps = owner,
				    .tcp_ps = tcp };
}

static void which_keys(void)
{
	static struct world w;
	struct ks_top_entry top[6];
	struct ks_auto_dp dp;
	unsigned kc = 1; /* the counter's K as the table gives it */
	int i, capped_at = 0;

	kt_begin("limit_auto_which_keys");
	world_init(&w);
	for (i = 1; i <= 6; i++) {
		/* copied: read-hot, 3 copies, no writes */
		top[0] = topr("copy", 2000, 0);
		/* read-hot, but write-hot too: its copies stay dirty */
		top[1] = topr("written", 2000, 150);
		/* a write-hot key written by set: never split */
		top[2] = topr("setkey", 0, 900);
		/* a counter libkeysteer splits once the table says K: from
		 * the second interval its base takes 1/K of the writes */
		top[3] = topr("counter", 0, i == 1 ? 900 : 900.0 / kc);
		/* under the line */
		top[4] = topr("small", 450, 0);
		/* copy's copies armed once the table said so: from the
		 * second interval the datapath sends its gets to them */
		dp = dpr("copy", 1950, 50, 0);
		step_dp(&w, top, 5, &dp, i > 1);
		if (i == 1) {
			const struct ks_hot_entry *c = ks_hot_find(
				&w.t, (const __u8 *)"counter", 7);

			/* the counter's K, for the intervals after */
			CHECK(c && c->write_hot && c->subkeys >= 2,
			      "counter not write-hot");
			if (c)
				kc = c->subkeys;
		}
		if (!capped_at && capped(&w.a, "written"))
			capped_at = i;
	}
	CHECK_EQ(capped_at, KS_LIMIT_AUTO_ENTER);
	CHECK(capped(&w.a, "written"), "read-hot and write-hot not capped");
	CHECK(capped(&w.a, "setkey"), "write-hot set key not capped");
	CHECK(!afind(&w.a, "copy"), "copied key followed");
	CHECK(!capped(&w.a, "counter"), "split counter capped");
	CHECK(!afind(&w.a, "small"), "key under the line followed");
	CHECK_EQ(w.a.capped, 2);
	{
		const struct ks_hot_entry *c = ks_hot_find(
			&w.t, (const __u8 *)"counter", 7);

		CHECK(c && c->split_ps > 0,
		      "the counter's split not in effect");
	}
	/* a key the table does not hold (under its thresholds, say): no
	 * copy, no split: capped on its load alone */
	{
		static struct ks_limit_auto a;
		struct ks_top_entry k = topr("plain", 300, 250);

		ks_limit_auto_init(&a, FRAC, CAP);
		for (i = 0; i < KS_LIMIT_AUTO_ENTER; i++)
			ks_limit_auto_update(&a, NULL, NULL, &k, 1, NULL, 0);
		CHECK(capped(&a, "plain"),
		      "a key outside the table not capped");
	}
	kt_end();
}

/* Hysteresis: in, out, and no flapping either way. */
static void hysteresis(void)
{
	static struct ks_limit_auto a;
	struct ks_top_entry k;
	int i, changes = 0;

	kt_begin("limit_auto_hysteresis");
	ks_limit_auto_init(&a, FRAC, CAP);
	/* a burst of two intervals is no runaway */
	for (i = 0; i < 10; i++) {
		k = topr("burst", i % 4 < 2 ? 5000 : 0, 0);
		changes += (int)ks_limit_auto_update(&a, NULL, NULL, &k, 1,
						     NULL, 0);
	}
	CHECK_EQ(changes, 0);
	CHECK(!capped(&a, "burst"), "2-interval burst capped");
	/* around the line, 1.05 and 0.95 in turn: never 3 in a row over */
	for (i = 0; i < 100; i++) {
		k = topr("edge", i % 2 ? 475 : 525, 0);
		changes += (int)ks_limit_auto_update(&a, NULL, NULL, &k, 1,
						     NULL, 0);
	}
	CHECK_EQ(changes, 0);
	/* capped, then 1.05 and 0.65 in turn: never 5 in a row under 0.7 */
	for (i = 0; i < 3; i++) {
		k = topr("edge", 600, 0);
		changes += (int)ks_limit_auto_update(&a, NULL, NULL, &k, 1,
						     NULL, 0);
	}
	CHECK_EQ(changes, 1);
	for (i = 0; i < 100; i++) {
		k = topr("edge", i % 2 ? 325 : 525, 0);
		changes += (int)ks_limit_auto_update(&a, NULL, NULL, &k, 1,
						     NULL, 0);
	}
	CHECK_EQ(changes, 1);
	CHECK(capped(&a, "edge"), "released while flapping");
	/* between 0.7 and 1 of the line (what a capped key's libkeysteer
	 * clients let through): stays */
	for (i = 0; i < 50; i++) {
		k = topr("edge", 400, 0);
		changes += (int)ks_limit_auto_update(&a, NULL, NULL, &k, 1,
						     NULL, 0);
	}
	CHECK(capped(&a, "edge"), "released between 0.7 and 1 of the line");
	/* under 0.7 for 5 intervals: released at the fifth */
	for (i = 1; i <= KS_LIMIT_AUTO_LEAVE; i++) {
		k = topr("edge", 300, 0);
		ks_limit_auto_update(&a, NULL, NULL, &k, 1, NULL, 0);
		CHECK(capped(&a, "edge") == (i < KS_LIMIT_AUTO_LEAVE),
		      "interval %d under", i);
	}
	CHECK(!afind(&a, "edge"), "released key still followed");
	CHECK(a.caps == 1 && a.releases == 1 && a.capped == 0,
	      "caps %llu releases %llu", (unsigned long long)a.caps,
	      (unsigned long long)a.releases);
	/* a capped key that leaves the ranked keys is under: released */
	for (i = 0; i < 3; i++) {
		k = topr("gone", 900, 0);
		ks_limit_auto_update(&a, NULL, NULL, &k, 1, NULL, 0);
	}
	CHECK(capped(&a, "gone"), "not capped");
	for (i = 0; i < KS_LIMIT_AUTO_LEAVE; i++)
		ks_limit_auto_update(&a, NULL, NULL, NULL, 0, NULL, 0);
	CHECK(!afind(&a, "gone"), "an unranked key kept its cap");
	kt_end();
}

/* Explicit rules win, in the cap and in the datapath's table. */
static void explicit_wins(void)
{
	static struct ks_limit_auto a;
	static struct ks_limit_set s;
	static struct ks_hot_rules r, none;
	struct ks_limit_want wants[8];
	struct ks_top_entry k[2];
	const struct ks_limit_entry *e;
	size_t nw;
	int i;

	kt_begin("limit_auto_explicit_wins");
	ks_limit_auto_init(&a, FRAC, CAP);
	ks_limits_init(&s);
	parse(&r, "limit ruled:1 50/s\nlimit pre:* 80/s\n");
	for (i = 0; i < 5; i++) {
		k[0] = topr("ruled:1", 5000, 0);
		k[1] = topr("pre:x", 5000, 0);
		ks_limit_auto_update(&a, &r, NULL, k, 2, NULL, 0);
	}
	CHECK(!afind(&a, "ruled:1") && !afind(&a, "pre:x"),
	      "a key a rule names followed by the cap");
	/* capped first, then a rule names it: the rule's, at its rate */
	for (i = 0; i < 3; i++) {
		k[0] = topr("late:1", 5000, 0);
		ks_limit_auto_update(&a, &none, NULL, k, 1, NULL, 0);
	}
	CHECK(capped(&a, "late:1"), "not capped");
	nw = ks_limit_auto_wants(&a, wants, 8);
	CHECK_EQ(nw, 1);
	CHECK(wants[0].rate == 500, "cap %u", wants[0].rate);
	CHECK_EQ(ks_limits_plan(&s, &none, k, 1, 1, wants, nw), 1);
	e = ut_limit_find(&s, "late:1");
	CHECK(e && e->automatic && e->rate == 500 && s.nauto == 1,
	      "automatic entry");
	ks_limits_synced(&s);
	parse(&r, "limit late:* 70/s\n");
	/* the plan sees the rule before the cap forgets the key */
	CHECK_EQ(ks_limits_plan(&s, &r, k, 1, 2, wants, nw), 1);
	e = ut_limit_find(&s, "late:1");
	CHECK(e && !e->automatic && e->rate == 70 && e->rule_len == 5 &&
		      s.nauto == 0 && s.live == 1,
	      "the rule did not take the key over");
	ks_limits_synced(&s);
	ks_limit_auto_update(&a, &r, NULL, k, 1, NULL, 0);
	CHECK(!afind(&a, "late:1"), "the cap kept a key a rule names");
	CHECK(a.capped == 0 && a.releases == 1, "released");
	CHECK_EQ(ks_limit_auto_wants(&a, wants, 8), 0);
	/* an automatic want of a key a rule names is passed over */
	wants[0] = (struct ks_limit_want){ .key = (const __u8 *)"late:1",
					   .len = 6,
					   .rate = 500 };
	CHECK_EQ(ks_limits_plan(&s, &r, k, 1, 3, wants, 1), 0);
	e = ut_limit_find(&s, "late:1");
	CHECK(e && !e->automatic && e->rate == 70, "the rule lost the key");
	/* the cap no longer wanted: its entry goes */
	parse(&r, "");
	ks_limits_init(&s);
	CHECK_EQ(ks_limits_plan(&s, &r, NULL, 0, 1, wants, 1), 1);
	ks_limits_synced(&s);
	CHECK_EQ(ks_limits_plan(&s, &r, NULL, 0, 2, NULL, 0), 1);
	CHECK(s.live == 0 && s.nauto == 0, "live %zu nauto %zu", s.live,
	      s.nauto);
	kt_end();
}

/* The datapath's table full: rules first, the cap in what is left. */
static void table_full(void)
{
	static struct ks_limit_set s;
	static struct ks_hot_rules r;
	static struct ks_top_entry t[KS_LIMIT_SLOTS + 4];
	static char keys[KS_LIMIT_SLOTS + 4][16];
	struct ks_limit_want w[4];
	const struct ks_limit_entry *e;
	size_t i, id;

	kt_begin("limit_auto_table_full");
	ks_limits_init(&s);
	for (i = 0; i < 4; i++) {
		snprintf(keys[i], sizeof(keys[i]), "auto%zu", i);
		w[i] = (struct ks_limit_want){ .key = (const __u8 *)keys[i],
					       .len = (__u16)strlen(keys[i]),
					       .rate = 500,
					       .residual_ps = 1000.0 + i };
	}
	/* 4 automatic caps, then the rules' keys fill every other row */
	CHECK_EQ(ks_limits_plan(&s, &r, NULL, 0, 1, w, 4), 4);
	ks_limits_synced(&s);
	parse(&r, "limit k* 5/s\n");
	for (i = 0; i < KS_LIMIT_SLOTS - 4; i++) {
		snprintf(keys[4 + i], sizeof(keys[0]), "k%zu", i);
		t[i] = topr(keys[4 + i], 10, 0);
	}
	CHECK_EQ(ks_limits_plan(&s, &r, t, KS_LIMIT_SLOTS - 4, 2, w, 4),
		 KS_LIMIT_SLOTS - 4);
	CHECK(s.live == KS_LIMIT_SLOTS && s.nauto == 4, "live %zu auto %zu",
	      s.live, s.nauto);
	ks_limits_synced(&s);
	/* one more rule key: it takes the row of the lowest residual */
	id = (size_t)(ut_limit_find(&s, "auto0") - s.e);
	t[KS_LIMIT_SLOTS - 4] = topr("k-new", 10, 0);
	CHECK_EQ(ks_limits_plan(&s, &r, t, KS_LIMIT_SLOTS - 3, 3, w, 4), 1);
	e = ut_limit_find(&s, "k-new");
	CHECK(e && !e->automatic && (size_t)(e - s.e) == id,
	      "the rule's key did not take auto0's row");
	CHECK(e && e->fresh && e->old_hash == ut_hash("auto0"),
	      "auto0's entry not to be deleted");
	CHECK(!ut_limit_find(&s, "auto0"), "auto0 still limited");
	CHECK(s.auto_evicted == 1 && s.nauto == 3 && s.live == KS_LIMIT_SLOTS,
	      "evicted %llu nauto %zu live %zu",
	      (unsigned long long)s.auto_evicted, s.nauto, s.live);
	/* the evicted cap finds no row: counted, never a rule's row */
	CHECK(s.auto_no_room >= 1, "no_room %llu",
	      (unsigned long long)s.auto_no_room);
	ks_limits_synced(&s);
	CHECK(s.e[id].old_hash == 0, "old hash kept after the sync");
	/* the table full of rules: a new cap gets no row, no rule is moved */
	{
		__u64 before = s.auto_no_room;
		struct ks_limit_want x = { .key = (const __u8 *)"fresh",
					   .len = 5,
					   .rate = 500,
					   .residual_ps = 1e9 };

		CHECK_EQ(
			ks_limits_plan(&s, &r, t, KS_LIMIT_SLOTS - 3, 4, &x, 1),
			3); /* auto1..3 go: no longer wanted */
		ks_limits_synced(&s);
		/* rows freed this interval are free after the sync */
		CHECK(!ut_limit_find(&s, "fresh"),
		      "a cap in a row not yet free");
		CHECK(s.auto_no_room == before + 1, "no_room not counted");
		/* fill the freed rows with rules' keys, then ask again */
		for (i = 0; i < 3; i++) {
			snprintf(keys[KS_LIMIT_SLOTS + i], sizeof(keys[0]),
				 "kk%zu", i);
			t[KS_LIMIT_SLOTS - 3 + i] = topr(
				keys[KS_LIMIT_SLOTS + i], 10, 0);
		}
		ks_limits_plan(&s, &r, t, KS_LIMIT_SLOTS, 5, NULL, 0);
		ks_limits_synced(&s);
		CHECK(s.live == KS_LIMIT_SLOTS && s.nauto == 0, "live %zu",
		      s.live);
		CHECK_EQ(ks_limits_plan(&s, &r, t, KS_LIMIT_SLOTS, 6, &x, 1),
			 0);
		CHECK(!ut_limit_find(&s, "fresh") &&
			      s.auto_no_room == before + 2,
		      "a full table of rules gave the cap a row");
	}
	kt_end();
}

/* Report rows carry the flag. */
static void info_flag(void)
{
	static struct ks_limit_set s;
	static struct ks_hot_rules r;
	struct ks_limit_want w = { .key = (const __u8 *)"a:1",
				   .len = 3,
				   .rate = 500,
				   .residual_ps = 900 };
	struct ks_limit_info info;
	const struct ks_limit_entry *e;

	kt_begin("limit_auto_report_row");
	ks_limits_init(&s);
	parse(&r, "limit b:1 9/s\n");
	ks_limits_plan(&s, &r, NULL, 0, 1, &w, 1);
	e = ut_limit_find(&s, "a:1");
	CHECK(e != NULL, "no entry");
	if (e) {
		ks_limits_info(&s, (__u32)(e - s.e), &info);
		CHECK(info.automatic == 1 && info.rate == 500 &&
			      info.burst == 50,
		      "auto row");
	}
	e = ut_limit_find(&s, "b:1");
	if (e) {
		ks_limits_info(&s, (__u32)(e - s.e), &info);
		CHECK(info.automatic == 0 && info.rate == 9, "rule row");
	}
	kt_end();
}

/* The cap in a hot/ entry: written, read back, and a client's view
 * limits the key it names and no other. */
static char *cap_doc(const char *key, __u32 rate, int has_key)
{
	struct ks_hot_doc d;

	memset(&d, 0, sizeof(d));
	d.len = (__u16)strlen(key);
	memcpy(d.key, key, d.len);
	d.has_key = (__u8)has_key;
	d.hash = ut_hash(key);
	d.copies = 1;
	d.subkeys = 1;
	d.state = KS_HDS_COUNTING;
	d.limit_rate = rate;
	snprintf(d.owner, sizeof(d.owner), "198.18.0.2:11211");
	return ks_hot_doc_encode(&d);
}

static void hot_entry(void)
{
	static struct ksc_view v;
	static struct ksc_limits l;
	static struct ks_hot_rules none;
	struct ks_hot_doc d;
	struct ks_hot_rule capr;
	char err[256], key[96], *doc;
	__u64 h = ut_hash("run:1");
	int i, allowed = 0;

	kt_begin("limit_auto_hot_entry_for_clients");
	doc = cap_doc("run:1", 400, 1);
	CHECK(doc && strstr(doc, "\"limit_per_s\":400"), "%s",
	      doc ? doc : "(no memory)");
	CHECK(doc && !ks_hot_doc_decode(doc, strlen(doc), h, &d, err,
					sizeof(err)),
	      "%s", err);
	CHECK(d.limit_rate == 400 && ks_hot_doc_for_clients(&d),
	      "read back: %u", d.limit_rate);
	free(doc);
	/* no cap: no field (a reader before the cap reads what it did) */
	doc = cap_doc("run:1", 0, 1);
	CHECK(doc && !strstr(doc, "limit_per_s"), "%s",
	      doc ? doc : "(no memory)");
	free(doc);
	doc = cap_doc("run:1", KS_LIMIT_RATE_MAX + 1, 1);
	CHECK(doc && ks_hot_doc_decode(doc, strlen(doc), h, &d, err,
				       sizeof(err)) == -EINVAL,
	      "a cap over the most a rule may name read");
	free(doc);

	ksc_view_init(&v, "t");
	ks_hot_doc_key("t", h, key, sizeof(key));
	doc = cap_doc("run:1", 400, 1);
	CHECK(ksc_view_put(&v, key, strlen(key), doc, strlen(doc), 5) == 0,
	      "%s", v.why);
	free(doc);
	CHECK_EQ(ksc_view_auto_cap(&v, "run:1", 5, h), 400);
	/* the same hash, other bytes: never limited */
	CHECK_EQ(ksc_view_auto_cap(&v, "run:2", 5, h), 0);
	CHECK_EQ(ksc_view_auto_cap(&v, "run:2", 5, ut_hash("run:2")), 0);
	/* the bucket of the cap survives a new rule set */
	ksc_limits_init(&l, 1);
	memset(&capr, 0, sizeof(capr));
	capr.type = KS_RULE_LIMIT_AUTO;
	capr.len = 5;
	capr.count = 400;
	memcpy(capr.key, "run:1", 5);
	for (i = 0; i < 100; i++)
		allowed += ksc_limit_take_rule(&l, &capr, "run:1", 5, h, 1000,
					       0) == KSC_LIM_ALLOWED;
	CHECK_EQ(allowed, 40); /* its burst, a tenth of a second's worth */
	ksc_limits_prune(&l, &none);
	CHECK(ksc_limit_find(&l, "run:1", 5, h) != NULL,
	      "the cap's bucket pruned with the rules");
	CHECK(ksc_limit_take_rule(&l, &capr, "run:1", 5, h, 1000, 0) ==
		      KSC_LIM_REFUSED,
	      "the drained bucket restarted");
	ksc_limits_free(&l);
	/* the cap lifted: the entry without it */
	doc = cap_doc("run:1", 0, 1);
	ksc_view_put(&v, key, strlen(key), doc, strlen(doc), 6);
	free(doc);
	CHECK(ksc_view_auto_cap(&v, "run:1", 5, h) == 0 && v.ncaps == 0,
	      "the lifted cap kept");
	/* a hash-only entry names no key: it limits nothing */
	doc = cap_doc("run:1", 400, 0);
	ksc_view_put(&v, key, strlen(key), doc, strlen(doc), 7);
	free(doc);
	CHECK_EQ(ksc_view_auto_cap(&v, "run:1", 5, h), 0);
	/* back, then the entry deleted: gone with it */
	doc = cap_doc("run:1", 300, 1);
	ksc_view_put(&v, key, strlen(key), doc, strlen(doc), 8);
	free(doc);
	CHECK_EQ(ksc_view_auto_cap(&v, "run:1", 5, h), 300);
	ksc_view_del(&v, key, strlen(key), 9, 1000);
	CHECK(ksc_view_auto_cap(&v, "run:1", 5, h) == 0 && v.ncaps == 0,
	      "a deleted entry's cap kept");
	ksc_view_free(&v);
	kt_end();
}

/* The load document marks the cap's keys "auto"; 'agent fleet' reads
 * it back; a rule's key carries no such field (documents as before). */
static void load_doc(void)
{
	struct ks_host_doc *d = calloc(1, sizeof(*d));
	struct ks_fleet_host *h = calloc(1, sizeof(*h));
	char *doc = NULL;

	kt_begin("limit_auto_load_doc_marks_auto");
	CHECK(d && h, "memory");
	if (!d || !h)
		goto out;
	snprintf(d->self, sizeof(d->self), "a:11211");
	snprintf(d->agent_version, sizeof(d->agent_version), "t");
	d->interval_ms = 1000;
	d->nlimits = 2;
	d->limits[0].hash = ut_hash("runaway:1");
	snprintf(d->limits[0].key, sizeof(d->limits[0].key), "runaway:1");
	d->limits[0].rate = 400;
	d->limits[0].refused_ps = 900;
	d->limits[0].automatic = 1;
	d->limits[1].hash = ut_hash("rule:1");
	snprintf(d->limits[1].key, sizeof(d->limits[1].key), "rule:1");
	d->limits[1].rate = 50;
	doc = ks_host_doc_encode_kind(d, KS_HDK_LOAD, "2026-12-02T00:00:00Z");
	CHECK(doc && strstr(doc, "\"tcp_per_s\":0.0,\"auto\":true}") &&
		      strstr(doc, "\"rate_per_s\":50,\"allowed_per_s\":0.0,"
				  "\"refused_per_s\":0.0,\"tcp_per_s\":0.0}"),
	      "%s", doc ? doc : "(none)");
	ks_fleet_host_decode("a:11211", doc, doc ? strlen(doc) : 0, h);
	CHECK(h->valid && h->n_limits == 2, "refused: %s", h->why);
	CHECK(h->limits[0].automatic == 1 && h->limits[1].automatic == 0,
	      "auto %u %u", h->limits[0].automatic, h->limits[1].automatic);
out:
	free(doc);
	free(d);
	free(h);
	kt_end();
}

/* The residual: what this shard serves, from the datapath's counts. */
static void residual(void)
{
	struct ks_top_entry r = topr("k", 1000, 10);
	struct ks_auto_dp d;

	kt_begin("limit_auto_residual_measured");
	/* no slot: nothing steered, all of it served here */
	CHECK_EQ((int)ks_limit_auto_residual(&r, NULL), 1010);
	/* copies working: 900 of 1000 gets steered */
	d = dpr("k", 900, 100, 0);
	CHECK_EQ((int)(ks_limit_auto_residual(&r, &d) + 0.5), 110);
	/* copies down: every get left to the owner */
	d = dpr("k", 0, 1000, 0);
	CHECK_EQ((int)ks_limit_auto_residual(&r, &d), 1010);
	/* TCP reads stay (a connection is not steered); the UDP part goes
	 * at the share steered: 1000 - 0.9 x 800 + 10 */
	d = dpr("k", 720, 80, 200);
	CHECK_EQ((int)(ks_limit_auto_residual(&r, &d) + 0.5), 290);
	/* capped at 400/s: the share is the one of the gets that passed,
	 * applied to all offered (2000): what the shard would serve */
	r = topr("k", 2000, 0);
	d = dpr("k", 360, 40, 0);
	CHECK_EQ((int)(ks_limit_auto_residual(&r, &d) + 0.5), 200);
	/* a sampled estimate under the exact steered count: never below 0 */
	r = topr("k", 100, 0);
	d = dpr("k", 200, 0, 0);
	CHECK(ks_limit_auto_residual(&r, &d) == 0, "%f",
	      ks_limit_auto_residual(&r, &d));
	kt_end();
}

/* The interval (1-based) the table first says it copies the key. */
static int copies_verdict(const struct world *w, const char *key)
{
	return (ks_limit_auto_remedy(
			ks_hot_find(&w->t, (const __u8 *)key, strlen(key))) &
		KS_AUTO_COPIES) != 0;
}

/*
 * A read-hot key with 3 copies in the table, 2000 gets/s over a line of
 * 500: copies working (the datapath steers 1950 of them) is never capped;
 * copies down (every get left to the owner) is capped KS_LIMIT_AUTO_ENTER
 * intervals after the table's verdict, at the line; the old verdict rule
 * (the test switch) never caps it; copies back while it is capped: it is
 * released.
 */
static void copies(void)
{
	static struct world w;
	struct ks_top_entry k;
	struct ks_auto_dp d;
	int i, verdict_at = 0, capped_at = 0, followed = 0;

	kt_begin("limit_auto_copies_working_not_capped");
	world_init(&w);
	for (i = 1; i <= 30; i++) {
		k = topr("hot", 2000, 0);
		/* armed the interval after the verdict: before, the owner */
		d = verdict_at && i > verdict_at ? dpr("hot", 1950, 50, 0)
						 : dpr("hot", 0, 2000, 0);
		step_dp(&w, &k, 1, &d, 1);
		if (!verdict_at && copies_verdict(&w, "hot"))
			verdict_at = i;
		followed += afind(&w.a, "hot") != NULL;
	}
	CHECK(verdict_at >= 1, "the table never copied it");
	CHECK(!capped(&w.a, "hot") && w.a.caps == 0, "copied key capped");
	CHECK(!afind(&w.a, "hot"), "still followed with its copies working");
	CHECK(followed <= 2, "followed %d intervals", followed);
	kt_end();

	kt_begin("limit_auto_copies_down_capped");
	world_init(&w);
	verdict_at = 0;
	for (i = 1; i <= 10 && !capped_at; i++) {
		k = topr("hot", 2000, 0);
		d = dpr("hot", 0, 2000, 0); /* fills fail: never armed */
		step_dp(&w, &k, 1, &d, 1);
		if (!verdict_at && copies_verdict(&w, "hot"))
			verdict_at = i;
		if (capped(&w.a, "hot"))
			capped_at = i;
	}
	CHECK(verdict_at >= 1, "the table never copied it");
	/* the policy's ENTER intervals, counted from its verdict */
	CHECK(capped_at == verdict_at + KS_LIMIT_AUTO_ENTER,
	      "verdict at %d, capped at %d", verdict_at, capped_at);
	{
		struct ks_limit_want wants[4];

		CHECK(ks_limit_auto_wants(&w.a, wants, 4) == 1 &&
			      wants[0].rate == 500,
		      "cap %u", wants[0].rate);
	}
	/* the copies come back while it is capped: the share steered of
	 * the gets the cap lets through shows it, and it is released */
	for (i = 1; i <= KS_LIMIT_AUTO_LEAVE; i++) {
		k = topr("hot", 2000, 0);
		d = dpr("hot", 490, 10, 0);
		step_dp(&w, &k, 1, &d, 1);
		CHECK(capped(&w.a, "hot") == (i < KS_LIMIT_AUTO_LEAVE),
		      "interval %d with copies back", i);
	}
	kt_end();

	kt_begin("limit_auto_copies_down_verdict_control");
	world_init(&w);
	w.a.verdict = 1; /* --limit-auto-residual verdict */
	for (i = 1; i <= 30; i++) {
		k = topr("hot", 2000, 0);
		d = dpr("hot", 0, 2000, 0);
		step_dp(&w, &k, 1, &d, 1);
	}
	CHECK(copies_verdict(&w, "hot"), "the table does not copy it");
	CHECK(!capped(&w.a, "hot") && w.a.caps == 0,
	      "the verdict rule capped a key its table copies");
	kt_end();

	/* copies take 3/4 of it but the owner's part (1000/s) is over the
	 * line: capped, at the line (the operator's figure, whatever the
	 * copies take: docs/limits.md) */
	kt_begin("limit_auto_copies_partial_owner_over_line");
	world_init(&w);
	capped_at = 0;
	for (i = 1; i <= 10 && !capped_at; i++) {
		k = topr("big", 4000, 0);
		d = dpr("big", 3000, 1000, 0);
		step_dp(&w, &k, 1, &d, 1);
		if (capped(&w.a, "big"))
			capped_at = i;
	}
	CHECK(capped_at > 0, "owner's part over the line not capped");
	{
		struct ks_limit_want wants[4];

		CHECK(ks_limit_auto_wants(&w.a, wants, 4) == 1 &&
			      wants[0].rate == 500 &&
			      (int)(wants[0].residual_ps + 0.5) == 1000,
		      "cap %u residual %f", wants[0].rate,
		      wants[0].residual_ps);
	}
	/* its owner's part under the line: never capped */
	world_init(&w);
	for (i = 1; i <= 10; i++) {
		k = topr("big", 1600, 0);
		d = dpr("big", 1200, 400, 0);
		step_dp(&w, &k, 1, &d, 1);
	}
	CHECK(!afind(&w.a, "big") && w.a.caps == 0,
	      "owner's part under the line capped");
	kt_end();
}

/*
 * Split counters. Working: libkeysteer's clients write the base's 1/K
 * from the interval after the table's K: the base's writes here fall
 * under the line, never capped. Not working: plain clients whose writes
 * dip from 2000 to 1000/s and stay there, which the table reads as a
 * split of K = 2 in effect (under 2000 / sqrt(2)): the verdict takes the
 * writes off and never caps it (the control), the measurement caps it
 * ENTER intervals after the verdict.
 */
static void split(void)
{
	static struct world w;
	struct ks_top_entry k;
	const struct ks_hot_entry *e;
	unsigned kc = 1;
	int i, verdict, capped_at = 0, split_at = 0;

	kt_begin("limit_auto_split_working_not_capped");
	world_init(&w);
	for (i = 1; i <= 20; i++) {
		k = topr("ctr", 0, i == 1 ? 900 : 900.0 / kc);
		step(&w, &k, 1);
		e = ks_hot_find(&w.t, (const __u8 *)"ctr", 3);
		if (i == 1 && e)
			kc = e->subkeys;
	}
	CHECK(kc >= 2, "no split: K %u", kc);
	CHECK(!afind(&w.a, "ctr") && w.a.caps == 0, "working split capped");
	kt_end();

	for (verdict = 0; verdict <= 1; verdict++) {
		kt_begin(verdict ? "limit_auto_split_misread_verdict_control"
				 : "limit_auto_split_misread_capped");
		world_init(&w);
		w.a.verdict = verdict;
		/* a budget of 1000 a part: K = 2 for 2000 writes/s */
		w.p.per_copy_budget_ops = 1000;
		capped_at = split_at = 0;
		for (i = 1; i <= 20; i++) {
			k = topr("plain", 0, i == 1 ? 2000 : 1000);
			step(&w, &k, 1);
			if (!split_at &&
			    ks_limit_auto_remedy(ks_hot_find(
				    &w.t, (const __u8 *)"plain", 5)) &
				    KS_AUTO_SPLIT)
				split_at = i;
			if (!capped_at && capped(&w.a, "plain"))
				capped_at = i;
		}
		CHECK(split_at >= 1, "the table never read a split");
		if (verdict)
			CHECK(!capped_at && w.a.caps == 0,
			      "the verdict capped a key it reads as split");
		else
			CHECK(capped_at == split_at + KS_LIMIT_AUTO_ENTER,
			      "split read at %d, capped at %d", split_at,
			      capped_at);
		kt_end();
	}
}

/* A verdict that flaps does not keep a runaway uncapped: the policy's
 * intervals are given once per episode. */
static void grace_once(void)
{
	static struct ks_limit_auto a;
	static struct ks_hot_table t;
	struct ks_hot_entry *e;
	struct ks_top_entry k;
	int i;

	kt_begin("limit_auto_grace_once");
	ks_limit_auto_init(&a, FRAC, CAP);
	ks_hot_init(&t);
	/* the table is not consulted for more than the verdict: an entry
	 * of its own making, read-hot with copies one interval in two */
	for (i = 1; i <= 10; i++) {
		struct ks_hot_policy p;
		struct ks_hot_sample smp;

		k = topr("flap", 2000, 0);
		if (i == 1) {
			ks_hot_policy_default(&p);
			p.shard_capacity_ops = CAP;
			p.max_copies = 3;
			ks_hot_sample_from_top(&k, &smp);
			ks_hot_update(&t, &p, &smp, 1, 1);
		}
		e = (struct ks_hot_entry *)ks_hot_find(&t, (const __u8 *)"flap",
						       4);
		if (e)
			e->copies = i % 2 ? 3 : 1;
		ks_limit_auto_update(&a, NULL, &t, &k, 1, NULL, 0);
	}
	CHECK(e && e->read_hot, "no table entry");
	CHECK(capped(&a, "flap") && a.caps == 1,
	      "a flapping verdict kept it uncapped");
	kt_end();
}

void test_limit_auto(void)
{
	option_check();
	remedy();
	which_keys();
	residual();
	copies();
	split();
	grace_once();
	hysteresis();
	explicit_wins();
	table_full();
	info_flag();
	hot_entry();
	load_doc();
}
