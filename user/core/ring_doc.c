// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* ring_doc.c - the ring document of etcd (see ring_doc.h, docs/fleet.md). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/ring_doc.h"
#include "core/ring_points.h"
#include "util/file.h"

int ks_cluster_check(const char *name, char *err, size_t errlen)
{
	size_t i, n = name ? strlen(name) : 0;

	if (!n || n > KS_CLUSTER_MAX) {
		snprintf(
			err, errlen,
			"--cluster '%s' is %zu characters; give 1 to %d of letters, digits, '.', '-', '_'",
			name ? name : "", n, KS_CLUSTER_MAX);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		char c = name[i];

		if (!isalnum((unsigned char)c) && c != '.' && c != '-' &&
		    c != '_') {
			snprintf(
				err, errlen,
				"--cluster '%s' has the character '%c'; give letters, digits, '.', '-', '_' (it names the etcd prefix /keysteer/NAME/)",
				name, isprint((unsigned char)c) ? c : '?');
			return -EINVAL;
		}
	}
	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		snprintf(
			err, errlen,
			"--cluster '%s' is not a name; give letters, digits, '.', '-', '_'",
			name);
		return -EINVAL;
	}
	return 0;
}

int ks_ring_doc_key(const char *cluster, char *buf, size_t len)
{
	int n = snprintf(buf, len, KS_ETCD_ROOT "%s/ring", cluster);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
}

const char *ks_dist_key_hash(__u32 dist)
{
	if (dist == KS_DIST_PYMEMCACHE || dist == KS_DIST_PYMEMCACHE_BYTES)
		return "murmur3_32";
	return ks_key_hash_name(ks_dist_default_key_hash(dist));
}

/* The key hash a built ring places keys by. */
static const char *meta_key_hash(const struct ks_ring_meta *m)
{
	if (m->dist == KS_DIST_PYMEMCACHE ||
	    m->dist == KS_DIST_PYMEMCACHE_BYTES)
		return ks_dist_key_hash(m->dist);
	return ks_key_hash_name(m->key_hash);
}

int ks_ring_doc_encode(const struct ks_ring *r, const struct ks_shards *s,
		       const char *by, const char *at, char **out, size_t *len)
{
	return ks_ring_doc_encode_force(r, s, by, at, 0, out, len);
}

int ks_ring_doc_encode_force(const struct ks_ring *r, const struct ks_shards *s,
			     const char *by, const char *at, int force,
			     char **out, size_t *len)
{
	return ks_ring_doc_encode_ext(r, s, by, at, force, 0, out, len);
}

/* [[value, shard], ...], the document written compact: a pair takes at
 * most 17 bytes, so etcd's default 1.5 MiB request takes about 90,000
 * points (1024 shards' 163,840 need --max-request-bytes raised); with
 * the two-space indent of schema 1 a pair would take 40. */
static json_t *points_json(const struct ks_ring_half *h)
{
	json_t *arr = json_array();
	__u32 i;

	for (i = 0; arr && i < h->meta.npoints; i++) {
		json_t *p = json_array();

		if (!p ||
		    json_array_append_new(p,
					  json_integer(h->points[i].value)) ||
		    json_array_append_new(p,
					  json_integer(h->points[i].shard)) ||
		    json_array_append_new(arr, p)) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

int ks_ring_doc_encode_ext(const struct ks_ring *r, const struct ks_shards *s,
			   const char *by, const char *at, int force,
			   int clients_ks, char **out, size_t *len)
{
	const struct ks_ring_meta *m = &r->half->meta;
	json_t *root = json_object(), *arr = json_array();
	char digest[20];
	int bad = !root || !arr;
	__u32 i;

	snprintf(digest, sizeof(digest), "%016llx",
		 (unsigned long long)m->digest);
	bad |= json_object_set_new(
		root, "schema",
		json_integer(m->planned ? KS_RING_DOC_SCHEMA_POINTS
					: KS_RING_DOC_SCHEMA));
	bad |= json_object_set_new(root, "kind", json_string(KS_RING_DOC_KIND));
	bad |= json_object_set_new(root, "distribution",
				   json_string(ks_dist_name(m->dist)));
	bad |= json_object_set_new(root, "key_hash",
				   json_string(meta_key_hash(m)));
	/* added to schema 1: a reader that does not know it would place keys
	 * elsewhere, but it refuses the digest first */
	if (m->tagged) {
		char tag[3] = { (char)m->hash_tag[0], (char)m->hash_tag[1], 0 };

		bad |= json_object_set_new(root, "hash_tag", json_string(tag));
	}
	if (m->dist == KS_DIST_VNODE)
		bad |= json_object_set_new(root, "vnodes",
					   json_integer(r->vnodes));
	for (i = 0; arr && i < s->n; i++) {
		const struct ks_shard *sh = &s->v[i];
		json_t *o = json_object();

		bad |= !o;
		bad |= json_object_set_new(o, "host", json_string(sh->host));
		bad |= json_object_set_new(o, "port", json_integer(sh->port));
		bad |= json_object_set_new(o, "weight",
					   json_integer(sh->weight));
		if (sh->name[0])
			bad |= json_object_set_new(o, "name",
						   json_string(sh->name));
		bad |= json_array_append_new(arr, o);
	}
	bad |= json_object_set_new(root, "shards", arr);
	bad |= json_object_set_new(root, "points", json_integer(m->npoints));
	bad |= json_object_set_new(root, "digest", json_string(digest));
	if (m->planned) {
		json_t *pts = points_json(r->half);

		bad |= !pts;
		bad |= json_object_set_new(root, "explicit_points", pts);
	}
	if (clients_ks)
		bad |= json_object_set_new(root, "clients",
					   json_string(KS_RING_DOC_CLIENTS_KS));
	if (by)
		bad |= json_object_set_new(root, "written_by", json_string(by));
	if (at)
		bad |= json_object_set_new(root, "written_at", json_string(at));
	/* only when set: a document without it is the ordinary case, and
	 * the text of every document written before stays the same */
	if (force)
		bad |= json_object_set_new(root, "force", json_true());
	*out = bad ? NULL
		   : json_dumps(root,
				(m->planned ? JSON_COMPACT : JSON_INDENT(2)) |
					JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!*out)
		return -ENOMEM;
	*len = strlen(*out);
	/* a final newline: 'etcdctl get' and 'agent ring get' print it whole */
	{
		char *t = realloc(*out, *len + 2);

		if (!t) {
			free(*out);
			*out = NULL;
			return -ENOMEM;
		}
		t[(*len)++] = '\n';
		t[*len] = '\0';
		*out = t;
	}
	return 0;
}

static int bad(char *err, size_t errlen, const char *fmt, const char *a)
{
	snprintf(err, errlen, fmt, a);
	return -EBADMSG;
}

/* A string field of at most max-1 bytes with no control characters. */
static int get_str(json_t *o, const char *name, int required, char *dst,
		   size_t max, const char *what, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, name);
	const char *s;
	size_t i, n;

	if (!v) {
		if (!required) {
			if (dst)
				dst[0] = '\0';
			return 0;
		}
		snprintf(err, errlen, "the ring document has no \"%s\" (%s)",
			 name, what);
		return -EBADMSG;
	}
	if (!json_is_string(v)) {
		snprintf(err, errlen,
			 "the ring document's \"%s\" is not a string (%s)",
			 name, what);
		return -EBADMSG;
	}
	s = json_string_value(v);
	n = json_string_length(v);
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return bad(
				err, errlen,
				"the ring document's \"%s\" has a control character",
				name);
	if (dst) {
		if (n >= max) {
			snprintf(
				err, errlen,
				"the ring document's \"%s\" is %zu bytes, more than %zu",
				name, n, max - 1);
			return -EBADMSG;
		}
		memcpy(dst, s, n + 1);
	}
	return 0;
}

/* A whole number field in [lo, hi]. */
static int get_int(json_t *o, const char *name, long long lo, long long hi,
		   long long *out, const char *where, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, name);

	if (!v || !json_is_integer(v)) {
		snprintf(err, errlen,
			 "%s%s\"%s\" is %s; give a whole number %lld..%lld",
			 where, where[0] ? " " : "the ring document's ", name,
			 v ? "not a whole number" : "missing", lo, hi);
		return -EBADMSG;
	}
	*out = json_integer_value(v);
	if (*out < lo || *out > hi) {
		snprintf(err, errlen,
			 "%s%s\"%s\" %lld is out of range %lld..%lld", where,
			 where[0] ? " " : "the ring document's ", name, *out,
			 lo, hi);
		return -EBADMSG;
	}
	return 0;
}

/* "host:port:weight[ name]\n" per shard, for the shard file parser, which
 * applies every rule of a shard list (and names the entry by its line:
 * the shard's index + 1). */
static int shards_text(json_t *arr, char **text, char *err, size_t errlen)
{
	size_t i, n = json_array_size(arr), cap = n * 560 + 1, off = 0;
	char *t = malloc(cap), where[48];

	if (!t) {
		snprintf(err, errlen,
			 "out of memory reading the ring document");
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		json_t *o = json_array_get(arr, i);
		char host[KS_SHARD_HOST_MAX + 1], name[KS_SHARD_NAME_MAX + 1];
		long long port, weight;
		int rc;
		size_t k;

		snprintf(where, sizeof(where),
			 "the ring document's shards[%zu]", i);
		if (!json_is_object(o)) {
			rc = bad(err, errlen, "%s is not an object", where);
			goto fail;
		}
		rc = get_str(o, "host", 1, host, sizeof(host),
			     "a host name or IPv4 address", err, errlen);
		if (!rc)
			rc = get_str(o, "name", 0, name, sizeof(name),
				     "the shard's name", err, errlen);
		if (rc) {
			/* say which shard */
			char tmp[KS_ERRLEN_DOC];

			snprintf(tmp, sizeof(tmp), "%s", err);
			snprintf(err, errlen, "shards[%zu]: %s", i, tmp);
			goto fail;
		}
		rc = get_int(o, "port", 1, 65535, &port, where, err, errlen);
		if (!rc) {
			if (json_object_get(o, "weight"))
				rc = get_int(o, "weight", 1,
					     KS_SHARD_WEIGHT_MAX, &weight,
					     where, err, errlen);
			else
				weight = 1;
		}
		if (rc)
			goto fail;
		/* what would split the line: the parser checks the rest */
		for (k = 0; host[k]; k++)
			if (isspace((unsigned char)host[k]) || host[k] == ':' ||
			    host[k] == '#' || host[k] == ',') {
				rc = bad(
					err, errlen,
					"%s host has a space, ':', '#' or ','; give a host name or IPv4 address",
					where);
				goto fail;
			}
		for (k = 0; name[k]; k++)
			if (isspace((unsigned char)name[k]) || name[k] == '#') {
				rc = bad(
					err, errlen,
					"%s name has a space or '#'; a shard name is one word",
					where);
				goto fail;
			}
		off += (size_t)snprintf(t + off, cap - off,
					"%s:%lld:%lld%s%s\n", host, port,
					weight, name[0] ? " " : "", name);
	}
	*text = t;
	return 0;
fail:
	free(t);
	return -EBADMSG;
}

/* "explicit_points" of schema 2 into d->pts; schema 1 must not have them
 * (a reader of schema 1 would ignore them and place keys elsewhere, and
 * only its digest check would say so). */
static int get_points(json_t *root, struct ks_ring_doc *d, char *err,
		      size_t errlen)
{
	json_t *arr = json_object_get(root, "explicit_points");
	size_t i, n;

	if (d->schema == KS_RING_DOC_SCHEMA) {
		if (arr) {
			snprintf(
				err, errlen,
				"the ring document has explicit_points with schema %d; a ring of explicit points is schema %d",
				KS_RING_DOC_SCHEMA, KS_RING_DOC_SCHEMA_POINTS);
			return -EBADMSG;
		}
		return 0;
	}
	n = json_is_array(arr) ? json_array_size(arr) : 0;
	if (!n || n > KS_RING_MAX_POINTS) {
		snprintf(
			err, errlen,
			"the ring document of schema %d has %s \"explicit_points\"; give an array of 1 to %d [value, shard] pairs",
			KS_RING_DOC_SCHEMA_POINTS,
			!arr                  ? "no"
			: !json_is_array(arr) ? "a non-array"
			: n                   ? "too many"
					      : "empty",
			KS_RING_MAX_POINTS);
		return -EBADMSG;
	}
	d->pts = calloc(n, sizeof(*d->pts));
	if (!d->pts) {
		snprintf(err, errlen,
			 "out of memory reading the ring document");
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		json_t *p = json_array_get(arr, i), *v, *sh;

		v = json_array_get(p, 0);
		sh = json_array_get(p, 1);
		if (!json_is_array(p) || json_array_size(p) != 2 ||
		    !json_is_integer(v) || !json_is_integer(sh) ||
		    json_integer_value(v) < 0 ||
		    json_integer_value(v) > 0xffffffffLL ||
		    json_integer_value(sh) < 0 ||
		    json_integer_value(sh) >= KS_MAX_SHARDS) {
			snprintf(
				err, errlen,
				"the ring document's explicit_points[%zu] is not [value 0..4294967295, shard 0..%d]",
				i, KS_MAX_SHARDS - 1);
			return -EBADMSG;
		}
		d->pts[i].value = (__u32)json_integer_value(v);
		d->pts[i].shard = (__u32)json_integer_value(sh);
	}
	d->npts = (__u32)n;
	return 0;
}

int ks_ring_doc_decode(const char *buf, size_t len, struct ks_ring_doc *d,
		       char *err, size_t errlen)
{
	json_error_t je;
	json_t *root, *arr;
	char dist[32], kh[32], digest[24], *text = NULL, *end;
	long long v;
	int rc = -EBADMSG;

	memset(d, 0, sizeof(*d));
	d->shards.self = KS_NO_SHARD;
	if (len > KS_RING_DOC_MAX) {
		snprintf(err, errlen,
			 "the ring document is %zu bytes, more than %d", len,
			 KS_RING_DOC_MAX);
		return -EBADMSG;
	}
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		snprintf(err, errlen,
			 "the ring document is not JSON: %s at byte %d",
			 je.text, je.position);
		return -EBADMSG;
	}
	if (!json_is_object(root)) {
		snprintf(err, errlen, "the ring document is not a JSON object");
		goto out;
	}
	if (get_int(root, "schema", 1, 1000000, &v, "", err, errlen))
		goto out;
	if (v != KS_RING_DOC_SCHEMA && v != KS_RING_DOC_SCHEMA_POINTS) {
		snprintf(
			err, errlen,
			"the ring document has schema %lld; this agent reads schemas %d and %d (upgrade it, or write the ring with this agent's 'ring set')",
			v, KS_RING_DOC_SCHEMA, KS_RING_DOC_SCHEMA_POINTS);
		goto out;
	}
	d->schema = (int)v;
	if (get_str(root, "kind", 1, kh, sizeof(kh), "\"" KS_RING_DOC_KIND "\"",
		    err, errlen))
		goto out;
	if (strcmp(kh, KS_RING_DOC_KIND)) {
		snprintf(err, errlen,
			 "the ring document's kind is '%s', not '%s'", kh,
			 KS_RING_DOC_KIND);
		goto out;
	}
	if (get_str(root, "distribution", 1, dist, sizeof(dist),
		    "ketama, twemproxy, twemproxy-md5, vnode or modula", err,
		    errlen))
		goto out;
	{
		enum ks_dist dd;
		char sub[200];

		if (ks_dist_parse(dist, &dd, sub, sizeof(sub))) {
			snprintf(err, errlen,
				 "the ring document's distribution: %s", sub);
			goto out;
		}
		d->dist = dd;
	}
	if (get_str(root, "key_hash", 1, kh, sizeof(kh),
		    "md5, fnv1a_64 or another of twemproxy's", err, errlen))
		goto out;
	d->key.hash = -1;
	if (d->dist == KS_DIST_PYMEMCACHE ||
	    d->dist == KS_DIST_PYMEMCACHE_BYTES) {
		if (strcmp(kh, ks_dist_key_hash(d->dist))) {
			snprintf(
				err, errlen,
				"the ring document's key_hash '%s' is not the key hash of %s (%s)",
				kh, dist, ks_dist_key_hash(d->dist));
			goto out;
		}
	} else {
		__u32 k;
		char sub[200];

		if (ks_key_hash_parse(kh, &k, sub, sizeof(sub))) {
			snprintf(err, errlen,
				 "the ring document's key_hash: %s", sub);
			goto out;
		}
		d->key.hash = (int)k;
	}
	{
		char tag[8], sub[300];

		if (get_str(root, "hash_tag", 0, tag, sizeof(tag),
			    "two characters", err, errlen))
			goto out;
		if (tag[0] && ks_ring_key_tag(&d->key, tag, sub, sizeof(sub))) {
			snprintf(err, errlen,
				 "the ring document's hash_tag: %s", sub);
			goto out;
		}
	}
	if (d->dist == KS_DIST_VNODE) {
		if (get_int(root, "vnodes", 1, KS_RING_MAX_POINTS, &v, "", err,
			    errlen))
			goto out;
		d->vnodes = (__u32)v;
	} else if (json_object_get(root, "vnodes")) {
		snprintf(
			err, errlen,
			"the ring document has vnodes, which only the vnode distribution takes, with %s",
			dist);
		goto out;
	}
	arr = json_object_get(root, "shards");
	if (!json_is_array(arr) || !json_array_size(arr) ||
	    json_array_size(arr) > KS_MAX_SHARDS) {
		snprintf(
			err, errlen,
			"the ring document's \"shards\" is %s; give an array of 1 to %d shards",
			!arr                   ? "missing"
			: !json_is_array(arr)  ? "not an array"
			: json_array_size(arr) ? "too long"
					       : "empty",
			KS_MAX_SHARDS);
		goto out;
	}
	rc = shards_text(arr, &text, err, errlen);
	if (rc)
		goto out;
	rc = ks_shards_parse_text("the ring document's shard", text, &d->shards,
				  err, errlen);
	free(text);
	if (rc) {
		rc = rc == -ENOMEM ? rc : -EBADMSG;
		goto out;
	}
	rc = -EBADMSG;
	if (get_int(root, "points", 0, KS_RING_MAX_POINTS, &v, "", err, errlen))
		goto out;
	d->npoints = (__u32)v;
	if (get_str(root, "digest", 1, digest, sizeof(digest), "16 hex digits",
		    err, errlen))
		goto out;
	d->digest = strtoull(digest, &end, 16);
	if (strlen(digest) != 16 || *end ||
	    strspn(digest, "0123456789abcdef") != 16) {
		snprintf(err, errlen,
			 "the ring document's digest '%s' is not 16 hex digits",
			 digest);
		goto out;
	}
	if (get_str(root, "written_by", 0, d->written_by, sizeof(d->written_by),
		    "who wrote it", err, errlen) ||
	    get_str(root, "written_at", 0, d->written_at, sizeof(d->written_at),
		    "when", err, errlen))
		goto out;
	{
		json_t *f = json_object_get(root, "force");

		/* a string "false" read as set would purge what it must not */
		if (f && !json_is_boolean(f)) {
			snprintf(
				err, errlen,
				"the ring document's \"force\" is not true or false");
			goto out;
		}
		d->force = f && json_is_true(f);
	}
	if (get_points(root, d, err, errlen))
		goto out;
	{
		char cl[16];

		if (get_str(root, "clients", 0, cl, sizeof(cl),
			    "keysteer or any", err, errlen))
			goto out;
		if (cl[0] && strcmp(cl, KS_RING_DOC_CLIENTS_KS) &&
		    strcmp(cl, "any")) {
			snprintf(
				err, errlen,
				"the ring document's \"clients\" is '%s', not keysteer or any",
				cl);
			goto out;
		}
		d->clients_ks = !strcmp(cl, KS_RING_DOC_CLIENTS_KS);
	}
	rc = 0;
out:
	json_decref(root);
	if (rc)
		ks_ring_doc_free(d);
	return rc;
}

int ks_ring_doc_build(struct ks_ring_doc *d, const char *self, __u64 version,
		      struct ks_shards *shards, struct ks_ring *r, char *err,
		      size_t errlen)
{
	int rc;

	memset(r, 0, sizeof(*r));
	if (self) {
		char sub[KS_ERRLEN_DOC];

		rc = ks_shards_set_self(&d->shards, self, sub, sizeof(sub));
		/* a shard not yet added or already removed: the ring is
		 * taken and this host owns nothing under it (issue 23) */
		if (rc == -ENOENT)
			d->shards.self = KS_SELF_OUTSIDE;
		else if (rc) {
			snprintf(err, errlen, "%s", sub);
			return rc == -ENOMEM ? rc : -EINVAL;
		}
	}
	rc = ks_ring_build_keyed(r, &d->shards, d->dist, &d->key, d->vnodes,
				 version, err, errlen);
	if (rc)
		return rc;
	if (d->pts) {
		struct ks_ring base = *r;
		char sub[KS_ERRLEN_DOC];

		rc = ks_ring_build_points(r, &base, &d->shards, d->pts, d->npts,
					  sub, sizeof(sub));
		ks_ring_free(&base);
		if (rc) {
			snprintf(err, errlen, "the ring document's %s", sub);
			return rc;
		}
	}
	if (r->half->meta.npoints != d->npoints ||
	    r->half->meta.digest != d->digest) {
		snprintf(
			err, errlen,
			"the ring document says %u points, digest %016llx, but its shards build %u points, digest %016llx; it was not written by a 'ring set' that builds rings as this agent does",
			d->npoints, (unsigned long long)d->digest,
			r->half->meta.npoints,
			(unsigned long long)r->half->meta.digest);
		ks_ring_free(r);
		return -EINVAL;
	}
	*shards = d->shards;
	memset(&d->shards, 0, sizeof(d->shards));
	return 0;
}

void ks_ring_doc_free(struct ks_ring_doc *d)
{
	free(d->pts);
	d->pts = NULL;
	d->npts = 0;
	ks_shards_free(&d->shards);
}

int ks_ring_doc_load_file(const char *path, const char *self, __u64 version,
			  struct ks_shards *shards, struct ks_ring *r,
			  int *clients_ks, char *err, size_t errlen)
{
	struct ks_ring_doc d;
	char sub[KS_ERRLEN_DOC], *buf = NULL;
	size_t len;
	int rc;

	memset(r, 0, sizeof(*r));
	memset(shards, 0, sizeof(*shards));
	rc = ks_read_file(path, KS_RING_DOC_MAX, &buf, &len);
	if (rc) {
		snprintf(
			err, errlen,
			"cannot read the ring document %s: %s; give a file 'agent ring plan' or 'agent ring get' wrote",
			path, strerror(-rc));
		return rc;
	}
	rc = ks_ring_doc_decode(buf, len, &d, sub, sizeof(sub));
	free(buf);
	if (rc) {
		snprintf(err, errlen, "%s: %s", path, sub);
		return rc;
	}
	if (clients_ks)
		*clients_ks = d.clients_ks;
	rc = ks_ring_doc_build(&d, self, version, shards, r, sub, sizeof(sub));
	ks_ring_doc_free(&d);
	if (rc)
		snprintf(err, errlen, "%s: %s", path, sub);
	return rc;
}

int ks_ring_doc_load_spec(const struct ks_ring_spec *spec,
			  struct ks_shards *shards, struct ks_ring *r,
			  __u64 version, int *clients_ks, char *err,
			  size_t errlen)
{
	if (clients_ks)
		*clients_ks = 0;
	if (!spec->plan)
		return ks_ring_load(spec, shards, r, version, err, errlen);
	memset(r, 0, sizeof(*r));
	memset(shards, 0, sizeof(*shards));
	if (spec->list || spec->file || spec->dist_given || spec->client ||
	    spec->key.hash >= 0 || spec->key.tag[0] || spec->vnodes) {
		snprintf(
			err, errlen,
			"%s %s holds the shards, distribution and points; give it without %s, %s, --distribution, --client, --key-hash, --hash-tag or --vnodes",
			spec->plan_flag ? spec->plan_flag : "--plan",
			spec->plan, spec->flag, spec->file_flag);
		return -EINVAL;
	}
	return ks_ring_doc_load_file(spec->plan, spec->self, version, shards, r,
				     clients_ks, err, errlen);
}
