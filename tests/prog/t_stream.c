// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_stream.c - TCP streams followed across segments (issue 10): a flow is
 * opened by its SYN, requests, keys and data blocks cut by a segment
 * boundary continue in the next segment, retransmitted bytes are skipped,
 * a gap is counted and resynced, FIN and RST release the flow.
 *
 * Two kinds of tests:
 * - by hand: a few segments each, every count written out;
 * - sweeps: four multi-request streams (text sets with values, 64-key
 *   multi-gets, meta pipelines, binary getkq/setq ending with a noop; and
 *   one with values of several KiB) cut at every byte offset into two
 *   pieces and at a sample of offset pairs into three, sent in order,
 *   duplicated, overlapping, reordered and with a piece dropped. The
 *   oracle is the same stream sent unsegmented on a fresh flow in the same
 *   test (kp_stream_oracle, itself checked against the stream's own
 *   table); kp_stream_case() compares each run with it (exactly, or as
 *   bounds where bytes are missing) and the model checks sketch and
 *   candidates over the whole test.
 *
 * Every flow is a fresh 4-tuple (kp_flow_new): the flow table is never
 * cleared between tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include "kp.h"
#include "groups.h"

/* Binary opcodes (memcached protocol_binary.h). */
#define BIN_SETQ  0x11
#define BIN_GETK  0x0c
#define BIN_GETKQ 0x0d
#define BIN_NOOP  0x0a

/* Stop a sweep after this many runs that counted wrong (wrong flow
 * counters alone do not stop it); KP_STREAM_ALL=1 in the environment:
 * never stop. */
#define MAX_FAILS (getenv("KP_STREAM_ALL") ? 1 << 30 : 8)

static struct kp_stream st;
static struct kp_obs oracle;

static void set_flags(__u32 flags)
{
	struct ks_config c = kp.cfg;

	c.flags = flags;
	kp_config(&c);
}

/*
 * kp_begin with the flow counters pinned, and trace on for the sweeps.
 * ks_config.hot is 1 (an empty hot table): a datapath may disarm hot
 * keys on a gap only when there are some, and HOT_DISARM must move then.
 */
static void begin(const char *name, int trace)
{
	struct ks_config c;

	kp_begin(name);
	c = kp.cfg;
	c.hot = 1;
	c.trace = trace ? 1 : 0;
	kp_config(&c);
	kp_x_flow_exact();
	/* events are compared run by run (kp_stream_case) */
	if (trace)
		kp.x.check_events = false;
}

/* The model's flow counters bump by n (shorthand). */
static void x(int counter, long long n)
{
	kp_x_pkt(counter, n);
}

/* ------------------------------------------------------------------ */
/* streams                                                             */

/* Value bytes that look like no command from any offset: digits. */
static void digits(char *out, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = (char)('0' + (seed + i * 7) % 10);
}

/* "<cmd> <key> 0 0 <vlen><extra>\r\n<val>\r\n" */
static void text_set(struct kp_stream *s, int op, const char *cmd,
		     const char *key, const char *val, size_t vlen,
		     const char *extra)
{
	char line[400];

	snprintf(line, sizeof(line), "%s %s 0 0 %zu%s\r\n", cmd, key, vlen,
		 extra);
	kp_stream_text(s, op, line, 1, 1, val, vlen);
}

/* (a) pipelined text sets with values, gets between; one value holds
 * "\r\nget x\r\n", one is 1 KiB. About 1.5 KiB. */
static void stream_text_sets(struct kp_stream *s)
{
	static char v[4096];
	char key[32];
	int i;

	kp_stream_init(s);
	for (i = 0; i < 4; i++) {
		kp_make_key(key, 10, 100 + (unsigned int)i);
		digits(v, 5 + (size_t)i * 9, (unsigned int)i);
		text_set(s, KS_OP_SET, "set", key, v, 5 + (size_t)i * 9, "");
		snprintf(v, sizeof(v), "get %s\r\n", key);
		kp_stream_text(s, KS_OP_GET, v, 1, -1, NULL, 0);
	}
	kp_make_key(key, 10, 200);
	memcpy(v, "ab\r\nget x\r\ncd", 13);
	text_set(s, KS_OP_SET, "set", key, v, 13, "");
	kp_make_key(key, 10, 201);
	memcpy(v, "\r\nget x\r\n", 9);
	text_set(s, KS_OP_ADD, "add", key, v, 9, " noreply");
	kp_make_key(key, 10, 202);
	digits(v, 1024, 3);
	text_set(s, KS_OP_SET, "set", key, v, 1024, "");
	kp_make_key(key, 10, 203);
	digits(v, 7, 4);
	text_set(s, KS_OP_APPEND, "append", key, v, 7, "");
	kp_make_key(key, 10, 204);
	digits(v, 3, 5);
	text_set(s, KS_OP_CAS, "cas", key, v, 3, " 12345");
	kp_stream_text(s, KS_OP_GET, "get x\r\n", 1, -1, NULL, 0);
}

/* (a') values of several KiB: more than one segment even unsegmented
 * (the oracle sends it in KP_MSS segments). About 9.3 KiB. */
static void stream_text_big(struct kp_stream *s)
{
	static char v[8192];
	char key[32];

	kp_stream_init(s);
	kp_make_key(key, 16, 300);
	digits(v, 3000, 1);
	text_set(s, KS_OP_SET, "set", key, v, 3000, "");
	snprintf(v, sizeof(v), "get %s\r\n", key);
	kp_stream_text(s, KS_OP_GET, v, 1, -1, NULL, 0);
	kp_make_key(key, 16, 301);
	digits(v, 6000, 2);
	memcpy(v + 2500, "\r\nget x\r\n", 9);
	memcpy(v + 5990, "\r\nget x\r\n", 9);
	text_set(s, KS_OP_SET, "set", key, v, 6000, "");
	snprintf(v, sizeof(v), "mg %s v\r\n", key);
	kp_stream_text(s, KS_OP_MG, v, 1, 1, NULL, 0);
	kp_stream_text(s, KS_OP_MN, "mn\r\n", 1, 0, NULL, 0);
}

/* (b) 64-key multi-gets: get and gets of 64 12-byte keys each, a small
 * get after. About 1.7 KiB. */
static void stream_multiget(struct kp_stream *s)
{
	static char line[2048];
	char key[32];
	size_t n;
	int i, j;

	kp_stream_init(s);
	for (j = 0; j < 2; j++) {
		n = (size_t)sprintf(line, "%s", j ? "gets" : "get");
		for (i = 0; i < 64; i++) {
			kp_make_key(key, 12, 1000 + (unsigned int)(j * 64 + i));
			n += (size_t)sprintf(line + n, " %s", key);
		}
		sprintf(line + n, "\r\n");
		kp_stream_text(s, j ? KS_OP_GETS : KS_OP_GET, line, 1, -1, NULL,
			       0);
	}
	kp_stream_text(s, KS_OP_GET, "get tail1 tail2\r\n", 1, -1, NULL, 0);
}

/* (c) a meta pipeline: mg/ms/md/ma with flags, ms data holding a command,
 * a noop at the end. About 600 bytes. */
static void stream_meta(struct kp_stream *s)
{
	static char v[512];
	char key[32], line[128];
	int i;

	kp_stream_init(s);
	for (i = 0; i < 3; i++) {
		kp_make_key(key, 9, 400 + (unsigned int)i);
		snprintf(line, sizeof(line), "mg %s v t f c k\r\n", key);
		kp_stream_text(s, KS_OP_MG, line, 1, 1, NULL, 0);
		digits(v, 6 + (size_t)i * 40, (unsigned int)i);
		snprintf(line, sizeof(line), "ms %s %d T30 F5 c\r\n", key,
			 6 + i * 40);
		kp_stream_text(s, KS_OP_MS, line, 1, 1, v, 6 + (size_t)i * 40);
		snprintf(line, sizeof(line), "md %s q T30\r\n", key);
		kp_stream_text(s, KS_OP_MD, line, 1, 1, NULL, 0);
		snprintf(line, sizeof(line), "ma %s N30 J13 D5 v\r\n", key);
		kp_stream_text(s, KS_OP_MA, line, 1, 1, NULL, 0);
	}
	memcpy(v, "0\r\nmg x v\r\n1", 12);
	kp_stream_text(s, KS_OP_MS, "ms metadata 12 I\r\n", 1, 1, v, 12);
	kp_stream_text(s, KS_OP_MG, "mg metadata s v\r\n", 1, 1, NULL, 0);
	kp_stream_text(s, KS_OP_MN, "mn\r\n", 1, 0, NULL, 0);
}

/* (d) a binary pipeline: getkq x 24, setq x 4 with values, getk, noop.
 * About 1.6 KiB. */
static void stream_binary(struct kp_stream *s)
{
	static const __u8 ext[8] = { 0xde, 0xad, 0xbe, 0xef };
	static char v[256];
	char key[32];
	int i;

	kp_stream_init(s);
	for (i = 0; i < 24; i++) {
		kp_make_key(key, 12, 500 + (unsigned int)i);
		kp_stream_bin(s, KS_OP_GET, BIN_GETKQ, NULL, 0, key, 12, NULL,
			      0);
		if (i % 6 == 5) {
			kp_make_key(key, 12, 600 + (unsigned int)i);
			digits(v, 40 + (size_t)i * 3, (unsigned int)i);
			kp_stream_bin(s, KS_OP_SET, BIN_SETQ, ext, 8, key, 12,
				      v, 40 + (__u32)i * 3);
		}
	}
	kp_stream_bin(s, KS_OP_GET, BIN_GETK, NULL, 0, "lastkey", 7, NULL, 0);
	kp_stream_bin(s, KS_OP_OTHER, BIN_NOOP, NULL, 0, NULL, 0, NULL, 0);
}

/* A binary stream must hold 0x80 only where a request begins, or a guess
 * after a gap could find a header that is not one (kp_sim.phantom
 * covers that too, but these streams should not need it). */
static void check_binary_magic(const struct kp_stream *s)
{
	__u32 i;

	for (i = 0; i < s->len; i++)
		if (s->b[i] == 0x80 && !kp_stream_boundary(s, i))
			kt_failf(__FILE__, __LINE__,
				 "stream byte %u is 0x80 inside a request", i);
}

/* ------------------------------------------------------------------ */
/* sweeps                                                              */

struct sweep_stream {
	const char *name;
	void (*build)(struct kp_stream *s);
	__u32 mss;  /* segment size for pieces (0: one segment each) */
	__u32 step; /* 2-piece cuts: every step-th offset (1: every one) */
	int pairs;  /* 3-piece cut pairs sampled */
};

static const struct sweep_stream streams[] = {
	{ "text_sets", stream_text_sets, 0, 1, 160 },
	{ "multiget64", stream_multiget, 0, 1, 160 },
	{ "meta", stream_meta, 0, 1, 160 },
	{ "binary", stream_binary, 0, 1, 160 },
	{ "text_big_values", stream_text_big, KP_MSS, 1, 120 },
};

/* Flags of a run: SYN always; the stream ends with a FIN of its own, a
 * FIN on the last data segment or an RST, in turn; every 7th run goes
 * through the tc program. */
static unsigned run_flags(__u32 i, int order)
{
	unsigned f = KP_SEND_SYN;

	if (order == KP_INORDER || order == KP_OVERLAP)
		f |= i % 3 == 0   ? KP_SEND_FIN
		     : i % 3 == 1 ? KP_SEND_FIN_LAST
				  : KP_SEND_RST;
	else
		f |= i % 2 ? KP_SEND_RST : KP_SEND_FIN;
	if (i % 7 == 3)
		f |= KP_SEND_TC;
	return f;
}

/* Sets up a sweep test: the stream, trace, the oracle. False: skip it. */
static bool sweep_begin(const char *name, const struct sweep_stream *ss,
			int order)
{
	if (!kt_selected(name))
		return false;
	begin(name, 1);
	if (order > KP_OVERLAP)
		kp_x_inexact();
	ss->build(&st);
	if (ss->build == stream_binary)
		check_binary_magic(&st);
	if (!kp_stream_oracle(&st, 0, &oracle)) {
		kt_failf(__FILE__, __LINE__,
			 "oracle disagrees with the stream's table: no sweep");
		kp_end();
		return false;
	}
	return true;
}

/*
 * One line on stdout for the sweep ("# " lines are not results), and a
 * failure naming the first run of each kind that went wrong: the test line
 * keeps only its first few messages.
 */
static void sweep_end(const char *name, int fails)
{
	const struct kp_tally *t = &kp_tally;

	printf("# %s: %d runs, %d with wrong counts or keys, %d with wrong flow counters%s\n",
	       name, t->runs, t->bad_counts, t->bad_flow,
	       fails >= MAX_FAILS ? " (stopped)" : "");
	if (t->bad_counts)
		kt_failf(__FILE__, __LINE__,
			 "%d of %d runs counted wrong%s, first %s",
			 t->bad_counts, t->runs,
			 fails >= MAX_FAILS ? " (sweep stopped)" : "",
			 t->first_counts);
	if (t->bad_flow)
		kt_failf(__FILE__, __LINE__,
			 "%d of %d runs with wrong flow counters, first %s",
			 t->bad_flow, t->runs, t->first_flow);
	kp_end();
}

/* Every offset (or every step-th) as the one cut; IPv4 and IPv6 in turn
 * (both families at every offset in order). */
static void sweep2(const struct sweep_stream *ss, int order)
{
	static char name[96];
	int fails = 0;
	__u32 c;

	snprintf(name, sizeof(name), "stream_%s_2seg_%s", ss->name,
		 kp_order_name(order));
	if (!sweep_begin(name, ss, order))
		return;
	for (c = 1; c < st.len && fails < MAX_FAILS; c += ss->step) {
		int v6;

		for (v6 = 0; v6 < 2; v6++) {
			if (order != KP_INORDER && v6 != (int)(c & 1))
				continue;
			if (kp_stream_case(ss->name, &st, &oracle, v6, &c, 1,
					   order, ss->mss,
					   run_flags(c, order)) &
			    KP_CASE_COUNTS)
				fails++;
		}
	}
	sweep_end(name, fails);
}

static __u32 lcg(__u32 *x)
{
	*x = *x * 1103515245u + 12345u;
	return *x >> 8;
}

/* A sample of cut pairs: random ones, and ones whose second cut is a
 * request boundary (a resync there must parse) or whose pieces are one
 * byte long. */
static void sweep3(const struct sweep_stream *ss, int order)
{
	static char name[96];
	int fails = 0, k;
	__u32 seed = 0x5eed + (__u32)order;

	snprintf(name, sizeof(name), "stream_%s_3seg_%s", ss->name,
		 kp_order_name(order));
	if (!sweep_begin(name, ss, order))
		return;
	for (k = 0; k < ss->pairs && fails < MAX_FAILS; k++) {
		__u32 cuts[2], a, b;

		switch (k % 4) {
		case 0: /* second cut on a request boundary */
			b = st.req[1 + lcg(&seed) % (__u32)(st.nreq - 1)].start;
			a = 1 + lcg(&seed) % (b > 1 ? b - 1 : 1);
			break;
		case 1: /* a one-byte middle piece */
			a = 1 + lcg(&seed) % (st.len - 2);
			b = a + 1;
			break;
		default:
			a = 1 + lcg(&seed) % (st.len - 2);
			b = a + 1 + lcg(&seed) % (st.len - a - 1);
			break;
		}
		if (a >= b || b >= st.len)
			continue;
		cuts[0] = a;
		cuts[1] = b;
		if (kp_stream_case(ss->name, &st, &oracle, k & 1, cuts, 2,
				   order, ss->mss, run_flags((__u32)k, order)) &
		    KP_CASE_COUNTS)
			fails++;
	}
	sweep_end(name, fails);
}

static void t_sweeps(void)
{
	size_t i;
	int order;

	for (i = 0; i < sizeof(streams) / sizeof(streams[0]); i++) {
		for (order = 0; order < KP_ORDER_MAX; order++)
			sweep2(&streams[i], order);
		for (order = 0; order < KP_ORDER_MAX; order++)
			sweep3(&streams[i], order);
	}
}

/* ------------------------------------------------------------------ */
/* by hand                                                             */

/* Sends bytes [a, b) of a C string on f. */
static void seg(const struct kp_flow *f, const char *str, __u32 a, __u32 b)
{
	kp_flow_send(f, a, str + a, b - a, PKT_TCP_PSH | PKT_TCP_ACK);
}

static void t_hand_inorder(void)
{
	static const char s1[] = "get alpha\r\n";
	static const char s2[] = "get abc"
				 "def ghi\r\n";
	static const char s3[] = "set sv 0 0 10\r\n01234"
				 "56789"
				 "\r\nget z\r\n";
	struct kp_flow f;

	begin("stream_syn_opens_command_cut_continues", 0);
	kp_flow_new(&f, 0);
	kp_flow_syn(&f);
	seg(&f, s1, 0, 2);
	seg(&f, s1, 2, 11);
	kp_flow_fin(&f, 11);
	kp_x_req(KS_OP_GET, 11, "alpha", NULL);
	x(KS_PKT_FLOW_CONT, 1);
	kp_end();

	/* the cut key is joined and sampled once, as "abcdef" */
	begin("stream_key_cut_joined_sampled_once", 0);
	kp_flow_new(&f, 0);
	kp_flow_syn(&f);
	seg(&f, s2, 0, 7);
	seg(&f, s2, 7, 16);
	kp_flow_fin(&f, 16);
	kp_x_req(KS_OP_GET, 16, "abcdef", "ghi", NULL);
	x(KS_PKT_FLOW_CONT, 1);
	kp_end();

	begin("stream_key_cut_joined_ipv6", 0);
	kp_flow_new(&f, 1);
	kp_flow_syn(&f);
	seg(&f, s2, 0, 5);
	seg(&f, s2, 5, 16);
	kp_flow_fin(&f, 16);
	kp_x_req(KS_OP_GET, 16, "abcdef", "ghi", NULL);
	x(KS_PKT_FLOW_CONT, 1);
	kp_end();

	/* a value over three segments; the third begins at its "\r\n" */
	begin("stream_set_value_over_three_segments", 0);
	kp_flow_new(&f, 0);
	kp_flow_syn(&f);
	seg(&f, s3, 0, 20);
	seg(&f, s3, 20, 25);
	seg(&f, s3, 25, 34);
	kp_flow_fin(&f, 34);
	kp_x_req(KS_OP_SET, 15 + 12, "sv", NULL);
	kp_x_req(KS_OP_GET, 7, "z", NULL);
	x(KS_PKT_FLOW_CONT, 2);
	kp_end();
}

static void t_hand_binary(void)
{
	static __u8 b[128];
	struct kp_flow f;
	size_t n, m;

	/* cut inside the 24-byte header, then inside the key */
	begin("stream_binary_header_and_key_cut", 0);
	n = pkt_bin_req(b, BIN_GETK, NULL, 0, "binkey1", 7, NULL, 0);
	m = pkt_bin_req(b + n, BIN_NOOP, NULL, 0, NULL, 0, NULL, 0);
	kp_flow_new(&f, 0);
	kp_flow_syn(&f);
	kp_flow_send(&f, 0, b, 10, PKT_TCP_PSH | PKT_TCP_ACK);
	kp_flow_send(&f, 10, b + 10, 17, PKT_TCP_PSH | PKT_TCP_ACK);
	kp_flow_send(&f, 27, b + 27, n + m - 27, PKT_TCP_PSH | PKT_TCP_ACK);
	kp_flow_fin(&f, (__u32)(n + m));
	kp_x_req(KS_OP_GET, n, "binkey1", NULL);
	kp_x_req(KS_OP_OTHER, m, NULL);
	x(KS_PKT_FLOW_CONT, 2);
	kp_end();
}

static void t_hand_retransmit(void)
{
	static const char s[] = "get r1\r\nget r2\r\n";
	static const char o[] = "get o1\r\nget o2\r\n";
	static const char g[] = "get g1\r\nget g2\r\nget g3\r\n";
	struct kp_flow f;
	__u64 disarm;

	begin("stream_retransmission_skipped", 0);
	kp_flow_new(&f, 0);
	kp_flow_syn(&f);
	seg(&f, s, 0, 8);
	seg(&f, s, 0, 8); /* at once */
	seg(&f, s, 8, 16);
	seg(&f, s, 0, 8);  /* long after */
	seg(&f, s, 0, 16); /* everything again */
	kp_flow_fin(&f, 16);
	kp_x_req(KS_OP_GET, 8, "r1", NULL);
	kp_x_req(KS_OP_GET, 8, "r2", NULL);
	x(KS_PKT_FLOW_DUP, 3);
	kp_end();

	/* [0, 10) then [5, 16): five bytes again, the rest parsed */
	begin("stream_overlap_trimmed", 0);
	kp_flow_new(&f, 0);
	kp_flow_syn(&f);
	seg(&f, o, 0, 10);
	seg(&f, o, 5, 16);
	kp_flow_fin(&f, 16);
	kp_x_req(KS_OP_GET, 8, "o1", NULL);
	kp_x_req(KS_OP_GET, 8, "o2", NULL);
	x(KS_PKT_FLOW_OVERLAP, 1);
	kp_x_pkt_dontcare(KS_PKT_FLOW_CONT); /* its new bytes begin inside */
	kp_end();

	/* g2 lost then late: g3 (on a boundary) parsed as a guess, g2's
	 * bytes are old by then */
	begin("stream_gap_counted_late_bytes_skipped", 0);
	kp_flow_new(&f, 0);
	kp_flow_syn(&f);
	seg(&f, g, 0, 8);
	disarm = kp_pkt(KS_PKT_HOT_DISARM);
	seg(&f, g, 16, 24);
	CHECK(kp_pkt(KS_PKT_HOT_DISARM) > disarm,
	      "a gap and hot_disarm did not move");
	/* the spec: old bytes, FLOW_DUP; a datapath may parse them as a
	 * guess instead (FLOW_FILL), and then g2 counts once */
	seg(&f, g, 8, 16);
	kp_flow_fin(&f, 24);
	kp_x_req(KS_OP_GET, 8, "g1", NULL);
	kp_x_req(KS_OP_GET, 8, "g3", NULL);
	if (kp_pkt(KS_PKT_FLOW_FILL)) {
		kp_x_req(KS_OP_GET, 8, "g2", NULL);
		x(KS_PKT_FLOW_FILL, 1);
	} else {
		x(KS_PKT_FLOW_DUP, 1);
	}
	x(KS_PKT_RESYNC_GAP, 1);
	kp_x_pkt_dontcare(KS_PKT_HOT_DISARM);
	kp_end();
}

static void t_hand_gap_in_value(void)
{
	static const char s[] = "set k 0 0 20\r\n"
				"01234"
				"56789"
				"0123456789\r\nget after\r\n";
	struct kp_flow f;
	__u64 disarm;

	/* the segment after the gap begins inside the value: passed over;
	 * the set was counted at its line */
	begin("stream_gap_inside_value_passed_over", 0);
	kp_flow_new(&f, 0);
	kp_flow_syn(&f);
	seg(&f, s, 0, 19);
	disarm = kp_pkt(KS_PKT_HOT_DISARM);
	seg(&f, s, 24, (__u32)strlen(s));
	CHECK(kp_pkt(KS_PKT_HOT_DISARM) > disarm,
	      "a gap and hot_disarm did not move");
	kp_flow_fin(&f, (__u32)strlen(s));
	kp_x_req(KS_OP_SET, 14 + 22, "k", NULL);
	kp_x_err(KS_ERR_MIDSTREAM);
	x(KS_PKT_RESYNC_GAP, 1);
	kp_x_pkt_dontcare(KS_PKT_HOT_DISARM);
	kp_end();
}

static void t_hand_lifecycle(void)
{
	static const char a[] = "get f1\r\n", b[] = "get f2\r\n";
	static const char c[] = "0 0 5\r\nhello\r\n";
	struct kp_flow f;

	/* data on a flow no SYN opened: resync, parsed as a guess */
	begin("stream_unknown_flow_resync_guess", 0);
	kp_flow_new(&f, 0);
	seg(&f, a, 0, 8);
	kp_x_req(KS_OP_GET, 8, "f1", NULL);
	x(KS_PKT_RESYNC_UNKNOWN, 1);
	kp_x_pkt_dontcare(KS_PKT_HOT_DISARM);
	kp_end();

	begin("stream_unknown_flow_midrequest_midstream", 0);
	kp_flow_new(&f, 1);
	seg(&f, c, 0, (__u32)strlen(c));
	kp_x_err(KS_ERR_MIDSTREAM);
	x(KS_PKT_RESYNC_UNKNOWN, 1);
	kp_x_pkt_dontcare(KS_PKT_HOT_DISARM);
	kp_end();

	/* FIN with the last data: parsed, then released */
	begin("stream_fin_with_data_releases_flow", 0);
	kp_flow_new(&f, 0);
	kp_flow_syn(&f);
	kp_flow_send(&f, 0, a, 8, PKT_TCP_FIN | PKT_TCP_PSH | PKT_TCP_ACK);
	x(KS_PKT_FLOW_END, 1);
	kp_flow_send(&f, 9, b, 8, PKT_TCP_PSH | PKT_TCP_ACK);
	kp_x_req(KS_OP_GET, 8, "f1", NULL);
	kp_x_req(KS_OP_GET, 8, "f2", NULL);
	x(KS_PKT_RESYNC_UNKNOWN, 1);
	kp_x_pkt_dontcare(KS_PKT_HOT_DISARM);
	kp_end();

	begin("stream_rst_releases_flow", 0);
	kp_flow_new(&f, 1);
	kp_flow_syn(&f);
	seg(&f, a, 0, 8);
	kp_flow_rst(&f, 8);
	kp_flow_send(&f, 8, b, 8, PKT_TCP_PSH | PKT_TCP_ACK);
	kp_x_req(KS_OP_GET, 8, "f1", NULL);
	kp_x_req(KS_OP_GET, 8, "f2", NULL);
	x(KS_PKT_RESYNC_UNKNOWN, 1);
	kp_x_pkt_dontcare(KS_PKT_HOT_DISARM);
	kp_end();

	/* a new SYN on a tuple whose flow was released starts afresh */
	begin("stream_syn_after_fin_reopens", 0);
	kp_flow_new(&f, 0);
	kp_flow_syn(&f);
	seg(&f, a, 0, 8);
	kp_flow_fin(&f, 8);
	f.isn += 100000;
	kp_flow_syn(&f);
	seg(&f, b, 0, 3);
	seg(&f, b, 3, 8);
	kp_flow_fin(&f, 8);
	kp_x_req(KS_OP_GET, 8, "f1", NULL);
	kp_x_req(KS_OP_GET, 8, "f2", NULL);
	x(KS_PKT_FLOW_CONT, 1);
	kp_end();
}

static void t_hand_flows(void)
{
	static const char a[] = "get aaaa1 aaaa2\r\n", b[] = "get bbbb1\r\n";
	static const char w[] = "get w1\r\nget w2\r\nget w3\r\n";
	static const char t[] = "set t 0 0 3\r\nabc\r\n";
	struct kp_flow fa, fb, fc;

	/* three flows cut at once, their segments interleaved */
	begin("stream_flows_interleaved_v4_v6", 0);
	kp_flow_new(&fa, 0);
	kp_flow_new(&fb, 1);
	kp_flow_new(&fc, 0);
	fc.o.sport = fa.o.sport; /* same port, other address */
	fc.o.saddr[3] ^= 0x80;
	kp_flow_syn(&fa);
	kp_flow_syn(&fb);
	kp_flow_syn(&fc);
	seg(&fa, a, 0, 7);
	seg(&fb, b, 0, 6);
	seg(&fc, b, 0, 9);
	seg(&fa, a, 7, 17);
	seg(&fc, b, 9, 11);
	seg(&fb, b, 6, 11);
	kp_flow_fin(&fb, 11);
	kp_flow_fin(&fa, 17);
	kp_flow_fin(&fc, 11);
	kp_x_req(KS_OP_GET, 17, "aaaa1", "aaaa2", NULL);
	kp_x_req(KS_OP_GET, 11, "bbbb1", NULL);
	kp_x_req(KS_OP_GET, 11, "bbbb1", NULL);
	x(KS_PKT_FLOW_CONT, 3);
	kp_end();

	/* sequence numbers wrap inside the stream */
	begin("stream_sequence_wraps", 0);
	kp_flow_new(&fa, 0);
	fa.isn = 0xfffffff0u;
	kp_flow_syn(&fa);
	seg(&fa, w, 0, 12);
	seg(&fa, w, 12, 20); /* its byte 15 has sequence 0 */
	seg(&fa, w, 12, 20); /* again: old */
	seg(&fa, w, 20, 24);
	kp_flow_fin(&fa, 24);
	kp_x_req(KS_OP_GET, 8, "w1", NULL);
	kp_x_req(KS_OP_GET, 8, "w2", NULL);
	kp_x_req(KS_OP_GET, 8, "w3", NULL);
	x(KS_PKT_FLOW_CONT, 2);
	x(KS_PKT_FLOW_DUP, 1);
	kp_end();

	/* the tc program follows the same streams */
	begin("stream_tc_program_value_cut", 0);
	kp_flow_new(&fa, 0);
	fa.tc = 1;
	kp_flow_syn(&fa);
	seg(&fa, t, 0, 15);
	seg(&fa, t, 15, 18);
	kp_flow_fin(&fa, 18);
	kp_x_req(KS_OP_SET, 18, "t", NULL);
	x(KS_PKT_FLOW_CONT, 1);
	kp_end();
}

/* The control: with KS_CFG_NO_STREAM a segment that begins inside a value
 * is parsed on its own, so the command-looking bytes of the value count
 * and the flow counters stay at 0; without it the same segments count as
 * the stream does. */
static void t_no_stream(void)
{
	static const char s[] = "set k 0 0 11\r\n0123\r\nget x\r\nget after\r\n";
	struct kp_flow f;
	int on;

	for (on = 1; on >= 0; on--) {
		begin(on ? "stream_no_stream_flag_miscounts_value"
			 : "stream_same_segments_followed_count_right",
		      0);
		if (on)
			set_flags(KS_CFG_NO_STREAM);
		kp_flow_new(&f, 0);
		kp_flow_syn(&f);
		seg(&f, s, 0, 20);
		seg(&f, s, 20, (__u32)strlen(s));
		kp_flow_fin(&f, (__u32)strlen(s));
		kp_x_req(KS_OP_SET, 14 + 13, "k", NULL);
		if (on) {
			kp_x_req(KS_OP_GET, 7, "x", NULL); /* the value's */
		} else {
			x(KS_PKT_FLOW_CONT, 1);
		}
		kp_x_req(KS_OP_GET, 11, "after", NULL);
		kp_end();
	}
}

void t_stream_group(void)
{
	t_hand_inorder();
	t_hand_binary();
	t_hand_retransmit();
	t_hand_gap_in_value();
	t_hand_lifecycle();
	t_hand_flows();
	t_no_stream();
	t_sweeps();
}
