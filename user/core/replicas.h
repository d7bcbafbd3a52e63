/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replicas.h - the L1 replicas named by --replicas, and which of them hold
 * the copies of a hot key. Pure logic: no I/O, no DNS.
 *
 * A key's replicas are chosen by rendezvous (highest-random-weight)
 * hashing: every (key, replica) pair gets a score and the key takes the
 * replicas with the highest scores. Adding a replica moves only the keys
 * whose new top choice is the newcomer, removing one moves only the keys
 * it held, and the list's order does not matter, because a replica's score
 * depends on its address and port, never on its position.
 */
#ifndef KS_REPLICAS_H
#define KS_REPLICAS_H

#include <stddef.h>
#include <linux/types.h>
#include "keysteer.h"

/* "[" + the longest IPv6 text + "]:65535" and a NUL. */
#define KS_REPLICA_TEXT 48

struct ks_replica_addr {
	__u8 family;                /* KS_AF_INET or KS_AF_INET6 (keysteer.h) */
	union ks_inaddr addr;       /* network order */
	__u16 port;                 /* host order */
	char text[KS_REPLICA_TEXT]; /* "a.b.c.d:port" or "[v6]:port", for
				     * messages and reports */
};

struct ks_replica_set {
	unsigned n;
	struct ks_replica_addr r[KS_MAX_REPLICAS];
};

/*
 * "198.18.0.10:11211,198.18.0.11:11211" or "[2001:2::10]:11211,...":
 * 1..KS_MAX_REPLICAS distinct entries, each a dotted IPv4 or a bracketed
 * IPv6 unicast address and a port 1..65535, all of one family (a get is
 * steered only to a replica of its own family; docs/steering.md). Returns
 * 0, or -EINVAL with "<what is wrong, naming the entry>; <what to give>"
 * in err; rs is written only on success.
 */
int ks_replicas_parse(const char *list, struct ks_replica_set *rs, char *err,
		      size_t errlen);

/* "a.b.c.d:port" or "[v6]:port" of an address in network order and a
 * port in host order, into buf (KS_REPLICA_TEXT is enough). */
void ks_replica_format(__u8 family, const union ks_inaddr *addr, __u16 port,
		       char *buf, size_t len);

/* The datapath's entry for r (port in network order). */
void ks_replica_entry(const struct ks_replica_addr *r, struct ks_replica *out);

/* A replica's rendezvous score for a key (ks_key_hash of the key). */
__u64 ks_rendezvous_score(__u64 key_hash, const struct ks_replica_addr *r);

/*
 * The min(k, rs->n) replicas with the highest scores for the key, best
 * first, as indices into rs->r written to out[]; returns how many.
 * Deterministic across runs, machines and byte orders.
 */
unsigned ks_rendezvous_pick(__u64 key_hash, const struct ks_replica_set *rs,
			    unsigned k, __u8 *out);

#endif
