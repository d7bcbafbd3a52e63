/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_shard_report.h - what the agent publishes each interval about the
 * ring and the load of its shards, for 'agent report' in other processes.
 * Only the agent writes it (map ks_shard_report, one entry, read and
 * written whole with BPF_F_LOCK so a reader never mixes two intervals or
 * two rings); the datapath never touches it. Rates are fixed point,
 * milli-per-second, like struct ks_report's.
 *
 * Include order as for keysteer.h (vmlinux.h first in BPF code).
 */
#ifndef KS_SHARD_REPORT_H
#define KS_SHARD_REPORT_H

#include "keysteer.h"
#include "ks_ring.h"

#define KS_SHARD_REPORT_VERSION 2   /* 2: ks_shard_rate.load_err_mps */
#define KS_SHARD_NAME_LEN       64  /* "host:port", cut to fit */
#define KS_RING_SOURCE_LEN      128 /* shard file path, or "--shards" */
#define KS_RELOAD_ERR_LEN       256

/* One shard's load in the last interval (and since the ring was pushed). */
struct ks_shard_rate {
	char name[KS_SHARD_NAME_LEN]; /* NUL-terminated */
	__u64 reads_mps;              /* sampled reads x sample_n, per second */
	__u64 writes_mps;
	__u64 misdirected_mps; /* keys this host got that the ring gives here */
	__u64 reads;           /* keys since the push: sampled x sample_n */
	__u64 writes;
	__u64 misdirected;
	__u32 share_ppm;   /* of all keys placed on the ring, ppm */
	__u32 ratio_milli; /* reads+writes over the mean shard's, x1000 */
	/* +/- of reads_mps + writes_mps: the half-width of a 95% interval
	 * for the shard's true load in the interval, from the placements
	 * each CPU made and its N and P (ks_shard_fill_err); 0: every key
	 * counted */
	__u64 load_err_mps;
};
_Static_assert(sizeof(struct ks_shard_rate) == 128, "ks_shard_rate layout");
/* load_err_mps of a span the +/- was not worked out for (the whole
 * capture of 'agent replay', over intervals of different N and P) */
#define KS_SHARD_ERR_UNKNOWN (~0ULL)

/*
 * The ownership-loss purge (agent/run_purge.c, docs/fleet.md): what this
 * shard deleted from its own memcached because a ring places it
 * elsewhere. Counts since the agent started.
 */
enum ks_purge_state {
	KS_PURGE_OFF,      /* no --self, --purge-rate 0, or no ring yet */
	KS_PURGE_IDLE,     /* nothing to do until the next sweep */
	KS_PURGE_RUNNING,  /* a pass for a ring change runs */
	KS_PURGE_GRACE,    /* between the passes of the grace period */
	KS_PURGE_SWEEPING, /* a slow sweep pass runs */
};
#define KS_PURGE_WHY_LEN 160

struct ks_purge_report {
	__u64 purged;       /* items deleted by passes for ring changes */
	__u64 swept;        /* items deleted by the slow sweep */
	__u64 listed;       /* items the crawler listed, every pass */
	__u64 refused;      /* ring changes the moved-share gate refused */
	__u64 errors;       /* passes that failed (memcached away, crawler) */
	__u64 ring_version; /* the ring the last change pass was for */
	__u64 last_ns;      /* how long its first pass took (0: none yet) */
	__u64 last_items;   /* items that pass deleted */
	__u64 rate_mps;     /* items/s of the running pass, else the last */
	__u64 last_end_real_ns;     /* CLOCK_REALTIME the last pass ended */
	__u32 state;                /* enum ks_purge_state */
	__u32 passes;               /* passes done for ring_version */
	__u32 rate_limit;           /* --purge-rate, items/s */
	__u32 sweep_limit;          /* --purge-sweep-rate, items/s; 0 off */
	char why[KS_PURGE_WHY_LEN]; /* the last refusal or error; "" none */
};
_Static_assert(sizeof(struct ks_purge_report) == 10 * 8 + 16 + KS_PURGE_WHY_LEN,
	       "ks_purge_report layout");

struct ks_shard_report {
	struct bpf_spin_lock lock;
	__u32 version; /* KS_SHARD_REPORT_VERSION; 0: nothing published */
	__u32 nshards; /* 0: the agent runs without a ring */
	__u32 dist;    /* enum ks_dist */
	__u32 self;    /* the shard this host serves, or KS_NO_SHARD */
	__u32 busiest; /* index, or KS_NO_SHARD when no key was placed */
	__u32 seq;     /* interval the rates belong to (ks_report.seq) */
	__u32 sample_n;
	__u32 reload_errors; /* failed reloads since the agent started */
	__u32 pad;
	__u64 ring_version;   /* meta.version of the active ring half */
	__u64 digest;         /* meta.digest of it */
	__u64 pushed_mono_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) of the push */
	__u64 pushed_real_ns; /* CLOCK_REALTIME of the push */
	__u64 elapsed_ns; /* the interval the rates cover; 0 before the first */
	__u64 hits_mps;   /* every key placed on the ring, per second */
	__u64 reload_err_real_ns; /* CLOCK_REALTIME of the last failed reload */
	char source[KS_RING_SOURCE_LEN];
	char reload_err[KS_RELOAD_ERR_LEN]; /* why it failed; "" if none */
	struct ks_shard_rate shards[KS_MAX_SHARDS];
	struct ks_purge_report purge;
};
_Static_assert(sizeof(struct ks_shard_report) ==
		       40 + 7 * 8 + KS_RING_SOURCE_LEN + KS_RELOAD_ERR_LEN +
			       KS_MAX_SHARDS * sizeof(struct ks_shard_rate) +
			       sizeof(struct ks_purge_report),
	       "ks_shard_report layout");

#endif /* KS_SHARD_REPORT_H */
