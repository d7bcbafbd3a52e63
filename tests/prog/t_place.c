// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_place.c - the ring placement's 1 in P (issue 27; bpf/ks_ring.bpf.h
 * ks_place_next, ks_ring_defer, ks_ring_place; the express path's
 * ks_express_sample): with P in this CPU's ks_rate entry, 1 in P of the
 * sampled reads and writes is placed on the ring, and each placement adds
 * P to its owner's reads or writes, and to its misdirected keys when this
 * host is not the owner; ks_pkts counts the placements themselves
 * (ring_hit, misdirected), and ks_misdirect keeps the clients of the
 * placed misdirected keys only.
 *
 * Exact cases: every key sampled (1 in 1), P 4 or 1, on each way a
 * sampled key reaches the ring: the express path's sampled lone get (XDP
 * and tc), the general path's lone get (the log off) and the general
 * parser's multi-get. The countdown starts at 0 with the scratch, so the
 * 4th, 8th, ... sampled key is placed; per shard, the counts must be
 * exactly P times the placed keys it owns (by user space's
 * ks_ring_lookup), the countdown left where the keys put it. P 1 is the
 * placement as it was: the model (kp.c) checks every count and slot.
 *
 * The estimate: 16,384 keys at P 8 on 8 shards, each shard's count
 * within 4 sqrt(true (P - 1)) + P of the keys it really got (a 1-in-P
 * systematic sample of keys whose owners the ring's hash scatters: the
 * placed keys a shard owns vary as a sample without replacement, variance
 * at most true (P - 1) in the count), and the sum within P of the keys
 * sent. The control: the same counts as one a placement (what adding 1
 * instead of P would leave) must fail that check, by far.
 * tests/prog/place_control.sh builds the datapath with the weight 1
 * (and other faults) and runs these tests against it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "groups.h"
#include "tr.h"

enum place_via {
	PV_EXPRESS,    /* the log on: the express path's sampled lone get */
	PV_EXPRESS_TC, /* ... through ks_tc_ingress */
	PV_GENERAL,    /* the log off: the general path's lone get */
	PV_MGET,       /* two keys a get: the general parser */
	PV_KINDS
};

#define PL_KEYS  48 /* keys sent in an exact case */
#define PL_SHARD 4  /* shards of the exact cases' ring; self is #1 */

static char pl_key[PL_KEYS][24];

static void pl_send(enum place_via v, const char *pay, size_t n)
{
	struct pkt p;

	kp_udp4(&p, pay, n);
	if (v == PV_EXPRESS_TC)
		kp_send_tc(&p);
	else
		kp_send_mc(&p);
}

/* Keys i and i + 1 (PV_MGET) or key i, as the way v takes them. */
static int pl_send_keys(enum place_via v, int i)
{
	char pay[80];
	size_t n;

	if (v == PV_MGET) {
		n = (size_t)snprintf(pay, sizeof(pay), "get %s %s\r\n",
				     pl_key[i], pl_key[i + 1]);
		pl_send(v, pay, n);
		kp_x_req(KS_OP_GET, n, pl_key[i], pl_key[i + 1], NULL);
		return 2;
	}
	n = (size_t)snprintf(pay, sizeof(pay), "get %s\r\n", pl_key[i]);
	pl_send(v, pay, n);
	kp_x_req(KS_OP_GET, n, pl_key[i], NULL);
	return 1;
}

/* Was a misdirect slot of this CPU written for the placed key of hash h? */
static bool pl_hash_placed(__u64 h, const __u64 *placed, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (placed[i] == h)
			return true;
	return false;
}

static void place_case(enum place_via v, __u32 p)
{
	static const char *const vname[PV_KINDS] = { "express", "express_tc",
						     "general", "mget" };
	struct tr_shape sh = { .dist = KS_DIST_KETAMA,
			       .n = PL_SHARD,
			       .self = 1 };
	struct ks_shard_stats got[PL_SHARD], want[PL_SHARD];
	__u64 placed_mis[PL_KEYS];
	__u64 placed = 0, mis = 0, sum = 0;
	struct ks_misdirect m;
	struct tr_ring t;
	char name[80];
	int i, j, slots = 0, stray = 0;
	__u32 o;

	snprintf(name, sizeof(name), "place_1_in_%u_%s_exact", p, vname[v]);
	kp_begin(name);
	if (tr_ring_build(&t, &sh)) {
		kp_end();
		return;
	}
	kp_set_sample(1);
	kp_ring_load(&t.ring);
	kp_set_place(0, p);
	kp_set_slog(v == PV_EXPRESS || v == PV_EXPRESS_TC);
	memset(want, 0, sizeof(want));
	for (i = 0; i < PL_KEYS; i++)
		kp_make_key(pl_key[i], 16, 9100 + (unsigned)i);
	/* a request with no key first: the general path's, which reads the
	 * rates (the express path takes a lone get only once they are
	 * read) and leaves seg_limit at its 9 bytes */
	pl_send(v, "version\r\n", 9);
	kp_x_req(KS_OP_OTHER, 9, NULL);
	/* the j-th sampled key (from 1) is placed when P divides j */
	for (i = 0, j = 0; i < PL_KEYS;) {
		int k, sent = pl_send_keys(v, i);

		for (k = 0; k < sent; k++, i++) {
			if (++j % (int)p)
				continue;
			o = ks_ring_lookup(&t.ring, pl_key[i], 16);
			if (o >= PL_SHARD)
				continue;
			placed++;
			want[o].reads += p;
			if (o != sh.self) {
				want[o].misdirected += p;
				placed_mis[mis++] = kp_hash(pl_key[i], 16);
			}
		}
	}
	/* the way asked: the express path writes none of the scratch's
	 * per-packet fields (seg_limit stays at the version's 9), the
	 * general path sets it to every packet's payload */
	CHECK((kp_scratch_u32("seg_limit") == 9) ==
		      (v == PV_EXPRESS || v == PV_EXPRESS_TC),
	      "seg_limit %u: not the %s way", kp_scratch_u32("seg_limit"),
	      vname[v]);
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), PL_KEYS);
	CHECK_EQ(kp_pkt(KS_PKT_RING_HIT), placed);
	CHECK_EQ(placed, PL_KEYS / p);
	CHECK_EQ(kp_pkt(KS_PKT_MISDIRECTED), mis);
	CHECK_EQ(kp_scratch_u32("place_p"), p);
	CHECK_EQ(kp_scratch_u32("place_cd"), 0); /* PL_KEYS % p == 0 */
	CHECK_EQ(kp_shards_read(got, PL_SHARD), 0);
	for (o = 0; o < PL_SHARD; o++) {
		CHECK(got[o].reads == want[o].reads && !got[o].writes &&
			      got[o].misdirected == want[o].misdirected,
		      "shard %u: %llu reads %llu writes %llu misdirected, want %llu reads %llu misdirected",
		      o, (unsigned long long)got[o].reads,
		      (unsigned long long)got[o].writes,
		      (unsigned long long)got[o].misdirected,
		      (unsigned long long)want[o].reads,
		      (unsigned long long)want[o].misdirected);
		sum += got[o].reads;
	}
	/* P times the placements: every sampled key, in expectation and
	 * here exactly (P divides the keys sent) */
	CHECK_EQ(sum, PL_KEYS);
	/* the clients of the placed misdirected keys, and only theirs */
	for (i = 0; i < KS_MISDIRECT_SLOTS; i++) {
		if (kp_misdirect_read((__u32)i, kp.cpu, &m) || !m.ts_ns)
			continue;
		slots++;
		stray += !pl_hash_placed(m.hash, placed_mis, (int)mis);
	}
	CHECK_EQ(slots, mis < KS_MISDIRECT_SLOTS ? mis : KS_MISDIRECT_SLOTS);
	CHECK_EQ(stray, 0);
	kp_end();
	kp_ring_load(NULL);
	tr_ring_free(&t);
}

static void t_place_exact(void)
{
	int v;

	for (v = 0; v < PV_KINDS; v++) {
		place_case((enum place_via)v, 4);
		place_case((enum place_via)v, 1);
	}
}

/*
 * The small cases' set-up: kp_begin(name), a 4-shard ketama ring with
 * no self, every key sampled, p in ks_rate's entry for epoch, and n
 * keys made from seed. 0, or -1 (ended) when the ring cannot be built.
 */
static int pl_small_begin(const char *name, struct tr_ring *t, __u32 epoch,
			  __u32 p, unsigned seed, int n)
{
	struct tr_shape sh = { .dist = KS_DIST_KETAMA,
			       .n = PL_SHARD,
			       .self = KS_NO_SHARD };
	int i;

	kp_begin(name);
	if (tr_ring_build(t, &sh)) {
		kp_end();
		return -1;
	}
	kp_set_sample(1);
	kp_ring_load(&t->ring);
	kp_set_place(epoch, p);
	for (i = 0; i < n; i++)
		kp_make_key(pl_key[i], 16, seed + (unsigned)i);
	return 0;
}

/* Every shard's reads, summed. */
static __u64 pl_shard_reads(void)
{
	struct ks_shard_stats got[PL_SHARD];
	__u64 sum = 0;
	__u32 o;

	CHECK_EQ(kp_shards_read(got, PL_SHARD), 0);
	for (o = 0; o < PL_SHARD; o++)
		sum += got[o].reads;
	return sum;
}

static void pl_small_end(struct tr_ring *t)
{
	kp_end();
	kp_ring_load(NULL);
	tr_ring_free(t);
}

/*
 * An epoch has one P: the entry the agent wrote for the epoch ahead is
 * read when seq moves there, not before (8 keys at P 1 in epoch 0, all
 * placed, while epoch 1's entry already says 4; then 8 keys in epoch 1,
 * 2 placed, each counted 4).
 */
static void t_place_epoch(void)
{
	struct tr_ring t;
	int i;

	if (pl_small_begin("place_rate_read_with_the_epoch", &t, 1, 4, 9300,
			   16))
		return;
	for (i = 0; i < 8; i++)
		pl_send_keys(PV_GENERAL, i);
	CHECK_EQ(kp_pkt(KS_PKT_RING_HIT), 8);
	CHECK_EQ(kp_scratch_u32("place_p"), 1);
	kp_set_seq(1);
	for (; i < 16; i++)
		pl_send_keys(PV_GENERAL, i);
	CHECK_EQ(kp_scratch_u32("place_p"), 4);
	CHECK_EQ(kp_pkt(KS_PKT_RING_HIT), 10);
	CHECK_EQ(pl_shard_reads(), 16);
	pl_small_end(&t);
}

/*
 * The test-only KS_RATE_P_UNIT (the agent's --place-scaling off, the
 * control of test_place_rate.sh): still 1 in P placed, but each placement
 * adds 1, so the shards sum to the placements, P times short.
 */
static void t_place_unit(void)
{
	struct tr_ring t;
	int i;

	if (pl_small_begin("place_unit_test_switch_adds_1", &t, 0,
			   4 | KS_RATE_P_UNIT, 9500, 16))
		return;
	for (i = 0; i < 16; i++)
		pl_send_keys(PV_GENERAL, i);
	CHECK_EQ(kp_scratch_u32("place_p"), 4);
	CHECK_EQ(kp_scratch_u32("place_w"), 1);
	CHECK_EQ(kp_pkt(KS_PKT_RING_HIT), 4);
	CHECK_EQ(pl_shard_reads(), 4);
	pl_small_end(&t);
}

#define PE_KEYS  16384
#define PE_SHARD 8
#define PE_P     8

/*
 * How many shards' counts (est, scaled as the datapath left them) miss
 * the bound around the true counts, and whether their sum does (*sum_off
 * set when it is more than PE_P off).
 */
static int pe_misses(const double *est, const __u64 *truth, bool *sum_off,
		     double *worst)
{
	double se = 0, st = 0, d, b;
	int o, n = 0;

	*worst = 0;
	for (o = 0; o < PE_SHARD; o++) {
		d = fabs(est[o] - (double)truth[o]);
		b = 4 * sqrt((double)truth[o] * (PE_P - 1)) + PE_P;
		n += d > b;
		if (d / b > *worst)
			*worst = d / b;
		se += est[o];
		st += (double)truth[o];
	}
	*sum_off = fabs(se - st) >= PE_P;
	return n;
}

static void t_place_estimate(void)
{
	struct tr_shape sh = { .dist = KS_DIST_KETAMA,
			       .n = PE_SHARD,
			       .self = KS_NO_SHARD };
	struct ks_shard_stats got[PE_SHARD];
	__u64 truth[PE_SHARD] = { 0 };
	double est[PE_SHARD], ctl[PE_SHARD], worst, cworst;
	char key[24], pay[48];
	bool sum_off, csum_off;
	struct tr_ring t;
	int i, miss, cmiss;
	size_t n;
	__u32 o;

	kp_begin("place_1_in_8_shard_estimates_within_bound");
	if (tr_ring_build(&t, &sh)) {
		kp_end();
		return;
	}
	kp_set_sample(1);
	kp_ring_load(&t.ring);
	kp_set_place(0, PE_P);
	kp_x_inexact();
	for (i = 0; i < PE_KEYS; i++) {
		struct pkt p;

		kp_make_key(key, 16, 20000 + (unsigned)i);
		o = ks_ring_lookup(&t.ring, key, 16);
		if (o < PE_SHARD)
			truth[o]++;
		n = (size_t)snprintf(pay, sizeof(pay), "get %s\r\n", key);
		kp_udp4(&p, pay, n);
		kp_send_mc(&p);
	}
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), PE_KEYS);
	CHECK_EQ(kp_pkt(KS_PKT_RING_HIT), PE_KEYS / PE_P);
	CHECK_EQ(kp_shards_read(got, PE_SHARD), 0);
	for (o = 0; o < PE_SHARD; o++) {
		est[o] = (double)got[o].reads;
		/* the control: one a placement, as if the weight were 1 */
		ctl[o] = est[o] / PE_P;
	}
	miss = pe_misses(est, truth, &sum_off, &worst);
	CHECK(!miss && !sum_off,
	      "%d shards off their bound (worst %.2f of it), sum off: %d", miss,
	      worst, sum_off);
	cmiss = pe_misses(ctl, truth, &csum_off, &cworst);
	CHECK(cmiss == PE_SHARD && csum_off,
	      "control: the counts one a placement missed on %d shards only (worst %.2f of the bound), sum off: %d",
	      cmiss, cworst, csum_off);
	printf("# place estimate: %d keys on %d shards at 1 in %d, worst shard %.2f of its bound; the control (1 a placement) %.2f of it\n",
	       PE_KEYS, PE_SHARD, PE_P, worst, cworst);
	kp_end();
	kp_ring_load(NULL);
	tr_ring_free(&t);
}

void t_place_group(void)
{
	t_place_exact();
	t_place_epoch();
	t_place_unit();
	t_place_estimate();
}
