// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cpu_maps.c - the maps the datapath indexes by CPU sized for this host
 * (see cpu_maps.h).
 */
#include <errno.h>
#include <bpf/libbpf.h>
#include "keysteer.h"
#include "ks_ring_cache.h"
#include "dp/cpu_maps.h"

/* m to ncpu x per entries; m indexed by cpu * per + i, a __u32 */
static int size_by_cpu(struct bpf_map *m, int ncpu, __u32 per)
{
	if ((unsigned long long)ncpu * per > 0xffffffffULL)
		return -E2BIG;
	return bpf_map__set_max_entries(m, (__u32)ncpu * per);
}

int ks_cpu_maps_size(struct bpf_object *obj)
{
	struct bpf_map *log = bpf_object__find_map_by_name(obj, "ks_slog");
	struct bpf_map *pos = bpf_object__find_map_by_name(obj, "ks_slog_pos");
	struct bpf_map *rc = bpf_object__find_map_by_name(obj, "ks_ring_cache");
	int ncpu = libbpf_num_possible_cpus(), err;

	if (!log != !pos)
		return -ENOENT; /* half a log: not an object of this tree */
	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EINVAL;
	if (log) {
		err = size_by_cpu(log, ncpu, KS_SLOG_RECS);
		err = err ? err : size_by_cpu(pos, ncpu, 1);
		if (err)
			return err;
	}
	/* the ring cache as a plain array (a build before it had a per-CPU
	 * array, sized per CPU by the kernel: left alone) */
	if (rc && bpf_map__type(rc) == BPF_MAP_TYPE_ARRAY)
		return size_by_cpu(rc, ncpu, KS_RING_CACHE_SLOTS);
	return 0;
}
