/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ref_mc.h - a plain user-space reference parser of memcached requests,
 * written from memcached's protocol (text, meta, binary) and from the limits
 * the datapath documents in bpf/keysteer.h. It shares no code with bpf/: the
 * differential fuzzer (dfuzz.c) runs every payload through both and reports
 * where they disagree.
 *
 * What it says about one payload is what the datapath should count for it:
 * requests, keys and bytes per op, every key in order (the keys a sampler
 * at sample_n 1 reports), and the one reason that stopped parsing, if any.
 */
#ifndef KS_REF_MC_H
#define KS_REF_MC_H

#include <stdbool.h>
#include <linux/types.h>
#include "keysteer.h"

#define REF_NO_REASON (-1)
#define REF_MAX_KEYS  KS_MAX_ITEMS /* no packet can name more */

struct ref_key {
	__u8 op;    /* enum ks_op */
	__u16 len;
	__u32 off;  /* where the key starts in the payload */
};

/*
 * Where the protocol and the datapath's documentation leave room to read a
 * byte either way, the reference follows the protocol, and says so when
 * that choice is what stopped the parse: the fuzzer then files a mismatch
 * under the note, so one such choice is one finding, not dozens.
 */
enum ref_note {
	REF_NOTE_NONE = 0,
	REF_NOTE_WORD_END,    /* a long keyless word ended by a control byte */
	REF_NOTE_NUMBER_END,  /* <bytes> ended by a byte memcached refuses */
	REF_NOTE_SPACE_RUN,   /* more spaces than the datapath follows */
	REF_NOTE_HALF_TAIL,   /* a data block's "\r\n" half in the packet */
	REF_NOTE_MAX,
};

extern const char *const ref_note_names[REF_NOTE_MAX];

struct ref_out {
	struct ks_op_stats ops[KS_OP_MAX];
	int reason;          /* enum ks_reason, or REF_NO_REASON */
	int note;            /* enum ref_note behind the reason, if any */
	unsigned nkeys;
	struct ref_key keys[REF_MAX_KEYS];
};

/*
 * Parses the memcached payload of one TCP segment (tcp) or one UDP
 * datagram after its 8-byte frame header (!tcp): plen bytes at pay.
 */
void ref_mc_parse(const __u8 *pay, __u32 plen, bool tcp, struct ref_out *out);

#endif
