/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * http_serve.h - the agent's documents over HTTP: the routing document
 * (--listen), for clients and proxies that route TCP traffic themselves,
 * and the Prometheus metrics (--metrics). Debian's libmicrohttpd parses the
 * requests and writes the answers; this module owns the listening socket
 * (TCP or unix:PATH with its mode and group), accepts, enforces the
 * connection limit and the header timeout, routes and answers, all from
 * the agent's own poll loop (libmicrohttpd in external epoll mode: one fd
 * in the loop). It never blocks, answers one request per connection
 * (Connection: close) and serves only what srv->serves names (routing
 * alone by default):
 *
 *   GET|HEAD /  /routing  /routing.json   -> 200 application/json
 *   GET|HEAD /metrics                     -> 200 text/plain; version=0.0.4
 *
 * with 404 for other paths, 405 for other methods, 400 for garbage, 431 for
 * a header over KS_HTTP_HEADER_MAX, 408 for a client that does not send a
 * whole header in time and 503 once KS_HTTP_MAX_CLIENTS are connected.
 * Malformed requests that libmicrohttpd refuses itself (a bad request line
 * or header line, a version other than 1.x, a header larger than its
 * memory pool) get its answers: 400, 505 or 431 with Connection: close and
 * a short HTML body.
 *
 * Use:
 *   struct ks_http_server srv = {};          (zeroed: default timeouts)
 *   ks_http_parse_listen(spec, &addr, err, len);
 *   ks_http_open(&srv, &addr, err, len);
 *   loop: n = ks_http_pollfds(&srv, pfd, KS_HTTP_POLLFDS);
 *         poll(..., ks_http_timeout_ms(&srv, now) or the agent's own);
 *         ks_http_service(&srv, pfd, n, doc, doc_len, ks_mono_ns());
 *   ks_http_close(&srv);
 *
 * The routing document a client receives is the one passed to
 * ks_http_service when its request became complete; the server copies it
 * (one copy shared by all clients for as long as the caller passes the same
 * bytes), so the caller may rewrite or free its buffer at any time. The
 * metrics change once per interval, not per call: the caller hands each
 * new rendering to ks_http_publish, which copies it.
 */
#ifndef KS_HTTP_SERVE_H
#define KS_HTTP_SERVE_H

#include <netinet/in.h>
#include <sys/types.h>
#include <poll.h>
#include <stddef.h>
#include <linux/types.h>

#define KS_HTTP_MAX_CLIENTS 16
/* listen + libmicrohttpd's epoll fd + clients not yet handed to it */
#define KS_HTTP_POLLFDS    (2 + KS_HTTP_MAX_CLIENTS)
#define KS_HTTP_HEADER_MAX 8192 /* request header bytes */

/* Defaults taken when the field below is 0. */
#define KS_HTTP_HEADER_TIMEOUT_NS 2000000000ULL /* accept to end of header */
/* A reader taking nothing; libmicrohttpd counts it in whole seconds. */
#define KS_HTTP_SEND_TIMEOUT_NS 10000000000ULL

struct ks_http_priv;

/* What a server can serve; srv->serves is a mask of KS_HTTP_SERVES(kind). */
enum ks_http_kind {
	KS_HTTP_ROUTING = 0, /* / /routing /routing.json, from ks_http_service */
	KS_HTTP_METRICS,     /* /metrics, from ks_http_publish */
	KS_HTTP_KINDS,
};
#define KS_HTTP_SERVES(kind) (1u << (kind))

/* The Prometheus text exposition format, version 0.0.4. */
#define KS_HTTP_METRICS_TYPE "text/plain; version=0.0.4; charset=utf-8"

/*
 * For the status line. A connection counts at most once: in served, or in
 * errors; one that closes before sending a byte counts in neither.
 */
struct ks_http_stats {
	__u64 served; /* 200 answers sent whole (GET or HEAD) */
	__u64 errors; /* error answers (4xx/5xx, 503 when full), answers cut
		       * short, requests abandoned half-sent */
};

struct ks_http_server {
	/* Tunables: 0 takes the default; set before ks_http_open or after. */
	__u64 header_timeout_ns;
	__u64 send_timeout_ns;
	unsigned serves;  /* KS_HTTP_SERVES mask; 0: routing only */
	const char *flag; /* option named in messages; NULL: "--listen" */

	struct ks_http_stats stats;

	/* Private to http_serve.c. */
	int fd;                    /* listening socket */
	struct ks_http_priv *priv; /* NULL: not open */
	char name[128];            /* "127.0.0.1:9180", for messages */
	char unix_path[108];       /* a Unix socket to remove at close */
};

/*
 * "PORT", ":PORT" or "ADDR:PORT" with ADDR a dotted IPv4 address (no name
 * lookups); the address defaults to 127.0.0.1 so the table stays on the
 * host unless the operator says otherwise. 0 or -EINVAL with a message
 * naming flag and the spec in err.
 */
int ks_http_parse_addr(const char *flag, const char *spec,
		       struct sockaddr_in *out, char *err, size_t errlen);
/* The same for --listen. */
int ks_http_parse_listen(const char *spec, struct sockaddr_in *out, char *err,
			 size_t errlen);

/*
 * Binds and listens (non-blocking, close-on-exec, SO_REUSEADDR). 0 or
 * -errno with "cannot listen on ADDR:PORT: <strerror>; give FLAG a free
 * port ..." in err. srv must be zeroed or closed; its tunables are kept.
 */
int ks_http_open(struct ks_http_server *srv, const struct sockaddr_in *addr,
		 char *err, size_t errlen);

/*
 * The same on a Unix stream socket at path ("--listen unix:PATH"), for a
 * document only root (mode 0600) or group gid (0660; gid (gid_t)-1: none)
 * may read. A stale socket file is replaced; any other file there is an
 * error. The file is removed at ks_http_close.
 */
int ks_http_open_unix(struct ks_http_server *srv, const char *path, gid_t gid,
		      char *err, size_t errlen);

/* Fills at most max entries (listen socket first, then libmicrohttpd's
 * epoll fd); returns how many. */
int ks_http_pollfds(const struct ks_http_server *srv, struct pollfd *pfd,
		    int max);

/*
 * Milliseconds until the next timeout the server must act on (rounded
 * up), or -1 when nothing is pending: a poll timeout for callers that have
 * none shorter of their own.
 */
int ks_http_timeout_ms(const struct ks_http_server *srv, __u64 now_ns);

/*
 * For a poll loop with other fds: ks_http_pollfds into pfd (at most max),
 * and *timeout_ms lowered to ks_http_timeout_ms when that is sooner.
 * Returns how many entries were filled (0 for a server not open).
 */
int ks_http_poll_add(const struct ks_http_server *srv, struct pollfd *pfd,
		     int max, __u64 now_ns, int *timeout_ms);

/*
 * Does all the work that can be done now without blocking: accepts, reads,
 * answers, writes, enforces timeouts. pfd/n may be the caller's whole poll
 * array: entries are matched by fd and the others ignored. doc (doc_len
 * bytes, the agent's current routing JSON; NULL before there is one: 503)
 * is the document for requests completed in this call. now_ns is
 * CLOCK_MONOTONIC (ks_mono_ns(), util/clock.h). Call it after every poll,
 * events or not.
 */
void ks_http_service(struct ks_http_server *srv, const struct pollfd *pfd,
		     int n, const char *doc, size_t doc_len, __u64 now_ns);

/*
 * After ks_http_open: makes data (len bytes) the document of kind for
 * requests completed from now on; the server keeps a copy (answers under
 * way keep the copy they started with). Before the first publish such
 * requests get 503. Not for KS_HTTP_ROUTING, which every ks_http_service
 * call passes. 0, -EINVAL or -ENOMEM (the previous document stays).
 */
int ks_http_publish(struct ks_http_server *srv, enum ks_http_kind kind,
		    const char *data, size_t len);

/* Closes every connection and the listening socket and drops the
 * documents; safe to repeat. */
void ks_http_close(struct ks_http_server *srv);

/* Clients connected now (waiting for a first byte or with libmicrohttpd). */
int ks_http_clients(const struct ks_http_server *srv);

#endif
