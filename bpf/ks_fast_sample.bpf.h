/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_fast_sample.bpf.h - the lone get's sampled key taken straight from
 * the packet (issue 27): one call, no helper.
 *
 * Why: the general way (ks_key_clear, bpf_xdp_load_bytes, ks_key_take,
 * ks_key_hash_scratch, ks_ring_place) makes four BPF-to-BPF calls and a
 * helper call whose own returns go several deep. On the AMD VM of issue 27
 * (spectre_v2 Retpolines, SRSO "Safe RET") every return is mitigated, and
 * `make bench-line LINE_SAMPLE=1` put those calls at about 60 ns of the
 * 115-135 a sampled key cost over an unsampled one: more than the sketch
 * (35-40) or the candidate table (15-30). Here the key's words are read
 * from the packet the fast path has just checked (ks_fast_get_line), the
 * hash is taken on the way, and the sketch, the candidates and the hot
 * table see exactly what ks_key_take() would have given them: the same
 * s->key bytes (zero past the key), the same hash (ks_key_hash()'s three
 * steps), the same calls of ks_key_record() and ks_hot_key().
 *
 * The word loads are ks_fast_hot_maybe()'s (ks_fastpath.bpf.h). A helper
 * shared by both, returning the word through a pointer or returning the
 * load's address, made clang give up the loops' unrolling (-Werror), so
 * the six lines stand twice.
 */
#ifndef KS_FAST_SAMPLE_BPF_H
#define KS_FAST_SAMPLE_BPF_H

#include "ks_fastpath.bpf.h"

/*
 * s->key from the lone get at payload offset off (key of len bytes,
 * 4..KS_FAST_KEY, after "get "), its hash returned; 0 when the packet
 * cannot be read this way, and then s->key_words still covers every
 * nonzero word of s->key, so the general way can take over.
 */
static __always_inline __u64 ks_fast_key_load(struct ks_scratch *s, void *data,
					      void *end, __u32 off, __u32 len)
{
	__u32 i, rem, rem_off, old, words;
	__u64 h, w;
	void *q;

	if (len < 4 || len > KS_FAST_KEY || off > 0x3fff)
		return 0;
	/* a mask clang must keep, as in ks_fast_hot_maybe() */
	KS_OPAQUE(off);
	off &= 0x3fff;
	words = ks_key_words(len);
	old = s->key_words;
	/* the words an earlier, longer key left behind: zero, so no byte
	 * of it lingers in a candidate slot or trace event */
	if (old > KS_FAST_KEY / 8) {
		ks_key_clear(s); /* rare: that key was longer than 32 bytes */
	} else {
#pragma unroll
		for (i = 0; i < KS_FAST_KEY / 8; i++)
			if (i >= words && i < old)
				s->key[i] = 0;
	}
	s->key_words = words;
	h = ks_key_hash_init(len);
#pragma unroll
	for (i = 0; i < KS_FAST_KEY / 8; i++) {
		if (i * 8 >= len)
			break;
		rem = len - i * 8;
		if (rem >= 8) {
			q = data + off + 4 + i * 8;
			if (q + 8 > end)
				return 0;
			w = *(__u64 *)q;
		} else {
			/* the word that ends with the key, its top rem bytes
			 * shifted down: zero past the key, as ks_key_copy()
			 * leaves it (the key is at least 4 bytes after "get ") */
			rem_off = off + len - 4;
			KS_OPAQUE(rem_off);
			q = data + (rem_off & 0x7fff);
			if (q + 8 > end)
				return 0;
			w = *(__u64 *)q >> ((8 - rem) * 8);
		}
		s->key[i & (KS_KEY_WORDS - 1)] = w;
		h = ks_key_hash_word(h, w);
	}
	return ks_key_hash_final(h);
}

/* Is a ring loaded in the active half? Without one ks_ring_place() has
 * nothing to do, and a call less is worth a lookup here. */
static __always_inline bool ks_ring_loaded(const struct ks_scratch *s)
{
	__u32 half = s->ring & 1;
	struct ks_ring_half *h = bpf_map_lookup_elem(&ks_ring, &half);

	return h && h->meta.nshards;
}

/*
 * ks_key_take() for the lone get: 1 when done (s->ring_pending set if the
 * key waits for ks_ring_place()), 0 when the general way must do it.
 */
static __always_inline int ks_fast_take(struct ks_scratch *s, void *data,
					void *end, __u32 off, __u32 len,
					__u32 due)
{
	__u64 hash;

	if (!s)
		return 0;
	hash = ks_fast_key_load(s, data, end, off, len);
	if (!hash)
		return 0;
	if (due) {
		ks_key_record(s, hash, len, KS_OP_GET);
		if (s->ring_pending && !ks_ring_loaded(s))
			s->ring_pending = 0;
	}
	if (s->hot && ks_hot_maybe(hash))
		ks_hot_key(s, hash, KS_OP_GET);
	return 1;
}

/*
 * The express path's sampled lone get (issue 27; keysteer.bpf.c). A get
 * due for sampling used to fall to the general path: the headers parsed
 * again, the scratch's per-packet fields set up, ks_fast_get(),
 * ks_fast_take_*() and ks_key_record() (calls, each return mitigated on
 * the AMD VM of issue 27). While the agent drains the sample log and
 * nothing else wants the key, all that leaves of it is one record in the
 * log and two counters, which this writes from the packet the express
 * path has checked (ks_fast_get_line), and with a ring loaded the key's
 * placement, for which it calls ks_ring_place() as the general path does.
 *
 * ks_express_sample_ok(): what needs no packet byte, tested before the
 * line is read: the log on, no trace (its event wants the client's
 * address and the scratch's key), a rate the record holds.
 */
static __always_inline bool ks_express_sample_ok(const struct ks_config *cfg,
						 const struct ks_scratch *s)
{
	return (cfg->flags & KS_CFG_SLOG) && !cfg->trace &&
	       s->sample_n <= 0xffff;
}

/*
 * The lone get at payload offset off (plen bytes, "get <key>\r\n",
 * checked by the express path) appended to this CPU's sample log, exactly
 * as ks_fast_take() -> ks_key_record() -> ks_slog_put() would append it
 * (the same hash, class, epoch, rate and key words, zero past the key),
 * and counted (KS_PKT_SAMPLED, KS_PKT_SLOG). When due for placement
 * (ks_place_next: 1 in s->place_p sampled keys) and with a ring loaded
 * in the active half (issue 27), placed and counted for its shard by the general
 * path's own ks_ring_place(), given what ks_fast_take() and ks_handle()
 * leave it: the key's words in s->key (zero past the key, as
 * ks_fast_key_load() leaves them), its length, class and hash in
 * s->ring_*, the half this packet read in s->ring, and the client in
 * s->saddr, s->sport and s->proto, read from the headers the express path
 * checked at their fixed offsets; so a key this host owns, a misdirected
 * one (its client kept in ks_misdirect), one under a shard rule and one
 * the ring cannot place are counted exactly as the general path counts
 * them, and none goes back to it. Returns 0, having published and
 * counted nothing, when the general path must take the key: the log full
 * (it counts that and feeds the in-kernel sketch), no log entry for this
 * CPU, a placement still pending (never, as ks_ring_flush() leaves the
 * scratch), or a load the verifier cannot see inside the packet. A record
 * slot past the head may have been written then: no reader looks past
 * the head, and the next record overwrites it.
 */
static __always_inline int ks_express_sample(const struct ks_config *cfg,
					     struct ks_scratch *s, void *data,
					     void *end, __u32 off, __u32 plen)
{
	__u32 len, i, rem, rem_off;
	struct ks_pkt_counters *pc;
	struct ks_slog_pos *pos;
	struct ks_ring_half *rh;
	struct ks_slog_rec *r;
	__u64 head, h, w;
	struct iphdr *ip;
	__u32 *sa, place;
	bool ringed = false;
	__be16 *l4;
	void *p, *q;

	if (!cfg || !s || off > 0xff || plen < KS_FAST_MIN ||
	    plen > KS_FAST_MAX)
		return 0;
	len = plen - 6; /* less "get " and "\r\n" */
	/* a full log is the general path's to count */
	r = ks_slog_slot(&pos, &head, false);
	if (!r)
		return 0;
	/* a mask clang must keep, as in ks_fast_hot_maybe() */
	KS_OPAQUE(off);
	p = data + (off & 0xff);
	/* the key's words straight into the record, as ks_fast_key_load()
	 * reads them into s->key, hashed on the way */
	h = ks_key_hash_init(len);
#pragma unroll
	for (i = 0; i < KS_FAST_KEY / 8; i++) {
		w = 0;
		if (i * 8 < len) {
			rem = len - i * 8;
			if (rem >= 8) {
				q = p + 4 + i * 8;
				if (q + 8 > end)
					return 0;
				w = *(__u64 *)q;
			} else {
				/* the word that ends with the key, its top
				 * rem bytes shifted down */
				rem_off = len - 4;
				KS_OPAQUE(rem_off);
				q = p + (rem_off & 0x3f);
				if (q + 8 > end)
					return 0;
				w = *(__u64 *)q >> ((8 - rem) * 8);
			}
			h = ks_key_hash_word(h, w);
		}
		r->key[i] = w;
	}
#pragma unroll
	for (i = KS_FAST_KEY / 8; i < KS_SLOG_KEY / 8; i++)
		r->key[i] = 0;
	h = ks_key_hash_final(h);
	/* the placement's countdown, stored with the counters below (a
	 * return before them leaves the key, and its tick, to the general
	 * path); a key not due for placement skips the ring altogether.
	 * After the loop, as the counters' lookup below: nothing of it live
	 * across the loop's word loads */
	place = ks_place_next(s);
	if (!place) {
		/* the half this packet reads, where ks_ring_place() reads
		 * it (the general path writes s->ring again before it
		 * reads it) */
		s->ring = cfg->ring & 1;
		rh = bpf_map_lookup_elem(&ks_ring, &s->ring);
		ringed = rh && rh->meta.nshards;
	}
	/*
	 * Looked up here, not before the loop: a value less live across
	 * it, and this frame (88 bytes, 96 as the kernel rounds it) is on
	 * every chain of calls below ks_ring_place(). The kernel allows
	 * 512 bytes of stack to a chain, each frame rounded up to 16 and
	 * without bpf_loop()'s inlined state; through here (ks_ingress
	 * 208 as it counts it) the deepest, pymemcache's ring (ks_ring_rdv()
	 * 48, its node callback 48), stands at 432, and the MD5 of ketama
	 * and twemproxy rings at 368 (ks_ring_md5_block() 32). That one
	 * stood at 512 while MD5 kept its block words on the stack (a
	 * 176-byte frame; issue 27, docs/benchmarks.md "The stack"), and
	 * a first form of this function 16 bytes larger was refused
	 * ("combined stack size of 5 calls is 528. Too large").
	 * tests/prog/t_stack.c fails when any chain of any program has
	 * less than KS_STACK_MARGIN (64) bytes to spare.
	 */
	pc = ks_pkt_counters();
	if (!pc)
		return 0;
	if (ringed) {
		/* the ring's search reads the key in s->key: its words go
		 * there, zero past the key, as ks_fast_key_load() leaves
		 * them (one block after the loop: inside it, a branch a word
		 * verified 500 instructions more) */
		if (s->key_words > KS_FAST_KEY / 8)
			ks_key_clear(s); /* rare: a key longer than 32 bytes */
#pragma unroll
		for (i = 0; i < KS_FAST_KEY / 8; i++)
			s->key[i] = r->key[i];
		s->key_words = ks_key_words(len);
		/* a placement still pending is the general path's */
		if (s->ring_pending)
			return 0;
		/* the client, where ks_ring_note_client() reads it for a
		 * misdirected key, as ks_handle() copies it from ks_l4: the
		 * address IPv4-mapped (::ffff:a.b.c.d), the source port (UDP
		 * and TCP alike, behind the option-less IPv4 header the
		 * express path checked), the protocol */
		ip = data + sizeof(struct ethhdr);
		l4 = (void *)(ip + 1);
		if ((void *)(l4 + 1) > end)
			return 0;
		sa = (__u32 *)s->saddr;
		sa[0] = 0;
		sa[1] = 0;
		sa[2] = 0xffff0000U;
		sa[3] = ip->saddr;
		s->sport = bpf_ntohs(*l4);
		s->proto = ip->protocol;
		/* what ks_key_record() -> ks_ring_defer() leaves for it */
		s->ring_len = len;
		s->ring_cls = KS_CLASS_READ;
		s->ring_hash = h;
		/* the one placement and count, the general path's own */
		ks_ring_place(s);
	}
	r->hash = h;
	r->len = (__u16)len;
	r->cls = KS_CLASS_READ;
	r->pad = 0;
	r->seq = (__u16)cfg->seq;
	r->n = (__u16)s->sample_n;
	ks_slog_publish(pos, head);
	s->place_cd = place;
	pc->n[KS_PKT_SAMPLED]++;
	pc->n[KS_PKT_SLOG]++;
	return 1;
}

/*
 * One global function per context, each verified once: inline, its word
 * loads' bounds gave the packet pointers the express path leaves live
 * ranges of their own at each exit, and the verifier walked the general
 * path once more for each (ks_tc_ingress 230,531 instructions).
 */
__noinline int ks_express_sample_xdp(struct xdp_md *ctx, struct ks_config *cfg,
				     struct ks_scratch *s, __u32 off,
				     __u32 plen)
{
	return ks_express_sample(cfg, s, (void *)(long)ctx->data,
				 (void *)(long)ctx->data_end, off, plen);
}

__noinline int ks_express_sample_tc(struct __sk_buff *ctx,
				    struct ks_config *cfg, struct ks_scratch *s,
				    __u32 off, __u32 plen)
{
	return ks_express_sample(cfg, s, (void *)(long)ctx->data,
				 (void *)(long)ctx->data_end, off, plen);
}

/* The express path's call of the one for its context (is_xdp a constant). */
static __always_inline int ks_express_sample_ctx(void *ctx,
						 const struct ks_config *cfg,
						 struct ks_scratch *s,
						 __u32 off, __u32 plen,
						 const bool is_xdp)
{
	return is_xdp ? ks_express_sample_xdp(ctx, (struct ks_config *)cfg, s,
					      off, plen)
		      : ks_express_sample_tc(ctx, (struct ks_config *)cfg, s,
					     off, plen);
}

/* One global function per context, each verified once. */
__noinline int ks_fast_take_xdp(struct xdp_md *ctx, struct ks_scratch *s,
				__u32 off, __u32 len, __u32 due)
{
	return ks_fast_take(s, (void *)(long)ctx->data,
			    (void *)(long)ctx->data_end, off, len, due);
}

__noinline int ks_fast_take_tc(struct __sk_buff *ctx, struct ks_scratch *s,
			       __u32 off, __u32 len, __u32 due)
{
	return ks_fast_take(s, (void *)(long)ctx->data,
			    (void *)(long)ctx->data_end, off, len, due);
}

#endif
