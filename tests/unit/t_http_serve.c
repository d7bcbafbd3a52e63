// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The routing document's HTTP server (user/net/http_serve.c) over real sockets.
 *
 * Each socket test runs in a forked child with a network namespace of its
 * own (kt_private_netns), so its port is reachable from nowhere else. The
 * child forks the server (a poll loop around ks_http_service, as the agent
 * runs it) and plays the clients itself with blocking sockets and
 * deadlines. The child sends its verdict up a pipe; the parent prints the
 * line, so a child that crashes or hangs is reported as FAIL, never lost.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "net/http_serve.h"
#include "kt_netns.h"
#include "ktest.h"
#include "util/clock.h"

#define HS_PORT 18080
/*
 * Guards, not expectations: an answer or a close ends each wait, so they
 * are long enough for a loaded 2-core machine and cost nothing otherwise.
 */
#define HS_CHILD_LIMIT  240   /* seconds for one test child */
#define HS_SERVER_LIMIT 250   /* seconds a server child may live */
#define HS_READ_LIMIT   60000 /* ms a client waits for a whole answer */
/* The header and send timeouts of a server whose test is not about them:
 * the product's 2 s header timeout would cut off a client the load kept
 * from sending for 2 s (at load 35 a process was seen to wait 6 s for the
 * CPU), and that is not what those tests look at. */
#define HS_TIMEOUT_ROOM_NS 120000000000ULL
#define BIG_DOC            (2u << 20)

static __u64 ms_since(__u64 t0)
{
	return (ks_mono_ns() - t0) / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* ---- client side ---------------------------------------------------- */

/* A connected blocking socket to the test server; rcvbuf 0: default. */
static int hs_connect(int rcvbuf)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(HS_PORT),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

static int hs_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t r = send(fd, p, len, MSG_NOSIGNAL);

		if (r <= 0)
			return -1;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

struct reply {
	char *raw; /* everything read, NUL-terminated */
	size_t len;
	int eof;         /* the server closed (FIN, or RST after data) */
	int status;      /* from the status line; 0 if none */
	size_t head_len; /* through the blank line */
	const char *body;
	size_t body_len;
};

/*
 * Reads until EOF, limit_ms, or (stop_at > 0) stop_at bytes in all, in
 * chunks of at most chunk bytes with pause_ms between them (a slow reader).
 */
static void hs_read(int fd, struct reply *r, size_t chunk, unsigned pause_ms,
		    int limit_ms, size_t stop_at)
{
	__u64 t0 = ks_mono_ns();
	size_t cap = r->len;

	while (!r->eof && (int)ms_since(t0) < limit_ms &&
	       (!stop_at || r->len < stop_at)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 50) <= 0)
			continue;
		if (r->len + chunk + 1 > cap) {
			cap = (r->len + chunk + 1) * 2;
			r->raw = realloc(r->raw, cap);
			if (!r->raw)
				return;
		}
		n = recv(fd, r->raw + r->len, chunk, 0);
		if (n > 0)
			r->len += (size_t)n;
		else if (n == 0 || (errno == ECONNRESET && r->len))
			r->eof = 1;
		else if (errno != EINTR)
			break;
		if (pause_ms)
			sleep_ms(pause_ms);
	}
	if (r->raw)
		r->raw[r->len] = 0;
}

static void hs_parse(struct reply *r)
{
	char *end;

	r->status = 0;
	if (!r->raw || strncmp(r->raw, "HTTP/1.1 ", 9))
		return;
	r->status = atoi(r->raw + 9);
	end = strstr(r->raw, "\r\n\r\n");
	if (!end)
		return;
	r->head_len = (size_t)(end + 4 - r->raw);
	r->body = r->raw + r->head_len;
	r->body_len = r->len - r->head_len;
}

static void hs_free(struct reply *r)
{
	free(r->raw);
	memset(r, 0, sizeof(*r));
}

/* The value of header name (exact case, as we send it), or "". */
static const char *hs_header(const struct reply *r, const char *name, char *val,
			     size_t vlen)
{
	const char *p = r->raw;
	size_t nl = strlen(name);

	val[0] = 0;
	while (p && (p = strstr(p, "\r\n")) && p < r->raw + r->head_len) {
		p += 2;
		if (!strncmp(p, name, nl) && p[nl] == ':') {
			const char *v = p + nl + 1, *e = strstr(v, "\r\n");

			while (*v == ' ')
				v++;
			snprintf(val, vlen, "%.*s", e ? (int)(e - v) : 0, v);
			break;
		}
	}
	return val;
}

/* One request on a fresh connection, the whole answer read. */
static int hs_exchange(const void *req, size_t len, struct reply *r)
{
	int fd = hs_connect(0);

	memset(r, 0, sizeof(*r));
	if (fd < 0)
		return -1;
	if (hs_send(fd, req, len)) {
		close(fd);
		return -1;
	}
	hs_read(fd, r, 65536, 0, HS_READ_LIMIT, 0);
	close(fd);
	hs_parse(r);
	return r->eof ? 0 : -1;
}

static int hs_get(const char *req, struct reply *r)
{
	return hs_exchange(req, strlen(req), r);
}

/* ---- server side ------------------------------------------------------ */

struct server_figures {
	struct ks_http_stats stats;
	int clients_left;
};

/*
 * What server_start's server serves (0: the routing document alone) and
 * the metrics it publishes before forking (NULL: none yet). Each test runs
 * in a child of its own, so setting them touches no other test.
 */
static unsigned fx_serves;
static const char *fx_metrics;

struct fixture {
	pid_t pid;
	int ctl;    /* 'B' switches the document in place; closing stops */
	int result; /* 'k' for each switch done, struct server_figures at exit */
};

/* The agent's loop in miniature: poll, then service, events or not. */
static void serve(struct ks_http_server *srv, int ctl, int result,
		  const char *doc_a, const char *doc_b, size_t len)
{
	struct server_figures fig = {};
	__u64 stop = ks_mono_ns() + HS_SERVER_LIMIT * 1000000000ULL;
	/* One buffer rewritten in place, as an agent may: the server must
	 * have copied what it is still sending. */
	char *doc = doc_a ? malloc(len ? len : 1) : NULL;

	if (doc)
		memcpy(doc, doc_a, len);
	while (ks_mono_ns() < stop) {
		struct pollfd pfd[1 + KS_HTTP_POLLFDS];
		int n, t = ks_http_timeout_ms(srv, ks_mono_ns());
		char b;

		pfd[0] = (struct pollfd){ .fd = ctl, .events = POLLIN };
		n = ks_http_pollfds(srv, pfd + 1, KS_HTTP_POLLFDS);
		if (poll(pfd, (nfds_t)n + 1, t < 0 || t > 200 ? 200 : t) < 0 &&
		    errno != EINTR)
			break;
		if (pfd[0].revents) {
			if (read(ctl, &b, 1) != 1)
				break;
			if (b == 'B' && doc && doc_b)
				memcpy(doc, doc_b, len);
			if (write(result, "k", 1) != 1)
				break;
		}
		ks_http_service(srv, pfd + 1, n, doc, len, ks_mono_ns());
	}
	fig.stats = srv->stats;
	fig.clients_left = ks_http_clients(srv);
	if (write(result, &fig, sizeof(fig)) != sizeof(fig))
		_exit(3);
	ks_http_close(srv);
	free(doc);
}

/*
 * Opens the server here (so clients can connect as soon as this returns)
 * and forks its loop. doc_a NULL: no document yet. sndbuf > 0 caps the
 * send buffer of every connection (accepted sockets inherit it from the
 * listener), so a large answer must be written in many pieces.
 */
static int server_start(struct fixture *fx, const char *doc_a,
			const char *doc_b, size_t len, __u64 header_timeout_ns,
			int sndbuf)
{
	struct ks_http_server srv = {
		.header_timeout_ns = header_timeout_ns ? header_timeout_ns
						       : HS_TIMEOUT_ROOM_NS,
		.send_timeout_ns = HS_TIMEOUT_ROOM_NS,
		.serves = fx_serves
	};
	struct sockaddr_in addr;
	char err[256];
	int ctl[2], res[2];

	if (ks_http_parse_listen("127.0.0.1:18080", &addr, err, sizeof(err)) ||
	    ks_http_open(&srv, &addr, err, sizeof(err))) {
		CHECK(0, "server: %s", err);
		return -1;
	}
	if (fx_metrics && ks_http_publish(&srv, KS_HTTP_METRICS, fx_metrics,
					  strlen(fx_metrics))) {
		CHECK(0, "cannot publish the metrics");
		ks_http_close(&srv);
		return -1;
	}
	if (sndbuf)
		setsockopt(srv.fd, SOL_SOCKET, SO_SNDBUF, &sndbuf,
			   sizeof(sndbuf));
	if (pipe2(ctl, O_CLOEXEC) || pipe2(res, O_CLOEXEC)) {
		CHECK(0, "pipe: %s", strerror(errno));
		ks_http_close(&srv);
		return -1;
	}
	fflush(stdout);
	fx->pid = fork();
	if (fx->pid == 0) {
		/* Never outlive the test child, whatever happens to it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(ctl[1]);
		close(res[0]);
		serve(&srv, ctl[0], res[1], doc_a, doc_b, len);
		_exit(0);
	}
	ks_http_close(
		&srv); /* our copy of the listener; the server has its own */
	close(ctl[0]);
	close(res[1]);
	fx->ctl = ctl[1];
	fx->result = res[0];
	if (fx->pid < 0) {
		CHECK(0, "fork: %s", strerror(errno));
		close(fx->ctl);
		close(fx->result);
		return -1;
	}
	return 0;
}

/*
 * Switches the server's document and waits until it has: a request that
 * completes in a service call still under way is owed the old one.
 */
static void server_switch_doc(struct fixture *fx)
{
	char k = 0;

	CHECK(write(fx->ctl, "B", 1) == 1 && read(fx->result, &k, 1) == 1 &&
		      k == 'k',
	      "the server did not switch its document");
}

/* Stops the server; 0 with its figures, or -1 (a FAIL recorded). */
static int server_stop(struct fixture *fx, struct server_figures *fig)
{
	ssize_t n;
	int st = 0;

	close(fx->ctl);
	n = read(fx->result, fig, sizeof(*fig));
	close(fx->result);
	waitpid(fx->pid, &st, 0);
	if (WIFSIGNALED(st)) {
		CHECK(0, "server killed by signal %d (%s)", WTERMSIG(st),
		      strsignal(WTERMSIG(st)));
		return -1;
	}
	CHECK(n == sizeof(*fig) && WIFEXITED(st) && !WEXITSTATUS(st),
	      "server ended badly (status %d, %zd bytes of figures)", st, n);
	return n == sizeof(*fig) ? 0 : -1;
}

/* Stops the server and checks what it counted. */
static void server_stop_expect(struct fixture *fx, __u64 served, __u64 errors)
{
	struct server_figures fig;

	if (server_stop(fx, &fig))
		return;
	CHECK(fig.stats.served == served && fig.stats.errors == errors,
	      "server counted %llu served, %llu errors; want %llu, %llu",
	      (unsigned long long)fig.stats.served,
	      (unsigned long long)fig.stats.errors, (unsigned long long)served,
	      (unsigned long long)errors);
}

/* ---- the isolated tests ------------------------------------------------ */

static const char small_doc[] =
	"{\"ring_version\":7,\"hot\":[{\"key\":\"sale:1\",\"copies\":3,"
	"\"replicas\":[\"198.18.0.10:11211\",\"198.18.0.11:11211\"]}]}\n";

static void check_doc_reply(const struct reply *r, const char *doc, size_t len,
			    int head_only, const char *what)
{
	char v[64], want[32];

	CHECK(r->status == 200, "%s: status %d, want 200 (%.60s)", what,
	      r->status, r->raw ? r->raw : "");
	CHECK(!strcmp(hs_header(r, "Content-Type", v, sizeof(v)),
		      "application/json"),
	      "%s: Content-Type '%s'", what, v);
	snprintf(want, sizeof(want), "%zu", len);
	CHECK(!strcmp(hs_header(r, "Content-Length", v, sizeof(v)), want),
	      "%s: Content-Length '%s', want %s", what, v, want);
	CHECK(!strcmp(hs_header(r, "Cache-Control", v, sizeof(v)), "no-store"),
	      "%s: Cache-Control '%s'", what, v);
	CHECK(!strcmp(hs_header(r, "Connection", v, sizeof(v)), "close"),
	      "%s: Connection '%s'", what, v);
	if (head_only)
		CHECK(r->body_len == 0, "%s: %zu body bytes after HEAD", what,
		      r->body_len);
	else
		CHECK(r->body_len == len && !memcmp(r->body, doc, len),
		      "%s: body of %zu bytes is not the %zu-byte document",
		      what, r->body_len, len);
}

static void t_get(void)
{
	static const char *const reqs[] = {
		"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"GET /routing HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n",
		"GET /routing.json HTTP/1.0\r\n\r\n",
		"GET /routing.json?since=6 HTTP/1.1\r\nHost: x\r\n\r\n",
		"\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", /* empty line first */
		"GET / HTTP/1.1\nHost: x\n\n",           /* bare LF endings */
	};
	struct fixture fx;
	struct reply r;
	size_t i, len = strlen(small_doc);

	if (server_start(&fx, small_doc, NULL, len, 0, 0))
		return;
	for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		CHECK(!hs_get(reqs[i], &r), "request %zu: no whole answer", i);
		check_doc_reply(&r, small_doc, len, 0, reqs[i]);
		hs_free(&r);
	}
	server_stop_expect(&fx, 6, 0);
}

static void t_head(void)
{
	struct fixture fx;
	struct reply r;
	size_t len = strlen(small_doc);

	if (server_start(&fx, small_doc, NULL, len, 0, 0))
		return;
	CHECK(!hs_get("HEAD /routing.json HTTP/1.1\r\nHost: x\r\n\r\n", &r),
	      "HEAD: no whole answer");
	check_doc_reply(&r, small_doc, len, 1, "HEAD");
	CHECK(r.len == r.head_len, "HEAD: %zu bytes past the header",
	      r.len - r.head_len);
	hs_free(&r);
	server_stop_expect(&fx, 1, 0);
}

/*
 * An error answer: status, close, a body that matches its Content-Length
 * (none after HEAD); ours (not one libmicrohttpd made itself for a request
 * it refused) also no-store and the Allow of a 405.
 */
static void check_error_from(const char *req, size_t len, int want,
			     int head_only, int ours)
{
	struct reply r;
	char v[64];

	CHECK(!hs_exchange(req, len, &r), "'%.30s': no whole answer", req);
	CHECK(r.status == want, "'%.30s': status %d, want %d", req, r.status,
	      want);
	CHECK(!strcmp(hs_header(&r, "Connection", v, sizeof(v)), "close"),
	      "'%.30s': Connection '%s'", req, v);
	if (ours)
		CHECK(!strcmp(hs_header(&r, "Cache-Control", v, sizeof(v)),
			      "no-store"),
		      "'%.30s': Cache-Control '%s'", req, v);
	CHECK(head_only
		      ? r.body_len == 0
		      : r.body_len > 0 &&
				r.body_len ==
					strtoul(hs_header(&r, "Content-Length",
							  v, sizeof(v)),
						NULL, 10),
	      "'%.30s': body of %zu bytes disagrees with Content-Length", req,
	      r.body_len);
	if (want == 405)
		CHECK(!strcmp(hs_header(&r, "Allow", v, sizeof(v)),
			      "GET, HEAD"),
		      "'%.30s': Allow '%s'", req, v);
	hs_free(&r);
}

static void check_error(const char *req, size_t len, int want, int head_only)
{
	check_error_from(req, len, want, head_only, 1);
}

#define ERR(req, want)     check_error(req, sizeof(req) - 1, want, 0)
#define MHD_ERR(req, want) check_error_from(req, sizeof(req) - 1, want, 0, 0)

static void t_not_found(void)
{
	struct fixture fx;

	if (server_start(&fx, small_doc, NULL, strlen(small_doc), 0, 0))
		return;
	ERR("GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", 404);
	ERR("GET /routing.jsonx HTTP/1.1\r\n\r\n", 404);
	ERR("GET /routing/ HTTP/1.1\r\n\r\n", 404);
	check_error("HEAD /nope HTTP/1.1\r\n\r\n", 23, 404, 1);
	server_stop_expect(&fx, 0, 4);
}

static void t_method(void)
{
	struct fixture fx;

	if (server_start(&fx, small_doc, NULL, strlen(small_doc), 0, 0))
		return;
	ERR("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
	    405);
	ERR("PUT /routing.json HTTP/1.1\r\n\r\n", 405);
	ERR("DELETE / HTTP/1.1\r\n\r\n", 405);
	ERR("get / HTTP/1.1\r\n\r\n", 405); /* methods are case-sensitive */
	server_stop_expect(&fx, 0, 4);
}

static void t_garbage(void)
{
	static const char tls_hello[] =
		"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03";
	static const char *const lenient[] = {
		"GET  / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\n folded: x\r\n\r\n",
		"GET / HTTP/1.1\r\nX: a\001b\r\n\r\n",
	};
	char big[KS_HTTP_HEADER_MAX + 1000];
	size_t i;
	struct fixture fx;
	struct reply r;
	__u64 t0;
	int n;

	if (server_start(&fx, small_doc, NULL, strlen(small_doc), 0, 0))
		return;
	/* A client that never sends a blank line still hears at once: a
	 * 400 (a 408 would be the header timeout), and well before that
	 * timeout's 120 s here. */
	t0 = ks_mono_ns();
	check_error(tls_hello, sizeof(tls_hello) - 1, 400, 0);
	CHECK(ms_since(t0) < HS_TIMEOUT_ROOM_NS / 2000000,
	      "TLS hello answered after %llu ms",
	      (unsigned long long)ms_since(t0));
	ERR("hello\r\n\r\n", 400);
	ERR("GET * HTTP/1.1\r\n\r\n", 400);
	/* Refused by libmicrohttpd itself: its status, its short HTML body. */
	MHD_ERR("GET /\r\n\r\n", 400); /* HTTP/0.9 */
	MHD_ERR("GET / HTTP/1.1 extra\r\n\r\n", 400);
	MHD_ERR("GET / HTTX/1.1\r\n\r\n", 400);
	MHD_ERR("GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400);
	MHD_ERR("GET / HTTP/2.0\r\n\r\n", 505);
	n = snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nX-Pad: ");
	memset(big + n, 'a', sizeof(big) - (size_t)n);
	check_error_from(big, sizeof(big), 431, 0, 0);
	/* A complete header over KS_HTTP_HEADER_MAX that libmicrohttpd took:
	 * our 431. */
	n = snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nX-Pad: ");
	memset(big + n, 'a', KS_HTTP_HEADER_MAX + 200 - (size_t)n);
	memcpy(big + KS_HTTP_HEADER_MAX + 200, "\r\n\r\n", 4);
	check_error(big, KS_HTTP_HEADER_MAX + 204, 431, 0);
	/*
	 * What libmicrohttpd reads leniently, as RFC 9112 and 9110 let a
	 * recipient (our own parser refused these with 400): a run of spaces
	 * between the words of the request line (RFC 9112 3), a whitespace-
	 * preceded line before the first field (2.2, skipped) and a control
	 * byte other than CR, LF or NUL in a field value (RFC 9110 5.5).
	 */
	for (i = 0; i < sizeof(lenient) / sizeof(lenient[0]); i++) {
		CHECK(!hs_get(lenient[i], &r) && r.status == 200,
		      "'%.30s': status %d, want 200", lenient[i], r.status);
		hs_free(&r);
	}
	/* and it still serves */
	CHECK(!hs_get("GET / HTTP/1.1\r\n\r\n", &r) && r.status == 200,
	      "no 200 after the garbage (status %d)", r.status);
	hs_free(&r);
	server_stop_expect(&fx, 4, 10);
}

static void t_no_doc(void)
{
	struct fixture fx;
	struct reply r;
	char v[16];

	if (server_start(&fx, NULL, NULL, 0, 0, 0))
		return;
	CHECK(!hs_get("GET /routing.json HTTP/1.1\r\n\r\n", &r),
	      "no whole answer");
	CHECK(r.status == 503, "status %d before any document, want 503",
	      r.status);
	CHECK(!strcmp(hs_header(&r, "Retry-After", v, sizeof(v)), "1"),
	      "Retry-After '%s'", v);
	hs_free(&r);
	server_stop_expect(&fx, 0, 1);
}

static const char metrics_doc[] =
	"# HELP keysteer_x A test.\n# TYPE keysteer_x gauge\nkeysteer_x 1\n";

/* One server for both paths (--metrics on the --listen address). */
static void t_metrics_path(void)
{
	static const char *const reqs[] = {
		"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /metrics?name[]=keysteer_x HTTP/1.0\r\n\r\n",
	};
	size_t i, mlen = strlen(metrics_doc), len = strlen(small_doc);
	struct fixture fx;
	struct reply r;
	char v[64];

	fx_serves = KS_HTTP_SERVES(KS_HTTP_ROUTING) |
		    KS_HTTP_SERVES(KS_HTTP_METRICS);
	fx_metrics = metrics_doc;
	if (server_start(&fx, small_doc, NULL, len, 0, 0))
		return;
	for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		CHECK(!hs_get(reqs[i], &r), "request %zu: no whole answer", i);
		CHECK(r.status == 200 && r.body_len == mlen &&
			      !memcmp(r.body, metrics_doc, mlen),
		      "%s: status %d, %zu body bytes", reqs[i], r.status,
		      r.body_len);
		CHECK(!strcmp(hs_header(&r, "Content-Type", v, sizeof(v)),
			      KS_HTTP_METRICS_TYPE),
		      "Content-Type '%s'", v);
		hs_free(&r);
	}
	CHECK(!hs_get("HEAD /metrics HTTP/1.1\r\n\r\n", &r), "HEAD: no answer");
	CHECK(r.status == 200 && r.body_len == 0 &&
		      strtoul(hs_header(&r, "Content-Length", v, sizeof(v)),
			      NULL, 10) == mlen,
	      "HEAD: status %d, Content-Length '%s'", r.status, v);
	hs_free(&r);
	CHECK(!hs_get("GET /routing HTTP/1.1\r\n\r\n", &r),
	      "routing: no answer");
	check_doc_reply(&r, small_doc, len, 0, "routing");
	hs_free(&r);
	CHECK(!hs_get("GET /metricsx HTTP/1.1\r\n\r\n", &r), "404: no answer");
	CHECK(r.status == 404 && r.body && strstr(r.body, "/metrics") &&
		      strstr(r.body, "/routing.json"),
	      "404: status %d, '%s'", r.status, r.body ? r.body : "");
	hs_free(&r);
	server_stop_expect(&fx, 4, 1);
}

/* A server of its own for --metrics: no routing paths, 503 until the
 * first rendering is published. */
static void t_metrics_only(void)
{
	static const char *const gone[] = {
		"GET / HTTP/1.1\r\n\r\n",
		"GET /routing.json HTTP/1.1\r\n\r\n",
	};
	struct fixture fx;
	struct reply r;
	size_t i;

	fx_serves = KS_HTTP_SERVES(KS_HTTP_METRICS);
	if (server_start(&fx, NULL, NULL, 0, 0, 0))
		return;
	CHECK(!hs_get("GET /metrics HTTP/1.1\r\n\r\n", &r), "no whole answer");
	CHECK(r.status == 503 && r.body && strstr(r.body, "metrics"),
	      "before publishing: status %d, '%s'", r.status,
	      r.body ? r.body : "");
	hs_free(&r);
	for (i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
		CHECK(!hs_get(gone[i], &r), "%s: no whole answer", gone[i]);
		CHECK(r.status == 404 && r.body &&
			      !strcmp(r.body,
				      "not found; the metrics are at /metrics\n"),
		      "%s: status %d, '%s'", gone[i], r.status,
		      r.body ? r.body : "");
		hs_free(&r);
	}
	server_stop_expect(&fx, 0, 3);
}

static void t_split(void)
{
	static const char *const parts[] = {
		"G",  "ET /rou", "ting.json HT", "TP/1.1\r\nHost: x\r",
		"\n", "\r\n",
	};
	struct fixture fx;
	struct reply r = {};
	size_t i, len = strlen(small_doc);
	int fd;

	if (server_start(&fx, small_doc, NULL, len, 0, 0))
		return;
	fd = hs_connect(0);
	CHECK(fd >= 0, "connect: %s", strerror(errno));
	for (i = 0; fd >= 0 && i < sizeof(parts) / sizeof(parts[0]); i++) {
		CHECK(!hs_send(fd, parts[i], strlen(parts[i])), "send part %zu",
		      i);
		sleep_ms(40);
	}
	if (fd >= 0) {
		hs_read(fd, &r, 65536, 0, HS_READ_LIMIT, 0);
		close(fd);
		hs_parse(&r);
		CHECK(r.eof, "no EOF after the answer");
		check_doc_reply(&r, small_doc, len, 0, "split request");
		hs_free(&r);
	}
	server_stop_expect(&fx, 1, 0);
}

/* Deterministic, position-dependent bytes: a reordered or mixed-up body
 * cannot compare equal. */
static char *make_doc(size_t len, unsigned seed)
{
	char *d = malloc(len);
	size_t i;

	for (i = 0; d && i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		d[i] = (char)('a' + (seed >> 16) % 26);
	}
	if (d && len > 2) {
		d[0] = '"';
		d[len - 1] = '"';
	}
	return d;
}

static void t_slow_reader(void)
{
	char *doc_a = make_doc(BIG_DOC, 1), *doc_b = make_doc(BIG_DOC, 2);
	const char *req = "GET /routing.json HTTP/1.1\r\nHost: x\r\n\r\n";
	struct reply slow = {}, fast = {};
	struct server_figures fig;
	struct fixture fx;
	__u64 t0, fast_ms, slow_ms;
	int fd;

	/* 256 KiB send buffers (512 KiB as the kernel counts) plus the slow
	 * client's 8 KiB receive buffer hold a fraction of 2 MiB: the server
	 * must stop on EAGAIN and go on at POLLOUT many times. */
	if (!doc_a || !doc_b ||
	    server_start(&fx, doc_a, doc_b, BIG_DOC, 0, 262144)) {
		CHECK(doc_a && doc_b, "out of memory");
		goto out;
	}
	t0 = ks_mono_ns();
	fd = hs_connect(8192);
	CHECK(fd >= 0 && !hs_send(fd, req, strlen(req)),
	      "slow client: connect/send");
	/* The first bytes prove its request is complete: it is owed doc A. */
	hs_read(fd, &slow, 4096, 0, HS_READ_LIMIT, 1);
	CHECK(slow.len > 0, "slow client: nothing within %d ms", HS_READ_LIMIT);
	server_switch_doc(&fx);

	/*
	 * Another client is served whole while the slow one is mid-way. The
	 * slow one reads nothing meanwhile (this is one thread), so a server
	 * that blocked on its full socket would never answer this one: the
	 * answer is the proof, however long the load made it take.
	 */
	{
		__u64 t1 = ks_mono_ns();

		CHECK(!hs_get(req, &fast),
		      "fast client: no whole answer in %llu ms",
		      (unsigned long long)ms_since(t1));
		fast_ms = ms_since(t1);
		check_doc_reply(&fast, doc_b, BIG_DOC, 0,
				"fast client (document after the switch)");
	}
	CHECK(slow.len < BIG_DOC / 2, "slow client had %zu bytes already",
	      slow.len);

	hs_read(fd, &slow, 8192, 1, 2 * HS_READ_LIMIT, 0);
	slow_ms = ms_since(t0);
	close(fd);
	hs_parse(&slow);
	CHECK(slow.eof, "slow client: no EOF after %llu ms and %zu bytes",
	      (unsigned long long)slow_ms, slow.len);
	check_doc_reply(&slow, doc_a, BIG_DOC, 0,
			"slow client (document when its request completed)");
	CHECK(slow_ms > fast_ms, "slow client was not slower (%llu vs %llu ms)",
	      (unsigned long long)slow_ms, (unsigned long long)fast_ms);
	/* How long one service call took is no check: load stretches any
	 * call, and the fast client's answer above already shows the server
	 * did not wait on the slow one. */
	if (!server_stop(&fx, &fig))
		CHECK_EQ(fig.stats.served, 2);
out:
	hs_free(&slow);
	hs_free(&fast);
	free(doc_a);
	free(doc_b);
}

static void t_idle_timeout(void)
{
	/* The bound is the property: the 408 comes at the limit, not before
	 * (the deadline runs from the accept, after t0), and not at
	 * libmicrohttpd's own timeout (120 s here, and silent); the upper side
	 * has 29 s of room for a loaded machine. */
	const __u64 limit_ns = 1000000000ULL;
	struct server_figures fig;
	struct fixture fx;
	struct reply idle = {}, partial = {}, r;
	__u64 t0, idle_ms;
	int a, b;

	if (server_start(&fx, small_doc, NULL, strlen(small_doc), limit_ns, 0))
		return;
	t0 = ks_mono_ns();
	a = hs_connect(0); /* sends nothing */
	b = hs_connect(0); /* sends half a header */
	CHECK(a >= 0 && b >= 0, "connect: %s", strerror(errno));
	if (a < 0 || b < 0)
		goto stop;
	hs_send(b, "GET / HTTP/1.1\r\nHost: x\r\n", 25);
	/* the server keeps serving others meanwhile */
	CHECK(!hs_get("GET / HTTP/1.1\r\n\r\n", &r) && r.status == 200,
	      "a third client was not served while two idled");
	hs_free(&r);

	hs_read(a, &idle, 4096, 0, HS_READ_LIMIT, 0);
	idle_ms = ms_since(t0);
	hs_read(b, &partial, 4096, 0, HS_READ_LIMIT, 0);
	hs_parse(&idle);
	hs_parse(&partial);
	CHECK(idle.eof && idle_ms >= 1000 && idle_ms < 30000,
	      "idle client closed after %llu ms (eof %d), want 1000 or a little more",
	      (unsigned long long)idle_ms, idle.eof);
	CHECK(idle.status == 408, "idle client: status %d, want 408",
	      idle.status);
	CHECK(partial.eof && partial.status == 408,
	      "half-header client: eof %d status %d, want 408", partial.eof,
	      partial.status);
stop:
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
	hs_free(&idle);
	hs_free(&partial);
	sleep_ms(100); /* let the server see both closes */
	if (!server_stop(&fx, &fig)) {
		CHECK_EQ(fig.stats.errors, 2);
		CHECK_EQ(fig.clients_left, 0);
	}
}

static void t_many_clients(void)
{
	enum {
		N = KS_HTTP_MAX_CLIENTS + 8
	};
	const char *req = "GET / HTTP/1.0\r\n\r\n";
	struct server_figures fig;
	struct fixture fx;
	int fd[N], i, ok = 0, busy = 0, other = 0;
	struct reply r;

	if (server_start(&fx, small_doc, NULL, strlen(small_doc), 0, 0))
		return;
	for (i = 0; i < N; i++) {
		fd[i] = hs_connect(0);
		if (fd[i] >= 0 && hs_send(fd[i], req, strlen(req))) {
			close(fd[i]);
			fd[i] = -1;
		}
	}
	/* Nobody hangs up until all have connected: slots stay taken. */
	for (i = 0; i < N; i++) {
		memset(&r, 0, sizeof(r));
		if (fd[i] >= 0)
			hs_read(fd[i], &r, 65536, 0, HS_READ_LIMIT, 0);
		hs_parse(&r);
		if (r.eof && r.status == 200 && r.body_len == strlen(small_doc))
			ok++;
		else if (r.eof && r.status == 503)
			busy++;
		else
			other++;
		hs_free(&r);
	}
	for (i = 0; i < N; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	CHECK(ok >= KS_HTTP_MAX_CLIENTS && ok + busy == N && !other,
	      "%d clients: %d got 200, %d got 503, %d neither", N, ok, busy,
	      other);
	sleep_ms(100);
	CHECK(!hs_get(req, &r) && r.status == 200,
	      "no 200 after the crowd left (status %d)", r.status);
	hs_free(&r);
	sleep_ms(100);
	if (!server_stop(&fx, &fig)) {
		CHECK_EQ(fig.stats.served, (unsigned)ok + 1);
		CHECK_EQ(fig.stats.errors, (unsigned)busy);
		CHECK_EQ(fig.clients_left, 0);
	}
}

static void t_listen_twice(void)
{
	struct ks_http_server a = {}, b = {};
	struct sockaddr_in addr;
	char err[256] = "";
	const char *want =
		"cannot listen on 127.0.0.1:18080: Address already in use";
	int rc;

	CHECK(!ks_http_parse_listen("18080", &addr, err, sizeof(err)), "%s",
	      err);
	CHECK(!ks_http_open(&a, &addr, err, sizeof(err)), "first: %s", err);
	rc = ks_http_open(&b, &addr, err, sizeof(err));
	CHECK(rc == -EADDRINUSE, "second open returned %d, want -EADDRINUSE",
	      rc);
	CHECK(!strncmp(err, want, strlen(want)), "message '%s'", err);
	CHECK(ks_http_pollfds(&b, NULL, 0) == 0,
	      "a failed server has poll fds");
	ks_http_close(&b);
	ks_http_close(&a);
	ks_http_close(&a); /* twice is harmless */
	CHECK(!ks_http_open(&b, &addr, err, sizeof(err)),
	      "reopen after close: %s", err);
	ks_http_close(&b);

	/* An address that is not on this host. */
	CHECK(!ks_http_parse_listen("198.18.0.1:18080", &addr, err,
				    sizeof(err)),
	      "%s", err);
	rc = ks_http_open(&b, &addr, err, sizeof(err));
	CHECK(rc == -EADDRNOTAVAIL && strstr(err, "198.18.0.1:18080"),
	      "foreign address: %d '%s'", rc, err);
	ks_http_close(&b);
}

/* ---- runner --------------------------------------------------------------- */

struct verdict {
	int failed, skipped;
	char why[sizeof(kt_cur.why)];
};

/*
 * Runs fn in a child in a private network namespace and prints its line
 * here: the child's verdict, or FAIL when it died, hung or said nothing.
 */
static void run_isolated(const char *name, void (*fn)(void))
{
	struct verdict v = {};
	int p[2], st = 0, got = 0, timed_out = 0;
	__u64 stop;
	pid_t pid;

	kt_begin(name);
	if (pipe2(p, O_CLOEXEC)) {
		CHECK(0, "pipe: %s", strerror(errno));
		kt_end();
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int e;

		close(p[0]);
		kt_begin(name);
		e = kt_private_netns();
		if (e)
			kt_skipf(
				"no private network namespace (%s); run as root",
				strerror(-e));
		else
			fn();
		v.failed = kt_cur.failed;
		v.skipped = kt_cur.skipped;
		memcpy(v.why, kt_cur.why, sizeof(v.why));
		_exit(write(p[1], &v, sizeof(v)) == sizeof(v) ? 0 : 2);
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		CHECK(0, "fork: %s", strerror(errno));
		kt_end();
		return;
	}
	stop = ks_mono_ns() + HS_CHILD_LIMIT * 1000000000ULL;
	while (!got) {
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		__u64 now = ks_mono_ns();

		if (now >= stop) {
			timed_out = 1;
			kill(pid, SIGKILL);
			break;
		}
		if (poll(&pfd, 1, (int)((stop - now) / 1000000) + 1) <= 0)
			continue;
		/* A verdict is one atomic pipe write (< PIPE_BUF); 0: died. */
		got = read(p[0], &v, sizeof(v)) == sizeof(v) ? 1 : -1;
	}
	close(p[0]);
	waitpid(pid, &st, 0);
	if (timed_out) {
		CHECK(0, "test child hung; killed after %d s", HS_CHILD_LIMIT);
	} else if (WIFSIGNALED(st)) {
		CHECK(0, "test child killed by signal %d (%s)", WTERMSIG(st),
		      strsignal(WTERMSIG(st)));
	} else if (got != 1 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		CHECK(0, "test child exited with status %d without a verdict",
		      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	} else {
		kt_cur.failed = v.failed;
		kt_cur.skipped = v.skipped;
		memcpy(kt_cur.why, v.why, sizeof(kt_cur.why));
	}
	kt_end();
}

static void t_parse_listen(void)
{
	static const struct {
		const char *spec, *addr;
		unsigned port;
	} good[] = {
		{ "9180", "127.0.0.1", 9180 },
		{ ":9180", "127.0.0.1", 9180 },
		{ "0.0.0.0:80", "0.0.0.0", 80 },
		{ "198.18.0.1:65535", "198.18.0.1", 65535 },
		{ "1", "127.0.0.1", 1 },
	};
	static const struct {
		const char *spec, *why;
	} bad[] = {
		{ "", "needs a value" },
		{ "0", "port '0'" },
		{ "65536", "port '65536'" },
		{ "1234567", "port '1234567'" },
		{ "abc", "port 'abc'" },
		{ ":", "port ''" },
		{ "127.0.0.1:", "port ''" },
		{ "80 ", "port '80 '" },
		{ "+80", "port '+80'" },
		{ "localhost:80", "'localhost' is not a dotted IPv4" },
		{ "1.2.3:80", "'1.2.3' is not a dotted IPv4" },
		{ "256.0.0.1:80", "'256.0.0.1' is not a dotted IPv4" },
		{ "::1:80", "'::1' is not a dotted IPv4" },
		{ "[::1]:80", "'[::1]' is not a dotted IPv4" },
		{ "a-very-long-host-name.example:80", "is not a dotted IPv4" },
	};
	struct sockaddr_in a;
	char err[256], ip[INET_ADDRSTRLEN], quoted[64];
	size_t i;

	kt_begin("http_parse_listen");
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		err[0] = 0;
		CHECK(!ks_http_parse_listen(good[i].spec, &a, err, sizeof(err)),
		      "'%s': %s", good[i].spec, err);
		inet_ntop(AF_INET, &a.sin_addr, ip, sizeof(ip));
		CHECK(a.sin_family == AF_INET && !strcmp(ip, good[i].addr) &&
			      ntohs(a.sin_port) == good[i].port,
		      "'%s' -> %s:%u", good[i].spec, ip, ntohs(a.sin_port));
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		snprintf(quoted, sizeof(quoted), "'%s'", bad[i].spec);
		CHECK(ks_http_parse_listen(bad[i].spec, &a, err, sizeof(err)) ==
			      -EINVAL,
		      "'%s' accepted", bad[i].spec);
		CHECK(strstr(err, bad[i].why) &&
			      (!*bad[i].spec || strstr(err, quoted)) &&
			      strstr(err, "ADDR:PORT"),
		      "'%s': message '%s'", bad[i].spec, err);
	}
	kt_end();
}

void test_http_serve(void);

void test_http_serve(void)
{
	t_parse_listen();
	run_isolated("http_get_document", t_get);
	run_isolated("http_head", t_head);
	run_isolated("http_not_found", t_not_found);
	run_isolated("http_method_not_allowed", t_method);
	run_isolated("http_garbage", t_garbage);
	run_isolated("http_no_document_yet", t_no_doc);
	run_isolated("http_split_request", t_split);
	run_isolated("http_slow_reader_2mib", t_slow_reader);
	run_isolated("http_idle_timeout", t_idle_timeout);
	run_isolated("http_many_clients", t_many_clients);
	run_isolated("http_listen_twice", t_listen_twice);
	run_isolated("http_metrics_path", t_metrics_path);
	run_isolated("http_metrics_only", t_metrics_only);
}
