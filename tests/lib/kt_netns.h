/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kt_netns.h - unit tests that need sockets run them in a network namespace
 * of their own: a forked child unshares its network namespace (only its
 * loopback, up) so servers it starts are reachable from nowhere else and
 * vanish with it.
 */
#ifndef KT_NETNS_H
#define KT_NETNS_H

#include <sys/types.h>

/* In the calling process: a new network namespace with lo up. 0 or -errno. */
int kt_private_netns(void);

/*
 * Starts memcached (-U port: UDP too) on 127.0.0.1:port in the calling
 * process's namespace and waits up to 2 s until it accepts TCP. Returns its
 * pid, or -errno (-ENOENT when memcached is not installed).
 */
pid_t kt_memcached_start(unsigned short port);
/* SIGTERM, then reap; by pid only. */
void kt_memcached_stop(pid_t pid);

#endif
