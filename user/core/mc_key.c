// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mc_key.c - the text protocol's key rule (see mc_key.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "core/mc_key.h"

int ks_mc_key_check(const __u8 *key, size_t klen)
{
	size_t i;

	if (!key || klen == 0 || klen > KS_MC_KEY_MAX)
		return -EINVAL;
	/* A space or control byte would end the key or the request line. */
	for (i = 0; i < klen; i++)
		if (key[i] <= ' ' || key[i] == 0x7f)
			return -EINVAL;
	return 0;
}

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
