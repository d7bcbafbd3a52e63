// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The median's confidence interval and the stop rule of `make bench-line`
 * (user/util/spread.c). */
#include <errno.h>
#include <math.h>
#include "ktest.h"
#include "util/spread.h"
#include "unit.h"

/* The textbook intervals: n 20 at 95% is [x(6), x(15)] (coverage
 * 0.9586), n 6 is [x(1), x(6)] (0.969), n 5 cannot reach 95% (0.9375);
 * the order of the input does not matter and it is left as it was. */
static void intervals(void)
{
	double v[20], w[5] = { 5, 1, 4, 2, 3 };
	struct ks_spread s;
	__u32 i;

	kt_begin("spread_median_interval_order_statistics");
	for (i = 0; i < 20; i++)
		v[i] = (double)((i * 7) % 20 + 1); /* 1..20, shuffled */
	CHECK_EQ(ks_spread_of(v, 20, 0.95, &s), 0);
	CHECK(s.median == 10.5, "median %f", s.median);
	CHECK(s.lo == 6 && s.hi == 15, "[%f, %f]", s.lo, s.hi);
	CHECK(fabs(s.level - 0.958611) < 1e-5, "level %f", s.level);
	CHECK(s.min == 1 && s.max == 20 && s.n == 20, "min %f max %f", s.min,
	      s.max);
	CHECK(v[0] == 1 && v[1] == 8, "input changed");
	CHECK_EQ(ks_spread_of(v, 6, 0.95, &s), 0);
	CHECK(s.lo == s.min && s.hi == s.max, "n 6: [%f, %f]", s.lo, s.hi);
	CHECK(fabs(s.level - (1 - 2.0 / 64)) < 1e-9, "n 6 level %f", s.level);
	CHECK_EQ(ks_spread_of(w, 5, 0.95, &s), 0);
	CHECK(s.median == 3 && s.lo == 1 && s.hi == 5, "n 5");
	CHECK(s.level < 0.95, "n 5 claims %f", s.level);
	kt_end();
}

/* Enough trials only with the level reached and the interval narrow;
 * bad input refused. */
static void known(void)
{
	double v[12] = { 0.95, 0.96, 0.94, 0.95, 0.97, 0.95,
			 0.96, 0.94, 0.95, 0.96, 0.50, 1.40 };
	struct ks_spread s;

	kt_begin("spread_known_needs_level_and_width");
	CHECK_EQ(ks_spread_of(v, 5, 0.95, &s), 0);
	CHECK(!ks_spread_known(&s, 5, 0.95, 1.0), "n 5 is below 95%%");
	CHECK_EQ(ks_spread_of(v, 10, 0.95, &s), 0);
	CHECK(ks_spread_known(&s, 6, 0.95, 0.025), "10 close figures: [%f, %f]",
	      s.lo, s.hi);
	CHECK(!ks_spread_known(&s, 11, 0.95, 0.025), "min_n ignored");
	/* two wild figures widen the range, not the median's interval */
	CHECK_EQ(ks_spread_of(v, 12, 0.95, &s), 0);
	CHECK(s.min == 0.50 && s.max == 1.40, "range");
	CHECK(ks_spread_known(&s, 6, 0.95, 0.03), "outliers: [%f, %f]", s.lo,
	      s.hi);
	CHECK(!ks_spread_known(&s, 6, 0.95, 0.005), "width ignored");
	CHECK(!ks_spread_known(NULL, 1, 0.95, 1), "NULL");
	CHECK_EQ(ks_spread_of(v, 0, 0.95, &s), -EINVAL);
	CHECK_EQ(ks_spread_of(v, 5, 1.0, &s), -EINVAL);
	CHECK_EQ(ks_spread_of(v, 5, 0, &s), -EINVAL);
	CHECK_EQ(ks_spread_of(NULL, 5, 0.95, &s), -EINVAL);
	kt_end();
}

/* Thousands of figures (bench line's blocks): 2^-n underflows a double
 * past n 1,074, and the interval must still be the order statistics'
 * (about the median +- 0.98 sqrt(n) ranks), not the median alone. */
static void many(void)
{
	static double v[3000];
	struct ks_spread s;
	double half;
	__u32 i, n = 3000;

	kt_begin("spread_interval_of_thousands");
	for (i = 0; i < n; i++)
		v[i] = (double)((i * 7) % n + 1); /* 1..3000, shuffled */
	CHECK_EQ(ks_spread_of(v, n, 0.95, &s), 0);
	half = 0.98 * sqrt((double)n);
	CHECK(s.median == 1500.5, "median %f", s.median);
	CHECK(s.lo + s.hi == n + 1, "[%f, %f] not symmetric", s.lo, s.hi);
	CHECK(fabs(s.lo - (n / 2.0 - half)) < 3, "lo %f, about %f", s.lo,
	      n / 2.0 - half);
	CHECK(s.level >= 0.95 && s.level < 0.955, "level %f", s.level);
	kt_end();
}

void test_spread(void)
{
	intervals();
	known();
	many();
}
