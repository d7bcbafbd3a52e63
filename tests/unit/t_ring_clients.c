// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The rings of more clients (user/core/ring_libmc.c, ring_dalli.c,
 * ring_spy.c) and their hashes (bpf/ks_hash.h one_at_a_time and crc32,
 * user/core/sha1.c): the hashes against published check values and a
 * second, byte-at-a-time implementation here; each ring's rule against a
 * linear scan of its points. The real clients are the compat tier's job
 * (tests/compat/clients_compat.c).
 */
#include <stdlib.h>
#include <string.h>
#include "ktest.h"
#include "core/ring.h"
#include "core/ring_diff.h"
#include "core/sha1.h"
#include "core/shards.h"
#include "unit.h"

static void sha1_vectors(void)
{
	static const struct {
		const char *in, *hex;
	} v[] = {
		/* FIPS 180-2 appendix A and the empty string */
		{ "", "da39a3ee5e6b4b0d3255bfef95601890afd80709" },
		{ "abc", "a9993e364706816aba3e25717850c26c9cd0d89d" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "84983e441c3bd26ebaae4aa1f95129e5e54670f1" },
	};
	char hex[41], *big;
	__u8 d[20];
	size_t i, j;

	kt_begin("sha1_fips_vectors");
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		ks_sha1(v[i].in, strlen(v[i].in), d);
		for (j = 0; j < 20; j++)
			snprintf(hex + 2 * j, 3, "%02x", d[j]);
		CHECK(!strcmp(hex, v[i].hex), "sha1(%s) = %s", v[i].in, hex);
	}
	big = malloc(1000000);
	if (big) { /* a million 'a's: many blocks */
		memset(big, 'a', 1000000);
		ks_sha1(big, 1000000, d);
		for (j = 0; j < 20; j++)
			snprintf(hex + 2 * j, 3, "%02x", d[j]);
		CHECK(!strcmp(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f"),
		      "sha1(a x 1e6) = %s", hex);
		free(big);
	}
	kt_end();
}

/* The definitions, a bit and a byte at a time. */
static __u32 crc32_bits(const __u8 *p, size_t n)
{
	__u32 c = 0xffffffffU;
	size_t i;
	int b;

	for (i = 0; i < n; i++) {
		c ^= p[i];
		for (b = 0; b < 8; b++)
			c = (c >> 1) ^ (0xedb88320U & (0U - (c & 1)));
	}
	return ~c;
}

static __u32 oaat_bytes(const __u8 *p, size_t n)
{
	__u32 h = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		h += (__u32)(int)(signed char)p[i]; /* a signed char's value */
		h += h << 10;
		h ^= h >> 6;
	}
	h += h << 3;
	h ^= h >> 11;
	return h + (h << 15);
}

static void key_hash_vectors(void)
{
	static const struct {
		const char *in;
		__u32 oaat;
	} v[] = {
		/* a second implementation (Python, from libhashkit's
		 * one_at_a_time.cc): "clé" needs the signed char */
		{ "a", 0xca2e9442 },
		{ "foobar", 0xf952fde7 },
		{ "cl\xc3\xa9", 0x754f6019 },
	};
	__u64 buf[KS_KEY_WORDS];
	__u8 raw[KS_KEY_BUF];
	__u32 n, i, bad_crc = 0, bad_oaat = 0, c;

	/* dalli's zlib crc32 is the key-hash dimension's crc32a */
	kt_begin("crc32_check_value");
	memset(buf, 0, sizeof(buf));
	memcpy(buf, "123456789", 9);
	/* the CRC catalogue's check value of CRC-32/ISO-HDLC (zlib's) */
	CHECK_EQ(ks_key_hash_of(KS_KH_CRC32A, buf, 9), 0xcbf43926U);
	kt_end();

	kt_begin("oaat_vectors");
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		memset(buf, 0, sizeof(buf));
		memcpy(buf, v[i].in, strlen(v[i].in));
		c = ks_key_hash_of(KS_KH_ONE_AT_A_TIME, buf,
				   (__u32)strlen(v[i].in));
		CHECK(c == v[i].oaat, "oaat(%s) = %08x", v[i].in, c);
	}
	kt_end();

	/* every length, bytes >= 0x80 in, a stale tail of 0xff past len */
	kt_begin("crc32_and_oaat_every_length_and_stale_tail");
	for (n = 0; n <= KS_MAX_KEY_LEN; n++) {
		for (i = 0; i < n; i++)
			raw[i] = (__u8)(i * 37 + n);
		memset(buf, 0xff, sizeof(buf));
		memcpy(buf, raw, n);
		bad_crc += ks_key_hash_of(KS_KH_CRC32A, buf, n) !=
			   crc32_bits(raw, n);
		bad_oaat += ks_key_hash_of(KS_KH_ONE_AT_A_TIME, buf, n) !=
			    oaat_bytes(raw, n);
		/* the byte-string form ketama-plain hashes point names with */
		bad_oaat += ks_kh_bytes(KS_KH_ONE_AT_A_TIME, raw, n) !=
			    oaat_bytes(raw, n);
	}
	CHECK_EQ(bad_crc, 0);
	CHECK_EQ(bad_oaat, 0);
	kt_end();
}

static int build(struct ks_ring *r, const char *list, enum ks_dist d,
		 struct ks_shards *s)
{
	char err[512];

	if (ks_shards_parse_list("--shards", list, s, err, sizeof(err))) {
		CHECK(0, "%s", err);
		return -1;
	}
	if (ks_ring_build(r, s, d, 0, 1, err, sizeof(err))) {
		CHECK(0, "%s: %s", ks_dist_name(d), err);
		ks_shards_free(s);
		return -1;
	}
	return 0;
}

/* libmemcached's plain ring: 100 points a server, named as the weighted
 * one, valued by one_at_a_time; weights refused. */
static void ketama_plain(void)
{
	struct ks_shards s;
	struct ks_ring r;
	__u32 counts[3], i, found = 0;
	char err[512];

	kt_begin("ketama_plain_points");
	if (!build(&r, "10.0.0.1:11211,10.0.0.2:11211,127.0.0.1:11212",
		   KS_DIST_KETAMA_PLAIN, &s)) {
		ks_ring_point_counts(&r, counts);
		CHECK(counts[0] == 100 && counts[1] == 100 && counts[2] == 100,
		      "points %u %u %u", counts[0], counts[1], counts[2]);
		/* "127.0.0.1:11212-7" is one of shard 2's points */
		for (i = 0; i < r.half->meta.npoints; i++)
			found |= r.half->points[i].value == 0xb5b46118U &&
				 r.half->points[i].shard == 2;
		CHECK(found, "point of 127.0.0.1:11212-7 missing");
		ks_ring_free(&r);
		ks_shards_free(&s);
	}
	CHECK(!ks_shards_parse_list("--shards", "a:1:1,b:1:2", &s, err,
				    sizeof(err)),
	      "%s", err);
	CHECK(ks_ring_build(&r, &s, KS_DIST_KETAMA_PLAIN, 0, 1, err,
			    sizeof(err)) < 0,
	      "weights taken");
	CHECK(strstr(err, "weight 2") != NULL, "message: %s", err);
	ks_shards_free(&s);
	kt_end();
}

/* The raw crc32 of a key (the ring holds complements). */
static __u32 crc_of(const char *key)
{
	return crc32_bits((const __u8 *)key, strlen(key));
}

/* dalli: the point with the greatest value <= crc32(key) owns it, the
 * greatest point when the hash is below every point. */
static void dalli_rule(void)
{
	struct ks_shards s;
	struct ks_ring r;
	__u32 counts[3], i, k, bad = 0;
	char key[32];

	kt_begin("dalli_points_and_predecessor_rule");
	if (build(&r, "10.0.0.1:11211:1,10.0.0.2:11211:1,10.0.0.3:11300:2",
		  KS_DIST_DALLI, &s)) {
		kt_end();
		return;
	}
	/* floor(3 * 160 * w / 4) */
	ks_ring_point_counts(&r, counts);
	CHECK(counts[0] == 120 && counts[1] == 120 && counts[2] == 240,
	      "points %u %u %u", counts[0], counts[1], counts[2]);
	for (k = 0; k < 20000; k++) {
		__u32 h, best = 0, best_v = 0, top = 0, top_v = 0, got;
		int have = 0;

		snprintf(key, sizeof(key), "k%u", k * 7919);
		h = crc_of(key);
		for (i = 0; i < r.half->meta.npoints; i++) {
			__u32 v = ~r.half->points[i].value;

			if (v <= h && (!have || v >= best_v)) {
				best = r.half->points[i].shard;
				best_v = v;
				have = 1;
			}
			if (!i || v > top_v) {
				top = r.half->points[i].shard;
				top_v = v;
			}
		}
		got = ks_ring_lookup(&r, key, strlen(key));
		bad += got != (have ? best : top);
	}
	CHECK_EQ(bad, 0);
	ks_ring_free(&r);
	ks_shards_free(&s);
	kt_end();
}

/* spymemcached: 160 points (no weights) or the weighted rule, and on a
 * value two servers share, the later server's point (TreeMap.put). */
static void spy_rule(void)
{
	char list[100 * 24], err[512];
	struct ks_shards s;
	struct ks_ring r;
	__u32 counts[100], tries, i, found = 0;
	__u64 x = 0x2545f4914f6cdd1dULL;

	kt_begin("spymemcached_points_and_later_server_wins_ties");
	if (!build(&r, "10.0.0.1:11211,10.0.0.2:11211:1,10.0.0.3:11300",
		   KS_DIST_SPY, &s)) {
		ks_ring_point_counts(&r, counts);
		CHECK(counts[0] == 160 && counts[2] == 160, "points %u %u",
		      counts[0], counts[2]);
		ks_ring_free(&r);
		ks_shards_free(&s);
	}
	for (tries = 0; tries < 400 && !found; tries++) {
		size_t off = 0;

		for (i = 0; i < 100; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			off += (size_t)snprintf(list + off, sizeof(list) - off,
						"%s10.%u.%u.%u:11211",
						i ? "," : "", (__u32)(x & 255),
						(__u32)(x >> 8 & 255),
						(__u32)(x >> 16 & 255));
		}
		if (ks_shards_parse_list("--shards", list, &s, err,
					 sizeof(err)))
			continue; /* a host drawn twice */
		if (ks_ring_build(&r, &s, KS_DIST_SPY, 0, 1, err,
				  sizeof(err))) {
			ks_shards_free(&s);
			break;
		}
		for (i = 1; i < r.half->meta.npoints; i++) {
			const struct ks_ring_point *p = r.half->points;

			if (p[i].value != p[i - 1].value ||
			    p[i].shard == p[i - 1].shard)
				continue;
			found = 1;
			CHECK(p[i - 1].shard > p[i].shard,
			      "tie at %08x: shard %u before %u", p[i].value,
			      p[i - 1].shard, p[i].shard);
			CHECK_EQ(ks_ring_owner(r.half, p[i].value),
				 p[i - 1].shard);
		}
		ks_ring_free(&r);
		ks_shards_free(&s);
	}
	CHECK(found, "no tie in %u rings of 100 servers", tries);
	kt_end();
}

/* ring diff's counting: a ring against itself moves nothing; 4 -> 5
 * ketama shards move keys only into the new shard, and every count adds
 * up; modula -> ketama over one list moves keys between old shards. */
static void place_keys(struct ks_ring_diff *d, __u32 n)
{
	char key[32];
	__u32 i;

	for (i = 0; i < n; i++)
		ks_ring_diff_key(
			d, key,
			(size_t)snprintf(key, sizeof(key), "key:%u", i));
}

static void diff_counts(void)
{
	struct ks_shards s4, s5;
	struct ks_ring k4, k5, m4;
	struct ks_ring_diff d;
	char key[32];
	__u64 out = 0, in = 0;
	__u32 i;

	kt_begin("ring_diff_counts");
	if (build(&k4, "a:1,b:1,c:1,d:1", KS_DIST_KETAMA, &s4)) {
		kt_end();
		return;
	}
	if (build(&k5, "a:1,b:1,c:1,d:1,e:1", KS_DIST_KETAMA, &s5) ||
	    ks_ring_build(&m4, &s4, KS_DIST_MODULA, 0, 1, key, sizeof(key))) {
		kt_end();
		return;
	}
	CHECK(!ks_ring_diff_init(&d, &k4, &s4, &k4, &s4), "init");
	place_keys(&d, 5000);
	CHECK(d.moved == 0 && d.keys == 5000, "self moved %llu of %llu",
	      (unsigned long long)d.moved, (unsigned long long)d.keys);
	ks_ring_diff_free(&d);

	CHECK(!ks_ring_diff_init(&d, &k4, &s4, &k5, &s5), "init");
	place_keys(&d, 5000);
	for (i = 0; i < 4; i++) {
		out += d.out[i];
		in += d.in[i];
		CHECK(d.before[i] - d.out[i] == d.after[i],
		      "shard %u: %u - %u != %u", i, d.before[i], d.out[i],
		      d.after[i]);
	}
	CHECK(in == 0 && d.in[4] == d.moved && out == d.moved &&
		      d.after[4] == d.moved && d.moved > 0,
	      "in %llu, new shard %u of %llu moved", (unsigned long long)in,
	      d.in[4], (unsigned long long)d.moved);
	ks_ring_diff_free(&d);

	CHECK(!ks_ring_diff_init(&d, &m4, &s4, &k4, &s4), "init");
	place_keys(&d, 5000);
	/* a new placement of 4 shards keeps about 1 key in 4 */
	CHECK(d.moved > 3000 && d.moved < 4500, "modula -> ketama moved %llu",
	      (unsigned long long)d.moved);
	CHECK(d.pairs[0 * 4 + 1] > 0 && d.same[1] == 1, "pairs");
	ks_ring_diff_free(&d);
	ks_ring_free(&k4);
	ks_ring_free(&k5);
	ks_ring_free(&m4);
	ks_shards_free(&s4);
	ks_shards_free(&s5);
	kt_end();
}

/* The ideal share of a change of lists, from weights alone. */
static double ideal_of(const char *from, const char *to)
{
	struct ks_shards a, b;
	char err[512];
	double v = -1;

	if (ks_shards_parse_list("--from", from, &a, err, sizeof(err))) {
		CHECK(0, "%s", err);
		return v;
	}
	if (!ks_shards_parse_list("--to", to, &b, err, sizeof(err))) {
		v = ks_ring_ideal_moved(&a, &b);
		ks_shards_free(&b);
	} else {
		CHECK(0, "%s", err);
	}
	ks_shards_free(&a);
	return v;
}

/* The fraction of 20000 sample keys that moves from (fl, fd) to (tl, td). */
static double moved_of(const char *fl, enum ks_dist fd, const char *tl,
		       enum ks_dist td)
{
	struct ks_shards sf, st;
	struct ks_ring rf, rt;
	struct ks_ring_diff d;
	double v = -1;

	if (build(&rf, fl, fd, &sf))
		return v;
	if (!build(&rt, tl, td, &st)) {
		if (!ks_ring_diff_init(&d, &rf, &sf, &rt, &st)) {
			place_keys(&d, 20000);
			v = (double)d.moved / (double)d.keys;
			ks_ring_diff_free(&d);
		}
		ks_ring_free(&rt);
		ks_shards_free(&st);
	}
	ks_ring_free(&rf);
	ks_shards_free(&sf);
	return v;
}

#define NEAR(x, y) ((x) > (y)-1e-9 && (x) < (y) + 1e-9)

/* 'ring set's refusal (core/ring_diff.h): the ideal share from weights,
 * the limit 2 x ideal + 1%, and real changes on both sides of it. */
static void move_limit(void)
{
	const char *k4 = "a:1,b:1,c:1,d:1", *k5 = "a:1,b:1,c:1,d:1,e:1";
	double v;

	kt_begin("ring_move_ideal_share");
	CHECK(NEAR(v = ideal_of(k4, k5), 0.2), "add 1 to 4: %f", v);
	CHECK(NEAR(v = ideal_of(k5, k4), 0.2), "remove 1 of 5: %f", v);
	CHECK(NEAR(v = ideal_of(k4, k4), 0.0), "same: %f", v);
	CHECK(NEAR(v = ideal_of(k4, "d:1,c:1,b:1,a:1"), 0.0), "order: %f", v);
	/* the removed shard's keys leave, the new one's arrive */
	CHECK(NEAR(v = ideal_of(k4, "a:1,b:1,c:1,x:1"), 0.5), "replace: %f", v);
	CHECK(NEAR(v = ideal_of("a:1:3,b:1", "a:1:3,c:1"), 0.5),
	      "replace the lighter: %f", v);
	/* the shares' distance is the larger: 1/6 to e, 1/12 more to d */
	CHECK(NEAR(v = ideal_of(k4, "a:1,b:1,c:1,d:1:2,e:1"), 0.25),
	      "add 1 and reweight: %f", v);
	CHECK(NEAR(v = ideal_of("a:1,b:1", "a:1:3,b:1"), 0.25),
	      "reweight 1:1 -> 3:1: %f", v);
	CHECK(NEAR(v = ideal_of(k4, "w:1,x:1,y:1,z:1"), 1.0), "all new: %f", v);
	CHECK(NEAR(v = ideal_of("a:1", "a:1,b:1:3"), 0.75), "1 -> 2: %f", v);
	kt_end();

	kt_begin("ring_move_limit_decision");
	CHECK(NEAR(ks_ring_move_limit(0.2), 0.41), "limit(0.2) %f",
	      ks_ring_move_limit(0.2));
	CHECK(NEAR(ks_ring_move_limit(0.0), 0.01), "limit(0)");
	CHECK(NEAR(ks_ring_move_limit(0.6), 1.0), "limit(0.6) capped");
	CHECK(!ks_ring_move_excessive(0.41, 0.2), "0.41 at 0.2 is the limit");
	CHECK(ks_ring_move_excessive(0.4101, 0.2), "0.4101 at 0.2");
	CHECK(!ks_ring_move_excessive(0.0, 0.0), "nothing at 0");
	CHECK(!ks_ring_move_excessive(0.009, 0.0), "0.9%% at 0");
	CHECK(ks_ring_move_excessive(0.011, 0.0), "1.1%% at 0");
	CHECK(!ks_ring_move_excessive(1.0, 1.0), "all at all");
	CHECK(!ks_ring_move_excessive(1.0, 0.5), "all at half");
	kt_end();

	/* what the limit is for: the ordinary changes pass with room, a
	 * change of placement that the weights do not explain does not */
	kt_begin("ring_move_limit_real_changes");
	v = moved_of(k4, KS_DIST_KETAMA, k5, KS_DIST_KETAMA);
	CHECK(v > 0.1 && !ks_ring_move_excessive(v, 0.2),
	      "ketama add 1 to 4 moved %f", v);
	v = moved_of(k5, KS_DIST_KETAMA, k4, KS_DIST_KETAMA);
	CHECK(v > 0.1 && !ks_ring_move_excessive(v, 0.2),
	      "ketama remove 1 of 5 moved %f", v);
	v = moved_of(k4, KS_DIST_KETAMA, "a:1,b:1,c:1,x:1", KS_DIST_KETAMA);
	CHECK(v > 0.25 && !ks_ring_move_excessive(v, 0.5),
	      "ketama replace 1 moved %f", v);
	v = moved_of(k4, KS_DIST_MODULA, k5, KS_DIST_MODULA);
	CHECK(ks_ring_move_excessive(v, 0.2), "modula add 1 to 4 moved %f", v);
	v = moved_of(k4, KS_DIST_KETAMA, k4, KS_DIST_MODULA);
	CHECK(ks_ring_move_excessive(v, 0.0), "ketama -> modula moved %f", v);
	v = moved_of(k4, KS_DIST_MODULA, "d:1,c:1,b:1,a:1", KS_DIST_MODULA);
	CHECK(ks_ring_move_excessive(v, 0.0), "modula reordered moved %f", v);
	kt_end();
}

void test_ring_clients(void)
{
	diff_counts();
	move_limit();
	sha1_vectors();
	key_hash_vectors();
	ketama_plain();
	dalli_rule();
	spy_rule();
}
