/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * key_watch.h - one etcd key that 'agent run --etcd' follows (the ring,
 * the fleet's pins; agent/run_etcd.c), or every key under a prefix (the
 * agents' hosts/ entries, for --balance): read once, then watched from
 * the revision after the read inside the interval loop's poll, every new
 * document handed to the owner's apply(), a deleted key to deleted(). A
 * prefix's read starts with reset(): the read is the whole state, so an
 * entry deleted while the watch was away is gone after it.
 *
 * While etcd is away the last document stays; the watch reconnects by
 * itself (net/etcd.h) and delivers what changed meanwhile. A watch etcd
 * ends (revision compacted, credentials refused) is started again after
 * a fresh read: at once, or after KS_ETCD_RESTART_NS. A break is logged
 * once per outage.
 */
#ifndef KS_KEY_WATCH_H
#define KS_KEY_WATCH_H

#include <stdint.h>
#include <linux/types.h>
#include "core/etcd_codec.h"

#define KS_ETCD_RESTART_NS 5000000000ULL /* after -EACCES/-EPERM/-ERANGE */

struct ks_etcd;
struct ks_etcd_watch;

struct ks_key_watch {
	const char *key;  /* the etcd key (the owner's buffer) */
	const char *what; /* "ring", "pins": for log lines */
	int prefix;       /* key is a prefix: every key under it */
	/* A new document (kv), with ctx as the poll was given it (NULL
	 * before the start); 0, or a negative errno that stops the agent. */
	int (*apply)(void *ud, void *ctx, const struct ks_etcd_kv *kv);
	/* A key deleted (kv->key; kv->mod_revision: the deletion's). */
	void (*deleted)(void *ud, void *ctx, const struct ks_etcd_kv *kv);
	/* A prefix is read again: forget what the watch gave. NULL: none. */
	void (*reset)(void *ud, void *ctx);
	/* What stays while etcd is away, for log lines ("the ring v9"). */
	void (*stays)(void *ud, char *buf, size_t len);
	void *ud;

	struct ks_etcd_watch *w;
	int64_t seen;       /* the key's newest revision acted on */
	__u64 watch_errors; /* watch failures (each reconnects) */
	__u64 restart_ns;   /* an ended watch is started again then */
	int up;             /* the watch is established */
	int down;           /* a break was logged; quiet until up */
};

/* Reads the key (applying a document newer than seen) and watches it
 * from the read on (at_start: an absent key is logged). 0, or a negative errno with the client's line in
 * ks_etcd_errmsg (then *apply_err is 0); *apply_err: apply()'s. */
int ks_key_watch_start(struct ks_key_watch *kw, struct ks_etcd *c, void *ctx,
		       int at_start, int *apply_err);
/* Runs the watch and applies what it brought: apply()'s error, or 0. */
int ks_key_watch_poll(struct ks_key_watch *kw, struct ks_etcd *c, void *ctx);
int ks_key_watch_fd(const struct ks_key_watch *kw);
int ks_key_watch_timeout_ms(const struct ks_key_watch *kw);
/* "up", "reconnecting" or "stopped". */
const char *ks_key_watch_state(const struct ks_key_watch *kw);
void ks_key_watch_stop(struct ks_key_watch *kw);

#endif
