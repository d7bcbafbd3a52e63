/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * balance.h - the fleet's busiest shard brought near the mean (agent run
 * --balance F, docs/steering.md "Balance"). Hashing spreads keys, not
 * requests: once the hot keys are on their copies, a shard can still
 * carry more than the rest from the many keys below the hot threshold
 * (ketama's spread of a Zipf body: in bench-steer the busiest of 8
 * shards stays 1.16x the mean with every key above the threshold moved
 * exactly). An agent whose shard serves more than (1 + F) times the mean
 * shard of the fleet (each agent's served reads, from its hosts/ entry in
 * etcd; its own fresh) lowers its own read threshold until the keys above
 * it cover the excess; it raises it again step by step once its shard is
 * below (1 + F/2) times the mean and would stay there with the reads of
 * the keys the step lets go (those whose rate falls under the new leave
 * threshold) back on it: a step that would undo the balance is not
 * taken, so the keys do not flap. A step down halves the threshold at
 * most, and after each change (and at the start) it waits
 * KS_BALANCE_SETTLE intervals: the keys it let in take an interval or two
 * to be copied and armed, and counting them again would overshoot; a
 * shard's figures while the fleet starts are not its load. Nor while the
 * mean moves by more than KS_BALANCE_STABLE in an interval: the entries
 * are written when a figure moved by a tenth (core/host_doc.h), so while
 * the fleet's load climbs, a fresh figure against the others' older ones
 * would make every shard look the busiest.
 * Pure code.
 */
#ifndef KS_BALANCE_H
#define KS_BALANCE_H

#include <stddef.h>
#include "core/hotkeys.h"

#define KS_BALANCE_HOSTS  1024 /* hosts/ entries kept */
#define KS_BALANCE_SELF   160  /* "host:port" of an entry, with its NUL */
#define KS_BALANCE_FLOOR  8    /* the threshold goes at most 8x lower */
#define KS_BALANCE_RAISE  1.25 /* a step up, per settled interval */
#define KS_BALANCE_STEP   0.5  /* a step down at most */
#define KS_BALANCE_ALPHA  0.5  /* EWMA weight of the newest served figure */
#define KS_BALANCE_STABLE 0.10 /* the mean's move that stops a step */
#define KS_BALANCE_SETTLE 3    /* intervals after a change */
#define KS_BALANCE_MAX    10.0 /* --balance F: 0 (off) or 0.01..10 */

/* The served reads of every shard in the fleet, by its agent's name. */
struct ks_fleet_load {
	char self[KS_BALANCE_SELF];
	double served_ps;
	int from; /* KS_LOAD_FROM_*: which document said it */
};

/* Where a figure came from: an agent before schema 2 has only hosts/; an
 * agent of schema 2 has its load document, which wins over the hosts/
 * entry it may also write for old readers (--fleet-compat). */
enum {
	KS_LOAD_FROM_HOSTS,
	KS_LOAD_FROM_LOAD
};

struct ks_fleet_loads {
	size_t n;
	struct ks_fleet_load e[KS_BALANCE_HOSTS];
};

void ks_fleet_loads_clear(struct ks_fleet_loads *l);
/* Adds or replaces self's figure; -ENOSPC when the table is full, -EINVAL
 * for a name that does not fit. */
int ks_fleet_loads_put(struct ks_fleet_loads *l, const char *self,
		       double served_ps);
void ks_fleet_loads_del(struct ks_fleet_loads *l, const char *self);
/* The same for figures from one kind of document (the above: hosts/): a
 * hosts/ figure never replaces or deletes a load document's; clear
 * forgets only that kind's. */
int ks_fleet_loads_put_from(struct ks_fleet_loads *l, const char *self,
			    double served_ps, int from);
void ks_fleet_loads_del_from(struct ks_fleet_loads *l, const char *self,
			     int from);
void ks_fleet_loads_clear_from(struct ks_fleet_loads *l, int from);
/* The mean served reads of a shard over the entries, each as its agent
 * last wrote it (self's too, so every agent's mean is the same; own_ps
 * stands for self while it has no entry); *shards: how many. */
double ks_fleet_loads_mean(const struct ks_fleet_loads *l, const char *self,
			   double own_ps, size_t *shards);

struct ks_balance {
	double over; /* F; 0: off */
	double thr;  /* the read threshold balance holds; 0: the policy's */
	unsigned settle;
	int started; /* the first step only settles */
	/* the last interval's inputs (own_ps smoothed), for the log */
	double own_ps, mean_ps, prev_mean_ps;
	size_t shards;
	unsigned long long lowered, raised; /* changes since the start */
};

/*
 * One interval, before the hot-key table's update: the read threshold
 * the update should use. p: the policy (its threshold is the base, its
 * leave_ratio says which keys a raise lets go); own_ps: the reads this
 * shard served in the interval; mean_ps over shards (fewer than 2: no
 * balance); s[0..n): the interval's candidates, t: the table before the
 * update (its read-hot keys are not candidates); share: the owner's part
 * of an armed key's reads (what it keeps serving).
 */
double ks_balance_step(struct ks_balance *b, const struct ks_hot_policy *p,
		       double own_ps, double mean_ps, size_t shards,
		       const struct ks_hot_table *t,
		       const struct ks_hot_sample *s, size_t n, double share);

/* p with its read threshold at thr (copy budget and write threshold kept
 * as p has them), into out. */
void ks_balance_policy(const struct ks_hot_policy *p, double thr,
		       struct ks_hot_policy *out);

#endif
