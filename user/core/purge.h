/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * purge.h - the pure parts of the ownership-loss purge (docs/fleet.md,
 * "Purges at a ring change"): memcached's `lru_crawler metadump` lines
 * read into keys, which keys this shard owns under a ring, whether a new
 * ring may purge at all (the moved-share gate), and the pacing of the
 * deletes. The agent's thread (agent/run_purge.c) does the I/O.
 */
#ifndef KS_PURGE_H
#define KS_PURGE_H

#include <stddef.h>
#include <linux/types.h>
#include "core/mc_key.h"
#include "core/ring.h"
#include "core/shards.h"
#include "ks_shard_report.h"

/* What one line of a metadump answer is. */
enum ks_md_line {
	KS_MD_ITEM,  /* "key=... exp=... ...": key decoded */
	KS_MD_END,   /* "END": the dump is whole */
	KS_MD_BUSY,  /* "BUSY ...": the crawler runs another job; retry */
	KS_MD_EMPTY, /* "NOTSTARTED ...": memcached holds no item */
	KS_MD_ERROR, /* "ERROR ...", "CLIENT_ERROR ...", "BADCLASS ...":
		      * the dump will not come (lru_crawler off, no room) */
	KS_MD_BAD,   /* a line none of these: the stream is out of step */
};

/*
 * One line (without its end of line) of `lru_crawler metadump`: for an
 * item, the key's bytes (the "key=" value URL-decoded, memcached's
 * uriencode) into key (room for KS_MC_KEY_MAX) and *klen. A key whose
 * encoding is broken or decodes to more than KS_MC_KEY_MAX bytes is
 * KS_MD_BAD.
 */
enum ks_md_line ks_metadump_line(const char *line, size_t len, __u8 *key,
				 size_t *klen);

/* A hex digit's value (either case), or -1: the URL decoding's, shared
 * with the fuzzer's escapes (tests/fuzz/dfuzz_gen.c). */
int ks_hex_digit(char c);

/*
 * Whether the shard self of ring r owns the key: its owner under r is
 * self. self KS_NO_SHARD (a shard the ring does not name) owns nothing.
 * The hash and the placement are ks_ring_lookup's, the datapath's and
 * the clients' (core/ring.h), over the key's bytes as memcached stores
 * them.
 */
int ks_purge_owned(const struct ks_ring *r, __u32 self, const void *key,
		   size_t len);

/* The gate's answer for one ring change. */
struct ks_purge_gate {
	int allowed;   /* 1: purge */
	int forced;    /* the document said force */
	double moved;  /* share of sampled keys whose host:port changed */
	double ideal;  /* the share a change of these shards should move */
	double limit;  /* the most the gate takes unforced */
	double away;   /* share of sampled keys self loses */
	__u32 changed; /* shards (host:port) added plus removed */
	char why[320]; /* one line: why it was refused, or what it moves */
};

/* Keys sampled to measure a change: ~0.7% standard error on a quarter. */
#define KS_PURGE_SAMPLES 20000u
/*
 * Whether this shard (self, "host:port") purges for a change from ring
 * rf (shards sf) to rt (shards st): the share of KS_PURGE_SAMPLES keys
 * whose owner's host:port changes (moved), against the share the change
 * of shards and weights ideally moves (ks_ring_ideal_moved). Allowed when
 * 'ring set' would write it without --force (ks_ring_move_excessive says
 * no), or forced: a switch of distribution or key hash, a list that moves
 * far more than its shards explain, purge only when 'ring set --force'
 * marked the document. g->away is the share this shard loses (0: nothing
 * to purge). g->why says what the change moves, or why it was refused.
 * -ENOMEM, else 0.
 */
int ks_purge_gate(const struct ks_ring *rf, const struct ks_shards *sf,
		  const struct ks_ring *rt, const struct ks_shards *st,
		  const char *self, int forced, struct ks_purge_gate *g);

/* The index of "host:port" self in shards, or KS_NO_SHARD (also for a
 * NULL self or a malformed one). */
__u32 ks_purge_self_index(const struct ks_shards *s, const char *self);

/*
 * Pacing at rate items/s: a pass that started at start_ns and has
 * deleted done items may delete the next batch at the returned time (ns,
 * the same clock), never before start_ns + done / rate. A pass that fell
 * behind (a slow memcached) does not catch up in a burst: the caller
 * moves start_ns with ks_pace_rebase when now is more than
 * KS_PACE_SLACK_NS past the due time. rate 0: never (the caller does not
 * delete at all).
 */
#define KS_PACE_SLACK_NS 100000000ULL
__u64 ks_pace_due(__u64 start_ns, __u64 done, __u64 rate);
/* The start that makes done items due at now - KS_PACE_SLACK_NS, when
 * now is later than that; else start_ns unchanged. */
__u64 ks_pace_rebase(__u64 start_ns, __u64 done, __u64 rate, __u64 now);
/* Items per batch at rate: about 20 batches a second, 1..KS_PURGE_BATCH. */
#define KS_PURGE_BATCH 100u
__u32 ks_pace_batch(__u64 rate);

/* Items per second of n items over ns nanoseconds (0 when ns is 0). */
double ks_purge_rate(__u64 n, __u64 ns);

/* A duplicate of ring r (its half, and pymemcache's nodes), or -ENOMEM
 * with dst empty: a thread of its own can then look up keys while the
 * agent replaces its ring. */
int ks_ring_dup(struct ks_ring *dst, const struct ks_ring *r);
/* A duplicate of a shard list; -ENOMEM with dst empty. */
int ks_shards_dup(struct ks_shards *dst, const struct ks_shards *s);

/* enum ks_purge_state (ks_shard_report.h) as the report and the
 * metrics name it: "off", "idle", "purging", "grace", "sweeping". */
const char *ks_purge_state_name(__u32 state);

#endif
