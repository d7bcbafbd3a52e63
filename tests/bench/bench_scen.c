// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench_scen.c - the packets the benchmark times, each with what the
 * datapath must count for it, so a run that silently took another path
 * (a parse error, a missed sample) is caught instead of reported.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench.h"
#include "core/ring.h"
#include "ks_ring_cache.h"

#define TARGET_UNSAMPLED_NS 15.0 /* issue 2: unsampled GET over empty */
#define TARGET_SAMPLED_NS   60.0 /* issue 2: sampled 16-byte GET over empty */
/* issue 3: the ring lookup of a sampled 16-byte GET, FNV-1a, 1024 shards,
 * over the same GET with no ring loaded */
#define TARGET_RING_FNV_NS 25.0
/* issue 10: the unsampled 16-byte GET at most 1.4x its cost before TCP
 * streams were followed; a segment continuing a value <= 30 ns */
#define TARGET_STREAM_RATIO  1.4
#define TARGET_CONT_VALUE_NS 30.0

#define MSS 1448 /* a full segment of a 1500-byte MTU with timestamps */
/* the value of the set the continuation segments are inside: the largest
 * the parser takes, so a flow never reaches its end */
#define CONT_VALUE_LEN (1U << 30)

/*
 * SC_CONT_VALUE: segments of MSS value bytes inside a set's data block.
 * SC_CONT_KEY: segments that finish a multi-get's cut key and line and
 * start the next multi-get, cut in its last key the same way.
 * SC_PIPE: pipelined 16-byte gets filling an IP packet of ip_bytes.
 */
enum scen_kind {
	SC_HTTP,
	SC_GET,
	SC_SET,
	SC_CONT_VALUE,
	SC_CONT_KEY,
	SC_PIPE
};

struct scen_def {
	const char *id;
	const char *label;
	enum scen_kind kind;
	unsigned int nkeys;
	size_t keylen;
	size_t vallen;
	bool sampled;
	double target_ns;
	/* ring scenarios: the ring and the scenario without it */
	enum ks_dist dist;
	__u32 shards; /* 0: no ring */
	bool misdirected;
	const char *base_id;
	double ring_target_ns;
	int hot; /* enum bench_hot */
	bool udp;
	double ratio_target;  /* over empty / the build before; 0: none */
	size_t ip_bytes;      /* SC_PIPE: the IP packet's size */
	bool v6;              /* UDP: over IPv6 */
	int ntags;            /* UDP: VLAN tags, 0..2 */
	__u32 key_hash;       /* ring: 1 + enum ks_key_hash; 0 the default */
	const char *hash_tag; /* ring: a hash tag, or NULL */
	bool cold;            /* ring: the key's cache slot emptied first */
	int ded;              /* ring: shard rules (enum bench_ded) */
};

/* Dedicated shards (docs/placement.md): the same get on ketama 64 with
 * shard rules in the maps, against it with none. */
#define DED_SCEN(idsuf, labelsuf, d, samp)                                     \
	{                                                                      \
		.id = "get16_" samp "_ketama64_ded_" idsuf,                    \
		.label = "get, 16-byte key, " samp ", ketama 64, " labelsuf,   \
		.kind = SC_GET, .nkeys = 1, .keylen = 16,                      \
		.sampled = samp[0] == 's', .dist = KS_DIST_KETAMA,             \
		.shards = 64, .base_id = "get16_" samp "_ketama64", .ded = d   \
	}

/* A sampled 16-byte get on ketama 64 (p: "udp_" or ""), against the same
 * get with no ring: misdirected (m) or owned, its ring-cache slot emptied
 * before every timed packet (c) or not. */
#define K64_SCEN(p, pl, idsuf, labelsuf, m, c)                                 \
	{                                                                      \
		.id = p "get16_sampled_ketama64" idsuf,                        \
		.label = pl "get, 16-byte key, sampled, ketama 64" labelsuf,   \
		.kind = SC_GET, .nkeys = 1, .keylen = 16, .sampled = true,     \
		.dist = KS_DIST_KETAMA, .shards = 64, .misdirected = m,        \
		.base_id = p "get16_sampled", .udp = p[0] == 'u', .cold = c    \
	}

/* The ring lookup with each of twemproxy's key hashes (issue 15): a
 * sampled get of a 16- and a 250-byte key on twemproxy's ketama of 1024
 * shards, against the same get with no ring. */
#define KH_SCEN(kh, name, len)                                                 \
	{                                                                      \
		.id = "get" #len "_sampled_twemproxy1024_" name,               \
		.label = "get, " #len                                          \
			 "-byte key, sampled, twemproxy 1024 " name,           \
		.kind = SC_GET, .nkeys = 1, .keylen = len, .sampled = true,    \
		.dist = KS_DIST_TWEMPROXY, .shards = 1024,                     \
		.base_id = "get" #len "_sampled", .key_hash = 1 + (kh)         \
	}
#define KH_SCENS(kh, name) KH_SCEN(kh, name, 16), KH_SCEN(kh, name, 250)

/* A sampled get of a len-byte (ASCII) key on ring d of n shards, against
 * the same get with no ring; cold (c): the key's ring-cache slot emptied
 * before every timed packet, the cost of a key not seen before. */
#define RING_SCEN(d, dn, n, len, c, cid, cl)                                   \
	{                                                                      \
		.id = "get" #len "_sampled_" dn #n cid,                        \
		.label = "get, " #len "-byte key, sampled, " dn " " #n cl,     \
		.kind = SC_GET, .nkeys = 1, .keylen = len, .sampled = true,    \
		.dist = d, .shards = n, .base_id = "get" #len "_sampled",      \
		.cold = c                                                      \
	}
#define RING_COLD(d, dn, n, len)                                               \
	RING_SCEN(d, dn, n, len, true, "_cold", " cold")
/* each ring seen again (the ring cache's hit) and new (its miss) */
#define RDV_SCENS(n)                                                           \
	RING_SCEN(KS_DIST_PYMEMCACHE, "pymemcache", n, 16, false, "", ""),     \
		RING_SCEN(KS_DIST_PYMEMCACHE, "pymemcache", n, 250, false, "", \
			  ""),                                                 \
		RING_COLD(KS_DIST_PYMEMCACHE, "pymemcache", n, 16),            \
		RING_COLD(KS_DIST_PYMEMCACHE, "pymemcache", n, 250)
_Static_assert(KS_RDV_MAX_NODES == 32, "the RDV_SCENS(32) row is the max");

static const struct scen_def defs[] = {
	{ "not_memcached", "not memcached (TCP to port 80)", SC_HTTP, 0, 0, 0,
	  false, 0 },
	{ .id = "get16_unsampled",
	  .label = "get, 16-byte key, unsampled",
	  .kind = SC_GET,
	  .nkeys = 1,
	  .keylen = 16,
	  .target_ns = TARGET_UNSAMPLED_NS,
	  .ratio_target = TARGET_STREAM_RATIO },
	{ "get16_sampled", "get, 16-byte key, sampled", SC_GET, 1, 16, 0, true,
	  TARGET_SAMPLED_NS },
	{ "get250_unsampled", "get, 250-byte key, unsampled", SC_GET, 1, 250, 0,
	  false, 0 },
	{ "get250_sampled", "get, 250-byte key, sampled", SC_GET, 1, 250, 0,
	  true, 0 },
	/* a 2- and an 8-key get: the fixed cost of a multi-get apart from
	 * its cost per key (issue 14) */
	{ "mget2_unsampled", "get, 2 keys of 16 bytes, unsampled", SC_GET, 2,
	  16, 0, false, 0 },
	{ "mget8_unsampled", "get, 8 keys of 16 bytes, unsampled", SC_GET, 8,
	  16, 0, false, 0 },
	{ "mget32_unsampled", "get, 32 keys of 16 bytes, unsampled", SC_GET, 32,
	  16, 0, false, 0 },
	{ "mget32_sampled", "get, 32 keys of 16 bytes, all sampled", SC_GET, 32,
	  16, 0, true, 0 },
	{ "set100_unsampled", "set, 16-byte key, 100-byte value, unsampled",
	  SC_SET, 1, 16, 100, false, 0 },
	{ "set100_sampled", "set, 16-byte key, 100-byte value, sampled", SC_SET,
	  1, 16, 100, true, 0 },
	/* TCP streams (issue 10): segments that continue a request, and
	 * segments larger than one parse window */
	{ .id = "cont_value",
	  .label = "segment continuing a value (1448 B)",
	  .kind = SC_CONT_VALUE,
	  .target_ns = TARGET_CONT_VALUE_NS },
	{ .id = "cont_mget_key",
	  .label = "segment: cut key's tail, next 32-key get cut",
	  .kind = SC_CONT_KEY,
	  .nkeys = 32,
	  .keylen = 16 },
	{ .id = "pipe_jumbo",
	  .label = "9000-byte segment, 407 pipelined gets",
	  .kind = SC_PIPE,
	  .keylen = 16,
	  .ip_bytes = 9000 },
	{ .id = "pipe_gro64k",
	  .label = "64 KiB segment, 2977 pipelined gets",
	  .kind = SC_PIPE,
	  .keylen = 16,
	  .ip_bytes = 65535 },
	/* the ring: each against the same packet with no ring loaded */
	{ "get16_sampled_ketama4", "get, 16-byte key, sampled, ketama 4",
	  SC_GET, 1, 16, 0, true, 0, KS_DIST_KETAMA, 4, false, "get16_sampled",
	  0 },
	{ "get16_sampled_ketama64", "get, 16-byte key, sampled, ketama 64",
	  SC_GET, 1, 16, 0, true, 0, KS_DIST_KETAMA, 64, false, "get16_sampled",
	  0 },
	{ "get16_sampled_ketama1024", "get, 16-byte key, sampled, ketama 1024",
	  SC_GET, 1, 16, 0, true, 0, KS_DIST_KETAMA, 1024, false,
	  "get16_sampled", 0 },
	{ "get16_sampled_twemproxy4", "get, 16-byte key, sampled, twemproxy 4",
	  SC_GET, 1, 16, 0, true, 0, KS_DIST_TWEMPROXY, 4, false,
	  "get16_sampled", 0 },
	{ "get16_sampled_twemproxy64",
	  "get, 16-byte key, sampled, twemproxy 64", SC_GET, 1, 16, 0, true, 0,
	  KS_DIST_TWEMPROXY, 64, false, "get16_sampled", 0 },
	{ "get16_sampled_twemproxy1024",
	  "get, 16-byte key, sampled, twemproxy 1024", SC_GET, 1, 16, 0, true,
	  0, KS_DIST_TWEMPROXY, 1024, false, "get16_sampled",
	  TARGET_RING_FNV_NS },
	{ "get16_sampled_twemproxy1024_misdirected",
	  "get, 16-byte key, sampled, twemproxy 1024, misdir", SC_GET, 1, 16, 0,
	  true, 0, KS_DIST_TWEMPROXY, 1024, true, "get16_sampled", 0 },
	{ "get16_unsampled_ketama1024",
	  "get, 16-byte key, unsampled, ketama 1024", SC_GET, 1, 16, 0, false,
	  0, KS_DIST_KETAMA, 1024, false, "get16_unsampled", 0 },
	{ "get16_unsampled_ketama64", "get, 16-byte key, unsampled, ketama 64",
	  SC_GET, 1, 16, 0, false, 0, KS_DIST_KETAMA, 64, false,
	  "get16_unsampled", 0 },
	DED_SCEN("other", "shard rules, not its key", BD_OTHER, "unsampled"),
	DED_SCEN("other", "shard rules, not its key", BD_OTHER, "sampled"),
	DED_SCEN("first", "shard rules, not its first byte", BD_FIRST,
		 "sampled"),
	DED_SCEN("prefix", "its prefix dedicated", BD_PREFIX, "sampled"),
	DED_SCEN("exact", "the key dedicated", BD_EXACT, "sampled"),
	{ "get250_sampled_ketama1024",
	  "get, 250-byte key, sampled, ketama 1024", SC_GET, 1, 250, 0, true, 0,
	  KS_DIST_KETAMA, 1024, false, "get250_sampled", 0 },
	{ "get250_sampled_twemproxy1024",
	  "get, 250-byte key, sampled, twemproxy 1024", SC_GET, 1, 250, 0, true,
	  0, KS_DIST_TWEMPROXY, 1024, false, "get250_sampled", 0 },
	/* the client rings of issue 15 with their default key hashes
	 * (one_at_a_time, crc32a, md5): the key-hash scenarios below time
	 * each hash on its own */
	{ "get16_sampled_ketama-plain1024",
	  "get, 16-byte key, sampled, ketama-plain 1024", SC_GET, 1, 16, 0,
	  true, 0, KS_DIST_KETAMA_PLAIN, 1024, false, "get16_sampled", 0 },
	{ "get16_sampled_dalli1024", "get, 16-byte key, sampled, dalli 1024",
	  SC_GET, 1, 16, 0, true, 0, KS_DIST_DALLI, 1024, false,
	  "get16_sampled", 0 },
	{ "get16_sampled_spymemcached1024",
	  "get, 16-byte key, sampled, spymemcached 1024", SC_GET, 1, 16, 0,
	  true, 0, KS_DIST_SPY, 1024, false, "get16_sampled", 0 },
	{ "get250_sampled_ketama-plain1024",
	  "get, 250-byte key, sampled, ketama-plain 1024", SC_GET, 1, 250, 0,
	  true, 0, KS_DIST_KETAMA_PLAIN, 1024, false, "get250_sampled", 0 },
	{ "get250_sampled_dalli1024", "get, 250-byte key, sampled, dalli 1024",
	  SC_GET, 1, 250, 0, true, 0, KS_DIST_DALLI, 1024, false,
	  "get250_sampled", 0 },
	{ "get250_sampled_spymemcached1024",
	  "get, 250-byte key, sampled, spymemcached 1024", SC_GET, 1, 250, 0,
	  true, 0, KS_DIST_SPY, 1024, false, "get250_sampled", 0 },
	/* pymemcache's rendezvous hashing (one murmur3 per shard per key) at
	 * 4, 16 and KS_RDV_MAX_NODES shards, beside ketama in the same run */
	RDV_SCENS(4),
	RDV_SCENS(16),
	RDV_SCENS(32),
	RING_COLD(KS_DIST_KETAMA, "ketama", 1024, 16),
	RING_COLD(KS_DIST_KETAMA, "ketama", 1024, 250),
	KH_SCENS(KS_KH_MD5, "md5"),
	KH_SCENS(KS_KH_ONE_AT_A_TIME, "one_at_a_time"),
	KH_SCENS(KS_KH_CRC16, "crc16"),
	KH_SCENS(KS_KH_CRC32, "crc32"),
	KH_SCENS(KS_KH_CRC32A, "crc32a"),
	KH_SCENS(KS_KH_FNV1_64, "fnv1_64"),
	KH_SCENS(KS_KH_FNV1A_64, "fnv1a_64"),
	KH_SCENS(KS_KH_FNV1_32, "fnv1_32"),
	KH_SCENS(KS_KH_FNV1A_32, "fnv1a_32"),
	KH_SCENS(KS_KH_HSIEH, "hsieh"),
	KH_SCENS(KS_KH_MURMUR, "murmur"),
	KH_SCENS(KS_KH_JENKINS, "jenkins"),
	{ .id = "get250_sampled_twemproxy1024_fnv1a_64_tag",
	  .label = "get, 250-byte key, sampled, twemproxy 1024 fnv1a_64 {}",
	  .kind = SC_GET,
	  .nkeys = 1,
	  .keylen = 250,
	  .sampled = true,
	  .dist = KS_DIST_TWEMPROXY,
	  .shards = 1024,
	  .base_id = "get250_sampled",
	  .key_hash = 1 + KS_KH_FNV1A_64,
	  .hash_tag = "{}" },
	{ .id = "get16_sampled_twemproxy_modula1024",
	  .label = "get, 16-byte key, sampled, twemproxy-modula 1024",
	  .kind = SC_GET,
	  .nkeys = 1,
	  .keylen = 16,
	  .sampled = true,
	  .dist = KS_DIST_TWEMPROXY_MODULA,
	  .shards = 1024,
	  .base_id = "get16_sampled" },
	{ .id = "get16_sampled_gomemcache64",
	  .label = "get, 16-byte key, sampled, modula crc32a 64 (gomemcache)",
	  .kind = SC_GET,
	  .nkeys = 1,
	  .keylen = 16,
	  .sampled = true,
	  .dist = KS_DIST_MODULA,
	  .shards = 64,
	  .base_id = "get16_sampled",
	  .key_hash = 1 + KS_KH_CRC32A },
	/* hot keys: each against the same packet with the table empty */
	{ "get16_unsampled_hot_other",
	  "get, 16-byte key, unsampled, hot table on", SC_GET, 1, 16, 0, false,
	  0, 0, 0, false, "get16_unsampled", 0, BH_OTHER },
	{ "get16_unsampled_hot_key", "get, 16-byte key, unsampled, key hot",
	  SC_GET, 1, 16, 0, false, 0, 0, 0, false, "get16_unsampled", 0,
	  BH_KEY },
	{ "set100_unsampled_hot_key",
	  "set, 16-byte key, 100 B, unsampled, key hot (dirty)", SC_SET, 1, 16,
	  100, false, 0, 0, 0, false, "set100_unsampled", 0, BH_KEY },
	{ "udp_get16_unsampled", "UDP get, 16-byte key, unsampled", SC_GET, 1,
	  16, 0, false, 0, 0, 0, false, NULL, 0, BH_NONE, true },
	/* the lone UDP get's sampled key (ks_fast_take; the sample log's
	 * records, issue 27) */
	{ "udp_get16_sampled", "UDP get, 16-byte key, sampled", SC_GET, 1, 16,
	  0, true, 0, 0, 0, false, NULL, 0, BH_NONE, true },
	/* the same on a ring (issue 27: the express path places the key
	 * itself with the log on, owned or misdirected), against it with
	 * no ring */
	K64_SCEN("udp_", "UDP ", "", "", false, false),
	K64_SCEN("udp_", "UDP ", "_misdirected", ", misdir", true, false),
	/* the same keys new to the ring cache (the MD5 a key not sampled
	 * before pays), UDP and TCP, owned and misdirected */
	K64_SCEN("udp_", "UDP ", "_cold", " cold", false, true),
	K64_SCEN("udp_", "UDP ", "_misdirected_cold", ", misdir, cold", true,
		 true),
	K64_SCEN("", "", "_cold", " cold", false, true),
	K64_SCEN("", "", "_misdirected_cold", ", misdir, cold", true, true),
	{ "udp_get16_unsampled_steered",
	  "UDP get, 16-byte key, unsampled, 7/8 steered", SC_GET, 1, 16, 0,
	  false, 0, 0, 0, false, "udp_get16_unsampled", 0, BH_STEER, true },
	/* rate limits (docs/limits.md), each against the same packet with
	 * no limit set */
	{ "udp_get16_unsampled_limit_other",
	  "UDP get, 16-byte key, unsampled, another key limited", SC_GET, 1, 16,
	  0, false, 0, 0, 0, false, "udp_get16_unsampled", 0, BH_LIMIT_OTHER,
	  true },
	{ "udp_get16_unsampled_limit_under",
	  "UDP get, 16-byte key, unsampled, key limited, under", SC_GET, 1, 16,
	  0, false, 0, 0, 0, false, "udp_get16_unsampled", 0, BH_LIMIT_UNDER,
	  true },
	{ "udp_get16_unsampled_limit_reply",
	  "UDP get, 16-byte key, unsampled, over limit, replied", SC_GET, 1, 16,
	  0, false, 0, 0, 0, false, "udp_get16_unsampled", 0, BH_LIMIT_REPLY,
	  true },
	{ "udp_get16_unsampled_limit_reply_head",
	  "UDP get, 16-byte key, unsampled, over limit, replied, head grown",
	  SC_GET, 1, 16, 0, false, 0, 0, 0, false, "udp_get16_unsampled", 0,
	  BH_LIMIT_REPLY_HEAD, true },
	{ "udp_get16_unsampled_limit_drop",
	  "UDP get, 16-byte key, unsampled, over limit, dropped", SC_GET, 1, 16,
	  0, false, 0, 0, 0, false, "udp_get16_unsampled", 0, BH_LIMIT_DROP,
	  true },
	/* steering over IPv6 and VLANs, each against its packet with the
	 * table empty, and against the IPv4 steered get (bench_report.c) */
	{ .id = "udp6_get16_unsampled",
	  .label = "UDP/IPv6 get, 16-byte key, unsampled",
	  .kind = SC_GET,
	  .nkeys = 1,
	  .keylen = 16,
	  .udp = true,
	  .v6 = true },
	{ .id = "udp6_get16_unsampled_steered",
	  .label = "UDP/IPv6 get, 16-byte key, unsampled, 7/8 steered",
	  .kind = SC_GET,
	  .nkeys = 1,
	  .keylen = 16,
	  .udp = true,
	  .v6 = true,
	  .base_id = "udp6_get16_unsampled",
	  .hot = BH_STEER6 },
	{ .id = "udp_vlan_get16_unsampled",
	  .label = "UDP get, 802.1Q tag, 16-byte key, unsampled",
	  .kind = SC_GET,
	  .nkeys = 1,
	  .keylen = 16,
	  .udp = true,
	  .ntags = 1 },
	{ .id = "udp_vlan_get16_unsampled_steered",
	  .label = "UDP get, 802.1Q tag, 16-byte key, unsampled, 7/8 steered",
	  .kind = SC_GET,
	  .nkeys = 1,
	  .keylen = 16,
	  .udp = true,
	  .ntags = 1,
	  .base_id = "udp_vlan_get16_unsampled",
	  .hot = BH_STEER_VLAN },
	{ .id = "udp_qinq_get16_unsampled",
	  .label = "UDP get, QinQ tags, 16-byte key, unsampled",
	  .kind = SC_GET,
	  .nkeys = 1,
	  .keylen = 16,
	  .udp = true,
	  .ntags = 2 },
	{ .id = "udp_qinq_get16_unsampled_steered",
	  .label = "UDP get, QinQ tags, 16-byte key, unsampled, 7/8 steered",
	  .kind = SC_GET,
	  .nkeys = 1,
	  .keylen = 16,
	  .udp = true,
	  .ntags = 2,
	  .base_id = "udp_qinq_get16_unsampled",
	  .hot = BH_STEER_VLAN },
	{ .id = "udp6_qinq_get16_unsampled_steered",
	  .label =
		  "UDP/IPv6 get, QinQ tags, 16-byte key, unsampled, 7/8 steered",
	  .kind = SC_GET,
	  .nkeys = 1,
	  .keylen = 16,
	  .udp = true,
	  .v6 = true,
	  .ntags = 2,
	  .base_id = "udp_qinq_get16_unsampled",
	  .hot = BH_STEER6 },
};

#define N_DEFS (sizeof(defs) / sizeof(defs[0]))

/* n pipelined "get <key>\r\n" with keys of keylen bytes; total length */
static size_t pipe_gets(char *out, size_t cap, unsigned int n, size_t keylen)
{
	size_t len = 0, one;
	unsigned int i;

	for (i = 0; i < n; i++) {
		one = bench_get_line(out + len, cap - len, 1, keylen);
		if (!one)
			return 0;
		len += one;
	}
	return len;
}

/*
 * The multi-get of nkeys keys whose last key is cut in two halves:
 * head = "get k0 .. k(n-2) <first half of k(n-1)>", and the timed
 * segment = "<second half>\r\n" + head, which finishes one request and
 * leaves the next cut at the same byte.
 */
static size_t cut_mget(char *out, size_t cap, unsigned int nkeys, size_t keylen,
		       bool with_tail)
{
	char line[BENCH_FRAME_MAX];
	size_t len = bench_get_line(line, sizeof(line), nkeys, keylen);
	size_t half = keylen / 2, head = len - 2 - (keylen - half), n = 0;

	if (!len || nkeys < 2 || cap < len + keylen)
		return 0;
	if (with_tail) {
		/* the rest of the last key, then the line's end */
		memcpy(out, line + head, len - head);
		n = len - head;
	}
	memcpy(out + n, line, head);
	return n + head;
}

static int build_one(const struct scen_def *d, struct bench_scen *s)
{
	static const char http[] = "GET /index.html HTTP/1.1\r\n"
				   "Host: 198.18.0.2\r\n\r\n";
	char *pay = malloc(BENCH_FRAME_MAX), *pro = NULL;
	size_t plen = 0, prolen = 0;
	__u16 dport = BENCH_MC_PORT;
	unsigned int n;
	int err = -1;

	s->frame = malloc(BENCH_FRAME_MAX);
	if (!pay || !s->frame)
		goto out;
	s->keys = d->nkeys;
	s->reqs = d->kind == SC_HTTP ? 0 : 1;
	switch (d->kind) {
	case SC_HTTP:
		plen = sizeof(http) - 1;
		memcpy(pay, http, plen);
		dport = 80;
		break;
	case SC_GET:
		plen = bench_get_line(pay, BENCH_FRAME_MAX, d->nkeys,
				      d->keylen);
		break;
	case SC_SET:
		plen = bench_set_req(pay, BENCH_FRAME_MAX, d->keylen,
				     d->vallen);
		break;
	case SC_CONT_VALUE:
		/* the set's line alone opens the block; then value bytes */
		pro = malloc(128);
		if (!pro)
			goto out;
		prolen = (size_t)snprintf(pro, 128,
					  "set key:0:abcdefghi 0 0 %u\r\n",
					  CONT_VALUE_LEN);
		plen = MSS;
		memset(pay, 'v', plen);
		s->reqs = 0;
		s->per_flow = CONT_VALUE_LEN / MSS - 1;
		s->cont = true;
		break;
	case SC_CONT_KEY:
		pro = malloc(BENCH_FRAME_MAX);
		if (!pro)
			goto out;
		prolen = cut_mget(pro, BENCH_FRAME_MAX, d->nkeys, d->keylen,
				  false);
		plen = cut_mget(pay, BENCH_FRAME_MAX, d->nkeys, d->keylen,
				true);
		s->cont = true;
		break;
	case SC_PIPE:
		/* 20 + 20 bytes of headers; "get " + key + "\r\n" each */
		n = (unsigned int)((d->ip_bytes - 40) / (d->keylen + 6));
		plen = pipe_gets(pay, BENCH_FRAME_MAX, n, d->keylen);
		s->keys = s->reqs = n;
		break;
	default:
		goto out;
	}
	if (!plen || (pro && !prolen))
		goto out;
	s->id = d->id;
	s->label = d->label;
	s->sampled = d->sampled;
	s->memcached = d->kind != SC_HTTP;
	s->target_ns = d->target_ns;
	s->ratio_target = d->ratio_target;
	s->base = -1;
	s->hot = d->hot;
	s->ded = d->ded;
	s->keylen = d->keylen;
	s->plen = (__u32)plen;
	s->stream = !d->udp && dport == BENCH_MC_PORT;
	/* what the build before streams parses as this build does: whole
	 * requests in one packet of at most one window */
	s->before = !d->shards && !d->hot &&
		    (d->kind == SC_HTTP || d->kind == SC_GET ||
		     d->kind == SC_SET);
	s->len = d->udp ? bench_frame_udp(s->frame, BENCH_FRAME_MAX, dport, pay,
					  plen, d->v6, d->ntags)
			: bench_frame_tcp4(s->frame, BENCH_FRAME_MAX, dport,
					   pay, plen);
	if (!s->len)
		goto out;
	if (pro) {
		s->pro = malloc(prolen + 64);
		if (!s->pro)
			goto out;
		s->pro_plen = (__u32)prolen;
		s->pro_len = bench_frame_tcp4(s->pro, prolen + 64, dport, pro,
					      prolen);
		if (!s->pro_len)
			goto out;
	}
	err = 0;
	if (!d->shards)
		goto out;
	/* the packet's (first) key decides the owner, and so the self that
	 * makes it rightly directed or misdirected */
	bench_key(pay, d->keylen, 0);
	{
		struct ks_ring_key rk = { .hash = (int)d->key_hash - 1 };

		if (d->hash_tag)
			memcpy(rk.tag, d->hash_tag, 3);
		s->ring = bench_ring_keyed(d->dist, &rk, d->shards, pay,
					   d->keylen, d->misdirected);
	}
	s->cold = d->cold;
	if (d->cold) {
		__u64 w[KS_KEY_WORDS] = { 0 };

		memcpy(w, pay, d->keylen);
		s->cache_idx = ks_ring_cache_index(
			ks_key_hash(w, (__u32)d->keylen));
	}
	s->ring_dist = d->dist;
	s->ring_key_hash = s->ring ? s->ring->meta.key_hash : 0;
	s->ring_tagged = s->ring && s->ring->meta.tagged;
	s->ring_shards = d->shards;
	s->misdirected = d->misdirected;
	s->ring_target_ns = d->ring_target_ns;
	err = s->ring ? 0 : -1;
out:
	free(pay);
	free(pro);
	return err;
}

/* Index of the scenario named id, or -1. */
static int find_id(const struct bench_scen *s, int n, const char *id)
{
	int i;

	for (i = 0; id && i < n; i++)
		if (!strcmp(s[i].id, id))
			return i;
	return -1;
}

void bench_scenarios_free(struct bench_scen *sc, int n)
{
	int i;

	for (i = 0; sc && i < n; i++) {
		free(sc[i].ring);
		free(sc[i].frame);
		free(sc[i].pro);
	}
	free(sc);
}

int bench_scenarios(struct bench_scen **out)
{
	struct bench_scen *s;
	size_t i;

	s = calloc(N_DEFS, sizeof(*s));
	if (!s)
		return -1;
	for (i = 0; i < N_DEFS; i++) {
		if (build_one(&defs[i], &s[i])) {
			bench_scenarios_free(s, (int)N_DEFS);
			return -1;
		}
		if (defs[i].base_id) {
			s[i].base = find_id(s, (int)i, defs[i].base_id);
			if (s[i].base < 0) {
				bench_scenarios_free(s, (int)N_DEFS);
				return -1;
			}
		}
	}
	*out = s;
	return (int)N_DEFS;
}
