/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_limit.bpf.h - per-key rate limits for UDP gets (docs/limits.md).
 *
 * A lone "get KEY\r\n" or "gets KEY\r\n" datagram of a key in ks_limits
 * takes a token from the key's bucket (bpf/ks_limit.h); without one it is
 * refused: answered with memcached's SERVER_ERROR line in one datagram of
 * the same request id, sent back out where it came in (XDP_TX), or, with
 * KS_CFG_LIMIT_DROP, dropped. Only XDP refuses: a TCP request cannot be
 * taken out of its stream without breaking the connection, so TCP gets are
 * counted by the usual path and refused, if at all, by libkeysteer.
 *
 * The check runs only while ks_config.flags has KS_CFG_LIMITS (the agent
 * sets it while ks_limits has entries): with no limit a UDP get pays one
 * flag test. With limits the key is read from the packet, hashed and
 * looked up; its bytes are compared with the entry's before the bucket is
 * touched, so a key that shares a limited key's hash is never limited
 * (counted as collided, passed).
 */
#ifndef KS_LIMIT_BPF_H
#define KS_LIMIT_BPF_H

#include "ks_limit.h"
#include "ks_parse_mc.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KS_LIMIT_SLOTS);
	__type(key, __u64);
	__type(value, struct ks_limit_slot);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_limits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KS_LIMIT_SLOTS);
	__type(key, __u32);
	__type(value, struct ks_limit_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_limit_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_limit_pkts);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_limit_pkts SEC(".maps");

/* Written by the agent only (ks_limit.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KS_LIMIT_SLOTS);
	__type(key, __u32);
	__type(value, struct ks_limit_info);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_limit_info SEC(".maps");

/* The key of the get being checked, word aligned for the hash. */
struct ks_limit_buf {
	__u64 head;
	__u64 key[KS_KEY_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_limit_buf);
} ks_limit_buf SEC(".maps");

/* Shortest lone get: "get k\r\n"; longest: "gets " + 250 + "\r\n". */
#define KS_LIMIT_MIN_REQ 7
#define KS_LIMIT_MAX_REQ (5 + KS_MAX_KEY_LEN + 2)

/* Word i of the key with the bytes past len set to fill's. */
static __always_inline __u64 ks_limit_word(__u64 w, __u32 i, __u32 len,
					   __u64 fill)
{
	__u32 rem = len - i * 8;
	__u64 keep;

	if (rem >= 8)
		return w;
	keep = (1ULL << (rem * 8)) - 1;
	return (w & keep) | (fill & ~keep);
}

static __always_inline __u16 ks_limit_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

/* The headers a reply keeps, at most: Ethernet, two VLAN tags, IPv6,
 * UDP and the frame header (IPv4 with options is not answered). */
#define KS_LIMIT_HDR_MAX (14 + 4 * KS_MAX_VLAN + 40 + 16)

/*
 * The frame grown by delta > 0 bytes at its head: the off bytes of
 * headers copied out, the start moved delta bytes back, the headers
 * written at the new start, so they end where the reply's payload
 * begins, as the tail's growth would leave them. The tail cannot always
 * grow: veth's XDP path hands the program the sender's skb, whose
 * tailroom is whatever the sender left (drivers/net/veth.c,
 * veth_convert_skb_to_xdp_buff), while every XDP path keeps
 * XDP_PACKET_HEADROOM (256 bytes) in front, copying the skb when it has
 * less; delta is at most 32 - KS_LIMIT_MIN_REQ. 0, or -1 (the frame may
 * have moved: the caller sends nothing).
 */
static __always_inline int ks_limit_grow_head(struct xdp_md *ctx, __u32 off,
					      int delta)
{
	struct ks_limit_buf *b;
	__u32 zero = 0;
	__u64 n = off;

	b = bpf_map_lookup_elem(&ks_limit_buf, &zero);
	if (!b || off > KS_LIMIT_HDR_MAX)
		return -1;
	/* The bound again, on all 64 bits the verifier checks: the
	 * compiler, knowing off <= KS_LIMIT_HDR_MAX, would drop a mask and
	 * hand the helper the argument's unbounded register. */
	barrier_var(n);
	n = ((n - 1) & 0x7f) + 1; /* and never 0 */
	/* the key's bytes are no longer needed: its buffer holds the
	 * headers */
	if (bpf_xdp_load_bytes(ctx, 0, b->key, n))
		return -1;
	if (bpf_xdp_adjust_head(ctx, -delta))
		return -1;
	return bpf_xdp_store_bytes(ctx, 0, b->key, n) ? -1 : 0;
}

/*
 * The refused request at payload offset off turned into its reply:
 * addresses and ports swapped, the payload replaced by KS_LIMIT_REPLY
 * behind the frame header (same id, sequence 0 of 1), lengths and
 * checksums set (IPv4: header checksum, UDP checksum 0 = none; IPv6: the
 * UDP checksum, which it requires). VLAN tags stay as they came. IPv4
 * with options and IPv6 with extension headers are not answered. A reply
 * longer than its request (a get of a key under 26 bytes) grows the frame at
 * the tail, or where that fails at the head (ks_limit_grow_head; flags'
 * test-only KS_CFG_LIMIT_GROW_* choose one way). Returns 0, 1 when the
 * frame grew at its head, or -1 with nothing sent (the caller drops the
 * request).
 */
__noinline int ks_limit_reply(struct xdp_md *ctx, __u32 off, __u32 flags)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct vlan_hdr *vh;
	struct iphdr *ip = NULL;
	struct ipv6hdr *ip6 = NULL;
	struct udphdr *uh;
	__u8 mac[ETH_ALEN], *fr;
	__u32 l3, sum = 0, i, a4;
	__u16 proto, port, *w;
	void *l3p;
	int delta, head = 0;

	if (off > 0x3fff || off < 16)
		return -1;
	/* a small get is one buffer; a multi-buffer frame is not answered */
	if ((__u64)(end - data) != bpf_xdp_get_buff_len(ctx))
		return -1;
	if ((void *)(eth + 1) > end)
		return -1;
	proto = eth->h_proto;
	l3p = eth + 1;
#pragma unroll
	for (i = 0; i < KS_MAX_VLAN; i++) {
		if (proto != bpf_htons(ETH_P_8021Q) &&
		    proto != bpf_htons(ETH_P_8021AD))
			break;
		vh = l3p;
		if ((void *)(vh + 1) > end)
			return -1;
		proto = vh->h_vlan_encapsulated_proto;
		l3p = vh + 1;
	}
	l3 = l3p - data;
	/* the UDP header must sit right behind a plain IP header */
	if (proto == bpf_htons(ETH_P_IP)) {
		ip = l3p;
		if ((void *)(ip + 1) > end || ip->ihl != 5 ||
		    l3 + sizeof(*ip) + 16 != off)
			return -1;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		ip6 = l3p;
		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP ||
		    l3 + sizeof(*ip6) + 16 != off)
			return -1;
	} else {
		return -1;
	}
	delta = (int)(off + KS_LIMIT_REPLY_LEN) - (int)(end - data);
	if (delta > 0 && (flags & KS_CFG_LIMIT_GROW_HEAD)) {
		head = 1;
	} else if (bpf_xdp_adjust_tail(ctx, delta)) {
		/* a shrink never fails; a growth the tail has no room for
		 * is made at the head */
		if (delta <= 0 || (flags & KS_CFG_LIMIT_GROW_TAIL))
			return -1;
		head = 1;
	}
	if (head && ks_limit_grow_head(ctx, off, delta))
		return -1;

	/* every pointer again: the frame moved */
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	/* the UDP header; off >= 16 was checked above */
	uh = data + ((off - 16) & 0x3fff);
	if ((void *)uh + 16 + KS_LIMIT_REPLY_LEN > end)
		return -1;
	fr = (void *)uh + 8;
	eth = data;
	if ((void *)(eth + 1) > end)
		return -1;
	__builtin_memcpy(mac, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, mac, ETH_ALEN);

	port = uh->source;
	uh->source = uh->dest;
	uh->dest = port;
	uh->len = bpf_htons(16 + KS_LIMIT_REPLY_LEN);
	uh->check = 0;
	/* frame header: the id as it came, sequence 0, 1 datagram */
	fr[2] = 0;
	fr[3] = 0;
	fr[4] = 0;
	fr[5] = 1;
	fr[6] = 0;
	fr[7] = 0;
	__builtin_memcpy(fr + 8, KS_LIMIT_REPLY, KS_LIMIT_REPLY_LEN);

	if (ip) {
		ip = data + (l3 & 0xff);
		if ((void *)(ip + 1) > end)
			return -1;
		a4 = ip->saddr;
		ip->saddr = ip->daddr;
		ip->daddr = a4;
		ip->tot_len = bpf_htons(sizeof(*ip) + 16 + KS_LIMIT_REPLY_LEN);
		ip->ttl = 64;
		ip->check = 0;
		w = (__u16 *)ip;
#pragma unroll
		for (i = 0; i < sizeof(*ip) / 2; i++)
			sum += w[i];
		ip->check = ~ks_limit_fold(sum);
		return head;
	}
	ip6 = data + (l3 & 0xff);
	if ((void *)(ip6 + 1) > end)
		return -1;
	{
		struct in6_addr t = ip6->saddr;

		ip6->saddr = ip6->daddr;
		ip6->daddr = t;
	}
	ip6->payload_len = bpf_htons(16 + KS_LIMIT_REPLY_LEN);
	ip6->hop_limit = 64;
	/* pseudo header (addresses, length, next header), then the
	 * datagram: 16 + 32 bytes from the UDP header on */
	w = (__u16 *)&ip6->saddr;
#pragma unroll
	for (i = 0; i < 16; i++)
		sum += w[i];
	sum += bpf_htons(16 + KS_LIMIT_REPLY_LEN) + bpf_htons(IPPROTO_UDP);
	w = (__u16 *)uh;
	if ((void *)w + 16 + KS_LIMIT_REPLY_LEN > end)
		return -1;
#pragma unroll
	for (i = 0; i < (16 + KS_LIMIT_REPLY_LEN) / 2; i++)
		sum += w[i];
	uh->check = ~ks_limit_fold(sum);
	if (!uh->check)
		uh->check = 0xffff;
	return head;
}

static __always_inline void ks_limit_count(struct ks_limit_pkts *pk, __u32 i)
{
	if (i < KS_LIM_MAX)
		pk->n[i]++;
}

/*
 * The UDP request with its payload (after the frame header) at off, plen
 * bytes: XDP_PASS unless it is a lone get of a limited key over its limit;
 * then XDP_TX with the reply in place, or XDP_DROP. tcp: a TCP segment
 * that begins a request: a lone get of a limited key is counted only.
 */
__noinline int ks_limit_xdp(struct xdp_md *ctx, __u32 off, __u32 plen,
			    __u32 flags, __u32 tcp)
{
	struct ks_limit_slot *sl;
	struct ks_limit_stats *st;
	struct ks_limit_pkts *pk;
	struct ks_limit_buf *b;
	__u32 zero = 0, kofs, klen, i, id;
	__u64 hash, now, diff = 0;
	int ok;

	pk = bpf_map_lookup_elem(&ks_limit_pkts, &zero);
	b = bpf_map_lookup_elem(&ks_limit_buf, &zero);
	if (!pk || !b)
		return XDP_PASS;
	if (plen < KS_LIMIT_MIN_REQ || plen > KS_LIMIT_MAX_REQ ||
	    off > 0x3fff) {
		ks_limit_count(pk, KS_LIM_OTHER);
		return XDP_PASS;
	}
	b->head = 0;
	if (bpf_xdp_load_bytes(ctx, off, &b->head, 5))
		goto other;
	if ((__u32)b->head == KS_S4('g', 'e', 't', ' '))
		kofs = 4;
	else if ((b->head & 0xffffffffffULL) == KS_W5('g', 'e', 't', 's', ' '))
		kofs = 5;
	else
		goto other;
	klen = plen - kofs - 2;
	if (klen < 1 || klen > KS_MAX_KEY_LEN)
		goto other;
	if (bpf_xdp_load_bytes(ctx, off + plen - 2, &b->head, 2) ||
	    (__u16)b->head != KS_S2('\r', '\n'))
		goto other;
	/* the bound again, in a form the verifier keeps */
	if (bpf_xdp_load_bytes(ctx, off + kofs, b->key,
			       ((klen - 1) & (KS_KEY_BUF - 1)) + 1))
		goto other;
	/* No scan for a second key or a control byte: "get a b" hashes
	 * "a b", and a hit must match a rule's key byte for byte, which
	 * the rule parser never lets hold a blank or a control byte. */
	ks_limit_count(pk, KS_LIM_CHECKED);
	hash = ks_key_hash(b->key, klen);
	sl = bpf_map_lookup_elem(&ks_limits, &hash);
	if (!sl)
		return XDP_PASS;
	id = sl->id;
	st = bpf_map_lookup_elem(&ks_limit_stats, &id);
	if (!st)
		return XDP_PASS;
	/* the entry's key, not only its hash (ks_limit.h) */
	for (i = 0; i < KS_KEY_WORDS; i++) {
		if (i * 8 >= klen)
			break;
		/* the entry's bytes past its key are zero (limit_map.c) */
		diff |= ks_limit_word(b->key[i], i, klen, 0) ^
			*(__u64 *)&sl->key[i * 8];
	}
	if ((sl->len != klen || diff) && !(flags & KS_CFG_LIMIT_HASH_ONLY)) {
		st->collided++;
		return XDP_PASS;
	}
	if (tcp) {
		/* inside a stream: counted, never refused */
		st->tcp++;
		return XDP_PASS;
	}
	/* the coarse clock (a tick, 1-4 ms): the long-run rate is exact
	 * whatever the clock's step, since tat moves by one interval per
	 * allowed get; a step only widens a burst by a tick's worth */
	now = bpf_ktime_get_coarse_ns();
	bpf_spin_lock(&sl->lock);
	ok = ks_limit_take(&sl->tat_ns, now, sl->interval_ns, sl->tau_ns);
	bpf_spin_unlock(&sl->lock);
	if (ok) {
		st->allowed++;
		return XDP_PASS;
	}
	st->refused++;
	if (flags & KS_CFG_LIMIT_DROP) {
		ks_limit_count(pk, KS_LIM_DROPPED);
		return XDP_DROP;
	}
	ok = ks_limit_reply(ctx, off, flags);
	if (ok < 0) {
		ks_limit_count(pk, KS_LIM_NO_REPLY);
		return XDP_DROP;
	}
	ks_limit_count(pk, KS_LIM_REPLIED);
	if (ok)
		ks_limit_count(pk, KS_LIM_GREW_HEAD);
	return XDP_TX;
other:
	ks_limit_count(pk, KS_LIM_OTHER);
	return XDP_PASS;
}

#endif
