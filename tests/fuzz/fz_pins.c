// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fz_pins.c - libFuzzer harness of the pin/rule file parser
 * (user/core/hotkeys.c ks_hot_rules_parse): the text is handed over in a buffer
 * of exactly its length, not NUL-terminated, as the API allows. Parsed
 * rules must keep their documented limits and each must match its own key;
 * a refused file leaves no rules and a "FILE:LINE: reason" message.
 */
#include <stdbool.h>
#include "core/hotkeys.h"
#include "core/limits.h"
#include "fz_common.h"

/* Rule i's key bytes are printable, and no earlier rule of its type has
 * its key (pins, prefixes and limits alike). */
static void check_key_once(const struct ks_hot_rules *r, size_t i)
{
	const struct ks_hot_rule *x = &r->r[i];
	size_t j;

	for (j = 0; j < x->len; j++)
		FZ_CHECK(x->key[j] > 0x20 && x->key[j] != 0x7f,
			 "rule %zu: key byte 0x%02x", i, x->key[j]);
	for (j = 0; j < i; j++)
		FZ_CHECK(!(r->r[j].type == x->type && r->r[j].len == x->len &&
			   !memcmp(r->r[j].key, x->key, x->len)),
			 "rules %zu and %zu are the same", j, i);
}

/* A limit rule: its key or prefix, a rate; only ks_limit_rule_match finds
 * it, and a key finds its own exact rule or a prefix at least as long. */
static void check_limit(const struct ks_hot_rules *r, size_t i)
{
	const struct ks_hot_rule *x = &r->r[i], *m;
	const struct ks_hot_rule *h;

	FZ_CHECK(x->len >= 1 && x->len <= KS_HOT_KEY_MAX, "limit len %u",
		 x->len);
	check_key_once(r, i);
	FZ_CHECK(x->count >= 1 && x->count <= KS_LIMIT_RATE_MAX,
		 "limit %zu: rate %u", i, x->count);
	m = ks_limit_rule_match(r, x->key, x->len);
	FZ_CHECK(m && ks_hot_rule_is_limit(m->type),
		 "limit %zu does not match its own key", i);
	FZ_CHECK(x->type != KS_RULE_LIMIT || m == x,
		 "limit %zu: another rule matched its key", i);
	FZ_CHECK(m->type == KS_RULE_LIMIT || m->len >= x->len,
		 "limit %zu: a shorter prefix won", i);
	h = ks_hot_rule_match(r, x->key, x->len);
	FZ_CHECK(!h || !ks_hot_rule_is_limit(h->type),
		 "a limit rule matched as a hot-key rule");
	h = ks_hot_shard_match(r, x->key, x->len);
	FZ_CHECK(!h || !ks_hot_rule_is_limit(h->type),
		 "a limit rule matched as a shard rule");
}

static void check_rules(const struct ks_hot_rules *r)
{
	size_t i;

	FZ_CHECK(r->n <= KS_HOT_RULES_MAX, "%zu rules", r->n);
	for (i = 0; i < r->n; i++) {
		const struct ks_hot_rule *x = &r->r[i];
		const struct ks_hot_rule *m;

		FZ_CHECK((x->type >= KS_RULE_PIN &&
			  x->type <= KS_RULE_SHARD_PREFIX) ||
				 ks_hot_rule_is_limit(x->type),
			 "type %u", x->type);
		if (ks_hot_rule_is_limit(x->type)) {
			check_limit(r, i);
			continue;
		}
		if (ks_hot_rule_is_shard(x->type)) {
			/* a shard rule: its key or prefix, a shard name */
			FZ_CHECK(
				x->len >= 1 &&
					x->len <=
						(x->type == KS_RULE_SHARD
							 ? KS_HOT_KEY_MAX
							 : KS_HOT_SHARD_PREFIX_MAX),
				"shard rule len %u", x->len);
			FZ_CHECK(x->shard[0] && memchr(x->shard, '\0',
						       sizeof(x->shard)),
				 "shard rule %zu: no name", i);
			m = ks_hot_shard_match(r, x->key, x->len);
			FZ_CHECK(m && (x->type != KS_RULE_SHARD || m == x) &&
					 (m->type == KS_RULE_SHARD ||
					  m->len >= x->len),
				 "shard rule %zu does not match its own key",
				 i);
			FZ_CHECK(!ks_hot_rule_match(r, x->key, x->len) ||
					 !ks_hot_rule_is_shard(
						 ks_hot_rule_match(r, x->key,
								   x->len)
							 ->type),
				 "a shard rule matched as a hot-key rule");
			continue;
		}
		FZ_CHECK(x->len >= 1 && x->len <= KS_HOT_KEY_MAX, "len %u",
			 x->len);
		FZ_CHECK(x->count >= (x->type == KS_RULE_SPLIT_PREFIX ? 2u
								      : 1u) &&
				 x->count <= KS_HOT_COPIES_MAX,
			 "count %u", x->count);
		check_key_once(r, i);
		/* a key matches a rule for itself: its pin, or a prefix rule
		 * at least as long as this one */
		m = ks_hot_rule_match(r, x->key, x->len);
		FZ_CHECK(m != NULL, "rule %zu does not match its own key", i);
		FZ_CHECK(x->type != KS_RULE_PIN || m == x,
			 "pin %zu: another rule matched its key", i);
		FZ_CHECK(m->type == KS_RULE_PIN || m->len >= x->len,
			 "rule %zu: a shorter prefix won", i);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ks_hot_rules rules;
	struct fz_bytes b = { data, size };
	size_t errlen, n;
	char *err = fz_errbuf(&b, &errlen), *text;
	int rc;

	n = b.n;
	text = malloc(n ? n : 1);
	if (!text)
		abort();
	memcpy(text, b.p, n);
	rules.n = 7; /* must be replaced */
	rc = ks_hot_rules_parse(&rules, text, n, "pins.txt", err, errlen);
	if (rc) {
		FZ_CHECK(rc < 0, "positive return %d", rc);
		FZ_CHECK(rules.n == 0, "a refused file left %zu rules",
			 rules.n);
		fz_check_err(err, errlen);
		FZ_CHECK(errlen < 10 || !strncmp(err, "pins.txt:", 9),
			 "message '%s' does not name the file", err);
	} else {
		check_rules(&rules);
	}
	free(text);
	free(err);
	return 0;
}
