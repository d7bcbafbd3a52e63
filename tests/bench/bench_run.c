// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench_run.c - loads keysteer and the empty baseline into one process and
 * times them with BPF_PROG_TEST_RUN.
 *
 * Maps are declared LIBBPF_PIN_BY_NAME for the agent; the benchmark clears
 * every pin path before load, so it neither reuses a running agent's maps
 * nor leaves anything under /sys/fs/bpf (and needs no bpffs at all).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "keysteer.skel.h"
#include "ks_empty.skel.h"
#include "bench.h"

static int unpin_all(struct bpf_object *obj)
{
	struct bpf_map *map;
	int err;

	bpf_object__for_each_map(map, obj) {
		err = bpf_map__set_pin_path(map, NULL);
		if (err)
			return err;
	}
	return 0;
}

/* After load: a pinned map would mean we share state with an agent. */
static bool any_pinned(struct bpf_object *obj)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, obj)
		if (bpf_map__is_pinned(map))
			return true;
	return false;
}

/* The last online CPU: on small VMs CPU 0 takes most device interrupts. */
static int pick_cpu(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 1 ? (int)n - 1 : 0;
}

static int pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -errno;
	return 0;
}

int bench_open(struct bench_env *e, int cpu)
{
	int err;

	memset(e, 0, sizeof(*e));
	e->cpu = cpu < 0 ? pick_cpu() : cpu;
	err = pin_cpu(e->cpu);
	if (err) {
		fprintf(stderr, "bench: cannot pin to CPU %d: %s; pick another "
			"with --cpu\n", e->cpu, strerror(-err));
		return err;
	}
	e->ncpu = libbpf_num_possible_cpus();
	if (e->ncpu <= 0) {
		fprintf(stderr, "bench: cannot count CPUs: %s\n",
			strerror(-e->ncpu));
		return e->ncpu ? e->ncpu : -EINVAL;
	}

	e->ks = keysteer_bpf__open();
	if (!e->ks) {
		err = -errno;
		fprintf(stderr, "bench: opening keysteer.bpf.o failed: %s\n",
			strerror(-err));
		return err;
	}
	err = unpin_all(e->ks->obj);
	if (!err)
		err = keysteer_bpf__load(e->ks);
	if (err) {
		fprintf(stderr, "bench: loading keysteer.bpf.o failed: %s; "
			"run as root on a kernel with BTF (-v shows the "
			"verifier log)\n", strerror(-err));
		goto fail;
	}
	if (any_pinned(e->ks->obj)) {
		fprintf(stderr, "bench: a keysteer map got pinned; refusing to "
			"measure on shared maps\n");
		err = -EEXIST;
		goto fail;
	}
	e->empty = ks_empty_bpf__open_and_load();
	if (!e->empty) {
		err = -errno;
		fprintf(stderr, "bench: loading ks_empty.bpf.o failed: %s\n",
			strerror(-err));
		goto fail;
	}
	e->xdp_fd = bpf_program__fd(e->ks->progs.ks_ingress);
	e->tc_fd = bpf_program__fd(e->ks->progs.ks_tc_ingress);
	e->empty_fd = bpf_program__fd(e->empty->progs.ks_empty);
	return 0;
fail:
	bench_close(e);
	return err;
}

void bench_close(struct bench_env *e)
{
	ks_empty_bpf__destroy(e->empty);
	keysteer_bpf__destroy(e->ks);
	e->empty = NULL;
	e->ks = NULL;
}

int bench_set_sample(struct bench_env *e, __u32 sample_n)
{
	__u32 zero = 0;

	memset(&e->cfg, 0, sizeof(e->cfg));
	e->cfg.ports[0] = BENCH_MC_PORT;
	e->cfg.sample_n = sample_n;
	if (bpf_map_update_elem(bpf_map__fd(e->ks->maps.ks_config), &zero,
				&e->cfg, BPF_ANY))
		return -errno;
	return 0;
}

int bench_set_ring(struct bench_env *e, const struct ks_ring_half *h)
{
	static struct ks_ring_half *empty;
	__u32 half = 0;

	if (!h) {
		if (!empty)
			empty = calloc(1, sizeof(*empty));
		if (!empty)
			return -ENOMEM;
		h = empty;
	}
	if (bpf_map_update_elem(bpf_map__fd(e->ks->maps.ks_ring), &half, h,
				BPF_ANY))
		return -errno;
	return 0;
}

int bench_run(int prog_fd, const void *frame, __u32 len, __u32 repeat,
	      __u32 *ns)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame,
		    .data_size_in = len, .repeat = repeat);

	if (bpf_prog_test_run_opts(prog_fd, &opts))
		return -errno;
	if (opts.retval != XDP_PASS)
		return -EPROTO;
	*ns = opts.duration;
	return 0;
}

/* Sum over CPUs of one per-CPU array entry made of n u64 fields. */
static int percpu_sum(struct bench_env *e, struct bpf_map *map, __u32 key,
		      __u64 *sum, int n)
{
	__u64 *vals;
	int cpu, i, err = 0;

	vals = calloc((size_t)e->ncpu * n, sizeof(__u64));
	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(map), &key, vals)) {
		err = -errno;
		goto out;
	}
	for (i = 0; i < n; i++)
		sum[i] = 0;
	for (cpu = 0; cpu < e->ncpu; cpu++)
		for (i = 0; i < n; i++)
			sum[i] += vals[cpu * n + i];
out:
	free(vals);
	return err;
}

int bench_counts(struct bench_env *e, struct bench_counts *c)
{
	struct ks_pkt_counters pc = {};
	struct ks_op_stats st = {};
	__u64 v = 0;
	__u32 k;
	int err;

	memset(c, 0, sizeof(*c));
	/* ks_pkts is one per-CPU entry holding every packet counter */
	err = percpu_sum(e, e->ks->maps.ks_pkts, 0, pc.n, KS_PKT_MAX);
	c->sampled = pc.n[KS_PKT_SAMPLED];
	c->ring_hit = pc.n[KS_PKT_RING_HIT];
	c->misdirected = pc.n[KS_PKT_MISDIRECTED];
	for (k = 0; !err && k < KS_ERR_MAX; k++) {
		err = percpu_sum(e, e->ks->maps.ks_errors, k, &v, 1);
		if (k == KS_ERR_NOT_MEMCACHED)
			c->not_mc = v;
		else
			c->errors += v;
	}
	for (k = 0; !err && k < KS_OP_MAX; k++) {
		err = percpu_sum(e, e->ks->maps.ks_ops, k, (__u64 *)&st, 3);
		c->keys += st.keys;
		c->requests += st.requests;
	}
	return err;
}

int bench_prog_info(int prog_fd, const char *name, struct bench_prog_info *pi)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	memset(pi, 0, sizeof(*pi));
	pi->name = name;
	/* libbpf 1.1 has no bpf_prog_get_info_by_fd(); this is its old name */
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -errno;
	pi->verified_insns = info.verified_insns;
	pi->xlated_len = info.xlated_prog_len;
	pi->jited_len = info.jited_prog_len;
	return 0;
}
