/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * view_file.h - one view per host (docs/client.md, "One view per host"):
 * the documents of the range clients watch, as of one etcd revision, in a
 * file a host follower ('agent follow') writes and library handles map
 * read-only.
 *
 * A new snapshot is a new file, written beside the path and renamed over
 * it: a reader that opens the path gets a whole file or the one before,
 * never half of one, without a lock or a retry loop shared with a writer
 * that may die at any moment. Only the follower's liveness words (the
 * heartbeat, whether its watch is up and since when) change in place, each
 * one aligned 64-bit word stored and loaded atomically; they are outside
 * the checksums. Readers notice a new snapshot by the path's inode (and
 * the generation). Everything else is checked before use: magic, version,
 * sizes, a checksum of the header and one of the body, the prefix, and
 * every record inside the body; a file that fails any of it is refused
 * with one line saying what.
 *
 * Layout (host byte order: the file never leaves the host): the header
 * (struct ks_view_file_hdr), then nkv records, each a u32 key length, a
 * u32 value length, an s64 mod_revision, the key, the value, zeros to 8.
 */
#ifndef KS_VIEW_FILE_H
#define KS_VIEW_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "core/etcd_codec.h"

#define KS_VIEW_FILE_MAGIC   "KSVIEW\r\n"
#define KS_VIEW_FILE_VERSION 1
#define KS_VIEW_FILE_DIR     "/run/keysteer" /* the default: DIR/CLUSTER.view */
#define KS_VIEW_PREFIX_MAX   96
#define KS_VIEW_FILE_MAX     (256u << 20) /* bytes; a bigger one is refused */

/* The follower's liveness, written in place (atomics, CLOCK_MONOTONIC ms:
 * one clock for every process of one boot). */
struct ks_view_file_live {
	__u64 heartbeat_ms; /* the follower's loop last ran */
	__u64 up;           /* 1: its watch is established */
	__u64 since_ms;     /* up last changed (the snapshot's start) */
	__u64 pad;
};

struct ks_view_file_hdr {
	char magic[8];
	__u32 version, hdr_len;
	__u64 generation; /* the follower's count of snapshots */
	__s64 revision;   /* etcd's: the documents as of this revision */
	__u64 nkv, body_len, body_sum;
	__u64 writer_pid;
	char prefix[KS_VIEW_PREFIX_MAX]; /* the range, NUL-padded */
	__u64 hdr_sum;                   /* of every byte before it */
	struct ks_view_file_live live;
};
_Static_assert(sizeof(struct ks_view_file_hdr) == 200, "view file header");

/*
 * The range of etcd the client library watches for cluster ("/keysteer/
 * NAME/"), into buf: its length, or -EINVAL (a bad name, why in err) or
 * -ENOSPC. The library's view and the host follower both take it from
 * here, so a narrower range changes both.
 */
int ks_view_range(const char *cluster, char *buf, size_t len, char *err,
		  size_t errlen);
/* The default path of cluster's view file (KS_VIEW_FILE_DIR/NAME.view). */
int ks_view_file_default(const char *cluster, char *buf, size_t len);

struct ks_view_file_meta {
	const char *prefix;
	__u64 generation, pid;
	__s64 revision;
	struct ks_view_file_live live;
};

/* Bytes of the file of kvs[0..n). */
size_t ks_view_file_size(const struct ks_etcd_kv *kvs, size_t n);
/* The file into buf (ks_view_file_size bytes): 0, or -EINVAL (a prefix
 * too long, a key outside it), -E2BIG (bigger than KS_VIEW_FILE_MAX). */
int ks_view_file_encode(void *buf, size_t len,
			const struct ks_view_file_meta *m,
			const struct ks_etcd_kv *kvs, size_t n);

/* A decoded file: kvs point into the buffer decoded (not NUL-ended). */
struct ks_view_snap {
	__u64 generation, pid; /* pid: the writer's (a new follower: another) */
	__s64 revision;
	size_t n;
	struct ks_etcd_kv *kvs;
};

/*
 * Checks and decodes len bytes: 0 with *s (free its array with
 * ks_view_snap_free), or -EBADMSG (not a view file, another version, a
 * size, checksum or record that does not hold: torn, truncated or
 * garbage), -ESTALE (the range of another cluster, or another range than
 * prefix), -ENOMEM; err says which in one line.
 */
int ks_view_file_decode(const void *buf, size_t len, const char *prefix,
			struct ks_view_snap *s, char *err, size_t errlen);
void ks_view_snap_free(struct ks_view_snap *s);

/* The liveness words of a mapped file (its header, checked or not). */
static inline struct ks_view_file_live *ks_view_file_live(void *map)
{
	return &((struct ks_view_file_hdr *)map)->live;
}

/* ---- I/O: the follower's side ---- */

/* The newest file written, mapped read-write for its liveness words. */
struct ks_view_writer {
	char path[4096];
	void *map;
	size_t len;
};

/*
 * kvs as of m->revision written beside w->path and renamed over it (the
 * directory made first if missing, mode 0755, the file 0644); the old
 * mapping dropped, the new one kept. 0, or a negative errno with err.
 */
int ks_view_file_publish(struct ks_view_writer *w,
			 const struct ks_view_file_meta *m,
			 const struct ks_etcd_kv *kvs, size_t n, char *err,
			 size_t errlen);
/* The liveness words of the newest file, stored in place. */
void ks_view_file_beat(struct ks_view_writer *w,
		       const struct ks_view_file_live *l);
void ks_view_writer_close(struct ks_view_writer *w);

/* ---- I/O: a reader's side ---- */

struct ks_view_map {
	void *map;
	size_t len;
	__u64 dev, ino;
};

/*
 * The file at path mapped read-only and decoded into *s (kvs into the
 * mapping): 0, or a negative errno with err (-ENOENT: no file; the
 * decoder's errors). On error *m is left empty.
 */
int ks_view_file_map(const char *path, const char *prefix,
		     struct ks_view_map *m, struct ks_view_snap *s, char *err,
		     size_t errlen);
/* The mapping's pages past the header given back (the snapshot has been
 * read; the liveness words stay): kvs into it must not be used after. */
void ks_view_map_drop_body(struct ks_view_map *m);
/* 1 when path now names another file than m (or none), else 0. */
int ks_view_file_changed(const char *path, const struct ks_view_map *m);
void ks_view_map_close(struct ks_view_map *m);
/* The mapping's liveness words, loaded atomically. */
void ks_view_file_live_load(const struct ks_view_map *m,
			    struct ks_view_file_live *l);

#endif
