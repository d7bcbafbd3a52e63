// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * lease.c - keysteer_fetch's decisions and its single-flight table
 * (lease.h): pure, so every branch is tested without a memcached.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "client/lease.h"

#define PAUSE_FIRST_MS 2
#define PAUSE_MAX_MS   64

enum ksc_lease_act ksc_lease_decide(const struct ksc_lease_reply *r,
				    int allow_stale)
{
	if (!r->found)
		/* N could not vivify (memcached out of memory): nobody holds
		 * a lease, so this caller fills, as without leases */
		return KSC_LEASE_FILL;
	if (r->win)
		/* a placeholder it created, or a stale item whose refresh
		 * falls to it: either way it alone fills now */
		return KSC_LEASE_FILL;
	if (r->stale)
		/* stale, another refreshes (Z; memcached hands W to the
		 * first reader of a stale item, so X without W has Z) */
		return allow_stale ? KSC_LEASE_STALE : KSC_LEASE_WAIT;
	if (r->taken && r->len == 0)
		return KSC_LEASE_WAIT; /* the placeholder of another's lease */
	return KSC_LEASE_HIT;
}

unsigned ksc_lease_pause_ms(unsigned attempt, __u64 now_ms, __u64 deadline_ms)
{
	unsigned p = PAUSE_FIRST_MS;

	if (now_ms >= deadline_ms)
		return 0;
	while (attempt-- && p < PAUSE_MAX_MS)
		p *= 2;
	if (p > PAUSE_MAX_MS)
		p = PAUSE_MAX_MS;
	if (p > deadline_ms - now_ms)
		p = (unsigned)(deadline_ms - now_ms);
	return p;
}

/* ---- single-flight ---- */

/* Unlinks f from the table (it may still have callers). */
static void unlink_flight(struct ksc_flights *t, struct ksc_flight *f)
{
	struct ksc_flight **p;

	for (p = &t->head; *p; p = &(*p)->next)
		if (*p == f) {
			*p = f->next;
			f->next = NULL;
			t->n--;
			return;
		}
}

static void free_flight(struct ksc_flight *f)
{
	free(f->id);
	free(f->value);
	free(f);
}

int ksc_flight_join(struct ksc_flights *t, const char *id, size_t idlen,
		    __u64 now_ms, unsigned max_age_ms, struct ksc_flight **out)
{
	struct ksc_flight *f;

	pthread_mutex_lock(&t->lock);
	for (f = t->head; f; f = f->next) {
		if (f->idlen != idlen || memcmp(f->id, id, idlen))
			continue;
		if (!f->done && now_ms - f->born_ms <= max_age_ms) {
			f->refs++;
			*out = f;
			pthread_mutex_unlock(&t->lock);
			return 0;
		}
		/* done (its followers still reading) or hung: a new one */
		unlink_flight(t, f);
		break;
	}
	f = calloc(1, sizeof(*f));
	if (f && !(f->id = malloc(idlen))) {
		free(f);
		f = NULL;
	}
	if (!f) {
		pthread_mutex_unlock(&t->lock);
		return -ENOMEM;
	}
	memcpy(f->id, id, idlen);
	f->idlen = idlen;
	f->born_ms = now_ms;
	f->refs = 1;
	f->next = t->head;
	t->head = f;
	t->n++;
	*out = f;
	pthread_mutex_unlock(&t->lock);
	return 1;
}

void ksc_flight_finish(struct ksc_flights *t, struct ksc_flight *f, int ret,
		       const void *value, size_t len, uint32_t flags,
		       const char *err)
{
	void *copy = NULL;

	if (value && (copy = malloc(len + 1))) {
		memcpy(copy, value, len);
		((char *)copy)[len] = '\0';
	} else if (value) {
		ret = -ENOMEM;
		err = "out of memory";
	}
	pthread_mutex_lock(&t->lock);
	f->ret = ret;
	f->value = copy;
	f->len = copy ? len : 0;
	f->flags = flags;
	snprintf(f->err, sizeof(f->err), "%s", err ? err : "");
	f->done = 1;
	/* later callers start afresh: the cache has the answer now */
	unlink_flight(t, f);
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

int ksc_flight_wait(struct ksc_flights *t, struct ksc_flight *f,
		    __u64 deadline_ms)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline_ms / 1000),
			       .tv_nsec = (long)(deadline_ms % 1000) *
					  1000000 };
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	while (!f->done && ret != ETIMEDOUT)
		ret = pthread_cond_clockwait(&t->cond, &t->lock,
					     CLOCK_MONOTONIC, &ts);
	ret = f->done ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&t->lock);
	return ret;
}

void ksc_flight_leave(struct ksc_flights *t, struct ksc_flight *f)
{
	int last;

	pthread_mutex_lock(&t->lock);
	last = !--f->refs;
	if (last)
		unlink_flight(t, f);
	pthread_mutex_unlock(&t->lock);
	if (last)
		free_flight(f);
}
