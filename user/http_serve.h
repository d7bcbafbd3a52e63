/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * http_serve.h - the routing document over HTTP (--listen), for clients and
 * proxies that route TCP traffic themselves. A single-threaded HTTP/1.x
 * server driven from the agent's own poll loop: it never blocks, answers
 * one request per connection (Connection: close) and serves only
 *
 *   GET|HEAD /  /routing  /routing.json   -> 200 application/json
 *
 * with 404 for other paths, 405 for other methods, 400 for garbage, 431 for
 * a header over KS_HTTP_HEADER_MAX, 408 for a client that does not send a
 * whole header in time and 503 once KS_HTTP_MAX_CLIENTS are connected.
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
 * The document a client receives is the one passed to ks_http_service when
 * its request became complete; the server copies it (one copy shared by all
 * clients for as long as the caller passes the same bytes), so the caller
 * may rewrite or free its buffer at any time.
 */
#ifndef KS_HTTP_SERVE_H
#define KS_HTTP_SERVE_H

#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <linux/types.h>

#define KS_HTTP_MAX_CLIENTS  16
#define KS_HTTP_POLLFDS      (1 + KS_HTTP_MAX_CLIENTS) /* listen + clients */
#define KS_HTTP_HEADER_MAX   8192                      /* request header bytes */

/* Defaults taken when the field below is 0. */
#define KS_HTTP_HEADER_TIMEOUT_NS 2000000000ULL  /* accept to end of header */
#define KS_HTTP_SEND_TIMEOUT_NS   10000000000ULL /* a reader taking nothing */
#define KS_HTTP_LINGER_NS         1000000000ULL  /* wait for the client's FIN */

struct ks_http_client;
struct ks_http_doc;

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

	struct ks_http_stats stats;

	/* Private to http_serve.c. */
	int fd;                          /* listening socket */
	struct ks_http_client *clients;  /* NULL: not open */
	struct ks_http_doc *doc;         /* latest copy of the document */
	int doc_checked;                 /* doc compared this service call */
	__u64 accept_resume_ns;          /* out of fds: accept again then */
	char name[24];                   /* "127.0.0.1:9180", for messages */
};

/*
 * "PORT", ":PORT" or "ADDR:PORT" with ADDR a dotted IPv4 address (no name
 * lookups); the address defaults to 127.0.0.1 so the table stays on the
 * host unless the operator says otherwise. 0 or -EINVAL with a message
 * naming the spec in err.
 */
int ks_http_parse_listen(const char *spec, struct sockaddr_in *out, char *err,
			 size_t errlen);

/*
 * Binds and listens (non-blocking, close-on-exec, SO_REUSEADDR). 0 or
 * -errno with "cannot listen on ADDR:PORT: <strerror>; ..." in err. srv
 * must be zeroed or closed; its tunables are kept.
 */
int ks_http_open(struct ks_http_server *srv, const struct sockaddr_in *addr,
		 char *err, size_t errlen);

/* Fills at most max entries (listen socket first); returns how many. */
int ks_http_pollfds(const struct ks_http_server *srv, struct pollfd *pfd,
		    int max);

/*
 * Milliseconds until the next timeout the server must act on (rounded
 * up), or -1 when nothing is pending: a poll timeout for callers that have
 * none shorter of their own.
 */
int ks_http_timeout_ms(const struct ks_http_server *srv, __u64 now_ns);

/*
 * Does all the work that can be done now without blocking: accepts, reads,
 * answers, writes, enforces timeouts. pfd/n may be the caller's whole poll
 * array: entries are matched by fd and the others ignored. doc (doc_len
 * bytes, the agent's current routing JSON; NULL before there is one: 503)
 * is the document for requests completed in this call. now_ns is
 * CLOCK_MONOTONIC (ks_mono_ns()). Call it after every poll, events or not.
 */
void ks_http_service(struct ks_http_server *srv, const struct pollfd *pfd,
		     int n, const char *doc, size_t doc_len, __u64 now_ns);

/* Closes every connection and the listening socket; safe to repeat. */
void ks_http_close(struct ks_http_server *srv);

/* Clients connected now (reading, writing or closing). */
int ks_http_clients(const struct ks_http_server *srv);

#endif
