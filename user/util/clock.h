/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * clock.h - the agent's clocks in nanoseconds: CLOCK_MONOTONIC for
 * intervals, deadlines and ages, CLOCK_REALTIME for the timestamps a
 * report publishes.
 */
#ifndef KS_CLOCK_H
#define KS_CLOCK_H

#include <linux/types.h>

/* CLOCK_MONOTONIC and CLOCK_REALTIME in nanoseconds. */
__u64 ks_mono_ns(void);
__u64 ks_real_ns(void);

#endif
