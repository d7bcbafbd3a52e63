/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metrics.h - the Prometheus metrics of 'agent run' (--metrics): the
 * datapath's cumulative counters, the ring's per-shard load, the hot-key
 * table and the steering state, the top keys, rendered once per interval
 * in the text exposition format (version 0.0.4) for the HTTP server that
 * answers GET /metrics. docs/metrics.md lists every metric.
 *
 * Keys are user data: by default a key appears only as its 64-bit hash
 * (label hash="0x..."); --export-keys adds a key label, with every byte
 * that is not printable ASCII written as \xNN and a backslash doubled
 * (as in the text report), then escaped for the exposition format.
 *
 * ks_metrics_render is pure (no BPF, no I/O besides the stream), so the
 * unit tests render synthetic inputs into memory; the 'agent run' side
 * (the HTTP server, publishing each interval) is agent/run_metrics.h.
 */
#ifndef KS_METRICS_H
#define KS_METRICS_H

#include <stdio.h>
#include "keysteer.h"
#include "core/estimate.h"
#include "core/hotkeys.h"
#include "ks_shard_report.h"

/* One L1 replica as the metrics show it. */
struct ks_metrics_replica {
	const char *name; /* "a.b.c.d:port", NUL-terminated */
	int up;           /* takes copies (not left out after a failure) */
	__u64 steered;    /* reads steered to it, as of the last interval */
};

/* What the metrics show of steering: a plain view the agent fills
 * (agent/run_metrics.h) from its steering controller. */
struct ks_metrics_steer {
	/* The datapath's KS_HOT_SLOTS hot slots; NULL: none (map not open). */
	const struct ks_hot_slot *slot;
	unsigned n_replicas;
	struct ks_metrics_replica replica[KS_MAX_REPLICAS];
	/* The steering machine's cumulative counters. */
	__u64 fills, fill_errors, events, no_slot, rearms;
	double rearm_ms_sum, rearm_ms_max; /* write seen -> re-armed */
	/* armings (first, refresh, re-arm), and the longest gap between
	 * two while keys had copies to arm */
	__u64 arms, arm_gap_max_ns;
};

struct ks_balance;

struct ks_limit_set;
struct ks_limit_pkts;

struct ks_metrics_in {
	const struct ks_report *rep;        /* header and the top keys */
	const struct ks_totals *totals;     /* cumulative datapath counters */
	const struct ks_shard_report *ring; /* NULL or nshards 0: no ring */
	const struct ks_hot_table *table;   /* NULL: no hot-key table */
	/* The hot slots, the replicas and the copy counters; NULL: none. */
	const struct ks_metrics_steer *steer;
	__u64 now_mono_ns;     /* tells armed slots from expired ones */
	__u64 intervals;       /* intervals ended since the start */
	__u64 candidates;      /* distinct keys in the candidate tables in
				* the last interval */
	__u64 candidate_slots; /* KS_CAND_SLOTS x CPUs, plus the sample
				* log's table */
	/* the sample log's drain (dp/slog.h), when the agent runs one:
	 * records folded, and late ones (dropped) since the start */
	int slog_on;
	__u64 slog_folded, slog_late;
	__u64 rss_bytes;       /* the agent's resident memory */
	__u64 work_ns;         /* the loop thread's CPU for the last
				* interval's work */
	__u64 work_max_ns;     /* ... the largest since the start */
	__u64 interval_max_ns; /* the longest interval since the start */
	__u64 cpu_ns;          /* the agent's CPU since the start, all
				* threads, user and system */
	/* the link check and VLAN sync (agent/housekeep.h): passes done,
	 * the longest */
	__u64 hk_passes, hk_pass_max_ns;
	int export_keys; /* key labels besides the hashes */
	/* --balance (core/balance.h); NULL: off */
	const struct ks_balance *balance;
	double read_threshold; /* the policy's, reads/s */
	/* the rate limits (core/limits.h) and the datapath's check counters;
	 * NULL: no rate-limit families */
	const struct ks_limit_set *limits;
	const struct ks_limit_pkts *limit_pkts;
};

/* The whole exposition, every family with its HELP and TYPE lines. */
void ks_metrics_render(FILE *f, const struct ks_metrics_in *in);

#endif
