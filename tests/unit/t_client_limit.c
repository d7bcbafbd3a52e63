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
#include "core/limits.h"
#include "net/etcd.h"
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

/* The share a bucket takes (ksc_limit_share): limit_share=N when given,
 * else the views registered for the key, this one counted even before
 * its own registration comes back through the watch. */
static void share_rule(void)
{
	kt_begin("client_limit_share_from_registered_views");
	CHECK_EQ(ksc_limit_share(4, 0, 0), 4);
	CHECK_EQ(ksc_limit_share(4, 9, 1), 4); /* explicit wins */
	CHECK_EQ(ksc_limit_share(0, 0, 0), 1); /* alone, not yet seen */
	CHECK_EQ(ksc_limit_share(0, 1, 1), 1); /* alone, seen */
	CHECK_EQ(ksc_limit_share(0, 3, 0), 4); /* a fourth joins */
	CHECK_EQ(ksc_limit_share(0, 4, 1), 4);
	CHECK_EQ(ksc_limit_share(0, 0, 1), 1); /* never 0 */
	kt_end();
}

/* P processes, each with its own table, at 10x a 1,000/s rule over 10 s:
 * with the shares from the registered count the fleet lets through at
 * most the rule's rate plus P bursts; a share that changes while the key
 * is drained (a process joining, then leaving) re-times the bucket
 * without a new burst; the control, every process at share 1, lets P
 * times the rule through. */
static void share_fleet(void)
{
	static struct ks_hot_rules r;
	struct ksc_limits l[4];
	const struct ks_hot_rule *rule;
	unsigned p, i, ok = 0, ctl = 0, share;
	__u64 h = ksc_key_hash("run:1", 5), t;

	kt_begin("client_limit_share_fleet_holds_rule");
	rules_of(&r, "limit run:1 1000/s\n");
	rule = ks_limit_rule_match(&r, (const __u8 *)"run:1", 5);
	CHECK(rule != NULL, "rule");
	for (p = 0; p < 4; p++)
		ksc_limits_init(&l[p], 0);
	/* 2,500 calls/s from each, 10 s: the count is 4 throughout */
	for (i = 0; i < 25000; i++)
		for (p = 0; p < 4; p++) {
			t = SEC + i * 400000ULL + p * 1000ULL;
			share = ksc_limit_share(0, 4, 1);
			ok += ksc_limit_take_rule(&l[p], rule, "run:1", 5, h, t,
						  share) == KSC_LIM_ALLOWED;
		}
	/* 1,000/s x 10 s + 4 bursts of 25 (the share's rate / 10) */
	CHECK(ok >= 9990 && ok <= 10000 + 4 * 25, "fleet allowed %u", ok);
	for (p = 0; p < 4; p++)
		ksc_limits_free(&l[p]);
	/* the control: each process the whole rate */
	for (p = 0; p < 4; p++)
		ksc_limits_init(&l[p], 0);
	for (i = 0; i < 25000; i++)
		for (p = 0; p < 4; p++) {
			t = SEC + i * 400000ULL + p * 1000ULL;
			ctl += ksc_limit_take_rule(&l[p], rule, "run:1", 5, h,
						   t, 1) == KSC_LIM_ALLOWED;
		}
	CHECK(ctl > 10000 + 4 * 25, "control allowed %u", ctl);
	CHECK(ctl >= 39000, "control allowed %u, not 4x", ctl);
	for (p = 0; p < 4; p++)
		ksc_limits_free(&l[p]);
	kt_end();

	kt_begin("client_limit_share_change_no_burst");
	ksc_limits_init(&l[0], 0);
	/* drained at share 1 (a burst of 100), then a second view: the
	 * same instant gives nothing more, 1 s on gives 500 */
	ok = 0;
	for (i = 0; i < 1000; i++)
		ok += ksc_limit_take_rule(&l[0], rule, "run:1", 5, h, SEC, 1) ==
		      KSC_LIM_ALLOWED;
	CHECK_EQ(ok, 100);
	CHECK_EQ(ksc_limit_take_rule(&l[0], rule, "run:1", 5, h, SEC, 2),
		 KSC_LIM_REFUSED);
	ok = 0;
	for (i = 1; i <= 10000; i++) /* 10,000/s for 1 s at share 2 */
		ok += ksc_limit_take_rule(&l[0], rule, "run:1", 5, h,
					  SEC + i * 100000ULL,
					  2) == KSC_LIM_ALLOWED;
	CHECK(ok >= 450 && ok <= 500, "share 2 allowed %u in 1 s", ok);
	/* the other leaves: back to share 1 with no burst on top */
	ok = 0;
	for (i = 1; i <= 10000; i++)
		ok += ksc_limit_take_rule(&l[0], rule, "run:1", 5, h,
					  2 * SEC + i * 100000ULL,
					  1) == KSC_LIM_ALLOWED;
	CHECK(ok >= 950 && ok <= 1000, "share 1 allowed %u in 1 s", ok);
	ksc_limits_free(&l[0]);
	kt_end();
}

/* Views starting together, none registered yet: each new bucket starts
 * empty (one call, then its rate), not with a whole burst of the rule's
 * rate; the control, a bucket made warm, has the burst. */
static void cold_start(void)
{
	static struct ks_hot_rules r;
	const struct ks_hot_rule *rule;
	struct ksc_limits l;
	unsigned i, ok = 0;
	__u64 h = ksc_key_hash("run:1", 5);

	kt_begin("client_limit_cold_bucket_no_burst");
	rules_of(&r, "limit run:1 1000/s\n");
	rule = ks_limit_rule_match(&r, (const __u8 *)"run:1", 5);
	ksc_limits_init(&l, 0);
	for (i = 0; i < 200; i++)
		ok += ksc_limit_take_cold(&l, rule, "run:1", 5, h, SEC, 1, 1) ==
		      KSC_LIM_ALLOWED;
	CHECK_EQ(ok, 1);
	/* then its rate: 1,000/s over the next second, nothing more */
	ok = 0;
	for (i = 1; i <= 10000; i++)
		ok += ksc_limit_take_cold(&l, rule, "run:1", 5, h,
					  SEC + i * 100000ULL, 1,
					  1) == KSC_LIM_ALLOWED;
	CHECK(ok >= 990 && ok <= 1000, "allowed %u in 1 s", ok);
	ksc_limits_free(&l);
	ksc_limits_init(&l, 0);
	ok = 0;
	for (i = 0; i < 200; i++)
		ok += ksc_limit_take_cold(&l, rule, "run:1", 5, h, SEC, 1, 0) ==
		      KSC_LIM_ALLOWED;
	CHECK_EQ(ok, 100); /* warm: the burst of 1,000/s */
	ksc_limits_free(&l);
	kt_end();
}

static int reg_put(struct ksc_view *v, __u64 hash, __u64 id, __s64 rev)
{
	char key[128];
	int n = ksc_lim_reg_key(v, hash, id, key, sizeof(key));

	CHECK(n > 0, "key");
	return ksc_view_put(v, key, (size_t)n, "1", 1, rev);
}

static int reg_del(struct ksc_view *v, __u64 hash, __u64 id, __s64 rev)
{
	char key[128];
	int n = ksc_lim_reg_key(v, hash, id, key, sizeof(key));

	return ksc_view_del(v, key, (size_t)n, rev, 0);
}

/* The view counts the views registered for a key from limit_clients/
 * (puts, deletes, a whole read's sweep); a put again counts once; a key
 * of another shape is left alone. */
static void view_clients(void)
{
	struct ksc_view v;
	struct ks_etcd_kv kv[2];
	char k0[128], k1[128];
	int self = -1;

	kt_begin("client_limit_view_counts_registered");
	ksc_view_init(&v, "t");
	CHECK_EQ(ksc_view_limit_clients(&v, 0xab, 7, &self), 0);
	CHECK_EQ(self, 0);
	CHECK_EQ(reg_put(&v, 0xab, 7, 2), 0);
	CHECK_EQ(reg_put(&v, 0xab, 8, 3), 0);
	CHECK_EQ(reg_put(&v, 0xab, 8, 4), 0); /* again: one */
	CHECK_EQ(reg_put(&v, 0xcd, 9, 5), 0);
	CHECK_EQ(ksc_view_limit_clients(&v, 0xab, 7, &self), 2);
	CHECK_EQ(self, 1);
	CHECK_EQ(ksc_view_limit_clients(&v, 0xab, 1, &self), 2);
	CHECK_EQ(self, 0);
	CHECK_EQ(ksc_view_limit_clients(&v, 0xcd, 7, &self), 1);
	CHECK_EQ(reg_del(&v, 0xab, 8, 6), 0);
	CHECK_EQ(ksc_view_limit_clients(&v, 0xab, 7, &self), 1);
	/* not HASH/ID: not counted, not refused */
	CHECK_EQ(
		ksc_view_put(&v, "/keysteer/t/limit_clients/zz", 28, "1", 1, 7),
		1);
	CHECK_EQ(ksc_view_limit_clients(&v, 0xab, 7, &self), 1);
	/* a whole read with 0xcd/9 and a new 0xab/5: 0xab/7 went */
	memset(kv, 0, sizeof(kv));
	kv[0].key_len = (size_t)ksc_lim_reg_key(&v, 0xcd, 9, k0, sizeof(k0));
	kv[0].key = k0;
	kv[1].key_len = (size_t)ksc_lim_reg_key(&v, 0xab, 5, k1, sizeof(k1));
	kv[1].key = k1;
	kv[0].value = kv[1].value = "1";
	kv[0].value_len = kv[1].value_len = 1;
	kv[0].mod_revision = kv[1].mod_revision = 8;
	CHECK_EQ(ksc_view_load(&v, kv, 2, 8, 0), 0);
	CHECK_EQ(ksc_view_limit_clients(&v, 0xab, 7, &self), 1);
	CHECK_EQ(self, 0);
	CHECK_EQ(ksc_view_limit_clients(&v, 0xcd, 7, &self), 1);
	ksc_view_free(&v);
	kt_end();
}

void test_client_limit(void)
{
	share_rule();
	share_fleet();
	cold_start();
	view_clients();
	frozen();
	unnamed();
	over_time();
	full();
	view_rules();
}
