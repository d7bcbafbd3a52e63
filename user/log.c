// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdarg.h>
#include <stdio.h>
#include <bpf/libbpf.h>
#include "log.h"

static enum ks_log_level cur_level = KS_LOG_INFO;

static const char *const prefixes[] = {
	[KS_LOG_ERROR] = "agent: ",
	[KS_LOG_WARN] = "agent: warning: ",
	[KS_LOG_INFO] = "agent: ",
	[KS_LOG_DEBUG] = "agent: debug: ",
};

/*
 * libbpf prints load failures (with the verifier log) at WARN, so those
 * always show; its INFO and DEBUG chatter only with -v.
 */
static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (level != LIBBPF_WARN && cur_level < KS_LOG_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void ks_log_init(enum ks_log_level level)
{
	cur_level = level;
	libbpf_set_print(libbpf_print);
}

enum ks_log_level ks_log_level(void)
{
	return cur_level;
}

void ks_log(enum ks_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > cur_level)
		return;
	fputs(prefixes[level], stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
