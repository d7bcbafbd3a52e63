/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * batch_proto.h - the meta-protocol text of keysteer_set_many (batch.c,
 * docs/client.md "Batches"), without I/O: the request lines of a
 * pipeline's commands, the reply lines read back, and the step of one
 * key's invalidation on one replica. Pure code.
 *
 * Every command carries "q" (memcached answers only what is not a plain
 * success) and "O<n>", n the item's index in the batch, so that an answer
 * names its item; a pipeline ends with "mn", whose "MN" says every command
 * before it was answered. Errors (SERVER_ERROR, CLIENT_ERROR) carry no
 * opaque: they name no item.
 */
#ifndef KSC_BATCH_PROTO_H
#define KSC_BATCH_PROTO_H

#include <stddef.h>
#include <linux/types.h>

/* one request line: "ms " + 250-byte key + numbers */
#define KSC_BATCH_LINE_MAX 320

enum ksc_batch_cmd {
	KSC_BC_SET,  /* ms KEY LEN T<ttl> F<flags> q O<n>, then the value */
	KSC_BC_MARK, /* md KEY I T<ttl> q O<n>: stale mark, CAS bumped */
	KSC_BC_TOMB, /* ms KEY 0 ME T<ttl> F<tomb> q O<n>: add a tombstone */
};

/* The request line of cmd for item n into buf (KSC_BATCH_LINE_MAX), its
 * length; a SET's value and "\r\n" follow it, a TOMB's empty value
 * ("\r\n") is part of the line. */
size_t ksc_batch_line(char *buf, enum ksc_batch_cmd cmd, const void *key,
		      size_t klen, size_t vlen, __u32 flags, long ttl,
		      unsigned n);

enum ksc_batch_code {
	KSC_BR_MN,    /* the end of the pipeline */
	KSC_BR_HD,    /* done (not sent with q; taken all the same) */
	KSC_BR_NF,    /* md: no such item */
	KSC_BR_NS,    /* ms ME: an item is there */
	KSC_BR_EX,    /* a CAS mismatch (no command here sends one) */
	KSC_BR_ERROR, /* SERVER_ERROR, CLIENT_ERROR, ERROR: no opaque */
	KSC_BR_BAD,   /* a line the protocol does not have */
};

struct ksc_batch_reply {
	enum ksc_batch_code code;
	long opaque; /* O<n>: n; -1 when the line has none */
};

void ksc_batch_reply_parse(const char *line, struct ksc_batch_reply *r);

/*
 * One key on one replica (docs/client.md, "Invalidate"): MARK first; an
 * answer moves it on. MARK: silence or HD is done, NF (nothing there) goes
 * to TOMB. TOMB: silence or HD is done, NS (an item was added meanwhile)
 * goes back to MARK. Anything else fails. KSC_INV_ROUNDS bounds the
 * MARK/TOMB cycles, as ks_mc_invalidate's loop does.
 */
enum ksc_inv_state {
	KSC_INV_MARK,
	KSC_INV_TOMB,
	KSC_INV_DONE,
	KSC_INV_FAIL,
};
#define KSC_INV_ROUNDS 3
enum ksc_inv_state ksc_inv_step(enum ksc_inv_state s, int answered,
				enum ksc_batch_code code);

#endif
