// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * run_purge.c - the ownership-loss purge's thread (see run_purge.h): it
 * owns its copies of the rings, so the loop hands a ring over and goes
 * on; the gate, the crawl and the deletes all run here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include "core/dedicated.h"
#include "agent/run_purge.h"
#include "core/purge.h"
#include "net/mc_client.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/opts.h"
#include "util/thread.h"

#define DUMP_TIMEOUT_MS 10000 /* a crawler line may wait on a busy LRU */
#define DEL_TIMEOUT_MS  2000
#define BUSY_WAIT_NS    200000000ULL
#define BUSY_GIVE_UP_NS 30000000000ULL
#define SEC             1000000000ULL

void ks_run_purge_init(struct ks_run_purge *p)
{
	memset(p, 0, sizeof(*p));
	p->rate = KS_PURGE_RATE_DEFAULT;
	p->grace_s = KS_PURGE_GRACE_DEFAULT;
	p->sweep_rate = KS_PURGE_SWEEP_RATE_DEFAULT;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
}

int ks_run_purge_opt(struct ks_run_purge *p, int c, const char *arg, char *err,
		     size_t errlen)
{
	unsigned long long v;

	switch (c) {
	case KS_OPTV_PURGE_RATE:
		if (ks_parse_uint("--purge-rate", arg, 0, KS_PURGE_RATE_MAX, &v,
				  err, errlen))
			return -1;
		p->rate = (__u32)v;
		return 1;
	case KS_OPTV_PURGE_GRACE:
		if (ks_parse_uint("--purge-grace", arg, 0, KS_PURGE_GRACE_MAX,
				  &v, err, errlen))
			return -1;
		p->grace_s = (__u32)v;
		return 1;
	case KS_OPTV_PURGE_SWEEP:
		if (ks_parse_uint("--purge-sweep-rate", arg, 0,
				  KS_PURGE_RATE_MAX, &v, err, errlen))
			return -1;
		p->sweep_rate = (__u32)v;
		return 1;
	case KS_OPTV_RING_PURGE:
		if (strcmp(arg, "on") && strcmp(arg, "off")) {
			snprintf(
				err, errlen,
				"--ring-purge '%s' is not a state; give on (the default) or off",
				arg);
			return -1;
		}
		p->off = !strcmp(arg, "off");
		return 1;
	}
	return 0;
}

int ks_run_purge_prepare(struct ks_run_purge *p, const char *self, char *err,
			 size_t errlen)
{
	struct ks_replica_set one;
	char why[KS_ERRLEN];

	p->self = self;
	p->st.rate_limit = p->rate;
	p->st.sweep_limit = p->sweep_rate;
	if (!self || (!p->rate && !p->sweep_rate))
		return 0; /* no ring shard here (a replica), or asked not to */
	if (ks_replicas_parse(self, &one, why, sizeof(why))) {
		snprintf(
			err, errlen,
			"--self %s is no address the purge can reach memcached at (%s); give --self as IPV4:PORT or [IPV6]:PORT, or --purge-rate 0 --purge-sweep-rate 0",
			self, why);
		return -EINVAL;
	}
	p->mc = one.r[0];
	p->enabled = 1;
	return 0;
}

/* ---- one pass ---- */

struct pass {
	struct ks_run_purge *p;
	const struct ks_ring *r;
	__u32 self;
	/* the shard rules at the pass's start, resolved on r's shards */
	struct ks_hot_rules ded;
	int ded_idx[KS_HOT_RULES_MAX];
	__u32 rate;
	__u64 gen;
	int sweep;
	struct ks_mc_conn dump, del;
	__u64 t0, listed, deleted, skipped, errors;
	/* the batch: "md KEY q\r\n"... then "mn\r\n" */
	char buf[KS_PURGE_BATCH * (KS_MC_KEY_MAX + 8) + 8];
	size_t blen;
	__u32 bn;
	char why[KS_PURGE_WHY_LEN];
};

/* Whether this shard owns the key: the shard a shard rule places it on
 * (a tenant's keys on their dedicated shard are never purged there),
 * else its owner on the ring. */
static int owned(const struct pass *x, const void *key, size_t len)
{
	int d = x->ded.n ? ks_dedicated_place(&x->ded, x->ded_idx, key, len,
					      NULL)
			 : -1;

	if (d >= 0)
		return (__u32)d == x->self;
	return ks_purge_owned(x->r, x->self, key, len);
}

static __u64 ms_of(__u64 ns)
{
	return ns / 1000000;
}

/* Sleeps until the monotonic time due; 1 when the pass must stop. A new
 * ring or the stop wakes it at once. */
static int wait_until(struct pass *x, __u64 due)
{
	struct ks_run_purge *p = x->p;
	int a;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		__u64 now = ks_mono_ns(), rnow;
		struct timespec ts;

		a = p->stop || p->gen != x->gen;
		if (a || now >= due)
			break;
		/* cond waits count on CLOCK_REALTIME */
		rnow = ks_real_ns() + (due - now);
		ts.tv_sec = (time_t)(rnow / SEC);
		ts.tv_nsec = (long)(rnow % SEC);
		pthread_cond_timedwait(&p->cv, &p->mu, &ts);
	}
	pthread_mutex_unlock(&p->mu);
	return a;
}

static void publish_progress(struct pass *x, __u32 n)
{
	struct ks_run_purge *p = x->p;
	__u64 dt = ks_mono_ns() - x->t0;

	pthread_mutex_lock(&p->mu);
	if (x->sweep)
		p->st.swept += n;
	else
		p->st.purged += n;
	p->st.rate_mps = (__u64)(ks_purge_rate(x->deleted, dt) * 1000);
	pthread_mutex_unlock(&p->mu);
}

/* Sends the batch when it is due, reads its one "MN". 0, 1 aborted, or a
 * negative errno (memcached away). */
static int flush(struct pass *x)
{
	struct iovec iov;
	__u64 now = ks_mono_ns(), start;
	char *line;
	int err, fresh;

	if (!x->bn)
		return 0;
	x->t0 = ks_pace_rebase(x->t0, x->deleted, x->rate, now);
	if (wait_until(x, ks_pace_due(x->t0, x->deleted, x->rate)))
		return 1;
	memcpy(x->buf + x->blen, "mn\r\n", 4);
	iov.iov_base = x->buf;
	iov.iov_len = x->blen + 4;
	start = ks_mono_ns();
	err = ks_mc_pipe_send(&x->del, &iov, 1, ms_of(start) + DEL_TIMEOUT_MS,
			      &fresh);
	/* quiet mode suppresses HD only: an NF (the item expired or was
	 * deleted since it was listed) is gone all the same; anything else
	 * is memcached refusing */
	while (!err &&
	       !(err = ks_mc_pipe_line(&x->del, &line,
				       ms_of(start) + DEL_TIMEOUT_MS)) &&
	       strcmp(line, "MN"))
		x->errors += strcmp(line, "NF") != 0;
	if (err)
		return err;
	x->deleted += x->bn;
	publish_progress(x, x->bn);
	x->bn = 0;
	x->blen = 0;
	return 0;
}

static int add_key(struct pass *x, const __u8 *key, size_t klen)
{
	/* a binary-protocol key with a space or control byte: the text
	 * protocol cannot name it (counted, left) */
	if (ks_mc_key_check(key, klen)) {
		x->skipped++;
		return 0;
	}
	memcpy(x->buf + x->blen, "md ", 3);
	memcpy(x->buf + x->blen + 3, key, klen);
	memcpy(x->buf + x->blen + 3 + klen, " q\r\n", 4);
	x->blen += klen + 7;
	x->bn++;
	return x->bn >= ks_pace_batch(x->rate) ? flush(x) : 0;
}

/* Opens the dump: its first line, retried while the crawler is BUSY with
 * another job (memcached's own expiry crawls, another dumper). */
static int open_dump(struct pass *x, char **line, enum ks_md_line *kind,
		     __u8 *key, size_t *klen)
{
	static const char cmd[] = "lru_crawler metadump all\r\n";
	__u64 give_up = ks_mono_ns() + BUSY_GIVE_UP_NS;

	for (;;) {
		struct iovec iov = { (void *)cmd, sizeof(cmd) - 1 };
		__u64 dl = ms_of(ks_mono_ns()) + DUMP_TIMEOUT_MS;
		int fresh, err;

		/* a fresh connection each time: memcached refuses a dump
		 * after other commands on it */
		ks_mc_close(&x->dump);
		err = ks_mc_pipe_send(&x->dump, &iov, 1, dl, &fresh);
		if (!err)
			err = ks_mc_pipe_line_lf(&x->dump, line, dl);
		if (err) {
			snprintf(x->why, sizeof(x->why),
				 "memcached at %s: lru_crawler metadump: %s",
				 x->p->mc.text, strerror(-err));
			return err;
		}
		*kind = ks_metadump_line(*line, strlen(*line), key, klen);
		if (*kind != KS_MD_BUSY)
			return 0;
		if (ks_mono_ns() >= give_up) {
			snprintf(
				x->why, sizeof(x->why),
				"memcached at %s: the LRU crawler stayed busy for %llu s",
				x->p->mc.text,
				(unsigned long long)(BUSY_GIVE_UP_NS / SEC));
			return -EBUSY;
		}
		ks_mc_close(&x->dump);
		if (wait_until(x, ks_mono_ns() + BUSY_WAIT_NS))
			return 1;
	}
}

/* Lists every item and deletes those the ring places elsewhere. 0 done,
 * 1 aborted (a new ring, the stop), or a negative errno with x->why. */
static int run_pass(struct pass *x)
{
	__u8 key[KS_MC_KEY_MAX];
	__u64 list_t0, list_rate = (__u64)x->rate * KS_PURGE_LIST_FACTOR;
	enum ks_md_line kind;
	size_t klen;
	char *line;
	int err;

	x->t0 = list_t0 = ks_mono_ns();
	err = open_dump(x, &line, &kind, key, &klen);
	while (!err) {
		if (kind == KS_MD_END || kind == KS_MD_EMPTY)
			return flush(x);
		if (kind != KS_MD_ITEM) {
			snprintf(
				x->why, sizeof(x->why),
				"memcached at %.60s: lru_crawler metadump answered '%.60s'",
				x->p->mc.text, line);
			return -EPROTO;
		}
		x->listed++;
		if (!owned(x, key, klen))
			err = add_key(x, key, klen);
		if (!err && !(x->listed & 255)) {
			list_t0 = ks_pace_rebase(list_t0, x->listed, list_rate,
						 ks_mono_ns());
			if (wait_until(x, ks_pace_due(list_t0, x->listed,
						      list_rate)))
				return 1;
		}
		if (err)
			break;
		err = ks_mc_pipe_line_lf(&x->dump, &line,
					 ms_of(ks_mono_ns()) + DUMP_TIMEOUT_MS);
		if (err)
			snprintf(x->why, sizeof(x->why),
				 "memcached at %s: reading the metadump: %s",
				 x->p->mc.text, strerror(-err));
		else
			kind = ks_metadump_line(line, strlen(line), key, &klen);
	}
	if (err < 0 && !x->why[0])
		snprintf(x->why, sizeof(x->why),
			 "memcached at %s: deleting: %s", x->p->mc.text,
			 strerror(-err));
	return err;
}

/* One pass at rate over ring r (its shards s), its outcome logged and
 * counted. */
static int pass_once(struct ks_run_purge *p, const struct ks_ring *r,
		     const struct ks_shards *s, __u32 self, __u32 rate,
		     __u64 gen, int sweep)
{
	struct pass *x = calloc(1, sizeof(*x));
	__u64 dt;
	int rc;

	if (!x)
		return -ENOMEM;
	pthread_mutex_lock(&p->mu);
	if (p->ded)
		x->ded = *p->ded;
	pthread_mutex_unlock(&p->mu);
	ks_dedicated_resolve(&x->ded, s, x->ded_idx);
	x->p = p;
	x->r = r;
	x->self = self;
	x->rate = rate;
	x->gen = gen;
	x->sweep = sweep;
	ks_mc_init(&x->dump, p->mc.family, &p->mc.addr, p->mc.port,
		   DUMP_TIMEOUT_MS);
	ks_mc_init(&x->del, p->mc.family, &p->mc.addr, p->mc.port,
		   DEL_TIMEOUT_MS);
	rc = run_pass(x);
	ks_mc_close(&x->dump);
	ks_mc_close(&x->del);
	dt = ks_mono_ns() - x->t0;
	pthread_mutex_lock(&p->mu);
	p->st.listed += x->listed;
	p->st.last_end_real_ns = ks_real_ns();
	if (rc < 0) {
		p->st.errors++;
		snprintf(p->st.why, sizeof(p->st.why), "%s", x->why);
	} else if (!rc && !sweep) {
		if (!p->st.passes) {
			p->st.last_ns = dt;
			p->st.last_items = x->deleted;
		}
		p->st.passes++;
	}
	pthread_mutex_unlock(&p->mu);
	if (rc < 0)
		ks_warn("purge %s: %s; tried again later",
			sweep ? "sweep" : "pass", x->why);
	else if (!rc && (!sweep || x->deleted))
		ks_info("purge %s: %llu of %llu items deleted (not this shard's under the ring), %llu not nameable, in %.1f s (%.0f items/s)%s",
			sweep ? "sweep" : "pass",
			(unsigned long long)x->deleted,
			(unsigned long long)x->listed,
			(unsigned long long)x->skipped, dt / 1e9,
			ks_purge_rate(x->deleted, dt),
			x->errors ? "; memcached refused some deletes" : "");
	free(x);
	return rc;
}

/* ---- the thread ---- */

/* The ring the purge acts for: the last one the gate let through (or the
 * one the agent started with); a ring the gate refused is measured
 * against it, and so is the ring after (a refused ring and its revert
 * are one change that moved nothing). */
struct ring_state {
	struct ks_ring r;
	struct ks_shards s;
	__u32 self;  /* KS_NO_SHARD: owns nothing */
	int refused; /* the ring in force is refused: no pass, no sweep */
};

static void ring_state_free(struct ring_state *rs)
{
	ks_ring_free(&rs->r);
	ks_shards_free(&rs->s);
	memset(rs, 0, sizeof(*rs));
	rs->self = KS_NO_SHARD;
}

/* The ring handed over (p->mu held, dropped while the gate runs): 1 when
 * passes are due. */
static int take_change(struct ks_run_purge *p, struct ring_state *cur)
{
	struct ks_ring new_r = p->new_r;
	struct ks_shards new_s = p->new_s;
	struct ks_purge_gate g;
	__u64 version = p->version;
	int forced = p->forced, due = 0, rc;

	memset(&p->new_r, 0, sizeof(p->new_r));
	memset(&p->new_s, 0, sizeof(p->new_s));
	p->have_change = 0;
	pthread_mutex_unlock(&p->mu);
	if (!cur->r.half) { /* the ring at the start: swept, no pass */
		cur->r = new_r;
		cur->s = new_s;
		cur->self = ks_purge_self_index(&cur->s, p->self);
		pthread_mutex_lock(&p->mu);
		return 0;
	}
	rc = ks_purge_gate(&cur->r, &cur->s, &new_r, &new_s, p->self, forced,
			   &g);
	if (rc) {
		ks_warn("ring v%llu: no purge: out of memory to measure the change",
			(unsigned long long)version);
	} else if (!g.allowed) {
		ks_warn("ring v%llu: no purge: %s", (unsigned long long)version,
			g.why);
	} else {
		due = g.away > 0 && p->rate;
		ks_info("ring v%llu: %s%s", (unsigned long long)version, g.why,
			due       ? "; purging what this shard no longer owns"
			: p->rate ? "; nothing to purge"
				  : "; --purge-rate 0: no purge");
	}
	if (rc || !g.allowed) {
		cur->refused = 1;
		ks_ring_free(&new_r);
		ks_shards_free(&new_s);
	} else {
		ring_state_free(cur);
		cur->r = new_r;
		cur->s = new_s;
		cur->self = ks_purge_self_index(&cur->s, p->self);
	}
	pthread_mutex_lock(&p->mu);
	if (rc || !g.allowed) {
		p->st.refused++;
		snprintf(p->st.why, sizeof(p->st.why), "ring v%llu: %.130s",
			 (unsigned long long)version,
			 rc ? "out of memory" : g.why);
	}
	if (due) {
		p->st.ring_version = version;
		p->st.passes = 0;
		p->st.last_ns = 0;
		p->st.last_items = 0;
	}
	return due;
}

/* When the next pass for a change is due after one ended at now: every
 * period until the grace ends (grace_end 0: no pass has ended yet); 0
 * when none is. */
static __u64 next_change_pass(__u64 now, __u64 period, __u64 grace_end)
{
	if (grace_end && now + period > grace_end + period / 2)
		return 0;
	return now + period;
}

static void *worker(void *arg)
{
	struct ks_run_purge *p = arg;
	struct ring_state cur = { .self = KS_NO_SHARD };
	__u64 grace_end = 0, next_pass = 0, next_sweep = 0, gen;
	__u64 period;

	period = (__u64)p->grace_s * SEC / 3;
	if (period < SEC)
		period = SEC;
	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		__u64 now = ks_mono_ns(), wake = ~0ULL;
		int sweep;

		if (p->have_change) {
			if (take_change(p, &cur)) {
				now = ks_mono_ns();
				next_pass = now;
				grace_end = 0; /* from the first pass's end */
			} else {
				next_pass = 0;
			}
			if (!next_sweep)
				next_sweep = ks_mono_ns() +
					     KS_PURGE_SWEEP_GAP_S * SEC;
			continue;
		}
		sweep = !(next_pass && now >= next_pass) && p->sweep_rate &&
			!cur.refused && next_sweep && now >= next_sweep;
		if ((next_pass && now >= next_pass) || sweep) {
			int rc;

			gen = p->gen;
			p->st.state = sweep ? KS_PURGE_SWEEPING
					    : KS_PURGE_RUNNING;
			pthread_mutex_unlock(&p->mu);
			rc = pass_once(p, &cur.r, &cur.s, cur.self,
				       sweep ? p->sweep_rate : p->rate, gen,
				       sweep);
			pthread_mutex_lock(&p->mu);
			now = ks_mono_ns();
			/* clients on the old ring write here during the
			 * whole first pass (a long one at 1M items): the
			 * grace counts from its end; a failed pass is tried
			 * again until one ends */
			if (!sweep && !rc && !grace_end)
				grace_end = now + (__u64)p->grace_s * SEC;
			if (!sweep && rc <= 0)
				next_pass = next_change_pass(now, period,
							     grace_end);
			next_sweep = now + KS_PURGE_SWEEP_GAP_S * SEC;
			continue;
		}
		p->st.state = next_pass                    ? KS_PURGE_GRACE
			      : !cur.refused && cur.r.half ? KS_PURGE_IDLE
							   : KS_PURGE_OFF;
		if (next_pass)
			wake = next_pass;
		if (p->sweep_rate && !cur.refused && next_sweep &&
		    next_sweep < wake)
			wake = next_sweep;
		if (wake == ~0ULL) {
			pthread_cond_wait(&p->cv, &p->mu);
		} else {
			__u64 r = ks_real_ns() + (wake - now);
			struct timespec ts = { .tv_sec = (time_t)(r / SEC),
					       .tv_nsec = (long)(r % SEC) };

			pthread_cond_timedwait(&p->cv, &p->mu, &ts);
		}
	}
	p->st.state = KS_PURGE_OFF;
	pthread_mutex_unlock(&p->mu);
	ring_state_free(&cur);
	return NULL;
}

int ks_run_purge_start(struct ks_run_purge *p)
{
	/* it talks TCP to memcached only: no capability */
	struct ks_thread_opts to = { .name = "ks-purge" };
	int err;

	if (!p->enabled)
		return 0;
	if (p->off) {
		ks_warn("--ring-purge off (test-only): this shard keeps what a new ring places elsewhere");
		return 0;
	}
	/* signals stay the loop's */
	err = ks_thread_start(&p->th, &to, worker, p);
	if (err)
		return err;
	p->started = 1;
	return 0;
}

void ks_run_purge_ring(struct ks_run_purge *p, const struct ks_ring *new,
		       const struct ks_shards *news, __u64 version, int forced)
{
	struct ks_ring n = {};
	struct ks_shards ns = {};

	if (!p || !p->started)
		return;
	/* copied here, ~1.5 MB: the loop frees or replaces its ring later */
	if (ks_ring_dup(&n, new) || ks_shards_dup(&ns, news)) {
		ks_warn("ring v%llu: no purge: out of memory to copy the ring",
			(unsigned long long)version);
		ks_ring_free(&n);
		ks_shards_free(&ns);
		return;
	}
	pthread_mutex_lock(&p->mu);
	/* a ring not taken yet is replaced: the thread measures the newest
	 * against the ring it acts for, whatever came between */
	ks_ring_free(&p->new_r);
	ks_shards_free(&p->new_s);
	p->new_r = n;
	p->new_s = ns;
	p->version = version;
	p->forced = forced;
	p->have_change = 1;
	p->gen++;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void ks_run_purge_report(struct ks_run_purge *p, struct ks_purge_report *out)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	*out = p->st;
	pthread_mutex_unlock(&p->mu);
}

void ks_run_purge_rules(struct ks_run_purge *p, const struct ks_hot_rules *r)
{
	struct ks_hot_rules *n = NULL;
	size_t i;

	if (!p || !p->enabled)
		return;
	if (r && ks_dedicated_count(r) && (n = calloc(1, sizeof(*n))))
		for (i = 0; i < r->n; i++)
			if (ks_hot_rule_is_shard(r->r[i].type))
				n->r[n->n++] = r->r[i];
	pthread_mutex_lock(&p->mu);
	free(p->ded);
	p->ded = n;
	pthread_mutex_unlock(&p->mu);
}

void ks_run_purge_free(struct ks_run_purge *p)
{
	if (p->started) {
		pthread_mutex_lock(&p->mu);
		p->stop = 1;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->th, NULL);
		p->started = 0;
	}
	ks_ring_free(&p->new_r);
	ks_shards_free(&p->new_s);
	free(p->ded);
	p->ded = NULL;
}
