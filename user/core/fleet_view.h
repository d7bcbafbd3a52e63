/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fleet_view.h - what 'agent fleet' decides, as pure code over structs (no
 * I/O, no JSON): the ring's shards joined with the agents' hosts/ entries
 * (reads/s, share of the fleet's reads, ratio to the mean, the busiest
 * shard, agents on an older ring, shards whose agent is gone), the fleet's
 * top keys merged across hosts, and the hot-key table in display order.
 * fleet_doc.h fills the snapshot from etcd's documents; render/fleet.h
 * prints the view. docs/fleet.md, "agent fleet".
 */
#ifndef KS_FLEET_VIEW_H
#define KS_FLEET_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include "keysteer.h"
#include "core/host_doc.h"
#include "core/hot_doc.h"
#include "core/hotkeys.h"
#include "core/shards.h"

#define KS_FLEET_ADDR_MAX    (KS_SHARD_HOST_MAX + 8) /* "host:port" and NUL */
#define KS_FLEET_KEY_TEXT    (4 * KS_KEY_BUF + 8)    /* ks_key_text's worst */
#define KS_FLEET_HOST_TOP    16 /* top keys read from one host's entry */
#define KS_FLEET_REPLICAS    KS_MAX_REPLICAS /* replicas kept per hot entry */
#define KS_FLEET_TOP_DEFAULT 10
#define KS_FLEET_TOP_MAX     1000 /* --top K */
#define KS_FLEET_WHY_MAX     200

/* One key of a host's top (or of the merged top). */
struct ks_fleet_key {
	uint64_t hash;
	char key[KS_FLEET_KEY_TEXT]; /* "" when no entry carried it */
	double reads, writes;        /* per second */
	unsigned hosts;              /* merged: how many hosts listed it */
};

/* What a decoded document was (docs/fleet.md, the key table). */
enum ks_fleet_host_kind {
	KS_FHK_HOSTS,  /* hosts/SELF, schema 1, of an agent before schema 2 */
	KS_FHK_COMPAT, /* hosts/SELF, schema 1, "compat": a schema-2 agent's
			* entry for old readers */
	KS_FHK_MEMBER, /* members/SELF, schema 2 */
	KS_FHK_LOAD,   /* /keysteer-load/CLUSTER/SELF, schema 2 */
};

/* One agent as decoded (fleet_doc.h): its hosts/ entry, or its member
 * document joined with its load document. */
struct ks_fleet_host {
	char self[KS_FLEET_ADDR_MAX]; /* the key's last part */
	int valid;                    /* 0: the document was refused */
	char why[KS_FLEET_WHY_MAX];   /* ... and why */
	int kind;                     /* enum ks_fleet_host_kind */
	int no_load;    /* a member whose load document has not come (yet):
		      * no rates, ring revision or purge known */
	int have_shard; /* "shard" is an object, not null */
	char shard_name[KS_FLEET_ADDR_MAX];
	double reads, writes, mis; /* the shard's, else the host's classes */
	double served; /* the shard's reads served ("served_per_s"; reads
			* when absent, as agents before it wrote) */
	/* a load document's "shard"."totals" (base_ms 0: none, an agent
	 * before them or not a load document) */
	struct ks_load_totals totals;
	int64_t ring_rev, mod_rev;
	size_t n_top;
	struct ks_fleet_key top[KS_FLEET_HOST_TOP];
	/* "replicas": every L1 replica the agent may fill, "host:port"
	 * (a client's write invalidates them all, docs/client.md) */
	size_t n_reps;
	char replicas[KS_MAX_REPLICAS][KS_FLEET_ADDR_MAX];
	const char *raw; /* the value as etcd holds it (borrowed): hosts/,
			  * or a member's load document (NULL: none yet) */
	size_t raw_len;
	const char *member_raw; /* a member's members/ value, else NULL */
	size_t member_raw_len;
	/* "purge": the agent's purge state ("idle", "purging", "grace",
	 * "sweeping"), "" when absent (no purge, or an agent before it) */
	char purge[12];
	/* a load document's "hot": the live figures of each hot key the
	 * agent owns (none from an agent before the list) */
	size_t n_hot;
	struct ks_load_hot hot[KS_LOAD_HOT_MAX];
	/* a load document's "limits": the keys the agent rate-limits with
	 * their figures (none from an agent before the list, or with no
	 * key limited), and how many more it limits than it listed */
	size_t n_limits;
	int64_t limits_omitted;
	struct ks_load_limit limits[KS_LOAD_LIMITS_MAX];
};

/* A limited key summed over the fleet's load documents. */
struct ks_fleet_limit {
	uint64_t hash;
	char key[KS_FLEET_KEY_TEXT];  /* "" when no document carried it, or
				      * hash_only */
	uint32_t rate;                /* the limit, as the first host said */
	double allowed, refused, tcp; /* per second, summed */
	unsigned hosts;               /* documents that listed it */
	int automatic; /* a host limits it by its automatic cap */
	long rule;     /* index into the pins document's rules, -1: none found
		    * (no pins, or a prefix rule's key without its text) */
};

/* One hot/HASH entry, schema 1, as decoded. */
struct ks_fleet_hot {
	uint64_t hash;
	char key[KS_FLEET_KEY_TEXT]; /* "" when the owner hides keys */
	char owner[KS_FLEET_ADDR_MAX];
	int read_hot, write_hot, pinned;
	int64_t copies, subkeys, write_seq, mod_rev;
	int state;     /* enum ks_hot_doc_state (core/hot_doc.h) */
	size_t n_reps; /* replicas listed; the first KS_FLEET_REPLICAS kept */
	char replicas[KS_FLEET_REPLICAS][KS_FLEET_ADDR_MAX];
	double reads, writes; /* as of the entry's last write */
	int in_load; /* a key only counted, from its owner's load document
		      * (no hot/ entry: docs/fleet.md, "hot/HASH") */
};

/* A hot key as shown: its entry, and its figures from its owner's load
 * document when that lists the key, else the entry's rates (an owner
 * before the load document's list, or one whose list lags). */
struct ks_fleet_hot_row {
	const struct ks_fleet_hot *e; /* the snapshot's */
	int from_load;                /* the figures are the load document's */
	double v[KS_LHF_N];           /* NAN: not known */
};

/* A hot/ entry that was refused. */
struct ks_fleet_refused {
	char key[KS_FLEET_ADDR_MAX]; /* the etcd key's part after hot/ */
	char why[KS_FLEET_WHY_MAX];
};

/* Everything one read (and the watch since) says about the fleet. */
struct ks_fleet_snapshot {
	int64_t store_rev; /* etcd's revision of the snapshot */
	int64_t ring_rev;  /* the ring key's mod_revision; 0: no ring key */
	int ring_valid;    /* the ring document decoded */
	char ring_why[KS_FLEET_WHY_MAX];
	size_t n_ring; /* the ring's shards, "host:port", in index order */
	char (*ring)[KS_FLEET_ADDR_MAX];
	size_t n_hosts;
	struct ks_fleet_host *hosts; /* in key order */
	size_t n_hot;
	struct ks_fleet_hot *hot;
	size_t n_refused;
	struct ks_fleet_refused *refused;
	/* dedicated shards and limits: the pins document's rules when it
	 * has shard or limit rules (pins NULL:
	 * none, or a document that does not read: pins_why), and the ring's
	 * shard list they name shards of (NULL without a valid ring) */
	int64_t pins_rev; /* the pins key's mod_revision; 0: no pins key */
	char pins_why[KS_FLEET_WHY_MAX];
	struct ks_hot_rules *pins;
	struct ks_shards *ring_shards;
};

/* One shard of the ring, joined with its agent. */
struct ks_fleet_shard {
	const char *name; /* the snapshot's "host:port" */
	long host;        /* index into hosts[], -1: no valid entry (gone) */
	double reads, writes, mis;
	double served; /* the reads its memcached answered (less the UDP
			* gets steered to copies): what --balance compares */
	double share;  /* of the reads of every shard with an agent, 0..1 */
	double ratio;  /* reads / the mean of those shards */
	int64_t ring_rev;
	int stale;   /* its agent runs an older ring than the ring's */
	int busiest; /* the most reads (ties: the lower index); none at 0 */
	int purging; /* its agent purges for a ring change ("purging",
		      * "grace"): keys it lost are still being deleted */
};

struct ks_fleet_view {
	size_t n_shards;
	struct ks_fleet_shard *shards; /* the ring's, in index order */
	long busiest;                  /* its index, -1: none */
	size_t n_up;                   /* shards with an agent */
	/* reads/s over the shards with an agent, or over valid hosts when
	 * there is no ring: */
	double max, mean, sum;
	long max_host; /* no ring: the busiest valid host, -1: none */
	/* hosts that joined no shard (all of them without a ring), in key
	 * order; other_shard[i]: the shard it names whose row another
	 * entry took, else -1 */
	size_t n_others;
	size_t *others;
	long *other_shard;
	long *host_shard; /* n_hosts: the shard each host joined, -1 */
	int *host_stale;  /* n_hosts: a valid host on an older ring */
	size_t n_hosts;
	size_t n_top;
	struct ks_fleet_key *top; /* the merged top, busiest first */
	size_t n_hot;
	struct ks_fleet_hot_row *hot; /* busiest first */
	/* limited keys summed by hash over every valid host, busiest
	 * (allowed + refused + tcp) first; limits_omitted: keys the hosts
	 * limit beyond their lists, not in these sums */
	size_t n_limits;
	struct ks_fleet_limit *limits;
	int64_t limits_omitted;
};

/*
 * Builds v from s: shards joined with the valid host whose shard.name
 * (or self) is the shard's "host:port" (the newest entry by mod_revision
 * when several are), share and ratio of reads, the busiest, the hosts
 * left over, the top_k busiest keys merged over every valid host (reads
 * and writes summed by hash; key text dropped with hash_only), the hot
 * entries with the figures of their owner's load document (else their
 * own rates), by reads + writes. 0 or -ENOMEM; free v with ks_fleet_view_free.
 */
int ks_fleet_view_build(const struct ks_fleet_snapshot *s, size_t top_k,
			int hash_only, struct ks_fleet_view *v);
void ks_fleet_view_free(struct ks_fleet_view *v);

/* 16 lowercase hex digits into *hash: 0, or -1 when s is anything else. */
int ks_fleet_hash_parse(const char *s, uint64_t *hash);

#endif
