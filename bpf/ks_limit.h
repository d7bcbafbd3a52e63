/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_limit.h - per-key rate limits (docs/limits.md), shared by the
 * datapath (bpf/ks_limit.bpf.h) and the agent (user/core/limits.h,
 * user/dp/limit_map.h): the map layouts and the token bucket itself, one
 * definition on both sides so the unit tests run the very arithmetic the
 * datapath runs.
 *
 * The bucket is GCRA (the generic cell rate algorithm, a token bucket
 * kept as one time stamp): a request at now is allowed when the
 * theoretical arrival time tat is at most tau ahead of now, and then
 * pushes tat one interval (1/rate) on. tau = (burst - 1) intervals, so
 * `burst` requests may come at once and `rate` per second after that.
 * No division in the datapath: the agent writes interval and tau in ns.
 *
 * Include order as for keysteer.h (vmlinux.h first in BPF code).
 */
#ifndef KS_LIMIT_H
#define KS_LIMIT_H

#include "keysteer.h"

/* Keys limited at once (exact rules plus the keys prefix rules took). */
#define KS_LIMIT_SLOTS    256
#define KS_LIMIT_RATE_MAX 10000000 /* requests/s a rule may name */
/* The bucket holds a tenth of a second's worth of requests (at least
 * one): a runaway key gets rate + rate/10 in its first second, rate
 * after; a key under its limit is never refused for jitter below 100 ms. */
#define KS_LIMIT_BURST_DIV 10

/*
 * What a refused get is answered: memcached's own error line (the
 * "SERVER_ERROR <message>\r\n" every client parses, memcached's
 * proto_text.c and its proxy's "SERVER_ERROR " prefix), in one datagram
 * with the request's id, sequence 0 of 1. 32 bytes, so the UDP length
 * (8 + 8 + 32) is a whole number of 32-bit words for the checksum.
 */
#define KS_LIMIT_REPLY     "SERVER_ERROR too many requests\r\n"
#define KS_LIMIT_REPLY_LEN 32

/* ks_config.flags bits of the limits (the next free ones of
 * enum ks_config_flag; named here to keep the change in one place). */
#define KS_CFG_LIMITS     0x100 /* ks_limits has entries: look UDP gets up */
#define KS_CFG_LIMIT_DROP 0x200 /* refuse by XDP_DROP, not a reply */
/* Test-only (KEYSTEER_TEST_SWITCHES): match on the hash alone, as a
 * table that trusted its hash would; the collision test's control. */
#define KS_CFG_LIMIT_HASH_ONLY 0x400
/* Test-only: how a reply longer than its request grows the frame
 * (ks_limit_reply). GROW_HEAD: at the head at once, without trying the
 * tail (a test run's frame always has tailroom, so this is how the
 * program tests reach the head path); GROW_TAIL: at the tail only, as
 * before the head path existed (the control of test_limit_short.sh, which
 * then sees veth drop short requests' replies). */
#define KS_CFG_LIMIT_GROW_HEAD 0x800
#define KS_CFG_LIMIT_GROW_TAIL 0x1000

/*
 * ks_limits (hash, key: ks_key_hash() of the key, KS_LIMIT_SLOTS): one
 * limited key. The agent writes the whole value when it installs or
 * changes a limit (tat restarts at 0); the datapath owns tat, under the
 * lock: a runaway key's requests come on every CPU that RSS gives its
 * clients, and a per-CPU bucket would give a single-flow client
 * rate/ncpu and many flows rate x ncpu. The key bytes are compared before
 * the bucket is touched: a key whose hash equals a limited key's is not
 * that key.
 */
struct ks_limit_slot {
	struct bpf_spin_lock lock;
	__u32 id;          /* its row of ks_limit_stats */
	__u64 tat_ns;      /* theoretical arrival time (datapath's) */
	__u64 interval_ns; /* 1e9 / rate */
	__u64 tau_ns;      /* (burst - 1) * interval_ns */
	__u16 len;
	__u8 pad[6];
	__u8 key[KS_KEY_BUF];
};
_Static_assert(sizeof(struct ks_limit_slot) == 296, "ks_limit_slot layout");

/* Per-CPU counters of one limited key (ks_limit_stats, row = slot id). */
struct ks_limit_stats {
	__u64 allowed;  /* gets of the key let through */
	__u64 refused;  /* ... answered SERVER_ERROR (or dropped) */
	__u64 collided; /* gets of another key with the same hash: passed */
	__u64 tcp;      /* lone TCP gets of the key: counted, never refused */
};
_Static_assert(sizeof(struct ks_limit_stats) == 32, "ks_limit_stats layout");

/* Per-CPU counters of the limit check (ks_limit_pkts). */
enum ks_limit_pkt {
	KS_LIM_CHECKED = 0, /* UDP gets looked up in ks_limits */
	KS_LIM_REPLIED,     /* refused with a SERVER_ERROR datagram */
	KS_LIM_DROPPED,     /* refused with XDP_DROP (KS_CFG_LIMIT_DROP) */
	KS_LIM_NO_REPLY,    /* refused, no reply could be built: dropped */
	KS_LIM_OTHER,       /* UDP requests of another shape: not checked */
	KS_LIM_GREW_HEAD,   /* replied, the frame grown at its head (the
			     * tail had no room: ks_limit_reply) */
	KS_LIM_MAX,
};

struct ks_limit_pkts {
	__u64 n[KS_LIM_MAX];
	__u64 pad[8 - KS_LIM_MAX];
};
_Static_assert(sizeof(struct ks_limit_pkts) == 64, "ks_limit_pkts layout");

/*
 * ks_limit_info (array, KS_LIMIT_SLOTS, row = slot id): what the agent
 * publishes each interval for `agent report` in other processes. Only the
 * agent writes it. rate 0: a free row.
 */
struct ks_limit_info {
	__u64 hash;
	__u64 allowed;     /* UDP gets let through since the limit was set */
	__u64 refused;     /* UDP gets refused */
	__u64 collided;    /* gets of another key of the same hash */
	__u64 tcp;         /* lone TCP gets (not refused: docs/limits.md) */
	__u64 allowed_mps; /* over the last interval, milli-per-second */
	__u64 refused_mps;
	__u64 tcp_mps;
	__u32 rate;  /* the limit, requests/s; 0: free row */
	__u32 burst; /* requests the bucket holds */
	__u16 len;
	__u16 rule_len; /* of the prefix rule that took it; 0: exact */
	__u8 automatic; /* 1: the automatic cap's (agent run --limit-auto) */
	__u8 pad[3];
	__u8 key[KS_KEY_BUF];
};
_Static_assert(sizeof(struct ks_limit_info) == 336, "ks_limit_info layout");

/* The bucket's parameters for a rate (1..KS_LIMIT_RATE_MAX) per second. */
static inline __u64 ks_limit_interval_ns(__u32 rate)
{
	return rate ? 1000000000ULL / rate : 1000000000ULL;
}

static inline __u32 ks_limit_burst(__u32 rate)
{
	__u32 b = rate / KS_LIMIT_BURST_DIV;

	return b ? b : 1;
}

static inline __u64 ks_limit_tau_ns(__u32 rate)
{
	return (__u64)(ks_limit_burst(rate) - 1) * ks_limit_interval_ns(rate);
}

/* One request at now: 1 allowed (tat moved on), 0 refused (tat kept).
 * Always inline: the datapath runs it holding the slot's spin lock, where
 * no call is allowed. */
static inline __attribute__((always_inline)) int ks_limit_take(
	__u64 *tat, __u64 now, __u64 interval_ns, __u64 tau_ns)
{
	__u64 t = *tat > now ? *tat : now;

	if (t - now > tau_ns)
		return 0;
	*tat = t + interval_ns;
	return 1;
}

#endif
