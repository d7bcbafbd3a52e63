// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * slog.c - the sample log's drain (see slog.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "dp/slog.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/thread.h"

/* The map's bytes as mmap sees them: whole pages. */
static size_t map_bytes(__u32 value_size, __u32 entries)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t n = (size_t)value_size * entries;

	return (n + page - 1) / page * page;
}

/* fd's map mapped read-write when it is an mmapable array of at least
 * want entries of value_size bytes; NULL otherwise. */
static void *map_log(int fd, __u32 value_size, __u64 want, size_t *len)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	void *p;

	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &ilen))
		return NULL;
	if (info.type != BPF_MAP_TYPE_ARRAY || info.value_size != value_size ||
	    !(info.map_flags & BPF_F_MMAPABLE) || info.max_entries < want) {
		ks_debug(
			"sample log map %s: type %u, %u-byte values, %u entries, flags %#x: not a log of %llu",
			info.name, info.type, info.value_size, info.max_entries,
			info.map_flags, (unsigned long long)want);
		return NULL;
	}
	*len = map_bytes(value_size, info.max_entries);
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void stop_threads(struct ks_slog *s);

static void shard_free(struct ks_slog_shard *sh)
{
	ks_slog_fold_free(&sh->fold);
	free(sh->buf);
	free(sh->cpus);
	free(sh->taken);
}

static int shard_init(struct ks_slog *s, int t, __u32 seq)
{
	struct ks_slog_shard *sh = &s->sh[t];

	sh->s = s;
	sh->cpus = calloc((size_t)s->ncpus + 1, sizeof(*sh->cpus));
	sh->taken = calloc((size_t)s->ncpus + 1, sizeof(*sh->taken));
	sh->buf = calloc(KS_SLOG_RECS, sizeof(*sh->buf));
	if (!sh->cpus || !sh->taken || !sh->buf)
		return -ENOMEM;
	sh->ncpus = ks_slog_part_cpus(s->ncpus, s->nshards, t, s->o.share,
				      sh->cpus);
	/* its candidate table as large as its CPUs' tables together */
	if (ks_slog_fold_init(&sh->fold, sh->ncpus, seq))
		return -ENOMEM;
	sh->fold.unscaled = s->o.unscaled;
	sh->period_ns = KS_SLOG_PERIOD_MIN_NS;
	pthread_mutex_init(&sh->mu, NULL);
	s->folds[t] = &sh->fold;
	return 0;
}

int ks_slog_open(struct ks_slog *s, int slog_fd, int pos_fd, int ncpus,
		 __u32 seq, const struct ks_slog_opts *o)
{
	int err = 0, t;

	memset(s, 0, sizeof(*s));
	if (ncpus <= 0)
		return -EINVAL;
	s->ncpus = ncpus;
	if (o)
		s->o = *o;
	s->recs = map_log(slog_fd, sizeof(struct ks_slog_rec),
			  (__u64)ncpus * KS_SLOG_RECS, &s->recs_len);
	s->pos = map_log(pos_fd, sizeof(struct ks_slog_pos), (__u64)ncpus,
			 &s->pos_len);
	if (!s->recs || !s->pos) {
		ks_slog_close(s);
		return -EINVAL;
	}
	s->nshards = ks_slog_threads(s->o.threads, ncpus);
	s->sh = calloc((size_t)s->nshards, sizeof(*s->sh));
	s->folds = calloc((size_t)s->nshards, sizeof(*s->folds));
	if (!s->sh || !s->folds)
		err = -ENOMEM;
	for (t = 0; !err && t < s->nshards; t++) {
		err = shard_init(s, t, seq);
		if (err) {
			/* the ones before it are whole; this one is not */
			shard_free(&s->sh[t]);
			s->nshards = t;
		}
	}
	if (err) {
		ks_slog_close(s);
		return err;
	}
	return 0;
}

void ks_slog_close(struct ks_slog *s)
{
	int t;

	stop_threads(s);
	if (s->recs)
		munmap(s->recs, s->recs_len);
	if (s->pos)
		munmap(s->pos, s->pos_len);
	for (t = 0; s->sh && t < s->nshards; t++) {
		shard_free(&s->sh[t]);
		pthread_mutex_destroy(&s->sh[t].mu);
	}
	free(s->sh);
	free(s->folds);
	s->sh = NULL;
	s->folds = NULL;
	s->nshards = 0;
	s->recs = NULL;
	s->pos = NULL;
}

/*
 * One CPU's waiting records: copied out, the tail released at once so the
 * datapath may write over them, then folded. The head is read with
 * acquire: the datapath raises it after the record's stores. Only the
 * CPU's one shard comes here (ks_slog_part_cpus), under its mutex.
 */
static size_t drain_cpu(struct ks_slog_shard *sh, int i)
{
	struct ks_slog *s = sh->s;
	int cpu = sh->cpus[i];
	struct ks_slog_pos *p = &s->pos[cpu];
	const struct ks_slog_rec *log = &s->recs[(size_t)cpu * KS_SLOG_RECS];
	__u64 head = __atomic_load_n(&p->head, __ATOMIC_ACQUIRE);
	__u64 tail = __atomic_load_n(&p->tail, __ATOMIC_RELAXED);
	__u64 n = head - tail, j;

	if (!n)
		return 0;
	if (head < tail || n > KS_SLOG_RECS) {
		/* not a position the datapath writes (the map was
		 * written by hand?): start again at the head */
		sh->lost++;
		__atomic_store_n(&p->tail, head, __ATOMIC_RELEASE);
		return 0;
	}
	for (j = 0; j < n; j++)
		sh->buf[j] = log[(tail + j) & KS_SLOG_MASK];
	__atomic_store_n(&p->tail, head, __ATOMIC_RELEASE);
	if (n > sh->fill_max)
		sh->fill_max = (__u32)n;
	sh->records += n;
	sh->taken[i] += n;
	if (s->o.drop)
		sh->dropped += n;
	else
		ks_slog_fold_add(&sh->fold, sh->buf, (size_t)n);
	return (size_t)n;
}

/* Every CPU of the shard once, under sh->mu; the most records one CPU
 * had in *fill. */
static size_t drain_locked(struct ks_slog_shard *sh, __u32 *fill)
{
	size_t n = 0, c;
	int i;

	*fill = 0;
	for (i = 0; i < sh->ncpus; i++) {
		c = drain_cpu(sh, i);
		if (c > *fill)
			*fill = (__u32)c;
		n += c;
	}
	sh->drains++;
	return n;
}

size_t ks_slog_drain_shard(struct ks_slog *s, int t)
{
	__u32 fill;
	size_t n;

	pthread_mutex_lock(&s->sh[t].mu);
	n = drain_locked(&s->sh[t], &fill);
	pthread_mutex_unlock(&s->sh[t].mu);
	return n;
}

size_t ks_slog_drain(struct ks_slog *s)
{
	size_t n = 0;
	int t;

	for (t = 0; t < s->nshards; t++)
		n += ks_slog_drain_shard(s, t);
	return n;
}

static void *drain_main(void *arg)
{
	struct ks_slog_shard *sh = arg;
	struct ks_slog *s = sh->s;
	__u64 cpu0 = ks_thread_cpu_ns();

	while (!s->stop) {
		struct timespec ts;
		__u32 fill;

		pthread_mutex_lock(&sh->mu);
		drain_locked(sh, &fill);
		sh->period_ns = ks_slog_period_next(sh->period_ns, fill);
		ts.tv_sec = (time_t)(sh->period_ns / 1000000000ULL);
		ts.tv_nsec = (long)(sh->period_ns % 1000000000ULL);
		pthread_mutex_unlock(&sh->mu);
		nanosleep(&ts, NULL);
	}
	sh->thread_ns = ks_thread_cpu_ns() - cpu0;
	return NULL;
}

static void stop_threads(struct ks_slog *s)
{
	int t;

	s->stop = 1;
	for (t = 0; s->sh && t < s->nshards; t++)
		if (s->sh[t].running) {
			pthread_join(s->sh[t].th, NULL);
			s->sh[t].running = false;
		}
}

int ks_slog_start(struct ks_slog *s)
{
	/* it reads and writes mapped memory only: no capability; its
	 * nice value is set before the drop (a negative one takes
	 * CAP_SYS_NICE) */
	struct ks_thread_opts to = { .nice = s->o.nice };
	char name[16];
	int err = 0, t;

	s->stop = 0;
	for (t = 0; !err && t < s->nshards; t++) {
		snprintf(name, sizeof(name), "ks-drain-%u", (unsigned)t % 1000);
		to.name = name;
		err = ks_thread_start(&s->sh[t].th, &to, drain_main, &s->sh[t]);
		s->sh[t].running = !err;
	}
	if (err)
		stop_threads(s);
	return err;
}

void ks_slog_stop(struct ks_slog *s)
{
	stop_threads(s);
	ks_slog_drain(s);
}

void ks_slog_stats(const struct ks_slog *s, struct ks_slog_stats *out)
{
	int t;

	memset(out, 0, sizeof(*out));
	for (t = 0; t < s->nshards; t++) {
		struct ks_slog_shard *sh = &s->sh[t];

		pthread_mutex_lock(&sh->mu);
		out->folded += sh->fold.folded;
		out->late += sh->fold.late;
		out->bad += sh->fold.bad;
		out->dropped += sh->dropped;
		out->records += sh->records;
		out->drains += sh->drains;
		out->lost += sh->lost;
		out->thread_ns += sh->thread_ns;
		if (sh->fill_max > out->fill_max)
			out->fill_max = sh->fill_max;
		if (!t || sh->period_ns < out->period_ns)
			out->period_ns = sh->period_ns;
		pthread_mutex_unlock(&sh->mu);
	}
}

void ks_slog_flip_begin(struct ks_slog *s, __u32 new_seq)
{
	int t;

	for (t = 0; t < s->nshards; t++) {
		pthread_mutex_lock(&s->sh[t].mu);
		ks_slog_fold_open(&s->sh[t].fold, new_seq);
		pthread_mutex_unlock(&s->sh[t].mu);
	}
}

void ks_slog_flip_end(struct ks_slog *s, __u32 old_seq)
{
	__u32 fill;
	int t;

	for (t = 0; t < s->nshards; t++) {
		pthread_mutex_lock(&s->sh[t].mu);
		drain_locked(&s->sh[t], &fill);
		ks_slog_fold_close(&s->sh[t].fold, old_seq);
		pthread_mutex_unlock(&s->sh[t].mu);
	}
}
