/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * collect.h - reading the datapath's maps: per-CPU counters summed over
 * CPUs, one epoch's sketch merged over CPUs (and zeroed after use), the
 * candidate tables of every CPU, and the config and report entries. The
 * fds come from the agent's skeleton or from the pinned folder.
 */
#ifndef KS_COLLECT_H
#define KS_COLLECT_H

#include <stddef.h>
#include "keysteer.h"
#include "core/estimate.h"
#include "core/shard_rates.h"
#include "core/slog_fold.h"
#include "core/slog_part.h"

struct ks_maps {
	int config, ops, errors, pkts, cms, cands, events, report;
	int ring, shards, misdirect, shard_report; /* the ring's maps */
	int hot, hot_stats, replicas, replica_stats, hot_events; /* hot keys */
	int vlans; /* ks_vlans: the agent's own load only (not pinned-opened) */
	int hot_filter; /* ks_hot_filter: buckets of ks_hot that may hold keys */
	int hot_replies; /* ks_hot_replies: the owner's replies (the agent's
			  * own load only, like vlans) */
	int rate; /* ks_rate: --sample auto's per-CPU rates (the agent's own
		   * load only, like vlans) */
	/* ks_slog, ks_slog_pos: the sample log (the agent's own load only,
	 * like vlans: only the agent drains it) */
	int slog, slog_pos;
};

/* Every fd -1, so ks_maps_close() on a half-opened set is safe. */
void ks_maps_init(struct ks_maps *m);
/* Opens the pinned maps in pin_dir (<KS_PIN_ROOT>/<ifname>). */
int ks_maps_open_pinned(struct ks_maps *m, const char *pin_dir);
void ks_maps_close(struct ks_maps *m);

/* Scratch buffers sized for the possible CPUs, reused every interval. */
struct ks_collector {
	const struct ks_maps *maps;
	int ncpus;
	void *row_buf;            /* one sketch row, every CPU */
	struct ks_cand *cand_buf; /* one candidate slot, every CPU */
	struct ks_cand *cands;    /* gathered candidates */
	size_t cands_cap;
	/* The last ks_estimate_interval's heaviest candidates, heaviest
	 * first, up to KS_HOT_CAP: the hot-key table's samples. The
	 * report's top keys are the first of them. */
	struct ks_top_entry *ranked;
	size_t nranked;
	/* The sample log's folds (dp/slog.h), one a drain thread, NULL
	 * without: their closed epoch is added to the kernel's sketch and
	 * candidates (core/slog_part.h), and reset with the kernel's
	 * epoch. */
	struct ks_slog_fold *const *slog;
	int nslog; /* one fold a drain thread */
};

int ks_collector_init(struct ks_collector *c, const struct ks_maps *m);
void ks_collector_free(struct ks_collector *c);
/* The sample log's k folds read with every epoch from now on (room made
 * for their candidates); 0 or -ENOMEM. */
int ks_collector_set_slog(struct ks_collector *c, struct ks_slog_fold *const *f,
			  int k);

int ks_read_totals(struct ks_collector *c, struct ks_totals *t);
/* Merges epoch's rows of both classes over CPUs into out, each CPU's
 * counters times its 1 in N in cpu_n (NULL: as they are), plus the
 * sample log's sketch of the epoch (in keys already) once it is closed. */
int ks_read_sketch(struct ks_collector *c, __u32 epoch, struct ks_sketch *out,
		   const __u32 *cpu_n);
/* Zeroes epoch's rows on every CPU, and the sample log's slot. */
int ks_zero_sketch(struct ks_collector *c, __u32 epoch);
/*
 * Gathers the usable candidates (see ks_cand_usable) for the interval that
 * started at seq from every CPU and the sample log's fold, deduplicated
 * by hash, into c->cands;
 * returns how many or a negative errno.
 */
long ks_read_cands(struct ks_collector *c, __u32 seq);

/*
 * One interval's estimates, as 'agent run' publishes them and 'agent
 * replay' prints them: reads the totals into cur, epoch's sketch into sk
 * (each CPU scaled by its 1 in N in the epoch, cpu_n[c->ncpus], so sk
 * holds keys)
 * and the candidates of the interval that began at seq; fills rep's class
 * and error rates, sampled_total and its top keys (at most top), and
 * c->ranked with the heaviest KS_HOT_CAP candidates (ks_top_rank). The
 * sketch's estimates use elapsed_ns; the rates use the time since
 * *totals_ns (moved to now) or, when totals_ns is NULL, elapsed_ns.
 * Returns the number of candidates or a negative errno.
 */
long ks_estimate_interval(struct ks_collector *c, __u32 epoch, __u32 seq,
			  const __u32 *cpu_n, __u32 top, __u64 elapsed_ns,
			  const struct ks_totals *prev, struct ks_totals *cur,
			  struct ks_sketch *sk, __u64 *totals_ns,
			  struct ks_report *rep);

int ks_read_config(const struct ks_maps *m, struct ks_config *cfg);
int ks_write_config(const struct ks_maps *m, const struct ks_config *cfg);
/* ks_report is read and written whole under its spin lock (BPF_F_LOCK). */
int ks_read_report(const struct ks_maps *m, struct ks_report *rep);
int ks_write_report(const struct ks_maps *m, const struct ks_report *rep);

/* The first n entries of ks_shards, each summed over CPUs; and, unless
 * cpu_load is NULL, each CPU's reads + writes of each (n x c->ncpus,
 * cpu_load[i * ncpus + cpu]: ks_shard_fill_err's). */
int ks_read_shard_counts(struct ks_collector *c, __u32 n,
			 struct ks_shard_counts *out, __u64 *cpu_load);
/*
 * Every CPU's copy of every ks_misdirect slot into out (room for
 * KS_MISDIRECT_SLOTS * c->ncpus entries); returns how many or a negative
 * errno.
 */
long ks_read_misdirect(struct ks_collector *c, struct ks_misdirect *out);
/* ks_shard_report is read and written whole under its spin lock. */
int ks_read_shard_report(const struct ks_maps *m, struct ks_shard_report *r);
int ks_write_shard_report(const struct ks_maps *m,
			  const struct ks_shard_report *r);

#endif
