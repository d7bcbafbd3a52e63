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

/* Block b of the key's MD5: verified once, whatever b and len. */
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

/* twemproxy's FNV-1a of the key in s->key, in a function of its own. */
__noinline __u32 ks_ring_fnv(struct ks_scratch *s, __u32 len)
{
	return s ? ks_fnv1a64_tw_key(s->key, len) : 0;
}

/*
 * libmemcached's one_at_a_time and dalli's crc32 of the key in s->key, a
 * byte per bpf_loop callback: the verifier checks a callback a couple of
 * times, not once per byte. Measured (build/tests/ks_vcount, ks_ingress):
 * a loop of 32 words with an exit per byte added 43,000 instructions for
 * the two hashes, a word per callback 1,745, a byte per callback 444.
 */
struct ks_ring_bytes {
	struct ks_scratch *s;
	__u32 len;
	__u32 h;
	__u32 crc; /* 1: crc32, 0: one_at_a_time */
};

static long ks_ring_hash_byte(__u32 i, void *ctx)
{
	struct ks_ring_bytes *x = ctx;
	__u8 b;

	if (i >= KS_KEY_BUF || !x->s)
		return 1;
	/* clang indexes with a copy of i the compare did not bound */
	KS_OPAQUE(i);
	i &= KS_KEY_BUF - 1;
	b = ((const __u8 *)x->s->key)[i];
	x->h = ks_bytes_step(x->h, b, x->crc);
	return 0;
}

/* dalli's crc32 (crc 1) or one_at_a_time (crc 0) of the key in s->key:
 * one callback for both, so the verifier walks it once. Inline: with the
 * ring cache's ks_ring_hash_cached the chain down to the callback would
 * be one frame over the kernel's 8. */
static __always_inline __u32 ks_ring_bytes_hash(struct ks_scratch *s,
						__u32 len, __u32 crc)
{
	struct ks_ring_bytes x = { .s = s, .len = len, .crc = crc };

	if (!s)
		return 0;
	if (x.len > KS_MAX_KEY_LEN)
		x.len = KS_MAX_KEY_LEN;
	x.h = crc ? 0xffffffffU : 0;
	bpf_loop(x.len, ks_ring_hash_byte, &x, 0);
	return crc ? ~x.h : ks_oaat_final(x.h);
}

/*
 * The key hash of the ring's distribution for the key in s->key (len >=
 * 1: the datapath never samples an empty key), as ks_ring_key_hash() in
 * ks_ring.h computes it. MD5's working memory lives in the scratch, as the
 * 512-byte BPF stack is shared by the whole call chain.
 */
__noinline __u32 ks_ring_hash(struct ks_scratch *s, __u32 len, __u32 dist)
{
	__u32 b, nblocks;

	if (!s)
		return 0;
	if (dist == KS_DIST_TWEMPROXY)
		return ks_ring_fnv(s, len);
	if (dist == KS_DIST_KETAMA_PLAIN || dist == KS_DIST_MODULA_OAAT)
		return ks_ring_bytes_hash(s, len, 0);
	if (dist == KS_DIST_DALLI) /* dalli's ring is stored complemented */
		return ~ks_ring_bytes_hash(s, len, 1);
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

/*
 * ks_ring_hash() of the sampled key, from the cache when the key was
 * seen before (ks_ring_cache.h). Global: the owner search that follows
 * is walked once, not once per cache outcome.
 */
__noinline __u32 ks_ring_hash_cached(struct ks_scratch *s, __u32 dist,
				     __u64 version)
{
	__u64 hit = ks_ring_cache_find(s, dist, version);
	__u32 hash;

	if (!s)
		return 0;
	if (hit)
		return (__u32)hit;
	hash = ks_ring_hash(s, s->ring_len, dist);
	ks_ring_cache_keep(s, dist, version, hash);
	return hash;
}

/*
 * Places the key sampled last (still in s->key) on the active ring and
 * counts it for its owner. Called from the top of the parse loop and the
 * fast path, not from where the key is sampled: the MD5 needs stack, and
 * the deepest sampling chain has none left to give.
 */
__noinline int ks_ring_place(struct ks_scratch *s)
{
	struct ks_pkt_counters *pc;
	struct ks_shard_stats *st;
	struct ks_ring_half *h;
	__u32 half, owner;

	if (!s)
		return 0;
	s->ring_pending = 0;
	half = s->ring & 1;
	h = bpf_map_lookup_elem(&ks_ring, &half);
	if (!h || h->meta.nshards == 0)
		return 0;
	/* one shard owns every key: no hash needed (an MD5 is ~180 ns) */
	owner = h->meta.nshards == 1
			? 0
			: ks_ring_owner(h,
					ks_ring_hash_cached(s, h->meta.dist,
							    h->meta.version));
	st = bpf_map_lookup_elem(&ks_shards, &owner);
	if (!st)
		return 0;
	if (s->ring_cls == KS_CLASS_READ)
		st->reads++;
	else
		st->writes++;
	pc = ks_pkt_counters();
	if (pc)
		pc->n[KS_PKT_RING_HIT]++;
	if (h->meta.self == KS_NO_SHARD || owner == h->meta.self)
		return 1;
	st->misdirected++;
	if (pc)
		pc->n[KS_PKT_MISDIRECTED]++;
	ks_ring_note_client(s, owner, s->ring_hash);
	return 1;
}

/* A sampled read or write waits for ks_ring_place(). */
static __always_inline void ks_ring_defer(struct ks_scratch *s, __u32 len,
					  __u32 cls, __u64 hash)
{
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
