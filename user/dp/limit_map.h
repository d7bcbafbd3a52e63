/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * limit_map.h - the rate limits' maps (bpf/ks_limit.h) from user space:
 * core/limits.h's entries written into ks_limits, their per-CPU counters
 * read and summed, the rows of ks_limit_info written for the report.
 */
#ifndef KS_LIMIT_MAP_H
#define KS_LIMIT_MAP_H

#include "core/limits.h"

struct ks_limit_map {
	int limits, stats, info, pkts; /* fds; -1: not open */
	int ncpus;
	int own;                    /* fds opened from pins: closed here */
	struct ks_limit_stats *row; /* one row, every CPU */
};

/* The maps of a loaded object by name (obj: struct bpf_object *), or the
 * pins under pin_dir when obj is NULL. 0 or -errno. */
int ks_limit_map_open(struct ks_limit_map *m, void *obj, const char *pin_dir);
void ks_limit_map_close(struct ks_limit_map *m);

/* Deletes every entry of ks_limits and zeroes every ks_limit_info row
 * (a take-over starts from the rules it has). */
int ks_limit_map_clear(struct ks_limit_map *m);

/* Writes DIRTY entries (zeroing a fresh row's counters first), deletes
 * GONE ones, then ks_limits_synced(). 0 or the first -errno. */
int ks_limit_map_sync(struct ks_limit_map *m, struct ks_limit_set *s);

/* Row id of ks_limit_stats summed over CPUs. */
int ks_limit_map_read(struct ks_limit_map *m, __u32 id,
		      struct ks_limit_stats *sum);

/* ks_limit_pkts summed over CPUs. */
int ks_limit_map_pkts(struct ks_limit_map *m, struct ks_limit_pkts *sum);

#endif
