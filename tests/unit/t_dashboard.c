// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_dashboard.c - the live dashboard of 'agent report --watch' rendered
 * from synthetic views at several window sizes: no line wider than the
 * window (at every size from 1 column up), the sections each size keeps,
 * sparklines from a known history, the ASCII fallback, the too-small
 * notice and the terminal update around a frame.
 */
#include <stdlib.h>
#include <string.h>
#include "render/dashboard.h"
#include "ktest.h"
#include "unit.h"

#define NOW_NS  1700000000000000000ULL
#define MONO_NS 5000000000000ULL
#define NSHARDS 8
#define NHOT    3

struct fixture {
	struct ks_report rep;
	struct ks_totals totals;
	struct ks_shard_report ring;
	struct ks_hot_slot hot[NHOT];
	struct ks_replica reps[KS_MAX_REPLICAS];
	struct ks_hot_view hv;
	struct ks_view v;
	struct ks_dash_history h;
};

static void top_key(struct ks_top_entry *t, const void *key, size_t len,
		    __u64 reads, __u64 writes)
{
	__u64 words[KS_KEY_WORDS] = {};

	memset(t, 0, sizeof(*t));
	memcpy(t->key, key, len);
	memcpy(words, key, len);
	t->len = (__u16)len;
	t->hash = ks_key_hash(words, (__u32)len);
	t->reads_mps = reads;
	t->writes_mps = writes;
}

static void hot_slot(struct ks_hot_slot *s, const char *key, __u64 reads,
		     __u32 ncopies)
{
	memset(s, 0, sizeof(*s));
	s->len = (__u16)strlen(key);
	memcpy(s->key, key, s->len);
	s->hash = ut_hash(key);
	s->reads_mps = reads;
	s->steered_mps = reads / 2;
	s->ncopies = ncopies;
	s->copies = ncopies;
	s->expires_ns = MONO_NS + 1000000000ULL;
	s->flags = KS_HOTF_READ_HOT;
}

/* 20 top keys (flash:1 first, a 250-byte key with control bytes last), a
 * ring of 8 shards (#3 the busiest, a 63-byte name), 3 hot keys, one
 * parse error reason. */
static struct fixture *fixture(void)
{
	struct fixture *x = calloc(1, sizeof(*x));
	__u8 longkey[KS_MAX_KEY_LEN];
	char key[32];
	__u32 i;

	if (!x)
		return NULL;
	snprintf(x->rep.ifname, sizeof(x->rep.ifname), "eth1");
	x->rep.version = KS_REPORT_VERSION;
	x->rep.agent_pid = 42;
	x->rep.sample_n = 8;
	x->rep.interval_ms = 1000;
	x->rep.seq = 77;
	x->rep.start_ns = NOW_NS - 125000000000ULL;
	x->rep.updated_ns = NOW_NS - 300000000ULL;
	x->rep.class_req_mps[KS_CLASS_READ] = 15234500;
	x->rep.class_req_mps[KS_CLASS_WRITE] = 1200000;
	x->rep.class_req_mps[KS_CLASS_OTHER] = 3000;
	x->rep.err_mps[KS_ERR_UNKNOWN_CMD] = 2000;
	x->totals.errors[KS_ERR_UNKNOWN_CMD] = 17;
	top_key(&x->rep.top[0], "flash:1", 7, 9000000, 12000);
	for (i = 1; i < 19; i++) {
		snprintf(key, sizeof(key), "user:%u:profile", i);
		top_key(&x->rep.top[i], key, strlen(key), 900000 / i, 1000);
	}
	for (i = 0; i < sizeof(longkey); i++)
		longkey[i] = (__u8)(i % 7 ? 'a' + i % 26 : i % 32);
	top_key(&x->rep.top[19], longkey, sizeof(longkey), 1000, 0);
	x->rep.n_top = 20;

	x->ring.version = KS_SHARD_REPORT_VERSION;
	x->ring.nshards = NSHARDS;
	x->ring.self = 0;
	x->ring.busiest = 3;
	for (i = 0; i < NSHARDS; i++) {
		struct ks_shard_rate *s = &x->ring.shards[i];

		snprintf(s->name, sizeof(s->name), "198.18.0.%u:11211", 10 + i);
		s->reads_mps = i == 3 ? 9500000 : 1000000 + i * 100000;
		s->writes_mps = 100000;
		s->ratio_milli = i == 3 ? 4310 : 600;
	}
	memset(x->ring.shards[7].name, 'n', KS_SHARD_NAME_LEN - 1);

	hot_slot(&x->hot[0], "user:1:profile", 900000, 3);
	hot_slot(&x->hot[1], "flash:1", 9000000, 3);
	hot_slot(&x->hot[2], "pinned:key", 0, 2);
	x->hv = (struct ks_hot_view){ .slot = x->hot,
				      .n = NHOT,
				      .rep = x->reps,
				      .now_mono_ns = MONO_NS };
	x->v = (struct ks_view){ .rep = &x->rep,
				 .totals = &x->totals,
				 .agent_alive = 1,
				 .now_ns = NOW_NS,
				 .top = 20,
				 .ring = &x->ring,
				 .now_mono_ns = MONO_NS,
				 .hot = &x->hv };
	/* flash:1 at 1000/s for three intervals, then 9000/s. */
	ks_dash_history_init(&x->h);
	for (i = 0; i < 4; i++) {
		x->rep.top[0].reads_mps = i < 3 ? 1000000 : 9000000;
		x->rep.updated_ns = NOW_NS - (4 - i) * 300000000ULL;
		ks_dash_history_add(&x->h, &x->rep);
	}
	return x;
}

static __attribute__((noinline)) char *render(const struct fixture *x, int w,
					      int h, int utf8)
{
	struct ks_dash_opts o = {
		.width = w, .height = h, .utf8 = utf8, .keys_hint = 1
	};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	ks_dash_render(f, &x->v, &x->h, &o);
	fclose(f);
	return buf;
}

/* Lines of the output and the widest, in columns; 0 if every line ends
 * in '\n'. */
static int measure(const char *s, int *lines, int *widest)
{
	*lines = 0;
	*widest = 0;
	while (*s) {
		const char *nl = strchr(s, '\n');
		int cols;

		if (!nl)
			return -1;
		cols = ks_dash_cols(s, (size_t)(nl - s));
		if (cols > *widest)
			*widest = cols;
		(*lines)++;
		s = nl + 1;
	}
	return 0;
}

/* The output line that contains needle, copied into line; 0 if none. */
static int line_with(const char *s, const char *needle, char *line, size_t len)
{
	const char *p = strstr(s, needle), *b, *e;

	if (!p)
		return 0;
	for (b = p; b > s && b[-1] != '\n'; b--)
		;
	e = strchr(p, '\n');
	snprintf(line, len, "%.*s", (int)(e ? e - b : (long)strlen(b)), b);
	return 1;
}

static int rows_of(const char *s, const char *prefix)
{
	int n = 0;
	const char *p;

	for (p = s; (p = strstr(p, prefix)); p++)
		n++;
	return n;
}

static int all_sections(const char *t)
{
	return strstr(t, "SHARDS") && strstr(t, "TOP KEYS") &&
	       strstr(t, "HOT KEYS") && strstr(t, "PARSE ERRORS/s");
}

static void check_fits(const struct fixture *x, int w, int h)
{
	int u, lines, widest;

	for (u = 0; u < 2; u++) {
		char *t = render(x, w, h, u);

		CHECK(t, "render %dx%d", w, h);
		if (!t)
			return;
		CHECK(!measure(t, &lines, &widest),
		      "%dx%d: a line without its newline", w, h);
		CHECK(widest <= w, "%dx%d utf8=%d: a line of %d columns", w, h,
		      u, widest);
		CHECK(lines <= h && (h < 1 || lines >= 1),
		      "%dx%d utf8=%d: %d lines", w, h, u, lines);
		free(t);
	}
}

static void test_sizes(void)
{
	static const int sz[][2] = {
		{ 80, 24 }, { 120, 40 }, { 60, 20 }, { 40, 10 }, { 20, 5 }
	};
	struct fixture *x = fixture();
	size_t i;
	int w, h;

	kt_begin("dash_fits_every_size");
	CHECK(x, "fixture");
	if (!x) {
		kt_end();
		return;
	}
	for (i = 0; i < sizeof(sz) / sizeof(sz[0]); i++)
		check_fits(x, sz[i][0], sz[i][1]);
	/* Every width from 1 column, a range of heights, hash-only too. */
	for (w = 1; w <= 140; w++)
		for (h = 1; h <= 45; h += (h < 6 ? 1 : 7))
			check_fits(x, w, h);
	x->v.hash_only = 1;
	for (w = 1; w <= 140; w += 3)
		check_fits(x, w, 24);
	kt_end();
	free(x);
}

static void test_layouts(void)
{
	struct fixture *x = fixture();
	char *t, line[KS_DASH_MAX_W * 3];
	int lines, widest;

	kt_begin("dash_layout_80x24");
	if (!x || !(t = render(x, 80, 24, 1))) {
		CHECK(0, "fixture or render");
		kt_end();
		free(x);
		return;
	}
	measure(t, &lines, &widest);
	CHECK_EQ(lines, 24);
	CHECK(line_with(t, "eth1", line, sizeof(line)) &&
		      strstr(line, "agent running") &&
		      strstr(line, "read 15.2k/s") &&
		      strstr(line, "up 2m05s") && strstr(line, "sample 1/8"),
	      "header: %s", line);
	CHECK(all_sections(t), "a section is missing:\n%s", t);
	CHECK(line_with(t, "*198.18.0.13:11211", line, sizeof(line)) &&
		      strstr(line, "4.31x") && strstr(line, "9600.0"),
	      "busiest shard row: %s", line);
	/* Its sparkline: three low intervals, then the top level. */
	CHECK(line_with(t, "flash:1", line, sizeof(line)) &&
		      strstr(line, "9000.0") &&
		      strstr(line, "  \u2581\u2581\u2581\u2588"),
	      "flash:1 row: %s", line);
	CHECK(line_with(t, "unknown", line, sizeof(line)) &&
		      strstr(line, "(17)"),
	      "errors: %s", line);
	CHECK(line_with(t, "q quit", line, sizeof(line)) &&
		      strstr(line, "interval #77"),
	      "footer: %s", line);
	/* Shards, then top keys, then hot keys, then errors, footer last. */
	CHECK(strstr(t, "SHARDS") < strstr(t, "TOP KEYS") &&
		      strstr(t, "TOP KEYS") < strstr(t, "HOT KEYS") &&
		      strstr(t, "HOT KEYS") < strstr(t, "PARSE ERRORS"),
	      "section order");
	CHECK(line_with(t, "HOT KEYS", line, sizeof(line)) &&
		      strstr(line, "copies") && strstr(line, "state") &&
		      strstr(line, "steered/s"),
	      "hot-key columns: %s", line);
	/* Hot keys by reads: flash:1 first, and armed. */
	CHECK(strstr(strstr(t, "HOT KEYS"), "flash:1") <
		      strstr(strstr(t, "HOT KEYS"), "user:1:profile"),
	      "hot keys not by reads");
	free(t);
	kt_end();

	kt_begin("dash_layout_120x40");
	t = render(x, 120, 40, 1);
	measure(t, &lines, &widest);
	CHECK_EQ(lines, 40);
	/* Room for every shard, every top key and every hot key. */
	CHECK_EQ(rows_of(t, "198.18.0."), NSHARDS - 1);
	CHECK(strstr(t, "...nnnn") && strstr(t, "user:18:profile"),
	      "all rows:\n%s", t);
	/* The whole history: a 60-interval sparkline. */
	CHECK(line_with(t, "TOP KEYS", line, sizeof(line)) &&
		      strstr(line, "last 60 intervals"),
	      "top keys title: %s", line);
	free(t);
	kt_end();

	kt_begin("dash_layout_60x20");
	t = render(x, 60, 20, 1);
	measure(t, &lines, &widest);
	CHECK(lines == 20 && widest <= 60, "%d lines, %d wide", lines, widest);
	CHECK(all_sections(t), "a section is missing:\n%s", t);
	CHECK(line_with(t, "SHARDS", line, sizeof(line)) && strstr(line, "/8"),
	      "shards title does not say it shows part: %s", line);
	free(t);
	kt_end();

	/* 40x10: each section at its minimum, fewer top keys, the header
	 * without uptime and sample rate. */
	kt_begin("dash_layout_40x10");
	t = render(x, 40, 10, 1);
	measure(t, &lines, &widest);
	CHECK(lines == 10 && widest <= 40, "%d lines, %d wide", lines, widest);
	CHECK(strstr(t, "TOP KEYS") && strstr(t, "flash:1"), "top keys:\n%s",
	      t);
	CHECK(rows_of(t, "user:") <= 3, "too many rows at 40x10:\n%s", t);
	CHECK(line_with(t, "eth1", line, sizeof(line)) && !strstr(line, "up "),
	      "header: %s", line);
	free(t);
	kt_end();

	/* 40x6: the top keys win, lower sections go and the footer says so. */
	kt_begin("dash_layout_drops_by_priority");
	t = render(x, 40, 6, 1);
	CHECK(strstr(t, "TOP KEYS") && strstr(t, "SHARDS") &&
		      !strstr(t, "HOT KEYS"),
	      "at 40x6:\n%s", t);
	free(t);
	t = render(x, 40, 4, 1);
	CHECK(strstr(t, "TOP KEYS") && !strstr(t, "SHARDS") &&
		      strstr(t, "PARSE ERRORS") && !strstr(t, "quit"),
	      "at 40x4:\n%s", t);
	free(t);
	t = render(x, 40, 7, 1);
	CHECK(strstr(t, "SHARDS") && !strstr(t, "HOT KEYS") &&
		      strstr(t, "hidden: hot keys"),
	      "at 40x7:\n%s", t);
	free(t);
	t = render(x, 40, 3, 1);
	CHECK(strstr(t, "TOP KEYS") && strstr(t, "flash:1") &&
		      !strstr(t, "quit"),
	      "at 40x3:\n%s", t);
	free(t);
	kt_end();
	free(x);
}

static void test_too_small(void)
{
	struct fixture *x = fixture();
	int lines, widest;
	char *t;

	kt_begin("dash_too_small_notice");
	if (!x) {
		CHECK(0, "fixture");
		kt_end();
		return;
	}
	t = render(x, 20, 5, 1);
	measure(t, &lines, &widest);
	CHECK(lines == 1 && widest <= 20 && strstr(t, "too small"), "20x5: %s",
	      t);
	free(t);
	t = render(x, 80, 2, 1);
	CHECK(!strcmp(t, "window 80x2 too small: need 32x3\n"), "80x2: %s", t);
	free(t);
	t = render(x, 31, 24, 1);
	CHECK(!strcmp(t, "too small: 31x24\n"), "31x24: %s", t);
	free(t);
	t = render(x, 5, 5, 1);
	CHECK(!strcmp(t, "too s\n"), "5x5: %s", t);
	free(t);
	t = render(x, 32, 3, 1);
	CHECK(!strstr(t, "too small"), "32x3 is enough: %s", t);
	free(t);
	kt_end();
	free(x);
}

/* The history: one interval per new updated_ns, absent intervals blank,
 * levels scaled to the highest rate shown. */
static void test_sparkline(void)
{
	static const __u64 rates[] = { 1000, 2000, 0, 4000, 8000 };
	struct ks_dash_history *h = calloc(1, sizeof(*h));
	struct ks_report *r = calloc(1, sizeof(*r));
	__u64 hash = ut_hash("flash:1");
	char buf[KS_DASH_HIST * 3 + 4];
	size_t i;

	kt_begin("dash_sparkline");
	if (!h || !r) {
		CHECK(0, "calloc");
		kt_end();
		return;
	}
	ks_dash_history_init(h);
	for (i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		r->n_top = 0;
		if (rates[i]) {
			top_key(&r->top[0], "flash:1", 7, rates[i] * 1000, 0);
			r->n_top = 1;
		}
		r->updated_ns = NOW_NS + i;
		CHECK_EQ(ks_dash_history_add(h, r), 1);
		/* A redraw within the same interval adds nothing. */
		CHECK_EQ(ks_dash_history_add(h, r), 0);
	}
	ks_dash_sparkline(h, hash, 6, 1, buf, sizeof(buf));
	CHECK(!strcmp(buf, " \u2581\u2582 \u2584\u2588"), "utf8: '%s'", buf);
	ks_dash_sparkline(h, hash, 6, 0, buf, sizeof(buf));
	CHECK(!strcmp(buf, " .: =@"), "ascii: '%s'", buf);
	ks_dash_sparkline(h, hash, 3, 0, buf, sizeof(buf));
	/* 4000 and 8000, scaled to twice their mean */
	CHECK(!strcmp(buf, " -*"), "last 3: '%s'", buf);
	ks_dash_sparkline(h, ut_hash("never"), 4, 1, buf, sizeof(buf));
	CHECK(!strcmp(buf, "    "), "unknown key: '%s'", buf);
	/* Equal rates: all at the top level. */
	for (i = 0; i < 3; i++) {
		top_key(&r->top[0], "flash:1", 7, 5000, 5000);
		r->n_top = 1;
		r->updated_ns = NOW_NS + 100 + i;
		ks_dash_history_add(h, r);
	}
	ks_dash_sparkline(h, hash, 3, 0, buf, sizeof(buf));
	CHECK(!strcmp(buf, "==="), "steady at half height: '%s'", buf);
	/* A small buffer is never overrun: whole glyphs only. */
	ks_dash_sparkline(h, hash, 3, 1, buf, 8);
	CHECK_EQ(strlen(buf), 6);
	kt_end();

	/* Many keys over time: the table recycles keys gone for the whole
	 * window, and a key seen now still has its history. */
	kt_begin("dash_history_churn");
	for (i = 0; i < 3 * KS_DASH_KEYS; i++) {
		char key[32];

		snprintf(key, sizeof(key), "churn:%zu", i);
		top_key(&r->top[0], key, strlen(key), 1000, 0);
		top_key(&r->top[1], "flash:1", 7, 2000 + i, 0);
		r->n_top = 2;
		r->updated_ns = NOW_NS + 1000 + i;
		ks_dash_history_add(h, r);
	}
	ks_dash_sparkline(h, hash, KS_DASH_HIST, 0, buf, sizeof(buf));
	CHECK(strlen(buf) == KS_DASH_HIST && !strchr(buf, ' '),
	      "flash:1 lost history: '%s'", buf);
	ks_dash_sparkline(h, ut_hash("churn:767"), 2, 0, buf, sizeof(buf));
	CHECK(!strcmp(buf, " ="), "newest churn key: '%s'", buf);
	kt_end();
	free(h);
	free(r);
}

static void test_ascii(void)
{
	struct fixture *x = fixture();
	char *t;
	int i, high = 0;

	kt_begin("dash_ascii_fallback");
	if (!x) {
		CHECK(0, "fixture");
		kt_end();
		return;
	}
	t = render(x, 80, 24, 0);
	for (i = 0; t && t[i]; i++)
		high |= (unsigned char)t[i] >= 0x80;
	CHECK(t && !high, "non-ASCII bytes in the ASCII dashboard");
	CHECK(t && strstr(t, "####"), "no ASCII bars:\n%s", t);
	free(t);
	t = render(x, 80, 24, 1);
	CHECK(t && strstr(t, "\u2588\u2588"), "no block bars in UTF-8");
	free(t);
	kt_end();
	free(x);
}

/* The header's sample rate, and with it the ring placement's largest
 * 1 in P while a CPU places fewer than all its sampled keys. */
static void test_place(void)
{
	struct fixture *x = fixture();
	char *t, line[KS_DASH_MAX_W * 3];

	kt_begin("dash_header_ring_placement");
	if (!x) {
		CHECK(0, "fixture");
		kt_end();
		return;
	}
	t = render(x, 120, 24, 1);
	CHECK(t && line_with(t, "eth1", line, sizeof(line)) &&
		      strstr(line, "sample 1/8") && !strstr(line, "ring 1/"),
	      "header at P 1: %s", t ? line : "(none)");
	free(t);
	x->rep.place_p = 64;
	t = render(x, 120, 24, 1);
	CHECK(t && line_with(t, "eth1", line, sizeof(line)) &&
		      strstr(line, "sample 1/8, ring 1/64"),
	      "header at P 64: %s", t ? line : "(none)");
	free(t);
	kt_end();
	free(x);
}

/* Cursor home, clear-to-end after short lines only, clear below when
 * the frame is shorter than the window, never a newline past the end. */
static void test_frame(void)
{
	static const char text[] = "abc\n12345\nxy\n";
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	kt_begin("dash_frame");
	ks_dash_frame(f, text, strlen(text), 5, 10);
	fclose(f);
	CHECK(buf && !strcmp(buf,
			     "\033[Habc\033[K\r\n12345\r\nxy\033[K\r\n\033[J"),
	      "frame: '%s'", buf);
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &len);
	ks_dash_frame(f, text, strlen(text), 5, 2);
	fclose(f);
	CHECK(buf && !strcmp(buf, "\033[Habc\033[K\r\n12345"),
	      "clipped frame: '%s'", buf);
	free(buf);
	kt_end();
}

void test_dashboard(void)
{
	test_sizes();
	test_layouts();
	test_too_small();
	test_sparkline();
	test_ascii();
	test_place();
	test_frame();
}
