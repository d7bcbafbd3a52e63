// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* routing_doc.c - a routing document into the view (see routing_doc.h). */
#include <errno.h>
#include <stdio.h>
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

/* One element of "keys"; a key without replicas is hot, not steered. */
static int take_key(struct ksc_view *v, json_t *k, __u32 owner_turns, __s64 rev)
{
	json_t *key = json_object_get(k, "key"), *reps, *r;
	const char *hex = json_string_value(json_object_get(k, "hash"));
	struct ksc_hot_in in = { 0 };
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
	in.hash = hash;
	in.owner = (__u16)owner;
	in.owner_turns = owner_turns;
	in.state = KS_HDS_COUNTING;
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
		in.rep[in.nrep++] = (__u16)id;
	}
	if (in.nrep)
		in.state = KS_HDS_ARMED;
	/* a write-hot counter's sub-keys (docs/client.md, "Split counters") */
	if (json_is_true(json_object_get(k, "write_hot")) &&
	    json_integer_value(json_object_get(k, "subkeys")) > 1)
		in.subkeys = (unsigned)json_integer_value(
			json_object_get(k, "subkeys"));
	return ksc_view_hot_set(v, &in, rev);
}

int ksc_view_routing(struct ksc_view *v, const char *doc, size_t len, __s64 rev)
{
	json_t *o = json_loadb(doc, len, 0, NULL), *keys, *set, *x;
	json_int_t turns = 0;
	int ret = 0;
	size_t i;

	if (!v->have_ring)
		return -ENOENT;
	keys = json_object_get(o, "keys");
	set = json_object_get(o, "replica_set");
	x = json_object_get(o, "owner_turns");
	if (x)
		turns = json_is_integer(x) ? json_integer_value(x) : -1;
	if (!json_is_object(o) || !json_is_array(keys) ||
	    (set && !json_is_array(set)) || turns < 0 ||
	    turns > KS_STEER_SCHED) {
		json_decref(o);
		return refuse(v, "not an agent's routing document "
				 "(keys, replica_set, owner_turns)");
	}
	json_array_foreach(set, i, x)
	{
		if (!json_is_string(x) ||
		    ksc_view_every_owner_replica(v, json_string_value(x)) < 0) {
			json_decref(o);
			return refuse(v, "a replica_set entry not kept");
		}
	}
	json_array_foreach(keys, i, x)
	{
		if ((ret = take_key(v, x, (__u32)turns, rev)))
			break;
	}
	json_decref(o);
	if (rev > v->revision)
		v->revision = rev;
	if (!ret)
		v->updates++;
	return ret;
}
