// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * etcd_test - the etcd client (user/net/etcd.h) against real etcd processes,
 * which tests/e2e/test_etcd_client.sh starts (Debian's etcd 3.4, in a
 * network namespace of its own) and names on the command line:
 *
 *   --plain URL      an etcd without auth
 *   --down URL       where nothing listens (connect refused)
 *   --blackhole URL  an address whose packets vanish (connect hangs)
 *   --auth URL       an etcd with auth on, user root, password --password
 *   --tls URL --ca F --cert F --key F --other-ca F
 *                    an etcd over TLS that wants client certificates;
 *                    --other-ca a CA that did not sign etcd's certificate
 *   --etcd-bin PATH --dir DIR
 *                    for the restart test: the program starts an etcd of
 *                    its own on --restart-port, kills it, starts it again
 *                    (its pid in DIR/restart.pid, for the script's cleanup)
 *
 * A test whose URL is not given is skipped. Every line is PASS/FAIL/SKIP
 * (tests/lib/ktest.h); the exit status is non-zero when any failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "net/etcd.h"
#include "ktest.h"
#include "pub_test.h"

static struct {
	const char *plain, *down, *blackhole, *auth, *password;
	const char *tls, *ca, *cert, *key, *other_ca;
	const char *etcd_bin, *dir;
	int restart_port;
} A = { .password = "pw", .restart_port = 23990 };

static pid_t restart_pid; /* the restart test's etcd, if running */

/* The client timeout for calls to a live etcd: these tests check answers,
 * not speed, and a loaded 2-core machine can hold a call for seconds. */
#define LIVE_MS 15000

/* Where a deadline is the property: the call may return late by what the
 * scheduler adds on a loaded 2-core machine, several times the deadline,
 * but not without bound. */
#define LATE_MS(deadline) ((deadline)*4 + 1000)

#define K(s) (s), strlen(s)

static long long ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct ks_etcd *open_c(const char *eps, int timeout_ms)
{
	struct ks_etcd_opts o = { .endpoints = eps, .timeout_ms = timeout_ms };
	struct ks_etcd *c;
	char err[256];
	int rc = ks_etcd_open(&c, &o, err, sizeof(err));

	CHECK(!rc, "open %s: %s", eps, err);
	return rc ? NULL : c;
}

static int need(const char *what, const char *url)
{
	if (url)
		return 1;
	kt_skipf("no %s etcd given", what);
	return 0;
}

/* The value of key (malloc'd), NULL when absent; fails the test on error. */
static char *get(struct ks_etcd *c, const char *key, struct ks_etcd_kv *meta)
{
	struct ks_etcd_range r;
	char *v = NULL;
	int rc = ks_etcd_range(c, K(key), 0, &r);

	CHECK(!rc, "range %s: %s", key, ks_etcd_errmsg(c));
	if (!rc && r.n == 1) {
		v = strdup(r.kvs[0].value);
		if (meta) {
			*meta = r.kvs[0];
			meta->key = meta->value = NULL;
		}
	}
	CHECK(rc || r.n <= 1, "range of one key gave %zu", r.n);
	ks_etcd_range_free(&r);
	return v;
}

static void t_put_range(void)
{
	static const char bkey[] = "bin\0\xff\x01key", bval[] = "v\0\xfe\r\n";
	struct ks_etcd *c;
	struct ks_etcd_range r;
	struct ks_etcd_kv m = {};
	int64_t rev1, rev2;
	char *v;
	int rc;

	kt_begin("etcd_put_range");
	if (!need("plain", A.plain) || !(c = open_c(A.plain, LIVE_MS)))
		goto out;
	rc = ks_etcd_put(c, K("t/a"), K("one"), 0, &rev1);
	CHECK(!rc && rev1 > 0, "put: %d %s", rc, ks_etcd_errmsg(c));
	CHECK(!ks_etcd_put(c, K("t/a"), K("two"), 0, &rev2) && rev2 > rev1,
	      "second put: rev %lld after %lld", (long long)rev2,
	      (long long)rev1);
	v = get(c, "t/a", &m);
	CHECK(v && !strcmp(v, "two"), "value %s, want two", v ? v : "(absent)");
	CHECK(m.mod_revision == rev2 && m.create_revision == rev1 &&
		      m.version == 2 && m.lease == 0,
	      "mod %lld create %lld version %lld lease %lld",
	      (long long)m.mod_revision, (long long)m.create_revision,
	      (long long)m.version, (long long)m.lease);
	free(v);
	/* bytes: NUL, 0xff in keys and values; an empty value */
	CHECK(!ks_etcd_put(c, bkey, sizeof(bkey), bval, sizeof(bval), 0, NULL),
	      "binary put: %s", ks_etcd_errmsg(c));
	rc = ks_etcd_range(c, bkey, sizeof(bkey), 0, &r);
	CHECK(!rc && r.n == 1 && r.kvs[0].key_len == sizeof(bkey) &&
		      !memcmp(r.kvs[0].key, bkey, sizeof(bkey)) &&
		      r.kvs[0].value_len == sizeof(bval) &&
		      !memcmp(r.kvs[0].value, bval, sizeof(bval)),
	      "binary key/value not read back");
	ks_etcd_range_free(&r);
	CHECK(!ks_etcd_put(c, K("t/empty"), "", 0, 0, NULL), "empty put");
	rc = ks_etcd_range(c, K("t/empty"), 0, &r);
	CHECK(!rc && r.n == 1 && r.kvs[0].value_len == 0 && r.kvs[0].value &&
		      !r.kvs[0].value[0],
	      "empty value: rc %d n %zu", rc, r.n);
	ks_etcd_range_free(&r);
	rc = ks_etcd_range(c, K("t/absent"), 0, &r);
	CHECK(!rc && r.n == 0 && r.revision >= rev2,
	      "absent key: rc %d n %zu rev %lld", rc, r.n,
	      (long long)r.revision);
	ks_etcd_range_free(&r);
	ks_etcd_close(c);
out:
	kt_end();
}

static void t_prefix(void)
{
	const char *keys[] = { "p/b", "p/a", "p/c", "p0", "o/x" };
	struct ks_etcd *c;
	struct ks_etcd_range r;
	int64_t deleted = -1;
	unsigned i;
	int rc;

	kt_begin("etcd_prefix_and_delete");
	if (!need("plain", A.plain) || !(c = open_c(A.plain, LIVE_MS)))
		goto out;
	for (i = 0; i < 5; i++)
		CHECK(!ks_etcd_put(c, K(keys[i]), K(keys[i]), 0, NULL),
		      "put %s", keys[i]);
	rc = ks_etcd_range(c, K("p/"), KS_ETCD_PREFIX, &r);
	CHECK(!rc && r.n == 3 && r.count == 3, "prefix p/: rc %d n %zu", rc,
	      r.n);
	if (!rc && r.n == 3)
		CHECK(!strcmp(r.kvs[0].key, "p/a") &&
			      !strcmp(r.kvs[1].key, "p/b") &&
			      !strcmp(r.kvs[2].key, "p/c"),
		      "not in key order: %s %s %s", r.kvs[0].key, r.kvs[1].key,
		      r.kvs[2].key);
	ks_etcd_range_free(&r);
	CHECK(!ks_etcd_delete(c, K("p/"), KS_ETCD_PREFIX, &deleted) &&
		      deleted == 3,
	      "delete prefix: %lld deleted (%s)", (long long)deleted,
	      ks_etcd_errmsg(c));
	rc = ks_etcd_range(c, K("p"), KS_ETCD_PREFIX, &r);
	CHECK(!rc && r.n == 1 && !strcmp(r.kvs[0].key, "p0"),
	      "after delete: n %zu", r.n);
	ks_etcd_range_free(&r);
	CHECK(!ks_etcd_delete(c, K("p/a"), 0, &deleted) && deleted == 0,
	      "deleting an absent key: %lld", (long long)deleted);
	CHECK(!ks_etcd_delete(c, K("p0"), 0, &deleted) && deleted == 1,
	      "delete one key");
	ks_etcd_close(c);
out:
	kt_end();
}

static void t_cas(void)
{
	struct ks_etcd *c;
	int64_t rev = 0, rev2 = 0, cur = 0;
	int rc;
	char *v;

	kt_begin("etcd_cas_won_and_lost");
	if (!need("plain", A.plain) || !(c = open_c(A.plain, LIVE_MS)))
		goto out;
	ks_etcd_delete(c, K("cas/k"), 0, NULL);
	rc = ks_etcd_put_if(c, K("cas/k"), K("v1"), 0, 0, &rev);
	CHECK(!rc && rev > 0, "create-if-absent on an absent key: %d %s", rc,
	      ks_etcd_errmsg(c));
	rc = ks_etcd_put_if(c, K("cas/k"), K("v2"), 0, 0, &cur);
	CHECK(rc == -ESTALE && cur == rev,
	      "create-if-absent on a present key: %d, cur %lld want %lld", rc,
	      (long long)cur, (long long)rev);
	CHECK(strstr(ks_etcd_errmsg(c), "compare-and-swap lost"), "message: %s",
	      ks_etcd_errmsg(c));
	rc = ks_etcd_put_if(c, K("cas/k"), K("v3"), 0, rev, &rev2);
	CHECK(!rc && rev2 > rev, "CAS on the right mod_revision: %d %s", rc,
	      ks_etcd_errmsg(c));
	rc = ks_etcd_put_if(c, K("cas/k"), K("v4"), 0, rev, &cur);
	CHECK(rc == -ESTALE && cur == rev2,
	      "CAS on a stale mod_revision: %d cur %lld", rc, (long long)cur);
	v = get(c, "cas/k", NULL);
	CHECK(v && !strcmp(v, "v3"), "value %s, want v3 (a lost CAS wrote)",
	      v ? v : "-");
	free(v);
	ks_etcd_close(c);
out:
	kt_end();
}

/* Two processes, two clients, the same mod_revision, released together. */
static void t_cas_race(void)
{
	struct ks_etcd *c;
	int round, bad = 0, rounds = 20;

	kt_begin("etcd_cas_race_one_winner");
	if (!need("plain", A.plain) || !(c = open_c(A.plain, 3000)))
		goto out;
	for (round = 0; round < rounds; round++) {
		int go[2], st[2], won = 0, lost = 0, i;
		struct ks_etcd_kv m = {};
		pid_t kid[2];
		char *v, want[8];

		CHECK(!ks_etcd_put(c, K("race/k"), K("start"), 0, NULL), "put");
		free(get(c, "race/k", &m));
		if (pipe(go))
			break;
		for (i = 0; i < 2; i++) {
			kid[i] = fork();
			if (kid[i] == 0) {
				struct ks_etcd_opts o = {
					.endpoints = A.plain,
					.timeout_ms = LIVE_MS
				};
				struct ks_etcd *cc;
				char err[256], val[8], b;
				int rc;

				close(go[1]);
				if (ks_etcd_open(&cc, &o, err, sizeof(err)))
					_exit(3);
				ks_etcd_status(
					cc, NULL,
					0); /* connected before the start */
				if (read(go[0], &b, 1) != 0)
					_exit(3);
				snprintf(val, sizeof(val), "w%d", i);
				rc = ks_etcd_put_if(cc, K("race/k"), K(val), 0,
						    m.mod_revision, NULL);
				ks_etcd_close(cc);
				_exit(rc == 0 ? 0 : rc == -ESTALE ? 1 : 2);
			}
		}
		close(go[0]);
		usleep(50000);
		close(go[1]); /* both read EOF at once */
		for (i = 0; i < 2; i++) {
			waitpid(kid[i], &st[i], 0);
			if (WIFEXITED(st[i]) && WEXITSTATUS(st[i]) == 0)
				won++, snprintf(want, sizeof(want), "w%d", i);
			else if (WIFEXITED(st[i]) && WEXITSTATUS(st[i]) == 1)
				lost++;
		}
		v = get(c, "race/k", NULL);
		if (won != 1 || lost != 1 || !v || strcmp(v, want)) {
			bad++;
			CHECK(0, "round %d: %d won, %d lost, value %s", round,
			      won, lost, v ? v : "-");
		}
		free(v);
	}
	CHECK(round == rounds, "only %d rounds ran", round);
	ks_etcd_close(c);
out:
	kt_end();
}

static int present(struct ks_etcd *c, const char *key)
{
	char *v = get(c, key, NULL);

	free(v);
	return v != NULL;
}

static void t_lease_expiry(void)
{
	struct ks_etcd *c;
	struct ks_etcd_kv m = {};
	int64_t id = 0, ttl = 0;
	long long t0, gone = -1;
	int rc;

	kt_begin("etcd_lease_expires");
	if (!need("plain", A.plain) || !(c = open_c(A.plain, LIVE_MS)))
		goto out;
	rc = ks_etcd_lease_grant(c, 2, &id, &ttl);
	CHECK(!rc && id && ttl == 2, "grant: %d id %lld ttl %lld %s", rc,
	      (long long)id, (long long)ttl, ks_etcd_errmsg(c));
	t0 = ms_now();
	CHECK(!ks_etcd_put(c, K("lease/k"), K("v"), id, NULL),
	      "put under lease: %s", ks_etcd_errmsg(c));
	free(get(c, "lease/k", &m));
	CHECK(m.lease == id, "the key's lease %lld, want %lld",
	      (long long)m.lease, (long long)id);
	while (ms_now() - t0 < LATE_MS(2000) + 1000) {
		if (!present(c, "lease/k")) {
			gone = ms_now() - t0;
			break;
		}
		usleep(100000);
	}
	/* not before the TTL (etcd rounds it by its 500 ms tick); late by
	 * what a loaded machine adds to etcd's expiry and to this loop */
	CHECK(gone >= 1500 && gone <= LATE_MS(2000),
	      "key gone after %lld ms, want about 2000", gone);
	rc = ks_etcd_lease_keepalive(c, id, NULL);
	CHECK(rc == -ENOENT, "keepalive of an expired lease: %d %s", rc,
	      ks_etcd_errmsg(c));
	rc = ks_etcd_put(c, K("lease/k2"), K("v"), id, NULL);
	CHECK(rc == -ENOENT, "put under an expired lease: %d %s", rc,
	      ks_etcd_errmsg(c));
	ks_etcd_close(c);
out:
	kt_end();
}

static void t_lease_keepalive(void)
{
	struct ks_etcd *c;
	int64_t id = 0, ttl = 0;
	long long t0;
	int rc, missing = 0, kept = 0;

	kt_begin("etcd_lease_keepalive_and_revoke");
	if (!need("plain", A.plain) || !(c = open_c(A.plain, LIVE_MS)))
		goto out;
	/* A 6 s TTL renewed every 500 ms: the lease lives only by the
	 * keepalives (it outlives its TTL twice over), yet a loaded machine
	 * may stall the loop for seconds without the lease running out. */
	CHECK(!ks_etcd_lease_grant(c, 6, &id, NULL), "grant: %s",
	      ks_etcd_errmsg(c));
	CHECK(!ks_etcd_put(c, K("lease/kept"), K("v"), id, NULL), "put: %s",
	      ks_etcd_errmsg(c));
	t0 = ms_now();
	while (ms_now() - t0 < 13000) { /* over two TTLs */
		rc = ks_etcd_lease_keepalive(c, id, &ttl);
		if (!rc && ttl == 6)
			kept++;
		else
			CHECK(0, "keepalive: %d ttl %lld %s", rc,
			      (long long)ttl, ks_etcd_errmsg(c));
		missing += !present(c, "lease/kept");
		usleep(500000);
	}
	CHECK(kept >= 3 && !missing, "%d keepalives, key missing %d times",
	      kept, missing);
	CHECK(!ks_etcd_lease_revoke(c, id), "revoke: %s", ks_etcd_errmsg(c));
	CHECK(!present(c, "lease/kept"), "key still there after revoke");
	rc = ks_etcd_lease_revoke(c, id);
	CHECK(rc == -ENOENT, "revoking twice: %d %s", rc, ks_etcd_errmsg(c));
	ks_etcd_close(c);
out:
	kt_end();
}

/* Drives w until it has want events or ms pass; returns how many it got. */
static int watch_collect(struct ks_etcd_watch *w, struct ks_etcd_event *evs,
			 int want, int ms, int *errors)
{
	long long end = ms_now() + ms;
	int got = 0;

	while (got < want && ms_now() < end) {
		struct pollfd p = { .fd = ks_etcd_watch_fd(w),
				    .events = POLLIN };
		int t = ks_etcd_watch_timeout_ms(w),
		    left = (int)(end - ms_now());
		int rc;

		if (t < 0 || t > left)
			t = left > 0 ? left : 0;
		poll(&p, 1, t);
		rc = ks_etcd_watch_run(w);
		if (rc < 0 && errors)
			(*errors)++;
		while (got < want && ks_etcd_watch_next(w, &evs[got]) == 1)
			got++;
	}
	return got;
}

static void wait_created(struct ks_etcd_watch *w, int ms)
{
	long long end = ms_now() + ms;

	while (!ks_etcd_watch_created(w) && ms_now() < end) {
		struct pollfd p = { .fd = ks_etcd_watch_fd(w),
				    .events = POLLIN };
		int t = ks_etcd_watch_timeout_ms(w);

		poll(&p, 1, t < 0 || t > 100 ? 100 : t);
		ks_etcd_watch_run(w);
	}
}

static void free_events(struct ks_etcd_event *evs, int n)
{
	while (n-- > 0)
		ks_etcd_event_free(&evs[n]);
}

static void t_watch(const char *name, const char *eps)
{
	struct ks_etcd_event evs[8] = {};
	struct ks_etcd_watch *w = NULL;
	struct ks_etcd *c;
	int64_t rev0 = 0, revs[5] = {};
	int got, i;

	kt_begin(name);
	if (!need("plain", A.plain) || !(c = open_c(eps, 1000)))
		goto out;
	ks_etcd_delete(c, K("w/"), KS_ETCD_PREFIX, NULL);
	/* history: four changes before the watch starts */
	CHECK(!ks_etcd_put(c, K("w/a"), K("1"), 0, &rev0), "put: %s",
	      ks_etcd_errmsg(c));
	ks_etcd_put(c, K("w/b"), K("2"), 0, &revs[1]);
	ks_etcd_put(c, K("x/outside"), K("-"), 0, NULL);
	ks_etcd_delete(c, K("w/a"), 0, NULL);
	ks_etcd_put(c, K("w/a"), K("3"), 0, &revs[3]);
	CHECK(!ks_etcd_watch_start(c, K("w/"), KS_ETCD_PREFIX, rev0, &w),
	      "watch: %s", ks_etcd_errmsg(c));
	if (!w)
		goto close;
	got = watch_collect(w, evs, 4, 5000, NULL);
	CHECK(got == 4, "%d events of the history, want 4 (%s)", got,
	      ks_etcd_watch_errmsg(w));
	if (got == 4) {
		CHECK(evs[0].type == KS_ETCD_EV_PUT &&
			      !strcmp(evs[0].kv.key, "w/a") &&
			      !strcmp(evs[0].kv.value, "1") &&
			      evs[0].kv.mod_revision == rev0,
		      "event 0: %d %s", evs[0].type, evs[0].kv.key);
		CHECK(evs[1].type == KS_ETCD_EV_PUT &&
			      !strcmp(evs[1].kv.key, "w/b") &&
			      evs[1].kv.mod_revision == revs[1],
		      "event 1: %d %s", evs[1].type, evs[1].kv.key);
		CHECK(evs[2].type == KS_ETCD_EV_DELETE &&
			      !strcmp(evs[2].kv.key, "w/a"),
		      "event 2: type %d key %s, want a delete of w/a",
		      evs[2].type, evs[2].kv.key);
		CHECK(evs[3].type == KS_ETCD_EV_PUT &&
			      !strcmp(evs[3].kv.value, "3") &&
			      evs[3].kv.mod_revision == revs[3],
		      "event 3: %d %s", evs[3].type,
		      evs[3].kv.value ? evs[3].kv.value : "-");
		for (i = 1; i < 4; i++)
			CHECK(evs[i].kv.mod_revision >
				      evs[i - 1].kv.mod_revision,
			      "revisions out of order at %d", i);
	}
	free_events(evs, got);
	/* live: a put and a delete after the watch is established */
	wait_created(w, 3000);
	ks_etcd_put(c, K("w/live"), K("4"), 0, &revs[4]);
	ks_etcd_delete(c, K("w/live"), 0, NULL);
	got = watch_collect(w, evs, 2, 3000, NULL);
	CHECK(got == 2 && evs[0].type == KS_ETCD_EV_PUT &&
		      evs[0].kv.mod_revision == revs[4] &&
		      evs[1].type == KS_ETCD_EV_DELETE &&
		      !strcmp(evs[1].kv.key, "w/live"),
	      "live events: got %d", got);
	free_events(evs, got);
	ks_etcd_watch_stop(w);
	/* from now: only what comes after */
	CHECK(!ks_etcd_watch_start(c, K("w/b"), 0, 0, &w), "watch from now");
	wait_created(w, 3000);
	CHECK(ks_etcd_watch_created(w), "not created: %s",
	      ks_etcd_watch_errmsg(w));
	ks_etcd_put(c, K("w/b"), K("5"), 0, NULL);
	got = watch_collect(w, evs, 2, 1000, NULL);
	CHECK(got == 1 && !strcmp(evs[0].kv.value, "5"), "from now: %d events",
	      got);
	free_events(evs, got);
	ks_etcd_watch_stop(w);
close:
	ks_etcd_close(c);
out:
	kt_end();
}

static void t_failover(void)
{
	char eps[600];
	struct ks_etcd *c;
	long long t0;
	int rc;

	kt_begin("etcd_failover_first_down");
	if (!need("plain", A.plain) || !need("down", A.down))
		goto out;
	snprintf(eps, sizeof(eps), "%s,%s", A.down, A.plain);
	if (!(c = open_c(eps, LIVE_MS)))
		goto out;
	rc = ks_etcd_put(c, K("fo/k"), K("v"), 0, NULL);
	CHECK(!rc, "put with the first endpoint down: %s", ks_etcd_errmsg(c));
	CHECK(strstr(A.plain, ks_etcd_endpoint(c)) ||
		      strstr(ks_etcd_endpoint(c), "127.0.0.1"),
	      "in use: %s", ks_etcd_endpoint(c));
	ks_etcd_close(c);
	kt_end();

	kt_begin("etcd_failover_first_blackholed");
	if (!need("blackhole", A.blackhole))
		goto out;
	snprintf(eps, sizeof(eps), "%s,%s", A.blackhole, A.plain);
	if (!(c = open_c(eps, 1000)))
		goto out;
	t0 = ms_now();
	rc = ks_etcd_put(c, K("fo/k"), K("v2"), 0, NULL);
	t0 = ms_now() - t0;
	CHECK(!rc, "put with the first endpoint blackholed: %s",
	      ks_etcd_errmsg(c));
	CHECK(t0 <= LATE_MS(1000), "took %lld ms, the deadline is 1000", t0);
	ks_etcd_close(c);
out:
	kt_end();
}

static void unreachable_case(const char *name, const char *eps, int timeout,
			     int want1, int want2, const char *word)
{
	struct ks_etcd *c;
	long long t0, took, took2;
	uint64_t calls0, wait0, calls1, wait1;
	int rc;

	kt_begin(name);
	if (!eps) {
		kt_skipf("no endpoint for it");
		kt_end();
		return;
	}
	if (!(c = open_c(eps, timeout))) {
		kt_end();
		return;
	}
	ks_etcd_thread_waits(&calls0, &wait0);
	t0 = ms_now();
	rc = ks_etcd_status(c, NULL, 0);
	took = ms_now() - t0;
	CHECK(rc == want1 || rc == want2, "status: %d (%s)", rc,
	      ks_etcd_errmsg(c));
	CHECK(took >= timeout - 50 || rc != -ETIMEDOUT,
	      "timed out after %lld ms, before the deadline %d", took, timeout);
	CHECK(took <= LATE_MS(timeout), "took %lld ms, the deadline is %d",
	      took, timeout);
	CHECK(strstr(ks_etcd_errmsg(c), word) &&
		      !strchr(ks_etcd_errmsg(c), '\n'),
	      "message lacks '%s': %s", word, ks_etcd_errmsg(c));
	t0 = ms_now();
	rc = ks_etcd_put(c, K("x"), K("y"), 0, NULL);
	took2 = ms_now() - t0;
	CHECK((rc == want1 || rc == want2) && took2 <= LATE_MS(timeout) &&
		      (took2 >= timeout - 50 || rc != -ETIMEDOUT),
	      "put: %d in %lld ms", rc, took2);
	/* the thread's waits (what the agent's loop prints): both calls,
	 * each its whole time, within the clocks' ms rounding */
	ks_etcd_thread_waits(&calls1, &wait1);
	CHECK(calls1 - calls0 == 2 &&
		      (long long)((wait1 - wait0) / 1000000) <=
			      took + took2 + 2 &&
		      (long long)((wait1 - wait0) / 1000000) + 2 >=
			      (took + took2) / 2,
	      "the thread's waits: %llu calls, %llu ms; the calls took %lld ms",
	      (unsigned long long)(calls1 - calls0),
	      (unsigned long long)((wait1 - wait0) / 1000000), took + took2);
	ks_etcd_close(c);
	kt_end();
}

static void t_unreachable(void)
{
	char url[64], eps[600] = "";
	int fd = kt_loopback_listener(url, sizeof(url));
	struct ks_etcd_watch *w = NULL;
	struct ks_etcd *c;
	long long t0;
	int rc = 0;

	unreachable_case("etcd_unreachable_refused", A.down, 500, -EHOSTUNREACH,
			 -EHOSTUNREACH, "refused");
	unreachable_case("etcd_unreachable_blackholed", A.blackhole, 500,
			 -EHOSTUNREACH, -ETIMEDOUT, "500 ms");
	unreachable_case("etcd_unreachable_silent_server", fd >= 0 ? url : NULL,
			 500, -ETIMEDOUT, -ETIMEDOUT,
			 "did not answer within 500 ms");
	if (A.down && A.blackhole)
		snprintf(eps, sizeof(eps), "%s,%s", A.blackhole, A.down);
	unreachable_case("etcd_unreachable_all_endpoints", eps[0] ? eps : NULL,
			 600, -EHOSTUNREACH, -EHOSTUNREACH,
			 "no etcd endpoint reachable");

	kt_begin("etcd_watch_unreachable_reported");
	if (need("down", A.down) && (c = open_c(A.down, 500))) {
		CHECK(!ks_etcd_watch_start(c, K("k"), 0, 0, &w), "start");
		t0 = ms_now();
		while (w && ms_now() - t0 < LATE_MS(500) + 1000) {
			struct pollfd p = { .fd = ks_etcd_watch_fd(w),
					    .events = POLLIN };
			int t = ks_etcd_watch_timeout_ms(w);

			poll(&p, 1, t < 0 || t > 100 ? 100 : t);
			if ((rc = ks_etcd_watch_run(w)) < 0)
				break;
		}
		CHECK(rc == -EHOSTUNREACH && ms_now() - t0 <= LATE_MS(500),
		      "watch run: %d after %lld ms (%s)", rc, ms_now() - t0,
		      w ? ks_etcd_watch_errmsg(w) : "-");
		ks_etcd_watch_stop(w);
		ks_etcd_close(c);
	}
	kt_end();
	if (fd >= 0)
		close(fd);
}

static void t_auth(void)
{
	struct ks_etcd_opts o = { .endpoints = A.auth,
				  .user = "root",
				  .password = A.password,
				  .timeout_ms = LIVE_MS };
	struct ks_etcd_event ev[2] = {};
	struct ks_etcd_watch *w = NULL;
	struct ks_etcd *c = NULL;
	char err[256], ver[32] = "";
	int rc, got;

	kt_begin("etcd_auth_password");
	if (!need("auth", A.auth))
		goto out;
	rc = ks_etcd_open(&c, &o, err, sizeof(err));
	CHECK(!rc, "open: %s", err);
	if (rc)
		goto out;
	rc = ks_etcd_status(c, ver, sizeof(ver));
	CHECK(!rc && !strncmp(ver, "3.4", 3), "status: %d %s (version %s)", rc,
	      ks_etcd_errmsg(c), ver);
	CHECK(!ks_etcd_put(c, K("auth/k"), K("v"), 0, NULL), "put: %s",
	      ks_etcd_errmsg(c));
	free(get(c, "auth/k", NULL));
	/* the etcd's tokens live 2 s (--auth-token-ttl 2): the next call
	 * finds its token invalid and authenticates again by itself */
	sleep(3);
	rc = ks_etcd_put(c, K("auth/k"), K("v2"), 0, NULL);
	CHECK(!rc, "put after the token expired: %d %s", rc, ks_etcd_errmsg(c));
	rc = ks_etcd_watch_start(c, K("auth/k"), 0, 0, &w);
	CHECK(!rc, "watch: %s", ks_etcd_errmsg(c));
	if (w) {
		wait_created(w, 3000);
		ks_etcd_put(c, K("auth/k"), K("v3"), 0, NULL);
		got = watch_collect(w, ev, 1, 3000, NULL);
		CHECK(got == 1 && !strcmp(ev[0].kv.value, "v3"),
		      "watch under auth: %d (%s)", got,
		      ks_etcd_watch_errmsg(w));
		free_events(ev, got);
		ks_etcd_watch_stop(w);
	}
	ks_etcd_close(c);
	kt_end();

	kt_begin("etcd_auth_wrong_password");
	o.password = "not-the-password";
	if (!ks_etcd_open(&c, &o, err, sizeof(err))) {
		rc = ks_etcd_status(c, NULL, 0);
		CHECK(rc == -EACCES &&
			      strstr(ks_etcd_errmsg(c), "user and password"),
		      "status: %d %s", rc, ks_etcd_errmsg(c));
		rc = ks_etcd_put(c, K("auth/k"), K("x"), 0, NULL);
		CHECK(rc == -EACCES, "put: %d %s", rc, ks_etcd_errmsg(c));
		ks_etcd_close(c);
	}
	kt_end();

	kt_begin("etcd_auth_none_given");
	o.user = o.password = NULL;
	if (!ks_etcd_open(&c, &o, err, sizeof(err))) {
		rc = ks_etcd_put(c, K("auth/k"), K("x"), 0, NULL);
		CHECK(rc == -EACCES && strstr(ks_etcd_errmsg(c), "no user"),
		      "put: %d %s", rc, ks_etcd_errmsg(c));
		ks_etcd_close(c);
	}
out:
	kt_end();
}

static void t_tls(void)
{
	struct ks_etcd_opts o = { .endpoints = A.tls,
				  .ca_file = A.ca,
				  .cert_file = A.cert,
				  .key_file = A.key,
				  .timeout_ms = LIVE_MS };
	struct ks_etcd *c = NULL;
	char err[256], *v;
	int rc;

	kt_begin("etcd_tls_client_cert");
	if (!need("tls", A.tls))
		goto out;
	rc = ks_etcd_open(&c, &o, err, sizeof(err));
	CHECK(!rc, "open: %s", err);
	if (rc)
		goto out;
	CHECK(!ks_etcd_put(c, K("tls/k"), K("v"), 0, NULL), "put: %s",
	      ks_etcd_errmsg(c));
	v = get(c, "tls/k", NULL);
	CHECK(v && !strcmp(v, "v"), "range");
	free(v);
	ks_etcd_close(c);
	kt_end();

	kt_begin("etcd_tls_without_client_cert");
	o.cert_file = o.key_file = NULL;
	if (!ks_etcd_open(&c, &o, err, sizeof(err))) {
		rc = ks_etcd_status(c, NULL, 0);
		CHECK(rc == -EACCES && strstr(ks_etcd_errmsg(c), "TLS") &&
			      strstr(ks_etcd_errmsg(c), "certificate"),
		      "status: %d %s", rc, ks_etcd_errmsg(c));
		ks_etcd_close(c);
	}
	kt_end();

	kt_begin("etcd_tls_wrong_ca");
	o.cert_file = A.cert;
	o.key_file = A.key;
	o.ca_file = A.other_ca;
	if (!ks_etcd_open(&c, &o, err, sizeof(err))) {
		rc = ks_etcd_status(c, NULL, 0);
		CHECK(rc == -EACCES && strstr(ks_etcd_errmsg(c), "TLS"),
		      "status: %d %s", rc, ks_etcd_errmsg(c));
		ks_etcd_close(c);
	}
	kt_end();

	kt_begin("etcd_tls_options_refused");
	o.endpoints = A.plain ? A.plain : "http://127.0.0.1:2379";
	o.ca_file = A.ca;
	rc = ks_etcd_open(&c, &o, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "http://"),
	      "TLS files with http://: %d %s", rc, err);
	o.endpoints = A.tls;
	o.key_file = NULL;
	rc = ks_etcd_open(&c, &o, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "both"),
	      "a certificate without a key: %d %s", rc, err);
	o.key_file = "/nonexistent/key.pem";
	rc = ks_etcd_open(&c, &o, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "/nonexistent/key.pem"),
	      "unreadable key: %d %s", rc, err);
	o = (struct ks_etcd_opts){ .endpoints = "http://127.0.0.1:2379/v3" };
	rc = ks_etcd_open(&c, &o, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "a path"),
	      "a URL with a path: %d %s", rc, err);
out:
	kt_end();
}

/* ---- an etcd this program starts, kills and starts again ---- */

static pid_t etcd_spawn(void)
{
	char data[512], curl[64], purl[64], init[96], pidf[512];
	pid_t pid;
	FILE *f;

	snprintf(data, sizeof(data), "%s/restart.data", A.dir);
	snprintf(curl, sizeof(curl), "http://127.0.0.1:%d", A.restart_port);
	snprintf(purl, sizeof(purl), "http://127.0.0.1:%d", A.restart_port + 1);
	snprintf(init, sizeof(init), "r=%s", purl);
	pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, 1);
		dup2(fd, 2);
		execl(A.etcd_bin, A.etcd_bin, "--name", "r", "--data-dir", data,
		      "--listen-client-urls", curl, "--advertise-client-urls",
		      curl, "--listen-peer-urls", purl,
		      "--initial-advertise-peer-urls", purl,
		      "--initial-cluster", init, (char *)NULL);
		_exit(127);
	}
	snprintf(pidf, sizeof(pidf), "%s/restart.pid", A.dir);
	if (pid > 0 && (f = fopen(pidf, "w"))) {
		fprintf(f, "%d\n", (int)pid);
		fclose(f);
	}
	return pid;
}

static void etcd_kill(void)
{
	if (restart_pid > 0) {
		kill(restart_pid, SIGKILL);
		waitpid(restart_pid, NULL, 0);
		restart_pid = 0;
	}
}

static int etcd_up(struct ks_etcd *c, int ms)
{
	long long end = ms_now() + ms;

	while (ms_now() < end) {
		if (!ks_etcd_status(c, NULL, 0))
			return 1;
		usleep(100000);
	}
	return 0;
}

static void t_watch_restart(void)
{
	struct ks_etcd_event evs[8] = {};
	struct ks_etcd_watch *w = NULL;
	struct ks_etcd *c = NULL;
	char url[64];
	int got, errors = 0, i;

	kt_begin("etcd_watch_survives_restart");
	if (!A.etcd_bin || !A.dir) {
		kt_skipf("no --etcd-bin and --dir");
		goto out;
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", A.restart_port);
	restart_pid = etcd_spawn();
	if (!(c = open_c(url, 500)))
		goto out;
	if (!etcd_up(c, 10000)) {
		CHECK(0, "the etcd did not come up: %s", ks_etcd_errmsg(c));
		goto out;
	}
	CHECK(!ks_etcd_watch_start(c, K("r/"), KS_ETCD_PREFIX, 0, &w), "watch");
	if (!w)
		goto out;
	wait_created(w, 3000);
	ks_etcd_put(c, K("r/1"), K("before"), 0, NULL);
	got = watch_collect(w, evs, 1, 2000, NULL);
	CHECK(got == 1, "before the restart: %d events", got);
	free_events(evs, got);
	etcd_kill();
	/* down for 2 s: the watch reports it and keeps trying */
	got = watch_collect(w, evs, 1, 2000, &errors);
	CHECK(got == 0 && errors >= 1, "while down: %d events, %d errors", got,
	      errors);
	restart_pid = etcd_spawn();
	if (!etcd_up(c, 10000)) {
		CHECK(0, "the etcd did not come back: %s", ks_etcd_errmsg(c));
		goto out;
	}
	/* written right away: the watch may not be back yet; it must
	 * resume from the revision after the last event, losing nothing */
	ks_etcd_put(c, K("r/2"), K("after1"), 0, NULL);
	ks_etcd_put(c, K("r/3"), K("after2"), 0, NULL);
	got = watch_collect(w, evs, 3, 5000, NULL);
	CHECK(got == 2, "after the restart: %d events, want 2 (%s)", got,
	      ks_etcd_watch_errmsg(w));
	for (i = 0; i < got; i++)
		CHECK(!strcmp(evs[i].kv.key, i ? "r/3" : "r/2"), "event %d: %s",
		      i, evs[i].kv.key);
	free_events(evs, got);
out:
	ks_etcd_watch_stop(w);
	ks_etcd_close(c);
	etcd_kill();
	kt_end();
}

static void on_signal(int sig)
{
	if (restart_pid > 0)
		kill(restart_pid, SIGKILL);
	_exit(128 + sig);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "plain", 1, 0, 'p' },        { "down", 1, 0, 'd' },
		{ "blackhole", 1, 0, 'b' },    { "auth", 1, 0, 'a' },
		{ "password", 1, 0, 'w' },     { "tls", 1, 0, 't' },
		{ "ca", 1, 0, 'c' },           { "cert", 1, 0, 'e' },
		{ "key", 1, 0, 'k' },          { "other-ca", 1, 0, 'o' },
		{ "etcd-bin", 1, 0, 'x' },     { "dir", 1, 0, 'D' },
		{ "restart-port", 1, 0, 'r' }, {}
	};
	char eps[600];
	int opt;

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'p':
			A.plain = optarg;
			break;
		case 'd':
			A.down = optarg;
			break;
		case 'b':
			A.blackhole = optarg;
			break;
		case 'a':
			A.auth = optarg;
			break;
		case 'w':
			A.password = optarg;
			break;
		case 't':
			A.tls = optarg;
			break;
		case 'c':
			A.ca = optarg;
			break;
		case 'e':
			A.cert = optarg;
			break;
		case 'k':
			A.key = optarg;
			break;
		case 'o':
			A.other_ca = optarg;
			break;
		case 'x':
			A.etcd_bin = optarg;
			break;
		case 'D':
			A.dir = optarg;
			break;
		case 'r':
			A.restart_port = atoi(optarg);
			break;
		default:
			fprintf(stderr,
				"etcd_test: see the comment at the top of tests/etcd/etcd_test.c\n");
			return 2;
		}
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGALRM, on_signal);
	alarm(240); /* a hang ends here, the restart etcd with it */
	setvbuf(stdout, NULL, _IOLBF, 0);
	t_put_range();
	t_prefix();
	t_cas();
	t_cas_race();
	t_lease_expiry();
	t_lease_keepalive();
	t_pub(A.plain);
	t_pub_keeper(A.plain);
	t_pub_ordered(A.plain);
	t_watch("etcd_watch_in_order_from_revision", A.plain ? A.plain : "");
	snprintf(eps, sizeof(eps), "%s,%s", A.down ? A.down : "",
		 A.plain ? A.plain : "");
	if (A.down && A.plain)
		t_watch("etcd_watch_failover", eps);
	t_failover();
	t_unreachable();
	t_auth();
	t_tls();
	t_watch_restart();
	return kt_summary("etcd");
}
