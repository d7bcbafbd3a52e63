/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * loop.h - the agent's interval loop ('agent run' after its options):
 * the datapath it attached, the subsystems it drives each interval (the
 * ring, the hot-key table, steering, metrics, the routing document's HTTP
 * server) and the state it carries from one interval to the next. The
 * options are cli/cmd_run.c's; the subsystems are prepared there, before
 * anything is attached, so bad options stop the agent first.
 */
#ifndef KS_AGENT_LOOP_H
#define KS_AGENT_LOOP_H

#include <sys/types.h>
#include "dp/attach.h"
#include "dp/collect.h"
#include "dp/rates.h"
#include "dp/slog.h"
#include "core/estimate.h"
#include "agent/run_hot.h"
#include "agent/run_ring.h"
#include "agent/run_steer.h"
#include "agent/run_etcd.h"
#include "agent/run_metrics.h"
#include "agent/run_purge.h"
#include "agent/run_limit.h"
#include "agent/run_dedicated.h"
#include "agent/housekeep.h"
#include "net/http_serve.h"

/* What the loop itself reads of the options. */
struct ks_agent_opts {
	const char *ifname;
	unsigned int ifindex;
	__u32 sample_n;      /* --sample N; auto: the first interval's */
	__u32 sample_target; /* --sample auto[:T]: T; 0 for a fixed N */
	__u32 place_target;  /* --place-target: ring placements/s per CPU
			      * above which 1 in P sampled keys is placed;
			      * 0: every one */
	__u32 interval_ms;
	__u16 ports[KS_MAX_PORTS];
	enum ks_xdp_req xdp;
	int attach_tc; /* --attach tc: the tc ingress program */
	__u32 top;
	int verbose;
	int keep_privileges; /* --keep-privileges: no capability drop */
	/* --thread-caps keep (test only): the worker threads skip their
	 * own drop (util/thread.h) */
	int thread_caps_keep;
	int log_keys; /* --log-keys: key bytes in -v lines */
	gid_t group;  /* --group: may read pins and routing file */
	int group_set;
	__u32 cfg_flags;   /* ks_config.flags: --stream-state off sets
			      * KS_CFG_NO_STREAM, --limit-reply-head off
			      * KS_CFG_LIMIT_GROW_TAIL (test controls only) */
	int rate_unscaled; /* --rate-scaling off: the sketch merged without
			    * the CPUs' rates (test control only) */
	int place_unit;    /* --place-scaling off: a placement adds 1, not
			    * P (KS_RATE_P_UNIT; test control only) */
	/* --log-samples (test only): on (default), off (the in-kernel
	 * sketch alone) or drop (records taken and thrown away: a
	 * control) */
	enum ks_slog_mode {
		KS_SLOG_ON,
		KS_SLOG_OFF,
		KS_SLOG_DROP
	} slog_mode;
	/* --drain-threads: the sample log's drain threads (0: one per
	 * KS_SLOG_CPUS_PER_THREAD CPUs) */
	int slog_threads;
	/* --drain-share on (test only): drain thread 1 also reads CPU 0's
	 * log, which then has two consumers (the control of
	 * test_slog_threads.sh) */
	int slog_share;
	int owner_replies; /* --owner-replies: ks_tc_egress counts the
			    * owner's hits and misses of hot keys */
	double limit_auto; /* --limit-auto F: the automatic cap; 0: off */
	/* --limit-auto-residual verdict (test only): the cap trusts the
	 * policy's verdict */
	int limit_auto_verdict;
	/* --stall-interval N:MS (a test's): interval N's work takes MS ms
	 * longer, once; 0: never */
	__u32 stall_seq, stall_ms;
	/* the link check and the VLAN sync (agent/housekeep.h); its two
	 * switches are a test's */
	struct ks_housekeep_opts hk;
};

struct ks_agent {
	struct ks_agent_opts o;
	/* the subsystems, prepared from the options; http NULL without
	 * --listen */
	struct ks_run_ring *ring;
	struct ks_run_hot *hot;
	struct ks_run_steer *steer;
	struct ks_run_metrics *metrics;
	struct ks_http_server *http;
	struct ks_run_etcd *etcd; /* --etcd: the ring from etcd; NULL without */
	struct ks_run_purge *purge; /* what a new ring moves elsewhere */
	struct ks_run_limit *limit; /* the rate limits (docs/limits.md) */
	struct ks_run_ded *ded;     /* the shard rules in the datapath */
	/* the work that waits on rtnl, off this thread (housekeep.h);
	 * NULL before the start */
	struct ks_housekeep *hk;
	/* the datapath and what one interval hands the next */
	struct ks_attachment att;
	struct ks_maps maps;
	struct ks_collector col;
	struct ks_rates rates; /* every CPU's 1 in N, epoch by epoch */
	/* the sample log's drain; slog_on while it runs (KS_CFG_SLOG) */
	struct ks_slog slog;
	int slog_on;
	struct ks_sketch *sketch;
	struct ks_report *rep;
	struct ks_totals prev, cur;
	__u32 seq;       /* the agent's own copy: it alone moves seq */
	int adopt;       /* take over a dead agent's attachment */
	__u64 flip_ns;   /* monotonic time of the last flip */
	__u64 totals_ns; /* monotonic time of the last totals read */
	/* The agent's own cost: the interval loop thread's CPU for the last
	 * interval's work (flip to zeroed sketch, the metrics' rendering
	 * not included), and its largest since the start. */
	__u64 work_ns, work_max_ns;
	/* the longest interval, flip to flip: the loop's longest hold */
	__u64 interval_max_ns;
	/* the reads armed keys' copies took unseen, for the hot-key table */
	struct ks_hot_unseen unseen[KS_HOT_SLOTS];
	/* what the datapath measured of the keys in its slots, for the
	 * automatic cap */
	struct ks_auto_dp autodp[KS_HOT_SLOTS];
};

/* Attaches (or takes over) and starts every subsystem; a KS_EXIT_* code. */
int ks_agent_start(struct ks_agent *a);
/* Interval after interval until SIGINT/SIGTERM or a failure. */
int ks_agent_loop(struct ks_agent *a);
/* On the way out, first: the housekeeping thread stopped, without
 * waiting for a call stuck on rtnl. */
void ks_agent_hk_stop(struct ks_agent *a);
/* On the way out: KS_CFG_SLOG cleared, then the drain's last pass. */
void ks_agent_slog_off(struct ks_agent *a);

#endif
