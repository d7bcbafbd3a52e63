// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The hot-key table fed from the interval's ranked candidates (issue 14):
 * ks_top_rank gives the report the same 64 top keys as before and the
 * table up to KS_HOT_CAP samples, so 300 hot keys fill all 256 entries,
 * the coldest left out; fed the report's 64 only (the control), it cannot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ktest.h"
#include "util/opts.h"
#include "agent/run_hot.h"
#include "unit.h"

#define NKEYS 300 /* hot keys, more than the table holds */

/* 300 keys, k:000 the heaviest: 3000 - 5 i reads of each in one 1 s
 * interval, every key sampled; a candidate slot for each. */
struct fixture {
	struct ks_sketch *s;
	struct ks_interval iv;
	struct ks_cand c[NKEYS];
};

static __u32 reads_of(size_t i)
{
	return 3000 - 5 * (__u32)i;
}

static void key_name(char *buf, size_t len, size_t i)
{
	snprintf(buf, len, "k:%03u", (unsigned)(i % 1000));
}

static int fixture_init(struct fixture *f)
{
	char key[16];
	size_t i;

	memset(f, 0, sizeof(*f));
	f->s = calloc(1, sizeof(*f->s));
	if (!f->s)
		return -1;
	f->iv.sample_n = 1;
	f->iv.elapsed_ns = 1000000000ULL;
	for (i = 0; i < NKEYS; i++) {
		key_name(key, sizeof(key), i);
		ut_cms_add(f->s, KS_CLASS_READ, ut_hash(key), reads_of(i));
		ut_cand(&f->c[i], key, 1, reads_of(i));
		f->iv.total_requests += reads_of(i);
		f->iv.class_sampled[KS_CLASS_READ] += reads_of(i);
	}
	return 0;
}

/* Whether the table holds key i as hot (by rate, not pinned). */
static int holds(const struct ks_hot_table *t, size_t i)
{
	const struct ks_hot_entry *e;
	char key[16];

	key_name(key, sizeof(key), i);
	e = ks_hot_find(t, (const __u8 *)key, strlen(key));
	return e && e->state == KS_HOT_HOT && e->read_hot;
}

static size_t hot_count(const struct ks_hot_table *t)
{
	size_t pos = 0, n = 0;

	while (ks_hot_next(t, &pos))
		n++;
	return n;
}

/* T = 100 reads/s: every fixture key is 15x to 30x over it. */
static int hot_init(struct ks_run_hot *h)
{
	char err[KS_ERRLEN * 2];

	ks_run_hot_defaults(h);
	h->o.pol.shard_capacity_ops = 1000;
	h->o.pol.hot_fraction = 0.1;
	return ks_run_hot_prepare(h, err, sizeof(err));
}

static void t_report_head(struct fixture *f)
{
	struct ks_top_entry *ranked = calloc(KS_HOT_CAP, sizeof(*ranked));
	struct ks_top_entry *only = calloc(KS_REPORT_TOP, sizeof(*only));
	struct ks_report *rep = calloc(1, sizeof(*rep));
	char key[16];
	size_t i, m, m64;

	kt_begin("hot_ranked_report_top_unchanged");
	if (!ranked || !only || !rep) {
		CHECK(0, "out of memory");
		goto out;
	}
	m = ks_top_rank(f->s, &f->iv, f->c, NKEYS, ranked, KS_HOT_CAP,
			KS_REPORT_TOP, rep);
	CHECK_EQ(m, KS_HOT_CAP);
	CHECK_EQ(rep->n_top, KS_REPORT_TOP);
	/* the report is what selecting 64 alone gives, byte for byte */
	m64 = ks_top_select(f->s, &f->iv, f->c, NKEYS, only, KS_REPORT_TOP);
	CHECK_EQ(m64, KS_REPORT_TOP);
	CHECK(!memcmp(rep->top, only, sizeof(*only) * KS_REPORT_TOP),
	      "the report's top keys changed");
	/* the ranked list is the 256 heaviest, heaviest first */
	for (i = 0; i < m; i++) {
		key_name(key, sizeof(key), i);
		CHECK(ranked[i].len == strlen(key) &&
			      !memcmp(ranked[i].key, key, ranked[i].len),
		      "ranked[%zu] is %.*s, not %s", i, ranked[i].len,
		      ranked[i].key, key);
	}
	/* --top 20 publishes 20; more than 64 is 64 */
	ks_top_rank(f->s, &f->iv, f->c, NKEYS, ranked, KS_HOT_CAP, 20, rep);
	CHECK_EQ(rep->n_top, 20);
	CHECK_EQ(rep->top[20].hash, 0);
	ks_top_rank(f->s, &f->iv, f->c, NKEYS, ranked, KS_HOT_CAP, 1000, rep);
	CHECK_EQ(rep->n_top, KS_REPORT_TOP);
	/* fewer candidates than the report's room: all of them, both */
	m = ks_top_rank(f->s, &f->iv, f->c, 10, ranked, KS_HOT_CAP,
			KS_REPORT_TOP, rep);
	CHECK_EQ(m, 10);
	CHECK_EQ(rep->n_top, 10);
out:
	kt_end();
	free(ranked);
	free(only);
	free(rep);
}

/*
 * Through 'agent run's path (ks_top_rank, then ks_run_hot_interval): the
 * table holds 256 hot keys, the 256 heaviest, and keeps them at their own
 * rate interval after interval. The control feeds the report's 64 (what
 * the table got before): it holds 64, whatever the intervals.
 */
static void t_fill(struct fixture *f)
{
	struct ks_top_entry *ranked = calloc(KS_HOT_CAP, sizeof(*ranked));
	struct ks_report *rep = calloc(1, sizeof(*rep));
	struct ks_run_hot h, ctl;
	const struct ks_hot_entry *e;
	size_t i, m = 0, all = 1, none = 1;
	__u32 seq;

	kt_begin("hot_ranked_table_holds_256");
	if (!ranked || !rep || hot_init(&h) || hot_init(&ctl)) {
		CHECK(0, "setup failed");
		goto out;
	}
	for (seq = 1; seq <= 10; seq++) {
		m = ks_top_rank(f->s, &f->iv, f->c, NKEYS, ranked, KS_HOT_CAP,
				KS_REPORT_TOP, rep);
		ks_run_hot_interval(&h, ranked, m, NULL, 0, seq, 1);
		ks_run_hot_interval(&ctl, rep->top, rep->n_top, NULL, 0, seq,
				    1);
		CHECK(hot_count(h.table) == KS_HOT_CAP, "interval %u: %zu hot",
		      seq, hot_count(h.table));
		CHECK(hot_count(ctl.table) == KS_REPORT_TOP,
		      "control, interval %u: %zu hot", seq,
		      hot_count(ctl.table));
	}
	for (i = 0; i < NKEYS; i++) {
		if (i < KS_HOT_CAP && !holds(h.table, i))
			all = 0;
		if (i >= KS_HOT_CAP && holds(h.table, i))
			none = 0;
	}
	CHECK(all, "one of the 256 heaviest is missing");
	CHECK(none, "one of the 44 coldest is in the table");
	/* a key past the report's 64 is held at its rate, not decaying */
	e = ks_hot_find(h.table, (const __u8 *)"k:200", 5);
	CHECK(e && e->reads_ps > 0.99 * reads_of(200) &&
		      e->reads_ps < 1.01 * reads_of(200),
	      "k:200 at %g reads/s, not %u", e ? e->reads_ps : -1.0,
	      reads_of(200));
	CHECK(!holds(ctl.table, KS_REPORT_TOP), "control: k:064 is hot");
	CHECK(holds(ctl.table, KS_REPORT_TOP - 1), "control: k:063 missing");
	ks_run_hot_free(&ctl);
out:
	ks_run_hot_free(&h);
	kt_end();
	free(ranked);
	free(rep);
}

/*
 * 300 hot samples in one update, in an order that brings cold keys first:
 * the table ends with the 256 hottest whatever the order (a newcomer
 * evicts the coldest entry only if it is hotter), 44 dropped or evicted.
 */
static void t_order(void)
{
	struct ks_hot_sample s[NKEYS];
	struct ks_hot_policy p;
	struct ks_hot_table *t = malloc(sizeof(*t));
	char keys[NKEYS][16];
	size_t i, all = 1, none = 1;

	kt_begin("hot_ranked_coldest_dropped_any_order");
	if (!t) {
		CHECK(0, "out of memory");
		kt_end();
		return;
	}
	ks_hot_policy_default(&p);
	p.shard_capacity_ops = 1000;
	ks_hot_init(t);
	for (i = 0; i < NKEYS; i++) {
		/* coldest first, then every other key from the top */
		size_t k = i < NKEYS / 2 ? NKEYS - 1 - i : i - NKEYS / 2;

		key_name(keys[i], sizeof(keys[i]), k);
		s[i] = (struct ks_hot_sample){ .key = (const __u8 *)keys[i],
					       .len = (__u16)strlen(keys[i]),
					       .hash = ut_hash(keys[i]),
					       .reads_ps = reads_of(k) };
	}
	ks_hot_update(t, &p, s, NKEYS, 1);
	CHECK_EQ(hot_count(t), KS_HOT_CAP);
	CHECK_EQ(t->evicted + t->dropped, NKEYS - KS_HOT_CAP);
	for (i = 0; i < NKEYS; i++) {
		if (i < KS_HOT_CAP && !holds(t, i))
			all = 0;
		if (i >= KS_HOT_CAP && holds(t, i))
			none = 0;
	}
	CHECK(all, "one of the 256 hottest is missing");
	CHECK(none, "one of the 44 coldest is in the table");
	kt_end();
	free(t);
}

void test_hot_ranked(void)
{
	struct fixture f;

	if (fixture_init(&f)) {
		kt_begin("hot_ranked_fixture");
		CHECK(0, "out of memory");
		kt_end();
		return;
	}
	t_report_head(&f);
	t_fill(&f);
	t_order();
	free(f.s);
}
