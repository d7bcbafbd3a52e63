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
	void *end;       /* end of what direct access may read */
	void *start;
	__u32 frame_len; /* whole frame; more than end - start for a paged skb */
};

/* Bytes of the frame from the cursor on, readable directly or not. */
static __always_inline __u32 ks_frame_left(const struct ks_cursor *c)
{
	return c->frame_len - (__u32)(c->pos - c->start);
}

/* What the network layers tell the memcached parser. */
struct ks_l4 {
	__u32 payload_off; /* from the start of the frame */
	__u32 payload_len; /* as the IP/UDP lengths say, never past the frame */
	__u16 sport;       /* host order */
	__u16 dport;
	__u8 proto;
	__u8 pad[3];
	__u8 saddr[16];    /* IPv4 mapped as ::ffff:a.b.c.d */
};

#define KS_NEG(reason) (-(int)(reason) - 1)
#define KS_REASON(neg) ((__u32)(-(neg) - 1))

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
	    tot > ks_frame_left(c))
		return KS_NEG(KS_ERR_BAD_IP_HDR);
	/*
	 * Later fragments carry no L4 header, and the first one's UDP length
	 * covers bytes we cannot see: count both, parse neither.
	 */
	if (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET))
		return KS_NEG(KS_ERR_FRAGMENT);

	__builtin_memset(l4->saddr, 0, 10);
	l4->saddr[10] = 0xff;
	l4->saddr[11] = 0xff;
	__builtin_memcpy(&l4->saddr[12], &ip->saddr, 4);
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
	if (ip6->version != 6 || sizeof(*ip6) + left > ks_frame_left(c))
		return KS_NEG(KS_ERR_BAD_IP_HDR);
	__builtin_memcpy(l4->saddr, &ip6->saddr, 16);
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
			/* offset or more-fragments set; an atomic
			 * fragment (RFC 6946) is parsed through */
			if (fh->frag_off & bpf_htons(0xFFF9))
				return KS_NEG(KS_ERR_FRAGMENT);
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
 * as malformed. */
static __always_inline int ks_parse_tcp(struct ks_cursor *c, struct ks_l4 *l4,
					__u32 l3_left,
					const struct ks_config *cfg)
{
	struct tcphdr *th = c->pos;
	__u32 doff;

	if ((void *)(th + 1) > c->end || l3_left < sizeof(*th))
		return KS_NEG(KS_ERR_TRUNC_L4);
	l4->sport = bpf_ntohs(th->source);
	l4->dport = bpf_ntohs(th->dest);
	if (!ks_port_watched(cfg, l4->dport))
		return KS_NEG(KS_ERR_NOT_MEMCACHED);
	doff = th->doff * 4;
	if (doff < sizeof(*th) || doff > l3_left)
		return KS_NEG(KS_ERR_BAD_TCP_DOFF);
	l4->payload_len = l3_left - doff;
	c->pos += doff;
	return 0;
}

/*
 * On a watched UDP port: a request's first datagram has
 * sequence number 0; later ones continue a value and are not parsed.
 */
static __always_inline int ks_parse_mc_udp_frame(struct ks_cursor *c,
						 struct ks_l4 *l4)
{
	__be16 *frame = c->pos;

	if (l4->payload_len < KS_MC_UDP_HDR ||
	    c->pos + KS_MC_UDP_HDR > c->end)
		return KS_NEG(KS_ERR_UDP_FRAME);
	if (frame[1] != 0)
		return KS_NEG(KS_ERR_UDP_NOT_FIRST);
	l4->payload_len -= KS_MC_UDP_HDR;
	c->pos += KS_MC_UDP_HDR;
	return 0;
}

/* UDP plus memcached's frame header: request id, sequence, total, reserved. */
static __always_inline int ks_parse_udp(struct ks_cursor *c, struct ks_l4 *l4,
					__u32 l3_left,
					const struct ks_config *cfg)
{
	struct udphdr *uh = c->pos;
	__u32 ulen;

	if ((void *)(uh + 1) > c->end || l3_left < sizeof(*uh))
		return KS_NEG(KS_ERR_TRUNC_L4);
	l4->sport = bpf_ntohs(uh->source);
	l4->dport = bpf_ntohs(uh->dest);
	if (!ks_port_watched(cfg, l4->dport))
		return KS_NEG(KS_ERR_NOT_MEMCACHED);
	ulen = bpf_ntohs(uh->len);
	if (ulen < sizeof(*uh) || ulen > l3_left)
		return KS_NEG(KS_ERR_BAD_LENGTH);
	l4->payload_len = ulen - sizeof(*uh);
	c->pos = uh + 1;
	return ks_parse_mc_udp_frame(c, l4);
}

#endif
