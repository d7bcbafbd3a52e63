/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_ring_cache.bpf.h - the datapath's side of ks_ring_cache.h: a sampled
 * key's ring hash looked up before it is computed, and kept after.
 * Both are global functions, so the verifier walks each key-length loop
 * once, not once per path into the ring placement.
 */
#ifndef KS_RING_CACHE_BPF_H
#define KS_RING_CACHE_BPF_H

#include "ks_ring_cache.h"
#include "ks_scratch.bpf.h"

/* Private to one load, like the scratch: nothing outside reads it, and a
 * fresh load starting cold costs one MD5 per key once. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KS_RING_CACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct ks_ring_cache_slot);
} ks_ring_cache SEC(".maps");

/* The sampled key's slot on this CPU. */
static __always_inline struct ks_ring_cache_slot *ks_ring_cache_slot_of(
	const struct ks_scratch *s)
{
	__u32 idx = ks_ring_cache_index(s->ring_hash);

	return bpf_map_lookup_elem(&ks_ring_cache, &idx);
}

/*
 * The ring hash of the sampled key (s->key, s->ring_len, s->ring_hash) as
 * last computed under a ring of this dist and version: 1 << 32 | hash, or
 * 0 when the slot holds anything else.
 */
__noinline __u64 ks_ring_cache_find(struct ks_scratch *s, __u32 dist,
				    __u64 version)
{
	struct ks_ring_cache_slot *c;
	__u32 i, words;

	if (!s)
		return 0;
	c = ks_ring_cache_slot_of(s);
	if (!c || c->len != s->ring_len || c->key_hash != s->ring_hash ||
	    c->version != version || c->dist != dist)
		return 0;
	words = (s->ring_len + 7) / 8;
	/* the key bytes themselves: a 64-bit hash collision is a miss */
	for (i = 0; i < KS_KEY_WORDS; i++) {
		if (i >= words)
			break;
		if (c->key[i] != s->key[i])
			return 0;
	}
	return 1ULL << 32 | c->ring_hash;
}

/* Remembers ring_hash for the sampled key, in place of the slot's key. */
__noinline int ks_ring_cache_keep(struct ks_scratch *s, __u32 dist,
				  __u64 version, __u32 ring_hash)
{
	struct ks_ring_cache_slot *c;
	__u32 i, words;

	if (!s)
		return 0;
	c = ks_ring_cache_slot_of(s);
	if (!c)
		return 0;
	words = (s->ring_len + 7) / 8;
	for (i = 0; i < KS_KEY_WORDS; i++) {
		if (i >= words)
			break;
		c->key[i] = s->key[i];
	}
	c->key_hash = s->ring_hash;
	c->version = version;
	c->dist = dist;
	c->ring_hash = ring_hash;
	c->len = s->ring_len;
	return 0;
}

#endif
