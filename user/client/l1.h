/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * l1.h - a handle's in-process L1 (docs/client.md, "The L1"): values of
 * armed hot keys kept in the caller's memory, bounded in keys and bytes
 * (least recently used out first) and in time (a TTL cap), each stamped
 * with the version of the key's hot/ entry it was read under.
 *
 * A lookup gives the version the view holds now: an entry stamped with
 * another one (the key turned dirty, was armed again after a write, or is
 * no longer armed: 0) is dropped there and then, so the drop on an etcd
 * event happens at the first read after the view applied it, under the
 * handle's lock the view is read with. Pure code, no I/O, no locks: one
 * handle's thread owns it.
 */
#ifndef KSC_L1_H
#define KSC_L1_H

#include <stddef.h>
#include <linux/types.h>
#include "core/mc_key.h"

#define KSC_L1_ANY   (-1) /* a lookup that does not check the version */
#define KSC_L1_NONE  0xffffffffu
#define KSC_L1_KEYS  1000000u    /* at most, l1_keys= */
#define KSC_L1_BYTES (16u << 20) /* l1_bytes= by default */

struct ksc_l1_entry {
	__u64 hash;
	__s64 stamp;      /* the hot/ entry's version it was read under */
	__u64 expires_ms; /* the TTL cap, or the item's own TTL if sooner */
	char *value;      /* malloc'd, len bytes plus a NUL */
	size_t len;
	__u32 flags;
	__u32 hnext;      /* the next entry of its bucket */
	__u32 prev, next; /* the recency list, most recent first */
	__u16 klen;       /* 0: a free slot */
	__u8 key[KS_MC_KEY_MAX];
};

/* What happened to entries, for keysteer_stats. */
struct ksc_l1_counts {
	__u64 hits, misses;
	__u64 drops;       /* the view's version differs (an etcd event) */
	__u64 write_drops; /* the handle's own writes */
	__u64 flushes;     /* whole flushes of a non-empty L1 (watch drops) */
	__u64 evictions;   /* for the bounds */
	__u64 expired;     /* past their TTL */
};

struct ksc_l1 {
	unsigned max_keys, ttl_ms;
	size_t max_bytes;
	unsigned n;   /* entries */
	size_t bytes; /* their keys' and values' bytes */
	struct ksc_l1_entry *e;
	__u32 *bucket; /* nbucket heads, a power of two */
	__u32 nbucket;
	__u32 head, tail, free; /* recency list ends; free slots by hnext */
	struct ksc_l1_counts c;
};

/* An empty L1 of max_keys (1..KSC_L1_KEYS) entries and max_bytes, whose
 * entries live at most ttl_ms. 0, or -EINVAL, -ENOMEM. */
int ksc_l1_init(struct ksc_l1 *l, unsigned max_keys, size_t max_bytes,
		unsigned ttl_ms);
void ksc_l1_free(struct ksc_l1 *l);

/*
 * The entry of key when it is there, not expired at now_ms, and stamped
 * with stamp (KSC_L1_ANY: any), counted as a hit; NULL (a miss) else, the
 * entry dropped when it was there (expired, or another version). The
 * entry stays valid until the next call on l.
 */
const struct ksc_l1_entry *ksc_l1_get(struct ksc_l1 *l, const void *key,
				      size_t klen, __u64 hash, __s64 stamp,
				      __u64 now_ms);

/*
 * Keeps a copy of value for key, read under stamp (> 0), for the TTL cap
 * or ttl_s (the item's remaining seconds, -1: none) if sooner, in place of
 * any entry it had; the least recently used go first to make room. 0,
 * 1 when not kept (too big for the bounds, a TTL of 0), -ENOMEM.
 */
int ksc_l1_put(struct ksc_l1 *l, const void *key, size_t klen, __u64 hash,
	       __s64 stamp, const void *value, size_t len, __u32 flags,
	       long ttl_s, __u64 now_ms);

/* Drops key's entry (a write through this handle): 1 if it had one. */
int ksc_l1_drop(struct ksc_l1 *l, const void *key, size_t klen, __u64 hash);

/* Drops every entry (the watch dropped: events may have been missed). */
void ksc_l1_flush(struct ksc_l1 *l);

#endif
