// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* bpf_log.c - see bpf_log.h. */
#include <stdarg.h>
#include <stdio.h>
#include <bpf/libbpf.h>
#include "dp/bpf_log.h"

/*
 * libbpf prints load failures (with the verifier log) at WARN, so those
 * always show; its INFO and DEBUG chatter only with -v.
 */
static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (level != LIBBPF_WARN && ks_log_level() < KS_LOG_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void ks_log_init(enum ks_log_level level)
{
	ks_log_set_level(level);
	libbpf_set_print(libbpf_print);
}
