/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_dedicated.bpf.h - the datapath's side of ks_dedicated.h: the shard a
 * shard rule gives a sampled key, looked up before the ring is searched.
 * Only sampled keys are placed (ks_ring_place), so an unsampled request
 * never comes here; a placed key with no rule in the maps pays one array
 * read (ks_dedicated_meta) and a branch.
 */
#ifndef KS_DEDICATED_BPF_H
#define KS_DEDICATED_BPF_H

#include "ks_dedicated.h"
#include "ks_scratch.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_dedicated_meta);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_ded_meta SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KS_DEDICATED_MAX);
	__type(key, __u64); /* ks_key_hash() of the key */
	__type(value, struct ks_dedicated_exact);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_ded_exact SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, KS_DEDICATED_MAX);
	__type(key, struct ks_dedicated_lpm_key);
	__type(value, struct ks_dedicated_prefix);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* an LPM trie requires it */
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_ded_prefix SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_dedicated_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_ded_stats SEC(".maps");

/* The LPM lookup's key, built per CPU: 68 bytes the BPF stack of the
 * placing chain has no room for. Private to one load, like the scratch. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_dedicated_lpm_key);
} ks_ded_lpm_buf SEC(".maps");

static __always_inline void ks_ded_count(__u32 what)
{
	__u32 zero = 0;
	struct ks_dedicated_stats *st = bpf_map_lookup_elem(&ks_ded_stats,
							    &zero);

	if (st && what < KS_DED_STAT_MAX)
		st->n[what] += 1;
}

/* A rule's shard on the half placed on; KS_NO_SHARD (counted) when that
 * ring lacks it or the index is out of the ring's range. */
static __always_inline __u32 ks_ded_pick(const __u32 *shard, __u32 half,
					 __u32 nshards, __u32 what)
{
	__u32 owner = shard[half & 1];

	if (owner >= nshards) {
		ks_ded_count(KS_DED_ORPHAN);
		return KS_NO_SHARD;
	}
	ks_ded_count(what);
	return owner;
}

/*
 * The shard a rule gives the sampled key (s->key, s->ring_len,
 * s->ring_hash) on ring half `half` of nshards shards, or KS_NO_SHARD:
 * the ring decides. A global function: the key compare's loop is
 * verified once, whatever calls it.
 */
__noinline __u32 ks_dedicated_owner(struct ks_scratch *s, __u32 half,
				    __u32 nshards)
{
	struct ks_dedicated_lpm_key *k;
	struct ks_dedicated_exact *e;
	struct ks_dedicated_prefix *p;
	struct ks_dedicated_meta *m;
	__u32 zero = 0, len, i, words, n;

	if (!s)
		return KS_NO_SHARD;
	m = bpf_map_lookup_elem(&ks_ded_meta, &zero);
	if (!m)
		return KS_NO_SHARD;
	len = s->ring_len;
	if (len > KS_MAX_KEY_LEN)
		len = KS_MAX_KEY_LEN;
	e = m->exact ? bpf_map_lookup_elem(&ks_ded_exact, &s->ring_hash) : NULL;
	if (e) {
		/* the key's words, not only its hash: a collision is
		 * another key, which stays with its ring owner */
		words = (len + 7) / 8;
		for (i = 0; i < KS_KEY_WORDS; i++) {
			if (i >= words)
				break;
			if (e->key[i] != s->key[i])
				break;
		}
		if (e->len == len && i >= words)
			return ks_ded_pick(e->shard, half, nshards,
					   KS_DED_EXACT);
		ks_ded_count(KS_DED_COLLISION);
	}
	if (!m->prefix)
		return KS_NO_SHARD;
	k = bpf_map_lookup_elem(&ks_ded_lpm_buf, &zero);
	if (!k)
		return KS_NO_SHARD;
	n = len < KS_DEDICATED_PREFIX_MAX ? len : KS_DEDICATED_PREFIX_MAX;
	/* the first 64 bytes whatever len: bits past prefixlen are not
	 * compared by the trie */
	__builtin_memcpy(k->data, s->key, KS_DEDICATED_PREFIX_MAX);
	k->prefixlen = 8 * n;
	p = bpf_map_lookup_elem(&ks_ded_prefix, k);
	if (!p)
		return KS_NO_SHARD;
	return ks_ded_pick(p->shard, half, nshards, KS_DED_PREFIX);
}

/* ks_dedicated_owner() behind the cheap test: no rules, no call. */
static __always_inline __u32 ks_dedicated_place(struct ks_scratch *s,
						__u32 half, __u32 nshards)
{
	__u32 zero = 0;
	struct ks_dedicated_meta *m = bpf_map_lookup_elem(&ks_ded_meta, &zero);

	if (!m || (!m->exact && !m->prefix))
		return KS_NO_SHARD;
	/* the key's first byte: the low byte of its first word */
	if (!s || !ks_dedicated_first(m, (__u8)s->key[0]))
		return KS_NO_SHARD;
	return ks_dedicated_owner(s, half, nshards);
}

#endif
