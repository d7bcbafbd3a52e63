/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * run_dedicated.h - dedicated shards in 'agent run': the shard rules of
 * the pins in force (the --pins file's or the fleet's) kept in the
 * datapath's maps (dp/dedicated_map.h), each rule's shard resolved
 * against the ring of each half: for a ring about to be pushed before its
 * flip, and for the live ring whenever the rules or the ring changed. A
 * rule whose shard the ring lacks is logged once and written as no shard:
 * its keys are counted for their ring owner until a ring has it again.
 */
#ifndef KS_RUN_DEDICATED_H
#define KS_RUN_DEDICATED_H

#include "core/hotkeys.h"
#include "core/shards.h"
#include "dp/dedicated_map.h"

struct ks_run_purge;

struct ks_run_ded {
	struct ks_ded_fds fds;
	int open;                  /* the maps are open */
	struct ks_hot_rules rules; /* what the maps hold: shard rules only */
	struct ks_hot_rules next;  /* the shard rules in force, compared */
	int idx[KS_DEDICATED_HALVES][KS_HOT_RULES_MAX];
	__u64 ring_version; /* the live ring's the maps were written for */
	int written;        /* the maps hold rules and ring_version's ring */
	size_t lost;        /* shard rules the live ring has no shard for */
	/* told of every new rule set: a purge must not delete a tenant's
	 * keys from its dedicated shard (NULL: no purge) */
	struct ks_run_purge *purge;
};

/* After attach: opens the maps in pin_dir (a datapath without them is
 * logged: no dedicated shards in its counting). */
void ks_run_ded_start(struct ks_run_ded *d, const char *pin_dir);

/* Before a ring is pushed into half idle: its shard indexes written
 * there, so the packets that read the new half count for it at once. */
void ks_run_ded_ring(struct ks_run_ded *d, const struct ks_shards *next,
		     __u32 idle);

/* The rules and the live ring now (ring_version: its version); the maps
 * are rewritten when either changed. NULL live: no ring. */
void ks_run_ded_sync(struct ks_run_ded *d, const struct ks_hot_rules *rules,
		     const struct ks_shards *live, __u64 ring_version);

/* The shard index the rules in force give key on the live ring, or -1
 * (no rule, or its shard not in the ring). */
int ks_run_ded_owner(const struct ks_run_ded *d, const void *key, size_t len);

void ks_run_ded_free(struct ks_run_ded *d);

#endif
