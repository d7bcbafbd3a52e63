// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_trace.c - with ks_config.trace set, each sampled key is one ks_event
 * in the ring buffer: op, class, key, hash, source address (IPv4 mapped as
 * ::ffff:a.b.c.d) and port, protocol. The model in kp.c builds the
 * expected events from the packets sent; kp_end() compares them in order.
 */
#include <string.h>
#include <netinet/in.h>
#include "kp.h"
#include "groups.h"

static void t_trace(void)
{
	struct pkt_opts o;
	struct pkt p;
	int i, n;

	kp_begin("trace_ipv4_tcp_get_two_keys");
	kp_set_trace(1);
	kp_send_tcp4("get tr1 tr2\r\n");
	kp_x_req(KS_OP_GET, 13, "tr1", "tr2", NULL);
	kp_end();

	kp_begin("trace_ipv6_udp_set_from_port_5555");
	kp_set_trace(1);
	pkt_opts_default(&o, 1, IPPROTO_UDP);
	o.sport = 5555;
	o.saddr[7] = 0x42;
	kp_build(&p, &o, "set tr6 0 0 2\r\nhi\r\n", 19);
	kp_send_mc(&p);
	kp_x_req(KS_OP_SET, 19, "tr6", NULL);
	kp_end();

	kp_begin("trace_mixed_ops_and_binary");
	kp_set_trace(1);
	kp_send_tcp4("delete td\r\nmg tm v\r\nincr ti 1\r\n");
	kp_x_req(KS_OP_DELETE, 11, "td", NULL);
	kp_x_req(KS_OP_MG, 9, "tm", NULL);
	kp_x_req(KS_OP_INCR, 11, "ti", NULL);
	{
		__u8 b[64];
		size_t len = pkt_bin_req(b, 0x0c, NULL, 0, "tb", 2, NULL, 0);

		pkt_opts_default(&o, 0, IPPROTO_TCP);
		o.saddr[3] = 77;
		o.sport = 33333;
		kp_build(&p, &o, b, len);
		kp_send_mc(&p);
		kp_x_req(KS_OP_GET, len, "tb", NULL);
	}
	kp_end();

	/* trace off: the sketch fills, the ring stays empty */
	kp_begin("trace_off_emits_nothing");
	kp_send_tcp4("get quiet\r\n");
	kp_x_req(KS_OP_GET, 11, "quiet", NULL);
	CHECK_EQ(kp_read_events(), 0);
	kp_end();

	/* only sampled keys are traced */
	kp_begin("trace_only_sampled_keys_n4");
	kp_set_trace(1);
	kp_set_sample(4);
	kp_send_tcp4("get s0 s1 s2 s3 s4 s5 s6 s7 s8 s9 sa sb\r\n");
	kp_x_req(KS_OP_GET, 41, NULL);
	for (i = 0; i < 12; i++) {
		char k[3] = { 's', "0123456789ab"[i], 0 };

		kp_x_keyn(KS_OP_GET, k, 2);
	}
	n = kp_read_events();
	CHECK_EQ(n, 3);
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 3);
	for (i = 0; i < n; i++)
		CHECK(kp.got[i].len == 2 && kp.got[i].key[0] == 's' &&
			      kp.got[i].op == KS_OP_GET &&
			      kp.got[i].hash == kp_hash(kp.got[i].key, 2),
		      "event %d: bad key/op/hash", i);
	kp_end();
}

void t_trace_group(void)
{
	t_trace();
}
