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
 *    top keys, ring revision and purge state, outside every client's
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
	unsigned ntop;
	struct ks_host_doc_top top[KS_HOST_DOC_TOP];
	/* every L1 replica this agent may fill ("host:port", --replicas):
	 * a writer invalidates them all (docs/client.md) */
	unsigned nreplicas;
	char replicas[KS_MAX_REPLICAS][48];
	/* the ownership-loss purge's state ("idle", "purging", "grace",
	 * "sweeping"; core/purge.h), "" when this agent does not purge */
	char purge[12];
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
 * does not (see above). */
int ks_host_doc_same(const struct ks_host_doc *a, const struct ks_host_doc *b);

#endif
