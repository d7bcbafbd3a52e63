/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * slog.h - the sample log's drain (issue 27): both maps mmapped (ks_slog,
 * ks_slog_pos), every CPU's records from tail to head copied out, the
 * tail moved on, and the copies folded (core/slog_fold.h) into the
 * agent's per-epoch sketch and candidates, which the interval's estimate
 * adds to the kernel's (dp/collect.c). A thread drains between the
 * interval's flips, at a period that follows the fill it finds; the
 * flip drains once more itself.
 *
 * One mutex serialises the drains and the epoch changes: whoever drains
 * holds it from the positions' read to the fold, so no record is read
 * twice, and the interval's open and close of an epoch happen between
 * two drains. The slot of a closed epoch is the interval's own until it
 * opens it again: the drain only counts that epoch's records late.
 */
#ifndef KS_DP_SLOG_H
#define KS_DP_SLOG_H

#include <pthread.h>
#include <stdbool.h>
#include "keysteer.h"
#include "core/slog_fold.h"

struct ks_slog {
	int ncpus;
	struct ks_slog_rec *recs; /* ncpus * KS_SLOG_RECS, mmapped */
	struct ks_slog_pos *pos;  /* ncpus, mmapped */
	size_t recs_len, pos_len;
	struct ks_slog_rec *buf; /* one CPU's records copied out */
	struct ks_slog_fold fold;
	pthread_mutex_t mu;
	pthread_t th;
	bool running;
	volatile int stop;
	__u64 period_ns;
	/* a test's control (--log-samples drop): records are taken from the
	 * log and thrown away, so the estimates must miss them */
	int drop;
	/* the drain thread's nice value, taken before it drops its
	 * capabilities (0: the caller's) */
	int nice;
	/* since the start, under mu */
	__u64 drains, records, dropped;
	__u64 lost;      /* positions no datapath writes (head behind the
			 * tail, or more than the log holds): skipped */
	__u32 fill_max;  /* the most records found waiting on one CPU */
	__u64 thread_ns; /* the drain thread's CPU, when it stopped */
};

/*
 * Maps the log of ncpus CPUs from the two maps' fds and opens seq's
 * epoch. -EINVAL when the maps are not the log this build expects (a
 * build before the log, or sized for fewer CPUs): then the datapath
 * keeps the in-kernel way (the flag is not set). 0 or -errno.
 */
int ks_slog_open(struct ks_slog *s, int slog_fd, int pos_fd, int ncpus,
		 __u32 seq);
/* Stops the thread if it runs, unmaps, frees. Safe on a zeroed struct. */
void ks_slog_close(struct ks_slog *s);

/* Drains every CPU's log once; returns the records taken. */
size_t ks_slog_drain(struct ks_slog *s);

/* The drain thread; 0 or -errno. It runs at s->nice: the log holds
 * 15.6 ms of keys at auto's default target, and a drain held up longer
 * by other work on its CPU leaves the datapath's keys to the in-kernel
 * sketch (none lost, but the line rate pays the sketch again). */
int ks_slog_start(struct ks_slog *s);
/* Stops it and drains once more. */
void ks_slog_stop(struct ks_slog *s);

/*
 * The interval's side, around its move of ks_config.seq to new_seq:
 * begin before the move (new_seq's epoch takes records from then on),
 * end after it and after the grace for packets in flight: one more
 * drain, then old_seq's epoch closed, to be read and reset.
 */
void ks_slog_flip_begin(struct ks_slog *s, __u32 new_seq);
void ks_slog_flip_end(struct ks_slog *s, __u32 old_seq);

#endif
