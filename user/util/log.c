// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* log.c - the levelled logger (see log.h); libbpf's side is dp/bpf_log.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/*
 * One line, one write: stderr is unbuffered, so a line put out piece by
 * piece (prefix, text, newline) is three write()s, and another thread's
 * line on stdout (the same file under 2>&1: the loop's "keysteer: ring
 * v..." while the purge thread logs) could land between them, cutting
 * both lines. So the line is made whole first and written with one call.
 */
void ks_log(enum ks_log_level level, const char *fmt, ...)
{
	char buf[1024], *line = buf;
	size_t plen = strlen(prefixes[level]);
	va_list ap;
	int n;

	if (level > cur_level)
		return;
	memcpy(buf, prefixes[level], plen);
	va_start(ap, fmt);
	n = vsnprintf(buf + plen, sizeof(buf) - plen, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if (plen + (size_t)n + 2 > sizeof(buf)) {
		/* a long line: whole on the heap, else cut to the buffer */
		line = malloc(plen + (size_t)n + 2);
		if (line) {
			memcpy(line, prefixes[level], plen);
			va_start(ap, fmt);
			vsnprintf(line + plen, (size_t)n + 1, fmt, ap);
			va_end(ap);
		} else {
			line = buf;
			n = (int)(sizeof(buf) - plen - 2);
		}
	}
	line[plen + (size_t)n] = '\n';
	/* the stream's lock: one line at a time from this process's threads
	 * (the etcd publisher logs from its thread) */
	flockfile(stderr);
	fwrite(line, 1, plen + (size_t)n + 1, stderr);
	funlockfile(stderr);
	if (line != buf)
		free(line);
}
