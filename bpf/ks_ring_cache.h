/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_ring_cache.h - the ring key hash of keys sampled before (map
 * ks_ring_cache, per CPU), shared with the program tests that plant
 * entries in it.
 *
 * Why: placing a sampled key on a ketama ring costs one MD5 per 64-byte
 * block (~170 ns for a short key, ~750 ns for a 250-byte one), yet the keys
 * worth sampling are the ones that come back. A slot remembers the ring
 * hash of one key, so a key seen before pays a compare instead.
 *
 * What is cached is the key's position on the ring (ks_ring_key_hash()),
 * not its owner: the owner is still searched on the active half, so a ring
 * flip can never hand out an owner from the ring before. The position
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
 */
#ifndef KS_RING_CACHE_H
#define KS_RING_CACHE_H

#include "keysteer.h"

#define KS_RING_CACHE_SLOTS 1024 /* direct mapped, per CPU: 288 KiB each */

struct ks_ring_cache_slot {
	__u64 key_hash;  /* ks_key_hash() of the key */
	__u64 version;   /* ks_ring_cache_id() of the ring it was placed on */
	__u32 dist;      /* enum ks_dist of that ring */
	__u32 len;       /* key length; 0 = an empty slot */
	__u32 ring_hash; /* ks_ring_key_hash(dist, key, len); pymemcache:
			  * the owner */
	__u32 pad;
	__u64 key[KS_KEY_WORDS]; /* the first (len + 7) / 8 words matter */
};
_Static_assert(sizeof(struct ks_ring_cache_slot) == 32 + KS_KEY_BUF,
	       "ks_ring_cache_slot layout");

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
