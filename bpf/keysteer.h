/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * keysteer.h - the one definition of everything the datapath (bpf/) and the
 * agent (user/) share: constants, enums, map value layouts and the key hash.
 *
 * Include order: BPF code includes vmlinux.h first, user code includes
 * <linux/types.h> (pulled in below when vmlinux.h is absent). Only
 * fixed-width types, explicit padding and a size assert per struct, because
 * both compilers must lay these out byte for byte the same.
 */
#ifndef KEYSTEER_H
#define KEYSTEER_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#include <linux/bpf.h> /* struct bpf_spin_lock */
#endif

#define KS_VERSION_STR "0.1.0"

/* ---- limits: every datapath loop is bounded by one of these ---- */
#define KS_MAX_KEY_LEN 250 /* memcached's KEY_MAX_LENGTH */
#define KS_KEY_BUF     256 /* key buffer, a whole number of words */
#define KS_KEY_WORDS   (KS_KEY_BUF / 8)
#define KS_MAX_PORTS   8    /* memcached ports watched at once */
#define KS_MAX_VLAN    2    /* 802.1ad outer + 802.1Q inner */
#define KS_MAX_IP6_EXT 4    /* hop-by-hop, routing, dest-opts chain */
#define KS_WIN         2048 /* payload bytes parsed per packet */
#define KS_WIN_MASK    (KS_WIN - 1)
#define KS_MAX_ITEMS   256 /* commands + keys handled per packet */
#define KS_MAX_KEYS_PER_REQ                                                    \
	200              /* tests' largest multi-get; no datapath limit */
#define KS_MAX_DIGITS 19 /* digits of a 64-bit long, as strtol reads */
#define KS_MC_UDP_HDR 8  /* memcached UDP frame header */
#define KS_BIN_HDR    24 /* binary protocol request header */

/* ---- count-min sketch: per CPU, per epoch, per class, per row ---- */
#define KS_CMS_DEPTH 4
#define KS_CMS_WIDTH 16384
#define KS_CMS_MASK  (KS_CMS_WIDTH - 1)
/* A row is stored as KS_CMS_SEGS map entries of KS_CMS_SEG columns: one
 * entry of 16 KiB stays under the per-CPU value cap (32 KiB) whatever the
 * width, and a packet still looks up one entry a row. */
#define KS_CMS_SEG  4096
#define KS_CMS_SEGS (KS_CMS_WIDTH / KS_CMS_SEG)
_Static_assert(KS_CMS_WIDTH % KS_CMS_SEG == 0 &&
		       (KS_CMS_WIDTH & (KS_CMS_WIDTH - 1)) == 0,
	       "a row is whole segments, and a power of two wide");
_Static_assert(KS_CMS_DEPTH * 16 <= 64 && KS_CMS_WIDTH <= 65536,
	       "ks_cms_col takes 16 bits of the hash a row");
#define KS_EPOCHS      2
#define KS_CMS_CLASSES 2 /* read and write; "other" keys are not sketched */
#define KS_CMS_ROWS    (KS_EPOCHS * KS_CMS_CLASSES * KS_CMS_DEPTH)
#define KS_CMS_ENTRIES (KS_CMS_ROWS * KS_CMS_SEGS)

/* ---- candidate table: per CPU, KS_CAND_WAYS-way set associative ---- */
#define KS_CAND_WAYS    4
#define KS_CAND_BUCKETS 256
#define KS_CAND_SLOTS   (KS_CAND_WAYS * KS_CAND_BUCKETS)

/*
 * ---- sample log (issue 27): sampled keys the agent folds ----
 * Each CPU appends its sampled keys of up to KS_SLOG_KEY bytes to a ring
 * of its own (map ks_slog, entry cpu * KS_SLOG_RECS + (head &
 * KS_SLOG_MASK), head and tail in ks_slog_pos[cpu]); the agent drains the
 * records into a sketch and candidate table in user space. A sampled key
 * then costs the datapath one record's stores instead of the sketch's four
 * rows and a candidate bucket. A full log, or a longer key, takes the
 * in-kernel sketch as before, so no sample is lost.
 */
#define KS_SLOG_RECS 4096 /* per CPU: 256 KiB, 15 ms at 262,144 keys/s */
#define KS_SLOG_MASK (KS_SLOG_RECS - 1)
#define KS_SLOG_KEY  48 /* key bytes a record holds */
_Static_assert((KS_SLOG_RECS & KS_SLOG_MASK) == 0, "a power of two");

struct ks_slog_rec {
	__u64 hash; /* ks_key_hash() of the key */
	__u16 len;  /* key length, 1..KS_SLOG_KEY */
	__u8 cls;   /* KS_CLASS_READ or KS_CLASS_WRITE */
	__u8 pad;
	__u16 seq; /* low 16 bits of ks_config.seq when sampled */
	__u16 n;   /* the 1 in N in force on the CPU then */
	__u64 key[KS_SLOG_KEY / 8]; /* zero past len */
};
_Static_assert(sizeof(struct ks_slog_rec) == 64, "ks_slog_rec layout");

/* One CPU's log position: head is the datapath's (records written), tail
 * the agent's (records folded); each on a cache line of its own. */
struct ks_slog_pos {
	__u64 head;
	__u64 pad0[7];
	__u64 tail;
	__u64 pad1[7];
};
_Static_assert(sizeof(struct ks_slog_pos) == 128, "ks_slog_pos layout");

/* ---- agent-published report ---- */
#define KS_REPORT_TOP     64
#define KS_REPORT_VERSION 1
#define KS_REPORT_CPUS    256 /* CPUs whose sample rate the report lists */

/* Request classes. */
enum ks_class {
	KS_CLASS_READ = 0,
	KS_CLASS_WRITE = 1,
	KS_CLASS_OTHER = 2,
	KS_CLASS_MAX,
};

/*
 * Operations, protocol-agnostic: a binary GetK and a text "get" are both
 * KS_OP_GET. Meta commands keep their own ops because their flags change
 * what they do.
 */
enum ks_op {
	KS_OP_GET = 0,
	KS_OP_GETS,
	KS_OP_GAT,
	KS_OP_GATS,
	KS_OP_MG,
	KS_OP_SET, /* reads above, writes from here */
	KS_OP_ADD,
	KS_OP_REPLACE,
	KS_OP_APPEND,
	KS_OP_PREPEND,
	KS_OP_CAS,
	KS_OP_DELETE,
	KS_OP_INCR,
	KS_OP_DECR,
	KS_OP_TOUCH,
	KS_OP_MS,
	KS_OP_MD,
	KS_OP_MA,
	KS_OP_ME, /* others from here */
	KS_OP_MN,
	KS_OP_OTHER, /* stats, version, flush_all, quit, noop, sasl, ... */
	KS_OP_MAX,
};

static inline __u32 ks_op_class(__u32 op)
{
	if (op <= KS_OP_MG)
		return KS_CLASS_READ;
	if (op <= KS_OP_MA)
		return KS_CLASS_WRITE;
	return KS_CLASS_OTHER;
}

/*
 * Why an input was not (fully) parsed. Counted per CPU, one u64 each,
 * in map ks_errors. The packet is always passed untouched.
 */
enum ks_reason {
	KS_ERR_NOT_MEMCACHED =
		0,            /* not IP, not TCP/UDP, or not a watched port */
	KS_ERR_TRUNC_ETH,     /* shorter than its Ethernet/VLAN headers */
	KS_ERR_TRUNC_IP,      /* shorter than its IPv4/IPv6 header */
	KS_ERR_BAD_IP_HDR,    /* IPv4 ihl < 5 or a length that lies */
	KS_ERR_TRUNC_IP6_EXT, /* IPv6 extension header cut short */
	KS_ERR_IP6_EXT_LIMIT, /* more than KS_MAX_IP6_EXT extension headers */
	KS_ERR_FRAGMENT,      /* IPv4/IPv6 fragment (first ones too) */
	KS_ERR_TRUNC_L4,      /* shorter than its TCP/UDP header */
	KS_ERR_BAD_TCP_DOFF,  /* TCP data offset < 5 or past the packet */
	KS_ERR_UDP_FRAME,     /* UDP payload shorter than the 8-byte frame */
	KS_ERR_UDP_NOT_FIRST, /* retired: never counted since streams (see
				   * KS_ERR_UDP_MULTI); kept for report v1 */
	KS_ERR_MIDSTREAM,     /* TCP segment does not begin with a request */
	KS_ERR_UNKNOWN_CMD,   /* a command keysteer does not know */
	KS_ERR_TRUNC_REQ,     /* request line or binary header cut short */
	KS_ERR_BAD_LENGTH,    /* a length field that is not a number or lies */
	KS_ERR_KEY_TOO_LONG,  /* key longer than 250 bytes */
	KS_ERR_BAD_KEY,       /* missing/empty key or control byte in it */
	KS_ERR_TOO_MANY_KEYS, /* retired: every key of a get counts now;
				   * kept for report v1 */
	KS_ERR_ITEM_LIMIT,    /* more than KS_MAX_ITEMS commands+keys */
	KS_ERR_WINDOW,        /* retired: payloads are parsed to their end;
				   * kept for report v1 */
	KS_ERR_REFUSED,       /* a request memcached refuses (CLIENT_ERROR,
				   * ERROR): counted here, not as its op */
	KS_ERR_UDP_MULTI,     /* UDP frame of a multi-datagram request,
				   * which memcached does not serve */
	KS_ERR_MAX,
};

/* Packet-level counters (map ks_pkts: struct ks_pkt_counters, per CPU). */
enum ks_pkt_counter {
	KS_PKT_SEEN = 0,  /* every packet the program ran on */
	KS_PKT_MEMCACHED, /* to a watched port with a payload */
	KS_PKT_TCP,
	KS_PKT_UDP,
	/* Lone gets the fast path counted (bpf/ks_fastpath.bpf.h): requests,
	 * each of one key, and their bytes. Here, not in ks_ops, so a lone
	 * get needs no second map lookup and no line of its own; the agent
	 * adds them to KS_OP_GET (ks_ops_fold_fast). Right after SEEN..UDP:
	 * a per-CPU value is only 8-byte aligned, so the six every lone get
	 * bumps are kept together at the start (one line, or two at worst). */
	KS_PKT_FAST_GET,
	KS_PKT_FAST_GET_BYTES,
	KS_PKT_SAMPLED,        /* keys sampled into the sketch */
	KS_PKT_CAND_INSERT,    /* new key taken into the candidate table */
	KS_PKT_CAND_EVICT,     /* ... by evicting a lighter one */
	KS_PKT_TRACE_DROP,     /* trace events lost to a full ring buffer */
	KS_PKT_RING_HIT,       /* sampled keys placed on the ring (1 in P) */
	KS_PKT_MISDIRECTED,    /* ... whose owner is not this host's shard */
	KS_PKT_HOT_READ,       /* reads of a key in ks_hot */
	KS_PKT_HOT_WRITE,      /* writes of a key in ks_hot */
	KS_PKT_STEERED,        /* UDP gets rewritten towards an L1 replica */
	KS_PKT_STEER_NO_ROUTE, /* ... kept at the owner: no route/neighbour,
				* or a VLAN this host has no interface on */
	/* TCP streams (bpf/ks_flow.bpf.h): where each segment stood */
	KS_PKT_FLOW_NEW,     /* flows opened by a SYN */
	KS_PKT_FLOW_END,     /* flows released by FIN or RST */
	KS_PKT_FLOW_CONT,    /* segments that continued a cut request */
	KS_PKT_FLOW_DUP,     /* segments wholly retransmitted: skipped */
	KS_PKT_FLOW_OVERLAP, /* segments partly retransmitted: overlap skipped */
	KS_PKT_FLOW_FILL,    /* late segments that began a gap's hole: parsed
				* from a guessed boundary, counted once */
	KS_PKT_RESYNC_GAP,   /* resync: bytes missing before the segment */
	KS_PKT_RESYNC_UNKNOWN, /* resync: flow not seen from its SYN, or evicted */
	KS_PKT_RESYNC_CARRY,  /* resync: a cut request too long to carry */
	KS_PKT_RESYNC_LOST,   /* resync: parse state lost (item limit, bad
				* length) */
	KS_PKT_HOT_DISARM,    /* bytes went by unparsed (a gap, a segment passed
				* over): every armed hot key made dirty */
	KS_PKT_UDP_FRAG,      /* first IP fragments of a UDP request, parsed */
	KS_PKT_STEER_FAMILY,  /* gets of armed keys kept at the owner: the
			      * frame's IP family is not the replicas' */
	KS_PKT_STEER_SHAPE,   /* ... kept at the owner: a header the rewrite
			      * leaves alone (IPv4 options, IPv6 extension
			      * headers, hop limit <= 1, IPv6 UDP checksum 0) */
	KS_PKT_RING_UNPLACED, /* sampled keys the ring cannot place in the
			       * datapath (pymemcache: a byte >= 0x80, whose
			       * str characters need UTF-8 decoding) */
	/* the sample log (ks_slog; of KS_PKT_SAMPLED): keys appended as
	 * records for the agent to fold, and keys the in-kernel sketch took
	 * instead because this CPU's log was full (the agent's drain behind
	 * or stopped). A key longer than KS_SLOG_KEY, or any key while no
	 * drain runs (KS_CFG_SLOG clear), is in neither. */
	KS_PKT_SLOG,
	KS_PKT_SLOG_FULL,
	KS_PKT_MAX,
};

/* Packet counters: one per-CPU entry holds them all, so the datapath
 * does one map lookup per packet for every counter it bumps. */
struct ks_pkt_counters {
	__u64 n[KS_PKT_MAX];
};
/* the counters every lone get bumps, within the value's first 64 bytes */
_Static_assert(KS_PKT_FAST_GET_BYTES < 8, "ks_pkts hot counters");

/*
 * One CPU's rates for one epoch (map ks_rate, per CPU, entry seq & 1),
 * written by the agent before it moves seq there (user/dp/rates.c) and
 * read by the datapath once per CPU per epoch (ks_sample_rate_load), so
 * an epoch never mixes two of either. n: --sample auto's 1 in N keys
 * sampled (0: ks_config.sample_n). p: 1 in P of the sampled keys placed
 * on the ring, each adding P to its shard's counts, so ks_shards stays a
 * count of sampled keys, exact in expectation, at a placement cost per
 * CPU the agent bounds (issue 27; 0 is 1: every sampled key).
 */
struct ks_rate_entry {
	__u32 n;
	__u32 p;
};
_Static_assert(sizeof(struct ks_rate_entry) == 8, "ks_rate layout");
/*
 * Test only, or'ed into ks_rate_entry.p (the agent's --place-scaling off,
 * gated by KEYSTEER_TEST_SWITCHES=1): 1 in P is still placed, but each
 * placement adds 1, not P, so the shard counts come out P times too
 * small: the control run of test_place_rate.sh, whose per-shard check
 * against memcached's own cmd_get must then fail. Never for production.
 */
#define KS_RATE_P_UNIT 0x80000000u

/* Per-op counters (map ks_ops, per CPU). */
struct ks_op_stats {
	__u64 requests;
	__u64 keys;
	__u64 bytes; /* whole request: line plus any data block */
};
_Static_assert(sizeof(struct ks_op_stats) == 24, "ks_op_stats layout");

/*
 * Run-time configuration (map ks_config, one entry). The agent writes it;
 * the datapath reads it once per packet.
 */
struct ks_config {
	__u16 ports[KS_MAX_PORTS]; /* host order; 0 = unused slot */
	__u32 sample_n;            /* sample 1 in N keys; 0 treated as 1 */
	__u32 seq;                 /* interval number; epoch = seq & 1 */
	__u32 trace;               /* nonzero: emit sampled keys to ks_events */
	__u32 ring;                /* active half of ks_ring: 0 or 1 */
	__u32 hot;                 /* nonzero: ks_hot has entries, so every
				    * key is hashed and looked up there */
	__u32 flags;               /* enum ks_config_flag */
};

enum ks_config_flag {
	/* Parse every TCP segment as if it began a request, as keysteer
	 * did before it followed streams: the control run of the freshness
	 * tests, which must then see stale reads. Never for production. */
	KS_CFG_NO_STREAM = 1,
	/* Remember single-key reads of hot keys so that ks_tc_egress can
	 * pair the owner's replies with them (ks_reply.bpf.h): set while the
	 * egress program is attached (--owner-replies on). */
	KS_CFG_REPLIES = 2,
	/* An agent drains the sample log (ks_slog): set while its drain
	 * runs, so that no record waits in a log nobody folds. */
	KS_CFG_SLOG = 4,
};
_Static_assert(sizeof(struct ks_config) == 40, "ks_config layout");

/*
 * Per-shard load (map ks_shards, per CPU, one entry per shard of the
 * ring): sampled keys by the owner the ring gives them, so the agent
 * scales by the sample rate. A sample is cheap to place on the ring; every
 * key would cost an MD5 per key (see docs/ring.md). Under load only 1 in
 * P sampled keys is placed, and it adds P (struct ks_rate_entry): the counts
 * stay sampled keys, exact in expectation.
 */
struct ks_shard_stats {
	__u64 reads;
	__u64 writes;
	__u64 misdirected; /* owned by another shard than this host's */
	__u64 pad;
};
_Static_assert(sizeof(struct ks_shard_stats) == 32, "ks_shard_stats layout");

/* A client that sent a key to the wrong shard (map ks_misdirect, per CPU,
 * KS_MISDIRECT_SLOTS entries written round robin). */
#define KS_MISDIRECT_SLOTS 32
struct ks_misdirect {
	__u64 ts_ns;    /* 0: empty slot */
	__u8 saddr[16]; /* IPv4 as ::ffff:a.b.c.d */
	__u16 sport;
	__u8 proto;
	__u8 pad;
	__u32 owner; /* the shard the ring gives the key to */
	__u64 hash;  /* ks_key_hash() of the key */
};
_Static_assert(sizeof(struct ks_misdirect) == 40, "ks_misdirect layout");

/* Candidate slot (map ks_cands, per CPU, KS_CAND_SLOTS entries). */
struct ks_cand {
	__u64 hash;  /* ks_key_hash() of the key; 0 = empty slot */
	__u32 seq;   /* interval in which count was last raised */
	__u32 count; /* sketch estimate (sampled keys) when last seen */
	__u16 len;
	__u8 pad[6];
	__u8 key[KS_KEY_BUF];
};
_Static_assert(sizeof(struct ks_cand) == 280, "ks_cand layout");

/* Trace event (ring buffer ks_events), one per sampled key while tracing. */
struct ks_event {
	__u64 ts_ns;
	__u64 hash;
	__u8 saddr[16]; /* IPv4 as ::ffff:a.b.c.d */
	__u16 sport;    /* host order */
	__u8 op;
	__u8 cls;
	__u8 proto; /* IPPROTO_TCP or IPPROTO_UDP */
	__u8 pad;
	__u16 len;
	__u8 key[KS_KEY_BUF];
};
_Static_assert(sizeof(struct ks_event) == 296, "ks_event layout");

/*
 * What the agent publishes each interval for `agent report` in other
 * processes (map ks_report, one entry, read and written with BPF_F_LOCK so a
 * reader never sees half an update). Rates are fixed point: milli-per-second.
 */
struct ks_top_entry {
	__u64 hash;
	__u64 reads_mps;
	__u64 writes_mps;
	__u64 err_mps;   /* +/- bound on reads+writes, milli-per-second */
	__u32 share_ppm; /* share of all requests, parts per million */
	__u16 len;
	__u8 pad[2];
	__u8 key[KS_KEY_BUF];
};
_Static_assert(sizeof(struct ks_top_entry) == 296, "ks_top_entry layout");

struct ks_report {
	struct bpf_spin_lock lock;
	__u32 version; /* KS_REPORT_VERSION */
	__u32 agent_pid;
	__u32 sample_n;
	__u32 interval_ms;
	__u32 seq;
	__u32 n_top;
	__u32 xdp_mode;   /* 1 native XDP, 2 generic XDP, 3 tc ingress */
	__u32 replies;    /* 1: ks_tc_egress counts the owner's replies to
			 * hot-key reads (ks_hot_slot.hits_mps...) */
	__u64 start_ns;   /* CLOCK_REALTIME ns when the agent started */
	__u64 updated_ns; /* CLOCK_REALTIME ns of the last interval */
	__u64 elapsed_ns; /* length of the last interval */
	__u64 class_req_mps[KS_CLASS_MAX];
	__u64 class_key_mps[KS_CLASS_MAX];
	__u64 class_byte_mps[KS_CLASS_MAX];
	__u64 err_mps[KS_ERR_MAX];
	__u64 sampled_total; /* sampled keys in the last interval */
	char ifname[16];
	struct ks_top_entry top[KS_REPORT_TOP];
	/* The 1 in N each CPU sampled the last interval at (sample_n is
	 * the largest): --sample N gives every CPU N, --sample auto each
	 * its own (user/core/sample_rate.h). CPUs past KS_REPORT_CPUS are
	 * left out of cpu_n, not of sample_n. */
	__u32 sample_target; /* auto: sampled keys/s per CPU; 0: fixed */
	__u32 ncpu_n;        /* CPUs in cpu_n (and cpu_p) */
	__u32 cpu_n[KS_REPORT_CPUS];
	/* The 1 in P of its sampled keys each CPU placed on the ring the
	 * last interval, each counted P for its shard (struct ks_rate_entry;
	 * user/core/sample_rate.h ks_place_next): 1 while the CPU samples
	 * fewer keys a second than place_target. place_p is the largest. */
	__u32 place_target; /* placements/s per CPU; 0: every sampled key */
	__u32 place_p;
	__u32 cpu_p[KS_REPORT_CPUS];
};

/*
 * The 64-bit key hash that indexes the sketch and the candidate table, the
 * same function in the kernel and the agent. Eight bytes per round so a
 * 250-byte key costs 32 multiplies; bytes past len in the last word are
 * masked off, so callers need not zero-pad.
 */
#define KS_HASH_SEED 0x9e3779b97f4a7c15ULL
#define KS_HASH_MUL  0xff51afd7ed558ccdULL
#define KS_HASH_MUL2 0xc4ceb9fe1a85ec53ULL

static inline __u64 ks_hash_fmix(__u64 h)
{
	h ^= h >> 33;
	h *= KS_HASH_MUL;
	h ^= h >> 33;
	h *= KS_HASH_MUL2;
	h ^= h >> 33;
	return h;
}

/* ks_key_hash() in three steps, for a key read from elsewhere than a
 * buffer (the datapath's fast path reads it from the packet). */
static inline __u64 ks_key_hash_init(__u32 len)
{
	return KS_HASH_SEED ^ ((__u64)len * KS_HASH_MUL2);
}

/* w: the next 8 key bytes, those past the key's end zero. */
static inline __u64 ks_key_hash_word(__u64 h, __u64 w)
{
	h ^= w;
	h *= KS_HASH_MUL;
	return (h << 31) | (h >> 33);
}

static inline __u64 ks_key_hash_final(__u64 h)
{
	h = ks_hash_fmix(h);
	return h ? h : 1; /* 0 marks an empty candidate slot */
}

/* key must point to KS_KEY_BUF readable, 8-byte aligned bytes. */
static inline __u64 ks_key_hash(const __u64 *key, __u32 len)
{
	__u64 h = ks_key_hash_init(len);
	__u32 i;

	for (i = 0; i < KS_KEY_WORDS; i++) {
		__u64 w = key[i];
		__u32 rem;

		if (i * 8 >= len)
			break;
		rem = len - i * 8;
		if (rem < 8)
			w &= (1ULL << (rem * 8)) - 1;
		h = ks_key_hash_word(h, w);
	}
	return ks_key_hash_final(h);
}

/*
 * Count-min column of row r: 14 bits of the hash of its own per row (bits
 * 16r..16r+13), so two keys share a column in every row only when they
 * share 56 bits of hash. (Double hashing, (h1 + r*h2) & 4095, depended on
 * 23 bits only: at millions of keys an interval, many heavy keys had a
 * twin in every row and each showed both counts; docs/accuracy.md.)
 */
static inline __u32 ks_cms_col(__u64 hash, __u32 row)
{
	return (__u32)(hash >> (row * 16)) & KS_CMS_MASK;
}

/* Row number of (epoch, class, row), 0..KS_CMS_ROWS-1. */
static inline __u32 ks_cms_index(__u32 epoch, __u32 cls, __u32 row)
{
	return (epoch * KS_CMS_CLASSES + cls) * KS_CMS_DEPTH + row;
}

/* Entry of ks_cms holding segment seg of row number rowno. */
static inline __u32 ks_cms_entry(__u32 rowno, __u32 seg)
{
	return rowno * KS_CMS_SEGS + seg;
}

/* Bucket of a key in the candidate table. */
static inline __u32 ks_cand_bucket(__u64 hash)
{
	return (__u32)(hash >> 40) % KS_CAND_BUCKETS;
}

/*
 * ---- hot keys: reads spread over L1 replicas ----
 *
 * ks_hot (array, BPF_F_MMAPABLE, KS_HOT_SLOTS): a KS_HOT_WAYS-way set per
 * bucket of the key hash. The agent writes its fields through the mmap,
 * one field at a time in the order the datapath reads them (hash last on
 * install, expires_ns first on removal, and an RCU grace period before a
 * freed slot is reused); the datapath owns write_seq and last_write_ns.
 * Reads are steered only while armed_seq == write_seq (no write since the
 * replicas were filled) and before expires_ns (the agent is alive).
 */
#define KS_MAX_REPLICAS 16 /* L1 replicas one agent fills */
#define KS_MAX_COPIES   8  /* copies of one key, owner included */
#define KS_HOT_WAYS     4
/* At the agent's 256 hot keys a fifth key meets a full bucket (and is not
 * steered) in 6 tables of 10. 1024 buckets made that 0.007, but the agent
 * walks every slot several times an interval: +1.6 ms of CPU an interval
 * and +2.9 MiB resident (docs/steering.md), for one key in 256. */
#define KS_HOT_BUCKETS 256
#define KS_HOT_SLOTS   (KS_HOT_WAYS * KS_HOT_BUCKETS)
/* Reads of an armed key follow a schedule of copies, round robin: the
 * agent sets each copy's share in 1/KS_STEER_SCHED steps (the owner's may
 * be 0), and the datapath needs no division. */
#define KS_STEER_SCHED 64

static inline __u32 ks_hot_bucket(__u64 hash)
{
	return (__u32)(hash >> 20) % KS_HOT_BUCKETS;
}

/*
 * ks_hot_filter (array, one entry, BPF_F_MMAPABLE): a bit per bucket of
 * ks_hot that may hold a key. With the table on, a key whose bucket's bit
 * is clear is not looked up. The agent sets a bucket's bit before it
 * publishes a hash there and clears it only once the bucket is empty
 * after a grace period, so a write to a hot key always sees its bit.
 */
struct ks_hot_filter {
	__u64 bits[KS_HOT_BUCKETS / 64];
};
_Static_assert(sizeof(struct ks_hot_filter) == KS_HOT_BUCKETS / 8,
	       "ks_hot_filter layout");

static inline int ks_hot_filter_has(const struct ks_hot_filter *f, __u32 b)
{
	return (f->bits[(b / 64) % (KS_HOT_BUCKETS / 64)] >> (b % 64)) & 1;
}

/* Per-CPU counters of the owner's replies to a hot slot's reads (map
 * ks_hot_replies, KS_HOT_SLOTS; bpf/ks_reply.bpf.h). */
struct ks_hot_replies {
	__u64 hits;      /* VALUE / VA / HD, or binary status 0 */
	__u64 misses;    /* END / EN, or binary status 1 (not found) */
	__u64 unpaired;  /* a remembered read whose reply cannot be told
			  * apart: the connection pipelined, or the reply was
			  * out of step or came after KS_REPLY_MAX_AGE_NS */
	__u64 malformed; /* paired, but neither a hit nor a miss (an error
			  * line, garbage, too short): passed untouched */
};
_Static_assert(sizeof(struct ks_hot_replies) == 32, "ks_hot_replies layout");

enum ks_hot_flag {
	KS_HOTF_READ_HOT = 1,  /* reads spread over copies */
	KS_HOTF_WRITE_HOT = 2, /* the operator should salt it into sub-keys */
	KS_HOTF_PINNED = 4,    /* held hot by a pin rule */
	KS_HOTF_FILLED = 8,    /* replicas hold the value (agent's view) */
};

struct ks_hot_slot {
	__u64 hash;          /* agent: ks_key_hash of the key; 0 = free */
	__u64 expires_ns;    /* agent: CLOCK_MONOTONIC; 0 = disarmed */
	__u64 armed_seq;     /* agent: write_seq the replicas were filled at */
	__u64 write_seq;     /* datapath: +1 per write of the key (atomic) */
	__u64 last_write_ns; /* datapath: bpf_ktime_get_ns() of the last */
	__u32 ncopies;       /* agent: owner + replicas, 1..KS_MAX_COPIES */
	__u8 replica[KS_MAX_COPIES -
		     1]; /* agent: ks_replicas index of copy i+1 */
	__u8 flags;      /* enum ks_hot_flag */
	__u32 pad0;
	__u8 sched[KS_STEER_SCHED]; /* agent: copy per turn, 0 = the owner */
	/* the agent's view, for 'agent report' in other processes */
	__u64 reads_mps; /* smoothed estimate, milli-per-second */
	__u64 writes_mps;
	__u64 steered_mps; /* reads steered to replicas in the last interval */
	__u64 tcp_mps;     /* TCP reads of the key in the last interval */
	/* the owner's replies to the key's reads, paired at tc egress
	 * (struct ks_hot_replies): per second over the last interval, and
	 * in all since the key took its slot */
	__u64 hits_mps;
	__u64 misses_mps;
	__u64 unpaired_mps;
	__u64 malformed_mps;
	struct ks_hot_replies replies;
	__u32 copies;  /* the table's decision (may exceed ncopies) */
	__u32 subkeys; /* salted-counter sub-keys for a write-hot key */
	__u16 len;
	__u8 pad[6];
	__u8 key[KS_KEY_BUF];
};
_Static_assert(sizeof(struct ks_hot_slot) == 488, "ks_hot_slot layout");

/* Per-CPU counters of a hot slot (map ks_hot_stats, KS_HOT_SLOTS). */
struct ks_hot_stats {
	__u64 reads; /* read keys, any protocol */
	__u64 writes;
	__u64 steered;   /* UDP gets sent to a replica */
	__u64 tcp_reads; /* TCP reads: a connection cannot move */
	__u64 owner;     /* UDP reads left to the owner (its turn, dirty,
			  * expired, not a lone get, no route) */
	__u64 rr;        /* round robin over the copies */
};
_Static_assert(sizeof(struct ks_hot_stats) == 48, "ks_hot_stats layout");

/*
 * ---- the owner's replies to hot-key reads (bpf/ks_reply.bpf.h) ----
 *
 * A miss is visible only in the owner's reply, so ks_tc_egress, on the
 * interface the replies leave by, pairs replies with the single-key reads
 * of hot keys that ks_ingress/ks_tc_ingress remembered: UDP by the client's
 * address, port and the frame's request id (exact); TCP by connection,
 * when the reply can only be that read's (docs/steering.md "Misses at the
 * owner"). Per-CPU counters per hot slot (map ks_hot_replies).
 */

/* Reads waiting for their reply: an LRU each, so a reply that never comes
 * (a quiet-mode miss, a lost datagram) costs nothing but its entry. */
#define KS_REPLY_UDP_PEND 8192
#define KS_REPLY_TCP_PEND 16384
/* A UDP reply later than this is not taken as the answer: a client reuses
 * request ids (16 bits), and memcached answers in microseconds. */
#define KS_REPLY_MAX_AGE_NS 1000000000ULL

struct ks_reply_udp_key {
	__u8 addr[16]; /* the client: IPv4 as ::ffff:a.b.c.d */
	__u16 port;    /* the client's, host order */
	__u16 req_id;  /* the frame header's request id, as sent */
	__u32 pad;
};
_Static_assert(sizeof(struct ks_reply_udp_key) == 24, "ks_reply_udp_key");

struct ks_reply_pend {
	__u64 hash;      /* the key's ks_key_hash */
	__u64 ts_ns;     /* bpf_ktime_get_ns() of the read */
	__u32 slot;      /* its ks_hot slot */
	__u32 req_end;   /* TCP: the client's sequence after the read */
	__u32 srv_seq;   /* TCP: the client's ack then: where the reply to
			* the read begins if nothing else is unanswered */
	__u32 pipelined; /* TCP: another read came before this one's reply */
};
_Static_assert(sizeof(struct ks_reply_pend) == 32, "ks_reply_pend layout");

/*
 * An L1 replica (map ks_replicas, KS_MAX_REPLICAS entries): IPv4 or IPv6.
 * The family values are Linux's AF_INET and AF_INET6, which is what
 * bpf_fib_lookup takes. One agent's replicas are all of one family
 * (docs/steering.md says why).
 */
#define KS_AF_INET  2
#define KS_AF_INET6 10

union ks_inaddr {
	__u32 v4;    /* KS_AF_INET: network order, the rest zero */
	__u8 v6[16]; /* KS_AF_INET6 */
	__u32 w[4];  /* either, as words (the rendezvous id, compares) */
};

struct ks_replica {
	union ks_inaddr addr;
	__u16 port;  /* network order */
	__u8 family; /* KS_AF_INET or KS_AF_INET6; 0 = unused slot */
	__u8 pad[5];
	__u64 steered_mps; /* agent: reads steered here, last interval */
};
_Static_assert(sizeof(struct ks_replica) == 32, "ks_replica layout");

/*
 * A VLAN sub-interface of the attached device (map ks_vlans, filled by
 * the agent): a frame that came in with these tags on ifindex belongs to
 * the sub-interface in the value. A tagged get is steered only to a
 * replica reached through that same sub-interface, so it goes back out
 * with its tags as they came (XDP_TX). vid[1] is 0 for one tag. Each
 * sub-interface also has an entry of its own ifindex with no vids: an
 * untagged get must not be redirected into it (XDP cannot send on a
 * VLAN device, and the frame would lack the tag).
 */
#define KS_MAX_VLAN_DEVS 256
struct ks_vlan_key {
	__u32 ifindex;          /* the device the frame came in on */
	__u16 vid[KS_MAX_VLAN]; /* outer, inner: the TCI's low 12 bits */
};
_Static_assert(sizeof(struct ks_vlan_key) == 8, "ks_vlan_key layout");

/* Ring buffer ks_hot_events: a write turned an armed key dirty. */
struct ks_hot_event {
	__u64 hash;
	__u64 write_seq; /* after the write */
	__u32 slot;
	__u32 pad;
};
_Static_assert(sizeof(struct ks_hot_event) == 24, "ks_hot_event layout");

/*
 * ---- TCP streams: where each client connection stands ----
 *
 * ks_flows (array, KS_FLOW_BUCKETS entries of KS_FLOW_WAYS flows): a
 * set-associative table by a 64-bit hash of the connection's addresses and
 * ports, looked up with one array access and a few compares rather than a
 * hash-map lookup, so a flow whose segments end on request boundaries pays
 * little for being followed. A full bucket evicts its least recently used
 * way: that flow resynchronises, counted (docs/streams.md).
 */
#define KS_FLOW_WAYS 8
#define KS_FLOW_BUCKETS                                                        \
	(1 << 17) /* 1,048,576 ways in 40 MiB: at 262,144
				   * flows 1 in 7,000 finds its bucket full */
/* A request cut by a segment boundary before its key or line could be
 * read whole keeps up to this many bytes (map ks_carry, by flow id): a
 * text line with a 250-byte key, or a binary header, extras and key. */
#define KS_CARRY       512
#define KS_CARRY_FLOWS 16384 /* flows holding cut bytes at one time */

/* Where a stream stands between two segments (struct ks_flow.mode). */
enum ks_flow_mode {
	KS_FM_COMMAND = 0, /* at a request boundary */
	KS_FM_KEYS,        /* inside a get/gets/gat/gats key list */
	KS_FM_LINE,        /* discarding the rest of a refused line */
	KS_FM_SKIP,        /* inside a data block or binary body: left bytes */
	KS_FM_UNSYNC,      /* position unknown: the next segment that begins
			    * with a request resynchronises */
};

struct ks_flow {
	__u64 id;       /* ks_flow_id(); 0 = free way */
	__u32 next_seq; /* sequence number of the next byte expected */
	__u32 gap_lo;   /* [gap_lo, gap_hi): bytes a gap skipped that may */
	__u32 gap_hi;   /* still arrive (reordered): parsed, never dropped */
	__u32 left;     /* KS_FM_SKIP: bytes of the block still to come */
	__u32 acc;      /* KS_FM_KEYS: request bytes before the carried ones */
	__u32 nkeys;    /* KS_FM_KEYS: keys of the request so far */
	__u16 stamp;    /* interval of last use (low bits), for eviction */
	__u16 carry;    /* cut bytes held in ks_carry */
	__u8 mode;      /* enum ks_flow_mode */
	__u8 op;        /* KS_FM_KEYS/KS_FM_SKIP: the request's op */
	__u8 pad[2];
};
_Static_assert(sizeof(struct ks_flow) == 40, "ks_flow layout");

struct ks_flow_bucket {
	struct ks_flow way[KS_FLOW_WAYS];
};

struct ks_carry {
	__u32 len;
	__u32 pad;
	__u8 b[KS_CARRY];
};
_Static_assert(sizeof(struct ks_carry) == KS_CARRY + 8, "ks_carry layout");

/*
 * The flow id: both addresses (IPv4 mapped as ::ffff:a.b.c.d) and both
 * ports, mixed so that the bucket (high bits) and the whole id differ
 * between flows. 64 bits keep a false match between two live flows below
 * one in 10^8 at a million flows.
 */
static inline __u64 ks_flow_id(const __u64 saddr[2], const __u64 daddr[2],
			       __u32 ports)
{
	/* independent multiplies, then one mixing round: a short chain,
	 * since every TCP segment pays for it */
	__u64 h = (saddr[1] ^ KS_HASH_SEED) * KS_HASH_MUL ^
		  (daddr[1] + ports) * KS_HASH_MUL2 ^
		  (saddr[0] ^ (daddr[0] << 1)) * KS_HASH_SEED;

	h ^= h >> 32;
	h *= KS_HASH_MUL;
	h ^= h >> 29;
	return h ? h : 1;
}

static inline __u32 ks_flow_bucket(__u64 id)
{
	return (__u32)(id >> 40) % KS_FLOW_BUCKETS;
}

/* Names shared by the agent, the report and the tests. */
#define KS_PIN_ROOT "/sys/fs/bpf/keysteer"

#endif /* KEYSTEER_H */
