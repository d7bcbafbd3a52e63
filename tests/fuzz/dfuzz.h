/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dfuzz.h - the differential fuzzer of the datapath: its inputs, the
 * datapath runner (dfuzz_dp.c), the input generator and mutator
 * (dfuzz_gen.c) and the comparison with the reference parser (ref_mc.c).
 */
#ifndef KS_DFUZZ_H
#define KS_DFUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "keysteer.h"
#include "ref_mc.h"

/*
 * Payload bytes of one input. BPF_PROG_TEST_RUN takes frames of about
 * 3.5 KiB (a page less headroom and skb_shared_info); this leaves room
 * for the largest headers the fuzzer builds and still crosses KS_WIN.
 */
#define FZ_MAX_PAY 3300

/* How an input is framed. */
enum fz_frame {
	FZ_TCP4 = 0,
	FZ_UDP4,
	FZ_TCP6,
	FZ_UDP6,
	FZ_FRAMES,
};

struct fz_input {
	__u8 b[FZ_MAX_PAY];
	__u32 len;
	__u8 frame;    /* enum fz_frame */
	__u8 nvlan;    /* 0..2 VLAN tags: moves the payload's alignment */
	__u8 l3_words; /* IPv4 option words (0..10) */
	__u8 l4_words; /* TCP option words (0..10) */
	__u8 tc;       /* run ks_tc_ingress instead of ks_ingress */
	__u8 pad;      /* junk bytes after the IP datagram (Ethernet
			  * padding): never part of the payload */
	__u16 sport;
};

/*
 * A TCP flow of the stream mode: a 4-tuple no other input used (the
 * source address comes from a counter), its ISN, how it is framed.
 */
struct fz_flow {
	struct fz_input fr; /* framing only: frame, nvlan, l3/l4 words, tc */
	__u8 saddr[16];     /* as ks_events carries it (IPv4 mapped) */
	__u8 raw[16];       /* as the builder takes it */
	__u32 isn;
};

static inline bool fz_is_tcp(const struct fz_input *in)
{
	return in->frame == FZ_TCP4 || in->frame == FZ_TCP6;
}

/* One key the datapath reported through ks_events. */
struct fz_key {
	__u8 op, cls, proto;
	__u16 len;
	__u16 sport;
	__u64 hash;
	__u8 saddr[16];
	__u8 key[KS_KEY_BUF];
};

#define FZ_MAX_EVENTS REF_MAX_KEYS

/* What one run of the datapath counted (deltas) and reported. */
struct fz_dp {
	int run_err; /* -errno of BPF_PROG_TEST_RUN, 0 when it ran */
	__u32 verdict;
	bool changed; /* the packet came back different */
	struct ks_op_stats ops[KS_OP_MAX];
	__u64 err[KS_ERR_MAX];
	__u64 pkts[KS_PKT_MAX];
	unsigned nkeys;
	bool event_size_bad;
	bool slog_bad; /* a sample log record with a wrong seq or rate, or a
			* head that went back */
	/* the CPU's sampling countdown (ks_scratch) before the first run
	 * since fz_dp_clear and after the last, as stored */
	bool cd_read;
	__u32 cd_before, cd_after;
	__u8 saddr[16]; /* the source the input was sent from (mapped) */
	struct fz_key keys[FZ_MAX_EVENTS];
};

/* ---- the datapath (dfuzz_dp.c) ---- */
/* Loads build/keysteer.bpf.o through its skeleton, maps unpinned; sample 1
 * key in sample_n, default port; trace on, or with slog the sample log on
 * and trace off (keys are then the log's records: fz_key.op KS_OP_MAX).
 * 0 or -errno, with the reason on stderr. */
int fz_dp_open(__u32 sample_n, bool slog);
void fz_dp_close(void);
/* Frames in and runs it; out gets what the run counted and reported. */
void fz_dp_run(const struct fz_input *in, struct fz_dp *out);
/* The frame fz_dp_run builds for in: 0, or -1 if it does not fit. */
struct pkt;
int fz_frame_build(const struct fz_input *in, struct pkt *p);
/*
 * Stream mode: a new flow framed like fr; one segment of it at stream
 * offset off (seq isn + 1 + off; flags PKT_TCP_*, a SYN takes seq isn)
 * run and its deltas added to acc (zero it first: fz_dp_clear).
 */
void fz_flow_new(struct fz_flow *f, const struct fz_input *fr);
void fz_dp_clear(struct fz_dp *acc);
void fz_flow_send(const struct fz_flow *f, __u32 off, const __u8 *pay,
		  __u32 len, __u8 flags, struct fz_dp *acc);

/* ---- inputs (dfuzz_gen.c) ---- */
struct fz_rng {
	__u64 s;
};

__u64 fz_rand(struct fz_rng *r);
/* Uniform in [0, n); 0 when n is 0. */
__u32 fz_below(struct fz_rng *r, __u32 n);

/* The seed list: C-escaped strings, one a line, '#' comments. Returns
 * the number read (appended to *v, *n), or -errno. */
int fz_seeds_load(const char *path, struct fz_input **v, size_t *n,
		  size_t *cap);
/* Seeds the fixtures build in code: big multi-gets, window-crossing
 * lines, binary requests of every opcode. Appended like fz_seeds_load. */
int fz_seeds_builtin(struct fz_input **v, size_t *n, size_t *cap);
/* A payload from the request grammar. */
void fz_generate(struct fz_rng *r, struct fz_input *in);
/* One to four mutations of in; other is a second input for splicing. */
void fz_mutate(struct fz_rng *r, struct fz_input *in,
	       const struct fz_input *other);
/* A stream of requests (text, meta, or binary alone), at most cap bytes;
 * safe: no key or value byte can begin a request (for lossy sends). */
__u32 fz_gen_stream(struct fz_rng *r, __u8 *b, __u32 cap, bool safe,
		    bool binary);
/* Random framing (TCP/UDP, IPv4/IPv6, header sizes, tc) for in. */
void fz_pick_frame(struct fz_rng *r, struct fz_input *in);

/* C-escaped text of bytes (for findings); returns out. */
char *fz_escape(const __u8 *b, size_t n, char *out, size_t size);
/* Parses a C-escaped string into b; returns its length. */
size_t fz_unescape(const char *s, __u8 *b, size_t size);

#endif
