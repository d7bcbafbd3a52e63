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
 * ownership.
 */
#ifndef KS_PRIVS_H
#define KS_PRIVS_H

/* Keeps CAP_BPF, CAP_NET_ADMIN and (keep_sys_admin) CAP_SYS_ADMIN.
 * 0 or -errno. */
int ks_drop_privileges(int keep_sys_admin);

/* Capability sets are per thread: a helper thread (the fill worker)
 * drops every capability of its own, whatever the others keep. */
int ks_drop_thread_privileges(void);

/* The effective capability set of this process, as /proc shows it. */
unsigned long long ks_cap_effective(void);

#endif
