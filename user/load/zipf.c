// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * zipf.c - the load tool's Zipf key sampler and seeded generator (see
 * zipf.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "zipf.h"

int ks_zipf_init(struct ks_zipf *z, __u32 n, double s)
{
	double sum = 0;
	__u32 i;

	z->cdf = NULL;
	z->n = 0;
	if (n < 1 || n > KS_ZIPF_MAX_KEYS || !(s >= 0 && s <= 10))
		return -EINVAL;
	z->cdf = malloc((size_t)n * sizeof(*z->cdf));
	if (!z->cdf)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		sum += pow((double)(i + 1), -s);
		z->cdf[i] = sum;
	}
	for (i = 0; i < n; i++)
		z->cdf[i] /= sum;
	/* Rounding must never leave a u in [0,1) past the last entry. */
	z->cdf[n - 1] = 1.0;
	z->n = n;
	z->s = s;
	return 0;
}

void ks_zipf_free(struct ks_zipf *z)
{
	free(z->cdf);
	z->cdf = NULL;
	z->n = 0;
}

__u32 ks_zipf_rank(const struct ks_zipf *z, double u)
{
	__u32 lo = 0, hi = z->n - 1;

	/* The first index whose cdf is above u. */
	while (lo < hi) {
		__u32 mid = lo + (hi - lo) / 2;

		if (z->cdf[mid] > u)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo + 1;
}

double ks_zipf_pmf(const struct ks_zipf *z, __u32 rank)
{
	if (rank < 1 || rank > z->n)
		return 0;
	return z->cdf[rank - 1] - (rank > 1 ? z->cdf[rank - 2] : 0);
}

void ks_rng_seed(struct ks_rng *r, __u64 seed)
{
	r->state = seed;
}

__u64 ks_rng_next(struct ks_rng *r)
{
	__u64 x = (r->state += 0x9e3779b97f4a7c15ULL);

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

double ks_rng_unit(struct ks_rng *r)
{
	return (double)(ks_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}
