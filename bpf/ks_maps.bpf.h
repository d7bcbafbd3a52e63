/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_maps.bpf.h - every map of the datapath. Maps the agent or a report
 * process reads are pinned by name under the per-interface folder the agent
 * chooses (pin_root_path); the scratch map is private to one load.
 */
#ifndef KS_MAPS_BPF_H
#define KS_MAPS_BPF_H

#include "keysteer.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_config);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KS_OP_MAX);
	__type(key, __u32);
	__type(value, struct ks_op_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_ops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KS_ERR_MAX);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_errors SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_pkt_counters);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_pkts SEC(".maps");

/* One segment of a row of one (epoch, class) count-min sketch per entry:
 * ks_cms_entry(). */
struct ks_cms_row {
	__u32 c[KS_CMS_SEG];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KS_CMS_ENTRIES);
	__type(key, __u32);
	__type(value, struct ks_cms_row);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_cms SEC(".maps");

/*
 * --sample auto: each CPU's 1 in N for each epoch (entry seq & 1), 0 for
 * ks_config.sample_n, and its 1 in P of the sampled keys placed on the
 * ring (struct ks_rate_entry). The agent writes the next epoch's entry
 * before it moves seq there, and a CPU reads its entry once per interval
 * (ks_sample_rate), so one CPU's share of an epoch has one rate, the one
 * the agent scales it by, and one P. Not pinned: a take-over starts at 0
 * and the new agent writes its own.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KS_EPOCHS);
	__type(key, __u32);
	__type(value, struct ks_rate_entry);
} ks_rate SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KS_CAND_SLOTS);
	__type(key, __u32);
	__type(value, struct ks_cand);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_cands SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_events SEC(".maps");

/* Written only by the agent; lives here so it is created and pinned with
 * the rest and a report process finds everything in one folder. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_report);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_report SEC(".maps");

/*
 * The sample log (issue 27; keysteer.h): each CPU's sampled keys appended
 * at cpu * KS_SLOG_RECS + (head & KS_SLOG_MASK), its head and tail in
 * ks_slog_pos[cpu]. Sized here for one CPU: every loader sets both to the
 * host's possible CPUs before the load (user/dp/cpu_maps.c,
 * ks_cpu_maps_size). Plain arrays, mmapable, so the agent's drain reads the
 * records and moves the tail with loads and stores, no syscall a record;
 * one log per CPU, so no two CPUs ever write one line (a shared
 * BPF_MAP_TYPE_RINGBUF takes a spinlock for each reserve and commit).
 * Pinned, so a drain started by another process finds them.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KS_SLOG_RECS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct ks_slog_rec);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_slog SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct ks_slog_pos);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_slog_pos SEC(".maps");

#endif
