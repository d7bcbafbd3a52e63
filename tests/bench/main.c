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
#include "log.h"
#include "opts.h"

#define REPEAT_DEFAULT  1000000U
/* with 32 keys a packet, the unsampled countdown must outlast a run */
#define REPEAT_MAX      20000000U
#define RUNS_DEFAULT    5U

struct args {
	__u32 repeat;
	__u32 runs;
	int cpu;
	const char *only;
	bool json;
	bool verbose;
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: bench [--repeat N] [--runs N] [--cpu N] [--only TEXT] [--json] [-v]\n"
"\n"
"Times keysteer's XDP program against an empty XDP program with\n"
"BPF_PROG_TEST_RUN (the kernel's average ns per run) on fixed packets, and\n"
"prints ns per packet over empty (median of the runs), the ring lookup's\n"
"own cost (ring scenarios over the same packet with no ring loaded) and\n"
"the verifier's instructions processed per program, each against the\n"
"targets of issues 2 and 3.\n"
"Needs root. Nothing is attached and no map is pinned.\n"
"\n"
"Options:\n"
"  --repeat N  runs of the program per timing (default %u; the figures\n"
"              of record need >= %u; at most %u)\n"
"  --runs N    timings per scenario, interleaved with the baseline\n"
"              (default %u, at most %u)\n"
"  --cpu N     CPU to pin to (default: the last online CPU)\n"
"  --only TEXT only the scenarios whose name contains TEXT (and the\n"
"              scenarios without a ring they are compared with)\n"
"  --json      one JSON document on stdout instead of the table\n"
"  -v          libbpf's debug output (verifier log on a load failure)\n"
"  -h, --help  this text\n"
"\n"
"Examples:\n"
"  make bench\n"
"  build/tests/bench --repeat 2000000 --runs 7\n"
"  build/tests/bench --only twemproxy\n"
"  build/tests/bench --json > bench.json\n",
		REPEAT_DEFAULT, BENCH_REPEAT_ISSUE, REPEAT_MAX, RUNS_DEFAULT,
		BENCH_RUNS_MAX);
}

static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option longopts[] = {
		{ "repeat", required_argument, NULL, 'r' },
		{ "runs", required_argument, NULL, 'n' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "only", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char err[KS_ERRLEN];
	unsigned long long v;
	int c;

	a->repeat = REPEAT_DEFAULT;
	a->runs = RUNS_DEFAULT;
	a->cpu = -1;
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (ks_parse_uint("--repeat", optarg, 1, REPEAT_MAX, &v,
					  err, sizeof(err)))
				goto bad;
			a->repeat = (__u32)v;
			break;
		case 'n':
			if (ks_parse_uint("--runs", optarg, 1, BENCH_RUNS_MAX, &v, err,
					  sizeof(err)))
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
	return s->hot == BH_STEER ? e->steer_ifindex : 0;
}

/*
 * Put the per-CPU countdown where the scenario needs it. Sampled: N = 1
 * samples every key. Unsampled: one packet at N = 1 leaves the countdown at
 * 0, so the next key reloads it with 1<<30 and no key of the timed run
 * (at most REPEAT_MAX * 32) reaches the end of it.
 */
static int prepare(struct bench_env *e, const struct bench_scen *s)
{
	__u32 ns;
	int err;

	char key[KS_MAX_KEY_LEN];

	/* the scenario's ring, or none: an empty active half */
	err = bench_set_ring(e, s->ring);
	if (!err) {
		/* the first key of every packet is bench_key(.., 0) */
		bench_key(key, s->keylen, 0);
		err = bench_set_hot(e, s->hot, key, s->keylen);
	}
	if (!err)
		err = bench_set_sample(e, 1);
	if (err || s->sampled)
		return err;
	err = bench_run_on(e->xdp_fd, s->frame, s->len, 1, scen_ifindex(e, s),
			   s->hot == BH_STEER, &ns);
	return err ? err : bench_set_sample(e, BENCH_UNSAMPLED);
}

/* Did the timed run do what the scenario says? Prints why not. */
static bool check_counts(const struct bench_scen *s, __u32 repeat,
			 const struct bench_counts *b,
			 const struct bench_counts *a)
{
	__u64 keys = (__u64)s->keys * repeat;
	__u64 d_sampled = a->sampled - b->sampled, d_keys = a->keys - b->keys;
	__u64 d_req = a->requests - b->requests, d_err = a->errors - b->errors;
	__u64 d_nmc = a->not_mc - b->not_mc;
	__u64 want_req = s->memcached ? repeat : 0;
	__u64 want_nmc = s->memcached ? 0 : repeat;
	/* every sampled key is placed on a loaded ring */
	__u64 d_hit = a->ring_hit - b->ring_hit;
	__u64 d_mis = a->misdirected - b->misdirected;
	__u64 want_hit = s->ring && s->sampled ? keys : 0;
	__u64 want_mis = s->misdirected ? want_hit : 0;

	/* a hot key's reads are seen; 7 of 8 of them steered */
	__u64 d_hot = a->hot_reads - b->hot_reads + a->hot_writes - b->hot_writes;
	__u64 want_hot = s->hot == BH_KEY || s->hot == BH_STEER ? keys : 0;
	__u64 d_steer = a->steered - b->steered;
	__u64 want_steer = s->hot == BH_STEER ?
				   keys * (BENCH_STEER_COPIES - 1) / BENCH_STEER_COPIES : 0;

	if (d_hot != want_hot || d_steer + 1 < want_steer ||
	    d_steer > want_steer + 1) {
		fprintf(stderr,
			"bench: %s: hot keys seen %llu (want %llu), steered %llu (want %llu)\n",
			s->id, (unsigned long long)d_hot,
			(unsigned long long)want_hot, (unsigned long long)d_steer,
			(unsigned long long)want_steer);
		return false;
	}
	if (d_keys == keys && d_req == want_req && d_err == 0 &&
	    d_nmc == want_nmc && d_sampled == (s->sampled ? keys : 0) &&
	    d_hit == want_hit && d_mis == want_mis)
		return true;
	fprintf(stderr,
		"bench: %s took another path than it claims: keys %llu "
		"(want %llu), requests %llu (want %llu), sampled %llu (want "
		"%llu), not-memcached %llu (want %llu), other errors %llu "
		"(want 0), ring hits %llu (want %llu), misdirected %llu "
		"(want %llu)\n", s->id, (unsigned long long)d_keys,
		(unsigned long long)keys, (unsigned long long)d_req,
		(unsigned long long)want_req, (unsigned long long)d_sampled,
		(unsigned long long)(s->sampled ? keys : 0),
		(unsigned long long)d_nmc, (unsigned long long)want_nmc,
		(unsigned long long)d_err, (unsigned long long)d_hit,
		(unsigned long long)want_hit, (unsigned long long)d_mis,
		(unsigned long long)want_mis);
	return false;
}

static int measure_one(struct bench_env *e, const struct bench_scen *s,
		       const struct args *a, struct bench_samples *out, __u32 run)
{
	struct bench_counts before, after;
	__u32 base_ns, ns;
	int err;

	err = prepare(e, s);
	if (!err)
		err = bench_run(e->empty_fd, s->frame, s->len, a->repeat,
				&base_ns);
	if (!err)
		err = bench_counts(e, &before);
	if (!err)
		err = bench_run_on(e->xdp_fd, s->frame, s->len, a->repeat,
				   scen_ifindex(e, s), s->hot == BH_STEER, &ns);
	if (!err)
		err = bench_counts(e, &after);
	if (err) {
		fprintf(stderr, "bench: timing %s failed: %s\n", s->id,
			err == -EPROTO ? "verdict was not XDP_PASS"
				       : strerror(-err));
		return err;
	}
	/* one message per scenario is enough; the table marks it too */
	if (out->valid && !check_counts(s, a->repeat, &before, &after))
		out->valid = false;
	out->empty[run] = base_ns;
	out->scen[run] = ns;
	out->over[run] = (double)ns - base_ns;
	return 0;
}

static int measure_all(struct bench_env *e, const struct bench_scen *sc,
		       int n, const struct args *a, struct bench_samples *res)
{
	/* a progress line only for a person watching: never in logs */
	bool progress = isatty(STDERR_FILENO);
	__u32 run;
	int i, err;

	for (i = 0; i < n; i++) {
		res[i].empty = calloc(a->runs, sizeof(double));
		res[i].scen = calloc(a->runs, sizeof(double));
		res[i].over = calloc(a->runs, sizeof(double));
		res[i].valid = true;
		if (!res[i].empty || !res[i].scen || !res[i].over) {
			fprintf(stderr, "bench: out of memory\n");
			return -ENOMEM;
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

/*
 * Keeps the scenarios whose id contains only, and the base each kept one
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
		if (strstr(sc[i].id, only) || keep[i]) {
			keep[i] = 1;
			if (sc[i].base >= 0)
				keep[sc[i].base] = 1;
		}
	}
	for (i = 0; i < n; i++) {
		if (!keep[i]) {
			free(sc[i].ring);
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

int main(int argc, char **argv)
{
	struct bench_prog_info pi[3];
	struct bench_scen *sc = NULL;
	struct bench_samples *res = NULL;
	struct bench_env env;
	struct bench_machine m;
	struct bench_report rep;
	struct args a;
	int n, i, err, rc = 1;

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
		fprintf(stderr, "bench: no scenario name contains '%s'; see "
			"--json for the names\n", a.only);
		bench_scenarios_free(sc, n < 0 ? 0 : n);
		return 2;
	}
	if (bench_open(&env, a.cpu))
		goto out;
	/* steering looks the replicas up in the kernel's FIB: give it a
	 * namespace of our own where they sit behind a veth */
	err = bench_steer_netns(&env);
	if (err) {
		fprintf(stderr, "bench: network namespace for the steering scenarios: %s\n",
			strerror(-err));
		goto out;
	}

	err = bench_prog_info(env.xdp_fd, "ks_ingress", &pi[0]);
	if (!err)
		err = bench_prog_info(env.tc_fd, "ks_tc_ingress", &pi[1]);
	if (!err)
		err = bench_prog_info(env.empty_fd, "ks_empty", &pi[2]);
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
	if (measure_all(&env, sc, n, &a, res))
		goto out;

	rep = (struct bench_report){ .machine = &m, .cpu = env.cpu,
		.repeat = a.repeat, .runs = a.runs, .sc = sc, .res = res,
		.n = n, .pi = pi, .npi = 3 };
	if (a.json)
		bench_print_json(&rep);
	else
		bench_print_table(&rep);
	rc = 0;
	for (i = 0; i < n; i++)
		if (!res[i].valid)
			rc = 1;
out:
	bench_close(&env);
	for (i = 0; res && i < n; i++) {
		free(res[i].empty);
		free(res[i].scen);
		free(res[i].over);
	}
	free(res);
	bench_scenarios_free(sc, n);
	return rc;
}
