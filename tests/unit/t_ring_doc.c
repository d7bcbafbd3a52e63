// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ring document of etcd (user/core/ring_doc.h): every distribution
 * encoded, decoded and rebuilt bit for bit (points and bucket index equal,
 * every key to the same shard), a fixed document from schema 1 as text,
 * every refusal, --self (in the ring and not), "force", and the cluster
 * names and key.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/ring_doc.h"
#include "ktest.h"
#include "unit.h"

/* Encodes the ring of list/dist, decodes it, builds it again: 0 if the
 * two halves are equal byte for byte. */
static int roundtrip(const char *list, enum ks_dist dist, __u32 vnodes,
		     int names)
{
	struct ks_shards s, s2;
	struct ks_ring r, r2;
	struct ks_ring_doc d;
	char err[1024], *doc = NULL, *text;
	size_t len, cap, off = 0;
	int rc = -1, i;

	/* names: a shard file with a name per line */
	cap = strlen(list) * 4 + 64;
	text = malloc(cap);
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ","), h = strcspn(p, ":");

		/* the name: "n-" and the host */
		off += (size_t)snprintf(text + off, cap - off, "%.*s%s%.*s\n",
					(int)n, p, names ? " n-" : "",
					names ? (int)h : 0, p);
		p += n + (p[n] == ',');
	}
	if (ks_shards_parse_text("t", text, &s, err, sizeof(err))) {
		CHECK(0, "shards: %s", err);
		free(text);
		return -1;
	}
	free(text);
	if (ks_ring_build(&r, &s, dist, vnodes, 0, err, sizeof(err))) {
		CHECK(0, "build: %s", err);
		ks_shards_free(&s);
		return -1;
	}
	if (ks_ring_doc_encode(&r, &s, "t@h pid 1", "2024-01-01T00:00:00Z",
			       &doc, &len))
		goto out;
	if (ks_ring_doc_decode(doc, len, &d, err, sizeof(err))) {
		CHECK(0, "decode: %s\n%s", err, doc);
		goto out;
	}
	CHECK(!strcmp(d.written_by, "t@h pid 1") &&
		      !strcmp(d.written_at, "2024-01-01T00:00:00Z"),
	      "writer '%s' '%s'", d.written_by, d.written_at);
	if (ks_ring_doc_build(&d, NULL, 7, &s2, &r2, err, sizeof(err))) {
		CHECK(0, "rebuild: %s", err);
		ks_ring_doc_free(&d);
		goto out;
	}
	r.half->meta.version = 7;
	rc = memcmp(r.half, r2.half, sizeof(*r.half)) ? -1 : 0;
	CHECK(!rc, "%s: the rebuilt half differs", ks_dist_name(dist));
	CHECK(s2.n == s.n && s2.self == KS_NO_SHARD, "shards %u self %u", s2.n,
	      s2.self);
	for (i = 0; i < (int)s.n && i < (int)s2.n; i++)
		CHECK(!strcmp(s.v[i].host, s2.v[i].host) &&
			      s.v[i].port == s2.v[i].port &&
			      s.v[i].weight == s2.v[i].weight &&
			      !strcmp(s.v[i].name, s2.v[i].name),
		      "shard %d", i);
	ks_ring_free(&r2);
	ks_shards_free(&s2);
	ks_ring_doc_free(&d);
out:
	free(doc);
	ks_ring_free(&r);
	ks_shards_free(&s);
	return rc;
}

static void t_roundtrip(void)
{
	static const char *lists[] = {
		"10.0.0.1:11211",
		"10.0.0.1:11211,10.0.0.2:11211:2,cache-3.example:11212:5",
		"a:1,b:2:1000000,c:3:7,d:4,e.f_g-h:65535:3",
	};
	unsigned i, d;

	kt_begin("ring_doc_roundtrip_every_distribution");
	for (i = 0; i < 3; i++)
		for (d = 0; d < KS_DIST_MAX; d++) {
			/* libmemcached's unweighted ring and pymemcache refuse
			 * weights */
			if ((d == KS_DIST_KETAMA_PLAIN ||
			     d == KS_DIST_PYMEMCACHE) &&
			    i)
				continue;
			CHECK(!roundtrip(lists[i], (enum ks_dist)d,
					 d == KS_DIST_VNODE ? 37 : 0, 0),
			      "list %u %s", i, ks_dist_name(d));
			CHECK(!roundtrip(lists[i], (enum ks_dist)d, 0, 1),
			      "list %u %s with names", i, ks_dist_name(d));
		}
	kt_end();
}

/* Schema 1 as a writer of another version would write it: other key
 * order, no written_by, an unknown field, weight left out. */
static const char fixed[] =
	"{\"kind\":\"keysteer-ring\",\"schema\":1,\"future\":{\"x\":1},"
	"\"shards\":[{\"host\":\"10.0.0.1\",\"port\":11211},"
	"{\"port\":11211,\"host\":\"10.0.0.2\",\"weight\":2}],"
	"\"distribution\":\"ketama\",\"key_hash\":\"md5\",\"points\":316,"
	"\"digest\":\"f3c5b38f0a0a465b\"}";

static void t_fixed(void)
{
	struct ks_ring_doc d;
	/* empty: a build that fails leaves it unset, and it is freed */
	struct ks_shards s = {};
	struct ks_ring r;
	char err[1024];

	kt_begin("ring_doc_fixed_schema_1");
	CHECK(!ks_ring_doc_decode(fixed, strlen(fixed), &d, err, sizeof(err)),
	      "%s", err);
	CHECK(d.dist == KS_DIST_KETAMA && d.shards.n == 2 &&
		      d.shards.v[1].weight == 2 && d.npoints == 316 &&
		      !d.written_by[0],
	      "dist %u n %u", d.dist, d.shards.n);
	CHECK(!ks_ring_doc_build(&d, "10.0.0.2:11211", 42, &s, &r, err,
				 sizeof(err)),
	      "%s", err);
	CHECK(r.half && r.half->meta.version == 42 && r.half->meta.self == 1 &&
		      r.half->meta.digest == 0xf3c5b38f0a0a465bULL,
	      "meta");
	ks_ring_free(&r);
	ks_shards_free(&s);
	ks_ring_doc_free(&d);

	CHECK(!ks_ring_doc_decode(fixed, strlen(fixed), &d, err, sizeof(err)),
	      "%s", err);
	/* a shard not (or no longer) in the ring: built, owning nothing,
	 * with a self the datapath never matches (issue 23) */
	CHECK(!ks_ring_doc_build(&d, "10.0.0.3:11211", 1, &s, &r, err,
				 sizeof(err)),
	      "self not listed: %s", err);
	CHECK(r.half && r.half->meta.self == KS_SELF_OUTSIDE &&
		      s.self == KS_SELF_OUTSIDE && s.n == 2 &&
		      r.half->meta.digest == 0xf3c5b38f0a0a465bULL,
	      "self outside: meta.self %#x", r.half ? r.half->meta.self : 0);
	if (r.half)
		ks_ring_free(&r);
	ks_shards_free(&s);
	ks_ring_doc_free(&d);
	/* what is not a host:port stays refused */
	CHECK(!ks_ring_doc_decode(fixed, strlen(fixed), &d, err, sizeof(err)),
	      "%s", err);
	CHECK(ks_ring_doc_build(&d, "10.0.0.3", 1, &s, &r, err, sizeof(err)) ==
			      -EINVAL &&
		      strstr(err, "--self"),
	      "self without a port: %s", err);
	ks_ring_doc_free(&d);
	kt_end();
}

static char *edit(const char *from, const char *to);

/* "force" (ring set --force): written only when set, read back, ignored
 * when absent, refused when not a boolean. */
static void t_force(void)
{
	struct ks_shards s;
	struct ks_ring r;
	struct ks_ring_doc d;
	char err[1024], *doc = NULL, *t;
	size_t len;
	int f;

	kt_begin("ring_doc_force_field");
	if (ks_shards_parse_list("--shards", "10.0.0.1:11211,10.0.0.2:11211",
				 &s, err, sizeof(err)) ||
	    ks_ring_build(&r, &s, KS_DIST_KETAMA, 0, 1, err, sizeof(err))) {
		CHECK(0, "%s", err);
		kt_end();
		return;
	}
	for (f = 0; f < 2; f++) {
		CHECK(!ks_ring_doc_encode_force(&r, &s, "t", "now", f, &doc,
						&len),
		      "encode");
		if (!doc)
			continue;
		CHECK(!strstr(doc, "\"force\"") == !f, "force %d in:\n%s", f,
		      doc);
		CHECK(!f || strstr(doc, "\"force\": true"), "true:\n%s", doc);
		CHECK(!ks_ring_doc_decode(doc, len, &d, err, sizeof(err)) &&
			      d.force == f,
		      "decode force %d: %s", f, err);
		ks_ring_doc_free(&d);
		free(doc);
		doc = NULL;
	}
	/* the plain encoder writes what it wrote before */
	CHECK(!ks_ring_doc_encode(&r, &s, "t", "now", &doc, &len) &&
		      !strstr(doc, "force"),
	      "plain encode");
	free(doc);
	ks_ring_free(&r);
	ks_shards_free(&s);

	t = edit("\"schema\":1", "\"schema\":1,\"force\":false");
	CHECK(!ks_ring_doc_decode(t, strlen(t), &d, err, sizeof(err)) &&
		      d.force == 0,
	      "false: %s", err);
	ks_ring_doc_free(&d);
	free(t);
	t = edit("\"schema\":1", "\"schema\":1,\"force\":true");
	CHECK(!ks_ring_doc_decode(t, strlen(t), &d, err, sizeof(err)) &&
		      d.force == 1,
	      "true: %s", err);
	ks_ring_doc_free(&d);
	free(t);
	CHECK(!ks_ring_doc_decode(fixed, strlen(fixed), &d, err, sizeof(err)) &&
		      d.force == 0,
	      "absent");
	ks_ring_doc_free(&d);
	/* a string or a number could be read as set by a careless reader:
	 * refused, so no reader takes it either way */
	t = edit("\"schema\":1", "\"schema\":1,\"force\":\"true\"");
	CHECK(ks_ring_doc_decode(t, strlen(t), &d, err, sizeof(err)) ==
			      -EBADMSG &&
		      strstr(err, "\"force\" is not true or false"),
	      "string: %s", err);
	free(t);
	t = edit("\"schema\":1", "\"schema\":1,\"force\":1");
	CHECK(ks_ring_doc_decode(t, strlen(t), &d, err, sizeof(err)) ==
		      -EBADMSG,
	      "number");
	free(t);
	kt_end();
}

/* fixed with the first occurrence of from replaced by to */
static char *edit(const char *from, const char *to)
{
	const char *p = strstr(fixed, from);
	size_t n = strlen(fixed) - strlen(from) + strlen(to) + 1;
	char *s = malloc(n);

	if (!p) {
		snprintf(s, n, "%s", fixed);
		return s;
	}
	snprintf(s, n, "%.*s%s%s", (int)(p - fixed), fixed, to,
		 p + strlen(from));
	return s;
}

static void t_refused(void)
{
	static const struct {
		const char *from, *to, *why;
	} bad[] = {
		{ "{", "[", "not JSON" },
		{ "\"schema\":1", "\"schema\":3",
		  "schema 3; this agent reads schemas 1 and 2" },
		/* schema 2 is a ring of explicit points (t_ring_plan.c) */
		{ "\"schema\":1", "\"schema\":2",
		  "schema 2 has no \"explicit_points\"" },
		{ "\"schema\":1,", "", "\"schema\" is missing" },
		{ "\"schema\":1", "\"schema\":\"1\"", "not a whole number" },
		{ "keysteer-ring", "keysteer-hot", "kind is 'keysteer-hot'" },
		{ "\"ketama\"", "\"rendezvous\"",
		  "unknown distribution 'rendezvous'" },
		{ "\"md5\"", "\"sha1\"", "unknown key hash 'sha1'" },
		{ "\"md5\"", "\"md5\",\"hash_tag\":\"{\"",
		  "not two characters" },
		{ "\"points\"", "\"vnodes\":10,\"points\"",
		  "vnodes, which only the vnode" },
		{ "\"ketama\"", "\"vnode\"", "\"vnodes\" is missing" },
		{ "\"shards\":[{\"host\":\"10.0.0.1\",\"port\":11211},",
		  "\"shards\":[],\"x\":[", "\"shards\" is empty" },
		{ "\"port\":11211}", "\"port\":0}",
		  "\"port\" 0 is out of range" },
		{ "\"port\":11211}", "\"port\":\"11211\"}",
		  "\"port\" is not a whole number" },
		{ "\"10.0.0.1\"", "\"10.0.0.1 x\"", "host has a space" },
		{ "\"10.0.0.1\"", "\"10.0.0.1:1\"", "host has a space, ':'" },
		{ "\"10.0.0.1\"", "\"10.0.0.2\"", "listed twice" },
		{ "\"10.0.0.1\"", "\"10.0.0.1\\n2\"", "control character" },
		{ "\"10.0.0.1\"", "\"10.0.0.1!\"", "has the character '!'" },
		{ "\"weight\":2", "\"weight\":0",
		  "\"weight\" 0 is out of range" },
		{ "\"port\":11211}", "\"port\":11211,\"name\":\"a b\"}",
		  "name has a space" },
		{ "f3c5b38f0a0a465b", "f3c5b38f0a0a465", "not 16 hex digits" },
		{ "f3c5b38f0a0a465b", "F3C5B38F0A0A465B", "not 16 hex digits" },
		{ ",\"digest\":\"f3c5b38f0a0a465b\"", "", "no \"digest\"" },
		{ "\"points\":316", "\"points\":-1",
		  "\"points\" -1 is out of range" },
		{ "\"schema\":1,", "\"schema\":1,\"schema\":1,", "not JSON" },
	};
	struct ks_ring_doc d;
	char err[1024];
	unsigned i;

	kt_begin("ring_doc_refusals");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *t = edit(bad[i].from, bad[i].to);
		int rc = ks_ring_doc_decode(t, strlen(t), &d, err, sizeof(err));

		CHECK(rc == -EBADMSG && strstr(err, bad[i].why),
		      "case %u: rc %d '%s', want '%s'", i, rc, rc ? err : "",
		      bad[i].why);
		if (!rc)
			ks_ring_doc_free(&d);
		free(t);
	}
	CHECK(ks_ring_doc_decode("", 0, &d, err, sizeof(err)) == -EBADMSG,
	      "empty");
	CHECK(ks_ring_doc_decode("[1]", 3, &d, err, sizeof(err)) == -EBADMSG &&
		      strstr(err, "not a JSON object"),
	      "array: %s", err);
	kt_end();

	/* decodes, but the shards do not build what it says: refused */
	kt_begin("ring_doc_refuses_a_ring_it_does_not_build");
	{
		static const struct {
			const char *from, *to;
		} b[] = {
			{ "f3c5b38f0a0a465b", "f3c5b38f0a0a465c" },
			{ "\"points\":316", "\"points\":320" },
			{ "\"weight\":2", "\"weight\":3" },
			{ "\"ketama\",\"key_hash\":\"md5\"",
			  "\"twemproxy-md5\",\"key_hash\":\"md5\"" },
		};
		struct ks_shards s;
		struct ks_ring r;

		for (i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
			char *t = edit(b[i].from, b[i].to);
			int rc = ks_ring_doc_decode(t, strlen(t), &d, err,
						    sizeof(err));

			CHECK(!rc, "case %u decodes: %s", i, err);
			if (!rc) {
				rc = ks_ring_doc_build(&d, NULL, 1, &s, &r, err,
						       sizeof(err));
				CHECK(rc == -EINVAL &&
					      strstr(err,
						     "but its shards build"),
				      "case %u: %d %s", i, rc, err);
				if (!rc) {
					ks_ring_free(&r);
					ks_shards_free(&s);
				}
				ks_ring_doc_free(&d);
			}
			free(t);
		}
	}
	kt_end();
}

static void t_cluster(void)
{
	char err[300], key[128];

	kt_begin("ring_doc_cluster_names");
	CHECK(!ks_cluster_check("default", err, sizeof(err)), "default");
	CHECK(!ks_cluster_check("web.eu-1_a", err, sizeof(err)), "web.eu-1_a");
	CHECK(ks_cluster_check("", err, sizeof(err)) == -EINVAL, "empty");
	CHECK(ks_cluster_check("a/b", err, sizeof(err)) == -EINVAL &&
		      strstr(err, "'/'"),
	      "slash: %s", err);
	CHECK(ks_cluster_check("..", err, sizeof(err)) == -EINVAL, "..");
	CHECK(ks_cluster_check("a b", err, sizeof(err)) == -EINVAL, "space");
	CHECK(ks_cluster_check(
		      "0123456789012345678901234567890123456789012345678901234567890123",
		      err, sizeof(err)) == 0,
	      "64");
	CHECK(ks_cluster_check(
		      "01234567890123456789012345678901234567890123456789012345678901234",
		      err, sizeof(err)) == -EINVAL,
	      "65");
	CHECK(ks_ring_doc_key("web", key, sizeof(key)) > 0 &&
		      !strcmp(key, "/keysteer/web/ring"),
	      "key %s", key);
	CHECK(ks_ring_doc_key("web", key, 10) == -ENAMETOOLONG, "short buffer");
	kt_end();
}

void test_ring_doc(void)
{
	t_roundtrip();
	t_fixed();
	t_refused();
	t_force();
	t_cluster();
}
