// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The memcached client against real memcached processes, a silent
 * listener and a scripted fake server, all in a private network namespace.
 *
 * The namespace needs its own process, so the cases run in a forked child
 * that reports each case over a pipe ("B i" at its start, "E i failed
 * skipped why" at its end); the parent prints the lines. A child that dies
 * mid-case becomes a FAIL for that case and for the cases it never ran, and
 * the parent stops the memcached processes the child announced ("M pid",
 * "Z pid" once stopped), by pid.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "kt_netns.h"
#include "ktest.h"
#include "core/purge.h"
#include "net/mc_client.h"
#include "unit.h"

#define PORT_OWNER  11211
#define PORT_R1     11212
#define PORT_R2     11213
#define PORT_SILENT 11298 /* listens, never reads */
#define PORT_NONE   11299 /* nothing listens: connect is refused */
#define PORT_FAKE   11297 /* a scripted reply */
/* A guard for live servers: a reply ends the wait, so it is long enough
 * for a loaded 2-core machine and costs nothing when all is well. */
#define TIMEOUT_MS 30000
/* The limit t_timeout measures, and the room above it for a loaded machine
 * (at load 35 a process was seen to wait 6 s for the CPU). */
#define SILENT_LIMIT_MS 1000
#define SILENT_ROOM_MS  20000
#define CHILD_LIMIT_S   300 /* the whole group; SIGALRM ends a hang */
#define MAX_PIDS        8

#define KEY(s) (const __u8 *)(s), strlen(s)

struct mc_env {
	int report;  /* pipe to the parent */
	pid_t mc[3]; /* owner, r1, r2 */
	struct ks_mc_conn owner, r1, r2;
};

static __u64 ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000 + (__u64)ts.tv_nsec / 1000000;
}

static const union ks_inaddr *lo(void)
{
	static union ks_inaddr a;

	a.v4 = htonl(INADDR_LOOPBACK);
	return &a;
}

static const union ks_inaddr *lo6(void)
{
	static union ks_inaddr a;

	memcpy(a.v6, &in6addr_loopback, 16);
	return &a;
}

/* Stores value/flags through the client; the test fails if it cannot. */
static void put(struct ks_mc_conn *c, const char *key, const char *val,
		size_t len, __u32 flags, long ttl)
{
	struct ks_mc_item it = { .value = (char *)val,
				 .len = len,
				 .flags = flags };
	int err = ks_mc_store(c, KEY(key), &it, ttl);

	CHECK(!err, "store %s: %s", key, strerror(-err));
}

static void t_fetch(struct mc_env *e)
{
	struct ks_mc_item it;
	int err;

	put(&e->owner, "k:forever", "hello", 5, 42, 0);
	put(&e->owner, "k:ttl", "x", 1, 0xffffffffu, 100);
	err = ks_mc_fetch(&e->owner, KEY("k:forever"), &it);
	CHECK(!err && it.found && it.len == 5 && !memcmp(it.value, "hello", 5),
	      "hit: err %d found %d len %zu", err, it.found, it.len);
	CHECK(it.flags == 42 && it.ttl == -1, "flags %u ttl %ld, want 42 -1",
	      it.flags, it.ttl);
	ks_mc_item_free(&it);
	err = ks_mc_fetch(&e->owner, KEY("k:ttl"), &it);
	CHECK(!err && it.found && it.flags == 0xffffffffu, "flags %u",
	      it.flags);
	CHECK(it.ttl >= 98 && it.ttl <= 100, "ttl %ld, want 98..100", it.ttl);
	ks_mc_item_free(&it);
	err = ks_mc_fetch(&e->owner, KEY("k:absent"), &it);
	CHECK(!err && !it.found && !it.value, "miss: err %d found %d", err,
	      it.found);
	ks_mc_close(&e->owner);
	ks_mc_close(&e->owner); /* twice is fine */
	err = ks_mc_fetch(&e->owner, KEY("k:forever"), &it);
	CHECK(!err && it.found, "fetch after close: %d", err);
	ks_mc_item_free(&it);
}

static void t_store(struct mc_env *e)
{
	struct ks_mc_item it;
	int err;

	put(&e->r1, "k:store", "first", 5, 1, 0);
	put(&e->r1, "k:store", "second!", 7, 2, 60);
	err = ks_mc_fetch(&e->r1, KEY("k:store"), &it);
	CHECK(!err && it.found && it.len == 7 && !strcmp(it.value, "second!"),
	      "fetch back: err %d len %zu", err, it.len);
	CHECK(it.flags == 2 && it.ttl > 55 && it.ttl <= 60, "flags %u ttl %ld",
	      it.flags, it.ttl);
	ks_mc_item_free(&it);
	put(&e->r1, "k:empty", NULL, 0, 9, 0);
	err = ks_mc_fetch(&e->r1, KEY("k:empty"), &it);
	CHECK(!err && it.found && it.len == 0 && it.flags == 9,
	      "empty value: err %d found %d len %zu", err, it.found, it.len);
	ks_mc_item_free(&it);
	CHECK(!ks_mc_delete(&e->r1, KEY("k:store")), "delete hit");
	CHECK(!ks_mc_delete(&e->r1, KEY("k:store")),
	      "delete miss is not an error");
	err = ks_mc_fetch(&e->r1, KEY("k:store"), &it);
	CHECK(!err && !it.found, "deleted key still there");
}

static void t_binary(struct mc_env *e)
{
	static const char val[] = "a\r\nEND\r\n\0VALUE x 0 1\r\nEN\r\n";
	struct ks_mc_item it;
	int err;

	put(&e->owner, "k:bin", val, sizeof(val), 3, 0);
	err = ks_mc_fetch(&e->owner, KEY("k:bin"), &it);
	CHECK(!err && it.len == sizeof(val) &&
		      !memcmp(it.value, val, sizeof(val)),
	      "binary value: err %d len %zu", err, it.len);
	ks_mc_item_free(&it);
	/* The stream is still in step: the next reply is the next key's. */
	put(&e->owner, "k:after", "ok", 2, 0, 0);
	err = ks_mc_fetch(&e->owner, KEY("k:after"), &it);
	CHECK(!err && it.len == 2 && !memcmp(it.value, "ok", 2), "after: %d",
	      err);
	ks_mc_item_free(&it);
}

static char *pattern(size_t len)
{
	char *v = malloc(len);
	size_t i;

	for (i = 0; v && i < len; i++)
		v[i] = (char)(i * 131 + (i >> 9)); /* \r and \n included */
	return v;
}

/* memcached's default 1 MiB item limit includes the item header and
 * key, so the largest value it takes is a little under 1 MiB. */
static void t_large(struct mc_env *e)
{
	size_t near = KS_MC_VALUE_MAX - 1024;
	char *v = pattern(KS_MC_VALUE_MAX + 1);
	struct ks_mc_item it = { .value = v, .len = near, .flags = 5 }, got;
	struct ks_mc_conn fresh;
	int err;

	if (!v) {
		CHECK(0, "out of memory");
		return;
	}
	err = ks_mc_store(&e->r2, KEY("k:big"), &it, 0);
	CHECK(!err, "store %zu bytes: %s", near, strerror(-err));
	err = ks_mc_fetch(&e->r2, KEY("k:big"), &got);
	CHECK(!err && got.len == near && !memcmp(got.value, v, near),
	      "fetch %zu bytes: err %d len %zu", near, err, got.len);
	ks_mc_item_free(&got);
	it.len = KS_MC_VALUE_MAX;
	err = ks_mc_store(&e->r2, KEY("k:big"), &it, 0);
	CHECK(err == -E2BIG,
	      "1 MiB + header over the server's -I 1m: %d, want -E2BIG", err);
	it.len = KS_MC_VALUE_MAX + 1;
	ks_mc_init(&fresh, KS_AF_INET, lo(), PORT_NONE, TIMEOUT_MS);
	err = ks_mc_store(&fresh, KEY("k:big"), &it, 0);
	CHECK(err == -E2BIG && fresh.fd < 0,
	      "over 1 MiB: %d, not refused locally", err);
	/* memcached drops the old value when it refuses a too-large one
	 * (no stale copy survives a failed refresh); the local refusal
	 * never reached it. The connection is still usable. */
	err = ks_mc_fetch(&e->r2, KEY("k:big"), &got);
	CHECK(!err && !got.found, "after a refused store: err %d found %d", err,
	      got.found);
	ks_mc_item_free(&got);
	free(v);
}

/* A one-connection server that sends reply after the request arrives
 * and holds the connection until the client closes it. */
static pid_t fake_server6(const char *reply, size_t len, int v6)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(PORT_FAKE),
				 .sin_addr.s_addr = lo()->v4 };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
				   .sin6_port = htons(PORT_FAKE),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int one = 1, ls = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0), fd;
	char buf[512];
	pid_t pid;

	if (ls < 0)
		return -1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if ((v6 ? bind(ls, (struct sockaddr *)&a6, sizeof(a6))
		: bind(ls, (struct sockaddr *)&a, sizeof(a))) ||
	    listen(ls, 1)) {
		close(ls);
		return -1;
	}
	pid = fork();
	if (pid != 0) {
		close(ls);
		return pid;
	}
	/* a guard against a hang, not a bound: it only has to outlast the
	 * client's calls, which a loaded machine can hold up for seconds */
	alarm(60);
	fd = accept(ls, NULL, NULL);
	if (fd < 0 || recv(fd, buf, sizeof(buf), 0) <= 0)
		_exit(1);
	if (len && send(fd, reply, len, MSG_NOSIGNAL) != (ssize_t)len)
		_exit(1);
	while (recv(fd, buf, sizeof(buf), 0) > 0)
		;
	_exit(0);
}

static pid_t fake_server(const char *reply, size_t len)
{
	return fake_server6(reply, len, 0);
}

/* Runs one fetch against a fake reply; the item is left for the caller. */
static int fake_fetch_within(const char *reply, size_t len,
			     struct ks_mc_item *it, int *closed, int limit_ms)
{
	struct ks_mc_conn c;
	pid_t pid = fake_server(reply, len);
	int err;

	if (pid < 0)
		return -ECHILD;
	ks_mc_init(&c, KS_AF_INET, lo(), PORT_FAKE, limit_ms);
	err = ks_mc_fetch(&c, KEY("k:fake"), it);
	*closed = c.fd < 0;
	ks_mc_close(&c);
	waitpid(pid, NULL, 0);
	return err;
}

static int fake_fetch(const char *reply, size_t len, struct ks_mc_item *it,
		      int *closed)
{
	return fake_fetch_within(reply, len, it, closed, TIMEOUT_MS);
}

/* The same client over IPv6 (::1 of the test's namespace). */
static void t_ipv6(struct mc_env *e)
{
	static const char reply[] = "VA 2 f7 t-1\r\nhi\r\n";
	struct ks_mc_item it;
	struct ks_mc_conn c;
	pid_t pid = fake_server6(reply, sizeof(reply) - 1, 1);
	int err;

	CHECK(pid > 0, "no IPv6 listener on [::1]:%u", PORT_FAKE);
	if (pid <= 0)
		return;
	ks_mc_init(&c, KS_AF_INET6, lo6(), PORT_FAKE, TIMEOUT_MS);
	err = ks_mc_fetch(&c, KEY("k:v6"), &it);
	CHECK(!err && it.found && it.len == 2 && !strcmp(it.value, "hi") &&
		      it.flags == 7,
	      "fetch over IPv6: err %d found %d", err, it.found);
	ks_mc_item_free(&it);
	ks_mc_close(&c);
	waitpid(pid, NULL, 0);
}

static void t_fake_replies(struct mc_env *e)
{
	size_t hdr = 32, n = hdr + KS_MC_VALUE_MAX + 2;
	char *r = malloc(n);
	struct ks_mc_item it;
	int err, closed;
	size_t h;

	if (!r) {
		CHECK(0, "out of memory");
		return;
	}
	/* Exactly 1 MiB: the client's limit, above memcached's default. */
	h = (size_t)snprintf(r, hdr, "VA %u f1 t-1\r\n", KS_MC_VALUE_MAX);
	memset(r + h, 'v', KS_MC_VALUE_MAX);
	memcpy(r + h + KS_MC_VALUE_MAX, "\r\n", 2);
	err = fake_fetch(r, h + KS_MC_VALUE_MAX + 2, &it, &closed);
	CHECK(!err && it.found && it.len == KS_MC_VALUE_MAX &&
		      it.value[0] == 'v' &&
		      it.value[KS_MC_VALUE_MAX - 1] == 'v',
	      "1 MiB reply: err %d len %zu", err, it.len);
	ks_mc_item_free(&it);
	h = (size_t)snprintf(r, hdr, "VA %u f1 t-1\r\n", KS_MC_VALUE_MAX + 1);
	err = fake_fetch(r, h, &it, &closed);
	CHECK(err == -E2BIG && closed && !it.value, "over 1 MiB: %d", err);
	err = fake_fetch("SERVER_ERROR busy\r\n", 19, &it, &closed);
	CHECK(err == -EPROTO && closed, "unexpected reply: %d closed %d", err,
	      closed);
	err = fake_fetch("VA 2 f1\r\nab\r\n", 13, &it, &closed);
	CHECK(err == -EPROTO, "reply without t: %d", err);
	err = fake_fetch("VA 2 f1 t5\r\nabX\n", 16, &it, &closed);
	CHECK(err == -EPROTO && !it.value, "bad value trailer: %d", err);
	/* below the fake server's 5 s alarm, which would close it */
	err = fake_fetch_within("", 0, &it, &closed, SILENT_LIMIT_MS);
	CHECK(err == -ETIMEDOUT || err == -ECONNRESET, "no reply: %d", err);
	free(r);
}

static void t_fill(struct mc_env *e)
{
	struct ks_mc_conn *reps[] = { &e->r1, &e->r2 }, down;
	struct ks_mc_conn *mixed[] = { &e->r1, &down };
	struct ks_fill_result res;
	struct ks_mc_item it;
	int err, i;

	put(&e->owner, "k:hot", "v1", 2, 7, 0);
	err = ks_fill_copies(&e->owner, reps, 2, KEY("k:hot"), 5, &res);
	CHECK(!err && res.found && res.stored == 2 && !res.failed &&
		      res.ttl == 5,
	      "fill: err %d found %d stored %u ttl %ld", err, res.found,
	      res.stored, res.ttl);
	for (i = 0; i < 2; i++) {
		err = ks_mc_fetch(reps[i], KEY("k:hot"), &it);
		CHECK(!err && it.found && it.len == 2 &&
			      !memcmp(it.value, "v1", 2) && it.flags == 7 &&
			      it.ttl >= 1 && it.ttl <= 5,
		      "replica %d: err %d flags %u ttl %ld", i, err, it.flags,
		      it.ttl);
		ks_mc_item_free(&it);
	}
	put(&e->owner, "k:short", "v2", 2, 0, 3);
	err = ks_fill_copies(&e->owner, reps, 2, KEY("k:short"), 60, &res);
	CHECK(!err && res.ttl >= 1 && res.ttl <= 3,
	      "owner's ttl 3 < cap: ttl %ld", res.ttl);
	/* One replica down: the other is still filled, the error says why. */
	ks_mc_init(&down, KS_AF_INET, lo(), PORT_NONE, TIMEOUT_MS);
	err = ks_fill_copies(&e->owner, mixed, 2, KEY("k:hot"), 5, &res);
	CHECK(err == -ECONNREFUSED && res.stored == 1 && res.failed == 1,
	      "one down: err %d stored %u failed %u", err, res.stored,
	      res.failed);
	err = ks_fill_copies(&down, reps, 2, KEY("k:hot"), 5, &res);
	CHECK(err == -ECONNREFUSED && res.failed == 2 && !res.stored,
	      "owner down: err %d failed %u", err, res.failed);
	err = ks_fill_copies(&e->owner, reps, 2, KEY("k:hot"), 0, &res);
	CHECK(err == -EINVAL, "ttl cap 0: %d", err);
}

static void t_fill_miss(struct mc_env *e)
{
	struct ks_mc_conn *reps[] = { &e->r1, &e->r2 };
	struct ks_fill_result res;
	struct ks_mc_item it;
	int err, i;

	put(&e->r1, "k:gone", "stale", 5, 0, 0);
	put(&e->r2, "k:gone", "stale", 5, 0, 0);
	ks_mc_delete(&e->owner, KEY("k:gone"));
	err = ks_fill_copies(&e->owner, reps, 2, KEY("k:gone"), 5, &res);
	CHECK(!err && !res.found && res.stored == 2 && !res.failed,
	      "fill of a miss: err %d found %d stored %u", err, res.found,
	      res.stored);
	for (i = 0; i < 2; i++) {
		err = ks_mc_fetch(reps[i], KEY("k:gone"), &it);
		CHECK(!err && !it.found,
		      "replica %d still serves the stale copy", i);
		ks_mc_item_free(&it);
	}
}

static void report_pid(struct mc_env *e, char what, pid_t pid)
{
	dprintf(e->report, "%c %d\n", what, (int)pid);
}

/* A kept connection to a server that restarted: one reconnect, no error. */
static void t_reconnect(struct mc_env *e)
{
	struct ks_mc_item it;
	int err;

	put(&e->owner, "k:before", "x", 1, 0, 0);
	CHECK(e->owner.fd >= 0, "no kept connection");
	kt_memcached_stop(e->mc[0]);
	report_pid(e, 'Z', e->mc[0]);
	e->mc[0] = kt_memcached_start(PORT_OWNER);
	if (e->mc[0] < 0) {
		CHECK(0, "restart: %s", strerror(-e->mc[0]));
		return;
	}
	report_pid(e, 'M', e->mc[0]);
	err = ks_mc_fetch(&e->owner, KEY("k:before"), &it);
	CHECK(!err && !it.found, "fetch after restart: %d (%s)", err,
	      strerror(-err));
	ks_mc_item_free(&it);
}

static void t_refused(struct mc_env *e)
{
	struct ks_mc_conn c;
	struct ks_mc_item it;
	__u64 t0 = ms_now();
	int err;

	/* A refusal is reported when it comes, not at the deadline: far
	 * below the limit, with room for a loaded machine. */
	ks_mc_init(&c, KS_AF_INET, lo(), PORT_NONE, TIMEOUT_MS);
	err = ks_mc_fetch(&c, KEY("k:x"), &it);
	CHECK(err == -ECONNREFUSED, "err %d, want -ECONNREFUSED", err);
	CHECK(ms_now() - t0 < TIMEOUT_MS / 2, "took %llu ms for a %d ms limit",
	      (unsigned long long)(ms_now() - t0), TIMEOUT_MS);
	CHECK(c.fd < 0, "fd left open");
	ks_mc_close(&c);
}

static int silent_listener(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(PORT_SILENT),
				 .sin_addr.s_addr = lo()->v4 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(fd, 4)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/*
 * Times one call against a server that accepts and never answers. The
 * bound is the property: never before the limit (the client's deadline is
 * taken after t0 on the same millisecond clock, so exactly), and it fires:
 * the upper side is a guard with room for the load, not a precision.
 */
static void expect_timeout(const char *what, int err, __u64 t0)
{
	__u64 took = ms_now() - t0;

	CHECK(err == -ETIMEDOUT, "%s: err %d, want -ETIMEDOUT", what, err);
	CHECK(took >= SILENT_LIMIT_MS &&
		      took < SILENT_LIMIT_MS + SILENT_ROOM_MS,
	      "%s: took %llu ms for a %d ms limit", what,
	      (unsigned long long)took, SILENT_LIMIT_MS);
}

static void t_timeout(struct mc_env *e)
{
	int ls = silent_listener();
	struct ks_mc_conn c;
	struct ks_mc_item it = {}, got;
	__u64 t0;

	if (ls < 0) {
		CHECK(0, "listener: %s", strerror(errno));
		return;
	}
	ks_mc_init(&c, KS_AF_INET, lo(), PORT_SILENT, SILENT_LIMIT_MS);
	t0 = ms_now();
	expect_timeout("fetch", ks_mc_fetch(&c, KEY("k:x"), &got), t0);
	CHECK(c.fd < 0, "connection kept after a timeout");
	/* A value larger than the socket buffers: the send side times out. */
	it.value = pattern(KS_MC_VALUE_MAX);
	it.len = it.value ? KS_MC_VALUE_MAX : 0;
	t0 = ms_now();
	expect_timeout("1 MiB store", ks_mc_store(&c, KEY("k:x"), &it, 0), t0);
	free(it.value);
	ks_mc_close(&c);
	close(ls);
}

static void t_bad_keys(struct mc_env *e)
{
	static const char *bad[] = { "",         "a b",  "a\r\nmg x",
				     "tab\tkey", "\x01", "del\x7f" };
	char longkey[KS_MC_KEY_MAX + 2];
	struct ks_mc_item it = { .value = "v", .len = 1 }, got;
	struct ks_mc_conn c;
	unsigned i;

	/* Nothing listens there: a client that tried to send would get
	 * -ECONNREFUSED, not -EINVAL. */
	ks_mc_init(&c, KS_AF_INET, lo(), PORT_NONE, TIMEOUT_MS);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(ks_mc_fetch(&c, KEY(bad[i]), &got) == -EINVAL,
		      "fetch bad key %u", i);
		CHECK(ks_mc_store(&c, KEY(bad[i]), &it, 0) == -EINVAL,
		      "store bad key %u", i);
		CHECK(ks_mc_delete(&c, KEY(bad[i])) == -EINVAL,
		      "delete bad key %u", i);
	}
	memset(longkey, 'k', sizeof(longkey));
	longkey[KS_MC_KEY_MAX + 1] = '\0';
	CHECK(ks_mc_fetch(&c, KEY(longkey), &got) == -EINVAL, "251-byte key");
	CHECK(ks_mc_store(&c, KEY("ok"), &it, -1) == -EINVAL, "ttl -1");
	CHECK(ks_mc_store(&c, KEY("ok"), &it, KS_MC_TTL_MAX + 1) == -EINVAL,
	      "ttl over 30 days (memcached would read a unix time)");
	CHECK(c.fd < 0, "a bad request opened a connection");
	ks_mc_close(&c);
	/* The longest legal key works end to end. */
	longkey[KS_MC_KEY_MAX] = '\0';
	put(&e->owner, longkey, "v", 1, 0, 0);
	CHECK(!ks_mc_fetch(&e->owner, KEY(longkey), &got) && got.found,
	      "250-byte key");
	ks_mc_item_free(&got);
}

/* docs/client.md: a fill's copy never lands over a newer write's
 * invalidation; the control (the unconditional store fills made before)
 * does, and a reader would take it. */
static void t_copy_protocol(struct mc_env *e)
{
	struct ks_mc_conn *reps[] = { &e->r1, &e->r2 };
	struct ks_fill_result res;
	struct ks_mc_item old, it;
	__u64 cas, cas2;
	int err;

	/* a copy present: cas read, then a write and its invalidation */
	put(&e->owner, "k:race", "v1", 2, 0, 0);
	put(&e->r1, "k:race", "v1", 2, 0, 0);
	err = ks_mc_cas(&e->r1, KEY("k:race"), &cas);
	CHECK(!err && cas, "cas of a copy: %d %llu", err,
	      (unsigned long long)cas);
	err = ks_mc_fetch(&e->owner, KEY("k:race"), &old); /* the fill's read */
	put(&e->owner, "k:race", "v2", 2, 0, 0);           /* the write... */
	err = err ? err : ks_mc_invalidate(&e->r1, KEY("k:race"), 30);
	CHECK(!err, "invalidate a copy: %d", err);
	err = ks_mc_fetch(&e->r1, KEY("k:race"), &it);
	CHECK(!err && it.found && it.stale && !ks_mc_copy_usable(&it),
	      "after the invalidation: found %d stale %d", it.found, it.stale);
	ks_mc_item_free(&it);
	err = ks_mc_store_if(&e->r1, KEY("k:race"), &old, 30, cas);
	CHECK(err == -EAGAIN, "the late fill refused: %d", err);
	err = ks_mc_fetch(&e->r1, KEY("k:race"), &it);
	CHECK(!err && !ks_mc_copy_usable(&it), "no usable old copy");
	ks_mc_item_free(&it);
	/* control: the same late fill as the store fills used to make, on
	 * the same invalidated copy, lands over the invalidation and a
	 * reader would take v1 while the owner has v2; so what refused the
	 * fill above was the CAS, not the mark alone */
	err = ks_mc_store(&e->r1, KEY("k:race"), &old, 30);
	CHECK(!err, "control: the unconditional late store: %d", err);
	err = ks_mc_fetch(&e->r1, KEY("k:race"), &it);
	CHECK(!err && ks_mc_copy_usable(&it) && it.len == 2 &&
		      !memcmp(it.value, "v1", 2),
	      "control: the copy over the invalidation serves v1: found %d "
	      "stale %d",
	      it.found, it.stale);
	ks_mc_item_free(&it);
	ks_mc_invalidate(&e->r1, KEY("k:race"), 30); /* as the write left it */
	/* no copy: the invalidation leaves a tombstone an add cannot pass */
	err = ks_mc_cas(&e->r2, KEY("k:none"), &cas);
	CHECK(!err && !cas, "no copy: cas %llu", (unsigned long long)cas);
	err = ks_mc_invalidate(&e->r2, KEY("k:none"), 30);
	CHECK(!err, "invalidate no copy: %d", err);
	err = ks_mc_fetch(&e->r2, KEY("k:none"), &it);
	CHECK(!err && it.found && it.flags == KS_MC_TOMB_FLAGS &&
		      !ks_mc_copy_usable(&it),
	      "tombstone: found %d flags %#x", it.found, it.flags);
	ks_mc_item_free(&it);
	err = ks_mc_store_if(&e->r2, KEY("k:none"), &old, 30, 0);
	CHECK(err == -EAGAIN, "the late add refused: %d", err);
	/* control: an unconditional store passes the tombstone */
	err = ks_mc_store(&e->r2, KEY("k:none"), &old, 30);
	err = err ? err : ks_mc_fetch(&e->r2, KEY("k:none"), &it);
	CHECK(!err && ks_mc_copy_usable(&it) && it.len == 2 &&
		      !memcmp(it.value, "v1", 2),
	      "control: the store over the tombstone serves v1: %d", err);
	ks_mc_item_free(&it);
	/* a fill after the invalidation replaces it with the new value */
	err = ks_fill_copies(&e->owner, reps, 2, KEY("k:race"), 30, &res);
	CHECK(!err && res.stored == 2 && !res.raced, "fill: %d stored %u", err,
	      res.stored);
	err = ks_mc_fetch(&e->r1, KEY("k:race"), &it);
	CHECK(!err && ks_mc_copy_usable(&it) && !memcmp(it.value, "v2", 2),
	      "fresh copy after the fill");
	ks_mc_item_free(&it);
	/* the cas moves with every invalidation */
	ks_mc_cas(&e->r1, KEY("k:race"), &cas);
	ks_mc_invalidate(&e->r1, KEY("k:race"), 30);
	ks_mc_cas(&e->r1, KEY("k:race"), &cas2);
	CHECK(cas2 != cas, "cas bumped: %llu -> %llu", (unsigned long long)cas,
	      (unsigned long long)cas2);
	ks_mc_item_free(&old);
}

/* Meta arithmetic as libkeysteer's counters use it, against memcached
 * 1.6: auto-create stores J and does not add D; C<cas> refuses a changed
 * item; a missing key without create, a non-number, a decrement below 0. */
static void t_arith(struct mc_env *e)
{
	struct ks_mc_arith a = { .delta = 5, .create = 1, .initial = 100 };
	__u64 v = 0, cas = 0, cas2 = 0;
	int err;

	ks_mc_delete(&e->owner, KEY("ctr"));
	err = ks_mc_arith(&e->owner, KEY("ctr"), &a, &v, &cas);
	CHECK(!err && v == 100 && cas,
	      "created: err %d value %llu (want J, "
	      "100, not 105)",
	      err, (unsigned long long)v);
	err = ks_mc_arith(&e->owner, KEY("ctr"), &a, &v, &cas2);
	CHECK(!err && v == 105 && cas2 != cas, "then +5: err %d value %llu",
	      err, (unsigned long long)v);
	a = (struct ks_mc_arith){ .delta = 1, .cas_in = cas };
	err = ks_mc_arith(&e->owner, KEY("ctr"), &a, &v, NULL);
	CHECK(err == -EAGAIN, "an old CAS: %d, want -EAGAIN", err);
	a.cas_in = cas2;
	err = ks_mc_arith(&e->owner, KEY("ctr"), &a, &v, NULL);
	CHECK(!err && v == 106, "the CAS it has: err %d value %llu", err,
	      (unsigned long long)v);
	a = (struct ks_mc_arith){ .delta = 1000, .decr = 1 };
	err = ks_mc_arith(&e->owner, KEY("ctr"), &a, &v, NULL);
	CHECK(!err && v == 0, "decrement below 0: err %d value %llu (clamps)",
	      err, (unsigned long long)v);
	a = (struct ks_mc_arith){ .delta = 1 };
	err = ks_mc_arith(&e->owner, KEY("ctr:absent"), &a, &v, NULL);
	CHECK(err == -ENOENT, "missing, no create: %d", err);
	put(&e->owner, "ctr:text", "abc", 3, 0, 0);
	err = ks_mc_arith(&e->owner, KEY("ctr:text"), &a, &v, NULL);
	CHECK(err == -EDOM, "not a number: %d, want -EDOM", err);
	/* the stream stays in step after those replies */
	err = ks_mc_arith(&e->owner, KEY("ctr"), &a, &v, NULL);
	CHECK(!err && v == 1, "after errors: err %d value %llu", err,
	      (unsigned long long)v);
	a = (struct ks_mc_arith){ .delta = 1,
				  .create = 1,
				  .initial = (1ULL << 63) + 1 };
	ks_mc_delete(&e->owner, KEY("ctr~ks1"));
	err = ks_mc_arith(&e->owner, KEY("ctr~ks1"), &a, &v, NULL);
	CHECK(!err && v == (1ULL << 63) + 1, "an offset sub-key: %llu",
	      (unsigned long long)v);
}

/* keysteer_fetch's lease (docs/client.md "Read-through"): N vivifies a
 * placeholder and hands W to one reader, Z to the rest; a plain fetch and
 * the copy protocol take the placeholder as a miss; a store with its CAS
 * replaces it, a write meanwhile wins over that store. */
static void t_lease(struct mc_env *e)
{
	struct ks_mc_item it, first, v = { .value = "db", .len = 2 };
	int err;

	ks_mc_delete(&e->owner, KEY("lease"));
	err = ks_mc_lease_get(&e->owner, KEY("lease"), 3, 0, &first);
	CHECK(!err && first.found && !first.len && first.win && !first.taken &&
		      first.cas && ks_mc_lease_placeholder(&first),
	      "the first reader: err %d found %d len %zu W %d Z %d", err,
	      first.found, first.len, first.win, first.taken);
	err = ks_mc_lease_get(&e->owner, KEY("lease"), 3, 0, &it);
	CHECK(!err && it.found && !it.win && it.taken &&
		      ks_mc_lease_placeholder(&it),
	      "the second reader: err %d W %d Z %d", err, it.win, it.taken);
	ks_mc_item_free(&it);
	err = ks_mc_fetch(&e->owner, KEY("lease"), &it);
	CHECK(!err && !it.found && !it.value && it.taken,
	      "a plain fetch took the placeholder as a value: found %d",
	      it.found);
	err = ks_mc_store_if(&e->owner, KEY("lease"), &v, 30, first.cas);
	CHECK(!err, "the winner's store: %d", err);
	err = ks_mc_lease_get(&e->owner, KEY("lease"), 3, 0, &it);
	CHECK(!err && it.found && it.len == 2 && !it.win && !it.taken &&
		      !ks_mc_lease_placeholder(&it),
	      "after the fill: err %d len %zu W %d Z %d", err, it.len, it.win,
	      it.taken);
	ks_mc_item_free(&it);
	/* a write between the lease and the fill's store wins */
	ks_mc_delete(&e->owner, KEY("lease"));
	err = ks_mc_lease_get(&e->owner, KEY("lease"), 3, 0, &first);
	CHECK(!err && first.win, "the lease again: %d", err);
	v.value = "new";
	v.len = 3;
	ks_mc_store(&e->owner, KEY("lease"), &v, 30);
	v.value = "old";
	err = ks_mc_store_if(&e->owner, KEY("lease"), &v, 30, first.cas);
	CHECK(err == -EAGAIN, "the fill stored over a write: %d", err);
	err = ks_mc_fetch(&e->owner, KEY("lease"), &it);
	CHECK(!err && it.found && !memcmp(it.value, "new", 4),
	      "the write lost: %s", it.value ? it.value : "(none)");
	ks_mc_item_free(&it);
	/* a failed fill hands the lease back: the next reader wins */
	ks_mc_delete(&e->owner, KEY("lease"));
	err = ks_mc_lease_get(&e->owner, KEY("lease"), 3, 0, &first);
	err = err ? err : ks_mc_delete_if(&e->owner, KEY("lease"), first.cas);
	CHECK(!err, "the lease handed back: %d", err);
	err = ks_mc_lease_get(&e->owner, KEY("lease"), 3, 0, &it);
	CHECK(!err && it.win, "the next reader did not win: W %d Z %d", it.win,
	      it.taken);
	ks_mc_item_free(&it);
	CHECK(ks_mc_lease_get(&e->owner, KEY("lease"), 0, 0, &it) == -EINVAL,
	      "a lease of 0 s taken");
}

/* Stale-while-revalidate against memcached 1.6.18: a write's mark bounded
 * by max_stale and by the item's own TTL, a second mark keeping the
 * first's end, a placeholder deleted rather than marked; a plain read's W
 * on a stale item handed back so a lease reader wins; the agent's fill
 * taking a stale owner item as a miss (its control copies it fresh). */
static void t_swr(struct mc_env *e)
{
	struct ks_mc_conn *reps[1] = { &e->r1 };
	struct ks_fill_opts unsafe = { .stale_as_fresh = 1 };
	struct ks_fill_result res;
	struct ks_mc_item it;
	int err;

	put(&e->owner, "swr", "old", 3, 7, 100);
	err = ks_mc_mark_stale(&e->owner, KEY("swr"), 5);
	CHECK(!err, "mark: %d", err);
	err = ks_mc_lease_get(&e->owner, KEY("swr"), 3, 0, &it);
	CHECK(!err && it.found && it.stale && it.win && it.ttl <= 5 &&
		      it.ttl >= 3 && !memcmp(it.value, "old", 4),
	      "after the mark: found %d X %d W %d ttl %ld", it.found, it.stale,
	      it.win, it.ttl);
	ks_mc_item_free(&it);
	/* a second write while stale: the first mark's end holds */
	err = ks_mc_mark_stale(&e->owner, KEY("swr"), 60);
	err = err ? err : ks_mc_fetch(&e->owner, KEY("swr"), &it);
	CHECK(!err && it.stale && it.ttl <= 5,
	      "a second mark moved the end: X %d ttl %ld", it.stale, it.ttl);
	CHECK(!ks_mc_owner_value(&it), "a stale owner item taken as a value");
	/* the plain read above got W (the second mark cleared the lease
	 * reader's): handed back, a lease reader wins */
	CHECK(it.win, "a plain read of a stale item got no W: memcached "
		      "changed, the hand-back is moot");
	err = ks_mc_hand_back(&e->owner, KEY("swr"), it.cas);
	ks_mc_item_free(&it);
	err = err ? err : ks_mc_lease_get(&e->owner, KEY("swr"), 3, 0, &it);
	CHECK(!err && it.win && it.stale && it.ttl <= 5,
	      "after the hand-back: W %d X %d ttl %ld", it.win, it.stale,
	      it.ttl);
	ks_mc_item_free(&it);
	/* the agent's fill: a stale owner item is a miss, the copy goes */
	put(&e->r1, "swr", "old", 3, 7, 100);
	err = ks_fill_copies(&e->owner, reps, 1, KEY("swr"), 30, &res);
	CHECK(!err && !res.found, "fill of a stale owner item: %d found %d",
	      err, res.found);
	err = ks_mc_fetch(&e->r1, KEY("swr"), &it);
	CHECK(!err && !it.found, "a copy of the stale value left: found %d",
	      it.found);
	ks_mc_item_free(&it);
	/* the control copies it as a fresh value a reader takes */
	err = ks_fill_copies_opts(&e->owner, reps, 1, KEY("swr"), 30, &unsafe,
				  &res);
	err = err ? err : ks_mc_fetch(&e->r1, KEY("swr"), &it);
	CHECK(!err && ks_mc_copy_usable(&it) && !memcmp(it.value, "old", 4),
	      "control: the stale value was not copied fresh (%d)", err);
	ks_mc_item_free(&it);
	/* the mark never outlives the value: 2 s left, max 60 */
	put(&e->owner, "swr:short", "v", 1, 0, 2);
	err = ks_mc_mark_stale(&e->owner, KEY("swr:short"), 60);
	err = err ? err : ks_mc_fetch(&e->owner, KEY("swr:short"), &it);
	CHECK(!err && it.stale && it.ttl <= 2, "short: X %d ttl %ld", it.stale,
	      it.ttl);
	ks_mc_item_free(&it);
	/* a lease's placeholder is deleted, never marked */
	ks_mc_delete(&e->owner, KEY("swr:ph"));
	err = ks_mc_lease_get(&e->owner, KEY("swr:ph"), 3, 0, &it);
	ks_mc_item_free(&it);
	err = err ? err : ks_mc_mark_stale(&e->owner, KEY("swr:ph"), 60);
	err = err ? err : ks_mc_lease_get(&e->owner, KEY("swr:ph"), 3, 0, &it);
	CHECK(!err && it.win && !it.stale && ks_mc_lease_placeholder(&it),
	      "a placeholder marked: W %d X %d len %zu", it.win, it.stale,
	      it.len);
	ks_mc_item_free(&it);
	CHECK(ks_mc_mark_stale(&e->owner, KEY("swr:none"), 5) == 0,
	      "a mark of nothing failed");
	CHECK(ks_mc_mark_stale(&e->owner, KEY("swr"), 0) == -EINVAL,
	      "max_stale 0 taken");
}

/* The purge's listing and deletes (agent/run_purge.c) against memcached
 * itself: metadump's "\n"-ended lines read, its URL-encoded keys decoded
 * back to the bytes stored (core/purge.c), then a pipelined "md KEY q"
 * batch closed by "mn" deletes them with one "MN" for an answer. */
static void t_metadump(struct mc_env *e)
{
	static const char *const keys[] = { "k:plain", "k,comma%pct",
					    "k:\xc3\xa9t\xc3\xa9", "k~._-" };
	const size_t nk = sizeof(keys) / sizeof(keys[0]);
	char cmd[] = "lru_crawler metadump all\r\n", batch[512], *line;
	char answers[64];
	struct ks_mc_conn d;
	__u8 key[KS_MC_KEY_MAX];
	int seen[4] = { 0 }, err = 0, fresh, busy = 0, items = 0;
	size_t i, klen, blen = 0;
	enum ks_md_line kind = KS_MD_BAD;
	struct iovec iov;

	for (i = 0; i < nk; i++)
		put(&e->r2, keys[i], "v", 1, 0, 0);
	/* memcached's own crawler may hold the LRU crawler: BUSY, retried */
	ks_mc_init(&d, KS_AF_INET, lo(), PORT_R2, TIMEOUT_MS);
	for (busy = 0; busy < 100; busy++) {
		iov = (struct iovec){ cmd, sizeof(cmd) - 1 };
		err = ks_mc_pipe_send(&d, &iov, 1, ms_now() + TIMEOUT_MS,
				      &fresh);
		if (!err)
			err = ks_mc_pipe_line_lf(&d, &line,
						 ms_now() + TIMEOUT_MS);
		if (err)
			break;
		kind = ks_metadump_line(line, strlen(line), key, &klen);
		if (kind != KS_MD_BUSY)
			break;
		ks_mc_close(&d);
		usleep(50000);
	}
	while (!err && kind == KS_MD_ITEM) {
		items++;
		for (i = 0; i < nk; i++)
			if (klen == strlen(keys[i]) &&
			    !memcmp(key, keys[i], klen))
				seen[i]++;
		err = ks_mc_pipe_line_lf(&d, &line, ms_now() + TIMEOUT_MS);
		if (!err)
			kind = ks_metadump_line(line, strlen(line), key, &klen);
	}
	CHECK(!err && kind == KS_MD_END, "dump ended with err %d kind %d", err,
	      (int)kind);
	for (i = 0; i < nk; i++)
		CHECK(seen[i] == 1, "key %zu listed %d times of %d items", i,
		      seen[i], items);
	ks_mc_close(&d);
	for (i = 0; i < nk; i++)
		blen += (size_t)snprintf(batch + blen, sizeof(batch) - blen,
					 "md %s q\r\n", keys[i]);
	blen += (size_t)snprintf(batch + blen, sizeof(batch) - blen,
				 "md k:absent q\r\nmn\r\n");
	iov = (struct iovec){ batch, blen };
	err = ks_mc_pipe_send(&e->r2, &iov, 1, ms_now() + TIMEOUT_MS, &fresh);
	/* quiet suppresses HD only: memcached 1.6.18 still answers NF for
	 * the key that is not there */
	answers[0] = '\0';
	while (!err &&
	       !(err = ks_mc_pipe_line(&e->r2, &line, ms_now() + TIMEOUT_MS)) &&
	       strcmp(line, "MN") && strlen(answers) < sizeof(answers) - 8)
		strcat(strcat(answers, line), " ");
	CHECK(!err && !strcmp(answers, "NF "),
	      "the batch's answers before MN: err %d '%s'", err, answers);
	for (i = 0; i < nk; i++) {
		struct ks_mc_item it;

		err = ks_mc_fetch(&e->r2, KEY(keys[i]), &it);
		CHECK(!err && !it.found, "%s still there", keys[i]);
		ks_mc_item_free(&it);
	}
}

static const struct mc_case {
	const char *name;
	void (*run)(struct mc_env *e);
} cases[] = {
	{ "mc_fetch_hit_miss_flags_ttl", t_fetch },
	{ "mc_store_fetch_back_delete", t_store },
	{ "mc_binary_safe_value", t_binary },
	{ "mc_large_value", t_large },
	{ "mc_unexpected_replies", t_fake_replies },
	{ "mc_fetch_over_ipv6", t_ipv6 },
	{ "mc_fill_copies", t_fill },
	{ "mc_fill_missing_deletes_copies", t_fill_miss },
	{ "mc_copy_never_over_an_invalidation", t_copy_protocol },
	{ "mc_reconnect_after_restart", t_reconnect },
	{ "mc_refused_fast", t_refused },
	{ "mc_timeout_silent_server", t_timeout },
	{ "mc_bad_keys_not_sent", t_bad_keys },
	{ "mc_meta_arithmetic", t_arith },
	{ "mc_metadump_keys_and_quiet_deletes", t_metadump },
	{ "mc_lease_vivify_win_wait", t_lease },
	{ "mc_stale_mark_bounded_hand_back_fill_miss", t_swr },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* Starts the three servers; on failure reports "S why" or "X why". */
static int child_setup(struct mc_env *e)
{
	static const unsigned short ports[3] = { PORT_OWNER, PORT_R1, PORT_R2 };
	int err = kt_private_netns(), i;

	if (err) {
		dprintf(e->report,
			"S no private network namespace: %s (run as root)\n",
			strerror(-err));
		return err;
	}
	for (i = 0; i < 3; i++) {
		e->mc[i] = kt_memcached_start(ports[i]);
		if (e->mc[i] == -ENOENT) {
			dprintf(e->report,
				"X memcached is not installed (make deps: memcached)\n");
			return -ENOENT;
		}
		if (e->mc[i] < 0) {
			dprintf(e->report,
				"X memcached on port %u did not start: %s\n",
				ports[i], strerror(-e->mc[i]));
			return e->mc[i];
		}
		report_pid(e, 'M', e->mc[i]);
	}
	ks_mc_init(&e->owner, KS_AF_INET, lo(), PORT_OWNER, TIMEOUT_MS);
	ks_mc_init(&e->r1, KS_AF_INET, lo(), PORT_R1, TIMEOUT_MS);
	ks_mc_init(&e->r2, KS_AF_INET, lo(), PORT_R2, TIMEOUT_MS);
	return 0;
}

static void child_run(int report)
{
	struct mc_env e = { .report = report, .mc = { -1, -1, -1 } };
	unsigned i;
	char *p;

	alarm(CHILD_LIMIT_S);
	if (!child_setup(&e)) {
		for (i = 0; i < NCASES; i++) {
			dprintf(report, "B %u\n", i);
			kt_begin(cases[i].name);
			cases[i].run(&e);
			for (p = kt_cur.why; *p; p++)
				if (*p == '\n')
					*p = ' ';
			dprintf(report, "E %u %d %d %s\n", i, kt_cur.failed,
				kt_cur.skipped, kt_cur.why);
		}
	}
	ks_mc_close(&e.owner);
	ks_mc_close(&e.r1);
	ks_mc_close(&e.r2);
	for (i = 0; i < 3; i++) {
		if (e.mc[i] > 0) {
			kt_memcached_stop(e.mc[i]);
			report_pid(&e, 'Z', e.mc[i]);
		}
	}
	_exit(0);
}

/* What the parent learnt from the child's reports. */
struct mc_results {
	int done[NCASES];
	int current; /* case begun and not ended, or -1 */
	char skip[256], fail[256];
	pid_t pids[MAX_PIDS]; /* memcached processes still running */
};

static void print_case(unsigned i, int failed, int skipped, const char *why)
{
	kt_begin(cases[i].name);
	if (skipped && !failed) {
		kt_skipf("%s", why);
	} else if (failed) {
		kt_cur.failed = failed;
		snprintf(kt_cur.why, sizeof(kt_cur.why), "%s", why);
	}
	kt_end();
}

static void track_pid(struct mc_results *r, pid_t pid, int add)
{
	int i;

	for (i = 0; i < MAX_PIDS; i++) {
		if (add && r->pids[i] == 0) {
			r->pids[i] = pid;
			return;
		}
		if (!add && r->pids[i] == pid) {
			r->pids[i] = 0;
			return;
		}
	}
}

static void parse_report(struct mc_results *r, char *line)
{
	unsigned i;
	int failed, skipped, off = 0;

	line[strcspn(line, "\n")] = '\0';
	if (line[0] == 'M' || line[0] == 'Z')
		track_pid(r, (pid_t)atoi(line + 2), line[0] == 'M');
	else if (line[0] == 'S')
		snprintf(r->skip, sizeof(r->skip), "%s", line + 2);
	else if (line[0] == 'X')
		snprintf(r->fail, sizeof(r->fail), "%s", line + 2);
	else if (sscanf(line, "B %u", &i) == 1 && i < NCASES)
		r->current = (int)i;
	else if (sscanf(line, "E %u %d %d %n", &i, &failed, &skipped, &off) ==
			 3 &&
		 i < NCASES && off > 0) {
		print_case(i, failed, skipped, line + off);
		r->done[i] = 1;
		r->current = -1;
	}
}

/* Cases the child did not end: skipped, failed at setup, or lost. */
static void finish_cases(struct mc_results *r, int status)
{
	char how[128], why[256];
	unsigned i;

	if (WIFSIGNALED(status))
		snprintf(how, sizeof(how), "killed by signal %d",
			 WTERMSIG(status));
	else
		snprintf(how, sizeof(how), "exited with status %d",
			 WEXITSTATUS(status));
	for (i = 0; i < NCASES; i++) {
		if (r->done[i])
			continue;
		if (r->skip[0])
			print_case(i, 0, 1, r->skip);
		else if (r->fail[0])
			print_case(i, 1, 0, r->fail);
		else {
			snprintf(why, sizeof(why), "%s: the test child %s",
				 (int)i == r->current ? "died in this case"
						      : "not run",
				 how);
			print_case(i, 1, 0, why);
		}
	}
}

void test_mc_client(void)
{
	struct mc_results r = { .current = -1 };
	char *line = NULL;
	size_t cap = 0;
	int fds[2], status = 0, i;
	pid_t pid;
	FILE *in;

	fflush(stdout); /* the child must not print the parent's buffer again */
	/* Close-on-exec, or the memcached processes would hold the pipe open
	 * and the parent would wait for them after a crashed child. */
	if (pipe2(fds, O_CLOEXEC) || (pid = fork()) < 0) {
		snprintf(r.fail, sizeof(r.fail),
			 "cannot start the test child: %s", strerror(errno));
		finish_cases(&r, 0);
		return;
	}
	if (pid == 0) {
		close(fds[0]);
		child_run(fds[1]);
	}
	close(fds[1]);
	in = fdopen(fds[0], "r");
	while (in && getline(&line, &cap, in) > 0)
		parse_report(&r, line);
	free(line);
	if (in)
		fclose(in);
	waitpid(pid, &status, 0);
	finish_cases(&r, status);
	/* A child that died left its servers running: stop them by pid. */
	for (i = 0; i < MAX_PIDS; i++)
		if (r.pids[i] > 0)
			kill(r.pids[i], SIGTERM);
}
