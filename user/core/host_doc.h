/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * host_doc.h - an agent's entries in the fleet (docs/fleet.md): who it is,
 * the ring revision it runs, its class rates, its shard's reads, writes,
 * misdirected requests and reads served per second, and its top keys.
 * Pure code: no I/O. One struct, written as up to three documents:
 *  - the member document, /keysteer/CLUSTER/members/SELF (schema 2): what
 *    clients read (its shard, its replicas) and what names the agent;
 *    nothing in it moves with load, so clients, who watch the whole
 *    /keysteer/CLUSTER/ prefix, get an event only when a member changes;
 *  - the load document, /keysteer-load/CLUSTER/SELF (schema 2): the rates,
 *    top keys, ring revision, purge state and the live figures of each
 *    hot key it owns ("hot"), outside every client's
 *    prefix (a cluster name has no '/', so no /keysteer/NAME/ holds it);
 *  - hosts/SELF (schema 1), everything in one, for readers before schema
 *    2 during a rolling upgrade (--fleet-compat, agent/fleet_pub.h).
 *
 * Writes proportional to change (ks_host_doc_same): a document is new when
 * anything but a rate differs, when a rate moved by more than
 * KS_HOT_DOC_MOVE of itself (and 1/s; the served reads, by more than
 * KS_HOT_DOC_MOVE of the shard's reads), or when a key enters or leaves
 * the top list with more than KS_HOST_DOC_TAIL of the busiest key's rate;
 * a top list's quiet tail shuffling is no change.
 */
#ifndef KS_HOST_DOC_H
#define KS_HOST_DOC_H

#include <stddef.h>
#include <linux/types.h>
#include "keysteer.h"

#define KS_HOST_DOC_SCHEMA   1 /* hosts/SELF */
#define KS_MEMBER_DOC_SCHEMA 2 /* members/SELF and the load document */
#define KS_LOAD_ROOT         "/keysteer-load/"

enum ks_host_doc_kind {
	KS_HDK_HOSTS,  /* hosts/SELF, schema 1, as agents before schema 2 */
	KS_HDK_COMPAT, /* the same, marked "compat": a schema-2 reader
			 * takes members/ and the load document instead */
	KS_HDK_MEMBER, /* members/SELF */
	KS_HDK_LOAD,   /* /keysteer-load/CLUSTER/SELF */
};
#define KS_HOST_DOC_TOP  10
#define KS_HOST_DOC_TAIL 0.10
#define KS_LOAD_HOT_MAX                                                        \
	256 /* the load document's "hot" list: the hot-key
			      * table's size (KS_HOT_CAP) */

/*
 * The figures of each hot key this agent owns, in the load document's
 * "hot" list: one line each (its index, its JSON name). Every figure is a
 * per-second rate >= 0, written with three significant digits, news when
 * it moves by more than KS_HOT_DOC_MOVE (and 1/s), and read back as NAN
 * when a document lacks it (an agent before the figure). Adding a figure
 * is a line here and its value in agent/fleet_pub.c.
 */
#define KS_LOAD_HOT_FIELDS(X)                                                  \
	X(KS_LHF_READS, "reads_per_s")                                         \
	X(KS_LHF_WRITES, "writes_per_s")                                       \
	X(KS_LHF_OWNER_HITS, "owner_hits_per_s")                               \
	X(KS_LHF_OWNER_MISSES, "owner_misses_per_s")

enum ks_load_hot_field {
#define KS_LHF_ENUM(id, name) id,
	KS_LOAD_HOT_FIELDS(KS_LHF_ENUM)
#undef KS_LHF_ENUM
	KS_LHF_N
};

/* The JSON name of each figure, by enum ks_load_hot_field. */
extern const char *const ks_load_hot_name[KS_LHF_N];

struct ks_hot_doc;
struct ks_load_hot {
	__u64 hash; /* ks_key_hash: the key's hot/HASH entry */
	double v[KS_LHF_N];
	/* a key only counted, which has no hot/ entry (hot_doc.h): the
	 * writer's entry to list as its "entry" (borrowed, read only while
	 * the document is encoded; NULL: its hot/ entry says it); a reader
	 * sets has_entry when the item has one */
	const struct ks_hot_doc *entry;
	int has_entry;
};

/*
 * The load document's optional "limits" list (docs/limits.md): each key
 * this agent rate-limits with what it let through, refused over UDP and
 * counted over TCP per second over its last interval. At most
 * KS_LOAD_LIMITS_MAX keys, the busiest first ("limits_omitted" counts
 * the rest); left out when no key is limited, so a document without
 * limits reads as before.
 */
#define KS_LOAD_LIMITS_MAX 16
struct ks_load_limit {
	__u64 hash;                   /* ks_key_hash of the key */
	char key[4 * KS_KEY_BUF + 8]; /* ks_key_text; "" with
				       * --etcd-hash-only */
	__u32 rate;                   /* the limit it enforces, per second */
	double allowed_ps, refused_ps, tcp_ps;
	__u8 automatic; /* "auto": true, the automatic cap's (absent: a
			 * rule's, and from agents before it) */
};

/*
 * The load document's counters ("shard": {"totals": {...}}): what the
 * shard counted since the agent's count began (its ring push), with how
 * long it has counted. A reader takes a shard's exact mean over the span
 * between two documents of one base, whenever the agent wrote them: the
 * rates beside them are the last interval's, rewritten only when they
 * move by more than KS_HOT_DOC_MOVE (docs/placement.md). The counters
 * alone never make a document new. Optional, schema 2 unchanged: readers
 * before them ignore the object; documents without it (agents before
 * them) read with base_ms 0.
 */
struct ks_load_totals {
	__u64 base_ms; /* CLOCK_REALTIME ms the count began: one value per
			* agent and ring push; 0: no counters */
	__u64 ms;      /* ms counted from the base to these counts */
	__u64 reads, served, writes, misdirected;
	/* the agent's own reads of its memcached (copies filled from the
	 * owner): memcached answered them, the datapath never saw them */
	__u64 fills;
};

struct ks_host_doc_top {
	__u64 hash;
	char key[4 * KS_KEY_BUF + 8]; /* "" unless keys are exported */
	double reads_ps, writes_ps;
};

struct ks_host_doc {
	char self[160];
	char agent_version[32];
	__s64 pid;
	char ifname[32];
	__s64 ring_revision;
	__u32 interval_ms, sample_n;
	double class_ps[3]; /* read, write, other */
	int has_shard;
	char shard[160];
	double shard_reads_ps, shard_writes_ps, shard_misdirected_ps;
	/* the reads its memcached answered: the shard's reads less the lone
	 * UDP gets steered to copies (what --balance compares) */
	double shard_served_ps;
	/* the load document only: the shard's counters (base_ms 0: none) */
	struct ks_load_totals totals;
	unsigned ntop;
	struct ks_host_doc_top top[KS_HOST_DOC_TOP];
	/* every L1 replica this agent may fill ("host:port", --replicas):
	 * a writer invalidates them all (docs/client.md) */
	unsigned nreplicas;
	char replicas[KS_MAX_REPLICAS][48];
	/* the ownership-loss purge's state ("idle", "purging", "grace",
	 * "sweeping"; core/purge.h), "" when this agent does not purge */
	char purge[12];
	/* the load document only: each hot key it owns (its hot/ entries),
	 * with the live figures the hot/ entries no longer follow */
	unsigned nhot;
	struct ks_load_hot hot[KS_LOAD_HOT_MAX];
	/* the load document only: its limited keys, and how many more it
	 * limits than the list holds */
	unsigned nlimits, limits_omitted;
	struct ks_load_limit limits[KS_LOAD_LIMITS_MAX];
};

/* The document as compact JSON (malloc'd), with "updated_at" when at is
 * not NULL; NULL without memory. Rates with three significant digits. */
char *ks_host_doc_encode(const struct ks_host_doc *d, const char *at);
/* The document of kind k (ks_host_doc_encode is KS_HDK_HOSTS); "at" goes
 * into every kind but the member document, which says nothing of time. */
char *ks_host_doc_encode_kind(const struct ks_host_doc *d,
			      enum ks_host_doc_kind k, const char *at);

/* Whether a and b have the same member document. */
int ks_host_doc_same_member(const struct ks_host_doc *a,
			    const struct ks_host_doc *b);
/* ... and the same ring revision and purge state: all of hosts/ but the
 * rates. */
int ks_host_doc_same_status(const struct ks_host_doc *a,
			    const struct ks_host_doc *b);
/* The same for a reader before schema 2 (what --fleet-compat members
 * rewrites hosts/ for): a slow sweep starting or ending (every minute) is
 * no change, since those readers mark only a purge for a ring change. */
int ks_host_doc_same_compat(const struct ks_host_doc *a,
			    const struct ks_host_doc *b);

/* Whether b says nothing a reader needs that a (the last one written)
 * does not (see above); the hot list is not compared (hosts/ has none). */
int ks_host_doc_same(const struct ks_host_doc *a, const struct ks_host_doc *b);
/* Whether a and b list the same hot keys with no figure moved
 * (ks_rate_moved): the load document's rule for its "hot" list. */
int ks_host_doc_same_hot(const struct ks_host_doc *a,
			 const struct ks_host_doc *b);

/* l into d's "limits", kept busiest (allowed + refused + tcp) first: when
 * the list is full, the least busy of the list and l is left out and
 * counted in limits_omitted. */
void ks_load_limits_add(struct ks_host_doc *d, const struct ks_load_limit *l);

/* Whether a and b list the same limited keys with no figure moved
 * (ks_rate_moved) and the same rates and count left out. */
int ks_host_doc_same_limits(const struct ks_host_doc *a,
			    const struct ks_host_doc *b);

struct json_t;
/* A load document's "limits" list (json: a jansson array; NULL: none, an
 * agent before it or nothing limited) into out (at most max): the count,
 * or -1 with why (not an array, longer than max, an entry that is not an
 * object, a hash that is not 16 lowercase hex digits, a key that is not a
 * string, a rate that is not an integer >= 0, a figure that is not a
 * number >= 0; a figure absent reads as 0). */
int ks_load_limits_decode(struct json_t *json, struct ks_load_limit *out,
			  unsigned max, char *why, size_t whylen);

/* A load document's "totals" (json: a jansson object of the shard;
 * NULL: an agent before them, read as base_ms 0) into out: 0, or -1 with
 * why (not an object, a field missing or not an integer >= 0, a base of
 * 0). */
int ks_load_totals_decode(struct json_t *json, struct ks_load_totals *out,
			  char *why, size_t whylen);

/* A load document's "hot" list (json: a jansson array) into out (at most
 * max entries): the count, or -1 with why (not an array, longer than max,
 * an entry that is not an object, a hash that is not 16 lowercase hex
 * digits, a figure that is not a number >= 0). */
int ks_load_hot_decode(struct json_t *json, struct ks_load_hot *out,
		       unsigned max, char *why, size_t whylen);

#endif
