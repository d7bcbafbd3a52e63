/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * agent_big_model.h - the pure arithmetic of make bench-agent-big
 * (tests/bench/agent_big.c): the kernel's copy modelled as a line fitted
 * to measured calls, the per-CPU maps' memory at N CPUs, and the small
 * statistics the bench prints. Unit-tested in tests/unit/t_agent_big.c.
 */
#ifndef AB_MODEL_H
#define AB_MODEL_H

#include <stddef.h>
#include <linux/types.h>

/* Calls of one kind (lookup or update) on one map in an interval, and
 * the bytes the kernel copies for them: N * round8(value_size) each. */
struct ab_calls {
	__u64 calls, bytes;
};

/* ns = ns_call + ns_byte * bytes, for one kind of call. */
struct ab_fit {
	double ns_call, ns_byte;
};

/* Least-squares line through (x[i] bytes, y[i] ns); -1 if fewer than two
 * distinct x, or a y is negative (a failed measurement). */
int ab_fit_line(const double *x, const double *y, size_t n, struct ab_fit *out);
double ab_model_ns(const struct ab_fit *f, const struct ab_calls *c);

/* What the memory model needs of a map of the BPF object. */
struct ab_map_desc {
	__u32 type; /* enum bpf_map_type */
	__u32 key_size, value_size, max_entries;
	int is_cms, is_cands;
	/* an array the loader sizes to max_entries per possible CPU (the
	 * sample log, user/dp/cpu_maps.c): counted with the per-CPU maps */
	int cpu_sized;
};

struct ab_map_mem {
	__u64 percpu; /* every per-CPU map: round8(value) * entries * N */
	__u64 cms;    /* of which ks_cms */
	__u64 cands;  /* of which ks_cands */
	__u64 shared; /* every other map's values (keys and overheads not
		       * counted), whatever N */
};

/* 1 for the map types whose values the kernel keeps once per possible
 * CPU (percpu array, percpu hash, LRU percpu hash, percpu cgroup
 * storage). */
int ab_map_is_percpu(__u32 type);
void ab_map_memory(const struct ab_map_desc *d, size_t n, int ncpus,
		   struct ab_map_mem *out);

/* "2,16,64,128" into out (at most max numbers, each 1..4096); the count,
 * or -1 for anything else. */
int ab_parse_cpu_list(const char *s, int *out, int max);

/*
 * The sample log's drain at N CPUs, from what one drain thread took: ns
 * of its CPU per record (drained and folded), and the CPU time of the
 * empty drains it polls with. At rate sampled keys a second on each of
 * ncpus CPUs and polls drains a second: the drain's CPU ms a second
 * (its share of one core, x 1000), and how many CPUs sampling at rate
 * one thread can keep up with (1 s of its CPU a second; 0 when the
 * polls alone take it). -1 for a negative or non-finite figure.
 */
struct ab_slog_load {
	double ms_per_s;    /* drain CPU ms a second at ncpus */
	double cpus_served; /* CPUs at rate one thread keeps up with */
};
int ab_slog_load(double ns_per_rec, double poll_ns, double polls_per_s,
		 double rate, int ncpus, struct ab_slog_load *out);

/* Median (the lower of the middle two) and maximum; 0 for n = 0. */
__u64 ab_median_u64(const __u64 *v, size_t n);
__u64 ab_max_u64(const __u64 *v, size_t n);

#endif
