/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ktest.h - the tiny harness every C test tier uses. Each test prints one
 * line, "PASS name", "FAIL name: why" or "SKIP name: why", which
 * tests/run.sh counts; a check that fails records why and the test goes on
 * so one run shows every broken expectation.
 */
#ifndef KTEST_H
#define KTEST_H

#include <stdbool.h>
#include <stddef.h>

#include <stdio.h>

struct ktest {
	const char *name;
	int failed;  /* checks failed in the current test */
	int skipped; /* current test asked to be skipped */
	int hidden;  /* not selected by kt_set_filter: runs, not reported */
	char why[512];
};

extern struct ktest kt_cur;
extern int kt_pass, kt_fail, kt_skip;

void kt_begin(const char *name);
void kt_end(void);
void kt_failf(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void kt_skipf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Only tests whose name matches one of the n shell globs (fnmatch) are
 * reported and counted; the others still run but print nothing. n 0:
 * every test. The globs must outlive the run.
 */
void kt_set_filter(char *const *globs, int n);
/* True if a test called name would be reported (to skip costly work). */
int kt_selected(const char *name);
/* A tier's test group: a name for -g and the function that runs it. */
struct kt_group {
	const char *name;
	void (*run)(void);
};

/*
 * The options every tier binary takes: -l lists the groups, -g GROUP
 * (repeatable) picks some, -h prints "usage: PROG [-l] [-g GROUP]...
 * [TEST-GLOB]..."; the globs after them go to kt_set_filter. want[i] says
 * whether groups[i] runs (all of them without -g). Returns -1 to run the
 * groups, else the exit status to leave with.
 */
int kt_parse_groups(const char *prog, int argc, char **argv,
		    const struct kt_group *groups, size_t n, bool *want);

/* Prints the tier's summary; returns the process exit status. */
int kt_summary(const char *tier);

/* A TCP listener on 127.0.0.1, any free port, that nobody accepts on
 * unless the caller does (a silent server: its kernel completes the
 * handshake): its fd and "http://127.0.0.1:PORT" in url, or -1. */
int kt_loopback_listener(char *url, size_t len);

/* One HTTP/1.1 answer on fd: "STATUS" (e.g. "200 OK") and a JSON body,
 * Connection: close; the request's bytes read first, whatever they are. */
void kt_http_answer(int fd, const char *status, const char *body);

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			kt_failf(__FILE__, __LINE__, __VA_ARGS__);             \
	} while (0)

#define CHECK_EQ(a, b)                                                         \
	do {                                                                   \
		unsigned long long _a = (unsigned long long)(a);               \
		unsigned long long _b = (unsigned long long)(b);               \
		if (_a != _b)                                                  \
			kt_failf(__FILE__, __LINE__, "%s = %llu, want %llu",   \
				 #a, _a, _b);                                  \
	} while (0)

#endif
