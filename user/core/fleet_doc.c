// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* fleet_doc.c - etcd's documents into a fleet snapshot (see fleet_doc.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
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

void ks_fleet_host_decode(const char *self, const char *raw, size_t len,
			  struct ks_fleet_host *h)
{
	json_error_t je;
	json_t *doc, *rr;

	memset(h, 0, sizeof(*h));
	snprintf(h->self, sizeof(h->self), "%s", self);
	h->raw = raw;
	h->raw_len = len;
	doc = json_loadb(raw, len, 0, &je);
	if (!json_is_object(doc)) {
		refuse(h->why, sizeof(h->why), "not a JSON object");
		goto out;
	}
	if (!schema_one(doc)) {
		refuse(h->why, sizeof(h->why), "schema is not 1");
		goto out;
	}
	rr = json_object_get(doc, "ring_revision");
	if (rr && !json_is_integer(rr)) {
		refuse(h->why, sizeof(h->why),
		       "ring_revision is not an integer");
		goto out;
	}
	h->ring_rev = json_integer_value(rr);
	rr = json_object_get(doc, "purge");
	if (rr && (!json_is_string(rr) ||
		   json_string_length(rr) >= sizeof(h->purge))) {
		refuse(h->why, sizeof(h->why),
		       "purge is not a state name (idle, purging, ...)");
		goto out;
	}
	if (rr)
		snprintf(h->purge, sizeof(h->purge), "%s",
			 json_string_value(rr));
	if (host_rates(doc, h) || host_top(json_object_get(doc, "top"), h) ||
	    host_replicas(json_object_get(doc, "replicas"), h))
		goto out;
	h->valid = 1;
out:
	json_decref(doc);
}

int ks_fleet_hot_decode(const char *hash, const char *raw, size_t len,
			struct ks_fleet_hot *e, char *why, size_t whylen)
{
	struct ks_hot_doc d;
	uint64_t want;
	unsigned i;

	memset(e, 0, sizeof(*e));
	if (ks_fleet_hash_parse(hash, &want))
		return refuse(
			why, whylen,
			"the key's last part is not 16 lowercase hex digits");
	/* the one reader of the schema (core/hot_doc.h), as clients use it */
	if (ks_hot_doc_decode(raw, len, want, &d, why, whylen))
		return -EBADMSG;
	e->hash = d.hash;
	if (d.has_key)
		ks_key_text(d.key, d.len, e->key, sizeof(e->key));
	snprintf(e->owner, sizeof(e->owner), "%s", d.owner);
	e->read_hot = d.read_hot;
	e->write_hot = d.write_hot;
	e->pinned = d.pinned;
	e->copies = d.copies;
	e->subkeys = d.subkeys ? d.subkeys : 1;
	e->write_seq = (int64_t)d.write_seq;
	e->state = d.state;
	e->reads = d.reads_ps;
	e->writes = d.writes_ps;
	e->has_owner = d.has_owner_rates;
	e->owner_hits = d.owner_hits_ps;
	e->owner_misses = d.owner_misses_ps;
	e->n_reps = d.nreplicas;
	for (i = 0; i < d.nreplicas && i < KS_FLEET_REPLICAS; i++)
		snprintf(e->replicas[i], sizeof(e->replicas[i]), "%s",
			 d.replica[i]);
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
	ks_ring_doc_free(&d);
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

int ks_fleet_snapshot_decode(const struct ks_etcd_kv *kvs, size_t n,
			     const char *prefix, int64_t rev,
			     struct ks_fleet_snapshot *s)
{
	size_t i, plen = strlen(prefix), nh = 1, nt = 1;
	const char *rest;

	memset(s, 0, sizeof(*s));
	s->store_rev = rev;
	/* Counted first: an entry is kilobytes, a fleet thousands of keys. */
	for (i = 0; i < n; i++) {
		nh += under(&kvs[i], prefix, plen, "hosts/") != NULL;
		nt += under(&kvs[i], prefix, plen, "hot/") != NULL;
	}
	s->hosts = calloc(nh, sizeof(*s->hosts));
	s->hot = calloc(nt, sizeof(*s->hot));
	s->refused = calloc(nt, sizeof(*s->refused));
	if (!s->hosts || !s->hot || !s->refused)
		goto nomem;
	for (i = 0; i < n; i++) {
		const struct ks_etcd_kv *kv = &kvs[i];

		if ((rest = under(kv, prefix, plen, "hosts/"))) {
			struct ks_fleet_host *h = &s->hosts[s->n_hosts++];

			ks_fleet_host_decode(rest, kv->value, kv->value_len, h);
			h->mod_rev = kv->mod_revision;
		} else if ((rest = under(kv, prefix, plen, "hot/"))) {
			snapshot_hot(kv, rest, s);
		} else if (kv->key_len == plen + 4 &&
			   !memcmp(kv->key, prefix, plen) &&
			   !memcmp(kv->key + plen, "ring", 4)) {
			if (snapshot_ring(kv, s))
				goto nomem;
		}
	}
	return 0;
nomem:
	ks_fleet_snapshot_free(s);
	return -ENOMEM;
}

void ks_fleet_snapshot_free(struct ks_fleet_snapshot *s)
{
	free(s->ring);
	free(s->hosts);
	free(s->hot);
	free(s->refused);
	memset(s, 0, sizeof(*s));
}
