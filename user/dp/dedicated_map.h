/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dedicated_map.h - the shard rules in the datapath's maps
 * (bpf/ks_dedicated.h): opened from the pin directory, written whole from
 * a rule set and each ring half's shard indexes, and the per-CPU hit
 * counters summed. The one writer of those maps: the agent.
 */
#ifndef KS_DEDICATED_MAP_H
#define KS_DEDICATED_MAP_H

#include "ks_dedicated.h"
#include "core/hotkeys.h"

struct ks_ded_fds {
	int meta, exact, prefix, stats; /* -1: not open */
};

/* Opens the four pinned maps of pin_dir: 0, or -errno (a datapath loaded
 * before dedicated shards has none: -ENOENT). */
int ks_ded_open(struct ks_ded_fds *f, const char *pin_dir);
void ks_ded_close(struct ks_ded_fds *f);

/*
 * Makes the maps hold exactly r's shard rules, each rule i placing on
 * shard idx[h][i] in ring half h (-1, or an index >= KS_MAX_SHARDS: not in
 * that ring, written KS_NO_SHARD). New and changed entries first, then the
 * gone ones deleted, then the counts the datapath tests: a packet sees
 * either rule set's entries or both, never a rule with a half-written
 * value (a hash map update replaces the value whole). 0 or -errno.
 */
int ks_ded_write(const struct ks_ded_fds *f, const struct ks_hot_rules *r,
		 const int *const idx[KS_DEDICATED_HALVES]);

/* One rule as the maps hold it, for 'agent report'. */
struct ks_ded_entry {
	int prefix; /* 1: a prefix rule, else an exact key */
	__u32 len;  /* bytes of key */
	__u8 key[KS_KEY_BUF];
	__u32 shard[KS_DEDICATED_HALVES];
};

/* The rules in the maps into out[0..max): the count, or -errno. */
long ks_ded_read(const struct ks_ded_fds *f, struct ks_ded_entry *out,
		 size_t max);

/* The counters summed over CPUs. 0 or -errno. */
int ks_ded_read_stats(const struct ks_ded_fds *f, struct ks_dedicated_stats *s);

/* One rule's entry as the datapath holds it (a key's words zero past its
 * length), placing on shard[h] in ring half h. */
void ks_ded_exact_of(const struct ks_hot_rule *r, const __u32 shard[2],
		     __u64 *hash, struct ks_dedicated_exact *v);
void ks_ded_prefix_of(const struct ks_hot_rule *r, const __u32 shard[2],
		      struct ks_dedicated_lpm_key *k,
		      struct ks_dedicated_prefix *v);

#endif
