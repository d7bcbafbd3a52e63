// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_key_hash.c - the key hash as a dimension of the ring (bpf/ks_hash.h,
 * user/core/ring.c): twemproxy's twelve hashes on published check values
 * and on bytes >= 0x80 (nutcracker widens them through a signed char),
 * the CRC tables against their polynomials, the hash tag's rule, the key
 * shift, and the options and ring documents that carry them. Where a key
 * goes under each hash is checked against the real nutcracker and
 * gomemcache in the compat tier.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ktest.h"
#include "unit.h"
#include "core/ring.h"
#include "core/ring_doc.h"
#include "core/shards.h"

static __u32 kh(__u32 kind, const char *s)
{
	__u64 buf[KS_KEY_WORDS];

	memset(buf, 0xa5, sizeof(buf)); /* a stale tail must not matter */
	memcpy(buf, s, strlen(s));
	return ks_key_hash_of(kind, buf, (__u32)strlen(s));
}

static void check_values(void)
{
	__u32 i, b, c;

	kt_begin("key_hash_crc_tables_from_polynomials");
	for (i = 0; i < 256; i++) {
		for (c = i, b = 0; b < 8; b++)
			c = c & 1 ? (c >> 1) ^ 0xedb88320U : c >> 1;
		CHECK(ks_crc32_tab[i] == c, "crc32 entry %u", i);
		for (c = i << 8, b = 0; b < 8; b++)
			c = (c & 0x8000 ? (c << 1) ^ 0x1021 : c << 1) & 0xffff;
		CHECK(ks_crc16_tab[i] == c, "crc16 entry %u", i);
	}
	kt_end();

	kt_begin("key_hash_published_check_values");
	/* CRC-32/IEEE, and libmemcached's 15 bits of it */
	CHECK_EQ(kh(KS_KH_CRC32A, "123456789"), 0xcbf43926U);
	CHECK_EQ(kh(KS_KH_CRC32, "123456789"), (0xcbf43926U >> 16) & 0x7fff);
	/* CRC-16/XMODEM in the low bits; nutcracker never cuts the rest */
	CHECK_EQ(kh(KS_KH_CRC16, "123456789") & 0xffff, 0x31c3U);
	CHECK_EQ(kh(KS_KH_FNV1_32, "a"), 0x050c5d7eU);
	CHECK_EQ(kh(KS_KH_FNV1A_32, "a"), 0xe40c292cU);
	/* low halves of the 64-bit FNV-1 and FNV-1a of "a" */
	CHECK_EQ(kh(KS_KH_FNV1_64, "a"), 0x8601b7beU);
	CHECK_EQ(kh(KS_KH_FNV1A_64, "a"), 0x8601ec8cU);
	CHECK_EQ(kh(KS_KH_ONE_AT_A_TIME, "a"), 0xca2e9442U);
	CHECK_EQ(kh(KS_KH_MD5, ""), 0xd98c1dd4U);
	/* lookup3 with nutcracker's initval 13 returns c unmixed for "" */
	CHECK_EQ(kh(KS_KH_JENKINS, ""), 0xdeadbeefU + 13);
	CHECK_EQ(kh(KS_KH_HSIEH, ""), 0);
	kt_end();

	kt_begin("key_hash_bytes_above_0x7f_widen_as_signed_char");
	/* computed by hand in Python with c | 0xffffff00 for c >= 0x80 */
	CHECK_EQ(kh(KS_KH_FNV1A_32, "\xc3\xa9"), 0x3cfa68c1U);
	CHECK_EQ(kh(KS_KH_ONE_AT_A_TIME, "\xc3\xa9"), 0x019148aeU);
	kt_end();
}

static void check_tag(void)
{
	static const struct {
		const char *key, *hashed;
	} v[] = {
		{ "user{42}:cart", "42" }, { "{42}", "42" },
		{ "a{}b{c}", "a{}b{c}" }, /* the first span is empty: all */
		{ "a{b", "a{b" },          { "a}b{c}", "c" },
		{ "{{x}}", "{x" },         { "x{y}{z}", "y" },
		{ "no tag", "no tag" },
	};
	char err[256];
	__u32 i, j;

	kt_begin("hash_tag_span_as_nutcracker");
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct ks_tag t = { .open = '{', .close = '}' };
		__u32 len = (__u32)strlen(v[i].key), start, n;

		for (j = 0; j < len; j++)
			if (ks_tag_step(&t, j, (__u8)v[i].key[j]))
				break;
		n = ks_tag_span(&t, len, &start);
		CHECK(n == strlen(v[i].hashed) &&
			      !memcmp(v[i].key + start, v[i].hashed, n),
		      "%s: hashed %.*s", v[i].key, (int)n, v[i].key + start);
	}
	kt_end();

	kt_begin("key_shift_every_start");
	for (i = 0; i < KS_MAX_KEY_LEN; i++) {
		__u64 buf[KS_KEY_WORDS];
		__u8 want[KS_KEY_BUF];

		for (j = 0; j < KS_KEY_BUF; j++)
			want[j] = (__u8)(j * 7 + 1);
		memcpy(buf, want, sizeof(buf));
		ks_key_shift(buf, i);
		CHECK(!memcmp(buf, want + i, KS_KEY_BUF - i), "start %u", i);
	}
	kt_end();

	kt_begin("hash_tag_option_refusals");
	{
		struct ks_ring_key k = { .hash = -1 };
		__u32 h;

		CHECK(ks_ring_key_tag(&k, "{", err, sizeof(err)) == -EINVAL &&
			      strstr(err, "not two characters"),
		      "%s", err);
		CHECK(ks_ring_key_tag(&k, "{}}", err, sizeof(err)) == -EINVAL,
		      "three");
		CHECK(ks_key_hash_parse("sha1", &h, err, sizeof(err)) ==
				      -EINVAL &&
			      strstr(err, "jenkins"),
		      "%s", err);
		for (h = 0; h < KS_KH_MAX; h++) {
			__u32 back = KS_KH_MAX;

			CHECK(!ks_key_hash_parse(ks_key_hash_name(h), &back,
						 err, sizeof(err)) &&
				      back == h,
			      "name of %u", h);
		}
	}
	kt_end();
}

static void check_rings(void)
{
	struct ks_ring a, b;
	struct ks_shards s;
	struct ks_ring_key k = { .hash = KS_KH_MD5 };
	enum ks_dist d;
	char err[512], *doc;
	size_t len;

	CHECK(!ks_shards_parse_list("--shards", "a:1:3,b:2,c:3", &s, err,
				    sizeof(err)),
	      "%s", err);
	kt_begin("key_hash_presets_keep_their_rings");
	/* twemproxy with md5 is twemproxy-md5, digest and all */
	CHECK(!ks_ring_build_keyed(&a, &s, KS_DIST_TWEMPROXY, &k, 0, 1, err,
				   sizeof(err)) &&
		      !ks_ring_build(&b, &s, KS_DIST_TWEMPROXY_MD5, 0, 1, err,
				     sizeof(err)),
	      "%s", err);
	CHECK(a.half->meta.dist == KS_DIST_TWEMPROXY_MD5 &&
		      a.half->meta.digest == b.half->meta.digest,
	      "%s %016llx %016llx", ks_dist_name(a.half->meta.dist),
	      (unsigned long long)a.half->meta.digest,
	      (unsigned long long)b.half->meta.digest);
	ks_ring_free(&a);
	ks_ring_free(&b);
	/* another hash or a tag is another ring */
	k.hash = KS_KH_CRC32;
	CHECK(!ks_ring_build_keyed(&a, &s, KS_DIST_TWEMPROXY, &k, 0, 1, err,
				   sizeof(err)) &&
		      !ks_ring_build(&b, &s, KS_DIST_TWEMPROXY, 0, 1, err,
				     sizeof(err)),
	      "%s", err);
	CHECK(a.half->meta.digest != b.half->meta.digest, "crc32 digest");
	ks_ring_free(&b);
	memcpy(k.tag, "{}", 3);
	CHECK(!ks_ring_build_keyed(&b, &s, KS_DIST_TWEMPROXY, &k, 0, 1, err,
				   sizeof(err)),
	      "%s", err);
	CHECK(a.half->meta.digest != b.half->meta.digest, "tag digest");
	CHECK_EQ(ks_ring_lookup(&b, "x{user42}y", 10),
		 ks_ring_lookup(&b, "user42", 6));
	ks_ring_free(&a);
	kt_end();

	kt_begin("key_hash_in_the_ring_document");
	CHECK(!ks_ring_doc_encode(&b, &s, NULL, NULL, &doc, &len), "encode");
	CHECK(strstr(doc, "\"key_hash\": \"crc32\"") &&
		      strstr(doc, "\"hash_tag\": \"{}\""),
	      "%s", doc);
	{
		struct ks_ring_doc dd;
		struct ks_shards got;
		struct ks_ring r;

		CHECK(!ks_ring_doc_decode(doc, len, &dd, err, sizeof(err)),
		      "%s", err);
		CHECK(!ks_ring_doc_build(&dd, NULL, 1, &got, &r, err,
					 sizeof(err)),
		      "%s", err);
		CHECK(r.half && r.half->meta.digest == b.half->meta.digest &&
			      r.half->meta.key_hash == KS_KH_CRC32 &&
			      r.half->meta.tagged,
		      "document round trip");
		ks_ring_free(&r);
		ks_shards_free(&got);
		ks_ring_doc_free(&dd);
	}
	free(doc);
	ks_ring_free(&b);
	kt_end();

	kt_begin("distribution_refusals_key_hash");
	CHECK(ks_dist_parse("twemproxy-random", &d, err, sizeof(err)) ==
			      -EINVAL &&
		      strstr(err, "at random"),
	      "%s", err);
	k.tag[0] = '\0';
	CHECK(ks_ring_build_keyed(&a, &s, KS_DIST_PYMEMCACHE, &k, 0, 1, err,
				  sizeof(err)) == -EINVAL &&
		      strstr(err, "murmur3"),
	      "%s", err);
	/* twemproxy-modula: slot hash % (3 + 1 + 1) in nutcracker's order
	 * of names, which is a, b, c here */
	k.hash = KS_KH_CRC32A;
	CHECK(!ks_ring_build_keyed(&a, &s, KS_DIST_TWEMPROXY_MODULA, &k, 0, 1,
				   err, sizeof(err)),
	      "%s", err);
	{
		static const __u32 owner[5] = { 0, 0, 0, 1, 2 };
		const char *key = "123456789";

		CHECK_EQ(ks_ring_lookup(&a, key, 9), owner[0xcbf43926U % 5]);
	}
	ks_ring_free(&a);
	kt_end();
	ks_shards_free(&s);
}

void test_key_hash(void)
{
	check_values();
	check_tag();
	check_rings();
}
