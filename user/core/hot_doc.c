// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* hot_doc.c - hot/<hash> entries, schema 1 (see hot_doc.h). */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/etcd_codec.h"
#include "core/hot_doc.h"
#include "ks_limit.h"
#include "core/ring_doc.h"

static const char *const state_names[KS_HDS_NSTATES] = {
	[KS_HDS_COUNTING] = "counting",
	[KS_HDS_FILLING] = "filling",
	[KS_HDS_ARMED] = "armed",
	[KS_HDS_DIRTY] = "dirty",
};

const char *ks_hot_doc_state_name(unsigned state)
{
	return state < KS_HDS_NSTATES ? state_names[state] : "?";
}

int ks_hot_doc_prefix(const char *cluster, char *buf, size_t len)
{
	int n = snprintf(buf, len, KS_ETCD_ROOT "%s/hot/", cluster);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
}

int ks_hot_doc_key(const char *cluster, __u64 hash, char *buf, size_t len)
{
	int n = snprintf(buf, len, KS_ETCD_ROOT "%s/hot/%016" PRIx64, cluster,
			 (uint64_t)hash);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
}

static int printable(const __u8 *k, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (k[i] <= 0x20 || k[i] >= 0x7f || k[i] == '"' || k[i] == '\\')
			return 0;
	return 1;
}

double ks_rate3(double x)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%.3g", x);
	return strtod(buf, NULL);
}

static json_t *rate(double x)
{
	return json_real(ks_rate3(x));
}

json_t *ks_hot_doc_json(const struct ks_hot_doc *d)
{
	json_t *o = json_object(), *reps = json_array();
	char hash[24];
	__u32 i;

	if (!o || !reps) {
		json_decref(o);
		json_decref(reps);
		return NULL;
	}
	snprintf(hash, sizeof(hash), "%016" PRIx64, (uint64_t)d->hash);
	json_object_set_new(o, "schema", json_integer(KS_HOT_DOC_SCHEMA));
	json_object_set_new(o, "hash", json_string(hash));
	if (d->has_key && printable(d->key, d->len)) {
		json_object_set_new(o, "key",
				    json_stringn((const char *)d->key, d->len));
	} else if (d->has_key) {
		char b64[4 * ((KS_KEY_BUF + 2) / 3) + 1];
		size_t n = ks_etcd_b64_encode(d->key, d->len, b64);

		json_object_set_new(o, "key_b64", json_stringn(b64, n));
	}
	json_object_set_new(o, "owner", json_string(d->owner));
	json_object_set_new(o, "read_hot", json_boolean(d->read_hot));
	json_object_set_new(o, "write_hot", json_boolean(d->write_hot));
	json_object_set_new(o, "pinned", json_boolean(d->pinned));
	json_object_set_new(o, "copies", json_integer(d->copies));
	for (i = 0; i < d->nreplicas && i < KS_MAX_COPIES - 1; i++)
		json_array_append_new(reps, json_string(d->replica[i]));
	json_object_set_new(o, "replicas", reps);
	json_object_set_new(o, "subkeys",
			    json_integer(d->subkeys ? d->subkeys : 1));
	json_object_set_new(o, "state",
			    json_string(ks_hot_doc_state_name(d->state)));
	json_object_set_new(o, "write_seq",
			    json_integer((json_int_t)d->write_seq));
	json_object_set_new(o, "owner_turns", json_integer(d->owner_turns));
	json_object_set_new(o, "reads_per_s", rate(d->reads_ps));
	json_object_set_new(o, "writes_per_s", rate(d->writes_ps));
	/* optional: a reader before the automatic cap ignores it */
	if (d->limit_rate)
		json_object_set_new(o, "limit_per_s",
				    json_integer(d->limit_rate));
	return o;
}

char *ks_hot_doc_encode(const struct ks_hot_doc *d)
{
	json_t *o = ks_hot_doc_json(d);
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

	json_decref(o);
	return s;
}

/* What the hot/ entry says and a load document's "entry" leaves out: the
 * item, the document and the state counting say it (hot_doc.h). */
static const char *const entry_implied[] = {
	"schema",    "hash",        "owner",       "replicas",
	"write_seq", "owner_turns", "reads_per_s", "writes_per_s",
};

/* An entry's fields at their defaults are left out too: a load document
 * lists up to 256 of them, and under churn it is written every interval. */
static const struct {
	const char *name;
	json_int_t value; /* -1: false */
} entry_defaults[] = {
	{ "read_hot", -1 }, { "write_hot", -1 }, { "pinned", -1 },
	{ "copies", 1 },    { "subkeys", 1 },
};

json_t *ks_hot_doc_entry_json(const struct ks_hot_doc *d)
{
	json_t *o = ks_hot_doc_json(d), *v;
	size_t i;

	for (i = 0; o && i < sizeof(entry_implied) / sizeof(entry_implied[0]);
	     i++)
		json_object_del(o, entry_implied[i]);
	for (i = 0; o && i < sizeof(entry_defaults) / sizeof(entry_defaults[0]);
	     i++) {
		v = json_object_get(o, entry_defaults[i].name);
		if (entry_defaults[i].value < 0
			    ? json_is_false(v)
			    : json_integer_value(v) == entry_defaults[i].value)
			json_object_del(o, entry_defaults[i].name);
	}
	if (o && d->state == KS_HDS_COUNTING)
		json_object_del(o, "state");
	return o;
}

int ks_hot_doc_for_clients(const struct ks_hot_doc *d)
{
	return d->state != KS_HDS_COUNTING ||
	       (d->write_hot && d->subkeys > 1) || d->limit_rate;
}

static int bad(char *err, size_t errlen, const char *fmt, const char *a)
{
	snprintf(err, errlen, fmt, a);
	return -EINVAL;
}

static int get_bool(json_t *o, const char *name, __u8 *out)
{
	json_t *v = json_object_get(o, name);

	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return -1;
	*out = json_is_true(v);
	return 0;
}

static int get_count(json_t *o, const char *name, json_int_t max, __u32 *out,
		     int required)
{
	json_t *v = json_object_get(o, name);

	if (!v)
		return required ? -1 : 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > max)
		return -1;
	*out = (__u32)json_integer_value(v);
	return 0;
}

static int get_rate(json_t *o, const char *name, double *out)
{
	json_t *v = json_object_get(o, name);

	if (!v)
		return 0;
	if (!json_is_number(v) || json_number_value(v) < 0 ||
	    !isfinite(json_number_value(v)))
		return -1;
	*out = json_number_value(v);
	return 0;
}

static int decode_key(json_t *o, struct ks_hot_doc *d, char *err, size_t errlen)
{
	json_t *k = json_object_get(o, "key"),
	       *b = json_object_get(o, "key_b64");

	if (k) {
		size_t n = json_string_length(k);

		if (!json_is_string(k) || !n || n > KS_MAX_KEY_LEN)
			return bad(err, errlen,
				   "%s is not a key of 1 to 250 bytes",
				   "\"key\"");
		memcpy(d->key, json_string_value(k), n);
		d->len = (__u16)n;
		d->has_key = 1;
	} else if (b) {
		unsigned char raw[KS_KEY_BUF * 2];
		size_t n = json_string_length(b);
		int got;

		if (!json_is_string(b) || n > 4 * ((KS_MAX_KEY_LEN + 2) / 3))
			return bad(err, errlen, "%s is not base64 of a key",
				   "\"key_b64\"");
		got = ks_etcd_b64_decode(json_string_value(b), n, raw);
		if (got <= 0 || got > KS_MAX_KEY_LEN)
			return bad(err, errlen, "%s is not base64 of a key",
				   "\"key_b64\"");
		memcpy(d->key, raw, (size_t)got);
		d->len = (__u16)got;
		d->has_key = 1;
	}
	return 0;
}

static int decode_replicas(json_t *o, struct ks_hot_doc *d, char *err,
			   size_t errlen)
{
	json_t *r = json_object_get(o, "replicas"), *v;
	size_t i;

	if (!r)
		return 0;
	if (!json_is_array(r) || json_array_size(r) > KS_MAX_COPIES - 1)
		return bad(err, errlen, "%s is not a list of up to 7 replicas",
			   "\"replicas\"");
	json_array_foreach(r, i, v)
	{
		if (!json_is_string(v) || !json_string_length(v) ||
		    json_string_length(v) >= KS_HOT_DOC_OWNER)
			return bad(err, errlen, "%s holds a bad replica",
				   "\"replicas\"");
		snprintf(d->replica[i], KS_HOT_DOC_OWNER, "%s",
			 json_string_value(v));
	}
	d->nreplicas = (__u32)json_array_size(r);
	return 0;
}

int ks_hot_doc_decode(const char *json, size_t len, __u64 want_hash,
		      struct ks_hot_doc *d, char *err, size_t errlen)
{
	json_error_t je;
	json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	int rc;

	if (!o || !json_is_object(o)) {
		memset(d, 0, sizeof(*d));
		snprintf(err, errlen, "not a JSON object%s%s", o ? "" : ": ",
			 o ? "" : je.text);
		json_decref(o);
		return -EINVAL;
	}
	rc = ks_hot_doc_decode_json(o, want_hash, d, err, errlen);
	json_decref(o);
	return rc;
}

int ks_hot_doc_decode_entry(json_t *entry, __u64 hash, const char *owner,
			    struct ks_hot_doc *d, char *err, size_t errlen)
{
	json_t *o = json_is_object(entry) ? json_copy(entry) : NULL;
	char hex[24];
	int rc;

	if (!o) {
		memset(d, 0, sizeof(*d));
		snprintf(err, errlen, "\"entry\" is not a JSON object");
		return -EINVAL;
	}
	snprintf(hex, sizeof(hex), "%016" PRIx64, (uint64_t)hash);
	json_object_set_new(o, "schema", json_integer(KS_HOT_DOC_SCHEMA));
	json_object_set_new(o, "hash", json_string(hex));
	json_object_set_new(o, "owner", json_string(owner));
	/* what ks_hot_doc_entry_json leaves out at its default */
	if (!json_object_get(o, "copies"))
		json_object_set_new(o, "copies", json_integer(1));
	if (!json_object_get(o, "state"))
		json_object_set_new(o, "state", json_string("counting"));
	rc = ks_hot_doc_decode_json(o, hash, d, err, errlen);
	json_decref(o);
	if (!rc && ks_hot_doc_for_clients(d)) {
		snprintf(
			err, errlen,
			"\"entry\" is one a client acts on (its place is hot/)");
		rc = -EINVAL;
	}
	return rc;
}

int ks_hot_doc_decode_json(json_t *o, __u64 want_hash, struct ks_hot_doc *d,
			   char *err, size_t errlen)
{
	json_t *v;
	const char *h, *st;
	char *end;
	unsigned i;

	memset(d, 0, sizeof(*d));
	v = json_object_get(o, "schema");
	if (!json_is_integer(v) || json_integer_value(v) != KS_HOT_DOC_SCHEMA) {
		bad(err, errlen, "%s is not 1 (a schema this reader knows)",
		    "\"schema\"");
		goto out;
	}
	h = json_string_value(json_object_get(o, "hash"));
	if (!h || strlen(h) != 16 || strspn(h, "0123456789abcdef") != 16) {
		bad(err, errlen, "%s is not 16 lowercase hex digits",
		    "\"hash\"");
		goto out;
	}
	d->hash = strtoull(h, &end, 16);
	if (want_hash && d->hash != want_hash) {
		snprintf(err, errlen,
			 "\"hash\" %s is not the key's hash %016" PRIx64, h,
			 (uint64_t)want_hash);
		goto out;
	}
	v = json_object_get(o, "owner");
	if (!json_is_string(v) || !json_string_length(v) ||
	    json_string_length(v) >= KS_HOT_DOC_OWNER) {
		bad(err, errlen, "%s is missing or not a host", "\"owner\"");
		goto out;
	}
	snprintf(d->owner, sizeof(d->owner), "%s", json_string_value(v));
	st = json_string_value(json_object_get(o, "state"));
	for (i = 0; st && i < KS_HDS_NSTATES; i++)
		if (!strcmp(st, state_names[i]))
			break;
	if (!st || i == KS_HDS_NSTATES) {
		bad(err, errlen, "%s is not counting, filling, armed or dirty",
		    "\"state\"");
		goto out;
	}
	d->state = (__u8)i;
	if (get_count(o, "copies", KS_MAX_COPIES, &d->copies, 1) ||
	    !d->copies) {
		bad(err, errlen, "%s is missing or not 1..8", "\"copies\"");
		goto out;
	}
	if (get_count(o, "subkeys", 65536, &d->subkeys, 0) ||
	    get_count(o, "owner_turns", KS_STEER_SCHED, &d->owner_turns, 0) ||
	    get_bool(o, "read_hot", &d->read_hot) ||
	    get_bool(o, "write_hot", &d->write_hot) ||
	    get_bool(o, "pinned", &d->pinned) ||
	    get_rate(o, "reads_per_s", &d->reads_ps) ||
	    get_rate(o, "writes_per_s", &d->writes_ps) ||
	    get_count(o, "limit_per_s", KS_LIMIT_RATE_MAX, &d->limit_rate, 0)) {
		bad(err, errlen, "%s",
		    "a field has the wrong type (subkeys, owner_turns, read_hot, write_hot, pinned, reads_per_s, writes_per_s, limit_per_s)");
		goto out;
	}
	v = json_object_get(o, "write_seq");
	if (v && (!json_is_integer(v) || json_integer_value(v) < 0)) {
		bad(err, errlen, "%s is not a count", "\"write_seq\"");
		goto out;
	}
	d->write_seq = v ? (__u64)json_integer_value(v) : 0;
	if (decode_key(o, d, err, errlen) || decode_replicas(o, d, err, errlen))
		goto out;
	return 0;
out:
	return -EINVAL;
}

int ks_rate_moved(double published, double now)
{
	double d = fabs(now - published);

	return d > 1.0 && d > KS_HOT_DOC_MOVE * published;
}

int ks_hot_doc_same(const struct ks_hot_doc *a, const struct ks_hot_doc *b)
{
	__u32 i;

	if (a->hash != b->hash || a->has_key != b->has_key ||
	    a->len != b->len || memcmp(a->key, b->key, a->len) ||
	    a->read_hot != b->read_hot || a->write_hot != b->write_hot ||
	    a->pinned != b->pinned || a->state != b->state ||
	    a->copies != b->copies || a->subkeys != b->subkeys ||
	    a->nreplicas != b->nreplicas || a->write_seq != b->write_seq ||
	    a->owner_turns != b->owner_turns ||
	    a->limit_rate != b->limit_rate || strcmp(a->owner, b->owner))
		return 0;
	for (i = 0; i < a->nreplicas; i++)
		if (strcmp(a->replica[i], b->replica[i]))
			return 0;
	return 1;
}

int ks_hot_doc_rates_moved(const struct ks_hot_doc *a,
			   const struct ks_hot_doc *b)
{
	return ks_rate_moved(a->reads_ps, b->reads_ps) ||
	       ks_rate_moved(a->writes_ps, b->writes_ps);
}
