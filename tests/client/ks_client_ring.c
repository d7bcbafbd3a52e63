// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ks_client_ring.c - libkeysteer across a ring change (docs/client.md, "Ring
 * changes"; run by tests/e2e/test_client_ring_change.sh).
 *
 *   ks_client_ring fresh --spec SPEC --lag-spec SPEC --ring-cmd CMD
 *                  [--keys N] [--prefix P] [--duration S] [--ring-at-ms MS]
 *   ks_client_ring warm --spec SPEC --new-spec SPEC --ring-cmd CMD
 *                  [--keys N] [--prefix P]
 *
 * fresh: N keys written "v1" through a handle on SPEC; then two writers
 * (one handle on SPEC, one on --lag-spec, a handle whose view is held
 * back), taking turns under one lock so that every write of a key is
 * ordered with every other, write "v<n>" (n per key, counted up); four
 * readers (two handles of each spec) read random keys and compare the n
 * they get with the highest n acknowledged for that key before the read
 * began: below it is a stale read. CMD (a shell command: the ring's
 * change) runs --ring-at-ms after the start; the run goes on until both
 * writers' views have the new ring, then --duration s more (or, with
 * --until-past N, until every reader made N reads past its grace), each
 * wait bounded by 120 s. Counts are kept apart for
 * the time the two handles' rings differ (the lagging one's ring revision
 * below the other's). Exit 0 when no read was stale and no request
 * failed, 1 when a read was stale, 3 when a request failed, 2 when it could
 * not run. With --stop-writes-at-catchup the writers stop at the first
 * write after the lagging handle's view has the new ring, and the readers
 * go on: with a short ring_grace_ms, past every handle's grace (counted
 * apart: reads past the reading handle's grace).
 *
 * warm: N keys written "v1" through a handle on SPEC, closed; CMD; once
 * another handle's view (open since before CMD) has the new ring (its ring_changes, waited for), every key
 * read once through it, then every key read through a handle on --new-spec
 * (a static ring of the new shard alone: what it holds), then every key
 * read again through the first handle. Prints the counts; exit 0, or 2
 * when it could not run (the script checks the counts).
 *
 * Prints one JSON object.
 */
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libkeysteer.h>
#include "ks_client_util.h"

#define MAX_KEYS 4096

static const char *spec, *lag_spec, *new_spec, *ring_cmd, *prefix = "rc";
static int nkeys = 200, ring_at_ms = 1000;
static double duration = 8;
static char names[MAX_KEYS][64];
static long next_n[MAX_KEYS]; /* under wlock */
static long acked[MAX_KEYS];  /* atomic: highest n acknowledged */
static pthread_mutex_t wlock = PTHREAD_MUTEX_INITIALIZER;
static int running = 1; /* atomic */
/* atomics: the ring revisions the writers' handles have */
static int64_t new_rev, lag_rev;
/* atomics: the writers' handles' ring_changes */
static uint64_t new_changes, lag_changes;
static int until_past;      /* reads past the grace every reader must make */
static int failed_open;     /* atomic */
static int stop_at_catchup; /* writes stop once the lagging view caught up */
static int writes_stopped;  /* atomic */

struct side {
	const char *name, *spec;
	int lag; /* 1: the handle whose view is held back */
	pthread_t t;
	unsigned seed;
	uint64_t ops, ops_differ, stale, stale_differ, misses, errors;
	uint64_t ops_past, stale_past; /* reads past the handle's grace */
	struct keysteer_stats st;
	char err[256];
	long ex_got, ex_acked; /* the first stale read */
	int ex_key;
};

static int open_handle(struct side *s, struct keysteer **ks)
{
	if (keysteer_open(ks, s->spec) < 0) {
		snprintf(s->err, sizeof(s->err), "open: %s",
			 keysteer_errmsg(*ks));
		keysteer_close(*ks);
		__atomic_store_n(&failed_open, 1, __ATOMIC_RELEASE);
		return -1;
	}
	return 0;
}

/* Whether the two views' rings differ now, as the writers last saw them. */
static int differ(void)
{
	return __atomic_load_n(&lag_rev, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&new_rev, __ATOMIC_ACQUIRE);
}

static void *writer(void *arg)
{
	struct side *s = arg;
	struct keysteer_stats st;
	struct keysteer *ks;
	char val[32];
	int k, len, d;
	long n;

	if (open_handle(s, &ks))
		return NULL;
	while (__atomic_load_n(&running, __ATOMIC_ACQUIRE)) {
		/* the handle stays open to the end: its view thread's
		 * catch-up is counted in its stats */
		if (__atomic_load_n(&writes_stopped, __ATOMIC_ACQUIRE)) {
			usleep(10000);
			continue;
		}
		k = (int)(rand_r(&s->seed) % (unsigned)nkeys);
		pthread_mutex_lock(&wlock);
		keysteer_stats(ks, &st, sizeof(st));
		__atomic_store_n(s->lag ? &lag_rev : &new_rev, st.ring_revision,
				 __ATOMIC_RELEASE);
		__atomic_store_n(s->lag ? &lag_changes : &new_changes,
				 st.ring_changes, __ATOMIC_RELEASE);
		/* the last write of every key made before the lagging view
		 * caught up: what the new owners hold then is the catch-up's */
		if (stop_at_catchup && s->lag && st.ring_changes) {
			__atomic_store_n(&writes_stopped, 1, __ATOMIC_RELEASE);
			pthread_mutex_unlock(&wlock);
			continue;
		}
		d = differ();
		n = ++next_n[k];
		len = snprintf(val, sizeof(val), "v%ld", n);
		if (keysteer_set(ks, names[k], strlen(names[k]), val,
				 (size_t)len, 0, 0) < 0) {
			s->errors++;
			snprintf(s->err, sizeof(s->err), "%s",
				 keysteer_errmsg(ks));
		} else {
			s->ops++;
			s->ops_differ += d;
			__atomic_store_n(&acked[k], n, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&wlock);
		usleep(1000);
	}
	keysteer_stats(ks, &s->st, sizeof(s->st));
	keysteer_close(ks);
	return NULL;
}

static void *reader(void *arg)
{
	struct side *s = arg;
	struct keysteer_stats st;
	struct keysteer *ks;
	long hi, got;
	size_t len;
	void *val;
	int k, ret, d, past;

	if (open_handle(s, &ks))
		return NULL;
	while (__atomic_load_n(&running, __ATOMIC_ACQUIRE)) {
		k = (int)(rand_r(&s->seed) % (unsigned)nkeys);
		d = differ();
		keysteer_stats(ks, &st, sizeof(st));
		past = st.ring_changes && !st.ring_grace_ms;
		hi = __atomic_load_n(&acked[k], __ATOMIC_ACQUIRE);
		ret = keysteer_get(ks, names[k], strlen(names[k]), &val, &len,
				   NULL);
		s->ops++;
		s->ops_differ += d;
		__atomic_store_n(&s->ops_past, s->ops_past + past,
				 __ATOMIC_RELEASE);
		if (ret < 0) {
			s->errors++;
			snprintf(s->err, sizeof(s->err), "%s",
				 keysteer_errmsg(ks));
		} else if (!ret) {
			s->misses++;
		} else {
			got = len > 1 && ((char *)val)[0] == 'v'
				      ? strtol((char *)val + 1, NULL, 10)
				      : 0;
			if (got < hi) {
				if (!s->stale++) {
					s->ex_got = got;
					s->ex_acked = hi;
					s->ex_key = k;
				}
				s->stale_differ += d;
				s->stale_past += past;
			}
		}
		keysteer_free(val);
		usleep(500);
	}
	keysteer_stats(ks, &s->st, sizeof(s->st));
	keysteer_close(ks);
	return NULL;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++)
		if (*s != '"' && *s != '\\')
			putchar(*s);
	putchar('"');
}

/* Every key "v1" through ks: 0, or -1 with the message. */
static int write_all(struct keysteer *ks)
{
	int k;

	for (k = 0; k < nkeys; k++) {
		if (keysteer_set(ks, names[k], strlen(names[k]), "v1", 2, 0,
				 0) < 0) {
			fprintf(stderr, "ks_client_ring: set %s: %s\n",
				names[k], keysteer_errmsg(ks));
			return -1;
		}
		next_n[k] = acked[k] = 1;
	}
	return 0;
}

static int run_cmd(void)
{
	int rc = system(ring_cmd);

	if (rc) {
		fprintf(stderr, "ks_client_ring: '%s' exited %d\n", ring_cmd,
			rc);
		return -1;
	}
	return 0;
}

static int fresh(void)
{
	struct side sd[6] = {
		{ "writer_new", spec, 0 },      { "writer_lag", lag_spec, 1 },
		{ "reader_new1", spec, 0 },     { "reader_new2", spec, 0 },
		{ "reader_lag1", lag_spec, 1 }, { "reader_lag2", lag_spec, 1 },
	};
	uint64_t stale = 0, errors = 0;
	struct keysteer *ks;
	int i, ran = 0, rc;
	double t0, t_cmd = 0, t_new = 0, t_lag = 0;

	if (keysteer_open(&ks, spec) < 0) {
		fprintf(stderr, "ks_client_ring: open: %s\n",
			keysteer_errmsg(ks));
		return 2;
	}
	rc = write_all(ks);
	keysteer_close(ks);
	if (rc)
		return 2;
	t0 = now_ms();
	for (i = 0; i < 6; i++) {
		sd[i].seed = (unsigned)(i * 7919 + 1);
		pthread_create(&sd[i].t, NULL, i < 2 ? writer : reader, &sd[i]);
	}
	/* events, not times: the change seen by the new-ring writer, then by
	 * the lagging one (its held-back view), then DURATION s more or,
	 * with --until-past N, every reader N reads past its grace; each
	 * wait bounded by 120 s for a loaded machine */
	while (!__atomic_load_n(&failed_open, __ATOMIC_ACQUIRE)) {
		double now = now_ms();

		if (!ran && now - t0 >= ring_at_ms) {
			ran = 1;
			if (run_cmd())
				break;
			t_cmd = now_ms();
		}
		if (ran && !t_new &&
		    __atomic_load_n(&new_changes, __ATOMIC_ACQUIRE))
			t_new = now;
		if (t_new && !t_lag &&
		    __atomic_load_n(&lag_changes, __ATOMIC_ACQUIRE))
			t_lag = now;
		if (ran && now - t_cmd > 120e3 && !t_lag) {
			fprintf(stderr, "ks_client_ring: the change not seen "
					"by both writers in 120 s\n");
			break;
		}
		if (t_lag && !until_past && now - t_lag >= duration * 1e3)
			break;
		if (t_lag && until_past) {
			for (i = 2;
			     i < 6 && __atomic_load_n(&sd[i].ops_past,
						      __ATOMIC_ACQUIRE) >=
					      (uint64_t)until_past;
			     i++)
				;
			if (i == 6 || now - t_lag > 120e3)
				break;
		}
		usleep(20000);
	}
	__atomic_store_n(&running, 0, __ATOMIC_RELEASE);
	for (i = 0; i < 6; i++)
		pthread_join(sd[i].t, NULL);
	printf("{\"ring_changed\": %d, \"new_saw_ms\": %.0f, "
	       "\"lag_saw_ms\": %.0f",
	       ran, t_new ? t_new - t_cmd : -1, t_lag ? t_lag - t_cmd : -1);
	for (i = 0; i < 6; i++) {
		stale += sd[i].stale;
		errors += sd[i].errors;
		printf(", \"%s\": {\"ops\": %" PRIu64
		       ", \"ops_views_differ\": %" PRIu64
		       ", \"stale\": %" PRIu64
		       ", \"stale_views_differ\": %" PRIu64
		       ", \"misses\": %" PRIu64 ", \"errors\": %" PRIu64
		       ", \"ring_changes\": %" PRIu64
		       ", \"ring_old_reads\": %" PRIu64
		       ", \"ring_warmups\": %" PRIu64
		       ", \"ring_warm_undone\": %" PRIu64
		       ", \"ring_invals\": %" PRIu64
		       ", \"ring_inval_errors\": %" PRIu64
		       ", \"ops_past_grace\": %" PRIu64
		       ", \"stale_past_grace\": %" PRIu64
		       ", \"ring_catchups\": %" PRIu64
		       ", \"ring_catchup_missed\": %" PRIu64,
		       sd[i].name, sd[i].ops, sd[i].ops_differ, sd[i].stale,
		       sd[i].stale_differ, sd[i].misses, sd[i].errors,
		       sd[i].st.ring_changes, sd[i].st.ring_old_reads,
		       sd[i].st.ring_warmups, sd[i].st.ring_warm_undone,
		       sd[i].st.ring_invals, sd[i].st.ring_inval_errors,
		       sd[i].ops_past, sd[i].stale_past, sd[i].st.ring_catchups,
		       sd[i].st.ring_catchup_missed);
		if (sd[i].stale)
			printf(", \"first_stale\": {\"key\": \"%s\", \"got\": "
			       "%ld, \"acked\": %ld}",
			       names[sd[i].ex_key], sd[i].ex_got,
			       sd[i].ex_acked);
		printf(", \"error\": ");
		json_str(sd[i].err);
		printf("}");
	}
	printf(", \"stale_reads\": %" PRIu64 ", \"errors\": %" PRIu64 "}\n",
	       stale, errors);
	if (!ran || !t_lag)
		return 2;
	if (stale)
		return 1;
	return errors ? 3 : 0;
}

/* Reads every key through ks: hits into *hits. */
static int read_all(struct keysteer *ks, unsigned *hits)
{
	size_t len;
	void *val;
	int k, ret;

	for (*hits = 0, k = 0; k < nkeys; k++) {
		ret = keysteer_get(ks, names[k], strlen(names[k]), &val, &len,
				   NULL);
		if (ret < 0) {
			fprintf(stderr, "ks_client_ring: get %s: %s\n",
				names[k], keysteer_errmsg(ks));
			return -1;
		}
		*hits += ret;
		keysteer_free(val);
	}
	return 0;
}

static int warm(void)
{
	struct keysteer_stats a, b, c;
	struct keysteer *ks, *e = NULL, *w = NULL;
	unsigned hits1, hits_e0, hits_e, hits2;
	double t0;

	if (keysteer_open(&ks, spec) < 0 || keysteer_open(&e, new_spec) < 0 ||
	    keysteer_open(&w, spec) < 0) {
		fprintf(stderr, "ks_client_ring: open: %s\n",
			keysteer_errmsg(w   ? w
					: e ? e
					    : ks));
		return 2;
	}
	/* written by a handle closed before the change: a live writer's
	 * catch-up would delete the moved keys at E while the reads below
	 * warm them there (a warm copy lost, which the count would take
	 * for a warm-up that did not land) */
	if (write_all(w))
		return 2;
	keysteer_close(w);
	if (read_all(e, &hits_e0) || run_cmd())
		return 2;
	/* the event, with room for a loaded machine */
	for (t0 = now_ms(); now_ms() - t0 < 120000; usleep(10000)) {
		keysteer_stats(ks, &a, sizeof(a));
		if (a.ring_changes)
			break;
	}
	if (!a.ring_changes) {
		fprintf(stderr,
			"ks_client_ring: no ring change seen in 120 s\n");
		return 2;
	}
	if (read_all(ks, &hits1))
		return 2;
	keysteer_stats(ks, &b, sizeof(b));
	if (read_all(e, &hits_e) || read_all(ks, &hits2))
		return 2;
	keysteer_stats(ks, &c, sizeof(c));
	printf("{\"keys\": %d, \"at_new_before\": %u, \"hits_first\": %u, "
	       "\"old_reads_first\": %" PRIu64 ", \"warmups_first\": %" PRIu64
	       ", \"undone\": %" PRIu64 ", \"at_new_after\": %u, "
	       "\"hits_second\": %u, \"warmups_second\": %" PRIu64
	       ", \"owner_reads_first\": %" PRIu64
	       ", \"grace_ms_left\": %" PRIu64 "}\n",
	       nkeys, hits_e0, hits1, b.ring_old_reads - a.ring_old_reads,
	       b.ring_warmups - a.ring_warmups,
	       b.ring_warm_undone - a.ring_warm_undone, hits_e, hits2,
	       c.ring_warmups - b.ring_warmups, b.owner_reads - a.owner_reads,
	       c.ring_grace_ms);
	keysteer_close(ks);
	keysteer_close(e);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "spec", 1, 0, 's' },
					    { "lag-spec", 1, 0, 'l' },
					    { "new-spec", 1, 0, 'n' },
					    { "ring-cmd", 1, 0, 'c' },
					    { "keys", 1, 0, 'k' },
					    { "prefix", 1, 0, 'p' },
					    { "duration", 1, 0, 'd' },
					    { "ring-at-ms", 1, 0, 'a' },
					    { "stop-writes-at-catchup", 0, 0,
					      'S' },
					    { "until-past", 1, 0, 'u' },
					    { 0, 0, 0, 0 } };
	const char *mode = argc > 1 ? argv[1] : "";
	int c, k;

	optind = 2;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			spec = optarg;
			break;
		case 'l':
			lag_spec = optarg;
			break;
		case 'n':
			new_spec = optarg;
			break;
		case 'c':
			ring_cmd = optarg;
			break;
		case 'k':
			nkeys = atoi(optarg);
			break;
		case 'p':
			prefix = optarg;
			break;
		case 'd':
			duration = atof(optarg);
			break;
		case 'a':
			ring_at_ms = atoi(optarg);
			break;
		case 'S':
			stop_at_catchup = 1;
			break;
		case 'u':
			until_past = atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	if (nkeys < 1 || nkeys > MAX_KEYS || !spec || !ring_cmd ||
	    ((strcmp(mode, "fresh") || !lag_spec) &&
	     (strcmp(mode, "warm") || !new_spec))) {
		fprintf(stderr, "usage: ks_client_ring fresh|warm --spec SPEC "
				"--ring-cmd CMD (--lag-spec SPEC | --new-spec "
				"SPEC) [--keys 1..4096] ...\n");
		return 2;
	}
	for (k = 0; k < nkeys; k++)
		snprintf(names[k], sizeof(names[k]), "%s:%d", prefix, k);
	return !strcmp(mode, "fresh") ? fresh() : warm();
}
