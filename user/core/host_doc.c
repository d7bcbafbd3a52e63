// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* host_doc.c - an agent's fleet documents: hosts/<self> (schema 1), the
 * member and the load document (schema 2); see host_doc.h. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include "core/host_doc.h"
#include "core/hot_doc.h"

const char *const ks_load_hot_name[KS_LHF_N] = {
#define KS_LHF_NAME(id, name) [id] = name,
	KS_LOAD_HOT_FIELDS(KS_LHF_NAME)
#undef KS_LHF_NAME
};

static json_t *rate(double x)
{
	return json_real(ks_rate3(x));
}

static json_t *hash_text(__u64 hash)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%016" PRIx64, (uint64_t)hash);
	return json_string(buf);
}

/* "hot": each hot key this agent owns, with every figure. */
static json_t *load_hot_of(const struct ks_host_doc *d)
{
	json_t *a = json_array();
	unsigned i, f;

	for (i = 0; i < d->nhot && i < KS_LOAD_HOT_MAX; i++) {
		json_t *k = json_object();

		json_object_set_new(k, "hash", hash_text(d->hot[i].hash));
		/* a figure this agent does not count (NAN) is left out:
		 * read back as unknown, never as 0 */
		for (f = 0; f < KS_LHF_N; f++)
			if (!isnan(d->hot[i].v[f]))
				json_object_set_new(k, ks_load_hot_name[f],
						    rate(d->hot[i].v[f]));
		/* a key only counted: its hot/ fields here, not in hot/ */
		if (d->hot[i].entry)
			json_object_set_new(
				k, "entry",
				ks_hot_doc_entry_json(d->hot[i].entry));
		json_array_append_new(a, k);
	}
	return a;
}

/* "limits": each key this agent rate-limits, with its figures. */
static json_t *load_limits_of(const struct ks_host_doc *d)
{
	json_t *a = json_array();
	unsigned i;

	for (i = 0; i < d->nlimits && i < KS_LOAD_LIMITS_MAX; i++) {
		const struct ks_load_limit *l = &d->limits[i];
		json_t *k = json_object();

		json_object_set_new(k, "hash", hash_text(l->hash));
		if (l->key[0])
			json_object_set_new(k, "key", json_string(l->key));
		json_object_set_new(k, "rate_per_s", json_integer(l->rate));
		json_object_set_new(k, "allowed_per_s", rate(l->allowed_ps));
		json_object_set_new(k, "refused_per_s", rate(l->refused_ps));
		json_object_set_new(k, "tcp_per_s", rate(l->tcp_ps));
		if (l->automatic)
			json_object_set_new(k, "auto", json_true());
		json_array_append_new(a, k);
	}
	return a;
}

/* 16 lowercase hex digits, as hash_text writes them. */
static int hash_parse(json_t *v, __u64 *out)
{
	const char *h = json_string_value(v);

	if (!h || strlen(h) != 16 || strspn(h, "0123456789abcdef") != 16)
		return -1;
	*out = strtoull(h, NULL, 16);
	return 0;
}

/* A load document's list (name) is an array of at most max entries: 0,
 * or -1 with why. */
static int list_check(json_t *json, const char *name, unsigned max, char *why,
		      size_t whylen)
{
	if (!json_is_array(json)) {
		snprintf(why, whylen, "%s is not an array", name);
		return -1;
	}
	if (json_array_size(json) > max) {
		snprintf(why, whylen, "%s has %zu entries, more than %u", name,
			 json_array_size(json), max);
		return -1;
	}
	return 0;
}

/* A figure >= 0 of o into *out (absent: 0); -1 when it is not one. */
static int figure(json_t *o, const char *name, double *out)
{
	json_t *v = json_object_get(o, name);

	*out = 0;
	if (!v)
		return 0;
	if (!json_is_number(v) || !isfinite(json_number_value(v)) ||
	    json_number_value(v) < 0)
		return -1;
	*out = json_number_value(v);
	return 0;
}

int ks_load_limits_decode(json_t *json, struct ks_load_limit *out, unsigned max,
			  char *why, size_t whylen)
{
	static const char *const fig[] = { "allowed_per_s", "refused_per_s",
					   "tcp_per_s" };
	json_t *k, *v;
	size_t i;
	unsigned f;

	if (!json)
		return 0;
	if (list_check(json, "limits", max, why, whylen))
		return -1;
	json_array_foreach(json, i, k)
	{
		struct ks_load_limit *l = &out[i];
		double *dst[] = { &l->allowed_ps, &l->refused_ps, &l->tcp_ps };

		memset(l, 0, sizeof(*l));
		if (!json_is_object(k) ||
		    hash_parse(json_object_get(k, "hash"), &l->hash)) {
			snprintf(
				why, whylen,
				"limits[%zu] has no hash of 16 lowercase hex digits",
				i);
			return -1;
		}
		v = json_object_get(k, "key");
		if (v && !json_is_string(v)) {
			snprintf(why, whylen,
				 "limits[%zu] has a key that is not a string",
				 i);
			return -1;
		}
		if (v)
			snprintf(l->key, sizeof(l->key), "%s",
				 json_string_value(v));
		v = json_object_get(k, "rate_per_s");
		if (v && (!json_is_integer(v) || json_integer_value(v) < 0 ||
			  json_integer_value(v) > UINT32_MAX)) {
			snprintf(
				why, whylen,
				"limits[%zu] has a rate_per_s that is not an integer >= 0",
				i);
			return -1;
		}
		l->rate = v ? (__u32)json_integer_value(v) : 0;
		v = json_object_get(k, "auto");
		if (v && !json_is_boolean(v)) {
			snprintf(
				why, whylen,
				"limits[%zu] has an auto that is not a boolean",
				i);
			return -1;
		}
		l->automatic = json_is_true(v);
		for (f = 0; f < 3; f++)
			if (figure(k, fig[f], dst[f])) {
				snprintf(
					why, whylen,
					"limits[%zu] has a %s that is not a number >= 0",
					i, fig[f]);
				return -1;
			}
	}
	return (int)json_array_size(json);
}

int ks_load_hot_decode(json_t *json, struct ks_load_hot *out, unsigned max,
		       char *why, size_t whylen)
{
	json_t *k, *v;
	size_t i;
	unsigned f;

	if (list_check(json, "hot", max, why, whylen))
		return -1;
	json_array_foreach(json, i, k)
	{
		if (!json_is_object(k) ||
		    hash_parse(json_object_get(k, "hash"), &out[i].hash)) {
			snprintf(
				why, whylen,
				"hot[%zu] has no hash of 16 lowercase hex digits",
				i);
			return -1;
		}
		out[i].entry = NULL;
		out[i].has_entry = json_object_get(k, "entry") != NULL;
		for (f = 0; f < KS_LHF_N; f++) {
			v = json_object_get(k, ks_load_hot_name[f]);
			out[i].v[f] = NAN;
			if (!v)
				continue;
			if (!json_is_number(v) || json_number_value(v) < 0 ||
			    !isfinite(json_number_value(v))) {
				snprintf(
					why, whylen,
					"hot[%zu] has a %s that is not a number >= 0",
					i, ks_load_hot_name[f]);
				return -1;
			}
			out[i].v[f] = json_number_value(v);
		}
	}
	return (int)json_array_size(json);
}

static json_t *replicas_of(const struct ks_host_doc *d)
{
	json_t *reps = json_array();
	unsigned i;

	for (i = 0; i < d->nreplicas && i < KS_MAX_REPLICAS; i++)
		json_array_append_new(reps, json_string(d->replicas[i]));
	return reps;
}

/* class_rates, shard (with its rates) and top: what moves with load. */
#define TOTALS_N 7
static const char *const totals_name[TOTALS_N] = {
	"base", "ms", "reads", "served", "writes", "misdirected", "fills"
};

static void totals_fields(struct ks_load_totals *t, __u64 **f)
{
	f[0] = &t->base_ms;
	f[1] = &t->ms;
	f[2] = &t->reads;
	f[3] = &t->served;
	f[4] = &t->writes;
	f[5] = &t->misdirected;
	f[6] = &t->fills;
}

static json_t *totals_of(const struct ks_host_doc *d)
{
	struct ks_load_totals t = d->totals;
	json_t *o = json_object();
	__u64 *f[TOTALS_N];
	unsigned i;

	totals_fields(&t, f);
	for (i = 0; i < TOTALS_N; i++)
		json_object_set_new(o, totals_name[i],
				    json_integer((json_int_t)*f[i]));
	return o;
}

int ks_load_totals_decode(json_t *json, struct ks_load_totals *out, char *why,
			  size_t whylen)
{
	__u64 *f[TOTALS_N];
	unsigned i;

	memset(out, 0, sizeof(*out));
	if (!json)
		return 0;
	if (!json_is_object(json)) {
		snprintf(why, whylen, "shard.totals is not an object");
		return -1;
	}
	totals_fields(out, f);
	for (i = 0; i < TOTALS_N; i++) {
		json_t *v = json_object_get(json, totals_name[i]);

		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			snprintf(
				why, whylen,
				"shard.totals has no %s that is an integer >= 0",
				totals_name[i]);
			memset(out, 0, sizeof(*out));
			return -1;
		}
		*f[i] = (__u64)json_integer_value(v);
	}
	if (!out->base_ms) {
		snprintf(why, whylen, "shard.totals has a base of 0");
		memset(out, 0, sizeof(*out));
		return -1;
	}
	return 0;
}

/* totals: the load document's counters too (hosts/ stays as it was) */
static void add_rates(json_t *o, const struct ks_host_doc *d, int totals)
{
	json_t *cl = json_object(), *top = json_array();
	unsigned i;

	json_object_set_new(cl, "read", rate(d->class_ps[0]));
	json_object_set_new(cl, "write", rate(d->class_ps[1]));
	json_object_set_new(cl, "other", rate(d->class_ps[2]));
	json_object_set_new(o, "class_rates", cl);
	if (d->has_shard) {
		json_t *sh = json_object();

		json_object_set_new(sh, "name", json_string(d->shard));
		json_object_set_new(sh, "reads_per_s", rate(d->shard_reads_ps));
		json_object_set_new(sh, "writes_per_s",
				    rate(d->shard_writes_ps));
		json_object_set_new(sh, "misdirected_per_s",
				    rate(d->shard_misdirected_ps));
		json_object_set_new(sh, "served_per_s",
				    rate(d->shard_served_ps));
		if (totals && d->totals.base_ms)
			json_object_set_new(sh, "totals", totals_of(d));
		json_object_set_new(o, "shard", sh);
	} else {
		json_object_set_new(o, "shard", json_null());
	}
	if (d->purge[0])
		json_object_set_new(o, "purge", json_string(d->purge));
	for (i = 0; i < d->ntop && i < KS_HOST_DOC_TOP; i++) {
		const struct ks_host_doc_top *t = &d->top[i];
		json_t *k = json_object();

		json_object_set_new(k, "hash", hash_text(t->hash));
		if (t->key[0])
			json_object_set_new(k, "key", json_string(t->key));
		json_object_set_new(k, "reads_per_s", rate(t->reads_ps));
		json_object_set_new(k, "writes_per_s", rate(t->writes_ps));
		json_array_append_new(top, k);
	}
	json_object_set_new(o, "top", top);
}

static void add_agent(json_t *o, const struct ks_host_doc *d)
{
	json_object_set_new(o, "self", json_string(d->self));
	json_object_set_new(o, "agent_version", json_string(d->agent_version));
	json_object_set_new(o, "pid", json_integer(d->pid));
	json_object_set_new(o, "ifname", json_string(d->ifname));
}

char *ks_host_doc_encode_kind(const struct ks_host_doc *d,
			      enum ks_host_doc_kind k, const char *at)
{
	json_t *o = json_object();
	char *s;

	json_object_set_new(o, "schema",
			    json_integer(k == KS_HDK_MEMBER || k == KS_HDK_LOAD
						 ? KS_MEMBER_DOC_SCHEMA
						 : KS_HOST_DOC_SCHEMA));
	if (k == KS_HDK_MEMBER) {
		json_object_set_new(o, "kind", json_string("keysteer-member"));
		add_agent(o, d);
		json_object_set_new(o, "interval_ms",
				    json_integer(d->interval_ms));
		json_object_set_new(o, "sample_n", json_integer(d->sample_n));
		json_object_set_new(o, "shard",
				    d->has_shard ? json_string(d->shard)
						 : json_null());
		json_object_set_new(o, "replicas", replicas_of(d));
		at = NULL;
	} else if (k == KS_HDK_LOAD) {
		json_object_set_new(o, "kind", json_string("keysteer-load"));
		json_object_set_new(o, "self", json_string(d->self));
		json_object_set_new(o, "ring_revision",
				    json_integer(d->ring_revision));
		add_rates(o, d, 1);
		json_object_set_new(o, "hot", load_hot_of(d));
		/* only when something is limited: documents without limits
		 * stay as they were */
		if (d->nlimits)
			json_object_set_new(o, "limits", load_limits_of(d));
		if (d->limits_omitted)
			json_object_set_new(o, "limits_omitted",
					    json_integer(d->limits_omitted));
	} else {
		add_agent(o, d);
		json_object_set_new(o, "ring_revision",
				    json_integer(d->ring_revision));
		json_object_set_new(o, "interval_ms",
				    json_integer(d->interval_ms));
		json_object_set_new(o, "sample_n", json_integer(d->sample_n));
		add_rates(o, d, 0);
		json_object_set_new(o, "replicas", replicas_of(d));
		if (k == KS_HDK_COMPAT)
			json_object_set_new(o, "compat", json_true());
	}
	if (at)
		json_object_set_new(o, "updated_at", json_string(at));
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return s;
}

char *ks_host_doc_encode(const struct ks_host_doc *d, const char *at)
{
	return ks_host_doc_encode_kind(d, KS_HDK_HOSTS, at);
}

static const struct ks_host_doc_top *top_find(const struct ks_host_doc *d,
					      __u64 hash)
{
	unsigned i;

	for (i = 0; i < d->ntop; i++)
		if (d->top[i].hash == hash)
			return &d->top[i];
	return NULL;
}

static double busiest(const struct ks_host_doc *d)
{
	double m = 0;
	unsigned i;

	for (i = 0; i < d->ntop; i++)
		if (d->top[i].reads_ps + d->top[i].writes_ps > m)
			m = d->top[i].reads_ps + d->top[i].writes_ps;
	return m;
}

/* The least busy key of a full list (a key just below it fell off the
 * end by a hair: no news); -1 when the list is not full. */
static double cut(const struct ks_host_doc *d)
{
	double m = -1;
	unsigned i;

	if (d->ntop < KS_HOST_DOC_TOP)
		return -1;
	for (i = 0; i < d->ntop; i++)
		if (m < 0 || d->top[i].reads_ps + d->top[i].writes_ps < m)
			m = d->top[i].reads_ps + d->top[i].writes_ps;
	return m;
}

/* Every key of a above its quiet tail is in b with the same rates; a tail
 * key may come, go or change without it being news, and so may a key at
 * the end of a full list trading places with one as busy as it. */
static int top_covered(const struct ks_host_doc *a, const struct ks_host_doc *b)
{
	double tail_a = KS_HOST_DOC_TAIL * busiest(a);
	double tail_b = KS_HOST_DOC_TAIL * busiest(b), cut_b = cut(b);
	unsigned i;

	for (i = 0; i < a->ntop; i++) {
		const struct ks_host_doc_top *t = &a->top[i], *u;

		u = top_find(b, t->hash);
		if (t->reads_ps + t->writes_ps <= tail_a &&
		    (!u || u->reads_ps + u->writes_ps <= tail_b))
			continue;
		if (!u && cut_b >= 0 &&
		    !ks_rate_moved(cut_b, t->reads_ps + t->writes_ps))
			continue;
		if (!u || strcmp(t->key, u->key) ||
		    ks_rate_moved(t->reads_ps, u->reads_ps) ||
		    ks_rate_moved(t->writes_ps, u->writes_ps))
			return 0;
	}
	return 1;
}

/* The served reads are the shard's reads less the steered gets, a small
 * difference of two large figures while a hot key is steered: measured
 * against the shard's reads, as --balance compares them, so their noise
 * writes no documents. */
static int served_moved(const struct ks_host_doc *a,
			const struct ks_host_doc *b)
{
	double d = fabs(a->shard_served_ps - b->shard_served_ps);

	return d > 1.0 && d > KS_HOT_DOC_MOVE * (a->shard_reads_ps > 0
							 ? a->shard_reads_ps
							 : a->shard_served_ps);
}

int ks_host_doc_same_member(const struct ks_host_doc *a,
			    const struct ks_host_doc *b)
{
	unsigned i;

	if (strcmp(a->self, b->self) ||
	    strcmp(a->agent_version, b->agent_version) || a->pid != b->pid ||
	    strcmp(a->ifname, b->ifname) || a->interval_ms != b->interval_ms ||
	    a->sample_n != b->sample_n || a->has_shard != b->has_shard ||
	    strcmp(a->shard, b->shard) || a->nreplicas != b->nreplicas)
		return 0;
	for (i = 0; i < a->nreplicas; i++)
		if (strcmp(a->replicas[i], b->replicas[i]))
			return 0;
	return 1;
}

int ks_host_doc_same_status(const struct ks_host_doc *a,
			    const struct ks_host_doc *b)
{
	return ks_host_doc_same_member(a, b) &&
	       a->ring_revision == b->ring_revision &&
	       !strcmp(a->purge, b->purge);
}

static const char *purge_for_old_readers(const char *state)
{
	return strcmp(state, "sweeping") ? state : "idle";
}

int ks_host_doc_same_compat(const struct ks_host_doc *a,
			    const struct ks_host_doc *b)
{
	return ks_host_doc_same_member(a, b) &&
	       a->ring_revision == b->ring_revision &&
	       !strcmp(purge_for_old_readers(a->purge),
		       purge_for_old_readers(b->purge));
}

int ks_host_doc_same(const struct ks_host_doc *a, const struct ks_host_doc *b)
{
	unsigned i;

	if (!ks_host_doc_same_status(a, b))
		return 0;
	for (i = 0; i < 3; i++)
		if (ks_rate_moved(a->class_ps[i], b->class_ps[i]))
			return 0;
	if (ks_rate_moved(a->shard_reads_ps, b->shard_reads_ps) ||
	    ks_rate_moved(a->shard_writes_ps, b->shard_writes_ps) ||
	    ks_rate_moved(a->shard_misdirected_ps, b->shard_misdirected_ps) ||
	    served_moved(a, b))
		return 0;
	return top_covered(a, b) && top_covered(b, a);
}

static const struct ks_load_hot *hot_find(const struct ks_host_doc *d,
					  __u64 hash)
{
	unsigned i;

	for (i = 0; i < d->nhot; i++)
		if (d->hot[i].hash == hash)
			return &d->hot[i];
	return NULL;
}

int ks_host_doc_same_hot(const struct ks_host_doc *a,
			 const struct ks_host_doc *b)
{
	const struct ks_load_hot *u;
	unsigned i, f;

	if (a->nhot != b->nhot)
		return 0;
	/* the same count and every key of a in b: the same keys */
	for (i = 0; i < a->nhot; i++) {
		u = hot_find(b, a->hot[i].hash);
		if (!u)
			return 0;
		for (f = 0; f < KS_LHF_N; f++)
			if (isnan(a->hot[i].v[f]) != isnan(u->v[f]) ||
			    ks_rate_moved(a->hot[i].v[f], u->v[f]))
				return 0;
	}
	return 1;
}

int ks_host_doc_same_limits(const struct ks_host_doc *a,
			    const struct ks_host_doc *b)
{
	const struct ks_load_limit *x, *y;
	unsigned i, j;

	if (a->nlimits != b->nlimits || a->limits_omitted != b->limits_omitted)
		return 0;
	for (i = 0; i < a->nlimits; i++) {
		x = &a->limits[i];
		for (j = 0; j < b->nlimits && b->limits[j].hash != x->hash; j++)
			;
		if (j == b->nlimits)
			return 0;
		y = &b->limits[j];
		if (x->rate != y->rate || x->automatic != y->automatic ||
		    strcmp(x->key, y->key) ||
		    ks_rate_moved(x->allowed_ps, y->allowed_ps) ||
		    ks_rate_moved(x->refused_ps, y->refused_ps) ||
		    ks_rate_moved(x->tcp_ps, y->tcp_ps))
			return 0;
	}
	return 1;
}

static double limit_busy(const struct ks_load_limit *l)
{
	return l->allowed_ps + l->refused_ps + l->tcp_ps;
}

void ks_load_limits_add(struct ks_host_doc *d, const struct ks_load_limit *l)
{
	unsigned i, at;

	for (at = 0; at < d->nlimits; at++)
		if (limit_busy(l) > limit_busy(&d->limits[at]))
			break;
	if (at == KS_LOAD_LIMITS_MAX) {
		d->limits_omitted++;
		return;
	}
	if (d->nlimits == KS_LOAD_LIMITS_MAX)
		d->limits_omitted++; /* the last one falls off */
	else
		d->nlimits++;
	for (i = d->nlimits - 1; i > at; i--)
		d->limits[i] = d->limits[i - 1];
	d->limits[at] = *l;
}
