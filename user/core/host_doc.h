/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * host_doc.h - an agent's entry in the fleet, /keysteer/CLUSTER/hosts/SELF
 * (schema 1, docs/fleet.md): who it is, the ring revision it runs, its
 * class rates, its shard's reads, writes, misdirected requests and reads
 * served per second, and its top keys. Pure code: no I/O.
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

#define KS_HOST_DOC_SCHEMA 1
#define KS_HOST_DOC_TOP    10
#define KS_HOST_DOC_TAIL   0.10

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

/* Whether b says nothing a reader needs that a (the last one written)
 * does not (see above). */
int ks_host_doc_same(const struct ks_host_doc *a, const struct ks_host_doc *b);

#endif
