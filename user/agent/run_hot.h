/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * run_hot.h - the hot-key side of 'agent run': the policy options, the pin
 * file (checked before anything is attached, then watched: a bad new file
 * is logged with FILE:LINE and the old rules stay), one table update per
 * interval from the interval's heaviest candidates (up to KS_HOT_CAP, of
 * which the report publishes the first 64), and the JSON routing document,
 * rewritten atomically whenever the table's version changes.
 */
#ifndef KS_RUN_HOT_H
#define KS_RUN_HOT_H

#include <stddef.h>
#include <sys/types.h>
#include "core/balance.h"
#include "core/hotkeys.h"
#include "agent/run_ring.h"

/* How often the pin file is checked for a change. */
#define KS_PINS_CHECK_NS 500000000ULL

/* The hot-key options, as 'agent run' parsed them. */
struct ks_run_hot_opts {
	struct ks_hot_policy pol;
	unsigned replicas;        /* L1 replicas: max_copies = replicas + 1 */
	const char *pins_path;    /* NULL: no pin file */
	const char *routing_path; /* NULL: no routing document */
	int serve_doc;            /* render the document for --listen too */
	gid_t gid;                /* --group: the routing file's group, or -1 */
	const struct ks_replica_set *rs; /* replicas named in the document */
	int owner_turns; /* the schedule's, in the document; -1: not there */
	double balance;  /* --balance F (core/balance.h); 0: off */
};

struct ks_run_hot {
	struct ks_run_hot_opts o;

	/* the live parts */
	struct ks_hot_table *table;
	struct ks_hot_rules *next_rules; /* loaded before attach */
	struct ks_file_sig pins_sig;     /* the pin file last read */
	__u64 next_check_ns;
	__u64 written_version;
	int written; /* routing file written once */
	int fleet;   /* the rules are etcd's pins: the file is not read */
	char *doc;   /* JSON buffer */
	size_t doc_size;
	size_t doc_len; /* of the current document */
	/* --balance: its state, and the interval's inputs
	 * (ks_run_hot_fleet_load) */
	struct ks_balance bal;
	double load_own_ps, load_mean_ps, load_share;
	size_t load_shards;
};

/* Policy defaults, no pins, no routing file. */
void ks_run_hot_defaults(struct ks_run_hot *h);

/* A decimal number in [min, max] ("0.1", "100000", "1e5"). */
int ks_parse_double(const char *what, const char *s, double min, double max,
		    double *out, char *err, size_t errlen);

/*
 * Before anything is attached: checks the policy, reads the pin file and
 * that the routing file's directory is writable. On error err says what
 * ("pins.txt:3: ...") and the return is negative.
 */
int ks_run_hot_prepare(struct ks_run_hot *h, char *err, size_t errlen);

/* Applies the pins and writes the first routing document. */
int ks_run_hot_start(struct ks_run_hot *h, __u64 ring_version);

/* Reloads the pin file when hup is set or (at most every
 * KS_PINS_CHECK_NS) when it changed; a bad file keeps the old rules. Not
 * while the fleet's pins rule (ks_run_hot_fleet_rules). */
void ks_run_hot_poll(struct ks_run_hot *h, int hup);

/* Before ks_run_hot_interval, with --balance: the reads this shard
 * served in the interval, the fleet's mean over shards (agent/run_etcd.h)
 * and the owner's share of an armed key's reads. */
void ks_run_hot_fleet_load(struct ks_run_hot *h, double own_ps, double mean_ps,
			   size_t shards, double share);

/* Samples of one update: KS_HOT_CAP ranked keys, then as many table keys
 * with unseen reads. */
#define KS_HOT_SAMPLES_MAX (2 * KS_HOT_CAP)

/*
 * The interval that ended at seq, from its ranked candidates (n of them,
 * heaviest first; the first KS_HOT_CAP are used: ks_collector.ranked, of
 * which the report's top keys are the head), so that a table of
 * KS_HOT_CAP keys can fill when as many keys are hot, and the reads its
 * armed keys' copies took unseen (ks_run_steer_sample); with --balance at
 * the read threshold ks_balance_step gives.
 */
void ks_run_hot_interval(struct ks_run_hot *h,
			 const struct ks_top_entry *ranked, size_t n,
			 const struct ks_hot_unseen *u, size_t nu, __u32 seq,
			 __u64 ring_version);

/* Writes len bytes to path atomically (path.tmp, fsync, rename), mode
 * 0640, group gid unless gid is (gid_t)-1. 0 or -errno. */
int ks_write_file_atomic(const char *path, const char *data, size_t len,
			 gid_t gid);

/*
 * The fleet's pins from etcd (agent/run_etcd.c, source names them in the
 * log): they replace the pin file's rules, which is no longer read while
 * they are there. NULL: the fleet has none (again): the file's rules come
 * back (read at once), or none.
 */
void ks_run_hot_fleet_rules(struct ks_run_hot *h, const struct ks_hot_rules *r,
			    const char *source);

void ks_run_hot_free(struct ks_run_hot *h);

#endif
