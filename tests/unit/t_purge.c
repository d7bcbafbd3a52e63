// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ownership-loss purge's pure parts (user/core/purge.h): memcached's
 * metadump lines (as crawler.c prints them, keys URL-encoded), the
 * ownership decision against the ring's own lookup, the moved-share gate
 * on real changes (a shard added, removed, a distribution switched) and
 * the pacing arithmetic.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/purge.h"
#include "ktest.h"
#include "unit.h"

static enum ks_md_line md(const char *line, __u8 *key, size_t *klen)
{
	return ks_metadump_line(line, strlen(line), key, klen);
}

static void t_metadump(void)
{
	__u8 key[KS_MC_KEY_MAX];
	char line[1024], enc[KS_MC_KEY_MAX * 3 + 1];
	size_t klen = 0, i;

	kt_begin("purge_metadump_lines");
	/* memcached 1.6.18 crawler_metadump_eval's format */
	CHECK(md("key=user:42 exp=-1 la=1700000000 cas=7 fetch=no cls=1 size=68",
		 key, &klen) == KS_MD_ITEM,
	      "item line");
	CHECK(klen == 7 && !memcmp(key, "user:42", 7), "key %.*s", (int)klen,
	      key);
	/* uriencode: every byte outside [A-Za-z0-9-._~] is %XX */
	CHECK(md("key=n%2Cfoo%3Abar%25 exp=-1 la=1 cas=1 fetch=yes cls=1 size=1",
		 key, &klen) == KS_MD_ITEM &&
		      klen == 10 && !memcmp(key, "n,foo:bar%", 10),
	      "decoded %.*s", (int)klen, key);
	CHECK(md("key=%e2%82%AC exp=-1", key, &klen) == KS_MD_ITEM &&
		      klen == 3 && key[0] == 0xe2 && key[1] == 0x82 &&
		      key[2] == 0xac,
	      "UTF-8 bytes, either case of hex");
	CHECK(md("key=%0 exp=-1", key, &klen) == KS_MD_BAD, "cut escape");
	CHECK(md("key=%zz exp=-1", key, &klen) == KS_MD_BAD, "bad escape");
	/* an escape cut by the line's end, whatever lies past it */
	CHECK(ks_metadump_line("key=ab%41", 8, key, &klen) == KS_MD_BAD,
	      "escape cut at the line's end read past it");
	CHECK(md("key= exp=-1", key, &klen) == KS_MD_BAD, "empty key");
	/* the longest key, every byte escaped: 250 bytes, not one more */
	for (i = 0; i < KS_MC_KEY_MAX; i++)
		memcpy(enc + 3 * i, "%2C", 3);
	enc[3 * KS_MC_KEY_MAX] = '\0';
	snprintf(line, sizeof(line), "key=%s exp=-1", enc);
	CHECK(md(line, key, &klen) == KS_MD_ITEM && klen == KS_MC_KEY_MAX,
	      "250 bytes: %zu", klen);
	snprintf(line, sizeof(line), "key=%sA exp=-1", enc);
	CHECK(md(line, key, &klen) == KS_MD_BAD, "251 bytes refused");
	CHECK(md("END", key, &klen) == KS_MD_END, "END");
	CHECK(md("BUSY currently processing crawler request", key, &klen) ==
		      KS_MD_BUSY,
	      "BUSY");
	CHECK(md("NOTSTARTED no items to crawl", key, &klen) == KS_MD_EMPTY,
	      "NOTSTARTED");
	CHECK(md("ERROR metadump not allowed", key, &klen) == KS_MD_ERROR,
	      "ERROR");
	CHECK(md("CLIENT_ERROR lru crawler disabled", key, &klen) ==
		      KS_MD_ERROR,
	      "CLIENT_ERROR");
	CHECK(md("BADCLASS invalid class id", key, &klen) == KS_MD_ERROR,
	      "BADCLASS");
	CHECK(md("ENDX", key, &klen) == KS_MD_BAD, "ENDX");
	CHECK(md("BUSYX", key, &klen) == KS_MD_BAD, "BUSYX");
	CHECK(md("VALUE x 0 1", key, &klen) == KS_MD_BAD, "out of step");
	kt_end();
}

static int ring_of(const char *list, struct ks_shards *s, struct ks_ring *r,
		   enum ks_dist dist)
{
	char err[512];

	if (ks_shards_parse_list("t", list, s, err, sizeof(err)) ||
	    ks_ring_build(r, s, dist, 0, 1, err, sizeof(err))) {
		CHECK(0, "%s: %s", list, err);
		return -1;
	}
	return 0;
}

#define ABC  "198.18.1.1:11211,198.18.1.2:11211,198.18.1.3:11211"
#define ABCE ABC ",198.18.1.4:11211"

static void t_owned(void)
{
	struct ks_shards s;
	struct ks_ring r;
	char key[32];
	__u32 self, i, owned = 0;

	kt_begin("purge_ownership_is_the_rings_lookup");
	if (ring_of(ABCE, &s, &r, KS_DIST_KETAMA)) {
		kt_end();
		return;
	}
	self = ks_purge_self_index(&s, "198.18.1.2:11211");
	CHECK_EQ(self, 1);
	CHECK(ks_purge_self_index(&s, "198.18.1.9:11211") == KS_NO_SHARD,
	      "not in the ring");
	CHECK(ks_purge_self_index(&s, "198.18.1.2") == KS_NO_SHARD, "no port");
	CHECK(ks_purge_self_index(&s, NULL) == KS_NO_SHARD, "no --self");
	for (i = 0; i < 4000; i++) {
		int n = snprintf(key, sizeof(key), "k%u", i);
		int o = ks_purge_owned(&r, self, key, (size_t)n);

		CHECK(o == (ks_ring_lookup(&r, key, (size_t)n) == self),
		      "key %s", key);
		owned += (__u32)o;
		/* a shard the ring does not name owns nothing */
		CHECK(!ks_purge_owned(&r, KS_NO_SHARD, key, (size_t)n),
		      "owned by no shard: %s", key);
	}
	CHECK(owned > 700 && owned < 1300, "a quarter owned: %u", owned);
	ks_ring_free(&r);
	ks_shards_free(&s);
	kt_end();
}

static void gate(const char *from, enum ks_dist df, const char *to,
		 enum ks_dist dt, const char *self, int forced,
		 struct ks_purge_gate *g)
{
	struct ks_shards sf, st;
	struct ks_ring rf, rt;

	memset(g, 0, sizeof(*g));
	if (ring_of(from, &sf, &rf, df))
		return;
	if (!ring_of(to, &st, &rt, dt)) {
		CHECK(!ks_purge_gate(&rf, &sf, &rt, &st, self, forced, g),
		      "gate");
		ks_ring_free(&rt);
		ks_shards_free(&st);
	}
	ks_ring_free(&rf);
	ks_shards_free(&sf);
}

static void t_gate(void)
{
	struct ks_purge_gate g;

	kt_begin("purge_gate_ideal_share");
	/* a shard added: about a quarter moves, a quarter of A's away */
	gate(ABC, KS_DIST_KETAMA, ABCE, KS_DIST_KETAMA, "198.18.1.1:11211", 0,
	     &g);
	CHECK(g.allowed && g.changed == 1 && g.moved > 0.15 && g.moved < 0.35 &&
		      g.away > 0.03 && g.away < 0.15,
	      "added: %s", g.why);
	/* removed again: this shard loses nothing */
	gate(ABCE, KS_DIST_KETAMA, ABC, KS_DIST_KETAMA, "198.18.1.1:11211", 0,
	     &g);
	CHECK(g.allowed && g.away == 0, "removed: %s", g.why);
	/* this shard removed: it loses all it had */
	gate(ABCE, KS_DIST_KETAMA, ABC, KS_DIST_KETAMA, "198.18.1.4:11211", 0,
	     &g);
	CHECK(g.allowed && g.away > 0.15 && g.away == g.moved,
	      "self removed: %s", g.why);
	/* one shard replaced by another: two changed, one share moves */
	gate(ABC, KS_DIST_KETAMA,
	     "198.18.1.1:11211,198.18.1.2:11211,198.18.1.9:11211",
	     KS_DIST_KETAMA, "198.18.1.1:11211", 0, &g);
	CHECK(g.allowed && g.changed == 2, "replaced: %s", g.why);
	kt_end();

	kt_begin("purge_gate_refuses_a_storm");
	/* ketama to modula over the same shards: most keys move */
	gate(ABCE, KS_DIST_KETAMA, ABCE, KS_DIST_MODULA, "198.18.1.1:11211", 0,
	     &g);
	CHECK(!g.allowed && g.moved > 0.5 && strstr(g.why, "not forced"),
	      "switch: %s", g.why);
	gate(ABCE, KS_DIST_KETAMA, ABCE, KS_DIST_MODULA, "198.18.1.1:11211", 1,
	     &g);
	CHECK(g.allowed && g.forced, "forced: %s", g.why);
	/* a typo: three of four shards renamed */
	gate(ABCE, KS_DIST_KETAMA,
	     "198.18.1.1:11211,198.18.1.7:11211,198.18.1.8:11211,198.18.1.9:11211",
	     KS_DIST_KETAMA, "198.18.1.1:11211", 0, &g);
	CHECK(!g.allowed && g.moved > 0.6 && g.changed == 6, "renamed: %s",
	      g.why);
	/* two shards at once: more than one share moves */
	gate(ABC, KS_DIST_KETAMA, ABCE ",198.18.1.5:11211", KS_DIST_KETAMA,
	     "198.18.1.1:11211", 0, &g);
	CHECK(!g.allowed && g.moved > 0.32, "two added: %s", g.why);
	/* the same ring: nothing moves, allowed, nothing away */
	gate(ABC, KS_DIST_KETAMA, ABC, KS_DIST_KETAMA, "198.18.1.1:11211", 0,
	     &g);
	CHECK(g.allowed && g.moved == 0 && g.away == 0, "same: %s", g.why);
	kt_end();
}

static void t_pace(void)
{
	kt_begin("purge_pace_arithmetic");
	CHECK_EQ(ks_pace_due(1000, 0, 5000), 1000);
	CHECK_EQ(ks_pace_due(0, 5000, 5000), 1000000000ULL);
	CHECK_EQ(ks_pace_due(0, 1, 3), 333333333ULL);
	CHECK_EQ(ks_pace_due(0, 250000, 5000), 50000000000ULL);
	/* no overflow at a billion items */
	CHECK_EQ(ks_pace_due(0, 1000000000ULL, 7), 142857142857142857ULL);
	CHECK_EQ(ks_pace_due(0, 1, 0), ~0ULL);
	/* on time or early: the start stays */
	CHECK_EQ(ks_pace_rebase(0, 5000, 5000, 1000000000ULL), 0);
	CHECK_EQ(
		ks_pace_rebase(0, 5000, 5000, 1000000000ULL + KS_PACE_SLACK_NS),
		0);
	/* 3 s late: moved so the next item is due 100 ms ago, no burst */
	CHECK_EQ(ks_pace_rebase(0, 5000, 5000, 4000000000ULL),
		 3000000000ULL - KS_PACE_SLACK_NS);
	CHECK_EQ(ks_pace_due(ks_pace_rebase(0, 5000, 5000, 4000000000ULL), 5000,
			     5000),
		 4000000000ULL - KS_PACE_SLACK_NS);
	CHECK_EQ(ks_pace_batch(5000), 100);
	CHECK_EQ(ks_pace_batch(1000), 50);
	CHECK_EQ(ks_pace_batch(200), 10);
	CHECK_EQ(ks_pace_batch(10), 1);
	CHECK_EQ(ks_pace_batch(1000000), KS_PURGE_BATCH);
	CHECK(ks_purge_rate(5000, 2000000000ULL) == 2500, "rate");
	CHECK(ks_purge_rate(5, 0) == 0, "rate of no time");
	CHECK(!strcmp(ks_purge_state_name(KS_PURGE_GRACE), "grace") &&
		      !strcmp(ks_purge_state_name(99), "?"),
	      "state names");
	kt_end();
}

static void t_dup(void)
{
	struct ks_shards s, s2;
	struct ks_ring r, r2;
	char key[32];
	int i, same = 1;

	kt_begin("purge_ring_copies_place_alike");
	if (ring_of(ABCE, &s, &r, KS_DIST_PYMEMCACHE)) {
		kt_end();
		return;
	}
	CHECK(!ks_ring_dup(&r2, &r) && !ks_shards_dup(&s2, &s), "dup");
	/* the copy must not lean on the original */
	ks_ring_free(&r);
	ks_shards_free(&s);
	CHECK(ring_of(ABCE, &s, &r, KS_DIST_PYMEMCACHE) == 0, "again");
	for (i = 0; i < 2000; i++) {
		int n = snprintf(key, sizeof(key), "k%d", i);

		same &= ks_ring_lookup(&r, key, (size_t)n) ==
			ks_ring_lookup(&r2, key, (size_t)n);
	}
	CHECK(same, "pymemcache copy places keys alike");
	CHECK(s2.n == 4 && !strcmp(s2.v[3].host, "198.18.1.4"), "shards");
	ks_ring_free(&r);
	ks_ring_free(&r2);
	ks_shards_free(&s2);
	ks_shards_free(&s);
	kt_end();
}

void test_purge(void)
{
	t_metadump();
	t_owned();
	t_gate();
	t_pace();
	t_dup();
}
