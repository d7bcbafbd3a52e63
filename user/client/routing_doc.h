/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * routing_doc.h - an agent's routing document (GET /routing.json,
 * render/routing_json.c's ks_hot_json_steer) into the client's view, for a
 * fleet without etcd (docs/client.md, "The view from routing documents").
 * Pure code (jansson, no I/O): the caller polls and serialises.
 *
 * A key the document lists with replicas is taken as armed on them, owned
 * by the ring's owner, with the document's owner_turns: the etcd view's
 * decisions over what the document says. The document's replica_set
 * joins the replicas every write invalidates (every owner's: a document
 * does not name its shard). The document says nothing of fills and dirty
 * writes, so reads may find a copy not yet made or invalidated: they fall
 * back to the owner, as with a lagging etcd view.
 */
#ifndef KSC_ROUTING_DOC_H
#define KSC_ROUTING_DOC_H

#include <stddef.h>
#include "client/view.h"

/*
 * Applies one document at version rev (the poll's round; the caller marks
 * and sweeps around a round of every document, ksc_view_hot_mark). 0, or
 * -EBADMSG with v->why (not a routing document, a key whose hash is not
 * its ks_key_hash, a name not host:port, too many replicas), -ENOMEM,
 * -ENOENT without a ring.
 */
int ksc_view_routing(struct ksc_view *v, const char *doc, size_t len,
		     __s64 rev);

#endif
