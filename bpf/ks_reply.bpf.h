/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_reply.bpf.h - the owner's hits and misses of hot keys, seen in its
 * replies. A miss exists only in memcached's answer ("END", "EN", binary
 * status 1), so the ingress side remembers each single-key read of a hot
 * key that a reply can be paired with exactly, and ks_tc_egress, on the
 * interface the replies leave by, pairs and classifies them:
 *
 *  - UDP: the frame header's request id comes back in the reply, so the
 *    pair (client address and port, request id) names the read exactly.
 *  - TCP: replies follow requests in order on a connection. The read is
 *    paired with the first reply segment sent after it arrived (its ack
 *    covers the read) when that segment's ack is exactly the read's end
 *    (nothing more came from the client: no pipelining) and its sequence
 *    is exactly where the client's ack stood when it sent the read
 *    (nothing else was on its way to the client). Anything else is
 *    counted unpaired, never guessed.
 *
 * The packet is never changed or dropped; a reply that is neither a hit
 * nor a miss is counted as malformed and passed like the rest.
 */
#ifndef KS_REPLY_BPF_H
#define KS_REPLY_BPF_H

#include "ks_hot.bpf.h"
#include "ks_parse_net.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KS_HOT_SLOTS);
	__type(key, __u32);
	__type(value, struct ks_hot_replies);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_hot_replies SEC(".maps");

/* Not pinned: a take-over starts with none waiting, which costs at most
 * the replies in flight at that moment (never counted). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, KS_REPLY_UDP_PEND);
	__type(key, struct ks_reply_udp_key);
	__type(value, struct ks_reply_pend);
} ks_reply_udp SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, KS_REPLY_TCP_PEND);
	__type(key, __u64); /* ks_flow_id() of the client's direction */
	__type(value, struct ks_reply_pend);
} ks_reply_tcp SEC(".maps");

enum ks_reply_kind {
	KS_REPLY_HIT = 0,
	KS_REPLY_MISS,
	KS_REPLY_UNPAIRED,
	KS_REPLY_MALFORMED,
};

/* One reply of slot idx's key, if the slot still holds that key: a slot
 * reused by another key since the read must not take its counts. */
static __always_inline void ks_reply_count(__u32 idx, __u64 hash, int kind)
{
	struct ks_hot_replies *r;
	struct ks_hot_slot *slot;

	slot = bpf_map_lookup_elem(&ks_hot, &idx);
	if (!slot || KS_READ_ONCE(slot->hash) != hash)
		return;
	r = bpf_map_lookup_elem(&ks_hot_replies, &idx);
	if (!r)
		return;
	if (kind == KS_REPLY_HIT)
		r->hits++;
	else if (kind == KS_REPLY_MISS)
		r->misses++;
	else if (kind == KS_REPLY_UNPAIRED)
		r->unpaired++;
	else
		r->malformed++;
}

/*
 * Whether the packet's one read of a hot key (ks_handle: a single key in
 * a single request) can be paired with its reply: a UDP datagram whole, or
 * a TCP segment that begins at a request boundary of a followed stream and
 * is parsed whole, so the read ends where the segment does.
 */
static __always_inline void ks_reply_mark(struct ks_scratch *s,
					  const struct ks_l4 *l4)
{
	if (l4->proto == IPPROTO_UDP) {
		if (l4->frag)
			return;
		s->reply_id = l4->udp_id;
		s->reply_ok = 1;
		return;
	}
	if (!s->seg_flow || !s->seg_fast || s->seg_start || !s->seg_save ||
	    s->seg_limit != l4->payload_len)
		return;
	s->reply_end = l4->seq + l4->payload_len;
	s->reply_ack = l4->ack;
	s->reply_ok = 1;
}

/*
 * The packet's read is remembered for its reply: a single-key read of a
 * hot key (s->reply_slot), alone in its packet, that stays with the owner.
 * Called once the datapath has decided not to steer it.
 */
__noinline int ks_reply_remember(struct ks_scratch *s)
{
	struct ks_reply_pend p = {}, *old;

	/* global: its stack is its own, not added to the deep parse chain's */
	if (!s)
		return 0;
	s->reply_ok = 0;
	p.hash = s->reply_hash;
	p.slot = s->reply_slot - 1;
	p.ts_ns = bpf_ktime_get_ns();
	if (s->proto == IPPROTO_UDP) {
		struct ks_reply_udp_key k = {};

		__builtin_memcpy(k.addr, s->saddr, sizeof(k.addr));
		k.port = s->sport;
		k.req_id = s->reply_id;
		bpf_map_update_elem(&ks_reply_udp, &k, &p, BPF_ANY);
		return 0;
	}
	p.req_end = s->reply_end;
	p.srv_seq = s->reply_ack;
	old = bpf_map_lookup_elem(&ks_reply_tcp, &s->flow_id);
	if (old) {
		/* a read still unanswered: the connection pipelines, and
		 * neither reply can be told apart from the other */
		ks_reply_count(old->slot, old->hash, KS_REPLY_UNPAIRED);
		p.pipelined = 1;
	}
	bpf_map_update_elem(&ks_reply_tcp, &s->flow_id, &p, BPF_ANY);
	return 0;
}

/* The test inline: nearly every packet has no read to remember, and a
 * call and return per packet cost more than the test where returns are
 * mitigated (retpolines, SRSO). */
static __always_inline void ks_reply_expect(struct ks_scratch *s)
{
	if (s->reply_ok && s->reply_slot)
		ks_reply_remember(s);
}

/* Hit, miss or malformed, from the reply's first bytes (n of them, the
 * rest of b zero). */
static __always_inline int ks_reply_kind(const __u8 *b, __u32 n)
{
	if (b[0] == 0x81) /* binary response: status at bytes 6-7 */
		return n < 8 || b[6] ? KS_REPLY_MALFORMED
		       : b[7] == 0   ? KS_REPLY_HIT
		       : b[7] == 1   ? KS_REPLY_MISS
				     : KS_REPLY_MALFORMED;
	if (n >= 6 && b[0] == 'V' && b[1] == 'A' && b[2] == 'L' &&
	    b[3] == 'U' && b[4] == 'E' && b[5] == ' ')
		return KS_REPLY_HIT;
	if (n >= 5 && b[0] == 'E' && b[1] == 'N' && b[2] == 'D' &&
	    b[3] == '\r' && b[4] == '\n')
		return KS_REPLY_MISS;
	if (n >= 4 && b[0] == 'E' && b[1] == 'N' && b[2] == '\r' &&
	    b[3] == '\n')
		return KS_REPLY_MISS;
	/* meta: "VA <size> <flags>", or "HD <flags>" for an mg without v */
	if (n >= 3 && b[0] == 'V' && b[1] == 'A' && b[2] == ' ')
		return KS_REPLY_HIT;
	if (n >= 4 && b[0] == 'H' && b[1] == 'D' &&
	    (b[2] == ' ' || (b[2] == '\r' && b[3] == '\n')))
		return KS_REPLY_HIT;
	return KS_REPLY_MALFORMED;
}

/* The reply's first bytes, wherever they lie (a TCP payload is mostly in
 * paged data on egress): up to 8 of them into b. Returns how many. */
static __always_inline __u32 ks_reply_head(struct __sk_buff *skb, __u32 off,
					   __u32 len, __u8 b[8])
{
	if (len >= 8)
		return bpf_skb_load_bytes(skb, off, b, 8) ? 0 : 8;
	if (len >= 4)
		return bpf_skb_load_bytes(skb, off, b, 4) ? 0 : 4;
	return 0;
}

/* An "END\r\n" of exactly 5 bytes: the fifth loaded on its own, since
 * load lengths must be constants the verifier can see. */
static __always_inline __u32 ks_reply_head5(struct __sk_buff *skb, __u32 off,
					    __u32 len, __u8 b[8])
{
	__u32 n = ks_reply_head(skb, off, len, b);

	if (n == 4 && len >= 5 && !bpf_skb_load_bytes(skb, off + 4, b + 4, 1))
		n = 5;
	return n;
}

static __always_inline void ks_reply_udp_seen(struct __sk_buff *skb,
					      const struct ks_l4 *l4)
{
	struct ks_reply_udp_key k = {};
	struct ks_reply_pend p, *pp;
	__u8 b[8] = {};
	__u32 n;

	if (l4->udp_seq) /* not the reply's first datagram */
		return;
	__builtin_memcpy(k.addr, l4->daddr, sizeof(k.addr));
	k.port = l4->dport;
	k.req_id = l4->udp_id;
	pp = bpf_map_lookup_elem(&ks_reply_udp, &k);
	if (!pp)
		return;
	p = *pp;
	bpf_map_delete_elem(&ks_reply_udp, &k);
	if (bpf_ktime_get_ns() - p.ts_ns > KS_REPLY_MAX_AGE_NS) {
		ks_reply_count(p.slot, p.hash, KS_REPLY_UNPAIRED);
		return;
	}
	n = ks_reply_head5(skb, l4->payload_off, l4->avail, b);
	ks_reply_count(p.slot, p.hash,
		       n ? ks_reply_kind(b, n) : KS_REPLY_MALFORMED);
}

static __always_inline void ks_reply_tcp_seen(struct __sk_buff *skb,
					      const struct ks_l4 *l4)
{
	struct ks_reply_pend p, *pp;
	__u8 b[8] = {};
	__u64 id;
	__u32 n;

	if (!l4->payload_len)
		return;
	/* the client's direction, as ks_tc_ingress/ks_ingress named it */
	id = ks_flow_id(l4->daddr, l4->saddr,
			(__u32)l4->dport << 16 | l4->sport);
	pp = bpf_map_lookup_elem(&ks_reply_tcp, &id);
	if (!pp)
		return;
	/* sent before the read reached the server: an earlier reply */
	if ((__s32)(l4->ack - pp->req_end) < 0)
		return;
	p = *pp;
	bpf_map_delete_elem(&ks_reply_tcp, &id);
	if (p.pipelined || l4->ack != p.req_end || l4->seq != p.srv_seq) {
		ks_reply_count(p.slot, p.hash, KS_REPLY_UNPAIRED);
		return;
	}
	n = ks_reply_head5(skb, l4->payload_off, l4->payload_len, b);
	ks_reply_count(p.slot, p.hash,
		       n ? ks_reply_kind(b, n) : KS_REPLY_MALFORMED);
}

#endif
