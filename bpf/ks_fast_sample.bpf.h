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
