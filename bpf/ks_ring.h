/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_ring.h - the shard ring as the datapath sees it, shared with the
 * agent that builds it (user/ring.c): the distributions, the layout of a
 * ring half, the key hash of each distribution and the lookup.
 *
 * A ring is a sorted array of points (value, shard). A key's owner is the
 * shard of the first point whose value is >= the key's hash; past the last
 * point the search wraps to point 0. Points are sorted by value, then by
 * shard index, so among equal values the lowest shard index wins (what
 * libmemcached's sort does explicitly and glibc's stable qsort does for
 * twemproxy, whose points are laid out in server order).
 *
 * The ring map holds two halves; the agent fills the idle one and then
 * flips the active index, so a packet reads one whole ring or the other.
 * A half fits one array-map value (struct ks_ring_half, about 1.5 MiB,
 * under the kernel's 4 MiB KMALLOC_MAX_SIZE for a value), so the lookup
 * needs one map lookup and then indexes plain arrays.
 *
 * Include order as for keysteer.h (vmlinux.h first in BPF code).
 */
#ifndef KS_RING_H
#define KS_RING_H

#include "keysteer.h"
#include "ks_hash.h"

#define KS_MAX_SHARDS            1024
#define KS_RING_POINTS_PER_SHARD 160 /* ketama's 40 digests x 4 points */
#define KS_RING_MAX_POINTS       (KS_RING_POINTS_PER_SHARD * KS_MAX_SHARDS)
#define KS_RING_HALVES           2
#define KS_VNODES_DEFAULT        160
#define KS_NO_SHARD              0xffffffffU
/* A key the datapath does not place (pymemcache: a byte >= 0x80). */
#define KS_RING_UNPLACED 0xfffffffeU
/* ceil(log2(KS_RING_MAX_POINTS + 1)): halving a range of up to 163840
 * points this many times leaves it empty. */
#define KS_RING_SEARCH_STEPS 18
/* The index: one bucket per value of the hash's top 16 bits. */
#define KS_RING_BUCKET_SHIFT 16
#define KS_RING_BUCKETS      (1U << (32 - KS_RING_BUCKET_SHIFT))

_Static_assert(KS_RING_MAX_POINTS < (1U << KS_RING_SEARCH_STEPS),
	       "search steps too few for the ring size");

/*
 * Distributions. The values are ABI (stored in struct ks_ring_meta.dist).
 *   KETAMA           libmemcached MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED (PHP's
 *                    OPT_LIBKETAMA_COMPATIBLE): key hash MD5.
 *   TWEMPROXY        nutcracker "distribution: ketama", "hash: fnv1a_64".
 *   TWEMPROXY_MD5    the same with "hash: md5".
 *   VNODE            textbook ring of virtual nodes "name#i", key hash MD5.
 *   MODULA           key hash % nshards (no points; gomemcache with crc32a).
 *   KETAMA_PLAIN     libmemcached MEMCACHED_BEHAVIOR_KETAMA, or
 *                    DISTRIBUTION_CONSISTENT, with its default hash (what
 *                    pylibmc's "ketama" and php-memcached's
 *                    DISTRIBUTION_CONSISTENT select): 100 points a server,
 *                    points and keys hashed with one_at_a_time.
 *   DALLI            Ruby's dalli: SHA-1 points, crc32a (zlib's crc32)
 *                    keys, and the point at or *below* the key's hash owns
 *                    it. Stored with every value complemented (~v), and
 *                    ks_ring_owner() looks up ~hash, which turns "last
 *                    point <= h" into "first point >= ~h", the one search.
 *   SPY              spymemcached's KetamaNodeLocator, format SPYMEMCACHED
 *                    ("ip:port-i"); key hash MD5; a tie goes to the later
 *                    server (TreeMap.put replaces).
 *   SPY_LIBMC        the same with format LIBMEMCACHED ("host-i").
 *   MODULA_OAAT      libmemcached's default, hash % nshards with
 *                    one_at_a_time (pylibmc's and php-memcached's default).
 *   TWEMPROXY_MODULA nutcracker "distribution: modula": a slot per unit
 *                    of weight in server order, a key in slot hash % the
 *                    sum of weights (nc_modula.c). One point per shard,
 *                    valued its last slot; the last point's value + 1 is
 *                    the sum.
 *   PYMEMCACHE       pymemcache's HashClient, str keys: rendezvous hashing,
 *                    murmur3_32 of "host:port-key" per node, the highest
 *                    score wins, a tie the greater name. No points: the
 *                    half holds a struct ks_rdv_slot per node (at most
 *                    KS_RDV_MAX_NODES), npoints 0, no key hash or tag.
 * The key hash is a field of its own (meta.key_hash, enum ks_key_hash);
 * each distribution has a default (ks_dist_default_key_hash).
 */
enum ks_dist {
	KS_DIST_KETAMA = 0,
	KS_DIST_TWEMPROXY = 1,
	KS_DIST_TWEMPROXY_MD5 = 2,
	KS_DIST_VNODE = 3,
	KS_DIST_MODULA = 4,
	KS_DIST_KETAMA_PLAIN = 5,
	KS_DIST_DALLI = 6,
	KS_DIST_SPY = 7,
	KS_DIST_SPY_LIBMC = 8,
	KS_DIST_MODULA_OAAT = 9,
	KS_DIST_TWEMPROXY_MODULA = 10,
	KS_DIST_PYMEMCACHE = 11,
	KS_DIST_MAX,
};

struct ks_ring_point {
	__u32 value; /* position on the ring */
	__u32 shard; /* index into the shard list, in the order given */
};
_Static_assert(sizeof(struct ks_ring_point) == 8, "ks_ring_point layout");

/*
 * pymemcache's nodes, in the points' place (a union in struct
 * ks_ring_half): murmur3_32's state after the node's "host:port-" (h: its
 * whole 4-byte blocks mixed; tail: the last len % 4 units held back,
 * little-endian; len: the units of "host:port-"), and rank, the node's
 * place among the names in strcmp order (equal names, equal ranks), which
 * breaks a tie of scores as pymemcache's greater name does.
 *
 * KS_RDV_MAX_NODES bounds the datapath's walk: a key costs one murmur3 per
 * node (docs/ring.md "Where it runs" has the figures it was chosen from).
 */
#define KS_RDV_MAX_NODES 32

struct ks_rdv_slot {
	__u32 h;
	__u32 tail;
	__u32 len;
	__u32 rank;
};
_Static_assert(sizeof(struct ks_rdv_slot) == 16, "ks_rdv_slot layout");

struct ks_ring_meta {
	__u32 npoints; /* points in use, <= KS_RING_MAX_POINTS; 0 for MODULA* */
	__u32 nshards; /* 1..KS_MAX_SHARDS; 0 = no ring loaded */
	__u32 dist;    /* enum ks_dist */
	__u32 self;    /* shard this host serves, or KS_NO_SHARD */
	__u64 version; /* ring generation, raised by the agent per push */
	__u64 digest;  /* identity of the contents (user/ring.c) */
	__u32 key_hash;   /* enum ks_key_hash */
	__u8 hash_tag[2]; /* twemproxy's hash_tag, when tagged */
	__u8 tagged;      /* 1: hash only the part between the tag's bytes */
	/* 1: the points are explicit (a planned ring, schema 2 of the ring
	 * document, user/core/ring_points.h), not built from the shard
	 * names. The lookup is the same: the datapath needs no flag, user
	 * space shows it. */
	__u8 planned;
};
_Static_assert(sizeof(struct ks_ring_meta) == 40, "ks_ring_meta layout");

/*
 * One ring, as one array-map value. bucket[] indexes the sorted points by
 * the top 16 bits of their value: bucket[b] is the index of the first
 * point with value >= b << 16 (npoints when there is none), and
 * bucket[KS_RING_BUCKETS] is npoints. A lookup then searches only the
 * points of its hash's bucket, 2.5 of them on average with 163840 points,
 * instead of 18 dependent steps over the whole ring.
 */
struct ks_ring_half {
	struct ks_ring_meta meta;
	__u32 bucket[KS_RING_BUCKETS + 1];
	__u32 pad;
	union {
		struct ks_ring_point points[KS_RING_MAX_POINTS];
		struct ks_rdv_slot rdv[KS_RDV_MAX_NODES]; /* PYMEMCACHE */
	};
};
_Static_assert(KS_RDV_MAX_NODES * sizeof(struct ks_rdv_slot) <=
		       KS_RING_MAX_POINTS * sizeof(struct ks_ring_point),
	       "pymemcache's nodes fit the points' place");
_Static_assert(sizeof(struct ks_ring_half) ==
		       40 + 4 * (KS_RING_BUCKETS + 2) + 8 * KS_RING_MAX_POINTS,
	       "ks_ring_half layout");

/*
 * Index of the first point with value >= hash, or 0 when there is none
 * (the wrap): the same answer as libmemcached's and twemproxy's dispatch
 * loops, found among the points of hash's bucket. Needs meta.npoints >= 1
 * and the bucket index filled (user/ring.c); clamps whatever it reads, so
 * a torn or bogus half gives a wrong shard, never an out-of-bounds read.
 *
 * Written for the verifier: the loop is bounded by KS_RING_SEARCH_STEPS,
 * the step on the data is taken without a branch (a 0/1 flag from the
 * sign bit, applied by multiplying; KS_OPAQUE keeps clang from turning it
 * back into a branch), and the only branches are the loop's end and a
 * bound check never taken. Each loop exit still forks the verifier's
 * walk: call it from a BPF global function (verified once, returns a
 * scalar) when much code follows the lookup.
 */
static inline __u32 ks_ring_search(const struct ks_ring_half *h, __u32 hash)
{
	__u64 n = h->meta.npoints, lo, hi, mid, lt, d;
	__u32 b = hash >> KS_RING_BUCKET_SHIFT, i;

	if (n > KS_RING_MAX_POINTS)
		n = KS_RING_MAX_POINTS;
	lo = h->bucket[b];
	hi = h->bucket[b + 1];
	if (hi > n)
		hi = n;
	if (lo > hi)
		lo = hi;
	/* lower bound in [lo, hi): each step halves the range at least */
	for (i = 0; i < KS_RING_SEARCH_STEPS; i++) {
		if (lo >= hi)
			break;
		mid = lo + ((hi - lo) >> 1);
		if (mid >= KS_RING_MAX_POINTS) /* for the verifier */
			break;
		d = (__u64)h->points[mid].value - hash;
		KS_OPAQUE(d);
		lt = d >> 63; /* 1 when points[mid].value < hash */
		lo += (mid + 1 - lo) * lt;
		hi -= (hi - mid) * (1 - lt);
	}
	return lo >= n ? 0 : (__u32)lo;
}

/*
 * pymemcache's murmur3_32 (client/murmur3.py, seed 0), one 4-byte block
 * at a time, for user space (user/core/ring.c) and the datapath alike.
 */
#define KS_MM3_C1 0xcc9e2d51U
#define KS_MM3_C2 0x1b873593U

static inline __u32 ks_mm3_rotl(__u32 x, int r)
{
	return (x << r) | (x >> (32 - r));
}

static inline __u32 ks_mm3_mix(__u32 h, __u32 k)
{
	k *= KS_MM3_C1;
	k = ks_mm3_rotl(k, 15);
	k *= KS_MM3_C2;
	h ^= k;
	h = ks_mm3_rotl(h, 13);
	return h * 5 + 0xe6546b64U;
}

/* The tail (n % 4 units in k, rem = n % 4, n the whole length) and the
 * finalizer. */
static inline __u32 ks_mm3_final(__u32 h, __u32 k, __u32 rem, __u32 n)
{
	if (rem) {
		k *= KS_MM3_C1;
		k = ks_mm3_rotl(k, 15);
		k *= KS_MM3_C2;
		h ^= k;
	}
	h ^= n;
	h ^= h >> 16;
	h *= 0x85ebca6bU;
	h ^= h >> 13;
	h *= 0xc2b2ae35U;
	h ^= h >> 16;
	return h;
}

/* A rendezvous score and node rank as one number: the greater wins. */
static inline __u64 ks_rdv_rank(__u32 score, __u32 rank)
{
	return (__u64)score << 32 | rank;
}

/* The key hash a distribution takes when none is given. */
static inline __u32 ks_dist_default_key_hash(__u32 dist)
{
	if (dist == KS_DIST_TWEMPROXY || dist == KS_DIST_TWEMPROXY_MODULA)
		return KS_KH_FNV1A_64;
	if (dist == KS_DIST_KETAMA_PLAIN || dist == KS_DIST_MODULA_OAAT)
		return KS_KH_ONE_AT_A_TIME;
	if (dist == KS_DIST_DALLI) /* zlib's crc32, the whole 32 bits */
		return KS_KH_CRC32A;
	return KS_KH_MD5; /* ketama, vnode, modula, spymemcached's two */
}

/*
 * The ring hash of a key held as in ks_hash.h, for a ring half's key
 * hash, without a hash tag (ks_ring_hash() in user/core/ring.c applies
 * it). twemproxy hashes an empty key to 0 (server_pool_hash); memcached
 * keys are never empty, but the rule is kept so both sides agree on it;
 * ketama's MD5 of "" is libmemcached's answer.
 */
static inline __u32 ks_ring_meta_hash(const struct ks_ring_meta *m,
				      const __u64 *key, __u32 len)
{
	if (!len &&
	    (m->dist == KS_DIST_TWEMPROXY || m->dist == KS_DIST_TWEMPROXY_MD5 ||
	     m->dist == KS_DIST_TWEMPROXY_MODULA))
		return 0;
	return ks_key_hash_of(m->key_hash, key, len);
}

/* The same for a distribution with its default key hash. */
static inline __u32 ks_ring_key_hash(__u32 dist, const __u64 *key, __u32 len)
{
	struct ks_ring_meta m = { .dist = dist,
				  .key_hash = ks_dist_default_key_hash(dist) };

	return ks_ring_meta_hash(&m, key, len);
}

/*
 * Owner shard of a key hash in a ring half, or KS_NO_SHARD when the half
 * holds no ring. A single shard owns everything (libmemcached and
 * twemproxy skip hashing then; the answer is the same).
 */
static inline __u32 ks_ring_owner(const struct ks_ring_half *h, __u32 hash)
{
	__u32 n = h->meta.nshards, i;

	if (n == 0 || n > KS_MAX_SHARDS)
		return KS_NO_SHARD;
	if (n == 1)
		return 0;
	if (h->meta.dist == KS_DIST_DALLI) /* its points are stored ~v */
		hash = ~hash;
	if (h->meta.dist == KS_DIST_MODULA ||
	    h->meta.dist == KS_DIST_MODULA_OAAT)
		return hash % n;
	if (h->meta.npoints == 0)
		return KS_NO_SHARD;
	if (h->meta.dist == KS_DIST_TWEMPROXY_MODULA) {
		i = h->meta.npoints - 1;
		if (i >= KS_RING_MAX_POINTS) /* for the verifier */
			return KS_NO_SHARD;
		hash %= h->points[i].value + 1;
	}
	i = ks_ring_search(h, hash);
	if (i >= KS_RING_MAX_POINTS) /* for the verifier */
		return KS_NO_SHARD;
	return h->points[i].shard;
}

#endif /* KS_RING_H */
