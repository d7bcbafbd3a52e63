// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * json.c - JSON strings escaped one way for the whole agent, into a stream
 * or a buffer (see json.h).
 */
#include <stdarg.h>
#include <string.h>
#include "render/json.h"

/* The escape of one byte into out (at most 6 bytes, no NUL): its length. */
static size_t escape_byte(__u8 c, char out[6])
{
	static const char hex[] = "0123456789abcdef";

	if (c == '"' || c == '\\') {
		out[0] = '\\';
		out[1] = (char)c;
		return 2;
	}
	if (c < 0x20 || c >= 0x7f) {
		memcpy(out, "\\u00", 4);
		out[4] = hex[c >> 4];
		out[5] = hex[c & 0xf];
		return 6;
	}
	out[0] = (char)c;
	return 1;
}

void ks_json_string(FILE *f, const __u8 *s, size_t len)
{
	char e[6];
	size_t i;

	fputc('"', f);
	for (i = 0; i < len; i++)
		fwrite(e, 1, escape_byte(s[i], e), f);
	fputc('"', f);
}

/* Appends n bytes, as far as they fit; len counts them all. */
static void buf_put(struct ks_json_buf *w, const char *p, size_t n)
{
	size_t room = w->len < w->size ? w->size - w->len : 0;

	if (room)
		memcpy(w->buf + w->len, p, n < room ? n : room);
	w->len += n;
}

void ks_json_buf_printf(struct ks_json_buf *w, const char *fmt, ...)
{
	size_t room = w->len < w->size ? w->size - w->len : 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? w->buf + w->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		w->len += (size_t)n;
}

void ks_json_buf_string(struct ks_json_buf *w, const __u8 *s, size_t len)
{
	char e[6];
	size_t i;

	buf_put(w, "\"", 1);
	for (i = 0; i < len; i++)
		buf_put(w, e, escape_byte(s[i], e));
	buf_put(w, "\"", 1);
}

size_t ks_json_buf_end(struct ks_json_buf *w)
{
	if (w->size)
		w->buf[w->len < w->size ? w->len : w->size - 1] = '\0';
	return w->len;
}
