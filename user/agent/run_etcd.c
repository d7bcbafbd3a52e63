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
		" from %s, watch %s, %llu refused, %llu watch errors; ",
		seq, e->rev, e->conf.ring_key,
		e->up  ? "up"
		: e->w ? "reconnecting"
		       : "stopped",
		(unsigned long long)e->refused,
		(unsigned long long)e->watch_errors);
	ks_fleet_pub_status(&e->fleet, f);
	fputc('\n', f);
}

/* ---- hosts/<self> and hot/<hash> (agent/fleet_pub.c) ---- */

void ks_run_etcd_publish_start(struct ks_run_etcd *e, const char *self,
			       const char *ifname, __u32 interval_ms,
			       int export_keys)
{
	if (e && e->c)
		ks_fleet_pub_start(&e->fleet, e->c, e->conf.cluster, self,
				   ifname, interval_ms, export_keys,
				   e->hash_only);
}

void ks_run_etcd_publish_interval(struct ks_run_etcd *e,
				  const struct ks_report *rep,
				  const struct ks_run_ring *ring,
				  const struct ks_hot_table *t,
				  const struct ks_run_steer *steer)
{
	if (e && e->c)
		ks_fleet_pub_interval(&e->fleet, rep, ring, t, steer, e->rev);
}

void ks_run_etcd_free(struct ks_run_etcd *e)
{
	ks_fleet_pub_stop(&e->fleet);
	ks_etcd_watch_stop(e->w);
	e->w = NULL;
	ks_etcd_close(e->c);
	e->c = NULL;
}
