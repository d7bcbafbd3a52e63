// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "kt_netns.h"

int kt_private_netns(void)
{
	struct ifreq ifr = {};
	int fd, ret = 0;

	if (unshare(CLONE_NEWNET))
		return -errno;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(fd, SIOCSIFFLAGS, &ifr))
			ret = -errno;
	} else {
		ret = -errno;
	}
	close(fd);
	return ret;
}

static int tcp_accepts(unsigned short port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

	if (fd < 0)
		return 0;
	ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

pid_t kt_memcached_start(unsigned short port)
{
	char p[8];
	pid_t pid;
	int i;

	if (access("/usr/bin/memcached", X_OK))
		return -ENOENT;
	snprintf(p, sizeof(p), "%u", port);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execl("/usr/bin/memcached", "memcached", "-u", "nobody", "-l",
		      "127.0.0.1", "-p", p, "-U", p, "-t", "1", "-m", "64",
		      (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 200; i++) {
		struct timespec ts = { 0, 10000000 };

		if (tcp_accepts(port))
			return pid;
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return -ECHILD;
		nanosleep(&ts, NULL);
	}
	kt_memcached_stop(pid);
	return -ETIMEDOUT;
}

void kt_memcached_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}
