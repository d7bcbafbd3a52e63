/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * etcd_mirror.h - a local copy of every key under a prefix: one range
 * read, then the watch's events applied in order (a put adds or replaces
 * its key, a delete removes it), so a watcher holds the same keys etcd
 * does at the revision of the last event, without reading again. Keys
 * kept in key order, as a range returns them. No I/O.
 */
#ifndef KS_ETCD_MIRROR_H
#define KS_ETCD_MIRROR_H

#include <stddef.h>
#include <stdint.h>
#include "core/etcd_codec.h"

struct ks_etcd_mirror {
	int64_t revision; /* the read's, then the newest event's */
	size_t n, cap;
	struct ks_etcd_kv *kvs;
};

/* Takes the range's keys (r is left empty, as after ks_etcd_range_free);
 * m is overwritten. */
void ks_etcd_mirror_load(struct ks_etcd_mirror *m, struct ks_etcd_range *r);
/* Applies one event, taking its key and value (ev's kv is left empty).
 * 0, or -ENOMEM (m unchanged). */
int ks_etcd_mirror_apply(struct ks_etcd_mirror *m, struct ks_etcd_event *ev);
void ks_etcd_mirror_free(struct ks_etcd_mirror *m);

#endif
