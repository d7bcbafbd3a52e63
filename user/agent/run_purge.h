/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * run_purge.h - the ownership-loss purge of 'agent run' (docs/fleet.md,
 * "Purges at a ring change"; issue 23): when the ring the agent follows
 * (etcd, the shard file, SIGHUP) takes key ranges from this shard
 * (--self), a thread of its own lists this shard's memcached with
 * `lru_crawler metadump all` and deletes every item the new ring places
 * on another shard, in pipelined "md KEY q" batches at --purge-rate
 * items/s; it repeats the pass for --purge-grace seconds (clients still
 * on the old ring write here meanwhile), and sweeps at
 * --purge-sweep-rate at all times. A change that moves more than about
 * the ideal share of keys purges only when the ring document was forced
 * (core/purge.h, ks_purge_gate). Nothing here runs on the interval
 * loop's thread but the hand-over of a new ring and the copy of the
 * counters into the report.
 */
#ifndef KS_RUN_PURGE_H
#define KS_RUN_PURGE_H

#include <pthread.h>
#include <stddef.h>
#include <linux/types.h>
#include "core/hotkeys.h"
#include "core/ring.h"
#include "core/shards.h"
#include "core/replicas.h"
#include "ks_shard_report.h"

/* getopt values of the purge's options (after cli_options.h's
 * KS_OPTV_* and ring.h's) */
#define KS_OPTV_PURGE_RATE  0x1060
#define KS_OPTV_PURGE_GRACE 0x1061
#define KS_OPTV_PURGE_SWEEP 0x1062
#define KS_OPTV_RING_PURGE  0x1063 /* test-only */

/* Defaults (docs/fleet.md says why). */
#define KS_PURGE_RATE_DEFAULT       5000u /* items/s at a ring change */
#define KS_PURGE_GRACE_DEFAULT      30u   /* s of repeated passes */
#define KS_PURGE_SWEEP_RATE_DEFAULT 200u  /* items/s, at all times */
#define KS_PURGE_RATE_MAX           1000000u
#define KS_PURGE_GRACE_MAX          3600u
/* The crawler's lines are read at most this many times the delete rate:
 * a pass over a shard that owns most of its items stays gentle too. */
#define KS_PURGE_LIST_FACTOR 50u
/* A sweep pass starts this long after the previous pass ended. */
#define KS_PURGE_SWEEP_GAP_S 60u

struct ks_run_purge {
	/* options */
	__u32 rate;       /* --purge-rate; 0: no pass at ring changes */
	__u32 grace_s;    /* --purge-grace */
	__u32 sweep_rate; /* --purge-sweep-rate; 0: no sweep */
	int off;          /* --ring-purge off (test-only): never deletes */
	const char *self; /* --self */
	struct ks_replica_addr mc; /* the memcached purged: --self's */
	int enabled;               /* --self given and an address */

	/* the thread; everything below under mu */
	pthread_t th;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	__u64 gen; /* rises with every ring handed over */
	int have_change;
	struct ks_ring new_r; /* handed over, not taken yet */
	struct ks_shards new_s;
	__u64 version;
	int forced;
	struct ks_purge_report st;
	/* the shard rules in force (dedicated shards, core/dedicated.h): a
	 * key a rule places on this shard is this shard's, whatever the
	 * ring says; NULL: none */
	struct ks_hot_rules *ded;
};

void ks_run_purge_init(struct ks_run_purge *p);
/* --purge-rate, --purge-grace, --purge-sweep-rate, --ring-purge: 1
 * taken, 0 not one of them, -1 with err. */
int ks_run_purge_opt(struct ks_run_purge *p, int c, const char *arg, char *err,
		     size_t errlen);
/* After the ring options: self is --self (NULL: this host is no ring
 * shard, a replica say, and purges nothing). -EINVAL with err for a
 * --self the purge cannot connect to while a purge is asked for. */
int ks_run_purge_prepare(struct ks_run_purge *p, const char *self, char *err,
			 size_t errlen);
/* Starts the thread (no-op when disabled). 0 or a negative errno. */
int ks_run_purge_start(struct ks_run_purge *p);

/*
 * A ring pushed (new, its shards news; its version as the report shows
 * it); forced: the ring document was marked forced. Copies it and wakes
 * the thread, which measures it against the ring the purge acts for (the
 * last one its gate let through) and decides. Called on the loop's thread
 * (agent/run_ring.c's push), never blocks on I/O.
 */
void ks_run_purge_ring(struct ks_run_purge *p, const struct ks_ring *new,
		       const struct ks_shards *news, __u64 version, int forced);

/* The shard rules now (only those are kept; none: NULL or no shard
 * rule): the next pass owns what they place here. Called on the loop's
 * thread (agent/run_dedicated.c) when the rules change. */
void ks_run_purge_rules(struct ks_run_purge *p, const struct ks_hot_rules *r);

/* The counters into out, for the shard report. */
void ks_run_purge_report(struct ks_run_purge *p, struct ks_purge_report *out);

void ks_run_purge_free(struct ks_run_purge *p);

#endif
