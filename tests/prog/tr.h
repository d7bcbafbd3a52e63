/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * tr.h - what the ring's program tests (t_ring.c, t_ring_swap.c) share:
 * rings built by the agent's builder from a shard-list shape, keys of every
 * length with UTF-8 and any-byte binary keys, segments of memcached
 * requests that remember their keys, and a sender that checks, packet by
 * packet, that ks_shards moved exactly as user space places the keys.
 */
#ifndef KS_TEST_TR_H
#define KS_TEST_TR_H

#include <stdbool.h>
#include <stddef.h>
#include "kp.h"
#include "core/ring.h"
#include "core/shards.h"

#define TR_XDP_PASS 2

/* ---- rings ---- */

struct tr_ring {
	struct ks_shards shards;
	struct ks_ring ring;
};

/* How a test's shard list looks. */
struct tr_shape {
	enum ks_dist dist;
	__u32 n;
	bool weights;    /* unequal weights 1..10 */
	bool ports;      /* ports other than 11211 */
	bool names;      /* a name per shard (used by twemproxy and vnode) */
	__u32 self;      /* KS_NO_SHARD: a client host, not a cache host */
	__u32 kh;        /* 1 + enum ks_key_hash; 0: the distribution's */
	const char *tag; /* a hash tag, or NULL */
};

/* Builds the ring of shape s as a shard file would give it: 10.a.b.c
 * hosts; 0, or -1 after failing the current test. */
int tr_ring_build(struct tr_ring *t, const struct tr_shape *s);
void tr_ring_free(struct tr_ring *t);

/* ---- keys ---- */

/* The next value of a small LCG. */
__u32 tr_rand(__u32 *x);
/* A text key of exactly len bytes (all > 0x20), distinct per seed; with
 * utf about one character in three is a UTF-8 sequence. */
void tr_key(__u8 *out, size_t len, __u32 seed, bool utf);
/* A fresh text key from a running seed (a static buffer). */
const __u8 *tr_new_key(size_t len, bool utf);
/* A key length at most max: MD5 block edges and others at random. */
size_t tr_pick_len(__u32 *x, size_t max);

/* ---- segments: requests and the keys they carry ---- */

#define TR_SEG_MAX  2000 /* inside the datapath's 2048-byte window */
#define TR_SEG_REQS 64
#define TR_SEG_KEYS 256

struct tr_key {
	int op;
	__u16 len;
	__u8 b[KS_KEY_BUF];
};

struct tr_seg {
	__u8 b[TR_SEG_MAX + 512];
	size_t len;
	int nreq;
	struct {
		int op;
		size_t bytes; /* the whole request */
		int first, nkeys;
	} req[TR_SEG_REQS];
	int nkeys;
	struct tr_key keys[TR_SEG_KEYS];
};

void tr_seg_clear(struct tr_seg *g);
void tr_seg_puts(struct tr_seg *g, const char *s);
/* A request of op starts at the current end ... */
void tr_seg_req(struct tr_seg *g, int op);
/* ... has a key (written into the segment when text) ... */
void tr_seg_key(struct tr_seg *g, const __u8 *k, size_t len, bool text);
/* ... and ends here. */
void tr_seg_end(struct tr_seg *g);
/* "cmd k1 ... kn\r\n", n fresh keys of at most maxlen bytes. */
void tr_seg_get(struct tr_seg *g, const char *cmd, int op, int n, size_t maxlen,
		__u32 *x, bool utf);
/* "cmd key 0 0 vlen\r\n<value>\r\n" */
void tr_seg_store(struct tr_seg *g, const char *cmd, int op, size_t len,
		  size_t vlen, bool utf);
/* "cmd key" + rest, for one-key commands */
void tr_seg_one(struct tr_seg *g, const char *cmd, int op, size_t len,
		const char *rest, bool utf);
/* A binary GETK (0x0c) or SET (0x01) with a key of any bytes. */
void tr_seg_bin(struct tr_seg *g, __u8 opcode, int op, size_t len);

/* ---- packets ---- */

/* The port packets go to (11211 unless a test watches others). */
extern __u16 tr_dport;
/* Packets and keys the per-packet check has compared so far. */
extern __u64 tr_pkts_checked, tr_keys_checked;

/* g as one frame from client port sport (the address follows it). */
void tr_pkt(struct pkt *p, const struct tr_seg *g, int v6, __u8 proto,
	    __u16 sport);
/* What g's keys add to ks_shards 0..n-1 under ring t. */
void tr_expect(const struct tr_ring *t, const struct tr_seg *g,
	       struct ks_shard_stats *want, __u32 n);
/* Sends g through ks_ingress, tells kp's model its requests and keys, and
 * with a ring followed, checks the change of ks_shards against tr_expect. */
void tr_send(const struct tr_seg *g, int v6, __u8 proto, __u16 sport);
/* Loads t into the active half and kp's model, and follows it. */
void tr_load(const struct tr_ring *t);
/* Follows t (NULL: none) in the per-packet check without writing it. */
void tr_follow(const struct tr_ring *t);

#endif
