// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_client_batch.c - keysteer_set_many's protocol text
 * (user/client/batch_proto.c): the request lines, memcached 1.6.18's reply
 * lines as read back from a real server (docs/client.md, "Batches"), and
 * one key's invalidation on one replica, step by step.
 */
#include <string.h>
#include "client/batch_proto.h"
#include "net/mc_client.h"
#include "ktest.h"
#include "unit.h"

static void test_lines(void)
{
	char buf[KSC_BATCH_LINE_MAX], key[251];
	size_t n;

	kt_begin("client_batch_request_lines");
	n = ksc_batch_line(buf, KSC_BC_SET, "k:1", 3, 5, 7, 60, 12);
	CHECK(n == strlen("ms k:1 5 T60 F7 q O12\r\n") &&
		      !memcmp(buf, "ms k:1 5 T60 F7 q O12\r\n", n),
	      "set line '%.*s'", (int)n, buf);
	n = ksc_batch_line(buf, KSC_BC_MARK, "k:1", 3, 5, 7, 10, 0);
	CHECK(n == strlen("md k:1 I T10 q O0\r\n") &&
		      !memcmp(buf, "md k:1 I T10 q O0\r\n", n),
	      "mark line '%.*s'", (int)n, buf);
	n = ksc_batch_line(buf, KSC_BC_TOMB, "k:1", 3, 5, 7, 10, 3);
	snprintf(key, sizeof(key), "ms k:1 0 ME T10 F%u q O3\r\n\r\n",
		 KS_MC_TOMB_FLAGS);
	CHECK(n == strlen(key) && !memcmp(buf, key, n), "tombstone line '%.*s'",
	      (int)n, buf);
	/* the longest key with the largest numbers still fits */
	memset(key, 'a', 250);
	n = ksc_batch_line(buf, KSC_BC_SET, key, 250, KS_MC_VALUE_MAX,
			   0xffffffffu, KS_MC_TTL_MAX, 1023);
	CHECK(n > 250 && n < KSC_BATCH_LINE_MAX && buf[n - 1] == '\n',
	      "a 250-byte key's line is %zu bytes", n);
	kt_end();
}

static void test_replies(void)
{
	static const struct {
		const char *line;
		enum ksc_batch_code code;
		long opaque;
	} cases[] = {
		{ "MN", KSC_BR_MN, -1 },
		{ "NF O4", KSC_BR_NF, 4 },
		{ "NS O6", KSC_BR_NS, 6 },
		{ "EX O1023", KSC_BR_EX, 1023 },
		{ "HD O0", KSC_BR_HD, 0 },
		{ "HD c2909 O7", KSC_BR_HD, 7 },
		{ "SERVER_ERROR object too large for cache", KSC_BR_ERROR, -1 },
		{ "SERVER_ERROR out of memory storing object", KSC_BR_ERROR,
		  -1 },
		{ "CLIENT_ERROR bad command line format", KSC_BR_ERROR, -1 },
		{ "ERROR", KSC_BR_ERROR, -1 },
		{ "NFO4", KSC_BR_BAD, -1 },
		{ "VA 2 O9", KSC_BR_BAD, -1 },
		{ "", KSC_BR_BAD, -1 },
		{ "NF Ox", KSC_BR_NF, -1 },
	};
	struct ksc_batch_reply r;
	size_t i;

	kt_begin("client_batch_reply_lines");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ksc_batch_reply_parse(cases[i].line, &r);
		CHECK(r.code == cases[i].code && r.opaque == cases[i].opaque,
		      "'%s': code %d opaque %ld, want %d %ld", cases[i].line,
		      r.code, r.opaque, cases[i].code, cases[i].opaque);
	}
	kt_end();
}

static void test_inval_steps(void)
{
	enum ksc_inv_state s;

	kt_begin("client_batch_invalidation_steps");
	/* a copy there: the quiet mark is silent, done */
	CHECK_EQ(ksc_inv_step(KSC_INV_MARK, 0, KSC_BR_MN), KSC_INV_DONE);
	/* none there: a tombstone, then done */
	s = ksc_inv_step(KSC_INV_MARK, 1, KSC_BR_NF);
	CHECK_EQ(s, KSC_INV_TOMB);
	CHECK_EQ(ksc_inv_step(s, 0, KSC_BR_MN), KSC_INV_DONE);
	/* a fill's add came between: marked after all */
	CHECK_EQ(ksc_inv_step(KSC_INV_TOMB, 1, KSC_BR_NS), KSC_INV_MARK);
	/* no other answer is a success */
	CHECK_EQ(ksc_inv_step(KSC_INV_MARK, 1, KSC_BR_NS), KSC_INV_FAIL);
	CHECK_EQ(ksc_inv_step(KSC_INV_TOMB, 1, KSC_BR_NF), KSC_INV_FAIL);
	CHECK_EQ(ksc_inv_step(KSC_INV_MARK, 1, KSC_BR_EX), KSC_INV_FAIL);
	CHECK_EQ(ksc_inv_step(KSC_INV_MARK, 1, KSC_BR_ERROR), KSC_INV_FAIL);
	/* HD (not sent with q) is taken as done */
	CHECK_EQ(ksc_inv_step(KSC_INV_TOMB, 1, KSC_BR_HD), KSC_INV_DONE);
	/* final states stay */
	CHECK_EQ(ksc_inv_step(KSC_INV_DONE, 1, KSC_BR_NF), KSC_INV_DONE);
	CHECK_EQ(ksc_inv_step(KSC_INV_FAIL, 0, KSC_BR_MN), KSC_INV_FAIL);
	kt_end();
}

void test_client_batch(void)
{
	test_lines();
	test_replies();
	test_inval_steps();
}
