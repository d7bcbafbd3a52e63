// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_text.c - every text and meta command, one TCP segment each: the op,
 * keys and bytes counted, and (sample_n 1) the sketch and candidates.
 * bytes is the whole request: the line with its "\r\n", plus for storage
 * commands the data block and its "\r\n".
 */
#include <string.h>
#include <netinet/in.h>
#include "kp.h"
#include "groups.h"

/* A one-request test: the request req of op with the given keys. */
#define ONE(name, op, req, ...)                                                \
	do {                                                                   \
		kp_begin(name);                                                \
		kp_send_tcp4(req);                                             \
		kp_x_req(op, strlen(req), __VA_ARGS__);                        \
		kp_end();                                                      \
	} while (0)

static void t_reads(void)
{
	ONE("text_get_one_key", KS_OP_GET, "get foo\r\n", "foo", NULL);
	ONE("text_get_five_keys", KS_OP_GET, "get k1 k2 k3 k4 k5\r\n", "k1",
	    "k2", "k3", "k4", "k5", NULL);
	/* the same key three times: one sketch cell per row reaches 3 */
	ONE("text_get_repeated_key", KS_OP_GET, "get hot hot hot\r\n", "hot",
	    "hot", "hot", NULL);
	ONE("text_gets_three_keys", KS_OP_GETS, "gets a bb ccc\r\n", "a", "bb",
	    "ccc", NULL);
	/* gat/gats: the first argument is the exptime, keys follow */
	ONE("text_gat_keys_after_exptime", KS_OP_GAT, "gat 300 a bb\r\n", "a",
	    "bb", NULL);
	ONE("text_gats_keys_after_exptime", KS_OP_GATS, "gats 0 x y z\r\n", "x",
	    "y", "z", NULL);
	/* runs of spaces between keys, as memcached's tokenizer allows */
	ONE("text_get_extra_spaces", KS_OP_GET, "get  sp1   sp2 \r\n", "sp1",
	    "sp2", NULL);
}

/* Several one-request segments in one test: {request, op, key}. */
struct one_req {
	const char *req;
	int op;
	const char *key;
};

static void several(const char *name, const struct one_req *r, int n)
{
	int i;

	kp_begin(name);
	for (i = 0; i < n; i++) {
		kp_send_tcp4(r[i].req);
		kp_x_req(r[i].op, strlen(r[i].req), r[i].key, NULL);
	}
	kp_end();
}

static void t_writes(void)
{
	static const struct one_req set_variants[] = {
		{ "set foo 1 60 3 noreply\r\nabc\r\n", KS_OP_SET, "foo" },
		{ "set e 0 0 0\r\n\r\n", KS_OP_SET, "e" },
	};
	static const struct one_req storage[] = {
		{ "add k 0 0 2\r\nhi\r\n", KS_OP_ADD, "k" },
		{ "replace k 5 0 3\r\nnew\r\n", KS_OP_REPLACE, "k" },
		{ "append k 0 0 4\r\n-end\r\n", KS_OP_APPEND, "k" },
		{ "prepend k 0 0 6\r\nstart-\r\n", KS_OP_PREPEND, "k" },
	};
	static const struct one_req deletes[] = {
		{ "delete gone\r\n", KS_OP_DELETE, "gone" },
		{ "delete gone noreply\r\n", KS_OP_DELETE, "gone" },
	};
	static const struct one_req arith[] = {
		{ "incr counter 5\r\n", KS_OP_INCR, "counter" },
		{ "decr counter 2\r\n", KS_OP_DECR, "counter" },
	};

	ONE("text_set", KS_OP_SET, "set foo 0 0 5\r\nhello\r\n", "foo", NULL);
	several("text_set_noreply_and_empty_value", set_variants, 2);
	several("text_add_replace_append_prepend", storage, 4);
	ONE("text_cas", KS_OP_CAS, "cas k 0 0 3 123456\r\nabc\r\n", "k", NULL);
	several("text_delete_and_delete_noreply", deletes, 2);
	several("text_incr_decr", arith, 2);
	ONE("text_touch", KS_OP_TOUCH, "touch k 100\r\n", "k", NULL);
}

static void t_meta(void)
{
	static const struct one_req mgs[] = {
		{ "mg foo v t f\r\n", KS_OP_MG, "foo" },
		{ "mg bare\r\n", KS_OP_MG, "bare" },
	};

	several("meta_mg_with_and_without_flags", mgs, 2);
	ONE("meta_ms_with_data", KS_OP_MS, "ms foo 5 T60 F0\r\nhello\r\n",
	    "foo", NULL);
	ONE("meta_md", KS_OP_MD, "md foo q\r\n", "foo", NULL);
	ONE("meta_ma", KS_OP_MA, "ma cnt D5 MI\r\n", "cnt", NULL);
	ONE("meta_mn_no_key", KS_OP_MN, "mn\r\n", NULL);

	/* me: class "other", so its key is counted but never sketched */
	kp_begin("meta_me_other_class");
	kp_send_tcp4("me dbg\r\n");
	kp_x_req(KS_OP_ME, 8, "dbg", NULL);
	kp_end();

	/* ms data block skipped by its length to reach the next request */
	kp_begin("meta_ms_then_mg_pipelined");
	kp_send_tcp4("ms a 2\r\nhi\r\nmg a v\r\nmn\r\n");
	kp_x_req(KS_OP_MS, 12, "a", NULL);
	kp_x_req(KS_OP_MG, 8, "a", NULL);
	kp_x_req(KS_OP_MN, 4, NULL);
	kp_end();
}

static void t_other(void)
{
	kp_begin("text_stats_version_other_no_key");
	kp_send_tcp4("stats\r\nversion\r\nstats slabs\r\n");
	kp_x_req(KS_OP_OTHER, 7, NULL);
	kp_x_req(KS_OP_OTHER, 9, NULL);
	kp_x_req(KS_OP_OTHER, 13, NULL);
	kp_end();

	/* the rest of memcached's keyless commands are "other" too */
	kp_begin("text_flush_verbosity_quit_other");
	kp_send_tcp4(
		"flush_all\r\nflush_all 10 noreply\r\nverbosity 1\r\nquit\r\n");
	kp_x_req(KS_OP_OTHER, 11, NULL);
	kp_x_req(KS_OP_OTHER, 22, NULL);
	kp_x_req(KS_OP_OTHER, 13, NULL);
	kp_x_req(KS_OP_OTHER, 6, NULL);
	kp_end();
}

void t_text_group(void)
{
	t_reads();
	t_writes();
	t_meta();
	t_other();
}
