// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_fuzz_found.c - what the differential fuzzer (tests/fuzz, docs/
 * fuzzing.md) found where the datapath and memcached disagreed, kept as
 * tests so the fixes stay: a length ended by a control byte, long runs of
 * spaces, a long command word ended by a control byte, a data block whose
 * terminator is only half in view.
 */
#include <stdio.h>
#include <string.h>
#include "kp.h"
#include "groups.h"

static void send_udp(const char *pay, size_t len)
{
	struct pkt p;

	kp_udp4(&p, pay, len);
	kp_send_mc(&p);
}

/* memcached's strtoul check: "5\x16" is no number, so the line is refused
 * and the next request is a request, not data to skip. */
static void t_length_control_end(void)
{
	kp_begin("fuzz_found_length_ended_by_control_byte");
	kp_send_tcp4("set k 0 0 5\x16\r\nget a\r\n");
	kp_x_err(KS_ERR_BAD_LENGTH);
	kp_x_req(KS_OP_GET, 7, "a", NULL);
	kp_end();
	kp_begin("fuzz_found_length_ended_by_tab");
	kp_send_tcp4("set k 0 0 1\t\r\nx\r\n");
	kp_x_req(KS_OP_SET, 17, "k", NULL);
	kp_end();
}

static void t_long_space_run(void)
{
	char pay[800];
	int n;

	kp_begin("fuzz_found_300_spaces_between_tokens");
	n = snprintf(pay, sizeof(pay), "set s%300s0 0 1\r\nx\r\nget%300ss\r\n",
		     "", "");
	kp_send_tcp4(pay);
	kp_x_req(KS_OP_SET, 315, "s", NULL);
	kp_x_req(KS_OP_GET, n - 315, "s", NULL);
	kp_end();
}

static void t_long_word_control_end(void)
{
	kp_begin("fuzz_found_long_word_control_end_tcp");
	kp_send_tcp4("flush_all\x01\r\nget b\r\n");
	kp_x_err(KS_ERR_MIDSTREAM);
	kp_end();
	kp_begin("fuzz_found_long_word_control_end_udp");
	send_udp("flush_all\x01\r\n", 12);
	kp_x_err(KS_ERR_UNKNOWN_CMD);
	kp_end();
	kp_begin("fuzz_found_long_word_space_end");
	kp_send_tcp4("flush_all 0\r\n");
	kp_x_req(KS_OP_OTHER, 13, NULL);
	kp_end();
}

static void t_half_visible_tail(void)
{
	kp_begin("fuzz_found_half_visible_data_end");
	kp_send_tcp4("set k 0 0 5\r\nabc\r\ng");
	kp_x_err(KS_ERR_BAD_LENGTH);
	kp_end();
	/* the block's "\r" is here, its "\n" would come next: the key is
	 * taken, the set waits for the block's end, which never comes */
	kp_begin("fuzz_found_half_visible_data_end_good");
	kp_send_tcp4("set k 0 0 5\r\nabc\r\n\r");
	kp_x_sampled_only(KS_OP_SET, "k", 1);
	kp_x_err(KS_ERR_TRUNC_REQ);
	kp_end();
}

void t_fuzz_found_group(void)
{
	t_length_control_end();
	t_long_space_run();
	t_long_word_control_end();
	t_half_visible_tail();
}
