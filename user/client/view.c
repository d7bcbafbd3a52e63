// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* view.c - the fleet's documents into the client's view (see view.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "client/view.h"
#include "core/dedicated.h"
#include "core/fleet_doc.h"
#include "core/hot_doc.h"
#include "core/pins_doc.h"
#include "core/ring_doc.h"
#include "core/steer_sched.h"
#include "core/view_file.h"

static int why(struct ksc_view *v, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int why(struct ksc_view *v, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(v->why, sizeof(v->why), fmt, ap);
	va_end(ap);
	if (err == -EBADMSG)
		v->refused++;
	return err;
}

int ksc_view_init(struct ksc_view *v, const char *cluster)
{
	char err[KS_ERRLEN_DOC];
	int n;

	memset(v, 0, sizeof(*v));
	/* the range the host follower publishes too (core/view_file.h) */
	n = ks_view_range(cluster, v->prefix, sizeof(v->prefix), err,
			  sizeof(err));
	if (n < 0)
		return why(v, -EINVAL, "cluster=%s: %s", cluster, err);
	v->plen = (size_t)n;
	return 0;
}

void ksc_view_prev_drop(struct ksc_view *v)
{
	if (!v->have_prev)
		return;
	ks_ring_free(&v->prev_ring);
	ks_shards_free(&v->prev_shards);
	free(v->prev_srv);
	v->prev_srv = NULL;
	v->have_prev = 0;
}

/* The ring now becomes the previous one: a fleet ring replaced by a
 * fleet ring (not the first read, not a static ring) starts a change.
 * Only one previous ring is kept: a change inside another's grace
 * forgets the ring before (docs/client.md says what that costs). */
static void ring_retire(struct ksc_view *v, __s64 new_rev)
{
	if (!v->have_ring)
		return;
	/* the same document read again (a whole read after a compaction)
	 * is no change: the previous ring stays */
	if (new_rev != v->ring_rev)
		ksc_view_prev_drop(v);
	if (!v->ring_rev || !new_rev || new_rev == v->ring_rev) {
		ks_ring_free(&v->ring);
		ks_shards_free(&v->shards);
		free(v->shard_srv);
	} else {
		v->prev_ring = v->ring;
		v->prev_shards = v->shards;
		v->prev_srv = v->shard_srv;
		v->prev_rev = v->ring_rev;
		v->have_prev = 1;
		v->ring_since_ms = v->clock_ms;
		v->ring_changes++;
	}
	v->shard_srv = NULL;
	v->have_ring = 0;
}

void ksc_view_free(struct ksc_view *v)
{
	ring_retire(v, 0);
	ksc_view_prev_drop(v);
	free(v->ded);
	free(v->lim);
	free(v->caps);
	free(v->regs);
	free(v->srv);
	free(v->hot);
	memset(v, 0, sizeof(*v));
}

int ksc_view_server(struct ksc_view *v, const char *name)
{
	size_t len = strlen(name);
	unsigned i;

	if (!len || len >= KSC_ADDR_MAX)
		return -EINVAL;
	for (i = 0; i < v->nsrv; i++)
		if (!strcmp(v->srv[i].name, name))
			return (int)i;
	if (v->nsrv == KSC_SERVERS_MAX)
		return -ENOSPC;
	if (!(v->nsrv & (v->nsrv - 1))) { /* 0, 1, 2, 4, ...: grow */
		unsigned cap = v->nsrv ? 2 * v->nsrv : 8;
		struct ksc_server *s = realloc(v->srv, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		v->srv = s;
	}
	memset(&v->srv[v->nsrv], 0, sizeof(v->srv[0]));
	memcpy(v->srv[v->nsrv].name, name, len + 1);
	return (int)v->nsrv++;
}

/* id added to a set of at most KSC_SEEN_MAX (full: the oldest stays and
 * the newest is dropped, counted by the caller as refused). */
static int set_add(__u16 *set, unsigned *n, unsigned id)
{
	unsigned i;

	for (i = 0; i < *n; i++)
		if (set[i] == id)
			return 0;
	if (*n == KSC_SEEN_MAX)
		return -ENOSPC;
	set[(*n)++] = (__u16)id;
	return 0;
}

__u64 ksc_key_hash(const void *key, size_t len)
{
	__u64 words[KS_KEY_WORDS] = { 0 };

	if (len > KS_MAX_KEY_LEN)
		len = KS_MAX_KEY_LEN;
	memcpy(words, key, len);
	return ks_key_hash(words, (__u32)len);
}

unsigned ksc_view_owner(const struct ksc_view *v, const void *key, size_t len)
{
	__u32 i;
	int d;

	if (!v->have_ring)
		return KSC_NONE;
	/* a view without shard rules pays this one test */
	if (v->ded &&
	    (d = ks_dedicated_place(v->ded, v->ded_idx, key, len, NULL)) >= 0)
		i = (__u32)d;
	else
		i = ks_ring_lookup(&v->ring, key, len);
	return i < v->shards.n ? v->shard_srv[i] : KSC_NONE;
}

unsigned ksc_view_prev_owner(const struct ksc_view *v, const void *key,
			     size_t len)
{
	__u32 i;
	int d;

	if (!v->have_prev)
		return KSC_NONE;
	if (v->ded && (d = ks_dedicated_place(v->ded, v->ded_prev_idx, key, len,
					      NULL)) >= 0)
		i = (__u32)d;
	else
		i = ks_ring_lookup(&v->prev_ring, key, len);
	return i < v->prev_shards.n ? v->prev_srv[i] : KSC_NONE;
}

/* ---- the pins' shard rules ---- */

/* The rules' shards as indexes of the ring and of the previous one. */
static void ded_resolve(struct ksc_view *v)
{
	if (!v->ded)
		return;
	v->ded_lost = v->have_ring ? ks_dedicated_resolve(v->ded, &v->shards,
							  v->ded_idx)
				   : ks_dedicated_count(v->ded);
	if (v->have_prev)
		ks_dedicated_resolve(v->ded, &v->prev_shards, v->ded_prev_idx);
}

static void ded_drop(struct ksc_view *v)
{
	free(v->ded);
	v->ded = NULL;
	v->ded_lost = 0;
	/* the limit rules come and go with the same document */
	if (v->lim) {
		free(v->lim);
		v->lim = NULL;
		v->lim_version++;
	}
}

static size_t lim_count(const struct ks_hot_rules *r)
{
	size_t i, n = 0;

	for (i = 0; i < r->n; i++)
		n += ks_hot_rule_is_limit(r->r[i].type) != 0;
	return n;
}

/* A pins document: its shard rules replace the view's. One that does not
 * read leaves the view's rules as they were (as an agent keeps its
 * previous pins), refused and counted. */
static int put_pins(struct ksc_view *v, const char *val, size_t vlen, __s64 rev)
{
	struct ks_pins_doc *d = malloc(sizeof(*d));
	struct ks_hot_rules *lim = NULL;
	char err[KSC_WHY_MAX], src[48];

	if (!d)
		return why(v, -ENOMEM, "pins: out of memory");
	v->pins_seen = 1;
	snprintf(src, sizeof(src), "pins@%lld", (long long)rev);
	if (ks_pins_doc_decode(val, vlen, src, d, err, sizeof(err))) {
		free(d);
		return why(v, -EBADMSG, "pins revision %lld refused: %s",
			   (long long)rev, err);
	}
	if (lim_count(&d->rules) && !(lim = malloc(sizeof(*lim)))) {
		free(d);
		return why(v, -ENOMEM, "pins: out of memory");
	}
	ded_drop(v);
	if (lim) {
		*lim = d->rules;
		v->lim = lim;
	}
	v->lim_version++;
	if (ks_dedicated_count(&d->rules)) {
		/* the document's first member: the struct is its rules */
		v->ded = &d->rules;
		ded_resolve(v);
	} else {
		free(d);
	}
	return 0;
}

/* ---- the ring ---- */

/* The shards' server ids, then the ring in place of the old one. */
static int ring_take(struct ksc_view *v, struct ks_ring *r, struct ks_shards *s,
		     __s64 rev)
{
	__u16 *ids = calloc(s->n ? s->n : 1, sizeof(*ids));
	char addr[KS_SHARD_HOST_MAX + 8];
	__u32 i;
	int id;

	if (!ids)
		goto nomem;
	for (i = 0; i < s->n; i++) {
		ks_shard_addr(&s->v[i], addr, sizeof(addr));
		id = ksc_view_server(v, addr);
		if (id < 0) {
			free(ids);
			ks_ring_free(r);
			ks_shards_free(s);
			return why(v, id == -ENOMEM ? -ENOMEM : -EBADMSG,
				   "ring: shard %s: %s", addr,
				   id == -ENOSPC ? "too many servers"
						 : "name too long");
		}
		ids[i] = (__u16)id;
	}
	ring_retire(v, rev);
	v->ring = *r;
	v->shards = *s;
	v->shard_srv = ids;
	v->have_ring = 1;
	v->ring_rev = rev;
	ded_resolve(v);
	return 0;
nomem:
	ks_ring_free(r);
	ks_shards_free(s);
	return why(v, -ENOMEM, "ring: out of memory");
}

static int put_ring(struct ksc_view *v, const char *val, size_t vlen, __s64 rev)
{
	char err[KS_ERRLEN_DOC];
	struct ks_ring_doc d;
	struct ks_shards s;
	struct ks_ring r;
	int ret;

	ret = ks_ring_doc_decode(val, vlen, &d, err, sizeof(err));
	if (!ret)
		ret = ks_ring_doc_build(&d, NULL, (__u64)rev, &s, &r, err,
					sizeof(err));
	ks_ring_doc_free(&d);
	if (ret)
		return why(v, ret == -ENOMEM ? -ENOMEM : -EBADMSG,
			   "ring revision %lld refused: %s", (long long)rev,
			   err);
	return ring_take(v, &r, &s, rev);
}

int ksc_view_every_owner_replica(struct ksc_view *v, const char *name)
{
	int id = ksc_view_server(v, name);

	if (id >= 0 && set_add(v->static_reps, &v->nstatic, (unsigned)id))
		return -ENOSPC;
	return id;
}

int ksc_view_static(struct ksc_view *v, const char *shards, const char *dist,
		    const char *replicas)
{
	char err[KS_ERRLEN_DOC], name[KSC_ADDR_MAX];
	const char *p = replicas, *e;
	enum ks_dist ds = KS_DIST_KETAMA;
	struct ks_shards s;
	struct ks_ring r;
	int id, ret;

	if (dist && ks_dist_parse(dist, &ds, err, sizeof(err)))
		return why(v, -EINVAL, "distribution=%s: %s", dist, err);
	if (ks_shards_parse_list("servers=", shards, &s, err, sizeof(err)))
		return why(v, -EINVAL, "%s", err);
	if (ks_ring_build(&r, &s, ds, 0, 0, err, sizeof(err))) {
		ks_shards_free(&s);
		return why(v, -EINVAL, "%s", err);
	}
	ret = ring_take(v, &r, &s, 0);
	while (!ret && p && *p) {
		e = strchr(p, ',');
		snprintf(name, sizeof(name), "%.*s",
			 (int)(e ? (size_t)(e - p) : strlen(p)), p);
		id = ksc_view_every_owner_replica(v, name);
		if (id < 0)
			return why(v, -EINVAL, "replicas=: '%s': %s", name,
				   id != -ENOSPC ? "not a host:port"
						 : "too many replicas");
		p = e ? e + 1 : NULL;
	}
	return ret;
}

/* ---- hosts/SELF (schema 1) and members/SELF (schema 2) ---- */

static int put_host(struct ksc_view *v, const char *self, const char *val,
		    size_t vlen, int member)
{
	struct ks_fleet_host *h = malloc(sizeof(*h));
	const char *names;
	int id, rid, ret = 0;
	size_t i;

	if (!h)
		return why(v, -ENOMEM, "hosts/%s: out of memory", self);
	ks_fleet_host_decode(self, val, vlen, h);
	if (h->valid &&
	    (member ? h->kind != KS_FHK_MEMBER
		    : h->kind != KS_FHK_HOSTS && h->kind != KS_FHK_COMPAT)) {
		h->valid = 0;
		snprintf(h->why, sizeof(h->why), "%s",
			 member ? "not a member document (schema 2)"
				: "a schema-2 document");
	}
	if (!h->valid) {
		ret = why(v, -EBADMSG, "%s/%s refused: %s",
			  member ? "members" : "hosts", self, h->why);
		goto out;
	}
	/* the owner it is: the shard it names, else its SELF */
	names = h->have_shard && h->shard_name[0] ? h->shard_name : h->self;
	id = ksc_view_server(v, names);
	if (id < 0) {
		ret = why(v, -EBADMSG, "hosts/%s: '%s' is not a server name",
			  self, names);
		goto out;
	}
	for (i = 0; i < h->n_reps; i++) {
		rid = ksc_view_server(v, h->replicas[i]);
		if (rid < 0 || set_add(v->srv[id].reps, &v->srv[id].nreps,
				       (unsigned)rid)) {
			ret = why(v, -EBADMSG, "hosts/%s: replica '%s' %s",
				  self, h->replicas[i],
				  rid < 0 ? "not kept" : "is one too many");
			goto out;
		}
	}
out:
	free(h);
	return ret;
}

/* ---- hot/HASH ---- */

static size_t slot_of(const struct ksc_view *v, __u64 hash)
{
	size_t i = (size_t)(hash * 0x9e3779b97f4a7c15ULL >> 20) & (v->hcap - 1);

	while (v->hot[i].hash && v->hot[i].hash != hash)
		i = (i + 1) & (v->hcap - 1);
	return i;
}

struct ksc_hot *ksc_view_hot(const struct ksc_view *v, __u64 hash)
{
	struct ksc_hot *e;

	if (!v->hcap)
		return NULL;
	e = &v->hot[slot_of(v, hash)];
	return e->hash ? e : NULL;
}

struct ksc_hot *ksc_view_armed(const struct ksc_view *v, __u64 hash,
			       unsigned owner)
{
	struct ksc_hot *e = ksc_view_hot(v, hash);

	/* one probe for a key that is not hot */
	if (!e || !e->live || e->state != KS_HDS_ARMED || !e->nrep ||
	    e->owner != owner)
		return NULL;
	return e;
}

/* The table at cap slots (a power of two), keeping every entry. */
static int rehash(struct ksc_view *v, size_t cap)
{
	struct ksc_hot *old = v->hot;
	size_t i, ocap = v->hcap;

	v->hot = calloc(cap, sizeof(*v->hot));
	if (!v->hot) {
		v->hot = old;
		return -ENOMEM;
	}
	v->hcap = cap;
	for (i = 0; i < ocap; i++)
		if (old[i].hash)
			v->hot[slot_of(v, old[i].hash)] = old[i];
	free(old);
	return 0;
}

static struct ksc_hot *hot_get(struct ksc_view *v, __u64 hash)
{
	struct ksc_hot *e;

	if ((v->hused + 1) * 2 > v->hcap &&
	    rehash(v, v->hcap ? 2 * v->hcap : 64))
		return NULL;
	e = &v->hot[slot_of(v, hash)];
	if (!e->hash) {
		memset(e, 0, sizeof(*e));
		e->hash = hash;
		e->owner = KSC_NONE;
		v->hused++;
	}
	return e;
}

/* The entry's sub-key count is now k (1: not split), as the fleet said it
 * at now_ms (0: not known yet, stamped by the counter code on first
 * sight). The previous count is kept for the union of old and new. */
static void split_set(struct ksc_hot *e, unsigned k, __u64 now_ms)
{
	unsigned old = e->subkeys ? e->subkeys : 1;

	k = k < 1 ? 1 : k > KSC_SPLIT_MAX ? KSC_SPLIT_MAX : k;
	if (k == old && e->subkeys)
		return;
	/* a second change inside the grace keeps the widest of all */
	if (e->subkeys && old > e->subkeys_prev)
		e->subkeys_prev = (__u16)old;
	e->subkeys = (__u16)k;
	e->subkeys_since_ms = now_ms;
}

/* The cap of hash dropped from the view's caps. */
static void cap_drop(struct ksc_view *v, struct ksc_hot *e)
{
	size_t i;

	if (!e->capped)
		return;
	e->capped = 0;
	for (i = 0; i < v->ncaps; i++)
		if (v->caps[i].hash == e->hash) {
			v->caps[i] = v->caps[--v->ncaps];
			return;
		}
}

/* The entry's cap as in says: kept, replaced or dropped. */
static int cap_set(struct ksc_view *v, struct ksc_hot *e,
		   const struct ksc_hot_in *in)
{
	struct ksc_auto_cap *c = NULL;
	size_t i;

	if (!in->limit_rate || !in->key || !in->len ||
	    in->len > KS_MAX_KEY_LEN) {
		cap_drop(v, e);
		return 0;
	}
	for (i = 0; e->capped && i < v->ncaps; i++)
		if (v->caps[i].hash == e->hash)
			c = &v->caps[i];
	if (!c) {
		if (v->ncaps == v->caps_size) {
			size_t n = v->caps_size ? 2 * v->caps_size : 8;
			struct ksc_auto_cap *m = realloc(v->caps,
							 n * sizeof(*m));

			if (!m)
				return -ENOMEM;
			v->caps = m;
			v->caps_size = n;
		}
		c = &v->caps[v->ncaps++];
	}
	c->hash = e->hash;
	c->rate = in->limit_rate;
	c->len = in->len;
	memcpy(c->key, in->key, in->len);
	e->capped = 1;
	return 0;
}

__u32 ksc_view_auto_cap(const struct ksc_view *v, const void *key, size_t len,
			__u64 hash)
{
	const struct ksc_hot *e = v->ncaps ? ksc_view_hot(v, hash) : NULL;
	size_t i;

	if (!e || !e->live || !e->capped)
		return 0;
	for (i = 0; i < v->ncaps; i++) {
		const struct ksc_auto_cap *c = &v->caps[i];

		if (c->hash == hash && c->len == len &&
		    !memcmp(c->key, key, len))
			return c->rate;
	}
	return 0;
}

int ksc_view_hot_set(struct ksc_view *v, const struct ksc_hot_in *in, __s64 rev)
{
	struct ksc_hot *e = hot_get(v, in->hash);
	unsigned i, nseen;
	int ret = 0;

	if (!e)
		return why(v, -ENOMEM, "hot/%016llx: out of memory",
			   (unsigned long long)in->hash);
	/* a new armed version unless this put only moved rates: an L1 entry
	 * read under the old one must not be served (docs/client.md) */
	if (!e->live || e->state != KS_HDS_ARMED || in->state != KS_HDS_ARMED ||
	    e->write_seq != in->write_seq || e->owner != in->owner)
		e->arm_rev = rev;
	e->write_seq = in->write_seq;
	if (!e->live)
		v->hlive++;
	e->live = 1;
	e->mark = 0;
	e->state = (__u8)in->state;
	e->owner = in->owner;
	e->owner_turns = in->owner_turns;
	e->mod_rev = rev;
	split_set(e, in->subkeys, 0);
	e->nrep = (__u8)in->nrep;
	nseen = e->nseen;
	for (i = 0; i < in->nrep; i++) {
		e->rep[i] = in->rep[i];
		if (set_add(e->seen, &nseen, in->rep[i]))
			ret = why(
				v, -EBADMSG,
				"hot/%016llx: more than %d replicas over time",
				(unsigned long long)in->hash, KSC_SEEN_MAX);
	}
	e->nseen = (__u8)nseen;
	/* the datapath's schedule over the owner and the listed copies: the
	 * turn count restarts with each new set of copies */
	ks_steer_schedule(e->sched, 1 + e->nrep, e->owner_turns);
	e->rr = 0;
	if (cap_set(v, e, in))
		ret = why(v, -ENOMEM, "hot/%016llx: out of memory for its cap",
			  (unsigned long long)in->hash);
	return ret;
}

static int put_hot(struct ksc_view *v, const char *hex, const char *val,
		   size_t vlen, __s64 rev)
{
	char err[KSC_WHY_MAX];
	struct ks_hot_doc *d = malloc(sizeof(*d));
	struct ksc_hot_in in = { 0 };
	int id, ret = 0;
	uint64_t hash;
	unsigned i;

	if (!d)
		return why(v, -ENOMEM, "hot/%s: out of memory", hex);
	if (ks_fleet_hash_parse(hex, &hash)) {
		ret = why(v, -EBADMSG, "hot/%s refused: not 16 hex digits",
			  hex);
		goto out;
	}
	in.hash = hash;
	if (ks_hot_doc_decode(val, vlen, hash, d, err, sizeof(err))) {
		ret = why(v, -EBADMSG, "hot/%s refused: %s", hex, err);
		goto out;
	}
	id = ksc_view_server(v, d->owner);
	in.owner = (__u16)id;
	for (i = 0; id >= 0 && i < d->nreplicas; i++) {
		id = ksc_view_server(v, d->replica[i]);
		in.rep[i] = (__u16)id;
	}
	if (id < 0) {
		ret = why(v, id == -ENOMEM ? -ENOMEM : -EBADMSG,
			  "hot/%s refused: a server name not kept", hex);
		goto out;
	}
	in.state = d->state;
	in.nrep = d->nreplicas;
	in.owner_turns = d->owner_turns;
	in.write_seq = d->write_seq;
	in.subkeys = d->write_hot ? d->subkeys : 1;
	in.limit_rate = d->limit_rate;
	if (d->has_key) {
		in.key = d->key;
		in.len = d->len;
	}
	ret = ksc_view_hot_set(v, &in, rev);
out:
	free(d);
	return ret;
}

static void hot_gone(struct ksc_view *v, struct ksc_hot *e, __u64 now_ms)
{
	if (!e->live)
		return;
	e->live = 0;
	e->gone_ms = now_ms;
	v->hlive--;
	cap_drop(v, e);
	split_set(e, 1, now_ms); /* cooled: the sub-keys fold back */
}

void ksc_view_purge(struct ksc_view *v, __u64 now_ms, __u64 keep_ms)
{
	size_t i, n = 0;

	for (i = 0; i < v->hcap; i++)
		if (v->hot[i].hash && !v->hot[i].live &&
		    now_ms - v->hot[i].gone_ms > keep_ms) {
			v->hot[i].hash = 0;
			v->hused--;
			n++;
		}
	if (n) /* linear probing: put the survivors back in place */
		rehash(v, v->hcap);
}

/* ---- events ---- */

enum {
	K_OTHER,
	K_RING,
	K_HOST,
	K_HOT,
	K_MEMBER,
	K_PINS,
	K_LIMREG
};

/* limit_clients/HASH/ID (rest): the pair, or -EINVAL. */
static int reg_parse(const char *rest, __u64 *hash, __u64 *id)
{
	char h[17];
	uint64_t a, b;

	if (strlen(rest) != 33 || rest[16] != '/')
		return -EINVAL;
	memcpy(h, rest, 16);
	h[16] = '\0';
	if (ks_fleet_hash_parse(h, &a) || ks_fleet_hash_parse(rest + 17, &b))
		return -EINVAL;
	*hash = a;
	*id = b;
	return 0;
}

static struct ksc_lim_reg *reg_find(const struct ksc_view *v, __u64 hash,
				    __u64 id)
{
	size_t i;

	for (i = 0; i < v->nregs; i++)
		if (v->regs[i].hash == hash && v->regs[i].id == id)
			return &v->regs[i];
	return NULL;
}

static int put_reg(struct ksc_view *v, const char *rest)
{
	struct ksc_lim_reg *r;
	__u64 hash, id;

	if (reg_parse(rest, &hash, &id))
		return 1; /* not ours to read: left alone */
	r = reg_find(v, hash, id);
	if (!r) {
		if (v->nregs == v->regs_size) {
			size_t n = v->regs_size ? 2 * v->regs_size : 16;

			r = realloc(v->regs, n * sizeof(*r));
			if (!r)
				return -ENOMEM;
			v->regs = r;
			v->regs_size = n;
		}
		r = &v->regs[v->nregs++];
		r->hash = hash;
		r->id = id;
	}
	r->mark = 0;
	return 0;
}

static void del_reg(struct ksc_view *v, const char *rest)
{
	struct ksc_lim_reg *r;
	__u64 hash, id;

	if (!reg_parse(rest, &hash, &id) && (r = reg_find(v, hash, id)))
		*r = v->regs[--v->nregs];
}

static void regs_mark(struct ksc_view *v)
{
	size_t i;

	for (i = 0; i < v->nregs; i++)
		v->regs[i].mark = 1;
}

/* after a whole read: the registrations it did not put are gone */
static void regs_sweep(struct ksc_view *v)
{
	size_t i = 0;

	while (i < v->nregs)
		if (v->regs[i].mark)
			v->regs[i] = v->regs[--v->nregs];
		else
			i++;
}

unsigned ksc_view_limit_clients(const struct ksc_view *v, __u64 hash, __u64 id,
				int *self_in)
{
	unsigned n = 0;
	size_t i;

	*self_in = 0;
	for (i = 0; i < v->nregs; i++) {
		if (v->regs[i].hash != hash)
			continue;
		n++;
		if (v->regs[i].id == id)
			*self_in = 1;
	}
	return n;
}

int ksc_lim_reg_key(const struct ksc_view *v, __u64 hash, __u64 id, char *buf,
		    size_t len)
{
	int n = snprintf(buf, len, "%s" KSC_LIM_REG_FAMILY "%016llx/%016llx",
			 v->prefix, (unsigned long long)hash,
			 (unsigned long long)id);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
}

/* What key is, with its last part (a hosts/ or members/ SELF or a hot/
 * hash). An agent's load document is outside the prefix (docs/fleet.md):
 * a handle never hears of a rate. */
static int classify(const struct ksc_view *v, const char *key, size_t klen,
		    char *rest, size_t rlen)
{
	size_t n;

	if (klen <= v->plen || memcmp(key, v->prefix, v->plen))
		return K_OTHER;
	key += v->plen;
	klen -= v->plen;
	if (klen == 4 && !memcmp(key, "ring", 4))
		return K_RING;
	if (klen == 4 && !memcmp(key, "pins", 4))
		return K_PINS;
	for (n = 0; n < 4; n++) {
		static const char *const fams[] = { "hosts/", "hot/",
						    "members/",
						    KSC_LIM_REG_FAMILY };
		static const int kinds[] = { K_HOST, K_HOT, K_MEMBER,
					     K_LIMREG };
		size_t fl = strlen(fams[n]);

		if (klen > fl && klen - fl < rlen &&
		    !memcmp(key, fams[n], fl)) {
			memcpy(rest, key + fl, klen - fl);
			rest[klen - fl] = '\0';
			if (memchr(rest, '\0', klen - fl))
				return K_OTHER;
			return kinds[n];
		}
	}
	return K_OTHER;
}

int ksc_view_put(struct ksc_view *v, const char *key, size_t klen,
		 const char *val, size_t vlen, __s64 mod_rev)
{
	char rest[KSC_ADDR_MAX + 8];
	int ret, k = classify(v, key, klen, rest, sizeof(rest));

	switch (k) {
	case K_RING:
		ret = put_ring(v, val, vlen, mod_rev);
		break;
	case K_HOST:
	case K_MEMBER:
		ret = put_host(v, rest, val, vlen, k == K_MEMBER);
		break;
	case K_HOT:
		ret = put_hot(v, rest, val, vlen, mod_rev);
		break;
	case K_PINS:
		ret = put_pins(v, val, vlen, mod_rev);
		break;
	case K_LIMREG:
		ret = put_reg(v, rest);
		break;
	default:
		return 1;
	}
	if (mod_rev > v->revision)
		v->revision = mod_rev;
	if (!ret)
		v->updates++;
	return ret;
}

int ksc_view_del(struct ksc_view *v, const char *key, size_t klen, __s64 rev,
		 __u64 now_ms)
{
	char rest[KSC_ADDR_MAX + 8];
	struct ksc_hot *e;
	uint64_t hash;
	int k = classify(v, key, klen, rest, sizeof(rest));

	if (rev > v->revision)
		v->revision = rev;
	if (k == K_OTHER)
		return 1;
	v->updates++;
	if (k == K_PINS) /* no pins: every key with its ring owner */
		ded_drop(v);
	if (k == K_LIMREG)
		del_reg(v, rest);
	if (k == K_HOT && !ks_fleet_hash_parse(rest, &hash) &&
	    (e = ksc_view_hot(v, hash)))
		hot_gone(v, e, now_ms);
	return 0;
}

int ksc_view_event(struct ksc_view *v, const struct ks_etcd_event *ev,
		   __u64 now_ms)
{
	v->clock_ms = now_ms;
	if (ev->type == KS_ETCD_EV_DELETE)
		return ksc_view_del(v, ev->kv.key, ev->kv.key_len,
				    ev->kv.mod_revision, now_ms);
	return ksc_view_put(v, ev->kv.key, ev->kv.key_len, ev->kv.value,
			    ev->kv.value_len, ev->kv.mod_revision);
}

void ksc_view_hot_mark(struct ksc_view *v)
{
	size_t i;

	for (i = 0; i < v->hcap; i++)
		v->hot[i].mark = v->hot[i].hash && v->hot[i].live;
}

void ksc_view_hot_sweep(struct ksc_view *v, __u64 now_ms)
{
	size_t i;

	for (i = 0; i < v->hcap; i++)
		if (v->hot[i].hash && v->hot[i].live && v->hot[i].mark)
			hot_gone(v, &v->hot[i], now_ms);
}

int ksc_view_load(struct ksc_view *v, const struct ks_etcd_kv *kvs, size_t n,
		  __s64 rev, __u64 now_ms)
{
	size_t i;
	int ret = 0, r;

	/* every entry this read does not put again is gone */
	v->clock_ms = now_ms;
	ksc_view_hot_mark(v);
	regs_mark(v);
	v->pins_seen = 0;
	for (i = 0; i < n; i++) {
		r = ksc_view_put(v, kvs[i].key, kvs[i].key_len, kvs[i].value,
				 kvs[i].value_len, kvs[i].mod_revision);
		if (r == -ENOMEM)
			ret = r;
	}
	ksc_view_hot_sweep(v, now_ms);
	regs_sweep(v);
	if (!v->pins_seen) /* deleted while nobody watched */
		ded_drop(v);
	if (rev > v->revision)
		v->revision = rev;
	return ret;
}

int ksc_view_replay(struct ksc_view *v, const struct ks_etcd_kv *kvs, size_t n,
		    __s64 since, __s64 rev, __u64 now_ms)
{
	char rest[KSC_ADDR_MAX + 8];
	struct ksc_hot *e;
	uint64_t hash;
	size_t i;
	int ret = 0, r, k;

	v->clock_ms = now_ms;
	ksc_view_hot_mark(v);
	regs_mark(v);
	v->pins_seen = 0;
	for (i = 0; i < n; i++) {
		if (kvs[i].mod_revision > since) {
			r = ksc_view_put(v, kvs[i].key, kvs[i].key_len,
					 kvs[i].value, kvs[i].value_len,
					 kvs[i].mod_revision);
			if (r == -ENOMEM)
				ret = r;
			continue;
		}
		/* applied before: still there, so not gone */
		k = classify(v, kvs[i].key, kvs[i].key_len, rest, sizeof(rest));
		if (k == K_PINS)
			v->pins_seen = 1;
		if (k == K_HOT && !ks_fleet_hash_parse(rest, &hash) &&
		    (e = ksc_view_hot(v, hash)))
			e->mark = 0;
		if (k == K_LIMREG)
			put_reg(v, rest);
	}
	ksc_view_hot_sweep(v, now_ms);
	regs_sweep(v);
	if (!v->pins_seen)
		ded_drop(v);
	if (rev > v->revision)
		v->revision = rev;
	return ret;
}
