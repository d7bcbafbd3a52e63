// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ks_client_batch.c - keysteer_set_many against real memcached
 * (tests/e2e/test_client_batch.sh starts them):
 *
 *   ks_client_batch OWNER REPLICA DEAD
 *
 * OWNER and REPLICA are memcacheds (H:P), DEAD an address where nothing
 * listens. Each check prints PASS or FAIL with its name:
 *
 * - a bad item writes nothing: -EINVAL, its result -EINVAL, the others
 *   -ECANCELED, none of the keys on the owner;
 * - 40 items (one key twice, the later value last) all stored, the later
 *   value of the repeated key kept, and every old copy planted on the
 *   replica beforehand found stale or a tombstone, never servable; the dead
 *   replica counts as invalidated;
 * - the control, batch_invalidate=off: the same batch leaves the planted
 *   copies servable (so the check above can fail);
 * - a value memcached refuses (1 MiB, over its item limit with the header)
 *   amid others for the same owner: memcached's SERVER_ERROR names no item,
 *   so every item without an answer of its own is -EIO, the call -EIO; the
 *   other items are stored and invalidated all the same;
 * - after the servers closed the handle's idle connections (the script
 *   runs them with -o idle_timeout=2), a batch still succeeds: a kept
 *   connection found closed is opened again and the pipeline sent again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <libkeysteer.h>
#include "net/mc_client.h" /* the checks read memcached directly */

#define N 40

static int failed;

static void result(const char *name, int ok, const char *why)
{
	if (ok)
		printf("PASS %s\n", name);
	else
		printf("FAIL %s: %s\n", name, why);
	failed |= !ok;
}

static void conn_to(struct ks_mc_conn *c, const char *hostport)
{
	const char *colon = strrchr(hostport, ':');
	char host[64];
	union ks_inaddr a = { 0 };
	struct in_addr ia;

	snprintf(host, sizeof(host), "%.*s", (int)(colon - hostport), hostport);
	inet_pton(AF_INET, host, &ia);
	a.v4 = ia.s_addr;
	ks_mc_init(c, KS_AF_INET, &a, (__u16)atoi(colon + 1), 1000);
}

static char names[N][32], vals[N][32];

/* Items "KEY<i>" = "v<i>.<tag>"; item N - 1 repeats item 0's key. */
static void items(struct keysteer_item *it, const char *prefix, int tag)
{
	int i;

	for (i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "%s%d", prefix,
			 i == N - 1 ? 0 : i);
		snprintf(vals[i], sizeof(vals[i]), "v%d.%d", i, tag);
		it[i] = (struct keysteer_item){ .key = names[i],
						.klen = strlen(names[i]),
						.value = vals[i],
						.len = strlen(vals[i]) };
	}
}

/* Old copies of every key on the replica, as a fill would leave them. */
static int plant(struct ks_mc_conn *rep, const char *prefix)
{
	struct ks_mc_item old = { .value = "old", .len = 3 };
	char k[32];
	int i;

	for (i = 0; i < N - 1; i++) {
		snprintf(k, sizeof(k), "%s%d", prefix, i);
		if (ks_mc_store(rep, (const __u8 *)k, strlen(k), &old, 60))
			return -1;
	}
	return 0;
}

/* How many of the keys the replica would still serve (found, not stale,
 * not a tombstone). */
static int servable(struct ks_mc_conn *rep, const char *prefix)
{
	struct ks_mc_item it;
	char k[32];
	int i, n = 0;

	for (i = 0; i < N - 1; i++) {
		snprintf(k, sizeof(k), "%s%d", prefix, i);
		if (ks_mc_fetch(rep, (const __u8 *)k, strlen(k), &it))
			return -1;
		n += ks_mc_copy_usable(&it);
		ks_mc_item_free(&it);
	}
	return n;
}

/* Whether the owner holds every key with the batch's value. */
static int stored(struct ks_mc_conn *own, const char *prefix, int skip)
{
	struct ks_mc_item it;
	char k[32], want[32];
	int i, ok = 1;

	for (i = 0; i < N - 1 && ok; i++) {
		if (i == skip)
			continue;
		snprintf(k, sizeof(k), "%s%d", prefix, i);
		snprintf(want, sizeof(want), "%s", vals[i ? i : N - 1]);
		ok = !ks_mc_fetch(own, (const __u8 *)k, strlen(k), &it) &&
		     it.found && it.len == strlen(want) &&
		     !memcmp(it.value, want, it.len);
		ks_mc_item_free(&it);
	}
	return ok;
}

static void bad_item(struct keysteer *ks, struct ks_mc_conn *own)
{
	struct keysteer_item it[N];
	struct ks_mc_item got;
	int ret, i, ok, cancelled = 0;

	items(it, "bad:", 1);
	it[7].key = "with space";
	it[7].klen = 10;
	ret = keysteer_set_many(ks, it, N);
	for (i = 0; i < N; i++)
		cancelled += it[i].result == -ECANCELED;
	ok = ret == -EINVAL && it[7].result == -EINVAL && cancelled == N - 1 &&
	     strstr(keysteer_errmsg(ks), "item 7");
	for (i = 0; i < N && ok; i++) {
		if (i == 7)
			continue;
		ok = !ks_mc_fetch(own, (const __u8 *)names[i], strlen(names[i]),
				  &got) &&
		     !got.found;
		ks_mc_item_free(&got);
	}
	result("batch_bad_item_writes_nothing", ok, keysteer_errmsg(ks));
}

static void invalidates(struct keysteer *ks, struct ks_mc_conn *own,
			struct ks_mc_conn *rep, const char *prefix, int control)
{
	struct keysteer_item it[N];
	char why[400];
	int ret, i, bad = 0, left;

	items(it, prefix, 2);
	if (plant(rep, prefix)) {
		result(control ? "batch_control_copies_stay"
			       : "batch_invalidates_every_copy",
		       0, "cannot plant copies on the replica");
		return;
	}
	ret = keysteer_set_many(ks, it, N);
	for (i = 0; i < N; i++)
		bad += it[i].result != 0;
	left = servable(rep, prefix);
	snprintf(why, sizeof(why),
		 "returned %d (%s), %d items failed, %d of %d old copies "
		 "servable, owner %s",
		 ret, keysteer_errmsg(ks), bad, left, N - 1,
		 stored(own, prefix, -1) ? "holds the batch" : "does not");
	if (control)
		result("batch_control_copies_stay",
		       !ret && !bad && left == N - 1, why);
	else if (!strcmp(prefix, "idle:"))
		result("batch_after_idle_close",
		       !ret && !bad && !left && stored(own, prefix, -1), why);
	else
		result("batch_invalidates_every_copy",
		       !ret && !bad && !left && stored(own, prefix, -1), why);
}

static void refused_value(struct keysteer *ks, struct ks_mc_conn *own,
			  struct ks_mc_conn *rep)
{
	struct keysteer_item it[N];
	char why[400], *big = malloc(KS_MC_VALUE_MAX);
	int ret, i, eio = 0, left;

	if (!big)
		return;
	memset(big, 'x', KS_MC_VALUE_MAX);
	items(it, "big:", 3);
	plant(rep, "big:");
	it[5].value = big;
	it[5].len = KS_MC_VALUE_MAX;
	ret = keysteer_set_many(ks, it, N);
	for (i = 0; i < N; i++)
		eio += it[i].result == -EIO;
	left = servable(rep, "big:");
	snprintf(why, sizeof(why),
		 "returned %d (%s), %d items -EIO, %d old copies servable", ret,
		 keysteer_errmsg(ks), eio, left);
	result("batch_refused_value_uncertain_rest_stored",
	       ret == -EIO && eio == N && !left && stored(own, "big:", 5), why);
	free(big);
}

int main(int argc, char **argv)
{
	struct ks_mc_conn own, rep;
	struct keysteer *ks, *ctl;
	char spec[512];

	if (argc != 4) {
		fprintf(stderr, "usage: ks_client_batch OWNER REPLICA DEAD\n");
		return 2;
	}
	snprintf(spec, sizeof(spec), "servers=%s replicas=%s,%s", argv[1],
		 argv[2], argv[3]);
	if (keysteer_open(&ks, spec) < 0) {
		fprintf(stderr, "ks_client_batch: %s\n", keysteer_errmsg(ks));
		return 2;
	}
	strncat(spec, " batch_invalidate=off", sizeof(spec) - strlen(spec) - 1);
	if (keysteer_open(&ctl, spec) < 0) {
		fprintf(stderr, "ks_client_batch: %s\n", keysteer_errmsg(ctl));
		return 2;
	}
	conn_to(&own, argv[1]);
	conn_to(&rep, argv[2]);
	bad_item(ks, &own);
	invalidates(ks, &own, &rep, "inv:", 0);
	invalidates(ctl, &own, &rep, "ctl:", 1);
	refused_value(ks, &own, &rep);
	sleep(4); /* past the servers' idle_timeout */
	invalidates(ks, &own, &rep, "idle:", 0);
	ks_mc_close(&own);
	ks_mc_close(&rep);
	keysteer_close(ks);
	keysteer_close(ctl);
	return failed;
}
