// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_dedicated.c - dedicated shards in the datapath's counting
 * (bpf/ks_dedicated.bpf.h): a key under a shard rule is counted in
 * ks_shards for the rule's shard, every other key for its ring owner,
 * exactly as user space places them (ks_dedicated_place, the function
 * libkeysteer routes with). The maps are written by the agent's own
 * writer (dp/dedicated_map.c) from rules parsed by the pin file's parser.
 */
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include "kp.h"
#include "tr.h"
#include "groups.h"
#include "core/dedicated.h"
#include "dp/dedicated_map.h"

#define TD_SHARDS 4

static struct ks_ded_fds td_fds(void)
{
	struct ks_ded_fds f = {
		.meta = kp_map_fd("ks_ded_meta"),
		.exact = kp_map_fd("ks_ded_exact"),
		.prefix = kp_map_fd("ks_ded_prefix"),
		.stats = kp_map_fd("ks_ded_stats"),
	};

	return f;
}

/* Parses text as a pin file and writes its shard rules, both halves
 * resolved against t's shards; 0, or -1 after failing the test. */
static int td_rules(struct ks_hot_rules *r, const struct tr_ring *t,
		    const char *text)
{
	static int idx[KS_HOT_RULES_MAX];
	const int *halves[2] = { idx, idx };
	struct ks_ded_fds f = td_fds();
	char err[256];

	if (ks_hot_rules_parse(r, text, strlen(text), "t", err, sizeof(err))) {
		kt_failf(__FILE__, __LINE__, "rules: %s", err);
		return -1;
	}
	ks_dedicated_resolve(r, &t->shards, idx);
	if (ks_ded_write(&f, r, halves)) {
		kt_failf(__FILE__, __LINE__, "writing the maps");
		return -1;
	}
	return 0;
}

/* Empty maps again: the hash and the trie are not reset between tests. */
static void td_clear(void)
{
	static const struct ks_hot_rules none;
	const int *halves[2] = { NULL, NULL };
	struct ks_ded_fds f = td_fds();

	ks_ded_write(&f, &none, halves);
}

static void td_get(const __u8 *k, size_t len, __u16 sport)
{
	static struct tr_seg g;

	tr_seg_clear(&g);
	tr_seg_req(&g, KS_OP_GET);
	tr_seg_puts(&g, "get ");
	tr_seg_key(&g, k, len, true);
	tr_seg_puts(&g, "\r\n");
	tr_seg_end(&g);
	tr_send(&g, 0, IPPROTO_TCP, sport);
}

/* The address of shard i ("10.a.b.c:port"). */
static const char *td_addr(const struct tr_ring *t, __u32 i)
{
	static char a[KS_SHARD_HOST_MAX + 8];

	ks_shard_addr(&t->shards.v[i], a, sizeof(a));
	return a;
}

static __u64 td_stat(int what)
{
	struct ks_ded_fds f = td_fds();
	struct ks_dedicated_stats s;

	return ks_ded_read_stats(&f, &s) ? ~0ULL : s.n[what];
}

/* ks_shards' reads of shards 0..TD_SHARDS-1 are want's. */
static void td_shards_are(const __u64 *want)
{
	struct ks_shard_stats st[TD_SHARDS];
	size_t i;

	CHECK_EQ(kp_shards_read(st, TD_SHARDS), 0);
	for (i = 0; i < TD_SHARDS; i++)
		CHECK(st[i].reads == want[i],
		      "shard %zu: %llu reads counted, %llu placed", i,
		      (unsigned long long)st[i].reads,
		      (unsigned long long)want[i]);
}

/*
 * Keys of three kinds, each read reps times: exact-rule keys, keys under
 * a prefix rule (and under a longer one inside it), and keys no rule
 * names; ks_shards must hold exactly what ks_dedicated_place and the ring
 * give, computed per key in user space.
 */
static void td_mixed(const char *name, __u32 self)
{
	static const char *const keys[] = {
		"tenant7:user:1", "tenant7:user:2", "tenant7:vip:9",
		"tenant7:vip:",   "tenant7",        "tenant70:x",
		"exact:key",      "exact:key2",     "other:1",
		"other:2",        "other:3",        "zz",
	};
	static struct ks_hot_rules r;
	static int idx[KS_HOT_RULES_MAX];
	__u64 want[TD_SHARDS] = { 0 };
	struct tr_shape s = { .dist = KS_DIST_KETAMA,
			      .n = TD_SHARDS,
			      .self = self };
	struct tr_ring t;
	char text[1024];
	size_t i, n = sizeof(keys) / sizeof(keys[0]);
	__u64 ded = 0, misdirected = 0;
	int j, reps = 5;

	kp_begin(name);
	if (tr_ring_build(&t, &s)) {
		kp_end();
		return;
	}
	tr_load(&t);
	tr_follow(NULL); /* the per-packet check knows the ring alone */
	snprintf(text, sizeof(text),
		 "# a tenant's shard, a VIP part of it elsewhere, one key\n"
		 "shard tenant7:* %s\nshard tenant7:vip:* %s\n"
		 "pin hot:1 2\nshard exact:key %s\n",
		 td_addr(&t, 2), td_addr(&t, 3), td_addr(&t, 1));
	if (td_rules(&r, &t, text))
		goto out;
	ks_dedicated_resolve(&r, &t.shards, idx);
	kp.x.ded = &r; /* kp's model places keys as user space does */
	kp.x.ded_idx = idx;
	for (i = 0; i < n; i++) {
		size_t len = strlen(keys[i]);
		int d = ks_dedicated_place(&r, idx, keys[i], len, NULL);
		__u32 o = d >= 0 ? (__u32)d
				 : ks_ring_lookup(&t.ring, keys[i], len);

		want[o] += (__u64)reps;
		ded += d >= 0 ? (__u64)reps : 0;
		if (self != KS_NO_SHARD && o != self)
			misdirected += (__u64)reps;
		for (j = 0; j < reps; j++)
			td_get((const __u8 *)keys[i], len,
			       (__u16)(41000 + i * 8 + (size_t)j));
	}
	td_shards_are(want);
	/* 5 keys under rules: 4 under tenant7:* (2 of them under the VIP
	 * prefix) and exact:key; not tenant7, tenant70:x or exact:key2 */
	CHECK_EQ(ded, 5ULL * (__u64)reps);
	CHECK_EQ(td_stat(KS_DED_EXACT) + td_stat(KS_DED_PREFIX), ded);
	CHECK_EQ(td_stat(KS_DED_EXACT), (__u64)reps);
	CHECK_EQ(kp_pkt(KS_PKT_MISDIRECTED), misdirected);
out:
	td_clear();
	kp_end();
	tr_ring_free(&t);
}

/*
 * A 64-bit key hash shared with another key: the exact map's entry under
 * key A's hash holds key B's bytes (what a collision looks like to the
 * datapath). A read of A must stay with A's ring owner, counted as a
 * collision; the control, the entry with A's own bytes, moves A.
 */
static void td_collision(void)
{
	static const char a[] = "collide:a", b[] = "collide:b";
	struct ks_dedicated_exact v, vb;
	struct ks_shard_stats st[TD_SHARDS];
	struct ks_hot_rule rule = { .type = KS_RULE_SHARD };
	struct ks_dedicated_meta meta = { .exact = 1 };
	struct tr_shape s = { .dist = KS_DIST_KETAMA,
			      .n = TD_SHARDS,
			      .self = KS_NO_SHARD };
	struct ks_ded_fds f = td_fds();
	__u32 zero = 0, owner, other, shard[2];
	struct tr_ring t;
	__u64 ha, hb;
	int i;

	kp_begin("dedicated_hash_collision_stays_with_ring_owner");
	if (tr_ring_build(&t, &s)) {
		kp_end();
		return;
	}
	tr_load(&t);
	tr_follow(NULL);
	kp.x.ring_inexact = true; /* entries planted by hand: checked here */
	owner = ks_ring_lookup(&t.ring, a, strlen(a));
	other = (owner + 1) % TD_SHARDS;
	shard[0] = shard[1] = other;
	rule.len = (__u16)strlen(a);
	memcpy(rule.key, a, rule.len);
	ks_ded_exact_of(&rule, shard, &ha, &v);
	rule.len = (__u16)strlen(b);
	memcpy(rule.key, b, rule.len);
	ks_ded_exact_of(&rule, shard, &hb, &vb);
	meta.first['c' >> 6] |= 1ULL << ('c' & 63);
	/* B's bytes under A's hash */
	CHECK_EQ(bpf_map_update_elem(f.exact, &ha, &vb, BPF_ANY), 0);
	CHECK_EQ(bpf_map_update_elem(f.meta, &zero, &meta, BPF_ANY), 0);
	for (i = 0; i < 4; i++)
		td_get((const __u8 *)a, strlen(a), (__u16)(42000 + i));
	CHECK_EQ(kp_shards_read(st, TD_SHARDS), 0);
	CHECK_EQ(st[owner].reads, 4);
	CHECK_EQ(st[other].reads, 0);
	CHECK_EQ(td_stat(KS_DED_COLLISION), 4);
	CHECK_EQ(td_stat(KS_DED_EXACT), 0);
	/* control: A's own bytes, and A moves */
	CHECK_EQ(bpf_map_update_elem(f.exact, &ha, &v, BPF_ANY), 0);
	for (i = 0; i < 4; i++)
		td_get((const __u8 *)a, strlen(a), (__u16)(42100 + i));
	CHECK_EQ(kp_shards_read(st, TD_SHARDS), 0);
	CHECK_EQ(st[owner].reads, 4);
	CHECK_EQ(st[other].reads, 4);
	CHECK_EQ(td_stat(KS_DED_EXACT), 4);
	td_clear();
	kp_end();
	tr_ring_free(&t);
}

/*
 * A rule whose shard the ring lacks places nothing: its keys are counted
 * for their ring owner, and as orphans. Then each half's index: the rule
 * names shard 3 in half 0's ring and shard 1 in half 1's; a read counts
 * on the shard of the half the packet placed on.
 */
static void td_halves(void)
{
	static const char k[] = "tenant9:k";
	static struct ks_hot_rules r;
	static int i0[KS_HOT_RULES_MAX], i1[KS_HOT_RULES_MAX];
	const int *halves[2] = { i0, i1 };
	struct ks_shard_stats st[TD_SHARDS];
	struct tr_shape s = { .dist = KS_DIST_KETAMA,
			      .n = TD_SHARDS,
			      .self = KS_NO_SHARD };
	struct ks_ded_fds f = td_fds();
	struct tr_ring t;
	__u32 owner;
	int i;

	kp_begin("dedicated_shard_not_in_ring_counts_for_ring_owner");
	if (tr_ring_build(&t, &s)) {
		kp_end();
		return;
	}
	tr_load(&t);
	tr_follow(NULL);
	owner = ks_ring_lookup(&t.ring, k, strlen(k));
	if (td_rules(&r, &t, "shard tenant9:* 192.0.2.99:11211\n"))
		goto out;
	for (i = 0; i < 3; i++)
		td_get((const __u8 *)k, strlen(k), (__u16)(43000 + i));
	CHECK_EQ(kp_shards_read(st, TD_SHARDS), 0);
	CHECK_EQ(st[owner].reads, 3);
	CHECK_EQ(td_stat(KS_DED_ORPHAN), 3);
	CHECK_EQ(td_stat(KS_DED_PREFIX), 0);
	kp_end();

	kp_begin("dedicated_index_of_the_half_placed_on");
	tr_load(&t); /* the test's reset emptied the ring */
	tr_follow(NULL);
	kp.x.ring_inexact = true; /* two rings' indexes: checked here */
	/* the same ring in both halves, the rule's shard differing */
	CHECK_EQ(kp_ring_write(1, t.ring.half), 0);
	memset(i0, 0xff, sizeof(i0));
	memset(i1, 0xff, sizeof(i1));
	i0[0] = 3;
	i1[0] = 1;
	CHECK_EQ(ks_ded_write(&f, &r, halves), 0);
	for (i = 0; i < 2; i++)
		td_get((const __u8 *)k, strlen(k), (__u16)(43100 + i));
	CHECK_EQ(kp_ring_flip(1), 0);
	for (i = 0; i < 5; i++)
		td_get((const __u8 *)k, strlen(k), (__u16)(43200 + i));
	CHECK_EQ(kp_shards_read(st, TD_SHARDS), 0);
	CHECK_EQ(st[3].reads, 2);
	CHECK_EQ(st[1].reads, 5);
	CHECK_EQ(td_stat(KS_DED_PREFIX), 7);
out:
	td_clear();
	kp_end();
	tr_ring_free(&t);
}

/* No rules: the maps' counts are 0 and every key is the ring's, checked
 * packet by packet against user space's placement. */
static void td_none(void)
{
	struct tr_shape s = { .dist = KS_DIST_KETAMA,
			      .n = TD_SHARDS,
			      .self = 1 };
	struct tr_ring t;
	int i;

	kp_begin("dedicated_no_rules_every_key_on_its_ring_owner");
	if (tr_ring_build(&t, &s)) {
		kp_end();
		return;
	}
	td_clear();
	tr_load(&t);
	for (i = 0; i < 12; i++)
		td_get(tr_new_key(8 + (size_t)i, i % 2), 8 + (size_t)i,
		       (__u16)(44000 + i));
	CHECK(kp_pkt(KS_PKT_RING_HIT) == 12, "%llu placed",
	      (unsigned long long)kp_pkt(KS_PKT_RING_HIT));
	CHECK_EQ(td_stat(KS_DED_EXACT) + td_stat(KS_DED_PREFIX) +
			 td_stat(KS_DED_ORPHAN) + td_stat(KS_DED_COLLISION),
		 0);
	kp_end();
	tr_follow(NULL);
	tr_ring_free(&t);
}

/*
 * Shard rules loaded and the sample log on: the express path places a
 * sampled lone get with the general path's own ks_ring_place(), so a
 * rule's key counts for the rule's shard once, a misdirected one keeps
 * its client, and the rules' counts are the general path's. Lone UDP gets
 * through XDP, after a 40-byte key's get (the general path's, which
 * leaves seg_limit at its length; the express path does not write it,
 * t_slog.c), of a key under an exact rule naming another shard, one under
 * a rule naming this host, and one no rule names, reps times each:
 * each get the express path's, and ks_shards, the rules' counts and
 * misdirected (kp's model: the misdirect slots) exactly as user space
 * places the keys.
 */
static void td_express(void)
{
	static const char *const keys[] = { "exact:key", "own:key",
					    "free:key" };
	static struct ks_hot_rules r;
	static int idx[KS_HOT_RULES_MAX];
	__u64 want[TD_SHARDS] = { 0 }, ded = 0, misdirected = 0;
	struct tr_shape s = { .dist = KS_DIST_KETAMA,
			      .n = TD_SHARDS,
			      .self = 1 };
	unsigned int express = 0;
	struct tr_ring t;
	char text[1024], pay[64], k40[48], lb[64];
	size_t i, n, n40;
	struct pkt p;
	__u32 o40;
	int j, reps = 4;

	kp_begin("dedicated_express_sampled_gets_counted_as_general_path");
	if (tr_ring_build(&t, &s)) {
		kp_end();
		return;
	}
	kp_ring_load(&t.ring);
	snprintf(text, sizeof(text), "shard exact:key %s\nshard own:key %s\n",
		 td_addr(&t, 2), td_addr(&t, 1));
	if (td_rules(&r, &t, text))
		goto out;
	ks_dedicated_resolve(&r, &t.shards, idx);
	kp.x.ded = &r;
	kp.x.ded_idx = idx;
	kp_set_slog(1);
	kp_make_key(k40, 40, 6600);
	n40 = (size_t)snprintf(lb, sizeof(lb), "get %s\r\n", k40);
	o40 = ks_ring_lookup(&t.ring, k40, 40);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		size_t len = strlen(keys[i]);
		int d = ks_dedicated_place(&r, idx, keys[i], len, NULL);
		__u32 o = d >= 0 ? (__u32)d
				 : ks_ring_lookup(&t.ring, keys[i], len);

		n = (size_t)snprintf(pay, sizeof(pay), "get %s\r\n", keys[i]);
		for (j = 0; j < reps; j++) {
			kp_udp4(&p, lb, n40);
			kp_send_mc(&p);
			kp_x_req(KS_OP_GET, n40, k40, NULL);
			want[o40]++;
			misdirected += o40 != s.self;
			kp_udp4(&p, pay, n);
			kp_send_mc(&p);
			kp_x_req(KS_OP_GET, n, keys[i], NULL);
			express += kp_scratch_u32("seg_limit") == n40;
			want[o]++;
			ded += d >= 0;
			misdirected += o != s.self;
		}
	}
	CHECK_EQ(express, 3U * (unsigned int)reps);
	td_shards_are(want);
	CHECK_EQ(ded, 2ULL * (__u64)reps);
	CHECK_EQ(td_stat(KS_DED_EXACT), ded);
	CHECK_EQ(kp_pkt(KS_PKT_MISDIRECTED), misdirected);
	CHECK_EQ(kp_pkt(KS_PKT_SLOG), 6ULL * (__u64)reps);
out:
	td_clear();
	kp_end();
	kp_ring_load(NULL);
	tr_ring_free(&t);
}

void t_dedicated_group(void)
{
	td_none();
	td_mixed("dedicated_keys_counted_on_named_shard", KS_NO_SHARD);
	td_mixed("dedicated_keys_not_misdirected_on_their_shard", 2);
	td_collision();
	td_halves();
	td_express();
}
