// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_pipeline.c - several requests in one segment, data blocks skipped by
 * their length (never by looking for a line), the largest requests the
 * datapath promises: 64- and 200-key multi-gets and 250-byte keys.
 */
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include "kp.h"
#include "groups.h"

static char big[PKT_MAX];

static void t_mixed(void)
{
	kp_begin("pipe_get_set_get");
	kp_send_tcp4("get a\r\nset b 0 0 3\r\nxyz\r\nget c\r\n");
	kp_x_req(KS_OP_GET, 7, "a", NULL);
	kp_x_req(KS_OP_SET, 13 + 5, "b", NULL);
	kp_x_req(KS_OP_GET, 7, "c", NULL);
	kp_end();

	/* lines ending in "\n" alone; the data block keeps its "\r\n" */
	kp_begin("pipe_lf_only_lines");
	kp_send_tcp4("get a\nset b 0 0 3\nxyz\r\nget c d\n");
	kp_x_req(KS_OP_GET, 6, "a", NULL);
	kp_x_req(KS_OP_SET, 12 + 5, "b", NULL);
	kp_x_req(KS_OP_GET, 8, "c", "d", NULL);
	kp_end();

	/* A value holding "\r\nget zz" must be skipped by its length. */
	kp_begin("pipe_value_containing_a_command");
	kp_send_tcp4("set k 0 0 10\r\nab\r\nget zz\r\nget c\r\n");
	kp_x_req(KS_OP_SET, 14 + 12, "k", NULL);
	kp_x_req(KS_OP_GET, 7, "c", NULL);
	kp_end();

	kp_begin("pipe_every_op_in_one_segment");
	kp_send_tcp4("get g1 g2\r\ngets g3\r\ngat 1 g4\r\ngats 2 g5\r\n"
		     "mg g6 v\r\nset s1 0 0 1\r\n1\r\nadd s2 0 0 1\r\n2\r\n"
		     "replace s3 0 0 1\r\n3\r\nappend s4 0 0 1\r\n4\r\n"
		     "prepend s5 0 0 1\r\n5\r\ncas s6 0 0 1 9\r\n6\r\n"
		     "delete d1\r\nincr i1 1\r\ndecr i2 1\r\ntouch t1 9\r\n"
		     "ms m1 1\r\n7\r\nmd m2\r\nma m3\r\nmn\r\nversion\r\n");
	kp_x_req(KS_OP_GET, 11, "g1", "g2", NULL);
	kp_x_req(KS_OP_GETS, 9, "g3", NULL);
	kp_x_req(KS_OP_GAT, 10, "g4", NULL);
	kp_x_req(KS_OP_GATS, 11, "g5", NULL);
	kp_x_req(KS_OP_MG, 9, "g6", NULL);
	kp_x_req(KS_OP_SET, 14 + 3, "s1", NULL);
	kp_x_req(KS_OP_ADD, 14 + 3, "s2", NULL);
	kp_x_req(KS_OP_REPLACE, 18 + 3, "s3", NULL);
	kp_x_req(KS_OP_APPEND, 17 + 3, "s4", NULL);
	kp_x_req(KS_OP_PREPEND, 18 + 3, "s5", NULL);
	kp_x_req(KS_OP_CAS, 16 + 3, "s6", NULL);
	kp_x_req(KS_OP_DELETE, 11, "d1", NULL);
	kp_x_req(KS_OP_INCR, 11, "i1", NULL);
	kp_x_req(KS_OP_DECR, 11, "i2", NULL);
	kp_x_req(KS_OP_TOUCH, 12, "t1", NULL);
	kp_x_req(KS_OP_MS, 9 + 3, "m1", NULL);
	kp_x_req(KS_OP_MD, 7, "m2", NULL);
	kp_x_req(KS_OP_MA, 7, "m3", NULL);
	kp_x_req(KS_OP_MN, 4, NULL);
	kp_x_req(KS_OP_OTHER, 9, NULL);
	kp_end();

	kp_begin("pipe_udp_two_requests");
	{
		static const char req[] = "get u1 u2\r\ndelete u3\r\n";
		struct pkt p;

		kp_udp4(&p, req, strlen(req));
		kp_send_mc(&p);
		kp_x_req(KS_OP_GET, 11, "u1", "u2", NULL);
		kp_x_req(KS_OP_DELETE, 11, "u3", NULL);
	}
	kp_end();
}

/* "get k0 k1 ... k<n-1>\r\n" with keys of klen bytes. */
static size_t multiget(char *out, int n, size_t klen, unsigned int seed)
{
	char key[KS_KEY_BUF];
	size_t len = 3;
	int i;

	memcpy(out, "get", 3);
	for (i = 0; i < n; i++) {
		kp_make_key(key, klen, seed + (unsigned int)i);
		out[len++] = ' ';
		memcpy(out + len, key, klen);
		len += klen;
	}
	memcpy(out + len, "\r\n", 2);
	return len + 2;
}

static void expect_multiget(int n, size_t klen, unsigned int seed, size_t bytes)
{
	char key[KS_KEY_BUF];
	int i;

	kp_x_req(KS_OP_GET, bytes, NULL);
	for (i = 0; i < n; i++) {
		kp_make_key(key, klen, seed + (unsigned int)i);
		kp_x_keyn(KS_OP_GET, key, klen);
	}
}

static void t_big(void)
{
	struct pkt p;
	size_t n;
	char k250[251];
	int i;

	kp_begin("pipe_multiget_64_keys");
	n = multiget(big, 64, 12, 1000);
	kp_tcp4(&p, big, n);
	kp_send_mc(&p);
	expect_multiget(64, 12, 1000, n);
	kp_end();

	kp_begin("pipe_multiget_200_keys_at_limit");
	n = multiget(big, KS_MAX_KEYS_PER_REQ, 6, 2000);
	kp_tcp4(&p, big, n);
	kp_send_mc(&p);
	expect_multiget(KS_MAX_KEYS_PER_REQ, 6, 2000, n);
	kp_end();

	kp_begin("pipe_get_250_byte_key");
	n = multiget(big, 1, 250, 3000);
	kp_tcp4(&p, big, n);
	kp_send_mc(&p);
	expect_multiget(1, 250, 3000, n);
	kp_end();

	kp_begin("pipe_multiget_four_250_byte_keys");
	n = multiget(big, 4, 250, 3100);
	kp_tcp6(&p, big, n);
	kp_send_mc(&p);
	expect_multiget(4, 250, 3100, n);
	kp_end();

	kp_begin("pipe_set_250_byte_key");
	kp_make_key(k250, 250, 3200);
	n = (size_t)snprintf(big, sizeof(big), "set %s 0 0 3\r\nabc\r\nmn\r\n",
			     k250);
	kp_tcp4(&p, big, n);
	kp_send_mc(&p);
	kp_x_req(KS_OP_SET, n - 4, NULL);
	kp_x_keyn(KS_OP_SET, k250, 250);
	kp_x_req(KS_OP_MN, 4, NULL);
	kp_end();

	/* 40 single-key requests back to back */
	kp_begin("pipe_forty_gets");
	n = 0;
	for (i = 0; i < 40; i++)
		n += (size_t)sprintf(big + n, "get key%02d\r\n", i);
	kp_tcp4(&p, big, n);
	kp_send_mc(&p);
	for (i = 0; i < 40; i++) {
		char key[8];

		sprintf(key, "key%02d", i);
		kp_x_req(KS_OP_GET, 11, key, NULL);
	}
	kp_end();
}

static void t_data(void)
{
	struct pkt p;
	size_t n;

	/* the value continues in later segments: bytes count all of it */
	kp_begin("pipe_set_value_continues_in_next_segment");
	n = (size_t)sprintf(big, "set bigv 0 0 5000\r\n");
	memset(big + n, 'v', 500);
	kp_tcp4(&p, big, n + 500);
	kp_send(&p);
	/* its key is taken at the line; the set counts once the block is
	 * through (tests/prog/t_stream.c sends the rest), and this lone
	 * segment's stream ends first: memcached stores nothing */
	kp_x_sampled_only(KS_OP_SET, "bigv", 4);
	kp_x_err(KS_ERR_TRUNC_REQ);
	kp_x_l4_dontcare();
	kp_end();

	/* a 1000-byte value inside the window, then more requests */
	kp_begin("pipe_set_1000_byte_value_then_get");
	n = (size_t)sprintf(big, "set v1k 0 0 1000\r\n");
	memset(big + n, 'v', 1000);
	n += 1000;
	n += (size_t)sprintf(big + n, "\r\nget after\r\n");
	kp_tcp4(&p, big, n);
	kp_send_mc(&p);
	kp_x_req(KS_OP_SET, 18 + 1002, "v1k", NULL);
	kp_x_req(KS_OP_GET, 11, "after", NULL);
	kp_end();
}

void t_pipeline_group(void)
{
	t_mixed();
	t_big();
	t_data();
}
