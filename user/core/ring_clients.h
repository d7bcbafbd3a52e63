/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ring_clients.h - '--client NAME': the ring settings named after the
 * client library and option an application uses, so an operator says
 * "dalli" or "php-memcached-consistent" instead of working out which
 * distribution and hash that means. docs/ring.md has the table.
 */
#ifndef KS_RING_CLIENTS_H
#define KS_RING_CLIENTS_H

#include <stddef.h>
#include "ks_ring.h"

struct ks_client_preset {
	const char *name;   /* --client NAME */
	const char *option; /* what the application sets, in its words */
	__u32 dist;         /* enum ks_dist, or a user-space one (ring.h) */
};

/* Every preset, ending with one whose name is NULL. */
extern const struct ks_client_preset ks_client_presets[];

/* The preset called s, or NULL with err naming the choices. */
const struct ks_client_preset *ks_client_find(const char *s, char *err,
					      size_t errlen);

#endif
