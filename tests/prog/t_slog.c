// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_slog.c - the sample log (issue 27; bpf/ks_sample.bpf.h, ks_slog_put):
 * while KS_CFG_SLOG is set, a sampled read or write of up to KS_SLOG_KEY
 * bytes becomes one record of this CPU's log (hash, length, class, the
 * epoch's low 16 bits, the rate, the key's words zero past its length)
 * instead of a sketch and candidate update; a longer key, or any key while
 * the log is full, takes the in-kernel sketch, and the full log is
 * counted. The model (kp.c, model_sample) expects exactly that and
 * compares the log, the sketch, the candidates and the counters at every
 * kp_end(); the checks here say the same things once more, per key.
 *
 * The "no sample lost, none counted twice" checks have a control:
 * tests/prog/slog_control.sh builds the datapath with the full log's
 * fallback broken (the key dropped, or sketched as well as logged) and
 * sees these tests fail (docs/benchmarks.md, the sample log); and with the
 * express path's sampled lone get broken (its record, its counters, its
 * fallbacks; the slog_express_* tests below).
 */
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include "kp.h"
#include "groups.h"
#include "tr.h"

static char buf[PKT_MAX];

enum via {
	VIA_UDP,
	VIA_TCP,
	VIA_UDP_TC,
	VIA_TCP_TC
};

static void send_via(enum via v, const char *pay, size_t n)
{
	struct pkt p;

	if (v == VIA_UDP || v == VIA_UDP_TC)
		kp_udp4(&p, pay, n);
	else
		kp_tcp4(&p, pay, n);
	if (v == VIA_UDP_TC || v == VIA_TCP_TC)
		kp_send_tc(&p);
	else
		kp_send_mc(&p);
}

/* Is key the record at head `at`, every byte past it zero? */
static bool rec_is(__u64 at, const char *key, size_t len, __u8 cls)
{
	static const __u8 zeros[KS_SLOG_KEY];
	struct ks_slog_rec r;

	if (kp_slog_read(at, &r))
		return false;
	return r.len == len && r.cls == cls && r.pad == 0 &&
	       r.hash == kp_hash(key, len) && !memcmp(r.key, key, len) &&
	       !memcmp((__u8 *)r.key + len, zeros, KS_SLOG_KEY - len);
}

static __u64 slog_head(void)
{
	struct ks_slog_pos v;
	__u32 cpu = (__u32)kp.cpu;

	if (bpf_map_lookup_elem(kp_map_fd("ks_slog_pos"), &cpu, &v))
		return ~0ULL;
	return v.head;
}

/*
 * Lone gets of every key length 1..KS_SLOG_KEY + 4, each after a longer
 * key (250 or 48 bytes, or one byte longer), so a record whose words an
 * earlier key's bytes reach shows: lengths 4..32 take the fast path's
 * ks_fast_take, the rest the general path's ks_key_take.
 */
static void t_lone_gets(void)
{
	static const char *const name[] = {
		"slog_lone_get_every_length_udp",
		"slog_lone_get_every_length_tcp",
		"slog_lone_get_every_length_udp_tc",
		"slog_lone_get_every_length_tcp_tc",
	};
	int v;

	for (v = 0; v < 4; v++) {
		unsigned int len, logged = 0, sketched = 0;
		__u64 at = 0;

		kp_begin(name[v]);
		kp_set_slog(1);
		for (len = 1; len <= KS_SLOG_KEY + 4; len++) {
			unsigned int pre = len % 3 == 0   ? 250
					   : len % 3 == 1 ? KS_SLOG_KEY
							  : len + 1;
			unsigned int step;

			for (step = 0; step < 2; step++) {
				char key[KS_MAX_KEY_LEN + 1];
				unsigned int kl = step ? len : pre;
				int n;

				kp_make_key(key, kl, 2000 + len * 4 + step);
				n = snprintf(buf, sizeof(buf), "get %s\r\n",
					     key);
				send_via((enum via)v, buf, (size_t)n);
				kp_x_req(KS_OP_GET, (size_t)n, key, NULL);
				if (kl > KS_SLOG_KEY) {
					sketched++;
					CHECK(kp_cms_query(0, KS_CLASS_READ,
							   key, kl) == 1,
					      "%u-byte key not in the sketch",
					      kl);
					continue;
				}
				logged++;
				CHECK(rec_is(at, key, kl, KS_CLASS_READ),
				      "%u-byte key (step %u) not record %llu, or bytes past it",
				      kl, step, (unsigned long long)at);
				CHECK(kp_cms_query(0, KS_CLASS_READ, key, kl) ==
					      0,
				      "%u-byte key logged and sketched", kl);
				at++;
			}
		}
		CHECK_EQ(slog_head(), at);
		CHECK_EQ(kp_pkt(KS_PKT_SLOG), logged);
		CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), logged + sketched);
		CHECK_EQ(kp_pkt(KS_PKT_SLOG_FULL), 0);
		kp_end();
	}
}

/* A multi-get with keys of 1, 48, 49, 8 and 250 bytes, traced: the log
 * takes the 48-byte and shorter keys in order, the sketch the others,
 * and every key is traced as before. */
static void t_multi_get(void)
{
	static const unsigned int lens[] = { 1, KS_SLOG_KEY, KS_SLOG_KEY + 1,
					     8, 250,         KS_SLOG_KEY };
	char keys[6][KS_MAX_KEY_LEN + 1];
	int v;

	for (v = 0; v < 2; v++) {
		size_t n = 3;
		unsigned int i;
		__u64 at = 0;

		kp_begin(v ? "slog_multi_get_udp_traced"
			   : "slog_multi_get_tcp_traced");
		kp_set_slog(1);
		kp_set_trace(1);
		memcpy(buf, "get", 3);
		for (i = 0; i < 6; i++) {
			kp_make_key(keys[i], lens[i], 3000 + i);
			n += (size_t)sprintf(buf + n, " %s", keys[i]);
		}
		memcpy(buf + n, "\r\n", 2);
		n += 2;
		send_via(v ? VIA_UDP : VIA_TCP, buf, n);
		kp_x_req(KS_OP_GET, n, NULL);
		for (i = 0; i < 6; i++) {
			kp_x_keyn(KS_OP_GET, keys[i], lens[i]);
			if (lens[i] > KS_SLOG_KEY) {
				CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, keys[i],
						      lens[i]),
					 1);
				continue;
			}
			CHECK(rec_is(at, keys[i], lens[i], KS_CLASS_READ),
			      "key %u (%u bytes) not record %llu", i, lens[i],
			      (unsigned long long)at);
			at++;
		}
		CHECK_EQ(kp_pkt(KS_PKT_SLOG), 4);
		CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 6);
		kp_end();
	}
}

/* Sets and deletes are writes: their records carry KS_CLASS_WRITE; the
 * epoch's low 16 bits ride along. */
static void t_write_class(void)
{
	int v;

	for (v = 0; v < 2; v++) {
		static const char set[] = "set wkey 0 0 5\r\nhello\r\n";
		static const char del[] = "delete dkey\r\n";
		struct ks_slog_rec r;

		kp_begin(v ? "slog_set_write_class_udp"
			   : "slog_set_write_class_tcp");
		kp_set_seq(0x12345); /* epoch 1, seq 0x2345 in the record */
		kp_set_slog(1);
		send_via(v ? VIA_UDP : VIA_TCP, set, strlen(set));
		kp_x_req(KS_OP_SET, strlen(set), "wkey", NULL);
		send_via(v ? VIA_UDP : VIA_TCP, del, strlen(del));
		kp_x_req(KS_OP_DELETE, strlen(del), "dkey", NULL);
		CHECK(rec_is(0, "wkey", 4, KS_CLASS_WRITE),
		      "the set's key not a write record");
		CHECK(!kp_slog_read(0, &r) && r.seq == 0x2345 && r.n == 1,
		      "record seq %u n %u, want 0x2345 1", r.seq, r.n);
		CHECK(rec_is(1, "dkey", 4, KS_CLASS_WRITE),
		      "the delete's key not a write record");
		CHECK_EQ(slog_head(), 2);
		CHECK_EQ(kp_cms_query(1, KS_CLASS_WRITE, "wkey", 4), 0);
		kp_end();
	}
}

/* At 1 in 3 the records carry n = 3, and exactly the sampled keys are
 * in the log (the model does not follow sample_n > 1: checked here). */
static void t_rate(void)
{
	char keys[9][9];
	size_t n = 3;
	unsigned int i, found = 0;
	__u64 at;

	kp_begin("slog_records_carry_the_rate");
	kp_set_sample(3);
	kp_set_slog(1);
	memcpy(buf, "get", 3);
	for (i = 0; i < 9; i++) {
		kp_make_key(keys[i], 8, 4000 + i);
		n += (size_t)sprintf(buf + n, " %s", keys[i]);
	}
	memcpy(buf + n, "\r\n", 2);
	n += 2;
	send_via(VIA_TCP, buf, n);
	kp_x_req(KS_OP_GET, n, NULL);
	for (i = 0; i < 9; i++)
		kp_x_keyn(KS_OP_GET, keys[i], 8);
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 3);
	CHECK_EQ(kp_pkt(KS_PKT_SLOG), 3);
	CHECK_EQ(slog_head(), 3);
	for (at = 0; at < 3; at++) {
		struct ks_slog_rec r;

		CHECK(!kp_slog_read(at, &r) && r.n == 3,
		      "record %llu: n %u, want 3", (unsigned long long)at, r.n);
		for (i = 0; i < 9; i++)
			found += rec_is(at, keys[i], 8, KS_CLASS_READ);
	}
	CHECK_EQ(found, 3);
	for (i = 0; i < 9; i++)
		CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, keys[i], 8), 0);
	kp_end();
}

/* The flag off: the same traffic leaves the log untouched and the sketch
 * takes every key (every other test checks the log stays empty too). */
static void t_off(void)
{
	static const char *const pays[] = {
		"get offkey1\r\n",
		"get ok2 ok3\r\n",
		"set offset 0 0 1\r\nx\r\n",
		"get a\r\n",
	};
	int i;

	kp_begin("slog_flag_off_nothing_logged");
	for (i = 0; i < 4; i++) {
		send_via(i % 2 ? VIA_TCP : VIA_UDP, pays[i], strlen(pays[i]));
		kp_x_req(i == 2 ? KS_OP_SET : KS_OP_GET, strlen(pays[i]), NULL);
	}
	kp_x_keyn(KS_OP_GET, "offkey1", 7);
	kp_x_keyn(KS_OP_GET, "ok2", 3);
	kp_x_keyn(KS_OP_GET, "ok3", 3);
	kp_x_keyn(KS_OP_SET, "offset", 6);
	kp_x_keyn(KS_OP_GET, "a", 1);
	CHECK_EQ(kp_pkt(KS_PKT_SLOG), 0);
	CHECK_EQ(slog_head(), 0);
	CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, "offkey1", 7), 1);
	kp_end();
}

/*
 * A log with `room` records free (head - tail == KS_SLOG_RECS - room),
 * head at head0: 12 keys sent (lone UDP and TCP gets, a multi-get, a
 * set), the first `room` logged, the rest sketched and counted full.
 * Every key is in the log or in the sketch, never both: records plus
 * in-kernel samples == KS_PKT_SAMPLED.
 */
static void full_case(const char *name, __u64 head0, unsigned int room)
{
	char keys[12][24];
	unsigned int i, logged = 0, sketched = 0, both = 0, lost = 0;
	__u64 at;

	kp_begin(name);
	kp_set_slog(1);
	kp_slog_pos(head0, head0 - (KS_SLOG_RECS - room));
	for (i = 0; i < 12; i++)
		kp_make_key(keys[i], 8 + i, 5000 + i);
	for (i = 0; i < 4; i++) { /* lone gets: fast path */
		int n = snprintf(buf, sizeof(buf), "get %s\r\n", keys[i]);

		send_via(i % 2 ? VIA_TCP : VIA_UDP, buf, (size_t)n);
		kp_x_req(KS_OP_GET, (size_t)n, keys[i], NULL);
	}
	{ /* a multi-get of six: the general path */
		int n = snprintf(buf, sizeof(buf), "get %s %s %s %s %s %s\r\n",
				 keys[4], keys[5], keys[6], keys[7], keys[8],
				 keys[9]);

		send_via(VIA_TCP, buf, (size_t)n);
		kp_x_req(KS_OP_GET, (size_t)n, keys[4], keys[5], keys[6],
			 keys[7], keys[8], keys[9], NULL);
	}
	for (i = 10; i < 12; i++) { /* sets */
		int n = snprintf(buf, sizeof(buf), "set %s 0 0 1\r\nv\r\n",
				 keys[i]);

		send_via(VIA_UDP, buf, (size_t)n);
		kp_x_req(KS_OP_SET, (size_t)n, keys[i], NULL);
	}
	for (i = 0; i < 12; i++) {
		__u8 cls = i < 10 ? KS_CLASS_READ : KS_CLASS_WRITE;
		unsigned int in_log = 0, in_sketch;

		for (at = head0; at < head0 + room && at < head0 + 12; at++)
			in_log += rec_is(at, keys[i], 8 + i, cls);
		in_sketch = kp_cms_query(0, cls, keys[i], 8 + i);
		logged += in_log;
		sketched += in_sketch;
		both += in_log && in_sketch;
		lost += !in_log && !in_sketch;
		CHECK(in_log + in_sketch == 1,
		      "key %u: %u records, sketch %u; want one of them", i,
		      in_log, in_sketch);
		CHECK_EQ(in_log, i < room);
	}
	CHECK_EQ(both, 0);
	CHECK_EQ(lost, 0);
	CHECK_EQ(logged + sketched, kp_pkt(KS_PKT_SAMPLED));
	CHECK_EQ(kp_pkt(KS_PKT_SLOG), logged);
	CHECK_EQ(kp_pkt(KS_PKT_SLOG_FULL), sketched);
	CHECK_EQ(slog_head(), head0 + (room < 12 ? room : 12));
	kp_end();
}

static void t_full(void)
{
	full_case("slog_full_log_falls_back_to_the_sketch", 5000, 0);
	/* 5 records fit (slots 4093..4095, then 0 and 1: the wrap), then
	 * the log is full and the sketch takes the other 7 */
	full_case("slog_filling_log_wraps_then_falls_back", 4093, 5);
	full_case("slog_roomy_log_takes_every_key", 1ULL << 40, 64);
}

/*
 * The express path's sampled lone get (issue 27; bpf/ks_fast_sample.bpf.h,
 * ks_express_sample): with the log on, a lone get due for sampling in a
 * plain IPv4 UDP datagram or the next in-order segment of a TCP flow is
 * logged before the general path writes anything. White box, as
 * t_fastpath.c's express tests: the express path writes none of the
 * scratch's per-packet fields, so ks_scratch.seg_limit keeps what the
 * general path's last packet left there (a 40-byte key's get, 46 bytes,
 * itself logged by the general path). Every length 4..32, each after that
 * longer key, so a record that kept an earlier key's bytes shows; the
 * model checks every record (hash, length, class, epoch, rate, key words)
 * and every counter at kp_end(), exactly as the general path leaves them.
 */
static void ex_send(enum via v, struct kp_flow *f, __u32 *off, const char *pay,
		    size_t n, const char *key)
{
	if (v == VIA_TCP || v == VIA_TCP_TC) {
		kp_flow_send(f, *off, pay, n, PKT_TCP_PSH | PKT_TCP_ACK);
		*off += (__u32)n;
	} else {
		send_via(v, pay, n);
	}
	kp_x_req(KS_OP_GET, n, key, NULL);
}

/*
 * The express tests' start: the flow opened when v is a TCP one, and in
 * lb the get of a 40-byte key (k40, from seed), longer than the fast
 * path's, which the general path takes. Returns the get's length.
 */
static size_t ex_open(enum via v, struct kp_flow *f, char *k40, char *lb,
		      size_t lbsz, unsigned seed)
{
	if (v == VIA_TCP || v == VIA_TCP_TC) {
		kp_flow_new(f, 0);
		f->tc = v == VIA_TCP_TC;
		kp_flow_syn(f);
	}
	kp_make_key(k40, 40, seed);
	return (size_t)snprintf(lb, lbsz, "get %s\r\n", k40);
}

static void t_express(void)
{
	static const char *const name[] = {
		"slog_express_udp_lone_gets_logged",
		"slog_express_tcp_lone_gets_logged",
		"slog_express_udp_tc_lone_gets_logged",
		"slog_express_tcp_tc_lone_gets_logged",
	};
	int v;

	for (v = 0; v < 4; v++) {
		bool tcp = v == VIA_TCP || v == VIA_TCP_TC;
		char k40[48], key[40], lb[64];
		unsigned int len, express = 0;
		struct kp_flow f;
		size_t n40, n;
		__u32 off = 0;
		__u64 at = 0;

		kp_begin(name[v]);
		kp_set_seq(0x3000b); /* the record's seq: 0x000b */
		kp_set_slog(1);
		n40 = ex_open((enum via)v, &f, k40, lb, sizeof(lb), 6000);
		for (len = 4; len <= 32; len++) {
			/* the general path's: a key longer than the fast
			 * path's (and it loads the rate the first time) */
			ex_send((enum via)v, &f, &off, lb, n40, k40);
			CHECK_EQ(kp_scratch_u32("seg_limit"), n40);
			CHECK(rec_is(at, k40, 40, KS_CLASS_READ),
			      "the 40-byte key not record %llu",
			      (unsigned long long)at);
			at++;
			kp_make_key(key, len, 6100 + len);
			{
				char buf2[64];

				n = (size_t)snprintf(buf2, sizeof(buf2),
						     "get %s\r\n", key);
				ex_send((enum via)v, &f, &off, buf2, n, key);
			}
			express += kp_scratch_u32("seg_limit") == n40;
			CHECK(kp_scratch_u32("seg_limit") == n40,
			      "the %u-byte key's get not the express path's",
			      len);
			CHECK(rec_is(at, key, len, KS_CLASS_READ),
			      "%u-byte key not record %llu, or bytes past it",
			      len, (unsigned long long)at);
			at++;
		}
		CHECK_EQ(express, 29);
		CHECK_EQ(slog_head(), at);
		CHECK_EQ(kp_pkt(KS_PKT_SLOG), at);
		CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), at);
		CHECK_EQ(kp_pkt(KS_PKT_FAST_GET), 29);
		if (tcp)
			kp_flow_fin(&f, off);
		kp_end();
	}
}

/*
 * The express path's countdown with the log on: 30 lone gets of one key
 * at 1 in 3 (UDP and TCP, XDP and tc), the 10 due ones logged with n = 3
 * (the model does not follow sample_n > 1: checked here), none sketched,
 * none twice; the due ones took the express path (seg_limit as the
 * first, general-path packet left it).
 */
static void t_express_rate(void)
{
	static const char key[] = "abcdefghijklmnop";
	static const char pay[] = "get abcdefghijklmnop\r\n";
	char k40[48], lb[64];
	int v, i;

	for (v = 0; v < 4; v++) {
		static const char *const name[] = {
			"slog_express_udp_countdown_1_in_3",
			"slog_express_tcp_countdown_1_in_3",
			"slog_express_udp_tc_countdown_1_in_3",
			"slog_express_tcp_tc_countdown_1_in_3",
		};
		bool tcp = v == VIA_TCP || v == VIA_TCP_TC;
		struct kp_flow f;
		__u32 off = 0;
		size_t n40;
		__u64 at;

		kp_begin(name[v]);
		kp_set_sample(3);
		kp_set_slog(1);
		n40 = ex_open((enum via)v, &f, k40, lb, sizeof(lb), 6200);
		/* the general path's, loading the rate: countdown 3 -> 2 */
		ex_send((enum via)v, &f, &off, lb, n40, k40);
		for (i = 0; i < 30; i++) {
			ex_send((enum via)v, &f, &off, pay, strlen(pay), key);
			CHECK(kp_scratch_u32("seg_limit") == n40,
			      "get %d not the express path's", i);
		}
		/* keys 2, 5, ... 29 of the 31 sent: the 40-byte key is not */
		CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 10);
		CHECK_EQ(kp_pkt(KS_PKT_SLOG), 10);
		CHECK_EQ(kp_pkt(KS_PKT_FAST_GET), 30);
		CHECK_EQ(slog_head(), 10);
		for (at = 0; at < 10; at++) {
			struct ks_slog_rec r;

			CHECK(rec_is(at, key, 16, KS_CLASS_READ),
			      "record %llu not the key",
			      (unsigned long long)at);
			CHECK(!kp_slog_read(at, &r) && r.n == 3 && r.seq == 0,
			      "record %llu: n %u seq %u, want 3 0",
			      (unsigned long long)at, r.n, r.seq);
		}
		CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, key, 16), 0);
		if (tcp)
			kp_flow_fin(&f, off);
		kp_end();
	}
}

/*
 * The express path's sampled lone get with a ring loaded (issue 27;
 * ks_express_sample -> ks_ring_place): logged and counted for its shard
 * on the express path whoever owns it; a key this host owns, a
 * misdirected one (its client, which the express path reads from the
 * headers, kept in ks_misdirect as the general path keeps it), any key
 * on a client host (self KS_NO_SHARD), on ketama and on pymemcache's
 * rendezvous ring. Every length 4..32, each after the general path's
 * 40-byte key, the keys picked by their owner under user space's
 * ks_ring_lookup(); per key, the path that took it (seg_limit, as in
 * t_express), its record and its shard's count; at the end the totals,
 * and kp's model compares ks_shards, ring_hit, misdirected and every
 * misdirect slot (address, port, protocol, owner, hash) with what the
 * general path leaves.
 */
enum ex_ring_kind {
	EXR_OWNED,       /* keys this host owns */
	EXR_MISDIRECTED, /* keys another shard owns: their client kept */
	EXR_CLIENT_HOST, /* self KS_NO_SHARD: any key, none misdirected */
	EXR_RDV_OWNED,   /* pymemcache's rendezvous ring, owned keys */
	EXR_KINDS
};

static void t_express_ring_case(enum via v, enum ex_ring_kind kind)
{
	static const char *const kname[EXR_KINDS] = { "owned_keys",
						      "misdirected_keys",
						      "client_host_keys",
						      "rdv_owned_keys" };
	static const char *const vname[] = { "udp", "tcp", "udp_tc", "tcp_tc" };
	struct tr_shape sh = { .dist = kind == EXR_RDV_OWNED
					       ? KS_DIST_PYMEMCACHE
					       : KS_DIST_KETAMA,
			       .n = 4,
			       .self = kind == EXR_CLIENT_HOST ? KS_NO_SHARD
							       : 1 };
	bool tcp = v == VIA_TCP || v == VIA_TCP_TC;
	struct ks_shard_stats st[4], want[4];
	char name[96], k40[48], lb[64], key[40], buf2[64];
	unsigned int len, express = 0, general = 0, seed = 7000;
	__u64 at = 0, misdirected = 0;
	struct tr_ring t;
	struct kp_flow f;
	__u32 off = 0, o, i;
	size_t n40, n;

	snprintf(name, sizeof(name), "slog_express_ring_%s_%s", kname[kind],
		 vname[v]);
	kp_begin(name);
	if (tr_ring_build(&t, &sh)) {
		kp_end();
		return;
	}
	kp_ring_load(&t.ring);
	memset(want, 0, sizeof(want));
	kp_set_slog(1);
	n40 = ex_open((enum via)v, &f, k40, lb, sizeof(lb), 6500);
	for (len = 4; len <= 32; len++) {
		/* the general path's: a key longer than the fast path's */
		ex_send(v, &f, &off, lb, n40, k40);
		CHECK_EQ(kp_scratch_u32("seg_limit"), n40);
		CHECK(rec_is(at, k40, 40, KS_CLASS_READ),
		      "the 40-byte key not record %llu",
		      (unsigned long long)at);
		at++;
		o = ks_ring_lookup(&t.ring, k40, 40);
		if (o < 4) {
			want[o].reads++;
			misdirected += sh.self != KS_NO_SHARD && o != sh.self;
		}
		/* a key of this length the kind wants */
		for (;;) {
			kp_make_key(key, len, seed++);
			o = ks_ring_lookup(&t.ring, key, len);
			if (o >= 4)
				continue;
			if (kind == EXR_CLIENT_HOST ||
			    (o == sh.self) == (kind != EXR_MISDIRECTED))
				break;
		}
		want[o].reads++;
		misdirected += kind == EXR_MISDIRECTED;
		n = (size_t)snprintf(buf2, sizeof(buf2), "get %s\r\n", key);
		ex_send(v, &f, &off, buf2, n, key);
		if (kp_scratch_u32("seg_limit") == n40)
			express++;
		else if (kp_scratch_u32("seg_limit") == n)
			general++;
		CHECK(kp_scratch_u32("seg_limit") == n40,
		      "the %u-byte key (shard %u) not the express path's", len,
		      o);
		CHECK(rec_is(at, key, len, KS_CLASS_READ),
		      "%u-byte key not record %llu, or bytes past it", len,
		      (unsigned long long)at);
		at++;
		CHECK_EQ(kp_shards_read(st, 4), 0);
		CHECK(st[o].reads == want[o].reads,
		      "the %u-byte key's shard %u: %llu reads, want %llu", len,
		      o, (unsigned long long)st[o].reads,
		      (unsigned long long)want[o].reads);
	}
	CHECK_EQ(express, 29);
	CHECK_EQ(general, 0);
	CHECK_EQ(slog_head(), at);
	CHECK_EQ(kp_pkt(KS_PKT_SLOG), at);
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), at);
	CHECK_EQ(kp_pkt(KS_PKT_RING_HIT), at);
	CHECK_EQ(kp_pkt(KS_PKT_MISDIRECTED), misdirected);
	CHECK_EQ(kp_pkt(KS_PKT_FAST_GET), 29);
	CHECK_EQ(kp_shards_read(st, 4), 0);
	for (i = 0; i < 4; i++)
		CHECK(st[i].reads == want[i].reads && !st[i].writes,
		      "shard %u: %llu reads %llu writes, want %llu reads", i,
		      (unsigned long long)st[i].reads,
		      (unsigned long long)st[i].writes,
		      (unsigned long long)want[i].reads);
	if (tcp)
		kp_flow_fin(&f, off);
	kp_end();
	kp_ring_load(NULL);
	tr_ring_free(&t);
}

static void t_express_ring(void)
{
	int v, k;

	for (k = 0; k < EXR_KINDS; k++)
		for (v = 0; v < 4; v++)
			t_express_ring_case((enum via)v, (enum ex_ring_kind)k);
}

/*
 * What the express path leaves to the general path with the log on: a
 * traced key (its event wants the client's address and the scratch's
 * key) and a key while the log is full (sketched, counted full). Each due lone get changes seg_limit: the
 * general path took it; and the model finds the record, the event, the
 * shard's count and the sketch where the general path puts them.
 */
static void t_express_leaves(void)
{
	static const char *const name[] = {
		"slog_express_leaves_traced_keys_udp",
		"slog_express_leaves_traced_keys_tcp_tc",
		"slog_express_leaves_keys_of_a_full_log_udp",
		"slog_express_leaves_keys_of_a_full_log_tcp_tc",
	};
	int c;

	for (c = 0; c < 4; c++) {
		enum via v = c % 2 ? VIA_TCP_TC : VIA_UDP;
		bool full = c / 2 == 1;
		char k40[48], lb[64], key[24], buf2[48];
		struct kp_flow f;
		unsigned int i, general = 0;
		__u32 off = 0;
		size_t n40, n;

		kp_begin(name[c]);
		kp_set_slog(1);
		if (full)
			kp_slog_pos(9000, 9000 - KS_SLOG_RECS);
		else
			kp_set_trace(1);
		if (v == VIA_TCP_TC) {
			kp_flow_new(&f, 0);
			f.tc = 1;
			kp_flow_syn(&f);
		}
		kp_make_key(k40, 40, 6300);
		n40 = (size_t)snprintf(lb, sizeof(lb), "get %s\r\n", k40);
		for (i = 0; i < 8; i++) {
			ex_send(v, &f, &off, lb, n40, k40);
			kp_make_key(key, 9 + i, 6400 + i);
			n = (size_t)snprintf(buf2, sizeof(buf2), "get %s\r\n",
					     key);
			ex_send(v, &f, &off, buf2, n, key);
			general += kp_scratch_u32("seg_limit") == n;
			if (full)
				CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, key,
						      9 + i),
					 1);
		}
		CHECK_EQ(general, 8);
		CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 16);
		CHECK_EQ(kp_pkt(KS_PKT_SLOG), full ? 0 : 16);
		CHECK_EQ(kp_pkt(KS_PKT_SLOG_FULL), full ? 16 : 0);
		if (v == VIA_TCP_TC)
			kp_flow_fin(&f, off);
		kp_end();
	}
}

void t_slog_group(void)
{
	t_lone_gets();
	t_multi_get();
	t_write_class();
	t_rate();
	t_off();
	t_full();
	t_express();
	t_express_rate();
	t_express_ring();
	t_express_leaves();
}
