// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sig.c - SIGINT/SIGTERM/SIGHUP as flags and a sleep they cut short (see
 * sig.h).
 */
#include <string.h>
#include <time.h>
#include "util/clock.h"
#include "util/sig.h"

volatile sig_atomic_t ks_stop;
volatile sig_atomic_t ks_reload;

static void on_stop(int sig)
{
	(void)sig;
	ks_stop = 1;
}

void ks_install_stop_handlers(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	/* No SA_RESTART: a signal interrupts the sleep or poll at once. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void on_reload(int sig)
{
	(void)sig;
	ks_reload = 1;
}

void ks_install_reload_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_reload;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGHUP, &sa, NULL);
}

int ks_sleep_until(__u64 deadline_ns)
{
	while (!ks_stop) {
		__u64 now = ks_mono_ns(), left;
		struct timespec ts;

		if (now >= deadline_ns)
			break;
		/* Short steps bound the delay of a signal that lands just
		 * before the sleep starts. */
		left = deadline_ns - now;
		if (left > 100000000ULL)
			left = 100000000ULL;
		ts.tv_sec = (time_t)(left / 1000000000ULL);
		ts.tv_nsec = (long)(left % 1000000000ULL);
		clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
	}
	return !ks_stop;
}
