// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* fleet_view.c - what 'agent fleet' shows, decided (see fleet_view.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/fleet_view.h"
#include "core/mc_key.h"

int ks_fleet_hash_parse(const char *s, uint64_t *hash)
{
	uint64_t h = 0;
	int i;

	/* Lowercase only: the key's last part must be the hash as written,
	 * so two spellings of one hash are never two entries. */
	for (i = 0; i < 16; i++) {
		char c = s[i];

		if (c >= '0' && c <= '9')
			h = h << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			h = h << 4 | (uint64_t)(c - 'a' + 10);
		else
			return -1;
	}
	if (s[16])
		return -1;
	*hash = h;
	return 0;
}

/* The host's entry names this shard: by its shard's name, which the agent
 * writes as the ring's "host:port", or by --self when it has none. */
static int names_shard(const struct ks_fleet_host *h, const char *name)
{
	if (h->have_shard && !strcmp(h->shard_name, name))
		return 1;
	return !strcmp(h->self, name);
}

/* The ring's shard each valid host names, or -1. */
static long shard_of(const struct ks_fleet_snapshot *s,
		     const struct ks_fleet_host *h)
{
	size_t i;

	for (i = 0; i < s->n_ring; i++)
		if (names_shard(h, s->ring[i]))
			return (long)i;
	return -1;
}

/* Shards joined with the newest valid entry naming each. */
static void join(const struct ks_fleet_snapshot *s, struct ks_fleet_view *v)
{
	size_t i;

	for (i = 0; i < s->n_ring; i++) {
		v->shards[i].name = s->ring[i];
		v->shards[i].host = -1;
	}
	for (i = 0; i < s->n_hosts; i++) {
		const struct ks_fleet_host *h = &s->hosts[i];
		long k = h->valid ? shard_of(s, h) : -1;
		struct ks_fleet_shard *sh;

		v->host_shard[i] = -1;
		/* a member without its load document yet has said no
		 * ring revision: not known to be behind */
		v->host_stale[i] = h->valid && !h->no_load && s->ring_rev > 0 &&
				   h->ring_rev < s->ring_rev;
		if (k < 0)
			continue;
		sh = &v->shards[k];
		if (sh->host >= 0 && s->hosts[sh->host].mod_rev >= h->mod_rev)
			continue;
		if (sh->host >= 0)
			v->host_shard[sh->host] = -1;
		sh->host = (long)i;
		v->host_shard[i] = k;
	}
	for (i = 0; i < s->n_ring; i++) {
		struct ks_fleet_shard *sh = &v->shards[i];
		const struct ks_fleet_host *h;

		if (sh->host < 0)
			continue;
		h = &s->hosts[sh->host];
		sh->reads = h->reads;
		sh->served = h->served;
		sh->writes = h->writes;
		sh->mis = h->mis;
		sh->ring_rev = h->ring_rev;
		sh->stale = v->host_stale[sh->host];
		sh->purging = !strcmp(h->purge, "purging") ||
			      !strcmp(h->purge, "grace");
	}
}

/* Share, ratio to the mean and the busiest, over the shards with an
 * agent: a gone agent's shard has no figures, not zero load. */
static void shard_load(struct ks_fleet_view *v)
{
	size_t i;

	v->busiest = -1;
	for (i = 0; i < v->n_shards; i++) {
		struct ks_fleet_shard *sh = &v->shards[i];

		if (sh->host < 0)
			continue;
		v->n_up++;
		v->sum += sh->reads;
		if (sh->reads > v->max) {
			v->max = sh->reads;
			v->busiest = (long)i;
		}
	}
	v->mean = v->n_up ? v->sum / (double)v->n_up : 0;
	for (i = 0; i < v->n_shards; i++) {
		struct ks_fleet_shard *sh = &v->shards[i];

		if (sh->host < 0)
			continue;
		sh->share = v->sum > 0 ? sh->reads / v->sum : 0;
		sh->ratio = v->mean > 0 ? sh->reads / v->mean : 0;
	}
	if (v->busiest >= 0)
		v->shards[v->busiest].busiest = 1;
}

/* No ring: max and mean over the valid hosts, as one row each. */
static void host_load(const struct ks_fleet_snapshot *s,
		      struct ks_fleet_view *v)
{
	size_t i, n = 0;

	v->max_host = -1;
	for (i = 0; i < s->n_hosts; i++) {
		if (!s->hosts[i].valid)
			continue;
		n++;
		v->sum += s->hosts[i].reads;
		if (v->max_host < 0 || s->hosts[i].reads > v->max) {
			v->max = s->hosts[i].reads;
			v->max_host = (long)i;
		}
	}
	v->mean = n ? v->sum / (double)n : 0;
}

/* The hosts no shard row shows, and the shard each names if any. */
static void leftovers(const struct ks_fleet_snapshot *s,
		      struct ks_fleet_view *v)
{
	size_t i;

	for (i = 0; i < s->n_hosts; i++) {
		if (v->host_shard[i] >= 0)
			continue;
		v->others[v->n_others] = i;
		v->other_shard[v->n_others++] = s->hosts[i].valid
							? shard_of(s,
								   &s->hosts[i])
							: -1;
	}
}

/* Busiest (reads + writes) first, then by hash: the same snapshot always
 * prints the same. */
static int by_load(double rx, double wx, uint64_t hx, double ry, double wy,
		   uint64_t hy)
{
	double lx = rx + wx, ly = ry + wy;

	if (lx != ly)
		return lx > ly ? -1 : 1;
	return hx < hy ? -1 : hx > hy;
}

static int cmp_key(const void *a, const void *b)
{
	const struct ks_fleet_key *x = a, *y = b;

	return by_load(x->reads, x->writes, x->hash, y->reads, y->writes,
		       y->hash);
}

static struct ks_fleet_key *find_key(struct ks_fleet_key *k, size_t n,
				     uint64_t hash)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (k[i].hash == hash)
			return &k[i];
	return NULL;
}

/* Every valid host's top summed by hash, the top_k busiest kept. Hosts
 * publish at most a few keys each, so a linear search is enough. */
static int merge_top(const struct ks_fleet_snapshot *s, size_t top_k,
		     int hash_only, struct ks_fleet_view *v)
{
	size_t i, j, cap = 0, n = 0;
	struct ks_fleet_key *all;

	for (i = 0; i < s->n_hosts; i++)
		if (s->hosts[i].valid)
			cap += s->hosts[i].n_top;
	if (!top_k || !cap)
		return 0;
	all = calloc(cap, sizeof(*all));
	if (!all)
		return -ENOMEM;
	for (i = 0; i < s->n_hosts; i++) {
		const struct ks_fleet_host *h = &s->hosts[i];

		for (j = 0; h->valid && j < h->n_top; j++) {
			const struct ks_fleet_key *t = &h->top[j];
			struct ks_fleet_key *m = find_key(all, n, t->hash);

			if (!m) {
				m = &all[n++];
				m->hash = t->hash;
			}
			m->reads += t->reads;
			m->writes += t->writes;
			m->hosts++;
			if (!hash_only && !m->key[0] && t->key[0])
				memcpy(m->key, t->key, sizeof(m->key));
		}
	}
	qsort(all, n, sizeof(*all), cmp_key);
	v->top = all;
	v->n_top = n < top_k ? n : top_k;
	return 0;
}

static int cmp_hot(const void *a, const void *b)
{
	const struct ks_fleet_hot_row *x = a, *y = b;

	return by_load(x->v[KS_LHF_READS], x->v[KS_LHF_WRITES], x->e->hash,
		       y->v[KS_LHF_READS], y->v[KS_LHF_WRITES], y->e->hash);
}

/* The owner's load document's figures for e, when it lists the key: its
 * member (schema 2) joined with a load document. */
static const struct ks_load_hot *load_figures(const struct ks_fleet_snapshot *s,
					      const struct ks_fleet_hot *e)
{
	size_t i, j;

	for (i = 0; i < s->n_hosts; i++) {
		const struct ks_fleet_host *h = &s->hosts[i];

		if (!h->valid || h->kind != KS_FHK_MEMBER || h->no_load ||
		    strcmp(h->self, e->owner))
			continue;
		for (j = 0; j < h->n_hot; j++)
			if (h->hot[j].hash == e->hash)
				return &h->hot[j];
	}
	return NULL;
}

/* Rows point at the entries: the snapshot stays as read. */
static void order_hot(const struct ks_fleet_snapshot *s,
		      struct ks_fleet_view *v)
{
	size_t i, f;

	for (i = 0; i < s->n_hot; i++) {
		struct ks_fleet_hot_row *r = &v->hot[i];
		const struct ks_load_hot *l = load_figures(s, &s->hot[i]);

		r->e = &s->hot[i];
		r->from_load = l != NULL;
		for (f = 0; f < KS_LHF_N; f++)
			r->v[f] = l ? l->v[f] : NAN;
		if (!l) {
			r->v[KS_LHF_READS] = r->e->reads;
			r->v[KS_LHF_WRITES] = r->e->writes;
		}
	}
	qsort(v->hot, s->n_hot, sizeof(v->hot[0]), cmp_hot);
	v->n_hot = s->n_hot;
}

/* The pins document's limit rule for a summed key: an exact rule by the
 * key's hash (a hash-only document names it too), else the longest
 * prefix rule its text starts with (the text escapes byte by byte, so
 * the escaped prefix is a prefix of it); -1 when none. */
static long limit_rule(const struct ks_hot_rules *p,
		       const struct ks_fleet_limit *l)
{
	char pre[KS_FLEET_KEY_TEXT];
	long best = -1;
	size_t i, blen = 0;

	for (i = 0; p && i < p->n; i++) {
		const struct ks_hot_rule *r = &p->r[i];
		__u64 words[KS_KEY_WORDS] = {};

		if (r->type == KS_RULE_LIMIT && r->len <= KS_KEY_BUF) {
			memcpy(words, r->key, r->len);
			if (ks_key_hash(words, r->len) == l->hash)
				return (long)i;
		} else if (r->type == KS_RULE_LIMIT_PREFIX && l->key[0] &&
			   r->len > blen) {
			ks_key_text(r->key, r->len, pre, sizeof(pre));
			if (!strncmp(l->key, pre, strlen(pre))) {
				best = (long)i;
				blen = r->len;
			}
		}
	}
	return best;
}

static int cmp_limit(const void *a, const void *b)
{
	const struct ks_fleet_limit *x = a, *y = b;
	double bx = x->allowed + x->refused + x->tcp;
	double by = y->allowed + y->refused + y->tcp;

	if (bx != by)
		return bx > by ? -1 : 1;
	return x->hash < y->hash ? -1 : x->hash > y->hash;
}

/* Every valid host's limited keys summed by hash. 0 or -ENOMEM. */
static int sum_limits(const struct ks_fleet_snapshot *s, int hash_only,
		      struct ks_fleet_view *v)
{
	size_t i, j, k, cap = 0;

	for (i = 0; i < s->n_hosts; i++)
		if (s->hosts[i].valid)
			cap += s->hosts[i].n_limits;
	v->limits = calloc(cap ? cap : 1, sizeof(*v->limits));
	if (!v->limits)
		return -ENOMEM;
	for (i = 0; i < s->n_hosts; i++) {
		const struct ks_fleet_host *h = &s->hosts[i];

		if (!h->valid)
			continue;
		v->limits_omitted += h->limits_omitted;
		for (j = 0; j < h->n_limits; j++) {
			const struct ks_load_limit *x = &h->limits[j];
			struct ks_fleet_limit *o;

			for (k = 0;
			     k < v->n_limits && v->limits[k].hash != x->hash;
			     k++)
				;
			o = &v->limits[k];
			if (k == v->n_limits) {
				v->n_limits++;
				o->hash = x->hash;
				o->rate = x->rate;
			}
			if (!o->key[0] && x->key[0])
				snprintf(o->key, sizeof(o->key), "%s", x->key);
			o->allowed += x->allowed_ps;
			o->refused += x->refused_ps;
			o->tcp += x->tcp_ps;
			o->automatic |= x->automatic;
			o->hosts++;
		}
	}
	/* the rule from the text before hash_only hides it: a prefix rule
	 * is found by its key's text alone */
	for (k = 0; k < v->n_limits; k++) {
		v->limits[k].rule = limit_rule(s->pins, &v->limits[k]);
		if (hash_only)
			v->limits[k].key[0] = '\0';
	}
	qsort(v->limits, v->n_limits, sizeof(v->limits[0]), cmp_limit);
	return 0;
}

int ks_fleet_view_build(const struct ks_fleet_snapshot *s, size_t top_k,
			int hash_only, struct ks_fleet_view *v)
{
	size_t nh = s->n_hosts ? s->n_hosts : 1;

	memset(v, 0, sizeof(*v));
	v->busiest = -1;
	v->max_host = -1;
	v->n_shards = s->n_ring;
	v->n_hosts = s->n_hosts;
	v->shards = calloc(s->n_ring ? s->n_ring : 1, sizeof(*v->shards));
	v->others = calloc(nh, sizeof(*v->others));
	v->other_shard = calloc(nh, sizeof(*v->other_shard));
	v->host_shard = calloc(nh, sizeof(*v->host_shard));
	v->host_stale = calloc(nh, sizeof(*v->host_stale));
	v->hot = calloc(s->n_hot ? s->n_hot : 1, sizeof(*v->hot));
	if (!v->shards || !v->others || !v->other_shard || !v->host_shard ||
	    !v->host_stale || !v->hot)
		goto nomem;
	join(s, v);
	if (s->n_ring)
		shard_load(v);
	else
		host_load(s, v);
	leftovers(s, v);
	if (merge_top(s, top_k, hash_only, v))
		goto nomem;
	order_hot(s, v);
	if (sum_limits(s, hash_only, v))
		goto nomem;
	return 0;
nomem:
	ks_fleet_view_free(v);
	return -ENOMEM;
}

void ks_fleet_view_free(struct ks_fleet_view *v)
{
	free(v->shards);
	free(v->others);
	free(v->other_shard);
	free(v->host_shard);
	free(v->host_stale);
	free(v->top);
	free(v->hot);
	free(v->limits);
	memset(v, 0, sizeof(*v));
	v->busiest = -1;
	v->max_host = -1;
}
