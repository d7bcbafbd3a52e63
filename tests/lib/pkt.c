// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pkt.c - the packet builder behind tests/prog. Writes every header by hand
 * at byte offsets (no struct overlays), so a test can see exactly which
 * bytes each option produced and a lie is one store away.
 */
#include <string.h>
#include <netinet/in.h>
#include "pkt.h"

#define ETH_HDR  14
#define VLAN_HDR 4
#define IP4_HDR  20
#define IP6_HDR  40
#define TCP_HDR  20
#define UDP_HDR  8
#define MC_FRAME 8

static void put16(__u8 *p, __u16 v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static void put32(__u8 *p, __u32 v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

static __u16 get16(const __u8 *p)
{
	return (__u16)(p[0] << 8 | p[1]);
}

__u32 pkt_csum_add(__u32 sum, const void *data, size_t len)
{
	const __u8 *p = data;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += get16(p + i);
	if (len & 1)
		sum += (__u32)p[len - 1] << 8;
	return sum;
}

__u16 pkt_csum_fold(__u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

void pkt_opts_default(struct pkt_opts *o, int ipv6, __u8 proto)
{
	static const __u8 v4s[4] = { 198, 18, 0, 1 },
			  v4d[4] = { 198, 18, 0, 2 };
	static const __u8 v6s[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	static const __u8 v6d[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };
	static unsigned int lone; /* TCP source ports handed out so far */

	memset(o, 0, sizeof(*o));
	o->ipv6 = ipv6;
	memcpy(o->saddr, ipv6 ? v6s : v4s, ipv6 ? 16 : 4);
	memcpy(o->daddr, ipv6 ? v6d : v4d, ipv6 ? 16 : 4);
	o->proto = proto;
	o->tcp_flags = PKT_TCP_PSH | PKT_TCP_ACK; /* a segment with data */
	o->tcp_seq = 1000;
	o->tcp_ack = 5000;
	o->sport = 40000;
	if (proto == IPPROTO_TCP)
		o->sport = (__u16)(PKT_LONE_PORT_BASE +
				   lone++ % PKT_LONE_PORTS);
	o->dport = 11211;
	o->udp_frame = proto == IPPROTO_UDP;
	o->mc.req_id = 7;
	o->mc.total = 1;
}

/* TCP options that look like a real stack's: timestamps, then NOPs. */
static void put_tcp_opts(__u8 *p, int words)
{
	size_t n = (size_t)words * 4, i = 0;

	if (n >= 12) {
		p[i++] = 1;
		p[i++] = 1;
		p[i++] = 8; /* timestamps */
		p[i++] = 10;
		put32(p + i, 0x11223344);
		put32(p + i + 4, 0x55667788);
		i += 8;
	}
	for (; i < n; i++)
		p[i] = 1; /* NOP */
}

/* IPv4 options: NOPs, then end-of-list, so a parser must use ihl. */
static void put_ip4_opts(__u8 *p, int words)
{
	size_t n = (size_t)words * 4;

	memset(p, 1, n);
	if (n)
		p[n - 1] = 0;
}

/* Hop-by-hop / destination options body: one PadN covering the rest. */
static void put_ip6_opts(__u8 *p, size_t size)
{
	p[2] = 1; /* PadN */
	p[3] = (__u8)(size - 4);
	memset(p + 4, 0, size - 4);
}

static size_t ext_size(const struct pkt_ext *e)
{
	return e->type == PKT_IP6_FRAG ? 8 : ((size_t)e->len8 + 1) * 8;
}

/* Writes the IPv6 extension chain at p; returns its length. */
static size_t put_ip6_exts(__u8 *p, const struct pkt_opts *o)
{
	size_t off = 0;
	int i;

	for (i = 0; i < o->next; i++) {
		const struct pkt_ext *e = &o->ext[i];
		__u8 nh = i + 1 < o->next ? o->ext[i + 1].type : o->proto;
		size_t sz = ext_size(e);

		memset(p + off, 0, sz);
		p[off] = nh;
		if (e->type == PKT_IP6_FRAG) {
			put16(p + off + 2,
			      (__u16)(e->frag << 3 | (e->more ? 1 : 0)));
			put32(p + off + 4, 0xabcd0001);
		} else {
			p[off + 1] = e->len8;
			if (e->type == PKT_IP6_RT) {
				p[off + 2] = 4; /* segment routing */
				p[off + 3] = 0; /* segments left: done */
			} else {
				put_ip6_opts(p + off, sz);
			}
		}
		off += sz;
	}
	return off;
}

int pkt_build(struct pkt *p, const struct pkt_opts *o, const void *payload,
	      size_t plen)
{
	__u16 etype = o->ethertype ? o->ethertype
				   : (o->ipv6 ? PKT_ETH_P_IPV6 : PKT_ETH_P_IP);
	size_t off = 12, l3hdr, l4hdr = 0;
	int i;

	memset(p, 0, sizeof(*p));
	/* Ethernet: locally administered MACs. */
	memcpy(p->b, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
	for (i = 0; i < o->nvlan; i++) {
		put16(p->b + off, o->vlan[i].tpid);
		put16(p->b + off + 2, o->vlan[i].tci);
		off += VLAN_HDR;
	}
	put16(p->b + off, etype);
	off += 2;
	p->l3 = (__u32)off;
	p->ipv6 = o->ipv6;
	p->proto = o->proto;

	if (etype != PKT_ETH_P_IP && etype != PKT_ETH_P_IPV6) {
		/* Not IP: the payload follows the Ethernet header. */
		if (off + plen > PKT_MAX)
			return -1;
		memcpy(p->b + off, payload, plen);
		p->l4 = p->pay = (__u32)off;
		p->plen = (__u32)plen;
		p->len = (__u32)(off + plen);
		return 0;
	}

	if (o->ipv6) {
		l3hdr = IP6_HDR;
		for (i = 0; i < o->next; i++)
			l3hdr += ext_size(&o->ext[i]);
	} else {
		l3hdr = IP4_HDR + (size_t)o->ip4_opt_words * 4;
	}
	if (o->proto == IPPROTO_TCP)
		l4hdr = TCP_HDR + (size_t)o->tcp_opt_words * 4;
	else if (o->proto == IPPROTO_UDP)
		l4hdr = UDP_HDR + (o->udp_frame ? MC_FRAME : 0);
	if (off + l3hdr + l4hdr + plen > PKT_MAX)
		return -1;

	p->l4 = (__u32)(off + l3hdr);
	p->l4_hdr = o->proto == IPPROTO_UDP ? UDP_HDR : (__u32)l4hdr;
	p->pay = (__u32)(off + l3hdr + l4hdr);
	p->plen = (__u32)plen;
	p->len = (__u32)(off + l3hdr + l4hdr + plen);

	if (o->ipv6) {
		__u8 *ip = p->b + p->l3;

		ip[0] = 0x60;
		put16(ip + 4, (__u16)(p->len - p->l3 - IP6_HDR));
		ip[6] = o->next ? o->ext[0].type : o->proto;
		ip[7] = 64;
		memcpy(ip + 8, o->saddr, 16);
		memcpy(ip + 24, o->daddr, 16);
		put_ip6_exts(ip + IP6_HDR, o);
	} else {
		__u8 *ip = p->b + p->l3;

		ip[0] = 0x40 | (5 + o->ip4_opt_words);
		put16(ip + 2, (__u16)(p->len - p->l3));
		put16(ip + 4, 0x1234);
		put16(ip + 6, o->ip4_frag);
		ip[8] = 64;
		ip[9] = o->proto;
		memcpy(ip + 12, o->saddr, 4);
		memcpy(ip + 16, o->daddr, 4);
		put_ip4_opts(ip + IP4_HDR, o->ip4_opt_words);
	}

	if (o->proto == IPPROTO_TCP) {
		__u8 *t = p->b + p->l4;

		put16(t, o->sport);
		put16(t + 2, o->dport);
		put32(t + 4, o->tcp_seq);
		put32(t + 8, o->tcp_ack);
		t[12] = (__u8)((5 + o->tcp_opt_words) << 4);
		t[13] = o->tcp_flags;
		put16(t + 14, 65535);
		put_tcp_opts(t + TCP_HDR, o->tcp_opt_words);
	} else if (o->proto == IPPROTO_UDP) {
		__u8 *u = p->b + p->l4;

		put16(u, o->sport);
		put16(u + 2, o->dport);
		put16(u + 4, (__u16)(p->len - p->l4));
		if (o->udp_frame) {
			put16(u + 8, o->mc.req_id);
			put16(u + 10, o->mc.seq);
			put16(u + 12, o->mc.total);
			put16(u + 14, o->mc.reserved);
		}
	}
	if (plen)
		memcpy(p->b + p->pay, payload, plen);
	pkt_fix_csums(p);
	return 0;
}

/* Where the IP datagram ends according to its own length field. */
static __u32 ip_end(const struct pkt *p)
{
	const __u8 *ip = p->b + p->l3;

	if (p->ipv6)
		return p->l3 + IP6_HDR + get16(ip + 4);
	return p->l3 + get16(ip + 2);
}

static void fix_ip4_csum(struct pkt *p)
{
	__u8 *ip = p->b + p->l3;
	__u32 hl = (ip[0] & 0xf) * 4u;

	if (p->ipv6 || p->l3 + IP4_HDR > p->len || hl < IP4_HDR ||
	    p->l3 + hl > p->len)
		return;
	put16(ip + 10, 0);
	put16(ip + 10, pkt_csum_fold(pkt_csum_add(0, ip, hl)));
}

static void fix_l4_csum(struct pkt *p)
{
	__u32 end = ip_end(p), l4len, sum = 0;
	__u8 *ip = p->b + p->l3, *l4 = p->b + p->l4;
	__u8 pseudo[8];
	int at;

	if (p->proto != IPPROTO_TCP && p->proto != IPPROTO_UDP)
		return;
	if (end > p->len || end < p->l4 + p->l4_hdr ||
	    p->l4 + (p->proto == IPPROTO_TCP ? TCP_HDR : UDP_HDR) > p->len)
		return;
	l4len = end - p->l4;
	at = p->proto == IPPROTO_TCP ? 16 : 6;
	put16(l4 + at, 0);
	if (p->ipv6)
		sum = pkt_csum_add(sum, ip + 8, 32);
	else
		sum = pkt_csum_add(sum, ip + 12, 8);
	put32(pseudo, l4len);
	put32(pseudo + 4, p->proto);
	sum = pkt_csum_add(sum, pseudo, 8);
	sum = pkt_csum_add(sum, l4, l4len);
	put16(l4 + at, pkt_csum_fold(sum));
	if (p->proto == IPPROTO_UDP && get16(l4 + at) == 0)
		put16(l4 + at, 0xffff); /* 0 means "no checksum" in UDP */
}

void pkt_fix_csums(struct pkt *p)
{
	if (p->l3 == p->l4)
		return; /* not IP */
	fix_ip4_csum(p);
	fix_l4_csum(p);
}

void pkt_cut(struct pkt *p, __u32 n)
{
	if (n < p->len)
		memset(p->b + n, 0, p->len - n);
	p->len = n < p->len ? n : p->len;
}

void pkt_cut_fixed(struct pkt *p, __u32 n)
{
	pkt_cut(p, n);
	if (p->l3 == p->l4)
		return;
	if (p->ipv6) {
		if (p->l3 + IP6_HDR <= n)
			put16(p->b + p->l3 + 4, (__u16)(n - p->l3 - IP6_HDR));
	} else if (p->l3 + 4 <= n) {
		put16(p->b + p->l3 + 2, (__u16)(n - p->l3));
	}
	if (p->proto == IPPROTO_UDP && p->l4 + 6 <= n)
		put16(p->b + p->l4 + 4, (__u16)(n - p->l4));
	pkt_fix_csums(p);
}

void pkt_pad(struct pkt *p, __u32 n)
{
	if (n > PKT_MAX)
		n = PKT_MAX;
	if (n > p->len) {
		memset(p->b + p->len, 0, n - p->len);
		p->len = n;
	}
}

void pkt_set_ip4_tot_len(struct pkt *p, __u16 tot_len)
{
	put16(p->b + p->l3 + 2, tot_len);
	fix_ip4_csum(p);
}

void pkt_set_ip4_ihl(struct pkt *p, __u8 ihl)
{
	__u8 *ip = p->b + p->l3;

	ip[0] = 0x40 | (ihl & 0xf);
	/* The checksum covers what the header claims, when that is whole. */
	if (ihl >= 5)
		fix_ip4_csum(p);
	else {
		put16(ip + 10, 0);
		put16(ip + 10, pkt_csum_fold(pkt_csum_add(0, ip, IP4_HDR)));
	}
}

void pkt_set_ip6_plen(struct pkt *p, __u16 plen)
{
	put16(p->b + p->l3 + 4, plen);
}

void pkt_set_tcp_doff(struct pkt *p, __u8 doff)
{
	__u8 *t = p->b + p->l4;

	t[12] = (__u8)((doff & 0xf) << 4);
}

void pkt_set_tcp_seq(struct pkt *p, __u32 seq)
{
	put32(p->b + p->l4 + 4, seq);
	pkt_fix_csums(p);
}

void pkt_set_tcp_flags(struct pkt *p, __u8 flags)
{
	p->b[p->l4 + 13] = flags;
	pkt_fix_csums(p);
}

__u32 pkt_tcp_seq(const struct pkt *p)
{
	const __u8 *t = p->b + p->l4;

	return (__u32)get16(t + 4) << 16 | get16(t + 6);
}

__u8 pkt_tcp_flags(const struct pkt *p)
{
	return p->b[p->l4 + 13];
}

__u16 pkt_sport(const struct pkt *p)
{
	return get16(p->b + p->l4);
}

void pkt_set_udp_len(struct pkt *p, __u16 len)
{
	put16(p->b + p->l4 + 4, len);
}

size_t pkt_bin_req(__u8 *out, __u8 opcode, const void *extras, __u8 extlen,
		   const void *key, __u16 keylen, const void *val, __u32 vallen)
{
	__u32 body = (__u32)extlen + keylen + vallen;

	memset(out, 0, 24);
	out[0] = 0x80; /* request magic */
	out[1] = opcode;
	put16(out + 2, keylen);
	out[4] = extlen;
	put32(out + 8, body);
	put32(out + 12, 0xdeadbeef); /* opaque */
	if (extlen)
		memcpy(out + 24, extras, extlen);
	if (keylen)
		memcpy(out + 24 + extlen, key, keylen);
	if (vallen)
		memcpy(out + 24 + extlen + keylen, val, vallen);
	return 24 + body;
}
