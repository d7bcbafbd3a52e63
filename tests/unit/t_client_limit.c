// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libkeysteer's per-key rate limits (user/client/limit.c): the decision a
 * call of a key gets from the fleet's `limit` rules and the bucket the
 * datapath runs (ks_limit.h), with the time given, and the view taking
 * the rules from the pins document (user/client/view.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ktest.h"
#include "ks_limit.h"
#include "client/limit.h"
#include "client/view.h"
#include "core/hotkeys.h"
#include "core/pins_doc.h"
#include "unit.h"

#define SEC 1000000000ULL

static const char RULES[] = "limit hot:1 100/s\nlimit sess:* 50/s\n"
			    "pin hot:1 2\n";

static void rules_of(struct ks_hot_rules *r, const char *text)
{
	char err[200] = "";

	CHECK(!ks_hot_rules_parse(r, text, strlen(text), "pins", err,
				  sizeof(err)),
	      "%s", err);
}

static enum ksc_limit_verdict take(struct ksc_limits *l,
				   const struct ks_hot_rules *r,
				   const char *key, __u64 now)
{
	return ksc_limit_take(l, r, key, strlen(key),
			      ksc_key_hash(key, strlen(key)), now, NULL);
}

/* count of verdict want among n calls of key at one frozen time */
static unsigned burst(struct ksc_limits *l, const struct ks_hot_rules *r,
		      const char *key, unsigned n, __u64 now,
		      enum ksc_limit_verdict want)
{
	unsigned i, c = 0;

	for (i = 0; i < n; i++)
		c += take(l, r, key, now) == want;
	return c;
}

/* At one instant a limited key gets exactly its burst, and every call
 * after is refused; the bucket's counters and the table's agree. */
static void frozen(void)
{
	static struct ks_hot_rules r;
	struct ksc_limits l;
	const struct ksc_limit_bucket *b;
	const struct ks_hot_rule *rule;

	kt_begin("client_limit_burst_frozen");
	rules_of(&r, RULES);
	ksc_limits_init(&l, 1);
	CHECK_EQ(burst(&l, &r, "hot:1", 1000, 5 * SEC, KSC_LIM_ALLOWED), 10);
	CHECK_EQ(take(&l, &r, "hot:1", 5 * SEC), KSC_LIM_REFUSED);
	b = ksc_limit_find(&l, "hot:1", 5, ksc_key_hash("hot:1", 5));
	CHECK(b != NULL, "no bucket");
	if (b) {
		CHECK_EQ(b->allowed, 10);
		CHECK_EQ(b->refused, 991);
		CHECK_EQ(b->rate, 100);
		CHECK_EQ(b->rule_len, 0);
	}
	/* each key under a prefix on its own bucket, at the rule's rate */
	CHECK_EQ(burst(&l, &r, "sess:a", 100, 5 * SEC, KSC_LIM_ALLOWED), 5);
	CHECK_EQ(burst(&l, &r, "sess:b", 100, 5 * SEC, KSC_LIM_ALLOWED), 5);
	CHECK_EQ(l.allowed, 20);
	CHECK_EQ(l.refused, 991 + 95 + 95);
	CHECK_EQ(l.used, 3);
	/* one interval (10 ms) later exactly one more */
	CHECK_EQ(burst(&l, &r, "hot:1", 50, 5 * SEC + 10000000ULL,
		       KSC_LIM_ALLOWED),
		 1);
	CHECK(ksc_limit_take(&l, &r, "sess:zz", 7, ksc_key_hash("sess:zz", 7),
			     5 * SEC, &rule) == KSC_LIM_ALLOWED &&
		      rule == &r.r[1],
	      "the prefix rule named");
	ksc_limits_free(&l);
	kt_end();
}

/* A key no rule names is never refused and gets no bucket: keys sharing
 * an exact rule's or a prefix rule's first bytes, and a limited key's
 * hash given to another key under the same prefix (the bytes decide). */
static void unnamed(void)
{
	static const char *const keys[] = { "hot:10", "hot:",   "hot",
					    "hot:1x", "sess",   "sess-a",
					    "ses:a",  "Sess:a", "xsess:a" };
	static struct ks_hot_rules r;
	struct ksc_limits l;
	unsigned i, none = 0;
	__u64 h = ksc_key_hash("sess:a", 6);

	kt_begin("client_limit_unnamed_keys_never_refused");
	rules_of(&r, RULES);
	ksc_limits_init(&l, 1);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		none += burst(&l, &r, keys[i], 1000, SEC, KSC_LIM_NONE);
	CHECK_EQ(none, 1000 * (sizeof(keys) / sizeof(keys[0])));
	CHECK_EQ(l.used, 0);
	CHECK_EQ(l.refused, 0);
	/* no rules at all: nothing limited */
	CHECK_EQ(ksc_limit_take(&l, NULL, "hot:1", 5, 1, SEC, NULL),
		 KSC_LIM_NONE);
	/* sess:a drained; sess:b under sess:a's hash has its own bucket */
	for (i = 0; i < 100; i++)
		ksc_limit_take(&l, &r, "sess:a", 6, h, SEC, NULL);
	CHECK_EQ(ksc_limit_take(&l, &r, "sess:a", 6, h, SEC, NULL),
		 KSC_LIM_REFUSED);
	CHECK_EQ(ksc_limit_take(&l, &r, "sess:b", 6, h, SEC, NULL),
		 KSC_LIM_ALLOWED);
	CHECK_EQ(l.used, 2);
	ksc_limits_free(&l);
	/* the control: a table matching on the hash alone refuses sess:b,
	 * sess:a's bucket being empty (the violation the bytes prevent) */
	ksc_limits_init(&l, 1);
	l.hash_only = 1;
	for (i = 0; i < 100; i++)
		ksc_limit_take(&l, &r, "sess:a", 6, h, SEC, NULL);
	CHECK_EQ(ksc_limit_take(&l, &r, "sess:b", 6, h, SEC, NULL),
		 KSC_LIM_REFUSED);
	ksc_limits_free(&l);
	kt_end();
}

/* Over time the rate holds (10x offered for 10 s), a key under its rate
 * is never refused, a changed rate restarts the bucket, new rules drop
 * the buckets they no longer name, a share splits the rate. */
static void over_time(void)
{
	static struct ks_hot_rules r, r2;
	struct ksc_limits l;
	unsigned i, ok = 0;
	__u64 iv, tau;

	kt_begin("client_limit_rate_over_time");
	rules_of(&r, RULES);
	ksc_limits_init(&l, 1);
	for (i = 0; i < 10000; i++) /* 1000/s against 100/s */
		ok += take(&l, &r, "hot:1", SEC + i * 1000000ULL) ==
		      KSC_LIM_ALLOWED;
	CHECK(ok >= 1000 && ok <= 1000 + 10, "allowed %u of 10000", ok);
	ok = 0;
	for (i = 0; i < 500; i++) /* 40/s against 50/s */
		ok += take(&l, &r, "sess:q", 20 * SEC + i * 25000000ULL) ==
		      KSC_LIM_ALLOWED;
	CHECK_EQ(ok, 500);
	/* hot:1 drained at 40 s; its rate raised: full again at once */
	CHECK_EQ(burst(&l, &r, "hot:1", 100, 40 * SEC, KSC_LIM_ALLOWED), 10);
	rules_of(&r2, "limit hot:1 1000/s\n");
	CHECK_EQ(burst(&l, &r2, "hot:1", 200, 40 * SEC, KSC_LIM_ALLOWED), 100);
	ksc_limits_prune(&l, &r2);
	CHECK_EQ(l.used, 1);
	CHECK(!ksc_limit_find(&l, "sess:q", 6, ksc_key_hash("sess:q", 6)),
	      "sess:q kept");
	ksc_limits_free(&l);
	/* a share of 4: 100/s is 25/s here, a burst of 2 */
	ksc_limit_params(100, 4, &iv, &tau);
	CHECK_EQ(iv, 40000000);
	CHECK_EQ(tau, 40000000);
	ksc_limit_params(100, 1, &iv, &tau);
	CHECK_EQ(iv, ks_limit_interval_ns(100));
	CHECK_EQ(tau, ks_limit_tau_ns(100));
	ksc_limits_init(&l, 4);
	CHECK_EQ(burst(&l, &r, "hot:1", 100, SEC, KSC_LIM_ALLOWED), 2);
	ksc_limits_free(&l);
	kt_end();
}

/* A full table: busy buckets stay, a new key is let through uncounted;
 * once the buckets are full again (idle) they make room. */
static void full(void)
{
	static struct ks_hot_rules r;
	struct ksc_limits l;
	unsigned i, busy = KSC_LIMIT_KEYS * 3 / 4, ok = 0;
	char key[32];

	kt_begin("client_limit_table_full");
	rules_of(&r, "limit k:* 10/s\n");
	ksc_limits_init(&l, 1);
	for (i = 0; i < busy; i++) {
		snprintf(key, sizeof(key), "k:%u", i);
		ok += take(&l, &r, key, SEC) == KSC_LIM_ALLOWED;
	}
	CHECK_EQ(ok, busy);
	CHECK_EQ(l.used, busy);
	CHECK_EQ(take(&l, &r, "k:new", SEC), KSC_LIM_NO_ROOM);
	CHECK_EQ(l.no_room, 1);
	/* every old key still refused at once: its bucket kept */
	CHECK_EQ(take(&l, &r, "k:0", SEC), KSC_LIM_REFUSED);
	/* 0.1 s on, every bucket is full again: the new key gets one */
	CHECK_EQ(take(&l, &r, "k:new", SEC + SEC / 10), KSC_LIM_ALLOWED);
	CHECK_EQ(l.used, 1);
	ksc_limits_free(&l);
	kt_end();
}

static int put_doc(struct ksc_view *v, const char *text, __s64 rev)
{
	static struct ks_hot_rules r;
	char err[200], *doc;
	int ret;

	if (ks_hot_rules_parse(&r, text, strlen(text), "pins", err,
			       sizeof(err)))
		return -EINVAL;
	doc = ks_pins_doc_encode(text, strlen(text), r.n, "t", "now");
	if (!doc)
		return -ENOMEM;
	ret = ksc_view_put(v, "/keysteer/t/pins", 16, doc, strlen(doc), rev);
	free(doc);
	return ret;
}

/* The view keeps the pins document's limit rules, and drops them with a
 * document that has none or with the document's deletion. */
static void view_rules(void)
{
	struct ksc_view v;
	__u64 ver;

	kt_begin("client_limit_view_takes_rules");
	ksc_view_init(&v, "t");
	CHECK(v.lim == NULL, "rules before any pins");
	CHECK_EQ(put_doc(&v, RULES, 3), 0);
	CHECK(v.lim && v.lim->n == 3, "rules not taken");
	CHECK(v.ded == NULL, "shard rules out of none");
	ver = v.lim_version;
	CHECK_EQ(put_doc(&v, "pin hot:1 2\n", 4), 0);
	CHECK(v.lim == NULL, "rules kept");
	CHECK(v.lim_version > ver, "version");
	CHECK_EQ(put_doc(&v, "limit a 5/s\nshard t:* 10.0.0.1:11211\n", 5), 0);
	CHECK(v.lim && v.lim->n == 2, "limit beside a shard rule");
	/* a document that does not read keeps the rules */
	CHECK_EQ(ksc_view_put(&v, "/keysteer/t/pins", 16, "{", 1, 6), -EBADMSG);
	CHECK(v.lim != NULL, "rules lost to a bad document");
	ver = v.lim_version;
	CHECK_EQ(ksc_view_del(&v, "/keysteer/t/pins", 16, 7, 0), 0);
	CHECK(v.lim == NULL && v.lim_version > ver, "rules after delete");
	ksc_view_free(&v);
	kt_end();
}

void test_client_limit(void)
{
	frozen();
	unnamed();
	over_time();
	full();
	view_rules();
}
