// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The sample log's drain threads (core/slog_part.c): how many, which
 * CPUs' logs each owns (every CPU exactly one owner, so each log keeps one
 * consumer), and their partial folds merged at the interval: every record
 * counted once, the same estimates as one fold of every CPU. Control:
 * --drain-share's partition (thread 1 given CPU 0 as well) must show CPU
 * 0 with two owners and its records counted twice.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ktest.h"
#include "core/slog_part.h"
#include "unit.h"

static void counts(void)
{
	kt_begin("slog_part_thread_count_from_cpus");
	CHECK_EQ(ks_slog_threads_auto(1), 1);
	CHECK_EQ(ks_slog_threads_auto(2), 1);
	CHECK_EQ(ks_slog_threads_auto(16), 1);
	CHECK_EQ(ks_slog_threads_auto(17), 2);
	CHECK_EQ(ks_slog_threads_auto(64), 4);
	CHECK_EQ(ks_slog_threads_auto(128), 8);
	CHECK_EQ(ks_slog_threads_auto(0), 1);
	CHECK_EQ(ks_slog_threads_auto(100000), KS_SLOG_THREADS_MAX);
	/* asked for: as given, never more than the CPUs */
	CHECK_EQ(ks_slog_threads(0, 128), 8);
	CHECK_EQ(ks_slog_threads(3, 128), 3);
	CHECK_EQ(ks_slog_threads(4, 2), 2);
	CHECK_EQ(ks_slog_threads(1, 128), 1);
	kt_end();
}

static void partition(void)
{
	int owners[300], cpus[301];
	int ncpus, k, t, bad = 0, tried = 0;

	kt_begin("slog_part_every_cpu_one_owner");
	for (ncpus = 1; ncpus <= 300; ncpus += ncpus < 20 ? 1 : 37) {
		for (k = 1; k <= ncpus && k <= 24; k++) {
			int total = 0, lo = ncpus, hi = 0, prev;

			tried++;
			if (ks_slog_part_owners(ncpus, k, 0, owners)) {
				bad++;
				continue;
			}
			for (t = 0; t < k; t++) {
				int n = ks_slog_part_cpus(ncpus, k, t, 0, cpus),
				    i;

				total += n;
				lo = n < lo ? n : lo;
				hi = n > hi ? n : hi;
				/* ascending, in range, strided */
				for (i = 0, prev = -1; i < n; i++) {
					if (cpus[i] <= prev ||
					    cpus[i] >= ncpus ||
					    cpus[i] % k != t)
						bad++;
					prev = cpus[i];
				}
			}
			if (total != ncpus || hi - lo > 1)
				bad++;
		}
	}
	CHECK(tried > 200, "%d partitions tried", tried);
	CHECK(bad == 0, "%d partitions not one owner a CPU, or unbalanced",
	      bad);
	kt_end();

	kt_begin("slog_part_share_control_two_owners");
	/* the control's partition: CPU 0 read by threads 0 and 1 */
	CHECK_EQ(ks_slog_part_owners(64, 4, 1, owners), 1);
	CHECK_EQ(owners[0], 2);
	CHECK_EQ(owners[1], 1);
	/* with one thread there is no second consumer to give it to */
	CHECK_EQ(ks_slog_part_owners(64, 1, 1, owners), 0);
	kt_end();
}

#define M_CPUS 32
#define M_KEYS 40 /* own keys a CPU; far fewer than the sketch's columns */

static void rec(struct ks_slog_rec *r, const char *key, __u32 seq, __u32 n)
{
	memset(r, 0, sizeof(*r));
	r->len = (__u16)strlen(key);
	memcpy(r->key, key, r->len);
	r->hash = ut_hash(key);
	r->cls = KS_CLASS_READ;
	r->seq = (__u16)seq;
	r->n = (__u16)n;
}

/* CPU cpu's log for interval seq: each of its own keys (cpu + 1) times
 * and "hot" 5 times, at its rate 1 << (cpu % 4); *nrec records. */
static struct ks_slog_rec *cpu_log(int cpu, __u32 seq, size_t *nrec)
{
	struct ks_slog_rec *l = calloc(M_KEYS * (M_CPUS + 1) + 8, sizeof(*l));
	size_t n = 0;
	char key[32];
	int i, j;

	for (i = 0; l && i < M_KEYS; i++)
		for (j = 0; j <= cpu; j++) {
			snprintf(key, sizeof(key), "c%d:k%d", cpu, i);
			rec(&l[n++], key, seq, 1u << (cpu % 4));
		}
	for (j = 0; l && j < 5; j++)
		rec(&l[n++], "hot", seq, 1u << (cpu % 4));
	*nrec = n;
	return l;
}

/*
 * The drain of k threads on the partition (share: the control's), each
 * folding its CPUs' logs into its own fold, then the merge as the
 * interval reads it. bad counts keys whose merged estimate is not their
 * true count; *folded the records folded in all.
 */
static int merged(int k, int share, __u64 *folded, int *bad, size_t *ncands)
{
	struct ks_slog_fold *f = calloc((size_t)k, sizeof(*f));
	struct ks_slog_fold **fp = calloc((size_t)k, sizeof(*fp));
	struct ks_sketch *sk = calloc(1, sizeof(*sk));
	struct ks_cand *c;
	int cpus[M_CPUS + 1], t, i, n, cpu;
	__u64 hot = 0;
	char key[32];
	size_t cap;

	if (!f || !fp || !sk)
		return -1;
	for (t = 0; t < k; t++) {
		n = ks_slog_part_cpus(M_CPUS, k, t, share, cpus);
		if (ks_slog_fold_init(&f[t], n, 9))
			return -1;
		fp[t] = &f[t];
		for (i = 0; i < n; i++) {
			size_t nr;
			struct ks_slog_rec *l = cpu_log(cpus[i], 9, &nr);

			if (!l)
				return -1;
			ks_slog_fold_add(&f[t], l, nr);
			free(l);
		}
		ks_slog_fold_close(&f[t], 9);
	}
	ks_slog_folds_sketch(fp, k, 9, sk);
	*folded = 0;
	for (t = 0; t < k; t++)
		*folded += f[t].folded;
	*bad = 0;
	for (cpu = 0; cpu < M_CPUS; cpu++) {
		hot += 5u << (cpu % 4);
		for (i = 0; i < M_KEYS; i++) {
			snprintf(key, sizeof(key), "c%d:k%d", cpu, i);
			*bad += ks_cms_point(sk, KS_CLASS_READ, ut_hash(key)) !=
				(__u32)(cpu + 1) << (cpu % 4);
		}
	}
	*bad += ks_cms_point(sk, KS_CLASS_READ, ut_hash("hot")) != hot;
	cap = ks_slog_folds_slots(fp, k);
	c = calloc(cap, sizeof(*c));
	*ncands = c ? ks_cands_dedup(c, ks_slog_folds_cands(fp, k, 9, c, cap))
		    : 0;
	free(c);
	ks_slog_folds_reset(fp, k, 9);
	for (t = 0; t < k; t++)
		ks_slog_fold_free(&f[t]);
	free(f);
	free(fp);
	free(sk);
	return 0;
}

static void merge(void)
{
	__u64 written = 0, folded1, folded;
	int k, bad1, bad;
	size_t n1, n, nr;
	int cpu;

	for (cpu = 0; cpu < M_CPUS; cpu++) {
		free(cpu_log(cpu, 9, &nr));
		written += nr;
	}
	kt_begin("slog_part_merge_every_record_once");
	CHECK_EQ(merged(1, 0, &folded1, &bad1, &n1), 0);
	CHECK_EQ(folded1, written);
	CHECK(bad1 == 0, "%d keys off their count with one thread", bad1);
	CHECK_EQ(n1, (size_t)M_CPUS * M_KEYS + 1);
	for (k = 2; k <= M_CPUS; k *= 2) {
		CHECK_EQ(merged(k, 0, &folded, &bad, &n), 0);
		CHECK(folded == written, "k %d: %llu folded of %llu", k,
		      (unsigned long long)folded, (unsigned long long)written);
		CHECK(bad == 0, "k %d: %d keys off their count", k, bad);
		/* the hot key in every thread's table is one candidate */
		CHECK(n == n1, "k %d: %zu candidates, %zu with one thread", k,
		      n, n1);
	}
	kt_end();

	kt_begin("slog_part_merge_share_control_counts_twice");
	/* control: CPU 0's log read by two threads (as two consumers
	 * racing on its tail may) is folded twice, and the merge shows it */
	CHECK_EQ(merged(4, 1, &folded, &bad, &n), 0);
	CHECK(folded > written, "%llu folded of %llu written",
	      (unsigned long long)folded, (unsigned long long)written);
	CHECK(bad > 0, "no key off its count");
	kt_end();
}

void test_slog_part(void)
{
	counts();
	partition();
	merge();
}
