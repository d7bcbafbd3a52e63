/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * hotkeys.h - the agent's hot-key table: which keys are hot, how many copies
 * their reads are spread over, which write-hot keys need a salted counter,
 * and the operator's pins and split rules. Pure decision logic updated once
 * per interval from the interval's key estimates: no BPF calls, no I/O
 * (except ks_hot_rules_load, a thin file reader around the parser), so unit
 * tests drive it with synthetic rates. The routing document that
 * publishes the table is rendered by render/routing_json.h.
 */
#ifndef KS_HOTKEYS_H
#define KS_HOTKEYS_H

#include <stddef.h>
#include "keysteer.h"

#define KS_HOT_CAP        256 /* table entries */
#define KS_HOT_RULES_MAX  64  /* rules in a pin file */
#define KS_HOT_KEY_MAX    250 /* memcached's longest key */
#define KS_HOT_COPIES_MAX 64  /* largest count a rule may ask for */

struct ks_hot_policy {
	double shard_capacity_ops; /* one shard's capacity, ops/s */
	/* Read-hot when smoothed (or raw, on entry) reads/s >=
	 * hot_fraction * shard_capacity_ops: the read threshold. */
	double hot_fraction;
	/* Leave when the smoothed rate < leave_ratio * threshold. */
	double leave_ratio;
	double alpha;               /* EWMA weight of the newest interval */
	double per_copy_budget_ops; /* 0: the read threshold */
	double headroom;            /* copies are sized for rate * headroom */
	unsigned max_copies;        /* L1 replicas + the owner; 0 counts as 1 */
	double write_hot_fraction;  /* 0: same as hot_fraction */
};

/* Defaults: capacity 100000, hot 0.10, leave 0.70, alpha 0.5, budget =
 * threshold, headroom 1.25, max_copies 1 (no replicas until the agent sets
 * replicas + 1), write fraction = hot_fraction. */
void ks_hot_policy_default(struct ks_hot_policy *p);
/* 0, or -EINVAL with the reason in err. */
int ks_hot_policy_check(const struct ks_hot_policy *p, char *err,
			size_t errlen);
double ks_hot_read_threshold(const struct ks_hot_policy *p);
double ks_hot_write_threshold(const struct ks_hot_policy *p);
double ks_hot_copy_budget(const struct ks_hot_policy *p);
/* The most copies a key may get: max_copies, or 1 when it is 0. */
unsigned ks_hot_max_copies(const struct ks_hot_policy *p);
/* Copies for a read-hot key at rate: ceil(rate * headroom / budget), at
 * least 2 (owner + 1 replica), at most max_copies. */
unsigned ks_hot_copies_for(const struct ks_hot_policy *p, double reads_ps);
/* Salted-counter sub-keys for a write-hot key: ceil(rate / budget), at
 * least 2 (one sub-key is no split). */
unsigned ks_hot_subkeys_for(const struct ks_hot_policy *p, double writes_ps);

/* ---- manual rules (the pin file) ---- */

enum ks_hot_rule_type {
	KS_RULE_PIN = 1,      /* pin KEY COPIES: exact key, always hot */
	KS_RULE_PIN_PREFIX,   /* pin-prefix PREFIX COPIES */
	KS_RULE_SPLIT_PREFIX, /* split-prefix PREFIX K: K copies, K sub-keys */
	/* Dedicated shards (docs/placement.md, "Dedicated shards"): the
	 * key, or every key under the prefix, is placed on the named shard
	 * instead of its ring owner. Not a hot-key rule: the hot-key table
	 * ignores them (ks_hot_rule_match), ks_hot_shard_match finds them. */
	KS_RULE_SHARD,        /* shard KEY SHARDNAME */
	KS_RULE_SHARD_PREFIX, /* shard PREFIX* SHARDNAME */
	/* limit KEY RATE/s, limit PREFIX* RATE/s: a rate limit
	 * (core/limits.h; count is the rate per second), never a pin */
	KS_RULE_LIMIT = 16,
	KS_RULE_LIMIT_PREFIX,
	/* never in a pin file: libkeysteer's stand-in rule for the
	 * automatic cap a key's hot/ entry carries (client/limit.h) */
	KS_RULE_LIMIT_AUTO,
};

/* A shard's name in a shard rule: "host:port" as the ring lists it, or the
 * shard's optional name (core/shards.h), and the NUL. */
#define KS_HOT_SHARD_NAME_MAX 264
/* The longest prefix of a shard rule: the datapath matches prefixes in an
 * LPM trie whose key holds this many bytes (bpf/ks_dedicated.h). */
#define KS_HOT_SHARD_PREFIX_MAX 64

/* A limit rule: ks_hot_rule_match passes them over. */
static inline int ks_hot_rule_is_limit(unsigned type)
{
	return type == KS_RULE_LIMIT || type == KS_RULE_LIMIT_PREFIX;
}

struct ks_hot_rule {
	__u8 type; /* enum ks_hot_rule_type */
	__u16 len;
	__u32 count; /* copies (pins) or ways (split); 0 for shard rules */
	__u8 key[KS_HOT_KEY_MAX];
	char shard[KS_HOT_SHARD_NAME_MAX]; /* shard rules: the shard's name */
};

/* "pin", "pin-prefix", "split-prefix", "shard", "shard-prefix", "limit",
 * "limit-prefix" (the pin file's words; a shard-prefix rule is written
 * "shard PREFIX* NAME", a limit-prefix one "limit PREFIX* RATE/s");
 * "?" for any other type. */
const char *ks_hot_rule_name(unsigned type);

struct ks_hot_rules {
	size_t n;
	struct ks_hot_rule r[KS_HOT_RULES_MAX];
};

/*
 * Parses a pin file held in buf (len bytes, need not be NUL-terminated) into
 * rules, replacing its contents. One rule per line; blank lines and lines
 * whose first non-blank character is '#' are ignored. Returns 0, or -EINVAL
 * with "FILE:LINE: reason" (fname as given) for the first bad line; rules
 * is then left empty.
 */
int ks_hot_rules_parse(struct ks_hot_rules *rules, const char *buf, size_t len,
		       const char *fname, char *err, size_t errlen);
/* Reads path (at most 1 MiB) and parses it; -errno on read failure. */
int ks_hot_rules_load(struct ks_hot_rules *rules, const char *path, char *err,
		      size_t errlen);
/* The hot-key rule for a key: an exact pin first, else the longest
 * matching pin-prefix or split-prefix rule; NULL if none. Shard and limit
 * rules are not hot-key rules and never match here (core/limits.h has
 * the limits' own match). */
const struct ks_hot_rule *ks_hot_rule_match(const struct ks_hot_rules *rules,
					    const __u8 *key, size_t len);
/* The shard rule for a key: an exact one first, else the longest matching
 * prefix; NULL if none (the key stays with its ring owner). */
const struct ks_hot_rule *ks_hot_shard_match(const struct ks_hot_rules *rules,
					     const __u8 *key, size_t len);
/* Whether a rule is a shard rule (exact or prefix). */
static inline int ks_hot_rule_is_shard(unsigned type)
{
	return type == KS_RULE_SHARD || type == KS_RULE_SHARD_PREFIX;
}

/* ---- the table ---- */

enum ks_hot_state {
	KS_HOT_FREE = 0,
	KS_HOT_HOT,    /* hot by rate */
	KS_HOT_PINNED, /* a rule holds it hot regardless of rate */
};

/* One interval's estimate of one key (reads/writes scaled to all keys). */
struct ks_hot_sample {
	const __u8 *key;
	__u16 len;
	__u64 hash; /* ks_key_hash of key */
	double reads_ps;
	double writes_ps;
};

/* Views a top-K entry (rates in milli-per-second) as a sample; the sample
 * points into e's key bytes. */
void ks_hot_sample_from_top(const struct ks_top_entry *e,
			    struct ks_hot_sample *s);

struct ks_hot_entry {
	__u8 key[KS_KEY_BUF];
	__u16 len;
	__u8 state;     /* enum ks_hot_state */
	__u8 read_hot;  /* reads are spread over copies */
	__u8 write_hot; /* operator should salt the key into subkeys */
	__u64 hash;
	__u32 copies;     /* read copies incl. the owner; 1 when not read-hot */
	__u32 subkeys;    /* salted-counter sub-keys; 0 when not write-hot */
	double reads_ps;  /* smoothed */
	double writes_ps; /* smoothed */
	double copies_rate;  /* read rate when copies last changed */
	double subkeys_rate; /* write rate when subkeys last changed */
	double split_ps;     /* a split counter's whole write rate (its base's
			      * share x K), smoothed; 0 when not split */
	__u32 intervals_hot; /* updates the key has spent in the table */
	__u32 entered_seq;   /* seq of the update that let it in */
};

struct ks_hot_table {
	struct ks_hot_entry e[KS_HOT_CAP];
	size_t used;
	__u64 version; /* bumped whenever a published decision changes */
	__u32 seq;     /* of the last update */
	struct ks_hot_rules rules;
	/* Cumulative decision counters, for the report and the tests. */
	__u64 entered, left, evicted, dropped;
};

void ks_hot_init(struct ks_hot_table *t);
/* Installs a new rule set (a copy); it takes effect at the next update. */
void ks_hot_set_rules(struct ks_hot_table *t, const struct ks_hot_rules *r);

/*
 * One interval: smooths every tracked key with its new sample (a key
 * absent from samples counts 0 reads, 0 writes), lets keys in and out with
 * hysteresis, sizes copies and sub-keys, applies rules. Samples need not
 * be sorted or unique by hash (a repeated key counts once, first wins).
 * When the table is full a newcomer evicts the coldest non-pinned entry if
 * it is hotter (a pinned newcomer always does); otherwise it is dropped.
 * Returns the number of published decisions changed (0 = same document).
 */
size_t ks_hot_update(struct ks_hot_table *t, const struct ks_hot_policy *p,
		     const struct ks_hot_sample *samples, size_t n, __u32 seq);

/*
 * Puts back an entry a previous agent left in the datapath (taking over
 * after a restart): its smoothed rates, copies and sub-keys as published,
 * read_hot/write_hot from the flags. The next update decides as usual.
 * Returns 0, or -1 when the table has no room or the key is there.
 */
int ks_hot_restore(struct ks_hot_table *t, const struct ks_hot_policy *p,
		   const __u8 *key, size_t len, __u64 hash, double reads_ps,
		   double writes_ps, unsigned copies, unsigned subkeys,
		   int read_hot, int write_hot);

/* Iterates used entries: start with *pos = 0; NULL at the end. */
const struct ks_hot_entry *ks_hot_next(const struct ks_hot_table *t,
				       size_t *pos);
const struct ks_hot_entry *ks_hot_find(const struct ks_hot_table *t,
				       const __u8 *key, size_t len);

/* Reads of a key this host's datapath did not see (an armed key read
 * from its copies over TCP, agent/run_steer.h), per second. */
struct ks_hot_unseen {
	__u64 hash;
	double reads_ps;
	int hold; /* too few of the owner's reads yet (core/unseen.h): the
		   * key keeps its smoothed read rate; reads_ps unused */
};

/*
 * Adds each unseen reads_ps to the sample of its key, or for a hold gives
 * the sample at least the key's smoothed read rate in the table; a key
 * with no sample (it fell out of the top keys: the owner saw too few)
 * gets one, with the key bytes of its table entry, while cap allows. Keys
 * not in the table are left out (nothing armed them here). Returns the
 * new sample count.
 */
size_t ks_hot_add_unseen(const struct ks_hot_table *t, struct ks_hot_sample *s,
			 size_t n, size_t cap, const struct ks_hot_unseen *u,
			 size_t nu);

#endif
