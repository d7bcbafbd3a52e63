/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_scratch.bpf.h - per-CPU working memory of one packet: the payload
 * window the memcached parser reads, the sampled key, and the parse state.
 * Kernel-only; nothing here is shared with user space.
 *
 * The memcached parser runs as BPF global functions that take this struct
 * by pointer: the verifier checks each function once instead of once per
 * call site and loop iteration, which keeps the program far below the
 * 1M-instruction limit with 250-byte keys and 200-key multi-gets.
 */
#ifndef KS_SCRATCH_BPF_H
#define KS_SCRATCH_BPF_H

#include "keysteer.h"

/*
 * Reads index the window with (pos & KS_WIN_MASK) so the verifier can
 * bound them; the slack lets a word read or a 256-byte key copy start at
 * any masked position without leaving the buffer.
 */
#define KS_WIN_SLACK (KS_KEY_BUF + 8)

/* The parser's states are the stream's (enum ks_flow_mode), so a flow
 * entry saves and restores them as they are. */
#define KS_ST_COMMAND KS_FM_COMMAND
#define KS_ST_KEYS    KS_FM_KEYS
#define KS_ST_LINE    KS_FM_LINE

/* Step results of the parse loop. */
enum ks_step {
	KS_STEP_MORE = 0,
	KS_STEP_DONE,  /* the window ends at a request boundary */
	KS_STEP_CUT,   /* the unit from s->cut on needs bytes past the window */
	KS_STEP_SKIP,  /* a data block runs on to s->skip_to, past the window */
	KS_STEP_LIMIT, /* the step budget ran out at s->off: go on from there */
	KS_STEP_LOST,  /* counted as an error; where the stream is, unknown */
};

struct ks_scratch {
	/*
	 * key comes first: the MD5 block builder may form an address up to
	 * KS_MD5_MAX_BLOCKS * 64 bytes past key[0] before discarding what it
	 * read there (bpf/ks_ring.bpf.h), and the window behind it keeps
	 * that inside the struct.
	 */
	__u64 key[KS_KEY_WORDS]; /* sampled key, word aligned for the hash */
	/* a window holds at most KS_WIN bytes, cut ones first; the extra
	 * KS_CARRY lets the verifier see a load after them stay inside */
	__u8 win[KS_WIN + KS_CARRY + KS_WIN_SLACK];
	struct ks_carry ctmp; /* cut bytes on their way to ks_carry */
	__u32 md5_x[16];      /* MD5 block of the ring's key hash */
	__u32 md5_st[4];
	__u64 ring_hash; /* a sampled key waiting for ks_ring_place() */
	__u32 ring_len;
	__u32 ring_cls;
	__u32 ring_pending;
	__u8 saddr[16];
	__u16 sport;
	__u8 proto;
	__u8 pad;
	__u32 end;       /* valid bytes in win */
	__u32 off;       /* parse position in win */
	__u32 state;     /* KS_ST_* (enum ks_flow_mode) */
	__u32 op;        /* op of the multi-key request being parsed */
	__u32 req_start; /* where that request began */
	__u32 nkeys;     /* keys seen in it so far */
	__u32 acc;       /* its bytes in earlier windows or segments */
	__u32 pend;      /* a request waits for its data block to be through */
	__u32 pend_op;   /* ... its op, keys and bytes */
	__u32 pend_keys;
	__u32 pend_len;
	__u32 cut;         /* KS_STEP_CUT: first byte of the unfinished unit */
	__u32 skip_to;     /* KS_STEP_SKIP: where the next request begins */
	__u32 resync;      /* the window's start is a guess: it must begin
			  * with a request, or it is midstream */
	__u32 seg_start;   /* ks_flow_segment(): first payload byte to parse */
	__u32 seg_limit;   /* ... and the byte after the last */
	__u32 seg_save;    /* ... whether the flow's state moves on with it */
	__u32 seg_flow;    /* ... whether the segment has a flow entry */
	__u32 seg_fast;    /* ... whether it begins at a request boundary */
	__u32 seg_done;    /* ... whether it needs no parse (inside a block) */
	__u64 flow_id;     /* ks_flow_id() of the segment's connection */
	__u32 flow_bucket; /* ... and where the flow is in ks_flows */
	__u32 flow_way;
	__u32 nreq;       /* requests recognised in this packet */
	__u32 tok_end;    /* second result of ks_mc_number() */
	__u32 ntok;       /* ks_mc_tokens(): tokens before the line end */
	__u32 tok_pos[2]; /* ... where the first two begin */
	__u32 tok_len[2];
	__u32 eol;     /* ... the byte after the line's '\n' */
	__u32 key_pos; /* last key found by ks_mc_key_span() */
	__u32 key_len;
	/* copied from ks_config once per packet */
	__u32 seq;
	__u32 trace;
	__u32 ring;       /* active half of ks_ring */
	__u32 hot;        /* ks_hot has entries: look every key up */
	__u32 pkt_keys;   /* keys in this packet so far */
	__u32 steer_slot; /* 1 + ks_hot slot of a lone UDP get, or 0 */
	__u32 reply_slot; /* 1 + ks_hot slot of the packet's last hot read */
	__u64 reply_hash; /* ... its key's hash */
	__u32 reply_ok;   /* a single-key read whose reply can be paired */
	__u32 reply_end;  /* TCP: its sequence end; the client's ack */
	__u32 reply_ack;
	__u16 reply_id; /* UDP: the frame's request id */
	__u16 reply_pad;
	/* survive across packets */
	__u32 sample_n;  /* 1 in N keys: the rate in force (ks_sample_rate) */
	__u32 rate_seq;  /* ... read for this ks_config.seq */
	__u32 rate_cfg;  /* ... and this ks_config.sample_n */
	__u32 countdown; /* keys left until the next sample */
	__u32 place_p;   /* 1 in P sampled keys placed on the ring, each
			  * counted P (ks_sample_rate_load; always >= 1) */
	__u32 place_cd;  /* sampled keys left until the next placement */
	__u32 place_w;   /* what a placement adds: place_p (1 under the
			  * test-only KS_RATE_P_UNIT) */
	__u32 key_words; /* words of key[] the last sampled key used */
	__u32 misdirect_next; /* next ks_misdirect slot */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_scratch);
} ks_scratch SEC(".maps");

#endif
