/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * limits.h - which keys the datapath rate-limits (docs/limits.md): the
 * pin file's `limit` rules (core/hotkeys.h parses them) turned into one
 * entry per limited key, each with a row of its own in the datapath's
 * counters. Pure decision logic, once per interval, no BPF and no I/O:
 * dp/limit_map.h writes the result into ks_limits.
 *
 * An exact rule (`limit KEY RATE/s`) is one entry from the start. A
 * prefix rule (`limit PREFIX* RATE/s`) limits each key under the prefix
 * on its own, at the rule's rate: the datapath matches exact keys only
 * (a key's bytes, not a prefix walk per packet), so the agent installs a
 * key of the prefix once it is among the interval's ranked keys, and
 * removes it after KS_LIMIT_KEEP intervals out of them. A key never
 * among the heaviest keys is, by that, far below any limit worth naming.
 */
#ifndef KS_LIMITS_H
#define KS_LIMITS_H

#include <stddef.h>
#include "keysteer.h"
#include "ks_limit.h"
#include "core/hotkeys.h"

/* Intervals a prefix rule's key stays limited after it left the ranked
 * keys: a runaway key that slows under its limit stays ranked lower. */
#define KS_LIMIT_KEEP 30

enum ks_limit_state {
	KS_LIMIT_FREE = 0,
	KS_LIMIT_LIVE,  /* in ks_limits as it is here */
	KS_LIMIT_DIRTY, /* to be (re)written into ks_limits */
	KS_LIMIT_GONE,  /* to be deleted from ks_limits, then free */
};

struct ks_limit_entry {
	__u8 key[KS_KEY_BUF]; /* zero past len, as the datapath compares */
	__u16 len;
	__u16 rule_len; /* the prefix rule's length; 0: an exact rule */
	__u8 state;     /* enum ks_limit_state */
	__u8 fresh;     /* new row: its counters to be zeroed first */
	__u64 hash;     /* ks_key_hash */
	__u64 old_hash; /* GONE, or a DIRTY row taken over: the hash to
			 * delete (0: none) */
	__u32 rate;     /* requests/s */
	__u32 seen_seq; /* a prefix key's last interval among ranked keys */
	__u8 automatic; /* the automatic cap's (core/limit_auto.h), no rule */
	double residual_ps; /* automatic: the load it was capped for */
	/* counters as last read (since installed), and per second over the
	 * last interval */
	__u64 allowed, refused, collided, tcp;
	double allowed_ps, refused_ps, tcp_ps;
};

struct ks_limit_set {
	struct ks_limit_entry e[KS_LIMIT_SLOTS]; /* index: the row id */
	size_t live;                             /* entries not FREE or GONE */
	__u64 version;      /* bumped when what is limited changes */
	__u64 no_room;      /* keys a prefix rule took that found no row */
	size_t nauto;       /* entries of the automatic cap */
	__u64 auto_no_room; /* automatic caps that found no row, by
			     * interval */
	__u64 auto_evicted; /* automatic caps a rule's key took the row of */
};

/* A key the automatic cap limits (core/limit_auto.h). */
struct ks_limit_want {
	const __u8 *key;
	__u16 len;
	__u32 rate;
	double residual_ps; /* the fullest table gives up the lowest first */
};

void ks_limits_init(struct ks_limit_set *s);

/* The limit rule for a key: an exact rule first, else the longest
 * matching prefix rule; NULL if none. */
const struct ks_hot_rule *ks_limit_rule_match(const struct ks_hot_rules *r,
					      const __u8 *key, size_t len);

/*
 * One interval (seq) with the rules now in force, the interval's ranked
 * keys (n, any order) and the automatic cap's keys (nauto): exact rules
 * get entries, ranked keys under a prefix rule get entries at its rate, a
 * rule's removal or change marks its entries GONE or DIRTY, prefix keys
 * out of the ranked keys for KS_LIMIT_KEEP intervals are GONE. Then the
 * automatic caps, in the rows left: a key a rule names is the rule's
 * (explicit wins); an automatic cap no longer wanted is GONE; one that
 * finds no row is counted (auto_no_room) and asked again next interval;
 * a rule's key that finds no row takes the row of the automatic cap with
 * the lowest residual (auto_evicted). Returns the number of entries whose
 * state changed (0: ks_limits stays as it is).
 */
size_t ks_limits_plan(struct ks_limit_set *s, const struct ks_hot_rules *rules,
		      const struct ks_top_entry *ranked, size_t n, __u32 seq,
		      const struct ks_limit_want *autos, size_t nauto);

/* After the map was written: DIRTY -> LIVE, GONE -> FREE. */
void ks_limits_synced(struct ks_limit_set *s);

/* The counters of row id summed over CPUs, read elapsed_s after the last
 * read: totals and rates per second. */
void ks_limits_account(struct ks_limit_set *s, __u32 id,
		       const struct ks_limit_stats *sum, double elapsed_s);

/* The row the report publishes for entry id (rate 0: free). */
void ks_limits_info(const struct ks_limit_set *s, __u32 id,
		    struct ks_limit_info *out);

/* Iterates entries in the datapath (LIVE or DIRTY): *pos = 0 first. */
const struct ks_limit_entry *ks_limits_next(const struct ks_limit_set *s,
					    size_t *pos);

#endif
