/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * clock.h - the agent's clocks in nanoseconds: CLOCK_MONOTONIC for
 * intervals, deadlines and ages, CLOCK_REALTIME for the timestamps a
 * report publishes; the CPU clocks for the agent's own cost.
 */
#ifndef KS_CLOCK_H
#define KS_CLOCK_H

#include <linux/types.h>

/* CLOCK_MONOTONIC and CLOCK_REALTIME in nanoseconds. */
__u64 ks_mono_ns(void);
__u64 ks_real_ns(void);
/* CPU time consumed so far by the calling thread, and by the whole
 * process (every thread, user and system): what the agent's work costs,
 * whatever else the machine runs. */
__u64 ks_thread_cpu_ns(void);
__u64 ks_process_cpu_ns(void);

#endif
