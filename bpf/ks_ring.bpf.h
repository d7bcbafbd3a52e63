/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_ring.bpf.h - the clients' ring in the kernel: which shard owns a
 * sampled key, per-shard load, and keys this host should not have got.
 *
 * The ring map has two halves (bpf/ks_ring.h). The agent fills the idle
 * half, flips ks_config.ring, then waits an RCU grace period before it
 * may write that half again; a packet reads ks_config.ring once, so it
 * sees one whole ring or the other, never a mix.
 */
#ifndef KS_RING_BPF_H
#define KS_RING_BPF_H

#include "ks_ring.h"
#include "ks_shard_report.h"
#include "ks_count.bpf.h"
#include "ks_scratch.bpf.h"
#include "ks_ring_cache.bpf.h"
#include "ks_dedicated.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KS_RING_HALVES);
	__type(key, __u32);
	__type(value, struct ks_ring_half);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KS_MAX_SHARDS);
	__type(key, __u32);
	__type(value, struct ks_shard_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_shards SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KS_MISDIRECT_SLOTS);
	__type(key, __u32);
	__type(value, struct ks_misdirect);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_misdirect SEC(".maps");

/* Written only by the agent (per-shard rates and the ring's identity for
 * 'agent report'); defined here so it is created and pinned with the ring
 * maps. No program reads or writes it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_shard_report);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_shard_report SEC(".maps");

/* Keeps the client of a misdirected key, round robin per CPU. */
static __always_inline void ks_ring_note_client(struct ks_scratch *s,
						__u32 owner, __u64 hash)
{
	__u32 slot = s->misdirect_next++ % KS_MISDIRECT_SLOTS;
	struct ks_misdirect *m = bpf_map_lookup_elem(&ks_misdirect, &slot);

	if (!m)
		return;
	/* jiffies are enough to order and age the slots, and the precise
	 * clock costs ~28 ns per call in a VM */
	m->ts_ns = bpf_ktime_get_coarse_ns();
	__builtin_memcpy(m->saddr, s->saddr, sizeof(m->saddr));
	m->sport = s->sport;
	m->proto = s->proto;
	m->owner = owner;
	m->hash = hash;
}

/* Block b of the key's MD5: verified once, whatever b and len. Its
 * words are read from s->md5_x at each step (KS_MD5_WORD), never kept
 * on the stack: a 32-byte frame, where one with the words spilled was
 * 168 (issue 27, docs/benchmarks.md "The stack"). */
__noinline int ks_ring_md5_block(struct ks_scratch *s, __u32 len, __u32 b,
				 __u32 nblocks)
{
	if (!s || len > KS_MAX_KEY_LEN || b >= KS_MD5_MAX_BLOCKS)
		return 0;
	/* a mask clang cannot drop (it knows b < 5 from the compare above,
	 * but the verifier loses that bound in the word index arithmetic) */
	KS_OPAQUE(b);
	b &= 7;
	ks_md5_key_block(s->key, len, b, nblocks, s->md5_x);
	ks_md5_block(s->md5_st, s->md5_x);
	return 0;
}

/*
 * twemproxy's key hashes (all but MD5) walk their units with bpf_loop():
 * one small callback per hash, each verified once whatever the key's
 * length, where a plain loop would be walked unit by unit for every
 * hash (the verifier budget has no room for that). The callbacks and the
 * tail are ks_hash.h's, as user space runs them.
 */
struct ks_kh_loop {
	struct ks_kh st;
	const __u8 *key;
};

#define KS_KH_CALLBACK(name, kind, unit)                                       \
	static long ks_kh_cb_##name(__u32 i, void *ctx)                        \
	{                                                                      \
		struct ks_kh_loop *l = ctx;                                    \
                                                                               \
		unit(&l->st, kind, l->key, i);                                 \
		return 0;                                                      \
	}

/* fnv1a_64, twemproxy's default, a word a step: fastest on long keys */
KS_KH_CALLBACK(fnv1a_64, KS_KH_FNV1A_64, ks_kh_unit)
KS_KH_CALLBACK(hsieh, KS_KH_HSIEH, ks_kh_unit)
KS_KH_CALLBACK(murmur, KS_KH_MURMUR, ks_kh_unit)
KS_KH_CALLBACK(jenkins, KS_KH_JENKINS, ks_kh_unit)
/* the other byte-wise hashes a byte a step: fewer instructions verified */
KS_KH_CALLBACK(oaat, KS_KH_ONE_AT_A_TIME, ks_kh_byte)
KS_KH_CALLBACK(crc16, KS_KH_CRC16, ks_kh_byte)
KS_KH_CALLBACK(crc32, KS_KH_CRC32, ks_kh_byte)
KS_KH_CALLBACK(fnv1_64, KS_KH_FNV1_64, ks_kh_byte)
KS_KH_CALLBACK(fnv1_32, KS_KH_FNV1_32, ks_kh_byte)
KS_KH_CALLBACK(fnv1a_32, KS_KH_FNV1A_32, ks_kh_byte)

/* An empty asm that differs per arm of a switch (n a constant). */
#define KS_ARM(n) __asm__ volatile("" ::"i"(n))
/* One arm of ks_ring_twem's switch: kind K's loop, with callback cb, and
 * its end. */
#define KS_KH_ARM(K, cb)                                                       \
	case K:                                                                \
		bpf_loop(n, cb, &l, 0);                                        \
		KS_ARM(K);                                                     \
		return ks_kh_end(&l.st, K, l.key)

/* A twemproxy key hash other than MD5 of the key in s->key. */
__noinline __u32 ks_ring_twem(struct ks_scratch *s, __u32 len, __u32 kind)
{
	struct ks_kh_loop l;
	__u32 n;

	if (!s)
		return 0;
	if (len > KS_MAX_KEY_LEN)
		len = KS_MAX_KEY_LEN;
	l.key = (const __u8 *)s->key;
	if (kind == KS_KH_FNV1A_64) { /* the default: no switch to go through */
		l.st.len = len;
		l.st.h = (__u32)KS_FNV64_OFFSET;
		bpf_loop((len + 7) / 8, ks_kh_cb_fnv1a_64, &l, 0);
		KS_ARM(KS_KH_FNV1A_64);
		return l.st.h;
	}
	ks_kh_begin(&l.st, kind, len);
	n = ks_kh_units(kind, len);
	if (kind != KS_KH_FNV1A_64 && kind != KS_KH_HSIEH &&
	    kind != KS_KH_MURMUR && kind != KS_KH_JENKINS)
		n = len; /* a byte a step */
	/*
	 * Each arm ends in a tail of its own (KS_ARM), so clang cannot merge
	 * the bpf_loop() calls into one whose callback is a variable: the
	 * verifier inlines a loop only when its call always has the same
	 * callback, and an indirect call per step is several times slower.
	 */
	switch (kind) {
		KS_KH_ARM(KS_KH_ONE_AT_A_TIME, ks_kh_cb_oaat);
		KS_KH_ARM(KS_KH_CRC16, ks_kh_cb_crc16);
	case KS_KH_CRC32:
	case KS_KH_CRC32A: /* one loop verified for both: only the end differs */
		bpf_loop(n, ks_kh_cb_crc32, &l, 0);
		KS_ARM(KS_KH_CRC32);
		if (kind == KS_KH_CRC32)
			return ks_kh_end(&l.st, KS_KH_CRC32, l.key);
		return ks_kh_end(&l.st, KS_KH_CRC32A, l.key);
		KS_KH_ARM(KS_KH_FNV1_64, ks_kh_cb_fnv1_64);
		KS_KH_ARM(KS_KH_FNV1_32, ks_kh_cb_fnv1_32);
		KS_KH_ARM(KS_KH_FNV1A_32, ks_kh_cb_fnv1a_32);
		KS_KH_ARM(KS_KH_HSIEH, ks_kh_cb_hsieh);
		KS_KH_ARM(KS_KH_MURMUR, ks_kh_cb_murmur);
		KS_KH_ARM(KS_KH_JENKINS, ks_kh_cb_jenkins);
	default:
		return 0;
	}
}

struct ks_tag_loop {
	struct ks_tag t;
	const __u8 *key;
};

static long ks_tag_cb(__u32 i, void *ctx)
{
	struct ks_tag_loop *l = ctx;

	return ks_tag_step(&l->t, i, ks_kb(l->key, i));
}

/*
 * twemproxy's hash_tag (tag: its two bytes, open | close << 8): moves
 * the part of the key in s->key to hash to its front, in place (nothing
 * reads s->key after ks_ring_place(), and the next key overwrites it),
 * and returns its length.
 */
__noinline __u32 ks_ring_tag(struct ks_scratch *s, __u32 len, __u32 tag)
{
	struct ks_tag_loop l = { .t = { .open = tag & 0xff,
					.close = (tag >> 8) & 0xff } };
	__u32 start, n;

	if (!s)
		return 0;
	if (len > KS_MAX_KEY_LEN)
		len = KS_MAX_KEY_LEN;
	l.key = (const __u8 *)s->key;
	bpf_loop(len, ks_tag_cb, &l, 0);
	n = ks_tag_span(&l.t, len, &start);
	if (start)
		ks_key_shift(s->key, start);
	return n;
}

/*
 * The ring's key hash (enum ks_key_hash) of the key in s->key (len >= 1:
 * the datapath never samples an empty key), as ks_ring_hash() in
 * user/core/ring.c computes it; tag: 1 << 16 | the hash_tag's bytes, or
 * 0. MD5's working memory lives in the scratch, as the 512-byte BPF
 * stack is shared by the whole call chain.
 */
__noinline __u32 ks_ring_hash(struct ks_scratch *s, __u32 len, __u32 kind,
			      __u32 tag)
{
	__u32 b, nblocks;

	if (!s)
		return 0;
	if (tag)
		len = ks_ring_tag(s, len, tag);
	if (kind != KS_KH_MD5)
		return ks_ring_twem(s, len, kind);
	if (len > KS_MAX_KEY_LEN)
		len = KS_MAX_KEY_LEN;
	nblocks = ks_md5_key_nblocks(len);
	/* hide the len-to-blocks relation: the verifier need not split
	 * its walk of each block by ranges of len */
	KS_OPAQUE(nblocks);
	ks_md5_init(s->md5_st);
	for (b = 0; b < KS_MD5_MAX_BLOCKS; b++) {
		if (b >= nblocks)
			break;
		ks_ring_md5_block(s, len, b, nblocks);
	}
	return s->md5_st[0];
}

/* A ring's hash tag as ks_ring_hash() takes it. */
static __always_inline __u32 ks_ring_tag_word(const struct ks_ring_meta *m)
{
	if (!m->tagged)
		return 0;
	return 1U << 16 | m->hash_tag[0] | (__u32)m->hash_tag[1] << 8;
}

/*
 * The sampled key's owner on a points ring: ks_ring_hash() and the owner's
 * search, both from the cache when the key was seen before
 * (ks_ring_cache.h), under the ring's identity, so a key hash, hash tag
 * or owner of another ring is never taken for this one's. A hit skips the
 * search too: its bucket and points lines are cold at line rate (issue
 * 27). Inline: a frame of its own would put the key hashes' bpf_loop()
 * callbacks one frame past the kernel's 8.
 */
static __always_inline __u32 ks_ring_owner_cached(struct ks_scratch *s,
						  const struct ks_ring_half *h)
{
	const struct ks_ring_meta *m = &h->meta;
	__u64 id = ks_ring_cache_id(m->version, m->digest);
	__u64 hit = ks_ring_cache_find(s, m->dist, id);
	__u32 hash, owner;

	if (hit >> 33)
		return (__u32)(hit >> 33) - 1;
	if (hit)
		hash = (__u32)hit;
	else
		hash = ks_ring_hash(s, s->ring_len, m->key_hash,
				    ks_ring_tag_word(m));
	owner = ks_ring_owner(h, hash);
	ks_ring_cache_keep(s, m->dist, id, hash,
			   owner < KS_MAX_SHARDS ? owner + 1 : 0);
	return owner;
}

/*
 * pymemcache's rendezvous hashing: one murmur3_32 of "host:port-key" per
 * node, resumed from the node's state after "host:port-" (struct
 * ks_rdv_slot), the highest score and then rank winning. A bpf_loop()
 * over the nodes, and in each a bpf_loop() over the key's whole 4-byte
 * blocks: both callbacks verified once, whatever the key's length and
 * the number of nodes. Deepest chain: ks_ingress, ks_stream_xdp,
 * ks_mc_parse, ks_ring_place, ks_ring_rdv, the node and the block
 * callbacks, 7 frames of the kernel's 8.
 */
struct ks_rdv_loop {
	const struct ks_ring_half *h;
	const __u8 *key;
	__u64 best;  /* ks_rdv_rank() of the winner so far */
	__u32 len;   /* key bytes, each a unit: the key is ASCII */
	__u32 off;   /* where the node's whole blocks start in the key */
	__u32 mh;    /* the node's murmur3 state */
	__u32 owner; /* the winner so far */
};

/* One whole block: a 4-byte load at any offset, where four byte loads
 * (ks_kle32) were 20% slower on a 250-byte key. The verifier allows it
 * in a map value on arches with efficient unaligned access
 * (CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS: x86, the one vmlinux/ has,
 * and arm64). */
static long ks_rdv_block_cb(__u32 j, void *ctx)
{
	struct ks_rdv_loop *l = ctx;
	__u32 o = (l->off + 4 * j) & (KS_KEY_BUF - 1);

	if (o > KS_KEY_BUF - 4) /* for the verifier: never, len <= 250 */
		return 1;
	l->mh = ks_mm3_mix(l->mh, *(const __u32 *)(l->key + o));
	return 0;
}

/* Four whole blocks a step: a quarter of the callback's calls (7% off a
 * 250-byte key; the mix's dependent multiplies are the rest). */
static long ks_rdv_block4_cb(__u32 j, void *ctx)
{
	struct ks_rdv_loop *l = ctx;
	__u32 o = (l->off + 16 * j) & (KS_KEY_BUF - 1), h;
	const __u8 *p;

	if (o > KS_KEY_BUF - 16) /* for the verifier: never, len <= 250 */
		return 1;
	p = l->key + o;
	h = ks_mm3_mix(l->mh, *(const __u32 *)p);
	h = ks_mm3_mix(h, *(const __u32 *)(p + 4));
	h = ks_mm3_mix(h, *(const __u32 *)(p + 8));
	l->mh = ks_mm3_mix(h, *(const __u32 *)(p + 12));
	return 0;
}

/*
 * One node's score, ks_rdv_rank()ed, kept when it beats the best so far.
 * (Written branch-free with masks it verified 1,100 instructions more in
 * ks_ingress, not fewer: clang makes selects of these branches anyway.)
 */
static long ks_rdv_node_cb(__u32 i, void *ctx)
{
	struct ks_rdv_loop *l = ctx;
	const struct ks_rdv_slot *nd;
	__u32 t, lead, m, j, k, rest, total;
	__u64 v;

	if (i >= KS_RDV_MAX_NODES) /* for the verifier */
		return 1;
	nd = &l->h->rdv[i];
	/* the node's held-back units, then the key's first lead bytes */
	t = nd->len & 3;
	lead = (4 - t) & 3;
	m = l->len < lead ? l->len : lead;
	k = nd->tail;
	for (j = 0; j < 3; j++)
		if (j < m)
			k |= ks_kb(l->key, j) << (8 * ((t + j) & 3));
	l->mh = nd->h;
	if (t && m == lead) { /* a whole first block: mixed, k restarts */
		l->mh = ks_mm3_mix(l->mh, k);
		k = 0;
	}
	rest = l->len - m;
	l->off = m;
	bpf_loop(rest / 16, ks_rdv_block4_cb, l, 0);
	l->off = m + (rest & ~15U);
	bpf_loop((rest / 4) & 3, ks_rdv_block_cb, l, 0);
	/* the key's last rest % 4 bytes (the buffer past the key is masked
	 * off, whatever it holds); k is 0 here unless the key ended inside
	 * the first block, and then rest is 0 */
	k |= ks_kle32(l->key, m + (rest & ~3U)) &
	     ((1U << (8 * (rest & 3))) - 1);
	total = nd->len + l->len;
	v = ks_rdv_rank(ks_mm3_final(l->mh, k, total & 3, total), nd->rank);
	if (!i || v > l->best) {
		l->best = v;
		l->owner = i;
	}
	return 0;
}

/* 1 when the sampled key has a byte >= 0x80: a global function, so the
 * walk over its words forks the verifier once, not once per exit. */
__noinline int ks_ring_key_high(struct ks_scratch *s)
{
	__u64 any = 0;
	__u32 i, len, last;

	if (!s)
		return 0;
	len = s->ring_len;
	if (len > KS_MAX_KEY_LEN)
		len = KS_MAX_KEY_LEN;
	if (!len)
		return 0;
	last = (len - 1) / 8;
	/* the whole words, then the last one masked to its len - 8 * last
	 * bytes (1..8): one fork a word, not one per mask too */
	for (i = 0; i < KS_KEY_WORDS; i++) {
		if (i >= last)
			break;
		any |= s->key[i];
	}
	any |= s->key[last & (KS_KEY_WORDS - 1)] &
	       (~0ULL >> (8 * (7 - ((len - 1) & 7))));
	return (any & 0x8080808080808080ULL) != 0;
}

/*
 * The owner of the key in s->key on half's pymemcache ring, or
 * KS_RING_UNPLACED when the key has a byte >= 0x80: pymemcache hashes a
 * str key's characters, and decoding UTF-8 here is not worth it (user
 * space does, ks_pymemcache_units). KS_NO_SHARD for a half that holds no
 * such ring.
 */
__noinline __u32 ks_ring_rdv(struct ks_scratch *s, __u32 half)
{
	struct ks_rdv_loop l = {};
	struct ks_ring_half *h;
	__u32 n;

	if (!s)
		return KS_NO_SHARD;
	h = bpf_map_lookup_elem(&ks_ring, &half);
	if (!h)
		return KS_NO_SHARD;
	n = h->meta.nshards;
	if (n == 0 || n > KS_RDV_MAX_NODES)
		return KS_NO_SHARD;
	if (ks_ring_key_high(s))
		return KS_RING_UNPLACED;
	l.len = s->ring_len;
	if (l.len > KS_MAX_KEY_LEN)
		l.len = KS_MAX_KEY_LEN;
	l.h = h;
	l.key = (const __u8 *)s->key;
	bpf_loop(n, ks_rdv_node_cb, &l, 0);
	return l.owner;
}

/*
 * ks_ring_rdv() through the ring cache: a slot keeps the winner's index
 * in place of a key hash, under the ring's identity as for a key hash
 * (the winner depends on the nodes, which the digest covers). Inline for
 * the same reason as ks_ring_owner_cached().
 */
static __always_inline __u32 ks_ring_rdv_cached(struct ks_scratch *s,
						const struct ks_ring_meta *m,
						__u32 half)
{
	__u64 id = ks_ring_cache_id(m->version, m->digest);
	__u64 hit = ks_ring_cache_find(s, m->dist, id);
	__u32 owner;

	if (hit)
		return (__u32)hit;
	owner = ks_ring_rdv(s, half);
	if (owner < KS_MAX_SHARDS)
		ks_ring_cache_keep(s, m->dist, id, owner, 0);
	return owner;
}

/*
 * Places the key sampled last (still in s->key) on the active ring and
 * counts it for its owner: s->place_w, the sampled keys it stands for
 * (s->place_p, ks_place_next), added to the owner's reads or writes,
 * and to its misdirected keys when this host is not the owner. ks_pkts
 * counts the placement itself (RING_HIT, MISDIRECTED: one each). Called
 * from the top of the parse loop and the fast path, not from where the
 * key is sampled: the MD5 needs stack, and the deepest sampling chain has
 * none left to give.
 */
__noinline int ks_ring_place(struct ks_scratch *s)
{
	struct ks_pkt_counters *pc;
	struct ks_shard_stats *st;
	struct ks_ring_half *h;
	__u32 half, owner, w;

	if (!s)
		return 0;
	s->ring_pending = 0;
	half = s->ring & 1;
	h = bpf_map_lookup_elem(&ks_ring, &half);
	if (!h || h->meta.nshards == 0)
		return 0;
	/* one shard owns every key: no hash needed (an MD5 is ~180 ns) */
	if (h->meta.nshards == 1)
		owner = 0;
	else if ((owner = ks_dedicated_place(s, half, h->meta.nshards)) !=
		 KS_NO_SHARD)
		; /* a shard rule's key: its named shard (ks_dedicated.h) */
	else if (h->meta.dist == KS_DIST_PYMEMCACHE)
		owner = ks_ring_rdv_cached(s, &h->meta, half);
	else
		owner = ks_ring_owner_cached(s, h);
	if (owner == KS_RING_UNPLACED) {
		ks_count_pkt(KS_PKT_RING_UNPLACED);
		return 0;
	}
	st = bpf_map_lookup_elem(&ks_shards, &owner);
	if (!st)
		return 0;
	w = s->place_w;
	if (s->ring_cls == KS_CLASS_READ)
		st->reads += w;
	else
		st->writes += w;
	pc = ks_pkt_counters();
	if (pc)
		pc->n[KS_PKT_RING_HIT]++;
	if (h->meta.self == KS_NO_SHARD || owner == h->meta.self)
		return 1;
	st->misdirected += w;
	if (pc)
		pc->n[KS_PKT_MISDIRECTED]++;
	ks_ring_note_client(s, owner, s->ring_hash);
	return 1;
}

/*
 * The placement's countdown after one more sampled read or write, as
 * ks_sample_due() counts keys: 0 when this one is placed. 1 in
 * s->place_p of them is, each standing for place_p (issue 27): the
 * agent raises P on a CPU whose sampled keys a second outrun its
 * placement target (user/core/sample_rate.h ks_place_next), so a
 * placement's MD5 and cold ring lines cost a bounded share of the CPU
 * at any load, and keeps it 1 below the target (every sampled key
 * placed, as before). Both paths count the same keys (the express
 * path's sampled lone get, the general path's ks_ring_defer()), and
 * the countdown runs with no ring loaded too, so it does not depend on
 * which path took a key.
 */
static __always_inline __u32 ks_place_next(const struct ks_scratch *s)
{
	__u32 n = s->place_cd;

	if (n == 0 || n > s->place_p)
		n = s->place_p;
	return n - 1;
}

/* A sampled read or write waits for ks_ring_place(), when due. */
static __always_inline void ks_ring_defer(struct ks_scratch *s, __u32 len,
					  __u32 cls, __u64 hash)
{
	__u32 next = ks_place_next(s);

	s->place_cd = next;
	if (next)
		return;
	s->ring_pending = 1;
	s->ring_len = len;
	s->ring_cls = cls;
	s->ring_hash = hash;
}

static __always_inline void ks_ring_flush(struct ks_scratch *s)
{
	if (s->ring_pending)
		ks_ring_place(s);
}

#endif
