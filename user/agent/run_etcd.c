// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* run_etcd.c - the ring from etcd in 'agent run' (see run_etcd.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>
#include "agent/run_etcd.h"
#include "net/etcd_pub.h"
#include "render/text.h"
#include "core/fleet_doc.h"
#include "core/pins_doc.h"
#include "core/ring_doc.h"
#include "net/etcd.h"
#include "util/log.h"
#include "util/clock.h"
#include "util/opts.h"

/* What apply() and deleted() act on; m NULL: before the start. */
struct ctx {
	struct ks_run_ring *ring;
	struct ks_run_hot *hot;
	const struct ks_maps *m;
	struct ks_collector *c;
};

/* ---- the ring ---- */

/* The document of kv: a ring pushed (or, before the start, made the ring
 * to push), or refused and counted. */
static int ring_apply(void *ud, void *cp, const struct ks_etcd_kv *kv)
{
	struct ks_run_etcd *e = ud;
	struct ctx *x = cp;
	char err[KS_ERRLEN_DOC * 2], why[KS_ERRLEN_DOC * 3], src[160];
	struct ks_ring_doc d;
	struct ks_shards shards;
	struct ks_ring r;
	int rc, forced = 0;

	rc = ks_ring_doc_decode(kv->value, kv->value_len, &d, err, sizeof(err));
	if (!rc) {
		rc = ks_ring_doc_build(&d, x->ring->spec.self, 0, &shards, &r,
				       err, sizeof(err));
		forced = d.force;
		ks_ring_doc_free(&d);
	}
	if (rc) {
		e->refused++;
		snprintf(why, sizeof(why),
			 "etcd %s revision %" PRId64 " refused: %s",
			 e->conf.ring_key, kv->mod_revision, err);
		return ks_run_ring_refuse(x->ring, x->m, why);
	}
	snprintf(src, sizeof(src), "etcd %s", e->conf.ring_key);
	x->ring->ext_forced = forced;
	rc = ks_run_ring_take(x->ring, x->m, x->c, &shards, &r,
			      (__u64)kv->mod_revision, src);
	if (!rc)
		e->rev = kv->mod_revision;
	return rc;
}

static void ring_deleted(void *ud, void *cp, const struct ks_etcd_kv *kv)
{
	struct ks_run_etcd *e = ud;
	struct ctx *x = cp;

	ks_warn("etcd: %s was deleted at revision %" PRId64
		"; the ring v%llu stays",
		e->conf.ring_key, kv->mod_revision,
		(unsigned long long)x->ring->version);
}

static void ring_stays(void *ud, char *buf, size_t len)
{
	struct ks_run_etcd *e = ud;

	snprintf(buf, len, "the ring v%" PRId64, e->rev);
}

/* ---- the fleet's pins ---- */

static int pins_apply(void *ud, void *cp, const struct ks_etcd_kv *kv)
{
	struct ks_run_etcd *e = ud;
	struct ctx *x = cp;
	struct ks_pins_doc *d = malloc(sizeof(*d));
	char err[KS_ERRLEN_DOC * 2], src[200];

	if (!d)
		return 0; /* the old rules stay; memory is tight */
	snprintf(src, sizeof(src), "etcd %s revision %" PRId64, e->pins_key,
		 kv->mod_revision);
	if (ks_pins_doc_decode(kv->value, kv->value_len, src, d, err,
			       sizeof(err))) {
		e->pins_refused++;
		ks_warn("pins not reloaded: %s refused: %s; the previous pins stay",
			src, err);
	} else {
		e->pins_rev = kv->mod_revision;
		ks_run_hot_fleet_rules(x->hot, &d->rules, src);
	}
	free(d);
	return 0;
}

static void pins_deleted(void *ud, void *cp, const struct ks_etcd_kv *kv)
{
	struct ks_run_etcd *e = ud;
	struct ctx *x = cp;

	ks_info("etcd: %s was deleted at revision %" PRId64
		"; the fleet has no pins now",
		e->pins_key, kv->mod_revision);
	e->pins_rev = 0;
	ks_run_hot_fleet_rules(x->hot, NULL, NULL);
}

static void pins_stays(void *ud, char *buf, size_t len)
{
	struct ks_run_etcd *e = ud;

	snprintf(buf, len, "the pins of revision %" PRId64, e->pins_rev);
}

/* ---- the fleet's loads (--balance) ---- */

/* The entry's name: the key's last part under prefix. */
static const char *host_self(const char *prefix, const struct ks_etcd_kv *kv,
			     char *buf, size_t len)
{
	size_t plen = strlen(prefix);

	if (kv->key_len <= plen || kv->key_len - plen >= len)
		return NULL;
	memcpy(buf, kv->key + plen, kv->key_len - plen);
	buf[kv->key_len - plen] = '\0';
	return buf;
}

/* A hosts/ entry (schema 1) or a load document (schema 2), by from. */
static int loads_apply(struct ks_run_etcd *e, const char *prefix, int from,
		       const struct ks_etcd_kv *kv)
{
	struct ks_fleet_host *h = malloc(sizeof(*h));
	char self[KS_BALANCE_SELF];
	int want;

	if (!h || !host_self(prefix, kv, self, sizeof(self))) {
		free(h);
		return 0;
	}
	ks_fleet_host_decode(self, kv->value, kv->value_len, h);
	want = from == KS_LOAD_FROM_LOAD ? KS_FHK_LOAD : KS_FHK_HOSTS;
	if (h->valid && h->kind == KS_FHK_COMPAT &&
	    from == KS_LOAD_FROM_HOSTS) {
		/* a schema-2 agent's entry for old readers: its load
		 * document says the same, fresher */
	} else if (h->valid && h->kind == want && h->have_shard) {
		if (ks_fleet_loads_put_from(e->loads, self, h->served, from))
			e->hosts_refused++; /* more hosts than the table */
	} else {
		/* refused, or no shard of the ring: no part of the mean */
		e->hosts_refused += !h->valid || h->kind != want;
		ks_fleet_loads_del_from(e->loads, self, from);
	}
	free(h);
	return 0;
}

static int hosts_apply(void *ud, void *cp, const struct ks_etcd_kv *kv)
{
	struct ks_run_etcd *e = ud;

	(void)cp;
	return loads_apply(e, e->hosts_prefix, KS_LOAD_FROM_HOSTS, kv);
}

static int load_apply(void *ud, void *cp, const struct ks_etcd_kv *kv)
{
	struct ks_run_etcd *e = ud;

	(void)cp;
	return loads_apply(e, e->load_prefix, KS_LOAD_FROM_LOAD, kv);
}

static void hosts_deleted(void *ud, void *cp, const struct ks_etcd_kv *kv)
{
	struct ks_run_etcd *e = ud;
	char self[KS_BALANCE_SELF];

	(void)cp;
	if (host_self(e->hosts_prefix, kv, self, sizeof(self)))
		ks_fleet_loads_del_from(e->loads, self, KS_LOAD_FROM_HOSTS);
}

static void load_deleted(void *ud, void *cp, const struct ks_etcd_kv *kv)
{
	struct ks_run_etcd *e = ud;
	char self[KS_BALANCE_SELF];

	(void)cp;
	if (host_self(e->load_prefix, kv, self, sizeof(self)))
		ks_fleet_loads_del_from(e->loads, self, KS_LOAD_FROM_LOAD);
}

static void hosts_reset(void *ud, void *cp)
{
	struct ks_run_etcd *e = ud;

	(void)cp;
	ks_fleet_loads_clear_from(e->loads, KS_LOAD_FROM_HOSTS);
}

static void load_reset(void *ud, void *cp)
{
	struct ks_run_etcd *e = ud;

	(void)cp;
	ks_fleet_loads_clear_from(e->loads, KS_LOAD_FROM_LOAD);
}

static void hosts_stays(void *ud, char *buf, size_t len)
{
	struct ks_run_etcd *e = ud;

	snprintf(buf, len, "the loads of %zu shards", e->loads->n);
}

double ks_run_etcd_fleet_mean(const struct ks_run_etcd *e, const char *self,
			      double own_ps, size_t *shards)
{
	*shards = 0;
	if (!e || !e->c || !e->loads || !self)
		return 0;
	return ks_fleet_loads_mean(e->loads, self, own_ps, shards);
}

void ks_run_etcd_init(struct ks_run_etcd *e)
{
	memset(e, 0, sizeof(*e));
	ks_etcd_conf_init(&e->conf);
	e->ring_w = (struct ks_key_watch){ .key = e->conf.ring_key,
					   .what = "ring",
					   .apply = ring_apply,
					   .deleted = ring_deleted,
					   .stays = ring_stays,
					   .ud = e };
	e->pins_w = (struct ks_key_watch){ .key = e->pins_key,
					   .what = "pins",
					   .apply = pins_apply,
					   .deleted = pins_deleted,
					   .stays = pins_stays,
					   .ud = e };
	e->hosts_w = (struct ks_key_watch){ .key = e->hosts_prefix,
					    .what = "hosts",
					    .prefix = 1,
					    .apply = hosts_apply,
					    .deleted = hosts_deleted,
					    .reset = hosts_reset,
					    .stays = hosts_stays,
					    .ud = e };
	e->load_w = (struct ks_key_watch){ .key = e->load_prefix,
					   .what = "loads",
					   .prefix = 1,
					   .apply = load_apply,
					   .deleted = load_deleted,
					   .reset = load_reset,
					   .stays = hosts_stays,
					   .ud = e };
}

static void stop_watches(struct ks_run_etcd *e)
{
	ks_key_watch_stop(&e->ring_w);
	ks_key_watch_stop(&e->pins_w);
	ks_key_watch_stop(&e->hosts_w);
	ks_key_watch_stop(&e->load_w);
}

int ks_run_etcd_prepare(struct ks_run_etcd *e, struct ks_run_ring *ring,
			struct ks_run_hot *hot, char *err, size_t errlen)
{
	struct ctx x = { .ring = ring, .hot = hot };
	char sub[KS_ERRLEN_DOC * 2];
	const char *key = e->conf.ring_key;
	int rc, map_err;

	rc = ks_etcd_conf_check(&e->conf, err, errlen);
	if (rc || !e->conf.endpoints)
		return rc;
	ks_pins_doc_key(e->conf.cluster, e->pins_key, sizeof(e->pins_key));
	snprintf(e->hosts_prefix, sizeof(e->hosts_prefix),
		 KS_ETCD_ROOT "%s/hosts/", e->conf.cluster);
	snprintf(e->load_prefix, sizeof(e->load_prefix), KS_LOAD_ROOT "%s/",
		 e->conf.cluster);
	if (e->want_loads && !e->loads &&
	    !(e->loads = calloc(1, sizeof(*e->loads)))) {
		snprintf(err, errlen, "out of memory for the fleet's loads");
		return -ENOMEM;
	}
	rc = ks_etcd_conf_connect(&e->conf, &e->c, sub, sizeof(sub));
	if (rc == -EINVAL || rc == -ENOMEM) {
		/* bad URLs and files: refused, --etcd-optional or not */
		snprintf(err, errlen, "%s", sub);
		return rc;
	}
	/* before the start (no maps in the context): the ring and the
	 * rules are taken into what the start will push */
	if (!rc) {
		rc = ks_key_watch_start(&e->ring_w, e->c, &x, 1, &map_err);
		if (!rc) {
			key = e->pins_key;
			rc = ks_key_watch_start(&e->pins_w, e->c, &x, 1,
						&map_err);
		}
		if (!rc && e->loads) {
			key = e->hosts_prefix;
			rc = ks_key_watch_start(&e->hosts_w, e->c, &x, 0,
						&map_err);
		}
		if (!rc && e->loads) {
			key = e->load_prefix;
			rc = ks_key_watch_start(&e->load_w, e->c, &x, 0,
						&map_err);
		}
		if (rc)
			snprintf(sub, sizeof(sub), "etcd at %s: reading %s: %s",
				 e->conf.endpoints, key, ks_etcd_errmsg(e->c));
	}
	if (rc) {
		stop_watches(e);
		ks_etcd_close(e->c);
		e->c = NULL;
		if (e->conf.optional) {
			ks_warn("%s; --etcd-optional: running without etcd",
				sub);
			return 0;
		}
		snprintf(err, errlen,
			 "%s (or give --etcd-optional to start without it)",
			 sub);
		return rc;
	}
	ks_info("etcd %s at %s: the ring is %s (%s), the fleet's pins %s (%s)",
		e->conf.version, ks_etcd_endpoint(e->c), e->conf.ring_key,
		e->rev ? "read" : "none yet", e->pins_key,
		e->pins_rev ? "read" : "none");
	return 0;
}

int ks_run_etcd_fds(const struct ks_run_etcd *e, int *fds)
{
	int n = 0;

	if (!e)
		return 0;
	if (ks_key_watch_fd(&e->ring_w) >= 0)
		fds[n++] = ks_key_watch_fd(&e->ring_w);
	if (ks_key_watch_fd(&e->pins_w) >= 0)
		fds[n++] = ks_key_watch_fd(&e->pins_w);
	if (e->loads && ks_key_watch_fd(&e->hosts_w) >= 0)
		fds[n++] = ks_key_watch_fd(&e->hosts_w);
	if (e->loads && ks_key_watch_fd(&e->load_w) >= 0)
		fds[n++] = ks_key_watch_fd(&e->load_w);
	return n;
}

int ks_run_etcd_timeout_ms(const struct ks_run_etcd *e)
{
	int a, b;

	if (!e)
		return -1;
	a = ks_key_watch_timeout_ms(&e->ring_w);
	b = ks_key_watch_timeout_ms(&e->pins_w);
	a = a < 0 ? b : b < 0 ? a : a < b ? a : b;
	b = e->loads ? ks_key_watch_timeout_ms(&e->hosts_w) : -1;
	a = a < 0 ? b : b < 0 ? a : a < b ? a : b;
	b = e->loads ? ks_key_watch_timeout_ms(&e->load_w) : -1;
	return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

int ks_run_etcd_poll(struct ks_run_etcd *e, struct ks_run_ring *ring,
		     struct ks_run_hot *hot, const struct ks_maps *m,
		     struct ks_collector *c)
{
	struct ctx x = { .ring = ring, .hot = hot, .m = m, .c = c };
	int err;

	if (!e || !e->c)
		return 0;
	err = ks_key_watch_poll(&e->ring_w, e->c, &x);
	if (!err)
		err = ks_key_watch_poll(&e->pins_w, e->c, &x);
	if (!err && e->loads)
		err = ks_key_watch_poll(&e->hosts_w, e->c, &x);
	if (!err && e->loads)
		err = ks_key_watch_poll(&e->load_w, e->c, &x);
	return err;
}

void ks_run_etcd_status(const struct ks_run_etcd *e, FILE *f, __u32 seq)
{
	uint64_t calls, wait_ns;

	if (!e || !e->c)
		return;
	fprintf(f,
		"keysteer: #%u etcd: ring revision %" PRId64
		" from %s, watch %s, %llu refused, %llu watch errors; pins revision %" PRId64
		", watch %s, %llu refused; ",
		seq, e->rev, e->conf.ring_key, ks_key_watch_state(&e->ring_w),
		(unsigned long long)e->refused,
		(unsigned long long)(e->ring_w.watch_errors +
				     e->pins_w.watch_errors),
		e->pins_rev, ks_key_watch_state(&e->pins_w),
		(unsigned long long)e->pins_refused);
	ks_fleet_pub_status(&e->fleet, f);
	/* the caller is the loop: its own waits for etcd, none by design
	 * (the publisher's thread and the watches do the I/O) */
	ks_etcd_thread_waits(&calls, &wait_ns);
	fprintf(f, "; the loop waited %.1f ms in %llu etcd calls\n",
		wait_ns / 1e6, (unsigned long long)calls);
}

/* ---- hosts/<self> and hot/<hash> (agent/fleet_pub.c) ---- */

void ks_run_etcd_publish_start(struct ks_run_etcd *e, const char *self,
			       const char *ifname, __u32 interval_ms,
			       int export_keys)
{
	if (!e || !e->c)
		return;
	ks_fleet_pub_start(&e->fleet, e->c, e->conf.cluster, self, ifname,
			   interval_ms, export_keys, e->hash_only);
	e->fleet.compat = e->fleet_compat;
	e->fleet.schema1 = e->fleet_schema1;
	e->fleet.load_every = e->load_every ? e->load_every
					    : KS_LOAD_EVERY_DEFAULT;
	if (e->ka_on_loop && e->fleet.pub)
		ks_etcd_pub_test_keepalive_on_tick(e->fleet.pub, 1);
}

void ks_run_etcd_publish_interval(struct ks_run_etcd *e,
				  const struct ks_report *rep,
				  const struct ks_run_ring *ring,
				  const struct ks_hot_table *t,
				  const struct ks_run_steer *steer,
				  const struct ks_limit_set *limits)
{
	if (!e || !e->c)
		return;
	e->fleet.limits = limits;
	/* --etcd-loop-call on: the loop waits for etcd, as it did before
	 * the publisher's thread (its whole deadline while etcd is away) */
	if (e->loop_call && ks_etcd_status(e->c, NULL, 0))
		ks_debug("etcd: the loop's call: %s", ks_etcd_errmsg(e->c));
	ks_fleet_pub_interval(&e->fleet, rep, ring, t, steer, e->rev);
	/* --etcd-keepalive loop: the keeper's one renewal of the interval,
	 * after its work */
	if (e->ka_on_loop && e->fleet.pub)
		ks_etcd_pub_tick(e->fleet.pub);
}

void ks_run_etcd_free(struct ks_run_etcd *e)
{
	ks_fleet_pub_stop(&e->fleet);
	stop_watches(e);
	ks_etcd_close(e->c);
	e->c = NULL;
	free(e->loads);
	e->loads = NULL;
}
