/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * run_etcd.h - the fleet in etcd for 'agent run --etcd' (issue 12,
 * docs/fleet.md): before anything is attached, etcd is asked for its
 * status (unreachable or refused credentials stop the agent, exit 2,
 * unless --etcd-optional) and two documents are read, then watched
 * (agent/key_watch.h) inside the interval loop's poll:
 *  - the ring, /keysteer/CLUSTER/ring: when valid, the ring the agent
 *    starts with; a new one goes into the datapath's idle half as a
 *    changed shard file does (agent/run_ring.c), its etcd revision as the
 *    ring's version;
 *  - the fleet's pins, /keysteer/CLUSTER/pins: while there, its rules
 *    replace the agent's --pins file (agent/run_hot.c); deleted, the
 *    file's rules are back.
 * A document that does not read (or builds no valid ring) is refused,
 * logged once, counted, and the old one stays; while etcd is away the
 * last ones stay. And it publishes hosts/<self> and the hot keys this
 * host owns (agent/fleet_pub.h). With --balance it also follows every
 * agent's load document (/keysteer-load/CLUSTER/) and the hosts/ entries
 * of agents before it, for the reads each shard served (core/balance.h).
 */
#ifndef KS_RUN_ETCD_H
#define KS_RUN_ETCD_H

#include <stdint.h>
#include <stdio.h>
#include "net/etcd_conf.h"
#include "agent/run_ring.h"
#include "agent/fleet_pub.h"
#include "agent/key_watch.h"
#include "agent/run_hot.h"
#include "core/balance.h"

struct ks_etcd;

struct ks_run_etcd {
	struct ks_etcd_conf conf; /* what the options say */
	struct ks_etcd *c;        /* NULL: no etcd (none given, or optional
				   * and not there at start) */
	/* the ring: conf.ring_key */
	struct ks_key_watch ring_w;
	int64_t rev;   /* etcd revision of the ring in use; 0 none */
	__u64 refused; /* ring documents refused since the start */
	/* the fleet's pins: /keysteer/CLUSTER/pins (core/pins_doc.h) */
	char pins_key[sizeof(KS_ETCD_ROOT) + KS_CLUSTER_MAX + 8];
	struct ks_key_watch pins_w;
	int64_t pins_rev;   /* etcd revision of the pins in use; 0 none */
	__u64 pins_refused; /* pins documents refused since the start */
	/* the fleet's loads (--balance): agents of schema 2 in their load
	 * documents, /keysteer-load/CLUSTER/, older ones in hosts/ */
	int want_loads; /* set before prepare */
	char hosts_prefix[sizeof(KS_ETCD_ROOT) + KS_CLUSTER_MAX + 8];
	struct ks_key_watch hosts_w;
	char load_prefix[sizeof(KS_LOAD_ROOT) + KS_CLUSTER_MAX + 2];
	struct ks_key_watch load_w;
	struct ks_fleet_loads *loads; /* NULL: not followed */
	__u64 hosts_refused;          /* entries that did not read */

	/* hosts/<self> and hot/<hash>, under one lease */
	struct ks_fleet_pub fleet;
	int hash_only; /* --etcd-hash-only: no key bytes in hot/ */
	enum ks_fleet_compat fleet_compat; /* --fleet-compat */
	__u32 load_every;                  /* --load-every; 0: the default */
	int fleet_schema1; /* --fleet-schema 1: hosts/ only (a test's old
			    * agent) */
	int no_hot_events; /* --etcd-hot-events off: hot/ at intervals only
			    * (a test control) */
	int ka_on_loop;    /* --etcd-keepalive loop: the lease renewed once
			    * per interval, behind its work (a test
			    * control) */
	int loop_call;     /* --etcd-loop-call on: the loop itself waits for
			    * one etcd call an interval (a test control) */
};

void ks_run_etcd_init(struct ks_run_etcd *e);
static inline int ks_run_etcd_enabled(const struct ks_run_etcd *e)
{
	return e->c != NULL;
}

/*
 * Before attaching, after ks_run_ring_prepare: checks the options,
 * connects, reads the ring into ring (replacing the list's or file's) and
 * starts the watch. Returns 0, or a negative errno with err (the agent
 * exits 2). With --etcd-optional, etcd absent or refusing the credentials
 * is a warning and 0 (no etcd for this run). Needs ring->etcd set before
 * ks_run_ring_prepare (ks_run_etcd_wants_ring).
 */
int ks_run_etcd_prepare(struct ks_run_etcd *e, struct ks_run_ring *ring,
			struct ks_run_hot *hot, char *err, size_t errlen);
static inline int ks_run_etcd_wants_ring(const struct ks_run_etcd *e)
{
	return e->conf.endpoints != NULL;
}

/* For the loop's poll: the watches' fds into fds (room for
 * KS_RUN_ETCD_FDS), how many, and how long the loop may sleep (-1: no
 * limit). */
#define KS_RUN_ETCD_FDS 4
int ks_run_etcd_fds(const struct ks_run_etcd *e, int *fds);
int ks_run_etcd_timeout_ms(const struct ks_run_etcd *e);

/* Runs the watch and applies what it brought. 0, or a negative errno when
 * the maps fail (the agent stops). */
int ks_run_etcd_poll(struct ks_run_etcd *e, struct ks_run_ring *ring,
		     struct ks_run_hot *hot, const struct ks_maps *m,
		     struct ks_collector *c);

struct ks_report;
struct ks_run_steer;
struct ks_hot_table;
/*
 * hosts/<self> and the hot keys this host owns (agent/fleet_pub.h):
 * names the keys (self: --self, else HOSTNAME:IFNAME) and starts the
 * publisher's thread; then once per interval, after the ring's and the
 * hot-key table's. Never fails the agent; no-op without etcd.
 */
void ks_run_etcd_publish_start(struct ks_run_etcd *e, const char *self,
			       const char *ifname, __u32 interval_ms,
			       int export_keys);
struct ks_limit_set;
void ks_run_etcd_publish_interval(struct ks_run_etcd *e,
				  const struct ks_report *rep,
				  const struct ks_run_ring *ring,
				  const struct ks_hot_table *t,
				  const struct ks_run_steer *steer,
				  const struct ks_limit_set *limits);

/* The mean reads a shard of the fleet served over *shards shards, each
 * as published (self: this host's hosts/ key's last part; own_ps for it
 * until it has an entry; ks_fleet_loads_mean); 0 and *shards 0 when the
 * loads are not followed. */
double ks_run_etcd_fleet_mean(const struct ks_run_etcd *e, const char *self,
			      double own_ps, size_t *shards);

/* The -v status line. */
void ks_run_etcd_status(const struct ks_run_etcd *e, FILE *f, __u32 seq);

/* Ends the lease (hosts/<self> and hot/ go at once), stops the watch and
 * closes the client. */
void ks_run_etcd_free(struct ks_run_etcd *e);

#endif
