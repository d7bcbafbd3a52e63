// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The VLAN sub-interfaces of a device, read with the 8021q module's
 * ioctl (SIOCGIFVLAN: a device's VLAN id and the device it sits on),
 * which needs no netlink parsing for the two facts ks_vlans holds.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if_vlan.h>
#include <linux/sockios.h>
#include <bpf/bpf.h>
#include "net/vlan_devs.h"

/* The VLAN id of name and the device it is stacked on; -1 if not a VLAN. */
static int vlan_of(int sock, const char *name, __u16 *vid, char *real,
		   size_t len)
{
	struct vlan_ioctl_args a;
	size_t k;

	memset(&a, 0, sizeof(a));
	a.cmd = GET_VLAN_VID_CMD;
	snprintf(a.device1, sizeof(a.device1), "%s", name);
	if (ioctl(sock, SIOCGIFVLAN, &a))
		return -1;
	*vid = (__u16)(a.u.VID & 0xfff);
	memset(&a, 0, sizeof(a));
	a.cmd = GET_VLAN_REALDEV_NAME_CMD;
	snprintf(a.device1, sizeof(a.device1), "%s", name);
	if (ioctl(sock, SIOCGIFVLAN, &a))
		return -1;
	k = strnlen(a.u.device2, sizeof(a.u.device2));
	if (k >= len)
		return -1;
	memcpy(real, a.u.device2, k);
	real[k] = '\0';
	return 0;
}

int ks_vlan_devs(__u32 ifindex, struct ks_vlan_dev *out, unsigned max)
{
	char base[IF_NAMESIZE], real[IF_NAMESIZE], real2[IF_NAMESIZE];
	struct if_nameindex *all, *p;
	unsigned n = 0;
	__u16 vid, outer;
	int sock;

	if (!if_indextoname(ifindex, base))
		return -errno;
	sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return -errno;
	all = if_nameindex();
	if (!all) {
		close(sock);
		return -errno;
	}
	for (p = all; p->if_index && n + 2 <= max; p++) {
		if (vlan_of(sock, p->if_name, &vid, real, sizeof(real)))
			continue;
		memset(&out[n], 0, sizeof(out[n]));
		out[n].key.ifindex = ifindex;
		out[n].ifindex = p->if_index;
		if (!strcmp(real, base)) {
			out[n++].key.vid[0] = vid;
		} else if (!vlan_of(sock, real, &outer, real2, sizeof(real2)) &&
			   !strcmp(real2, base)) {
			/* QinQ: the inner VLAN on an outer one on base */
			out[n].key.vid[0] = outer;
			out[n++].key.vid[1] = vid;
		} else {
			continue;
		}
		/* the mark: this ifindex is a VLAN sub-interface */
		memset(&out[n], 0, sizeof(out[n]));
		out[n].key.ifindex = p->if_index;
		out[n].ifindex = p->if_index;
		n++;
	}
	if_freenameindex(all);
	close(sock);
	return (int)n;
}

int ks_vlan_devs_sync(int fd, const struct ks_vlan_dev *devs, unsigned n)
{
	struct ks_vlan_key k, next, *prev = NULL;
	unsigned i;

	/* stale entries first: a sub-interface that went away */
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		for (i = 0; i < n; i++)
			if (!memcmp(&devs[i].key, &k, sizeof(k)))
				break;
		if (i == n && !bpf_map_delete_elem(fd, &k))
			prev = NULL; /* deleted: start over */
	}
	for (i = 0; i < n; i++)
		if (bpf_map_update_elem(fd, &devs[i].key, &devs[i].ifindex,
					BPF_ANY))
			return -errno;
	return 0;
}

int ks_forwarding_on(const char *ifname, int v6)
{
	char path[128], v = '0';
	FILE *f;

	snprintf(path, sizeof(path), "/proc/sys/net/%s/conf/%s/forwarding",
		 v6 ? "ipv6" : "ipv4", ifname);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (fread(&v, 1, 1, f) != 1)
		v = '0';
	fclose(f);
	return v == '1';
}
