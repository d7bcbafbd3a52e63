/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fleet_pub.h - what one agent tells the fleet through etcd (issue 12,
 * docs/fleet.md): members/<self>, who it is and its replicas (what
 * clients read); its load document /keysteer-load/CLUSTER/<self>, its
 * status and its shard's load, outside the prefix clients watch (issue
 * 25); hosts/<self> for readers before those (--fleet-compat); and
 * hot/<hash>, each hot key this host owns (the one agent that sees all of
 * its traffic), all under one lease of KS_HOSTS_LEASE_INTERVALS intervals
 * so a dead agent's entries go by themselves.
 *
 * The documents are decided here, on the agent's thread, and handed to
 * the publisher (net/etcd_pub.h), whose thread writes them: nothing here
 * waits for etcd. Writes are proportional to change: members/<self> only
 * when a member field changes (never for a rate: the lease keeps it); the
 * load document when a field changes or a rate moves by more than a tenth
 * (core/host_doc.h), at most every load_every intervals, and every
 * KS_HOSTS_HEARTBEAT intervals (its "hot" list, each owned hot key's
 * rates, included); hosts/<self> as --fleet-compat says; hot/<hash> when
 * something a client reads changes (its decision or state, never a rate
 * alone: core/hot_doc.h), and at once when its steering changes between
 * intervals: a write the datapath reports made the armed key dirty, or
 * its copies were refreshed. hot/<hash> holds only what a client acts on
 * (filling, armed, dirty, split): a key only counted is listed in the
 * load document with its entry instead, so its birth and death reach no
 * client (issue 25).
 */
#ifndef KS_FLEET_PUB_H
#define KS_FLEET_PUB_H

#include <stdint.h>
#include <stdio.h>
#include <linux/types.h>
#include "core/host_doc.h"
#include "core/hot_doc.h"
#include "core/ring_doc.h"

#define KS_HOSTS_LEASE_INTERVALS 3
#define KS_HOSTS_HEARTBEAT       30 /* intervals: a put even if unchanged */
#define KS_HOSTS_TOP             KS_HOST_DOC_TOP
#define KS_LOAD_EVERY_DEFAULT    1 /* intervals between load documents */
#define KS_LOAD_EVERY_MAX        60

/* The lease's floor, in etcd call timeouts and a slack
 * (ks_fleet_lease_ttl_s) */
#define KS_HOSTS_LEASE_MIN_TIMEOUTS 2
#define KS_HOSTS_LEASE_SLACK_MS     1000

/* What an agent writes at hosts/<self> for readers before schema 2
 * (--fleet-compat, docs/fleet.md "Rolling upgrade to schema 2"). */
enum ks_fleet_compat {
	KS_FLEET_COMPAT_MEMBERS, /* default: rewritten when anything but a
				  * rate or a slow sweep changes (old
				  * clients' replica sets, old readers' ring
				  * revision and purge) */
	KS_FLEET_COMPAT_FULL,    /* as agents before schema 2 wrote it,
				  * rates too (old --balance agents) */
	KS_FLEET_COMPAT_OFF,     /* none: every reader knows schema 2 */
};

/* "members", "full" or "off" into *m: 0, or -1. */
int ks_fleet_compat_parse(const char *s, enum ks_fleet_compat *m);

struct ks_etcd;
struct ks_etcd_pub;
struct ks_report;
struct ks_run_ring;
struct ks_run_steer;
struct ks_hot_table;

struct ks_fleet_pub {
	struct ks_etcd_pub *pub; /* NULL: not publishing */
	char self[160];
	char host_key[sizeof(KS_ETCD_ROOT) + KS_CLUSTER_MAX + 200];
	char member_key[sizeof(KS_ETCD_ROOT) + KS_CLUSTER_MAX + 200];
	char load_key[sizeof(KS_LOAD_ROOT) + KS_CLUSTER_MAX + 200];
	enum ks_fleet_compat compat; /* set after ks_fleet_pub_start */
	__u32 load_every;            /* 0 or 1: every interval may write */
	int schema1; /* test-only: hosts/ alone, and hot/ rewritten when a
		      * rate moves, as before schema 2 */
	int counting_in_hot; /* the bench's: hot/ entries of keys only
			      * counted too, as before they went to the
			      * load document (also with schema1, compat
			      * full) */
	int entries_news;    /* a counted key's entry came, changed or went:
			   * the load document is news */
	char cluster[KS_CLUSTER_MAX + 1];
	int export_keys; /* key bytes in hosts/ top keys (--export-keys) */
	int hash_only;   /* no key bytes in hot/ (--etcd-hash-only) */
	/* the agent's rate limits (borrowed; NULL: none), for the load
	 * document's "limits" list */
	const struct ks_limit_set *limits;
	/* each document as last handed over (hosts/<self>: NULL when off) */
	struct ks_host_doc *last_host, *last_member, *last_load;
	__u32 since_host, since_load;
	/* the load document's counters (core/host_doc.h "totals"): the
	 * count's base, and the gets steered to copies since it (the
	 * datapath counts the shard's reads, not what its memcached
	 * answered) */
	__u64 totals_base_ms;
	double steered_total;
	__u64 fills_at_base; /* the fill worker's owner reads at the base */
	/* hot/<hash> as last handed over, one per key this host owns */
	struct ks_hot_doc *hot;
	size_t nhot;
	__u64 dirty_puts; /* entries turned dirty between intervals */
	__u64 rearm_puts; /* entries armed again between intervals */
};

/*
 * The lease's TTL in whole seconds (etcd's unit) for an agent of
 * interval_ms whose etcd calls may take call_timeout_ms: its
 * KS_HOSTS_LEASE_INTERVALS intervals, rounded up, but never under
 * KS_HOSTS_LEASE_MIN_TIMEOUTS call timeouts and KS_HOSTS_LEASE_SLACK_MS
 * (5 s with the default 2 s timeout). The keeper renews every interval
 * (a third of the TTL at most): a lease of 3 short intervals was lost
 * whenever one keepalive waited out the call timeout on a loaded etcd
 * (2 s of a 2 s lease at --interval 0.5), though the agent was alive.
 * With the floor a keepalive may time out, be retried 125 to 375 ms
 * later and still renew with a second to spare. The cost: a dead agent's
 * entries stay that long (docs/fleet.md, "What each agent publishes").
 */
int64_t ks_fleet_lease_ttl_s(__u32 interval_ms, int call_timeout_ms);

/*
 * Names the keys (self: --self, else HOSTNAME:IFNAME) and starts the
 * publisher on a clone of c; a failure is logged and the agent runs
 * without publishing. No-op when c is NULL.
 */
void ks_fleet_pub_start(struct ks_fleet_pub *f, const struct ks_etcd *c,
			const char *cluster, const char *self,
			const char *ifname, __u32 interval_ms, int export_keys,
			int hash_only);

/* Once per interval, after the ring's and the hot-key table's. ring and
 * steer may be NULL; ring_rev: the etcd revision of the ring in use. */
void ks_fleet_pub_interval(struct ks_fleet_pub *f, const struct ks_report *rep,
			   const struct ks_run_ring *ring,
			   const struct ks_hot_table *t,
			   const struct ks_run_steer *steer, int64_t ring_rev);

/* Between intervals, a hot key's steering changed (run_steer's on_state:
 * a write made it dirty, or it was armed again): its entry follows now. */
void ks_fleet_pub_steered(void *f, const struct ks_run_steer *s, __u64 hash);

/* "host puts N, hot puts M, ..." for the -v etcd line. */
/* The reads this host's memcached answered in the last interval: its
 * shard's reads (with a ring and --self in it; else the host's reads)
 * less the lone UDP gets steered to copies. */
double ks_fleet_pub_served_ps(const struct ks_report *rep,
			      const struct ks_run_ring *ring,
			      const struct ks_run_steer *steer);
void ks_fleet_pub_status(const struct ks_fleet_pub *f, FILE *out);

/* Stops the publisher and ends the lease: every entry goes at once. */
void ks_fleet_pub_stop(struct ks_fleet_pub *f);

#endif
