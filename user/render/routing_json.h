/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * routing_json.h - the routing document: the hot-key table (core/hotkeys.h)
 * as the JSON that GET /routing and --routing-file publish (docs/hotkeys.md),
 * keys in hash order so the same table always renders the same bytes.
 * Pure rendering into a caller's buffer.
 */
#ifndef KS_ROUTING_JSON_H
#define KS_ROUTING_JSON_H

#include <stddef.h>
#include "core/hotkeys.h"

struct ks_replica_set;

/*
 * Renders the table as a JSON routing document into buf (always
 * NUL-terminated when size > 0). Returns the length the whole document
 * needs (excluding the NUL), like snprintf: >= size means truncated.
 * With rs (may be NULL), each key steered to replicas also lists them,
 * chosen as the agent chooses them (ks_rendezvous_pick), for clients that
 * route TCP reads themselves.
 */
size_t ks_hot_json(const struct ks_hot_table *t, const struct ks_hot_policy *p,
		   const struct ks_replica_set *rs, __u64 ring_version,
		   char *buf, size_t size);

/*
 * The same, with what a client library that follows this document instead
 * of etcd needs (docs/client.md): with rs, "replica_set", every replica
 * this agent may fill (what a write must invalidate); with owner_turns >=
 * 0, the owner's turns of the read schedule (--owner-share), at the end.
 */
size_t ks_hot_json_steer(const struct ks_hot_table *t,
			 const struct ks_hot_policy *p,
			 const struct ks_replica_set *rs, int owner_turns,
			 __u64 ring_version, char *buf, size_t size);

#endif
