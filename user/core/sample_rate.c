// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sample_rate.c - the per-CPU rate controller of --sample auto (see
 * sample_rate.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/sample_rate.h"

static int parse_u32(const char *s, __u32 lo, __u32 hi, __u32 *out)
{
	unsigned long long v;
	char *end;

	if (!*s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -EINVAL;
	*out = (__u32)v;
	return 0;
}

int ks_sample_parse(const char *s, __u32 max_n, struct ks_sample_opt *o,
		    char *err, size_t errlen)
{
	memset(o, 0, sizeof(*o));
	if (!strcmp(s, "auto")) {
		o->target = KS_RATE_TARGET_DEFAULT;
		return 0;
	}
	if (!strncmp(s, "auto:", 5)) {
		if (!parse_u32(s + 5, KS_RATE_TARGET_MIN, KS_RATE_TARGET_MAX,
			       &o->target))
			return 0;
		snprintf(
			err, errlen,
			"--sample '%s' has no target in range; give auto:T with T sampled keys per second per CPU from %u to %u",
			s, KS_RATE_TARGET_MIN, KS_RATE_TARGET_MAX);
		return -EINVAL;
	}
	if (!parse_u32(s, 1, max_n, &o->n))
		return 0;
	snprintf(
		err, errlen,
		"--sample '%s' is out of range; give a number from 1 to %u (1 in N keys), or auto[:TARGET]",
		s, max_n);
	return -EINVAL;
}

/* keys/s over N at or under limit (keys/s as keys * 1e9 / elapsed_ns). */
static int fits(__u64 keys, __u64 elapsed_ns, __u32 n, double limit)
{
	return (double)keys * 1e9 / (double)elapsed_ns / n <= limit;
}

__u32 ks_rate_next(__u32 cur_n, __u64 keys, __u64 elapsed_ns, __u32 target)
{
	__u32 up = 1, down = 1;

	if (!target || !elapsed_ns)
		return cur_n ? cur_n : 1;
	/* the smallest power of two that keeps the CPU under its target */
	while (up < KS_RATE_MAX_N && !fits(keys, elapsed_ns, up, target))
		up <<= 1;
	if (cur_n && up >= cur_n)
		return up;
	/* a lower N only with headroom: the one that keeps it under
	 * KS_RATE_DOWN_PCT% of the target, if that is still below cur_n */
	while (down < KS_RATE_MAX_N &&
	       !fits(keys, elapsed_ns, down,
		     (double)target * KS_RATE_DOWN_PCT / 100.0))
		down <<= 1;
	if (!cur_n || down < cur_n)
		return down;
	return cur_n > KS_RATE_MAX_N ? KS_RATE_MAX_N : cur_n;
}

__u32 ks_rates_max(const __u32 *n, int ncpus)
{
	__u32 best = 1;
	int i;

	for (i = 0; n && i < ncpus; i++)
		if (n[i] > best)
			best = n[i];
	return best;
}

int ks_place_parse(const char *s, __u32 *target, char *err, size_t errlen)
{
	if (!strcmp(s, "off")) {
		*target = 0;
		return 0;
	}
	if (!parse_u32(s, KS_PLACE_TARGET_MIN, KS_PLACE_TARGET_MAX, target))
		return 0;
	snprintf(
		err, errlen,
		"--place-target '%s' is out of range; give ring placements per second per CPU from %u to %u, or off (every sampled key placed)",
		s, KS_PLACE_TARGET_MIN, KS_PLACE_TARGET_MAX);
	return -EINVAL;
}

__u64 ks_sampled_at(__u64 sampled, __u32 n_was, __u32 n_next)
{
	__u64 was = n_was ? n_was : 1, next = n_next ? n_next : 1;

	if (was == next)
		return sampled;
	/* the product fits: sampled is a CPU's keys in one interval, far
	 * under 2^64 / 2^20 */
	return (sampled * was + next - 1) / next;
}

__u32 ks_place_next(__u32 cur_p, __u64 sampled, __u64 elapsed_ns, __u32 target)
{
	if (!target)
		return 1;
	if (!elapsed_ns) /* nothing measured: as it was */
		return cur_p ? cur_p : 1;
	if (fits(sampled, elapsed_ns, 1, target))
		return 1;
	return ks_rate_next(cur_p, sampled, elapsed_ns, target);
}
