// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dashboard.c - the layout and drawing of the live dashboard (see
 * dashboard.h), and the per-key rate history its sparklines show.
 *
 * Every line is built in a struct dline that refuses glyphs past the
 * width, so no miscounted column can ever make a line wrap; the column
 * plans below only decide what is worth showing in that width.
 */
#include <stdlib.h>
#include <string.h>
#include "render/dashboard.h"
#include "core/names.h"
#include "util/opts.h"
#include "core/shard_rates.h"
#include "render/text.h"

#define KEY_MIN    6  /* narrowest key or name column */
#define KEY_MAX    40 /* widest key column */
#define SPARK_MIN  4  /* narrowest sparkline or bar */
#define SPARK_PREF 40 /* sparkline width reached before keys widen */
#define RATE_W     9  /* a rate column with its gap: " 123456.7" */
#define RATIO_W    7  /* " 12.34x" */
#define NAME_MAX_W 24 /* shard names */
#define GAP        2  /* before a sparkline or a bar */
#define HOT_KEY_W  12 /* hot-key columns go before keys get narrower */
#define LINE_BYTES (KS_DASH_MAX_W * 3 + 16) /* 3 bytes a block glyph */

/* ---- the history ------------------------------------------------------ */

void ks_dash_history_init(struct ks_dash_history *h)
{
	memset(h, 0, sizeof(*h));
}

static const struct ks_dash_key *hist_find(const struct ks_dash_history *h,
					   __u64 hash)
{
	size_t i;

	for (i = 0; i < KS_DASH_KEYS; i++)
		if (h->keys[i].hash == hash)
			return &h->keys[i];
	return NULL;
}

/* The key's slot; a new key takes a free slot or the one out of the top
 * list the longest, with every interval absent. */
static struct ks_dash_key *hist_slot(struct ks_dash_history *h, __u64 hash)
{
	struct ks_dash_key *k = (struct ks_dash_key *)hist_find(h, hash);
	size_t i;

	if (k)
		return k;
	k = &h->keys[0];
	for (i = 0; i < KS_DASH_KEYS; i++) {
		if (!h->keys[i].hash) {
			k = &h->keys[i];
			break;
		}
		if (h->keys[i].last_tick < k->last_tick)
			k = &h->keys[i];
	}
	k->hash = hash;
	for (i = 0; i < KS_DASH_HIST; i++)
		k->mps[i] = KS_DASH_ABSENT;
	return k;
}

int ks_dash_history_add(struct ks_dash_history *h, const struct ks_report *r)
{
	size_t slot = h->tick % KS_DASH_HIST, i;
	__u32 n = r->n_top < KS_REPORT_TOP ? r->n_top : KS_REPORT_TOP;

	if (!r->updated_ns || r->updated_ns == h->updated_ns)
		return 0;
	for (i = 0; i < KS_DASH_KEYS; i++) {
		struct ks_dash_key *k = &h->keys[i];

		if (!k->hash)
			continue;
		/* Absent for the whole window: nothing left to draw. */
		if (h->tick - k->last_tick >= KS_DASH_HIST)
			k->hash = 0;
		else
			k->mps[slot] = KS_DASH_ABSENT;
	}
	for (i = 0; i < n; i++) {
		const struct ks_top_entry *t = &r->top[i];
		struct ks_dash_key *k;

		if (!t->hash)
			continue;
		k = hist_slot(h, t->hash);
		k->mps[slot] = t->reads_mps + t->writes_mps;
		k->last_tick = h->tick;
	}
	h->tick++;
	h->updated_ns = r->updated_ns;
	return 1;
}

/* The rate age intervals before the newest, or KS_DASH_ABSENT. */
static __u64 hist_at(const struct ks_dash_history *h,
		     const struct ks_dash_key *k, int age)
{
	if (!k || age >= KS_DASH_HIST || (__u64)age >= h->tick)
		return KS_DASH_ABSENT;
	return k->mps[(h->tick - 1 - (__u64)age) % KS_DASH_HIST];
}

static const char *const blocks[8] = { "\u2581", "\u2582", "\u2583", "\u2584",
				       "\u2585", "\u2586", "\u2587", "\u2588" };
static const char ascii_levels[] = ".:-=+*#@";

size_t ks_dash_sparkline(const struct ks_dash_history *h, __u64 hash, int width,
			 int utf8, char *buf, size_t len)
{
	const struct ks_dash_key *k = hist_find(h, hash);
	__u64 max = 0, sum = 0, n = 0;
	size_t o = 0;
	int i;

	if (!len)
		return 0;
	for (i = 0; i < width; i++) {
		__u64 v = hist_at(h, k, i);

		if (v == KS_DASH_ABSENT)
			continue;
		max = v > max ? v : max;
		sum += v;
		n++;
	}
	/* The scale is at least twice the mean: a steady key draws a level
	 * line at half height, and a rise or a fall both show. */
	if (n && 2 * (sum / n) > max)
		max = 2 * (sum / n);
	for (i = width - 1; i >= 0 && o + 4 <= len; i--) {
		__u64 v = hist_at(h, k, i);
		int lvl;

		if (v == KS_DASH_ABSENT) {
			buf[o++] = ' ';
			continue;
		}
		/* ceil(8 v / max) - 1: any rate above 0 shows, the top
		 * level is the window's highest */
		lvl = v && max ? (int)((v * 8 - 1) / max) : 0;
		if (utf8) {
			memcpy(buf + o, blocks[lvl], 3);
			o += 3;
		} else {
			buf[o++] = ascii_levels[lvl];
		}
	}
	buf[o] = '\0';
	return o;
}

/* ---- lines that never outgrow the width --------------------------------- */

struct dline {
	char b[LINE_BYTES];
	size_t len;
	int cols, width;
};

static void dl_init(struct dline *l, int width)
{
	l->len = 0;
	l->cols = 0;
	l->width = width;
	l->b[0] = '\0';
}

/* One glyph of n bytes, one column, if the line has room for it. */
static void dl_glyph(struct dline *l, const char *g, size_t n)
{
	if (l->cols >= l->width || l->len + n >= sizeof(l->b))
		return;
	memcpy(l->b + l->len, g, n);
	l->len += n;
	l->b[l->len] = '\0';
	l->cols++;
}

static size_t glyph_len(const char *s)
{
	size_t n = 1;

	while ((s[n] & 0xc0) == 0x80)
		n++;
	return n;
}

static void dl_str(struct dline *l, const char *s)
{
	while (*s) {
		size_t n = glyph_len(s);

		dl_glyph(l, s, n);
		s += n;
	}
}

static void dl_spaces(struct dline *l, int n)
{
	while (n-- > 0)
		dl_glyph(l, " ", 1);
}

/* ASCII s in exactly w columns, aligned left or right, cut at w. */
static void dl_field(struct dline *l, const char *s, int w, int right)
{
	int n = (int)strlen(s), i;

	if (n > w)
		n = w;
	if (right)
		dl_spaces(l, w - n);
	for (i = 0; i < n; i++)
		dl_glyph(l, s + i, 1);
	if (!right)
		dl_spaces(l, w - n);
}

/* ASCII s in exactly w columns, its end kept when cut ("...2.11:11211"):
 * shard names differ in their last octet and port. */
static void dl_field_tail(struct dline *l, const char *s, int w)
{
	int n = (int)strlen(s);

	if (n <= w || w <= 3) {
		dl_field(l, s, w, 0);
		return;
	}
	dl_str(l, "...");
	dl_field(l, s + n - (w - 3), w - 3, 0);
}

/* A horizontal bar of w columns for v out of max: eighths of a block, or
 * '#' in ASCII; anything above 0 shows. */
static void dl_bar(struct dline *l, __u64 v, __u64 max, int w, int utf8)
{
	static const char *const eighths[7] = { "\u258f", "\u258e", "\u258d",
						"\u258c", "\u258b", "\u258a",
						"\u2589" };
	int steps = utf8 ? 8 : 1, used = 0;
	__u64 e = max ? v * (__u64)steps * (__u64)w / max : 0;

	if (v && !e)
		e = 1;
	for (; e >= (__u64)steps && used < w; e -= steps, used++)
		dl_glyph(l, utf8 ? blocks[7] : "#", utf8 ? 3 : 1);
	if (e && used < w) {
		dl_glyph(l, utf8 ? eighths[e - 1] : "#", utf8 ? 3 : 1);
		used++;
	}
	dl_spaces(l, w - used);
}

int ks_dash_cols(const char *s, size_t len)
{
	int cols = 0;
	size_t i;

	for (i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			cols++;
	return cols;
}

/* ---- what every section shares ------------------------------------------ */

struct dash {
	FILE *f;
	const struct ks_view *v;
	const struct ks_dash_history *h;
	int w, utf8;
};

/* Writes the line without trailing blanks. */
static void dl_emit(struct dash *d, struct dline *l)
{
	while (l->len && l->b[l->len - 1] == ' ')
		l->len--;
	fwrite(l->b, 1, l->len, d->f);
	fputc('\n', d->f);
}

/* "123.4", "12.3k", "4.5M": at most 7 characters. */
static void fmt_rate(__u64 mps, char *buf, size_t len)
{
	double v = mps / 1000.0;

	if (v < 1e4)
		snprintf(buf, len, "%.1f", v);
	else if (v < 1e6)
		snprintf(buf, len, "%.1fk", v / 1e3);
	else if (v < 1e9)
		snprintf(buf, len, "%.1fM", v / 1e6);
	else
		snprintf(buf, len, "%.1fG", v / 1e9);
}

static void dl_rate(struct dline *l, __u64 mps, int w)
{
	char r[32];

	fmt_rate(mps, r, sizeof(r));
	dl_field(l, r, w, 1);
}

/*
 * Pieces of a status line: taken by priority (0 first) until one does not
 * fit (so a narrower window only ever loses the least important ones),
 * shown in array order two spaces apart. The priority-0 piece is always
 * taken (cut to the width if it must be); empty pieces are left out.
 */
struct piece {
	char text[96];
	int prio;
};

static void dl_pieces(struct dline *l, const struct piece *p, int n)
{
	int take[16] = { 0 }, used = 0, prio, i, first = 1, full = 0;

	for (prio = 0; prio < 16 && !full; prio++) {
		for (i = 0; i < n && i < 16 && !full; i++) {
			int w = (int)strlen(p[i].text) + (used ? 2 : 0);

			if (p[i].prio != prio || !p[i].text[0])
				continue;
			full = prio && used + w > l->width;
			if (!full) {
				take[i] = 1;
				used += w;
			}
		}
	}
	for (i = 0; i < n && i < 16; i++) {
		if (!take[i])
			continue;
		if (!first)
			dl_str(l, "  ");
		dl_str(l, p[i].text);
		first = 0;
	}
}

static __u64 since(__u64 now, __u64 then)
{
	return now > then ? now - then : 0;
}

/* ---- header ------------------------------------------------------------- */

static void draw_header(struct dash *d)
{
	const struct ks_report *r = d->v->rep;
	struct piece p[8];
	char a[32], b[32], c[32];
	struct dline l;
	__u64 end = d->v->agent_alive ? d->v->now_ns : r->updated_ns;

	memset(p, 0, sizeof(p));
	snprintf(p[0].text, sizeof(p[0].text), "keysteer");
	p[0].prio = 7;
	snprintf(p[1].text, sizeof(p[1].text), "%.16s", r->ifname);
	p[1].prio = 0;
	snprintf(p[2].text, sizeof(p[2].text), "%s",
		 !d->v->agent_alive ? "AGENT NOT RUNNING"
		 : r->updated_ns    ? "agent running"
				    : "agent starting");
	p[2].prio = 1;
	ks_format_duration(r->start_ns ? since(end, r->start_ns) : 0, a,
			   sizeof(a));
	snprintf(p[3].text, sizeof(p[3].text), "up %s", a);
	p[3].prio = 4;
	/* with the ring placement's largest 1 in P while a CPU places
	 * fewer than all its sampled keys (--place-target) */
	if (r->place_p > 1)
		snprintf(p[4].text, sizeof(p[4].text), "sample 1/%u, ring 1/%u",
			 r->sample_n ? r->sample_n : 1, r->place_p);
	else
		snprintf(p[4].text, sizeof(p[4].text), "sample 1/%u",
			 r->sample_n ? r->sample_n : 1);
	p[4].prio = 5;
	fmt_rate(r->class_req_mps[KS_CLASS_READ], a, sizeof(a));
	fmt_rate(r->class_req_mps[KS_CLASS_WRITE], b, sizeof(b));
	fmt_rate(r->class_req_mps[KS_CLASS_OTHER], c, sizeof(c));
	snprintf(p[5].text, sizeof(p[5].text), "read %s/s", a);
	p[5].prio = 2;
	snprintf(p[6].text, sizeof(p[6].text), "write %s/s", b);
	p[6].prio = 3;
	snprintf(p[7].text, sizeof(p[7].text), "other %s/s", c);
	p[7].prio = 6;
	dl_init(&l, d->w);
	dl_pieces(&l, p, 8);
	dl_emit(d, &l);
}

/* ---- top keys ----------------------------------------------------------- */

static int n_top(const struct ks_view *v)
{
	int n = (int)(v->rep->n_top < KS_REPORT_TOP ? v->rep->n_top
						    : KS_REPORT_TOP);

	return v->top > 0 && v->top < n ? v->top : n;
}

/* A key as shown: escaped bytes or the hash, cut to fit w (w < len). */
static void key_text(const struct ks_view *v, const __u8 *key, __u16 len,
		     __u64 hash, char *buf, int w)
{
	if (v->hash_only)
		snprintf(buf, (size_t)w + 1, "%016llx",
			 (unsigned long long)hash);
	else
		ks_key_text(key, len > KS_MAX_KEY_LEN ? KS_MAX_KEY_LEN : len,
			    buf, (size_t)w + 1);
}

static int imin(int a, int b)
{
	return a < b ? a : b;
}

static int imax(int a, int b)
{
	return a > b ? a : b;
}

/* Column plan of the top keys: key, reads/s, writes/s, sparkline. */
struct top_cols {
	int key, writes, spark;
};

static void plan_top(int w, int keyneed, struct top_cols *c)
{
	int rest = w - 2 * RATE_W;

	c->writes = 1;
	c->spark = 0;
	if (rest < KEY_MIN + GAP + SPARK_MIN) {
		rest += RATE_W;
		c->writes = 0;
	}
	if (rest < KEY_MIN + GAP + SPARK_MIN) {
		c->key = rest;
		return;
	}
	/* The sparkline first grows to SPARK_PREF, then the key column to
	 * what the keys need, then the sparkline to its whole history; the
	 * key column never takes more than 3/5 of what is left. */
	c->key = imax(keyneed, rest - GAP - SPARK_PREF);
	c->key = imin(c->key, KEY_MAX);
	c->key = imin(c->key, imax(KEY_MIN, (rest - GAP) * 3 / 5));
	c->spark = imin(KS_DASH_HIST, rest - GAP - c->key);
}

static void draw_top(struct dash *d, int lines)
{
	const struct ks_report *r = d->v->rep;
	int n = n_top(d->v), shown = imin(n, lines - 1), keyneed = 8, i;
	char key[KEY_MAX + 1], spark[KS_DASH_HIST * 3 + 4];
	struct top_cols c;
	struct dline l;

	for (i = 0; i < shown; i++) {
		const struct ks_top_entry *t = &r->top[i];

		key_text(d->v, t->key, t->len, t->hash, key, KEY_MAX);
		keyneed = imax(keyneed, (int)strlen(key));
	}
	plan_top(d->w, keyneed, &c);
	dl_init(&l, d->w);
	snprintf(key, sizeof(key), "TOP KEYS %d/%d", shown, n);
	dl_field(&l,
		 shown < n && (int)strlen(key) <= c.key ? key
		 : c.key >= 8                           ? "TOP KEYS"
							: "TOP",
		 c.key, 0);
	dl_field(&l, "reads/s", RATE_W, 1);
	if (c.writes)
		dl_field(&l, "writes/s", RATE_W, 1);
	if (c.spark) {
		dl_spaces(&l, GAP);
		snprintf(spark, sizeof(spark), "last %d intervals", c.spark);
		dl_str(&l, (int)strlen(spark) <= c.spark ? spark
			   : c.spark >= 7                ? "history"
							 : "");
	}
	dl_emit(d, &l);
	if (!n && lines > 1) {
		dl_init(&l, d->w);
		dl_str(&l, "(no sampled keys yet)");
		dl_emit(d, &l);
	}
	for (i = 0; i < shown; i++) {
		const struct ks_top_entry *t = &r->top[i];

		dl_init(&l, d->w);
		key_text(d->v, t->key, t->len, t->hash, key, c.key);
		dl_field(&l, key, c.key, 0);
		dl_rate(&l, t->reads_mps, RATE_W);
		if (c.writes)
			dl_rate(&l, t->writes_mps, RATE_W);
		if (c.spark) {
			dl_spaces(&l, GAP);
			ks_dash_sparkline(d->h, t->hash, c.spark, d->utf8,
					  spark, sizeof(spark));
			dl_str(&l, spark);
		}
		dl_emit(d, &l);
	}
}

/* ---- shards ------------------------------------------------------------- */

static int has_ring(const struct ks_view *v)
{
	return v->ring && v->ring->version && v->ring->nshards &&
	       v->ring->nshards <= KS_MAX_SHARDS;
}

static __u64 shard_mps(const struct ks_shard_report *r, __u32 i)
{
	return r->shards[i].reads_mps + r->shards[i].writes_mps;
}

static void shard_row(struct dash *d, const struct ks_shard_report *r, __u32 i,
		      __u64 max, int nw, int bw, int ratio)
{
	char name[KS_SHARD_NAME_LEN], x[16];
	struct dline l;

	dl_init(&l, d->w);
	snprintf(name, sizeof(name), "%.*s", KS_SHARD_NAME_LEN - 1,
		 r->shards[i].name);
	dl_str(&l, i == r->busiest ? "*" : " ");
	dl_field_tail(&l, name, nw);
	dl_rate(&l, shard_mps(r, i), RATE_W);
	if (bw) {
		dl_spaces(&l, GAP);
		dl_bar(&l, shard_mps(r, i), max, bw, d->utf8);
	}
	if (ratio) {
		snprintf(x, sizeof(x), "%.2fx",
			 r->shards[i].ratio_milli / 1000.0);
		dl_field(&l, x, RATIO_W, 1);
	}
	dl_emit(d, &l);
}

static void draw_shards(struct dash *d, int lines)
{
	const struct ks_shard_report *r = d->v->ring;
	__u32 n = r->nshards, order[KS_MAX_SHARDS], i;
	int shown = imin((int)n, lines - 1), nameneed = KEY_MIN, nw, bw = 0;
	int rest = d->w - 1 - RATE_W - GAP - RATIO_W, ratio = 1;
	char title[64];
	__u64 max = 0;
	struct dline l;

	ks_shard_order(r, n, order);
	for (i = 0; i < n; i++)
		if (shard_mps(r, i) > max)
			max = shard_mps(r, i);
	for (i = 0; i < (__u32)shown; i++)
		nameneed = imax(nameneed, (int)strnlen(r->shards[order[i]].name,
						       KS_SHARD_NAME_LEN - 1));
	nameneed = imin(nameneed, NAME_MAX_W);
	if (rest < KEY_MIN + SPARK_MIN) {
		rest += RATIO_W;
		ratio = 0;
	}
	if (rest < KEY_MIN + SPARK_MIN) {
		nw = rest + GAP;
	} else {
		nw = imin(nameneed, imax(KEY_MIN, rest / 2));
		bw = rest - nw;
	}
	dl_init(&l, d->w);
	snprintf(title, sizeof(title), "SHARDS %d/%u", shown, n);
	dl_field(&l,
		 shown < (int)n && (int)strlen(title) <= nw + 1 ? title
								: "SHARDS",
		 nw + 1, 0);
	dl_field(&l, "keys/s", RATE_W, 1);
	if (bw) {
		dl_spaces(&l, GAP);
		dl_field(&l,
			 bw >= 18  ? "load (* busiest)"
			 : bw >= 4 ? "load"
				   : "",
			 bw, 0);
	}
	if (ratio)
		dl_field(&l, "x mean", RATIO_W, 1);
	dl_emit(d, &l);
	for (i = 0; i < (__u32)shown; i++)
		shard_row(d, r, order[i], max, nw, bw, ratio);
}

/* ---- hot keys ----------------------------------------------------------- */

static int by_reads_desc(const void *a, const void *b)
{
	const struct ks_hot_slot *x = *(const struct ks_hot_slot *const *)a;
	const struct ks_hot_slot *y = *(const struct ks_hot_slot *const *)b;

	return x->reads_mps < y->reads_mps   ? 1
	       : x->reads_mps > y->reads_mps ? -1
					     : 0;
}

/* Columns of the hot-key table after the key, dropped in this order
 * (copies first) when the window is too narrow for them. */
enum {
	HC_STATE,
	HC_STEERED,
	HC_COPIES,
	HC_N
};
static const int hc_width[HC_N] = { 8, 10, 7 };

static void draw_hot(struct dash *d, int lines)
{
	const struct ks_hot_view *h = d->v->hot;
	const struct ks_hot_slot *sorted[KS_HOT_SLOTS];
	int n = (int)(h->n < KS_HOT_SLOTS ? h->n : KS_HOT_SLOTS);
	int shown = imin(n, lines - 1), keyneed = 8, fixed = RATE_W, i, c;
	int on[HC_N] = { 1, 1, 1 };
	char key[KEY_MAX + 1], tmp[32];
	struct dline l;

	for (i = 0; i < n; i++)
		sorted[i] = &h->slot[i];
	qsort(sorted, (size_t)n, sizeof(sorted[0]), by_reads_desc);
	for (i = 0; i < shown; i++) {
		key_text(d->v, sorted[i]->key, sorted[i]->len, sorted[i]->hash,
			 key, KEY_MAX);
		keyneed = imax(keyneed, (int)strlen(key));
	}
	for (c = 0; c < HC_N; c++)
		fixed += hc_width[c];
	for (c = HC_N - 1; c >= 0 && d->w - fixed < imin(keyneed, HOT_KEY_W);
	     c--) {
		on[c] = 0;
		fixed -= hc_width[c];
	}
	keyneed = imin(imin(keyneed, KEY_MAX), d->w - fixed);
	dl_init(&l, d->w);
	snprintf(tmp, sizeof(tmp), "HOT KEYS %d/%d", shown, n);
	dl_field(&l,
		 shown < n && (int)strlen(tmp) <= keyneed ? tmp
		 : keyneed >= 8                           ? "HOT KEYS"
							  : "HOT",
		 keyneed, 0);
	dl_field(&l, "reads/s", RATE_W, 1);
	if (on[HC_COPIES])
		dl_field(&l, "copies", hc_width[HC_COPIES], 1);
	if (on[HC_STATE]) {
		dl_str(&l, " ");
		dl_field(&l, "state", hc_width[HC_STATE] - 1, 0);
	}
	if (on[HC_STEERED])
		dl_field(&l, "steered/s", hc_width[HC_STEERED], 1);
	dl_emit(d, &l);
	for (i = 0; i < shown; i++) {
		const struct ks_hot_slot *s = sorted[i];

		dl_init(&l, d->w);
		key_text(d->v, s->key, s->len, s->hash, key, keyneed);
		dl_field(&l, key, keyneed, 0);
		dl_rate(&l, s->reads_mps, RATE_W);
		if (on[HC_COPIES]) {
			snprintf(tmp, sizeof(tmp), "%u/%u", s->ncopies,
				 s->copies);
			dl_field(&l, tmp, hc_width[HC_COPIES], 1);
		}
		if (on[HC_STATE]) {
			dl_str(&l, " ");
			dl_field(&l, ks_hot_state_name(s, h->now_mono_ns),
				 hc_width[HC_STATE] - 1, 0);
		}
		if (on[HC_STEERED])
			dl_rate(&l, s->steered_mps, hc_width[HC_STEERED]);
		dl_emit(d, &l);
	}
}

/* ---- parse errors and the footer ---------------------------------------- */

static int any_errors(const struct ks_view *v)
{
	__u32 e;

	for (e = 0; e < KS_ERR_MAX; e++)
		if (v->rep->err_mps[e] || v->totals->errors[e])
			return 1;
	return 0;
}

/* One line: each reason's rate and total, as many whole ones as fit. */
static void draw_errors(struct dash *d, int lines)
{
	struct dline l;
	char rate[32], one[96];
	int more = 0;
	__u32 e;

	(void)lines;
	dl_init(&l, d->w);
	dl_str(&l, "PARSE ERRORS/s");
	for (e = 0; e < KS_ERR_MAX; e++) {
		if (!d->v->rep->err_mps[e] && !d->v->totals->errors[e])
			continue;
		fmt_rate(d->v->rep->err_mps[e], rate, sizeof(rate));
		snprintf(one, sizeof(one), "  %s %s (%llu)", ks_reason_name(e),
			 rate, (unsigned long long)d->v->totals->errors[e]);
		/* room for this one and a "  ..." after it */
		if (!more && l.cols + (int)strlen(one) + 5 <= d->w)
			dl_str(&l, one);
		else
			more = 1;
	}
	if (more)
		dl_str(&l, "  ...");
	dl_emit(d, &l);
}

enum {
	SEC_SHARDS,
	SEC_TOP,
	SEC_HOT,
	SEC_ERRORS,
	SEC_FOOTER,
	SEC_N
};
static const char *const sec_name[SEC_N] = { "shards", "top keys", "hot keys",
					     "errors", "footer" };
/* Which section gets room first. */
static const int sec_prio[SEC_N] = { SEC_TOP, SEC_SHARDS, SEC_ERRORS, SEC_HOT,
				     SEC_FOOTER };
static const int sec_min[SEC_N] = { 2, 2, 2, 1, 1 };

struct layout {
	int want[SEC_N], got[SEC_N];
};

static void draw_footer(struct dash *d, const struct layout *L, int keys)
{
	const struct ks_report *r = d->v->rep;
	struct piece p[4];
	char a[32];
	struct dline l;
	size_t off;
	int s;

	memset(p, 0, sizeof(p));
	if (keys)
		snprintf(p[0].text, sizeof(p[0].text), "q quit");
	p[0].prio = 0;
	if (r->updated_ns) {
		ks_format_duration(since(d->v->now_ns, r->updated_ns), a,
				   sizeof(a));
		snprintf(p[1].text, sizeof(p[1].text), "interval #%u, %s ago",
			 r->seq, a);
	}
	p[1].prio = 2;
	ks_format_seconds(r->interval_ms, a, sizeof(a));
	snprintf(p[2].text, sizeof(p[2].text), "every %s s", a);
	p[2].prio = 3;
	off = 0;
	for (s = 0; s < SEC_N; s++) {
		if (!L->want[s] || L->got[s])
			continue;
		off += snprintf(p[3].text + off, sizeof(p[3].text) - off,
				"%s%s", off ? ", " : "hidden: ", sec_name[s]);
		if (off >= sizeof(p[3].text))
			break;
	}
	p[3].prio = 1; /* hidden sections: the window should grow */
	dl_init(&l, d->w);
	dl_pieces(&l, p, 4);
	dl_emit(d, &l);
}

/* ---- layout ------------------------------------------------------------- */

/*
 * Each section that fits gets its minimum in priority order (one that
 * does not is dropped), then the lines left go round robin, one at a
 * time in priority order, to sections that have more to show.
 */
static void plan_lines(struct layout *L, int lines)
{
	int i, grew = 1;

	memset(L->got, 0, sizeof(L->got));
	for (i = 0; i < SEC_N; i++) {
		int s = sec_prio[i];

		if (L->want[s] && sec_min[s] <= lines) {
			L->got[s] = sec_min[s];
			lines -= sec_min[s];
		}
	}
	while (lines > 0 && grew) {
		grew = 0;
		for (i = 0; i < SEC_N && lines > 0; i++) {
			int s = sec_prio[i];

			if (L->got[s] && L->got[s] < L->want[s]) {
				L->got[s]++;
				lines--;
				grew = 1;
			}
		}
	}
}

static void too_small(struct dash *d, int height)
{
	char msg[96];
	struct dline l;

	dl_init(&l, d->w);
	snprintf(msg, sizeof(msg), "window %dx%d too small: need %dx%d", d->w,
		 height, KS_DASH_MIN_W, KS_DASH_MIN_H);
	if ((int)strlen(msg) > d->w)
		snprintf(msg, sizeof(msg), "too small: %dx%d", d->w, height);
	dl_str(&l, (int)strlen(msg) <= d->w ? msg : "too small");
	dl_emit(d, &l);
}

void ks_dash_render(FILE *f, const struct ks_view *v,
		    const struct ks_dash_history *h,
		    const struct ks_dash_opts *o)
{
	struct dash d = { .f = f,
			  .v = v,
			  .h = h,
			  .utf8 = o->utf8,
			  .w = imin(o->width, KS_DASH_MAX_W) };
	struct layout L;
	int used, s;

	if (o->height < 1 || d.w < 1)
		return;
	if (d.w < KS_DASH_MIN_W || o->height < KS_DASH_MIN_H) {
		too_small(&d, o->height);
		return;
	}
	memset(&L, 0, sizeof(L));
	L.want[SEC_TOP] = 1 + imax(1, n_top(v));
	L.want[SEC_SHARDS] = has_ring(v) ? 1 + (int)v->ring->nshards : 0;
	L.want[SEC_HOT] = v->hot && v->hot->n ? 1 + (int)v->hot->n : 0;
	L.want[SEC_ERRORS] = any_errors(v);
	L.want[SEC_FOOTER] = 1;
	plan_lines(&L, o->height - 1);
	draw_header(&d);
	used = 1;
	if (L.got[SEC_SHARDS])
		draw_shards(&d, L.got[SEC_SHARDS]);
	if (L.got[SEC_TOP])
		draw_top(&d, L.got[SEC_TOP]);
	if (L.got[SEC_HOT])
		draw_hot(&d, L.got[SEC_HOT]);
	if (L.got[SEC_ERRORS])
		draw_errors(&d, L.got[SEC_ERRORS]);
	for (s = 0; s < SEC_N; s++)
		if (s != SEC_FOOTER)
			used += L.got[s];
	if (L.got[SEC_FOOTER]) {
		/* The footer sits on the last row, as in top(1). */
		for (; used < o->height - 1; used++)
			fputc('\n', f);
		draw_footer(&d, &L, o->keys_hint);
	}
}

/* ---- one terminal update ------------------------------------------------ */

void ks_dash_frame(FILE *out, const char *text, size_t len, int width,
		   int height)
{
	size_t pos = 0;
	int row = 0;

	fputs("\033[H", out);
	while (pos < len && row < height) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;

		if (row)
			fputs("\r\n", out);
		fwrite(text + pos, 1, n, out);
		/* A full line leaves the cursor on its last column, which
		 * an erase would blank: erase only after shorter lines. */
		if (ks_dash_cols(text + pos, n) < width)
			fputs("\033[K", out);
		pos += n + (nl ? 1 : 0);
		row++;
	}
	if (row < height) /* the next row exists: clear from it down */
		fputs(row ? "\r\n\033[J" : "\033[J", out);
}
