// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_trace.c - 'agent trace': switches ks_config.trace on, prints one line
 * per sampled key from the ks_events ring buffer, and switches it off
 * again on every way out (Ctrl-C, SIGTERM, --count, --duration, errors).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "cli/cli_options.h"
#include "cli/cmds.h"
#include "dp/collect.h"
#include "dp/bpf_log.h"
#include "core/names.h"
#include "util/opts.h"
#include "render/text.h"
#include "util/clock.h"
#include "util/sig.h"
#include "cli/cmd_trace.h"

struct trace_opts {
	const char *ifname;
	unsigned long long count; /* 0: no limit */
	__u32 duration_ms;        /* 0: no limit */
	int hash_only;
	int verbose;
};

struct trace_ctx {
	struct trace_opts o;
	unsigned long long printed;
};

void ks_format_event(const struct ks_event *e, int hash_only, char *buf,
		     size_t len)
{
	char key[KS_MAX_KEY_LEN * 4 + 1], addr[INET6_ADDRSTRLEN + 2];
	char ip[INET6_ADDRSTRLEN];

	if (hash_only)
		snprintf(key, sizeof(key), "0x%016llx",
			 (unsigned long long)e->hash);
	else
		ks_key_text(e->key,
			    e->len > KS_MAX_KEY_LEN ? KS_MAX_KEY_LEN : e->len,
			    key, sizeof(key));
	ks_format_ip(e->saddr, ip, sizeof(ip));
	snprintf(addr, sizeof(addr),
		 ks_ip_is_v4mapped(e->saddr) ? "%s" : "[%s]", ip);
	snprintf(buf, len, "%s %s %s %s:%u %s", ks_class_name(e->cls),
		 ks_op_name(e->op), key, addr, e->sport,
		 e->proto == IPPROTO_TCP   ? "tcp"
		 : e->proto == IPPROTO_UDP ? "udp"
					   : "?");
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct trace_ctx *t = ctx;
	char line[KS_MAX_KEY_LEN * 4 + 128];

	if (size < sizeof(struct ks_event))
		return 0;
	if (t->o.count && t->printed >= t->o.count)
		return 0; /* past --count: drop the rest */
	ks_format_event(data, t->o.hash_only, line, sizeof(line));
	puts(line);
	t->printed++;
	return 0;
}

static int parse_trace(int argc, char **argv, struct trace_opts *o)
{
	struct ks_cli_getopt g;
	char err[KS_ERRLEN];
	int c;

	memset(o, 0, sizeof(*o));
	ks_cli_getopt_init(&g, KS_CMD_TRACE);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, g.shorts, g.lo, NULL)) != -1) {
		switch (c) {
		case 'i':
			o->ifname = optarg;
			break;
		case 'c':
			if (ks_parse_uint("--count", optarg, 1, 1000000000ULL,
					  &o->count, err, sizeof(err)))
				goto bad;
			break;
		case 'd':
			if (ks_parse_seconds("--duration", optarg, 100,
					     86400000, &o->duration_ms, err,
					     sizeof(err)))
				goto bad;
			break;
		case 'H':
			o->hash_only = 1;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'h':
			ks_help_trace(stdout);
			return -1;
		default:
			return ks_bad_option("trace", c, argv);
		}
	}
	return ks_no_args("trace", argc, argv);
bad:
	ks_err("%s", err);
	return KS_EXIT_USAGE;
}

/*
 * The agent rewrites ks_config every interval (keeping this flag), so a
 * write of ours can race with its flip and be lost; set_trace() is
 * therefore also called periodically to re-assert the flag.
 */
static int set_trace(const struct ks_maps *m, __u32 on)
{
	struct ks_config cfg;
	int err;

	err = ks_read_config(m, &cfg);
	if (err || cfg.trace == on)
		return err;
	cfg.trace = on;
	return ks_write_config(m, &cfg);
}

static int consume(struct trace_ctx *t, struct ring_buffer *rb,
		   const struct ks_maps *m)
{
	__u64 start = ks_mono_ns(), last_assert = start;
	int n;

	/* a lost line ends the trace; main() says why */
	while (!ks_stop && !ferror(stdout)) {
		__u64 now;

		n = ring_buffer__poll(rb, 100);
		if (n == -EINTR)
			break;
		if (n < 0 && !(t->o.count && t->printed >= t->o.count)) {
			ks_err("reading the trace ring buffer failed (%s); rerun with -v",
			       strerror(-n));
			return KS_EXIT_FAIL;
		}
		if (t->o.count && t->printed >= t->o.count)
			break;
		now = ks_mono_ns();
		if (t->o.duration_ms &&
		    now - start >= (__u64)t->o.duration_ms * 1000000ULL)
			break;
		if (now - last_assert >= 1000000000ULL) {
			set_trace(m, 1);
			last_assert = now;
		}
	}
	return KS_EXIT_OK;
}

int cmd_trace(int argc, char **argv)
{
	struct trace_ctx t = {};
	struct ring_buffer *rb = NULL;
	struct ks_totals before, after;
	struct ks_collector col = {};
	char ifname[IF_NAMESIZE], pin_dir[PATH_MAX];
	struct ks_maps m;
	int rc, err, have_before;

	ks_maps_init(&m);
	rc = parse_trace(argc, argv, &t.o);
	if (rc)
		return rc < 0 ? KS_EXIT_OK : rc;
	ks_log_init(t.o.verbose ? KS_LOG_DEBUG : KS_LOG_INFO);
	rc = ks_require_root("tracing keysteer");
	if (rc)
		return rc;
	rc = ks_find_attached(t.o.ifname, ifname, pin_dir, sizeof(pin_dir));
	if (rc)
		return rc;
	err = ks_maps_open_pinned(&m, pin_dir);
	if (err) {
		ks_err("cannot open the pinned maps in %s (%s); the agent may be starting or stopping, try again",
		       pin_dir, strerror(-err));
		return KS_EXIT_FAIL;
	}
	rb = ring_buffer__new(m.events, on_event, &t, NULL);
	if (!rb) {
		ks_err("cannot open the trace ring buffer (%s); rerun with -v",
		       strerror(errno));
		rc = KS_EXIT_FAIL;
		goto out;
	}
	have_before = !ks_collector_init(&col, &m) &&
		      !ks_read_totals(&col, &before);
	ks_install_stop_handlers();
	err = set_trace(&m, 1);
	if (err) {
		ks_err("cannot switch tracing on (%s); check that the agent still runs",
		       strerror(-err));
		rc = KS_EXIT_FAIL;
		goto out;
	}
	fprintf(stderr, "keysteer: tracing %s; Ctrl-C to stop\n", ifname);
	rc = consume(&t, rb, &m);
	set_trace(&m, 0);
	if (have_before && !ks_read_totals(&col, &after) &&
	    after.pkts[KS_PKT_TRACE_DROP] > before.pkts[KS_PKT_TRACE_DROP])
		ks_warn("%llu events were lost to a full ring buffer",
			(unsigned long long)(after.pkts[KS_PKT_TRACE_DROP] -
					     before.pkts[KS_PKT_TRACE_DROP]));
	fprintf(stderr, "keysteer: %llu events traced\n", t.printed);
out:
	ring_buffer__free(rb);
	ks_collector_free(&col);
	ks_maps_close(&m);
	return rc;
}
