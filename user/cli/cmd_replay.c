// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_replay.c - 'agent replay FILE': runs every frame of a capture
 * through keysteer's own XDP program with BPF_PROG_TEST_RUN and prints the
 * report 'agent run' would have published for one interval as long as the
 * capture. The object is loaded privately (no pins, nothing attached), so
 * a replay never meets a running agent; the reading of the maps, the
 * estimates, the ring and the rendering are the agent's own modules.
 * With --interval the capture is cut by its timestamps into the intervals
 * a live agent would have closed, each with its epoch flip, estimates and
 * hot-key table update.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "keysteer.skel.h"
#include "dp/load_private.h"
#include "dp/attach.h"
#include "cli/cli_options.h"
#include "cli/cmds.h"
#include "dp/collect.h"
#include "dp/rates.h"
#include "dp/slog.h"
#include "core/estimate.h"
#include "dp/bpf_log.h"
#include "core/names.h"
#include "util/opts.h"
#include "core/pcap.h"
#include "render/report.h"
#include "agent/run_ring.h"
#include "agent/run_hot.h"
#include "core/hotkeys.h"
#include "render/json.h"
#include "render/text.h"
#include "util/clock.h"
#include "util/test_switches.h"

#define REPLAY_IFNAME "replay" /* what the report names as the interface */
/* A probe frame of an EtherType no parser takes (IEEE local
 * experimental): it measures the test-run limit and counts as not
 * memcached, which the report's deltas leave out. */
#define PROBE_ETHERTYPE 0x88b5
#define PROBE_MAX       (65535 + 14 + 8) /* an IP datagram's most, tagged twice */
#define ETH_MIN         14

struct replay_opts {
	const char *file;
	__u32 sample_n;      /* --sample N; auto: the first interval's */
	__u32 sample_target; /* --sample auto[:T]: T; 0 for a fixed N */
	/* --place-target: as 'agent run' picks P, on the capture's clock
	 * (ks_place_next at each interval's close) */
	__u32 place_target;
	__u16 ports[KS_MAX_PORTS];
	struct ks_view_opts view;
	int verbose;
	struct ks_run_ring ring;
	__u64 interval_ns; /* --interval; 0: one interval, the capture */
	__u32 ranked;      /* --ranked: candidates listed per interval */
	int slog_off;      /* --log-samples off: the in-kernel sketch only */
	/* --log-samples drop (test only): records taken and thrown away,
	 * the control of test_sample_log.sh */
	int slog_drop;
	struct ks_hot_policy pol;
};

/* What happened to the frames; the summary under the report. */
struct replay_counts {
	__u64 frames;            /* read from the file */
	__u64 run;               /* through ks_ingress */
	__u64 outbound;          /* skipped: the capturing host sent them */
	__u64 too_short;         /* skipped: shorter than an Ethernet header */
	__u64 too_long;          /* skipped: over the test-run limit */
	__u64 refused;           /* skipped: the kernel refused the run */
	int refused_err;         /* the first refusal's errno */
	__u64 cut;               /* run as captured, shorter than on the wire */
	__u64 run_ns;            /* the test runs' own clock, summed */
	__u64 first_ns, last_ns; /* of the frames run, 0 if none */
	__u32 linktypes;         /* bit 0 Ethernet, 1 SLL, 2 SLL2 */
	__u32 max_ifs;           /* pcapng: most interfaces in one section */
	__u32 limit;             /* longest frame the test run takes whole */
	int failed_iv;           /* --interval: a map error closing one */
};

struct replay {
	struct replay_opts o;
	const __u8 *buf; /* the capture, mapped */
	size_t len;
	struct ks_pcap *pcap;
	struct keysteer_bpf *skel;
	int prog_fd;
	struct ks_maps maps;
	struct ks_collector col;
	struct ks_rates rates; /* every CPU's 1 in N, epoch by epoch */
	/* the sample log, drained after every frame (the test run is
	 * over when it returns: nothing is written later) */
	struct ks_slog slog;
	int slog_on;
	struct ks_sketch *sketch;
	struct ks_report *rep;
	struct ks_top_count counts[KS_REPORT_TOP]; /* rep->top's, exact */
	struct ks_totals prev, cur, delta;
	struct ks_misdirect *mis_all, mis[KS_MISDIRECT_SHOW];
	size_t n_mis;
	struct replay_counts n;
	__u8 *probe; /* PROBE_MAX bytes */
	/* --interval: the one being filled, on the capture's clock */
	__u32 seq;
	int iv_open;       /* a frame with a timestamp started one */
	__u64 iv_start_ns; /* its start */
	/* the agent's work of the last interval closed (estimate, ranking,
	 * hot-key table; not the printing), thread CPU: what 'agent run'
	 * would spend on it, whatever the capture's clock says */
	__u64 work_ns;
	struct ks_totals first; /* the counters before the first frame */
	struct ks_hot_table *hot;
	struct ks_top_entry *ranked; /* KS_CAND_SLOTS */
};

static int parse_replay(int argc, char **argv, struct replay_opts *o)
{
	struct ks_cli_getopt g;
	char err[KS_ERRLEN * 2];
	unsigned long long v;
	int c, n;

	memset(o, 0, sizeof(*o));
	ks_run_ring_init(&o->ring);
	o->sample_n = 1; /* offline, every key can be counted */
	o->place_target = KS_PLACE_TARGET_DEFAULT;
	ks_view_opts_init(&o->view);
	o->ports[0] = 11211;
	ks_hot_policy_default(&o->pol);
	ks_cli_getopt_init(&g, KS_CMD_REPLAY);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, g.shorts, g.lo, NULL)) != -1) {
		switch (c) {
		case 's': {
			struct ks_sample_opt so;

			if (ks_sample_parse(optarg, 1000000, &so, err,
					    sizeof(err)))
				goto bad;
			/* auto starts offline at every key, as the
			 * default does */
			o->sample_n = so.n ? so.n : 1;
			o->sample_target = so.target;
			break;
		}
		case KS_OPTV_PLACE_TARGET:
			if (ks_place_parse(optarg, &o->place_target, err,
					   sizeof(err)))
				goto bad;
			break;
		case 'p':
			if (ks_parse_ports(optarg, o->ports, &n, err,
					   sizeof(err)))
				goto bad;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'I': {
			double sec;

			if (ks_parse_double("--interval", optarg, 0.001, 3600,
					    &sec, err, sizeof(err)))
				goto bad;
			o->interval_ns = (__u64)(sec * 1e9 + 0.5);
			break;
		}
		case KS_OPTV_RANKED:
			if (ks_parse_uint("--ranked", optarg, 1, KS_CAND_SLOTS,
					  &v, err, sizeof(err)))
				goto bad;
			o->ranked = (__u32)v;
			break;
		case 'C':
			if (ks_parse_double("--shard-capacity", optarg, 1, 1e9,
					    &o->pol.shard_capacity_ops, err,
					    sizeof(err)))
				goto bad;
			break;
		case KS_OPTV_HOT_FRACTION:
			if (ks_parse_double("--hot-fraction", optarg, 0.0001, 1,
					    &o->pol.hot_fraction, err,
					    sizeof(err)))
				goto bad;
			break;
		case KS_OPTV_SAMPLE_LOG:
			if (!strcmp(optarg, "drop")) {
				struct ks_test_switches ts = {};

				if (ks_test_switch(&ts, "--log-samples drop",
						   err, sizeof(err)))
					goto bad;
				o->slog_drop = 1;
				break;
			}
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				snprintf(
					err, sizeof(err),
					"--log-samples '%s' is not a state; give on (the default) or off",
					optarg);
				goto bad;
			}
			o->slog_off = !strcmp(optarg, "off");
			break;
		case 'h':
			ks_help_replay(stdout);
			return -1;
		default:
			n = ks_view_opt(&o->view, c, optarg, err, sizeof(err));
			if (!n)
				n = ks_run_ring_opt(&o->ring, c, optarg, err,
						    sizeof(err));
			if (n < 0)
				goto bad;
			if (n)
				break;
			return ks_bad_option("replay", c, argv);
		}
	}
	if (optind >= argc)
		return ks_usage_error(
			"replay",
			"replay needs a capture FILE (pcap or pcapng, e.g. from 'tcpdump -w FILE')");
	o->file = argv[optind++];
	if (ks_no_args("replay", argc, argv))
		return KS_EXIT_USAGE;
	if (o->ranked && !o->interval_ns)
		return ks_usage_error(
			"replay",
			"--ranked lists each interval's candidates: it needs --interval");
	/* A bad shard list stops the replay before anything is loaded. */
	if (ks_run_ring_prepare(&o->ring, o->sample_n, err, sizeof(err)))
		goto bad;
	return 0;
bad:
	ks_err("%s", err);
	return KS_EXIT_USAGE;
}

/* ---- the capture ---- */

static int map_capture(struct replay *r)
{
	struct stat st;
	void *m;
	int fd;

	fd = open(r->o.file, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		ks_err("cannot read %s (%s); check the path and its permissions",
		       r->o.file, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		ks_err("%s is not a regular file; write the capture to a file first (tcpdump -w FILE)",
		       r->o.file);
		goto fail;
	}
	r->len = (size_t)st.st_size;
	if (r->len) {
		m = mmap(NULL, r->len, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			ks_err("cannot map %s (%s); check that it is a readable file",
			       r->o.file, strerror(errno));
			goto fail;
		}
		r->buf = m;
	}
	close(fd);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

static int capture_error(const struct replay *r)
{
	ks_err("%s: %s", r->o.file, r->pcap->err);
	return KS_EXIT_FAIL;
}

static void note_linktype(struct replay_counts *n, __u32 lt)
{
	n->linktypes |= lt == KS_LINKTYPE_ETHERNET    ? 1
			: lt == KS_LINKTYPE_LINUX_SLL ? 2
						      : 4;
}

/* Reads the whole capture once before anything is loaded: a damaged file
 * is refused without a half-made report. */
static int scan_capture(struct replay *r)
{
	struct ks_pcap_pkt pkt;
	int rc;

	if (ks_pcap_open(r->pcap, r->buf, r->len))
		return capture_error(r);
	while ((rc = ks_pcap_next(r->pcap, &pkt)) > 0) {
		r->n.frames++;
		note_linktype(&r->n, pkt.linktype);
		if (r->pcap->nifs > r->n.max_ifs)
			r->n.max_ifs = r->pcap->nifs;
	}
	return rc < 0 ? capture_error(r) : 0;
}

/* ---- the program, loaded privately ---- */

static int load_private(struct replay *r)
{
	struct ks_attachment a;
	int err;

	/* fresh maps: neither reuses nor leaves any pin */
	r->skel = ks_load_private(1, &err);
	if (!r->skel) {
		ks_err("loading the BPF program failed (%s); rerun with -v for libbpf's log",
		       strerror(-err));
		return -1;
	}
	r->prog_fd = bpf_program__fd(r->skel->progs.ks_ingress);
	memset(&a, 0, sizeof(a));
	a.skel = r->skel;
	ks_attachment_maps(&a, &r->maps);
	return 0;
}

static int write_config(struct replay *r)
{
	struct ks_config cfg = { .sample_n = r->o.sample_n,
				 .seq = 0,
				 .flags = r->slog_on ? KS_CFG_SLOG : 0 };
	int err;

	memcpy(cfg.ports, r->o.ports, sizeof(cfg.ports));
	err = ks_write_config(&r->maps, &cfg);
	if (err)
		ks_err("cannot write the configuration map (%s); rerun with -v",
		       strerror(-err));
	return err;
}

/*
 * run_ring.c announces a push on stdout, where this command's report
 * goes: the announcement is progress, like the rest on stderr.
 */
static int start_ring(struct replay *r)
{
	int saved, err;

	if (!ks_run_ring_enabled(&r->o.ring))
		return 0;
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	if (saved >= 0)
		dup2(STDERR_FILENO, STDOUT_FILENO);
	err = ks_run_ring_start(&r->o.ring, &r->maps, &r->col);
	fflush(stdout);
	if (saved >= 0) {
		dup2(saved, STDOUT_FILENO);
		close(saved);
	}
	return err;
}

/* One run of ks_ingress on len bytes; the length of the linear part the
 * program saw in *seen when asked. 0 or -errno. */
static int test_run(int prog_fd, const void *data, __u32 len, __u32 *seen,
		    __u64 *run_ns)
{
	struct xdp_md md = { .data_end = len };
	LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = data, .data_size_in = len,
		    .repeat = 1);

	if (seen) {
		t.ctx_in = &md;
		t.ctx_size_in = sizeof(md);
		t.ctx_out = &md;
		t.ctx_size_out = sizeof(md);
	}
	if (bpf_prog_test_run_opts(prog_fd, &t))
		return -errno;
	if (seen)
		*seen = md.data_end - md.data;
	if (run_ns)
		*run_ns += t.duration;
	return 0;
}

/*
 * The longest frame the program is run on. ks_ingress is an xdp.frags
 * program that reads its payload with bpf_xdp_load_bytes, so a kernel
 * that runs a frame in fragments (5.18 and later) lets it read a 64 KiB
 * GRO aggregate or a jumbo frame to its end: the limit is then the largest
 * frame. An older kernel is searched for the longest frame it runs whole;
 * longer ones are skipped and counted.
 */
static int probe_limit(struct replay *r)
{
	__u32 lo = ETH_MIN, hi = PROBE_MAX, seen = 0;
	int err;

	memset(r->probe, 0, PROBE_MAX);
	r->probe[12] = PROBE_ETHERTYPE >> 8;
	r->probe[13] = PROBE_ETHERTYPE & 0xff;
	if (!test_run(r->prog_fd, r->probe, PROBE_MAX, &seen, NULL)) {
		r->n.limit = PROBE_MAX;
		return 0;
	}
	err = test_run(r->prog_fd, r->probe, lo, &seen, NULL);
	if (err) {
		ks_err("BPF_PROG_TEST_RUN of ks_ingress failed (%s); this kernel cannot replay captures (it needs 5.13 or later)",
		       strerror(-err));
		return err;
	}
	while (lo < hi) {
		__u32 mid = lo + (hi - lo + 1) / 2;

		if (!test_run(r->prog_fd, r->probe, mid, &seen, NULL) &&
		    seen == mid)
			lo = mid;
		else
			hi = mid - 1;
	}
	r->n.limit = lo;
	return 0;
}

/* Same CPU for every run: the 1-in-N countdown is per CPU, and one CPU
 * makes a sampled replay repeat exactly. */
static void stay_on_one_cpu(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		ks_debug(
			"cannot stay on CPU %d (%s); a sampled replay may differ from run to run",
			cpu, strerror(errno));
}

/* ---- --interval: the intervals a live agent would have closed ---- */

static void print_key(FILE *f, const struct replay *r, const __u8 *key,
		      __u32 len, __u64 hash)
{
	char text[4 * KS_KEY_BUF + 8];

	if (r->o.view.hash_only) {
		fprintf(f, "%016llx", (unsigned long long)hash);
		return;
	}
	ks_key_text(key, len, text, sizeof(text));
	fputs(text, f);
}

/* One key's counts in the interval, from its sketch (merged in keys:
 * each CPU's counters times its N). */
static void key_counts(const struct replay *r, __u64 hash, __u64 *reads,
		       __u64 *writes)
{
	*reads = ks_cms_point(r->sketch, KS_CLASS_READ, hash);
	*writes = ks_cms_point(r->sketch, KS_CLASS_WRITE, hash);
}

static void json_keys(FILE *f, const struct replay *r, const char *name,
		      const struct ks_top_entry *t, size_t n, double secs)
{
	__u64 reads, writes;
	size_t i;

	fprintf(f, ",\"%s\":[", name);
	for (i = 0; i < n; i++) {
		key_counts(r, t[i].hash, &reads, &writes);
		fprintf(f, "%s{\"key\":", i ? "," : "");
		if (r->o.view.hash_only)
			fputs("null", f);
		else
			ks_json_string(f, t[i].key, t[i].len);
		fprintf(f,
			",\"hash\":\"%016llx\",\"reads\":%llu,\"writes\":%llu,\"err\":%.0f}",
			(unsigned long long)t[i].hash,
			(unsigned long long)reads, (unsigned long long)writes,
			t[i].err_mps / 1000.0 * secs);
	}
	fputc(']', f);
}

static void json_hot(FILE *f, const struct replay *r)
{
	const struct ks_hot_entry *e;
	size_t pos = 0;
	int any = 0;

	fputs(",\"hot\":[", f);
	while ((e = ks_hot_next(r->hot, &pos))) {
		fprintf(f, "%s{\"key\":", any++ ? "," : "");
		if (r->o.view.hash_only)
			fputs("null", f);
		else
			ks_json_string(f, e->key, e->len);
		fprintf(f,
			",\"hash\":\"%016llx\",\"reads_per_s\":%.3f,\"writes_per_s\":%.3f,\"read_hot\":%s,\"write_hot\":%s,\"copies\":%u,\"entered_seq\":%u}",
			(unsigned long long)e->hash, e->reads_ps, e->writes_ps,
			e->read_hot ? "true" : "false",
			e->write_hot ? "true" : "false", e->copies,
			e->entered_seq);
	}
	fputc(']', f);
}

/* The rate each CPU sampled the interval at, and auto's target; the 1
 * in P each placed on the ring at, and the placement's target. */
static void json_cpu_n(FILE *f, const struct ks_report *rep)
{
	__u32 i;

	fprintf(f, ",\"sample_target\":%u,\"sample_cpu_n\":[",
		rep->sample_target);
	for (i = 0; i < rep->ncpu_n && i < KS_REPORT_CPUS; i++)
		fprintf(f, "%s%u", i ? "," : "", rep->cpu_n[i]);
	fprintf(f, "],\"place_target\":%u,\"place_p\":%u,\"place_cpu_p\":[",
		rep->place_target, rep->place_p);
	for (i = 0; i < rep->ncpu_n && i < KS_REPORT_CPUS; i++)
		fprintf(f, "%s%u", i ? "," : "", rep->cpu_p[i]);
	fputc(']', f);
}

/* With a ring: the interval's shard load as 'agent report --json' shows
 * it (its "busiest" and "shards"); null and [] without one. */
static void json_iv_shards(FILE *f, const struct replay *r)
{
	const struct ks_shard_report *g = r->o.ring.rep;

	if (!ks_run_ring_enabled(&r->o.ring) || !g || !g->nshards) {
		fputs(",\"busiest\":null,\"shards\":[]", f);
		return;
	}
	fputs(",\"busiest\":", f);
	if (g->busiest < g->nshards)
		fprintf(f, "%u", g->busiest);
	else
		fputs("null", f);
	fputs(",\"shards\":", f);
	ks_render_json_shard_rows(f, g);
}

/* One line of JSON per interval. */
static void json_interval(FILE *f, const struct replay *r, __u64 end_ns,
			  __u64 elapsed, long ncands, size_t nranked)
{
	const struct ks_report *rep = r->rep;
	__u64 keys[KS_CLASS_MAX];
	double secs = elapsed / 1e9;

	ks_class_keys(&r->prev, &r->cur, keys);
	fprintf(f,
		"{\"seq\":%u,\"start_ns\":%llu,\"end_ns\":%llu,\"elapsed_ns\":%llu,\"partial\":%s,\"sample_n\":%u,\"requests\":%llu,\"keys\":{\"read\":%llu,\"write\":%llu,\"other\":%llu},\"sampled\":%llu,\"candidates\":%ld,\"work_ms\":%.3f",
		rep->seq, (unsigned long long)r->iv_start_ns,
		(unsigned long long)end_ns, (unsigned long long)elapsed,
		elapsed < r->o.interval_ns ? "true" : "false", rep->sample_n,
		(unsigned long long)ks_total_requests(&r->prev, &r->cur),
		(unsigned long long)keys[KS_CLASS_READ],
		(unsigned long long)keys[KS_CLASS_WRITE],
		(unsigned long long)keys[KS_CLASS_OTHER],
		(unsigned long long)rep->sampled_total, ncands,
		r->work_ns / 1e6);
	json_cpu_n(f, rep);
	json_iv_shards(f, r);
	json_keys(f, r, "top", rep->top,
		  rep->n_top < (__u32)r->o.view.top ? rep->n_top
						    : (__u32)r->o.view.top,
		  secs);
	if (r->o.ranked)
		json_keys(f, r, "ranked", r->ranked, nranked, secs);
	json_hot(f, r);
	fputs("}\n", f);
}

/* With a ring: the busiest shard of the interval and the 1 in P in force. */
static void text_iv_shards(FILE *f, const struct replay *r)
{
	const struct ks_shard_report *g = r->o.ring.rep;
	const struct ks_shard_rate *s;

	if (!ks_run_ring_enabled(&r->o.ring) || !g || !g->nshards)
		return;
	if (g->busiest >= g->nshards) {
		fprintf(f, "  shards: no key placed\n");
		return;
	}
	s = &g->shards[g->busiest];
	fprintf(f,
		"  shards: busiest %s %.1f keys/s (%.2f x the mean), ring placements 1 in %u\n",
		s->name, (s->reads_mps + s->writes_mps) / 1000.0,
		s->ratio_milli / 1000.0, r->rep->place_p);
}

static void text_interval(FILE *f, const struct replay *r, __u64 elapsed,
			  long ncands, size_t nranked)
{
	const struct ks_report *rep = r->rep;
	const struct ks_top_entry *t = r->o.ranked ? r->ranked : rep->top;
	size_t n = r->o.ranked ? nranked : rep->n_top, i;
	const struct ks_hot_entry *e;
	__u64 reads, writes;
	size_t pos = 0;

	if (!r->o.ranked && n > (size_t)r->o.view.top)
		n = (size_t)r->o.view.top;
	fprintf(f,
		"interval #%u  %.3f s%s  %llu requests  %llu sampled  %ld candidates  %zu hot  work %.2f ms\n",
		rep->seq, elapsed / 1e9,
		elapsed < r->o.interval_ns ? " (the capture ends)" : "",
		(unsigned long long)ks_total_requests(&r->prev, &r->cur),
		(unsigned long long)rep->sampled_total, ncands, r->hot->used,
		r->work_ns / 1e6);
	for (i = 0; i < n; i++) {
		key_counts(r, t[i].hash, &reads, &writes);
		fprintf(f, "  %4zu  %12llu reads %10llu writes +/- %-8.0f ",
			i + 1, (unsigned long long)reads,
			(unsigned long long)writes,
			t[i].err_mps / 1000.0 * (elapsed / 1e9));
		print_key(f, r, t[i].key, t[i].len, t[i].hash);
		fputc('\n', f);
	}
	while ((e = ks_hot_next(r->hot, &pos))) {
		fprintf(f, "  hot   %12.1f reads/s %8.1f writes/s copies %-3u ",
			e->reads_ps, e->writes_ps, e->copies);
		print_key(f, r, e->key, e->len, e->hash);
		fputc('\n', f);
	}
	text_iv_shards(f, r);
}

/*
 * The ring's per-shard load of the interval just closed, as 'agent run'
 * publishes it (agent/run_ring.c): the counts' deltas, each placed key
 * already counted P by the datapath, scaled by the keys a sampled key
 * stood for (ks_rates_effective), over the interval on the capture's
 * clock. Read after the flip: on one CPU no later frame can add to it.
 */
static int interval_shards(struct replay *r, __u32 seq, __u64 elapsed)
{
	struct ks_run_ring *g = &r->o.ring;
	__u32 n = g->shards.n;

	if (!ks_run_ring_enabled(g) || !n)
		return 0;
	g->cpu_n = r->rates.ended;
	g->cpu_p = r->rates.p_ended;
	return ks_run_ring_rows(g, &r->col, ks_rates_effective(&r->rates), seq,
				elapsed);
}

/*
 * Closes the interval being filled at end_ns as 'agent run' does: flips
 * the epoch, estimates from the epoch just left, updates the hot-key
 * table from the ranked candidates, prints, and zeroes that epoch for
 * its next turn. The last interval ends with the capture, short.
 */
static int close_interval(struct replay *r, __u64 end_ns)
{
	__u32 old = r->seq, epoch = old & 1;
	__u64 elapsed = end_ns > r->iv_start_ns ? end_ns - r->iv_start_ns
						: r->o.interval_ns;
	struct ks_config cfg = { .sample_n = r->o.sample_n,
				 .flags = r->slog_on ? KS_CFG_SLOG : 0 };
	struct ks_hot_sample samples[KS_HOT_CAP];
	struct ks_interval iv;
	size_t nranked = 0, i;
	__u64 cpu0 = ks_thread_cpu_ns();
	long ncands;
	int err;

	memcpy(cfg.ports, r->o.ports, sizeof(cfg.ports));
	/* the half the ring was pushed into stays the active one */
	if (ks_run_ring_enabled(&r->o.ring))
		cfg.ring = r->o.ring.active;
	/* as 'agent run' does: the next epoch's rates first */
	err = ks_rates_flip(&r->rates, &r->maps, r->seq + 1, elapsed);
	if (err)
		return err;
	if (r->slog_on)
		ks_slog_flip_begin(&r->slog, r->seq + 1);
	cfg.seq = ++r->seq;
	err = ks_write_config(&r->maps, &cfg);
	if (err)
		return err;
	if (r->slog_on)
		ks_slog_flip_end(&r->slog, old);
	ncands = ks_estimate_interval(&r->col, epoch, old, r->rates.ended,
				      KS_REPORT_TOP, elapsed, &r->prev, &r->cur,
				      r->sketch, NULL, r->rep);
	if (ncands < 0)
		return (int)ncands;
	r->rep->seq = old;
	ks_rates_report(&r->rates, r->rep);
	err = interval_shards(r, old, elapsed);
	if (err)
		return err;
	if (r->o.ranked) {
		/* the sketch is in keys already */
		ks_interval_init(&iv, r->sketch, &r->prev, &r->cur, 1, elapsed);
		iv.rate_max = r->rep->sample_n;
		nranked = ks_top_select(r->sketch, &iv, r->col.cands,
					(size_t)ncands, r->ranked, r->o.ranked);
	}
	for (i = 0; i < r->col.nranked && i < KS_HOT_CAP; i++)
		ks_hot_sample_from_top(&r->col.ranked[i], &samples[i]);
	ks_hot_update(r->hot, &r->o.pol, samples, i, old);
	r->work_ns = ks_thread_cpu_ns() - cpu0;
	if (r->o.view.json)
		json_interval(stdout, r, end_ns, elapsed, ncands, nranked);
	else
		text_interval(stdout, r, elapsed, ncands, nranked);
	err = ks_zero_sketch(&r->col, epoch);
	r->prev = r->cur;
	r->iv_start_ns = end_ns;
	return err;
}

/* Closes every interval that ends at or before ts_ns. */
static int intervals_upto(struct replay *r, __u64 ts_ns)
{
	int err;

	if (!r->iv_open) {
		r->iv_open = 1;
		r->iv_start_ns = ts_ns;
		return 0;
	}
	while (ts_ns >= r->iv_start_ns + r->o.interval_ns) {
		err = close_interval(r, r->iv_start_ns + r->o.interval_ns);
		if (err)
			return err;
	}
	return 0;
}

static void run_frame(struct replay *r, const struct ks_pcap_pkt *pkt)
{
	int err;

	if (pkt->dir == KS_PCAP_DIR_OUT) {
		r->n.outbound++;
		return;
	}
	if (pkt->len < ETH_MIN) {
		r->n.too_short++;
		return;
	}
	if (pkt->len > r->n.limit) {
		r->n.too_long++;
		return;
	}
	if (r->o.interval_ns && pkt->has_ts && !r->n.failed_iv) {
		err = intervals_upto(r, pkt->ts_ns);
		if (err) {
			r->n.failed_iv = err;
			return;
		}
	}
	err = test_run(r->prog_fd, pkt->data, pkt->len, NULL, &r->n.run_ns);
	if (err) {
		if (!r->n.refused++)
			r->n.refused_err = -err;
		return;
	}
	r->n.run++;
	r->n.cut += pkt->len < pkt->wire_len;
	if (r->slog_on)
		ks_slog_drain(&r->slog);
	/* The span is that of the frames the program saw: a capture of both
	 * directions gives the same rates as one of the received side. */
	if (!pkt->has_ts)
		return;
	if (!r->n.first_ns || pkt->ts_ns < r->n.first_ns)
		r->n.first_ns = pkt->ts_ns;
	if (pkt->ts_ns > r->n.last_ns)
		r->n.last_ns = pkt->ts_ns;
}

static int run_capture(struct replay *r)
{
	struct ks_pcap_pkt pkt;
	int rc;

	if (ks_pcap_open(r->pcap, r->buf, r->len))
		return capture_error(r);
	while ((rc = ks_pcap_next(r->pcap, &pkt)) > 0 && !r->n.failed_iv)
		run_frame(r, &pkt);
	if (rc < 0)
		return capture_error(r);
	/* the last interval ends with the capture's last frame */
	if (r->o.interval_ns && !r->n.failed_iv)
		r->n.failed_iv = close_interval(r, r->n.last_ns);
	if (r->n.failed_iv) {
		ks_err("cannot read the maps at the end of an interval (%s); rerun with -v",
		       strerror(-r->n.failed_iv));
		return KS_EXIT_FAIL;
	}
	return 0;
}

/* ---- the report ---- */

static __u64 span_ns(const struct replay_counts *n)
{
	/* One timestamp (or none): rates per second over one second. */
	return n->last_ns > n->first_ns ? n->last_ns - n->first_ns
					: 1000000000ULL;
}

static __u64 minus(__u64 a, __u64 b)
{
	return a > b ? a - b : 0;
}

/* What the replay added to the counters (the probe's frames are not). */
static void totals_delta(const struct ks_totals *prev,
			 const struct ks_totals *cur, struct ks_totals *d)
{
	__u32 i;

	for (i = 0; i < KS_OP_MAX; i++) {
		d->ops[i].requests = minus(cur->ops[i].requests,
					   prev->ops[i].requests);
		d->ops[i].keys = minus(cur->ops[i].keys, prev->ops[i].keys);
		d->ops[i].bytes = minus(cur->ops[i].bytes, prev->ops[i].bytes);
	}
	for (i = 0; i < KS_ERR_MAX; i++)
		d->errors[i] = minus(cur->errors[i], prev->errors[i]);
	for (i = 0; i < KS_PKT_MAX; i++)
		d->pkts[i] = minus(cur->pkts[i], prev->pkts[i]);
}

/* Each top key's count straight from the sketch (its rates are this over
 * the span): exact, where rate x span would round for long captures. */
static void top_counts(struct replay *r)
{
	__u32 i;

	for (i = 0; i < r->rep->n_top && i < KS_REPORT_TOP; i++) {
		__u64 h = r->rep->top[i].hash;

		key_counts(r, h, &r->counts[i].reads, &r->counts[i].writes);
	}
}

/* The interval 'agent run' would have closed at the end of the capture,
 * with the capture's clock. */
static int build_report(struct replay *r)
{
	__u64 span = span_ns(&r->n);
	struct ks_report *rep = r->rep;
	long ncands;

	if (r->slog_on)
		ks_slog_flip_end(&r->slog, 0);
	ncands = ks_estimate_interval(&r->col, 0, 0, r->rates.cur,
				      KS_REPORT_TOP, span, &r->prev, &r->cur,
				      r->sketch, NULL, rep);
	if (ncands < 0)
		return (int)ncands;
	totals_delta(&r->prev, &r->cur, &r->delta);
	top_counts(r);
	rep->version = KS_REPORT_VERSION;
	ks_rates_report(&r->rates, rep);
	rep->sample_n = ks_rates_max(r->rates.cur, r->rates.ncpus);
	memcpy(rep->cpu_n, r->rates.cur, rep->ncpu_n * sizeof(__u32));
	rep->interval_ms = span / 1000000 > 0xffffffffULL
				   ? 0xffffffffU
				   : (__u32)(span / 1000000);
	rep->start_ns = r->n.first_ns;
	rep->updated_ns = r->n.last_ns;
	rep->elapsed_ns = span;
	snprintf(rep->ifname, sizeof(rep->ifname), "%s", REPLAY_IFNAME);
	return 0;
}

/* The ring's per-shard rates over the capture's span, not the wall clock
 * the live interval uses. */
static int build_ring(struct replay *r)
{
	struct ks_run_ring *g = &r->o.ring;
	long n;
	__u32 i;
	int err;

	if (!ks_run_ring_enabled(g))
		return 0;
	err = ks_run_ring_interval(g, &r->maps, &r->col, 0);
	if (err)
		return err;
	ks_shard_fill(g->rep, g->base, g->base, g->cur, g->shards.n,
		      g->sample_n, span_ns(&r->n));
	for (i = 0; i < g->shards.n && i < KS_MAX_SHARDS; i++)
		g->rep->shards[i].load_err_mps = KS_SHARD_ERR_UNKNOWN;
	g->rep->elapsed_ns = span_ns(&r->n);
	n = ks_read_misdirect(&r->col, r->mis_all);
	if (n < 0)
		return (int)n;
	r->n_mis = ks_misdirect_recent(r->mis_all, (size_t)n,
				       g->rep->pushed_mono_ns, r->mis,
				       KS_MISDIRECT_SHOW);
	return 0;
}

static void format_time(__u64 ns, char *buf, size_t len)
{
	time_t s = (time_t)(ns / 1000000000ULL);
	struct tm tm;

	if (!ns || !gmtime_r(&s, &tm)) {
		snprintf(buf, len, "no timestamps");
		return;
	}
	strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(buf + strlen(buf), len - strlen(buf), ".%03llu UTC",
		 (unsigned long long)(ns / 1000000ULL % 1000));
}

static void print_format(FILE *f, const struct replay *r)
{
	static const char *const lt[] = { "Ethernet", "Linux cooked SLL",
					  "Linux cooked SLL2" };
	const struct ks_pcap *p = r->pcap;
	int i, any = 0;

	if (p->format == KS_PCAP_NG)
		fprintf(f, "capture  %s: pcapng, %u interface%s", r->o.file,
			r->n.max_ifs, r->n.max_ifs == 1 ? "" : "s");
	else
		fprintf(f, "capture  %s: pcap, %s timestamps", r->o.file,
			p->nsec ? "nanosecond" : "microsecond");
	for (i = 0; i < 3; i++) {
		if (!(r->n.linktypes & (1u << i)))
			continue;
		fprintf(f, "%s%s", any++ ? " and " : ", frames ", lt[i]);
	}
	fputc('\n', f);
}

static void print_frames(FILE *f, const struct replay_counts *n)
{
	__u64 skipped = n->outbound + n->too_short + n->too_long + n->refused;

	fprintf(f, "frames   %llu read, %llu run through %s, %llu skipped",
		(unsigned long long)n->frames, (unsigned long long)n->run,
		KS_PROG_NAME, (unsigned long long)skipped);
	if (n->outbound)
		fprintf(f,
			"; %llu sent by the capturing host (XDP sees only received frames)",
			(unsigned long long)n->outbound);
	if (n->too_short)
		fprintf(f, "; %llu shorter than an Ethernet header",
			(unsigned long long)n->too_short);
	if (n->too_long)
		fprintf(f,
			"; %llu over the %u-byte test-run limit (GRO-merged or jumbo frames)",
			(unsigned long long)n->too_long, n->limit);
	if (n->refused)
		fprintf(f, "; %llu refused by the kernel (%s)",
			(unsigned long long)n->refused,
			strerror(n->refused_err));
	fputc('\n', f);
	if (n->cut)
		fprintf(f,
			"         %llu frames cut by the capture's snaplen were run as captured\n",
			(unsigned long long)n->cut);
	/* The kernel's clock around each run: for comparing two builds on
	 * one capture (a wider sketch's cache misses show here), not a
	 * live per-packet cost (no NIC, no softirq). */
	if (n->run)
		fprintf(f,
			"         %.1f ns a frame in the program (test-run clock)\n",
			(double)n->run_ns / (double)n->run);
}

/* The exact counts: a capture is finite, so they come first. */
static void print_counts(FILE *f, const struct ks_totals *d)
{
	struct ks_op_stats cls[KS_CLASS_MAX];

	fprintf(f,
		"\ncounts in the frames run (exact: every request is counted whatever --sample)\n");
	ks_render_totals_text(f, d);
	ks_totals_classes(d, cls);
	if (!cls[KS_CLASS_READ].requests && !cls[KS_CLASS_WRITE].requests &&
	    !cls[KS_CLASS_OTHER].requests)
		fprintf(f,
			"no requests: check --ports, and that the capture holds the clients' side (requests to memcached)\n");
}

/* Where the sampled keys went: the log (folded as 'agent run' folds
 * them) or the in-kernel sketch (the log off, a key over its record's
 * bytes, or a full log, which a drain after every frame never sees). */
static void print_slog(FILE *f, const struct replay *r)
{
	struct ks_slog_stats ss;

	if (!r->slog_on) {
		fprintf(f,
			"samples  the in-kernel sketch took every sampled key (--log-samples off)\n");
		return;
	}
	ks_slog_stats(&r->slog, &ss);
	fprintf(f,
		"samples  %llu through the sample log (%llu records folded, %llu late), %llu taken by the in-kernel sketch with the log full\n",
		(unsigned long long)r->delta.pkts[KS_PKT_SLOG],
		(unsigned long long)ss.folded, (unsigned long long)ss.late,
		(unsigned long long)r->delta.pkts[KS_PKT_SLOG_FULL]);
}

/* What the capture held and the counts: in text before the rates, with
 * --json on stderr so that stdout stays one JSON document. */
static void print_summary(const struct replay *r)
{
	FILE *f = r->o.view.json ? stderr : stdout;
	char from[48], to[48];

	print_format(f, r);
	print_frames(f, &r->n);
	format_time(r->n.first_ns, from, sizeof(from));
	format_time(r->n.last_ns, to, sizeof(to));
	if (r->o.interval_ns)
		fprintf(f,
			"span     %.3f s of the frames run, %s to %s: %u intervals of %.3f s\n",
			r->n.last_ns > r->n.first_ns ? span_ns(&r->n) / 1e9 : 0,
			from, to, r->seq, r->o.interval_ns / 1e9);
	else if (r->n.last_ns > r->n.first_ns)
		fprintf(f,
			"span     %.3f s of the frames run, %s to %s: the report's one interval; rates are per second of it\n",
			span_ns(&r->n) / 1e9, from, to);
	else
		fprintf(f,
			"span     none (the frames run have %s): rates are per second as if it lasted 1 s\n",
			r->n.first_ns ? "one timestamp" : "no timestamps");
	print_slog(f, r);
	print_counts(f, &r->delta);
	if (!r->o.view.json && !r->o.interval_ns)
		fprintf(f,
			"\nrates over the span (the report of 'agent report')\n");
	fflush(f);
}

static void render(struct replay *r)
{
	struct ks_view v = {
		.rep = r->rep,
		.totals = &r->delta,
		.agent_alive = 0,
		.now_ns = ks_real_ns(),
		.top = r->o.view.top,
		.hash_only = r->o.view.hash_only,
		.ring = ks_run_ring_enabled(&r->o.ring) ? r->o.ring.rep : NULL,
		.mis = r->mis,
		.n_mis = r->n_mis,
		.shards_top = r->o.view.shards_top,
		.now_mono_ns = ks_mono_ns(),
		.hot = NULL, /* nothing is steered in a replay */
		.top_counts = r->counts,
	};

	print_summary(r);
	if (r->o.view.json)
		ks_render_json(stdout, &v);
	else
		ks_render_text(stdout, &v);
	fflush(stdout);
}

/* ---- the command ---- */

static int prepare(struct replay *r)
{
	/* replay drains after every frame itself, no thread: one fold */
	struct ks_slog_opts so = { .threads = 1 };
	int err;

	if (load_private(r))
		return -1;
	err = ks_collector_init(&r->col, &r->maps);
	/* the log as 'agent run' drains it (the same sketch shape, the
	 * same keys), unless --log-samples off; a build without it, off */
	so.drop = r->o.slog_drop;
	if (!err && !r->o.slog_off &&
	    !ks_slog_open(&r->slog, r->maps.slog, r->maps.slog_pos,
			  r->col.ncpus, 0, &so)) {
		r->slog_on = 1;
		if (r->o.slog_drop)
			ks_warn("test: --log-samples drop: the sample log's records are thrown away");
		err = ks_collector_set_slog(&r->col, r->slog.folds,
					    r->slog.nshards);
	}
	if (!err && write_config(r))
		return -1;
	if (!err)
		err = ks_rates_init(
			&r->rates, r->col.ncpus,
			&(struct ks_sample_opt){
				.n = r->o.sample_target ? 0 : r->o.sample_n,
				.target = r->o.sample_target,
				.place_target = r->o.place_target },
			r->o.sample_n);
	if (!err)
		err = ks_rates_start(&r->rates, &r->maps);
	r->sketch = malloc(sizeof(*r->sketch));
	r->rep = calloc(1, sizeof(*r->rep));
	r->probe = malloc(PROBE_MAX);
	r->hot = malloc(sizeof(*r->hot));
	r->ranked = calloc(KS_CAND_SLOTS, sizeof(*r->ranked));
	if (r->hot)
		ks_hot_init(r->hot);
	if (!err)
		r->mis_all = calloc((size_t)r->col.ncpus * KS_MISDIRECT_SLOTS,
				    sizeof(*r->mis_all));
	if (err || !r->sketch || !r->rep || !r->probe || !r->mis_all ||
	    !r->hot || !r->ranked) {
		ks_err("out of memory for the replay's buffers (%s); free some memory",
		       strerror(err ? -err : ENOMEM));
		return -1;
	}
	if (start_ring(r))
		return -1;
	stay_on_one_cpu();
	if (probe_limit(r))
		return -1;
	ks_debug("frames up to %u bytes run whole", r->n.limit);
	err = ks_read_totals(&r->col, &r->prev);
	if (err)
		ks_err("cannot read the counters (%s); rerun with -v",
		       strerror(-err));
	r->first = r->prev;
	return err ? -1 : 0;
}

static int replay(struct replay *r)
{
	int err;

	if (map_capture(r))
		return KS_EXIT_FAIL;
	r->pcap = malloc(sizeof(*r->pcap));
	if (!r->pcap) {
		ks_err("out of memory for the capture reader; free some memory");
		return KS_EXIT_FAIL;
	}
	if (scan_capture(r))
		return KS_EXIT_FAIL;
	if (ks_require_root("replaying a capture through the BPF program"))
		return KS_EXIT_FAIL;
	if (prepare(r))
		return KS_EXIT_FAIL;
	if (run_capture(r))
		return KS_EXIT_FAIL;
	if (r->o.interval_ns) {
		/* the intervals are out; the capture's counts close it */
		fflush(stdout);
		totals_delta(&r->first, &r->cur, &r->delta);
		print_summary(r);
		return KS_EXIT_OK;
	}
	err = build_report(r);
	if (!err)
		err = build_ring(r);
	if (err) {
		ks_err("cannot read the maps after the replay (%s); rerun with -v",
		       strerror(-err));
		return KS_EXIT_FAIL;
	}
	render(r);
	return KS_EXIT_OK;
}

int cmd_replay(int argc, char **argv)
{
	struct replay *r;
	int rc;

	r = calloc(1, sizeof(*r));
	if (!r)
		return KS_EXIT_FAIL;
	ks_maps_init(&r->maps);
	rc = parse_replay(argc, argv, &r->o);
	if (!rc) {
		ks_log_init(r->o.verbose ? KS_LOG_DEBUG : KS_LOG_INFO);
		rc = replay(r);
	}
	ks_slog_close(&r->slog);
	ks_collector_free(&r->col);
	ks_rates_free(&r->rates);
	keysteer_bpf__destroy(r->skel);
	ks_run_ring_free(&r->o.ring);
	if (r->buf)
		munmap((void *)r->buf, r->len);
	free(r->pcap);
	free(r->sketch);
	free(r->rep);
	free(r->mis_all);
	free(r->probe);
	free(r->hot);
	free(r->ranked);
	free(r);
	return rc < 0 ? KS_EXIT_OK : rc;
}
