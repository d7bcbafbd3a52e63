/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * limit_auto.h - the automatic cap (`agent run --limit-auto F`,
 * docs/limits.md "The automatic cap"): a key whose load on this shard is
 * over F x --shard-capacity and that the hot-key policy can neither copy
 * nor split gets a limit at that rate, in the same datapath table as the
 * explicit rules (core/limits.h), and loses it when it falls back under.
 * Pure decision logic, once per interval, from the interval's ranked keys
 * and the hot-key table; no BPF, no I/O.
 *
 * What the policy takes off the shard (ks_limit_auto_remedy):
 * - the reads of a key it copies: read-hot with 2 copies or more (the
 *   owner and a replica) and not write-hot. A write-hot key's writes
 *   send its reads back to the owner until the copies are refreshed,
 *   which at write-hot rates is most of the time: its reads stay here.
 * - the writes of a counter it split: write-hot with sub-keys, and the
 *   split in effect (its base's owner sees the share libkeysteer's
 *   split gives it, core/hotkeys.c split_in_effect). A write-hot key
 *   written by `set`, or by clients that do not split, never is.
 * What is left, reads + writes less what is taken, is the key's
 * residual; the cap is for the residual.
 *
 * Hysteresis, in whole intervals of the raw residual (not smoothed: a
 * smoothed rate carries a one-interval spike over the line for several
 * intervals): capped after KS_LIMIT_AUTO_ENTER intervals in a row above
 * the line (a burst shorter than that is left alone, and a split has
 * that long to take effect), released after KS_LIMIT_AUTO_LEAVE in a row
 * under KS_LIMIT_AUTO_LEAVE_RATIO of it. A key capped at the line that
 * keeps offering about that much (through libkeysteer its refused calls
 * never reach the shard) stays capped; it only leaves once it is well
 * under.
 */
#ifndef KS_LIMIT_AUTO_H
#define KS_LIMIT_AUTO_H

#include <stddef.h>
#include "keysteer.h"
#include "core/hotkeys.h"
#include "core/limits.h"

#define KS_LIMIT_AUTO_ENTER       3
#define KS_LIMIT_AUTO_LEAVE       5
#define KS_LIMIT_AUTO_LEAVE_RATIO 0.7
/* Keys followed at once: those over the line and those capped. */
#define KS_LIMIT_AUTO_KEYS KS_HOT_CAP

/* ks_limit_auto_remedy's bits. */
enum ks_auto_remedy {
	KS_AUTO_COPIES = 1, /* its reads go to copies */
	KS_AUTO_SPLIT = 2,  /* its writes go to a split counter's parts */
};

struct ks_auto_key {
	__u8 key[KS_KEY_BUF];
	__u16 len;
	__u8 used, capped, seen;
	__u8 remedy;        /* enum ks_auto_remedy bits, last interval */
	__u32 over;         /* intervals in a row above the line */
	__u32 under;        /* intervals in a row under the leave line */
	__u64 hash;         /* ks_key_hash */
	double residual_ps; /* last interval's */
};

struct ks_limit_auto {
	double line; /* fraction x capacity: reads+writes/s */
	__u32 rate;  /* the cap, per second: the line, rounded up */
	struct ks_auto_key k[KS_LIMIT_AUTO_KEYS];
	size_t capped; /* keys capped now */
	/* cumulative, for the report and the tests */
	__u64 caps, releases, untracked;
};

/*
 * The option: fraction in (0, 1], and --shard-capacity given (a fraction
 * of the default capacity means nothing on a real shard). 0, or -EINVAL
 * with the reason in err.
 */
int ks_limit_auto_check(double fraction, int capacity_given, char *err,
			size_t errlen);
void ks_limit_auto_init(struct ks_limit_auto *a, double fraction,
			double capacity);

/* What the policy takes off the shard of the key of table entry e (NULL:
 * not in the table: nothing). */
unsigned ks_limit_auto_remedy(const struct ks_hot_entry *e);

/*
 * One interval: the ranked keys (n, rates scaled to all keys) and the
 * hot-key table t as this interval's update left it; keys an explicit
 * rule names (rules, ks_limit_rule_match) are never capped here and are
 * forgotten. Returns the number of keys capped or released.
 */
size_t ks_limit_auto_update(struct ks_limit_auto *a,
			    const struct ks_hot_rules *rules,
			    const struct ks_hot_table *t,
			    const struct ks_top_entry *ranked, size_t n);

/* The capped keys as wants for ks_limits_plan (at most max); the count. */
size_t ks_limit_auto_wants(const struct ks_limit_auto *a,
			   struct ks_limit_want *out, size_t max);

/* The followed key, or NULL. */
const struct ks_auto_key *ks_limit_auto_find(const struct ks_limit_auto *a,
					     const __u8 *key, size_t len);

#endif
