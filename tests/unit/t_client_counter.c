// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_client_counter.c - split counters' pure parts (user/client/counter.c):
 * the parts' names, the sub-key count a hot/ entry gives the view and the
 * union of old and new K over its grace, which part an increment takes,
 * the offset a sub-key counts from, the width a read sums, and when a
 * fold moves what and may lower the width.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "client/counter.h"
#include "client/view.h"
#include "core/hot_doc.h"
#include "ktest.h"
#include "unit.h"

static void test_counter_names(void)
{
	char buf[300], key[260];
	int n;

	kt_begin("client_counter_part_names");
	n = ksc_counter_key("votes", 5, 0, buf, sizeof(buf));
	CHECK(n == 5 && !strcmp(buf, "votes"), "base: %d '%s'", n, buf);
	n = ksc_counter_key("votes", 5, 7, buf, sizeof(buf));
	CHECK(n == 9 && !strcmp(buf, "votes~ks7"), "sub-key 7: %d '%s'", n,
	      buf);
	n = ksc_counter_key("votes", 5, KSC_SPLIT_MAX - 1, buf, sizeof(buf));
	CHECK(n == 10 && !strcmp(buf, "votes~ks63"), "last: '%s'", buf);
	ksc_counter_key("votes", 5, KSC_PART_WIDTH, buf, sizeof(buf));
	CHECK(!strcmp(buf, "votes~ksw"), "width: '%s'", buf);
	ksc_counter_key("votes", 5, KSC_PART_FOLD, buf, sizeof(buf));
	CHECK(!strcmp(buf, "votes~ksf"), "fold: '%s'", buf);
	CHECK(ksc_counter_key("votes", 5, KSC_SPLIT_MAX, buf, sizeof(buf)) ==
		      -EINVAL,
	      "a part past KSC_SPLIT_MAX named");
	memset(key, 'k', sizeof(key));
	n = ksc_counter_key(key, KSC_SPLIT_KEY_MAX, KSC_SPLIT_MAX - 1, buf,
			    sizeof(buf));
	CHECK(n == 250, "the longest splittable key's sub-key: %d bytes", n);
	CHECK(ksc_counter_key(key, KSC_SPLIT_KEY_MAX + 1, 1, buf,
			      sizeof(buf)) == -ENAMETOOLONG,
	      "a key too long to split got a sub-key");
	CHECK(ksc_counter_key(key, 250, 0, buf, sizeof(buf)) == 250,
	      "a 250-byte base refused");
	kt_end();
}

/* The view's K follows the hot/ entries as the agents write them. */
static void test_counter_view_k(void)
{
	struct ks_hot_doc d;
	struct ksc_view v;
	struct ksc_hot *e;
	char path[128], *doc;
	__u64 h = ksc_key_hash("votes", 5);

	kt_begin("client_counter_view_keeps_old_k_for_its_grace");
	ksc_view_init(&v, "t");
	memset(&d, 0, sizeof(d));
	d.hash = h;
	d.write_hot = 1;
	d.copies = 1;
	d.subkeys = 8;
	snprintf(d.owner, sizeof(d.owner), "198.18.2.11:11211");
	ks_hot_doc_key("t", h, path, sizeof(path));
	doc = ks_hot_doc_encode(&d);
	CHECK(doc && !ksc_view_put(&v, path, strlen(path), doc, strlen(doc), 5),
	      "hot/ refused: %s", v.why);
	free(doc);
	e = ksc_view_hot(&v, h);
	CHECK(e && ksc_split_k(e) == 8, "K %u, want 8", ksc_split_k(e));
	CHECK(ksc_split_union(e, 1000, 500) == 8, "a first K has no union");
	d.subkeys = 3;
	doc = ks_hot_doc_encode(&d);
	ksc_view_put(&v, path, strlen(path), doc, strlen(doc), 6);
	free(doc);
	CHECK(ksc_split_k(e) == 3, "K %u after 8 -> 3", ksc_split_k(e));
	CHECK(ksc_split_union(e, 2000, 500) == 8,
	      "union %u right after 8 -> 3, want 8",
	      ksc_split_union(e, 2000, 500));
	CHECK(ksc_split_union(e, 2499, 500) == 8, "union ended early");
	CHECK(ksc_split_union(e, 2500, 500) == 3,
	      "union %u after the grace, want 3",
	      ksc_split_union(e, 2500, 500));
	/* read-hot only: not split; then the entry deleted: cooled */
	d.subkeys = 4;
	doc = ks_hot_doc_encode(&d);
	ksc_view_put(&v, path, strlen(path), doc, strlen(doc), 7);
	free(doc);
	CHECK(ksc_split_k(e) == 4, "K %u, want 4", ksc_split_k(e));
	d.write_hot = 0;
	doc = ks_hot_doc_encode(&d);
	ksc_view_put(&v, path, strlen(path), doc, strlen(doc), 8);
	free(doc);
	CHECK(ksc_split_k(e) == 1 && ksc_split_union(e, 3000, 500) == 4,
	      "write_hot off: K %u union %u, want 1 and 4", ksc_split_k(e),
	      ksc_split_union(e, 3000, 500));
	ksc_view_del(&v, path, strlen(path), 9, 3100);
	CHECK(ksc_split_k(e) == 1 && ksc_split_union(e, 3200, 500) == 4,
	      "deleted: K %u union %u, want 1 and 4", ksc_split_k(e),
	      ksc_split_union(e, 3200, 500));
	CHECK(ksc_split_union(e, 3600, 500) == 1, "the union outlived it");
	CHECK(ksc_split_k(NULL) == 1 && ksc_split_union(NULL, 1, 1) == 1,
	      "no entry: split");
	kt_end();
	ksc_view_free(&v);
}

static void test_counter_pick(void)
{
	unsigned hits[KSC_SPLIT_MAX] = { 0 }, i, bad = 0, lo, hi;
	__u64 rng = 12345;

	kt_begin("client_counter_pick_spreads_and_decr_avoids_base");
	for (i = 0; i < 8000; i++)
		hits[ksc_split_pick(8, 0, &rng)]++;
	lo = hi = hits[0];
	for (i = 0; i < 8; i++) {
		lo = hits[i] < lo ? hits[i] : lo;
		hi = hits[i] > hi ? hits[i] : hi;
	}
	/* 1000 expected each: a fair spread stays within +-20% */
	CHECK(lo > 800 && hi < 1200, "8 parts hit %u..%u times of 8000", lo,
	      hi);
	for (i = 8; i < KSC_SPLIT_MAX; i++)
		bad += hits[i];
	CHECK(!bad, "%u picks past K", bad);
	for (i = 0, bad = 0; i < 1000; i++) {
		unsigned p = ksc_split_pick(4, 1, &rng);

		bad += p < 1 || p > 3;
	}
	CHECK(!bad, "%u decrements on the base or past K", bad);
	CHECK(ksc_split_pick(1, 0, &rng) == 0 &&
		      ksc_split_pick(1, 1, &rng) == 0,
	      "K 1: not the base");
	CHECK(ksc_split_pick(0, 0, &rng) == 0, "K 0: not the base");
	kt_end();
}

/* Each shard holding parts takes an equal share, whatever its count. */
static void test_counter_pick_spread(void)
{
	static struct ksc_hot e;
	unsigned i, on9 = 0, base = 0, bad = 0;
	__u64 rng = 99;

	kt_begin("client_counter_pick_even_per_shard");
	e.part_k = 4;
	e.part_owner[0] = e.part_owner[1] = e.part_owner[2] = 7;
	e.part_owner[3] = 9;
	for (i = 0; i < 8000; i++) {
		unsigned p = ksc_split_pick_spread(&e, 4, 0, &rng);

		on9 += p == 3;
		base += p == 0;
		bad += p > 3;
	}
	/* the base 1/4 (2000), then half the rest (3000) on shard 9's one
	 * sub-key, the other half over shard 7's two */
	CHECK(on9 > 2700 && on9 < 3300 && base > 1750 && base < 2250 && !bad,
	      "8000 picks: %u on the lone part's shard, %u on the base, %u "
	      "past K",
	      on9, base, bad);
	for (i = 0, on9 = 0, base = 0; i < 6000; i++) {
		unsigned p = ksc_split_pick_spread(&e, 4, 1, &rng);

		on9 += p == 3;
		base += p == 0;
	}
	CHECK(on9 > 2700 && on9 < 3300 && !base,
	      "6000 decrements: %u on the lone part, %u on the base", on9,
	      base);
	/* 63 sub-keys, 3 on each of 21 shards: every one picked alike (a
	 * draw reused for the keep test would starve two in three) */
	{
		static unsigned hits[KSC_SPLIT_MAX];
		unsigned lo = ~0u;

		e.part_k = KSC_SPLIT_MAX;
		for (i = 1; i < KSC_SPLIT_MAX; i++)
			e.part_owner[i] = (__u16)(i % 21);
		for (i = 0; i < 63000; i++)
			hits[ksc_split_pick_spread(&e, KSC_SPLIT_MAX, 1,
						   &rng)]++;
		for (i = 1; i < KSC_SPLIT_MAX; i++)
			lo = hits[i] < lo ? hits[i] : lo;
		CHECK(lo > 800 && !hits[0],
		      "63000 decrements: the least picked sub-key %u times "
		      "(1000 expected), the base %u",
		      lo, hits[0]);
		e.part_k = 4;
	}
	/* a layout of another K: the plain pick */
	for (i = 0, bad = 0; i < 1000; i++)
		bad += ksc_split_pick_spread(&e, 8, 0, &rng) > 7;
	CHECK(!bad && ksc_split_pick_spread(NULL, 1, 0, &rng) == 0,
	      "no layout for K 8: %u picks past K", bad);
	kt_end();
}

/* The parts' owners are the ring's, by their own names, kept until K or
 * the ring changes. */
static void test_counter_layout(void)
{
	static struct ksc_hot e;
	struct ksc_view v;
	char name[64];
	unsigned i, bad = 0, owners = 0, seen[8] = { 0 };
	int n;

	kt_begin("client_counter_layout_by_the_ring");
	ksc_view_init(&v, "t");
	CHECK(!ksc_view_static(&v,
			       "198.18.0.1:11211,198.18.0.2:11211,"
			       "198.18.0.3:11211,198.18.0.4:11211",
			       NULL, NULL),
	      "static ring: %s", v.why);
	ksc_split_layout(&v, &e, "votes", 5, 16);
	for (i = 0; i < 16; i++) {
		n = ksc_counter_key("votes", 5, (int)i, name, sizeof(name));
		bad += e.part_owner[i] != ksc_view_owner(&v, name, (size_t)n);
		if (e.part_owner[i] < 8 && !seen[e.part_owner[i]]++)
			owners++;
	}
	CHECK(!bad && e.part_k == 16, "%u of 16 parts on another owner", bad);
	CHECK(owners >= 3, "16 parts on only %u of 4 shards", owners);
	e.part_owner[5] = 4000; /* kept: the same K and ring */
	ksc_split_layout(&v, &e, "votes", 5, 16);
	CHECK(e.part_owner[5] == 4000, "laid out again for the same K");
	ksc_split_layout(&v, &e, "votes", 5, 8);
	CHECK(e.part_k == 8 && e.part_owner[5] != 4000, "not laid out anew");
	kt_end();
	ksc_view_free(&v);
}

static void test_counter_sum(void)
{
	__s64 sum = 0;

	kt_begin("client_counter_offset_and_sum");
	CHECK(ksc_subkey_initial(5, 0) == KSC_SUBKEY_OFFSET + 5 &&
		      ksc_subkey_initial(5, 1) == KSC_SUBKEY_OFFSET - 5,
	      "initial values");
	CHECK(!ksc_counter_add(&sum, 0, 100), "base");
	CHECK(!ksc_counter_add(&sum, 3, ksc_subkey_initial(7, 0)), "+7");
	CHECK(!ksc_counter_add(&sum, 4, ksc_subkey_initial(30, 1)), "-30");
	CHECK(sum == 77, "sum %lld, want 100 + 7 - 30", (long long)sum);
	sum = -200;
	CHECK(!ksc_counter_add(&sum, 1, ksc_subkey_initial(50, 1)) &&
		      sum == -250,
	      "below zero: %lld", (long long)sum);
	sum = INT64_MAX - 1;
	CHECK(ksc_counter_add(&sum, 1, ksc_subkey_initial(2, 0)) == -ERANGE,
	      "an overflow summed");
	sum = 0;
	CHECK(ksc_counter_add(&sum, 0, (__u64)INT64_MAX + 1) == -ERANGE,
	      "a base past int64 summed");
	CHECK(ksc_counter_width(1, 0, 0) == 1 &&
		      ksc_counter_width(4, 0, 0) == 4,
	      "no width key: the view's");
	CHECK(ksc_counter_width(4, 1, 9) == 9 &&
		      ksc_counter_width(9, 1, 4) == 9,
	      "the wider of view and width");
	CHECK(ksc_counter_width(1, 1, 1000) == KSC_SPLIT_MAX,
	      "a width past KSC_SPLIT_MAX");
	CHECK(ksc_fold_seq_ok(4, 4) && !ksc_fold_seq_ok(4, 6) &&
		      !ksc_fold_seq_ok(5, 5),
	      "fold sequence checks");
	kt_end();
}

static void test_counter_fold_decide(void)
{
	struct ksc_fold_plan p;

	kt_begin("client_counter_fold_what_and_when");
	/* K 8 -> 2: nothing while views may lag, then 2..8, lowered after
	 * the grace */
	CHECK(!ksc_fold_decide(2, 8, 500, 1000, 5000, 1, 0, &p),
	      "folded while other views may still write sub-keys");
	CHECK(ksc_fold_decide(2, 8, 1000, 1000, 5000, 1, 0, &p) &&
		      p.from == 2 && p.to == 8 && !p.lower,
	      "after the lag: from %u to %u lower %d", p.from, p.to, p.lower);
	CHECK(ksc_fold_decide(2, 8, 5000, 1000, 5000, 1, 0, &p) && p.lower,
	      "after the grace: the width not lowered");
	CHECK(!ksc_fold_decide(2, 8, 9000, 1000, 5000, 0, 0, &p),
	      "a stale view folded");
	CHECK(!ksc_fold_decide(8, 8, 9000, 1000, 5000, 1, 0, &p),
	      "nothing past K, yet a fold");
	CHECK(ksc_fold_decide(8, 8, 0, 1000, 5000, 1, 1, &p) && p.from == 1 &&
		      p.to == 8 && !p.lower,
	      "all: from %u to %u lower %d", p.from, p.to, p.lower);
	CHECK(!ksc_fold_decide(1, 1, 9000, 1000, 5000, 1, 1, &p),
	      "no sub-keys, yet a fold");
	kt_end();
}

void test_client_counter(void)
{
	test_counter_names();
	test_counter_view_k();
	test_counter_pick();
	test_counter_pick_spread();
	test_counter_layout();
	test_counter_sum();
	test_counter_fold_decide();
}
