// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_limit.c - per-key rate limits in the datapath (bpf/ks_limit.bpf.h):
 * a UDP get of a limited key under its limit passes untouched, over it is
 * answered with memcached's SERVER_ERROR line (checked byte by byte, with
 * valid checksums, IPv4, IPv6 and VLAN-tagged; the same bytes when the
 * frame grows at its head as at its tail) or dropped; a key sharing a
 * limited key's hash is not limited (and its control, matching on the
 * hash alone, is); requests of other shapes, TCP gets and malformed
 * datagrams pass untouched and are counted.
 *
 * Entries are written as the agent writes them (dp/limit_map.c): over
 * the limit is made certain by a theoretical arrival time far ahead,
 * under it by a rate whose bucket no test can empty, so no verdict here
 * depends on the time a loaded machine takes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include "ks_limit.h"
#include "kp.h"
#include "groups.h"

#define LIM_KEY   "runaway:1"
#define FAR_AHEAD (1000ULL * 1000000000ULL) /* 1000 s */

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void lim_clear(void)
{
	int fd = kp_map_fd("ks_limits");
	__u64 k;

	while (!bpf_map_get_next_key(fd, NULL, &k))
		if (bpf_map_delete_elem(fd, &k))
			break;
}

/*
 * Entry id for key (bytes), under table hash `hash` (0: the key's own).
 * over: the bucket is empty for the next 1000 s; else a rate no test
 * reaches.
 */
static void lim_put(const char *key, __u64 hash, __u32 id, int over)
{
	struct ks_limit_slot v = {};
	size_t len = strlen(key);
	__u32 rate = over ? 1 : KS_LIMIT_RATE_MAX;

	v.id = id;
	v.len = (__u16)len;
	memcpy(v.key, key, len);
	v.interval_ns = ks_limit_interval_ns(rate);
	v.tau_ns = ks_limit_tau_ns(rate);
	v.tat_ns = over ? mono_ns() + FAR_AHEAD : 0;
	if (!hash)
		hash = kp_hash(key, len);
	if (bpf_map_update_elem(kp_map_fd("ks_limits"), &hash, &v, 0))
		kt_failf(__FILE__, __LINE__, "ks_limits: %s", strerror(errno));
}

static struct ks_limit_stats lim_stats(__u32 id)
{
	struct ks_limit_stats row[512], sum = {};
	int c;

	if (kp.ncpu > 512 ||
	    bpf_map_lookup_elem(kp_map_fd("ks_limit_stats"), &id, row))
		kt_failf(__FILE__, __LINE__, "ks_limit_stats");
	for (c = 0; c < kp.ncpu && c < 512; c++) {
		sum.allowed += row[c].allowed;
		sum.refused += row[c].refused;
		sum.collided += row[c].collided;
		sum.tcp += row[c].tcp;
	}
	return sum;
}

static __u64 lim_pkt(int i)
{
	struct ks_limit_pkts row[512];
	__u32 zero = 0;
	__u64 sum = 0;
	int c;

	if (kp.ncpu > 512 ||
	    bpf_map_lookup_elem(kp_map_fd("ks_limit_pkts"), &zero, row))
		kt_failf(__FILE__, __LINE__, "ks_limit_pkts");
	for (c = 0; c < kp.ncpu && c < 512; c++)
		sum += row[c].n[i];
	return sum;
}

/* kp_begin with the limits on (flags: more ks_config flags); every test
 * checks its own counters, the op counts are the model's no more. */
static void lim_begin(const char *name, __u32 flags)
{
	struct ks_config c;

	kp_begin(name);
	lim_clear();
	c = kp.cfg;
	c.flags |= KS_CFG_LIMITS | flags;
	kp_config(&c);
	kp_x_inexact();
	kp_x_l4_dontcare();
	kp_x_pkt_dontcare(KS_PKT_SEEN);
}

static void lim_end(void)
{
	lim_clear();
	kp_end();
}

/* Runs p; the verdict, the output in out (its length in *olen). */
static __u32 lim_run(const struct pkt *p, __u8 *out, __u32 *olen)
{
	__u32 rc = 0;
	int err;

	*olen = PKT_MAX + 256;
	err = kp_run(kp.xdp_fd, p->b, p->len, &rc, out, olen);
	if (err)
		kt_failf(__FILE__, __LINE__, "test run: %s", strerror(-err));
	return rc;
}

static void udp_get(struct pkt *p, int v6, const char *cmd, const char *key,
		    __u16 id, int nvlan)
{
	struct pkt_opts o;
	char pay[320];
	int n = snprintf(pay, sizeof(pay), "%s %s\r\n", cmd, key);

	pkt_opts_default(&o, v6, IPPROTO_UDP);
	o.mc.req_id = id;
	o.mc.total = 1;
	o.nvlan = nvlan;
	if (nvlan >= 1)
		o.vlan[0] = (struct pkt_vlan){ .tpid = 0x88a8, .tci = 100 };
	if (nvlan >= 2)
		o.vlan[1] = (struct pkt_vlan){ .tpid = 0x8100, .tci = 7 };
	kp_build(p, &o, pay, (size_t)n);
}

/* Passes untouched. */
static void x_pass(const struct pkt *p)
{
	__u8 out[PKT_MAX + 256];
	__u32 olen;

	CHECK_EQ(lim_run(p, out, &olen), XDP_PASS);
	CHECK_EQ(olen, p->len);
	CHECK(olen == p->len && !memcmp(out, p->b, p->len),
	      "a passed packet must be unchanged");
}

static __u32 csum_add(__u32 sum, const __u8 *b, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += (__u32)b[i] << 8 | b[i + 1];
	if (n & 1)
		sum += (__u32)b[n - 1] << 8;
	return sum;
}

static __u16 csum_fold(__u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

/*
 * The reply to request p (refused): the request's frame with the ends
 * swapped and memcached's error line in place of the request, every
 * length and checksum right.
 */
static void x_reply(const struct pkt *p, const __u8 *out, __u32 olen)
{
	__u32 l3 = p->l3, l4 = p->l4, pay = l4 + 16;
	static const char line[] = KS_LIMIT_REPLY;
	__u32 sum;

	CHECK_EQ(olen, pay + KS_LIMIT_REPLY_LEN);
	if (olen != pay + KS_LIMIT_REPLY_LEN)
		return;
	/* MACs swapped, VLAN tags and ethertype as they came */
	CHECK(!memcmp(out, p->b + 6, 6) && !memcmp(out + 6, p->b, 6),
	      "MAC addresses swapped");
	CHECK(!memcmp(out + 12, p->b + 12, l3 - 12), "tags kept");
	if (!p->ipv6) {
		CHECK(!memcmp(out + l3 + 12, p->b + l3 + 16, 4) &&
			      !memcmp(out + l3 + 16, p->b + l3 + 12, 4),
		      "IPv4 addresses swapped");
		CHECK_EQ(out[l3 + 2] << 8 | out[l3 + 3],
			 20 + 16 + KS_LIMIT_REPLY_LEN);
		CHECK_EQ(csum_fold(csum_add(0, out + l3, 20)), 0xffff);
		CHECK_EQ(out[l4 + 6] << 8 | out[l4 + 7], 0); /* no checksum */
	} else {
		CHECK(!memcmp(out + l3 + 8, p->b + l3 + 24, 16) &&
			      !memcmp(out + l3 + 24, p->b + l3 + 8, 16),
		      "IPv6 addresses swapped");
		CHECK_EQ(out[l3 + 4] << 8 | out[l3 + 5],
			 16 + KS_LIMIT_REPLY_LEN);
		/* pseudo header + datagram sum to ~0 when the checksum is
		 * right */
		sum = csum_add(0, out + l3 + 8, 32);
		sum += 16 + KS_LIMIT_REPLY_LEN + IPPROTO_UDP;
		sum = csum_add(sum, out + l4, 16 + KS_LIMIT_REPLY_LEN);
		CHECK_EQ(csum_fold(sum), 0xffff);
		CHECK(out[l4 + 6] || out[l4 + 7], "IPv6 UDP checksum set");
	}
	CHECK(!memcmp(out + l4, p->b + l4 + 2, 2) &&
		      !memcmp(out + l4 + 2, p->b + l4, 2),
	      "UDP ports swapped");
	CHECK_EQ(out[l4 + 4] << 8 | out[l4 + 5], 16 + KS_LIMIT_REPLY_LEN);
	/* frame: the request's id, sequence 0, 1 datagram, reserved 0 */
	CHECK(!memcmp(out + l4 + 8, p->b + l4 + 8, 2), "request id kept");
	CHECK(!memcmp(out + l4 + 10, "\0\0\0\1\0\0", 6),
	      "sequence 0 of 1 datagram");
	CHECK(!memcmp(out + pay, line, KS_LIMIT_REPLY_LEN),
	      "memcached's SERVER_ERROR line");
}

static void test_off(void)
{
	struct pkt p;

	struct ks_config c;

	lim_begin("limit_flag_off_not_checked", 0);
	c = kp.cfg;
	c.flags &= ~(__u32)KS_CFG_LIMITS;
	kp_config(&c);
	kp_x_inexact();
	lim_put(LIM_KEY, 0, 0, 1);
	udp_get(&p, 0, "get", LIM_KEY, 7, 0);
	x_pass(&p);
	CHECK_EQ(lim_pkt(KS_LIM_CHECKED), 0);
	CHECK_EQ(lim_stats(0).refused, 0);
	lim_end();
}

static void test_under(void)
{
	struct pkt p;
	int i;

	lim_begin("limit_under_passes_untouched", 0);
	lim_put(LIM_KEY, 0, 3, 0);
	for (i = 0; i < 50; i++) {
		udp_get(&p, i & 1, i % 3 ? "get" : "gets", LIM_KEY,
			(__u16)(100 + i), 0);
		x_pass(&p);
	}
	CHECK_EQ(lim_stats(3).allowed, 50);
	CHECK_EQ(lim_stats(3).refused, 0);
	CHECK_EQ(lim_pkt(KS_LIM_CHECKED), 50);
	lim_end();
}

static void test_over(int v6, int nvlan, const char *cmd, const char *name)
{
	__u8 out[PKT_MAX + 256];
	struct ks_op_stats before, after;
	struct pkt p;
	__u32 olen;
	int i;

	lim_begin(name, 0);
	lim_put(LIM_KEY, 0, 5, 1);
	for (i = 0; i < 20; i++) {
		before = kp_op(KS_OP_GET);
		udp_get(&p, v6, cmd, LIM_KEY, (__u16)(0xbe00 + i), nvlan);
		CHECK_EQ(lim_run(&p, out, &olen), XDP_TX);
		x_reply(&p, out, olen);
		after = kp_op(KS_OP_GET);
		/* a refused get still counts in the key's load */
		if (!strcmp(cmd, "get"))
			CHECK_EQ(after.requests - before.requests, 1);
	}
	CHECK_EQ(lim_stats(5).refused, 20);
	CHECK_EQ(lim_stats(5).allowed, 0);
	CHECK_EQ(lim_pkt(KS_LIM_REPLIED), 20);
	lim_end();
}

/* ks_config.flags: the limits on, with flags. */
static void lim_flags(__u32 flags)
{
	struct ks_config c = kp.cfg;

	c.flags = (c.flags &
		   ~(__u32)(KS_CFG_LIMIT_GROW_HEAD | KS_CFG_LIMIT_GROW_TAIL)) |
		  KS_CFG_LIMITS | flags;
	kp_config(&c);
	kp_x_inexact();
}

/*
 * A short key's request is shorter than its reply: the frame grows. At
 * the tail, as a test run's frame (which always has tailroom) lets it;
 * at the head (KS_CFG_LIMIT_GROW_HEAD, the way veth's frames without
 * tailroom take): the same bytes, checksums valid, counted grown at the
 * head. A request longer than its reply shrinks at the tail whatever the
 * flag says.
 */
static void test_grow_head(int v6, int nvlan, const char *name)
{
	static const char key[] = "run:1";
	char longkey[41];
	__u8 tail[PKT_MAX + 256], head[PKT_MAX + 256];
	__u32 tlen, hlen;
	struct pkt p;

	lim_begin(name, 0);
	lim_put(key, 0, 9, 1);
	udp_get(&p, v6, "get", key, 0x6a01, nvlan);
	CHECK_EQ(lim_run(&p, tail, &tlen), XDP_TX);
	x_reply(&p, tail, tlen);
	CHECK_EQ(lim_pkt(KS_LIM_GREW_HEAD), 0);
	lim_flags(KS_CFG_LIMIT_GROW_HEAD);
	CHECK_EQ(lim_run(&p, head, &hlen), XDP_TX);
	x_reply(&p, head, hlen);
	CHECK_EQ(hlen, tlen);
	CHECK(hlen == tlen && !memcmp(head, tail, tlen),
	      "the head's reply is the tail's, byte for byte");
	CHECK_EQ(lim_pkt(KS_LIM_GREW_HEAD), 1);
	CHECK_EQ(lim_pkt(KS_LIM_REPLIED), 2);
	CHECK_EQ(lim_pkt(KS_LIM_NO_REPLY), 0);

	/* 40 bytes of key: the request is longer than the reply */
	memset(longkey, 'q', 40);
	longkey[40] = '\0';
	lim_put(longkey, 0, 10, 1);
	udp_get(&p, v6, "get", longkey, 0x6a02, nvlan);
	CHECK_EQ(lim_run(&p, head, &hlen), XDP_TX);
	x_reply(&p, head, hlen);
	CHECK_EQ(lim_pkt(KS_LIM_GREW_HEAD), 1);
	CHECK_EQ(lim_stats(9).refused, 2);
	CHECK_EQ(lim_stats(10).refused, 1);
	lim_end();
}

static void test_drop(void)
{
	__u8 out[PKT_MAX + 256];
	struct pkt p;
	__u32 olen;

	lim_begin("limit_over_dropped_with_drop_flag", KS_CFG_LIMIT_DROP);
	lim_put(LIM_KEY, 0, 1, 1);
	udp_get(&p, 0, "get", LIM_KEY, 9, 0);
	CHECK_EQ(lim_run(&p, out, &olen), XDP_DROP);
	CHECK_EQ(lim_stats(1).refused, 1);
	CHECK_EQ(lim_pkt(KS_LIM_DROPPED), 1);
	CHECK_EQ(lim_pkt(KS_LIM_REPLIED), 0);
	lim_end();
}

/* A bucket of burst 1 at 1/s: the first get passes, the next is refused
 * (the second comes far less than a second later on any machine that
 * runs this test at all; the bound is the property). */
static void test_bucket(void)
{
	__u8 out[PKT_MAX + 256];
	struct ks_limit_slot v = {};
	__u64 h = kp_hash(LIM_KEY, strlen(LIM_KEY));
	struct pkt p;
	__u32 olen;
	__u64 t0;

	lim_begin("limit_bucket_first_passes_next_refused", 0);
	v.id = 2;
	v.len = (__u16)strlen(LIM_KEY);
	memcpy(v.key, LIM_KEY, v.len);
	v.interval_ns = ks_limit_interval_ns(1);
	v.tau_ns = ks_limit_tau_ns(1);
	bpf_map_update_elem(kp_map_fd("ks_limits"), &h, &v, 0);
	t0 = mono_ns();
	udp_get(&p, 0, "get", LIM_KEY, 1, 0);
	x_pass(&p);
	udp_get(&p, 0, "get", LIM_KEY, 2, 0);
	if (mono_ns() - t0 < 900000000ULL)
		CHECK_EQ(lim_run(&p, out, &olen), XDP_TX);
	CHECK_EQ(lim_stats(2).allowed, 1);
	lim_end();
}

/*
 * A key whose table hash equals a limited key's is not limited: the entry
 * sits under the other key's hash with the limited key's bytes, as a
 * real 64-bit collision would put it. Control: matching on the hash
 * alone (KS_CFG_LIMIT_HASH_ONLY) refuses the innocent key.
 */
static void test_collision(int hash_only)
{
	const char *other = "innocent:7";
	__u8 out[PKT_MAX + 256];
	struct pkt p;
	__u32 olen, rc;

	lim_begin(hash_only ? "limit_collision_control_hash_only_refuses"
			    : "limit_collision_other_key_not_limited",
		  hash_only ? KS_CFG_LIMIT_HASH_ONLY : 0);
	lim_put(LIM_KEY, kp_hash(other, strlen(other)), 4, 1);
	udp_get(&p, 0, "get", other, 77, 0);
	rc = lim_run(&p, out, &olen);
	if (!hash_only) {
		CHECK_EQ(rc, XDP_PASS);
		CHECK(olen == p.len && !memcmp(out, p.b, p.len),
		      "the other key's get passes unchanged");
		CHECK_EQ(lim_stats(4).collided, 1);
		CHECK_EQ(lim_stats(4).refused, 0);
	} else {
		/* the violation the byte compare prevents */
		CHECK_EQ(rc, XDP_TX);
		CHECK_EQ(lim_stats(4).refused, 1);
	}
	/* a key of the same bytes but another length: its own hash, passed */
	udp_get(&p, 0, "get", LIM_KEY "0", 78, 0);
	x_pass(&p);
	lim_end();
}

/* Not a lone get: passed, counted as another shape; TCP counted only. */
static void test_shapes(void)
{
	/* looked up as one key of their bytes, never found */
	static const char *const looked[] = {
		"get " LIM_KEY " other\r\n", /* two keys */
		"get " LIM_KEY " \r\n",      /* trailing space */
		"get run\001away\r\n",       /* a control byte */
	};
	static const char *const pays[] = {
		"mg " LIM_KEY " v\r\n", /* meta get */
		"get " LIM_KEY "\n",    /* no \r */
		"get \r\n",             /* no key */
		"get " LIM_KEY,         /* no line end */
		"delete " LIM_KEY "\r\n",
	};
	struct pkt_opts o;
	struct pkt p;
	char big[300];
	size_t i;

	lim_begin("limit_other_shapes_pass_counted", 0);
	lim_put(LIM_KEY, 0, 6, 1);
	for (i = 0; i < sizeof(pays) / sizeof(pays[0]); i++) {
		kp_udp4(&p, pays[i], strlen(pays[i]));
		x_pass(&p);
	}
	/* a 251-byte key: longer than memcached takes */
	memset(big, 'k', sizeof(big));
	memcpy(big, "get ", 4);
	memcpy(big + 4 + 251, "\r\n", 2);
	kp_udp4(&p, big, 4 + 251 + 2);
	x_pass(&p);
	CHECK_EQ(lim_pkt(KS_LIM_OTHER), sizeof(pays) / sizeof(pays[0]) + 1);
	for (i = 0; i < sizeof(looked) / sizeof(looked[0]); i++) {
		kp_udp4(&p, looked[i], strlen(looked[i]));
		x_pass(&p);
	}
	CHECK_EQ(lim_pkt(KS_LIM_CHECKED), sizeof(looked) / sizeof(looked[0]));
	CHECK_EQ(lim_stats(6).refused, 0);

	/* over TCP: inside a stream, counted and never refused */
	pkt_opts_default(&o, 0, IPPROTO_TCP);
	kp_build(&p, &o, "get " LIM_KEY "\r\n", strlen(LIM_KEY) + 6);
	x_pass(&p);
	CHECK_EQ(lim_stats(6).tcp, 1);
	CHECK_EQ(lim_stats(6).refused, 0);
	lim_end();
}

/* Malformed datagrams pass untouched, whatever the limits. */
static void test_malformed(void)
{
	char pay[64];
	struct pkt p;
	int n = snprintf(pay, sizeof(pay), "get %s\r\n", LIM_KEY);

	lim_begin("limit_malformed_pass_untouched", 0);
	lim_put(LIM_KEY, 0, 8, 1);
	/* a UDP length that lies beyond the frame */
	kp_udp4(&p, pay, (size_t)n);
	pkt_set_udp_len(&p, (__u16)(8 + 8 + n + 40));
	x_pass(&p);
	/* cut inside the key, lengths left as they were */
	kp_udp4(&p, pay, (size_t)n);
	pkt_cut(&p, p.len - 5);
	x_pass(&p);
	/* cut inside the key, lengths made to agree: no line end */
	kp_udp4(&p, pay, (size_t)n);
	pkt_cut_fixed(&p, p.len - 5);
	x_pass(&p);
	/* the frame header alone */
	kp_udp4(&p, "", 0);
	x_pass(&p);
	/* IPv4 options: the request is refused, the reply not built */
	{
		struct pkt_opts o;
		__u8 out[PKT_MAX + 256];
		__u32 olen;

		pkt_opts_default(&o, 0, IPPROTO_UDP);
		o.ip4_opt_words = 1;
		kp_build(&p, &o, pay, (size_t)n);
		CHECK_EQ(lim_run(&p, out, &olen), XDP_DROP);
		CHECK_EQ(lim_pkt(KS_LIM_NO_REPLY), 1);
	}
	CHECK_EQ(lim_stats(8).refused, 1);
	CHECK_EQ(lim_stats(8).allowed, 0);
	lim_end();
}

void t_limit_group(void)
{
	test_off();
	test_under();
	test_over(0, 0, "get", "limit_over_replied_ipv4");
	test_over(1, 0, "get", "limit_over_replied_ipv6");
	test_over(0, 2, "gets", "limit_over_replied_gets_two_vlan_tags");
	test_over(1, 1, "get", "limit_over_replied_ipv6_vlan");
	test_grow_head(0, 0, "limit_grow_head_same_reply_ipv4");
	test_grow_head(1, 0, "limit_grow_head_same_reply_ipv6");
	test_grow_head(0, 2, "limit_grow_head_same_reply_two_vlan_tags");
	test_grow_head(1, 1, "limit_grow_head_same_reply_ipv6_vlan");
	test_drop();
	test_bucket();
	test_collision(0);
	test_collision(1);
	test_shapes();
	test_malformed();
}
