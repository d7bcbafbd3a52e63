// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * slog_part.c - the sample log's CPUs split between drain threads and
 * their folds merged (see slog_part.h).
 */
#include <stdlib.h>
#include "core/slog_part.h"

int ks_slog_threads_auto(int ncpus)
{
	int k;

	if (ncpus <= 0)
		return 1;
	k = (ncpus + KS_SLOG_CPUS_PER_THREAD - 1) / KS_SLOG_CPUS_PER_THREAD;
	return k > KS_SLOG_THREADS_MAX ? KS_SLOG_THREADS_MAX : k;
}

int ks_slog_threads(int want, int ncpus)
{
	int k = want > 0 ? want : ks_slog_threads_auto(ncpus);

	if (ncpus > 0 && k > ncpus)
		k = ncpus;
	return k < 1 ? 1 : k;
}

int ks_slog_part_cpus(int ncpus, int k, int t, int share, int *out)
{
	int cpu, n = 0;

	if (k < 1 || t < 0 || t >= k)
		return 0;
	if (share && k > 1 && t == 1 && ncpus > 0)
		out[n++] = 0; /* the control's second consumer of CPU 0 */
	for (cpu = t; cpu < ncpus; cpu += k)
		out[n++] = cpu;
	return n;
}

int ks_slog_part_owners(int ncpus, int k, int share, int *owners)
{
	int t, i, n, bad = 0;
	int *cpus = malloc(((size_t)(ncpus > 0 ? ncpus : 0) + 1) *
			   sizeof(*cpus));

	if (!cpus)
		return -1;
	for (i = 0; i < ncpus; i++)
		owners[i] = 0;
	for (t = 0; t < k; t++) {
		n = ks_slog_part_cpus(ncpus, k, t, share, cpus);
		for (i = 0; i < n; i++)
			owners[cpus[i]]++;
	}
	free(cpus);
	for (i = 0; i < ncpus; i++)
		bad += owners[i] != 1;
	return bad;
}

void ks_slog_folds_sketch(struct ks_slog_fold *const *f, int k, __u32 epoch,
			  struct ks_sketch *sk)
{
	int t;

	for (t = 0; t < k; t++)
		ks_slog_fold_sketch(f[t], epoch, sk);
}

size_t ks_slog_folds_cands(struct ks_slog_fold *const *f, int k, __u32 seq,
			   struct ks_cand *out, size_t cap)
{
	size_t n = 0;
	int t;

	for (t = 0; t < k && n < cap; t++)
		n += ks_slog_fold_cands(f[t], seq, out + n, cap - n);
	return n;
}

void ks_slog_folds_reset(struct ks_slog_fold *const *f, int k, __u32 epoch)
{
	int t;

	for (t = 0; t < k; t++)
		ks_slog_fold_reset(f[t], epoch);
}

size_t ks_slog_folds_slots(struct ks_slog_fold *const *f, int k)
{
	size_t n = 0;
	int t;

	for (t = 0; t < k; t++)
		n += (size_t)f[t]->nbuckets * KS_CAND_WAYS;
	return n;
}
