/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * run_ring.h - the ring side of 'agent run': the ring options, the ring
 * built before anything is attached, pushed at start and again on SIGHUP
 * or when the shard file changes (a bad new file is logged and the old
 * ring stays), and each interval the per-shard rates published in map
 * ks_shard_report for 'agent report'.
 */
#ifndef KS_RUN_RING_H
#define KS_RUN_RING_H

#include <stddef.h>
#include <sys/types.h>
#include "dp/collect.h"
#include "core/ring.h"
#include "core/shard_rates.h"

struct ks_run_ded;

/* What identifies one version of the shard file (stat(2) fields). */
struct ks_file_sig {
	int exists;
	dev_t dev;
	ino_t ino;
	off_t size;
	__u64 mtime_ns, ctime_ns;
};

struct ks_run_ring {
	struct ks_ring_spec spec; /* no list and no file: no ring */
	int dist_given;           /* --distribution or --vnodes seen */

	/* Built and not pushed yet (at start, before the maps exist). */
	struct ks_shards next_shards;
	struct ks_ring next;

	/* The ring in the datapath, and its image for lookups here. */
	struct ks_ring live;
	struct ks_shards shards;
	__u64 version, digest;
	__u32 active; /* the half ks_config.ring must name */

	/* Watching the shard file: what the last load read (acted), and a
	 * change seen once, loaded when it holds still for a check. */
	struct ks_file_sig acted, pending;
	int have_pending;
	__u64 next_check_ns;

	/* Counters (sampled keys) at the push, and at the last interval;
	 * base_ns is when the push's were read (CLOCK_MONOTONIC): the rows'
	 * counts since the push span prev_ns - base_ns (the load document's
	 * "totals", core/host_doc.h) */
	struct ks_shard_counts *base, *prev, *cur;
	__u64 prev_ns, base_ns;
	/* each CPU's reads + writes of each shard at the last interval and
	 * now (KS_MAX_SHARDS x ncpus, sized at the first read), and the 1 in
	 * N and 1 in P each CPU ran the interval at (the rates' ended
	 * arrays, set before each interval; NULL: 1): the +/- of each
	 * shard's load (ks_shard_fill_err) */
	__u64 *cpu_prev, *cpu_cur;
	int ncpus;
	const __u32 *cpu_n, *cpu_p;
	struct ks_shard_report *rep;
	__u32 sample_n;
	/* keys a sampled key stood for in the last interval, when the CPUs'
	 * rates differ (--sample auto; ks_rates_effective); 0: sample_n */
	double scale;

	/* --etcd (agent/run_etcd.c): the ring may come from etcd, with no
	 * list or file; ext_source names it once it does ("" while the ring
	 * is the list's or file's, which is then no longer watched), and
	 * ext_version is its etcd revision, the version shown for it. */
	int etcd;
	char ext_source[KS_RING_SOURCE_LEN];
	__u64 ext_version;
	int ext_forced; /* the document says 'ring set --force' wrote it */

	/* Told of every ring pushed (agent/run_purge.h); NULL: nobody. */
	struct ks_run_purge *purge;
	/* Told of every ring before its flip (agent/run_dedicated.h); NULL:
	 * nobody. */
	struct ks_run_ded *ded;
};

/* How often the shard file is checked for a change. */
#define KS_RING_CHECK_NS 500000000ULL

/* The ring options (ks_ring_spec_opt) for 'agent run' and 'agent replay',
 * also noting whether the distribution was chosen. */
void ks_run_ring_init(struct ks_run_ring *r);
int ks_run_ring_opt(struct ks_run_ring *r, int c, const char *arg, char *err,
		    size_t errlen);

/* Whether ring options were given. */
static inline int ks_run_ring_enabled(const struct ks_run_ring *r)
{
	return r->spec.list || r->spec.file || r->shards.n || r->next.half;
}

/*
 * Checks the options and builds the ring, before anything is attached.
 * Without ring options returns 0 and does nothing (unless --self,
 * --distribution or --vnodes came alone: an error). On error err says
 * what and where ("shards.txt:3: ...") and the return is negative.
 */
int ks_run_ring_prepare(struct ks_run_ring *r, __u32 sample_n, char *err,
			size_t errlen);

/* Pushes the prepared ring and publishes the first report. */
int ks_run_ring_start(struct ks_run_ring *r, const struct ks_maps *m,
		      struct ks_collector *c);

/*
 * Reloads the ring when hup is set (SIGHUP) or, at most every
 * KS_RING_CHECK_NS, when the shard file changed and then held still for
 * one check. A bad list is logged and the old ring stays. Returns 0 or a
 * negative errno when the maps fail (the agent stops then).
 */
int ks_run_ring_poll(struct ks_run_ring *r, const struct ks_maps *m,
		     struct ks_collector *c, int hup);

/*
 * The rows of interval seq, just closed, elapsed_ns long, from the
 * counters read now: rates scaled by scale (the keys a sampled key stood
 * for), each with its +/- (r->cpu_n, r->cpu_p), and the report's seq and
 * elapsed_ns; now becomes the next interval's start. 'agent run' and
 * 'agent replay' alike.
 */
int ks_run_ring_rows(struct ks_run_ring *r, struct ks_collector *c,
		     double scale, __u32 seq, __u64 elapsed_ns);

/* Per-shard rates of the interval that ended at seq, published. */
int ks_run_ring_interval(struct ks_run_ring *r, const struct ks_maps *m,
			 struct ks_collector *c, __u32 seq);

/*
 * For whoever rewrites ks_config: points cfg->ring at the active half if
 * something (a racing config write) moved it. Returns 1 when it did; the
 * caller writes cfg and then waits a grace period (ks_rcu_wait) so the
 * half it moved away from has no readers before the next push.
 */
int ks_run_ring_fix_config(const struct ks_run_ring *r, struct ks_config *cfg);

/*
 * A ring from elsewhere (etcd): shards and ring (built, self set) become
 * the caller's no longer. version is what the report shows for it,
 * source names it. Before ks_run_ring_start (m NULL) it replaces the
 * prepared ring; after, it is pushed as a reload would push it (an
 * identical ring only takes the new version). 0 or a negative errno when
 * the maps fail.
 */
int ks_run_ring_take(struct ks_run_ring *r, const struct ks_maps *m,
		     struct ks_collector *c, struct ks_shards *shards,
		     struct ks_ring *ring, __u64 version, const char *source);

/* A ring refused (why: one line): logged, counted in the report's reload
 * errors, the ring in use kept. m NULL before the start: counted only. */
int ks_run_ring_refuse(struct ks_run_ring *r, const struct ks_maps *m,
		       const char *why);

/* The shard of the ring in the datapath that owns key (what its clients
 * compute), or KS_NO_SHARD without a ring (or one taken over, not
 * pushed by this agent). Its self: r->rep->self. */
__u32 ks_run_ring_owner(const struct ks_run_ring *r, const void *key,
			size_t len);
void ks_run_ring_free(struct ks_run_ring *r);

/* stat(2) of path into sig (exists = 0 when it cannot be stat'ed). */
void ks_file_sig_get(const char *path, struct ks_file_sig *sig);
int ks_file_sig_equal(const struct ks_file_sig *a, const struct ks_file_sig *b);

#endif
