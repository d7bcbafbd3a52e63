/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_dedicated.h - dedicated shards in the datapath's counting, shared
 * with the agent that fills the maps (user/dp/dedicated_map.c) and the
 * program tests (docs/placement.md, "Dedicated shards").
 *
 * A shard rule of the pin file ("shard KEY NAME", "shard PREFIX* NAME")
 * places a key on a named shard instead of its ring owner. The datapath
 * counts a sampled key on that shard (ks_shards) and judges misdirection
 * against it. Exact keys are in a hash map keyed by the key's 64-bit
 * ks_key_hash, whose value holds the key's words: a hash collision with
 * another key is compared away, never counted on the tenant's shard.
 * Prefixes are in an LPM trie over the key's first KS_DEDICATED_PREFIX_MAX
 * bytes: the longest matching prefix wins, as ks_hot_shard_match() does
 * in user space, in one kernel lookup whatever the number of rules.
 *
 * Each value holds the shard's index in both ring halves (a ring may list
 * the shards in another order, or not have the shard): the agent writes
 * the idle half's index before it flips the ring (ks_ring_push), so a
 * packet reads the index of the half it placed on, never an index of the
 * other ring. KS_NO_SHARD in a half: the rule's shard is not in that ring
 * and the key goes to its ring owner (counted, KS_DED_ORPHAN).
 *
 * Include order as for keysteer.h (vmlinux.h first in BPF code).
 */
#ifndef KS_DEDICATED_H
#define KS_DEDICATED_H

#include "keysteer.h"

#define KS_DEDICATED_MAX        64 /* rules of each kind: a pin file's */
#define KS_DEDICATED_PREFIX_MAX 64 /* bytes of a prefix rule */
#define KS_DEDICATED_HALVES     2  /* KS_RING_HALVES */

struct ks_dedicated_exact {
	__u32 shard[KS_DEDICATED_HALVES]; /* per ring half; KS_NO_SHARD */
	__u32 len;                        /* key bytes, 1..KS_MAX_KEY_LEN */
	__u32 pad;
	__u64 key[KS_KEY_WORDS]; /* zero past len, as the scratch's key */
};
_Static_assert(sizeof(struct ks_dedicated_exact) == 16 + KS_KEY_BUF,
	       "ks_dedicated_exact layout");

/* The LPM trie's key: prefixlen in bits (8 x bytes), then the bytes. */
struct ks_dedicated_lpm_key {
	__u32 prefixlen;
	__u8 data[KS_DEDICATED_PREFIX_MAX];
};
_Static_assert(sizeof(struct ks_dedicated_lpm_key) ==
		       4 + KS_DEDICATED_PREFIX_MAX,
	       "ks_dedicated_lpm_key layout");

struct ks_dedicated_prefix {
	__u32 shard[KS_DEDICATED_HALVES]; /* per ring half; KS_NO_SHARD */
};
_Static_assert(sizeof(struct ks_dedicated_prefix) == 8,
	       "ks_dedicated_prefix layout");

/* How many rules of each kind the maps hold: 0 and 0 skip both lookups,
 * so a datapath without shard rules pays one array read per placed key.
 * first: a bit per value of a rule key's first byte; a key whose first
 * byte no rule has skips both lookups too (with rules in the maps, the
 * two lookups cost a sampled key ~65 ns, the bit test ~1). */
struct ks_dedicated_meta {
	__u32 exact;
	__u32 prefix;
	__u64 first[4];
};
_Static_assert(sizeof(struct ks_dedicated_meta) == 40,
	       "ks_dedicated_meta layout");

/* Whether meta's first-byte set holds byte b. */
static inline int ks_dedicated_first(const struct ks_dedicated_meta *m, __u8 b)
{
	return (m->first[(b >> 6) & 3] >> (b & 63)) & 1;
}

/* Per-CPU counters of ks_dedicated_stats, summed by the reader. */
enum ks_ded_stat {
	KS_DED_EXACT = 0, /* placed on a shard by an exact rule */
	KS_DED_PREFIX,    /* placed on a shard by a prefix rule */
	KS_DED_COLLISION, /* an exact rule's key hash, another key */
	KS_DED_ORPHAN,    /* a rule whose shard is not in the ring */
	KS_DED_STAT_MAX,
};

struct ks_dedicated_stats {
	__u64 n[KS_DED_STAT_MAX];
};

#endif /* KS_DEDICATED_H */
