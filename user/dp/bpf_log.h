/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bpf_log.h - libbpf's messages through the agent's logger (util/log.h),
 * so the logger itself links without libbpf.
 */
#ifndef KS_BPF_LOG_H
#define KS_BPF_LOG_H

#include "util/log.h"

/* Sets the level and routes libbpf's prints; DEBUG also shows libbpf's. */
void ks_log_init(enum ks_log_level level);

#endif
