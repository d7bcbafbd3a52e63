/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ref_mc.h - a plain user-space reference parser of memcached requests,
 * written from memcached 1.6's behaviour (proto_text.c, proto_bin.c,
 * util.c's number rules) for text, meta and binary requests. It shares no
 * code with bpf/: the differential fuzzer (dfuzz.c) runs every payload or
 * stream through both and reports where they disagree.
 *
 * What it says about a byte stream (one UDP datagram, one lone TCP segment,
 * or a whole TCP connection) is what memcached serves of it: requests, keys
 * and bytes per op, every key in order (the keys a sampler at sample_n 1
 * reports), and each refused request counted by the enum ks_reason the
 * datapath uses for that kind of refusal.
 *
 * Where the datapath is known to read a byte otherwise than memcached, the
 * reference can also read it the datapath's way: one bit of enum ref_quirk
 * each. dfuzz compares with the quirks off; a mismatch that disappears with
 * one quirk on is a known, reported disagreement (docs/fuzzing.md), filed
 * under its name, not a new bug.
 */
#ifndef KS_REF_MC_H
#define KS_REF_MC_H

#include <stdbool.h>
#include <linux/types.h>
#include "keysteer.h"

#define REF_MAX_KEYS 8192

struct ref_key {
	__u8 op; /* enum ks_op */
	__u16 len;
	__u32 off; /* where the key starts in the input */
};

/* The datapath's known readings that differ from memcached's. */
enum ref_quirk {
	RQ_KEYLESS_ARGS, /* keyless words: arguments not checked (stats's
			  * subcommand excepted); extstore, misbehave and
			  * debugtime, which this memcached answers ERROR,
			  * taken as commands */
	RQ_NUL,          /* a NUL byte does not end the line's tokens */
	RQ_NUM_FORM,     /* numbers: digits only, at most 10 (20) of them */
	RQ_GAT_EXPTIME,  /* gat/gats: the exptime token is not checked */
	RQ_META_FLAGS,   /* meta flags not checked (count, duplicates, ...) */
	RQ_PROTO_MIX,    /* text or binary chosen per request, not per conn */
	RQ_CLOSE,        /* parsing goes on after quit / an HTTP/ line */
	RQ_BIN_SHAPE,    /* binary extras/key/body shape per opcode unchecked */
	RQ_BIN_UNKNOWN,  /* unknown binary opcode: an "other" request */
	RQ_TOO_LARGE,    /* a value over memcached's item size is counted */
	RQ_CUT_SAMPLED,  /* the keys of a request the stream (datagram) ends
			  * inside are sampled as they come: a get line's
			  * whole keys, a storage request's key at its line;
			  * traced, not counted */
	RQ_DGRAM_PAST_END, /* a datagram's storage request (or binary body)
			  * running past its end counts, no trunc_req */
	RQ_WINDOW,         /* a data block's "\r\n" outside the line's window is
			  * not checked; a line longer than a window is lost */
	RQ_EARLY_REFUSE,   /* a line the stream ends inside is refused (or not)
			  * by the tokens already in; a data block by the
			  * bytes of its "\r\n" already in */
	RQ_MAX,
};

/* The quirks the datapath has today: datagram-data-past-end-counted was
 * fixed (a datagram's storage request whose block is not in it counts
 * trunc_req), so it is kept only to replay old findings. */
#define REF_QUIRKS_NOW (((1u << RQ_MAX) - 1) & ~(1u << RQ_DGRAM_PAST_END))
extern const char *const ref_quirk_names[RQ_MAX];

struct ref_opts {
	bool tcp;        /* TCP (else one UDP datagram's payload) */
	bool synced;     /* the stream's start is known (a SYN): no guessing */
	unsigned quirks; /* 1 << enum ref_quirk */
	/* RQ_WINDOW: where the datapath's segments end (ascending, the last
	 * one the input's length); none: one segment */
	const __u32 *seg_end;
	unsigned nseg;
};

struct ref_out {
	struct ks_op_stats ops[KS_OP_MAX];
	__u64 err[KS_ERR_MAX];
	unsigned quirks_used; /* quirk bits that changed a decision */
	/* a request line (not a get's key list) long enough that the
	 * datapath's window (KS_WIN) or carry (KS_CARRY, at a segment end)
	 * cannot hold it: RQ_WINDOW then models the datapath only roughly */
	bool long_line;
	unsigned nkeys;
	bool keys_full; /* more keys than REF_MAX_KEYS */
	struct ref_key keys[REF_MAX_KEYS];
};

/*
 * Parses len bytes at b: a UDP datagram's payload (after its 8-byte frame
 * header) or the bytes of a TCP stream, which ends after them (FIN or
 * RST): a request cut by the end counts KS_ERR_TRUNC_REQ.
 */
void ref_mc_parse(const __u8 *b, __u32 len, const struct ref_opts *o,
		  struct ref_out *out);

/* The one reason counted, REF_NO_REASON, or -2 for several. */
#define REF_NO_REASON (-1)
int ref_reason(const struct ref_out *out);
/* The same for any ks_errors deltas. */
int ref_reason_of(const __u64 err[KS_ERR_MAX]);

#endif
