// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ks_client_fresh.c - freshness through libkeysteer (docs/client.md; run by
 * tests/e2e/test_client_fresh.sh): no read through the library may return
 * a value older than a write through the library acknowledged before the
 * read began.
 *
 *   ks_client_fresh --spec SPEC --key KEY [--writer-ns NS] [--reader-ns NS]
 *                   [--duration SEC] [--readers R] [--rate READS_PER_S]
 *                   [--write-interval-ms MS[,MS...]] [--examples N]
 *                   [--batch N] [--until-copy-reads N]
 *                   [--until-stale-copies N] [--max-duration SEC]
 *                   [--stop-when-met MIN_WRITES] [--from-open]
 *
 * One writer thread (in network namespace --writer-ns, a client host) sets
 * KEY to "v<N>" for N = 1, 2, ... through a handle of its own, every
 * --write-interval-ms, and publishes the highest N acknowledged. R reader
 * threads (in --reader-ns, another client host), each with its own handle,
 * note that highest N before each keysteer_get and compare it with the N
 * read: a read is stale if its N is below. A list of intervals is used in
 * turn, so that some writes come close behind others and some far apart:
 * a fill that overlaps the next write, and one that does not, in every
 * cycle. Whether a read was answered by a
 * copy is the handle's copy_reads counter moving over the call. One process
 * so that the writer's acknowledgements and the readers' sends are on one
 * clock; the threads enter their namespaces with setns(2), and each
 * handle's own view thread starts in its opener's namespace.
 *
 * With --batch N the writer writes through keysteer_set_many: KEY and
 * N - 1 other keys (KEY.b1, ...) in one call, all set to "v<N>", KEY in
 * the middle of the batch; N counts as acknowledged when the call returns.
 *
 * --until-copy-reads N, --until-stale-copies N: the run goes on past
 * --duration until the readers together have read N copies (N stale reads
 * served by copies: a control's violation), but not past --max-duration
 * (default: --duration). What a check judges is then the event, copies
 * read, not how many a loaded machine let the agents make in a fixed
 * time (docs/testing.md, "Failures beside stress-ng"). With --from-open
 * both times count from the moment every handle is open (its view read
 * from etcd), not from the start. "open_ms", "seconds" and "until_met" in
 * the document say how long the opens took (0 without --from-open), how
 * long it ran and whether it got there. With --stop-when-met MIN_WRITES
 * the run ends as soon as --until-* is met and MIN_WRITES writes were
 * acknowledged, before --duration if it comes first: for a control, whose
 * verdict is its violation (a stale read from a copy) in a run of that
 * many writes, the rest of a fixed time buys nothing.
 *
 * Each reader says on stderr when it first read from a copy
 * ("ks_client_fresh: reader I: first read from a copy at MS ms"): a caller
 * that breaks a copy mid-run waits for that, the copies in use, not for a
 * time.
 *
 * Failed requests are counted, and apart those that did not fail by a
 * timeout ("read_errors_not_timeout", "write_errors_not_timeout"): a
 * request timed out on a loaded machine was not acknowledged and proves
 * nothing either way, one refused or broken is the library's doing. Of
 * the writes not failed by a timeout, those whose connection a server
 * broke (reset) are counted again ("write_errors_connection_broken"): a
 * replica killed with an invalidation in flight.
 *
 * Prints one JSON object; exit 0 when no read was stale and no request
 * failed, 1 when a read was stale, 3 when a request failed, 2 when it
 * could not run.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <libkeysteer.h>
#include "ks_client_util.h"

#define MAX_READERS  16
#define MAX_EXAMPLES 10
#define MAX_ACKS     (1 << 17) /* writes whose acknowledgement is timed */
#define MAX_STALE    4096      /* stale reads timed per reader */

struct example {
	long got, acked;
	int from_copy;
	double at_ms;
};

struct reader {
	pthread_t t;
	int idx;
	uint64_t reads, stale, stale_copy, copy, misses, errors, other_errors;
	uint64_t stale_l1; /* L1: stale reads the handle's L1 answered */
	int nst;           /* ... and how long after the newer write's ack */
	double st_ms[MAX_STALE];
	/* the stalest read: how long the view had then gone unchanged */
	double worst_ms, worst_view_still_ms, rev_since;
	int64_t rev_seen;
	struct keysteer_stats st;
	int nex;
	struct example ex[MAX_EXAMPLES];
	char err[256];
};

static const char *spec, *key, *wns, *rns;
static double duration = 10, rate = 2000, max_duration;
static long until_copy, until_stale; /* --until-*: 0, no wait */
static long stop_writes; /* --stop-when-met: 0, --duration is a minimum */
static int from_open;    /* --from-open: times count from every open */
#define MAX_GAPS 8
static int nreaders = 2, nexamples = 5, batch;
static int wint_ms[MAX_GAPS] = { 10 }, ngaps = 1;
static long acked;              /* highest N acknowledged (atomic) */
static double ack_at[MAX_ACKS]; /* when N was, published by acked */
static int running;             /* atomic */
static int opened; /* threads past their keysteer_open, opened or not (atomic) */
static double t0;
static uint64_t writes, write_errors, write_other_errors, write_broken;
static char write_err[256];
static struct keysteer_stats wst;

#define MAX_BATCH 64

/* 1 when a call failed by a timeout: its own (-ETIMEDOUT), or a write
 * whose invalidation of a replica timed out (-EIO, the replica's error
 * in the message). */
static int timed_out(int ret, const char *msg)
{
	return ret == -ETIMEDOUT || strstr(msg, strerror(ETIMEDOUT));
}

/* 1 when a call failed because a server broke the connection under it
 * (a reset, or a send after one): a replica that died with the request
 * in flight, which the library cannot take as invalidated. */
static int broken(int ret, const char *msg)
{
	return ret == -ECONNRESET || ret == -EPIPE ||
	       strstr(msg, strerror(ECONNRESET)) ||
	       strstr(msg, strerror(EPIPE));
}

/* One write of "v<n>": KEY alone, or KEY amid batch - 1 other keys. */
static int write_once(struct keysteer *ks, const char *val, int len)
{
	static char names[MAX_BATCH][300];
	struct keysteer_item it[MAX_BATCH];
	int i, k;

	if (!batch)
		return keysteer_set(ks, key, strlen(key), val, len, 0, 0);
	for (i = 0; i < batch; i++) {
		k = i == batch / 2 ? 0 : i < batch / 2 ? i + 1 : i;
		if (k)
			snprintf(names[i], sizeof(names[i]), "%s.b%d", key, k);
		else
			snprintf(names[i], sizeof(names[i]), "%s", key);
		it[i] = (struct keysteer_item){ .key = names[i],
						.klen = strlen(names[i]),
						.value = val,
						.len = (size_t)len };
	}
	return keysteer_set_many(ks, it, (size_t)batch);
}

static void *writer(void *arg)
{
	struct keysteer *ks;
	char val[32];
	long n = 0;
	int len, ret, g = 0;

	(void)arg;
	ret = enter_ns(wns) || keysteer_open(&ks, spec) < 0;
	__atomic_add_fetch(&opened, 1, __ATOMIC_RELEASE);
	if (ret) {
		snprintf(write_err, sizeof(write_err), "open: %s",
			 keysteer_errmsg(ks));
		__atomic_store_n(&running, 0, __ATOMIC_RELEASE);
		keysteer_close(ks);
		return NULL;
	}
	while (__atomic_load_n(&running, __ATOMIC_ACQUIRE)) {
		len = snprintf(val, sizeof(val), "v%ld", ++n);
		ret = write_once(ks, val, len);
		if (ret < 0) {
			write_errors++;
			write_other_errors += !timed_out(ret,
							 keysteer_errmsg(ks));
			write_broken += !timed_out(ret, keysteer_errmsg(ks)) &&
					broken(ret, keysteer_errmsg(ks));
			snprintf(write_err, sizeof(write_err), "%s",
				 keysteer_errmsg(ks));
		} else {
			/* read by main's --stop-when-met */
			__atomic_add_fetch(&writes, 1, __ATOMIC_RELAXED);
			if (n < MAX_ACKS)
				ack_at[n] = now_ms();
			__atomic_store_n(&acked, n, __ATOMIC_RELEASE);
		}
		usleep((useconds_t)wint_ms[g] * 1000);
		g = (g + 1) % ngaps;
	}
	keysteer_stats(ks, &wst, sizeof(wst));
	keysteer_close(ks);
	return NULL;
}

static void *reader(void *arg)
{
	struct reader *r = arg;
	struct keysteer_stats a, b;
	double gap = nreaders * 1e3 / rate, next = now_ms(), t;
	struct keysteer *ks;
	size_t len;
	void *val;
	long hi, got;
	int ret;

	ret = enter_ns(rns) || keysteer_open(&ks, spec) < 0;
	__atomic_add_fetch(&opened, 1, __ATOMIC_RELEASE);
	if (ret) {
		snprintf(r->err, sizeof(r->err), "open: %s",
			 keysteer_errmsg(ks));
		r->errors++;
		keysteer_close(ks);
		return NULL;
	}
	while (__atomic_load_n(&running, __ATOMIC_ACQUIRE)) {
		keysteer_stats(ks, &a, sizeof(a));
		t = now_ms();
		hi = __atomic_load_n(&acked, __ATOMIC_ACQUIRE);
		ret = keysteer_get(ks, key, strlen(key), &val, &len, NULL);
		keysteer_stats(ks, &b, sizeof(b));
		if (b.view_revision != r->rev_seen) {
			r->rev_seen = b.view_revision;
			r->rev_since = t;
		}
		r->reads++;
		if (ret < 0) {
			r->errors++;
			r->other_errors += !timed_out(ret, keysteer_errmsg(ks));
			snprintf(r->err, sizeof(r->err), "%s",
				 keysteer_errmsg(ks));
		} else if (!ret) {
			r->misses++;
		} else {
			int copy = b.copy_reads > a.copy_reads;

			/* a value not written by this run (an earlier
			 * test's) is older than its first write, and no
			 * older than what is there before it: v0 */
			got = len > 1 && ((char *)val)[0] == 'v'
				      ? strtol((char *)val + 1, NULL, 10)
				      : 0;
			if (copy && !r->copy)
				fprintf(stderr,
					"ks_client_fresh: reader %d: first read "
					"from a copy at %.0f ms\n",
					r->idx, now_ms() - t0);
			/* atomic: main() watches them for --until-* */
			__atomic_add_fetch(&r->copy, copy, __ATOMIC_RELAXED);
			if (got < hi) {
				r->stale++;
				__atomic_add_fetch(&r->stale_copy, copy,
						   __ATOMIC_RELAXED);
				r->stale_l1 += b.l1_hits > a.l1_hits;
				if (got >= 0 && got + 1 < MAX_ACKS &&
				    r->nst < MAX_STALE)
					r->st_ms[r->nst++] = t -
							     ack_at[got + 1];
				if (got >= 0 && got + 1 < MAX_ACKS &&
				    t - ack_at[got + 1] > r->worst_ms) {
					r->worst_ms = t - ack_at[got + 1];
					r->worst_view_still_ms = t -
								 r->rev_since;
				}
				if (r->nex < nexamples)
					r->ex[r->nex++] = (struct example){
						got, hi, copy, now_ms() - t0
					};
			}
		}
		keysteer_free(val);
		next += gap;
		sleep_until_ms(next);
	}
	keysteer_stats(ks, &r->st, sizeof(r->st));
	keysteer_close(ks);
	return NULL;
}

static int cmp_ms(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* ,"stale_ms":{p50,p99,max}: how long after the acknowledgement of the
 * write they missed the stale reads began (nearest rank). */
static void print_stale_ms(const struct reader *rd, int n)
{
	static double all[MAX_READERS * MAX_STALE];
	int i, j, k = 0;

	for (i = 0; i < n; i++)
		for (j = 0; j < rd[i].nst; j++)
			all[k++] = rd[i].st_ms[j];
	qsort(all, k, sizeof(all[0]), cmp_ms);
	printf(", \"stale_ms\": {\"n\": %d, \"p50\": %.2f, \"p99\": %.2f, "
	       "\"max\": %.2f}",
	       k, k ? all[(k - 1) / 2] : 0, k ? all[(int)(0.99 * (k - 1))] : 0,
	       k ? all[k - 1] : 0);
	for (i = 0, j = 0; i < n; i++)
		if (rd[i].worst_ms > rd[j].worst_ms)
			j = i;
	printf(", \"stalest_view_unchanged_ms\": %.2f",
	       rd[j].worst_view_still_ms);
}

/* "MS[,MS...]" into wint_ms: 0..10000 each, at most MAX_GAPS. */
static int parse_gaps(const char *arg)
{
	const char *p = arg;
	char *end;
	long v;

	for (ngaps = 0; ngaps < MAX_GAPS; p = end + 1) {
		v = strtol(p, &end, 10);
		if (end == p || v < 0 || v > 10000 || (*end && *end != ','))
			break;
		wint_ms[ngaps++] = (int)v;
		if (!*end)
			return 0;
	}
	fprintf(stderr,
		"ks_client_fresh: --write-interval-ms '%s': up to %d "
		"intervals of 0..10000 ms, comma-separated\n",
		arg, MAX_GAPS);
	return -1;
}

/* Whether the readers have read what --until-* asks. */
static int until_met(struct reader *rd, uint64_t *copy, uint64_t *stale)
{
	int i;

	*copy = *stale = 0;
	for (i = 0; i < nreaders; i++) {
		*copy += __atomic_load_n(&rd[i].copy, __ATOMIC_RELAXED);
		*stale += __atomic_load_n(&rd[i].stale_copy, __ATOMIC_RELAXED);
	}
	return *copy >= (uint64_t)until_copy && *stale >= (uint64_t)until_stale;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "spec", 1, 0, 's' },
					    { "key", 1, 0, 'k' },
					    { "writer-ns", 1, 0, 'W' },
					    { "reader-ns", 1, 0, 'R' },
					    { "duration", 1, 0, 'd' },
					    { "readers", 1, 0, 'r' },
					    { "rate", 1, 0, 'q' },
					    { "write-interval-ms", 1, 0, 'i' },
					    { "examples", 1, 0, 'e' },
					    { "batch", 1, 0, 'b' },
					    { "until-copy-reads", 1, 0, 'c' },
					    { "until-stale-copies", 1, 0, 'S' },
					    { "max-duration", 1, 0, 'm' },
					    { "stop-when-met", 1, 0, 'M' },
					    { "from-open", 0, 0, 'o' },
					    { 0, 0, 0, 0 } };
	struct reader rd[MAX_READERS] = { 0 };
	uint64_t reads = 0, stale = 0, stale_copy = 0, copy = 0, misses = 0,
		 errors = 0, other_errors = 0, fallbacks = 0, l1_hits, stale_l1;
	uint64_t got_copy, got_stale;
	int c, i, j, first, met = 1, said = 0;
	double el, t_run;
	pthread_t wt;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			spec = optarg;
			break;
		case 'k':
			key = optarg;
			break;
		case 'W':
			wns = optarg;
			break;
		case 'R':
			rns = optarg;
			break;
		case 'd':
			duration = atof(optarg);
			break;
		case 'r':
			nreaders = atoi(optarg);
			break;
		case 'q':
			rate = atof(optarg);
			break;
		case 'i':
			if (parse_gaps(optarg))
				return 2;
			break;
		case 'e':
			nexamples = atoi(optarg);
			break;
		case 'b':
			batch = atoi(optarg);
			if (batch < 1 || batch > MAX_BATCH) {
				fprintf(stderr, "ks_client_fresh: --batch "
						"1..64\n");
				return 2;
			}
			break;
		case 'c':
			until_copy = atol(optarg);
			break;
		case 'S':
			until_stale = atol(optarg);
			break;
		case 'm':
			max_duration = atof(optarg);
			break;
		case 'M':
			stop_writes = atol(optarg);
			break;
		case 'o':
			from_open = 1;
			break;
		default:
			return 2;
		}
	}
	if (max_duration < duration)
		max_duration = duration;
	if (!spec || !key || nreaders < 1 || nreaders > MAX_READERS ||
	    rate <= 0 || nexamples > MAX_EXAMPLES || until_copy < 0 ||
	    until_stale < 0 || stop_writes < 0 ||
	    (stop_writes && !until_copy && !until_stale)) {
		fprintf(stderr,
			"ks_client_fresh: --spec and --key, 1..%d "
			"readers, --examples up to %d, --stop-when-met with "
			"an --until-*\n",
			MAX_READERS, MAX_EXAMPLES);
		return 2;
	}
	running = 1;
	t0 = now_ms();
	pthread_create(&wt, NULL, writer, NULL);
	for (i = 0; i < nreaders; i++) {
		rd[i].idx = i;
		pthread_create(&rd[i].t, NULL, reader, &rd[i]);
	}
	/* --from-open: the run's time counts from every handle open: on a
	 * loaded machine an open (the view read from etcd, bounded by the
	 * spec's etcd_timeout_ms) took 7 s of an 8 s run, leaving 14 writes.
	 * Not the default: with routing= specs it made test_client_routing's
	 * run crash in libkeysteer's routing poll thread (docs/testing.md,
	 * "test_client_fresh's copies") */
	while (from_open &&
	       __atomic_load_n(&opened, __ATOMIC_ACQUIRE) < nreaders + 1 &&
	       __atomic_load_n(&running, __ATOMIC_ACQUIRE))
		usleep(10000);
	t_run = from_open ? now_ms() : t0;
	while (__atomic_load_n(&running, __ATOMIC_ACQUIRE)) {
		el = now_ms() - t_run;
		met = until_met(rd, &got_copy, &got_stale);
		if (el >= max_duration * 1e3 || (el >= duration * 1e3 && met))
			break;
		if (met && stop_writes &&
		    __atomic_load_n(&writes, __ATOMIC_RELAXED) >=
			    (uint64_t)stop_writes)
			break;
		if (el >= duration * 1e3 && !said) {
			fprintf(stderr,
				"ks_client_fresh: %.0f ms in, %" PRIu64
				" reads from copies (want %ld), %" PRIu64
				" stale from copies (want %ld): reading on until"
				" then, %.0f s at most\n",
				el, got_copy, until_copy, got_stale,
				until_stale, max_duration);
			said = 1;
		}
		usleep(50000);
	}
	el = now_ms() - t_run;
	__atomic_store_n(&running, 0, __ATOMIC_RELEASE);
	pthread_join(wt, NULL);
	for (i = 0; i < nreaders; i++) {
		pthread_join(rd[i].t, NULL);
		reads += rd[i].reads;
		stale += rd[i].stale;
		stale_copy += rd[i].stale_copy;
		copy += rd[i].copy;
		misses += rd[i].misses;
		errors += rd[i].errors;
		other_errors += rd[i].other_errors;
		fallbacks += rd[i].st.fallbacks;
	}
	printf("{\"reads\": %" PRIu64 ", \"stale_reads\": %" PRIu64
	       ", \"stale_from_copies\": %" PRIu64 ", \"copy_reads\": %" PRIu64
	       ", \"fallbacks\": %" PRIu64 ", \"misses\": %" PRIu64
	       ", \"read_errors\": %" PRIu64 ", \"writes\": %" PRIu64
	       ", \"write_errors\": %" PRIu64 ", \"invalidations\": %" PRIu64
	       ", \"hot_keys_seen_by_reader\": %" PRIu64
	       ", \"armed_keys_seen_by_reader\": %" PRIu64
	       ", \"batch\": %d, \"batches\": %" PRIu64,
	       reads, stale, stale_copy, copy, fallbacks, misses, errors,
	       writes, write_errors, wst.invalidations, rd[0].st.hot_keys,
	       rd[0].st.armed_keys, batch, wst.batches);
	for (i = 0, l1_hits = 0, stale_l1 = 0; i < nreaders; i++) {
		l1_hits += rd[i].st.l1_hits;
		stale_l1 += rd[i].stale_l1;
	}
	printf(", \"l1_hits\": %" PRIu64 ", \"stale_from_l1\": %" PRIu64,
	       l1_hits, stale_l1);
	printf(", \"open_ms\": %.0f, \"seconds\": %.1f, \"until_met\": %d",
	       t_run - t0, el / 1e3, met);
	printf(", \"read_errors_not_timeout\": %" PRIu64
	       ", \"write_errors_not_timeout\": %" PRIu64,
	       other_errors, write_other_errors);
	printf(", \"write_errors_connection_broken\": %" PRIu64, write_broken);
	print_stale_ms(rd, nreaders);
	printf(", \"read_error\": \"");
	for (i = 0; i < nreaders; i++)
		if (rd[i].err[0]) {
			for (j = 0; rd[i].err[j]; j++)
				if (rd[i].err[j] != '"' && rd[i].err[j] != '\\')
					putchar(rd[i].err[j]);
			break;
		}
	printf("\", \"write_error\": \"");
	for (j = 0; write_err[j]; j++)
		if (write_err[j] != '"' && write_err[j] != '\\')
			putchar(write_err[j]);
	printf("\", \"stale_examples\": [");
	for (i = 0, first = 1; i < nreaders; i++)
		for (j = 0; j < rd[i].nex; j++, first = 0)
			printf("%s{\"got\": %ld, \"acked\": %ld, "
			       "\"from_copy\": %d, \"at_ms\": %.1f}",
			       first ? "" : ", ", rd[i].ex[j].got,
			       rd[i].ex[j].acked, rd[i].ex[j].from_copy,
			       rd[i].ex[j].at_ms);
	printf("]}\n");
	if (errors || write_errors)
		return stale ? 1 : 3;
	return stale ? 1 : 0;
}
