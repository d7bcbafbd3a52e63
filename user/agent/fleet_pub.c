// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* fleet_pub.c - an agent's documents and hot/<hash> in etcd (see
 * fleet_pub.h). */
#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "agent/fleet_pub.h"
#include "agent/run_ring.h"
#include "agent/run_steer.h"
#include "core/host_doc.h"
#include "core/hotkeys.h"
#include "core/limits.h"
#include "core/purge.h"
#include "net/etcd.h"
#include "net/etcd_pub.h"
#include "render/text.h"
#include "util/log.h"

_Static_assert(KS_HOT_CAP <= KS_LOAD_HOT_MAX,
	       "the load document lists every key of the hot-key table");

int64_t ks_fleet_lease_ttl_s(__u32 interval_ms, int call_timeout_ms)
{
	int64_t ttl = ((int64_t)interval_ms * KS_HOSTS_LEASE_INTERVALS + 999) /
		      1000;
	int64_t floor_ms = (int64_t)(call_timeout_ms > 0 ? call_timeout_ms
							 : 0) *
				   KS_HOSTS_LEASE_MIN_TIMEOUTS +
			   KS_HOSTS_LEASE_SLACK_MS;
	int64_t floor = (floor_ms + 999) / 1000;

	return ttl > floor ? ttl : floor;
}

void ks_fleet_pub_start(struct ks_fleet_pub *f, const struct ks_etcd *c,
			const char *cluster, const char *self,
			const char *ifname, __u32 interval_ms, int export_keys,
			int hash_only)
{
	char host[64] = "localhost", err[256];
	int64_t ttl;

	memset(f, 0, sizeof(*f));
	if (!c)
		return;
	if (self && self[0]) {
		snprintf(f->self, sizeof(f->self), "%s", self);
	} else {
		gethostname(host, sizeof(host) - 1);
		host[sizeof(host) - 1] = '\0';
		snprintf(f->self, sizeof(f->self), "%s:%s", host, ifname);
	}
	snprintf(f->cluster, sizeof(f->cluster), "%s", cluster);
	snprintf(f->host_key, sizeof(f->host_key), KS_ETCD_ROOT "%s/hosts/%s",
		 cluster, f->self);
	snprintf(f->member_key, sizeof(f->member_key),
		 KS_ETCD_ROOT "%s/members/%s", cluster, f->self);
	snprintf(f->load_key, sizeof(f->load_key), KS_LOAD_ROOT "%s/%s",
		 cluster, f->self);
	f->export_keys = export_keys;
	f->hash_only = hash_only;
	f->hot = calloc(KS_HOT_CAP, sizeof(*f->hot));
	ttl = ks_fleet_lease_ttl_s(interval_ms, ks_etcd_call_timeout_ms(c));
	if (!f->hot || ks_etcd_pub_start(&f->pub, c, ttl, interval_ms,
					 f->member_key, err, sizeof(err))) {
		ks_warn("etcd: cannot publish %s (%s); running without it",
			f->member_key, f->hot ? err : "out of memory");
		free(f->hot);
		f->hot = NULL;
		return;
	}
	ks_info("etcd: publishing %s, %s and the hot keys it owns under a lease of %" PRId64
		" s, kept alive every %u ms",
		f->member_key, f->load_key, ttl,
		interval_ms < ttl * 1000 / 3 ? interval_ms
					     : (unsigned)(ttl * 1000 / 3));
}

int ks_fleet_compat_parse(const char *s, enum ks_fleet_compat *m)
{
	if (!strcmp(s, "members"))
		*m = KS_FLEET_COMPAT_MEMBERS;
	else if (!strcmp(s, "full"))
		*m = KS_FLEET_COMPAT_FULL;
	else if (!strcmp(s, "off"))
		*m = KS_FLEET_COMPAT_OFF;
	else
		return -1;
	return 0;
}

double ks_fleet_pub_served_ps(const struct ks_report *rep,
			      const struct ks_run_ring *ring,
			      const struct ks_run_steer *steer)
{
	const struct ks_shard_report *g = ring ? ring->rep : NULL;
	double reads = rep->class_req_mps[KS_CLASS_READ] / 1000.0, served;

	if (g && g->nshards && g->self < g->nshards)
		reads = g->shards[g->self].reads_mps / 1000.0;
	served = reads - ks_run_steer_steered_ps(steer);
	return served > 0 ? served : 0;
}

/* Whether this host owns the key: what the ring its clients use says, or
 * every key when there is no ring (or no --self in it) to say. */
static int owns_key(const struct ks_run_ring *ring, const __u8 *key, size_t len)
{
	__u32 self = ring && ring->rep ? ring->rep->self : KS_NO_SHARD;
	__u32 owner;

	if (self == KS_NO_SHARD)
		return 1;
	owner = ks_run_ring_owner(ring, key, len);
	return owner == KS_NO_SHARD || owner == self;
}

static int owns(const struct ks_run_ring *ring, const struct ks_hot_entry *e)
{
	return owns_key(ring, e->key, e->len);
}

/* The automatic cap on the key, requests/s (0: none): what its hot/ entry
 * tells libkeysteer (docs/limits.md, "The automatic cap"). A rule's limit
 * is not said here: clients read the rules from the pins document. */
static __u32 auto_cap_of(const struct ks_fleet_pub *f, const __u8 *key,
			 size_t len)
{
	const struct ks_limit_entry *l;
	size_t pos = 0;

	while (f->limits && f->limits->nauto &&
	       (l = ks_limits_next(f->limits, &pos)))
		if (l->automatic && l->len == len && !memcmp(l->key, key, len))
			return l->rate;
	return 0;
}

static struct ks_hot_doc *find_hot(struct ks_fleet_pub *f, __u64 hash);
static int in_hot(const struct ks_fleet_pub *f, const struct ks_hot_doc *d);

/* The load document's "hot" list: each key of the table this host owns,
 * as publish_hot took them, with its rates now, and the entry of each
 * one only counted (no hot/ entry: publish_hot ran first, so f->hot is
 * this interval's). */
static void load_hot_of(struct ks_fleet_pub *f, const struct ks_run_ring *ring,
			const struct ks_hot_table *t,
			const struct ks_run_steer *steer, struct ks_host_doc *d)
{
	const struct ks_hot_doc *pub;
	const struct ks_hot_entry *e;
	size_t pos = 0;

	while (t && d->nhot < KS_LOAD_HOT_MAX && (e = ks_hot_next(t, &pos))) {
		struct ks_load_hot *h = &d->hot[d->nhot];

		if (!owns(ring, e))
			continue;
		h->hash = e->hash;
		pub = find_hot(f, e->hash);
		h->entry = pub && !in_hot(f, pub) ? pub : NULL;
		h->v[KS_LHF_READS] = e->reads_ps;
		h->v[KS_LHF_WRITES] = e->writes_ps;
		/* unknown where the owner does not count its replies */
		if (!steer || ks_run_steer_owner_rates(
				      steer, e->hash, &h->v[KS_LHF_OWNER_HITS],
				      &h->v[KS_LHF_OWNER_MISSES]))
			h->v[KS_LHF_OWNER_HITS] = h->v[KS_LHF_OWNER_MISSES] =
				NAN;
		d->nhot++;
	}
}

/* The load document's "limits": the busiest KS_LOAD_LIMITS_MAX limited
 * keys, the rest counted as left out (ks_load_limits_add). */
static void load_limits_of(const struct ks_fleet_pub *f, struct ks_host_doc *d)
{
	const struct ks_limit_entry *e;
	struct ks_load_limit l;
	size_t pos = 0;

	while (f->limits && (e = ks_limits_next(f->limits, &pos))) {
		memset(&l, 0, sizeof(l));
		l.hash = e->hash;
		if (!f->hash_only)
			ks_key_text(e->key, e->len, l.key, sizeof(l.key));
		l.rate = e->rate;
		l.automatic = e->automatic;
		l.allowed_ps = e->allowed_ps;
		l.refused_ps = e->refused_ps;
		l.tcp_ps = e->tcp_ps;
		ks_load_limits_add(d, &l);
	}
}

/* The shard's counters since the ring's push (the datapath's counts of
 * every row), the served reads being the shard's less the gets steered
 * to copies, summed here interval by interval. */
static void load_totals_of(struct ks_fleet_pub *f,
			   const struct ks_run_ring *ring,
			   const struct ks_run_steer *steer,
			   struct ks_host_doc *d)
{
	const struct ks_shard_report *g = ring->rep;
	const struct ks_shard_rate *s = &g->shards[g->self];
	struct ks_load_totals *t = &d->totals;
	__u64 base = g->pushed_real_ns / 1000000;
	__u32 j;

	if (!base || !g->elapsed_ns || ring->prev_ns < ring->base_ns)
		return; /* no interval counted on this ring yet */
	if (base != f->totals_base_ms) {
		f->totals_base_ms = base;
		f->steered_total = 0;
		f->fills_at_base = ks_run_steer_owner_reads(steer);
	}
	f->steered_total += ks_run_steer_steered_ps(steer) *
			    ((double)g->elapsed_ns / 1e9);
	t->base_ms = base;
	t->ms = (ring->prev_ns - ring->base_ns) / 1000000;
	t->reads = s->reads;
	t->writes = s->writes;
	t->served = s->reads > f->steered_total
			    ? s->reads - (__u64)llround(f->steered_total)
			    : 0;
	for (j = 0; j < g->nshards; j++)
		t->misdirected += g->shards[j].misdirected;
	t->fills = ks_run_steer_owner_reads(steer) - f->fills_at_base;
}

/* hosts/<self> as it stands. */
static void host_doc_of(struct ks_fleet_pub *f, const struct ks_report *rep,
			const struct ks_run_ring *ring,
			const struct ks_hot_table *t,
			const struct ks_run_steer *steer, int64_t ring_rev,
			struct ks_host_doc *d)
{
	const struct ks_shard_report *g = ring ? ring->rep : NULL;
	__u32 i, j;

	memset(d, 0, sizeof(*d));
	snprintf(d->self, sizeof(d->self), "%s", f->self);
	snprintf(d->agent_version, sizeof(d->agent_version), "%s",
		 KS_VERSION_STR);
	d->pid = rep->agent_pid;
	snprintf(d->ifname, sizeof(d->ifname), "%s", rep->ifname);
	d->ring_revision = ring_rev;
	d->interval_ms = rep->interval_ms;
	d->sample_n = rep->sample_n;
	d->class_ps[0] = rep->class_req_mps[KS_CLASS_READ] / 1000.0;
	d->class_ps[1] = rep->class_req_mps[KS_CLASS_WRITE] / 1000.0;
	d->class_ps[2] = rep->class_req_mps[KS_CLASS_OTHER] / 1000.0;
	if (g && g->nshards && g->self < g->nshards) {
		const struct ks_shard_rate *s = &g->shards[g->self];

		d->has_shard = 1;
		snprintf(d->shard, sizeof(d->shard), "%s", s->name);
		d->shard_reads_ps = s->reads_mps / 1000.0;
		d->shard_writes_ps = s->writes_mps / 1000.0;
		/* a shard's row counts what this host got that the ring
		 * gives to that shard: this host's misdirected requests are
		 * every row's */
		for (j = 0; j < g->nshards; j++)
			d->shard_misdirected_ps +=
				g->shards[j].misdirected_mps / 1000.0;
		d->shard_served_ps = ks_fleet_pub_served_ps(rep, ring, steer);
		load_totals_of(f, ring, steer, d);
	}
	if (g && g->purge.state != KS_PURGE_OFF)
		snprintf(d->purge, sizeof(d->purge), "%s",
			 ks_purge_state_name(g->purge.state));
	for (i = 0; i < rep->n_top && i < KS_HOSTS_TOP; i++) {
		const struct ks_top_entry *t = &rep->top[i];
		struct ks_host_doc_top *o = &d->top[d->ntop++];

		o->hash = t->hash;
		if (f->export_keys)
			ks_key_text(t->key, t->len, o->key, sizeof(o->key));
		o->reads_ps = t->reads_mps / 1000.0;
		o->writes_ps = t->writes_mps / 1000.0;
	}
	for (i = 0; steer && i < steer->rs.n && i < KS_MAX_REPLICAS; i++)
		snprintf(d->replicas[d->nreplicas++], sizeof(d->replicas[0]),
			 "%s", steer->rs.r[i].text);
	load_hot_of(f, ring, t, steer, d);
	load_limits_of(f, d);
}

/* d as a document of kind k at key, remembered in *last once handed
 * over; 1 when it was. */
static int put_doc(struct ks_fleet_pub *f, const char *key,
		   const struct ks_host_doc *d, enum ks_host_doc_kind k,
		   const char *at, struct ks_host_doc **last)
{
	char *doc = ks_host_doc_encode_kind(d, k, at);
	int ok = doc && ks_etcd_pub_set(f->pub, key, doc, strlen(doc)) >= 0;

	free(doc);
	if (!ok)
		return 0;
	if (!*last)
		*last = malloc(sizeof(**last));
	if (*last)
		**last = *d;
	return 1;
}

/*
 * The member document only when a member field changed: it is under the
 * prefix every client watches, so a rate must never rewrite it. The load
 * document, outside it, as hosts/ was before: on a real change, at most
 * every load_every intervals (a change of status, such as a new ring
 * revision or purge state, at once), and as a heartbeat.
 */
static void publish_host(struct ks_fleet_pub *f, const struct ks_report *rep,
			 const struct ks_run_ring *ring,
			 const struct ks_hot_table *t,
			 const struct ks_run_steer *steer, int64_t ring_rev)
{
	struct ks_host_doc d;
	char at[40];
	struct tm tm;
	time_t now;
	int load;

	f->since_host++;
	f->since_load++;
	host_doc_of(f, rep, ring, t, steer, ring_rev, &d);
	now = time(NULL);
	gmtime_r(&now, &tm);
	strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (f->schema1) {
		if ((!f->last_host || !ks_host_doc_same(f->last_host, &d) ||
		     f->since_host >= KS_HOSTS_HEARTBEAT) &&
		    put_doc(f, f->host_key, &d, KS_HDK_HOSTS, at,
			    &f->last_host))
			f->since_host = 0;
		return;
	}
	if (!f->last_member || !ks_host_doc_same_member(f->last_member, &d))
		put_doc(f, f->member_key, &d, KS_HDK_MEMBER, NULL,
			&f->last_member);
	load = !f->last_load || !ks_host_doc_same_status(f->last_load, &d) ||
	       f->since_load >= KS_HOSTS_HEARTBEAT ||
	       (f->since_load >= f->load_every &&
		(!ks_host_doc_same(f->last_load, &d) ||
		 !ks_host_doc_same_hot(f->last_load, &d) ||
		 !ks_host_doc_same_limits(f->last_load, &d) ||
		 f->entries_news));
	if (load &&
	    put_doc(f, f->load_key, &d, KS_HDK_LOAD, at, &f->last_load)) {
		f->since_load = 0;
		f->entries_news = 0;
	}
	switch (f->compat) {
	case KS_FLEET_COMPAT_OFF:
		return;
	case KS_FLEET_COMPAT_MEMBERS:
		if (f->last_host && ks_host_doc_same_compat(f->last_host, &d))
			return;
		break;
	case KS_FLEET_COMPAT_FULL:
		if (f->last_host && ks_host_doc_same(f->last_host, &d) &&
		    f->since_host < KS_HOSTS_HEARTBEAT)
			return;
		break;
	}
	if (put_doc(f, f->host_key, &d, KS_HDK_COMPAT, at, &f->last_host))
		f->since_host = 0;
}

/*
 * Whether d's place is hot/<hash>: a client acts on it, or this agent
 * writes hot/ as agents before did (every entry, counted keys too: the
 * test-only schema-1 agent, --fleet-compat full for old `agent fleet`s,
 * the bench's --counting-in-hot). Else it is listed, entry and all, in
 * the load document only, outside every client's range.
 */
static int in_hot(const struct ks_fleet_pub *f, const struct ks_hot_doc *d)
{
	return f->schema1 || f->compat == KS_FLEET_COMPAT_FULL ||
	       f->counting_in_hot || ks_hot_doc_for_clients(d);
}

static struct ks_hot_doc *find_hot(struct ks_fleet_pub *f, __u64 hash)
{
	size_t i;

	for (i = 0; i < f->nhot; i++)
		if (f->hot[i].hash == hash)
			return &f->hot[i];
	return NULL;
}

/* Hands d over as hot/<hash>; 0, or -ENOMEM. A dirty entry is written
 * before whatever follows it (the re-armed entry a few ms later): readers
 * that keep a copy (the library's L1) drop it on the dirty state, so it
 * must reach etcd even when the publisher was busy meanwhile. */
static int put_hot(struct ks_fleet_pub *f, const struct ks_hot_doc *d)
{
	char key[sizeof(f->host_key)], *doc = ks_hot_doc_encode(d);
	int rc;

	if (!doc)
		return -ENOMEM;
	ks_hot_doc_key(f->cluster, d->hash, key, sizeof(key));
	rc = d->state == KS_HDS_DIRTY
		     ? ks_etcd_pub_set_ordered(f->pub, key, doc, strlen(doc))
		     : ks_etcd_pub_set(f->pub, key, doc, strlen(doc));
	free(doc);
	return rc < 0 ? rc : 0;
}

/* hot/<hash> of an entry that was there (old: as handed over) goes,
 * or the load document's list of counted keys changes. */
static void unplace_hot(struct ks_fleet_pub *f, const struct ks_hot_doc *old)
{
	char key[sizeof(f->host_key)];

	if (!in_hot(f, old)) {
		f->entries_news = 1;
		return;
	}
	ks_hot_doc_key(f->cluster, old->hash, key, sizeof(key));
	ks_etcd_pub_delete(f->pub, key);
}

/* d, new or changed (old: its last, or NULL), where it belongs: hot/ or
 * the load document's list, leaving the other. 0, or -ENOMEM. */
static int place_hot(struct ks_fleet_pub *f, const struct ks_hot_doc *old,
		     const struct ks_hot_doc *d)
{
	if (!in_hot(f, d)) {
		if (old)
			unplace_hot(f, old); /* a no-op when it was listed */
		f->entries_news = 1;
		return 0;
	}
	if (put_hot(f, d))
		return -ENOMEM;
	if (old && !in_hot(f, old))
		f->entries_news = 1; /* out of the list: hot/ has it now */
	return 0;
}

static void delete_hot(struct ks_fleet_pub *f, size_t i)
{
	unplace_hot(f, &f->hot[i]);
	f->hot[i] = f->hot[--f->nhot];
}

/* This host's entry for table entry e now. */
static void hot_doc_of(const struct ks_fleet_pub *f,
		       const struct ks_hot_entry *e,
		       const struct ks_run_steer *steer, struct ks_hot_doc *d)
{
	const char *reps[KS_MAX_COPIES - 1];
	unsigned i, n = 0;

	memset(d, 0, sizeof(*d));
	d->hash = e->hash;
	if (!f->hash_only) {
		memcpy(d->key, e->key, e->len);
		d->len = e->len;
		d->has_key = 1;
	}
	snprintf(d->owner, sizeof(d->owner), "%s", f->self);
	d->read_hot = e->read_hot;
	d->write_hot = e->write_hot;
	d->pinned = e->state == KS_HOT_PINNED;
	d->copies = e->copies ? e->copies : 1;
	d->subkeys = e->subkeys ? e->subkeys : 1;
	d->reads_ps = e->reads_ps;
	d->writes_ps = e->writes_ps;
	d->state = KS_HDS_COUNTING;
	d->limit_rate = auto_cap_of(f, e->key, e->len);
	d->owner_turns = steer ? steer->fsm.owner_turns : 0;
	if (steer)
		ks_run_steer_view(steer, e->hash, &d->state, &d->write_seq,
				  reps, &n);
	for (i = 0; i < n; i++)
		snprintf(d->replica[i], KS_HOT_DOC_OWNER, "%s", reps[i]);
	d->nreplicas = n;
}

/* The entry of a key capped automatically that the hot-key table does
 * not hold: counted, one copy, and its cap. */
static void cap_doc_of(const struct ks_fleet_pub *f,
		       const struct ks_limit_entry *l,
		       const struct ks_run_steer *steer, struct ks_hot_doc *d)
{
	memset(d, 0, sizeof(*d));
	d->hash = l->hash;
	if (!f->hash_only) {
		memcpy(d->key, l->key, l->len);
		d->len = l->len;
		d->has_key = 1;
	}
	snprintf(d->owner, sizeof(d->owner), "%s", f->self);
	d->copies = 1;
	d->subkeys = 1;
	d->state = KS_HDS_COUNTING;
	d->limit_rate = l->rate;
	d->owner_turns = steer ? steer->fsm.owner_turns : 0;
}

/* d, this interval's entry of a key, where it belongs (publish_hot);
 * keep marks what stays. */
static void publish_one(struct ks_fleet_pub *f, struct ks_hot_doc *d,
			__u8 *keep)
{
	struct ks_hot_doc *old = find_hot(f, d->hash);

	/* a key still dirty keeps the write that made it so */
	if (old && old->state == KS_HDS_DIRTY && d->state == KS_HDS_DIRTY)
		d->write_seq = old->write_seq;
	/* a rate alone is the load document's news, not a client's; the
	 * test-only schema-1 agent writes it here as agents before the
	 * load document did */
	if (old && ks_hot_doc_same(old, d) &&
	    !(f->schema1 && ks_hot_doc_rates_moved(old, d))) {
		keep[old - f->hot] = 1;
		return;
	}
	if (!old && f->nhot == KS_HOT_CAP)
		return;
	if (place_hot(f, old, d))
		return;
	if (!old)
		old = &f->hot[f->nhot++];
	*old = *d;
	keep[old - f->hot] = 1;
}

static void publish_hot(struct ks_fleet_pub *f, const struct ks_run_ring *ring,
			const struct ks_hot_table *t,
			const struct ks_run_steer *steer)
{
	const struct ks_limit_entry *l;
	const struct ks_hot_entry *e;
	struct ks_hot_doc d;
	__u8 keep[KS_HOT_CAP] = { 0 };
	size_t pos = 0, i;

	while (t && (e = ks_hot_next(t, &pos))) {
		if (!owns(ring, e))
			continue;
		hot_doc_of(f, e, steer, &d);
		publish_one(f, &d, keep);
	}
	/* the automatic caps of keys the table does not hold: an entry
	 * that says the cap only */
	pos = 0;
	while (f->limits && f->limits->nauto &&
	       (l = ks_limits_next(f->limits, &pos))) {
		if (!l->automatic || (t && ks_hot_find(t, l->key, l->len)) ||
		    !owns_key(ring, l->key, l->len))
			continue;
		cap_doc_of(f, l, steer, &d);
		publish_one(f, &d, keep);
	}
	for (i = f->nhot; i-- > 0;)
		if (!keep[i])
			delete_hot(f, i);
}

void ks_fleet_pub_interval(struct ks_fleet_pub *f, const struct ks_report *rep,
			   const struct ks_run_ring *ring,
			   const struct ks_hot_table *t,
			   const struct ks_run_steer *steer, int64_t ring_rev)
{
	if (!f || !f->pub)
		return;
	ks_etcd_pub_hold(f->pub); /* one transaction for the interval */
	/* hot/ first: the load document lists what it left out */
	publish_hot(f, ring, t, steer);
	publish_host(f, rep, ring, t, steer, ring_rev);
	ks_etcd_pub_release(f->pub);
}

void ks_fleet_pub_steered(void *ud, const struct ks_run_steer *s, __u64 hash)
{
	struct ks_fleet_pub *f = ud;
	struct ks_hot_doc *old = f && f->pub ? find_hot(f, hash) : NULL;
	const char *reps[KS_MAX_COPIES - 1];
	struct ks_hot_doc d;
	unsigned i, n = 0;

	if (!old)
		return; /* not published yet: the interval will */
	d = *old;
	if (ks_run_steer_view(s, hash, &d.state, &d.write_seq, reps, &n))
		return;
	for (i = 0; i < n; i++)
		snprintf(d.replica[i], KS_HOT_DOC_OWNER, "%s", reps[i]);
	d.nreplicas = n;
	if (old->state == KS_HDS_DIRTY && d.state == KS_HDS_DIRTY)
		return; /* already said, with the write that made it so */
	if (ks_hot_doc_same(old, &d) || place_hot(f, old, &d))
		return;
	if (d.state == KS_HDS_DIRTY)
		f->dirty_puts++;
	else if (d.state == KS_HDS_ARMED)
		f->rearm_puts++;
	*old = d;
}

void ks_fleet_pub_status(const struct ks_fleet_pub *f, FILE *out)
{
	struct ks_etcd_pub_stats st;

	if (!f || !f->pub) {
		fprintf(out, "not publishing");
		return;
	}
	ks_etcd_pub_stats(f->pub, &st);
	fprintf(out,
		"lease %s, %zu keys (%zu hot, %zu pending), %llu txns, %llu puts, %llu deletes, %llu keepalives, %llu leases, %llu errors, %llu dirty and %llu re-armed at once, longest wait %.1f ms, longest between renewals %.0f ms of %lld s",
		st.lease ? (st.up ? "up" : "held, etcd away") : "none", st.keys,
		f->nhot, st.pending, (unsigned long long)st.txns,
		(unsigned long long)st.puts, (unsigned long long)st.deletes,
		(unsigned long long)st.keepalives,
		(unsigned long long)st.grants, (unsigned long long)st.errors,
		(unsigned long long)f->dirty_puts,
		(unsigned long long)f->rearm_puts, st.max_wait_ns / 1e6,
		st.max_renew_gap_ns / 1e6, (long long)st.lease_ttl);
}

void ks_fleet_pub_stop(struct ks_fleet_pub *f)
{
	if (!f)
		return;
	ks_etcd_pub_stop(f->pub, 1);
	f->pub = NULL;
	free(f->last_host);
	free(f->last_member);
	free(f->last_load);
	f->last_host = f->last_member = f->last_load = NULL;
	free(f->hot);
	f->hot = NULL;
	f->nhot = 0;
}
