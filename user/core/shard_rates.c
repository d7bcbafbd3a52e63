// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * shard_rates.c - the per-shard report's arithmetic (see shard_rates.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/estimate.h"
#include "core/shard_rates.h"

void ks_shard_sum(const void *percpu, int ncpus, size_t stride,
		  struct ks_shard_counts *out)
{
	const unsigned char *base = percpu;
	int cpu;

	memset(out, 0, sizeof(*out));
	for (cpu = 0; cpu < ncpus; cpu++) {
		const struct ks_shard_stats *st =
			(const void *)(base + (size_t)cpu * stride);

		out->reads += st->reads;
		out->writes += st->writes;
		out->misdirected += st->misdirected;
	}
}

static __u64 delta(__u64 prev, __u64 cur)
{
	return cur >= prev ? cur - prev : 0;
}

void ks_shard_fill(struct ks_shard_report *rep,
		   const struct ks_shard_counts *base,
		   const struct ks_shard_counts *prev,
		   const struct ks_shard_counts *cur, __u32 n, double sample_n,
		   __u64 elapsed_ns)
{
	double mult = sample_n >= 1 ? sample_n : 1;
	double scale = mult / (elapsed_ns ? elapsed_ns / 1e9 : 1.0);
	__u64 total = 0, best = 0;
	__u32 i;

	if (n > KS_MAX_SHARDS)
		n = KS_MAX_SHARDS;
	rep->busiest = KS_NO_SHARD;
	for (i = 0; i < n; i++) {
		__u64 load = delta(prev[i].reads, cur[i].reads) +
			     delta(prev[i].writes, cur[i].writes);

		total += load;
		/* strictly greater: the lower index wins a tie */
		if (load > best) {
			best = load;
			rep->busiest = i;
		}
	}
	rep->hits_mps = ks_to_mps(total * scale);
	for (i = 0; i < n; i++) {
		struct ks_shard_rate *r = &rep->shards[i];
		__u64 dr = delta(prev[i].reads, cur[i].reads);
		__u64 dw = delta(prev[i].writes, cur[i].writes);
		__u64 dm = delta(prev[i].misdirected, cur[i].misdirected);

		r->reads_mps = ks_to_mps(dr * scale);
		r->writes_mps = ks_to_mps(dw * scale);
		r->misdirected_mps = ks_to_mps(dm * scale);
		r->reads = (__u64)llround(
			(double)delta(base[i].reads, cur[i].reads) * mult);
		r->writes = (__u64)llround(
			(double)delta(base[i].writes, cur[i].writes) * mult);
		r->misdirected = (__u64)llround(
			(double)delta(base[i].misdirected, cur[i].misdirected) *
			mult);
		r->share_ppm = 0;
		r->ratio_milli = 0;
		r->load_err_mps = 0; /* ks_shard_fill_err's */
		if (total) {
			/* ratio to the mean = load / (total / n) */
			r->share_ppm = (__u32)llround((double)(dr + dw) * 1e6 /
						      (double)total);
			r->ratio_milli = (__u32)llround((double)(dr + dw) * n *
							1000.0 / (double)total);
		}
	}
}

static double rate_of(const __u32 *v, int cpu)
{
	return v && v[cpu] ? (double)v[cpu] : 1.0;
}

double ks_shard_load_var(const __u64 *d, const __u64 *tot, const __u32 *n,
			 const __u32 *p, int ncpus, double scale)
{
	double var = 0;
	int c;

	for (c = 0; c < ncpus; c++) {
		double nc = rate_of(n, c), w = nc * rate_of(p, c);
		double share = tot[c] ? (double)d[c] / (double)tot[c] : 0;
		double s = scale > 0 ? scale : nc;

		if (!d[c])
			continue;
		if (share > 1)
			share = 1;
		/* (s / N)^2 x t (W - 1) (1 - t / T), t = N d */
		var += s * s / nc * (double)d[c] * (w - 1) * (1 - share);
	}
	return var;
}

double ks_shard_load_halfwidth(double var, double wmax1)
{
	const double z = KS_SHARD_Z, half = z * wmax1 / 2;

	if (var < 0)
		var = 0;
	return z * sqrt(var + half * half) + z * half;
}

void ks_shard_fill_err(struct ks_shard_report *rep, const __u64 *prev,
		       const __u64 *cur, __u32 n, int ncpus, const __u32 *cpu_n,
		       const __u32 *cpu_p, double scale, __u64 elapsed_ns)
{
	double secs = elapsed_ns ? elapsed_ns / 1e9 : 1.0, wmax1 = 0;
	__u64 *d, *tot;
	__u32 i;
	int c;

	if (n > KS_MAX_SHARDS)
		n = KS_MAX_SHARDS;
	if (ncpus < 1)
		return;
	d = calloc((size_t)ncpus * 2, sizeof(*d));
	if (!d)
		return;
	tot = d + ncpus;
	for (c = 0; c < ncpus; c++) {
		double w1 = rate_of(cpu_n, c) * rate_of(cpu_p, c) - 1;

		if (w1 > wmax1)
			wmax1 = w1;
		for (i = 0; i < n; i++)
			tot[c] += delta(prev[(size_t)i * ncpus + c],
					cur[(size_t)i * ncpus + c]);
	}
	for (i = 0; i < n; i++) {
		for (c = 0; c < ncpus; c++)
			d[c] = delta(prev[(size_t)i * ncpus + c],
				     cur[(size_t)i * ncpus + c]);
		rep->shards[i].load_err_mps = ks_to_mps(
			ks_shard_load_halfwidth(ks_shard_load_var(d, tot, cpu_n,
								  cpu_p, ncpus,
								  scale),
						wmax1) /
			secs);
	}
	free(d);
}

void ks_shard_names(struct ks_shard_report *rep, const struct ks_shards *s)
{
	__u32 i, n = s->n > KS_MAX_SHARDS ? KS_MAX_SHARDS : s->n;

	for (i = 0; i < n; i++) {
		char *name = rep->shards[i].name;
		char full[KS_SHARD_HOST_MAX + 8];
		size_t len;

		ks_shard_addr(&s->v[i], full, sizeof(full));
		len = strlen(full);
		if (len < KS_SHARD_NAME_LEN) {
			memcpy(name, full, len + 1);
			continue;
		}
		/* Keep the port readable: "long-host-na...:11211". */
		{
			const char *port = strrchr(full, ':');
			size_t plen = strlen(port);
			size_t keep = KS_SHARD_NAME_LEN - 1 - 3 - plen;

			memcpy(name, full, keep);
			memcpy(name + keep, "...", 3);
			memcpy(name + keep + 3, port, plen + 1);
		}
	}
}

static int cmp_load(const void *a, const void *b, void *ctx)
{
	const struct ks_shard_report *rep = ctx;
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;
	const struct ks_shard_rate *rx = &rep->shards[x];
	const struct ks_shard_rate *ry = &rep->shards[y];
	__u64 lx = rx->reads_mps + rx->writes_mps;
	__u64 ly = ry->reads_mps + ry->writes_mps;

	if (lx != ly)
		return lx > ly ? -1 : 1;
	return x < y ? -1 : x > y;
}

void ks_shard_order(const struct ks_shard_report *rep, __u32 n, __u32 *order)
{
	__u32 i;

	if (n > KS_MAX_SHARDS)
		n = KS_MAX_SHARDS;
	for (i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), cmp_load, (void *)rep);
}

static int cmp_newest(const void *a, const void *b)
{
	const struct ks_misdirect *x = a, *y = b;

	if (x->ts_ns != y->ts_ns)
		return x->ts_ns > y->ts_ns ? -1 : 1;
	return 0;
}

static int same_client(const struct ks_misdirect *a,
		       const struct ks_misdirect *b)
{
	return a->sport == b->sport && a->proto == b->proto &&
	       !memcmp(a->saddr, b->saddr, 16);
}

size_t ks_misdirect_recent(const struct ks_misdirect *all, size_t n,
			   __u64 since_ns, struct ks_misdirect *out, size_t max)
{
	struct ks_misdirect *tmp;
	size_t i, j, m = 0, k = 0;

	if (!n || !max)
		return 0;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return 0;
	for (i = 0; i < n; i++)
		if (all[i].ts_ns && all[i].ts_ns >= since_ns)
			tmp[m++] = all[i];
	qsort(tmp, m, sizeof(*tmp), cmp_newest);
	for (i = 0; i < m && k < max; i++) {
		for (j = 0; j < k; j++)
			if (same_client(&out[j], &tmp[i]))
				break;
		if (j == k)
			out[k++] = tmp[i];
	}
	free(tmp);
	return k;
}
