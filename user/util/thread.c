// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * thread.c - the agent's worker threads: signals blocked, capabilities
 * dropped before their function runs (see thread.h).
 */
#include <errno.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include "util/log.h"
#include "util/privs.h"
#include "util/thread.h"

static int test_keep_caps;

struct start {
	void *(*fn)(void *);
	void *arg;
	unsigned long long keep;
	int nice, skip;
	int err, nice_err;
	char name[16];
	sem_t done; /* posted once err is final; start is gone after */
};

void ks_thread_sigmask(sigset_t *set)
{
	sigfillset(set);
}

void ks_thread_test_keep_caps(int on)
{
	__atomic_store_n(&test_keep_caps, on, __ATOMIC_RELAXED);
}

static void *trampoline(void *a)
{
	struct start *s = a;
	void *(*fn)(void *) = s->fn;
	void *arg = s->arg;
	int err;

	/* named before its work, so /proc never shows it unnamed at work */
	pthread_setname_np(pthread_self(), s->name);
	/* while it still has the starter's capabilities */
	if (s->nice &&
	    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), s->nice))
		s->nice_err = errno;
	err = s->skip ? 0 : ks_drop_thread_caps(s->keep);
	s->err = err;
	sem_post(&s->done); /* s is the starter's stack: not used after */
	return err ? NULL : fn(arg);
}

int ks_thread_start(pthread_t *th, const struct ks_thread_opts *o,
		    void *(*fn)(void *), void *arg)
{
	struct start s = {
		.fn = fn, .arg = arg, .keep = o->keep, .nice = o->nice
	};
	sigset_t all, old;
	int err;

	s.skip = __atomic_load_n(&test_keep_caps, __ATOMIC_RELAXED);
	snprintf(s.name, sizeof(s.name), "%s", o->name ? o->name : "ks-worker");
	if (sem_init(&s.done, 0, 0))
		return -errno;
	/* the mask is inherited at creation: blocked from the thread's
	 * first instruction, no window for a signal to land there */
	ks_thread_sigmask(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(th, NULL, trampoline, &s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		sem_destroy(&s.done);
		return err;
	}
	/* its sets are final when this returns, whatever runs next */
	while (sem_wait(&s.done) && errno == EINTR)
		;
	sem_destroy(&s.done);
	if (s.nice_err)
		ks_debug("the %s thread stays at its starter's priority (%s)",
			 s.name, strerror(s.nice_err));
	if (s.err) {
		pthread_join(*th, NULL);
		return s.err;
	}
	return 0;
}
