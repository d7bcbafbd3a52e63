// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* routing_doc.c - a routing document into the view (see routing_doc.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "client/routing_doc.h"
#include "core/fleet_view.h"
#include "core/hot_doc.h"

static int refuse(struct ksc_view *v, const char *what)
{
	snprintf(v->why, sizeof(v->why), "routing document refused: %s", what);
	v->refused++;
	return -EBADMSG;
}

/*
 * One element of "keys" into in; a key without replicas is hot, not
 * steered. Nothing in the view changes but the interned server names (a
 * name says nothing about routing).
 */
static int parse_key(struct ksc_view *v, json_t *k, __u32 owner_turns,
		     struct ksc_hot_in *in)
{
	json_t *key = json_object_get(k, "key"), *reps, *r;
	const char *hex = json_string_value(json_object_get(k, "hash"));
	uint64_t hash;
	unsigned owner;
	size_t i, klen;
	int id;

	if (!json_is_string(key) || !hex || ks_fleet_hash_parse(hex, &hash))
		return refuse(v, "a key without \"key\" or a 16-hex \"hash\"");
	klen = json_string_length(key);
	if (!klen || klen > KS_MAX_KEY_LEN ||
	    ksc_key_hash(json_string_value(key), klen) != hash)
		return refuse(v, "a key whose hash is not ks_key_hash's");
	owner = ksc_view_owner(v, json_string_value(key), klen);
	if (owner == KSC_NONE)
		return -ENOENT;
	memset(in, 0, sizeof(*in));
	in->hash = hash;
	in->owner = (__u16)owner;
	in->owner_turns = owner_turns;
	in->state = KS_HDS_COUNTING;
	reps = json_object_get(k, "replicas");
	json_array_foreach(reps, i, r)
	{
		if (i == KS_MAX_COPIES - 1)
			return refuse(v, "more replicas than copies");
		id = json_is_string(r)
			     ? ksc_view_server(v, json_string_value(r))
			     : -EINVAL;
		if (id < 0)
			return refuse(v, "a replica that is not host:port");
		in->rep[in->nrep++] = (__u16)id;
	}
	if (in->nrep)
		in->state = KS_HDS_ARMED;
	/* a write-hot counter's sub-keys (docs/client.md, "Split counters") */
	if (json_is_true(json_object_get(k, "write_hot")) &&
	    json_integer_value(json_object_get(k, "subkeys")) > 1)
		in->subkeys = (unsigned)json_integer_value(
			json_object_get(k, "subkeys"));
	return 0;
}

/* Whether id is in the view's replica_set already (the room check). */
static int static_has(const struct ksc_view *v, unsigned id)
{
	unsigned i;

	for (i = 0; i < v->nstatic; i++)
		if (v->static_reps[i] == id)
			return 1;
	return 0;
}

int ksc_routing_parse(struct ksc_view *v, const char *doc, size_t len,
		      struct ksc_routing_plan *p)
{
	json_t *o = json_loadb(doc, len, 0, NULL), *keys, *set, *x;
	json_int_t turns = 0;
	unsigned fresh = 0;
	int ret = 0, id;
	size_t i;

	memset(p, 0, sizeof(*p));
	if (!v->have_ring) {
		json_decref(o);
		return -ENOENT;
	}
	keys = json_object_get(o, "keys");
	set = json_object_get(o, "replica_set");
	x = json_object_get(o, "owner_turns");
	if (x)
		turns = json_is_integer(x) ? json_integer_value(x) : -1;
	if (!json_is_object(o) || !json_is_array(keys) ||
	    (set && !json_is_array(set)) || turns < 0 ||
	    turns > KS_STEER_SCHED) {
		ret = refuse(v, "not an agent's routing document "
				"(keys, replica_set, owner_turns)");
		goto out;
	}
	json_array_foreach(set, i, x)
	{
		id = json_is_string(x)
			     ? ksc_view_server(v, json_string_value(x))
			     : -EINVAL;
		if (id < 0 || p->nset == KSC_SEEN_MAX) {
			ret = refuse(v, "a replica_set entry not kept");
			goto out;
		}
		fresh += !static_has(v, (unsigned)id);
		p->set[p->nset++] = (__u16)id;
	}
	/* checked here so that applying the set cannot fail halfway */
	if (v->nstatic + fresh > KSC_SEEN_MAX) {
		ret = refuse(v, "a replica_set entry not kept");
		goto out;
	}
	p->in = calloc(json_array_size(keys) ? json_array_size(keys) : 1,
		       sizeof(*p->in));
	if (!p->in) {
		ret = -ENOMEM;
		goto out;
	}
	json_array_foreach(keys, i, x)
	{
		ret = parse_key(v, x, (__u32)turns, &p->in[p->n]);
		if (ret)
			goto out;
		p->n++;
	}
out:
	json_decref(o);
	if (ret)
		ksc_routing_plan_free(p);
	return ret;
}

int ksc_routing_apply(struct ksc_view *v, const struct ksc_routing_plan *p,
		      __s64 rev)
{
	int ret = 0, err;
	size_t i;

	for (i = 0; i < p->nset; i++)
		ksc_view_every_owner_replica(v, v->srv[p->set[i]].name);
	/* every key, even past an error: hot_set's -EBADMSG (a key's
	 * replicas over time) still set the entry, and -ENOMEM leaves the
	 * rest as good as the view can make them */
	for (i = 0; i < p->n; i++) {
		err = ksc_view_hot_set(v, &p->in[i], rev);
		if (err && !ret)
			ret = err;
	}
	if (rev > v->revision)
		v->revision = rev;
	if (!ret)
		v->updates++;
	return ret;
}

void ksc_routing_plan_free(struct ksc_routing_plan *p)
{
	free(p->in);
	memset(p, 0, sizeof(*p));
}

int ksc_view_routing(struct ksc_view *v, const char *doc, size_t len, __s64 rev)
{
	struct ksc_routing_plan p;
	int ret = ksc_routing_parse(v, doc, len, &p);

	if (ret)
		return ret;
	ret = ksc_routing_apply(v, &p, rev);
	ksc_routing_plan_free(&p);
	return ret;
}
