// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Rings with explicit points and the planner (issue 26; core/ring_points.h,
 * core/ring_plan.h, schema 2 of core/ring_doc.h): lookups on explicit
 * points against a linear scan, the digest, refusals, the document's
 * schema 2 round trip and what a reader of schema 1 meets, and plans
 * checked against the keys themselves (the load each shard really gets
 * on the planned ring, the keys that really move).
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/ring_doc.h"
#include "core/ring_plan.h"
#include "core/ring_points.h"
#include "ktest.h"
#include "unit.h"

static int shards_of(__u32 n, struct ks_shards *s)
{
	char text[64 * 64], err[256];
	size_t off = 0;
	__u32 i;

	for (i = 0; i < n; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off,
					"198.18.7.%u:11211\n", i + 1);
	if (ks_shards_parse_text("t", text, s, err, sizeof(err))) {
		CHECK(0, "shards: %s", err);
		return -1;
	}
	return 0;
}

static int base_ring(__u32 n, enum ks_dist dist, struct ks_shards *s,
		     struct ks_ring *r)
{
	char err[256];

	if (shards_of(n, s))
		return -1;
	if (ks_ring_build(r, s, dist, 0, 0, err, sizeof(err))) {
		CHECK(0, "build: %s", err);
		ks_shards_free(s);
		return -1;
	}
	return 0;
}

/* The owner by a linear scan of the points (first value >= h, wrap). */
static __u32 scan_owner(const struct ks_ring_point *p, __u32 n, __u32 h)
{
	__u32 i;

	for (i = 0; i < n; i++)
		if (p[i].value >= h)
			return p[i].shard;
	return p[0].shard;
}

static void t_points(void)
{
	struct ks_shards s;
	struct ks_ring r, e, same;
	struct ks_ring_point *p;
	char err[512], key[32];
	__u32 n, i, bad = 0, moved = 0;

	kt_begin("ring_points_lookup_digest");
	if (base_ring(4, KS_DIST_KETAMA, &s, &r)) {
		kt_end();
		return;
	}
	CHECK(!ks_ring_points_effective(&r, &p, &n) && n >= 600, "n %u", n);
	CHECK(!ks_ring_build_points(&same, &r, &s, p, n, err, sizeof(err)),
	      "same: %s", err);
	CHECK(same.half->meta.digest == r.half->meta.digest &&
		      same.half->meta.planned == 1,
	      "the same points keep the digest");
	/* every tenth point to the next shard */
	for (i = 0; i < n; i += 10)
		p[i].shard = (p[i].shard + 1) % 4;
	CHECK(!ks_ring_build_points(&e, &r, &s, p, n, err, sizeof(err)),
	      "build: %s", err);
	CHECK(e.half->meta.digest != r.half->meta.digest, "a new digest");
	CHECK(e.half->meta.dist == KS_DIST_KETAMA &&
		      e.half->meta.key_hash == r.half->meta.key_hash,
	      "the base's distribution and key hash");
	for (i = 0; i < 50000; i++) {
		int len = snprintf(key, sizeof(key), "k%u", i);
		__u32 h = ks_ring_hash(&e, key, (size_t)len);

		bad += ks_ring_lookup(&e, key, (size_t)len) !=
		       scan_owner(p, n, h);
		moved += ks_ring_lookup(&e, key, (size_t)len) !=
			 ks_ring_lookup(&r, key, (size_t)len);
	}
	CHECK(bad == 0, "%u keys off the linear scan", bad);
	CHECK(moved > 1000 && moved < 15000, "moved %u", moved);
	ks_ring_free(&e);
	ks_ring_free(&same);
	kt_end();

	kt_begin("ring_points_refused");
	p[1].value = p[0].value;
	CHECK(ks_ring_build_points(&e, &r, &s, p, n, err, sizeof(err)) ==
			      -EINVAL &&
		      strstr(err, "increasing"),
	      "a tie: %s", err);
	p[1].value = p[0].value + 1;
	p[2].shard = 4;
	CHECK(ks_ring_build_points(&e, &r, &s, p, n, err, sizeof(err)) ==
			      -EINVAL &&
		      strstr(err, "shard 4"),
	      "shard 4 of 4: %s", err);
	CHECK(ks_ring_build_points(&e, &r, &s, p, 0, err, sizeof(err)) ==
		      -EINVAL,
	      "no points");
	ks_ring_free(&r);
	free(p);
	ks_shards_free(&s);
	{
		static const enum ks_dist no[] = {
			KS_DIST_DALLI, KS_DIST_MODULA, KS_DIST_MODULA_OAAT,
			KS_DIST_TWEMPROXY_MODULA, KS_DIST_PYMEMCACHE
		};

		for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
			struct ks_ring_point q = { 5, 0 };

			if (base_ring(3, no[i], &s, &r))
				break;
			CHECK(ks_ring_build_points(&e, &r, &s, &q, 1, err,
						   sizeof(err)) == -EINVAL &&
				      strstr(err, "takes no explicit points"),
			      "%s: %s", ks_dist_name(no[i]), err);
			ks_ring_free(&r);
			ks_shards_free(&s);
		}
	}
	kt_end();
}

/* Text with every occurrence of a replaced by b (one malloc'ed string). */
static char *subst(const char *t, const char *a, const char *b)
{
	const char *at = strstr(t, a);
	char *o;

	if (!at)
		return NULL;
	o = malloc(strlen(t) + strlen(b) + 1);
	sprintf(o, "%.*s%s%s", (int)(at - t), t, b, at + strlen(a));
	return o;
}

static void t_doc(void)
{
	struct ks_shards s, s2;
	struct ks_ring r, e, e2;
	struct ks_ring_point *p;
	struct ks_ring_doc d;
	char err[1024], *doc, *t, *u;
	size_t len;
	__u32 n, i;

	kt_begin("ring_doc_schema2_roundtrip");
	if (base_ring(5, KS_DIST_TWEMPROXY, &s, &r)) {
		kt_end();
		return;
	}
	ks_ring_points_effective(&r, &p, &n);
	for (i = 0; i < n; i += 7)
		p[i].shard = (p[i].shard + 2) % 5;
	CHECK(!ks_ring_build_points(&e, &r, &s, p, n, err, sizeof(err)), "%s",
	      err);
	CHECK(!ks_ring_doc_encode_ext(&e, &s, "t", "now", 0, 1, &doc, &len),
	      "encode");
	/* compact: 1024 shards' points fit etcd's request limit raised */
	CHECK(strstr(doc, "\"schema\":2") &&
		      strstr(doc, "\"explicit_points\"") &&
		      strstr(doc, "\"clients\":\"keysteer\"") &&
		      !strchr(doc, ' '),
	      "schema 2 text, compact");
	CHECK(!ks_ring_doc_decode(doc, len, &d, err, sizeof(err)), "decode: %s",
	      err);
	CHECK(d.schema == 2 && d.npts == n && d.clients_ks == 1,
	      "schema %d npts %u clients %d", d.schema, d.npts, d.clients_ks);
	CHECK(!ks_ring_doc_build(&d, "198.18.7.2:11211", 9, &s2, &e2, err,
				 sizeof(err)),
	      "build: %s", err);
	CHECK(e2.half->meta.digest == e.half->meta.digest &&
		      e2.half->meta.planned && e2.half->meta.self == 1 &&
		      e2.half->meta.version == 9 &&
		      !memcmp(e2.half->points, e.half->points,
			      n * sizeof(*p)) &&
		      !memcmp(e2.half->bucket, e.half->bucket,
			      sizeof(e.half->bucket)),
	      "the same ring back");
	ks_ring_doc_free(&d);
	ks_ring_free(&e2);
	ks_shards_free(&s2);
	{ /* a ring of names stays schema 1, "clients" an addition to it */
		char *d1;
		size_t l1;

		CHECK(!ks_ring_doc_encode_ext(&r, &s, NULL, NULL, 0, 1, &d1,
					      &l1) &&
			      strstr(d1, "\"schema\": 1") &&
			      !strstr(d1, "explicit_points"),
		      "schema 1");
		CHECK(!ks_ring_doc_decode(d1, l1, &d, err, sizeof(err)) &&
			      d.clients_ks == 1 && !d.pts,
		      "schema 1 with clients: %s", err);
		ks_ring_doc_free(&d);
		free(d1);
	}
	kt_end();

	kt_begin("ring_doc_schema2_refused");
	/* a reader that ignores the points (schema 1's "fields it does not
	 * know") builds the names' ring, and its digest check refuses it */
	{
		json_t *j = json_loads(doc, 0, NULL);
		char *x;

		json_object_del(j, "explicit_points");
		json_object_set_new(j, "schema", json_integer(1));
		x = json_dumps(j, 0);
		CHECK(!ks_ring_doc_decode(x, strlen(x), &d, err, sizeof(err)),
		      "decodes as schema 1: %s", err);
		CHECK(ks_ring_doc_build(&d, NULL, 0, &s2, &e2, err,
					sizeof(err)) == -EINVAL &&
			      strstr(err, "digest"),
		      "the points ignored: %s", err);
		ks_ring_doc_free(&d);
		free(x);
		json_decref(j);
	}
	t = subst(doc, "\"schema\":2", "\"schema\":3");
	CHECK(ks_ring_doc_decode(t, strlen(t), &d, err, sizeof(err)) ==
			      -EBADMSG &&
		      strstr(err, "schema 3"),
	      "schema 3: %s", err);
	free(t);
	t = subst(doc, "\"schema\":2", "\"schema\":1");
	CHECK(ks_ring_doc_decode(t, strlen(t), &d, err, sizeof(err)) ==
			      -EBADMSG &&
		      strstr(err, "explicit_points with schema 1"),
	      "schema 1 with points: %s", err);
	free(t);
	t = subst(doc, "\"explicit_points\"", "\"explicit_pointz\"");
	CHECK(ks_ring_doc_decode(t, strlen(t), &d, err, sizeof(err)) ==
			      -EBADMSG &&
		      strstr(err, "no \"explicit_points\""),
	      "schema 2 without points: %s", err);
	free(t);
	/* one point's shard changed: the digest says so */
	{
		char a[64], b[64];

		snprintf(a, sizeof(a), "[%u,%u]", p[3].value, p[3].shard);
		snprintf(b, sizeof(b), "[%u,%u]", p[3].value,
			 (p[3].shard + 1) % 5);
		t = subst(doc, a, b);
		CHECK(t != NULL, "point text %s", a);
		if (t) {
			CHECK(!ks_ring_doc_decode(t, strlen(t), &d, err,
						  sizeof(err)),
			      "decode: %s", err);
			CHECK(ks_ring_doc_build(&d, NULL, 0, &s2, &e2, err,
						sizeof(err)) == -EINVAL &&
				      strstr(err, "digest"),
			      "a changed point: %s", err);
			ks_ring_doc_free(&d);
			free(t);
		}
		snprintf(b, sizeof(b), "[%u,%u]", p[3].value, 5);
		t = subst(doc, a, b);
		if (t) {
			CHECK(!ks_ring_doc_decode(t, strlen(t), &d, err,
						  sizeof(err)) &&
				      ks_ring_doc_build(&d, NULL, 0, &s2, &e2,
							err, sizeof(err)) ==
					      -EINVAL &&
				      strstr(err, "shard 5"),
			      "shard 5 of 5: %s", err);
			ks_ring_doc_free(&d);
			free(t);
		}
		snprintf(b, sizeof(b), "[%u,\"x\"]", p[3].value);
		t = subst(doc, a, b);
		if (t) {
			CHECK(ks_ring_doc_decode(t, strlen(t), &d, err,
						 sizeof(err)) == -EBADMSG &&
				      strstr(err, "explicit_points[3]"),
			      "a string shard: %s", err);
			free(t);
		}
	}
	u = subst(doc, "\"clients\":\"keysteer\"", "\"clients\":\"some\"");
	CHECK(u &&
		      ks_ring_doc_decode(u, strlen(u), &d, err, sizeof(err)) ==
			      -EBADMSG &&
		      strstr(err, "clients"),
	      "clients some: %s", err);
	free(u);
	free(doc);
	free(p);
	ks_ring_free(&e);
	ks_ring_free(&r);
	ks_shards_free(&s);
	kt_end();
}

/* Keys k0..k(nk-1) with Zipf(s) weights summing to total, a flash key
 * "flash" with share fl of the total on top (0: none). */
struct wl {
	__u32 nk;
	double *w;
	__u32 *h;
	char (*name)[16];
};

static void wl_make(struct wl *x, const struct ks_ring *r, __u32 nk, double s,
		    double total)
{
	double sum = 0;
	__u32 i;

	x->nk = nk;
	x->w = calloc(nk, sizeof(*x->w));
	x->h = calloc(nk, sizeof(*x->h));
	x->name = calloc(nk, sizeof(*x->name));
	for (i = 0; i < nk; i++) {
		x->w[i] = 1.0 / pow(i + 1, s);
		sum += x->w[i];
		snprintf(x->name[i], sizeof(x->name[i]), "k%u", i);
		x->h[i] = ks_ring_hash(r, x->name[i], strlen(x->name[i]));
	}
	for (i = 0; i < nk; i++)
		x->w[i] *= total / sum;
}

static void wl_free(struct wl *x)
{
	free(x->w);
	free(x->h);
	free(x->name);
}

/* Keys at or above this share of a shard's mean load are served by
 * copies (the bench's --hot-fraction 0.03), their owner keeping 1/64
 * of their reads (--owner-share 0.015625). */
#define HOT_SHARE   0.03
#define OWNER_SHARE (1.0 / 64)

static double ratio_on(const struct ks_ring *r, const struct wl *x, __u32 ns,
		       double *per)
{
	double mx = 0, sum = 0;
	__u32 i;

	memset(per, 0, ns * sizeof(*per));
	for (i = 0; i < x->nk; i++)
		per[ks_ring_lookup(r, x->name[i], strlen(x->name[i]))] +=
			x->w[i] >= HOT_SHARE * 100000.0 / ns
				? x->w[i] * OWNER_SHARE
				: x->w[i];
	for (i = 0; i < ns; i++) {
		sum += per[i];
		if (per[i] > mx)
			mx = per[i];
	}
	return mx / (sum / ns);
}

/* The plan of a Zipf load on 16 ketama shards, its head served by copies,
 * from every shard's exact load and the top ntop keys of each, applied
 * to the keys themselves. */
static void plan_case(const char *name, double s, __u32 ntop, double target,
		      double want_ratio, double want_moved)
{
	struct ks_shards sh;
	struct ks_ring r, e;
	struct wl x;
	struct ks_plan_key *keys;
	struct ks_plan_in in = { 0 };
	struct ks_plan_out out;
	double per[16], after[16], before, got;
	char err[512];
	__u32 i, nk = 0, moved = 0, *cnt;

	kt_begin(name);
	if (base_ring(16, KS_DIST_KETAMA, &sh, &r)) {
		kt_end();
		return;
	}
	wl_make(&x, &r, 100000, s, 100000.0);
	before = ratio_on(&r, &x, 16, per);
	/* each shard's ntop busiest keys: ranks are in weight order */
	keys = calloc(16 * ntop + 1, sizeof(*keys));
	cnt = calloc(16, sizeof(*cnt));
	for (i = 0; i < x.nk; i++) {
		__u32 o = ks_ring_lookup(&r, x.name[i], strlen(x.name[i]));

		if (cnt[o] < ntop) {
			int hot = x.w[i] >= HOT_SHARE * 100000.0 / 16;

			cnt[o]++;
			keys[nk].hash = x.h[i];
			keys[nk].fixed = hot;
			keys[nk++].load = hot ? x.w[i] * OWNER_SHARE : x.w[i];
		}
	}
	in.base = &r;
	in.load = per;
	in.keys = keys;
	in.nkeys = nk;
	in.target = target;
	CHECK(!ks_ring_plan(&in, &out, err, sizeof(err)), "plan: %s", err);
	CHECK(fabs(out.ratio_before - before) < 1e-9, "before %f model %f",
	      before, out.ratio_before);
	CHECK(out.reached && out.ratio_after <= target + 1e-9, "model after %f",
	      out.ratio_after);
	CHECK(!ks_ring_build_points(&e, &r, &sh, out.pts, out.npts, err,
				    sizeof(err)),
	      "build: %s", err);
	got = ratio_on(&e, &x, 16, after);
	for (i = 0; i < x.nk; i++)
		moved += ks_ring_lookup(&e, x.name[i], strlen(x.name[i])) !=
			 ks_ring_lookup(&r, x.name[i], strlen(x.name[i]));
	printf("# %s: busiest/mean %.3f -> model %.3f, keys %.3f; %u carved, %u slices (%.3f%% of the space); %u of %u keys moved; %u points\n",
	       name, before, out.ratio_after, got, out.keys_carved, out.slices,
	       100 * out.moved_space, moved, x.nk, out.npts);
	CHECK(got <= want_ratio, "on the keys %.3f > %.3f", got, want_ratio);
	CHECK((double)moved / x.nk <= want_moved, "moved %u", moved);
	/* keys moved: the carved keys plus the slices' share of the keys */
	CHECK(fabs((double)moved - out.keys_carved - out.moved_space * x.nk) <=
		      0.002 * x.nk + 20,
	      "moved %u, model %.0f", moved,
	      out.keys_carved + out.moved_space * x.nk);
	ks_ring_free(&e);
	ks_ring_plan_free(&out);
	free(keys);
	free(cnt);
	wl_free(&x);
	ks_ring_free(&r);
	ks_shards_free(&sh);
	kt_end();
}

static void t_plan_edges(void)
{
	struct ks_shards sh;
	struct ks_ring r, e;
	struct ks_plan_in in = { 0 };
	struct ks_plan_out out;
	struct ks_plan_key k;
	double load[4] = { 100, 100, 100, 100 };
	char err[512], key[32];
	__u32 i, lastv, o, ow;
	int len = 0;

	kt_begin("ring_plan_balanced_changes_nothing");
	if (base_ring(4, KS_DIST_KETAMA, &sh, &r)) {
		kt_end();
		return;
	}
	in.base = &r;
	in.load = load;
	in.target = 1.05;
	CHECK(!ks_ring_plan(&in, &out, err, sizeof(err)) && out.steps == 0 &&
		      out.npts == r.half->meta.npoints,
	      "steps %u", out.steps);
	CHECK(!ks_ring_build_points(&e, &r, &sh, out.pts, out.npts, err,
				    sizeof(err)) &&
		      e.half->meta.digest == r.half->meta.digest,
	      "the base's digest");
	ks_ring_free(&e);
	ks_ring_plan_free(&out);
	kt_end();

	kt_begin("ring_plan_carves_a_key_past_the_last_point");
	/* a key hashing above the last point wraps to point 0's shard */
	lastv = r.half->points[r.half->meta.npoints - 1].value;
	for (i = 0; i < 1000000; i++) {
		len = snprintf(key, sizeof(key), "w%u", i);
		if (ks_ring_hash(&r, key, (size_t)len) > lastv)
			break;
	}
	o = ks_ring_lookup(&r, key, (size_t)len);
	CHECK(o == r.half->points[0].shard, "wraps");
	for (i = 0; i < 4; i++)
		load[i] = 100;
	load[o] = 140;
	k.hash = ks_ring_hash(&r, key, (size_t)len);
	k.load = 30;
	k.fixed = 0;
	in.keys = &k;
	in.nkeys = 1;
	CHECK(!ks_ring_plan(&in, &out, err, sizeof(err)), "plan: %s", err);
	CHECK(out.keys_carved >= 1, "carved %u", out.keys_carved);
	CHECK(!ks_ring_build_points(&e, &r, &sh, out.pts, out.npts, err,
				    sizeof(err)),
	      "build: %s", err);
	ow = ks_ring_lookup(&e, key, (size_t)len);
	CHECK(ow != o, "the key moved off shard %u", o);
	/* its neighbours stay: the hash values either side */
	CHECK(ks_ring_owner(e.half, k.hash - 1) == o ||
		      ks_ring_owner(e.half, k.hash - 1) != ow,
	      "the hash below stays");
	ks_ring_free(&e);
	ks_ring_plan_free(&out);
	/* a fixed key (served by copies) is never carved */
	k.fixed = 1;
	CHECK(!ks_ring_plan(&in, &out, err, sizeof(err)) &&
		      out.keys_carved == 0 && out.slices > 0,
	      "fixed: %u carved", out.keys_carved);
	ks_ring_plan_free(&out);
	kt_end();

	kt_begin("ring_plan_refused");
	in.target = 1.0;
	CHECK(ks_ring_plan(&in, &out, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "above 1"),
	      "target 1: %s", err);
	in.target = 1.05;
	for (i = 0; i < 4; i++)
		load[i] = 0;
	in.nkeys = 0;
	CHECK(ks_ring_plan(&in, &out, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "no load"),
	      "no load: %s", err);
	ks_ring_free(&r);
	ks_shards_free(&sh);
	if (!base_ring(4, KS_DIST_DALLI, &sh, &r)) {
		load[0] = 1;
		CHECK(ks_ring_plan(&in, &out, err, sizeof(err)) == -EINVAL &&
			      strstr(err, "dalli"),
		      "dalli: %s", err);
		ks_ring_free(&r);
		ks_shards_free(&sh);
	}
	kt_end();
}

/* A shard's load over a plan's window from its agent's counters
 * (ks_plan_span): exact between the first and last document of one
 * base, whenever the agent wrote them, where the mean of the rates read
 * once a second is not. */
static void t_plan_span(void)
{
	struct ks_load_totals t = { 0 }, last = { 0 };
	struct ks_plan_span s = { 0 };
	double r = -1, served = 0, mean = 0, want;
	__u64 ms;
	unsigned reads = 0;

	kt_begin("ring_plan_span_exact_whenever_written");
	/* an agent whose load wanders 400 -> 700/s over 60 s, counting each
	 * 1 s interval, but writing its document only every 7th interval
	 * (and at 60 s); the planner reads etcd once a second from 0 to 60 s */
	t.base_ms = 1764000000000ULL;
	for (ms = 0; ms <= 60000; ms += 1000) {
		double rate = 400 + 300 * ms / 60000.0;

		if (ms) {
			served += rate; /* one interval of 1 s at it */
			t.ms = ms;
			t.served = (__u64)llround(served);
			t.writes = ms / 1000;
			t.reads = t.served + 5;
		}
		if (ms % 7000 == 0 || ms == 60000)
			last = t; /* the document in etcd */
		if (!ms)
			continue;
		ks_plan_span_take(&s, &last);
		/* what the rates said: the written interval's rate */
		mean += 400 + 300 * (double)last.ms / 60000.0;
		reads++;
	}
	CHECK(!ks_plan_span_rate(&s, 59000, &r), "a rate");
	/* from the document the window's first read saw (written at 0 s)
	 * to the last (60 s): every request counted, over 60 s */
	CHECK(s.ms0 == 0 && s.ms1 == 60000 && s.docs == 60,
	      "span %llu..%llu ms, %u docs", (unsigned long long)s.ms0,
	      (unsigned long long)s.ms1, s.docs);
	want = (llround(served) + 60) / 60.0;
	CHECK(fabs(r - want) < 1e-9, "counted %.3f/s, want %.3f", r, want);
	/* the mean of the rates read once a second lags the load */
	mean /= reads;
	CHECK(fabs(mean - r) > 10, "rates %.1f against counted %.1f", mean, r);
	/* too short a span is refused, as is one document */
	CHECK(ks_plan_span_rate(&s, 61000, &r) == -1, "60 s < 61 s");
	kt_end();

	kt_begin("ring_plan_span_bases");
	memset(&s, 0, sizeof(s));
	t = (struct ks_load_totals){ 0 };
	ks_plan_span_take(&s, &t); /* an agent before the counters */
	CHECK(!s.docs && ks_plan_span_rate(&s, 0, &r) == -1, "no counters");
	t = (struct ks_load_totals){ 5000, 1000, 100, 100, 0, 0 };
	ks_plan_span_take(&s, &t);
	CHECK(ks_plan_span_rate(&s, 0, &r) == -1, "one document");
	t.ms = 3000;
	t.served = 600;
	t.writes = 100;
	t.fills = 100; /* the agent's own reads for copies: load too */
	ks_plan_span_take(&s, &t);
	CHECK(!ks_plan_span_rate(&s, 2000, &r) && fabs(r - 350) < 1e-9,
	      "350/s: %.1f", r);
	/* the agent pushed its ring again (or restarted): a new base */
	t = (struct ks_load_totals){ 9000, 200, 10, 10, 0, 0 };
	ks_plan_span_take(&s, &t);
	CHECK(s.rebased == 1 && s.base_ms == 9000 && s.docs == 1 &&
		      ks_plan_span_rate(&s, 0, &r) == -1,
	      "rebased %u", s.rebased);
	/* a late read of the old base is left out */
	t = (struct ks_load_totals){ 5000, 4000, 900, 900, 0, 0 };
	ks_plan_span_take(&s, &t);
	CHECK(s.base_ms == 9000 && s.docs == 1 && s.rebased == 1,
	      "old base left out");
	t = (struct ks_load_totals){ 9000, 2200, 410, 410, 0, 0 };
	ks_plan_span_take(&s, &t);
	CHECK(!ks_plan_span_rate(&s, 1000, &r) && fabs(r - 200) < 1e-9,
	      "200/s on the new base: %.1f", r);
	/* a document read again changes nothing; counters never go back
	 * on one base, and a span whose would is refused */
	ks_plan_span_take(&s, &t);
	CHECK(s.ms1 == 2200 && s.c1 == 410, "read again");
	s.c1 = s.c0 - 1;
	CHECK(ks_plan_span_rate(&s, 0, &r) == -1, "backwards");
	kt_end();
}

void test_ring_plan(void)
{
	t_plan_span();
	t_points();
	t_doc();
	t_plan_edges();
	/* Zipf 1.0: ketama's spread and the head; the keys' figure may be
	 * a little over the model's (the spread load is not exactly even
	 * over an arc) */
	plan_case("ring_plan_zipf1_top10_on_the_keys", 1.0, 10, 1.03, 1.05,
		  0.05);
	plan_case("ring_plan_zipf1_top50_on_the_keys", 1.0, 50, 1.03, 1.05,
		  0.05);
	plan_case("ring_plan_zipf099_top10_on_the_keys", 0.99, 10, 1.03, 1.05,
		  0.05);
	/* no key known: slices only, the spread assumed even */
	plan_case("ring_plan_zipf1_no_keys_slices", 1.0, 0, 1.03, 1.10, 0.10);
}
