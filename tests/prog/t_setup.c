// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_setup.c - the harness's own ground: the object loaded without pinning
 * anything, and the packet builder producing what it claims (checksums,
 * offsets), since every other test trusts both.
 */
#include <string.h>
#include <netinet/in.h>
#include "kp.h"
#include "groups.h"

static const char *const map_names[] = {
	"ks_config", "ks_ops",   "ks_errors", "ks_pkts",
	"ks_cms",    "ks_cands", "ks_events", "ks_report",
};

static void t_no_pins(void)
{
	size_t i;

	kp_begin("setup_maps_not_pinned");
	CHECK(kp_nothing_pinned(), "a map has a pin path or is pinned");
	for (i = 0; i < sizeof(map_names) / sizeof(map_names[0]); i++)
		CHECK(!kp_pin_exists(map_names[i]), "/sys/fs/bpf/%s exists",
		      map_names[i]);
	kp_end();
}

/* Sum over a region including its checksum field folds to 0 when right. */
static int csum_ok(const __u8 *p, size_t len)
{
	return pkt_csum_fold(pkt_csum_add(0, p, len)) == 0;
}

static int l4_csum_ok(const struct pkt *p)
{
	__u8 pseudo[8] = { 0 };
	__u32 l4len = p->len - p->l4, sum;

	if (p->ipv6)
		sum = pkt_csum_add(0, p->b + p->l3 + 8, 32);
	else
		sum = pkt_csum_add(0, p->b + p->l3 + 12, 8);
	pseudo[0] = l4len >> 24;
	pseudo[1] = (l4len >> 16) & 0xff;
	pseudo[2] = (l4len >> 8) & 0xff;
	pseudo[3] = l4len & 0xff;
	pseudo[7] = p->proto;
	sum = pkt_csum_add(sum, pseudo, 8);
	return pkt_csum_fold(pkt_csum_add(sum, p->b + p->l4, l4len)) == 0;
}

static void t_builder(void)
{
	static const char req[] = "get builder\r\n";
	struct pkt_opts o;
	struct pkt p;

	kp_begin("builder_ipv4_layout_and_checksums");
	pkt_opts_default(&o, 0, IPPROTO_TCP);
	o.nvlan = 2;
	o.vlan[0].tpid = PKT_ETH_P_8021AD;
	o.vlan[1].tpid = PKT_ETH_P_8021Q;
	o.ip4_opt_words = 3;
	o.tcp_opt_words = 3;
	kp_build(&p, &o, req, strlen(req));
	CHECK_EQ(p.l3, 22);
	CHECK_EQ(p.b[12] << 8 | p.b[13], 0x88a8);
	CHECK_EQ(p.b[20] << 8 | p.b[21], 0x0800);
	CHECK_EQ(p.b[p.l3], 0x48);
	CHECK_EQ(p.l4, 22 + 32);
	CHECK_EQ(p.b[p.l4 + 12] >> 4, 8);
	CHECK_EQ(p.pay, p.l4 + 32);
	CHECK_EQ(p.len, p.pay + strlen(req));
	CHECK_EQ(p.b[p.l3 + 2] << 8 | p.b[p.l3 + 3], p.len - p.l3);
	CHECK(csum_ok(p.b + p.l3, 32), "IPv4 header checksum wrong");
	CHECK(l4_csum_ok(&p), "TCP checksum wrong");
	CHECK(!memcmp(p.b + p.pay, req, strlen(req)), "payload bytes");

	pkt_opts_default(&o, 0, IPPROTO_UDP);
	kp_build(&p, &o, req, strlen(req));
	CHECK_EQ(p.pay, p.l4 + 16);
	CHECK_EQ(p.b[p.l4 + 4] << 8 | p.b[p.l4 + 5], p.len - p.l4);
	CHECK_EQ(p.b[p.l4 + 8] << 8 | p.b[p.l4 + 9], 7); /* request id */
	CHECK_EQ(p.b[p.l4 + 13], 1);                     /* total */
	CHECK(l4_csum_ok(&p), "UDP checksum wrong");
	kp_end();
}

static void t_builder6(void)
{
	static const char req[] = "get builder6\r\n";
	struct pkt_opts o;
	struct pkt p;

	kp_begin("builder_ipv6_ext_layout_and_checksums");
	pkt_opts_default(&o, 1, IPPROTO_UDP);
	o.next = 3;
	o.ext[0].type = PKT_IP6_HOP;
	o.ext[1].type = PKT_IP6_RT;
	o.ext[1].len8 = 2;
	o.ext[2].type = PKT_IP6_DST;
	kp_build(&p, &o, req, strlen(req));
	CHECK_EQ(p.b[p.l3 + 6], PKT_IP6_HOP);
	CHECK_EQ(p.b[p.l3 + 40], PKT_IP6_RT);
	CHECK_EQ(p.b[p.l3 + 48], PKT_IP6_DST);
	CHECK_EQ(p.b[p.l3 + 49], 2);
	CHECK_EQ(p.b[p.l3 + 72], IPPROTO_UDP);
	CHECK_EQ(p.l4, p.l3 + 40 + 8 + 24 + 8);
	CHECK_EQ(p.b[p.l3 + 4] << 8 | p.b[p.l3 + 5], p.len - p.l3 - 40);
	/* L4 checksum over the UDP datagram, pseudo header from IPv6 */
	CHECK(l4_csum_ok(&p), "UDP/IPv6 checksum wrong");

	pkt_cut_fixed(&p, p.pay + 3);
	CHECK_EQ(p.b[p.l4 + 4] << 8 | p.b[p.l4 + 5], p.len - p.l4);
	CHECK_EQ(p.b[p.l3 + 4] << 8 | p.b[p.l3 + 5], p.len - p.l3 - 40);
	CHECK(l4_csum_ok(&p), "UDP/IPv6 checksum wrong after cut");
	kp_end();
}

void t_setup_group(void)
{
	t_no_pins();
	t_builder();
	t_builder6();
}
