/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_flow.bpf.h - where each client TCP connection stands: the next
 * sequence number and the parse state between two segments (struct
 * ks_flow in keysteer.h), and the bytes of a request cut before its key
 * or line was whole (ks_carry).
 *
 * memcached reads a connection as one byte stream; clients cut it into
 * segments anywhere (a multi-get's key list, a pipelined set's value, a
 * binary header). Following the stream is what makes the counts exact:
 * every byte is parsed once, in order, from the state the previous
 * segment left.
 */
#ifndef KS_FLOW_BPF_H
#define KS_FLOW_BPF_H

#include "ks_count.bpf.h"
#include "ks_scratch.bpf.h"
#include "ks_parse_net.bpf.h"
#include "ks_hot.bpf.h"

#define KS_TCP_FIN 0x01
#define KS_TCP_SYN 0x02
#define KS_TCP_RST 0x04

/* Pinned with the rest: an agent that takes over a dead one's attachment
 * loads the program again, and its streams must go on where they were. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KS_FLOW_BUCKETS);
	__type(key, __u32);
	__type(value, struct ks_flow_bucket);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, KS_CARRY_FLOWS);
	__type(key, __u64);
	__type(value, struct ks_carry);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_carry SEC(".maps");

/*
 * The flow's way in its bucket, or a way taken for it: a free one, else
 * the one used longest ago (an eviction: that flow resynchronises when it
 * sends again). *found tells which.
 */
static __always_inline struct ks_flow *ks_flow_way(__u32 b, __u64 id, __u16 now,
						   bool *found, __u32 *way)
{
	struct ks_flow_bucket *bk;
	__u32 w, victim = 0;
	__u16 age, oldest = 0;

	bk = bpf_map_lookup_elem(&ks_flows, &b);
	if (!bk)
		return NULL;
	*found = false;
#pragma unroll
	for (w = 0; w < KS_FLOW_WAYS; w++) {
		if (bk->way[w].id == id) {
			*found = true;
			*way = w;
			return &bk->way[w];
		}
		age = bk->way[w].id ? (__u16)(now - bk->way[w].stamp) : 0xffff;
		if (age > oldest) {
			victim = w;
			oldest = age;
		}
	}
	*way = victim;
	return &bk->way[victim & (KS_FLOW_WAYS - 1)];
}

static __always_inline void ks_flow_init(struct ks_flow *f, __u64 id,
					 __u32 next_seq, __u32 mode)
{
	f->id = id;
	f->next_seq = next_seq;
	f->gap_lo = f->gap_hi = next_seq;
	f->left = 0;
	f->acc = 0;
	f->nkeys = 0;
	f->carry = 0;
	f->mode = mode;
	f->op = 0;
}

static __always_inline void ks_flow_drop_carry(struct ks_flow *f)
{
	if (f->carry)
		bpf_map_delete_elem(&ks_carry, &f->id);
	f->carry = 0;
}

static __always_inline void ks_flow_release(struct ks_flow *f)
{
	/* a request the stream ended inside of is never served */
	if (f->carry || f->mode == KS_FM_KEYS ||
	    (f->mode == KS_FM_SKIP && f->op < KS_OP_MAX))
		ks_count_err(KS_ERR_TRUNC_REQ);
	ks_flow_drop_carry(f);
	f->id = 0;
	ks_count_pkt(KS_PKT_FLOW_END);
}

/*
 * The fail safe of steering: bytes of this host's streams went by
 * unparsed, and any of them may have been a write to a hot key. Every
 * armed key turns dirty, as on a write it saw (one wake-up event each),
 * so its reads go to the owner until the agent has refilled the copies.
 */
static long ks_disarm_one(__u32 i, void *ctx)
{
	const struct ks_hot_filter *f;
	struct ks_hot_slot *slot;
	__u32 zero = 0;
	__u64 hash;

	/* a bucket whose bit is clear holds no key (the agent sets the bit
	 * before it publishes a hash): its slots are not read */
	f = bpf_map_lookup_elem(&ks_hot_filter, &zero);
	if (f && !ks_hot_filter_has(f, i / KS_HOT_WAYS))
		return 0;
	slot = bpf_map_lookup_elem(&ks_hot, &i);
	if (!slot)
		return 1;
	hash = KS_READ_ONCE(slot->hash);
	if (hash && KS_READ_ONCE(slot->expires_ns) &&
	    KS_READ_ONCE(slot->armed_seq) == KS_READ_ONCE(slot->write_seq))
		ks_hot_dirty(slot, i, hash);
	return 0;
}

static __always_inline void ks_disarm_all(struct ks_scratch *s)
{
	ks_count_pkt(KS_PKT_HOT_DISARM);
	if (s->hot)
		bpf_loop(KS_HOT_SLOTS, ks_disarm_one, NULL, 0);
}

/* The stream's position is lost: resynchronise at a request boundary. */
static __always_inline void ks_flow_unsync(struct ks_scratch *s,
					   struct ks_flow *f)
{
	/* a request the stream is lost inside of: memcached runs none
	 * of what we could not follow, and nothing of it is counted */
	f->nkeys = 0;
	ks_flow_drop_carry(f);
	f->left = 0;
	f->mode = KS_FM_UNSYNC;
	ks_disarm_all(s);
}

/*
 * The common segments, settled with no more than a lookup: the next in order
 * of a known flow at a request boundary (parsed from its first byte), or
 * one wholly inside a data block (nothing to parse: the block's length
 * is all it changes). Returns 1 when settled, 0 for ks_flow_segment().
 *
 * Inline (issue 27): every in-order get and every continuation makes this
 * lookup, and a BPF-to-BPF call and its return cost about 8 ns on an AMD
 * host with Retpolines and Safe RET. Inline it once cost 312,728
 * instructions verified, its eight ways splitting every path after it;
 * since ks_fast_get() no longer keeps the parse cursor alive (82e7929)
 * the paths after it are few, and it costs 12,500 (ks_ingress 186,440).
 */
static __always_inline int ks_flow_quick(struct ks_scratch *s,
					 const struct ks_l4 *l4)
{
	struct ks_flow_bucket *bk;
	__u32 b, plen, w;
	struct ks_flow *f;
	__u64 id;

	if (!s || !l4)
		return 0;
	id = s->flow_id;
	b = ks_flow_bucket(id);
	plen = l4->payload_len;
	if (!plen || (l4->tcp_flags & (KS_TCP_SYN | KS_TCP_FIN | KS_TCP_RST)))
		return 0;
	bk = bpf_map_lookup_elem(&ks_flows, &b);
	if (!bk)
		return 0;
#pragma unroll
	for (w = 0; w < KS_FLOW_WAYS; w++) {
		f = &bk->way[w];
		if (f->id != id)
			continue;
		if (f->next_seq != l4->seq || f->carry)
			return 0;
		if (f->mode == KS_FM_COMMAND) {
			s->seg_flow = 1;
			s->seg_save = 1;
			s->seg_limit = plen;
			s->flow_bucket = b;
			s->flow_way = w;
		} else if (f->mode == KS_FM_SKIP && f->left >= plen) {
			f->left -= plen;
			if (!f->left) {
				/* the block is through: its request counts */
				if (f->op < KS_OP_MAX)
					ks_count_op(f->op, 1, f->nkeys, f->acc);
				f->mode = KS_FM_COMMAND;
			}
			ks_count_pkt(KS_PKT_FLOW_CONT);
			s->seg_done = 1;
		} else {
			return 0;
		}
		f->next_seq += plen;
		f->stamp = (__u16)s->seq;
		return 1;
	}
	return 0;
}

/*
 * What part of this segment to parse, and from which state (s->seg_*).
 * Returns the flow's way in bucket s->flow_bucket, or -1 when there is
 * nothing to parse: a pure ACK, a retransmission, a SYN or RST. Global, so
 * the verifier walks its branches once and not once per path after it.
 */
__noinline int ks_flow_segment(struct ks_scratch *s, const struct ks_l4 *l4)
{
	struct ks_flow *f;
	__u32 seq, plen;
	bool found;
	__u64 id;
	__u8 flags;
	__s32 d;

	if (!s || !l4)
		return -1;
	id = s->flow_id;
	seq = l4->seq;
	plen = l4->payload_len;
	flags = l4->tcp_flags;
	s->flow_bucket = ks_flow_bucket(id);
	f = ks_flow_way(s->flow_bucket, id, (__u16)s->seq, &found,
			&s->flow_way);
	if (!f)
		return -1;
	if (flags & KS_TCP_RST) {
		if (found)
			ks_flow_release(f);
		return -1;
	}
	if (flags & KS_TCP_SYN) {
		/* a new connection, or its SYN again: the first data byte
		 * is the one after the SYN's sequence number */
		if (found)
			ks_flow_drop_carry(f);
		seq += 1;
		ks_flow_init(f, id, seq, KS_FM_COMMAND);
		ks_count_pkt(KS_PKT_FLOW_NEW);
		found = true;
	} else if (!found) {
		if (!plen)
			return -1; /* an ACK says nothing of where requests begin */
		if (f->id)
			ks_flow_drop_carry(f); /* evicted */
		ks_flow_init(f, id, seq, KS_FM_UNSYNC);
		ks_count_pkt(KS_PKT_RESYNC_UNKNOWN);
	}
	f->stamp = (__u16)s->seq;
	s->seg_start = 0;
	s->seg_save = 1;
	s->seg_flow = 1;
	if (!plen)
		goto no_data;

	d = (__s32)(seq - f->next_seq);
	if (d > 0) {
		/* bytes missing before this segment: remember the hole, so
		 * that its bytes are parsed if they come late, not dropped
		 * as old */
		ks_count_pkt(KS_PKT_RESYNC_GAP);
		/* a request waiting on its block: memcached gets the block
		 * whole (TCP delivers the hole), so it runs */
		if (f->mode == KS_FM_SKIP && f->op < KS_OP_MAX)
			ks_count_op(f->op, 1, f->nkeys, f->acc);
		/* one hole at a time: an older one's bytes, if they still
		 * come, are dropped as old (after the disarm below) */
		f->gap_lo = f->next_seq;
		f->gap_hi = seq;
		ks_flow_unsync(s, f);
		f->next_seq = seq;
	} else if (d < 0) {
		/* any bytes of the hole, wherever they begin: memcached
		 * applies the writes in them only now */
		if (f->gap_lo != f->gap_hi && (__s32)(seq - f->gap_hi) < 0 &&
		    (__s32)(seq + plen - f->gap_lo) > 0 && seq != f->gap_lo)
			ks_disarm_all(s);
		if (seq == f->gap_lo && f->gap_lo != f->gap_hi) {
			/* the start of the hole, late: parse what it holds
			 * from a guessed boundary, without touching the
			 * stream's own state; its writes too may be
			 * acknowledged only now */
			ks_count_pkt(KS_PKT_FLOW_FILL);
			s->seg_save = 0;
			s->seg_limit = f->gap_hi - seq < plen ? f->gap_hi - seq
							      : plen;
			f->gap_lo = seq + s->seg_limit;
			if (f->gap_lo == f->gap_hi)
				f->gap_lo = f->gap_hi = f->next_seq;
			ks_disarm_all(s);
			return s->flow_way;
		}
		if ((__s32)(seq + plen - f->next_seq) <= 0) {
			ks_count_pkt(KS_PKT_FLOW_DUP);
			goto no_data;
		}
		ks_count_pkt(KS_PKT_FLOW_OVERLAP);
		s->seg_start = f->next_seq - seq;
	}
	s->seg_limit = plen;
	f->next_seq = seq + plen;
	/* the fast path reads a segment from its first byte, as a request */
	s->seg_fast = f->mode == KS_FM_COMMAND && !f->carry && !s->seg_start;
	return s->flow_way;
no_data:
	s->seg_flow = 0;
	if (flags & KS_TCP_FIN)
		ks_flow_release(f);
	return -1;
}

/* The flow ks_flow_segment() chose, or NULL. */
static __always_inline struct ks_flow *ks_flow_at(struct ks_scratch *s)
{
	struct ks_flow_bucket *bk;

	if (!s->seg_flow)
		return NULL;
	bk = bpf_map_lookup_elem(&ks_flows, &s->flow_bucket);
	return bk ? &bk->way[s->flow_way & (KS_FLOW_WAYS - 1)] : NULL;
}

/* A FIN whose payload the fast path counted: the flow is done. */
__noinline int ks_flow_fin(struct ks_scratch *s)
{
	struct ks_flow *f;

	if (!s)
		return 0;
	f = ks_flow_at(s);
	if (f)
		ks_flow_release(f);
	return 0;
}

#endif
