/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * hot_doc.h - a hot key's entry in the fleet, /keysteer/CLUSTER/hot/HASH
 * (schema 1, docs/fleet.md), as its owner publishes it and a reader (agent
 * fleet, a client library) checks it: the key (or its hash only), who owns
 * it, its copies and replicas, read-hot or write-hot, the sub-keys a
 * write-hot key should be split into, the steering state and the write
 * sequence. Pure code: no I/O.
 *
 * Written only when something a client reads changes (ks_hot_doc_same):
 * the decision, state, replicas, write sequence, owner or key, never for
 * a rate alone. Every client handle watches hot/ and none reads the rates:
 * the live rates go into the owner's load document (host_doc.h, "hot"),
 * outside the clients' prefix. The entry keeps reads_per_s and
 * writes_per_s, as of its last write, for readers before that.
 */
#ifndef KS_HOT_DOC_H
#define KS_HOT_DOC_H

#include <stddef.h>
#include <linux/types.h>
#include "keysteer.h"

#define KS_HOT_DOC_SCHEMA 1
#define KS_HOT_DOC_MOVE   0.10
#define KS_HOT_DOC_OWNER  160 /* bytes of owner and each replica */

enum ks_hot_doc_state {
	KS_HDS_COUNTING = 0, /* in the datapath for counting, not steered */
	KS_HDS_FILLING,      /* copies being made, not armed yet */
	KS_HDS_ARMED,        /* reads spread over the copies */
	KS_HDS_DIRTY,        /* a write seen: reads go to the owner until the
			      * copies are refreshed */
	KS_HDS_NSTATES,
};

struct ks_hot_doc {
	__u64 hash;           /* ks_key_hash of the key */
	__u8 key[KS_KEY_BUF]; /* the key bytes when has_key */
	__u16 len;
	__u8 has_key; /* 0: hash only (no --export-keys) */
	__u8 read_hot, write_hot, pinned;
	__u8 state;      /* enum ks_hot_doc_state */
	__u32 copies;    /* owner + replicas the table wants */
	__u32 subkeys;   /* split into this many (1: no split) */
	__u32 nreplicas; /* replicas holding copies now */
	char owner[KS_HOT_DOC_OWNER];
	char replica[KS_MAX_COPIES - 1][KS_HOT_DOC_OWNER];
	__u64 write_seq;   /* armed at, or the write that dirtied it */
	__u32 owner_turns; /* of KS_STEER_SCHED turns, the owner's (its
			    * --owner-share): the schedule reads follow */
	double reads_ps, writes_ps;
};

/* What the owner's hits and misses of a hot key ("owner_misses_per_s" in
 * its load document's "hot" list, host_doc.h) are measured by. */
#define KS_HOT_DOC_OWNER_SOURCE "tc egress, exact for UDP and unpipelined TCP"

/* "counting", "filling", "armed", "dirty"; "?" otherwise. */
const char *ks_hot_doc_state_name(unsigned state);

/* "/keysteer/CLUSTER/hot/" and the 16 hex digits; the length, or
 * -ENAMETOOLONG. prefix: the same without the hash. */
int ks_hot_doc_key(const char *cluster, __u64 hash, char *buf, size_t len);
int ks_hot_doc_prefix(const char *cluster, char *buf, size_t len);

/* The document as compact JSON (malloc'd, NUL-terminated), or NULL
 * without memory. A key of printable ASCII is "key", any other bytes
 * "key_b64". */
char *ks_hot_doc_encode(const struct ks_hot_doc *d);

/*
 * Reads a document, checking it as a reader must: schema 1, every required
 * field (hash, owner, state, copies) of its type, the hash 16 hex digits
 * and the same as want_hash (the key's last path component; 0: not
 * checked), a known state, sizes in range. 0, or -EINVAL with the reason.
 */
int ks_hot_doc_decode(const char *json, size_t len, __u64 want_hash,
		      struct ks_hot_doc *d, char *err, size_t errlen);

/* Whether b says nothing a client reads that a does not: the same key,
 * owner, decision, state, replicas, write sequence and owner's turns. The
 * rates are not compared: a rate alone is no reason to write hot/. */
int ks_hot_doc_same(const struct ks_hot_doc *a, const struct ks_hot_doc *b);
/* Whether a rate moved from a's to b's (ks_rate_moved): the rule hot/
 * followed before the rates went to the load document, kept for the
 * test-only --fleet-schema 1 agent. */
int ks_hot_doc_rates_moved(const struct ks_hot_doc *a,
			   const struct ks_hot_doc *b);
/* Whether a rate moved by more than KS_HOT_DOC_MOVE of the published one
 * and more than 1/s. */
int ks_rate_moved(double published, double now);
/* A rate as the fleet's documents carry it: three significant digits. */
double ks_rate3(double x);

#endif
