/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * mc_key.h - which keys memcached's text protocol can carry: the rule the
 * memcached client (net/mc_client.c) applies before it sends a key, and
 * the hot-key policy and the steering machine apply before they choose
 * replicas for one. Pure: no I/O.
 */
#ifndef KS_MC_KEY_H
#define KS_MC_KEY_H

#include <stddef.h>
#include <linux/types.h>

#define KS_MC_KEY_MAX 250 /* memcached's KEY_MAX_LENGTH */

/* 0 if the key is 1..250 bytes with no space or control byte, else -EINVAL. */
int ks_mc_key_check(const __u8 *key, size_t klen);

/*
 * A key for a terminal: printable ASCII as is, backslash doubled, every
 * other byte as \xNN; cut to fit buflen (ending in "..." when cut).
 * Returns buf.
 */
char *ks_key_text(const __u8 *s, size_t len, char *buf, size_t buflen);

#endif
