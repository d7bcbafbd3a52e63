// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Merging per-CPU data: sketch rows, candidates, counter deltas. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ktest.h"
#include "unit.h"

static void merge_rows(void)
{
	const int ncpus = 3;
	size_t stride = ks_percpu_stride(sizeof(__u32) * KS_CMS_SEG);
	unsigned char *buf = calloc((size_t)ncpus, stride);
	__u32 dst[KS_CMS_SEG];
	int cpu, bad = 0;
	__u32 i;

	kt_begin("merge_percpu_sketch_rows");
	CHECK_EQ(stride, sizeof(__u32) * KS_CMS_SEG);
	for (cpu = 0; cpu < ncpus; cpu++) {
		__u32 *row = (__u32 *)(buf + (size_t)cpu * stride);

		for (i = 0; i < KS_CMS_SEG; i++)
			row[i] = (__u32)cpu * 1000 + i;
	}
	/* merging adds onto what dst holds: 5 everywhere first */
	for (i = 0; i < KS_CMS_SEG; i++)
		dst[i] = 5;
	ks_cms_merge_row(dst, buf, ncpus, stride);
	for (i = 0; i < KS_CMS_SEG; i++)
		bad += dst[i] != 5 + 3000 + 3 * i;
	CHECK(bad == 0, "%d cells not the sum of 3 CPUs", bad);
	CHECK_EQ(dst[0], 3005);
	CHECK_EQ(dst[KS_CMS_SEG - 1], 3005 + 3 * (KS_CMS_SEG - 1));
	kt_end();

	kt_begin("merge_saturates");
	memset(buf, 0, (size_t)ncpus * stride);
	((__u32 *)buf)[7] = 0xfffffff0U;
	((__u32 *)(buf + stride))[7] = 0x20;
	memset(dst, 0, sizeof(dst));
	ks_cms_merge_row(dst, buf, 2, stride);
	CHECK_EQ(dst[7], 0xffffffffU);
	CHECK_EQ(dst[6], 0);
	kt_end();
	free(buf);

	kt_begin("percpu_stride_rounds_to_8");
	CHECK_EQ(ks_percpu_stride(1), 8);
	CHECK_EQ(ks_percpu_stride(12), 16);
	CHECK_EQ(ks_percpu_stride(sizeof(struct ks_cand)), 280);
	CHECK_EQ(ks_percpu_stride(sizeof(struct ks_op_stats)), 24);
	kt_end();
}

static void point_query(void)
{
	struct ks_sketch *s = calloc(1, sizeof(*s));
	__u64 h = ut_hash("user:42");
	__u32 r;

	kt_begin("cms_point_query_is_row_min");
	for (r = 0; r < KS_CMS_DEPTH; r++)
		s->c[KS_CLASS_READ][r][ks_cms_col(h, r)] = 10 + r * 7;
	CHECK_EQ(ks_cms_point(s, KS_CLASS_READ, h), 10);
	s->c[KS_CLASS_READ][2][ks_cms_col(h, 2)] = 3;
	CHECK_EQ(ks_cms_point(s, KS_CLASS_READ, h), 3);
	CHECK_EQ(ks_cms_point(s, KS_CLASS_WRITE, h), 0);
	kt_end();

	kt_begin("cms_conservative_update_exact_alone");
	memset(s, 0, sizeof(*s));
	ut_cms_add(s, KS_CLASS_WRITE, h, 37);
	CHECK_EQ(ks_cms_point(s, KS_CLASS_WRITE, h), 37);
	CHECK_EQ(ks_cms_point(s, KS_CLASS_READ, h), 0);
	/* stream length: 37 sampled keys, whatever the counters say */
	CHECK_EQ(ks_class_stream_len(s, KS_CLASS_WRITE, 37 * 4, 4), 37);
	CHECK_EQ(ks_class_stream_len(s, KS_CLASS_WRITE, 1000, 4), 250);
	CHECK_EQ(ks_class_stream_len(s, KS_CLASS_WRITE, 0, 4), 37);
	CHECK_EQ(ks_class_stream_len(s, KS_CLASS_WRITE, 1001, 0), 1001);
	kt_end();
	free(s);
}

/*
 * Many slots (a host of N CPUs hands over N * 1024): 20,000 slots of 3,000
 * keys with random counts; kept: every key once, with its highest count
 * (of equals the first slot), in the order of the slots kept.
 */
static void dedup_many(void)
{
	enum {
		N = 20000,
		KEYS = 3000
	};
	struct ks_cand *c = calloc(N, sizeof(*c));
	__u32 *best = calloc(KEYS, sizeof(*best));
	size_t *first = calloc(KEYS, sizeof(*first));
	size_t i, n, prev = 0, bad = 0, drawn = 0;
	__u64 r = 7;

	kt_begin("cand_dedup_many_keeps_heaviest_in_order");
	for (i = 0; i < KEYS; i++)
		first[i] = N;
	for (i = 0; i < N; i++) {
		char key[16];
		size_t k;

		r = r * 6364136223846793005ULL + 1442695040888963407ULL;
		k = (r >> 33) % KEYS;
		snprintf(key, sizeof(key), "k:%zu", k);
		ut_cand(&c[i], key, 1, (__u32)(r >> 58));
		/* the pad bytes carry the key's number and the slot's */
		c[i].pad[0] = (__u8)(k & 0xff);
		c[i].pad[1] = (__u8)(k >> 8);
		c[i].pad[2] = (__u8)(i & 0xff);
		c[i].pad[3] = (__u8)(i >> 8);
		c[i].pad[4] = (__u8)(i >> 16);
		if (first[k] == N || c[i].count > best[k]) {
			best[k] = c[i].count;
			first[k] = i; /* the slot dedup must keep */
		}
	}
	n = ks_cands_dedup(c, N);
	for (i = 0; i < n; i++) {
		size_t k = c[i].pad[0] | (size_t)c[i].pad[1] << 8;
		size_t slot = c[i].pad[2] | (size_t)c[i].pad[3] << 8 |
			      (size_t)c[i].pad[4] << 16;

		if (k >= KEYS || first[k] != slot || (i && slot <= prev))
			bad++;
		prev = slot;
	}
	for (i = 0; i < KEYS; i++)
		drawn += first[i] != N;
	CHECK_EQ(n, drawn);
	CHECK_EQ(bad, 0);
	free(c);
	free(best);
	free(first);
	kt_end();
}

static void candidates(void)
{
	struct ks_cand c[6];
	size_t n;

	kt_begin("cand_usable");
	ut_cand(&c[0], "alpha", 7, 1);
	CHECK(ks_cand_usable(&c[0], 7), "fresh slot rejected");
	CHECK(ks_cand_usable(&c[0], 6), "slot touched after the flip rejected");
	CHECK(!ks_cand_usable(&c[0], 8), "slot of an older interval taken");
	c[0].key[0] = 'A'; /* torn: bytes no longer match the hash */
	CHECK(!ks_cand_usable(&c[0], 7), "torn slot taken");
	ut_cand(&c[0], "alpha", 2, 1);
	CHECK(ks_cand_usable(&c[0], 0xfffffffeU), "seq wrap-around rejected");
	c[0].hash = 0;
	CHECK(!ks_cand_usable(&c[0], 2), "empty slot taken");
	ut_cand(&c[0], "alpha", 2, 1);
	c[0].len = KS_MAX_KEY_LEN + 1;
	CHECK(!ks_cand_usable(&c[0], 2), "overlong slot taken");
	kt_end();

	kt_begin("cand_dedup_by_hash");
	ut_cand(&c[0], "a", 1, 1);
	ut_cand(&c[1], "b", 1, 1);
	ut_cand(&c[2], "a", 1, 5); /* same key from another CPU */
	ut_cand(&c[3], "c", 1, 1);
	ut_cand(&c[4], "b", 1, 2);
	ut_cand(&c[5], "a", 1, 3);
	n = ks_cands_dedup(c, 6);
	CHECK_EQ(n, 3);
	/* the heaviest slot of each key, in the slots' own order: a's
	 * (count 5, slot 2), c's (slot 3), b's (count 2, slot 4) */
	CHECK(c[0].hash != c[1].hash && c[1].hash != c[2].hash &&
		      c[0].hash != c[2].hash,
	      "a key kept twice");
	CHECK_EQ(c[0].count, 5);
	CHECK(c[0].key[0] == 'a' && c[1].key[0] == 'c' && c[2].key[0] == 'b',
	      "not in the slots' order");
	CHECK_EQ(c[2].count, 2);
	CHECK_EQ(ks_cands_dedup(c, 0), 0);
	kt_end();
	dedup_many();
}

static void rates(void)
{
	struct ks_totals prev = {}, cur = {};
	struct ks_report *rep = calloc(1, sizeof(*rep));
	__u64 keys[KS_CLASS_MAX];

	kt_begin("class_rates_from_deltas");
	prev.ops[KS_OP_GET].requests = 1000;
	cur.ops[KS_OP_GET].requests = 1200; /* +200 */
	cur.ops[KS_OP_GETS].requests = 100; /* +100 */
	cur.ops[KS_OP_GET].keys = 700;
	cur.ops[KS_OP_SET].requests = 50;
	cur.ops[KS_OP_SET].keys = 50;
	cur.ops[KS_OP_SET].bytes = 5000;
	cur.ops[KS_OP_OTHER].requests = 3;
	cur.errors[KS_ERR_BAD_KEY] = 9;
	prev.errors[KS_ERR_WINDOW] = 10; /* went backwards: counts as 0 */
	ks_fill_rates(&prev, &cur, 2000000000ULL, rep);
	CHECK_EQ(rep->class_req_mps[KS_CLASS_READ], 150000);
	CHECK_EQ(rep->class_key_mps[KS_CLASS_READ], 350000);
	CHECK_EQ(rep->class_req_mps[KS_CLASS_WRITE], 25000);
	CHECK_EQ(rep->class_byte_mps[KS_CLASS_WRITE], 2500000);
	CHECK_EQ(rep->class_req_mps[KS_CLASS_OTHER], 1500);
	CHECK_EQ(rep->err_mps[KS_ERR_BAD_KEY], 4500);
	CHECK_EQ(rep->err_mps[KS_ERR_WINDOW], 0);
	ks_class_keys(&prev, &cur, keys);
	CHECK_EQ(keys[KS_CLASS_READ], 700);
	CHECK_EQ(keys[KS_CLASS_WRITE], 50);
	CHECK_EQ(keys[KS_CLASS_OTHER], 0);
	kt_end();
	free(rep);

	kt_begin("to_mps_rounds_and_clamps");
	CHECK_EQ(ks_to_mps(1.2345), 1235);
	CHECK_EQ(ks_to_mps(0), 0);
	CHECK_EQ(ks_to_mps(-3), 0);
	CHECK_EQ(ks_to_mps(1e30), ~0ULL);
	kt_end();
}

void test_merge(void)
{
	merge_rows();
	point_query();
	candidates();
	rates();
}
