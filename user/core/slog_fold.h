/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * slog_fold.h - the agent's side of the sample log (issue 27), as pure
 * logic: records the datapath appended (struct ks_slog_rec, bpf/keysteer.h)
 * folded into a sketch and a candidate table per epoch in user space, the
 * same work ks_cms_add() and ks_cand_offer() do in the kernel for keys the
 * log does not take. No BPF calls, no I/O, no locks: user/dp/slog.c reads
 * the log and serialises the callers.
 *
 * Epochs. Each of the two slots (seq & 1) holds one interval while it is
 * open. The agent opens the slot of seq before it moves ks_config.seq
 * there, and closes the slot of the interval just ended after its last
 * drain; a record whose interval is not open (it was written after that
 * drain, or long before) is late: counted and dropped, the loss the
 * in-kernel sketch has for a key counted after its epoch was read. The
 * slot is read (ks_slog_fold_sketch, ks_slog_fold_cands) while closed,
 * then reset for its next turn.
 */
#ifndef KS_SLOG_FOLD_H
#define KS_SLOG_FOLD_H

#include <stddef.h>
#include "keysteer.h"
#include "core/estimate.h"

/* A key the log brought, with its estimate: KS_SLOG_KEY bytes at most. */
struct ks_slog_cand {
	__u64 hash;  /* 0: empty slot */
	__u32 count; /* the sketch's estimate (keys) when last seen */
	__u16 len;
	__u16 pad;
	__u64 key[KS_SLOG_KEY / 8];
};

struct ks_slog_epoch {
	struct ks_sketch sk;        /* in keys: each record weighted by n */
	struct ks_slog_cand *cands; /* nbuckets * KS_CAND_WAYS slots */
	__u32 seq;                  /* the interval held */
	int open;                   /* records of seq are folded here */
	__u64 records;              /* folded into it */
};

struct ks_slog_fold {
	struct ks_slog_epoch ep[KS_EPOCHS];
	__u32 nbuckets; /* a power of two */
	/* --rate-scaling off (a test's control): every record weighs 1,
	 * as the in-kernel sketch merged without the CPUs' rates */
	int unscaled;
	/* since the start */
	__u64 folded; /* records folded */
	__u64 late;   /* records of an interval not open: dropped */
	__u64 bad;    /* records no datapath writes (length, class, rate) */
	__u64 cand_insert, cand_evict;
};

/*
 * Candidate slots for ncpus CPUs: as many as the kernel's per-CPU tables
 * hold together (KS_CAND_SLOTS each), in one table, rounded up to a power
 * of two buckets.
 */
__u32 ks_slog_fold_buckets(int ncpus);

/* Both slots empty and closed; then seq's opened. 0 or -ENOMEM. */
int ks_slog_fold_init(struct ks_slog_fold *f, int ncpus, __u32 seq);
void ks_slog_fold_free(struct ks_slog_fold *f);

/* Records of seq are folded from now on (into slot seq & 1, which must
 * have been reset since it was read). */
void ks_slog_fold_open(struct ks_slog_fold *f, __u32 seq);
/* No more records of seq: later ones are late. */
void ks_slog_fold_close(struct ks_slog_fold *f, __u32 seq);

/* Folds n records; returns how many were folded (not late, not bad). */
size_t ks_slog_fold_add(struct ks_slog_fold *f, const struct ks_slog_rec *r,
			size_t n);

/*
 * Adds the closed slot of epoch's sketch into sk (saturating), as one
 * more CPU whose counts are keys already. Nothing while the slot is open.
 */
void ks_slog_fold_sketch(const struct ks_slog_fold *f, __u32 epoch,
			 struct ks_sketch *sk);
/*
 * The candidates of the closed slot of seq as candidate slots (the key's
 * bytes, zero past it; count the estimate in keys; seq), at most cap of
 * them into out; returns how many. None while open or holding another seq.
 */
size_t ks_slog_fold_cands(const struct ks_slog_fold *f, __u32 seq,
			  struct ks_cand *out, size_t cap);
/* Empties epoch's slot for its next turn (its open state and seq stay:
 * the drain may look at them). */
void ks_slog_fold_reset(struct ks_slog_fold *f, __u32 epoch);

/* The estimate of a key of class cls in epoch's slot (keys). */
__u32 ks_slog_fold_point(const struct ks_slog_fold *f, __u32 epoch, __u32 cls,
			 __u64 hash);

/* The drain thread's period: from the fill it finds at each drain,
 * within these bounds. The log holds 15.6 ms at 262,144 keys/s a CPU
 * (auto's default target): the longest period, taken when idle, fills
 * half of it when a burst at that rate starts, so the period shrinks
 * before the log is full; the shortest keeps up with 4M keys/s a CPU
 * (every key sampled at line rate). 143 wakeups a second when idle. */
#define KS_SLOG_PERIOD_MIN_NS 1000000ULL
#define KS_SLOG_PERIOD_MAX_NS 7000000ULL
/* The drain thread's nice value: ahead of ordinary work on its CPU, so a
 * busy machine does not hold it up past the log's 15.6 ms (at 262,144
 * keys/s); it takes well under 1% of a CPU. */
#define KS_SLOG_NICE (-10)
/* The fill a period aims at: a quarter of the log. */
#define KS_SLOG_FILL_AIM (KS_SLOG_RECS / 4)

/*
 * The drain's next period from the most records it found waiting on one
 * CPU in the last one: scaled so that the fill comes to KS_SLOG_FILL_AIM,
 * at most doubled a step (a burst is met at once, a lull slowly), within
 * the bounds.
 */
__u64 ks_slog_period_next(__u64 period_ns, __u32 fill);

/*
 * The configuration flags a take-over writes before anything else, from
 * the pinned ones a dead agent left: KS_CFG_SLOG dropped, because the
 * drain that set it died with its agent, and until this agent's drain
 * runs a record would wait in a log nobody folds (the log fills, then
 * the in-kernel sketch takes the keys: none lost, but the records
 * already in are counted late, in this agent's first interval). Every
 * other flag carries on: they describe state in the maps (the hot keys,
 * a ring, limits) or belong to other processes (agent trace).
 */
__u32 ks_slog_takeover_flags(__u32 flags);

#endif
