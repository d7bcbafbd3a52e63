// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* fleet.c - 'agent fleet' as text and JSON (see fleet.h). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include "render/fleet.h"
#include "core/dedicated.h"
#include "core/hot_doc.h"
#include "ks_limit.h"

/* Text from etcd for a terminal: anyone who can write to etcd could put
 * escape sequences in a name or a key, so only printable ASCII goes out
 * as is. A key's bytes were escaped by the agent that published it;
 * backslashes are kept, not doubled, so it reads as the agent wrote it. */
static const char *safe(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	for (; *s && o + 5 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c < 0x7f)
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
	}
	buf[o] = '\0';
	return buf;
}

static const char *key_or_hash(uint64_t hash, const char *key, int hash_only,
			       char *buf, size_t len)
{
	if (!hash_only && key[0])
		return safe(key, buf, len);
	snprintf(buf, len, "%016" PRIx64, hash);
	return buf;
}

/* ---- text ---------------------------------------------------------- */

static void text_head(FILE *f, const struct ks_fleet_out *o)
{
	const struct ks_fleet_snapshot *s = o->s;
	const struct ks_fleet_view *v = o->v;

	fprintf(f,
		"fleet %s: ring revision %" PRId64
		", %zu host%s (etcd revision %" PRId64 ")\n",
		o->cluster, s->ring_rev, s->n_hosts, s->n_hosts == 1 ? "" : "s",
		s->store_rev);
	if (s->ring_rev && !s->ring_valid)
		fprintf(f, "ring refused (one row per host): %s\n",
			s->ring_why);
	else if (s->n_ring)
		fprintf(f, "%zu shards, %zu with an agent, %zu gone\n",
			v->n_shards, v->n_up, v->n_shards - v->n_up);
}

static void text_shards(FILE *f, const struct ks_fleet_out *o)
{
	const struct ks_fleet_snapshot *s = o->s;
	const struct ks_fleet_view *v = o->v;
	char b[KS_FLEET_ADDR_MAX * 4];
	size_t i;

	fprintf(f, "  %-21s %10s %10s %10s %6s %6s %9s %6s  %s\n", "SHARD",
		"READS/S", "SERVED/S", "WRITES/S", "SHARE", "xMEAN", "MISDIR/S",
		"RING", "AGENT");
	for (i = 0; i < v->n_shards; i++) {
		const struct ks_fleet_shard *sh = &v->shards[i];

		safe(sh->name, b, sizeof(b));
		if (sh->host < 0) {
			fprintf(f,
				"  %-21s %10s %10s %10s %6s %6s %9s %6s  gone\n",
				b, "-", "-", "-", "-", "-", "-", "-");
			continue;
		}
		fprintf(f,
			"%c %-21s %10.1f %10.1f %10.1f %5.1f%% %6.2f %9.1f %6" PRId64
			"  up%s%s\n",
			sh->busiest ? '*' : ' ', b, sh->reads, sh->served,
			sh->writes, 100 * sh->share, sh->ratio, sh->mis,
			sh->ring_rev, sh->stale ? "  OLD RING" : "",
			sh->purging ? "  PURGING" : "");
	}
	if (v->busiest >= 0)
		fprintf(f,
			"* busiest %s: %.1f reads/s, %.1f%% of the fleet's; max/mean %.2f (mean %.1f over %zu shards with an agent)\n",
			safe(v->shards[v->busiest].name, b, sizeof(b)), v->max,
			100 * v->shards[v->busiest].share,
			v->mean > 0 ? v->max / v->mean : 0.0, v->mean, v->n_up);
	else
		fprintf(f,
			"no busiest shard: no reads at any shard with an agent\n");
	if (v->n_up < v->n_shards) {
		fprintf(f, "shards without an agent:");
		for (i = 0; i < v->n_shards; i++)
			if (v->shards[i].host < 0)
				fprintf(f, " %s",
					safe(v->shards[i].name, b, sizeof(b)));
		fputc('\n', f);
	}
	(void)s;
}

/* One host as a row of its own (no ring, or not in the ring). */
static void text_host(FILE *f, const struct ks_fleet_out *o, size_t i,
		      long names_shard)
{
	const struct ks_fleet_host *h = &o->s->hosts[i];
	char b[KS_FLEET_ADDR_MAX * 4], w[KS_FLEET_WHY_MAX * 4];

	safe(h->self, b, sizeof(b));
	if (!h->valid) {
		fprintf(f,
			"  %-21s %10s %10s %9s %6s  (document refused: %s)\n",
			b, "-", "-", "-", "-", safe(h->why, w, sizeof(w)));
		return;
	}
	fprintf(f, "%c %-21s %10.1f %10.1f %9.1f %6" PRId64 "%s%s%s\n",
		o->v->max_host == (long)i ? '*' : ' ', b, h->reads, h->writes,
		h->mis, h->ring_rev, o->v->host_stale[i] ? "  OLD RING" : "",
		h->have_shard || o->s->n_ring ? "" : "  (no ring: host totals)",
		names_shard >= 0 ? "  (its shard's row is another entry's)"
		: o->s->n_ring   ? "  (not in the ring: owns no keys)"
				 : "");
}

static void text_hosts(FILE *f, const struct ks_fleet_out *o)
{
	const struct ks_fleet_view *v = o->v;
	char b[KS_FLEET_ADDR_MAX * 4];
	size_t i;

	if (!v->n_others)
		return;
	if (o->s->n_ring)
		fprintf(f, "hosts whose entry names no shard of the ring:\n");
	fprintf(f, "  %-21s %10s %10s %9s %6s\n", "HOST", "READS/S", "WRITES/S",
		"MISDIR/S", "RING");
	for (i = 0; i < v->n_others; i++)
		text_host(f, o, v->others[i], v->other_shard[i]);
	if (!o->s->n_ring)
		fprintf(f,
			"reads/s across hosts: max %.1f (%s), mean %.1f, max/mean %.2f\n",
			v->max,
			v->max_host >= 0 ? safe(o->s->hosts[v->max_host].self,
						b, sizeof(b))
					 : "-",
			v->mean, v->mean > 0 ? v->max / v->mean : 0.0);
}

static void text_top(FILE *f, const struct ks_fleet_out *o)
{
	const struct ks_fleet_view *v = o->v;
	char b[KS_FLEET_KEY_TEXT * 4];
	size_t i;

	if (!o->top_k)
		return;
	fprintf(f,
		"\ntop %zu keys across the fleet (reads and writes summed over hosts)%s\n",
		v->n_top, v->n_top ? "" : ": none published");
	if (!v->n_top)
		return;
	fprintf(f, "  %-40s %10s %10s %5s\n", o->hash_only ? "HASH" : "KEY",
		"READS/S", "WRITES/S", "HOSTS");
	for (i = 0; i < v->n_top; i++) {
		const struct ks_fleet_key *k = &v->top[i];

		fprintf(f, "  %-40s %10.1f %10.1f %5u\n",
			key_or_hash(k->hash, k->key, o->hash_only, b,
				    sizeof(b)),
			k->reads, k->writes, k->hosts);
	}
}

static const char *hot_kind(const struct ks_fleet_hot *e)
{
	if (e->read_hot && e->write_hot)
		return "read+write";
	return e->write_hot ? "write" : e->read_hot ? "read" : "-";
}

/* A figure with one decimal, "-" when not known. */
static const char *figure(double x, char *buf, size_t len)
{
	if (isnan(x))
		return "-";
	snprintf(buf, len, "%.1f", x);
	return buf;
}

static void text_hot(FILE *f, const struct ks_fleet_out *o)
{
	const struct ks_fleet_view *v = o->v;
	char b[KS_FLEET_KEY_TEXT * 4], w[KS_FLEET_WHY_MAX * 4];
	size_t i, j;

	fprintf(f, "\nhot keys: %zu", v->n_hot);
	if (o->s->n_refused)
		fprintf(f, " (%zu refused)", o->s->n_refused);
	fputc('\n', f);
	if (v->n_hot)
		fprintf(f,
			"  %-24s %-21s %-10s %6s %7s %-8s %9s %10s %10s %10s  %s\n"
			"  (MISSES/S: at the owner, %s; - where the owner does not count them)\n",
			o->hash_only ? "HASH" : "KEY", "OWNER", "HOT", "COPIES",
			"SUBKEYS", "STATE", "WRITE_SEQ", "READS/S", "WRITES/S",
			"MISSES/S", "REPLICAS", KS_HOT_DOC_OWNER_SOURCE);
	for (i = 0; i < v->n_hot; i++) {
		const struct ks_fleet_hot *e = v->hot[i].e;
		char rates[2][24];

		fprintf(f, "  %-24s ",
			key_or_hash(e->hash, e->key, o->hash_only, b,
				    sizeof(b)));
		fprintf(f,
			"%-21s %-10s %6" PRId64 " %7" PRId64 " %-8s %9" PRId64
			" %10s %10s  ",
			safe(e->owner, b, sizeof(b)), hot_kind(e), e->copies,
			e->subkeys, ks_hot_doc_state_name((unsigned)e->state),
			e->write_seq,
			figure(v->hot[i].v[KS_LHF_READS], rates[0],
			       sizeof(rates[0])),
			figure(v->hot[i].v[KS_LHF_WRITES], rates[1],
			       sizeof(rates[1])));
		fprintf(f, "%10s  ",
			figure(v->hot[i].v[KS_LHF_OWNER_MISSES], rates[0],
			       sizeof(rates[0])));
		for (j = 0; j < e->n_reps && j < KS_FLEET_REPLICAS; j++)
			fprintf(f, "%s%s", j ? "," : "",
				safe(e->replicas[j], b, sizeof(b)));
		if (e->n_reps > KS_FLEET_REPLICAS)
			fprintf(f, ",... (%zu)", e->n_reps);
		fprintf(f, "%s\n", e->n_reps ? "" : "-");
	}
	for (i = 0; i < o->s->n_refused; i++)
		fprintf(f, "  refused hot/%s: %s\n",
			safe(o->s->refused[i].key, b, sizeof(b)),
			safe(o->s->refused[i].why, w, sizeof(w)));
}

/* The shard of dedicated rule i: its index in the ring (-1: none) and,
 * when an agent serves it, its row of the view (else NULL). */
static const struct ks_fleet_shard *ded_shard(const struct ks_fleet_out *o,
					      const struct ks_hot_rule *r,
					      int *idx)
{
	*idx = o->s->ring_shards
		       ? ks_dedicated_shard_index(o->s->ring_shards, r->shard)
		       : -1;
	if (*idx < 0 || (size_t)*idx >= o->v->n_shards ||
	    o->v->shards[*idx].host < 0)
		return NULL;
	return &o->v->shards[*idx];
}

/* Dedicated shards (docs/placement.md): each shard rule, its shard and
 * that shard's load, or why it places nothing. */
static void text_dedicated(FILE *f, const struct ks_fleet_out *o)
{
	const struct ks_fleet_snapshot *s = o->s;
	char k[KS_FLEET_KEY_TEXT], raw[KS_HOT_KEY_MAX + 2],
		b[KS_FLEET_ADDR_MAX * 4];
	size_t i;

	if (s->pins_rev && !s->pins && s->pins_why[0])
		fprintf(f, "\npins revision %" PRId64 " refused: %s\n",
			s->pins_rev, s->pins_why);
	if (!s->pins || !ks_dedicated_count(s->pins))
		return;
	fprintf(f, "\ndedicated shards (pins revision %" PRId64 ")\n",
		s->pins_rev);
	fprintf(f, "  %-30s %-21s %10s %6s\n", "RULE", "SHARD", "READS/S",
		"xMEAN");
	for (i = 0; i < s->pins->n; i++) {
		const struct ks_hot_rule *r = &s->pins->r[i];
		const struct ks_fleet_shard *sh;
		int idx;

		if (!ks_hot_rule_is_shard(r->type))
			continue;
		snprintf(raw, sizeof(raw), "%.*s%s", (int)r->len,
			 (const char *)r->key,
			 r->type == KS_RULE_SHARD_PREFIX ? "*" : "");
		safe(raw, k, sizeof(k));
		safe(r->shard, b, sizeof(b));
		sh = ded_shard(o, r, &idx);
		if (o->hash_only) /* a rule's key is user data too */
			snprintf(k, sizeof(k), "-");
		if (sh)
			fprintf(f, "  %-30s %-21s %10.1f %6.2f\n", k, b,
				sh->reads, sh->ratio);
		else
			fprintf(f, "  %-30s %-21s %s\n", k, b,
				idx < 0 ? "not in the ring: its keys stay with their ring owners"
					: "no agent");
	}
}

/* The figures of the limited keys of rule i (-1: of no rule found),
 * summed. */
static void rule_sums(const struct ks_fleet_view *v, long i, double *allowed,
		      double *refused, double *tcp, size_t *keys)
{
	size_t k;

	*allowed = *refused = *tcp = 0;
	*keys = 0;
	for (k = 0; k < v->n_limits; k++) {
		if (v->limits[k].rule != i)
			continue;
		*allowed += v->limits[k].allowed;
		*refused += v->limits[k].refused;
		*tcp += v->limits[k].tcp;
		(*keys)++;
	}
}

/* The pins document's limit rules (docs/limits.md), each with its keys'
 * figures summed over the agents' load documents, then every limited key
 * summed over the fleet (an agent's own pins file may limit keys the
 * fleet's pins do not name). */
static void text_limits(FILE *f, const struct ks_fleet_out *o)
{
	const struct ks_hot_rules *p = o->s->pins;
	const struct ks_fleet_view *v = o->v;
	char k[KS_FLEET_KEY_TEXT], raw[KS_HOT_KEY_MAX + 2];
	double al, re, tcp;
	size_t i, n = 0, keys;

	for (i = 0; p && i < p->n; i++)
		n += ks_hot_rule_is_limit(p->r[i].type) != 0;
	if (!n && !v->n_limits)
		return;
	if (n) {
		fprintf(f, "\nrate limits (pins revision %" PRId64 ")\n",
			o->s->pins_rev);
		fprintf(f, "  %-30s %10s %5s %10s %10s %10s  %s\n", "RULE",
			"RATE/S", "KEYS", "ALLOWED/S", "REFUSED/S", "TCP/S",
			"APPLIES TO");
	}
	for (i = 0; n && i < p->n; i++) {
		const struct ks_hot_rule *r = &p->r[i];

		if (!ks_hot_rule_is_limit(r->type))
			continue;
		snprintf(raw, sizeof(raw), "%.*s%s", (int)r->len,
			 (const char *)r->key,
			 r->type == KS_RULE_LIMIT_PREFIX ? "*" : "");
		safe(raw, k, sizeof(k));
		rule_sums(v, (long)i, &al, &re, &tcp, &keys);
		fprintf(f, "  %-30s %10u %5zu %10.1f %10.1f %10.1f  %s\n",
			o->hash_only ? "-" : k, r->count, keys, al, re, tcp,
			r->type == KS_RULE_LIMIT_PREFIX ? "each key under it"
							: "the key");
	}
	if (!v->n_limits)
		return;
	fprintf(f, "\nlimited keys (summed over the agents' load documents)\n");
	fprintf(f, "  %-40s %10s %10s %10s %10s %5s\n",
		o->hash_only ? "HASH" : "KEY", "RATE/S", "ALLOWED/S",
		"REFUSED/S", "TCP/S", "HOSTS");
	for (i = 0; i < v->n_limits; i++) {
		const struct ks_fleet_limit *l = &v->limits[i];

		fprintf(f, "  %-40s %10u %10.1f %10.1f %10.1f %5u%s\n",
			key_or_hash(l->hash, l->key, o->hash_only, k,
				    sizeof(k)),
			l->rate, l->allowed, l->refused, l->tcp, l->hosts,
			l->automatic ? "  (auto)" : "");
	}
	if (v->limits_omitted)
		fprintf(f,
			"  (%" PRId64
			" more limited keys beyond the agents' lists of %d, not summed)\n",
			v->limits_omitted, KS_LOAD_LIMITS_MAX);
}

void ks_render_fleet_text(FILE *f, const struct ks_fleet_out *o)
{
	text_head(f, o);
	if (o->s->n_ring)
		text_shards(f, o);
	else if (!o->s->n_hosts)
		fprintf(f, "no agent has published under hosts/\n");
	text_hosts(f, o);
	text_top(f, o);
	text_hot(f, o);
	text_dedicated(f, o);
	text_limits(f, o);
	if (o->watch_state)
		fprintf(f, "\netcd: %s\n", o->watch_state);
}

/* ---- JSON ---------------------------------------------------------- */

static json_t *hash_str(uint64_t hash)
{
	char b[24];

	snprintf(b, sizeof(b), "%016" PRIx64, hash);
	return json_string(b);
}

/* A string from etcd: jansson refuses bytes that are not UTF-8, which a
 * key's text never has (the agent escapes them) but a forged one may. */
static json_t *str(const char *s)
{
	json_t *j = json_string(s);

	return j ? j : json_string("?");
}

/* --hash-only: a document as published without key text ("key",
 * "key_b64") in its lists: "top", "limits" and "hot"'s entries. */
static void strip_keys(json_t *doc)
{
	static const char *const lists[] = { "top", "limits", "hot" };
	json_t *x, *e;
	size_t i, k;

	for (i = 0; json_is_object(doc) && i < 3; i++)
		json_array_foreach(json_object_get(doc, lists[i]), k, x)
		{
			e = json_object_get(x, "entry");
			json_object_del(x, "key");
			json_object_del(x, "key_b64");
			json_object_del(e, "key");
			json_object_del(e, "key_b64");
		}
}

static json_t *host_json(const struct ks_fleet_out *o, size_t i)
{
	const struct ks_fleet_host *h = &o->s->hosts[i];
	json_t *r = json_object(), *doc;
	json_error_t je;
	long k = o->v->host_shard[i];

	json_object_set_new(r, "self", str(h->self));
	json_object_set_new(r, "valid", json_boolean(h->valid));
	if (!h->valid)
		json_object_set_new(r, "error", str(h->why));
	json_object_set_new(r, "ring_revision", json_integer(h->ring_rev));
	json_object_set_new(r, "ring_stale", json_boolean(o->v->host_stale[i]));
	json_object_set_new(r, "purge",
			    h->purge[0] ? str(h->purge) : json_null());
	json_object_set_new(r, "reads_per_s", json_real(h->reads));
	json_object_set_new(r, "writes_per_s", json_real(h->writes));
	json_object_set_new(r, "misdirected_per_s", json_real(h->mis));
	json_object_set_new(r, "rates_of",
			    json_string(h->have_shard ? "shard" : "host"));
	json_object_set_new(r, "shard",
			    k >= 0 ? str(o->v->shards[k].name) : json_null());
	json_object_set_new(r, "mod_revision", json_integer(h->mod_rev));
	json_object_set_new(r, "schema",
			    json_integer(h->kind == KS_FHK_MEMBER ? 2 : 1));
	doc = json_loadb(h->raw ? h->raw : "", h->raw_len, 0, &je);
	if (o->hash_only)
		strip_keys(doc);
	json_object_set_new(r, "status", doc ? doc : json_null());
	if (h->member_raw) {
		doc = json_loadb(h->member_raw, h->member_raw_len, 0, &je);
		json_object_set_new(r, "member", doc ? doc : json_null());
	}
	return r;
}

static json_t *shard_json(const struct ks_fleet_out *o, size_t i)
{
	const struct ks_fleet_shard *sh = &o->v->shards[i];
	json_t *r = json_object();
	int up = sh->host >= 0;

	json_object_set_new(r, "index", json_integer((json_int_t)i));
	json_object_set_new(r, "name", str(sh->name));
	json_object_set_new(r, "agent", json_string(up ? "up" : "gone"));
	json_object_set_new(r, "host",
			    up ? str(o->s->hosts[sh->host].self) : json_null());
	json_object_set_new(r, "reads_per_s",
			    up ? json_real(sh->reads) : json_null());
	json_object_set_new(r, "served_per_s",
			    up ? json_real(sh->served) : json_null());
	json_object_set_new(r, "writes_per_s",
			    up ? json_real(sh->writes) : json_null());
	json_object_set_new(r, "share",
			    up ? json_real(sh->share) : json_null());
	json_object_set_new(r, "ratio_to_mean",
			    up ? json_real(sh->ratio) : json_null());
	json_object_set_new(r, "misdirected_per_s",
			    up ? json_real(sh->mis) : json_null());
	json_object_set_new(r, "ring_revision",
			    up ? json_integer(sh->ring_rev) : json_null());
	json_object_set_new(r, "ring_stale", json_boolean(sh->stale));
	json_object_set_new(r, "purging", json_boolean(sh->purging));
	json_object_set_new(r, "busiest", json_boolean(sh->busiest));
	return r;
}

static json_t *top_json(const struct ks_fleet_out *o)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < o->v->n_top; i++) {
		const struct ks_fleet_key *k = &o->v->top[i];
		json_t *r = json_object();

		json_object_set_new(r, "hash", hash_str(k->hash));
		if (!o->hash_only && k->key[0])
			json_object_set_new(r, "key", str(k->key));
		json_object_set_new(r, "reads_per_s", json_real(k->reads));
		json_object_set_new(r, "writes_per_s", json_real(k->writes));
		json_object_set_new(r, "hosts", json_integer(k->hosts));
		json_array_append_new(a, r);
	}
	return a;
}

static json_t *hot_json(const struct ks_fleet_out *o,
			const struct ks_fleet_hot_row *row)
{
	const struct ks_fleet_hot *e = row->e;
	json_t *r = json_object(), *reps = json_array();
	size_t j;

	json_object_set_new(r, "hash", hash_str(e->hash));
	if (!o->hash_only && e->key[0])
		json_object_set_new(r, "key", str(e->key));
	json_object_set_new(r, "owner", str(e->owner));
	json_object_set_new(r, "read_hot", json_boolean(e->read_hot));
	json_object_set_new(r, "write_hot", json_boolean(e->write_hot));
	json_object_set_new(r, "pinned", json_boolean(e->pinned));
	json_object_set_new(r, "copies", json_integer(e->copies));
	for (j = 0; j < e->n_reps && j < KS_FLEET_REPLICAS; j++)
		json_array_append_new(reps, str(e->replicas[j]));
	json_object_set_new(r, "replicas", reps);
	json_object_set_new(r, "subkeys", json_integer(e->subkeys));
	json_object_set_new(
		r, "state",
		json_string(ks_hot_doc_state_name((unsigned)e->state)));
	json_object_set_new(r, "write_seq", json_integer(e->write_seq));
	/* every figure of the load document's list, by its name there */
	for (j = 0; j < KS_LHF_N; j++)
		json_object_set_new(r, ks_load_hot_name[j],
				    isnan(row->v[j]) ? json_null()
						     : json_real(row->v[j]));
	/* null, not 0, where the owner does not count its replies */
	json_object_set_new(r, "owner_source",
			    isnan(row->v[KS_LHF_OWNER_MISSES])
				    ? json_null()
				    : json_string(KS_HOT_DOC_OWNER_SOURCE));
	json_object_set_new(r, "rates_of",
			    json_string(row->from_load ? "load" : "entry"));
	json_object_set_new(r, "mod_revision", json_integer(e->mod_rev));
	return r;
}

static json_t *refused_json(const struct ks_fleet_snapshot *s)
{
	json_t *r = json_object(), *a = json_array();
	size_t i;

	json_object_set_new(r, "count", json_integer((json_int_t)s->n_refused));
	for (i = 0; i < s->n_refused; i++) {
		json_t *e = json_object();

		json_object_set_new(e, "key", str(s->refused[i].key));
		json_object_set_new(e, "reason", str(s->refused[i].why));
		json_array_append_new(a, e);
	}
	json_object_set_new(r, "entries", a);
	return r;
}

/* "reads_per_s": over the shards with an agent, or the hosts without a
 * ring; max_host is the host whose entry has the max. */
static json_t *reads_json(const struct ks_fleet_out *o)
{
	const struct ks_fleet_view *v = o->v;
	json_t *r = json_object();
	long mh = v->busiest >= 0 ? v->shards[v->busiest].host : v->max_host;

	json_object_set_new(r, "max", json_real(v->max));
	json_object_set_new(r, "mean", json_real(v->mean));
	json_object_set_new(r, "max_over_mean",
			    json_real(v->mean > 0 ? v->max / v->mean : 0));
	json_object_set_new(r, "max_host",
			    mh >= 0 ? str(o->s->hosts[mh].self) : json_null());
	json_object_set_new(r, "of",
			    json_string(o->s->n_ring ? "shards" : "hosts"));
	return r;
}

/* "dedicated": a row per shard rule, its shard's load when served. */
static json_t *dedicated_json(const struct ks_fleet_out *o)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; o->s->pins && i < o->s->pins->n; i++) {
		const struct ks_hot_rule *r = &o->s->pins->r[i];
		const struct ks_fleet_shard *sh;
		json_t *x;
		int idx;

		if (!ks_hot_rule_is_shard(r->type))
			continue;
		sh = ded_shard(o, r, &idx);
		x = json_object();
		json_object_set_new(x, "type",
				    json_string(ks_hot_rule_name(r->type)));
		json_object_set_new(
			x, r->type == KS_RULE_SHARD ? "key" : "prefix",
			o->hash_only
				? json_null()
				: json_stringn((const char *)r->key, r->len));
		json_object_set_new(x, "shard", str(r->shard));
		json_object_set_new(x, "index",
				    idx >= 0 ? json_integer(idx) : json_null());
		json_object_set_new(x, "reads_per_s",
				    sh ? json_real(sh->reads) : json_null());
		json_object_set_new(x, "ratio_to_mean",
				    sh ? json_real(sh->ratio) : json_null());
		json_array_append_new(a, x);
	}
	return a;
}

/* "limits": a row per limit rule of the pins document, with its keys'
 * figures summed over the fleet. */
static json_t *limits_json(const struct ks_fleet_out *o)
{
	json_t *a = json_array();
	double al, re, tcp;
	size_t i, keys;

	for (i = 0; o->s->pins && i < o->s->pins->n; i++) {
		const struct ks_hot_rule *r = &o->s->pins->r[i];
		json_t *x;

		if (!ks_hot_rule_is_limit(r->type))
			continue;
		x = json_object();
		json_object_set_new(
			x, r->type == KS_RULE_LIMIT ? "key" : "prefix",
			o->hash_only
				? json_null()
				: json_stringn((const char *)r->key, r->len));
		json_object_set_new(x, "rate_per_s", json_integer(r->count));
		json_object_set_new(x, "burst",
				    json_integer(ks_limit_burst(r->count)));
		rule_sums(o->v, (long)i, &al, &re, &tcp, &keys);
		json_object_set_new(x, "keys", json_integer((json_int_t)keys));
		json_object_set_new(x, "allowed_per_s", json_real(al));
		json_object_set_new(x, "refused_per_s", json_real(re));
		json_object_set_new(x, "tcp_per_s", json_real(tcp));
		json_array_append_new(a, x);
	}
	return a;
}

/* "limited_keys": every key the agents limit, summed by hash. */
static json_t *limited_keys_json(const struct ks_fleet_out *o)
{
	json_t *a = json_array();
	char h[24];
	size_t i;

	for (i = 0; i < o->v->n_limits; i++) {
		const struct ks_fleet_limit *l = &o->v->limits[i];
		json_t *x = json_object();

		snprintf(h, sizeof(h), "%016" PRIx64, l->hash);
		json_object_set_new(x, "hash", json_string(h));
		json_object_set_new(x, "key",
				    o->hash_only || !l->key[0]
					    ? json_null()
					    : json_string(l->key));
		json_object_set_new(x, "rate_per_s", json_integer(l->rate));
		json_object_set_new(x, "allowed_per_s", json_real(l->allowed));
		json_object_set_new(x, "refused_per_s", json_real(l->refused));
		json_object_set_new(x, "tcp_per_s", json_real(l->tcp));
		json_object_set_new(x, "hosts", json_integer(l->hosts));
		if (l->automatic) /* absent for a rule's: as before */
			json_object_set_new(x, "auto", json_true());
		json_array_append_new(a, x);
	}
	return a;
}

void ks_render_fleet_json(FILE *f, const struct ks_fleet_out *o, int one_line)
{
	const struct ks_fleet_snapshot *s = o->s;
	const struct ks_fleet_view *v = o->v;
	json_t *d = json_object(), *a;
	size_t i;

	json_object_set_new(d, "schema", json_integer(KS_FLEET_SCHEMA));
	json_object_set_new(d, "cluster", str(o->cluster));
	json_object_set_new(d, "store_revision", json_integer(s->store_rev));
	json_object_set_new(d, "ring_revision", json_integer(s->ring_rev));
	json_object_set_new(d, "ring_valid", json_boolean(s->ring_valid));
	if (s->ring_rev && !s->ring_valid)
		json_object_set_new(d, "ring_error", str(s->ring_why));
	a = json_array();
	for (i = 0; i < s->n_hosts; i++)
		json_array_append_new(a, host_json(o, i));
	json_object_set_new(d, "hosts", a);
	a = json_array();
	for (i = 0; i < v->n_shards; i++)
		json_array_append_new(a, shard_json(o, i));
	json_object_set_new(d, "shards", a);
	json_object_set_new(d, "busiest",
			    v->busiest >= 0 ? str(v->shards[v->busiest].name)
					    : json_null());
	a = json_array();
	for (i = 0; i < v->n_shards; i++)
		if (v->shards[i].host < 0)
			json_array_append_new(a, str(v->shards[i].name));
	json_object_set_new(d, "shards_without_agent", a);
	json_object_set_new(d, "reads_per_s", reads_json(o));
	json_object_set_new(d, "top_keys", top_json(o));
	a = json_array();
	for (i = 0; i < v->n_hot; i++)
		json_array_append_new(a, hot_json(o, &v->hot[i]));
	json_object_set_new(d, "hot", a);
	json_object_set_new(d, "hot_refused", refused_json(s));
	json_object_set_new(d, "pins_revision", json_integer(s->pins_rev));
	json_object_set_new(d, "dedicated", dedicated_json(o));
	json_object_set_new(d, "limits", limits_json(o));
	json_object_set_new(d, "limited_keys", limited_keys_json(o));
	json_object_set_new(d, "limited_keys_omitted",
			    json_integer(v->limits_omitted));
	if (o->watch_state) {
		json_t *w = json_object();

		json_object_set_new(w, "up", json_boolean(o->watch_up));
		json_object_set_new(w, "state", str(o->watch_state));
		json_object_set_new(d, "watch", w);
	}
	json_dumpf(d, f,
		   JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10) |
			   (one_line ? JSON_COMPACT : JSON_INDENT(2)));
	fputc('\n', f);
	json_decref(d);
}
