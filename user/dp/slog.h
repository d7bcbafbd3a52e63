/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * slog.h - the sample log's drain (issue 27): both maps mmapped (ks_slog,
 * ks_slog_pos), every CPU's records from tail to head copied out, the
 * tail moved on, and the copies folded (core/slog_fold.h) into the
 * agent's per-epoch sketch and candidates, which the interval's estimate
 * adds to the kernel's (dp/collect.c). Drain threads (one per 16 CPUs
 * by default, core/slog_part.h) each own a fixed set of CPUs' logs and a
 * fold of their own, and drain between the interval's flips at a period
 * that follows the fill they find; the flip drains once more itself.
 *
 * A mutex a shard serialises its drains and the epoch changes of its
 * fold: whoever drains holds it from the positions' read to the fold, and
 * no other shard reads its CPUs' logs, so no record is read twice, and
 * the interval's open and close of an epoch happen between two drains.
 * The slot of a closed epoch is the interval's own until it opens it
 * again: the drain only counts that epoch's records late.
 */
#ifndef KS_DP_SLOG_H
#define KS_DP_SLOG_H

#include <pthread.h>
#include <stdbool.h>
#include "keysteer.h"
#include "core/slog_fold.h"
#include "core/slog_part.h"

/* What a log is opened with; zero is the agent's default. */
struct ks_slog_opts {
	/* drain threads (--drain-threads): 0 picks one per
	 * KS_SLOG_CPUS_PER_THREAD CPUs (core/slog_part.h) */
	int threads;
	/* a test's control (--drain-share on): thread 1 also drains CPU
	 * 0's log, which then has two consumers */
	int share;
	/* --rate-scaling off: every record weighs 1 (a test's control) */
	int unscaled;
	/* a test's control (--log-samples drop): records are taken from
	 * the log and thrown away, so the estimates must miss them */
	int drop;
	/* the drain threads' nice value, taken before they drop their
	 * capabilities (0: the caller's) */
	int nice;
};

struct ks_slog;

/*
 * One drain thread's part: the CPUs whose logs it alone reads (so each
 * log keeps one consumer), a buffer and a fold of its own, and the mutex
 * that serialises its drains with the interval's epoch changes on its
 * fold.
 */
struct ks_slog_shard {
	struct ks_slog *s;
	int *cpus;    /* the CPUs it owns (ks_slog_part_cpus) */
	__u64 *taken; /* records taken from each of them, since the start */
	int ncpus;
	struct ks_slog_rec *buf; /* one CPU's records copied out */
	struct ks_slog_fold fold;
	pthread_mutex_t mu;
	pthread_t th;
	bool running;
	__u64 period_ns;
	/* since the start, under mu */
	__u64 drains, records, dropped;
	__u64 lost;      /* positions no datapath writes (head behind the
			 * tail, or more than the log holds): skipped */
	__u32 fill_max;  /* the most records found waiting on one CPU */
	__u64 thread_ns; /* its thread's CPU, when it stopped */
};

struct ks_slog {
	int ncpus;
	struct ks_slog_rec *recs; /* ncpus * KS_SLOG_RECS, mmapped */
	struct ks_slog_pos *pos;  /* ncpus, mmapped */
	size_t recs_len, pos_len;
	struct ks_slog_opts o;
	int nshards;
	struct ks_slog_shard *sh;
	struct ks_slog_fold **folds; /* each shard's, for the collector */
	volatile int stop;
};

/* The shards' counters together. */
struct ks_slog_stats {
	__u64 folded, late, bad, dropped, records, drains, lost;
	__u32 fill_max;  /* the most on one CPU */
	__u64 period_ns; /* the shortest period of a thread */
	__u64 thread_ns; /* every thread's CPU, once stopped */
};

/*
 * Maps the log of ncpus CPUs from the two maps' fds, splits the CPUs
 * between o->threads (or the automatic count of) shards and opens seq's
 * epoch in each one's fold. -EINVAL when the maps are not the log this
 * build expects (a build before the log, or sized for fewer CPUs): then
 * the datapath keeps the in-kernel way (the flag is not set). 0 or
 * -errno.
 */
int ks_slog_open(struct ks_slog *s, int slog_fd, int pos_fd, int ncpus,
		 __u32 seq, const struct ks_slog_opts *o);
/* Stops the threads if they run, unmaps, frees. Safe on a zeroed
 * struct. */
void ks_slog_close(struct ks_slog *s);

/* Drains every CPU's log once, shard by shard; returns the records
 * taken. */
size_t ks_slog_drain(struct ks_slog *s);
/* Shard t's CPUs once, as its thread does (a bench times each). */
size_t ks_slog_drain_shard(struct ks_slog *s, int t);

/* One drain thread a shard (ks-drain-T, no capability, signals blocked:
 * util/thread.h); 0 or -errno (then none runs). They run at o.nice: the log holds 15.6 ms of keys at auto's default target, and a
 * drain held up longer by other work on its CPU leaves the datapath's
 * keys to the in-kernel sketch (none lost, but the line rate pays the
 * sketch again). */
int ks_slog_start(struct ks_slog *s);
/* Stops them and drains once more. */
void ks_slog_stop(struct ks_slog *s);

void ks_slog_stats(const struct ks_slog *s, struct ks_slog_stats *out);

/*
 * The interval's side, around its move of ks_config.seq to new_seq:
 * begin before the move (new_seq's epoch takes records from then on),
 * end after it and after the grace for packets in flight: one more
 * drain, then old_seq's epoch closed, to be read and reset; each shard
 * in turn under its own mutex.
 */
void ks_slog_flip_begin(struct ks_slog *s, __u32 new_seq);
void ks_slog_flip_end(struct ks_slog *s, __u32 old_seq);

#endif
