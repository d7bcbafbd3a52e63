// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The sample log's fold (core/slog_fold.c): records weighted by their
 * rate, epochs kept apart, late records counted and dropped, the
 * candidate table's keeping and eviction, and what the interval reads.
 */
#include <stdlib.h>
#include <string.h>
#include "ktest.h"
#include "core/slog_fold.h"
#include "unit.h"

static void rec(struct ks_slog_rec *r, const char *key, __u32 cls, __u32 seq,
		__u32 n)
{
	memset(r, 0, sizeof(*r));
	r->len = (__u16)strlen(key);
	memcpy(r->key, key, r->len);
	r->hash = ut_hash(key);
	r->cls = (__u8)cls;
	r->seq = (__u16)seq;
	r->n = (__u16)n;
}

/* Adds times records of key at rate n, one call each. */
static void feed(struct ks_slog_fold *f, const char *key, __u32 cls, __u32 seq,
		 __u32 n, __u32 times)
{
	struct ks_slog_rec r;
	__u32 i;

	rec(&r, key, cls, seq, n);
	for (i = 0; i < times; i++)
		ks_slog_fold_add(f, &r, 1);
}

static const struct ks_cand *find(const struct ks_cand *c, size_t n,
				  const char *key)
{
	__u64 h = ut_hash(key);
	size_t i;

	for (i = 0; i < n; i++)
		if (c[i].hash == h)
			return &c[i];
	return NULL;
}

static void weights(void)
{
	struct ks_slog_fold *f = calloc(1, sizeof(*f));
	struct ks_sketch *sk = calloc(1, sizeof(*sk));
	struct ks_cand *c = calloc(64, sizeof(*c));
	const struct ks_cand *k;
	size_t n;

	kt_begin("slog_fold_lone_key_weighs_its_rates");
	CHECK_EQ(ks_slog_fold_init(f, 2, 7), 0);
	/* a rate change inside the interval (another CPU, or a fixed
	 * --sample changed): each record weighs its own n */
	feed(f, "user:1", KS_CLASS_READ, 7, 8, 100);
	feed(f, "user:1", KS_CLASS_READ, 7, 4, 30);
	feed(f, "user:1", KS_CLASS_READ, 7, 1, 5);
	feed(f, "user:1", KS_CLASS_WRITE, 7, 16, 2);
	CHECK_EQ(ks_slog_fold_point(f, 7 & 1, KS_CLASS_READ, ut_hash("user:1")),
		 100 * 8 + 30 * 4 + 5);
	CHECK_EQ(
		ks_slog_fold_point(f, 7 & 1, KS_CLASS_WRITE, ut_hash("user:1")),
		32);
	CHECK_EQ(f->folded, 137);
	ks_slog_fold_close(f, 7);
	/* read as the interval does: added to the kernel's merged sketch */
	ut_cms_add(sk, KS_CLASS_READ, ut_hash("user:1"), 11);
	ks_slog_fold_sketch(f, 7 & 1, sk);
	CHECK_EQ(ks_cms_point(sk, KS_CLASS_READ, ut_hash("user:1")),
		 11 + 100 * 8 + 30 * 4 + 5);
	n = ks_slog_fold_cands(f, 7, c, 64);
	CHECK_EQ(n, 1);
	k = find(c, n, "user:1");
	CHECK(k != NULL, "the key is a candidate");
	if (k) {
		CHECK_EQ(k->seq, 7);
		CHECK_EQ(k->len, 6);
		CHECK(!memcmp(k->key, "user:1", 6) && !k->key[6],
		      "key bytes, zero past");
		CHECK_EQ(k->count, 100 * 8 + 30 * 4 + 5);
		CHECK(ks_cand_usable(k, 7), "usable for the interval");
	}
	kt_end();

	kt_begin("slog_fold_unscaled_weighs_one");
	ks_slog_fold_free(f);
	CHECK_EQ(ks_slog_fold_init(f, 2, 3), 0);
	f->unscaled = 1;
	feed(f, "k", KS_CLASS_READ, 3, 64, 10);
	CHECK_EQ(ks_slog_fold_point(f, 1, KS_CLASS_READ, ut_hash("k")), 10);
	kt_end();

	kt_begin("slog_fold_same_as_kernel_sketch_times_n");
	/* many keys at one rate n: the fold's sketch is n times the
	 * kernel's conservative update at weight 1, cell for cell */
	{
		struct ks_sketch *ref = calloc(1, sizeof(*ref));
		char key[32];
		__u32 i, cells = 0, bad = 0, r, col;

		ks_slog_fold_free(f);
		CHECK_EQ(ks_slog_fold_init(f, 2, 0), 0);
		for (i = 0; i < 20000; i++) {
			snprintf(key, sizeof(key), "key:%u", (i * 7919) % 3001);
			feed(f, key, KS_CLASS_READ, 0, 8, 1);
			ut_cms_add(ref, KS_CLASS_READ, ut_hash(key), 1);
		}
		for (r = 0; r < KS_CMS_DEPTH; r++)
			for (col = 0; col < KS_CMS_WIDTH; col++) {
				cells += ref->c[0][r][col] != 0;
				bad += f->ep[0].sk.c[0][r][col] !=
				       8 * ref->c[0][r][col];
			}
		CHECK(cells > 1000, "%u cells used", cells);
		CHECK(bad == 0, "%u cells differ", bad);
		free(ref);
	}
	kt_end();
	ks_slog_fold_free(f);
	free(f);
	free(sk);
	free(c);
}

static void epochs(void)
{
	struct ks_slog_fold *f = calloc(1, sizeof(*f));
	struct ks_sketch *sk = calloc(1, sizeof(*sk));
	struct ks_cand *c = calloc(64, sizeof(*c));
	__u64 ha = ut_hash("a"), hb = ut_hash("b");
	size_t n;

	kt_begin("slog_fold_epochs_kept_apart");
	CHECK_EQ(ks_slog_fold_init(f, 1, 10), 0);
	feed(f, "a", KS_CLASS_READ, 10, 2, 5);
	/* the agent opens 11 before it moves seq; CPUs that saw the move
	 * log 11 while others still log 10 */
	ks_slog_fold_open(f, 11);
	feed(f, "b", KS_CLASS_READ, 11, 1, 3);
	feed(f, "a", KS_CLASS_READ, 10, 2, 1);
	CHECK_EQ(ks_slog_fold_point(f, 0, KS_CLASS_READ, ha), 12);
	CHECK_EQ(ks_slog_fold_point(f, 0, KS_CLASS_READ, hb), 0);
	CHECK_EQ(ks_slog_fold_point(f, 1, KS_CLASS_READ, hb), 3);
	CHECK_EQ(ks_slog_fold_point(f, 1, KS_CLASS_READ, ha), 0);
	/* an open slot is not read: the drain still writes it */
	ks_slog_fold_sketch(f, 0, sk);
	CHECK_EQ(ks_cms_point(sk, KS_CLASS_READ, ha), 0);
	CHECK_EQ(ks_slog_fold_cands(f, 10, c, 64), 0);
	ks_slog_fold_close(f, 10);
	ks_slog_fold_sketch(f, 0, sk);
	CHECK_EQ(ks_cms_point(sk, KS_CLASS_READ, ha), 12);
	CHECK_EQ(ks_cms_point(sk, KS_CLASS_READ, hb), 0);
	n = ks_slog_fold_cands(f, 10, c, 64);
	CHECK_EQ(n, 1);
	CHECK(find(c, n, "a") != NULL, "a of interval 10");
	/* asked for another interval of the slot: nothing */
	CHECK_EQ(ks_slog_fold_cands(f, 12, c, 64), 0);
	kt_end();

	kt_begin("slog_fold_late_records_counted_and_dropped");
	/* a CPU that read seq 10 before the move logs after the last
	 * drain: late, as a key the kernel counts after its read */
	feed(f, "a", KS_CLASS_READ, 10, 2, 4);
	CHECK_EQ(f->late, 4);
	CHECK_EQ(ks_slog_fold_point(f, 0, KS_CLASS_READ, ha), 12);
	ks_slog_fold_reset(f, 10 & 1);
	CHECK_EQ(ks_slog_fold_point(f, 0, KS_CLASS_READ, ha), 0);
	/* the slot's next turn: 12; records of 10 are still late */
	ks_slog_fold_open(f, 12);
	feed(f, "a", KS_CLASS_READ, 10, 2, 1);
	feed(f, "a", KS_CLASS_READ, 12, 1, 1);
	CHECK_EQ(f->late, 5);
	CHECK_EQ(ks_slog_fold_point(f, 0, KS_CLASS_READ, ha), 1);
	/* seq's low 16 bits: 65536 intervals later is the same slot and
	 * the same record seq, which no record lives long enough to meet */
	feed(f, "a", KS_CLASS_READ, 12 + 65536, 1, 1);
	CHECK_EQ(ks_slog_fold_point(f, 0, KS_CLASS_READ, ha), 2);
	kt_end();

	kt_begin("slog_fold_bad_records_counted");
	{
		struct ks_slog_rec r;

		rec(&r, "a", KS_CLASS_READ, 12, 1);
		r.len = KS_SLOG_KEY + 1;
		ks_slog_fold_add(f, &r, 1);
		rec(&r, "a", KS_CLASS_OTHER, 12, 1);
		ks_slog_fold_add(f, &r, 1);
		rec(&r, "a", KS_CLASS_READ, 12, 0);
		ks_slog_fold_add(f, &r, 1);
		CHECK_EQ(f->bad, 3);
		CHECK_EQ(ks_slog_fold_point(f, 0, KS_CLASS_READ, ha), 2);
	}
	kt_end();
	ks_slog_fold_free(f);
	free(f);
	free(sk);
	free(c);
}

/* Keys of one bucket of the fold's table, found by trying names. */
static size_t same_bucket(const struct ks_slog_fold *f, char keys[][16],
			  size_t want)
{
	__u32 mask = f->nbuckets - 1, b0 = 0;
	size_t n = 0;
	__u32 i;

	for (i = 0; i < 10000000 && n < want; i++) {
		char k[16];
		__u32 b;

		snprintf(k, sizeof(k), "b%u", i);
		b = (__u32)(ut_hash(k) >> 40) & mask;
		if (!n)
			b0 = b;
		if (b == b0)
			snprintf(keys[n++], 16, "%s", k);
	}
	return n;
}

static void candidates(void)
{
	struct ks_slog_fold *f = calloc(1, sizeof(*f));
	struct ks_cand *c = calloc(64, sizeof(*c));
	char keys[KS_CAND_WAYS + 2][16];
	size_t n;
	int i;

	kt_begin("slog_fold_table_as_big_as_the_cpus_tables");
	CHECK_EQ(ks_slog_fold_buckets(1), KS_CAND_BUCKETS);
	CHECK_EQ(ks_slog_fold_buckets(2), 2 * KS_CAND_BUCKETS);
	CHECK_EQ(ks_slog_fold_buckets(3), 4 * KS_CAND_BUCKETS);
	CHECK_EQ(ks_slog_fold_buckets(128), 128 * KS_CAND_BUCKETS);
	kt_end();

	kt_begin("slog_fold_candidates_kept_and_evicted");
	CHECK_EQ(ks_slog_fold_init(f, 2, 0), 0);
	CHECK_EQ(same_bucket(f, keys, KS_CAND_WAYS + 2), KS_CAND_WAYS + 2);
	/* a full bucket: heavy keys 0..WAYS-1, key 0 the lightest */
	for (i = 0; i < KS_CAND_WAYS; i++)
		feed(f, keys[i], KS_CLASS_READ, 0, 1, 5 + (__u32)i);
	CHECK_EQ(f->cand_insert, KS_CAND_WAYS);
	/* a key seen once is not heavier than the lightest: no room */
	feed(f, keys[KS_CAND_WAYS], KS_CLASS_READ, 0, 1, 1);
	CHECK_EQ(f->cand_evict, 0);
	/* one sampled at 1 in 64 weighs 64: it takes the lightest slot */
	feed(f, keys[KS_CAND_WAYS + 1], KS_CLASS_READ, 0, 64, 1);
	CHECK_EQ(f->cand_evict, 1);
	ks_slog_fold_close(f, 0);
	n = ks_slog_fold_cands(f, 0, c, 64);
	CHECK_EQ(n, KS_CAND_WAYS);
	CHECK(find(c, n, keys[0]) == NULL, "the lightest was evicted");
	for (i = 1; i < KS_CAND_WAYS; i++)
		CHECK(find(c, n, keys[i]) != NULL, "heavy key %d kept", i);
	CHECK(find(c, n, keys[KS_CAND_WAYS]) == NULL, "the light one out");
	CHECK(find(c, n, keys[KS_CAND_WAYS + 1]) != NULL, "the weighted in");
	/* a key's count is its highest estimate of either class */
	{
		const struct ks_cand *k = find(c, n, keys[KS_CAND_WAYS - 1]);

		CHECK(k && k->count == 5 + KS_CAND_WAYS - 1, "count %u",
		      k ? k->count : 0);
	}
	/* cap honoured */
	CHECK_EQ(ks_slog_fold_cands(f, 0, c, 2), 2);
	kt_end();
	ks_slog_fold_free(f);
	free(f);
	free(c);
}

static void period(void)
{
	const __u64 ms = 1000000ULL;

	kt_begin("slog_drain_period_follows_the_fill");
	/* a quarter of the log found waiting: the period holds */
	CHECK_EQ(ks_slog_period_next(6 * ms, KS_SLOG_FILL_AIM), 6 * ms);
	/* twice the aim: half the period at once */
	CHECK_EQ(ks_slog_period_next(6 * ms, 2 * KS_SLOG_FILL_AIM), 3 * ms);
	/* a full log: down to the floor, never under it */
	CHECK_EQ(ks_slog_period_next(6 * ms, KS_SLOG_RECS),
		 KS_SLOG_PERIOD_MIN_NS + ms / 2);
	CHECK_EQ(ks_slog_period_next(KS_SLOG_PERIOD_MIN_NS, KS_SLOG_RECS),
		 KS_SLOG_PERIOD_MIN_NS);
	/* a lull: at most doubled a step, never over the ceiling */
	CHECK_EQ(ks_slog_period_next(3 * ms, 0), 6 * ms);
	CHECK_EQ(ks_slog_period_next(3 * ms, 1), 6 * ms);
	CHECK_EQ(ks_slog_period_next(6 * ms, 0), KS_SLOG_PERIOD_MAX_NS);
	/* idle at the longest: a burst at auto's default target fills
	 * half the log before the next drain, not all of it */
	CHECK(KS_SLOG_PERIOD_MAX_NS * 262144 / 1000000000ULL <=
		      KS_SLOG_RECS / 2,
	      "the longest period holds %llu records",
	      (unsigned long long)(KS_SLOG_PERIOD_MAX_NS * 262144 /
				   1000000000ULL));
	CHECK_EQ(ks_slog_period_next(KS_SLOG_PERIOD_MAX_NS, 0),
		 KS_SLOG_PERIOD_MAX_NS);
	CHECK_EQ(ks_slog_period_next(0, 0), 2 * KS_SLOG_PERIOD_MIN_NS);
	/* at 262,144 keys/s a CPU the aim's 1,024 records take 3.9 ms: a
	 * period reached from any start stays there */
	{
		__u64 p = KS_SLOG_PERIOD_MAX_NS;
		int i;

		for (i = 0; i < 20; i++) {
			__u64 fill = p * 262144 / 1000000000ULL;

			p = ks_slog_period_next(p, fill > KS_SLOG_RECS
							   ? KS_SLOG_RECS
							   : (__u32)fill);
		}
		CHECK(p > 3 * ms && p < 5 * ms, "period %llu ns",
		      (unsigned long long)p);
	}
	kt_end();
}

static void takeover(void)
{
	/* any other bit, named or not (0x1000: the limits' grow-tail) */
	const __u32 others = KS_CFG_NO_STREAM | KS_CFG_REPLIES | 0x1000u |
			     0x80000000u;

	kt_begin("slog_takeover_drops_the_dead_drains_flag");
	CHECK_EQ(ks_slog_takeover_flags(KS_CFG_SLOG), 0);
	CHECK_EQ(ks_slog_takeover_flags(others | KS_CFG_SLOG), others);
	CHECK_EQ(ks_slog_takeover_flags(others), others);
	CHECK_EQ(ks_slog_takeover_flags(0), 0);
	kt_end();
}

void test_slog_fold(void)
{
	weights();
	epochs();
	candidates();
	period();
	takeover();
}
