/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ring_doc.h - the ring as a document in etcd (issue 12, docs/fleet.md):
 * /keysteer/CLUSTER/ring holds one JSON object, schema version 1, that
 * gives back the ring bit for bit: the distribution (and its key hash),
 * vnodes for the vnode ring, every shard in index order with its host,
 * port, weight and name, and as checks the number of points and the
 * digest (ks_ring_digest) of the ring it builds. A reader builds the ring
 * from the shards and refuses the document when either check differs, so
 * two builders that disagree never place keys differently in silence.
 *
 * Pure code (jansson, no I/O): the unit tier tests it on fixed text.
 */
#ifndef KS_RING_DOC_H
#define KS_RING_DOC_H

#include <stddef.h>
#include <linux/types.h>
#include "core/ring.h"
#include "core/shards.h"

#define KS_RING_DOC_SCHEMA 1
/* A ring with explicit points (a plan, core/ring_points.h): readers of
 * schema 1 refuse it (their schema check), so no agent or client places
 * keys on the names' ring while the fleet follows the plan. */
#define KS_RING_DOC_SCHEMA_POINTS 2
/* "clients": "keysteer": the operator says every client of the fleet
 * reads the ring from etcd (libkeysteer), the condition of a plan */
#define KS_RING_DOC_CLIENTS_KS "keysteer"
#define KS_RING_DOC_KIND       "keysteer-ring"
#define KS_RING_DOC_MAX        (4 << 20) /* bytes; 1024 shards take ~120 KiB */
#define KS_CLUSTER_MAX         64        /* --cluster NAME */
#define KS_CLUSTER_DEFAULT     "default"
#define KS_ETCD_ROOT           "/keysteer/"
#define KS_ERRLEN_DOC          512 /* an error line of this file */

/* "default", "cache-eu1": 1..64 of [A-Za-z0-9._-], not "." or "..";
 * 0, or -EINVAL with the reason in err. */
int ks_cluster_check(const char *name, char *err, size_t errlen);
/* "/keysteer/NAME/ring" into buf; the length, or -ENAMETOOLONG. */
int ks_ring_doc_key(const char *cluster, char *buf, size_t len);

/* The key hash each distribution uses by default: "md5", "fnv1a_64", or
 * pymemcache's "murmur3_32". */
const char *ks_dist_key_hash(__u32 dist);

/* What a document says. */
struct ks_ring_doc {
	int schema;
	enum ks_dist dist;
	struct ks_ring_key key;  /* key_hash and hash_tag */
	__u32 vnodes;            /* vnode ring: points per unit; else 0 */
	struct ks_shards shards; /* self unset (KS_NO_SHARD) */
	__u32 npoints;
	__u64 digest;
	char written_by[128]; /* "" when absent */
	char written_at[40];
	/* 1: 'ring set --force' wrote it past the move limit
	 * (core/ring_diff.h), so agents may purge for it beyond the ideal
	 * share; absent (0) in every other document */
	int force;
	/* schema 2: the explicit points, malloc'ed (NULL in schema 1) */
	struct ks_ring_point *pts;
	__u32 npts;
	/* 1: "clients": "keysteer" (KS_RING_DOC_CLIENTS_KS) */
	int clients_ks;
};

/*
 * The document of a built ring and its shards, as one JSON object
 * (keys in a fixed order, two-space indent, a final newline); by and at
 * (may be NULL) fill written_by and written_at. *out is malloc'ed. 0, or
 * -ENOMEM.
 */
int ks_ring_doc_encode(const struct ks_ring *r, const struct ks_shards *s,
		       const char *by, const char *at, char **out, size_t *len);

/* The same, with "force": true after written_at when force is set (an
 * addition to schema 1: older readers ignore it). */
int ks_ring_doc_encode_force(const struct ks_ring *r, const struct ks_shards *s,
			     const char *by, const char *at, int force,
			     char **out, size_t *len);

/* The same with "clients": "keysteer" after it when clients_ks is set.
 * A ring with explicit points (meta.planned) is written as schema 2 with
 * "explicit_points": [[value, shard], ...]; any other as schema 1. */
int ks_ring_doc_encode_ext(const struct ks_ring *r, const struct ks_shards *s,
			   const char *by, const char *at, int force,
			   int clients_ks, char **out, size_t *len);

/*
 * Reads a document: d is overwritten (free with ks_ring_doc_free). Refused
 * with one line in err (-EBADMSG): not JSON or not an object, no or a
 * newer schema, another kind, an unknown distribution, an unknown key
 * hash (or not murmur3_32 for pymemcache), a hash_tag not two bytes, vnodes where they do not belong or out of
 * range, no shards or more than KS_MAX_SHARDS, a shard that is not
 * host/port/weight/name as a shard file would take it (the shard file's
 * rules, each named by its index), a missing points or digest, a "force"
 * that is not true or false, schema 2 without "explicit_points" or
 * schema 1 with them, points not [value, shard] pairs of whole numbers,
 * a "clients" other than "keysteer" or "any". Fields it
 * does not know are ignored (later additions to schema 1 stay readable).
 */
int ks_ring_doc_decode(const char *buf, size_t len, struct ks_ring_doc *d,
		       char *err, size_t errlen);

/*
 * Builds the ring of d (self: "host:port" of this host or NULL; when it
 * is none of the shards, shards->self is KS_SELF_OUTSIDE: the host owns
 * nothing) with meta.version = version, and checks the
 * points and the digest against the document (schema 2: the explicit
 * points on the shards' ring of the distribution, core/ring_points.h,
 * whose digest covers them). On success r and shards
 * are the caller's (the shards moved out of d). -EINVAL, -ENOMEM with err.
 */
int ks_ring_doc_build(struct ks_ring_doc *d, const char *self, __u64 version,
		      struct ks_shards *shards, struct ks_ring *r, char *err,
		      size_t errlen);

void ks_ring_doc_free(struct ks_ring_doc *d);

/* Reads a ring document from a file (at most KS_RING_DOC_MAX bytes) and
 * builds it as ks_ring_doc_build does; *clients_ks (may be NULL) gets
 * its "clients": "keysteer". 0, or a negative errno with err naming the
 * file. */
int ks_ring_doc_load_file(const char *path, const char *self, __u64 version,
			  struct ks_shards *shards, struct ks_ring *r,
			  int *clients_ks, char *err, size_t errlen);

/* ks_ring_load, or with spec->plan set the ring document of that file
 * (refused beside a shard list or distribution option). */
int ks_ring_doc_load_spec(const struct ks_ring_spec *spec,
			  struct ks_shards *shards, struct ks_ring *r,
			  __u64 version, int *clients_ks, char *err,
			  size_t errlen);

#endif
