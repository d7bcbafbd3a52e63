// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_malformed.c - input the datapath must survive and explain: frames cut
 * at every byte (with lengths fixed to the cut, and with lengths that
 * lie), header fields that lie, bad requests. Every packet must pass
 * untouched, count exactly the reason defined for it, and count no op.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include "kp.h"
#include "groups.h"

#define NO_ERR (-2) /* no reason is counted */
#define NO_ALT (-1)

static char buf[PKT_MAX];

/* Where each layer of a built packet ends, for the expected reason of a
 * frame cut at byte n. */
struct layers {
	__u32 l3, ip_end, l4, l4_fixed, pay, len;
	int ipv6, udp, ip4_opts, text;
};

static void layers_of(const struct pkt *p, struct layers *ly)
{
	memset(ly, 0, sizeof(*ly));
	ly->l3 = p->l3;
	ly->ipv6 = p->ipv6;
	ly->ip_end = p->l3 + (p->ipv6 ? 40 : 20);
	ly->ip4_opts = !p->ipv6 && p->l4 > ly->ip_end;
	ly->l4 = p->l4;
	ly->udp = p->proto == IPPROTO_UDP;
	ly->l4_fixed = p->l4 + (ly->udp ? 8 : 20);
	ly->pay = p->pay;
	ly->len = p->len;
}

/* Expected reason for a cut at n with the lengths fixed to the cut. */
static int reason_fixed(const struct layers *ly, __u32 n, int *alt)
{
	*alt = NO_ALT;
	if (n < ly->l3)
		return KS_ERR_TRUNC_ETH;
	if (n < ly->ip_end)
		return KS_ERR_TRUNC_IP;
	if (n < ly->l4) {
		if (ly->ipv6)
			return KS_ERR_TRUNC_IP6_EXT;
		/* IPv4 options cut: tot_len (= the cut) is below ihl * 4 too */
		*alt = KS_ERR_BAD_IP_HDR;
		return KS_ERR_TRUNC_IP;
	}
	if (n < ly->l4_fixed)
		return KS_ERR_TRUNC_L4;
	if (n < ly->pay)
		return ly->udp ? KS_ERR_UDP_FRAME : KS_ERR_BAD_TCP_DOFF;
	if (n == ly->pay) {
		/* no request bytes: a pure ACK for TCP; for UDP an empty
		 * request after the frame, which nothing defines */
		if (ly->udp)
			*alt = KS_ERR_TRUNC_REQ;
		return NO_ERR;
	}
	return KS_ERR_TRUNC_REQ;
}

/* Expected reason for a frame cut at n, IP length as built (a lie). */
static int reason_lying(const struct layers *ly, __u32 n, int *alt)
{
	*alt = NO_ALT;
	if (n < ly->l3)
		return KS_ERR_TRUNC_ETH;
	if (n < ly->ip_end)
		return KS_ERR_TRUNC_IP;
	/* the IP header is whole and claims more bytes than the frame has;
	 * IPv6's payload length is "a length that lies" only by the
	 * enum's wider reading, so the layer's own reason is accepted */
	if (ly->ipv6) {
		int dummy;

		*alt = reason_fixed(ly, n, &dummy);
	}
	return KS_ERR_BAD_IP_HDR;
}

static int errors_total(int *which)
{
	int i, total = 0;

	*which = NO_ERR;
	for (i = 0; i < KS_ERR_MAX; i++) {
		__u64 v = kp_errc(i);

		if (v) {
			total += (int)v;
			*which = i;
		}
	}
	return total;
}

/*
 * Keys of a get line cut by the end of the segment: memcached will serve
 * them once the rest of the line arrives, so every key whose delimiter is
 * in the segment counts (and is sampled); the request itself is not
 * counted, it never completed here.
 */
static void expect_cut_get_keys(const __u8 *pay, __u32 n)
{
	__u32 i = 4, start;

	if (n < 4 || memcmp(pay, "get ", 4))
		return;
	while (i < n) {
		while (i < n && pay[i] == ' ')
			i++;
		if (i >= n || pay[i] == '\r' || pay[i] == '\n')
			return;
		start = i;
		/* memcached ends a key at a space or the line end only */
		while (i < n && pay[i] != ' ' && pay[i] != '\n')
			i++;
		if (i >= n)
			return; /* no delimiter: the key may go on */
		/* sampled as it came; the line never ends, so memcached
		 * serves none of it and it does not count */
		kp_x_sampled_only(
			KS_OP_GET, pay + start,
			i - start - (pay[i] == '\n' && pay[i - 1] == '\r'));
	}
}

/* Cuts p at every byte, runs each, checks pass/unchanged, the reason and
 * that nothing else is counted. */
static void trunc_loop(const char *name, const struct pkt *whole, int lying)
{
	static struct pkt p;
	struct layers ly;
	__u32 n;
	int refused = 0;

	kt_begin(name);
	layers_of(whole, &ly);
	for (n = 0; n < whole->len; n++) {
		int want, alt, got, total;
		char ctx[64];

		p = *whole;
		if (lying)
			pkt_cut(&p, n);
		else
			pkt_cut_fixed(&p, n);
		if (n < 14) {
			/* BPF_PROG_TEST_RUN refuses frames under ETH_HLEN */
			__u8 out[64];
			__u32 rc, olen = sizeof(out);
			int err = kp_run(kp.xdp_fd, p.b, n, &rc, out, &olen);

			if (err == -EINVAL)
				refused++;
			else
				CHECK(err == 0 && rc == 2,
				      "len %u: err %d rc %u", n, err, rc);
			continue;
		}
		kp_reset();
		for (want = 0; want < KS_ERR_MAX; want++)
			kp_x_err_dontcare(want);
		kp_x_l4_dontcare();
		kp_send(&p);
		want = lying ? reason_lying(&ly, n, &alt)
			     : reason_fixed(&ly, n, &alt);
		total = errors_total(&got);
		snprintf(ctx, sizeof(ctx), "cut at %u of %u", n, whole->len);
		if (!lying && n > ly.pay)
			expect_cut_get_keys(whole->b + ly.pay, n - ly.pay);
		if (want == NO_ERR && alt == NO_ALT)
			CHECK(total == 0, "[%s] %d errors, last %s, want none",
			      ctx, total, kp_err_name(got));
		else if (want == NO_ERR)
			CHECK(total == 0 || (total == 1 && got == alt),
			      "[%s] %d errors, last %s, want none or %s", ctx,
			      total, kp_err_name(got), kp_err_name(alt));
		else
			CHECK(total == 1 && (got == want || got == alt),
			      "[%s] %d errors, last %s, want one %s%s%s", ctx,
			      total, kp_err_name(got), kp_err_name(want),
			      alt >= 0 ? " or " : "",
			      alt >= 0 ? kp_err_name(alt) : "");
		kp_check(ctx); /* no op, no key, no sketch, no candidate */
	}
	CHECK(refused == 14 || refused == 0,
	      "%d of the 14 sub-Ethernet lengths refused", refused);
	kt_end();
}

static void t_truncation(void)
{
	struct pkt_opts o;
	struct pkt p;
	__u8 bin[64];
	size_t n;

	kp_tcp4(&p, "get a\r\n", 7);
	trunc_loop("trunc_every_byte_ipv4_tcp_get", &p, 0);
	trunc_loop("trunc_every_byte_ipv4_tcp_get_lengths_lie", &p, 1);

	pkt_opts_default(&o, 0, IPPROTO_UDP);
	o.nvlan = 1;
	o.vlan[0].tpid = PKT_ETH_P_8021Q;
	o.ip4_opt_words = 2;
	kp_build(&p, &o, "get a\r\n", 7);
	trunc_loop("trunc_every_byte_vlan_ipv4_options_udp_get", &p, 0);

	pkt_opts_default(&o, 1, IPPROTO_TCP);
	o.nvlan = 2;
	o.vlan[0].tpid = PKT_ETH_P_8021AD;
	o.vlan[1].tpid = PKT_ETH_P_8021Q;
	o.next = 2;
	o.ext[0].type = PKT_IP6_HOP;
	o.ext[1].type = PKT_IP6_RT;
	o.ext[1].len8 = 1;
	o.tcp_opt_words = 3;
	kp_build(&p, &o, "get ab\r\n", 8);
	trunc_loop("trunc_every_byte_qinq_ipv6_ext_tcp_options_get", &p, 0);
	trunc_loop("trunc_every_byte_qinq_ipv6_ext_tcp_lengths_lie", &p, 1);

	pkt_opts_default(&o, 1, IPPROTO_UDP);
	o.next = 1;
	o.ext[0].type = PKT_IP6_DST;
	kp_build(&p, &o, "get a\r\n", 7);
	trunc_loop("trunc_every_byte_ipv6_dstopts_udp_get", &p, 0);

	n = pkt_bin_req(bin, 0x0c, NULL, 0, "bkey", 4, NULL, 0);
	kp_tcp4(&p, bin, n);
	trunc_loop("trunc_every_byte_binary_getk", &p, 0);
}

/* Cut inside a storage request: before the end of its line the request is
 * cut short; after it, the value simply continues in the next segment. */
static void t_trunc_set(void)
{
	static const char req[] = "set k 0 0 5\r\nhello\r\n";
	const __u32 line = 13;
	struct pkt whole, p;
	__u32 n;
	char ctx[32];

	kt_begin("trunc_every_byte_of_set_payload");
	kp_tcp4(&whole, req, strlen(req));
	for (n = 1; n <= strlen(req); n++) {
		p = whole;
		pkt_cut_fixed(&p, whole.pay + n);
		kp_reset();
		if (n < line) {
			kp_send(&p);
			kp_x_err(KS_ERR_TRUNC_REQ);
			kp_x_l4_dontcare();
			/* a write counts only once its line is whole:
			 * a cut line leaves no key in the sketch */
		} else if (n < strlen(req)) {
			/* the line is whole, the block is not: the key is
			 * taken (a hot key is dirtied at its line), the set
			 * counts only once its block is through, which this
			 * stream never sees */
			kp_send(&p);
			kp_x_sampled_only(KS_OP_SET, "k", 1);
			kp_x_err(KS_ERR_TRUNC_REQ);
			kp_x_l4_dontcare();
		} else {
			kp_send_mc(&p);
			kp_x_req(KS_OP_SET, strlen(req), "k", NULL);
		}
		snprintf(ctx, sizeof(ctx), "payload %u of %zu", n, strlen(req));
		kp_check(ctx);
	}
	kt_end();
}

/* Each request in its own packet; each counts one error, nothing else. */
static void bad_list(const char *name, const char *const *reqs, int reason)
{
	struct pkt p;
	int i;

	kp_begin(name);
	for (i = 0; reqs[i]; i++) {
		kp_tcp4(&p, reqs[i], strlen(reqs[i]));
		kp_send(&p);
		kp_x_err(reason);
	}
	kp_x_l4_dontcare();
	kp_end();
}

/*
 * Storage lines memcached refuses, and what it makes of the bytes after
 * them: a refused line's data block is not read as data, so it comes next
 * as a command (ERROR); a bad data chunk has its <bytes> + 2 read all the
 * same, and what follows is the next command. Checked against memcached
 * 1.6.18.
 */
static const struct {
	const char *req;
	int reason;
	int then_unknown; /* the next line is read as a command: ERROR */
} set_bad_bytes[] = {
	{ "set k 0 0 abc\r\nxyz\r\n", KS_ERR_BAD_LENGTH, 1 },
	/* strtol's 64 bits cut to 32: 12345678901 is negative */
	{ "set k 0 0 12345678901\r\nx\r\n", KS_ERR_BAD_LENGTH, 1 },
	{ "set k 0 0\r\n", KS_ERR_REFUSED, 0 }, /* too few tokens: ERROR */
	{ "set k 0 0 -1\r\nx\r\n", KS_ERR_BAD_LENGTH, 1 },
	{ "ms k xyz\r\nab\r\n", KS_ERR_BAD_LENGTH, 1 },
	/* <bytes> 5, but "\r\n" is not where the 5 bytes end: "abc\r\nge"
	 * is the data, "t z" the next command */
	{ "set k 0 0 5\r\nabc\r\nget z\r\n", KS_ERR_BAD_LENGTH, 1 },
	{ NULL, 0, 0 },
};

static void t_set_bad_bytes(void)
{
	struct pkt p;
	int i;

	kp_begin("set_bytes_not_a_number");
	for (i = 0; set_bad_bytes[i].req; i++) {
		kp_tcp4(&p, set_bad_bytes[i].req, strlen(set_bad_bytes[i].req));
		kp_send(&p);
		kp_x_err(set_bad_bytes[i].reason);
		if (set_bad_bytes[i].then_unknown)
			kp_x_err(KS_ERR_UNKNOWN_CMD);
	}
	kp_x_l4_dontcare();
	kp_end();
}

static const char *const no_key[] = {
	"get\r\n",   "get \r\n", "gets\r\n", "delete\r\n", "incr\r\n",
	"touch\r\n", "mg\r\n",   "md \r\n",  "set\r\n",    NULL,
};

/* A one-packet test expecting exactly one error and no op. */
static void bad(const char *name, const struct pkt *p, int reason)
{
	kp_begin(name);
	kp_send(p);
	kp_x_err(reason);
	kp_x_l4_dontcare();
	kp_end();
}

static void bad_text(const char *name, const char *req, int reason)
{
	struct pkt p;

	kp_tcp4(&p, req, strlen(req));
	bad(name, &p, reason);
}

static void t_lies(void)
{
	struct pkt_opts o;
	struct pkt p;
	int v;

	kp_begin("ipv4_total_length_past_frame_or_below_header");
	kp_tcp4(&p, "get abc\r\n", 9);
	pkt_set_ip4_tot_len(&p, (__u16)(p.len - p.l3 + 20));
	kp_send(&p);
	kp_tcp4(&p, "get abc\r\n", 9);
	pkt_set_ip4_tot_len(&p, 12);
	kp_send(&p);
	kp.x.err[KS_ERR_BAD_IP_HDR] = 2;
	kp_x_l4_dontcare();
	kp_end();

	/* the Ethernet type says IPv4, the version field says 6 */
	kp_tcp4(&p, "get abc\r\n", 9);
	p.b[p.l3] = 0x65;
	pkt_fix_csums(&p);
	bad("ipv4_version_field_not_4", &p, KS_ERR_BAD_IP_HDR);

	/* shorter than the frame is legal (the rest is padding): the
	 * datagram ends inside the request line */
	kp_tcp4(&p, "get abc\r\n", 9);
	pkt_set_ip4_tot_len(&p, (__u16)(p.len - p.l3 - 4));
	bad("ipv4_total_length_ends_inside_request", &p, KS_ERR_TRUNC_REQ);

	kt_begin("ipv4_ihl_0_to_4");
	for (v = 0; v < 5; v++) {
		char ctx[16];

		kp_reset();
		kp_tcp4(&p, "get abc\r\n", 9);
		pkt_set_ip4_ihl(&p, (__u8)v);
		kp_send(&p);
		kp_x_err(KS_ERR_BAD_IP_HDR);
		kp_x_l4_dontcare();
		snprintf(ctx, sizeof(ctx), "ihl %d", v);
		kp_check(ctx);
	}
	kt_end();

	/* ihl 15 claims 60 bytes in a datagram of 40 */
	kp_begin("ipv4_ihl_past_datagram_end");
	kp_tcp4(&p, "", 0);
	pkt_set_ip4_ihl(&p, 15);
	kp_send(&p);
	kp_x_err_dontcare(KS_ERR_BAD_IP_HDR);
	kp_x_err_dontcare(KS_ERR_TRUNC_IP);
	kp_x_l4_dontcare();
	CHECK_EQ(kp_errc(KS_ERR_BAD_IP_HDR) + kp_errc(KS_ERR_TRUNC_IP), 1);
	kp_end();

	kp_tcp6(&p, "get abc\r\n", 9);
	pkt_set_ip6_plen(&p, (__u16)(p.len - p.l3 - 40 + 100));
	bad("ipv6_payload_length_longer_than_frame", &p, KS_ERR_BAD_IP_HDR);

	kt_begin("tcp_doff_0_to_4_or_past_segment_end");
	for (v = 0; v < 6; v++) {
		char ctx[16];

		kp_reset();
		kp_tcp4(&p, "get abc\r\n", 9);
		/* 15: 60 bytes, past the end of the 29-byte segment */
		pkt_set_tcp_doff(&p, (__u8)(v < 5 ? v : 15));
		kp_send(&p);
		kp_x_err(KS_ERR_BAD_TCP_DOFF);
		kp_x_l4_dontcare();
		snprintf(ctx, sizeof(ctx), "doff %d", v);
		kp_check(ctx);
	}
	kt_end();

	/* a UDP length beyond the IP datagram: one error, no request */
	kp_begin("udp_length_longer_than_datagram");
	kp_udp4(&p, "get abc\r\n", 9);
	pkt_set_udp_len(&p, (__u16)(p.len - p.l4 + 50));
	kp_send(&p);
	kp_x_err_dontcare(KS_ERR_BAD_LENGTH);
	kp_x_err_dontcare(KS_ERR_TRUNC_L4);
	kp_x_l4_dontcare();
	CHECK_EQ(kp_errc(KS_ERR_BAD_LENGTH) + kp_errc(KS_ERR_TRUNC_L4), 1);
	kp_end();

	/* 5 bytes of frame header, and an empty datagram */
	kp_begin("udp_payload_shorter_than_frame_header");
	kp_udp4(&p, "", 0);
	pkt_cut_fixed(&p, p.l4 + 8 + 5);
	kp_send(&p);
	pkt_opts_default(&o, 0, IPPROTO_UDP);
	o.udp_frame = 0;
	kp_build(&p, &o, "", 0);
	kp_send(&p);
	kp.x.err[KS_ERR_UDP_FRAME] = 2;
	kp_x_l4_dontcare();
	kp_end();
}

static void t_requests(void)
{
	struct pkt p;
	char k251[252];
	size_t n;
	int i;

	kp_make_key(k251, 251, 9);
	n = (size_t)snprintf(buf, sizeof(buf), "get %s\r\n", k251);
	kp_begin("key_251_bytes_too_long");
	kp_tcp4(&p, buf, n);
	kp_send(&p);
	kp_x_err(KS_ERR_KEY_TOO_LONG);
	kp_x_l4_dontcare();
	kp_x_op_dontcare(KS_OP_GET); /* whether the request counts is open */
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 0);
	kp_end(); /* the model has no key: sketch and candidates empty */

	kp_begin("garbage_after_valid_command");
	kp_send_tcp4("get a\r\nXYZZY\r\n");
	kp_x_req(KS_OP_GET, 7, "a", NULL);
	kp_x_err(KS_ERR_UNKNOWN_CMD);
	kp_end();

	/* UDP datagrams always start a request: unknown, not midstream */
	kp_begin("udp_unknown_command");
	kp_udp4(&p, "XYZZY\r\n", 7);
	kp_send(&p);
	kp_x_err(KS_ERR_UNKNOWN_CMD);
	kp_x_l4_dontcare();
	kp_end();

	/* segments that begin inside a text value and a binary value */
	kp_begin("midstream_segment_inside_value");
	memset(buf, 'x', 300);
	memcpy(buf + 300, "\r\n", 2);
	kp_tcp4(&p, buf, 302);
	kp_send(&p);
	for (i = 0; i < 200; i++)
		buf[i] = (char)(i * 37 + 11); /* starts 0x0b: not 0x80 */
	kp_tcp4(&p, buf, 200);
	kp_send(&p);
	kp.x.err[KS_ERR_MIDSTREAM] = 2;
	kp_x_l4_dontcare();
	kp_end();

	t_set_bad_bytes();
	/* 4294967301 is 2^32 + 5: memcached's safe_strtol cuts it to 32 bits
	 * and stores a 5-byte value, so the stream goes on after "hello" */
	kp_begin("set_bytes_cut_to_32_bits_as_memcached_does");
	kp_send_tcp4("set k 0 0 4294967301\r\nhello\r\nget z\r\n");
	kp_x_req(KS_OP_SET, 22 + 7, "k", NULL);
	kp_x_req(KS_OP_GET, 7, "z", NULL);
	kp_end();
	bad_list("commands_without_key", no_key, KS_ERR_BAD_KEY);
	/* "gat 10" alone is served (END), with no key */
	kp_begin("gat_without_key_served");
	kp_send_tcp4("gat 10\r\n");
	kp_x_req(KS_OP_GAT, 8, NULL);
	kp_end();
	/* memcached splits on spaces only: 0x01 is a byte of the key */
	kp_begin("key_with_control_byte_counted");
	kp_send_tcp4("get a\x01z\r\n");
	kp_x_req(KS_OP_GET, 9, "a\x01z", NULL);
	kp_end();
	bad_text("request_line_without_newline", "get abc", KS_ERR_TRUNC_REQ);
	/* a get line its stream ends inside of: memcached serves none of it
	 * (the line never ends), so no key counts; a complete key was
	 * sampled as it came; "ghi\r" may still go on (a key ends at a space
	 * or the line end only), so it is no key yet */
	kp_begin("get_line_cut_counts_no_key");
	kp_tcp4(&p, "get abc def", 11);
	kp_send(&p);
	kp_x_sampled_only(KS_OP_GET, "abc", 3);
	kp_tcp4(&p, "get ghi\r", 8);
	kp_send(&p);
	kp.x.err[KS_ERR_TRUNC_REQ] = 2;
	kp_x_l4_dontcare();
	kp_end();

	/* pipelined requests split by the segment end inside a command
	 * word: the next segment holds the rest, so this is a cut request,
	 * not an unknown command */
	kp_begin("command_word_cut_after_valid_request");
	kp_send_tcp4("get a\r\nge");
	kp_x_req(KS_OP_GET, 7, "a", NULL);
	kp_x_err(KS_ERR_TRUNC_REQ);
	kp_end();

	kp_begin("trunc_req_after_valid_request");
	kp_send_tcp4("get a\r\nget b");
	kp_x_req(KS_OP_GET, 7, "a", NULL);
	kp_x_err(KS_ERR_TRUNC_REQ);
	kp_end();
}

static void t_limits(void)
{
	struct pkt p;
	size_t n;
	int i;

	/* memcached serves every key of a get, however many */
	kp_begin("many_keys_201_all_counted");
	n = (size_t)sprintf(buf, "get");
	for (i = 0; i <= 200; i++)
		n += (size_t)sprintf(buf + n, " k%03d", i);
	n += (size_t)sprintf(buf + n, "\r\n");
	kp_tcp4(&p, buf, n);
	kp_send(&p);
	kp_x_l4_dontcare();
	kp.x.ops[KS_OP_GET].requests++;
	kp.x.ops[KS_OP_GET].bytes += n;
	for (i = 0; i <= 200; i++) {
		char k[8];

		sprintf(k, "k%03d", i);
		kp_x_keyn(KS_OP_GET, k, 4);
	}
	kp_end();

	/* more requests than one window's step budget: the next window
	 * goes on where the budget ran out */
	kp_begin("many_requests_300_all_counted");
	n = 0;
	for (i = 0; i < 300; i++)
		n += (size_t)sprintf(buf + n, "mn\r\n");
	kp_tcp4(&p, buf, n);
	kp_send_mc(&p);
	for (i = 0; i < 300; i++)
		kp_x_req(KS_OP_MN, 4, NULL);
	kp_end();

	/* 30 requests of 76 bytes: the 27th runs past the first 2048-byte
	 * window and is read again at the start of the next */
	kp_begin("requests_across_parse_windows");
	n = 0;
	for (i = 0; i < 30; i++) {
		char key[71];

		kp_make_key(key, 70, 4000 + (unsigned int)i);
		n += (size_t)sprintf(buf + n, "get %s\r\n", key);
	}
	kp_tcp4(&p, buf, n);
	kp_send_mc(&p);
	for (i = 0; i < 30; i++) {
		char key[71];

		kp_make_key(key, 70, 4000 + (unsigned int)i);
		kp_x_req(KS_OP_GET, 76, key, NULL);
	}
	kp_end();

	/* one request line longer than the window: its keys go on in the
	 * next window, and the request counts once, whole */
	kp_begin("line_longer_than_window");
	n = (size_t)sprintf(buf, "get");
	for (i = 0; i < 9; i++) {
		char key[251];

		kp_make_key(key, 250, 5000 + (unsigned int)i);
		n += (size_t)sprintf(buf + n, " %s", key);
	}
	n += (size_t)sprintf(buf + n, "\r\n");
	kp_tcp4(&p, buf, n);
	kp_send_mc(&p);
	kp.x.ops[KS_OP_GET].requests++;
	kp.x.ops[KS_OP_GET].bytes += n;
	for (i = 0; i < 9; i++) {
		char key[251];

		kp_make_key(key, 250, 5000 + (unsigned int)i);
		kp_x_keyn(KS_OP_GET, key, 250);
	}
	kp_end();
}

static void t_binary(void)
{
	struct pkt p;
	__u8 b[400];
	char k251[252];
	size_t n;

	/* keylen 20 in a body of 8 */
	n = pkt_bin_req(b, 0x00, NULL, 0, "shortkey", 8, NULL, 0);
	b[2] = 0;
	b[3] = 20;
	kp_tcp4(&p, b, n);
	bad("bin_keylen_larger_than_body", &p, KS_ERR_BAD_LENGTH);

	/* extras 8 in a body of 4 */
	n = pkt_bin_req(b, 0x1c, "\0\0\0\x10", 4, NULL, 0, NULL, 0);
	b[4] = 8;
	kp_tcp4(&p, b, n);
	bad("bin_extlen_larger_than_body", &p, KS_ERR_BAD_LENGTH);

	/* header cut at 20 bytes; key cut after 5 of its 10 bytes */
	kp_begin("bin_header_or_key_cut_by_segment_end");
	n = pkt_bin_req(b, 0x00, NULL, 0, "k", 1, NULL, 0);
	kp_tcp4(&p, b, 20);
	kp_send(&p);
	n = pkt_bin_req(b, 0x0c, NULL, 0, "tenbytekey", 10, NULL, 0);
	kp_tcp4(&p, b, n - 5);
	kp_send(&p);
	kp.x.err[KS_ERR_TRUNC_REQ] = 2;
	kp_x_l4_dontcare();
	kp_end();

	kp_make_key(k251, 251, 11);
	n = pkt_bin_req(b, 0x00, NULL, 0, k251, 251, NULL, 0);
	kp_tcp4(&p, b, n);
	kp_begin("bin_key_251_bytes_too_long");
	kp_send(&p);
	kp_x_err(KS_ERR_KEY_TOO_LONG);
	kp_x_l4_dontcare();
	kp_x_op_dontcare(KS_OP_GET);
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 0);
	kp_end();

	n = pkt_bin_req(b, 0x00, NULL, 0, NULL, 0, NULL, 0);
	kp_tcp4(&p, b, n);
	bad("bin_get_without_key", &p, KS_ERR_BAD_KEY);
}

/* Empty segments and Ethernet padding: nothing to parse, no error. */
static void t_empty(void)
{
	struct pkt_opts o;
	struct pkt p;

	/* a pure ACK, as built (54 bytes) and padded to 60: only SEEN */
	kp_begin("pure_ack_counts_only_seen");
	pkt_opts_default(&o, 0, IPPROTO_TCP);
	o.tcp_flags = 0x10; /* ACK */
	kp_build(&p, &o, "", 0);
	kp_send(&p);
	pkt_pad(&p, 60);
	kp_send(&p);
	kp_end();

	/* 57-byte UDP get padded to 60: the padding is not a request */
	kp_begin("ethernet_padding_is_not_payload_udp_and_tcp");
	kp_udp4(&p, "get a\r\n", 7);
	pkt_pad(&p, 60);
	kp_send_mc(&p);
	kp_x_req(KS_OP_GET, 7, "a", NULL);
	kp_tcp4(&p, "mn\r\n", 4);
	pkt_pad(&p, 60);
	kp_send_mc(&p);
	kp_x_req(KS_OP_MN, 4, NULL);
	kp_end();
}

void t_malformed_group(void)
{
	t_truncation();
	t_trunc_set();
	t_lies();
	t_requests();
	t_limits();
	t_binary();
	t_empty();
}
