/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fleet_doc.h - the documents under /keysteer/NAME/ (docs/fleet.md) read
 * into fleet_view.h's snapshot: the ring (ring_doc.h), every hosts/SELF
 * and every hot/HASH entry, schema 1. jansson, no I/O. Nothing in etcd is
 * trusted: an entry that does not read is kept as refused, with why, and
 * never stops the rest from being shown.
 */
#ifndef KS_FLEET_DOC_H
#define KS_FLEET_DOC_H

#include <stddef.h>
#include "core/etcd_codec.h"
#include "core/fleet_view.h"

#define KS_FLEET_DOC_SCHEMA 1

/*
 * One hosts/ entry: h is overwritten; h->valid 0 with h->why when the
 * document is refused (not a JSON object, schema not 1, a rate that is
 * not a number >= 0, a shard or top entry of the wrong shape). raw and
 * len are kept in h (borrowed).
 */
void ks_fleet_host_decode(const char *self, const char *raw, size_t len,
			  struct ks_fleet_host *h);

/*
 * One hot/HASH entry, schema 1 (hash: the key's last part): 0 and e
 * filled, or -EBADMSG with the reason in why: schema not 1, a required
 * field (schema, hash, owner, state, copies) missing or of the wrong
 * type, a hash that is not 16 lowercase hex digits or differs from the
 * key's, an unknown state. Optional fields of the wrong type are taken
 * as absent.
 */
int ks_fleet_hot_decode(const char *hash, const char *raw, size_t len,
			struct ks_fleet_hot *e, char *why, size_t whylen);

/*
 * The snapshot of the n keys kvs (every key under prefix,
 * "/keysteer/NAME/", in key order) at store revision rev: s is
 * overwritten; free it with ks_fleet_snapshot_free. The hosts keep
 * pointers into kvs' values: kvs must outlive s. 0 or -ENOMEM.
 */
int ks_fleet_snapshot_decode(const struct ks_etcd_kv *kvs, size_t n,
			     const char *prefix, int64_t rev,
			     struct ks_fleet_snapshot *s);
void ks_fleet_snapshot_free(struct ks_fleet_snapshot *s);

#endif
