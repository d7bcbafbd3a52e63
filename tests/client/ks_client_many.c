// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ks_client_many.c - many libkeysteer handles in one process
 * (tests/e2e/test_client_shared.sh, docs/client.md "One view per
 * process"). Prints one JSON document.
 *
 *   many SPEC N [METRICS_URL]: N handles opened one after another, each
 *     gets one key (so holds a memcached connection, as a worker's handle
 *     does); the process's RSS and threads before and after, the open
 *     time per handle, what the first handle's stats say of its view, and
 *     etcd's watcher total (its /metrics) before the opens and once it
 *     rose by WANT (default 1; waited for, up to 30 s).
 *   fresh SPEC CMD: a handle A opened, CMD run (it writes under the
 *     prefix), then A's view revision read and a handle B opened with the
 *     same spec: B's view revision at its open.
 *   down SPEC ETCD_PID: two handles on one follower, with stale_view_ms
 *     1000 and 2500; etcd SIGKILLed: when each saw the view down and
 *     turned owners-only, in ms from the kill.
 */
#include <curl/curl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "libkeysteer.h"
#include "ks_client_util.h"

/* A line "NAME VALUE" of /proc/self/status, as a number. */
static long status_num(const char *name)
{
	char line[256];
	size_t n = strlen(name);
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, n) && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

struct body {
	char *p;
	size_t n;
};

static size_t on_body(char *d, size_t sz, size_t nm, void *arg)
{
	struct body *b = arg;
	char *p = realloc(b->p, b->n + sz * nm + 1);

	if (!p)
		return 0;
	memcpy(p + b->n, d, sz * nm);
	b->p = p;
	b->n += sz * nm;
	p[b->n] = '\0';
	return sz * nm;
}

/* etcd_debugging_mvcc_watcher_total from url's /metrics, -1 if none. */
static long watchers(const char *url)
{
	static const char name[] = "\netcd_debugging_mvcc_watcher_total ";
	struct body b = { 0 };
	CURL *c = curl_easy_init();
	long v = -1;
	char *at;

	if (!c)
		return -1;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
	if (curl_easy_perform(c) == CURLE_OK && b.p && (at = strstr(b.p, name)))
		v = strtol(at + sizeof(name) - 1, NULL, 10);
	curl_easy_cleanup(c);
	free(b.p);
	return v;
}

static int many(const char *spec, long n, const char *metrics, long want)
{
	struct keysteer **ks = calloc((size_t)n, sizeof(*ks));
	long rss0, rss1, thr0, thr1, w0 = -1, w1 = -1, i, got = 0;
	double t0, t_first = 0, t_all, t_close, wait_ms = 0;
	struct keysteer_stats st;
	struct rlimit rl;
	char key[32];
	void *val;
	int rc;

	/* one memcached connection per handle, and etcd's */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (metrics)
		w0 = watchers(metrics);
	rss0 = status_num("VmRSS");
	thr0 = status_num("Threads");
	t0 = now_ms();
	for (i = 0; i < n; i++) {
		rc = keysteer_open(&ks[i], spec);
		if (rc) {
			printf("{\"error\": \"open %ld: %s\"}\n", i,
			       keysteer_errmsg(ks[i]));
			return 1;
		}
		if (!i)
			t_first = now_ms() - t0;
		snprintf(key, sizeof(key), "many:%ld", i);
		rc = keysteer_get(ks[i], key, strlen(key), &val, NULL, NULL);
		if (rc < 0) {
			printf("{\"error\": \"get %ld: %s\"}\n", i,
			       keysteer_errmsg(ks[i]));
			return 1;
		}
		got += rc == 0 || rc == 1;
		if (rc == 1)
			keysteer_free(val);
	}
	t_all = now_ms() - t0;
	rss1 = status_num("VmRSS");
	thr1 = status_num("Threads");
	keysteer_stats(ks[0], &st, sizeof(st));
	if (metrics) {
		double start = now_ms();

		/* the watches start on the followers' threads, after the
		 * opens: waited for, the first that shows */
		while ((w1 = watchers(metrics)) < w0 + want &&
		       now_ms() - start < 30000)
			usleep(50000);
		wait_ms = now_ms() - start;
	}
	t0 = now_ms();
	for (i = 0; i < n; i++)
		keysteer_close(ks[i]);
	t_close = now_ms() - t0;
	printf("{\"handles\": %ld, \"gets\": %ld, \"rss_before_kb\": %ld, "
	       "\"rss_after_kb\": %ld, \"rss_per_handle_kb\": %.1f, "
	       "\"threads_before\": %ld, \"threads_after\": %ld, "
	       "\"open_first_ms\": %.2f, \"open_mean_ms\": %.3f, "
	       "\"close_all_ms\": %.1f, \"view_handles\": %" PRIu64
	       ", \"view_up\": %d, \"view_revision\": %" PRIu64 ", "
	       "\"watchers_before\": %ld, \"watchers_after\": %ld, "
	       "\"watch_wait_ms\": %.0f}\n",
	       n, got, rss0, rss1, (double)(rss1 - rss0) / (double)n, thr0,
	       thr1, t_first, t_all / (double)n, t_close, st.view_handles,
	       (int)st.view_up, st.view_revision, w0, w1, wait_ms);
	free(ks);
	return 0;
}

static int fresh(const char *spec, const char *cmd)
{
	struct keysteer *a, *b;
	struct keysteer_stats sa0, sa1, sb, sa2;
	int rc;

	if ((rc = keysteer_open(&a, spec))) {
		printf("{\"error\": \"open A: %s\"}\n", keysteer_errmsg(a));
		return 1;
	}
	keysteer_stats(a, &sa0, sizeof(sa0));
	if (system(cmd)) {
		printf("{\"error\": \"%s failed\"}\n", cmd);
		return 1;
	}
	keysteer_stats(a, &sa1, sizeof(sa1));
	if ((rc = keysteer_open(&b, spec))) {
		printf("{\"error\": \"open B: %s\"}\n", keysteer_errmsg(b));
		return 1;
	}
	keysteer_stats(b, &sb, sizeof(sb));
	keysteer_stats(a, &sa2, sizeof(sa2));
	printf("{\"a_open_revision\": %" PRIu64
	       ", \"a_before_b_revision\": %" PRIu64
	       ", \"b_open_revision\": %" PRIu64
	       ", \"a_after_b_revision\": %" PRIu64
	       ", \"view_handles\": %" PRIu64 ", \"skipped\": %" PRIu64 "}\n",
	       sa0.view_revision, sa1.view_revision, sb.view_revision,
	       sa2.view_revision, sb.view_handles, sb.view_skipped);
	keysteer_close(b);
	keysteer_close(a);
	return 0;
}

/* Handle i with stale_view_ms=STALE[i]; etcd (pid) SIGKILLed; when
 * each saw its view down and turned owners-only, from the kill. */
static int down(const char *spec, int pid)
{
	static const unsigned stale[] = { 1000, 2500 };
	enum {
		N = sizeof(stale) / sizeof(stale[0])
	};
	double t0, down_ms[N], owners_ms[N];
	struct keysteer *ks[N];
	struct keysteer_stats st;
	char buf[1024];
	int i, left = 2 * N, up = 1;

	for (i = 0; i < N; i++) {
		snprintf(buf, sizeof(buf), "%s stale_view_ms=%u", spec,
			 stale[i]);
		if (keysteer_open(&ks[i], buf)) {
			printf("{\"error\": \"open: %s\"}\n",
			       keysteer_errmsg(ks[i]));
			return 1;
		}
		down_ms[i] = owners_ms[i] = -1;
	}
	/* the watch established first (up at its created answer) */
	for (t0 = now_ms(); now_ms() - t0 < 20000; usleep(10000)) {
		for (i = 0, up = 1; i < N; i++) {
			keysteer_stats(ks[i], &st, sizeof(st));
			up &= (int)st.view_up;
		}
		if (up)
			break;
	}
	keysteer_stats(ks[0], &st, sizeof(st));
	t0 = now_ms();
	if (kill(pid, SIGKILL)) {
		printf("{\"error\": \"kill %d failed\"}\n", pid);
		return 1;
	}
	while (left && now_ms() - t0 < 20000) {
		for (i = 0; i < N; i++) {
			struct keysteer_stats s;

			keysteer_stats(ks[i], &s, sizeof(s));
			if (down_ms[i] < 0 && !s.view_up && left--)
				down_ms[i] = now_ms() - t0;
			if (owners_ms[i] < 0 && s.owners_only && left--)
				owners_ms[i] = now_ms() - t0;
		}
		usleep(5000);
	}
	printf("{\"view_handles\": %" PRIu64 ", \"up_before\": %d, "
	       "\"stale_ms\": [%u, %u], \"down_ms\": [%.0f, %.0f], "
	       "\"owners_ms\": [%.0f, %.0f]}\n",
	       st.view_handles, up, stale[0], stale[1], down_ms[0], down_ms[1],
	       owners_ms[0], owners_ms[1]);
	for (i = 0; i < N; i++)
		keysteer_close(ks[i]);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4 && !strcmp(argv[1], "many"))
		return many(argv[2], strtol(argv[3], NULL, 10),
			    argc > 4 ? argv[4] : NULL,
			    argc > 5 ? strtol(argv[5], NULL, 10) : 1);
	if (argc == 4 && !strcmp(argv[1], "fresh"))
		return fresh(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "down"))
		return down(argv[2], (int)strtol(argv[3], NULL, 10));
	fprintf(stderr,
		"usage: ks_client_many many SPEC N [METRICS_URL [WANT]]\n"
		"       ks_client_many fresh SPEC CMD\n"
		"       ks_client_many down SPEC ETCD_PID\n");
	return 2;
}
