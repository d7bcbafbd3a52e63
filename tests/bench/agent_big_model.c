// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * agent_big_model.c - see agent_big_model.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/bpf.h>
#include "agent_big_model.h"

int ab_fit_line(const double *x, const double *y, size_t n, struct ab_fit *out)
{
	double mx = 0, my = 0, sxx = 0, sxy = 0;
	size_t i;

	if (n < 2)
		return -1;
	for (i = 0; i < n; i++) {
		if (!(y[i] >= 0))
			return -1;
		mx += x[i];
		my += y[i];
	}
	mx /= (double)n;
	my /= (double)n;
	for (i = 0; i < n; i++) {
		sxx += (x[i] - mx) * (x[i] - mx);
		sxy += (x[i] - mx) * (y[i] - my);
	}
	if (sxx <= 0)
		return -1;
	out->ns_byte = sxy / sxx;
	out->ns_call = my - out->ns_byte * mx;
	return 0;
}

double ab_model_ns(const struct ab_fit *f, const struct ab_calls *c)
{
	return (double)c->calls * f->ns_call + (double)c->bytes * f->ns_byte;
}

int ab_map_is_percpu(__u32 type)
{
	return type == BPF_MAP_TYPE_PERCPU_ARRAY ||
	       type == BPF_MAP_TYPE_PERCPU_HASH ||
	       type == BPF_MAP_TYPE_LRU_PERCPU_HASH ||
	       type == BPF_MAP_TYPE_PERCPU_CGROUP_STORAGE;
}

void ab_map_memory(const struct ab_map_desc *d, size_t n, int ncpus,
		   struct ab_map_mem *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < n; i++) {
		__u64 v = ((__u64)d[i].value_size + 7) & ~7ULL;

		if (!ab_map_is_percpu(d[i].type) && !d[i].cpu_sized) {
			/* a ring buffer's size is its max_entries */
			out->shared += d[i].type == BPF_MAP_TYPE_RINGBUF
					       ? d[i].max_entries
					       : v * d[i].max_entries;
			continue;
		}
		v *= (__u64)d[i].max_entries * (__u64)ncpus;
		out->percpu += v;
		if (d[i].is_cms)
			out->cms += v;
		if (d[i].is_cands)
			out->cands += v;
	}
}

int ab_parse_cpu_list(const char *s, int *out, int max)
{
	int n = 0;

	if (!s || !*s)
		return -1;
	for (;;) {
		char *end;
		long v;

		if (*s < '0' || *s > '9')
			return -1;
		errno = 0;
		v = strtol(s, &end, 10);
		if (errno || v < 1 || v > 4096 || n == max)
			return -1;
		out[n++] = (int)v;
		if (!*end)
			return n;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

__u64 ab_median_u64(const __u64 *v, size_t n)
{
	__u64 *s, m;

	if (!n)
		return 0;
	s = malloc(n * sizeof(*s));
	if (!s)
		return v[0];
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_u64);
	m = s[(n - 1) / 2];
	free(s);
	return m;
}

__u64 ab_max_u64(const __u64 *v, size_t n)
{
	__u64 m = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

int ab_slog_load(double ns_per_rec, double poll_ns, double polls_per_s,
		 double rate, int ncpus, struct ab_slog_load *out)
{
	double poll = poll_ns * polls_per_s; /* ns a second, whatever N */
	double per_cpu = ns_per_rec * rate;  /* ns a second, each CPU */

	if (!(ns_per_rec >= 0 && ns_per_rec < 1e12) ||
	    !(poll_ns >= 0 && poll_ns < 1e12) ||
	    !(polls_per_s >= 0 && polls_per_s < 1e9) ||
	    !(rate >= 0 && rate < 1e12) || ncpus < 1)
		return -1;
	out->ms_per_s = (per_cpu * ncpus + poll) / 1e6;
	/* a poll drains every CPU: at ncpus its cost is the one measured;
	 * taken as fixed, so the CPUs served are those of the rest */
	out->cpus_served = poll >= 1e9   ? 0
			   : per_cpu > 0 ? (1e9 - poll) / per_cpu
					 : 1e18;
	return 0;
}
