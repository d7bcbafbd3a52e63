// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Top-K selection: order, truncation, zero estimates dropped, key bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ktest.h"
#include "unit.h"

/*
 * Keys with the same column in every row (here: hashes that differ only in
 * the 4 bits of each 16 that ks_cms_col leaves out) are one key to the
 * sketch; only the
 * one whose candidate slot holds the higher count is listed, with the
 * sketch's count. Another key, with columns of its own, is not touched.
 */
static void topk_twins(void)
{
	struct ks_sketch *s = calloc(1, sizeof(*s));
	struct ks_interval iv = { .sample_n = 1,
				  .elapsed_ns = 1000000000ULL,
				  .total_requests = 2000 };
	struct ks_top_entry out[4];
	struct ks_cand c[3];
	size_t m;

	kt_begin("topk_drops_sketch_twins");
	ut_cand(&c[0], "twin-seen-once", 1, 901);
	ut_cand(&c[1], "heavy", 1, 1000);
	ut_cand(&c[2], "other", 1, 10);
	c[0].hash = 0x0abc078901230456ULL;
	/* other bits only where no row takes its column from (the top bits
	 * of each row's 16 past the width's) */
	c[1].hash = c[0].hash ^ (0x8000800080008000ULL &
				 ~(0x0001000100010001ULL * KS_CMS_MASK));
	CHECK_EQ(ks_cms_signature(c[0].hash), ks_cms_signature(c[1].hash));
	CHECK(ks_cms_signature(c[2].hash) != ks_cms_signature(c[1].hash),
	      "'other' should have columns of its own");
	ut_cms_add(s, KS_CLASS_READ, c[1].hash, 1000);
	ut_cms_add(s, KS_CLASS_READ, c[2].hash, 10);
	m = ks_top_select(s, &iv, c, 3, out, 4);
	CHECK_EQ(m, 2);
	CHECK(m == 2 && out[0].hash == c[1].hash, "the heavy key is not first");
	CHECK(m == 2 && out[1].hash == c[2].hash, "'other' is not second");
	CHECK_EQ(out[0].reads_mps, 1000000);
	/* the slot that saw the count last wins, whichever comes first */
	c[0].count = 1001;
	m = ks_top_select(s, &iv, c, 3, out, 4);
	CHECK(m == 2 && out[0].hash == c[0].hash, "the heavier slot lost");
	kt_end();
	free(s);
}

/*
 * Big hosts (docs/benchmarks.md, "The agent on big hosts"): the k best
 * come from a heap over compact records, entries made for those k only.
 * 5,000 candidates with many equal sums (ties broken by hash): the k
 * kept are exactly the first k of the whole ranking (k = n, no heap), for
 * k = 1, 7 and 256.
 */
static void topk_heap_matches_full_ranking(void)
{
	enum {
		N = 5000
	};
	struct ks_sketch *s = calloc(1, sizeof(*s));
	struct ks_cand *c = calloc(N, sizeof(*c));
	struct ks_top_entry *all = calloc(N, sizeof(*all));
	struct ks_top_entry *few = calloc(256, sizeof(*few));
	struct ks_interval iv = { .sample_n = 1,
				  .elapsed_ns = 1000000000ULL,
				  .total_requests = 1000000 };
	static const size_t ks[] = { 1, 7, 256 };
	size_t i, m, mk, j;
	__u64 r = 99;

	kt_begin("topk_heap_matches_full_ranking");
	for (i = 0; i < N; i++) {
		char key[32];

		r = r * 6364136223846793005ULL + 1442695040888963407ULL;
		snprintf(key, sizeof(key), "k:%zu", i);
		ut_cand(&c[i], key, 1, (__u32)(r >> 60));
		/* 40 distinct weights: ties by the hundred */
		ut_cms_add(s, (r >> 40) & 1 ? KS_CLASS_READ : KS_CLASS_WRITE,
			   c[i].hash, 1 + (__u32)((r >> 33) % 40));
	}
	m = ks_top_select(s, &iv, c, N, all, N);
	CHECK(m > 256, "only %zu ranked", m);
	for (i = 1; i < m; i++) {
		__u64 a = all[i - 1].reads_mps + all[i - 1].writes_mps;
		__u64 b = all[i].reads_mps + all[i].writes_mps;

		CHECK(a > b || (a == b && all[i - 1].hash < all[i].hash),
		      "entries %zu and %zu out of order", i - 1, i);
	}
	for (j = 0; j < sizeof(ks) / sizeof(ks[0]); j++) {
		memset(few, 0xa5, 256 * sizeof(*few));
		mk = ks_top_select(s, &iv, c, N, few, ks[j]);
		CHECK_EQ(mk, ks[j]);
		CHECK(!memcmp(few, all, mk * sizeof(*few)),
		      "the %zu kept differ from the ranking's first", ks[j]);
	}
	free(s);
	free(c);
	free(all);
	free(few);
	kt_end();
}

void test_topk(void)
{
	static const struct {
		const char *key;
		__u32 reads, writes;
	} keys[] = {
		{ "mid", 50, 0 },    { "top", 90, 30 },    { "nil", 0, 0 },
		{ "low", 1, 0 },     { "writer", 0, 100 }, { "tie-a", 20, 0 },
		{ "tie-b", 10, 10 },
	};
	const size_t n = sizeof(keys) / sizeof(keys[0]);
	struct ks_sketch *s = calloc(1, sizeof(*s));
	struct ks_interval iv = { .sample_n = 2,
				  .elapsed_ns = 1000000000ULL,
				  .total_requests = 1000 };
	struct ks_cand c[7];
	struct ks_top_entry out[KS_REPORT_TOP];
	size_t i, m;

	for (i = 0; i < n; i++) {
		ut_cms_add(s, KS_CLASS_READ, ut_hash(keys[i].key),
			   keys[i].reads);
		ut_cms_add(s, KS_CLASS_WRITE, ut_hash(keys[i].key),
			   keys[i].writes);
		ut_cand(&c[i], keys[i].key, 1, 0);
	}

	kt_begin("topk_sorted_by_reads_plus_writes");
	memset(out, 0, sizeof(out));
	m = ks_top_select(s, &iv, c, n, out, KS_REPORT_TOP);
	CHECK_EQ(m, 6); /* "nil" has no estimate */
	CHECK(m >= 6 && out[0].len == 3 && !memcmp(out[0].key, "top", 3),
	      "first is not 'top'");
	CHECK(m >= 6 && out[1].len == 6 && !memcmp(out[1].key, "writer", 6),
	      "second is not 'writer'");
	CHECK(m >= 6 && !memcmp(out[2].key, "mid", 3), "third is not 'mid'");
	CHECK(m >= 6 && !memcmp(out[5].key, "low", 3), "last is not 'low'");
	for (i = 1; i < m; i++) {
		__u64 a = out[i - 1].reads_mps + out[i - 1].writes_mps;
		__u64 b = out[i].reads_mps + out[i].writes_mps;

		CHECK(a > b || (a == b && out[i - 1].hash < out[i].hash),
		      "entries %zu and %zu out of order", i - 1, i);
	}
	/* 90 reads sampled 1 in 2 over 1 s: 180/s */
	CHECK_EQ(out[0].reads_mps, 180000);
	CHECK_EQ(out[0].writes_mps, 60000);
	CHECK_EQ(out[0].hash, ut_hash("top"));
	/* (90 + 30) * 2 of 1000 keys */
	CHECK_EQ(out[0].share_ppm, 240000);
	CHECK(out[0].err_mps > 0, "no error bound");
	kt_end();

	kt_begin("topk_truncates_to_k");
	m = ks_top_select(s, &iv, c, n, out, 2);
	CHECK_EQ(m, 2);
	CHECK(!memcmp(out[0].key, "top", 3) && !memcmp(out[1].key, "writer", 6),
	      "wrong two kept");
	CHECK_EQ(ks_top_select(s, &iv, c, 0, out, 5), 0);
	kt_end();
	free(s);
	topk_twins();
	topk_heap_matches_full_ranking();
}
