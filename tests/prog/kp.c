// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kp.c - harness of the program tests (see kp.h).
 */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "keysteer.skel.h"
#include "load_private.h"
#include "names.h"
#include "ring.h"
#include "kp.h"

#define XDP_PASS_RC 2 /* enum xdp_action XDP_PASS */
#define TC_OK_RC    0 /* TC_ACT_OK */

struct kp_env kp;

static struct keysteer_bpf *skel;
static struct ring_buffer *rb;

/* Contents of every array map right after load, restored before each test:
 * that also resets the program's private per-CPU state (the sampling
 * countdown) without the test knowing where it lives. */
struct snap {
	struct bpf_map *map;
	size_t vsz;     /* bytes per entry as the syscall wants them */
	__u32 n;
	__u8 *data;
};
static struct snap snaps[32];
static int nsnap;
/* 0..n-1, the keys of a batch update of any array map */
static __u32 *snap_keys;
static __u32 snap_keys_n;
/*
 * Only the harness writes ks_ring, and a restore of its two 1.5 MiB halves
 * costs as much as the rest of a reset: it is restored only after a write.
 */
static volatile bool ring_dirty;
static struct ks_ring_half *empty_half; /* what kp_ring_write(NULL) writes */

/* Scratch for reading one per-CPU entry. */
static __u8 *rowbuf;
static size_t rowbuf_sz;

/* The model's sketch: (epoch, class, row) x column. */
static __u32 msk[KS_CMS_ROWS][KS_CMS_WIDTH];

const char *kp_op_name(int op)
{
	return op >= 0 ? ks_op_name(op) : "?";
}

const char *kp_err_name(int reason)
{
	return reason >= 0 ? ks_reason_name(reason) : "?";
}

__u64 kp_hash(const void *key, size_t len)
{
	__u64 buf[KS_KEY_WORDS] = { 0 };

	memcpy(buf, key, len > KS_KEY_BUF ? KS_KEY_BUF : len);
	return ks_key_hash(buf, (__u32)len);
}

void kp_make_key(char *buf, size_t len, unsigned int seed)
{
	static const char abc[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned int x = seed * 2654435761u + 12345;
	size_t i;

	for (i = 0; i < len; i++) {
		x = x * 1103515245u + 12345;
		buf[i] = abc[(x >> 16) % 36];
	}
	/* the seed's digits at the end keep keys distinct */
	if (len >= 6)
		snprintf(buf + len - 5, 6, "%05u", seed % 100000);
	buf[len] = 0;
}

/* ---- map access ---- */

static void *percpu_buf(size_t vsz)
{
	size_t need = vsz * (size_t)kp.ncpu;

	if (need > rowbuf_sz) {
		free(rowbuf);
		rowbuf = calloc(1, need);
		rowbuf_sz = rowbuf ? need : 0;
	}
	return rowbuf;
}

/* Sum of a per-CPU u64 at index i. */
static __u64 sum_u64(struct bpf_map *m, __u32 i)
{
	__u64 *v = percpu_buf(8), s = 0;
	int c;

	if (!v || bpf_map_lookup_elem(bpf_map__fd(m), &i, v))
		return ~0ULL;
	for (c = 0; c < kp.ncpu; c++)
		s += v[c];
	return s;
}

__u64 kp_pkt(int counter)
{
	struct ks_pkt_counters *v = percpu_buf(sizeof(*v));
	__u32 zero = 0;
	__u64 s = 0;
	int c;

	if (!v || bpf_map_lookup_elem(bpf_map__fd(skel->maps.ks_pkts), &zero, v))
		return ~0ULL;
	for (c = 0; c < kp.ncpu; c++)
		s += v[c].n[counter];
	return s;
}

__u64 kp_errc(int reason)
{
	return sum_u64(skel->maps.ks_errors, (__u32)reason);
}

struct ks_op_stats kp_op(int op)
{
	struct ks_op_stats s = { 0 }, *v = percpu_buf(sizeof(s));
	__u32 i = (__u32)op;
	int c;

	if (!v || bpf_map_lookup_elem(bpf_map__fd(skel->maps.ks_ops), &i, v)) {
		s.requests = s.keys = s.bytes = ~0ULL;
		return s;
	}
	for (c = 0; c < kp.ncpu; c++) {
		s.requests += v[c].requests;
		s.keys += v[c].keys;
		s.bytes += v[c].bytes;
	}
	return s;
}

/* One sketch row summed over CPUs into out. */
static int read_row(__u32 idx, __u32 *out)
{
	size_t vsz = sizeof(__u32) * KS_CMS_WIDTH;
	__u32 *v = percpu_buf(vsz);
	int c, j;

	if (!v || bpf_map_lookup_elem(bpf_map__fd(skel->maps.ks_cms), &idx, v))
		return -1;
	memset(out, 0, vsz);
	for (c = 0; c < kp.ncpu; c++)
		for (j = 0; j < KS_CMS_WIDTH; j++)
			out[j] += v[c * KS_CMS_WIDTH + j];
	return 0;
}

__u32 kp_cms_query(__u32 epoch, __u32 cls, const void *key, size_t len)
{
	static __u32 row[KS_CMS_WIDTH];
	__u64 h = kp_hash(key, len);
	__u32 r, best = ~0u;

	for (r = 0; r < KS_CMS_DEPTH; r++) {
		__u32 v;

		if (read_row(ks_cms_index(epoch, cls, r), row))
			return ~0u;
		v = row[ks_cms_col(h, r)];
		best = v < best ? v : best;
	}
	return best;
}

/* Candidate slot i of CPU cpu. */
static int read_cand(__u32 i, int cpu, struct ks_cand *out)
{
	struct ks_cand *v = percpu_buf(sizeof(*v));

	if (!v || bpf_map_lookup_elem(bpf_map__fd(skel->maps.ks_cands), &i, v))
		return -1;
	*out = v[cpu];
	return 0;
}

bool kp_cand_find(const void *key, size_t len, struct ks_cand *out)
{
	__u64 h = kp_hash(key, len);
	__u32 b = ks_cand_bucket(h), w;

	for (w = 0; w < KS_CAND_WAYS; w++) {
		if (read_cand(b * KS_CAND_WAYS + w, kp.cpu, out))
			return false;
		if (out->hash == h)
			return true;
	}
	return false;
}

/* ---- ring buffer ---- */

static int on_event(void *ctx, void *data, size_t size)
{
	(void)ctx;
	if (kp.draining || kp.ngot >= KP_MAX_EVENTS)
		return 0;
	memset(&kp.got[kp.ngot], 0, sizeof(kp.got[0]));
	memcpy(&kp.got[kp.ngot], data,
	       size < sizeof(kp.got[0]) ? size : sizeof(kp.got[0]));
	if (size != sizeof(struct ks_event))
		kp.got[kp.ngot].len = 0xffff; /* flags a size mismatch */
	kp.ngot++;
	return 0;
}

int kp_read_events(void)
{
	kp.ngot = 0;
	kp.draining = false;
	ring_buffer__consume(rb);
	return kp.ngot;
}

static void drain_events(void)
{
	kp.draining = true;
	ring_buffer__consume(rb);
	kp.draining = false;
}

int kp_map_fd(const char *name)
{
	struct bpf_map *m = bpf_object__find_map_by_name(skel->obj, name);

	return m ? bpf_map__fd(m) : -1;
}

/* ---- set-up ---- */

static int snapshot_maps(void)
{
	struct bpf_map *m;

	bpf_object__for_each_map(m, skel->obj) {
		enum bpf_map_type t = bpf_map__type(m);
		const char *name = bpf_map__name(m);
		struct snap *s;
		__u32 i;

		if (t != BPF_MAP_TYPE_ARRAY && t != BPF_MAP_TYPE_PERCPU_ARRAY)
			continue;
		/* read-only data cannot be written back, and needs no reset */
		if (strstr(name, ".rodata") || strstr(name, ".kconfig"))
			continue;
		if (nsnap == (int)(sizeof(snaps) / sizeof(snaps[0])))
			return -E2BIG;
		s = &snaps[nsnap++];
		s->map = m;
		s->n = bpf_map__max_entries(m);
		s->vsz = ((bpf_map__value_size(m) + 7) / 8) * 8;
		if (t == BPF_MAP_TYPE_PERCPU_ARRAY)
			s->vsz *= (size_t)kp.ncpu;
		else
			s->vsz = bpf_map__value_size(m);
		s->data = calloc(s->n, s->vsz);
		if (!s->data)
			return -ENOMEM;
		if (s->n > snap_keys_n) {
			free(snap_keys);
			snap_keys = calloc(s->n, sizeof(*snap_keys));
			if (!snap_keys)
				return -ENOMEM;
			for (snap_keys_n = 0; snap_keys_n < s->n; snap_keys_n++)
				snap_keys[snap_keys_n] = snap_keys_n;
		}
		for (i = 0; i < s->n; i++)
			if (bpf_map_lookup_elem(bpf_map__fd(m), &i,
						s->data + (size_t)i * s->vsz))
				return -errno;
	}
	return 0;
}

/*
 * One map back to its snapshot: in one batch update where the kernel has
 * them for the map (5.6+), so the 1024-entry per-CPU maps cost one
 * syscall, not 1024; entry by entry otherwise.
 */
static int restore_map(const struct snap *s)
{
	LIBBPF_OPTS(bpf_map_batch_opts, bo, .elem_flags = 0, .flags = 0);
	int fd = bpf_map__fd(s->map);
	__u32 i, count = s->n;

	if (s->n > 1 && !bpf_map_update_batch(fd, snap_keys, s->data, &count,
					      &bo) && count == s->n)
		return 0;
	for (i = 0; i < s->n; i++)
		if (bpf_map_update_elem(fd, &i, s->data + (size_t)i * s->vsz,
					BPF_ANY))
			return -errno;
	return 0;
}

static int restore_maps(void)
{
	int k, err;

	for (k = 0; k < nsnap; k++) {
		struct snap *s = &snaps[k];

		if (s->map == skel->maps.ks_ring && !ring_dirty)
			continue;
		err = restore_map(s);
		if (err)
			return err;
		if (s->map == skel->maps.ks_ring)
			ring_dirty = false;
	}
	return 0;
}

static int pin_to_this_cpu(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();

	if (cpu < 0)
		cpu = 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -errno;
	kp.cpu = cpu;
	return 0;
}

bool kp_pin_exists(const char *name)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "/sys/fs/bpf/%s", name);
	return stat(path, &st) == 0;
}

bool kp_nothing_pinned(void)
{
	struct bpf_map *m;

	bpf_object__for_each_map(m, skel->obj) {
		if (bpf_map__pin_path(m) || bpf_map__is_pinned(m))
			return false;
	}
	return true;
}

int kp_setup(void)
{
	int err;

	kp.ncpu = libbpf_num_possible_cpus();
	if (kp.ncpu <= 0)
		return -EINVAL;
	err = pin_to_this_cpu();
	if (err) {
		fprintf(stderr, "prog_test: cannot pin to one CPU: %s\n",
			strerror(-err));
		return err;
	}
	/* Tests never pin: fresh maps, /sys/fs/bpf left alone. */
	skel = ks_load_private(0, &err);
	if (!skel) {
		fprintf(stderr, "prog_test: load: %s\n", strerror(-err));
		return err;
	}
	kp.xdp_fd = bpf_program__fd(skel->progs.ks_ingress);
	kp.tc_fd = bpf_program__fd(skel->progs.ks_tc_ingress);
	rb = ring_buffer__new(bpf_map__fd(skel->maps.ks_events), on_event,
			      NULL, NULL);
	if (!rb)
		return -errno;
	err = snapshot_maps();
	if (err)
		fprintf(stderr, "prog_test: snapshot maps: %s\n",
			strerror(-err));
	return err;
}

void kp_teardown(void)
{
	int k;

	ring_buffer__free(rb);
	rb = NULL;
	keysteer_bpf__destroy(skel);
	skel = NULL;
	for (k = 0; k < nsnap; k++)
		free(snaps[k].data);
	nsnap = 0;
	free(snap_keys);
	snap_keys = NULL;
	snap_keys_n = 0;
	free(empty_half);
	empty_half = NULL;
	free(rowbuf);
	rowbuf = NULL;
	rowbuf_sz = 0;
}

/* ---- life cycle ---- */

static void model_reset(void)
{
	int i;

	memset(&kp.x, 0, sizeof(kp.x));
	memset(msk, 0, sizeof(msk));
	for (i = 0; i < KS_ERR_MAX; i++)
		kp.x.err[i] = 0;
	for (i = 0; i < KS_PKT_MAX; i++)
		kp.x.pkts[i] = 0;
	kp.x.exact = kp.cfg.sample_n <= 1;
	kp.x.check_sketch = kp.x.check_cands = kp.x.exact;
	kp.x.check_events = kp.x.exact;
	if (!kp.x.exact) {
		kp.x.pkts[KS_PKT_SAMPLED] = KP_DONTCARE;
		kp.x.pkts[KS_PKT_CAND_INSERT] = KP_DONTCARE;
		kp.x.pkts[KS_PKT_CAND_EVICT] = KP_DONTCARE;
	}
}

/* With a ring loaded, which keys reach it is known only at sample_n 1. */
static void model_ring_certainty(void)
{
	if (kp.x.exact || !kp.x.ring)
		return;
	kp.x.ring_inexact = true;
	kp.x.pkts[KS_PKT_RING_HIT] = KP_DONTCARE;
	kp.x.pkts[KS_PKT_MISDIRECTED] = KP_DONTCARE;
}

static void write_config(void)
{
	__u32 zero = 0;

	if (bpf_map_update_elem(bpf_map__fd(skel->maps.ks_config), &zero,
				&kp.cfg, BPF_ANY))
		kt_failf(__FILE__, __LINE__, "write ks_config: %s",
			 strerror(errno));
}

void kp_reset(void)
{
	int err = restore_maps();

	if (err)
		kt_failf(__FILE__, __LINE__, "reset maps: %s", strerror(-err));
	drain_events();
	write_config();
	model_reset();
}

void kp_begin(const char *name)
{
	kt_begin(name);
	memset(&kp.cfg, 0, sizeof(kp.cfg));
	kp.cfg.sample_n = 1;
	kp_reset();
}

void kp_config(const struct ks_config *cfg)
{
	kp.cfg = *cfg;
	write_config();
	/* sampling certainty follows the config; the counters so far stay */
	kp.x.exact = kp.cfg.sample_n <= 1;
	kp.x.check_sketch = kp.x.check_cands = kp.x.exact;
	kp.x.check_events = kp.x.exact;
	if (!kp.x.exact) {
		kp.x.pkts[KS_PKT_SAMPLED] = KP_DONTCARE;
		kp.x.pkts[KS_PKT_CAND_INSERT] = KP_DONTCARE;
		kp.x.pkts[KS_PKT_CAND_EVICT] = KP_DONTCARE;
	}
	model_ring_certainty();
}

void kp_set_ports(int n, ...)
{
	struct ks_config c = kp.cfg;
	va_list ap;
	int i;

	memset(c.ports, 0, sizeof(c.ports));
	va_start(ap, n);
	for (i = 0; i < n && i < KS_MAX_PORTS; i++)
		c.ports[i] = (__u16)va_arg(ap, int);
	va_end(ap);
	kp_config(&c);
}

void kp_set_sample(__u32 n)
{
	struct ks_config c = kp.cfg;

	c.sample_n = n;
	kp_config(&c);
}

void kp_set_seq(__u32 seq)
{
	struct ks_config c = kp.cfg;

	c.seq = seq;
	kp_config(&c);
}

void kp_set_trace(__u32 on)
{
	struct ks_config c = kp.cfg;

	c.trace = on;
	kp_config(&c);
}

/* ---- the ring ---- */

static int kp_ring_fd(void)
{
	return bpf_map__fd(skel->maps.ks_ring);
}

int kp_ring_write(__u32 half, const struct ks_ring_half *h)
{
	if (!h) {
		if (!empty_half)
			empty_half = calloc(1, sizeof(*empty_half));
		if (!empty_half)
			return -ENOMEM;
		h = empty_half;
	}
	ring_dirty = true;
	if (bpf_map_update_elem(kp_ring_fd(), &half, h, BPF_ANY))
		return -errno;
	return 0;
}

int kp_ring_flip(__u32 half)
{
	__u32 zero = 0;

	kp.cfg.ring = half;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.ks_config), &zero,
				&kp.cfg, BPF_ANY))
		return -errno;
	return 0;
}

void kp_ring_load(const struct ks_ring *r)
{
	int err = kp_ring_write(kp.cfg.ring & 1, r ? r->half : NULL);

	if (err)
		kt_failf(__FILE__, __LINE__, "write ks_ring[%u]: %s",
			 kp.cfg.ring & 1, strerror(-err));
	kp.x.ring = r;
	model_ring_certainty();
}

/* Reads the first n entries of a per-CPU array map into buf (n values of
 * vsz * ncpu bytes): one batch lookup where the kernel has it. */
static int percpu_read_n(struct bpf_map *m, __u32 n, size_t vsz, void *buf)
{
	LIBBPF_OPTS(bpf_map_batch_opts, bo, .elem_flags = 0, .flags = 0);
	size_t stride = ((vsz + 7) / 8) * 8 * (size_t)kp.ncpu;
	__u32 *keys = calloc(n, sizeof(*keys)), out = 0, count = n, i;
	int fd = bpf_map__fd(m), err = 0;

	if (!keys)
		return -ENOMEM;
	/* an array map answers ENOENT once the batch reached its end */
	if ((!bpf_map_lookup_batch(fd, NULL, &out, keys, buf, &count, &bo) ||
	     errno == ENOENT) && count == n)
		goto out;
	for (i = 0; i < n; i++) {
		if (bpf_map_lookup_elem(fd, &i, (__u8 *)buf + i * stride)) {
			err = -errno;
			break;
		}
	}
out:
	free(keys);
	return err;
}

int kp_shards_read(struct ks_shard_stats *out, __u32 n)
{
	struct ks_shard_stats *v;
	__u32 i;
	int c, err;

	if (n > KS_MAX_SHARDS)
		n = KS_MAX_SHARDS;
	v = calloc((size_t)n * kp.ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	err = percpu_read_n(skel->maps.ks_shards, n, sizeof(*v), v);
	for (i = 0; !err && i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		for (c = 0; c < kp.ncpu; c++) {
			const struct ks_shard_stats *e = &v[i * kp.ncpu + c];

			out[i].reads += e->reads;
			out[i].writes += e->writes;
			out[i].misdirected += e->misdirected;
			out[i].pad += e->pad;
		}
	}
	free(v);
	return err;
}

int kp_misdirect_read(__u32 slot, int cpu, struct ks_misdirect *out)
{
	struct ks_misdirect *v = calloc(kp.ncpu, sizeof(*v));
	int err = 0;

	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.ks_misdirect), &slot, v))
		err = -errno;
	else
		*out = v[cpu];
	free(v);
	return err;
}

/* ---- checks ---- */

#define KFAIL(ctx, ...) kp_failctx(ctx, __LINE__, __VA_ARGS__)

static void kp_failctx(const char *ctx, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void kp_failctx(const char *ctx, int line, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (getenv("KP_DEBUG")) /* the harness keeps only the first few */
		fprintf(stderr, "#   %s: [%s] %s\n", kt_cur.name,
			ctx ? ctx : "", msg);
	if (ctx)
		kt_failf("kp.c", line, "[%s] %s", ctx, msg);
	else
		kt_failf("kp.c", line, "%s", msg);
}

static void check_counters(const char *ctx)
{
	int i;

	for (i = 0; i < KS_OP_MAX; i++) {
		struct ks_op_stats got = kp_op(i), *want = &kp.x.ops[i];

		if (kp.x.op_dontcare[i])
			continue;
		if (got.requests != want->requests || got.keys != want->keys ||
		    got.bytes != want->bytes)
			KFAIL(ctx, "op %s: req/keys/bytes %llu/%llu/%llu, want %llu/%llu/%llu",
			      ks_op_name(i), (unsigned long long)got.requests,
			      (unsigned long long)got.keys,
			      (unsigned long long)got.bytes,
			      (unsigned long long)want->requests,
			      (unsigned long long)want->keys,
			      (unsigned long long)want->bytes);
	}
	for (i = 0; i < KS_ERR_MAX; i++) {
		__u64 got = kp_errc(i);

		if (kp.x.err[i] != KP_DONTCARE && got != (__u64)kp.x.err[i])
			KFAIL(ctx, "err %s = %llu, want %lld", ks_reason_name(i),
			      (unsigned long long)got, kp.x.err[i]);
	}
	for (i = 0; i < KS_PKT_MAX; i++) {
		__u64 got = kp_pkt(i);

		if (kp.x.pkts[i] != KP_DONTCARE && got != (__u64)kp.x.pkts[i])
			KFAIL(ctx, "pkt %s = %llu, want %lld", ks_pkt_name(i),
			      (unsigned long long)got, kp.x.pkts[i]);
	}
}

static void check_sketch(const char *ctx)
{
	static __u32 row[KS_CMS_WIDTH];
	__u32 idx;

	for (idx = 0; idx < KS_CMS_ROWS; idx++) {
		int bad = 0, first = -1;
		__u32 j;

		if (read_row(idx, row)) {
			KFAIL(ctx, "read ks_cms[%u]: %s", idx, strerror(errno));
			return;
		}
		for (j = 0; j < KS_CMS_WIDTH; j++) {
			if (row[j] != msk[idx][j]) {
				bad++;
				if (first < 0)
					first = (int)j;
			}
		}
		if (bad)
			KFAIL(ctx, "sketch row %u (epoch %u class %u row %u): %d cells differ, first col %d = %u want %u",
			      idx, idx / (KS_CMS_CLASSES * KS_CMS_DEPTH),
			      (idx / KS_CMS_DEPTH) % KS_CMS_CLASSES,
			      idx % KS_CMS_DEPTH, bad, first, row[first],
			      msk[idx][first]);
	}
}

/* Distinct model keys that fall in bucket b. */
static int keys_in_bucket(__u32 b)
{
	int i, n = 0;

	for (i = 0; i < kp.x.nkeys; i++)
		if (ks_cand_bucket(kp.x.keys[i].hash) == b)
			n++;
	return n;
}

static void check_cands(const char *ctx)
{
	struct ks_cand c;
	int i, used = 0, other_cpu = 0, overflow = 0, cpu;
	__u32 s;

	for (s = 0; s < KS_CAND_SLOTS; s++) {
		for (cpu = 0; cpu < kp.ncpu; cpu++) {
			if (read_cand(s, cpu, &c)) {
				KFAIL(ctx, "read ks_cands[%u]", s);
				return;
			}
			if (!c.hash)
				continue;
			if (cpu == kp.cpu)
				used++;
			else
				other_cpu++;
		}
	}
	if (other_cpu)
		KFAIL(ctx, "%d candidate slots filled on CPUs the test never ran on",
		      other_cpu);
	for (i = 0; i < kp.x.nkeys; i++) {
		struct kp_mkey *k = &kp.x.keys[i];

		if (keys_in_bucket(ks_cand_bucket(k->hash)) > KS_CAND_WAYS) {
			overflow = 1;
			continue; /* which ones stay depends on the policy */
		}
		if (!kp_cand_find(k->key, k->len, &c)) {
			KFAIL(ctx, "key '%.*s' (len %u, hash %016llx) not in candidate bucket %u",
			      k->len > 40 ? 40 : k->len, k->key, k->len,
			      (unsigned long long)k->hash,
			      ks_cand_bucket(k->hash));
			continue;
		}
		if (c.len != k->len || memcmp(c.key, k->key, k->len))
			KFAIL(ctx, "candidate for '%.*s': len %u, bytes '%.*s'",
			      k->len > 40 ? 40 : k->len, k->key, c.len,
			      c.len > 40 ? 40 : c.len, c.key);
		if (k->count_known && c.count != k->count)
			KFAIL(ctx, "candidate '%.*s': count %u, want %u",
			      k->len > 40 ? 40 : k->len, k->key, c.count,
			      k->count);
		if (c.seq != k->seq)
			KFAIL(ctx, "candidate '%.*s': seq %u, want %u",
			      k->len > 40 ? 40 : k->len, k->key, c.seq,
			      k->seq);
	}
	if (!overflow && !kp.x.cands_allow_extra && used != kp.x.nkeys)
		KFAIL(ctx, "%d candidate slots used, want %d", used,
		      kp.x.nkeys);
}

static void check_events(const char *ctx)
{
	int n = kp_read_events(), i;

	if (n != kp.x.nevents) {
		KFAIL(ctx, "%d trace events, want %d", n, kp.x.nevents);
		return;
	}
	for (i = 0; i < n; i++) {
		struct ks_event *g = &kp.got[i];
		struct kp_mevent *w = &kp.x.events[i];

		if (g->len != w->len || memcmp(g->key, w->key, w->len)) {
			KFAIL(ctx, "event %d: key '%.*s' len %u, want '%.*s'",
			      i, g->len > 40 ? 40 : g->len, g->key, g->len,
			      w->len > 40 ? 40 : w->len, w->key);
			continue;
		}
		if (g->hash != w->hash)
			KFAIL(ctx, "event %d: hash %016llx want %016llx", i,
			      (unsigned long long)g->hash,
			      (unsigned long long)w->hash);
		if (g->op != w->op || g->cls != w->cls || g->proto != w->proto)
			KFAIL(ctx, "event %d: op/cls/proto %u/%u/%u want %u/%u/%u",
			      i, g->op, g->cls, g->proto, w->op, w->cls,
			      w->proto);
		if (memcmp(g->saddr, w->saddr, 16) || g->sport != w->sport)
			KFAIL(ctx, "event %d: source address or port %u differs (want port %u)",
			      i, g->sport, w->sport);
		if (!g->ts_ns)
			KFAIL(ctx, "event %d: ts_ns is 0", i);
	}
}

static void check_shards(const char *ctx)
{
	static struct ks_shard_stats got[KS_MAX_SHARDS];
	int bad = 0, first = -1, err;
	__u32 i;

	err = kp_shards_read(got, KS_MAX_SHARDS);
	if (err) {
		KFAIL(ctx, "read ks_shards: %s", strerror(-err));
		return;
	}
	for (i = 0; i < KS_MAX_SHARDS; i++) {
		const struct ks_shard_stats *w = &kp.x.shards[i];

		if (got[i].reads != w->reads || got[i].writes != w->writes ||
		    got[i].misdirected != w->misdirected || got[i].pad) {
			bad++;
			if (first < 0)
				first = (int)i;
		}
	}
	if (bad)
		KFAIL(ctx, "%d shards differ; shard %d reads/writes/misdirected %llu/%llu/%llu, want %llu/%llu/%llu",
		      bad, first, (unsigned long long)got[first].reads,
		      (unsigned long long)got[first].writes,
		      (unsigned long long)got[first].misdirected,
		      (unsigned long long)kp.x.shards[first].reads,
		      (unsigned long long)kp.x.shards[first].writes,
		      (unsigned long long)kp.x.shards[first].misdirected);
}

/* The misdirect slots of this CPU hold the model's last 32 misdirected
 * keys (slot i the i-th mod 32); every other slot and CPU is empty. */
static void check_misdirect(const char *ctx)
{
	static const struct ks_misdirect zero;
	struct ks_misdirect *v = calloc(kp.ncpu, sizeof(*v));
	__u32 i, filled = kp.x.nmis < KS_MISDIRECT_SLOTS ? kp.x.nmis :
							   KS_MISDIRECT_SLOTS;
	int c;

	if (!v)
		return;
	for (i = 0; i < KS_MISDIRECT_SLOTS; i++) {
		const struct ks_misdirect *w = &kp.x.mis[i], *g;

		if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.ks_misdirect),
					&i, v)) {
			KFAIL(ctx, "read ks_misdirect[%u]: %s", i,
			      strerror(errno));
			break;
		}
		for (c = 0; c < kp.ncpu; c++)
			if (c != kp.cpu && memcmp(&v[c], &zero, sizeof(zero)))
				KFAIL(ctx, "misdirect slot %u filled on CPU %d, where the test never ran",
				      i, c);
		g = &v[kp.cpu];
		if (i >= filled) {
			if (memcmp(g, &zero, sizeof(zero)))
				KFAIL(ctx, "misdirect slot %u filled (owner %u), want empty after %u misdirected keys",
				      i, g->owner, kp.x.nmis);
			continue;
		}
		if (!g->ts_ns || memcmp(g->saddr, w->saddr, 16) ||
		    g->sport != w->sport || g->proto != w->proto ||
		    g->owner != w->owner || g->hash != w->hash || g->pad)
			KFAIL(ctx, "misdirect slot %u: ts %llu port %u proto %u owner %u hash %016llx, want port %u proto %u owner %u hash %016llx%s",
			      i, (unsigned long long)g->ts_ns, g->sport,
			      g->proto, g->owner, (unsigned long long)g->hash,
			      w->sport, w->proto, w->owner,
			      (unsigned long long)w->hash,
			      memcmp(g->saddr, w->saddr, 16) ?
				      ", source address differs" : "");
	}
	free(v);
}

void kp_check(const char *ctx)
{
	check_counters(ctx);
	if (!kp.x.ring_inexact) {
		check_shards(ctx);
		check_misdirect(ctx);
	}
	if (kp.x.check_sketch)
		check_sketch(ctx);
	if (kp.x.check_cands)
		check_cands(ctx);
	if (kp.x.check_events)
		check_events(ctx);
}

/* KP_DEBUG=1 in the environment: every nonzero counter of each test on
 * stderr, to see what the program did where a test leaves it open. */
static void dump_counters(void)
{
	int i;

	if (!getenv("KP_DEBUG"))
		return;
	fprintf(stderr, "# %s:", kt_cur.name);
	for (i = 0; i < KS_OP_MAX; i++) {
		struct ks_op_stats g = kp_op(i);

		if (g.requests || g.keys || g.bytes)
			fprintf(stderr, " op.%s=%llu/%llu/%llu", ks_op_name(i),
				(unsigned long long)g.requests,
				(unsigned long long)g.keys,
				(unsigned long long)g.bytes);
	}
	for (i = 0; i < KS_ERR_MAX; i++)
		if (kp_errc(i))
			fprintf(stderr, " err.%s=%llu", ks_reason_name(i),
				(unsigned long long)kp_errc(i));
	for (i = 0; i < KS_PKT_MAX; i++)
		if (kp_pkt(i))
			fprintf(stderr, " pkt.%s=%llu", ks_pkt_name(i),
				(unsigned long long)kp_pkt(i));
	fprintf(stderr, "\n");
}

void kp_end(void)
{
	kp_check(NULL);
	dump_counters();
	kt_end();
}

/* ---- running ---- */

int kp_run(int prog_fd, const void *data, __u32 len, __u32 *retval,
	   void *out, __u32 *out_len)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = data, .data_size_in = len,
		    .data_out = out, .data_size_out = *out_len, .repeat = 1);
	int err = bpf_prog_test_run_opts(prog_fd, &o);

	if (err)
		return err < 0 ? err : -err;
	*retval = o.retval;
	*out_len = o.data_size_out;
	return 0;
}

static int send_to(int fd, __u32 want_rc, const struct pkt *p)
{
	static __u8 out[PKT_MAX + 512];
	__u32 rc = ~0u, olen = sizeof(out);
	int err = kp_run(fd, p->b, p->len, &rc, out, &olen);

	if (err) {
		kt_failf(__FILE__, __LINE__, "test run of %u bytes: %s", p->len,
			 strerror(-err));
		return err;
	}
	if (rc != want_rc)
		kt_failf(__FILE__, __LINE__, "verdict %u, want %u (len %u)", rc,
			 want_rc, p->len);
	if (olen != p->len || memcmp(out, p->b, p->len))
		kt_failf(__FILE__, __LINE__,
			 "packet changed: %u bytes out of %u in, or bytes differ",
			 olen, p->len);
	return 0;
}

static void remember_source(const struct pkt *p)
{
	memset(kp.x.saddr, 0, 16);
	if (p->l3 == p->l4)
		return;
	if (p->ipv6) {
		memcpy(kp.x.saddr, p->b + p->l3 + 8, 16);
	} else {
		kp.x.saddr[10] = kp.x.saddr[11] = 0xff;
		memcpy(kp.x.saddr + 12, p->b + p->l3 + 12, 4);
	}
	kp.x.sport = (__u16)(p->b[p->l4] << 8 | p->b[p->l4 + 1]);
	kp.x.proto = p->proto;
}

int kp_send(const struct pkt *p)
{
	int err = send_to(kp.xdp_fd, XDP_PASS_RC, p);

	if (kp.x.pkts[KS_PKT_SEEN] != KP_DONTCARE)
		kp.x.pkts[KS_PKT_SEEN]++;
	remember_source(p);
	return err;
}

static void x_pkt_inc(int c)
{
	if (kp.x.pkts[c] != KP_DONTCARE)
		kp.x.pkts[c]++;
}

void kp_send_mc(const struct pkt *p)
{
	kp_send(p);
	x_pkt_inc(KS_PKT_MEMCACHED);
	x_pkt_inc(p->proto == IPPROTO_UDP ? KS_PKT_UDP : KS_PKT_TCP);
}

void kp_send_tc(const struct pkt *p)
{
	send_to(kp.tc_fd, TC_OK_RC, p);
	x_pkt_inc(KS_PKT_SEEN);
	x_pkt_inc(KS_PKT_MEMCACHED);
	x_pkt_inc(p->proto == IPPROTO_UDP ? KS_PKT_UDP : KS_PKT_TCP);
	remember_source(p);
}

void kp_build(struct pkt *p, const struct pkt_opts *o, const void *pay,
	      size_t len)
{
	if (pkt_build(p, o, pay, len))
		kt_failf(__FILE__, __LINE__, "packet of %zu payload bytes does not fit",
			 len);
}

static void build_default(struct pkt *p, int v6, __u8 proto, const void *pay,
			  size_t len)
{
	struct pkt_opts o;

	pkt_opts_default(&o, v6, proto);
	kp_build(p, &o, pay, len);
}

void kp_tcp4(struct pkt *p, const void *pay, size_t len)
{
	build_default(p, 0, IPPROTO_TCP, pay, len);
}

void kp_udp4(struct pkt *p, const void *pay, size_t len)
{
	build_default(p, 0, IPPROTO_UDP, pay, len);
}

void kp_tcp6(struct pkt *p, const void *pay, size_t len)
{
	build_default(p, 1, IPPROTO_TCP, pay, len);
}

void kp_udp6(struct pkt *p, const void *pay, size_t len)
{
	build_default(p, 1, IPPROTO_UDP, pay, len);
}

void kp_send_tcp4(const char *pay)
{
	static struct pkt p;

	kp_tcp4(&p, pay, strlen(pay));
	kp_send_mc(&p);
}

/* ---- expectations ---- */

static struct kp_mkey *model_key(const void *key, size_t len, __u64 h)
{
	int i;

	for (i = 0; i < kp.x.nkeys; i++)
		if (kp.x.keys[i].hash == h && kp.x.keys[i].len == len &&
		    !memcmp(kp.x.keys[i].key, key, len))
			return &kp.x.keys[i];
	if (kp.x.nkeys == KP_MAX_MKEYS)
		return NULL;
	i = kp.x.nkeys++;
	memset(&kp.x.keys[i], 0, sizeof(kp.x.keys[i]));
	memcpy(kp.x.keys[i].key, key, len);
	kp.x.keys[i].len = (__u16)len;
	kp.x.keys[i].hash = h;
	kp.x.keys[i].cls = -1;
	return &kp.x.keys[i];
}

/* Conservative update of the model sketch; returns the new estimate. */
static __u32 model_cms_add(__u32 cls, __u64 h)
{
	__u32 epoch = kp.cfg.seq & 1, r, est = ~0u;

	for (r = 0; r < KS_CMS_DEPTH; r++) {
		__u32 v = msk[ks_cms_index(epoch, cls, r)][ks_cms_col(h, r)];

		est = v < est ? v : est;
	}
	est++;
	for (r = 0; r < KS_CMS_DEPTH; r++) {
		__u32 *v = &msk[ks_cms_index(epoch, cls, r)][ks_cms_col(h, r)];

		if (*v < est)
			*v = est;
	}
	return est;
}

/* A sampled read or write on the model's ring, as ks_ring_place() does. */
static void model_ring_place(__u32 cls, const void *key, size_t len,
			     __u64 hash)
{
	const struct ks_ring *r = kp.x.ring;
	struct ks_misdirect *m;
	__u32 owner;

	if (!r || !r->half)
		return;
	owner = ks_ring_lookup(r, key, len);
	if (owner >= KS_MAX_SHARDS) /* no ring in the half */
		return;
	if (cls == KS_CLASS_READ)
		kp.x.shards[owner].reads++;
	else
		kp.x.shards[owner].writes++;
	x_pkt_inc(KS_PKT_RING_HIT);
	if (r->half->meta.self == KS_NO_SHARD || owner == r->half->meta.self)
		return;
	kp.x.shards[owner].misdirected++;
	x_pkt_inc(KS_PKT_MISDIRECTED);
	m = &kp.x.mis[kp.x.nmis++ % KS_MISDIRECT_SLOTS];
	memset(m, 0, sizeof(*m));
	m->ts_ns = 1; /* any nonzero time */
	memcpy(m->saddr, kp.x.saddr, 16);
	m->sport = kp.x.sport;
	m->proto = kp.x.proto;
	m->owner = owner;
	m->hash = hash;
}

static void model_sample(int op, const void *key, size_t len)
{
	__u32 cls = ks_op_class((__u32)op);
	__u64 h = kp_hash(key, len);
	struct kp_mkey *k;

	x_pkt_inc(KS_PKT_SAMPLED);
	if (cls == KS_CLASS_OTHER) {
		/* Not sketched; whether such a key is offered to the
		 * candidate table is not pinned down by the design. */
		kp.x.cands_allow_extra = true;
		kp.x.pkts[KS_PKT_CAND_INSERT] = KP_DONTCARE;
	} else {
		__u32 est = model_cms_add(cls, h);

		k = model_key(key, len, h);
		if (!k) {
			kt_failf(__FILE__, __LINE__, "model: too many keys");
			return;
		}
		if (k->cls == -1) { /* first sample: a new candidate */
			x_pkt_inc(KS_PKT_CAND_INSERT);
			k->cls = (int)cls;
			k->count_known = true;
		} else if (k->cls != (int)cls) {
			k->count_known = false; /* classes mixed */
		}
		k->count = est;
		k->seq = kp.cfg.seq;
		model_ring_place(cls, key, len, h);
		if (keys_in_bucket(ks_cand_bucket(h)) > KS_CAND_WAYS) {
			kp.x.pkts[KS_PKT_CAND_INSERT] = KP_DONTCARE;
			kp.x.pkts[KS_PKT_CAND_EVICT] = KP_DONTCARE;
		}
	}
	if (kp.cfg.trace && kp.x.nevents < KP_MAX_EVENTS) {
		struct kp_mevent *e = &kp.x.events[kp.x.nevents++];

		memset(e, 0, sizeof(*e));
		e->hash = h;
		memcpy(e->saddr, kp.x.saddr, 16);
		e->sport = kp.x.sport;
		e->op = (__u8)op;
		e->cls = (__u8)cls;
		e->proto = kp.x.proto;
		e->len = (__u16)len;
		memcpy(e->key, key, len);
	}
}

void kp_x_keyn(int op, const void *key, size_t len)
{
	kp.x.ops[op].keys++;
	if (kp.x.exact)
		model_sample(op, key, len);
}

void kp_x_req(int op, size_t bytes, ...)
{
	const char *key;
	va_list ap;

	kp.x.ops[op].requests++;
	kp.x.ops[op].bytes += bytes;
	va_start(ap, bytes);
	while ((key = va_arg(ap, const char *)))
		kp_x_keyn(op, key, strlen(key));
	va_end(ap);
}

void kp_x_err(int reason)
{
	if (kp.x.err[reason] != KP_DONTCARE)
		kp.x.err[reason]++;
}

void kp_x_pkt_dontcare(int counter)
{
	kp.x.pkts[counter] = KP_DONTCARE;
}

void kp_x_op_dontcare(int op)
{
	kp.x.op_dontcare[op] = true;
}

void kp_x_err_dontcare(int reason)
{
	kp.x.err[reason] = KP_DONTCARE;
}

void kp_x_l4_dontcare(void)
{
	kp.x.pkts[KS_PKT_MEMCACHED] = KP_DONTCARE;
	kp.x.pkts[KS_PKT_TCP] = KP_DONTCARE;
	kp.x.pkts[KS_PKT_UDP] = KP_DONTCARE;
}
