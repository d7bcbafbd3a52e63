// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Name tables: one name per enum value, in enum order, spelled as the CLI
 * contract (docs) lists them, unique and JSON-safe.
 */
#include <string.h>
#include "ktest.h"
#include "core/names.h"
#include "unit.h"

/* The lists as the agent CLI contract gives them, in enum order. */
static const char reasons_contract[] =
	"not_memcached trunc_eth trunc_ip bad_ip_hdr trunc_ip6_ext "
	"ip6_ext_limit fragment trunc_l4 bad_tcp_doff udp_frame "
	"udp_not_first midstream unknown_cmd trunc_req bad_length "
	"key_too_long bad_key too_many_keys item_limit window refused "
	"udp_multi";
static const char ops_contract[] =
	"get gets gat gats mg set add replace append prepend cas delete incr "
	"decr touch ms md ma me mn other";

static void check_table(const char *what, const char *const *tab, size_t n,
			size_t want_n, const char *contract)
{
	char joined[1024] = "";
	size_t i, j;

	CHECK(n == want_n, "%s: %zu names for %zu values", what, n, want_n);
	for (i = 0; i < n; i++) {
		const char *p;

		CHECK(tab[i] != NULL, "%s %zu has no name", what, i);
		if (!tab[i])
			continue;
		for (p = tab[i]; *p; p++)
			CHECK((*p >= 'a' && *p <= 'z') ||
				      (*p >= '0' && *p <= '9') || *p == '_',
			      "%s name '%s' has '%c'", what, tab[i], *p);
		for (j = 0; j < i; j++)
			CHECK(!tab[j] || strcmp(tab[i], tab[j]),
			      "%s name '%s' twice", what, tab[i]);
		if (contract) {
			strcat(joined, i ? " " : "");
			strcat(joined, tab[i]);
		}
	}
	if (contract)
		CHECK(!strcmp(joined, contract), "%s: '%s' differs from '%s'",
		      what, joined, contract);
}

void test_names(void)
{
	kt_begin("reason_names_cover_enum");
	check_table("reason", ks_reason_names, ks_reason_names_n, KS_ERR_MAX,
		    reasons_contract);
	CHECK(!strcmp(ks_reason_name(KS_ERR_WINDOW), "window"), "window");
	CHECK(!strcmp(ks_reason_name(KS_ERR_MAX), "?"), "out of range");
	kt_end();

	kt_begin("op_names_cover_enum");
	check_table("op", ks_op_names, ks_op_names_n, KS_OP_MAX, ops_contract);
	CHECK(!strcmp(ks_op_name(KS_OP_MG), "mg"), "mg");
	CHECK(!strcmp(ks_op_name(255), "?"), "out of range");
	kt_end();

	kt_begin("class_and_counter_names_cover_enum");
	check_table("class", ks_class_names, ks_class_names_n, KS_CLASS_MAX,
		    "read write other");
	check_table("counter", ks_pkt_names, ks_pkt_names_n, KS_PKT_MAX, NULL);
	kt_end();

	/* what every lone get bumps, the first 48 bytes of ks_pkts: the
	 * fast path's gets beside the packet's own counters */
	kt_begin("pkt_names_fast_get_beside_the_packet_counters");
	check_table("hot counter", ks_pkt_names, 6, 6,
		    "seen memcached tcp udp fast_get fast_get_bytes");
	CHECK(!strcmp(ks_pkt_name(KS_PKT_FAST_GET), "fast_get"), "fast_get");
	CHECK(!strcmp(ks_pkt_name(KS_PKT_FAST_GET_BYTES), "fast_get_bytes"),
	      "fast_get_bytes");
	kt_end();
}
