/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_parse_net.bpf.h - Ethernet, VLAN, IPv4/IPv6 and TCP/UDP parsing behind
 * a cursor, on direct packet access. Each parse_* checks bounds, advances
 * the cursor and returns the next protocol, or a negative enum ks_reason.
 * Shared by the XDP and tc entry points: both hand over data/data_end.
 */
#ifndef KS_PARSE_NET_BPF_H
#define KS_PARSE_NET_BPF_H

#include "ks_defs.bpf.h"
#include "keysteer.h"

struct ks_cursor {
	void *pos;
	void *end; /* end of what direct access may read */
	void *start;
	__u32 frame_len; /* whole frame; more than end - start for a paged skb */
	/* XDP: the context, for a frame longer than its first buffer (see
	 * ks_frame_has); NULL on tc, whose frame_len is skb->len */
	struct xdp_md *xdp;
};

/*
 * Does the frame hold n more bytes from the cursor on, readable directly
 * or not? On XDP frame_len starts as the first buffer's length: only a
 * frame that seems too short asks bpf_xdp_get_buff_len() for the rest
 * (a multi-buffer frame, xdp.frags). Issue 27: the helper on every packet
 * was a call and a mitigated return (Retpolines, Safe RET) that a
 * single-buffer frame, nearly all of them, does not need.
 */
static __always_inline bool ks_frame_has(struct ks_cursor *c, __u32 n)
{
	__u32 used = (__u32)(c->pos - c->start);

	if (n <= c->frame_len - used)
		return true;
	if (!c->xdp)
		return false;
	/* bounded as ks_handle bounds skb->len */
	c->frame_len = bpf_xdp_get_buff_len(c->xdp) & 0xfffff;
	return n <= c->frame_len - used;
}

/* What the network layers tell the memcached parser. */
struct ks_l4 {
	__u32 payload_off; /* from the start of the frame */
	__u32 payload_len; /* as the IP/UDP lengths say */
	__u32 avail;       /* payload bytes in this frame: less than
			    * payload_len only in a first IP fragment */
	__u32 seq;         /* TCP: sequence number, host order */
	__u16 sport;       /* host order */
	__u16 dport;
	__u8 proto;
	__u8 tcp_flags; /* TCP: FIN, SYN, RST, ... as in the header */
	__u8 frag;      /* first fragment of a fragmented datagram */
	__u8 pad;
	__u32 ack;      /* TCP: acknowledgment number, host order */
	__u16 udp_id;   /* UDP: the memcached frame's request id, as sent */
	__u16 udp_seq;  /* ... and its sequence number, host order */
	__u64 saddr[2]; /* IPv4 mapped as ::ffff:a.b.c.d */
	__u64 daddr[2];
};

#define KS_NEG(reason) (-(int)(reason)-1)
#define KS_REASON(neg) ((__u32)(-(neg)-1))

static __always_inline int ks_parse_eth(struct ks_cursor *c)
{
	struct ethhdr *eth = c->pos;
	struct vlan_hdr *vh;
	__u16 proto;
	int i;

	if ((void *)(eth + 1) > c->end)
		return KS_NEG(KS_ERR_TRUNC_ETH);
	c->pos = eth + 1;
	proto = eth->h_proto;

#pragma unroll
	for (i = 0; i < KS_MAX_VLAN; i++) {
		if (proto != bpf_htons(ETH_P_8021Q) &&
		    proto != bpf_htons(ETH_P_8021AD))
			break;
		vh = c->pos;
		if ((void *)(vh + 1) > c->end)
			return KS_NEG(KS_ERR_TRUNC_ETH);
		c->pos = vh + 1;
		proto = vh->h_vlan_encapsulated_proto;
	}
	return bpf_ntohs(proto);
}

/*
 * IPv4. A frame may carry Ethernet padding past tot_len, so the payload
 * length comes from tot_len, which must itself fit in the frame.
 */
static __always_inline int ks_parse_ipv4(struct ks_cursor *c, struct ks_l4 *l4,
					 __u32 *l3_left)
{
	struct iphdr *ip = c->pos;
	__u32 ihl, tot;

	if ((void *)(ip + 1) > c->end)
		return KS_NEG(KS_ERR_TRUNC_IP);
	ihl = ip->ihl * 4;
	tot = bpf_ntohs(ip->tot_len);
	if (ip->version != 4 || ihl < sizeof(*ip) || tot < ihl ||
	    !ks_frame_has(c, tot))
		return KS_NEG(KS_ERR_BAD_IP_HDR);
	/*
	 * Later fragments carry no L4 header: counted, not parsed. The first
	 * one holds the request line (its key) of a UDP request too large
	 * for one frame, so it is parsed as far as it goes.
	 */
	if (ip->frag_off & bpf_htons(IP_OFFSET))
		return KS_NEG(KS_ERR_FRAGMENT);
	l4->frag = !!(ip->frag_off & bpf_htons(IP_MF));

	/* ::ffff:a.b.c.d, written as words: little-endian hosts only, as
	 * the verifier's unaligned loads elsewhere already assume */
	l4->saddr[0] = 0;
	l4->saddr[1] = 0xffff0000ULL | (__u64)ip->saddr << 32;
	l4->daddr[0] = 0;
	l4->daddr[1] = 0xffff0000ULL | (__u64)ip->daddr << 32;
	*l3_left = tot - ihl;
	c->pos += ihl;
	return ip->protocol;
}

static __always_inline int ks_parse_ipv6(struct ks_cursor *c, struct ks_l4 *l4,
					 __u32 *l3_left)
{
	struct ipv6hdr *ip6 = c->pos;
	struct ipv6_opt_hdr *eh;
	struct frag_hdr *fh;
	__u32 left, hlen;
	__u8 next;
	int i;

	if ((void *)(ip6 + 1) > c->end)
		return KS_NEG(KS_ERR_TRUNC_IP);
	left = bpf_ntohs(ip6->payload_len);
	if (ip6->version != 6 || !ks_frame_has(c, sizeof(*ip6) + left))
		return KS_NEG(KS_ERR_BAD_IP_HDR);
	__builtin_memcpy(l4->saddr, &ip6->saddr, 16);
	__builtin_memcpy(l4->daddr, &ip6->daddr, 16);
	next = ip6->nexthdr;
	c->pos = ip6 + 1;

#pragma unroll
	for (i = 0; i < KS_MAX_IP6_EXT; i++) {
		switch (next) {
		case KS_IP6_HOPOPTS:
		case KS_IP6_ROUTING:
		case KS_IP6_DSTOPTS:
			eh = c->pos;
			if ((void *)(eh + 1) > c->end)
				return KS_NEG(KS_ERR_TRUNC_IP6_EXT);
			hlen = (eh->hdrlen + 1) * 8;
			break;
		case KS_IP6_FRAGMENT:
			fh = c->pos;
			if ((void *)(fh + 1) > c->end)
				return KS_NEG(KS_ERR_TRUNC_IP6_EXT);
			/* a later fragment has no L4 header; the first
			 * (offset 0, more-fragments set) is parsed as
			 * far as it goes, an atomic one (RFC 6946) whole */
			if (fh->frag_off & bpf_htons(0xFFF8))
				return KS_NEG(KS_ERR_FRAGMENT);
			if (fh->frag_off & bpf_htons(1))
				l4->frag = 1;
			eh = c->pos;
			hlen = sizeof(*fh);
			break;
		default:
			*l3_left = left;
			return next;
		}
		if (hlen > left)
			return KS_NEG(KS_ERR_TRUNC_IP6_EXT);
		next = eh->nexthdr;
		left -= hlen;
		c->pos += hlen;
	}
	switch (next) {
	case KS_IP6_HOPOPTS:
	case KS_IP6_ROUTING:
	case KS_IP6_DSTOPTS:
	case KS_IP6_FRAGMENT:
		return KS_NEG(KS_ERR_IP6_EXT_LIMIT);
	}
	*l3_left = left;
	return next;
}

static __always_inline int ks_port_watched(const struct ks_config *cfg,
					   __u16 port);

/* Ports are checked before the rest, so only memcached traffic can count
 * as malformed. reply: a segment from memcached (tc egress), whose source
 * port is the watched one. */
static __always_inline int ks_parse_tcp(struct ks_cursor *c, struct ks_l4 *l4,
					__u32 l3_left,
					const struct ks_config *cfg,
					const bool reply)
{
	struct tcphdr *th = c->pos;
	__u32 doff;

	if ((void *)(th + 1) > c->end || l3_left < sizeof(*th))
		return KS_NEG(KS_ERR_TRUNC_L4);
	l4->sport = bpf_ntohs(th->source);
	l4->dport = bpf_ntohs(th->dest);
	if (!ks_port_watched(cfg, reply ? l4->sport : l4->dport))
		return KS_NEG(KS_ERR_NOT_MEMCACHED);
	doff = th->doff * 4;
	if (doff < sizeof(*th) || doff > l3_left)
		return KS_NEG(KS_ERR_BAD_TCP_DOFF);
	/* a fragmented TCP segment is rare enough to lose: its flow sees a
	 * gap and resynchronises */
	if (l4->frag)
		return KS_NEG(KS_ERR_FRAGMENT);
	l4->payload_len = l3_left - doff;
	l4->avail = l4->payload_len;
	l4->seq = bpf_ntohl(th->seq);
	l4->ack = bpf_ntohl(th->ack_seq);
	l4->tcp_flags = ((__u8 *)th)[13];
	c->pos += doff;
	return 0;
}

/*
 * On a watched UDP port: memcached serves a datagram whose frame header
 * says the request is one datagram (total 1), and refuses the rest
 * ("multi-packet request not supported"), whatever their sequence number.
 */
static __always_inline int ks_parse_mc_udp_frame(struct ks_cursor *c,
						 struct ks_l4 *l4,
						 const bool reply)
{
	__be16 *frame = c->pos;

	if (l4->avail < KS_MC_UDP_HDR || c->pos + KS_MC_UDP_HDR > c->end)
		return KS_NEG(KS_ERR_UDP_FRAME);
	l4->udp_id = frame[0];
	l4->udp_seq = bpf_ntohs(frame[1]);
	/* a reply may take several datagrams; its first holds its start */
	if (!reply && frame[2] != bpf_htons(1))
		return KS_NEG(KS_ERR_UDP_MULTI);
	l4->payload_len -= KS_MC_UDP_HDR;
	l4->avail -= KS_MC_UDP_HDR;
	c->pos += KS_MC_UDP_HDR;
	return 0;
}

/* UDP plus memcached's frame header: request id, sequence, total, reserved. */
static __always_inline int ks_parse_udp(struct ks_cursor *c, struct ks_l4 *l4,
					__u32 l3_left,
					const struct ks_config *cfg,
					const bool reply)
{
	struct udphdr *uh = c->pos;
	__u32 ulen;

	if ((void *)(uh + 1) > c->end || l3_left < sizeof(*uh))
		return KS_NEG(KS_ERR_TRUNC_L4);
	l4->sport = bpf_ntohs(uh->source);
	l4->dport = bpf_ntohs(uh->dest);
	if (!ks_port_watched(cfg, reply ? l4->sport : l4->dport))
		return KS_NEG(KS_ERR_NOT_MEMCACHED);
	ulen = bpf_ntohs(uh->len);
	/* a first fragment has only part of the datagram its length counts */
	if (ulen < sizeof(*uh) || (ulen > l3_left && !l4->frag))
		return KS_NEG(KS_ERR_BAD_LENGTH);
	l4->payload_len = ulen - sizeof(*uh);
	l4->avail = (ulen < l3_left ? ulen : l3_left) - sizeof(*uh);
	c->pos = uh + 1;
	return ks_parse_mc_udp_frame(c, l4, reply);
}

#endif
