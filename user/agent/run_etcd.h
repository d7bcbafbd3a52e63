/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * run_etcd.h - the fleet's ring in etcd for 'agent run --etcd' (issue 12,
 * docs/fleet.md): before anything is attached, etcd is asked for its
 * status (unreachable or refused credentials stop the agent, exit 2,
 * unless --etcd-optional) and the ring document /keysteer/CLUSTER/ring is
 * read; when present and valid it is the ring the agent starts with.
 * Then the key is watched from the revision after that read, inside the
 * interval loop's poll (one fd): a new document goes into the datapath's
 * idle half as a changed shard file does (agent/run_ring.c), its etcd
 * revision as the ring's version; a document that does not read or builds
 * no valid ring is refused, logged once, counted, and the old ring stays.
 * While etcd is away the last ring stays; the watch reconnects by itself
 * and delivers what changed meanwhile.
 */
#ifndef KS_RUN_ETCD_H
#define KS_RUN_ETCD_H

#include <stdint.h>
#include <stdio.h>
#include "net/etcd_conf.h"
#include "agent/run_ring.h"

struct ks_etcd;
struct ks_etcd_watch;

struct ks_run_etcd {
	struct ks_etcd_conf conf; /* what the options say */
	struct ks_etcd *c;        /* NULL: no etcd (none given, or optional
				   * and not there at start) */
	struct ks_etcd_watch *w;
	int64_t rev;        /* etcd revision of the ring in use; 0 none */
	int64_t seen;       /* the key's newest revision acted on */
	__u64 refused;      /* documents refused since the start */
	__u64 watch_errors; /* watch failures (each reconnects) */
	__u64 restart_ns;   /* an ended watch is started again then */
	int up;             /* the watch is established */
	int down;           /* a break was logged; quiet until up */

	/* hosts/<self> (ks_run_etcd_hosts_*): this agent's status under a
	 * lease of KS_HOSTS_LEASE_INTERVALS intervals */
	char host_key[sizeof(KS_ETCD_ROOT) + KS_CLUSTER_MAX + 200];
	char self[160];
	int64_t lease;     /* 0: none (not granted, or lost) */
	int64_t lease_ttl; /* seconds etcd granted */
	char *last;        /* the last document put, without updated_at */
	__u32 since_put;   /* intervals since the last put */
	__u64 host_puts;   /* puts of hosts/<self> since the start */
	__u64 host_errors; /* failed grants, keepalives and puts */
	int host_down;     /* a failure was logged; quiet until one works */
};

#define KS_HOSTS_LEASE_INTERVALS 3
#define KS_HOSTS_HEARTBEAT       30 /* intervals: a put even if unchanged */
#define KS_HOSTS_SCHEMA          1
#define KS_HOSTS_TOP             10 /* top keys in the document */

#define KS_ETCD_RESTART_NS 5000000000ULL /* after -EACCES/-EPERM/-ERANGE */

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
			char *err, size_t errlen);
static inline int ks_run_etcd_wants_ring(const struct ks_run_etcd *e)
{
	return e->conf.endpoints != NULL;
}

/* For the loop's poll: the fd (-1: none) and how long it may sleep (-1:
 * no limit). */
int ks_run_etcd_fd(const struct ks_run_etcd *e);
int ks_run_etcd_timeout_ms(const struct ks_run_etcd *e);

/* Runs the watch and applies what it brought. 0, or a negative errno when
 * the maps fail (the agent stops). */
int ks_run_etcd_poll(struct ks_run_etcd *e, struct ks_run_ring *ring,
		     const struct ks_maps *m, struct ks_collector *c);

/*
 * hosts/<self>: names the key (self: --self, else HOSTNAME:IFNAME) and
 * grants the lease (KS_HOSTS_LEASE_INTERVALS intervals). A failure is
 * logged and retried at the next interval. No-op without etcd.
 */
void ks_run_etcd_hosts_start(struct ks_run_etcd *e, const char *self,
			     const char *ifname, __u32 interval_ms);

struct ks_report;
/*
 * Once per interval, after the ring's: keeps the lease alive (a lost one
 * is granted again) and puts the document when it changed beyond the
 * rounding of its rates (3 significant digits), or every
 * KS_HOSTS_HEARTBEAT intervals, or after a new lease. Top keys as hashes
 * unless export_keys. Never fails the agent.
 */
void ks_run_etcd_hosts_interval(struct ks_run_etcd *e,
				const struct ks_report *rep,
				const struct ks_run_ring *ring,
				int export_keys);

/* The -v status line. */
void ks_run_etcd_status(const struct ks_run_etcd *e, FILE *f, __u32 seq);

/* Revokes the lease (hosts/<self> goes at once), stops the watch and
 * closes the client. */
void ks_run_etcd_free(struct ks_run_etcd *e);

#endif
