/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kp.h - harness of the program tests. One loaded keysteer object (maps
 * never pinned), reset to its just-loaded state before every test; packets
 * run through ks_ingress with BPF_PROG_TEST_RUN; an expectation model that
 * each test fills in (ops, errors, packet counters, and for sample_n = 1 an
 * exact count-min sketch with conservative update, the candidate table, the
 * trace events and, with a ring loaded, the per-shard counters and the
 * misdirected clients), then compared with every map at kp_end().
 *
 * Usage:
 *   kp_begin("name");            default config: ports 0, sample_n 1, seq 0
 *   kp_send_tcp4("get a\r\n");   build, run, check verdict and bytes
 *   kp_x_req(KS_OP_GET, 7, "a", NULL);
 *   kp_end();                    compare everything, print PASS/FAIL
 *
 * TCP streams (t_stream.c): kp_flow_* sends segments of one 4-tuple with
 * chosen sequence numbers and flags; kp_stream_* builds a byte stream of
 * requests that knows where each request and key lies, cuts it into
 * segments (in order, duplicated, overlapping, reordered, one dropped),
 * runs it on a fresh flow and compares what the maps gained with an
 * oracle run of the same stream unsegmented.
 *
 * Lone TCP packets (every builder above) come from a source port of their
 * own (pkt_opts_default), and kp_send() releases the flow state one made
 * with an RST on its 4-tuple. The model does not pin down the flow
 * counters (FLOW_*, RESYNC_*, HOT_DISARM: data on a flow never opened,
 * the RST's FLOW_END, state lost or carried) unless a test calls
 * kp_x_flow_exact(); kp_x_pkt_exact() pins one counter from its value.
 */
#ifndef KS_TEST_KP_H
#define KS_TEST_KP_H

#include <stddef.h>
#include <stdbool.h>
#include "keysteer.h"
#include "ks_ring.h"
#include "pkt.h"
#include "ktest.h"

#define KP_DONTCARE   (-1LL)
#define KP_MAX_MKEYS  2048
#define KP_MAX_EVENTS 1024
#define KP_MAX_SLOG   (2 * KS_SLOG_RECS)

/* A key as the model knows it. */
struct kp_mkey {
	__u8 key[KS_KEY_BUF];
	__u16 len;
	__u64 hash;
	__u32 count;      /* sketch estimate after its last sample */
	__u32 seq;        /* config seq of its last sample */
	int cls;          /* class of its first sample, -1 before */
	bool count_known; /* false once sampled in both classes */
};

struct kp_mevent {
	__u64 hash;
	__u8 saddr[16];
	__u16 sport;
	__u8 op, cls, proto;
	__u16 len;
	__u8 key[KS_KEY_BUF];
};

struct ks_hot_rules;

/* What the maps must hold at kp_end(). */
struct kp_model {
	struct ks_op_stats ops[KS_OP_MAX];
	long long err[KS_ERR_MAX];
	long long pkts[KS_PKT_MAX]; /* KP_DONTCARE: not compared */
	bool op_dontcare[KS_OP_MAX];
	bool exact; /* keys sampled are known (sample_n 1) */
	bool check_sketch, check_cands, check_events;
	bool cands_allow_extra; /* extra slots are not an error */
	int nkeys;
	struct kp_mkey keys[KP_MAX_MKEYS];
	int nevents;
	struct kp_mevent events[KP_MAX_EVENTS];
	/* the packet last sent, for the trace expectations */
	__u8 saddr[16];
	__u16 sport;
	__u8 proto;
	/* the ring sampled reads and writes are placed on (kp_ring_load) */
	const struct ks_ring *ring;
	/* shard rules placing keys before the ring (t_dedicated.c), with
	 * each rule's shard index in the ring (core/dedicated.h); NULL: none */
	const struct ks_hot_rules *ded;
	const int *ded_idx;
	bool ring_inexact; /* a ring met sample_n > 1: shards not compared */
	struct ks_shard_stats shards[KS_MAX_SHARDS];
	__u32 nmis; /* misdirected keys so far (this CPU) */
	struct ks_misdirect mis[KS_MISDIRECT_SLOTS]; /* ts_ns: any nonzero */
	/* the sample log of this CPU (ks_slog, ks_slog_pos): its head and
	 * tail as kp_slog_pos() left them (0, 0 after a reset), and the
	 * records expected after slog_head0 (sample_n 1 only). Every other
	 * CPU's position stays 0. Compared at every kp_check(), so every
	 * test without KS_CFG_SLOG checks that nothing reached the log. */
	__u64 slog_head0, slog_tail;
	int nslog;
	bool slog_inexact; /* the log met sample_n > 1: this CPU's not
			    * compared */
	struct ks_slog_rec slog[KP_MAX_SLOG];
};

struct kp_env {
	struct ks_config cfg;
	struct kp_model x;
	int ncpu;
	int cpu; /* the CPU this process is pinned to */
	int xdp_fd, tc_fd;
	int tc_egress_fd; /* ks_tc_egress: the owner's replies */
	/* events read from the ring buffer in the last kp_read_events() */
	int ngot;
	struct ks_event got[KP_MAX_EVENTS];
	bool draining;
};

extern struct kp_env kp;

/* Loads the object; returns 0, or a negative errno and prints why. */
int kp_setup(void);
void kp_teardown(void);
/* True when no keysteer map or pin was created under /sys/fs/bpf. */
bool kp_nothing_pinned(void);
/* True if /sys/fs/bpf/<name> exists. */
bool kp_pin_exists(const char *name);

/* ---- test life cycle ---- */
void kp_begin(const char *name);
void kp_config(const struct ks_config *cfg); /* write and remember it */
void kp_set_ports(int n, ...);               /* ports for this test */
void kp_set_sample(__u32 n);
void kp_set_seq(__u32 seq);
void kp_set_trace(__u32 on);
/* KS_CFG_SLOG in ks_config.flags: sampled reads and writes of up to
 * KS_SLOG_KEY bytes go to the sample log (the model follows). */
void kp_set_slog(__u32 on);
/* This CPU's sample log position (ks_slog_pos[kp.cpu]) set to head and
 * tail, as an agent's drain would leave it; the model's expected records
 * start there. head - tail == KS_SLOG_RECS: a full log. */
void kp_slog_pos(__u64 head, __u64 tail);
/* Record `at` (a head value) of this CPU's log; 0 or -errno. */
int kp_slog_read(__u64 at, struct ks_slog_rec *out);
/*
 * --sample auto's per-CPU rate for one epoch (ks_rate): n_here on the CPU
 * the tests run on, n_other on every other CPU (0: ks_config.sample_n).
 * Sampling is then no longer certain to the model.
 */
void kp_set_rate(__u32 epoch, __u32 n_here, __u32 n_other);
/*
 * The ring placement's 1 in P for one epoch (ks_rate's p, its n 0:
 * ks_config.sample_n still samples): p on the CPU the tests run on, 0
 * (1) elsewhere. Over 1, the model's ring counts are no longer certain
 * (ks_shards, ks_misdirect, ring_hit, misdirected): the test checks
 * them. Before the test's first packet, or with a seq the CPU has not
 * read its entry for, so that the datapath reads it.
 */
void kp_set_place(__u32 epoch, __u32 p_here);
/* Zero every map and the model, keep the current config (used by loops). */
void kp_reset(void);
/* Compare maps with the model; ctx prefixes any failure (may be NULL). */
void kp_check(const char *ctx);
/* kp_check(NULL) then print the test line. */
void kp_end(void);

/* ---- the ring (bpf/ks_ring.h; built with user/core/ring.h) ---- */
struct ks_ring;
/*
 * Writes h into half `half` of ks_ring (NULL: an empty half, nshards 0).
 * Safe from a second thread. The ring map is restored at the next reset
 * only after such a write (two 1.5 MiB halves would double every reset).
 */
int kp_ring_write(__u32 half, const struct ks_ring_half *h);
/* Makes `half` the active one (ks_config.ring, kp.cfg.ring); nothing else. */
int kp_ring_flip(__u32 half);
/*
 * Loads r into the active half and into the model: from now on every
 * sampled read or write key is placed on r with ks_ring_lookup(), and
 * ks_shards, ring_hit, misdirected and the ks_misdirect slots are expected
 * to follow. r must live until the next reset; NULL loads an empty half.
 * Every test checks ks_shards and ks_misdirect: all zero without a ring.
 */
void kp_ring_load(const struct ks_ring *r);
/* Shards 0..n-1 of ks_shards summed over CPUs; 0 or -errno. */
int kp_shards_read(struct ks_shard_stats *out, __u32 n);
/* Slot of ks_misdirect as CPU cpu holds it; 0 or -errno. */
int kp_misdirect_read(__u32 slot, int cpu, struct ks_misdirect *out);

/* ---- running packets ---- */
/* Runs a program on data; returns 0 or -errno; retval/out as the kernel
 * reports them. */
int kp_run(int prog_fd, const void *data, __u32 len, __u32 *retval, void *out,
	   __u32 *out_len);
/* Runs p through ks_ingress; checks XDP_PASS and an unchanged packet;
 * expects KS_PKT_SEEN. A lone TCP segment (not sent by kp_flow_send) that
 * the datapath took for data on an unknown flow (RESYNC_UNKNOWN moved) is
 * followed by an RST on its 4-tuple (kp_rst_for; one more SEEN), so each
 * lone packet is a flow of its own. Returns 0 or the run's -errno. */
int kp_send(const struct pkt *p);
/* An RST|ACK (no payload, no options, no VLAN) on p's 4-tuple, at the
 * sequence after p's data: what kp_send() uses to release the flow state
 * a lone TCP packet made (see kp_send). */
void kp_rst_for(struct pkt *rst, const struct pkt *p);
/* As kp_send, and expects KS_PKT_MEMCACHED and KS_PKT_TCP/UDP. */
void kp_send_mc(const struct pkt *p);
/* A memcached packet through the tc program: TC_ACT_OK, unchanged;
 * expects SEEN, MEMCACHED and TCP/UDP like kp_send_mc(). */
void kp_send_tc(const struct pkt *p);

/* Builds: IPv4/IPv6, TCP/UDP with defaults, payload as given. */
void kp_build(struct pkt *p, const struct pkt_opts *o, const void *pay,
	      size_t len);
void kp_tcp4(struct pkt *p, const void *pay, size_t len);
void kp_udp4(struct pkt *p, const void *pay, size_t len);
void kp_tcp6(struct pkt *p, const void *pay, size_t len);
void kp_udp6(struct pkt *p, const void *pay, size_t len);
/* Build an IPv4 TCP packet from a C string and kp_send_mc() it. */
void kp_send_tcp4(const char *pay);

/* ---- expectations ---- */
/* One request of op, bytes long, with the NULL-terminated list of keys. */
void kp_x_req(int op, size_t bytes, ...);
/* One more key of op (request already counted). */
void kp_x_keyn(int op, const void *key, size_t len);
/* a key taken (sampled) as it came, of a request that never completed:
 * in the sketch and candidates, not in the op counts */
void kp_x_sampled_only(int op, const void *key, size_t len);
void kp_x_err(int reason);
/* Packet counters that the test does not pin down. */
void kp_x_pkt_dontcare(int counter);
void kp_x_l4_dontcare(void); /* MEMCACHED, TCP, UDP */
void kp_x_op_dontcare(int op);
void kp_x_err_dontcare(int reason);
/* n more of a packet counter (no-op while it is a dontcare). */
void kp_x_pkt(int counter, long long n);
/* Compare counter again, exactly, from the value the maps hold now. */
void kp_x_pkt_exact(int counter);
/* The flow counters (FLOW_*, RESYNC_*, HOT_DISARM) exact from now on. */
void kp_x_flow_exact(void);
/* A test whose counts are bounded, not known: every op and error and the
 * sampling counters are dontcares, the sketch and candidates unchecked
 * (the flow counters stay as they are). */
void kp_x_inexact(void);
/* The sketch's point query for key in (epoch, cls): min over the rows. */
__u32 kp_cms_query(__u32 epoch, __u32 cls, const void *key, size_t len);
/* Candidate slot holding key on this CPU, copied to out; false if none. */
bool kp_cand_find(const void *key, size_t len, struct ks_cand *out);
/* Counters, summed over CPUs. kp_op: the op's totals as the agent reads
 * them, ks_ops with the fast path's gets from ks_pkts folded in
 * (ks_ops_fold_fast); kp_op_raw: ks_ops alone. */
__u64 kp_pkt(int counter);
__u64 kp_errc(int reason);
struct ks_op_stats kp_op(int op);
struct ks_op_stats kp_op_raw(int op);
/* Drain the ring buffer into kp.got; returns the number read. */
int kp_read_events(void);

/* ---- counters of one run ---- */
struct kp_counts {
	struct ks_op_stats ops[KS_OP_MAX];
	__u64 err[KS_ERR_MAX];
	__u64 pkts[KS_PKT_MAX];
};
/* Every op, error and packet counter, summed over CPUs: 3 syscalls; ops
 * folded as kp_op() folds them. */
int kp_counts_read(struct kp_counts *c);
/* d = a - b, field by field. */
void kp_counts_sub(struct kp_counts *d, const struct kp_counts *a,
		   const struct kp_counts *b);

/* ---- TCP flows ---- */
#define KP_SEG_MAX 3400 /* largest payload one test run takes (IPv6 too) */
#define KP_MSS     1448 /* what a real stack cuts a long stream into */

struct kp_flow {
	struct pkt_opts o; /* addresses and ports of the flow */
	__u32 isn; /* the SYN's sequence: stream byte i is isn + 1 + i */
	int tc;    /* send through the tc program, not XDP */
};
/*
 * A flow on a 4-tuple no other flow of this run used: the source address
 * (198.19.x.y, or 2001:db8::1:x:y) and port come from a counter, the ISN
 * from a hash of it. The flow table is never cleared between tests (see
 * kp_reset), so every test that needs a clean flow takes a new one.
 */
void kp_flow_new(struct kp_flow *f, int v6);
/* Builds the segment of f at stream offset off (seq isn + 1 + off). */
void kp_flow_build(struct pkt *p, const struct kp_flow *f, __u32 off,
		   const void *pay, size_t len, __u8 flags);
/*
 * Sends a segment at stream offset off with the given PKT_TCP_* flags:
 * with a payload like kp_send_mc() (or kp_send_tc()), without one like
 * kp_send() (SEEN only). Flow counters are the caller's to expect.
 */
void kp_flow_send(const struct kp_flow *f, __u32 off, const void *pay,
		  size_t len, __u8 flags);
/* SYN (no payload, seq isn): expects FLOW_NEW unless KS_CFG_NO_STREAM. */
void kp_flow_syn(const struct kp_flow *f);
/* FIN|ACK or RST|ACK at stream offset off, no payload: expects FLOW_END
 * unless KS_CFG_NO_STREAM. */
void kp_flow_fin(const struct kp_flow *f, __u32 off);
void kp_flow_rst(const struct kp_flow *f, __u32 off);

/* ---- segmented request streams ---- */
#define KP_STREAM_MAX      (48 * 1024)
#define KP_STREAM_MAX_REQ  1024
#define KP_STREAM_MAX_KEYS 2048

struct kp_sreq {
	__u32 start, end; /* its bytes [start, end) of the stream */
	int op;
	__u64 bytes;       /* what ks_ops counts for it */
	__u32 key0, nkeys; /* its keys: keys[key0 .. key0 + nkeys) */
};

struct kp_skey {
	__u32 off; /* in the stream */
	__u16 len;
};

struct kp_stream {
	__u8 b[KP_STREAM_MAX];
	__u32 len;
	int nreq, nkeys;
	struct kp_sreq req[KP_STREAM_MAX_REQ];
	struct kp_skey keys[KP_STREAM_MAX_KEYS];
};

void kp_stream_init(struct kp_stream *s);
/* Appends one request of op, len bytes (counted as len); returns its index,
 * or -1 (and fails the test) when the stream is full. */
int kp_stream_add(struct kp_stream *s, int op, const void *req, size_t len);
/* A key of request r at offset off of the request. */
void kp_stream_add_key(struct kp_stream *s, int r, size_t off, size_t len);
/* Request r counts bytes, not its length (a data block that lies...). */
void kp_stream_set_bytes(struct kp_stream *s, int r, __u64 bytes);
/*
 * A text request: line (ending "\r\n"), then, if data, dlen bytes of data
 * and "\r\n". Its keys are nkeys space-separated tokens of the line from
 * token first_key (0 is the command; nkeys -1: every token from there).
 * Returns the request's index.
 */
int kp_stream_text(struct kp_stream *s, int op, const char *line, int first_key,
		   int nkeys, const void *data, size_t dlen);
/* A binary request (pkt_bin_req), its key at 24 + extlen. */
int kp_stream_bin(struct kp_stream *s, int op, __u8 opcode, const void *extras,
		  __u8 extlen, const void *key, __u16 klen, const void *val,
		  __u32 vlen);
/* Offset off begins a request (or is the stream's end). */
bool kp_stream_boundary(const struct kp_stream *s, __u32 off);
/* Offset off lies inside a request, after its first byte. */
bool kp_stream_inside(const struct kp_stream *s, __u32 off);
/* What ks_ops gains from the whole stream. */
void kp_stream_ops(const struct kp_stream *s, struct ks_op_stats *ops);
/* The model gains every request and key of the stream. */
void kp_x_stream(const struct kp_stream *s);

/* How the pieces between the cuts are sent. */
enum kp_order {
	KP_INORDER, /* 0, 1, 2, ... */
	KP_DUP,     /* each piece again after the next one: 0 1 0 2 1 2 */
	KP_OVERLAP, /* each piece from 1 to 5 bytes before its cut */
	KP_REORDER, /* the last two pieces swapped: 1 0, or 0 2 1 */
	KP_DROP,    /* a piece never sent: 1 of 2, the middle one of 3+ */
	KP_ORDER_MAX,
};
const char *kp_order_name(int order);

#define KP_MAX_PIECES 16
#define KP_MAX_SENDS  256

/* The segments of one run, in the order sent. */
struct kp_plan {
	int n;
	struct {
		__u32 off, len;
	} seg[KP_MAX_SENDS];
};
/* Cuts [0, len) at cuts[0..ncuts) (ascending, inside the stream) into
 * pieces sent in order; pieces longer than mss (0: KP_SEG_MAX) go as
 * several segments. Returns 0, or -1 if it does not fit. */
int kp_plan_cuts(struct kp_plan *pl, __u32 len, const __u32 *cuts, int ncuts,
		 int order, __u32 mss);

/* What the flow layer should make of a plan, worked out from the spec. */
struct kp_sim {
	int segs; /* segments with a payload */
	int dup, overlap, gap;
	int cont;        /* in-order segments beginning inside a request */
	bool cont_known; /* no gap before the last one */
	int late;        /* of dup: segments that bring bytes of a gap
			      * late (FLOW_DUP by the spec; FLOW_FILL if
			      * the datapath parses them as a guess) */
	/* Where a guess may take bytes for a request they are not (a
	 * command inside a value, after a gap landed inside a request):
	 * each phantom may add one request of its op, its key, its bytes. */
	int nphantom;
	struct {
		__u32 at, bytes, key_off;
		__u16 key_len;
		int op;
	} phantoms[16];
	bool phantom; /* ... or one of no known shape: no upper bound */
	int nsure;    /* ranges parsed for sure: from the SYN to the
			      * first gap, and from every resync that lands
			      * on a request boundary to the next gap */
	struct {
		__u32 a, b;
	} sure[KP_MAX_SENDS];
};

/* Flags of kp_stream_send(). */
#define KP_SEND_SYN      1  /* open the flow first */
#define KP_SEND_FIN      2  /* a FIN at the stream's end afterwards */
#define KP_SEND_FIN_LAST 4  /* FIN on the last segment sent, with its data */
#define KP_SEND_RST      8  /* an RST at the stream's end afterwards */
#define KP_SEND_TC       16 /* through the tc program (kp_stream_case) */

/* Sends s on f as pl says; fills sim. */
void kp_stream_send(const struct kp_flow *f, const struct kp_stream *s,
		    const struct kp_plan *pl, unsigned flags,
		    struct kp_sim *sim);

/* What one run added: counters and the trace events (config trace 1). */
struct kp_obs_ev {
	__u64 hash;
	__u8 op, cls;
	__u16 len;
	__u8 key[KS_KEY_BUF];
};
struct kp_obs {
	struct kp_counts d;
	int nev;
	int bad_src; /* events whose source address or port is not the flow's */
	struct kp_obs_ev ev[KP_MAX_EVENTS];
};
/* Counters as they stand, before a run; drains the event ring. */
void kp_obs_begin(void);
/* What the maps gained since kp_obs_begin(), events from flow f. */
void kp_obs_end(struct kp_obs *o, const struct kp_flow *f);

/*
 * The oracle: s unsegmented (one segment, or KP_MSS segments past
 * KP_SEG_MAX) on a fresh flow opened by a SYN and closed by a FIN. Its ops
 * must equal the stream's own table, its events its keys in order; the
 * model gains it. Needs trace on. Returns false if it disagreed.
 */
bool kp_stream_oracle(const struct kp_stream *s, int v6, struct kp_obs *o);
/*
 * One run of s cut at cuts, sent in order (KP_INORDER, KP_DUP,
 * KP_OVERLAP: ops, errors and events equal the oracle's exactly, flow
 * counters as the spec says, and the model gains it) or not (KP_REORDER,
 * KP_DROP: the gap is counted, nothing is counted twice (ops at most the
 * oracle's and events a sub-multiset of its events, unless a resync could
 * guess a phantom) and every request wholly inside a range parsed for sure
 * is counted). Failures are reported with ctx and the cuts. Returns 0 if
 * the run agreed, else KP_CASE_* bits.
 */
#define KP_CASE_COUNTS 1 /* ops, errors or sampled keys wrong */
#define KP_CASE_FLOW   2 /* packet or flow counters wrong */
int kp_stream_case(const char *ctx, const struct kp_stream *s,
		   const struct kp_obs *oracle, int v6, const __u32 *cuts,
		   int ncuts, int order, __u32 mss, unsigned flags);

/* kp_stream_case() runs since kp_begin(), and the first failure of each
 * kind (the test line keeps only the first few messages). */
struct kp_tally {
	int runs, bad_counts, bad_flow;
	char first_counts[400], first_flow[400];
};
extern struct kp_tally kp_tally;

/* ---- misc ---- */
/* fd of the loaded object's map called name, or -1. */
int kp_map_fd(const char *name);
/* A __u32 field of this CPU's ks_scratch (kernel-only: found by its BTF);
 * fails the test when there is none of that name. */
__u32 kp_scratch_u32(const char *field);
__u64 kp_hash(const void *key, size_t len);
const char *kp_op_name(int op);
const char *kp_err_name(int reason);
/* Fills buf with a key of len bytes, distinct for each seed. */
void kp_make_key(char *buf, size_t len, unsigned int seed);

#endif
