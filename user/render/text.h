/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * text.h - user data and datapath addresses as text for a terminal or a
 * label: a key's bytes escaped so that none of them can move the cursor,
 * an address the datapath recorded in the notation people read. Used by
 * the report, the dashboard, the metrics and 'agent trace'. Pure.
 */
#ifndef KS_TEXT_H
#define KS_TEXT_H

#include <stddef.h>
#include <linux/types.h>
#include "core/mc_key.h"

/* ks_key_text: core/mc_key.h (the fleet view in core/ needs it too) */

/* 1 when a datapath address is IPv4 (held as ::ffff:a.b.c.d). */
int ks_ip_is_v4mapped(const __u8 addr[16]);
/* A datapath address as text, IPv4 dotted, IPv6 without brackets. */
void ks_format_ip(const __u8 addr[16], char *buf, size_t len);

#endif
