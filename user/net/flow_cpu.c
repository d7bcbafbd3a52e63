// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <ctype.h>
#include <dirent.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include "util/file.h"
#include "flow_cpu.h"

bool ks_rps_mask_set(const char *text)
{
	bool any = false, digits = false;
	const char *p;

	if (!text)
		return false;
	for (p = text; *p && *p != '\n'; p++) {
		if (*p == ',')
			continue;
		if (!isxdigit((unsigned char)*p))
			return false;
		digits = true;
		any = any || *p != '0';
	}
	return digits && any;
}

/* A short sysfs file's first line into out; its length, or -1. */
static int read_text(const char *path, char *out, size_t n)
{
	char *buf;
	size_t len;

	if (ks_read_file(path, 4096, &buf, &len))
		return -1;
	snprintf(out, n, "%s", buf);
	free(buf);
	return (int)strlen(out);
}

/* The driver's name by ethtool, as `ethtool -i` prints it; 0 or -1. */
static int driver_of(const char *ifname, char *out, size_t n)
{
	struct ethtool_drvinfo info = { .cmd = ETHTOOL_GDRVINFO };
	struct ifreq ifr = { 0 };
	int fd, rc;

	if (strlen(ifname) >= sizeof(ifr.ifr_name))
		return -1;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	strcpy(ifr.ifr_name, ifname);
	ifr.ifr_data = (void *)&info;
	rc = ioctl(fd, SIOCETHTOOL, &ifr);
	close(fd);
	if (rc)
		return -1;
	snprintf(out, n, "%s", info.driver);
	return 0;
}

/* Whether /sys/class/net/IF is this namespace's IF: its ifindex. */
static bool sysfs_is_ours(const char *ifname)
{
	char path[256], buf[32];
	unsigned int idx = if_nametoindex(ifname);

	snprintf(path, sizeof(path), "/sys/class/net/%s/ifindex", ifname);
	if (!idx || read_text(path, buf, sizeof(buf)) <= 0)
		return false;
	return strtoul(buf, NULL, 10) == idx;
}

int ks_flow_cpu_risk(const char *ifname)
{
	char drv[32], path[512], buf[256];
	struct dirent *de;
	int queues = 0, rps = 0;
	DIR *d;

	if (!ifname || driver_of(ifname, drv, sizeof(drv)) ||
	    strcmp(drv, "veth") || !sysfs_is_ours(ifname))
		return 0;
	snprintf(path, sizeof(path), "/sys/class/net/%s/queues", ifname);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "rx-", 3))
			continue;
		snprintf(path, sizeof(path),
			 "/sys/class/net/%s/queues/%s/rps_cpus", ifname,
			 de->d_name);
		if (read_text(path, buf, sizeof(buf)) <= 0)
			continue;
		queues++;
		rps += ks_rps_mask_set(buf);
	}
	closedir(d);
	return queues && !rps;
}
