// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * privs.c - see privs.h. Raw capset(2) and prctl(2): libcap is not a
 * dependency for two system calls.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include "util/privs.h"

#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static int cap_last(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "r");
	int last = CAP_BPF;

	if (f) {
		if (fscanf(f, "%d", &last) != 1)
			last = CAP_BPF;
		fclose(f);
	}
	return last;
}

int ks_drop_privileges(int keep_sys_admin)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0
	};
	struct __user_cap_data_struct data[2];
	unsigned long long keep = 1ULL << CAP_BPF | 1ULL << CAP_NET_ADMIN;
	int c, last = cap_last();

	if (keep_sys_admin)
		keep |= 1ULL << CAP_SYS_ADMIN;
	/* the bounding set first: dropping from it needs CAP_SETPCAP, which
	 * goes with the capset below */
	for (c = 0; c <= last; c++) {
		/* already gone (a service's bounding set): nothing to drop,
		 * and no CAP_SETPCAP needed for it */
		if (keep >> c & 1 || prctl(PR_CAPBSET_READ, c, 0, 0, 0) != 1)
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL)
			return -errno;
	}
	memset(data, 0, sizeof(data));
	data[0].effective = data[0].permitted = (__u32)keep;
	data[1].effective = data[1].permitted = (__u32)(keep >> 32);
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return 0;
}

int ks_drop_thread_privileges(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0
	};
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return 0;
}

unsigned long long ks_cap_effective(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0
	};
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return 0;
	return (unsigned long long)data[1].effective << 32 | data[0].effective;
}
