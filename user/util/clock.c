// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * clock.c - clock_gettime() as nanoseconds (see clock.h).
 */
#include <time.h>
#include "util/clock.h"

static __u64 clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

__u64 ks_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

__u64 ks_real_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

__u64 ks_thread_cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

__u64 ks_process_cpu_ns(void)
{
	return clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}
