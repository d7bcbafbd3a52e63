// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench_pkt.c - the few frames the benchmark needs: one IPv4/TCP shape and
 * memcached text requests. Deliberately tiny and separate from tests/lib's
 * builder, so the benchmark's inputs stay fixed while that one grows.
 */
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include "bench.h"
#include "pkt.h"

#define ETH_LEN      14
#define IP4_LEN      20
#define TCP_LEN      20
#define UDP_LEN      8
#define MC_FRAME_LEN 8

static void put16(__u8 *p, __u16 v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static __u32 csum_add(__u32 sum, const __u8 *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (__u32)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (__u32)p[len - 1] << 8;
	return sum;
}

static __u16 csum_fold(__u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

size_t bench_frame_tcp4_seg(__u8 *out, size_t cap, __u16 sport, __u16 dport,
			    __u32 seq, __u8 flags, const void *payload,
			    size_t plen)
{
	static const __u8 saddr[4] = { 198, 18, 0, 1 };
	static const __u8 daddr[4] = { 198, 18, 0, 2 };
	__u8 *ip = out + ETH_LEN, *tcp = ip + IP4_LEN;
	size_t len = ETH_LEN + IP4_LEN + TCP_LEN + plen;
	__u32 sum;

	if (len > cap || IP4_LEN + TCP_LEN + plen > 0xffff)
		return 0;
	memset(out, 0, ETH_LEN + IP4_LEN + TCP_LEN);

	/* locally administered MACs; only the EtherType matters */
	memcpy(out, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
	put16(out + 12, 0x0800);

	ip[0] = 0x45;
	put16(ip + 2, (__u16)(IP4_LEN + TCP_LEN + plen));
	put16(ip + 4, 1);      /* id */
	put16(ip + 6, 0x4000); /* DF, as a TCP stack sends it */
	ip[8] = 64;
	ip[9] = IPPROTO_TCP;
	memcpy(ip + 12, saddr, 4);
	memcpy(ip + 16, daddr, 4);
	put16(ip + 10, csum_fold(csum_add(0, ip, IP4_LEN)));

	put16(tcp, sport);
	put16(tcp + 2, dport);
	put16(tcp + 4, seq >> 16);
	put16(tcp + 6, seq & 0xffff);
	put16(tcp + 10, 1); /* ack */
	tcp[12] = 5 << 4;   /* doff */
	tcp[13] = flags;
	put16(tcp + 14, 64240);
	if (plen)
		memcpy(tcp + TCP_LEN, payload, plen);

	/* pseudo-header, then the segment */
	sum = csum_add(0, ip + 12, 8);
	sum += IPPROTO_TCP + (__u32)(TCP_LEN + plen);
	sum = csum_add(sum, tcp, TCP_LEN + plen);
	put16(tcp + 16, csum_fold(sum));
	return len;
}

size_t bench_frame_tcp4(__u8 *out, size_t cap, __u16 dport, const void *payload,
			size_t plen)
{
	return bench_frame_tcp4_seg(out, cap, 40000, dport, 1000,
				    BENCH_TCP_PSH_ACK, payload, plen);
}

void bench_tcp_set_seq(__u8 *frame, __u32 seq)
{
	__u8 *tcp = frame + ETH_LEN + IP4_LEN;
	__u32 sum = (__u16) ~(tcp[16] << 8 | tcp[17]);
	int i;

	/* HC' = ~(~HC + ~m + m') for each 16-bit word that changes */
	for (i = 0; i < 2; i++) {
		__u16 m = tcp[4 + 2 * i] << 8 | tcp[5 + 2 * i];
		__u16 m2 = i ? seq & 0xffff : seq >> 16;

		sum += (__u16)~m + m2;
	}
	put16(tcp + 4, seq >> 16);
	put16(tcp + 6, seq & 0xffff);
	put16(tcp + 16, csum_fold(sum));
}

size_t bench_frame_udp4(__u8 *out, size_t cap, __u16 dport, const void *payload,
			size_t plen)
{
	static const __u8 saddr[4] = { 198, 18, 0, 1 };
	static const __u8 daddr[4] = { 198, 18, 0, 2 };
	__u8 *ip = out + ETH_LEN, *udp = ip + IP4_LEN;
	size_t ulen = UDP_LEN + MC_FRAME_LEN + plen;
	size_t len = ETH_LEN + IP4_LEN + ulen;
	__u32 sum;

	if (len > cap || IP4_LEN + ulen > 0xffff)
		return 0;
	memset(out, 0, ETH_LEN + IP4_LEN + UDP_LEN + MC_FRAME_LEN);
	memcpy(out, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
	put16(out + 12, 0x0800);
	ip[0] = 0x45;
	put16(ip + 2, (__u16)(IP4_LEN + ulen));
	put16(ip + 4, 1);
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	memcpy(ip + 12, saddr, 4);
	memcpy(ip + 16, daddr, 4);
	put16(ip + 10, csum_fold(csum_add(0, ip, IP4_LEN)));
	put16(udp, 40000);
	put16(udp + 2, dport);
	put16(udp + 4, (__u16)ulen);
	put16(udp + UDP_LEN, 7);     /* request id */
	put16(udp + UDP_LEN + 4, 1); /* total datagrams */
	memcpy(udp + UDP_LEN + MC_FRAME_LEN, payload, plen);
	sum = csum_add(0, ip + 12, 8);
	sum += IPPROTO_UDP + (__u32)ulen;
	sum = csum_add(sum, udp, ulen);
	put16(udp + 6, csum_fold(sum));
	return len;
}

void bench_key(char *out, size_t len, unsigned int seed)
{
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	char prefix[24];
	size_t i, n;

	/* a readable, unique prefix, then filler that varies with seed;
	 * writes exactly len bytes (no terminator) */
	n = (size_t)snprintf(prefix, sizeof(prefix), "key:%u:", seed);
	if (n > len)
		n = len;
	memcpy(out, prefix, n);
	for (i = n; i < len; i++)
		out[i] = alpha[(i * 7 + seed * 13) % (sizeof(alpha) - 1)];
}

size_t bench_get_line(char *out, size_t cap, unsigned int nkeys, size_t keylen)
{
	size_t n = 3;
	unsigned int k;

	if (cap < 3 + nkeys * (keylen + 1) + 2)
		return 0;
	memcpy(out, "get", 3);
	for (k = 0; k < nkeys; k++) {
		out[n++] = ' ';
		bench_key(out + n, keylen, k);
		n += keylen;
	}
	memcpy(out + n, "\r\n", 2);
	return n + 2;
}

size_t bench_set_req(char *out, size_t cap, size_t keylen, size_t vallen)
{
	char key[KS_MAX_KEY_LEN + 1];
	int n;

	if (keylen > KS_MAX_KEY_LEN)
		return 0;
	bench_key(key, keylen, 0);
	key[keylen] = '\0';
	n = snprintf(out, cap, "set %s 0 0 %zu\r\n", key, vallen);
	if (n < 0 || (size_t)n + vallen + 2 > cap)
		return 0;
	memset(out + n, 'v', vallen);
	memcpy(out + n + vallen, "\r\n", 2);
	return n + vallen + 2;
}

size_t bench_frame_udp(__u8 *out, size_t cap, __u16 dport, const void *payload,
		       size_t plen, bool v6, int ntags)
{
	static struct pkt p; /* 4 KiB: not on the stack */
	struct pkt_opts o;

	if (!v6 && !ntags)
		return bench_frame_udp4(out, cap, dport, payload, plen);
	/* the test builder: the same addresses, ports and request id */
	pkt_opts_default(&o, v6, IPPROTO_UDP);
	o.dport = dport;
	o.nvlan = ntags;
	if (ntags == 1) {
		o.vlan[0].tpid = PKT_ETH_P_8021Q;
		o.vlan[0].tci = BENCH_VLAN_OUTER;
	} else if (ntags == 2) {
		o.vlan[0].tpid = PKT_ETH_P_8021AD;
		o.vlan[0].tci = BENCH_VLAN_OUTER;
		o.vlan[1].tpid = PKT_ETH_P_8021Q;
		o.vlan[1].tci = BENCH_VLAN_INNER;
	}
	if (pkt_build(&p, &o, payload, plen) || p.len > cap)
		return 0;
	/* the MACs bench_frame_udp4 gives */
	memcpy(p.b, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
	memcpy(out, p.b, p.len);
	return p.len;
}
