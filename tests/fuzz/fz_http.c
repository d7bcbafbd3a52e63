// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fz_http.c - libFuzzer harness of the agent's HTTP glue (user/net/http_serve.c
 * around libmicrohttpd): the accept, the look at the first bytes and the
 * hand-over, the header timeout, the routing and the answers, driven the
 * way the agent drives them. Each input is one client, over a real TCP
 * connection sent in pieces with ks_http_service called between them and
 * until the answer is whole: half the inputs are raw bytes (junk, partial
 * and malformed requests: what the glue does around libmicrohttpd's
 * parser), the other half a well-formed request made from the input
 * (method, path, query, headers, HTTP/1.0 or 1.1, which documents the
 * server serves and whether the routing document exists), whose answer is
 * checked against the routing rules here. The harness listens on
 * 127.0.0.1 inside a network namespace of its own (tests/lib/kt_netns.c),
 * reachable from nowhere else, and the clock is the harness's, so
 * timeouts fire on demand.
 *
 * Checked for every request: one well-formed answer (status line, a
 * Content-Length that matches the body, the document itself for a 200
 * GET), the connection counted exactly once in served or errors, and no
 * client left behind once the connection is gone. For a well-formed
 * request also: the status the routes give (200, 404, 405, 503), the
 * headers of our answers (Cache-Control: no-store, Connection: close, the
 * Content-Type, Allow, Retry-After) and served for a 200, errors otherwise.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "net/http_serve.h"
#include "kt_netns.h"
#include "fz_common.h"

static const char doc[] = "{\"version\":1,\"keys\":[]}";
static const char metrics[] = "# TYPE keysteer_up gauge\nkeysteer_up 1\n";

static struct ks_http_server srv;
static struct sockaddr_in addr;
static __u64 now_ns = 1000000000ULL;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	socklen_t alen = sizeof(addr);
	struct pollfd pfd;
	char err[256];
	int e;

	(void)argc;
	(void)argv;
	e = kt_private_netns();
	if (e) {
		fprintf(stderr,
			"fz_http: needs root for a network namespace: %s\n",
			strerror(-e));
		exit(1);
	}
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (ks_http_open(&srv, &addr, err, sizeof(err))) {
		fprintf(stderr, "fz_http: %s\n", err);
		exit(1);
	}
	if (ks_http_publish(&srv, KS_HTTP_METRICS, metrics,
			    sizeof(metrics) - 1)) {
		fprintf(stderr, "fz_http: cannot publish the metrics\n");
		exit(1);
	}
	/* port 0 took a free one: find which */
	if (ks_http_pollfds(&srv, &pfd, 1) != 1 ||
	    getsockname(pfd.fd, (struct sockaddr *)&addr, &alen)) {
		fprintf(stderr, "fz_http: no listening socket\n");
		exit(1);
	}
	return 0;
}

/* One pass of the agent's loop: poll without waiting, then service. */
static void service(const char *d, size_t dlen)
{
	struct pollfd pfd[KS_HTTP_POLLFDS];
	int n = ks_http_pollfds(&srv, pfd, KS_HTTP_POLLFDS);

	poll(pfd, (nfds_t)n, 0);
	ks_http_service(&srv, pfd, n, d, dlen, now_ns);
}

/* Reads what the server sent so far; returns 1 at its EOF. */
static int drain(int fd, char *buf, size_t size, size_t *len)
{
	for (;;) {
		ssize_t r = recv(fd, buf + *len, size - *len, MSG_DONTWAIT);

		if (r > 0) {
			*len += (size_t)r;
			if (*len == size)
				return 1; /* more than any answer: stop */
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		return r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
	}
}

static size_t content_length(const char *head, size_t hlen)
{
	const char *p = memmem(head, hlen, "\r\nContent-Length: ", 18);

	FZ_CHECK(p != NULL, "no Content-Length in '%.*s'", (int)hlen, head);
	return strtoul(p + 18, NULL, 10);
}

/* The value of header name in the answer's head, or "". */
static const char *header(const char *a, size_t hlen, const char *name,
			  char *val, size_t vlen)
{
	char key[64];
	const char *p, *e;
	int n = snprintf(key, sizeof(key), "\r\n%s: ", name);

	val[0] = 0;
	p = memmem(a, hlen, key, (size_t)n);
	if (p) {
		p += n;
		e = memmem(p, hlen - (size_t)(p - a), "\r\n", 2);
		snprintf(val, vlen, "%.*s", e ? (int)(e - p) : 0, p);
	}
	return val;
}

static int check_answer(const char *a, size_t len, const char *d, size_t dlen,
			int head)
{
	static const int known[] = {
		200, 400, 404, 405, 408, 431, 500, 503, 505
	};
	const char *end = memmem(a, len, "\r\n\r\n", 4);
	size_t hlen, blen, cl, i;
	int status = 0, ok = 0;

	FZ_CHECK(len >= 12 && !memcmp(a, "HTTP/1.1 ", 9), "answer '%.*s'",
		 (int)(len < 40 ? len : 40), a);
	status = atoi(a + 9);
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		ok |= status == known[i];
	FZ_CHECK(ok, "status %d", status);
	FZ_CHECK(end != NULL, "header not ended");
	hlen = (size_t)(end - a) + 4;
	/*
	 * An answer without our Cache-Control is libmicrohttpd's own, to a
	 * request it refused before routing (400, 431, 505): its framing is
	 * its own, and 0.9.75 writes the status line and headers of the 400
	 * for a malformed Content-Length twice (docs/fuzzing.md), so only
	 * the status is checked.
	 */
	if (!memmem(a, hlen, "\r\nCache-Control: no-store\r\n", 27)) {
		FZ_CHECK(status == 400 || status == 431 || status == 505,
			 "status %d from libmicrohttpd", status);
		return status;
	}
	blen = len - hlen;
	cl = content_length(a, hlen);
	if (head && blen == 0) /* HEAD: the length, no body */
		FZ_CHECK(status != 200 || cl == dlen,
			 "HEAD Content-Length %zu, doc %zu", cl, dlen);
	else
		FZ_CHECK(cl == blen, "Content-Length %zu, body %zu", cl, blen);
	if (status == 200 && blen)
		FZ_CHECK(blen == dlen && !memcmp(a + hlen, d, dlen),
			 "200 with a body that is not the document");
	return status;
}

/* ---- well-formed requests and what the routes answer ---- */

static const char *const methods[] = { "GET", "HEAD",   "POST",    "PUT",
				       "get", "DELETE", "OPTIONS", "GET" };
static const char *const paths[] = {
	"/",     "/routing",       "/routing.json", "/metrics",
	"/nope", "/routing.jsonx", "/metrics/",     "/routing.json"
};
static const unsigned serve_masks[] = {
	0,
	KS_HTTP_SERVES(KS_HTTP_METRICS),
	KS_HTTP_SERVES(KS_HTTP_ROUTING) | KS_HTTP_SERVES(KS_HTTP_METRICS),
	KS_HTTP_SERVES(KS_HTTP_ROUTING),
};

struct expect {
	int status;
	enum ks_http_kind kind; /* for a 200 */
	int head;
};

/*
 * A request line, a Host header, up to 4 header fields and a query made
 * of the input's bytes (letters and digits only: what libmicrohttpd passes
 * through unchanged), and the answer the routes owe it.
 */
static size_t make_request(struct fz_bytes *b, char *out, size_t size,
			   int have_doc, struct expect *x)
{
	uint8_t sel = fz_take_u8(b), nf = fz_take_u8(b);
	const char *m = methods[sel & 7], *path = paths[(sel >> 3) & 7];
	unsigned mask = srv.serves ? srv.serves
				   : KS_HTTP_SERVES(KS_HTTP_ROUTING);
	size_t n = 0, i;
	char q[32];

	for (i = 0; i < sizeof(q) - 1 && b->n; i++) {
		uint8_t c = fz_take_u8(b);

		q[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[c % 36];
	}
	q[i] = 0;
	n += (size_t)snprintf(out + n, size - n, "%s %s%s%s HTTP/1.%d\r\n", m,
			      path, sel & 0x40 ? "?" : "", sel & 0x40 ? q : "",
			      (sel & 0x80) ? 0 : 1);
	if (!(nf & 0x10))
		n += (size_t)snprintf(out + n, size - n, "Host: 127.0.0.1\r\n");
	for (i = 0; i < (nf & 3u); i++)
		n += (size_t)snprintf(out + n, size - n, "X-F%zu: %s\r\n", i,
				      q);
	n += (size_t)snprintf(out + n, size - n, "\r\n");

	x->head = !strcmp(m, "HEAD");
	x->kind = KS_HTTP_ROUTING;
	if (!x->head && strcmp(m, "GET")) {
		x->status = 405;
	} else if ((mask & KS_HTTP_SERVES(KS_HTTP_ROUTING)) &&
		   (!strcmp(path, "/") || !strcmp(path, "/routing") ||
		    !strcmp(path, "/routing.json"))) {
		x->status = have_doc ? 200 : 503;
	} else if ((mask & KS_HTTP_SERVES(KS_HTTP_METRICS)) &&
		   !strcmp(path, "/metrics")) {
		x->kind = KS_HTTP_METRICS;
		x->status = 200;
	} else {
		x->status = 404;
	}
	return n;
}

/* Our answers' headers, for the status the routes owe. */
static void check_routed(const char *a, size_t len, const struct expect *x,
			 int status)
{
	const char *end = memmem(a, len, "\r\n\r\n", 4);
	size_t hlen = end ? (size_t)(end - a) + 2 : len;
	char v[64];

	FZ_CHECK(status == x->status, "status %d, the routes give %d", status,
		 x->status);
	FZ_CHECK(!strcmp(header(a, hlen, "Cache-Control", v, sizeof(v)),
			 "no-store"),
		 "Cache-Control '%s'", v);
	FZ_CHECK(!strcmp(header(a, hlen, "Connection", v, sizeof(v)), "close"),
		 "Connection '%s'", v);
	header(a, hlen, "Content-Type", v, sizeof(v));
	if (status == 200)
		FZ_CHECK(!strcmp(v, x->kind == KS_HTTP_METRICS
					    ? KS_HTTP_METRICS_TYPE
					    : "application/json"),
			 "Content-Type '%s'", v);
	else
		FZ_CHECK(!strcmp(v, "text/plain; charset=utf-8"),
			 "Content-Type '%s'", v);
	if (status == 405)
		FZ_CHECK(!strcmp(header(a, hlen, "Allow", v, sizeof(v)),
				 "GET, HEAD"),
			 "Allow '%s'", v);
	if (status == 503)
		FZ_CHECK(!strcmp(header(a, hlen, "Retry-After", v, sizeof(v)),
				 "1"),
			 "Retry-After '%s'", v);
}

/* A HEAD request (after the empty lines RFC 9112 lets a client send
 * first): its answer may state a length and send no body. */
static int is_head(const uint8_t *p, size_t n)
{
	while (n && (*p == '\r' || *p == '\n'))
		p++, n--;
	return n >= 5 && !memcmp(p, "HEAD ", 5);
}

/*
 * A connected client socket. libFuzzer's timers interrupt system calls
 * (SIGALRM without SA_RESTART): an interrupted connect goes on in the
 * background, so wait for it rather than start another.
 */
static int connect_client(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), e = 0;
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	socklen_t elen = sizeof(e);

	FZ_CHECK(fd >= 0, "socket: %s", strerror(errno));
	if (!connect(fd, (struct sockaddr *)&addr, sizeof(addr)))
		return fd;
	FZ_CHECK(errno == EINTR, "connect: %s", strerror(errno));
	while (poll(&p, 1, 1000) < 0 && errno == EINTR)
		;
	FZ_CHECK(!getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen) && !e,
		 "connect: %s", strerror(e));
	return fd;
}

/* A request begun: some byte other than the empty lines before one. */
static int began(const uint8_t *p, size_t n)
{
	while (n && (*p == '\r' || *p == '\n'))
		p++, n--;
	return n > 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char answer[16384], req[512];
	struct fz_bytes b = { data, size };
	uint8_t how = fz_take_u8(&b), piece = fz_take_u8(&b);
	const char *d = how & 1 ? NULL : doc; /* no document yet: 503 */
	size_t dlen = d ? sizeof(doc) - 1 : 0, alen = 0, sent = 0;
	const char *want = d; /* the body of a 200 */
	size_t wlen = dlen;
	struct ks_http_stats before = srv.stats;
	struct linger rst = { 1, 0 };
	struct expect x = { 0 };
	int fd, rounds, eof = 0, routed = 0, status = 0;

	srv.serves = serve_masks[(how >> 2) & 3];
	if (how & 0x10) { /* a well-formed request made from the rest */
		size_t n = make_request(&b, req, sizeof(req), d != NULL, &x);

		b.p = (const uint8_t *)req;
		b.n = n;
		routed = !(how & 2); /* a shutdown may come before the end */
		if (x.status == 200 && x.kind == KS_HTTP_METRICS) {
			want = metrics;
			wlen = sizeof(metrics) - 1;
		}
	}

	fd = connect_client();
	service(d, dlen); /* accept */
	/* the request in pieces of 1..256 bytes, a service call after each */
	while (sent < b.n) {
		size_t n = piece ? piece : b.n;

		if (n > b.n - sent)
			n = b.n - sent;
		ssize_t w = send(fd, b.p + sent, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			break; /* the server answered and closed early */
		sent += (size_t)w;
		service(d, dlen);
	}
	if (how & 2)
		shutdown(fd, SHUT_WR); /* a client that stops sending */
	for (rounds = 0; rounds < 12 && !eof; rounds++) {
		service(d, dlen);
		eof = drain(fd, answer, sizeof(answer), &alen);
		if (!eof && rounds >= 2)
			now_ns += 3000000000ULL; /* let the timeouts fire */
	}
	FZ_CHECK(eof, "no whole answer after %d rounds (%zu bytes)", rounds,
		 alen);
	/* a client that stopped sending before its header was whole may get
	 * no answer; one that keeps the connection open always gets one */
	if (alen)
		status = check_answer(answer, alen, want, wlen,
				      is_head(b.p, b.n));
	if (routed) {
		FZ_CHECK(alen > 0, "no answer to '%.*s'", (int)b.n, b.p);
		check_routed(answer, alen, &x, status);
	}
	if (!alen)
		FZ_CHECK(how & 2, "no answer to a client that kept sending");
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst));
	close(fd);
	for (rounds = 0; rounds < 4 && ks_http_clients(&srv); rounds++) {
		now_ns += 2000000000ULL;
		service(d, dlen);
	}
	FZ_CHECK(ks_http_clients(&srv) == 0, "%d clients left",
		 ks_http_clients(&srv));
	/* counted once if answered or begun (http_serve.h), else never */
	FZ_CHECK(srv.stats.served + srv.stats.errors ==
			 before.served + before.errors +
				 (alen > 0 || began(b.p, b.n)),
		 "connection counted %llu times",
		 (unsigned long long)(srv.stats.served + srv.stats.errors -
				      before.served - before.errors));
	if (routed)
		FZ_CHECK(
			srv.stats.served - before.served == (x.status == 200),
			"status %d counted as served %llu times", x.status,
			(unsigned long long)(srv.stats.served - before.served));
	return 0;
}
