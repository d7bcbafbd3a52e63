// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_steer_fill.c - the fill worker's death (user/agent/steer_fill.c) and
 * what 'agent run' does about it (user/agent/run_steer.c): once the worker
 * is gone no invalidation reaches a replica, so every armed slot must be
 * disarmed (reads to the owner), none armed again, and the log must say
 * so. The death is forced in this test build only: the unit tier links
 * with --wrap=ks_drop_thread_privileges (Makefile), and the worker does
 * not run when it cannot drop its capabilities; the agent has no switch
 * for it. The slots are a plain array standing in for the mmapped map;
 * the worker talks to no memcached (it dies before, or gets no job).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ktest.h"
#include "agent/run_steer.h"
#include "util/opts.h"
#include "unit.h"

int __real_ks_drop_thread_privileges(void);
int __wrap_ks_drop_thread_privileges(void);

static int fail_drop; /* the fault: the worker's capability drop fails */

int __wrap_ks_drop_thread_privileges(void)
{
	return fail_drop ? -EPERM : __real_ks_drop_thread_privileges();
}

#define ARMED_SLOT 3
#define LATER_SLOT 4 /* armed by an action after the death (or not) */

static struct ks_run_steer *steer_new(void)
{
	struct ks_run_steer *s = calloc(1, sizeof(*s));
	struct ks_replica_set owner;
	char err[KS_ERRLEN];

	if (!s)
		return NULL;
	s->map.slot = calloc(KS_HOT_SLOTS, sizeof(*s->map.slot));
	if (!s->map.slot ||
	    ks_replicas_parse("198.18.9.1:11211", &s->rs, err, sizeof(err)) ||
	    ks_replicas_parse("198.18.9.2:11211", &owner, err, sizeof(err))) {
		free(s->map.slot);
		free(s);
		return NULL;
	}
	s->owner = owner.r[0];
	s->map_open = 1;
	s->epfd = -1;
	s->interval_ns = 1000000000ULL;
	ks_steer_fsm_init(&s->fsm, &s->rs, s->map.slot, s->interval_ns, 0);
	/* one key armed, as the datapath sees it: steered while armed */
	s->map.slot[ARMED_SLOT].hash = 0x1234;
	s->map.slot[ARMED_SLOT].expires_ns = ~0ULL;
	return s;
}

static void steer_free(struct ks_run_steer *s)
{
	if (!s)
		return;
	ks_filler_stop(&s->filler);
	free(s->map.slot);
	free(s);
}

/* An ARM action as the machine would hand it to perform(). */
static void queue_arm(struct ks_run_steer *s, int slot)
{
	struct ks_steer_action *a = &s->fsm.act[s->fsm.nact++];

	memset(a, 0, sizeof(*a));
	a->type = KS_ACT_ARM;
	a->slot = slot;
	a->expires_ns = ~0ULL;
	s->map.slot[slot].hash = 0x5678;
}

/* ks_run_steer_poll with stderr into buf (the agent's log). */
static void poll_logged(struct ks_run_steer *s, char *buf, size_t len)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t n = 0;

	fflush(stderr);
	if (tmp)
		dup2(fileno(tmp), STDERR_FILENO);
	ks_run_steer_poll(s);
	fflush(stderr);
	if (saved >= 0) {
		dup2(saved, STDERR_FILENO);
		close(saved);
	}
	if (tmp) {
		rewind(tmp);
		n = fread(buf, 1, len - 1, tmp);
		fclose(tmp);
	}
	buf[n] = '\0';
}

static void run(int fault)
{
	struct ks_run_steer *s = steer_new();
	struct ks_fill_job j = { .invalidate = 1, .slot = ARMED_SLOT };
	struct pollfd p = { .fd = -1, .events = POLLIN };
	char log[1024] = "";
	int woke = 0, sub = 0;

	CHECK(s, "no memory for the test");
	if (!s)
		return;
	fail_drop = fault;
	CHECK(ks_filler_start(&s->filler, &s->rs, &s->owner, 5) == 0,
	      "the worker did not start");
	p.fd = ks_filler_fd(&s->filler);
	/* a death says so on the eventfd: wait for that event (10 s only
	 * bounds a failure); a live worker with no job says nothing, and the
	 * control does not wait for that silence */
	woke = poll(&p, 1, fault ? 10000 : 0) == 1;
	queue_arm(s, LATER_SLOT);
	poll_logged(s, log, sizeof(log));
	if (fault) {
		CHECK(woke && ks_filler_dead(&s->filler) == -EPERM,
		      "the worker's death was not signalled (woke %d, dead %d)",
		      woke, ks_filler_dead(&s->filler));
		CHECK(s->fill_dead && !s->map.slot[ARMED_SLOT].expires_ns,
		      "the armed key stayed armed after the worker died");
		CHECK(!s->map.slot[LATER_SLOT].expires_ns,
		      "a key was armed after the worker died");
		sub = ks_filler_submit(&s->filler, &j);
		CHECK(sub == -EPIPE, "a job was queued to a dead worker (%d)",
		      sub);
		CHECK(strstr(log, "steering is off") &&
			      strstr(log, "1 armed keys disarmed"),
		      "the death was not logged: '%s'", log);
	} else {
		/* the control: the same steps with the worker alive leave
		 * the key armed and arm the later one, so the checks above
		 * can see a key armed */
		CHECK(!woke && !ks_filler_dead(&s->filler) && !s->fill_dead,
		      "a live worker reported as dead");
		CHECK(s->map.slot[ARMED_SLOT].expires_ns &&
			      s->map.slot[LATER_SLOT].expires_ns,
		      "keys disarmed (or not armed) with the worker alive");
		CHECK(!strstr(log, "steering is off"), "a death logged: '%s'",
		      log);
	}
	fail_drop = 0;
	steer_free(s);
}

void test_steer_fill(void)
{
	kt_begin("steer_fill_worker_death_disarms_every_key");
	run(1);
	kt_end();
	kt_begin("steer_fill_worker_death_control_alive_keeps_keys");
	run(0);
	kt_end();
}
