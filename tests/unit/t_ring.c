// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ring's hashes and builder (bpf/ks_hash.h, bpf/ks_ring.h,
 * user/core/ring.c). MD5 against RFC 1321's test suite; twemproxy's fnv1a_64 and
 * ketama against vectors derived from nutcracker's source with a separate
 * reference implementation (the compat tier now checks against the real
 * nutcracker, tests/compat/nutcracker_ref.py); the search
 * against a linear scan; the layouts against what the datapath expects.
 * libmemcached itself is the compat tier's job (tests/compat).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ktest.h"
#include "util/opts.h"
#include "core/ring.h"
#include "core/shards.h"
#include "unit.h"

static void md5_hex(const __u32 st[4], char out[33])
{
	int i;

	for (i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x",
			 (st[i / 4] >> (8 * (i % 4))) & 0xff);
}

/* A key as the datapath holds it; tail bytes past len set to junk. */
static void key_buf(__u64 buf[KS_KEY_WORDS], const void *key, size_t len,
		    __u8 junk)
{
	memset(buf, junk, KS_KEY_BUF);
	memcpy(buf, key, len);
}

static void md5_vectors(void)
{
	static const struct {
		const char *in, *hex;
	} v[] = {
		/* RFC 1321, appendix A.5 */
		{ "", "d41d8cd98f00b204e9800998ecf8427e" },
		{ "a", "0cc175b9c0f1b6a831c399e269772661" },
		{ "abc", "900150983cd24fb0d6963f7d28e17f72" },
		{ "message digest", "f96b697d7cb7938d525a2f31aaf161d0" },
		{ "abcdefghijklmnopqrstuvwxyz",
		  "c3fcd3d76192e4007dfb496cca67e13b" },
		{ "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
		  "d174ab98d277d9f5a5611c2c9f419d9f" },
		{ "1234567890123456789012345678901234567890123456789012345678901234567890"
		  "1234567890",
		  "57edf4a22be3c955ac49da2e2107b67a" },
	};
	__u64 buf[KS_KEY_WORDS];
	__u32 st[4];
	char hex[33];
	size_t i;

	kt_begin("md5_rfc1321_vectors");
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		ks_md5_bytes(v[i].in, strlen(v[i].in), st);
		md5_hex(st, hex);
		CHECK(!strcmp(hex, v[i].hex), "bytes '%s': %s, want %s",
		      v[i].in, hex, v[i].hex);
		key_buf(buf, v[i].in, strlen(v[i].in), 0xa5);
		ks_md5_key(buf, (__u32)strlen(v[i].in), st);
		md5_hex(st, hex);
		CHECK(!strcmp(hex, v[i].hex), "key '%s': %s, want %s", v[i].in,
		      hex, v[i].hex);
	}
	/* the ketama key hash is digest bytes 0..3 little-endian */
	key_buf(buf, "", 0, 0);
	CHECK_EQ(ks_ketama_key_hash(buf, 0), 0xd98c1dd4);
	kt_end();

	kt_begin("md5_key_every_length_and_stale_tail");
	{
		__u8 key[KS_MAX_KEY_LEN];
		__u32 a[4], b[4], len, bad = 0;

		for (len = 0; len < sizeof(key); len++)
			key[len] = (__u8)(len * 37 + 11);
		for (len = 0; len <= KS_MAX_KEY_LEN; len++) {
			/* a longer key's bytes left past len must not count */
			key_buf(buf, key, KS_MAX_KEY_LEN, 0xff);
			ks_md5_key(buf, len, a);
			ks_md5_bytes(key, len, b);
			if (memcmp(a, b, sizeof(a)) && bad++ < 3)
				CHECK(0, "length %u: key and bytes MD5 differ",
				      len);
		}
		CHECK_EQ(bad, 0);
		/* over-long lengths are cut at 250, never read past the buffer */
		key_buf(buf, key, KS_MAX_KEY_LEN, 0);
		ks_md5_key(buf, 1000, a);
		ks_md5_bytes(key, KS_MAX_KEY_LEN, b);
		CHECK(!memcmp(a, b, sizeof(a)), "length 1000 not cut at 250");
	}
	kt_end();

	kt_begin("md5_ketama_point_values");
	/* libmemcached names "host:port-i" (port != 11211) and "host-i";
	 * values from Python's hashlib.md5, digest bytes 4a..4a+3 LE */
	ks_md5_bytes("127.0.0.1:11212-0", 17, st);
	CHECK(st[0] == 0x269dd019 && st[1] == 0xcbdea72d &&
		      st[2] == 0x05ba8950 && st[3] == 0xf8e26127,
	      "127.0.0.1:11212-0: %08x %08x %08x %08x", st[0], st[1], st[2],
	      st[3]);
	ks_md5_bytes("10.0.0.1-39", 11, st);
	CHECK(st[0] == 0x0705e994 && st[1] == 0xcaeeef3d &&
		      st[2] == 0xabbf56c1 && st[3] == 0x397b1db9,
	      "10.0.0.1-39: %08x %08x %08x %08x", st[0], st[1], st[2], st[3]);
	kt_end();
}

static __u32 fnv_tw(const char *s, size_t len)
{
	__u64 buf[KS_KEY_WORDS];

	key_buf(buf, s, len, 0x5a);
	return ks_fnv1a64_tw_key(buf, (__u32)len);
}

static void fnv_vectors(void)
{
	__u64 buf[KS_KEY_WORDS];

	kt_begin("fnv1a_64_twemproxy_vectors");
	/* low 32 bits of FNV-1a 64: "" 0xcbf29ce484222325,
	 * "a" 0xaf63dc4c8601ec8c, "foobar" 0x85944171f73967e8 */
	CHECK_EQ(fnv_tw("", 0), 0x84222325);
	CHECK_EQ(fnv_tw("a", 1), 0x8601ec8c);
	CHECK_EQ(fnv_tw("foobar", 6), 0xf73967e8);
	/* bytes >= 0x80 go in sign-extended, as (uint32_t)(char) on x86-64 */
	CHECK_EQ(fnv_tw("\xff", 1), 0x79fe466e);
	CHECK_EQ(fnv_tw("\xc3\xa9", 2), 0xb4cc3001); /* é */
	CHECK_EQ(fnv_tw("\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87", 8),
		 0xa9ad7881); /* ключ */
	/* twemproxy hashes an empty key to 0, whatever the function */
	key_buf(buf, "", 0, 0);
	CHECK_EQ(ks_ring_key_hash(KS_DIST_TWEMPROXY, buf, 0), 0);
	CHECK_EQ(ks_ring_key_hash(KS_DIST_TWEMPROXY_MD5, buf, 0), 0);
	CHECK_EQ(ks_ring_key_hash(KS_DIST_KETAMA, buf, 0), 0xd98c1dd4);
	kt_end();
}

/* A ring half with the given point values (shard i for point i). */
static struct ks_ring_half *synthetic(const __u32 *values, __u32 n)
{
	struct ks_ring_half *h = calloc(1, sizeof(*h));
	__u32 i;

	for (i = 0; i < n; i++) {
		h->points[i].value = values[i];
		h->points[i].shard = i;
	}
	h->meta.npoints = n;
	h->meta.nshards = n;
	h->meta.dist = KS_DIST_KETAMA;
	ks_ring_index(h);
	return h;
}

static void search_semantics(void)
{
	static const __u32 vals[] = { 10, 20, 20, 30 };
	struct ks_ring_half *h = synthetic(vals, 4);

	kt_begin("ring_search_first_point_at_or_above_with_wrap");
	CHECK_EQ(ks_ring_owner(h, 0), 0);
	CHECK_EQ(ks_ring_owner(h, 10), 0); /* equal: that point */
	CHECK_EQ(ks_ring_owner(h, 11), 1); /* tie: the first of the two */
	CHECK_EQ(ks_ring_owner(h, 20), 1);
	CHECK_EQ(ks_ring_owner(h, 21), 3);
	CHECK_EQ(ks_ring_owner(h, 30), 3);
	CHECK_EQ(ks_ring_owner(h, 31), 0); /* past the last: wrap */
	CHECK_EQ(ks_ring_owner(h, 0xffffffff), 0);
	h->meta.npoints = 1;
	ks_ring_index(h);
	CHECK_EQ(ks_ring_owner(h, 11), 0); /* one point owns all */
	h->meta.nshards = 0;
	CHECK_EQ(ks_ring_owner(h, 11), KS_NO_SHARD); /* no ring loaded */
	h->meta.nshards = 7;
	h->meta.dist = KS_DIST_MODULA;
	CHECK_EQ(ks_ring_owner(h, 23), 23 % 7);
	free(h);
	kt_end();

	kt_begin("ring_search_matches_linear_scan");
	{
		struct ks_ring_half *r = calloc(1, sizeof(*r));
		static const __u32 sizes[] = {
			1, 2, 3, 7, 8, 9, 100, 4096, 65537, KS_RING_MAX_POINTS
		};
		__u64 x = 88172645463325252ULL;
		__u32 s, i, t, bad = 0;

		for (s = 0; s < 2 * sizeof(sizes) / sizeof(sizes[0]); s++) {
			__u32 n = sizes[s / 2], v = 0, gap;

			/* even rounds: gaps of 0..3, many ties, few buckets;
			 * odd rounds: gaps spread over the 32-bit range */
			gap = s & 1 ? (__u32)(0xffffffffULL / n) : 4;
			for (i = 0; i < n; i++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				v += (__u32)(x % gap);
				r->points[i].value = v;
				r->points[i].shard = i;
			}
			r->meta.npoints = n;
			ks_ring_index(r);
			for (t = 0; t < 2000; t++) {
				__u32 hsh, want = 0, got;

				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				hsh = t & 1 ? r->points[x % n].value -
						      (t & 2 ? 0 : 1)
					    : (__u32)x;
				for (i = 0; i < n; i++)
					if (r->points[i].value >= hsh)
						break;
				want = i < n ? i : 0;
				got = ks_ring_search(r, hsh);
				if (got != want && bad++ < 3)
					CHECK(0, "n %u hash %u: got %u want %u",
					      n, hsh, got, want);
			}
		}
		CHECK_EQ(bad, 0);
		free(r);
	}
	kt_end();
}

static struct ks_shards shards_of(const char *list)
{
	struct ks_shards s;
	char err[KS_ERRLEN * 2];

	if (ks_shards_parse_list("--shards", list, &s, err, sizeof(err)))
		printf("# bad test list %s: %s\n", list, err);
	return s;
}

/* Sorted by value, then shard; counts per shard as given. */
static int well_formed(const struct ks_ring *r, char *why, size_t len)
{
	const struct ks_ring_half *h = r->half;
	__u32 i;

	for (i = 0; i < h->meta.npoints; i++) {
		if (h->points[i].shard >= h->meta.nshards) {
			snprintf(why, len, "point %u has shard %u", i,
				 h->points[i].shard);
			return 0;
		}
		if (i && (h->points[i].value < h->points[i - 1].value ||
			  (h->points[i].value == h->points[i - 1].value &&
			   h->points[i].shard < h->points[i - 1].shard))) {
			snprintf(why, len, "points %u and %u out of order",
				 i - 1, i);
			return 0;
		}
	}
	return 1;
}

/* nutcracker's ring for five servers with names, weights and ports, and
 * the owners its algorithm gives (reference implementation, docs/ring.md) */
static void twemproxy_vectors(void)
{
	static const char text[] = "10.0.0.1:11211:1\n"
				   "10.0.0.2:11212:2\n"
				   "cache-c.example.com:11211:3 shard-c\n"
				   "10.0.0.4:22122:1 d\n"
				   "10.0.0.5:11211:5\n";
	static const struct {
		const char *key;
		size_t len;
		__u32 fnv, md5;
	} v[] = {
		{ "a", 1, 1, 2 },
		{ "foo", 3, 4, 4 },
		{ "user:42", 7, 2, 2 },
		{ "cart:7", 6, 2, 2 },
		{ "\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87:1", 10, 4, 4 },
		{ "\xf0\x9f\x94\x91", 4, 4, 2 },
		{ "\xff\xfe", 2, 2, 4 },
		{ "session:abcdef0123456789", 24, 2, 2 },
		{ "k", 1, 1, 4 },
	};
	static const __u32 want_points[5] = { 64, 132, 200, 64, 332 };
	struct ks_shards s;
	struct ks_ring fnv, md5;
	char err[KS_ERRLEN * 2], x250[251];
	__u32 counts[5], i;

	kt_begin("twemproxy_ring_vectors");
	CHECK(!ks_shards_parse_text("t.txt", text, &s, err, sizeof(err)), "%s",
	      err);
	CHECK(!ks_ring_build(&fnv, &s, KS_DIST_TWEMPROXY, 0, 1, err,
			     sizeof(err)),
	      "%s", err);
	CHECK(!ks_ring_build(&md5, &s, KS_DIST_TWEMPROXY_MD5, 0, 1, err,
			     sizeof(err)),
	      "%s", err);
	if (fnv.half && md5.half) {
		CHECK_EQ(fnv.half->meta.npoints, 792);
		ks_ring_point_counts(&fnv, counts);
		for (i = 0; i < 5; i++)
			CHECK(counts[i] == want_points[i],
			      "shard %u: %u points, want %u", i, counts[i],
			      want_points[i]);
		CHECK(well_formed(&fnv, err, sizeof(err)), "%s", err);
		for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			CHECK(ks_ring_lookup(&fnv, v[i].key, v[i].len) ==
				      v[i].fnv,
			      "fnv1a_64 key %u: %u, want %u", i,
			      ks_ring_lookup(&fnv, v[i].key, v[i].len),
			      v[i].fnv);
			CHECK(ks_ring_lookup(&md5, v[i].key, v[i].len) ==
				      v[i].md5,
			      "md5 key %u: %u, want %u", i,
			      ks_ring_lookup(&md5, v[i].key, v[i].len),
			      v[i].md5);
		}
		memset(x250, 'x', 250);
		CHECK_EQ(ks_ring_lookup(&fnv, x250, 250), 1);
		CHECK_EQ(ks_ring_lookup(&md5, x250, 250), 4);
	}
	ks_ring_free(&fnv);
	ks_ring_free(&md5);
	ks_shards_free(&s);
	kt_end();

	kt_begin("twemproxy_refuses_names_it_would_overrun");
	{
		char longname[200];

		memset(longname, 'n', 81);
		snprintf(longname + 81, sizeof(longname) - 81, "%s",
			 ":11211:1\n");
		/* 81-byte name + "-39" = 84 bytes: fits in 85 */
		CHECK(!ks_shards_parse_text("t.txt", longname, &s, err,
					    sizeof(err)),
		      "%s", err);
		CHECK(!ks_ring_build(&fnv, &s, KS_DIST_TWEMPROXY, 0, 1, err,
				     sizeof(err)),
		      "81 bytes: %s", err);
		ks_ring_free(&fnv);
		ks_shards_free(&s);
		memset(longname, 'n', 83);
		snprintf(longname + 83, sizeof(longname) - 83, "%s",
			 ":11211\n");
		CHECK(!ks_shards_parse_text("t.txt", longname, &s, err,
					    sizeof(err)),
		      "%s", err);
		CHECK(ks_ring_build(&fnv, &s, KS_DIST_TWEMPROXY, 0, 1, err,
				    sizeof(err)) == -ENAMETOOLONG,
		      "83 bytes accepted");
		CHECK(strstr(err, "twemproxy") && strchr(err, ';'),
		      "message: %s", err);
		/* libmemcached has room for it */
		CHECK(!ks_ring_build(&fnv, &s, KS_DIST_KETAMA, 0, 1, err,
				     sizeof(err)),
		      "ketama: %s", err);
		ks_ring_free(&fnv);
		ks_shards_free(&s);
	}
	kt_end();
}

static void builder(void)
{
	struct ks_shards s;
	struct ks_ring r, r2;
	char err[KS_ERRLEN * 2];
	__u32 counts[KS_MAX_SHARDS], i;

	kt_begin("ketama_points_per_server");
	s = shards_of(
		"10.0.0.1:11211,10.0.0.2:11211,10.0.0.3:11211,10.0.0.4:11211");
	CHECK(!ks_ring_build(&r, &s, KS_DIST_KETAMA, 0, 7, err, sizeof(err)),
	      "%s", err);
	if (r.half) {
		CHECK_EQ(r.half->meta.npoints, 640);
		CHECK_EQ(r.half->meta.nshards, 4);
		CHECK_EQ(r.half->meta.dist, KS_DIST_KETAMA);
		CHECK_EQ(r.half->meta.version, 7);
		CHECK_EQ(r.half->meta.self, KS_NO_SHARD);
		CHECK(well_formed(&r, err, sizeof(err)), "%s", err);
		ks_ring_point_counts(&r, counts);
		for (i = 0; i < 4; i++)
			CHECK_EQ(counts[i], 160);
	}
	ks_ring_free(&r);
	ks_shards_free(&s);
	/* float arithmetic as libmemcached's: 1/25 * 40 * 25 is 39.99998 in
	 * float, so each of 25 equal servers gets 156 points, not 160 */
	{
		char list[25 * 20] = "";

		for (i = 0; i < 25; i++)
			snprintf(list + strlen(list),
				 sizeof(list) - strlen(list),
				 "%s10.0.0.%u:11211", i ? "," : "", i + 1);
		s = shards_of(list);
		CHECK(!ks_ring_build(&r, &s, KS_DIST_KETAMA, 0, 1, err,
				     sizeof(err)),
		      "%s", err);
		if (r.half)
			CHECK_EQ(r.half->meta.npoints, 25 * 156);
		ks_ring_free(&r);
		ks_shards_free(&s);
	}
	/* weights: 1 and 3 of 4 -> 80 and 240 points */
	s = shards_of("a:1:1,b:2:3");
	CHECK(!ks_ring_build(&r, &s, KS_DIST_KETAMA, 0, 1, err, sizeof(err)),
	      "%s", err);
	if (r.half) {
		ks_ring_point_counts(&r, counts);
		CHECK(counts[0] == 80 && counts[1] == 240,
		      "weights 1:3 -> %u, %u", counts[0], counts[1]);
	}
	ks_ring_free(&r);
	ks_shards_free(&s);
	kt_end();

	kt_begin("vnode_and_modula");
	s = shards_of("10.0.0.1:11211,10.0.0.2:11211,10.0.0.3:11211:2");
	CHECK(!ks_ring_build(&r, &s, KS_DIST_VNODE, 0, 1, err, sizeof(err)),
	      "%s", err);
	if (r.half) {
		__u32 v0 = 0x5fcd6466, v159 = 0x7263353c; /* MD5 of the names */
		int seen0 = 0, seen159 = 0;

		ks_ring_point_counts(&r, counts);
		/* weights 1,1,2 of 4 over 3 shards: 160*3*w/4 */
		CHECK(counts[0] == 120 && counts[1] == 120 && counts[2] == 240,
		      "vnode counts %u %u %u", counts[0], counts[1], counts[2]);
		CHECK(well_formed(&r, err, sizeof(err)), "%s", err);
		for (i = 0; i < r.half->meta.npoints; i++) {
			seen0 |= r.half->points[i].value == v0 &&
				 !r.half->points[i].shard;
			seen159 |= r.half->points[i].value == v159;
		}
		CHECK(seen0, "no point for '10.0.0.1:11211#0'");
		CHECK(!seen159, "shard 0 has 120 points, not 160");
	}
	ks_ring_free(&r);
	CHECK(!ks_ring_build(&r, &s, KS_DIST_VNODE, 10, 1, err, sizeof(err)),
	      "%s", err);
	if (r.half)
		CHECK_EQ(r.half->meta.npoints, 7 + 7 + 15);
	ks_ring_free(&r);
	CHECK(ks_ring_build(&r, &s, KS_DIST_VNODE, 60000, 1, err,
			    sizeof(err)) == -E2BIG,
	      "too many vnodes accepted");
	CHECK(strstr(err, "--vnodes") && strchr(err, ';'), "message: %s", err);
	CHECK(!ks_ring_build(&r, &s, KS_DIST_MODULA, 0, 1, err, sizeof(err)),
	      "%s", err);
	if (r.half) {
		CHECK_EQ(r.half->meta.npoints, 0);
		CHECK_EQ(ks_ring_lookup(&r, "user:1", 6),
			 ks_ring_hash(&r, "user:1", 6) % 3);
	}
	ks_ring_free(&r);
	ks_shards_free(&s);
	kt_end();

	kt_begin("ring_digest_identity");
	s = shards_of("a:1,b:2,c:3");
	CHECK(!ks_ring_build(&r, &s, KS_DIST_KETAMA, 0, 1, err, sizeof(err)),
	      "%s", err);
	CHECK(!ks_ring_build(&r2, &s, KS_DIST_KETAMA, 0, 99, err, sizeof(err)),
	      "%s", err);
	if (r.half && r2.half) {
		CHECK(r.half->meta.digest == r2.half->meta.digest,
		      "same ring, different digest");
		CHECK(r.half->meta.digest != 0, "zero digest");
	}
	ks_ring_free(&r2);
	CHECK(!ks_ring_build(&r2, &s, KS_DIST_TWEMPROXY_MD5, 0, 1, err,
			     sizeof(err)),
	      "%s", err);
	if (r.half && r2.half)
		CHECK(r.half->meta.digest != r2.half->meta.digest,
		      "distribution not in the digest");
	ks_ring_free(&r2);
	ks_shards_free(&s);
	s = shards_of("b:2,a:1,c:3");
	CHECK(!ks_ring_build(&r2, &s, KS_DIST_KETAMA, 0, 1, err, sizeof(err)),
	      "%s", err);
	if (r.half && r2.half)
		CHECK(r.half->meta.digest != r2.half->meta.digest,
		      "shard order not in the digest");
	ks_ring_free(&r);
	ks_ring_free(&r2);
	ks_shards_free(&s);
	kt_end();

	kt_begin("ring_1024_shards_and_self");
	{
		char *list = malloc(1024 * 24);
		size_t off = 0;

		for (i = 0; i < KS_MAX_SHARDS; i++)
			off += (size_t)snprintf(
				list + off, 1024 * 24 - off, "%s10.%u.%u.1:%u",
				i ? "," : "", i / 250, i % 250, 11211 + i % 2);
		s = shards_of(list);
		CHECK_EQ(s.n, KS_MAX_SHARDS);
		CHECK(!ks_shards_set_self(&s, "10.4.23.1:11212", err,
					  sizeof(err)),
		      "%s", err);
		CHECK_EQ(s.self, 1023);
		CHECK(!ks_ring_build(&r, &s, KS_DIST_VNODE, 0, 1, err,
				     sizeof(err)),
		      "%s", err);
		if (r.half) {
			CHECK_EQ(r.half->meta.npoints, KS_RING_MAX_POINTS);
			CHECK_EQ(r.half->meta.self, 1023);
			CHECK(well_formed(&r, err, sizeof(err)), "%s", err);
		}
		ks_ring_free(&r);
		CHECK(!ks_ring_build(&r, &s, KS_DIST_KETAMA, 0, 1, err,
				     sizeof(err)),
		      "%s", err);
		if (r.half)
			CHECK(r.half->meta.npoints <= KS_RING_MAX_POINTS &&
				      r.half->meta.npoints >= 1024 * 156,
			      "%u points", r.half->meta.npoints);
		ks_ring_free(&r);
		snprintf(list + off, 1024 * 24 - off, ",10.9.9.9:1");
		CHECK(ks_shards_parse_list("--shards", list, &s, err,
					   sizeof(err)) == -E2BIG,
		      "1025 shards accepted");
		CHECK(strstr(err, "item 1025") && strstr(err, "1024"),
		      "message: %s", err);
		free(list);
	}
	kt_end();

	kt_begin("dist_names");
	{
		enum ks_dist d;

		for (i = 0; i < KS_DIST_ALL; i++) {
			CHECK(!ks_dist_parse(ks_dist_name(i), &d, err,
					     sizeof(err)) &&
				      d == i,
			      "%s", ks_dist_name(i));
		}
		CHECK(!strcmp(ks_dist_name(KS_DIST_TWEMPROXY), "twemproxy"),
		      "name");
		CHECK(ks_dist_parse("consistent", &d, err, sizeof(err)) ==
			      -EINVAL,
		      "unknown name accepted");
		CHECK(strstr(err, "ketama, twemproxy") && strchr(err, ';'),
		      "message: %s", err);
	}
	kt_end();
}

/* The pymemcache ring of a shard file's text, or a FAIL and 0. */
static int pymemcache_ring(const char *list, struct ks_shards *s,
			   struct ks_ring *r)
{
	char err[512];

	if (ks_shards_parse_text("t", list, s, err, sizeof(err))) {
		kt_failf(__FILE__, __LINE__, "shards: %s", err);
		return 0;
	}
	if (ks_ring_build(r, s, KS_DIST_PYMEMCACHE, 0, 1, err, sizeof(err))) {
		kt_failf(__FILE__, __LINE__, "build: %s", err);
		ks_shards_free(s);
		return 0;
	}
	return 1;
}

/*
 * pymemcache's nodes as the datapath reads them (struct ks_rdv_slot): the
 * murmur3 state of each node's "name-", and ranks in strcmp order of the
 * names (equal names, equal ranks; the shard list's order is not the
 * names'); a ring of more than KS_RDV_MAX_NODES shards has none and is
 * refused for the datapath.
 */
static void pymemcache_slots(void)
{
	static const char *const list =
		"10.0.0.3:11211\n10.0.0.1:11211\n10.0.0.2:9 b\n"
		"10.0.0.1:11212\n10.0.0.9:1 a\n10.0.0.10:11211\n";
	static const __u32 rank[] = { 3, 1, 5, 2, 4, 0 };
	struct ks_shards s;
	struct ks_ring r;
	char err[512], *big;
	size_t n, off = 0;
	__u8 u[80];
	__u32 i, j, h;

	kt_begin("pymemcache_slots_layout");
	if (!pymemcache_ring(list, &s, &r)) {
		kt_end();
		return;
	}
	CHECK_EQ(r.half->meta.npoints, 0);
	for (i = 0; i < s.n; i++) {
		const struct ks_rdv_slot *sl = &r.half->rdv[i];

		/* "10.0.0.10:11211" sorts before "10.0.0.1:11211" ('0' <
		 * ':'); ranks follow strcmp, not the list's order */
		CHECK(sl->rank == rank[i], "slot %u rank %u", i, sl->rank);
		n = (size_t)snprintf((char *)u, sizeof(u), "%s-",
				     r.rdv[i].name);
		CHECK_EQ(sl->len, (__u32)n);
		for (h = 0, j = 0; j + 4 <= n; j += 4)
			h = ks_mm3_mix(h, (__u32)u[j] | (__u32)u[j + 1] << 8 |
						  (__u32)u[j + 2] << 16 |
						  (__u32)u[j + 3] << 24);
		CHECK(sl->h == h, "slot %u state", i);
		for (h = 0; n > j; n--)
			h = h << 8 | u[n - 1];
		CHECK(sl->tail == h, "slot %u tail", i);
	}
	CHECK(!strcmp(r.rdv[1].name, "10.0.0.1:11211") &&
		      !strcmp(r.rdv[2].name, "b"),
	      "names");
	ks_ring_free(&r);
	ks_shards_free(&s);
	/* one shard past the datapath's limit */
	big = malloc(32 * (KS_RDV_MAX_NODES + 1));
	CHECK(big != NULL, "malloc");
	for (i = 0; big && i <= KS_RDV_MAX_NODES; i++)
		off += (size_t)sprintf(big + off, "%s10.1.0.%u:11211",
				       i ? "," : "", i);
	CHECK(!ks_shards_parse_list("--shards", big, &s, err, sizeof(err)),
	      "%s", err);
	CHECK(!ks_ring_build(&r, &s, KS_DIST_PYMEMCACHE, 0, 1, err,
			     sizeof(err)),
	      "%s", err);
	CHECK(ks_ring_in_kernel(&r, err, sizeof(err)) == -E2BIG &&
		      strstr(err, "at most 32 shards"),
	      "%s", err);
	CHECK_EQ(r.half->rdv[0].len, 0);
	ks_ring_free(&r);
	ks_shards_free(&s);
	free(big);
	kt_end();
}

/* pymemcache: murmur3_32 against published vectors, the units a str and a
 * bytes key hash as, and owners the real HashClient gave (pymemcache
 * 3.5.2; tests/compat checks 100,000s more). */
static void pymemcache_vectors(void)
{
	static const struct {
		const char *key;
		__u32 owner;
	} v[] = {
		{ "foo", 0 },
		{ "bar", 4 },
		{ "abcd", 3 },
		{ "\xc3\xa9", 3 }, /* é */
		{ "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x82\xad\xe3\x83\xbc",
		  4 }
	}; /* 日本語キー */
	struct ks_shards s;
	struct ks_ring r, rb;
	char err[256];
	__u8 u[64];
	size_t n, i;

	kt_begin("pymemcache_murmur3_and_owners");
	CHECK_EQ(ks_murmur3_units((const __u8 *)"", 0), 0);
	CHECK_EQ(ks_murmur3_units((const __u8 *)"hello", 5), 0x248bfa47);
	CHECK_EQ(
		ks_murmur3_units(
			(const __u8
				 *)"The quick brown fox jumps over the lazy dog",
			43),
		0x2e4ff723);
	n = ks_pymemcache_units("\xc3\xa9\xff"
				"a",
				4, 0, u, sizeof(u));
	CHECK(n == 3 && u[0] == 0xe9 && u[1] == 0xff && u[2] == 'a',
	      "str units %zu", n);
	n = ks_pymemcache_units("a'\\\x01", 4, 1, u, sizeof(u));
	CHECK(n == 11 && !memcmp(u, "b\"a'\\\\\\x01\"", 11), "bytes units %zu",
	      n);
	CHECK(!ks_shards_parse_list("--shards",
				    "10.0.0.1:11212,10.0.0.2:11213,"
				    "10.0.0.3:11214,10.0.0.4:11215,"
				    "10.0.0.5:11216",
				    &s, err, sizeof(err)),
	      "%s", err);
	CHECK(!ks_ring_build(&r, &s, KS_DIST_PYMEMCACHE, 0, 1, err,
			     sizeof(err)),
	      "%s", err);
	CHECK(!ks_ring_build(&rb, &s, KS_DIST_PYMEMCACHE_BYTES, 0, 1, err,
			     sizeof(err)),
	      "%s", err);
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		CHECK(ks_ring_lookup(&r, v[i].key, strlen(v[i].key)) ==
			      v[i].owner,
		      "key %zu: %u", i,
		      ks_ring_lookup(&r, v[i].key, strlen(v[i].key)));
	/* b'foo' and b"it's" as HashClient placed them */
	CHECK_EQ(ks_ring_lookup(&rb, "foo", 3), 0);
	CHECK_EQ(ks_ring_lookup(&rb, "it's", 4), 2);
	CHECK(ks_dist_in_kernel(KS_DIST_PYMEMCACHE) &&
		      !ks_dist_in_kernel(KS_DIST_PYMEMCACHE_BYTES) &&
		      ks_dist_in_kernel(KS_DIST_MODULA),
	      "in kernel");
	CHECK_EQ(ks_ring_in_kernel(&r, err, sizeof(err)), 0);
	CHECK(ks_ring_in_kernel(&rb, err, sizeof(err)) == -EOPNOTSUPP &&
		      strstr(err, "user space only"),
	      "bytes: %s", err);
	/* the datapath leaves a non-ASCII str key of >= 2 shards unplaced */
	CHECK(ks_ring_kernel_places(&r, "foo", 3) &&
		      !ks_ring_kernel_places(&r, "\xc3\xa9", 2) &&
		      ks_ring_kernel_places(&rb, "\xc3\xa9", 2),
	      "places");
	ks_ring_free(&r);
	ks_ring_free(&rb);
	ks_shards_free(&s);
	CHECK(!ks_shards_parse_list("--shards", "a:1:2,b:1", &s, err,
				    sizeof(err)),
	      "%s", err);
	CHECK(ks_ring_build(&r, &s, KS_DIST_PYMEMCACHE, 0, 1, err,
			    sizeof(err)) == -EINVAL &&
		      strstr(err, "no weights"),
	      "weights: %s", err);
	ks_shards_free(&s);
	kt_end();
}

/*
 * pymemcache's RendezvousHash keeps, of two nodes with the same score,
 * the greater name (max(str(node), str(winner))). Two nodes whose
 * "name-" murmur3 states are equal score every key the same: the names
 * below are such a pair (found by inverting murmur3's block mix; both
 * 8 bytes, so "name-key" is the same length for both), and every key
 * must go to the greater, "nodeaaaa" ('o' > 'm').
 */
static void pymemcache_ties(void)
{
	static const char *const list = "10.0.0.1:11211 nmzrkO_2\n"
					"10.0.0.2:11211 nodeaaaa\n";
	struct ks_shards s;
	struct ks_ring r;
	char a[32], b[32];
	__u32 i, ties = 0, wrong = 0;

	kt_begin("pymemcache_tie_goes_to_the_greater_name");
	if (!pymemcache_ring(list, &s, &r)) {
		kt_end();
		return;
	}
	for (i = 0; i < 200; i++) {
		int la = snprintf(a, sizeof(a), "nmzrkO_2-k%u", i);
		int lb = snprintf(b, sizeof(b), "nodeaaaa-k%u", i);

		/* the fixture: the two scores are equal */
		ties += ks_murmur3_units((const __u8 *)a, (size_t)la) ==
			ks_murmur3_units((const __u8 *)b, (size_t)lb);
		wrong += ks_ring_lookup(&r, a + 9, (size_t)la - 9) != 1;
	}
	CHECK_EQ(ties, 200);
	CHECK(!wrong, "%u of 200 tied keys not on the greater name", wrong);
	ks_ring_free(&r);
	ks_shards_free(&s);
	kt_end();
}

/*
 * twemproxy's modula: one slot per unit of weight, the servers in
 * nutcracker's order (by name, the shorter first, then bytewise: 10.0.0.1
 * and 10.0.0.9 before 10.0.0.10), a key in slot hash % (sum of weights).
 * Weights 1, 2, 3 for 10.0.0.10, 10.0.0.9, 10.0.0.1: slots 0-2 are
 * 10.0.0.1's (shard 2), 3-4 10.0.0.9's (1), 5 10.0.0.10's (0).
 */
static void twemproxy_modula_slots(void)
{
	static const __u32 owner[6] = { 2, 2, 2, 1, 1, 0 };
	struct ks_shards s;
	struct ks_ring r;
	char err[256], key[32];
	__u32 i, hit = 0, wrong = 0;

	kt_begin("twemproxy_modula_slots_by_weight_in_nutcracker_order");
	s = shards_of("10.0.0.10:11211:1,10.0.0.9:11211:2,10.0.0.1:11211:3");
	if (ks_ring_build(&r, &s, KS_DIST_TWEMPROXY_MODULA, 0, 1, err,
			  sizeof(err))) {
		kt_failf(__FILE__, __LINE__, "build: %s", err);
		ks_shards_free(&s);
		kt_end();
		return;
	}
	for (i = 0; i < 600; i++) {
		int n = snprintf(key, sizeof(key), "%u:user", i * 7919);
		__u32 slot = ks_ring_hash(&r, key, (size_t)n) % 6;

		hit |= 1u << slot;
		wrong += ks_ring_lookup(&r, key, (size_t)n) != owner[slot];
	}
	CHECK_EQ(hit, 0x3f); /* every slot tried */
	CHECK(!wrong, "%u of 600 keys not on their slot's server", wrong);
	ks_ring_free(&r);
	ks_shards_free(&s);
	kt_end();
}

void test_ring(void)
{
	md5_vectors();
	fnv_vectors();
	search_semantics();
	twemproxy_vectors();
	pymemcache_vectors();
	pymemcache_slots();
	pymemcache_ties();
	twemproxy_modula_slots();
	builder();
}
