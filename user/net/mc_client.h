/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * mc_client.h - a small blocking memcached client (meta text commands over
 * TCP) with a time limit per call, for the agent's one job that talks to
 * memcached: copying a hot key's value, flags and remaining TTL from its
 * owner to its L1 replicas, and removing the copies when the owner has
 * none.
 *
 * Every call returns 0 or -errno: -ETIMEDOUT (no answer within timeout_ms
 * of the call's start, connect included), -ECONNREFUSED and other connect
 * errors, -ECONNRESET (the server closed the connection, twice), -EPROTO
 * (a reply the client did not expect), -E2BIG (a value over
 * KS_MC_VALUE_MAX, or one the server finds too large), -ENOMEM, -EINVAL (a
 * key the text protocol cannot carry, a bad ttl). The connection opens on
 * first use, is re-opened once when a kept connection turns out broken,
 * and is closed after any error, because after one the reply stream may be
 * out of step with the requests.
 */
#ifndef KS_MC_CLIENT_H
#define KS_MC_CLIENT_H

#include <stddef.h>
#include <linux/types.h>
#include "core/mc_key.h" /* KS_MC_KEY_MAX, ks_mc_key_check */
#include "keysteer.h"    /* union ks_inaddr, KS_AF_INET6 */

#define KS_MC_VALUE_MAX (1u << 20) /* memcached's default item size limit */
/* memcached reads an expiry above 30 days as a unix time, not seconds. */
#define KS_MC_TTL_MAX 2592000L

struct ks_mc_conn {
	union ks_inaddr addr; /* network order */
	__u8 family;          /* KS_AF_INET or KS_AF_INET6 */
	__u16 port;           /* host order */
	int fd;               /* -1: not connected */
	int timeout_ms;       /* per call, from its start to its last byte */
	char *rbuf;           /* reply bytes read ahead; allocated on connect */
	size_t rpos, rlen;
};

struct ks_mc_item {
	char *value; /* malloc'd, len bytes plus a NUL; NULL when not found */
	size_t len;
	__u32 flags; /* the client flags stored with the value */
	long ttl;    /* remaining seconds, -1 = never expires */
	int found;
	int stale; /* marked stale (meta "X"): an invalidation's mark */
	__u64 cas; /* the item's CAS (ks_mc_fetch) */
	int win;   /* meta "W": this reader holds the item's lease */
	int taken; /* meta "Z": another reader holds it */
};

/* No I/O: the connection opens on the first call. */
void ks_mc_init(struct ks_mc_conn *c, __u8 family, const union ks_inaddr *addr,
		__u16 port, int timeout_ms);
/* Closes the socket and frees the buffer; safe to call twice. */
void ks_mc_close(struct ks_mc_conn *c);

/* "mg <key> v f t c". *it is overwritten (free it with ks_mc_item_free);
 * a miss is 0 with it->found = 0. */
int ks_mc_fetch(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		struct ks_mc_item *it);
/*
 * Leases (libkeysteer's keysteer_fetch, docs/client.md "Read-through"):
 * "mg <key> v f t c N<lease_ttl>". On a miss memcached links a 0-byte
 * placeholder living lease_ttl s and answers it with W (win); later
 * readers get it with Z until a store replaces it (store_if with its CAS:
 * a write meanwhile wins) or it lapses. it->found is 1 for the
 * placeholder here; ks_mc_fetch answers it as a miss (found 0, taken 1).
 * recache_s (0: none) adds "R<recache_s>": the first reader of a value
 * with less than that left gets W with it (an early refresh), the rest Z.
 */
int ks_mc_lease_get(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		    long lease_ttl, long recache_s, struct ks_mc_item *it);
static inline int ks_mc_lease_placeholder(const struct ks_mc_item *it)
{
	return it->found && !it->len && (it->win || it->taken) && !it->stale;
}
/* "ms <key> <len> T<ttl> F<flags>" of it->value/len/flags (it->ttl is not
 * used); ttl 0 = never expires, 1..KS_MC_TTL_MAX seconds. */
int ks_mc_store(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		const struct ks_mc_item *it, long ttl);
/* "md <key>"; a key that is not there is success too. */
int ks_mc_delete(struct ks_mc_conn *c, const __u8 *key, size_t klen);

/*
 * The copy protocol of docs/client.md (a copy never outlives a write):
 *
 * ks_mc_cas: "mg <key> c", the item's CAS into *cas, 0 when there is none.
 * ks_mc_store_if: the store of ks_mc_store only if the item is still as
 *   ks_mc_cas found it: "C<cas>", or with cas 0 "ME" (only if absent);
 *   -EAGAIN when it changed (EX, NS, NF): an invalidation came between.
 * ks_mc_delete_if: "md <key> C<cas>"; -EAGAIN when it changed.
 * ks_mc_invalidate: "md <key> I T<ttl>" (marks a present item stale and
 *   bumps its CAS), or where there is none an empty tombstone added with
 *   client flags KS_MC_TOMB_FLAGS: either way every store_if that read the
 *   CAS before is refused. A reader takes neither a stale item nor a
 *   tombstone.
 */
#define KS_MC_TOMB_FLAGS 0x6b73746dU /* "kstm" */
int ks_mc_cas(struct ks_mc_conn *c, const __u8 *key, size_t klen, __u64 *cas);
int ks_mc_store_if(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		   const struct ks_mc_item *it, long ttl, __u64 cas);
int ks_mc_delete_if(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		    __u64 cas);
int ks_mc_invalidate(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		     long ttl);
/* Whether a copy fetched from a replica may be served: found, not stale,
 * not a tombstone. Anything else is read from the owner. */
static inline int ks_mc_copy_usable(const struct ks_mc_item *it)
{
	return it->found && !it->stale && it->flags != KS_MC_TOMB_FLAGS;
}
void ks_mc_item_free(struct ks_mc_item *it);

/*
 * Stale-while-revalidate (docs/client.md, "Stale-while-revalidate"):
 *
 * ks_mc_owner_value: whether an item read from an owner is a value a
 *   reader may take as fresh: found and not stale-marked. A stale owner
 *   item is a miss to keysteer_get and to the agent's copy fill.
 * ks_mc_hand_back: "md <key> I C<cas>" after a plain read got memcached's
 *   W on a stale item it does not refill (1.6.18 hands W to the first
 *   reader of a stale item whatever it asked): the token cleared, so a
 *   keysteer_fetch caller wins the refill instead of waiting out the
 *   mark; its CAS bumped, its expiry kept. Changed meanwhile (EX, NF) is
 *   0: someone stored or removed it, nothing is held. Owners only: a CAS
 *   bumped on a replica would refuse the agent's fills for nothing.
 * ks_mc_mark_stale: a write's mark on the owner, bounded: a fresh item
 *   marked stale for min(max_stale, its remaining TTL) s ("md <key> I
 *   T<s> C<cas>"); an item already stale keeps the expiry of its first
 *   mark (a later write only bumps its CAS, so the old value is never
 *   served past max_stale after the write that first superseded it); a
 *   lease's placeholder, or an item with under 1 s left, is deleted (a
 *   stale placeholder would be served as a 0-byte value). Each step is
 *   CAS-checked and tried again on a change; after 3 changes a delete.
 *   ks_mc_mark_plan is its pure decision on the item read.
 */
static inline int ks_mc_owner_value(const struct ks_mc_item *it)
{
	return it->found && !it->stale;
}
int ks_mc_hand_back(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		    __u64 cas);
enum ks_mc_mark {
	KS_MC_MARK_NONE,    /* no item: nothing to mark */
	KS_MC_MARK_DELETE,  /* a placeholder or about to expire: delete it */
	KS_MC_MARK_RESTALE, /* already stale: CAS bumped, expiry kept */
	KS_MC_MARK_FIRST,   /* fresh: stale for *ttl s */
};
enum ks_mc_mark ks_mc_mark_plan(const struct ks_mc_item *it, long max_stale,
				long *ttl);
int ks_mc_mark_stale(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		     long max_stale);

struct ks_fill_result {
	int found;       /* the owner had the key */
	unsigned stored; /* replicas updated (stored, or deleted on a miss) */
	unsigned failed; /* replicas not updated: all n when the fetch failed */
	unsigned raced;  /* of them, because an invalidation came between */
	long ttl;        /* the ttl the copies got (0 on a miss) */
	__u32 failed_mask; /* bit i: replicas[i] not updated (failed) */
	__u32 raced_mask;  /* bit i: replicas[i] not updated (raced) */
	int owner_err;     /* the fetch's error; 0: the owner answered */
	__u64 owner_cas;   /* the CAS of the value copied; 0: no item */
};

/*
 * One refresh of a hot key's copies (docs/client.md): every replica's CAS
 * first, then the owner's value once, then on every replica the value and
 * flags stored only if its CAS is unchanged (ks_mc_store_if), with ttl =
 * min(owner's remaining ttl, ttl_cap) (ttl_cap when the owner's never
 * expires; at least 1), or, when the owner has no such key, the copy
 * deleted if unchanged, so no replica serves a value the owner no longer
 * has. A replica whose copy changed in between (an invalidation) is not
 * updated: counted in raced, -EAGAIN when nothing else failed. ttl_cap is 1..; above
 * KS_MC_TTL_MAX it counts as KS_MC_TTL_MAX. A NULL replica is not tried
 * and counts as failed (-EHOSTDOWN). Returns 0 when every replica was
 * updated, else the first error; res counts the outcomes either way.
 */
#define KS_FILL_MAX 16 /* replicas one fill updates */
/* Test controls of a fill (docs/client.md): unconditional stores (the
 * protocol off) and a wait between the owner's read and the stores. */
struct ks_fill_opts {
	int unconditional;
	unsigned delay_ms;
	int stale_as_fresh; /* a stale owner item copied as a value */
};
int ks_fill_copies_opts(struct ks_mc_conn *owner,
			struct ks_mc_conn *const *replicas, unsigned n,
			const __u8 *key, size_t klen, long ttl_cap,
			const struct ks_fill_opts *o,
			struct ks_fill_result *res);
int ks_fill_copies(struct ks_mc_conn *owner, struct ks_mc_conn *const *replicas,
		   unsigned n, const __u8 *key, size_t klen, long ttl_cap,
		   struct ks_fill_result *res);

/*
 * Pipelines (client/batch.c: many meta commands with "q", then "mn"):
 * ks_mc_pipe_send connects when the connection is closed (*fresh = 1) and
 * sends all of iov; ks_mc_pipe_line reads the next reply line (valid
 * until the next read). Both close the connection on an error, as the
 * calls above do. ks_mc_pipe_broken: whether err means a kept connection
 * had been closed by the server (worth one more try on a new one).
 */
struct iovec;
int ks_mc_pipe_send(struct ks_mc_conn *c, struct iovec *iov, int cnt,
		    __u64 deadline, int *fresh);
int ks_mc_pipe_line(struct ks_mc_conn *c, char **line, __u64 deadline);
/* The same for a stream whose lines may end in "\n" alone (memcached's
 * lru_crawler metadump); "\r\n" is taken too. */
int ks_mc_pipe_line_lf(struct ks_mc_conn *c, char **line, __u64 deadline);
int ks_mc_pipe_broken(int err);

/*
 * Meta arithmetic, for libkeysteer's counters (docs/client.md, "Split
 * counters"): "ma <key> v c M<I|D> D<delta>", with "N<ttl> J<initial>"
 * when create (memcached 1.6 then stores initial as the value of a
 * missing key and does NOT apply delta: the caller folds the delta into
 * initial), "C<cas>" when cas_in is not 0. *value and *cas (may be NULL)
 * get the new value and CAS. -ENOENT: missing and not created; -EAGAIN:
 * cas_in no longer the item's; -EDOM: the value is not a number. Never
 * sent twice: no whole reply after the request went out (a timeout, a
 * reset, a garbled reply) is -ECONNABORTED, and the caller cannot know
 * whether it was applied.
 */
struct ks_mc_arith {
	__u64 delta;
	int decr;
	int create;
	__u64 initial; /* with create */
	long ttl;      /* with create: 0 never expires */
	__u64 cas_in;  /* 0: unconditional */
};
int ks_mc_arith(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		const struct ks_mc_arith *a, __u64 *value, __u64 *cas);

#endif
