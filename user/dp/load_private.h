/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * load_private.h - keysteer's BPF object loaded for one process only: the
 * by-name pin paths cleared, so the maps are fresh and nothing appears
 * under /sys/fs/bpf, and nothing attached. For 'agent replay', the
 * program tests, the fuzzer and the benchmark.
 */
#ifndef KS_LOAD_PRIVATE_H
#define KS_LOAD_PRIVATE_H

struct keysteer_bpf;

/* The loaded object (xdp_only: the tc program is not loaded, which saves
 * its verification), or NULL with *err a negative errno. */
struct keysteer_bpf *ks_load_private(int xdp_only, int *err);

#endif
