// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ks_client_load.c - the flash-sale workload through libkeysteer over TCP
 * (make bench-steer-tcp, tests/bench/steer_bench.sh --via library):
 *
 *   ks_client_load --spec SPEC [--threads T] [--keys K] [--zipf S]
 *                  [--flash KEY:SHARE] [--prefix P] [--rate R]
 *                  [--duration SEC] [--count N] [--seed N] [--per-key N]
 *                  [--runaway KEY --runaway-rate R --runaway-threads T]
 *
 * T threads, each with a handle of its own (a handle is one thread's),
 * send gets of key P1..PK drawn with Zipf S (user/load/zipf.c, the sampler
 * ks_load uses, so both tools ask for the same keys) or of the flash key
 * with probability SHARE, paced to R gets/s in all, until SEC seconds or N
 * gets. Prints one JSON object: gets, hits, misses, errors, where the
 * library answered from (copies, owners, fallbacks, summed over the
 * handles), gets per second of the run, and latency percentiles.
 * Exit 0, 1 when a get failed, 2 on a bad command line (before any get),
 * 3 when a thread could not open its handle (the fleet unreadable: its
 * gets were never sent, so the figures are not the workload's).
 *
 * SIGTERM or SIGINT ends the run as the end of --duration does (the JSON
 * is printed for what ran): a bench that measures windows by events
 * (tests/bench/plan_bench.sh) stops the load when its last window ends.
 *
 * --per-key N adds "per_key": the gets and the copy reads of the flash key
 * (rank 0) and of ranks 1..N, each second, so a shard's load can be taken
 * apart into the keys the library moved and those it did not
 * (docs/steering.md, "Where the rest of the busiest shard comes from").
 *
 * --runaway KEY adds T more threads (handles of the same process, so of
 * the same view and rate-limit buckets) that get only KEY, paced to R
 * gets/s in all (make bench-limit's TCP part, docs/limits.md): "runaway"
 * reports their gets, those served, those refused by the key's rate limit
 * (-KEYSTEER_ELIMIT: nothing sent) and their latency, "others" the
 * --threads' gets apart, so the other keys' latency is not mixed with
 * the runaway's. A refusal is not an error; "limit_refused" is the
 * handles' own count (keysteer_stats), to compare with "refused".
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <libkeysteer.h>
#include "load/hist.h"
#include "load/zipf.h"

#define MAX_THREADS 64 /* --threads and --runaway-threads each */
#define MAX_SECONDS 1800
#define MAX_KEY     250
#define MAX_PER_KEY 256

static volatile sig_atomic_t stopping;

static void on_stop(int sig)
{
	(void)sig;
	stopping = 1;
}

struct cfg {
	const char *spec, *flash, *prefix, *runaway;
	double flash_share, zipf_s, rate, duration, run_rate;
	unsigned threads, keys, per_key, run_threads;
	uint64_t count, seed;
};

struct worker {
	pthread_t t;
	unsigned idx;
	int runaway; /* gets only --runaway's key */
	const struct cfg *cfg;
	const struct ks_zipf *zipf;
	struct ks_hist lat_ns;
	uint64_t gets, hits, misses, errors, refused;
	int open_failed;
	struct keysteer_stats st;
	char err[256];
};

static uint64_t per_sec[MAX_SECONDS + 1]; /* gets answered in second i */
static uint64_t issued;                   /* gets taken from --count */
/* --per-key: [rank][second] gets and copy reads (rank 0: the flash key) */
static uint64_t (*key_gets)[MAX_SECONDS + 1], (*key_copies)[MAX_SECONDS + 1];
static double t0;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int refuse(const char *what, const char *val)
{
	fprintf(stderr, "ks_client_load: %s '%s'; see the top of %s\n", what,
		val, __FILE__);
	return 2;
}

static int num(const char *s, double lo, double hi, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || !*s || *end || *out < lo || *out > hi ? -1 : 0;
}

/* The key of one draw: the flash key with its share (*rank 0), else a
 * Zipf rank. */
static size_t draw(const struct worker *w, struct ks_rng *r, char *buf,
		   unsigned *rank)
{
	const struct cfg *c = w->cfg;

	*rank = 0;
	if (w->runaway)
		return (size_t)snprintf(buf, MAX_KEY + 1, "%s", c->runaway);
	if (c->flash && ks_rng_unit(r) < c->flash_share)
		return (size_t)snprintf(buf, MAX_KEY + 1, "%s", c->flash);
	*rank = ks_zipf_rank(w->zipf, ks_rng_unit(r));
	return (size_t)snprintf(buf, MAX_KEY + 1, "%s%u", c->prefix, *rank);
}

/* The per-key counts of one get; copy: the library answered from a copy. */
static void count_key(unsigned rank, double t, int copy)
{
	unsigned sec = t < MAX_SECONDS ? (unsigned)t : MAX_SECONDS;

	__atomic_fetch_add(&key_gets[rank][sec], 1, __ATOMIC_RELAXED);
	if (copy)
		__atomic_fetch_add(&key_copies[rank][sec], 1, __ATOMIC_RELAXED);
}

static void *run(void *arg)
{
	struct worker *w = arg;
	const struct cfg *c = w->cfg;
	double gap = w->runaway ? c->run_threads / c->run_rate
				: c->threads / c->rate,
	       next = now_s(), t;
	char key[MAX_KEY + 1];
	struct keysteer *ks;
	struct ks_rng rng;
	size_t klen, len;
	unsigned rank;
	uint64_t copies;
	int counted;
	void *val;
	int ret;

	ks_rng_seed(&rng, c->seed * MAX_THREADS + w->idx);
	if (keysteer_open(&ks, c->spec) < 0) {
		snprintf(w->err, sizeof(w->err), "open: %s",
			 keysteer_errmsg(ks));
		w->errors++;
		w->open_failed = 1;
		keysteer_close(ks);
		return NULL;
	}
	while (!stopping && (t = now_s()) - t0 < c->duration &&
	       __atomic_fetch_add(&issued, 1, __ATOMIC_RELAXED) < c->count) {
		klen = draw(w, &rng, key, &rank);
		/* Only the counted ranks pay for the stats calls around. */
		counted = c->per_key && rank <= c->per_key && !w->runaway;
		if (counted)
			keysteer_stats(ks, &w->st, sizeof(w->st));
		copies = w->st.copy_reads;
		ret = keysteer_get(ks, key, klen, &val, &len, NULL);
		w->gets++;
		if (counted) {
			keysteer_stats(ks, &w->st, sizeof(w->st));
			count_key(rank, now_s() - t0,
				  w->st.copy_reads != copies);
		}
		if (ret == -KEYSTEER_ELIMIT) {
			w->refused++; /* nothing sent: not an error */
		} else if (ret < 0) {
			w->errors++;
			snprintf(w->err, sizeof(w->err), "%s",
				 keysteer_errmsg(ks));
		} else {
			w->hits += ret == 1;
			w->misses += ret == 0;
		}
		keysteer_free(val);
		ks_hist_add(&w->lat_ns, (__u64)((now_s() - t) * 1e9));
		t = now_s() - t0;
		__atomic_fetch_add(
			&per_sec[t < MAX_SECONDS ? (unsigned)t : MAX_SECONDS],
			1, __ATOMIC_RELAXED);
		next += gap;
		t = now_s();
		if (next > t)
			usleep((useconds_t)((next - t) * 1e6));
		else if (t - next > 1)
			next = t; /* behind by a second: do not burst to catch up */
	}
	keysteer_stats(ks, &w->st, sizeof(w->st));
	keysteer_close(ks);
	return NULL;
}

static int parse(int argc, char **argv, struct cfg *c)
{
	static const struct option lo[] = { { "spec", 1, 0, 's' },
					    { "threads", 1, 0, 't' },
					    { "keys", 1, 0, 'k' },
					    { "zipf", 1, 0, 'z' },
					    { "flash", 1, 0, 'f' },
					    { "prefix", 1, 0, 'p' },
					    { "rate", 1, 0, 'r' },
					    { "duration", 1, 0, 'd' },
					    { "count", 1, 0, 'n' },
					    { "seed", 1, 0, 'S' },
					    { "per-key", 1, 0, 'K' },
					    { "runaway", 1, 0, 'R' },
					    { "runaway-rate", 1, 0, 'X' },
					    { "runaway-threads", 1, 0, 'T' },
					    { 0, 0, 0, 0 } };
	char *colon;
	double v;
	int o;

	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case 's':
			c->spec = optarg;
			break;
		case 't':
			if (num(optarg, 1, MAX_THREADS, &v))
				return refuse("--threads wants 1..64, not",
					      optarg);
			c->threads = (unsigned)v;
			break;
		case 'k':
			if (num(optarg, 1, KS_ZIPF_MAX_KEYS, &v))
				return refuse("--keys wants 1..20000000, not",
					      optarg);
			c->keys = (unsigned)v;
			break;
		case 'z':
			if (num(optarg, 0, 10, &v))
				return refuse("--zipf wants 0..10, not",
					      optarg);
			c->zipf_s = v;
			break;
		case 'f':
			colon = strrchr(optarg, ':');
			if (!colon || colon == optarg ||
			    colon - optarg > MAX_KEY - 1 ||
			    num(colon + 1, 0, 0.99, &c->flash_share))
				return refuse("--flash wants KEY:SHARE (share "
					      "0..0.99), not",
					      optarg);
			*colon = '\0';
			c->flash = optarg;
			break;
		case 'p':
			if (strlen(optarg) > MAX_KEY - 10)
				return refuse("--prefix is too long:", optarg);
			c->prefix = optarg;
			break;
		case 'r':
			if (num(optarg, 1, 1e7, &c->rate))
				return refuse("--rate wants 1..1e7 gets/s, not",
					      optarg);
			break;
		case 'd':
			if (num(optarg, 0.1, MAX_SECONDS, &c->duration))
				return refuse(
					"--duration wants 0.1..1800 s, not",
					optarg);
			break;
		case 'n':
			if (num(optarg, 1, 1e12, &v))
				return refuse("--count wants 1..1e12, not",
					      optarg);
			c->count = (uint64_t)v;
			break;
		case 'S':
			if (num(optarg, 0, 1e15, &v))
				return refuse("--seed wants 0..1e15, not",
					      optarg);
			c->seed = (uint64_t)v;
			break;
		case 'K':
			if (num(optarg, 0, MAX_PER_KEY, &v))
				return refuse("--per-key wants 0..256, not",
					      optarg);
			c->per_key = (unsigned)v;
			break;
		case 'R':
			if (strlen(optarg) > MAX_KEY)
				return refuse("--runaway is too long:", optarg);
			c->runaway = optarg;
			break;
		case 'X':
			if (num(optarg, 1, 1e7, &c->run_rate))
				return refuse("--runaway-rate wants 1..1e7 "
					      "gets/s, not",
					      optarg);
			break;
		case 'T':
			if (num(optarg, 1, MAX_THREADS, &v))
				return refuse("--runaway-threads wants 1..64, "
					      "not",
					      optarg);
			c->run_threads = (unsigned)v;
			break;
		default:
			return 2;
		}
	}
	if (c->runaway && !c->run_rate)
		return refuse("--runaway wants --runaway-rate too, for",
			      c->runaway);
	if (optind < argc)
		return refuse("unexpected argument", argv[optind]);
	if (!c->spec)
		return refuse("--spec is required, e.g.",
			      "etcd=http://198.18.2.1:2379 cluster=web");
	return 0;
}

/* "per_key": {"RANK": {"gets": [...], "copies": [...]}, ...}, one cell a
 * second; rank 0 is the flash key. */
static void report_keys(const struct cfg *c, unsigned secs)
{
	unsigned r, i;

	printf("\"per_key\": {");
	for (r = 0; r <= c->per_key; r++) {
		printf("%s\"%u\": {\"gets\": [", r ? ", " : "", r);
		for (i = 0; i < secs && i < MAX_SECONDS; i++)
			printf("%s%" PRIu64, i ? ", " : "", key_gets[r][i]);
		printf("], \"copies\": [");
		for (i = 0; i < secs && i < MAX_SECONDS; i++)
			printf("%s%" PRIu64, i ? ", " : "", key_copies[r][i]);
		printf("]}");
	}
	printf("}, ");
}

/* One group of threads (the runaway's or the others'): "NAME": {...}. */
static void report_group(const char *name, struct worker *w, unsigned n,
			 int runaway, double took)
{
	struct ks_hist h = { 0 };
	uint64_t gets = 0, ok = 0, refused = 0, errors = 0, lim = 0;
	unsigned i;

	for (i = 0; i < n; i++) {
		if (w[i].runaway != runaway)
			continue;
		ks_hist_merge(&h, &w[i].lat_ns);
		gets += w[i].gets;
		ok += w[i].hits + w[i].misses;
		refused += w[i].refused;
		errors += w[i].errors;
		lim += w[i].st.limit_refused;
	}
	printf("\"%s\": {\"gets\": %" PRIu64 ", \"served\": %" PRIu64
	       ", \"refused\": %" PRIu64 ", \"limit_refused\": %" PRIu64
	       ", \"errors\": %" PRIu64 ", \"served_per_s\": %.1f, "
	       "\"latency_us\": {\"p50\": %.1f, \"p99\": %.1f}}, ",
	       name, gets, ok, refused, lim, errors, ok / took,
	       ks_hist_quantile(&h, 0.5) / 1e3,
	       ks_hist_quantile(&h, 0.99) / 1e3);
}

static void report(const struct cfg *c, struct worker *w, double took)
{
	struct ks_hist all = { 0 };
	uint64_t gets = 0, hits = 0, misses = 0, errors = 0, copy = 0,
		 owner = 0, fb = 0;
	const char *err = "";
	unsigned i, secs = (unsigned)took, n = c->threads + c->run_threads;
	uint64_t refused = 0, lim = 0;

	for (i = 0; i < n; i++) {
		refused += w[i].refused;
		lim += w[i].st.limit_refused;
		ks_hist_merge(&all, &w[i].lat_ns);
		gets += w[i].gets;
		hits += w[i].hits;
		misses += w[i].misses;
		errors += w[i].errors;
		copy += w[i].st.copy_reads;
		owner += w[i].st.owner_reads;
		fb += w[i].st.fallbacks;
		if (w[i].err[0] && !err[0])
			err = w[i].err;
	}
	printf("{\"threads\": %u, \"duration_s\": %.3f, \"gets\": %" PRIu64
	       ", \"hits\": %" PRIu64 ", \"misses\": %" PRIu64
	       ", \"errors\": %" PRIu64 ", \"copy_reads\": %" PRIu64
	       ", \"owner_reads\": %" PRIu64 ", \"fallbacks\": %" PRIu64
	       ", \"gets_per_s\": %.1f, \"latency_us\": {\"p50\": %.1f, "
	       "\"p90\": %.1f, \"p99\": %.1f, \"max\": %.1f}, \"per_second\": [",
	       c->threads, took, gets, hits, misses, errors, copy, owner, fb,
	       gets / took, ks_hist_quantile(&all, 0.5) / 1e3,
	       ks_hist_quantile(&all, 0.9) / 1e3,
	       ks_hist_quantile(&all, 0.99) / 1e3,
	       ks_hist_quantile(&all, 1.0) / 1e3);
	for (i = 0; i < secs && i < MAX_SECONDS; i++)
		printf("%s%" PRIu64, i ? ", " : "", per_sec[i]);
	printf("], \"refused\": %" PRIu64 ", \"limit_refused\": %" PRIu64 ", ",
	       refused, lim);
	if (c->runaway) {
		report_group("runaway", w, n, 1, took);
		report_group("others", w, n, 0, took);
	}
	if (c->per_key)
		report_keys(c, secs);
	printf("\"error\": \"");
	for (; *err; err++)
		if (*err != '"' && *err != '\\')
			putchar(*err);
	printf("\"}\n");
}

int main(int argc, char **argv)
{
	struct cfg c = { .prefix = "key:",
			 .zipf_s = 0.99,
			 .rate = 1000,
			 .duration = 10,
			 .threads = 4,
			 .keys = 100000,
			 .count = UINT64_MAX,
			 .seed = 1 };
	static struct worker w[2 * MAX_THREADS];
	struct ks_zipf zipf;
	uint64_t errors = 0;
	unsigned i;
	int ret, open_failed = 0;

	if ((ret = parse(argc, argv, &c)))
		return ret;
	if (ks_zipf_init(&zipf, c.keys, c.zipf_s)) {
		fprintf(stderr, "ks_client_load: out of memory for %u keys\n",
			c.keys);
		return 2;
	}
	key_gets = calloc(c.per_key + 1, sizeof(*key_gets));
	key_copies = calloc(c.per_key + 1, sizeof(*key_copies));
	if (!key_gets || !key_copies) {
		fprintf(stderr,
			"ks_client_load: out of memory for --per-key\n");
		return 2;
	}
	if (!c.runaway)
		c.run_threads = 0;
	else if (!c.run_threads)
		c.run_threads = 1;
	{
		struct sigaction sa = { .sa_handler = on_stop };

		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
	}
	t0 = now_s();
	for (i = 0; i < c.threads + c.run_threads; i++) {
		w[i].idx = i;
		w[i].runaway = i >= c.threads;
		w[i].cfg = &c;
		w[i].zipf = &zipf;
		pthread_create(&w[i].t, NULL, run, &w[i]);
	}
	for (i = 0; i < c.threads + c.run_threads; i++) {
		pthread_join(w[i].t, NULL);
		errors += w[i].errors;
		open_failed |= w[i].open_failed;
	}
	report(&c, w, now_s() - t0);
	ks_zipf_free(&zipf);
	free(key_gets);
	free(key_copies);
	return open_failed ? 3 : errors ? 1 : 0;
}
