// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ks_client_swarm.c - one simulated application host for make
 * bench-clients (tests/bench/clients_bench.py, docs/fleet.md, "Clients at
 * scale"): N libkeysteer handles in one process, as N worker threads of an
 * application would hold them, and a poller that notes when each handle's
 * view reaches each etcd revision.
 *
 *   ks_client_swarm --spec SPEC --handles N [--poll-us U] [--wait-ms W]
 *                   [--open-threads T] [--detect-threads D]
 *
 * Opens the N handles with keysteer_open(SPEC) (T threads at once, each
 * open timed; --spec given K times: handle i opens with the (i mod K)-th,
 * so one process can hold the handles of K simulated hosts, each host's
 * on its own view file), then prints
 *   OPENED handles=N rss0_kib=R rss1_kib=R open_p50_ms=.. open_p99_ms=..
 *          open_max_ms=.. open_total_ms=.. threads=..
 * and answers lines on stdin:
 *   W REV T0_NS  a write that etcd gave revision REV, begun at T0_NS
 *                (CLOCK_MONOTONIC, the writer's); answered, in order, once
 *                every view has applied REV or W ms passed, with
 *                "SEEN REV seen overrun D_us D_us ..." (one delay a
 *                handle from T0_NS to the first poll that found its view
 *                at REV or later; -1: not within W ms)
 *   S            "STATS rss_kib=.. cpu_ms=.. threads=.. view_up=..
 *                refused=.. min_rev=.. sweep_max_us=.." (view_up: handles
 *                whose view follows etcd now; refused: documents their
 *                views refused, summed; min_rev: the least revision a
 *                view has applied)
 *   D KEY        detection (tests/bench/detect_bench.sh): from now on
 *                D detector threads (default 8; each owns every D-th
 *                handle) read their handles' stats every U us, note when
 *                a key is first armed in each view, and then read KEY
 *                through it (again each sweep until a read comes from a
 *                copy: copy_reads grew)
 *   T T0_NS      when the load that makes KEY hot began; once every
 *                handle read KEY from a copy, or W ms passed, answered
 *                with "DETECT armed copied A_us... R_us..." (per handle,
 *                from T0_NS: A its view first had a key armed, R its
 *                first read of KEY from a copy returned; -1: not within
 *                W ms; -2: before T0_NS). Detection then stops
 *   C            "COLD n" once no handle's view has had a key armed for
 *                COLD_MS in a row (n 0), or after W ms (n: the handles
 *                armed last): an entry between a refill and its arming
 *                is briefly not armed, and a repeat must not start while
 *                the last key may arm again
 *   Q (or EOF)   closes the handles, prints "BYE close_ms=..", exits 0
 *
 * The poller reads keysteer_view_revision of every handle every U us
 * (default 1000); the delay is late by at most one sweep (U plus the
 * sweep's own time, printed in STATS as sweep_max_us). Each handle keeps
 * its last HIST revision changes with their times, so a W line that
 * arrives after its revision was applied still finds when; "overrun"
 * counts handles whose history no longer reached back to REV (their
 * delay is then an upper bound).
 *
 * In detection a detector first checks all its handles' views, then reads
 * through the armed ones one after another: when a thousand views arm at
 * once, a handle's read waits for those before it in its detector (A is
 * the figure a reader that reads all the time would see; R includes that
 * queue, N/D reads at most).
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "libkeysteer.h"

#define HIST        1024
#define PENDING_MAX 4096
#define COLD_MS     2000

struct change {
	int64_t rev;
	uint64_t t_ns;
};

struct follow {
	struct keysteer *ks;
	int64_t last;
	uint64_t armed_ns, read_ns; /* detection: 0 not yet */
	unsigned head, n;           /* hist[head] is the oldest of n */
	struct change hist[HIST];
};

#define SPECS_MAX 64

static struct {
	const char *spec[SPECS_MAX];
	unsigned nspec;
	unsigned handles, poll_us, wait_ms, open_threads;
	struct follow *f;
	double *open_ms;
	unsigned next_open; /* the openers' shared cursor */
	int open_failed;
	pthread_mutex_t mu; /* hist, next_open, open_failed */
	int stop;
	uint64_t sweep_max_ns;
	/* detection: written by the main thread under mu, read by the
	 * detectors */
	int detect, cold;
	char key[251];
	unsigned dthreads;
} g = { .mu = PTHREAD_MUTEX_INITIALIZER };

#define DTHREADS_MAX 64

/* A detector: the handles i with i % dthreads == t are its own, so each
 * handle is used by one thread (its reads and stats) */
static struct detector {
	pthread_t th;
	unsigned t;
	unsigned armed;  /* with cold: its handles armed at its last sweep */
	uint64_t sweeps; /* atomic */
} dt[DTHREADS_MAX];

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* A "Name:   N kB" line of /proc/self/status (0: not found). */
static unsigned long status_field(const char *name)
{
	char line[256];
	unsigned long v = 0;
	size_t n = strlen(name);
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, n) && line[n] == ':') {
			v = strtoul(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void *opener(void *arg)
{
	(void)arg;
	for (;;) {
		struct keysteer *ks = NULL;
		uint64_t t;
		unsigned i;
		int rc;

		pthread_mutex_lock(&g.mu);
		i = g.next_open < g.handles && !g.open_failed ? g.next_open++
							      : g.handles;
		pthread_mutex_unlock(&g.mu);
		if (i == g.handles)
			return NULL;
		t = mono_ns();
		rc = keysteer_open(&ks, g.spec[i % g.nspec]);
		g.open_ms[i] = (double)(mono_ns() - t) / 1e6;
		if (rc < 0) {
			fprintf(stderr, "ks_client_swarm: open %u: %s\n", i,
				keysteer_errmsg(ks));
			keysteer_close(ks);
			pthread_mutex_lock(&g.mu);
			g.open_failed = 1;
			pthread_mutex_unlock(&g.mu);
			return NULL;
		}
		g.f[i].ks = ks;
	}
}

/* Detection, one handle: the first time its view has a key armed. */
static void mark_armed(struct follow *f)
{
	struct keysteer_stats st;
	uint64_t now;

	if (f->armed_ns || keysteer_stats(f->ks, &st, sizeof(st)) ||
	    !st.armed_keys)
		return;
	now = mono_ns();
	pthread_mutex_lock(&g.mu);
	f->armed_ns = now;
	pthread_mutex_unlock(&g.mu);
}

/* ... and once armed, a read of the key until one comes from a copy */
static void read_copy(struct follow *f)
{
	struct keysteer_stats st;
	uint64_t before;
	void *v = NULL;
	size_t len;

	if (!f->armed_ns || f->read_ns ||
	    keysteer_stats(f->ks, &st, sizeof(st)))
		return;
	before = st.copy_reads;
	if (keysteer_get(f->ks, g.key, strlen(g.key), &v, &len, NULL) == 1)
		keysteer_free(v);
	if (keysteer_stats(f->ks, &st, sizeof(st)) || st.copy_reads == before)
		return;
	pthread_mutex_lock(&g.mu);
	f->read_ns = mono_ns();
	pthread_mutex_unlock(&g.mu);
}

static void *detector(void *arg)
{
	struct detector *d = arg;
	struct keysteer_stats st;

	while (!__atomic_load_n(&g.stop, __ATOMIC_RELAXED)) {
		unsigned i, n = 0;
		int detect, cold;

		pthread_mutex_lock(&g.mu);
		detect = g.detect;
		cold = g.cold;
		pthread_mutex_unlock(&g.mu);
		/* every own view's arming first, then the reads: a read's
		 * round trip is not charged to the arming of the views after
		 * it */
		for (i = d->t; detect && i < g.handles; i += g.dthreads)
			mark_armed(&g.f[i]);
		for (i = d->t; detect && i < g.handles; i += g.dthreads)
			read_copy(&g.f[i]);
		for (i = d->t; cold && i < g.handles; i += g.dthreads)
			n += !keysteer_stats(g.f[i].ks, &st, sizeof(st)) &&
			     st.armed_keys;
		pthread_mutex_lock(&g.mu);
		d->armed = n;
		pthread_mutex_unlock(&g.mu);
		__atomic_add_fetch(&d->sweeps, 1, __ATOMIC_RELEASE);
		usleep(g.poll_us);
	}
	return NULL;
}

static void *poller(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&g.stop, __ATOMIC_RELAXED)) {
		uint64_t t0 = mono_ns(), now;
		unsigned i;

		for (i = 0; i < g.handles; i++) {
			struct follow *f = &g.f[i];
			int64_t rev = keysteer_view_revision(f->ks);

			if (rev == f->last)
				continue;
			now = mono_ns();
			pthread_mutex_lock(&g.mu);
			if (f->n == HIST) {
				f->head = (f->head + 1) % HIST;
				f->n--;
			}
			f->hist[(f->head + f->n) % HIST] = (struct change){
				rev, now
			};
			f->n++;
			f->last = rev;
			pthread_mutex_unlock(&g.mu);
		}
		now = mono_ns();
		if (now - t0 > g.sweep_max_ns)
			g.sweep_max_ns = now - t0;
		usleep(g.poll_us);
	}
	return NULL;
}

/*
 * When f's view first stood at rev or later: 1 and *t (*overrun 1 when
 * its history starts past rev, so the time is an upper bound), 0 not yet.
 * Called under g.mu.
 */
static int seen_at(const struct follow *f, int64_t rev, uint64_t *t,
		   int *overrun)
{
	unsigned k, j;

	if (f->last < rev)
		return 0;
	/* the history is in revision order: walk back to the first >= rev */
	for (k = f->n; k > 0; k--) {
		j = (f->head + k - 1) % HIST;
		if (f->hist[j].rev < rev)
			break;
		*t = f->hist[j].t_ns;
	}
	*overrun = k == 0 && f->n == HIST;
	return 1;
}

struct pending {
	int64_t rev;
	uint64_t t0_ns, deadline_ns;
};

/* Prints the SEEN line of p if every handle saw it or its time is up;
 * 1 if printed. */
static int answer(const struct pending *p, int64_t *delay_us)
{
	unsigned i, seen = 0, overrun = 0;
	uint64_t now = mono_ns(), t = 0;
	int ov = 0;

	pthread_mutex_lock(&g.mu);
	for (i = 0; i < g.handles; i++) {
		delay_us[i] = -1;
		if (seen_at(&g.f[i], p->rev, &t, &ov)) {
			delay_us[i] = t > p->t0_ns
					      ? (int64_t)((t - p->t0_ns) / 1000)
					      : 0;
			seen++;
			overrun += ov;
		}
	}
	pthread_mutex_unlock(&g.mu);
	if (seen < g.handles && now < p->deadline_ns)
		return 0;
	printf("SEEN %lld %u %u", (long long)p->rev, seen, overrun);
	for (i = 0; i < g.handles; i++)
		printf(" %lld", (long long)delay_us[i]);
	printf("\n");
	fflush(stdout);
	return 1;
}

/* us from t0 to t; -1: t is 0 (never), -2: t is before t0 (a key armed
 * before the load began: the last repeat's, not cooled) */
static long long us_since(uint64_t t, uint64_t t0)
{
	if (!t)
		return -1;
	return t < t0 ? -2 : (long long)((t - t0) / 1000);
}

/* The DETECT line once every handle read from a copy or the time is up;
 * 1 if printed (detection then stops). */
static int answer_detect(uint64_t t0, uint64_t deadline)
{
	unsigned i, armed = 0, copied = 0;
	uint64_t now = mono_ns();

	pthread_mutex_lock(&g.mu);
	for (i = 0; i < g.handles; i++) {
		armed += !!g.f[i].armed_ns;
		copied += !!g.f[i].read_ns;
	}
	if (copied < g.handles && now < deadline) {
		pthread_mutex_unlock(&g.mu);
		return 0;
	}
	g.detect = 0;
	printf("DETECT %u %u", armed, copied);
	for (i = 0; i < g.handles; i++)
		printf(" %lld", us_since(g.f[i].armed_ns, t0));
	for (i = 0; i < g.handles; i++)
		printf(" %lld", us_since(g.f[i].read_ns, t0));
	pthread_mutex_unlock(&g.mu);
	printf("\n");
	fflush(stdout);
	return 1;
}

/* COLD: waits (up to W ms) until the detectors have counted no view with
 * a key armed for COLD_MS in a row. */
static void cold_wait(void)
{
	uint64_t deadline = mono_ns() + g.wait_ms * 1000000ULL;
	uint64_t since = 0, now, seen[DTHREADS_MAX];
	unsigned n = g.handles, t;

	pthread_mutex_lock(&g.mu);
	g.cold = 1;
	pthread_mutex_unlock(&g.mu);
	while ((now = mono_ns()) < deadline) {
		/* two sweeps of each: the second began after g.cold was set */
		for (t = 0; t < g.dthreads; t++)
			seen[t] = __atomic_load_n(&dt[t].sweeps,
						  __ATOMIC_ACQUIRE);
		for (t = 0; t < g.dthreads && mono_ns() < deadline;)
			if (__atomic_load_n(&dt[t].sweeps, __ATOMIC_ACQUIRE) <
			    seen[t] + 2)
				usleep(1000);
			else
				t++;
		n = 0;
		pthread_mutex_lock(&g.mu);
		for (t = 0; t < g.dthreads; t++)
			n += dt[t].armed;
		pthread_mutex_unlock(&g.mu);
		if (n)
			since = 0;
		else if (!since)
			since = now;
		else if (now - since >= COLD_MS * 1000000ULL)
			break;
		usleep(20000);
	}
	pthread_mutex_lock(&g.mu);
	g.cold = 0;
	pthread_mutex_unlock(&g.mu);
	printf("COLD %u\n", n);
	fflush(stdout);
}

static void stats(void)
{
	struct rusage ru;
	unsigned i, up = 0;
	uint64_t refused = 0;
	int64_t min_rev = INT64_MAX, rev;

	for (i = 0; i < g.handles; i++) {
		struct keysteer_stats st;

		if (!keysteer_stats(g.f[i].ks, &st, sizeof(st))) {
			up += st.view_up == 1;
			refused += st.view_refused;
		}
		rev = keysteer_view_revision(g.f[i].ks);
		if (rev < min_rev)
			min_rev = rev;
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("STATS rss_kib=%lu cpu_ms=%.0f threads=%lu view_up=%u refused=%llu min_rev=%lld sweep_max_us=%.0f\n",
	       status_field("VmRSS"),
	       ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 +
		       ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3,
	       status_field("Threads"), up, (unsigned long long)refused,
	       (long long)min_rev, g.sweep_max_ns / 1e3);
	fflush(stdout);
}

static int serve(void)
{
	static struct pending q[PENDING_MAX];
	unsigned qh = 0, qn = 0;
	int64_t *delay = calloc(g.handles, sizeof(*delay));
	char line[512];
	size_t used = 0;
	uint64_t det_t0 = 0, det_deadline = 0;
	int eof = 0, det_wait = 0;

	if (!delay)
		return -ENOMEM;
	while (!eof || qn) {
		struct pollfd p = { .fd = 0, .events = POLLIN };
		ssize_t n;
		char *nl;

		while (qn && answer(&q[qh], delay)) {
			qh = (qh + 1) % PENDING_MAX;
			qn--;
		}
		if (det_wait && answer_detect(det_t0, det_deadline))
			det_wait = 0;
		if (eof)
			goto wait;
		if (poll(&p, 1, qn || det_wait ? 1 : 100) <= 0)
			continue;
		n = read(0, line + used, sizeof(line) - 1 - used);
		if (n <= 0) {
			eof = 1;
			continue;
		}
		used += (size_t)n;
		line[used] = '\0';
		while ((nl = strchr(line, '\n'))) {
			long long rev;
			unsigned long long t0;

			*nl = '\0';
			if (sscanf(line, "W %lld %llu", &rev, &t0) == 2 &&
			    qn < PENDING_MAX) {
				q[(qh + qn) % PENDING_MAX] = (struct pending){
					rev, t0,
					mono_ns() + g.wait_ms * 1000000ULL
				};
				qn++;
			} else if (!strncmp(line, "D ", 2) &&
				   strlen(line + 2) < sizeof(g.key)) {
				unsigned i;

				pthread_mutex_lock(&g.mu);
				strcpy(g.key, line + 2);
				for (i = 0; i < g.handles; i++)
					g.f[i].armed_ns = g.f[i].read_ns = 0;
				g.detect = 1;
				pthread_mutex_unlock(&g.mu);
			} else if (sscanf(line, "T %llu", &t0) == 1) {
				det_t0 = t0;
				det_deadline = mono_ns() +
					       g.wait_ms * 1000000ULL;
				det_wait = 1;
			} else if (!strcmp(line, "C")) {
				cold_wait();
			} else if (!strcmp(line, "S")) {
				stats();
			} else if (!strcmp(line, "Q")) {
				eof = 1;
			} else {
				fprintf(stderr,
					"ks_client_swarm: what is '%s'?\n",
					line);
			}
			used -= (size_t)(nl + 1 - line);
			memmove(line, nl + 1, used + 1);
		}
		if (used == sizeof(line) - 1)
			used = 0; /* a line too long: dropped */
		continue;
wait:
		usleep(1000);
	}
	free(delay);
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: ks_client_swarm --spec SPEC --handles N [--poll-us U] [--wait-ms W] [--open-threads T] [--detect-threads D]\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "spec", required_argument, NULL, 's' },
		{ "handles", required_argument, NULL, 'n' },
		{ "poll-us", required_argument, NULL, 'p' },
		{ "wait-ms", required_argument, NULL, 'w' },
		{ "open-threads", required_argument, NULL, 't' },
		{ "detect-threads", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	pthread_t *op = NULL, pt;
	unsigned long rss0, rss1;
	uint64_t t;
	unsigned i;
	int c, rc = 1;

	g.poll_us = 1000;
	g.wait_ms = 20000;
	g.open_threads = 1;
	g.dthreads = 8;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			if (g.nspec == SPECS_MAX) {
				fprintf(stderr,
					"ks_client_swarm: at most %d --spec\n",
					SPECS_MAX);
				return 2;
			}
			g.spec[g.nspec++] = optarg;
			break;
		case 'n':
			g.handles = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'p':
			g.poll_us = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'w':
			g.wait_ms = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 't':
			g.open_threads = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'd':
			g.dthreads = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!g.nspec || !g.handles || g.handles > 100000 || !g.open_threads ||
	    g.open_threads > 256 || !g.wait_ms || !g.dthreads ||
	    g.dthreads > DTHREADS_MAX) {
		usage(stderr);
		return 2;
	}
	g.f = calloc(g.handles, sizeof(*g.f));
	g.open_ms = calloc(g.handles, sizeof(*g.open_ms));
	op = calloc(g.open_threads, sizeof(*op));
	if (!g.f || !g.open_ms || !op) {
		fprintf(stderr, "ks_client_swarm: out of memory\n");
		goto out;
	}
	rss0 = status_field("VmRSS");
	t = mono_ns();
	for (i = 0; i < g.open_threads; i++)
		if (pthread_create(&op[i], NULL, opener, NULL)) {
			fprintf(stderr, "ks_client_swarm: no thread\n");
			g.open_failed = 1;
			break;
		}
	while (i > 0)
		pthread_join(op[--i], NULL);
	if (g.open_failed)
		goto out;
	{
		double total = (double)(mono_ns() - t) / 1e6;

		rss1 = status_field("VmRSS");
		qsort(g.open_ms, g.handles, sizeof(double), cmp_double);
		printf("OPENED handles=%u rss0_kib=%lu rss1_kib=%lu open_p50_ms=%.2f open_p99_ms=%.2f open_max_ms=%.2f open_total_ms=%.1f threads=%lu\n",
		       g.handles, rss0, rss1, g.open_ms[g.handles / 2],
		       g.open_ms[(size_t)(g.handles * 0.99)],
		       g.open_ms[g.handles - 1], total,
		       status_field("Threads"));
		fflush(stdout);
	}
	for (i = 0; i < g.handles; i++)
		g.f[i].last = -1;
	if (pthread_create(&pt, NULL, poller, NULL)) {
		fprintf(stderr, "ks_client_swarm: no poller thread\n");
		goto out;
	}
	for (i = 0; i < g.dthreads; i++) {
		dt[i].t = i;
		if (pthread_create(&dt[i].th, NULL, detector, &dt[i]))
			break;
	}
	if (i == g.dthreads)
		rc = serve() ? 1 : 0;
	else
		fprintf(stderr, "ks_client_swarm: no detector thread\n");
	__atomic_store_n(&g.stop, 1, __ATOMIC_RELAXED);
	pthread_join(pt, NULL);
	while (i > 0)
		pthread_join(dt[--i].th, NULL);
	t = mono_ns();
	for (i = 0; i < g.handles; i++) {
		keysteer_close(g.f[i].ks);
		g.f[i].ks = NULL;
	}
	printf("BYE close_ms=%.1f\n", (double)(mono_ns() - t) / 1e6);
out:
	if (g.f)
		for (i = 0; i < g.handles; i++)
			keysteer_close(g.f[i].ks);
	free(g.f);
	free(g.open_ms);
	free(op);
	return rc;
}
