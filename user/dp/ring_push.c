// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ring_push.c - a built ring into the idle half of ks_ring, the flip and
 * the RCU grace period (see ring_push.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <bpf/bpf.h>
#include "dp/ring_push.h"

int ks_rcu_wait(void)
{
	/* MEMBARRIER_CMD_GLOBAL is synchronize_rcu() in the kernel: every
	 * RCU read-side section that was running when it started (every
	 * XDP or tc program run) has ended when it returns. */
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
		return -errno;
	return 0;
}

int ks_rcu_wait_check(char *err, size_t errlen)
{
	long q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	if (q < 0) {
		snprintf(
			err, errlen,
			"this kernel has no membarrier() (%s), which ring swaps need to wait out packets on the old ring; use a kernel with CONFIG_MEMBARRIER, or run without --shards",
			strerror(errno));
		return -ENOSYS;
	}
	if (!(q & MEMBARRIER_CMD_GLOBAL)) {
		snprintf(
			err, errlen,
			"membarrier(MEMBARRIER_CMD_GLOBAL) is not available (it is not with nohz_full CPUs), and ring swaps need it to wait out packets on the old ring; boot without nohz_full, or run without --shards");
		return -EOPNOTSUPP;
	}
	return 0;
}

/* Points ks_config.ring at half idx; every other field as read. */
static int set_active(int fd_config, __u32 idx)
{
	struct ks_config cfg;
	__u32 key = 0;

	if (bpf_map_lookup_elem(fd_config, &key, &cfg))
		return -errno;
	cfg.ring = idx;
	if (bpf_map_update_elem(fd_config, &key, &cfg, BPF_ANY))
		return -errno;
	return 0;
}

/* meta.version of both halves; a lookup copies a whole half. */
static int read_versions(int fd_ring, __u64 v[KS_RING_HALVES])
{
	struct ks_ring_half *buf = malloc(sizeof(*buf));
	__u32 i;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < KS_RING_HALVES; i++) {
		if (bpf_map_lookup_elem(fd_ring, &i, buf)) {
			err = -errno;
			break;
		}
		v[i] = buf->meta.version;
	}
	free(buf);
	return err;
}

int ks_ring_push(int fd_ring, int fd_config, struct ks_ring_half *half)
{
	__u64 v[KS_RING_HALVES];
	struct ks_config cfg;
	__u32 key = 0, active, idle;
	int err;

	if (bpf_map_lookup_elem(fd_config, &key, &cfg))
		return -errno;
	err = read_versions(fd_ring, v);
	if (err)
		return err;
	active = cfg.ring & 1;
	idle = active ^ 1;
	/*
	 * Every flip of ours is followed by a grace period, so the idle half
	 * has no readers - unless the index points at the older ring: a
	 * config write that raced our last flip ('agent trace' rewrites the
	 * whole config to toggle its flag) put the old index back, and
	 * packets may be reading either half. Point them at the newest ring
	 * again and wait them out before overwriting the other one.
	 */
	if (v[idle] > v[active]) {
		err = set_active(fd_config, idle);
		/* before the overwrite just below: in line */
		if (!err)
			err = ks_rcu_wait();
		if (err)
			return err;
		active = idle;
		idle = active ^ 1;
	}
	half->meta.version = (v[0] > v[1] ? v[0] : v[1]) + 1;
	if (bpf_map_update_elem(fd_ring, &idle, half, BPF_ANY))
		return -errno;
	err = set_active(fd_config, idle);
	if (err)
		return err;
	/* After this no packet reads the old half: the next push may
	 * rewrite it. Waited here, on the agent's loop, since every push
	 * relies on it: only when the ring changes (a reload, etcd), not
	 * every interval. The steering's grace periods, which came every
	 * time a hot key left or changed copies, run on their own thread
	 * (agent/run_steer.c). */
	return ks_rcu_wait();
}
