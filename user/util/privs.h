/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * privs.h - least privilege for 'agent run': once the program is loaded and
 * attached, the sockets bound and the files opened, the agent keeps only
 * the capabilities its interval work needs:
 *   CAP_BPF        every bpf() call on the maps it holds (the kernel refuses
 *                  bpf() outright without it when unprivileged BPF is off,
 *                  Debian's default);
 *   CAP_NET_ADMIN  detaching the XDP link on exit;
 *   CAP_SYS_ADMIN  only if the agent mounted bpffs itself, to unmount it.
 * Everything else goes from the effective, permitted, inheritable and
 * bounding sets, and no_new_privs is set, so nothing it runs later (none)
 * could regain them. The uid stays 0: the files it writes keep root's
 * ownership. All of this is the calling thread's: the agent's other
 * threads drop their own (ks_drop_thread_caps, from util/thread.h).
 */
#ifndef KS_PRIVS_H
#define KS_PRIVS_H

#include <linux/capability.h>

#ifndef CAP_BPF
#define CAP_BPF 39 /* Linux 5.8; older uapi headers lack it */
#endif

/* Keeps CAP_BPF, CAP_NET_ADMIN and (keep_sys_admin) CAP_SYS_ADMIN.
 * 0 or -errno. */
int ks_drop_privileges(int keep_sys_admin);

/* A capability as a bit of the masks below. */
#define KS_CAP(c) (1ULL << (c))

/*
 * What one thread's drop does (pure; ks_drop_thread_caps applies it).
 * bnd, prm: its bounding and permitted sets now; keep: what it needs;
 * setpcap: CAP_SETPCAP is in its effective set. The bounding set loses
 * everything but keep, where it can: without CAP_SETPCAP (a thread
 * started after the agent's own drop) it keeps the one it was born with,
 * which is the agent's. The permitted and effective sets become
 * prm & keep: never more than it has, so the capset cannot fail for
 * asking.
 */
struct ks_caps_plan {
	unsigned long long bnd_drop; /* PR_CAPBSET_DROP each of these */
	unsigned long long prm;      /* the new permitted = effective set */
};
void ks_caps_plan(unsigned long long bnd, unsigned long long prm,
		  unsigned long long keep, int setpcap,
		  struct ks_caps_plan *out);

/*
 * Capability sets, the bounding set and no_new_privs are per thread on
 * Linux: the agent's drop (above) reaches no thread already running. Each
 * worker thread drops to what it needs itself (util/thread.h does it at
 * the thread's start): bounding set (ks_caps_plan), permitted, effective
 * and inheritable sets, then no_new_privs. 0 or -errno.
 */
int ks_drop_thread_caps(unsigned long long keep);

/* ks_drop_thread_caps(0): every capability of this thread. */
int ks_drop_thread_privileges(void);

/* The effective capability set of this process, as /proc shows it. */
unsigned long long ks_cap_effective(void);

#endif
