/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * limit.h - libkeysteer's per-key rate limits (docs/limits.md, "TCP
 * through libkeysteer"): the `limit` rules of the fleet's pins document
 * (parsed by core/hotkeys.c, matched by core/limits.h's
 * ks_limit_rule_match) enforced in the client by one token bucket per
 * limited key, the datapath's own GCRA (ks_limit.h, ks_limit_take). Pure
 * code: no I/O, no locks, the time passed in (the caller serialises:
 * client.h, the follower's limit lock).
 *
 * One table per view: the handles of a process that share a view share
 * its buckets, so a process lets a key through at its share of its rule's
 * rate whatever number of handles or threads it runs: rate / N, where N
 * is the spec's limit_share=N when given, else the number of client
 * views registered for the key in etcd (docs/limits.md, "How the limit
 * is shared"; ksc_limit_share). A prefix rule limits each key under it on its own bucket,
 * made on the key's first call. A bucket whose time stamp is not ahead of
 * now is full, so dropping it changes no decision: a full table makes
 * room by dropping those, and only when every bucket is busy is a new key
 * let through uncounted (no_room).
 */
#ifndef KSC_LIMIT_H
#define KSC_LIMIT_H

#include <stddef.h>
#include <linux/types.h>
#include "keysteer.h"
#include "core/hotkeys.h"

#define KSC_LIMIT_KEYS 4096 /* buckets one view keeps at once */

struct ksc_limit_bucket {
	__u64 hash;   /* ks_key_hash; 0: a free slot */
	__u64 tat_ns; /* the bucket (ks_limit.h's GCRA) */
	__u64 interval_ns, tau_ns;
	__u32 rate;    /* the rule's when the bucket was made */
	__u32 share;   /* the share its interval and tau were made for */
	__u64 last_ns; /* its last call: the view stays registered for the
			* key while it is younger than KSC_LIMIT_REG_IDLE_MS */
	__u16 len;
	__u16 rule_len; /* the prefix rule's; 0: an exact rule */
	__u8 automatic; /* a hot/ entry's automatic cap: no rule names it,
			 * a new rule set keeps it */
	__u64 allowed, refused;
	__u8 key[KS_MAX_KEY_LEN];
};

/* A view is registered in etcd for each key it called within this long
 * (limit_clients/, docs/limits.md; the view's thread, fleet.c). */
#define KSC_LIMIT_REG_IDLE_MS 5000

struct ksc_limits {
	unsigned share; /* limit_share=N (>= 1); 0: the fleet's count */
	size_t used;
	__u64 made;    /* buckets made: the view's thread registers new keys */
	__u64 no_room; /* calls of keys that found no bucket: let through */
	__u64 allowed, refused;
	struct ksc_limit_bucket *b; /* KSC_LIMIT_KEYS, by hash; NULL: none */
	/* a unit test's control only (no spec word sets it): buckets matched
	 * on the hash alone, as a table that trusted its hash would */
	int hash_only;
};

enum ksc_limit_verdict {
	KSC_LIM_NONE = 0, /* no rule names the key */
	KSC_LIM_ALLOWED,
	KSC_LIM_REFUSED,
	KSC_LIM_NO_ROOM, /* named, but no bucket free: let through */
};

/* share: the rate is split over that many processes (1: each takes the
 * rule's rate; 0: over the count of registered views each call gives).
 * 0, or -ENOMEM. */
int ksc_limits_init(struct ksc_limits *l, unsigned share);

/*
 * The share a bucket takes (pure): explicit (limit_share=N) when set,
 * else the views registered for the key (registered, from the view's
 * limit_clients/ entries) counting this one even before its own
 * registration is seen (self_in: it is among them); at least 1.
 */
unsigned ksc_limit_share(unsigned explicit_share, unsigned registered,
			 int self_in);
void ksc_limits_free(struct ksc_limits *l);

/* The bucket of a rule's rate for one process out of share. */
void ksc_limit_params(__u32 rate, unsigned share, __u64 *interval_ns,
		      __u64 *tau_ns);

/*
 * One call of key (hash: ks_key_hash of it) at now_ns under rules (NULL:
 * none): the verdict, with *rule (may be NULL) the rule that named it. A
 * bucket whose rule's rate changed restarts full.
 */
enum ksc_limit_verdict ksc_limit_take(struct ksc_limits *l,
				      const struct ks_hot_rules *rules,
				      const void *key, size_t len, __u64 hash,
				      __u64 now_ns,
				      const struct ks_hot_rule **rule);

/* The same with the rule that names key already matched (r, not NULL):
 * a caller that matched it without the table's lock; share: the bucket's
 * (ksc_limit_share; 0: the table's own). A share that changed re-times
 * the bucket in place (its time stamp kept: no new burst). */
enum ksc_limit_verdict ksc_limit_take_rule(struct ksc_limits *l,
					   const struct ks_hot_rule *r,
					   const void *key, size_t len,
					   __u64 hash, __u64 now_ns,
					   unsigned share);

/* The same; cold: a bucket made by this call starts empty (its first call
 * let through, then its rate), not full: a view that has not yet seen
 * its own registration cannot know how many others start with it, and P
 * views starting together would otherwise each take a whole burst of the
 * rule's rate (docs/limits.md, "How the limit is shared"). */
enum ksc_limit_verdict ksc_limit_take_cold(struct ksc_limits *l,
					   const struct ks_hot_rule *r,
					   const void *key, size_t len,
					   __u64 hash, __u64 now_ns,
					   unsigned share, int cold);

/* The bucket of key, or NULL (for counters and tests). */
const struct ksc_limit_bucket *ksc_limit_find(const struct ksc_limits *l,
					      const void *key, size_t len,
					      __u64 hash);

/* Buckets of keys no rule names any more dropped (after new rules). */
void ksc_limits_prune(struct ksc_limits *l, const struct ks_hot_rules *rules);

#endif
