// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * 'agent fleet' decided: shards joined with hosts/ entries (share, ratio
 * to the mean, busiest, OLD RING, gone, the newest of two entries for one
 * shard, hosts not in the ring), no ring (one row per host), the merged
 * top keys with and without --hash-only, the hot table's order; the
 * documents decoded (hosts/ and hot/ schema 1 and each refusal), and the
 * local copy a watch keeps (puts, replacements, deletes in key order);
 * the text and JSON printed from a view.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ktest.h"
#include "core/etcd_mirror.h"
#include "core/fleet_doc.h"
#include "core/fleet_view.h"
#include "render/fleet.h"
#include "core/hot_doc.h"
#include "unit.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

static void host(struct ks_fleet_host *h, const char *self, double reads,
		 int64_t ring_rev, int64_t mod_rev)
{
	memset(h, 0, sizeof(*h));
	snprintf(h->self, sizeof(h->self), "%s", self);
	snprintf(h->shard_name, sizeof(h->shard_name), "%s", self);
	h->valid = 1;
	h->have_shard = 1;
	h->reads = reads;
	h->writes = reads / 10;
	h->ring_rev = ring_rev;
	h->mod_rev = mod_rev;
}

static void top(struct ks_fleet_host *h, uint64_t hash, const char *key,
		double reads, double writes)
{
	struct ks_fleet_key *k = &h->top[h->n_top++];

	k->hash = hash;
	snprintf(k->key, sizeof(k->key), "%s", key);
	k->reads = reads;
	k->writes = writes;
}

/* Three hosts a:1, b:1, c:1 without a ring, c:1's document refused. */
static void three_hosts(struct ks_fleet_host h[3], double a, double b, double c)
{
	host(&h[0], "a:1", a, 0, 1);
	host(&h[1], "b:1", b, 0, 2);
	host(&h[2], "c:1", c, 0, 3);
	h[2].valid = 0;
}

static char ring4[4][KS_FLEET_ADDR_MAX] = { "198.18.2.11:11211",
					    "198.18.2.12:11211",
					    "198.18.2.13:11211",
					    "198.18.2.14:11211" };

/* The ring of ring4 at revision 7 and n hosts h, of which the first three
 * are the agents of .11 (600 reads/s), .12 (100, on ring 5) and .13 (200):
 * .14's agent is gone. */
static struct ks_fleet_snapshot fleet4(struct ks_fleet_host *h, size_t n)
{
	struct ks_fleet_snapshot s = { .store_rev = 30, .ring_rev = 7 };

	s.ring_valid = 1;
	s.n_ring = 4;
	s.ring = ring4;
	s.n_hosts = n;
	s.hosts = h;
	host(&h[0], "198.18.2.11:11211", 600, 7, 20);
	host(&h[1], "198.18.2.12:11211", 100, 5, 21);
	host(&h[2], "198.18.2.13:11211", 200, 7, 22);
	return s;
}

static void joined(void)
{
	struct ks_fleet_host h[5];
	struct ks_fleet_snapshot s = fleet4(h, 5);
	struct ks_fleet_view v;

	/* in key order, as etcd lists them, after those three: an entry
	 * outside the ring, one refused */
	host(&h[3], "198.18.9.9:11211", 5000, 7, 23);
	host(&h[4], "bad", 0, 0, 24);
	h[4].valid = 0;
	kt_begin("fleet_view_shards_joined_share_ratio_busiest");
	CHECK_EQ(ks_fleet_view_build(&s, 10, 0, &v), 0);
	CHECK_EQ(v.n_shards, 4);
	CHECK_EQ(v.n_up, 3);
	CHECK_EQ(v.shards[0].host, 0);
	CHECK_EQ(v.shards[2].host, 2);
	CHECK(v.shards[3].host == -1, "shard 3 has host %ld", v.shards[3].host);
	CHECK(NEAR(v.sum, 900) && NEAR(v.mean, 300) && NEAR(v.max, 600),
	      "sum %g mean %g max %g", v.sum, v.mean, v.max);
	CHECK(NEAR(v.shards[0].share, 600.0 / 900) &&
		      NEAR(v.shards[1].share, 100.0 / 900),
	      "shares %g %g", v.shards[0].share, v.shards[1].share);
	CHECK(NEAR(v.shards[0].ratio, 2.0) &&
		      NEAR(v.shards[2].ratio, 200.0 / 300),
	      "ratios %g %g", v.shards[0].ratio, v.shards[2].ratio);
	/* a gone shard has no figures, and counts in neither sum nor mean */
	CHECK(v.shards[3].share == 0 && v.shards[3].ratio == 0, "gone figures");
	CHECK_EQ(v.busiest, 0);
	CHECK_EQ(v.shards[0].busiest, 1);
	CHECK_EQ(v.shards[2].busiest, 0);
	kt_end();

	kt_begin("fleet_view_old_ring_and_leftover_hosts");
	CHECK_EQ(v.shards[1].stale, 1);
	CHECK_EQ(v.shards[1].ring_rev, 5);
	CHECK_EQ(v.shards[0].stale, 0);
	CHECK_EQ(v.host_stale[1], 1);
	CHECK_EQ(v.host_stale[4], 0); /* refused: no ring to be old */
	/* the host outside the ring (busier than all) is listed, not joined */
	CHECK_EQ(v.n_others, 2);
	CHECK_EQ(v.others[0], 3);
	CHECK_EQ(v.others[1], 4);
	CHECK(v.other_shard[0] == -1 && v.other_shard[1] == -1, "names shards");
	ks_fleet_view_free(&v);
	kt_end();

	kt_begin("fleet_view_newest_entry_takes_the_shard");
	/* a restarted agent under another --self naming the same shard */
	host(&h[3], "cache-a:eth1", 900, 7, 29);
	snprintf(h[3].shard_name, sizeof(h[3].shard_name), "%s", ring4[0]);
	CHECK_EQ(ks_fleet_view_build(&s, 10, 0, &v), 0);
	CHECK_EQ(v.shards[0].host, 3);
	CHECK(NEAR(v.shards[0].reads, 900), "reads %g", v.shards[0].reads);
	CHECK_EQ(v.host_shard[0], -1);
	CHECK_EQ(v.n_others, 2);
	CHECK_EQ(v.others[0], 0);
	CHECK_EQ(v.other_shard[0], 0); /* names shard 0, whose row is h[3]'s */
	ks_fleet_view_free(&v);
	kt_end();

	kt_begin("fleet_view_no_load_no_busiest_ties_to_lower_index");
	host(&h[3], "198.18.9.9:11211", 0, 7, 23);
	h[0].reads = h[1].reads = h[2].reads = 0;
	CHECK_EQ(ks_fleet_view_build(&s, 10, 0, &v), 0);
	CHECK(v.busiest == -1, "busiest %ld with no reads", v.busiest);
	CHECK(v.shards[0].share == 0 && v.shards[0].ratio == 0, "no share");
	ks_fleet_view_free(&v);
	h[1].reads = h[2].reads = 50;
	CHECK_EQ(ks_fleet_view_build(&s, 10, 0, &v), 0);
	CHECK_EQ(v.busiest, 1);
	CHECK_EQ(v.shards[2].busiest, 0);
	ks_fleet_view_free(&v);
	kt_end();
}

static void no_ring(void)
{
	struct ks_fleet_host h[3];
	struct ks_fleet_snapshot s = { .n_hosts = 3, .hosts = h };
	struct ks_fleet_view v;

	three_hosts(h, 10, 30, 99);
	kt_begin("fleet_view_no_ring_one_row_per_host");
	CHECK_EQ(ks_fleet_view_build(&s, 10, 0, &v), 0);
	CHECK_EQ(v.n_shards, 0);
	CHECK_EQ(v.n_others, 3);
	CHECK_EQ(v.max_host, 1);
	CHECK(NEAR(v.mean, 20) && NEAR(v.max, 30), "mean %g max %g", v.mean,
	      v.max);
	CHECK_EQ(v.host_stale[0], 0); /* no ring: nothing is older */
	ks_fleet_view_free(&v);
	kt_end();
}

static void merged_top(void)
{
	struct ks_fleet_host h[3];
	struct ks_fleet_snapshot s = { .n_hosts = 3, .hosts = h };
	struct ks_fleet_view v;

	three_hosts(h, 0, 0, 0);
	top(&h[0], 0xa, "", 100, 0);
	top(&h[0], 0xb, "", 10, 1);
	top(&h[1], 0xa, "flash:1", 50, 5);
	top(&h[1], 0xc, "cold", 1, 0);
	top(&h[1], 0xd, "", 60, 0);
	top(&h[2], 0xb, "warm", 99, 0); /* refused host: not counted */

	kt_begin("fleet_view_top_merged_by_hash");
	CHECK_EQ(ks_fleet_view_build(&s, 3, 0, &v), 0);
	CHECK_EQ(v.n_top, 3);
	CHECK_EQ(v.top[0].hash, 0xa);
	CHECK(NEAR(v.top[0].reads, 150) && NEAR(v.top[0].writes, 5), "a %g/%g",
	      v.top[0].reads, v.top[0].writes);
	CHECK_EQ(v.top[0].hosts, 2);
	/* the key text from whichever entry carries it */
	CHECK(!strcmp(v.top[0].key, "flash:1"), "key '%s'", v.top[0].key);
	CHECK_EQ(v.top[1].hash, 0xd);
	CHECK_EQ(v.top[2].hash, 0xb);
	CHECK(NEAR(v.top[2].reads, 10), "b from the valid host only: %g",
	      v.top[2].reads);
	ks_fleet_view_free(&v);
	kt_end();

	kt_begin("fleet_view_top_hash_only_and_zero");
	CHECK_EQ(ks_fleet_view_build(&s, 10, 1, &v), 0);
	CHECK_EQ(v.n_top, 4);
	CHECK(!v.top[0].key[0] && !v.top[3].key[0], "key text kept: '%s'",
	      v.top[0].key);
	ks_fleet_view_free(&v);
	CHECK_EQ(ks_fleet_view_build(&s, 0, 0, &v), 0);
	CHECK_EQ(v.n_top, 0);
	ks_fleet_view_free(&v);
	kt_end();
}

static void hot_order(void)
{
	struct ks_fleet_hot e[3] = {
		{ .hash = 3, .reads = 10 },
		{ .hash = 1, .reads = 5, .writes = 5 },
		{ .hash = 2, .reads = 900 },
	};
	struct ks_fleet_snapshot s = { .n_hot = 3, .hot = e };
	struct ks_fleet_view v;

	kt_begin("fleet_view_hot_busiest_first_then_hash");
	CHECK_EQ(ks_fleet_view_build(&s, 10, 0, &v), 0);
	CHECK_EQ(v.n_hot, 3);
	CHECK(v.hot[0].e == &e[2] && v.hot[1].e == &e[1] && v.hot[2].e == &e[0],
	      "order %llu %llu %llu", (unsigned long long)v.hot[0].e->hash,
	      (unsigned long long)v.hot[1].e->hash,
	      (unsigned long long)v.hot[2].e->hash);
	CHECK(!v.hot[0].from_load && v.hot[0].v[KS_LHF_READS] == 900,
	      "no load document: the entry's rates");
	CHECK_EQ(e[0].hash, 3); /* the snapshot is left as read */
	ks_fleet_view_free(&v);
	kt_end();
}

#define HOT_OK                                                                   \
	"{\"schema\":1,\"hash\":\"0123456789abcdef\",\"key\":\"flash:1\","       \
	"\"owner\":\"198.18.2.11:11211\",\"read_hot\":true,\"write_hot\":false," \
	"\"pinned\":false,\"copies\":3,\"replicas\":[\"198.18.2.101:11211\","    \
	"\"198.18.2.102:11211\"],\"subkeys\":1,\"state\":\"armed\","             \
	"\"write_seq\":17,\"reads_per_s\":5120.0,\"writes_per_s\":0.2}"

static int hot_refused(const char *doc, const char *want)
{
	struct ks_fleet_hot e;
	char why[KS_FLEET_WHY_MAX] = "";
	int rc = ks_fleet_hot_decode("0123456789abcdef", doc, strlen(doc), &e,
				     why, sizeof(why));

	if (rc == 0 || !strstr(why, want)) {
		kt_failf(__FILE__, __LINE__, "%s: rc %d why '%s', want '%s'",
			 doc, rc, why, want);
		return 0;
	}
	return 1;
}

static void hot_doc(void)
{
	struct ks_fleet_hot e;
	char why[KS_FLEET_WHY_MAX];
	static const char *const refusals[][2] = {
		{ "[1]", "not a JSON object" },
		{ "{\"schema\":1,", "not a JSON object" },
		{ "{\"schema\":2,\"hash\":\"0123456789abcdef\",\"owner\":\"o\",\"state\":\"armed\",\"copies\":1}",
		  "schema" },
		{ "{\"schema\":\"1\",\"hash\":\"0123456789abcdef\",\"owner\":\"o\",\"state\":\"armed\",\"copies\":1}",
		  "schema" },
		{ "{\"hash\":\"0123456789abcdef\",\"owner\":\"o\",\"state\":\"armed\",\"copies\":1}",
		  "schema" },
		{ "{\"schema\":1,\"owner\":\"o\",\"state\":\"armed\",\"copies\":1}",
		  "16 lowercase hex" },
		{ "{\"schema\":1,\"hash\":\"0123456789ABCDEF\",\"owner\":\"o\",\"state\":\"armed\",\"copies\":1}",
		  "16 lowercase hex" },
		{ "{\"schema\":1,\"hash\":\"0123456789abcde\",\"owner\":\"o\",\"state\":\"armed\",\"copies\":1}",
		  "16 lowercase hex" },
		{ "{\"schema\":1,\"hash\":\"1123456789abcdef\",\"owner\":\"o\",\"state\":\"armed\",\"copies\":1}",
		  "not the key's hash" },
		{ "{\"schema\":1,\"hash\":\"0123456789abcdef\",\"state\":\"armed\",\"copies\":1}",
		  "owner" },
		{ "{\"schema\":1,\"hash\":\"0123456789abcdef\",\"owner\":7,\"state\":\"armed\",\"copies\":1}",
		  "owner" },
		{ "{\"schema\":1,\"hash\":\"0123456789abcdef\",\"owner\":\"o\",\"copies\":1}",
		  "\"state\" is not" },
		{ "{\"schema\":1,\"hash\":\"0123456789abcdef\",\"owner\":\"o\",\"state\":\"hot\",\"copies\":1}",
		  "\"state\" is not counting" },
		{ "{\"schema\":1,\"hash\":\"0123456789abcdef\",\"owner\":\"o\",\"state\":\"armed\"}",
		  "copies" },
		{ "{\"schema\":1,\"hash\":\"0123456789abcdef\",\"owner\":\"o\",\"state\":\"armed\",\"copies\":\"3\"}",
		  "copies" },
		{ "{\"schema\":1,\"hash\":\"0123456789abcdef\",\"owner\":\"o\",\"state\":\"armed\",\"copies\":-1}",
		  "copies" },
	};
	size_t i, ok = 0;

	kt_begin("fleet_doc_hot_schema_1");
	CHECK_EQ(ks_fleet_hot_decode("0123456789abcdef", HOT_OK, strlen(HOT_OK),
				     &e, why, sizeof(why)),
		 0);
	CHECK_EQ(e.hash, 0x0123456789abcdefULL);
	CHECK(!strcmp(e.key, "flash:1") &&
		      !strcmp(e.owner, "198.18.2.11:11211"),
	      "key '%s' owner '%s'", e.key, e.owner);
	CHECK(e.read_hot && !e.write_hot && !e.pinned, "flags");
	CHECK_EQ(e.copies, 3);
	CHECK_EQ(e.n_reps, 2);
	CHECK(!strcmp(e.replicas[1], "198.18.2.102:11211"), "rep '%s'",
	      e.replicas[1]);
	CHECK_EQ(e.subkeys, 1);
	CHECK_EQ(e.state, KS_HDS_ARMED);
	CHECK_EQ(e.write_seq, 17);
	CHECK(NEAR(e.reads, 5120) && NEAR(e.writes, 0.2), "rates");
	kt_end();

	kt_begin("fleet_doc_hot_minimal_and_states");
	{
		static const char *const st[] = { "counting", "filling",
						  "armed", "dirty" };
		char doc[300];

		for (i = 0; i < 4; i++) {
			snprintf(
				doc, sizeof(doc),
				"{\"schema\":1,\"hash\":\"0123456789abcdef\",\"owner\":\"o:1\",\"state\":\"%s\",\"copies\":1}",
				st[i]);
			CHECK_EQ(ks_fleet_hot_decode("0123456789abcdef", doc,
						     strlen(doc), &e, why,
						     sizeof(why)),
				 0);
			CHECK_EQ(e.state, i);
			CHECK(!strcmp(ks_hot_doc_state_name((unsigned)e.state),
				      st[i]),
			      "name");
			/* the optional fields absent (of the wrong type they
			 * are refused: t_fleet_docs.c) */
			CHECK_EQ(e.n_reps, 0);
			CHECK_EQ(e.subkeys, 1);
			CHECK(!e.key[0], "key '%s'", e.key);
		}
	}
	kt_end();

	kt_begin("fleet_doc_hot_refusals");
	for (i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++)
		ok += (size_t)hot_refused(refusals[i][0], refusals[i][1]);
	CHECK_EQ(ok, sizeof(refusals) / sizeof(refusals[0]));
	kt_end();
}

static void host_doc(void)
{
	static const char doc[] =
		"{\"schema\":1,\"self\":\"198.18.2.11:11211\",\"ring_revision\":4,"
		"\"class_rates\":{\"read\":1,\"write\":2,\"other\":0},"
		"\"shard\":{\"name\":\"198.18.2.11:11211\",\"reads_per_s\":812.5,"
		"\"writes_per_s\":3,\"misdirected_per_s\":0.5},"
		"\"top\":[{\"hash\":\"00000000000000aa\",\"reads_per_s\":9,"
		"\"writes_per_s\":0,\"key\":\"k\"}]}";
	static const char no_shard[] =
		"{\"schema\":1,\"shard\":null,\"class_rates\":{\"read\":7,\"write\":1}}";
	static const char *const bad[][2] = {
		{ "nope", "not a JSON object" },
		{ "{\"schema\":3}", "schema" },
		{ "{\"schema\":2}", "kind is neither" },
		{ "{\"schema\":2,\"kind\":\"keysteer-ring\"}", "kind" },
		{ "{\"schema\":2,\"kind\":\"keysteer-member\",\"shard\":{}}",
		  "shard is neither a host:port" },
		{ "{\"schema\":2,\"kind\":\"keysteer-member\",\"replicas\":1}",
		  "replicas" },
		{ "{\"schema\":2,\"kind\":\"keysteer-load\",\"shard\":\"a:1\"}",
		  "neither an object" },
		{ "{\"schema\":2,\"kind\":\"keysteer-load\",\"ring_revision\":\"4\"}",
		  "ring_revision" },
		{ "{\"schema\":1,\"ring_revision\":\"4\"}", "ring_revision" },
		{ "{\"schema\":1,\"shard\":{\"reads_per_s\":-1}}",
		  "shard has a rate" },
		{ "{\"schema\":1,\"shard\":{\"reads_per_s\":\"9\"}}",
		  "shard has a rate" },
		{ "{\"schema\":1,\"shard\":7}", "neither an object" },
		{ "{\"schema\":1,\"shard\":null,\"top\":{}}",
		  "top is not an array" },
		{ "{\"schema\":1,\"shard\":null,\"top\":[{\"hash\":\"xyz\"}]}",
		  "top[0]" },
		{ "{\"schema\":1,\"shard\":null,\"purge\":1}", "purge" },
		{ "{\"schema\":1,\"shard\":null,\"purge\":\"a long long name\"}",
		  "purge" },
	};
	struct ks_fleet_host h;
	size_t i;

	kt_begin("fleet_doc_host_schema_1");
	ks_fleet_host_decode("198.18.2.11:11211", doc, strlen(doc), &h);
	CHECK(h.valid, "refused: %s", h.why);
	CHECK(h.have_shard && !strcmp(h.shard_name, "198.18.2.11:11211"),
	      "shard '%s'", h.shard_name);
	CHECK(NEAR(h.reads, 812.5) && NEAR(h.writes, 3) && NEAR(h.mis, 0.5),
	      "rates %g %g %g", h.reads, h.writes, h.mis);
	CHECK_EQ(h.ring_rev, 4);
	CHECK_EQ(h.n_top, 1);
	CHECK_EQ(h.top[0].hash, 0xaa);
	CHECK(!strcmp(h.top[0].key, "k"), "key");
	/* an agent from before served_per_s: its reads stand for it */
	CHECK(NEAR(h.served, 812.5), "served without the field: %g", h.served);
	{
		static const char served[] =
			"{\"schema\":1,\"shard\":{\"name\":\"a:1\",\"reads_per_s\":900,"
			"\"served_per_s\":120.5}}";
		static const char bad_served[] =
			"{\"schema\":1,\"shard\":{\"name\":\"a:1\",\"served_per_s\":-3}}";

		ks_fleet_host_decode("a:1", served, strlen(served), &h);
		CHECK(h.valid && NEAR(h.reads, 900) && NEAR(h.served, 120.5),
		      "served %g of %g", h.served, h.reads);
		ks_fleet_host_decode("a:1", bad_served, strlen(bad_served), &h);
		CHECK(!h.valid, "a negative served_per_s taken");
	}
	CHECK(!h.purge[0], "purge '%s' without the field", h.purge);
	{
		static const char purging[] =
			"{\"schema\":1,\"shard\":null,\"purge\":\"grace\"}";

		ks_fleet_host_decode("a:1", purging, strlen(purging), &h);
		CHECK(h.valid && !strcmp(h.purge, "grace"), "purge '%s'",
		      h.purge);
	}
	/* no shard: the host's own class rates */
	ks_fleet_host_decode("x", no_shard, strlen(no_shard), &h);
	CHECK(h.valid && !h.have_shard && NEAR(h.reads, 7), "class rates");
	kt_end();

	kt_begin("fleet_doc_host_refusals");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ks_fleet_host_decode("x", bad[i][0], strlen(bad[i][0]), &h);
		CHECK(!h.valid && strstr(h.why, bad[i][1]),
		      "%s: valid %d why '%s'", bad[i][0], h.valid, h.why);
	}
	kt_end();
}

static struct ks_etcd_kv kv(const char *key, const char *val, int64_t rev)
{
	struct ks_etcd_kv k = { .key = strdup(key), .value = strdup(val) };

	k.key_len = strlen(key);
	k.value_len = strlen(val);
	k.mod_revision = rev;
	return k;
}

static void snapshot(void)
{
	struct ks_etcd_kv kvs[6];
	struct ks_fleet_snapshot s;
	size_t i;

	kvs[0] = kv("/keysteer/web/hosts/a:1", "{\"schema\":1,\"shard\":null}",
		    5);
	kvs[1] = kv("/keysteer/web/hot/0123456789abcdef", HOT_OK, 6);
	kvs[2] = kv("/keysteer/web/hot/ffffffffffffffff", HOT_OK, 7);
	kvs[3] = kv("/keysteer/web/pins", "{}", 8);
	kvs[4] = kv("/keysteer/web/ring", "not a ring", 9);
	kvs[5] = kv("/keysteer/webx/hosts/b:1", "{\"schema\":1}", 10);
	kt_begin("fleet_doc_snapshot_sorts_keys_and_refusals");
	CHECK_EQ(ks_fleet_snapshot_decode(kvs, 6, "/keysteer/web/", NULL, 0,
					  NULL, 11, &s),
		 0);
	CHECK_EQ(s.store_rev, 11);
	CHECK_EQ(s.n_hosts, 1);
	CHECK(!strcmp(s.hosts[0].self, "a:1") && s.hosts[0].mod_rev == 5,
	      "host '%s'", s.hosts[0].self);
	CHECK_EQ(s.n_hot, 1);
	CHECK_EQ(s.hot[0].mod_rev, 6);
	CHECK_EQ(s.n_refused, 1);
	CHECK(!strcmp(s.refused[0].key, "ffffffffffffffff") &&
		      strstr(s.refused[0].why, "not the key's hash"),
	      "refused '%s': %s", s.refused[0].key, s.refused[0].why);
	CHECK_EQ(s.ring_rev, 9);
	CHECK_EQ(s.ring_valid, 0);
	CHECK(s.ring_why[0] != 0, "no reason for the refused ring");
	CHECK_EQ(s.n_ring, 0);
	ks_fleet_snapshot_free(&s);
	kt_end();
	for (i = 0; i < 6; i++)
		ks_etcd_kv_free(&kvs[i]);
}

/* A fleet in a rolling upgrade: an agent before schema 2 (hosts/ only),
 * one of schema 2 that writes hosts/ for old readers too, one whose load
 * document has not come yet, and a load document of another cluster. */
static void snapshot_mixed(void)
{
	struct ks_etcd_kv kvs[5], loads[3];
	struct ks_fleet_snapshot s;
	const struct ks_fleet_host *b;
	struct ks_fleet_view v;
	size_t i;

	kvs[0] = kv("/keysteer/web/hosts/a:1",
		    "{\"schema\":1,\"ring_revision\":9,\"shard\":{\"name\":"
		    "\"a:1\",\"reads_per_s\":100},\"replicas\":[\"r:1\"]}",
		    5);
	kvs[1] = kv("/keysteer/web/hosts/b:1",
		    "{\"schema\":1,\"compat\":true,\"ring_revision\":3,"
		    "\"shard\":{\"name\":\"b:1\",\"reads_per_s\":1}}",
		    6);
	kvs[2] = kv("/keysteer/web/members/b:1",
		    "{\"schema\":2,\"kind\":\"keysteer-member\",\"self\":"
		    "\"b:1\",\"shard\":\"b:1\",\"replicas\":[\"r:2\"]}",
		    7);
	kvs[3] = kv("/keysteer/web/members/c:1",
		    "{\"schema\":2,\"kind\":\"keysteer-member\",\"shard\":"
		    "\"c:1\"}",
		    8);
	kvs[4] = kv("/keysteer/web/ring", "not a ring", 9);
	loads[0] = kv("/keysteer-load/web/a:0",
		      "{\"schema\":2,\"kind\":\"keysteer-load\"}", 10);
	loads[1] = kv(
		"/keysteer-load/web/b:1",
		"{\"schema\":2,\"kind\":\"keysteer-load\",\"ring_revision\":"
		"9,\"purge\":\"grace\",\"shard\":{\"name\":\"b:1\","
		"\"reads_per_s\":300,\"served_per_s\":250},\"top\":[{"
		"\"hash\":\"0000000000000001\",\"reads_per_s\":200}]}",
		11);
	loads[2] = kv("/keysteer-load/web/b:10",
		      "{\"schema\":2,\"kind\":\"keysteer-load\"}", 12);
	kt_begin("fleet_doc_snapshot_mixed_schemas");
	CHECK_EQ(ks_fleet_snapshot_decode(kvs, 5, "/keysteer/web/", loads, 3,
					  "/keysteer-load/web/", 12, &s),
		 0);
	/* the compat entry is not a host of its own */
	CHECK_EQ(s.n_hosts, 3);
	CHECK(!strcmp(s.hosts[0].self, "a:1") && s.hosts[0].valid &&
		      s.hosts[0].kind == KS_FHK_HOSTS && !s.hosts[0].no_load &&
		      s.hosts[0].reads == 100 && s.hosts[0].n_reps == 1,
	      "old agent: '%s' valid %d kind %d reads %f", s.hosts[0].self,
	      s.hosts[0].valid, s.hosts[0].kind, s.hosts[0].reads);
	b = &s.hosts[1];
	CHECK(!strcmp(b->self, "b:1") && b->valid && b->kind == KS_FHK_MEMBER &&
		      !b->no_load && b->reads == 300 && b->served == 250 &&
		      b->ring_rev == 9 && !strcmp(b->purge, "grace") &&
		      b->n_top == 1 && b->mod_rev == 11 && b->n_reps == 1 &&
		      !strcmp(b->replicas[0], "r:2") &&
		      !strcmp(b->shard_name, "b:1"),
	      "member joined with its load: '%s' kind %d reads %f rev %lld "
	      "mod %lld reps %zu",
	      b->self, b->kind, b->reads, (long long)b->ring_rev,
	      (long long)b->mod_rev, b->n_reps);
	CHECK(!strcmp(s.hosts[2].self, "c:1") && s.hosts[2].valid &&
		      s.hosts[2].no_load && s.hosts[2].reads == 0,
	      "member without a load document: no_load %d", s.hosts[2].no_load);
	CHECK_EQ(ks_fleet_view_build(&s, 10, 0, &v), 0);
	CHECK(v.host_stale[0] == 0 && v.host_stale[2] == 0, "stale: %d %d",
	      v.host_stale[0], v.host_stale[2]);
	ks_fleet_view_free(&v);
	ks_fleet_snapshot_free(&s);
	kt_end();
	for (i = 0; i < 5; i++)
		ks_etcd_kv_free(&kvs[i]);
	for (i = 0; i < 3; i++)
		ks_etcd_kv_free(&loads[i]);
}

static void mirror(void)
{
	struct ks_etcd_range r = { .revision = 10, .n = 2 };
	struct ks_etcd_mirror m;
	struct ks_etcd_event ev;

	r.kvs = calloc(2, sizeof(*r.kvs));
	r.kvs[0] = kv("/k/b", "1", 3);
	r.kvs[1] = kv("/k/d", "2", 4);
	kt_begin("etcd_mirror_puts_and_deletes_in_key_order");
	ks_etcd_mirror_load(&m, &r);
	CHECK(r.kvs == NULL && r.n == 0, "range not emptied");
	CHECK_EQ(m.revision, 10);
	ev = (struct ks_etcd_event){ .type = KS_ETCD_EV_PUT,
				     .kv = kv("/k/c", "3", 11) };
	CHECK_EQ(ks_etcd_mirror_apply(&m, &ev), 0);
	CHECK(ev.kv.key == NULL, "event's key not taken");
	ev = (struct ks_etcd_event){ .type = KS_ETCD_EV_PUT,
				     .kv = kv("/k/a", "4", 12) };
	CHECK_EQ(ks_etcd_mirror_apply(&m, &ev), 0);
	ev = (struct ks_etcd_event){ .type = KS_ETCD_EV_PUT,
				     .kv = kv("/k/d", "5", 13) };
	CHECK_EQ(ks_etcd_mirror_apply(&m, &ev), 0);
	CHECK_EQ(m.n, 4);
	CHECK(!strcmp(m.kvs[0].key, "/k/a") && !strcmp(m.kvs[1].key, "/k/b") &&
		      !strcmp(m.kvs[2].key, "/k/c") &&
		      !strcmp(m.kvs[3].key, "/k/d"),
	      "order %s %s %s %s", m.kvs[0].key, m.kvs[1].key, m.kvs[2].key,
	      m.kvs[3].key);
	CHECK(!strcmp(m.kvs[3].value, "5") && m.kvs[3].mod_revision == 13,
	      "replaced '%s'", m.kvs[3].value);
	ev = (struct ks_etcd_event){ .type = KS_ETCD_EV_DELETE,
				     .kv = kv("/k/b", "", 14) };
	CHECK_EQ(ks_etcd_mirror_apply(&m, &ev), 0);
	ks_etcd_kv_free(&ev.kv);
	ev = (struct ks_etcd_event){ .type = KS_ETCD_EV_DELETE,
				     .kv = kv("/k/zz", "", 15) };
	CHECK_EQ(ks_etcd_mirror_apply(&m, &ev), 0); /* absent: nothing */
	ks_etcd_kv_free(&ev.kv);
	CHECK_EQ(m.n, 3);
	CHECK(!strcmp(m.kvs[1].key, "/k/c"), "after delete %s", m.kvs[1].key);
	CHECK_EQ(m.revision, 15);
	ks_etcd_mirror_free(&m);
	kt_end();
}

/* What render/fleet.c prints for a snapshot, into a malloc'ed string. */
static char *rendered(const struct ks_fleet_snapshot *s, int json,
		      int hash_only, const char *watch)
{
	struct ks_fleet_view v;
	struct ks_fleet_out o;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f || ks_fleet_view_build(s, 10, hash_only, &v))
		return NULL;
	o = (struct ks_fleet_out){ .cluster = "web",
				   .s = s,
				   .v = &v,
				   .top_k = 10,
				   .hash_only = hash_only,
				   .watch_state = watch,
				   .watch_up = 1 };
	if (json)
		ks_render_fleet_json(f, &o, watch != NULL);
	else
		ks_render_fleet_text(f, &o);
	fclose(f);
	ks_fleet_view_free(&v);
	return buf;
}

static void render(void)
{
	struct ks_fleet_host h[3];
	struct ks_fleet_hot e = { .hash = 0xab,
				  .copies = 2,
				  .subkeys = 1,
				  .state = KS_HDS_DIRTY,
				  .read_hot = 1,
				  .write_seq = 9,
				  .reads = 40 };
	struct ks_fleet_refused r = { "zz", "unknown state 'x'" };
	struct ks_fleet_snapshot s = fleet4(h, 3);
	char *t;

	s.n_hot = 1;
	s.hot = &e;
	s.n_refused = 1;
	s.refused = &r;
	top(&h[0], 0x2def698b8bbf4a5fULL, "flash\x1b[2J", 500, 0);
	snprintf(e.key, sizeof(e.key), "flash");
	snprintf(e.owner, sizeof(e.owner), "%s", ring4[0]);
	snprintf(h[2].purge, sizeof(h[2].purge), "purging");
	kt_begin("fleet_render_text_rows");
	t = rendered(&s, 0, 0, "watch up at http://x:2379, revision 30");
	CHECK(t != NULL, "no text");
	if (t) {
		CHECK(strstr(t, "\n* 198.18.2.11:11211 ") != NULL,
		      "no busiest row");
		CHECK(strstr(t,
			     "\n* busiest 198.18.2.11:11211: 600.0 reads/s, 66.7%") !=
			      NULL,
		      "summary: %s", t);
		CHECK(strstr(t, "5  up  OLD RING\n") != NULL, "no OLD RING");
		CHECK(strstr(t, "  up  PURGING\n") != NULL, "no PURGING: %s",
		      t);
		CHECK(strstr(t, "\n  198.18.2.14:11211 ") != NULL &&
			      strstr(t, "-  gone\n") != NULL,
		      "no gone row");
		CHECK(strstr(t,
			     "shards without an agent: 198.18.2.14:11211\n") !=
			      NULL,
		      "no gone line");
		/* a terminal escape from etcd comes out escaped */
		CHECK(!strchr(t, '\x1b') && strstr(t, "flash\\x1b[2J"),
		      "escape not escaped: %s", t);
		CHECK(strstr(t, "hot keys: 1 (1 refused)") &&
			      strstr(t, " dirty ") &&
			      strstr(t, "refused hot/zz: unknown state 'x'"),
		      "hot: %s", t);
		CHECK(strstr(t, "\netcd: watch up at http://x:2379") != NULL,
		      "no etcd line");
	}
	free(t);
	t = rendered(&s, 0, 1, NULL);
	CHECK(t && !strstr(t, "flash") && strstr(t, "2def698b8bbf4a5f") &&
		      strstr(t, "00000000000000ab") && !strstr(t, "etcd:"),
	      "hash-only: %s", t ? t : "");
	free(t);
	kt_end();

	kt_begin("fleet_render_json_fields");
	t = rendered(&s, 1, 0, "up");
	CHECK(t != NULL, "no JSON");
	if (t) {
		/* one document, one line, with --watch */
		CHECK(strchr(t, '\n') == t + strlen(t) - 1, "not one line");
		CHECK(strstr(t,
			     "\"schema\":1,\"cluster\":\"web\",\"store_revision\":30,\"ring_revision\":7") !=
			      NULL,
		      "head: %.120s", t);
		CHECK(strstr(t, "\"busiest\":\"198.18.2.11:11211\"") != NULL,
		      "busiest");
		CHECK(strstr(t, "\"served_per_s\":") != NULL, "served_per_s");
		CHECK(strstr(t, "\"purging\":true") &&
			      strstr(t, "\"purging\":false") &&
			      strstr(t, "\"purge\":\"purging\"") &&
			      strstr(t, "\"purge\":null"),
		      "purge fields");
		CHECK(strstr(t,
			     "\"shards_without_agent\":[\"198.18.2.14:11211\"]") !=
			      NULL,
		      "without agent");
		CHECK(strstr(t,
			     "\"agent\":\"gone\",\"host\":null,\"reads_per_s\":null") !=
			      NULL,
		      "gone shard");
		CHECK(strstr(t,
			     "\"hot_refused\":{\"count\":1,\"entries\":[{\"key\":\"zz\"") !=
			      NULL,
		      "refused");
		CHECK(strstr(t, "\"state\":\"dirty\"") &&
			      strstr(t, "\"watch\":{\"up\":true"),
		      "hot state or watch");
	}
	free(t);
	kt_end();

	/* the owner's misses: "-" and null where its load document has
	 * none, the rate and its source where it has */
	kt_begin("fleet_render_owner_misses");
	t = rendered(&s, 0, 0, NULL);
	CHECK(t && strstr(t, "MISSES/S") &&
		      strstr(t, KS_HOT_DOC_OWNER_SOURCE) &&
		      strstr(t, "40.0        0.0           -  "),
	      "text without: %s", t ? t : "");
	free(t);
	t = rendered(&s, 1, 0, "up");
	CHECK(t && strstr(t,
			  "\"owner_hits_per_s\":null,\"owner_misses_per_s\":null,\"owner_source\":null"),
	      "json without: %s", t ? t : "");
	free(t);
	/* the owner (a schema-2 member) lists the key in its load
	 * document, with its replies counted */
	snprintf(e.owner, sizeof(e.owner), "%s", h[0].self);
	h[0].kind = KS_FHK_MEMBER;
	h[0].n_hot = 1;
	h[0].hot[0] = (struct ks_load_hot){ .hash = 0xab,
					    .v = { 40, 0, 300, 12.5 } };
	t = rendered(&s, 0, 0, NULL);
	CHECK(t && strstr(t, "40.0        0.0        12.5  "), "text with: %s",
	      t ? t : "");
	free(t);
	t = rendered(&s, 1, 0, "up");
	CHECK(t && strstr(t,
			  "\"owner_hits_per_s\":300.0,\"owner_misses_per_s\":12.5,\"owner_source\":\"" KS_HOT_DOC_OWNER_SOURCE
			  "\""),
	      "json with: %s", t ? t : "");
	free(t);
	h[0].kind = KS_FHK_HOSTS;
	h[0].n_hot = 0;
	e.owner[0] = '\0';
	kt_end();
}

#define HOT_OF(hash, owner, reads)                                             \
	"{\"schema\":1,\"hash\":\"" hash "\",\"owner\":\"" owner               \
	"\",\"state\":\"armed\",\"copies\":3,\"reads_per_s\":" reads "}"

/* A hot key's rates: its owner's load document's when it lists the key,
 * else the hot/ entry's (an owner before the list, or a key the list has
 * not caught up with); a load document with a bad list is refused. */
static void hot_rates(void)
{
	struct ks_etcd_kv kvs[6], loads[2];
	struct ks_fleet_snapshot s;
	struct ks_fleet_view v;
	char *t;
	size_t i;

	kvs[0] = kv("/keysteer/web/hosts/a:1",
		    "{\"schema\":1,\"shard\":{\"name\":\"a:1\"}}", 5);
	kvs[1] = kv("/keysteer/web/hot/0000000000000001",
		    HOT_OF("0000000000000001", "b:1", "100.0"), 6);
	kvs[2] = kv("/keysteer/web/hot/0000000000000002",
		    HOT_OF("0000000000000002", "a:1", "50.0"), 7);
	kvs[3] = kv("/keysteer/web/hot/0000000000000003",
		    HOT_OF("0000000000000003", "b:1", "30.0"), 8);
	kvs[4] = kv("/keysteer/web/members/b:1",
		    "{\"schema\":2,\"kind\":\"keysteer-member\"}", 9);
	kvs[5] = kv("/keysteer/web/members/c:1",
		    "{\"schema\":2,\"kind\":\"keysteer-member\"}", 10);
	loads[0] = kv("/keysteer-load/web/b:1",
		      "{\"schema\":2,\"kind\":\"keysteer-load\",\"hot\":["
		      "{\"hash\":\"0000000000000001\",\"reads_per_s\":700,"
		      "\"writes_per_s\":2},{\"hash\":\"0000000000000009\","
		      "\"reads_per_s\":1}]}",
		      11);
	loads[1] = kv("/keysteer-load/web/c:1",
		      "{\"schema\":2,\"kind\":\"keysteer-load\",\"hot\":["
		      "{\"hash\":\"1\"}]}",
		      12);
	kt_begin("fleet_view_hot_rates_from_the_owners_load");
	CHECK_EQ(ks_fleet_snapshot_decode(kvs, 6, "/keysteer/web/", loads, 2,
					  "/keysteer-load/web/", 12, &s),
		 0);
	/* c's load document is refused (its member stays, without load) */
	CHECK(s.n_hosts == 3 && s.hosts[1].n_hot == 2 && s.hosts[2].no_load &&
		      !s.hosts[2].n_hot,
	      "hosts %zu, b's list %zu, c's %zu", s.n_hosts,
	      s.n_hosts > 1 ? s.hosts[1].n_hot : 0,
	      s.n_hosts > 2 ? s.hosts[2].n_hot : 0);
	{
		struct ks_fleet_host *h = malloc(sizeof(*h));

		if (h)
			ks_fleet_host_decode("c:1", loads[1].value,
					     loads[1].value_len, h);
		CHECK(h && !h->valid && strstr(h->why, "hot[0] has no hash"),
		      "c's load: '%s'", h ? h->why : "");
		free(h);
	}
	CHECK_EQ(ks_fleet_view_build(&s, 10, 0, &v), 0);
	CHECK_EQ(v.n_hot, 3);
	if (v.n_hot == 3) {
		CHECK(v.hot[0].e->hash == 1 && v.hot[0].from_load &&
			      v.hot[0].v[KS_LHF_READS] == 700 &&
			      v.hot[0].v[KS_LHF_WRITES] == 2,
		      "b's key from b's load document: %llu %d %g",
		      (unsigned long long)v.hot[0].e->hash, v.hot[0].from_load,
		      v.hot[0].v[KS_LHF_READS]);
		CHECK(v.hot[1].e->hash == 2 && !v.hot[1].from_load &&
			      v.hot[1].v[KS_LHF_READS] == 50,
		      "an old agent's key from its entry");
		CHECK(v.hot[2].e->hash == 3 && !v.hot[2].from_load &&
			      v.hot[2].v[KS_LHF_READS] == 30,
		      "a key the list lacks from its entry");
	}
	ks_fleet_view_free(&v);
	t = rendered(&s, 1, 0, "up");
	CHECK(t &&
		      strstr(t,
			     "\"reads_per_s\":700.0,\"writes_per_s\":2.0,"
			     "\"owner_hits_per_s\":null,\"owner_misses_per_s\":null,\"owner_source\":null,\"rates_of\":\"load\"") &&
		      strstr(t,
			     "\"reads_per_s\":50.0,\"writes_per_s\":0.0,"
			     "\"owner_hits_per_s\":null,\"owner_misses_per_s\":null,\"owner_source\":null,\"rates_of\":\"entry\""),
	      "json: %s", t ? t : "(null)");
	free(t);
	t = rendered(&s, 0, 0, NULL);
	CHECK(t && strstr(t, "     700.0        2.0  "), "text: %s",
	      t ? t : "(null)");
	free(t);
	ks_fleet_snapshot_free(&s);
	kt_end();
	for (i = 0; i < 6; i++)
		ks_etcd_kv_free(&kvs[i]);
	for (i = 0; i < 2; i++)
		ks_etcd_kv_free(&loads[i]);
}

/* An entry a client acts on is a hot/ key; a key only counted is listed
 * in its owner's load document with its entry, read back into the hot
 * table as the owner's; hot/ wins when both say a key; an entry in the
 * list that a client would act on is refused (its place is hot/). */
static struct ks_hot_doc *counted(__u64 hash, const char *key, unsigned state)
{
	struct ks_hot_doc *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->hash = hash;
	d->len = (__u16)strlen(key);
	memcpy(d->key, key, d->len);
	d->has_key = 1;
	snprintf(d->owner, sizeof(d->owner), "b:1");
	d->read_hot = 1;
	d->copies = 1;
	d->subkeys = 1;
	d->state = (__u8)state;
	d->reads_ps = 900;
	return d;
}

static void counted_keys(void)
{
	struct ks_hot_doc *e1 = counted(1, "c:1", KS_HDS_COUNTING),
			  *e3 = counted(3, "c:3", KS_HDS_COUNTING),
			  *e4 = counted(4, "c:4", KS_HDS_COUNTING);
	struct ks_host_doc *d = calloc(1, sizeof(*d));
	struct ks_etcd_kv kvs[3], loads[1];
	struct ks_fleet_snapshot s;
	struct ks_fleet_view v;
	char *doc = NULL, *bad;
	size_t i, j;

	kt_begin("fleet_docs_hot_for_clients");
	if (e1) {
		unsigned st;

		for (st = 0; st < KS_HDS_NSTATES; st++) {
			e1->state = (__u8)st;
			CHECK_EQ(ks_hot_doc_for_clients(e1),
				 st != KS_HDS_COUNTING);
		}
		e1->state = KS_HDS_COUNTING;
		e1->write_hot = 1;
		e1->subkeys = 4; /* split: the counters' readers sum them */
		CHECK_EQ(ks_hot_doc_for_clients(e1), 1);
		e1->subkeys = 1;
		CHECK_EQ(ks_hot_doc_for_clients(e1), 0);
		e1->write_hot = 0;
	}
	kt_end();
	kt_begin("fleet_docs_load_lists_counted_entries");
	CHECK(e1 && e3 && e4 && d, "out of memory");
	if (!e1 || !e3 || !e4 || !d)
		goto out;
	snprintf(d->self, sizeof(d->self), "b:1");
	d->nhot = 4;
	for (i = 0; i < 4; i++) {
		d->hot[i].hash = i + 1;
		for (j = 0; j < KS_LHF_N; j++)
			d->hot[i].v[j] = NAN;
		d->hot[i].v[KS_LHF_READS] = 100.0 * (double)(i + 1);
	}
	d->hot[0].entry = e1; /* only counted */
	d->hot[2].entry = e3; /* only counted, but hot/ has it (a race) */
	d->hot[3].entry = e4;
	doc = ks_host_doc_encode_kind(d, KS_HDK_LOAD, NULL);
	CHECK(doc &&
		      strstr(doc,
			     "{\"hash\":\"0000000000000001\",\"reads_per_s\":100.0,"
			     "\"entry\":{\"key\":\"c:1\",\"read_hot\":true}}") &&
		      strstr(doc,
			     "{\"hash\":\"0000000000000002\",\"reads_per_s\":"
			     "200.0}"),
	      "load document: %s", doc ? doc : "(null)");
	if (!doc)
		goto out;
	/* the fourth entry as a writer that put an armed key there: its
	 * two flags (defaults are left out) made a state, padded */
	e4->write_hot = e4->pinned = 1;
	free(doc);
	doc = ks_host_doc_encode_kind(d, KS_HDK_LOAD, NULL);
	bad = doc ? strstr(doc, "\"write_hot\":true,\"pinned\":true") : NULL;
	if (bad) {
		memset(bad, ' ', strlen("\"write_hot\":true,\"pinned\":true"));
		memcpy(bad, "\"state\":\"armed\"",
		       strlen("\"state\":\"armed\""));
	}
	CHECK(bad != NULL, "no pinned entry to turn armed: %s",
	      doc ? doc : "(null)");
	if (!doc)
		goto out;
	kvs[0] = kv("/keysteer/web/hot/0000000000000002",
		    HOT_OF("0000000000000002", "b:1", "50.0"), 5);
	kvs[1] = kv("/keysteer/web/hot/0000000000000003",
		    HOT_OF("0000000000000003", "b:1", "30.0"), 6);
	kvs[2] = kv("/keysteer/web/members/b:1",
		    "{\"schema\":2,\"kind\":\"keysteer-member\"}", 7);
	loads[0] = kv("/keysteer-load/web/b:1", doc, 8);
	CHECK_EQ(ks_fleet_snapshot_decode(kvs, 3, "/keysteer/web/", loads, 1,
					  "/keysteer-load/web/", 8, &s),
		 0);
	CHECK(s.n_hot == 3 && s.hot[2].hash == 1 && s.hot[2].in_load &&
		      !strcmp(s.hot[2].owner, "b:1") &&
		      !strcmp(s.hot[2].key, "c:1") &&
		      s.hot[2].state == KS_HDS_COUNTING &&
		      s.hot[2].copies == 1 && s.hot[2].read_hot &&
		      s.hot[2].mod_rev == 8 && !s.hot[0].in_load &&
		      !s.hot[1].in_load,
	      "hot %zu: the counted key %llx in_load %d owner '%s' key '%s' "
	      "state %d",
	      s.n_hot, s.n_hot > 2 ? (unsigned long long)s.hot[2].hash : 0ULL,
	      s.n_hot > 2 ? s.hot[2].in_load : -1,
	      s.n_hot > 2 ? s.hot[2].owner : "",
	      s.n_hot > 2 ? s.hot[2].key : "",
	      s.n_hot > 2 ? s.hot[2].state : -1);
	CHECK(s.n_refused == 1 &&
		      !strcmp(s.refused[0].key, "0000000000000004") &&
		      strstr(s.refused[0].why, "b:1's load document") &&
		      strstr(s.refused[0].why, "its place is hot/"),
	      "refused %zu: %s", s.n_refused,
	      s.n_refused ? s.refused[0].why : "");
	CHECK_EQ(ks_fleet_view_build(&s, 10, 0, &v), 0);
	/* its figures are the load document's, as for any key it lists */
	CHECK(v.n_hot == 3 && v.hot[0].e->hash == 1 && v.hot[0].from_load &&
		      v.hot[0].v[KS_LHF_READS] == 100,
	      "rows %zu, first %llx from_load %d", v.n_hot,
	      v.n_hot ? (unsigned long long)v.hot[0].e->hash : 0ULL,
	      v.n_hot ? v.hot[0].from_load : -1);
	ks_fleet_view_free(&v);
	ks_fleet_snapshot_free(&s);
	for (i = 0; i < 3; i++)
		ks_etcd_kv_free(&kvs[i]);
	ks_etcd_kv_free(&loads[0]);
out:
	kt_end();
	free(doc);
	free(d);
	free(e1);
	free(e3);
	free(e4);
}

void test_fleet_view(void)
{
	joined();
	no_ring();
	merged_top();
	hot_order();
	hot_doc();
	host_doc();
	snapshot();
	snapshot_mixed();
	mirror();
	render();
	hot_rates();
	counted_keys();
}
