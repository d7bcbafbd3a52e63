/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_client_util.h - what the library's end-to-end drivers
 * (ks_client_fresh.c, ks_client_probe.c) share: one monotonic clock in ms,
 * pacing by it, and a thread's entry into a client host's network namespace (each
 * handle's view thread starts in its opener's).
 */
#ifndef KS_CLIENT_UTIL_H
#define KS_CLIENT_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static inline double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Sleeps until now_ms() reaches at_ms; returns at once when it has. The
 * time left is read once: read twice (a check, then the sleep's length),
 * a preemption between the two made it negative, and the cast to
 * useconds_t turned that into a sleep of 71 minutes (a reader hung past
 * its run's end on a loaded machine). */
static inline void sleep_until_ms(double at_ms)
{
	double left = at_ms - now_ms();

	if (left > 0)
		usleep((useconds_t)(left * 1000));
}

/* The calling thread into /var/run/netns/NS (NULL: stays). 0 or -errno. */
static inline int enter_ns(const char *ns)
{
	char path[256];
	int fd, ret;

	if (!ns)
		return 0;
	snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = setns(fd, CLONE_NEWNET) ? -errno : 0;
	close(fd);
	return ret;
}

#endif
