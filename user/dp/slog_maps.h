/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * slog_maps.h - the sample log's maps sized for this host before a load
 * of keysteer.bpf.o (issue 27; bpf/keysteer.h, "sample log").
 */
#ifndef KS_SLOG_MAPS_H
#define KS_SLOG_MAPS_H

struct bpf_object;

/*
 * ks_slog to possible CPUs x KS_SLOG_RECS records and ks_slog_pos to one
 * entry per possible CPU. The object declares one CPU's worth (a BPF
 * object cannot know the host's CPUs); every loader of keysteer.bpf.o
 * calls this between open and load. An object without the maps (a build
 * before the log) is left alone. Returns 0 or a negative errno.
 */
int ks_slog_size(struct bpf_object *obj);

#endif
