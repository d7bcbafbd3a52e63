// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * opts.c - range-checked parsing and formatting of command-line values
 * (see opts.h).
 */
#include <ctype.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/opts.h"

int ks_parse_uint(const char *what, const char *s, unsigned long long min,
		  unsigned long long max, unsigned long long *out, char *err,
		  size_t errlen)
{
	unsigned long long v = 0;
	const char *p;

	if (!s || !*s) {
		snprintf(
			err, errlen,
			"%s needs a value; give a whole number from %llu to %llu",
			what, min, max);
		return -EINVAL;
	}
	/* strtoull would accept "-1", " 5" and "0x10"; take digits only. */
	for (p = s; *p; p++) {
		if (!isdigit((unsigned char)*p)) {
			snprintf(
				err, errlen,
				"%s '%s' is not a whole number; give a number from %llu to %llu",
				what, s, min, max);
			return -EINVAL;
		}
		if (v > (~0ULL - 9) / 10) {
			v = ~0ULL; /* saturate: reported as out of range */
			break;
		}
		v = v * 10 + (unsigned long long)(*p - '0');
	}
	if (v < min || v > max) {
		snprintf(
			err, errlen,
			"%s '%s' is out of range; give a number from %llu to %llu",
			what, s, min, max);
		return -ERANGE;
	}
	*out = v;
	return 0;
}

static void seconds_range(__u32 min_ms, __u32 max_ms, char *buf, size_t len)
{
	char a[32], b[32];

	ks_format_seconds(min_ms, a, sizeof(a));
	ks_format_seconds(max_ms, b, sizeof(b));
	snprintf(buf, len, "%s to %s", a, b);
}

int ks_parse_seconds(const char *what, const char *s, __u32 min_ms,
		     __u32 max_ms, __u32 *out_ms, char *err, size_t errlen)
{
	unsigned long long whole = 0, frac = 0;
	int ndig = 0, nfrac = 0, seen_dot = 0;
	char range[80];
	const char *p;

	seconds_range(min_ms, max_ms, range, sizeof(range));
	if (!s || !*s)
		goto bad;
	for (p = s; *p; p++) {
		if (*p == '.' && !seen_dot) {
			seen_dot = 1;
			continue;
		}
		if (!isdigit((unsigned char)*p))
			goto bad;
		if (seen_dot) {
			if (++nfrac > 3) {
				snprintf(
					err, errlen,
					"%s '%s' has more than 3 decimals; give seconds like 0.5 (%s)",
					what, s, range);
				return -EINVAL;
			}
			frac = frac * 10 + (unsigned long long)(*p - '0');
		} else {
			if (++ndig > 9)
				goto range;
			whole = whole * 10 + (unsigned long long)(*p - '0');
		}
	}
	if (!ndig && !nfrac)
		goto bad; /* "." alone */
	while (nfrac < 3) {
		frac *= 10;
		nfrac++;
	}
	whole = whole * 1000 + frac;
	if (whole < min_ms || whole > max_ms)
		goto range;
	*out_ms = (__u32)whole;
	return 0;
bad:
	snprintf(
		err, errlen,
		"%s '%s' is not a number of seconds; give seconds like 1 or 0.5 (%s)",
		what, s ? s : "", range);
	return -EINVAL;
range:
	snprintf(err, errlen, "%s '%s' is out of range; give seconds from %s",
		 what, s, range);
	return -ERANGE;
}

int ks_parse_ports(const char *s, __u16 ports[KS_MAX_PORTS], int *n, char *err,
		   size_t errlen)
{
	char item[16];
	const char *p = s, *end;
	int count = 0, i;

	memset(ports, 0, sizeof(ports[0]) * KS_MAX_PORTS);
	if (!s || !*s) {
		snprintf(
			err, errlen,
			"--ports needs a value; give 1 to %d ports like 11211,11212",
			KS_MAX_PORTS);
		return -EINVAL;
	}
	for (;;) {
		unsigned long long v;
		size_t len;
		char sub[KS_ERRLEN];

		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		if (len == 0 || len >= sizeof(item)) {
			snprintf(
				err, errlen,
				"--ports '%s' has an empty or overlong item; give ports like 11211,11212",
				s);
			return -EINVAL;
		}
		memcpy(item, p, len);
		item[len] = '\0';
		if (ks_parse_uint("port", item, 1, 65535, &v, sub,
				  sizeof(sub))) {
			snprintf(
				err, errlen,
				"--ports '%s': port '%s' is not a number from 1 to 65535; give ports like 11211,11212",
				s, item);
			return -EINVAL;
		}
		if (count == KS_MAX_PORTS) {
			snprintf(
				err, errlen,
				"--ports '%s' lists more than %d ports; watch at most %d",
				s, KS_MAX_PORTS, KS_MAX_PORTS);
			return -E2BIG;
		}
		for (i = 0; i < count; i++) {
			if (ports[i] == v) {
				snprintf(
					err, errlen,
					"--ports '%s' lists port %llu twice; give each port once",
					s, v);
				return -EINVAL;
			}
		}
		ports[count++] = (__u16)v;
		if (!end)
			break;
		p = end + 1;
	}
	*n = count;
	return 0;
}

int ks_check_ifname_syntax(const char *name, char *err, size_t errlen)
{
	const char *p;

	if (!name || !*name) {
		snprintf(
			err, errlen,
			"--iface needs an interface name; see 'ip link' for the names");
		return -EINVAL;
	}
	if (strlen(name) >= IF_NAMESIZE) {
		snprintf(
			err, errlen,
			"interface name '%s' is longer than %d characters; see 'ip link' for the names",
			name, IF_NAMESIZE - 1);
		return -EINVAL;
	}
	/* The kernel forbids '/', ':' and whitespace; '/' would also escape
	 * the pin folder. "." and ".." are not interface names either. */
	for (p = name; *p; p++) {
		if (*p == '/' || *p == ':' || isspace((unsigned char)*p) ||
		    !isprint((unsigned char)*p)) {
			snprintf(
				err, errlen,
				"'%s' is not a valid interface name; see 'ip link' for the names",
				name);
			return -EINVAL;
		}
	}
	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		snprintf(
			err, errlen,
			"'%s' is not a valid interface name; see 'ip link' for the names",
			name);
		return -EINVAL;
	}
	return 0;
}

int ks_resolve_ifname(const char *name, unsigned int *ifindex, char *err,
		      size_t errlen)
{
	unsigned int idx;

	if (ks_check_ifname_syntax(name, err, errlen))
		return -EINVAL;
	idx = if_nametoindex(name);
	if (!idx) {
		snprintf(
			err, errlen,
			"no interface '%s' in this network namespace; see 'ip link' for the names",
			name);
		return -ENODEV;
	}
	*ifindex = idx;
	return 0;
}

void ks_format_ports(const __u16 ports[KS_MAX_PORTS], char *buf, size_t len)
{
	size_t off = 0;
	int i, any = 0;

	buf[0] = '\0';
	for (i = 0; i < KS_MAX_PORTS && off < len; i++) {
		if (!ports[i])
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%s%u",
					any ? "," : "", ports[i]);
		any = 1;
	}
	if (!any)
		snprintf(buf, len, "11211"); /* the datapath's default */
}

void ks_format_seconds(__u32 ms, char *buf, size_t len)
{
	__u32 frac = ms % 1000;

	if (!frac)
		snprintf(buf, len, "%u", ms / 1000);
	else if (frac % 100 == 0)
		snprintf(buf, len, "%u.%u", ms / 1000, frac / 100);
	else if (frac % 10 == 0)
		snprintf(buf, len, "%u.%02u", ms / 1000, frac / 10);
	else
		snprintf(buf, len, "%u.%03u", ms / 1000, frac);
}
