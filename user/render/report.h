/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report.h - rendering a published struct ks_report and the datapath's
 * cumulative totals as the text dashboard or one JSON document. No BPF
 * calls: the unit tests render synthetic reports into memory streams.
 * Keys may hold user data: text and JSON escape every byte that is not
 * printable, and hash_only replaces key bytes with the 64-bit hash.
 */
#ifndef KS_REPORT_H
#define KS_REPORT_H

#include <stdio.h>
#include "keysteer.h"
#include "core/estimate.h"
#include "ks_shard_report.h"
#include "render/report_hot.h"

#define KS_SHARDS_TOP_DEFAULT 16 /* shard rows the text shows */
#define KS_MISDIRECT_SHOW     16 /* misdirected clients shown */

/* What top[].share is a fraction of, named in the JSON (top_share_of)
 * and the text: every request of the interval, of every class (a
 * multi-get is one request), as ks_estimate_key computes it. */
#define KS_TOP_SHARE_OF "requests"

/* A top key's count in one interval: its sketch estimate x sample_n,
 * the figure its rates are made of. */
struct ks_top_count {
	__u64 reads;
	__u64 writes;
};

struct ks_limit_view;

struct ks_view {
	const struct ks_report *rep;
	const struct ks_totals *totals;
	int agent_alive;
	__u64 now_ns; /* CLOCK_REALTIME, for uptime and staleness */
	int top;      /* keys to show */
	int hash_only;
	/* The ring: NULL, or nshards 0, when the agent runs without one. */
	const struct ks_shard_report *ring;
	const struct ks_misdirect *mis; /* recent, newest first */
	size_t n_mis;
	int shards_top;    /* shard rows in the text; 0: the default */
	__u64 now_mono_ns; /* CLOCK_MONOTONIC, for the clients' ages */
	const struct ks_hot_view *hot;      /* NULL: no hot-key section */
	const struct ks_limit_view *limits; /* NULL: no rate-limit section */
	/* rep->top's counts as the sketch gave them (replay); NULL: from
	 * the published rates x rep->elapsed_ns (ks_top_count_of). */
	const struct ks_top_count *top_counts;
};

/*
 * The options that choose what a report shows, shared by 'agent report'
 * and 'agent replay': --top, --json, --hash-only, --shards-top (entries
 * in cli_options.c, getopt values 't', 'j', 'H', 'T').
 */
struct ks_view_opts {
	int top;
	int json;
	int hash_only;
	int shards_top;
};
void ks_view_opts_init(struct ks_view_opts *v);
/* 1 when c was a view option (handled), 0 when not, -1 with err when its
 * value is bad. */
int ks_view_opt(struct ks_view_opts *v, int c, const char *arg, char *err,
		size_t errlen);

void ks_render_text(FILE *f, const struct ks_view *v);
void ks_render_json(FILE *f, const struct ks_view *v);
/* The "shards" array of the JSON report: every shard of r, in index
 * order ('agent replay --interval' prints it for each interval). */
void ks_render_json_shard_rows(FILE *f, const struct ks_shard_report *r);

/*
 * Exact counts from the datapath's totals (no estimate, whatever the
 * sample rate): requests, keys and bytes of each class summed over its
 * ops; resynchronisations, every packet counter named resync_*.
 */
void ks_totals_classes(const struct ks_totals *t,
		       struct ks_op_stats out[KS_CLASS_MAX]);
__u64 ks_totals_resyncs(const struct ks_totals *t);

/*
 * The interval's count of top entry i: v->top_counts[i] when given, else
 * the entry's rates x rep->elapsed_ns, rounded (the rates are milli per
 * second, so this is the sketch's count exactly for intervals up to
 * 1000 s, within 2 up to the longest, 3600 s).
 */
void ks_top_count_of(const struct ks_view *v, int i, struct ks_top_count *out);

/*
 * The totals as text tables, for 'agent replay' whose capture is finite:
 * requests/keys/bytes by class, then by op (ops with none left out) under
 * a line "requests by op", parse errors by reason, resyncs.
 */
void ks_render_totals_text(FILE *f, const struct ks_totals *t);

/* "1.5 s"-style duration and "1.2 MB/s"-style byte rate, for the text. */
void ks_format_duration(__u64 ns, char *buf, size_t len);
void ks_format_bytes_rate(double bps, char *buf, size_t len);

#endif
