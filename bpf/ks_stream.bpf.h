/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_stream.bpf.h - a segment's payload through the memcached parser,
 * window by window, to its end: a jumbo frame or a 64 KiB GRO aggregate
 * as well as a 60-byte get. A data block is skipped by its length without
 * being read; a unit that runs past the end of a window is read again at
 * the start of the next one, and one that runs past the end of the
 * segment is carried (its bytes into ks_carry) to the next segment of
 * the flow, where the parse goes on as if the stream had never been cut.
 */
#ifndef KS_STREAM_BPF_H
#define KS_STREAM_BPF_H

#include "ks_flow.bpf.h"
#include "ks_parse_mc.bpf.h"

/* Windows per segment: 64 KiB of payload is at most 43 windows of 1.5 KiB
 * of new bytes, with room for windows the step budget ends early. */
#define KS_MAX_WINDOWS 64

/*
 * The context layer: copying payload bytes is the one thing XDP and tc do
 * differently. is_xdp is a constant in each caller, so each program keeps
 * only its own branch.
 */
static __always_inline long ks_ctx_load(void *ctx, __u32 off, void *dst,
					__u32 len, const bool is_xdp)
{
	return is_xdp ? bpf_xdp_load_bytes(ctx, off, dst, len)
		      : bpf_skb_load_bytes(ctx, off, dst, len);
}

/* The flow's cut bytes to the front of the window; their length, or -1. */
__noinline int ks_carry_load(struct ks_scratch *s, __u64 id, __u32 len)
{
	struct ks_carry *cv;
	__u32 i;

	if (!s)
		return -1;
	cv = bpf_map_lookup_elem(&ks_carry, &id);
	if (!cv || cv->len != len || len > KS_CARRY)
		return -1;
	for (i = 0; i < KS_CARRY / 8; i++) {
		if (i * 8 >= len)
			break;
		*(__u64 *)&s->win[i * 8] = *(__u64 *)&cv->b[i * 8];
	}
	return len;
}

/* Window bytes [from, s->end) into the flow's ks_carry entry. */
__noinline int ks_carry_save(struct ks_scratch *s, __u64 id, __u32 from)
{
	__u32 i, len;

	if (!s || from > s->end)
		return -1;
	len = s->end - from;
	if (len > KS_CARRY)
		return -1;
	s->ctmp.len = len;
	for (i = 0; i < KS_CARRY / 8; i++) {
		if (i * 8 >= len)
			break;
		*(__u64 *)&s->ctmp.b[i * 8] = ks_win_word(s, from + i * 8);
	}
	return bpf_map_update_elem(&ks_carry, &id, &s->ctmp, BPF_ANY)
		       ? -1
		       : (int)len;
}

/* The data block of the request waiting on it is through: count it. */
static __always_inline void ks_stream_pend_done(struct ks_scratch *s)
{
	if (s->pend)
		ks_count_op(s->pend_op, 1, s->pend_keys, s->pend_len);
	s->pend = 0;
}

/* The walk through one segment's windows. */
struct ks_walk {
	__u32 payload_off;
	__u32 pos;   /* next payload byte to read */
	__u32 limit; /* the byte after the last one to parse */
	__u32 carry; /* cut bytes at the front of the next window */
	__u32 left;  /* bytes of a data block still to skip */
	__u32 keep;  /* at the end: bytes from s->cut to carry on */
	__u32 lost;  /* 1: the parser lost the stream; 2: a unit too long */
	__u32 done;
};

/*
 * One window: skip what a data block covers, read the next bytes behind
 * any carried ones, parse. Returns 1 when the segment is through.
 */
static __always_inline long ks_window(void *ctx, struct ks_scratch *s,
				      struct ks_walk *w, const bool is_xdp)
{
	__u32 len, room, carry = w->carry;
	int r;

	if (w->left) {
		/* inside a data block: skipped, never read */
		len = w->limit - w->pos < w->left ? w->limit - w->pos : w->left;
		w->pos += len;
		w->left -= len;
		if (w->left)
			return 1;
		ks_stream_pend_done(s);
	}
	if ((w->pos >= w->limit && !carry) || carry > KS_CARRY)
		return 1;
	room = KS_WIN - carry;
	len = w->limit - w->pos < room ? w->limit - w->pos : room;
	/* 1..KS_WIN as the verifier can see it: clang hands the helper a
	 * copy of len that the min above did not bound */
	if (len && ks_ctx_load(ctx, w->payload_off + w->pos, s->win + carry,
			       ((len - 1) & (KS_WIN - 1)) + 1, is_xdp)) {
		ks_count_err(KS_ERR_TRUNC_L4);
		w->lost = 1;
		return 1;
	}
	s->end = carry + len;
	s->off = 0;
	/* a key list goes on in a window of its own */
	s->req_start = 0;
	r = ks_mc_parse(s);
	if (r == KS_STEP_DONE || r == KS_STEP_SKIP) {
		w->pos += len;
		w->carry = 0;
		if (r == KS_STEP_SKIP)
			w->left = s->skip_to - s->end;
		return 0;
	}
	if (r == KS_STEP_LIMIT || r == KS_STEP_CUT) {
		if (r == KS_STEP_LIMIT)
			s->cut = s->off;
		if (s->state == KS_ST_KEYS)
			s->acc += s->cut - s->req_start;
		if (r == KS_STEP_LIMIT || w->pos + len < w->limit) {
			if (s->cut < carry) {
				/* a carried unit still unfinished in a full
				 * window: longer than anything memcached
				 * reads as one line */
				ks_count_pkt(KS_PKT_RESYNC_CARRY);
				w->lost = 2;
				return 1;
			}
			/* more of the segment: read on from the cut */
			w->pos += s->cut - carry;
			w->carry = 0;
			return 0;
		}
		w->keep = s->end - s->cut;
		w->pos = w->limit;
		return 1;
	}
	w->lost = 1; /* KS_STEP_LOST, counted by the parser */
	return 1;
}

/* Global, so the verifier checks a window once, with no assumption about
 * the walk it is part of, and not once per window of a 64 KiB aggregate. */
__noinline int ks_window_xdp(struct xdp_md *ctx, struct ks_scratch *s,
			     struct ks_walk *w)
{
	if (!s || !w)
		return 1;
	return ks_window(ctx, s, w, true);
}

__noinline int ks_window_tc(struct __sk_buff *ctx, struct ks_scratch *s,
			    struct ks_walk *w)
{
	if (!s || !w)
		return 1;
	return ks_window(ctx, s, w, false);
}

/*
 * Parse payload [s->seg_start, s->seg_limit) of a segment. f is its flow
 * (NULL for UDP, or TCP without stream state), whose state the parse
 * starts from and, when s->seg_save, leaves its own in.
 */
static __always_inline void ks_stream(void *ctx, struct ks_scratch *s,
				      const struct ks_l4 *l4, struct ks_flow *f,
				      const bool is_xdp)
{
	struct ks_walk w = { .payload_off = l4->payload_off,
			     .pos = s->seg_start,
			     .limit = s->seg_limit };
	bool save = f && s->seg_save;
	long n;
	int r;

	s->state = KS_ST_COMMAND;
	s->op = 0;
	s->nkeys = 0;
	s->acc = 0;
	s->pend = 0;
	/* a datagram begins with a request; a TCP segment, unless we know
	 * where it stands, may not */
	s->resync = l4->proto == IPPROTO_TCP;
	if (save) {
		s->resync = f->mode == KS_FM_UNSYNC;
		if (!s->resync && f->mode != KS_FM_SKIP)
			s->state = f->mode;
		s->op = f->op;
		s->nkeys = f->nkeys;
		s->acc = f->acc;
		w.left = f->left;
		if (f->mode == KS_FM_SKIP) {
			/* the request the block belongs to counts at its end */
			s->pend = f->op < KS_OP_MAX;
			s->pend_op = f->op;
			s->pend_keys = f->nkeys;
			s->pend_len = f->acc;
		}
		if ((f->mode != KS_FM_COMMAND || f->carry) && !s->resync)
			ks_count_pkt(KS_PKT_FLOW_CONT);
		if (f->carry) {
			r = ks_carry_load(s, f->id, f->carry);
			f->carry = 0;
			if (r < 0) {
				/* evicted from ks_carry: the cut unit is gone */
				ks_count_pkt(KS_PKT_RESYNC_CARRY);
				ks_flow_unsync(s, f);
				s->resync = 1;
				s->state = KS_ST_COMMAND;
				s->nkeys = 0;
			} else {
				w.carry = r;
			}
		}
	}

	/* each turn is one call of a global function: cheap to verify */
	for (n = 0; n < KS_MAX_WINDOWS; n++) {
		if (is_xdp ? ks_window_xdp(ctx, s, &w)
			   : ks_window_tc(ctx, s, &w))
			break;
		/* through: the next window would find only that (a window
		 * that returns 0 leaves no carry), and a call and its return
		 * cost 8 ns where returns are mitigated (issue 27) */
		if (w.pos >= w.limit)
			break;
	}
	if (n >= KS_MAX_WINDOWS && !w.lost && w.pos < w.limit) {
		ks_count_err(KS_ERR_ITEM_LIMIT);
		w.lost = 1;
	}

	if (!save) {
		/* a datagram, or a guess in a hole: what was cut is truncated
		 * and memcached serves none of it; a first fragment's data
		 * block memcached gets whole, reassembled */
		if ((w.keep || s->state == KS_ST_KEYS) && !w.lost)
			ks_count_err(KS_ERR_TRUNC_REQ);
		/* the block within the datagram (a first fragment's goes on
		 * in the later ones), or memcached never completes it */
		if (l4->proto == IPPROTO_TCP ||
		    w.left <= l4->payload_len - l4->avail)
			ks_stream_pend_done(s);
		else if (s->pend)
			ks_count_err(KS_ERR_TRUNC_REQ);
		if (f && (w.keep || w.lost))
			ks_disarm_all(s);
		return;
	}
	if (!w.lost && w.keep) {
		if (ks_carry_save(s, f->id, s->cut) < 0) {
			ks_count_pkt(KS_PKT_RESYNC_CARRY);
			w.lost = 2;
		} else {
			f->carry = w.keep;
		}
	}
	f->op = s->op;
	f->nkeys = s->state == KS_ST_KEYS ? s->nkeys : 0;
	if (w.lost) {
		/* a request skipped by its length or passed over midstream
		 * leaves the stream where a guess is all we have */
		if (w.lost == 1 && !s->resync)
			ks_count_pkt(KS_PKT_RESYNC_LOST);
		f->mode = s->state;
		ks_flow_unsync(s, f);
		return;
	}
	f->mode = w.left ? KS_FM_SKIP : s->state;
	if (s->resync)
		f->mode = KS_FM_UNSYNC; /* still no request seen */
	f->left = w.left;
	f->acc = s->acc;
	if (w.left) {
		/* the request waits for the rest of its block; KS_OP_MAX for
		 * a block memcached reads but answers with an error */
		f->op = s->pend ? s->pend_op : KS_OP_MAX;
		f->nkeys = s->pend_keys;
		f->acc = s->pend_len;
	}
}

/*
 * One function per program type. XDP's is inline (issue 27: a call and
 * its return cost 8 ns where returns are mitigated, and this one is on
 * every parsed packet): the verifier walks it once more per path into
 * it, about 3,100 instructions. tc's stays a global function, checked
 * once: `make bench` does not time tc, so a cut there could not be
 * shown to pay.
 */
static __always_inline int ks_stream_xdp(struct xdp_md *ctx,
					 struct ks_scratch *s,
					 const struct ks_l4 *l4)
{
	struct ks_flow *f;

	if (!s || !l4)
		return 0;
	f = ks_flow_at(s);
	ks_stream(ctx, s, l4, f, true);
	if (f && s->seg_save && (l4->tcp_flags & KS_TCP_FIN))
		ks_flow_release(f);
	return 0;
}

__noinline int ks_stream_tc(struct __sk_buff *ctx, struct ks_scratch *s,
			    const struct ks_l4 *l4)
{
	struct ks_flow *f;

	if (!s || !l4)
		return 0;
	f = ks_flow_at(s);
	ks_stream(ctx, s, l4, f, false);
	if (f && s->seg_save && (l4->tcp_flags & KS_TCP_FIN))
		ks_flow_release(f);
	return 0;
}

#endif
