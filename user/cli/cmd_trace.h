/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* trace.h - formatting of one trace event (also used by the tests). */
#ifndef KS_TRACE_H
#define KS_TRACE_H

#include <stddef.h>
#include "keysteer.h"

/* A datapath address (IPv4 as ::ffff:a.b.c.d) as text, IPv4 dotted,
 * IPv6 without brackets. */
void ks_format_ip(const __u8 addr[16], char *buf, size_t len);

/* "<class> <op> <key> <client ip>:<port> <tcp|udp>"; IPv6 as [addr]. */
void ks_format_event(const struct ks_event *e, int hash_only, char *buf,
		     size_t len);

#endif
