// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fz_routing_json.c - libFuzzer harness of the routing document renderer
 * (user/render/routing_json.c ks_hot_json_steer, of which ks_hot_json is
 * the owner_turns -1 case). The input builds a hot-key table: a policy,
 * rules of every type a pin file holds with arbitrary key bytes (shard
 * rules with arbitrary names, limits with their rates), a few intervals of
 * samples with arbitrary keys and rates, an optional replica set and
 * owner_turns. The document must be valid JSON (checked by the small
 * validator below, which knows nothing of keysteer), plain ASCII, list
 * every entry and every rule once (a shard rule with its shard, a limit
 * with its rate), replica_set and owner_turns when given, and a rendering
 * into a short buffer must be a terminated prefix of the whole one with
 * the same returned length.
 */
#include <stdbool.h>
#include "core/hotkeys.h"
#include "core/limits.h"
#include "render/routing_json.h"
#include "core/replicas.h"
#include "fz_common.h"

/* ---- a JSON validator (RFC 8259), recursive descent ---- */

struct jp {
	const char *p, *end;
	int depth;
};

static bool j_value(struct jp *j);

static void j_ws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
				 *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static bool j_lit(struct jp *j, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n))
		return false;
	j->p += n;
	return true;
}

static bool j_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	       (c >= 'A' && c <= 'F');
}

static bool j_string(struct jp *j)
{
	if (j->p >= j->end || *j->p != '"')
		return false;
	for (j->p++; j->p < j->end; j->p++) {
		unsigned char c = (unsigned char)*j->p;

		if (c == '"') {
			j->p++;
			return true;
		}
		if (c < 0x20)
			return false; /* control characters must be escaped */
		if (c != '\\')
			continue;
		if (++j->p >= j->end)
			return false;
		if (*j->p == 'u') {
			int i;

			for (i = 1; i <= 4; i++)
				if (j->p + i >= j->end || !j_hex(j->p[i]))
					return false;
			j->p += 4;
		} else if (!strchr("\"\\/bfnrt", *j->p)) {
			return false;
		}
	}
	return false;
}

static bool j_digits(struct jp *j)
{
	const char *s = j->p;

	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > s;
}

static bool j_number(struct jp *j)
{
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0')
		j->p++; /* no leading zeros */
	else if (!j_digits(j))
		return false;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (!j_digits(j))
			return false;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!j_digits(j))
			return false;
	}
	return true;
}

static bool j_list(struct jp *j, char close, bool members)
{
	j->p++;
	j_ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		return true;
	}
	for (;;) {
		if (members) {
			if (!j_string(j))
				return false;
			j_ws(j);
			if (j->p >= j->end || *j->p++ != ':')
				return false;
		}
		if (!j_value(j))
			return false;
		j_ws(j);
		if (j->p >= j->end)
			return false;
		if (*j->p == close) {
			j->p++;
			return true;
		}
		if (*j->p++ != ',')
			return false;
		j_ws(j);
	}
}

static bool j_value(struct jp *j)
{
	bool ok;

	j_ws(j);
	if (j->p >= j->end || ++j->depth > 64)
		return false;
	switch (*j->p) {
	case '{':
		ok = j_list(j, '}', true);
		break;
	case '[':
		ok = j_list(j, ']', false);
		break;
	case '"':
		ok = j_string(j);
		break;
	case 't':
		ok = j_lit(j, "true");
		break;
	case 'f':
		ok = j_lit(j, "false");
		break;
	case 'n':
		ok = j_lit(j, "null");
		break;
	default:
		ok = j_number(j);
		break;
	}
	j->depth--;
	return ok;
}

/* The whole of [s, s+n) is one JSON value; *at is where it went wrong. */
static bool json_valid(const char *s, size_t n, size_t *at)
{
	struct jp j = { s, s + n, 0 };
	bool ok = j_value(&j);

	j_ws(&j);
	*at = (size_t)(j.p - s);
	return ok && j.p == j.end;
}

/* ---- the table ---- */

static void take_policy(struct fz_bytes *b, struct ks_hot_policy *p)
{
	char err[256];

	ks_hot_policy_default(p);
	p->shard_capacity_ops = 1 + fz_take_u32(b) % 1000000;
	p->hot_fraction = (1 + fz_take_u8(b)) / 256.0;
	p->max_copies = fz_take_u8(b) % (KS_MAX_COPIES + 2);
	p->headroom = 1 + fz_take_u8(b) / 64.0;
	if (ks_hot_policy_check(p, err, sizeof(err)))
		ks_hot_policy_default(p);
}

/*
 * Every type a pin file can hold, so the document's rules list renders
 * each: pins and prefixes with their copies or ways, dedicated shards with
 * their names (24bf6b6), limits with their rates (2ad5d20).
 */
static const __u8 rule_types[] = {
	KS_RULE_PIN,          KS_RULE_PIN_PREFIX,   KS_RULE_SPLIT_PREFIX,
	KS_RULE_SHARD,        KS_RULE_SHARD_PREFIX, KS_RULE_LIMIT,
	KS_RULE_LIMIT_PREFIX,
};

static void take_rules(struct fz_bytes *b, struct ks_hot_rules *r)
{
	size_t n = fz_take_u8(b) % 9, i;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < n; i++) {
		struct ks_hot_rule *x = &r->r[r->n++];
		size_t len = 1 + fz_take_u8(b) % 40, k;
		__u8 t = fz_take_u8(b);

		x->type = rule_types[t % (sizeof(rule_types) /
					  sizeof(rule_types[0]))];
		if (ks_hot_rule_is_shard(x->type)) {
			/* a name of any bytes (the parser refuses control
			 * bytes; the renderer escapes whatever it gets), NUL
			 * terminated as the parser leaves it */
			size_t nl = 1 + fz_take_u8(b) % 48;

			for (k = 0; k < nl; k++)
				x->shard[k] = (char)fz_take_u8(b);
		} else if (ks_hot_rule_is_limit(x->type)) {
			x->count = 1 + fz_take_u32(b) % KS_LIMIT_RATE_MAX;
		} else {
			x->count = (x->type == KS_RULE_SPLIT_PREFIX ? 2 : 1) +
				   fz_take_u8(b) % KS_HOT_COPIES_MAX;
			if (x->count > KS_HOT_COPIES_MAX)
				x->count = KS_HOT_COPIES_MAX;
		}
		x->len = (__u16)len;
		for (k = 0; k < len; k++) /* any bytes: quotes, NUL, UTF-8 */
			x->key[k] = fz_take_u8(b);
	}
}

/* One interval of samples: keys of arbitrary bytes, rates up to 4e9/s. */
static void take_interval(struct fz_bytes *b, struct ks_hot_table *t,
			  const struct ks_hot_policy *p, __u32 seq)
{
	static __u8 keys[48][KS_KEY_BUF];
	struct ks_hot_sample s[48];
	size_t n = fz_take_u8(b) % 48, i, k;

	for (i = 0; i < n; i++) {
		__u64 words[KS_KEY_WORDS] = { 0 };
		__u8 sel = fz_take_u8(b);
		size_t len = sel == 0xff ? KS_HOT_KEY_MAX : 1 + sel % 48;

		for (k = 0; k < len; k++)
			keys[i][k] = fz_take_u8(b);
		memcpy(words, keys[i], len);
		s[i].key = keys[i];
		s[i].len = (__u16)len;
		s[i].hash = ks_key_hash(words, (__u32)len);
		s[i].reads_ps = (double)fz_take_u32(b);
		s[i].writes_ps = (double)fz_take_u32(b) / (1 + fz_take_u8(b));
	}
	ks_hot_update(t, p, s, n, seq);
}

static bool take_replicas(struct fz_bytes *b, struct ks_replica_set *rs)
{
	char list[KS_MAX_REPLICAS * 24], err[256];
	unsigned n = fz_take_u8(b) % (KS_MAX_REPLICAS + 1), i;
	size_t off = 0;

	if (!n)
		return false;
	for (i = 0; i < n; i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off,
					"%s198.18.%u.%u:%u", i ? "," : "", i,
					1 + fz_take_u8(b) % 254, 11211 + i);
	return !ks_replicas_parse(list, rs, err, sizeof(err));
}

static size_t count(const char *s, size_t n, const char *pat)
{
	size_t c = 0, pl = strlen(pat);
	const char *p = s;

	while ((p = memmem(p, n - (size_t)(p - s), pat, pl))) {
		c++;
		p += pl;
	}
	return c;
}

static size_t count_type(const struct ks_hot_rules *r, unsigned type)
{
	size_t i, c = 0;

	for (i = 0; i < r->n; i++)
		c += r->r[i].type == type;
	return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ks_hot_table t;
	static struct ks_hot_rules rules;
	struct fz_bytes b = { data, size };
	struct ks_hot_policy pol;
	struct ks_replica_set rs;
	const struct ks_replica_set *rsp;
	__u64 ring_version = fz_take_u32(&b);
	unsigned rounds, r;
	int turns;
	size_t need, got, used = 0, pos = 0, cut, at, i;
	char *doc, *small;

	take_policy(&b, &pol);
	ks_hot_init(&t);
	take_rules(&b, &rules);
	ks_hot_set_rules(&t, &rules);
	rsp = take_replicas(&b, &rs) ? &rs : NULL;
	rounds = 1 + fz_take_u8(&b) % 4;
	for (r = 0; r < rounds; r++)
		take_interval(&b, &t, &pol, r + 1);
	while (ks_hot_next(&t, &pos))
		used++;
	/* the document a client library follows (ks_hot_json_steer):
	 * owner_turns -1 (none, ks_hot_json's) to 64 */
	turns = (int)(fz_take_u8(&b) % 66) - 1;

	need = ks_hot_json_steer(&t, &pol, rsp, turns, ring_version, NULL, 0);
	doc = malloc(need + 1);
	FZ_CHECK(doc != NULL, "out of memory for %zu bytes", need);
	got = ks_hot_json_steer(&t, &pol, rsp, turns, ring_version, doc,
				need + 1);
	FZ_CHECK(got == need && doc[need] == '\0' && strlen(doc) == need,
		 "length %zu, then %zu, strlen %zu", need, got, strlen(doc));
	FZ_CHECK(json_valid(doc, need, &at),
		 "not JSON at byte %zu of %zu: '%.40s'", at, need,
		 doc + (at > 10 ? at - 10 : 0));
	for (i = 0; i < need; i++)
		FZ_CHECK((unsigned char)doc[i] < 0x80, "byte 0x%02x at %zu",
			 (unsigned char)doc[i], i);
	FZ_CHECK(count(doc, need, "{\"key\":") == used,
		 "%zu keys in the document, %zu in the table",
		 count(doc, need, "{\"key\":"), used);
	FZ_CHECK(count(doc, need, "{\"type\":") == rules.n,
		 "%zu rules in the document, %zu in the table",
		 count(doc, need, "{\"type\":"), rules.n);
	FZ_CHECK(count(doc, need, ",\"shard\":") ==
			 count_type(&rules, KS_RULE_SHARD) +
				 count_type(&rules, KS_RULE_SHARD_PREFIX),
		 "shard rules without their shard");
	FZ_CHECK(count(doc, need, ",\"rate_per_s\":") ==
			 count_type(&rules, KS_RULE_LIMIT) +
				 count_type(&rules, KS_RULE_LIMIT_PREFIX),
		 "limit rules without their rate");
	FZ_CHECK((count(doc, need, ",\"replica_set\":[") == 1) ==
				 (rsp && rsp->n) &&
			 (count(doc, need, ",\"owner_turns\":") == 1) ==
				 (turns >= 0),
		 "replica_set or owner_turns wrong (%d)", turns);

	/* a short buffer: a terminated prefix, the same length returned */
	cut = 1 + fz_take_u8(&b) % (need + 1);
	small = malloc(cut);
	FZ_CHECK(small != NULL, "out of memory");
	got = ks_hot_json_steer(&t, &pol, rsp, turns, ring_version, small, cut);
	FZ_CHECK(got == need, "returned %zu into %zu bytes, %zu whole", got,
		 cut, need);
	FZ_CHECK(small[cut - 1] == '\0' && !memcmp(small, doc, cut - 1),
		 "cut at %zu is not a prefix", cut);
	free(small);
	free(doc);
	return 0;
}
