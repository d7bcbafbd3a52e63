// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ks_counter.c - counters through libkeysteer, for the split-counter test
 * and bench (tests/e2e/test_client_split.sh, tests/bench/votes_bench.sh):
 *
 *   ks_counter SPEC get KEY...
 *       prints "KEY VALUE" per key (keysteer_counter_get)
 *   ks_counter SPEC watch KEY SECONDS
 *       one handle reads KEY every 200 ms for SECONDS (its reads fold
 *       what the fleet no longer splits; a read refused while a fold holds
 *       the counter is counted, not an error), then prints "KEY VALUE
 *       folded=N busy=B ok=1|0" (ok: the last read succeeded)
 *   ks_counter SPEC run KEY:WEIGHT[,KEY:WEIGHT...] [options]
 *       --writers N (4)  --seconds S (5)  --max N (per writer, 0: none)
 *       --readers N (0)  --fold-all-ms M (0: no folder thread)
 *       --bound-key KEY  (readers check this key's sums, default the first)
 *       --decr-every N   (every Nth operation of a writer a decrement by 1,
 *                         of any key but the one readers check; 0: none)
 *
 * Each writer has a handle of its own and increments keys drawn by weight
 * by 1; each acknowledged increment is counted per key. Readers check
 * every sum of the bound key against the increments acknowledged before
 * the read began (short: a sum below them) and those sent before it ended
 * (double: a sum above them), from a start value read first. The folder
 * folds every sub-key of every key (KEYSTEER_FOLD_ALL) every M ms, under
 * load. SIGINT or SIGTERM ends a run early (its figures printed). Prints
 * one line per key "key=K acked=N uncertain=U" and a summary
 * "writers ... short=S double=D ..." on stdout; exit 0 unless setup fails.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "libkeysteer.h"

#define KEYS_MAX 16

struct key {
	char name[251];
	unsigned weight;
	uint64_t acked, sent, uncertain, decr_acked; /* atomics */
	int64_t start;
};

static struct key keys[KEYS_MAX];
static unsigned nkeys, wsum;
static const char *spec;
static unsigned writers = 4, readers, fold_ms, seconds = 5, bound;
static uint64_t max_per, decr_every;
static volatile sig_atomic_t stop;
static uint64_t errors, shorts, doubles, reads, read_errs, folds, fold_errs;
static uint64_t subkey_writes, retries, folded;
static char first_err[512];
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1; /* the threads finish their call; main prints */
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void note_err(struct keysteer *ks, uint64_t *counter)
{
	__atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&err_lock);
	if (!first_err[0])
		snprintf(first_err, sizeof(first_err), "%s",
			 keysteer_errmsg(ks));
	pthread_mutex_unlock(&err_lock);
}

static void add_stats(struct keysteer *ks)
{
	struct keysteer_stats st;

	if (keysteer_stats(ks, &st, sizeof(st)))
		return;
	__atomic_add_fetch(&subkey_writes, st.subkey_writes, __ATOMIC_RELAXED);
	__atomic_add_fetch(&retries, st.counter_retries, __ATOMIC_RELAXED);
	__atomic_add_fetch(&folded, st.folded, __ATOMIC_RELAXED);
}

static struct keysteer *open_handle(void)
{
	struct keysteer *ks;

	if (keysteer_open(&ks, spec) < 0) {
		fprintf(stderr, "ks_counter: %s\n", keysteer_errmsg(ks));
		exit(2);
	}
	return ks;
}

static void *writer(void *arg)
{
	uint64_t rng = (uintptr_t)arg * 0x9e3779b97f4a7c15ULL + now_ms(), n = 0;
	struct keysteer *ks = open_handle();
	struct key *k;
	unsigned r, i;
	int ret;

	while (!stop && (!max_per || n < max_per)) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		r = (unsigned)(rng % wsum);
		for (i = 0; r >= keys[i].weight; i++)
			r -= keys[i].weight;
		k = &keys[i];
		n++;
		if (decr_every && n % decr_every == 0 &&
		    (!readers || i != bound)) {
			ret = keysteer_decr(ks, k->name, strlen(k->name), 1,
					    NULL);
			if (ret >= 0)
				__atomic_add_fetch(&k->decr_acked, 1,
						   __ATOMIC_RELAXED);
			else if (ret == -ECONNABORTED)
				__atomic_add_fetch(&k->uncertain, 1,
						   __ATOMIC_RELAXED);
			else
				note_err(ks, &errors);
			continue;
		}
		__atomic_add_fetch(&k->sent, 1, __ATOMIC_SEQ_CST);
		ret = keysteer_incr(ks, k->name, strlen(k->name), 1, NULL);
		if (ret >= 0)
			__atomic_add_fetch(&k->acked, 1, __ATOMIC_SEQ_CST);
		else if (ret == -ECONNABORTED)
			__atomic_add_fetch(&k->uncertain, 1, __ATOMIC_RELAXED);
		else
			note_err(ks, &errors);
	}
	add_stats(ks);
	keysteer_close(ks);
	return NULL;
}

static void *reader(void *arg)
{
	struct keysteer *ks = open_handle();
	struct key *k = &keys[bound];
	uint64_t lo, hi;
	int64_t v;

	(void)arg;
	while (!stop) {
		lo = __atomic_load_n(&k->acked, __ATOMIC_SEQ_CST);
		if (keysteer_counter_get(ks, k->name, strlen(k->name), &v) <
		    0) {
			note_err(ks, &read_errs);
			continue;
		}
		hi = __atomic_load_n(&k->sent, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&reads, 1, __ATOMIC_RELAXED);
		if (v < k->start + (int64_t)lo)
			__atomic_add_fetch(&shorts, 1, __ATOMIC_RELAXED);
		else if (v > k->start + (int64_t)hi)
			__atomic_add_fetch(&doubles, 1, __ATOMIC_RELAXED);
	}
	add_stats(ks);
	keysteer_close(ks);
	return NULL;
}

static void *folder(void *arg)
{
	struct keysteer *ks = open_handle();
	struct timespec ts = { fold_ms / 1000,
			       (long)(fold_ms % 1000) * 1000000 };
	unsigned i;
	int ret;

	(void)arg;
	while (!stop) {
		for (i = 0; i < nkeys; i++) {
			ret = keysteer_counter_fold(ks, keys[i].name,
						    strlen(keys[i].name),
						    KEYSTEER_FOLD_ALL);
			if (!ret)
				__atomic_add_fetch(&folds, 1, __ATOMIC_RELAXED);
			else if (ret != -EBUSY)
				note_err(ks, &fold_errs);
		}
		nanosleep(&ts, NULL);
	}
	add_stats(ks);
	keysteer_close(ks);
	return NULL;
}

static int parse_keys(char *list)
{
	char *save = NULL, *tok, *colon;

	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		colon = strrchr(tok, ':');
		if (nkeys == KEYS_MAX || !colon || colon == tok ||
		    (size_t)(colon - tok) > 250 || !(atoi(colon + 1) > 0))
			return -1;
		snprintf(keys[nkeys].name, sizeof(keys[nkeys].name), "%.*s",
			 (int)(colon - tok), tok);
		keys[nkeys].weight = (unsigned)atoi(colon + 1);
		wsum += keys[nkeys++].weight;
	}
	return nkeys ? 0 : -1;
}

static int get_all(int argc, char **argv)
{
	struct keysteer *ks = open_handle();
	int i, ret, rc = 0;
	int64_t v;

	for (i = 0; i < argc; i++) {
		ret = keysteer_counter_get(ks, argv[i], strlen(argv[i]), &v);
		if (ret < 0) {
			fprintf(stderr, "ks_counter: %s: %s\n", argv[i],
				keysteer_errmsg(ks));
			rc = 1;
			continue;
		}
		printf("%s %lld\n", argv[i], (long long)v);
	}
	keysteer_close(ks);
	return rc;
}

static int watch(const char *key, unsigned secs)
{
	struct timespec ts = { 0, 200000000 };
	struct keysteer *ks = open_handle();
	struct keysteer_stats st;
	uint64_t until = now_ms() + secs * 1000ULL;
	int64_t v = 0;
	unsigned busy = 0;
	int ret;

	do {
		ret = keysteer_counter_get(ks, key, strlen(key), &v);
		if (ret == -EBUSY) { /* a fold held it: counted, read again */
			busy++;
			continue;
		}
		if (ret < 0) {
			fprintf(stderr, "ks_counter: %s: %s\n", key,
				keysteer_errmsg(ks));
			keysteer_close(ks);
			return 1;
		}
		nanosleep(&ts, NULL);
	} while (now_ms() < until);
	keysteer_stats(ks, &st, sizeof(st));
	printf("%s %lld folded=%llu busy=%u ok=%d\n", key, (long long)v,
	       (unsigned long long)st.folded, busy, ret >= 0);
	keysteer_close(ks);
	return 0;
}

static unsigned num_arg(const char *name, const char *v, unsigned hi)
{
	char *end;
	unsigned long n = strtoul(v ? v : "", &end, 10);

	if (!v || !*v || *end || n > hi) {
		fprintf(stderr, "ks_counter: %s wants a number 0..%u\n", name,
			hi);
		exit(2);
	}
	return (unsigned)n;
}

int main(int argc, char **argv)
{
	pthread_t th[64 + 64 + 1];
	struct keysteer *ks;
	unsigned i, nth = 0;
	const char *bound_key = NULL;
	int a;

	if (argc < 4 || (strcmp(argv[2], "get") && strcmp(argv[2], "run") &&
			 strcmp(argv[2], "watch"))) {
		fprintf(stderr,
			"usage: ks_counter SPEC get KEY... | SPEC watch KEY S | SPEC run "
			"KEY:WEIGHT,... [--writers N] [--readers N] "
			"[--seconds S] [--max N] [--fold-all-ms M] "
			"[--decr-every N] "
			"[--bound-key KEY]\n");
		return 2;
	}
	spec = argv[1];
	if (!strcmp(argv[2], "get"))
		return get_all(argc - 3, argv + 3);
	if (!strcmp(argv[2], "watch"))
		return watch(argv[3],
			     argc > 4 ? num_arg("SECONDS", argv[4], 600) : 5);
	if (parse_keys(argv[3])) {
		fprintf(stderr,
			"ks_counter: '%s': want KEY:WEIGHT,... (at "
			"most 16, weights > 0)\n",
			argv[3]);
		return 2;
	}
	for (a = 4; a < argc; a += 2) {
		const char *v = a + 1 < argc ? argv[a + 1] : NULL;

		if (!strcmp(argv[a], "--writers"))
			writers = num_arg(argv[a], v, 64);
		else if (!strcmp(argv[a], "--readers"))
			readers = num_arg(argv[a], v, 64);
		else if (!strcmp(argv[a], "--seconds"))
			seconds = num_arg(argv[a], v, 600);
		else if (!strcmp(argv[a], "--max"))
			max_per = num_arg(argv[a], v, 100000000);
		else if (!strcmp(argv[a], "--decr-every"))
			decr_every = num_arg(argv[a], v, 1000000);
		else if (!strcmp(argv[a], "--fold-all-ms"))
			fold_ms = num_arg(argv[a], v, 60000);
		else if (!strcmp(argv[a], "--bound-key") && v)
			bound_key = v;
		else {
			fprintf(stderr, "ks_counter: unknown option '%s'\n",
				argv[a]);
			return 2;
		}
	}
	for (i = 0; bound_key && i < nkeys; i++)
		if (!strcmp(keys[i].name, bound_key))
			bound = i;
	ks = open_handle();
	for (i = 0; i < nkeys; i++)
		if (keysteer_counter_get(ks, keys[i].name, strlen(keys[i].name),
					 &keys[i].start) < 0) {
			fprintf(stderr, "ks_counter: start of %s: %s\n",
				keys[i].name, keysteer_errmsg(ks));
			return 2;
		}
	keysteer_close(ks);
	for (i = 0; i < writers; i++)
		pthread_create(&th[nth++], NULL, writer,
			       (void *)(uintptr_t)(i + 1));
	for (i = 0; i < readers; i++)
		pthread_create(&th[nth++], NULL, reader, NULL);
	if (fold_ms)
		pthread_create(&th[nth++], NULL, folder, NULL);
	if (max_per) { /* bounded by count: the writers end it */
		for (i = 0; i < writers; i++)
			pthread_join(th[i], NULL);
		stop = 1;
		for (i = writers; i < nth; i++)
			pthread_join(th[i], NULL);
	} else {
		/* SIGINT/SIGTERM end the run early, figures printed */
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		for (i = 0; i < seconds * 10 && !stop; i++)
			usleep(100000);
		stop = 1;
		for (i = 0; i < nth; i++)
			pthread_join(th[i], NULL);
	}
	for (i = 0; i < nkeys; i++)
		printf("key=%s start=%lld acked=%llu uncertain=%llu "
		       "decr_acked=%llu\n",
		       keys[i].name, (long long)keys[i].start,
		       (unsigned long long)keys[i].acked,
		       (unsigned long long)keys[i].uncertain,
		       (unsigned long long)keys[i].decr_acked);
	printf("writers=%u errors=%llu reads=%llu read_errors=%llu short=%llu "
	       "double=%llu folds=%llu fold_errors=%llu subkey_writes=%llu "
	       "folded=%llu retries=%llu\n",
	       writers, (unsigned long long)errors, (unsigned long long)reads,
	       (unsigned long long)read_errs, (unsigned long long)shorts,
	       (unsigned long long)doubles, (unsigned long long)folds,
	       (unsigned long long)fold_errs, (unsigned long long)subkey_writes,
	       (unsigned long long)folded, (unsigned long long)retries);
	if (first_err[0])
		printf("first_error=%s\n", first_err);
	return 0;
}
