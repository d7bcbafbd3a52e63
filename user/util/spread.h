/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * spread.h - the median of a benchmark's repeated figures and how sure it
 * is: a distribution-free confidence interval of the median (order
 * statistics; no assumption that the noise is normal, which on a shared
 * machine it is not), and the rule that says when enough trials are in.
 */
#ifndef KS_SPREAD_H
#define KS_SPREAD_H

#include <stdbool.h>
#include <linux/types.h>

struct ks_spread {
	double median;
	double lo, hi;   /* the median's confidence interval */
	double level;    /* its coverage (>= the level asked for) */
	double min, max; /* of all the figures */
	__u32 n;
};

/*
 * The median of v[0..n) and the narrowest interval [x(j), x(n+1-j)] of
 * the sorted figures whose coverage of the true median is at least
 * level (0.95: P(Binomial(n, 1/2) < j) <= 2.5%). With too few figures
 * for that level (n < 6 at 0.95) the interval is [min, max] and its
 * coverage is what it is (s->level says). v is not changed. -EINVAL for
 * n 0 or more than 2^20, or level outside (0, 1).
 */
int ks_spread_of(const double *v, __u32 n, double level, struct ks_spread *s);

/*
 * Enough trials: at least min_n figures, an interval that reaches its
 * level, and width (hi - lo) at most max_width. The caller stops at its
 * own cap too, and says the spread was not reached.
 */
bool ks_spread_known(const struct ks_spread *s, __u32 min_n, double level,
		     double max_width);

#endif
