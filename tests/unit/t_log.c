// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The logger (util/log.c): a line reaches stderr in one write, so no
 * other thread's line (the loop's stdout under 2>&1) can land inside it.
 * stderr is swapped for an unbuffered stream that records each write the
 * library makes.
 */
#include <stdio.h>
#include <string.h>
#include "ktest.h"
#include "util/log.h"
#include "unit.h"

static struct {
	int writes;
	size_t len;
	char buf[8192];
} rec;

static ssize_t rec_write(void *cookie, const char *b, size_t n)
{
	(void)cookie;
	rec.writes++;
	if (rec.len + n < sizeof(rec.buf)) {
		memcpy(rec.buf + rec.len, b, n);
		rec.len += n;
		rec.buf[rec.len] = '\0';
	}
	return (ssize_t)n;
}

static void one_write(void)
{
	cookie_io_functions_t io = { .write = rec_write };
	enum ks_log_level was = ks_log_level();
	FILE *old = stderr, *f = fopencookie(NULL, "w", io);
	char long_text[3001], want[3100];

	kt_begin("log_line_one_write");
	if (!f || setvbuf(f, NULL, _IONBF, 0)) {
		CHECK(0, "cannot make the recording stream");
		goto out;
	}
	ks_log_set_level(KS_LOG_INFO);
	stderr = f;
	memset(&rec, 0, sizeof(rec));
	ks_info("ring v%d: %s", 6, "nothing to purge");
	stderr = old;
	CHECK(rec.writes == 1 &&
		      !strcmp(rec.buf, "agent: ring v6: nothing to purge\n"),
	      "%d writes for '%s'", rec.writes, rec.buf);
	/* past the stack buffer: still whole, one write */
	memset(long_text, 'k', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';
	snprintf(want, sizeof(want), "agent: warning: %s\n", long_text);
	stderr = f;
	memset(&rec, 0, sizeof(rec));
	ks_warn("%s", long_text);
	stderr = old;
	CHECK(rec.writes == 1 && !strcmp(rec.buf, want),
	      "%d writes, %zu bytes for a %zu-byte line", rec.writes, rec.len,
	      strlen(want));
	/* below the level: nothing */
	stderr = f;
	memset(&rec, 0, sizeof(rec));
	ks_debug("not shown");
	stderr = old;
	CHECK(rec.writes == 0, "%d writes below the level", rec.writes);
out:
	stderr = old;
	ks_log_set_level(was);
	if (f)
		fclose(f);
	kt_end();
}

void test_log(void)
{
	one_write();
}
