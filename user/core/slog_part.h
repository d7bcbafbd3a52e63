/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * slog_part.h - the sample log's CPUs split between drain threads (issue
 * 27, "The agent on big hosts"), as pure logic: how many threads, which
 * CPUs' logs each one owns, and the partial folds merged at the interval.
 *
 * One drain thread keeps up with about 30 CPUs at --sample auto's default
 * target (docs/benchmarks.md): past that the logs fill and the datapath's
 * own sketch takes the keys. K threads each own a fixed set of CPUs, so
 * every CPU's log still has exactly one consumer (the head/tail protocol
 * of bpf/ks_sample.bpf.h, ks_slog_slot and ks_slog_publish, and
 * user/dp/slog.c is single-producer single-consumer), and each folds
 * into a fold of its own (core/slog_fold.h). The interval adds each
 * fold's closed sketch to the kernel's as one more CPU (the kernel's
 * CPUs are merged the same way: each key's records are in exactly one
 * fold, so none is lost or counted twice) and gathers every fold's
 * candidates before the deduplication (a key in two folds is one key,
 * its estimate read from the merged sketch).
 */
#ifndef KS_SLOG_PART_H
#define KS_SLOG_PART_H

#include <stddef.h>
#include "keysteer.h"
#include "core/estimate.h"
#include "core/slog_fold.h"

/* CPUs one thread is given when the count is automatic: half of what one
 * thread kept up with at auto's default target at 128 CPUs (30), so a
 * busy or slower machine still leaves it room. */
#define KS_SLOG_CPUS_PER_THREAD 16
/* At most this many drain threads (--drain-threads): 4,096 CPUs at 16. */
#define KS_SLOG_THREADS_MAX 256

/* The automatic thread count for ncpus possible CPUs: one per
 * KS_SLOG_CPUS_PER_THREAD, rounded up, at least 1. */
int ks_slog_threads_auto(int ncpus);

/* The threads actually run for a request (0: automatic) at ncpus: never
 * more than the CPUs (a thread with no log to drain would only wake). */
int ks_slog_threads(int want, int ncpus);

/*
 * The CPUs thread t of k owns, in order, into out (room for ncpus);
 * returns how many. Strided (cpu % k == t) rather than in blocks: the
 * busy CPUs of a host are often a contiguous range (the NIC's queues'
 * interrupts on the first CPUs, memcached pinned to one node), and
 * strides spread them over every thread.
 *
 * share (a test's control, --drain-share on): thread 1 also owns CPU 0,
 * so CPU 0's log has two consumers; its records can be taken twice.
 */
int ks_slog_part_cpus(int ncpus, int k, int t, int share, int *out);

/*
 * Each CPU's owners over all k threads' lists into owners (ncpus
 * entries); returns the CPUs owned by other than exactly one thread (0
 * for a partition), -1 out of memory.
 */
int ks_slog_part_owners(int ncpus, int k, int share, int *owners);

/* The partial folds' closed slot of epoch added into sk, one after
 * another (each as one more CPU, saturating). */
void ks_slog_folds_sketch(struct ks_slog_fold *const *f, int k, __u32 epoch,
			  struct ks_sketch *sk);
/* Every fold's candidates of seq into out, at most cap; how many. */
size_t ks_slog_folds_cands(struct ks_slog_fold *const *f, int k, __u32 seq,
			   struct ks_cand *out, size_t cap);
/* Every fold's slot of epoch reset. */
void ks_slog_folds_reset(struct ks_slog_fold *const *f, int k, __u32 epoch);
/* The candidate slots of every fold together. */
size_t ks_slog_folds_slots(struct ks_slog_fold *const *f, int k);

#endif
