/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sample_rate.h - --sample auto[:TARGET]: the per-CPU rate controller.
 * Each interval it picks, for every CPU, the next 1-in-N (a power of two,
 * 1..KS_RATE_MAX_N) from the keys that CPU saw, so that the keys it
 * samples per second stay near the target: a quiet CPU samples every key,
 * a busy one pays almost only the counting path. Pure arithmetic, no BPF,
 * no I/O; the agent writes its answer into ks_rate (bpf/ks_maps.bpf.h)
 * for the epoch ahead, before the flip, so an epoch never mixes two rates.
 */
#ifndef KS_SAMPLE_RATE_H
#define KS_SAMPLE_RATE_H

#include <stddef.h>
#include <linux/types.h>

#define KS_RATE_MAX_N 1024 /* the lowest rate: 1 key in 1,024 */
/*
 * Sampled keys per second per CPU that auto aims at (docs/accuracy.md):
 * enough for top-100 precision at least that of --sample 8 on 1M keys/s
 * (125,000 sampled a second) at every load, since a power of two lands
 * between half the target and the target. At about 0.5 us a sampled key,
 * at most 13% of a CPU at any load; a quiet CPU (under the target) samples
 * every key.
 */
#define KS_RATE_TARGET_DEFAULT 262144
#define KS_RATE_TARGET_MIN     100
#define KS_RATE_TARGET_MAX     100000000
/* The first interval's rate: the old fixed default, a bounded cost until
 * the first counts are in. */
#define KS_RATE_START 8
/*
 * Hysteresis: a CPU samples more (a lower N) only when the new rate would
 * keep it at or under this share of the target, so that a load sitting at
 * a power-of-two boundary does not flip the rate every interval.
 */
#define KS_RATE_DOWN_PCT 80

/* --sample: a fixed 1 in N, or auto with its target; and the ring
 * placement's target (--place-target, not ks_sample_parse()'s). */
struct ks_sample_opt {
	__u32 n;      /* fixed: 1 in n; auto: 0 */
	__u32 target; /* auto: sampled keys per second per CPU; fixed: 0 */
	__u32 place_target; /* placements per second per CPU; 0: all */
	/* test only (--place-scaling off): each placement adds 1, not P
	 * (KS_RATE_P_UNIT in keysteer.h) */
	__u32 place_unit;
};

/*
 * Parses "N" (1..max_n) or "auto" / "auto:TARGET" into o. 0, or -EINVAL
 * with a sentence for the user in err.
 */
int ks_sample_parse(const char *s, __u32 max_n, struct ks_sample_opt *o,
		    char *err, size_t errlen);

/*
 * The next 1 in N for one CPU that saw keys in elapsed_ns at 1 in cur_n:
 * the smallest power of two that keeps keys/s / N at or under target; up
 * at once (a burst is paid for one interval at most), down only with
 * KS_RATE_DOWN_PCT headroom. An idle CPU goes to 1. Within 1..KS_RATE_MAX_N.
 */
__u32 ks_rate_next(__u32 cur_n, __u64 keys, __u64 elapsed_ns, __u32 target);

/* The largest of ncpus rates (NULL or all 0: 1): the sampling bound's N. */
__u32 ks_rates_max(const __u32 *n, int ncpus);

/*
 * --place-target (issue 27): the ring placements a second per CPU that
 * the datapath's placement of sampled keys is held near. Each placement
 * costs a ring lookup, and for a key the ring cache does not hold an MD5
 * and the ring's cold lines: `line_bench.sh --sample auto --ring 64
 * --keys 65536` lost 11% of the line rate placing the ~200,000 keys a
 * second auto samples there (docs/benchmarks.md "Placing 1 in P sampled
 * keys"). 4,096 a second is under 0.3% of a CPU even at ~600 ns each,
 * and still ~64 placements a second per shard of a 64-shard ring per CPU
 * at full load. 0 turns the bound off (every sampled key placed).
 */
#define KS_PLACE_TARGET_DEFAULT 4096
#define KS_PLACE_TARGET_MIN     16
#define KS_PLACE_TARGET_MAX     100000000

/*
 * Parses --place-target's value ("off", or placements a second per CPU,
 * KS_PLACE_TARGET_MIN..KS_PLACE_TARGET_MAX; off is 0) into *target. 0, or
 * -EINVAL with a sentence for the user in err.
 */
int ks_place_parse(const char *s, __u32 *target, char *err, size_t errlen);

/*
 * The next 1 in P of its sampled keys that one CPU places on the ring,
 * from the keys it sampled in elapsed_ns while placing 1 in cur_p: 1
 * whenever they come under target a second (so that at a test's load,
 * or any load under the target, every sampled key is placed, as without
 * the bound), else as ks_rate_next() picks a sample rate: the smallest
 * power of two that keeps placements at or under target, up at once,
 * down with headroom, at most KS_RATE_MAX_N. target 0: always 1.
 */
__u32 ks_place_next(__u32 cur_p, __u64 sampled, __u64 elapsed_ns, __u32 target);

/*
 * The keys a CPU that sampled `sampled` at 1 in n_was will sample at 1 in
 * n_next over the same keys: what its next P must be chosen for, since
 * the agent sets the next epoch's rate and P at the same flip. Without it
 * P lagged a rate change by an interval: auto's first interval at 1 in 1
 * and 10M keys/s set P 1024 for the next, sampled at 1 in 64, leaving
 * ~150 placements a second for the ring (docs/accuracy.md, "Shard load
 * with 1 in P placed"). 0 for n_was or n_next is 1; rounded up.
 */
__u64 ks_sampled_at(__u64 sampled, __u32 n_was, __u32 n_next);

#endif
