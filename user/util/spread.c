// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* spread.c - the median's confidence interval by order statistics. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "util/spread.h"

#define KS_SPREAD_MAX (1U << 20)

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int ks_spread_of(const double *v, __u32 n, double level, struct ks_spread *s)
{
	double *t, lp, cdf, coverage = 0;
	__u32 i, j = 1;

	if (!v || !s || !n || n > KS_SPREAD_MAX || !(level > 0 && level < 1))
		return -EINVAL;
	t = malloc(n * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memcpy(t, v, n * sizeof(*t));
	qsort(t, n, sizeof(*t), cmp_double);
	memset(s, 0, sizeof(*s));
	s->n = n;
	s->min = t[0];
	s->max = t[n - 1];
	s->median = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
	/* P(B < j) for B ~ Binomial(n, 1/2), j = 1, 2, ...: the interval
	 * [x(j), x(n+1-j)] misses the median with probability 2 P(B < j);
	 * take the largest j that keeps that within 1 - level. P(B = i) is
	 * carried as its logarithm: 2^-n underflows a double past n 1,074,
	 * and bench line's blocks run to thousands */
	lp = -(double)n * M_LN2; /* log P(B = 0) */
	cdf = exp(lp);
	coverage = 1 - 2 * cdf;
	for (i = 1; 2 * (i + 1) <= n + 1; i++) {
		double next;

		lp += log((double)(n - i + 1) / i); /* log P(B = i) */
		next = 1 - 2 * (cdf + exp(lp));
		if (next < level)
			break;
		cdf += exp(lp);
		coverage = next;
		j = i + 1;
	}
	s->lo = t[j - 1];
	s->hi = t[n - j];
	s->level = coverage;
	free(t);
	return 0;
}

bool ks_spread_known(const struct ks_spread *s, __u32 min_n, double level,
		     double max_width)
{
	return s && s->n >= min_n && s->n > 0 && s->level >= level &&
	       s->hi - s->lo <= max_width;
}
