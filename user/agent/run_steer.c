// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * run_steer.c - the hot-key table in the datapath, and the L1 copies:
 * events into the state machine, its actions onto the map and the fill
 * worker (see run_steer.h; the decisions are in steer_fsm.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/epoll.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "util/opts.h"
#include "util/log.h"
#include "dp/ring_push.h"
#include "agent/run_steer.h"
#include "core/hot_doc.h"
#include "core/steer_sched.h"
#include "core/unseen.h"
#include "util/clock.h"

int ks_run_steer_prepare(struct ks_run_steer *s, const char *self,
			 const char *ifname, __u32 interval_ms, char *err,
			 size_t errlen)
{
	struct ks_replica_set one;
	char e2[KS_ERRLEN];
	int fwd, v6;

	__u64 ttl_ns;

	s->interval_ns = (__u64)interval_ms * 1000000ULL;
	ttl_ns = s->interval_ns * KS_STEER_TTL_INTERVALS;
	/* memcached TTLs are whole seconds; a copy outlives its slot's
	 * steering by a little, never serves after it */
	s->copy_ttl_s = (long)((ttl_ns + 999999999ULL) / 1000000000ULL) + 1;
	if (!s->o.replicas_arg)
		return 0;
	if (ks_replicas_parse(s->o.replicas_arg, &s->rs, err, errlen))
		return -EINVAL;
	if (!self) {
		snprintf(
			err, errlen,
			"--replicas needs --self HOST:PORT, the memcached on this host that copies are read from; add --self with this host's shard");
		return -EINVAL;
	}
	if (ks_replicas_parse(self, &one, e2, sizeof(e2))) {
		snprintf(
			err, errlen,
			"--self %s cannot be read from (%s); give --self as IPV4:PORT or [IPV6]:PORT",
			self, e2);
		return -EINVAL;
	}
	s->owner = one.r[0];
	v6 = s->rs.r[0].family == KS_AF_INET6;
	fwd = ks_forwarding_on(ifname, v6);
	if (fwd <= 0) {
		snprintf(
			err, errlen,
			"steering to replicas needs %s forwarding on %s for the kernel's next-hop lookup; run 'sysctl -w net.%s.conf.%s.forwarding=1' or drop --replicas",
			v6 ? "IPv6" : "IPv4", ifname, v6 ? "ipv6" : "ipv4",
			ifname);
		return -EINVAL;
	}
	return 0;
}

/* A write the datapath saw to an armed key: every replica's copy is
 * marked stale at once, before the refill (docs/client.md: what a library
 * reader may still read is bounded by this, not by the refill). */
static void invalidate_copies(struct ks_run_steer *s, unsigned slot)
{
	const struct ks_hot_slot *hs;
	struct ks_fill_job j = { .invalidate = 1, .slot = (int)slot };

	if (!s->rs.n || slot >= KS_HOT_SLOTS || !s->filler.started)
		return;
	hs = &s->map.slot[slot];
	j.len = hs->len > KS_KEY_BUF ? KS_KEY_BUF : hs->len;
	memcpy(j.key, hs->key, j.len);
	if (ks_filler_submit(&s->filler, &j))
		s->inval_dropped++;
}

/* The grace thread's pass: one RCU grace period (dp/ring_push.h). */
static int grace_pass(void *ud, __u64 req)
{
	int err = ks_rcu_wait();

	(void)ud;
	(void)req;
	/* the slots waiting for it stay disarmed; the next interval's
	 * tick asks again */
	if (err)
		ks_warn("grace period wait failed (%s); slots stay disarmed",
			strerror(-err));
	return err;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct ks_run_steer *s = ctx;
	const struct ks_hot_event *ev = data;

	if (size < sizeof(*ev))
		return 0;
	invalidate_copies(s, ev->slot);
	ks_steer_fsm_dirty(&s->fsm, ev->slot, ks_mono_ns());
	if (s->on_state)
		s->on_state(s->on_state_ud, s, ev->hash);
	return 0;
}

static unsigned owner_turns(const struct ks_run_steer *s)
{
	return (unsigned)(s->o.owner_share * KS_STEER_SCHED + 0.5);
}

static int epoll_add(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

int ks_run_steer_start(struct ks_run_steer *s, const struct ks_maps *m)
{
	struct ks_replica r[KS_MAX_REPLICAS] = {};
	unsigned i;
	int err;

	err = ks_hot_map_open(&s->map, m->hot, m->hot_filter, m->hot_stats,
			      m->replicas, m->replica_stats);
	if (err) {
		ks_err("cannot map the hot-key slots (%s); rerun with -v",
		       strerror(-err));
		return err;
	}
	s->map_open = 1;
	ks_hot_map_use_replies(&s->map, m->hot_replies);
	ks_steer_fsm_init(&s->fsm, &s->rs, s->map.slot, s->interval_ns,
			  owner_turns(s));
	for (i = 0; i < s->rs.n; i++)
		ks_replica_entry(&s->rs.r[i], &r[i]);
	err = ks_hot_map_set_replicas(&s->map, r, s->rs.n);
	/* the VLAN sub-interfaces are the housekeeping thread's
	 * (agent/housekeep.h): their netlink dump takes rtnl */
	if (!err) {
		s->rb = ring_buffer__new(m->hot_events, on_event, s, NULL);
		if (!s->rb)
			err = -errno;
	}
	if (!err) {
		s->epfd = epoll_create1(EPOLL_CLOEXEC);
		err = s->epfd < 0 ? -errno
				  : epoll_add(s->epfd,
					      ring_buffer__epoll_fd(s->rb));
	}
	if (!err)
		err = ks_bg_start(&s->grace, "ks-grace", grace_pass, NULL, 0,
				  0); /* membarrier() needs no capability */
	if (!err)
		err = epoll_add(s->epfd, ks_bg_fd(s->grace));
	if (err) {
		ks_err("cannot set up the replica table or the dirty events (%s)",
		       strerror(-err));
		return err;
	}
	if (!s->rs.n)
		return 0;
	err = ks_filler_start(&s->filler, &s->rs, &s->owner, s->copy_ttl_s);
	s->filler.fill.unconditional = s->o.unconditional_fills;
	s->filler.fill.delay_ms = s->o.fill_delay_ms;
	if (!err)
		err = epoll_add(s->epfd, ks_filler_fd(&s->filler));
	if (err)
		ks_err("cannot start the thread that copies hot keys to the replicas (%s)",
		       strerror(-err));
	return err;
}

/* A fill action as a job for the worker: the key from the slot (fixed
 * while the slot's generation is). */
static void submit_fill(struct ks_run_steer *s, const struct ks_steer_action *a,
			__u64 now)
{
	const struct ks_hot_slot *hs = &s->map.slot[a->slot];
	struct ks_fill_job j = {
		.slot = a->slot,
		.gen = a->gen,
		.seq = a->seq,
		.nrep = a->ncopies - 1,
	};
	struct ks_steer_fill_result r = {
		.slot = a->slot,
		.gen = a->gen,
		.seq = a->seq,
		.status = KS_FILL_FAILED,
		.owner_failed = 1,
	};
	int err;

	memcpy(j.reps, a->reps, sizeof(j.reps));
	j.len = hs->len > KS_KEY_BUF ? KS_KEY_BUF : hs->len;
	memcpy(j.key, hs->key, j.len);
	err = ks_filler_submit(&s->filler, &j);
	if (err) {
		/* not run: tried again after the retry delay */
		ks_debug("fill of slot %d not queued (%s)", a->slot,
			 strerror(-err));
		ks_steer_fsm_fill_done(&s->fsm, &r, now);
	}
}

/* An arming's time: the longest gap between two, while keys had copies
 * to arm (ks_run_steer_interval restarts it when none had), says how
 * long the loop went without re-arming (the housekeeping's test). */
static void note_arm(struct ks_run_steer *s, __u64 now)
{
	if (s->last_arm_ns && now - s->last_arm_ns > s->arm_gap_max_ns)
		s->arm_gap_max_ns = now - s->last_arm_ns;
	s->last_arm_ns = now;
	s->arms++;
}

/* The machine's actions, in order, onto the map and the worker. */
static void perform(struct ks_run_steer *s, __u64 now)
{
	struct ks_steer_fsm *f = &s->fsm;
	unsigned i;

	for (i = 0; i < f->nact; i++) { /* GRACE may add more */
		const struct ks_steer_action *a = &f->act[i];

		switch (a->type) {
		case KS_ACT_INSTALL:
			ks_hot_map_install(&s->map, a->slot, a->hash, a->key,
					   a->len);
			s->prev_steered[a->slot] = s->prev_tcp[a->slot] = 0;
			s->prev_owner[a->slot] = 0;
			s->owner_ps[a->slot] = 0;
			memset(&s->prev_replies[a->slot], 0,
			       sizeof(s->prev_replies[a->slot]));
			ks_unseen_reset(&s->unseen[a->slot]);
			s->was_armed[a->slot] = s->tcp_seen[a->slot] = 0;
			break;
		case KS_ACT_SET_COPIES:
			ks_hot_map_set_copies(&s->map, a->slot, a->ncopies,
					      a->reps, f->owner_turns);
			break;
		case KS_ACT_FILL:
			submit_fill(s, a, now);
			break;
		case KS_ACT_ARM:
			if (s->fill_dead)
				break; /* nothing would mark its copies stale */
			ks_hot_map_arm(&s->map, a->slot, a->seq, a->expires_ns);
			note_arm(s, now);
			if (s->on_state)
				s->on_state(s->on_state_ud, s,
					    s->map.slot[a->slot].hash);
			break;
		case KS_ACT_DISARM:
			ks_hot_map_disarm(&s->map, a->slot);
			ks_unseen_reset(&s->unseen[a->slot]);
			s->was_armed[a->slot] = 0;
			break;
		case KS_ACT_RELEASE:
			ks_hot_map_release(&s->map, a->slot);
			break;
		case KS_ACT_GRACE:
			/* The packets that saw the slots armed (or their old
			 * copies, or their key) must be done before a slot's
			 * copies change or it is reused: that order is the
			 * machine's (slots wait in REGRACE or RELEASING for
			 * the ticket). The wait itself, seconds on a loaded
			 * machine, runs on the grace thread, not here where
			 * it held every re-arm (docs/testing.md). */
			ks_bg_request(s->grace, a->seq);
			break;
		case KS_ACT_CLEAR:
			ks_hot_map_clear(&s->map, a->slot);
			break;
		case KS_ACT_REPLICA_DOWN:
			ks_warn("replica %s failed a copy; leaving it out for %.0f s",
				s->rs.r[a->slot].text, a->seq / 1e9);
			break;
		}
	}
	f->nact = 0;
}

/* The table's decision for the slot; its rates are ks_run_steer_sample's. */
static void publish_entry(struct ks_run_steer *s, int i,
			  const struct ks_hot_entry *e)
{
	struct ks_hot_slot *hs = &s->map.slot[i];
	__u8 flags = 0;

	hs->reads_mps = (__u64)(e->reads_ps * 1000.0);
	hs->writes_mps = (__u64)(e->writes_ps * 1000.0);
	hs->copies = e->copies;
	hs->subkeys = e->subkeys;
	flags |= e->read_hot ? KS_HOTF_READ_HOT : 0;
	flags |= e->write_hot ? KS_HOTF_WRITE_HOT : 0;
	flags |= e->state == KS_HOT_PINNED ? KS_HOTF_PINNED : 0;
	/* a refresh out keeps the copies the datapath is armed with */
	flags |= ks_hot_map_armed(&s->map, i) ? KS_HOTF_FILLED : 0;
	hs->flags = flags;
}

static void publish_replicas(struct ks_run_steer *s, double interval_s)
{
	unsigned i;

	for (i = 0; i < s->rs.n; i++) {
		struct ks_replica r;
		__u64 v;

		ks_replica_entry(&s->rs.r[i], &r);
		if (ks_hot_map_replica_steered(&s->map, i, &v))
			continue;
		if (interval_s > 0)
			r.steered_mps = (__u64)((v - s->prev_rep_steered[i]) *
						1000.0 / interval_s);
		s->prev_rep_steered[i] = v;
		bpf_map_update_elem(s->map.replicas_fd, &i, &r, BPF_ANY);
	}
}

void ks_run_steer_adopt(struct ks_run_steer *s, struct ks_hot_table *t,
			const struct ks_hot_policy *p)
{
	unsigned i, kept = 0;

	if (!s->map_open)
		return;
	ks_steer_fsm_adopt(&s->fsm, ks_mono_ns());
	for (i = 0; i < KS_HOT_SLOTS; i++) {
		struct ks_hot_slot *hs = &s->map.slot[i];

		if (!hs->hash)
			continue;
		ks_hot_restore(t, p, hs->key, hs->len, hs->hash,
			       hs->reads_mps / 1000.0, hs->writes_mps / 1000.0,
			       hs->copies, hs->subkeys,
			       hs->flags & KS_HOTF_READ_HOT,
			       hs->flags & KS_HOTF_WRITE_HOT);
		kept++;
	}
	if (kept)
		ks_info("kept %u hot keys the previous agent left in the datapath",
			kept);
}

/* Per second over the interval, milli-per-second as the slots keep it. */
static __u64 mps(__u64 now, __u64 prev, double interval_s)
{
	return now < prev ? 0 : (__u64)((now - prev) * 1000.0 / interval_s);
}

/* The owner's replies to slot i's key: totals since it took the slot (its
 * counters are zeroed then) and rates over the interval. */
static void sample_replies(struct ks_run_steer *s, int i, double interval_s)
{
	struct ks_hot_replies *p = &s->prev_replies[i], now;
	struct ks_hot_slot *hs = &s->map.slot[i];

	if (ks_hot_map_replies(&s->map, i, &now))
		return;
	/* a new key in the slot: its counters started again from zero */
	if (now.hits < p->hits || now.misses < p->misses ||
	    now.unpaired < p->unpaired || now.malformed < p->malformed)
		memset(p, 0, sizeof(*p));
	hs->hits_mps = mps(now.hits, p->hits, interval_s);
	hs->misses_mps = mps(now.misses, p->misses, interval_s);
	hs->unpaired_mps = mps(now.unpaired, p->unpaired, interval_s);
	hs->malformed_mps = mps(now.malformed, p->malformed, interval_s);
	hs->replies = now;
	*p = now;
}

size_t ks_run_steer_sample(struct ks_run_steer *s, double interval_s,
			   struct ks_hot_unseen *out, size_t max)
{
	unsigned turns = owner_turns(s);
	enum ks_unseen_verdict v;
	struct ks_hot_stats st;
	size_t n = 0;
	__u8 was;
	int i;

	if (!s->map_open || interval_s <= 0)
		return 0;
	for (i = 0; i < KS_HOT_SLOTS; i++) {
		struct ks_hot_slot *hs = &s->map.slot[i];
		__u64 tcp;

		if (!hs->hash || ks_hot_map_stats(&s->map, i, &st))
			continue;
		tcp = st.tcp_reads - s->prev_tcp[i];
		hs->steered_mps = (__u64)((st.steered - s->prev_steered[i]) *
					  1000.0 / interval_s);
		hs->tcp_mps = (__u64)(tcp * 1000.0 / interval_s);
		s->prev_steered[i] = st.steered;
		s->prev_tcp[i] = st.tcp_reads;
		s->owner_ps[i] = st.owner < s->prev_owner[i]
					 ? 0
					 : (st.owner - s->prev_owner[i]) /
						   interval_s;
		s->prev_owner[i] = st.owner;
		sample_replies(s, i, interval_s);
		was = s->was_armed[i];
		s->was_armed[i] = (__u8)ks_hot_map_armed(&s->map, i);
		s->tcp_seen[i] |= tcp > 0;
		/* never read over TCP since it came in (UDP gets: the
		 * datapath sees them all), or neither armed then nor now (the
		 * library read the owner, seen): nothing unseen; armed (or
		 * dirty) within the interval: partly seen, no evidence either
		 * way, so a hold */
		if (!s->tcp_seen[i] || (!was && !s->was_armed[i]) || n == max)
			continue;
		if (was && s->was_armed[i])
			v = ks_unseen_add(&s->unseen[i], tcp, interval_s, turns,
					  &out[n].reads_ps);
		else
			v = turns && turns < KS_STEER_SCHED ? KS_UNSEEN_HOLD
							    : KS_UNSEEN_NONE,
			out[n].reads_ps = 0;
		if (v == KS_UNSEEN_NONE)
			continue;
		out[n].hash = s->map.slot[i].hash;
		out[n].hold = v == KS_UNSEEN_HOLD;
		n++;
	}
	return n;
}

/* Whether any slot holds a key with copies (to be armed). */
static int copies_wanted(const struct ks_steer_fsm *f)
{
	unsigned i;

	for (i = 0; i < KS_HOT_SLOTS; i++)
		if (f->sl[i].ncopies > 1 && f->sl[i].state != KS_SL_FREE &&
		    f->sl[i].state != KS_SL_RELEASING)
			return 1;
	return 0;
}

unsigned ks_run_steer_interval(struct ks_run_steer *s,
			       const struct ks_hot_table *t, double interval_s)
{
	const struct ks_hot_entry *e;
	size_t pos = 0;
	int i;

	__u64 t0 = ks_mono_ns();

	if (!s->map_open)
		return 0;
	ks_steer_fsm_tick(&s->fsm, t, ks_mono_ns());
	perform(s, ks_mono_ns());
	if (!copies_wanted(&s->fsm))
		s->last_arm_ns = 0; /* no gap while nothing is to be armed */
	while ((e = ks_hot_next(t, &pos))) {
		i = ks_steer_fsm_find(&s->fsm, e->hash);
		if (i >= 0)
			publish_entry(s, i, e);
	}
	publish_replicas(s, interval_s);
	ks_run_steer_poll(s);
	if (ks_mono_ns() - t0 > s->step_max_ns)
		s->step_max_ns = ks_mono_ns() - t0;
	return s->map.used;
}

/*
 * The fill worker stopped (steer_fill.h): the invalidations queued and
 * every later one will never reach the replicas, so no copy can be
 * trusted. Every slot is disarmed at once (the datapath reads from the
 * owner; the fleet hears it through on_state) and none is armed again;
 * the agent goes on counting and publishing.
 */
static void fill_worker_died(struct ks_run_steer *s, int err)
{
	unsigned i, n = 0;

	s->fill_dead = 1;
	for (i = 0; i < KS_HOT_SLOTS; i++) {
		if (!s->map.slot[i].expires_ns)
			continue;
		ks_hot_map_disarm(&s->map, i);
		n++;
		if (s->on_state)
			s->on_state(s->on_state_ud, s, s->map.slot[i].hash);
	}
	ks_err("the thread that copies hot keys to the replicas stopped (%s): steering is off, %u armed keys disarmed, every copy taken as stale and reads left to the owner; restart the agent to steer again",
	       strerror(-err), n);
}

void ks_run_steer_poll(struct ks_run_steer *s)
{
	struct ks_steer_fill_result r[64];
	__u64 t0 = ks_mono_ns();
	unsigned n, i;

	if (!s->map_open)
		return;
	if (s->rb)
		ring_buffer__consume(s->rb);
	if (s->grace) {
		__u64 done;

		ks_bg_ack(s->grace);
		done = ks_bg_done(s->grace);
		if (done > s->grace_seen) {
			s->grace_seen = done;
			ks_steer_fsm_grace_done(&s->fsm, done, ks_mono_ns());
			perform(s, ks_mono_ns());
		}
	}
	while ((n = ks_filler_take(&s->filler, r, 64))) {
		for (i = 0; i < n; i++) {
			ks_steer_fsm_fill_done(&s->fsm, &r[i], ks_mono_ns());
			perform(s, ks_mono_ns());
		}
	}
	if (!s->fill_dead && ks_filler_dead(&s->filler))
		fill_worker_died(s, ks_filler_dead(&s->filler));
	/* after the arms above: a write between the check and the arm
	 * shows here; then the fills that are due go out */
	ks_steer_fsm_poll(&s->fsm, ks_mono_ns());
	perform(s, ks_mono_ns());
	if (ks_mono_ns() - t0 > s->step_max_ns)
		s->step_max_ns = ks_mono_ns() - t0;
}

int ks_run_steer_fd(const struct ks_run_steer *s)
{
	return s->rb ? s->epfd : -1;
}

int ks_run_steer_timeout_ms(const struct ks_run_steer *s)
{
	long long ns;

	if (!s->map_open)
		return -1;
	ns = ks_steer_fsm_next_due(&s->fsm, ks_mono_ns());
	return ns < 0 ? -1 : (int)((ns + 999999) / 1000000);
}

int ks_run_steer_owner_rates(const struct ks_run_steer *s, __u64 hash,
			     double *hits_ps, double *misses_ps)
{
	int i = s->map_open && s->replies ? ks_hot_map_find(&s->map, hash) : -1;

	*hits_ps = *misses_ps = 0;
	if (i < 0)
		return -ENOENT;
	*hits_ps = s->map.slot[i].hits_mps / 1000.0;
	*misses_ps = s->map.slot[i].misses_mps / 1000.0;
	return 0;
}

int ks_run_steer_view(const struct ks_run_steer *s, __u64 hash, __u8 *state,
		      __u64 *write_seq, const char **reps, unsigned *nreps)
{
	const struct ks_steer_slot *sl;
	const struct ks_hot_slot *dp;
	int i = s->map_open ? ks_steer_fsm_find(&s->fsm, hash) : -1;
	int dp_armed;
	unsigned r;

	*nreps = 0;
	*write_seq = 0;
	*state = KS_HDS_COUNTING;
	if (i < 0)
		return -ENOENT;
	sl = &s->fsm.sl[i];
	dp = &s->map.slot[i];
	/* the datapath's word: armed, and no write since */
	dp_armed = dp->expires_ns && dp->write_seq == dp->armed_seq;
	switch (sl->state) {
	case KS_SL_COUNT:
	case KS_SL_RELEASING:
		return 0;
	case KS_SL_ARMED:
		*state = dp_armed ? KS_HDS_ARMED : KS_HDS_DIRTY;
		break;
	default: /* REGRACE, FILL, FILLING */
		*state = dp_armed    ? KS_HDS_ARMED
			 : sl->dirty ? KS_HDS_DIRTY
				     : KS_HDS_FILLING;
		break;
	}
	*write_seq = *state == KS_HDS_DIRTY ? dp->write_seq : dp->armed_seq;
	if (*state != KS_HDS_ARMED)
		return 0; /* reads go to the owner alone */
	for (r = 0; r + 1 < sl->ncopies && r < KS_MAX_COPIES - 1; r++)
		if (sl->reps[r] < s->rs.n)
			reps[(*nreps)++] = s->rs.r[sl->reps[r]].text;
	return 0;
}

void ks_run_steer_status(const struct ks_run_steer *s, FILE *f, __u32 seq)
{
	const struct ks_steer_fsm *m = &s->fsm;
	struct ks_bg_stats grace;
	unsigned i, armed = 0;
	double steered = 0;

	if (!s->map_open || !s->map.used)
		return;
	ks_bg_stats(s->grace, &grace);
	for (i = 0; i < KS_HOT_SLOTS; i++) {
		if (!s->map.slot[i].hash)
			continue;
		armed += ks_hot_map_armed(&s->map, i); /* refreshes out too */
		steered += s->map.slot[i].steered_mps / 1000.0;
	}
	fprintf(f,
		"keysteer: #%u hot: %u keys in the datapath, %u armed, %.1f reads/s steered; copies %llu (%llu failed, %llu raced, %llu before the owner applied a write, %u out), %llu invalidations (%llu failed, %llu dropped), re-armed %llu times (mean %.1f ms, max %.1f ms); steering held the loop %.1f ms at most (grace periods, on their own thread: %.1f ms at most)\n",
		seq, s->map.used, armed, steered, (unsigned long long)m->fills,
		(unsigned long long)m->fill_errors,
		(unsigned long long)m->raced, (unsigned long long)m->unapplied,
		m->filling, (unsigned long long)s->filler.invalidations,
		(unsigned long long)s->filler.inval_errors,
		(unsigned long long)s->inval_dropped,
		(unsigned long long)m->rearms,
		m->rearms ? m->rearm_ms_sum / m->rearms : 0.0, m->rearm_ms_max,
		s->step_max_ns / 1e6, grace.pass_max_ns / 1e6);
}

void ks_run_steer_free(struct ks_run_steer *s)
{
	unsigned i;

	/* the worker first: it writes nothing to the map, but its results
	 * are of no use once the slots are gone */
	ks_filler_stop(&s->filler);
	/* a grace period still running has nothing left to free: the
	 * slots are all disarmed below and the map goes */
	ks_bg_stop(s->grace, KS_GRACE_STOP_WAIT_NS);
	s->grace = NULL;
	if (s->map_open) {
		for (i = 0; i < KS_HOT_SLOTS; i++)
			ks_hot_map_disarm(&s->map, i);
		ks_hot_map_close(&s->map);
	}
	s->map_open = 0;
	/* epfd is set (maybe to -1) whenever rb is */
	if (s->rb && s->epfd >= 0)
		close(s->epfd);
	s->epfd = -1;
	ring_buffer__free(s->rb);
	s->rb = NULL;
}

unsigned ks_run_steer_owner_turns(const struct ks_run_steer *s)
{
	return owner_turns(s);
}

size_t ks_run_steer_auto_dp(const struct ks_run_steer *s,
			    struct ks_auto_dp *out, size_t max)
{
	size_t n = 0;
	int i;

	if (!s || !s->map_open)
		return 0;
	for (i = 0; i < KS_HOT_SLOTS && n < max; i++) {
		const struct ks_hot_slot *hs = &s->map.slot[i];

		if (!hs->hash)
			continue;
		out[n] = (struct ks_auto_dp){
			.key = hs->key,
			.len = hs->len > KS_KEY_BUF ? KS_KEY_BUF : hs->len,
			.hash = hs->hash,
			.steered_ps = hs->steered_mps / 1000.0,
			.owner_ps = s->owner_ps[i],
			.tcp_ps = hs->tcp_mps / 1000.0,
		};
		n++;
	}
	return n;
}

__u64 ks_run_steer_owner_reads(const struct ks_run_steer *s)
{
	return s ? ks_filler_owner_reads(&s->filler) : 0;
}

double ks_run_steer_steered_ps(const struct ks_run_steer *s)
{
	double sum = 0;
	int i;

	if (!s || !s->map_open)
		return 0;
	for (i = 0; i < KS_HOT_SLOTS; i++)
		if (s->map.slot[i].hash)
			sum += s->map.slot[i].steered_mps / 1000.0;
	return sum;
}
