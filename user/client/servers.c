// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * servers.c - one memcached connection per server per handle (client.h),
 * indexed by the view's server ids, each opened on first use with the
 * handle's timeout (net/mc_client.h: re-opened once when a kept
 * connection turns out broken, closed after any error).
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "client/client.h"

void ksc_server_name(struct keysteer *ks, unsigned id, char *buf, size_t len)
{
	const struct ksc_view *v = ksc_rdlock(ks);

	snprintf(buf, len, "%s", id < v->nsrv ? v->srv[id].name : "?");
	ksc_unlock(ks);
}

/* "host:port" or "[v6]:port" to an address: a literal, else the
 * resolver's first (IPv4 for names, as the ring's names are hashed). */
static int resolve(const char *name, __u8 *family, union ks_inaddr *addr,
		   __u16 *port)
{
	const char *colon = strrchr(name, ':');
	struct addrinfo hints = { .ai_family = AF_INET }, *res;
	char host[KSC_ADDR_MAX];
	size_t hl;
	long p;
	char *end;

	if (!colon || colon == name || (size_t)(colon - name) >= sizeof(host))
		return -EINVAL;
	p = strtol(colon + 1, &end, 10);
	if (*end || p < 1 || p > 65535)
		return -EINVAL;
	hl = (size_t)(colon - name);
	memcpy(host, name, hl);
	host[hl] = '\0';
	*port = (__u16)p;
	memset(addr, 0, sizeof(*addr));
	if (hl > 2 && host[0] == '[' && host[hl - 1] == ']') {
		host[hl - 1] = '\0';
		*family = KS_AF_INET6;
		return inet_pton(AF_INET6, host + 1, addr) == 1 ? 0 : -EINVAL;
	}
	*family = KS_AF_INET;
	if (inet_pton(AF_INET, host, addr) == 1)
		return 0;
	if (getaddrinfo(host, NULL, &hints, &res) || !res)
		return -EHOSTUNREACH;
	memcpy(addr, &((struct sockaddr_in *)res->ai_addr)->sin_addr, 4);
	freeaddrinfo(res);
	return 0;
}

struct ksc_conn *ksc_conn_get(struct keysteer *ks, unsigned id)
{
	char name[KSC_ADDR_MAX];
	struct ksc_conn *c;
	union ks_inaddr addr;
	__u8 family;
	__u16 port;

	if (id >= ks->nconn) {
		unsigned n = id + 16;

		c = realloc(ks->conn, n * sizeof(*c));
		if (!c) {
			ksc_err(ks, -ENOMEM, "out of memory");
			return NULL;
		}
		memset(c + ks->nconn, 0, (n - ks->nconn) * sizeof(*c));
		ks->conn = c;
		ks->nconn = n;
	}
	c = &ks->conn[id];
	if (!c->resolved) {
		ksc_server_name(ks, id, name, sizeof(name));
		c->resolved = resolve(name, &family, &addr, &port) ? -1 : 1;
		if (c->resolved > 0)
			ks_mc_init(&c->mc, family, &addr, port, ks->timeout_ms);
	}
	if (c->resolved < 0) {
		ksc_server_name(ks, id, name, sizeof(name));
		ksc_err(ks, -EHOSTUNREACH, "server %s does not resolve", name);
		return NULL;
	}
	return c;
}

int ksc_conn_init(struct keysteer *ks, unsigned id, struct ks_mc_conn *mc)
{
	char name[KSC_ADDR_MAX];
	union ks_inaddr addr;
	__u8 family;
	__u16 port;

	ksc_server_name(ks, id, name, sizeof(name));
	if (resolve(name, &family, &addr, &port))
		return -EHOSTUNREACH;
	ks_mc_init(mc, family, &addr, port, ks->timeout_ms);
	return 0;
}

void ksc_conns_close(struct keysteer *ks)
{
	unsigned i;

	for (i = 0; i < ks->nconn; i++)
		if (ks->conn[i].resolved > 0)
			ks_mc_close(&ks->conn[i].mc);
	free(ks->conn);
	ks->conn = NULL;
	ks->nconn = 0;
}
