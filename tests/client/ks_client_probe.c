// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ks_client_probe.c - the L1's staleness window and the library's failure
 * behaviour, end to end (docs/client.md; run by
 * tests/e2e/test_client_faults.sh). Two modes:
 *
 *   ks_client_probe window --spec SPEC --key KEY --writer plain|library|self
 *       [--owner H:P] [--writer-ns NS] [--reader-ns NS] [--samples N]
 *       [--wait-ms MS] [--give-up-ms MS]
 *
 * A reader with an L1 (SPEC says l1_keys=) reads KEY in a loop. For each
 * sample it waits until a read is answered by the L1, then KEY is written
 * ("w<N>") by a plain memcached client on the owner (--owner, a TCP
 * connection opened in --writer-ns), by another handle of the library (in
 * --writer-ns), or by the reader's own handle (self), and the reader goes
 * on reading: the window is from the write's acknowledgement to the start
 * of the first read that returns it; every read between is stale. A sample
 * whose window has not closed after --give-up-ms is "never fresh". A try
 * whose key is not in the L1 within --wait-ms (the key not armed again
 * yet: the machine's pace, at load 30) writes nothing and is no sample:
 * counted as "not_in_l1", it is tried again, up to --samples more tries.
 *
 *   ks_client_probe timeline --spec SPEC --key KEY [--reader-ns NS]
 *       [--duration SEC] [--rate READS_PER_S] [--kill-pid PID]
 *       [--kill-at-ms MS] [--mark-owners-only N]
 *
 * Reads KEY at --rate for --duration, SIGKILLs --kill-pid (a process the
 * caller started: etcd, an agent) at --kill-at-ms, and gives when, after
 * the process has exited (its pidfd readable; exit_after_kill_ms after
 * the signal: a process in an uninterruptible wait, an etcd in a slow
 * fsync, closes its sockets only when the wait ends, and the library can
 * see nothing before), the handle's view was first down, first owners-only, first had
 * no armed key, when the last read from a copy and from the L1 were, and
 * when the view was up again (wall-clock ms, for a caller that restarts
 * what it killed); every failed request is counted. With
 * --mark-owners-only N it prints "ks_client_probe: owners only for N
 * reads" on stderr once N reads after the kill began in owners-only mode
 * with the view down: the event a caller that restarts what it killed
 * waits for (the state it must see, seen for long enough), not a time.
 *
 * Prints one JSON object. Exit 0 when it ran, 2 when it could not.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <libkeysteer.h>
#include "ks_client_util.h"

#define MAX_SAMPLES 200

static const char *spec, *key, *owner, *wns, *rns, *writer = "plain";
static int samples = 10, wait_ms = 5000, give_up_ms = 5000, kill_at_ms = 3000;
static int mark_oonly; /* --mark-owners-only: 0, no mark */
static double duration = 10, rate = 500;
static pid_t kill_pid;

static double wall_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int die(const char *what, const char *why)
{
	printf("{\"error\": \"%s: %s\"}\n", what, why);
	return 2;
}

/* A TCP connection to "host:port" (the current namespace's). */
static int plain_connect(const char *hp)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char host[128];
	const char *colon = strrchr(hp, ':');
	int fd;

	if (!colon || (size_t)(colon - hp) >= sizeof(host))
		return -1;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - hp), hp);
	if (getaddrinfo(host, colon + 1, &hints, &ai))
		return -1;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

/* A plain text-protocol set, acknowledged (STORED) before it returns. */
static int plain_set(int fd, const char *val)
{
	char buf[512], ans[64];
	size_t got = 0;
	int n = snprintf(buf, sizeof(buf), "set %s 0 0 %zu\r\n%s\r\n", key,
			 strlen(val), val);
	ssize_t r;

	if (write(fd, buf, (size_t)n) != n)
		return -1;
	while (got < sizeof(ans) - 1 && !memchr(ans, '\n', got)) {
		r = read(fd, ans + got, sizeof(ans) - 1 - got);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	ans[got] = '\0';
	return strncmp(ans, "STORED\r\n", 8) ? -1 : 0;
}

/* One read: the N of "w<N>" (-1 for another value, -2 a miss, -3 an
 * error); *from_l1 whether the L1 answered. */
static long read_n(struct keysteer *ks, int *from_l1)
{
	struct keysteer_stats a, b;
	size_t len;
	void *val;
	long n;
	int ret;

	keysteer_stats(ks, &a, sizeof(a));
	ret = keysteer_get(ks, key, strlen(key), &val, &len, NULL);
	keysteer_stats(ks, &b, sizeof(b));
	*from_l1 = b.l1_hits > a.l1_hits;
	if (ret < 0)
		return -3;
	if (!ret)
		return -2;
	n = len > 1 && ((char *)val)[0] == 'w'
		    ? strtol((char *)val + 1, NULL, 10)
		    : -1;
	keysteer_free(val);
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank. */
static double pct(const double *sorted, int n, double p)
{
	int i = (int)(p / 100 * n + 0.999999) - 1;

	if (n == 0)
		return 0;
	return sorted[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static int window_mode(void)
{
	struct keysteer *rd = NULL, *wr = NULL;
	struct keysteer_stats st;
	double win[MAX_SAMPLES], t0, t_ack, t_read;
	long n, seq = (long)(wall_ms()) % 1000000 * 1000;
	uint64_t reads = 0, l1reads = 0, stale = 0, stale_l1 = 0, errors = 0;
	int fd = -1, s, nwin = 0, not_in_l1 = 0, never = 0, l1, self, i, tries;
	char val[32];

	self = !strcmp(writer, "self");
	if (strcmp(writer, "plain") && strcmp(writer, "library") && !self)
		return die("--writer", "plain, library or self");
	if (!strcmp(writer, "plain") && !owner)
		return die("--writer plain", "needs --owner H:P");
	if (enter_ns(wns))
		return die("--writer-ns", strerror(errno));
	if (!strcmp(writer, "plain") && (fd = plain_connect(owner)) < 0)
		return die(owner, "cannot connect");
	if (!strcmp(writer, "library") && keysteer_open(&wr, spec) < 0)
		return die("writer's open", keysteer_errmsg(wr));
	if (enter_ns(rns))
		return die("--reader-ns", strerror(errno));
	if (keysteer_open(&rd, spec) < 0)
		return die("reader's open", keysteer_errmsg(rd));
	if (self)
		wr = rd;
	for (s = tries = 0; s < samples && tries < 2 * samples; tries++) {
		/* the L1 must hold the key: else this is a copy's window */
		for (t0 = now_ms(), l1 = 0; !l1 && now_ms() - t0 < wait_ms;) {
			n = read_n(rd, &l1);
			reads++;
			errors += n == -3;
			usleep(500);
		}
		if (!l1) {
			not_in_l1++;
			continue;
		}
		s++;
		snprintf(val, sizeof(val), "w%ld", ++seq);
		if (fd >= 0 ? plain_set(fd, val)
			    : keysteer_set(wr, key, strlen(key), val,
					   strlen(val), 0, 0) < 0) {
			errors++;
			continue;
		}
		t_ack = now_ms();
		for (;;) {
			t_read = now_ms();
			n = read_n(rd, &l1);
			reads++;
			l1reads += l1;
			if (n == seq)
				break;
			errors += n == -3;
			stale++;
			stale_l1 += l1;
			if (t_read - t_ack > give_up_ms) {
				never++;
				break;
			}
			usleep(200);
		}
		if (n == seq)
			win[nwin++] = t_read - t_ack;
	}
	keysteer_stats(rd, &st, sizeof(st));
	qsort(win, nwin, sizeof(win[0]), cmp_double);
	printf("{\"writer\": \"%s\", \"samples\": %d, \"measured\": %d, "
	       "\"not_in_l1\": %d, \"never_fresh\": %d, \"reads\": %" PRIu64
	       ", \"stale_reads\": %" PRIu64 ", \"stale_from_l1\": %" PRIu64
	       ", \"errors\": %" PRIu64
	       ", \"window_ms\": {\"p50\": %.2f, \"p99\": %.2f, "
	       "\"max\": %.2f}, \"gets\": %" PRIu64 ", \"l1_hits\": %" PRIu64
	       ", \"l1_misses\": %" PRIu64 ", \"l1_drops\": %" PRIu64
	       ", \"l1_write_drops\": %" PRIu64 ", \"l1_expired\": %" PRIu64
	       ", \"windows\": [",
	       writer, samples, nwin, not_in_l1, never, reads, stale, stale_l1,
	       errors + st.errors, pct(win, nwin, 50), pct(win, nwin, 99),
	       nwin ? win[nwin - 1] : 0, st.gets, st.l1_hits, st.l1_misses,
	       st.l1_drops, st.l1_write_drops, st.l1_expired);
	for (i = 0; i < nwin; i++)
		printf("%s%.2f", i ? ", " : "", win[i]);
	printf("]}\n");
	if (wr && wr != rd)
		keysteer_close(wr);
	keysteer_close(rd);
	if (fd >= 0)
		close(fd);
	return 0;
}

/* ms since the killed process exited of the first time cond held after
 * it, -1: never. */
#define FIRST_AFTER(var, cond)                                                 \
	do {                                                                   \
		if (gone && (var) < 0 && (cond))                               \
			(var) = now - t_kill;                                  \
	} while (0)

/* 1 once the process behind pidfd has exited (a zombie too), else 0. */
static int exited(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return pidfd < 0 || poll(&p, 1, 0) > 0;
}

static int timeline_mode(void)
{
	struct keysteer_stats a, b;
	struct keysteer *ks = NULL;
	double t0, now, t_kill = 0, t_sig = 0, gap = 1e3 / rate, next;
	double down = -1, oonly = -1, unarmed = -1, last_copy = -1,
	       last_l1 = -1, up_wall = -1;
	uint64_t reads = 0, errors = 0, misses = 0, copy_before = 0,
		 l1_before = 0, after = 0, after_owner = 0, copy_down = 0,
		 copy_oonly = 0, l1_down = 0, oonly_reads = 0;
	char err[256] = "";
	int killed = 0, gone = 0, was_down = 0, pidfd = -1, ret;
	size_t len;
	void *val;

	if (enter_ns(rns))
		return die("--reader-ns", strerror(errno));
	if (keysteer_open(&ks, spec) < 0)
		return die("open", keysteer_errmsg(ks));
	t0 = next = now_ms();
	while ((now = now_ms()) - t0 < duration * 1e3) {
		if (!killed && now - t0 >= kill_at_ms) {
			if (kill_pid > 0 &&
			    (pidfd = (int)syscall(SYS_pidfd_open, kill_pid,
						  0)) < 0)
				return die("pidfd_open", strerror(errno));
			if (kill_pid > 0 && kill(kill_pid, SIGKILL))
				return die("kill", strerror(errno));
			killed = 1;
			t_sig = now = now_ms();
		}
		/* the times after the kill count from the exit */
		if (killed && !gone && exited(pidfd)) {
			gone = 1;
			t_kill = now = now_ms();
		}
		keysteer_stats(ks, &a, sizeof(a));
		ret = keysteer_get(ks, key, strlen(key), &val, &len, NULL);
		keysteer_stats(ks, &b, sizeof(b));
		reads++;
		if (ret < 0) {
			errors++;
			snprintf(err, sizeof(err), "%s", keysteer_errmsg(ks));
		}
		misses += ret == 0;
		if (ret > 0)
			keysteer_free(val);
		if (!killed) {
			copy_before += b.copy_reads > a.copy_reads;
			l1_before += b.l1_hits > a.l1_hits;
		} else if (gone) {
			after++;
			after_owner += b.owner_reads > a.owner_reads;
			if (b.copy_reads > a.copy_reads)
				last_copy = now - t_kill;
			if (b.l1_hits > a.l1_hits)
				last_l1 = now - t_kill;
			/* while the view is down: its last view, then the
			 * owners only; never the L1. A read is judged by the
			 * state it began in (a): the watch thread may turn
			 * owners-only on while a read chosen on the last view
			 * is on the wire, a loaded machine for long. */
			if (!b.view_up && up_wall < 0) {
				copy_down += !a.owners_only &&
					     b.copy_reads > a.copy_reads;
				copy_oonly += a.owners_only &&
					      b.copy_reads > a.copy_reads;
				l1_down += b.l1_hits > a.l1_hits;
				oonly_reads += a.owners_only;
				if (mark_oonly &&
				    oonly_reads == (uint64_t)mark_oonly)
					fprintf(stderr,
						"ks_client_probe: owners only "
						"for %d reads\n",
						mark_oonly);
			}
		}
		FIRST_AFTER(down, !b.view_up);
		FIRST_AFTER(oonly, b.owners_only);
		FIRST_AFTER(unarmed, !b.armed_keys);
		was_down |= gone && !b.view_up;
		if (was_down && b.view_up && up_wall < 0)
			up_wall = wall_ms();
		next += gap;
		sleep_until_ms(next);
	}
	keysteer_stats(ks, &b, sizeof(b));
	if (pidfd >= 0)
		close(pidfd);
	for (ret = 0; err[ret]; ret++)
		if (err[ret] == '"' || err[ret] == '\\')
			err[ret] = '\'';
	printf("{\"reads\": %" PRIu64 ", \"errors\": %" PRIu64
	       ", \"misses\": %" PRIu64 ", \"copy_reads_before\": %" PRIu64
	       ", \"l1_hits_before\": %" PRIu64 ", \"reads_after\": %" PRIu64
	       ", \"owner_reads_after\": %" PRIu64
	       ", \"exit_after_kill_ms\": %.1f"
	       ", \"down_after_ms\": %.1f, \"owners_only_after_ms\": %.1f"
	       ", \"unarmed_after_ms\": %.1f, \"last_copy_read_ms\": %.1f"
	       ", \"last_l1_hit_ms\": %.1f, \"up_again_wall_ms\": %.0f"
	       ", \"copy_reads_down\": %" PRIu64
	       ", \"copy_reads_owners_only\": %" PRIu64
	       ", \"l1_hits_down\": %" PRIu64 ", \"l1_flushes\": %" PRIu64
	       ", \"owners_only_end\": %d"
	       ", \"view_up_end\": %d, \"error\": \"%s\"}\n",
	       reads, errors, misses, copy_before, l1_before, after,
	       after_owner, gone ? t_kill - t_sig : -1.0, down, oonly, unarmed,
	       last_copy, last_l1, up_wall, copy_down, copy_oonly, l1_down,
	       b.l1_flushes, b.owners_only, b.view_up, err);
	keysteer_close(ks);
	return 0;
}

/* Options as --NAME VALUE pairs: each names its variable and its kind. */
struct opt {
	const char *name;
	char kind; /* s: a string, i: an int, d: a double, p: a pid */
	void *var;
};

static const struct opt opts[] = {
	{ "spec", 's', &spec },
	{ "key", 's', &key },
	{ "writer", 's', &writer },
	{ "owner", 's', &owner },
	{ "writer-ns", 's', &wns },
	{ "reader-ns", 's', &rns },
	{ "samples", 'i', &samples },
	{ "wait-ms", 'i', &wait_ms },
	{ "give-up-ms", 'i', &give_up_ms },
	{ "duration", 'd', &duration },
	{ "rate", 'd', &rate },
	{ "kill-pid", 'p', &kill_pid },
	{ "kill-at-ms", 'i', &kill_at_ms },
	{ "mark-owners-only", 'i', &mark_oonly },
};

static int set_opt(const char *name, const char *val)
{
	size_t i;

	for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		if (strcmp(opts[i].name, name))
			continue;
		if (opts[i].kind == 's')
			*(const char **)opts[i].var = val;
		else if (opts[i].kind == 'i')
			*(int *)opts[i].var = atoi(val);
		else if (opts[i].kind == 'd')
			*(double *)opts[i].var = atof(val);
		else
			*(pid_t *)opts[i].var = (pid_t)atoi(val);
		return 0;
	}
	fprintf(stderr, "ks_client_probe: unknown option --%s\n", name);
	return -1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int i;

	for (i = 2; i < argc; i += 2)
		if (strncmp(argv[i], "--", 2) || i + 1 == argc ||
		    set_opt(argv[i] + 2, argv[i + 1]))
			return 2;
	if (!spec || !key || samples < 1 || samples > MAX_SAMPLES ||
	    rate <= 0 || duration <= 0) {
		fprintf(stderr,
			"usage: ks_client_probe window|timeline --spec SPEC "
			"--key KEY ... (1..%d samples)\n",
			MAX_SAMPLES);
		return 2;
	}
	if (!strcmp(mode, "window"))
		return window_mode();
	if (!strcmp(mode, "timeline"))
		return timeline_mode();
	fprintf(stderr, "ks_client_probe: the mode is window or timeline\n");
	return 2;
}
