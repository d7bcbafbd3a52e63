/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * limit_auto.h - the automatic cap (`agent run --limit-auto F`,
 * docs/limits.md "The automatic cap"): a key of which this shard serves
 * more than F x --shard-capacity, what its copies and its split do not
 * take, gets a limit, in the same datapath table as the explicit rules
 * (core/limits.h), and loses it when it falls back under. Pure decision
 * logic, once per interval, from the interval's ranked keys, the hot-key
 * table and the datapath's per-key steering counts; no BPF, no I/O.
 *
 * The residual is what this shard measurably serves of the key, not what
 * the hot-key policy's verdict says it takes (ks_limit_auto_residual):
 * the reads and writes the datapath counted at ingress (every request
 * that reaches this host, a refused one too) less the lone UDP gets it
 * steered to copies. Reads libkeysteer sends to copies over TCP never
 * reach this host, so they are not in it; reads that fall back to the
 * owner (replicas down, clients that ignore copies, plain clients) are.
 * A split counter's base takes 1/K of the writes here once the split
 * works, and all of them when it does not: measured, nothing subtracted.
 * While a key is capped its refused gets are not steered, so the share
 * its copies take is the one measured on the gets that passed.
 *
 * The policy still has its chance (ks_limit_auto_remedy, the verdict):
 * when the table first says it copies or splits a followed key, the key's
 * count of intervals over the line starts again, so copies being filled
 * and a split being picked up have KS_LIMIT_AUTO_ENTER whole intervals to
 * take the load before the cap looks; once per bit per episode, so a
 * verdict that flaps cannot keep a runaway uncapped. The cap is the line,
 * whatever the copies take (docs/limits.md says why).
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
	__u8 graced;        /* remedy bits that restarted its count this
			     * episode (each once) */
	__u32 over;         /* intervals in a row above the line */
	__u32 under;        /* intervals in a row under the leave line */
	__u64 hash;         /* ks_key_hash */
	double residual_ps; /* last interval's */
};

/*
 * What the datapath measured of a key that holds a hot-key slot over the
 * interval (agent/run_steer.c, from ks_hot_stats): the lone UDP gets sent
 * to copies, the UDP reads left to the owner (both counted after the
 * limit's check) and the TCP reads (never steered, never refused).
 */
struct ks_auto_dp {
	const __u8 *key;
	__u16 len;
	__u64 hash;
	double steered_ps, owner_ps, tcp_ps;
};

struct ks_limit_auto {
	double line; /* fraction x capacity: reads+writes/s */
	__u32 rate;  /* the cap, per second: the line, rounded up */
	/* test switch (--limit-auto-residual verdict): the residual from
	 * the policy's verdict, as before it was measured */
	int verdict;
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

/* What the policy says it takes off the shard of the key of table entry e
 * (NULL: not in the table: nothing): its verdict, not a measurement. */
unsigned ks_limit_auto_remedy(const struct ks_hot_entry *e);

/*
 * The key's residual per second: what this shard serves of ranked key r,
 * d what the datapath measured of it (NULL: it holds no slot, nothing
 * steered). reads - s x (reads - tcp) + writes, s the share of the UDP
 * reads that passed the limit which went to copies: without a cap,
 * reads less the gets steered; with one, what the shard would serve of
 * all that is offered. Never below 0.
 */
double ks_limit_auto_residual(const struct ks_top_entry *r,
			      const struct ks_auto_dp *d);

/*
 * One interval: the ranked keys (n, rates scaled to all keys), the
 * hot-key table t as this interval's update left it (its verdicts give
 * the policy its intervals), and dp[0..ndp) what the datapath measured
 * of the keys in its slots; keys an explicit rule names (rules,
 * ks_limit_rule_match) are never capped here and are forgotten. Returns
 * the number of keys capped or released.
 */
size_t ks_limit_auto_update(struct ks_limit_auto *a,
			    const struct ks_hot_rules *rules,
			    const struct ks_hot_table *t,
			    const struct ks_top_entry *ranked, size_t n,
			    const struct ks_auto_dp *dp, size_t ndp);

/* The capped keys as wants for ks_limits_plan (at most max); the count. */
size_t ks_limit_auto_wants(const struct ks_limit_auto *a,
			   struct ks_limit_want *out, size_t max);

/* The followed key, or NULL. */
const struct ks_auto_key *ks_limit_auto_find(const struct ks_limit_auto *a,
					     const __u8 *key, size_t len);

#endif
