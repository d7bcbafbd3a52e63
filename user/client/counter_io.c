// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * counter_io.c - libkeysteer's counters (libkeysteer.h, docs/client.md,
 * "Split counters"): increments to the base or a sub-key, the sum of every
 * part under the fold sequence, and the fold that moves unused sub-keys
 * back into the base. The decisions are counter.c's; this file does the
 * memcached calls.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "client/client.h"
#include "client/counter.h"

#define KSC_API __attribute__((visibility("default")))

#define KSC_WIDTH_RAISE_MS 1000 /* a writer re-raises the width this often */
#define KSC_FOLD_EVERY_MS  1000 /* the process folds one counter this often */
#define KSC_FOLD_STUCK_MS  5000 /* a fold sequence odd this long: taken over */
#define KSC_NAME_MAX       256

/* The part's name and its owner's connection. */
struct part {
	char name[KSC_NAME_MAX];
	size_t len;
	unsigned owner;
	struct ksc_conn *c;
};

static int part_open(struct keysteer *ks, const void *key, size_t klen, int idx,
		     struct part *p)
{
	int n = ksc_counter_key(key, klen, idx, p->name, sizeof(p->name));

	if (n < 0)
		return ksc_err(ks, n, "counter part %d of a %zu-byte key: %s",
			       idx, klen, strerror(-n));
	p->len = (size_t)n;
	p->owner = ksc_view_owner(ksc_rdlock(ks), p->name, p->len);
	ksc_unlock(ks);
	if (p->owner == KSC_NONE)
		return ksc_err(ks, -ENOENT, "no ring yet: the fleet has none");
	p->c = ksc_conn_get(ks, p->owner);
	return p->c ? 0 : -EHOSTUNREACH;
}

static int part_err(struct keysteer *ks, const struct part *p, const char *what,
		    int err)
{
	char name[KSC_ADDR_MAX];

	ksc_server_name(ks, p->owner, name, sizeof(name));
	return ksc_err(ks, err, "%s %s on %s: %s", what, p->name, name,
		       err == -EDOM ? "not a number" : strerror(-err));
}

/* "ma" of one part; -ENOENT is not an error to report. */
static int part_arith(struct keysteer *ks, struct part *p,
		      const struct ks_mc_arith *a, __u64 *value, __u64 *cas)
{
	int ret = ks_mc_arith(&p->c->mc, (const __u8 *)p->name, p->len, a,
			      value, cas);

	if (ret && ret != -ENOENT && ret != -EAGAIN)
		part_err(ks, p, "ma", ret);
	return ret;
}

/* The part's raw number; *found 0 when it is not there. */
static int part_read(struct keysteer *ks, struct part *p, int *found,
		     __u64 *raw)
{
	struct ks_mc_item it;
	unsigned long long v;
	char *end;
	int ret = ks_mc_fetch(&p->c->mc, (const __u8 *)p->name, p->len, &it);

	*found = 0;
	*raw = 0;
	if (ret)
		return part_err(ks, p, "get", ret);
	if (it.found) {
		errno = 0;
		v = strtoull(it.value, &end, 10);
		/* memcached rewrites a number that got shorter in place,
		 * padded with spaces */
		while (*end == ' ')
			end++;
		if (errno || end == it.value || *end || it.value[0] == '-')
			ret = part_err(ks, p, "read", -EDOM);
		*found = !ret;
		*raw = v;
	}
	ks_mc_item_free(&it);
	return ret;
}

int ksc_counter_option(struct keysteer *ks, const char *name, const char *val)
{
	unsigned long n;
	char *end;

	if (!strcmp(name, "fold")) {
		if (strcmp(val, "safe") && strcmp(val, "unsafe"))
			return ksc_err(ks, -EINVAL,
				       "fold=%s: want safe or unsafe", val);
		ks->fold_unsafe = !strcmp(val, "unsafe");
		return 0;
	}
	if (strcmp(name, "split_grace_ms"))
		return 1;
	errno = 0;
	n = strtoul(val, &end, 10);
	if (errno || !*val || *end || *val == '-' || n < 1 || n > 3600000)
		return ksc_err(ks, -EINVAL,
			       "split_grace_ms=%s: want a number 1..3600000",
			       val);
	ks->split_grace_ms = (unsigned)n;
	return 0;
}

static __u64 grace_ms(const struct keysteer *ks)
{
	return ks->split_grace_ms ? ks->split_grace_ms
				  : 3ULL * (ks->stale_view_ms + 1000);
}

/* What the view says of key now, under the lock. */
struct split_view {
	unsigned k;     /* parts increments take */
	unsigned vu;    /* parts the view alone says a read sums */
	__u64 age_ms;   /* since K last changed (or the handle opened) */
	int fresh;      /* the view follows the fleet */
	int raise;      /* the width must be raised before a sub-key write */
	int fold_ok;    /* no fold of it by this handle for a while */
	unsigned owner; /* the base's owner */
	unsigned part;  /* the part a delta takes (0: the base) */
};

static void split_view(struct keysteer *ks, const void *key, size_t klen,
		       __u64 hash, __u64 now, int decr, struct split_view *s)
{
	struct ksc_view *v;
	struct ksc_hot *e;

	s->fresh = !ksc_fleet_owners_only(ks, now);
	v = ksc_rdlock(ks);
	e = ksc_view_hot(v, hash);
	if (e && (e->subkeys > 1 || e->subkeys_prev)) {
		/* a split counter: its layout and grace are kept in the
		 * shared entry, so written under the write lock */
		ksc_unlock(ks);
		v = ksc_wrlock(ks);
		e = ksc_view_hot(v, hash);
	}
	s->owner = ksc_view_owner(v, key, klen);
	s->k = ksc_split_k(e);
	s->vu = ksc_split_union(e, now, grace_ms(ks));
	if (klen > KSC_SPLIT_KEY_MAX || !s->fresh)
		s->k = 1; /* a lagging view writes the base, always read */
	s->age_ms = e && e->subkeys_since_ms ? now - e->subkeys_since_ms
					     : now - ks->since_ms;
	s->raise = e && s->k > 1 &&
		   (e->width_raised < s->k ||
		    now - e->width_raised_ms >= KSC_WIDTH_RAISE_MS);
	s->fold_ok = !e || now - e->fold_ms >= KSC_FOLD_EVERY_MS;
	s->part = 0;
	if (e && s->k > 1) {
		ksc_split_layout(v, e, key, klen, s->k);
		if (!ks->split_rng)
			ks->split_rng = (now << 20) ^ (__u64)getpid() ^
					(__u64)(size_t)ks;
		s->part = ksc_split_pick_spread(e, s->k, decr, &ks->split_rng);
	}
	ksc_unlock(ks);
}

/* A handle of the process folds key now: no handle of it again for
 * KSC_FOLD_EVERY_MS (the stamp is the view's, docs/client.md says why). */
static void fold_stamp(struct keysteer *ks, __u64 hash, __u64 now)
{
	struct ksc_hot *e = ksc_view_hot(ksc_wrlock(ks), hash);

	if (e)
		e->fold_ms = now;
	ksc_unlock(ks);
}

int ksc_counter_refuse_set(struct keysteer *ks, const void *key, size_t klen,
			   __u64 hash)
{
	struct split_view s;

	split_view(ks, key, klen, hash, ksc_now_ms(), 0, &s);
	if (s.k <= 1 && s.vu <= 1)
		return 0;
	ks->st.split_refused++;
	return ksc_err(ks, -EBUSY,
		       "%.*s is a split counter (%u sub-keys): a set would "
		       "leave its sub-keys' counts; use keysteer_incr/decr",
		       (int)(klen > 64 ? 64 : klen), (const char *)key,
		       s.k > s.vu ? s.k : s.vu);
}

/* ---- increments ---- */

/* The width at least k: raised, never lowered (a fold lowers it). */
static int width_raise(struct keysteer *ks, const void *key, size_t klen,
		       unsigned k)
{
	struct ks_mc_arith a = { .create = 1, .initial = k };
	struct part p;
	__u64 w, cas;
	int i, ret = part_open(ks, key, klen, KSC_PART_WIDTH, &p);

	for (i = 0; !ret && i < 8; i++) {
		a = (struct ks_mc_arith){ .create = 1, .initial = k };
		if ((ret = part_arith(ks, &p, &a, &w, &cas)))
			break;
		if (w >= k)
			return 0;
		a = (struct ks_mc_arith){ .delta = k - w, .cas_in = cas };
		ret = part_arith(ks, &p, &a, NULL, NULL);
		if (ret == -EAGAIN || ret == -ENOENT)
			ret = 0; /* changed meanwhile: read it again */
		else if (!ret)
			return 0;
	}
	return ret ? ret
		   : ksc_err(ks, -EAGAIN, "a counter's width kept moving");
}

static void width_raised(struct keysteer *ks, __u64 hash, unsigned k, __u64 now)
{
	struct ksc_hot *e;

	e = ksc_view_hot(ksc_wrlock(ks), hash);
	if (e) {
		e->width_raised = (__u16)k;
		e->width_raised_ms = now;
	}
	ksc_unlock(ks);
}

static int count_op(struct keysteer *ks, const void *key, size_t klen,
		    __u64 delta, int decr, uint64_t *value)
{
	struct ks_mc_arith a = { .delta = delta, .decr = decr, .create = 1 };
	__u64 hash, now = ksc_now_ms(), v;
	struct split_view s;
	struct part p;
	unsigned idx;
	int ret;

	if ((ret = ksc_check_key(ks, key, klen)) ||
	    (ret = ksc_limit_check(ks, key, klen)))
		goto fail;
	hash = ksc_key_hash(key, klen);
	split_view(ks, key, klen, hash, now, decr, &s);
	idx = s.part;
	if (idx && s.raise) {
		if ((ret = width_raise(ks, key, klen, s.k)))
			goto fail;
		width_raised(ks, hash, s.k, now);
	}
	if ((ret = part_open(ks, key, klen, (int)idx, &p)))
		goto fail;
	/* created at its first delta: memcached stores J and adds nothing */
	a.initial = idx ? ksc_subkey_initial(delta, decr) : decr ? 0 : delta;
	if ((ret = part_arith(ks, &p, &a, &v, NULL)))
		goto fail;
	if (decr)
		ks->st.decrs++;
	else
		ks->st.incrs++;
	if (idx)
		ks->st.subkey_writes++;
	/* the base changed: its copies, if it is read-hot too, go */
	ret = idx ? 0 : ksc_invalidate(ks, p.owner, key, klen, hash);
	if (ret)
		goto fail;
	if (s.k == 1 && value)
		*value = v;
	return ksc_done(ks, s.k > 1);
fail:
	return ksc_done(ks, ret);
}

KSC_API int keysteer_incr(struct keysteer *ks, const void *key, size_t klen,
			  uint64_t delta, uint64_t *value)
{
	return count_op(ks, key, klen, delta, 0, value);
}

KSC_API int keysteer_decr(struct keysteer *ks, const void *key, size_t klen,
			  uint64_t delta, uint64_t *value)
{
	return count_op(ks, key, klen, delta, 1, value);
}

/* ---- the fold ---- */

/*
 * Takes the counter's fold sequence from even to odd: 0, or -EBUSY when
 * another handle holds it. One that left it at the same odd value for
 * KSC_FOLD_STUCK_MS has died mid-fold: taken over, bumped by two so
 * readers see a change.
 */
static int fold_lock(struct keysteer *ks, struct part *f)
{
	struct ks_mc_arith a = { .create = 1 };
	__u64 seq, cas, now = ksc_now_ms();
	int ret = part_arith(ks, f, &a, &seq, &cas);

	if (ret)
		return ret;
	a = (struct ks_mc_arith){ .delta = 1, .cas_in = cas };
	if (seq & 1) {
		/* the value, not the CAS: this very read bumped the CAS */
		if (ks->stuck_seq != seq) {
			ks->stuck_seq = seq;
			ks->stuck_ms = now;
			return -EBUSY;
		}
		if (now - ks->stuck_ms < KSC_FOLD_STUCK_MS)
			return -EBUSY;
		a.delta = 2;
	}
	ret = part_arith(ks, f, &a, NULL, NULL);
	return ret == -EAGAIN || ret == -ENOENT ? -EBUSY : ret;
}

static int fold_unlock(struct keysteer *ks, struct part *f)
{
	struct ks_mc_arith a = { .delta = 1 };

	return part_arith(ks, f, &a, NULL, NULL);
}

/* A negative net into the base, only while the base has that much (a
 * plain counter clamps at zero): 1 when moved, 2 when left. */
static int fold_negative(struct keysteer *ks, struct part *b, __u64 take)
{
	struct ks_mc_arith a = { 0 };
	__u64 v, cas;
	int i, ret;

	for (i = 0; i < 4; i++) {
		a = (struct ks_mc_arith){ 0 };
		ret = part_arith(ks, b, &a, &v, &cas);
		if (ret == -ENOENT || (!ret && v < take))
			return 2;
		if (ret)
			return ret;
		a = (struct ks_mc_arith){ .delta = take,
					  .decr = 1,
					  .cas_in = cas };
		ret = part_arith(ks, b, &a, NULL, NULL);
		if (ret != -EAGAIN)
			return ret ? ret : 1;
	}
	return 2;
}

/*
 * One sub-key's net into the base: the sub-key decremented by what it
 * held (an atomic ma: increments meanwhile stay in it), then the base
 * incremented by as much. 1 when something moved, 2 when a negative net
 * had to stay, 0 when there was nothing. The control
 * (fold=unsafe) reads and then stores the zero, losing what came between.
 */
static int fold_one(struct keysteer *ks, struct part *b, struct part *s)
{
	struct ks_mc_arith a = { 0 };
	__u64 raw, cas, after;
	__s64 net = 0;
	int ret = part_arith(ks, s, &a, &raw, &cas);

	if (ret == -ENOENT)
		return 0;
	if (ret || ksc_counter_add(&net, 1, raw))
		return ret ? ret : part_err(ks, s, "fold", -ERANGE);
	if (!net)
		return 0;
	if (net < 0) {
		ret = fold_negative(ks, b, (__u64)-net);
		if (ret != 1)
			return ret;
		a = (struct ks_mc_arith){ .delta = (__u64)-net };
		return part_arith(ks, s, &a, NULL, NULL) ?: 1;
	}
	if (ks->fold_unsafe) {
		char zero[24];
		struct ks_mc_item it = { .value = zero };

		it.len = (size_t)snprintf(
			zero, sizeof(zero), "%llu",
			(unsigned long long)KSC_SUBKEY_OFFSET);
		usleep(1000); /* the window in which increments are lost */
		ret = ks_mc_store(&s->c->mc, (const __u8 *)s->name, s->len, &it,
				  0);
		if (ret)
			return part_err(ks, s, "store", ret);
	} else {
		a = (struct ks_mc_arith){ .delta = (__u64)net, .decr = 1 };
		if ((ret = part_arith(ks, s, &a, &after, &cas)))
			return ret;
		/* empty now: gone, unless an increment came meanwhile */
		if (after == KSC_SUBKEY_OFFSET)
			ks_mc_delete_if(&s->c->mc, (const __u8 *)s->name,
					s->len, cas);
	}
	a = (struct ks_mc_arith){ .delta = (__u64)net,
				  .create = 1,
				  .initial = (__u64)net };
	return part_arith(ks, b, &a, NULL, NULL) ?: 1;
}

static int fold(struct keysteer *ks, const void *key, size_t klen,
		const struct ksc_fold_plan *plan, unsigned k_view)
{
	struct ks_mc_arith a = { .create = 1, .initial = 1 };
	struct part f, w, b, s;
	unsigned i, to, moved = 0, left = 0;
	__u64 width, wcas;
	int ret, un;

	if ((ret = part_open(ks, key, klen, KSC_PART_FOLD, &f)) ||
	    (ret = part_open(ks, key, klen, KSC_PART_WIDTH, &w)) ||
	    (ret = part_open(ks, key, klen, 0, &b)))
		return ret;
	if (!ks->fold_unsafe && (ret = fold_lock(ks, &f)))
		return ret;
	ret = part_arith(ks, &w, &a, &width, &wcas);
	to = ksc_counter_width(plan->to, !ret, width);
	for (i = plan->from; !ret && i < to; i++) {
		ret = part_open(ks, key, klen, (int)i, &s);
		if (!ret && (ret = fold_one(ks, &b, &s)) > 0) {
			moved += ret == 1;
			left += ret == 2;
		}
		ret = ret > 0 ? 0 : ret;
	}
	if (!ret && !left && plan->lower && width > k_view) {
		/* nobody raised it meanwhile: the parts past K are done */
		a = (struct ks_mc_arith){ .delta = width - k_view,
					  .decr = 1,
					  .cas_in = wcas };
		ret = part_arith(ks, &w, &a, NULL, NULL);
		ret = ret == -EAGAIN ? 0 : ret;
	}
	un = ks->fold_unsafe ? 0 : fold_unlock(ks, &f);
	ret = ret ? ret : un;
	if (moved) {
		ks->st.folds++;
		ks->st.folded += moved;
		un = ksc_invalidate(ks, b.owner, key, klen,
				    ksc_key_hash(key, klen));
		ret = ret ? ret : un;
	}
	return ret;
}

/* ---- the sum ---- */

/* The fold sequence (0 when missing). */
static int fold_seq(struct keysteer *ks, struct part *f, __u64 *seq)
{
	int found;

	if (ks->fold_unsafe) { /* the control reads without it */
		*seq = 0;
		return 0;
	}
	return part_read(ks, f, &found, seq);
}

/* One pass over every part: 1 when the fold sequence held still. */
static int sum_once(struct keysteer *ks, const void *key, size_t klen,
		    unsigned vu, struct part *f, __s64 *sum, int *any,
		    unsigned *width)
{
	struct part p;
	__u64 seq0, seq1, raw;
	unsigned i;
	int found, ret;

	*sum = 0;
	*any = 0;
	/* the width first: a fold lowers it only after its moves are done,
	 * so one read before the sequence covers every part that counts */
	if ((ret = part_open(ks, key, klen, KSC_PART_WIDTH, &p)) ||
	    (ret = part_read(ks, &p, &found, &raw)))
		return ret;
	*width = ksc_counter_width(vu, found, raw);
	if (*width == 1) { /* no sub-keys: nothing can move, the base is all */
		if ((ret = part_open(ks, key, klen, 0, &p)) ||
		    (ret = part_read(ks, &p, any, &raw)))
			return ret;
		return *any && ksc_counter_add(sum, 0, raw)
			       ? part_err(ks, &p, "sum", -ERANGE)
			       : 1;
	}
	if ((ret = fold_seq(ks, f, &seq0)))
		return ret;
	if (seq0 & 1)
		return 0;
	for (i = 0; i < *width; i++) {
		if ((ret = part_open(ks, key, klen, (int)i, &p)) ||
		    (ret = part_read(ks, &p, &found, &raw)))
			return ret;
		if (found && ksc_counter_add(sum, (int)i, raw))
			return part_err(ks, &p, "sum", -ERANGE);
		*any |= found;
	}
	if ((ret = fold_seq(ks, f, &seq1)))
		return ret;
	return ksc_fold_seq_ok(seq0, seq1);
}

KSC_API int keysteer_counter_get(struct keysteer *ks, const void *key,
				 size_t klen, int64_t *value)
{
	struct timespec pause = { 0, 1000000 };
	__u64 hash, now = ksc_now_ms(), until;
	struct ksc_fold_plan plan;
	struct split_view s;
	unsigned width = 1;
	struct part f;
	__s64 sum = 0;
	int ret, any = 0;

	if (!value) {
		ret = ksc_err(ks, -EINVAL, "no place for the value (NULL)");
		goto fail;
	}
	*value = 0;
	if ((ret = ksc_check_key(ks, key, klen)) ||
	    (ret = ksc_limit_check(ks, key, klen)) ||
	    (ret = part_open(ks, key, klen, KSC_PART_FOLD, &f)))
		goto fail;
	hash = ksc_key_hash(key, klen);
	split_view(ks, key, klen, hash, now, 0, &s);
	until = now + 4 * (__u64)ks->timeout_ms;
	while ((ret = sum_once(ks, key, klen, s.vu, &f, &sum, &any, &width)) ==
	       0) {
		ks->st.counter_retries++;
		if (ksc_now_ms() > until) {
			/* a folder that died holding the sequence: this
			 * read's fold takes it over once it has stayed so
			 * for KSC_FOLD_STUCK_MS (a move of every sub-key,
			 * safe at any time), and later reads go through */
			plan = (struct ksc_fold_plan){ .from = 1, .to = 1 };
			fold(ks, key, klen, &plan, s.k);
			ret = ksc_err(ks, -EBUSY,
				      "a fold of %.*s went on longer than "
				      "%d ms",
				      (int)(klen > 64 ? 64 : klen),
				      (const char *)key, 4 * ks->timeout_ms);
			goto fail;
		}
		nanosleep(&pause, NULL);
	}
	if (ret < 0)
		goto fail;
	ks->st.counter_reads++;
	*value = sum;
	/* sub-keys nobody should write any more: back into the base */
	if (s.fold_ok &&
	    ksc_fold_decide(s.k, width, s.age_ms, ks->stale_view_ms + 1000,
			    grace_ms(ks), s.fresh, 0, &plan)) {
		fold_stamp(ks, hash, ksc_now_ms());
		fold(ks, key, klen, &plan,
		     s.k); /* best effort: the sum holds */
	}
	return ksc_done(ks, any);
fail:
	return ksc_done(ks, ret);
}

KSC_API int keysteer_counter_fold(struct keysteer *ks, const void *key,
				  size_t klen, unsigned flags)
{
	__u64 hash, now = ksc_now_ms();
	struct ksc_fold_plan plan;
	struct split_view s;
	int ret;

	if ((ret = ksc_check_key(ks, key, klen)))
		goto fail;
	if (flags & ~KEYSTEER_FOLD_ALL) {
		ret = ksc_err(ks, -EINVAL, "fold flags 0x%x: unknown", flags);
		goto fail;
	}
	/* a call of the key as any other: one token (a fold that a
	 * counter read makes is that read's, which took its own) */
	if ((ret = ksc_limit_check(ks, key, klen)))
		goto fail;
	hash = ksc_key_hash(key, klen);
	split_view(ks, key, klen, hash, now, 0, &s);
	/* the width is read under the fold lock: ask for every part */
	if (!ksc_fold_decide(s.k, KSC_SPLIT_MAX, s.age_ms,
			     ks->stale_view_ms + 1000, grace_ms(ks), s.fresh,
			     !!(flags & KEYSTEER_FOLD_ALL), &plan))
		return 0;
	plan.to = 1; /* the width read under the fold lock says how far */
	if ((ret = fold(ks, key, klen, &plan, s.k)))
		goto fail;
	return ksc_done(ks, 0);
fail:
	return ksc_done(ks, ret);
}
