// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ref_mc.c - the reference memcached request parser (see ref_mc.h).
 *
 * Written byte by byte, for clarity and not speed, from:
 *  - memcached's protocol.txt: a request is a line ended by "\n" (clients
 *    send "\r\n"), tokens are separated by spaces; storage commands
 *    "<cmd> <key> <flags> <exptime> <bytes> [cas unique] [noreply]" are
 *    followed by <bytes> of data and "\r\n"; retrieval commands "get|gets
 *    <key>*", "gat|gats <exptime> <key>*"; "delete|incr|decr|touch <key>
 *    ..."; meta commands "mg|md|ma|me <key> <flags>*", "ms <key> <datalen>
 *    <flags>*" (+ data), "mn"; keys are at most 250 bytes of no control
 *    characters or spaces;
 *  - the binary protocol: a 24-byte header (magic 0x80, opcode, key length,
 *    extras length, total body length), then extras, key and value;
 *  - the datapath's documented choices (bpf/keysteer.h, comments in
 *    bpf/ks_parse_mc.bpf.h): which commands map to which enum ks_op, the
 *    KS_* limits and the enum ks_reason for each way a request can be bad.
 *    Each place where the datapath deliberately gives up is marked LIMIT
 *    below, with the documentation it follows.
 *
 * It includes no bpf/ header but keysteer.h and shares no code with them.
 */
#include <string.h>
#include "ref_mc.h"

/*
 * Runs of spaces between tokens: memcached takes any length, and so does
 * the datapath (ks_mc_skip_spaces searches its whole window since the
 * first fuzzing findings); no limit here but the window.
 */

/* LIMIT: "memcached refuses values this large anyway" (ks_mc_number and
 * ks_mc_binary): a <bytes> or body length above 2^30 is a lie. */
#define REF_VALUE_MAX (1U << 30)

const char *const ref_note_names[REF_NOTE_MAX] = {
	[REF_NOTE_NONE] = "none",
	[REF_NOTE_WORD_END] = "long-word-control-end",
	[REF_NOTE_NUMBER_END] = "number-control-end",
	[REF_NOTE_SPACE_RUN] = "space-run",
	[REF_NOTE_HALF_TAIL] = "half-visible-data-end",
};

/* Where a parse step left off. */
enum step { STEP_MORE, STEP_DONE };

struct ref {
	const __u8 *p;
	__u32 plen;      /* payload bytes the packet carries */
	__u32 vis;       /* bytes the datapath reads: LIMIT KS_WIN */
	bool tcp;
	unsigned nreq;   /* requests recognised so far */
	struct ref_out *out;
};

/* A byte of the payload as the datapath sees it, or -1 past its window. */
static int byte_at(const struct ref *r, __u32 i)
{
	return i < r->vis ? r->p[i] : -1;
}

/* Token bytes: anything above space. A byte <= 0x20 ends a token. */
static bool is_token_byte(int c)
{
	return c > ' ';
}

/* What may end a token that must be followed by more tokens or the line
 * end: a space, or the "\r\n" / "\n" that ends the line. */
static bool is_token_end(int c)
{
	return c == ' ' || c == '\r' || c == '\n';
}

/*
 * The reason for needing bytes the datapath does not have: past the end
 * of the packet the rest arrives in a later segment (a cut request);
 * inside the packet but past KS_WIN, the window is the limit.
 */
static int cut_reason(const struct ref *r)
{
	return r->plen > r->vis ? KS_ERR_WINDOW : KS_ERR_TRUNC_REQ;
}

static __u32 token_len(const struct ref *r, __u32 pos)
{
	__u32 n = 0;

	while (is_token_byte(byte_at(r, pos + n)))
		n++;
	return n;
}

/* First position at or after pos that is not a space. */
static long skip_spaces(const struct ref *r, __u32 pos)
{
	__u32 n = 0;

	while (byte_at(r, pos + n) == ' ')
		n++;
	return pos + n;
}

/* Position just past the next "\n" at or after pos, or -1 if there is none
 * in the window. A lone "\n" ends a line, as in memcached. */
static long line_end(const struct ref *r, __u32 pos)
{
	__u32 i;

	for (i = pos; i < r->vis; i++)
		if (r->p[i] == '\n')
			return i + 1;
	return -1;
}

static void count(struct ref *r, int op, __u64 requests, __u64 keys,
		  __u64 bytes)
{
	r->out->ops[op].requests += requests;
	r->out->ops[op].keys += keys;
	r->out->ops[op].bytes += bytes;
}

static void take_key(struct ref *r, int op, __u32 off, __u32 len)
{
	struct ref_key *k;

	if (r->out->nkeys >= REF_MAX_KEYS)
		return; /* cannot happen: each key costs an item */
	k = &r->out->keys[r->out->nkeys++];
	k->op = (__u8)op;
	k->off = off;
	k->len = (__u16)len;
}

static enum step fail(struct ref *r, int reason)
{
	r->out->reason = reason;
	return STEP_DONE;
}

/*
 * A text key at pos (after spaces): 1..KS_MAX_KEY_LEN token bytes followed
 * by a space or the line end. Returns 0 with the key's place, or a reason.
 */
static int text_key(const struct ref *r, __u32 pos, __u32 *kpos, __u32 *klen)
{
	long at = skip_spaces(r, pos);
	__u32 n;
	int end;

	if (at < 0)
		return KS_ERR_BAD_KEY;
	if ((__u32)at >= r->vis)
		return cut_reason(r);
	n = token_len(r, (__u32)at);
	end = byte_at(r, (__u32)at + n);
	if (end < 0) /* the key runs to the end of what we have */
		return n > KS_MAX_KEY_LEN ? KS_ERR_KEY_TOO_LONG : cut_reason(r);
	if (n > KS_MAX_KEY_LEN)
		return KS_ERR_KEY_TOO_LONG;
	if (n == 0 || !is_token_end(end))
		return KS_ERR_BAD_KEY; /* no key, or a control byte in it */
	*kpos = (__u32)at;
	*klen = n;
	return 0;
}

/*
 * A token the datapath skips without reading (gat's exptime, a storage
 * command's flags and exptime): returns the position after it, or
 * -reason-1. An empty token is not an error here: what must follow it
 * then fails.
 */
static long skip_field(const struct ref *r, __u32 pos)
{
	long at = skip_spaces(r, pos);
	__u32 n;

	if (at < 0)
		return -KS_ERR_BAD_LENGTH - 1;
	if ((__u32)at >= r->vis)
		return -cut_reason(r) - 1;
	n = token_len(r, (__u32)at);
	if ((__u32)at + n >= r->vis)
		return -cut_reason(r) - 1;
	return at + n;
}

/*
 * A storage command's <bytes> (or ms's <datalen>): a decimal number of at
 * most KS_MAX_DIGITS digits (LIMIT: "a <bytes> field longer than this
 * lies") and at most REF_VALUE_MAX, ended by a space or the line end.
 * Returns the value or -reason-1; *after is the position after it.
 */
static long length_field(const struct ref *r, __u32 pos, __u32 *after)
{
	long at = skip_spaces(r, pos);
	__u32 d = 0;
	__u64 v = 0;
	int end;

	if (at < 0)
		return -KS_ERR_BAD_LENGTH - 1;
	while (d <= KS_MAX_DIGITS) {
		int c = byte_at(r, (__u32)at + d);

		if (c < '0' || c > '9')
			break;
		v = v * 10 + (__u64)(c - '0');
		d++;
	}
	if (d > KS_MAX_DIGITS)
		return -KS_ERR_BAD_LENGTH - 1;
	end = byte_at(r, (__u32)at + d);
	if (end < 0)
		return -cut_reason(r) - 1;
	if (d == 0 || end > ' ' || v > REF_VALUE_MAX)
		return -KS_ERR_BAD_LENGTH - 1;
	/* memcached's safe_strtoul takes a number ended by white space or
	 * the NUL its tokenizer writes over a space; any other control byte
	 * makes the line "CLIENT_ERROR bad command line format" */
	if (!strchr(" \t\n\v\f\r", end)) {
		r->out->note = REF_NOTE_NUMBER_END;
		return -KS_ERR_BAD_LENGTH - 1;
	}
	*after = (__u32)at + d;
	return (long)v;
}

/* The request that began at start is bytes long and counted: on to the
 * next one, if the window holds it. */
static enum step next_request(struct ref *r, __u32 start, __u64 len,
			      __u32 *pos)
{
	__u64 next = start + len;

	if (next >= r->plen)
		return STEP_DONE; /* the rest comes in later segments */
	if (next >= r->vis)
		return fail(r, KS_ERR_WINDOW);
	*pos = (__u32)next;
	return STEP_MORE;
}

/* ---- text commands ---- */

enum kind { K_GETS, K_GATS, K_STORE, K_MS, K_ONE_KEY, K_NO_KEY };

struct cmd {
	const char *word;
	int op;
	enum kind kind;
};

static const struct cmd commands[] = {
	{ "get", KS_OP_GET, K_GETS },
	{ "gets", KS_OP_GETS, K_GETS },
	{ "gat", KS_OP_GAT, K_GATS },
	{ "gats", KS_OP_GATS, K_GATS },
	{ "set", KS_OP_SET, K_STORE },
	{ "add", KS_OP_ADD, K_STORE },
	{ "replace", KS_OP_REPLACE, K_STORE },
	{ "append", KS_OP_APPEND, K_STORE },
	{ "prepend", KS_OP_PREPEND, K_STORE },
	{ "cas", KS_OP_CAS, K_STORE },
	{ "delete", KS_OP_DELETE, K_ONE_KEY },
	{ "incr", KS_OP_INCR, K_ONE_KEY },
	{ "decr", KS_OP_DECR, K_ONE_KEY },
	{ "touch", KS_OP_TOUCH, K_ONE_KEY },
	{ "mg", KS_OP_MG, K_ONE_KEY },
	{ "ms", KS_OP_MS, K_MS },
	{ "md", KS_OP_MD, K_ONE_KEY },
	{ "ma", KS_OP_MA, K_ONE_KEY },
	{ "me", KS_OP_ME, K_ONE_KEY },
	{ "mn", KS_OP_MN, K_NO_KEY },
	{ "lru", KS_OP_OTHER, K_NO_KEY },
};

/*
 * memcached's keyless commands (stats, version, verbosity, flush_all,
 * quit, shutdown, cache_memlimit, slabs, lru_crawler, watch, misbehave).
 * LIMIT: the datapath knows them by their first four bytes only ("keyless
 * commands, some longer than 7 bytes: their first four"), so any word
 * beginning so is one of them.
 */
static const char *const keyless_prefixes[] = {
	"stat", "vers", "verb", "flus", "quit", "shut", "cach", "slab",
	"lru_", "watc", "misb",
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const struct cmd *find_command(const __u8 *w, __u32 n)
{
	static const struct cmd other = { "", KS_OP_OTHER, K_NO_KEY };
	size_t i;

	for (i = 0; i < ARRAY_LEN(commands); i++)
		if (strlen(commands[i].word) == n &&
		    !memcmp(commands[i].word, w, n))
			return &commands[i];
	for (i = 0; n >= 4 && i < ARRAY_LEN(keyless_prefixes); i++)
		if (!memcmp(keyless_prefixes[i], w, 4))
			return &other;
	return NULL;
}

/* The parse of one packet: where we are and what the current multi-key
 * request has collected. */
struct walk {
	__u32 pos;
	bool in_keys;   /* inside a get/gets/gat/gats key list */
	int op;         /* of that request */
	__u32 start;    /* where it began */
	unsigned nkeys;
};

/* "get <key>*": the key list, one key (or the line end) per step, as the
 * datapath's item budget counts them. */
static enum step keys_step(struct ref *r, struct walk *w)
{
	long at = skip_spaces(r, w->pos);
	__u32 kpos, klen;
	int c, err;

	if (at < 0)
		return fail(r, KS_ERR_BAD_KEY);
	c = byte_at(r, (__u32)at);
	if (c < 0)
		return fail(r, cut_reason(r));
	if (c == '\r' || c == '\n') {
		if (w->nkeys == 0)
			return fail(r, KS_ERR_BAD_KEY); /* "get\r\n" */
		if (c == '\r') {
			c = byte_at(r, (__u32)at + 1);
			if (c < 0)
				return fail(r, cut_reason(r));
			if (c != '\n')
				return fail(r, KS_ERR_BAD_KEY);
			at++;
		}
		w->in_keys = false;
		count(r, w->op, 1, w->nkeys, (__u32)at + 1 - w->start);
		return next_request(r, w->start, (__u32)at + 1 - w->start,
				    &w->pos);
	}
	/* LIMIT: KS_MAX_KEYS_PER_REQ, "keys in one get before TOO_MANY_KEYS" */
	if (w->nkeys >= KS_MAX_KEYS_PER_REQ)
		return fail(r, KS_ERR_TOO_MANY_KEYS);
	err = text_key(r, (__u32)at, &kpos, &klen);
	if (err)
		return fail(r, err);
	/* memcached serves each key of a get as it reads it: a key counts
	 * even if the line turns out bad later */
	take_key(r, w->op, kpos, klen);
	w->nkeys++;
	w->pos = kpos + klen;
	return STEP_MORE;
}

static enum step storage(struct ref *r, struct walk *w, const struct cmd *c,
			 __u32 pos)
{
	__u32 kpos, klen, after, tail;
	long v, eol, p;
	__u64 len;
	int err, i;

	err = text_key(r, pos, &kpos, &klen);
	if (err)
		return fail(r, err);
	p = kpos + klen;
	for (i = 0; c->kind == K_STORE && i < 2; i++) { /* flags, exptime */
		p = skip_field(r, (__u32)p);
		if (p < 0)
			return fail(r, (int)(-p - 1));
	}
	v = length_field(r, (__u32)p, &after);
	if (v < 0)
		return fail(r, (int)(-v - 1));
	/* the rest of the line ([cas unique] [noreply], ms flags) is not read */
	eol = line_end(r, after);
	if (eol < 0)
		return fail(r, cut_reason(r));
	len = (__u64)eol - w->start + (__u64)v + 2;
	/* the data block ends in "\r\n": check what the window shows of it */
	tail = (__u32)(w->start + len - 2);
	if (byte_at(r, tail) >= 0 && byte_at(r, tail + 1) < 0 &&
	    byte_at(r, tail) != '\r') {
		r->out->note = REF_NOTE_HALF_TAIL;
		return fail(r, KS_ERR_BAD_LENGTH);
	}
	if (byte_at(r, tail + 1) >= 0 &&
	    (byte_at(r, tail) != '\r' || byte_at(r, tail + 1) != '\n'))
		return fail(r, KS_ERR_BAD_LENGTH);
	take_key(r, c->op, kpos, klen);
	count(r, c->op, 1, 1, len);
	return next_request(r, w->start, len, &w->pos);
}

static enum step one_key(struct ref *r, struct walk *w, const struct cmd *c,
			 __u32 pos)
{
	__u32 kpos, klen;
	long eol;
	int err;

	err = text_key(r, pos, &kpos, &klen);
	if (err)
		return fail(r, err);
	eol = line_end(r, kpos + klen); /* arguments after the key: not read */
	if (eol < 0)
		return fail(r, cut_reason(r));
	take_key(r, c->op, kpos, klen);
	count(r, c->op, 1, 1, (__u32)eol - w->start);
	return next_request(r, w->start, (__u32)eol - w->start, &w->pos);
}

static enum step text_command(struct ref *r, struct walk *w)
{
	__u32 pos = w->pos, n = token_len(r, pos);
	const struct cmd *c = NULL;
	int end = byte_at(r, pos + n);
	long p, eol;

	if (end < 0 && r->vis - pos < 8)
		/* a short word cut by the end of what we have: the rest of
		 * a split request is in the next segment */
		return fail(r, cut_reason(r));
	if (n > 0 && (end < 0 || is_token_end(end)))
		c = find_command(r->p + pos, n);
	else if (n >= 8 && find_command(r->p + pos, n))
		/* memcached's tokenizer keeps the control byte in the word,
		 * which makes it no command at all */
		r->out->note = REF_NOTE_WORD_END;
	if (!c) {
		/* a TCP segment may begin inside a value or a split line */
		if (r->tcp && r->nreq == 0)
			return fail(r, KS_ERR_MIDSTREAM);
		return fail(r, KS_ERR_UNKNOWN_CMD);
	}
	r->nreq++;
	pos += n;
	switch (c->kind) {
	case K_GATS:
		p = skip_field(r, pos); /* <exptime> */
		if (p < 0)
			return fail(r, (int)(-p - 1));
		pos = (__u32)p;
		/* fall through */
	case K_GETS:
		w->in_keys = true;
		w->op = c->op;
		w->nkeys = 0;
		w->pos = pos;
		return STEP_MORE;
	case K_STORE:
	case K_MS:
		return storage(r, w, c, pos);
	case K_ONE_KEY:
		return one_key(r, w, c, pos);
	case K_NO_KEY:
		eol = line_end(r, pos);
		if (eol < 0)
			return fail(r, cut_reason(r));
		count(r, c->op, 1, 0, (__u32)eol - w->start);
		return next_request(r, w->start, (__u32)eol - w->start,
				    &w->pos);
	}
	return fail(r, KS_ERR_UNKNOWN_CMD);
}

/* ---- binary protocol ---- */

/* Request opcodes (memcached protocol_binary.h) and the op each is. */
static int binary_op(__u8 opcode)
{
	switch (opcode) {
	case 0x00: /* get */
	case 0x09: /* getq */
	case 0x0c: /* getk */
	case 0x0d: /* getkq */
		return KS_OP_GET;
	case 0x01: case 0x11: return KS_OP_SET;     /* set, setq */
	case 0x02: case 0x12: return KS_OP_ADD;     /* add, addq */
	case 0x03: case 0x13: return KS_OP_REPLACE; /* replace, replaceq */
	case 0x04: case 0x14: return KS_OP_DELETE;  /* delete, deleteq */
	case 0x05: case 0x15: return KS_OP_INCR;    /* increment(q) */
	case 0x06: case 0x16: return KS_OP_DECR;    /* decrement(q) */
	case 0x0e: case 0x19: return KS_OP_APPEND;  /* append(q) */
	case 0x0f: case 0x1a: return KS_OP_PREPEND; /* prepend(q) */
	case 0x1c: return KS_OP_TOUCH;
	case 0x1d: /* gat */
	case 0x1e: /* gatq */
	case 0x23: /* gatk */
	case 0x24: /* gatkq */
		return KS_OP_GAT;
	default: /* quit, flush, noop, version, stat, verbosity, sasl ... */
		return KS_OP_OTHER;
	}
}

static __u32 be(const __u8 *p, int n)
{
	__u32 v = 0;
	int i;

	for (i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static enum step binary_request(struct ref *r, struct walk *w)
{
	__u32 pos = w->pos, keylen, extlen, bodylen, kpos;
	const __u8 *h = r->p + pos;
	int op;

	r->nreq++;
	if (pos + KS_BIN_HDR > r->vis)
		return fail(r, cut_reason(r));
	op = binary_op(h[1]);
	keylen = be(h + 2, 2);
	extlen = h[4];
	bodylen = be(h + 8, 4);
	if (bodylen > REF_VALUE_MAX || extlen + keylen > bodylen)
		return fail(r, KS_ERR_BAD_LENGTH);
	if (keylen > KS_MAX_KEY_LEN)
		return fail(r, KS_ERR_KEY_TOO_LONG);
	if (keylen == 0) {
		/* every opcode that names a key must have one */
		if (op != KS_OP_OTHER)
			return fail(r, KS_ERR_BAD_KEY);
		count(r, op, 1, 0, KS_BIN_HDR + bodylen);
		return next_request(r, pos, KS_BIN_HDR + (__u64)bodylen,
				    &w->pos);
	}
	kpos = pos + KS_BIN_HDR + extlen;
	if (kpos + keylen > r->vis)
		return fail(r, cut_reason(r));
	take_key(r, op, kpos, keylen);
	count(r, op, 1, 1, KS_BIN_HDR + (__u64)bodylen);
	return next_request(r, pos, KS_BIN_HDR + (__u64)bodylen, &w->pos);
}

void ref_mc_parse(const __u8 *pay, __u32 plen, bool tcp, struct ref_out *out)
{
	struct ref r = { .p = pay, .plen = plen, .tcp = tcp, .out = out };
	struct walk w = { 0 };
	enum step s = STEP_DONE;
	unsigned items;

	memset(out, 0, sizeof(*out));
	out->reason = REF_NO_REASON;
	if (plen == 0)
		return; /* a pure ACK or an empty datagram: no request */
	/* LIMIT: KS_WIN, "payload bytes parsed per packet" */
	r.vis = plen < KS_WIN ? plen : KS_WIN;

	/*
	 * LIMIT: KS_MAX_ITEMS, "commands + keys handled per packet". The
	 * datapath spends one item per command, one per key of a get, and
	 * one on the end of a get's key list (its parse loop in
	 * ks_mc_parse); a packet with more gives up with ITEM_LIMIT.
	 */
	for (items = 0;; items++) {
		if (items == KS_MAX_ITEMS) {
			fail(&r, KS_ERR_ITEM_LIMIT);
			break;
		}
		if (w.in_keys)
			s = keys_step(&r, &w);
		else {
			w.start = w.pos;
			if (r.p[w.pos] == 0x80) /* the binary magic */
				s = binary_request(&r, &w);
			else
				s = text_command(&r, &w);
		}
		if (s != STEP_MORE)
			break;
	}
	/* a get cut short (any reason) still had its keys served */
	if (w.in_keys && w.nkeys)
		count(&r, w.op, 0, w.nkeys, 0);
}
