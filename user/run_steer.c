// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * run_steer.c - the hot-key table in the datapath, and the L1 copies
 * (see run_steer.h for the protocol).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "opts.h"
#include "log.h"
#include "ring_push.h"
#include "run_steer.h"
#include "sig.h"

static int forwarding_on(const char *ifname)
{
	char path[128], v = '0';
	FILE *f;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/forwarding",
		 ifname);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (fread(&v, 1, 1, f) != 1)
		v = '0';
	fclose(f);
	return v == '1';
}

int ks_run_steer_prepare(struct ks_run_steer *s, const char *self,
			 const char *ifname, __u32 interval_ms, char *err,
			 size_t errlen)
{
	struct ks_replica_set one;
	char e2[KS_ERRLEN];
	int fwd;

	s->interval_ns = (__u64)interval_ms * 1000000ULL;
	s->ttl_ns = s->interval_ns * KS_STEER_TTL_INTERVALS;
	/* memcached TTLs are whole seconds; a copy outlives its slot's
	 * steering by a little, never serves after it */
	s->copy_ttl_s = (long)((s->ttl_ns + 999999999ULL) / 1000000000ULL) + 1;
	if (!s->replicas_arg)
		return 0;
	if (ks_replicas_parse(s->replicas_arg, &s->rs, err, errlen))
		return -EINVAL;
	if (!self) {
		snprintf(err, errlen,
			 "--replicas needs --self HOST:PORT, the memcached on this host that copies are read from; add --self with this host's shard");
		return -EINVAL;
	}
	if (ks_replicas_parse(self, &one, e2, sizeof(e2))) {
		snprintf(err, errlen,
			 "--self %s cannot be read from (%s); give --self as IPV4:PORT",
			 self, e2);
		return -EINVAL;
	}
	s->owner = one.r[0];
	fwd = forwarding_on(ifname);
	if (fwd <= 0) {
		snprintf(err, errlen,
			 "steering to replicas needs IPv4 forwarding on %s for the kernel's next-hop lookup; run 'sysctl -w net.ipv4.conf.%s.forwarding=1' or drop --replicas",
			 ifname, ifname);
		return -EINVAL;
	}
	return 0;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct ks_run_steer *s = ctx;
	const struct ks_hot_event *ev = data;
	struct ks_steer_slot *sl;

	if (size < sizeof(*ev) || ev->slot >= KS_HOT_SLOTS)
		return 0;
	s->events++;
	sl = &s->sl[ev->slot];
	if (sl->state == KS_SL_ARMED || sl->state == KS_SL_FILL) {
		sl->state = KS_SL_FILL;
		sl->dirty = 1;
		sl->due_ns = ks_hot_map_last_write(&s->map, ev->slot) +
			     KS_STEER_SETTLE_NS;
	}
	return 0;
}

int ks_run_steer_start(struct ks_run_steer *s, const struct ks_maps *m)
{
	struct ks_replica r[KS_MAX_REPLICAS] = {};
	unsigned i;
	int err;

	err = ks_hot_map_open(&s->map, m->hot, m->hot_stats, m->replicas,
			      m->replica_stats);
	if (err) {
		ks_err("cannot map the hot-key slots (%s); rerun with -v",
		       strerror(-err));
		return err;
	}
	s->map_open = 1;
	for (i = 0; i < s->rs.n; i++) {
		r[i].addr = s->rs.r[i].addr;
		r[i].port = htons(s->rs.r[i].port);
		ks_mc_init(&s->conn[i], s->rs.r[i].addr, s->rs.r[i].port,
			   KS_STEER_MC_TIMEOUT);
	}
	ks_mc_init(&s->owner_conn, s->owner.addr, s->owner.port,
		   KS_STEER_MC_TIMEOUT);
	err = ks_hot_map_set_replicas(&s->map, r, s->rs.n);
	if (!err) {
		s->rb = ring_buffer__new(m->hot_events, on_event, s, NULL);
		if (!s->rb)
			err = -errno;
	}
	if (err)
		ks_err("cannot set up the replica table or the dirty events (%s)",
		       strerror(-err));
	s->prev_ns = ks_mono_ns();
	return err;
}

static int replica_down(const struct ks_run_steer *s, unsigned r, __u64 now)
{
	return s->down_until[r] > now;
}

/* After a failed copy: the replicas whose connection broke are down for a
 * back-off, so one dead replica costs one timeout per back-off, not one
 * per copy, and new choices go around it. */
static void note_failures(struct ks_run_steer *s, const struct ks_steer_slot *sl,
			  __u64 now)
{
	unsigned j, r;

	for (j = 0; j + 1 < sl->ncopies; j++) {
		r = sl->reps[j];
		if (s->conn[r].fd >= 0)
			continue;
		s->down_for[r] = s->down_for[r] ?
			2 * s->down_for[r] : KS_STEER_DOWN_NS;
		if (s->down_for[r] > KS_STEER_DOWN_MAX_NS)
			s->down_for[r] = KS_STEER_DOWN_MAX_NS;
		if (!replica_down(s, r, now))
			ks_warn("replica %s failed a copy; leaving it out for %.0f s",
				s->rs.r[r].text, s->down_for[r] / 1e9);
		s->down_until[r] = now + s->down_for[r];
	}
}

/* Copies the key's value from the owner to its replicas and arms the
 * slot at the sequence read before the copy. */
static void fill_slot(struct ks_run_steer *s, int i, __u64 now)
{
	struct ks_steer_slot *sl = &s->sl[i];
	const struct ks_hot_slot *hs = &s->map.slot[i];
	struct ks_mc_conn *conns[KS_MAX_COPIES - 1];
	struct ks_fill_result res;
	__u64 seq, last;
	unsigned j;
	int ret;

	seq = ks_hot_map_write_seq(&s->map, i);
	last = ks_hot_map_last_write(&s->map, i);
	if (last && now < last + KS_STEER_SETTLE_NS) {
		sl->due_ns = last + KS_STEER_SETTLE_NS;
		return;
	}
	for (j = 0; j + 1 < sl->ncopies; j++) {
		conns[j] = &s->conn[sl->reps[j]];
		if (replica_down(s, sl->reps[j], now)) {
			/* the next interval chooses copies without it */
			sl->due_ns = now + s->interval_ns;
			return;
		}
	}
	ret = ks_fill_copies(&s->owner_conn, conns, sl->ncopies - 1, hs->key,
			     hs->len, s->copy_ttl_s, &res);
	s->fills++;
	if (ret || !res.found) {
		if (ret) {
			s->fill_errors++;
			note_failures(s, sl, ks_mono_ns());
		}
		ks_debug("copy of slot %d: %s", i,
			 ret ? strerror(-ret) : "not at the owner");
		ks_hot_map_disarm(&s->map, i);
		sl->state = KS_SL_FILL;
		sl->due_ns = now + (ret ? KS_STEER_RETRY_NS : s->interval_ns);
		return;
	}
	now = ks_mono_ns();
	ks_hot_map_arm(&s->map, i, seq, now + s->ttl_ns);
	if (ks_hot_map_write_seq(&s->map, i) != seq) {
		/* a write during the copy: stays dirty, copy again */
		sl->state = KS_SL_FILL;
		sl->due_ns = now + KS_STEER_SETTLE_NS;
		return;
	}
	for (j = 0; j + 1 < sl->ncopies; j++)
		s->down_for[sl->reps[j]] = 0; /* a good copy ends the back-off */
	if (sl->dirty && last) {
		double ms = (double)(now - last) / 1e6;

		sl->dirty = 0;
		s->rearms++;
		s->rearm_ms_sum += ms;
		if (ms > s->rearm_ms_max)
			s->rearm_ms_max = ms;
	}
	sl->state = KS_SL_ARMED;
}

static unsigned owner_turns(const struct ks_run_steer *s)
{
	return (unsigned)(s->owner_share * KS_STEER_SCHED + 0.5);
}

/* Copies wanted for an entry, and which replicas: rendezvous over the
 * replicas that are up, so a dead one's keys move and nobody else's. */
static unsigned want_copies(const struct ks_run_steer *s,
			    const struct ks_hot_entry *e, __u8 *reps)
{
	unsigned n = e->read_hot || e->state == KS_HOT_PINNED ? e->copies : 1;
	struct ks_replica_set up = { .n = 0 };
	__u8 map[KS_MAX_REPLICAS], pick[KS_MAX_COPIES - 1];
	__u64 now = ks_mono_ns();
	unsigned i, got;

	for (i = 0; i < s->rs.n; i++) {
		if (replica_down(s, i, now))
			continue;
		map[up.n] = i;
		up.r[up.n++] = s->rs.r[i];
	}
	if (n > up.n + 1)
		n = up.n + 1;
	if (n > KS_MAX_COPIES)
		n = KS_MAX_COPIES;
	if (n < 2 || ks_mc_key_check(e->key, e->len))
		return 1;
	got = ks_rendezvous_pick(e->hash, &up, n - 1, pick);
	for (i = 0; i < got; i++)
		reps[i] = map[pick[i]];
	return got + 1;
}

static void publish_entry(struct ks_run_steer *s, int i,
			  const struct ks_hot_entry *e, double interval_s)
{
	struct ks_hot_slot *hs = &s->map.slot[i];
	struct ks_steer_slot *sl = &s->sl[i];
	struct ks_hot_stats st;
	__u8 flags = 0;

	if (!ks_hot_map_stats(&s->map, i, &st) && interval_s > 0) {
		hs->steered_mps = (__u64)((st.steered - sl->prev_steered) *
					  1000.0 / interval_s);
		hs->tcp_mps = (__u64)((st.tcp_reads - sl->prev_tcp) * 1000.0 /
				      interval_s);
		sl->prev_steered = st.steered;
		sl->prev_tcp = st.tcp_reads;
	}
	hs->reads_mps = (__u64)(e->reads_ps * 1000.0);
	hs->writes_mps = (__u64)(e->writes_ps * 1000.0);
	hs->copies = e->copies;
	hs->subkeys = e->subkeys;
	flags |= e->read_hot ? KS_HOTF_READ_HOT : 0;
	flags |= e->write_hot ? KS_HOTF_WRITE_HOT : 0;
	flags |= e->state == KS_HOT_PINNED ? KS_HOTF_PINNED : 0;
	flags |= sl->state == KS_SL_ARMED ? KS_HOTF_FILLED : 0;
	hs->flags = flags;
}

/* One table entry into its slot; returns the slot or -1. */
static int sync_entry(struct ks_run_steer *s, const struct ks_hot_entry *e)
{
	__u8 reps[KS_MAX_COPIES - 1] = {};
	unsigned n = want_copies(s, e, reps);
	struct ks_steer_slot *sl;
	int i = ks_hot_map_find(&s->map, e->hash);

	if (i < 0) {
		i = ks_hot_map_alloc(&s->map, e->hash, e->key, e->len);
		if (i < 0) {
			s->no_slot++;
			return -1;
		}
		sl = &s->sl[i];
		memset(sl, 0, sizeof(*sl));
		sl->ncopies = n;
		memcpy(sl->reps, reps, sizeof(reps));
		ks_hot_map_set_copies(&s->map, i, n, reps, owner_turns(s));
		sl->state = n > 1 ? KS_SL_FILL : KS_SL_COUNT;
		sl->seen = 1;
		return i;
	}
	sl = &s->sl[i];
	sl->seen = 1;
	if (sl->ncopies == n && !memcmp(sl->reps, reps, sizeof(reps))) {
		if (sl->state == KS_SL_ARMED)
			sl->state = KS_SL_FILL; /* the interval's refresh */
		return i;
	}
	/* new copies: no packet may pick a replica from the old list once
	 * the new one is written, so disarm and wait a grace period */
	ks_hot_map_disarm(&s->map, i);
	sl->ncopies = n;
	memcpy(sl->reps, reps, sizeof(reps));
	sl->state = KS_SL_REGRACE;
	return i;
}

static void publish_replicas(struct ks_run_steer *s, double interval_s)
{
	unsigned i;

	for (i = 0; i < s->rs.n; i++) {
		struct ks_replica r = { .addr = s->rs.r[i].addr,
					.port = htons(s->rs.r[i].port) };
		__u64 v;

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
	unsigned i, j, kept = 0;

	if (!s->map_open)
		return;
	for (i = 0; i < KS_HOT_SLOTS; i++) {
		struct ks_hot_slot *hs = &s->map.slot[i];
		struct ks_steer_slot *sl = &s->sl[i];

		if (!hs->hash)
			continue;
		memset(sl, 0, sizeof(*sl));
		sl->ncopies = hs->ncopies ? hs->ncopies : 1;
		for (j = 0; j + 1 < KS_MAX_COPIES; j++)
			sl->reps[j] = hs->replica[j];
		if (sl->ncopies < 2)
			sl->state = KS_SL_COUNT;
		else
			sl->state = ks_hot_map_armed(&s->map, i) ? KS_SL_ARMED :
								    KS_SL_FILL;
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

unsigned ks_run_steer_interval(struct ks_run_steer *s,
			       const struct ks_hot_table *t, double interval_s)
{
	const struct ks_hot_entry *e;
	size_t pos = 0;
	int i, regrace = 0;

	if (!s->map_open)
		return 0;
	for (i = 0; i < KS_HOT_SLOTS; i++)
		s->sl[i].seen = 0;
	while ((e = ks_hot_next(t, &pos))) {
		i = sync_entry(s, e);
		if (i >= 0)
			publish_entry(s, i, e, interval_s);
	}
	for (i = 0; i < KS_HOT_SLOTS; i++) {
		struct ks_steer_slot *sl = &s->sl[i];

		if (sl->state == KS_SL_FREE)
			continue;
		if (!sl->seen) {
			ks_hot_map_release(&s->map, i);
			memset(sl, 0, sizeof(*sl));
			regrace = 1;
		} else if (sl->state == KS_SL_REGRACE) {
			regrace = 1;
		}
	}
	if (regrace || ks_hot_map_releasing(&s->map)) {
		if (ks_rcu_wait())
			ks_warn("grace period wait failed (%s); slots stay disarmed",
				strerror(errno));
		else
			ks_hot_map_reclaim(&s->map);
		for (i = 0; i < KS_HOT_SLOTS; i++) {
			struct ks_steer_slot *sl = &s->sl[i];

			if (sl->state != KS_SL_REGRACE)
				continue;
			ks_hot_map_set_copies(&s->map, i, sl->ncopies,
					      sl->reps, owner_turns(s));
			sl->state = sl->ncopies > 1 ? KS_SL_FILL : KS_SL_COUNT;
		}
	}
	publish_replicas(s, interval_s);
	ks_run_steer_poll(s);
	return s->map.used;
}

void ks_run_steer_poll(struct ks_run_steer *s)
{
	__u64 now;
	int i;

	if (!s->map_open)
		return;
	if (s->rb)
		ring_buffer__consume(s->rb);
	now = ks_mono_ns();
	for (i = 0; i < KS_HOT_SLOTS; i++)
		if (s->sl[i].state == KS_SL_FILL && s->sl[i].due_ns <= now)
			fill_slot(s, i, now);
}

int ks_run_steer_fd(const struct ks_run_steer *s)
{
	return s->rb ? ring_buffer__epoll_fd(s->rb) : -1;
}

int ks_run_steer_timeout_ms(const struct ks_run_steer *s)
{
	__u64 now = ks_mono_ns(), first = 0;
	int i;

	for (i = 0; i < KS_HOT_SLOTS; i++)
		if (s->sl[i].state == KS_SL_FILL &&
		    (!first || s->sl[i].due_ns < first))
			first = s->sl[i].due_ns;
	if (!first)
		return -1;
	return first <= now ? 0 : (int)((first - now + 999999) / 1000000);
}

void ks_run_steer_status(const struct ks_run_steer *s, FILE *f, __u32 seq)
{
	unsigned i, armed = 0;
	double steered = 0;

	if (!s->map_open || !s->map.used)
		return;
	for (i = 0; i < KS_HOT_SLOTS; i++) {
		if (!s->map.slot[i].hash)
			continue;
		armed += s->sl[i].state == KS_SL_ARMED;
		steered += s->map.slot[i].steered_mps / 1000.0;
	}
	fprintf(f,
		"keysteer: #%u hot: %u keys in the datapath, %u armed, %.1f reads/s steered; copies %llu (%llu failed), re-armed %llu times (mean %.1f ms, max %.1f ms)\n",
		seq, s->map.used, armed, steered,
		(unsigned long long)s->fills,
		(unsigned long long)s->fill_errors,
		(unsigned long long)s->rearms,
		s->rearms ? s->rearm_ms_sum / s->rearms : 0.0, s->rearm_ms_max);
}

void ks_run_steer_free(struct ks_run_steer *s)
{
	unsigned i;

	if (s->map_open) {
		for (i = 0; i < KS_HOT_SLOTS; i++)
			ks_hot_map_disarm(&s->map, i);
		ks_hot_map_close(&s->map);
	}
	s->map_open = 0;
	ring_buffer__free(s->rb);
	s->rb = NULL;
	for (i = 0; i < s->rs.n; i++)
		ks_mc_close(&s->conn[i]);
	ks_mc_close(&s->owner_conn);
}
