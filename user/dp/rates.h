/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rates.h - the sample rate of every CPU, epoch by epoch: what the
 * running epoch samples at, what the epoch just ended sampled at (its
 * estimates scale each CPU by that), and for --sample auto the next
 * epoch's, decided from the keys each CPU saw (core/sample_rate.c) and
 * written into ks_rate before the flip. A fixed --sample N is the same
 * with every rate N (the datapath falls back to ks_config.sample_n).
 * With a placement target (--place-target), each CPU's 1 in P of its
 * sampled keys placed on the ring too, decided from the keys it sampled
 * (ks_place_next) and written with the rate, whether fixed or auto.
 */
#ifndef KS_DP_RATES_H
#define KS_DP_RATES_H

#include "keysteer.h"
#include "core/sample_rate.h"
#include "dp/collect.h"

struct ks_rates {
	int ncpus;
	struct ks_sample_opt opt;
	__u32 *cur;     /* the running epoch's 1 in N, per CPU */
	__u32 *ended;   /* the epoch just ended's, per CPU */
	__u64 *keys;    /* every CPU's keys (ks_ops + fast gets), cumulative,
		       * at the last decision */
	__u64 *buf;     /* a per-CPU lookup's worth of u64 */
	__u64 *sum;     /* scratch: keys per CPU now */
	__u64 *iv_keys; /* every CPU's keys in the epoch just ended */
	/* the ring placement's 1 in P, as cur and ended (all 1 without a
	 * placement target), and the keys each CPU sampled, as keys */
	__u32 *p_cur, *p_ended;
	__u64 *sampled, *samp_sum;
};

/* Every CPU at start_n (auto) or opt's N; 0 or -ENOMEM. */
int ks_rates_init(struct ks_rates *r, int ncpus,
		  const struct ks_sample_opt *opt, __u32 start_n);
void ks_rates_free(struct ks_rates *r);

/*
 * Before the first packet: auto writes both epochs' entries of ks_rate
 * (m->rate) with the start rate; fixed zeroes them (a fresh map is zero
 * already); P starts at 1 in both. Reads the keys so far. 0 or -errno.
 */
int ks_rates_start(struct ks_rates *r, const struct ks_maps *m);

/*
 * Before moving seq to next_seq: for auto, each CPU's next rate from its
 * keys over elapsed_ns, and with a placement target its next P from the
 * keys it sampled, written to ks_rate's entry for next_seq's epoch.
 * Then ended = cur, cur = next. 0 or -errno.
 */
int ks_rates_flip(struct ks_rates *r, const struct ks_maps *m, __u32 next_seq,
		  __u64 elapsed_ns);

/* The report's view: the ended epoch's rates per CPU, the largest as
 * sample_n, auto's target; the same of the placement's P. */
void ks_rates_report(const struct ks_rates *r, struct ks_report *rep);

/*
 * The keys one sampled key stood for in the epoch just ended, over every
 * CPU: sum of keys / sum of keys / N (each CPU's expected samples); the
 * largest rate when no CPU saw a key. For counters that are summed over
 * CPUs before they are scaled (the ring's per-shard counts): exact when
 * every CPU had one rate, a keys-weighted mean otherwise.
 */
double ks_rates_effective(const struct ks_rates *r);

#endif
