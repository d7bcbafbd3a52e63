// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ring.c - the ring builder. Each distribution follows its client's own
 * source (read, not copied):
 *  - libmemcached 1.x hosts.cc update_continuum() with weighted ketama:
 *    points per server floor(pct * 160/4 * nservers + 1e-10) * 4, computed
 *    in float; point names "host-i" when the port is 11211, else
 *    "host:port-i", i from 0; four points per MD5 digest (digest bytes
 *    4a..4a+3 little-endian for a = 0..3); sorted by value then server
 *    index; keys hashed with MD5 (digest bytes 0..3 little-endian).
 *  - twemproxy nc_ketama.c ketama_update(): the same, with the server's
 *    name (the optional "name" of its config line, else "host" for port
 *    11211 and "host:port" otherwise, see nc_conf.c) and its own float
 *    expression; sorted by value only with glibc's stable qsort, so ties
 *    keep server order. Keys hashed with hash_fnv1a_64 or hash_md5.
 *  - both dispatch to the first point >= hash, wrapping to point 0.
 *  - pymemcache 3.5 client/rendezvous.py RendezvousHash.get_node(): for
 *    every node, murmur3_32 (client/murmur3.py, seed 0) of the str
 *    "%s-%s" % (node, key), node "host:port" (client/hash.py
 *    _make_client_key); the highest score wins, a tie the greater node
 *    name. Its murmur3 reads ord(c) & 0xff per character of the str.
 *  - twemproxy nc_modula.c modula_update(): one slot per unit of weight,
 *    servers in order; modula_dispatch() takes slot hash % slots. Its
 *    random distribution places keys at random: it cannot be modelled.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "core/ring.h"
#include "core/ring_build.h"
#include "core/ring_clients.h"
#include "util/opts.h"

static const char *const dist_names[KS_DIST_ALL] = {
	[KS_DIST_KETAMA] = "ketama",
	[KS_DIST_TWEMPROXY] = "twemproxy",
	[KS_DIST_TWEMPROXY_MD5] = "twemproxy-md5",
	[KS_DIST_VNODE] = "vnode",
	[KS_DIST_MODULA] = "modula",
	[KS_DIST_KETAMA_PLAIN] = "ketama-plain",
	[KS_DIST_DALLI] = "dalli",
	[KS_DIST_SPY] = "spymemcached",
	[KS_DIST_SPY_LIBMC] = "spymemcached-libmemcached",
	[KS_DIST_MODULA_OAAT] = "modula-oaat",
	[KS_DIST_TWEMPROXY_MODULA] = "twemproxy-modula",
	[KS_DIST_PYMEMCACHE] = "pymemcache",
	[KS_DIST_PYMEMCACHE_BYTES] = "pymemcache-bytes",
};

#define DIST_LIST                                                              \
	"ketama, twemproxy, twemproxy-md5, vnode, modula, ketama-plain, dalli, spymemcached, spymemcached-libmemcached, modula-oaat, twemproxy-modula, pymemcache or pymemcache-bytes"

static const char *const key_hash_names[KS_KH_MAX] = {
	[KS_KH_MD5] = "md5",           [KS_KH_ONE_AT_A_TIME] = "one_at_a_time",
	[KS_KH_CRC16] = "crc16",       [KS_KH_CRC32] = "crc32",
	[KS_KH_CRC32A] = "crc32a",     [KS_KH_FNV1_64] = "fnv1_64",
	[KS_KH_FNV1A_64] = "fnv1a_64", [KS_KH_FNV1_32] = "fnv1_32",
	[KS_KH_FNV1A_32] = "fnv1a_32", [KS_KH_HSIEH] = "hsieh",
	[KS_KH_MURMUR] = "murmur",     [KS_KH_JENKINS] = "jenkins",
};

#define KEY_HASH_LIST                                                          \
	"md5, one_at_a_time, crc16, crc32, crc32a, fnv1_64, fnv1a_64, fnv1_32, fnv1a_32, hsieh, murmur or jenkins"

int ks_key_hash_parse(const char *s, __u32 *out, char *err, size_t errlen)
{
	__u32 i;

	for (i = 0; i < KS_KH_MAX; i++) {
		if (s && !strcmp(s, key_hash_names[i])) {
			*out = i;
			return 0;
		}
	}
	snprintf(err, errlen, "unknown key hash '%s'; use " KEY_HASH_LIST,
		 s ? s : "");
	return -EINVAL;
}

const char *ks_key_hash_name(__u32 kh)
{
	return kh < KS_KH_MAX ? key_hash_names[kh] : "?";
}

int ks_ring_key_tag(struct ks_ring_key *k, const char *arg, char *err,
		    size_t errlen)
{
	if (!arg || strlen(arg) != 2) {
		snprintf(
			err, errlen,
			"--hash-tag '%s' is not two characters; give the tag's opening and closing character, as nutcracker's hash_tag (e.g. {})",
			arg ? arg : "");
		return -EINVAL;
	}
	memcpy(k->tag, arg, 3);
	return 0;
}

int ks_dist_in_kernel(__u32 dist)
{
	return dist < KS_DIST_MAX;
}

int ks_ring_in_kernel(const struct ks_ring *r, char *err, size_t errlen)
{
	const struct ks_ring_meta *m = &r->half->meta;

	if (!ks_dist_in_kernel(m->dist)) {
		snprintf(
			err, errlen,
			"--distribution %s is user space only (the datapath cannot write out a bytes key's repr): agent run and replay would count every shard wrong; use it with 'agent ring lookup', or pymemcache for str keys",
			ks_dist_name(m->dist));
		return -EOPNOTSUPP;
	}
	if (m->dist == KS_DIST_PYMEMCACHE && m->nshards > KS_RDV_MAX_NODES) {
		snprintf(
			err, errlen,
			"--distribution pymemcache runs in the datapath for at most %u shards (one murmur3 per shard per key) and this list has %u; use it with 'agent ring lookup', or fewer shards",
			KS_RDV_MAX_NODES, m->nshards);
		return -E2BIG;
	}
	return 0;
}

int ks_ring_kernel_places(const struct ks_ring *r, const void *key, size_t len)
{
	const __u8 *p = key;
	size_t i;

	if (!r->half || r->half->meta.dist != KS_DIST_PYMEMCACHE ||
	    r->half->meta.nshards <= 1)
		return 1;
	for (i = 0; i < len && i < KS_MAX_KEY_LEN; i++)
		if (p[i] >= 0x80)
			return 0;
	return 1;
}

int ks_dist_parse(const char *s, enum ks_dist *out, char *err, size_t errlen)
{
	int i;

	for (i = 0; i < KS_DIST_ALL; i++) {
		if (s && !strcmp(s, dist_names[i])) {
			*out = (enum ks_dist)i;
			return 0;
		}
	}
	if (s && !strcmp(s, "twemproxy-random")) {
		snprintf(
			err, errlen,
			"twemproxy's random distribution sends each request to a server at random, so no ring can say where a key is; keysteer models ketama (twemproxy) and modula (twemproxy-modula)");
		return -EINVAL;
	}
	snprintf(err, errlen, "unknown distribution '%s'; use " DIST_LIST,
		 s ? s : "");
	return -EINVAL;
}

const char *ks_dist_name(__u32 dist)
{
	return dist < KS_DIST_ALL ? dist_names[dist] : "?";
}

char *ks_put_u32(char *p, __u32 v)
{
	char tmp[10];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

size_t ks_client_base(const struct ks_shard *sh, char *buf, size_t len)
{
	if (sh->port == KS_MEMCACHED_PORT)
		return (size_t)snprintf(buf, len, "%s", sh->host);
	return (size_t)snprintf(buf, len, "%s:%u", sh->host, sh->port);
}

int ks_ring_room(const struct ks_ring_builder *b, __u32 nshards, __u64 count,
		 char *err, size_t errlen)
{
	if (b->n + count <= b->cap)
		return 0;
	snprintf(
		err, errlen,
		"ring of %u shards needs more than %u points; report this as a bug",
		nshards, b->cap);
	return -E2BIG;
}

void ks_ring_add_point(struct ks_ring_builder *b, __u32 value, __u32 shard)
{
	b->pts[b->n].value = value;
	b->pts[b->n].shard = shard;
	b->n++;
}

void ks_ring_add_ketama_points(struct ks_ring_builder *b, __u32 shard,
			       const char *base, size_t blen, char sep,
			       __u32 count)
{
	char name[KS_SHARD_NAME_MAX + 32];
	__u32 i, st[4], a;

	memcpy(name, base, blen);
	name[blen] = sep;
	for (i = 0; i < count / 4; i++) {
		char *end = ks_put_u32(name + blen + 1, i);

		ks_md5_bytes(name, (__u64)(end - name), st);
		for (a = 0; a < 4; a++)
			ks_ring_add_point(b, st[a], shard);
	}
}

/* libmemcached: float arithmetic throughout, as its C++ computes it. */
static __u32 libmemcached_points(__u32 weight, __u64 total, __u32 n)
{
	float pct = (float)weight / (float)total;
	float t = pct * KS_RING_POINTS_PER_SHARD / 4 * (float)n + 0.0000000001F;

	return (__u32)(floor(t) * 4);
}

/* twemproxy: the same, but its epsilon is a double, and floorf. */
static __u32 twemproxy_points(__u32 weight, __u32 total, __u32 n)
{
	float pct = (float)weight / (float)total;
	float t = (float)(pct * KS_RING_POINTS_PER_SHARD / 4 * (float)n +
			  0.0000000001);

	return (__u32)(floorf(t) * 4);
}

/* twemproxy's name of a server: its own, else as ks_client_base(). */
static size_t twemproxy_name(const struct ks_shard *sh, char *buf, size_t len)
{
	if (sh->name[0])
		return (size_t)snprintf(buf, len, "%s", sh->name);
	return ks_client_base(sh, buf, len);
}

static int twemproxy_name_cmp(const void *x, const void *y, void *arg)
{
	const struct ks_shards *s = arg;
	__u32 i = *(const __u32 *)x, j = *(const __u32 *)y;
	char a[KS_SHARD_NAME_MAX + 16], b[KS_SHARD_NAME_MAX + 16];
	size_t la = twemproxy_name(&s->v[i], a, sizeof(a));
	size_t lb = twemproxy_name(&s->v[j], b, sizeof(b));
	int c;

	if (la != lb)
		return la < lb ? -1 : 1;
	c = memcmp(a, b, la);
	return c ? c : (i < j ? -1 : i > j);
}

/*
 * The order nutcracker keeps a pool's servers in: conf_validate_server()
 * sorts them by name (shorter first, then bytewise) to find duplicates,
 * and the pool's servers are that array. Modula's slots and ketama's ties
 * follow it, not the order of the config file.
 */
static void twemproxy_order(const struct ks_shards *s, __u32 *order)
{
	__u32 i;

	for (i = 0; i < s->n; i++)
		order[i] = i;
	qsort_r(order, s->n, sizeof(*order), twemproxy_name_cmp, (void *)s);
}

static int build_ketama(struct ks_ring_builder *b, const struct ks_shards *s,
			enum ks_dist dist, char *err, size_t errlen)
{
	__u32 order[KS_MAX_SHARDS];
	__u64 total = 0;
	__u32 k, i;

	for (i = 0; i < s->n; i++)
		total += s->v[i].weight;
	twemproxy_order(s, order);
	for (k = 0; k < s->n; k++) {
		/* libmemcached keeps the given order */
		const struct ks_shard *sh;

		i = dist == KS_DIST_KETAMA ? k : order[k];
		sh = &s->v[i];
		char base[KS_SHARD_NAME_MAX + 16];
		size_t blen;
		__u32 count;

		if (dist == KS_DIST_KETAMA) {
			count = libmemcached_points(sh->weight, total, s->n);
			blen = ks_client_base(sh, base, sizeof(base));
		} else {
			count = twemproxy_points(sh->weight, (__u32)total,
						 s->n);
			blen = twemproxy_name(sh, base, sizeof(base));
			/* the longest name is base-<count/4 - 1> */
			if (count &&
			    blen + 1 +
					    (size_t)snprintf(NULL, 0, "%u",
							     count / 4 - 1) >
				    KS_TWEMPROXY_NAME_MAX) {
				snprintf(
					err, errlen,
					"shard '%s' (%s line %u): twemproxy cannot hash point names over %d bytes; give it a shorter name",
					base, s->source, sh->line,
					KS_TWEMPROXY_NAME_MAX);
				return -ENAMETOOLONG;
			}
		}
		if (ks_ring_room(b, s->n, count, err, errlen))
			return -E2BIG;
		ks_ring_add_ketama_points(b, i, base, blen, '-', count);
	}
	return 0;
}

/*
 * vnode: shard i gets max(1, floor(vnodes * n * w_i / W)) points (exactly
 * vnodes when the weights are equal), named "name#j" for j from 0, where
 * name is the shard's name or "host:port"; a point's value is the ketama
 * hash (MD5 bytes 0..3 little-endian) of its name.
 */
static int build_vnode(struct ks_ring_builder *b, const struct ks_shards *s,
		       __u32 vnodes, char *err, size_t errlen)
{
	__u64 total = 0, need = 0;
	__u32 i, j;

	for (i = 0; i < s->n; i++)
		total += s->v[i].weight;
	for (i = 0; i < s->n; i++) {
		__u64 c = (__u64)vnodes * s->n * s->v[i].weight / total;

		need += c ? c : 1;
	}
	if (need > b->cap) {
		snprintf(
			err, errlen,
			"--vnodes %u for %u shards needs %llu points, more than the ring's %d; lower --vnodes to at most %u",
			vnodes, s->n, (unsigned long long)need,
			KS_RING_MAX_POINTS, KS_RING_MAX_POINTS / s->n);
		return -E2BIG;
	}
	for (i = 0; i < s->n; i++) {
		const struct ks_shard *sh = &s->v[i];
		__u64 c = (__u64)vnodes * s->n * sh->weight / total;
		char name[KS_SHARD_NAME_MAX + 32];
		size_t blen;
		__u32 st[4];

		if (!c)
			c = 1;
		if (sh->name[0])
			blen = (size_t)snprintf(name, sizeof(name), "%s#",
						sh->name);
		else
			blen = (size_t)snprintf(name, sizeof(name), "%s:%u#",
						sh->host, sh->port);
		for (j = 0; j < c; j++) {
			char *end = ks_put_u32(name + blen, j);

			ks_md5_bytes(name, (__u64)(end - name), st);
			ks_ring_add_point(b, st[0], i);
		}
	}
	return 0;
}

/*
 * twemproxy's modula: a slot per unit of weight, in server order, and a
 * key in slot hash % (sum of weights). As one point per shard, whose
 * value is the shard's last slot, so the ring search finds the owner of
 * a slot and weights up to KS_SHARD_WEIGHT_MAX need no slot array. The
 * slots are in nutcracker's order of its servers (twemproxy_order).
 */
static int build_modula_weights(struct ks_ring_builder *b,
				const struct ks_shards *s)
{
	__u32 order[KS_MAX_SHARDS], k, cum = 0;

	twemproxy_order(s, order);
	for (k = 0; k < s->n; k++) {
		cum += s->v[order[k]].weight;
		ks_ring_add_point(b, cum - 1, order[k]);
	}
	return 0;
}

/*
 * Stable LSD radix sort by value, two 16-bit passes. Points arrive in
 * shard order, so equal values stay in shard order: ties go to the lower
 * shard index, as in libmemcached (explicit) and twemproxy (stable qsort).
 */
static int sort_points(struct ks_ring_point *out, struct ks_ring_point *in,
		       __u32 n)
{
	__u32 *count = calloc(65536, sizeof(*count));
	__u32 i, pass, sum;

	if (!count)
		return -ENOMEM;
	for (pass = 0; pass < 2; pass++) {
		struct ks_ring_point *src = pass ? out : in;
		struct ks_ring_point *dst = pass ? in : out;
		__u32 shift = pass * 16;

		memset(count, 0, 65536 * sizeof(*count));
		for (i = 0; i < n; i++)
			count[(src[i].value >> shift) & 0xffff]++;
		for (i = 0, sum = 0; i < 65536; i++) {
			__u32 c = count[i];

			count[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			dst[count[(src[i].value >> shift) & 0xffff]++] = src[i];
	}
	/* two passes end in `in` */
	memcpy(out, in, (size_t)n * sizeof(*out));
	free(count);
	return 0;
}

static __u64 fnv_bytes(__u64 h, const void *p, size_t len)
{
	const __u8 *b = p;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= KS_FNV64_PRIME;
	}
	return h;
}

static __u64 fnv_u32(__u64 h, __u32 v)
{
	__u8 le[4] = { (__u8)v, (__u8)(v >> 8), (__u8)(v >> 16),
		       (__u8)(v >> 24) };

	return fnv_bytes(h, le, 4);
}

__u64 ks_ring_digest(const struct ks_ring_half *h, const struct ks_shards *s)
{
	__u64 d = KS_FNV64_OFFSET;
	char addr[KS_SHARD_HOST_MAX + 8];
	__u32 i;

	d = fnv_u32(d, h->meta.dist);
	d = fnv_u32(d, h->meta.nshards);
	d = fnv_u32(d, h->meta.npoints);
	for (i = 0; i < s->n; i++) {
		ks_shard_addr(&s->v[i], addr, sizeof(addr));
		d = fnv_bytes(d, addr, strlen(addr));
		d = fnv_bytes(d, "\n", 1);
	}
	for (i = 0; i < h->meta.npoints && i < KS_RING_MAX_POINTS; i++) {
		d = fnv_u32(d, h->points[i].value);
		d = fnv_u32(d, h->points[i].shard);
	}
	if (h->meta.key_hash != ks_dist_default_key_hash(h->meta.dist) ||
	    h->meta.tagged) {
		__u8 tag[2] = { 0, 0 };

		if (h->meta.tagged)
			memcpy(tag, h->meta.hash_tag, 2);
		d = fnv_bytes(d, "key", 3);
		d = fnv_u32(d, h->meta.key_hash);
		d = fnv_bytes(d, tag, 2);
	}
	return d;
}

void ks_ring_index(struct ks_ring_half *h)
{
	__u32 n = h->meta.npoints, b, i = 0;

	if (n > KS_RING_MAX_POINTS)
		n = KS_RING_MAX_POINTS;
	for (b = 0; b < KS_RING_BUCKETS; b++) {
		__u64 floor_value = (__u64)b << KS_RING_BUCKET_SHIFT;

		while (i < n && h->points[i].value < floor_value)
			i++;
		h->bucket[b] = i;
	}
	h->bucket[KS_RING_BUCKETS] = n;
}

static inline __u32 le32(const __u8 *p)
{
	return (__u32)p[0] | (__u32)p[1] << 8 | (__u32)p[2] << 16 |
	       (__u32)p[3] << 24;
}

__u32 ks_murmur3_units(const __u8 *units, size_t n)
{
	__u32 h = 0, k = 0;
	size_t i, whole = n & ~(size_t)3;

	for (i = 0; i < whole; i += 4)
		h = ks_mm3_mix(h, le32(units + i));
	for (i = n; i > whole; i--)
		k = k << 8 | units[i - 1];
	return ks_mm3_final(h, k, (__u32)(n & 3), (__u32)n);
}

/* Length of the valid UTF-8 sequence at p (as Python decodes: no
 * overlongs, no surrogates, at most U+10FFFF) and its code point; 0 when
 * the byte at p does not start one. */
static size_t utf8_seq(const __u8 *p, size_t n, __u32 *cp)
{
	__u32 c = p[0], lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, c &= 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, c &= 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, c &= 0x07;
	else
		return 0;
	if (p[0] == 0xe0)
		lo = 0xa0;
	else if (p[0] == 0xed)
		hi = 0x9f;
	else if (p[0] == 0xf0)
		lo = 0x90;
	else if (p[0] == 0xf4)
		hi = 0x8f;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if (p[i] < (i == 1 ? lo : 0x80) || p[i] > (i == 1 ? hi : 0xbf))
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	*cp = c;
	return len;
}

size_t ks_pymemcache_units(const void *key, size_t len, int bytes_key,
			   __u8 *out, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	const __u8 *p = key;
	size_t i = 0, o = 0;
	__u8 q = '\'';

	if (!bytes_key) {
		/* a byte outside valid UTF-8 stands for itself, as Python's
		 * surrogateescape would make it (U+DC80..U+DCFF) */
		while (i < len && o < cap) {
			__u32 cp = p[i];
			size_t n = utf8_seq(p + i, len - i, &cp);

			out[o++] = (__u8)cp;
			i += n ? n : 1;
		}
		return o;
	}
	/* repr(bytes): double quotes when it holds ' and no " */
	if (memchr(p, '\'', len) && !memchr(p, '"', len))
		q = '"';
#define PUT(c)                                                                 \
	do {                                                                   \
		if (o < cap)                                                   \
			out[o++] = (c);                                        \
	} while (0)
	PUT('b');
	PUT(q);
	for (i = 0; i < len; i++) {
		__u8 c = p[i];

		if (c == q || c == '\\') {
			PUT('\\');
			PUT(c);
		} else if (c == '\t' || c == '\n' || c == '\r') {
			PUT('\\');
			PUT(c == '\t' ? 't' : c == '\n' ? 'n' : 'r');
		} else if (c < 0x20 || c >= 0x7f) {
			PUT('\\');
			PUT('x');
			PUT(hex[c >> 4]);
			PUT(hex[c & 15]);
		} else {
			PUT(c);
		}
	}
	PUT(q);
#undef PUT
	return o;
}

/*
 * The nodes as the datapath reads them (bpf/ks_ring.h struct
 * ks_rdv_slot): the murmur3 state and the rank of each name among them.
 */
static void rdv_slots(struct ks_ring_half *h, const struct ks_rdv_node *nd,
		      __u32 n)
{
	__u32 i, j, rank;

	for (i = 0; i < n; i++) {
		for (rank = 0, j = 0; j < n; j++)
			rank += strcmp(nd[j].name, nd[i].name) < 0;
		h->rdv[i] = (struct ks_rdv_slot){ .h = nd[i].h,
						  .tail = nd[i].tail,
						  .len = nd[i].len,
						  .rank = rank };
	}
}

/* "host:port" as pymemcache names a (host, port) server (brackets of an
 * IPv6 literal stripped, as normalize_server_spec does), or the name. */
static int build_rendezvous(struct ks_ring *r, const struct ks_shards *s,
			    char *err, size_t errlen)
{
	size_t cap = 0, off = 0;
	__u32 i;

	if (ks_ring_unweighted(s, "pymemcache's HashClient", "drop it", err,
			       errlen))
		return -EINVAL;
	for (i = 0; i < s->n; i++)
		cap += strlen(s->v[i].host) + strlen(s->v[i].name) + 8;
	r->rdv = calloc(s->n, sizeof(*r->rdv));
	r->rdv_names = malloc(cap);
	if (!r->rdv || !r->rdv_names) {
		snprintf(err, errlen, "out of memory; free some memory");
		return -ENOMEM;
	}
	for (i = 0; i < s->n; i++) {
		const struct ks_shard *sh = &s->v[i];
		struct ks_rdv_node *nd = &r->rdv[i];
		char *name = r->rdv_names + off;
		const char *host = sh->host;
		size_t hl = strlen(host), n, j, whole;
		__u8 units[KS_SHARD_HOST_MAX + KS_SHARD_NAME_MAX + 16];

		if (sh->name[0]) {
			n = (size_t)snprintf(name, cap - off, "%s", sh->name);
		} else {
			if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']')
				host++, hl -= 2;
			n = (size_t)snprintf(name, cap - off, "%.*s:%u",
					     (int)hl, host, sh->port);
		}
		off += n + 1;
		nd->name = name;
		/* "node-" as units: the name is a str too */
		n = ks_pymemcache_units(name, n, 0, units, sizeof(units) - 1);
		units[n++] = '-';
		whole = n & ~(size_t)3;
		for (j = 0; j < whole; j += 4)
			nd->h = ks_mm3_mix(nd->h, le32(units + j));
		for (j = n; j > whole; j--)
			nd->tail = nd->tail << 8 | units[j - 1];
		nd->len = (__u32)n;
	}
	if (s->n <= KS_RDV_MAX_NODES)
		rdv_slots(r->half, r->rdv, s->n);
	return 0;
}

/* The key's units as little-endian words starting at each offset 0..3:
 * w[o][j] holds units o + 4j .. o + 4j + 3 (zero past the end). */
#define RDV_UNITS_MAX (4 * KS_MAX_KEY_LEN + 3)
#define RDV_WORDS     (RDV_UNITS_MAX / 4 + 2)

static __u32 rendezvous_owner(const struct ks_ring *r, const void *key,
			      size_t len)
{
	__u8 u[RDV_UNITS_MAX + 8] = {};
	__u32 w[4][RDV_WORDS], best = 0, best_score = 0, i;
	size_t n, o, j;

	if (len > KS_MAX_KEY_LEN)
		len = KS_MAX_KEY_LEN;
	n = ks_pymemcache_units(key, len,
				r->half->meta.dist == KS_DIST_PYMEMCACHE_BYTES,
				u, RDV_UNITS_MAX);
	for (o = 0; o < 4; o++)
		for (j = 0; o + 4 * j < n + 4 && j < RDV_WORDS; j++)
			w[o][j] = le32(u + o + 4 * j);
	for (i = 0; i < r->half->meta.nshards; i++) {
		const struct ks_rdv_node *nd = &r->rdv[i];
		__u32 t = nd->len & 3, h = nd->h, k, score;
		size_t total = nd->len + n, rest, whole, lead;

		/* the first block: the node's held-back units, then the key's */
		lead = t ? 4 - t : 0;
		if (t && n >= lead) {
			k = nd->tail;
			for (j = 0; j < lead; j++)
				k |= (__u32)u[j] << (8 * (t + j));
			h = ks_mm3_mix(h, k);
			rest = n - lead;
			whole = rest / 4;
			for (j = 0; j < whole; j++)
				h = ks_mm3_mix(h, w[lead][j]);
			k = rest & 3 ? w[lead][whole] : 0;
		} else if (t) { /* the key ends inside the first block */
			k = nd->tail;
			for (j = 0; j < n; j++)
				k |= (__u32)u[j] << (8 * (t + j));
		} else {
			whole = n / 4;
			for (j = 0; j < whole; j++)
				h = ks_mm3_mix(h, w[0][j]);
			k = n & 3 ? w[0][whole] : 0;
		}
		score = ks_mm3_final(h, k, (__u32)(total & 3), (__u32)total);
		if (!i || score > best_score ||
		    (score == best_score &&
		     strcmp(nd->name, r->rdv[best].name) > 0)) {
			best = i;
			best_score = score;
		}
	}
	return best;
}

/* The key hash and tag of a ring, checked; twemproxy's ketama named by
 * its hash (see ks_ring_build_keyed). */
static int ring_key(enum ks_dist *dist, const struct ks_ring_key *key,
		    struct ks_ring_meta *m, char *err, size_t errlen)
{
	int pm = *dist == KS_DIST_PYMEMCACHE ||
		 *dist == KS_DIST_PYMEMCACHE_BYTES;

	m->key_hash = ks_dist_default_key_hash(*dist);
	if (!key)
		return 0;
	if (pm && (key->hash >= 0 || key->tag[0])) {
		snprintf(
			err, errlen,
			"%s hashes \"host:port-key\" with murmur3 and has no hash tag; drop --key-hash and --hash-tag",
			ks_dist_name(*dist));
		return -EINVAL;
	}
	if (key->hash >= KS_KH_MAX) {
		snprintf(err, errlen, "unknown key hash %d; use " KEY_HASH_LIST,
			 key->hash);
		return -EINVAL;
	}
	if (key->hash >= 0)
		m->key_hash = (__u32)key->hash;
	if (*dist == KS_DIST_TWEMPROXY || *dist == KS_DIST_TWEMPROXY_MD5)
		*dist = m->key_hash == KS_KH_MD5 ? KS_DIST_TWEMPROXY_MD5
						 : KS_DIST_TWEMPROXY;
	if (key->tag[0]) {
		memcpy(m->hash_tag, key->tag, 2);
		m->tagged = 1;
	}
	return 0;
}

int ks_ring_build(struct ks_ring *r, const struct ks_shards *shards,
		  enum ks_dist dist, __u32 vnodes, __u64 version, char *err,
		  size_t errlen)
{
	return ks_ring_build_keyed(r, shards, dist, NULL, vnodes, version, err,
				   errlen);
}

int ks_ring_build_keyed(struct ks_ring *r, const struct ks_shards *shards,
			enum ks_dist dist, const struct ks_ring_key *key,
			__u32 vnodes, __u64 version, char *err, size_t errlen)
{
	struct ks_ring_builder b = { .cap = KS_RING_MAX_POINTS };
	struct ks_ring_meta km = {};
	int rc = 0;

	memset(r, 0, sizeof(*r));
	if (!shards->n || shards->n > KS_MAX_SHARDS) {
		snprintf(
			err, errlen,
			"a ring needs 1 to %d shards, %s lists %u; fix the shard list",
			KS_MAX_SHARDS, shards->source, shards->n);
		return -EINVAL;
	}
	if ((unsigned)dist >= KS_DIST_ALL) {
		snprintf(err, errlen, "unknown distribution %u; use " DIST_LIST,
			 (unsigned)dist);
		return -EINVAL;
	}
	if (ring_key(&dist, key, &km, err, errlen))
		return -EINVAL;
	if (!vnodes)
		vnodes = KS_VNODES_DEFAULT;
	r->half = calloc(1, sizeof(*r->half));
	if (ks_dist_in_kernel(dist) && dist != KS_DIST_MODULA)
		b.pts = malloc((size_t)b.cap * sizeof(*b.pts));
	if (!r->half ||
	    (ks_dist_in_kernel(dist) && dist != KS_DIST_MODULA && !b.pts)) {
		snprintf(
			err, errlen,
			"out of memory building a ring of %u shards; free some memory",
			shards->n);
		rc = -ENOMEM;
		goto out;
	}
	switch ((__u32)dist) {
	case KS_DIST_KETAMA:
	case KS_DIST_TWEMPROXY:
	case KS_DIST_TWEMPROXY_MD5:
		rc = build_ketama(&b, shards, dist, err, errlen);
		break;
	case KS_DIST_VNODE:
		rc = build_vnode(&b, shards, vnodes, err, errlen);
		break;
	case KS_DIST_KETAMA_PLAIN:
		rc = ks_ring_build_ketama_plain(&b, shards, err, errlen);
		break;
	case KS_DIST_DALLI:
		rc = ks_ring_build_dalli(&b, shards, err, errlen);
		break;
	case KS_DIST_SPY:
	case KS_DIST_SPY_LIBMC:
		rc = ks_ring_build_spy(&b, shards, dist, err, errlen);
		break;
	case KS_DIST_TWEMPROXY_MODULA:
		rc = build_modula_weights(&b, shards);
		break;
	case KS_DIST_PYMEMCACHE:
	case KS_DIST_PYMEMCACHE_BYTES:
		rc = build_rendezvous(r, shards, err, errlen);
		break;
	default:
		break;
	}
	if (rc)
		goto out;
	if (b.n && sort_points(r->half->points, b.pts, b.n)) {
		snprintf(err, errlen,
			 "out of memory sorting the ring; free some memory");
		rc = -ENOMEM;
		goto out;
	}
	r->half->meta.npoints = b.n;
	ks_ring_index(r->half);
	r->half->meta.nshards = shards->n;
	r->half->meta.dist = dist;
	r->half->meta.key_hash = km.key_hash;
	memcpy(r->half->meta.hash_tag, km.hash_tag, 2);
	r->half->meta.tagged = km.tagged;
	r->half->meta.self = shards->self;
	r->half->meta.version = version;
	r->half->meta.digest = ks_ring_digest(r->half, shards);
	if (r->rdv) /* the nodes' names place keys too */
		for (__u32 i = 0; i < shards->n; i++)
			r->half->meta.digest = fnv_bytes(
				r->half->meta.digest, r->rdv[i].name,
				strlen(r->rdv[i].name) + 1);
	r->vnodes = dist == KS_DIST_VNODE ? vnodes : 0;
out:
	free(b.pts);
	if (rc)
		ks_ring_free(r);
	return rc;
}

void ks_ring_free(struct ks_ring *r)
{
	free(r->half);
	free(r->rdv);
	free(r->rdv_names);
	r->half = NULL;
	r->rdv = NULL;
	r->rdv_names = NULL;
}

__u32 ks_ring_hash(const struct ks_ring *r, const void *key, size_t len)
{
	const struct ks_ring_meta *m = &r->half->meta;
	__u64 buf[KS_KEY_WORDS] = {};
	__u32 n, i, start;

	if (len > KS_MAX_KEY_LEN)
		len = KS_MAX_KEY_LEN;
	memcpy(buf, key, len);
	n = (__u32)len;
	if (m->tagged) {
		struct ks_tag t = { .open = m->hash_tag[0],
				    .close = m->hash_tag[1] };

		for (i = 0; i < n; i++)
			if (ks_tag_step(&t, i, ((const __u8 *)buf)[i]))
				break;
		n = ks_tag_span(&t, n, &start);
		ks_key_shift(buf, start);
	}
	return ks_ring_meta_hash(m, buf, n);
}

__u32 ks_ring_lookup(const struct ks_ring *r, const void *key, size_t len)
{
	if (!r->half)
		return KS_NO_SHARD;
	if (r->rdv)
		return rendezvous_owner(r, key, len);
	return ks_ring_owner(r->half, ks_ring_hash(r, key, len));
}

void ks_ring_point_counts(const struct ks_ring *r, __u32 *counts)
{
	__u32 i;

	memset(counts, 0, r->half->meta.nshards * sizeof(*counts));
	for (i = 0; i < r->half->meta.npoints; i++)
		counts[r->half->points[i].shard]++;
}

int ks_ring_load(const struct ks_ring_spec *spec, struct ks_shards *shards,
		 struct ks_ring *ring, __u64 version, char *err, size_t errlen)
{
	int rc;

	memset(ring, 0, sizeof(*ring));
	memset(shards, 0, sizeof(*shards));
	if (!spec->list && !spec->file) {
		snprintf(err, errlen,
			 "no shard list given; give %s LIST or %s FILE",
			 spec->flag, spec->file_flag);
		return -EINVAL;
	}
	if (spec->list && spec->file) {
		snprintf(err, errlen,
			 "both %s and %s given; give only one of them",
			 spec->flag, spec->file_flag);
		return -EINVAL;
	}
	if (spec->list)
		rc = ks_shards_parse_list(spec->flag, spec->list, shards, err,
					  errlen);
	else
		rc = ks_shards_load_file(spec->file, shards, err, errlen);
	if (rc)
		return rc;
	if (spec->self) {
		rc = ks_shards_set_self(shards, spec->self, err, errlen);
		if (rc)
			goto fail;
	}
	rc = ks_ring_build_keyed(ring, shards, spec->dist, &spec->key,
				 spec->vnodes, version, err, errlen);
	if (rc)
		goto fail;
	return 0;
fail:
	ks_shards_free(shards);
	return rc;
}

void ks_ring_spec_init(struct ks_ring_spec *spec, const char *flag,
		       const char *file_flag)
{
	memset(spec, 0, sizeof(*spec));
	spec->dist = KS_DIST_KETAMA;
	spec->key.hash = -1;
	spec->flag = flag;
	spec->file_flag = file_flag;
}

int ks_ring_spec_opt(struct ks_ring_spec *spec, int c, const char *arg,
		     char *err, size_t errlen)
{
	const struct ks_client_preset *preset;
	unsigned long long v;
	enum ks_dist d;
	__u32 kh;

	switch (c) {
	case KS_OPTV_KEY_HASH:
		if (ks_key_hash_parse(arg, &kh, err, errlen))
			return -1;
		spec->key.hash = (int)kh;
		return 1;
	case KS_OPTV_HASH_TAG:
		return ks_ring_key_tag(&spec->key, arg, err, errlen) ? -1 : 1;
	case 'S':
		spec->list = arg;
		return 1;
	case 'F':
		spec->file = arg;
		return 1;
	case 'M':
		spec->self = arg;
		return 1;
	case 'D':
		if (spec->client) {
			snprintf(
				err, errlen,
				"--client %s sets the distribution (%s); give --client or --distribution, not both",
				spec->client, ks_dist_name(spec->dist));
			return -1;
		}
		if (ks_dist_parse(arg, &d, err, errlen))
			return -1;
		spec->dist = d;
		spec->dist_given = 1;
		return 1;
	case KS_RING_OPT_CLIENT:
		if (spec->dist_given) {
			snprintf(
				err, errlen,
				"--distribution %s given, and --client sets the distribution; give --client or --distribution, not both",
				ks_dist_name(spec->dist));
			return -1;
		}
		preset = ks_client_find(arg, err, errlen);
		if (!preset)
			return -1;
		spec->dist = (enum ks_dist)preset->dist;
		spec->client = preset->name;
		return 1;
	case 'N':
		if (ks_parse_uint("--vnodes", arg, 1, KS_RING_MAX_POINTS, &v,
				  err, errlen))
			return -1;
		spec->vnodes = (__u32)v;
		return 1;
	default:
		return 0;
	}
}
