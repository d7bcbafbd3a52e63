// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rates.c - per-CPU sample rates, epoch by epoch (see rates.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "dp/rates.h"

int ks_rates_init(struct ks_rates *r, int ncpus,
		  const struct ks_sample_opt *opt, __u32 start_n)
{
	size_t n = ncpus > 0 ? (size_t)ncpus : 1;
	int i;

	memset(r, 0, sizeof(*r));
	r->ncpus = (int)n;
	r->opt = *opt;
	r->cur = calloc(n, sizeof(*r->cur));
	r->ended = calloc(n, sizeof(*r->ended));
	r->keys = calloc(n, sizeof(*r->keys));
	r->sum = calloc(n, sizeof(*r->sum));
	r->iv_keys = calloc(n, sizeof(*r->iv_keys));
	r->p_cur = calloc(n, sizeof(*r->p_cur));
	r->p_ended = calloc(n, sizeof(*r->p_ended));
	r->sampled = calloc(n, sizeof(*r->sampled));
	r->samp_sum = calloc(n, sizeof(*r->samp_sum));
	/* a per-CPU lookup: one value per possible CPU, 8-byte strides */
	r->buf = calloc(n, sizeof(struct ks_pkt_counters));
	if (!r->cur || !r->ended || !r->keys || !r->sum || !r->buf ||
	    !r->iv_keys || !r->p_cur || !r->p_ended || !r->sampled ||
	    !r->samp_sum) {
		ks_rates_free(r);
		return -ENOMEM;
	}
	for (i = 0; i < r->ncpus; i++) {
		r->cur[i] = r->ended[i] = opt->target ? start_n
					  : opt->n    ? opt->n
						      : 1;
		/* every sampled key placed until a CPU's count says more
		 * than the target */
		r->p_cur[i] = r->p_ended[i] = 1;
	}
	return 0;
}

void ks_rates_free(struct ks_rates *r)
{
	free(r->cur);
	free(r->ended);
	free(r->keys);
	free(r->sum);
	free(r->buf);
	free(r->iv_keys);
	free(r->p_cur);
	free(r->p_ended);
	free(r->sampled);
	free(r->samp_sum);
	r->cur = r->ended = r->p_cur = r->p_ended = NULL;
	r->keys = r->sum = r->buf = r->iv_keys = NULL;
	r->sampled = r->samp_sum = NULL;
}

/* Every key each CPU counted, cumulative: the ops' keys and the fast
 * path's lone gets (one key each), which the sampling countdown meets;
 * and the keys it sampled, which the placement's countdown meets (its
 * reads and writes; the few sampled keys of neither class are counted
 * too, a bound on the safe side). */
static int read_keys(struct ks_rates *r, const struct ks_maps *m)
{
	struct ks_op_stats *ops = (struct ks_op_stats *)r->buf;
	struct ks_pkt_counters *pc = (struct ks_pkt_counters *)r->buf;
	__u32 k, zero = 0;
	int cpu;

	memset(r->sum, 0, sizeof(*r->sum) * (size_t)r->ncpus);
	memset(r->samp_sum, 0, sizeof(*r->samp_sum) * (size_t)r->ncpus);
	for (k = 0; k < KS_OP_MAX; k++) {
		if (bpf_map_lookup_elem(m->ops, &k, ops))
			return -errno;
		for (cpu = 0; cpu < r->ncpus; cpu++)
			r->sum[cpu] += ops[cpu].keys;
	}
	if (bpf_map_lookup_elem(m->pkts, &zero, pc))
		return -errno;
	for (cpu = 0; cpu < r->ncpus; cpu++) {
		r->sum[cpu] += pc[cpu].n[KS_PKT_FAST_GET];
		r->samp_sum[cpu] = pc[cpu].n[KS_PKT_SAMPLED];
	}
	return 0;
}

/* ks_rate's entry for one epoch: every CPU's rate in r->cur (0 when
 * zero_n: ks_config.sample_n's) and its P in r->p_cur. */
static int write_entry(struct ks_rates *r, const struct ks_maps *m, __u32 epoch,
		       int zero_n)
{
	struct ks_rate_entry *v = (struct ks_rate_entry *)r->buf;
	int cpu;

	/* one 8-byte entry per CPU: the per-CPU buffer's stride */
	memset(v, 0, sizeof(*v) * (size_t)r->ncpus);
	for (cpu = 0; cpu < r->ncpus; cpu++) {
		v[cpu].n = zero_n ? 0 : r->cur[cpu];
		v[cpu].p = r->p_cur[cpu] |
			   (r->opt.place_unit ? KS_RATE_P_UNIT : 0);
	}
	return bpf_map_update_elem(m->rate, &epoch, v, BPF_ANY) ? -errno : 0;
}

int ks_rates_start(struct ks_rates *r, const struct ks_maps *m)
{
	__u32 e;
	int err;

	for (e = 0; e < KS_EPOCHS; e++) {
		err = write_entry(r, m, e, !r->opt.target);
		if (err)
			return err;
	}
	err = read_keys(r, m);
	if (!err) {
		memcpy(r->keys, r->sum, sizeof(*r->keys) * (size_t)r->ncpus);
		memcpy(r->sampled, r->samp_sum,
		       sizeof(*r->sampled) * (size_t)r->ncpus);
	}
	return err;
}

/* The interval that ends keeps its values in *ended; the next starts
 * from them in *cur. */
static void rates_turn(__u32 **cur, __u32 **ended, int ncpus)
{
	__u32 *t = *ended;

	*ended = *cur;
	*cur = t;
	memcpy(*cur, *ended, sizeof(**cur) * (size_t)ncpus);
}

/* What a cumulative counter moved since *last (0 if it went back, as
 * after a take-over), *last moved on to now. */
static __u64 counted_since(__u64 now, __u64 *last)
{
	__u64 d = now >= *last ? now - *last : 0;

	*last = now;
	return d;
}

int ks_rates_flip(struct ks_rates *r, const struct ks_maps *m, __u32 next_seq,
		  __u64 elapsed_ns)
{
	__u64 smp;
	int cpu, err;

	rates_turn(&r->cur, &r->ended, r->ncpus);
	rates_turn(&r->p_cur, &r->p_ended, r->ncpus);
	err = read_keys(r, m);
	if (err)
		return err;
	for (cpu = 0; cpu < r->ncpus; cpu++) {
		r->iv_keys[cpu] = counted_since(r->sum[cpu], &r->keys[cpu]);
		smp = counted_since(r->samp_sum[cpu], &r->sampled[cpu]);
		if (r->opt.target)
			r->cur[cpu] = ks_rate_next(r->ended[cpu],
						   r->iv_keys[cpu], elapsed_ns,
						   r->opt.target);
		/* P for the keys it will sample at its next rate */
		if (r->opt.place_target)
			r->p_cur[cpu] = ks_place_next(
				r->p_ended[cpu],
				ks_sampled_at(smp, r->ended[cpu], r->cur[cpu]),
				elapsed_ns, r->opt.place_target);
	}
	if (!r->opt.target && !r->opt.place_target)
		return 0;
	return write_entry(r, m, next_seq & (KS_EPOCHS - 1), !r->opt.target);
}

void ks_rates_report(const struct ks_rates *r, struct ks_report *rep)
{
	int cpu;

	rep->sample_n = ks_rates_max(r->ended, r->ncpus);
	rep->sample_target = r->opt.target;
	rep->ncpu_n = r->ncpus < KS_REPORT_CPUS ? (__u32)r->ncpus
						: KS_REPORT_CPUS;
	memset(rep->cpu_n, 0, sizeof(rep->cpu_n));
	memset(rep->cpu_p, 0, sizeof(rep->cpu_p));
	for (cpu = 0; cpu < (int)rep->ncpu_n; cpu++) {
		rep->cpu_n[cpu] = r->ended[cpu];
		rep->cpu_p[cpu] = r->p_ended[cpu];
	}
	rep->place_target = r->opt.place_target;
	rep->place_p = ks_rates_max(r->p_ended, r->ncpus);
}

double ks_rates_effective(const struct ks_rates *r)
{
	double keys = 0, expect = 0;
	int cpu;

	for (cpu = 0; cpu < r->ncpus; cpu++) {
		__u32 n = r->ended[cpu] ? r->ended[cpu] : 1;

		keys += (double)r->iv_keys[cpu];
		expect += (double)r->iv_keys[cpu] / n;
	}
	return expect > 0 ? keys / expect : ks_rates_max(r->ended, r->ncpus);
}
