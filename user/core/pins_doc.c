// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* pins_doc.c - /keysteer/CLUSTER/pins, schema 1 (see pins_doc.h). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/pins_doc.h"
#include "core/ring_doc.h"

int ks_pins_doc_key(const char *cluster, char *buf, size_t len)
{
	int n = snprintf(buf, len, KS_ETCD_ROOT "%s/pins", cluster);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
}

char *ks_pins_doc_encode(const char *text, size_t len, size_t n, const char *by,
			 const char *at)
{
	json_t *rules = json_stringn(text, len), *o;
	char *s;

	if (!rules)
		return NULL;
	o = json_pack("{s:i, s:s, s:o, s:I, s:s, s:s}", "schema",
		      KS_PINS_DOC_SCHEMA, "kind", KS_PINS_DOC_KIND, "rules",
		      rules, "count", (json_int_t)n, "written_by", by,
		      "written_at", at);
	s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	return s;
}

static void text_field(json_t *o, const char *name, char *dst, size_t len)
{
	const char *v = json_string_value(json_object_get(o, name));

	snprintf(dst, len, "%s", v ? v : "");
}

int ks_pins_doc_decode(const char *json, size_t len, const char *source,
		       struct ks_pins_doc *d, char *err, size_t errlen)
{
	json_error_t je;
	json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je), *v;
	int rc = -EINVAL;

	memset(d, 0, sizeof(*d));
	if (!json_is_object(o)) {
		snprintf(err, errlen, "not a JSON object%s%s", o ? "" : ": ",
			 o ? "" : je.text);
		goto out;
	}
	v = json_object_get(o, "schema");
	if (!json_is_integer(v) ||
	    json_integer_value(v) != KS_PINS_DOC_SCHEMA) {
		snprintf(err, errlen,
			 "\"schema\" is not 1 (a schema this reader knows)");
		goto out;
	}
	v = json_object_get(o, "kind");
	if (!json_is_string(v) ||
	    strcmp(json_string_value(v), KS_PINS_DOC_KIND)) {
		snprintf(err, errlen, "\"kind\" is not \"%s\"",
			 KS_PINS_DOC_KIND);
		goto out;
	}
	v = json_object_get(o, "rules");
	if (!json_is_string(v) || json_string_length(v) > KS_PINS_DOC_MAX) {
		snprintf(
			err, errlen,
			"\"rules\" is not the text of a pin file (a string of at most 1 MiB)");
		goto out;
	}
	if (ks_hot_rules_parse(&d->rules, json_string_value(v),
			       json_string_length(v), source, err, errlen))
		goto out;
	v = json_object_get(o, "count");
	if (v && (!json_is_integer(v) ||
		  json_integer_value(v) != (json_int_t)d->rules.n)) {
		snprintf(err, errlen,
			 "\"count\" says %lld rules, the text holds %zu",
			 json_is_integer(v) ? (long long)json_integer_value(v)
					    : -1LL,
			 d->rules.n);
		goto out;
	}
	text_field(o, "written_by", d->written_by, sizeof(d->written_by));
	text_field(o, "written_at", d->written_at, sizeof(d->written_at));
	rc = 0;
out:
	if (rc)
		d->rules.n = 0;
	json_decref(o);
	return rc;
}
