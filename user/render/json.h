/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * json.h - the agent's one JSON string escaper, to a stream (the report)
 * or to a caller's buffer (the routing document). Keys are bytes of user
 * data: '"' and '\' are escaped with a backslash, every byte outside
 * printable ASCII (below 0x20, 0x7f and above) becomes \u00XX (lower-case
 * hex), so a document is always valid JSON whatever the keys hold. The
 * buffer writer formats like snprintf: it counts what the whole document
 * needs and never writes past the buffer.
 */
#ifndef KS_JSON_H
#define KS_JSON_H

#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

/* Writes a JSON string, quotes included. */
void ks_json_string(FILE *f, const __u8 *s, size_t len);

/* A document being written into buf[size]; len counts every byte the
 * document needs, so len >= size means it was cut. */
struct ks_json_buf {
	char *buf;
	size_t size, len;
};

__attribute__((format(printf, 2, 3))) void ks_json_buf_printf(
	struct ks_json_buf *w, const char *fmt, ...);
/* ks_json_string into the buffer: the same bytes. */
void ks_json_buf_string(struct ks_json_buf *w, const __u8 *s, size_t len);
/* NUL-terminates buf (at len, or at its last byte when cut; nothing when
 * size is 0) and returns len. */
size_t ks_json_buf_end(struct ks_json_buf *w);

#endif
