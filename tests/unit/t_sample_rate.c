// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --sample auto: the per-CPU rate controller (core/sample_rate.c) and the
 * option's parsing; the weighted merge that scales each CPU's sketch by
 * its own rate (core/estimate.c).
 */
#include <stdlib.h>
#include <string.h>
#include "ktest.h"
#include "core/estimate.h"
#include "core/sample_rate.h"
#include "unit.h"

#define SEC 1000000000ULL

static void parse(void)
{
	struct ks_sample_opt o;
	char err[160];

	kt_begin("sample_parse_fixed_and_auto");
	CHECK_EQ(ks_sample_parse("8", 1000000, &o, err, sizeof(err)), 0);
	CHECK_EQ(o.n, 8);
	CHECK_EQ(o.target, 0);
	CHECK_EQ(ks_sample_parse("auto", 1000000, &o, err, sizeof(err)), 0);
	CHECK_EQ(o.n, 0);
	CHECK_EQ(o.target, KS_RATE_TARGET_DEFAULT);
	CHECK_EQ(ks_sample_parse("auto:5000", 1000000, &o, err, sizeof(err)),
		 0);
	CHECK_EQ(o.target, 5000);
	kt_end();

	kt_begin("sample_parse_rejects_bad_input");
	CHECK(ks_sample_parse("0", 1000000, &o, err, sizeof(err)) < 0, "0");
	CHECK(strstr(err, "auto[:TARGET]") != NULL, "err: %s", err);
	CHECK(ks_sample_parse("auto:", 1000000, &o, err, sizeof(err)) < 0,
	      "auto:");
	CHECK(ks_sample_parse("auto:10", 1000000, &o, err, sizeof(err)) < 0,
	      "target under the minimum");
	CHECK(ks_sample_parse("auto:-5", 1000000, &o, err, sizeof(err)) < 0,
	      "negative target");
	CHECK(ks_sample_parse("automatic", 1000000, &o, err, sizeof(err)) < 0,
	      "automatic");
	CHECK(ks_sample_parse("2000000", 1000000, &o, err, sizeof(err)) < 0,
	      "over max");
	CHECK(ks_sample_parse("8x", 1000000, &o, err, sizeof(err)) < 0, "8x");
	kt_end();
}

static void controller(void)
{
	__u32 t = 100000;

	kt_begin("rate_quiet_cpu_samples_every_key");
	CHECK_EQ(ks_rate_next(8, 10000, SEC, t), 1);
	CHECK_EQ(ks_rate_next(1024, 0, SEC, t), 1);   /* idle */
	CHECK_EQ(ks_rate_next(1, 80000, SEC, t), 1);  /* under the target */
	CHECK_EQ(ks_rate_next(1, 100000, SEC, t), 1); /* at it */
	kt_end();

	kt_begin("rate_busy_cpu_lowest_power_of_two_under_target");
	CHECK_EQ(ks_rate_next(1, 100001, SEC, t), 2);
	CHECK_EQ(ks_rate_next(1, 1000000, SEC, t), 16);   /* 62,500/s */
	CHECK_EQ(ks_rate_next(1, 10000000, SEC, t), 128); /* 78,125/s */
	/* the interval's length counts: 1M keys in 0.5 s is 2M/s */
	CHECK_EQ(ks_rate_next(1, 1000000, SEC / 2, t), 32);
	/* 1 in 1,024 is the floor, whatever the load */
	CHECK_EQ(ks_rate_next(1, 10000000000ULL, SEC, t), KS_RATE_MAX_N);
	kt_end();

	kt_begin("rate_goes_up_at_once_down_with_headroom");
	/* a burst from 10k to 10M keys/s: straight to 128 */
	CHECK_EQ(ks_rate_next(1, 10000000, SEC, t), 128);
	/* 90,000/s at 1 in 1 would be over 80% of the target: stays at 2 */
	CHECK_EQ(ks_rate_next(2, 90000, SEC, t), 2);
	/* 79,000/s fits under 80%: down to 1 */
	CHECK_EQ(ks_rate_next(2, 79000, SEC, t), 1);
	/* 1.9M/s at 16 is 118,750/s, over: up to 32 */
	CHECK_EQ(ks_rate_next(16, 1900000, SEC, t), 32);
	/* 1.5M/s: 16 gives 93,750 (over 80%), 32 gives 46,875: stays 32 */
	CHECK_EQ(ks_rate_next(32, 1500000, SEC, t), 32);
	/* load fell tenfold: 150k/s at 64 -> 2 (75,000/s, under 80%) */
	CHECK_EQ(ks_rate_next(64, 150000, SEC, t), 2);
	kt_end();

	kt_begin("rate_stable_at_a_boundary");
	{
		__u32 n = 1, i, changes = 0, prev;

		/* a load wobbling 5% around 200k/s, the 1-in-2 boundary */
		for (i = 0; i < 40; i++) {
			prev = n;
			n = ks_rate_next(n, i % 2 ? 195000 : 205000, SEC, t);
			changes += n != prev;
		}
		CHECK(changes <= 1, "%u rate changes", changes);
		CHECK_EQ(n, 4);
	}
	kt_end();

	kt_begin("rate_without_a_target_or_time_keeps_its_rate");
	CHECK_EQ(ks_rate_next(8, 1000000, SEC, 0), 8);
	CHECK_EQ(ks_rate_next(8, 1000000, 0, t), 8);
	CHECK_EQ(ks_rate_next(0, 1000000, 0, t), 1);
	kt_end();
}

/*
 * --place-target (issue 27): each CPU's 1 in P of its sampled keys placed
 * on the ring, from the keys it sampled. 1 under the target whatever P
 * was (every sampled key placed, as before the bound); over it, the
 * sample rate's controller, so P goes up at once and down with headroom.
 */
static void placement(void)
{
	__u32 t = KS_PLACE_TARGET_DEFAULT, p, got;
	char err[200];

	kt_begin("place_parse_target_off_and_range");
	CHECK_EQ(ks_place_parse("4096", &got, err, sizeof(err)), 0);
	CHECK_EQ(got, 4096);
	CHECK_EQ(ks_place_parse("off", &got, err, sizeof(err)), 0);
	CHECK_EQ(got, 0);
	CHECK(ks_place_parse("15", &got, err, sizeof(err)) < 0, "15");
	CHECK(strstr(err, "from 16 to 100000000, or off") != NULL, "err: %s",
	      err);
	CHECK(ks_place_parse("0", &got, err, sizeof(err)) < 0, "0");
	CHECK(ks_place_parse("4k", &got, err, sizeof(err)) < 0, "4k");
	CHECK(ks_place_parse("", &got, err, sizeof(err)) < 0, "empty");
	CHECK(ks_place_parse("100000001", &got, err, sizeof(err)) < 0,
	      "over the maximum");
	kt_end();

	kt_begin("place_every_sampled_key_under_the_target");
	/* a test's load, and any load at or under the target: 1, from
	 * any P (no headroom asked on the way down to 1) */
	CHECK_EQ(ks_place_next(1, 500, SEC, t), 1);
	CHECK_EQ(ks_place_next(1, 4096, SEC, t), 1);
	CHECK_EQ(ks_place_next(64, 4000, SEC, t), 1);
	CHECK_EQ(ks_place_next(64, 0, SEC, t), 1); /* idle */
	/* the interval's length counts: 3,000 sampled in 0.5 s is over */
	CHECK_EQ(ks_place_next(1, 3000, SEC / 2, t), 2);
	kt_end();

	kt_begin("place_rate_bounds_placements_per_cpu");
	/* --sample auto's ~200,000 sampled keys/s at line rate: 1 in 64,
	 * 3,125 placements a second */
	CHECK_EQ(ks_place_next(1, 200000, SEC, t), 64);
	/* auto's own bound, 262,144/s: 1 in 64 still (4,096/s) */
	CHECK_EQ(ks_place_next(1, 262144, SEC, t), 64);
	/* --sample 1 at 10M keys/s: at most 1 in KS_RATE_MAX_N */
	CHECK_EQ(ks_place_next(1, 10000000, SEC, t), 1024);
	CHECK_EQ(ks_place_next(1, 100000000, SEC, t), KS_RATE_MAX_N);
	/* up at once, down with the rate controller's headroom */
	CHECK_EQ(ks_place_next(8, 200000, SEC, t), 64);
	/* 30,000/s: 3,750/s at 1 in 8 is over 80% of the target, 16 */
	CHECK_EQ(ks_place_next(64, 30000, SEC, t), 16);
	CHECK_EQ(ks_place_next(64, 26000, SEC, t), 8); /* 3,250/s at 8 */
	CHECK_EQ(ks_place_next(64, 16000, SEC, t), 8); /* 2,000/s at 8 */
	/* a load wobbling around 8,192/s (the 1-in-2 boundary) settles */
	for (p = 1, got = 0; got < 40; got++)
		p = ks_place_next(p, got % 2 ? 8000 : 8400, SEC, t);
	CHECK_EQ(p, 4);
	kt_end();

	kt_begin("place_p_for_the_next_rate");
	/* the same rate: the keys as counted */
	CHECK_EQ(ks_sampled_at(200000, 8, 8), 200000);
	CHECK_EQ(ks_sampled_at(200000, 0, 1), 200000);
	/* auto's first interval at 1 in 1 and 10M keys/s, the next at 1
	 * in 64: P for the 156,250 it will sample (64), not for the 10M it
	 * sampled (1,024, which left ~150 placements a second) */
	CHECK_EQ(ks_rate_next(1, 10000000, SEC, KS_RATE_TARGET_DEFAULT), 64);
	CHECK_EQ(ks_sampled_at(10000000, 1, 64), 156250);
	CHECK_EQ(ks_place_next(1, ks_sampled_at(10000000, 1, 64), SEC, t), 64);
	CHECK_EQ(ks_place_next(1, 10000000, SEC, t), 1024);
	/* 1M keys/s, 1 in 1 then 1 in 4: 250,000 to place, 1 in 64 */
	CHECK_EQ(ks_place_next(1, ks_sampled_at(1000000, 1, 4), SEC, t), 64);
	/* a rate going down (more sampled): P up with it, rounded up */
	CHECK_EQ(ks_sampled_at(1001, 4, 2), 2002);
	CHECK_EQ(ks_sampled_at(1001, 2, 4), 501);
	kt_end();

	kt_begin("place_target_off_places_every_key");
	CHECK_EQ(ks_place_next(1, 100000000, SEC, 0), 1);
	CHECK_EQ(ks_place_next(64, 100000000, SEC, 0), 1);
	/* no time measured: P as it was */
	CHECK_EQ(ks_place_next(16, 100000, 0, t), 16);
	CHECK_EQ(ks_place_next(0, 100000, 0, t), 1);
	kt_end();
}

/* Two CPUs at different rates in one epoch: each CPU's row weighted by its
 * own N, so a key's estimate is the sum of what each CPU stands for. */
static void weighted_merge(void)
{
	__u32 rows[2][KS_CMS_SEG], dst[KS_CMS_SEG];
	__u32 n[2] = { 1, 16 };

	kt_begin("merge_weights_each_cpu_by_its_rate");
	memset(rows, 0, sizeof(rows));
	memset(dst, 0, sizeof(dst));
	rows[0][7] = 300; /* CPU 0 at 1 in 1: 300 keys */
	rows[1][7] = 20;  /* CPU 1 at 1 in 16: 20 samples, 320 keys */
	rows[1][9] = 0xffffffffU / 8;
	ks_cms_merge_row_weighted(dst, rows, 2, sizeof(rows[0]), n);
	CHECK_EQ(dst[7], 620);
	CHECK_EQ(dst[9], 0xffffffffU); /* saturates, never wraps */
	/* no weights: the plain sum */
	memset(dst, 0, sizeof(dst));
	ks_cms_merge_row_weighted(dst, rows, 2, sizeof(rows[0]), NULL);
	CHECK_EQ(dst[7], 320);
	kt_end();

	kt_begin("sampling_bound_uses_the_largest_rate");
	{
		struct ks_sketch *s = calloc(1, sizeof(*s));
		struct ks_interval iv = { .sample_n = 1,
					  .rate_max = 16,
					  .elapsed_ns = SEC };
		struct ks_key_estimate e;
		__u64 h = ut_hash("k");

		ut_cms_add(s, KS_CLASS_READ, h, 620);
		ks_estimate_key(s, &iv, h, &e);
		CHECK_EQ(e.reads, 620);
		CHECK(e.reads_ps > 619.9 && e.reads_ps < 620.1, "%f",
		      e.reads_ps);
		/* 2 sqrt(620 * 15) for the sampling, no count-min term (the
		 * stream length is 0 here) */
		CHECK(e.err_ps > 192.8 && e.err_ps < 192.9, "%f", e.err_ps);
		free(s);
	}
	kt_end();
}

void test_sample_rate(void)
{
	parse();
	controller();
	placement();
	weighted_merge();
}
