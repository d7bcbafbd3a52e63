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

void ks_caps_plan(unsigned long long bnd, unsigned long long prm,
		  unsigned long long keep, int setpcap,
		  struct ks_caps_plan *out)
{
	out->bnd_drop = setpcap ? bnd & ~keep : 0;
	out->prm = prm & keep;
}

/* The calling thread's permitted and effective sets, as KS_CAP() bits. */
static int cap_sets(unsigned long long *prm, unsigned long long *eff)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0
	};
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	*prm = (unsigned long long)data[1].permitted << 32 | data[0].permitted;
	*eff = (unsigned long long)data[1].effective << 32 | data[0].effective;
	return 0;
}

int ks_drop_thread_caps(unsigned long long keep)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0
	};
	struct __user_cap_data_struct data[2];
	unsigned long long bnd = 0, prm = 0, eff = 0;
	struct ks_caps_plan plan;
	int c, last = cap_last(), err;

	err = cap_sets(&prm, &eff);
	if (err)
		return err;
	for (c = 0; c <= last && c < 64; c++)
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1)
			bnd |= KS_CAP(c);
	ks_caps_plan(bnd, prm, keep, !!(eff & KS_CAP(CAP_SETPCAP)), &plan);
	/* the bounding set first: dropping from it needs CAP_SETPCAP, which
	 * the capset below takes away */
	for (c = 0; c <= last && c < 64; c++)
		if (plan.bnd_drop >> c & 1 &&
		    prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL)
			return -errno;
	memset(data, 0, sizeof(data)); /* inheritable 0: ambient goes too */
	data[0].effective = data[0].permitted = (__u32)plan.prm;
	data[1].effective = data[1].permitted = (__u32)(plan.prm >> 32);
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return 0;
}

int ks_drop_thread_privileges(void)
{
	return ks_drop_thread_caps(0);
}

unsigned long long ks_cap_effective(void)
{
	unsigned long long prm = 0, eff = 0;

	return cap_sets(&prm, &eff) ? 0 : eff;
}
