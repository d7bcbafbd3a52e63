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
 * A document is applied whole or not at all: it is read into a plan
 * first, and a refusal (of any entry) leaves the view's keys and
 * replicas as they were; only the server names it interned stay, which
 * route nothing. A poll reads every document of a round before applying
 * any, so a round is whole too.
 */
struct ksc_routing_plan {
	struct ksc_hot_in *in; /* the keys, in document order */
	size_t n;
	__u16 set[KSC_SEEN_MAX]; /* replica_set, as server ids */
	unsigned nset;
};

/* 0 with p filled (free it), or ksc_view_routing's errors with nothing
 * of the document applied. */
int ksc_routing_parse(struct ksc_view *v, const char *doc, size_t len,
		      struct ksc_routing_plan *p);
/* p into the view at version rev: 0, or the first of ksc_view_hot_set's
 * errors (every key still set that could be). */
int ksc_routing_apply(struct ksc_view *v, const struct ksc_routing_plan *p,
		      __s64 rev);
void ksc_routing_plan_free(struct ksc_routing_plan *p);

/*
 * Parses and applies one document at version rev (the poll's round; the caller marks
 * and sweeps around a round of every document, ksc_view_hot_mark). 0, or
 * -EBADMSG with v->why (not a routing document, a key whose hash is not
 * its ks_key_hash, a name not host:port, too many replicas), -ENOMEM,
 * -ENOENT without a ring.
 */
int ksc_view_routing(struct ksc_view *v, const char *doc, size_t len,
		     __s64 rev);

#endif
