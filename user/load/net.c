// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The memcached text protocol on the wire. TCP: one persistent connection
 * per (thread, shard), one request outstanding, so replies need no
 * matching. UDP: one socket per (thread, shard), the 8-byte frame header
 * (request id, sequence, datagram count, reserved) on every request, which
 * must fit one datagram; the reply's datagrams are read until END, and
 * those of requests that timed out are recognised by id and dropped. The
 * UDP sockets are not connected: with steering, a replica the request was
 * rewritten to answers from its own address, and a connected socket would
 * drop that reply.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include "load.h"

__u64 ld_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

static void set_timeout(int fd, __u32 ms)
{
	struct timeval tv = { .tv_sec = ms / 1000,
			      .tv_usec = (ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int open_sock(struct ld_worker *w, __u32 sh, int type)
{
	const struct ld_shard_addr *a = &w->run->addr[sh];
	int one = 1;
	int fd = socket(a->sa.sa.sa_family, type | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	set_timeout(fd, w->run->cfg->timeout_ms);
	if (type == SOCK_DGRAM)
		return fd; /* unconnected: replies may come from any address */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, &a->sa.sa, ld_addr_len(&a->sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

static int errno_result(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -EIO;
}

/* A TCP error leaves the stream out of step: drop the connection, the
 * next request opens a new one. */
static void tcp_drop(struct ld_worker *w, __u32 sh)
{
	if (w->tcp_fd[sh] >= 0)
		close(w->tcp_fd[sh]);
	w->tcp_fd[sh] = -1;
	w->in_r = w->in_w = 0;
}

int ld_tcp_send(struct ld_worker *w, __u32 sh, const char *cmd, size_t len)
{
	size_t done = 0;

	if (w->tcp_fd[sh] < 0) {
		w->tcp_fd[sh] = open_sock(w, sh, SOCK_STREAM);
		if (w->tcp_fd[sh] < 0)
			return -EIO;
	}
	while (done < len) {
		ssize_t n = send(w->tcp_fd[sh], cmd + done, len - done,
				 MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int rc = n < 0 ? errno_result() : -EIO;

			tcp_drop(w, sh);
			return rc;
		}
		done += (size_t)n;
	}
	return 0;
}

/* Makes at least want unread bytes available in w->in. */
static int tcp_need(struct ld_worker *w, int fd, size_t want)
{
	while (w->in_w - w->in_r < want) {
		ssize_t n;

		if (w->in_r && w->in_r == w->in_w)
			w->in_r = w->in_w = 0;
		if (w->in_w == w->incap) {
			if (w->in_r) {
				memmove(w->in, w->in + w->in_r,
					w->in_w - w->in_r);
				w->in_w -= w->in_r;
				w->in_r = 0;
			} else {
				char *p = realloc(w->in, w->incap * 2);

				if (!p)
					return -EIO;
				w->in = p;
				w->incap *= 2;
			}
			continue;
		}
		n = recv(fd, w->in + w->in_w, w->incap - w->in_w, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno_result() : -EIO;
		w->in_w += (size_t)n;
	}
	return 0;
}

/* The next "\r\n"-terminated line; *len excludes the terminator. */
static int tcp_line(struct ld_worker *w, int fd, const char **line, size_t *len)
{
	size_t scanned = 0;

	for (;;) {
		char *start = w->in + w->in_r;
		size_t have = w->in_w - w->in_r;
		char *nl = have > scanned ? memchr(start + scanned, '\n',
						   have - scanned)
					  : NULL;
		int rc;

		if (nl) {
			size_t l = (size_t)(nl - start);

			if (!l || start[l - 1] != '\r')
				return -EIO;
			*line = start;
			*len = l - 1;
			w->in_r += l + 1;
			return 0;
		}
		scanned = have;
		rc = tcp_need(w, fd, have + 1);
		if (rc)
			return rc;
	}
}

static int starts(const char *line, size_t len, const char *word)
{
	size_t n = strlen(word);

	return len >= n && !memcmp(line, word, n);
}

/* "VALUE <key> <flags> <bytes>[ <cas>]": the data length. */
static long value_bytes(const char *line, size_t len)
{
	char buf[KS_MAX_KEY_LEN + 96];
	char *p, *end;
	long bytes;

	if (len >= sizeof(buf))
		return -1;
	memcpy(buf, line, len);
	buf[len] = 0;
	p = buf + 6;                         /* past "VALUE " */
	p = strchr(p, ' ');                  /* past the key */
	if (!p || !(p = strchr(p + 1, ' '))) /* past the flags */
		return -1;
	bytes = strtol(p + 1, &end, 10);
	if (end == p + 1 || bytes < 0 || (*end && *end != ' '))
		return -1;
	return bytes;
}

int ld_tcp_reply(struct ld_worker *w, __u32 sh, int is_get, __u64 *hits)
{
	int fd = w->tcp_fd[sh];
	const char *line;
	size_t len;
	int rc;

	if (fd < 0)
		return -EIO;
	for (;;) {
		rc = tcp_line(w, fd, &line, &len);
		if (rc)
			goto fail;
		if (!is_get) {
			rc = starts(line, len, "STORED") ? 0 : -EIO;
			if (rc)
				goto fail;
			return 0;
		}
		if (starts(line, len, "END") && len == 3)
			return 0;
		if (!starts(line, len, "VALUE ")) {
			rc = -EIO;
			goto fail;
		}
		long bytes = value_bytes(line, len);

		if (bytes < 0) {
			rc = -EIO;
			goto fail;
		}
		rc = tcp_need(w, fd, (size_t)bytes + 2);
		if (rc)
			goto fail;
		w->in_r += (size_t)bytes + 2;
		(*hits)++;
	}
fail:
	tcp_drop(w, sh);
	return rc;
}

int ld_udp_send(struct ld_worker *w, __u32 sh, __u16 id, const char *cmd,
		size_t len)
{
	char hdr[LD_UDP_HDR];
	struct iovec iov[2] = {
		{ .iov_base = hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = (void *)cmd, .iov_len = len },
	};
	struct msghdr msg = {
		.msg_name = (void *)&w->run->addr[sh].sa,
		.msg_namelen = ld_addr_len(&w->run->addr[sh].sa),
		.msg_iov = iov,
		.msg_iovlen = 2,
	};
	__u16 v[4] = { htons(id), 0, htons(1), 0 };
	ssize_t n;

	if (w->udp_fd[sh] < 0) {
		w->udp_fd[sh] = open_sock(w, sh, SOCK_DGRAM);
		if (w->udp_fd[sh] < 0)
			return -EIO;
	}
	memcpy(hdr, v, sizeof(hdr));
	do
		n = sendmsg(w->udp_fd[sh], &msg, 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)(len + sizeof(hdr)))
		return n < 0 ? errno_result() : -EIO;
	return 0;
}

static void count_source(struct ld_worker *w, __u32 sh,
			 const union ld_addr *from)
{
	struct ld_sources *s = &w->src;

	ld_sources_add(s, from, 1);
	if (ld_addr_same(from, &w->run->addr[sh].sa))
		return;
	s->steered++;
	if (!s->first_steered_ns)
		s->first_steered_ns = ld_now_ns();
}

int ld_udp_reply(struct ld_worker *w, __u32 sh, __u16 id, int is_get,
		 __u64 *hits)
{
	char buf[65536];
	__u64 until = ld_now_ns() + (__u64)w->run->cfg->timeout_ms * 1000000ULL;
	size_t skip = 0; /* bytes of a value still to come */
	int first = 1, counted = 0;

	if (w->udp_fd[sh] < 0)
		return -EIO;
	for (;;) {
		union ld_addr from;
		socklen_t fromlen = sizeof(from);
		ssize_t n = recvfrom(w->udp_fd[sh], buf, sizeof(buf), 0,
				     &from.sa, &fromlen);
		__u16 v[4];
		const char *p, *end;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno_result();
		/* Stale datagrams (earlier ids) may keep arriving for a
		 * while; the deadline still holds while we skip them. */
		if (ld_now_ns() > until)
			return -ETIMEDOUT;
		if (n < LD_UDP_HDR)
			continue;
		memcpy(v, buf, sizeof(v));
		if (ntohs(v[0]) != id)
			continue;
		/* One reply, however many datagrams: counted at the first. */
		if (!counted) {
			count_source(w, sh, &from);
			counted = 1;
		}
		p = buf + LD_UDP_HDR;
		end = buf + n;
		/* memcached 1.6 sends header-only datagrams for some reply
		 * parts: nothing to read in them. */
		if (p == end)
			continue;
		/* memcached's error line, or keysteer's rate limit's */
		if (first && end - p >= 12 && !memcmp(p, "SERVER_ERROR", 12))
			return -EBUSY;
		if (!is_get)
			return end - p >= 8 && !memcmp(p, "STORED\r\n", 8)
				       ? 0
				       : -EIO;
		if (first && !(end - p >= 5 && (!memcmp(p, "VALUE", 5) ||
						!memcmp(p, "END\r\n", 5))))
			return -EIO;
		first = 0;
		/* A reply is VALUE blocks then END, over one or more datagrams
		 * (memcached 1.6 sends one per item, each "seq 0 of 1"; older
		 * ones cut the reply every 1400 bytes): read until END. */
		while (p < end) {
			const char *nl;

			if (skip) {
				size_t k = (size_t)(end - p) < skip
						   ? (size_t)(end - p)
						   : skip;

				p += k;
				skip -= k;
				continue;
			}
			nl = memchr(p, '\n', (size_t)(end - p));
			if (!nl || nl == p || nl[-1] != '\r')
				return -EIO;
			if (nl - p == 4 && !memcmp(p, "END", 3))
				return 0;
			if (end - p >= 6 && !memcmp(p, "VALUE ", 6)) {
				long bytes = value_bytes(p,
							 (size_t)(nl - p - 1));

				if (bytes < 0)
					return -EIO;
				(*hits)++;
				skip = (size_t)bytes + 2;
			} else {
				return -EIO;
			}
			p = nl + 1;
		}
	}
}

void ld_worker_close(struct ld_worker *w)
{
	__u32 i;

	for (i = 0; i < w->run->nshards; i++) {
		if (w->tcp_fd[i] >= 0)
			close(w->tcp_fd[i]);
		if (w->udp_fd[i] >= 0)
			close(w->udp_fd[i]);
		w->tcp_fd[i] = w->udp_fd[i] = -1;
	}
}
