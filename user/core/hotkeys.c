// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * hotkeys.c - hot-key decisions, once per interval. Hysteresis is what keeps
 * the routing document still: a key enters on its raw or smoothed rate
 * (whichever is higher, so smoothing never delays entry), but leaves only on
 * the smoothed rate falling well below the threshold, and copy counts move
 * only on a big step or a big rate change.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/hotkeys.h"
#include "util/file.h"
#include "ks_limit.h"

/* A copy/sub-key count changes by one only after the rate moved this much
 * since the last change; a bigger step changes at once. */
#define KS_HOT_RATE_MOVE 0.25
#define KS_HOT_FILE_MAX  (1u << 20)

void ks_hot_policy_default(struct ks_hot_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->shard_capacity_ops = 100000;
	p->hot_fraction = 0.10;
	p->leave_ratio = 0.70;
	p->alpha = 0.5;
	p->per_copy_budget_ops = 0;
	p->headroom = 1.25;
	p->max_copies = 1;
	p->write_hot_fraction = 0;
}

int ks_hot_policy_check(const struct ks_hot_policy *p, char *err, size_t errlen)
{
	const char *why = NULL;

	if (!(p->shard_capacity_ops > 0))
		why = "shard capacity must be > 0";
	else if (!(p->hot_fraction > 0 && p->hot_fraction <= 1))
		why = "hot fraction must be in (0, 1]";
	else if (!(p->write_hot_fraction >= 0 && p->write_hot_fraction <= 1))
		why = "write hot fraction must be in [0, 1] (0: same as reads)";
	else if (!(p->leave_ratio > 0 && p->leave_ratio <= 1))
		why = "leave ratio must be in (0, 1]";
	else if (!(p->alpha > 0 && p->alpha <= 1))
		why = "alpha must be in (0, 1]";
	else if (!(p->per_copy_budget_ops >= 0))
		why = "per-copy budget must be >= 0 (0: the threshold)";
	else if (!(p->headroom >= 1))
		why = "headroom must be >= 1";
	else if (p->max_copies > KS_HOT_COPIES_MAX)
		why = "max copies too large";
	if (!why)
		return 0;
	if (err && errlen)
		snprintf(err, errlen, "%s", why);
	return -EINVAL;
}

double ks_hot_read_threshold(const struct ks_hot_policy *p)
{
	return p->hot_fraction * p->shard_capacity_ops;
}

double ks_hot_write_threshold(const struct ks_hot_policy *p)
{
	double f = p->write_hot_fraction > 0 ? p->write_hot_fraction
					     : p->hot_fraction;

	return f * p->shard_capacity_ops;
}

double ks_hot_copy_budget(const struct ks_hot_policy *p)
{
	return p->per_copy_budget_ops > 0 ? p->per_copy_budget_ops
					  : ks_hot_read_threshold(p);
}

static unsigned cap_copies(const struct ks_hot_policy *p)
{
	return p->max_copies ? p->max_copies : 1;
}

unsigned ks_hot_max_copies(const struct ks_hot_policy *p)
{
	return cap_copies(p);
}

/* ceil(x / budget) as an unsigned, saturating at KS_HOT_COPIES_MAX so an
 * absurd rate cannot overflow the conversion. */
static unsigned ceil_div(double x, double budget)
{
	double q = budget > 0 ? ceil(x / budget) : KS_HOT_COPIES_MAX;

	if (!(q >= 0))
		return 0;
	return q > KS_HOT_COPIES_MAX ? KS_HOT_COPIES_MAX : (unsigned)q;
}

unsigned ks_hot_copies_for(const struct ks_hot_policy *p, double reads_ps)
{
	unsigned c = ceil_div(reads_ps * p->headroom, ks_hot_copy_budget(p));

	if (c < 2)
		c = 2;
	return c > cap_copies(p) ? cap_copies(p) : c;
}

unsigned ks_hot_subkeys_for(const struct ks_hot_policy *p, double writes_ps)
{
	unsigned c = ceil_div(writes_ps, ks_hot_copy_budget(p));

	return c < 2 ? 2 : c;
}

/* ---- rules ---- */

static const char *const rule_names[] = {
	[KS_RULE_PIN] = "pin",
	[KS_RULE_PIN_PREFIX] = "pin-prefix",
	[KS_RULE_SPLIT_PREFIX] = "split-prefix",
	[KS_RULE_SHARD] = "shard",
	[KS_RULE_SHARD_PREFIX] = "shard-prefix",
};

const char *ks_hot_rule_name(unsigned type)
{
	if (ks_hot_rule_is_limit(type))
		return "limit";
	if (type >= sizeof(rule_names) / sizeof(rule_names[0]) ||
	    !rule_names[type])
		return "?";
	return rule_names[type];
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Splits [s, end) into at most max whitespace-separated tokens; returns
 * the token count, or max + 1 if there are more. */
static int tokenize(const char *s, const char *end, const char **tok,
		    size_t *tlen, int max)
{
	int n = 0;

	while (s < end) {
		const char *t;

		while (s < end && is_blank(*s))
			s++;
		if (s == end)
			break;
		if (n == max)
			return max + 1;
		t = s;
		while (s < end && !is_blank(*s))
			s++;
		tok[n] = t;
		tlen[n] = (size_t)(s - t);
		n++;
	}
	return n;
}

/* Whole decimal token in [lo, hi], else -1. */
static long parse_count(const char *t, size_t len, long lo, long hi)
{
	long v = 0;
	size_t i;

	if (len == 0 || len > 6)
		return -1;
	for (i = 0; i < len; i++) {
		if (t[i] < '0' || t[i] > '9')
			return -1;
		v = v * 10 + (t[i] - '0');
	}
	return v >= lo && v <= hi ? v : -1;
}

static __attribute__((format(printf, 5, 6))) int rule_error(
	char *err, size_t errlen, const char *fname, unsigned line,
	const char *fmt, ...)
{
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (err && errlen)
		snprintf(err, errlen, "%s:%u: %s", fname ? fname : "-", line,
			 why);
	return -EINVAL;
}

static int rule_type_of(const char *t, size_t len)
{
	int i;

	for (i = KS_RULE_PIN; i <= KS_RULE_SPLIT_PREFIX; i++)
		if (strlen(rule_names[i]) == len &&
		    !memcmp(rule_names[i], t, len))
			return i;
	return 0;
}

/* A rule's key or prefix: 0, or -EINVAL with the reason in err. */
static int check_key(const char *key, size_t len, const char *fname,
		     unsigned line, char *err, size_t errlen)
{
	size_t i;

	if (len > KS_HOT_KEY_MAX)
		return rule_error(err, errlen, fname, line,
				  "key longer than %d bytes", KS_HOT_KEY_MAX);
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)key[i];

		if (c < 0x20 || c == 0x7f)
			return rule_error(err, errlen, fname, line,
					  "key has a control byte 0x%02x", c);
	}
	return 0;
}

/* A new rule of type for key (klen bytes), zeroed: NULL, with err set,
 * when the file has one for that key already or is full. */
static struct ks_hot_rule *new_rule(struct ks_hot_rules *rules, int type,
				    const char *key, size_t klen,
				    const char *fname, unsigned line, char *err,
				    size_t errlen)
{
	struct ks_hot_rule *r;
	size_t i;

	for (i = 0; i < rules->n; i++) {
		r = &rules->r[i];
		if (r->type == type && r->len == klen &&
		    !memcmp(r->key, key, klen)) {
			rule_error(err, errlen, fname, line,
				   "duplicate %s rule for '%.*s%s'",
				   ks_hot_rule_name((unsigned)type), (int)klen,
				   key,
				   type == KS_RULE_LIMIT_PREFIX ? "*" : "");
			return NULL;
		}
	}
	if (rules->n == KS_HOT_RULES_MAX) {
		rule_error(err, errlen, fname, line,
			   "too many rules (at most %d)", KS_HOT_RULES_MAX);
		return NULL;
	}
	r = &rules->r[rules->n++];
	memset(r, 0, sizeof(*r));
	r->type = (__u8)type;
	r->len = (__u16)klen;
	memcpy(r->key, key, klen);
	return r;
}

/* The first control byte of [t, t + len), or -1. */
static int control_byte(const char *t, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((unsigned char)t[i] < 0x20 || t[i] == 0x7f)
			return (unsigned char)t[i];
	return -1;
}

/*
 * "shard KEY SHARDNAME" or "shard PREFIX* SHARDNAME" (tok[1], tok[2]):
 * a trailing '*' makes a prefix, so an exact key ending in '*' cannot
 * be given a shard. The name is checked against a ring later (core/
 * dedicated.h), where one is known: a pin file does not carry one.
 */
static int parse_shard(struct ks_hot_rules *rules, const char **tok,
		       const size_t *tlen, int n, const char *fname,
		       unsigned line, char *err, size_t errlen)
{
	size_t klen = tlen[1];
	int type = KS_RULE_SHARD, c;
	struct ks_hot_rule *r;

	if (n != 3)
		return rule_error(err, errlen, fname, line,
				  "shard needs KEY|PREFIX* SHARDNAME");
	if (klen && tok[1][klen - 1] == '*') {
		type = KS_RULE_SHARD_PREFIX;
		klen--;
	}
	if (!klen)
		return rule_error(
			err, errlen, fname, line,
			"shard '*' names no prefix (every key: that is the ring's job)");
	if (type == KS_RULE_SHARD_PREFIX && klen > KS_HOT_SHARD_PREFIX_MAX)
		return rule_error(err, errlen, fname, line,
				  "shard prefix longer than %d bytes",
				  KS_HOT_SHARD_PREFIX_MAX);
	if (check_key(tok[1], klen, fname, line, err, errlen))
		return -EINVAL;
	if (tlen[2] >= KS_HOT_SHARD_NAME_MAX)
		return rule_error(err, errlen, fname, line,
				  "shard name longer than %d bytes",
				  KS_HOT_SHARD_NAME_MAX - 1);
	if ((c = control_byte(tok[2], tlen[2])) >= 0)
		return rule_error(err, errlen, fname, line,
				  "shard name has a control byte 0x%02x", c);
	r = new_rule(rules, type, tok[1], klen, fname, line, err, errlen);
	if (!r)
		return -EINVAL;
	memcpy(r->shard, tok[2], tlen[2]);
	return 0;
}

/* Whole decimal rate followed by "/s" in [1, KS_LIMIT_RATE_MAX]: the
 * rate, else -1. */
static long parse_rate(const char *t, size_t len)
{
	long v = 0;
	size_t i;

	if (len < 3 || len > 10 || t[len - 2] != '/' || t[len - 1] != 's')
		return -1;
	for (i = 0; i < len - 2; i++) {
		if (t[i] < '0' || t[i] > '9')
			return -1;
		v = v * 10 + (t[i] - '0');
	}
	return v >= 1 && v <= KS_LIMIT_RATE_MAX ? v : -1;
}

/*
 * limit KEY RATE/s, limit PREFIX* RATE/s (n tokens, the first "limit"). A
 * trailing '*' always makes a prefix; '*' alone (every key) is refused.
 */
static int parse_limit(struct ks_hot_rules *rules, const char **tok,
		       const size_t *tlen, int n, const char *fname,
		       unsigned line, char *err, size_t errlen)
{
	struct ks_hot_rule *r;
	size_t klen;
	int type;
	long rate;

	if (n != 3)
		return rule_error(err, errlen, fname, line,
				  "limit needs KEY or PREFIX* and RATE/s "
				  "(limit user:42 500/s)");
	klen = tlen[1];
	type = KS_RULE_LIMIT;
	if (tok[1][klen - 1] == '*') {
		type = KS_RULE_LIMIT_PREFIX;
		klen--;
	}
	if (!klen)
		return rule_error(err, errlen, fname, line,
				  "limit prefix is empty ('*' would limit "
				  "every key)");
	if (check_key(tok[1], klen, fname, line, err, errlen))
		return -EINVAL;
	rate = parse_rate(tok[2], tlen[2]);
	if (rate < 0)
		return rule_error(err, errlen, fname, line,
				  "bad rate '%.*s' (a whole number 1..%d "
				  "then /s, as in 500/s)",
				  (int)(tlen[2] > 32 ? 32 : tlen[2]), tok[2],
				  KS_LIMIT_RATE_MAX);
	r = new_rule(rules, type, tok[1], klen, fname, line, err, errlen);
	if (!r)
		return -EINVAL;
	r->count = (__u32)rate;
	return 0;
}

static int parse_line(struct ks_hot_rules *rules, const char *s,
		      const char *end, const char *fname, unsigned line,
		      char *err, size_t errlen)
{
	struct ks_hot_rule *r;
	const char *tok[3];
	size_t tlen[3];
	int n, type;
	long count;

	n = tokenize(s, end, tok, tlen, 3);
	if (n == 0 || tok[0][0] == '#')
		return 0;
	if (tlen[0] == 5 && !memcmp(tok[0], "shard", 5))
		return parse_shard(rules, tok, tlen, n, fname, line, err,
				   errlen);
	type = rule_type_of(tok[0], tlen[0]);
	if (!type && tlen[0] == 5 && !memcmp(tok[0], "limit", 5))
		return parse_limit(rules, tok, tlen, n, fname, line, err,
				   errlen);
	if (!type)
		return rule_error(
			err, errlen, fname, line,
			"unknown directive '%.*s' (pin, pin-prefix, split-prefix, shard, limit)",
			(int)(tlen[0] > 32 ? 32 : tlen[0]), tok[0]);
	if (n != 3)
		return rule_error(err, errlen, fname, line, "%s needs %s %s",
				  rule_names[type],
				  type == KS_RULE_PIN ? "KEY" : "PREFIX",
				  type == KS_RULE_SPLIT_PREFIX ? "K"
							       : "COPIES");
	if (check_key(tok[1], tlen[1], fname, line, err, errlen))
		return -EINVAL;
	/* Splitting one way, or pinning zero copies, means nothing. */
	count = parse_count(tok[2], tlen[2],
			    type == KS_RULE_SPLIT_PREFIX ? 2 : 1,
			    KS_HOT_COPIES_MAX);
	if (count < 0)
		return rule_error(err, errlen, fname, line,
				  "bad count '%.*s' (a whole number %d..%d)",
				  (int)(tlen[2] > 32 ? 32 : tlen[2]), tok[2],
				  type == KS_RULE_SPLIT_PREFIX ? 2 : 1,
				  KS_HOT_COPIES_MAX);
	r = new_rule(rules, type, tok[1], tlen[1], fname, line, err, errlen);
	if (!r)
		return -EINVAL;
	r->count = (__u32)count;
	return 0;
}

int ks_hot_rules_parse(struct ks_hot_rules *rules, const char *buf, size_t len,
		       const char *fname, char *err, size_t errlen)
{
	const char *s = buf, *end = buf + len;
	unsigned line = 0;

	rules->n = 0;
	if (err && errlen)
		err[0] = '\0';
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *eol = nl ? nl : end;
		int ret;

		line++;
		ret = parse_line(rules, s, eol, fname, line, err, errlen);
		if (ret) {
			rules->n = 0;
			return ret;
		}
		s = nl ? nl + 1 : end;
	}
	return 0;
}

int ks_hot_rules_load(struct ks_hot_rules *rules, const char *path, char *err,
		      size_t errlen)
{
	char *buf;
	size_t len;
	int ret = ks_read_file(path, KS_HOT_FILE_MAX, &buf, &len);

	if (ret) {
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path,
				 ret == -EIO     ? "read error"
				 : ret == -EFBIG ? "larger than 1 MiB"
						 : strerror(-ret));
		return ret;
	}
	ret = ks_hot_rules_parse(rules, buf, len, path, err, errlen);
	free(buf);
	return ret;
}

/* The exact rule for key first, else the longest matching prefix rule:
 * among the hot-key rules, or among the shard rules (shard set). */
static const struct ks_hot_rule *match(const struct ks_hot_rules *rules,
				       const __u8 *key, size_t len, int shard)
{
	const struct ks_hot_rule *best = NULL;
	size_t i;

	for (i = 0; i < rules->n; i++) {
		const struct ks_hot_rule *r = &rules->r[i];

		if (ks_hot_rule_is_limit(r->type))
			continue;
		if (!ks_hot_rule_is_shard(r->type) != !shard)
			continue;
		if (r->type == KS_RULE_PIN || r->type == KS_RULE_SHARD) {
			if (r->len == len && !memcmp(r->key, key, len))
				return r;
			continue;
		}
		if (r->len <= len && !memcmp(r->key, key, r->len) &&
		    (!best || r->len > best->len))
			best = r;
	}
	return best;
}

const struct ks_hot_rule *ks_hot_rule_match(const struct ks_hot_rules *rules,
					    const __u8 *key, size_t len)
{
	return match(rules, key, len, 0);
}

const struct ks_hot_rule *ks_hot_shard_match(const struct ks_hot_rules *rules,
					     const __u8 *key, size_t len)
{
	return match(rules, key, len, 1);
}

/* ---- table ---- */

void ks_hot_sample_from_top(const struct ks_top_entry *e,
			    struct ks_hot_sample *s)
{
	s->key = e->key;
	s->len = e->len > KS_KEY_BUF ? KS_KEY_BUF : e->len;
	s->hash = e->hash;
	s->reads_ps = (double)e->reads_mps / 1000.0;
	s->writes_ps = (double)e->writes_mps / 1000.0;
}

void ks_hot_init(struct ks_hot_table *t)
{
	memset(t, 0, sizeof(*t));
}

void ks_hot_set_rules(struct ks_hot_table *t, const struct ks_hot_rules *r)
{
	t->rules = *r;
	/* The rules are part of the published document. */
	t->version++;
}

static int find_idx(const struct ks_hot_table *t, __u64 hash, const __u8 *key,
		    size_t len)
{
	int i;

	for (i = 0; i < KS_HOT_CAP; i++) {
		const struct ks_hot_entry *e = &t->e[i];

		if (e->state != KS_HOT_FREE && e->hash == hash &&
		    e->len == len && !memcmp(e->key, key, len))
			return i;
	}
	return -1;
}

const struct ks_hot_entry *ks_hot_find(const struct ks_hot_table *t,
				       const __u8 *key, size_t len)
{
	__u64 words[KS_KEY_WORDS] = {};
	int i;

	if (len > KS_KEY_BUF)
		return NULL;
	memcpy(words, key, len);
	i = find_idx(t, ks_key_hash(words, (__u32)len), key, len);
	return i < 0 ? NULL : &t->e[i];
}

const struct ks_hot_entry *ks_hot_next(const struct ks_hot_table *t,
				       size_t *pos)
{
	while (*pos < KS_HOT_CAP) {
		const struct ks_hot_entry *e = &t->e[(*pos)++];

		if (e->state != KS_HOT_FREE)
			return e;
	}
	return NULL;
}

/* Heat relative to the thresholds, so read and write load compare. */
static double heat(const struct ks_hot_policy *p, double r, double w)
{
	return r / ks_hot_read_threshold(p) + w / ks_hot_write_threshold(p);
}

/*
 * A free slot for a newcomer of the given heat, evicting the coldest
 * non-pinned entry when full (only if the newcomer is hotter, or pinned).
 * Returns -1 when the newcomer must be dropped.
 */
static int claim_slot(struct ks_hot_table *t, const struct ks_hot_policy *p,
		      double h, int pinned)
{
	int i, cold = -1;
	double cold_h = 0;

	for (i = 0; i < KS_HOT_CAP; i++) {
		const struct ks_hot_entry *e = &t->e[i];
		double eh;

		if (e->state == KS_HOT_FREE)
			return i;
		if (e->state == KS_HOT_PINNED)
			continue;
		eh = heat(p, e->reads_ps, e->writes_ps);
		if (cold < 0 || eh < cold_h) {
			cold = i;
			cold_h = eh;
		}
	}
	if (cold < 0 || (!pinned && h <= cold_h))
		return -1;
	t->e[cold].state = KS_HOT_FREE;
	t->used--;
	t->evicted++;
	return cold;
}

static struct ks_hot_entry *insert(struct ks_hot_table *t,
				   const struct ks_hot_policy *p,
				   const __u8 *key, size_t len, __u64 hash,
				   double h, int pinned, __u32 seq)
{
	struct ks_hot_entry *e;
	int i = claim_slot(t, p, h, pinned);

	if (i < 0) {
		t->dropped++;
		return NULL;
	}
	e = &t->e[i];
	memset(e, 0, sizeof(*e));
	memcpy(e->key, key, len);
	e->len = (__u16)len;
	e->hash = hash;
	e->state = KS_HOT_HOT; /* provisional, decide() sets the real one */
	e->copies = 1;
	e->entered_seq = seq;
	t->used++;
	t->entered++;
	return e;
}

int ks_hot_restore(struct ks_hot_table *t, const struct ks_hot_policy *p,
		   const __u8 *key, size_t len, __u64 hash, double reads_ps,
		   double writes_ps, unsigned copies, unsigned subkeys,
		   int read_hot, int write_hot)
{
	struct ks_hot_entry *e;

	if (len > KS_HOT_KEY_MAX || find_idx(t, hash, key, len) >= 0)
		return -1;
	e = insert(t, p, key, len, hash, heat(p, reads_ps, writes_ps), 0,
		   t->seq);
	if (!e)
		return -1;
	e->reads_ps = reads_ps;
	e->writes_ps = writes_ps;
	e->read_hot = read_hot != 0;
	e->write_hot = write_hot != 0;
	e->copies = copies ? copies : 1;
	e->subkeys = subkeys;
	e->copies_rate = reads_ps;
	e->subkeys_rate = writes_ps;
	t->version++;
	return 0;
}

/*
 * Moves a count to target only on a step of more than one, or once the rate
 * moved more than KS_HOT_RATE_MOVE since the last change; force skips the
 * check (entry, a rule, a lowered cap).
 */
static void settle(__u32 *cur, unsigned target, double rate, double *at,
		   int force)
{
	unsigned step;
	int moved;

	if (*cur == target)
		return;
	step = *cur > target ? *cur - target : target - *cur;
	moved = !(*at > 0) || fabs(rate - *at) > KS_HOT_RATE_MOVE * *at;
	if (force || step > 1 || moved) {
		*cur = target;
		*at = rate;
	}
}

/*
 * Whether the key's writes are split now. libkeysteer spreads a split
 * counter's increments over its K parts with the base taking 1/K of them
 * (docs/client.md, "Split counters"), so once clients follow a split the
 * base's owner sees about 1/K of the key's writes: a raw rate below
 * rate-at-split / sqrt(K) (half way, in ratio, between "nobody splits"
 * and "everybody does") is read as a split in effect, and the whole rate
 * is K times the base's. Plain clients, which write the base only, keep
 * it above and are taken as they are.
 */
static int split_in_effect(const struct ks_hot_entry *e, double raw_w)
{
	return e->write_hot && e->subkeys >= 2 && e->subkeys_rate > 0 &&
	       raw_w < e->subkeys_rate / sqrt((double)e->subkeys);
}

/*
 * The write rate K is sized on. Split: an interval without a sample of
 * the base (raw 0) says nothing of the whole rate, so K stays; a short
 * sample is held up by the smoothed whole rate (the base's share x K), as
 * an unsplit key's is by its smoothed rate.
 */
static double write_rate(struct ks_hot_entry *e, const struct ks_hot_policy *p,
			 double raw_w, int split)
{
	double whole = raw_w * e->subkeys;

	if (!split) {
		e->split_ps = 0;
		return fmax(raw_w, e->writes_ps);
	}
	if (!(raw_w > 0))
		return e->subkeys_rate;
	e->split_ps = e->split_ps > 0
			      ? p->alpha * whole + (1 - p->alpha) * e->split_ps
			      : whole;
	return fmax(whole, e->split_ps);
}

/* Smoothed rates already updated; raw are this interval's. */
static void decide(struct ks_hot_table *t, const struct ks_hot_policy *p,
		   struct ks_hot_entry *e, double raw_r, double raw_w)
{
	const struct ks_hot_rule *rule = ks_hot_rule_match(&t->rules, e->key,
							   e->len);
	double rt = ks_hot_read_threshold(p), wt = ks_hot_write_threshold(p);
	double rate_r = fmax(raw_r, e->reads_ps);
	int split = split_in_effect(e, raw_w);
	double rate_w = write_rate(e, p, raw_w, split);
	double keep_w = split ? e->writes_ps * e->subkeys : e->writes_ps;
	int was_r = e->read_hot, was_w = e->write_hot;
	unsigned cap = cap_copies(p);

	if (was_r)
		e->read_hot = e->reads_ps >= p->leave_ratio * rt;
	else
		e->read_hot = rate_r >= rt;
	if (was_w)
		e->write_hot = keep_w >= p->leave_ratio * wt;
	else
		e->write_hot = rate_w >= wt;

	if (rule) {
		/* Rules are exact orders: no hysteresis. */
		e->state = KS_HOT_PINNED;
		e->read_hot = 1;
		e->copies = rule->count < cap ? rule->count : cap;
		e->copies_rate = rate_r;
		if (rule->type == KS_RULE_SPLIT_PREFIX) {
			e->write_hot = 1;
			e->subkeys = rule->count;
			e->subkeys_rate = rate_w;
		}
	} else {
		e->state = e->read_hot || e->write_hot ? KS_HOT_HOT
						       : KS_HOT_FREE;
	}
	if (!rule) {
		if (e->read_hot)
			settle(&e->copies, ks_hot_copies_for(p, rate_r), rate_r,
			       &e->copies_rate, !was_r || e->copies > cap);
		else
			e->copies = 1;
	}
	if (!rule || rule->type != KS_RULE_SPLIT_PREFIX) {
		if (e->write_hot)
			settle(&e->subkeys, ks_hot_subkeys_for(p, rate_w),
			       rate_w, &e->subkeys_rate, !was_w);
		else
			e->subkeys = 0;
	}
}

/* What the routing document shows of an entry. */
struct published {
	__u8 state, read_hot, write_hot;
	__u32 copies, subkeys;
};

static struct published published_of(const struct ks_hot_entry *e)
{
	struct published s = { e->state, e->read_hot, e->write_hot, e->copies,
			       e->subkeys };

	return s;
}

static int published_differs(struct published a, struct published b)
{
	return a.state != b.state || a.read_hot != b.read_hot ||
	       a.write_hot != b.write_hot || a.copies != b.copies ||
	       a.subkeys != b.subkeys;
}

static void seed_pins(struct ks_hot_table *t, const struct ks_hot_policy *p,
		      __u32 seq)
{
	size_t i;

	for (i = 0; i < t->rules.n; i++) {
		const struct ks_hot_rule *r = &t->rules.r[i];
		__u64 words[KS_KEY_WORDS] = {};
		__u64 hash;

		if (r->type != KS_RULE_PIN)
			continue;
		memcpy(words, r->key, r->len);
		hash = ks_key_hash(words, r->len);
		if (find_idx(t, hash, r->key, r->len) < 0)
			insert(t, p, r->key, r->len, hash, 0, 1, seq);
	}
}

size_t ks_hot_update(struct ks_hot_table *t, const struct ks_hot_policy *p,
		     const struct ks_hot_sample *samples, size_t n, __u32 seq)
{
	static const struct published none;
	double raw_r[KS_HOT_CAP] = {}, raw_w[KS_HOT_CAP] = {};
	__u8 seen[KS_HOT_CAP] = {};
	size_t i, changes = 0;
	int k;

	t->seq = seq;
	/* Exact pins are hot even before their first request. */
	seed_pins(t, p, seq);

	for (i = 0; i < n; i++) {
		const struct ks_hot_sample *s = &samples[i];

		if (s->len > KS_KEY_BUF)
			continue;
		k = find_idx(t, s->hash, s->key, s->len);
		if (k >= 0 && !seen[k]) {
			seen[k] = 1;
			raw_r[k] = s->reads_ps > 0 ? s->reads_ps : 0;
			raw_w[k] = s->writes_ps > 0 ? s->writes_ps : 0;
		}
	}

	/* Tracked keys: smooth, then decide (a key can leave here). */
	for (k = 0; k < KS_HOT_CAP; k++) {
		struct ks_hot_entry *e = &t->e[k];
		struct published before;

		if (e->state == KS_HOT_FREE)
			continue;
		/* A pin seeded this interval has no history to smooth. */
		before = e->intervals_hot ? published_of(e) : none;
		if (e->intervals_hot) {
			e->reads_ps = p->alpha * raw_r[k] +
				      (1 - p->alpha) * e->reads_ps;
			e->writes_ps = p->alpha * raw_w[k] +
				       (1 - p->alpha) * e->writes_ps;
		} else {
			e->reads_ps = raw_r[k];
			e->writes_ps = raw_w[k];
		}
		decide(t, p, e, raw_r[k], raw_w[k]);
		if (published_differs(before, published_of(e)))
			changes++;
		if (e->state == KS_HOT_FREE) {
			t->used--;
			t->left++;
			continue;
		}
		e->intervals_hot++;
	}

	/* Newcomers: hot on their raw rate, or matched by a rule. */
	for (i = 0; i < n; i++) {
		const struct ks_hot_sample *s = &samples[i];
		double r = s->reads_ps > 0 ? s->reads_ps : 0;
		double w = s->writes_ps > 0 ? s->writes_ps : 0;
		int pinned;
		struct ks_hot_entry *e;

		if (s->len > KS_KEY_BUF ||
		    find_idx(t, s->hash, s->key, s->len) >= 0)
			continue;
		pinned = ks_hot_rule_match(&t->rules, s->key, s->len) != NULL;
		if (!pinned && r < ks_hot_read_threshold(p) &&
		    w < ks_hot_write_threshold(p))
			continue;
		e = insert(t, p, s->key, s->len, s->hash, heat(p, r, w), pinned,
			   seq);
		if (!e)
			continue;
		e->reads_ps = r;
		e->writes_ps = w;
		decide(t, p, e, r, w);
		e->intervals_hot = 1;
		changes++;
	}
	if (changes)
		t->version++;
	return changes;
}

size_t ks_hot_add_unseen(const struct ks_hot_table *t, struct ks_hot_sample *s,
			 size_t n, size_t cap, const struct ks_hot_unseen *u,
			 size_t nu)
{
	size_t i, j;

	for (i = 0; i < nu; i++) {
		const struct ks_hot_entry *e = NULL;
		size_t pos = 0;

		while ((e = ks_hot_next(t, &pos)) && e->hash != u[i].hash)
			;
		if (!e)
			continue; /* nothing armed it here */
		for (j = 0; j < n && s[j].hash != u[i].hash; j++)
			;
		if (j == n) {
			if (n == cap)
				continue;
			s[n++] = (struct ks_hot_sample){ .key = e->key,
							 .len = e->len,
							 .hash = e->hash };
		}
		if (!u[i].hold)
			s[j].reads_ps += u[i].reads_ps;
		else if (s[j].reads_ps < e->reads_ps)
			s[j].reads_ps = e->reads_ps;
	}
	return n;
}
