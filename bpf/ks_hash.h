/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_hash.h - the ring's key hashes, one definition for the datapath and
 * the agent: MD5 (RFC 1321) as libmemcached's and twemproxy's ketama use
 * it, and nutcracker's eleven other key hashes (enum ks_key_hash), among
 * them libmemcached's one_at_a_time and zlib's crc32 (crc32a), dalli's.
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

/* Hides v from the optimiser without keeping it alive in the object
 * (not volatile): a sum or xor formed before it is not reassociated
 * with what comes after. */
static inline __u32 ks_md5_hold(__u32 v)
{
	__asm__("" : "+r"(v));
	return v;
}

#define KS_MD5_ROTL(x, s) (((x) << (s)) | ((x) >> (32 - (s))))
/*
 * A word of the block or the state, read from memory where it is used.
 * Plain reads let clang load each of the 16 block words once and keep it
 * for the four rounds that use it: BPF has 10 registers, so the words
 * and the four starting state words went to 20 stack slots, and the BPF
 * side's MD5 frame was 168 bytes, the largest of the sampled get's
 * deepest call chain, which then stood at the kernel's 512 (issue 27).
 * Read each time from the per-CPU scratch, a line in cache, the frame is
 * 32 bytes (24 with the split round functions below, still 32 as the
 * kernel rounds it) and the block's code 53 instructions shorter.
 */
#ifdef __bpf__
#define KS_MD5_WORD(w) (*(const volatile __u32 *)&(w))
#else /* user space has registers and caches to spare: plain reads */
#define KS_MD5_WORD(w) (w)
#endif
/*
 * The round functions split in two: the part of c and d alone (known a
 * step before b is) and the part that waits for b. Each step's result is
 * the next step's b, so that wait is the whole chain of 64 steps: as
 * written in RFC 1321 (F = (b & c) | (~b & d), a + F + w + k) clang's
 * chain through a step was nine BPF instructions, here it is seven (F's
 * and and xor, the add, the rotate's mask, shift and or with its other
 * shift beside them, + b): 35-50 ns less an MD5 block on the machine of
 * issue 27 (docs/benchmarks.md).
 * F: d ^ (b & (c ^ d)); G: (c & ~d) + (b & d), the two disjoint, so |
 * is +; H: b ^ (c ^ d); I: c ^ (b | ~d), as RFC 1321 defines them.
 */
#define KS_MD5_F0(b, c, d) 0
#define KS_MD5_F1(b, c, d) ((d) ^ ((b)&ks_md5_hold((c) ^ (d))))
#define KS_MD5_G0(b, c, d) ((c) & ~(d))
#define KS_MD5_G1(b, c, d) ((b) & (d))
#define KS_MD5_H0(b, c, d) 0
#define KS_MD5_H1(b, c, d) ((b) ^ ks_md5_hold((c) ^ (d)))
#define KS_MD5_I0(b, c, d) 0
#define KS_MD5_I1(b, c, d) ((c) ^ ((b) | ks_md5_hold(~(d))))
/* One of the 64 steps: a = b + ((a + fn(b,c,d) + word + k) <<< s), summed
 * as (a + word + k + fn's part of c and d) + fn's part of b. */
#define KS_MD5_STEP(fn, a, b, c, d, w, s, k)                                   \
	do {                                                                   \
		__u32 t_ = ks_md5_hold((a) + KS_MD5_WORD(w) + (__u32)(k) +     \
				       fn##0((b), (c), (d)));                  \
		t_ += fn##1((b), (c), (d));                                    \
		(a) = KS_MD5_ROTL(t_, (s)) + (b);                              \
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

	st[0] = KS_MD5_WORD(st[0]) + a;
	st[1] = KS_MD5_WORD(st[1]) + b;
	st[2] = KS_MD5_WORD(st[2]) + c;
	st[3] = KS_MD5_WORD(st[3]) + d;
}

/*
 * Bytes off..off+7 (off a multiple of 8) of the padded message of a key
 * in a KS_KEY_BUF buffer, as a little-endian 64-bit word: key bytes,
 * then 0x80, then zeros (the bit-length words are put in by the caller).
 * Eight bytes a step, one load each: half the steps of four bytes a
 * step, at about the same instructions a step. Free of branches on len:
 * each one would split the verifier's walk by ranges of len, and 80
 * words of such splits run past the 1M-instruction limit. KS_OPAQUE
 * keeps clang from turning the sign-mask arithmetic back into selects,
 * which BPF can only express as branches.
 */
static inline __u64 ks_md5_key_dword(const __u64 *key, __u32 len, __u32 off)
{
	__s64 d = (__s64)len - (__s64)off; /* key bytes left at off */
	__s64 neg, over;
	__u64 raw = 0, c, h;

	if (off < KS_KEY_BUF) /* off is a constant per step of the walk */
		raw = key[(off >> 3) & (KS_KEY_WORDS - 1)];
	neg = d >> 63; /* -1 when the key ended before off */
	KS_OPAQUE(neg);
	c = (__u64)(d & ~neg); /* max(d, 0) */
	over = (__s64)c - 8;
	KS_OPAQUE(over);
	c = 8 + (__u64)(over & (over >> 63)); /* min(max(d, 0), 8) */
	/* c key bytes, then 0x80 if the key ends inside this word (c < 8),
	 * nothing when d < 0; a shift by 8c in two halves, so that c = 8
	 * shifts everything out (one shift by 64 is undefined) */
	h = 4 * c;
	return (raw & (((1ULL << h) << h) - 1)) |
	       (((0x80ULL << h) << h) & ~(__u64)neg);
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

	for (j = 0; j < 8; j++) {
		__u64 v = ks_md5_key_dword(key, len, b * 64 + j * 8);

		x[2 * j] = (__u32)v;
		x[2 * j + 1] = (__u32)(v >> 32);
	}
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

/* ---- twemproxy's key hashes (nutcracker 0.5 src/hashkit) ----
 *
 * The key hash is a dimension of its own (struct ks_ring_meta.key_hash):
 * twemproxy lets every distribution take any of these twelve. The values
 * are ABI. Each is written from nutcracker's source as it computes on
 * x86-64, where a plain char is signed: where nutcracker widens a key
 * byte through char (one_at_a_time, fnv1_64, the fnv_32s, crc32's index,
 * hsieh's third tail byte), a byte >= 0x80 enters as 0xffffffXX.
 *
 * Each hash runs as units (8 key bytes for the byte-wise hashes, 4 for
 * hsieh and murmur, 12 for jenkins) and a tail, so the BPF side can walk
 * the units with bpf_loop() (one callback per hash, verified once) and
 * user space with a plain loop, both through these functions.
 */
/* The units and steps must inline into each BPF callback, so the kind
 * they switch on is a constant there; a call would also be a subprogram
 * returning garbage in r0, which the verifier refuses. */
#define KS_HASH_INLINE static inline __attribute__((always_inline))

enum ks_key_hash {
	KS_KH_MD5 = 0, /* ketama's: MD5 digest bytes 0..3 little-endian */
	KS_KH_ONE_AT_A_TIME = 1, /* libmemcached's default, as pylibmc's */
	KS_KH_CRC16 = 2,
	KS_KH_CRC32 = 3,  /* libmemcached's: ((~crc) >> 16) & 0x7fff */
	KS_KH_CRC32A = 4, /* whole CRC-32: zlib's, gomemcache's, dalli's */
	KS_KH_FNV1_64 = 5,
	KS_KH_FNV1A_64 = 6, /* twemproxy's default */
	KS_KH_FNV1_32 = 7,
	KS_KH_FNV1A_32 = 8,
	KS_KH_HSIEH = 9,
	KS_KH_MURMUR = 10,
	KS_KH_JENKINS = 11,
	KS_KH_MAX,
};

#define KS_FNV32_OFFSET 2166136261U
#define KS_FNV32_PRIME  16777619U
#define KS_MURMUR_M     0x5bd1e995U
/* At most this many units: 250 bytes in 8-byte words is 32, in 4-byte
 * blocks 62, in 12-byte blocks 20. */
#define KS_KH_MAX_UNITS (KS_MAX_KEY_LEN / 4)

/*
 * CRC tables made from their polynomials (CRC-16/XMODEM 0x1021, and the
 * reflected CRC-32 0xedb88320) by a ten-line script; tests/unit/t_ring.c
 * computes both again bit by bit. In BPF they live in .rodata.
 */
static const __u16 ks_crc16_tab[256] = {
	0x0000, 0x1021, 0x2042, 0x3063, 0x4084, 0x50a5, 0x60c6, 0x70e7, 0x8108,
	0x9129, 0xa14a, 0xb16b, 0xc18c, 0xd1ad, 0xe1ce, 0xf1ef, 0x1231, 0x0210,
	0x3273, 0x2252, 0x52b5, 0x4294, 0x72f7, 0x62d6, 0x9339, 0x8318, 0xb37b,
	0xa35a, 0xd3bd, 0xc39c, 0xf3ff, 0xe3de, 0x2462, 0x3443, 0x0420, 0x1401,
	0x64e6, 0x74c7, 0x44a4, 0x5485, 0xa56a, 0xb54b, 0x8528, 0x9509, 0xe5ee,
	0xf5cf, 0xc5ac, 0xd58d, 0x3653, 0x2672, 0x1611, 0x0630, 0x76d7, 0x66f6,
	0x5695, 0x46b4, 0xb75b, 0xa77a, 0x9719, 0x8738, 0xf7df, 0xe7fe, 0xd79d,
	0xc7bc, 0x48c4, 0x58e5, 0x6886, 0x78a7, 0x0840, 0x1861, 0x2802, 0x3823,
	0xc9cc, 0xd9ed, 0xe98e, 0xf9af, 0x8948, 0x9969, 0xa90a, 0xb92b, 0x5af5,
	0x4ad4, 0x7ab7, 0x6a96, 0x1a71, 0x0a50, 0x3a33, 0x2a12, 0xdbfd, 0xcbdc,
	0xfbbf, 0xeb9e, 0x9b79, 0x8b58, 0xbb3b, 0xab1a, 0x6ca6, 0x7c87, 0x4ce4,
	0x5cc5, 0x2c22, 0x3c03, 0x0c60, 0x1c41, 0xedae, 0xfd8f, 0xcdec, 0xddcd,
	0xad2a, 0xbd0b, 0x8d68, 0x9d49, 0x7e97, 0x6eb6, 0x5ed5, 0x4ef4, 0x3e13,
	0x2e32, 0x1e51, 0x0e70, 0xff9f, 0xefbe, 0xdfdd, 0xcffc, 0xbf1b, 0xaf3a,
	0x9f59, 0x8f78, 0x9188, 0x81a9, 0xb1ca, 0xa1eb, 0xd10c, 0xc12d, 0xf14e,
	0xe16f, 0x1080, 0x00a1, 0x30c2, 0x20e3, 0x5004, 0x4025, 0x7046, 0x6067,
	0x83b9, 0x9398, 0xa3fb, 0xb3da, 0xc33d, 0xd31c, 0xe37f, 0xf35e, 0x02b1,
	0x1290, 0x22f3, 0x32d2, 0x4235, 0x5214, 0x6277, 0x7256, 0xb5ea, 0xa5cb,
	0x95a8, 0x8589, 0xf56e, 0xe54f, 0xd52c, 0xc50d, 0x34e2, 0x24c3, 0x14a0,
	0x0481, 0x7466, 0x6447, 0x5424, 0x4405, 0xa7db, 0xb7fa, 0x8799, 0x97b8,
	0xe75f, 0xf77e, 0xc71d, 0xd73c, 0x26d3, 0x36f2, 0x0691, 0x16b0, 0x6657,
	0x7676, 0x4615, 0x5634, 0xd94c, 0xc96d, 0xf90e, 0xe92f, 0x99c8, 0x89e9,
	0xb98a, 0xa9ab, 0x5844, 0x4865, 0x7806, 0x6827, 0x18c0, 0x08e1, 0x3882,
	0x28a3, 0xcb7d, 0xdb5c, 0xeb3f, 0xfb1e, 0x8bf9, 0x9bd8, 0xabbb, 0xbb9a,
	0x4a75, 0x5a54, 0x6a37, 0x7a16, 0x0af1, 0x1ad0, 0x2ab3, 0x3a92, 0xfd2e,
	0xed0f, 0xdd6c, 0xcd4d, 0xbdaa, 0xad8b, 0x9de8, 0x8dc9, 0x7c26, 0x6c07,
	0x5c64, 0x4c45, 0x3ca2, 0x2c83, 0x1ce0, 0x0cc1, 0xef1f, 0xff3e, 0xcf5d,
	0xdf7c, 0xaf9b, 0xbfba, 0x8fd9, 0x9ff8, 0x6e17, 0x7e36, 0x4e55, 0x5e74,
	0x2e93, 0x3eb2, 0x0ed1, 0x1ef0,
};
static const __u32 ks_crc32_tab[256] = {
	0x00000000, 0x77073096, 0xee0e612c, 0x990951ba, 0x076dc419, 0x706af48f,
	0xe963a535, 0x9e6495a3, 0x0edb8832, 0x79dcb8a4, 0xe0d5e91e, 0x97d2d988,
	0x09b64c2b, 0x7eb17cbd, 0xe7b82d07, 0x90bf1d91, 0x1db71064, 0x6ab020f2,
	0xf3b97148, 0x84be41de, 0x1adad47d, 0x6ddde4eb, 0xf4d4b551, 0x83d385c7,
	0x136c9856, 0x646ba8c0, 0xfd62f97a, 0x8a65c9ec, 0x14015c4f, 0x63066cd9,
	0xfa0f3d63, 0x8d080df5, 0x3b6e20c8, 0x4c69105e, 0xd56041e4, 0xa2677172,
	0x3c03e4d1, 0x4b04d447, 0xd20d85fd, 0xa50ab56b, 0x35b5a8fa, 0x42b2986c,
	0xdbbbc9d6, 0xacbcf940, 0x32d86ce3, 0x45df5c75, 0xdcd60dcf, 0xabd13d59,
	0x26d930ac, 0x51de003a, 0xc8d75180, 0xbfd06116, 0x21b4f4b5, 0x56b3c423,
	0xcfba9599, 0xb8bda50f, 0x2802b89e, 0x5f058808, 0xc60cd9b2, 0xb10be924,
	0x2f6f7c87, 0x58684c11, 0xc1611dab, 0xb6662d3d, 0x76dc4190, 0x01db7106,
	0x98d220bc, 0xefd5102a, 0x71b18589, 0x06b6b51f, 0x9fbfe4a5, 0xe8b8d433,
	0x7807c9a2, 0x0f00f934, 0x9609a88e, 0xe10e9818, 0x7f6a0dbb, 0x086d3d2d,
	0x91646c97, 0xe6635c01, 0x6b6b51f4, 0x1c6c6162, 0x856530d8, 0xf262004e,
	0x6c0695ed, 0x1b01a57b, 0x8208f4c1, 0xf50fc457, 0x65b0d9c6, 0x12b7e950,
	0x8bbeb8ea, 0xfcb9887c, 0x62dd1ddf, 0x15da2d49, 0x8cd37cf3, 0xfbd44c65,
	0x4db26158, 0x3ab551ce, 0xa3bc0074, 0xd4bb30e2, 0x4adfa541, 0x3dd895d7,
	0xa4d1c46d, 0xd3d6f4fb, 0x4369e96a, 0x346ed9fc, 0xad678846, 0xda60b8d0,
	0x44042d73, 0x33031de5, 0xaa0a4c5f, 0xdd0d7cc9, 0x5005713c, 0x270241aa,
	0xbe0b1010, 0xc90c2086, 0x5768b525, 0x206f85b3, 0xb966d409, 0xce61e49f,
	0x5edef90e, 0x29d9c998, 0xb0d09822, 0xc7d7a8b4, 0x59b33d17, 0x2eb40d81,
	0xb7bd5c3b, 0xc0ba6cad, 0xedb88320, 0x9abfb3b6, 0x03b6e20c, 0x74b1d29a,
	0xead54739, 0x9dd277af, 0x04db2615, 0x73dc1683, 0xe3630b12, 0x94643b84,
	0x0d6d6a3e, 0x7a6a5aa8, 0xe40ecf0b, 0x9309ff9d, 0x0a00ae27, 0x7d079eb1,
	0xf00f9344, 0x8708a3d2, 0x1e01f268, 0x6906c2fe, 0xf762575d, 0x806567cb,
	0x196c3671, 0x6e6b06e7, 0xfed41b76, 0x89d32be0, 0x10da7a5a, 0x67dd4acc,
	0xf9b9df6f, 0x8ebeeff9, 0x17b7be43, 0x60b08ed5, 0xd6d6a3e8, 0xa1d1937e,
	0x38d8c2c4, 0x4fdff252, 0xd1bb67f1, 0xa6bc5767, 0x3fb506dd, 0x48b2364b,
	0xd80d2bda, 0xaf0a1b4c, 0x36034af6, 0x41047a60, 0xdf60efc3, 0xa867df55,
	0x316e8eef, 0x4669be79, 0xcb61b38c, 0xbc66831a, 0x256fd2a0, 0x5268e236,
	0xcc0c7795, 0xbb0b4703, 0x220216b9, 0x5505262f, 0xc5ba3bbe, 0xb2bd0b28,
	0x2bb45a92, 0x5cb36a04, 0xc2d7ffa7, 0xb5d0cf31, 0x2cd99e8b, 0x5bdeae1d,
	0x9b64c2b0, 0xec63f226, 0x756aa39c, 0x026d930a, 0x9c0906a9, 0xeb0e363f,
	0x72076785, 0x05005713, 0x95bf4a82, 0xe2b87a14, 0x7bb12bae, 0x0cb61b38,
	0x92d28e9b, 0xe5d5be0d, 0x7cdcefb7, 0x0bdbdf21, 0x86d3d2d4, 0xf1d4e242,
	0x68ddb3f8, 0x1fda836e, 0x81be16cd, 0xf6b9265b, 0x6fb077e1, 0x18b74777,
	0x88085ae6, 0xff0f6a70, 0x66063bca, 0x11010b5c, 0x8f659eff, 0xf862ae69,
	0x616bffd3, 0x166ccf45, 0xa00ae278, 0xd70dd2ee, 0x4e048354, 0x3903b3c2,
	0xa7672661, 0xd06016f7, 0x4969474d, 0x3e6e77db, 0xaed16a4a, 0xd9d65adc,
	0x40df0b66, 0x37d83bf0, 0xa9bcae53, 0xdebb9ec5, 0x47b2cf7f, 0x30b5ffe9,
	0xbdbdf21c, 0xcabac28a, 0x53b39330, 0x24b4a3a6, 0xbad03605, 0xcdd70693,
	0x54de5729, 0x23d967bf, 0xb3667a2e, 0xc4614ab8, 0x5d681b02, 0x2a6f2b94,
	0xb40bbe37, 0xc30c8ea1, 0x5a05df1b, 0x2d02ef8d,
};

/* Key byte i, as an unsigned byte and as nutcracker's char widens it. */
KS_HASH_INLINE __u32 ks_kb(const __u8 *k, __u32 i)
{
	return k[i & (KS_KEY_BUF - 1)];
}

KS_HASH_INLINE __u32 ks_kc(const __u8 *k, __u32 i)
{
	return (__u32)(__s32)(__s8)k[i & (KS_KEY_BUF - 1)];
}

KS_HASH_INLINE __u32 ks_kle32(const __u8 *k, __u32 i)
{
	return ks_kb(k, i) | ks_kb(k, i + 1) << 8 | ks_kb(k, i + 2) << 16 |
	       ks_kb(k, i + 3) << 24;
}

/* One hash in progress: h, and jenkins's a, b, c. */
struct ks_kh {
	__u32 len;
	__u32 h, a, b, c;
};

KS_HASH_INLINE __u32 ks_kh_units(__u32 kind, __u32 len)
{
	if (kind == KS_KH_HSIEH || kind == KS_KH_MURMUR)
		return len / 4;
	if (kind == KS_KH_JENKINS) /* every block but the last is mixed */
		return len ? (len - 1) / 12 : 0;
	return (len + 7) / 8;
}

KS_HASH_INLINE void ks_kh_begin(struct ks_kh *s, __u32 kind, __u32 len)
{
	s->len = len;
	s->a = s->b = s->c = 0xdeadbeef + len + 13; /* jenkins, initval 13 */
	switch (kind) {
	case KS_KH_CRC32:
	case KS_KH_CRC32A:
		s->h = 0xffffffff;
		break;
	case KS_KH_FNV1_64:
	case KS_KH_FNV1A_64:
		s->h = (__u32)KS_FNV64_OFFSET;
		break;
	case KS_KH_FNV1_32:
	case KS_KH_FNV1A_32:
		s->h = KS_FNV32_OFFSET;
		break;
	case KS_KH_MURMUR: /* seed 0xdeadbeef * len, xored with len */
		s->h = (0xdeadbeef * len) ^ len;
		break;
	default:
		s->h = 0;
	}
}

/* One key byte into a byte-wise hash; c as the char widens it. Only the
 * low 32 bits of fnv1_64's 64-bit state reach its result, and they
 * depend on nothing else, so 32 bits of state are enough. */
KS_HASH_INLINE __u32 ks_kh_step(__u32 kind, __u32 h, __u32 c)
{
	switch (kind) {
	case KS_KH_ONE_AT_A_TIME:
		h += c;
		h += h << 10;
		return h ^ (h >> 6);
	case KS_KH_CRC16: /* crc keeps its high bits: nutcracker never cuts */
		return (h << 8) ^ ks_crc16_tab[((h >> 8) ^ c) & 0xff];
	case KS_KH_CRC32:
	case KS_KH_CRC32A:
		return (h >> 8) ^ ks_crc32_tab[(h ^ c) & 0xff];
	case KS_KH_FNV1_64:
		return (h * (__u32)KS_FNV64_PRIME) ^ c;
	case KS_KH_FNV1A_64:
		return (h ^ c) * (__u32)KS_FNV64_PRIME;
	case KS_KH_FNV1_32:
		return (h * KS_FNV32_PRIME) ^ c;
	case KS_KH_FNV1A_32:
		return (h ^ c) * KS_FNV32_PRIME;
	default:
		return h;
	}
}

#define KS_JENKINS_ROT(x, k) (((x) << (k)) | ((x) >> (32 - (k))))

KS_HASH_INLINE void ks_jenkins_mix(struct ks_kh *s)
{
	__u32 a = s->a, b = s->b, c = s->c;

	a -= c, a ^= KS_JENKINS_ROT(c, 4), c += b;
	b -= a, b ^= KS_JENKINS_ROT(a, 6), a += c;
	c -= b, c ^= KS_JENKINS_ROT(b, 8), b += a;
	a -= c, a ^= KS_JENKINS_ROT(c, 16), c += b;
	b -= a, b ^= KS_JENKINS_ROT(a, 19), a += c;
	c -= b, c ^= KS_JENKINS_ROT(b, 4), b += a;
	s->a = a, s->b = b, s->c = c;
}

KS_HASH_INLINE __u32 ks_jenkins_final(__u32 a, __u32 b, __u32 c)
{
	c ^= b, c -= KS_JENKINS_ROT(b, 14);
	a ^= c, a -= KS_JENKINS_ROT(c, 11);
	b ^= a, b -= KS_JENKINS_ROT(a, 25);
	c ^= b, c -= KS_JENKINS_ROT(b, 16);
	a ^= c, a -= KS_JENKINS_ROT(c, 4);
	b ^= a, b -= KS_JENKINS_ROT(a, 14);
	c ^= b, c -= KS_JENKINS_ROT(b, 24);
	return c;
}

KS_HASH_INLINE __u32 ks_kle16(const __u8 *k, __u32 i)
{
	return ks_kb(k, i) | ks_kb(k, i + 1) << 8;
}

/* Unit i of the key k: a byte-wise hash's word i (its bytes before len),
 * hsieh's or murmur's 4-byte block i, jenkins's 12-byte block i. */
KS_HASH_INLINE void ks_kh_unit(struct ks_kh *s, __u32 kind, const __u8 *k,
			       __u32 i)
{
	__u32 j, w, h = s->h;

	switch (kind) {
	case KS_KH_HSIEH:
		h += ks_kle16(k, 4 * i);
		w = (ks_kle16(k, 4 * i + 2) << 11) ^ h;
		h = (h << 16) ^ w;
		s->h = h + (h >> 11);
		return;
	case KS_KH_MURMUR:
		w = ks_kle32(k, 4 * i) * KS_MURMUR_M;
		w ^= w >> 24;
		w *= KS_MURMUR_M;
		s->h = (h * KS_MURMUR_M) ^ w;
		return;
	case KS_KH_JENKINS:
		s->a += ks_kle32(k, 12 * i);
		s->b += ks_kle32(k, 12 * i + 4);
		s->c += ks_kle32(k, 12 * i + 8);
		ks_jenkins_mix(s);
		return;
	default:
		for (j = 0; j < 8; j++) {
			if (8 * i + j >= s->len)
				break;
			h = ks_kh_step(kind, h, ks_kc(k, 8 * i + j));
		}
		s->h = h;
	}
}

/* Byte i of a byte-wise hash on its own: the BPF side walks the cheaper
 * byte-wise hashes a byte per bpf_loop() step, a callback without
 * branches being what the verifier walks fastest. */
KS_HASH_INLINE void ks_kh_byte(struct ks_kh *s, __u32 kind, const __u8 *k,
			       __u32 i)
{
	s->h = ks_kh_step(kind, s->h, ks_kc(k, i));
}

/* jenkins's last block, 1..12 bytes at off, into a, b, c. */
KS_HASH_INLINE __u32 ks_jenkins_tail(struct ks_kh *s, const __u8 *k, __u32 off)
{
	__u32 n = s->len - off, j, v[3] = { s->a, s->b, s->c };

	if (!s->len)
		return s->c;
	/* without a branch per byte: each would fork the verifier's walk */
	for (j = 0; j < 12; j++) {
		__u32 in = (__u32)((__s32)(j - n) >> 31); /* ~0 when j < n */

		KS_OPAQUE(in);
		v[j / 4] += (ks_kb(k, off + j) & in) << (8 * (j % 4));
	}
	return ks_jenkins_final(v[0], v[1], v[2]);
}

/* The tail after ks_kh_units() units, and the final mixing: the hash. */
KS_HASH_INLINE __u32 ks_kh_end(struct ks_kh *s, __u32 kind, const __u8 *k)
{
	__u32 h = s->h, off = s->len & ~3U, rem = s->len & 3;

	switch (kind) {
	case KS_KH_ONE_AT_A_TIME:
		h += h << 3;
		h ^= h >> 11;
		return h + (h << 15);
	case KS_KH_CRC32:
		return ((~h) >> 16) & 0x7fff;
	case KS_KH_CRC32A:
		return ~h;
	case KS_KH_HSIEH:
		if (!s->len)
			return 0;
		if (rem == 3) {
			h += ks_kle16(k, off);
			h ^= h << 16;
			h ^= ks_kc(k, off + 2) << 18;
			h += h >> 11;
		} else if (rem == 2) {
			h += ks_kle16(k, off);
			h ^= h << 11;
			h += h >> 17;
		} else if (rem == 1) {
			h += ks_kb(k, off);
			h ^= h << 10;
			h += h >> 1;
		}
		h ^= h << 3;
		h += h >> 5;
		h ^= h << 4;
		h += h >> 17;
		h ^= h << 25;
		return h + (h >> 6);
	case KS_KH_MURMUR:
		if (rem == 3)
			h ^= ks_kb(k, off + 2) << 16;
		if (rem >= 2)
			h ^= ks_kb(k, off + 1) << 8;
		if (rem >= 1) {
			h ^= ks_kb(k, off);
			h *= KS_MURMUR_M;
		}
		h ^= h >> 13;
		h *= KS_MURMUR_M;
		return h ^ (h >> 15);
	case KS_KH_JENKINS:
		return ks_jenkins_tail(s, k, ks_kh_units(kind, s->len) * 12);
	default:
		return h;
	}
}

/*
 * A key hash of a key held as the datapath holds it, in one loop: what
 * user space runs. The BPF side walks the same units with bpf_loop()
 * (bpf/ks_ring.bpf.h).
 */
KS_HASH_INLINE __u32 ks_key_hash_of(__u32 kind, const __u64 *key, __u32 len)
{
	const __u8 *k = (const __u8 *)key;
	struct ks_kh s;
	__u32 i, n;

	if (len > KS_MAX_KEY_LEN)
		len = KS_MAX_KEY_LEN;
	if (kind == KS_KH_MD5)
		return ks_ketama_key_hash(key, len);
	ks_kh_begin(&s, kind, len);
	n = ks_kh_units(kind, len);
	for (i = 0; i < KS_KH_MAX_UNITS && i < n; i++)
		ks_kh_unit(&s, kind, k, i);
	return ks_kh_end(&s, kind, k);
}

/*
 * twemproxy's hash_tag "XY": when the key has an X and, after it, a Y
 * with at least one byte between them, only those bytes are hashed
 * (nc_server.c server_pool_idx: the first X, then the first Y after it);
 * otherwise the whole key. One byte at a time, so BPF can run it with
 * bpf_loop(): ks_tag_step() returns 1 when the span is found.
 */
struct ks_tag {
	__u32 open, close; /* the tag's two bytes */
	__u32 start;       /* 1 + index of the first X; 0 before it */
	__u32 end;         /* index of the Y that closes it; 0 before it */
};

KS_HASH_INLINE int ks_tag_step(struct ks_tag *t, __u32 i, __u32 c)
{
	if (!t->start) {
		if (c == t->open)
			t->start = i + 1;
		return 0;
	}
	if (c != t->close)
		return 0;
	t->end = i;
	return 1;
}

/* Where the hashed bytes begin and how many there are, once the step
 * has seen the key (len bytes): the whole key unless a span was found. */
KS_HASH_INLINE __u32 ks_tag_span(const struct ks_tag *t, __u32 len,
				 __u32 *start)
{
	if (t->end && t->end > t->start) {
		*start = t->start;
		return t->end - t->start;
	}
	*start = 0;
	return len;
}

/*
 * Moves the key's bytes from start on to the front, a word at a time, in
 * place (each word reads only words at or after its own). Bytes after
 * the new end are left as they were: the hashes mask them off.
 */
KS_HASH_INLINE void ks_key_shift(__u64 *key, __u32 start)
{
	__u32 q = (start >> 3) & (KS_KEY_WORDS - 1), sh = (start & 7) * 8, j;

	for (j = 0; j < KS_KEY_WORDS; j++) {
		/* words past the buffer read as 0, with masks, not branches */
		__s64 lo_in = (__s64)(j + q) - KS_KEY_WORDS;
		__s64 hi_in = lo_in + 1;
		__u64 lo, hi;

		KS_OPAQUE(lo_in);
		KS_OPAQUE(hi_in);
		lo = key[(j + q) & (KS_KEY_WORDS - 1)] & (__u64)(lo_in >> 63);
		hi = key[(j + q + 1) & (KS_KEY_WORDS - 1)] &
		     (__u64)(hi_in >> 63);
		/* hi << (64 - sh), without the undefined shift by 64 */
		key[j] = (lo >> sh) |
			 (((hi << 1) << (63 - sh)) & -(__u64) !!sh);
	}
}

/*
 * twemproxy's default key hash. hash_fnv1a_64 keeps only 32 bits of state
 * (offset and prime truncated), the low half of the 64-bit FNV-1a, except
 * that it widens each byte through a plain char, signed on x86-64, so a
 * byte >= 0x80 is xored in as 0xffffffXX. UTF-8 keys depend on it; this
 * follows the x86-64 build (an arm64 build, with unsigned char, differs).
 */
KS_HASH_INLINE __u32 ks_fnv1a64_tw_key(const __u64 *key, __u32 len)
{
	return ks_key_hash_of(KS_KH_FNV1A_64, key, len);
}

/*
 * A byte-wise key hash (one_at_a_time, crc16, crc32, crc32a, the fnvs) of
 * any byte string, for user space: libmemcached's unweighted ketama
 * hashes its point names with its key hash, and a name can be longer
 * than a key. The same steps and end as a key's; the BPF side never
 * calls it, so its loop over an unbounded length is never compiled there.
 */
static inline __u32 ks_kh_bytes(__u32 kind, const void *data, __u64 len)
{
	const __u8 *p = (const __u8 *)data;
	struct ks_kh s;
	__u64 i;

	ks_kh_begin(&s, kind, (__u32)len);
	for (i = 0; i < len; i++)
		s.h = ks_kh_step(kind, s.h, (__u32)(__s32)(__s8)p[i]);
	return ks_kh_end(&s, kind, p);
}

#endif /* KS_HASH_H */
