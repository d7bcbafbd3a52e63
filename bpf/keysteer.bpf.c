// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * keysteer.bpf.c - the datapath entry points: ks_ingress (XDP) and
 * ks_tc_ingress (tc), one library underneath. Both count and sample and
 * let the packet through untouched, except that XDP steers a lone UDP get
 * of an armed hot key to an L1 replica (ks_steer.bpf.h). ks_tc_egress
 * reads the owner's replies to hot-key reads (ks_reply.bpf.h).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "keysteer.h"
#include "ks_maps.bpf.h"
#include "ks_parse_net.bpf.h"
#include "ks_fastpath.bpf.h"
#include "ks_fast_sample.bpf.h"
#include "ks_stream.bpf.h"
#include "ks_steer.bpf.h"
#include "ks_reply.bpf.h"
#include "ks_limit.bpf.h"

/*
 * The stack's headroom check (tests/prog/t_stack.c): a copy of this
 * object built with -DKS_STACK_PLANT=N has N bytes more in each program's
 * own frame, written once and given to an asm, so that clang keeps them
 * apart from every other slot for the whole program; every call chain
 * starts in that frame, so the copy loads only if each chain has N bytes
 * to spare under the kernel's 512 (MAX_BPF_STACK). Left at 0 the block is
 * dead and compiles to nothing.
 */
#ifndef KS_STACK_PLANT
#define KS_STACK_PLANT 0
#endif
#define KS_STACK_PLANT_HERE()                                                  \
	volatile __u8 ks_plant[KS_STACK_PLANT ?: 1];                           \
	if (KS_STACK_PLANT) {                                                  \
		ks_plant[0] = 0;                                               \
		__asm__ volatile("" ::"r"(ks_plant) : "memory");               \
	}

/* ks_handle's return for a packet the rate limit refused: this bit and
 * the XDP action (ks_limit.bpf.h). Slots of ks_hot never reach it. */
#define KS_HANDLE_ACT 0x80000000u

static __always_inline int ks_port_watched(const struct ks_config *cfg,
					   __u16 port)
{
	int i, any = 0;

#pragma unroll
	for (i = 0; i < KS_MAX_PORTS; i++) {
		if (cfg->ports[i] == port)
			return port != 0;
		any |= cfg->ports[i];
	}
	return !any && port == KS_MC_DEFAULT_PORT;
}

/*
 * Ethernet to the first payload byte. Returns 0 with l4 filled for a
 * packet to a watched port (from one, for a reply), or a negative reason.
 */
static __always_inline int ks_parse_to_payload(struct ks_cursor *c,
					       struct ks_l4 *l4,
					       const struct ks_config *cfg,
					       const bool reply)
{
	__u32 l3_left = 0;
	int proto, err;

	proto = ks_parse_eth(c);
	if (proto < 0)
		return proto;
	if (proto == ETH_P_IP)
		proto = ks_parse_ipv4(c, l4, &l3_left);
	else if (proto == ETH_P_IPV6)
		proto = ks_parse_ipv6(c, l4, &l3_left);
	else
		return KS_NEG(KS_ERR_NOT_MEMCACHED);
	if (proto < 0)
		return proto;

	if (proto == IPPROTO_TCP)
		err = ks_parse_tcp(c, l4, l3_left, cfg, reply);
	else if (proto == IPPROTO_UDP)
		err = ks_parse_udp(c, l4, l3_left, cfg, reply);
	else
		return KS_NEG(KS_ERR_NOT_MEMCACHED);
	if (err < 0)
		return err;
	l4->proto = proto;
	l4->payload_off = c->pos - c->start;
	return 0;
}

/* A lone get due for sampling, or while keys are hot: its key straight
 * from the packet. */
static __always_inline void ks_fast_key(void *ctx, struct ks_scratch *s,
					const struct ks_l4 *l4, __u32 due,
					const bool is_xdp)
{
	__u32 len = l4->payload_len - 6; /* less "get " and "\r\n" */

	if (len > KS_FAST_KEY || !len)
		return;
	s->pkt_keys = 1;
	/* straight from the packet, one call (ks_fast_sample.bpf.h) */
	if (is_xdp ? ks_fast_take_xdp(ctx, s, l4->payload_off, len, due)
		   : ks_fast_take_tc(ctx, s, l4->payload_off, len, due)) {
		ks_ring_flush(s);
		return;
	}
	ks_key_clear(s);
	s->key_words = ks_key_words(len);
	/* the bound above, in a form the verifier keeps (see ks_window) */
	if (ks_ctx_load(ctx, l4->payload_off + 4, s->key,
			((len - 1) & (KS_FAST_KEY - 1)) + 1, is_xdp))
		return;
	ks_key_take(s, len, KS_OP_GET, due);
	ks_ring_flush(s);
}

/* The context's packet pointers: XDP's or tc's (is_xdp is a constant). */
static __always_inline void ks_ctx_data(void *ctx, void **data, void **end,
					const bool is_xdp)
{
	if (is_xdp) {
		*data = (void *)(long)((struct xdp_md *)ctx)->data;
		*end = (void *)(long)((struct xdp_md *)ctx)->data_end;
	} else {
		*data = (void *)(long)((struct __sk_buff *)ctx)->data;
		*end = (void *)(long)((struct __sk_buff *)ctx)->data_end;
	}
}

/*
 * The express path (issue 27): the commonest packets, decided before
 * anything is written. Behind a plain IPv4 header (no VLAN tag, no IP
 * option, not a fragment) to a watched port:
 *
 * - a lone get ("get <key>\r\n", ks_fast_get_line) in a UDP datagram of
 *   one frame, or in the next in-order segment of a TCP flow that stands
 *   at a request boundary, with no hot key and no rate limit in force,
 *   either not due for sampling or due while the agent drains the sample
 *   log and nothing else wants the key (ks_express_sample(): no trace,
 *   room in the log; a ring loaded or not, the key placed on it by
 *   ks_ring_place() itself when due for placement, ks_place_next());
 * - the next in-order segment of a TCP flow inside a data block that goes
 *   on past it (a set's value).
 *
 * Returns true when it counted the packet, exactly as the general path
 * below would have (ks_pkts' SEEN, MEMCACHED, UDP or TCP, FAST_GET and
 * FAST_GET_BYTES or FLOW_CONT, the sample countdown, a sampled key's
 * record and SAMPLED and SLOG, with a ring its shard's count, RING_HIT
 * and a misdirected key's client, the flow's next sequence number, its
 * stamp and what is left of its block), and false, having changed
 * nothing, for anything else: the general path then takes the packet
 * from its first byte. Every header field is at a fixed offset (TCP's
 * payload at its data offset), so there is no cursor and no ks_l4 on the
 * stack, and of the scratch's per-packet fields, which the general path
 * writes anew for every packet, only a sampled key's ring placement
 * writes any (the half, the client: ks_express_sample()).
 */

/* The countdown after a lone get, as ks_sample_due() leaves it: 0 when
 * the get is due for sampling. */
static __always_inline __u32 ks_express_next(const struct ks_scratch *s)
{
	__u32 n = s->countdown;

	if (n == 0 || n > s->sample_n)
		n = s->sample_n;
	return n - 1;
}

/*
 * A lone get: this CPU's scratch, or NULL, with nothing written, for the
 * general path (no lone get, a key due that the express path cannot
 * sample, a rate not yet loaded as ks_sample_rate() would load it, a hot
 * key or a limit in force). The cheapest tests first, so that what the
 * general path takes leaves early: a set or a multi-get of this length at
 * the first word, a get due for sampling with the log off before its
 * line is read (issue 27).
 */
static __always_inline struct ks_scratch *ks_express_get(
	const struct ks_config *cfg, void *p, void *end, __u32 plen)
{
	struct ks_scratch *s;
	__u32 zero = 0;

	if (plen < KS_FAST_MIN || plen > KS_FAST_MAX || p + 8 > end ||
	    *(__u32 *)p != KS_S4('g', 'e', 't', ' ') || cfg->hot ||
	    (cfg->flags & KS_CFG_LIMITS))
		return NULL;
	s = bpf_map_lookup_elem(&ks_scratch, &zero);
	if (!s || s->rate_seq != cfg->seq || s->rate_cfg != cfg->sample_n ||
	    !s->sample_n)
		return NULL;
	if (!ks_express_next(s) && !ks_express_sample_ok(cfg, s))
		return NULL;
	/* a bound the verifier keeps on every copy clang makes of plen */
	KS_OPAQUE(plen);
	plen &= 0x3f;
	return ks_fast_get_line(p, end, plen) ? s : NULL;
}

/* A UDP datagram's payload offset behind plain IPv4 and memcached's frame
 * header: where the express path reads it. */
#define KS_EXPRESS_UDP_OFF                                                     \
	(sizeof(struct ethhdr) + sizeof(struct iphdr) +                        \
	 sizeof(struct udphdr) + KS_MC_UDP_HDR)

static __always_inline bool ks_express_udp(void *ctx,
					   struct ks_pkt_counters *pc,
					   const struct ks_config *cfg,
					   struct iphdr *ip, void *end,
					   __u32 tot, const bool is_xdp)
{
	struct udphdr *uh = (void *)(ip + 1);
	__be16 *frame = (void *)(uh + 1);
	void *p = (void *)frame + KS_MC_UDP_HDR;
	struct ks_scratch *s;
	__u32 ulen, plen;

	/* the headers and the shortest get's first word */
	if (p + 8 > end)
		return false;
	ulen = bpf_ntohs(uh->len);
	if (ulen + sizeof(*ip) > tot ||
	    ulen < sizeof(*uh) + KS_MC_UDP_HDR + KS_FAST_MIN ||
	    frame[2] != bpf_htons(1) ||
	    !ks_port_watched(cfg, bpf_ntohs(uh->dest)))
		return false;
	plen = ulen - sizeof(*uh) - KS_MC_UDP_HDR;
	s = ks_express_get(cfg, p, end, plen);
	if (!s || (!ks_express_next(s) &&
		   !ks_express_sample_ctx(ctx, cfg, s, KS_EXPRESS_UDP_OFF, plen,
					  is_xdp)))
		return false;
	s->countdown = ks_express_next(s);
	pc->n[KS_PKT_SEEN]++;
	pc->n[KS_PKT_MEMCACHED]++;
	pc->n[KS_PKT_UDP]++;
	pc->n[KS_PKT_FAST_GET]++;
	pc->n[KS_PKT_FAST_GET_BYTES] += plen;
	return true;
}

/* A TCP segment shorter than this that is no lone get is not tried as a
 * block's continuation: sets with short values, short multi-gets (their
 * flow would be looked up twice) stay the general path's alone. */
#define KS_EXPRESS_CONT_MIN 512

static __always_inline bool ks_express_tcp(
	void *ctx, struct ks_pkt_counters *pc, const struct ks_config *cfg,
	void *data, struct iphdr *ip, void *end, __u32 tot, const bool is_xdp)
{
	struct tcphdr *th = (void *)(ip + 1);
	__u64 saddr[2], daddr[2], id;
	struct ks_flow_bucket *bk;
	struct ks_scratch *s = NULL;
	__u32 doff, plen, off, b, w;
	struct ks_flow *f;
	void *p;

	if ((void *)(th + 1) > end)
		return false;
	doff = th->doff * 4;
	if (doff < sizeof(*th) || doff + sizeof(*ip) >= tot)
		return false;
	plen = tot - sizeof(*ip) - doff;
	/* neither a lone get nor worth trying as a block's (a short set,
	 * a multi-get): the general path's, after one compare */
	if (plen > KS_FAST_MAX && plen < KS_EXPRESS_CONT_MIN)
		return false;
	if ((((__u8 *)th)[13] & (KS_TCP_SYN | KS_TCP_FIN | KS_TCP_RST)) ||
	    (cfg->flags & KS_CFG_NO_STREAM) ||
	    !ks_port_watched(cfg, bpf_ntohs(th->dest)))
		return false;
	/* the payload's offset, at most 14 + 20 + 60, in a form the
	 * verifier keeps */
	off = sizeof(struct ethhdr) + sizeof(*ip) + doff;
	KS_OPAQUE(off);
	p = data + (off & 0x7f);
	/* before the flow's lookup, which a packet the general path takes
	 * after all pays twice (about 20 ns): a lone get not due, or a
	 * segment long enough to be worth trying as a block's */
	if (plen <= KS_FAST_MAX)
		s = ks_express_get(cfg, p, end, plen);
	if (!s && plen < KS_EXPRESS_CONT_MIN)
		return false;
	/* ::ffff:a.b.c.d, as ks_parse_ipv4() writes them */
	saddr[0] = 0;
	saddr[1] = 0xffff0000ULL | (__u64)ip->saddr << 32;
	daddr[0] = 0;
	daddr[1] = 0xffff0000ULL | (__u64)ip->daddr << 32;
	id = ks_flow_id(saddr, daddr,
			(__u32)bpf_ntohs(th->source) << 16 |
				bpf_ntohs(th->dest));
	b = ks_flow_bucket(id);
	bk = bpf_map_lookup_elem(&ks_flows, &b);
	if (!bk)
		return false;
#pragma unroll
	for (w = 0; w < KS_FLOW_WAYS; w++) {
		f = &bk->way[w];
		if (f->id != id)
			continue;
		/* as ks_flow_quick() would take it, less a block that ends
		 * in this segment (its request counts then) */
		if (f->next_seq != bpf_ntohl(th->seq) || f->carry)
			return false;
		/* s: a lone get; else at least KS_EXPRESS_CONT_MIN bytes */
		if (f->mode == KS_FM_COMMAND
			    ? !s
			    : f->mode != KS_FM_SKIP || s || f->left <= plen)
			return false;
		break;
	}
	if (w == KS_FLOW_WAYS)
		return false;
	/* a sampled lone get, once nothing else can send it back */
	if (s && !ks_express_next(s) &&
	    !ks_express_sample_ctx(ctx, cfg, s, off & 0x7f, plen, is_xdp))
		return false;
	if (s) {
		s->countdown = ks_express_next(s);
		pc->n[KS_PKT_FAST_GET]++;
		pc->n[KS_PKT_FAST_GET_BYTES] += plen;
	} else {
		f->left -= plen;
		pc->n[KS_PKT_FLOW_CONT]++;
	}
	f->next_seq += plen;
	f->stamp = (__u16)cfg->seq;
	pc->n[KS_PKT_SEEN]++;
	pc->n[KS_PKT_MEMCACHED]++;
	pc->n[KS_PKT_TCP]++;
	return true;
}

static __always_inline bool ks_express(void *ctx, struct ks_pkt_counters *pc,
				       const struct ks_config *cfg, void *data,
				       void *end, __u32 frame_len,
				       const bool is_xdp)
{
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	__u32 tot;

	if ((void *)(ip + 1) > end)
		return false;
	if (eth->h_proto != bpf_htons(ETH_P_IP) || *(__u8 *)ip != 0x45 ||
	    (ip->frag_off & bpf_htons(IP_OFFSET | IP_MF)))
		return false;
	tot = bpf_ntohs(ip->tot_len);
	/* frame_len: on XDP the first buffer's; a longer packet (a
	 * multi-buffer frame) is the general path's (ks_frame_has) */
	if (tot + sizeof(*eth) > frame_len)
		return false;
	if (ip->protocol == IPPROTO_UDP)
		return ks_express_udp(ctx, pc, cfg, ip, end, tot, is_xdp);
	if (ip->protocol == IPPROTO_TCP)
		return ks_express_tcp(ctx, pc, cfg, data, ip, end, tot, is_xdp);
	return false;
}

/*
 * Counts and samples one packet. Returns 1 + the ks_hot slot when the
 * packet is a lone UDP get of a hot key (for XDP to steer), else 0.
 */
static __always_inline __u32 ks_handle(void *ctx, void *data, void *data_end,
				       __u32 frame_len, const bool is_xdp)
{
	struct ks_cursor c;
	struct ks_l4 l4;
	struct ks_pkt_counters *pc;
	struct ks_config *cfg;
	struct ks_scratch *s;
	enum ks_fast fast = KS_FAST_NO;
	__u32 zero = 0;
	__u64 hot;
	bool stream;
	long err;

	pc = ks_pkt_counters();
	cfg = bpf_map_lookup_elem(&ks_config, &zero);
	if (!pc || !cfg)
		return 0;
	/* bounded so the verifier allows packet pointer math with it; BIG
	 * TCP aggregates stay far below 1 MiB */
	frame_len &= 0xfffff;
	if (ks_express(ctx, pc, cfg, data, data_end, frame_len, is_xdp))
		return 0;
	/* zeroed here, not at its declaration, where clang zeroed it before
	 * the express path, which never reads it */
	__builtin_memset(&l4, 0, sizeof(l4));
	/*
	 * The packet pointers again, from a context clang must read anew:
	 * the express path's bounds checks gave the pointers it used ranges
	 * that differ at each of its exits, and with them live the verifier
	 * walked everything below once per exit (ks_ingress 247,612
	 * instructions); fresh pointers make every exit the same state.
	 */
	KS_OPAQUE(ctx);
	ks_ctx_data(ctx, &data, &data_end, is_xdp);
	c.pos = data;
	c.end = data_end;
	c.start = data;
	c.frame_len = frame_len;
	c.xdp = is_xdp ? ctx : NULL;
	pc->n[KS_PKT_SEEN]++;
	err = ks_parse_to_payload(&c, &l4, cfg, false);
	if (err < 0) {
		ks_count_err(KS_REASON(err));
		return 0;
	}
	s = bpf_map_lookup_elem(&ks_scratch, &zero);
	if (!s)
		return 0;
	ks_sample_rate(s, cfg);
	s->seq = cfg->seq;
	s->trace = cfg->trace;
	s->ring = cfg->ring;
	s->hot = cfg->hot;
	s->pkt_keys = 0;
	s->steer_slot = 0;
	s->nreq = 0;
	s->seg_start = 0;
	s->seg_limit = l4.avail;
	s->seg_save = 0;
	s->seg_flow = 0;
	s->seg_fast = 1;
	s->reply_slot = 0;
	s->reply_ok = 0;

	stream = l4.proto == IPPROTO_TCP && !(cfg->flags & KS_CFG_NO_STREAM);
	/* SYN, FIN and RST matter even without a payload; what comes of it
	 * is in s->seg_*, so no flow pointer splits the paths below */
	if (stream) {
		s->seg_done = 0;
		s->flow_id = ks_flow_id(l4.saddr, l4.daddr,
					(__u32)l4.sport << 16 | l4.dport);
		if (!ks_flow_quick(s, &l4) && ks_flow_segment(s, &l4) < 0 &&
		    !l4.payload_len)
			return 0;
	}
	if (!l4.payload_len)
		return 0; /* an empty datagram or a pure ACK */
	pc->n[KS_PKT_MEMCACHED]++;
	pc->n[l4.proto == IPPROTO_TCP ? KS_PKT_TCP : KS_PKT_UDP]++;
	if (stream && (!s->seg_flow || s->seg_done))
		return 0; /* a retransmission, or value bytes: nothing to parse */
	if (l4.frag)
		ks_count_pkt(KS_PKT_UDP_FRAG);

	if (!l4.frag && s->seg_fast)
		fast = ks_fast_get(pc, s, data, data_end, l4.payload_off,
				   l4.payload_len);
	hot = s->hot;
	if (hot && fast == KS_FAST_DONE)
		hot = is_xdp ? ks_fast_hot_xdp(ctx, l4.payload_off,
					       l4.payload_len - 6)
			     : ks_fast_hot_tc(ctx, l4.payload_off,
					      l4.payload_len - 6);
	if (fast != KS_FAST_DONE || hot) {
		/* only a sample, the hot table or the general parser
		 * reads these */
		__builtin_memcpy(s->saddr, l4.saddr, sizeof(s->saddr));
		s->sport = l4.sport;
		s->proto = l4.proto;
	}
	if (fast == KS_FAST_SAMPLE ||
	    (fast == KS_FAST_DONE && hot == KS_FAST_HOT_DOUBT))
		ks_fast_key(ctx, s, &l4, fast == KS_FAST_SAMPLE, is_xdp);
	else if (fast == KS_FAST_DONE && hot) {
		/* its hash in hand, and only the hot table wants it */
		s->pkt_keys = 1;
		ks_hot_key(s, hot, KS_OP_GET);
	}
	if (fast == KS_FAST_NO) {
		if (is_xdp)
			ks_stream_xdp(ctx, s, &l4);
		else
			ks_stream_tc(ctx, s, &l4);
	} else if (s->seg_flow && (l4.tcp_flags & KS_TCP_FIN)) {
		ks_flow_fin(s);
	}
	/* after the counting: a refused get still shows in the key's load */
	if (is_xdp && (cfg->flags & KS_CFG_LIMITS) && !l4.frag) {
		int act = ks_limit_xdp(ctx, l4.payload_off, l4.payload_len,
				       cfg->flags, l4.proto == IPPROTO_TCP);

		if (act != XDP_PASS)
			return KS_HANDLE_ACT | (__u32)act;
	}
	if (s->reply_slot && (cfg->flags & KS_CFG_REPLIES) &&
	    s->pkt_keys == 1 && s->nreq <= 1)
		ks_reply_mark(s, &l4);
	if (!s->steer_slot) {
		ks_reply_expect(s);
		return 0;
	}
	/* one get of one key, nothing else in the datagram */
	if (s->pkt_keys == 1 && s->nreq <= 1)
		return s->steer_slot;
	ks_hot_owner(s->steer_slot - 1);
	ks_reply_expect(s);
	return 0;
}

/* A lone get the steering left with the owner: its reply is the owner's. */
static __always_inline void ks_reply_after_steer(void)
{
	__u32 zero = 0;
	struct ks_scratch *s = bpf_map_lookup_elem(&ks_scratch, &zero);

	if (s)
		ks_reply_expect(s);
}

/*
 * xdp.frags: a jumbo frame on a driver that splits it (veth with MTU 9000
 * among them) reaches the program as a multi-buffer packet; data_end then
 * ends the first buffer, and bpf_xdp_load_bytes reads on past it.
 */
SEC("xdp.frags")
int ks_ingress(struct xdp_md *ctx)
{
	KS_STACK_PLANT_HERE();
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	/* the first buffer's length: the frame's whole length is asked for
	 * only when the IP header says there is more (ks_frame_has) */
	__u32 hot = ks_handle(ctx, data, data_end, (__u32)(data_end - data),
			      true);
	int act;

	if (!hot)
		return XDP_PASS;
	if (hot & KS_HANDLE_ACT)
		return (int)(hot & 0xff);
	act = ks_steer(ctx, hot - 1);
	if (act == XDP_PASS)
		ks_reply_after_steer();
	return act;
}

SEC("tc")
int ks_tc_ingress(struct __sk_buff *skb)
{
	__u32 hot;
	KS_STACK_PLANT_HERE();

	/* Headers may sit in paged data on the tc path; make them linear. */
	bpf_skb_pull_data(skb, skb->len < 256 ? skb->len : 256);
	hot = ks_handle(skb, (void *)(long)skb->data,
			(void *)(long)skb->data_end, skb->len, false);

	if (hot) { /* tc only counts: steering is XDP's */
		ks_hot_owner(hot - 1);
		ks_reply_after_steer();
	}
	/* TC_ACT_UNSPEC, which tcx calls TCX_NEXT: the programs and filters
	 * after ours still run, as if we were not there */
	return TC_ACT_UNSPEC;
}

/*
 * The owner's replies, on the interface they leave by: hits and misses of
 * the reads ks_handle() remembered. Nothing is changed or dropped.
 */
SEC("tc")
int ks_tc_egress(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ks_cursor c = { .pos = data,
			       .end = data_end,
			       .start = data,
			       .frame_len = skb->len & 0xfffff };
	struct ks_l4 l4 = {};
	struct ks_config *cfg;
	__u32 zero = 0;
	KS_STACK_PLANT_HERE();

	cfg = bpf_map_lookup_elem(&ks_config, &zero);
	/* no hot key, no read waiting: the common reply costs this much */
	if (!cfg || !cfg->hot || !(cfg->flags & KS_CFG_REPLIES))
		return TC_ACT_UNSPEC;
	/* headers of what this host sends are in the linear part; the
	 * payload's first bytes are read with bpf_skb_load_bytes */
	if (ks_parse_to_payload(&c, &l4, cfg, true) < 0)
		return TC_ACT_UNSPEC;
	if (l4.proto == IPPROTO_UDP)
		ks_reply_udp_seen(skb, &l4);
	else
		ks_reply_tcp_seen(skb, &l4);
	/* as ks_tc_ingress: the programs and filters after ours still run */
	return TC_ACT_UNSPEC;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
