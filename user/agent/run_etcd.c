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
#include "render/text.h"
#include "core/ring_doc.h"
#include "net/etcd.h"
#include "util/log.h"
#include "util/clock.h"
#include "util/opts.h"

void ks_run_etcd_init(struct ks_run_etcd *e)
{
	memset(e, 0, sizeof(*e));
	ks_etcd_conf_init(&e->conf);
}

/*
 * The document of kv: a ring pushed (or, before the start, made the ring
 * to push), or refused and counted. m NULL: before the start.
 */
static int apply(struct ks_run_etcd *e, struct ks_run_ring *ring,
		 const struct ks_maps *m, struct ks_collector *c,
		 const struct ks_etcd_kv *kv)
{
	char err[KS_ERRLEN_DOC * 2], why[KS_ERRLEN_DOC * 3], src[160];
	struct ks_ring_doc d;
	struct ks_shards shards;
	struct ks_ring r;
	int rc;

	e->seen = kv->mod_revision;
	rc = ks_ring_doc_decode(kv->value, kv->value_len, &d, err, sizeof(err));
	if (!rc) {
		rc = ks_ring_doc_build(&d, ring->spec.self, 0, &shards, &r, err,
				       sizeof(err));
		ks_ring_doc_free(&d);
	}
	if (rc) {
		e->refused++;
		snprintf(why, sizeof(why),
			 "etcd %s revision %" PRId64 " refused: %s",
			 e->conf.ring_key, kv->mod_revision, err);
		return ks_run_ring_refuse(ring, m, why);
	}
	snprintf(src, sizeof(src), "etcd %s", e->conf.ring_key);
	rc = ks_run_ring_take(ring, m, c, &shards, &r, (__u64)kv->mod_revision,
			      src);
	if (!rc)
		e->rev = kv->mod_revision;
	return rc;
}

/* Reads the key and watches it from the read on; 0 or a negative errno
 * with the client's line. */
static int read_and_watch(struct ks_run_etcd *e, struct ks_run_ring *ring,
			  const struct ks_maps *m, struct ks_collector *c,
			  int *map_err)
{
	const char *key = e->conf.ring_key;
	struct ks_etcd_range rr = { 0 };
	int rc;

	*map_err = 0;
	rc = ks_etcd_range(e->c, key, strlen(key), 0, &rr);
	if (rc)
		return rc;
	if (rr.n && rr.kvs[0].mod_revision != e->seen)
		*map_err = apply(e, ring, m, c, &rr.kvs[0]);
	else if (!rr.n && !m)
		ks_info("no ring in etcd at %s yet (revision %" PRId64
			"); watching it",
			key, rr.revision);
	rc = ks_etcd_watch_start(e->c, key, strlen(key), 0, rr.revision + 1,
				 &e->w);
	ks_etcd_range_free(&rr);
	e->up = 0;
	return rc;
}

int ks_run_etcd_prepare(struct ks_run_etcd *e, struct ks_run_ring *ring,
			char *err, size_t errlen)
{
	char sub[KS_ERRLEN_DOC * 2];
	int rc, map_err;

	rc = ks_etcd_conf_check(&e->conf, err, errlen);
	if (rc || !e->conf.endpoints)
		return rc;
	rc = ks_etcd_conf_connect(&e->conf, &e->c, sub, sizeof(sub));
	if (rc == -EINVAL || rc == -ENOMEM) {
		/* bad URLs and files: refused, --etcd-optional or not */
		snprintf(err, errlen, "%s", sub);
		return rc;
	}
	if (!rc) {
		rc = read_and_watch(e, ring, NULL, NULL, &map_err);
		if (rc)
			snprintf(sub, sizeof(sub), "etcd at %s: reading %s: %s",
				 e->conf.endpoints, e->conf.ring_key,
				 ks_etcd_errmsg(e->c));
	}
	if (rc) {
		ks_etcd_watch_stop(e->w);
		e->w = NULL;
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
	ks_info("etcd %s at %s: the ring is %s (%s)", e->conf.version,
		ks_etcd_endpoint(e->c), e->conf.ring_key,
		e->rev ? "read" : "none yet");
	return 0;
}

int ks_run_etcd_fd(const struct ks_run_etcd *e)
{
	return e && e->w ? ks_etcd_watch_fd(e->w) : -1;
}

int ks_run_etcd_timeout_ms(const struct ks_run_etcd *e)
{
	return e && e->w ? ks_etcd_watch_timeout_ms(e->w) : -1;
}

int ks_run_etcd_poll(struct ks_run_etcd *e, struct ks_run_ring *ring,
		     const struct ks_maps *m, struct ks_collector *c)
{
	struct ks_etcd_event ev;
	int n, err = 0, up;

	if (!e || !e->c)
		return 0;
	if (!e->w) {
		int map_err;

		if (ks_mono_ns() < e->restart_ns)
			return 0;
		if (read_and_watch(e, ring, m, c, &map_err)) {
			ks_etcd_watch_stop(e->w);
			e->w = NULL;
			e->restart_ns = ks_mono_ns() + KS_ETCD_RESTART_NS;
			e->watch_errors++;
			ks_warn("etcd: cannot read and watch %s again (%s); the ring v%llu stays, retrying in %llu s",
				e->conf.ring_key, ks_etcd_errmsg(e->c),
				(unsigned long long)ring->version,
				KS_ETCD_RESTART_NS / 1000000000ULL);
		}
		return map_err;
	}
	n = ks_etcd_watch_run(e->w);
	if (n < 0) {
		e->watch_errors++;
		if (n == -ERANGE || n == -EACCES || n == -EPERM) {
			ks_warn("etcd: the watch of %s ended (%s); the ring v%llu stays, reading it again in %s",
				e->conf.ring_key, ks_etcd_watch_errmsg(e->w),
				(unsigned long long)ring->version,
				n == -ERANGE ? "a moment" : "5 s");
			ks_etcd_watch_stop(e->w);
			e->w = NULL;
			e->up = 0;
			e->restart_ns = n == -ERANGE
						? 0
						: ks_mono_ns() +
							  KS_ETCD_RESTART_NS;
			return 0;
		}
		/* once per outage; the retries while etcd stays away are
		 * counted and shown with -v */
		if (!e->down)
			ks_warn("etcd: the watch of %s broke (%s); the ring v%llu stays, reconnecting",
				e->conf.ring_key, ks_etcd_watch_errmsg(e->w),
				(unsigned long long)ring->version);
		else
			ks_debug("etcd: still away (%s)",
				 ks_etcd_watch_errmsg(e->w));
		e->down = 1;
	}
	up = ks_etcd_watch_created(e->w);
	if (up)
		e->down = 0;
	if (up && !e->up)
		ks_info("etcd: watching %s from revision %" PRId64 " at %s",
			e->conf.ring_key, ks_etcd_watch_next_revision(e->w),
			ks_etcd_endpoint(e->c));
	e->up = up;
	while (ks_etcd_watch_next(e->w, &ev) == 1) {
		if (!err && ev.kv.mod_revision > e->seen) {
			if (ev.type == KS_ETCD_EV_PUT) {
				err = apply(e, ring, m, c, &ev.kv);
			} else {
				e->seen = ev.kv.mod_revision;
				ks_warn("etcd: %s was deleted at revision %" PRId64
					"; the ring v%llu stays",
					e->conf.ring_key, ev.kv.mod_revision,
					(unsigned long long)ring->version);
			}
		}
		ks_etcd_event_free(&ev);
	}
	return err;
}

void ks_run_etcd_status(const struct ks_run_etcd *e, FILE *f, __u32 seq)
{
	if (!e || !e->c)
		return;
	fprintf(f,
		"keysteer: #%u etcd: ring revision %" PRId64
		" from %s, watch %s, %llu refused, %llu watch errors, %llu host puts, %llu host errors\n",
		seq, e->rev, e->conf.ring_key,
		e->up  ? "up"
		: e->w ? "reconnecting"
		       : "stopped",
		(unsigned long long)e->refused,
		(unsigned long long)e->watch_errors,
		(unsigned long long)e->host_puts,
		(unsigned long long)e->host_errors);
}

/* ---- hosts/<self> ---- */

void ks_run_etcd_hosts_start(struct ks_run_etcd *e, const char *self,
			     const char *ifname, __u32 interval_ms)
{
	char host[64] = "localhost";
	int64_t ttl;

	if (!e || !e->c)
		return;
	if (self && self[0]) {
		snprintf(e->self, sizeof(e->self), "%s", self);
	} else {
		gethostname(host, sizeof(host) - 1);
		host[sizeof(host) - 1] = '\0';
		snprintf(e->self, sizeof(e->self), "%s:%s", host, ifname);
	}
	snprintf(e->host_key, sizeof(e->host_key), "%.*shosts/%s",
		 (int)(strlen(e->conf.ring_key) - strlen("ring")),
		 e->conf.ring_key, e->self);
	ttl = ((int64_t)interval_ms * KS_HOSTS_LEASE_INTERVALS + 999) / 1000;
	e->lease_ttl = ttl < 1 ? 1 : ttl;
	if (ks_etcd_lease_grant(e->c, e->lease_ttl, &e->lease, &ttl)) {
		e->host_errors++;
		e->host_down = 1;
		e->lease = 0;
		ks_warn("etcd: cannot grant the lease of %s (%s); retrying each interval",
			e->host_key, ks_etcd_errmsg(e->c));
		return;
	}
	e->lease_ttl = ttl;
	ks_info("etcd: publishing %s under lease %" PRIx64 " (%" PRId64 " s)",
		e->host_key, (uint64_t)e->lease, ttl);
}

/* x rounded to 3 significant digits: changes below it are no change. */
static double round3(double x)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%.3g", x);
	return strtod(buf, NULL);
}

static json_t *rate(__u64 mps)
{
	return json_real(round3(mps / 1000.0));
}

/* The document without updated_at. */
static json_t *host_doc(const struct ks_run_etcd *e,
			const struct ks_report *rep,
			const struct ks_run_ring *ring, int export_keys)
{
	const struct ks_shard_report *g = ring ? ring->rep : NULL;
	json_t *o = json_object(), *cl = json_object(), *top = json_array();
	char hash[24], key[4 * KS_KEY_BUF + 8];
	__u32 i;

	json_object_set_new(o, "schema", json_integer(KS_HOSTS_SCHEMA));
	json_object_set_new(o, "self", json_string(e->self));
	json_object_set_new(o, "agent_version", json_string(KS_VERSION_STR));
	json_object_set_new(o, "pid", json_integer(rep->agent_pid));
	json_object_set_new(o, "ifname", json_string(rep->ifname));
	json_object_set_new(o, "ring_revision", json_integer(e->rev));
	json_object_set_new(o, "interval_ms", json_integer(rep->interval_ms));
	json_object_set_new(o, "sample_n", json_integer(rep->sample_n));
	json_object_set_new(cl, "read",
			    rate(rep->class_req_mps[KS_CLASS_READ]));
	json_object_set_new(cl, "write",
			    rate(rep->class_req_mps[KS_CLASS_WRITE]));
	json_object_set_new(cl, "other",
			    rate(rep->class_req_mps[KS_CLASS_OTHER]));
	json_object_set_new(o, "class_rates", cl);
	if (g && g->nshards && g->self < g->nshards) {
		const struct ks_shard_rate *s = &g->shards[g->self];
		json_t *sh = json_object();

		json_object_set_new(sh, "name", json_string(s->name));
		json_object_set_new(sh, "reads_per_s", rate(s->reads_mps));
		json_object_set_new(sh, "writes_per_s", rate(s->writes_mps));
		json_object_set_new(sh, "misdirected_per_s",
				    rate(s->misdirected_mps));
		json_object_set_new(o, "shard", sh);
	} else {
		json_object_set_new(o, "shard", json_null());
	}
	for (i = 0; i < rep->n_top && i < KS_HOSTS_TOP; i++) {
		const struct ks_top_entry *t = &rep->top[i];
		json_t *k = json_object();

		snprintf(hash, sizeof(hash), "%016llx",
			 (unsigned long long)t->hash);
		json_object_set_new(k, "hash", json_string(hash));
		if (export_keys) {
			ks_key_text(t->key, t->len, key, sizeof(key));
			json_object_set_new(k, "key", json_string(key));
		}
		json_object_set_new(k, "reads_per_s", rate(t->reads_mps));
		json_object_set_new(k, "writes_per_s", rate(t->writes_mps));
		json_array_append_new(top, k);
	}
	json_object_set_new(o, "top", top);
	return o;
}

static void host_failed(struct ks_run_etcd *e, const char *doing)
{
	e->host_errors++;
	if (!e->host_down)
		ks_warn("etcd: %s %s failed (%s); retrying each interval",
			doing, e->host_key, ks_etcd_errmsg(e->c));
	e->host_down = 1;
}

void ks_run_etcd_hosts_interval(struct ks_run_etcd *e,
				const struct ks_report *rep,
				const struct ks_run_ring *ring, int export_keys)
{
	char at[40], *cmp, *doc;
	struct tm tm;
	time_t now;
	json_t *o;
	int rc;

	if (!e || !e->c || !e->host_key[0])
		return;
	e->since_put++;
	if (e->lease) {
		rc = ks_etcd_lease_keepalive(e->c, e->lease, NULL);
		if (rc == -ENOENT) {
			ks_warn("etcd: the lease of %s expired; granting a new one",
				e->host_key);
			e->lease = 0;
		} else if (rc) {
			host_failed(e, "keeping the lease of");
			return;
		}
	}
	if (!e->lease) {
		int64_t ttl;

		if (ks_etcd_lease_grant(e->c, e->lease_ttl, &e->lease, &ttl)) {
			e->lease = 0;
			host_failed(e, "granting the lease of");
			return;
		}
		free(e->last);
		e->last = NULL; /* the key went with the old lease */
	}
	o = host_doc(e, rep, ring, export_keys);
	cmp = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (cmp && e->last && !strcmp(cmp, e->last) &&
	    e->since_put < KS_HOSTS_HEARTBEAT) {
		free(cmp);
		json_decref(o);
		return;
	}
	now = time(NULL);
	gmtime_r(&now, &tm);
	strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_object_set_new(o, "updated_at", json_string(at));
	doc = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!cmp || !doc) {
		free(cmp);
		free(doc);
		return;
	}
	rc = ks_etcd_put(e->c, e->host_key, strlen(e->host_key), doc,
			 strlen(doc), e->lease, NULL);
	free(doc);
	if (rc) {
		free(cmp);
		host_failed(e, "writing");
		return;
	}
	if (e->host_down)
		ks_info("etcd: %s written again", e->host_key);
	e->host_down = 0;
	free(e->last);
	e->last = cmp;
	e->since_put = 0;
	e->host_puts++;
}

void ks_run_etcd_free(struct ks_run_etcd *e)
{
	if (e->c && e->lease)
		ks_etcd_lease_revoke(e->c, e->lease);
	e->lease = 0;
	free(e->last);
	e->last = NULL;
	ks_etcd_watch_stop(e->w);
	e->w = NULL;
	ks_etcd_close(e->c);
	e->c = NULL;
}
