// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* fleet_doc.c - etcd's documents into a fleet snapshot (see fleet_doc.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "core/dedicated.h"
#include "core/pins_doc.h"
#include "core/fleet_doc.h"
#include "core/mc_key.h"
#include "core/ring_doc.h"

static int refuse(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int refuse(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

/* A rate: a JSON number >= 0 (absent: 0). -1 for anything else. */
static int get_rate(json_t *o, const char *name, double *out)
{
	json_t *v = json_object_get(o, name);

	*out = 0;
	if (!v)
		return 0;
	if (!json_is_number(v) || json_number_value(v) < 0)
		return -1;
	*out = json_number_value(v);
	return 0;
}

/* A string copied into dst, cut to fit; 0 when absent or not a string. */
static int get_text(json_t *o, const char *name, char *dst, size_t len)
{
	json_t *v = json_object_get(o, name);

	dst[0] = '\0';
	if (!json_is_string(v))
		return 0;
	snprintf(dst, len, "%s", json_string_value(v));
	return 1;
}

static int schema_one(json_t *o)
{
	json_t *v = json_object_get(o, "schema");

	return json_is_integer(v) &&
	       json_integer_value(v) == KS_FLEET_DOC_SCHEMA;
}

/* The top entries of a hosts/ document; -EBADMSG with why. */
static int host_top(json_t *top, struct ks_fleet_host *h)
{
	size_t i;
	json_t *k;

	if (!top)
		return 0;
	if (!json_is_array(top))
		return refuse(h->why, sizeof(h->why), "top is not an array");
	json_array_foreach(top, i, k)
	{
		struct ks_fleet_key *t;
		char hash[24];

		if (h->n_top == KS_FLEET_HOST_TOP)
			break; /* agents publish 10; more is not ours to show */
		t = &h->top[h->n_top];
		if (!json_is_object(k) ||
		    !get_text(k, "hash", hash, sizeof(hash)) ||
		    ks_fleet_hash_parse(hash, &t->hash))
			return refuse(h->why, sizeof(h->why),
				      "top[%zu] has no hash of 16 hex digits",
				      i);
		if (get_rate(k, "reads_per_s", &t->reads) ||
		    get_rate(k, "writes_per_s", &t->writes))
			return refuse(
				h->why, sizeof(h->why),
				"top[%zu] has a rate that is not a number >= 0",
				i);
		get_text(k, "key", t->key, sizeof(t->key));
		h->n_top++;
	}
	return 0;
}

/* The replicas of a hosts/ document: an array of "host:port" strings
 * (absent: none); -EBADMSG with why. */
static int host_replicas(json_t *reps, struct ks_fleet_host *h)
{
	size_t i;
	json_t *r;

	if (!reps)
		return 0;
	if (!json_is_array(reps))
		return refuse(h->why, sizeof(h->why),
			      "replicas is not an array");
	if (json_array_size(reps) > KS_MAX_REPLICAS)
		return refuse(h->why, sizeof(h->why),
			      "replicas has %zu entries, more than %d",
			      json_array_size(reps), KS_MAX_REPLICAS);
	json_array_foreach(reps, i, r)
	{
		if (!json_is_string(r) || !json_string_length(r) ||
		    json_string_length(r) >= KS_FLEET_ADDR_MAX)
			return refuse(h->why, sizeof(h->why),
				      "replicas[%zu] is not a host:port", i);
		snprintf(h->replicas[h->n_reps++], KS_FLEET_ADDR_MAX, "%s",
			 json_string_value(r));
	}
	return 0;
}

/* The rates of a hosts/ document: its shard's, else its classes'. */
static int host_rates(json_t *doc, struct ks_fleet_host *h)
{
	json_t *sh = json_object_get(doc, "shard");
	json_t *cl = json_object_get(doc, "class_rates");

	if (json_is_object(sh)) {
		h->have_shard = 1;
		get_text(sh, "name", h->shard_name, sizeof(h->shard_name));
		if (get_rate(sh, "reads_per_s", &h->reads) ||
		    get_rate(sh, "writes_per_s", &h->writes) ||
		    get_rate(sh, "misdirected_per_s", &h->mis) ||
		    get_rate(sh, "served_per_s", &h->served))
			return refuse(
				h->why, sizeof(h->why),
				"shard has a rate that is not a number >= 0");
		if (!json_object_get(sh, "served_per_s"))
			h->served = h->reads;
		if (h->kind == KS_FHK_LOAD &&
		    ks_load_totals_decode(json_object_get(sh, "totals"),
					  &h->totals, h->why, sizeof(h->why)))
			return -EBADMSG;
		return 0;
	}
	if (sh && !json_is_null(sh))
		return refuse(h->why, sizeof(h->why),
			      "shard is neither an object nor null");
	if (cl && !json_is_object(cl))
		return refuse(h->why, sizeof(h->why),
			      "class_rates is not an object");
	if (get_rate(cl, "read", &h->reads) ||
	    get_rate(cl, "write", &h->writes))
		return refuse(
			h->why, sizeof(h->why),
			"class_rates has a rate that is not a number >= 0");
	return 0;
}

/* ring_revision and purge; -EBADMSG with why. */
static int host_status(json_t *doc, struct ks_fleet_host *h)
{
	json_t *rr = json_object_get(doc, "ring_revision");

	if (rr && !json_is_integer(rr))
		return refuse(h->why, sizeof(h->why),
			      "ring_revision is not an integer");
	h->ring_rev = json_integer_value(rr);
	rr = json_object_get(doc, "purge");
	if (rr &&
	    (!json_is_string(rr) || json_string_length(rr) >= sizeof(h->purge)))
		return refuse(h->why, sizeof(h->why),
			      "purge is not a state name (idle, purging, ...)");
	if (rr)
		snprintf(h->purge, sizeof(h->purge), "%s",
			 json_string_value(rr));
	return 0;
}

/* A member document's shard: its name, or null when the ring does not
 * name this agent. */
static int member_shard(json_t *sh, struct ks_fleet_host *h)
{
	if (!sh || json_is_null(sh))
		return 0;
	if (!json_is_string(sh) || !json_string_length(sh) ||
	    json_string_length(sh) >= sizeof(h->shard_name))
		return refuse(h->why, sizeof(h->why),
			      "shard is neither a host:port nor null");
	h->have_shard = 1;
	snprintf(h->shard_name, sizeof(h->shard_name), "%s",
		 json_string_value(sh));
	return 0;
}

/* A load document's hot list (absent: an agent before it, none). */
static int load_hot(json_t *hot, struct ks_fleet_host *h)
{
	int n;

	if (!hot)
		return 0;
	n = ks_load_hot_decode(hot, h->hot, KS_LOAD_HOT_MAX, h->why,
			       sizeof(h->why));
	if (n < 0)
		return -EBADMSG;
	h->n_hot = (size_t)n;
	return 0;
}

/* A load document's limits list (absent: an agent before it, or nothing
 * limited); one that does not read refuses the document, as "hot" does. */
static int load_limits(json_t *doc, struct ks_fleet_host *h)
{
	json_t *om = json_object_get(doc, "limits_omitted");
	int n;

	n = ks_load_limits_decode(json_object_get(doc, "limits"), h->limits,
				  KS_LOAD_LIMITS_MAX, h->why, sizeof(h->why));
	if (n < 0)
		return -EBADMSG;
	h->n_limits = (size_t)n;
	if (om && (!json_is_integer(om) || json_integer_value(om) < 0))
		return refuse(h->why, sizeof(h->why),
			      "limits_omitted is not an integer >= 0");
	h->limits_omitted = om ? json_integer_value(om) : 0;
	return 0;
}

/* Schema 2: a member or a load document, by its kind. */
static int decode_v2(json_t *doc, struct ks_fleet_host *h)
{
	char kind[32];

	get_text(doc, "kind", kind, sizeof(kind));
	if (!strcmp(kind, "keysteer-member")) {
		h->kind = KS_FHK_MEMBER;
		h->no_load = 1;
		return member_shard(json_object_get(doc, "shard"), h) ||
		       host_replicas(json_object_get(doc, "replicas"), h);
	}
	if (!strcmp(kind, "keysteer-load")) {
		h->kind = KS_FHK_LOAD;
		return host_status(doc, h) || host_rates(doc, h) ||
		       host_top(json_object_get(doc, "top"), h) ||
		       load_hot(json_object_get(doc, "hot"), h) ||
		       load_limits(doc, h);
	}
	return refuse(h->why, sizeof(h->why),
		      "kind is neither keysteer-member nor keysteer-load");
}

void ks_fleet_host_decode(const char *self, const char *raw, size_t len,
			  struct ks_fleet_host *h)
{
	json_error_t je;
	json_t *doc, *v;

	memset(h, 0, sizeof(*h));
	snprintf(h->self, sizeof(h->self), "%s", self);
	h->raw = raw;
	h->raw_len = len;
	doc = json_loadb(raw, len, 0, &je);
	if (!json_is_object(doc)) {
		refuse(h->why, sizeof(h->why), "not a JSON object");
		goto out;
	}
	v = json_object_get(doc, "schema");
	if (json_is_integer(v) &&
	    json_integer_value(v) == KS_FLEET_DOC_SCHEMA_2) {
		if (decode_v2(doc, h))
			goto out;
		h->valid = 1;
		goto out;
	}
	if (!schema_one(doc)) {
		refuse(h->why, sizeof(h->why), "schema is not 1 or 2");
		goto out;
	}
	h->kind = json_is_true(json_object_get(doc, "compat")) ? KS_FHK_COMPAT
							       : KS_FHK_HOSTS;
	if (host_status(doc, h) || host_rates(doc, h) ||
	    host_top(json_object_get(doc, "top"), h) ||
	    host_replicas(json_object_get(doc, "replicas"), h))
		goto out;
	h->valid = 1;
out:
	json_decref(doc);
}

/* A decoded hot/ document as the snapshot keeps it. */
static void hot_of(const struct ks_hot_doc *d, struct ks_fleet_hot *e)
{
	unsigned i;

	memset(e, 0, sizeof(*e));
	e->hash = d->hash;
	if (d->has_key)
		ks_key_text(d->key, d->len, e->key, sizeof(e->key));
	snprintf(e->owner, sizeof(e->owner), "%s", d->owner);
	e->read_hot = d->read_hot;
	e->write_hot = d->write_hot;
	e->pinned = d->pinned;
	e->copies = d->copies;
	e->subkeys = d->subkeys ? d->subkeys : 1;
	e->write_seq = (int64_t)d->write_seq;
	e->state = d->state;
	e->reads = d->reads_ps;
	e->writes = d->writes_ps;
	e->n_reps = d->nreplicas;
	for (i = 0; i < d->nreplicas && i < KS_FLEET_REPLICAS; i++)
		snprintf(e->replicas[i], sizeof(e->replicas[i]), "%s",
			 d->replica[i]);
}

int ks_fleet_hot_decode(const char *hash, const char *raw, size_t len,
			struct ks_fleet_hot *e, char *why, size_t whylen)
{
	struct ks_hot_doc d;
	uint64_t want;

	memset(e, 0, sizeof(*e));
	if (ks_fleet_hash_parse(hash, &want))
		return refuse(
			why, whylen,
			"the key's last part is not 16 lowercase hex digits");
	/* the one reader of the schema (core/hot_doc.h), as clients use it */
	if (ks_hot_doc_decode(raw, len, want, &d, why, whylen))
		return -EBADMSG;
	hot_of(&d, e);
	return 0;
}

/* The ring's shards as "host:port", or ring_valid 0 and why. */
static int snapshot_ring(const struct ks_etcd_kv *kv,
			 struct ks_fleet_snapshot *s)
{
	char err[KS_ERRLEN_DOC];
	struct ks_ring_doc d;
	__u32 i;

	s->ring_rev = kv->mod_revision;
	if (ks_ring_doc_decode(kv->value, kv->value_len, &d, err,
			       sizeof(err))) {
		snprintf(s->ring_why, sizeof(s->ring_why), "%.*s",
			 (int)sizeof(s->ring_why) - 1, err);
		return 0;
	}
	s->ring = calloc(d.shards.n ? d.shards.n : 1, sizeof(*s->ring));
	if (!s->ring) {
		ks_ring_doc_free(&d);
		return -ENOMEM;
	}
	for (i = 0; i < d.shards.n; i++)
		ks_shard_addr(&d.shards.v[i], s->ring[i], sizeof(s->ring[0]));
	s->n_ring = d.shards.n;
	s->ring_valid = 1;
	/* kept whole: a shard rule may name a shard by its name */
	s->ring_shards = malloc(sizeof(*s->ring_shards));
	if (s->ring_shards) {
		*s->ring_shards = d.shards;
		memset(&d.shards, 0, sizeof(d.shards));
	}
	ks_ring_doc_free(&d);
	return 0;
}

/* The pins document's shard rules (dedicated shards) and limit rules
 * (docs/limits.md), kept when it has any; a document that does not read
 * is named in pins_why. */
static int snapshot_pins(const struct ks_etcd_kv *kv,
			 struct ks_fleet_snapshot *s)
{
	struct ks_pins_doc *d = malloc(sizeof(*d));
	char err[KS_ERRLEN_DOC];
	size_t i;

	if (!d)
		return -ENOMEM;
	s->pins_rev = kv->mod_revision;
	if (ks_pins_doc_decode(kv->value, kv->value_len, "pins", d, err,
			       sizeof(err))) {
		snprintf(s->pins_why, sizeof(s->pins_why), "%.*s",
			 (int)sizeof(s->pins_why) - 1, err);
		free(d);
		return 0;
	}
	for (i = 0; i < d->rules.n; i++)
		if (ks_hot_rule_is_shard(d->rules.r[i].type) ||
		    ks_hot_rule_is_limit(d->rules.r[i].type))
			break;
	if (i == d->rules.n) {
		free(d);
		return 0;
	}
	/* the document's first member: the struct is its rules */
	s->pins = &d->rules;
	return 0;
}

/* The rest of the key after prefix and dir ("hosts/", "hot/"), or NULL
 * when the key is not under them. */
static const char *under(const struct ks_etcd_kv *kv, const char *prefix,
			 size_t plen, const char *dir)
{
	size_t dlen = strlen(dir);

	if (kv->key_len <= plen + dlen || memcmp(kv->key, prefix, plen) ||
	    memcmp(kv->key + plen, dir, dlen))
		return NULL;
	return kv->key + plen + dlen;
}

static void snapshot_hot(const struct ks_etcd_kv *kv, const char *hash,
			 struct ks_fleet_snapshot *s)
{
	struct ks_fleet_refused *r = &s->refused[s->n_refused];
	char why[KS_FLEET_WHY_MAX];

	if (!ks_fleet_hot_decode(hash, kv->value, kv->value_len,
				 &s->hot[s->n_hot], why, sizeof(why))) {
		s->hot[s->n_hot++].mod_rev = kv->mod_revision;
		return;
	}
	snprintf(r->key, sizeof(r->key), "%s", hash);
	snprintf(r->why, sizeof(r->why), "%s", why);
	s->n_refused++;
}

/* A member's load document (l, decoded) into m: what moves with load. */
static void join_load(struct ks_fleet_host *m, const struct ks_fleet_host *l)
{
	size_t i;

	if (!l->valid || l->kind != KS_FHK_LOAD)
		return;
	m->no_load = 0;
	m->raw = l->raw;
	m->raw_len = l->raw_len;
	m->reads = l->reads;
	m->writes = l->writes;
	m->mis = l->mis;
	m->served = l->served;
	m->ring_rev = l->ring_rev;
	memcpy(m->purge, l->purge, sizeof(m->purge));
	m->n_top = l->n_top;
	for (i = 0; i < l->n_top; i++)
		m->top[i] = l->top[i];
	m->n_hot = l->n_hot;
	memcpy(m->hot, l->hot, l->n_hot * sizeof(m->hot[0]));
	m->n_limits = l->n_limits;
	memcpy(m->limits, l->limits, l->n_limits * sizeof(m->limits[0]));
	m->limits_omitted = l->limits_omitted;
	if (l->mod_rev > m->mod_rev)
		m->mod_rev = l->mod_rev;
}

/* The load document of self among loads (in key order, from *at on, as
 * members come in key order too), decoded into *l; 0 when none. */
static int find_load(const struct ks_etcd_kv *loads, size_t nl,
		     const char *load_prefix, size_t lplen, size_t *at,
		     const char *self, struct ks_fleet_host *l)
{
	size_t slen = strlen(self);
	int c;

	for (; *at < nl; ++*at) {
		const struct ks_etcd_kv *kv = &loads[*at];
		const char *rest = kv->key + lplen;
		size_t rlen;

		if (kv->key_len <= lplen || memcmp(kv->key, load_prefix, lplen))
			continue;
		rlen = kv->key_len - lplen;
		c = memcmp(rest, self, rlen < slen ? rlen : slen);
		if (!c)
			c = rlen < slen ? -1 : rlen > slen;
		if (c > 0)
			return 0;
		if (!c) {
			ks_fleet_host_decode(self, kv->value, kv->value_len, l);
			l->mod_rev = kv->mod_revision;
			return 1;
		}
	}
	return 0;
}

/* Whether the snapshot has a hot/ entry for hash already. */
static int have_hot(const struct ks_fleet_snapshot *s, uint64_t hash)
{
	size_t i;

	for (i = 0; i < s->n_hot; i++)
		if (s->hot[i].hash == hash)
			return 1;
	return 0;
}

/* Room for more hot entries and refusals: 0, or -ENOMEM. */
static int hot_room(struct ks_fleet_snapshot *s, size_t *cap, size_t more)
{
	struct ks_fleet_hot *h;
	struct ks_fleet_refused *r;

	if (s->n_hot + more <= *cap && s->n_refused + more <= *cap)
		return 0;
	*cap = s->n_hot + s->n_refused + more + 16;
	h = realloc(s->hot, *cap * sizeof(*s->hot));
	if (!h)
		return -ENOMEM;
	s->hot = h;
	r = realloc(s->refused, *cap * sizeof(*s->refused));
	if (!r)
		return -ENOMEM;
	s->refused = r;
	return 0;
}

/*
 * The keys h's load document lists as only counted (an item with an
 * "entry": no hot/ entry, docs/fleet.md) into the snapshot's hot
 * entries, owned by h, unless a hot/ entry of the key is there (a
 * change between the two writes; hot/ is what clients read). An entry
 * that does not read is refused as a hot/ entry is. 0, or -ENOMEM.
 */
static int snapshot_counted(const struct ks_fleet_host *h,
			    struct ks_fleet_snapshot *s, size_t *cap)
{
	char why[KS_FLEET_WHY_MAX];
	json_t *doc, *item, *entry;
	struct ks_hot_doc *d;
	size_t i, n = 0;
	uint64_t hash;

	for (i = 0; i < h->n_hot; i++)
		n += h->hot[i].has_entry;
	if (!n || !h->raw)
		return 0;
	if (hot_room(s, cap, n))
		return -ENOMEM;
	doc = json_loadb(h->raw, h->raw_len, 0, NULL);
	d = malloc(sizeof(*d));
	if (!d) {
		json_decref(doc);
		return -ENOMEM;
	}
	json_array_foreach(json_object_get(doc, "hot"), i, item)
	{
		entry = json_object_get(item, "entry");
		if (!entry || i >= h->n_hot)
			continue;
		hash = h->hot[i].hash;
		if (have_hot(s, hash))
			continue;
		if (ks_hot_doc_decode_entry(entry, hash, h->self, d, why,
					    sizeof(why))) {
			struct ks_fleet_refused *r = &s->refused[s->n_refused++];

			snprintf(r->key, sizeof(r->key), "%016llx",
				 (unsigned long long)hash);
			snprintf(r->why, sizeof(r->why),
				 "%.60s's load document: %.120s", h->self, why);
			continue;
		}
		hot_of(d, &s->hot[s->n_hot]);
		s->hot[s->n_hot].in_load = 1;
		s->hot[s->n_hot++].mod_rev = h->mod_rev;
	}
	free(d);
	json_decref(doc);
	return 0;
}

int ks_fleet_snapshot_decode(const struct ks_etcd_kv *kvs, size_t n,
			     const char *prefix, const struct ks_etcd_kv *loads,
			     size_t nl, const char *load_prefix, int64_t rev,
			     struct ks_fleet_snapshot *s)
{
	size_t i, plen = strlen(prefix), nh = 1, nt = 1, at = 0;
	size_t lplen = load_prefix ? strlen(load_prefix) : 0;
	struct ks_fleet_host *l = malloc(sizeof(*l));
	const char *rest;

	memset(s, 0, sizeof(*s));
	s->store_rev = rev;
	/* Counted first: an entry is kilobytes, a fleet thousands of keys. */
	for (i = 0; i < n; i++) {
		nh += under(&kvs[i], prefix, plen, "hosts/") != NULL;
		nh += under(&kvs[i], prefix, plen, "members/") != NULL;
		nt += under(&kvs[i], prefix, plen, "hot/") != NULL;
	}
	s->hosts = calloc(nh, sizeof(*s->hosts));
	s->hot = calloc(nt, sizeof(*s->hot));
	s->refused = calloc(nt, sizeof(*s->refused));
	if (!s->hosts || !s->hot || !s->refused || !l)
		goto nomem;
	for (i = 0; i < n; i++) {
		const struct ks_etcd_kv *kv = &kvs[i];
		struct ks_fleet_host *h = &s->hosts[s->n_hosts];

		if ((rest = under(kv, prefix, plen, "hosts/"))) {
			ks_fleet_host_decode(rest, kv->value, kv->value_len, h);
			h->mod_rev = kv->mod_revision;
			/* a schema-2 agent's entry for old readers: its
			 * members/ entry and load document say it */
			if (h->valid && h->kind == KS_FHK_COMPAT)
				continue;
			if (h->valid && h->kind != KS_FHK_HOSTS) {
				h->valid = 0;
				snprintf(h->why, sizeof(h->why),
					 "a schema-2 document under hosts/");
			}
			s->n_hosts++;
		} else if ((rest = under(kv, prefix, plen, "members/"))) {
			ks_fleet_host_decode(rest, kv->value, kv->value_len, h);
			h->mod_rev = kv->mod_revision;
			if (h->valid && h->kind != KS_FHK_MEMBER) {
				h->valid = 0;
				snprintf(h->why, sizeof(h->why),
					 "not a member document (schema 2)");
			}
			h->member_raw = h->raw;
			h->member_raw_len = h->raw_len;
			h->raw = NULL;
			h->raw_len = 0;
			if (h->valid && find_load(loads, nl, load_prefix, lplen,
						  &at, rest, l))
				join_load(h, l);
			s->n_hosts++;
		} else if ((rest = under(kv, prefix, plen, "hot/"))) {
			snapshot_hot(kv, rest, s);
		} else if (kv->key_len == plen + 4 &&
			   !memcmp(kv->key, prefix, plen) &&
			   !memcmp(kv->key + plen, "ring", 4)) {
			if (snapshot_ring(kv, s))
				goto nomem;
		} else if (kv->key_len == plen + 4 &&
			   !memcmp(kv->key, prefix, plen) &&
			   !memcmp(kv->key + plen, "pins", 4)) {
			if (snapshot_pins(kv, s))
				goto nomem;
		}
	}
	/* hot/ is read: the counted keys of each member's load document */
	for (i = 0; i < s->n_hosts; i++)
		if (s->hosts[i].valid && s->hosts[i].kind == KS_FHK_MEMBER &&
		    !s->hosts[i].no_load &&
		    snapshot_counted(&s->hosts[i], s, &nt))
			goto nomem;
	free(l);
	return 0;
nomem:
	free(l);
	ks_fleet_snapshot_free(s);
	return -ENOMEM;
}

void ks_fleet_snapshot_free(struct ks_fleet_snapshot *s)
{
	if (s->ring_shards)
		ks_shards_free(s->ring_shards);
	free(s->ring_shards);
	free(s->pins);
	free(s->ring);
	free(s->hosts);
	free(s->hot);
	free(s->refused);
	memset(s, 0, sizeof(*s));
}
