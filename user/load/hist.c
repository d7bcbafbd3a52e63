// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * hist.c - the load tool's log-bucket latency histogram (see hist.h).
 */
#include "hist.h"

static __u32 bucket_of(__u64 v)
{
	__u32 e;

	if (v < KS_HIST_SUB)
		return (__u32)v;
	e = 63 - (__u32)__builtin_clzll(v); /* >= KS_HIST_SUB_BITS */
	return (e - KS_HIST_SUB_BITS + 1) * KS_HIST_SUB +
	       (__u32)((v >> (e - KS_HIST_SUB_BITS)) & (KS_HIST_SUB - 1));
}

static __u64 bucket_top(__u32 i)
{
	__u32 e, sub;

	if (i < KS_HIST_SUB)
		return i;
	e = i / KS_HIST_SUB + KS_HIST_SUB_BITS - 1;
	sub = i % KS_HIST_SUB;
	return (((__u64)(KS_HIST_SUB + sub) + 1) << (e - KS_HIST_SUB_BITS)) - 1;
}

void ks_hist_add(struct ks_hist *h, __u64 v)
{
	h->bucket[bucket_of(v)]++;
	h->n++;
}

void ks_hist_merge(struct ks_hist *dst, const struct ks_hist *src)
{
	__u32 i;

	for (i = 0; i < KS_HIST_BUCKETS; i++)
		dst->bucket[i] += src->bucket[i];
	dst->n += src->n;
}

__u64 ks_hist_quantile(const struct ks_hist *h, double q)
{
	__u64 want, seen = 0;
	__u32 i;

	if (!h->n)
		return 0;
	/* The rank of the quantile, 1-based, at least the first sample. */
	want = (__u64)(q * (double)h->n + 0.999999);
	if (want < 1)
		want = 1;
	for (i = 0; i < KS_HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= want)
			return bucket_top(i);
	}
	return bucket_top(KS_HIST_BUCKETS - 1);
}
