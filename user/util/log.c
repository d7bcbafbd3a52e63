// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* log.c - the levelled logger (see log.h); libbpf's side is dp/bpf_log.c. */
#include <stdarg.h>
#include <stdio.h>
#include "util/log.h"

static enum ks_log_level cur_level = KS_LOG_INFO;

static const char *const prefixes[] = {
	[KS_LOG_ERROR] = "agent: ",
	[KS_LOG_WARN] = "agent: warning: ",
	[KS_LOG_INFO] = "agent: ",
	[KS_LOG_DEBUG] = "agent: debug: ",
};

void ks_log_set_level(enum ks_log_level level)
{
	cur_level = level;
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
	/* one line at a time: the etcd publisher logs from its thread */
	flockfile(stderr);
	fputs(prefixes[level], stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}
