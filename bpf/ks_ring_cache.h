/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_ring_cache.h - the ring key hash of keys sampled before (map
 * ks_ring_cache, per CPU), shared with the program tests that plant
 * entries in it.
 *
 * Why: placing a sampled key on a ketama ring costs one MD5 per 64-byte
 * block (~170 ns for a short key, ~750 ns for a 250-byte one; 35-50 and
 * ~210 ns less since issue 27's cheaper block), yet the keys worth
 * sampling are the ones that come back. A slot remembers the ring
 * hash of one key, so a key seen before pays a compare instead.
 *
 * What is cached is the key's position on the ring (ks_ring_key_hash())
 * and, beside it, its owner on that ring: the owner's search reads two
 * lines that line rate finds cold (~95 ns a sampled key, issue 27,
 * docs/benchmarks.md "Where a ringed sampled key's time goes"). Both are
 * kept under the ring's identity, which covers the points, so a ring flip
 * is a miss and can never hand out an owner from the ring before. The position
 * depends on the key, the distribution and the ring's key hash and tag; a
 * slot also carries the ring's identity, ks_ring_cache_id(): its
 * meta.version xor meta.digest (the contents, key hash and tag included),
 * so another ring is a miss even when it was written with the same
 * version, as tests and a hand-written half may.
 * A hit needs the same 64-bit key hash, ring identity, distribution,
 * length and key bytes, so a key hash collision is a miss, never a wrong
 * position.
 *
 * pymemcache's rendezvous hashing has no key position: its slots hold the
 * winning shard's index as ring_hash (ks_ring_rdv_cached in
 * ks_ring.bpf.h).
 *
 * Where a slot lives (issue 27, docs/benchmarks.md "The ring cache's
 * find in one line"): at line rate the find's reads are cold, and a
 * per-CPU array's lookup reads two of them one after the other: the
 * map's pointer table (pptrs[idx]), then the slot. So the cache is a
 * plain array of possible CPUs x KS_RING_CACHE_SLOTS slots, CPU c's slot
 * i at c * KS_RING_CACHE_SLOTS + i, its address computed, not loaded
 * (the loader sizes it, user/dp/cpu_maps.c). Each slot is 5 whole cache
 * lines in a page-aligned (mmapable) array, so the head (the identity
 * and the first 32 key bytes) is one line: a hit on a key of up to 32
 * bytes reads one line, and longer keys read the lines after it.
 */
#ifndef KS_RING_CACHE_H
#define KS_RING_CACHE_H

#include "keysteer.h"

#define KS_RING_CACHE_SLOTS 1024 /* direct mapped, per CPU: 320 KiB each */

struct ks_ring_cache_slot {
	__u64 key_hash;  /* ks_key_hash() of the key */
	__u64 version;   /* ks_ring_cache_id() of the ring it was placed on */
	__u32 dist;      /* enum ks_dist of that ring */
	__u32 len;       /* key length; 0 = an empty slot */
	__u32 ring_hash; /* ks_ring_key_hash(dist, key, len); pymemcache:
			  * the owner */
	__u32 owner1;    /* the owner on that ring + 1, 0 = not known (a
			  * hit then searches the ring for it) */
	__u64 key[KS_KEY_WORDS]; /* the first (len + 7) / 8 words matter */
	__u64 pad[4];            /* to whole lines: each slot starts a line */
};
_Static_assert(sizeof(struct ks_ring_cache_slot) == 64 + KS_KEY_BUF,
	       "ks_ring_cache_slot layout");
_Static_assert(sizeof(struct ks_ring_cache_slot) % 64 == 0,
	       "a slot is whole cache lines, its head one line");

/* The slot of a key, from its 64-bit key hash. */
static inline __u32 ks_ring_cache_index(__u64 key_hash)
{
	return (__u32)(key_hash >> 44) % KS_RING_CACHE_SLOTS;
}

/* The identity of a ring half a slot was filled from. */
static inline __u64 ks_ring_cache_id(__u64 version, __u64 digest)
{
	return version ^ digest;
}

#endif /* KS_RING_CACHE_H */
