// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * tr.c - helpers of the ring's program tests (see tr.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tr.h"

/* ---- rings ---- */

void tr_ring_free(struct tr_ring *t)
{
	ks_ring_free(&t->ring);
	ks_shards_free(&t->shards);
}

/* Builds the ring of shape s, as a shard file would give it; 0 or -1. */
int tr_ring_build(struct tr_ring *t, const struct tr_shape *s)
{
	size_t cap = (size_t)s->n * 64 + 1, len = 0;
	char *text = malloc(cap), err[512];
	__u32 i;
	int rc;

	memset(t, 0, sizeof(*t));
	if (!text)
		return -1;
	for (i = 0; i < s->n; i++) {
		len += (size_t)snprintf(text + len, cap - len, "10.%u.%u.%u:%u",
					i / 250, i % 250, (unsigned)s->dist + 1,
					s->ports ? 11300 + i % 7 * 1000
						 : 11211);
		if (s->weights)
			len += (size_t)snprintf(text + len, cap - len, ":%u",
						1 + (i * 7 + 3) % 10);
		if (s->names)
			len += (size_t)snprintf(text + len, cap - len,
						" cache-%u", i);
		len += (size_t)snprintf(text + len, cap - len, "\n");
	}
	rc = ks_shards_parse_text("t_ring", text, &t->shards, err, sizeof(err));
	free(text);
	if (!rc) {
		t->shards.self = s->self;
		struct ks_ring_key key = { .hash = (int)s->kh - 1 };

		if (s->tag)
			rc = ks_ring_key_tag(&key, s->tag, err, sizeof(err));
		if (!rc)
			rc = ks_ring_build_keyed(&t->ring, &t->shards, s->dist,
						 &key, 0, 1, err, sizeof(err));
	}
	if (rc) {
		kt_failf(__FILE__, __LINE__,
			 "building the %s ring of %u shards: %s",
			 ks_dist_name(s->dist), s->n, err);
		tr_ring_free(t);
		return -1;
	}
	return 0;
}

/* ---- keys ---- */

/* 2-, 3- and 4-byte UTF-8 sequences mixed into text keys. */
static const char *const tr_utf8[] = {
	"\xc3\xa9",     "\xc3\x9f",     "\xce\xa9",     "\xd0\xb6",
	"\xe6\x97\xa5", "\xe6\x9c\xac", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
};

/* Lengths on every MD5 block edge (55/56, 119/120, ...), the fast path's
 * limit (32/33) and the longest key; others are drawn at random. */
static const __u16 tr_edge_len[] = {
	1,  2,  7,  8,   9,   16,  31,  32,  33,  54,  55,  56,  57,
	63, 64, 65, 119, 120, 121, 183, 184, 247, 248, 249, 250,
};

__u32 tr_rand(__u32 *x)
{
	*x = *x * 1103515245u + 12345;
	return *x >> 16;
}

/*
 * A text key of exactly len bytes, all > 0x20; with utf, about one
 * character in three is a UTF-8 sequence (the last may be cut: the bytes
 * are what the clients hash, valid UTF-8 or not).
 */
void tr_key(__u8 *out, size_t len, __u32 seed, bool utf)
{
	__u32 x = seed * 2654435761u + 7;
	char pre[16];
	size_t i, n, j;

	/* a distinct prefix per seed, then random bytes */
	n = (size_t)snprintf(pre, sizeof(pre), "%x:", seed);
	for (i = 0; i < n && i < len; i++)
		out[i] = (__u8)pre[i];
	while (i < len) {
		if (utf && tr_rand(&x) % 3 == 0) {
			const char *u = tr_utf8[tr_rand(&x) % 8];

			for (j = 0; u[j] && i < len; j++)
				out[i++] = (__u8)u[j];
		} else {
			out[i++] = (__u8)(0x21 + tr_rand(&x) % 94);
		}
	}
}

/* A binary-protocol key: any byte, 0x00 and spaces included. */
static void tr_bin_key(__u8 *out, size_t len, __u32 seed)
{
	__u32 x = seed * 2246822519u + 3;
	size_t i;

	for (i = 0; i < len; i++)
		out[i] = (__u8)tr_rand(&x);
}

/* ---- segments: requests and the keys they carry ---- */

void tr_seg_clear(struct tr_seg *g)
{
	g->len = 0;
	g->nreq = 0;
	g->nkeys = 0;
}

static void tr_seg_put(struct tr_seg *g, const void *p, size_t n)
{
	memcpy(g->b + g->len, p, n);
	g->len += n;
}

void tr_seg_puts(struct tr_seg *g, const char *s)
{
	tr_seg_put(g, s, strlen(s));
}

/* Starts a request of op at the current end. */
void tr_seg_req(struct tr_seg *g, int op)
{
	g->req[g->nreq].op = op;
	g->req[g->nreq].bytes = g->len; /* start, until tr_seg_end */
	g->req[g->nreq].first = g->nkeys;
	g->req[g->nreq].nkeys = 0;
	g->nreq++;
}

void tr_seg_end(struct tr_seg *g)
{
	g->req[g->nreq - 1].bytes = g->len - g->req[g->nreq - 1].bytes;
}

/* A key of the current request: written into the segment if text. */
void tr_seg_key(struct tr_seg *g, const __u8 *k, size_t len, bool text)
{
	struct tr_key *e = &g->keys[g->nkeys++];

	e->op = g->req[g->nreq - 1].op;
	e->len = (__u16)len;
	memcpy(e->b, k, len);
	g->req[g->nreq - 1].nkeys++;
	if (text)
		tr_seg_put(g, k, len);
}

/* Seeds of the keys made so far: every fresh key is distinct. */
static __u32 tr_seed;

const __u8 *tr_new_key(size_t len, bool utf)
{
	static __u8 k[KS_KEY_BUF];

	tr_key(k, len, ++tr_seed, utf);
	return k;
}

/* Half the time an edge length, else any length; at most max. */
size_t tr_pick_len(__u32 *x, size_t max)
{
	size_t len;

	if (tr_rand(x) % 2)
		len = tr_edge_len[tr_rand(x) % (sizeof(tr_edge_len) /
						sizeof(tr_edge_len[0]))];
	else
		len = 1 + tr_rand(x) % KS_MAX_KEY_LEN;
	return len > max ? 1 + len % max : len;
}

/* "cmd key1 ... keyn\r\n" */
void tr_seg_get(struct tr_seg *g, const char *cmd, int op, int n, size_t maxlen,
		__u32 *x, bool utf)
{
	int i;

	tr_seg_req(g, op);
	tr_seg_puts(g, cmd);
	for (i = 0; i < n; i++) {
		size_t len = tr_pick_len(x, maxlen);

		if (g->len + len + 8 > TR_SEG_MAX)
			break;
		tr_seg_puts(g, " ");
		tr_seg_key(g, tr_new_key(len, utf), len, true);
	}
	tr_seg_puts(g, "\r\n");
	tr_seg_end(g);
}

/* "set key 0 0 v\r\n<v bytes>\r\n" and the other storage commands */
void tr_seg_store(struct tr_seg *g, const char *cmd, int op, size_t len,
		  size_t vlen, bool utf)
{
	char tail[48];

	tr_seg_req(g, op);
	tr_seg_puts(g, cmd);
	tr_seg_puts(g, " ");
	tr_seg_key(g, tr_new_key(len, utf), len, true);
	snprintf(tail, sizeof(tail), " 0 0 %zu\r\n", vlen);
	tr_seg_puts(g, tail);
	memset(g->b + g->len, 'v', vlen);
	g->len += vlen;
	tr_seg_puts(g, "\r\n");
	tr_seg_end(g);
}

/* "cmd key<rest>" for one-key commands (delete, incr, touch, mg, me...) */
void tr_seg_one(struct tr_seg *g, const char *cmd, int op, size_t len,
		const char *rest, bool utf)
{
	tr_seg_req(g, op);
	tr_seg_puts(g, cmd);
	tr_seg_puts(g, " ");
	tr_seg_key(g, tr_new_key(len, utf), len, true);
	tr_seg_puts(g, rest);
	tr_seg_end(g);
}

/* A binary request with a key of any bytes (GETK, SET). */
void tr_seg_bin(struct tr_seg *g, __u8 opcode, int op, size_t len)
{
	static const __u8 extras[8] = { 0, 0, 0, 1, 0, 0, 0, 0 };
	__u8 k[KS_KEY_BUF];
	size_t n;

	tr_bin_key(k, len, ++tr_seed);
	tr_seg_req(g, op);
	n = pkt_bin_req(g->b + g->len, opcode, extras, op == KS_OP_SET ? 8 : 0,
			k, (__u16)len, "val", op == KS_OP_SET ? 3 : 0);
	tr_seg_key(g, k, len, false);
	g->len += n;
	tr_seg_end(g);
}

/* ---- sending, and the per-packet check ---- */

__u16 tr_dport = 11211;
__u64 tr_keys_checked, tr_pkts_checked;
/* The ring the per-packet check follows, and ks_shards before, after and
 * as expected after the packet. */
static const struct tr_ring *tr_cur;
static struct ks_shard_stats tr_before[KS_MAX_SHARDS];
static struct ks_shard_stats tr_after[KS_MAX_SHARDS];
static struct ks_shard_stats tr_want[KS_MAX_SHARDS];

void tr_pkt(struct pkt *p, const struct tr_seg *g, int v6, __u8 proto,
	    __u16 sport)
{
	struct pkt_opts o;

	pkt_opts_default(&o, v6, proto);
	o.sport = sport;
	o.dport = tr_dport;
	/* a different client address per port */
	o.saddr[v6 ? 15 : 3] = (__u8)(1 + sport % 250);
	if (v6)
		o.saddr[8] = (__u8)(sport >> 8);
	kp_build(p, &o, g->b, g->len);
}

/* What a segment's keys must add to ks_shards under ring t. */
void tr_expect(const struct tr_ring *t, const struct tr_seg *g,
	       struct ks_shard_stats *want, __u32 n)
{
	__u32 self = t->ring.half->meta.self, owner;
	int i;

	memset(want, 0, n * sizeof(*want));
	for (i = 0; i < g->nkeys; i++) {
		__u32 cls = ks_op_class((__u32)g->keys[i].op);

		if (cls == KS_CLASS_OTHER ||
		    !ks_ring_kernel_places(&t->ring, g->keys[i].b,
					   g->keys[i].len))
			continue;
		owner = ks_ring_lookup(&t->ring, g->keys[i].b, g->keys[i].len);
		if (owner >= n)
			continue;
		if (cls == KS_CLASS_READ)
			want[owner].reads++;
		else
			want[owner].writes++;
		if (self != KS_NO_SHARD && owner != self)
			want[owner].misdirected++;
	}
}

/* Which shard, if any, a one-key packet's count went to. */
static int tr_counted_shard(__u32 n)
{
	__u32 i;

	for (i = 0; i < n; i++)
		if (tr_after[i].reads != tr_before[i].reads ||
		    tr_after[i].writes != tr_before[i].writes)
			return (int)i;
	return -1;
}

/*
 * Sends g from a client, records what the model expects, and checks the
 * change in ks_shards against the user-space lookup of its keys.
 */
void tr_send(const struct tr_seg *g, int v6, __u8 proto, __u16 sport)
{
	const struct tr_ring *t = tr_cur;
	static struct pkt p;
	__u32 n = t ? t->ring.half->meta.nshards : 0, i;
	int r, k, bad = 0;

	tr_pkt(&p, g, v6, proto, sport);
	kp_send_mc(&p);
	for (r = 0; r < g->nreq; r++) {
		kp_x_req(g->req[r].op, g->req[r].bytes, NULL);
		for (k = 0; k < g->req[r].nkeys; k++) {
			const struct tr_key *e = &g->keys[g->req[r].first + k];

			kp_x_keyn(e->op, e->b, e->len);
		}
	}
	if (!t || !n)
		return;
	tr_expect(t, g, tr_want, n);
	if (kp_shards_read(tr_after, n)) {
		kt_failf(__FILE__, __LINE__, "read ks_shards failed");
		return;
	}
	for (i = 0; i < n; i++) {
		if (tr_after[i].reads - tr_before[i].reads !=
			    tr_want[i].reads ||
		    tr_after[i].writes - tr_before[i].writes !=
			    tr_want[i].writes ||
		    tr_after[i].misdirected - tr_before[i].misdirected !=
			    tr_want[i].misdirected)
			bad++;
	}
	tr_pkts_checked++;
	tr_keys_checked += (__u64)g->nkeys;
	if (bad && g->nkeys == 1)
		kt_failf(
			__FILE__, __LINE__,
			"%s key of %u bytes '%.*s': kernel counted shard %d, user space says %u",
			kp_op_name(g->keys[0].op), g->keys[0].len,
			g->keys[0].len > 24 ? 24 : g->keys[0].len, g->keys[0].b,
			tr_counted_shard(n),
			ks_ring_lookup(&t->ring, g->keys[0].b, g->keys[0].len));
	else if (bad)
		kt_failf(
			__FILE__, __LINE__,
			"packet of %d keys (%zu bytes): %d shards counted other than user space says",
			g->nkeys, g->len, bad);
	memcpy(tr_before, tr_after, n * sizeof(tr_after[0]));
}

void tr_follow(const struct tr_ring *t)
{
	tr_cur = t;
	memset(tr_before, 0, sizeof(tr_before));
	if (t && kp_shards_read(tr_before, t->ring.half->meta.nshards))
		kt_failf(__FILE__, __LINE__, "read ks_shards failed");
}

void tr_load(const struct tr_ring *t)
{
	kp_ring_load(t ? &t->ring : NULL);
	tr_follow(t);
}

/*
 * npkts packets of every shape, one at a time: lone short gets (the fast
 * path), long gets, gets, multi-gets, sets, one-key commands pipelined,
 * binary requests with keys of any byte, over TCP and UDP, IPv4 and IPv6.
 */