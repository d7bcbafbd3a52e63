// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_binary.c - the binary protocol (magic 0x80): every opcode's op, the key
 * at 24 + extras length, bytes = 24 + body length, several requests
 * pipelined in one segment, and over UDP.
 */
#include <string.h>
#include <netinet/in.h>
#include "kp.h"
#include "groups.h"

/* Binary opcodes (memcached protocol_binary.h). */
enum {
	BIN_GET = 0x00,
	BIN_SET = 0x01,
	BIN_ADD = 0x02,
	BIN_REPLACE = 0x03,
	BIN_DELETE = 0x04,
	BIN_INCR = 0x05,
	BIN_DECR = 0x06,
	BIN_QUIT = 0x07,
	BIN_FLUSH = 0x08,
	BIN_GETQ = 0x09,
	BIN_NOOP = 0x0a,
	BIN_VERSION = 0x0b,
	BIN_GETK = 0x0c,
	BIN_GETKQ = 0x0d,
	BIN_APPEND = 0x0e,
	BIN_PREPEND = 0x0f,
	BIN_STAT = 0x10,
	BIN_SETQ = 0x11,
	BIN_ADDQ = 0x12,
	BIN_REPLACEQ = 0x13,
	BIN_DELETEQ = 0x14,
	BIN_INCRQ = 0x15,
	BIN_DECRQ = 0x16,
	BIN_QUITQ = 0x17,
	BIN_FLUSHQ = 0x18,
	BIN_APPENDQ = 0x19,
	BIN_PREPENDQ = 0x1a,
	BIN_TOUCH = 0x1c,
	BIN_GAT = 0x1d,
	BIN_GATQ = 0x1e,
	BIN_UNKNOWN = 0x50,
};

/* Extras length each opcode carries in a request. */
static __u8 extlen_of(__u8 opc)
{
	switch (opc) {
	case BIN_SET:
	case BIN_SETQ:
	case BIN_ADD:
	case BIN_ADDQ:
	case BIN_REPLACE:
	case BIN_REPLACEQ:
		return 8; /* flags, exptime */
	case BIN_INCR:
	case BIN_INCRQ:
	case BIN_DECR:
	case BIN_DECRQ:
		return 20; /* delta, initial, exptime */
	case BIN_TOUCH:
	case BIN_GAT:
	case BIN_GATQ:
	case BIN_FLUSH:
	case 0x23:
	case 0x24:        /* gatk, gatkq */
		return 4; /* exptime */
	default:
		return 0;
	}
}

static int has_value(__u8 opc)
{
	return opc == BIN_SET || opc == BIN_SETQ || opc == BIN_ADD ||
	       opc == BIN_ADDQ || opc == BIN_REPLACE || opc == BIN_REPLACEQ ||
	       opc == BIN_APPEND || opc == BIN_APPENDQ || opc == BIN_PREPEND ||
	       opc == BIN_PREPENDQ;
}

/* A segment being filled with binary requests, and what they expect. */
struct seg {
	__u8 b[PKT_MAX];
	size_t len;
};

/* Appends one request; expects op with key (NULL: no key). */
static void add_req(struct seg *s, __u8 opc, int op, const char *key)
{
	static const __u8 extras[20] = { 0xde, 0xad, 0xbe, 0xef };
	static const char val[] = "value-bytes";
	size_t klen = key ? strlen(key) : 0;
	size_t n = pkt_bin_req(s->b + s->len, opc, extras, extlen_of(opc), key,
			       (__u16)klen, val,
			       has_value(opc) ? (__u32)strlen(val) : 0);

	s->len += n;
	if (key)
		kp_x_req(op, n, key, NULL);
	else
		kp_x_req(op, n, NULL);
}

static void send_seg(const struct seg *s, int udp)
{
	static struct pkt p;

	if (udp)
		kp_udp4(&p, s->b, s->len);
	else
		kp_tcp4(&p, s->b, s->len);
	kp_send_mc(&p);
}

/* One test: each (opcode, op) pair once, pipelined in one segment. */
static void bin_case(const char *name, int n, const __u8 *opc, const int *op,
		     int with_keys)
{
	static struct seg s;
	char key[16];
	int i;

	kp_begin(name);
	s.len = 0;
	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "bk%02x", opc[i]);
		add_req(&s, opc[i], op[i], with_keys ? key : NULL);
	}
	send_seg(&s, 0);
	kp_end();
}

#define CASE(name, keys, ...)                                                  \
	do {                                                                   \
		static const int _pairs[] = { __VA_ARGS__ };                   \
		__u8 _opc[16];                                                 \
		int _op[16], _i, _n = (int)(sizeof(_pairs) / sizeof(int)) / 2; \
		for (_i = 0; _i < _n; _i++) {                                  \
			_opc[_i] = (__u8)_pairs[2 * _i];                       \
			_op[_i] = _pairs[2 * _i + 1];                          \
		}                                                              \
		bin_case(name, _n, _opc, _op, keys);                           \
	} while (0)

static void t_ops(void)
{
	CASE("bin_get_getq_getk_getkq", 1, BIN_GET, KS_OP_GET, BIN_GETQ,
	     KS_OP_GET, BIN_GETK, KS_OP_GET, BIN_GETKQ, KS_OP_GET);
	CASE("bin_set_setq", 1, BIN_SET, KS_OP_SET, BIN_SETQ, KS_OP_SET);
	CASE("bin_add_replace_delete_incr_decr_append_prepend_touch", 1,
	     BIN_ADD, KS_OP_ADD, BIN_REPLACE, KS_OP_REPLACE, BIN_DELETE,
	     KS_OP_DELETE, BIN_INCR, KS_OP_INCR, BIN_DECR, KS_OP_DECR,
	     BIN_APPEND, KS_OP_APPEND, BIN_PREPEND, KS_OP_PREPEND, BIN_TOUCH,
	     KS_OP_TOUCH);
	/* gatk and gatkq (0x23, 0x24) are gat variants too */
	CASE("bin_gat_gatq_gatk_gatkq", 1, BIN_GAT, KS_OP_GAT, BIN_GATQ,
	     KS_OP_GAT, 0x23, KS_OP_GAT, 0x24, KS_OP_GAT);
	CASE("bin_quiet_write_variants", 1, BIN_ADDQ, KS_OP_ADD, BIN_REPLACEQ,
	     KS_OP_REPLACE, BIN_DELETEQ, KS_OP_DELETE, BIN_INCRQ, KS_OP_INCR,
	     BIN_DECRQ, KS_OP_DECR, BIN_APPENDQ, KS_OP_APPEND, BIN_PREPENDQ,
	     KS_OP_PREPEND);
	CASE("bin_keyless_other_ops", 0, BIN_NOOP, KS_OP_OTHER, BIN_VERSION,
	     KS_OP_OTHER, BIN_STAT, KS_OP_OTHER, BIN_FLUSH, KS_OP_OTHER,
	     BIN_FLUSHQ, KS_OP_OTHER, BIN_QUITQ, KS_OP_OTHER, BIN_QUIT,
	     KS_OP_OTHER);
	CASE("bin_unknown_opcode_other", 0, BIN_UNKNOWN, KS_OP_OTHER, 0x7f,
	     KS_OP_OTHER, BIN_NOOP, KS_OP_OTHER);
}

static void t_pipelines(void)
{
	static struct seg s;
	static char k250[251];
	struct pkt p;
	size_t n;

	/* ten mixed requests, like a client's quiet multi-get plus writes */
	kp_begin("bin_pipelined_ten_requests");
	s.len = 0;
	add_req(&s, BIN_GETKQ, KS_OP_GET, "p1");
	add_req(&s, BIN_GETKQ, KS_OP_GET, "p2");
	add_req(&s, BIN_GETKQ, KS_OP_GET, "p3");
	add_req(&s, BIN_GETK, KS_OP_GET, "p4");
	add_req(&s, BIN_SET, KS_OP_SET, "p5");
	add_req(&s, BIN_INCR, KS_OP_INCR, "p6");
	add_req(&s, BIN_DELETE, KS_OP_DELETE, "p1");
	add_req(&s, BIN_TOUCH, KS_OP_TOUCH, "p2");
	add_req(&s, BIN_GAT, KS_OP_GAT, "p3");
	add_req(&s, BIN_NOOP, KS_OP_OTHER, NULL);
	send_seg(&s, 0);
	kp_end();

	kp_begin("bin_over_udp");
	s.len = 0;
	add_req(&s, BIN_GETK, KS_OP_GET, "udpbin");
	add_req(&s, BIN_SETQ, KS_OP_SET, "udpbin2");
	send_seg(&s, 1);
	kp_end();

	kp_begin("bin_get_250_byte_key");
	kp_make_key(k250, 250, 77);
	s.len = 0;
	add_req(&s, BIN_GETK, KS_OP_GET, k250);
	send_seg(&s, 0);
	kp_end();

	/* A set whose value continues in later segments: counted with the
	 * whole body length, no error. */
	kp_begin("bin_set_value_continues_in_next_segment");
	n = pkt_bin_req(s.b, BIN_SET, "\0\0\0\0\0\0\0\0", 8, "bigval", 6,
			"0123456789", 10);
	/* claim 5000 value bytes; only 10 are here */
	s.b[8] = 0;
	s.b[9] = 0;
	s.b[10] = (8 + 6 + 5000) >> 8;
	s.b[11] = (8 + 6 + 5000) & 0xff;
	kp_tcp4(&p, s.b, n);
	kp_send(&p);
	/* counted once the body is through; this stream ends first */
	kp_x_sampled_only(KS_OP_SET, "bigval", 6);
	kp_x_err(KS_ERR_TRUNC_REQ);
	kp_x_l4_dontcare();
	kp_end();
}

void t_binary_group(void)
{
	t_ops();
	t_pipelines();
}
