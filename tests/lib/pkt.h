/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pkt.h - a small packet builder for the program tests: Ethernet with 0-3
 * VLAN tags, IPv4 (options, fragments) or IPv6 (extension headers,
 * fragment header), TCP (options) or UDP (memcached's 8-byte frame header),
 * then a payload. Lengths and checksums come out right; the helpers below
 * then cut the frame at any byte or make one length field lie, because the
 * interesting tests are the packets a real stack would never send.
 */
#ifndef KS_TEST_PKT_H
#define KS_TEST_PKT_H

#include <stddef.h>
#include <linux/types.h>

#define PKT_MAX      4096 /* XDP test runs take about 3.5 KiB linear */
#define PKT_MAX_VLAN 3    /* one more than the datapath accepts */
#define PKT_MAX_EXT  6    /* one more than KS_MAX_IP6_EXT, and a fragment */

#define PKT_ETH_P_IP     0x0800
#define PKT_ETH_P_IPV6   0x86dd
#define PKT_ETH_P_ARP    0x0806
#define PKT_ETH_P_8021Q  0x8100
#define PKT_ETH_P_8021AD 0x88a8

/* IPv6 next-header values of the extension headers the builder makes. */
#define PKT_IP6_HOP  0
#define PKT_IP6_RT   43
#define PKT_IP6_FRAG 44
#define PKT_IP6_DST  60

/* TCP flag bits (byte 13 of the header). */
#define PKT_TCP_FIN 0x01
#define PKT_TCP_SYN 0x02
#define PKT_TCP_RST 0x04
#define PKT_TCP_PSH 0x08
#define PKT_TCP_ACK 0x10

/* IPv4 frag_off field bits (host order before the builder swaps). */
#define PKT_IP4_DF 0x4000
#define PKT_IP4_MF 0x2000

struct pkt_vlan {
	__u16 tpid; /* PKT_ETH_P_8021Q or PKT_ETH_P_8021AD */
	__u16 tci;
};

struct pkt_ext {
	__u8 type;  /* PKT_IP6_HOP, _RT, _DST or _FRAG */
	__u8 len8;  /* hdr ext len: size is (len8 + 1) * 8 (not for _FRAG) */
	__u16 frag; /* _FRAG only: offset in 8-byte units */
	__u8 more;  /* _FRAG only: M flag */
};

/* memcached's UDP frame header, host order here. */
struct pkt_mc_frame {
	__u16 req_id;
	__u16 seq;
	__u16 total;
	__u16 reserved;
};

struct pkt_opts {
	int nvlan;
	struct pkt_vlan vlan[PKT_MAX_VLAN];
	__u16 ethertype; /* 0: from ipv6; set it for non-IP frames */
	int ipv6;
	int ip4_opt_words; /* ihl - 5, 0..10 */
	__u16 ip4_frag;    /* flags | offset in 8-byte units */
	__u8 saddr[16];    /* IPv4 uses the first four bytes */
	__u8 daddr[16];
	int next; /* number of IPv6 extension headers */
	struct pkt_ext ext[PKT_MAX_EXT];
	__u8 proto;        /* IPPROTO_TCP, IPPROTO_UDP or anything */
	int tcp_opt_words; /* doff - 5, 0..10 */
	__u8 tcp_flags;    /* default PSH|ACK */
	__u32 tcp_seq;
	__u32 tcp_ack; /* default 5000 */
	__u16 sport, dport;
	int udp_frame; /* prepend the memcached frame header */
	struct pkt_mc_frame mc;
};

struct pkt {
	__u8 b[PKT_MAX];
	__u32 len;
	/* offsets of each layer in b, as built */
	__u32 l3, l4, pay; /* pay: the memcached request (after any frame) */
	__u32 plen;        /* payload bytes as built */
	int ipv6;
	__u8 proto;
	__u32 l4_hdr; /* TCP/UDP header bytes (incl. TCP options) */
};

/* IPv4 from 198.18.0.1 to 198.18.0.2:11211 (or IPv6 2001:db8::1 ->
 * 2001:db8::2); proto IPPROTO_UDP turns on the memcached frame header.
 * UDP comes from port 40000; TCP from a port of its own on every call
 * (PKT_LONE_PORT_BASE + a counter, cycling over PKT_LONE_PORTS), so each
 * lone segment is a flow of its own to a datapath that follows streams.
 * Set o->sport afterwards to choose the flow. */
#define PKT_LONE_PORT_BASE 61000
#define PKT_LONE_PORTS     4500
void pkt_opts_default(struct pkt_opts *o, int ipv6, __u8 proto);

/* Builds o + payload into p; returns 0, or -1 if it does not fit. */
int pkt_build(struct pkt *p, const struct pkt_opts *o, const void *payload,
	      size_t plen);

/* Cut the frame to n bytes and leave every length field as it was: the
 * IP/UDP lengths now lie about a frame that ends early. */
void pkt_cut(struct pkt *p, __u32 n);

/* Cut the frame to n bytes and make the IP/UDP lengths (and checksums) of
 * every header still whole agree with the shorter frame: a packet that was
 * sent this short. */
void pkt_cut_fixed(struct pkt *p, __u32 n);

/* Append zero bytes up to n (Ethernet minimum-size padding); lengths in the
 * headers do not change. */
void pkt_pad(struct pkt *p, __u32 n);

/* Lies, one field each; IPv4 header checksum is kept right. */
void pkt_set_ip4_tot_len(struct pkt *p, __u16 tot_len);
void pkt_set_ip4_ihl(struct pkt *p, __u8 ihl);
void pkt_set_ip6_plen(struct pkt *p, __u16 plen);
void pkt_set_tcp_doff(struct pkt *p, __u8 doff);
void pkt_set_udp_len(struct pkt *p, __u16 len);

/* Rewrite a built TCP segment's sequence number or flags; the TCP
 * checksum is recomputed. */
void pkt_set_tcp_seq(struct pkt *p, __u32 seq);
void pkt_set_tcp_flags(struct pkt *p, __u8 flags);
/* The sequence number, flags and source port of a built TCP segment. */
__u32 pkt_tcp_seq(const struct pkt *p);
__u8 pkt_tcp_flags(const struct pkt *p);
__u16 pkt_sport(const struct pkt *p);

/* Recompute the IPv4 header checksum and the TCP/UDP checksum. */
void pkt_fix_csums(struct pkt *p);

/* Internet checksum helpers, exposed for the tests of the builder. */
__u32 pkt_csum_add(__u32 sum, const void *data, size_t len);
__u16 pkt_csum_fold(__u32 sum);

/* Helpers that write a binary-protocol request header (24 bytes) at out;
 * returns bytes written: header + extras + key + value. */
size_t pkt_bin_req(__u8 *out, __u8 opcode, const void *extras, __u8 extlen,
		   const void *key, __u16 keylen, const void *val,
		   __u32 vallen);

#endif
