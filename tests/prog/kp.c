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
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "keysteer.skel.h"
#include "dp/load_private.h"
#include "core/estimate.h"
#include "core/names.h"
#include "core/ring.h"
#include "core/dedicated.h"
#include "kp.h"

#define XDP_PASS_RC 2           /* enum xdp_action XDP_PASS */
#define TC_OK_RC    0xffffffffu /* TC_ACT_UNSPEC: the filters after ours run */

struct kp_env kp;

static struct keysteer_bpf *skel;
static struct ring_buffer *rb;

/* Contents of every array map right after load, restored before each test:
 * that also resets the program's private per-CPU state (the sampling
 * countdown) without the test knowing where it lives. */
struct snap {
	struct bpf_map *map;
	size_t vsz; /* bytes per entry as the syscall wants them */
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

	if (!v ||
	    bpf_map_lookup_elem(bpf_map__fd(skel->maps.ks_pkts), &zero, v))
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
	struct ks_op_stats ops[KS_OP_MAX] = {};
	__u64 pkts[KS_PKT_MAX] = {};

	if (op < 0 || op >= KS_OP_MAX)
		return kp_op_raw(op);
	ops[op] = kp_op_raw(op);
	if (op == KS_OP_GET) {
		pkts[KS_PKT_FAST_GET] = kp_pkt(KS_PKT_FAST_GET);
		pkts[KS_PKT_FAST_GET_BYTES] = kp_pkt(KS_PKT_FAST_GET_BYTES);
	}
	/* the agent's own fold, so the model checks what it reports */
	ks_ops_fold_fast(ops, pkts);
	return ops[op];
}

struct ks_op_stats kp_op_raw(int op)
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

/* One sketch row (all its segments) summed over CPUs into out. */
static int read_row(__u32 rowno, __u32 *out)
{
	size_t vsz = sizeof(__u32) * KS_CMS_SEG;
	__u32 *v = percpu_buf(vsz);
	__u32 seg, idx;
	int c, j;

	memset(out, 0, sizeof(__u32) * KS_CMS_WIDTH);
	for (seg = 0; seg < KS_CMS_SEGS; seg++) {
		idx = ks_cms_entry(rowno, seg);
		if (!v || bpf_map_lookup_elem(bpf_map__fd(skel->maps.ks_cms),
					      &idx, v))
			return -1;
		for (c = 0; c < kp.ncpu; c++)
			for (j = 0; j < KS_CMS_SEG; j++)
				out[seg * KS_CMS_SEG + j] +=
					v[c * KS_CMS_SEG + j];
	}
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

__u32 kp_scratch_u32(const char *field)
{
	const struct btf *btf = bpf_object__btf(skel->obj);
	const struct btf_member *m;
	const struct btf_type *t;
	__u32 v = 0, zero = 0, i;
	size_t vsz;
	__u8 *buf;
	int id;

	id = btf ? btf__find_by_name_kind(btf, "ks_scratch", BTF_KIND_STRUCT)
		 : -1;
	if (id < 0) {
		kt_failf(__FILE__, __LINE__, "no struct ks_scratch in the BTF");
		return 0;
	}
	t = btf__type_by_id(btf, (__u32)id);
	m = btf_members(t);
	for (i = 0; i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), field))
			break;
	vsz = (bpf_map__value_size(skel->maps.ks_scratch) + 7) & ~(size_t)7;
	buf = calloc((size_t)kp.ncpu, vsz);
	if (i == btf_vlen(t) || !buf ||
	    bpf_map_lookup_elem(bpf_map__fd(skel->maps.ks_scratch), &zero,
				buf)) {
		kt_failf(__FILE__, __LINE__, "ks_scratch.%s unreadable", field);
		free(buf);
		return 0;
	}
	memcpy(&v, buf + vsz * (size_t)kp.cpu + btf_member_bit_offset(t, i) / 8,
	       sizeof(v));
	free(buf);
	return v;
}

/* ---- set-up ---- */

static int snapshot_maps(void)
{
	struct bpf_map *m;

	bpf_object__for_each_map (m, skel->obj) {
		enum bpf_map_type t = bpf_map__type(m);
		const char *name = bpf_map__name(m);
		struct snap *s;
		__u32 i;

		if (t != BPF_MAP_TYPE_ARRAY && t != BPF_MAP_TYPE_PERCPU_ARRAY)
			continue;
		/* read-only data cannot be written back, and needs no reset */
		if (strstr(name, ".rodata") || strstr(name, ".kconfig"))
			continue;
		/* The TCP flow table is big and never reset: every flow a test
		 * cares about is a new 4-tuple (kp_flow_new), and restoring
		 * it would cost more than the rest of a reset. */
		if (strstr(name, "flow"))
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

	if (s->n > 1 &&
	    !bpf_map_update_batch(fd, snap_keys, s->data, &count, &bo) &&
	    count == s->n)
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

	bpf_object__for_each_map (m, skel->obj) {
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
	kp.tc_egress_fd = bpf_program__fd(skel->progs.ks_tc_egress);
	rb = ring_buffer__new(bpf_map__fd(skel->maps.ks_events), on_event, NULL,
			      NULL);
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

/* The counters of the TCP flow layer (kp_x_flow_exact). */
static const int flow_ctrs[] = {
	KS_PKT_FLOW_NEW,    KS_PKT_FLOW_END,       KS_PKT_FLOW_CONT,
	KS_PKT_FLOW_DUP,    KS_PKT_FLOW_OVERLAP,   KS_PKT_FLOW_FILL,
	KS_PKT_RESYNC_GAP,  KS_PKT_RESYNC_UNKNOWN, KS_PKT_RESYNC_CARRY,
	KS_PKT_RESYNC_LOST, KS_PKT_HOT_DISARM,
};

static void model_slog_certainty(void);

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
	/* Lone TCP packets are data on flows no SYN opened: a datapath that
	 * follows streams resyncs on each (RESYNC_UNKNOWN, and may disarm
	 * hot keys for it), may lose or carry what they cut, and kp_send's
	 * RST releases it (FLOW_END). The flow counters are pinned only by
	 * the tests that call kp_x_flow_exact(). */
	for (i = 0; i < (int)(sizeof(flow_ctrs) / sizeof(flow_ctrs[0])); i++)
		kp.x.pkts[flow_ctrs[i]] = KP_DONTCARE;
	/* Which path counts a get is the datapath's business: the model
	 * pins the folded get totals (kp_op), not where they were kept. */
	kp.x.pkts[KS_PKT_FAST_GET] = KP_DONTCARE;
	kp.x.pkts[KS_PKT_FAST_GET_BYTES] = KP_DONTCARE;
	model_slog_certainty();
}

/* With the sample log on, which keys reach it is known only at sample_n 1. */
static void model_slog_certainty(void)
{
	if (kp.x.exact || !(kp.cfg.flags & KS_CFG_SLOG))
		return;
	kp.x.slog_inexact = true;
	kp.x.pkts[KS_PKT_SLOG] = KP_DONTCARE;
	kp.x.pkts[KS_PKT_SLOG_FULL] = KP_DONTCARE;
}

/* With a ring loaded, which keys reach it is known only at sample_n 1. */
static void model_ring_certainty(void)
{
	if (kp.x.exact || !kp.x.ring)
		return;
	kp.x.ring_inexact = true;
	kp.x.pkts[KS_PKT_RING_HIT] = KP_DONTCARE;
	kp.x.pkts[KS_PKT_MISDIRECTED] = KP_DONTCARE;
	kp.x.pkts[KS_PKT_RING_UNPLACED] = KP_DONTCARE;
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
	memset(&kp_tally, 0, sizeof(kp_tally));
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
	model_slog_certainty();
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

void kp_set_rate(__u32 epoch, __u32 n_here, __u32 n_other)
{
	__u64 *v = percpu_buf(8);
	int c;

	if (!v) {
		kt_failf(__FILE__, __LINE__, "write ks_rate: out of memory");
		return;
	}
	for (c = 0; c < kp.ncpu; c++)
		v[c] = c == kp.cpu ? n_here : n_other;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.ks_rate), &epoch, v,
				BPF_ANY))
		kt_failf(__FILE__, __LINE__, "write ks_rate: %s",
			 strerror(errno));
	kp.x.exact = false;
	kp.x.check_sketch = kp.x.check_cands = kp.x.check_events = false;
	kp.x.pkts[KS_PKT_SAMPLED] = KP_DONTCARE;
	kp.x.pkts[KS_PKT_CAND_INSERT] = KP_DONTCARE;
	kp.x.pkts[KS_PKT_CAND_EVICT] = KP_DONTCARE;
	model_ring_certainty();
}

void kp_set_place(__u32 epoch, __u32 p_here)
{
	struct ks_rate_entry *v = percpu_buf(sizeof(*v));
	int c;

	if (!v) {
		kt_failf(__FILE__, __LINE__, "write ks_rate: out of memory");
		return;
	}
	for (c = 0; c < kp.ncpu; c++) {
		v[c].n = 0;
		v[c].p = c == kp.cpu ? p_here : 0;
	}
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.ks_rate), &epoch, v,
				BPF_ANY))
		kt_failf(__FILE__, __LINE__, "write ks_rate: %s",
			 strerror(errno));
	if (p_here <= 1 || !kp.x.ring)
		return;
	kp.x.ring_inexact = true;
	kp.x.pkts[KS_PKT_RING_HIT] = KP_DONTCARE;
	kp.x.pkts[KS_PKT_MISDIRECTED] = KP_DONTCARE;
	kp.x.pkts[KS_PKT_RING_UNPLACED] = KP_DONTCARE;
}

void kp_set_trace(__u32 on)
{
	struct ks_config c = kp.cfg;

	c.trace = on;
	kp_config(&c);
}

void kp_set_slog(__u32 on)
{
	struct ks_config c = kp.cfg;

	c.flags = on ? c.flags | KS_CFG_SLOG : c.flags & ~(__u32)KS_CFG_SLOG;
	kp_config(&c);
}

void kp_slog_pos(__u64 head, __u64 tail)
{
	struct ks_slog_pos v = { .head = head, .tail = tail };
	__u32 cpu = (__u32)kp.cpu;

	if (kp.x.nslog)
		kt_failf(__FILE__, __LINE__,
			 "kp_slog_pos after records: check them first");
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.ks_slog_pos), &cpu, &v,
				BPF_ANY))
		kt_failf(__FILE__, __LINE__, "write ks_slog_pos: %s",
			 strerror(errno));
	kp.x.slog_head0 = head;
	kp.x.slog_tail = tail;
}

int kp_slog_read(__u64 at, struct ks_slog_rec *out)
{
	__u32 idx = (__u32)kp.cpu * KS_SLOG_RECS + (__u32)(at & KS_SLOG_MASK);

	return bpf_map_lookup_elem(bpf_map__fd(skel->maps.ks_slog), &idx, out)
		       ? -errno
		       : 0;
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
	     errno == ENOENT) &&
	    count == n)
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
static char kp_last_fail[400]; /* first message since it was cleared */
struct kp_tally kp_tally;

static void kp_failctx(const char *ctx, int line, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!kp_last_fail[0]) /* the first since it was cleared */
		snprintf(kp_last_fail, sizeof(kp_last_fail), "[%.120s] %.270s",
			 ctx ? ctx : "", msg);
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
			KFAIL(ctx,
			      "op %s: req/keys/bytes %llu/%llu/%llu, want %llu/%llu/%llu",
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
			KFAIL(ctx, "err %s = %llu, want %lld",
			      ks_reason_name(i), (unsigned long long)got,
			      kp.x.err[i]);
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
			KFAIL(ctx,
			      "sketch row %u (epoch %u class %u row %u): %d cells differ, first col %d = %u want %u",
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
		KFAIL(ctx,
		      "%d candidate slots filled on CPUs the test never ran on",
		      other_cpu);
	for (i = 0; i < kp.x.nkeys; i++) {
		struct kp_mkey *k = &kp.x.keys[i];

		if (keys_in_bucket(ks_cand_bucket(k->hash)) > KS_CAND_WAYS) {
			overflow = 1;
			continue; /* which ones stay depends on the policy */
		}
		if (!kp_cand_find(k->key, k->len, &c)) {
			KFAIL(ctx,
			      "key '%.*s' (len %u, hash %016llx) not in candidate bucket %u",
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
			      k->len > 40 ? 40 : k->len, k->key, c.seq, k->seq);
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
			KFAIL(ctx,
			      "event %d: op/cls/proto %u/%u/%u want %u/%u/%u",
			      i, g->op, g->cls, g->proto, w->op, w->cls,
			      w->proto);
		if (memcmp(g->saddr, w->saddr, 16) || g->sport != w->sport)
			KFAIL(ctx,
			      "event %d: source address or port %u differs (want port %u)",
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
		KFAIL(ctx,
		      "%d shards differ; shard %d reads/writes/misdirected %llu/%llu/%llu, want %llu/%llu/%llu",
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
	__u32 i, filled = kp.x.nmis < KS_MISDIRECT_SLOTS ? kp.x.nmis
							 : KS_MISDIRECT_SLOTS;
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
				KFAIL(ctx,
				      "misdirect slot %u filled on CPU %d, where the test never ran",
				      i, c);
		g = &v[kp.cpu];
		if (i >= filled) {
			if (memcmp(g, &zero, sizeof(zero)))
				KFAIL(ctx,
				      "misdirect slot %u filled (owner %u), want empty after %u misdirected keys",
				      i, g->owner, kp.x.nmis);
			continue;
		}
		if (!g->ts_ns || memcmp(g->saddr, w->saddr, 16) ||
		    g->sport != w->sport || g->proto != w->proto ||
		    g->owner != w->owner || g->hash != w->hash || g->pad)
			KFAIL(ctx,
			      "misdirect slot %u: ts %llu port %u proto %u owner %u hash %016llx, want port %u proto %u owner %u hash %016llx%s",
			      i, (unsigned long long)g->ts_ns, g->sport,
			      g->proto, g->owner, (unsigned long long)g->hash,
			      w->sport, w->proto, w->owner,
			      (unsigned long long)w->hash,
			      memcmp(g->saddr, w->saddr, 16)
				      ? ", source address differs"
				      : "");
	}
	free(v);
}

/* Every CPU's log position, and this CPU's records since slog_head0. */
static void check_slog(const char *ctx)
{
	int fd = bpf_map__fd(skel->maps.ks_slog_pos), i;
	__u64 head = kp.x.slog_head0 + (__u64)kp.x.nslog;
	__u32 cpu;

	for (cpu = 0; cpu < (__u32)kp.ncpu; cpu++) {
		struct ks_slog_pos v;
		bool here = cpu == (__u32)kp.cpu;

		if (bpf_map_lookup_elem(fd, &cpu, &v)) {
			KFAIL(ctx, "read ks_slog_pos[%u]: %s", cpu,
			      strerror(errno));
			return;
		}
		if (here && kp.x.slog_inexact)
			continue;
		if (v.head != (here ? head : 0) ||
		    v.tail != (here ? kp.x.slog_tail : 0))
			KFAIL(ctx,
			      "sample log of CPU %u: head %llu tail %llu, want %llu %llu",
			      cpu, (unsigned long long)v.head,
			      (unsigned long long)v.tail,
			      (unsigned long long)(here ? head : 0),
			      (unsigned long long)(here ? kp.x.slog_tail : 0));
	}
	for (i = 0; !kp.x.slog_inexact && i < kp.x.nslog && i < KS_SLOG_RECS;
	     i++) {
		const struct ks_slog_rec *w = &kp.x.slog[i];
		struct ks_slog_rec g;
		__u64 at = kp.x.slog_head0 + (__u64)i;

		if (kp_slog_read(at, &g)) {
			KFAIL(ctx, "read sample log record %llu: %s",
			      (unsigned long long)at, strerror(errno));
			return;
		}
		if (memcmp(&g, w, sizeof(g)))
			KFAIL(ctx,
			      "sample log record %llu: hash %016llx len %u cls %u pad %u seq %u n %u key '%.48s', want %016llx %u %u 0 %u %u '%.48s'%s",
			      (unsigned long long)at,
			      (unsigned long long)g.hash, g.len, g.cls, g.pad,
			      g.seq, g.n, (const char *)g.key,
			      (unsigned long long)w->hash, w->len, w->cls,
			      w->seq, w->n, (const char *)w->key,
			      memcmp(g.key, w->key, sizeof(g.key))
				      ? " (key words differ)"
				      : "");
	}
}

void kp_check(const char *ctx)
{
	check_counters(ctx);
	check_slog(ctx);
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

int kp_run(int prog_fd, const void *data, __u32 len, __u32 *retval, void *out,
	   __u32 *out_len)
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
		kt_failf(
			__FILE__, __LINE__,
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

static void x_pkt_inc(int c)
{
	if (kp.x.pkts[c] != KP_DONTCARE)
		kp.x.pkts[c]++;
}

/* True while kp_flow_send() sends: a flow's segments are not lone. */
static bool in_flow;

void kp_rst_for(struct pkt *rst, const struct pkt *p)
{
	const __u8 *ip = p->b + p->l3, *t = p->b + p->l4;
	struct pkt_opts o;

	pkt_opts_default(&o, p->ipv6, IPPROTO_TCP);
	memcpy(o.saddr, ip + (p->ipv6 ? 8 : 12), p->ipv6 ? 16 : 4);
	memcpy(o.daddr, ip + (p->ipv6 ? 24 : 16), p->ipv6 ? 16 : 4);
	o.sport = (__u16)(t[0] << 8 | t[1]);
	o.dport = (__u16)(t[2] << 8 | t[3]);
	o.tcp_seq = pkt_tcp_seq(p) + p->plen;
	o.tcp_flags = PKT_TCP_RST | PKT_TCP_ACK;
	pkt_build(rst, &o, NULL, 0);
}

/*
 * A lone TCP segment (not a kp_flow's) is data on a flow no SYN opened.
 * If the datapath took it for one (RESYNC_UNKNOWN moved), an RST on its
 * 4-tuple releases that state, so the next lone packet with the same
 * addresses, ports and sequence is a flow of its own again, not a
 * retransmission, and what a cut request left pending is settled now.
 * The model expects the RST's SEEN; FLOW_END is not pinned down for lone
 * packets (kp_x_flow_exact pins it).
 */
static bool lone_tcp(const struct pkt *p)
{
	return !in_flow && p->proto == IPPROTO_TCP && p->plen &&
	       p->l3 != p->l4 && p->l4 + 20 <= p->len;
}

static void lone_release(int fd, __u32 want_rc, const struct pkt *p,
			 __u64 unknown_before)
{
	static struct pkt rst;

	if (kp_pkt(KS_PKT_RESYNC_UNKNOWN) == unknown_before)
		return;
	kp_rst_for(&rst, p);
	send_to(fd, want_rc, &rst);
	x_pkt_inc(KS_PKT_SEEN);
}

int kp_send(const struct pkt *p)
{
	bool lone = lone_tcp(p);
	__u64 unknown = lone ? kp_pkt(KS_PKT_RESYNC_UNKNOWN) : 0;
	int err = send_to(kp.xdp_fd, XDP_PASS_RC, p);

	if (kp.x.pkts[KS_PKT_SEEN] != KP_DONTCARE)
		kp.x.pkts[KS_PKT_SEEN]++;
	if (lone && !err)
		lone_release(kp.xdp_fd, XDP_PASS_RC, p, unknown);
	remember_source(p);
	return err;
}

void kp_send_mc(const struct pkt *p)
{
	kp_send(p);
	x_pkt_inc(KS_PKT_MEMCACHED);
	x_pkt_inc(p->proto == IPPROTO_UDP ? KS_PKT_UDP : KS_PKT_TCP);
}

void kp_send_tc(const struct pkt *p)
{
	bool lone = lone_tcp(p);
	__u64 unknown = lone ? kp_pkt(KS_PKT_RESYNC_UNKNOWN) : 0;

	if (!send_to(kp.tc_fd, TC_OK_RC, p) && lone)
		lone_release(kp.tc_fd, TC_OK_RC, p, unknown);
	x_pkt_inc(KS_PKT_SEEN);
	x_pkt_inc(KS_PKT_MEMCACHED);
	x_pkt_inc(p->proto == IPPROTO_UDP ? KS_PKT_UDP : KS_PKT_TCP);
	remember_source(p);
}

void kp_build(struct pkt *p, const struct pkt_opts *o, const void *pay,
	      size_t len)
{
	if (pkt_build(p, o, pay, len))
		kt_failf(__FILE__, __LINE__,
			 "packet of %zu payload bytes does not fit", len);
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
static void model_ring_place(__u32 cls, const void *key, size_t len, __u64 hash)
{
	const struct ks_ring *r = kp.x.ring;
	struct ks_misdirect *m;
	__u32 owner;

	if (!r || !r->half)
		return;
	if (!ks_ring_kernel_places(r, key, len)) {
		x_pkt_inc(KS_PKT_RING_UNPLACED);
		return;
	}
	owner = ks_ring_lookup(r, key, len);
	if (owner >= KS_MAX_SHARDS) /* no ring in the half */
		return;
	if (kp.x.ded && r->half->meta.nshards > 1) {
		int d = ks_dedicated_place(kp.x.ded, kp.x.ded_idx, key, len,
					   NULL);

		owner = d >= 0 ? (__u32)d : owner;
	}
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
	if ((kp.cfg.flags & KS_CFG_SLOG) && cls != KS_CLASS_OTHER &&
	    len <= KS_SLOG_KEY) {
		__u64 head = kp.x.slog_head0 + (__u64)kp.x.nslog;

		if (head - kp.x.slog_tail >= KS_SLOG_RECS) {
			x_pkt_inc(KS_PKT_SLOG_FULL); /* the sketch takes it */
		} else if (kp.x.nslog == KP_MAX_SLOG) {
			kt_failf(__FILE__, __LINE__, "model: too many records");
			return;
		} else {
			struct ks_slog_rec *r = &kp.x.slog[kp.x.nslog++];

			memset(r, 0, sizeof(*r));
			r->hash = h;
			r->len = (__u16)len;
			r->cls = (__u8)cls;
			r->seq = (__u16)kp.cfg.seq;
			r->n = 1; /* the model is exact at sample_n <= 1 only */
			memcpy(r->key, key, len);
			x_pkt_inc(KS_PKT_SLOG);
			model_ring_place(cls, key, len, h);
			goto trace;
		}
	}
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
trace:
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

void kp_x_sampled_only(int op, const void *key, size_t len)
{
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

void kp_x_pkt(int counter, long long n)
{
	if (kp.x.pkts[counter] != KP_DONTCARE)
		kp.x.pkts[counter] += n;
}

void kp_x_pkt_exact(int counter)
{
	kp.x.pkts[counter] = (long long)kp_pkt(counter);
}

void kp_x_flow_exact(void)
{
	size_t i;

	for (i = 0; i < sizeof(flow_ctrs) / sizeof(flow_ctrs[0]); i++)
		kp_x_pkt_exact(flow_ctrs[i]);
}

void kp_x_inexact(void)
{
	int i;

	for (i = 0; i < KS_OP_MAX; i++)
		kp.x.op_dontcare[i] = true;
	for (i = 0; i < KS_ERR_MAX; i++)
		kp.x.err[i] = KP_DONTCARE;
	kp.x.exact = false;
	kp.x.check_sketch = kp.x.check_cands = kp.x.check_events = false;
	kp.x.pkts[KS_PKT_SAMPLED] = KP_DONTCARE;
	kp.x.pkts[KS_PKT_CAND_INSERT] = KP_DONTCARE;
	kp.x.pkts[KS_PKT_CAND_EVICT] = KP_DONTCARE;
}

void kp_x_l4_dontcare(void)
{
	kp.x.pkts[KS_PKT_MEMCACHED] = KP_DONTCARE;
	kp.x.pkts[KS_PKT_TCP] = KP_DONTCARE;
	kp.x.pkts[KS_PKT_UDP] = KP_DONTCARE;
}

/* ---- counters of one run ---- */

int kp_counts_read(struct kp_counts *c)
{
	static struct ks_op_stats ops[KS_OP_MAX * 512];
	static __u64 errs[KS_ERR_MAX * 512];
	struct ks_pkt_counters *pc;
	__u32 zero = 0;
	int i, cpu, err;

	memset(c, 0, sizeof(*c));
	if (kp.ncpu > 512)
		return -E2BIG;
	err = percpu_read_n(skel->maps.ks_ops, KS_OP_MAX, sizeof(ops[0]), ops);
	if (err)
		return err;
	err = percpu_read_n(skel->maps.ks_errors, KS_ERR_MAX, sizeof(__u64),
			    errs);
	if (err)
		return err;
	for (i = 0; i < KS_OP_MAX; i++)
		for (cpu = 0; cpu < kp.ncpu; cpu++) {
			const struct ks_op_stats *v = &ops[i * kp.ncpu + cpu];

			c->ops[i].requests += v->requests;
			c->ops[i].keys += v->keys;
			c->ops[i].bytes += v->bytes;
		}
	for (i = 0; i < KS_ERR_MAX; i++)
		for (cpu = 0; cpu < kp.ncpu; cpu++)
			c->err[i] += errs[i * kp.ncpu + cpu];
	pc = percpu_buf(sizeof(*pc));
	if (!pc ||
	    bpf_map_lookup_elem(bpf_map__fd(skel->maps.ks_pkts), &zero, pc))
		return -errno;
	for (cpu = 0; cpu < kp.ncpu; cpu++)
		for (i = 0; i < KS_PKT_MAX; i++)
			c->pkts[i] += pc[cpu].n[i];
	ks_ops_fold_fast(c->ops, c->pkts);
	return 0;
}

void kp_counts_sub(struct kp_counts *d, const struct kp_counts *a,
		   const struct kp_counts *b)
{
	int i;

	for (i = 0; i < KS_OP_MAX; i++) {
		d->ops[i].requests = a->ops[i].requests - b->ops[i].requests;
		d->ops[i].keys = a->ops[i].keys - b->ops[i].keys;
		d->ops[i].bytes = a->ops[i].bytes - b->ops[i].bytes;
	}
	for (i = 0; i < KS_ERR_MAX; i++)
		d->err[i] = a->err[i] - b->err[i];
	for (i = 0; i < KS_PKT_MAX; i++)
		d->pkts[i] = a->pkts[i] - b->pkts[i];
}

/* ---- TCP flows ---- */

void kp_flow_new(struct kp_flow *f, int v6)
{
	static __u32 flows; /* flows handed out in this run */
	__u32 n = flows++, host = n / 40000 + 1;

	memset(f, 0, sizeof(*f));
	pkt_opts_default(&f->o, v6, IPPROTO_TCP);
	f->o.sport = (__u16)(20000 + n % 40000);
	if (v6) { /* 2001:db8::1:x:y */
		f->o.saddr[11] = 1;
		f->o.saddr[12] = (__u8)(host >> 24);
		f->o.saddr[13] = (__u8)(host >> 16);
		f->o.saddr[14] = (__u8)(host >> 8);
		f->o.saddr[15] = (__u8)host;
	} else { /* 198.19.x.y */
		f->o.saddr[0] = 198;
		f->o.saddr[1] = 19;
		f->o.saddr[2] = (__u8)(host >> 8);
		f->o.saddr[3] = (__u8)host;
	}
	f->isn = (n + 1) * 2654435761u;
}

void kp_flow_build(struct pkt *p, const struct kp_flow *f, __u32 off,
		   const void *pay, size_t len, __u8 flags)
{
	struct pkt_opts o = f->o;

	o.tcp_seq = (flags & PKT_TCP_SYN) ? f->isn : f->isn + 1 + off;
	o.tcp_flags = flags;
	kp_build(p, &o, pay, len);
}

void kp_flow_send(const struct kp_flow *f, __u32 off, const void *pay,
		  size_t len, __u8 flags)
{
	static struct pkt p;

	kp_flow_build(&p, f, off, pay, len, flags);
	in_flow = true;
	if (len && f->tc) {
		kp_send_tc(&p);
	} else if (len) {
		kp_send_mc(&p);
	} else if (f->tc) {
		send_to(kp.tc_fd, TC_OK_RC, &p);
		x_pkt_inc(KS_PKT_SEEN);
		remember_source(&p);
	} else {
		kp_send(&p);
	}
	in_flow = false;
}

static bool no_stream(void)
{
	return kp.cfg.flags & KS_CFG_NO_STREAM;
}

void kp_flow_syn(const struct kp_flow *f)
{
	kp_flow_send(f, 0, NULL, 0, PKT_TCP_SYN);
	if (!no_stream())
		x_pkt_inc(KS_PKT_FLOW_NEW);
}

void kp_flow_fin(const struct kp_flow *f, __u32 off)
{
	kp_flow_send(f, off, NULL, 0, PKT_TCP_FIN | PKT_TCP_ACK);
	if (!no_stream())
		x_pkt_inc(KS_PKT_FLOW_END);
}

void kp_flow_rst(const struct kp_flow *f, __u32 off)
{
	kp_flow_send(f, off, NULL, 0, PKT_TCP_RST | PKT_TCP_ACK);
	if (!no_stream())
		x_pkt_inc(KS_PKT_FLOW_END);
}

/* ---- request streams ---- */

void kp_stream_init(struct kp_stream *s)
{
	s->len = 0;
	s->nreq = 0;
	s->nkeys = 0;
}

int kp_stream_add(struct kp_stream *s, int op, const void *req, size_t len)
{
	struct kp_sreq *r;

	if (s->nreq == KP_STREAM_MAX_REQ || s->len + len > KP_STREAM_MAX) {
		kt_failf(__FILE__, __LINE__,
			 "stream full (%u bytes, %d requests)", s->len,
			 s->nreq);
		return -1;
	}
	r = &s->req[s->nreq];
	memcpy(s->b + s->len, req, len);
	r->start = s->len;
	r->end = s->len + (__u32)len;
	r->op = op;
	r->bytes = len;
	r->key0 = (__u32)s->nkeys;
	r->nkeys = 0;
	s->len += (__u32)len;
	return s->nreq++;
}

void kp_stream_add_key(struct kp_stream *s, int r, size_t off, size_t len)
{
	struct kp_sreq *q = &s->req[r];

	if (r < 0 || s->nkeys == KP_STREAM_MAX_KEYS ||
	    q->key0 + q->nkeys != (__u32)s->nkeys) {
		kt_failf(__FILE__, __LINE__,
			 "stream keys: full, or a key of an older request");
		return;
	}
	s->keys[s->nkeys].off = q->start + (__u32)off;
	s->keys[s->nkeys].len = (__u16)len;
	s->nkeys++;
	q->nkeys++;
}

void kp_stream_set_bytes(struct kp_stream *s, int r, __u64 bytes)
{
	if (r >= 0)
		s->req[r].bytes = bytes;
}

int kp_stream_text(struct kp_stream *s, int op, const char *line, int first_key,
		   int nkeys, const void *data, size_t dlen)
{
	static __u8 buf[KP_STREAM_MAX];
	size_t ll = strlen(line), n = ll, i = 0, end;
	int r, tok = 0;

	if (ll + (data ? dlen + 2 : 0) > sizeof(buf))
		return -1;
	memcpy(buf, line, ll);
	if (data) {
		memcpy(buf + n, data, dlen);
		memcpy(buf + n + dlen, "\r\n", 2);
		n += dlen + 2;
	}
	r = kp_stream_add(s, op, buf, n);
	if (r < 0)
		return r;
	/* the line's tokens, up to its "\r\n" or "\n" */
	end = ll;
	while (end && (line[end - 1] == '\n' || line[end - 1] == '\r'))
		end--;
	while (i < end) {
		size_t a;

		while (i < end && line[i] == ' ')
			i++;
		a = i;
		while (i < end && line[i] != ' ')
			i++;
		if (i == a)
			break;
		if (tok >= first_key && (nkeys < 0 || tok < first_key + nkeys))
			kp_stream_add_key(s, r, a, i - a);
		tok++;
	}
	return r;
}

int kp_stream_bin(struct kp_stream *s, int op, __u8 opcode, const void *extras,
		  __u8 extlen, const void *key, __u16 klen, const void *val,
		  __u32 vlen)
{
	static __u8 buf[KP_STREAM_MAX];
	size_t n;
	int r;

	if (24 + (size_t)extlen + klen + vlen > sizeof(buf))
		return -1;
	n = pkt_bin_req(buf, opcode, extras, extlen, key, klen, val, vlen);
	r = kp_stream_add(s, op, buf, n);
	if (r >= 0 && klen)
		kp_stream_add_key(s, r, 24 + (size_t)extlen, klen);
	return r;
}

/* Index of the request holding byte off, or -1. */
static int stream_req_at(const struct kp_stream *s, __u32 off)
{
	int lo = 0, hi = s->nreq - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (off < s->req[mid].start)
			hi = mid - 1;
		else if (off >= s->req[mid].end)
			lo = mid + 1;
		else
			return mid;
	}
	return -1;
}

bool kp_stream_boundary(const struct kp_stream *s, __u32 off)
{
	int r;

	if (off == 0 || off >= s->len)
		return true;
	r = stream_req_at(s, off);
	return r < 0 || s->req[r].start == off;
}

bool kp_stream_inside(const struct kp_stream *s, __u32 off)
{
	int r = off < s->len ? stream_req_at(s, off) : -1;

	return r >= 0 && s->req[r].start < off;
}

void kp_stream_ops(const struct kp_stream *s, struct ks_op_stats *ops)
{
	int i;

	memset(ops, 0, sizeof(*ops) * KS_OP_MAX);
	for (i = 0; i < s->nreq; i++) {
		ops[s->req[i].op].requests++;
		ops[s->req[i].op].keys += s->req[i].nkeys;
		ops[s->req[i].op].bytes += s->req[i].bytes;
	}
}

void kp_x_stream(const struct kp_stream *s)
{
	int i;
	__u32 k;

	for (i = 0; i < s->nreq; i++) {
		const struct kp_sreq *r = &s->req[i];

		kp.x.ops[r->op].requests++;
		kp.x.ops[r->op].bytes += r->bytes;
		for (k = r->key0; k < r->key0 + r->nkeys; k++)
			kp_x_keyn(r->op, s->b + s->keys[k].off, s->keys[k].len);
	}
}

/*
 * Whether a guess starting at off could take the bytes there for a
 * request: the binary magic, or (after spaces and line ends, which a
 * lenient parser may skip) a lowercase word memcached knows as a command,
 * or that today's prefix matcher takes for one, ended by a space or a
 * line end.
 */
static bool looks_like_request(const struct kp_stream *s, __u32 off)
{
	static const char *const words[] = {
		"get",       "gets",      "gat",
		"gats",      "set",       "add",
		"replace",   "append",    "prepend",
		"cas",       "delete",    "incr",
		"decr",      "touch",     "mg",
		"ms",        "md",        "ma",
		"mn",        "me",        "version",
		"verbosity", "stats",     "flush_all",
		"quit",      "shutdown",  "cache_memlimit",
		"slabs",     "lru",       "lru_crawler",
		"watch",     "misbehave", NULL,
	};
	static const char *const prefixes[] = {
		"stat", "vers", "verb", "flus", "quit",   "shut",
		"slab", "lru_", "watc", "misb", "cached", NULL,
	};
	__u32 i = off, a, n;
	int w;

	if (off >= s->len)
		return false;
	if (s->b[off] == 0x80)
		return true;
	while (i < s->len && i < off + 4 &&
	       (s->b[i] == ' ' || s->b[i] == '\r' || s->b[i] == '\n'))
		i++;
	a = i;
	while (i < s->len && i < a + 16 &&
	       ((s->b[i] >= 'a' && s->b[i] <= 'z') || s->b[i] == '_'))
		i++;
	n = i - a;
	if (!n)
		return false;
	for (w = 0; prefixes[w]; w++)
		if (n >= strlen(prefixes[w]) &&
		    !memcmp(s->b + a, prefixes[w], strlen(prefixes[w])))
			return true;
	if (i < s->len && s->b[i] != ' ' && s->b[i] != '\r' && s->b[i] != '\n')
		return false;
	for (w = 0; words[w]; w++)
		if (n == strlen(words[w]) && !memcmp(s->b + a, words[w], n))
			return true;
	return false;
}

const char *kp_order_name(int order)
{
	static const char *const names[] = {
		[KP_INORDER] = "inorder", [KP_DUP] = "dup",
		[KP_OVERLAP] = "overlap", [KP_REORDER] = "reorder",
		[KP_DROP] = "drop",
	};

	return order >= 0 && order < KP_ORDER_MAX ? names[order] : "?";
}

/* Appends [off, off + len) as segments of at most mss bytes. */
static int plan_piece(struct kp_plan *pl, __u32 off, __u32 len, __u32 mss)
{
	while (len) {
		__u32 n = len < mss ? len : mss;

		if (pl->n == KP_MAX_SENDS)
			return -1;
		pl->seg[pl->n].off = off;
		pl->seg[pl->n].len = n;
		pl->n++;
		off += n;
		len -= n;
	}
	return 0;
}

int kp_plan_cuts(struct kp_plan *pl, __u32 len, const __u32 *cuts, int ncuts,
		 int order, __u32 mss)
{
	__u32 a[KP_MAX_PIECES], b[KP_MAX_PIECES];
	int np = ncuts + 1, i, err = 0;

	pl->n = 0;
	if (!mss || mss > KP_SEG_MAX)
		mss = KP_SEG_MAX;
	if (ncuts < 0 || np > KP_MAX_PIECES || !len)
		return -1;
	for (i = 0; i < np; i++) {
		a[i] = i ? cuts[i - 1] : 0;
		b[i] = i < ncuts ? cuts[i] : len;
		if (a[i] >= b[i] || b[i] > len)
			return -1;
	}
	switch (order) {
	case KP_INORDER:
		for (i = 0; i < np; i++)
			err |= plan_piece(pl, a[i], b[i] - a[i], mss);
		break;
	case KP_DUP:
		for (i = 0; i < np; i++) {
			err |= plan_piece(pl, a[i], b[i] - a[i], mss);
			if (i)
				err |= plan_piece(pl, a[i - 1],
						  b[i - 1] - a[i - 1], mss);
		}
		err |= plan_piece(pl, a[np - 1], b[np - 1] - a[np - 1], mss);
		break;
	case KP_OVERLAP:
		for (i = 0; i < np; i++) {
			__u32 k = i ? 1 + a[i] % 5 : 0;

			if (k > a[i])
				k = a[i];
			err |= plan_piece(pl, a[i] - k, b[i] - a[i] + k, mss);
		}
		break;
	case KP_REORDER:
		if (np < 2)
			return -1;
		for (i = 0; i < np - 2; i++)
			err |= plan_piece(pl, a[i], b[i] - a[i], mss);
		err |= plan_piece(pl, a[np - 1], b[np - 1] - a[np - 1], mss);
		err |= plan_piece(pl, a[np - 2], b[np - 2] - a[np - 2], mss);
		break;
	case KP_DROP:
		if (np < 2)
			return -1;
		for (i = 0; i < np; i++)
			if (i != (np == 2 ? 0 : np / 2))
				err |= plan_piece(pl, a[i], b[i] - a[i], mss);
		break;
	default:
		return -1;
	}
	return err ? -1 : 0;
}

/* Offsets of a stream where a guess could see a request that is not one
 * (the start of the word looks_like_request() found), cached per stream. */
static struct {
	const struct kp_stream *s;
	__u32 len;
	int nreq, n;
	__u32 at[256];
} decoys;

static __u32 word_at(const struct kp_stream *s, __u32 d)
{
	while (d < s->len && d < s->len &&
	       (s->b[d] == ' ' || s->b[d] == '\r' || s->b[d] == '\n'))
		d++;
	return d;
}

static void find_decoys(const struct kp_stream *s)
{
	__u32 d;

	if (decoys.s == s && decoys.len == s->len && decoys.nreq == s->nreq)
		return;
	decoys.s = s;
	decoys.len = s->len;
	decoys.nreq = s->nreq;
	decoys.n = 0;
	for (d = 1; d < s->len; d++) {
		__u32 w;

		if (kp_stream_boundary(s, d) || !looks_like_request(s, d))
			continue;
		w = s->b[d] == 0x80 ? d : word_at(s, d);
		if (decoys.n && decoys.at[decoys.n - 1] == w)
			continue;
		if (decoys.n == (int)(sizeof(decoys.at) / sizeof(decoys.at[0])))
			break;
		decoys.at[decoys.n++] = w;
	}
}

/* The phantom request a guess would make of the decoy at w: a one-line
 * command with its key as the second token; else unknown. */
static void add_phantom(const struct kp_stream *s, __u32 w, struct kp_sim *sim)
{
	static const struct {
		const char *w;
		int op;
	} known[] = {
		{ "get", KS_OP_GET }, { "gets", KS_OP_GETS },
		{ "mg", KS_OP_MG },   { "md", KS_OP_MD },
		{ "ma", KS_OP_MA },   { "delete", KS_OP_DELETE },
		{ "mn", KS_OP_MN },
	};
	__u32 e = w, k, ke;
	size_t i;
	int j;

	for (j = 0; j < sim->nphantom; j++)
		if (sim->phantoms[j].at == w)
			return;
	while (e < s->len && s->b[e] >= 'a' && s->b[e] <= 'z')
		e++;
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (e - w == strlen(known[i].w) &&
		    !memcmp(s->b + w, known[i].w, e - w))
			break;
	if (i == sizeof(known) / sizeof(known[0]) ||
	    sim->nphantom ==
		    (int)(sizeof(sim->phantoms) / sizeof(sim->phantoms[0]))) {
		sim->phantom = true;
		return;
	}
	k = e;
	while (k < s->len && s->b[k] == ' ')
		k++;
	ke = k;
	while (ke < s->len && s->b[ke] != ' ' && s->b[ke] != '\r' &&
	       s->b[ke] != '\n')
		ke++;
	e = ke;
	while (e < s->len && s->b[e] != '\n')
		e++;
	j = sim->nphantom++;
	sim->phantoms[j].at = w;
	sim->phantoms[j].op = known[i].op;
	sim->phantoms[j].bytes = e + 1 - w;
	sim->phantoms[j].key_off = k;
	sim->phantoms[j].key_len = known[i].op == KS_OP_MN ? 0
							   : (__u16)(ke - k);
}

/* Decoys in [a, b): bytes a guess may parse. */
static void scan_decoys(const struct kp_stream *s, __u32 a, __u32 b,
			struct kp_sim *sim)
{
	int i;

	find_decoys(s);
	for (i = 0; i < decoys.n; i++)
		if (decoys.at[i] + 2 >= a && decoys.at[i] < b)
			add_phantom(s, decoys.at[i], sim);
}

/* Segment i of pl brings a byte no earlier segment did. */
static bool covers_unseen(const struct kp_plan *pl, int i)
{
	__u32 off = pl->seg[i].off, end = off + pl->seg[i].len, b;
	int j;

	for (b = off; b < end; b++) {
		for (j = 0; j < i; j++)
			if (pl->seg[j].off <= b &&
			    b < pl->seg[j].off + pl->seg[j].len)
				break;
		if (j == i)
			return true;
	}
	return false;
}

/* What the spec says each segment of pl is (kp_sim). */
static void simulate(const struct kp_stream *s, const struct kp_plan *pl,
		     struct kp_sim *sim)
{
	__u32 next = 0, sure_a = 0;
	bool sure = true;
	int i;

	memset(sim, 0, sizeof(*sim));
	sim->cont_known = true;
	for (i = 0; i < pl->n; i++) {
		__u32 off = pl->seg[i].off, end = off + pl->seg[i].len;

		sim->segs++;
		if (end <= next) {
			sim->dup++;
			if (covers_unseen(pl, i)) {
				sim->late++;
				if (!kp_stream_boundary(s, off))
					scan_decoys(s, off, end, sim);
			}
			continue;
		}
		if (off < next) {
			sim->overlap++;
			if (sim->cont_known && kp_stream_inside(s, next))
				sim->cont++;
		} else if (off > next) {
			sim->gap++;
			sim->cont_known = false;
			if (sure && next > sure_a)
				sim->sure[sim->nsure++] =
					(typeof(sim->sure[0])){ sure_a, next };
			sure = kp_stream_boundary(s, off);
			sure_a = off;
			/* unsynced until it finds a boundary: a guess may
			 * take any decoy from here on */
			if (!sure)
				scan_decoys(s, off, s->len, sim);
		} else if (sim->cont_known && kp_stream_inside(s, off)) {
			sim->cont++;
		}
		next = end;
	}
	if (sure && next > sure_a)
		sim->sure[sim->nsure++] = (typeof(sim->sure[0])){ sure_a,
								  next };
}

void kp_stream_send(const struct kp_flow *f, const struct kp_stream *s,
		    const struct kp_plan *pl, unsigned flags,
		    struct kp_sim *sim)
{
	int i;

	simulate(s, pl, sim);
	if (flags & KP_SEND_SYN)
		kp_flow_syn(f);
	for (i = 0; i < pl->n; i++) {
		__u8 fl = PKT_TCP_PSH | PKT_TCP_ACK;
		bool last = i == pl->n - 1;

		if (last && (flags & KP_SEND_FIN_LAST)) {
			fl |= PKT_TCP_FIN;
			if (!no_stream())
				x_pkt_inc(KS_PKT_FLOW_END);
		}
		kp_flow_send(f, pl->seg[i].off, s->b + pl->seg[i].off,
			     pl->seg[i].len, fl);
	}
	if (flags & KP_SEND_FIN)
		kp_flow_fin(f, s->len);
	if (flags & KP_SEND_RST)
		kp_flow_rst(f, s->len);
}

/* ---- observing a run ---- */

static struct kp_counts obs_before;

void kp_obs_begin(void)
{
	int err;

	drain_events();
	err = kp_counts_read(&obs_before);
	if (err)
		kt_failf(__FILE__, __LINE__, "read counters: %s",
			 strerror(-err));
}

void kp_obs_end(struct kp_obs *o, const struct kp_flow *f)
{
	struct kp_counts now;
	__u8 want[16] = { 0 };
	int err, i;

	err = kp_counts_read(&now);
	if (err)
		kt_failf(__FILE__, __LINE__, "read counters: %s",
			 strerror(-err));
	kp_counts_sub(&o->d, &now, &obs_before);
	if (f->o.ipv6) {
		memcpy(want, f->o.saddr, 16);
	} else {
		want[10] = want[11] = 0xff;
		memcpy(want + 12, f->o.saddr, 4);
	}
	o->nev = kp_read_events();
	o->bad_src = 0;
	for (i = 0; i < o->nev; i++) {
		const struct ks_event *g = &kp.got[i];
		struct kp_obs_ev *e = &o->ev[i];

		e->hash = g->hash;
		e->op = g->op;
		e->cls = g->cls;
		e->len = g->len > KS_KEY_BUF ? KS_KEY_BUF : g->len;
		memcpy(e->key, g->key, e->len);
		if (memcmp(g->saddr, want, 16) || g->sport != f->o.sport ||
		    g->proto != IPPROTO_TCP)
			o->bad_src++;
	}
}

/* ---- oracle and cases ---- */

static bool ev_eq(const struct kp_obs_ev *a, const struct kp_obs_ev *b)
{
	return a->op == b->op && a->cls == b->cls && a->len == b->len &&
	       a->hash == b->hash && !memcmp(a->key, b->key, a->len);
}

static void ev_of_key(struct kp_obs_ev *e, const struct kp_stream *s, int op,
		      const struct kp_skey *k)
{
	memset(e, 0, sizeof(*e));
	e->op = (__u8)op;
	e->cls = (__u8)ks_op_class((__u32)op);
	e->len = k->len;
	memcpy(e->key, s->b + k->off, k->len);
	e->hash = kp_hash(e->key, e->len);
}

#define SFAIL(...)                                                             \
	do {                                                                   \
		kp_failctx(ctx, __LINE__, __VA_ARGS__);                        \
		ok = false;                                                    \
	} while (0)

/* Events of the oracle: the stream's keys in order. */
static bool check_oracle(const char *ctx, const struct kp_stream *s,
			 const struct kp_obs *o)
{
	struct ks_op_stats want[KS_OP_MAX];
	struct kp_obs_ev e;
	bool ok = true;
	int i, n = 0;

	kp_stream_ops(s, want);
	for (i = 0; i < KS_OP_MAX; i++)
		if (memcmp(&want[i], &o->d.ops[i], sizeof(want[i])))
			SFAIL("op %s: req/keys/bytes %llu/%llu/%llu, stream has %llu/%llu/%llu",
			      ks_op_name(i),
			      (unsigned long long)o->d.ops[i].requests,
			      (unsigned long long)o->d.ops[i].keys,
			      (unsigned long long)o->d.ops[i].bytes,
			      (unsigned long long)want[i].requests,
			      (unsigned long long)want[i].keys,
			      (unsigned long long)want[i].bytes);
	for (i = 0; i < KS_ERR_MAX; i++)
		if (o->d.err[i])
			SFAIL("err %s = %llu, want 0", ks_reason_name(i),
			      (unsigned long long)o->d.err[i]);
	for (i = 0; i < s->nreq; i++) {
		const struct kp_sreq *r = &s->req[i];
		__u32 k;

		for (k = r->key0; k < r->key0 + r->nkeys; k++, n++) {
			ev_of_key(&e, s, r->op, &s->keys[k]);
			if (n >= o->nev || !ev_eq(&e, &o->ev[n])) {
				SFAIL("event %d: '%.*s' (op %s), want '%.*s' (op %s)",
				      n,
				      n < o->nev ? (o->ev[n].len > 40
							    ? 40
							    : o->ev[n].len)
						 : 0,
				      n < o->nev ? (const char *)o->ev[n].key
						 : "",
				      n < o->nev ? kp_op_name(o->ev[n].op)
						 : "none",
				      e.len > 40 ? 40 : e.len, e.key,
				      kp_op_name(r->op));
				return false;
			}
		}
	}
	if (n != o->nev)
		SFAIL("%d events, the stream has %d keys", o->nev, n);
	if (o->bad_src)
		SFAIL("%d events name another source than the flow's",
		      o->bad_src);
	return ok;
}

bool kp_stream_oracle(const struct kp_stream *s, int v6, struct kp_obs *o)
{
	struct kp_flow f;
	struct kp_plan pl;
	struct kp_sim sim;
	char ctx[64];

	snprintf(ctx, sizeof(ctx), "oracle%s", v6 ? " v6" : "");
	if (!kp.cfg.trace)
		kt_failf(__FILE__, __LINE__, "kp_stream_oracle needs trace on");
	kp_flow_new(&f, v6);
	if (kp_plan_cuts(&pl, s->len, NULL, 0, KP_INORDER,
			 s->len <= KP_SEG_MAX ? KP_SEG_MAX : KP_MSS)) {
		kt_failf(__FILE__, __LINE__,
			 "oracle: stream of %u bytes does not fit a plan",
			 s->len);
		return false;
	}
	kp_obs_begin();
	kp_stream_send(&f, s, &pl, KP_SEND_SYN | KP_SEND_FIN, &sim);
	kp_obs_end(o, &f);
	kp_x_stream(s);
	kp_x_pkt(KS_PKT_FLOW_CONT, sim.cont);
	return check_oracle(ctx, s, o);
}

/* Packet counters of a run against what the spec makes of the plan. */
static bool check_flow_ctrs(const char *ctx, const struct kp_obs *g,
			    const struct kp_sim *sim, unsigned flags, int order)
{
	long long want[KS_PKT_MAX];
	bool ok = true, exact = order <= KP_OVERLAP;
	size_t i;

	for (i = 0; i < KS_PKT_MAX; i++)
		want[i] = KP_DONTCARE;
	want[KS_PKT_MEMCACHED] = want[KS_PKT_TCP] = sim->segs;
	want[KS_PKT_UDP] = 0;
	want[KS_PKT_FLOW_NEW] = (flags & KP_SEND_SYN) ? 1 : 0;
	want[KS_PKT_FLOW_END] = (flags &
				 (KP_SEND_FIN | KP_SEND_FIN_LAST | KP_SEND_RST))
					? 1
					: 0;
	/* late bytes of a gap: FLOW_DUP, or parsed as a guess */
	if (sim->late) {
		__u64 d = g->d.pkts[KS_PKT_FLOW_DUP];
		__u64 fl = g->d.pkts[KS_PKT_FLOW_FILL];

		if (d + fl != (__u64)sim->dup || fl > (__u64)sim->late)
			SFAIL("pkt flow_dup +%llu flow_fill +%llu, want +%d together, at most %d of them fill (late bytes of a gap)",
			      (unsigned long long)d, (unsigned long long)fl,
			      sim->dup, sim->late);
	} else {
		want[KS_PKT_FLOW_DUP] = sim->dup;
		want[KS_PKT_FLOW_FILL] = 0;
	}
	want[KS_PKT_FLOW_OVERLAP] = sim->overlap;
	want[KS_PKT_RESYNC_GAP] = sim->gap;
	want[KS_PKT_RESYNC_UNKNOWN] = 0;
	want[KS_PKT_TRACE_DROP] = 0;
	want[KS_PKT_SAMPLED] = g->nev;
	if (exact) {
		want[KS_PKT_RESYNC_CARRY] = want[KS_PKT_RESYNC_LOST] = 0;
		want[KS_PKT_HOT_DISARM] = 0;
	}
	if (sim->cont_known && order != KP_OVERLAP)
		want[KS_PKT_FLOW_CONT] = sim->cont;
	for (i = 0; i < KS_PKT_MAX; i++)
		if (want[i] != KP_DONTCARE && g->d.pkts[i] != (__u64)want[i])
			SFAIL("pkt %s +%llu, want +%lld", ks_pkt_name((int)i),
			      (unsigned long long)g->d.pkts[i], want[i]);
	if (sim->gap && !g->d.pkts[KS_PKT_HOT_DISARM])
		SFAIL("%d gaps and pkt hot_disarm +0", sim->gap);
	return ok;
}

static bool check_exact(const char *ctx, const struct kp_obs *g,
			const struct kp_obs *o)
{
	bool ok = true;
	int i;

	for (i = 0; i < KS_OP_MAX; i++)
		if (memcmp(&g->d.ops[i], &o->d.ops[i], sizeof(o->d.ops[i])))
			SFAIL("op %s: req/keys/bytes %llu/%llu/%llu, unsegmented %llu/%llu/%llu",
			      ks_op_name(i),
			      (unsigned long long)g->d.ops[i].requests,
			      (unsigned long long)g->d.ops[i].keys,
			      (unsigned long long)g->d.ops[i].bytes,
			      (unsigned long long)o->d.ops[i].requests,
			      (unsigned long long)o->d.ops[i].keys,
			      (unsigned long long)o->d.ops[i].bytes);
	for (i = 0; i < KS_ERR_MAX; i++)
		if (g->d.err[i] != o->d.err[i])
			SFAIL("err %s +%llu, unsegmented +%llu",
			      ks_reason_name(i),
			      (unsigned long long)g->d.err[i],
			      (unsigned long long)o->d.err[i]);
	for (i = 0; i < g->nev && i < o->nev; i++)
		if (!ev_eq(&g->ev[i], &o->ev[i])) {
			SFAIL("sampled key %d: '%.*s' (op %s len %u), unsegmented '%.*s' (op %s len %u)",
			      i, g->ev[i].len > 40 ? 40 : g->ev[i].len,
			      g->ev[i].key, kp_op_name(g->ev[i].op),
			      g->ev[i].len,
			      o->ev[i].len > 40 ? 40 : o->ev[i].len,
			      o->ev[i].key, kp_op_name(o->ev[i].op),
			      o->ev[i].len);
			break;
		}
	if (g->nev != o->nev)
		SFAIL("%d keys sampled, unsegmented %d", g->nev, o->nev);
	if (g->bad_src)
		SFAIL("%d sampled keys name another source than the flow's",
		      g->bad_src);
	return ok;
}

/* Finds an unused event equal to e in list; marks it used. */
static bool ev_take(const struct kp_obs_ev *e, const struct kp_obs_ev *list,
		    int n, bool *used)
{
	int i;

	for (i = 0; i < n; i++)
		if (!used[i] && ev_eq(e, &list[i])) {
			used[i] = true;
			return true;
		}
	return false;
}

static bool req_sure(const struct kp_sim *sim, const struct kp_sreq *r)
{
	int i;

	for (i = 0; i < sim->nsure; i++)
		if (sim->sure[i].a <= r->start && r->end <= sim->sure[i].b)
			return true;
	return false;
}

static bool check_bounded(const char *ctx, const struct kp_stream *s,
			  const struct kp_sim *sim, const struct kp_obs *g,
			  const struct kp_obs *o)
{
	static bool used[KP_MAX_EVENTS + 16];
	struct ks_op_stats lo[KS_OP_MAX];
	struct kp_obs_ev e;
	bool ok = true;
	int i;

	/* nothing counted twice (a phantom guess aside) */
	if (!sim->phantom) {
		static struct kp_obs_ev pool[KP_MAX_EVENTS + 16];
		struct ks_op_stats up[KS_OP_MAX];
		int np = o->nev, j;

		memcpy(up, o->d.ops, sizeof(up));
		memcpy(pool, o->ev, sizeof(o->ev[0]) * (size_t)o->nev);
		for (j = 0; j < sim->nphantom; j++) {
			struct kp_skey k = { sim->phantoms[j].key_off,
					     sim->phantoms[j].key_len };
			int op = sim->phantoms[j].op;

			up[op].requests++;
			up[op].bytes += sim->phantoms[j].bytes;
			if (!k.len)
				continue;
			up[op].keys++;
			ev_of_key(&pool[np++], s, op, &k);
		}
		for (i = 0; i < KS_OP_MAX; i++) {
			const struct ks_op_stats *a = &g->d.ops[i], *b = &up[i];

			if (a->requests > b->requests || a->keys > b->keys ||
			    a->bytes > b->bytes)
				SFAIL("op %s: req/keys/bytes %llu/%llu/%llu, more than unsegmented (and phantoms) %llu/%llu/%llu",
				      ks_op_name(i),
				      (unsigned long long)a->requests,
				      (unsigned long long)a->keys,
				      (unsigned long long)a->bytes,
				      (unsigned long long)b->requests,
				      (unsigned long long)b->keys,
				      (unsigned long long)b->bytes);
		}
		memset(used, 0, sizeof(used));
		for (i = 0; i < g->nev; i++)
			if (!ev_take(&g->ev[i], pool, np, used)) {
				SFAIL("sampled key '%.*s' (op %s len %u) not sampled unsegmented, or more often",
				      g->ev[i].len > 40 ? 40 : g->ev[i].len,
				      g->ev[i].key, kp_op_name(g->ev[i].op),
				      g->ev[i].len);
				break;
			}
	}
	/* every request parsed for sure is counted, with its keys */
	memset(lo, 0, sizeof(lo));
	memset(used, 0, sizeof(used));
	for (i = 0; i < s->nreq; i++) {
		const struct kp_sreq *r = &s->req[i];
		__u32 k;

		if (!req_sure(sim, r))
			continue;
		lo[r->op].requests++;
		lo[r->op].keys += r->nkeys;
		lo[r->op].bytes += r->bytes;
		for (k = r->key0; k < r->key0 + r->nkeys; k++) {
			ev_of_key(&e, s, r->op, &s->keys[k]);
			if (!ev_take(&e, g->ev, g->nev, used)) {
				SFAIL("key '%.*s' of request %d [%u, %u), parsed in order, not sampled",
				      e.len > 40 ? 40 : e.len, e.key, i,
				      r->start, r->end);
				break;
			}
		}
	}
	for (i = 0; i < KS_OP_MAX; i++) {
		const struct ks_op_stats *a = &g->d.ops[i];

		if (a->requests < lo[i].requests || a->keys < lo[i].keys ||
		    a->bytes < lo[i].bytes)
			SFAIL("op %s: req/keys/bytes %llu/%llu/%llu, fewer than the %llu/%llu/%llu parsed in order",
			      ks_op_name(i), (unsigned long long)a->requests,
			      (unsigned long long)a->keys,
			      (unsigned long long)a->bytes,
			      (unsigned long long)lo[i].requests,
			      (unsigned long long)lo[i].keys,
			      (unsigned long long)lo[i].bytes);
	}
	if (g->bad_src)
		SFAIL("%d sampled keys name another source than the flow's",
		      g->bad_src);
	return ok;
}

int kp_stream_case(const char *what, const struct kp_stream *s,
		   const struct kp_obs *oracle, int v6, const __u32 *cuts,
		   int ncuts, int order, __u32 mss, unsigned flags)
{
	static struct kp_obs got;
	struct kp_flow f;
	struct kp_plan pl;
	struct kp_sim sim;
	char ctx[160];
	size_t n;
	int i, bad = 0;

	n = (size_t)snprintf(ctx, sizeof(ctx), "%s %s%s cuts", what,
			     kp_order_name(order), v6 ? " v6" : "");
	for (i = 0; i < ncuts && n < sizeof(ctx) - 12; i++)
		n += (size_t)snprintf(ctx + n, sizeof(ctx) - n, "%s%u",
				      i ? "," : " ", cuts[i]);
	if (kp_plan_cuts(&pl, s->len, cuts, ncuts, order, mss)) {
		kp_failctx(ctx, __LINE__, "no plan for these cuts");
		return KP_CASE_COUNTS;
	}
	kp_tally.runs++;
	kp_flow_new(&f, v6);
	f.tc = !!(flags & KP_SEND_TC);
	kp_obs_begin();
	kp_stream_send(&f, s, &pl, flags, &sim);
	kp_obs_end(&got, &f);
	/* counts first: they are what a failing run is about */
	kp_last_fail[0] = 0;
	if (!(order <= KP_OVERLAP
		      ? check_exact(ctx, &got, oracle)
		      : check_bounded(ctx, s, &sim, &got, oracle))) {
		bad |= KP_CASE_COUNTS;
		if (!kp_tally.bad_counts++)
			memcpy(kp_tally.first_counts, kp_last_fail,
			       sizeof(kp_last_fail));
	}
	kp_last_fail[0] = 0;
	if (!check_flow_ctrs(ctx, &got, &sim, flags, order)) {
		bad |= KP_CASE_FLOW;
		if (!kp_tally.bad_flow++)
			memcpy(kp_tally.first_flow, kp_last_fail,
			       sizeof(kp_last_fail));
	}
	if (order <= KP_OVERLAP) {
		kp_x_stream(s);
		if (order == KP_OVERLAP)
			kp_x_pkt_dontcare(KS_PKT_FLOW_CONT);
		else
			kp_x_pkt(KS_PKT_FLOW_CONT, sim.cont);
	} else {
		kp_x_pkt_dontcare(KS_PKT_FLOW_CONT);
		kp_x_pkt_dontcare(KS_PKT_HOT_DISARM);
		kp_x_pkt_dontcare(KS_PKT_RESYNC_CARRY);
		kp_x_pkt_dontcare(KS_PKT_RESYNC_LOST);
	}
	if (sim.late) {
		kp_x_pkt_dontcare(KS_PKT_FLOW_DUP);
		kp_x_pkt_dontcare(KS_PKT_FLOW_FILL);
	}
	kp_x_pkt(KS_PKT_FLOW_DUP, sim.dup);
	kp_x_pkt(KS_PKT_FLOW_OVERLAP, sim.overlap);
	kp_x_pkt(KS_PKT_RESYNC_GAP, sim.gap);
	return bad;
}
