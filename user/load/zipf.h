/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * zipf.h - the load tool's key popularity: Zipf over ranks 1..n with
 * exponent s (P(rank k) proportional to 1/k^s), sampled by binary search in
 * a precomputed CDF, and the small seeded generator that drives it, so a
 * fixed --seed replays the same key sequence.
 */
#ifndef KS_LOAD_ZIPF_H
#define KS_LOAD_ZIPF_H

#include <linux/types.h>

#define KS_ZIPF_MAX_KEYS 20000000U /* 160 MB of CDF: a sane ceiling */

struct ks_zipf {
	double *cdf; /* cdf[i] = P(rank <= i + 1); cdf[n - 1] == 1 */
	__u32 n;
	double s;
};

/* n in 1..KS_ZIPF_MAX_KEYS, s in [0, 10]; -EINVAL or -ENOMEM. */
int ks_zipf_init(struct ks_zipf *z, __u32 n, double s);
void ks_zipf_free(struct ks_zipf *z);

/* The rank (1..n) for a uniform u in [0, 1). */
__u32 ks_zipf_rank(const struct ks_zipf *z, double u);

/* The theoretical probability of a rank, from the CDF. */
double ks_zipf_pmf(const struct ks_zipf *z, __u32 rank);

/* splitmix64: tiny, fast, and good enough for workload draws. */
struct ks_rng {
	__u64 state;
};

void ks_rng_seed(struct ks_rng *r, __u64 seed);
__u64 ks_rng_next(struct ks_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double ks_rng_unit(struct ks_rng *r);

#endif
