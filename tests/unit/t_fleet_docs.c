// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The fleet's entries in etcd (user/core/hot_doc.h, user/core/host_doc.h):
 * hot/<hash> encoded and decoded (key as text, as base64, hash only), every
 * refusal a reader makes, and the "no change" rules that keep an agent's
 * writes proportional to change, for both entries.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/fleet_pub.h"
#include "core/fleet_doc.h"
#include "core/host_doc.h"
#include "core/hot_doc.h"
#include "core/pins_doc.h"
#include "ktest.h"
#include "unit.h"

static void sample_hot(struct ks_hot_doc *d, const char *key)
{
	memset(d, 0, sizeof(*d));
	d->hash = 0x957d4a0eb5d027e3ULL;
	if (key) {
		d->len = (__u16)strlen(key);
		memcpy(d->key, key, d->len);
		d->has_key = 1;
	}
	snprintf(d->owner, sizeof(d->owner), "198.18.2.11:11211");
	d->read_hot = 1;
	d->copies = 3;
	d->subkeys = 1;
	d->nreplicas = 2;
	snprintf(d->replica[0], KS_HOT_DOC_OWNER, "198.18.2.101:11211");
	snprintf(d->replica[1], KS_HOT_DOC_OWNER, "198.18.2.102:11211");
	d->state = KS_HDS_ARMED;
	d->write_seq = 17;
	d->reads_ps = 5120;
	d->writes_ps = 0.5;
}

static int roundtrip(const struct ks_hot_doc *d, struct ks_hot_doc *out)
{
	char err[256], *s = ks_hot_doc_encode(d);
	int rc;

	if (!s)
		return -ENOMEM;
	rc = ks_hot_doc_decode(s, strlen(s), d->hash, out, err, sizeof(err));
	CHECK(!rc, "decode: %s\n%s", err, s);
	free(s);
	return rc;
}

static void t_hot_roundtrip(void)
{
	struct ks_hot_doc d, o;
	const __u8 bin[] = { 'a', 0x01, 0xff, 'z' };
	char *s;

	kt_begin("fleet_docs_hot_roundtrip");
	sample_hot(&d, "flash:1");
	if (!roundtrip(&d, &o))
		CHECK(o.has_key && o.len == 7 && !memcmp(o.key, "flash:1", 7) &&
			      !strcmp(o.owner, d.owner) && o.copies == 3 &&
			      o.nreplicas == 2 &&
			      !strcmp(o.replica[1], "198.18.2.102:11211") &&
			      o.state == KS_HDS_ARMED && o.write_seq == 17 &&
			      o.reads_ps == 5120 && o.read_hot &&
			      !o.write_hot && ks_hot_doc_same(&d, &o),
		      "fields");
	s = ks_hot_doc_encode(&d);
	CHECK(s && strstr(s, "\"key\":\"flash:1\"") &&
		      strstr(s, "\"hash\":\"957d4a0eb5d027e3\"") &&
		      strstr(s, "\"state\":\"armed\""),
	      "text %s", s ? s : "(null)");
	free(s);
	/* bytes a JSON string would mangle: base64 */
	sample_hot(&d, NULL);
	memcpy(d.key, bin, sizeof(bin));
	d.len = sizeof(bin);
	d.has_key = 1;
	s = ks_hot_doc_encode(&d);
	CHECK(s && strstr(s, "\"key_b64\":\"YQH/eg==\"") &&
		      !strstr(s, "\"key\""),
	      "binary key %s", s ? s : "(null)");
	free(s);
	if (!roundtrip(&d, &o))
		CHECK(o.len == 4 && !memcmp(o.key, bin, 4), "binary back");
	/* hash only */
	sample_hot(&d, NULL);
	s = ks_hot_doc_encode(&d);
	CHECK(s && !strstr(s, "\"key"), "hash only %s", s ? s : "(null)");
	free(s);
	if (!roundtrip(&d, &o))
		CHECK(!o.has_key, "no key back");
	/* the owner's hits and misses are the load document's, never the
	 * entry's: a herd at the owner rewrites nothing clients watch */
	sample_hot(&d, "flash:1");
	s = ks_hot_doc_encode(&d);
	CHECK(s && !strstr(s, "owner_misses") && !strstr(s, "owner_source"),
	      "no owner figures in hot/ %s", s ? s : "(null)");
	free(s);
	CHECK(!strcmp(ks_hot_doc_state_name(KS_HDS_DIRTY), "dirty") &&
		      !strcmp(ks_hot_doc_state_name(99), "?"),
	      "state names");
	kt_end();
}

static void t_hot_refused(void)
{
	static const struct {
		const char *doc, *why;
	} bad[] = {
		{ "[]", "JSON object" },
		{ "{", "JSON object" },
		{ "{\"schema\":2,\"hash\":\"957d4a0eb5d027e3\",\"owner\":\"a\",\"state\":\"armed\",\"copies\":1}",
		  "schema" },
		{ "{\"schema\":1,\"hash\":\"957D4A0EB5D027E3\",\"owner\":\"a\",\"state\":\"armed\",\"copies\":1}",
		  "hex" },
		{ "{\"schema\":1,\"hash\":\"957d4a0e\",\"owner\":\"a\",\"state\":\"armed\",\"copies\":1}",
		  "hex" },
		{ "{\"schema\":1,\"hash\":\"0000000000000001\",\"owner\":\"a\",\"state\":\"armed\",\"copies\":1}",
		  "not the key's hash" },
		{ "{\"schema\":1,\"hash\":\"957d4a0eb5d027e3\",\"state\":\"armed\",\"copies\":1}",
		  "owner" },
		{ "{\"schema\":1,\"hash\":\"957d4a0eb5d027e3\",\"owner\":\"a\",\"state\":\"hot\",\"copies\":1}",
		  "state" },
		{ "{\"schema\":1,\"hash\":\"957d4a0eb5d027e3\",\"owner\":\"a\",\"state\":\"armed\"}",
		  "copies" },
		{ "{\"schema\":1,\"hash\":\"957d4a0eb5d027e3\",\"owner\":\"a\",\"state\":\"armed\",\"copies\":9}",
		  "copies" },
		{ "{\"schema\":1,\"hash\":\"957d4a0eb5d027e3\",\"owner\":\"a\",\"state\":\"armed\",\"copies\":0}",
		  "copies" },
		{ "{\"schema\":1,\"hash\":\"957d4a0eb5d027e3\",\"owner\":\"a\",\"state\":\"armed\",\"copies\":2,\"replicas\":\"x\"}",
		  "replicas" },
		{ "{\"schema\":1,\"hash\":\"957d4a0eb5d027e3\",\"owner\":\"a\",\"state\":\"armed\",\"copies\":2,\"replicas\":[1]}",
		  "replica" },
		{ "{\"schema\":1,\"hash\":\"957d4a0eb5d027e3\",\"owner\":\"a\",\"state\":\"armed\",\"copies\":2,\"key\":\"\"}",
		  "key" },
		{ "{\"schema\":1,\"hash\":\"957d4a0eb5d027e3\",\"owner\":\"a\",\"state\":\"armed\",\"copies\":2,\"key_b64\":\"!!\"}",
		  "base64" },
		{ "{\"schema\":1,\"hash\":\"957d4a0eb5d027e3\",\"owner\":\"a\",\"state\":\"armed\",\"copies\":2,\"reads_per_s\":-1}",
		  "wrong type" },
		{ "{\"schema\":1,\"hash\":\"957d4a0eb5d027e3\",\"owner\":\"a\",\"state\":\"armed\",\"copies\":2,\"read_hot\":1}",
		  "wrong type" },
		{ "{\"schema\":1,\"hash\":\"957d4a0eb5d027e3\",\"owner\":\"a\",\"state\":\"armed\",\"copies\":2,\"write_seq\":\"3\"}",
		  "write_seq" },
		{ "{\"schema\":1,\"schema\":1,\"hash\":\"957d4a0eb5d027e3\",\"owner\":\"a\",\"state\":\"armed\",\"copies\":2}",
		  "JSON object" },
	};
	const char *ok =
		"{\"schema\":1,\"hash\":\"957d4a0eb5d027e3\",\"owner\":\"a\",\"state\":\"dirty\",\"copies\":2,\"future\":[1]}";
	struct ks_hot_doc d;
	char err[256];
	size_t i;

	kt_begin("fleet_docs_hot_refused");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK(ks_hot_doc_decode(bad[i].doc, strlen(bad[i].doc),
					0x957d4a0eb5d027e3ULL, &d, err,
					sizeof(err)) == -EINVAL &&
			      strstr(err, bad[i].why),
		      "%zu: %s -> '%s' (wanted '%s')", i, bad[i].doc, err,
		      bad[i].why);
	}
	CHECK(!ks_hot_doc_decode(ok, strlen(ok), 0, &d, err, sizeof(err)) &&
		      d.state == KS_HDS_DIRTY && d.subkeys == 0,
	      "minimal document with an unknown field: %s", err);
	kt_end();
}

static void t_hot_same(void)
{
	struct ks_hot_doc a, b;

	kt_begin("fleet_docs_hot_change_rules");
	CHECK(!ks_rate_moved(100, 109) && ks_rate_moved(100, 111) &&
		      !ks_rate_moved(2, 2.9) && ks_rate_moved(2, 3.1) &&
		      !ks_rate_moved(0, 0.9) && ks_rate_moved(0, 1.5),
	      "rate moves: a tenth, and 1/s");
	sample_hot(&a, "k");
	b = a;
	b.reads_ps = a.reads_ps * 1.09;
	b.writes_ps = 1.2;
	CHECK(ks_hot_doc_same(&a, &b) && !ks_hot_doc_rates_moved(&a, &b),
	      "rates within a tenth and 1/s");
	/* no client reads the rates: they are the load document's news */
	b.reads_ps = a.reads_ps * 1.2;
	CHECK(ks_hot_doc_same(&a, &b), "reads moved a fifth: no rewrite");
	CHECK(ks_hot_doc_rates_moved(&a, &b), "... a move by the old rule");
	b.reads_ps = 0;
	b.writes_ps = 9000;
	CHECK(ks_hot_doc_same(&a, &b) && ks_hot_doc_rates_moved(&a, &b),
	      "any rates: no rewrite");
	b = a;
	b.owner_turns = 32;
	CHECK(!ks_hot_doc_same(&a, &b), "owner_turns");
	b = a;
	b.key[0] ^= 1;
	CHECK(!ks_hot_doc_same(&a, &b), "key");
	b = a;
	snprintf(b.owner, sizeof(b.owner), "198.18.2.12:11211");
	CHECK(!ks_hot_doc_same(&a, &b), "owner");
	b = a;
	b.read_hot = 0;
	b.write_hot = 1;
	CHECK(!ks_hot_doc_same(&a, &b), "read-hot to write-hot");
	b = a;
	b.pinned = 1;
	CHECK(!ks_hot_doc_same(&a, &b), "pinned");
	b = a;
	b.state = KS_HDS_DIRTY;
	CHECK(!ks_hot_doc_same(&a, &b), "state");
	b = a;
	b.write_seq++;
	CHECK(!ks_hot_doc_same(&a, &b), "write_seq");
	b = a;
	snprintf(b.replica[1], KS_HOT_DOC_OWNER, "198.18.2.103:11211");
	CHECK(!ks_hot_doc_same(&a, &b), "replica");
	b = a;
	b.copies = 2;
	b.nreplicas = 1;
	CHECK(!ks_hot_doc_same(&a, &b), "copies");
	b = a;
	b.subkeys = 4;
	CHECK(!ks_hot_doc_same(&a, &b), "subkeys");
	kt_end();
}

static void sample_host(struct ks_host_doc *d)
{
	unsigned i;

	memset(d, 0, sizeof(*d));
	snprintf(d->self, sizeof(d->self), "198.18.2.11:11211");
	snprintf(d->agent_version, sizeof(d->agent_version), "0.1.0");
	d->pid = 42;
	snprintf(d->ifname, sizeof(d->ifname), "eth1");
	d->ring_revision = 7;
	d->interval_ms = 1000;
	d->sample_n = 16;
	d->class_ps[0] = 1460;
	d->has_shard = 1;
	snprintf(d->shard, sizeof(d->shard), "198.18.2.11:11211");
	d->shard_reads_ps = 1470;
	d->ntop = 5;
	d->top[0].hash = 1;
	d->top[0].reads_ps = 1000;
	for (i = 1; i < 5; i++) {
		d->top[i].hash = 100 + i;
		d->top[i].reads_ps = 30.0 - i;
	}
}

static void t_host(void)
{
	struct ks_host_doc a, b;
	char *s;

	kt_begin("fleet_docs_host_change_rules");
	sample_host(&a);
	b = a;
	CHECK(ks_host_doc_same(&a, &b), "itself");
	b.class_ps[0] = 1510;
	b.shard_reads_ps = 1500;
	CHECK(ks_host_doc_same(&a, &b), "rates within a tenth");
	b.shard_reads_ps = 1700;
	CHECK(!ks_host_doc_same(&a, &b), "shard reads moved");
	b = a;
	snprintf(b.purge, sizeof(b.purge), "purging");
	CHECK(!ks_host_doc_same(&a, &b), "the purge started");
	s = ks_host_doc_encode(&b, NULL);
	CHECK(s && strstr(s, "\"purge\":\"purging\""), "purge: %s", s ? s : "");
	free(s);
	s = ks_host_doc_encode(&a, NULL);
	CHECK(s && !strstr(s, "\"purge\""), "purge written when off: %s",
	      s ? s : "");
	free(s);
	b = a;
	/* the quiet tail: a key swapped, rates halved */
	b.top[4].hash = 999;
	b.top[2].reads_ps = 12;
	CHECK(ks_host_doc_same(&a, &b), "tail shuffle is no change");
	b = a;
	b.top[0].reads_ps = 1200;
	CHECK(!ks_host_doc_same(&a, &b), "busiest key moved");
	/* a full list of keys as busy as each other: the last one trading
	 * places with one just outside is no news, a busy newcomer is */
	{
		struct ks_host_doc f = a, g;
		unsigned i;

		f.ntop = KS_HOST_DOC_TOP;
		for (i = 0; i < KS_HOST_DOC_TOP; i++) {
			f.top[i].hash = 500 + i;
			f.top[i].reads_ps = 100 - i;
		}
		g = f;
		g.top[KS_HOST_DOC_TOP - 1].hash = 999;
		g.top[KS_HOST_DOC_TOP - 1].reads_ps = 92;
		CHECK(ks_host_doc_same(&f, &g),
		      "a swap at the end of the list");
		g.top[KS_HOST_DOC_TOP - 1].reads_ps = 150;
		CHECK(!ks_host_doc_same(&f, &g), "a busy newcomer at the end");
	}
	b = a;
	b.top[3].reads_ps = 400; /* out of the tail */
	CHECK(!ks_host_doc_same(&a, &b), "a tail key turned busy");
	b = a;
	b.top[0].hash = 2;
	CHECK(!ks_host_doc_same(&a, &b), "another busiest key");
	b = a;
	b.ring_revision = 8;
	CHECK(!ks_host_doc_same(&a, &b), "ring revision");
	b = a;
	b.has_shard = 0;
	CHECK(!ks_host_doc_same(&a, &b), "shard gone");
	s = ks_host_doc_encode(&a, "2026-12-01T00:00:00Z");
	CHECK(s && strstr(s, "\"schema\":1,\"self\":\"198.18.2.11:11211\"") &&
		      strstr(s,
			     "\"shard\":{\"name\":\"198.18.2.11:11211\",\"reads_per_s\":1470") &&
		      strstr(s, "\"hash\":\"0000000000000001\"") &&
		      !strstr(s, "\"key\"") &&
		      strstr(s, "\"updated_at\":\"2026-12-01T00:00:00Z\""),
	      "text %s", s ? s : "(null)");
	free(s);
	a.has_shard = 0;
	snprintf(a.top[0].key, sizeof(a.top[0].key), "flash:1");
	s = ks_host_doc_encode(&a, NULL);
	CHECK(s && strstr(s, "\"shard\":null") &&
		      strstr(s, "\"key\":\"flash:1\"") &&
		      !strstr(s, "updated_at"),
	      "no shard, a key: %s", s ? s : "(null)");
	free(s);
	kt_end();
}

/* What moves with load goes to the load document only: the member
 * document, under the prefix every client watches, never changes for it. */
static void t_member_load(void)
{
	struct ks_host_doc a, b;
	char *m, *l, *c;

	kt_begin("fleet_docs_member_and_load_split");
	sample_host(&a);
	snprintf(a.replicas[a.nreplicas++], sizeof(a.replicas[0]),
		 "198.18.2.101:11211");
	b = a;
	b.shard_reads_ps = 99999;
	b.class_ps[1] = 5000;
	b.top[0].hash = 77;
	b.ring_revision = 8;
	snprintf(b.purge, sizeof(b.purge), "purging");
	CHECK(ks_host_doc_same_member(&a, &b), "rates, ring, purge: no change");
	CHECK(!ks_host_doc_same_status(&a, &b), "ring and purge: a status");
	b.ring_revision = a.ring_revision;
	b.purge[0] = '\0';
	CHECK(ks_host_doc_same_status(&a, &b), "rates alone: same status");
	snprintf(a.purge, sizeof(a.purge), "idle");
	snprintf(b.purge, sizeof(b.purge), "sweeping");
	CHECK(!ks_host_doc_same_status(&a, &b), "a sweep: a status");
	CHECK(ks_host_doc_same_compat(&a, &b), "a sweep: not for old readers");
	snprintf(b.purge, sizeof(b.purge), "grace");
	CHECK(!ks_host_doc_same_compat(&a, &b), "a purge's grace: for them");
	snprintf(b.purge, sizeof(b.purge), "idle");
	CHECK(!ks_host_doc_same(&a, &b), "rates alone: a load change");
	b.replicas[0][0] = 'x';
	CHECK(!ks_host_doc_same_member(&a, &b), "replicas");
	b = a;
	b.pid = 43;
	CHECK(!ks_host_doc_same_member(&a, &b), "a restart");
	m = ks_host_doc_encode_kind(&b, KS_HDK_MEMBER, "2026-12-01T00:00:00Z");
	l = ks_host_doc_encode_kind(&b, KS_HDK_LOAD, "2026-12-01T00:00:00Z");
	c = ks_host_doc_encode_kind(&b, KS_HDK_COMPAT, NULL);
	CHECK(m && strstr(m, "\"schema\":2,\"kind\":\"keysteer-member\"") &&
		      strstr(m, "\"shard\":\"198.18.2.11:11211\"") &&
		      strstr(m, "\"replicas\":[\"198.18.2.101:11211\"]") &&
		      !strstr(m, "per_s") && !strstr(m, "top") &&
		      !strstr(m, "ring_revision") && !strstr(m, "updated_at"),
	      "member %s", m ? m : "(null)");
	CHECK(l && strstr(l, "\"schema\":2,\"kind\":\"keysteer-load\"") &&
		      strstr(l, "\"reads_per_s\":1470") &&
		      strstr(l, "\"ring_revision\":7") &&
		      strstr(l, "\"updated_at\"") && !strstr(l, "replicas") &&
		      !strstr(l, "pid"),
	      "load %s", l ? l : "(null)");
	CHECK(c && strstr(c, "\"schema\":1,") && strstr(c, "\"compat\":true") &&
		      strstr(c, "\"reads_per_s\":1470") &&
		      strstr(c, "\"replicas\""),
	      "compat %s", c ? c : "(null)");
	free(m);
	free(l);
	free(c);
	kt_end();
}

static void t_pins(void)
{
	static const char text[] =
		"# sale\npin flash:1 4\nsplit-prefix ctr: 8\n";
	static const struct {
		const char *doc, *why;
	} bad[] = {
		{ "\"x\"", "JSON object" },
		{ "{\"schema\":2,\"kind\":\"keysteer-pins\",\"rules\":\"\"}",
		  "schema" },
		{ "{\"schema\":1,\"kind\":\"keysteer-ring\",\"rules\":\"\"}",
		  "kind" },
		{ "{\"schema\":1,\"kind\":\"keysteer-pins\",\"rules\":[]}",
		  "rules" },
		{ "{\"schema\":1,\"kind\":\"keysteer-pins\",\"rules\":\"pin a\\npin\"}",
		  "etcd:1:" },
		{ "{\"schema\":1,\"kind\":\"keysteer-pins\",\"rules\":\"pin a 1\",\"count\":2}",
		  "count" },
	};
	struct ks_pins_doc *d = malloc(sizeof(*d));
	char err[512], key[64], *s;
	size_t i;

	kt_begin("fleet_docs_pins");
	s = ks_pins_doc_encode(text, strlen(text), 2, "t@h pid 1",
			       "2026-12-01T00:00:00Z");
	CHECK(s && !ks_pins_doc_decode(s, strlen(s), "etcd", d, err,
				       sizeof(err)),
	      "roundtrip: %s", err);
	CHECK(d->rules.n == 2 && d->rules.r[0].count == 4 &&
		      d->rules.r[1].type == KS_RULE_SPLIT_PREFIX &&
		      !strcmp(d->written_by, "t@h pid 1"),
	      "rules %zu", d->rules.n);
	free(s);
	CHECK(!ks_pins_doc_encode("\xff", 1, 0, "a", "b"), "not UTF-8");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK(ks_pins_doc_decode(bad[i].doc, strlen(bad[i].doc), "etcd",
					 d, err, sizeof(err)) == -EINVAL &&
			      strstr(err, bad[i].why) && !d->rules.n,
		      "%zu: %s -> '%s'", i, bad[i].doc, err);
	}
	CHECK(ks_pins_doc_key("web", key, sizeof(key)) > 0 &&
		      !strcmp(key, "/keysteer/web/pins"),
	      "key %s", key);
	free(d);
	kt_end();
}

static void sample_load_hot(struct ks_host_doc *d)
{
	d->nhot = 2;
	d->hot[0].hash = 0x957d4a0eb5d027e3ULL;
	d->hot[0].v[KS_LHF_READS] = 5120;
	d->hot[0].v[KS_LHF_WRITES] = 0.5;
	d->hot[1].hash = 0x10;
	d->hot[1].v[KS_LHF_READS] = 300;
	d->hot[1].v[KS_LHF_WRITES] = 40;
	/* the first owner does not count its replies; the second does */
	d->hot[0].v[KS_LHF_OWNER_HITS] = NAN;
	d->hot[0].v[KS_LHF_OWNER_MISSES] = NAN;
	d->hot[1].v[KS_LHF_OWNER_HITS] = 4000;
	d->hot[1].v[KS_LHF_OWNER_MISSES] = 1.5;
}

/* The load document's "hot" list: every hot key's live figures, out of
 * the clients' prefix, with the load document's rule for news. */
static void t_load_hot(void)
{
	struct ks_host_doc a, b;
	struct ks_load_hot out[4];
	json_t *j;
	char why[200], *l, *m, *c;
	unsigned f;

	kt_begin("fleet_docs_load_hot_list");
	sample_host(&a);
	sample_load_hot(&a);
	l = ks_host_doc_encode_kind(&a, KS_HDK_LOAD, NULL);
	m = ks_host_doc_encode_kind(&a, KS_HDK_MEMBER, NULL);
	c = ks_host_doc_encode_kind(&a, KS_HDK_COMPAT, NULL);
	CHECK(l && strstr(l, "\"hot\":[{\"hash\":\"957d4a0eb5d027e3\","
			     "\"reads_per_s\":5120.0,\"writes_per_s\":0.5},"
			     "{\"hash\":\"0000000000000010\","),
	      "load %s", l ? l : "(null)");
	CHECK(m && c && !strstr(m, "\"hot\"") && !strstr(c, "\"hot\""),
	      "a hot list outside the load document: %s / %s", m ? m : "",
	      c ? c : "");
	/* back through the reader, every figure */
	j = l ? json_loads(l, 0, NULL) : NULL;
	CHECK(j &&
		      ks_load_hot_decode(json_object_get(j, "hot"), out, 4, why,
					 sizeof(why)) == 2 &&
		      out[0].hash == a.hot[0].hash && out[1].hash == 0x10,
	      "decode: %s", why);
	for (f = 0; j && f < KS_LHF_N; f++)
		CHECK(out[1].v[f] == a.hot[1].v[f], "%s: %g",
		      ks_load_hot_name[f], out[1].v[f]);
	/* a figure not counted is left out and read back as unknown */
	CHECK(j && isnan(out[0].v[KS_LHF_OWNER_MISSES]) &&
		      isnan(out[0].v[KS_LHF_OWNER_HITS]) &&
		      strstr(l, "\"owner_misses_per_s\":1.5"),
	      "owner figures: %s", l ? l : "(null)");
	json_decref(j);
	/* a longer list than the reader's bound is refused */
	j = l ? json_loads(l, 0, NULL) : NULL;
	CHECK(j &&
		      ks_load_hot_decode(json_object_get(j, "hot"), out, 1, why,
					 sizeof(why)) == -1 &&
		      strstr(why, "more than 1"),
	      "bound: %s", why);
	json_decref(j);
	free(l);
	free(m);
	free(c);

	b = a;
	CHECK(ks_host_doc_same_hot(&a, &b), "itself");
	b.hot[0].v[KS_LHF_READS] = 5500;
	b.hot[1].v[KS_LHF_WRITES] = 41;
	CHECK(ks_host_doc_same_hot(&a, &b), "within a tenth and 1/s");
	CHECK(ks_host_doc_same(&a, &b), "hosts/ does not carry the list");
	b.hot[0].v[KS_LHF_READS] = 7000;
	CHECK(!ks_host_doc_same_hot(&a, &b), "reads moved");
	b = a;
	b.hot[1].v[KS_LHF_WRITES] = 80;
	CHECK(!ks_host_doc_same_hot(&a, &b), "writes moved");
	b = a;
	b.hot[1].v[KS_LHF_OWNER_MISSES] = 30; /* a herd at the owner */
	CHECK(!ks_host_doc_same_hot(&a, &b), "misses moved");
	b = a;
	b.hot[0].v[KS_LHF_OWNER_MISSES] = 0;
	CHECK(!ks_host_doc_same_hot(&a, &b), "misses counted from now");
	b = a;
	b.hot[0] = a.hot[1];
	b.hot[1] = a.hot[0];
	CHECK(ks_host_doc_same_hot(&a, &b), "the order is no news");
	b.nhot = 1;
	CHECK(!ks_host_doc_same_hot(&a, &b), "a key left");
	b = a;
	b.hot[1].hash = 0x11;
	CHECK(!ks_host_doc_same_hot(&a, &b), "another key");
	b = a;
	b.hot[b.nhot].hash = 0x12;
	b.nhot++;
	CHECK(!ks_host_doc_same_hot(&a, &b), "a key came");
	kt_end();

	kt_begin("fleet_docs_load_hot_refused");
	{
		static const struct {
			const char *doc, *why;
		} bad[] = {
			{ "{}", "not an array" },
			{ "[1]", "hot[0] has no hash" },
			{ "[{\"hash\":\"957D4A0EB5D027E3\"}]",
			  "hot[0] has no hash" },
			{ "[{\"hash\":\"957d4a0e\"}]", "hot[0] has no hash" },
			{ "[{\"hash\":\"0000000000000001\"},{\"reads_per_s\":1}]",
			  "hot[1] has no hash" },
			{ "[{\"hash\":\"0000000000000001\",\"reads_per_s\":-1}]",
			  "reads_per_s that is not a number >= 0" },
			{ "[{\"hash\":\"0000000000000001\",\"writes_per_s\":\"1\"}]",
			  "writes_per_s that is not a number >= 0" },
		};
		size_t i;

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			j = json_loads(bad[i].doc, JSON_DECODE_ANY, NULL);
			why[0] = '\0';
			CHECK(j &&
				      ks_load_hot_decode(j, out, 4, why,
							 sizeof(why)) == -1 &&
				      strstr(why, bad[i].why),
			      "%zu: %s -> '%s'", i, bad[i].doc, why);
			json_decref(j);
		}
		/* a figure it lacks (an agent before it) is not known, and
		 * one it does not know is ignored */
		j = json_loads("[{\"hash\":\"0000000000000001\","
			       "\"reads_per_s\":3,\"misses_per_s\":2}]",
			       0, NULL);
		CHECK(j &&
			      ks_load_hot_decode(j, out, 4, why, sizeof(why)) ==
				      1 &&
			      out[0].v[KS_LHF_READS] == 3 &&
			      isnan(out[0].v[KS_LHF_WRITES]),
		      "absent and unknown figures: %s", why);
		json_decref(j);
	}
	kt_end();
}

/* The agent's lease: 3 intervals, never under 2 call timeouts and 1 s. */
static void t_lease_ttl(void)
{
	static const struct {
		__u32 interval_ms;
		int timeout_ms;
		int64_t want;
	} c[] = {
		{ 500, 2000, 5 },    /* was 2 s: one slow keepalive lost it */
		{ 1000, 2000, 5 },   /* was 3 s */
		{ 100, 2000, 5 },    /* the shortest interval */
		{ 1667, 2000, 6 },   /* 5.001 s rounds up */
		{ 2000, 2000, 6 },   /* 3 intervals over the floor */
		{ 1000, 10000, 21 }, /* a slow etcd's timeout raises it */
		{ 1000, 1, 3 },      /* a 1 ms timeout: 3 intervals */
		{ 3600000, 2000, 10800 },
	};
	size_t i;

	kt_begin("fleet_lease_ttl_floor");
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		CHECK(ks_fleet_lease_ttl_s(c[i].interval_ms, c[i].timeout_ms) ==
			      c[i].want,
		      "interval %u ms, timeout %d ms: %lld s, want %lld",
		      c[i].interval_ms, c[i].timeout_ms,
		      (long long)ks_fleet_lease_ttl_s(c[i].interval_ms,
						      c[i].timeout_ms),
		      (long long)c[i].want);
	kt_end();
}

/* The load document's counters ("shard"."totals"): only in the load
 * document, read back whole, no news on their own, refused when
 * malformed, absent from documents before them. */
static void t_load_totals(void)
{
	struct ks_host_doc a, b;
	struct ks_fleet_host *h = calloc(1, sizeof(*h));
	char *l, *c, *doc;
	static const struct {
		const char *totals, *why;
	} bad[] = {
		{ "1", "not an object" },
		{ "{\"base\":5,\"ms\":1,\"reads\":1,\"served\":1,\"writes\":0}",
		  "no misdirected" },
		{ "{\"base\":5,\"ms\":-1,\"reads\":1,\"served\":1,\"writes\":0,\"misdirected\":0}",
		  "no ms" },
		{ "{\"base\":5,\"ms\":1,\"reads\":1.5,\"served\":1,\"writes\":0,\"misdirected\":0}",
		  "no reads" },
		{ "{\"base\":\"5\",\"ms\":1,\"reads\":1,\"served\":1,\"writes\":0,\"misdirected\":0}",
		  "no base" },
		{ "{\"base\":5,\"ms\":1,\"reads\":1,\"served\":1,\"writes\":0,\"misdirected\":0}",
		  "no fills" },
		{ "{\"base\":0,\"ms\":1,\"reads\":1,\"served\":1,\"writes\":0,\"misdirected\":0,\"fills\":0}",
		  "a base of 0" },
	};
	unsigned i;

	kt_begin("fleet_docs_load_totals");
	if (!h) {
		CHECK(0, "out of memory");
		kt_end();
		return;
	}
	sample_host(&a);
	a.totals = (struct ks_load_totals){ 1764000000123ULL,
					    93001,
					    12345678901ULL,
					    12000000000ULL,
					    77,
					    3,
					    41 };
	l = ks_host_doc_encode_kind(&a, KS_HDK_LOAD, NULL);
	c = ks_host_doc_encode_kind(&a, KS_HDK_COMPAT, NULL);
	CHECK(l && strstr(l, "\"totals\":{\"base\":1764000000123,\"ms\":93001,"
			     "\"reads\":12345678901,\"served\":12000000000,"
			     "\"writes\":77,\"misdirected\":3,\"fills\":41}"),
	      "load %s", l ? l : "(null)");
	CHECK(c && !strstr(c, "totals"), "hosts/ as it was: %s", c ? c : "");
	ks_fleet_host_decode("x", l, strlen(l), h);
	CHECK(h->valid && h->kind == KS_FHK_LOAD &&
		      !memcmp(&h->totals, &a.totals, sizeof(a.totals)),
	      "read back: valid %d (%s) base %llu ms %llu served %llu",
	      h->valid, h->why, (unsigned long long)h->totals.base_ms,
	      (unsigned long long)h->totals.ms,
	      (unsigned long long)h->totals.served);
	/* counters move every interval: never news by themselves */
	b = a;
	b.totals.ms += 30000;
	b.totals.served += 900000;
	b.totals.base_ms++;
	CHECK(ks_host_doc_same(&a, &b), "counters alone are no news");
	/* an agent before them: no totals, base 0 */
	a.totals.base_ms = 0;
	free(l);
	l = ks_host_doc_encode_kind(&a, KS_HDK_LOAD, NULL);
	CHECK(l && !strstr(l, "totals"), "none: %s", l ? l : "");
	ks_fleet_host_decode("x", l, strlen(l), h);
	CHECK(h->valid && h->totals.base_ms == 0, "none read: %s", h->why);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = strlen(l) + strlen(bad[i].totals) + 32;
		char *at;

		doc = malloc(n);
		at = l ? strstr(l, "\"served_per_s\":") : NULL;
		if (!doc || !at) {
			CHECK(0, "setup");
			free(doc);
			break;
		}
		/* "totals" put before served_per_s in the shard object */
		snprintf(doc, n, "%.*s\"totals\":%s,%s", (int)(at - l), l,
			 bad[i].totals, at);
		ks_fleet_host_decode("x", doc, strlen(doc), h);
		CHECK(!h->valid && strstr(h->why, bad[i].why),
		      "%s: valid %d, why '%s'", bad[i].totals, h->valid,
		      h->why);
		free(doc);
	}
	free(l);
	free(c);
	free(h);
	kt_end();
}

void test_fleet_docs(void)
{
	t_lease_ttl();
	t_pins();
	t_hot_roundtrip();
	t_hot_refused();
	t_hot_same();
	t_host();
	t_member_load();
	t_load_hot();
	t_load_totals();
}
