/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_parse_mc.bpf.h - memcached requests in the payload window: the text
 * protocol (retrieval, storage, delete/incr/decr/touch, meta commands) and
 * the binary protocol, several pipelined requests per segment.
 *
 * Every function takes the per-CPU scratch and positions inside its
 * window; each is a global function so the verifier checks it once. Any
 * failure counts one enum ks_reason and stops parsing the packet; what
 * was parsed before stays counted. The packet itself is never touched.
 */
#ifndef KS_PARSE_MC_BPF_H
#define KS_PARSE_MC_BPF_H

#include "ks_sample.bpf.h"

#define KS_BYTE(s, pos) ((s)->win[(pos) & KS_WIN_MASK])

/* Little-endian constants for matching command words in a loaded word. */
#define KS_S2(a, b) ((__u64)(a) | (__u64)(b) << 8)
#define KS_S4(a, b, c, d) (KS_S2(a, b) | KS_S2(c, d) << 16)

#define KS_ONES  0x0101010101010101ULL
#define KS_HIGHS 0x8080808080808080ULL

/*
 * Word-at-a-time byte search. The lowest flagged byte is exact (a borrow
 * only ever flags bytes above a real match), and little-endian makes the
 * lowest byte the first in memory.
 */
static __always_inline __u64 ks_mask_delim(__u64 w)
{
	/* bytes <= 0x20: space, CR, LF and other controls end a key */
	return (w - 0x21 * KS_ONES) & ~w & KS_HIGHS;
}

static __always_inline __u64 ks_mask_lf(__u64 w)
{
	w ^= '\n' * KS_ONES;
	return (w - KS_ONES) & ~w & KS_HIGHS;
}

/* Index of the lowest flagged byte; m has flags only at bit 7 of bytes. */
static __always_inline __u32 ks_first_flagged(__u64 m)
{
	__u64 low = m & (~m + 1);

	/* (1 << 8k) times this constant has k in its top byte */
	return ((low >> 7) * 0x0001020304050607ULL) >> 56;
}

/* Where parsing stopped for lack of bytes: the packet or our window. */
static __always_inline __u32 ks_short_reason(struct ks_scratch *s)
{
	return s->plen > s->end ? KS_ERR_WINDOW : KS_ERR_TRUNC_REQ;
}

static __always_inline int ks_fail(__u32 reason)
{
	ks_count_err(reason);
	return KS_STEP_DONE;
}

/*
 * First position in [pos, min(limit, end)) holding a delimiter (want_lf
 * == 0) or a '\n' (want_lf != 0); -1 if there is none.
 */
__noinline int ks_mc_scan(struct ks_scratch *s, __u32 pos, __u32 limit,
			  __u32 want_lf)
{
	__u32 i, p, stop;
	__u64 w, m;

	if (!s)
		return -1;
	stop = s->end < limit ? s->end : limit;
	for (i = 0; i < KS_WIN / 8; i++) {
		p = pos + i * 8;
		if (p >= stop)
			return -1;
		w = ks_win_word(s, p);
		m = want_lf ? ks_mask_lf(w) : ks_mask_delim(w);
		if (m) {
			p += ks_first_flagged(m);
			return p < stop ? (int)p : -1;
		}
	}
	return -1;
}

/* First position at or after pos that is not a space (may be end). */
__noinline int ks_mc_skip_spaces(struct ks_scratch *s, __u32 pos)
{
	__u32 i, p;

	if (!s)
		return -1;
	for (i = 0; i < 256; i++) {
		p = pos + i;
		if (p >= s->end || KS_BYTE(s, p) != ' ')
			return p;
	}
	return -1;
}

/*
 * A decimal length field at pos (after spaces). Returns the number, or
 * -reason-1; s->tok_end is set to the byte after it.
 */
__noinline int ks_mc_number(struct ks_scratch *s, __u32 pos)
{
	__u32 i, p, v = 0;
	__u8 c;
	int at;

	if (!s)
		return KS_NEG(KS_ERR_BAD_LENGTH);
	at = ks_mc_skip_spaces(s, pos);
	if (at < 0)
		return KS_NEG(KS_ERR_BAD_LENGTH);
	for (i = 0; i <= KS_MAX_DIGITS; i++) {
		p = at + i;
		if (p >= s->end)
			return KS_NEG(ks_short_reason(s));
		c = KS_BYTE(s, p);
		if (c < '0' || c > '9') {
			if (i == 0 || c > ' ')
				return KS_NEG(KS_ERR_BAD_LENGTH);
			s->tok_end = p;
			/* memcached refuses values this large anyway */
			return v > (1U << 30) ? KS_NEG(KS_ERR_BAD_LENGTH) : (int)v;
		}
		v = v * 10 + (c - '0');
	}
	return KS_NEG(KS_ERR_BAD_LENGTH);
}

/* Past the token at pos (after spaces): the delimiter after it. */
static __always_inline int ks_mc_skip_token(struct ks_scratch *s, __u32 pos)
{
	int at = ks_mc_skip_spaces(s, pos);

	if (at < 0)
		return -1;
	return ks_mc_scan(s, at, at + KS_WIN, 0);
}

/*
 * One key at pos (after spaces) of a text command: checks it, counts it,
 * samples it. Returns the position after the key or -reason-1.
 */
__noinline int ks_mc_text_key(struct ks_scratch *s, __u32 pos, __u32 op)
{
	int at, e;
	__u8 d;

	if (!s)
		return KS_NEG(KS_ERR_BAD_KEY);
	at = ks_mc_skip_spaces(s, pos);
	if (at < 0)
		return KS_NEG(KS_ERR_BAD_KEY);
	if ((__u32)at >= s->end)
		return KS_NEG(ks_short_reason(s));
	e = ks_mc_scan(s, at, at + KS_MAX_KEY_LEN + 1, 0);
	if (e < 0) {
		/* no delimiter in 251 bytes that we have: the key is too long */
		if ((__u32)at + KS_MAX_KEY_LEN + 1 <= s->end)
			return KS_NEG(KS_ERR_KEY_TOO_LONG);
		return KS_NEG(ks_short_reason(s));
	}
	d = KS_BYTE(s, e);
	if (e == at || (d != ' ' && d != '\r' && d != '\n'))
		return KS_NEG(KS_ERR_BAD_KEY);
	ks_count_op(op, 0, 1, 0);
	ks_key_seen(s, at, e - at, op);
	return e;
}

/*
 * The end of the request line that contains pos: the position after its
 * '\n'. A bare '\n' ends a line too, as in memcached.
 */
static __always_inline int ks_mc_line_end(struct ks_scratch *s, __u32 pos)
{
	int lf = ks_mc_scan(s, pos, s->plen, 1);

	return lf < 0 ? KS_NEG(ks_short_reason(s)) : lf + 1;
}

/* Count a finished request of len bytes and move to the next one. */
static __always_inline int ks_mc_next_request(struct ks_scratch *s, __u32 op,
					      __u32 len)
{
	__u32 next = s->req_start + len;

	ks_count_op(op, 1, 0, len);
	s->state = KS_ST_COMMAND;
	if (next >= s->plen)
		return KS_STEP_DONE; /* the rest arrives in later segments */
	if (next >= s->end)
		return ks_fail(KS_ERR_WINDOW);
	s->off = next;
	return KS_STEP_MORE;
}

/*
 * Storage commands: "<cmd> <key> <flags> <exptime> <bytes> [cas] [noreply]"
 * and "ms <key> <datalen> <flags>*" (skip = 0), each followed by a data
 * block and "\r\n" that we skip to reach the next pipelined request.
 */
__noinline int ks_mc_storage(struct ks_scratch *s, __u32 pos, __u32 op,
			     __u32 skip)
{
	int p, bytes, eol;
	__u32 i, len, tail;

	if (!s)
		return KS_STEP_DONE;
	p = ks_mc_text_key(s, pos, op);
	if (p < 0)
		return ks_fail(KS_REASON(p));
	for (i = 0; i < 2; i++) {
		if (i >= skip)
			break;
		p = ks_mc_skip_token(s, p);
		if (p < 0)
			return ks_fail(ks_short_reason(s));
	}
	bytes = ks_mc_number(s, p);
	if (bytes < 0)
		return ks_fail(KS_REASON(bytes));
	eol = ks_mc_line_end(s, s->tok_end);
	if (eol < 0)
		return ks_fail(KS_REASON(eol));
	len = eol - s->req_start + bytes + 2;
	/* A data block must end in "\r\n"; where we can see it, check. */
	tail = s->req_start + len - 2;
	if (tail + 2 <= s->end &&
	    (KS_BYTE(s, tail) != '\r' || KS_BYTE(s, tail + 1) != '\n'))
		return ks_fail(KS_ERR_BAD_LENGTH);
	return ks_mc_next_request(s, op, len);
}

/* "<cmd> <key> [args...]\r\n": delete, incr, decr, touch, mg, md, ma, me. */
__noinline int ks_mc_one_key(struct ks_scratch *s, __u32 pos, __u32 op)
{
	int p, eol;

	if (!s)
		return KS_STEP_DONE;
	p = ks_mc_text_key(s, pos, op);
	if (p < 0)
		return ks_fail(KS_REASON(p));
	eol = ks_mc_line_end(s, p);
	if (eol < 0)
		return ks_fail(KS_REASON(eol));
	return ks_mc_next_request(s, op, eol - s->req_start);
}

/* A command with no key (mn, stats, version, ...): to the end of line. */
static __always_inline int ks_mc_no_key(struct ks_scratch *s, __u32 pos,
					__u32 op)
{
	int eol = ks_mc_line_end(s, pos);

	if (eol < 0)
		return ks_fail(KS_REASON(eol));
	return ks_mc_next_request(s, op, eol - s->req_start);
}

/* One step inside a get/gets/gat/gats key list: a key or the line end. */
__noinline int ks_mc_key_list(struct ks_scratch *s)
{
	int at, p;
	__u8 c;

	if (!s)
		return KS_STEP_DONE;
	at = ks_mc_skip_spaces(s, s->off);
	if (at < 0)
		return ks_fail(KS_ERR_BAD_KEY);
	if ((__u32)at >= s->end)
		return ks_fail(ks_short_reason(s));
	c = KS_BYTE(s, at);
	if (c == '\r' || c == '\n') {
		if (s->nkeys == 0)
			return ks_fail(KS_ERR_BAD_KEY);
		if (c == '\r') {
			if ((__u32)at + 1 >= s->end)
				return ks_fail(ks_short_reason(s));
			if (KS_BYTE(s, at + 1) != '\n')
				return ks_fail(KS_ERR_BAD_KEY);
			at++;
		}
		return ks_mc_next_request(s, s->op, at + 1 - s->req_start);
	}
	if (++s->nkeys > KS_MAX_KEYS_PER_REQ)
		return ks_fail(KS_ERR_TOO_MANY_KEYS);
	p = ks_mc_text_key(s, at, s->op);
	if (p < 0)
		return ks_fail(KS_REASON(p));
	s->off = p;
	return KS_STEP_MORE;
}

static __always_inline __u32 ks_bin_op(__u8 opcode)
{
	switch (opcode) {
	case 0x00: case 0x09: case 0x0c: case 0x0d: /* get getq getk getkq */
		return KS_OP_GET;
	case 0x01: case 0x11:
		return KS_OP_SET;
	case 0x02: case 0x12:
		return KS_OP_ADD;
	case 0x03: case 0x13:
		return KS_OP_REPLACE;
	case 0x04: case 0x14:
		return KS_OP_DELETE;
	case 0x05: case 0x15:
		return KS_OP_INCR;
	case 0x06: case 0x16:
		return KS_OP_DECR;
	case 0x0e: case 0x19:
		return KS_OP_APPEND;
	case 0x0f: case 0x1a:
		return KS_OP_PREPEND;
	case 0x1c:
		return KS_OP_TOUCH;
	case 0x1d: case 0x1e: case 0x23: case 0x24: /* gat gatq gatk gatkq */
		return KS_OP_GAT;
	default: /* quit, flush, noop, version, stat, verbosity, sasl, ... */
		return KS_OP_OTHER;
	}
}

/* Binary protocol request: 24-byte header, extras, key, value. */
__noinline int ks_mc_binary(struct ks_scratch *s, __u32 pos)
{
	__u32 keylen, extlen, bodylen, kpos, op;

	if (!s)
		return KS_STEP_DONE;
	if (pos + KS_BIN_HDR > s->end)
		return ks_fail(ks_short_reason(s));
	op = ks_bin_op(KS_BYTE(s, pos + 1));
	keylen = (__u32)KS_BYTE(s, pos + 2) << 8 | KS_BYTE(s, pos + 3);
	extlen = KS_BYTE(s, pos + 4);
	bodylen = (__u32)KS_BYTE(s, pos + 8) << 24 |
		  (__u32)KS_BYTE(s, pos + 9) << 16 |
		  (__u32)KS_BYTE(s, pos + 10) << 8 | KS_BYTE(s, pos + 11);
	if (bodylen > (1U << 30) || extlen + keylen > bodylen)
		return ks_fail(KS_ERR_BAD_LENGTH);
	if (keylen > KS_MAX_KEY_LEN)
		return ks_fail(KS_ERR_KEY_TOO_LONG);
	if (keylen) {
		kpos = pos + KS_BIN_HDR + extlen;
		if (kpos + keylen > s->end)
			return ks_fail(ks_short_reason(s));
		ks_count_op(op, 0, 1, 0);
		ks_key_seen(s, kpos, keylen, op);
	}
	return ks_mc_next_request(s, op, KS_BIN_HDR + bodylen);
}

/* Text command words, matched on the first bytes of the request. */
struct ks_cmd {
	__u32 op;
	__u32 len; /* bytes of the word and the space after it */
};

static __always_inline struct ks_cmd ks_mc_match(__u64 w)
{
	__u64 w4 = w & 0xffffffff, rest = w >> 32;
	__u8 b2 = w >> 16, b4 = w >> 32;

	switch (w4) {
	case KS_S4('g', 'e', 't', ' '): return (struct ks_cmd){ KS_OP_GET, 4 };
	case KS_S4('g', 'a', 't', ' '): return (struct ks_cmd){ KS_OP_GAT, 4 };
	case KS_S4('s', 'e', 't', ' '): return (struct ks_cmd){ KS_OP_SET, 4 };
	case KS_S4('a', 'd', 'd', ' '): return (struct ks_cmd){ KS_OP_ADD, 4 };
	case KS_S4('c', 'a', 's', ' '): return (struct ks_cmd){ KS_OP_CAS, 4 };
	case KS_S4('g', 'e', 't', 's'):
		if (b4 == ' ')
			return (struct ks_cmd){ KS_OP_GETS, 5 };
		break;
	case KS_S4('g', 'a', 't', 's'):
		if (b4 == ' ')
			return (struct ks_cmd){ KS_OP_GATS, 5 };
		break;
	case KS_S4('i', 'n', 'c', 'r'):
		if (b4 == ' ')
			return (struct ks_cmd){ KS_OP_INCR, 5 };
		break;
	case KS_S4('d', 'e', 'c', 'r'):
		if (b4 == ' ')
			return (struct ks_cmd){ KS_OP_DECR, 5 };
		break;
	case KS_S4('t', 'o', 'u', 'c'):
		if ((rest & 0xffff) == KS_S2('h', ' '))
			return (struct ks_cmd){ KS_OP_TOUCH, 6 };
		break;
	case KS_S4('d', 'e', 'l', 'e'):
		if ((rest & 0xffffff) == (KS_S2('t', 'e') | ' ' << 16))
			return (struct ks_cmd){ KS_OP_DELETE, 7 };
		break;
	case KS_S4('a', 'p', 'p', 'e'):
		if ((rest & 0xffffff) == (KS_S2('n', 'd') | ' ' << 16))
			return (struct ks_cmd){ KS_OP_APPEND, 7 };
		break;
	case KS_S4('p', 'r', 'e', 'p'):
		if (rest == KS_S4('e', 'n', 'd', ' '))
			return (struct ks_cmd){ KS_OP_PREPEND, 8 };
		break;
	case KS_S4('r', 'e', 'p', 'l'):
		if (rest == KS_S4('a', 'c', 'e', ' '))
			return (struct ks_cmd){ KS_OP_REPLACE, 8 };
		break;
	/* keyless commands, told apart by their first four bytes */
	case KS_S4('s', 't', 'a', 't'):
	case KS_S4('v', 'e', 'r', 's'):
	case KS_S4('v', 'e', 'r', 'b'):
	case KS_S4('f', 'l', 'u', 's'):
	case KS_S4('q', 'u', 'i', 't'):
	case KS_S4('s', 'h', 'u', 't'):
	case KS_S4('c', 'a', 'c', 'h'):
	case KS_S4('s', 'l', 'a', 'b'):
	case KS_S4('l', 'r', 'u', '_'):
	case KS_S4('l', 'r', 'u', ' '):
	case KS_S4('w', 'a', 't', 'c'):
	case KS_S4('m', 'i', 's', 'b'):
		return (struct ks_cmd){ KS_OP_OTHER, 0 };
	}
	if (b2 == ' ') {
		switch (w & 0xffff) {
		case KS_S2('m', 'g'): return (struct ks_cmd){ KS_OP_MG, 3 };
		case KS_S2('m', 's'): return (struct ks_cmd){ KS_OP_MS, 3 };
		case KS_S2('m', 'd'): return (struct ks_cmd){ KS_OP_MD, 3 };
		case KS_S2('m', 'a'): return (struct ks_cmd){ KS_OP_MA, 3 };
		case KS_S2('m', 'e'): return (struct ks_cmd){ KS_OP_ME, 3 };
		}
	}
	if ((w & 0xffff) == KS_S2('m', 'n') && (b2 == '\r' || b2 == '\n'))
		return (struct ks_cmd){ KS_OP_MN, 0 };
	return (struct ks_cmd){ KS_OP_MAX, 0 };
}

/* At the start of a request: recognise it and parse it (or its first part). */
__noinline int ks_mc_command(struct ks_scratch *s)
{
	__u32 pos, avail;
	struct ks_cmd cmd;
	__u64 w;
	int p;

	if (!s)
		return KS_STEP_DONE;
	pos = s->off;
	s->req_start = pos;
	if (KS_BYTE(s, pos) == 0x80) {
		s->nreq++;
		return ks_mc_binary(s, pos);
	}
	/* Zero what lies past the payload: stale bytes must not match. */
	w = ks_win_word(s, pos);
	avail = s->end - pos;
	if (avail < 8)
		w &= (1ULL << (avail * 8)) - 1;
	cmd = ks_mc_match(w);
	if (cmd.op == KS_OP_MAX) {
		/* A TCP segment may begin inside a value or a split line. */
		if (s->nreq == 0 && s->proto == IPPROTO_TCP)
			return ks_fail(KS_ERR_MIDSTREAM);
		return ks_fail(KS_ERR_UNKNOWN_CMD);
	}
	s->nreq++;
	pos += cmd.len;

	switch (cmd.op) {
	case KS_OP_GAT:
	case KS_OP_GATS:
		/* "gat <exptime> <key>*": the keys follow the exptime */
		p = ks_mc_skip_token(s, pos);
		if (p < 0)
			return ks_fail(ks_short_reason(s));
		pos = p;
		/* fall through */
	case KS_OP_GET:
	case KS_OP_GETS:
		s->op = cmd.op;
		s->nkeys = 0;
		s->off = pos;
		s->state = KS_ST_KEYS;
		return KS_STEP_MORE;
	case KS_OP_SET:
	case KS_OP_ADD:
	case KS_OP_REPLACE:
	case KS_OP_APPEND:
	case KS_OP_PREPEND:
	case KS_OP_CAS:
		return ks_mc_storage(s, pos, cmd.op, 2);
	case KS_OP_MS:
		return ks_mc_storage(s, pos, cmd.op, 0);
	case KS_OP_MN:
	case KS_OP_OTHER:
		return ks_mc_no_key(s, pos, cmd.op);
	default:
		return ks_mc_one_key(s, pos, cmd.op);
	}
}

/* Parse every request in the window; returns requests recognised. */
__noinline int ks_mc_parse(struct ks_scratch *s)
{
	__u32 i;
	int r;

	if (!s)
		return 0;
	s->off = 0;
	s->state = KS_ST_COMMAND;
	s->nreq = 0;
	for (i = 0; i < KS_MAX_ITEMS; i++) {
		if (s->state == KS_ST_KEYS)
			r = ks_mc_key_list(s);
		else
			r = ks_mc_command(s);
		if (r != KS_STEP_MORE)
			return s->nreq;
	}
	ks_count_err(KS_ERR_ITEM_LIMIT);
	return s->nreq;
}

#endif
