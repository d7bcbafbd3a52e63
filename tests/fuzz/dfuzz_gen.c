// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dfuzz_gen.c - inputs for the differential fuzzer: the seed list (the
 * payloads of tests/prog's fixtures), seeds built in code, payloads from a
 * small request grammar, and mutations. Everything draws from one seeded
 * generator, so a run is repeated exactly by its --seed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/purge.h"
#include "dfuzz.h"

/* splitmix64: small, fast, and the same on every machine */
__u64 fz_rand(struct fz_rng *r)
{
	__u64 z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

__u32 fz_below(struct fz_rng *r, __u32 n)
{
	return n ? (__u32)(fz_rand(r) % n) : 0;
}

/* True with probability 1/n. */
static bool one_in(struct fz_rng *r, __u32 n)
{
	return fz_below(r, n) == 0;
}

/* ---- a payload under construction ---- */

static void put(struct fz_input *in, const void *p, size_t n)
{
	if (in->len + n > FZ_MAX_PAY)
		n = FZ_MAX_PAY - in->len;
	memcpy(in->b + in->len, p, n);
	in->len += (__u32)n;
}

static void puts_(struct fz_input *in, const char *s)
{
	put(in, s, strlen(s));
}

static void putc_(struct fz_input *in, __u8 c)
{
	put(in, &c, 1);
}

static void putf(struct fz_input *in, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void putf(struct fz_input *in, const char *fmt, ...)
{
	char buf[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(in, buf,
		    (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* ---- escapes ---- */

char *fz_escape(const __u8 *b, size_t n, char *out, size_t size)
{
	size_t i, o = 0;

	for (i = 0; i < n && o + 5 < size; i++) {
		__u8 c = b[i];

		if (c == '\r' || c == '\n' || c == '\t' || c == '\\' ||
		    c == '"') {
			out[o++] = '\\';
			out[o++] = c == '\r'   ? 'r'
				   : c == '\n' ? 'n'
				   : c == '\t' ? 't'
					       : (char)c;
		} else if (c < 0x20 || c >= 0x7f) {
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
		} else {
			out[o++] = (char)c;
		}
	}
	if (size)
		out[o < size ? o : size - 1] = '\0';
	return out;
}

size_t fz_unescape(const char *s, __u8 *b, size_t size)
{
	size_t n = 0;

	while (*s && n < size) {
		char c = *s++;

		if (c != '\\' || !*s) {
			b[n++] = (__u8)c;
			continue;
		}
		c = *s++;
		switch (c) {
		case 'r':
			b[n++] = '\r';
			break;
		case 'n':
			b[n++] = '\n';
			break;
		case 't':
			b[n++] = '\t';
			break;
		case 'v':
			b[n++] = '\v';
			break;
		case 'f':
			b[n++] = '\f';
			break;
		case '0':
		case '1':
		case '2':
		case '3':
		case '4':
		case '5':
		case '6':
		case '7': {
			/* octal, up to three digits, as C reads the fixture
			 * the seed came from ("run\001away" is 0x01, not a
			 * NUL and "01") */
			unsigned v = (unsigned)(c - '0'), k;

			for (k = 1; k < 3 && *s >= '0' && *s <= '7'; k++)
				v = v * 8 + (unsigned)(*s++ - '0');
			b[n++] = (__u8)v;
			break;
		}
		case 'x':
			if (ks_hex_digit(s[0]) >= 0 &&
			    ks_hex_digit(s[1]) >= 0) {
				b[n++] = (__u8)(ks_hex_digit(s[0]) * 16 +
						ks_hex_digit(s[1]));
				s += 2;
			} else {
				b[n++] = 'x';
			}
			break;
		default:
			b[n++] = (__u8)c;
			break;
		}
	}
	return n;
}

/* ---- seeds ---- */

static struct fz_input *seed_slot(struct fz_input **v, size_t *n, size_t *cap)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct fz_input *nv = realloc(*v, nc * sizeof(**v));

		if (!nv)
			return NULL;
		*v = nv;
		*cap = nc;
	}
	memset(&(*v)[*n], 0, sizeof(**v));
	(*v)[*n].sport = 40000;
	return &(*v)[(*n)++];
}

int fz_seeds_load(const char *path, struct fz_input **v, size_t *n, size_t *cap)
{
	static char line[4 * FZ_MAX_PAY + 2];
	FILE *f = fopen(path, "r");
	int got = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct fz_input *in;
		size_t l = strlen(line);

		if (l && line[l - 1] == '\n')
			line[--l] = '\0';
		if (!l || line[0] == '#')
			continue;
		in = seed_slot(v, n, cap);
		if (!in) {
			fclose(f);
			return -ENOMEM;
		}
		in->len = (__u32)fz_unescape(line, in->b, FZ_MAX_PAY);
		got++;
	}
	fclose(f);
	return got;
}

/* Binary request header (24 bytes) + extras + key + value. */
static void put_binary(struct fz_input *in, __u8 opcode, __u8 extlen,
		       const char *key, __u16 keylen, __u32 vallen,
		       __u32 bodylen)
{
	__u8 h[KS_BIN_HDR] = { 0x80, opcode };
	__u32 i;

	h[2] = (__u8)(keylen >> 8);
	h[3] = (__u8)keylen;
	h[4] = extlen;
	h[8] = (__u8)(bodylen >> 24);
	h[9] = (__u8)(bodylen >> 16);
	h[10] = (__u8)(bodylen >> 8);
	h[11] = (__u8)bodylen;
	h[15] = 0x2a; /* opaque */
	put(in, h, sizeof(h));
	for (i = 0; i < extlen; i++)
		putc_(in, (__u8)(0xde + i));
	put(in, key, keylen);
	for (i = 0; i < vallen; i++)
		putc_(in, (__u8)('v' + i % 3));
}

static void key_of(char *k, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		k[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[(seed * 7 +
							       i * 13) %
							      36];
	k[len] = '\0';
}

/* Every request opcode, with the extras and value memcached expects. */
static const __u8 bin_opcodes[] = {
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09,
	0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13,
	0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d,
	0x1e, 0x20, 0x21, 0x22, 0x23, 0x24, 0x50, 0x7f, 0xff,
};

static __u8 bin_extlen(__u8 op)
{
	switch (op) {
	case 0x01:
	case 0x02:
	case 0x03:
	case 0x11:
	case 0x12:
	case 0x13:
		return 8;
	case 0x05:
	case 0x06:
	case 0x15:
	case 0x16:
		return 20;
	case 0x08:
	case 0x18:
	case 0x1b:
	case 0x1c:
	case 0x1d:
	case 0x1e:
	case 0x23:
	case 0x24:
		return 4;
	}
	return 0;
}

static bool bin_has_value(__u8 op)
{
	return op == 0x01 || op == 0x02 || op == 0x03 || op == 0x0e ||
	       op == 0x0f || op == 0x11 || op == 0x12 || op == 0x13 ||
	       op == 0x19 || op == 0x1a;
}

static bool bin_has_key(__u8 op)
{
	return op <= 0x06 || op == 0x09 || op == 0x0c || op == 0x0d ||
	       op == 0x0e || op == 0x0f || (op >= 0x11 && op <= 0x16) ||
	       op == 0x19 || op == 0x1a || (op >= 0x1c && op <= 0x1e) ||
	       op == 0x23 || op == 0x24;
}

static void put_binary_std(struct fz_input *in, __u8 op, const char *key)
{
	__u8 ext = bin_extlen(op);
	__u16 kl = bin_has_key(op) ? (__u16)strlen(key) : 0;
	__u32 vl = bin_has_value(op) ? 5 : 0;

	put_binary(in, op, ext, key, kl, vl, ext + kl + vl);
}

/* "get k1 k2 ...\r\n": nkeys keys of klen bytes. */
static void put_get_line(struct fz_input *in, unsigned nkeys, size_t klen,
			 unsigned seed)
{
	char k[KS_KEY_BUF];
	unsigned i;

	puts_(in, "get");
	for (i = 0; i < nkeys; i++) {
		key_of(k, klen, seed + i);
		putc_(in, ' ');
		puts_(in, k);
	}
	puts_(in, "\r\n");
}

int fz_seeds_builtin(struct fz_input **v, size_t *n, size_t *cap)
{
	struct fz_input *in;
	char k[KS_KEY_BUF];
	size_t i;
	int got = 0;

#define NEW()                                                                  \
	do {                                                                   \
		in = seed_slot(v, n, cap);                                     \
		if (!in)                                                       \
			return -ENOMEM;                                        \
		got++;                                                         \
	} while (0)

	/* every binary opcode alone, then all pipelined */
	for (i = 0; i < sizeof(bin_opcodes); i++) {
		NEW();
		key_of(k, 6, (unsigned)i);
		put_binary_std(in, bin_opcodes[i], k);
	}
	NEW();
	for (i = 0; i < sizeof(bin_opcodes); i++) {
		key_of(k, 4 + i % 9, (unsigned)i);
		put_binary_std(in, bin_opcodes[i], k);
	}
	/* binary: 250- and 251-byte keys, a value continuing past the packet */
	NEW();
	key_of(k, 250, 1);
	put_binary_std(in, 0x0c, k);
	NEW();
	key_of(k, 251, 2);
	put_binary_std(in, 0x00, k);
	NEW();
	put_binary(in, 0x01, 8, "bigval", 6, 10, 8 + 6 + 5000);
	/* multi-gets: 64, 200 (the limit) and 201 keys; four 250-byte keys */
	NEW();
	put_get_line(in, 64, 12, 0);
	NEW();
	put_get_line(in, KS_MAX_KEYS_PER_REQ, 4, 0);
	NEW();
	put_get_line(in, KS_MAX_KEYS_PER_REQ + 1, 4, 0);
	NEW();
	put_get_line(in, 4, KS_MAX_KEY_LEN, 0);
	/* 300 mn (item limit), 40 gets, 30 gets of 76 bytes (window) */
	NEW();
	for (i = 0; i < 300; i++)
		puts_(in, "mn\r\n");
	NEW();
	for (i = 0; i < 40; i++)
		putf(in, "get key%02zu\r\n", i);
	NEW();
	for (i = 0; i < 30; i++) {
		key_of(k, 70, (unsigned)i);
		putf(in, "get ");
		puts_(in, k);
		puts_(in, "\r\n");
	}
	/* one line of nine 250-byte keys: longer than the window */
	NEW();
	put_get_line(in, 9, KS_MAX_KEY_LEN, 9);
	/* a 1000-byte value, then a get; a 5000-byte value cut */
	NEW();
	puts_(in, "set v1k 0 0 1000\r\n");
	for (i = 0; i < 1000; i++)
		putc_(in, 'v');
	puts_(in, "\r\nget after\r\n");
	NEW();
	puts_(in, "set bigv 0 0 5000\r\n");
	for (i = 0; i < 500; i++)
		putc_(in, 'v');
	/* midstream: 300 bytes of value, then 200 bytes of noise */
	NEW();
	for (i = 0; i < 300; i++)
		putc_(in, 'x');
	puts_(in, "\r\n");
	NEW();
	for (i = 0; i < 200; i++)
		putc_(in, (__u8)(i * 37 + 11));
#undef NEW
	return got;
}

/* ---- the grammar ---- */

static const char *const text_words[] = {
	"get",     "gets",        "gat",
	"gats",    "set",         "add",
	"replace", "append",      "prepend",
	"cas",     "delete",      "incr",
	"decr",    "touch",       "mg",
	"ms",      "md",          "ma",
	"me",      "mn",          "stats",
	"version", "verbosity",   "flush_all",
	"quit",    "shutdown",    "cache_memlimit",
	"slabs",   "lru_crawler", "lru",
	"watch",   "misbehave",   "stat",
	"GET",     "get_",        "gett",
	"m",       "xyzzy",       "g",
	"ge",
};

static const __u8 interesting[] = {
	' ',  '\r', '\n', '\t', 0,   0x01, 0x1f, 0x20, 0x21,
	0x7f, 0x80, 0xff, '0',  '9', 'a',  'g',  'e',  't',
};

/* A key: mostly short and plain, sometimes around the 250-byte limit, now
 * and then with bytes the protocol forbids. */
static void gen_key(struct fz_rng *r, struct fz_input *in)
{
	static const __u32 edge[] = { 1,  7,   8,   9,   31,  32,
				      33, 249, 250, 251, 252, 260 };
	__u32 len, i;

	if (one_in(r, 6))
		len = edge[fz_below(r, sizeof(edge) / sizeof(edge[0]))];
	else if (one_in(r, 8))
		len = 1 + fz_below(r, 260);
	else
		len = 1 + fz_below(r, 16);
	for (i = 0; i < len; i++) {
		__u8 c = (__u8)('a' + fz_below(r, 26));

		if (one_in(r, 40))
			c = (__u8)(0x21 +
				   fz_below(r, 0xdf)); /* any non-space */
		if (one_in(r, 300))
			c = interesting[fz_below(r, sizeof(interesting))];
		putc_(in, c);
	}
}

/* Spaces between tokens: one, a few, or a long run (the datapath follows
 * at most 257). */
static void gen_space(struct fz_rng *r, struct fz_input *in)
{
	static const __u32 runs[] = { 2, 3, 255, 256, 257, 258, 259, 300 };
	__u32 n = 1, i;

	if (one_in(r, 10))
		n = one_in(r, 3) ? runs[fz_below(r, 8)] : 2 + fz_below(r, 4);
	if (one_in(r, 200)) {
		putc_(in, interesting[fz_below(r, 4)]);
		return;
	}
	for (i = 0; i < n; i++)
		putc_(in, ' ');
}

static void gen_eol(struct fz_rng *r, struct fz_input *in)
{
	static const char *const odd[] = { "\n",       "\r",     "",
					   " \r\n",    "\r\r\n", "\n\n",
					   "\r\n\r\n", "\t\r\n" };

	if (one_in(r, 8))
		puts_(in, odd[fz_below(r, sizeof(odd) / sizeof(odd[0]))]);
	else
		puts_(in, "\r\n");
}

/* A number field: usually the value, sometimes a lie or not a number. */
static void gen_number(struct fz_rng *r, struct fz_input *in, __u32 v)
{
	static const char *const odd[] = {
		"",           "-1",          "abc",
		"0x10",       "00000000005", "12345678901",
		"1073741824", "1073741825",  "4294967301",
		"9999999999", "5x",          "+5",
		" 5",         "0000000000",
	};

	if (one_in(r, 20))
		puts_(in, odd[fz_below(r, sizeof(odd) / sizeof(odd[0]))]);
	else if (one_in(r, 15))
		putf(in, "%u", v + fz_below(r, 5) - 2);
	else
		putf(in, "%u", v);
}

static void gen_data(struct fz_rng *r, struct fz_input *in, __u32 n)
{
	__u32 i;

	for (i = 0; i < n && in->len < FZ_MAX_PAY; i++)
		putc_(in, one_in(r, 50) ? interesting[fz_below(r, 12)]
					: (__u8)('A' + i % 26));
	if (one_in(r, 20))
		puts_(in, one_in(r, 2) ? "\n" : "XY");
	else
		puts_(in, "\r\n");
}

static __u32 gen_value_len(struct fz_rng *r)
{
	if (one_in(r, 10))
		return fz_below(r, 2500);
	return fz_below(r, 40);
}

static void gen_binary(struct fz_rng *r, struct fz_input *in)
{
	__u8 op = one_in(r, 8) ? (__u8)fz_rand(r)
			       : bin_opcodes[fz_below(r, sizeof(bin_opcodes))];
	__u8 ext = one_in(r, 10) ? (__u8)fz_below(r, 40) : bin_extlen(op);
	__u16 kl = 0;
	__u32 vl = bin_has_value(op) ? gen_value_len(r) : 0, body;
	char k[300];
	__u32 i;

	if (bin_has_key(op) || one_in(r, 10)) {
		struct fz_input tmp = { .len = 0 };

		gen_key(r, &tmp);
		kl = (__u16)(tmp.len < sizeof(k) ? tmp.len : sizeof(k));
		memcpy(k, tmp.b, kl);
		if (one_in(r, 10))
			for (i = 0; i < kl; i++)
				k[i] = (char)fz_rand(
					r); /* binary keys are bytes */
	}
	body = ext + kl + vl;
	if (one_in(r, 12)) { /* a length field that lies */
		switch (fz_below(r, 4)) {
		case 0:
			body = fz_below(r, ext + kl + 1);
			break;
		case 1:
			body = (1U << 30) + fz_below(r, 3) - 1;
			break;
		case 2:
			body = (__u32)fz_rand(r);
			break;
		default:
			body += fz_below(r, 5000);
			break;
		}
	}
	put_binary(in, op, ext, k, kl, 0, body);
	for (i = 0; i < vl && in->len < FZ_MAX_PAY; i++)
		putc_(in, (__u8)fz_rand(r));
}

/* One text request from the grammar. */
static void gen_text(struct fz_rng *r, struct fz_input *in)
{
	const char *w = text_words[fz_below(r, sizeof(text_words) /
						       sizeof(text_words[0]))];
	__u32 nkeys, i, vlen;

	puts_(in, w);
	if (!strcmp(w, "get") || !strcmp(w, "gets") || !strcmp(w, "gat") ||
	    !strcmp(w, "gats")) {
		if (w[1] == 'a') {
			gen_space(r, in);
			gen_number(r, in, fz_below(r, 1000));
		}
		nkeys = one_in(r, 10) ? fz_below(r, 210) : fz_below(r, 6);
		if (one_in(r, 30))
			nkeys = 199 + fz_below(r, 4);
		for (i = 0; i < nkeys && in->len < FZ_MAX_PAY; i++) {
			gen_space(r, in);
			gen_key(r, in);
		}
		if (one_in(r, 10))
			gen_space(r, in);
		gen_eol(r, in);
	} else if (!strcmp(w, "ms") || !strcmp(w, "set") || !strcmp(w, "add") ||
		   !strcmp(w, "replace") || !strcmp(w, "append") ||
		   !strcmp(w, "prepend") || !strcmp(w, "cas")) {
		vlen = gen_value_len(r);
		gen_space(r, in);
		gen_key(r, in);
		if (w[0] != 'm' || w[1] != 's') {
			gen_space(r, in);
			gen_number(r, in, fz_below(r, 100)); /* flags */
			gen_space(r, in);
			gen_number(r, in, fz_below(r, 100)); /* exptime */
		}
		gen_space(r, in);
		gen_number(r, in, vlen);
		if (!strcmp(w, "cas") || one_in(r, 6)) {
			gen_space(r, in);
			gen_number(r, in, fz_below(r, 1000000));
		}
		if (one_in(r, 5))
			puts_(in, w[0] == 'm' ? " T60 F5" : " noreply");
		gen_eol(r, in);
		gen_data(r, in, vlen);
	} else {
		/* one-key, keyless, unknown: a key and arguments or not */
		if (!one_in(r, 4) || w[0] == 'm' || w[0] == 'd' ||
		    w[0] == 'i' || w[0] == 't') {
			gen_space(r, in);
			gen_key(r, in);
		}
		nkeys = fz_below(r, 3);
		for (i = 0; i < nkeys; i++) {
			gen_space(r, in);
			putf(in, "%c%u", "vtfqTDMN"[fz_below(r, 8)],
			     fz_below(r, 100));
		}
		gen_eol(r, in);
	}
}

/*
 * A set whose whole request is len bytes (len >= 16): pads a payload so
 * that the next request starts exactly where a boundary should fall.
 */
static void gen_filler(struct fz_input *in, __u32 len)
{
	__u32 v = len - 15, digits, pad;

	/* "set f 0 0 <v>\r\n" + v bytes + "\r\n" = 14 + digits(v) + v */
	for (;;) {
		digits = v >= 1000 ? 4 : v >= 100 ? 3 : v >= 10 ? 2 : 1;
		if (14 + digits + v <= len)
			break;
		v--;
	}
	putf(in, "set f 0 0 %u", v);
	/* spaces before the line end make up the rest */
	for (pad = len - (14 + digits + v); pad; pad--)
		putc_(in, ' ');
	puts_(in, "\r\n");
	while (v--)
		putc_(in, 'f');
	puts_(in, "\r\n");
}

void fz_generate(struct fz_rng *r, struct fz_input *in)
{
	__u32 n, i, bin;

	in->len = 0;
	/* now and then, put the window's end near the next request */
	if (one_in(r, 6))
		gen_filler(in, KS_WIN - 40 + fz_below(r, 40));
	n = one_in(r, 8) ? 1 + fz_below(r, 300) : 1 + fz_below(r, 4);
	/* memcached reads a connection as text or binary from its first
	 * byte on: mostly one protocol per input, now and then both */
	bin = one_in(r, 6) ? 1 : one_in(r, 20) ? 2 : 0;
	for (i = 0; i < n && in->len < FZ_MAX_PAY; i++) {
		if (bin == 1 || (bin == 2 && one_in(r, 3)))
			gen_binary(r, in);
		else if (one_in(r, 60))
			putc_(in, (__u8)fz_rand(r)); /* noise */
		else if (one_in(r, 4))
			puts_(in,
			      "mn\r\n"); /* cheap items for the item limit */
		else
			gen_text(r, in);
	}
}

void fz_pick_frame(struct fz_rng *r, struct fz_input *in)
{
	in->frame = (__u8)(one_in(r, 3) ? fz_below(r, FZ_FRAMES) : FZ_TCP4);
	in->nvlan = (__u8)(one_in(r, 4) ? fz_below(r, 3) : 0);
	in->l3_words = (__u8)(one_in(r, 4) ? fz_below(r, 11) : 0);
	in->l4_words = (__u8)(one_in(r, 4) ? fz_below(r, 11) : 0);
	in->tc = one_in(r, 4);
	in->pad = (__u8)(one_in(r, 8) ? 1 + fz_below(r, 40) : 0);
	in->sport = (__u16)(1024 + fz_below(r, 60000));
}

/* ---- mutations ---- */

static void insert_at(struct fz_input *in, __u32 at, const __u8 *p, __u32 n)
{
	if (in->len + n > FZ_MAX_PAY)
		n = FZ_MAX_PAY - in->len;
	memmove(in->b + at + n, in->b + at, in->len - at);
	memcpy(in->b + at, p, n);
	in->len += n;
}

static void delete_at(struct fz_input *in, __u32 at, __u32 n)
{
	if (at + n > in->len)
		n = in->len - at;
	memmove(in->b + at, in->b + at + n, in->len - at - n);
	in->len -= n;
}

/* Rewrites the first decimal number at or after a random place. */
static void lie_number(struct fz_rng *r, struct fz_input *in)
{
	static const char *const lies[] = {
		"0", "1", "99999", "1073741825", "12345678901", "2048", "-3"
	};
	__u32 at = fz_below(r, in->len), end;
	const char *l;

	while (at < in->len && (in->b[at] < '0' || in->b[at] > '9'))
		at++;
	if (at == in->len)
		return;
	for (end = at; end < in->len && in->b[end] >= '0' && in->b[end] <= '9';)
		end++;
	delete_at(in, at, end - at);
	l = lies[fz_below(r, sizeof(lies) / sizeof(lies[0]))];
	insert_at(in, at, (const __u8 *)l, (__u32)strlen(l));
}

/* Rewrites a length field of a binary header (magic byte found). */
static void lie_binary(struct fz_rng *r, struct fz_input *in)
{
	__u32 from = fz_below(r, in->len);
	__u8 *h = memchr(in->b + from, 0x80, in->len - from);
	__u32 v = one_in(r, 2) ? fz_below(r, 300) : (__u32)fz_rand(r);

	if (!h || h + KS_BIN_HDR > in->b + in->len)
		return;
	switch (fz_below(r, 3)) {
	case 0:
		h[2] = (__u8)(v >> 8);
		h[3] = (__u8)v;
		break; /* keylen */
	case 1:
		h[4] = (__u8)v;
		break; /* extlen */
	default:       /* bodylen */
		h[8] = (__u8)(v >> 24);
		h[9] = (__u8)(v >> 16);
		h[10] = (__u8)(v >> 8);
		h[11] = (__u8)v;
		break;
	}
}

static void mutate_once(struct fz_rng *r, struct fz_input *in,
			const struct fz_input *other)
{
	__u32 at = fz_below(r, in->len + 1), n;
	__u8 c;

	switch (fz_below(r, 11)) {
	case 0: /* a random byte */
		if (at < in->len)
			in->b[at] = (__u8)fz_rand(r);
		break;
	case 1: /* an interesting byte */
		if (at < in->len)
			in->b[at] =
				interesting[fz_below(r, sizeof(interesting))];
		break;
	case 2: /* a bit */
		if (at < in->len)
			in->b[at] ^= (__u8)(1u << fz_below(r, 8));
		break;
	case 3: /* insert bytes */
		n = 1 + fz_below(r, 8);
		while (n--) {
			c = one_in(r, 2) ? interesting[fz_below(
						   r, sizeof(interesting))]
					 : (__u8)fz_rand(r);
			insert_at(in, at, &c, 1);
		}
		break;
	case 4: /* delete a range */
		if (at < in->len)
			delete_at(in, at, 1 + fz_below(r, 16));
		break;
	case 5: /* duplicate a range */
		if (at < in->len) {
			__u8 tmp[64];

			n = 1 + fz_below(r, 64);
			if (at + n > in->len)
				n = in->len - at;
			memcpy(tmp, in->b + at, n);
			insert_at(in, at, tmp, n);
		}
		break;
	case 6: /* splice: our head, the other's tail */
		if (other && other->len) {
			n = fz_below(r, other->len);
			in->len = at;
			put(in, other->b + n, other->len - n);
		}
		break;
	case 7: /* truncate */
		in->len = at;
		break;
	case 8:
		lie_number(r, in);
		break;
	case 9:
		if (in->len)
			lie_binary(r, in);
		break;
	default: /* line ends: "\r\n" becomes "\n", "\r" or nothing */
		if (at + 1 < in->len && in->b[at] == '\r' &&
		    in->b[at + 1] == '\n')
			delete_at(in, at + (one_in(r, 2) ? 0 : 1),
				  one_in(r, 3) ? 2 : 1);
		else if (at < in->len)
			insert_at(in, at, (const __u8 *)"\r\n", 2);
		break;
	}
}

void fz_mutate(struct fz_rng *r, struct fz_input *in,
	       const struct fz_input *other)
{
	__u32 n = 1 + fz_below(r, 4);

	while (n--)
		mutate_once(r, in, other);
}

/* ---- request streams (stream mode) ---- */

/*
 * Safe bytes for streams that lose segments: a datapath that guesses where
 * a request begins after a gap may only ever land on a real request, so no
 * key or value byte may begin a command word, and no byte but a binary
 * header's magic is 0x80. Upper case, digits, ':' and '_', and now and then
 * memcaslap's 0x10 or a tab inside a key.
 */
static __u8 safe_byte(struct fz_rng *r, bool key)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_";

	if (key && one_in(r, 40))
		return one_in(r, 2) ? 0x10 : '\t';
	return (__u8)a[fz_below(r, sizeof(a) - 1)];
}

static void stream_key(struct fz_rng *r, struct fz_input *in, bool safe,
		       __u32 maxlen)
{
	__u32 len = one_in(r, 10) ? 1 + fz_below(r, maxlen)
				  : 1 + fz_below(r, 24),
	      i;

	if (!safe && one_in(r, 4)) {
		gen_key(r, in);
		return;
	}
	for (i = 0; i < len; i++)
		putc_(in, safe_byte(r, true));
}

static void stream_value(struct fz_rng *r, struct fz_input *in, bool safe,
			 __u32 n)
{
	__u32 i;

	for (i = 0; i < n && in->len < FZ_MAX_PAY; i++)
		putc_(in, safe            ? safe_byte(r, false)
			  : one_in(r, 30) ? (__u8)fz_rand(r)
					  : (__u8)('a' + i % 26));
}

/* A binary length that has no 0x80 byte (safe streams). */
static __u32 no80(__u32 v)
{
	while ((v & 0xff) == 0x80 || ((v >> 8) & 0xff) == 0x80 ||
	       ((v >> 16) & 0xff) == 0x80)
		v++;
	return v;
}

static void stream_binary(struct fz_rng *r, struct fz_input *in, bool safe)
{
	static const __u8 ops[] = { 0x00, 0x09, 0x0c, 0x0d, 0x01, 0x11, 0x02,
				    0x03, 0x04, 0x14, 0x05, 0x06, 0x0e, 0x0f,
				    0x1c, 0x1d, 0x1e, 0x0a, 0x0b, 0x10 };
	struct fz_input k = { .len = 0 };
	__u8 op = ops[fz_below(r, sizeof(ops))], ext = bin_extlen(op);
	__u32 vl = bin_has_value(op) ? (one_in(r, 8) ? fz_below(r, 3000)
						     : fz_below(r, 60))
				     : 0;
	__u32 i, body;

	if (bin_has_key(op) || (op == 0x10 && one_in(r, 2)))
		stream_key(r, &k, true, 250);
	if (k.len > 250)
		k.len = 250;
	if (safe) {
		/* no 0x80 in the lengths: a value one longer, or (no value
		 * allowed) a key one shorter */
		if (k.len == 0x80)
			k.len--;
		while (no80(ext + k.len + vl) != ext + k.len + vl) {
			if (bin_has_value(op))
				vl++;
			else if (k.len > 1)
				k.len--;
			else
				break;
		}
	}
	body = ext + k.len + vl;
	put_binary(in, op, ext, (const char *)k.b, (__u16)k.len, 0, body);
	stream_value(r, in, safe, vl);
	(void)i;
}

/* One request of a stream, mostly well formed. */
static void stream_request(struct fz_rng *r, struct fz_input *in, bool safe)
{
	static const char *const store[] = { "set",    "add",     "replace",
					     "append", "prepend", "cas" };
	static const char *const one[] = { "delete", "incr", "decr", "touch",
					   "mg",     "md",   "ma",   "me" };
	__u32 n, i, v;
	const char *w;

	switch (fz_below(r, 6)) {
	case 0: /* get/gets/gat/gats, 1..64 keys (sometimes 200+) */
		w = (const char *[]){ "get", "gets", "gat",
				      "gats" }[fz_below(r, 4)];
		puts_(in, w);
		if (w[1] == 'a')
			putf(in, " %u", fz_below(r, 1000));
		n = one_in(r, 20) ? 1 + fz_below(r, 260) : 1 + fz_below(r, 8);
		for (i = 0; i < n && in->len < FZ_MAX_PAY - 300; i++) {
			putc_(in, ' ');
			stream_key(r, in, safe, 250);
		}
		puts_(in, "\r\n");
		break;
	case 1: /* storage with a value */
		w = store[fz_below(r, 6)];
		v = one_in(r, 6) ? fz_below(r, 2500) : fz_below(r, 100);
		puts_(in, w);
		putc_(in, ' ');
		stream_key(r, in, safe, 250);
		putf(in, " %u %u %u", fz_below(r, 100), fz_below(r, 100), v);
		if (w[0] == 'c')
			putf(in, " %u", fz_below(r, 100000));
		if (one_in(r, 4))
			puts_(in, " noreply");
		puts_(in, "\r\n");
		stream_value(r, in, safe, v);
		puts_(in, !safe && one_in(r, 30) ? "XY" : "\r\n");
		break;
	case 2: /* ms */
		v = one_in(r, 6) ? fz_below(r, 2500) : fz_below(r, 100);
		puts_(in, "ms ");
		stream_key(r, in, safe, 250);
		putf(in, " %u", v);
		if (one_in(r, 2))
			puts_(in, " T60 F5");
		if (one_in(r, 4))
			puts_(in, " q");
		puts_(in, "\r\n");
		stream_value(r, in, safe, v);
		puts_(in, "\r\n");
		break;
	case 3: /* one key */
		w = one[fz_below(r, 8)];
		puts_(in, w);
		putc_(in, ' ');
		stream_key(r, in, safe, 250);
		if (!strcmp(w, "incr") || !strcmp(w, "decr") ||
		    !strcmp(w, "touch"))
			putf(in, " %u", fz_below(r, 1000));
		else if (w[0] == 'm' && w[1] != 'e' && one_in(r, 2))
			puts_(in, (const char *[]){ " v", " v t", " q",
						    " T30 v" }[fz_below(r, 4)]);
		if (w[0] != 'm' && one_in(r, 4))
			puts_(in, " noreply");
		puts_(in, "\r\n");
		break;
	case 4: /* keyless */
		puts_(in,
		      (const char *[]){ "mn\r\n", "version\r\n", "stats\r\n",
					"stats items\r\n",
					"verbosity 1\r\n" }[fz_below(r, 5)]);
		break;
	default: /* from the grammar: refusals and odd forms too */
		if (safe)
			puts_(in, "mn\r\n");
		else
			gen_text(r, in);
		break;
	}
}

__u32 fz_gen_stream(struct fz_rng *r, __u8 *b, __u32 cap, bool safe,
		    bool binary)
{
	static struct fz_input one;
	__u32 len = 0, target = 200 + fz_below(r, cap - 200);

	while (len < target) {
		one.len = 0;
		if (binary)
			stream_binary(r, &one, safe);
		else
			stream_request(r, &one, safe);
		if (len + one.len > cap)
			break;
		memcpy(b + len, one.b, one.len);
		len += one.len;
	}
	return len;
}
