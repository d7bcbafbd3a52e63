// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * text.c - keys and addresses as text (see text.h).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include "render/text.h"

int ks_ip_is_v4mapped(const __u8 addr[16])
{
	static const __u8 v4mapped[12] = { 0, 0, 0, 0, 0,    0,
					   0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(addr, v4mapped, sizeof(v4mapped));
}

void ks_format_ip(const __u8 addr[16], char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	if (ks_ip_is_v4mapped(addr))
		inet_ntop(AF_INET, addr + 12, ip, sizeof(ip));
	else
		inet_ntop(AF_INET6, addr, ip, sizeof(ip));
	snprintf(buf, len, "%s", ip);
}
