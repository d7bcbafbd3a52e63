/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ring_dist.h - the distributions beyond the kernel's enum ks_dist
 * (bpf/ks_ring.h), for core/ring.h and the --client presets
 * (core/ring_clients.c) alike.
 */
#ifndef KS_RING_DIST_H
#define KS_RING_DIST_H

#include "ks_ring.h"

/*
 * Distributions user space builds and the datapath cannot: pymemcache's
 * bytes keys hash their repr, which the datapath does not write out. The
 * values follow the kernel's enum ks_dist; a ring half holding one is
 * never pushed (ks_dist_in_kernel, ks_ring_in_kernel).
 */
#define KS_DIST_PYMEMCACHE_BYTES ((enum ks_dist)KS_DIST_MAX)
#define KS_DIST_ALL              (KS_DIST_MAX + 1)

#endif
