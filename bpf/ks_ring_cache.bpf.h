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
 * fresh load starting cold costs one MD5 per key once. One CPU's slots
 * here: every loader sizes it to the host's possible CPUs before the load
 * (ks_cpu_maps_size, user/dp/cpu_maps.c); a CPU past its end finds no
 * slot and places every key by the MD5, as a miss would. Mmapable only
 * for its page-aligned values (ks_ring_cache.h); nothing maps it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KS_RING_CACHE_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct ks_ring_cache_slot);
} ks_ring_cache SEC(".maps");

/* The sampled key's slot on this CPU: a plain array's lookup is an
 * address computed from the index, where a per-CPU array's first loads
 * its pointer table's entry (a cold line at line rate). The program runs
 * with migration off, so the find and the keep of one key use one CPU's
 * slot. */
static __always_inline struct ks_ring_cache_slot *ks_ring_cache_slot_of(
	const struct ks_scratch *s)
{
	__u32 idx = bpf_get_smp_processor_id() * KS_RING_CACHE_SLOTS +
		    ks_ring_cache_index(s->ring_hash);

	return bpf_map_lookup_elem(&ks_ring_cache, &idx);
}

/*
 * The ring hash of the sampled key (s->key, s->ring_len, s->ring_hash) as
 * last computed under a ring of this dist and version: owner1 << 33 | 1 <<
 * 32 | hash (owner1: the slot's owner + 1, 0 when not known), or 0 when
 * the slot holds anything else.
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
	return (__u64)c->owner1 << 33 | 1ULL << 32 | c->ring_hash;
}

/* Remembers ring_hash and owner1 (the owner + 1, or 0) for the sampled
 * key, in place of the slot's key. */
__noinline int ks_ring_cache_keep(struct ks_scratch *s, __u32 dist,
				  __u64 version, __u32 ring_hash, __u32 owner1)
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
	c->owner1 = owner1;
	c->len = s->ring_len;
	return 0;
}

#endif
