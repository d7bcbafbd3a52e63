// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The --replicas list and the rendezvous choice of a key's replicas. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "core/replicas.h"

#define EXAMPLE   "198.18.0.10:11211"
#define EXAMPLE6  "[2001:2::10]:11211"
#define EXAMPLES  EXAMPLE " or " EXAMPLE6
#define ENTRY_MAX 64 /* longer than any "[v6]:port"; longer is bad */
/* Separates replica ids from other users of ks_hash_fmix, so a replica
 * id never equals some key's hash by construction. */
#define KS_RDV_SEED 0x6a09e667f3bcc908ULL

/* The entry as messages show it: cut short, so a runaway argument does
 * not swamp the message. */
static void entry_text(const char *s, size_t len, char *buf, size_t size)
{
	if (len > 40)
		snprintf(buf, size, "%.40s...", s);
	else
		snprintf(buf, size, "%.*s", (int)len, s);
}

/* 0.0.0.0 marks an unused ks_replicas slot, and packets cannot be
 * steered to a multicast or broadcast address. */
static int is_unicast(__u32 addr_be)
{
	__u32 a = ntohl(addr_be);

	return a != 0 && a != 0xffffffffu && (a >> 28) != 0xe;
}

/* Why an IPv6 address cannot be a replica, or NULL: the unspecified and
 * multicast ones cannot take a packet, a link-local one needs a zone the
 * list has no room for, and a mapped IPv4 one is an IPv4 replica. */
static const char *v6_unfit(const struct in6_addr *a)
{
	static const __u8 mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (IN6_IS_ADDR_UNSPECIFIED(a))
		return "is the unspecified address";
	if (IN6_IS_ADDR_MULTICAST(a))
		return "is multicast";
	if (IN6_IS_ADDR_LINKLOCAL(a))
		return "is link-local (it would need a zone)";
	if (!memcmp(a->s6_addr, mapped, sizeof(mapped)))
		return "is an IPv4-mapped address (give it as a.b.c.d:port)";
	return NULL;
}

static int parse_port(const char *s, __u16 *port)
{
	unsigned long v = 0;

	if (!*s || strlen(s) > 5)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (unsigned long)(*s - '0');
	}
	if (v < 1 || v > 65535)
		return -EINVAL;
	*port = (__u16)v;
	return 0;
}

void ks_replica_format(__u8 family, const union ks_inaddr *addr, __u16 port,
		       char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "";

	if (family == KS_AF_INET6) {
		inet_ntop(AF_INET6, addr->v6, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, port);
	} else {
		inet_ntop(AF_INET, &addr->v4, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, port);
	}
}

void ks_replica_entry(const struct ks_replica_addr *r, struct ks_replica *out)
{
	memset(out, 0, sizeof(*out));
	out->addr = r->addr;
	out->port = htons(r->port);
	out->family = r->family;
}

/* The address part of an entry: "a.b.c.d" or "[v6]" (brackets in buf). */
static int parse_host(char *buf, const char *shown, unsigned idx,
		      struct ks_replica_addr *r, char *err, size_t errlen)
{
	size_t n = strlen(buf);
	struct in6_addr a6;
	const char *why;

	if (buf[0] == '[') {
		if (n < 2 || buf[n - 1] != ']') {
			snprintf(
				err, errlen,
				"--replicas entry %u '%s': '%s' has no closing ']'; give [IPV6]:port like " EXAMPLE6,
				idx, shown, buf);
			return -EINVAL;
		}
		buf[n - 1] = '\0';
		if (inet_pton(AF_INET6, buf + 1, &a6) != 1) {
			snprintf(
				err, errlen,
				"--replicas entry %u '%s': '%s' is not an IPv6 address; give [IPV6]:port like " EXAMPLE6
				" (no host names, no zones)",
				idx, shown, buf + 1);
			return -EINVAL;
		}
		why = v6_unfit(&a6);
		if (why) {
			snprintf(
				err, errlen,
				"--replicas entry %u '%s': '%s' %s; give a global or unique-local unicast address like " EXAMPLE6,
				idx, shown, buf + 1, why);
			return -EINVAL;
		}
		r->family = KS_AF_INET6;
		memcpy(r->addr.v6, &a6, 16);
		return 0;
	}
	if (strchr(buf, ':')) {
		snprintf(
			err, errlen,
			"--replicas entry %u '%s': an IPv6 address goes in brackets; give [IPV6]:port like " EXAMPLE6,
			idx, shown);
		return -EINVAL;
	}
	if (inet_pton(AF_INET, buf, &r->addr.v4) != 1 ||
	    !is_unicast(r->addr.v4)) {
		snprintf(
			err, errlen,
			"--replicas entry %u '%s': '%s' is not a dotted IPv4 unicast address; give host:port like " EXAMPLES
			" (no host names)",
			idx, shown, buf);
		return -EINVAL;
	}
	r->family = KS_AF_INET;
	return 0;
}

/* One "a.b.c.d:port" or "[v6]:port" entry (not NUL-terminated) into r. */
static int parse_entry(const char *s, size_t len, unsigned idx,
		       struct ks_replica_addr *r, char *err, size_t errlen)
{
	char buf[ENTRY_MAX], shown[48];
	char *colon;

	entry_text(s, len, shown, sizeof(shown));
	if (len >= sizeof(buf)) {
		snprintf(
			err, errlen,
			"--replicas entry %u '%s' is too long; give host:port like " EXAMPLES,
			idx, shown);
		return -EINVAL;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	colon = strrchr(buf, ':');
	/* "[v6]" alone: its last colon is inside the brackets */
	if (!colon || (buf[0] == '[' && colon < strrchr(buf, ']'))) {
		snprintf(
			err, errlen,
			"--replicas entry %u '%s' has no port; give host:port like " EXAMPLES,
			idx, shown);
		return -EINVAL;
	}
	*colon = '\0';
	if (parse_host(buf, shown, idx, r, err, errlen))
		return -EINVAL;
	if (parse_port(colon + 1, &r->port)) {
		snprintf(
			err, errlen,
			"--replicas entry %u '%s': port '%s' is not a number from 1 to 65535; give host:port like " EXAMPLES,
			idx, shown, colon + 1);
		return -EINVAL;
	}
	ks_replica_format(r->family, &r->addr, r->port, r->text,
			  sizeof(r->text));
	return 0;
}

static int find_replica(const struct ks_replica_set *rs,
			const struct ks_replica_addr *r)
{
	unsigned i;

	for (i = 0; i < rs->n; i++)
		if (rs->r[i].family == r->family &&
		    !memcmp(&rs->r[i].addr, &r->addr, sizeof(r->addr)) &&
		    rs->r[i].port == r->port)
			return (int)i;
	return -1;
}

/* Adds the entry s[0..len) as entry number idx (1-based) of the list. */
static int add_entry(struct ks_replica_set *rs, const char *s, size_t len,
		     unsigned idx, char *err, size_t errlen)
{
	struct ks_replica_addr r = {};
	char shown[48];
	int dup;

	entry_text(s, len, shown, sizeof(shown));
	if (len == 0) {
		snprintf(
			err, errlen,
			"--replicas entry %u is empty; give host:port entries separated by single commas",
			idx);
		return -EINVAL;
	}
	if (rs->n >= KS_MAX_REPLICAS) {
		snprintf(
			err, errlen,
			"--replicas entry %u '%s' is one too many; give at most %d replicas",
			idx, shown, KS_MAX_REPLICAS);
		return -EINVAL;
	}
	if (parse_entry(s, len, idx, &r, err, errlen))
		return -EINVAL;
	if (rs->n && r.family != rs->r[0].family) {
		snprintf(
			err, errlen,
			"--replicas entry %u '%s' is %s but entry 1 is %s; give replicas of one family (a get is steered only to a replica of its own family)",
			idx, shown, r.family == KS_AF_INET6 ? "IPv6" : "IPv4",
			r.family == KS_AF_INET6 ? "IPv4" : "IPv6");
		return -EINVAL;
	}
	dup = find_replica(rs, &r);
	if (dup >= 0) {
		snprintf(
			err, errlen,
			"--replicas entry %u '%s' repeats entry %d; give each replica once",
			idx, shown, dup + 1);
		return -EINVAL;
	}
	rs->r[rs->n++] = r;
	return 0;
}

int ks_replicas_parse(const char *list, struct ks_replica_set *rs, char *err,
		      size_t errlen)
{
	struct ks_replica_set tmp = {};
	const char *s = list;
	unsigned idx = 1;

	if (!list || !*list) {
		snprintf(
			err, errlen,
			"--replicas needs a value; give 1 to %d replicas like " EXAMPLE
			",198.18.0.11:11211 or " EXAMPLE6 ",[2001:2::11]:11211",
			KS_MAX_REPLICAS);
		return -EINVAL;
	}
	for (;; idx++) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);

		if (add_entry(&tmp, s, len, idx, err, errlen))
			return -EINVAL;
		if (!comma)
			break;
		s = comma + 1;
	}
	*rs = tmp;
	return 0;
}

/* The replica's identity in host byte order, so every machine scores it
 * alike; mixed once so nearby addresses get unrelated ids. An IPv4
 * replica's id is what it was before IPv6 (copies do not move on an
 * upgrade), a bijection of address and port, so two never tie. An IPv6
 * one takes its address 64 bits a round and the port in a round of its
 * own (XOR-ing a port into an address word would let [a::2]:1 and
 * [a::1]:2 cancel out, as the fuzzer found): two tie only by a 64-bit
 * accident. */
static __u64 replica_id(const struct ks_replica_addr *r)
{
	__u64 v;

	if (r->family != KS_AF_INET6) {
		v = ((__u64)ntohl(r->addr.v4) << 16) | r->port;
		return ks_hash_fmix(v ^ KS_RDV_SEED);
	}
	v = ks_hash_fmix(
		KS_RDV_SEED ^ KS_AF_INET6 ^
		((__u64)ntohl(r->addr.w[0]) << 32 | ntohl(r->addr.w[1])));
	v = ks_hash_fmix(
		v ^ ((__u64)ntohl(r->addr.w[2]) << 32 | ntohl(r->addr.w[3])));
	return ks_hash_fmix(v ^ r->port);
}

__u64 ks_rendezvous_score(__u64 key_hash, const struct ks_replica_addr *r)
{
	/* fmix is a bijection: two distinct replicas never tie on a key. */
	return ks_hash_fmix(key_hash ^ replica_id(r));
}

unsigned ks_rendezvous_pick(__u64 key_hash, const struct ks_replica_set *rs,
			    unsigned k, __u8 *out)
{
	__u64 score[KS_MAX_REPLICAS];
	__u8 taken[KS_MAX_REPLICAS] = {};
	unsigned n = rs->n < KS_MAX_REPLICAS ? rs->n : KS_MAX_REPLICAS;
	unsigned i, j;

	if (k > n)
		k = n;
	for (i = 0; i < n; i++)
		score[i] = ks_rendezvous_score(key_hash, &rs->r[i]);
	/* Selection of the k best: n is at most 16, a sort buys nothing.
	 * Equal scores (only a hand-built set with duplicates) keep the
	 * lower index, so the result stays deterministic. */
	for (j = 0; j < k; j++) {
		int best = -1;

		for (i = 0; i < n; i++)
			if (!taken[i] && (best < 0 || score[i] > score[best]))
				best = (int)i;
		taken[best] = 1;
		out[j] = (__u8)best;
	}
	return k;
}
