// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* key_watch.c - one etcd key followed by 'agent run' (see key_watch.h). */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include "agent/key_watch.h"
#include "net/etcd.h"
#include "util/clock.h"
#include "util/log.h"

int ks_key_watch_start(struct ks_key_watch *kw, struct ks_etcd *c, void *ctx,
		       int at_start, int *apply_err)
{
	struct ks_etcd_range rr = { 0 };
	int rc;

	*apply_err = 0;
	rc = ks_etcd_range(c, kw->key, strlen(kw->key),
			   kw->prefix ? KS_ETCD_PREFIX : 0, &rr);
	if (rc)
		return rc;
	if (kw->prefix) {
		size_t i;

		if (kw->reset)
			kw->reset(kw->ud, ctx);
		for (i = 0; i < rr.n && !*apply_err; i++)
			*apply_err = kw->apply(kw->ud, ctx, &rr.kvs[i]);
		kw->seen = rr.revision;
	} else if (rr.n && rr.kvs[0].mod_revision != kw->seen) {
		kw->seen = rr.kvs[0].mod_revision;
		*apply_err = kw->apply(kw->ud, ctx, &rr.kvs[0]);
	} else if (!rr.n && at_start) {
		ks_info("no %s in etcd at %s yet (revision %" PRId64
			"); watching it",
			kw->what, kw->key, rr.revision);
	}
	rc = ks_etcd_watch_start(c, kw->key, strlen(kw->key),
				 kw->prefix ? KS_ETCD_PREFIX : 0,
				 rr.revision + 1, &kw->w);
	ks_etcd_range_free(&rr);
	kw->up = 0;
	return rc;
}

static void restart_later(struct ks_key_watch *kw, __u64 after_ns)
{
	ks_etcd_watch_stop(kw->w);
	kw->w = NULL;
	kw->up = 0;
	kw->restart_ns = ks_mono_ns() + after_ns;
}

int ks_key_watch_poll(struct ks_key_watch *kw, struct ks_etcd *c, void *ctx)
{
	struct ks_etcd_event ev;
	char stays[200];
	int n, err = 0, up;

	if (!kw->w) {
		int apply_err;

		if (ks_mono_ns() < kw->restart_ns)
			return 0;
		if (ks_key_watch_start(kw, c, ctx, 0, &apply_err)) {
			restart_later(kw, KS_ETCD_RESTART_NS);
			kw->watch_errors++;
			kw->stays(kw->ud, stays, sizeof(stays));
			ks_warn("etcd: cannot read and watch %s again (%s); %s stays, retrying in %llu s",
				kw->key, ks_etcd_errmsg(c), stays,
				KS_ETCD_RESTART_NS / 1000000000ULL);
		}
		return apply_err;
	}
	n = ks_etcd_watch_run(kw->w);
	if (n < 0) {
		kw->watch_errors++;
		kw->stays(kw->ud, stays, sizeof(stays));
		if (n == -ERANGE || n == -EACCES || n == -EPERM) {
			ks_warn("etcd: the watch of %s ended (%s); %s stays, reading it again in %s",
				kw->key, ks_etcd_watch_errmsg(kw->w), stays,
				n == -ERANGE ? "a moment" : "5 s");
			restart_later(kw,
				      n == -ERANGE ? 0 : KS_ETCD_RESTART_NS);
			return 0;
		}
		/* once per outage; the retries while etcd stays away are
		 * counted and shown with -v */
		if (!kw->down)
			ks_warn("etcd: the watch of %s broke (%s); %s stays, reconnecting",
				kw->key, ks_etcd_watch_errmsg(kw->w), stays);
		else
			ks_debug("etcd: still away (%s)",
				 ks_etcd_watch_errmsg(kw->w));
		kw->down = 1;
	}
	up = ks_etcd_watch_created(kw->w);
	if (up)
		kw->down = 0;
	if (up && !kw->up)
		ks_info("etcd: watching %s from revision %" PRId64 " at %s",
			kw->key, ks_etcd_watch_next_revision(kw->w),
			ks_etcd_endpoint(c));
	kw->up = up;
	while (ks_etcd_watch_next(kw->w, &ev) == 1) {
		/* a prefix: keys written in one transaction share a
		 * revision, and the watch repeats none */
		if (!err && (kw->prefix || ev.kv.mod_revision > kw->seen)) {
			if (ev.kv.mod_revision > kw->seen)
				kw->seen = ev.kv.mod_revision;
			if (ev.type == KS_ETCD_EV_PUT)
				err = kw->apply(kw->ud, ctx, &ev.kv);
			else
				kw->deleted(kw->ud, ctx, &ev.kv);
		}
		ks_etcd_event_free(&ev);
	}
	return err;
}

int ks_key_watch_fd(const struct ks_key_watch *kw)
{
	return kw->w ? ks_etcd_watch_fd(kw->w) : -1;
}

int ks_key_watch_timeout_ms(const struct ks_key_watch *kw)
{
	return kw->w ? ks_etcd_watch_timeout_ms(kw->w) : -1;
}

const char *ks_key_watch_state(const struct ks_key_watch *kw)
{
	return kw->up ? "up" : kw->w ? "reconnecting" : "stopped";
}

void ks_key_watch_stop(struct ks_key_watch *kw)
{
	ks_etcd_watch_stop(kw->w);
	kw->w = NULL;
}
