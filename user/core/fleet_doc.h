/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fleet_doc.h - the documents under /keysteer/NAME/ (docs/fleet.md) read
 * into fleet_view.h's snapshot: the ring (ring_doc.h), every hosts/SELF
 * (schema 1), members/SELF with its /keysteer-load/NAME/SELF (schema 2)
 * and every hot/HASH entry. jansson, no I/O. Nothing in etcd is
 * trusted: an entry that does not read is kept as refused, with why, and
 * never stops the rest from being shown.
 */
#ifndef KS_FLEET_DOC_H
#define KS_FLEET_DOC_H

#include <stddef.h>
#include "core/etcd_codec.h"
#include "core/fleet_view.h"

#define KS_FLEET_DOC_SCHEMA   1 /* hosts/SELF */
#define KS_FLEET_DOC_SCHEMA_2 2 /* members/SELF, the load document */

/*
 * One agent's document, of any kind (h->kind): a hosts/ entry (schema 1,
 * "compat" or not), a member or a load document (schema 2, by "kind"): h
 * is overwritten; h->valid 0 with h->why when the document is refused
 * (not a JSON object, schema not 1 or 2, an unknown kind, a rate that is
 * not a number >= 0, a shard or top entry of the wrong shape). raw and
 * len are kept in h (borrowed). The caller checks that the kind is the
 * one its key holds.
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
 * "/keysteer/NAME/", in key order) and the nl load documents loads (every
 * key under load_prefix, "/keysteer-load/NAME/"; NULL and 0 for none) at
 * store revision rev: s is overwritten; free it with
 * ks_fleet_snapshot_free. Its hosts are every members/ entry, with the
 * load document of its SELF when there is one, and every hosts/ entry
 * that is not "compat" (an agent before schema 2), in key order. The
 * hosts keep pointers into kvs' and loads' values: both must outlive s.
 * 0 or -ENOMEM.
 */
int ks_fleet_snapshot_decode(const struct ks_etcd_kv *kvs, size_t n,
			     const char *prefix, const struct ks_etcd_kv *loads,
			     size_t nl, const char *load_prefix, int64_t rev,
			     struct ks_fleet_snapshot *s);
void ks_fleet_snapshot_free(struct ks_fleet_snapshot *s);

#endif
