// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The etcd client's pure half: endpoint lists, base64, prefix ends and the
 * gateway's JSON answers, decoded with jansson (etcd_codec.h).
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "core/etcd_codec.h"

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* ---- endpoints ---- */

static int host_char(int ch)
{
	return isalnum(ch) || ch == '.' || ch == '-' || ch == '_';
}

/* One URL of n bytes at s into out; 0 or -EINVAL with the reason. */
static int parse_url(const char *s, size_t n, char *out, int *tls, char *err,
		     size_t errlen)
{
	const char *p, *end = s + n, *host, *host_end;
	unsigned long port = KS_ETCD_DEFAULT_PORT;

	if (n > 7 && !strncasecmp(s, "http://", 7)) {
		*tls = 0;
		p = s + 7;
	} else if (n > 8 && !strncasecmp(s, "https://", 8)) {
		*tls = 1;
		p = s + 8;
	} else {
		return fail(
			err, errlen, -EINVAL,
			"etcd endpoint '%.*s' is not an http:// or https:// URL",
			(int)n, s);
	}
	host = p;
	if (p < end && *p == '[') {
		while (p < end && (isxdigit((unsigned char)*p) || *p == ':' ||
				   *p == '.' || *p == '['))
			p++;
		if (p >= end || *p != ']' || p - host < 3)
			return fail(err, errlen, -EINVAL,
				    "etcd endpoint '%.*s': bad [IPv6] address",
				    (int)n, s);
		p++;
	} else {
		while (p < end && host_char((unsigned char)*p))
			p++;
	}
	host_end = p;
	if (host_end == host)
		return fail(err, errlen, -EINVAL,
			    "etcd endpoint '%.*s' names no host", (int)n, s);
	if (host_end - host > 253)
		return fail(err, errlen, -EINVAL,
			    "etcd endpoint '%.*s': host name too long", (int)n,
			    s);
	if (p < end && *p == ':') {
		const char *d = ++p;
		char *e;

		while (p < end && isdigit((unsigned char)*p))
			p++;
		if (p == d || p - d > 5)
			return fail(err, errlen, -EINVAL,
				    "etcd endpoint '%.*s': bad port", (int)n,
				    s);
		port = strtoul(d, &e, 10);
		if (port < 1 || port > 65535)
			return fail(
				err, errlen, -EINVAL,
				"etcd endpoint '%.*s': port %lu is not 1-65535",
				(int)n, s, port);
	}
	if (p < end && *p == '/')
		p++;
	if (p != end) {
		const char *why =
			*p == '@'   ? "user info (give --etcd-user instead)"
			: *p == '?' ? "a query"
			: *p == '#' ? "a fragment"
			: *p == '/' || host_char((unsigned char)*p)
				? "a path"
				: "a character a host name cannot have";
		return fail(
			err, errlen, -EINVAL,
			"etcd endpoint '%.*s' has %s; give scheme://host:port",
			(int)n, s, why);
	}
	snprintf(out, KS_ETCD_URL_MAX, "%s://%.*s:%lu", *tls ? "https" : "http",
		 (int)(host_end - host), host, port);
	return 0;
}

int ks_etcd_parse_endpoints(const char *list, struct ks_etcd_endpoints *eps,
			    char *err, size_t errlen)
{
	const char *s = list;

	memset(eps, 0, sizeof(*eps));
	if (!list || !*list)
		return fail(err, errlen, -EINVAL, "no etcd endpoint given");
	for (;;) {
		const char *comma = strchr(s, ',');
		size_t n = comma ? (size_t)(comma - s) : strlen(s);
		int tls = 0, rc;

		while (n && isspace((unsigned char)*s)) {
			s++;
			n--;
		}
		while (n && isspace((unsigned char)s[n - 1]))
			n--;
		if (!n)
			return fail(
				err, errlen, -EINVAL,
				"etcd endpoint list '%s' has an empty entry",
				list);
		if (eps->n == KS_ETCD_MAX_ENDPOINTS)
			return fail(err, errlen, -EINVAL,
				    "more than %d etcd endpoints",
				    KS_ETCD_MAX_ENDPOINTS);
		rc = parse_url(s, n, eps->url[eps->n], &tls, err, errlen);
		if (rc)
			return rc;
		if (eps->n && tls != eps->tls)
			return fail(
				err, errlen, -EINVAL,
				"etcd endpoints mix http:// and https://; use one scheme for all");
		eps->tls = tls;
		eps->n++;
		if (!comma)
			return 0;
		s = comma + 1;
	}
}

/* ---- base64, prefixes ---- */

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t ks_etcd_b64_encode(const void *in, size_t n, char *out)
{
	const unsigned char *p = in;
	size_t i, o = 0;

	for (i = 0; i + 2 < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 |
			     p[i + 2];

		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = b64[(v >> 6) & 63];
		out[o++] = b64[v & 63];
	}
	if (i < n) {
		unsigned v = (unsigned)p[i] << 16 |
			     (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0);

		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

static int b64_val(int ch)
{
	const char *p = ch ? strchr(b64, ch) : NULL;

	return p ? (int)(p - b64) : -1;
}

int ks_etcd_b64_decode(const char *in, size_t len, unsigned char *out)
{
	size_t i, o = 0;

	if (len % 4)
		return -EBADMSG;
	for (i = 0; i < len; i += 4) {
		int a = b64_val(in[i]), b = b64_val(in[i + 1]);
		int last = i + 4 == len;
		int c = last && in[i + 2] == '=' ? -2 : b64_val(in[i + 2]);
		int d = last && in[i + 3] == '=' ? -2 : b64_val(in[i + 3]);

		if (a < 0 || b < 0 || c == -1 || d == -1 ||
		    (c == -2 && d != -2))
			return -EBADMSG;
		out[o++] = (unsigned char)(a << 2 | b >> 4);
		if (c >= 0)
			out[o++] = (unsigned char)((b & 15) << 4 | c >> 2);
		if (d >= 0)
			out[o++] = (unsigned char)((c & 3) << 6 | d);
	}
	out[o] = '\0';
	return (int)o;
}

size_t ks_etcd_prefix_end(const void *prefix, size_t n, unsigned char *out)
{
	const unsigned char *p = prefix;
	size_t i = n;

	while (i > 0 && p[i - 1] == 0xff)
		i--;
	if (!i) {
		out[0] = 0;
		return 1;
	}
	memcpy(out, p, i);
	out[i - 1]++;
	return i;
}

/* ---- answers ---- */

void ks_etcd_kv_free(struct ks_etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

void ks_etcd_range_free(struct ks_etcd_range *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		ks_etcd_kv_free(&r->kvs[i]);
	free(r->kvs);
	memset(r, 0, sizeof(*r));
}

void ks_etcd_watch_msg_free(struct ks_etcd_watch_msg *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		ks_etcd_kv_free(&m->events[i].kv);
	free(m->events);
	memset(m, 0, sizeof(*m));
}

/* An int64 field: a decimal string (proto3's encoding), an integer, or
 * absent (0). */
static int get_i64(json_t *obj, const char *name, int64_t *out, char *err,
		   size_t errlen)
{
	json_t *v = json_object_get(obj, name);
	const char *s;
	char *end;
	long long x;

	*out = 0;
	if (!v)
		return 0;
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v))
		return fail(err, errlen, -EBADMSG,
			    "etcd's answer has a non-numeric \"%s\"", name);
	s = json_string_value(v);
	errno = 0;
	x = strtoll(s, &end, 10);
	if (!*s || *end || errno)
		return fail(
			err, errlen, -EBADMSG,
			"etcd's answer has \"%s\":\"%.40s\", not a 64-bit number",
			name, s);
	*out = x;
	return 0;
}

/* A base64 string field into a malloc'd, NUL-terminated buffer; absent is
 * empty (proto3 leaves out empty bytes). */
static int get_bytes(json_t *obj, const char *name, char **out, size_t *len,
		     char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, name);
	const char *s = "";
	size_t n = 0;
	int got;

	*out = NULL;
	*len = 0;
	if (v) {
		if (!json_is_string(v))
			return fail(err, errlen, -EBADMSG,
				    "etcd's answer has a non-string \"%s\"",
				    name);
		s = json_string_value(v);
		n = json_string_length(v);
	}
	*out = malloc(n / 4 * 3 + 1);
	if (!*out)
		return fail(err, errlen, -ENOMEM, "out of memory");
	got = ks_etcd_b64_decode(s, n, (unsigned char *)*out);
	if (got < 0) {
		free(*out);
		*out = NULL;
		return fail(err, errlen, -EBADMSG,
			    "etcd's answer has \"%s\" that is not base64",
			    name);
	}
	*len = (size_t)got;
	return 0;
}

static int decode_kv(json_t *o, struct ks_etcd_kv *kv, char *err, size_t errlen)
{
	int rc;

	memset(kv, 0, sizeof(*kv));
	if (!json_is_object(o))
		return fail(
			err, errlen, -EBADMSG,
			"etcd's answer has a key-value that is not an object");
	if ((rc = get_bytes(o, "key", &kv->key, &kv->key_len, err, errlen)) ||
	    (rc = get_bytes(o, "value", &kv->value, &kv->value_len, err,
			    errlen)) ||
	    (rc = get_i64(o, "create_revision", &kv->create_revision, err,
			  errlen)) ||
	    (rc = get_i64(o, "mod_revision", &kv->mod_revision, err, errlen)) ||
	    (rc = get_i64(o, "version", &kv->version, err, errlen)) ||
	    (rc = get_i64(o, "lease", &kv->lease, err, errlen))) {
		ks_etcd_kv_free(kv);
		return rc;
	}
	return 0;
}

static json_t *load(const char *body, size_t len, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root = json_loadb(body, len, 0, &je);

	if (!root) {
		fail(err, errlen, -EBADMSG,
		     "etcd's answer is not JSON (%s at byte %d)", je.text,
		     je.position);
		return NULL;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		fail(err, errlen, -EBADMSG,
		     "etcd's answer is not a JSON object");
		return NULL;
	}
	return root;
}

static int header_revision(json_t *o, int64_t *rev, char *err, size_t errlen)
{
	json_t *h = json_object_get(o, "header");

	if (!json_is_object(h))
		return fail(err, errlen, -EBADMSG,
			    "etcd's answer has no header");
	return get_i64(h, "revision", rev, err, errlen);
}

/* The error of an {"error","message","code"} object. */
static int error_of(json_t *o, long http_status, char *err, size_t errlen)
{
	json_t *msg = json_object_get(o, "message");
	const char *m = json_is_string(msg) ? json_string_value(msg) : NULL;
	int64_t code = -1;

	if (!m) {
		msg = json_object_get(o, "error");
		m = json_is_string(msg) ? json_string_value(msg) : NULL;
	}
	if (!m)
		return fail(err, errlen, -EBADMSG,
			    "etcd answered HTTP %ld without an error message",
			    http_status);
	get_i64(o, "code", &code, NULL, 0);
	switch (code) {
	case 16: /* Unauthenticated */
		return fail(err, errlen, -EKEYEXPIRED, "etcd: %s", m);
	case 3: /* InvalidArgument: also how etcd 3.4 refuses a login */
		if (strstr(m, "authentication failed"))
			return fail(err, errlen, -EACCES,
				    "etcd refused the user and password: %s",
				    m);
		if (strstr(m, "user name is empty"))
			return fail(
				err, errlen, -EACCES,
				"etcd has auth enabled and no user was given: %s",
				m);
		return fail(err, errlen, -EINVAL,
			    "etcd refused the request: %s", m);
	case 7: /* PermissionDenied */
		return fail(err, errlen, -EPERM, "etcd: %s", m);
	case 5: /* NotFound */
		return fail(err, errlen, -ENOENT, "etcd: %s", m);
	case 11: /* OutOfRange: compacted */
		return fail(err, errlen, -ERANGE, "etcd: %s", m);
	case 14: /* Unavailable */
	case 4:  /* DeadlineExceeded */
		return fail(err, errlen, -EAGAIN, "etcd is unavailable: %s", m);
	default:
		return fail(err, errlen, -EPROTO,
			    "etcd error (code %lld, HTTP %ld): %s",
			    (long long)code, http_status, m);
	}
}

int ks_etcd_decode_error(const char *body, size_t len, long http_status,
			 char *err, size_t errlen)
{
	json_t *root = load(body, len, err, errlen);
	json_t *e;
	int rc;

	if (!root)
		return fail(err, errlen, -EBADMSG,
			    "etcd answered HTTP %ld with %s", http_status,
			    len ? "a body that is not JSON" : "no body");
	/* a stream's error: {"error":{...}} */
	e = json_object_get(root, "error");
	rc = error_of(json_is_object(e) ? e : root, http_status, err, errlen);
	json_decref(root);
	return rc;
}

int ks_etcd_decode_range(const char *body, size_t len, struct ks_etcd_range *r,
			 char *err, size_t errlen)
{
	json_t *root = load(body, len, err, errlen), *kvs, *v;
	size_t i;
	int rc;

	memset(r, 0, sizeof(*r));
	if (!root)
		return -EBADMSG;
	if ((rc = header_revision(root, &r->revision, err, errlen)) ||
	    (rc = get_i64(root, "count", &r->count, err, errlen)))
		goto out;
	kvs = json_object_get(root, "kvs");
	if (kvs && !json_is_array(kvs)) {
		rc = fail(err, errlen, -EBADMSG,
			  "etcd's answer has \"kvs\" that is not a list");
		goto out;
	}
	if (kvs && json_array_size(kvs)) {
		r->kvs = calloc(json_array_size(kvs), sizeof(*r->kvs));
		if (!r->kvs) {
			rc = fail(err, errlen, -ENOMEM, "out of memory");
			goto out;
		}
	}
	json_array_foreach(kvs, i, v)
	{
		if ((rc = decode_kv(v, &r->kvs[i], err, errlen)))
			goto out;
		r->n++;
	}
out:
	json_decref(root);
	if (rc)
		ks_etcd_range_free(r);
	return rc;
}

int ks_etcd_decode_revision(const char *body, size_t len, int64_t *revision,
			    int64_t *deleted, char *err, size_t errlen)
{
	json_t *root = load(body, len, err, errlen);
	int rc;

	if (!root)
		return -EBADMSG;
	rc = header_revision(root, revision, err, errlen);
	if (!rc && deleted)
		rc = get_i64(root, "deleted", deleted, err, errlen);
	json_decref(root);
	return rc;
}

int ks_etcd_decode_txn(const char *body, size_t len, int *succeeded,
		       int64_t *revision, int64_t *cur_mod, char *err,
		       size_t errlen)
{
	json_t *root = load(body, len, err, errlen), *s, *resp, *rr, *kvs;
	int rc;

	*succeeded = 0;
	*cur_mod = 0;
	if (!root)
		return -EBADMSG;
	rc = header_revision(root, revision, err, errlen);
	if (rc)
		goto out;
	s = json_object_get(root, "succeeded");
	if (s && !json_is_boolean(s)) {
		rc = fail(err, errlen, -EBADMSG,
			  "etcd's txn answer has a non-boolean \"succeeded\"");
		goto out;
	}
	*succeeded = json_is_true(s);
	if (*succeeded)
		goto out;
	/* lost: the failure branch read the key (no kvs: it is absent) */
	resp = json_array_get(json_object_get(root, "responses"), 0);
	rr = json_object_get(resp, "response_range");
	if (!json_is_object(rr)) {
		rc = fail(err, errlen, -EBADMSG,
			  "etcd's txn answer has no range of the key");
		goto out;
	}
	kvs = json_object_get(rr, "kvs");
	if (json_array_size(kvs))
		rc = get_i64(json_array_get(kvs, 0), "mod_revision", cur_mod,
			     err, errlen);
out:
	json_decref(root);
	return rc;
}

int ks_etcd_decode_lease(const char *body, size_t len, int64_t *id,
			 int64_t *ttl, char *err, size_t errlen)
{
	json_t *root = load(body, len, err, errlen), *o;
	int rc;

	*id = *ttl = 0;
	if (!root)
		return -EBADMSG;
	o = json_object_get(root, "result");
	if (!o)
		o = root;
	if (!json_is_object(o))
		rc = fail(err, errlen, -EBADMSG,
			  "etcd's lease answer has no result");
	else if (!(rc = get_i64(o, "ID", id, err, errlen)))
		rc = get_i64(o, "TTL", ttl, err, errlen);
	if (!rc && !*id)
		rc = fail(err, errlen, -EBADMSG,
			  "etcd's lease answer has no lease ID");
	json_decref(root);
	return rc;
}

static int get_string(const char *body, size_t len, const char *name, char *out,
		      size_t outlen, char *err, size_t errlen)
{
	json_t *root = load(body, len, err, errlen), *v;
	int rc = 0;

	if (!root)
		return -EBADMSG;
	v = json_object_get(root, name);
	if (!json_is_string(v) || !json_string_length(v))
		rc = fail(err, errlen, -EBADMSG, "etcd's answer has no \"%s\"",
			  name);
	else if (json_string_length(v) >= outlen)
		rc = fail(err, errlen, -EBADMSG,
			  "etcd's \"%s\" is over %zu bytes", name, outlen - 1);
	else
		memcpy(out, json_string_value(v), json_string_length(v) + 1);
	json_decref(root);
	return rc;
}

int ks_etcd_decode_token(const char *body, size_t len, char *token, size_t tlen,
			 char *err, size_t errlen)
{
	return get_string(body, len, "token", token, tlen, err, errlen);
}

int ks_etcd_decode_status(const char *body, size_t len, char *version,
			  size_t vlen, char *err, size_t errlen)
{
	return get_string(body, len, "version", version, vlen, err, errlen);
}

static int decode_watch_result(json_t *res, struct ks_etcd_watch_msg *m,
			       char *err, size_t errlen)
{
	json_t *evs, *ev, *reason;
	size_t i;
	int rc;

	if (!json_is_object(res))
		return fail(err, errlen, -EBADMSG,
			    "a watch message without a result");
	if ((rc = header_revision(res, &m->revision, err, errlen)) ||
	    (rc = get_i64(res, "compact_revision", &m->compact_revision, err,
			  errlen)))
		return rc;
	m->created = json_is_true(json_object_get(res, "created"));
	m->canceled = json_is_true(json_object_get(res, "canceled"));
	reason = json_object_get(res, "cancel_reason");
	if (json_is_string(reason))
		snprintf(m->cancel_reason, sizeof(m->cancel_reason), "%s",
			 json_string_value(reason));
	evs = json_object_get(res, "events");
	if (evs && !json_is_array(evs))
		return fail(err, errlen, -EBADMSG,
			    "a watch message whose events are not a list");
	if (json_array_size(evs) &&
	    !(m->events = calloc(json_array_size(evs), sizeof(*m->events))))
		return fail(err, errlen, -ENOMEM, "out of memory");
	json_array_foreach(evs, i, ev)
	{
		json_t *type = json_object_get(ev, "type");
		struct ks_etcd_event *e = &m->events[i];

		if (type && (!json_is_string(type) ||
			     (strcmp(json_string_value(type), "PUT") &&
			      strcmp(json_string_value(type), "DELETE"))))
			return fail(err, errlen, -EBADMSG,
				    "a watch event of unknown type");
		e->type = type && !strcmp(json_string_value(type), "DELETE")
				  ? KS_ETCD_EV_DELETE
				  : KS_ETCD_EV_PUT;
		if ((rc = decode_kv(json_object_get(ev, "kv"), &e->kv, err,
				    errlen)))
			return rc;
		m->n++;
	}
	return 0;
}

int ks_etcd_decode_watch(const char *buf, size_t len, size_t *used,
			 struct ks_etcd_watch_msg *m, char *err, size_t errlen)
{
	size_t skip = 0;
	json_error_t je;
	json_t *root, *res;
	int rc;

	memset(m, 0, sizeof(*m));
	*used = 0;
	while (skip < len && isspace((unsigned char)buf[skip]))
		skip++;
	if (skip == len)
		return 0;
	root = json_loadb(buf + skip, len - skip, JSON_DISABLE_EOF_CHECK, &je);
	if (!root) {
		/* cut mid-object, or mid-literal ("tru"): wait for more */
		if (json_error_code(&je) == json_error_premature_end_of_input ||
		    je.position >= (int)(len - skip))
			return 0;
		return fail(err, errlen, -EBADMSG,
			    "the watch stream is not JSON (%s)", je.text);
	}
	*used = skip + (size_t)je.position;
	if (!json_is_object(root)) {
		rc = fail(err, errlen, -EBADMSG,
			  "the watch stream has a value that is not an object");
	} else if ((res = json_object_get(root, "result"))) {
		rc = decode_watch_result(res, m, err, errlen);
		if (!rc)
			rc = 1;
	} else {
		res = json_object_get(root, "error");
		rc = error_of(json_is_object(res) ? res : root, 200, err,
			      errlen);
	}
	json_decref(root);
	if (rc < 0)
		ks_etcd_watch_msg_free(m);
	return rc;
}
