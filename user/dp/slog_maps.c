// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * slog_maps.c - the sample log's maps sized for this host (see
 * slog_maps.h).
 */
#include <errno.h>
#include <bpf/libbpf.h>
#include "keysteer.h"
#include "dp/slog_maps.h"

int ks_slog_size(struct bpf_object *obj)
{
	struct bpf_map *log = bpf_object__find_map_by_name(obj, "ks_slog");
	struct bpf_map *pos = bpf_object__find_map_by_name(obj, "ks_slog_pos");
	int ncpu = libbpf_num_possible_cpus(), err;

	if (!log && !pos)
		return 0;
	if (!log || !pos)
		return -ENOENT; /* half a log: not an object of this tree */
	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EINVAL;
	/* the datapath indexes the log by CPU (cpu * KS_SLOG_RECS + slot),
	 * a __u32: bounded far above any host's CPUs */
	if ((unsigned long long)ncpu * KS_SLOG_RECS > 0xffffffffULL)
		return -E2BIG;
	err = bpf_map__set_max_entries(log, (__u32)ncpu * KS_SLOG_RECS);
	return err ? err : bpf_map__set_max_entries(pos, (__u32)ncpu);
}
