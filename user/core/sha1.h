/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sha1.h - SHA-1 (FIPS 180-4) of a short byte string, for dalli's ring
 * points (Digest::SHA1 of "host:port:i"). Only point names go through it,
 * when a ring is built: not a security use, and not worth linking a
 * crypto library into libks, libkeysteer and every tool.
 */
#ifndef KS_SHA1_H
#define KS_SHA1_H

#include <stddef.h>
#include <linux/types.h>

void ks_sha1(const void *data, size_t len, __u8 out[20]);

#endif
