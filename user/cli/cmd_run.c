// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_run.c - 'agent run': attach, then once per interval flip the epoch,
 * merge what the datapath sampled in the interval that just ended, publish
 * the estimates in ks_report, and clear that epoch for its next turn.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "dp/attach.h"
#include "cli/cli_options.h"
#include "cli/cmds.h"
#include "cli/config_file.h"
#include "dp/collect.h"
#include "core/estimate.h"
#include "dp/bpf_log.h"
#include "render/metrics.h"
#include "util/opts.h"
#include "render/report.h"
#include "dp/ring_push.h"
#include "agent/run_hot.h"
#include "agent/run_ring.h"
#include "agent/run_steer.h"
#include "net/http_serve.h"
#include "util/sig.h"
#include "util/privs.h"

/* In-flight packets may still write the old epoch right after the flip. */
#define KS_FLIP_GRACE_NS 2000000ULL

struct run_opts {
	const char *ifname;
	unsigned int ifindex;
	__u32 sample_n;
	__u32 interval_ms;
	__u16 ports[KS_MAX_PORTS];
	enum ks_xdp_req xdp;
	int attach_tc;           /* --attach tc: the tc ingress program */
	int xdp_given;           /* --xdp-mode was given */
	__u32 top;
	int verbose;
	int keep_privileges;     /* --keep-privileges: no capability drop */
	int log_keys;            /* --log-keys: key bytes in -v lines */
	gid_t group;             /* --group: may read pins and routing file */
	int group_set;
	struct ks_run_ring ring; /* the ring options, and the ring */
	struct ks_run_hot hot;   /* the hot-key options, and the table */
	struct ks_run_steer steer; /* the table in the datapath, replicas */
	const char *listen;      /* --listen: serve the routing document */
	struct ks_http_server http;
	int http_open;
	struct ks_run_metrics metrics; /* --metrics, --export-keys */
	__u32 cfg_flags;         /* ks_config.flags: --stream-state off sets
				  * KS_CFG_NO_STREAM (test control only) */
	struct ks_conf conf;     /* --config FILE: the values options point to */
};

struct run_state {
	struct run_opts o;
	struct ks_attachment att;
	struct ks_maps maps;
	struct ks_collector col;
	struct ks_sketch *sketch;
	struct ks_report *rep;
	struct ks_totals prev, cur;
	__u32 seq;            /* the agent's own copy: it alone moves seq */
	int adopt;            /* take over a dead agent's attachment */
	__u64 flip_ns;        /* monotonic time of the last flip */
	__u64 totals_ns;      /* monotonic time of the last totals read */
};

/*
 * One option of 'agent run' from the command line or a config file
 * (ks_opt_set_fn): c is its value in the option table, arg its value.
 */
static int run_opt(void *ctx, int c, const char *arg, char *err,
		   size_t errlen)
{
	struct run_opts *o = ctx;
	unsigned long long v;
	int n;

	switch (c) {
	case 'i':
		o->ifname = arg;
		return 1;
	case 's':
		if (ks_parse_uint("--sample", arg, 1, 1000000, &v, err, errlen))
			return -1;
		o->sample_n = (__u32)v;
		return 1;
	case 'I':
		if (ks_parse_seconds("--interval", arg, 100, 3600000,
				     &o->interval_ms, err, errlen))
			return -1;
		return 1;
	case 'p':
		if (ks_parse_ports(arg, o->ports, &n, err, errlen))
			return -1;
		return 1;
	case 'T':
		if (!strcmp(arg, "xdp") || !strcmp(arg, "tc")) {
			o->attach_tc = arg[0] == 't';
			return 1;
		}
		snprintf(err, errlen,
			 "--attach '%s' is not a hook; give xdp (the default) or tc",
			 arg);
		return -1;
	case 'x':
		o->xdp_given = 1;
		if (!strcmp(arg, "native"))
			o->xdp = KS_XDP_NATIVE;
		else if (!strcmp(arg, "generic"))
			o->xdp = KS_XDP_GENERIC;
		else if (!strcmp(arg, "auto"))
			o->xdp = KS_XDP_AUTO;
		else {
			snprintf(err, errlen,
				 "--xdp-mode '%s' is not a mode; give native, generic or auto",
				 arg);
			return -1;
		}
		return 1;
	case 't':
		if (ks_parse_uint("--top", arg, 1, KS_REPORT_TOP, &v, err,
				  errlen))
			return -1;
		o->top = (__u32)v;
		return 1;
	case 'C':
		if (ks_parse_double("--shard-capacity", arg, 1, 1e9,
				    &o->hot.pol.shard_capacity_ops, err, errlen))
			return -1;
		return 1;
	case 'H':
		if (ks_parse_double("--hot-fraction", arg, 0.0001, 1,
				    &o->hot.pol.hot_fraction, err, errlen))
			return -1;
		return 1;
	case 'R':
		o->steer.replicas_arg = arg;
		return 1;
	case 'L':
		o->listen = arg;
		return 1;
	case 'W':
		if (ks_parse_double("--owner-share", arg, 0, 1,
				    &o->steer.owner_share, err, errlen))
			return -1;
		return 1;
	case 'P':
		o->hot.pins_path = arg;
		return 1;
	case 'm':
		o->metrics.spec = arg;
		return 1;
	case 'K':
		o->metrics.export_keys = 1;
		return 1;
	case 'O':
		o->hot.routing_path = arg;
		return 1;
	case 'v':
		o->verbose = 1;
		return 1;
	case 'G':
		o->keep_privileges = 1;
		return 1;
	case 'g': {
		struct group *g = getgrnam(arg);

		if (!g) {
			snprintf(err, errlen,
				 "--group '%s' is not a group of this host; give a name from /etc/group",
				 arg);
			return -1;
		}
		o->group = g->gr_gid;
		o->group_set = 1;
		o->hot.gid = g->gr_gid;
		return 1;
	}
	case 'Y':
		o->log_keys = 1;
		return 1;
	case KS_OPTV_STREAM_STATE:
		if (!strcmp(arg, "on")) {
			o->cfg_flags &= ~(__u32)KS_CFG_NO_STREAM;
		} else if (!strcmp(arg, "off")) {
			o->cfg_flags |= KS_CFG_NO_STREAM;
		} else {
			snprintf(err, errlen,
				 "--stream-state '%s' is not a state; give on (the default) or off (a test control: counts go wrong and steering is unsafe)",
				 arg);
			return -1;
		}
		return 1;
	default:
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
	const char *word = optarg == argv[optind - 1] ? argv[optind - 2] :
							 argv[optind - 1];
	struct ks_conf_error e;
	char what[128];

	if (word != conf_word) {
		snprintf(what, sizeof(what), "unknown option '%s'", word);
		return ks_usage_error("run", what);
	}
	if (!ks_conf_apply(&o->conf, KS_CMD_RUN, "run", run_opt, o, &e))
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
	char err[KS_ERRLEN * 2];
	struct ks_ring_spec *spec = &o->ring.spec;
	struct ks_cli_getopt g;
	const char *path;
	int c, n, at, span;

	memset(o, 0, sizeof(*o));
	ks_run_hot_defaults(&o->hot);
	ks_run_ring_init(&o->ring);
	o->sample_n = 8;
	o->interval_ms = 1000;
	o->top = KS_REPORT_TOP;
	o->ports[0] = 11211;
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
		n = run_opt(o, c, optarg, err, sizeof(err));
		if (n < 0)
			goto bad;
		if (!n)
			return ks_bad_option("run", c, argv);
	}
	if (optind < argc)
		return ks_no_args("run", argc, argv);
	if (!o->ifname) {
		ks_err("run needs --iface IF; name the interface memcached receives on (see 'ip link')");
		return KS_EXIT_USAGE;
	}
	if (o->attach_tc && o->xdp_given) {
		snprintf(err, sizeof(err),
			 "--xdp-mode is for --attach xdp; leave it out with --attach tc");
		goto bad;
	}
	if (ks_resolve_ifname(o->ifname, &o->ifindex, err, sizeof(err)))
		goto bad;
	/* The whole ring is built now: a bad shard list stops the agent
	 * before anything is attached. */
	if (ks_run_ring_prepare(&o->ring, o->sample_n, err, sizeof(err)))
		goto bad;
	/* So are the replicas, the pin file and the listening socket. */
	if (ks_run_steer_prepare(&o->steer, spec->self, o->ifname,
				 o->interval_ms, err, sizeof(err)))
		goto bad;
	o->hot.replicas = o->steer.rs.n < KS_MAX_COPIES - 1 ?
				  o->steer.rs.n : KS_MAX_COPIES - 1;
	o->hot.rs = o->steer.replicas_arg ? &o->steer.rs : NULL;
	o->hot.serve_doc = o->listen != NULL;
	if (ks_run_hot_prepare(&o->hot, err, sizeof(err)))
		goto bad;
	if (o->listen && !strncmp(o->listen, "unix:", 5)) {
		/* a socket only root, or --group, may read */
		if (ks_http_open_unix(&o->http, o->listen + 5,
				      o->group_set ? o->group : (gid_t)-1, err,
				      sizeof(err)))
			goto bad;
		o->http_open = 1;
	} else if (o->listen) {
		struct sockaddr_in a;

		if (ks_http_parse_listen(o->listen, &a, err, sizeof(err)) ||
		    ks_http_open(&o->http, &a, err, sizeof(err)))
			goto bad;
		o->http_open = 1;
	}
	if (ks_run_metrics_prepare(&o->metrics, o->listen,
				   o->http_open ? &o->http : NULL, err,
				   sizeof(err)))
		goto bad;
	return 0;
bad:
	ks_err("%s", err);
	return KS_EXIT_USAGE;
}

static void publish_header(struct run_state *st)
{
	struct ks_report *r = st->rep;

	r->version = KS_REPORT_VERSION;
	r->agent_pid = (__u32)getpid();
	r->sample_n = st->o.sample_n;
	r->interval_ms = st->o.interval_ms;
	r->xdp_mode = st->att.xdp_mode;
	snprintf(r->ifname, sizeof(r->ifname), "%s", st->o.ifname);
}

/* This run's flags (KS_CFG_NO_STREAM from --stream-state) in cfg; any
 * other bit is left as it was. */
static void put_flags(const struct run_state *st, struct ks_config *cfg)
{
	cfg->flags = (cfg->flags & ~(__u32)KS_CFG_NO_STREAM) |
		     (st->o.cfg_flags & KS_CFG_NO_STREAM);
}

/*
 * Writes the config, with ks_config.ring put back first if a racing
 * write moved it; then waits out the packets that read the half it
 * pointed at, which the next ring push may overwrite.
 */
static int write_config(struct run_state *st, struct ks_config *cfg)
{
	int fixed = ks_run_ring_fix_config(&st->o.ring, cfg);
	int err;

	put_flags(st, cfg);
	err = ks_write_config(&st->maps, cfg);

	if (!err && fixed)
		err = ks_rcu_wait();
	return err;
}

/* Moves seq on, keeping whatever else is in ks_config (the trace flag
 * belongs to 'agent trace'). */
static int flip_epoch(struct run_state *st)
{
	struct ks_config cfg;
	int err;

	err = ks_read_config(&st->maps, &cfg);
	if (err)
		return err;
	memcpy(cfg.ports, st->o.ports, sizeof(cfg.ports));
	cfg.sample_n = st->o.sample_n;
	cfg.seq = ++st->seq;
	return write_config(st, &cfg);
}

/*
 * 'agent trace' rewrites the config to toggle its flag; if its write
 * raced with our flip it may have put the old seq back. Put ours back.
 */
static void keep_seq(struct run_state *st)
{
	struct ks_config cfg, probe;

	if (ks_read_config(&st->maps, &cfg))
		return;
	probe = cfg; /* write_config() makes the ring fix itself */
	if (cfg.seq == st->seq && !ks_run_ring_fix_config(&st->o.ring, &probe))
		return;
	if (cfg.seq != st->seq)
		ks_debug("seq was %u, not %u (a racing config write); fixing it",
			 cfg.seq, st->seq);
	cfg.seq = st->seq;
	write_config(st, &cfg);
}

/* ks_config.hot follows the slots in use: with none, the datapath does
 * not hash unsampled keys at all. */
static void set_hot_flag(struct run_state *st, __u32 on)
{
	struct ks_config cfg;

	if (ks_read_config(&st->maps, &cfg) || cfg.hot == on)
		return;
	cfg.hot = on;
	write_config(st, &cfg);
}

static void ring_status_line(const struct ks_run_ring *ring)
{
	const struct ks_shard_report *g = ring->rep;
	__u64 mis = 0;
	__u32 i;

	if (!ks_run_ring_enabled(ring) || !g || !g->nshards)
		return;
	for (i = 0; i < g->nshards; i++)
		mis += g->shards[i].misdirected_mps;
	if (g->busiest >= g->nshards) {
		fprintf(stderr, "keysteer: #%u ring v%llu: no keys placed\n",
			g->seq, (unsigned long long)g->ring_version);
		return;
	}
	fprintf(stderr,
		"keysteer: #%u ring v%llu: %.1f keys/s, busiest shard %s %.2fx mean, misdirected %.1f/s\n",
		g->seq, (unsigned long long)g->ring_version, g->hits_mps / 1000.0,
		g->shards[g->busiest].name,
		g->shards[g->busiest].ratio_milli / 1000.0, mis / 1000.0);
}

static void status_line(const struct run_state *st, long ncands)
{
	const struct ks_report *r = st->rep;
	char key[48] = "-";

	/* key bytes may be user data: logged only when asked */
	if (r->n_top && st->o.log_keys)
		ks_key_text(r->top[0].key, r->top[0].len, key,
			    sizeof(key));
	else if (r->n_top)
		snprintf(key, sizeof(key), "hash %016llx",
			 (unsigned long long)r->top[0].hash);
	fprintf(stderr,
		"keysteer: #%u %.1f req/s (read %.1f, write %.1f, other %.1f), %llu sampled, %ld candidates, top %s %.1f/s\n",
		r->seq,
		(r->class_req_mps[KS_CLASS_READ] + r->class_req_mps[KS_CLASS_WRITE] +
		 r->class_req_mps[KS_CLASS_OTHER]) / 1000.0,
		r->class_req_mps[KS_CLASS_READ] / 1000.0,
		r->class_req_mps[KS_CLASS_WRITE] / 1000.0,
		r->class_req_mps[KS_CLASS_OTHER] / 1000.0,
		(unsigned long long)r->sampled_total, ncands, key,
		r->n_top ? (r->top[0].reads_mps + r->top[0].writes_mps) / 1000.0 :
			   0.0);
	ring_status_line(&st->o.ring);
	ks_run_steer_status(&st->o.steer, stderr, r->seq);
	if (st->o.http_open)
		fprintf(stderr, "keysteer: #%u http: %llu documents served, %llu errors\n",
			r->seq, (unsigned long long)st->o.http.stats.served,
			(unsigned long long)st->o.http.stats.errors);
}

/* The metrics of what the interval (or the start) left in st. */
static void publish_metrics(struct run_state *st, const struct ks_totals *t,
			    long ncands, int interval_ended)
{
	struct ks_metrics_in in = {
		.rep = st->rep,
		.totals = t,
		.ring = ks_run_ring_enabled(&st->o.ring) ? st->o.ring.rep : NULL,
		.table = st->o.hot.table,
		.steer = &st->o.steer,
		.candidates = ncands > 0 ? (__u64)ncands : 0,
		.candidate_slots = (__u64)KS_CAND_SLOTS * (__u64)st->col.ncpus,
	};

	ks_run_metrics_publish(&st->o.metrics, &in, interval_ended);
}

static int one_interval(struct run_state *st)
{
	__u32 old_seq = st->seq, epoch = old_seq & 1;
	__u64 now, elapsed_ns;
	long ncands;
	int err;

	err = flip_epoch(st);
	if (err)
		return err;
	now = ks_mono_ns();
	elapsed_ns = now - st->flip_ns;
	st->flip_ns = now;
	ks_sleep_until(now + KS_FLIP_GRACE_NS);
	keep_seq(st);

	publish_header(st);
	ncands = ks_estimate_interval(&st->col, epoch, old_seq, st->o.sample_n,
				      st->o.top, elapsed_ns, &st->prev,
				      &st->cur, st->sketch, &st->totals_ns,
				      st->rep);
	if (ncands < 0)
		return (int)ncands;
	st->rep->seq = old_seq;
	st->rep->updated_ns = ks_real_ns();
	st->rep->elapsed_ns = elapsed_ns;
	err = ks_write_report(&st->maps, st->rep);
	if (err)
		return err;
	err = ks_run_ring_interval(&st->o.ring, &st->maps, &st->col, old_seq);
	if (err)
		return err;
	ks_run_hot_interval(&st->o.hot, st->rep->top, st->rep->n_top, old_seq,
			    st->o.ring.version);
	set_hot_flag(st, ks_run_steer_interval(&st->o.steer, st->o.hot.table,
					       elapsed_ns / 1e9) > 0);
	/* The next flip hands this epoch back to the datapath: empty. */
	err = ks_zero_sketch(&st->col, epoch);
	if (err)
		return err;
	st->prev = st->cur;
	publish_metrics(st, &st->cur, ncands, 1);
	if (st->o.verbose)
		status_line(st, ncands);
	return 0;
}

static int start(struct run_state *st)
{
	struct ks_config cfg = { .sample_n = st->o.sample_n, .seq = 0 };
	char ports[64], iv[32];
	int err;

	memcpy(cfg.ports, st->o.ports, sizeof(cfg.ports));
	put_flags(st, &cfg);
	if (ks_attach(&st->att, st->o.ifname, st->o.ifindex,
		      st->o.attach_tc ? KS_HOOK_TC : st->o.xdp, &cfg, st->adopt))
		return KS_EXIT_FAIL;
	if (st->o.group_set) {
		int err = ks_pins_share(&st->att, st->o.group);

		if (err) {
			ks_err("cannot give group %u read access to %s (%s); check the bpffs",
			       (unsigned)st->o.group, st->att.pin_dir,
			       strerror(-err));
			return KS_EXIT_FAIL;
		}
	}
	/* a taken-over datapath goes on at its own epoch sequence */
	if (st->att.adopted)
		st->seq = st->att.found.seq;
	ks_attachment_maps(&st->att, &st->maps);
	/* a take-over keeps the pinned config's flags: put this run's in */
	if (st->att.adopted) {
		struct ks_config cur;

		err = ks_read_config(&st->maps, &cur);
		if (!err) {
			put_flags(st, &cur);
			err = ks_write_config(&st->maps, &cur);
		}
		if (err) {
			ks_err("cannot write the configuration map (%s); rerun with -v",
			       strerror(-err));
			return KS_EXIT_FAIL;
		}
	}
	err = ks_collector_init(&st->col, &st->maps);
	st->sketch = malloc(sizeof(*st->sketch));
	st->rep = calloc(1, sizeof(*st->rep));
	if (err || !st->sketch || !st->rep) {
		ks_err("out of memory for the interval buffers (%s); free some memory",
		       strerror(err ? -err : ENOMEM));
		return KS_EXIT_FAIL;
	}
	publish_header(st);
	st->rep->start_ns = ks_real_ns();
	err = ks_write_report(&st->maps, st->rep);
	if (!err)
		err = ks_read_totals(&st->col, &st->prev);
	if (err) {
		ks_err("cannot read or write the pinned maps (%s); rerun with -v",
		       strerror(-err));
		return KS_EXIT_FAIL;
	}
	st->flip_ns = st->totals_ns = ks_mono_ns();
	ks_format_ports(st->o.ports, ports, sizeof(ports));
	ks_format_seconds(st->o.interval_ms, iv, sizeof(iv));
	printf("keysteer: attached to %s (%s), sample 1/%u, interval %s s, ports %s%s\n",
	       st->o.ifname,
	       ks_hook_desc(&st->att),
	       st->o.sample_n, iv, ports,
	       st->att.adopted ? "; took over the running program, its counters, ring and hot keys" : "");
	fflush(stdout);
	if (ks_run_ring_start(&st->o.ring, &st->maps, &st->col))
		return KS_EXIT_FAIL;
	if (ks_run_hot_start(&st->o.hot, st->o.ring.version))
		return KS_EXIT_FAIL;
	if (ks_run_steer_start(&st->o.steer, &st->maps))
		return KS_EXIT_FAIL;
	if (st->att.adopted)
		ks_run_steer_adopt(&st->o.steer, st->o.hot.table, &st->o.hot.pol);
	/* pins are hot from the start */
	set_hot_flag(st, ks_run_steer_interval(&st->o.steer, st->o.hot.table,
					       0) > 0);
	if (st->o.steer.rs.n)
		printf("keysteer: %u L1 replicas, copies read from %s\n",
		       st->o.steer.rs.n, st->o.steer.owner.text);
	if (st->o.http_open)
		printf("keysteer: routing document on %s%s/routing\n",
		       st->o.http.unix_path[0] ? "unix:" : "http://",
		       st->o.http.name);
	/* everything is loaded, attached, bound and open: from here on the
	 * agent needs bpf() on its maps and the link, nothing else */
	if (!st->o.keep_privileges) {
		int err = ks_drop_privileges(st->att.mounted_bpffs);

		if (err) {
			ks_err("cannot drop capabilities (%s); run with --keep-privileges to skip this",
			       strerror(-err));
			return KS_EXIT_FAIL;
		}
		ks_debug("capabilities now %#llx", ks_cap_effective());
	}
	/* Scrapes before the first interval ends get the counters so far. */
	publish_metrics(st, &st->prev, 0, 0);
	if (st->o.metrics.srv)
		printf("keysteer: metrics on http://%s/metrics%s\n",
		       st->o.metrics.srv->name,
		       st->o.metrics.export_keys ? " (with keys)" : "");
	fflush(stdout);
	return 0;
}

/* Waits for dirty events, HTTP clients or the timeout, then serves them. */
static void wait_events(struct run_state *st, __u64 until)
{
	struct pollfd pfd[1 + 2 * KS_HTTP_POLLFDS];
	__u64 now = ks_mono_ns();
	int n = 0, nh = 0, nm = 0, t, tmo;

	tmo = until > now ? (int)((until - now + 999999) / 1000000) : 0;
	t = ks_run_steer_timeout_ms(&st->o.steer);
	if (t >= 0 && t < tmo)
		tmo = t;
	if (ks_run_steer_fd(&st->o.steer) >= 0) {
		pfd[0].fd = ks_run_steer_fd(&st->o.steer);
		pfd[0].events = POLLIN;
		n = 1;
	}
	if (st->o.http_open)
		nh = ks_http_poll_add(&st->o.http, pfd + n, KS_HTTP_POLLFDS,
				      now, &tmo);
	if (st->o.metrics.own_open)
		nm = ks_http_poll_add(&st->o.metrics.own, pfd + n + nh,
				      KS_HTTP_POLLFDS, now, &tmo);
	if (poll(pfd, n + nh + nm, tmo) < 0 && errno != EINTR)
		ks_sleep_until(until);
	ks_run_steer_poll(&st->o.steer);
	if (st->o.http_open)
		ks_http_service(&st->o.http, pfd + n, nh, st->o.hot.doc,
				st->o.hot.doc_len, ks_mono_ns());
	if (st->o.metrics.own_open)
		ks_http_service(&st->o.metrics.own, pfd + n + nh, nm, NULL, 0,
				ks_mono_ns());
}

/* Sleeps until the deadline, waking at least every 100 ms so SIGHUP and
 * shard file changes are handled between intervals; then the ring. */
static int wait_interval(struct run_state *st, __u64 deadline)
{
	while (!ks_stop) {
		__u64 now = ks_mono_ns();
		int hup = ks_reload, err;

		ks_reload = 0;
		ks_run_hot_poll(&st->o.hot, hup);
		err = ks_run_ring_poll(&st->o.ring, &st->maps, &st->col, hup);
		if (err) {
			ks_err("reloading the ring failed (%s); stopping, rerun with -v",
			       strerror(-err));
			return err;
		}
		if (now >= deadline)
			return 0;
		wait_events(st, now + 100000000ULL < deadline ?
					now + 100000000ULL : deadline);
	}
	return 0;
}

static int loop(struct run_state *st)
{
	__u64 step = (__u64)st->o.interval_ms * 1000000ULL;
	__u64 deadline = st->flip_ns + step;
	int err;

	for (;;) {
		if (wait_interval(st, deadline))
			return KS_EXIT_FAIL;
		if (ks_stop)
			break;
		if (!ks_link_attached(&st->att)) {
			ks_warn("the %s program on %s was detached (by 'agent detach' or the interface going away); stopping",
				st->o.attach_tc ? "tc" : "XDP",
				st->o.ifname);
			return KS_EXIT_FAIL;
		}
		err = one_interval(st);
		if (err) {
			ks_err("interval failed (%s); stopping, rerun with -v",
			       strerror(-err));
			return KS_EXIT_FAIL;
		}
		deadline += step;
		/* After a stall (suspend, debugger) do not catch up in a
		 * burst of zero-length intervals. */
		if (deadline < ks_mono_ns())
			deadline = ks_mono_ns() + step;
	}
	return KS_EXIT_OK;
}

int cmd_run(int argc, char **argv)
{
	struct run_state *st;
	char err[KS_ERRLEN * 2];
	int rc;

	st = calloc(1, sizeof(*st));
	if (!st)
		return KS_EXIT_FAIL;
	rc = parse_run(argc, argv, &st->o);
	if (rc) {
		ks_conf_free(&st->o.conf);
		ks_run_ring_free(&st->o.ring);
		ks_run_hot_free(&st->o.hot);
		ks_run_metrics_free(&st->o.metrics);
		free(st);
		return rc < 0 ? KS_EXIT_OK : rc;
	}
	ks_log_init(st->o.verbose ? KS_LOG_DEBUG : KS_LOG_INFO);
	if (st->o.cfg_flags & KS_CFG_NO_STREAM)
		ks_warn("--stream-state off: every TCP segment is parsed on its own; a test control only, counts will be wrong and steering unsafe");
	rc = ks_require_root("attaching keysteer");
	if (rc)
		goto out_free;
	if (ks_run_ring_enabled(&st->o.ring) &&
	    ks_rcu_wait_check(err, sizeof(err))) {
		ks_err("%s", err);
		rc = KS_EXIT_FAIL;
		goto out_free;
	}
	rc = ks_check_free(st->o.ifname, st->o.ifindex,
			   st->o.attach_tc ? KS_HOOK_TC : st->o.xdp, err,
			   sizeof(err));
	if (rc == KS_ADOPT) {
		ks_info("%s", err);
		st->adopt = 1;
	} else if (rc) {
		ks_err("%s", err);
		rc = KS_EXIT_FAIL;
		goto out_free;
	}
	ks_install_stop_handlers();
	ks_install_reload_handler();
	st->att.link_fd = -1;
	rc = start(st);
	if (!rc)
		rc = loop(st);
	ks_collector_free(&st->col);
	ks_run_steer_free(&st->o.steer);
	ks_teardown(&st->att);
	if (!rc)
		printf("keysteer: detached from %s\n", st->o.ifname);
out_free:
	ks_run_steer_free(&st->o.steer);
	if (st->o.http_open)
		ks_http_close(&st->o.http);
	ks_run_metrics_free(&st->o.metrics);
	ks_run_ring_free(&st->o.ring);
	ks_run_hot_free(&st->o.hot);
	ks_conf_free(&st->o.conf);
	free(st->sketch);
	free(st->rep);
	free(st);
	return rc;
}
