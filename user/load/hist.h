/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * hist.h - latency histogram with log buckets: 16 linear sub-buckets per
 * power of two, so any quantile is within 1/16 (6%) of the true value,
 * in a fixed 8 KB per histogram that threads merge at the end.
 */
#ifndef KS_LOAD_HIST_H
#define KS_LOAD_HIST_H

#include <linux/types.h>

#define KS_HIST_SUB_BITS 4
#define KS_HIST_SUB      (1U << KS_HIST_SUB_BITS)
#define KS_HIST_BUCKETS  (64 * KS_HIST_SUB)

struct ks_hist {
	__u64 bucket[KS_HIST_BUCKETS];
	__u64 n;
};

void ks_hist_add(struct ks_hist *h, __u64 v);
void ks_hist_merge(struct ks_hist *dst, const struct ks_hist *src);
/* Upper bound of the bucket holding quantile q (0..1); 0 when empty. */
__u64 ks_hist_quantile(const struct ks_hist *h, double q);

#endif
