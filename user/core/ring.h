/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ring.h - builds the ring the memcached clients use from a shard list,
 * as the image of one ring half the datapath reads (bpf/ks_ring.h), and
 * answers lookups with the same code the datapath runs.
 *
 * Distributions (each matches its client bit for bit, see docs/ring.md):
 *   ketama         libmemcached MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED
 *   twemproxy      nutcracker "distribution: ketama", "hash: fnv1a_64"
 *   twemproxy-md5  the same with "hash: md5"
 *   vnode          a plain ring of virtual nodes "name#i"
 *   modula         hash % N, for comparison (gomemcache with crc32a)
 *   ketama-plain   libmemcached KETAMA without weights (one_at_a_time)
 *   dalli          Ruby dalli (SHA-1 points, crc32a keys, ring_dalli.c)
 *   spymemcached, spymemcached-libmemcached  its KetamaNodeLocator in
 *                  both key formats (ring_spy.c)
 *   modula-oaat    libmemcached's default, one_at_a_time % N
 *   twemproxy-modula  nutcracker "distribution: modula", hash fnv1a_64
 *   pymemcache     pymemcache's HashClient (rendezvous, murmur3 of
 *                  "host:port-key"), str keys; in the datapath
 *                  up to KS_RDV_MAX_NODES shards
 *   pymemcache-bytes  the same for bytes keys (it hashes their repr)
 * The key hash is a dimension of its own (--key-hash, enum ks_key_hash):
 * each distribution above names its default.
 */
#ifndef KS_RING_USER_H
#define KS_RING_USER_H

#include <stddef.h>
#include <linux/types.h>
#include "ks_ring.h"
#include "core/ring_dist.h"
#include "core/shards.h"

/* twemproxy formats point names into 86 bytes (KETAMA_MAX_HOSTLEN) and
 * hashes past the end of longer ones; such names are refused. */
#define KS_TWEMPROXY_NAME_MAX 85

/* getopt values of --key-hash and --hash-tag (long options only; after
 * cli_options.h's KS_OPTV_* and KS_RING_OPT_CLIENT below) */
#define KS_OPTV_KEY_HASH 0x1047
#define KS_OPTV_HASH_TAG 0x1048

/* One pymemcache node: murmur3's state after "node-" (its whole 4-byte
 * blocks mixed, the rest held back), and the name for ties. */
struct ks_rdv_node {
	const char *name; /* "host:port", or the shard's name */
	__u32 h;          /* state after the whole blocks */
	__u32 tail;       /* the last len % 4 units, little-endian */
	__u32 len;        /* units (characters) of "node-" */
};

struct ks_ring {
	struct ks_ring_half *half; /* meta + sorted points, as pushed */
	__u32 vnodes;              /* points per unit of weight, vnode only */
	struct ks_rdv_node *rdv;   /* pymemcache: one per shard, else NULL */
	char *rdv_names;           /* the nodes' names, one block */
};

/* 1 when the datapath can place keys on dist's ring (of some sizes). */
int ks_dist_in_kernel(__u32 dist);

/* 0 when the datapath can place keys on ring r: its distribution runs in
 * the kernel and, for pymemcache, it has at most KS_RDV_MAX_NODES shards;
 * else a negative errno and err says why and what to do. */
int ks_ring_in_kernel(const struct ks_ring *r, char *err, size_t errlen);

/* 1 when the datapath places the key (len bytes) on ring r, 0 when it
 * counts it unplaced (KS_PKT_RING_UNPLACED): a pymemcache key of more
 * than one shard with a byte >= 0x80, whose str characters the datapath
 * does not decode. */
int ks_ring_kernel_places(const struct ks_ring *r, const void *key, size_t len);

/* pymemcache's murmur3_32 (seed 0) over a str of n characters, each
 * given as its code point's low byte (what its ord(c) & 0xff reads). */
__u32 ks_murmur3_units(const __u8 *units, size_t n);

/*
 * The characters pymemcache hashes for a key that is len bytes on the
 * wire, as low bytes of their code points: for a str key the UTF-8
 * decoded (a byte that is not part of valid UTF-8 stands for itself),
 * for a bytes key (bytes_key 1) its repr b'...'. Writes at most cap
 * units and returns how many; cap of 4 * len + 3 is always enough.
 */
size_t ks_pymemcache_units(const void *key, size_t len, int bytes_key,
			   __u8 *out, size_t cap);

/* "ketama", "twemproxy", "twemproxy-md5", "vnode", "modula",
 * "ketama-plain", "dalli", "spymemcached", "spymemcached-libmemcached",
 * "modula-oaat", "twemproxy-modula", "pymemcache", "pymemcache-bytes". */
int ks_dist_parse(const char *s, enum ks_dist *out, char *err, size_t errlen);
const char *ks_dist_name(__u32 dist);

/* twemproxy's names of enum ks_key_hash: "md5", "one_at_a_time", "crc16",
 * "crc32", "crc32a", "fnv1_64", "fnv1a_64", "fnv1_32", "fnv1a_32",
 * "hsieh", "murmur", "jenkins". */
int ks_key_hash_parse(const char *s, __u32 *out, char *err, size_t errlen);
const char *ks_key_hash_name(__u32 kh);

/*
 * How keys are hashed, beside the distribution: hash is an enum
 * ks_key_hash or -1 for the distribution's default; tag is twemproxy's
 * hash_tag, two bytes, or "" for none.
 */
struct ks_ring_key {
	int hash;
	char tag[3];
};

/* Checks a --hash-tag value (exactly two bytes, as nutcracker's config
 * takes it) into k->tag; -EINVAL with err. */
int ks_ring_key_tag(struct ks_ring_key *k, const char *arg, char *err,
		    size_t errlen);

/*
 * Builds the ring of shards for dist (vnodes: virtual nodes per shard for
 * KS_DIST_VNODE, 0 for the default; ignored otherwise). version is stored
 * as given; the digest is computed (see ks_ring_digest). On error writes
 * err and returns a negative errno; r is then empty.
 */
int ks_ring_build(struct ks_ring *r, const struct ks_shards *shards,
		  enum ks_dist dist, __u32 vnodes, __u64 version, char *err,
		  size_t errlen);

/*
 * The same with a key hash and hash tag (key NULL: the defaults).
 * twemproxy's ketama with md5 is stored as twemproxy-md5 and with any
 * other hash as twemproxy, so one ring has one name and one digest.
 * pymemcache's rings take neither.
 */
int ks_ring_build_keyed(struct ks_ring *r, const struct ks_shards *shards,
			enum ks_dist dist, const struct ks_ring_key *key,
			__u32 vnodes, __u64 version, char *err, size_t errlen);

void ks_ring_free(struct ks_ring *r);

/* The ring's hash of a key of len <= KS_MAX_KEY_LEN bytes (its key hash
 * over the part inside the hash tag, when the ring has one). */
__u32 ks_ring_hash(const struct ks_ring *r, const void *key, size_t len);

/* Owner (shard index) of a key; KS_NO_SHARD for an empty ring. */
__u32 ks_ring_lookup(const struct ks_ring *r, const void *key, size_t len);

/*
 * FNV-1a 64 over, in order: dist, nshards and npoints as 4 little-endian
 * bytes each; every shard's "host:port" followed by '\n'; every point's
 * value and shard as 4 little-endian bytes each; then, only when the key
 * hash is not the distribution's default or there is a hash tag, "key",
 * the key hash (4 bytes) and the tag's two bytes (zeros for none), so the
 * rings of the distributions' defaults keep the digests they had. Two rings with the same
 * digest send every key to the same host:port. The self shard is not part
 * of it: every host of one fleet gets the same digest.
 */
__u64 ks_ring_digest(const struct ks_ring_half *h, const struct ks_shards *s);

/*
 * Where a ring comes from, as the ring options give it: exactly one of
 * list ("host:port[:weight],...") and file; self optional.
 */
struct ks_ring_spec {
	const char *list;
	const char *file;
	const char *self;
	enum ks_dist dist;
	struct ks_ring_key key; /* --key-hash, --hash-tag */
	__u32 vnodes;           /* 0: KS_VNODES_DEFAULT */
	const char *flag;       /* names the list option in messages */
	const char *file_flag;  /* names the file option in messages */
	const char *client;     /* the --client preset given, or NULL */
	int dist_given;         /* --distribution was given */
	/* a ring document file (--plan FILE: what 'agent ring plan' wrote,
	 * or 'agent ring get' printed): its shards, distribution and
	 * points, instead of list or file; read by the commands
	 * (ks_ring_doc_load_spec, core/ring_doc.h), not ks_ring_load */
	const char *plan;
	const char *plan_flag;
};

/* getopt's value for --client NAME (cli_options.c KS_OPTV_CLIENT): a
 * preset of user/core/ring_clients.c that sets the distribution. */
#define KS_RING_OPT_CLIENT 0x1040

/*
 * The ring's command-line options, one handler for 'agent run',
 * 'agent replay' and 'agent ring lookup' (their entries are in
 * cli_options.c, getopt values 'S', 'F', 'M', 'D', 'N', KS_RING_OPT_CLIENT,
 * KS_OPTV_KEY_HASH and KS_OPTV_HASH_TAG).
 * ks_ring_spec_init sets the defaults and the flag names messages use;
 * ks_ring_spec_opt returns 1 when c was a ring option (handled), 0 when it
 * was not, -1 with err filled when its value is bad.
 */
void ks_ring_spec_init(struct ks_ring_spec *spec, const char *flag,
		       const char *file_flag);
int ks_ring_spec_opt(struct ks_ring_spec *spec, int c, const char *arg,
		     char *err, size_t errlen);

/* Reads the shard list of spec and builds its ring; on error both are
 * left empty and err says why. */
int ks_ring_load(const struct ks_ring_spec *spec, struct ks_shards *shards,
		 struct ks_ring *ring, __u64 version, char *err, size_t errlen);

/* Fills h->bucket[] from h->points[0..npoints), which must be sorted;
 * ks_ring_build does it, tests building halves by hand call it. */
void ks_ring_index(struct ks_ring_half *h);

/* Points each shard got (counts[] has nshards entries). */
void ks_ring_point_counts(const struct ks_ring *r, __u32 *counts);

#endif
