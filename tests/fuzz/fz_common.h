/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fz_common.h - what the libFuzzer harnesses (tests/fuzz/fz_*.c) share:
 * taking typed values off the fuzz input, strings in buffers of exactly
 * their size (so AddressSanitizer sees a read past the NUL), error buffers
 * of a fuzzed size, and a check that aborts with a message (libFuzzer then
 * saves the input as a crash).
 */
#ifndef KS_FZ_COMMON_H
#define KS_FZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A broken property: print why and abort, which libFuzzer reports as a
 * crash with the input that caused it. */
#define FZ_CHECK(cond, ...)                                                    \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "fz: %s:%d: %s: ", __FILE__, __LINE__, \
				#cond);                                        \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			abort();                                               \
		}                                                              \
	} while (0)

/* The fuzz input, consumed from the front. */
struct fz_bytes {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t fz_take_u8(struct fz_bytes *b)
{
	uint8_t v = 0;

	if (b->n) {
		v = *b->p++;
		b->n--;
	}
	return v;
}

static inline uint32_t fz_take_u32(struct fz_bytes *b)
{
	uint32_t v = 0;
	int i;

	for (i = 0; i < 4; i++)
		v = v << 8 | fz_take_u8(b);
	return v;
}

/* A malloc'd NUL-terminated copy of the next n bytes (fewer if the input
 * ends), in a buffer of exactly n + 1 bytes. */
static inline char *fz_take_str(struct fz_bytes *b, size_t n)
{
	char *s;

	if (n > b->n)
		n = b->n;
	s = malloc(n + 1);
	if (!s)
		abort();
	memcpy(s, b->p, n);
	s[n] = '\0';
	b->p += n;
	b->n -= n;
	return s;
}

/* The rest of the input as a string (a NUL inside ends it early, as it
 * would for a command-line argument). */
static inline char *fz_take_rest(struct fz_bytes *b)
{
	return fz_take_str(b, b->n);
}

/* An error buffer of 1..256 bytes, exactly, filled with a marker so a
 * parser that forgets to terminate it is caught. */
static inline char *fz_errbuf(struct fz_bytes *b, size_t *len)
{
	char *e;

	*len = 1 + fz_take_u8(b);
	e = malloc(*len);
	if (!e)
		abort();
	memset(e, 'Z', *len);
	return e;
}

/* After a failed call: err holds a terminated message. */
static inline void fz_check_err(const char *err, size_t len)
{
	FZ_CHECK(memchr(err, '\0', len) != NULL,
		 "error message not terminated in %zu bytes", len);
	FZ_CHECK(len == 1 || err[0] != '\0', "empty error message");
}

#endif
