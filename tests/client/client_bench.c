// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * client_bench.c - what libkeysteer adds to a read of a key that is not
 * hot, and to a write (docs/benchmarks.md, "The client library").
 *
 *   client_bench HOST:PORT [N] [REPLICAS]
 *
 * Against one memcached: N gets of one key through a plain blocking meta
 * client written here (socket, "mg KEY v f t", one reply), through
 * ks_mc_fetch (net/mc_client.c, the memcached client the library uses,
 * linked here from the agent's objects: the same get without the view's
 * lookup), and through keysteer_get on a static one-shard handle (the ring
 * lookup, the hot table's probe, the view's lock), alternated in 5 rounds
 * so all see the same machine; then N sets through keysteer_set
 * with invalidate=all and with invalidate=hot when REPLICAS (H:P,...) is
 * given (every write invalidates them, or only hot keys'; hot is a
 * test-only word: run it with KEYSTEER_TEST_SWITCHES=1), and 16-key
 * writes as one keysteer_set_many against 16 keysteer_set. Prints ns per
 * call and the ratios.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <libkeysteer.h>
#include "net/mc_client.h" /* the same client, without the view */

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static int plain_conn(const char *hostport)
{
	char host[64];
	const char *c = strrchr(hostport, ':');
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd, one = 1;

	snprintf(host, sizeof(host), "%.*s", (int)(c - hostport), hostport);
	a.sin_port = htons(atoi(c + 1));
	inet_pton(AF_INET, host, &a.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	return fd;
}

/* One "mg" and its whole reply (the value is small: one read). */
static int plain_get(int fd, const char *key)
{
	char buf[4096];
	int n = snprintf(buf, sizeof(buf), "mg %s v f t\r\n", key);

	if (write(fd, buf, n) != n)
		return -1;
	n = read(fd, buf, sizeof(buf));
	return n > 2 && buf[0] == 'V' ? 1 : 0;
}

/*
 * Writes of 16 keys, invalidate=all: one keysteer_set_many against 16
 * keysteer_set, alternated in 5 rounds of n / 16 writes of each; ns per
 * key and the ratio. 0, or -1 when a write failed.
 */
#define BATCH 16
static int bench_batches(struct keysteer *k, long n)
{
	struct keysteer_item it[BATCH];
	char names[BATCH][32];
	double t, one = 0, many = 0;
	long i, j, rounds = n / BATCH > 0 ? n / BATCH : 1;
	int r;

	for (j = 0; j < BATCH; j++) {
		snprintf(names[j], sizeof(names[j]), "bench:b%ld", j);
		it[j] = (struct keysteer_item){ .key = names[j],
						.klen = strlen(names[j]),
						.value = "v3",
						.len = 2 };
	}
	for (r = 0; r < 5; r++) {
		t = now_ns();
		for (i = 0; i < rounds; i++)
			for (j = 0; j < BATCH; j++)
				if (keysteer_set(k, names[j], it[j].klen, "v3",
						 2, 0, 0) < 0)
					return -1;
		one += now_ns() - t;
		t = now_ns();
		for (i = 0; i < rounds; i++)
			if (keysteer_set_many(k, it, BATCH) < 0)
				return -1;
		many += now_ns() - t;
	}
	printf("set of %d keys, invalidate=all: %d x keysteer_set %.0f ns "
	       "a key, keysteer_set_many %.0f ns a key, ratio %.2f (%ld "
	       "batches each)\n",
	       BATCH, BATCH, one / (5.0 * rounds * BATCH),
	       many / (5.0 * rounds * BATCH), one / many, 5 * rounds);
	return 0;
}

int main(int argc, char **argv)
{
	const char *srv = argc > 1 ? argv[1] : "127.0.0.1:11211";
	long n = argc > 2 ? atol(argv[2]) : 20000, i;
	const char *reps = argc > 3 ? argv[3] : NULL;
	const char *key = "bench:cold";
	double plain = 0, lib = 0, mc = 0, t, w[2] = { 0, 0 };
	struct ks_mc_conn conn;
	struct ks_mc_item it;
	struct in_addr ia;
	union ks_inaddr a4;
	char host[64];
	struct keysteer *ks, *kw[2] = { NULL, NULL };
	char spec[512];
	size_t len;
	void *val;
	int fd, r, m;

	snprintf(spec, sizeof(spec), "servers=%s", srv);
	if (keysteer_open(&ks, spec) < 0 ||
	    keysteer_set(ks, key, strlen(key), "v1", 2, 0, 0) < 0) {
		fprintf(stderr, "client_bench: %s\n", keysteer_errmsg(ks));
		return 1;
	}
	fd = plain_conn(srv);
	if (fd < 0) {
		perror("connect");
		return 1;
	}
	snprintf(host, sizeof(host), "%.*s", (int)(strrchr(srv, ':') - srv),
		 srv);
	inet_pton(AF_INET, host, &ia);
	memset(&a4, 0, sizeof(a4));
	a4.v4 = ia.s_addr;
	ks_mc_init(&conn, KS_AF_INET, &a4, (__u16)atoi(strrchr(srv, ':') + 1),
		   500);
	for (r = 0; r < 5; r++) {
		t = now_ns();
		for (i = 0; i < n; i++)
			if (plain_get(fd, key) != 1)
				return 1;
		plain += now_ns() - t;
		t = now_ns();
		for (i = 0; i < n; i++) {
			if (ks_mc_fetch(&conn, (const __u8 *)key, strlen(key),
					&it) ||
			    !it.found)
				return 1;
			ks_mc_item_free(&it);
		}
		mc += now_ns() - t;
		t = now_ns();
		for (i = 0; i < n; i++) {
			if (keysteer_get(ks, key, strlen(key), &val, &len,
					 NULL) != 1)
				return 1;
			keysteer_free(val);
		}
		lib += now_ns() - t;
	}
	printf("get, key not hot: plain socket %.0f ns, ks_mc_fetch %.0f ns, "
	       "keysteer_get %.0f ns; keysteer_get / ks_mc_fetch %.3f, "
	       "keysteer_get / plain %.3f (%ld gets each, 5 rounds)\n",
	       plain / (5.0 * n), mc / (5.0 * n), lib / (5.0 * n), lib / mc,
	       lib / plain, n);
	if (reps) {
		for (m = 0; m < 2; m++) {
			/* invalidate=hot is test-only (the caller sets
			 * KEYSTEER_TEST_SWITCHES=1); all is the default */
			snprintf(spec, sizeof(spec), "servers=%s replicas=%s%s",
				 srv, reps, m ? " invalidate=hot" : "");
			if (keysteer_open(&kw[m], spec) < 0) {
				fprintf(stderr, "client_bench: %s\n",
					keysteer_errmsg(kw[m]));
				return 1;
			}
		}
		for (r = 0; r < 5; r++)
			for (m = 0; m < 2; m++) {
				t = now_ns();
				for (i = 0; i < n / 4; i++)
					if (keysteer_set(kw[m], key,
							 strlen(key), "v2", 2,
							 0, 0) < 0)
						return 1;
				w[m] += now_ns() - t;
			}
		printf("set: invalidate=all %.0f ns, invalidate=hot (no "
		       "replica calls) %.0f ns, ratio %.2f (%ld sets each)\n",
		       w[0] / (5.0 * (n / 4)), w[1] / (5.0 * (n / 4)),
		       w[0] / w[1], 5 * (n / 4));
		if (bench_batches(kw[0], n) < 0) {
			fprintf(stderr, "client_bench: %s\n",
				keysteer_errmsg(kw[0]));
			return 1;
		}
		keysteer_close(kw[0]);
		keysteer_close(kw[1]);
	}
	close(fd);
	ks_mc_close(&conn);
	keysteer_close(ks);
	return 0;
}
