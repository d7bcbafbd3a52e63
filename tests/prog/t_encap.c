// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_encap.c - one GET through every encapsulation the datapath parses, and
 * the ones it must refuse (fragments, later UDP datagrams, too many VLAN
 * tags or extension headers, non-IP).
 */
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include "kp.h"
#include "groups.h"

/* Sends "get <key>\r\n" in o and expects it parsed. */
static void expect_get(const struct pkt_opts *o, const char *key)
{
	char req[300];
	struct pkt p;
	int n = snprintf(req, sizeof(req), "get %s\r\n", key);

	kp_build(&p, o, req, (size_t)n);
	kp_send_mc(&p);
	kp_x_req(KS_OP_GET, (size_t)n, key, NULL);
}

static void one_get(const char *name, const struct pkt_opts *o, const char *key)
{
	kp_begin(name);
	expect_get(o, key);
	kp_end();
}

/* Sends "get key\r\n" in o and expects exactly one error, reason. */
static void refused(const char *name, const struct pkt_opts *o, int reason)
{
	static const char req[] = "get refused\r\n";
	struct pkt p;

	kp_begin(name);
	kp_build(&p, o, req, strlen(req));
	kp_send(&p);
	kp_x_err(reason);
	if (reason != KS_ERR_NOT_MEMCACHED)
		kp_x_l4_dontcare(); /* it may or may not have seen the port */
	kp_end();
}

static void vlan(struct pkt_opts *o, int n, __u16 t0, __u16 t1, __u16 t2)
{
	__u16 t[3] = { t0, t1, t2 };
	int i;

	o->nvlan = n;
	for (i = 0; i < n; i++) {
		o->vlan[i].tpid = t[i];
		o->vlan[i].tci = (__u16)(100 + i);
	}
}

static void t_l2(void)
{
	struct pkt_opts o;

	pkt_opts_default(&o, 0, IPPROTO_TCP);
	one_get("encap_eth_ipv4_tcp", &o, "plain");

	kp_begin("encap_one_vlan_tag_8021q_and_8021ad");
	vlan(&o, 1, PKT_ETH_P_8021Q, 0, 0);
	expect_get(&o, "vlanq");
	vlan(&o, 1, PKT_ETH_P_8021AD, 0, 0);
	expect_get(&o, "vlanad");
	kp_end();

	kp_begin("encap_two_vlan_tags_8021ad_8021q_and_8021q_8021q");
	vlan(&o, 2, PKT_ETH_P_8021AD, PKT_ETH_P_8021Q, 0);
	expect_get(&o, "qinq");
	vlan(&o, 2, PKT_ETH_P_8021Q, PKT_ETH_P_8021Q, 0);
	expect_get(&o, "qq");
	kp_end();

	/* A third tag leaves 0x8100 where IP should be: not IP. */
	vlan(&o, 3, PKT_ETH_P_8021AD, PKT_ETH_P_8021Q, PKT_ETH_P_8021Q);
	refused("encap_three_vlan_tags_not_parsed", &o, KS_ERR_NOT_MEMCACHED);

	/* ARP, ICMP, ICMPv6: one error each, nothing else */
	kp_begin("encap_arp_icmp_icmpv6_not_memcached");
	{
		static const char req[] = "get refused\r\n";
		struct pkt p;

		pkt_opts_default(&o, 0, IPPROTO_TCP);
		o.ethertype = PKT_ETH_P_ARP;
		kp_build(&p, &o, req, strlen(req));
		kp_send(&p);
		pkt_opts_default(&o, 0, IPPROTO_ICMP);
		kp_build(&p, &o, req, strlen(req));
		kp_send(&p);
		pkt_opts_default(&o, 1, IPPROTO_ICMPV6);
		kp_build(&p, &o, req, strlen(req));
		kp_send(&p);
		kp.x.err[KS_ERR_NOT_MEMCACHED] = 3;
	}
	kp_end();
}

static void t_ipv4(void)
{
	struct pkt_opts o;
	char ctx[32], key[16];
	int w;

	kp_begin("encap_ipv4_options_ihl_6_to_15");
	for (w = 1; w <= 10; w++) {
		kp_reset();
		pkt_opts_default(&o, 0, IPPROTO_TCP);
		o.ip4_opt_words = w;
		snprintf(key, sizeof(key), "ihl%d", 5 + w);
		expect_get(&o, key);
		snprintf(ctx, sizeof(ctx), "ihl %d", 5 + w);
		kp_check(ctx);
	}
	kt_end();

	pkt_opts_default(&o, 0, IPPROTO_UDP);
	o.ip4_opt_words = 10;
	one_get("encap_ipv4_options_udp_ihl15", &o, "ihl15udp");

	pkt_opts_default(&o, 0, IPPROTO_TCP);
	o.ip4_frag = PKT_IP4_DF;
	one_get("encap_ipv4_dont_fragment_is_not_fragment", &o, "df");

	pkt_opts_default(&o, 0, IPPROTO_TCP);
	o.ip4_frag = PKT_IP4_MF;
	refused("encap_ipv4_first_fragment", &o, KS_ERR_FRAGMENT);

	pkt_opts_default(&o, 0, IPPROTO_TCP);
	o.ip4_frag = 185; /* offset 1480 bytes, last fragment */
	refused("encap_ipv4_nonfirst_fragment", &o, KS_ERR_FRAGMENT);

	pkt_opts_default(&o, 0, IPPROTO_UDP);
	o.ip4_frag = PKT_IP4_MF | 185;
	refused("encap_ipv4_middle_fragment_udp", &o, KS_ERR_FRAGMENT);

	/* The first fragment of a UDP datagram holds its request line. */
	pkt_opts_default(&o, 0, IPPROTO_UDP);
	o.ip4_frag = PKT_IP4_MF;
	kp_begin("encap_ipv4_first_fragment_udp_parsed");
	expect_get(&o, "fragkey");
	kp.x.pkts[KS_PKT_UDP_FRAG]++;
	kp_end();

	/* ... and a set whose value the later fragments carry: counted
	 * with the bytes its line gives, as a write (a hot key's dirty
	 * marking depends on it) */
	kp_begin("encap_ipv4_first_fragment_udp_set_value_beyond");
	{
		static const char line[] = "set fragset 0 0 3000\r\n";
		char pay[200];
		struct pkt p;
		__u16 ulen;

		memcpy(pay, line, strlen(line));
		memset(pay + strlen(line), 'v', sizeof(pay) - strlen(line));
		kp_build(&p, &o, pay, sizeof(pay));
		/* the UDP length of the whole datagram, as the sender wrote it */
		ulen = (__u16)(8 + 8 + strlen(line) + 3002);
		p.b[p.l4 + 4] = (__u8)(ulen >> 8);
		p.b[p.l4 + 5] = (__u8)ulen;
		kp_send_mc(&p);
		kp_x_req(KS_OP_SET, strlen(line) + 3002, "fragset", NULL);
		kp.x.pkts[KS_PKT_UDP_FRAG]++;
	}
	kp_end();

	/*
	 * One UDP datagram in one frame longer than an XDP test run's first
	 * buffer (about 3.5 KiB): XDP sees a multi-buffer frame whose IP
	 * length is more than data_end - data, and must ask for the whole
	 * frame's length (ks_frame_has) before it believes the header. A
	 * build that took the first buffer's length for the frame's counts
	 * it as a bad IP header instead.
	 */
	kp_begin("encap_udp_set_in_a_multi_buffer_frame");
	{
		static const char line[] = "set bigudp 0 0 3800\r\n";
		static char pay[sizeof(line) - 1 + 3802];
		size_t n = strlen(line);
		struct pkt p;

		pkt_opts_default(&o, 0, IPPROTO_UDP);
		memcpy(pay, line, n);
		memset(pay + n, 'v', 3800);
		memcpy(pay + n + 3800, "\r\n", 2);
		kp_build(&p, &o, pay, sizeof(pay));
		CHECK(p.len > 3600, "a frame of %u bytes", p.len);
		kp_send_mc(&p);
		kp_x_req(KS_OP_SET, sizeof(pay), "bigudp", NULL);
	}
	kp_end();
}

static void ext(struct pkt_opts *o, int i, __u8 type, __u8 len8)
{
	o->ext[i].type = type;
	o->ext[i].len8 = len8;
	if (o->next < i + 1)
		o->next = i + 1;
}

static void t_ipv6(void)
{
	struct pkt_opts o;
	struct pkt p;

	kp_begin("encap_ipv6_tcp_and_udp");
	pkt_opts_default(&o, 1, IPPROTO_TCP);
	expect_get(&o, "six");
	pkt_opts_default(&o, 1, IPPROTO_UDP);
	expect_get(&o, "sixudp");
	kp_end();

	pkt_opts_default(&o, 1, IPPROTO_TCP);
	ext(&o, 0, PKT_IP6_HOP, 0);
	one_get("encap_ipv6_hop_by_hop", &o, "hbh");

	pkt_opts_default(&o, 1, IPPROTO_TCP);
	ext(&o, 0, PKT_IP6_RT, 2);
	one_get("encap_ipv6_routing", &o, "rt");

	pkt_opts_default(&o, 1, IPPROTO_TCP);
	ext(&o, 0, PKT_IP6_DST, 1);
	one_get("encap_ipv6_destination_options", &o, "dst");

	pkt_opts_default(&o, 1, IPPROTO_UDP);
	ext(&o, 0, PKT_IP6_HOP, 3);
	ext(&o, 1, PKT_IP6_RT, 0);
	ext(&o, 2, PKT_IP6_DST, 5);
	one_get("encap_ipv6_chain_hbh_rt_dst_udp", &o, "chain3");

	/* KS_MAX_IP6_EXT headers is the most that is parsed */
	pkt_opts_default(&o, 1, IPPROTO_TCP);
	ext(&o, 0, PKT_IP6_HOP, 0);
	ext(&o, 1, PKT_IP6_DST, 0);
	ext(&o, 2, PKT_IP6_RT, 1);
	ext(&o, 3, PKT_IP6_DST, 0);
	one_get("encap_ipv6_chain_of_4_at_limit", &o, "chain4");

	pkt_opts_default(&o, 1, IPPROTO_TCP);
	ext(&o, 0, PKT_IP6_HOP, 0);
	ext(&o, 1, PKT_IP6_DST, 0);
	ext(&o, 2, PKT_IP6_RT, 1);
	ext(&o, 3, PKT_IP6_DST, 0);
	ext(&o, 4, PKT_IP6_DST, 0);
	refused("encap_ipv6_chain_of_5_over_limit", &o, KS_ERR_IP6_EXT_LIMIT);

	pkt_opts_default(&o, 1, IPPROTO_UDP);
	ext(&o, 0, PKT_IP6_FRAG, 0);
	o.ext[0].more = 1;
	kp_begin("encap_ipv6_first_fragment_udp_parsed");
	expect_get(&o, "frag6");
	kp.x.pkts[KS_PKT_UDP_FRAG]++;
	kp_end();

	pkt_opts_default(&o, 1, IPPROTO_UDP);
	ext(&o, 0, PKT_IP6_HOP, 0);
	ext(&o, 1, PKT_IP6_FRAG, 0);
	o.ext[1].frag = 100;
	refused("encap_ipv6_nonfirst_fragment_after_hbh", &o, KS_ERR_FRAGMENT);

	/* offset 0 and no more fragments: an atomic fragment (RFC 6946),
	 * the whole datagram, parsed through */
	pkt_opts_default(&o, 1, IPPROTO_TCP);
	ext(&o, 0, PKT_IP6_FRAG, 0);
	one_get("encap_ipv6_atomic_fragment_parsed", &o, "atomic");

	/* A hop-by-hop header claiming 64 bytes in a frame that ends after 16
	 * (lengths fixed to the short frame, so only the ext header lies). */
	kp_begin("encap_ipv6_ext_header_cut_short");
	pkt_opts_default(&o, 1, IPPROTO_TCP);
	ext(&o, 0, PKT_IP6_HOP, 7);
	kp_build(&p, &o, "get x\r\n", 7);
	pkt_cut_fixed(&p, p.l3 + 40 + 16);
	kp_send(&p);
	kp_x_err(KS_ERR_TRUNC_IP6_EXT);
	kp_x_l4_dontcare();
	kp_end();

	pkt_opts_default(&o, 1, IPPROTO_TCP);
	vlan(&o, 2, PKT_ETH_P_8021AD, PKT_ETH_P_8021Q, 0);
	ext(&o, 0, PKT_IP6_HOP, 0);
	ext(&o, 1, PKT_IP6_RT, 0);
	o.tcp_opt_words = 3;
	one_get("encap_qinq_ipv6_ext_tcp_options", &o, "everything");
}

static void t_l4(void)
{
	struct pkt_opts o;
	char ctx[32], key[16];
	int w;

	kp_begin("encap_tcp_options_doff_6_to_15");
	for (w = 1; w <= 10; w++) {
		kp_reset();
		pkt_opts_default(&o, w & 1, IPPROTO_TCP);
		o.tcp_opt_words = w;
		snprintf(key, sizeof(key), "doff%d", 5 + w);
		expect_get(&o, key);
		snprintf(ctx, sizeof(ctx), "doff %d", 5 + w);
		kp_check(ctx);
	}
	kt_end();

	pkt_opts_default(&o, 0, IPPROTO_UDP);
	one_get("encap_udp_frame_header", &o, "udpkey");

	/* memcached serves a datagram whose frame says "1 of 1" and drops
	 * any multi-datagram request, first datagram included; the sequence
	 * number it does not look at */
	pkt_opts_default(&o, 0, IPPROTO_UDP);
	o.mc.total = 2;
	refused("encap_udp_first_of_two_datagrams", &o, KS_ERR_UDP_MULTI);

	pkt_opts_default(&o, 0, IPPROTO_UDP);
	o.mc.seq = 1;
	o.mc.total = 2;
	refused("encap_udp_later_datagram", &o, KS_ERR_UDP_MULTI);

	pkt_opts_default(&o, 0, IPPROTO_UDP);
	o.mc.seq = 3;
	one_get("encap_udp_sequence_number_ignored", &o, "seq3");
}

static void t_tc(void)
{
	static const char req[] = "get tckey other\r\n";
	struct pkt_opts o;
	struct pkt p;

	kp_begin("tc_ingress_ipv4_tcp_get");
	kp_tcp4(&p, req, strlen(req));
	kp_send_tc(&p);
	kp_x_req(KS_OP_GET, strlen(req), "tckey", "other", NULL);
	kp_end();

	kp_begin("tc_ingress_qinq_ipv6_ext_udp_set");
	pkt_opts_default(&o, 1, IPPROTO_UDP);
	vlan(&o, 2, PKT_ETH_P_8021AD, PKT_ETH_P_8021Q, 0);
	ext(&o, 0, PKT_IP6_HOP, 1);
	kp_build(&p, &o, "set tcset 0 0 2\r\nhi\r\n", 21);
	kp_send_tc(&p);
	kp_x_req(KS_OP_SET, 21, "tcset", NULL);
	kp_end();
}

/*
 * A lone UDP get takes the fast path behind every header layout, through
 * XDP and tc: ks_fast_get() finds the payload from the packet's start and
 * the parsed offset (issue 27, for the verifier), and a wrong offset would
 * send every such get to the general parser, counted the same, only
 * slower; so KS_PKT_FAST_GET is pinned here, one per get.
 */
static void t_fast(void)
{
	static const char req[] = "get fastkey1\r\n";
	const long long len = (long long)strlen(req);
	struct pkt_opts o;
	struct pkt p;
	long long n = 0;
	int i, tc;

	kp_begin("encap_udp_lone_get_fast_path_behind_every_header");
	for (i = 0; i < 8; i++) {
		pkt_opts_default(&o, i >= 4, IPPROTO_UDP);
		if (i == 1 || i == 5)
			vlan(&o, 1, PKT_ETH_P_8021Q, 0, 0);
		if (i == 2 || i == 7)
			vlan(&o, 2, PKT_ETH_P_8021AD, PKT_ETH_P_8021Q, 0);
		if (i == 3)
			o.ip4_opt_words = 10;
		if (i == 6 || i == 7) {
			ext(&o, 0, PKT_IP6_HOP, 3);
			ext(&o, 1, PKT_IP6_RT, 0);
			ext(&o, 2, PKT_IP6_DST, 5);
		}
		for (tc = 0; tc < 2; tc++) {
			kp_build(&p, &o, req, (size_t)len);
			if (tc)
				kp_send_tc(&p);
			else
				kp_send_mc(&p);
			kp_x_req(KS_OP_GET, (size_t)len, "fastkey1", NULL);
			n++;
			kp.x.pkts[KS_PKT_FAST_GET] = n;
			kp.x.pkts[KS_PKT_FAST_GET_BYTES] = n * len;
		}
	}
	kp_end();
}

void t_encap_group(void)
{
	t_l2();
	t_ipv4();
	t_ipv6();
	t_l4();
	t_tc();
	t_fast();
}
