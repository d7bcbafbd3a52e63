// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * http_serve.c - the agent's documents over HTTP (see http_serve.h).
 *
 * Each connection is a small state machine driven by ks_http_service:
 * READ (collect the header, at most KS_HTTP_HEADER_MAX bytes) -> WRITE
 * (status line and headers from c->out, then the body, resumed on POLLOUT
 * whenever the socket is full) -> LINGER (our FIN is sent; wait briefly for
 * the client's so that closing with its unread bytes does not send a RST
 * that could destroy the answer in flight) -> FREE. Every socket is
 * non-blocking and every loop is bounded, so one slow or hostile client
 * costs the agent a few system calls per wake-up, never a stall.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "http_serve.h"
#include "log.h"

#define METHOD_MAX        16  /* longer first words are not HTTP */
#define ACCEPTS_PER_CALL  64  /* bound the work of one wake-up */
#define DRAIN_READS       16  /* reads of 4 KiB per wake-up in LINGER */
#define ACCEPT_PAUSE_NS   100000000ULL /* out of fds: retry after 100 ms */
#define LISTEN_USAGE      "give PORT, :PORT or ADDR:PORT (e.g. 127.0.0.1:9180)"

enum ks_http_phase { PH_FREE, PH_READ, PH_WRITE, PH_LINGER };

/* A copy of the document, shared by the clients it is being sent to. */
struct ks_http_doc {
	unsigned long refs;
	size_t len;
	char data[];
};

struct ks_http_client {
	int fd;
	enum ks_http_phase phase;
	int status;                /* the answer's, once known */
	__u64 deadline_ns;         /* what it is depends on the phase */
	size_t in_len;
	size_t out_len;            /* status line, headers, short error body */
	size_t sent;               /* of out, then of the body */
	struct ks_http_doc *body;  /* GET 200 only: a reference */
	char out[512];
	char in[KS_HTTP_HEADER_MAX];
};

static __u64 header_timeout(const struct ks_http_server *srv)
{
	return srv->header_timeout_ns ? srv->header_timeout_ns
				      : KS_HTTP_HEADER_TIMEOUT_NS;
}

static __u64 send_timeout(const struct ks_http_server *srv)
{
	return srv->send_timeout_ns ? srv->send_timeout_ns
				    : KS_HTTP_SEND_TIMEOUT_NS;
}

static const char *flag_name(const struct ks_http_server *srv)
{
	return srv->flag ? srv->flag : "--listen";
}

static unsigned serves(const struct ks_http_server *srv)
{
	return srv->serves ? srv->serves : KS_HTTP_SERVES(KS_HTTP_ROUTING);
}

static void doc_put(struct ks_http_doc *d)
{
	if (d && !--d->refs)
		free(d);
}

static struct ks_http_doc *doc_new(const char *data, size_t len)
{
	struct ks_http_doc *d = malloc(sizeof(*d) + len);

	if (!d)
		return NULL;
	d->refs = 1; /* the server's own */
	d->len = len;
	memcpy(d->data, data, len);
	return d;
}

/*
 * A reference to a copy of doc. The copy is reused while the caller keeps
 * passing the same bytes (compared once per service call), so N readers of
 * a large document cost one copy, not N.
 */
static struct ks_http_doc *doc_get(struct ks_http_server *srv, const char *doc,
				   size_t len)
{
	struct ks_http_doc *d = srv->doc[KS_HTTP_ROUTING];

	if (!srv->doc_checked) {
		if (!d || d->len != len || memcmp(d->data, doc, len)) {
			d = doc_new(doc, len);
			if (!d)
				return NULL;
			doc_put(srv->doc[KS_HTTP_ROUTING]);
			srv->doc[KS_HTTP_ROUTING] = d;
		}
		srv->doc_checked = 1;
	}
	d->refs++;
	return d;
}

int ks_http_publish(struct ks_http_server *srv, enum ks_http_kind kind,
		    const char *data, size_t len)
{
	struct ks_http_doc *d;

	/* The routing document comes with each ks_http_service call. */
	if (kind == KS_HTTP_ROUTING || kind >= KS_HTTP_KINDS)
		return -EINVAL;
	d = doc_new(data, len);
	if (!d)
		return -ENOMEM;
	doc_put(srv->doc[kind]);
	srv->doc[kind] = d;
	return 0;
}

int ks_http_parse_listen(const char *spec, struct sockaddr_in *out, char *err,
			 size_t errlen)
{
	return ks_http_parse_addr("--listen", spec, out, err, errlen);
}

int ks_http_parse_addr(const char *flag, const char *spec,
		       struct sockaddr_in *out, char *err, size_t errlen)
{
	char host[INET_ADDRSTRLEN] = "127.0.0.1";
	const char *colon, *port_s = spec;
	unsigned long port = 0;
	size_t i;

	if (!spec || !*spec) {
		snprintf(err, errlen, "%s needs a value; " LISTEN_USAGE, flag);
		return -EINVAL;
	}
	colon = strrchr(spec, ':');
	if (colon) {
		size_t hl = (size_t)(colon - spec);

		port_s = colon + 1;
		if (hl >= sizeof(host)) {
			snprintf(err, errlen, "%s '%s': '%.*s' is not a dotted IPv4 address (names are not looked up); " LISTEN_USAGE,
				 flag, spec, (int)hl, spec);
			return -EINVAL;
		}
		if (hl) {
			memcpy(host, spec, hl);
			host[hl] = 0;
		}
	}
	for (i = 0; port_s[i] && i <= 5; i++) {
		if (port_s[i] < '0' || port_s[i] > '9')
			break;
		port = port * 10 + (unsigned long)(port_s[i] - '0');
	}
	if (!i || port_s[i] || port < 1 || port > 65535) {
		snprintf(err, errlen, "%s '%s': port '%s' is not a number from 1 to 65535; " LISTEN_USAGE,
			 flag, spec, port_s);
		return -EINVAL;
	}
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	out->sin_port = htons((unsigned short)port);
	if (inet_pton(AF_INET, host, &out->sin_addr) != 1) {
		snprintf(err, errlen, "%s '%s': '%s' is not a dotted IPv4 address (names are not looked up); " LISTEN_USAGE,
			 flag, spec, host);
		return -EINVAL;
	}
	return 0;
}

/* A zeroed server named name, its tunables kept; 0 or -ENOMEM. */
static int server_init(struct ks_http_server *srv, const char *name,
		       char *err, size_t errlen)
{
	__u64 ht = srv->header_timeout_ns, st = srv->send_timeout_ns;
	unsigned what = srv->serves;
	const char *flag = srv->flag;
	int i;

	memset(srv, 0, sizeof(*srv));
	srv->header_timeout_ns = ht;
	srv->send_timeout_ns = st;
	srv->serves = what;
	srv->flag = flag;
	srv->fd = -1;
	snprintf(srv->name, sizeof(srv->name), "%s", name);
	srv->clients = calloc(KS_HTTP_MAX_CLIENTS, sizeof(*srv->clients));
	if (!srv->clients) {
		snprintf(err, errlen, "cannot listen on %s: out of memory", srv->name);
		return -ENOMEM;
	}
	for (i = 0; i < KS_HTTP_MAX_CLIENTS; i++)
		srv->clients[i].fd = -1;
	return 0;
}

int ks_http_open(struct ks_http_server *srv, const struct sockaddr_in *addr,
		 char *err, size_t errlen)
{
	char ip[INET_ADDRSTRLEN] = "?", name[32];
	int one = 1, e;

	inet_ntop(AF_INET, &addr->sin_addr, ip, sizeof(ip));
	snprintf(name, sizeof(name), "%s:%u", ip, ntohs(addr->sin_port));
	e = server_init(srv, name, err, errlen);
	if (e)
		return e;
	srv->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (srv->fd < 0 ||
	    setsockopt(srv->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(srv->fd, (const struct sockaddr *)addr, sizeof(*addr)) ||
	    listen(srv->fd, 64)) {
		e = errno;
		snprintf(err, errlen, "cannot listen on %s: %s; give %s a free port on a local address",
			 srv->name, strerror(e), flag_name(srv));
		ks_http_close(srv);
		return -e;
	}
	return 0;
}

int ks_http_open_unix(struct ks_http_server *srv, const char *path, gid_t gid,
		      char *err, size_t errlen)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	int e;

	if (!*path || strlen(path) >= sizeof(a.sun_path)) {
		snprintf(err, errlen, "%s unix:%s: give a socket path of 1..%zu bytes",
			 flag_name(srv), path, sizeof(a.sun_path) - 1);
		return -EINVAL;
	}
	e = server_init(srv, path, err, errlen);
	if (e)
		return e;
	strcpy(a.sun_path, path);
	/* a socket left by an agent that died is ours to replace; one that
	 * answers belongs to a live server */
	if (lstat(path, &st) == 0) {
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int live = probe >= 0 && S_ISSOCK(st.st_mode) &&
			   !connect(probe, (const struct sockaddr *)&a,
				    sizeof(a));

		if (probe >= 0)
			close(probe);
		if (live) {
			snprintf(err, errlen, "cannot listen on unix:%s: a running server answers there; give another path",
				 path);
			ks_http_close(srv);
			return -EADDRINUSE;
		}
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "%s unix:%s: a file that is not a socket is there; remove it or give another path",
				 flag_name(srv), path);
			ks_http_close(srv);
			return -EEXIST;
		}
		unlink(path);
	}
	srv->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (srv->fd < 0 || bind(srv->fd, (const struct sockaddr *)&a, sizeof(a))) {
		e = errno;
		snprintf(err, errlen, "cannot listen on unix:%s: %s; check that its directory exists and is writable",
			 path, strerror(e));
		ks_http_close(srv);
		return -e;
	}
	snprintf(srv->unix_path, sizeof(srv->unix_path), "%s", path);
	if (chmod(path, gid == (gid_t)-1 ? 0600 : 0660) ||
	    (gid != (gid_t)-1 && chown(path, (uid_t)-1, gid)) ||
	    listen(srv->fd, 64)) {
		e = errno;
		snprintf(err, errlen, "cannot set up unix:%s: %s; check the directory",
			 path, strerror(e));
		ks_http_close(srv);
		return -e;
	}
	return 0;
}

int ks_http_pollfds(const struct ks_http_server *srv, struct pollfd *pfd,
		    int max)
{
	int i, n = 0;

	if (!srv->clients)
		return 0;
	if (!srv->accept_resume_ns && n < max)
		pfd[n++] = (struct pollfd){ .fd = srv->fd, .events = POLLIN };
	for (i = 0; i < KS_HTTP_MAX_CLIENTS && n < max; i++) {
		const struct ks_http_client *c = &srv->clients[i];

		if (c->phase == PH_FREE)
			continue;
		pfd[n++] = (struct pollfd){
			.fd = c->fd,
			.events = c->phase == PH_WRITE ? POLLOUT : POLLIN,
		};
	}
	return n;
}

int ks_http_timeout_ms(const struct ks_http_server *srv, __u64 now_ns)
{
	__u64 next = srv->accept_resume_ns, ms;
	int i;

	if (!srv->clients)
		return -1;
	for (i = 0; i < KS_HTTP_MAX_CLIENTS; i++) {
		const struct ks_http_client *c = &srv->clients[i];

		if (c->phase != PH_FREE && (!next || c->deadline_ns < next))
			next = c->deadline_ns;
	}
	if (!next)
		return -1;
	if (next <= now_ns)
		return 0;
	ms = (next - now_ns + 999999) / 1000000;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

int ks_http_poll_add(const struct ks_http_server *srv, struct pollfd *pfd,
		     int max, __u64 now_ns, int *timeout_ms)
{
	int t = ks_http_timeout_ms(srv, now_ns);

	if (t >= 0 && (*timeout_ms < 0 || t < *timeout_ms))
		*timeout_ms = t;
	return ks_http_pollfds(srv, pfd, max);
}

int ks_http_clients(const struct ks_http_server *srv)
{
	int i, n = 0;

	for (i = 0; srv->clients && i < KS_HTTP_MAX_CLIENTS; i++)
		n += srv->clients[i].phase != PH_FREE;
	return n;
}

static void client_close(struct ks_http_server *srv, struct ks_http_client *c,
			 int count_error)
{
	if (count_error)
		srv->stats.errors++;
	doc_put(c->body);
	close(c->fd);
	memset(c, 0, offsetof(struct ks_http_client, out));
	c->fd = -1;
	c->phase = PH_FREE;
}

/* Reads and drops what the client still sends; closes at its EOF. */
static void client_drain(struct ks_http_server *srv, struct ks_http_client *c)
{
	char sink[4096];
	int k;

	for (k = 0; k < DRAIN_READS; k++) {
		ssize_t r = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);

		if (r > 0)
			continue;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		client_close(srv, c, 0);
		return;
	}
}

static void client_write(struct ks_http_server *srv, struct ks_http_client *c,
			 __u64 now_ns)
{
	size_t body_len = c->body ? c->body->len : 0;

	while (c->sent < c->out_len + body_len) {
		struct iovec iov[2];
		struct msghdr m = { .msg_iov = iov };
		ssize_t r;

		if (c->sent < c->out_len)
			iov[m.msg_iovlen++] = (struct iovec){
				c->out + c->sent, c->out_len - c->sent };
		if (body_len) {
			size_t off = c->sent > c->out_len ? c->sent - c->out_len : 0;

			iov[m.msg_iovlen++] = (struct iovec){
				c->body->data + off, body_len - off };
		}
		r = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return; /* the socket is full: go on at POLLOUT */
		if (r <= 0) {
			client_close(srv, c, 1); /* reset or gone: cut short */
			return;
		}
		c->sent += (size_t)r;
		c->deadline_ns = now_ns + send_timeout(srv);
	}
	if (c->status == 200)
		srv->stats.served++;
	else
		srv->stats.errors++;
	doc_put(c->body);
	c->body = NULL;
	shutdown(c->fd, SHUT_WR);
	c->phase = PH_LINGER;
	c->deadline_ns = now_ns + KS_HTTP_LINGER_NS;
	client_drain(srv, c);
}

static const char *status_text(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	}
	return "Error";
}

/* Writes status line and headers (and an error's short text) into out. */
static size_t format_answer(char *out, size_t size, int status,
			    enum ks_http_kind kind, int head_only,
			    size_t body_len, const char *why)
{
	const char *type = kind == KS_HTTP_METRICS ? KS_HTTP_METRICS_TYPE :
						     "application/json";

	int n;

	n = snprintf(out, size,
		     "HTTP/1.1 %d %s\r\n"
		     "Content-Type: %s\r\n"
		     "Content-Length: %zu\r\n"
		     "Cache-Control: no-store\r\n"
		     "Connection: close\r\n"
		     "%s%s\r\n%s",
		     status, status_text(status),
		     status == 200 ? type : "text/plain; charset=utf-8",
		     status == 200 ? body_len : strlen(why),
		     status == 405 ? "Allow: GET, HEAD\r\n" : "",
		     status == 503 ? "Retry-After: 1\r\n" : "",
		     status == 200 || head_only ? "" : why);
	return n < 0 ? 0 : (size_t)n >= size ? size - 1 : (size_t)n;
}

/* Where the documents are, for a 404. */
static const char *not_found_text(const struct ks_http_server *srv)
{
	switch (serves(srv)) {
	case KS_HTTP_SERVES(KS_HTTP_METRICS):
		return "not found; the metrics are at /metrics\n";
	case KS_HTTP_SERVES(KS_HTTP_ROUTING) | KS_HTTP_SERVES(KS_HTTP_METRICS):
		return "not found; the routing document is at /routing.json, the metrics at /metrics\n";
	}
	return "not found; the routing document is at /routing.json\n";
}

static const char *error_text(const struct ks_http_server *srv, int status)
{
	switch (status) {
	case 404: return not_found_text(srv);
	case 405: return "method not allowed; use GET or HEAD\n";
	case 408: return "no complete request header in time\n";
	case 431: return "request header over 8192 bytes\n";
	case 500: return "out of memory\n";
	case 505: return "only HTTP/1.x is served\n";
	}
	return "bad request\n";
}

/*
 * Queues the answer and starts sending it. A 200 carries the routing
 * document passed in (doc) or the published document of kind.
 */
static void client_answer(struct ks_http_server *srv, struct ks_http_client *c,
			  int status, enum ks_http_kind kind, int head_only,
			  const char *doc, size_t doc_len, __u64 now_ns)
{
	const struct ks_http_doc *pub = srv->doc[kind];
	int ready = kind == KS_HTTP_ROUTING ? doc != NULL : pub != NULL;
	size_t len = kind == KS_HTTP_ROUTING ? doc_len : pub ? pub->len : 0;
	const char *why;

	if (status == 200 && !ready) {
		status = 503;
		why = kind == KS_HTTP_ROUTING ?
			      "the routing document is not ready yet; retry\n" :
			      "the metrics are not ready yet; retry\n";
	} else {
		if (status == 200 && !head_only) {
			if (kind == KS_HTTP_ROUTING) {
				c->body = doc_get(srv, doc, doc_len);
			} else {
				c->body = srv->doc[kind];
				c->body->refs++;
			}
			if (!c->body)
				status = 500;
		}
		why = error_text(srv, status);
	}
	c->status = status;
	c->out_len = format_answer(c->out, sizeof(c->out), status, kind,
				   head_only, len, why);
	c->sent = 0;
	c->phase = PH_WRITE;
	c->deadline_ns = now_ns + send_timeout(srv);
	client_write(srv, c, now_ns);
}

/* RFC 9110 token characters: what a method and a header name are made of. */
static int is_tchar(unsigned char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
	       (ch >= 'A' && ch <= 'Z') || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/*
 * True when the bytes so far cannot begin a request line ("METHOD "):
 * such clients (a TLS hello, binary junk) get 400 at once instead of
 * waiting out the header timeout.
 */
static int bad_start(const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (buf[i] == ' ')
			return i == 0;
		if (!is_tchar((unsigned char)buf[i]) || i >= METHOD_MAX)
			return 1;
	}
	return 0;
}

/* Length of the header through its blank line, or 0 while incomplete. */
static size_t header_end(const char *buf, size_t len, size_t from)
{
	size_t i;

	for (i = from; i + 1 < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i + 1] == '\n')
			return i + 2;
		if (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/* Length of the line at p without its LF and an optional CR before it. */
static size_t line_len(const char *p, const char *end, const char **next)
{
	const char *lf = memchr(p, '\n', (size_t)(end - p));
	size_t n;

	if (!lf)
		lf = end;
	*next = lf < end ? lf + 1 : end;
	n = (size_t)(lf - p);
	return n && p[n - 1] == '\r' ? n - 1 : n;
}

static int header_fields_ok(const char *p, const char *end)
{
	while (p < end) {
		const char *next, *colon;
		size_t n = line_len(p, end, &next), i;

		if (!n)
			return 1; /* the blank line */
		colon = memchr(p, ':', n);
		if (!colon || colon == p)
			return 0; /* also obs-fold lines: they start with SP */
		for (i = 0; p + i < colon; i++)
			if (!is_tchar((unsigned char)p[i]))
				return 0;
		for (i = (size_t)(colon - p) + 1; i < n; i++) {
			unsigned char ch = (unsigned char)p[i];

			if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
				return 0;
		}
		p = next;
	}
	return 1;
}

static int path_is(const char *t, size_t n, const char *path)
{
	return n == strlen(path) && !memcmp(t, path, n);
}

/* The kind of document at target t (n bytes, query ignored), or -1. */
static int path_kind(const struct ks_http_server *srv, const char *t, size_t n)
{
	size_t plen = 0;

	while (plen < n && t[plen] != '?' && t[plen] != '#')
		plen++;
	if ((serves(srv) & KS_HTTP_SERVES(KS_HTTP_ROUTING)) &&
	    (path_is(t, plen, "/") || path_is(t, plen, "/routing") ||
	     path_is(t, plen, "/routing.json")))
		return KS_HTTP_ROUTING;
	if ((serves(srv) & KS_HTTP_SERVES(KS_HTTP_METRICS)) &&
	    path_is(t, plen, "/metrics"))
		return KS_HTTP_METRICS;
	return -1;
}

/* The status for a complete header; *head_only for HEAD, *kind for 200. */
static int parse_request(const struct ks_http_server *srv, const char *buf,
			 size_t len, int *head_only, enum ks_http_kind *kind)
{
	int k;

	const char *end = buf + len, *fields, *sp1, *sp2, *ver, *tgt;
	size_t n = line_len(buf, end, &fields), mlen, tlen, i;

	sp1 = memchr(buf, ' ', n);
	if (!sp1)
		return 400;
	sp2 = memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - buf));
	if (!sp2)
		return 400;
	mlen = (size_t)(sp1 - buf);
	tgt = sp1 + 1;
	tlen = (size_t)(sp2 - tgt);
	ver = sp2 + 1;
	if (!mlen || !tlen || tgt[0] != '/')
		return 400;
	for (i = 0; i < mlen; i++)
		if (!is_tchar((unsigned char)buf[i]))
			return 400;
	for (i = 0; i < tlen; i++)
		if ((unsigned char)tgt[i] <= ' ' || (unsigned char)tgt[i] >= 0x7f)
			return 400;
	if ((size_t)(buf + n - ver) != 8 || memcmp(ver, "HTTP/", 5) ||
	    ver[5] < '0' || ver[5] > '9' || ver[6] != '.' || ver[7] < '0' ||
	    ver[7] > '9')
		return 400;
	if (!header_fields_ok(fields, end))
		return 400;
	if (ver[5] != '1')
		return 505;
	*head_only = mlen == 4 && !memcmp(buf, "HEAD", 4);
	if (!*head_only && !(mlen == 3 && !memcmp(buf, "GET", 3)))
		return 405;
	k = path_kind(srv, tgt, tlen);
	if (k < 0)
		return 404;
	*kind = (enum ks_http_kind)k;
	return 200;
}

static void client_read(struct ks_http_server *srv, struct ks_http_client *c,
			const char *doc, size_t doc_len, __u64 now_ns)
{
	for (;;) {
		size_t old = c->in_len, skip = 0, end;
		ssize_t r = recv(c->fd, c->in + old, sizeof(c->in) - old,
				 MSG_DONTWAIT);
		enum ks_http_kind kind = KS_HTTP_ROUTING;
		int head_only = 0, status;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r <= 0) { /* gone before a whole request: an error if it began one */
			client_close(srv, c, old > 0);
			return;
		}
		/* Empty lines before a request line are allowed (RFC 9112 2.2). */
		while (!old && skip < (size_t)r &&
		       (c->in[skip] == '\r' || c->in[skip] == '\n'))
			skip++;
		memmove(c->in + old, c->in + old + skip, (size_t)r - skip);
		c->in_len += (size_t)r - skip;

		if (bad_start(c->in, c->in_len)) {
			client_answer(srv, c, 400, KS_HTTP_ROUTING, 0, doc,
				      doc_len, now_ns);
			return;
		}
		end = header_end(c->in, c->in_len, old >= 2 ? old - 2 : 0);
		if (end) {
			status = parse_request(srv, c->in, end, &head_only,
					       &kind);
			client_answer(srv, c, status, kind, head_only, doc,
				      doc_len, now_ns);
			return;
		}
		if (c->in_len == sizeof(c->in)) {
			client_answer(srv, c, 431, KS_HTTP_ROUTING, 0, doc,
				      doc_len, now_ns);
			return;
		}
	}
}

static void client_step(struct ks_http_server *srv, struct ks_http_client *c,
			const char *doc, size_t doc_len, __u64 now_ns)
{
	switch (c->phase) {
	case PH_READ:
		client_read(srv, c, doc, doc_len, now_ns);
		break;
	case PH_WRITE:
		client_write(srv, c, now_ns);
		break;
	case PH_LINGER:
		client_drain(srv, c);
		break;
	case PH_FREE:
		break;
	}
}

/* All slots taken: a best-effort 503 on the new socket, then close it. */
static void turn_away(struct ks_http_server *srv, int fd)
{
	char msg[256], sink[4096];
	size_t n = format_answer(msg, sizeof(msg), 503, KS_HTTP_ROUTING, 0, 0,
				 "too many clients; retry\n");
	int k;

	/* A failed send changes nothing: the socket is closed either way. */
	send(fd, msg, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	shutdown(fd, SHUT_WR);
	/* Read what already came so the close sends FIN, not RST. */
	for (k = 0; k < 4 && recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; k++)
		;
	close(fd);
	srv->stats.errors++;
}

static void accept_clients(struct ks_http_server *srv, const char *doc,
			   size_t doc_len, __u64 now_ns)
{
	int k, i;

	for (k = 0; k < ACCEPTS_PER_CALL; k++) {
		struct ks_http_client *c = NULL;
		int fd = accept4(srv->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/* The listener stays readable: stop polling it
				 * for a while rather than spin. */
				ks_warn("agent: http %s: cannot accept: %s; pausing 100 ms",
					srv->name, strerror(errno));
				srv->accept_resume_ns = now_ns + ACCEPT_PAUSE_NS;
			}
			return;
		}
		for (i = 0; i < KS_HTTP_MAX_CLIENTS && !c; i++)
			if (srv->clients[i].phase == PH_FREE)
				c = &srv->clients[i];
		if (!c) {
			turn_away(srv, fd);
			continue;
		}
		c->fd = fd;
		c->phase = PH_READ;
		c->deadline_ns = now_ns + header_timeout(srv);
		/* The request usually came with the connection: no extra wake-up. */
		client_read(srv, c, doc, doc_len, now_ns);
	}
}

static void expire_clients(struct ks_http_server *srv, const char *doc,
			   size_t doc_len, __u64 now_ns)
{
	int i;

	for (i = 0; i < KS_HTTP_MAX_CLIENTS; i++) {
		struct ks_http_client *c = &srv->clients[i];

		if (c->phase == PH_FREE || c->deadline_ns > now_ns)
			continue;
		if (c->phase == PH_READ)
			client_answer(srv, c, 408, KS_HTTP_ROUTING, 0, doc,
				      doc_len, now_ns);
		else
			client_close(srv, c, c->phase == PH_WRITE);
	}
}

void ks_http_service(struct ks_http_server *srv, const struct pollfd *pfd,
		     int n, const char *doc, size_t doc_len, __u64 now_ns)
{
	int i, j, listen_ready = 0;

	if (!srv->clients)
		return;
	srv->doc_checked = 0;
	for (i = 0; i < n; i++) {
		if (!pfd[i].revents || pfd[i].fd < 0)
			continue;
		if (pfd[i].fd == srv->fd) {
			listen_ready = 1;
			continue;
		}
		for (j = 0; j < KS_HTTP_MAX_CLIENTS; j++) {
			struct ks_http_client *c = &srv->clients[j];

			if (c->phase != PH_FREE && c->fd == pfd[i].fd) {
				client_step(srv, c, doc, doc_len, now_ns);
				break;
			}
		}
	}
	if (srv->accept_resume_ns && now_ns >= srv->accept_resume_ns) {
		srv->accept_resume_ns = 0;
		listen_ready = 1;
	}
	if (listen_ready && !srv->accept_resume_ns)
		accept_clients(srv, doc, doc_len, now_ns);
	expire_clients(srv, doc, doc_len, now_ns);
}

void ks_http_close(struct ks_http_server *srv)
{
	int i;

	if (!srv->clients)
		return;
	for (i = 0; i < KS_HTTP_MAX_CLIENTS; i++)
		if (srv->clients[i].phase != PH_FREE)
			client_close(srv, &srv->clients[i], 0);
	free(srv->clients);
	srv->clients = NULL;
	for (i = 0; i < KS_HTTP_KINDS; i++) {
		doc_put(srv->doc[i]);
		srv->doc[i] = NULL;
	}
	if (srv->fd >= 0)
		close(srv->fd);
	srv->fd = -1;
	if (srv->unix_path[0])
		unlink(srv->unix_path);
	srv->unix_path[0] = '\0';
}
