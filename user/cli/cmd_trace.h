/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cmd_trace.h - formatting of one trace event (also used by the tests). */
#ifndef KS_TRACE_H
#define KS_TRACE_H

#include <stddef.h>
#include "keysteer.h"

/* "<class> <op> <key> <client ip>:<port> <tcp|udp>"; IPv6 as [addr]. */
void ks_format_event(const struct ks_event *e, int hash_only, char *buf,
		     size_t len);

#endif
