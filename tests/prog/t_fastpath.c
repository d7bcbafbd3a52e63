// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_fastpath.c - the lone-short-get fast path (bpf/ks_fastpath.bpf.h) must
 * count exactly what the general parser counts. The reference is the
 * general parser itself: a payload P followed by "mn\r\n" is never a lone
 * get, so it always takes the general path; whatever P alone counted must
 * equal what P+"mn\r\n" counted, less the mn request (or, when P is
 * malformed, parsing stops before the mn and the two must be equal).
 * Shapes cover every key length around the fast path's word boundaries and
 * a delimiter at every position of the key.
 */
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include "kp.h"
#include "groups.h"

/* KS_FAST_KEY of bpf/ks_fastpath.bpf.h (a BPF-only header) */
#define KS_FAST_KEY_BYTES 32

struct fp_counts {
	struct ks_op_stats ops[KS_OP_MAX];
	__u64 err[KS_ERR_MAX];
	__u64 sampled;
};

static void fp_read(struct fp_counts *c)
{
	int i;

	for (i = 0; i < KS_OP_MAX; i++)
		c->ops[i] = kp_op(i);
	for (i = 0; i < KS_ERR_MAX; i++)
		c->err[i] = kp_errc(i);
	c->sampled = kp_pkt(KS_PKT_SAMPLED);
}

/*
 * Runs payload through ks_ingress; c gets what this run counted (deltas:
 * resetting every map per run would dominate the test's time). With
 * sample_n 1 or 2^30 the sampling countdown is the same for every key, so
 * runs do not depend on each other.
 */
static int fp_udp; /* fp_run sends UDP datagrams, not TCP segments */

static void fp_run(const char *pay, size_t len, struct fp_counts *c)
{
	static __u8 out[PKT_MAX + 512];
	__u32 rc, olen = sizeof(out);
	struct fp_counts before;
	static struct pkt p, rst;
	int i;

	fp_read(&before);
	if (fp_udp)
		kp_udp4(&p, pay, len);
	else
		kp_tcp4(&p, pay, len);
	if (kp_run(kp.xdp_fd, p.b, p.len, &rc, out, &olen) || rc != 2 ||
	    olen != p.len || memcmp(out, p.b, p.len))
		kt_failf(__FILE__, __LINE__,
			 "run of '%.*s' failed or changed it", (int)len, pay);
	fp_read(c);
	for (i = 0; i < KS_OP_MAX; i++) {
		c->ops[i].requests -= before.ops[i].requests;
		c->ops[i].keys -= before.ops[i].keys;
		c->ops[i].bytes -= before.ops[i].bytes;
	}
	for (i = 0; i < KS_ERR_MAX; i++)
		c->err[i] -= before.err[i];
	c->sampled -= before.sampled;
	if (fp_udp)
		return;
	/* release the flow this lone segment may have opened (kp_send does
	 * the same), after the deltas: a later packet reusing its port and
	 * sequence is a flow of its own, not a retransmission */
	kp_rst_for(&rst, &p);
	olen = sizeof(out);
	kp_run(kp.xdp_fd, rst.b, rst.len, &rc, out, &olen);
}

/* Compare P alone with P + "mn\r\n"; returns the failures found. */
static int fp_compare(const char *pay, size_t len)
{
	struct fp_counts alone, ref;
	char buf[512];
	int i, bad = 0, errs = 0;

	memcpy(buf, pay, len);
	memcpy(buf + len, "mn\r\n", 4);
	fp_run(pay, len, &alone);
	fp_run(buf, len + 4, &ref);

	for (i = 0; i < KS_ERR_MAX; i++)
		errs += ref.err[i] != 0;
	/* memcached reads on after a line it refuses, and so does the
	 * general parser: a P whose line ends lets it reach the mn */
	if (ref.ops[KS_OP_MN].requests == alone.ops[KS_OP_MN].requests + 1) {
		ref.ops[KS_OP_MN].requests -= 1;
		ref.ops[KS_OP_MN].bytes -= 4;
	} else if (!errs) {
		bad++;
	}
	for (i = 0; i < KS_OP_MAX; i++)
		bad += memcmp(&alone.ops[i], &ref.ops[i], sizeof(ref.ops[i])) !=
		       0;
	for (i = 0; i < KS_ERR_MAX; i++)
		bad += alone.err[i] != ref.err[i];
	bad += alone.sampled != ref.sampled;
	if (bad)
		kt_failf(__FILE__, __LINE__,
			 "'%.*s': get %llu/%llu/%llu vs general %llu/%llu/%llu",
			 (int)len, pay,
			 (unsigned long long)alone.ops[KS_OP_GET].requests,
			 (unsigned long long)alone.ops[KS_OP_GET].keys,
			 (unsigned long long)alone.ops[KS_OP_GET].bytes,
			 (unsigned long long)ref.ops[KS_OP_GET].requests,
			 (unsigned long long)ref.ops[KS_OP_GET].keys,
			 (unsigned long long)ref.ops[KS_OP_GET].bytes);
	return bad;
}

static size_t fp_get(char *buf, const char *key, size_t klen, const char *eol)
{
	size_t n = 0;

	memcpy(buf, "get ", 4);
	n = 4;
	memcpy(buf + n, key, klen);
	n += klen;
	memcpy(buf + n, eol, strlen(eol));
	return n + strlen(eol);
}

/* Every key length 1..40 and a byte <= 0x20 (or 0x7f/0x80+) everywhere. */
static void fp_shapes(__u32 sample_n, const char *name)
{
	static const char inject[] = { ' ',  '\r', '\n',       '\t',      0,
				       0x21, 0x7f, (char)0x80, (char)0xc3 };
	char key[64], buf[128];
	size_t klen, pos, n, j;

	kp_begin(name);
	kp_set_sample(sample_n);
	for (klen = 1; klen <= 40; klen++) {
		kp_make_key(key, klen, (unsigned int)klen);
		n = fp_get(buf, key, klen, "\r\n");
		fp_compare(buf, n);
		n = fp_get(buf, key, klen, "\n");
		fp_compare(buf, n);
		n = fp_get(buf, key, klen, " \r\n");
		fp_compare(buf, n);
		for (pos = 0; pos < klen; pos++) {
			for (j = 0; j < sizeof(inject); j++) {
				char k2[64];

				memcpy(k2, key, klen);
				k2[pos] = inject[j];
				n = fp_get(buf, k2, klen, "\r\n");
				fp_compare(buf, n);
			}
		}
	}
	/* the command word itself */
	fp_compare("gets abcdefgh\r\n", 15);
	fp_compare("get  abcdefgh\r\n", 15);
	fp_compare("GET abcdefgh\r\n", 14);
	fp_compare("get abcdefgh\r\r\n", 15);
	kp_reset();
	kp_end();
}

/*
 * Sampling from the fast path: 1 in 3 of 30 lone gets of one key reach
 * the sketch, with the key's bytes and hash in the candidate slot.
 */
static void fp_sampling(void)
{
	struct ks_cand c;
	char key[40], buf[64];
	size_t n;
	int i;

	kp_begin("fastpath_samples_1_in_3_with_key_bytes");
	kp_set_sample(3);
	kp_make_key(key, 32, 77);
	n = fp_get(buf, key, 32, "\r\n");
	for (i = 0; i < 30; i++) {
		struct pkt p;

		kp_tcp4(&p, buf, n);
		kp_send_mc(&p);
		kp_x_req(KS_OP_GET, n, NULL);
		kp.x.ops[KS_OP_GET].keys += 1;
	}
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 10);
	CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, key, 32), 10);
	CHECK(kp_cand_find(key, 32, &c), "key not a candidate");
	CHECK_EQ(c.len, 32);
	CHECK(!memcmp(c.key, key, 32), "candidate key bytes differ");
	CHECK_EQ(c.hash, kp_hash(key, 32));
	kp_end();

	/* a shorter key after a longer one leaves no bytes of the first */
	kp_begin("fastpath_sample_zero_pads_after_longer_key");
	kp_set_sample(1);
	kp_make_key(key, 32, 78);
	n = fp_get(buf, key, 32, "\r\n");
	{
		struct pkt p;
		__u8 zeros[KS_KEY_BUF] = { 0 };

		kp_tcp4(&p, buf, n);
		kp_send_mc(&p);
		kp_x_req(KS_OP_GET, n, NULL);
		kp_x_keyn(KS_OP_GET, key, 32);
		n = fp_get(buf, "wxyz", 4, "\r\n");
		kp_tcp4(&p, buf, n);
		kp_send_mc(&p);
		kp_x_req(KS_OP_GET, n, "wxyz", NULL);
		CHECK(kp_cand_find("wxyz", 4, &c), "short key not a candidate");
		CHECK(!memcmp(c.key + 4, zeros, KS_KEY_BUF - 4),
		      "bytes past the short key are not zero");
	}
	kp_end();

	/* the same over UDP, where a sampled lone get takes the fast path
	 * (its key loaded from the packet, ks_fast_key), through XDP and
	 * through tc: a 32-byte key, then 4 bytes, then 12 */
	for (i = 0; i < 2; i++) {
		static const char *const name[2] = {
			"fastpath_udp_sample_zero_pads_after_longer_key",
			"fastpath_udp_tc_sample_zero_pads_after_longer_key",
		};
		static const char *const keys[3] = { NULL, "wxyz",
						     "abcdefghijkl" };
		__u8 zeros[KS_KEY_BUF] = { 0 };
		int k;

		kp_begin(name[i]);
		kp_set_sample(1);
		kp_make_key(key, 32, 79 + (unsigned int)i);
		for (k = 0; k < 3; k++) {
			const char *kk = keys[k] ? keys[k] : key;
			size_t kl = strlen(kk);
			struct pkt p;

			n = fp_get(buf, kk, kl, "\r\n");
			kp_udp4(&p, buf, n);
			if (i)
				kp_send_tc(&p);
			else
				kp_send_mc(&p);
			kp_x_req(KS_OP_GET, n, NULL);
			kp_x_keyn(KS_OP_GET, kk, kl);
			CHECK(kp_cand_find(kk, kl, &c),
			      "key %d not a candidate", k);
			CHECK_EQ(c.len, kl);
			CHECK(!memcmp(c.key, kk, kl), "key %d bytes differ", k);
			CHECK(!memcmp(c.key + kl, zeros, KS_KEY_BUF - kl),
			      "bytes past key %d are not zero", k);
		}
		CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 3);
		kp_end();
	}

	/*
	 * Every length the lone get's sampled key is read from the packet
	 * at (4..32 bytes, ks_fast_sample.bpf.h), after keys longer than 32
	 * bytes (the general way, 33 and 250 bytes: s->key zeroed by
	 * ks_key_clear) and after shorter and longer short keys (zeroed
	 * word by word): each key's bytes, zero past it, its hash (the slot
	 * is found by the user-space hash) and one count in the sketch.
	 */
	for (i = 0; i < 2; i++) {
		static const char *const name[2] = {
			"fastpath_udp_sample_every_length_from_the_packet",
			"fastpath_udp_tc_sample_every_length_from_the_packet",
		};
		__u8 zeros[KS_KEY_BUF] = { 0 };
		char lkey[KS_MAX_KEY_LEN + 1], lbuf[KS_MAX_KEY_LEN + 16];
		unsigned int len, sent = 0;

		kp_begin(name[i]);
		kp_set_sample(1);
		for (len = 4; len <= KS_FAST_KEY_BYTES; len++) {
			/* before each: a key past the fast path (33 or
			 * 250 bytes), one of 32 or one a byte shorter */
			unsigned int pre = len % 3 == 0   ? (len % 2 ? 250 : 33)
					   : len % 3 == 1 ? KS_FAST_KEY_BYTES
							  : len - 1;
			unsigned int kl, step;

			for (step = 0; step < 2; step++) {
				struct pkt p;

				kl = step ? len : pre;
				if (kl < 4)
					continue;
				/* the seed makes every key of the run new */
				kp_make_key(lkey, kl, 1000 + len * 4 + step);
				n = fp_get(lbuf, lkey, kl, "\r\n");
				kp_udp4(&p, lbuf, n);
				if (i)
					kp_send_tc(&p);
				else
					kp_send_mc(&p);
				kp_x_req(KS_OP_GET, n, NULL);
				kp_x_keyn(KS_OP_GET, lkey, kl);
				sent++;
				CHECK(kp_cand_find(lkey, kl, &c),
				      "%u-byte key not a candidate", kl);
				CHECK_EQ(c.len, kl);
				CHECK(!memcmp(c.key, lkey, kl),
				      "%u-byte key's bytes differ", kl);
				CHECK(!memcmp(c.key + kl, zeros,
					      KS_KEY_BUF - kl),
				      "bytes past the %u-byte key (step %u) are not zero",
				      kl, step);
				CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, lkey,
						      kl),
					 1);
			}
		}
		CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), sent);
		kp_end();
	}
}

static void fp_x_op(const char *what, struct ks_op_stats got, __u64 req,
		    __u64 keys, __u64 bytes)
{
	CHECK(got.requests == req && got.keys == keys && got.bytes == bytes,
	      "%s: %llu/%llu/%llu, want %llu/%llu/%llu", what,
	      (unsigned long long)got.requests, (unsigned long long)got.keys,
	      (unsigned long long)got.bytes, (unsigned long long)req,
	      (unsigned long long)keys, (unsigned long long)bytes);
}

/*
 * Where the fast path counts: a lone get it takes goes to ks_pkts
 * (FAST_GET, FAST_GET_BYTES) and not to ks_ops, and the folded totals
 * (kp_op, what the agent reports) have it once. UDP through XDP and tc,
 * TCP on a flow opened by its SYN (a lone segment resynchronises and goes
 * to the general parser). The control: a 40-byte key, past KS_FAST_KEY,
 * counted by the general parser in ks_ops.
 */
static void fp_where_counted(void)
{
	char buf[128], key[64];
	struct kp_flow f;
	struct pkt p;
	size_t n, n40;
	int i;

	kp_begin("fastpath_counts_in_ks_pkts_once_not_in_ks_ops");
	kp_set_sample(1U << 30);
	n = fp_get(buf, "abcdefghijklmnop", 16, "\r\n");
	for (i = 0; i < 2; i++) {
		kp_udp4(&p, buf, n);
		if (i)
			kp_send_tc(&p);
		else
			kp_send_mc(&p);
		kp_x_req(KS_OP_GET, n, "abcdefghijklmnop", NULL);
	}
	kp_flow_new(&f, 0);
	kp_flow_syn(&f);
	kp_flow_send(&f, 0, buf, n, PKT_TCP_PSH | PKT_TCP_ACK);
	kp_x_req(KS_OP_GET, n, "abcdefghijklmnop", NULL);
	kp_flow_new(&f, 0);
	f.tc = 1;
	kp_flow_syn(&f);
	kp_flow_send(&f, 0, buf, n, PKT_TCP_PSH | PKT_TCP_ACK);
	kp_x_req(KS_OP_GET, n, "abcdefghijklmnop", NULL);
	CHECK_EQ(kp_pkt(KS_PKT_FAST_GET), 4);
	CHECK_EQ(kp_pkt(KS_PKT_FAST_GET_BYTES), 4 * n);
	fp_x_op("ks_ops get after 4 fast gets", kp_op_raw(KS_OP_GET), 0, 0, 0);
	fp_x_op("folded get after 4 fast gets", kp_op(KS_OP_GET), 4, 4, 4 * n);

	/* not the fast path's: counted in ks_ops, ks_pkts' two unmoved */
	kp_make_key(key, 40, 40);
	n40 = fp_get(buf, key, 40, "\r\n");
	kp_udp4(&p, buf, n40);
	kp_send_mc(&p);
	kp_x_req(KS_OP_GET, n40, key, NULL);
	CHECK_EQ(kp_pkt(KS_PKT_FAST_GET), 4);
	CHECK_EQ(kp_pkt(KS_PKT_FAST_GET_BYTES), 4 * n);
	fp_x_op("ks_ops get after a 40-byte key", kp_op_raw(KS_OP_GET), 1, 1,
		n40);
	fp_x_op("folded get after a 40-byte key", kp_op(KS_OP_GET), 5, 5,
		4 * n + n40);
	kp_end();
}

/*
 * The express path (keysteer.bpf.c, ks_express_udp4): a lone get in a
 * plain IPv4/UDP datagram, not due for sampling, counted before the
 * general path writes anything. White box, as its control: it writes none
 * of the scratch's per-packet fields, so ks_scratch.seg_limit keeps the
 * payload length the general path's last packet left there (a 40-byte
 * key's, 46), and every packet that is not the express path's leaves its
 * own (22 for the 16-byte key). Then the countdown it shares with the
 * general path: 1 in 3 of 30 lone gets sampled, through XDP and tc.
 */
static void fp_express_send(const struct pkt *p, const char *key, int tc)
{
	if (tc)
		kp_send_tc(p);
	else
		kp_send_mc(p);
	kp_x_req(KS_OP_GET, p->plen, key, NULL);
}

static void fp_express(void)
{
	static const char key[] = "abcdefghijklmnop";
	char buf[128], k40[64];
	struct pkt_opts o;
	struct pkt p, p40;
	size_t n, n40;
	int tc, i, v;

	kp_begin("express_udp_takes_only_plain_lone_gets");
	kp_set_sample(1U << 30);
	kp_make_key(k40, 40, 41);
	k40[40] = '\0';
	n40 = fp_get(buf, k40, 40, "\r\n");
	kp_udp4(&p40, buf, n40);
	n = fp_get(buf, key, 16, "\r\n");
	for (tc = 0; tc < 2; tc++) {
		/* the first packet after a config write loads the rate: the
		 * general path's, as is a 40-byte key */
		fp_express_send(&p40, k40, tc);
		CHECK_EQ(kp_scratch_u32("seg_limit"), n40);
		kp_udp4(&p, buf, n);
		fp_express_send(&p, key, tc);
		CHECK_EQ(kp_scratch_u32("seg_limit"), n40);
		/* not plain: a VLAN tag, IP options, IPv6 */
		for (v = 0; v < 3; v++) {
			fp_express_send(&p40, k40, tc);
			pkt_opts_default(&o, v == 2, IPPROTO_UDP);
			if (v == 0) {
				o.nvlan = 1;
				o.vlan[0].tpid = 0x8100;
				o.vlan[0].tci = 100;
			} else if (v == 1) {
				o.ip4_opt_words = 1;
			}
			kp_build(&p, &o, buf, n);
			fp_express_send(&p, key, tc);
			CHECK(kp_scratch_u32("seg_limit") == n,
			      "shape %d (tc %d) took the express path", v, tc);
		}
	}
	/* a watched port in the second slot: still the express path's */
	kp_set_ports(2, 11212, 11211);
	fp_express_send(&p40, k40, 0);
	kp_udp4(&p, buf, n);
	fp_express_send(&p, key, 0);
	CHECK_EQ(kp_scratch_u32("seg_limit"), n40);
	/* every key due for sampling: the general path's */
	kp_set_sample(1);
	fp_express_send(&p, key, 0);
	CHECK_EQ(kp_scratch_u32("seg_limit"), n);
	CHECK_EQ(kp_pkt(KS_PKT_FAST_GET), 10);
	kp_end();

	for (tc = 0; tc < 2; tc++) {
		kp_begin(tc ? "express_udp_tc_countdown_1_in_3"
			    : "express_udp_countdown_1_in_3");
		kp_set_sample(3);
		kp_udp4(&p, buf, n);
		for (i = 0; i < 30; i++)
			fp_express_send(&p, key, tc);
		CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 10);
		CHECK_EQ(kp_pkt(KS_PKT_FAST_GET), 30);
		CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, key, 16), 10);
		kp_end();
	}
}

/*
 * The express path for TCP, white box as above: on a flow opened by its
 * SYN, an in-order lone get leaves ks_scratch.seg_limit as the general
 * path's last packet left it, and so does a 1448-byte segment inside a
 * set's value that goes on past it; a 100-byte one (under 512 bytes, the
 * general path's) and the segment that ends the value do not. The set
 * counts once, at its end, whichever path took its segments.
 */
static void fp_express_tcp(void)
{
	static const char key[] = "abcdefghijklmnop";
	static char val[1448];
	char buf[128], k40[64];
	struct kp_flow f;
	__u32 off = 0;
	size_t n, n40, hl;
	int tc;

	memset(val, 'v', sizeof(val));
	for (tc = 0; tc < 2; tc++) {
		kp_begin(tc ? "express_tcp_tc_takes_in_order_gets_and_blocks"
			    : "express_tcp_takes_in_order_gets_and_blocks");
		kp_set_sample(1U << 30);
		kp_make_key(k40, 40, 42);
		k40[40] = '\0';
		kp_flow_new(&f, 0);
		f.tc = tc;
		kp_flow_syn(&f);
		off = 0;
		n40 = fp_get(buf, k40, 40, "\r\n");
		kp_flow_send(&f, off, buf, n40, PKT_TCP_PSH | PKT_TCP_ACK);
		kp_x_req(KS_OP_GET, n40, k40, NULL);
		off += (__u32)n40;
		CHECK_EQ(kp_scratch_u32("seg_limit"), n40);
		n = fp_get(buf, key, 16, "\r\n");
		kp_flow_send(&f, off, buf, n, PKT_TCP_PSH | PKT_TCP_ACK);
		kp_x_req(KS_OP_GET, n, key, NULL);
		off += (__u32)n;
		CHECK_EQ(kp_scratch_u32("seg_limit"), n40);
		/* a set of 1448 + 1448 + 100 + 100 value bytes */
		hl = (size_t)snprintf(buf, sizeof(buf), "set %s 0 0 3096\r\n",
				      key);
		kp_flow_send(&f, off, buf, hl, PKT_TCP_PSH | PKT_TCP_ACK);
		off += (__u32)hl;
		CHECK_EQ(kp_scratch_u32("seg_limit"), hl);
		kp_flow_send(&f, off, val, 1448, PKT_TCP_ACK);
		off += 1448;
		CHECK_EQ(kp_scratch_u32("seg_limit"), hl);
		kp_flow_send(&f, off, val, 1448, PKT_TCP_ACK);
		off += 1448;
		CHECK_EQ(kp_scratch_u32("seg_limit"), hl);
		kp_flow_send(&f, off, val, 100, PKT_TCP_ACK);
		off += 100;
		CHECK_EQ(kp_scratch_u32("seg_limit"), 100);
		memcpy(buf, val, 100);
		memcpy(buf + 100, "\r\n", 2);
		kp_flow_send(&f, off, buf, 102, PKT_TCP_PSH | PKT_TCP_ACK);
		off += 102;
		CHECK_EQ(kp_scratch_u32("seg_limit"), 102);
		kp_x_req(KS_OP_SET, hl + 3096 + 2, key, NULL);
		CHECK_EQ(kp_pkt(KS_PKT_FLOW_CONT), 4);
		CHECK_EQ(kp_pkt(KS_PKT_FAST_GET), 1);
		kp_flow_fin(&f, off);
		kp_end();
	}
}

/*
 * The TCP express path's countdown: 30 in-order lone gets of one flow at
 * 1 in 3, through XDP and tc. The express path decides "due" before it
 * reads the get's line (issue 27: a sampled get pays no line check
 * twice), and leaves each due get to the general path: 10 sampled, all
 * 30 counted, none twice.
 */
static void fp_express_tcp_countdown(void)
{
	static const char key[] = "abcdefghijklmnop";
	struct kp_flow f;
	char buf[128];
	__u32 off;
	size_t n;
	int tc, i;

	for (tc = 0; tc < 2; tc++) {
		kp_begin(tc ? "express_tcp_tc_countdown_1_in_3"
			    : "express_tcp_countdown_1_in_3");
		kp_set_sample(3);
		kp_flow_new(&f, 0);
		f.tc = tc;
		kp_flow_syn(&f);
		off = 0;
		n = fp_get(buf, key, 16, "\r\n");
		for (i = 0; i < 30; i++) {
			kp_flow_send(&f, off, buf, n,
				     PKT_TCP_PSH | PKT_TCP_ACK);
			kp_x_req(KS_OP_GET, n, key, NULL);
			off += (__u32)n;
		}
		CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 10);
		CHECK_EQ(kp_pkt(KS_PKT_FAST_GET), 30);
		CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, key, 16), 10);
		kp_flow_fin(&f, off);
		kp_end();
	}
}

void t_fastpath_group(void)
{
	fp_where_counted();
	fp_express();
	fp_express_tcp();
	fp_express_tcp_countdown();
	fp_shapes(1U << 30, "fastpath_unsampled_matches_general_parser");
	/* the same shapes as lone datagrams: the express path's */
	fp_udp = 1;
	fp_shapes(1U << 30, "fastpath_udp_unsampled_matches_general_parser");
	fp_udp = 0;
	fp_shapes(1, "fastpath_sampled_matches_general_parser");
	fp_sampling();
}
