/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_defs.bpf.h - the few #defines BTF cannot carry (vmlinux.h has the
 * kernel's types and enums but none of its macros).
 */
#ifndef KS_DEFS_BPF_H
#define KS_DEFS_BPF_H

#define ETH_P_IP     0x0800
#define ETH_P_IPV6   0x86DD
#define ETH_P_8021Q  0x8100
#define ETH_P_8021AD 0x88A8
#define ETH_ALEN     6

#define IP_MF     0x2000
#define IP_OFFSET 0x1FFF

#define TC_ACT_OK     0
#define TC_ACT_UNSPEC (-1)

/* IPv6 extension headers keysteer walks through. */
#define KS_IP6_HOPOPTS  0
#define KS_IP6_ROUTING  43
#define KS_IP6_FRAGMENT 44
#define KS_IP6_DSTOPTS  60

#define KS_MC_DEFAULT_PORT 11211

#endif
