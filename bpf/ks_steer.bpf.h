/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_steer.bpf.h - sends a lone UDP get of an armed hot key to one of its
 * copies: the owner (this host: XDP_PASS) or an L1 replica, whose address
 * replaces the destination; the replica answers the client directly.
 *
 * IPv4 and IPv6, untagged or with one or two VLAN tags (802.1Q, 802.1ad),
 * which stay as they came: the rewrite needs the next hop from the
 * kernel's FIB (bpf_fib_lookup), and a tagged frame may only go back out
 * on the sub-interface of its own tags (map ks_vlans). Whatever the
 * rewrite cannot do keeps going to the owner untouched, counted by
 * reason. Each CPU walks the slot's schedule of copies round robin, so
 * each copy gets its share exactly rather than in expectation.
 */
#ifndef KS_STEER_BPF_H
#define KS_STEER_BPF_H

#include "ks_hot.bpf.h"

/* Why the rewrite left a get to the owner (ks_steer_rewrite < 0). */
enum ks_steer_fail {
	KS_STEER_UNUSED = 1, /* an empty ks_replicas slot: not counted */
	KS_STEER_NO_ROUTE,   /* KS_PKT_STEER_NO_ROUTE */
	KS_STEER_FAMILY,     /* KS_PKT_STEER_FAMILY */
	KS_STEER_SHAPE,      /* KS_PKT_STEER_SHAPE */
};

#define KS_IP6_FLOWINFO_MASK 0x0FFFFFFF

/* One's complement sum folded to 16 bits. */
static __always_inline __u16 ks_csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

/*
 * RFC 1624 incremental update, HC' = ~(~HC + ~m + m'), one 32-bit field
 * (as two 16-bit words) at a time into sum, which starts as ~HC. The sum
 * does not care about byte order as long as fields and checksum are taken
 * as stored; nine words stay far below 2^32.
 */
static __always_inline __u32 ks_csum_word(__u32 sum, __u32 from, __u32 to)
{
	sum += (__u16) ~(from & 0xffff) + (__u16) ~(from >> 16);
	return sum + (to & 0xffff) + (to >> 16);
}

/* Counts a read left to the owner and passes it on. */
static __always_inline int ks_steer_owner(struct ks_hot_stats *st)
{
	st->owner++;
	return XDP_PASS;
}

/*
 * The packet rewritten towards replica ri: the next hop from the FIB, the
 * destination address, port and MACs replaced, the checksums updated
 * (IPv4 header and UDP; UDP over IPv6 through its pseudo-header, which
 * must stay valid), the IPv6 hop limit taken down by one as a router
 * would, VLAN tags left as they came. Returns the egress ifindex, or a
 * negative enum ks_steer_fail with the packet untouched. Global, so the
 * verifier walks it once and not once per path of ks_handle before it.
 */
__noinline int ks_steer_rewrite(struct xdp_md *ctx, __u32 ri)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct bpf_fib_lookup fib = {};
	struct ks_vlan_key vk = {};
	struct ks_replica *r;
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6 = NULL;
	struct iphdr *ip = NULL;
	struct vlan_hdr *vh;
	struct udphdr *uh;
	__u32 ingress = ctx->ingress_ifindex, sum, in, *vdev, ntags = 0;
	__u16 proto, old_port;
	void *l3;
	int i;

	r = bpf_map_lookup_elem(&ks_replicas, &ri);
	if (!r || !r->family)
		return -KS_STEER_UNUSED;
	if ((void *)(eth + 1) > end)
		return -KS_STEER_SHAPE;
	proto = eth->h_proto;
	l3 = eth + 1;
#pragma unroll
	for (i = 0; i < KS_MAX_VLAN; i++) {
		if (proto != bpf_htons(ETH_P_8021Q) &&
		    proto != bpf_htons(ETH_P_8021AD))
			break;
		vh = l3;
		if ((void *)(vh + 1) > end)
			return -KS_STEER_SHAPE;
		vk.vid[i] = bpf_ntohs(vh->h_vlan_TCI) & 0xfff;
		proto = vh->h_vlan_encapsulated_proto;
		l3 = vh + 1;
		ntags++;
	}

	if (proto == bpf_htons(ETH_P_IP)) {
		ip = l3;
		if ((void *)(ip + 1) > end)
			return -KS_STEER_SHAPE;
		if (r->family != KS_AF_INET)
			return -KS_STEER_FAMILY;
		if (ip->ihl != 5)
			return -KS_STEER_SHAPE;
		uh = (void *)(ip + 1);
		fib.family = KS_AF_INET;
		fib.tos = ip->tos;
		fib.tot_len = bpf_ntohs(ip->tot_len);
		fib.ipv4_src = ip->saddr;
		fib.ipv4_dst = r->addr.v4;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		ip6 = l3;
		if ((void *)(ip6 + 1) > end)
			return -KS_STEER_SHAPE;
		if (r->family != KS_AF_INET6)
			return -KS_STEER_FAMILY;
		/* extension headers would move the UDP header; hop limit
		 * 1 must not be forwarded */
		if (ip6->nexthdr != IPPROTO_UDP || ip6->hop_limit <= 1)
			return -KS_STEER_SHAPE;
		uh = (void *)(ip6 + 1);
		fib.family = KS_AF_INET6;
		fib.flowinfo = *(__be32 *)ip6 & bpf_htonl(KS_IP6_FLOWINFO_MASK);
		fib.tot_len = bpf_ntohs(ip6->payload_len);
		__builtin_memcpy(fib.ipv6_src, &ip6->saddr, 16);
		__builtin_memcpy(fib.ipv6_dst, r->addr.v6, 16);
	} else {
		return -KS_STEER_SHAPE;
	}
	if ((void *)(uh + 1) > end)
		return -KS_STEER_SHAPE;
	/* 0 is no checksum over IPv4 (kept so), and invalid over IPv6:
	 * the owner's stack drops it as it would without keysteer */
	if (ip6 && !uh->check)
		return -KS_STEER_SHAPE;

	fib.ifindex = ingress;
	if (ntags) {
		/* the sub-interface of these tags: its FIB view and its
		 * forwarding switch, and the replica must be behind it */
		vk.ifindex = ingress;
		vdev = bpf_map_lookup_elem(&ks_vlans, &vk);
		if (!vdev)
			return -KS_STEER_NO_ROUTE;
		fib.ifindex = *vdev;
	}
	in = fib.ifindex;
	fib.l4_protocol = IPPROTO_UDP;
	fib.sport = uh->source;
	fib.dport = r->port;
	if (bpf_fib_lookup(ctx, &fib, sizeof(fib), 0) !=
	    BPF_FIB_LKUP_RET_SUCCESS)
		return -KS_STEER_NO_ROUTE;
	if (ntags && fib.ifindex != in)
		return -KS_STEER_NO_ROUTE; /* another VLAN, or none */
	if (!ntags && fib.ifindex != in) {
		/* the replica is behind a VLAN sub-interface: not for an
		 * untagged frame (vk.vid is all zero here) */
		vk.ifindex = fib.ifindex;
		if (bpf_map_lookup_elem(&ks_vlans, &vk))
			return -KS_STEER_NO_ROUTE;
	}

	old_port = uh->dest;
	sum = (__u16)~uh->check;
	sum += (__u16)~old_port + r->port;
	if (ip) {
		__u32 old = ip->daddr;

		ip->check = ~ks_csum_fold(
			ks_csum_word((__u16)~ip->check, old, r->addr.v4));
		/* 0 means "no checksum" over IPv4; a computed 0 is sent as
		 * ~0 */
		if (uh->check) {
			uh->check = ~ks_csum_fold(
				ks_csum_word(sum, old, r->addr.v4));
			if (!uh->check)
				uh->check = 0xffff;
		}
		ip->daddr = r->addr.v4;
	} else if (ip6) {
		__u32 *da = (__u32 *)&ip6->daddr;

#pragma unroll
		for (i = 0; i < 4; i++)
			sum = ks_csum_word(sum, da[i], r->addr.w[i]);
		uh->check = ~ks_csum_fold(sum);
		if (!uh->check)
			uh->check = 0xffff;
		__builtin_memcpy(da, r->addr.v6, 16);
		ip6->hop_limit--;
	}
	uh->dest = r->port;
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	/* a tagged frame leaves where it came in, its tags unchanged */
	return ntags ? (int)ingress : (int)fib.ifindex;
}

/* A lone UDP get of the key in ks_hot slot idx. */
static __always_inline int ks_steer(struct xdp_md *ctx, __u32 idx)
{
	__u32 pick, ri;
	struct ks_hot_slot *slot;
	struct ks_hot_stats *st;
	__u64 *rs;
	int ifindex;

	slot = bpf_map_lookup_elem(&ks_hot, &idx);
	st = bpf_map_lookup_elem(&ks_hot_stats, &idx);
	if (!slot || !st)
		return XDP_PASS;
	/* expiry first: a removed slot is disarmed before anything else */
	if (KS_READ_ONCE(slot->expires_ns) <= bpf_ktime_get_coarse_ns() ||
	    KS_READ_ONCE(slot->armed_seq) != KS_READ_ONCE(slot->write_seq))
		return ks_steer_owner(st);
	if (slot->ncopies < 2 || slot->ncopies > KS_MAX_COPIES)
		return ks_steer_owner(st);
	pick = slot->sched[st->rr++ & (KS_STEER_SCHED - 1)];
	if (pick == 0 || pick >= slot->ncopies)
		return ks_steer_owner(st);
	/* the mask is a no-op after the check; the verifier wants it */
	ri = slot->replica[(pick - 1) & (KS_MAX_COPIES - 1)];
	ifindex = ks_steer_rewrite(ctx, ri);
	if (ifindex < 0) {
		if (ifindex == -KS_STEER_NO_ROUTE)
			ks_count_pkt(KS_PKT_STEER_NO_ROUTE);
		else if (ifindex == -KS_STEER_FAMILY)
			ks_count_pkt(KS_PKT_STEER_FAMILY);
		else if (ifindex == -KS_STEER_SHAPE)
			ks_count_pkt(KS_PKT_STEER_SHAPE);
		return ks_steer_owner(st);
	}
	st->steered++;
	ks_count_pkt(KS_PKT_STEERED);
	rs = bpf_map_lookup_elem(&ks_replica_stats, &ri);
	if (rs)
		*rs += 1;
	if ((__u32)ifindex == ctx->ingress_ifindex)
		return XDP_TX;
	return bpf_redirect(ifindex, 0);
}

#endif
