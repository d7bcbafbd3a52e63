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

#define KS_BYTE(s, pos) ((s)->win[(pos)&KS_WIN_MASK])

/* Little-endian constants for matching command words in a loaded word. */
#define KS_S2(a, b)                ((__u64)(a) | (__u64)(b) << 8)
#define KS_S4(a, b, c, d)          (KS_S2(a, b) | KS_S2(c, d) << 16)
#define KS_W3(a, b, c)             (KS_S2(a, b) | (__u64)(c) << 16)
#define KS_W5(a, b, c, d, e)       (KS_S4(a, b, c, d) | (__u64)(e) << 32)
#define KS_W6(a, b, c, d, e, f)    (KS_W5(a, b, c, d, e) | (__u64)(f) << 40)
#define KS_W7(a, b, c, d, e, f, g) (KS_W6(a, b, c, d, e, f) | (__u64)(g) << 48)

#define KS_ONES  0x0101010101010101ULL
#define KS_HIGHS 0x8080808080808080ULL

/* "Need bytes past the window": what a parse helper returns when the
 * request or key it reads goes on beyond what it can see. */
#define KS_SHORT KS_NEG(KS_ERR_TRUNC_REQ)

/*
 * Word-at-a-time byte search. The lowest flagged byte is exact (a borrow
 * only ever flags bytes above a real match), and little-endian makes the
 * lowest byte the first in memory.
 */
static __always_inline __u64 ks_mask_delim(__u64 w)
{
	/* bytes <= 0x20: where a command word may end */
	return (w - 0x21 * KS_ONES) & ~w & KS_HIGHS;
}

static __always_inline __u64 ks_mask_byte(__u64 w, __u8 c)
{
	w ^= c * KS_ONES;
	return (w - KS_ONES) & ~w & KS_HIGHS;
}

static __always_inline __u64 ks_mask_lf(__u64 w)
{
	return ks_mask_byte(w, '\n');
}

/*
 * memcached's tokenizer splits a line on spaces alone and the line ends at
 * '\n' (one '\r' before it is dropped), so a key is any run of bytes but
 * those two: 0x10 or a tab inside a key is served, and so counted.
 */
static __always_inline __u64 ks_mask_token_end(__u64 w)
{
	return ks_mask_byte(w, ' ') | ks_mask_byte(w, '\n');
}

/* Index of the lowest flagged byte; m has flags only at bit 7 of bytes. */
static __always_inline __u32 ks_first_flagged(__u64 m)
{
	__u64 low = m & (~m + 1);

	/* (1 << 8k) times this constant has k in its top byte */
	return ((low >> 7) * 0x0001020304050607ULL) >> 56;
}

enum ks_scan {
	KS_SCAN_TOKEN = 0, /* a space or '\n' */
	KS_SCAN_LF,        /* '\n' */
	KS_SCAN_DELIM,     /* any byte <= 0x20 */
};

static __always_inline int ks_fail(__u32 reason)
{
	ks_count_err(reason);
	return KS_STEP_LOST;
}

/* The unit from cut on is unfinished: the stream layer carries it into
 * the next window or segment, or counts it truncated. */
static __always_inline int ks_cut(struct ks_scratch *s, __u32 cut)
{
	s->cut = cut;
	return KS_STEP_CUT;
}

/*
 * First position in [pos, min(limit, end)) holding what `what` (enum
 * ks_scan) looks for; -1 if there is none.
 */
__noinline int ks_mc_scan(struct ks_scratch *s, __u32 pos, __u32 limit,
			  __u32 what)
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
		if (what == KS_SCAN_LF)
			m = ks_mask_lf(w);
		else if (what == KS_SCAN_TOKEN)
			m = ks_mask_token_end(w);
		else
			m = ks_mask_delim(w);
		if (m) {
			p += ks_first_flagged(m);
			return p < stop ? (int)p : -1;
		}
	}
	return -1;
}

/*
 * First position at or after pos that is not a space (may be end). memcached
 * takes any run of spaces between tokens, so the whole window is searched,
 * a word at a time.
 */
__noinline int ks_mc_skip_spaces(struct ks_scratch *s, __u32 pos)
{
	__u32 i, p;
	__u64 m;

	if (!s)
		return -1;
	for (i = 0; i < KS_WIN / 8; i++) {
		p = pos + i * 8;
		if (p >= s->end)
			return s->end;
		m = ks_win_word(s, p) ^ (' ' * KS_ONES);
		if (m) {
			/* a flag at bit 7 of every byte that is not a space */
			m = (((m & ~KS_HIGHS) + ~KS_HIGHS) | m) & KS_HIGHS;
			p += ks_first_flagged(m);
			return p < s->end ? p : s->end;
		}
	}
	return s->end;
}

/* Requests have one space between tokens: look at two bytes inline. */
static __always_inline int ks_mc_skip_sp(struct ks_scratch *s, __u32 pos)
{
	if (pos >= s->end || KS_BYTE(s, pos) != ' ')
		return pos;
	if (pos + 1 >= s->end || KS_BYTE(s, pos + 1) != ' ')
		return pos + 1;
	return ks_mc_skip_spaces(s, pos + 2);
}

/*
 * Is pos the end of the line: '\n', or '\r' then '\n'? Returns the
 * position after the '\n', 0 if pos is not the line end, or KS_SHORT
 * when a '\r' is the last byte we have.
 */
static __always_inline int ks_mc_at_eol(struct ks_scratch *s, __u32 pos)
{
	__u8 c;

	if (pos >= s->end)
		return KS_SHORT;
	c = KS_BYTE(s, pos);
	if (c == '\n')
		return pos + 1;
	if (c != '\r')
		return 0;
	if (pos + 1 >= s->end)
		return KS_SHORT;
	return KS_BYTE(s, pos + 1) == '\n' ? (int)pos + 2 : 0;
}

/*
 * A decimal length field at pos (after spaces). Returns the number, or
 * -reason-1; s->tok_end is set to the byte after it.
 */
__noinline int ks_mc_number(struct ks_scratch *s, __u32 pos)
{
	__u64 v = 0;
	__s32 v32;
	__u32 i, p;
	__u8 c;
	int at;

	if (!s)
		return KS_NEG(KS_ERR_BAD_LENGTH);
	at = ks_mc_skip_sp(s, pos);
	if (at < 0)
		return KS_NEG(KS_ERR_BAD_LENGTH);
	for (i = 0; i <= KS_MAX_DIGITS; i++) {
		p = at + i;
		if (p >= s->end)
			return KS_SHORT;
		c = KS_BYTE(s, p);
		if (c < '0' || c > '9') {
			/* memcached's strtoul check takes white space or NUL
			 * after the digits, nothing else */
			if (i == 0 ||
			    (c != ' ' && c != 0 && (c < '\t' || c > '\r')))
				return KS_NEG(KS_ERR_BAD_LENGTH);
			s->tok_end = p;
			/* safe_strtol: strtol's 64 bits cut to 32 with no
			 * range check, so 4294967301 is a length of 5;
			 * negative or above INT_MAX - 2 is refused */
			v32 = (__s32)(__u32)v;
			return v32 < 0 || v32 > 0x7ffffffd
				       ? KS_NEG(KS_ERR_BAD_LENGTH)
				       : v32;
		}
		/* past LONG_MAX strtol says ERANGE, which is refused */
		if (v > 922337203685477580ULL ||
		    (v == 922337203685477580ULL && c > '7'))
			return KS_NEG(KS_ERR_BAD_LENGTH);
		v = v * 10 + (c - '0');
	}
	return KS_NEG(KS_ERR_BAD_LENGTH);
}

/* Past the token at pos (after spaces): the space or '\n' after it. */
static __always_inline int ks_mc_skip_token(struct ks_scratch *s, __u32 pos)
{
	int at = ks_mc_skip_sp(s, pos);

	if (at < 0)
		return -1;
	return ks_mc_scan(s, at, at + KS_WIN, KS_SCAN_TOKEN);
}

/*
 * The tokens from pos to the end of the line, as memcached's tokenizer
 * sees them: s->ntok of them (counting stops at KS_MAX_LINE_TOKENS), the
 * first two in s->tok_pos/tok_len, s->eol after the '\n'. Returns 0 or
 * KS_SHORT when the line end is past the window.
 */
#define KS_MAX_LINE_TOKENS 24 /* memcached's MAX_TOKENS */
__noinline int ks_mc_tokens(struct ks_scratch *s, __u32 pos)
{
	__u32 i, n = 0, len;
	int at, e, eol;

	if (!s)
		return KS_SHORT;
	for (i = 0; i < KS_MAX_LINE_TOKENS + 1; i++) {
		at = ks_mc_skip_sp(s, pos);
		if (at < 0)
			return KS_SHORT;
		eol = ks_mc_at_eol(s, at);
		if (eol < 0)
			return KS_SHORT;
		if (eol > 0) {
			s->ntok = n;
			s->eol = eol;
			return 0;
		}
		e = ks_mc_scan(s, at, s->end, KS_SCAN_TOKEN);
		if (e < 0)
			return KS_SHORT;
		len = e - at;
		/* a token that ends the line gives up its '\r' */
		if (KS_BYTE(s, e) == '\n' && len > 1 &&
		    KS_BYTE(s, e - 1) == '\r')
			len--;
		if (n < 2) {
			s->tok_pos[n & 1] = at;
			s->tok_len[n & 1] = len;
		}
		n++;
		pos = at + len;
	}
	/* more tokens than memcached keeps: no command we count takes them */
	s->ntok = n;
	e = ks_mc_scan(s, pos, s->end, KS_SCAN_LF);
	if (e < 0)
		return KS_SHORT;
	s->eol = e + 1;
	return 0;
}

/* Does the token at pos of len bytes equal the 7 bytes of "noreply"? */
static __always_inline bool ks_mc_is_noreply(struct ks_scratch *s, __u32 pos,
					     __u32 len)
{
	__u64 w = ks_win_word(s, pos) & 0x00ffffffffffffffULL;

	return len == 7 && w == 0x796c7065726f6eULL; /* "noreply" */
}

/* Is the token all digits (at most max of them), as safe_strtoul wants? */
__noinline int ks_mc_is_uint(struct ks_scratch *s, __u32 pos, __u32 len,
			     __u32 max)
{
	__u32 i;
	__u8 c;

	if (!s || len == 0 || len > max)
		return false;
	for (i = 0; i < 20; i++) {
		if (i >= len)
			break;
		c = KS_BYTE(s, pos + i);
		if (c < '0' || c > '9')
			return false;
	}
	return true;
}

/* ... or a signed one, as safe_strtol wants for an exptime */
static __always_inline bool ks_mc_is_int(struct ks_scratch *s, __u32 pos,
					 __u32 len)
{
	if (len > 1 && KS_BYTE(s, pos) == '-')
		return ks_mc_is_uint(s, pos + 1, len - 1, 10);
	return ks_mc_is_uint(s, pos, len, 10);
}

/*
 * One key at pos (after spaces) of a text command: checks it and records
 * where it is (s->key_pos, s->key_len) but neither counts nor samples it,
 * so a request that turns out malformed leaves no trace in the sketch.
 * Returns the position of the space or '\n' after the key (its '\r', for
 * a key that ends the line), or -reason-1.
 */
__noinline int ks_mc_key_span(struct ks_scratch *s, __u32 pos)
{
	__u32 stop, len;
	int at, e;

	if (!s)
		return KS_NEG(KS_ERR_BAD_KEY);
	at = ks_mc_skip_sp(s, pos);
	if (at < 0)
		return KS_NEG(KS_ERR_BAD_KEY);
	if ((__u32)at >= s->end)
		return KS_SHORT;
	/* 250 bytes, a '\r' and the '\n' */
	stop = at + KS_MAX_KEY_LEN + 2;
	e = ks_mc_scan(s, at, stop, KS_SCAN_TOKEN);
	if (e < 0)
		return stop <= s->end ? KS_NEG(KS_ERR_KEY_TOO_LONG) : KS_SHORT;
	len = e - at;
	if (KS_BYTE(s, e) == '\n' && len && KS_BYTE(s, e - 1) == '\r') {
		len--;
		e--;
	}
	if (len == 0)
		return KS_NEG(KS_ERR_BAD_KEY);
	if (len > KS_MAX_KEY_LEN)
		return KS_NEG(KS_ERR_KEY_TOO_LONG);
	s->key_pos = at;
	s->key_len = len;
	return e;
}

/* The key last found by ks_mc_key_span() belongs to a valid request. */
static __always_inline void ks_mc_take_key(struct ks_scratch *s, __u32 op)
{
	ks_key_at(s, s->key_pos, s->key_len, op);
}

/* Go on at next, the start of the next request. */
static __always_inline int ks_mc_goto(struct ks_scratch *s, __u32 next)
{
	s->state = KS_ST_COMMAND;
	if (next == s->end)
		return KS_STEP_DONE;
	if (next > s->end) {
		/* a data block past the window: the stream layer skips it
		 * without reading it */
		s->skip_to = next;
		return KS_STEP_SKIP;
	}
	s->off = next;
	return KS_STEP_MORE;
}

/*
 * Count a finished request of len bytes and move to the next one. A
 * request whose data block runs past the window counts when the block is
 * through (s->pend), as memcached executes it only then: a stream that
 * ends inside the block stored nothing. Its key was taken at its line, so
 * a write to a hot key still marks it dirty at once.
 */
static __always_inline int ks_mc_next_request(struct ks_scratch *s, __u32 op,
					      __u32 keys, __u32 len)
{
	if (s->req_start + len > s->end) {
		s->pend = 1;
		s->pend_op = op;
		s->pend_keys = keys;
		s->pend_len = len;
	} else {
		ks_count_op(op, 1, keys, len);
	}
	return ks_mc_goto(s, s->req_start + len);
}

/*
 * memcached answers this line with an error and reads on after it: count
 * the reason, not the op, and go on after the '\n' (memcached does not
 * read a data block for a storage line it refused: what follows is parsed
 * as the next command, by it and by us).
 */
__noinline int ks_mc_refuse(struct ks_scratch *s, __u32 reason)
{
	int lf;

	if (!s)
		return KS_STEP_LOST;
	ks_count_err(reason);
	lf = ks_mc_scan(s, s->off > s->req_start ? s->off : s->req_start,
			s->end, KS_SCAN_LF);
	if (lf >= 0)
		return ks_mc_goto(s, lf + 1);
	/* the rest of the line arrives later: drop it as it comes */
	s->state = KS_ST_LINE;
	return ks_cut(s, s->end);
}

/* A helper's negative result: more bytes needed, or a refusal. */
static __always_inline int ks_mc_stop(struct ks_scratch *s, int neg)
{
	if (neg == KS_SHORT)
		return ks_cut(s, s->req_start);
	return ks_mc_refuse(s, KS_REASON(neg));
}

/* KS_ST_LINE: the rest of a refused line, up to its '\n'. */
static __always_inline int ks_mc_drop_line(struct ks_scratch *s)
{
	int lf = ks_mc_scan(s, s->off, s->end, KS_SCAN_LF);

	if (lf < 0)
		return ks_cut(s, s->end);
	return ks_mc_goto(s, lf + 1);
}

/*
 * Storage commands: "<cmd> <key> <flags> <exptime> <bytes> [noreply]",
 * "cas <key> <flags> <exptime> <bytes> <cas> [noreply]" and "ms <key>
 * <datalen> <flags>*", each followed by a data block and "\r\n" that we
 * skip by its length to reach the next pipelined request.
 */
__noinline int ks_mc_storage(struct ks_scratch *s, __u32 pos, __u32 op)
{
	__u32 len, tail, i, nt, want;
	int p, bytes;

	if (!s)
		return KS_STEP_LOST;
	p = ks_mc_key_span(s, pos);
	if (p < 0)
		return ks_mc_stop(s, p);
	if (op != KS_OP_MS) {
		/* flags and exptime, as memcached checks them */
		for (i = 0; i < 2; i++) {
			p = ks_mc_skip_sp(s, p);
			if (p < 0 || (__u32)p >= s->end)
				return ks_cut(s, s->req_start);
			nt = ks_mc_scan(s, p, s->end, KS_SCAN_TOKEN);
			if ((int)nt < 0)
				return ks_cut(s, s->req_start);
			if (ks_mc_at_eol(s, p) > 0 ||
			    !(i ? ks_mc_is_int(s, p, nt - p)
				: ks_mc_is_uint(s, p, nt - p, 10)))
				return ks_mc_refuse(s, KS_ERR_REFUSED);
			p = nt;
		}
	}
	bytes = ks_mc_number(s, p);
	if (bytes < 0)
		return ks_mc_stop(s, bytes);
	if (ks_mc_tokens(s, s->tok_end) < 0)
		return ks_cut(s, s->req_start);
	if (op != KS_OP_MS) {
		/* cas wants its unique; anything may follow as "noreply" */
		want = op == KS_OP_CAS;
		nt = s->ntok;
		if (nt < want || nt > want + 1 ||
		    (want &&
		     !ks_mc_is_uint(s, s->tok_pos[0], s->tok_len[0], 20)))
			return ks_mc_refuse(s, KS_ERR_REFUSED);
	}
	len = s->eol - s->req_start + bytes + 2;
	/* A data block must end in "\r\n"; check what we can see of it.
	 * memcached reads it all the same, so the stream stays in step. */
	tail = s->req_start + len - 2;
	if ((tail < s->end && KS_BYTE(s, tail) != '\r') ||
	    (tail + 1 < s->end && KS_BYTE(s, tail + 1) != '\n')) {
		ks_count_err(KS_ERR_BAD_LENGTH);
		return ks_mc_goto(s, s->req_start + len);
	}
	ks_mc_take_key(s, op);
	return ks_mc_next_request(s, op, 1, len);
}

/*
 * "<cmd> <key> [args...]": delete, incr, decr, touch, mg, md, ma, me, with
 * the arguments memcached accepts for each; anything else is refused.
 */
__noinline int ks_mc_one_key(struct ks_scratch *s, __u32 pos, __u32 op)
{
	__u32 nt, a0, l0, a1, l1;
	bool ok = true, z0, n0, n1;
	int p;

	if (!s)
		return KS_STEP_LOST;
	p = ks_mc_key_span(s, pos);
	if (p < 0)
		return ks_mc_stop(s, p);
	if (ks_mc_tokens(s, p) < 0)
		return ks_cut(s, s->req_start);
	nt = s->ntok;
	a0 = s->tok_pos[0];
	l0 = s->tok_len[0];
	a1 = s->tok_pos[1];
	l1 = s->tok_len[1];
	switch (op) {
	case KS_OP_DELETE:
		/* "delete <key> [0] [noreply]" */
		z0 = nt >= 1 && l0 == 1 && KS_BYTE(s, a0) == '0';
		n0 = nt >= 1 && ks_mc_is_noreply(s, a0, l0);
		n1 = nt >= 2 && ks_mc_is_noreply(s, a1, l1);
		ok = nt == 0 || (nt == 1 && (z0 || n0)) ||
		     (nt == 2 && z0 && n1);
		break;
	case KS_OP_INCR:
	case KS_OP_DECR:
		ok = (nt == 1 || nt == 2) && ks_mc_is_uint(s, a0, l0, 20);
		break;
	case KS_OP_TOUCH:
		ok = (nt == 1 || nt == 2) && ks_mc_is_int(s, a0, l0);
		break;
	}
	if (!ok)
		return ks_mc_refuse(s, KS_ERR_REFUSED);
	ks_mc_take_key(s, op);
	return ks_mc_next_request(s, op, 1, s->eol - s->req_start);
}

/* Low n (<= 8) bytes of the word at pos. */
static __always_inline __u64 ks_mc_word_at(struct ks_scratch *s, __u32 pos,
					   __u32 n)
{
	__u64 w = ks_win_word(s, pos);

	return n >= 8 ? w : w & ((1ULL << (n * 8)) - 1);
}

/*
 * "stats" takes no argument or one of its subcommands; anything else is
 * answered ERROR. Subcommands longer than a word are told by their first
 * eight bytes and their length.
 */
static __always_inline bool ks_mc_stats_ok(struct ks_scratch *s)
{
	__u32 len = s->tok_len[0];
	__u64 w;

	if (s->ntok == 0)
		return true;
	w = ks_mc_word_at(s, s->tok_pos[0], len);
	switch (len) {
	case 5:
		return w == KS_W5('r', 'e', 's', 'e', 't') ||
		       w == KS_W5('c', 'o', 'n', 'n', 's') ||
		       w == KS_W5('i', 't', 'e', 'm', 's') ||
		       w == KS_W5('s', 'l', 'a', 'b', 's') ||
		       w == KS_W5('s', 'i', 'z', 'e', 's');
	case 6:
		return w == KS_W6('d', 'e', 't', 'a', 'i', 'l');
	case 8:
		return w == (KS_W7('s', 'e', 't', 't', 'i', 'n', 'g') |
			     (__u64)'s' << 56) ||
		       w == (KS_W7('e', 'x', 't', 's', 't', 'o', 'r') |
			     (__u64)'e' << 56);
	case 9: /* cachedump */
		return w == (KS_W7('c', 'a', 'c', 'h', 'e', 'd', 'u') |
			     (__u64)'m' << 56);
	case 12: /* sizes_enable */
	case 13: /* sizes_disable */
		return (w & 0xffffffffffffULL) ==
		       (KS_W5('s', 'i', 'z', 'e', 's') | (__u64)'_' << 40);
	}
	return false;
}

/*
 * A command with no key (mn, stats, version, ...): to the end of line.
 * is_stats: the word was "stats", whose argument memcached checks.
 */
static __always_inline int ks_mc_no_key(struct ks_scratch *s, __u32 pos,
					__u32 op, bool is_stats)
{
	int lf;

	if (is_stats) {
		if (ks_mc_tokens(s, pos) < 0)
			return ks_cut(s, s->req_start);
		if (!ks_mc_stats_ok(s))
			return ks_mc_refuse(s, KS_ERR_REFUSED);
		return ks_mc_next_request(s, op, 0, s->eol - s->req_start);
	}
	lf = ks_mc_scan(s, pos, s->end, KS_SCAN_LF);
	if (lf < 0)
		return ks_cut(s, s->req_start);
	return ks_mc_next_request(s, op, 0, lf + 1 - s->req_start);
}

/*
 * ---- key runs: the unsampled middle of a multi-get, a word at a time ----
 *
 * ks_mc_key_list() takes one key per parse step: three BPF-to-BPF calls
 * and a scan, about 20 ns a 16-byte key. Most keys of a multi-get need
 * nothing but counting (not due for sampling, no hot table), so a run
 * counts whole keys from flags over 8-byte words, with no call per key,
 * and leaves s->off on the space after the last key it counted; the key
 * due for sampling, the line's end and anything unusual are left to
 * ks_mc_key_list(), so the two can never count differently.
 */
/* Groups of four words a run may count, 576 bytes; up to three words
 * after them too. */
#define KS_RUN_GROUPS 18
/* Groups without a key's space a run may pass before it stops: a key
 * that ends in the next group would be at most 32 * 5 + 62 = 222 bytes.
 * memcached refuses keys over 250 bytes, and the key list step reports
 * them; it also takes the longer ones a run leaves. */
#define KS_RUN_GAP 5

#define KS_LOW7 0x7f7f7f7f7f7f7f7fULL

/* Bytes flagged (bit 7) in m. */
static __always_inline __u64 ks_flag_count(__u64 m)
{
	return ((m >> 7) * KS_ONES) >> 56;
}

/*
 * The helpers below make 0/1 values by arithmetic the compiler cannot see
 * through: a compare would be a branch (BPF has no setcc), and every
 * branch in the run's loop splits the verifier's walk of the words after
 * it; a known 0/1 would become a shift-and-mask, and a [-1, 0] mask ANDed
 * with a known value makes the 6.18 verifier fork both ways.
 */

/* 1 when a - b is negative (a, b below 2^63), else 0. */
static __always_inline __u64 ks_below(__u64 a, __u64 b)
{
	a -= b;
	KS_OPAQUE(a);
	a >>= 63;
	KS_OPAQUE(a);
	return a;
}

/* 1 when v (below 2^63) is 0, else 0. */
static __always_inline __u64 ks_is_zero(__u64 v)
{
	v -= 1;
	KS_OPAQUE(v);
	v >>= 63;
	KS_OPAQUE(v);
	return v;
}

/* 1 when gap (below 123) is over KS_RUN_GAP, else 0. */
static __always_inline __u64 ks_gap_over(__u64 gap)
{
	gap += 128 - (KS_RUN_GAP + 1);
	KS_OPAQUE(gap);
	gap >>= 7;
	KS_OPAQUE(gap);
	return gap;
}

/* A flag for every byte of w above 0x20 (exact): not a space, and in a
 * word with no byte below 0x20 the others are spaces. */
static __always_inline __u64 ks_mask_above_sp(__u64 w)
{
	return (((w & KS_LOW7) + 0x5f * KS_ONES) | w) & KS_HIGHS;
}

/* A flag for each key's space in a word of key bytes and spaces: a
 * space whose byte before is not one (prev: that byte's flag, at bit 7
 * alone). */
static __always_inline __u64 ks_key_spaces(__u64 ks, __u64 prev)
{
	return (ks ^ KS_HIGHS) & ((ks << 8) | prev);
}

/* The keys' spaces in the word at pos of the window, the byte before it
 * taken as it is. */
static __always_inline __u64 ks_key_spaces_at(struct ks_scratch *s, __u32 pos)
{
	return ks_key_spaces(ks_mask_above_sp(ks_win_word(s, pos)),
			     ks_mask_above_sp(ks_win_word(s, pos - 1)) & 0x80);
}

/*
 * One word of a run: its keys' spaces (>> 7, a count per byte) added to
 * *f; *ok keeps bit 7 of a byte clear where a byte is below 0x20; *c is
 * the flag of the byte before and becomes the word's last byte's.
 */
static __always_inline void ks_run_word(__u64 w, __u64 *f, __u64 *ok, __u64 *c)
{
	__u64 ks = ks_mask_above_sp(w);

	*ok &= ((w & KS_LOW7) + 0x60 * KS_ONES) | w;
	*f += ks_key_spaces(ks, *c) >> 7;
	*c = ks >> 56;
}

/*
 * Counts the complete keys from s->off (a space after a key) as
 * ks_mc_key_list() would, at most s->countdown - 1 of them so the key due
 * for sampling is its. Returns the keys counted.
 *
 * A key is counted at its space: a space whose byte before is not one.
 * Four words at a time: their flags, one count, three stop conditions
 * (a byte below 0x20, as '\n' or a key's '\r' or tab; the sampling
 * budget; a key that could pass 222 bytes) and the groups since the last
 * flagged one; then the words of the group that stopped one at a time.
 * Where the last key counted ends is found once, after.
 */
__noinline int ks_mc_key_run(struct ks_scratch *s)
{
	__u64 f, ok, c, n, left, budget, i, prev = 0, gap = 0;
	__u32 cd0, cd, p, end, last, at, x;
	__u8 *q;

	if (!s || s->hot)
		return 0;
	cd = cd0 = s->countdown;
	if (cd == 0 || cd > s->sample_n)
		cd = s->sample_n;
	p = s->off;
	/* a window never holds more; below it the word at p + 8i needs no
	 * mask to be the one at (p + 8i) & KS_WIN_MASK (and a min() here
	 * would make the verifier walk the loop twice) */
	end = s->end;
	if (end > KS_WIN)
		return 0;
	/* a continued key list's window begins inside a key */
	if (cd <= 1 || p >= end || KS_BYTE(s, p) != ' ')
		return 0;
	budget = left = cd - 1;
	/*
	 * The window's end stops a run as a '\n' does: nothing reads past
	 * s->end but a run, and a bound of its own would be another test
	 * per group (and its min() with the groups, two walks of the loop).
	 */
	s->win[end] = '\n';
	q = &s->win[p & KS_WIN_MASK];
	for (i = 0; i < KS_RUN_GROUPS; i++) {
		f = 0;
		ok = ~0ULL;
		c = prev;
		ks_run_word(*(__u64 *)__builtin_assume_aligned(q, 8), &f, &ok,
			    &c);
		ks_run_word(*(__u64 *)__builtin_assume_aligned(q + 8, 8), &f,
			    &ok, &c);
		ks_run_word(*(__u64 *)__builtin_assume_aligned(q + 16, 8), &f,
			    &ok, &c);
		ks_run_word(*(__u64 *)__builtin_assume_aligned(q + 24, 8), &f,
			    &ok, &c);
		n = (f * KS_ONES) >> 56;
		if (((ok & KS_HIGHS) ^ KS_HIGHS) | ks_below(left, n) |
		    ks_gap_over(gap))
			break;
		left -= n;
		gap = (gap + 1) * ks_is_zero(n);
		prev = c;
		q += 32;
	}
	/*
	 * Through memory (s->off and s->countdown, set for good below), so
	 * that the verifier walks the rest once, not once for every exit of
	 * the loop: the end of the last group with a key's space, where the
	 * group that stopped begins, whether a key there could be too long,
	 * the flag of the byte before it; and the budget left.
	 */
	s->off = (p + (__u32)(i - gap) * 32) | (p + (__u32)i * 32) << 12 |
		 (__u32)ks_gap_over(gap) << 24 | (__u32)prev << 18;
	s->countdown = left + 1;
	__asm__ volatile("" ::: "memory");
	x = *(volatile __u32 *)&s->off;
	left = *(volatile __u32 *)&s->countdown - 1;
	last = x & 0xfff;
	at = (x >> 12) & 0xfff;
	prev = (x >> 18) & 0x80;
	/* the words at `at` one at a time: their group stopped, or they
	 * follow the last group a run counts */
	if (!((x >> 24) & 1) && at <= KS_WIN) {
		q = &s->win[at];
		for (i = 0; i < 3; i++) {
			f = 0;
			ok = ~0ULL;
			c = prev;
			ks_run_word(*(__u64 *)__builtin_assume_aligned(q, 8),
				    &f, &ok, &c);
			n = (f * KS_ONES) >> 56;
			if (((ok & KS_HIGHS) ^ KS_HIGHS) || n > left)
				break;
			left -= n;
			prev = c;
			q += 8;
			at += 8;
			if (n)
				last = at;
		}
	}
	n = budget - left;
	if (!n || last < 8 || last > KS_WIN) {
		s->off = p;
		s->countdown = cd0;
		return 0;
	}
	s->countdown = cd - (__u32)n;
	s->nkeys += n;
	s->pkt_keys += n;
	/* the space after the last key counted: the highest flag of the
	 * last of its words that has one (the byte before p is a key's:
	 * the flag it gives p is never the highest); the masks of the
	 * window's reads stay, for the verifier */
	KS_OPAQUE(last);
	for (i = 0; i < 3; i++) {
		f = ks_key_spaces_at(s, last - 8);
		if (f)
			break;
		last -= 8;
	}
	if (!f)
		f = ks_key_spaces_at(s, last - 8);
	f |= f >> 8;
	f |= f >> 16;
	f |= f >> 32;
	s->off = last - 9 + ks_flag_count(f);
	return n;
}

/* A key list's line through at eol, the byte after its '\n'. */
static __always_inline int ks_mc_list_end(struct ks_scratch *s, int eol)
{
	ks_count_op(s->op, 1, s->nkeys, s->acc + eol - s->req_start);
	return ks_mc_goto(s, eol);
}

/* One step inside a get/gets/gat/gats key list: a key, with the line end
 * right after it, or the line end. */
__noinline int ks_mc_key_list(struct ks_scratch *s)
{
	int at, p, eol;

	if (!s)
		return KS_STEP_LOST;
	/* after a list's first key, where more may follow */
	if (s->nkeys && !s->hot && s->off < s->end && KS_BYTE(s, s->off) == ' ')
		ks_mc_key_run(s);
	at = ks_mc_skip_sp(s, s->off);
	if (at < 0)
		return ks_fail(KS_ERR_BAD_KEY);
	eol = ks_mc_at_eol(s, at);
	if (eol < 0)
		return ks_cut(s, at);
	if (eol > 0) {
		/* "get" alone is answered ERROR, "gat 10" alone END */
		if (s->nkeys == 0 && s->op != KS_OP_GAT && s->op != KS_OP_GATS)
			return ks_mc_refuse(s, KS_ERR_BAD_KEY);
		return ks_mc_list_end(s, eol);
	}
	p = ks_mc_key_span(s, at);
	if (p == KS_SHORT)
		return ks_cut(s, at);
	if (p < 0) {
		/* memcached stops at a bad key; those before it were served */
		if (s->nkeys)
			ks_count_op(s->op, 0, s->nkeys, 0);
		s->nkeys = 0;
		return ks_mc_refuse(s, KS_REASON(p));
	}
	/* Keys of a get are served as they arrive: take each at once. */
	s->nkeys++;
	ks_mc_take_key(s, s->op);
	s->off = p;
	/* the line's end right after the key ends the request in this step,
	 * not the next: a call and its return fewer a request, 8 ns where
	 * returns are mitigated (issue 27); still one key a step */
	eol = ks_mc_at_eol(s, p);
	if (eol > 0)
		return ks_mc_list_end(s, eol);
	return KS_STEP_MORE;
}

static __always_inline __u32 ks_bin_op(__u8 opcode)
{
	switch (opcode) {
	case 0x00:
	case 0x09:
	case 0x0c:
	case 0x0d: /* get getq getk getkq */
		return KS_OP_GET;
	case 0x01:
	case 0x11:
		return KS_OP_SET;
	case 0x02:
	case 0x12:
		return KS_OP_ADD;
	case 0x03:
	case 0x13:
		return KS_OP_REPLACE;
	case 0x04:
	case 0x14:
		return KS_OP_DELETE;
	case 0x05:
	case 0x15:
		return KS_OP_INCR;
	case 0x06:
	case 0x16:
		return KS_OP_DECR;
	case 0x0e:
	case 0x19:
		return KS_OP_APPEND;
	case 0x0f:
	case 0x1a:
		return KS_OP_PREPEND;
	case 0x1c:
		return KS_OP_TOUCH;
	case 0x1d:
	case 0x1e:
	case 0x23:
	case 0x24: /* gat gatq gatk gatkq */
		return KS_OP_GAT;
	default: /* quit, flush, noop, version, stat, verbosity, sasl, ... */
		return KS_OP_OTHER;
	}
}

/*
 * Binary protocol request: 24-byte header, extras, key, value. A header
 * whose lengths lie makes memcached close the connection, so the stream
 * is lost; a request it refuses has its body read and skipped, as here.
 */
__noinline int ks_mc_binary(struct ks_scratch *s, __u32 pos)
{
	__u32 keylen, extlen, bodylen, kpos, op;

	if (!s)
		return KS_STEP_LOST;
	if (pos + KS_BIN_HDR > s->end)
		return ks_cut(s, pos);
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
	if (!keylen) {
		/* every classified opcode names a key; the rest have none */
		if (op == KS_OP_OTHER)
			return ks_mc_next_request(s, op, 0,
						  KS_BIN_HDR + bodylen);
		ks_count_err(KS_ERR_BAD_KEY);
		return ks_mc_goto(s, pos + KS_BIN_HDR + bodylen);
	}
	kpos = pos + KS_BIN_HDR + extlen;
	if (kpos + keylen > s->end)
		return ks_cut(s, pos);
	ks_key_at(s, kpos, keylen, op);
	return ks_mc_next_request(s, op, 1, KS_BIN_HDR + bodylen);
}

/* Text command words, matched on the first bytes of the request. */
struct ks_cmd {
	__u32 op;  /* KS_OP_MAX: not a command */
	__u32 len; /* bytes of the word; the key parse skips the spaces */
};

/*
 * w holds the first 8 bytes of the request; n is the length of its first
 * word (the bytes before the first byte <= 0x20). A word must be followed
 * by a space or the line end, as memcached's tokenizer wants.
 */
static __always_inline __u32 ks_mc_word_op(__u64 word, __u32 n)
{
	switch (n) {
	case 2:
		switch (word) {
		case KS_S2('m', 'g'):
			return KS_OP_MG;
		case KS_S2('m', 's'):
			return KS_OP_MS;
		case KS_S2('m', 'd'):
			return KS_OP_MD;
		case KS_S2('m', 'a'):
			return KS_OP_MA;
		case KS_S2('m', 'e'):
			return KS_OP_ME;
		case KS_S2('m', 'n'):
			return KS_OP_MN;
		}
		break;
	case 3:
		switch (word) {
		case KS_W3('g', 'e', 't'):
			return KS_OP_GET;
		case KS_W3('g', 'a', 't'):
			return KS_OP_GAT;
		case KS_W3('s', 'e', 't'):
			return KS_OP_SET;
		case KS_W3('a', 'd', 'd'):
			return KS_OP_ADD;
		case KS_W3('c', 'a', 's'):
			return KS_OP_CAS;
		}
		break;
	case 4:
		switch (word) {
		case KS_S4('g', 'e', 't', 's'):
			return KS_OP_GETS;
		case KS_S4('g', 'a', 't', 's'):
			return KS_OP_GATS;
		case KS_S4('i', 'n', 'c', 'r'):
			return KS_OP_INCR;
		case KS_S4('d', 'e', 'c', 'r'):
			return KS_OP_DECR;
		}
		break;
	case 5:
		if (word == KS_W5('t', 'o', 'u', 'c', 'h'))
			return KS_OP_TOUCH;
		break;
	case 6:
		if (word == KS_W6('d', 'e', 'l', 'e', 't', 'e'))
			return KS_OP_DELETE;
		if (word == KS_W6('a', 'p', 'p', 'e', 'n', 'd'))
			return KS_OP_APPEND;
		break;
	case 7:
		if (word == KS_W7('p', 'r', 'e', 'p', 'e', 'n', 'd'))
			return KS_OP_PREPEND;
		if (word == KS_W7('r', 'e', 'p', 'l', 'a', 'c', 'e'))
			return KS_OP_REPLACE;
		break;
	}
	/* keyless commands of up to 8 bytes, by their whole word */
	switch (n) {
	case 3:
		if (word == KS_W3('l', 'r', 'u'))
			return KS_OP_OTHER;
		break;
	case 4:
		if (word == KS_S4('q', 'u', 'i', 't'))
			return KS_OP_OTHER;
		if (word == KS_S4('b', 'g', 'e', 't')) /* a get, to memcached */
			return KS_OP_GET;
		break;
	case 5:
		if (word == KS_W5('s', 't', 'a', 't', 's') ||
		    word == KS_W5('s', 'l', 'a', 'b', 's') ||
		    word == KS_W5('w', 'a', 't', 'c', 'h'))
			return KS_OP_OTHER;
		break;
	case 7:
		if (word == KS_W7('v', 'e', 'r', 's', 'i', 'o', 'n'))
			return KS_OP_OTHER;
		break;
	case 8:
		/* extstore, misbehave and debugtime exist only in builds
		 * with them (Debian's has none): ERROR, unknown */
		if (word == (KS_W7('s', 'h', 'u', 't', 'd', 'o', 'w') |
			     (__u64)'n' << 56))
			return KS_OP_OTHER;
		break;
	}
	return KS_OP_MAX;
}

/*
 * The keyless commands longer than a word: by their first eight bytes, the
 * length the whole word must have (0: none) and, in *tail, the bytes after
 * the eighth it must end with.
 */
static __always_inline __u32 ks_mc_long_word(__u64 w, __u64 *tail)
{
#define KS_W8(a, b, c, d, e, f, g, h)                                          \
	(KS_W7(a, b, c, d, e, f, g) | (__u64)(h) << 56)
	switch (w) {
	case KS_W8('v', 'e', 'r', 'b', 'o', 's', 'i', 't'): /* verbosity */
		*tail = 'y';
		return 9;
	case KS_W8('f', 'l', 'u', 's', 'h', '_', 'a', 'l'): /* flush_all */
		*tail = 'l';
		return 9;
	case KS_W8('l', 'r', 'u', '_', 'c', 'r', 'a', 'w'): /* lru_crawler */
		*tail = KS_W3('l', 'e', 'r');
		return 11;
	case KS_W8('c', 'a', 'c', 'h', 'e', '_', 'm', 'e'): /* cache_memlimit */
		*tail = KS_W6('m', 'l', 'i', 'm', 'i', 't');
		return 14;
	}
	*tail = 0;
	return 0;
#undef KS_W8
}

/*
 * avail (>= 1) bytes of w are payload. Bytes past them are set to 'A' so
 * that stale window bytes neither end a word nor match one. The command
 * is memcached's first token: it ends at a space or the line end (one '\r'
 * before a '\n' dropped), so "get\tx" or "get\rx" is no get. A word with
 * no end in these 8 bytes has len 0: a long keyless word, or none.
 */
static __always_inline struct ks_cmd ks_mc_match(__u64 w, __u32 avail)
{
	struct ks_cmd cmd = { KS_OP_MAX, 0 };
	__u64 keep, m;
	__u32 n;

	if (avail < 8) {
		keep = (1ULL << (avail * 8)) - 1;
		w = (w & keep) | ('A' * KS_ONES & ~keep);
	}
	m = ks_mask_token_end(w);
	if (!m)
		return cmd; /* len 0: the token goes on past these 8 bytes */
	n = ks_first_flagged(m);
	if (n && (__u8)(w >> (n * 8)) == '\n' &&
	    (__u8)(w >> (n * 8 - 8)) == '\r')
		n--;
	if (n == 0)
		return cmd;
	cmd.op = ks_mc_word_op(w & ((1ULL << (n * 8)) - 1), n);
	cmd.len = n;
	return cmd;
}

/* At the start of a request: recognise it and parse it (or its first part). */
__noinline int ks_mc_command(struct ks_scratch *s)
{
	__u32 pos, avail;
	struct ks_cmd cmd;
	__u64 w, tail;
	int p;

	if (!s)
		return KS_STEP_LOST;
	pos = s->off;
	s->req_start = pos;
	s->acc = 0;
	if (KS_BYTE(s, pos) == 0x80) {
		s->nreq++;
		s->resync = 0;
		return ks_mc_binary(s, pos);
	}
	/* memcached's tokenizer skips spaces before the first token too */
	if (KS_BYTE(s, pos) == ' ') {
		p = ks_mc_skip_sp(s, pos);
		if (p < 0 || (__u32)p >= s->end)
			return ks_cut(s, s->req_start);
		pos = p;
	}
	w = ks_win_word(s, pos);
	avail = s->end - pos;
	cmd = ks_mc_match(w, avail);
	/* a token with no end in its first 8 bytes: a word of 7 or 8 bytes
	 * ending the line ("version\r\n"), a long keyless word, or none */
	if (!cmd.len && avail >= 8) {
		p = ks_mc_scan(s, pos, s->end, KS_SCAN_TOKEN);
		if (p < 0 && s->end - pos < 16)
			return ks_cut(s, s->req_start); /* may still be one */
		if (p >= 0) {
			cmd.len = p - pos;
			if (KS_BYTE(s, p) == '\n' && KS_BYTE(s, p - 1) == '\r')
				cmd.len--;
			if (cmd.len <= 8)
				cmd.op = ks_mc_word_op(
					ks_mc_word_at(s, pos, cmd.len),
					cmd.len);
			else if (cmd.len == ks_mc_long_word(w, &tail) &&
				 ks_mc_word_at(s, pos + 8, cmd.len - 8) == tail)
				cmd.op = KS_OP_OTHER;
		}
	}
	if (cmd.op == KS_OP_MAX) {
		/* A word cut by the end of what we have: a split request. */
		if (avail < 8 &&
		    !(ks_mask_token_end(w) & ((1ULL << (avail * 8)) - 1)))
			return ks_cut(s, s->req_start);

		/* Where the stream's position is a guess, a segment may begin
		 * inside a value or a split line: pass it over. */
		if (s->resync)
			return ks_fail(KS_ERR_MIDSTREAM);
		/* memcached answers ERROR and reads the next line */
		return ks_mc_refuse(s, KS_ERR_UNKNOWN_CMD);
	}
	s->nreq++;
	s->resync = 0;
	pos += cmd.len;

	switch (cmd.op) {
	case KS_OP_GAT:
	case KS_OP_GATS:
		/* "gat <exptime> <key>*": the keys follow the exptime */
		p = ks_mc_skip_token(s, pos);
		if (p < 0)
			return ks_cut(s, s->req_start);
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
	case KS_OP_MS:
		return ks_mc_storage(s, pos, cmd.op);
	case KS_OP_MN:
	case KS_OP_OTHER:
		return ks_mc_no_key(
			s, pos, cmd.op,
			cmd.len == 5 && (w & 0xffffffffffULL) ==
						KS_W5('s', 't', 'a', 't', 's'));
	default:
		return ks_mc_one_key(s, pos, cmd.op);
	}
}

/*
 * Parse the window from s->off in state s->state until it ends, a unit
 * runs past it, or the step budget is spent; returns enum ks_step.
 * Inline in its one caller, the window (itself a global function, so
 * verified once: +522 instructions): a call and return fewer a window,
 * and the step loop compiled with the window around it (issue 27).
 */
static __always_inline int ks_mc_parse(struct ks_scratch *s)
{
	__u32 i;
	int r;

	if (!s)
		return KS_STEP_LOST;
	for (i = 0; i < KS_MAX_ITEMS; i++) {
		if (s->off >= s->end)
			return s->state == KS_ST_COMMAND ? KS_STEP_DONE
							 : ks_cut(s, s->end);
		if (s->state == KS_ST_KEYS)
			r = ks_mc_key_list(s);
		else if (s->state == KS_ST_LINE)
			r = ks_mc_drop_line(s);
		else
			r = ks_mc_command(s);
		/* a step samples at most one key: place it on the ring */
		ks_ring_flush(s);
		if (r != KS_STEP_MORE)
			return r;
	}
	return KS_STEP_LIMIT;
}

#endif
