// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fetch.c - keysteer_fetch, the read-through call (libkeysteer.h,
 * docs/client.md "Read-through"): a hit as keysteer_get; on a miss one
 * flight per key in the process, whose leader takes the key's lease at
 * its owner (memcached's meta N/W/Z) and fills from the caller's database
 * when it wins, or re-reads until another's fill has landed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "client/client.h"
#include "client/lease.h"

#define KSC_API __attribute__((visibility("default")))

#define LEASE_S_DEFAULT 3
#define LEASE_S_MAX     3600

/* Process-wide: callers of a key share one flight whatever their handle. */
static struct ksc_flights flights = KSC_FLIGHTS_INIT;

struct fetch_call {
	struct keysteer *ks;
	const void *key;
	size_t klen;
	keysteer_fill_fn fill;
	void *arg;
	struct keysteer_fetch_opts o; /* defaults filled in */
	unsigned owner;
	__u64 deadline;
	int fill_failed; /* the error is the fill's, or the flight's answer
			  * is not this caller's: it goes round again */
	int waited;      /* counted in lease_waits */
	int raced;       /* its store refused: a write came after the lease */
	/* the outcome */
	void *value;
	size_t len;
	uint32_t flags;
};

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int check_opts(struct keysteer *ks, const struct keysteer_fetch_opts *in,
		      struct keysteer_fetch_opts *o)
{
	if (in)
		*o = *in;
	else
		memset(o, 0, sizeof(*o));
	if (o->exptime > KS_MC_TTL_MAX)
		return ksc_err(ks, -EINVAL, "exptime %u: at most %ld s",
			       o->exptime, KS_MC_TTL_MAX);
	if (o->refresh_s > KS_MC_TTL_MAX)
		return ksc_err(ks, -EINVAL, "refresh_s %u: at most %ld s",
			       o->refresh_s, KS_MC_TTL_MAX);
	if (o->lease_s > LEASE_S_MAX)
		return ksc_err(ks, -EINVAL, "lease_s %u: at most %d s",
			       o->lease_s, LEASE_S_MAX);
	if (!o->lease_s)
		o->lease_s = LEASE_S_DEFAULT;
	if (!o->wait_ms)
		o->wait_ms = o->lease_s * 1000 + 1000;
	return 0;
}

/* The value handed out: a NUL-terminated malloc'd copy, as keysteer_get's. */
static int take_value(struct fetch_call *fc, const void *v, size_t len,
		      uint32_t flags)
{
	char *copy = malloc(len + 1);

	if (!copy)
		return ksc_err(fc->ks, -ENOMEM, "out of memory");
	if (len)
		memcpy(copy, v, len);
	copy[len] = '\0';
	fc->value = copy;
	fc->len = len;
	fc->flags = flags;
	return 0;
}

/* A lease not used: a placeholder removed, a stale item's refill token
 * cleared (its mark's expiry kept), each only if still the one won. */
static void hand_back(struct fetch_call *fc, struct ksc_conn *c,
		      const struct ks_mc_item *lease)
{
	if (ks_mc_lease_placeholder(lease))
		ks_mc_delete_if(&c->mc, fc->key, fc->klen, lease->cas);
	else if (lease->win && lease->stale)
		ksc_owner_hand_back(fc->ks, fc->owner, fc->key, fc->klen,
				    lease->cas);
}

/*
 * This caller holds the lease (or nobody can: found 0): the fill, then
 * the store only if the placeholder or stale item is still the one the
 * lease was taken on, so a write through the library meanwhile wins over
 * the database's older answer. A failed fill hands the lease back.
 */
static int run_fill(struct fetch_call *fc, struct ksc_conn *c,
		    const struct ks_mc_item *lease)
{
	struct keysteer *ks = fc->ks;
	struct ks_mc_item it = { 0 };
	void *v = NULL;
	size_t len = 0;
	int ret;

	ks->st.fills++;
	ret = fc->fill(fc->arg, fc->key, fc->klen, &v, &len);
	if (!ret && !v && len)
		ret = -EINVAL;
	if (ret || len > KS_MC_VALUE_MAX) {
		free(v);
		ret = ret < 0 ? ret : len > KS_MC_VALUE_MAX ? -E2BIG : -EIO;
		ks->st.fill_errors++;
		fc->fill_failed = 1;
		/* the lease handed back (only if still ours): the next
		 * caller wins at once instead of after lease_s */
		hand_back(fc, c, lease);
		return ksc_err(ks, ret, "fill of %.*s: %s", (int)fc->klen,
			       (const char *)fc->key, strerror(-ret));
	}
	it.value = v;
	it.len = len;
	it.flags = fc->o.flags;
	/* cas 0 (no placeholder: memcached could not vivify) adds only if
	 * absent */
	ret = ks_mc_store_if(&c->mc, fc->key, fc->klen, &it,
			     (long)fc->o.exptime,
			     lease->found ? lease->cas : 0);
	if (ret && ret != -EAGAIN)
		/* not stored: hand the lease back, as a failed fill does */
		hand_back(fc, c, lease);
	/* -EAGAIN: a write came between; this call still answers with what
	 * the database said during it, a read concurrent with that write
	 * (its followers in this process may have begun after that write,
	 * so they read again: fly) */
	fc->raced = ret == -EAGAIN;
	ret = take_value(fc, v, len, fc->o.flags);
	free(v);
	return ret ? ret : 1;
}

/* The leader's reads of the owner with the lease, until a value, the
 * lease, or the deadline; with first, one read, and 0 where another fills
 * (the caller then joins the flight). */
static int lease_loop(struct fetch_call *fc, int first)
{
	struct keysteer *ks = fc->ks;
	struct ksc_lease_reply r;
	struct ks_mc_item it;
	char name[KSC_ADDR_MAX];
	struct ksc_conn *c;
	unsigned attempt = 0, pause;
	int ret;

	for (;;) {
		c = ksc_conn_get(ks, fc->owner);
		if (!c)
			return -EHOSTUNREACH;
		ret = ks_mc_lease_get(&c->mc, fc->key, fc->klen,
				      (long)fc->o.lease_s,
				      (long)fc->o.refresh_s, &it);
		if (ret) {
			ksc_server_name(ks, fc->owner, name, sizeof(name));
			return ksc_err(ks, ret, "lease get from %s: %s", name,
				       strerror(-ret));
		}
		r = (struct ksc_lease_reply){ .found = it.found,
					      .len = it.len,
					      .win = it.win,
					      .taken = it.taken,
					      .stale = it.stale };
		if (it.win)
			ks->st.lease_wins++;
		/* W on a fresh value: R's early refresh, before expiry */
		if (it.win && it.found && !it.stale &&
		    !ks_mc_lease_placeholder(&it))
			ks->st.refreshes++;
		switch (ksc_lease_decide(&r, fc->o.allow_stale)) {
		case KSC_LEASE_HIT:
			ret = take_value(fc, it.value, it.len, it.flags);
			ks_mc_item_free(&it);
			return ret ? ret : 1;
		case KSC_LEASE_STALE:
			ks->st.stale_serves++;
			ret = take_value(fc, it.value, it.len, it.flags);
			ks_mc_item_free(&it);
			return ret ? ret : KEYSTEER_STALE;
		case KSC_LEASE_FILL:
			ret = run_fill(fc, c, &it);
			ks_mc_item_free(&it);
			return ret;
		case KSC_LEASE_WAIT:
			break;
		}
		ks_mc_item_free(&it);
		if (first)
			return 0;
		if (!fc->waited++)
			ks->st.lease_waits++;
		pause = ksc_lease_pause_ms(attempt++, ksc_now_ms(),
					   fc->deadline);
		if (!pause) {
			ks->st.fetch_timeouts++;
			return ksc_err(ks, -ETIMEDOUT,
				       "%.*s: another caller's fill did not "
				       "land within %u ms",
				       (int)fc->klen, (const char *)fc->key,
				       fc->o.wait_ms);
		}
		sleep_ms(pause);
	}
}

/* A follower's copy of its leader's outcome. */
static int follow(struct fetch_call *fc, struct ksc_flight *f)
{
	struct keysteer *ks = fc->ks;
	int ret;

	if (!fc->waited++)
		ks->st.lease_waits++;
	if (ksc_flight_wait(&flights, f, fc->deadline)) {
		ks->st.fetch_timeouts++;
		return ksc_err(ks, -ETIMEDOUT,
			       "%.*s: the fill of another caller in this "
			       "process did not land within %u ms",
			       (int)fc->klen, (const char *)fc->key,
			       fc->o.wait_ms);
	}
	fc->fill_failed = f->fill_failed;
	if (f->ret < 0)
		return ksc_err(ks, f->ret, "%s", f->err);
	/* raced by a write, or a stale value this caller did not allow:
	 * read again (fly) */
	if (f->ret == KEYSTEER_STALE && !fc->o.allow_stale)
		fc->fill_failed = 1;
	if (fc->fill_failed)
		return 0;
	ret = take_value(fc, f->value, f->len, f->flags);
	if (ret)
		return ret;
	ks->st.shared_fills++;
	if (f->ret == KEYSTEER_STALE)
		ks->st.stale_serves++;
	return f->ret;
}

/* The miss path: one flight per owner and key in the process. */
static int fly(struct fetch_call *fc)
{
	struct keysteer *ks = fc->ks;
	char id[KSC_ADDR_MAX + 1 + KS_MC_KEY_MAX];
	struct ksc_flight *f;
	size_t n;
	int ret;

	ksc_server_name(ks, fc->owner, id, KSC_ADDR_MAX);
	n = strlen(id) + 1;
	memcpy(id + n, fc->key, fc->klen);
	n += fc->klen;
	for (;;) {
		ret = ksc_flight_join(&flights, id, n, ksc_now_ms(),
				      fc->o.lease_s * 1000, &f);
		if (ret < 0)
			return ksc_err(ks, ret, "out of memory");
		if (ret == 1) {
			ret = lease_loop(fc, 0);
			/* a raced fill's value is not for followers: they
			 * may have begun after the write that raced it */
			f->fill_failed = fc->fill_failed || fc->raced;
			ksc_flight_finish(&flights, f, ret, fc->value, fc->len,
					  fc->flags, ks->err);
			ksc_flight_leave(&flights, f);
			return ret;
		}
		ret = follow(fc, f);
		ksc_flight_leave(&flights, f);
		/* the leader's fill failed: its error is its own caller's;
		 * the lease is free again, and one of the rest fills */
		if (ret > 0 || !fc->fill_failed)
			return ret;
		if (ret < 0 && ksc_now_ms() >= fc->deadline)
			return ret;
		if (ksc_now_ms() >= fc->deadline) {
			ks->st.fetch_timeouts++;
			return ksc_err(ks, -ETIMEDOUT,
				       "%.*s: no fill landed within %u ms",
				       (int)fc->klen, (const char *)fc->key,
				       fc->o.wait_ms);
		}
		fc->fill_failed = 0;
	}
}

KSC_API int keysteer_fetch(struct keysteer *ks, const void *key, size_t klen,
			   keysteer_fill_fn fill, void *arg,
			   const struct keysteer_fetch_opts *o, void **value,
			   size_t *len, uint32_t *flags)
{
	struct fetch_call fc = {
		.ks = ks, .key = key, .klen = klen, .fill = fill, .arg = arg
	};
	int ret;

	*value = NULL;
	if (len)
		*len = 0;
	if (!fill)
		return ksc_done(ks, ksc_err(ks, -EINVAL, "no fill function"));
	if ((ret = ksc_check_key(ks, key, klen)) ||
	    (ret = check_opts(ks, o, &fc.o)) ||
	    (ret = ksc_limit_check(ks, key, klen)))
		return ksc_done(ks, ret);
	ks->st.fetches++;
	fc.deadline = ksc_now_ms() + fc.o.wait_ms;
	/* a hit is keysteer_get's: copies and the L1 for armed keys; a
	 * lease's placeholder reads as a miss there. Early refresh needs
	 * the owner's remaining TTL, so it reads the owner */
	if (!fc.o.refresh_s) {
		ks->lim_taken = 1; /* one call, one token: taken above */
		ret = keysteer_get(ks, key, klen, value, len, flags);
		ks->lim_taken = 0;
		if (ret)
			return ret;
	}
	fc.owner = ksc_view_owner(ksc_rdlock(ks), key, klen);
	ksc_unlock(ks);
	if (fc.owner == KSC_NONE)
		return ksc_done(ks, ksc_err(ks, -ENOENT,
					    "no ring yet: the fleet has none"));
	/* a caller that takes a stale value reads the owner itself first:
	 * in a flight it would wait for its leader's fill instead (the
	 * point of stale-while-revalidate is not to) */
	ret = fc.o.refresh_s || fc.o.allow_stale ? lease_loop(&fc, 1) : 0;
	if (!ret)
		ret = fly(&fc);
	if (ret > 0) {
		*value = fc.value;
		if (len)
			*len = fc.len;
		if (flags)
			*flags = fc.flags;
	}
	return ksc_done(ks, ret);
}
