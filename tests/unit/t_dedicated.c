// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_dedicated.c - dedicated shards' pure parts: the pin file's shard rules
 * (core/hotkeys.c), their shards found in a ring's list and a key's
 * placement (core/dedicated.c). libkeysteer's view routing by them is
 * tested with the view's other tests (t_client_view.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/dedicated.h"
#include "core/hotkeys.h"
#include "ktest.h"
#include "unit.h"

#define TD_A "198.18.2.11:11211"
#define TD_B "198.18.2.12:11211"
#define TD_C "198.18.2.13:11211"

static int td_parse(struct ks_hot_rules *r, const char *text, char *err,
		    size_t errlen)
{
	return ks_hot_rules_parse(r, text, strlen(text), "pins.conf", err,
				  errlen);
}

static void td_refused(const char *text, const char *want)
{
	static struct ks_hot_rules r;
	char err[300] = "";

	CHECK(td_parse(&r, text, err, sizeof(err)) == -EINVAL, "accepted: %s",
	      text);
	CHECK(strstr(err, want) != NULL, "'%s': error '%s', want '%s'", text,
	      err, want);
	CHECK_EQ(r.n, 0);
}

static void td_parser(void)
{
	static struct ks_hot_rules r;
	static const char good[] = "# tenant 7 has its own shard\n"
				   "shard tenant7:* " TD_C "\n"
				   "shard tenant7:vip:* b-name\n"
				   "pin-prefix tenant7: 2\n"
				   "shard exact:key " TD_A "\n"
				   "shard a*b " TD_B "\n";
	char err[300] = "", big[400];
	const struct ks_hot_rule *m;

	kt_begin("dedicated_rules_parse");
	CHECK(td_parse(&r, good, err, sizeof(err)) == 0, "%s", err);
	CHECK_EQ(r.n, 5);
	CHECK(r.r[0].type == KS_RULE_SHARD_PREFIX && r.r[0].len == 8 &&
		      !memcmp(r.r[0].key, "tenant7:", 8) &&
		      !strcmp(r.r[0].shard, TD_C),
	      "rule 1 wrong");
	CHECK(r.r[3].type == KS_RULE_SHARD && r.r[3].len == 9 &&
		      !strcmp(r.r[3].shard, TD_A),
	      "rule 4 wrong");
	/* a '*' inside a key is a byte of the key */
	CHECK(r.r[4].type == KS_RULE_SHARD && r.r[4].len == 3,
	      "'a*b' not an exact key");
	CHECK_EQ(ks_dedicated_count(&r), 4);
	CHECK(!strcmp(ks_hot_rule_name(KS_RULE_SHARD_PREFIX), "shard-prefix"),
	      "name");
	kt_end();

	kt_begin("dedicated_rules_not_hot_key_rules");
	/* a shard rule pins nothing hot; the pin-prefix beside it does */
	m = ks_hot_rule_match(&r, (const __u8 *)"exact:key", 9);
	CHECK(m == NULL, "a shard rule matched as a hot-key rule");
	m = ks_hot_rule_match(&r, (const __u8 *)"tenant7:x", 9);
	CHECK(m && m->type == KS_RULE_PIN_PREFIX, "pin-prefix lost");
	m = ks_hot_shard_match(&r, (const __u8 *)"tenant7:x", 9);
	CHECK(m && m == &r.r[0], "shard prefix not matched");
	m = ks_hot_shard_match(&r, (const __u8 *)"tenant7:vip:1", 13);
	CHECK(m && m == &r.r[1], "the longest prefix does not win");
	m = ks_hot_shard_match(&r, (const __u8 *)"exact:key2", 10);
	CHECK(m == NULL, "an exact rule matched a longer key");
	m = ks_hot_shard_match(&r, (const __u8 *)"tenant7", 7);
	CHECK(m == NULL, "a key shorter than the prefix matched");
	kt_end();

	kt_begin("dedicated_rules_refused");
	td_refused("shard k\n",
		   "pins.conf:1: shard needs KEY|PREFIX* SHARDNAME");
	td_refused("shard k a b\n", "shard needs KEY|PREFIX* SHARDNAME");
	td_refused("pin a 2\nshard * " TD_A "\n",
		   "pins.conf:2: shard '*' names no prefix");
	snprintf(
		big, sizeof(big), "shard %.*s* %s\n", 65,
		"ppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp",
		TD_A);
	td_refused(big, "shard prefix longer than 64 bytes");
	td_refused("shard k\x01 " TD_A "\n", "key has a control byte 0x01");
	td_refused("shard k a\x02\n", "shard name has a control byte 0x02");
	td_refused("shard t:* " TD_A "\nshard t:* " TD_B "\n",
		   "pins.conf:2: duplicate shard-prefix rule for 't:'");
	td_refused(
		"shards k " TD_A "\n",
		"unknown directive 'shards' (pin, pin-prefix, split-prefix, shard, limit)");
	kt_end();
}

/* Three shards, the third with a name. */
static int td_shards(struct ks_shards *s)
{
	static const char text[] = TD_A "\n" TD_B " b-name\n" TD_C "\n";
	char err[200];

	return ks_shards_parse_text("shards.txt", text, s, err, sizeof(err));
}

static void td_place(void)
{
	static struct ks_hot_rules r;
	static const char text[] = "shard tenant7:* " TD_C "\n"
				   "shard tenant7:vip:* b-name\n"
				   "shard exact:key " TD_A "\n"
				   "shard gone:* 198.18.9.9:11211\n";
	const struct ks_hot_rule *m;
	int idx[KS_HOT_RULES_MAX];
	struct ks_shards s;
	char err[400] = "";

	kt_begin("dedicated_place_exact_prefix_name");
	CHECK(td_shards(&s) == 0, "shards");
	CHECK(td_parse(&r, text, err, sizeof(err)) == 0, "%s", err);
	CHECK_EQ(ks_dedicated_shard_index(&s, TD_C), 2);
	CHECK_EQ(ks_dedicated_shard_index(&s, "b-name"), 1);
	CHECK_EQ(ks_dedicated_shard_index(&s, "198.18.2.99:11211"), -1);
	CHECK_EQ(ks_dedicated_resolve(&r, &s, idx), 1); /* gone:* */
	CHECK_EQ(ks_dedicated_place(&r, idx, "tenant7:u1", 10, NULL), 2);
	CHECK_EQ(ks_dedicated_place(&r, idx, "tenant7:vip:1", 13, &m), 1);
	CHECK(m == &r.r[1], "rule");
	CHECK_EQ(ks_dedicated_place(&r, idx, "exact:key", 9, NULL), 0);
	CHECK_EQ(ks_dedicated_place(&r, idx, "exact:key1", 10, NULL), -1);
	CHECK_EQ(ks_dedicated_place(&r, idx, "other", 5, &m), -1);
	CHECK(m == NULL, "a rule for 'other'");
	/* the ring lacks the shard: the ring's owner, the rule named */
	CHECK_EQ(ks_dedicated_place(&r, idx, "gone:1", 6, &m), -1);
	CHECK(m == &r.r[3], "the rule of a shard not in the ring");
	kt_end();

	kt_begin("dedicated_check_names_the_missing_shard");
	CHECK(ks_dedicated_check(&r, &s, err, sizeof(err)) == -ENOENT,
	      "a shard not in the ring passed");
	CHECK(strstr(err,
		     "shard gone:* 198.18.9.9:11211: no shard "
		     "198.18.9.9:11211 in the ring (shards.txt, 3 shards: " TD_A
		     ", " TD_B ", " TD_C ")") != NULL,
	      "error '%s'", err);
	r.n = 3;
	CHECK(ks_dedicated_check(&r, &s, err, sizeof(err)) == 0, "%s", err);
	kt_end();
	ks_shards_free(&s);
}

void test_dedicated(void)
{
	td_parser();
	td_place();
}
