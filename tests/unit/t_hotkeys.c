// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The hot-key table: entry, hysteresis, copy counts, rules, pin file,
 * capacity (user/core/hotkeys.c) and the JSON routing document
 * (user/render/routing_json.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ktest.h"
#include "core/hotkeys.h"
#include "core/steer_sched.h"
#include "core/unseen.h"
#include "render/routing_json.h"
#include "unit.h"

/* Threshold 10000 reads/s with the default policy (capacity 100000). */
#define T 10000.0

static struct ks_hot_sample sample(const char *key, double r, double w)
{
	struct ks_hot_sample s = {
		.key = (const __u8 *)key,
		.len = (__u16)strlen(key),
		.hash = ut_hash(key),
		.reads_ps = r,
		.writes_ps = w,
	};

	return s;
}

static const struct ks_hot_entry *find(const struct ks_hot_table *t,
				       const char *key)
{
	return ks_hot_find(t, (const __u8 *)key, strlen(key));
}

static void policy(struct ks_hot_policy *p, unsigned max_copies)
{
	ks_hot_policy_default(p);
	p->max_copies = max_copies;
}

/* A key that turns hot is in the table after the very update that sees it,
 * even if it was below threshold before; a cold key is not. */
static void entry_within_one_interval(void)
{
	static struct ks_hot_table t;
	struct ks_hot_policy p;
	struct ks_hot_sample s[2];
	const struct ks_hot_entry *e;
	char err[128];

	kt_begin("hotkeys_entry_within_one_interval");
	policy(&p, 4);
	CHECK(ks_hot_policy_check(&p, err, sizeof(err)) == 0, "%s", err);
	CHECK(ks_hot_read_threshold(&p) == T, "threshold %f",
	      ks_hot_read_threshold(&p));
	ks_hot_init(&t);
	s[0] = sample("warm", 0.9 * T, 0);
	s[1] = sample("cold", 100, 0);
	ks_hot_update(&t, &p, s, 2, 1);
	CHECK_EQ(t.used, 0);
	s[0].reads_ps = T; /* exactly at the threshold */
	ks_hot_update(&t, &p, s, 2, 2);
	e = find(&t, "warm");
	CHECK(e != NULL, "warm not hot after one interval at threshold");
	if (e) {
		CHECK_EQ(e->state, KS_HOT_HOT);
		CHECK_EQ(e->read_hot, 1);
		CHECK_EQ(e->entered_seq, 2);
		CHECK_EQ(e->copies, 2);
	}
	CHECK(find(&t, "cold") == NULL, "cold key entered");
	CHECK_EQ(t.entered, 1);
	p.alpha = 0;
	CHECK(ks_hot_policy_check(&p, err, sizeof(err)) == -EINVAL,
	      "alpha 0 accepted");
	kt_end();
}

/* 100 intervals of key wobbling +-5% around the threshold, of reads or
 * (writes set) of writes: it enters once, never leaves, and its count
 * (copies, or sub-keys) never moves while it is in the table. */
static void wobble(struct ks_hot_table *t, const struct ks_hot_policy *p,
		   const char *key, int writes)
{
	const struct ks_hot_entry *e;
	__u32 seq, changes = 0, last = 0, n;

	for (seq = 1; seq <= 100; seq++) {
		double r = seq % 2 ? 1.05 * T : 0.95 * T;
		struct ks_hot_sample s = sample(key, writes ? 0 : r,
						writes ? r : 0);

		ks_hot_update(t, p, &s, 1, seq);
		e = find(t, key);
		if (!e)
			continue;
		n = writes ? e->subkeys : e->copies;
		changes += last && n != last;
		last = n;
	}
	CHECK(t->entered == 1 && t->left == 0, "entered %llu left %llu",
	      (unsigned long long)t->entered, (unsigned long long)t->left);
	CHECK_EQ(changes, 0);
}

/* +-5% around the threshold for 100 intervals: one entry, no exit, no copy
 * changes; a key that goes quiet leaves, one resting at 75% stays. */
static void no_flapping(void)
{
	static struct ks_hot_table t;
	struct ks_hot_policy p;
	struct ks_hot_sample s;
	__u32 seq = 101;
	__u64 v0;

	kt_begin("hotkeys_no_flapping_at_threshold");
	policy(&p, 4);
	ks_hot_init(&t);
	wobble(&t, &p, "edge", 0);
	/* A quieter phase above the leave line keeps it; the document does
	 * not change either. */
	v0 = t.version;
	for (; seq <= 110; seq++) {
		s = sample("edge", 0.75 * T, 0);
		ks_hot_update(&t, &p, &s, 1, seq);
	}
	CHECK(find(&t, "edge") != NULL, "left at 75%% of threshold");
	CHECK_EQ(t.version, v0);
	/* Gone from the estimates: smoothed 0.75T -> 0.375T < 0.7T. */
	ks_hot_update(&t, &p, NULL, 0, seq);
	CHECK(find(&t, "edge") == NULL, "still hot after going quiet");
	CHECK_EQ(t.left, 1);
	CHECK_EQ(t.used, 0);
	kt_end();
}

/* The same for writes, around the write threshold: one entry, no exit, K
 * unchanged; a key resting at 80% of it stays (it leaves under 70%), and
 * one no longer written leaves. */
static void no_flapping_writes(void)
{
	static struct ks_hot_table t;
	struct ks_hot_policy p;
	struct ks_hot_sample s;
	const struct ks_hot_entry *e;
	__u32 seq = 101;

	kt_begin("hotkeys_write_hot_no_flapping_at_threshold");
	policy(&p, 4);
	ks_hot_init(&t);
	wobble(&t, &p, "ctr", 1);
	for (; seq <= 110; seq++) {
		s = sample("ctr", 0, 0.8 * T);
		ks_hot_update(&t, &p, &s, 1, seq);
	}
	e = find(&t, "ctr");
	CHECK(e && e->write_hot && e->subkeys == 2,
	      "at 80%% of the threshold: %s K %u", e ? "in" : "gone",
	      e ? e->subkeys : 0);
	for (; seq <= 115; seq++)
		ks_hot_update(&t, &p, NULL, 0, seq);
	CHECK(find(&t, "ctr") == NULL, "still write-hot after going quiet");
	CHECK_EQ(t.left, 1);
	kt_end();
}

/* ceil(rate * 1.25 / budget), at least 2, capped; changes by one need a
 * >25% rate move, bigger steps happen at once. */
static void copies_and_caps(void)
{
	static struct ks_hot_table t;
	struct ks_hot_policy p;
	struct ks_hot_sample s;
	const struct ks_hot_entry *e;
	__u32 seq = 1;
	int i;

	kt_begin("hotkeys_copies_and_caps");
	policy(&p, 8);
	CHECK_EQ(ks_hot_copies_for(&p, T), 2);
	CHECK_EQ(ks_hot_copies_for(&p, 3 * T), 4);   /* ceil(3.75) */
	CHECK_EQ(ks_hot_copies_for(&p, 100 * T), 8); /* cap */
	p.max_copies = 3;
	CHECK_EQ(ks_hot_copies_for(&p, 3 * T), 3);
	p.max_copies = 1; /* no replicas */
	CHECK_EQ(ks_hot_copies_for(&p, 3 * T), 1);
	p.max_copies = 8;
	p.per_copy_budget_ops = 5000;
	CHECK_EQ(ks_hot_copies_for(&p, 3 * T), 8); /* ceil(7.5) */
	p.per_copy_budget_ops = 0;

	ks_hot_init(&t);
	s = sample("big", 3 * T, 0);
	ks_hot_update(&t, &p, &s, 1, seq++);
	e = find(&t, "big");
	CHECK(e && e->copies == 4, "copies %u, want 4", e ? e->copies : 0);
	/* +10%: target 5, a step of one on a small move: stays 4. */
	for (i = 0; i < 20; i++) {
		s.reads_ps = 3.3 * T;
		ks_hot_update(&t, &p, &s, 1, seq++);
	}
	e = find(&t, "big");
	CHECK(e && e->copies == 4, "copies %u after +10%%, want 4",
	      e ? e->copies : 0);
	/* +33% since the last change: now 5. */
	s.reads_ps = 4 * T;
	ks_hot_update(&t, &p, &s, 1, seq++);
	e = find(&t, "big");
	CHECK(e && e->copies == 5, "copies %u after +33%%, want 5",
	      e ? e->copies : 0);
	/* A surge: raw 8T -> target 8 (cap), a step of 3, at once. */
	s.reads_ps = 8 * T;
	ks_hot_update(&t, &p, &s, 1, seq++);
	e = find(&t, "big");
	CHECK(e && e->copies == 8, "copies %u after surge, want 8",
	      e ? e->copies : 0);
	/* The operator removes replicas: the cap applies at once. */
	p.max_copies = 3;
	ks_hot_update(&t, &p, &s, 1, seq++);
	e = find(&t, "big");
	CHECK(e && e->copies == 3, "copies %u after cap 3", e ? e->copies : 0);
	kt_end();
}

/* Writes make a key write-hot with ceil(w / budget) sub-keys (at least 2)
 * and no read copies. */
static void write_hot_subkeys(void)
{
	static struct ks_hot_table t;
	struct ks_hot_policy p;
	struct ks_hot_sample s[2];
	const struct ks_hot_entry *e;

	kt_begin("hotkeys_write_hot_subkeys");
	policy(&p, 4);
	CHECK_EQ(ks_hot_subkeys_for(&p, 2.5 * T), 3);
	CHECK_EQ(ks_hot_subkeys_for(&p, T), 2);
	ks_hot_init(&t);
	s[0] = sample("counter", 100, 2.5 * T);
	s[1] = sample("both", 2 * T, T);
	ks_hot_update(&t, &p, s, 2, 1);
	e = find(&t, "counter");
	CHECK(e != NULL, "write-hot key missing");
	if (e) {
		CHECK_EQ(e->write_hot, 1);
		CHECK_EQ(e->read_hot, 0);
		CHECK_EQ(e->subkeys, 3);
		CHECK_EQ(e->copies, 1);
	}
	e = find(&t, "both");
	CHECK(e && e->read_hot && e->write_hot && e->copies == 3 &&
		      e->subkeys == 2,
	      "both: r%d w%d copies %u subkeys %u", e ? e->read_hot : -1,
	      e ? e->write_hot : -1, e ? e->copies : 0, e ? e->subkeys : 0);
	/* A separate write threshold. */
	p.write_hot_fraction = 0.5;
	CHECK(ks_hot_write_threshold(&p) == 5 * T, "write threshold %f",
	      ks_hot_write_threshold(&p));
	kt_end();
}

/* A split counter's owner sees only the base's share of its writes once
 * clients follow the split (1/K of them): K is kept, and follows the
 * whole rate; plain clients, writing the base only, keep K as it was. */
static void write_hot_split_share(void)
{
	static struct ks_hot_table t;
	struct ks_hot_policy p;
	struct ks_hot_sample s;
	const struct ks_hot_entry *e;
	int i;

	kt_begin("hotkeys_split_counter_sized_on_whole_rate");
	policy(&p, 4);
	ks_hot_init(&t);
	s = sample("votes", 0, 6 * T);
	ks_hot_update(&t, &p, &s, 1, 1);
	e = find(&t, "votes");
	CHECK(e && e->subkeys == 6, "K %u at 6T, want 6", e ? e->subkeys : 0);
	for (i = 0; i < 6; i++) { /* the base's share: 1/6 */
		s = sample("votes", 0, T);
		ks_hot_update(&t, &p, &s, 1, 1);
	}
	e = find(&t, "votes");
	CHECK(e && e->write_hot && e->subkeys == 6,
	      "split in effect: hot %d K %u, want 6", e ? e->write_hot : -1,
	      e ? e->subkeys : 0);
	s = sample("votes", 0, 0); /* an interval without a sample of it */
	ks_hot_update(&t, &p, &s, 1, 1);
	e = find(&t, "votes");
	CHECK(e && e->write_hot && e->subkeys == 6,
	      "an interval unsampled: hot %d K %u, want 6",
	      e ? e->write_hot : -1, e ? e->subkeys : 0);
	for (i = 0; i < 6; i++) { /* twice the votes, clients follow K */
		e = find(&t, "votes");
		s = sample("votes", 0, 12 * T / (e ? e->subkeys : 1));
		ks_hot_update(&t, &p, &s, 1, 1);
	}
	e = find(&t, "votes");
	CHECK(e && e->subkeys == 12, "whole rate 12T: K %u, want 12",
	      e ? e->subkeys : 0);
	ks_hot_init(&t);
	for (i = 0; i < 6; i++) { /* plain clients: the base takes all */
		s = sample("votes", 0, 6 * T);
		ks_hot_update(&t, &p, &s, 1, 1);
	}
	e = find(&t, "votes");
	CHECK(e && e->subkeys == 6, "plain clients: K %u, want 6",
	      e ? e->subkeys : 0);
	for (i = 0; i < 12; i++) { /* the vote is over */
		s = sample("votes", 0, 0);
		ks_hot_update(&t, &p, &s, 1, 1);
	}
	e = find(&t, "votes");
	CHECK(!e || (!e->write_hot && !e->subkeys), "cooled: hot %d K %u",
	      e ? e->write_hot : -1, e ? e->subkeys : 0);
	kt_end();
}

static const char pin_file[] =
	"# known events\n"
	"pin event:launch 3\r\n"
	"  pin-prefix promo: 2\n"
	"\n"
	"split-prefix ctr: 4\n"
	"pin-prefix promo:vip: 1"; /* no final newline; longest prefix wins */

/* Pins and split rules beat the rate: always hot, their count, and they go
 * back to rate rules when the file drops them. */
static void pins_and_splits(void)
{
	static struct ks_hot_table t;
	static struct ks_hot_rules rules, none;
	struct ks_hot_policy p;
	struct ks_hot_sample s[4];
	const struct ks_hot_entry *e;
	char err[160] = "";

	kt_begin("hotkeys_pins_and_splits_override");
	policy(&p, 4);
	CHECK(ks_hot_rules_parse(&rules, pin_file, strlen(pin_file), "pins",
				 err, sizeof(err)) == 0,
	      "parse: %s", err);
	CHECK_EQ(rules.n, 4);
	ks_hot_init(&t);
	ks_hot_set_rules(&t, &rules);
	/* No traffic at all: the exact pin is there anyway. */
	ks_hot_update(&t, &p, NULL, 0, 1);
	e = find(&t, "event:launch");
	CHECK(e && e->state == KS_HOT_PINNED && e->copies == 3 && e->read_hot,
	      "exact pin: %p state %d copies %u", (const void *)e,
	      e ? e->state : -1, e ? e->copies : 0);
	s[0] = sample("promo:x", 1, 0);
	s[1] = sample("promo:big", 8 * T, 0); /* rate says 4, rule says 2 */
	s[2] = sample("ctr:y", 5, 5);
	s[3] = sample("promo:vip:z", 1, 0);
	ks_hot_update(&t, &p, s, 4, 2);
	e = find(&t, "promo:x");
	CHECK(e && e->state == KS_HOT_PINNED && e->copies == 2,
	      "prefix pin copies %u", e ? e->copies : 0);
	e = find(&t, "promo:big");
	CHECK(e && e->copies == 2, "rule overridden by rate: %u",
	      e ? e->copies : 0);
	e = find(&t, "ctr:y");
	CHECK(e && e->state == KS_HOT_PINNED && e->copies == 4 &&
		      e->subkeys == 4 && e->write_hot,
	      "split: copies %u subkeys %u", e ? e->copies : 0,
	      e ? e->subkeys : 0);
	e = find(&t, "promo:vip:z");
	CHECK(e && e->copies == 1, "longest prefix: copies %u",
	      e ? e->copies : 0);
	CHECK_EQ(t.used, 5);
	/* Rules withdrawn: cold keys leave, the hot one stays by rate. */
	ks_hot_set_rules(&t, &none);
	ks_hot_update(&t, &p, s, 4, 3);
	CHECK(find(&t, "event:launch") == NULL, "unpinned key stayed");
	CHECK(find(&t, "promo:x") == NULL, "unpinned prefix key stayed");
	e = find(&t, "promo:big");
	CHECK(e && e->state == KS_HOT_HOT && e->copies == 4,
	      "promo:big after rules: state %d copies %u", e ? e->state : -1,
	      e ? e->copies : 0);
	CHECK_EQ(t.used, 1);
	kt_end();
}

/* A rule's count is an order, but no more copies than the policy allows
 * (max_copies: the owner and its replicas): copies that do not exist
 * cannot be read. */
static void pins_capped(void)
{
	static struct ks_hot_table t;
	static struct ks_hot_rules rules;
	static const char pins[] = "pin event:launch 3\npin-prefix promo: 5\n";
	struct ks_hot_policy p;
	struct ks_hot_sample s = sample("promo:x", 1, 0);
	const struct ks_hot_entry *e, *f;
	char err[160] = "";
	unsigned cap;

	kt_begin("hotkeys_pins_capped_by_max_copies");
	CHECK(ks_hot_rules_parse(&rules, pins, strlen(pins), "pins", err,
				 sizeof(err)) == 0,
	      "parse: %s", err);
	for (cap = 1; cap <= 4; cap++) {
		policy(&p, cap);
		ks_hot_init(&t);
		ks_hot_set_rules(&t, &rules);
		ks_hot_update(&t, &p, &s, 1, 1);
		e = find(&t, "event:launch");
		f = find(&t, "promo:x");
		CHECK(e && e->copies == (cap < 3 ? cap : 3),
		      "max %u: pin of 3 has %u copies", cap, e ? e->copies : 0);
		CHECK(f && f->copies == cap, "max %u: prefix pin of 5 has %u",
		      cap, f ? f->copies : 0);
	}
	kt_end();
}

static void expect_error(const char *buf, const char *want)
{
	struct ks_hot_rules r;
	char err[200] = "";
	int ret = ks_hot_rules_parse(&r, buf, strlen(buf), "pins.conf", err,
				     sizeof(err));

	CHECK(ret == -EINVAL, "accepted: %s", buf);
	CHECK(strncmp(err, want, strlen(want)) == 0, "error '%s', want '%s...'",
	      err, want);
	CHECK_EQ(r.n, 0);
}

/* Errors name the file and line; the file loader reads and parses. */
static void pin_file_errors(void)
{
	static struct ks_hot_rules r;
	char buf[8192], path[] = "/tmp/ks_pins_XXXXXX", err[200];
	size_t len = 0;
	int i, fd;

	kt_begin("hotkeys_pin_file_errors");
	expect_error("# c\n\npin a 2\nbogus x 1\n",
		     "pins.conf:4: unknown directive 'bogus'");
	expect_error("pin a\n", "pins.conf:1: pin needs KEY COPIES");
	expect_error("pin a 2 3\n", "pins.conf:1: pin needs KEY COPIES");
	expect_error("pin a 0\n", "pins.conf:1: bad count '0'");
	expect_error("pin a 2x\n", "pins.conf:1: bad count '2x'");
	expect_error("pin a 65\n", "pins.conf:1: bad count '65'");
	expect_error("pin a 2\n\nsplit-prefix p 1\n",
		     "pins.conf:3: bad count '1'");
	expect_error("pin a 2\npin a 3\n", "pins.conf:2: duplicate pin rule");
	expect_error("pin a\x01 2\n", "pins.conf:1: key has a control byte");
	len = (size_t)snprintf(buf, sizeof(buf), "pin ");
	memset(buf + len, 'k', 251);
	len += 251;
	snprintf(buf + len, sizeof(buf) - len, " 2\n");
	expect_error(buf, "pins.conf:1: key longer than 250");
	for (i = 0, len = 0; i <= KS_HOT_RULES_MAX; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len,
					"pin k%d 2\n", i);
	expect_error(buf, "pins.conf:65: too many rules");

	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
	if (fd >= 0) {
		CHECK(write(fd, pin_file, strlen(pin_file)) ==
			      (ssize_t)strlen(pin_file),
		      "write");
		close(fd);
		CHECK(ks_hot_rules_load(&r, path, err, sizeof(err)) == 0,
		      "load: %s", err);
		CHECK_EQ(r.n, 4);
		CHECK(r.n == 4 && r.r[2].type == KS_RULE_SPLIT_PREFIX &&
			      r.r[2].count == 4 && r.r[2].len == 4 &&
			      !memcmp(r.r[2].key, "ctr:", 4),
		      "third rule wrong");
		unlink(path);
		CHECK(ks_hot_rules_load(&r, path, err, sizeof(err)) == -ENOENT,
		      "missing file");
	}
	kt_end();
}

/* Full table: a hotter newcomer evicts the coldest non-pinned entry (never
 * a pin, however cold); a colder one is dropped. */
static void capacity(void)
{
	static struct ks_hot_table t;
	static struct ks_hot_rules rules;
	static char names[KS_HOT_CAP + 2][16];
	static struct ks_hot_sample s[KS_HOT_CAP + 2];
	const char *pin = "pin pinned 2\n";
	struct ks_hot_policy p;
	char err[128];
	int i, n = KS_HOT_CAP - 1;

	kt_begin("hotkeys_capacity_evicts_coldest");
	policy(&p, 4);
	ks_hot_init(&t);
	CHECK(ks_hot_rules_parse(&rules, pin, strlen(pin), "x", err,
				 sizeof(err)) == 0,
	      "%s", err);
	ks_hot_set_rules(&t, &rules);
	for (i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "k%d", i);
		s[i] = sample(names[i], T + 100.0 * i, 0);
	}
	ks_hot_update(&t, &p, s, (size_t)n, 1);
	CHECK_EQ(t.used, KS_HOT_CAP);
	CHECK_EQ(t.dropped, 0);
	s[n] = sample("newhot", 10 * T, 0);
	ks_hot_update(&t, &p, s, (size_t)n + 1, 2);
	CHECK(find(&t, "newhot") != NULL, "hotter newcomer dropped");
	CHECK(find(&t, "k0") == NULL, "coldest k0 not evicted");
	CHECK(find(&t, "pinned") != NULL, "pin evicted");
	CHECK(find(&t, "k1") != NULL, "k1 evicted instead of k0");
	CHECK_EQ(t.evicted, 1);
	CHECK_EQ(t.used, KS_HOT_CAP);
	s[n + 1] = sample("newcold", T, 0); /* colder than k1 (T + 100) */
	ks_hot_update(&t, &p, s + 1, (size_t)n + 1, 3);
	CHECK(find(&t, "newcold") == NULL, "colder newcomer evicted a key");
	CHECK_EQ(t.dropped, 1);
	CHECK_EQ(t.evicted, 1);
	kt_end();
}

/* The routing document: valid-looking JSON with version, keys (escaped),
 * rules; truncation reported like snprintf; version moves only on change. */
static void json_shape(void)
{
	static struct ks_hot_table t;
	static struct ks_hot_rules rules;
	static char buf[8192];
	const char *rf = "split-prefix ctr: 4\n";
	struct ks_hot_policy p;
	struct ks_hot_sample s[2];
	char small[16], err[128];
	size_t len, i;
	int depth = 0, min_depth = 0;
	__u64 v;

	kt_begin("hotkeys_json_shape");
	policy(&p, 3);
	ks_hot_init(&t);
	CHECK(ks_hot_rules_parse(&rules, rf, strlen(rf), "x", err,
				 sizeof(err)) == 0,
	      "%s", err);
	ks_hot_set_rules(&t, &rules);
	s[0] = sample("a\"b", 3 * T, 0);
	s[1] = sample("w", 0, 2 * T);
	CHECK(ks_hot_update(&t, &p, s, 2, 7) == 2, "two new decisions");
	v = t.version;
	len = ks_hot_json(&t, &p, NULL, 42, buf, sizeof(buf));
	CHECK(len == strlen(buf) && len < sizeof(buf), "len %zu", len);
	CHECK(buf[0] == '{' && buf[len - 1] == '}', "not an object: %s", buf);
	for (i = 0; i < len; i++) {
		if (buf[i] == '{' || buf[i] == '[')
			depth++;
		if (buf[i] == '}' || buf[i] == ']')
			depth--;
		if (i + 1 < len && depth < 1)
			min_depth = -1;
	}
	CHECK(depth == 0 && min_depth == 0, "unbalanced: %s", buf);
	CHECK(strstr(buf, "{\"version\":") == buf, "no leading version: %s",
	      buf);
	CHECK(strstr(buf, "\"ring_version\":42,\"seq\":7,"), "ring/seq: %s",
	      buf);
	CHECK(strstr(buf, "\"key\":\"a\\\"b\",\"hash\":\""), "escaped key: %s",
	      buf);
	CHECK(strstr(buf, "\"state\":\"hot\",\"read_hot\":true,"
			  "\"write_hot\":false,\"copies\":3,\"subkeys\":0,"),
	      "read-hot entry: %s", buf);
	CHECK(strstr(buf, "\"write_hot\":true,\"copies\":1,\"subkeys\":2,"),
	      "write-hot entry: %s", buf);
	CHECK(strstr(buf, "\"rules\":[{\"type\":\"split-prefix\","
			  "\"prefix\":\"ctr:\",\"ways\":4}]}"),
	      "rules: %s", buf);
	CHECK_EQ(ks_hot_json(&t, &p, NULL, 42, small, sizeof(small)), len);
	CHECK_EQ(strlen(small), sizeof(small) - 1);
	/* Same rates again: no decision changes, same version. */
	CHECK_EQ(ks_hot_update(&t, &p, s, 2, 8), 0);
	CHECK_EQ(t.version, v);
	kt_end();
}

/* An armed key read from its copies over TCP: the owner sees only its
 * turns, so its samples fall to a trickle and, without the unseen reads,
 * it would cool, be disarmed, turn hot again and flap. With them it stays
 * hot at its true rate; a key no longer read at all still cools. */
static void unseen_reads_keep_armed_keys(void)
{
	static struct ks_hot_table t, ctl;
	struct ks_hot_policy p;
	struct ks_hot_sample s[4];
	struct ks_hot_unseen u[2];
	const struct ks_hot_entry *e;
	size_t n, i;

	kt_begin("hotkeys_unseen_reads_keep_armed_keys");
	/* the scale: 1 turn of 64 seen stands for 63 unseen */
	CHECK(ks_steer_unseen_reads(100, 1) == 6300, "1/64: %f",
	      ks_steer_unseen_reads(100, 1));
	CHECK(ks_steer_unseen_reads(100, 16) == 300, "16/64: %f",
	      ks_steer_unseen_reads(100, 16));
	CHECK(ks_steer_unseen_reads(100, 0) == 0 &&
		      ks_steer_unseen_reads(100, KS_STEER_SCHED) == 0,
	      "owner share 0 or all: nothing to scale");
	policy(&p, 4);
	ks_hot_init(&t);
	ks_hot_init(&ctl);
	s[0] = sample("flash", 4 * T, 0);
	ks_hot_update(&t, &p, s, 1, 1);
	ks_hot_update(&ctl, &p, s, 1, 1);
	CHECK(find(&t, "flash") && find(&ctl, "flash"), "flash not hot");
	for (i = 2; i < 40; i++) {
		/* armed: the owner sees 1/64 of 4T over TCP; the key is no
		 * longer among the top keys, so no sample at all */
		u[0] = (struct ks_hot_unseen){
			ut_hash("flash"), ks_steer_unseen_reads(4 * T / 64, 1)
		};
		u[1] = (struct ks_hot_unseen){ ut_hash("not-in-table"), 5 * T };
		n = ks_hot_add_unseen(&t, s, 0, 4, u, 2);
		CHECK_EQ(n, 1);
		ks_hot_update(&t, &p, s, n, (__u32)i);
		ks_hot_update(&ctl, &p, s, 0, (__u32)i);
	}
	e = find(&t, "flash");
	CHECK(e && e->read_hot && e->reads_ps > 3.5 * T && e->reads_ps < 4 * T,
	      "with unseen reads: %s at %.0f/s", e ? "hot" : "gone",
	      e ? e->reads_ps : 0);
	CHECK(find(&t, "not-in-table") == NULL, "a key nothing armed entered");
	CHECK(find(&ctl, "flash") == NULL,
	      "control: without the unseen reads the armed key should cool");
	/* added to a sample that exists */
	s[0] = sample("flash", 100, 5);
	n = ks_hot_add_unseen(&t, s, 1, 4, u, 1);
	CHECK(n == 1 && s[0].reads_ps == 100 + u[0].reads_ps &&
		      s[0].writes_ps == 5,
	      "sample merged: n %zu, reads %.0f", n, s[0].reads_ps);
	/* no longer read: it cools as any key */
	for (i = 40; i < 80; i++)
		ks_hot_update(&t, &p, s, 0, (__u32)i);
	CHECK(find(&t, "flash") == NULL, "an unread key stayed hot");
	kt_end();
}

/*
 * A key at twice the threshold whose owner sees one read in 64, in lumps
 * (each client's schedule gives the owner a turn every 64 of its reads):
 * about 3 a second, often none. Scaled one interval at a time (the
 * control, what the agent did before core/unseen.h) an interval with
 * none drops the estimate to 0 and the key leaves the table; pooled it
 * stays hot near its rate, holds while too few reads have come in, and a
 * key no longer read still leaves once the window has passed.
 */
static void unseen_window_keeps_lumpy_keys(void)
{
	static const unsigned lumps[10] = { 0, 7, 0, 0, 8, 3, 0, 7, 6, 0 };
	static struct ks_hot_table t, ctl;
	struct ks_unseen_window w, cw;
	struct ks_hot_policy p;
	struct ks_hot_sample s[2], cs[2];
	struct ks_hot_unseen u, cu;
	const struct ks_hot_entry *e;
	unsigned i, left = 0, ctl_left = 0, gone_at = 0;
	double r, lo = 1e18, hi = 0;
	size_t n;

	kt_begin("hotkeys_unseen_window_keeps_lumpy_keys");
	/* the verdicts */
	ks_unseen_reset(&w);
	CHECK(ks_unseen_add(&w, 5, 1, 0, &r) == KS_UNSEEN_NONE && r == 0,
	      "owner share 0: nothing to scale");
	CHECK(ks_unseen_add(&w, 5, 1, KS_STEER_SCHED, &r) == KS_UNSEEN_NONE,
	      "owner share all: nothing unseen");
	CHECK_EQ(w.n, 0);
	CHECK(ks_unseen_add(&w, 5, 1, 1, &r) == KS_UNSEEN_HOLD,
	      "5 reads: too few to tell");
	CHECK(ks_unseen_add(&w, 5, 1, 1, &r) == KS_UNSEEN_HOLD, "10 reads");
	CHECK(ks_unseen_add(&w, 6, 1, 1, &r) == KS_UNSEEN_RATE &&
		      r == 63 * 16 / 3.0,
	      "16 reads in 3 s: %f", r);
	/* the newest intervals that hold enough, not the whole window */
	CHECK(ks_unseen_add(&w, 40, 1, 1, &r) == KS_UNSEEN_RATE && r == 63 * 40,
	      "40 reads in the newest 1 s: %f", r);
	ks_unseen_reset(&w);
	for (i = 0; i < KS_UNSEEN_WINDOW - 1; i++)
		CHECK(ks_unseen_add(&w, 0, 1, 1, &r) == KS_UNSEEN_HOLD,
		      "interval %u of a quiet window", i);
	CHECK(ks_unseen_add(&w, 1, 1, 1, &r) == KS_UNSEEN_RATE &&
		      r == 63.0 / KS_UNSEEN_WINDOW,
	      "a full window tells however few: %f", r);

	/* the table: threshold 100 reads/s, the key at 200 */
	policy(&p, 4);
	p.shard_capacity_ops = 1000;
	ks_hot_init(&t);
	ks_hot_init(&ctl);
	ks_unseen_reset(&w);
	ks_unseen_reset(&cw);
	s[0] = sample("lumpy", 200, 0);
	ks_hot_update(&t, &p, s, 1, 1);
	ks_hot_update(&ctl, &p, s, 1, 1);
	for (i = 2; i < 62; i++) {
		unsigned seen = lumps[i % 10];

		u = (struct ks_hot_unseen){ .hash = ut_hash("lumpy") };
		u.hold = ks_unseen_add(&w, seen, 1, 1, &u.reads_ps) ==
			 KS_UNSEEN_HOLD;
		n = ks_hot_add_unseen(&t, s, 0, 2, &u, 1);
		ks_hot_update(&t, &p, s, n, i);
		e = find(&t, "lumpy");
		left += !e;
		if (e && i > 20) {
			lo = e->reads_ps < lo ? e->reads_ps : lo;
			hi = e->reads_ps > hi ? e->reads_ps : hi;
		}
		/* the control: each interval alone */
		cu = (struct ks_hot_unseen){ ut_hash("lumpy"),
					     ks_steer_unseen_reads(seen, 1) };
		if (find(&ctl, "lumpy")) {
			n = ks_hot_add_unseen(&ctl, cs, 0, 2, &cu, 1);
			ks_hot_update(&ctl, &p, cs, n, i);
			ctl_left += !find(&ctl, "lumpy");
		} else {
			cs[0] = sample("lumpy", 200, 0); /* back: seen again */
			ks_hot_update(&ctl, &p, cs, 1, i);
		}
	}
	CHECK(left == 0, "pooled: the key left the table in %u intervals",
	      left);
	CHECK(lo > 150 && hi < 260, "pooled: its rate %.0f..%.0f (true 200)",
	      lo, hi);
	CHECK(ctl_left > 0,
	      "control: scaled interval by interval the key should flap");
	/* no longer read: it leaves once the window has passed */
	for (i = 62; i < 62 + 3 * KS_UNSEEN_WINDOW && !gone_at; i++) {
		u = (struct ks_hot_unseen){ .hash = ut_hash("lumpy") };
		u.hold = ks_unseen_add(&w, 0, 1, 1, &u.reads_ps) ==
			 KS_UNSEEN_HOLD;
		n = ks_hot_add_unseen(&t, s, 0, 2, &u, 1);
		ks_hot_update(&t, &p, s, n, i);
		if (!find(&t, "lumpy"))
			gone_at = i - 61;
	}
	CHECK(gone_at && gone_at <= KS_UNSEEN_WINDOW + 4,
	      "an unread key left after %u intervals", gone_at);
	kt_end();
}

void test_hotkeys(void)
{
	entry_within_one_interval();
	no_flapping();
	no_flapping_writes();
	copies_and_caps();
	write_hot_subkeys();
	write_hot_split_share();
	pins_and_splits();
	pins_capped();
	pin_file_errors();
	capacity();
	json_shape();
	unseen_reads_keep_armed_keys();
	unseen_window_keeps_lumpy_keys();
}
