// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_report.c - 'agent report' ('agent --report'): reads what a running
 * agent published in the pinned ks_report plus the datapath's totals and
 * prints the dashboard or JSON, once or (--watch) redrawn in place.
 */
#include <errno.h>
#include <bpf/bpf.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "attach.h"
#include "cmds.h"
#include "collect.h"
#include "log.h"
#include "opts.h"
#include "report.h"
#include "sig.h"

struct report_opts {
	const char *ifname;
	int top;
	int json;
	int watch;
	int hash_only;
	int shards_top;
	__u32 interval_ms; /* 0: the agent's */
	int verbose;
};

static int parse_report(int argc, char **argv, struct report_opts *o)
{
	static const struct option lopts[] = {
		{ "iface", required_argument, NULL, 'i' },
		{ "top", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "watch", no_argument, NULL, 'w' },
		{ "hash-only", no_argument, NULL, 'H' },
		{ "shards-top", required_argument, NULL, 'T' },
		{ "interval", required_argument, NULL, 'I' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	char err[KS_ERRLEN];
	unsigned long long v;
	int c;

	memset(o, 0, sizeof(*o));
	o->top = 20;
	o->shards_top = KS_SHARDS_TOP_DEFAULT;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":vh", lopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			o->ifname = optarg;
			break;
		case 't':
			if (ks_parse_uint("--top", optarg, 1, KS_REPORT_TOP, &v,
					  err, sizeof(err)))
				goto bad;
			o->top = (int)v;
			break;
		case 'j':
			o->json = 1;
			break;
		case 'w':
			o->watch = 1;
			break;
		case 'H':
			o->hash_only = 1;
			break;
		case 'T':
			if (ks_parse_uint("--shards-top", optarg, 1,
					  KS_MAX_SHARDS, &v, err, sizeof(err)))
				goto bad;
			o->shards_top = (int)v;
			break;
		case 'I':
			if (ks_parse_seconds("--interval", optarg, 100, 3600000,
					     &o->interval_ms, err, sizeof(err)))
				goto bad;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'h':
			ks_help_report(stdout);
			return -1;
		default:
			return ks_bad_option("report", c, argv);
		}
	}
	return ks_no_args("report", argc, argv);
bad:
	ks_err("%s", err);
	return KS_EXIT_USAGE;
}

struct report_ctx {
	struct report_opts o;
	struct ks_maps maps;
	struct ks_collector col;
	struct ks_report *rep;
	struct ks_shard_report *ring;
	struct ks_misdirect *mis_all, mis[KS_MISDIRECT_SHOW];
	struct ks_totals totals;
	struct ks_hot_slot *hot;     /* used slots, KS_HOT_SLOTS room */
	struct ks_replica reps[KS_MAX_REPLICAS];
	char ifname[IF_NAMESIZE];
	char pin_dir[PATH_MAX];
};

/* The shard report and the recent misdirected clients of its ring. */
static int read_ring(struct report_ctx *c, size_t *n_mis)
{
	long n;
	int err;

	*n_mis = 0;
	err = ks_read_shard_report(&c->maps, c->ring);
	if (err || !c->ring->version || !c->ring->nshards)
		return err;
	n = ks_read_misdirect(&c->col, c->mis_all);
	if (n < 0)
		return (int)n;
	*n_mis = ks_misdirect_recent(c->mis_all, (size_t)n,
				     c->ring->pushed_mono_ns, c->mis,
				     KS_MISDIRECT_SHOW);
	return 0;
}

/* The used hot-key slots and the replica table. */
static int read_hot(struct report_ctx *c, struct ks_hot_view *h)
{
	struct ks_hot_slot s;
	__u32 i;

	memset(h, 0, sizeof(*h));
	h->slot = c->hot;
	h->rep = c->reps;
	h->hash_only = c->o.hash_only;
	h->now_mono_ns = ks_mono_ns();
	for (i = 0; i < KS_MAX_REPLICAS; i++)
		if (bpf_map_lookup_elem(c->maps.replicas, &i, &c->reps[i]))
			return -errno;
	for (i = 0; i < KS_HOT_SLOTS; i++) {
		if (bpf_map_lookup_elem(c->maps.hot, &i, &s))
			return -errno;
		if (s.hash)
			c->hot[h->n++] = s;
	}
	return 0;
}

static int render_once(struct report_ctx *c)
{
	struct ks_hot_view hot;
	struct ks_view v = { .rep = c->rep, .totals = &c->totals,
			     .top = c->o.top, .hash_only = c->o.hash_only,
			     .ring = c->ring, .mis = c->mis,
			     .shards_top = c->o.shards_top };
	int err;

	err = ks_read_report(&c->maps, c->rep);
	if (!err)
		err = ks_read_totals(&c->col, &c->totals);
	if (!err)
		err = read_ring(c, &v.n_mis);
	if (!err)
		err = read_hot(c, &hot);
	v.hot = &hot;
	if (err) {
		ks_err("cannot read the pinned maps in %s (%s); check that the agent still runs",
		       c->pin_dir, strerror(-err));
		return KS_EXIT_FAIL;
	}
	v.agent_alive = ks_pid_alive(c->rep->agent_pid);
	v.now_ns = ks_real_ns();
	v.now_mono_ns = ks_mono_ns();
	if (c->o.watch && !c->o.json)
		fputs("\033[H\033[2J", stdout); /* home, clear screen */
	if (c->o.json)
		ks_render_json(stdout, &v);
	else
		ks_render_text(stdout, &v);
	fflush(stdout);
	return 0;
}

static int still_attached(const struct report_ctx *c)
{
	char link[PATH_MAX + 8];
	struct stat st;

	snprintf(link, sizeof(link), "%s/link", c->pin_dir);
	return stat(link, &st) == 0;
}

static int watch(struct report_ctx *c)
{
	int rc = 0;

	ks_install_stop_handlers();
	while (!ks_stop) {
		__u32 ms;

		if (!still_attached(c)) {
			ks_err("keysteer is no longer attached to %s; start it again with 'agent run --iface %s'",
			       c->ifname, c->ifname);
			return KS_EXIT_FAIL;
		}
		rc = render_once(c);
		if (rc)
			return rc;
		ms = c->o.interval_ms ? c->o.interval_ms : c->rep->interval_ms;
		if (ms < 100)
			ms = 1000;
		ks_sleep_until(ks_mono_ns() + (__u64)ms * 1000000ULL);
	}
	return KS_EXIT_OK;
}

int cmd_report(int argc, char **argv)
{
	struct report_ctx *c;
	int rc, err;

	c = calloc(1, sizeof(*c));
	if (!c)
		return KS_EXIT_FAIL;
	ks_maps_init(&c->maps);
	rc = parse_report(argc, argv, &c->o);
	if (rc)
		goto out;
	ks_log_init(c->o.verbose ? KS_LOG_DEBUG : KS_LOG_INFO);
	rc = ks_require_root("reading keysteer's pinned maps");
	if (rc)
		goto out;
	rc = ks_find_attached(c->o.ifname, c->ifname, c->pin_dir,
			      sizeof(c->pin_dir));
	if (rc)
		goto out;
	err = ks_maps_open_pinned(&c->maps, c->pin_dir);
	if (err) {
		ks_err("cannot open the pinned maps in %s (%s); the agent may be starting or stopping, try again",
		       c->pin_dir, strerror(-err));
		rc = KS_EXIT_FAIL;
		goto out;
	}
	c->rep = calloc(1, sizeof(*c->rep));
	c->ring = calloc(1, sizeof(*c->ring));
	c->hot = calloc(KS_HOT_SLOTS, sizeof(*c->hot));
	err = ks_collector_init(&c->col, &c->maps);
	if (!err)
		c->mis_all = calloc((size_t)c->col.ncpus * KS_MISDIRECT_SLOTS,
				    sizeof(*c->mis_all));
	if (err || !c->rep || !c->ring || !c->mis_all || !c->hot) {
		ks_err("out of memory (%s); free some memory",
		       strerror(err ? -err : ENOMEM));
		rc = KS_EXIT_FAIL;
		goto out;
	}
	rc = c->o.watch ? watch(c) : render_once(c);
out:
	ks_collector_free(&c->col);
	ks_maps_close(&c->maps);
	free(c->rep);
	free(c->ring);
	free(c->mis_all);
	free(c->hot);
	free(c);
	return rc < 0 ? KS_EXIT_OK : rc;
}
