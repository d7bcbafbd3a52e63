/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * etcd.h - a client of etcd v3 through its JSON gateway (libcurl for HTTP,
 * jansson for JSON), for the fleet (issue 12, docs/fleet.md): ranges,
 * puts, compare-and-swap, deletes, leases and watches.
 *
 * Debian 12's etcd (3.4) serves the gateway under /v3/ (and /v3beta/, the
 * old name); this client uses /v3/. Keys and values are bytes (base64 on
 * the wire), revisions and lease IDs int64.
 *
 * Endpoints: --etcd URL[,URL...] (etcd_codec.h). A call starts on the
 * endpoint that answered last and moves to the next one when it cannot
 * connect, and also, for calls that are safe to repeat, when the
 * connection breaks mid-call or the member answers "unavailable" (no
 * leader, say). A call that times out on a member is not repeated, but
 * the next call starts on the next endpoint: a member that stopped
 * answering costs one call, not every call (a lease's keepalives would
 * otherwise all wait on it until the lease expired). Every call has one
 * deadline, timeout_ms from its start,
 * shared by all endpoints it tries (each connect gets its share of what is
 * left), authentication included: no call blocks its caller longer.
 *
 * TLS: https:// endpoints, verified against ca_file (else the system's
 * CAs), with a client certificate and key when given. Auth: with a user
 * and password the client takes a token from /v3/auth/authenticate on its
 * first call, sends it as the Authorization header, and authenticates
 * again, once per call, when etcd says the token is invalid (expired, or
 * the member restarted).
 *
 * Every call returns 0 (or a count) or a negative errno, and then
 * ks_etcd_errmsg() says in one line what is wrong:
 *   -EHOSTUNREACH  no endpoint could be connected to (each one's reason)
 *   -ETIMEDOUT     no answer within the deadline
 *   -EACCES        wrong user or password, auth required, or TLS refused
 *                  (a certificate etcd or we do not accept)
 *   -ESTALE        compare-and-swap lost: the key's mod_revision differs
 *   -ENOENT        the lease is gone (expired or revoked)
 *   -EBADMSG       an answer that does not decode (bad answer)
 *   -ECONNRESET    a write's connection broke mid-call: it may or may not
 *                  have happened (read the key to know)
 *   -EAGAIN        etcd was unavailable and the call is not one to repeat
 *   -EPERM, -ERANGE, -EINVAL, -EPROTO, -ENOMEM  as etcd_codec.h says
 *
 * One client is used by one thread; a watch belongs to its client and
 * must be stopped before the client is closed.
 */
#ifndef KS_ETCD_H
#define KS_ETCD_H

#include <stddef.h>
#include <stdint.h>
#include "core/etcd_codec.h"

#define KS_ETCD_TIMEOUT_MS 2000       /* per call, when opts give 0 */
#define KS_ETCD_ANSWER_MAX (64 << 20) /* bytes; a bigger answer is -E2BIG */

struct ks_etcd_opts {
	const char *endpoints; /* "URL[,URL...]" */
	const char *ca_file;   /* https: the CA of etcd's certificates */
	const char *cert_file; /* https: our certificate ... */
	const char *key_file;  /* ... and its key: both or neither */
	const char *user;      /* etcd auth: both or neither */
	const char *password;
	int timeout_ms; /* per call; 0: KS_ETCD_TIMEOUT_MS */
};

struct ks_etcd;
struct ks_etcd_watch;

/*
 * Checks the options and sets up; no I/O (ks_etcd_status is the check
 * that etcd is there and takes the credentials). Refused with one line in
 * err: bad URLs, TLS files with http:// endpoints or that cannot be read,
 * a certificate without its key, a user without a password. 0 or -EINVAL,
 * -ENOMEM.
 */
int ks_etcd_open(struct ks_etcd **c, const struct ks_etcd_opts *o, char *err,
		 size_t errlen);

/*
 * The password on the first line of path (its newline dropped) into pw,
 * for ks_etcd_opts.password: 0, or -EINVAL with err naming what, path
 * and what is wrong (cannot be read, empty, a line longer than len - 1),
 * never the file's contents. what is how the caller's user names the
 * file, e.g. "--etcd-password-file " or "etcd_password_file=".
 */
int ks_etcd_read_password(const char *what, const char *path, char *pw,
			  size_t len, char *err, size_t errlen);
void ks_etcd_close(struct ks_etcd *c); /* NULL is fine */

/* A second client with the same endpoints, TLS files and credentials,
 * for another thread (a client belongs to one thread). No I/O. */
int ks_etcd_clone(const struct ks_etcd *c, struct ks_etcd **out, char *err,
		  size_t errlen);

/* The last error's one line ("" after a success). */
const char *ks_etcd_errmsg(const struct ks_etcd *c);
/* The endpoint the next call starts on. */
const char *ks_etcd_endpoint(const struct ks_etcd *c);
/* How long one call may take, ms (the options' timeout_ms, or the
 * default). */
int ks_etcd_call_timeout_ms(const struct ks_etcd *c);

/* The calling thread's calls above that waited for an answer (every
 * call but the watches, which never block): how many, and their time in
 * all, ns, since the thread started. The agent's interval loop must never
 * wait for etcd (its -v etcd line shows these: docs/fleet.md). */
void ks_etcd_thread_waits(uint64_t *calls, uint64_t *wait_ns);

/* Authenticates when a user is set and asks a member for its status:
 * etcd's version into version (may be NULL). */
int ks_etcd_status(struct ks_etcd *c, char *version, size_t vlen);

#define KS_ETCD_PREFIX                                                         \
	1u /* flags: key is a prefix, the call covers every key under it */

/* One key, or every key under a prefix, in key order; out is overwritten
 * (free it with ks_etcd_range_free); a key that is absent is 0 with
 * out->n == 0. out->revision is the store's revision at the read: watch
 * from out->revision + 1 to see every change after it. */
int ks_etcd_range(struct ks_etcd *c, const void *key, size_t klen,
		  unsigned flags, struct ks_etcd_range *out);

/* key = value, attached to lease (0: none). *revision (may be NULL): the
 * revision of the put, the key's new mod_revision. */
int ks_etcd_put(struct ks_etcd *c, const void *key, size_t klen,
		const void *val, size_t vlen, int64_t lease, int64_t *revision);

/*
 * Compare-and-swap: the put happens only if the key's mod_revision is
 * mod_revision now; 0 means "only if the key is absent" (create). Won: 0,
 * *revision the put's revision. Lost: -ESTALE, *revision the key's
 * mod_revision now (0: absent), the key untouched. One transaction: of
 * writers racing from the same mod_revision exactly one wins.
 */
int ks_etcd_put_if(struct ks_etcd *c, const void *key, size_t klen,
		   const void *val, size_t vlen, int64_t lease,
		   int64_t mod_revision, int64_t *revision);

/* Deletes the key (or every key under the prefix); *deleted (may be
 * NULL) how many were there; a key that is absent is 0 with *deleted 0. */
int ks_etcd_delete(struct ks_etcd *c, const void *key, size_t klen,
		   unsigned flags, int64_t *deleted);

/* One write of a batch: a put of val (vlen bytes), or with val NULL a
 * delete of the key. */
struct ks_etcd_write {
	const void *key;
	size_t klen;
	const void *val;
	size_t vlen;
};

/*
 * Every write of w[0..n) in one transaction with no compare: one request
 * and one revision (*revision, may be NULL) for all, each put attached to
 * lease (0: none). A key may appear once (etcd refuses a duplicate), and
 * etcd takes at most 128 operations per transaction (--max-txn-ops).
 */
#define KS_ETCD_TXN_MAX 128
int ks_etcd_write_many(struct ks_etcd *c, const struct ks_etcd_write *w,
		       size_t n, int64_t lease, int64_t *revision);

/* A lease of ttl_s seconds: *id, and *granted (may be NULL) the TTL etcd
 * gave (it may raise a small one to its minimum). */
int ks_etcd_lease_grant(struct ks_etcd *c, int64_t ttl_s, int64_t *id,
			int64_t *granted);
/* Renews the lease to its full TTL: *ttl (may be NULL) the TTL now;
 * -ENOENT when it has expired or was revoked (its keys are gone). */
int ks_etcd_lease_keepalive(struct ks_etcd *c, int64_t id, int64_t *ttl);
/* Ends the lease and deletes its keys now; -ENOENT if already gone. */
int ks_etcd_lease_revoke(struct ks_etcd *c, int64_t id);

/*
 * Watches: a key, or a prefix, from start_revision (0: changes after now),
 * every put and delete in revision order.
 *
 * The gateway's /v3/watch is one long POST whose answer is a stream of
 * JSON objects. It runs on curl's multi interface inside the caller's own
 * poll loop, not on a thread of its own: the agent is one thread with one
 * poll loop (no locks anywhere), and it drops capabilities after attaching,
 * which Linux applies per thread, so a helper thread would be one more
 * thing to keep in step. The watch keeps its sockets in an epoll fd of its
 * own, so the loop polls one fd:
 *
 *   ks_etcd_watch_start(c, ...) -> w
 *   loop: pfd = { ks_etcd_watch_fd(w), POLLIN };
 *         poll(&pfd, 1, min(ks_etcd_watch_timeout_ms(w), the loop's own));
 *         ks_etcd_watch_run(w);               (on readiness or timeout)
 *         while (ks_etcd_watch_next(w, &ev) == 1) { use ev; ks_etcd_event_free(&ev); }
 *   ks_etcd_watch_stop(w);
 *
 * run() never blocks, except to authenticate again when etcd ends the
 * stream for an invalid token (one call, bounded by the client's
 * timeout). When the stream breaks (a member gone, no "created" answer
 * within the client's timeout, a dead peer found by TCP keepalives within
 * about 11 s) the watch reconnects by itself, to the next endpoint, after
 * a backoff of 100 ms doubling to 2 s, from the revision after the last
 * event it passed on: no event is lost or repeated. run() returns the
 * number of events waiting, or a negative errno once per failure (the
 * line in ks_etcd_watch_errmsg); -ERANGE (the start revision has been
 * compacted: read again and watch from that read's revision + 1), -EACCES
 * and -EPERM end the watch, every other error is followed by a reconnect.
 */
int ks_etcd_watch_start(struct ks_etcd *c, const void *key, size_t klen,
			unsigned flags, int64_t start_revision,
			struct ks_etcd_watch **w);
int ks_etcd_watch_fd(const struct ks_etcd_watch *w);
/* How long the loop may sleep before calling run(); -1: until the fd is ready. */
int ks_etcd_watch_timeout_ms(const struct ks_etcd_watch *w);
int ks_etcd_watch_run(struct ks_etcd_watch *w);
/* 1 and the oldest waiting event moved into *ev (free it with
 * ks_etcd_event_free), or 0 when none waits. */
int ks_etcd_watch_next(struct ks_etcd_watch *w, struct ks_etcd_event *ev);
/* 1 once the stream is established (etcd said "created"), else 0. */
int ks_etcd_watch_created(const struct ks_etcd_watch *w);
/* The revision the watch would restart from. */
int64_t ks_etcd_watch_next_revision(const struct ks_etcd_watch *w);
const char *ks_etcd_watch_errmsg(const struct ks_etcd_watch *w);
void ks_etcd_watch_stop(struct ks_etcd_watch *w); /* NULL is fine */
void ks_etcd_event_free(struct ks_etcd_event *ev);

#endif
