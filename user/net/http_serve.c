// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * http_serve.c - the agent's documents over HTTP (see http_serve.h), with
 * Debian's libmicrohttpd doing the HTTP.
 *
 * What libmicrohttpd does: reading and parsing each request (request line,
 * header fields, their limits), answering HEAD, writing the answer while
 * the socket takes it, the inactivity timeout while it writes, closing.
 * It runs in external epoll mode (MHD_USE_EPOLL without a thread of its
 * own): its epoll fd sits in the agent's poll array and MHD_run, which
 * never blocks, does the work; the agent stays single-threaded.
 *
 * What stays here, and why:
 * - The listening socket, created and accepted here and each connection
 *   handed over with MHD_add_connection (MHD_USE_NO_LISTEN_SOCKET):
 *   unix:PATH sockets with their mode and group, a stale socket replaced,
 *   a live one refused; and the connection limit with a 503 to the client
 *   over it (libmicrohttpd would close such a connection without a word).
 * - The header timeout with a 408 and below a second (libmicrohttpd 0.9.75
 *   has one inactivity timeout in whole seconds and closes silently): a
 *   connection is handed over at its first byte, and one that has not
 *   completed its header by the deadline gets the 408 written on its
 *   socket here, then the socket shut down, which libmicrohttpd sees as
 *   the client's end and closes (it has nothing queued on that socket yet:
 *   no request has reached us).
 * - A look at the first bytes (MSG_PEEK) before the hand-over: bytes that
 *   cannot begin a request line (a TLS hello, binary junk, a first word
 *   that is not a method) get 400 at once; libmicrohttpd 0.9.75 would keep
 *   such a client until the timeout, or close without an answer. Empty
 *   lines before the request (RFC 9112 2.2) are read here so that the look
 *   sees the method; while only part of the method has come, the socket is
 *   looked at again every RECHECK_NS rather than polled (its bytes stay
 *   unread, so poll would wake at once).
 * - Routing and the answers: the paths, 404/405/503 with the texts the
 *   tests and users know, Cache-Control: no-store, Connection: close, and
 *   the documents as shared libmicrohttpd responses (one per document,
 *   queued to every client that asks, freed by libmicrohttpd when the last
 *   answer using it is done).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "net/http_serve.h"
#include "util/log.h"

#define METHOD_MAX        16           /* longer first words are not HTTP */
#define ACCEPTS_PER_CALL  64           /* bound the work of one wake-up */
#define ACCEPT_PAUSE_NS   100000000ULL /* out of fds: retry after 100 ms */
#define RECHECK_NS        10000000ULL  /* a method half sent: look again */
#define MHD_RUNS_PER_CALL 4            /* bound the work of one wake-up */
#define LISTEN_USAGE      "give PORT, :PORT or ADDR:PORT (e.g. 127.0.0.1:9180)"
/*
 * libmicrohttpd's memory per connection: the request header and the answer's
 * status line and headers share it. This size takes headers of a little over
 * KS_HTTP_HEADER_MAX and refuses (431) a header that does not fit it yet;
 * the access handler answers 431 to a complete one over KS_HTTP_HEADER_MAX.
 */
#define MHD_POOL_BYTES (KS_HTTP_HEADER_MAX + 512)

/* Accepted, not yet handed to libmicrohttpd: waiting for a first byte. */
struct ks_http_wait {
	int fd;            /* -1: slot free */
	__u64 deadline_ns; /* the header timeout, from accept */
	__u64 recheck_ns;  /* 0, or: part of a method came, look then */
	socklen_t alen;
	struct sockaddr_storage addr;
};

/* One connection handed to libmicrohttpd (its socket_context). */
struct ks_http_conn {
	struct ks_http_conn *next;
	int fd;
	__u64 deadline_ns; /* the header timeout, from accept */
	int presented;     /* a whole request reached on_request, or 408 */
	int counted;       /* in served or errors already */
	int status;        /* the answer queued by on_request */
};

struct ks_http_priv {
	struct ks_http_server *srv; /* refreshed at every entry point */
	struct MHD_Daemon *d;
	int epfd;               /* libmicrohttpd's epoll fd */
	int closing;            /* MHD_stop_daemon under way */
	__u64 accept_resume_ns; /* out of fds: accept again then */
	struct ks_http_wait wait[KS_HTTP_MAX_CLIENTS];
	struct ks_http_conn *conns; /* handed over, not yet closed */
	int nconns;
	/* The 200 answers: one libmicrohttpd response per document. */
	struct MHD_Response *resp[KS_HTTP_KINDS];
	const char *resp_data[KS_HTTP_KINDS];
	size_t resp_len[KS_HTTP_KINDS];
	/* The routing document of the ks_http_service call under way. */
	const char *doc;
	size_t doc_len;
	int doc_checked; /* compared with resp this call */
};

static __u64 header_timeout(const struct ks_http_server *srv)
{
	return srv->header_timeout_ns ? srv->header_timeout_ns
				      : KS_HTTP_HEADER_TIMEOUT_NS;
}

/* libmicrohttpd's inactivity timeout, whole seconds rounded up. */
static unsigned send_timeout_s(const struct ks_http_server *srv)
{
	__u64 ns = srv->send_timeout_ns ? srv->send_timeout_ns
					: KS_HTTP_SEND_TIMEOUT_NS;
	__u64 s = (ns + 999999999ULL) / 1000000000ULL;

	return s < 1 ? 1 : s > 86400 ? 86400 : (unsigned)s;
}

static const char *flag_name(const struct ks_http_server *srv)
{
	return srv->flag ? srv->flag : "--listen";
}

static unsigned serves(const struct ks_http_server *srv)
{
	return srv->serves ? srv->serves : KS_HTTP_SERVES(KS_HTTP_ROUTING);
}

/* ---- the answers ---------------------------------------------------- */

static const char *status_text(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 408:
		return "Request Timeout";
	case 503:
		return "Service Unavailable";
	}
	return "Error";
}

/*
 * An answer written here, on a socket libmicrohttpd does not (or no longer
 * may) answer: 400 to junk, 408, 503 when full. The same headers as the
 * answers made through libmicrohttpd.
 */
static size_t format_answer(char *out, size_t size, int status, const char *why)
{
	int n = snprintf(out, size,
			 "HTTP/1.1 %d %s\r\n"
			 "Content-Type: text/plain; charset=utf-8\r\n"
			 "Content-Length: %zu\r\n"
			 "Cache-Control: no-store\r\n"
			 "Connection: close\r\n"
			 "%s\r\n%s",
			 status, status_text(status), strlen(why),
			 status == 503 ? "Retry-After: 1\r\n" : "", why);

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
	case 404:
		return not_found_text(srv);
	case 405:
		return "method not allowed; use GET or HEAD\n";
	case 408:
		return "no complete request header in time\n";
	case 431:
		return "request header over 8192 bytes\n";
	case 500:
		return "out of memory\n";
	}
	return "bad request\n";
}

/*
 * Writes a whole short answer on fd (best effort: a socket that takes
 * nothing gets nothing), ends our side and reads what already came so that
 * the close that follows sends FIN, not RST.
 */
static void send_short(int fd, int status, const char *why)
{
	char msg[512], sink[4096];
	size_t n = format_answer(msg, sizeof(msg), status, why);
	int k;

	/* A failed send changes nothing: the socket is closed either way. */
	send(fd, msg, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	shutdown(fd, SHUT_WR);
	for (k = 0; k < 4 && recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0;
	     k++)
		;
}

/* The headers every answer made through libmicrohttpd carries. */
static int add_headers(struct MHD_Response *r, const char *type, int status)
{
	return MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) ==
		       MHD_YES &&
	       MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL,
				       "no-store") == MHD_YES &&
	       MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION,
				       "close") == MHD_YES &&
	       (status != 405 ||
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW,
					"GET, HEAD") == MHD_YES) &&
	       (status != 503 ||
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1") ==
			MHD_YES);
}

/* A 200 answer holding a copy of data; NULL when out of memory. */
static struct MHD_Response *doc_response(enum ks_http_kind kind,
					 const char *data, size_t len,
					 const char **copy)
{
	char *c = malloc(len ? len : 1);
	struct MHD_Response *r;

	if (!c)
		return NULL;
	memcpy(c, data, len);
	/* libmicrohttpd frees c with the response's last reference */
	r = MHD_create_response_from_buffer(len, c, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(c);
		return NULL;
	}
	if (!add_headers(r,
			 kind == KS_HTTP_METRICS ? KS_HTTP_METRICS_TYPE
						 : "application/json",
			 200)) {
		MHD_destroy_response(r);
		return NULL;
	}
	*copy = c;
	return r;
}

/* Makes r (or NULL) the answer for kind; the old one lives on in the
 * answers still using it. */
static void set_response(struct ks_http_priv *p, enum ks_http_kind kind,
			 struct MHD_Response *r, const char *data, size_t len)
{
	if (p->resp[kind])
		MHD_destroy_response(p->resp[kind]);
	p->resp[kind] = r;
	p->resp_data[kind] = r ? data : NULL;
	p->resp_len[kind] = r ? len : 0;
}

int ks_http_publish(struct ks_http_server *srv, enum ks_http_kind kind,
		    const char *data, size_t len)
{
	struct MHD_Response *r;
	const char *copy;

	/* The routing document comes with each ks_http_service call. */
	if (kind == KS_HTTP_ROUTING || kind >= KS_HTTP_KINDS || !srv->priv)
		return -EINVAL;
	r = doc_response(kind, data, len, &copy);
	if (!r)
		return -ENOMEM;
	set_response(srv->priv, kind, r, copy, len);
	return 0;
}

/*
 * The routing answer for the document of this service call. Its copy is
 * reused while the caller keeps passing the same bytes (compared once per
 * service call), so N readers of a large document cost one copy, not N.
 */
static struct MHD_Response *routing_response(struct ks_http_priv *p)
{
	enum ks_http_kind k = KS_HTTP_ROUTING;

	if (!p->doc_checked) {
		if (!p->resp[k] || p->resp_len[k] != p->doc_len ||
		    memcmp(p->resp_data[k], p->doc, p->doc_len)) {
			const char *copy;
			struct MHD_Response *r = doc_response(
				k, p->doc, p->doc_len, &copy);

			if (!r)
				return NULL;
			set_response(p, k, r, copy, p->doc_len);
		}
		p->doc_checked = 1;
	}
	return p->resp[k];
}

/* ---- what libmicrohttpd calls ----------------------------------------- */

static int path_is(const char *t, size_t n, const char *path)
{
	return n == strlen(path) && !memcmp(t, path, n);
}

/* The kind of document at url (libmicrohttpd has taken the query off), or -1. */
static int path_kind(const struct ks_http_server *srv, const char *url)
{
	size_t plen = strcspn(url, "?#");

	if ((serves(srv) & KS_HTTP_SERVES(KS_HTTP_ROUTING)) &&
	    (path_is(url, plen, "/") || path_is(url, plen, "/routing") ||
	     path_is(url, plen, "/routing.json")))
		return KS_HTTP_ROUTING;
	if ((serves(srv) & KS_HTTP_SERVES(KS_HTTP_METRICS)) &&
	    path_is(url, plen, "/metrics"))
		return KS_HTTP_METRICS;
	return -1;
}

static struct ks_http_conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *i = MHD_get_connection_info(
		c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return i ? i->socket_context : NULL;
}

/* Queues an error answer (status, our text); MHD_NO when that failed. */
static enum MHD_Result queue_error(struct ks_http_priv *p,
				   struct MHD_Connection *c, int status,
				   const char *why)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		strlen(why), (void *)why, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result rc = MHD_NO;

	if (r && add_headers(r, "text/plain; charset=utf-8", status))
		rc = MHD_queue_response(c, (unsigned)status, r);
	if (r)
		MHD_destroy_response(r);
	return rc;
}

/*
 * The access handler: called once the request header is whole (the first
 * call), and answers at once; a body, if any, is never read (the answer
 * says Connection: close).
 */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **req_cls)
{
	struct ks_http_priv *p = cls;
	struct ks_http_server *srv = p->srv;
	struct ks_http_conn *k = conn_of(c);
	const union MHD_ConnectionInfo *hs;
	struct MHD_Response *r = NULL;
	int status = 200, kind = KS_HTTP_ROUTING, head;
	enum MHD_Result rc;

	(void)version;
	(void)upload;
	(void)upload_size;
	if (*req_cls)
		return MHD_NO; /* answered at the first call already */
	*req_cls = p;
	if (k)
		k->presented = 1;
	hs = MHD_get_connection_info(c,
				     MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
	head = !strcmp(method, "HEAD");
	if (hs && hs->header_size > KS_HTTP_HEADER_MAX)
		status = 431;
	else if (url[0] != '/')
		status = 400; /* "*" or an absolute form: not ours to serve */
	else if (!head && strcmp(method, "GET"))
		status = 405;
	else if ((kind = path_kind(srv, url)) < 0)
		status = 404;
	if (status == 200 && kind == KS_HTTP_ROUTING) {
		r = p->doc ? routing_response(p) : NULL;
		status = r ? 200 : p->doc ? 500 : 503;
	} else if (status == 200) {
		r = p->resp[kind];
		status = r ? 200 : 503;
	}
	if (k)
		k->status = status;
	if (status == 200)
		return MHD_queue_response(c, 200, r);
	if (status == 503)
		rc = queue_error(
			p, c, 503,
			kind == KS_HTTP_ROUTING
				? "the routing document is not ready yet; retry\n"
				: "the metrics are not ready yet; retry\n");
	else
		rc = queue_error(p, c, status, error_text(srv, status));
	return rc;
}

/* A request presented to on_request is done: counted by how it ended. */
static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct ks_http_priv *p = cls;
	struct ks_http_conn *k = conn_of(c);

	(void)req_cls;
	if (!k || k->counted || p->closing)
		return;
	k->counted = 1;
	if (k->status == 200 && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		p->srv->stats.served++;
	else
		p->srv->stats.errors++; /* an error answer, or cut short */
}

static void on_connection(void *cls, struct MHD_Connection *c,
			  void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct ks_http_priv *p = cls;
	struct ks_http_conn *k, **pp;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *i = MHD_get_connection_info(
			c, MHD_CONNECTION_INFO_CONNECTION_FD);

		for (k = p->conns; k && i; k = k->next)
			if (k->fd == i->connect_fd) {
				*socket_context = k;
				break;
			}
		return;
	}
	k = *socket_context;
	if (!k)
		return;
	/* Every connection handed over had begun a request: one that ends
	 * unanswered (refused by libmicrohttpd, or abandoned) is an error. */
	if (!k->counted && !p->closing)
		p->srv->stats.errors++;
	for (pp = &p->conns; *pp; pp = &(*pp)->next)
		if (*pp == k) {
			*pp = k->next;
			break;
		}
	p->nconns--;
	free(k);
	*socket_context = NULL;
}

static void on_log(void *cls, const char *fmt, va_list ap)
{
	struct ks_http_priv *p = cls;
	char msg[256];
	size_t n;

	if (ks_log_level() < KS_LOG_DEBUG)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && msg[n - 1] == '\n')
		msg[--n] = 0;
	ks_debug("agent: http %s: libmicrohttpd: %s", p->srv->name, msg);
}

/* ---- opening ---------------------------------------------------------- */

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
			snprintf(
				err, errlen,
				"%s '%s': '%.*s' is not a dotted IPv4 address (names are not looked up); " LISTEN_USAGE,
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
		snprintf(
			err, errlen,
			"%s '%s': port '%s' is not a number from 1 to 65535; " LISTEN_USAGE,
			flag, spec, port_s);
		return -EINVAL;
	}
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	out->sin_port = htons((unsigned short)port);
	if (inet_pton(AF_INET, host, &out->sin_addr) != 1) {
		snprintf(
			err, errlen,
			"%s '%s': '%s' is not a dotted IPv4 address (names are not looked up); " LISTEN_USAGE,
			flag, spec, host);
		return -EINVAL;
	}
	return 0;
}

/* A zeroed server named name, its tunables kept, libmicrohttpd started
 * (no socket of its own: connections come from accept_clients). 0 or
 * -ENOMEM. */
static int server_init(struct ks_http_server *srv, const char *name, char *err,
		       size_t errlen)
{
	__u64 ht = srv->header_timeout_ns, st = srv->send_timeout_ns;
	unsigned what = srv->serves;
	const char *flag = srv->flag;
	const union MHD_DaemonInfo *info;
	struct ks_http_priv *p;
	int i;

	memset(srv, 0, sizeof(*srv));
	srv->header_timeout_ns = ht;
	srv->send_timeout_ns = st;
	srv->serves = what;
	srv->flag = flag;
	srv->fd = -1;
	snprintf(srv->name, sizeof(srv->name), "%s", name);
	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "cannot listen on %s: out of memory",
			 srv->name);
		return -ENOMEM;
	}
	p->srv = srv;
	for (i = 0; i < KS_HTTP_MAX_CLIENTS; i++)
		p->wait[i].fd = -1;
	srv->priv = p;
	p->d = MHD_start_daemon(
		MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ERROR_LOG, 0,
		NULL, NULL, on_request, p, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned)KS_HTTP_MAX_CLIENTS, MHD_OPTION_CONNECTION_TIMEOUT,
		send_timeout_s(srv), MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		(size_t)MHD_POOL_BYTES, MHD_OPTION_NOTIFY_COMPLETED,
		on_completed, p, MHD_OPTION_NOTIFY_CONNECTION, on_connection, p,
		MHD_OPTION_EXTERNAL_LOGGER, on_log, p, MHD_OPTION_END);
	info = p->d ? MHD_get_daemon_info(p->d, MHD_DAEMON_INFO_EPOLL_FD)
		    : NULL;
	if (!info) {
		snprintf(
			err, errlen,
			"cannot listen on %s: libmicrohttpd did not start (out of memory or file descriptors)",
			srv->name);
		ks_http_close(srv);
		return -ENOMEM;
	}
	p->epfd = info->epoll_fd;
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
	srv->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			 0);
	if (srv->fd < 0 ||
	    setsockopt(srv->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(srv->fd, (const struct sockaddr *)addr, sizeof(*addr)) ||
	    listen(srv->fd, 64)) {
		e = errno;
		snprintf(
			err, errlen,
			"cannot listen on %s: %s; give %s a free port on a local address",
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
		snprintf(err, errlen,
			 "%s unix:%s: give a socket path of 1..%zu bytes",
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
			snprintf(
				err, errlen,
				"cannot listen on unix:%s: a running server answers there; give another path",
				path);
			ks_http_close(srv);
			return -EADDRINUSE;
		}
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(
				err, errlen,
				"%s unix:%s: a file that is not a socket is there; remove it or give another path",
				flag_name(srv), path);
			ks_http_close(srv);
			return -EEXIST;
		}
		unlink(path);
	}
	srv->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			 0);
	if (srv->fd < 0 ||
	    bind(srv->fd, (const struct sockaddr *)&a, sizeof(a))) {
		e = errno;
		snprintf(
			err, errlen,
			"cannot listen on unix:%s: %s; check that its directory exists and is writable",
			path, strerror(e));
		ks_http_close(srv);
		return -e;
	}
	snprintf(srv->unix_path, sizeof(srv->unix_path), "%s", path);
	if (chmod(path, gid == (gid_t)-1 ? 0600 : 0660) ||
	    (gid != (gid_t)-1 && chown(path, (uid_t)-1, gid)) ||
	    listen(srv->fd, 64)) {
		e = errno;
		snprintf(err, errlen,
			 "cannot set up unix:%s: %s; check the directory", path,
			 strerror(e));
		ks_http_close(srv);
		return -e;
	}
	return 0;
}

int ks_http_pollfds(const struct ks_http_server *srv, struct pollfd *pfd,
		    int max)
{
	const struct ks_http_priv *p = srv->priv;
	int i, n = 0;

	if (!p)
		return 0;
	if (!p->accept_resume_ns && n < max)
		pfd[n++] = (struct pollfd){ .fd = srv->fd, .events = POLLIN };
	if (n < max)
		pfd[n++] = (struct pollfd){ .fd = p->epfd, .events = POLLIN };
	for (i = 0; i < KS_HTTP_MAX_CLIENTS && n < max; i++)
		if (p->wait[i].fd >= 0 && !p->wait[i].recheck_ns)
			pfd[n++] = (struct pollfd){ .fd = p->wait[i].fd,
						    .events = POLLIN };
	return n;
}

int ks_http_timeout_ms(const struct ks_http_server *srv, __u64 now_ns)
{
	const struct ks_http_priv *p = srv->priv;
	const struct ks_http_conn *k;
	MHD_UNSIGNED_LONG_LONG mhd_ms;
	__u64 next, ms;
	int i;

	if (!p)
		return -1;
	next = p->accept_resume_ns;
	for (i = 0; i < KS_HTTP_MAX_CLIENTS; i++) {
		const struct ks_http_wait *w = &p->wait[i];
		__u64 t = w->recheck_ns && w->recheck_ns < w->deadline_ns
				  ? w->recheck_ns
				  : w->deadline_ns;

		if (w->fd >= 0 && (!next || t < next))
			next = t;
	}
	for (k = p->conns; k; k = k->next)
		if (!k->presented && (!next || k->deadline_ns < next))
			next = k->deadline_ns;
	/* libmicrohttpd's own: its inactivity timeout, or 0 with work in hand */
	if (MHD_get_timeout(p->d, &mhd_ms) == MHD_YES &&
	    (!next || now_ns + mhd_ms * 1000000ULL < next))
		next = now_ns + mhd_ms * 1000000ULL;
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
	const struct ks_http_priv *p = srv->priv;
	int i, n;

	if (!p)
		return 0;
	n = p->nconns;
	for (i = 0; i < KS_HTTP_MAX_CLIENTS; i++)
		n += p->wait[i].fd >= 0;
	return n;
}

/* ---- connections not yet handed over ------------------------------------ */

/* RFC 9110 token characters: what a method is made of. */
static int is_tchar(unsigned char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
	       (ch >= 'A' && ch <= 'Z') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
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

static void wait_close(struct ks_http_wait *w)
{
	close(w->fd);
	w->fd = -1;
}

/* Hands w's connection to libmicrohttpd, which reads it from here on. */
static void hand_over(struct ks_http_server *srv, struct ks_http_wait *w)
{
	struct ks_http_priv *p = srv->priv;
	struct ks_http_conn *k = calloc(1, sizeof(*k));
	int fd = w->fd;

	w->fd = -1;
	if (!k) {
		send_short(fd, 500, "out of memory\n");
		close(fd);
		srv->stats.errors++;
		return;
	}
	k->fd = fd;
	k->deadline_ns = w->deadline_ns;
	k->next = p->conns;
	p->conns = k;
	p->nconns++;
	/* libmicrohttpd closes fd in any case; on failure it never started */
	if (MHD_add_connection(p->d, fd, (const struct sockaddr *)&w->addr,
			       w->alen) != MHD_YES) {
		int e = errno;

		if (p->conns == k) { /* no NOTIFY_STARTED/CLOSED came for it */
			p->conns = k->next;
			p->nconns--;
			free(k);
			srv->stats.errors++;
		}
		ks_debug(
			"agent: http %s: libmicrohttpd refused a connection: %s",
			srv->name, strerror(e));
	}
}

/*
 * The first bytes of a waiting connection: empty lines are read and
 * dropped, junk is answered 400, a method and its space are handed over,
 * part of a method is looked at again later; EOF before any byte closes
 * without counting.
 */
static void wait_step(struct ks_http_server *srv, struct ks_http_wait *w,
		      __u64 now_ns)
{
	char buf[METHOD_MAX + 1];
	int k;

	for (k = 0; k < 4; k++) {
		ssize_t r = recv(w->fd, buf, sizeof(buf),
				 MSG_PEEK | MSG_DONTWAIT);
		size_t skip = 0;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r <= 0) {
			wait_close(w); /* gone before a request began */
			return;
		}
		while (skip < (size_t)r &&
		       (buf[skip] == '\r' || buf[skip] == '\n'))
			skip++;
		if (skip) { /* empty lines before the request line: drop them */
			if (recv(w->fd, buf, skip, MSG_DONTWAIT) !=
			    (ssize_t)skip) {
				wait_close(w);
				return;
			}
			continue;
		}
		if (bad_start(buf, (size_t)r)) {
			send_short(w->fd, 400, "bad request\n");
			wait_close(w);
			srv->stats.errors++;
			return;
		}
		if (!memchr(buf, ' ', (size_t)r)) { /* the method goes on */
			w->recheck_ns = now_ns + RECHECK_NS;
			return;
		}
		w->recheck_ns = 0;
		hand_over(srv, w);
		return;
	}
}

static void accept_clients(struct ks_http_server *srv, __u64 now_ns)
{
	struct ks_http_priv *p = srv->priv;
	int k, i;

	for (k = 0; k < ACCEPTS_PER_CALL; k++) {
		struct ks_http_wait *w = NULL;
		struct sockaddr_storage addr;
		socklen_t alen = sizeof(addr);
		int fd = accept4(srv->fd, (struct sockaddr *)&addr, &alen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/* The listener stays readable: stop polling it
				 * for a while rather than spin. */
				ks_warn("agent: http %s: cannot accept: %s; pausing 100 ms",
					srv->name, strerror(errno));
				p->accept_resume_ns = now_ns + ACCEPT_PAUSE_NS;
			}
			return;
		}
		for (i = 0; i < KS_HTTP_MAX_CLIENTS && !w; i++)
			if (p->wait[i].fd < 0)
				w = &p->wait[i];
		if (!w || ks_http_clients(srv) >= KS_HTTP_MAX_CLIENTS) {
			/* All slots taken: a best-effort 503, then close. */
			send_short(fd, 503, "too many clients; retry\n");
			close(fd);
			srv->stats.errors++;
			continue;
		}
		w->fd = fd;
		w->deadline_ns = now_ns + header_timeout(srv);
		w->recheck_ns = 0;
		w->addr = addr;
		w->alen = alen;
		/* The request usually came with the connection: no extra wake-up. */
		wait_step(srv, w, now_ns);
	}
}

/* 408 to the clients whose header is not whole by their deadline. */
static int expire_clients(struct ks_http_server *srv, __u64 now_ns)
{
	struct ks_http_priv *p = srv->priv;
	const char *why = "no complete request header in time\n";
	struct ks_http_conn *k;
	int i, shut = 0;

	for (i = 0; i < KS_HTTP_MAX_CLIENTS; i++) {
		struct ks_http_wait *w = &p->wait[i];

		if (w->fd < 0 || w->deadline_ns > now_ns)
			continue;
		send_short(w->fd, 408, why);
		wait_close(w);
		srv->stats.errors++;
	}
	for (k = p->conns; k; k = k->next) {
		if (k->presented || k->deadline_ns > now_ns)
			continue;
		/* No request reached on_request, so libmicrohttpd has nothing
		 * queued on this socket: the 408 goes out whole, and the
		 * shutdown makes libmicrohttpd see the end and close it. */
		send_short(k->fd, 408, why);
		shutdown(k->fd, SHUT_RDWR);
		k->presented = k->counted = 1;
		srv->stats.errors++;
		shut = 1;
	}
	return shut;
}

/*
 * MHD_run, again while libmicrohttpd says it has work in hand (a timeout of
 * 0: an answer written, a close to finish), so that a request is answered
 * and closed in one service call rather than over several loop turns.
 */
static void mhd_run(struct ks_http_priv *p)
{
	MHD_UNSIGNED_LONG_LONG ms;
	int k;

	for (k = 0; k < MHD_RUNS_PER_CALL; k++) {
		MHD_run(p->d);
		if (MHD_get_timeout(p->d, &ms) != MHD_YES || ms > 0)
			break;
	}
}

void ks_http_service(struct ks_http_server *srv, const struct pollfd *pfd,
		     int n, const char *doc, size_t doc_len, __u64 now_ns)
{
	struct ks_http_priv *p = srv->priv;
	int i, j, listen_ready = 0;

	if (!p)
		return;
	p->srv = srv;
	p->doc = doc;
	p->doc_len = doc_len;
	p->doc_checked = 0;
	for (i = 0; i < n; i++) {
		if (!pfd[i].revents || pfd[i].fd < 0)
			continue;
		if (pfd[i].fd == srv->fd) {
			listen_ready = 1;
			continue;
		}
		for (j = 0; j < KS_HTTP_MAX_CLIENTS; j++)
			if (p->wait[j].fd == pfd[i].fd &&
			    !p->wait[j].recheck_ns) {
				wait_step(srv, &p->wait[j], now_ns);
				break;
			}
	}
	/* part of a method came: a peek each call (at most 16, never blocks) */
	for (j = 0; j < KS_HTTP_MAX_CLIENTS; j++)
		if (p->wait[j].fd >= 0 && p->wait[j].recheck_ns)
			wait_step(srv, &p->wait[j], now_ns);
	if (p->accept_resume_ns && now_ns >= p->accept_resume_ns) {
		p->accept_resume_ns = 0;
		listen_ready = 1;
	}
	if (listen_ready && !p->accept_resume_ns)
		accept_clients(srv, now_ns);
	/* Never blocks: libmicrohttpd polls its epoll fd with no timeout. */
	mhd_run(p);
	if (expire_clients(srv, now_ns))
		mhd_run(p);
	p->doc = NULL;
}

void ks_http_close(struct ks_http_server *srv)
{
	struct ks_http_priv *p = srv->priv;
	int i;

	if (p) {
		p->srv = srv;
		p->closing = 1;
		if (p->d)
			MHD_stop_daemon(p->d); /* closes its connections */
		for (i = 0; i < KS_HTTP_KINDS; i++)
			set_response(p, (enum ks_http_kind)i, NULL, NULL, 0);
		for (i = 0; i < KS_HTTP_MAX_CLIENTS; i++)
			if (p->wait[i].fd >= 0)
				wait_close(&p->wait[i]);
		while (p->conns) { /* only if libmicrohttpd did not say */
			struct ks_http_conn *k = p->conns;

			p->conns = k->next;
			free(k);
		}
		free(p);
		srv->priv = NULL;
	}
	if (srv->fd >= 0)
		close(srv->fd);
	srv->fd = -1;
	if (srv->unix_path[0])
		unlink(srv->unix_path);
	srv->unix_path[0] = '\0';
}
