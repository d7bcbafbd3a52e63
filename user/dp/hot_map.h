/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * hot_map.h - the agent's side of the datapath's hot-key slots (map ks_hot,
 * layout and rules in bpf/keysteer.h). The map is mmapped so that each
 * field is written alone, in the order the datapath depends on, while the
 * datapath bumps write_seq in the same memory with atomics; a whole-value
 * map update would overwrite a concurrent write_seq increment.
 *
 * Life of a slot: ks_hot_map_alloc (its bucket's filter bit set, then the
 * slot disarmed, hash published last), then
 * ks_hot_map_set_copies while disarmed, ks_hot_map_arm once the replicas
 * hold the value; ks_hot_map_disarm on a change; ks_hot_map_release to
 * remove it, after which the slot is reused only once ks_hot_map_reclaim
 * has been called after an RCU grace period (ks_grace_period()), so no
 * packet still holding the old key's slot can read a new key's copies;
 * the bucket's filter bit is cleared then, when no way of it is in use.
 */
#ifndef KS_HOT_MAP_H
#define KS_HOT_MAP_H

#include <stddef.h>
#include "keysteer.h"
#include "core/steer_sched.h" /* ks_steer_schedule */

struct ks_hot_map {
	struct ks_hot_slot *slot; /* KS_HOT_SLOTS, mmapped */
	size_t map_len;
	struct ks_hot_filter *filter; /* ks_hot_filter, mmapped */
	size_t filter_len;
	int hot_fd, stats_fd, replicas_fd, rstats_fd;
	int replies_fd; /* ks_hot_replies, or -1 (ks_hot_map_use_replies) */
	int ncpu;
	__u8 releasing[KS_HOT_SLOTS]; /* released, waiting for a grace period */
	unsigned used;                /* slots with a hash */
};

/* Maps ks_hot and ks_hot_filter (both BPF_F_MMAPABLE), and sets the
 * filter's bit of every bucket that holds a key. 0 or -errno. */
int ks_hot_map_open(struct ks_hot_map *m, int hot_fd, int filter_fd,
		    int stats_fd, int replicas_fd, int rstats_fd);
void ks_hot_map_close(struct ks_hot_map *m);

/* The slot holding hash, or -1. */
int ks_hot_map_find(const struct ks_hot_map *m, __u64 hash);
/* A free slot of hash's bucket, filled with the key and published
 * disarmed; -ENOSPC when its KS_HOT_WAYS ways are taken. */
int ks_hot_map_alloc(struct ks_hot_map *m, __u64 hash, const __u8 *key,
		     __u16 len);
/* The same at slot idx, which must be free (zero, past its grace period):
 * the key, then the hash. */
void ks_hot_map_install(struct ks_hot_map *m, int idx, __u64 hash,
			const __u8 *key, __u16 len);
/*
 * Copies of a disarmed slot: ncopies - 1 replica indices, and the
 * schedule: owner_turns of every KS_STEER_SCHED reads go to the owner, the
 * rest to the replicas evenly, interleaved (smooth weighted round robin).
 */
void ks_hot_map_set_copies(struct ks_hot_map *m, int idx, __u32 ncopies,
			   const __u8 *replicas, unsigned owner_turns);
/* Steering on while write_seq stays at seq, until expires_ns. */
void ks_hot_map_arm(struct ks_hot_map *m, int idx, __u64 seq, __u64 expires_ns);
/* Steering on again until expires_ns, if armed (no-op when dirty/off). */
void ks_hot_map_extend(struct ks_hot_map *m, int idx, __u64 expires_ns);
void ks_hot_map_disarm(struct ks_hot_map *m, int idx);
void ks_hot_map_release(struct ks_hot_map *m, int idx);
/* After a grace period: released slots become free. Returns how many. */
unsigned ks_hot_map_reclaim(struct ks_hot_map *m);
/* After a grace period: slot idx (released) zeroed and free. */
void ks_hot_map_clear(struct ks_hot_map *m, int idx);
/* Any slot waiting for a grace period. */
int ks_hot_map_releasing(const struct ks_hot_map *m);

__u64 ks_hot_map_write_seq(const struct ks_hot_map *m, int idx);
__u64 ks_hot_map_last_write(const struct ks_hot_map *m, int idx);
/* Armed and not dirty (expiry aside). */
int ks_hot_map_armed(const struct ks_hot_map *m, int idx);

/* Per-CPU counters of a slot, summed. 0 or -errno. */
int ks_hot_map_stats(const struct ks_hot_map *m, int idx,
		     struct ks_hot_stats *sum);
/* The owner's replies counted at tc egress (map ks_hot_replies): read by
 * ks_hot_map_replies and zeroed with the slot's other counters. */
void ks_hot_map_use_replies(struct ks_hot_map *m, int replies_fd);
/* A slot's reply counters, summed over CPUs; 0, -ENOENT without the map,
 * or -errno. */
int ks_hot_map_replies(const struct ks_hot_map *m, int idx,
		       struct ks_hot_replies *sum);
/* Zeroes a slot's per-CPU counters (a new key in it). */
int ks_hot_map_stats_clear(const struct ks_hot_map *m, int idx);
/* Writes the replica table (n entries, the rest cleared). 0 or -errno. */
int ks_hot_map_set_replicas(const struct ks_hot_map *m,
			    const struct ks_replica *r, unsigned n);
/* Reads steered to replica i, summed over CPUs. */
int ks_hot_map_replica_steered(const struct ks_hot_map *m, unsigned i,
			       __u64 *out);

#endif
