/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * route.h - where the client library's requests go (docs/client.md,
 * "Read" and "Write"), decided over the view alone. Pure code.
 *
 * A read of an armed hot key whose entry names the ring's owner as its
 * owner takes the next turn of the key's schedule (the datapath's,
 * ks_steer_schedule: owner_turns of 64 turns to the owner, the rest round
 * the copies); every other read, and every read while the view is too old,
 * goes to the owner. A write invalidates the union of the owner's replica
 * sets as its hosts/ entries listed them (every version seen), the
 * replicas every version of the key's hot/ entry listed (and its owner's
 * set, when the entry names another owner than the ring), and the static
 * replicas.
 */
#ifndef KSC_ROUTE_H
#define KSC_ROUTE_H

#include "client/view.h"
#include "core/mc_key.h"

struct ksc_read_plan {
	unsigned owner; /* server id; KSC_NONE: no ring */
	unsigned copy;  /* a replica's server id to try first; KSC_NONE */
	__s64 stamp;    /* an armed key's version (ksc_hot.arm_rev); 0: none */
};

/* Takes a turn of the key's schedule when it has one. */
void ksc_route_read(struct ksc_view *v, const void *key, size_t len, __u64 hash,
		    int owners_only, struct ksc_read_plan *p);

/*
 * The replicas a write of key (owner: its server id) invalidates into
 * out[0..max), returned count; all 0: only when the view has a hot/ entry
 * for the key (invalidate=hot, not safe while a view lags).
 */
#define KSC_INVAL_MAX (3 * KSC_SEEN_MAX)

/*
 * A key across a ring change (docs/client.md, "Ring changes"), from the
 * moment the view replaced its ring (ring_since_ms) and grace_ms:
 *
 * - old: the previous ring's owner when it differs from the new one and
 *   the change is younger than 2 x grace_ms, else KSC_NONE;
 * - inval_old: a write deletes the key at old (and invalidates old's
 *   replicas) after it wrote the new owner: for 2 x grace_ms, so that
 *   it outlasts every other handle's read_old, whose change may have
 *   begun up to one lag (< grace_ms) later;
 * - read_old: a read tries old first (a value there was written by a
 *   handle still on the old ring, or is from before the change and no
 *   write through a handle on the new ring came since), then the new
 *   owner; for grace_ms.
 */
struct ksc_move {
	unsigned owner, old; /* server ids */
	int read_old, inval_old;
	__s64 rev; /* the ring's revision the decision was made under */
};
void ksc_route_move(const struct ksc_view *v, const void *key, size_t len,
		    __u64 now_ms, unsigned grace_ms, struct ksc_move *m);
unsigned ksc_route_inval(const struct ksc_view *v, unsigned owner, __u64 hash,
			 int all, __u16 *out, unsigned max);

/*
 * A handle's log of the keys it wrote, for the catch-up after its view
 * applies a new ring (docs/client.md, "Ring changes"): a write made while
 * the view still had the old ring went to the old owner only, so the new
 * owner may hold an older value; the catch-up deletes those keys at their
 * new owners. The last KSC_WLOG_KEYS writes, each with the ring revision it
 * was routed under and when it was acknowledged.
 */
#define KSC_WLOG_KEYS 4096
struct ksc_wlog_ent {
	__u64 at_ms;
	__s64 rev;
	__u8 len;
	char key[KS_MC_KEY_MAX];
};
struct ksc_wlog {
	struct ksc_wlog_ent *e; /* KSC_WLOG_KEYS, allocated on first use */
	unsigned next, n;
};
/* A write of key acknowledged at now under ring revision rev: 0, -ENOMEM. */
int ksc_wlog_add(struct ksc_wlog *l, const void *key, size_t klen, __s64 rev,
		 __u64 now_ms);
void ksc_wlog_free(struct ksc_wlog *l);

/* A key the catch-up deletes, at server srv (its owner now). */
struct ksc_catchup {
	unsigned srv;
	__u8 len;
	char key[KS_MC_KEY_MAX];
};
/*
 * What the catch-up after the view's latest change deletes: every key
 * logged under the previous ring (v->prev_rev) at most window_ms before
 * the change (ring_since_ms) whose owner changed, into out[0..max); the
 * count. *lost is 1 when the log's oldest entry is younger than that
 * window (it wrapped: older writes of the window are not known).
 */
unsigned ksc_wlog_catchup(const struct ksc_wlog *l, const struct ksc_view *v,
			  unsigned window_ms, struct ksc_catchup *out,
			  unsigned max, int *lost);

#endif
