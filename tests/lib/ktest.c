// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include <getopt.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "ktest.h"

struct ktest kt_cur;
int kt_pass, kt_fail, kt_skip;

static char *const *kt_globs;
static int kt_nglobs;

void kt_set_filter(char *const *globs, int n)
{
	kt_globs = globs;
	kt_nglobs = n;
}

int kt_selected(const char *name)
{
	int i;

	if (!kt_nglobs)
		return 1;
	for (i = 0; i < kt_nglobs; i++)
		if (!fnmatch(kt_globs[i], name, 0))
			return 1;
	return 0;
}

void kt_begin(const char *name)
{
	memset(&kt_cur, 0, sizeof(kt_cur));
	kt_cur.name = name;
	kt_cur.hidden = !kt_selected(name);
}

void kt_end(void)
{
	if (kt_cur.hidden)
		return;
	if (kt_cur.failed) {
		printf("FAIL %s: %s\n", kt_cur.name, kt_cur.why);
		kt_fail++;
	} else if (kt_cur.skipped) {
		printf("SKIP %s: %s\n", kt_cur.name, kt_cur.why);
		kt_skip++;
	} else {
		printf("PASS %s\n", kt_cur.name);
		kt_pass++;
	}
	fflush(stdout);
}

void kt_failf(const char *file, int line, const char *fmt, ...)
{
	size_t n = strlen(kt_cur.why);
	va_list ap;

	/* Keep the first few reasons; one line per test stays readable. */
	if (kt_cur.failed++ >= 4 || n >= sizeof(kt_cur.why) - 64)
		return;
	n += snprintf(kt_cur.why + n, sizeof(kt_cur.why) - n,
		      "%s%s:%d: ", n ? "; " : "", file, line);
	va_start(ap, fmt);
	vsnprintf(kt_cur.why + n, sizeof(kt_cur.why) - n, fmt, ap);
	va_end(ap);
}

void kt_skipf(const char *fmt, ...)
{
	va_list ap;

	kt_cur.skipped = 1;
	va_start(ap, fmt);
	vsnprintf(kt_cur.why, sizeof(kt_cur.why), fmt, ap);
	va_end(ap);
}

int kt_summary(const char *tier)
{
	printf("# %s: %d passed, %d failed, %d skipped\n", tier, kt_pass,
	       kt_fail, kt_skip);
	return kt_fail ? 1 : 0;
}

static void groups_usage(FILE *f, const char *prog,
			 const struct kt_group *groups, size_t n)
{
	size_t i;

	fprintf(f,
		"usage: %s [-l] [-g GROUP]... [TEST-GLOB]...\ngroups:", prog);
	for (i = 0; i < n; i++)
		fprintf(f, " %s", groups[i].name);
	fprintf(f, "\n");
}

int kt_parse_groups(const char *prog, int argc, char **argv,
		    const struct kt_group *groups, size_t n, bool *want)
{
	bool any = false;
	size_t i;
	int c;

	for (i = 0; i < n; i++)
		want[i] = false;
	while ((c = getopt(argc, argv, "g:lh")) != -1) {
		switch (c) {
		case 'g':
			for (i = 0; i < n; i++)
				if (!strcmp(optarg, groups[i].name))
					break;
			if (i == n) {
				fprintf(stderr, "%s: no group '%s'\n", prog,
					optarg);
				groups_usage(stderr, prog, groups, n);
				return 2;
			}
			want[i] = any = true;
			break;
		case 'l':
			for (i = 0; i < n; i++)
				printf("%s\n", groups[i].name);
			return 0;
		case 'h':
			groups_usage(stdout, prog, groups, n);
			return 0;
		default:
			groups_usage(stderr, prog, groups, n);
			return 2;
		}
	}
	for (i = 0; i < n && !any; i++)
		want[i] = true;
	kt_set_filter(argv + optind, argc - optind);
	return -1;
}

int kt_loopback_listener(char *url, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(fd, 16) || getsockname(fd, (struct sockaddr *)&sa, &sl)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	snprintf(url, len, "http://127.0.0.1:%u", ntohs(sa.sin_port));
	return fd;
}

void kt_http_answer(int fd, const char *status, const char *body)
{
	char req[4096], ans[1024];
	int n;

	if (read(fd, req, sizeof(req)) <= 0)
		return;
	n = snprintf(ans, sizeof(ans),
		     "HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
		     status, strlen(body), body);
	if (n > 0 && (size_t)n < sizeof(ans)) {
		ssize_t w = write(fd, ans, (size_t)n);

		(void)w;
	}
}
