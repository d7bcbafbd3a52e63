// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_ports.c - which destination ports are memcached: 11211 while every
 * configured port is 0, otherwise exactly the configured ones (any slot),
 * for TCP and UDP. Anything else is KS_ERR_NOT_MEMCACHED and nothing more.
 */
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include "kp.h"
#include "groups.h"

static void get_to(__u8 proto, __u16 sport, __u16 dport, int watched)
{
	static const char req[] = "get portkey\r\n";
	struct pkt_opts o;
	struct pkt p;

	pkt_opts_default(&o, 0, proto);
	o.sport = sport;
	o.dport = dport;
	kp_build(&p, &o, req, strlen(req));
	if (watched) {
		kp_send_mc(&p);
		kp_x_req(KS_OP_GET, strlen(req), "portkey", NULL);
	} else {
		kp_send(&p);
		kp_x_err(KS_ERR_NOT_MEMCACHED);
	}
}

static void t_ports(void)
{
	kp_begin("ports_default_11211_tcp_and_udp");
	get_to(IPPROTO_TCP, 40000, 11211, 1);
	get_to(IPPROTO_UDP, 40000, 11211, 1);
	kp_end();

	kp_begin("ports_default_ignores_other_ports");
	get_to(IPPROTO_TCP, 40000, 11311, 0);
	get_to(IPPROTO_UDP, 40000, 11212, 0);
	kp_end();

	kp_begin("ports_configured_11311_replaces_default");
	kp_set_ports(1, 11311);
	get_to(IPPROTO_TCP, 40000, 11311, 1);
	get_to(IPPROTO_UDP, 40000, 11311, 1);
	get_to(IPPROTO_TCP, 40000, 11211, 0);
	kp_end();

	/* ports in slots 0, 3 and 7, zero slots between them */
	kp_begin("ports_several_in_any_slot");
	{
		struct ks_config c = kp.cfg;

		memset(c.ports, 0, sizeof(c.ports));
		c.ports[0] = 11311;
		c.ports[3] = 22122;
		c.ports[7] = 11411;
		kp_config(&c);
	}
	get_to(IPPROTO_TCP, 40000, 11311, 1);
	get_to(IPPROTO_TCP, 40000, 22122, 1);
	get_to(IPPROTO_UDP, 40000, 11411, 1);
	get_to(IPPROTO_TCP, 40000, 11211, 0);
	get_to(IPPROTO_TCP, 40000, 11412, 0);
	kp_end();

	kp_begin("ports_all_eight_slots");
	kp_set_ports(8, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008);
	get_to(IPPROTO_TCP, 40000, 1001, 1);
	get_to(IPPROTO_TCP, 40000, 1008, 1);
	get_to(IPPROTO_TCP, 40000, 1009, 0);
	kp_end();

	/* to port 80: the error and SEEN, no op, no key, no l4 counter */
	kp_begin("ports_unwatched_counts_nothing_else");
	get_to(IPPROTO_TCP, 40000, 80, 0);
	kp_end();

	/* a reply from the server port is not a request (dst port only) */
	kp_begin("ports_reply_from_11211_not_parsed");
	get_to(IPPROTO_TCP, 11211, 40000, 0);
	get_to(IPPROTO_UDP, 11211, 40000, 0);
	kp_end();

	/* ports are host order in the config: 11211 is 0x2bcb, so a config of
	 * 0xcb2b (11211 byte-swapped) must not match 11211 */
	kp_begin("ports_config_is_host_order");
	kp_set_ports(1, 0xcb2b);
	get_to(IPPROTO_TCP, 40000, 11211, 0);
	get_to(IPPROTO_TCP, 40000, 0xcb2b, 1);
	kp_end();
}

void t_ports_group(void)
{
	t_ports();
}
