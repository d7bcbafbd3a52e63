// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * text.c - keys and addresses as text (see text.h).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include "render/text.h"

char *ks_key_text(const __u8 *s, size_t len, char *buf, size_t buflen)
{
	size_t i, o = 0, fit = 0;

	if (!buflen)
		return buf;
	for (i = 0; i < len; i++) {
		char tmp[5];
		size_t n;

		/* fit: the last escape boundary that leaves room for "..." */
		if (o + 3 < buflen)
			fit = o;
		if (s[i] == '\\')
			n = (size_t)snprintf(tmp, sizeof(tmp), "\\\\");
		else if (s[i] > 0x20 && s[i] < 0x7f)
			n = (size_t)snprintf(tmp, sizeof(tmp), "%c", s[i]);
		else
			n = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", s[i]);
		if (o + n >= buflen) {
			o = fit;
			if (o + 3 < buflen) {
				memcpy(buf + o, "...", 3);
				o += 3;
			}
			break;
		}
		memcpy(buf + o, tmp, n);
		o += n;
	}
	buf[o] = '\0';
	return buf;
}

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
