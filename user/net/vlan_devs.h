/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * vlan_devs.h - the VLAN sub-interfaces stacked on one device, one or two
 * tags deep (802.1Q on the device, or a QinQ inner VLAN on an outer one),
 * for map ks_vlans: a tagged get is steered only out of the sub-interface
 * its own tags belong to (bpf/ks_steer.bpf.h).
 */
#ifndef KS_VLAN_DEVS_H
#define KS_VLAN_DEVS_H

#include <linux/types.h>
#include "keysteer.h"

struct ks_vlan_dev {
	struct ks_vlan_key key; /* the device, outer and inner VLAN ids */
	__u32 ifindex;          /* the sub-interface */
};

/*
 * The sub-interfaces of ifindex as ks_vlans entries, at most max into out
 * (two each: its tags on ifindex, and its own ifindex with no tags, which
 * marks it as one); returns how many, or -errno. A kernel without 8021q
 * has no VLAN devices: 0.
 */
int ks_vlan_devs(__u32 ifindex, struct ks_vlan_dev *out, unsigned max);

/* Makes the ks_vlans map (fd) hold exactly devs[0..n). 0 or -errno. */
int ks_vlan_devs_sync(int fd, const struct ks_vlan_dev *devs, unsigned n);

/* 1 if ifname forwards IPv4 (v6: IPv6), as the datapath's FIB lookup
 * needs to steer out of it; 0 if not, or a negative errno. */
int ks_forwarding_on(const char *ifname, int v6);

#endif
