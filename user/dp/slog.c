// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * slog.c - the sample log's drain (see slog.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "dp/slog.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/privs.h"

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

int ks_slog_open(struct ks_slog *s, int slog_fd, int pos_fd, int ncpus,
		 __u32 seq)
{
	int err;

	memset(s, 0, sizeof(*s));
	if (ncpus <= 0)
		return -EINVAL;
	s->ncpus = ncpus;
	s->recs = map_log(slog_fd, sizeof(struct ks_slog_rec),
			  (__u64)ncpus * KS_SLOG_RECS, &s->recs_len);
	s->pos = map_log(pos_fd, sizeof(struct ks_slog_pos), (__u64)ncpus,
			 &s->pos_len);
	if (!s->recs || !s->pos) {
		ks_slog_close(s);
		return -EINVAL;
	}
	s->buf = calloc(KS_SLOG_RECS, sizeof(*s->buf));
	err = s->buf ? ks_slog_fold_init(&s->fold, ncpus, seq) : -ENOMEM;
	if (err) {
		ks_slog_close(s);
		return err;
	}
	pthread_mutex_init(&s->mu, NULL);
	s->period_ns = KS_SLOG_PERIOD_MIN_NS;
	return 0;
}

void ks_slog_close(struct ks_slog *s)
{
	if (s->running)
		ks_slog_stop(s);
	if (s->recs)
		munmap(s->recs, s->recs_len);
	if (s->pos) {
		munmap(s->pos, s->pos_len);
		pthread_mutex_destroy(&s->mu);
	}
	ks_slog_fold_free(&s->fold);
	free(s->buf);
	s->recs = NULL;
	s->pos = NULL;
	s->buf = NULL;
}

/*
 * One CPU's waiting records: copied out, the tail released at once so the
 * datapath may write over them, then folded. The head is read with
 * acquire: the datapath raises it after the record's stores.
 */
static size_t drain_cpu(struct ks_slog *s, int cpu)
{
	struct ks_slog_pos *p = &s->pos[cpu];
	const struct ks_slog_rec *log = &s->recs[(size_t)cpu * KS_SLOG_RECS];
	__u64 head = __atomic_load_n(&p->head, __ATOMIC_ACQUIRE);
	__u64 tail = __atomic_load_n(&p->tail, __ATOMIC_RELAXED);
	__u64 n = head - tail, i;

	if (!n)
		return 0;
	if (head < tail || n > KS_SLOG_RECS) {
		/* not a position the datapath writes (the map was
		 * written by hand?): start again at the head */
		s->lost++;
		__atomic_store_n(&p->tail, head, __ATOMIC_RELEASE);
		return 0;
	}
	for (i = 0; i < n; i++)
		s->buf[i] = log[(tail + i) & KS_SLOG_MASK];
	__atomic_store_n(&p->tail, head, __ATOMIC_RELEASE);
	if (n > s->fill_max)
		s->fill_max = (__u32)n;
	s->records += n;
	if (s->drop)
		s->dropped += n;
	else
		ks_slog_fold_add(&s->fold, s->buf, (size_t)n);
	return (size_t)n;
}

/* Every CPU once, under s->mu; the most records one CPU had in *fill. */
static size_t drain_locked(struct ks_slog *s, __u32 *fill)
{
	size_t n = 0, c;
	int cpu;

	*fill = 0;
	for (cpu = 0; cpu < s->ncpus; cpu++) {
		c = drain_cpu(s, cpu);
		if (c > *fill)
			*fill = (__u32)c;
		n += c;
	}
	s->drains++;
	return n;
}

size_t ks_slog_drain(struct ks_slog *s)
{
	__u32 fill;
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = drain_locked(s, &fill);
	pthread_mutex_unlock(&s->mu);
	return n;
}

static void *drain_main(void *arg)
{
	struct ks_slog *s = arg;
	__u64 cpu0 = ks_thread_cpu_ns();

	if (s->nice &&
	    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), s->nice))
		ks_debug(
			"the sample log's drain stays at the agent's priority (%s)",
			strerror(errno));
	/* it reads and writes mapped memory only: no capability needed */
	if (ks_drop_thread_privileges())
		ks_debug(
			"the sample log's drain keeps the agent's capabilities");
	while (!s->stop) {
		struct timespec ts;
		__u32 fill;

		pthread_mutex_lock(&s->mu);
		drain_locked(s, &fill);
		s->period_ns = ks_slog_period_next(s->period_ns, fill);
		ts.tv_sec = (time_t)(s->period_ns / 1000000000ULL);
		ts.tv_nsec = (long)(s->period_ns % 1000000000ULL);
		pthread_mutex_unlock(&s->mu);
		nanosleep(&ts, NULL);
	}
	s->thread_ns = ks_thread_cpu_ns() - cpu0;
	return NULL;
}

int ks_slog_start(struct ks_slog *s)
{
	int err;

	s->stop = 0;
	err = -pthread_create(&s->th, NULL, drain_main, s);
	s->running = !err;
	return err;
}

void ks_slog_stop(struct ks_slog *s)
{
	if (s->running) {
		s->stop = 1;
		pthread_join(s->th, NULL);
		s->running = false;
	}
	ks_slog_drain(s);
}

void ks_slog_flip_begin(struct ks_slog *s, __u32 new_seq)
{
	pthread_mutex_lock(&s->mu);
	ks_slog_fold_open(&s->fold, new_seq);
	pthread_mutex_unlock(&s->mu);
}

void ks_slog_flip_end(struct ks_slog *s, __u32 old_seq)
{
	__u32 fill;

	pthread_mutex_lock(&s->mu);
	drain_locked(s, &fill);
	ks_slog_fold_close(&s->fold, old_seq);
	pthread_mutex_unlock(&s->mu);
}
