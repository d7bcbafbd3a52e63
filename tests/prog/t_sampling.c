// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_sampling.c - 1 in N sampling (per-CPU countdown, so exact over a run
 * on one CPU), the two sketch epochs, conservative update, and the
 * candidate table (bucket, count, seq, eviction of a lighter key).
 */
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include "kp.h"
#include "groups.h"

static char buf[PKT_MAX];

/* "get <key> <key> ..." with n copies of key, or n distinct keys. */
static size_t get_line(char *out, int n, const char *same, unsigned int seed)
{
	size_t len = 3;
	int i;

	memcpy(out, "get", 3);
	for (i = 0; i < n; i++) {
		char k[16];

		if (same)
			snprintf(k, sizeof(k), "%s", same);
		else
			kp_make_key(k, 8, seed + (unsigned int)i);
		len += (size_t)sprintf(out + len, " %s", k);
	}
	memcpy(out + len, "\r\n", 2);
	return len + 2;
}

static void t_sample_n(void)
{
	struct ks_cand c;
	struct pkt p;
	size_t n;
	int i;

	/* 40 copies of one key at 1 in 4: exactly 10 reach the sketch */
	kp_begin("sample_n4_same_key_40_times");
	kp_set_sample(4);
	n = get_line(buf, 40, "hot", 0);
	kp_tcp4(&p, buf, n);
	kp_send_mc(&p);
	kp_x_req(KS_OP_GET, n, NULL);
	for (i = 0; i < 40; i++)
		kp_x_keyn(KS_OP_GET, "hot", 3);
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 10);
	CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, "hot", 3), 10);
	CHECK_EQ(kp_cms_query(0, KS_CLASS_WRITE, "hot", 3), 0);
	CHECK(kp_cand_find("hot", 3, &c), "'hot' not a candidate");
	CHECK_EQ(c.count, 10);
	CHECK_EQ(c.len, 3);
	kp_end();

	kp_begin("sample_n4_forty_distinct_keys");
	kp_set_sample(4);
	n = get_line(buf, 40, NULL, 500);
	kp_tcp4(&p, buf, n);
	kp_send_mc(&p);
	kp_x_req(KS_OP_GET, n, NULL);
	for (i = 0; i < 40; i++) {
		char k[16];

		kp_make_key(k, 8, 500 + (unsigned int)i);
		kp_x_keyn(KS_OP_GET, k, 8);
	}
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 10);
	kp_end();

	/* the countdown carries over from packet to packet */
	kp_begin("sample_n4_countdown_across_packets");
	kp_set_sample(4);
	for (i = 0; i < 10; i++) {
		n = get_line(buf, 3, NULL, 600 + 3 * (unsigned int)i);
		kp_tcp4(&p, buf, n);
		kp_send_mc(&p);
		kp_x_req(KS_OP_GET, n, NULL);
		kp.x.ops[KS_OP_GET].keys += 3;
		n = (size_t)sprintf(buf, "delete d%d\r\n", i);
		kp_tcp4(&p, buf, n);
		kp_send_mc(&p);
		kp_x_req(KS_OP_DELETE, n, NULL);
		kp.x.ops[KS_OP_DELETE].keys += 1;
	}
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 10);
	kp_end();

	kp_begin("sample_n7_over_700_keys");
	kp_set_sample(7);
	for (i = 0; i < 7; i++) {
		n = get_line(buf, 100, "same", 0);
		kp_tcp4(&p, buf, n);
		kp_send_mc(&p);
		kp_x_req(KS_OP_GET, n, NULL);
		kp.x.ops[KS_OP_GET].keys += 100;
	}
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 100);
	CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, "same", 4), 100);
	kp_end();

	/* 0 means 1: every key sampled, the exact model applies */
	kp_begin("sample_n0_treated_as_1");
	kp_set_sample(0);
	kp_send_tcp4("get z1 z2 z1\r\n");
	kp_x_req(KS_OP_GET, 14, "z1", "z2", "z1", NULL);
	kp_end();
}

static void t_epochs(void)
{
	struct ks_cand c;

	kp_begin("epoch_seq0_writes_epoch0_rows");
	kp_set_seq(0);
	kp_send_tcp4("get e0 e0\r\nset w0 0 0 1\r\nx\r\n");
	kp_x_req(KS_OP_GET, 11, "e0", "e0", NULL);
	kp_x_req(KS_OP_SET, 17, "w0", NULL);
	CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, "e0", 2), 2);
	CHECK_EQ(kp_cms_query(1, KS_CLASS_READ, "e0", 2), 0);
	CHECK_EQ(kp_cms_query(0, KS_CLASS_WRITE, "w0", 2), 1);
	kp_end();

	kp_begin("epoch_seq1_writes_epoch1_rows");
	kp_set_seq(1);
	kp_send_tcp4("get e1 e1\r\nset w1 0 0 1\r\nx\r\n");
	kp_x_req(KS_OP_GET, 11, "e1", "e1", NULL);
	kp_x_req(KS_OP_SET, 17, "w1", NULL);
	CHECK_EQ(kp_cms_query(1, KS_CLASS_READ, "e1", 2), 2);
	CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, "e1", 2), 0);
	CHECK_EQ(kp_cms_query(1, KS_CLASS_WRITE, "w1", 2), 1);
	kp_end();

	/* seq 6: epoch 0 again; the slot records the seq itself */
	kp_begin("epoch_seq6_is_epoch0_and_slot_seq_6");
	kp_set_seq(6);
	kp_send_tcp4("get s6\r\n");
	kp_x_req(KS_OP_GET, 8, "s6", NULL);
	CHECK(kp_cand_find("s6", 2, &c), "s6 not a candidate");
	CHECK_EQ(c.seq, 6);
	kp_end();

	/* a flip between two packets: each epoch holds its own interval */
	kp_begin("epoch_flip_between_packets");
	kp_set_seq(4);
	kp_send_tcp4("get before before\r\n");
	kp_x_req(KS_OP_GET, 19, "before", "before", NULL);
	kp_set_seq(5);
	kp_send_tcp4("get after before\r\n");
	kp_x_req(KS_OP_GET, 18, "after", "before", NULL);
	CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, "before", 6), 2);
	CHECK_EQ(kp_cms_query(1, KS_CLASS_READ, "before", 6), 1);
	CHECK_EQ(kp_cms_query(1, KS_CLASS_READ, "after", 5), 1);
	/* the candidate's count is its estimate in the new interval */
	CHECK(kp_cand_find("before", 6, &c), "before not a candidate");
	CHECK_EQ(c.count, 1);
	CHECK_EQ(c.seq, 5);
	kp_end();
}

/* Five keys whose hashes share a candidate bucket. */
static int same_bucket_keys(char keys[5][16])
{
	unsigned int seed, b0 = 0;
	int n = 0;

	for (seed = 0; seed < 200000 && n < 5; seed++) {
		char k[16];
		__u32 b;

		snprintf(k, sizeof(k), "cb%u", seed);
		b = ks_cand_bucket(kp_hash(k, strlen(k)));
		if (n == 0)
			b0 = b;
		if (b == b0)
			snprintf(keys[n++], 16, "%s", k);
	}
	return n;
}

static void t_cands(void)
{
	char keys[5][16], req[128];
	struct ks_cand c;
	int i, present = 0;

	kp_begin("sketch_read_and_write_classes_apart");
	kp_send_tcp4(
		"get rw rw\r\nset rw 0 0 1\r\n1\r\ndelete rw\r\nincr rw 1\r\n");
	kp_x_req(KS_OP_GET, 11, "rw", "rw", NULL);
	kp_x_req(KS_OP_SET, 17, "rw", NULL);
	kp_x_req(KS_OP_DELETE, 11, "rw", NULL);
	kp_x_req(KS_OP_INCR, 11, "rw", NULL);
	CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, "rw", 2), 2);
	CHECK_EQ(kp_cms_query(0, KS_CLASS_WRITE, "rw", 2), 3);
	kp_end();

	/* A key read five times and then written once is still a heavy
	 * candidate: its slot count must not fall to the write estimate,
	 * or any key seen twice could evict it from a full bucket. */
	kp_begin("cand_count_of_read_hot_key_survives_a_write");
	kp_send_tcp4("get hr hr hr hr hr\r\n");
	kp_x_req(KS_OP_GET, 20, "hr", "hr", "hr", "hr", "hr", NULL);
	kp_send_tcp4("set hr 0 0 1\r\nx\r\n");
	kp_x_req(KS_OP_SET, 17, "hr", NULL);
	CHECK(kp_cand_find("hr", 2, &c), "hr not a candidate");
	CHECK(c.count >= 5,
	      "slot count %u after 5 reads and 1 write, want >= 5", c.count);
	kp_end();

	/* four keys fill a bucket; a fifth seen three times is heavier than
	 * each of them and must take a slot */
	kp_begin("cand_heavier_key_evicts_lighter");
	if (same_bucket_keys(keys) < 5) {
		kt_failf(__FILE__, __LINE__,
			 "no five keys with a common bucket found");
		kt_end();
		return;
	}
	for (i = 0; i < 4; i++) {
		snprintf(req, sizeof(req), "get %s\r\n", keys[i]);
		kp_send_tcp4(req);
		kp_x_req(KS_OP_GET, strlen(req), keys[i], NULL);
	}
	snprintf(req, sizeof(req), "get %s %s %s\r\n", keys[4], keys[4],
		 keys[4]);
	kp_send_tcp4(req);
	kp_x_req(KS_OP_GET, strlen(req), keys[4], keys[4], keys[4], NULL);
	CHECK(kp_cand_find(keys[4], strlen(keys[4]), &c),
	      "heavy key %s not in the candidate table", keys[4]);
	CHECK_EQ(c.count, 3);
	for (i = 0; i < 4; i++)
		present += kp_cand_find(keys[i], strlen(keys[i]), &c);
	CHECK_EQ(present, 3);
	CHECK_EQ(kp_pkt(KS_PKT_CAND_EVICT), 1);
	kp_end();
}

/* 40 copies of "hot" in one get: how many of them the rate samples. */
static void send_hot40(void)
{
	struct pkt p;
	size_t n = get_line(buf, 40, "hot", 0);
	int i;

	kp_tcp4(&p, buf, n);
	kp_send_mc(&p);
	kp_x_req(KS_OP_GET, n, NULL);
	for (i = 0; i < 40; i++)
		kp_x_keyn(KS_OP_GET, "hot", 3);
}

/*
 * --sample auto: each CPU's rate comes from ks_rate's entry for the
 * epoch, read once per CPU per seq, so a write to the running epoch's
 * entry waits for the epoch's next turn and an epoch never mixes rates.
 */
static void t_rates(void)
{
	kp_begin("rate_per_cpu_entry_honoured");
	/* this CPU 1 in 4, every other CPU 1 in 1: this CPU's counts */
	kp_set_rate(0, 4, 1);
	send_hot40();
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 10);
	CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, "hot", 3), 10);
	kp_end();

	kp_begin("rate_other_cpus_entry_not_used_here");
	kp_set_rate(0, 1, 8);
	send_hot40();
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 40);
	kp_end();

	kp_begin("rate_zero_entry_falls_back_to_config");
	kp_set_rate(0, 0, 8);
	kp_set_sample(4);
	send_hot40();
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 10);
	kp_end();

	kp_begin("rate_epoch_carries_its_rate");
	kp_set_rate(0, 4, 1);
	kp_set_rate(1, 2, 1);
	send_hot40(); /* seq 0: 1 in 4 */
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 10);
	/* the running epoch's entry rewritten: not before its next turn */
	kp_set_rate(0, 1, 1);
	send_hot40();
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 20);
	CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, "hot", 3), 20);
	kp_set_seq(1);        /* epoch 1: 1 in 2 */
	kp_set_rate(1, 2, 1); /* the same again: the model forgets kp_config */
	send_hot40();
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 40);
	CHECK_EQ(kp_cms_query(1, KS_CLASS_READ, "hot", 3), 20);
	CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, "hot", 3), 20);
	kp_set_seq(2); /* epoch 0's next turn: the rate written for it */
	kp_set_rate(0, 1, 1);
	send_hot40();
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 80);
	CHECK_EQ(kp_cms_query(0, KS_CLASS_READ, "hot", 3), 60);
	CHECK_EQ(kp_cms_query(1, KS_CLASS_READ, "hot", 3), 20);
	kp_end();
}

void t_sampling_group(void)
{
	t_sample_n();
	t_rates();
	t_epochs();
	t_cands();
}
