// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Rate limits: the `limit` rule of the pin file (user/core/hotkeys.c),
 * the token bucket the datapath runs (bpf/ks_limit.h) and the limited
 * keys from rules and ranked keys (user/core/limits.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ktest.h"
#include "core/hotkeys.h"
#include "core/limits.h"
#include "core/fleet_doc.h"
#include "core/fleet_view.h"
#include "core/host_doc.h"
#include "core/pins_doc.h"
#include "render/fleet.h"
#include "render/report_limit.h"
#include "unit.h"

static int parse(struct ks_hot_rules *r, const char *text, char *err,
		 size_t errlen)
{
	return ks_hot_rules_parse(r, text, strlen(text), "pins", err, errlen);
}

static void lim_error(const char *text, const char *want)
{
	static struct ks_hot_rules r;
	char err[256] = "";

	CHECK(parse(&r, text, err, sizeof(err)) == -EINVAL, "accepted: %s",
	      text);
	CHECK(strstr(err, want) != NULL, "error '%s', want '%s'", err, want);
	CHECK_EQ(r.n, 0);
}

static void rule_parse(void)
{
	static struct ks_hot_rules r;
	char err[256] = "";

	kt_begin("limits_rule_parse");
	CHECK(!parse(&r,
		     "# limits\nlimit user:42 500/s\nlimit sess:* 10000000/s\n"
		     "pin hot 2\nlimit user:42* 7/s\n",
		     err, sizeof(err)),
	      "%s", err);
	CHECK_EQ(r.n, 4);
	CHECK_EQ(r.r[0].type, KS_RULE_LIMIT);
	CHECK_EQ(r.r[0].count, 500);
	CHECK(r.r[0].len == 7 && !memcmp(r.r[0].key, "user:42", 7), "key");
	CHECK_EQ(r.r[1].type, KS_RULE_LIMIT_PREFIX);
	CHECK(r.r[1].len == 5 && !memcmp(r.r[1].key, "sess:", 5), "prefix");
	CHECK_EQ(r.r[1].count, KS_LIMIT_RATE_MAX);
	/* an exact and a prefix rule of the same bytes are two rules */
	CHECK_EQ(r.r[3].type, KS_RULE_LIMIT_PREFIX);
	CHECK(!strcmp(ks_hot_rule_name(KS_RULE_LIMIT_PREFIX), "limit"), "name");
	/* a limit is never a pin: the hot table's match passes it over */
	CHECK(ks_hot_rule_match(&r, (const __u8 *)"user:42", 7) == NULL,
	      "limit matched as a pin");
	CHECK(ks_hot_rule_match(&r, (const __u8 *)"hot", 3) == &r.r[2],
	      "pin still matched");
	kt_end();
}

static void rule_errors(void)
{
	char big[400];
	size_t n;

	kt_begin("limits_rule_errors");
	lim_error("limit a\n", "pins:1: limit needs KEY or PREFIX* and RATE/s");
	lim_error("limit a 5/s x\n", "limit needs KEY");
	lim_error("limit a 500\n", "pins:1: bad rate '500'");
	lim_error("limit a 0/s\n", "bad rate '0/s'");
	lim_error("limit a 10000001/s\n", "bad rate '10000001/s'");
	lim_error("limit a -5/s\n", "bad rate");
	lim_error("limit a 5/m\n", "bad rate '5/m'");
	lim_error("limit a /s\n", "bad rate");
	lim_error("limit * 5/s\n", "limit prefix is empty");
	lim_error("limit a\x01 5/s\n", "key has a control byte");
	lim_error("pin b 2\nlimit a 5/s\nlimit a 6/s\n",
		  "pins:3: duplicate limit rule for 'a'");
	lim_error("limit p* 5/s\nlimit p* 6/s\n",
		  "duplicate limit rule for 'p*'");
	lim_error("limits a 5/s\n", "unknown directive 'limits'");
	n = (size_t)snprintf(big, sizeof(big), "limit ");
	memset(big + n, 'k', 251);
	snprintf(big + n + 251, sizeof(big) - n - 251, " 5/s\n");
	lim_error(big, "key longer than 250 bytes");
	kt_end();
}

/* The fleet's pins document carries limit rules like the pin file. */
static void rule_pins_doc(void)
{
	static struct ks_pins_doc d;
	const char *text = "limit user:42 500/s\nlimit sess:* 20/s\n";
	char *doc = ks_pins_doc_encode(text, strlen(text), 2, "t", "now");
	char err[256] = "";

	kt_begin("limits_rule_pins_doc");
	CHECK(doc != NULL, "encode");
	CHECK(doc && !ks_pins_doc_decode(doc, strlen(doc), "etcd", &d, err,
					 sizeof(err)),
	      "%s", err);
	CHECK_EQ(d.rules.n, 2);
	CHECK_EQ(d.rules.r[1].type, KS_RULE_LIMIT_PREFIX);
	free(doc);
	doc = ks_pins_doc_encode("limit a 0/s\n", 12, 1, "t", "now");
	CHECK(doc && ks_pins_doc_decode(doc, strlen(doc), "etcd", &d, err,
					sizeof(err)) == -EINVAL,
	      "bad rule accepted from etcd");
	CHECK(strstr(err, "etcd:1: bad rate") != NULL, "%s", err);
	free(doc);
	kt_end();
}

/* GCRA: burst at once, then one per interval; the long-run count. */
static void bucket(void)
{
	__u64 tat = 0, t, iv = ks_limit_interval_ns(100),
	      tau = ks_limit_tau_ns(100);
	unsigned i, ok = 0;

	kt_begin("limits_bucket");
	CHECK_EQ(ks_limit_burst(100), 10);
	CHECK_EQ(ks_limit_burst(5), 1);
	CHECK_EQ(iv, 10000000);
	CHECK_EQ(ks_limit_tau_ns(5), 0);
	/* 50 at once at t = 1 s: the burst of 10 passes */
	for (i = 0; i < 50; i++)
		ok += ks_limit_take(&tat, 1000000000ULL, iv, tau);
	CHECK_EQ(ok, 10);
	/* a refused request leaves the bucket as it was */
	t = tat;
	CHECK(!ks_limit_take(&tat, 1000000000ULL, iv, tau), "refused");
	CHECK_EQ(tat, t);
	/* 1000/s offered for 10 s (10x the limit): 100/s pass, exactly
	 * rate x time + burst over the whole run */
	ok = 0;
	tat = 0;
	for (i = 0; i < 10000; i++)
		ok += ks_limit_take(&tat, 1000000000ULL + i * 1000000ULL, iv,
				    tau);
	CHECK(ok >= 1000 && ok <= 1000 + 10, "allowed %u of 10000", ok);
	/* under the limit (50/s against 100/s): nothing refused */
	ok = 0;
	tat = 0;
	for (i = 0; i < 500; i++)
		ok += ks_limit_take(&tat, 5000000000ULL + i * 20000000ULL, iv,
				    tau);
	CHECK_EQ(ok, 500);
	/* a clock in coarse steps of 4 ms: the long-run rate holds */
	ok = 0;
	tat = 0;
	for (i = 0; i < 10000; i++)
		ok += ks_limit_take(&tat, 1000000000ULL + (i / 4) * 4000000ULL,
				    iv, tau);
	CHECK(ok >= 1000 && ok <= 1000 + 10 + 1, "coarse: allowed %u", ok);
	/* burst 1 (rate 1/s): one per second exactly */
	tat = 0;
	CHECK(ks_limit_take(&tat, 7, ks_limit_interval_ns(1),
			    ks_limit_tau_ns(1)),
	      "first");
	CHECK(!ks_limit_take(&tat, 7 + 999999999ULL, ks_limit_interval_ns(1),
			     ks_limit_tau_ns(1)),
	      "second within the second");
	CHECK(ks_limit_take(&tat, 7 + 1000000000ULL, ks_limit_interval_ns(1),
			    ks_limit_tau_ns(1)),
	      "after a second");
	kt_end();
}

static struct ks_top_entry top(const char *key)
{
	struct ks_top_entry t = {};

	t.len = (__u16)strlen(key);
	memcpy(t.key, key, t.len);
	t.hash = ut_hash(key);
	return t;
}

const struct ks_limit_entry *ut_limit_find(const struct ks_limit_set *s,
					   const char *key)
{
	const struct ks_limit_entry *e;
	size_t pos = 0;

	while ((e = ks_limits_next(s, &pos)))
		if (e->len == strlen(key) && !memcmp(e->key, key, e->len))
			return e;
	return NULL;
}

/* Exact rules at once; prefix keys once ranked, gone after KEEP. */
static void plan(void)
{
	static struct ks_limit_set s;
	static struct ks_hot_rules r;
	struct ks_top_entry t[3] = { top("sess:1"), top("other"),
				     top("user:42") };
	const struct ks_limit_entry *e;
	char err[128];
	__u32 id;

	kt_begin("limits_plan");
	ks_limits_init(&s);
	parse(&r, "limit user:42 500/s\nlimit sess:* 20/s\npin x 2\n", err,
	      sizeof(err));
	CHECK_EQ(ks_limits_plan(&s, &r, NULL, 0, 1, NULL, 0), 1);
	e = ut_limit_find(&s, "user:42");
	CHECK(e && e->rate == 500 && e->state == KS_LIMIT_DIRTY && e->fresh,
	      "exact rule installed");
	CHECK(e && e->hash == ut_hash("user:42"), "hash");
	ks_limits_synced(&s);
	CHECK_EQ(ks_limits_plan(&s, &r, NULL, 0, 2, NULL, 0), 0);
	/* a ranked key under the prefix: limited on its own */
	CHECK_EQ(ks_limits_plan(&s, &r, t, 3, 3, NULL, 0), 1);
	e = ut_limit_find(&s, "sess:1");
	CHECK(e && e->rate == 20 && e->rule_len == 5, "prefix key");
	CHECK(!ut_limit_find(&s, "other"), "unmatched key limited");
	CHECK_EQ(s.live, 2);
	ks_limits_synced(&s);
	id = (__u32)(e - s.e);
	/* counters: totals and rates */
	{
		struct ks_limit_stats st = { .allowed = 40, .refused = 360 };
		struct ks_limit_info info;

		ks_limits_account(&s, id, &st, 2.0);
		st.allowed = 80;
		st.refused = 720;
		ks_limits_account(&s, id, &st, 2.0);
		CHECK(e->allowed_ps == 20 && e->refused_ps == 180,
		      "rates %f %f", e->allowed_ps, e->refused_ps);
		ks_limits_info(&s, id, &info);
		CHECK(info.rate == 20 && info.refused == 720 &&
			      info.refused_mps == 180000 && info.len == 6,
		      "info");
	}
	/* still limited KEEP intervals after it left the ranked keys */
	CHECK_EQ(ks_limits_plan(&s, &r, NULL, 0, 3 + KS_LIMIT_KEEP, NULL, 0),
		 0);
	CHECK_EQ(ks_limits_plan(&s, &r, NULL, 0, 4 + KS_LIMIT_KEEP, NULL, 0),
		 1);
	CHECK(!ut_limit_find(&s, "sess:1"), "prefix key kept too long");
	CHECK_EQ(s.e[id].state, KS_LIMIT_GONE);
	CHECK_EQ(s.e[id].old_hash, ut_hash("sess:1"));
	ks_limits_synced(&s);
	CHECK_EQ(s.e[id].state, KS_LIMIT_FREE);
	/* a changed rate rewrites the entry; a removed rule retires it */
	parse(&r, "limit user:42 50/s\n", err, sizeof(err));
	CHECK_EQ(ks_limits_plan(&s, &r, NULL, 0, 40, NULL, 0), 1);
	e = ut_limit_find(&s, "user:42");
	CHECK(e && e->rate == 50 && e->state == KS_LIMIT_DIRTY && !e->fresh,
	      "rate changed");
	ks_limits_synced(&s);
	parse(&r, "pin x 2\n", err, sizeof(err));
	CHECK_EQ(ks_limits_plan(&s, &r, NULL, 0, 41, NULL, 0), 1);
	CHECK_EQ(s.live, 0);
	kt_end();
}

/* No more keys than rows: the rest counted, never an overflow. */
static void plan_full(void)
{
	static struct ks_limit_set s;
	static struct ks_hot_rules r;
	static struct ks_top_entry t[KS_LIMIT_SLOTS + 10];
	char err[128], key[32];
	size_t i;

	kt_begin("limits_plan_full");
	ks_limits_init(&s);
	parse(&r, "limit k* 5/s\n", err, sizeof(err));
	for (i = 0; i < KS_LIMIT_SLOTS + 10; i++) {
		snprintf(key, sizeof(key), "k%zu", i);
		t[i] = top(key);
	}
	CHECK_EQ(ks_limits_plan(&s, &r, t, KS_LIMIT_SLOTS + 10, 1, NULL, 0),
		 KS_LIMIT_SLOTS);
	CHECK_EQ(s.live, KS_LIMIT_SLOTS);
	CHECK_EQ(s.no_room, 10);
	kt_end();
}

/* 'agent fleet' (text, JSON) of a snapshot whose pins document has
 * limit rules and no shard rule: the rules listed, the dedicated shards'
 * section absent. */
static char *fleet_of(const struct ks_fleet_snapshot *s, int json,
		      int hash_only)
{
	struct ks_fleet_view v;
	struct ks_fleet_out o;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f || ks_fleet_view_build(s, 10, hash_only, &v))
		return NULL;
	o = (struct ks_fleet_out){
		.cluster = "web", .s = s, .v = &v, .hash_only = hash_only
	};
	if (json)
		ks_render_fleet_json(f, &o, 1);
	else
		ks_render_fleet_text(f, &o);
	fclose(f);
	ks_fleet_view_free(&v);
	return buf;
}

/* A snapshot of cluster "web" holding only a pins document of text, at
 * etcd revision 7; kv keeps the document (freed by the caller). */
static void pins_snapshot(const char *text, struct ks_etcd_kv *kv,
			  struct ks_fleet_snapshot *s)
{
	static struct ks_hot_rules r;
	char err[200];

	CHECK(!parse(&r, text, err, sizeof(err)), "%s", err);
	kv->key = strdup("/keysteer/web/pins");
	kv->value = ks_pins_doc_encode(text, strlen(text), r.n, "t", "now");
	CHECK(kv->key && kv->value, "documents");
	kv->key_len = kv->key ? strlen(kv->key) : 0;
	kv->value_len = kv->value ? strlen(kv->value) : 0;
	kv->mod_revision = 7;
	CHECK_EQ(ks_fleet_snapshot_decode(kv, 1, "/keysteer/web/", NULL, 0,
					  NULL, 8, s),
		 0);
}

static void fleet_rules(void)
{
	static const char text[] = "limit runaway:1 200/s\nlimit sess:* "
				   "2000/s\npin hot 2\n";
	struct ks_fleet_snapshot s;
	struct ks_etcd_kv kv = { 0 };
	char *t = NULL, *j = NULL;

	kt_begin("limits_fleet_lists_rules");
	pins_snapshot(text, &kv, &s);
	CHECK(s.pins != NULL && s.pins_rev == 7, "pins not kept");
	t = fleet_of(&s, 0, 0);
	j = fleet_of(&s, 1, 0);
	CHECK(t && strstr(t, "rate limits (pins revision 7)") &&
		      strstr(t, "runaway:1") &&
		      strstr(t,
			     " 200     0        0.0        0.0        0.0  the key\n") &&
		      strstr(t, "sess:*") &&
		      strstr(t,
			     " 2000     0        0.0        0.0        0.0  each key under it\n") &&
		      !strstr(t, "limited keys") &&
		      !strstr(t, "dedicated shards"),
	      "text: %s", t ? t : "(none)");
	CHECK(j &&
		      strstr(j,
			     "\"limits\":[{\"key\":\"runaway:1\","
			     "\"rate_per_s\":200,\"burst\":20,\"keys\":0,"
			     "\"allowed_per_s\":0.0,\"refused_per_s\":0.0,"
			     "\"tcp_per_s\":0.0},"
			     "{\"prefix\":\"sess:\",\"rate_per_s\":2000,"
			     "\"burst\":200,\"keys\":0,"
			     "\"allowed_per_s\":0.0,\"refused_per_s\":0.0,"
			     "\"tcp_per_s\":0.0}],"
			     "\"limited_keys\":[],\"limited_keys_omitted\":0") &&
		      strstr(j, "\"dedicated\":[]"),
	      "JSON: %s", j ? j : "(none)");
	free(t);
	free(j);
	ks_fleet_snapshot_free(&s);
	ks_etcd_kv_free(&kv);
	kt_end();
}

/* --hash-only: no rule's key in the text or the JSON, limit and shard
 * rules alike (a rule's key is user data like any key). */
static void fleet_rules_hash_only(void)
{
	static const char text[] = "limit runaway:1 200/s\n"
				   "shard tenant7:* 198.18.0.9:11211\n";
	struct ks_fleet_snapshot s;
	struct ks_etcd_kv kv = { 0 };
	char *t = NULL, *j = NULL;

	kt_begin("limits_fleet_hash_only_hides_rule_keys");
	pins_snapshot(text, &kv, &s);
	t = fleet_of(&s, 0, 1);
	j = fleet_of(&s, 1, 1);
	CHECK(t && strstr(t, "rate limits") && strstr(t, "dedicated shards") &&
		      !strstr(t, "runaway") && !strstr(t, "tenant7"),
	      "text: %s", t ? t : "(none)");
	CHECK(j && strstr(j, "\"limits\":[{\"key\":null") &&
		      strstr(j, "\"prefix\":null") && !strstr(j, "runaway") &&
		      !strstr(j, "tenant7"),
	      "JSON: %s", j ? j : "(none)");
	free(t);
	free(j);
	ks_fleet_snapshot_free(&s);
	ks_etcd_kv_free(&kv);
	kt_end();
}

/* ks_key_hash of a key, as the agent's limits (core/limits.c) take it. */
static __u64 key_hash(const char *key)
{
	__u64 words[KS_KEY_WORDS] = {};

	memcpy(words, key, strlen(key));
	return ks_key_hash(words, (__u32)strlen(key));
}

/* A load document of agent self limiting keys[i] at rates[i] with the
 * figures al[i], re[i], tcp[i]; hash_only as --etcd-hash-only. */
static struct ks_host_doc *limit_doc(const char *self, size_t n,
				     const char *const *keys,
				     const unsigned *rates, const double *al,
				     const double *re, const double *tcp,
				     int hash_only)
{
	struct ks_host_doc *d = calloc(1, sizeof(*d));
	size_t i;

	if (!d)
		return NULL;
	snprintf(d->self, sizeof(d->self), "%s", self);
	snprintf(d->agent_version, sizeof(d->agent_version), "t");
	snprintf(d->ifname, sizeof(d->ifname), "veth0");
	d->pid = 1;
	d->interval_ms = 1000;
	d->ring_revision = 3;
	for (i = 0; i < n; i++) {
		struct ks_load_limit *l = &d->limits[d->nlimits++];

		l->hash = key_hash(keys[i]);
		if (!hash_only)
			snprintf(l->key, sizeof(l->key), "%s", keys[i]);
		l->rate = rates[i];
		l->allowed_ps = al[i];
		l->refused_ps = re[i];
		l->tcp_ps = tcp[i];
	}
	return d;
}

/* The load document's "limits": written, read back the same; absent
 * (nothing limited) the document has no such field and reads as before;
 * an unknown field is ignored, as readers before "limits" ignore it. */
static void load_doc_limits(void)
{
	static const char *const keys[] = { "runaway:1", "sess:a\x01" };
	static const unsigned rates[] = { 200, 2000 };
	static const double al[] = { 199.5, 1500 }, re[] = { 1800, 0 },
			    tcp[] = { 12, 0.25 };
	struct ks_host_doc *d = limit_doc("a:11211", 2, keys, rates, al, re,
					  tcp, 0);
	struct ks_fleet_host *h = calloc(1, sizeof(*h));
	char *doc = NULL, *doc0 = NULL;
	static const char future[] =
		"{\"schema\":2,\"kind\":\"keysteer-load\",\"self\":\"a\","
		"\"ring_revision\":1,\"class_rates\":{\"read\":1,\"write\":0,"
		"\"other\":0},\"shard\":null,\"top\":[],\"hot\":[],"
		"\"a_later_field\":{\"x\":[1,2]}}";

	kt_begin("limits_load_doc_round_trip");
	CHECK(d && h, "memory");
	if (!d || !h)
		goto out;
	d->limits_omitted = 5;
	doc = ks_host_doc_encode_kind(d, KS_HDK_LOAD, "2026-12-02T00:00:00Z");
	CHECK(doc && strstr(doc, "\"limits\":[{\"hash\":\"") &&
		      strstr(doc, "\"key\":\"runaway:1\",\"rate_per_s\":200,"
				  "\"allowed_per_s\":200.0,"
				  "\"refused_per_s\":1800.0,"
				  "\"tcp_per_s\":12.0}") &&
		      strstr(doc, "\"limits_omitted\":5"),
	      "%s", doc ? doc : "(none)");
	ks_fleet_host_decode("a:11211", doc, doc ? strlen(doc) : 0, h);
	CHECK(h->valid && h->kind == KS_FHK_LOAD, "refused: %s", h->why);
	CHECK_EQ(h->n_limits, 2);
	CHECK_EQ(h->limits_omitted, 5);
	CHECK(h->limits[0].hash == key_hash("runaway:1") &&
		      !strcmp(h->limits[0].key, "runaway:1") &&
		      h->limits[0].rate == 200 &&
		      h->limits[0].allowed_ps == 200 &&
		      h->limits[0].refused_ps == 1800 &&
		      h->limits[0].tcp_ps == 12,
	      "first row");
	/* the key as the report escapes it, and rates to 3 digits */
	CHECK(h->limits[1].hash == key_hash("sess:a\x01") &&
		      !strcmp(h->limits[1].key, "sess:a\x01") &&
		      h->limits[1].rate == 2000 &&
		      h->limits[1].allowed_ps == 1500 &&
		      h->limits[1].refused_ps == 0 &&
		      h->limits[1].tcp_ps == 0.25,
	      "second row: %s", h->limits[1].key);
	kt_end();

	kt_begin("limits_load_doc_absent_unchanged");
	d->nlimits = 0;
	d->limits_omitted = 0;
	doc0 = ks_host_doc_encode_kind(d, KS_HDK_LOAD, "2026-12-02T00:00:00Z");
	CHECK(doc0 && !strstr(doc0, "limits"), "%s", doc0 ? doc0 : "(none)");
	ks_fleet_host_decode("a:11211", doc0, doc0 ? strlen(doc0) : 0, h);
	CHECK(h->valid && h->n_limits == 0 && h->limits_omitted == 0,
	      "refused: %s", h->why);
	/* what lets readers before "limits" take a document with it */
	ks_fleet_host_decode("a", future, strlen(future), h);
	CHECK(h->valid && h->kind == KS_FHK_LOAD && h->reads == 1,
	      "unknown field: %s", h->why);
	kt_end();
out:
	free(doc);
	free(doc0);
	free(d);
	free(h);
}

/* A "limits" list of the wrong shape refuses the load document, with
 * why, as a "hot" list of the wrong shape does. */
static void load_doc_limits_refused(void)
{
	static const char head[] =
		"{\"schema\":2,\"kind\":\"keysteer-load\",\"self\":\"a\","
		"\"ring_revision\":1,\"class_rates\":{\"read\":1,\"write\":0,"
		"\"other\":0},\"shard\":null,\"top\":[],\"hot\":[],";
	static const struct {
		const char *tail, *why;
	} bad[] = {
		{ "\"limits\":{}}", "limits is not an array" },
		{ "\"limits\":[1]}", "limits[0] has no hash" },
		{ "\"limits\":[{\"hash\":\"ABCDEF0123456789\"}]}",
		  "limits[0] has no hash" },
		{ "\"limits\":[{\"hash\":\"0123456789abcdef\",\"key\":7}]}",
		  "limits[0] has a key that is not a string" },
		{ "\"limits\":[{\"hash\":\"0123456789abcdef\","
		  "\"rate_per_s\":-1}]}",
		  "rate_per_s that is not an integer" },
		{ "\"limits\":[{\"hash\":\"0123456789abcdef\","
		  "\"refused_per_s\":-2}]}",
		  "limits[0] has a refused_per_s that is not a number >= 0" },
		{ "\"limits\":[{\"hash\":\"0123456789abcdef\","
		  "\"allowed_per_s\":\"9\"}]}",
		  "allowed_per_s that is not a number" },
		{ "\"limits\":[],\"limits_omitted\":-3}",
		  "limits_omitted is not an integer >= 0" },
	};
	struct ks_fleet_host *h = calloc(1, sizeof(*h));
	char doc[4096];
	size_t i, o;

	kt_begin("limits_load_doc_malformed_refused");
	for (i = 0; h && i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(doc, sizeof(doc), "%s%s", head, bad[i].tail);
		ks_fleet_host_decode("a", doc, strlen(doc), h);
		CHECK(!h->valid && strstr(h->why, bad[i].why),
		      "%s: valid %d, why '%s'", bad[i].tail, h->valid, h->why);
	}
	/* one more entry than the cap */
	o = (size_t)snprintf(doc, sizeof(doc), "%s\"limits\":[", head);
	for (i = 0; i <= KS_LOAD_LIMITS_MAX; i++)
		o += (size_t)snprintf(doc + o, sizeof(doc) - o,
				      "%s{\"hash\":\"0123456789abcd%02zx\"}",
				      i ? "," : "", i);
	snprintf(doc + o, sizeof(doc) - o, "]}");
	if (h) {
		ks_fleet_host_decode("a", doc, strlen(doc), h);
		CHECK(!h->valid && strstr(h->why, "more than 16"), "why '%s'",
		      h->why);
	}
	free(h);
	kt_end();
}

/* A limited key is news for the load document when it comes or goes or
 * a figure moves; a figure's noise is not. */
static void load_doc_limits_same(void)
{
	static const char *const keys[] = { "runaway:1" };
	static const unsigned rates[] = { 200 };
	static const double al[] = { 200 }, re[] = { 1800 }, tcp[] = { 0 };
	struct ks_host_doc *a = limit_doc("a", 1, keys, rates, al, re, tcp, 0);
	struct ks_host_doc *b = limit_doc("a", 1, keys, rates, al, re, tcp, 0);

	kt_begin("limits_load_doc_news");
	CHECK(a && b, "memory");
	if (a && b) {
		CHECK(ks_host_doc_same_limits(a, b), "same");
		b->limits[0].refused_ps = 1801;
		CHECK(ks_host_doc_same_limits(a, b), "noise is news");
		b->limits[0].refused_ps = 900;
		CHECK(!ks_host_doc_same_limits(a, b), "a halved rate not news");
		b->limits[0].refused_ps = 1800;
		b->nlimits = 0;
		CHECK(!ks_host_doc_same_limits(a, b), "a key gone not news");
		b->nlimits = 1;
		b->limits_omitted = 1;
		CHECK(!ks_host_doc_same_limits(a, b), "omitted not news");
	}
	free(a);
	free(b);
	kt_end();
}

/* More limited keys than the list holds: the busiest 16 kept, busiest
 * first, the rest counted in limits_omitted and written as such. */
static void load_doc_limits_cap(void)
{
	struct ks_host_doc *d = calloc(1, sizeof(*d));
	struct ks_load_limit l;
	char *doc = NULL;
	unsigned i, n = KS_LOAD_LIMITS_MAX + 5, ok = 1;

	kt_begin("limits_load_doc_cap_busiest_first");
	CHECK(d != NULL, "memory");
	for (i = 0; d && i < n; i++) {
		/* busy 0..200 in an order that is not sorted: 5 is coprime
		 * with 21 */
		unsigned b = (i * 5) % n;

		memset(&l, 0, sizeof(l));
		l.hash = b + 1;
		l.rate = 100;
		l.refused_ps = b * 10.0;
		ks_load_limits_add(d, &l);
	}
	if (d) {
		CHECK_EQ(d->nlimits, KS_LOAD_LIMITS_MAX);
		CHECK_EQ(d->limits_omitted, 5);
		for (i = 0; i < d->nlimits; i++)
			ok &= d->limits[i].refused_ps == (n - 1 - i) * 10.0;
		CHECK(ok, "not the busiest 16, busiest first");
		doc = ks_host_doc_encode_kind(d, KS_HDK_LOAD, NULL);
		CHECK(doc && strstr(doc, "\"limits_omitted\":5"), "%s",
		      doc ? doc : "(none)");
	}
	free(doc);
	free(d);
	kt_end();
}

/* The kv of key with value (owned). */
static void kv_set(struct ks_etcd_kv *kv, const char *key, char *value,
		   int64_t rev)
{
	kv->key = strdup(key);
	kv->value = value;
	kv->key_len = kv->key ? strlen(kv->key) : 0;
	kv->value_len = value ? strlen(value) : 0;
	kv->mod_revision = rev;
}

/*
 * 'agent fleet' over two agents' load documents and the fleet's pins:
 * every limited key's figures summed across the agents, each rule's
 * keys' figures summed (a prefix rule by its keys' text, an exact rule
 * by the key's hash even from a hash-only agent), in text and JSON; with
 * --hash-only no key anywhere, the sums the same.
 */
static void fleet_sums(void)
{
	static const char pins[] = "limit runaway:1 200/s\nlimit sess:* "
				   "2000/s\n";
	static const char *const ka[] = { "runaway:1", "sess:a" },
				 *kb[] = { "runaway:1", "sess:b", "own:x" };
	static const unsigned ra[] = { 200, 2000 }, rb[] = { 200, 2000, 50 };
	static const double ala[] = { 150, 1000 }, rea[] = { 1350, 0 },
			    tca[] = { 5, 0 }, alb[] = { 50, 2000, 0 },
			    reb[] = { 450, 500, 0 }, tcb[] = { 0, 7, 0 };
	struct ks_host_doc *a = limit_doc("a:1", 2, ka, ra, ala, rea, tca, 0);
	struct ks_host_doc *b = limit_doc("b:1", 3, kb, rb, alb, reb, tcb, 1);
	struct ks_etcd_kv kv[3] = { 0 }, loads[2] = { 0 };
	struct ks_fleet_snapshot s;
	struct ks_hot_rules r;
	char err[200], *t = NULL, *j = NULL, *th = NULL, *jh = NULL;
	const char *lk;
	char want[400];
	size_t i;

	kt_begin("limits_fleet_sums_load_docs");
	CHECK(a && b, "memory");
	CHECK(!parse(&r, pins, err, sizeof(err)), "%s", err);
	if (!a || !b)
		goto out;
	kv_set(&kv[0], "/keysteer/web/members/a:1",
	       ks_host_doc_encode_kind(a, KS_HDK_MEMBER, NULL), 4);
	kv_set(&kv[1], "/keysteer/web/members/b:1",
	       ks_host_doc_encode_kind(b, KS_HDK_MEMBER, NULL), 4);
	kv_set(&kv[2], "/keysteer/web/pins",
	       ks_pins_doc_encode(pins, strlen(pins), r.n, "t", "now"), 7);
	kv_set(&loads[0], "/keysteer-load/web/a:1",
	       ks_host_doc_encode_kind(a, KS_HDK_LOAD, "now"), 9);
	kv_set(&loads[1], "/keysteer-load/web/b:1",
	       ks_host_doc_encode_kind(b, KS_HDK_LOAD, "now"), 9);
	CHECK_EQ(ks_fleet_snapshot_decode(kv, 3, "/keysteer/web/", loads, 2,
					  "/keysteer-load/web/", 10, &s),
		 0);
	CHECK_EQ(s.n_hosts, 2);
	t = fleet_of(&s, 0, 0);
	j = fleet_of(&s, 1, 0);
	th = fleet_of(&s, 0, 1);
	jh = fleet_of(&s, 1, 1);
	/* runaway:1 is listed by both (b hash-only: joined by its hash):
	 * 150 + 50 allowed, 1350 + 450 refused, 5 + 0 TCP */
	CHECK(t && strstr(t, "runaway:1") &&
		      strstr(t,
			     "    200     1      200.0     1800.0        5.0  the key\n") &&
		      /* sess:a only: sess:b came without its text */
		      strstr(t,
			     "   2000     1     1000.0        0.0        0.0  each key under it\n") &&
		      strstr(t,
			     "limited keys (summed over the agents' load documents)\n"),
	      "text: %s", t ? t : "(none)");
	snprintf(want, sizeof(want),
		 "{\"hash\":\"%016llx\",\"key\":\"runaway:1\","
		 "\"rate_per_s\":200,\"allowed_per_s\":200.0,"
		 "\"refused_per_s\":1800.0,\"tcp_per_s\":5.0,\"hosts\":2}",
		 (unsigned long long)key_hash("runaway:1"));
	CHECK(j && strstr(j, want) &&
		      strstr(j, "\"key\":null,\"rate_per_s\":50,"
				"\"allowed_per_s\":0.0,\"refused_per_s\":0.0,"
				"\"tcp_per_s\":0.0,\"hosts\":1}") &&
		      strstr(j, "\"key\":\"runaway:1\",\"rate_per_s\":200,"
				"\"burst\":20,\"keys\":1,"
				"\"allowed_per_s\":200.0,"
				"\"refused_per_s\":1800.0,\"tcp_per_s\":5.0}"),
	      "JSON: %s\nwant %s", j ? j : "(none)", want);
	/* busiest first: sess:b (2507) before runaway:1 (2005) */
	lk = j ? strstr(j, "\"limited_keys\":[{") : NULL;
	CHECK(lk && strstr(lk, "\"refused_per_s\":500.0") &&
		      strstr(lk, "\"refused_per_s\":500.0") <
			      strstr(lk, "\"key\":\"runaway:1\""),
	      "order: %s", lk ? lk : "(none)");
	CHECK(th && !strstr(th, "runaway") && !strstr(th, "sess:") &&
		      strstr(th,
			     "    200     1      200.0     1800.0        5.0  the key\n") &&
		      strstr(th,
			     "   2000     1     1000.0        0.0        0.0  each key under it\n"),
	      "hash-only text: %s", th ? th : "(none)");
	CHECK(jh && !strstr(jh, "runaway") && !strstr(jh, "sess:") &&
		      strstr(jh,
			     "\"refused_per_s\":1800.0,\"tcp_per_s\":5.0,\"hosts\":2}"),
	      "hash-only JSON: %s", jh ? jh : "(none)");
	ks_fleet_snapshot_free(&s);
out:
	for (i = 0; i < 3; i++)
		ks_etcd_kv_free(&kv[i]);
	for (i = 0; i < 2; i++)
		ks_etcd_kv_free(&loads[i]);
	free(t);
	free(j);
	free(th);
	free(jh);
	free(a);
	free(b);
	kt_end();
}

/* One limited key's row of `agent report` (text and JSON) says where its
 * limit came from: nothing for an exact rule, "(prefix rule)" for a key a
 * prefix rule took, "(auto)" for the automatic cap's; an operator tells
 * the cap from a rule by it. */
static void report_marks(void)
{
	static const char *const keys[] = { "exact:1", "sess:a", "run:1" };
	struct ks_limit_info row[3];
	struct ks_limit_view v = { .row = row, .n = 3 };
	char *t = NULL, *j = NULL, *line;
	size_t len = 0, i;
	FILE *f;

	kt_begin("limits_report_marks_rule_prefix_auto");
	memset(row, 0, sizeof(row));
	for (i = 0; i < 3; i++) {
		row[i].hash = key_hash(keys[i]);
		row[i].rate = 100 * (unsigned)(i + 1);
		row[i].burst = ks_limit_burst(row[i].rate);
		row[i].len = (__u16)strlen(keys[i]);
		memcpy(row[i].key, keys[i], row[i].len);
	}
	row[1].rule_len = 5;
	row[2].automatic = 1;
	f = open_memstream(&t, &len);
	CHECK(f, "memory");
	if (f) {
		ks_render_limit_text(f, &v);
		fclose(f);
	}
	f = open_memstream(&j, &len);
	CHECK(f, "memory");
	if (f) {
		ks_render_limit_json(f, &v);
		fclose(f);
	}
	for (i = 0; t && i < 3; i++) {
		size_t n;

		line = strstr(t, keys[i]);
		CHECK(line, "%s missing: %s", keys[i], t);
		if (!line)
			continue;
		n = strcspn(line, "\n");
		CHECK(i == 0 ? !memchr(line, '(', n)
			     : !strncmp(line + n - (i == 1 ? 15 : 8),
					i == 1 ? "  (prefix rule)" : "  (auto)",
					i == 1 ? 15 : 8),
		      "row %zu: %.*s", i, (int)n, line);
	}
	CHECK(j && strstr(j, "\"key\":\"exact:1\"") &&
		      strstr(j, "\"rate_per_s\":100,\"burst\":10,"
				"\"prefix_rule\":false,\"auto\":false") &&
		      strstr(j, "\"rate_per_s\":200,\"burst\":20,"
				"\"prefix_rule\":true,\"auto\":false") &&
		      strstr(j, "\"rate_per_s\":300,\"burst\":30,"
				"\"prefix_rule\":false,\"auto\":true"),
	      "JSON: %s", j ? j : "(none)");
	free(t);
	free(j);
	kt_end();
}

void test_limits(void)
{
	rule_parse();
	rule_errors();
	rule_pins_doc();
	bucket();
	plan();
	plan_full();
	fleet_rules();
	fleet_rules_hash_only();
	load_doc_limits();
	load_doc_limits_refused();
	load_doc_limits_same();
	load_doc_limits_cap();
	fleet_sums();
	report_marks();
}
