/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dedicated.h - dedicated shards (docs/placement.md, "Dedicated shards"):
 * the shard rules of a pin file (hotkeys.h, "shard KEY NAME" and "shard
 * PREFIX* NAME") resolved against a ring's shard list, and the placement
 * of a key under them. One definition for the agent (its datapath maps,
 * user/dp/dedicated_map.c), 'agent ring lookup' and libkeysteer's view.
 * Pure code: no I/O.
 *
 * A rule names its shard as the ring lists it: "host:port" (the address
 * every other command takes) or the shard's optional name from a shard
 * file. A rule whose shard is not in the ring places nothing: its keys
 * stay with their ring owner, on every side alike, until a ring that has
 * the shard again.
 */
#ifndef KS_DEDICATED_CORE_H
#define KS_DEDICATED_CORE_H

#include <stddef.h>
#include "core/hotkeys.h"
#include "core/shards.h"

/* The index of the shard name names in s ("host:port", else a shard's
 * name), or -1. */
int ks_dedicated_shard_index(const struct ks_shards *s, const char *name);

/*
 * Resolves every rule of r into idx[i] (r->n entries): the shard's index
 * in s for a shard rule, -1 for other rules and for a shard not in s.
 * Returns how many shard rules name a shard s lacks.
 */
size_t ks_dedicated_resolve(const struct ks_hot_rules *r,
			    const struct ks_shards *s, int *idx);

/* The number of shard rules in r. */
size_t ks_dedicated_count(const struct ks_hot_rules *r);

/*
 * The first shard rule of r whose shard s lacks: 0 when none, else
 * -ENOENT with err "shard RULE: no shard NAME in the ring (SOURCE, N
 * shards: HOST:PORT, ...)". A check for where a ring is known when the
 * rules are written (agent run with --shards, agent pins set).
 */
int ks_dedicated_check(const struct ks_hot_rules *r, const struct ks_shards *s,
		       char *err, size_t errlen);

/*
 * The shard index the rules place key on (idx as ks_dedicated_resolve
 * filled it), or -1: no rule, or its shard is not in the ring, and the
 * ring's owner has the key. *rule (may be NULL) is the matching rule.
 */
int ks_dedicated_place(const struct ks_hot_rules *r, const int *idx,
		       const void *key, size_t len,
		       const struct ks_hot_rule **rule);

#endif
