/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_fastpath.bpf.h - the commonest request, "get <key>\r\n" alone in a
 * segment with a key of up to KS_FAST_KEY bytes, counted straight from the
 * packet when it is not due for sampling.
 *
 * Why: the general parser copies the payload into the window and walks it
 * through a chain of global functions; for a short get that costs ~40 ns,
 * three times the packet parse. Here a handful of word loads decide. Any
 * doubt (another command, a longer key, a space inside, a sample due)
 * returns false and the general parser takes the packet, so the two paths
 * can never disagree: the fast path only ever counts what the general
 * path would count, and tests run both on the same inputs.
 */
#ifndef KS_FASTPATH_BPF_H
#define KS_FASTPATH_BPF_H

#include "ks_parse_mc.bpf.h"

#define KS_FAST_KEY 32
#define KS_FAST_MIN 10 /* "get " + 4-byte key + "\r\n" */
#define KS_FAST_MAX (4 + KS_FAST_KEY + 2)

/* Low n (< 8) bytes of a word. */
static __always_inline __u64 ks_low_bytes(__u32 n)
{
	return (1ULL << (n * 8)) - 1;
}

/*
 * Is the payload at p "get " + key + "\r\n" with no delimiter in the key?
 * The key [4, key_end) is covered by the first word's upper half, whole
 * words from 8 on, and one word ending exactly at key_end, so every byte
 * is looked at and no load strays past the payload.
 */
static __always_inline bool ks_fast_get_line(void *p, void *end, __u32 plen)
{
	__u32 key_end = plen - 2, off = key_end - 8, lo;
	__u64 w;
	void *q;

	if (p + 8 > end)
		return false;
	w = *(__u64 *)p;
	/* 'A' fill: a borrow from the space would flag the bytes above it */
	if ((__u32)w != KS_S4('g', 'e', 't', ' ') ||
	    ks_mask_delim((w >> 32) | ('A' * KS_ONES) << 32))
		return false;

	if (off > KS_FAST_MAX - 10)
		return false;
	q = p + off;
	if (q + 10 > end)
		return false;
	if (*(__u16 *)(q + 8) != KS_S2('\r', '\n'))
		return false;
	lo = off < 4 ? 4 - off : 0; /* bytes of "get " in that word */
	w = *(__u64 *)q;
	w = (w & ~ks_low_bytes(lo)) | ('A' * KS_ONES & ks_low_bytes(lo));
	if (ks_mask_delim(w))
		return false;

#pragma unroll
	for (lo = 8; lo < KS_FAST_MAX - 8; lo += 8) {
		if (lo + 8 > key_end)
			break;
		if (p + lo + 8 > end)
			return false;
		if (ks_mask_delim(*(__u64 *)(p + lo)))
			return false;
	}
	return true;
}

enum ks_fast {
	KS_FAST_NO = 0, /* not for the fast path: nothing counted */
	KS_FAST_DONE,   /* counted */
	KS_FAST_SAMPLE, /* counted, and the key is due for sampling */
};

/*
 * A lone short get counted from the packet, or KS_FAST_NO. Counted in pc
 * (ks_pkts, which the caller already holds and has just written), not in
 * ks_ops: no second lookup, no other line. The agent adds the two to
 * KS_OP_GET when it reads the maps (ks_ops_fold_fast).
 *
 * The payload is found from the packet's start and its offset, not from
 * the parse cursor (issue 27): the cursor's pointer carries every header
 * layout's own offset and range (VLAN tags, IPv4 options, IPv6 extension
 * headers), and while it was live the verifier walked the rest of
 * ks_handle() once per layout; an offset hidden from clang and masked
 * gives every layout the same pointer, and ks_ingress went from 207,273
 * instructions to 174,417. Headers past 16 KiB take the general parser.
 */
static __always_inline enum ks_fast ks_fast_get(struct ks_pkt_counters *pc,
						struct ks_scratch *s,
						void *data, void *end,
						__u32 off, __u32 plen)
{
	if (plen < KS_FAST_MIN || plen > KS_FAST_MAX || off > 0x3fff)
		return KS_FAST_NO;
	/* a mask clang must keep: it would fold data + off back into the
	 * cursor's pointer */
	KS_OPAQUE(off);
	if (!ks_fast_get_line(data + (off & 0x3fff), end, plen))
		return KS_FAST_NO;
	pc->n[KS_PKT_FAST_GET]++;
	pc->n[KS_PKT_FAST_GET_BYTES] += plen;
	return ks_sample_due(s) ? KS_FAST_SAMPLE : KS_FAST_DONE;
}

/*
 * With the hot table on, may the lone get at payload offset off, key of
 * len bytes (4..KS_FAST_KEY, checked by ks_fast_get_line), be hot? Its
 * key hash taken straight from the packet, its bucket's bit in
 * ks_hot_filter: a key of an empty bucket costs no copy, no call chain
 * and no lookup. Returns 0 for such a key, its hash when its bucket may
 * hold it, KS_FAST_HOT_DOUBT when the packet cannot be read this way (the
 * slow way decides, as it does for a hash that happens to equal it).
 */
#define KS_FAST_HOT_DOUBT (~0ULL)

static __always_inline __u64 ks_fast_hot_maybe(void *data, void *end, __u32 off,
					       __u32 len)
{
	__u64 h, w;
	__u32 i, rem, rem_off;
	void *q;

	/* headers of more than 16 KiB are not worth a fast answer; the
	 * bound lets the verifier keep the range checks below */
	if (len < 4 || len > KS_FAST_KEY || off > 0x3fff)
		return KS_FAST_HOT_DOUBT;
	/* a mask clang must keep: the compare above was on a copy */
	KS_OPAQUE(off);
	off &= 0x3fff;
	h = ks_key_hash_init(len);
#pragma unroll
	for (i = 0; i < KS_FAST_KEY / 8; i++) {
		if (i * 8 >= len)
			break;
		rem = len - i * 8;
		if (rem >= 8) {
			q = data + off + 4 + i * 8;
			if (q + 8 > end)
				return KS_FAST_HOT_DOUBT;
			w = *(__u64 *)q;
		} else {
			/* the word that ends with the key: its top rem
			 * bytes (the key is at least 4 bytes after "get ") */
			rem_off = off + len - 4;
			KS_OPAQUE(rem_off);
			q = data + (rem_off & 0x7fff);
			if (q + 8 > end)
				return KS_FAST_HOT_DOUBT;
			w = *(__u64 *)q >> ((8 - rem) * 8);
		}
		h = ks_key_hash_word(h, w);
	}
	h = ks_key_hash_final(h);
	return ks_hot_maybe(h) ? h : 0;
}

/* One global function per context, each verified once. */
__noinline __u64 ks_fast_hot_xdp(struct xdp_md *ctx, __u32 off, __u32 len)
{
	return ks_fast_hot_maybe((void *)(long)ctx->data,
				 (void *)(long)ctx->data_end, off, len);
}

__noinline __u64 ks_fast_hot_tc(struct __sk_buff *ctx, __u32 off, __u32 len)
{
	return ks_fast_hot_maybe((void *)(long)ctx->data,
				 (void *)(long)ctx->data_end, off, len);
}

#endif
