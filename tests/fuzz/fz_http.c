// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fz_http.c - libFuzzer harness of the routing document's HTTP server
 * (user/http_serve.c), driven the way the agent drives it: the fuzz input
 * is one client's request, sent over a real TCP connection in pieces, and
 * ks_http_service is called between the pieces and until the answer is
 * whole. The parser is private to http_serve.c, so nothing new is exposed:
 * the harness listens on 127.0.0.1 inside a network namespace of its own
 * (tests/lib/kt_netns.c), reachable from nowhere else, and the clock is
 * the harness's, so timeouts fire on demand.
 *
 * Checked for every request: one well-formed answer (status line, a
 * Content-Length that matches the body, the document itself for a 200
 * GET), the connection counted exactly once in served or errors, and no
 * client left behind once the connection is gone.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "http_serve.h"
#include "kt_netns.h"
#include "fz_common.h"

static const char doc[] = "{\"version\":1,\"keys\":[]}";

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
		fprintf(stderr, "fz_http: needs root for a network namespace: %s\n",
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

static void check_answer(const char *a, size_t len, const char *d,
			 size_t dlen, int head)
{
	static const int known[] = { 200, 400, 404, 405, 408, 431, 500, 503, 505 };
	const char *end = memmem(a, len, "\r\n\r\n", 4);
	size_t hlen, blen, cl, i;
	int status = 0, ok = 0;

	FZ_CHECK(len >= 12 && !memcmp(a, "HTTP/1.1 ", 9),
		 "answer '%.*s'", (int)(len < 40 ? len : 40), a);
	status = atoi(a + 9);
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		ok |= status == known[i];
	FZ_CHECK(ok, "status %d", status);
	FZ_CHECK(end != NULL, "header not ended");
	hlen = (size_t)(end - a) + 4;
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
	static char answer[16384];
	struct fz_bytes b = { data, size };
	uint8_t how = fz_take_u8(&b), piece = fz_take_u8(&b);
	const char *d = how & 1 ? NULL : doc; /* no document yet: 503 */
	size_t dlen = d ? sizeof(doc) - 1 : 0, alen = 0, sent = 0;
	struct ks_http_stats before = srv.stats;
	struct linger rst = { 1, 0 };
	int fd, rounds, eof = 0;

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
	FZ_CHECK(eof, "no whole answer after %d rounds (%zu bytes)", rounds, alen);
	/* a client that stopped sending before its header was whole may get
	 * no answer; one that keeps the connection open always gets one */
	if (alen)
		check_answer(answer, alen, d, dlen, is_head(b.p, b.n));
	else
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
	return 0;
}
