// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_fleet.c - 'agent fleet': the options and the I/O. One range read of
 * /keysteer/CLUSTER/ (the ring, every hosts/SELF, members/SELF and
 * hot/HASH entry, docs/fleet.md) and one of the load documents under
 * /keysteer-load/CLUSTER/; with --watch each prefix is watched from its
 * read's revision + 1 and the events applied to a local copy
 * (core/etcd_mirror.h), so every redraw shows each prefix as of one
 * revision (the two at most a watch's delay apart). What is shown is decided in core/fleet_view.h and printed by
 * render/fleet.h.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cmds.h"
#include "cli/cli_options.h"
#include "cli/etcd_cli.h"
#include "core/etcd_mirror.h"
#include "core/fleet_doc.h"
#include "core/host_doc.h"
#include "core/ring_doc.h"
#include "net/etcd.h"
#include "net/etcd_conf.h"
#include "render/fleet.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/opts.h"
#include "util/sig.h"

/* --watch: redraw on changes at most this often, and without changes at
 * least this often (so a shard's agent shows as gone when its lease ends
 * even if nothing else moves). */
#define FLEET_REDRAW_MIN_NS (250 * 1000000ULL)
#define FLEET_REDRAW_MAX_NS (1000 * 1000000ULL)

struct fleet_opts {
	struct ks_etcd_conf ec;
	int json, watch, hash_only;
	size_t top_k;
};

/* A prefix read into a local copy, and watched (--watch). */
struct fleet_range {
	struct ks_etcd_watch *w;
	struct ks_etcd_mirror m;
	char prefix[sizeof(KS_LOAD_ROOT) + KS_CLUSTER_MAX + 16];
	size_t plen;
};

struct fleet_ctx {
	struct fleet_opts o;
	struct ks_etcd *c;
	/* /keysteer/NAME/, and the load documents /keysteer-load/NAME/
	 * (schema 2, outside what clients watch) */
	struct fleet_range r[2];
	char state[KS_ERRLEN_DOC + 64]; /* --watch: etcd's state line */
};

/* 0 to go on, else the exit status (help printed, a bad option). */
static int parse_fleet(int argc, char **argv, struct fleet_opts *o)
{
	struct ks_cli_getopt g;
	char err[KS_ERRLEN_DOC * 2];
	unsigned long long k;
	int ch, r;

	memset(o, 0, sizeof(*o));
	ks_etcd_conf_init(&o->ec);
	o->top_k = KS_FLEET_TOP_DEFAULT;
	ks_cli_getopt_init(&g, KS_CMD_FLEET);
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, g.shorts, g.lo, NULL)) != -1) {
		switch (ch) {
		case 'h':
			ks_help_fleet(stdout);
			return KS_EXIT_OK;
		case 'j':
			o->json = 1;
			continue;
		case 'w':
			o->watch = 1;
			continue;
		case 'H':
			o->hash_only = 1;
			continue;
		case 't':
			if (ks_parse_uint("--top", optarg, 0, KS_FLEET_TOP_MAX,
					  &k, err, sizeof(err)))
				goto bad;
			o->top_k = (size_t)k;
			continue;
		}
		r = ks_etcd_cli_opt(&o->ec, ch, optarg, err, sizeof(err));
		if (r < 0)
			goto bad;
		if (!r)
			return ks_bad_option("fleet", ch, argv);
	}
	if (optind < argc)
		return ks_no_args("fleet", argc, argv);
	if (!o->ec.endpoints)
		return ks_usage_error(
			"fleet",
			"no --etcd URL[,URL...] given; fleet reads the fleet from etcd");
	return -1;
bad:
	ks_err("%s", err);
	return KS_EXIT_USAGE;
}

/* The whole prefix read into its local copy. */
static int read_all(struct fleet_ctx *x, struct fleet_range *r)
{
	struct ks_etcd_range rr = { 0 };
	int rc = ks_etcd_range(x->c, r->prefix, r->plen, KS_ETCD_PREFIX, &rr);

	if (rc)
		return rc;
	ks_etcd_mirror_free(&r->m);
	ks_etcd_mirror_load(&r->m, &rr);
	return 0;
}

/* The snapshot of the local copy, decided and printed. */
static int draw(struct fleet_ctx *x)
{
	struct ks_fleet_snapshot s;
	struct ks_fleet_view v;
	struct ks_fleet_out out;

	if (ks_fleet_snapshot_decode(x->r[0].m.kvs, x->r[0].m.n, x->r[0].prefix,
				     x->r[1].m.kvs, x->r[1].m.n, x->r[1].prefix,
				     x->r[0].m.revision > x->r[1].m.revision
					     ? x->r[0].m.revision
					     : x->r[1].m.revision,
				     &s))
		return -ENOMEM;
	if (ks_fleet_view_build(&s, x->o.top_k, x->o.hash_only, &v)) {
		ks_fleet_snapshot_free(&s);
		return -ENOMEM;
	}
	out = (struct ks_fleet_out){
		.cluster = x->o.ec.cluster,
		.s = &s,
		.v = &v,
		.top_k = x->o.top_k,
		.hash_only = x->o.hash_only,
		.watch_state = x->o.watch ? x->state : NULL,
		.watch_up = x->r[0].w && ks_etcd_watch_created(x->r[0].w) &&
			    x->r[1].w && ks_etcd_watch_created(x->r[1].w)
	};
	if (x->o.watch && !x->o.json)
		fputs("\033[H\033[2J",
		      stdout); /* home, clear: as report --watch */
	if (x->o.json)
		ks_render_fleet_json(stdout, &out, x->o.watch);
	else
		ks_render_fleet_text(stdout, &out);
	ks_fleet_view_free(&v);
	ks_fleet_snapshot_free(&s);
	/* a watch stops at a lost frame; main() says why */
	return ks_stdout_flush();
}

static int watch_from_copy(struct fleet_ctx *x, struct fleet_range *r)
{
	return ks_etcd_watch_start(x->c, r->prefix, r->plen, KS_ETCD_PREFIX,
				   r->m.revision + 1, &r->w);
}

/*
 * One turn of the watch: its failures into the state line, its events
 * into the copy. 1 when the copy or the state changed, 0 when not, -1
 * when the watch cannot go on (credentials refused, out of memory).
 */
static int watch_turn(struct fleet_ctx *x, struct fleet_range *r)
{
	char was[sizeof(x->state)];
	struct ks_etcd_event ev;
	int n, changed = 0;

	memcpy(was, x->state, sizeof(was));
	n = ks_etcd_watch_run(r->w);
	if (n == -ERANGE) {
		/* compacted past our revision: read again, watch from there */
		ks_etcd_watch_stop(r->w);
		r->w = NULL;
		if (read_all(x, r) || watch_from_copy(x, r)) {
			snprintf(x->state, sizeof(x->state),
				 "reading again after a compaction: %s",
				 ks_etcd_errmsg(x->c));
			return -1;
		}
		return 1;
	}
	if (n == -EACCES || n == -EPERM) {
		snprintf(x->state, sizeof(x->state), "watch ended: %s",
			 ks_etcd_watch_errmsg(r->w));
		return -1;
	}
	if (n < 0)
		snprintf(x->state, sizeof(x->state), "reconnecting: %s",
			 ks_etcd_watch_errmsg(r->w));
	while (ks_etcd_watch_next(r->w, &ev) == 1) {
		if (ks_etcd_mirror_apply(&r->m, &ev)) {
			ks_etcd_event_free(&ev);
			return -1;
		}
		ks_etcd_event_free(&ev);
		changed = 1;
	}
	if (ks_etcd_watch_created(x->r[0].w) &&
	    ks_etcd_watch_created(x->r[1].w))
		snprintf(x->state, sizeof(x->state),
			 "watch up at %s, revision %" PRId64,
			 ks_etcd_endpoint(x->c),
			 x->r[0].m.revision > x->r[1].m.revision
				 ? x->r[0].m.revision
				 : x->r[1].m.revision);
	return changed || strcmp(was, x->state);
}

/* --watch: redraws until SIGINT or SIGTERM. */
static int watch_loop(struct fleet_ctx *x)
{
	__u64 last = ks_mono_ns(), now;
	int dirty = 0, r;

	snprintf(x->state, sizeof(x->state), "watch starting at %s",
		 ks_etcd_endpoint(x->c));
	for (r = 0; r < 2; r++)
		if (watch_from_copy(x, &x->r[r])) {
			ks_err("cannot watch %s: %s", x->r[r].prefix,
			       ks_etcd_errmsg(x->c));
			return KS_EXIT_FAIL;
		}
	if (draw(x))
		return KS_EXIT_FAIL;
	while (!ks_stop) {
		struct pollfd p[2] = {
			{ .fd = ks_etcd_watch_fd(x->r[0].w), .events = POLLIN },
			{ .fd = ks_etcd_watch_fd(x->r[1].w), .events = POLLIN },
		};
		int wait_ms = ks_etcd_watch_timeout_ms(x->r[0].w);
		int w1 = ks_etcd_watch_timeout_ms(x->r[1].w);
		__u64 due = last +
			    (dirty ? FLEET_REDRAW_MIN_NS : FLEET_REDRAW_MAX_NS);
		int until = 0;

		if (w1 >= 0 && (wait_ms < 0 || w1 < wait_ms))
			wait_ms = w1;
		now = ks_mono_ns();
		if (due > now)
			until = (int)((due - now) / 1000000ULL) + 1;
		if (wait_ms < 0 || wait_ms > until)
			wait_ms = until;
		/* short steps: a signal just before poll() waits at most this */
		if (wait_ms > 100)
			wait_ms = 100;
		poll(p, 2, wait_ms);
		r = watch_turn(x, &x->r[0]);
		if (r >= 0) {
			int r1 = watch_turn(x, &x->r[1]);

			r = r1 < 0 ? r1 : r | r1;
		}
		if (r < 0) {
			draw(x);
			ks_err("%s", x->state);
			return KS_EXIT_FAIL;
		}
		dirty |= r;
		now = ks_mono_ns();
		if (now - last >=
		    (dirty ? FLEET_REDRAW_MIN_NS : FLEET_REDRAW_MAX_NS)) {
			if (draw(x))
				return KS_EXIT_FAIL;
			last = now;
			dirty = 0;
		}
	}
	return KS_EXIT_OK;
}

int cmd_fleet(int argc, char **argv)
{
	struct fleet_ctx x;
	char err[KS_ERRLEN_DOC * 2];
	int rc, i;

	memset(&x, 0, sizeof(x));
	rc = parse_fleet(argc, argv, &x.o);
	if (rc >= 0)
		return rc;
	rc = KS_EXIT_USAGE;
	if (ks_etcd_conf_check(&x.o.ec, err, sizeof(err)) ||
	    ks_etcd_conf_connect(&x.o.ec, &x.c, err, sizeof(err))) {
		ks_err("%s", err);
		goto out;
	}
	/* the ring key less "ring": /keysteer/NAME/ */
	x.r[0].plen = strlen(x.o.ec.ring_key) - strlen("ring");
	snprintf(x.r[0].prefix, sizeof(x.r[0].prefix), "%.*s", (int)x.r[0].plen,
		 x.o.ec.ring_key);
	snprintf(x.r[1].prefix, sizeof(x.r[1].prefix), KS_LOAD_ROOT "%s/",
		 x.o.ec.cluster);
	x.r[1].plen = strlen(x.r[1].prefix);
	rc = KS_EXIT_FAIL;
	for (i = 0; i < 2; i++)
		if (read_all(&x, &x.r[i])) {
			ks_err("cannot read %s: %s", x.r[i].prefix,
			       ks_etcd_errmsg(x.c));
			goto out;
		}
	if (x.o.watch) {
		ks_install_stop_handlers();
		rc = watch_loop(&x);
	} else {
		int err = draw(&x);

		if (err == -ENOMEM)
			ks_err("out of memory");
		rc = err ? KS_EXIT_FAIL : KS_EXIT_OK;
	}
out:
	for (i = 0; i < 2; i++) {
		ks_etcd_watch_stop(x.r[i].w);
		ks_etcd_mirror_free(&x.r[i].m);
	}
	ks_etcd_close(x.c);
	return rc;
}
