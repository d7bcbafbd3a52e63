/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cpu_maps.h - the maps indexed by CPU (the sample log's, the ring
 * cache) sized for this host before a load of keysteer.bpf.o (issue 27;
 * bpf/keysteer.h, "sample log"; bpf/ks_ring_cache.h).
 */
#ifndef KS_CPU_MAPS_H
#define KS_CPU_MAPS_H

struct bpf_object;

/*
 * The maps the datapath indexes by CPU, sized to the host's possible
 * CPUs: ks_slog to KS_SLOG_RECS records a CPU, ks_slog_pos to one entry a
 * CPU, ks_ring_cache to KS_RING_CACHE_SLOTS slots a CPU (issue 27,
 * bpf/ks_ring_cache.h). The object declares one CPU's worth (a BPF
 * object cannot know the host's CPUs); every loader of keysteer.bpf.o
 * calls this between open and load. Maps an object lacks (a build before
 * the log) or has in an older form (a per-CPU ring cache) are left
 * alone. Returns 0 or a negative errno.
 */
int ks_cpu_maps_size(struct bpf_object *obj);

#endif
