// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * steer_fill.c - the fill worker thread (see steer_fill.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "util/privs.h"
#include "util/thread.h"
#include "util/clock.h"
#include "agent/steer_fill.h"

#define OWNER_IDX KS_MAX_REPLICAS

/* One job, no lock held: fetch once, store on every replica. */
static void run_job(struct ks_steer_filler *w, const struct ks_fill_job *j,
		    struct ks_steer_fill_result *out)
{
	struct ks_mc_conn *conns[KS_MAX_COPIES - 1];
	struct ks_fill_result res;
	__u64 now = ks_mono_ns();
	unsigned i;
	int ret;

	memset(out, 0, sizeof(*out));
	out->slot = j->slot;
	out->gen = j->gen;
	out->seq = j->seq;
	out->status = KS_FILL_FAILED;
	if (now < w->bad_until[OWNER_IDX]) {
		out->owner_failed = 1;
		return;
	}
	for (i = 0; i < j->nrep; i++) {
		unsigned r = j->reps[i];

		conns[i] = r < w->nrep && now >= w->bad_until[r] ? &w->conn[r]
								 : NULL;
	}
	ret = ks_fill_copies_opts(&w->owner, conns, j->nrep, j->key, j->len,
				  w->copy_ttl_s, &w->fill, &res);
	now = ks_mono_ns();
	if (res.owner_err) {
		out->owner_failed = 1;
		w->bad_until[OWNER_IDX] = now + KS_STEER_DOWN_NS;
		return;
	}
	for (i = 0; i < j->nrep; i++) {
		if (!(res.failed_mask >> i & 1))
			continue;
		if (j->reps[i] < KS_MAX_REPLICAS)
			out->failed_reps |= 1U << j->reps[i];
		if (conns[i])
			w->bad_until[j->reps[i]] = now + KS_STEER_DOWN_NS;
	}
	out->owner_cas = res.owner_cas;
	if (!ret)
		out->status = res.found ? KS_FILL_OK : KS_FILL_MISS;
	else if (ret == -EAGAIN && !res.failed)
		out->status = KS_FILL_RACED;
}

/* An invalidation job (a write the datapath saw): every replica's copy
 * marked stale or tombstoned, no result (docs/client.md). */
static void run_invalidate(struct ks_steer_filler *w,
			   const struct ks_fill_job *j)
{
	__u64 now = ks_mono_ns();
	unsigned r;

	for (r = 0; r < w->nrep; r++)
		if (now >= w->bad_until[r] &&
		    ks_mc_invalidate(&w->conn[r], j->key, j->len,
				     w->copy_ttl_s) &&
		    ks_mc_invalidate(&w->conn[r], j->key, j->len,
				     w->copy_ttl_s))
			w->inval_errors++;
}

/* The worker stopping unasked: nothing it was given will run, and the
 * main thread hears it on the eventfd. Called with mu held. */
static void die(struct ks_steer_filler *w, int err)
{
	__u64 one = 1;

	w->dead = err;
	if (write(w->efd, &one, sizeof(one)) < 0) {
		/* the counter is far from full; nothing to do */
	}
}

static void *worker(void *arg)
{
	struct ks_steer_filler *w = arg;
	struct ks_fill_job j; /* no allocation: nothing to fail mid-run */
	struct ks_steer_fill_result r;
	__u64 one = 1, t0, dt;
	/* it only talks TCP to memcached: no capability at all, whatever
	 * the main thread still holds. ks_thread_start dropped them; this
	 * second drop is the worker's own refusal to run with any (and the
	 * fault tests/unit/t_steer_fill.c injects for a worker's death) */
	int err = ks_drop_thread_privileges();

	pthread_mutex_lock(&w->mu);
	if (err)
		die(w, err);
	while (!err) {
		while (!w->stop && !w->jn)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->stop)
			break;
		j = w->jobs[w->jhead]; /* stays counted in jn while it runs */
		pthread_mutex_unlock(&w->mu);
		t0 = ks_mono_ns();
		if (j.invalidate)
			run_invalidate(w, &j);
		else
			run_job(w, &j, &r);
		dt = ks_mono_ns() - t0;
		pthread_mutex_lock(&w->mu);
		w->jhead = (w->jhead + 1) % KS_FILL_QUEUE;
		w->jn--;
		if (j.invalidate) {
			w->invalidations++;
			continue;
		}
		w->done++;
		if (!r.owner_failed)
			__atomic_add_fetch(&w->owner_reads, 1,
					   __ATOMIC_RELAXED);
		w->busy_ns += dt;
		if (dt > w->longest_ns)
			w->longest_ns = dt;
		/* room: jn + rn <= KS_FILL_QUEUE (ks_filler_submit) */
		w->res[(w->rhead + w->rn) % KS_FILL_QUEUE] = r;
		w->rn++;
		if (write(w->efd, &one, sizeof(one)) < 0) {
			/* the counter is far from full; nothing to do */
		}
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int ks_filler_start(struct ks_steer_filler *w, const struct ks_replica_set *rs,
		    const struct ks_replica_addr *owner, long copy_ttl_s)
{
	struct ks_thread_opts to = { .name = "ks-fill" }; /* no capability */
	unsigned i;
	int err;

	memset(w, 0, sizeof(*w));
	w->efd = -1;
	w->jobs = calloc(KS_FILL_QUEUE, sizeof(*w->jobs));
	w->res = calloc(KS_FILL_QUEUE, sizeof(*w->res));
	if (!w->jobs || !w->res)
		goto nomem;
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0) {
		err = -errno;
		goto fail;
	}
	w->nrep = rs->n;
	w->copy_ttl_s = copy_ttl_s;
	for (i = 0; i < rs->n; i++)
		ks_mc_init(&w->conn[i], rs->r[i].family, &rs->r[i].addr,
			   rs->r[i].port, KS_STEER_MC_TIMEOUT);
	ks_mc_init(&w->owner, owner->family, &owner->addr, owner->port,
		   KS_STEER_MC_TIMEOUT);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	/* signals stay with the main thread, whose poll they must end */
	err = ks_thread_start(&w->th, &to, worker, w);
	if (err) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		goto fail;
	}
	w->started = 1;
	return 0;
nomem:
	err = -ENOMEM;
fail:
	if (w->efd >= 0)
		close(w->efd);
	free(w->jobs);
	free(w->res);
	memset(w, 0, sizeof(*w));
	w->efd = -1;
	return err;
}

int ks_filler_submit(struct ks_steer_filler *w, const struct ks_fill_job *j)
{
	int err = 0;

	if (!w->started)
		return -ENOTCONN;
	pthread_mutex_lock(&w->mu);
	/* a finished job's result takes its place: together they never
	 * exceed the ring, so no result is ever dropped */
	if (w->dead) {
		err = -EPIPE;
	} else if (w->jn + w->rn >= KS_FILL_QUEUE) {
		err = -ENOSPC;
	} else {
		w->jobs[(w->jhead + w->jn) % KS_FILL_QUEUE] = *j;
		w->jn++;
		pthread_cond_signal(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return err;
}

unsigned ks_filler_take(struct ks_steer_filler *w,
			struct ks_steer_fill_result *out, unsigned max)
{
	unsigned n = 0;
	__u64 v;

	if (!w->started)
		return 0;
	if (read(w->efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing signalled; results may still wait */
	}
	pthread_mutex_lock(&w->mu);
	while (n < max && w->rn) {
		out[n++] = w->res[w->rhead];
		w->rhead = (w->rhead + 1) % KS_FILL_QUEUE;
		w->rn--;
	}
	if (w->rn) { /* more than max: wake the caller again */
		v = 1;
		if (write(w->efd, &v, sizeof(v)) < 0) {
			/* cannot fail on a counter this small */
		}
	}
	pthread_mutex_unlock(&w->mu);
	return n;
}

int ks_filler_fd(const struct ks_steer_filler *w)
{
	return w->started ? w->efd : -1;
}

int ks_filler_dead(struct ks_steer_filler *w)
{
	int dead;

	if (!w->started)
		return 0;
	pthread_mutex_lock(&w->mu);
	dead = w->dead;
	pthread_mutex_unlock(&w->mu);
	return dead;
}

__u64 ks_filler_owner_reads(const struct ks_steer_filler *w)
{
	return w->started ? __atomic_load_n(&w->owner_reads, __ATOMIC_RELAXED)
			  : 0;
}

unsigned ks_filler_pending(struct ks_steer_filler *w)
{
	unsigned n;

	if (!w->started)
		return 0;
	pthread_mutex_lock(&w->mu);
	n = w->jn;
	pthread_mutex_unlock(&w->mu);
	return n;
}

void ks_filler_stop(struct ks_steer_filler *w)
{
	unsigned i;

	if (!w->started)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	for (i = 0; i < w->nrep; i++)
		ks_mc_close(&w->conn[i]);
	ks_mc_close(&w->owner);
	close(w->efd);
	free(w->jobs);
	free(w->res);
	memset(w, 0, sizeof(*w));
	w->efd = -1;
}
