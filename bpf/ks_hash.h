/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_hash.h - the ring's key hashes, one definition for the datapath and
 * the agent: MD5 (RFC 1321) as libmemcached's and twemproxy's ketama use
 * it, and twemproxy's fnv1a_64.
 *
 * Written for the BPF verifier as much as for gcc: every loop has a
 * compile-time bound, there is no libc, no variable-length copy and no
 * function pointer. The key functions read a key the way the datapath
 * holds one (struct ks_scratch.key): KS_KEY_BUF bytes, 8-byte aligned,
 * len <= KS_MAX_KEY_LEN. Bytes past len are masked off here, so a buffer
 * with a stale tail from a longer key still hashes right.
 *
 * Include order as for keysteer.h (vmlinux.h first in BPF code).
 */
#ifndef KS_HASH_H
#define KS_HASH_H

#include "keysteer.h"

/* ---- MD5, RFC 1321 ---- */

/* A 250-byte key plus 0x80 and the 8-byte bit length needs 5 blocks. */
#define KS_MD5_MAX_BLOCKS ((KS_MAX_KEY_LEN + 8) / 64 + 1)

/*
 * Hides a value from the optimiser so that a bound check on it stays in
 * the object: clang otherwise drops a loop bound it can prove redundant
 * from an earlier clamp, and the verifier, which cannot follow that proof,
 * then walks the loop without an end.
 */
#define KS_OPAQUE(v) __asm__ volatile("" : "+r"(v))

#define KS_MD5_ROTL(x, s) (((x) << (s)) | ((x) >> (32 - (s))))
#define KS_MD5_F(x, y, z) (((x) & (y)) | (~(x) & (z)))
#define KS_MD5_G(x, y, z) (((x) & (z)) | ((y) & ~(z)))
#define KS_MD5_H(x, y, z) ((x) ^ (y) ^ (z))
#define KS_MD5_I(x, y, z) ((y) ^ ((x) | ~(z)))
/* One of the 64 steps: a = b + ((a + fn(b,c,d) + word + k) <<< s). */
#define KS_MD5_STEP(fn, a, b, c, d, w, s, k)                                   \
	do {                                                                   \
		(a) += fn((b), (c), (d)) + (w) + (__u32)(k);                   \
		(a) = KS_MD5_ROTL((a), (s));                                   \
		(a) += (b);                                                    \
	} while (0)

static inline void ks_md5_init(__u32 st[4])
{
	st[0] = 0x67452301;
	st[1] = 0xefcdab89;
	st[2] = 0x98badcfe;
	st[3] = 0x10325476;
}

/*
 * One 64-byte block, given as its 16 little-endian words. The steps are
 * spelled out: a loop over a table would put the table in .rodata and
 * make the verifier bound every index into it.
 */
static inline void ks_md5_block(__u32 st[4], const __u32 x[16])
{
	__u32 a = st[0], b = st[1], c = st[2], d = st[3];

	/* round 1: word i, shifts 7 12 17 22 */
	KS_MD5_STEP(KS_MD5_F, a, b, c, d, x[0], 7, 0xd76aa478);
	KS_MD5_STEP(KS_MD5_F, d, a, b, c, x[1], 12, 0xe8c7b756);
	KS_MD5_STEP(KS_MD5_F, c, d, a, b, x[2], 17, 0x242070db);
	KS_MD5_STEP(KS_MD5_F, b, c, d, a, x[3], 22, 0xc1bdceee);
	KS_MD5_STEP(KS_MD5_F, a, b, c, d, x[4], 7, 0xf57c0faf);
	KS_MD5_STEP(KS_MD5_F, d, a, b, c, x[5], 12, 0x4787c62a);
	KS_MD5_STEP(KS_MD5_F, c, d, a, b, x[6], 17, 0xa8304613);
	KS_MD5_STEP(KS_MD5_F, b, c, d, a, x[7], 22, 0xfd469501);
	KS_MD5_STEP(KS_MD5_F, a, b, c, d, x[8], 7, 0x698098d8);
	KS_MD5_STEP(KS_MD5_F, d, a, b, c, x[9], 12, 0x8b44f7af);
	KS_MD5_STEP(KS_MD5_F, c, d, a, b, x[10], 17, 0xffff5bb1);
	KS_MD5_STEP(KS_MD5_F, b, c, d, a, x[11], 22, 0x895cd7be);
	KS_MD5_STEP(KS_MD5_F, a, b, c, d, x[12], 7, 0x6b901122);
	KS_MD5_STEP(KS_MD5_F, d, a, b, c, x[13], 12, 0xfd987193);
	KS_MD5_STEP(KS_MD5_F, c, d, a, b, x[14], 17, 0xa679438e);
	KS_MD5_STEP(KS_MD5_F, b, c, d, a, x[15], 22, 0x49b40821);

	/* round 2: word (5i + 1) mod 16, shifts 5 9 14 20 */
	KS_MD5_STEP(KS_MD5_G, a, b, c, d, x[1], 5, 0xf61e2562);
	KS_MD5_STEP(KS_MD5_G, d, a, b, c, x[6], 9, 0xc040b340);
	KS_MD5_STEP(KS_MD5_G, c, d, a, b, x[11], 14, 0x265e5a51);
	KS_MD5_STEP(KS_MD5_G, b, c, d, a, x[0], 20, 0xe9b6c7aa);
	KS_MD5_STEP(KS_MD5_G, a, b, c, d, x[5], 5, 0xd62f105d);
	KS_MD5_STEP(KS_MD5_G, d, a, b, c, x[10], 9, 0x02441453);
	KS_MD5_STEP(KS_MD5_G, c, d, a, b, x[15], 14, 0xd8a1e681);
	KS_MD5_STEP(KS_MD5_G, b, c, d, a, x[4], 20, 0xe7d3fbc8);
	KS_MD5_STEP(KS_MD5_G, a, b, c, d, x[9], 5, 0x21e1cde6);
	KS_MD5_STEP(KS_MD5_G, d, a, b, c, x[14], 9, 0xc33707d6);
	KS_MD5_STEP(KS_MD5_G, c, d, a, b, x[3], 14, 0xf4d50d87);
	KS_MD5_STEP(KS_MD5_G, b, c, d, a, x[8], 20, 0x455a14ed);
	KS_MD5_STEP(KS_MD5_G, a, b, c, d, x[13], 5, 0xa9e3e905);
	KS_MD5_STEP(KS_MD5_G, d, a, b, c, x[2], 9, 0xfcefa3f8);
	KS_MD5_STEP(KS_MD5_G, c, d, a, b, x[7], 14, 0x676f02d9);
	KS_MD5_STEP(KS_MD5_G, b, c, d, a, x[12], 20, 0x8d2a4c8a);

	/* round 3: word (3i + 5) mod 16, shifts 4 11 16 23 */
	KS_MD5_STEP(KS_MD5_H, a, b, c, d, x[5], 4, 0xfffa3942);
	KS_MD5_STEP(KS_MD5_H, d, a, b, c, x[8], 11, 0x8771f681);
	KS_MD5_STEP(KS_MD5_H, c, d, a, b, x[11], 16, 0x6d9d6122);
	KS_MD5_STEP(KS_MD5_H, b, c, d, a, x[14], 23, 0xfde5380c);
	KS_MD5_STEP(KS_MD5_H, a, b, c, d, x[1], 4, 0xa4beea44);
	KS_MD5_STEP(KS_MD5_H, d, a, b, c, x[4], 11, 0x4bdecfa9);
	KS_MD5_STEP(KS_MD5_H, c, d, a, b, x[7], 16, 0xf6bb4b60);
	KS_MD5_STEP(KS_MD5_H, b, c, d, a, x[10], 23, 0xbebfbc70);
	KS_MD5_STEP(KS_MD5_H, a, b, c, d, x[13], 4, 0x289b7ec6);
	KS_MD5_STEP(KS_MD5_H, d, a, b, c, x[0], 11, 0xeaa127fa);
	KS_MD5_STEP(KS_MD5_H, c, d, a, b, x[3], 16, 0xd4ef3085);
	KS_MD5_STEP(KS_MD5_H, b, c, d, a, x[6], 23, 0x04881d05);
	KS_MD5_STEP(KS_MD5_H, a, b, c, d, x[9], 4, 0xd9d4d039);
	KS_MD5_STEP(KS_MD5_H, d, a, b, c, x[12], 11, 0xe6db99e5);
	KS_MD5_STEP(KS_MD5_H, c, d, a, b, x[15], 16, 0x1fa27cf8);
	KS_MD5_STEP(KS_MD5_H, b, c, d, a, x[2], 23, 0xc4ac5665);

	/* round 4: word 7i mod 16, shifts 6 10 15 21 */
	KS_MD5_STEP(KS_MD5_I, a, b, c, d, x[0], 6, 0xf4292244);
	KS_MD5_STEP(KS_MD5_I, d, a, b, c, x[7], 10, 0x432aff97);
	KS_MD5_STEP(KS_MD5_I, c, d, a, b, x[14], 15, 0xab9423a7);
	KS_MD5_STEP(KS_MD5_I, b, c, d, a, x[5], 21, 0xfc93a039);
	KS_MD5_STEP(KS_MD5_I, a, b, c, d, x[12], 6, 0x655b59c3);
	KS_MD5_STEP(KS_MD5_I, d, a, b, c, x[3], 10, 0x8f0ccc92);
	KS_MD5_STEP(KS_MD5_I, c, d, a, b, x[10], 15, 0xffeff47d);
	KS_MD5_STEP(KS_MD5_I, b, c, d, a, x[1], 21, 0x85845dd1);
	KS_MD5_STEP(KS_MD5_I, a, b, c, d, x[8], 6, 0x6fa87e4f);
	KS_MD5_STEP(KS_MD5_I, d, a, b, c, x[15], 10, 0xfe2ce6e0);
	KS_MD5_STEP(KS_MD5_I, c, d, a, b, x[6], 15, 0xa3014314);
	KS_MD5_STEP(KS_MD5_I, b, c, d, a, x[13], 21, 0x4e0811a1);
	KS_MD5_STEP(KS_MD5_I, a, b, c, d, x[4], 6, 0xf7537e82);
	KS_MD5_STEP(KS_MD5_I, d, a, b, c, x[11], 10, 0xbd3af235);
	KS_MD5_STEP(KS_MD5_I, c, d, a, b, x[2], 15, 0x2ad7d2bb);
	KS_MD5_STEP(KS_MD5_I, b, c, d, a, x[9], 21, 0xeb86d391);

	st[0] += a;
	st[1] += b;
	st[2] += c;
	st[3] += d;
}

/*
 * Word at byte offset off (a multiple of 4) of the padded message of a
 * key in a KS_KEY_BUF buffer: key bytes, then 0x80, then zeros (the
 * bit-length words are put in by the caller). Free of branches on len:
 * each one would split the verifier's walk by ranges of len, and 80 words
 * of such splits run past the 1M-instruction limit. KS_OPAQUE keeps clang
 * from turning the sign-mask arithmetic back into selects, which BPF can
 * only express as branches.
 */
static inline __u32 ks_md5_key_word(const __u64 *key, __u32 len, __u32 off)
{
	__s64 d = (__s64)len - (__s64)off; /* key bytes left at off */
	__s64 neg, over;
	__u64 raw = 0, c;

	if (off < KS_KEY_BUF) /* off is a constant per step of the walk */
		raw = key[(off >> 3) & (KS_KEY_WORDS - 1)] >> ((off & 4) * 8);
	neg = d >> 63; /* -1 when the key ended before off */
	KS_OPAQUE(neg);
	c = (__u64)(d & ~neg); /* max(d, 0) */
	over = (__s64)c - 4;
	KS_OPAQUE(over);
	c = 4 + (__u64)(over & (over >> 63)); /* min(max(d, 0), 4) */
	/* c key bytes, then 0x80 if the key ends inside this word (c < 4; a
	 * 0x80 shifted to bit 32 falls off in the cast), nothing when d < 0 */
	return (__u32)((raw & ((1ULL << (8 * c)) - 1)) |
		       ((0x80ULL << (8 * c)) & ~(__u64)neg));
}

/* Blocks of the padded message of a key: len bytes, 0x80, 8 length bytes. */
static inline __u32 ks_md5_key_nblocks(__u32 len)
{
	return (len + 8) / 64 + 1;
}

/*
 * The 16 words of block b (of nblocks) of a key's padded message. The last
 * block ends in the bit length (len < 2^29, so the high word stays 0); its
 * words 14 and 15 are past the key. len must be <= KS_MAX_KEY_LEN.
 */
static inline void ks_md5_key_block(const __u64 *key, __u32 len, __u32 b,
				    __u32 nblocks, __u32 x[16])
{
	__u32 j;

	for (j = 0; j < 16; j++)
		x[j] = ks_md5_key_word(key, len, b * 64 + j * 4);
	if (b == nblocks - 1)
		x[14] = len << 3;
}

/*
 * MD5 of a key held as the datapath holds it (see the top of this file).
 * st gets the digest as four little-endian words: digest bytes 4i..4i+3
 * are st[i], so st[0] is the ketama key hash and st[a] the ketama point
 * value of alignment a. Longer keys are cut at KS_MAX_KEY_LEN. The BPF
 * side runs the same two steps per block in a global function of its own
 * (bpf/ks_ring.bpf.h), with the block in per-CPU memory, not the stack.
 */
static inline void ks_md5_key(const __u64 *key, __u32 len, __u32 st[4])
{
	__u32 x[16], nblocks, b;

	if (len > KS_MAX_KEY_LEN)
		len = KS_MAX_KEY_LEN;
	nblocks = ks_md5_key_nblocks(len);
	KS_OPAQUE(nblocks); /* keeps the verifier from splitting by len */
	ks_md5_init(st);
	for (b = 0; b < KS_MD5_MAX_BLOCKS; b++) {
		if (b >= nblocks)
			break;
		ks_md5_key_block(key, len, b, nblocks, x);
		ks_md5_block(st, x);
	}
}

/* The ketama key hash: digest bytes 0..3 read little-endian, as
 * libmemcached's hashkit_md5 and twemproxy's hash_md5 return it. */
static inline __u32 ks_ketama_key_hash(const __u64 *key, __u32 len)
{
	__u32 st[4];

	ks_md5_key(key, len, st);
	return st[0];
}

/*
 * MD5 of any byte string, for user space (ring point names can be longer
 * than a key). Same core; the BPF side never calls it, so its loop over
 * an unbounded length is never compiled there.
 */
static inline void ks_md5_bytes(const void *data, __u64 len, __u32 st[4])
{
	const __u8 *p = (const __u8 *)data;
	__u64 nblocks = (len + 8) / 64 + 1, b;
	__u32 x[16], j, k;

	ks_md5_init(st);
	for (b = 0; b < nblocks; b++) {
		for (j = 0; j < 16; j++) {
			__u64 off = b * 64 + j * 4;
			__u32 w = 0;

			if (off + 4 <= len) { /* whole word: one load for gcc */
				x[j] = (__u32)p[off] | (__u32)p[off + 1] << 8 |
				       (__u32)p[off + 2] << 16 |
				       (__u32)p[off + 3] << 24;
				continue;
			}
			for (k = 0; k < 4; k++) {
				__u64 at = off + k;
				__u32 byte = 0;

				if (at < len)
					byte = p[at];
				else if (at == len)
					byte = 0x80;
				w |= byte << (8 * k);
			}
			x[j] = w;
		}
		if (b == nblocks - 1) {
			x[14] = (__u32)(len << 3);
			x[15] = (__u32)(len >> 29);
		}
		ks_md5_block(st, x);
	}
}

/* ---- FNV-1a, twemproxy's "hash: fnv1a_64" ---- */

#define KS_FNV64_OFFSET 0xcbf29ce484222325ULL
#define KS_FNV64_PRIME  0x100000001b3ULL

/*
 * twemproxy's hash_fnv1a_64 keeps only 32 bits of state (offset and prime
 * truncated), which is the low half of the 64-bit FNV-1a, except for one
 * thing: it widens each byte through a plain char, signed on x86-64, so a
 * byte >= 0x80 is xored in as 0xffffffXX. UTF-8 keys depend on it; this
 * follows the x86-64 build (an arm64 build, with unsigned char, differs).
 *
 * The key is held as the datapath holds it. The state is kept in 64 bits
 * and cut to 32 once at the end: the low half of a product or xor depends
 * only on the low halves, and BPF without alu32 would otherwise spend two
 * shifts per byte on the cut, on the loop's critical path.
 */
static inline __u32 ks_fnv1a64_tw_key(const __u64 *key, __u32 len)
{
	__u64 h = (__u32)KS_FNV64_OFFSET;
	__u32 i, k, left;

	if (len > KS_MAX_KEY_LEN)
		len = KS_MAX_KEY_LEN;
	for (i = 0; i < KS_KEY_WORDS; i++) {
		__u64 w = key[i];

		if (i * 8 >= len)
			break;
		left = len - i * 8;
		/* whole words without a length test per byte: the tests, not
		 * the arithmetic, were most of the cost in BPF */
		if (left >= 8) {
			for (k = 0; k < 8; k++) {
				/* byte k, sign-extended like a char */
				h ^= (__u64)(__s64)(__s8)(__u8)(w >> (8 * k));
				h *= (__u32)KS_FNV64_PRIME;
			}
			continue;
		}
		for (k = 0; k < 8; k++) {
			if (k >= left)
				break;
			h ^= (__u64)(__s64)(__s8)(__u8)(w >> (8 * k));
			h *= (__u32)KS_FNV64_PRIME;
		}
	}
	return (__u32)h;
}

/* ---- libmemcached's one_at_a_time (its default hash) ---- */

/*
 * libhashkit's hashkit_one_at_a_time, what libmemcached hashes keys and
 * unweighted ketama point names with unless a hash is chosen (pylibmc's
 * and php-memcached's default). Like twemproxy's fnv1a_64 it widens each
 * byte through a plain char, signed on x86-64: a byte >= 0x80 is added as
 * 0xffffffXX.
 */
static inline __u32 ks_oaat_step(__u32 h, __u8 b)
{
	h += (__u32)(__s32)(__s8)b;
	h += h << 10;
	return h ^ (h >> 6);
}

static inline __u32 ks_oaat_final(__u32 h)
{
	h += h << 3;
	h ^= h >> 11;
	return h + (h << 15);
}

/* ---- zlib's crc32, what dalli hashes keys with ---- */

/*
 * CRC-32 (IEEE 802.3, reflected polynomial 0xedb88320, initial and final
 * value ~0), as zlib's crc32() and Ruby's Zlib.crc32. Four bits a step
 * from a 16-entry table (64 bytes of .rodata in BPF): two lookups a byte,
 * where a bit at a time is 8 dependent steps. The table is the CRC of
 * each nibble; tests/unit/t_ring.c checks it against the bit-at-a-time
 * definition.
 */
static const __u32 ks_crc32_nibble[16] = {
	0x00000000, 0x1db71064, 0x3b6e20c8, 0x26d930ac, 0x76dc4190, 0x6b6b51f4,
	0x4db26158, 0x5005713c, 0xedb88320, 0xf00f9344, 0xd6d6a3e8, 0xcb61b38c,
	0x9b64c2b0, 0x86d3d2d4, 0xa00ae278, 0xbdbdf21c,
};

static inline __u32 ks_crc32_step(__u32 c, __u8 b)
{
	c ^= b;
	c = ks_crc32_nibble[c & 15] ^ (c >> 4);
	return ks_crc32_nibble[c & 15] ^ (c >> 4);
}

/* One byte into one_at_a_time's (crc 0) or crc32's (crc 1) register:
 * the datapath steps both hashes from one bpf_loop callback. */
static inline __u32 ks_bytes_step(__u32 h, __u8 b, __u32 crc)
{
	return crc ? ks_crc32_step(h, b) : ks_oaat_step(h, b);
}

/*
 * The register of either hash after the key. The datapath steps the
 * bytes from a bpf_loop callback instead (bpf/ks_ring.bpf.h): this loop,
 * walked by the verifier byte by byte, costs it about 20,000
 * instructions.
 */
static inline __u32 ks_bytes_key(const __u64 *key, __u32 len, __u32 crc,
				 __u32 h)
{
	__u32 i, k, left;

	if (len > KS_MAX_KEY_LEN)
		len = KS_MAX_KEY_LEN;
	for (i = 0; i < KS_KEY_WORDS; i++) {
		if (i * 8 >= len)
			break;
		left = len - i * 8;
		for (k = 0; k < 8 && k < left; k++)
			h = ks_bytes_step(h, (__u8)(key[i] >> (8 * k)), crc);
	}
	return h;
}

static inline __u32 ks_oaat_key(const __u64 *key, __u32 len)
{
	return ks_oaat_final(ks_bytes_key(key, len, 0, 0));
}

/* zlib's crc32 is ~ of the register */
static inline __u32 ks_crc32_key(const __u64 *key, __u32 len)
{
	return ~ks_bytes_key(key, len, 1, 0xffffffffU);
}

#endif /* KS_HASH_H */
