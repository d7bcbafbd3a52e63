// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A blocking memcached meta-command client with a deadline per call. The
 * socket stays non-blocking and every wait is a poll() bounded by the
 * call's deadline, so connect, send and receive share one time limit.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "core/mc_key.h"
#include "net/mc_client.h"

#define RBUF_SIZE                                                              \
	4096        /* reply lines; values bigger than what is left
			* in it are read straight into their own buffer */
#define REQ_MAX 320 /* "ms " + 250-byte key + numbers */

typedef int (*mc_op)(struct ks_mc_conn *c, void *arg, __u64 deadline);

static __u64 now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000 + (__u64)ts.tv_nsec / 1000000;
}

/* Waits until fd is ready for ev or the deadline passes. */
static int wait_fd(int fd, short ev, __u64 deadline)
{
	struct pollfd p = { .fd = fd, .events = ev };

	for (;;) {
		__u64 now = now_ms();
		int n;

		if (now >= deadline)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)(deadline - now));
		if (n > 0)
			return 0; /* errors/hangups show in the next call */
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

void ks_mc_init(struct ks_mc_conn *c, __u8 family, const union ks_inaddr *addr,
		__u16 port, int timeout_ms)
{
	memset(c, 0, sizeof(*c));
	c->addr = *addr;
	c->family = family;
	c->port = port;
	c->fd = -1;
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
}

void ks_mc_close(struct ks_mc_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->rbuf);
	c->rbuf = NULL;
	c->rpos = c->rlen = 0;
}

static int connect_wait(int fd, const struct sockaddr *sa, socklen_t salen,
			__u64 deadline)
{
	socklen_t sl = sizeof(int);
	int err, so_err = 0;

	if (connect(fd, sa, salen) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return -errno;
	err = wait_fd(fd, POLLOUT, deadline);
	if (err)
		return err;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_err, &sl))
		return -errno;
	return -so_err;
}

static int mc_connect(struct ks_mc_conn *c, __u64 deadline)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(c->port),
				  .sin_addr.s_addr = c->addr.v4 };
	struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6,
				    .sin6_port = htons(c->port) };
	int v6 = c->family == KS_AF_INET6, one = 1, fd, err;

	if (!c->rbuf && !(c->rbuf = malloc(RBUF_SIZE)))
		return -ENOMEM;
	memcpy(&sa6.sin6_addr, c->addr.v6, sizeof(sa6.sin6_addr));
	fd = socket(v6 ? AF_INET6 : AF_INET,
		    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	err = v6 ? connect_wait(fd, (const struct sockaddr *)&sa6, sizeof(sa6),
				deadline)
		 : connect_wait(fd, (const struct sockaddr *)&sa, sizeof(sa),
				deadline);
	if (err) {
		close(fd);
		return err;
	}
	/* Requests are one small write each: do not wait for Nagle. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->fd = fd;
	c->rpos = c->rlen = 0;
	return 0;
}

/* After a send or receive failed with errno: 0 to try again (it was
 * interrupted, or the socket is ready now), else the error. */
static int after_failed_io(int fd, short ev, __u64 deadline)
{
	if (errno == EINTR)
		return 0;
	if (errno != EAGAIN)
		return -errno;
	return wait_fd(fd, ev, deadline);
}

/* Sends all of iov; MSG_NOSIGNAL so a closed peer is -EPIPE, not a
 * SIGPIPE that would kill the agent. */
static int send_all(struct ks_mc_conn *c, struct iovec *iov, int cnt,
		    __u64 deadline)
{
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)cnt };

	while (m.msg_iovlen) {
		ssize_t n = sendmsg(c->fd, &m, MSG_NOSIGNAL);
		int err;

		if (n < 0) {
			err = after_failed_io(c->fd, POLLOUT, deadline);
			if (err)
				return err;
			continue;
		}
		while (m.msg_iovlen && (size_t)n >= m.msg_iov->iov_len) {
			n -= (ssize_t)m.msg_iov->iov_len;
			m.msg_iov++;
			m.msg_iovlen--;
		}
		if (m.msg_iovlen) {
			m.msg_iov->iov_base = (char *)m.msg_iov->iov_base + n;
			m.msg_iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

/* Receives at least one byte into buf; EOF is -ECONNRESET. */
static ssize_t recv_some(struct ks_mc_conn *c, void *buf, size_t len,
			 __u64 deadline)
{
	for (;;) {
		ssize_t n = recv(c->fd, buf, len, 0);
		int err;

		if (n > 0)
			return n;
		if (n == 0)
			return -ECONNRESET;
		err = after_failed_io(c->fd, POLLIN, deadline);
		if (err)
			return err;
	}
}

/* The next reply line, NUL-terminated in place of its "\r\n"; valid
 * until the next read from the connection. */
/* lf: a line may end in "\n" alone (lru_crawler metadump's item lines) */
static int read_line_end(struct ks_mc_conn *c, char **line, int lf,
			 __u64 deadline)
{
	for (;;) {
		char *start = c->rbuf + c->rpos;
		char *nl = memchr(start, '\n', c->rlen - c->rpos);
		ssize_t n;

		if (nl) {
			int cr = nl > start && nl[-1] == '\r';

			if (!cr && !lf)
				return -EPROTO;
			nl[-cr] = '\0';
			*line = start;
			c->rpos = (size_t)(nl + 1 - c->rbuf);
			return 0;
		}
		/* Slide the partial line to the front to make room. */
		memmove(c->rbuf, start, c->rlen - c->rpos);
		c->rlen -= c->rpos;
		c->rpos = 0;
		if (c->rlen == RBUF_SIZE)
			return -EPROTO; /* no reply line is this long */
		n = recv_some(c, c->rbuf + c->rlen, RBUF_SIZE - c->rlen,
			      deadline);
		if (n < 0)
			return (int)n;
		c->rlen += (size_t)n;
	}
}

static int read_line(struct ks_mc_conn *c, char **line, __u64 deadline)
{
	return read_line_end(c, line, 0, deadline);
}

/* Exactly len bytes: first what is buffered, the rest straight from the
 * socket so a 1 MiB value is not copied twice. */
static int read_exact(struct ks_mc_conn *c, char *dst, size_t len,
		      __u64 deadline)
{
	size_t have = c->rlen - c->rpos;

	if (have > len)
		have = len;
	memcpy(dst, c->rbuf + c->rpos, have);
	c->rpos += have;
	while (have < len) {
		ssize_t n = recv_some(c, dst + have, len - have, deadline);

		if (n < 0)
			return (int)n;
		have += (size_t)n;
	}
	return 0;
}

static int is_broken(int err)
{
	return err == -EPIPE || err == -ECONNRESET || err == -ENOTCONN ||
	       err == -ECONNABORTED;
}

/*
 * Runs op with one deadline. A kept connection may have been closed by a
 * restarted or idle-timing-out server; then the op is run once more on a
 * new one (fetch, store and delete are all safe to repeat).
 */
static int run_op(struct ks_mc_conn *c, mc_op op, void *arg)
{
	__u64 deadline = now_ms() + (__u64)c->timeout_ms;
	int attempt, err = 0;

	for (attempt = 0; attempt < 2; attempt++) {
		int fresh = c->fd < 0;

		if (fresh && (err = mc_connect(c, deadline)))
			break;
		err = op(c, arg, deadline);
		if (!err)
			return 0;
		ks_mc_close(c); /* the stream may be out of step now */
		if (fresh || !is_broken(err))
			break;
	}
	ks_mc_close(c);
	return err;
}

/* A whole decimal number: -EPROTO if it is not one, -ERANGE above max. */
static int parse_num(const char *s, unsigned long long max,
		     unsigned long long *out)
{
	unsigned long long v = 0;

	if (!*s)
		return -EPROTO;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EPROTO;
		if (v > (max - (unsigned)(*s - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (unsigned)(*s - '0');
	}
	*out = v;
	return 0;
}

/* The flags of "VA <len> f<flags> t<ttl>", in any order. memcached
 * reports t-1 for an item that never expires. */
static int parse_va_flags(char *rest, struct ks_mc_item *it)
{
	unsigned long long v;
	int have_f = 0, have_t = 0;
	char *save = NULL, *tok;

	for (tok = strtok_r(rest, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save)) {
		if (tok[0] == 'f' && !parse_num(tok + 1, 0xffffffffULL, &v)) {
			it->flags = (__u32)v;
			have_f = 1;
		} else if (tok[0] == 'c' && !parse_num(tok + 1, ~0ULL, &v)) {
			it->cas = v;
		} else if (!strcmp(tok, "X")) {
			it->stale = 1; /* marked by an invalidation */
		} else if (!strcmp(tok, "W")) {
			it->win = 1;
		} else if (!strcmp(tok, "Z")) {
			it->taken = 1;
		} else if (tok[0] == 't' && !strcmp(tok + 1, "-1")) {
			it->ttl = -1;
			have_t = 1;
		} else if (tok[0] == 't' &&
			   !parse_num(tok + 1, 0x7fffffffULL, &v)) {
			/* an item set with an absolute expiry may have more
			 * than 30 days left */
			it->ttl = (long)v;
			have_t = 1;
		}
	}
	return have_f && have_t ? 0 : -EPROTO;
}

/* The value block of a VA reply: len bytes and "\r\n". */
static int read_value(struct ks_mc_conn *c, struct ks_mc_item *it,
		      __u64 deadline)
{
	char crlf[2];
	int err;

	it->value = malloc(it->len + 1);
	if (!it->value)
		return -ENOMEM;
	err = read_exact(c, it->value, it->len, deadline);
	if (!err)
		err = read_exact(c, crlf, 2, deadline);
	if (!err && memcmp(crlf, "\r\n", 2))
		err = -EPROTO;
	if (err) {
		free(it->value);
		it->value = NULL;
		return err;
	}
	it->value[it->len] = '\0';
	return 0;
}

/* What fetch and delete need; delete leaves it NULL. */
struct key_arg {
	const __u8 *key;
	size_t klen;
	struct ks_mc_item *it;
	const char *tail; /* fetch: the mg flags, when not " v f t c" */
	int raw;          /* fetch: a lease's placeholder is an item */
};

/* "<verb> <key><tail>\r\n" (a checked key, so it fits REQ_MAX). */
static int send_key_cmd(struct ks_mc_conn *c, const char *verb,
			const struct key_arg *a, const char *tail,
			__u64 deadline)
{
	char req[REQ_MAX];
	struct iovec iov = { .iov_base = req };

	iov.iov_len = (size_t)snprintf(req, sizeof(req), "%s %.*s%s\r\n", verb,
				       (int)a->klen, a->key, tail);
	return send_all(c, &iov, 1, deadline);
}

static int fetch_op(struct ks_mc_conn *c, void *arg, __u64 deadline)
{
	struct key_arg *a = arg;
	unsigned long long len;
	char *line, *sp;
	int err;

	err = send_key_cmd(c, "mg", a, a->tail ? a->tail : " v f t c",
			   deadline);
	if (!err)
		err = read_line(c, &line, deadline);
	if (err)
		return err;
	if (!strcmp(line, "EN"))
		return 0;
	if (strncmp(line, "VA ", 3))
		return -EPROTO;
	sp = strchr(line + 3, ' ');
	if (!sp)
		return -EPROTO;
	*sp = '\0';
	err = parse_num(line + 3, KS_MC_VALUE_MAX, &len);
	if (err)
		return err == -ERANGE ? -E2BIG : err;
	a->it->len = (size_t)len;
	err = parse_va_flags(sp + 1, a->it);
	if (!err)
		err = read_value(c, a->it, deadline);
	if (err)
		return err;
	a->it->found = 1;
	/* the 0 bytes of another's lease (mg N, keysteer_fetch) are no
	 * value: a reader or a copy takes them as a miss */
	if (!a->raw && ks_mc_lease_placeholder(a->it)) {
		ks_mc_item_free(a->it);
		a->it->taken = 1;
	}
	return 0;
}

int ks_mc_fetch(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		struct ks_mc_item *it)
{
	struct key_arg a = { key, klen, it };
	int err;

	memset(it, 0, sizeof(*it));
	err = ks_mc_key_check(key, klen);
	if (err)
		return err;
	err = run_op(c, fetch_op, &a);
	if (err) /* a failed try must not leave half an item behind */
		ks_mc_item_free(it);
	return err;
}

int ks_mc_lease_get(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		    long lease_ttl, long recache_s, struct ks_mc_item *it)
{
	char tail[64];
	struct key_arg a = { key, klen, it, tail, 1 };
	int err;

	memset(it, 0, sizeof(*it));
	err = ks_mc_key_check(key, klen);
	if (err)
		return err;
	if (lease_ttl < 1 || lease_ttl > KS_MC_TTL_MAX || recache_s < 0 ||
	    recache_s > KS_MC_TTL_MAX)
		return -EINVAL;
	if (recache_s)
		snprintf(tail, sizeof(tail), " v f t c N%ld R%ld", lease_ttl,
			 recache_s);
	else
		snprintf(tail, sizeof(tail), " v f t c N%ld", lease_ttl);
	err = run_op(c, fetch_op, &a);
	if (err)
		ks_mc_item_free(it);
	return err;
}

/* The one-line reply to ms or md. */
static int simple_reply(struct ks_mc_conn *c, int nf_ok, __u64 deadline)
{
	char *line;
	int err = read_line(c, &line, deadline);

	if (err)
		return err;
	if (!strcmp(line, "HD") || (nf_ok && !strcmp(line, "NF")))
		return 0;
	if (!strncmp(line, "SERVER_ERROR object too large", 29))
		return -E2BIG; /* the server's item size limit (-I) */
	if (!strncmp(line, "SERVER_ERROR out of memory", 26))
		return -ENOMEM;
	return -EPROTO;
}

struct store_arg {
	const __u8 *key;
	size_t klen;
	const struct ks_mc_item *it;
	long ttl;
	int cond; /* 0: plain; 1: only if the CAS is still cas (0: absent) */
	__u64 cas;
};

/* The reply to a conditional ms or md: changed meanwhile is -EAGAIN. */
static int cond_reply(struct ks_mc_conn *c, __u64 deadline)
{
	char *line;
	int err = read_line(c, &line, deadline);

	if (err)
		return err;
	if (!strncmp(line, "HD", 2) && (!line[2] || line[2] == ' '))
		return 0;
	if (!strncmp(line, "EX", 2) || !strncmp(line, "NS", 2) ||
	    !strncmp(line, "NF", 2))
		return -EAGAIN;
	if (!strncmp(line, "SERVER_ERROR object too large", 29))
		return -E2BIG;
	if (!strncmp(line, "SERVER_ERROR out of memory", 26))
		return -ENOMEM;
	return -EPROTO;
}

static int store_op(struct ks_mc_conn *c, void *arg, __u64 deadline)
{
	struct store_arg *a = arg;
	char req[REQ_MAX];
	struct iovec iov[3];
	int err;

	iov[0].iov_base = req;
	char cond[32] = "";

	if (a->cond && a->cas)
		snprintf(cond, sizeof(cond), " C%llu",
			 (unsigned long long)a->cas);
	else if (a->cond)
		snprintf(cond, sizeof(cond), " ME");
	iov[0].iov_len = (size_t)snprintf(
		req, sizeof(req), "ms %.*s %zu T%ld F%u%s\r\n", (int)a->klen,
		a->key, a->it->len, a->ttl, a->it->flags, cond);
	iov[1].iov_base = a->it->value ? a->it->value : "";
	iov[1].iov_len = a->it->len;
	iov[2].iov_base = "\r\n";
	iov[2].iov_len = 2;
	err = send_all(c, iov, 3, deadline);
	if (err)
		return err;
	return a->cond ? cond_reply(c, deadline) : simple_reply(c, 0, deadline);
}

static int store(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		 const struct ks_mc_item *it, long ttl, int cond, __u64 cas)
{
	struct store_arg a = { key, klen, it, ttl, cond, cas };
	int err = ks_mc_key_check(key, klen);

	if (err)
		return err;
	if (ttl < 0 || ttl > KS_MC_TTL_MAX || (it->len && !it->value))
		return -EINVAL;
	if (it->len > KS_MC_VALUE_MAX)
		return -E2BIG;
	return run_op(c, store_op, &a);
}

int ks_mc_store(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		const struct ks_mc_item *it, long ttl)
{
	return store(c, key, klen, it, ttl, 0, 0);
}

int ks_mc_store_if(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		   const struct ks_mc_item *it, long ttl, __u64 cas)
{
	return store(c, key, klen, it, ttl, 1, cas);
}

struct cas_arg {
	const __u8 *key;
	size_t klen;
	__u64 cas;
	long ttl;
	int how; /* CAS_READ, CAS_DELETE_IF, CAS_INVALIDATE, ... */
};

enum {
	CAS_READ,
	CAS_DELETE_IF,
	CAS_INVALIDATE,
	CAS_RESTALE, /* md I C<cas>: token cleared, CAS bumped, expiry kept */
	CAS_MARK     /* md I T<ttl> C<cas>: a fresh item's first mark */
};

/* "HD c<N> ..." or "VA ... c<N> ...": N. */
static int cas_token(const char *line, __u64 *cas)
{
	const char *p = strstr(line, " c");
	unsigned long long v;

	if (!p)
		return -EPROTO;
	v = strtoull(p + 2, NULL, 10);
	*cas = v;
	return 0;
}

static int cas_op(struct ks_mc_conn *c, void *arg, __u64 deadline)
{
	struct cas_arg *a = arg;
	struct key_arg k = { a->key, a->klen, NULL };
	char tail[48], *line;
	int err;

	switch (a->how) {
	case CAS_READ:
		err = send_key_cmd(c, "mg", &k, " c", deadline);
		if (!err)
			err = read_line(c, &line, deadline);
		if (err)
			return err;
		if (!strcmp(line, "EN")) {
			a->cas = 0;
			return 0;
		}
		if (strncmp(line, "HD", 2))
			return -EPROTO;
		return cas_token(line, &a->cas);
	case CAS_DELETE_IF:
		snprintf(tail, sizeof(tail), " C%llu",
			 (unsigned long long)a->cas);
		err = send_key_cmd(c, "md", &k, tail, deadline);
		return err ? err : cond_reply(c, deadline);
	case CAS_RESTALE:
	case CAS_MARK:
		if (a->how == CAS_MARK)
			snprintf(tail, sizeof(tail), " I T%ld C%llu", a->ttl,
				 (unsigned long long)a->cas);
		else
			snprintf(tail, sizeof(tail), " I C%llu",
				 (unsigned long long)a->cas);
		err = send_key_cmd(c, "md", &k, tail, deadline);
		return err ? err : cond_reply(c, deadline);
	default:
		snprintf(tail, sizeof(tail), " I T%ld", a->ttl);
		err = send_key_cmd(c, "md", &k, tail, deadline);
		/* NF: gone since its CAS was read; the caller adds a
		 * tombstone instead */
		return err ? err : cond_reply(c, deadline);
	}
}

int ks_mc_cas(struct ks_mc_conn *c, const __u8 *key, size_t klen, __u64 *cas)
{
	struct cas_arg a = { key, klen, 0, 0, CAS_READ };
	int err = ks_mc_key_check(key, klen);

	if (!err)
		err = run_op(c, cas_op, &a);
	*cas = err ? 0 : a.cas;
	return err;
}

int ks_mc_delete_if(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		    __u64 cas)
{
	struct cas_arg a = { key, klen, cas, 0, CAS_DELETE_IF };
	int err = ks_mc_key_check(key, klen);

	return err ? err : run_op(c, cas_op, &a);
}

int ks_mc_invalidate(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		     long ttl)
{
	struct ks_mc_item tomb = { .flags = KS_MC_TOMB_FLAGS };
	struct cas_arg a = { key, klen, 0, ttl, CAS_INVALIDATE };
	int err = ks_mc_key_check(key, klen), i;
	__u64 cas;

	if (err)
		return err;
	if (ttl < 1 || ttl > KS_MC_TTL_MAX)
		return -EINVAL;
	for (i = 0; i < 3; i++) {
		/* an item there: marked stale, its CAS bumped */
		err = ks_mc_cas(c, key, klen, &cas);
		if (err)
			return err;
		if (cas) {
			err = run_op(c, cas_op, &a);
			if (err != -EAGAIN)
				return err;
			continue;
		}
		/* none: a tombstone; something added meanwhile is marked */
		err = ks_mc_store_if(c, key, klen, &tomb, ttl, 0);
		if (err != -EAGAIN)
			return err;
	}
	return -EAGAIN;
}

int ks_mc_hand_back(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		    __u64 cas)
{
	struct cas_arg a = { key, klen, cas, 0, CAS_RESTALE };
	int err = ks_mc_key_check(key, klen);

	if (!err)
		err = run_op(c, cas_op, &a);
	return err == -EAGAIN ? 0 : err;
}

enum ks_mc_mark ks_mc_mark_plan(const struct ks_mc_item *it, long max_stale,
				long *ttl)
{
	long t = max_stale;

	if (!it->found)
		return KS_MC_MARK_NONE;
	if (ks_mc_lease_placeholder(it))
		return KS_MC_MARK_DELETE;
	if (it->stale)
		return KS_MC_MARK_RESTALE;
	/* never longer than the value would have lived unwritten */
	if (it->ttl >= 0 && it->ttl < t)
		t = it->ttl;
	if (t < 1)
		return KS_MC_MARK_DELETE;
	*ttl = t;
	return KS_MC_MARK_FIRST;
}

int ks_mc_mark_stale(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		     long max_stale)
{
	struct ks_mc_item it;
	/* raw: a placeholder must be seen as one, to be deleted */
	struct key_arg k = { key, klen, &it, NULL, 1 };
	struct cas_arg a = { key, klen, 0, 0, CAS_MARK };
	int err = ks_mc_key_check(key, klen), i;

	if (err)
		return err;
	if (max_stale < 1 || max_stale > KS_MC_TTL_MAX)
		return -EINVAL;
	for (i = 0; i < 3; i++) {
		memset(&it, 0, sizeof(it));
		err = run_op(c, fetch_op, &k);
		a.cas = it.cas;
		switch (err ? KS_MC_MARK_NONE
			    : ks_mc_mark_plan(&it, max_stale, &a.ttl)) {
		case KS_MC_MARK_NONE:
			ks_mc_item_free(&it);
			return err;
		case KS_MC_MARK_DELETE:
			err = ks_mc_delete_if(c, key, klen, a.cas);
			break;
		case KS_MC_MARK_RESTALE:
			a.how = CAS_RESTALE;
			err = run_op(c, cas_op, &a);
			break;
		case KS_MC_MARK_FIRST:
			a.how = CAS_MARK;
			err = run_op(c, cas_op, &a);
			break;
		}
		ks_mc_item_free(&it);
		if (err != -EAGAIN)
			return err;
	}
	/* changed under each try: a delete is stricter than any mark */
	return ks_mc_delete(c, key, klen);
}

static int delete_op(struct ks_mc_conn *c, void *arg, __u64 deadline)
{
	int err = send_key_cmd(c, "md", arg, "", deadline);

	return err ? err : simple_reply(c, 1, deadline);
}

int ks_mc_delete(struct ks_mc_conn *c, const __u8 *key, size_t klen)
{
	struct key_arg a = { key, klen, NULL };
	int err = ks_mc_key_check(key, klen);

	return err ? err : run_op(c, delete_op, &a);
}

void ks_mc_item_free(struct ks_mc_item *it)
{
	free(it->value);
	memset(it, 0, sizeof(*it));
}

/* The copies' ttl: never longer than the owner's, so a copy does not
 * outlive the value it copies; never 0, which would mean "forever". */
static long copy_ttl(long owner_ttl, long cap)
{
	long ttl = cap > KS_MC_TTL_MAX ? KS_MC_TTL_MAX : cap;

	if (owner_ttl >= 0 && owner_ttl < ttl)
		ttl = owner_ttl;
	return ttl < 1 ? 1 : ttl;
}

int ks_fill_copies(struct ks_mc_conn *owner, struct ks_mc_conn *const *replicas,
		   unsigned n, const __u8 *key, size_t klen, long ttl_cap,
		   struct ks_fill_result *res)
{
	static const struct ks_fill_opts plain = { 0 };

	return ks_fill_copies_opts(owner, replicas, n, key, klen, ttl_cap,
				   &plain, res);
}

int ks_fill_copies_opts(struct ks_mc_conn *owner,
			struct ks_mc_conn *const *replicas, unsigned n,
			const __u8 *key, size_t klen, long ttl_cap,
			const struct ks_fill_opts *o,
			struct ks_fill_result *res)
{
	__u64 cas[KS_FILL_MAX];
	int errs[KS_FILL_MAX] = { 0 };
	struct ks_mc_item it;
	int first = 0, err;
	unsigned i;

	memset(res, 0, sizeof(*res));
	if (n > KS_FILL_MAX || ttl_cap < 1)
		return -EINVAL;
	/* 1: each copy as it is now; a copy invalidated after this is
	 * refused in 3, so what 2 reads cannot land after a newer write */
	for (i = 0; i < n; i++)
		errs[i] = replicas[i]
				  ? ks_mc_cas(replicas[i], key, klen, &cas[i])
				  : -EHOSTDOWN;
	/* 2: the owner's value */
	err = ks_mc_fetch(owner, key, klen, &it);
	if (err) {
		res->failed = n;
		res->failed_mask = n >= 32 ? ~0U : (1U << n) - 1;
		res->owner_err = err;
		return err;
	}
	/* a stale-marked owner item (a library write's mark, docs/client.md
	 * "Stale-while-revalidate") is no value to copy: a miss, and the W
	 * memcached handed this read goes back to a reader who refills */
	if (it.found && it.stale && !o->stale_as_fresh) {
		if (it.win)
			ks_mc_hand_back(owner, key, klen, it.cas);
		ks_mc_item_free(&it);
	}
	res->found = it.found;
	res->owner_cas = it.found ? it.cas : 0;
	if (it.found)
		res->ttl = copy_ttl(it.ttl, ttl_cap);
	if (o->delay_ms)
		usleep(o->delay_ms * 1000);
	/* 3: each copy, if unchanged */
	for (i = 0; i < n; i++) {
		err = errs[i];
		if (!err && it.found && o->unconditional)
			err = ks_mc_store(replicas[i], key, klen, &it,
					  res->ttl);
		else if (!err && it.found)
			err = ks_mc_store_if(replicas[i], key, klen, &it,
					     res->ttl, cas[i]);
		else if (!err && o->unconditional)
			err = ks_mc_delete(replicas[i], key, klen);
		else if (!err && cas[i])
			err = ks_mc_delete_if(replicas[i], key, klen, cas[i]);
		if (err == -EAGAIN) {
			res->raced++;
			res->raced_mask |= i < 32 ? 1U << i : 0;
		} else if (err) {
			res->failed++;
			res->failed_mask |= i < 32 ? 1U << i : 0;
			if (!first)
				first = err;
		} else {
			res->stored++;
		}
	}
	ks_mc_item_free(&it);
	return first ? first : res->raced ? -EAGAIN : 0;
}

/* ---- pipelines (client/batch.c): many quiet commands, then "mn" ---- */

#define PIPE_IOV_MAX 1024

int ks_mc_pipe_send(struct ks_mc_conn *c, struct iovec *iov, int cnt,
		    __u64 deadline, int *fresh)
{
	int err = 0, n;

	*fresh = c->fd < 0;
	if (*fresh && (err = mc_connect(c, deadline)))
		return err;
	/* sendmsg takes at most IOV_MAX (1024 on Linux) pieces at a time */
	for (; !err && cnt > 0; iov += n, cnt -= n) {
		n = cnt < PIPE_IOV_MAX ? cnt : PIPE_IOV_MAX;
		err = send_all(c, iov, n, deadline);
	}
	if (err)
		ks_mc_close(c);
	return err;
}

int ks_mc_pipe_line(struct ks_mc_conn *c, char **line, __u64 deadline)
{
	int err = read_line(c, line, deadline);

	if (err)
		ks_mc_close(c);
	return err;
}

int ks_mc_pipe_line_lf(struct ks_mc_conn *c, char **line, __u64 deadline)
{
	int err = read_line_end(c, line, 1, deadline);

	if (err)
		ks_mc_close(c);
	return err;
}

int ks_mc_pipe_broken(int err)
{
	return is_broken(err);
}

/* ---- meta arithmetic (libkeysteer's counters) ---- */

struct arith_arg {
	const __u8 *key;
	size_t klen;
	const struct ks_mc_arith *a;
	__u64 value, cas;
	int sent; /* the request went out: never repeated */
};

static int arith_op(struct ks_mc_conn *c, void *arg, __u64 deadline)
{
	struct arith_arg *x = arg;
	struct key_arg k = { x->key, x->klen, NULL };
	const struct ks_mc_arith *a = x->a;
	char tail[128], digits[24], *line, *sp;
	unsigned long long len;
	size_t n;
	int err;

	n = (size_t)snprintf(tail, sizeof(tail), " v c M%c D%llu",
			     a->decr ? 'D' : 'I', (unsigned long long)a->delta);
	if (a->create)
		n += (size_t)snprintf(tail + n, sizeof(tail) - n, " N%ld J%llu",
				      a->ttl, (unsigned long long)a->initial);
	if (a->cas_in)
		snprintf(tail + n, sizeof(tail) - n, " C%llu",
			 (unsigned long long)a->cas_in);
	err = send_key_cmd(c, "ma", &k, tail, deadline);
	if (err)
		return err;
	x->sent = 1;
	err = read_line(c, &line, deadline);
	if (err)
		return err;
	if (!strcmp(line, "NF"))
		return -ENOENT;
	if (!strcmp(line, "EX") || !strcmp(line, "NS"))
		return -EAGAIN;
	if (!strncmp(line, "CLIENT_ERROR cannot increment", 29))
		return -EDOM;
	if (strncmp(line, "VA ", 3) || !(sp = strchr(line + 3, ' ')))
		return -EPROTO;
	/* "VA <len> c<cas>": the CAS after the length */
	if (cas_token(line + 2, &x->cas))
		return -EPROTO;
	*sp = '\0';
	if (parse_num(line + 3, 20, &len))
		return -EPROTO;
	err = read_exact(c, digits, (size_t)len + 2, deadline);
	if (err)
		return err;
	if (memcmp(digits + len, "\r\n", 2))
		return -EPROTO;
	digits[len] = '\0';
	return parse_num(digits, ~0ULL, &len) ? -EPROTO : (x->value = len, 0);
}

int ks_mc_arith(struct ks_mc_conn *c, const __u8 *key, size_t klen,
		const struct ks_mc_arith *a, __u64 *value, __u64 *cas)
{
	struct arith_arg x = { key, klen, a, 0, 0, 0 };
	__u64 deadline = now_ms() + (__u64)c->timeout_ms;
	int attempt, err = ks_mc_key_check(key, klen);

	for (attempt = 0; !err && attempt < 2; attempt++) {
		int fresh = c->fd < 0;

		if (fresh && (err = mc_connect(c, deadline)))
			break;
		err = arith_op(c, &x, deadline);
		if (!err || err == -ENOENT || err == -EAGAIN || err == -EDOM)
			break; /* a whole reply: the stream is in step */
		ks_mc_close(c);
		if (x.sent) /* it may have been applied: not again */
			return err == -ENOMEM ? err : -ECONNABORTED;
		if (fresh || !is_broken(err))
			break;
		err = 0;
	}
	if (err && err != -ENOENT && err != -EAGAIN && err != -EDOM)
		ks_mc_close(c);
	if (!err && value)
		*value = x.value;
	if (!err && cas)
		*cas = x.cas;
	return err;
}
