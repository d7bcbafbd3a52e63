// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_run.c - 'agent run': its options (from the command line and a config
 * file, through the option table), the subsystems prepared from them and
 * the servers opened before anything is attached; then the interval loop
 * (agent/loop.c).
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <malloc.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "agent/loop.h"
#include "core/slog_part.h"
#include "util/thread.h"
#include "dp/attach.h"
#include "cli/cli_options.h"
#include "cli/cmds.h"
#include "cli/config_file.h"
#include "dp/collect.h"
#include "core/estimate.h"
#include "dp/bpf_log.h"
#include "agent/run_metrics.h"
#include "util/opts.h"
#include "render/report.h"
#include "dp/ring_push.h"
#include "agent/run_hot.h"
#include "agent/run_ring.h"
#include "agent/run_steer.h"
#include "agent/run_etcd.h"
#include "agent/run_purge.h"
#include "agent/run_dedicated.h"
#include "core/dedicated.h"
#include "core/limit_auto.h"
#include "cli/etcd_cli.h"
#include "net/http_serve.h"
#include "util/sig.h"
#include "util/privs.h"

/* 'agent run''s options; the subsystem structs hold their own options
 * and are prepared from them before anything is attached. */
struct run_opts {
	struct ks_agent_opts a;    /* what the interval loop reads */
	int xdp_given;             /* --xdp-mode was given */
	struct ks_run_ring ring;   /* the ring options, and the ring */
	struct ks_run_hot hot;     /* the hot-key options, and the table */
	struct ks_run_steer steer; /* the replicas, and the table's slots */
	const char *listen;        /* --listen: serve the routing document */
	struct ks_run_metrics metrics; /* --metrics, --export-keys */
	struct ks_run_etcd etcd;       /* --etcd...: the ring from etcd */
	struct ks_run_purge purge;     /* --purge-*: what a new ring moves */
	struct ks_run_ded ded;         /* the shard rules in the datapath */
	struct ks_conf conf; /* --config FILE: the values options point to */
	struct ks_opt_gate gate; /* run_opt behind the test-only switches' */
	int capacity_given;      /* --shard-capacity was given */
	int limit_auto_given;    /* --limit-auto was given */
};

struct run_state {
	struct run_opts o;
	struct ks_http_server http; /* --listen, opened before attaching */
	int http_open;
	struct ks_agent agent;
};

/* A test-only --NAME on|off whose off sets bit in ks_config.flags: 1, or
 * -1 with err for another word. */
static int off_flag(const char *name, const char *arg, __u32 bit, __u32 *flags,
		    char *err, size_t errlen)
{
	if (!strcmp(arg, "on")) {
		*flags &= ~bit;
	} else if (!strcmp(arg, "off")) {
		*flags |= bit;
	} else {
		snprintf(
			err, errlen,
			"--%s '%s' is not a state; give on (the default) or off",
			name, arg);
		return -1;
	}
	return 1;
}

/* --NAME dflt|other: *is_other whether arg is other; 1, or -1 with the
 * reason in err ("not a NOUN"). */
static int two_words(const char *name, const char *arg, const char *dflt,
		     const char *other, const char *noun, int *is_other,
		     char *err, size_t errlen)
{
	if (strcmp(arg, dflt) && strcmp(arg, other)) {
		snprintf(err, errlen,
			 "--%s '%s' is not %s; give %s (the default) or %s",
			 name, arg, noun, dflt, other);
		return -1;
	}
	*is_other = !strcmp(arg, other);
	return 1;
}

/* --NAME w[0]|w[1]|w[2] (a mode): the index of arg, or -1 with the
 * reason in err. */
static int three_words(const char *name, const char *arg,
		       const char *const w[3], char *err, size_t errlen)
{
	int i;

	for (i = 0; i < 3; i++)
		if (!strcmp(arg, w[i]))
			return i;
	snprintf(err, errlen, "--%s '%s' is not a mode; give %s, %s or %s",
		 name, arg, w[0], w[1], w[2]);
	return -1;
}

/*
 * One option of 'agent run' from the command line or a config file
 * (ks_opt_set_fn, behind o->gate): c is its value in the option table,
 * arg its value.
 */
static int run_opt(void *ctx, int c, const char *arg, char *err, size_t errlen)
{
	struct run_opts *o = ctx;
	unsigned long long v;
	int n;

	switch (c) {
	case 'i':
		o->a.ifname = arg;
		return 1;
	case 's': {
		struct ks_sample_opt so;

		if (ks_sample_parse(arg, 1000000, &so, err, errlen))
			return -1;
		/* auto starts at KS_RATE_START: a bounded cost until the
		 * first interval's counts are in */
		o->a.sample_n = so.n ? so.n : KS_RATE_START;
		o->a.sample_target = so.target;
		return 1;
	}
	case KS_OPTV_PLACE_TARGET:
		if (ks_place_parse(arg, &o->a.place_target, err, errlen))
			return -1;
		return 1;
	case 'I':
		if (ks_parse_seconds("--interval", arg, 100, 3600000,
				     &o->a.interval_ms, err, errlen))
			return -1;
		return 1;
	case 'p':
		if (ks_parse_ports(arg, o->a.ports, &n, err, errlen))
			return -1;
		return 1;
	case 'T':
		return two_words("attach", arg, "xdp", "tc", "a hook",
				 &o->a.attach_tc, err, errlen);
	case 'x': {
		static const char *const w[] = { "native", "generic", "auto" };
		static const enum ks_xdp_req v[] = { KS_XDP_NATIVE,
						     KS_XDP_GENERIC,
						     KS_XDP_AUTO };
		int i = three_words("xdp-mode", arg, w, err, errlen);

		o->xdp_given = 1;
		if (i < 0)
			return -1;
		o->a.xdp = v[i];
		return 1;
	}
	case 't':
		if (ks_parse_uint("--top", arg, 1, KS_REPORT_TOP, &v, err,
				  errlen))
			return -1;
		o->a.top = (__u32)v;
		return 1;
	case 'C':
		if (ks_parse_double("--shard-capacity", arg, 1, 1e9,
				    &o->hot.o.pol.shard_capacity_ops, err,
				    errlen))
			return -1;
		o->capacity_given = 1;
		return 1;
	case KS_OPTV_LIMIT_AUTO:
		if (ks_parse_double("--limit-auto", arg, -1e9, 1e9,
				    &o->a.limit_auto, err, errlen) ||
		    ks_limit_auto_check(o->a.limit_auto, 1, err, errlen))
			return -1;
		o->limit_auto_given = 1;
		return 1;
	case 'H':
		if (ks_parse_double("--hot-fraction", arg, 0.0001, 1,
				    &o->hot.o.pol.hot_fraction, err, errlen))
			return -1;
		return 1;
	case 'R':
		o->steer.o.replicas_arg = arg;
		return 1;
	case 'L':
		o->listen = arg;
		return 1;
	case 'W':
		if (ks_parse_double("--owner-share", arg, 0, 1,
				    &o->steer.o.owner_share, err, errlen))
			return -1;
		return 1;
	case 'P':
		o->hot.o.pins_path = arg;
		return 1;
	case KS_OPTV_BALANCE:
		if (ks_parse_double("--balance", arg, 0, KS_BALANCE_MAX,
				    &o->hot.o.balance, err, errlen))
			return -1;
		if (o->hot.o.balance > 0 && o->hot.o.balance < 0.01) {
			snprintf(
				err, errlen,
				"--balance %s is below 0.01; give 0 (off) or 0.01..%g",
				arg, KS_BALANCE_MAX);
			return -1;
		}
		return 1;
	case KS_OPTV_COPY_PROTOCOL:
		return two_words("copy-protocol", arg, "on", "off", "a state",
				 &o->steer.o.unconditional_fills, err, errlen);
	case KS_OPTV_FILL_DELAY: {
		unsigned long long v;

		if (ks_parse_uint("--fill-delay-ms", arg, 0, 1000, &v, err,
				  errlen))
			return -1;
		o->steer.o.fill_delay_ms = (unsigned)v;
		return 1;
	}
	case 'm':
		o->metrics.spec = arg;
		return 1;
	case 'K':
		o->metrics.export_keys = 1;
		return 1;
	case 'O':
		o->hot.o.routing_path = arg;
		return 1;
	case 'v':
		o->a.verbose = 1;
		return 1;
	case 'G':
		o->a.keep_privileges = 1;
		return 1;
	case 'g': {
		struct group *g = getgrnam(arg);

		if (!g) {
			snprintf(
				err, errlen,
				"--group '%s' is not a group of this host; give a name from /etc/group",
				arg);
			return -1;
		}
		o->a.group = g->gr_gid;
		o->a.group_set = 1;
		o->hot.o.gid = g->gr_gid;
		return 1;
	}
	case 'Y':
		o->a.log_keys = 1;
		return 1;
	case KS_OPTV_STREAM_STATE:
		return off_flag("stream-state", arg, KS_CFG_NO_STREAM,
				&o->a.cfg_flags, err, errlen);
	case KS_OPTV_LIMIT_HEAD:
		return off_flag("limit-reply-head", arg, KS_CFG_LIMIT_GROW_TAIL,
				&o->a.cfg_flags, err, errlen);
	case KS_OPTV_LIMIT_AUTO_RESIDUAL:
		return two_words("limit-auto-residual", arg, "measured",
				 "verdict", "a way", &o->a.limit_auto_verdict,
				 err, errlen);
	case KS_OPTV_RATE_SCALING:
		return two_words("rate-scaling", arg, "on", "off", "a state",
				 &o->a.rate_unscaled, err, errlen);
	case KS_OPTV_PLACE_SCALING:
		return two_words("place-scaling", arg, "on", "off", "a state",
				 &o->a.place_unit, err, errlen);
	case KS_OPTV_SAMPLE_LOG: {
		/* in enum ks_slog_mode's order */
		static const char *const w[] = { "on", "off", "drop" };
		int i = three_words("log-samples", arg, w, err, errlen);

		if (i < 0)
			return -1;
		o->a.slog_mode = (enum ks_slog_mode)i;
		return 1;
	}
	case KS_OPTV_DRAIN_THREADS: {
		unsigned long long v;

		if (!strcmp(arg, "auto")) {
			o->a.slog_threads = 0;
			return 1;
		}
		if (ks_parse_uint("--drain-threads", arg, 1,
				  KS_SLOG_THREADS_MAX, &v, err, errlen)) {
			/* the parser's words, and the other form */
			size_t l = strlen(err);

			snprintf(err + l, errlen - l, ", or auto");
			return -1;
		}
		o->a.slog_threads = (int)v;
		return 1;
	}
	case KS_OPTV_DRAIN_SHARE: {
		int on = 0, r = two_words("drain-share", arg, "off", "on",
					  "a state", &on, err, errlen);

		if (r > 0)
			o->a.slog_share = on;
		return r;
	}
	case KS_OPTV_OWNER_REPLIES: {
		int off = 0, r = two_words("owner-replies", arg, "on", "off",
					   "a state", &off, err, errlen);

		if (r > 0)
			o->a.owner_replies = !off;
		return r;
	}
	case KS_OPTV_HASH_ONLY:
		o->etcd.hash_only = 1;
		return 1;
	case KS_OPTV_FLEET_COMPAT:
		if (ks_fleet_compat_parse(arg, &o->etcd.fleet_compat)) {
			snprintf(
				err, errlen,
				"--fleet-compat '%s' is not a mode; give members (the default), full or off",
				arg);
			return -1;
		}
		return 1;
	case KS_OPTV_FLEET_SCHEMA:
		if (strcmp(arg, "1") && strcmp(arg, "2")) {
			snprintf(
				err, errlen,
				"--fleet-schema '%s': give 2 (the default) or 1",
				arg);
			return -1;
		}
		o->etcd.fleet_schema1 = !strcmp(arg, "1");
		return 1;
	case KS_OPTV_LOAD_EVERY: {
		unsigned long long n;

		if (ks_parse_uint("--load-every", arg, 1, KS_LOAD_EVERY_MAX, &n,
				  err, errlen))
			return -1;
		o->etcd.load_every = (__u32)n;
		return 1;
	}
	case KS_OPTV_KEEPALIVE:
		return two_words("etcd-keepalive", arg, "thread", "loop",
				 "a mode", &o->etcd.ka_on_loop, err, errlen);
	case KS_OPTV_THREAD_CAPS:
		return two_words("thread-caps", arg, "drop", "keep", "a way",
				 &o->a.thread_caps_keep, err, errlen);
	case KS_OPTV_ETCD_LOOP_CALL:
		return two_words("etcd-loop-call", arg, "off", "on", "a state",
				 &o->etcd.loop_call, err, errlen);
	case KS_OPTV_HK:
		return two_words("housekeeping", arg, "thread", "loop",
				 "a mode", &o->a.hk.on_loop, err, errlen);
	case KS_OPTV_HK_DELAY: {
		unsigned long long ms;

		if (ks_parse_uint("--housekeeping-delay-ms", arg, 0, 600000,
				  &ms, err, errlen))
			return -1;
		o->a.hk.delay_ms = (unsigned)ms;
		return 1;
	}
	case KS_OPTV_STALL: {
		unsigned long long n, ms;
		const char *colon = strchr(arg, ':');
		char num[24];

		if (!colon || (size_t)(colon - arg) >= sizeof(num)) {
			snprintf(err, errlen,
				 "--stall-interval '%s' is not N:MS", arg);
			return -1;
		}
		snprintf(num, sizeof(num), "%.*s", (int)(colon - arg), arg);
		if (ks_parse_uint("--stall-interval's N", num, 1, UINT32_MAX,
				  &n, err, errlen) ||
		    ks_parse_uint("--stall-interval's MS", colon + 1, 1, 600000,
				  &ms, err, errlen))
			return -1;
		o->a.stall_seq = (__u32)n;
		o->a.stall_ms = (__u32)ms;
		return 1;
	}
	case KS_OPTV_HOT_EVENTS:
		return two_words("etcd-hot-events", arg, "on", "off", "a state",
				 &o->etcd.no_hot_events, err, errlen);
	default:
		n = ks_etcd_cli_opt(&o->etcd.conf, c, arg, err, errlen);
		if (n)
			return n;
		n = ks_run_purge_opt(&o->purge, c, arg, err, errlen);
		if (n)
			return n;
		return ks_run_ring_opt(&o->ring, c, arg, err, errlen);
	}
}

/*
 * --config FILE at its place among the options: the file ks_conf_find
 * found and parse_run read, set through run_opt. getopt_long also takes
 * an abbreviation ("--conf") for --config, which is no --config.
 */
static int run_config(struct run_opts *o, char **argv, const char *conf_word)
{
	const char *word = optarg == argv[optind - 1] ? argv[optind - 2]
						      : argv[optind - 1];
	struct ks_conf_error e;
	char what[128];

	if (word != conf_word) {
		snprintf(what, sizeof(what), "unknown option '%s'", word);
		return ks_usage_error("run", what);
	}
	if (!ks_conf_apply(&o->conf, KS_CMD_RUN, "run", ks_opt_gated_set,
			   &o->gate, &e))
		return 0;
	if (e.value[0])
		ks_err("%s", e.value);
	if (e.line)
		ks_err("%s", e.line);
	else
		ks_err("out of memory reading %s; free some memory",
		       o->conf.name);
	free(e.line);
	return KS_EXIT_USAGE;
}

static int parse_run(int argc, char **argv, struct run_opts *o)
{
	char err[KS_ERRLEN * 2], why[KS_ERRLEN];
	struct ks_ring_spec *spec = &o->ring.spec;
	struct ks_cli_getopt g;
	const char *path;
	int c, n, at, span;

	memset(o, 0, sizeof(*o));
	ks_run_hot_defaults(&o->hot);
	ks_run_ring_init(&o->ring);
	ks_run_etcd_init(&o->etcd);
	ks_run_purge_init(&o->purge);
	o->a.sample_n = 8;
	o->a.place_target = KS_PLACE_TARGET_DEFAULT;
	o->a.interval_ms = 1000;
	o->a.top = KS_REPORT_TOP;
	o->a.owner_replies = 1;
	o->a.ports[0] = 11211;
	o->gate = (struct ks_opt_gate){ .cmd = KS_CMD_RUN,
					.set = run_opt,
					.ctx = o };
	/* A bad config file stops here, before any option is set. */
	if (ks_conf_find(argc, argv, &at, &span, &path, err, sizeof(err)) ||
	    (at >= 0 && ks_conf_load(path, &o->conf, err, sizeof(err))))
		goto bad;
	ks_cli_getopt_init(&g, KS_CMD_RUN);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, g.shorts, g.lo, NULL)) != -1) {
		if (c == 'h') {
			ks_help_run(stdout);
			return -1;
		}
		if (c == KS_OPTV_CONFIG) {
			n = run_config(o, argv, at >= 0 ? argv[at] : NULL);
			if (n)
				return n;
			continue;
		}
		n = ks_opt_gated_set(&o->gate, c, optarg, err, sizeof(err));
		if (n < 0)
			goto bad;
		if (!n)
			return ks_bad_option("run", c, argv);
	}
	if (optind < argc)
		return ks_no_args("run", argc, argv);
	if (!o->a.ifname) {
		ks_err("run needs --iface IF; name the interface memcached receives on (see 'ip link')");
		return KS_EXIT_USAGE;
	}
	if (o->a.attach_tc && o->xdp_given) {
		snprintf(
			err, sizeof(err),
			"--xdp-mode is for --attach xdp; leave it out with --attach tc");
		goto bad;
	}
	if (ks_resolve_ifname(o->a.ifname, &o->a.ifindex, err, sizeof(err)))
		goto bad;
	/* The whole ring is built now: a bad shard list stops the agent
	 * before anything is attached. */
	o->ring.etcd = ks_run_etcd_wants_ring(&o->etcd);
	if (ks_run_ring_prepare(&o->ring, o->a.sample_n, err, sizeof(err)))
		goto bad;
	if (ks_run_purge_prepare(&o->purge, spec->self, err, sizeof(err)))
		goto bad;
	o->ring.purge = &o->purge;
	/* So are the replicas, the pin file and the listening socket. */
	if (ks_run_steer_prepare(&o->steer, spec->self, o->a.ifname,
				 o->a.interval_ms, err, sizeof(err)))
		goto bad;
	o->hot.o.replicas = o->steer.rs.n < KS_MAX_COPIES - 1
				    ? o->steer.rs.n
				    : KS_MAX_COPIES - 1;
	o->hot.o.rs = o->steer.o.replicas_arg ? &o->steer.rs : NULL;
	/* the read schedule's owner turns, for clients of the document */
	o->hot.o.owner_turns = o->hot.o.rs ? (int)ks_run_steer_owner_turns(
						     &o->steer)
					   : -1;
	o->hot.o.serve_doc = o->listen != NULL;
	if (ks_run_hot_prepare(&o->hot, err, sizeof(err)))
		goto bad;
	if (o->hot.o.balance > 0 && !ks_run_etcd_wants_ring(&o->etcd)) {
		snprintf(
			err, sizeof(err),
			"--balance needs --etcd: the fleet's mean shard comes from every agent's load document");
		goto bad;
	}
	if (o->hot.o.balance > 0 && !spec->self) {
		snprintf(
			err, sizeof(err),
			"--balance needs --self: this shard's load is its row of the ring");
		goto bad;
	}
	if (o->limit_auto_given &&
	    ks_limit_auto_check(o->a.limit_auto, o->capacity_given, err,
				sizeof(err)))
		goto bad;
	o->etcd.want_loads = o->hot.o.balance > 0;
	/* Last, etcd: reachable, the credentials taken, the ring read (it
	 * replaces the list's or file's) and watched; else exit 2 here. */
	if (ks_run_etcd_prepare(&o->etcd, &o->ring, &o->hot, err, sizeof(err)))
		goto bad;
	o->ring.ded = &o->ded;
	o->ded.purge = &o->purge;
	/* a shard rule must name a shard of the ring in force now (a later
	 * ring without it is logged, its keys back with their ring owner) */
	if (o->ring.next_shards.n &&
	    ks_dedicated_check(&o->hot.table->rules, &o->ring.next_shards, why,
			       sizeof(why))) {
		snprintf(err, sizeof(err), "--pins %s: %s", o->hot.o.pins_path,
			 why);
		goto bad;
	}
	return 0;
bad:
	ks_err("%s", err);
	return KS_EXIT_USAGE;
}

/*
 * The routing document's server and the metrics' own, opened before
 * anything is attached: a bad address or a port in use stops the agent
 * first.
 */
static int open_servers(struct run_state *st)
{
	struct run_opts *o = &st->o;
	char err[KS_ERRLEN * 2];

	if (o->listen && !strncmp(o->listen, "unix:", 5)) {
		/* a socket only root, or --group, may read */
		if (ks_http_open_unix(&st->http, o->listen + 5,
				      o->a.group_set ? o->a.group : (gid_t)-1,
				      err, sizeof(err)))
			goto bad;
		st->http_open = 1;
	} else if (o->listen) {
		struct sockaddr_in a;

		if (ks_http_parse_listen(o->listen, &a, err, sizeof(err)) ||
		    ks_http_open(&st->http, &a, err, sizeof(err)))
			goto bad;
		st->http_open = 1;
	}
	o->metrics.keys_to_etcd = o->etcd.conf.endpoints != NULL;
	if (ks_run_metrics_prepare(&o->metrics, o->listen,
				   st->http_open ? &st->http : NULL, err,
				   sizeof(err)))
		goto bad;
	return 0;
bad:
	ks_err("%s", err);
	return KS_EXIT_USAGE;
}

int cmd_run(int argc, char **argv)
{
	struct run_state *st;
	char err[KS_ERRLEN * 2];
	struct ks_agent *a;
	int rc;

	st = calloc(1, sizeof(*st));
	if (!st)
		return KS_EXIT_FAIL;
	a = &st->agent;
	rc = parse_run(argc, argv, &st->o);
	if (!rc)
		rc = open_servers(st);
	if (rc) {
		if (st->http_open)
			ks_http_close(&st->http);
		ks_conf_free(&st->o.conf);
		ks_run_ring_free(&st->o.ring);
		ks_run_hot_free(&st->o.hot);
		ks_run_metrics_free(&st->o.metrics);
		ks_run_etcd_free(&st->o.etcd);
		ks_run_purge_free(&st->o.purge);
		free(st);
		return rc < 0 ? KS_EXIT_OK : rc;
	}
	ks_log_init(st->o.a.verbose ? KS_LOG_DEBUG : KS_LOG_INFO);
	if (ks_test_switches_warning(&st->o.gate.ts, err, sizeof(err)))
		ks_warn("%s", err);
	/* before any thread starts */
	ks_thread_test_keep_caps(st->o.a.thread_caps_keep);
	rc = ks_require_root("attaching keysteer");
	if (rc)
		goto out_free;
	if ((ks_run_ring_enabled(&st->o.ring) || st->o.ring.etcd) &&
	    ks_rcu_wait_check(err, sizeof(err))) {
		ks_err("%s", err);
		rc = KS_EXIT_FAIL;
		goto out_free;
	}
	/* a SIGKILLed agent's pins outlive a deleted interface (a veth, a
	 * pod): about 50 MiB each, until someone detaches by hand */
	ks_remove_stale_pins();
	rc = ks_check_free(st->o.a.ifname, st->o.a.ifindex,
			   st->o.a.attach_tc ? KS_HOOK_TC : st->o.a.xdp, err,
			   sizeof(err));
	if (rc == KS_ADOPT) {
		ks_info("%s", err);
		a->adopt = 1;
		/* before anything else: the dead agent's drain is gone */
		rc = ks_adopt_orphaned_flags(st->o.a.ifname);
		if (rc)
			ks_warn("cannot clear the dead agent's sample-log flag (%s): the datapath logs sampled keys nobody drains until this agent's drain runs",
				strerror(-rc));
		rc = 0;
	} else if (rc) {
		ks_err("%s", err);
		rc = KS_EXIT_FAIL;
		goto out_free;
	}
	ks_install_stop_handlers();
	ks_install_reload_handler();
	a->o = st->o.a;
	a->ring = &st->o.ring;
	a->hot = &st->o.hot;
	a->steer = &st->o.steer;
	a->metrics = &st->o.metrics;
	a->http = st->http_open ? &st->http : NULL;
	a->etcd = ks_run_etcd_enabled(&st->o.etcd) ? &st->o.etcd : NULL;
	a->purge = &st->o.purge;
	a->ded = &st->o.ded;
	a->att.link_fd = -1;
	a->att.egress_fd = -1;
	/* Each ring reload builds a new ring (1.5 MB) beside the old one, then
	 * frees the old. glibc's dynamic threshold would move such blocks to
	 * the heap after the first free, where a free one stays resident
	 * beside the live ring (RSS one ring higher from some reload on, a
	 * step the soak test saw). A fixed threshold keeps them mmapped and
	 * gives each back to the system when freed. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	rc = ks_agent_start(a);
	if (!rc)
		rc = ks_agent_loop(a);
	ks_agent_hk_stop(a);
	ks_agent_slog_off(a);
	ks_collector_free(&a->col);
	ks_run_steer_free(&st->o.steer);
	ks_teardown(&a->att);
	if (!rc)
		printf("keysteer: detached from %s\n", st->o.a.ifname);
out_free:
	ks_run_ded_free(&st->o.ded);
	ks_run_purge_free(&st->o.purge);
	ks_run_steer_free(&st->o.steer);
	if (st->http_open)
		ks_http_close(&st->http);
	ks_run_metrics_free(&st->o.metrics);
	ks_run_etcd_free(&st->o.etcd);
	ks_run_ring_free(&st->o.ring);
	ks_run_hot_free(&st->o.hot);
	ks_conf_free(&st->o.conf);
	free(a->sketch);
	free(a->rep);
	free(st);
	return rc;
}
