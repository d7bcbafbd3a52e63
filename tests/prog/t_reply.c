// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_reply.c - the owner's replies to hot-key reads, counted by ks_tc_egress
 * (bpf/ks_reply.bpf.h): a read goes in through ks_ingress or ks_tc_ingress,
 * the memcached reply a test builds (server to client) goes out through
 * ks_tc_egress, and the slot's ks_hot_replies must show exactly the hits,
 * misses, unpaired and malformed replies the test made. Every reply must
 * pass unchanged with TC_ACT_UNSPEC.
 */
#include <string.h>
#include <netinet/in.h>
#include "dp/hot_map.h"
#include "kp.h"
#include "groups.h"

#define HOT_KEY     "hotkey01"
#define REPLY_RC    0xffffffffu /* TC_ACT_UNSPEC: passed on, untouched */
#define SERVER_SEQ  70000u      /* the server's stream in these tests */
#define CLIENT_PORT 40000

static struct ks_hot_map hm;

/* kp_begin with the hot table on and, unless off, replies remembered. */
static void reply_begin(const char *name, int on)
{
	struct ks_config c;
	int err;

	kp_begin(name);
	c = kp.cfg;
	c.hot = 1;
	c.flags = on ? KS_CFG_REPLIES : 0;
	kp_config(&c);
	err = ks_hot_map_open(
		&hm, kp_map_fd("ks_hot"), kp_map_fd("ks_hot_filter"),
		kp_map_fd("ks_hot_stats"), kp_map_fd("ks_replicas"),
		kp_map_fd("ks_replica_stats"));
	if (err)
		kt_failf(__FILE__, __LINE__, "mmap ks_hot: %s", strerror(-err));
	ks_hot_map_use_replies(&hm, kp_map_fd("ks_hot_replies"));
}

static void reply_end(void)
{
	ks_hot_map_close(&hm);
	kp_end();
}

static int hot_add(const char *key)
{
	int idx = ks_hot_map_alloc(&hm, kp_hash(key, strlen(key)),
				   (const __u8 *)key, strlen(key));

	if (idx < 0)
		kt_failf(__FILE__, __LINE__, "alloc slot: %s", strerror(-idx));
	return idx < 0 ? 0 : idx;
}

static struct ks_hot_replies replies(int idx)
{
	struct ks_hot_replies r;

	if (ks_hot_map_replies(&hm, idx, &r))
		kt_failf(__FILE__, __LINE__, "read ks_hot_replies");
	return r;
}

#define CHECK_REPLIES(idx, h, m, u, b)                                         \
	do {                                                                   \
		struct ks_hot_replies r_ = replies(idx);                       \
		CHECK_EQ(r_.hits, (h));                                        \
		CHECK_EQ(r_.misses, (m));                                      \
		CHECK_EQ(r_.unpaired, (u));                                    \
		CHECK_EQ(r_.malformed, (b));                                   \
	} while (0)

/* A reply through ks_tc_egress: passed with TC_ACT_UNSPEC, unchanged. */
static void send_reply(const struct pkt *p)
{
	__u8 out[PKT_MAX];
	__u32 rc = 0, out_len = sizeof(out);
	int err = kp_run(kp.tc_egress_fd, p->b, p->len, &rc, out, &out_len);

	if (err) {
		kt_failf(__FILE__, __LINE__, "egress run: %s", strerror(-err));
		return;
	}
	CHECK_EQ(rc, REPLY_RC);
	CHECK(out_len == p->len && !memcmp(out, p->b, p->len),
	      "egress changed the reply");
}

/* A UDP get of key from CLIENT_PORT with request id id, through ks_ingress
 * (the slot is not armed: it stays with the owner). */
static void udp_get(const char *key, __u16 id)
{
	char pay[300];
	struct pkt_opts o;
	struct pkt p;
	int n = snprintf(pay, sizeof(pay), "get %s\r\n", key);

	pkt_opts_default(&o, 0, IPPROTO_UDP);
	o.sport = CLIENT_PORT;
	o.mc.req_id = id;
	o.mc.total = 1;
	kp_build(&p, &o, pay, n);
	kp_send_mc(&p);
	kp_x_req(KS_OP_GET, n, key, NULL);
}

/* The server's UDP reply to request id (its first datagram unless seq). */
static void udp_reply(__u16 id, __u16 seq, __u16 total, const void *pay,
		      size_t len)
{
	struct pkt_opts o;
	struct pkt p;

	pkt_opts_default(&o, 0, IPPROTO_UDP);
	/* server to client: the defaults turned round */
	memcpy(o.saddr, (const __u8[]){ 198, 18, 0, 2 }, 4);
	memcpy(o.daddr, (const __u8[]){ 198, 18, 0, 1 }, 4);
	o.sport = 11211;
	o.dport = CLIENT_PORT;
	o.mc.req_id = id;
	o.mc.seq = seq;
	o.mc.total = total;
	kp_build(&p, &o, pay, len);
	send_reply(&p);
}

#define HIT_TEXT  "VALUE " HOT_KEY " 0 1\r\nx\r\nEND\r\n"
#define MISS_TEXT "END\r\n"

static void test_udp_pairs(void)
{
	int idx;

	reply_begin("reply_udp_hit_miss_paired_by_request_id", 1);
	idx = hot_add(HOT_KEY);
	udp_get(HOT_KEY, 7);
	udp_reply(7, 0, 1, HIT_TEXT, strlen(HIT_TEXT));
	udp_get(HOT_KEY, 8);
	udp_reply(8, 0, 1, MISS_TEXT, 5);
	CHECK_REPLIES(idx, 1, 1, 0, 0);
	/* two outstanding, answered in the other order: the ids decide */
	udp_get(HOT_KEY, 9);
	udp_get(HOT_KEY, 10);
	udp_reply(10, 0, 1, MISS_TEXT, 5);
	udp_reply(9, 0, 1, HIT_TEXT, strlen(HIT_TEXT));
	CHECK_REPLIES(idx, 2, 2, 0, 0);
	/* meta: "VA" and "HD" hits, "EN" a miss */
	udp_get(HOT_KEY, 11);
	udp_reply(11, 0, 1, "VA 1\r\nx\r\n", 9);
	udp_get(HOT_KEY, 12);
	udp_reply(12, 0, 1, "HD\r\n", 4);
	udp_get(HOT_KEY, 13);
	udp_reply(13, 0, 1, "EN\r\n", 4);
	CHECK_REPLIES(idx, 4, 3, 0, 0);
	kp_x_pkt(KS_PKT_HOT_READ, 7);
	reply_end();
}

static void test_udp_unknown_id(void)
{
	int idx;

	reply_begin("reply_udp_unseen_request_id_not_counted", 1);
	idx = hot_add(HOT_KEY);
	/* never asked */
	udp_reply(99, 0, 1, MISS_TEXT, 5);
	CHECK_REPLIES(idx, 0, 0, 0, 0);
	/* asked once, answered twice: the second is nobody's */
	udp_get(HOT_KEY, 21);
	udp_reply(21, 0, 1, MISS_TEXT, 5);
	udp_reply(21, 0, 1, MISS_TEXT, 5);
	/* a later datagram of a reply is not its start */
	udp_get(HOT_KEY, 22);
	udp_reply(22, 1, 2, MISS_TEXT, 5);
	CHECK_REPLIES(idx, 0, 1, 0, 0);
	udp_reply(22, 0, 2, HIT_TEXT, strlen(HIT_TEXT));
	CHECK_REPLIES(idx, 1, 1, 0, 0);
	kp_x_pkt(KS_PKT_HOT_READ, 2);
	reply_end();
}

/* Control: with KS_CFG_REPLIES off, the same reads and replies count
 * nothing, so the counts above come from the remembered reads. */
static void test_off(void)
{
	int idx;

	reply_begin("reply_off_counts_nothing", 0);
	idx = hot_add(HOT_KEY);
	udp_get(HOT_KEY, 7);
	udp_reply(7, 0, 1, MISS_TEXT, 5);
	CHECK_REPLIES(idx, 0, 0, 0, 0);
	kp_x_pkt(KS_PKT_HOT_READ, 1);
	reply_end();
}

/* A request of flow f at offset off, the client having received the
 * server's stream up to srv (its ack). */
static void tcp_req(struct kp_flow *f, __u32 off, const char *pay, __u32 srv)
{
	f->o.tcp_ack = srv;
	kp_flow_send(f, off, pay, strlen(pay), PKT_TCP_PSH | PKT_TCP_ACK);
}

/* The server's segment on f: at sequence seq, acking the client's stream
 * up to offset cl. */
static void tcp_reply(const struct kp_flow *f, __u32 seq, __u32 cl,
		      const char *pay, size_t len)
{
	struct pkt_opts o = f->o;
	struct pkt p;

	memcpy(o.saddr, f->o.daddr, 16);
	memcpy(o.daddr, f->o.saddr, 16);
	o.sport = f->o.dport;
	o.dport = f->o.sport;
	o.tcp_seq = seq;
	o.tcp_ack = f->isn + 1 + cl;
	o.tcp_flags = PKT_TCP_PSH | PKT_TCP_ACK;
	kp_build(&p, &o, pay, len);
	send_reply(&p);
}

#define GET_HOT "get " HOT_KEY "\r\n" /* 14 bytes */

static void test_tcp_single(void)
{
	__u32 srv = SERVER_SEQ;
	struct kp_flow f;
	int idx;

	reply_begin("reply_tcp_single_outstanding_paired", 1);
	idx = hot_add(HOT_KEY);
	kp_flow_new(&f, 0);
	kp_flow_syn(&f);
	tcp_req(&f, 0, GET_HOT, srv);
	/* a segment sent before the read arrived (its ack short of it) is
	 * not the read's reply */
	tcp_reply(&f, srv - 5, 0, MISS_TEXT, 5);
	tcp_reply(&f, srv, 14, MISS_TEXT, 5);
	srv += 5;
	tcp_req(&f, 14, GET_HOT, srv);
	tcp_reply(&f, srv, 28, HIT_TEXT, strlen(HIT_TEXT));
	srv += strlen(HIT_TEXT);
	/* mg over TCP, then gets */
	tcp_req(&f, 28, "mg " HOT_KEY " v\r\n", srv);
	tcp_reply(&f, srv, 28 + 15, "EN\r\n", 4);
	srv += 4;
	tcp_req(&f, 43, "gets " HOT_KEY "\r\n", srv);
	tcp_reply(&f, srv, 43 + 15, MISS_TEXT, 5);
	CHECK_REPLIES(idx, 1, 3, 0, 0);
	kp_x_req(KS_OP_GET, 14, HOT_KEY, NULL);
	kp_x_req(KS_OP_GET, 14, HOT_KEY, NULL);
	kp_x_req(KS_OP_MG, 15, HOT_KEY, NULL);
	kp_x_req(KS_OP_GETS, 15, HOT_KEY, NULL);
	kp_x_pkt(KS_PKT_HOT_READ, 4);
	reply_end();
}

static void test_tcp_pipelined(void)
{
	__u32 srv = SERVER_SEQ;
	struct kp_flow f;
	int idx;

	reply_begin("reply_tcp_pipelined_flow_unpaired", 1);
	idx = hot_add(HOT_KEY);
	kp_flow_new(&f, 0);
	kp_flow_syn(&f);
	/* another request before the reply: its ack runs past the read */
	tcp_req(&f, 0, GET_HOT, srv);
	tcp_req(&f, 14, "get other\r\n", srv);
	tcp_reply(&f, srv, 25, MISS_TEXT, 5);
	tcp_reply(&f, srv + 5, 25, MISS_TEXT, 5);
	srv += 10;
	CHECK_REPLIES(idx, 0, 0, 1, 0);
	/* two hot reads before either reply: both unpaired */
	tcp_req(&f, 25, GET_HOT, srv);
	tcp_req(&f, 39, GET_HOT, srv);
	tcp_reply(&f, srv, 53, MISS_TEXT, 5);
	tcp_reply(&f, srv + 5, 53, MISS_TEXT, 5);
	srv += 10;
	CHECK_REPLIES(idx, 0, 0, 3, 0);
	/* an earlier reply still on its way to the client (the read's ack
	 * short of the server's stream): out of step, unpaired */
	tcp_req(&f, 53, "get other\r\n", srv);
	tcp_req(&f, 64, GET_HOT, srv);
	tcp_reply(&f, srv, 64, MISS_TEXT, 5);
	tcp_reply(&f, srv + 5, 78, MISS_TEXT, 5);
	srv += 10;
	CHECK_REPLIES(idx, 0, 0, 4, 0);
	/* idle again: paired again */
	tcp_req(&f, 78, GET_HOT, srv);
	tcp_reply(&f, srv, 92, MISS_TEXT, 5);
	CHECK_REPLIES(idx, 0, 1, 4, 0);
	kp_x_req(KS_OP_GET, 14, HOT_KEY, NULL);
	kp_x_req(KS_OP_GET, 11, "other", NULL);
	kp_x_req(KS_OP_GET, 14, HOT_KEY, NULL);
	kp_x_req(KS_OP_GET, 14, HOT_KEY, NULL);
	kp_x_req(KS_OP_GET, 11, "other", NULL);
	kp_x_req(KS_OP_GET, 14, HOT_KEY, NULL);
	kp_x_req(KS_OP_GET, 14, HOT_KEY, NULL);
	kp_x_pkt(KS_PKT_HOT_READ, 5);
	reply_end();
}

/* Multi-key gets and several requests in one packet are not remembered:
 * their replies cannot be cut apart from the first bytes. */
static void test_not_single(void)
{
	struct pkt_opts o;
	struct pkt p;
	int idx;

	reply_begin("reply_multi_key_and_multi_request_not_counted", 1);
	idx = hot_add(HOT_KEY);
	pkt_opts_default(&o, 0, IPPROTO_UDP);
	o.sport = CLIENT_PORT;
	o.mc.req_id = 31;
	o.mc.total = 1;
	kp_build(&p, &o, "get " HOT_KEY " other\r\n", 20);
	kp_send_mc(&p);
	kp_x_req(KS_OP_GET, 20, HOT_KEY, "other", NULL);
	udp_reply(31, 0, 1, MISS_TEXT, 5);
	o.mc.req_id = 32;
	kp_build(&p, &o, "get " HOT_KEY "\r\nget x\r\n", 21);
	kp_send_mc(&p);
	kp_x_req(KS_OP_GET, 14, HOT_KEY, NULL);
	kp_x_req(KS_OP_GET, 7, "x", NULL);
	udp_reply(32, 0, 1, MISS_TEXT, 5);
	CHECK_REPLIES(idx, 0, 0, 0, 0);
	kp_x_pkt(KS_PKT_HOT_READ, 2);
	reply_end();
}

/* A key of HOT_KEY's bucket that is not HOT_KEY. */
static void bucket_twin(char *buf, size_t len)
{
	unsigned int i;

	for (i = 0;; i++) {
		kp_make_key(buf, len, 9000 + i);
		if (ks_hot_bucket(kp_hash(buf, len)) ==
			    ks_hot_bucket(kp_hash(HOT_KEY, 8)) &&
		    strcmp(buf, HOT_KEY))
			return;
	}
}

static void test_collision(void)
{
	char twin[12];
	int idx, idx2;

	reply_begin("reply_hot_bucket_twin_not_counted_as_the_hot_key", 1);
	idx = hot_add(HOT_KEY);
	bucket_twin(twin, sizeof(twin));
	udp_get(twin, 41);
	udp_reply(41, 0, 1, MISS_TEXT, 5);
	CHECK_REPLIES(idx, 0, 0, 0, 0);
	/* the slot given to another key between a read and its reply: the
	 * new key does not take the old one's reply */
	udp_get(HOT_KEY, 42);
	ks_hot_map_release(&hm, idx);
	ks_hot_map_clear(&hm, idx);
	idx2 = hot_add(twin);
	CHECK_EQ(idx2, idx);
	udp_reply(42, 0, 1, MISS_TEXT, 5);
	CHECK_REPLIES(idx, 0, 0, 0, 0);
	kp_x_pkt(KS_PKT_HOT_READ, 1);
	reply_end();
}

static void test_malformed(void)
{
	static const char *const bad[] = {
		"SERVER_ERROR out of memory\r\n",
		"VALUEX\r\n",
		"garbage!",
		"EN",
	};
	__u16 id = 51;
	size_t i;
	int idx;

	reply_begin("reply_malformed_passes_and_counted", 1);
	idx = hot_add(HOT_KEY);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++, id++) {
		udp_get(HOT_KEY, id);
		udp_reply(id, 0, 1, bad[i], strlen(bad[i]));
	}
	/* binary: status 0 a hit, 1 a miss, 0x81 anything else malformed */
	{
		__u8 bin[24] = { 0x81, 0x00 };

		udp_get(HOT_KEY, id);
		udp_reply(id++, 0, 1, bin, sizeof(bin));
		bin[7] = 1;
		udp_get(HOT_KEY, id);
		udp_reply(id++, 0, 1, bin, sizeof(bin));
		bin[7] = 0x81;
		udp_get(HOT_KEY, id);
		udp_reply(id++, 0, 1, bin, sizeof(bin));
	}
	CHECK_REPLIES(idx, 1, 1, 0, 5);
	kp_x_pkt(KS_PKT_HOT_READ, 7);
	reply_end();
}

void t_reply_group(void)
{
	test_udp_pairs();
	test_udp_unknown_id();
	test_off();
	test_tcp_single();
	test_tcp_pipelined();
	test_not_single();
	test_collision();
	test_malformed();
}
