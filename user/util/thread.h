/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * thread.h - every thread of 'agent run' but the main one starts here
 * (docs/operations.md, "The agent's threads"), for two things Linux keeps
 * per thread:
 *
 * - Capabilities (effective, permitted, inheritable, bounding) and
 *   no_new_privs: the main thread's drop after attaching (util/privs.h)
 *   reaches no thread already running, and the etcd publisher, the sample
 *   log's drain and the grace-period thread start before it. So each
 *   thread drops to what it needs itself, before its function runs, and
 *   ks_thread_start returns only once it has: from then on its sets are
 *   final, whenever the agent's own drop comes.
 * - The signal mask: SIGINT, SIGTERM and SIGHUP set flags the main
 *   thread's poll must wake up for (util/sig.h). A process-directed
 *   signal goes to any thread that does not block it, so every other
 *   thread blocks them all (and every blockable signal: none is theirs),
 *   from its first instruction, and so does any thread it creates (a
 *   library's, e.g. curl's resolver).
 */
#ifndef KS_THREAD_H
#define KS_THREAD_H

#include <pthread.h>
#include <signal.h>

struct ks_thread_opts {
	const char *name;        /* its comm in /proc, cut to 15 bytes */
	unsigned long long keep; /* the KS_CAP() bits it keeps (privs.h) */
	/* 0: the starter's priority; else this nice value, set before the
	 * drop (a negative one takes CAP_SYS_NICE); a failure is logged
	 * (-v) and the thread runs at the starter's */
	int nice;
};

/*
 * Starts fn(arg) on a new joinable thread with every signal blocked, once
 * it has set o->nice and dropped its capabilities to o->keep
 * (ks_drop_thread_caps). 0 with *th set, or a negative errno: the thread
 * could not start or could not drop (it then ended without running fn).
 */
int ks_thread_start(pthread_t *th, const struct ks_thread_opts *o,
		    void *(*fn)(void *), void *arg);

/* The signals a worker blocks: all of them (pthread_sigmask leaves out
 * the two glibc keeps for itself). */
void ks_thread_sigmask(sigset_t *set);

/*
 * --thread-caps keep (test-only, util/test_switches.h): the threads
 * started after this call skip their drop and keep the capabilities of
 * the thread that started them, as they did before the drop was theirs:
 * test_privileges_threads.sh's control, which must see one with them.
 */
void ks_thread_test_keep_caps(int on);

#endif
