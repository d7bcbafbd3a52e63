// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * limits.c - the limited keys, once per interval (core/limits.h). Rows
 * keep their id while the key stays limited, so the datapath's counters
 * of a key run on across intervals and rule reloads that keep its rate.
 */
#include <string.h>
#include "core/limits.h"

void ks_limits_init(struct ks_limit_set *s)
{
	memset(s, 0, sizeof(*s));
}

const struct ks_hot_rule *ks_limit_rule_match(const struct ks_hot_rules *r,
					      const __u8 *key, size_t len)
{
	const struct ks_hot_rule *best = NULL;
	size_t i;

	for (i = 0; i < r->n; i++) {
		const struct ks_hot_rule *x = &r->r[i];

		if (x->type == KS_RULE_LIMIT) {
			if (x->len == len && !memcmp(x->key, key, len))
				return x;
		} else if (x->type == KS_RULE_LIMIT_PREFIX && x->len <= len &&
			   !memcmp(x->key, key, x->len) &&
			   (!best || x->len > best->len)) {
			best = x;
		}
	}
	return best;
}

static __u64 hash_of(const __u8 *key, size_t len)
{
	__u64 words[KS_KEY_WORDS] = {};

	memcpy(words, key, len);
	return ks_key_hash(words, (__u32)len);
}

static int in_use(const struct ks_limit_entry *e)
{
	return e->state == KS_LIMIT_LIVE || e->state == KS_LIMIT_DIRTY;
}

static struct ks_limit_entry *find(struct ks_limit_set *s, const __u8 *key,
				   size_t len)
{
	size_t i;

	for (i = 0; i < KS_LIMIT_SLOTS; i++) {
		struct ks_limit_entry *e = &s->e[i];

		if (in_use(e) && e->len == len && !memcmp(e->key, key, len))
			return e;
	}
	return NULL;
}

/* A free row (not one GONE: its old entry is still in the map). */
static struct ks_limit_entry *claim(struct ks_limit_set *s)
{
	size_t i;

	for (i = 0; i < KS_LIMIT_SLOTS; i++)
		if (s->e[i].state == KS_LIMIT_FREE)
			return &s->e[i];
	return NULL;
}

static void retire(struct ks_limit_set *s, struct ks_limit_entry *e)
{
	e->old_hash = e->hash;
	e->state = KS_LIMIT_GONE;
	if (e->automatic)
		s->nauto--;
	s->live--;
}

/* The row of the automatic cap with the lowest residual, emptied for a
 * rule's key (its old entry deleted when the row is written); NULL when
 * there is none. A row already taken over this interval is not taken
 * again: its old entry is still to be deleted. */
static struct ks_limit_entry *evict_auto(struct ks_limit_set *s)
{
	struct ks_limit_entry *best = NULL;
	__u64 old;
	size_t i;

	for (i = 0; i < KS_LIMIT_SLOTS; i++) {
		struct ks_limit_entry *e = &s->e[i];

		if (in_use(e) && e->automatic && !e->old_hash &&
		    (!best || e->residual_ps < best->residual_ps))
			best = e;
	}
	if (!best)
		return NULL;
	old = best->state == KS_LIMIT_DIRTY && best->fresh ? 0 : best->hash;
	memset(best, 0, sizeof(*best));
	best->old_hash = old;
	s->nauto--;
	s->live--;
	s->auto_evicted++;
	return best;
}

/* What is wanted of one key. */
struct want_of {
	__u32 rate;
	__u16 rule_len; /* a prefix rule's; 0: exact rule or automatic */
	__u8 automatic;
	double residual_ps;
};

/* Puts key at w's rate; the number of state changes (0 or 1). */
static size_t want(struct ks_limit_set *s, const __u8 *key, size_t len,
		   const struct want_of *w, __u32 seq)
{
	struct ks_limit_entry *e = find(s, key, len);
	__u64 old;

	if (e) {
		if (e->automatic && !w->automatic) {
			/* a rule names it now: the rule's from here on */
			e->automatic = 0;
			s->nauto--;
			e->rate = 0; /* rewritten below */
		} else if (!e->automatic && w->automatic) {
			return 0; /* explicit rules win */
		}
		e->seen_seq = seq;
		e->rule_len = w->rule_len;
		e->residual_ps = w->residual_ps;
		if (e->rate == w->rate)
			return 0;
		/* a new rate: the bucket restarts, the counters run on */
		e->rate = w->rate;
		e->state = KS_LIMIT_DIRTY;
		return 1;
	}
	e = claim(s);
	if (!e && !w->automatic)
		e = evict_auto(s);
	if (!e) {
		if (w->automatic)
			s->auto_no_room++;
		else
			s->no_room++;
		return 0;
	}
	old = e->old_hash; /* a row taken over: its entry goes first */
	memset(e, 0, sizeof(*e));
	e->old_hash = old;
	memcpy(e->key, key, len);
	e->len = (__u16)len;
	e->rule_len = w->rule_len;
	e->hash = hash_of(key, len);
	e->rate = w->rate;
	e->seen_seq = seq;
	e->automatic = w->automatic;
	e->residual_ps = w->residual_ps;
	e->state = KS_LIMIT_DIRTY;
	e->fresh = 1;
	if (e->automatic)
		s->nauto++;
	s->live++;
	return 1;
}

static struct want_of of_rule(const struct ks_hot_rule *r)
{
	struct want_of w = { .rate = r->count };

	w.rule_len = r->type == KS_RULE_LIMIT_PREFIX ? r->len : 0;
	return w;
}

/* Whether autos holds the key. */
static const struct ks_limit_want *auto_of(const struct ks_limit_want *autos,
					   size_t nauto, const __u8 *key,
					   size_t len)
{
	size_t i;

	for (i = 0; i < nauto; i++)
		if (autos[i].len == len && !memcmp(autos[i].key, key, len))
			return &autos[i];
	return NULL;
}

size_t ks_limits_plan(struct ks_limit_set *s, const struct ks_hot_rules *rules,
		      const struct ks_top_entry *ranked, size_t n, __u32 seq,
		      const struct ks_limit_want *autos, size_t nauto)
{
	size_t i, changes = 0;
	struct want_of w;

	/* what no rule holds any more, or a prefix key long unseen, or an
	 * automatic cap no longer wanted */
	for (i = 0; i < KS_LIMIT_SLOTS; i++) {
		struct ks_limit_entry *e = &s->e[i];
		const struct ks_hot_rule *r;

		if (!in_use(e))
			continue;
		r = ks_limit_rule_match(rules, e->key, e->len);
		if (e->automatic) {
			if (r || auto_of(autos, nauto, e->key, e->len))
				continue; /* a rule's key is taken below */
			retire(s, e);
			changes++;
		} else if (!r || (r->type == KS_RULE_LIMIT_PREFIX &&
				  seq - e->seen_seq > KS_LIMIT_KEEP)) {
			retire(s, e);
			changes++;
		}
	}
	for (i = 0; i < rules->n; i++) {
		const struct ks_hot_rule *r = &rules->r[i];

		if (r->type != KS_RULE_LIMIT)
			continue;
		w = of_rule(r);
		changes += want(s, r->key, r->len, &w, seq);
	}
	for (i = 0; i < n; i++) {
		const struct ks_top_entry *t = &ranked[i];
		size_t len = t->len > KS_MAX_KEY_LEN ? KS_MAX_KEY_LEN : t->len;
		const struct ks_hot_rule *r = ks_limit_rule_match(rules, t->key,
								  len);

		/* exact rules were placed above; a rule's rate may change */
		if (r && r->type == KS_RULE_LIMIT_PREFIX) {
			w = of_rule(r);
			changes += want(s, t->key, len, &w, seq);
		}
	}
	/* a kept prefix key follows its rule's rate too; an automatic cap
	 * under a rule becomes the rule's */
	for (i = 0; i < KS_LIMIT_SLOTS; i++) {
		struct ks_limit_entry *e = &s->e[i];
		const struct ks_hot_rule *r;

		if (!in_use(e) || (!e->rule_len && !e->automatic))
			continue;
		r = ks_limit_rule_match(rules, e->key, e->len);
		if (r && e->automatic) {
			w = of_rule(r);
			changes += want(s, e->key, e->len, &w, seq);
		} else if (r && r->count != e->rate) {
			/* not seen now: its keep is not renewed */
			e->rate = r->count;
			e->rule_len = r->type == KS_RULE_LIMIT_PREFIX ? r->len
								      : 0;
			e->state = KS_LIMIT_DIRTY;
			changes++;
		}
	}
	/* the automatic caps, in what rows are left */
	for (i = 0; i < nauto; i++) {
		const struct ks_limit_want *a = &autos[i];

		if (a->len > KS_MAX_KEY_LEN ||
		    ks_limit_rule_match(rules, a->key, a->len))
			continue;
		w = (struct want_of){ .rate = a->rate,
				      .automatic = 1,
				      .residual_ps = a->residual_ps };
		changes += want(s, a->key, a->len, &w, seq);
	}
	if (changes)
		s->version++;
	return changes;
}

void ks_limits_synced(struct ks_limit_set *s)
{
	size_t i;

	for (i = 0; i < KS_LIMIT_SLOTS; i++) {
		struct ks_limit_entry *e = &s->e[i];

		if (e->state == KS_LIMIT_DIRTY) {
			e->state = KS_LIMIT_LIVE;
			e->fresh = 0;
			e->old_hash = 0;
		} else if (e->state == KS_LIMIT_GONE) {
			memset(e, 0, sizeof(*e));
		}
	}
}

/* b - a for a counter that must not go back (a row zeroed under us). */
static __u64 delta(__u64 a, __u64 b)
{
	return b >= a ? b - a : b;
}

void ks_limits_account(struct ks_limit_set *s, __u32 id,
		       const struct ks_limit_stats *sum, double elapsed_s)
{
	struct ks_limit_entry *e;

	if (id >= KS_LIMIT_SLOTS)
		return;
	e = &s->e[id];
	if (elapsed_s > 0) {
		e->allowed_ps = (double)delta(e->allowed, sum->allowed) /
				elapsed_s;
		e->refused_ps = (double)delta(e->refused, sum->refused) /
				elapsed_s;
		e->tcp_ps = (double)delta(e->tcp, sum->tcp) / elapsed_s;
	}
	e->allowed = sum->allowed;
	e->refused = sum->refused;
	e->collided = sum->collided;
	e->tcp = sum->tcp;
}

static __u64 mps(double ps)
{
	return ps > 0 ? (__u64)(ps * 1000.0 + 0.5) : 0;
}

void ks_limits_info(const struct ks_limit_set *s, __u32 id,
		    struct ks_limit_info *out)
{
	const struct ks_limit_entry *e;

	memset(out, 0, sizeof(*out));
	if (id >= KS_LIMIT_SLOTS || !in_use(&s->e[id]))
		return;
	e = &s->e[id];
	out->hash = e->hash;
	out->allowed = e->allowed;
	out->refused = e->refused;
	out->collided = e->collided;
	out->tcp = e->tcp;
	out->allowed_mps = mps(e->allowed_ps);
	out->refused_mps = mps(e->refused_ps);
	out->tcp_mps = mps(e->tcp_ps);
	out->rate = e->rate;
	out->burst = ks_limit_burst(e->rate);
	out->len = e->len;
	out->rule_len = e->rule_len;
	out->automatic = e->automatic;
	memcpy(out->key, e->key, e->len);
}

const struct ks_limit_entry *ks_limits_next(const struct ks_limit_set *s,
					    size_t *pos)
{
	while (*pos < KS_LIMIT_SLOTS) {
		const struct ks_limit_entry *e = &s->e[(*pos)++];

		if (in_use(e))
			return e;
	}
	return NULL;
}
