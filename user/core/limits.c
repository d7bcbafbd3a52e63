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
	s->live--;
}

/* Puts key at rate; the number of state changes (0 or 1). */
static size_t want(struct ks_limit_set *s, const __u8 *key, size_t len,
		   const struct ks_hot_rule *rule, __u32 seq)
{
	struct ks_limit_entry *e = find(s, key, len);
	__u16 rule_len = rule->type == KS_RULE_LIMIT_PREFIX ? rule->len : 0;

	if (e) {
		e->seen_seq = seq;
		e->rule_len = rule_len;
		if (e->rate == rule->count)
			return 0;
		/* a new rate: the bucket restarts, the counters run on */
		e->rate = rule->count;
		e->state = KS_LIMIT_DIRTY;
		return 1;
	}
	e = claim(s);
	if (!e) {
		s->no_room++;
		return 0;
	}
	memset(e, 0, sizeof(*e));
	memcpy(e->key, key, len);
	e->len = (__u16)len;
	e->rule_len = rule_len;
	e->hash = hash_of(key, len);
	e->rate = rule->count;
	e->seen_seq = seq;
	e->state = KS_LIMIT_DIRTY;
	e->fresh = 1;
	s->live++;
	return 1;
}

size_t ks_limits_plan(struct ks_limit_set *s, const struct ks_hot_rules *rules,
		      const struct ks_top_entry *ranked, size_t n, __u32 seq)
{
	size_t i, changes = 0;

	/* what no rule holds any more, or a prefix key long unseen */
	for (i = 0; i < KS_LIMIT_SLOTS; i++) {
		struct ks_limit_entry *e = &s->e[i];
		const struct ks_hot_rule *r;

		if (!in_use(e))
			continue;
		r = ks_limit_rule_match(rules, e->key, e->len);
		if (!r || (r->type == KS_RULE_LIMIT_PREFIX &&
			   seq - e->seen_seq > KS_LIMIT_KEEP)) {
			retire(s, e);
			changes++;
		}
	}
	for (i = 0; i < rules->n; i++) {
		const struct ks_hot_rule *r = &rules->r[i];

		if (r->type == KS_RULE_LIMIT)
			changes += want(s, r->key, r->len, r, seq);
	}
	for (i = 0; i < n; i++) {
		const struct ks_top_entry *t = &ranked[i];
		size_t len = t->len > KS_MAX_KEY_LEN ? KS_MAX_KEY_LEN : t->len;
		const struct ks_hot_rule *r = ks_limit_rule_match(rules, t->key,
								  len);

		/* exact rules were placed above; a rule's rate may change */
		if (r && r->type == KS_RULE_LIMIT_PREFIX)
			changes += want(s, t->key, len, r, seq);
	}
	/* a kept prefix key follows its rule's rate too */
	for (i = 0; i < KS_LIMIT_SLOTS; i++) {
		struct ks_limit_entry *e = &s->e[i];
		const struct ks_hot_rule *r;

		if (!in_use(e) || !e->rule_len)
			continue;
		r = ks_limit_rule_match(rules, e->key, e->len);
		if (r && r->count != e->rate) {
			e->rate = r->count;
			e->rule_len = r->type == KS_RULE_LIMIT_PREFIX ? r->len
								      : 0;
			e->state = KS_LIMIT_DIRTY;
			changes++;
		}
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
