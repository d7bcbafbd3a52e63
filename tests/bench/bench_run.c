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
#include <arpa/inet.h>
#include <net/if.h>
#include "kt_netns.h"
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "keysteer.skel.h"
#include "ks_ring_cache.h"
#include "dp/load_private.h"
#include "dp/cpu_maps.h"
#include "ks_empty.skel.h"
#include "ks_limit.h"
#include "dp/dedicated_map.h"
#include "bench.h"

/* After load: a pinned map would mean we share state with an agent. */
static bool any_pinned(struct bpf_object *obj)
{
	struct bpf_map *map;

	bpf_object__for_each_map (map, obj)
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

int bench_pin_cpu(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		cpu = pick_cpu();
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -errno;
	return cpu;
}

static int obj_fill(struct bench_obj *o, struct bpf_object *obj)
{
	static const char *const names[] = { "ks_config", "ks_pkts",
					     "ks_errors", "ks_ops" };
	struct bpf_program *prog;
	struct bpf_map *m[4];
	size_t i;

	prog = bpf_object__find_program_by_name(obj, "ks_ingress");
	if (!prog)
		return -ENOENT;
	for (i = 0; i < 4; i++) {
		m[i] = bpf_object__find_map_by_name(obj, names[i]);
		if (!m[i])
			return -ENOENT;
	}
	o->prog_fd = bpf_program__fd(prog);
	o->cfg_fd = bpf_map__fd(m[0]);
	o->pkts_fd = bpf_map__fd(m[1]);
	o->errors_fd = bpf_map__fd(m[2]);
	o->ops_fd = bpf_map__fd(m[3]);
	if (bpf_map__value_size(m[0]) != sizeof(struct ks_config) ||
	    bpf_map__value_size(m[1]) % 8 ||
	    bpf_map__value_size(m[3]) != sizeof(struct ks_op_stats))
		return -EPROTO;
	o->npkt = bpf_map__value_size(m[1]) / 8;
	o->nerr = bpf_map__max_entries(m[2]);
	o->nop = bpf_map__max_entries(m[3]);
	return 0;
}

/* The build before streams, or another build (--against, bench line's
 * --object), by file: its own maps, none pinned. */
int bench_open_other(struct bench_env *e, const char *path)
{
	struct bpf_object *obj = bpf_object__open_file(path, NULL);
	struct bpf_program *p;
	struct bpf_map *m;
	int err;

	if (!obj)
		return -errno;
	e->before.obj = obj;
	bpf_object__for_each_map (m, obj) {
		err = bpf_map__set_pin_path(m, NULL);
		if (err)
			return err;
	}
	err = ks_cpu_maps_size(obj);
	if (err)
		return err;
	/* only the XDP program is timed */
	bpf_object__for_each_program (p, obj)
		bpf_program__set_autoload(
			p, !strcmp(bpf_program__name(p), "ks_ingress"));
	err = bpf_object__load(obj);
	if (err)
		return err;
	if (any_pinned(obj))
		return -EEXIST;
	err = obj_fill(&e->before, obj);
	if (!err)
		e->have_before = true;
	return err;
}

int bench_open(struct bench_env *e, int cpu, const char *before)
{
	int err;

	memset(e, 0, sizeof(*e));
	e->cpu = cpu < 0 ? pick_cpu() : cpu;
	err = bench_pin_cpu(e->cpu);
	if (err < 0) {
		fprintf(stderr,
			"bench: cannot pin to CPU %d: %s; pick another "
			"with --cpu\n",
			e->cpu, strerror(-err));
		return err;
	}
	e->ncpu = libbpf_num_possible_cpus();
	if (e->ncpu <= 0) {
		fprintf(stderr, "bench: cannot count CPUs: %s\n",
			strerror(-e->ncpu));
		return e->ncpu ? e->ncpu : -EINVAL;
	}

	e->ks = ks_load_private(0, &err);
	if (!e->ks) {
		fprintf(stderr,
			"bench: loading keysteer.bpf.o failed: %s; "
			"run as root on a kernel with BTF (-v shows the "
			"verifier log)\n",
			strerror(-err));
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
	err = obj_fill(&e->cur, e->ks->obj);
	if (err) {
		fprintf(stderr,
			"bench: keysteer.bpf.o lacks a program or map "
			"the benchmark needs: %s\n",
			strerror(-err));
		goto fail;
	}
	if (before) {
		err = bench_open_other(e, before);
		if (err) {
			fprintf(stderr,
				"bench: loading the build before "
				"streams (%s) failed: %s\n",
				before, strerror(-err));
			goto fail;
		}
	}
	e->xdp_fd = bpf_program__fd(e->ks->progs.ks_ingress);
	e->tc_fd = bpf_program__fd(e->ks->progs.ks_tc_ingress);
	e->empty_fd = bpf_program__fd(e->empty->progs.ks_empty);
	err = ks_hot_map_open(&e->hot, bpf_map__fd(e->ks->maps.ks_hot),
			      bpf_map__fd(e->ks->maps.ks_hot_filter),
			      bpf_map__fd(e->ks->maps.ks_hot_stats),
			      bpf_map__fd(e->ks->maps.ks_replicas),
			      bpf_map__fd(e->ks->maps.ks_replica_stats));
	if (err) {
		fprintf(stderr, "bench: mapping ks_hot failed: %s\n",
			strerror(-err));
		goto fail;
	}
	return 0;
fail:
	bench_close(e);
	return err;
}

void bench_close(struct bench_env *e)
{
	if (e->slog_pos)
		munmap(e->slog_pos, e->slog_len);
	if (e->slog_pos_before)
		munmap(e->slog_pos_before, e->slog_len);
	e->slog_pos = e->slog_pos_before = NULL;
	ks_hot_map_close(&e->hot);
	ks_empty_bpf__destroy(e->empty);
	keysteer_bpf__destroy(e->ks);
	bpf_object__close(e->before.obj);
	e->before.obj = NULL;
	e->have_before = false;
	e->empty = NULL;
	e->ks = NULL;
}

static struct ks_slog_pos *slog_map(int fd, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

int bench_slog_on(struct bench_env *e)
{
	size_t len = (size_t)e->ncpu * sizeof(struct ks_slog_pos);
	long page = sysconf(_SC_PAGESIZE);
	struct bpf_map *m;

	len = (len + (size_t)page - 1) & ~((size_t)page - 1);
	e->slog_len = len;
	e->slog_pos = slog_map(bpf_map__fd(e->ks->maps.ks_slog_pos), len);
	if (!e->slog_pos)
		return -errno;
	m = e->have_before
		    ? bpf_object__find_map_by_name(e->before.obj, "ks_slog_pos")
		    : NULL;
	if (m) {
		e->slog_pos_before = slog_map(bpf_map__fd(m), len);
		if (!e->slog_pos_before)
			return -errno;
	}
	e->cfg.flags |= KS_CFG_SLOG;
	return 0;
}

static void slog_drain(struct ks_slog_pos *pos, int ncpu)
{
	int cpu;

	for (cpu = 0; pos && cpu < ncpu; cpu++)
		*(volatile __u64 *)&pos[cpu].tail =
			*(volatile __u64 *)&pos[cpu].head;
}

void bench_slog_drain(struct bench_env *e)
{
	slog_drain(e->slog_pos, e->ncpu);
	slog_drain(e->slog_pos_before, e->ncpu);
}

int bench_set_sample(struct bench_env *e, __u32 sample_n)
{
	__u32 zero = 0;

	__u32 hot = e->cfg.hot, flags = e->cfg.flags;

	memset(&e->cfg, 0, sizeof(e->cfg));
	e->cfg.hot = hot;
	e->cfg.flags = flags;
	e->cfg.ports[0] = BENCH_MC_PORT;
	e->cfg.sample_n = sample_n;
	if (bpf_map_update_elem(bpf_map__fd(e->ks->maps.ks_config), &zero,
				&e->cfg, BPF_ANY))
		return -errno;
	if (e->have_before) {
		/* the same layout; the hot table is the new build's only */
		struct ks_config old = e->cfg;

		old.hot = 0;
		old.flags = flags & KS_CFG_SLOG;
		if (bpf_map_update_elem(e->before.cfg_fd, &zero, &old, BPF_ANY))
			return -errno;
	}
	return 0;
}

/* One limited key: the packet's, or another for BH_LIMIT_OTHER; a rate
 * no run reaches, or a bucket empty for the next 1000 s. */
static int bench_set_limit(struct bench_env *e, int hot, const char *key,
			   size_t len)
{
	int fd = bpf_map__fd(e->ks->maps.ks_limits);
	struct ks_limit_slot v = {};
	__u64 kw[KS_KEY_WORDS] = {}, hash, k;
	__u32 rate = hot == BH_LIMIT_REPLY || hot == BH_LIMIT_DROP ||
				     hot == BH_LIMIT_REPLY_HEAD
			     ? 1
			     : KS_LIMIT_RATE_MAX;
	struct timespec ts;

	while (!bpf_map_get_next_key(fd, NULL, &k))
		if (bpf_map_delete_elem(fd, &k))
			return -errno;
	if (hot == BH_LIMIT_OTHER) {
		key = "some-other-key";
		len = strlen(key);
	}
	memcpy(kw, key, len);
	hash = ks_key_hash(kw, len);
	v.len = (__u16)len;
	memcpy(v.key, key, len);
	v.interval_ns = ks_limit_interval_ns(rate);
	v.tau_ns = ks_limit_tau_ns(rate);
	if (rate == 1) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		v.tat_ns = (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec +
			   1000ULL * 1000000000ULL;
	}
	return bpf_map_update_elem(fd, &hash, &v, 0) ? -errno : 0;
}

int bench_set_hot(struct bench_env *e, int hot, const char *key, size_t len)
{
	__u64 kw[KS_KEY_WORDS] = {};
	__u8 reps[BENCH_STEER_COPIES - 1];
	__u32 zero = 0, i;
	__u64 hash;
	int idx;

	/* empty the table: these slots were never steered from concurrently */
	for (i = 0; i < KS_HOT_SLOTS; i++)
		if (e->hot.slot[i].hash)
			ks_hot_map_release(&e->hot, i);
	ks_hot_map_reclaim(&e->hot);
	e->cfg.hot = hot != BH_NONE && !bench_hot_limits(hot);
	e->cfg.flags &= ~(__u32)(KS_CFG_LIMITS | KS_CFG_LIMIT_DROP |
				 KS_CFG_LIMIT_GROW_HEAD);
	if (bench_hot_limits(hot))
		e->cfg.flags |= KS_CFG_LIMITS |
				(hot == BH_LIMIT_DROP ? KS_CFG_LIMIT_DROP : 0) |
				(hot == BH_LIMIT_REPLY_HEAD
					 ? KS_CFG_LIMIT_GROW_HEAD
					 : 0);
	if (bpf_map_update_elem(bpf_map__fd(e->ks->maps.ks_config), &zero,
				&e->cfg, BPF_ANY))
		return -errno;
	if (hot == BH_NONE)
		return 0;
	if (bench_hot_limits(hot))
		return bench_set_limit(e, hot, key, len);
	if (hot == BH_OTHER) {
		key = "some-other-key";
		len = strlen(key);
	}
	memcpy(kw, key, len);
	hash = ks_key_hash(kw, len);
	idx = ks_hot_map_alloc(&e->hot, hash, (const __u8 *)key, len);
	if (idx < 0)
		return idx;
	if (!bench_hot_steers(hot))
		return 0;
	/* ks_replicas: the IPv4 replicas, then the IPv6 ones */
	for (i = 0; i < BENCH_STEER_COPIES - 1; i++)
		reps[i] = (__u8)(i + (hot == BH_STEER6 ? BENCH_STEER_COPIES - 1
						       : 0));
	ks_hot_map_set_copies(&e->hot, idx, BENCH_STEER_COPIES, reps,
			      KS_STEER_SCHED / BENCH_STEER_COPIES);
	ks_hot_map_arm(&e->hot, idx, 0, ~0ULL >> 2);
	return 0;
}

int bench_steer_netns(struct bench_env *e)
{
	struct ks_replica r[2 * (BENCH_STEER_COPIES - 1)] = {};
	struct ks_vlan_key vk = { .vid = { BENCH_VLAN_OUTER, 0 } };
	__u32 ifindex;
	char cmd[256];
	int err = kt_private_netns(), i, n6;

	if (err)
		return err;
	if (system("ip link add ksb0 address 02:00:00:00:00:02 type veth peer name ksb0p &&"
		   "ip addr add 198.18.0.2/24 dev ksb0 && ip link set ksb0p up &&"
		   "ip addr add 2001:2::2/64 dev ksb0 nodad &&"
		   "ip link set ksb0 up && sysctl -qw net.ipv4.conf.ksb0.forwarding=1 &&"
		   "sysctl -qw net.ipv6.conf.ksb0.forwarding=1"))
		return -EIO;
	/* ks_replicas 0..n6-1 IPv4, n6..2*n6-1 IPv6: permanent neighbours */
	n6 = BENCH_STEER_COPIES - 1;
	for (i = 0; i < 2 * n6; i++) {
		int v6 = i >= n6, k = i % n6;
		char addr[32];

		snprintf(addr, sizeof(addr), v6 ? "2001:2::%d" : "198.18.0.%d",
			 50 + k);
		snprintf(
			cmd, sizeof(cmd),
			"ip neigh replace %s lladdr 02:00:00:00:%02x:%02x dev ksb0 nud permanent",
			addr, v6 ? 6 : 1, k);
		if (system(cmd) ||
		    inet_pton(v6 ? AF_INET6 : AF_INET, addr, &r[i].addr) != 1)
			return -EIO;
		r[i].port = htons(11211);
		r[i].family = v6 ? KS_AF_INET6 : KS_AF_INET;
	}
	e->steer_ifindex = if_nametoindex("ksb0");
	if (!e->steer_ifindex)
		return -ENODEV;
	/* the tagged frames' "sub-interfaces" are ksb0 itself: the same
	 * lookups and rewrite as a real VLAN device, which this kernel may
	 * not make */
	ifindex = (__u32)e->steer_ifindex;
	vk.ifindex = ifindex;
	if (bpf_map_update_elem(bpf_map__fd(e->ks->maps.ks_vlans), &vk,
				&ifindex, BPF_ANY))
		return -errno;
	vk.vid[1] = BENCH_VLAN_INNER;
	if (bpf_map_update_elem(bpf_map__fd(e->ks->maps.ks_vlans), &vk,
				&ifindex, BPF_ANY))
		return -errno;
	return ks_hot_map_set_replicas(&e->hot, r, 2 * n6);
}

/* One entry of the other build's map name, whose values must be len
 * bytes (its layout this build's). */
static int before_update(struct bench_env *e, const char *name, const void *key,
			 const void *val, size_t len)
{
	struct bpf_map *m = bpf_object__find_map_by_name(e->before.obj, name);

	if (!m)
		return -ENOENT;
	if (bpf_map__value_size(m) != len)
		return -EPROTO;
	return bpf_map_update_elem(bpf_map__fd(m), key, val, BPF_ANY) ? -errno
								      : 0;
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
	return e->ring_before
		       ? before_update(e, "ks_ring", &half, h, sizeof(*h))
		       : 0;
}

/*
 * Empties slot idx of m on every CPU, whichever form the object's ring
 * cache has: a plain array of CPUs x KS_RING_CACHE_SLOTS (this tree,
 * ks_ring_cache.h) or a per-CPU array (builds before issue 27's cut,
 * benched --against).
 */
static int cache_clear_map(struct bpf_map *m, __u32 idx, int ncpu)
{
	size_t vsz = (bpf_map__value_size(m) + 7) & ~(size_t)7;
	void *zero = calloc((size_t)ncpu, vsz);
	int fd = bpf_map__fd(m), c, err = 0;
	__u32 k;

	if (!zero)
		return -ENOMEM;
	if (bpf_map__type(m) == BPF_MAP_TYPE_PERCPU_ARRAY) {
		if (bpf_map_update_elem(fd, &idx, zero, BPF_ANY))
			err = -errno;
	} else if (bpf_map__max_entries(m) !=
		   (__u32)ncpu * KS_RING_CACHE_SLOTS) {
		err = -EPROTO; /* not sized by ks_cpu_maps_size() */
	} else {
		for (c = 0; c < ncpu && !err; c++) {
			k = (__u32)c * KS_RING_CACHE_SLOTS + idx;
			if (bpf_map_update_elem(fd, &k, zero, BPF_ANY))
				err = -errno;
		}
	}
	free(zero);
	return err;
}

int bench_cache_clear(struct bench_env *e, __u32 idx)
{
	struct bpf_map *m;
	int n = libbpf_num_possible_cpus(), err;

	if (n <= 0)
		return n ? n : -EINVAL;
	err = cache_clear_map(e->ks->maps.ks_ring_cache, idx, n);
	if (err || !e->ring_before)
		return err;
	m = bpf_object__find_map_by_name(e->before.obj, "ks_ring_cache");
	return m ? cache_clear_map(m, idx, n) : -ENOENT;
}

int bench_run_on(int prog_fd, const void *frame, __u32 len, __u32 repeat,
		 int ifindex, bool tx_ok, __u32 *ns)
{
	struct xdp_md ctx = { .data_end = len, .ingress_ifindex = ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame,
		    .data_size_in = len, .repeat = repeat);

	if (ifindex) {
		opts.ctx_in = &ctx;
		opts.ctx_size_in = sizeof(ctx);
	}
	if (bpf_prog_test_run_opts(prog_fd, &opts))
		return -errno;
	/* tx_ok: a steered or refused get leaves by XDP_TX, or is dropped
	 * when the limit drops */
	if (opts.retval != XDP_PASS &&
	    !(tx_ok && (opts.retval == XDP_TX || opts.retval == XDP_DROP)))
		return -EPROTO;
	*ns = opts.duration;
	return 0;
}

/* Sum over CPUs of one per-CPU array entry made of n u64 fields. */
static int percpu_sum(struct bench_env *e, int fd, __u32 key, __u64 *sum, int n)
{
	__u64 *vals;
	int cpu, i, err = 0;

	vals = calloc((size_t)e->ncpu * n, sizeof(__u64));
	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &key, vals)) {
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

int bench_counts(struct bench_env *e, const struct bench_obj *o,
		 struct bench_counts *c)
{
	__u64 pc[64] = {};
	struct ks_op_stats st = {};
	__u64 v = 0;
	__u32 k, n = o->npkt;
	int err;

	memset(c, 0, sizeof(*c));
	if (n > 62)
		return -E2BIG;
	/* ks_pkts is one per-CPU entry holding every packet counter; the
	 * build before streams has only the first KS_PKT_STEER_NO_ROUTE + 1 */
	err = percpu_sum(e, o->pkts_fd, 0, pc, (int)n);
	/* an object from before KS_PKT_FAST_GET and _BYTES (a --before
	 * build) has what follows them 2 places earlier, and counts its
	 * fast gets in ks_ops; they came with KS_PKT_RING_UNPLACED + 1
	 * counters (dbd5124), and every counter since is appended (an
	 * --against build of main may lack only those) */
	if (n <= KS_PKT_RING_UNPLACED && n > KS_PKT_FAST_GET) {
		memmove(pc + KS_PKT_SAMPLED, pc + KS_PKT_FAST_GET,
			(n - KS_PKT_FAST_GET) * sizeof(pc[0]));
		pc[KS_PKT_FAST_GET] = pc[KS_PKT_FAST_GET_BYTES] = 0;
		n += KS_PKT_SAMPLED - KS_PKT_FAST_GET;
	}
	c->sampled = pc[KS_PKT_SAMPLED];
	c->ring_hit = pc[KS_PKT_RING_HIT];
	c->misdirected = pc[KS_PKT_MISDIRECTED];
	c->steered = pc[KS_PKT_STEERED];
	c->hot_reads = pc[KS_PKT_HOT_READ];
	c->hot_writes = pc[KS_PKT_HOT_WRITE];
	if (n > KS_PKT_RESYNC_LOST) {
		c->flow_new = pc[KS_PKT_FLOW_NEW];
		c->flow_end = pc[KS_PKT_FLOW_END];
		c->flow_cont = pc[KS_PKT_FLOW_CONT];
		c->flow_dup = pc[KS_PKT_FLOW_DUP] + pc[KS_PKT_FLOW_OVERLAP];
		c->resync = pc[KS_PKT_RESYNC_GAP] + pc[KS_PKT_RESYNC_UNKNOWN] +
			    pc[KS_PKT_RESYNC_CARRY] + pc[KS_PKT_RESYNC_LOST];
		c->slog = pc[KS_PKT_SLOG];
		c->slog_full = pc[KS_PKT_SLOG_FULL];
	}
	/* KS_ERR_NOT_MEMCACHED is 0 in both builds; the rest are summed */
	for (k = 0; !err && k < o->nerr; k++) {
		err = percpu_sum(e, o->errors_fd, k, &v, 1);
		if (k == KS_ERR_NOT_MEMCACHED)
			c->not_mc = v;
		else
			c->errors += v;
	}
	for (k = 0; !err && k < o->nop; k++) {
		err = percpu_sum(e, o->ops_fd, k, (__u64 *)&st, 3);
		c->keys += st.keys;
		c->requests += st.requests;
	}
	/* the lone gets ks_ops lacks, as the agent adds them */
	c->keys += pc[KS_PKT_FAST_GET];
	c->requests += pc[KS_PKT_FAST_GET];
	return err;
}

int bench_prog_stats(int prog_fd, struct bench_stats *st)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -errno;
	st->run_time_ns = info.run_time_ns;
	st->run_cnt = info.run_cnt;
	return 0;
}

int bench_stats_on(void)
{
	int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);

	return fd < 0 ? -errno : fd;
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

int bench_set_ded(struct bench_env *e, int ded, const char *key, size_t len,
		  __u32 shard)
{
	static struct ks_hot_rules r;
	static int idx[KS_HOT_RULES_MAX];
	const int *halves[2] = { idx, idx };
	struct ks_ded_fds f = {
		.meta = bpf_map__fd(e->ks->maps.ks_ded_meta),
		.exact = bpf_map__fd(e->ks->maps.ks_ded_exact),
		.prefix = bpf_map__fd(e->ks->maps.ks_ded_prefix),
		.stats = bpf_map__fd(e->ks->maps.ks_ded_stats),
	};
	char text[600], err[200];
	size_t i;

	/* rules of other keys always (a hit is looked up among others),
	 * with the key's first byte but for BD_FIRST */
	snprintf(text, sizeof(text), "shard %c~exact a\nshard %c~* b\n",
		 ded == BD_FIRST ? '~' : key[0],
		 ded == BD_FIRST ? '~' : key[0]);
	if (ded == BD_PREFIX)
		snprintf(text + strlen(text), sizeof(text) - strlen(text),
			 "shard %.4s* c\n", key);
	else if (ded == BD_EXACT)
		snprintf(text + strlen(text), sizeof(text) - strlen(text),
			 "shard %.*s c\n", (int)len, key);
	if (ded == BD_NONE)
		text[0] = '\0';
	if (ks_hot_rules_parse(&r, text, strlen(text), "bench", err,
			       sizeof(err))) {
		fprintf(stderr, "bench: shard rules: %s\n", err);
		return -EINVAL;
	}
	for (i = 0; i < r.n; i++)
		idx[i] = (int)shard;
	return ks_ded_write(&f, &r, halves);
}
