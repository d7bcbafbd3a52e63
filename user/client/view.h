/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * view.h - the client library's view of a fleet (docs/client.md, "The
 * view"), built from the documents under /keysteer/CLUSTER/ as they arrive:
 * the ring (ring_doc.h, built exactly as the agents build it), for every
 * owner the union of the replica sets its hosts/ entries have listed, and
 * for every hot/ entry (hot_doc.h, the one reader of that schema) its
 * state, copies, read schedule and the union of the replicas every version
 * of it has listed. Pure code, no I/O and no locks: the caller serialises
 * (client.h: a follower's rwlock; lookups under its read lock change
 * nothing but a hot entry's rr, atomically).
 *
 * Every "host:port" the documents name is interned once as a server id, a
 * small integer the handle also indexes its connections by. Unions only
 * grow: a replica that stopped being listed may still hold a copy until its
 * TTL, so a write keeps invalidating it. A deleted hot/ entry is kept, not
 * live, for its replicas until ksc_view_purge drops it.
 */
#ifndef KSC_VIEW_H
#define KSC_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "keysteer.h"
#include "core/etcd_codec.h"
#include "core/hotkeys.h"
#include "core/ring.h"
#include "core/shards.h"

#define KSC_ADDR_MAX    64   /* "host:port" and its NUL */
#define KSC_SERVERS_MAX 4096 /* distinct servers one view names */
#define KSC_SEEN_MAX    16   /* replicas remembered per key or owner */
#define KSC_WHY_MAX     256
#define KSC_NONE        0xffffu /* no server */
#define KSC_PREFIX_MAX  80      /* "/keysteer/" NAME "/" and the NUL */
#define KSC_SPLIT_MAX   64      /* parts of one split counter (counter.h) */

struct ksc_server {
	char name[KSC_ADDR_MAX];
	unsigned nreps; /* replicas its hosts/ entries listed (union) */
	__u16 reps[KSC_SEEN_MAX];
};

struct ksc_hot {
	__u64 hash; /* ks_key_hash of the key; 0: a free slot */
	__u8 live;  /* 1: in etcd now; 0: deleted, kept for its replicas */
	__u8 state; /* enum ks_hot_doc_state */
	__u8 nrep;  /* replicas holding copies now (the entry's list) */
	__u8 nseen;
	__u8 mark;   /* ksc_view_load: not read again (yet) */
	__u16 owner; /* the entry's owner, a server id */
	__u16 rep[KS_MAX_COPIES - 1];
	__u16 seen[KSC_SEEN_MAX]; /* every replica any version listed */
	__u32 owner_turns;
	__u32 rr; /* the next turn of sched (atomic: readers share it) */
	__u8 sched[KS_STEER_SCHED];
	__s64 mod_rev;
	__u64 gone_ms; /* when it was deleted */
	/* L1 */
	__u64 write_seq; /* the entry's: armed at, or the write that dirtied it */
	__s64 arm_rev;   /* the put its armed version began at (an L1 stamp) */
	/* split counters (counter.h): the entry's sub-key count, the one
	 * before it while its grace lasts and when it changed (0: not
	 * stamped yet); the process's last width raise and fold (its
	 * handles share the view: docs/client.md "One view per process") */
	__u16 subkeys, subkeys_prev;
	__u64 subkeys_since_ms;
	__u16 width_raised;
	__u64 width_raised_ms, fold_ms;
	/* the owner of each part, for part_k parts under ring part_ring */
	__u16 part_k;
	__s64 part_ring;
	__u16 part_owner[KSC_SPLIT_MAX];
	/* the entry carries an automatic cap: its key and rate are in the
	 * view's caps (a flag here, so a key without one costs no scan) */
	__u8 capped;
};

/* An automatic cap a hot/ entry carries (docs/limits.md, "The automatic
 * cap"): the key's bytes, so that a key of the same hash is not limited. */
struct ksc_auto_cap {
	__u64 hash;
	__u32 rate;
	__u16 len;
	__u8 key[KS_MAX_KEY_LEN];
};

/* A view registered for a limited key (limit_clients/HASH/ID, put by that
 * view's thread under its lease: docs/limits.md "How the limit is
 * shared"). */
struct ksc_lim_reg {
	__u64 hash, id;
	__u8 mark; /* a whole read is under way and has not put it again */
};

struct ksc_view {
	char prefix[KSC_PREFIX_MAX];
	size_t plen;
	/* the ring */
	int have_ring;
	__s64 ring_rev;
	struct ks_ring ring;
	struct ks_shards shards;
	__u16 *shard_srv; /* server id of each shard */
	/* the ring the newest replaced (docs/client.md "Ring changes"),
	 * kept until a newer one replaces it; ring_since_ms: when the newest
	 * replaced it, on the view's clock */
	int have_prev;
	__s64 prev_rev;
	struct ks_ring prev_ring;
	struct ks_shards prev_shards;
	__u16 *prev_srv;
	__u64 ring_since_ms, ring_changes;
	__u64 clock_ms; /* the time of the event being applied */
	/* every server named, by id */
	unsigned nsrv;
	struct ksc_server *srv;
	/* static replicas (servers= mode): every owner's */
	unsigned nstatic;
	__u16 static_reps[KSC_SEEN_MAX];
	/* hot entries: open addressing by hash, a power of two */
	size_t hcap, hused, hlive;
	struct ksc_hot *hot;
	/* dedicated shards (core/dedicated.h): the pins document's rules
	 * when it has shard rules (NULL: none), resolved against the ring
	 * (ded_idx) and the previous ring (ded_prev_idx); ded_lost: shard
	 * rules whose shard the ring lacks (their keys stay with the ring) */
	struct ks_hot_rules *ded;
	int ded_idx[KS_HOT_RULES_MAX], ded_prev_idx[KS_HOT_RULES_MAX];
	size_t ded_lost;
	/* rate limits (client/limit.h): the pins document's rules when it
	 * has limit rules (NULL: none); lim_version: bumped when they change
	 * (the follower's buckets of keys no rule names are then dropped) */
	struct ks_hot_rules *lim;
	__u64 lim_version;
	/* the automatic caps of the live hot/ entries that have one and name
	 * their key (an entry of hash only limits nothing) */
	struct ksc_auto_cap *caps;
	size_t ncaps, caps_size;
	/* the registrations of views for limited keys, unordered */
	struct ksc_lim_reg *regs;
	size_t nregs, regs_size;
	int pins_seen;  /* a whole read had the pins document */
	__s64 revision; /* etcd's, of the newest document applied */
	__u64 updates, refused;
	char why[KSC_WHY_MAX]; /* the last refusal */
};

/* The views registered for the key of hash (limit_clients/), *self_in
 * set when id (this view's) is among them. */
unsigned ksc_view_limit_clients(const struct ksc_view *v, __u64 hash, __u64 id,
				int *self_in);

/* "limit_clients/" and its key under the view's prefix: HASH/ID, 16 hex
 * digits each. The length, or -ENAMETOOLONG. */
#define KSC_LIM_REG_FAMILY "limit_clients/"
int ksc_lim_reg_key(const struct ksc_view *v, __u64 hash, __u64 id, char *buf,
		    size_t len);

/* An empty view of cluster's prefix. 0, or -EINVAL for a bad name. */
int ksc_view_init(struct ksc_view *v, const char *cluster);
void ksc_view_free(struct ksc_view *v);

/*
 * A static ring (no fleet): shards "host:port,..." of dist, and replicas
 * ("host:port,...", may be NULL) every owner's copies may be on. 0, or
 * -EINVAL with v->why.
 */
int ksc_view_static(struct ksc_view *v, const char *shards, const char *dist,
		    const char *replicas);

/* A replica any owner's copies may be on ("host:port", interned): every
 * write invalidates it. Its id, or -EINVAL, -ENOSPC (KSC_SEEN_MAX). */
int ksc_view_every_owner_replica(struct ksc_view *v, const char *name);

/*
 * A put of key (under the prefix) with value val at mod_rev: the ring,
 * the pins (only their shard rules matter here), a hosts/ or a hot/ entry. 0 when applied, 1 when the key is none of
 * those (ignored), -EBADMSG when refused (v->why, counted; the view keeps
 * what it had), -ENOMEM, -ENOSPC (too many servers).
 */
int ksc_view_put(struct ksc_view *v, const char *key, size_t klen,
		 const char *val, size_t vlen, __s64 mod_rev);
/* A delete of key at rev (now_ms: the time, for the purge). A deleted
 * ring or hosts/ entry changes nothing (the ring stays, as the agents'; a
 * replica set only grows). */
int ksc_view_del(struct ksc_view *v, const char *key, size_t klen, __s64 rev,
		 __u64 now_ms);
/* An etcd event or a range's keys. */
int ksc_view_event(struct ksc_view *v, const struct ks_etcd_event *ev,
		   __u64 now_ms);
/* A whole read of the prefix at rev (after a compaction, say): its keys
 * put, and every live hot entry it does not have deleted. */
int ksc_view_load(struct ksc_view *v, const struct ks_etcd_kv *kvs, size_t n,
		  __s64 rev, __u64 now_ms);

/*
 * A whole read at rev of which the view already applied everything up to
 * since (a host follower's snapshot after the one before, core/
 * view_file.h): the documents newer than since put, the live hot entries
 * it lacks deleted, the others left as they are (a ring not built again).
 */
int ksc_view_replay(struct ksc_view *v, const struct ks_etcd_kv *kvs, size_t n,
		    __s64 since, __s64 rev, __u64 now_ms);

/* A hot entry as a source gives it, names made server ids. */
struct ksc_hot_in {
	__u64 hash, write_seq;
	unsigned state, nrep; /* enum ks_hot_doc_state; replicas in rep */
	__u16 owner, rep[KS_MAX_COPIES - 1];
	__u32 owner_turns;
	unsigned subkeys; /* a write-hot counter's K (0 or 1: not split) */
	__u32 limit_rate; /* the entry's automatic cap; 0: none */
	const __u8 *key;  /* its key bytes (NULL: hash only) */
	__u16 len;
};
/* Sets the entry of in->hash as in says, at version rev (the hot/ entry's
 * mod_revision, or a poll's round). 0, -ENOMEM, -EBADMSG (more than
 * KSC_SEEN_MAX replicas over time: the newest not remembered). */
int ksc_view_hot_set(struct ksc_view *v, const struct ksc_hot_in *in,
		     __s64 rev);
/* A whole reading of a source: mark every live entry, set those it has
 * (ksc_view_hot_set clears the mark), then sweep: the marked are gone. */
void ksc_view_hot_mark(struct ksc_view *v);
void ksc_view_hot_sweep(struct ksc_view *v, __u64 now_ms);

/* Entries deleted more than keep_ms before now_ms are dropped. */
void ksc_view_purge(struct ksc_view *v, __u64 now_ms, __u64 keep_ms);

/* The server id of "host:port", interned (-ENOSPC, -EINVAL). */
int ksc_view_server(struct ksc_view *v, const char *name);
/* ks_key_hash of a key (len <= KS_MAX_KEY_LEN). */
__u64 ksc_key_hash(const void *key, size_t len);
/* The owner's server id, KSC_NONE without a ring: the shard a pins
 * document's shard rule names when it matches key and the ring has that
 * shard (core/dedicated.h), else the ring's owner. */
unsigned ksc_view_owner(const struct ksc_view *v, const void *key, size_t len);
/* The previous ring's owner of key (shard rules applied as above),
 * KSC_NONE without one. */
unsigned ksc_view_prev_owner(const struct ksc_view *v, const void *key,
			     size_t len);
/* The previous ring dropped (its grace over, or a test). */
void ksc_view_prev_drop(struct ksc_view *v);
/* The hot entry of hash (live or not), or NULL. */
struct ksc_hot *ksc_view_hot(const struct ksc_view *v, __u64 hash);
/* The automatic cap on key (hash: its ks_key_hash) from its live hot/
 * entry, the key's bytes compared: the rate, or 0 when it has none. */
__u32 ksc_view_auto_cap(const struct ksc_view *v, const void *key, size_t len,
			__u64 hash);
/* The entry of hash when reads may go to its copies: live, armed, with
 * copies, and owned by owner (the ring's); else NULL. */
struct ksc_hot *ksc_view_armed(const struct ksc_view *v, __u64 hash,
			       unsigned owner);

#endif
