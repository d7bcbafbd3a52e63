/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * opts.h - range-checked parsing of command-line values. Every parser
 * returns 0 or -EINVAL/-ERANGE and on error writes one message of the form
 * "<what is wrong>; <what to do>" into err, which the caller prefixes with
 * "agent: " (see log.h). Pure: no side effects beyond the outputs.
 */
#ifndef KS_OPTS_H
#define KS_OPTS_H

#include <stddef.h>
#include <linux/types.h>
#include "keysteer.h"

#define KS_ERRLEN 256

/* A whole number in [min, max]; what names the option in messages. */
int ks_parse_uint(const char *what, const char *s, unsigned long long min,
		  unsigned long long max, unsigned long long *out, char *err,
		  size_t errlen);

/*
 * Seconds with up to three decimals ("1", "0.5", "2.125") into
 * milliseconds, in [min_ms, max_ms].
 */
int ks_parse_seconds(const char *what, const char *s, __u32 min_ms,
		     __u32 max_ms, __u32 *out_ms, char *err, size_t errlen);

/*
 * "11211,11212": 1..KS_MAX_PORTS distinct ports, each 1..65535, into
 * ports[] (unused slots zeroed); *n gets the count.
 */
int ks_parse_ports(const char *s, __u16 ports[KS_MAX_PORTS], int *n, char *err,
		   size_t errlen);

/* Name syntax only (length, characters), no system calls. */
int ks_check_ifname_syntax(const char *name, char *err, size_t errlen);

/* Syntax, then if_nametoindex() in the current network namespace. */
int ks_resolve_ifname(const char *name, unsigned int *ifindex, char *err,
		      size_t errlen);

/* "11211,11212" from a ports array, for messages. */
void ks_format_ports(const __u16 ports[KS_MAX_PORTS], char *buf, size_t len);

/* "0.5", "1", "2.125": milliseconds as seconds without trailing zeros. */
void ks_format_seconds(__u32 ms, char *buf, size_t len);

#endif
