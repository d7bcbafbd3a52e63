// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * names.c - the printable names of the datapath's enums (see names.h).
 */
#include "keysteer.h"
#include "core/names.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Designated initialisers: a renumbered enum still lands on its name. */
const char *const ks_reason_names[] = {
	[KS_ERR_NOT_MEMCACHED] = "not_memcached",
	[KS_ERR_TRUNC_ETH] = "trunc_eth",
	[KS_ERR_TRUNC_IP] = "trunc_ip",
	[KS_ERR_BAD_IP_HDR] = "bad_ip_hdr",
	[KS_ERR_TRUNC_IP6_EXT] = "trunc_ip6_ext",
	[KS_ERR_IP6_EXT_LIMIT] = "ip6_ext_limit",
	[KS_ERR_FRAGMENT] = "fragment",
	[KS_ERR_TRUNC_L4] = "trunc_l4",
	[KS_ERR_BAD_TCP_DOFF] = "bad_tcp_doff",
	[KS_ERR_UDP_FRAME] = "udp_frame",
	[KS_ERR_UDP_NOT_FIRST] = "udp_not_first",
	[KS_ERR_MIDSTREAM] = "midstream",
	[KS_ERR_UNKNOWN_CMD] = "unknown_cmd",
	[KS_ERR_TRUNC_REQ] = "trunc_req",
	[KS_ERR_BAD_LENGTH] = "bad_length",
	[KS_ERR_KEY_TOO_LONG] = "key_too_long",
	[KS_ERR_BAD_KEY] = "bad_key",
	[KS_ERR_TOO_MANY_KEYS] = "too_many_keys",
	[KS_ERR_ITEM_LIMIT] = "item_limit",
	[KS_ERR_WINDOW] = "window",
	[KS_ERR_REFUSED] = "refused",
	[KS_ERR_UDP_MULTI] = "udp_multi",
};
const size_t ks_reason_names_n = ARRAY_LEN(ks_reason_names);
_Static_assert(ARRAY_LEN(ks_reason_names) == KS_ERR_MAX,
	       "a reason without a name");

const char *const ks_op_names[] = {
	[KS_OP_GET] = "get",       [KS_OP_GETS] = "gets",
	[KS_OP_GAT] = "gat",       [KS_OP_GATS] = "gats",
	[KS_OP_MG] = "mg",         [KS_OP_SET] = "set",
	[KS_OP_ADD] = "add",       [KS_OP_REPLACE] = "replace",
	[KS_OP_APPEND] = "append", [KS_OP_PREPEND] = "prepend",
	[KS_OP_CAS] = "cas",       [KS_OP_DELETE] = "delete",
	[KS_OP_INCR] = "incr",     [KS_OP_DECR] = "decr",
	[KS_OP_TOUCH] = "touch",   [KS_OP_MS] = "ms",
	[KS_OP_MD] = "md",         [KS_OP_MA] = "ma",
	[KS_OP_ME] = "me",         [KS_OP_MN] = "mn",
	[KS_OP_OTHER] = "other",
};
const size_t ks_op_names_n = ARRAY_LEN(ks_op_names);
_Static_assert(ARRAY_LEN(ks_op_names) == KS_OP_MAX, "an op without a name");

const char *const ks_class_names[] = {
	[KS_CLASS_READ] = "read",
	[KS_CLASS_WRITE] = "write",
	[KS_CLASS_OTHER] = "other",
};
const size_t ks_class_names_n = ARRAY_LEN(ks_class_names);
_Static_assert(ARRAY_LEN(ks_class_names) == KS_CLASS_MAX,
	       "a class without a name");

const char *const ks_pkt_names[] = {
	[KS_PKT_SEEN] = "seen",
	[KS_PKT_MEMCACHED] = "memcached",
	[KS_PKT_TCP] = "tcp",
	[KS_PKT_UDP] = "udp",
	[KS_PKT_FAST_GET] = "fast_get",
	[KS_PKT_FAST_GET_BYTES] = "fast_get_bytes",
	[KS_PKT_SAMPLED] = "sampled",
	[KS_PKT_CAND_INSERT] = "cand_insert",
	[KS_PKT_CAND_EVICT] = "cand_evict",
	[KS_PKT_TRACE_DROP] = "trace_drop",
	[KS_PKT_RING_HIT] = "ring_hit",
	[KS_PKT_MISDIRECTED] = "misdirected",
	[KS_PKT_HOT_READ] = "hot_read",
	[KS_PKT_HOT_WRITE] = "hot_write",
	[KS_PKT_STEERED] = "steered",
	[KS_PKT_STEER_NO_ROUTE] = "steer_no_route",
	[KS_PKT_FLOW_NEW] = "flow_new",
	[KS_PKT_FLOW_END] = "flow_end",
	[KS_PKT_FLOW_CONT] = "flow_cont",
	[KS_PKT_FLOW_DUP] = "flow_dup",
	[KS_PKT_FLOW_OVERLAP] = "flow_overlap",
	[KS_PKT_FLOW_FILL] = "flow_fill",
	[KS_PKT_RESYNC_GAP] = "resync_gap",
	[KS_PKT_RESYNC_UNKNOWN] = "resync_unknown",
	[KS_PKT_RESYNC_CARRY] = "resync_carry",
	[KS_PKT_RESYNC_LOST] = "resync_lost",
	[KS_PKT_HOT_DISARM] = "hot_disarm",
	[KS_PKT_UDP_FRAG] = "udp_frag",
	[KS_PKT_STEER_FAMILY] = "steer_family",
	[KS_PKT_STEER_SHAPE] = "steer_shape",
	[KS_PKT_RING_UNPLACED] = "ring_unplaced",
	[KS_PKT_SLOG] = "slog",
	[KS_PKT_SLOG_FULL] = "slog_full",
};
const size_t ks_pkt_names_n = ARRAY_LEN(ks_pkt_names);
_Static_assert(ARRAY_LEN(ks_pkt_names) == KS_PKT_MAX,
	       "a packet counter without a name");

static const char *lookup(const char *const *tab, size_t n, unsigned int i)
{
	return i < n && tab[i] ? tab[i] : "?";
}

const char *ks_reason_name(unsigned int reason)
{
	return lookup(ks_reason_names, ks_reason_names_n, reason);
}

const char *ks_op_name(unsigned int op)
{
	return lookup(ks_op_names, ks_op_names_n, op);
}

const char *ks_class_name(unsigned int cls)
{
	return lookup(ks_class_names, ks_class_names_n, cls);
}

const char *ks_pkt_name(unsigned int counter)
{
	return lookup(ks_pkt_names, ks_pkt_names_n, counter);
}
