// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ref_mc.c - the reference memcached request parser (see ref_mc.h).
 *
 * Written for clarity, not speed, from what memcached 1.6.18 does with the
 * bytes of a connection (proto_text.c, proto_bin.c, util.c):
 *  - text: a line ends at '\n'; one '\r' before it is dropped when the line
 *    has two bytes or more; a NUL ends what is tokenised; tokens are split
 *    on spaces only (any other byte, control bytes included, is a token
 *    byte); commands match exactly; the argument checks of each command
 *    (token counts, safe_strtoul/strtol/strtoull numbers, key <= 250) and
 *    what a refused storage line does to its data (read as commands) or a
 *    refused meta set (swallowed); a refused line is answered and the next
 *    line read;
 *  - binary: the 24-byte header, the per-opcode shape of extras, key and
 *    body (a wrong shape closes the connection), unknown opcodes;
 *  - a connection speaks text or binary from its first byte on;
 *  - quit and "... HTTP/x" close the connection;
 *  - a request the stream ends inside is never served.
 * The ops each command counts as, and the enum ks_reason each kind of
 * refusal is counted under (the datapath's own taxonomy: checks in the
 * datapath's order), come from bpf/keysteer.h and the datapath's comments.
 *
 * Guessing (a lone TCP segment of a flow not seen from its SYN) is the
 * datapath's policy, not memcached's: the first request must be one
 * memcached would take for a request, else the segment is midstream.
 *
 * Each enum ref_quirk bit makes one decision the datapath's (known,
 * reported) way instead; see ref_mc.h. It includes no bpf/ header but
 * keysteer.h and shares no code with them.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "ref_mc.h"

const char *const ref_quirk_names[RQ_MAX] = {
	[RQ_KEYLESS_ARGS] = "keyless-args-unchecked",
	[RQ_NUL] = "nul-in-line",
	[RQ_NUM_FORM] = "number-form",
	[RQ_GAT_EXPTIME] = "gat-exptime-unchecked",
	[RQ_META_FLAGS] = "meta-flags-unchecked",
	[RQ_PROTO_MIX] = "protocol-per-request",
	[RQ_CLOSE] = "parse-after-close",
	[RQ_BIN_SHAPE] = "binary-shape-unchecked",
	[RQ_BIN_UNKNOWN] = "binary-unknown-opcode",
	[RQ_TOO_LARGE] = "value-too-large-counted",
	[RQ_CUT_SAMPLED] = "cut-request-keys-sampled",
	[RQ_DGRAM_PAST_END] = "datagram-data-past-end-counted",
	[RQ_WINDOW] = "window",
	[RQ_EARLY_REFUSE] = "refused-before-line-end",
};

/* memcached: item_size_ok() fails past the largest item (-I 1m), less the
 * item header; the reference's bound is approximate by a few bytes. */
#define REF_ITEM_MAX (1024 * 1024 - 64)
#define REF_MAX_TOK  16384

enum {
	R_CUT = -1,
	R_STOP = -2
};

struct tok {
	__u32 off, len;
};

struct line {
	__u32 start;
	__u32 next;    /* after the '\n' (complete lines) */
	bool complete; /* its '\n' is in the input */
	bool crlf;     /* ... and a '\r' before it was dropped */
	__u32 cr_at;   /* where that '\r' is */
	int n;         /* tokens */
	struct tok t[REF_MAX_TOK];
};

struct p {
	const __u8 *b;
	__u32 len;
	const struct ref_opts *o;
	struct ref_out *out;
	bool guess; /* the next request's start is a guess */
	int proto;  /* 0 text, 1 binary */
	/* RQ_WINDOW: the datapath's window [W, E) and its step budget */
	__u32 W, E, steps;
	__u32 cut_at; /* where the unit a R_CUT stopped in begins */
	bool lost;    /* an R_STOP where the datapath loses the stream */
};

static struct line L;

static bool q(struct p *p, int quirk)
{
	return p->o->quirks & (1u << quirk);
}

/* A decision a quirk changed: note it. */
static void used(struct p *p, int quirk)
{
	p->out->quirks_used |= 1u << quirk;
}

static void count(struct p *p, int op, __u64 r, __u64 k, __u64 bytes)
{
	p->out->ops[op].requests += r;
	p->out->ops[op].keys += k;
	p->out->ops[op].bytes += bytes;
}

static void err(struct p *p, int reason)
{
	p->out->err[reason]++;
}

static void take_key(struct p *p, int op, __u32 off, __u32 len)
{
	struct ref_key *k;

	if (p->out->nkeys >= REF_MAX_KEYS) {
		p->out->keys_full = true;
		return;
	}
	k = &p->out->keys[p->out->nkeys++];
	k->op = (__u8)op;
	k->off = off;
	k->len = (__u16)len;
}

/* ---- the datapath's windows (RQ_WINDOW only) ---- */

static __u32 seg_end_after(struct p *p, __u32 pos)
{
	unsigned i;

	for (i = 0; i < p->o->nseg; i++)
		if (p->o->seg_end[i] > pos)
			return p->o->seg_end[i];
	return p->len;
}

static void win_at(struct p *p, __u32 u)
{
	__u32 se = seg_end_after(p, u);

	p->W = u;
	p->E = u + KS_WIN < se ? u + KS_WIN : se;
	p->steps = 0;
}

/*
 * A unit [u, e) the datapath must see in one window: true if it does
 * (moving to a window of its own if need be), false if it cannot (longer
 * than a window, or carried across a segment end with more than KS_CARRY
 * bytes): the datapath loses the stream there.
 */
static bool win_need(struct p *p, __u32 u, __u32 e)
{
	__u32 se;

	if (!q(p, RQ_WINDOW))
		return true;
	if (e > p->len)
		e = p->len;
	if (u >= p->W && e <= p->E && p->steps < KS_MAX_ITEMS) {
		p->steps++;
		return true;
	}
	win_at(p, u);
	/* cut by segment ends: carried on */
	while (e > p->E && p->E < u + KS_WIN && p->E < p->len) {
		if (p->E - u > KS_CARRY)
			return false;
		se = seg_end_after(p, p->E);
		p->E = u + KS_WIN < se ? u + KS_WIN : se;
	}
	if (e > p->E)
		return false;
	p->steps++;
	return true;
}

static bool win_sees(struct p *p, __u32 pos)
{
	return !q(p, RQ_WINDOW) || (pos >= p->W && pos < p->E);
}

/* A data block ends at next: the window goes on there if it is past. */
static void win_skip(struct p *p, __u32 next)
{
	if (q(p, RQ_WINDOW) && next >= p->E)
		win_at(p, next);
}

/* The line [u, e) is lost to the window: what the datapath counts. */
static int win_lost(struct p *p, __u32 u)
{
	used(p, RQ_WINDOW);
	p->lost = true;
	/* stuck in the middle of a segment: its window budget runs out */
	if (seg_end_after(p, u) - u > KS_WIN || p->o->nseg <= 1)
		err(p, KS_ERR_ITEM_LIMIT);
	return R_STOP;
}

/* ---- numbers as memcached's util.c reads them ---- */

static void tok_str(struct p *p, const struct tok *t, char *s, size_t n)
{
	size_t l = t->len < n - 1 ? t->len : n - 1;

	memcpy(s, p->b + t->off, l);
	s[l] = '\0';
}

static bool mc_isspace(int c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* safe_strtoul (kind 0), safe_strtol (1), safe_strtoull (2). */
static bool mc_number(struct p *p, const struct tok *t, int kind, long long *v)
{
	char s[300], *end;
	unsigned long long u;
	long long l;

	if (t->len >= sizeof(s))
		return false; /* no number is that long: ERANGE */
	tok_str(p, t, s, sizeof(s));
	errno = 0;
	if (kind == 1) {
		l = strtol(s, &end, 10);
		if (errno == ERANGE || end == s)
			return false;
		if (!mc_isspace(*end) && *end)
			return false;
		*v = (int)(unsigned)l; /* cut to 32 bits, no range check */
		return true;
	}
	u = kind == 0 ? strtoul(s, &end, 10) : strtoull(s, &end, 10);
	if (errno == ERANGE || end == s)
		return false;
	if (!mc_isspace(*end) && *end)
		return false;
	if ((long long)u < 0 && strchr(s, '-'))
		return false;
	*v = kind == 0 ? (long long)(unsigned)u : (long long)u;
	return true;
}

/* RQ_NUM_FORM: the datapath's forms. All digits, 1..max of them. */
static bool dp_uint(struct p *p, const struct tok *t, __u32 max)
{
	__u32 i;

	if (!t->len || t->len > max)
		return false;
	for (i = 0; i < t->len; i++)
		if (p->b[t->off + i] < '0' || p->b[t->off + i] > '9')
			return false;
	return true;
}

static bool dp_int(struct p *p, const struct tok *t)
{
	struct tok r = { t->off + 1, t->len - 1 };

	if (t->len > 1 && p->b[t->off] == '-')
		return dp_uint(p, &r, 10);
	return dp_uint(p, t, 10);
}

/* An unsigned (flags, 0), signed (exptime, 1) or 64-bit (cas, delta, 2)
 * argument, valid by memcached's rule or, with RQ_NUM_FORM, the
 * datapath's. */
static bool arg_ok(struct p *p, const struct tok *t, int kind)
{
	long long v;
	bool mc = mc_number(p, t, kind, &v);
	bool dp = kind == 1 ? dp_int(p, t) : dp_uint(p, t, kind == 2 ? 20 : 10);

	if (mc != dp && q(p, RQ_NUM_FORM)) {
		used(p, RQ_NUM_FORM);
		return dp;
	}
	return mc;
}

/*
 * A storage length (<bytes>, ms <datalen>): safe_strtol, then 0 ..
 * INT_MAX - 2. Returns the value or -1. With RQ_NUM_FORM the datapath's
 * ks_mc_number: 1..19 digits, then white space or the token's end, and
 * *split says the token's rest after the digits is a token of its own.
 */
static long long length_arg(struct p *p, const struct tok *t, bool *split)
{
	long long mv = -1, dv = -1, v;
	__u32 d = 0;
	__u64 acc = 0;

	*split = false;
	if (mc_number(p, t, 1, &v) && v >= 0 && v <= INT_MAX - 2)
		mv = v;
	while (d < t->len && d <= KS_MAX_DIGITS && p->b[t->off + d] >= '0' &&
	       p->b[t->off + d] <= '9') {
		acc = acc * 10 + (p->b[t->off + d] - '0');
		d++;
	}
	if (d >= 1 && d <= KS_MAX_DIGITS &&
	    (d == t->len || mc_isspace(p->b[t->off + d]) ||
	     !p->b[t->off + d])) {
		int v32 = (int)(__u32)acc;

		if (v32 >= 0 && v32 <= INT_MAX - 2)
			dv = v32;
	}
	if (mv != dv && q(p, RQ_NUM_FORM)) {
		used(p, RQ_NUM_FORM);
		*split = dv >= 0 && d < t->len;
		return dv;
	}
	if (q(p, RQ_NUM_FORM) && dv >= 0 && d < t->len) {
		used(p, RQ_NUM_FORM);
		*split = true;
	}
	return mv;
}

static __u32 length_digits(struct p *p, const struct tok *t)
{
	__u32 d = 0;

	while (d < t->len && p->b[t->off + d] >= '0' && p->b[t->off + d] <= '9')
		d++;
	return d;
}

/* ---- lines and tokens ---- */

static bool tok_is(struct p *p, const struct tok *t, const char *s)
{
	return t->len == strlen(s) && !memcmp(p->b + t->off, s, t->len);
}

/*
 * The line at u as memcached tokenises it (L). Incomplete (no '\n' in the
 * input): tokens of what is there, the last one perhaps still growing.
 */
static void tokenize(struct p *p, __u32 u)
{
	const __u8 *lf = memchr(p->b + u, '\n', p->len - u);
	__u32 end, i, s;

	L.start = u;
	L.n = 0;
	L.complete = lf != NULL;
	end = lf ? (__u32)(lf - p->b) : p->len;
	L.next = end + 1;
	L.crlf = false;
	if (lf && end - u > 1 && p->b[end - 1] == '\r') {
		end--;
		L.crlf = true;
		L.cr_at = end;
	}
	{
		/* tokenize_command() runs strlen() first */
		const __u8 *z = memchr(p->b + u, 0, end - u);

		if (z && q(p, RQ_NUL))
			used(p, RQ_NUL);
		else if (z)
			end = (__u32)(z - p->b);
	}
	for (i = u; i < end;) {
		while (i < end && p->b[i] == ' ')
			i++;
		if (i >= end)
			break;
		s = i;
		while (i < end && p->b[i] != ' ')
			i++;
		if (L.n < REF_MAX_TOK) {
			L.t[L.n].off = s;
			L.t[L.n].len = i - s;
			L.n++;
		}
	}
}

enum kind {
	K_NONE,
	K_GET,
	K_GAT,
	K_STORE,
	K_CAS,
	K_MS,
	K_DELETE,
	K_ARITH,
	K_TOUCH,
	K_META,
	K_ME,
	K_MN,
	K_STATS,
	K_KEYLESS,
	K_QUIT,
};

struct cmd {
	const char *w;
	int op;
	int kind;
};

static const struct cmd commands[] = {
	{ "get", KS_OP_GET, K_GET },
	{ "gets", KS_OP_GETS, K_GET },
	{ "gat", KS_OP_GAT, K_GAT },
	{ "gats", KS_OP_GATS, K_GAT },
	{ "bget", KS_OP_GET, K_GET },
	{ "set", KS_OP_SET, K_STORE },
	{ "add", KS_OP_ADD, K_STORE },
	{ "replace", KS_OP_REPLACE, K_STORE },
	{ "append", KS_OP_APPEND, K_STORE },
	{ "prepend", KS_OP_PREPEND, K_STORE },
	{ "cas", KS_OP_CAS, K_CAS },
	{ "delete", KS_OP_DELETE, K_DELETE },
	{ "incr", KS_OP_INCR, K_ARITH },
	{ "decr", KS_OP_DECR, K_ARITH },
	{ "touch", KS_OP_TOUCH, K_TOUCH },
	{ "mg", KS_OP_MG, K_META },
	{ "ms", KS_OP_MS, K_MS },
	{ "md", KS_OP_MD, K_META },
	{ "ma", KS_OP_MA, K_META },
	{ "me", KS_OP_ME, K_ME },
	{ "mn", KS_OP_MN, K_MN },
	{ "stats", KS_OP_OTHER, K_STATS },
	{ "shutdown", KS_OP_OTHER, K_KEYLESS },
	{ "slabs", KS_OP_OTHER, K_KEYLESS },
	{ "cache_memlimit", KS_OP_OTHER, K_KEYLESS },
	{ "flush_all", KS_OP_OTHER, K_KEYLESS },
	{ "version", KS_OP_OTHER, K_KEYLESS },
	{ "quit", KS_OP_OTHER, K_QUIT },
	{ "lru_crawler", KS_OP_OTHER, K_KEYLESS },
	{ "watch", KS_OP_OTHER, K_KEYLESS },
	{ "verbosity", KS_OP_OTHER, K_KEYLESS },
	{ "lru", KS_OP_OTHER, K_KEYLESS },
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Keyless words the datapath takes that this memcached (no extstore, not
 * a debug build) answers ERROR: none now, the datapath answers extstore,
 * misbehave and debugtime with unknown_cmd as memcached does. */
static const char *const dp_only_words[] = { NULL };

/* memcached's command for token 0, or NULL. */
static const struct cmd *mc_command(struct p *p, const struct tok *t)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(commands); i++)
		if (tok_is(p, t, commands[i].w))
			return &commands[i];
	return NULL;
}

/*
 * RQ_KEYLESS_ARGS: the keyless words the datapath takes (each by its whole
 * word) where memcached has no such command. Returns the command it would
 * take token 0 for, or NULL.
 */
static const struct cmd *dp_keyless(struct p *p, const struct tok *t)
{
	static const struct cmd other = { "", KS_OP_OTHER, K_KEYLESS };
	size_t i;

	for (i = 0; i < ARRAY_LEN(dp_only_words); i++)
		if (dp_only_words[i] && tok_is(p, t, dp_only_words[i]))
			return &other;
	return NULL;
}

/* ---- text commands: each returns the next position, R_CUT or R_STOP ---- */

/* Refused: the reason, and memcached reads the next line. */
static int refuse(struct p *p, int reason)
{
	if (!L.complete) {
		/* RQ_EARLY_REFUSE: decided before the '\n' came */
		used(p, RQ_EARLY_REFUSE);
		err(p, reason);
		return R_STOP; /* the rest of the input is that line */
	}
	err(p, reason);
	return (int)L.next;
}

/* Token i of an incomplete line runs to the end of the input. */
static bool growing(struct p *p, int i)
{
	return !L.complete && i == L.n - 1 && L.t[i].off + L.t[i].len == p->len;
}

/* The line is incomplete at a check that needs its end or token i. */
static bool pending(struct p *p, int i)
{
	if (L.complete)
		return false;
	if (!q(p, RQ_EARLY_REFUSE))
		return true;
	return i >= L.n || growing(p, i);
}

/* Splits token i after its first n bytes (RQ_NUM_FORM). */
static void split_tok(int i, __u32 n)
{
	if (L.n >= REF_MAX_TOK)
		return;
	memmove(&L.t[i + 2], &L.t[i + 1],
		(size_t)(L.n - i - 1) * sizeof(L.t[0]));
	L.t[i + 1].off = L.t[i].off + n;
	L.t[i + 1].len = L.t[i].len - n;
	L.t[i].len = n;
	L.n++;
}

/* RQ_EARLY_REFUSE: a length still growing is refused on its first byte
 * that is no digit (ks_mc_number decides there). */
static bool growing_length_bad(struct p *p, int i)
{
	__u32 k;

	if (!q(p, RQ_EARLY_REFUSE) || i >= L.n || !growing(p, i))
		return false;
	for (k = 0; k < L.t[i].len; k++)
		if (p->b[L.t[i].off + k] < '0' || p->b[L.t[i].off + k] > '9')
			break;
	if (k < L.t[i].len && k > 0 && k <= KS_MAX_DIGITS &&
	    (mc_isspace(p->b[L.t[i].off + k]) || !p->b[L.t[i].off + k])) {
		/* ended: ks_mc_number decides on its value */
		bool split;

		if (length_arg(p, &L.t[i], &split) >= 0)
			return false;
		used(p, RQ_EARLY_REFUSE);
		return true;
	}
	if ((k < L.t[i].len && (k == 0 || !(mc_isspace(p->b[L.t[i].off + k]) ||
					    !p->b[L.t[i].off + k]))) ||
	    k > KS_MAX_DIGITS) {
		used(p, RQ_EARLY_REFUSE);
		return true;
	}
	return false;
}

/* RQ_EARLY_REFUSE: a key still growing is too long at 252 bytes. */
static bool growing_key_long(struct p *p, int i)
{
	if (!q(p, RQ_EARLY_REFUSE) || i >= L.n || !growing(p, i) ||
	    L.t[i].len < KS_MAX_KEY_LEN + 2)
		return false;
	used(p, RQ_EARLY_REFUSE);
	return true;
}

static int key_check(struct p *p, int i)
{
	if (i >= L.n)
		return KS_ERR_BAD_KEY;
	if (L.t[i].len > KS_MAX_KEY_LEN)
		return KS_ERR_KEY_TOO_LONG;
	return -1;
}

static int line_bytes(void)
{
	return (int)(L.next - L.start);
}

static int get_cmd(struct p *p, const struct cmd *c, bool gat)
{
	int first = gat ? 2 : 1, i, nk = 0;

	/* a cut line's keys after a whole exptime are sampled all the same
	 * (RQ_CUT_SAMPLED) */
	if (gat && !L.complete && (L.n < 2 || growing(p, 1)))
		return R_CUT;
	if (gat && !q(p, RQ_GAT_EXPTIME)) {
		if (L.n < 2 || !arg_ok(p, &L.t[1], 1)) {
			if (!L.complete && !q(p, RQ_EARLY_REFUSE))
				return R_CUT;
			return refuse(p, KS_ERR_REFUSED);
		}
	} else if (gat) {
		long long v;

		if (L.n < 2 || !mc_number(p, &L.t[1], 1, &v))
			used(p, RQ_GAT_EXPTIME);
	}
	for (i = first; i < L.n; i++) {
		if (growing(p, i))
			break; /* may still grow */
		if (L.t[i].len > KS_MAX_KEY_LEN) {
			if (!L.complete)
				used(p, RQ_EARLY_REFUSE);
			if (nk)
				count(p, c->op, 0, nk, 0);
			err(p, KS_ERR_KEY_TOO_LONG);
			return L.complete ? (int)L.next : R_STOP;
		}
		if (!win_need(p, L.t[i].off, L.t[i].off + L.t[i].len + 1))
			return win_lost(p, L.t[i].off);
		if (!L.complete) {
			/* memcached serves none of a line that never ends;
			 * the datapath samples each key as it comes (and
			 * counts them if it refuses the line early) */
			nk++;
			if (q(p, RQ_CUT_SAMPLED)) {
				used(p, RQ_CUT_SAMPLED);
				take_key(p, c->op, L.t[i].off, L.t[i].len);
			}
			continue;
		}
		take_key(p, c->op, L.t[i].off, L.t[i].len);
		nk++;
	}
	if (!L.complete) {
		/* a key still growing past 251 bytes is already too long */
		if (q(p, RQ_EARLY_REFUSE) && L.n > first &&
		    growing(p, L.n - 1) &&
		    L.t[L.n - 1].len > KS_MAX_KEY_LEN + 1) {
			used(p, RQ_EARLY_REFUSE);
			if (nk)
				count(p, c->op, 0, nk, 0);
			err(p, KS_ERR_KEY_TOO_LONG);
			return R_STOP;
		}
		/* the datapath carries only the key still growing */
		if (L.n > first && growing(p, L.n - 1))
			p->cut_at = L.t[L.n - 1].off;
		else if (L.n > first - (gat ? 1 : 0))
			p->cut_at = p->len;
		return R_CUT;
	}
	if (!gat && L.n < 2)
		return refuse(p, KS_ERR_BAD_KEY); /* "get" alone: ERROR */
	if (!win_need(p, L.next - 2 > L.start ? L.next - 2 : L.start, L.next))
		return win_lost(p, L.start);
	count(p, c->op, 1, nk, line_bytes());
	return (int)L.next;
}

/* The data block of a storage request whose line ends at L.next. */
static int data_block(struct p *p, int op, __u32 key_i, long long vlen)
{
	__u64 next = (__u64)L.next + (__u64)vlen + 2;
	__u32 tail = L.next + (__u32)vlen;
	bool bad = false;

	if (next > p->len) {
		/* the stream ends inside the block: memcached never runs the
		 * request (trunc_req); the datapath skips a block, it does
		 * not carry it */
		p->cut_at = p->len;
		if (q(p, RQ_EARLY_REFUSE) &&
		    ((tail < p->len && win_sees(p, tail) &&
		      p->b[tail] != '\r') ||
		     (tail + 1 < p->len && win_sees(p, tail + 1) &&
		      p->b[tail + 1] != '\n'))) {
			/* bad data chunk by the bytes already in */
			used(p, RQ_EARLY_REFUSE);
			err(p, KS_ERR_BAD_LENGTH);
			return R_STOP;
		}
		if (!p->o->tcp && q(p, RQ_DGRAM_PAST_END)) {
			used(p, RQ_DGRAM_PAST_END);
			take_key(p, op, L.t[key_i].off, L.t[key_i].len);
			count(p, op, 1, 1, next - L.start);
			return R_STOP;
		}
		if (q(p, RQ_CUT_SAMPLED)) {
			/* the key taken at the line */
			used(p, RQ_CUT_SAMPLED);
			take_key(p, op, L.t[key_i].off, L.t[key_i].len);
		}
		return R_CUT;
	}
	if (p->b[tail] != '\r' || p->b[tail + 1] != '\n') {
		/* the datapath checks the bytes its window shows */
		bool seen = (win_sees(p, tail) && p->b[tail] != '\r') ||
			    (win_sees(p, tail + 1) && p->b[tail + 1] != '\n');

		if (!seen)
			used(p, RQ_WINDOW);
		bad = seen;
	}
	if (bad) {
		err(p, KS_ERR_BAD_LENGTH); /* CLIENT_ERROR bad data chunk */
	} else {
		take_key(p, op, L.t[key_i].off, L.t[key_i].len);
		count(p, op, 1, 1, next - L.start);
	}
	win_skip(p, (__u32)next);
	return (int)next;
}

/*
 * The length token i of a storage line (then the whole line, read in one
 * window). True with *vlen; false with what to return in *r.
 */
static bool length_step(struct p *p, int i, long long *vlen, int *r)
{
	bool split;

	if (growing_length_bad(p, i)) {
		*r = refuse(p, KS_ERR_BAD_LENGTH);
		return false;
	}
	*r = R_CUT;
	if (pending(p, i))
		return false;
	*vlen = L.n <= i ? -1 : length_arg(p, &L.t[i], &split);
	if (*vlen < 0) {
		*r = refuse(p, KS_ERR_BAD_LENGTH);
		return false;
	}
	if (!L.complete)
		return false;
	if (!win_need(p, L.start, L.next)) {
		*r = win_lost(p, L.start);
		return false;
	}
	if (split)
		split_tok(i, length_digits(p, &L.t[i]));
	return true;
}

static bool too_large(struct p *p, long long vlen, __u32 klen)
{
	if (vlen + 2 + klen <= REF_ITEM_MAX)
		return false;
	if (q(p, RQ_TOO_LARGE)) {
		used(p, RQ_TOO_LARGE);
		return false;
	}
	return true;
}

static int store_cmd(struct p *p, const struct cmd *c)
{
	int want = c->kind == K_CAS ? 6 : 5, e, extra;
	long long vlen;
	int r;

	/* checks in the datapath's order, each by memcached's rule */
	e = key_check(p, 1);
	if (growing_key_long(p, 1))
		return refuse(p, KS_ERR_KEY_TOO_LONG);
	if (pending(p, 1))
		return R_CUT;
	if (e >= 0)
		return refuse(p, e);
	if (pending(p, 2))
		return R_CUT;
	if (L.n < 3 || !arg_ok(p, &L.t[2], 0))
		return refuse(p, KS_ERR_REFUSED);
	if (pending(p, 3))
		return R_CUT;
	/* the datapath reads the last token of a line with its '\r' */
	if (L.n < 4 || !arg_ok(p, &L.t[3], 1) ||
	    (L.n == 4 && L.crlf && L.t[3].off + L.t[3].len == L.cr_at))
		return refuse(p, KS_ERR_REFUSED);
	if (!length_step(p, 4, &vlen, &r))
		return r;
	extra = L.n;
	if (extra != want && extra != want + 1)
		return refuse(p, KS_ERR_REFUSED);
	if (want == 6 && !arg_ok(p, &L.t[5], 2))
		return refuse(p, KS_ERR_REFUSED);
	if (too_large(p, vlen, L.t[1].len)) {
		/* SERVER_ERROR object too large: the data is swallowed */
		err(p, KS_ERR_REFUSED);
		if ((__u64)L.next + vlen + 2 > p->len)
			return R_STOP;
		return (int)(L.next + vlen + 2);
	}
	return data_block(p, c->op, 1, vlen);
}

/* memcached's _meta_flag_preparse from token `from`, plus the M modes. */
static bool meta_flags_ok(struct p *p, int from, int kind, int op)
{
	bool seen[256] = { false };
	long long v;
	int i;

	if (L.n + 1 > 20) /* MFLAG_MAX_OPT_LENGTH */
		return false;
	for (i = from; i < L.n; i++) {
		const struct tok *t = &L.t[i];
		struct tok rest = { t->off + 1, t->len - 1 };
		__u8 f = p->b[t->off];

		if (f >= 127 || seen[f])
			return false;
		seen[f] = true;
		switch (f) {
		case 'N':
		case 'T':
		case 'R':
			if (!mc_number(p, &rest, 1, &v))
				return false;
			break;
		case 'F':
			if (!mc_number(p, &rest, 0, &v))
				return false;
			break;
		case 'C':
		case 'J':
		case 'D':
			if (!mc_number(p, &rest, 2, &v))
				return false;
			break;
		case 'M':
			if (t->len != 2)
				return false;
			if (kind == K_MS && !strchr("EAPRS", p->b[t->off + 1]))
				return false;
			if (op == KS_OP_MA && !strchr("I+D-", p->b[t->off + 1]))
				return false;
			break;
		case 'O':
			if (op == KS_OP_MG && t->len > 33)
				return false;
			break;
		case 'b':
		case 'l':
		case 'P':
		case 'L':
		case 'k':
		case 's':
		case 't':
		case 'c':
		case 'f':
		case 'v':
		case 'h':
		case 'u':
		case 'q':
		case 'I':
			break;
		default:
			return false;
		}
	}
	return true;
}

static bool meta_ok(struct p *p, int from, int kind, int op)
{
	bool ok = meta_flags_ok(p, from, kind, op);

	if (!ok && q(p, RQ_META_FLAGS)) {
		used(p, RQ_META_FLAGS);
		return true;
	}
	return ok;
}

static int ms_cmd(struct p *p, const struct cmd *c)
{
	long long vlen;
	int r;
	int e = key_check(p, 1);

	if (growing_key_long(p, 1))
		return refuse(p, KS_ERR_KEY_TOO_LONG);
	if (pending(p, 1))
		return R_CUT;
	if (e >= 0)
		return refuse(p, e);
	if (!length_step(p, 2, &vlen, &r))
		return r;
	if (L.n + 1 > 20 && !q(p, RQ_META_FLAGS))
		return refuse(p, KS_ERR_REFUSED); /* read as commands */
	if (!meta_ok(p, 3, K_MS, c->op) || too_large(p, vlen, L.t[1].len)) {
		/* refused, the data swallowed */
		err(p, KS_ERR_REFUSED);
		if ((__u64)L.next + vlen + 2 > p->len)
			return R_STOP;
		win_skip(p, L.next + (__u32)vlen + 2);
		return (int)(L.next + vlen + 2);
	}
	return data_block(p, c->op, 1, vlen);
}

static int one_key_cmd(struct p *p, const struct cmd *c)
{
	int e = key_check(p, 1);
	bool ok = true;

	if (growing_key_long(p, 1))
		return refuse(p, KS_ERR_KEY_TOO_LONG);
	if (pending(p, 1))
		return R_CUT;
	if (e >= 0)
		return refuse(p, e);
	if (!L.complete)
		return R_CUT;
	/* the arguments are read with the whole line in one window */
	if (!win_need(p, L.start, L.next))
		return win_lost(p, L.start);
	switch (c->kind) {
	case K_DELETE:
		ok = L.n == 2 ||
		     (L.n == 3 && (tok_is(p, &L.t[2], "0") ||
				   tok_is(p, &L.t[2], "noreply"))) ||
		     (L.n == 4 && tok_is(p, &L.t[2], "0") &&
		      tok_is(p, &L.t[3], "noreply"));
		break;
	case K_ARITH:
		ok = (L.n == 3 || L.n == 4) && arg_ok(p, &L.t[2], 2);
		break;
	case K_TOUCH:
		ok = (L.n == 3 || L.n == 4) && arg_ok(p, &L.t[2], 1);
		break;
	case K_META:
		ok = meta_ok(p, 2, K_META, c->op);
		break;
	}
	if (!ok)
		return refuse(p, KS_ERR_REFUSED);
	take_key(p, c->op, L.t[1].off, L.t[1].len);
	count(p, c->op, 1, 1, line_bytes());
	return (int)L.next;
}

static bool stats_ok(struct p *p)
{
	static const char *const sub[] = {
		"reset",     "conns",        "items",         "slabs",
		"sizes",     "detail",       "settings",      "extstore",
		"cachedump", "sizes_enable", "sizes_disable",
	};
	size_t i;

	if (L.n == 1)
		return true;
	for (i = 0; i < ARRAY_LEN(sub); i++)
		if (tok_is(p, &L.t[1], sub[i]))
			return true;
	return false;
}

static int keyless_cmd(struct p *p, const struct cmd *c, bool dp)
{
	bool ok = true;

	if (!L.complete)
		return R_CUT;
	if (!win_need(p, L.start, L.next))
		return win_lost(p, L.start);
	if (c->kind == K_STATS) {
		ok = stats_ok(p);
	} else if (!dp) {
		const struct tok *w = &L.t[0];

		if (tok_is(p, w, "flush_all"))
			ok = L.n <= 3;
		else if (tok_is(p, w, "verbosity") ||
			 tok_is(p, w, "cache_memlimit"))
			ok = L.n == 2 || L.n == 3;
		else if (tok_is(p, w, "lru"))
			ok = L.n >= 2;
		if (!ok && q(p, RQ_KEYLESS_ARGS)) {
			used(p, RQ_KEYLESS_ARGS);
			ok = true;
		}
	}
	if (!ok)
		return refuse(p, KS_ERR_REFUSED);
	count(p, c->op, 1, 0, line_bytes());
	if (c->kind == K_QUIT) {
		if (!q(p, RQ_CLOSE))
			return R_STOP; /* the connection closes */
		used(p, RQ_CLOSE);
	}
	return (int)L.next;
}

/*
 * The line is cut inside its first token, or before it, with too few
 * bytes to tell the word: the datapath waits for more (a token it cannot
 * see the end of is no command once it has 16 bytes).
 */
static bool word_cut(struct p *p)
{
	if (L.complete)
		return false;
	if (!L.n)
		return true; /* spaces only */
	return L.n == 1 && growing(p, 0) && L.t[0].len < 16;
}

/*
 * Is the line at u a request, for a guess (RQ_*: the datapath's matcher)?
 * 1 yes, 0 no, -1 cut too short to tell.
 */
static int looks_like_request(struct p *p, const struct cmd *c)
{
	if (word_cut(p))
		return -1;
	return c != NULL;
}

static int text_request(struct p *p, __u32 u)
{
	const struct cmd *c = NULL, *dpc;
	int r;

	tokenize(p, u);
	/* the command is the first token (leading spaces skipped), whole */
	if (L.n && L.t[0].len >= 2 && !growing(p, 0))
		c = mc_command(p, &L.t[0]);
	if (!c && L.n && !growing(p, 0) && q(p, RQ_KEYLESS_ARGS) &&
	    (dpc = dp_keyless(p, &L.t[0])) != NULL) {
		used(p, RQ_KEYLESS_ARGS);
		c = dpc;
	}
	if (p->guess) {
		r = looks_like_request(p, c);
		if (r < 0)
			return R_CUT;
		if (!r) {
			err(p, KS_ERR_MIDSTREAM);
			p->lost = true;
			return R_STOP;
		}
		p->guess = false;
	}
	if (c && c->kind != K_GET) {
		__u32 end = L.complete ? L.next : p->len;

		if (end - u > KS_WIN - KS_MAX_KEY_LEN - 8 ||
		    (end - u > KS_CARRY - 8 && seg_end_after(p, u) < end))
			p->out->long_line = true;
	}
	if (!c) {
		if (!L.complete) {
			/* memcached waits for the line; the datapath refuses
			 * the word as soon as it ends (or is 16 bytes long) */
			if (!q(p, RQ_EARLY_REFUSE) || word_cut(p))
				return R_CUT;
			used(p, RQ_EARLY_REFUSE);
			err(p, KS_ERR_UNKNOWN_CMD);
			return R_STOP;
		}
		if (L.n && !memcmp(p->b + L.t[L.n - 1].off, "HTTP/",
				   L.t[L.n - 1].len >= 5 ? 5 : 6)) {
			if (!q(p, RQ_CLOSE))
				return R_STOP;
			used(p, RQ_CLOSE);
		}
		err(p, KS_ERR_UNKNOWN_CMD);
		return (int)L.next;
	}
	switch (c->kind) {
	case K_GET:
		return get_cmd(p, c, false);
	case K_GAT:
		return get_cmd(p, c, true);
	case K_STORE:
	case K_CAS:
		return store_cmd(p, c);
	case K_MS:
		return ms_cmd(p, c);
	case K_DELETE:
	case K_ARITH:
	case K_TOUCH:
	case K_META:
	case K_ME:
		return one_key_cmd(p, c);
	case K_MN:
		if (!L.complete)
			return R_CUT;
		if (!win_need(p, L.start, L.next))
			return win_lost(p, L.start);
		count(p, c->op, 1, 0, line_bytes());
		return (int)L.next;
	default:
		return keyless_cmd(p, c, c->w[0] == '\0');
	}
}

/* ---- binary ---- */

static int binary_op(__u8 opcode)
{
	switch (opcode) {
	case 0x00:
	case 0x09:
	case 0x0c:
	case 0x0d:
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
	case 0x24:
		return KS_OP_GAT;
	default:
		return KS_OP_OTHER;
	}
}

/* memcached's shape check: 1 good, 0 bad (EINVAL, close), -1 unknown. */
static int binary_shape(__u8 op, __u32 ext, __u32 key, __u32 body)
{
	switch (op) {
	case 0x00:
	case 0x09:
	case 0x0c:
	case 0x0d:
	case 0x04:
	case 0x14:
		return ext == 0 && body == key && key > 0;
	case 0x01:
	case 0x02:
	case 0x03:
	case 0x11:
	case 0x12:
	case 0x13:
		return ext == 8 && key > 0 && body >= key + 8;
	case 0x05:
	case 0x06:
	case 0x15:
	case 0x16:
		return key > 0 && ext == 20 && body == key + 20;
	case 0x0e:
	case 0x0f:
	case 0x19:
	case 0x1a:
		return key > 0 && ext == 0;
	case 0x10: /* stat: a body past the key is not read */
		return ext == 0 && body == key;
	case 0x07:
	case 0x17:
	case 0x0a:
	case 0x0b:
	case 0x20:
		return ext == 0 && key == 0 && body == 0;
	case 0x08:
	case 0x18:
		return key == 0 && body == ext && (ext == 0 || ext == 4);
	case 0x21:
	case 0x22:
		return ext == 0 && key != 0;
	case 0x1c:
	case 0x1d:
	case 0x1e:
	case 0x23:
	case 0x24:
		/* a body past the key is not read */
		return ext == 4 && key != 0 && body == ext + key;
	default:
		return -1;
	}
}

static int binary_request(struct p *p, __u32 u)
{
	const __u8 *h = p->b + u;
	__u32 key, ext, body, op;
	__u64 next;
	int shape;

	if (p->guess)
		p->guess = false;
	if (u + KS_BIN_HDR > p->len)
		return R_CUT;
	if (!win_need(p, u, u + KS_BIN_HDR))
		return win_lost(p, u);
	key = (__u32)h[2] << 8 | h[3];
	ext = h[4];
	body = (__u32)h[8] << 24 | (__u32)h[9] << 16 | (__u32)h[10] << 8 |
	       h[11];
	op = (__u32)binary_op(h[1]);
	next = (__u64)u + KS_BIN_HDR + body;
	if (key > body || key + ext > body) {
		err(p, KS_ERR_BAD_LENGTH); /* UNKNOWN_COMMAND, and a close */
		p->lost = true;
		return R_STOP;
	}
	if (body > (1U << 30) && q(p, RQ_TOO_LARGE)) {
		used(p, RQ_TOO_LARGE);
		err(p, KS_ERR_BAD_LENGTH);
		p->lost = true;
		return R_STOP;
	}
	if (key > KS_MAX_KEY_LEN) {
		err(p, KS_ERR_KEY_TOO_LONG); /* EINVAL, and a close */
		p->lost = true;
		return R_STOP;
	}
	if (u + KS_BIN_HDR + ext + key > p->len) {
		/* memcached waits for the extras and key; the datapath
		 * needs only the header when there is no key: a keyed
		 * opcode's is bad_key at once (RQ_BIN_SHAPE), another's
		 * body is skipped to its end (a datagram's counts) */
		if (!key && op != KS_OP_OTHER && q(p, RQ_BIN_SHAPE)) {
			used(p, RQ_BIN_SHAPE);
		} else if (!key && op == KS_OP_OTHER && !p->o->tcp &&
			   q(p, RQ_DGRAM_PAST_END)) {
			used(p, RQ_DGRAM_PAST_END);
		} else {
			if (!key)
				p->cut_at = p->len; /* skipped, not carried */
			return R_CUT;
		}
	}
	if (!win_need(p, u, u + KS_BIN_HDR + ext + key))
		return win_lost(p, u);
	shape = binary_shape(h[1], ext, key, body);
	if (shape < 0 && !q(p, RQ_BIN_UNKNOWN)) {
		/* UNKNOWN_COMMAND: memcached swallows the body after the
		 * extras and key it already read */
		err(p, KS_ERR_UNKNOWN_CMD);
		next += ext + key;
		if (next > p->len)
			return R_STOP;
		win_skip(p, (__u32)next);
		return (int)next;
	}
	if (shape < 0)
		used(p, RQ_BIN_UNKNOWN);
	if (shape == 0) {
		if (!q(p, RQ_BIN_SHAPE)) {
			err(p, key == 0 && op != KS_OP_OTHER ? KS_ERR_BAD_KEY
							     : KS_ERR_REFUSED);
			return R_STOP; /* EINVAL, and a close */
		}
		used(p, RQ_BIN_SHAPE);
	}
	if (key == 0 && op != KS_OP_OTHER) {
		/* the datapath (RQ_BIN_SHAPE): bad_key, the body skipped */
		err(p, KS_ERR_BAD_KEY);
		if (next > p->len)
			return R_STOP;
		win_skip(p, (__u32)next);
		return (int)next;
	}
	if (op >= KS_OP_SET && op <= KS_OP_PREPEND && op != KS_OP_DELETE &&
	    body - ext - key + 2 + key > REF_ITEM_MAX) {
		if (!q(p, RQ_TOO_LARGE)) {
			err(p, KS_ERR_REFUSED); /* E2BIG, the value swallowed */
			if (next > p->len)
				return R_STOP;
			win_skip(p, (__u32)next);
			return (int)next;
		}
		used(p, RQ_TOO_LARGE);
	}
	if (next > p->len) {
		/* the stream ends inside the body: never run (trunc_req);
		 * the datapath skips a body, it does not carry it */
		if (p->o->tcp || !q(p, RQ_DGRAM_PAST_END)) {
			if (key && q(p, RQ_CUT_SAMPLED)) {
				used(p,
				     RQ_CUT_SAMPLED); /* taken at its header */
				take_key(p, (int)op, u + KS_BIN_HDR + ext, key);
			}
			p->cut_at = p->len;
			return R_CUT;
		}
		used(p, RQ_DGRAM_PAST_END);
	}
	if (key)
		take_key(p, (int)op, u + KS_BIN_HDR + ext, key);
	count(p, (int)op, 1, key ? 1 : 0, KS_BIN_HDR + (__u64)body);
	if (next > p->len)
		return R_STOP;
	if ((h[1] == 0x07 || h[1] == 0x17) && !q(p, RQ_CLOSE))
		return R_STOP; /* quit */
	if (h[1] == 0x07 || h[1] == 0x17)
		used(p, RQ_CLOSE);
	win_skip(p, (__u32)next);
	return (int)next;
}

void ref_mc_parse(const __u8 *b, __u32 len, const struct ref_opts *o,
		  struct ref_out *out)
{
	struct p p = { .b = b, .len = len, .o = o, .out = out };
	__u32 pos = 0;
	int r;

	memset(out, 0, offsetof(struct ref_out, keys));
	if (!len)
		return;
	p.guess = o->tcp && !o->synced;
	p.proto = b[0] == 0x80;
	win_at(&p, 0);
	while (pos < len) {
		bool bin = b[pos] == 0x80;

		if (bin != (bool)p.proto) {
			if (q(&p, RQ_PROTO_MIX)) {
				used(&p, RQ_PROTO_MIX);
			} else if (p.proto) {
				/* text on a binary connection: a bad magic
				 * byte, and memcached closes */
				break;
			} else {
				bin = false; /* binary bytes read as text */
			}
		}
		p.cut_at = pos;
		p.lost = false;
		r = bin ? binary_request(&p, pos) : text_request(&p, pos);
		if (r == R_STOP && p.lost && q(&p, RQ_CLOSE) && o->nseg > 1) {
			/* the datapath lost the stream: it guesses again at
			 * the start of the next segment */
			__u32 at = bin && pos + KS_BIN_HDR <= len
					   ? pos + KS_BIN_HDR - 1
					   : pos;

			pos = seg_end_after(&p, at);
			if (pos >= len)
				break;
			used(&p, RQ_CLOSE);
			p.guess = true;
			win_at(&p, pos);
			continue;
		}
		if (r == R_STOP)
			break;
		if (r == R_CUT) {
			/* RQ_WINDOW: a cut unit longer than a window is stuck
			 * in it (item_limit); one longer than KS_CARRY at a
			 * TCP segment's end is dropped, uncounted */
			if (q(&p, RQ_WINDOW) && len - p.cut_at > KS_WIN &&
			    !(p.o->nseg > 1 &&
			      seg_end_after(&p, p.cut_at) < len)) {
				used(&p, RQ_WINDOW);
				err(&p, KS_ERR_ITEM_LIMIT);
			} else if (q(&p, RQ_WINDOW) && o->tcp &&
				   len - p.cut_at > KS_CARRY) {
				used(&p, RQ_WINDOW);
			} else {
				err(&p, KS_ERR_TRUNC_REQ);
			}
			break;
		}
		pos = (__u32)r;
	}
}

int ref_reason_of(const __u64 err[KS_ERR_MAX])
{
	int i, r = REF_NO_REASON;
	__u64 total = 0;

	for (i = 0; i < KS_ERR_MAX; i++)
		if (err[i]) {
			total += err[i];
			r = i;
		}
	return total > 1 ? -2 : r;
}

int ref_reason(const struct ref_out *out)
{
	return ref_reason_of(out->err);
}
