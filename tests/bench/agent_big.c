// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * agent_big.c - the agent's interval on big hosts (issue 27, "The agent on
 * big hosts"; docs/benchmarks.md): its CPU per interval and its memory at
 * N possible CPUs, N simulated on this machine.
 *
 * User space, exactly: the agent's own collect.c and estimate.c (linked
 * whole, as the agent has them) run one interval as loop.c does it --
 * ks_estimate_interval (totals, the epoch's sketch merged over N CPUs,
 * the candidates of N CPUs deduplicated and ranked), the ring's shard
 * counts and misdirect slots, ks_zero_sketch -- with libbpf's
 * libbpf_num_possible_cpus, bpf_map_lookup_elem and bpf_map_update_elem
 * wrapped (-Wl,--wrap): every map read returns N synthetic per-CPU copies
 * (memcpy from a pool; its CPU time a call, calibrated in blocks of
 * calls, is taken out) and every
 * call is counted with its bytes. Each N runs in a child process of its
 * own, so its peak resident memory (VmHWM after clear_refs) is its own.
 *
 * The kernel's part: a percpu lookup copies every possible CPU's value
 * into a buffer of N * round8(value_size) bytes and that to user space;
 * an update the same the other way. Measured here on real maps: percpu
 * arrays of several value sizes at this machine's CPUs give ns per call
 * and ns per byte (a least-squares line), and plain arrays whose one
 * value is as large as a percpu value at N CPUs (N * 16 KiB for a sketch
 * segment, N * 280 for a candidate slot) check the line at the real byte
 * counts, which a 2-CPU machine cannot make with a percpu map. The model:
 * kernel ns = sum over calls of (a + b * bytes), with a, b of the kind of
 * call (lookup, update).
 *
 * The sample log (--slog-rate R, R > 0): the agent's drain (dp/slog.c)
 * and fold (core/slog_fold.c) on real maps, ks_slog and ks_slog_pos
 * made at the sizes ks_cpu_maps_size() gives the BPF object at N CPUs
 * (mmapable arrays, mapped by ks_slog_open as the agent maps them). Each
 * interval the bench writes, as N datapath CPUs would, KS_SLOG_FILL_AIM
 * records on every CPU (the fill the drain's period aims at) and the
 * drain takes them, --slog-drains times; the lines written are flushed
 * from this CPU's cache first (x86), as the records of other CPUs are
 * not in the drain's. Only the drains are timed: ns of thread CPU a
 * record, then scaled to R keys a second on every CPU. The interval's
 * own part then includes the fold's sketch, candidates and reset
 * (collect.c with the fold set, as loop.c runs it).
 *
 * Kernel memory: the per-CPU maps of the BPF object (keysteer.bpf.o),
 * read from the object file without loading it: round8(value_size) *
 * max_entries * N for every percpu array or hash, plus the other maps as
 * they are.
 *
 *   agent_big [--cpus 2,16,64,128] [--intervals 5] [--obj FILE]
 *             [--kernel-reps 200] [--no-kernel] [--slog-rate 262144]
 *             [--slog-drains 4] [--slog-threads auto]
 *
 * Prints one "RESULT" line of key=value pairs per N and one "KERNEL" line
 * of the fitted line; needs CAP_BPF for the kernel part.
 */
#include <errno.h>
#include <pthread.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "agent_big_model.h"
#include "dp/collect.h"
#include "dp/slog.h"
#include "dp/cpu_maps.h"
#include "core/estimate.h"
#include "core/hotkeys.h"
#include "util/clock.h"

#define FAKE_FD0  100000
#define NSHARDS   64 /* the ring's shards read each interval */
#define POOL_SEGS 16 /* distinct synthetic sketch segments */
#define HOT_CANDS 64 /* slots holding the same key on every CPU */
#define MAX_SIZES 8

int __real_libbpf_num_possible_cpus(void);
int __real_bpf_map_lookup_elem(int fd, const void *key, void *value);
int __real_bpf_map_update_elem(int fd, const void *key, const void *value,
			       __u64 flags);

/* The fake datapath: which fd is which map, and what it holds. */
enum fake_map {
	F_OPS,
	F_ERR,
	F_PKTS,
	F_CMS,
	F_CANDS,
	F_SHARDS,
	F_MIS,
	F_N
};
static const size_t fake_vsize[F_N] = {
	sizeof(struct ks_op_stats),     sizeof(__u64),
	sizeof(struct ks_pkt_counters), sizeof(__u32) * KS_CMS_SEG,
	sizeof(struct ks_cand),         sizeof(struct ks_shard_stats),
	sizeof(struct ks_misdirect),
};
static const char *const fake_name[F_N] = { "ops",      "errors", "pkts",
					    "cms",      "cands",  "shards",
					    "misdirect" };

static struct {
	int on, ncpus;
	__u32 seq;
	__u32 *pool;          /* POOL_SEGS segments of KS_CMS_SEG counters */
	struct ks_cand *cand; /* [slot][cpu] */
	/* CPU ns of one fake lookup of each map (its copy), calibrated in
	 * a block of calls: taken out of the interval's CPU time */
	double copy_call_ns[F_N];
	struct ab_calls calls[F_N][2]; /* [map][0 lookup, 1 update] */
} fk;

/* The sample log at N CPUs (--slog-rate > 0). */
static struct {
	__u32 rate; /* sampled keys a second on each CPU, for the scaling */
	int drains; /* drains an interval, KS_SLOG_FILL_AIM records a CPU */
	const char *obj;
	struct ks_slog s;
	int threads; /* --slog-threads: the drain's shards (0: the
		      * agent's automatic count at N CPUs) */
	__u64 shard_ns[KS_SLOG_THREADS_MAX]; /* each shard's drains */
	/* the drains side by side (slog_parallel) */
	__u64 par_ns, par_recs, par_cpu_ns;
	int par_threads;
	__u64 lcg;
	__u64 hot_hash[HOT_CANDS];
	/* the timed intervals' drains */
	__u64 drain_ns, recs, poll_ns, polls;
} sl;

/* Plain arrays of one value of a percpu value's bytes at N CPUs: ns per
 * call, [0] a sketch segment, [1] a candidate slot; [kind][0 lookup, 1
 * update]. */
struct flat_ns {
	double v[2][2];
};

int __wrap_libbpf_num_possible_cpus(void)
{
	return fk.on ? fk.ncpus : __real_libbpf_num_possible_cpus();
}

static void count(int m, int upd)
{
	fk.calls[m][upd].calls++;
	fk.calls[m][upd].bytes += ks_percpu_stride(fake_vsize[m]) *
				  (__u64)fk.ncpus;
}

int __wrap_bpf_map_lookup_elem(int fd, const void *key, void *value)
{
	int m = fd - FAKE_FD0, cpu;
	size_t st;
	__u32 k = *(const __u32 *)key;
	unsigned char *out = value;

	if (!fk.on || m < 0 || m >= F_N)
		return __real_bpf_map_lookup_elem(fd, key, value);
	count(m, 0);
	st = ks_percpu_stride(fake_vsize[m]);
	for (cpu = 0; cpu < fk.ncpus; cpu++) {
		unsigned char *dst = out + (size_t)cpu * st;

		switch (m) {
		case F_CMS:
			memcpy(dst,
			       fk.pool + (size_t)((k + cpu) % POOL_SEGS) *
						 KS_CMS_SEG,
			       st);
			break;
		case F_CANDS:
			memcpy(dst, &fk.cand[(size_t)k * fk.ncpus + cpu], st);
			break;
		default: {
			/* counters: small numbers, growing with the seq */
			__u64 *w = (__u64 *)dst;
			size_t i;

			for (i = 0; i < st / 8; i++)
				w[i] = (__u64)fk.seq * 1000 + k + i + cpu;
		}
		}
	}
	return 0;
}

int __wrap_bpf_map_update_elem(int fd, const void *key, const void *value,
			       __u64 flags)
{
	int m = fd - FAKE_FD0;

	if (!fk.on || m < 0 || m >= F_N)
		return __real_bpf_map_update_elem(fd, key, value, flags);
	count(m, 1);
	return 0; /* the zeroes go nowhere: the kernel's copy is modelled */
}

static __u64 lcg(__u64 *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 33;
}

/*
 * The synthetic datapath at N CPUs: sketch segments of small counts, and
 * candidate tables full of keys touched this interval: the first
 * HOT_CANDS slots hold the same keys on every CPU (hot keys seen
 * everywhere), the rest keys of their own CPU (the long tail), so the
 * candidates number N * (KS_CAND_SLOTS - HOT_CANDS) + HOT_CANDS after
 * deduplication: the most a host of N CPUs can hand the agent.
 */
static int fake_fill(int ncpus, __u32 seq)
{
	__u64 s = 12345;
	size_t i;
	__u32 slot;
	int cpu;

	fk.ncpus = ncpus;
	fk.seq = seq;
	fk.pool = malloc(sizeof(__u32) * KS_CMS_SEG * POOL_SEGS);
	fk.cand = calloc((size_t)KS_CAND_SLOTS * ncpus, sizeof(*fk.cand));
	if (!fk.pool || !fk.cand)
		return -ENOMEM;
	for (i = 0; i < (size_t)KS_CMS_SEG * POOL_SEGS; i++)
		fk.pool[i] = lcg(&s) % 16;
	for (slot = 0; slot < KS_CAND_SLOTS; slot++) {
		for (cpu = 0; cpu < ncpus; cpu++) {
			struct ks_cand *c = &fk.cand[(size_t)slot * ncpus + cpu];
			__u64 words[KS_KEY_WORDS] = { 0 };
			int len;

			if (slot < HOT_CANDS)
				len = snprintf((char *)words, sizeof(words),
					       "hot:%u", slot);
			else
				len = snprintf((char *)words, sizeof(words),
					       "key:%d:%u:%llu", cpu, slot,
					       (unsigned long long)lcg(&s));
			memcpy(c->key, words, sizeof(c->key));
			c->len = (__u16)len;
			c->hash = ks_key_hash(words, (__u32)len);
			c->seq = seq;
			c->count = slot < HOT_CANDS
					   ? 1000 + (__u32)lcg(&s) % 100
					   : 1 + (__u32)lcg(&s) % 8;
		}
	}
	return 0;
}

static long proc_kib(const char *field)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)))
			v = strtol(line + strlen(field) + 1, NULL, 10);
	fclose(f);
	return v;
}

static void reset_hwm(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");

	if (f) {
		fputs("5", f);
		fclose(f);
	}
}

/* The fake's copies in the lookups counted so far, in CPU ns. */
static double copy_ns(void)
{
	double ns = 0;
	int m;

	for (m = 0; m < F_N; m++)
		ns += (double)fk.calls[m][0].calls * fk.copy_call_ns[m];
	return ns;
}

/* CPU ns of one fake lookup of each map: the least of 5 blocks of 64
 * (CPU time, so another process's turn on the core is not counted). */
static int calibrate_copy(size_t buf_bytes)
{
	void *buf = malloc(buf_bytes);
	int m, r, i;

	if (!buf)
		return -ENOMEM;
	for (m = 0; m < F_N; m++) {
		double best = 1e18;

		for (r = 0; r < 5; r++) {
			__u64 t0 = ks_thread_cpu_ns();

			for (i = 0; i < 64; i++) {
				/* a new slot each call and block: the
				 * candidates' source is as cold as in an
				 * interval, which reads each slot once */
				__u32 key = (__u32)(i * 16 + r) % KS_CAND_SLOTS;

				__wrap_bpf_map_lookup_elem(FAKE_FD0 + m, &key,
							   buf);
			}
			t0 = ks_thread_cpu_ns() - t0;
			if (t0 / 64.0 < best)
				best = t0 / 64.0;
		}
		fk.copy_call_ns[m] = best;
	}
	free(buf);
	memset(fk.calls, 0, sizeof(fk.calls));
	return 0;
}

/* Out of this CPU's caches (x86; elsewhere left, so the drain is timed
 * on warm lines and the figure is a lower bound). */
static void flush_lines(const void *p, size_t bytes)
{
#if defined(__x86_64__) || defined(__i386__)
	const char *c = p;
	size_t i;

	for (i = 0; i < bytes; i += 64)
		__builtin_ia32_clflush(c + i);
	__builtin_ia32_mfence();
#else
	(void)p;
	(void)bytes;
#endif
}

/*
 * The maps the agent would map on a host of ncpus CPUs: ks_cpu_maps_size()
 * on the BPF object (libbpf_num_possible_cpus is ncpus here), then both
 * made at those sizes and mapped by ks_slog_open.
 */
static int slog_make(int ncpus, __u32 seq)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);
	struct bpf_object *o = bpf_object__open_file(sl.obj, NULL);
	__u32 recs, npos;
	int fd, pos_fd, err, i;

	if (!o) {
		fprintf(stderr, "agent_big: cannot open %s: %s\n", sl.obj,
			strerror(errno));
		return -ENOENT;
	}
	err = ks_cpu_maps_size(o);
	recs = bpf_map__max_entries(bpf_object__find_map_by_name(o, "ks_slog"));
	npos = bpf_map__max_entries(
		bpf_object__find_map_by_name(o, "ks_slog_pos"));
	bpf_object__close(o);
	if (err || recs != (__u32)ncpus * KS_SLOG_RECS ||
	    npos != (__u32)ncpus) {
		fprintf(stderr,
			"agent_big: ks_cpu_maps_size at %d CPUs: %d (%u records, %u positions)\n",
			ncpus, err, recs, npos);
		return -EINVAL;
	}
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ks_slog", 4,
			    sizeof(struct ks_slog_rec), recs, &mo);
	pos_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ks_slog_pos", 4,
				sizeof(struct ks_slog_pos), npos, &mo);
	if (fd < 0 || pos_fd < 0) {
		fprintf(stderr,
			"agent_big: the sample log's maps at %d CPUs: %s\n",
			ncpus, strerror(errno));
		return -errno;
	}
	struct ks_slog_opts so = { .threads = sl.threads };

	err = ks_slog_open(&sl.s, fd, pos_fd, ncpus, seq, &so);
	memset(sl.shard_ns, 0, sizeof(sl.shard_ns));
	sl.par_ns = sl.par_recs = sl.par_cpu_ns = 0;
	/* the mappings hold the maps */
	close(fd);
	close(pos_fd);
	if (err)
		return err;
	for (i = 0; i < HOT_CANDS; i++) {
		__u64 w[KS_KEY_WORDS] = { 0 };
		int len = snprintf((char *)w, sizeof(w), "hot:%d", i);

		sl.hot_hash[i] = ks_key_hash(w, (__u32)len);
	}
	sl.lcg = 777;
	return 0;
}

/*
 * KS_SLOG_FILL_AIM records of seq on every CPU, as its datapath appends
 * them (ks_slog_put): 1 in 10 one of the hot keys every CPU sees, the
 * rest keys of the CPU's own never seen again; 1 in 10 a write. Each
 * CPU at its rate (cpu_n). Then the lines out of this CPU's cache.
 */
static void slog_produce(__u32 seq, const __u32 *cpu_n)
{
	int cpu, i;

	for (cpu = 0; cpu < sl.s.ncpus; cpu++) {
		struct ks_slog_pos *p = &sl.s.pos[cpu];
		struct ks_slog_rec *log = &sl.s.recs[(size_t)cpu * KS_SLOG_RECS];
		__u64 head = p->head, h0 = head;

		for (i = 0; i < KS_SLOG_FILL_AIM; i++, head++) {
			struct ks_slog_rec *r = &log[head & KS_SLOG_MASK];
			__u64 x = lcg(&sl.lcg);
			int len;

			memset(r, 0, sizeof(*r));
			if (x % 10 == 0) {
				len = snprintf((char *)r->key, sizeof(r->key),
					       "hot:%u",
					       (unsigned)(x / 10 % HOT_CANDS));
				r->hash = sl.hot_hash[x / 10 % HOT_CANDS];
			} else {
				len = snprintf(
					(char *)r->key, sizeof(r->key),
					"key:%d:%llu", cpu,
					(unsigned long long)lcg(&sl.lcg));
				r->hash = ks_key_hash(r->key, (__u32)len);
			}
			r->len = (__u16)len;
			r->cls = x % 10 == 5 ? KS_CLASS_WRITE : KS_CLASS_READ;
			r->seq = (__u16)seq;
			r->n = (__u16)cpu_n[cpu];
		}
		__atomic_store_n(&p->head, head, __ATOMIC_RELEASE);
		/* a record is one line */
		for (; h0 < head; h0++)
			flush_lines(&log[h0 & KS_SLOG_MASK], sizeof(*log));
		flush_lines(p, sizeof(*p));
	}
}

/*
 * seq's records through the log, as between two flips: its epoch opened,
 * sl.drains rounds of the datapath's records and a drain, one drain of
 * nothing new (the poll: every CPU's position line moved by its CPU, so
 * out of this one's cache), then the epoch closed. timed: the drains'
 * CPU into sl's sums.
 */
static int slog_feed(__u32 seq, const __u32 *cpu_n, int timed)
{
	__u64 t0, ns = 0, recs = 0, poll, shard[KS_SLOG_THREADS_MAX] = { 0 };
	int d, cpu, t;

	ks_slog_flip_begin(&sl.s, seq);
	for (d = 0; d < sl.drains; d++) {
		slog_produce(seq, cpu_n);
		/* each shard as its own thread would drain it: the busiest
		 * one is what bounds K threads on K free cores */
		for (t = 0; t < sl.s.nshards; t++) {
			__u64 dt;

			t0 = ks_thread_cpu_ns();
			recs += ks_slog_drain_shard(&sl.s, t);
			dt = ks_thread_cpu_ns() - t0;
			shard[t] += dt;
			ns += dt;
		}
	}
	for (cpu = 0; cpu < sl.s.ncpus; cpu++)
		flush_lines(&sl.s.pos[cpu], sizeof(sl.s.pos[cpu]));
	t0 = ks_thread_cpu_ns();
	if (ks_slog_drain(&sl.s))
		return -EIO;
	poll = ks_thread_cpu_ns() - t0;
	ks_slog_flip_end(&sl.s, seq);
	if (recs != (__u64)sl.drains * KS_SLOG_FILL_AIM * sl.s.ncpus)
		return -EIO;
	if (timed) {
		for (t = 0; t < sl.s.nshards; t++)
			sl.shard_ns[t] += shard[t];
		sl.drain_ns += ns;
		sl.recs += recs;
		sl.poll_ns += poll;
		sl.polls++;
	}
	return 0;
}

/*
 * The drains run for real side by side: P threads (this machine's online
 * CPUs, at most the shards), thread j draining shards j, j + P, ..., as
 * many times as the timed intervals drained; the wall time from their
 * start to the last one's end, over the records. With P cores free this
 * is what K drain threads take a second; past P (a 2-core machine) the
 * busiest shard's share above is the figure. Their CPU time too: on a
 * machine loaded by other work the wall time holds their waits.
 */
struct par_arg {
	int j, p;
	__u64 recs, cpu_ns;
};

static void *par_main(void *v)
{
	struct par_arg *a = v;
	__u64 t0 = ks_thread_cpu_ns();
	int t;

	for (t = a->j; t < sl.s.nshards; t += a->p)
		a->recs += ks_slog_drain_shard(&sl.s, t);
	a->cpu_ns = ks_thread_cpu_ns() - t0;
	return NULL;
}

static int slog_parallel(__u32 seq, const __u32 *cpu_n, int rounds)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int p = online < 1 ? 1 : (int)online, d, j;
	pthread_t th[KS_SLOG_THREADS_MAX];
	struct par_arg a[KS_SLOG_THREADS_MAX];

	if (p > sl.s.nshards)
		p = sl.s.nshards;
	sl.par_threads = p;
	ks_slog_flip_begin(&sl.s, seq);
	for (d = 0; d < rounds; d++) {
		__u64 t0;

		slog_produce(seq, cpu_n);
		t0 = ks_mono_ns();
		for (j = 0; j < p; j++) {
			a[j] = (struct par_arg){ .j = j, .p = p };
			if (pthread_create(&th[j], NULL, par_main, &a[j]))
				return -EAGAIN;
		}
		for (j = 0; j < p; j++) {
			pthread_join(th[j], NULL);
			sl.par_recs += a[j].recs;
			sl.par_cpu_ns += a[j].cpu_ns;
		}
		sl.par_ns += ks_mono_ns() - t0;
	}
	ks_slog_flip_end(&sl.s, seq);
	return sl.par_recs == (__u64)rounds * KS_SLOG_FILL_AIM * sl.s.ncpus
		       ? 0
		       : -EIO;
}

/* The fake's candidate slots of interval seq (they are this interval's). */
static void fake_seq(__u32 seq)
{
	size_t i;

	for (i = 0; i < (size_t)KS_CAND_SLOTS * fk.ncpus; i++)
		fk.cand[i].seq = seq;
}

/* One interval, as loop.c's one_interval runs collect.c's part of it. */
static long one_interval(struct ks_collector *col, struct ks_maps *maps,
			 __u32 seq, const __u32 *cpu_n, struct ks_totals *prev,
			 struct ks_totals *cur, struct ks_sketch *sk,
			 struct ks_report *rep, struct ks_shard_counts *sc,
			 struct ks_misdirect *mis)
{
	long n = ks_estimate_interval(col, seq & 1, seq, cpu_n, KS_REPORT_TOP,
				      1000000000ULL, prev, cur, sk, NULL, rep);

	if (n < 0)
		return n;
	if (ks_read_shard_counts(col, NSHARDS, sc, NULL) ||
	    ks_read_misdirect(col, mis) < 0 || ks_zero_sketch(col, seq & 1))
		return -EIO;
	*prev = *cur;
	return n;
}

/* The user-space part at ncpus, in this (child) process: one line. */
static int run_size(int ncpus, int intervals, const struct ab_fit *fit,
		    const struct flat_ns *flat)
{
	struct ab_calls calls[F_N][2];
	struct ks_maps maps;
	struct ks_collector col;
	struct ks_sketch *sk = malloc(sizeof(*sk));
	struct ks_report *rep = calloc(1, sizeof(*rep));
	struct ks_totals *prev = calloc(1, sizeof(*prev));
	struct ks_totals *cur = calloc(1, sizeof(*cur));
	struct ks_shard_counts *sc = calloc(NSHARDS, sizeof(*sc));
	struct ks_misdirect *mis;
	__u32 *cpu_n;
	__u64 user_ns[64], copy[64];
	double stage[4] = { 0 }, c0;
	long rss0, hwm, rss1, ncands = 0;
	double kern_ns, kern_flat_ns;
	int i, cpu, m;
	__u32 seq = 7;

	if (intervals > 64)
		intervals = 64;
	ks_maps_init(&maps);
	maps.ops = FAKE_FD0 + F_OPS;
	maps.errors = FAKE_FD0 + F_ERR;
	maps.pkts = FAKE_FD0 + F_PKTS;
	maps.cms = FAKE_FD0 + F_CMS;
	maps.cands = FAKE_FD0 + F_CANDS;
	maps.shards = FAKE_FD0 + F_SHARDS;
	maps.misdirect = FAKE_FD0 + F_MIS;
	fk.on = 1;
	if (!sk || !rep || !prev || !cur || !sc || fake_fill(ncpus, seq))
		return -ENOMEM;
	cpu_n = calloc(ncpus, sizeof(*cpu_n));
	mis = calloc((size_t)KS_MISDIRECT_SLOTS * ncpus, sizeof(*mis));
	if (!cpu_n || !mis)
		return -ENOMEM;
	for (cpu = 0; cpu < ncpus; cpu++)
		cpu_n[cpu] = 1u << (cpu % 4); /* --sample auto: mixed rates */
	if (calibrate_copy(ks_percpu_stride(sizeof(__u32) * KS_CMS_SEG) *
			   (size_t)ncpus))
		return -ENOMEM;
	/* the synthetic datapath is touched; what follows is the agent's */
	memset(sk, 0, sizeof(*sk));
	reset_hwm();
	rss0 = proc_kib("VmRSS:");
	if (ks_collector_init(&col, &maps))
		return -ENOMEM;
	if (sl.rate) {
		int err = slog_make(ncpus, seq);

		if (!err)
			err = ks_collector_set_slog(&col, sl.s.folds,
						    sl.s.nshards);
		if (err)
			return err;
	}
	/* warm-up, which also holds the first interval's page faults */
	fake_seq(seq);
	if ((sl.rate && slog_feed(seq, cpu_n, 0)) ||
	    one_interval(&col, &maps, seq, cpu_n, prev, cur, sk, rep, sc, mis) <
		    0)
		return -EIO;
	for (i = 0; i < intervals; i++) {
		__u64 t0;

		seq++;
		fake_seq(seq);
		if (sl.rate && slog_feed(seq, cpu_n, 1))
			return -EIO;
		memset(fk.calls, 0, sizeof(fk.calls));
		t0 = ks_thread_cpu_ns();
		ncands = one_interval(&col, &maps, seq, cpu_n, prev, cur, sk,
				      rep, sc, mis);
		if (ncands < 0)
			return -EIO;
		t0 = ks_thread_cpu_ns() - t0;
		copy[i] = (__u64)copy_ns();
		user_ns[i] = t0 > copy[i] ? t0 - copy[i] : 0;
	}
	memcpy(calls, fk.calls, sizeof(calls)); /* the last interval's */
	hwm = proc_kib("VmHWM:");
	rss1 = proc_kib("VmRSS:");
	/* what dominates: the same steps apart (copy taken out) */
	for (i = 0; i < intervals; i++) {
		long n;
		__u64 t0;
		struct ks_interval iv;

		seq++;
		fake_seq(seq);
		if (sl.rate && slog_feed(seq, cpu_n, 0))
			return -EIO;
		t0 = ks_thread_cpu_ns();
		c0 = copy_ns();
		if (ks_read_sketch(&col, seq & 1, sk, cpu_n))
			return -EIO;
		stage[0] += (double)(ks_thread_cpu_ns() - t0) -
			    (copy_ns() - c0);
		t0 = ks_thread_cpu_ns();
		c0 = copy_ns();
		n = ks_read_cands(&col, seq);
		if (n < 0)
			return -EIO;
		stage[1] += (double)(ks_thread_cpu_ns() - t0) -
			    (copy_ns() - c0);
		t0 = ks_thread_cpu_ns();
		ks_interval_init(&iv, sk, prev, cur, 1, 1000000000ULL);
		col.nranked = ks_top_rank(sk, &iv, col.cands, (size_t)n,
					  col.ranked, KS_HOT_CAP, KS_REPORT_TOP,
					  rep);
		stage[2] += ks_thread_cpu_ns() - t0;
		t0 = ks_thread_cpu_ns();
		if (ks_zero_sketch(&col, seq & 1))
			return -EIO;
		stage[3] += ks_thread_cpu_ns() - t0;
	}
	if (sl.rate && slog_parallel(++seq, cpu_n, intervals * sl.drains))
		return -EIO;
	/* the line for every call; then the sketch's and the candidates'
	 * calls at what a plain array of their bytes took */
	kern_ns = kern_flat_ns = 0;
	for (m = 0; m < F_N; m++) {
		for (i = 0; i < 2; i++) {
			double l = ab_model_ns(&fit[i], &calls[m][i]);
			int kind = m == F_CMS ? 0 : m == F_CANDS ? 1 : -1;

			kern_ns += l;
			kern_flat_ns +=
				kind >= 0 && flat
					? flat->v[kind][i] *
						  (double)calls[m][i].calls
					: l;
		}
	}
	printf("RESULT cpus=%d intervals=%d candidates=%ld user_ms_p50=%.3f user_ms_max=%.3f fake_copy_ms_p50=%.3f",
	       ncpus, intervals, ncands,
	       ab_median_u64(user_ns, (size_t)intervals) / 1e6,
	       ab_max_u64(user_ns, (size_t)intervals) / 1e6,
	       ab_median_u64(copy, (size_t)intervals) / 1e6);
	printf(" sketch_ms=%.3f cands_ms=%.3f rank_ms=%.3f zero_ms=%.3f",
	       stage[0] / 1e6 / intervals, stage[1] / 1e6 / intervals,
	       stage[2] / 1e6 / intervals, stage[3] / 1e6 / intervals);
	printf(" kernel_ms_line=%.3f kernel_ms_flat=%.3f", kern_ns / 1e6,
	       flat ? kern_flat_ns / 1e6 : 0.0);
	for (m = 0; m < F_N; m++)
		printf(" %s_lookups=%llu %s_lookup_bytes=%llu %s_updates=%llu %s_update_bytes=%llu",
		       fake_name[m], (unsigned long long)calls[m][0].calls,
		       fake_name[m], (unsigned long long)calls[m][0].bytes,
		       fake_name[m], (unsigned long long)calls[m][1].calls,
		       fake_name[m], (unsigned long long)calls[m][1].bytes);
	printf(" rss0_kib=%ld hwm_kib=%ld rss_kib=%ld peak_added_kib=%ld kept_kib=%ld",
	       rss0, hwm, rss1, hwm - rss0, rss1 - rss0);
	if (sl.rate) {
		double nsr = (double)sl.drain_ns / (double)sl.recs;
		double poll = (double)sl.poll_ns / (double)sl.polls;
		struct ab_slog_load busy, idle;
		struct ks_slog_stats ss;
		__u64 busiest = 0, insert = 0, evict = 0;
		size_t fold_b = 0;
		double share;
		int t;

		for (t = 0; t < sl.s.nshards; t++) {
			const struct ks_slog_fold *f = &sl.s.sh[t].fold;

			if (sl.shard_ns[t] > busiest)
				busiest = sl.shard_ns[t];
			fold_b += KS_EPOCHS *
					  (sizeof(struct ks_sketch) +
					   (size_t)f->nbuckets * KS_CAND_WAYS *
						   sizeof(struct ks_slog_cand)) +
				  KS_SLOG_RECS * sizeof(struct ks_slog_rec);
			insert += f->cand_insert;
			evict += f->cand_evict;
		}
		share = sl.drain_ns ? (double)busiest / (double)sl.drain_ns : 1;
		ks_slog_stats(&sl.s, &ss);
		/* at the rate the drain's period comes to KS_SLOG_FILL_AIM
		 * records a poll; idle it polls at its longest period */
		if (ab_slog_load(nsr, poll, (double)sl.rate / KS_SLOG_FILL_AIM,
				 sl.rate, ncpus, &busy) ||
		    ab_slog_load(nsr, poll, 1e9 / KS_SLOG_PERIOD_MAX_NS, 0,
				 ncpus, &idle))
			return -EINVAL;
		/* the log's mapping is the kernel's memory, in VmRSS as
		 * file pages: its bytes, to tell it from the agent's own.
		 * K threads: the busiest one's share of the drains' CPU is
		 * what must fit in one core; the CPUs served scale by it */
		printf(" slog=1 slog_rate=%u slog_records=%llu slog_ns_per_record=%.1f slog_poll_us=%.2f slog_ms_per_s=%.2f slog_idle_ms_per_s=%.3f slog_cpus_served=%.1f slog_threads=%d slog_busiest_share=%.3f slog_busiest_ms_per_s=%.2f slog_cpus_served_k=%.1f slog_par_threads=%d slog_par_ns_per_record=%.2f slog_par_cpu_ns_per_record=%.2f slog_par_mrecs_per_s=%.2f slog_map_kib=%zu slog_fold_kib=%zu slog_late=%llu slog_bad=%llu slog_cand_insert=%llu slog_cand_evict=%llu",
		       sl.rate, (unsigned long long)sl.recs, nsr, poll / 1e3,
		       busy.ms_per_s, idle.ms_per_s, busy.cpus_served,
		       sl.s.nshards, share, busy.ms_per_s * share,
		       share > 0 ? busy.cpus_served / share : 0.0,
		       sl.par_threads, (double)sl.par_ns / (double)sl.par_recs,
		       (double)sl.par_cpu_ns / (double)sl.par_recs,
		       (double)sl.par_recs * 1e3 / (double)sl.par_ns,
		       (sl.s.recs_len + sl.s.pos_len) / 1024, fold_b / 1024,
		       (unsigned long long)ss.late, (unsigned long long)ss.bad,
		       (unsigned long long)insert, (unsigned long long)evict);
		ks_slog_close(&sl.s);
	}
	printf("\n");
	fflush(stdout);
	ks_collector_free(&col);
	return 0;
}

/* ns per call of lookups (upd 0) or updates (upd 1) of one entry. */
static double time_calls(int fd, void *buf, int upd, int reps)
{
	__u64 t0, best = ~0ULL;
	__u32 key = 0;
	int r, i;

	for (r = 0; r < 5; r++) {
		t0 = ks_thread_cpu_ns();
		for (i = 0; i < reps; i++) {
			int err = upd ? __real_bpf_map_update_elem(fd, &key,
								   buf, BPF_ANY)
				      : __real_bpf_map_lookup_elem(fd, &key,
								   buf);

			if (err)
				return -1;
		}
		t0 = ks_thread_cpu_ns() - t0;
		if (t0 < best)
			best = t0;
	}
	return (double)best / reps;
}

/*
 * The kernel's copy: percpu arrays of several value sizes at this
 * machine's CPUs, fitted per kind of call; then plain arrays of the byte
 * counts of N CPUs, against the line. The thread's CPU time (the
 * syscalls' system time is the thread's), the least of 5 blocks of reps
 * calls: another process's turn on the core is not counted.
 */
static int kernel_part(const int *cpus, int ncpu_list, int reps,
		       struct ab_fit fit[2], struct flat_ns *flat)
{
	static const __u32 vs[] = { 8, 280, 4096, 16384, 32768 };
	int here = __real_libbpf_num_possible_cpus();
	double x[MAX_SIZES], y[2][MAX_SIZES];
	size_t i, n = sizeof(vs) / sizeof(vs[0]);
	int k, upd;

	for (i = 0; i < n; i++) {
		size_t bytes = ks_percpu_stride(vs[i]) * here;
		void *buf = calloc(1, bytes);
		int fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "hb_pcpu", 4,
					vs[i], 1, NULL);

		if (fd < 0 || !buf) {
			fprintf(stderr,
				"agent_big: percpu map of %u bytes: %s\n",
				vs[i], strerror(errno));
			return -1;
		}
		x[i] = (double)bytes;
		for (upd = 0; upd < 2; upd++)
			y[upd][i] = time_calls(fd, buf, upd, reps);
		close(fd);
		free(buf);
		printf("PERCPU value=%u cpus=%d bytes=%zu lookup_ns=%.0f update_ns=%.0f\n",
		       vs[i], here, bytes, y[0][i], y[1][i]);
	}
	for (upd = 0; upd < 2; upd++)
		if (ab_fit_line(x, y[upd], n, &fit[upd]))
			return -1;
	printf("KERNEL possible_cpus=%d lookup_ns_per_call=%.0f lookup_ns_per_byte=%.4f update_ns_per_call=%.0f update_ns_per_byte=%.4f\n",
	       here, fit[0].ns_call, fit[0].ns_byte, fit[1].ns_call,
	       fit[1].ns_byte);
	/* the same bytes in one plain array value, as N CPUs would copy */
	for (k = 0; k < ncpu_list; k++) {
		static const size_t vals[2] = { sizeof(__u32) * KS_CMS_SEG,
						sizeof(struct ks_cand) };

		for (i = 0; i < 2; i++) {
			size_t bytes = ks_percpu_stride(vals[i]) * cpus[k];
			void *buf = calloc(1, bytes);
			int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "hb_flat",
						4, (__u32)bytes, 1, NULL);
			double l, u;
			struct ab_calls one = { 1, bytes };

			if (fd < 0 || !buf) {
				fprintf(stderr,
					"agent_big: array of %zu bytes: %s\n",
					bytes, strerror(errno));
				free(buf);
				return -1;
			}
			l = time_calls(fd, buf, 0, reps / 4 + 1);
			u = time_calls(fd, buf, 1, reps / 4 + 1);
			close(fd);
			free(buf);
			flat[k].v[i][0] = l;
			flat[k].v[i][1] = u;
			printf("CHECK cpus=%d value=%s bytes=%zu array_lookup_ns=%.0f model_lookup_ns=%.0f array_update_ns=%.0f model_update_ns=%.0f\n",
			       cpus[k], i ? "cand" : "cms_seg", bytes, l,
			       ab_model_ns(&fit[0], &one), u,
			       ab_model_ns(&fit[1], &one));
		}
	}
	return 0;
}

static void map_memory(const char *obj, const int *cpus, int ncpu_list)
{
	struct ab_map_desc d[128];
	struct bpf_object *o = bpf_object__open_file(obj, NULL);
	struct bpf_map *m;
	size_t n = 0;
	int k;

	if (!o) {
		fprintf(stderr, "agent_big: cannot open %s: %s\n", obj,
			strerror(errno));
		return;
	}
	bpf_object__for_each_map (m, o) {
		if (n == sizeof(d) / sizeof(d[0]))
			break;
		d[n].type = bpf_map__type(m);
		d[n].key_size = bpf_map__key_size(m);
		d[n].value_size = bpf_map__value_size(m);
		d[n].max_entries = bpf_map__max_entries(m);
		d[n].is_cms = !strcmp(bpf_map__name(m), "ks_cms");
		d[n].is_cands = !strcmp(bpf_map__name(m), "ks_cands");
		d[n].cpu_sized = !strcmp(bpf_map__name(m), "ks_slog") ||
				 !strcmp(bpf_map__name(m), "ks_slog_pos");
		n++;
	}
	for (k = 0; k < ncpu_list; k++) {
		struct ab_map_mem mm;

		ab_map_memory(d, n, cpus[k], &mm);
		printf("MAPMEM cpus=%d percpu_bytes=%llu cms_bytes=%llu cands_bytes=%llu other_bytes=%llu\n",
		       cpus[k], (unsigned long long)mm.percpu,
		       (unsigned long long)mm.cms, (unsigned long long)mm.cands,
		       (unsigned long long)mm.shared);
	}
	bpf_object__close(o);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "cpus", required_argument, NULL, 'c' },
		{ "intervals", required_argument, NULL, 'i' },
		{ "obj", required_argument, NULL, 'o' },
		{ "kernel-reps", required_argument, NULL, 'r' },
		{ "no-kernel", no_argument, NULL, 'n' },
		{ "slog-rate", required_argument, NULL, 's' },
		{ "slog-drains", required_argument, NULL, 'd' },
		{ "slog-threads", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	const char *spec = "2,16,64,128", *obj = "build/keysteer.bpf.o";
	struct ab_fit fit[2] = { { 0, 0 }, { 0, 0 } };
	struct flat_ns flat[16];
	int cpus[16], ncpu_list, intervals = 5, reps = 200, kernel = 1;
	int opt, k;
	long slog_rate = 0;
	char *end;

	sl.drains = 4;
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'c':
			spec = optarg;
			break;
		case 'i':
			intervals = atoi(optarg);
			break;
		case 'o':
			obj = optarg;
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		case 'n':
			kernel = 0;
			break;
		case 's':
			slog_rate = strtol(optarg, &end, 10);
			if (*end || end == optarg)
				slog_rate = -1;
			break;
		case 'd':
			sl.drains = atoi(optarg);
			break;
		case 't':
			sl.threads = strcmp(optarg, "auto") ? atoi(optarg) : 0;
			if (sl.threads == 0 && strcmp(optarg, "auto"))
				sl.threads = -1;
			break;
		default:
			fprintf(stderr,
				"usage: agent_big [--cpus 2,16,64,128] [--intervals N] [--obj FILE] [--kernel-reps N] [--no-kernel] [--slog-rate KEYS_PER_S] [--slog-drains N] [--slog-threads N|auto]\n");
			return 2;
		}
	}
	ncpu_list = ab_parse_cpu_list(spec, cpus, 16);
	if (ncpu_list <= 0 || intervals < 1 || intervals > 64 || reps < 1 ||
	    slog_rate < 0 || slog_rate > 100000000 || sl.drains < 1 ||
	    sl.drains > 64 || sl.threads < 0 ||
	    sl.threads > KS_SLOG_THREADS_MAX) {
		fprintf(stderr,
			"agent_big: --cpus wants 1..16 numbers 1..4096 (comma-separated), --intervals 1..64, --kernel-reps >= 1, --slog-rate 0..100000000 (0: no sample log), --slog-drains 1..64, --slog-threads 1..%d or auto\n",
			KS_SLOG_THREADS_MAX);
		return 2;
	}
	sl.rate = (__u32)slog_rate;
	sl.obj = obj;
	if (kernel && kernel_part(cpus, ncpu_list, reps, fit, flat)) {
		fprintf(stderr,
			"agent_big: the kernel part needs CAP_BPF (run as root)\n");
		return 1;
	}
	map_memory(obj, cpus, ncpu_list);
	for (k = 0; k < ncpu_list; k++) {
		pid_t pid;
		int status;

		fflush(stdout); /* not twice, from the child too */
		pid = fork();
		if (pid < 0)
			return 1;
		if (!pid)
			_exit(run_size(cpus[k], intervals, fit,
				       kernel ? &flat[k] : NULL)
				      ? 1
				      : 0);
		if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status)) {
			fprintf(stderr,
				"agent_big: the run at %d CPUs failed\n",
				cpus[k]);
			return 1;
		}
	}
	return 0;
}
