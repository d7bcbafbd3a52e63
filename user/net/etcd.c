// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The etcd v3 client over the JSON gateway (etcd.h): unary calls on one
 * curl easy handle with a deadline each and failover between endpoints;
 * watches as streaming POSTs on curl's multi interface, driven by the
 * caller's poll loop through an epoll fd.
 */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "net/etcd.h"
#include "util/clock.h"

#define ERR_MAX     384
#define TOKEN_MAX   1024
#define REASONS_MAX 600
/* A watch: backoff before reconnecting, and TCP keepalives that find a
 * peer gone silent (idle 5 s, then 3 probes 2 s apart). */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define KEEPIDLE_S     5
#define KEEPINTVL_S    2
#define KEEPCNT        3
/* between asks of the last endpoint left that said it is unavailable */
#define UNAVAILABLE_PAUSE_MS 100

struct buf {
	char *p;
	size_t len, cap;
	int over; /* more than KS_ETCD_ANSWER_MAX came */
};

struct ks_etcd {
	struct ks_etcd_endpoints eps;
	unsigned cur; /* the endpoint calls start on */
	int timeout_ms;
	char *ca, *cert, *key, *user, *password;
	char token[TOKEN_MAX]; /* "": none yet */
	CURL *easy;
	struct buf ans;
	char curl_err[CURL_ERROR_SIZE];
	char err[ERR_MAX];
};

struct ks_etcd_watch {
	struct ks_etcd *c;
	CURLM *multi;
	CURL *easy; /* NULL: no stream now */
	struct curl_slist *hdrs;
	int epfd;
	char *key_b64, *end_b64; /* end_b64 NULL: one key */
	int64_t next_rev;        /* 0: from now */
	unsigned ep;
	int created, reauthed, failures;
	int dead;    /* the error that ended the watch, or 0 */
	int pending; /* an error run() has yet to report */
	uint64_t timer_at, retry_at, created_by; /* ms, 0: none */
	struct buf in;
	struct ks_etcd_event *q;
	size_t qhead, qlen, qcap;
	char curl_err[CURL_ERROR_SIZE];
	char err[ERR_MAX];
};

enum {
	CALL_RETRY = 1,
	CALL_NOAUTH = 2
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Writes the one-line message of an error into dst (a client's or a
 * watch's err) and returns code. */
static int set_msg(char *dst, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int set_msg(char *dst, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, ERR_MAX, fmt, ap);
	va_end(ap);
	return code;
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *ud)
{
	struct buf *b = ud;
	size_t n = size * nmemb;

	if (b->len + n > KS_ETCD_ANSWER_MAX) {
		b->over = 1;
		return 0; /* curl stops the transfer */
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *np;

		while (cap < b->len + n + 1)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np)
			return 0;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return n;
}

static void buf_free(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* ---- open, close ---- */

static int readable(const char *what, const char *path, char *err,
		    size_t errlen)
{
	if (access(path, R_OK) == 0)
		return 0;
	snprintf(err, errlen, "cannot read the etcd %s '%s': %s", what, path,
		 strerror(errno));
	return -EINVAL;
}

int ks_etcd_read_password(const char *what, const char *path, char *pw,
			  size_t len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	size_t n;
	int whole;

	pw[0] = '\0';
	if (!f) {
		snprintf(err, errlen,
			 "cannot read %s%s (%s); check the path and its mode",
			 what, path, strerror(errno));
		return -EINVAL;
	}
	if (!fgets(pw, (int)len, f))
		pw[0] = '\0';
	n = strcspn(pw, "\r\n");
	/* a line cut by the buffer would authenticate with a prefix of the
	 * password: refused rather than a puzzling "wrong password" */
	whole = pw[n] != '\0' || feof(f) || fgetc(f) == EOF;
	fclose(f);
	pw[n] = '\0';
	if (!whole) {
		explicit_bzero(pw, len);
		snprintf(err, errlen,
			 "%s%s: the first line is longer than %zu bytes", what,
			 path, len - 1);
		return -EINVAL;
	}
	if (!n) {
		snprintf(err, errlen,
			 "%s%s is empty; put the password on its first line",
			 what, path);
		return -EINVAL;
	}
	return 0;
}

static char *dup_opt(const char *s, int *fail)
{
	char *d;

	if (!s || !*s)
		return NULL;
	d = strdup(s);
	if (!d)
		*fail = 1;
	return d;
}

/* What every handle of the client has: TLS files, no signals, answers. */
static void setup_easy(struct ks_etcd *c, CURL *e, char *curl_err)
{
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, curl_err);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR,
			 c->eps.tls ? "https" : "http");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	if (c->ca)
		curl_easy_setopt(e, CURLOPT_CAINFO, c->ca);
	if (c->cert) {
		curl_easy_setopt(e, CURLOPT_SSLCERT, c->cert);
		curl_easy_setopt(e, CURLOPT_SSLKEY, c->key);
	}
}

int ks_etcd_open(struct ks_etcd **out, const struct ks_etcd_opts *o, char *err,
		 size_t errlen)
{
	struct ks_etcd *c;
	int nomem = 0, rc;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = ks_etcd_parse_endpoints(o->endpoints, &c->eps, err, errlen);
	if (rc)
		goto fail;
	rc = -EINVAL;
	if (!c->eps.tls &&
	    ((o->ca_file && *o->ca_file) || (o->cert_file && *o->cert_file) ||
	     (o->key_file && *o->key_file))) {
		snprintf(
			err, errlen,
			"etcd TLS files given but the endpoints are http://; use https:// URLs");
		goto fail;
	}
	if (!(o->cert_file && *o->cert_file) !=
	    !(o->key_file && *o->key_file)) {
		snprintf(
			err, errlen,
			"an etcd client certificate needs its key and a key its certificate; give both");
		goto fail;
	}
	if (!(o->user && *o->user) != !(o->password && *o->password)) {
		snprintf(
			err, errlen,
			"an etcd user needs a password and a password a user; give both");
		goto fail;
	}
	if ((o->ca_file && *o->ca_file &&
	     readable("CA file", o->ca_file, err, errlen)) ||
	    (o->cert_file && *o->cert_file &&
	     readable("certificate", o->cert_file, err, errlen)) ||
	    (o->key_file && *o->key_file &&
	     readable("key", o->key_file, err, errlen)))
		goto fail;
	c->ca = dup_opt(o->ca_file, &nomem);
	c->cert = dup_opt(o->cert_file, &nomem);
	c->key = dup_opt(o->key_file, &nomem);
	c->user = dup_opt(o->user, &nomem);
	c->password = dup_opt(o->password, &nomem);
	c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : KS_ETCD_TIMEOUT_MS;
	/* libcurl counts its init calls: every client's close undoes one. */
	if (nomem || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "cannot set up libcurl (out of memory)");
		rc = -ENOMEM;
		goto fail;
	}
	c->easy = curl_easy_init();
	if (!c->easy) {
		curl_global_cleanup();
		snprintf(err, errlen, "cannot set up libcurl (out of memory)");
		rc = -ENOMEM;
		goto fail;
	}
	setup_easy(c, c->easy, c->curl_err);
	curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, &c->ans);
	*out = c;
	return 0;
fail:
	free(c->ca);
	free(c->cert);
	free(c->key);
	free(c->user);
	free(c->password);
	free(c);
	return rc;
}

void ks_etcd_close(struct ks_etcd *c)
{
	if (!c)
		return;
	curl_easy_cleanup(c->easy);
	curl_global_cleanup();
	buf_free(&c->ans);
	free(c->ca);
	free(c->cert);
	free(c->key);
	free(c->user);
	if (c->password)
		explicit_bzero(c->password, strlen(c->password));
	free(c->password);
	explicit_bzero(c->token, sizeof(c->token));
	free(c);
}

int ks_etcd_clone(const struct ks_etcd *c, struct ks_etcd **out, char *err,
		  size_t errlen)
{
	struct ks_etcd_opts o = {
		.endpoints = NULL,
		.ca_file = c->ca,
		.cert_file = c->cert,
		.key_file = c->key,
		.user = c->user,
		.password = c->password,
		.timeout_ms = c->timeout_ms,
	};
	char list[KS_ETCD_MAX_ENDPOINTS * (KS_ETCD_URL_MAX + 1)] = "";
	size_t at = 0;
	unsigned i;
	int rc;

	for (i = 0; i < c->eps.n; i++)
		at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s",
				       i ? "," : "", c->eps.url[i]);
	o.endpoints = list;
	rc = ks_etcd_open(out, &o, err, errlen);
	if (!rc)
		(*out)->cur = c->cur;
	return rc;
}

const char *ks_etcd_errmsg(const struct ks_etcd *c)
{
	return c->err;
}

const char *ks_etcd_endpoint(const struct ks_etcd *c)
{
	return c->eps.url[c->cur];
}

int ks_etcd_call_timeout_ms(const struct ks_etcd *c)
{
	return c->timeout_ms;
}

/* ---- unary calls ---- */

enum failure {
	F_CONNECT,
	F_TIMEOUT,
	F_BROKEN,
	F_TLS,
	F_TLS_CLOSED,
	F_OTHER
};

static enum failure classify(CURLcode cc, CURL *e, const char *curl_err)
{
	curl_off_t connected = 0;
	long status = 0;

	switch (cc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return F_CONNECT;
	case CURLE_OPERATION_TIMEDOUT: {
		curl_off_t pre = 0;
		long sent = 0;

		/* A call on a reused connection has no connect time (0): that
		 * it got as far as sending (pretransfer, or request bytes out)
		 * says it was connected, and may have been acted on (a write) */
		curl_easy_getinfo(e, CURLINFO_CONNECT_TIME_T, &connected);
		curl_easy_getinfo(e, CURLINFO_PRETRANSFER_TIME_T, &pre);
		curl_easy_getinfo(e, CURLINFO_REQUEST_SIZE, &sent);
		return connected || pre > 0 || sent > 0 ? F_TIMEOUT : F_CONNECT;
	}
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
		/* TLS 1.3: a server refusing our certificate (or wanting
		 * one) does so after the handshake, with an alert or by
		 * closing before any answer */
		if (strstr(curl_err, "SSL") && strstr(curl_err, "alert"))
			return F_TLS;
		curl_easy_getinfo(e, CURLINFO_APPCONNECT_TIME_T, &connected);
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
		return connected && !status ? F_TLS_CLOSED : F_BROKEN;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
		return F_TLS;
	default:
		return F_OTHER;
	}
}

/* Why a connect failed, in a few words: "Connection refused", "no
 * connection within 250 ms", or curl's own words. */
static const char *connect_why(CURL *e, CURLcode cc, long conn_ms,
			       const char *curl_err, char *out)
{
	long os_errno = 0;

	if (cc == CURLE_OPERATION_TIMEDOUT) {
		snprintf(out, ERR_MAX, "no connection within %ld ms", conn_ms);
		return out;
	}
	curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &os_errno);
	if (cc == CURLE_COULDNT_CONNECT && os_errno)
		return strerror((int)os_errno);
	return curl_err[0] ? curl_err : curl_easy_strerror(cc);
}

static struct curl_slist *headers(const char *token)
{
	struct curl_slist *h = NULL, *n;
	char auth[TOKEN_MAX + 32];

	/* "Expect:": no 100-continue round trip before a large body */
	h = curl_slist_append(h, "Content-Type: application/json");
	if (h && (n = curl_slist_append(h, "Expect:")))
		h = n;
	if (h && token && *token) {
		snprintf(auth, sizeof(auth), "Authorization: %s", token);
		n = curl_slist_append(h, auth);
		explicit_bzero(auth, sizeof(auth));
		if (!n) {
			curl_slist_free_all(h);
			return NULL;
		}
		h = n;
	}
	return h;
}

static void add_reason(char *reasons, const char *url, const char *why)
{
	size_t len = strlen(reasons);

	snprintf(reasons + len, REASONS_MAX - len, "%s%s: %s", len ? "; " : "",
		 url, why);
}

static int authenticate(struct ks_etcd *c, uint64_t deadline);

/* The calling thread's calls that waited for etcd (ks_etcd_thread_waits):
 * the agent's loop must never wait for etcd, and its -v line says how
 * long it did. depth: an authentication inside a call is one wait. */
static __thread uint64_t th_calls, th_wait_ns;
static __thread int th_depth;

void ks_etcd_thread_waits(uint64_t *calls, uint64_t *wait_ns)
{
	*calls = th_calls;
	*wait_ns = th_wait_ns;
}

static int call_once(struct ks_etcd *c, const char *path, const char *body,
		     unsigned flags, uint64_t deadline);

/*
 * POSTs body to path, from endpoint c->cur on, until one answers or the
 * deadline passes. 0 with the 200 answer in c->ans, else the error. Every
 * blocking request of this file goes through here (the watches never
 * block): its time is the calling thread's wait.
 */
static int call(struct ks_etcd *c, const char *path, const char *body,
		unsigned flags, uint64_t deadline)
{
	uint64_t t0 = ks_mono_ns();
	int rc;

	th_depth++;
	rc = call_once(c, path, body, flags, deadline);
	if (--th_depth == 0) {
		th_calls++;
		th_wait_ns += ks_mono_ns() - t0;
	}
	return rc;
}

static int call_once(struct ks_etcd *c, const char *path, const char *body,
		     unsigned flags, uint64_t deadline)
{
	char reasons[REASONS_MAX] = "", url[KS_ETCD_URL_MAX + 64], msg[ERR_MAX];
	unsigned ep = c->cur, left = c->eps.n;
	int reauthed = 0, rc;

	if (!(flags & CALL_NOAUTH) && c->user && !c->token[0] &&
	    (rc = authenticate(c, deadline)))
		return rc;
	while (left) {
		uint64_t now = now_ms();
		struct curl_slist *h;
		long remaining, conn, status = 0;
		CURLcode cc;

		if (now >= deadline)
			break;
		remaining = (long)(deadline - now);
		conn = remaining / (long)left;
		if (conn < 1)
			conn = 1;
		h = headers(flags & CALL_NOAUTH ? NULL : c->token);
		if (!h)
			return set_msg(c->err, -ENOMEM, "out of memory");
		snprintf(url, sizeof(url), "%s%s", c->eps.url[ep], path);
		c->ans.len = 0;
		c->ans.over = 0;
		c->curl_err[0] = '\0';
		curl_easy_setopt(c->easy, CURLOPT_URL, url);
		curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c->easy, CURLOPT_POSTFIELDSIZE,
				 (long)strlen(body));
		curl_easy_setopt(c->easy, CURLOPT_TIMEOUT_MS, remaining);
		curl_easy_setopt(c->easy, CURLOPT_CONNECTTIMEOUT_MS, conn);
		cc = curl_easy_perform(c->easy);
		curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, NULL);
		curl_slist_free_all(h);
		if (c->ans.over)
			return set_msg(c->err, -E2BIG,
				       "etcd at %s answered more than %d bytes",
				       c->eps.url[ep], KS_ETCD_ANSWER_MAX);
		if (cc == CURLE_OK) {
			curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE,
					  &status);
			if (status == 200) {
				c->cur = ep;
				c->err[0] = '\0';
				return 0;
			}
			rc = ks_etcd_decode_error(c->ans.p ? c->ans.p : "",
						  c->ans.len, status, msg,
						  sizeof(msg));
			if (rc == -EKEYEXPIRED && c->user && !reauthed &&
			    !(flags & CALL_NOAUTH)) {
				reauthed = 1;
				c->token[0] = '\0';
				if ((rc = authenticate(c, deadline)))
					return rc;
				continue;
			}
			if (rc == -EKEYEXPIRED)
				rc = -EACCES;
			if (rc == -EAGAIN && (flags & CALL_RETRY) && left > 1) {
				add_reason(reasons, c->eps.url[ep], msg);
				ep = (ep + 1) % c->eps.n;
				left--;
				continue;
			}
			/* the last endpoint is unavailable for now (its own
			 * request timed out at load 36, an election): a call
			 * safe to repeat asks it again while the deadline
			 * allows, rather than fail with time left */
			if (rc == -EAGAIN && (flags & CALL_RETRY) &&
			    now_ms() + UNAVAILABLE_PAUSE_MS < deadline) {
				usleep(UNAVAILABLE_PAUSE_MS * 1000);
				continue;
			}
			c->cur = ep;
			return set_msg(c->err, rc, "%s (%s)", msg,
				       c->eps.url[ep]);
		}
		switch (classify(cc, c->easy, c->curl_err)) {
		case F_CONNECT:
			add_reason(reasons, c->eps.url[ep],
				   connect_why(c->easy, cc, conn, c->curl_err,
					       msg));
			ep = (ep + 1) % c->eps.n;
			left--;
			continue;
		case F_BROKEN:
			if ((flags & CALL_RETRY) && left > 1) {
				add_reason(reasons, c->eps.url[ep],
					   c->curl_err[0]
						   ? c->curl_err
						   : curl_easy_strerror(cc));
				ep = (ep + 1) % c->eps.n;
				left--;
				continue;
			}
			return set_msg(
				c->err,
				(flags & CALL_RETRY) ? -EHOSTUNREACH
						     : -ECONNRESET,
				"the connection to etcd at %s broke mid-call (%s)%s",
				c->eps.url[ep],
				c->curl_err[0] ? c->curl_err
					       : curl_easy_strerror(cc),
				(flags & CALL_RETRY)
					? ""
					: "; the write may or may not have happened");
		case F_TLS_CLOSED:
			if ((flags & CALL_RETRY) && left > 1) {
				add_reason(
					reasons, c->eps.url[ep],
					"closed the TLS connection unanswered");
				ep = (ep + 1) % c->eps.n;
				left--;
				continue;
			}
			return set_msg(
				c->err, -EACCES,
				"etcd at %s closed the TLS connection without answering: it wants a client certificate%s",
				c->eps.url[ep],
				c->cert ? " other than ours" : "; give one");
		case F_TIMEOUT:
			/* the next call starts on the next endpoint: a member
			 * that stopped answering (stopped, stalled, cut off)
			 * still holds the connection, or its kernel still
			 * takes new ones, so nothing else moves us off it and
			 * every later call (a lease's every keepalive) would
			 * wait out its deadline there while the others serve.
			 * This call is not repeated: its time is spent, and a
			 * write may have happened. */
			c->cur = (ep + 1) % c->eps.n;
			return set_msg(c->err, -ETIMEDOUT,
				       "etcd at %s did not answer within %d ms",
				       c->eps.url[ep], c->timeout_ms);
		case F_TLS:
			return set_msg(c->err, -EACCES,
				       "TLS with etcd at %s failed: %s",
				       c->eps.url[ep],
				       c->curl_err[0] ? c->curl_err
						      : curl_easy_strerror(cc));
		default:
			return set_msg(c->err, -EPROTO,
				       "talking to etcd at %s failed: %s",
				       c->eps.url[ep],
				       c->curl_err[0] ? c->curl_err
						      : curl_easy_strerror(cc));
		}
	}
	if (!reasons[0])
		return set_msg(c->err, -ETIMEDOUT,
			       "etcd did not answer within %d ms",
			       c->timeout_ms);
	return set_msg(c->err, -EHOSTUNREACH,
		       "no etcd endpoint reachable within %d ms: %s",
		       c->timeout_ms, reasons);
}

/* Dumps j (and drops it): the compact JSON text, or NULL. */
static char *dump(json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	return s;
}

/* Runs a call on a request built by the caller; frees it. */
static int call_json(struct ks_etcd *c, const char *path, json_t *req,
		     unsigned flags, uint64_t deadline)
{
	char *body = dump(req);
	int rc;

	if (!body)
		return set_msg(c->err, -ENOMEM, "out of memory");
	rc = call(c, path, body, flags, deadline);
	free(body);
	return rc;
}

static int authenticate(struct ks_etcd *c, uint64_t deadline)
{
	char msg[ERR_MAX];
	char *body = dump(json_pack("{s:s, s:s}", "name", c->user, "password",
				    c->password));
	int rc;

	if (!body)
		return set_msg(c->err, -ENOMEM, "out of memory");
	rc = call(c, "/v3/auth/authenticate", body, CALL_RETRY | CALL_NOAUTH,
		  deadline);
	explicit_bzero(body, strlen(body));
	free(body);
	if (rc == -EKEYEXPIRED)
		rc = -EACCES;
	if (rc)
		return rc;
	rc = ks_etcd_decode_token(c->ans.p, c->ans.len, c->token,
				  sizeof(c->token), msg, sizeof(msg));
	if (rc)
		return set_msg(c->err, rc, "%s (%s, authenticate)", msg,
			       ks_etcd_endpoint(c));
	return 0;
}

static uint64_t deadline_of(const struct ks_etcd *c)
{
	return now_ms() + (uint64_t)c->timeout_ms;
}

static json_t *b64_json(const void *p, size_t n)
{
	char *s = malloc(4 * ((n + 2) / 3) + 1);
	json_t *j;

	if (!s)
		return NULL;
	n = ks_etcd_b64_encode(p, n, s);
	j = json_stringn(s, n);
	free(s);
	return j;
}

static json_t *i64_json(int64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%lld", (long long)v);
	return json_string(s);
}

/* {"key": K} and, for a prefix, "range_end"; NULL without memory. */
static json_t *key_req(const void *key, size_t klen, unsigned flags)
{
	json_t *r = json_object();

	if (!r || json_object_set_new(r, "key", b64_json(key, klen))) {
		json_decref(r);
		return NULL;
	}
	if (flags & KS_ETCD_PREFIX) {
		unsigned char *end = malloc(klen ? klen : 1);
		size_t n;
		int bad;

		if (!end) {
			json_decref(r);
			return NULL;
		}
		if (!klen) /* every key: from "\0" to the end */
			json_object_set_new(r, "key", b64_json("", 1));
		n = ks_etcd_prefix_end(key, klen, end);
		bad = json_object_set_new(r, "range_end", b64_json(end, n));
		free(end);
		if (bad) {
			json_decref(r);
			return NULL;
		}
	}
	return r;
}

/* A decoder's failure, with where it came from. */
static int bad_answer(struct ks_etcd *c, int rc, const char *msg,
		      const char *what)
{
	return set_msg(c->err, rc, "%s (%s, %s)", msg, ks_etcd_endpoint(c),
		       what);
}

int ks_etcd_status(struct ks_etcd *c, char *version, size_t vlen)
{
	char v[64], msg[ERR_MAX];
	int rc = call(c, "/v3/maintenance/status", "{}", CALL_RETRY,
		      deadline_of(c));

	if (rc)
		return rc;
	rc = ks_etcd_decode_status(c->ans.p, c->ans.len, v, sizeof(v), msg,
				   sizeof(msg));
	if (rc)
		return bad_answer(c, rc, msg, "status");
	if (version && vlen)
		snprintf(version, vlen, "%s", v);
	return 0;
}

int ks_etcd_range(struct ks_etcd *c, const void *key, size_t klen,
		  unsigned flags, struct ks_etcd_range *out)
{
	char msg[ERR_MAX];
	int rc;

	memset(out, 0, sizeof(*out));
	rc = call_json(c, "/v3/kv/range", key_req(key, klen, flags), CALL_RETRY,
		       deadline_of(c));
	if (rc)
		return rc;
	rc = ks_etcd_decode_range(c->ans.p, c->ans.len, out, msg, sizeof(msg));
	return rc ? bad_answer(c, rc, msg, "range") : 0;
}

static json_t *put_req(const void *key, size_t klen, const void *val,
		       size_t vlen, int64_t lease)
{
	json_t *r = key_req(key, klen, 0);

	if (r &&
	    (json_object_set_new(r, "value", b64_json(val, vlen)) ||
	     (lease && json_object_set_new(r, "lease", i64_json(lease))))) {
		json_decref(r);
		return NULL;
	}
	return r;
}

int ks_etcd_put(struct ks_etcd *c, const void *key, size_t klen,
		const void *val, size_t vlen, int64_t lease, int64_t *revision)
{
	char msg[ERR_MAX];
	int64_t rev;
	int rc;

	/* the same put twice leaves the same key: safe to repeat */
	rc = call_json(c, "/v3/kv/put", put_req(key, klen, val, vlen, lease),
		       CALL_RETRY, deadline_of(c));
	if (rc)
		return rc;
	rc = ks_etcd_decode_revision(c->ans.p, c->ans.len, &rev, NULL, msg,
				     sizeof(msg));
	if (rc)
		return bad_answer(c, rc, msg, "put");
	if (revision)
		*revision = rev;
	return 0;
}

/* Up to 60 bytes of a key for a message, odd bytes as '?'. */
static void printable(const void *key, size_t klen, char *out, size_t outlen)
{
	const unsigned char *k = key;
	size_t i, n = klen < outlen - 1 ? klen : outlen - 1;

	for (i = 0; i < n; i++)
		out[i] = k[i] >= 0x20 && k[i] < 0x7f ? (char)k[i] : '?';
	out[n] = '\0';
}

/* One /v3/kv/txn call and its answer decoded. */
static int txn(struct ks_etcd *c, json_t *req, unsigned flags, int *won,
	       int64_t *rev, int64_t *cur)
{
	char msg[ERR_MAX];
	int rc = call_json(c, "/v3/kv/txn", req, flags, deadline_of(c));

	if (rc)
		return rc;
	rc = ks_etcd_decode_txn(c->ans.p, c->ans.len, won, rev, cur, msg,
				sizeof(msg));
	return rc ? bad_answer(c, rc, msg, "txn") : 0;
}

int ks_etcd_put_if(struct ks_etcd *c, const void *key, size_t klen,
		   const void *val, size_t vlen, int64_t lease,
		   int64_t mod_revision, int64_t *revision)
{
	char pk[61];
	json_t *put = put_req(key, klen, val, vlen, lease);
	json_t *range = key_req(key, klen, 0);
	int64_t rev, cur;
	int won, rc;

	/* An absent key's mod_revision is 0: one compare covers both cases. */
	if (range)
		json_object_set_new(range, "keys_only", json_true());
	/* Not repeated on another endpoint: a first attempt that did happen
	 * would make the second one lose. */
	rc = txn(c,
		 json_pack("{s:[{s:o, s:s, s:s, s:o}], s:[{s:o}], s:[{s:o}]}",
			   "compare", "key", b64_json(key, klen), "target",
			   "MOD", "result", "EQUAL", "mod_revision",
			   i64_json(mod_revision), "success", "request_put",
			   put, "failure", "request_range", range),
		 0, &won, &rev, &cur);
	if (rc)
		return rc;
	if (revision)
		*revision = won ? rev : cur;
	if (won)
		return 0;
	printable(key, klen, pk, sizeof(pk));
	if (!mod_revision)
		return set_msg(
			c->err, -ESTALE,
			"compare-and-swap lost: '%s' exists (mod_revision %lld); it was to be created",
			pk, (long long)cur);
	return set_msg(
		c->err, -ESTALE,
		"compare-and-swap lost: '%s' has mod_revision %lld, not %lld; read it again",
		pk, (long long)cur, (long long)mod_revision);
}

int ks_etcd_delete(struct ks_etcd *c, const void *key, size_t klen,
		   unsigned flags, int64_t *deleted)
{
	char msg[ERR_MAX];
	int64_t rev, n;
	int rc;

	rc = call_json(c, "/v3/kv/deleterange", key_req(key, klen, flags),
		       CALL_RETRY, deadline_of(c));
	if (rc)
		return rc;
	rc = ks_etcd_decode_revision(c->ans.p, c->ans.len, &rev, &n, msg,
				     sizeof(msg));
	if (rc)
		return bad_answer(c, rc, msg, "deleterange");
	if (deleted)
		*deleted = n;
	return 0;
}

int ks_etcd_write_many(struct ks_etcd *c, const struct ks_etcd_write *w,
		       size_t n, int64_t lease, int64_t *revision)
{
	json_t *ops = json_array();
	int64_t rev, cur;
	size_t i;
	int won, rc;

	if (!n)
		return 0;
	for (i = 0; ops && i < n; i++) {
		json_t *op = w[i].val ? put_req(w[i].key, w[i].klen, w[i].val,
						w[i].vlen, lease)
				      : key_req(w[i].key, w[i].klen, 0);

		if (!op ||
		    json_array_append_new(
			    ops, json_pack("{s:o}",
					   w[i].val ? "request_put"
						    : "request_delete_range",
					   op))) {
			json_decref(ops);
			ops = NULL;
		}
	}
	if (!ops)
		return set_msg(c->err, -ENOMEM, "out of memory");
	/* No compare: it always applies, and puts and deletes of the same
	 * bytes leave the same keys, so it is safe to repeat. */
	rc = txn(c, json_pack("{s:o}", "success", ops), CALL_RETRY, &won, &rev,
		 &cur);
	if (rc)
		return rc;
	if (revision)
		*revision = rev;
	return 0;
}

int ks_etcd_lease_grant(struct ks_etcd *c, int64_t ttl_s, int64_t *id,
			int64_t *granted)
{
	char msg[ERR_MAX];
	int64_t ttl;
	int rc;

	if (ttl_s < 1)
		return set_msg(c->err, -EINVAL,
			       "a lease needs a TTL of 1 s or more, not %lld",
			       (long long)ttl_s);
	rc = call_json(c, "/v3/lease/grant",
		       json_pack("{s:o}", "TTL", i64_json(ttl_s)), 0,
		       deadline_of(c));
	if (rc)
		return rc;
	rc = ks_etcd_decode_lease(c->ans.p, c->ans.len, id, &ttl, msg,
				  sizeof(msg));
	if (rc)
		return bad_answer(c, rc, msg, "lease grant");
	if (granted)
		*granted = ttl;
	return 0;
}

int ks_etcd_lease_keepalive(struct ks_etcd *c, int64_t id, int64_t *ttl)
{
	char msg[ERR_MAX];
	int64_t got, t;
	int rc;

	/* a stream in gRPC; one request, one answer through the gateway */
	rc = call_json(c, "/v3/lease/keepalive",
		       json_pack("{s:o}", "ID", i64_json(id)), CALL_RETRY,
		       deadline_of(c));
	if (rc)
		return rc;
	/* errors come in the stream with status 200 */
	if (c->ans.len && strstr(c->ans.p, "\"error\"") &&
	    !strstr(c->ans.p, "\"result\"")) {
		rc = ks_etcd_decode_error(c->ans.p, c->ans.len, 200, msg,
					  sizeof(msg));
		return set_msg(c->err, rc, "%s (%s, lease keepalive)", msg,
			       ks_etcd_endpoint(c));
	}
	rc = ks_etcd_decode_lease(c->ans.p, c->ans.len, &got, &t, msg,
				  sizeof(msg));
	if (rc)
		return bad_answer(c, rc, msg, "lease keepalive");
	if (t <= 0)
		return set_msg(c->err, -ENOENT,
			       "lease %lld has expired or was revoked",
			       (long long)id);
	if (ttl)
		*ttl = t;
	return 0;
}

int ks_etcd_lease_revoke(struct ks_etcd *c, int64_t id)
{
	return call_json(c, "/v3/lease/revoke",
			 json_pack("{s:o}", "ID", i64_json(id)), CALL_RETRY,
			 deadline_of(c));
}

/* ---- watches ---- */

static int on_socket(CURL *e, curl_socket_t s, int what, void *ud, void *sp)
{
	struct ks_etcd_watch *w = ud;
	struct epoll_event ev = { .data.fd = s };

	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(w->epfd, EPOLL_CTL_DEL, s, NULL);
		return 0;
	}
	ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) |
		    (what & CURL_POLL_OUT ? EPOLLOUT : 0);
	if (epoll_ctl(w->epfd, EPOLL_CTL_MOD, s, &ev) && errno == ENOENT)
		epoll_ctl(w->epfd, EPOLL_CTL_ADD, s, &ev);
	return 0;
}

static int on_timer(CURLM *m, long timeout_ms, void *ud)
{
	struct ks_etcd_watch *w = ud;

	w->timer_at = timeout_ms < 0 ? 0 : now_ms() + (uint64_t)timeout_ms;
	return 0;
}

/* The stream's sockets: find a silent peer by keepalives. */
static int on_sockopt(void *ud, curl_socket_t fd, curlsocktype purpose)
{
	int cnt = KEEPCNT;

	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	return CURL_SOCKOPT_OK;
}

static void stream_drop(struct ks_etcd_watch *w)
{
	if (w->easy) {
		curl_multi_remove_handle(w->multi, w->easy);
		curl_easy_cleanup(w->easy);
		w->easy = NULL;
	}
	curl_slist_free_all(w->hdrs);
	w->hdrs = NULL;
	w->in.len = 0;
	w->created = 0;
	w->created_by = 0;
}

/* The stream failed with err (message in w->err): reconnect, to the next
 * endpoint, after a backoff; err is reported by the next run(). */
static void stream_retry(struct ks_etcd_watch *w, int err)
{
	unsigned backoff;

	stream_drop(w);
	w->failures++;
	backoff = BACKOFF_MIN_MS << (w->failures < 6 ? w->failures - 1 : 5);
	if (backoff > BACKOFF_MAX_MS)
		backoff = BACKOFF_MAX_MS;
	w->retry_at = now_ms() + backoff;
	w->ep = (w->ep + 1) % w->c->eps.n;
	w->pending = err;
}

static void stream_fatal(struct ks_etcd_watch *w, int err)
{
	stream_drop(w);
	w->retry_at = 0;
	w->dead = w->pending = err;
}

/* etcd refused the token: take a new one and reconnect now, once. */
static void stream_reauth(struct ks_etcd_watch *w, const char *why)
{
	struct ks_etcd *c = w->c;
	int rc;

	stream_drop(w);
	if (w->reauthed || !c->user) {
		set_msg(w->err, -EACCES,
			"etcd refuses the watch's credentials: %s", why);
		stream_fatal(w, -EACCES);
		return;
	}
	w->reauthed = 1;
	c->token[0] = '\0';
	rc = authenticate(c, deadline_of(c));
	if (rc == -EACCES) {
		set_msg(w->err, rc, "%s", c->err);
		stream_fatal(w, rc);
	} else if (rc) {
		set_msg(w->err, rc, "%s", c->err);
		stream_retry(w, rc);
	} else {
		w->retry_at = now_ms();
	}
}

static int stream_start(struct ks_etcd_watch *w)
{
	struct ks_etcd *c = w->c;
	char url[KS_ETCD_URL_MAX + 16], *body;
	json_t *req;
	int rc;

	w->retry_at = 0;
	if (c->user && !c->token[0] && (rc = authenticate(c, deadline_of(c)))) {
		set_msg(w->err, rc, "%s", c->err);
		if (rc == -EACCES)
			stream_fatal(w, rc);
		else
			stream_retry(w, rc);
		return rc;
	}
	req = json_pack("{s:s}", "key", w->key_b64);
	if (req && w->end_b64)
		json_object_set_new(req, "range_end", json_string(w->end_b64));
	if (req && w->next_rev)
		json_object_set_new(req, "start_revision",
				    i64_json(w->next_rev));
	body = dump(json_pack("{s:o}", "create_request", req));
	w->easy = curl_easy_init();
	w->hdrs = headers(c->token);
	if (!body || !w->easy || !w->hdrs) {
		free(body);
		set_msg(w->err, -ENOMEM, "out of memory starting a watch");
		stream_retry(w, -ENOMEM);
		return -ENOMEM;
	}
	snprintf(url, sizeof(url), "%s/v3/watch", c->eps.url[w->ep]);
	setup_easy(c, w->easy, w->curl_err);
	curl_easy_setopt(w->easy, CURLOPT_WRITEDATA, &w->in);
	curl_easy_setopt(w->easy, CURLOPT_URL, url);
	curl_easy_setopt(w->easy, CURLOPT_HTTPHEADER, w->hdrs);
	curl_easy_setopt(w->easy, CURLOPT_COPYPOSTFIELDS, body);
	curl_easy_setopt(w->easy, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)c->timeout_ms);
	curl_easy_setopt(w->easy, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(w->easy, CURLOPT_TCP_KEEPIDLE, (long)KEEPIDLE_S);
	curl_easy_setopt(w->easy, CURLOPT_TCP_KEEPINTVL, (long)KEEPINTVL_S);
	curl_easy_setopt(w->easy, CURLOPT_SOCKOPTFUNCTION, on_sockopt);
	free(body);
	w->in.len = 0;
	w->in.over = 0;
	w->curl_err[0] = '\0';
	if (curl_multi_add_handle(w->multi, w->easy) != CURLM_OK) {
		curl_easy_cleanup(w->easy);
		w->easy = NULL;
		set_msg(w->err, -ENOMEM, "cannot start a watch (libcurl)");
		stream_retry(w, -ENOMEM);
		return -ENOMEM;
	}
	w->created_by = now_ms() + (uint64_t)c->timeout_ms;
	return 0;
}

int ks_etcd_watch_start(struct ks_etcd *c, const void *key, size_t klen,
			unsigned flags, int64_t start_revision,
			struct ks_etcd_watch **out)
{
	struct ks_etcd_watch *w = calloc(1, sizeof(*w));
	json_t *r = key_req(key, klen, flags);

	*out = NULL;
	if (!w || !r)
		goto nomem;
	w->c = c;
	w->epfd = -1;
	w->key_b64 = strdup(json_string_value(json_object_get(r, "key")));
	if (flags & KS_ETCD_PREFIX)
		w->end_b64 = strdup(
			json_string_value(json_object_get(r, "range_end")));
	json_decref(r);
	r = NULL;
	if (!w->key_b64 || ((flags & KS_ETCD_PREFIX) && !w->end_b64))
		goto nomem;
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (w->epfd < 0) {
		ks_etcd_watch_stop(w);
		return set_msg(c->err, -errno,
			       "cannot make the watch's epoll fd: %s",
			       strerror(errno));
	}
	w->multi = curl_multi_init();
	if (!w->multi)
		goto nomem;
	curl_multi_setopt(w->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(w->multi, CURLMOPT_SOCKETDATA, w);
	curl_multi_setopt(w->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(w->multi, CURLMOPT_TIMERDATA, w);
	w->next_rev = start_revision > 0 ? start_revision : 0;
	w->ep = c->cur;
	stream_start(w); /* a failure is retried by run() */
	*out = w;
	return 0;
nomem:
	json_decref(r);
	ks_etcd_watch_stop(w);
	return set_msg(c->err, -ENOMEM, "out of memory starting a watch");
}

int ks_etcd_watch_fd(const struct ks_etcd_watch *w)
{
	return w->epfd;
}

int ks_etcd_watch_timeout_ms(const struct ks_etcd_watch *w)
{
	uint64_t now = now_ms(), at = 0;
	const uint64_t t[3] = { w->timer_at, w->retry_at, w->created_by };
	int i;

	if (w->qlen || w->pending)
		return 0;
	for (i = 0; i < 3; i++)
		if (t[i] && (!at || t[i] < at))
			at = t[i];
	if (!at)
		return -1;
	return at <= now ? 0 : (int)(at - now);
}

static int queue_push(struct ks_etcd_watch *w, struct ks_etcd_event *ev)
{
	if (w->qhead + w->qlen == w->qcap) {
		if (w->qhead) {
			memmove(w->q, w->q + w->qhead, w->qlen * sizeof(*w->q));
			w->qhead = 0;
		} else {
			size_t cap = w->qcap ? w->qcap * 2 : 16;
			struct ks_etcd_event *nq = realloc(w->q,
							   cap * sizeof(*nq));

			if (!nq)
				return -ENOMEM;
			w->q = nq;
			w->qcap = cap;
		}
	}
	w->q[w->qhead + w->qlen++] = *ev;
	return 0;
}

/* One message of the stream. 0 to go on, or 1 when the stream is done. */
static int on_message(struct ks_etcd_watch *w, struct ks_etcd_watch_msg *m)
{
	size_t i;

	if (m->canceled) {
		if (m->compact_revision > 0) {
			set_msg(w->err, -ERANGE,
				"the watch's start revision %lld has been compacted (etcd keeps %lld on); read again and watch from that read",
				(long long)w->next_rev,
				(long long)m->compact_revision);
			stream_fatal(w, -ERANGE);
		} else if (strstr(m->cancel_reason, "invalid auth token")) {
			stream_reauth(w, m->cancel_reason);
		} else if (strstr(m->cancel_reason, "permission denied") ||
			   strstr(m->cancel_reason, "user name is empty")) {
			set_msg(w->err, -EACCES, "etcd refused the watch: %s",
				m->cancel_reason);
			stream_fatal(w, -EACCES);
		} else {
			set_msg(w->err, -EPROTO,
				"etcd at %s canceled the watch: %s",
				w->c->eps.url[w->ep], m->cancel_reason);
			stream_retry(w, -EPROTO);
		}
		return 1;
	}
	if (m->created) {
		w->created = 1;
		w->created_by = 0;
		w->failures = 0;
		w->reauthed = 0;
		if (!w->next_rev)
			w->next_rev = m->revision + 1;
	}
	for (i = 0; i < m->n; i++) {
		if (queue_push(w, &m->events[i])) {
			set_msg(w->err, -ENOMEM,
				"out of memory queueing watch events");
			stream_retry(w, -ENOMEM);
			return 1;
		}
		if (m->events[i].kv.mod_revision >= w->next_rev)
			w->next_rev = m->events[i].kv.mod_revision + 1;
		memset(&m->events[i].kv, 0,
		       sizeof(m->events[i].kv)); /* moved */
	}
	return 0;
}

/* Decodes every whole message that has come. */
static void drain(struct ks_etcd_watch *w)
{
	size_t pos = 0;

	while (w->easy && pos < w->in.len) {
		struct ks_etcd_watch_msg m;
		char msg[ERR_MAX];
		size_t used;
		int rc = ks_etcd_decode_watch(w->in.p + pos, w->in.len - pos,
					      &used, &m, msg, sizeof(msg));

		if (rc == 0)
			break;
		pos += used;
		if (rc < 0) {
			if (rc == -EKEYEXPIRED) {
				stream_reauth(w, msg);
			} else {
				set_msg(w->err, rc, "%s (%s, watch)", msg,
					w->c->eps.url[w->ep]);
				if (rc == -EACCES || rc == -EPERM ||
				    rc == -EINVAL)
					stream_fatal(w, rc);
				else
					stream_retry(w, rc);
			}
			return;
		}
		rc = on_message(w, &m);
		ks_etcd_watch_msg_free(&m);
		if (rc)
			return;
	}
	if (w->easy && pos) {
		memmove(w->in.p, w->in.p + pos, w->in.len - pos);
		w->in.len -= pos;
	}
}

/* curl says the stream is over. */
static void stream_done(struct ks_etcd_watch *w, CURLcode cc)
{
	const char *url = w->c->eps.url[w->ep];
	const char *why = w->curl_err[0] ? w->curl_err : curl_easy_strerror(cc);
	long status = 0;

	if (w->in.over) {
		set_msg(w->err, -E2BIG,
			"a watch message from %s is over %d bytes", url,
			KS_ETCD_ANSWER_MAX);
		stream_retry(w, -E2BIG);
		return;
	}
	curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &status);
	if (cc == CURLE_OK && status != 200) {
		char msg[ERR_MAX];
		int rc = ks_etcd_decode_error(w->in.p ? w->in.p : "", w->in.len,
					      status, msg, sizeof(msg));

		if (rc == -EKEYEXPIRED) {
			stream_reauth(w, msg);
			return;
		}
		set_msg(w->err, rc, "%s (%s, watch)", msg, url);
		if (rc == -EACCES || rc == -EPERM || rc == -EINVAL)
			stream_fatal(w, rc);
		else
			stream_retry(w, rc);
		return;
	}
	if (cc == CURLE_OK) {
		set_msg(w->err, -ECONNRESET,
			"etcd at %s ended the watch stream; reconnecting", url);
		stream_retry(w, -ECONNRESET);
		return;
	}
	switch (classify(cc, w->easy, w->curl_err)) {
	case F_CONNECT: {
		char m[ERR_MAX];

		set_msg(w->err, -EHOSTUNREACH,
			"cannot reach etcd at %s for the watch: %s", url,
			connect_why(w->easy, cc, w->c->timeout_ms, w->curl_err,
				    m));
		stream_retry(w, -EHOSTUNREACH);
		return;
	}
	case F_TLS_CLOSED:
		why = "etcd closed the connection unanswered: it wants another client certificate";
		/* fall through */
	case F_TLS:
		set_msg(w->err, -EACCES, "TLS with etcd at %s failed: %s", url,
			why);
		stream_fatal(w, -EACCES);
		return;
	default:
		set_msg(w->err, -ECONNRESET,
			"the watch stream from %s broke: %s", url, why);
		stream_retry(w, -ECONNRESET);
	}
}

int ks_etcd_watch_run(struct ks_etcd_watch *w)
{
	struct epoll_event evs[8];
	CURLMsg *msg;
	int n, i, running, left, err;

	if (w->dead && !w->pending)
		return w->dead;
	n = epoll_wait(w->epfd, evs, 8, 0);
	for (i = 0; i < n && w->easy; i++) {
		int mask = (evs[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
			   (evs[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
			   (evs[i].events & (EPOLLERR | EPOLLHUP)
				    ? CURL_CSELECT_ERR
				    : 0);

		curl_multi_socket_action(w->multi, evs[i].data.fd, mask,
					 &running);
	}
	if (w->easy && w->timer_at && now_ms() >= w->timer_at) {
		w->timer_at = 0;
		curl_multi_socket_action(w->multi, CURL_SOCKET_TIMEOUT, 0,
					 &running);
	}
	drain(w);
	while (w->easy && (msg = curl_multi_info_read(w->multi, &left)))
		if (msg->msg == CURLMSG_DONE && msg->easy_handle == w->easy) {
			drain(w); /* what came before the end */
			if (w->easy)
				stream_done(w, msg->data.result);
			break;
		}
	if (w->easy && !w->created && w->created_by &&
	    now_ms() >= w->created_by) {
		set_msg(w->err, -ETIMEDOUT,
			"etcd at %s did not start the watch within %d ms",
			w->c->eps.url[w->ep], w->c->timeout_ms);
		stream_retry(w, -ETIMEDOUT);
	}
	if (!w->easy && !w->dead && w->retry_at && now_ms() >= w->retry_at)
		stream_start(w);
	if (w->pending) {
		err = w->pending;
		w->pending = 0;
		return err;
	}
	return (int)w->qlen;
}

int ks_etcd_watch_next(struct ks_etcd_watch *w, struct ks_etcd_event *ev)
{
	if (!w->qlen)
		return 0;
	*ev = w->q[w->qhead++];
	if (!--w->qlen)
		w->qhead = 0;
	return 1;
}

int ks_etcd_watch_created(const struct ks_etcd_watch *w)
{
	return w->created;
}

int64_t ks_etcd_watch_next_revision(const struct ks_etcd_watch *w)
{
	return w->next_rev;
}

const char *ks_etcd_watch_errmsg(const struct ks_etcd_watch *w)
{
	return w->err;
}

void ks_etcd_event_free(struct ks_etcd_event *ev)
{
	ks_etcd_kv_free(&ev->kv);
}

void ks_etcd_watch_stop(struct ks_etcd_watch *w)
{
	if (!w)
		return;
	if (w->multi) {
		stream_drop(w);
		curl_multi_cleanup(w->multi);
	}
	while (w->qlen) {
		ks_etcd_kv_free(&w->q[w->qhead++].kv);
		w->qlen--;
	}
	free(w->q);
	if (w->epfd >= 0)
		close(w->epfd);
	buf_free(&w->in);
	free(w->key_b64);
	free(w->end_b64);
	free(w);
}
