/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * run_limit.h - the rate limits of 'agent run' (docs/limits.md): each
 * interval the pin file's (or the fleet's) `limit` rules and the
 * interval's ranked keys decide the limited keys (core/limits.h), which
 * are written into the datapath (dp/limit_map.h); their counters are read
 * back into rates and published in ks_limit_info for the report, the
 * metrics and the status line.
 */
#ifndef KS_RUN_LIMIT_H
#define KS_RUN_LIMIT_H

#include <stdio.h>
#include "core/limits.h"
#include "core/limit_auto.h"
#include "dp/limit_map.h"

struct ks_run_limit {
	struct ks_limit_set set;
	struct ks_limit_map map;
	struct ks_limit_pkts pkts;  /* the datapath's check counters */
	__u64 read_ns;              /* monotonic time of the last read */
	__u8 shown[KS_LIMIT_SLOTS]; /* rows of ks_limit_info last written
				     * with a key: cleared when it goes */
	int open;
	/* --limit-auto: the automatic cap (NULL: off), and its keys of the
	 * interval for ks_limits_plan */
	struct ks_limit_auto *autocap;
	struct ks_limit_want wants[KS_LIMIT_AUTO_KEYS];
	int log_keys; /* --log-keys: key bytes in the cap's log lines */
};

/* After the attach: the maps pinned under pin_dir, emptied; with
 * auto_fraction > 0 the automatic cap at auto_fraction x capacity. 0 or
 * -errno. */
int ks_run_limit_start(struct ks_run_limit *l, const char *pin_dir,
		       double auto_fraction, double capacity);
/* --limit-auto-residual verdict (a test's control): the cap trusts the
 * hot-key policy's verdict, as before it measured. After the start. */
void ks_run_limit_auto_verdict(struct ks_run_limit *l, int on);

/* One interval (t: the hot-key table as this interval's update left it,
 * and dp[0..ndp) what the datapath measured of the keys in its slots,
 * for the automatic cap; may be NULL): returns whether any key is
 * limited (KS_CFG_LIMITS). */
int ks_run_limit_interval(struct ks_run_limit *l,
			  const struct ks_hot_rules *rules,
			  const struct ks_hot_table *t,
			  const struct ks_top_entry *ranked, size_t n,
			  const struct ks_auto_dp *dp, size_t ndp, __u32 seq,
			  __u64 now_ns);

/* "keysteer: #SEQ limits: ..." when any key is limited. */
void ks_run_limit_status(const struct ks_run_limit *l, FILE *f, __u32 seq,
			 int log_keys);

void ks_run_limit_stop(struct ks_run_limit *l);

#endif
