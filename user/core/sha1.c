// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sha1.c - SHA-1 as FIPS 180-4 section 6.1 defines it. */
#include <string.h>
#include "core/sha1.h"

static __u32 rol(__u32 x, int r)
{
	return (x << r) | (x >> (32 - r));
}

static __u32 be32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

static void sha1_block(__u32 h[5], const __u8 *blk)
{
	__u32 w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f, k, t;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = be32(blk + 4 * i);
	for (; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	for (i = 0; i < 80; i++) {
		if (i < 20)
			f = (b & c) | (~b & d), k = 0x5a827999;
		else if (i < 40)
			f = b ^ c ^ d, k = 0x6ed9eba1;
		else if (i < 60)
			f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
		else
			f = b ^ c ^ d, k = 0xca62c1d6;
		t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = t;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

void ks_sha1(const void *data, size_t len, __u8 out[20])
{
	__u32 h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
		       0xc3d2e1f0 };
	const __u8 *p = data;
	__u8 tail[128] = { 0 };
	__u64 bits = (__u64)len * 8;
	size_t whole = len & ~(size_t)63, rest = len - whole, tlen, i;

	for (i = 0; i < whole; i += 64)
		sha1_block(h, p + i);
	/* the rest, 0x80, zeros, and the bit length: one or two blocks */
	memcpy(tail, p + whole, rest);
	tail[rest] = 0x80;
	tlen = rest + 9 > 64 ? 128 : 64;
	for (i = 0; i < 8; i++)
		tail[tlen - 1 - i] = (__u8)(bits >> (8 * i));
	for (i = 0; i < tlen; i += 64)
		sha1_block(h, tail + i);
	for (i = 0; i < 20; i++)
		out[i] = (__u8)(h[i / 4] >> (24 - 8 * (i % 4)));
}
