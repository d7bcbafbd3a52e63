// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Estimation on synthetic sketches: a known skewed stream (Zipf over
 * 20,000 keys plus one flash key at about a quarter of the requests, 10%
 * writes) is sampled 1 in N with a countdown and fed through conservative
 * update; the estimates of the true top keys must land within the bound
 * the agent publishes, and the bound must follow its formula.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ktest.h"
#include "unit.h"

#define NKEYS 20000
#define FLASH NKEYS /* index of the flash-sale key */

struct stream {
	__u32 *key;  /* key index per request */
	__u8 *write; /* 1 if that request is a write */
	size_t len;
	__u64 reads[NKEYS + 1], writes[NKEYS + 1];
	__u64 hash[NKEYS + 1];
};

static __u64 rng_state = 0x2545f4914f6cdd1dULL;

static __u64 rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void key_name(__u32 i, char *buf, size_t len)
{
	if (i == FLASH)
		snprintf(buf, len, "flash:sale:item");
	else
		snprintf(buf, len, "user:%05u", i);
}

static struct stream *make_stream(void)
{
	struct stream *st = calloc(1, sizeof(*st));
	size_t cap = 0, i, n = 0;
	__u32 k, c;
	char name[32];

	for (k = 0; k < NKEYS; k++)
		cap += 20000 / (k + 1);
	cap += cap / 3 + 1; /* the flash key: a quarter of all */
	st->key = malloc(cap * sizeof(*st->key));
	st->write = malloc(cap);
	for (k = 0; k < NKEYS; k++)
		for (c = 0; c < 20000 / (k + 1); c++)
			st->key[n++] = k;
	while (n < cap)
		st->key[n++] = FLASH;
	st->len = n;
	/* shuffle so the countdown sees keys interleaved, as on the wire */
	for (i = n - 1; i > 0; i--) {
		size_t j = rng() % (i + 1);
		__u32 t = st->key[i];

		st->key[i] = st->key[j];
		st->key[j] = t;
	}
	for (i = 0; i < n; i++) {
		st->write[i] = rng() % 10 == 0;
		if (st->write[i])
			st->writes[st->key[i]]++;
		else
			st->reads[st->key[i]]++;
	}
	for (k = 0; k <= NKEYS; k++) {
		key_name(k, name, sizeof(name));
		st->hash[k] = ut_hash(name);
	}
	return st;
}

/* Feeds the stream sampled 1 in n into s; fills iv for a 1 s interval. */
static void sample_stream(const struct stream *st, __u32 n, struct ks_sketch *s,
			  struct ks_interval *iv)
{
	__u64 keys[KS_CMS_CLASSES] = {};
	__u32 countdown = 0;
	size_t i;
	__u32 c;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < st->len; i++) {
		__u32 cls = st->write[i] ? KS_CLASS_WRITE : KS_CLASS_READ;

		keys[cls]++;
		if (countdown) {
			countdown--;
			continue;
		}
		countdown = n - 1;
		ut_cms_add(s, cls, st->hash[st->key[i]], 1);
	}
	memset(iv, 0, sizeof(*iv));
	iv->sample_n = n;
	iv->elapsed_ns = 1000000000ULL;
	for (c = 0; c < KS_CMS_CLASSES; c++)
		iv->class_sampled[c] = ks_class_stream_len(s, c, keys[c], n);
	iv->total_requests = st->len;
}

/* The true top 10 by reads + writes (index order breaks ties). */
static void true_top(const struct stream *st, __u32 top[10])
{
	__u32 i, j, k;

	for (i = 0; i < 10; i++)
		top[i] = ~0U;
	for (k = 0; k <= NKEYS; k++) {
		__u64 v = st->reads[k] + st->writes[k];

		for (i = 0; i < 10; i++) {
			if (top[i] == ~0U ||
			    v > st->reads[top[i]] + st->writes[top[i]]) {
				for (j = 9; j > i; j--)
					top[j] = top[j - 1];
				top[i] = k;
				break;
			}
		}
	}
}

static void check_within_bound(const struct stream *st, __u32 n)
{
	struct ks_sketch *s = malloc(sizeof(*s));
	struct ks_interval iv;
	__u32 top[10], i;
	double worst = 0;
	char name[64];

	snprintf(name, sizeof(name), "estimates_within_bound_sample_%u", n);
	kt_begin(name);
	sample_stream(st, n, s, &iv);
	true_top(st, top);
	for (i = 0; i < 10; i++) {
		struct ks_key_estimate e;
		double truth = (double)(st->reads[top[i]] + st->writes[top[i]]);
		double est, err;

		ks_estimate_key(s, &iv, st->hash[top[i]], &e);
		est = e.reads_ps + e.writes_ps;
		err = fabs(est - truth);
		if (err / e.err_ps > worst)
			worst = err / e.err_ps;
		CHECK(err <= e.err_ps,
		      "key #%u: estimate %.0f, truth %.0f, bound %.1f", i, est,
		      truth, e.err_ps);
		/* count-min never undercounts what it was fed */
		if (n == 1) {
			CHECK(e.reads >= st->reads[top[i]] &&
				      e.writes >= st->writes[top[i]],
			      "key #%u undercounted", i);
			/* the end-to-end target for N = 1 */
			CHECK(err <= truth * 0.02,
			      "key #%u off by %.0f, over 2%% of %.0f", i, err,
			      truth);
		}
		CHECK(e.share > 0 && e.share <= 1, "share %f", e.share);
	}
	/* the flash key holds about a quarter of all requests */
	{
		struct ks_key_estimate e;

		ks_estimate_key(s, &iv, st->hash[FLASH], &e);
		CHECK(fabs(e.share - 0.25) < 0.02, "flash share %.3f", e.share);
	}
	if (getenv("KS_UNIT_VERBOSE"))
		fprintf(stderr, "sample %u: worst error/bound %.3f\n", n,
			worst);
	kt_end();
	free(s);
}

static void bound_formula(void)
{
	struct ks_sketch *s = calloc(1, sizeof(*s));
	struct ks_interval iv = {
		.sample_n = 4,
		.elapsed_ns = 2000000000ULL,
		.class_sampled = { 4096, 8192 },
		.total_requests = 640,
	};
	struct ks_key_estimate e;
	__u64 h = ut_hash("k");
	double want;

	kt_begin("error_bound_formula");
	/* (e / width) * N: e counts for N = width */
	CHECK(fabs(ks_cms_bound(KS_CMS_WIDTH) - M_E) < 1e-9, "cms bound %f",
	      ks_cms_bound(KS_CMS_WIDTH));
	CHECK(ks_cms_bound(0) == 0, "cms bound of nothing");
	/* 2 sqrt(c n (n - 1)): c = 16, n = 4 -> 2 sqrt(192) */
	CHECK(fabs(ks_sampling_bound(16, 4) - 2 * sqrt(192.0)) < 1e-9,
	      "sampling bound %f", ks_sampling_bound(16, 4));
	CHECK(ks_sampling_bound(16, 1) == 0, "no sampling error at n = 1");
	CHECK(ks_sampling_bound(0, 8) == 0, "no sampling error at count 0");

	ut_cms_add(s, KS_CLASS_READ, h, 10);
	ut_cms_add(s, KS_CLASS_WRITE, h, 6);
	ks_estimate_key(s, &iv, h, &e);
	CHECK_EQ(e.reads, 10);
	CHECK_EQ(e.writes, 6);
	CHECK(fabs(e.reads_ps - 20.0) < 1e-9, "reads/s %f", e.reads_ps);
	CHECK(fabs(e.writes_ps - 12.0) < 1e-9, "writes/s %f", e.writes_ps);
	/* both classes' cm bounds, scaled by n, plus the sampling term,
	 * all over 2 s */
	want = (M_E / KS_CMS_WIDTH * (4096 + 8192) * 4 +
		2 * sqrt(16 * 4 * 3.0)) /
	       2;
	CHECK(fabs(e.err_ps - want) < 1e-9, "bound %f, want %f", e.err_ps,
	      want);
	/* 16 sampled of 640 keys, scaled by 4: a tenth */
	CHECK(fabs(e.share - 0.1) < 1e-9, "share %f", e.share);
	kt_end();
	free(s);
}

/* The fast path's gets, counted in ks_pkts, join ops[GET] and nothing
 * else: requests and keys one each, their bytes; pkts left as they were. */
static void fold_fast(void)
{
	struct ks_totals prev = {}, cur = {}, was;
	__u64 keys[KS_CLASS_MAX];
	__u32 op;

	kt_begin("ops_fold_fast_adds_the_fast_gets_to_get");
	cur.ops[KS_OP_GET] = (struct ks_op_stats){ 10, 25, 300 };
	cur.ops[KS_OP_GETS] = (struct ks_op_stats){ 2, 2, 40 };
	cur.ops[KS_OP_SET] = (struct ks_op_stats){ 3, 3, 900 };
	cur.pkts[KS_PKT_SEEN] = 20;
	cur.pkts[KS_PKT_FAST_GET] = 7;
	cur.pkts[KS_PKT_FAST_GET_BYTES] = 7 * 16;
	was = cur;
	ks_ops_fold_fast(cur.ops, cur.pkts);
	CHECK_EQ(cur.ops[KS_OP_GET].requests, 17);
	CHECK_EQ(cur.ops[KS_OP_GET].keys, 32);
	CHECK_EQ(cur.ops[KS_OP_GET].bytes, 300 + 7 * 16);
	for (op = 0; op < KS_OP_MAX; op++)
		if (op != KS_OP_GET)
			CHECK(!memcmp(&cur.ops[op], &was.ops[op],
				      sizeof(cur.ops[op])),
			      "op %u changed", op);
	CHECK(!memcmp(cur.pkts, was.pkts, sizeof(cur.pkts)), "pkts changed");
	/* what the interval's arithmetic makes of it: each get once */
	CHECK_EQ(ks_total_requests(&prev, &cur), 17 + 2 + 3);
	ks_class_keys(&prev, &cur, keys);
	CHECK_EQ(keys[KS_CLASS_READ], 32 + 2);
	CHECK_EQ(keys[KS_CLASS_WRITE], 3);
	/* nothing taken by the fast path: nothing added */
	memset(&cur, 0, sizeof(cur));
	cur.ops[KS_OP_GET] = (struct ks_op_stats){ 1, 1, 9 };
	ks_ops_fold_fast(cur.ops, cur.pkts);
	CHECK_EQ(cur.ops[KS_OP_GET].requests, 1);
	CHECK_EQ(cur.ops[KS_OP_GET].bytes, 9);
	kt_end();
}

void test_estimate(void)
{
	struct stream *st = make_stream();

	fold_fast();
	bound_formula();
	check_within_bound(st, 1);
	check_within_bound(st, 16);
	check_within_bound(st, 64);
	free(st->key);
	free(st->write);
	free(st);
}
