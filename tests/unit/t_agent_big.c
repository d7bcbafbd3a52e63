// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * make bench-agent-big's arithmetic (tests/bench/agent_big_model.c): the
 * kernel's copy as a fitted line, the per-CPU maps' memory at N CPUs, the
 * CPU list and the statistics it prints.
 */
#include <linux/bpf.h>
#include "ktest.h"
#include "../bench/agent_big_model.h"
#include "unit.h"

static void fit(void)
{
	/* 900 ns a call + 0.1 ns a byte, exactly */
	const double x[] = { 16, 560, 8192, 32768, 65536 };
	double y[5], flat[2] = { 5, 5 }, neg[2] = { 10, -1 };
	struct ab_fit f;
	struct ab_calls c = { 32, 32 * 2097152ULL };
	size_t i;

	kt_begin("agent_big_fit_line");
	for (i = 0; i < 5; i++)
		y[i] = 900 + 0.1 * x[i];
	CHECK_EQ(ab_fit_line(x, y, 5, &f), 0);
	CHECK(f.ns_call > 899.999 && f.ns_call < 900.001, "a %f", f.ns_call);
	CHECK(f.ns_byte > 0.09999 && f.ns_byte < 0.10001, "b %f", f.ns_byte);
	/* 32 lookups of a 16 KiB segment at 128 CPUs */
	CHECK(ab_model_ns(&f, &c) > 32 * 900 + 6710886.0 - 1 &&
		      ab_model_ns(&f, &c) < 32 * 900 + 6710886.5 + 1,
	      "model %f", ab_model_ns(&f, &c));
	CHECK_EQ(ab_fit_line(x, y, 1, &f), -1);
	CHECK_EQ(ab_fit_line((const double[]){ 8, 8 }, flat, 2, &f), -1);
	CHECK_EQ(ab_fit_line(x, neg, 2, &f), -1);
	kt_end();
}

static void memory(void)
{
	const struct ab_map_desc d[] = {
		/* ks_cms: 32 entries of 16 KiB */
		{ BPF_MAP_TYPE_PERCPU_ARRAY, 4, 16384, 32, 1, 0 },
		/* ks_cands: 1024 of 280 */
		{ BPF_MAP_TYPE_PERCPU_ARRAY, 4, 280, 1024, 0, 1 },
		/* a counter of 20 bytes: rounded to 24 */
		{ BPF_MAP_TYPE_PERCPU_ARRAY, 4, 20, 2, 0, 0 },
		{ BPF_MAP_TYPE_LRU_PERCPU_HASH, 8, 8, 10, 0, 0 },
		{ BPF_MAP_TYPE_ARRAY, 4, 100, 3, 0, 0 },
		{ BPF_MAP_TYPE_RINGBUF, 0, 0, 1 << 20, 0, 0 },
	};
	struct ab_map_mem m2, m128;

	kt_begin("agent_big_map_memory_scales_percpu_only");
	ab_map_memory(d, 6, 2, &m2);
	ab_map_memory(d, 6, 128, &m128);
	CHECK_EQ(m2.cms, 2ULL * 32 * 16384);
	CHECK_EQ(m128.cms, 128ULL * 32 * 16384); /* 64 MiB */
	CHECK_EQ(m128.cands, 128ULL * 1024 * 280);
	CHECK_EQ(m128.percpu,
		 128ULL * (32 * 16384 + 1024 * 280 + 2 * 24 + 10 * 8));
	CHECK_EQ(m2.shared, 104ULL * 3 + (1 << 20));
	CHECK_EQ(m128.shared, m2.shared);
	CHECK(ab_map_is_percpu(BPF_MAP_TYPE_PERCPU_HASH) &&
		      !ab_map_is_percpu(BPF_MAP_TYPE_LRU_HASH),
	      "percpu types");
	{
		/* the sample log: a plain array the loader sizes per CPU
		 * (declared for one), counted with the per-CPU maps */
		struct ab_map_desc slog[] = {
			{ BPF_MAP_TYPE_ARRAY, 4, 64, 4096, 0, 0, 1 },
			{ BPF_MAP_TYPE_ARRAY, 4, 128, 1, 0, 0, 1 },
		};
		struct ab_map_mem s128;

		ab_map_memory(slog, 2, 128, &s128);
		CHECK_EQ(s128.percpu, 128ULL * (4096 * 64 + 128)); /* 32 MiB */
		CHECK_EQ(s128.shared, 0);
	}
	kt_end();
}

static void cpu_list_and_stats(void)
{
	int v[4];
	const __u64 odd[] = { 5, 1, 9 }, even[] = { 4, 1, 9, 2 };

	kt_begin("agent_big_cpu_list");
	CHECK_EQ(ab_parse_cpu_list("2,16,64,128", v, 4), 4);
	CHECK(v[0] == 2 && v[1] == 16 && v[2] == 64 && v[3] == 128, "values");
	CHECK_EQ(ab_parse_cpu_list("128", v, 4), 1);
	CHECK_EQ(ab_parse_cpu_list("", v, 4), -1);
	CHECK_EQ(ab_parse_cpu_list("2,,4", v, 4), -1);
	CHECK_EQ(ab_parse_cpu_list("2,", v, 4), -1);
	CHECK_EQ(ab_parse_cpu_list("0", v, 4), -1);
	CHECK_EQ(ab_parse_cpu_list("4097", v, 4), -1);
	CHECK_EQ(ab_parse_cpu_list("-2", v, 4), -1);
	CHECK_EQ(ab_parse_cpu_list("2x", v, 4), -1);
	CHECK_EQ(ab_parse_cpu_list("1,2,3,4,5", v, 4), -1);
	kt_end();

	kt_begin("agent_big_median_max");
	CHECK_EQ(ab_median_u64(odd, 3), 5);
	CHECK_EQ(ab_median_u64(even, 4), 2); /* the lower middle */
	CHECK_EQ(ab_median_u64(odd, 0), 0);
	CHECK_EQ(ab_max_u64(even, 4), 9);
	CHECK_EQ(odd[0], 5); /* the input left as it was */
	kt_end();
}

static void slog_load(void)
{
	struct ab_slog_load l;

	kt_begin("agent_big_slog_load");
	/* 100 ns a record at 262,144 keys/s: 26.2 ms a second a CPU; 128
	 * CPUs 3,355 ms, beyond one thread; polls of 10 us, 1,000 a second:
	 * 10 ms more, and 37.8 CPUs served by one thread */
	CHECK_EQ(ab_slog_load(100, 10000, 1000, 262144, 128, &l), 0);
	CHECK(l.ms_per_s > 3365.4 && l.ms_per_s < 3365.5, "ms %f", l.ms_per_s);
	CHECK(l.cpus_served > 37.76 && l.cpus_served < 37.77, "cpus %f",
	      l.cpus_served);
	/* the polls alone take the thread: none served */
	CHECK_EQ(ab_slog_load(100, 1e6, 1000, 262144, 2, &l), 0);
	CHECK(l.cpus_served == 0, "cpus %f", l.cpus_served);
	/* nothing sampled: the polls only */
	CHECK_EQ(ab_slog_load(100, 10000, 143, 0, 64, &l), 0);
	CHECK(l.ms_per_s > 1.429 && l.ms_per_s < 1.431, "ms %f", l.ms_per_s);
	CHECK_EQ(ab_slog_load(-1, 0, 0, 1, 2, &l), -1);
	CHECK_EQ(ab_slog_load(1, 0, 0, 1, 0, &l), -1);
	CHECK_EQ(ab_slog_load(0.0 / 0.0, 0, 0, 1, 2, &l), -1);
	kt_end();
}

void test_agent_big(void)
{
	fit();
	memory();
	cpu_list_and_stats();
	slog_load();
}
