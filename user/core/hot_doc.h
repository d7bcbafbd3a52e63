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
 *
 * Only an entry a client acts on is a hot/ key (ks_hot_doc_for_clients:
 * filling, armed, dirty, or split into sub-keys). A key that is only
 * counted is listed in its owner's load document instead, its hot/
 * fields as the "entry" of its item there (ks_hot_doc_entry_json), so no
 * client hears of it being born or dying (docs/fleet.md, "hot/HASH").
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
	/* "limit_per_s": the automatic cap its owner put on the key
	 * (docs/limits.md "The automatic cap"), requests/s; 0: none, and
	 * the field left out. libkeysteer limits the key's calls at it. */
	__u32 limit_rate;
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
struct json_t;
/* The same as a jansson object (the caller's reference), or NULL. */
struct json_t *ks_hot_doc_json(const struct ks_hot_doc *d);

/* Whether a client acts on the entry, so that it belongs in hot/: its
 * state is not counting (copies being made, armed, dirty), or it is a
 * write-hot key split into sub-keys (the counters' readers sum them), or
 * it carries an automatic cap (libkeysteer limits its calls). */
int ks_hot_doc_for_clients(const struct ks_hot_doc *d);

/*
 * The entry of a key only counted, as its owner's load document lists it
 * (its "hot" item's "entry"): the hot/ document without what the item or
 * the document says (schema, hash, owner) and what a counted key has
 * none of (replicas, write_seq, owner_turns, rates: the item has the
 * rates now), and each field at its default (read_hot, write_hot, pinned
 * false; copies, subkeys 1; state counting). NULL without memory.
 */
struct json_t *ks_hot_doc_entry_json(const struct ks_hot_doc *d);
/* Reads such an entry back as the hot/ document of hash owned by owner,
 * checked as ks_hot_doc_decode checks one, and refused as well when it
 * is one a client acts on (that belongs in hot/). 0, or -EINVAL. */
int ks_hot_doc_decode_entry(struct json_t *entry, __u64 hash, const char *owner,
			    struct ks_hot_doc *d, char *err, size_t errlen);

/*
 * Reads a document, checking it as a reader must: schema 1, every required
 * field (hash, owner, state, copies) of its type, the hash 16 hex digits
 * and the same as want_hash (the key's last path component; 0: not
 * checked), a known state, sizes in range. 0, or -EINVAL with the reason.
 */
int ks_hot_doc_decode(const char *json, size_t len, __u64 want_hash,
		      struct ks_hot_doc *d, char *err, size_t errlen);
/* The same of a parsed JSON object (borrowed). */
int ks_hot_doc_decode_json(struct json_t *o, __u64 want_hash,
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
