// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dfuzz_dp.c - the datapath side of the differential fuzzer: the keysteer
 * object loaded as tests/prog/kp.c loads it (its skeleton, every pin path
 * cleared so nothing lands in /sys/fs/bpf), inputs framed with the test
 * packet builder and run with BPF_PROG_TEST_RUN, and what each run counted
 * read back as deltas of ks_ops, ks_errors and ks_pkts plus the keys it
 * traced into ks_events, or (the sample log mode, fz_dp_open's slog) the
 * records it appended to the pinned CPU's sample log, drained after each
 * run as the agent drains them.
 *
 * Maps are not reset between runs: the per-CPU window keeps the bytes of
 * earlier packets, as it does in production, so a parser that reads a
 * stale byte shows up as a mismatch.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "keysteer.skel.h"
#include "core/estimate.h"
#include "dp/load_private.h"
#include "pkt.h"
#include "dfuzz.h"

#define XDP_PASS_RC 2           /* enum xdp_action */
#define TC_OK_RC    0xffffffffu /* TC_ACT_UNSPEC: the filters after ours run */

static struct keysteer_bpf *skel;
static struct ring_buffer *rb;
static int ncpu;
static struct fz_dp *cur; /* the run whose events are being read */

/* Totals after the last run, to turn the per-CPU sums into deltas. */
static struct ks_op_stats last_ops[KS_OP_MAX];
static __u64 last_err[KS_ERR_MAX];
static __u64 last_pkts[KS_PKT_MAX];
static void *rowbuf; /* one batch of per-CPU values */
static __u32
	keys_0_n[64]; /* 0..63: keys of a batch lookup (KS_OP_MAX, KS_ERR_MAX) */
/* The sampling countdown in the pinned CPU's ks_scratch: its offset from
 * the object's BTF (the struct is the datapath's alone), the CPU. */
static __u32 cd_off;
static int cd_cpu;
static void *scratch_buf;
/* The sample log mode: KS_CFG_SLOG on and tracing off, so sampled keys
 * reach the pinned CPU's log (ks_slog) by every path that logs, the
 * express path's own sampling included (it samples only while nothing
 * is traced); slog_at is where the next record will be. */
static bool slog_on;
static __u32 slog_n; /* the rate each record must carry */
static __u64 slog_at;

static int on_event(void *ctx, void *data, size_t size)
{
	const struct ks_event *ev = data;
	struct fz_key *k;

	(void)ctx;
	if (!cur || cur->nkeys >= FZ_MAX_EVENTS)
		return 0;
	if (size != sizeof(*ev)) {
		cur->event_size_bad = true;
		return 0;
	}
	k = &cur->keys[cur->nkeys++];
	k->op = ev->op;
	k->cls = ev->cls;
	k->proto = ev->proto;
	k->len = ev->len;
	k->sport = ev->sport;
	k->hash = ev->hash;
	memcpy(k->saddr, ev->saddr, sizeof(k->saddr));
	memcpy(k->key, ev->key, sizeof(k->key));
	return 0;
}

/* Sums of the first n entries of a per-CPU map of value size vsz, as u64
 * words (vsz a multiple of 8): one batch lookup. */
static int read_percpu(struct bpf_map *m, __u32 n, size_t vsz, __u64 *sum)
{
	LIBBPF_OPTS(bpf_map_batch_opts, bo, .elem_flags = 0, .flags = 0);
	size_t words = vsz / 8, stride = vsz * (size_t)ncpu, i, c, w;
	__u32 out = 0, count = n;
	int fd = bpf_map__fd(m);

	if (bpf_map_lookup_batch(fd, NULL, &out, keys_0_n, rowbuf, &count,
				 &bo) &&
	    errno != ENOENT)
		return -errno;
	if (count != n)
		return -EIO;
	for (i = 0; i < n; i++)
		for (w = 0; w < words; w++) {
			__u64 s = 0;

			for (c = 0; c < (size_t)ncpu; c++)
				s += ((__u64 *)((__u8 *)rowbuf + i * stride +
						c * vsz))[w];
			sum[i * words + w] = s;
		}
	return 0;
}

/* The pinned CPU's countdown as the datapath stores it. */
static int read_countdown(__u32 *cd)
{
	size_t vsz = ks_percpu_stride(
		bpf_map__value_size(skel->maps.ks_scratch));
	__u32 zero = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.ks_scratch), &zero,
				scratch_buf))
		return -errno;
	memcpy(cd, (__u8 *)scratch_buf + (size_t)cd_cpu * vsz + cd_off,
	       sizeof(*cd));
	return 0;
}

/* Where ks_scratch.countdown lies, from the object's BTF. */
static int find_countdown(void)
{
	const struct btf *btf = bpf_object__btf(skel->obj);
	const struct btf_member *m;
	const struct btf_type *t;
	__s32 id;
	int i;

	id = btf ? btf__find_by_name_kind(btf, "ks_scratch", BTF_KIND_STRUCT)
		 : -ENOENT;
	if (id < 0)
		return -ENOENT;
	t = btf__type_by_id(btf, id);
	m = btf_members(t);
	for (i = 0; i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off),
			    "countdown")) {
			cd_off = btf_member_bit_offset(t, i) / 8;
			return 0;
		}
	return -ENOENT;
}

static int read_totals(struct ks_op_stats *ops, __u64 *err, __u64 *pkts)
{
	int e;

	e = read_percpu(skel->maps.ks_ops, KS_OP_MAX, sizeof(*ops),
			(__u64 *)ops);
	if (!e)
		e = read_percpu(skel->maps.ks_errors, KS_ERR_MAX, 8, err);
	if (!e)
		e = read_percpu(skel->maps.ks_pkts, 1,
				sizeof(struct ks_pkt_counters), pkts);
	/* the reference counts every get in ops: the agent's totals */
	if (!e)
		ks_ops_fold_fast(ops, pkts);
	return e;
}

static int pin_cpu(void)
{
	int cpu = sched_getcpu();
	cpu_set_t set;

	cd_cpu = cpu < 0 ? 0 : cpu;
	CPU_ZERO(&set);
	CPU_SET(cpu < 0 ? 0 : cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

int fz_dp_open(__u32 sample_n, bool slog)
{
	struct ks_config cfg = { .sample_n = sample_n,
				 .trace = !slog,
				 .flags = slog ? KS_CFG_SLOG : 0 };
	__u32 zero = 0, i;
	int err;

	ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		return -EINVAL;
	/* one CPU: its window and countdown are the ones every run uses */
	err = pin_cpu();
	if (err)
		return err;
	for (i = 0; i < sizeof(keys_0_n) / sizeof(keys_0_n[0]); i++)
		keys_0_n[i] = i;
	rowbuf = calloc(KS_OP_MAX, sizeof(struct ks_pkt_counters) * ncpu);
	if (!rowbuf)
		return -ENOMEM;
	/* fresh maps, no pins */
	skel = ks_load_private(0, &err);
	if (!skel) {
		fprintf(stderr, "dfuzz: load: %s\n", strerror(-err));
		return err;
	}
	scratch_buf = calloc(ncpu, ks_percpu_stride(bpf_map__value_size(
					   skel->maps.ks_scratch)));
	if (!scratch_buf)
		return -ENOMEM;
	err = find_countdown();
	if (err) {
		fprintf(stderr, "dfuzz: no ks_scratch.countdown in the BTF\n");
		return err;
	}
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.ks_config), &zero, &cfg,
				BPF_ANY))
		return -errno;
	rb = ring_buffer__new(bpf_map__fd(skel->maps.ks_events), on_event, NULL,
			      NULL);
	if (!rb)
		return -errno;
	slog_on = slog;
	slog_n = sample_n;
	slog_at = 0;
	return read_totals(last_ops, last_err, last_pkts);
}

void fz_dp_close(void)
{
	ring_buffer__free(rb);
	rb = NULL;
	keysteer_bpf__destroy(skel);
	skel = NULL;
	free(rowbuf);
	rowbuf = NULL;
	free(scratch_buf);
	scratch_buf = NULL;
}

/* A source address no earlier input used: 10.x.y.z or 2001:db8::a:x:y:z
 * (a lone TCP segment must be a flow of its own). */
static void fresh_source(int v6, __u8 raw[16], __u8 mapped[16])
{
	static __u32 n;
	__u32 k = ++n;

	memset(raw, 0, 16);
	memset(mapped, 0, 16);
	if (v6) {
		raw[0] = 0x20, raw[1] = 0x01, raw[2] = 0x0d, raw[3] = 0xb8;
		raw[11] = 0x0a;
		raw[12] = (__u8)(k >> 24), raw[13] = (__u8)(k >> 16);
		raw[14] = (__u8)(k >> 8), raw[15] = (__u8)k;
		memcpy(mapped, raw, 16);
		return;
	}
	raw[0] = 10, raw[1] = (__u8)(k >> 16), raw[2] = (__u8)(k >> 8);
	raw[3] = (__u8)k;
	mapped[10] = mapped[11] = 0xff;
	memcpy(mapped + 12, raw, 4);
}

/* Frames in (with the given TCP seq/flags and source) into p. */
static int frame_build(const struct fz_input *in, struct pkt *p,
		       const __u8 *saddr, __u32 seq, __u8 flags)
{
	bool v6 = in->frame == FZ_TCP6 || in->frame == FZ_UDP6;
	struct pkt_opts o;
	int i;

	pkt_opts_default(&o, v6, fz_is_tcp(in) ? IPPROTO_TCP : IPPROTO_UDP);
	o.nvlan = in->nvlan;
	for (i = 0; i < in->nvlan; i++)
		o.vlan[i].tpid = i == 0 && in->nvlan == 2 ? PKT_ETH_P_8021AD
							  : PKT_ETH_P_8021Q;
	if (!v6)
		o.ip4_opt_words = in->l3_words;
	if (fz_is_tcp(in)) {
		o.tcp_opt_words = in->l4_words;
		o.tcp_seq = seq;
		o.tcp_flags = flags;
	}
	if (saddr)
		memcpy(o.saddr, saddr, v6 ? 16 : 4);
	o.sport = in->sport;
	if (pkt_build(p, &o, in->b, in->len))
		return -1;
	/* a request's worth of junk that only a parser reading past the IP
	 * length would see */
	for (i = 0; i < in->pad && p->len < PKT_MAX; i++)
		p->b[p->len++] = (__u8) "get padding\r\n"[i % 13];
	return 0;
}

int fz_frame_build(const struct fz_input *in, struct pkt *p)
{
	return frame_build(in, p, NULL, 1000,
			   PKT_TCP_PSH | PKT_TCP_ACK | PKT_TCP_FIN);
}

/*
 * The records the run appended to the pinned CPU's sample log, as keys of
 * out (op unknown: KS_OP_MAX; class, length, bytes, hash from the record;
 * a record whose seq or rate is not the configuration's marks the run
 * slog_bad), then the log drained: tail moved up to head.
 */
static int slog_drain(struct fz_dp *out)
{
	__u32 cpu = (__u32)cd_cpu, idx;
	struct ks_slog_pos pos;
	struct ks_slog_rec r;
	struct fz_key *k;

	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.ks_slog_pos), &cpu,
				&pos))
		return -errno;
	if (pos.head < slog_at || pos.head - slog_at > KS_SLOG_RECS) {
		out->slog_bad = true; /* a head that went back, or lapped */
		slog_at = pos.head;
	}
	for (; slog_at < pos.head; slog_at++) {
		idx = cpu * KS_SLOG_RECS + (__u32)(slog_at & KS_SLOG_MASK);
		if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.ks_slog), &idx,
					&r))
			return -errno;
		if (r.seq != 0 || r.n != slog_n || r.pad || !r.len ||
		    r.len > KS_SLOG_KEY)
			out->slog_bad = true;
		if (out->nkeys >= FZ_MAX_EVENTS)
			continue;
		k = &out->keys[out->nkeys++];
		memset(k, 0, sizeof(*k));
		k->op = KS_OP_MAX;
		k->cls = r.cls;
		k->len = r.len;
		k->hash = r.hash;
		memcpy(k->key, r.key, sizeof(r.key));
	}
	pos.tail = pos.head;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.ks_slog_pos), &cpu, &pos,
				BPF_ANY))
		return -errno;
	return 0;
}

/* Runs frame p and adds what it counted and traced to out. */
static void run_frame(const struct pkt *p, bool tc, struct fz_dp *out)
{
	static __u8 back[PKT_MAX + 512];
	struct ks_op_stats ops[KS_OP_MAX];
	__u64 err[KS_ERR_MAX], pkts[KS_PKT_MAX];
	int fd = tc ? bpf_program__fd(skel->progs.ks_tc_ingress)
		    : bpf_program__fd(skel->progs.ks_ingress);
	LIBBPF_OPTS(bpf_test_run_opts, o, .repeat = 1);
	int i, e;

	if (!out->cd_read) {
		e = read_countdown(&out->cd_before);
		if (e) {
			out->run_err = e;
			return;
		}
		out->cd_read = true;
	}
	o.data_in = p->b;
	o.data_size_in = p->len;
	o.data_out = back;
	o.data_size_out = sizeof(back);
	e = bpf_prog_test_run_opts(fd, &o);
	if (e && !out->run_err)
		out->run_err = e < 0 ? e : -e;
	out->verdict = o.retval;
	if (o.data_size_out != p->len || memcmp(back, p->b, p->len))
		out->changed = true;
	if (!e && out->verdict != (tc ? TC_OK_RC : XDP_PASS_RC))
		out->changed = true;
	cur = out;
	ring_buffer__consume(rb);
	cur = NULL;
	e = slog_on ? slog_drain(out) : 0;
	if (!e)
		e = read_totals(ops, err, pkts);
	if (!e)
		e = read_countdown(&out->cd_after);
	if (e) {
		out->run_err = e;
		return;
	}
	for (i = 0; i < KS_OP_MAX; i++) {
		out->ops[i].requests += ops[i].requests - last_ops[i].requests;
		out->ops[i].keys += ops[i].keys - last_ops[i].keys;
		out->ops[i].bytes += ops[i].bytes - last_ops[i].bytes;
	}
	for (i = 0; i < KS_ERR_MAX; i++)
		out->err[i] += err[i] - last_err[i];
	for (i = 0; i < KS_PKT_MAX; i++)
		out->pkts[i] += pkts[i] - last_pkts[i];
	memcpy(last_ops, ops, sizeof(ops));
	memcpy(last_err, err, sizeof(err));
	memcpy(last_pkts, pkts, sizeof(pkts));
}

void fz_dp_clear(struct fz_dp *out)
{
	memset(out, 0, offsetof(struct fz_dp, keys));
}

/*
 * One input: a UDP datagram, or a lone TCP segment of a flow of its own
 * (never opened by a SYN: parsed as a guess) that ends it (FIN), so that
 * a request cut by its end is counted as truncated in the same run.
 */
void fz_dp_run(const struct fz_input *in, struct fz_dp *out)
{
	static struct pkt p;
	__u8 raw[16];
	bool v6 = in->frame == FZ_TCP6 || in->frame == FZ_UDP6;

	fz_dp_clear(out);
	fresh_source(v6, raw, out->saddr);
	if (frame_build(in, &p, raw, 1000,
			PKT_TCP_PSH | PKT_TCP_ACK | PKT_TCP_FIN)) {
		out->run_err = -E2BIG;
		return;
	}
	run_frame(&p, in->tc, out);
}

void fz_flow_new(struct fz_flow *f, const struct fz_input *fr)
{
	static __u32 n;

	memset(f, 0, sizeof(*f));
	f->fr = *fr;
	f->fr.len = 0;
	f->fr.pad = 0;
	fresh_source(fr->frame == FZ_TCP6, f->raw, f->saddr);
	f->isn = ++n * 2654435761u;
}

void fz_flow_send(const struct fz_flow *f, __u32 off, const __u8 *pay,
		  __u32 len, __u8 flags, struct fz_dp *acc)
{
	static struct pkt p;
	static struct fz_input in;

	in = f->fr;
	memcpy(in.b, pay, len);
	in.len = len;
	memcpy(acc->saddr, f->saddr, 16);
	if (frame_build(&in, &p, f->raw,
			(flags & PKT_TCP_SYN) ? f->isn : f->isn + 1 + off,
			flags)) {
		acc->run_err = -E2BIG;
		return;
	}
	run_frame(&p, in.tc, acc);
}
