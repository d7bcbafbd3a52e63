/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_steer.bpf.h - sends a lone UDP get of an armed hot key to one of its
 * copies: the owner (this host: XDP_PASS) or an L1 replica, whose address
 * replaces the destination; the replica answers the client directly.
 *
 * Only untagged IPv4: the rewrite needs the next hop from the kernel's FIB
 * (bpf_fib_lookup), and a VLAN or IPv6 packet keeps going to the owner,
 * counted. Each CPU walks the slot's schedule of copies round robin, so
 * each copy gets its share exactly rather than in expectation.
 */
#ifndef KS_STEER_BPF_H
#define KS_STEER_BPF_H

#include "ks_hot.bpf.h"

#ifndef AF_INET
#define AF_INET 2
#endif

/* One's complement sum folded to 16 bits. */
static __always_inline __u16 ks_csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

/*
 * RFC 1624 incremental update, HC' = ~(~HC + ~m + m'), for a 32-bit field
 * (as two 16-bit words) and a 16-bit one. The sum does not care about byte
 * order as long as fields and checksum are taken as stored.
 */
static __always_inline __u16 ks_csum_replace(__u16 check, __u32 from, __u32 to,
					     __u16 from16, __u16 to16)
{
	__u32 sum = (__u16)~check;

	sum += (__u16) ~(from & 0xffff) + (__u16) ~(from >> 16);
	sum += (to & 0xffff) + (to >> 16);
	sum += (__u16)~from16 + to16;
	return ~ks_csum_fold(sum);
}

/* Counts a read left to the owner and passes it on. */
static __always_inline int ks_steer_owner(struct ks_hot_stats *st)
{
	st->owner++;
	return XDP_PASS;
}

/* The next hop to the replica; 0 with the packet rewritten, or -1. */
static __always_inline int ks_steer_rewrite(struct xdp_md *ctx,
					    const struct ks_replica *r)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct bpf_fib_lookup fib = {};
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct udphdr *uh;
	__u32 old_addr;
	__u16 old_port;

	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return -1;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->ihl != 5)
		return -1;
	uh = (void *)(ip + 1);
	if ((void *)(uh + 1) > end)
		return -1;

	fib.family = AF_INET;
	fib.tos = ip->tos;
	fib.l4_protocol = IPPROTO_UDP;
	fib.sport = uh->source;
	fib.dport = r->port;
	fib.tot_len = bpf_ntohs(ip->tot_len);
	fib.ipv4_src = ip->saddr;
	fib.ipv4_dst = r->addr;
	fib.ifindex = ctx->ingress_ifindex;
	if (bpf_fib_lookup(ctx, &fib, sizeof(fib), 0) !=
	    BPF_FIB_LKUP_RET_SUCCESS)
		return -1;

	old_addr = ip->daddr;
	old_port = uh->dest;
	ip->check = ks_csum_replace(ip->check, old_addr, r->addr, 0, 0);
	/* 0 means "no checksum" over IPv4; a computed 0 is sent as ~0 */
	if (uh->check) {
		uh->check = ks_csum_replace(uh->check, old_addr, r->addr,
					    old_port, r->port);
		if (!uh->check)
			uh->check = 0xffff;
	}
	ip->daddr = r->addr;
	uh->dest = r->port;
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	return fib.ifindex;
}

/* A lone UDP get of the key in ks_hot slot idx. */
static __always_inline int ks_steer(struct xdp_md *ctx, __u32 idx)
{
	__u32 pick, ri;
	struct ks_hot_slot *slot;
	struct ks_hot_stats *st;
	struct ks_replica *r;
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
	r = bpf_map_lookup_elem(&ks_replicas, &ri);
	if (!r || !r->addr)
		return ks_steer_owner(st);
	ifindex = ks_steer_rewrite(ctx, r);
	if (ifindex < 0) {
		ks_count_pkt(KS_PKT_STEER_NO_ROUTE);
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
