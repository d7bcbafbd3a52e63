// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The load tool's Zipf sampler and latency histogram (user/load/). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "ktest.h"
#include "load/zipf.h"
#include "load/hist.h"
#include "unit.h"

/* 1e5 draws at s = 0.99 over 1000 keys: each of the top 10 ranks is drawn
 * within 4.5 standard deviations of n * pmf, pmf(1)/pmf(2) is 2^0.99, and
 * the CDF's edges give rank 1 and rank n. */
static void distribution(void)
{
	enum {
		N = 100000,
		KEYS = 1000,
		TOP = 10
	};
	static __u32 seen[KEYS + 1];
	struct ks_zipf z;
	struct ks_rng r;
	__u32 i;

	kt_begin("zipf_top_ranks_match_pmf");
	CHECK_EQ(ks_zipf_init(&z, KEYS, 0.99), 0);
	ks_rng_seed(&r, 42);
	for (i = 0; i < N; i++) {
		__u32 k = ks_zipf_rank(&z, ks_rng_unit(&r));

		if (k >= 1 && k <= KEYS)
			seen[k]++;
		else
			CHECK(0, "rank %u out of 1..%u", k, KEYS);
	}
	for (i = 1; i <= TOP; i++) {
		double p = ks_zipf_pmf(&z, i), want = N * p;
		double sd = sqrt(N * p * (1 - p));

		CHECK(fabs(seen[i] - want) <= 4.5 * sd,
		      "rank %u drawn %u times, want %.0f +- %.0f", i, seen[i],
		      want, 4.5 * sd);
	}
	CHECK(fabs(ks_zipf_pmf(&z, 1) / ks_zipf_pmf(&z, 2) - pow(2, 0.99)) <
		      1e-9,
	      "pmf(1)/pmf(2) = %f", ks_zipf_pmf(&z, 1) / ks_zipf_pmf(&z, 2));
	CHECK_EQ(ks_zipf_rank(&z, 0.0), 1);
	CHECK_EQ(ks_zipf_rank(&z, 0.9999999999), KEYS);
	ks_zipf_free(&z);
	CHECK(ks_zipf_init(&z, 0, 1) == -EINVAL, "0 keys accepted");
	CHECK(ks_zipf_init(&z, 10, -1) == -EINVAL,
	      "negative exponent accepted");
	kt_end();
}

/* Same seed, same sequence; s = 0 is uniform. */
static void seeded(void)
{
	struct ks_rng a, b;
	struct ks_zipf z;
	__u32 i, same = 1;

	kt_begin("zipf_seeded_and_uniform");
	ks_rng_seed(&a, 7);
	ks_rng_seed(&b, 7);
	for (i = 0; i < 1000; i++)
		same &= ks_rng_next(&a) == ks_rng_next(&b);
	CHECK(same, "two generators seeded alike diverged");
	CHECK_EQ(ks_zipf_init(&z, 4, 0), 0);
	for (i = 1; i <= 4; i++)
		CHECK(fabs(ks_zipf_pmf(&z, i) - 0.25) < 1e-12, "pmf(%u) = %f",
		      i, ks_zipf_pmf(&z, i));
	ks_zipf_free(&z);
	kt_end();
}

/* Quantiles within the 1/16 bucket width of the true value. */
static void histogram(void)
{
	static struct ks_hist h;
	__u64 i;

	kt_begin("load_hist_quantiles");
	for (i = 1; i <= 100000; i++)
		ks_hist_add(&h, i * 10);
	CHECK_EQ(h.n, 100000);
	CHECK(llabs((long long)ks_hist_quantile(&h, 0.5) - 500000) <=
		      500000 / 16 + 1,
	      "p50 %llu", (unsigned long long)ks_hist_quantile(&h, 0.5));
	CHECK(llabs((long long)ks_hist_quantile(&h, 0.99) - 990000) <=
		      990000 / 16 + 1,
	      "p99 %llu", (unsigned long long)ks_hist_quantile(&h, 0.99));
	CHECK(ks_hist_quantile(&h, 1.0) >= 1000000, "p100 %llu below the max",
	      (unsigned long long)ks_hist_quantile(&h, 1.0));
	kt_end();
}

void test_zipf(void)
{
	distribution();
	seeded();
	histogram();
}
