// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * main.c - keysteer's datapath benchmark: ns per packet over an empty XDP
 * program, both timed by the kernel with BPF_PROG_TEST_RUN in the same
 * process, and the verifier's instruction count per program.
 *
 * Each run times the empty program and then one scenario, back to back, on
 * the same CPU; the figure is the median over runs of (scenario - empty),
 * so drift (frequency, a noisy neighbour) hits both sides of a difference.
 * The benchmark reports whether targets are met; it fails only when it
 * could not measure, or a scenario did not take the path it claims.
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bench.h"
#include "dp/bpf_log.h"
#include "util/opts.h"

#define PACKETS_DEFAULT BENCH_PACKETS_RECORD
/* with 2977 keys a packet, the unsampled countdown (2^30) must outlast a
 * timing; a value continuation flow takes 741,454 segments */
#define PACKETS_MAX  300000U
#define RUNS_DEFAULT 5U

struct args {
	__u32 packets;
	const char *before;
	__u32 runs;
	int cpu;
	const char *only;
	bool json;
	bool slog;
	bool verbose;
	const char *calls; /* --calls NAMES */
	bool against;      /* --against: the other build is of this tree */
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: bench [--packets N] [--runs N] [--before OBJ | --against OBJ] [--cpu N]\n"
		"             [--only TEXT] [--json] [--calls NAMES] [--slog] [-v]\n"
		"\n"
		"Times keysteer's XDP program against an empty XDP program, one packet per\n"
		"BPF_PROG_TEST_RUN, each program's time taken from the kernel's own\n"
		"statistics (bpf_stats: run_time_ns / run_cnt, on while the benchmark\n"
		"runs). A TCP scenario's packets are the next in-order segments of one\n"
		"flow opened by a SYN, as a real connection sends them. Prints ns per\n"
		"packet over empty (median of the runs), the ring lookup's and the hot\n"
		"table's own costs, the build before TCP streams (--before) on the same\n"
		"packets, and the verifier's instructions processed per program, each\n"
		"against the targets of issues 2, 3 and 10.\n"
		"Needs root. Nothing is attached and no map is pinned.\n"
		"\n"
		"Options:\n"
		"  --packets N  packets per timing (default %u, the figures of record;\n"
		"               at most %u)\n"
		"  --runs N     timings per scenario, interleaved with the baseline\n"
		"               (default %u, at most %u)\n"
		"  --before OBJ keysteer.bpf.o of the build before TCP streams (commit\n"
		"               94672e7), timed on the same packets in the same run\n"
		"  --against OBJ keysteer.bpf.o of another build of this tree (a\n"
		"               change's build before): as --before, on every\n"
		"               scenario with no hot table and no shard rules\n"
		"               (a ring written into both builds' maps)\n"
		"  --cpu N      CPU to pin to (default: the last online CPU)\n"
		"  --only TEXT  only the scenarios whose name contains TEXT, or one\n"
		"               of TEXT's comma-separated words (a word ending in $\n"
		"               ends the name), and the scenarios without a ring\n"
		"               they are compared with\n"
		"  --json       one JSON document on stdout instead of the table\n"
		"  --calls NAMES no times: BPF-to-BPF calls and bpf_loop callbacks\n"
		"               per packet, by function, in a build of\n"
		"               tests/bench/calls_build.sh (NAMES: its list)\n"
		"  --slog       the sample log on (KS_CFG_SLOG) for keysteer's build,\n"
		"               its tails moved up to the heads between packets in\n"
		"               this thread: the datapath's side of the log alone\n"
		"  -v           libbpf's debug output (verifier log on a load failure)\n"
		"  -h, --help   this text\n"
		"\n"
		"Examples:\n"
		"  make bench\n"
		"  make bench BENCH_BEFORE=/tmp/ks-before/build/keysteer.bpf.o\n"
		"  build/tests/bench --packets 50000 --runs 7\n"
		"  build/tests/bench --only cont\n"
		"  build/tests/bench --json > bench.json\n",
		PACKETS_DEFAULT, PACKETS_MAX, RUNS_DEFAULT, BENCH_RUNS_MAX);
}

static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option longopts[] = {
		{ "packets", required_argument, NULL, 'r' },
		{ "before", required_argument, NULL, 'b' },
		{ "against", required_argument, NULL, 'a' },
		{ "runs", required_argument, NULL, 'n' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "only", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "calls", required_argument, NULL, 'C' },
		{ "slog", no_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char err[KS_ERRLEN];
	unsigned long long v;
	int c;

	a->packets = PACKETS_DEFAULT;
	a->runs = RUNS_DEFAULT;
	a->cpu = -1;
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (ks_parse_uint("--packets", optarg, 1, PACKETS_MAX,
					  &v, err, sizeof(err)))
				goto bad;
			a->packets = (__u32)v;
			break;
		case 'b':
		case 'a':
			if (a->before) {
				snprintf(err, sizeof(err),
					 "one of --before and --against");
				goto bad;
			}
			a->before = optarg;
			a->against = c == 'a';
			break;
		case 'n':
			if (ks_parse_uint("--runs", optarg, 1, BENCH_RUNS_MAX,
					  &v, err, sizeof(err)))
				goto bad;
			a->runs = (__u32)v;
			break;
		case 'c':
			if (ks_parse_uint("--cpu", optarg, 0, CPU_SETSIZE - 1,
					  &v, err, sizeof(err)))
				goto bad;
			a->cpu = (int)v;
			break;
		case 'o':
			a->only = optarg;
			break;
		case 'j':
			a->json = true;
			break;
		case 'C':
			a->calls = optarg;
			break;
		case 'S':
			a->slog = true;
			break;
		case 'v':
			a->verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bench: unexpected argument '%s'; see --help\n",
			argv[optind]);
		return -EINVAL;
	}
	return 0;
bad:
	fprintf(stderr, "bench: %s\n", err);
	return -EINVAL;
}

static int scen_ifindex(const struct bench_env *e, const struct bench_scen *s)
{
	return bench_hot_steers(s->hot) ? e->steer_ifindex : 0;
}

/* A lone 16-byte UDP get: the packet that sets the sampling countdown. */
static __u8 prep_frame[128];
static __u32 prep_len;

/*
 * Put the per-CPU countdown where the scenario needs it. Sampled: N = 1
 * samples every key. Unsampled: one packet at N = 1 leaves the countdown at
 * 0, so the next key reloads it with 1<<30 and no key of the timed run
 * (at most PACKETS_MAX * 2977) reaches the end of it. The packet is a UDP
 * get, so that no TCP flow is touched.
 */
static int prepare(struct bench_env *e, const struct bench_scen *s)
{
	char key[KS_MAX_KEY_LEN];
	__u32 ns;
	int err;

	/* the scenario's ring, or none: an empty active half */
	err = bench_set_ring(e, s->ring);
	if (!err) {
		/* the first key of every packet is bench_key(.., 0) */
		bench_key(key, s->keylen, 0);
		err = bench_set_hot(e, s->hot, key, s->keylen);
	}
	if (!err)
		err = bench_set_ded(e, s->ded, key, s->keylen,
				    s->ring ? s->ring->meta.self : 0);
	if (!err)
		err = bench_set_sample(e, 1);
	if (err || s->sampled)
		return err;
	err = bench_run_on(e->xdp_fd, prep_frame, prep_len, 1,
			   scen_ifindex(e, s), true, &ns);
	if (!err && e->have_before && s->before)
		err = bench_run(e->before.prog_fd, prep_frame, prep_len, 1,
				&ns);
	return err ? err : bench_set_sample(e, BENCH_UNSAMPLED);
}

/* --against: the other build counts as this one does */
static bool against;

/* Did the timed packets do what the scenario says? Prints why not. */
static bool check_counts(const struct bench_scen *s, __u32 npkt, bool old,
			 const struct bench_counts *b,
			 const struct bench_counts *a)
{
	const char *who = old ? " (build before streams)" : "";
	__u64 keys = (__u64)s->keys * npkt;
	__u64 d_sampled = a->sampled - b->sampled, d_keys = a->keys - b->keys;
	__u64 d_req = a->requests - b->requests, d_err = a->errors - b->errors;
	__u64 d_nmc = a->not_mc - b->not_mc;
	__u64 want_req = (__u64)s->reqs * npkt;
	__u64 want_nmc = s->memcached ? 0 : npkt;
	/* every sampled key is placed on a loaded ring */
	__u64 d_hit = a->ring_hit - b->ring_hit;
	__u64 d_mis = a->misdirected - b->misdirected;
	__u64 want_hit = s->ring && s->sampled ? keys : 0;
	__u64 want_mis = s->misdirected ? want_hit : 0;
	/* a stream in order: no resync, no retransmission, and a
	 * continuation counted for every segment that continues */
	__u64 d_cont = a->flow_cont - b->flow_cont;
	__u64 want_cont = s->cont && (!old || against) ? npkt : 0;
	__u64 d_resync = a->resync - b->resync + a->flow_dup - b->flow_dup;

	/* a hot key's reads are seen; 7 of 8 of them steered */
	__u64 d_hot = a->hot_reads - b->hot_reads + a->hot_writes -
		      b->hot_writes;
	__u64 want_hot = s->hot == BH_KEY || bench_hot_steers(s->hot) ? keys
								      : 0;
	__u64 d_steer = a->steered - b->steered;
	__u64 want_steer = bench_hot_steers(s->hot)
				   ? keys * (BENCH_STEER_COPIES - 1) /
					     BENCH_STEER_COPIES
				   : 0;

	if (d_hot != want_hot || d_steer + 1 < want_steer ||
	    d_steer > want_steer + 1) {
		fprintf(stderr,
			"bench: %s: hot keys seen %llu (want %llu), steered %llu (want %llu)\n",
			s->id, (unsigned long long)d_hot,
			(unsigned long long)want_hot,
			(unsigned long long)d_steer,
			(unsigned long long)want_steer);
		return false;
	}
	if (d_cont != want_cont || d_resync) {
		fprintf(stderr,
			"bench: %s: continuations %llu (want %llu), resyncs and "
			"retransmissions %llu (want 0)\n",
			s->id, (unsigned long long)d_cont,
			(unsigned long long)want_cont,
			(unsigned long long)d_resync);
		return false;
	}
	if (d_keys == keys && d_req == want_req && d_err == 0 &&
	    d_nmc == want_nmc && d_sampled == (s->sampled ? keys : 0) &&
	    d_hit == want_hit && d_mis == want_mis)
		return true;
	fprintf(stderr,
		"bench: %s%s took another path than it claims: keys %llu "
		"(want %llu), requests %llu (want %llu), sampled %llu (want "
		"%llu), not-memcached %llu (want %llu), other errors %llu "
		"(want 0), ring hits %llu (want %llu), misdirected %llu "
		"(want %llu)\n",
		s->id, who, (unsigned long long)d_keys,
		(unsigned long long)keys, (unsigned long long)d_req,
		(unsigned long long)want_req, (unsigned long long)d_sampled,
		(unsigned long long)(s->sampled ? keys : 0),
		(unsigned long long)d_nmc, (unsigned long long)want_nmc,
		(unsigned long long)d_err, (unsigned long long)d_hit,
		(unsigned long long)want_hit, (unsigned long long)d_mis,
		(unsigned long long)want_mis);
	return false;
}

/* A segment with no payload (SYN, FIN) of the scenario's flow, through
 * the build under test and the build before streams. */
static int send_flag(struct bench_env *e, bool old, __u32 seq, __u8 flags)
{
	__u8 f[128];
	__u32 len, ns;
	int err;

	len = (__u32)bench_frame_tcp4_seg(f, sizeof(f), 40000, BENCH_MC_PORT,
					  seq, flags, NULL, 0);
	err = bench_run(e->xdp_fd, f, len, 1, &ns);
	if (!err && old)
		err = bench_run(e->before.prog_fd, f, len, 1, &ns);
	return err;
}

#define FLOW_ISN 0xfff00000U /* the SYN's seq: each stream wraps 2^32 */

/* Opens the flow (SYN, then the prologue segment) the timed segments
 * continue; returns the seq of the first timed one. */
static int open_flow(struct bench_env *e, const struct bench_scen *s, bool old,
		     __u32 *seq)
{
	__u32 ns;
	int err;

	*seq = FLOW_ISN + 1;
	err = send_flag(e, old, FLOW_ISN, BENCH_TCP_SYN);
	if (err || !s->pro)
		return err;
	bench_tcp_set_seq(s->pro, *seq);
	err = bench_run(e->xdp_fd, s->pro, s->pro_len, 1, &ns);
	if (!err && old)
		err = bench_run(e->before.prog_fd, s->pro, s->pro_len, 1, &ns);
	*seq += s->pro_plen;
	return err;
}

static double per_packet(const struct bench_stats *b,
			 const struct bench_stats *a, __u32 npkt, int *err)
{
	if (a->run_cnt - b->run_cnt != npkt) {
		/* someone else ran the program, or the stats were off */
		*err = -ESTALE;
		return 0;
	}
	return (double)(a->run_time_ns - b->run_time_ns) / npkt;
}

/*
 * One timing: npkt packets, each its own BPF_PROG_TEST_RUN through the
 * empty program, keysteer and (where the scenario has it) the build before
 * streams, one after the other; each program's time is what the kernel's
 * bpf_stats counted for it over those packets (run_time_ns / run_cnt).
 * A TCP scenario's packets are the next segments of one flow.
 */
static int measure_one(struct bench_env *e, struct bench_scen *s,
		       const struct args *a, struct bench_samples *out,
		       __u32 run)
{
	struct bench_counts before, after, obefore, oafter;
	struct bench_stats st[3][2];
	__u64 c0[BENCH_CALLS_MAX], c1[BENCH_CALLS_MAX];
	bool old = e->have_before && s->before;
	bool tx = bench_hot_steers(s->hot) || bench_hot_limits(s->hot);
	int ifindex = scen_ifindex(e, s);
	__u32 i, ns, seq = 0;
	int err;

	err = prepare(e, s);
	if (!err && s->stream)
		err = open_flow(e, s, old, &seq);
	if (!err)
		err = bench_counts(e, &e->cur, &before);
	if (!err && old)
		err = bench_counts(e, &e->before, &obefore);
	if (!err)
		err = bench_prog_stats(e->empty_fd, &st[0][0]);
	if (!err)
		err = bench_prog_stats(e->xdp_fd, &st[1][0]);
	if (!err && old)
		err = bench_prog_stats(e->before.prog_fd, &st[2][0]);
	if (!err && out->calls)
		err = bench_calls_read(c0);
	for (i = 0; !err && i < a->packets; i++) {
		if (s->stream) {
			bench_tcp_set_seq(s->frame, seq);
			seq += s->plen;
		}
		if (s->cold)
			err = bench_cache_clear(e, s->cache_idx);
		/* --slog: the log never full (KS_SLOG_RECS records; 64
		 * packets of 32 sampled keys are half of it) */
		if (e->slog_pos && !(i & 63))
			bench_slog_drain(e);
		if (!err)
			err = bench_run(e->empty_fd, s->frame, s->len, 1, &ns);
		/* the other build first in odd runs: neither gains by its
		 * place after the other (caches, branch history) */
		if (!err && old && (run & 1))
			err = bench_run(e->before.prog_fd, s->frame, s->len, 1,
					&ns);
		if (!err)
			err = bench_run_on(e->xdp_fd, s->frame, s->len, 1,
					   ifindex, tx, &ns);
		if (!err && old && !(run & 1))
			err = bench_run(e->before.prog_fd, s->frame, s->len, 1,
					&ns);
	}
	if (!err && out->calls) {
		err = bench_calls_read(c1);
		for (i = 0; !err && i < (__u32)bench_calls_n(); i++)
			out->calls[i] += c1[i] - c0[i];
	}
	if (!err)
		err = bench_prog_stats(e->empty_fd, &st[0][1]);
	if (!err)
		err = bench_prog_stats(e->xdp_fd, &st[1][1]);
	if (!err && old)
		err = bench_prog_stats(e->before.prog_fd, &st[2][1]);
	if (!err)
		err = bench_counts(e, &e->cur, &after);
	if (!err && old)
		err = bench_counts(e, &e->before, &oafter);
	if (!err && s->stream)
		err = send_flag(e, old, seq, BENCH_TCP_FIN | 0x10);
	if (err) {
		fprintf(stderr, "bench: timing %s failed: %s\n", s->id,
			err == -EPROTO   ? "verdict was not XDP_PASS"
			: err == -ESTALE ? "bpf_stats did not count every run"
					 : strerror(-err));
		return err;
	}
	/* one message per scenario is enough; the table marks it too */
	if (out->valid && !check_counts(s, a->packets, false, &before, &after))
		out->valid = false;
	if (out->valid && old &&
	    !check_counts(s, a->packets, true, &obefore, &oafter))
		out->valid = false;
	out->empty[run] = per_packet(&st[0][0], &st[0][1], a->packets, &err);
	out->scen[run] = per_packet(&st[1][0], &st[1][1], a->packets, &err);
	out->over[run] = out->scen[run] - out->empty[run];
	if (old) {
		out->old[run] = per_packet(&st[2][0], &st[2][1], a->packets,
					   &err);
		out->old_over[run] = out->old[run] - out->empty[run];
	}
	if (err)
		fprintf(stderr,
			"bench: timing %s: bpf_stats did not count "
			"every run\n",
			s->id);
	return err;
}

static int measure_all(struct bench_env *e, struct bench_scen *sc, int n,
		       const struct args *a, struct bench_samples *res)
{
	/* a progress line only for a person watching: never in logs */
	bool progress = isatty(STDERR_FILENO);
	__u32 run;
	int i, err;

	for (i = 0; i < n; i++) {
		bool old = e->have_before && sc[i].before;

		res[i].empty = calloc(a->runs, sizeof(double));
		res[i].scen = calloc(a->runs, sizeof(double));
		res[i].over = calloc(a->runs, sizeof(double));
		if (old) {
			res[i].old = calloc(a->runs, sizeof(double));
			res[i].old_over = calloc(a->runs, sizeof(double));
		}
		res[i].valid = true;
		if (a->calls)
			res[i].calls = calloc(BENCH_CALLS_MAX, sizeof(__u64));
		if ((a->calls && !res[i].calls) || !res[i].empty ||
		    !res[i].scen || !res[i].over ||
		    (old && (!res[i].old || !res[i].old_over))) {
			fprintf(stderr, "bench: out of memory\n");
			return -ENOMEM;
		}
		if (sc[i].per_flow && a->packets > sc[i].per_flow) {
			fprintf(stderr,
				"bench: %s takes at most %u packets a "
				"timing\n",
				sc[i].id, sc[i].per_flow);
			return -EINVAL;
		}
	}
	/* runs outermost: every scenario sees the machine at each moment */
	for (run = 0; run < a->runs; run++) {
		if (progress)
			fprintf(stderr, "\rbench: run %u of %u ...", run + 1,
				a->runs);
		for (i = 0; i < n; i++) {
			err = measure_one(e, &sc[i], a, &res[i], run);
			if (err)
				return err;
		}
	}
	if (progress)
		fprintf(stderr, "\r%*s\r", 40, "");
	return 0;
}

/* Does id contain one of the comma-separated words of only? A word
 * ending in '$' must also end id. */
static bool id_matches(const char *id, const char *only)
{
	size_t il = strlen(id);
	const char *p = only;

	while (*p) {
		size_t n = strcspn(p, ",");
		bool end = n && p[n - 1] == '$';
		size_t wl = end ? n - 1 : n;
		const char *hit;

		if (wl) {
			for (hit = id;
			     (hit = memmem(hit, il - (hit - id), p, wl)); hit++)
				if (!end || hit + wl == id + il)
					return true;
		}
		p += n + (p[n] == ',');
	}
	return false;
}

/*
 * Keeps the scenarios whose id contains only (one of its words), and the base each kept one
 * is compared with, in their order; returns how many are left.
 */
static int select_scenarios(struct bench_scen *sc, int n, const char *only)
{
	int *keep = calloc(n, sizeof(*keep)), *to = calloc(n, sizeof(*to));
	int i, m = 0;

	if (!keep || !to) {
		free(keep);
		free(to);
		return -1;
	}
	for (i = n - 1; i >= 0; i--) {
		/* bases come before the scenarios that name them */
		if (id_matches(sc[i].id, only) || keep[i]) {
			keep[i] = 1;
			if (sc[i].base >= 0)
				keep[sc[i].base] = 1;
		}
	}
	for (i = 0; i < n; i++) {
		if (!keep[i]) {
			free(sc[i].ring);
			free(sc[i].frame);
			free(sc[i].pro);
			continue;
		}
		to[i] = m;
		sc[m] = sc[i];
		if (sc[m].base >= 0)
			sc[m].base = to[sc[m].base];
		m++;
	}
	free(keep);
	free(to);
	return m;
}

/* --calls: per scenario, calls per packet in all and by function. */
static void print_calls(const struct bench_scen *sc,
			const struct bench_samples *res, int n,
			const struct args *a)
{
	double per = (double)a->packets * a->runs;
	int i, f;

	printf("BPF-to-BPF calls and bpf_loop callbacks per packet of "
	       "ks_ingress (%u packets x %u runs)\n",
	       a->packets, a->runs);
	for (i = 0; i < n; i++) {
		__u64 all = 0;

		for (f = 0; f < bench_calls_n(); f++)
			all += res[i].calls[f];
		printf("%-52s %8.2f%s", sc[i].id, all / per,
		       res[i].valid ? "" : " INVALID");
		for (f = 0; f < bench_calls_n(); f++)
			if (res[i].calls[f])
				printf(" %s %.2f", bench_calls_name(f),
				       res[i].calls[f] / per);
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	struct bench_prog_info pi[4];
	struct bench_scen *sc = NULL;
	struct bench_samples *res = NULL;
	struct bench_env env;
	struct bench_machine m;
	struct bench_report rep;
	struct args a;
	int n, i, err, rc = 1, npi = 3, stats_fd = -1;

	if (argc > 1 && !strcmp(argv[1], "line"))
		return bench_line_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "replies")) {
		if (geteuid() != 0) {
			fprintf(stderr,
				"bench: BPF_PROG_TEST_RUN needs root\n");
			return 1;
		}
		return bench_reply_main(argc - 1, argv + 1);
	}
	memset(&a, 0, sizeof(a));
	if (parse_args(argc, argv, &a))
		return 2;
	if (geteuid() != 0) {
		fprintf(stderr, "bench: BPF_PROG_TEST_RUN needs root; run "
				"'sudo make bench'\n");
		return 1;
	}
	ks_log_init(a.verbose ? KS_LOG_DEBUG : KS_LOG_WARN);
	bench_read_machine(&m);
	n = bench_scenarios(&sc);
	if (n <= 0) {
		fprintf(stderr, "bench: building the test packets failed\n");
		return 1;
	}
	if (a.only)
		n = select_scenarios(sc, n, a.only);
	if (n <= 0) {
		fprintf(stderr,
			"bench: no scenario name contains '%s'; see "
			"--json for the names\n",
			a.only);
		bench_scenarios_free(sc, n < 0 ? 0 : n);
		return 2;
	}
	{
		char line[64];
		size_t ll = bench_get_line(line, sizeof(line), 1, 16);

		prep_len = (__u32)bench_frame_udp4(prep_frame,
						   sizeof(prep_frame),
						   BENCH_MC_PORT, line, ll);
	}
	against = a.against;
	/* --against a build of this tree: the ring scenarios too, their
	 * rings written into both builds (shard rules are this build's
	 * only) */
	for (i = 0; against && i < n; i++)
		sc[i].before = !sc[i].hot && !sc[i].ded;
	if (bench_open(&env, a.cpu, a.before))
		goto out;
	env.ring_before = against;
	err = a.slog ? bench_slog_on(&env) : 0;
	if (err) {
		fprintf(stderr, "bench: mapping ks_slog_pos failed: %s\n",
			strerror(-err));
		goto out;
	}
	stats_fd = bench_stats_on();
	if (stats_fd < 0) {
		fprintf(stderr,
			"bench: turning on bpf_stats (BPF_ENABLE_STATS) "
			"failed: %s\n",
			strerror(-stats_fd));
		goto out;
	}
	/* steering looks the replicas up in the kernel's FIB: give it a
	 * namespace of our own where they sit behind a veth */
	err = bench_steer_netns(&env);
	if (err) {
		fprintf(stderr,
			"bench: network namespace for the steering scenarios: %s\n",
			strerror(-err));
		goto out;
	}

	err = bench_prog_info(env.xdp_fd, "ks_ingress", &pi[0]);
	if (!err)
		err = bench_prog_info(env.tc_fd, "ks_tc_ingress", &pi[1]);
	if (!err)
		err = bench_prog_info(env.empty_fd, "ks_empty", &pi[2]);
	if (!err && env.have_before) {
		err = bench_prog_info(env.before.prog_fd, "ks_ingress before",
				      &pi[3]);
		npi = 4;
	}
	if (err) {
		fprintf(stderr, "bench: reading program info failed: %s\n",
			strerror(-err));
		goto out;
	}

	res = calloc(n, sizeof(*res));
	if (!res) {
		fprintf(stderr, "bench: out of memory\n");
		goto out;
	}
	if (a.calls && a.before) {
		fprintf(stderr, "bench --calls: not with --before\n");
		goto out;
	}
	if (a.calls && bench_calls_attach(&env, a.calls))
		goto out;
	if (measure_all(&env, sc, n, &a, res))
		goto out;
	if (a.calls) {
		print_calls(sc, res, n, &a);
		rc = 0;
		for (i = 0; i < n; i++)
			if (!res[i].valid)
				rc = 1;
		goto out;
	}

	rep = (struct bench_report){ .machine = &m,
				     .cpu = env.cpu,
				     .packets = a.packets,
				     .runs = a.runs,
				     .sc = sc,
				     .res = res,
				     .n = n,
				     .pi = pi,
				     .npi = npi,
				     .before = env.have_before ? a.before
							       : NULL };
	if (a.json)
		bench_print_json(&rep);
	else
		bench_print_table(&rep);
	rc = 0;
	for (i = 0; i < n; i++)
		if (!res[i].valid)
			rc = 1;
out:
	if (stats_fd >= 0)
		close(stats_fd);
	bench_close(&env);
	for (i = 0; res && i < n; i++) {
		free(res[i].calls);
		free(res[i].empty);
		free(res[i].scen);
		free(res[i].over);
		free(res[i].old);
		free(res[i].old_over);
	}
	free(res);
	bench_scenarios_free(sc, n);
	return rc;
}
