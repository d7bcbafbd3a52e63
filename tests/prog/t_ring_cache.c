// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_ring_cache.c - the ring hash cache (bpf/ks_ring_cache.h): a key
 * sampled again takes its ring position from ks_ring_cache instead of
 * another MD5, and must still land on the owner user space gives it.
 *
 * Every packet goes through tr_send(), which checks the change of
 * ks_shards against the user-space lookup, so a wrong owner from the cache
 * fails the packet that got it. The cases: keys seen again (the fast path,
 * the general parser, binary, UDP), every slot the kernel filled against
 * user space's ring hash, ring flips to another layout and to another
 * distribution (back and forth, the two identities differing in one bit,
 * the slots of the ring before present at each flip and none of them
 * used after it), and slots planted by the test that share a key's 64-bit
 * hash but not its identity (another key's bytes, another length,
 * version or distribution). A planted slot with the key's own identity
 * and a wrong position is the control: its wrong owner must show, or the
 * checks above would prove nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include "groups.h"
#include "tr.h"
#include "ks_ring_cache.h"

#define RC_KEYS 200

static __u8 rc_keys[RC_KEYS][KS_KEY_BUF];
static size_t rc_lens[RC_KEYS];

/* RC_KEYS fresh keys, lengths at MD5 block edges and at random. */
static void rc_make_keys(__u32 seed)
{
	__u32 x = seed;
	int i;

	for (i = 0; i < RC_KEYS; i++) {
		rc_lens[i] = tr_pick_len(&x, KS_MAX_KEY_LEN);
		memcpy(rc_keys[i], tr_new_key(rc_lens[i], i % 3 == 0),
		       rc_lens[i]);
	}
}

/* Key i as a text get (the fast path when short), over TCP or UDP. */
static void rc_send_get(int i, __u8 proto)
{
	static struct tr_seg g;

	tr_seg_clear(&g);
	tr_seg_req(&g, KS_OP_GET);
	tr_seg_puts(&g, "get ");
	tr_seg_key(&g, rc_keys[i], rc_lens[i], true);
	tr_seg_puts(&g, "\r\n");
	tr_seg_end(&g);
	tr_send(&g, 0, proto, (__u16)(30000 + i));
}

/* Key i in a two-key get behind another key: the general parser. */
static void rc_send_mget(int i)
{
	static struct tr_seg g;
	int j = (i + 1) % RC_KEYS;

	tr_seg_clear(&g);
	tr_seg_req(&g, KS_OP_GET);
	tr_seg_puts(&g, "get ");
	tr_seg_key(&g, rc_keys[j], rc_lens[j], true);
	tr_seg_puts(&g, " ");
	tr_seg_key(&g, rc_keys[i], rc_lens[i], true);
	tr_seg_puts(&g, "\r\n");
	tr_seg_end(&g);
	tr_send(&g, 0, IPPROTO_TCP, (__u16)(31000 + i));
}

static void rc_send_all(void)
{
	int i;

	for (i = 0; i < RC_KEYS; i++) {
		rc_send_get(i, IPPROTO_TCP);
		rc_send_mget(i);
		rc_send_get(i, IPPROTO_UDP);
	}
}

static int rc_build(struct tr_ring *t, enum ks_dist dist, bool weights)
{
	struct tr_shape s = {
		.dist = dist, .n = 64, .weights = weights, .self = 3
	};

	return tr_ring_build(t, &s);
}

/* Slot idx on every CPU, per_cpu[c] for CPU c: the cache is a plain
 * array, CPU c's slots from c * KS_RING_CACHE_SLOTS (ks_ring_cache.h). */
static int rc_slot_io(__u32 idx, struct ks_ring_cache_slot *per_cpu, bool write)
{
	int fd = kp_map_fd("ks_ring_cache");
	__u32 k;
	int c;

	if (fd < 0)
		return -ENOENT;
	for (c = 0; c < kp.ncpu; c++) {
		k = (__u32)c * KS_RING_CACHE_SLOTS + idx;
		if (write ? bpf_map_update_elem(fd, &k, &per_cpu[c], BPF_ANY)
			  : bpf_map_lookup_elem(fd, &k, &per_cpu[c]))
			return -errno;
	}
	return 0;
}

/* What a slot of key i must hold under ring t: its ring hash, or for
 * pymemcache its owner (ks_ring_rdv_cached). */
static __u32 rc_want(const struct tr_ring *t, int i, const __u64 *buf)
{
	__u32 dist = t->ring.half->meta.dist;

	if (dist == KS_DIST_PYMEMCACHE)
		return ks_ring_lookup(&t->ring, rc_keys[i], rc_lens[i]);
	return ks_ring_key_hash(dist, buf, (__u32)rc_lens[i]);
}

/* Slots on any CPU holding a key of rc_keys under t's distribution and
 * identity (version ^ digest): how many, and how many of them with another
 * ring hash (or owner) than user space gives on t. */
static void rc_scan(const struct tr_ring *t, int *found, int *wrong)
{
	struct ks_ring_cache_slot *pc = calloc((size_t)kp.ncpu, sizeof(*pc));
	const struct ks_ring_meta *m = &t->ring.half->meta;
	__u64 buf[KS_KEY_WORDS];
	__u32 idx;
	int i, c;

	*found = *wrong = 0;
	if (!pc)
		return;
	for (i = 0; i < RC_KEYS; i++) {
		idx = ks_ring_cache_index(kp_hash(rc_keys[i], rc_lens[i]));
		if (rc_slot_io(idx, pc, false))
			break;
		memset(buf, 0, sizeof(buf));
		memcpy(buf, rc_keys[i], rc_lens[i]);
		for (c = 0; c < kp.ncpu; c++) {
			if (pc[c].len != rc_lens[i] ||
			    memcmp(pc[c].key, buf, rc_lens[i]) ||
			    pc[c].dist != m->dist ||
			    pc[c].version !=
				    ks_ring_cache_id(m->version, m->digest))
				continue;
			(*found)++;
			if (pc[c].ring_hash != rc_want(t, i, buf))
				(*wrong)++;
		}
	}
	free(pc);
}

static void tr_cache_known_keys(void)
{
	struct tr_ring t;
	int found, wrong;
	__u64 keys0 = tr_keys_checked;

	kp_begin("ring_cache_known_keys_keep_their_owner");
	if (rc_build(&t, KS_DIST_KETAMA, true)) {
		kp_end();
		return;
	}
	rc_make_keys(71);
	tr_load(&t);
	rc_send_all(); /* first sight: the MD5 */
	rc_send_all(); /* again: from the cache */
	rc_scan(&t, &found, &wrong);
	/* direct mapped, RC_KEYS in KS_RING_CACHE_SLOTS: most stay */
	CHECK(found > RC_KEYS / 2, "only %d of %d keys in the cache", found,
	      RC_KEYS);
	CHECK_EQ(wrong, 0);
	CHECK_EQ(tr_keys_checked - keys0, 2ULL * 4 * RC_KEYS);
	kp_end();
	tr_follow(NULL);
	tr_ring_free(&t);
}

/* The identity the datapath keys a ring's slots by. */
static __u64 rc_id(const struct tr_ring *t)
{
	const struct ks_ring_meta *m = &t->ring.half->meta;

	return ks_ring_cache_id(m->version, m->digest);
}

/*
 * The identity bits each flip of rc_flip() makes the two rings differ in
 * alone (-1: as built). A stale slot is caught only where the two
 * identities differ in a bit the datapath's check looks at, and two built
 * rings differ in about half of their bits, the top one included (the
 * flip cases' do: a check cut to the top bit passed them). Bits 0 and 63
 * catch a check that drops either end of the word, 31 and 32 one cut to
 * either half.
 */
static const int rc_flip_bits[] = { -1, 0, 63, 31, 32 };

/*
 * Keys warmed on ring a, then flips between a and b, one for each of
 * rc_flip_bits: the idle half gets the other ring, its version set so
 * that its identity differs from the active one's in that bit alone, and
 * is flipped to. tr_load() does not reload the program, so the slots of
 * the ring before survive each flip; more than min_found of them must be
 * there before it (else the flip would test nothing). A stale slot used
 * after it fails twice: the per-packet check when its key moved, and the
 * scan after the first rc_send_all(), which finds it still under the ring
 * before (a hit keeps nothing; a miss keeps the key under the new ring).
 * After the last flip, more
 * than min_found slots and every one of them the active ring's. Frees
 * both rings.
 */
static void rc_flip(struct tr_ring *a, struct tr_ring *b, int min_found)
{
	struct tr_ring *cur = a, *next = b, *t;
	__u32 idle;
	size_t r;
	int i, moved = 0, found, wrong;

	for (i = 0; i < RC_KEYS; i++)
		moved += ks_ring_lookup(&a->ring, rc_keys[i], rc_lens[i]) !=
			 ks_ring_lookup(&b->ring, rc_keys[i], rc_lens[i]);
	/* without keys that move, a stale owner could not show */
	CHECK(moved > RC_KEYS / 10, "only %d of %d keys change owner", moved,
	      RC_KEYS);
	tr_load(a);
	rc_send_all();
	for (r = 0; r < sizeof(rc_flip_bits) / sizeof(rc_flip_bits[0]); r++) {
		rc_scan(cur, &found, &wrong);
		CHECK(found > min_found,
		      "flip %zu: only %d of %d keys cached before it", r, found,
		      RC_KEYS);
		CHECK_EQ(wrong, 0);
		if (rc_flip_bits[r] >= 0)
			next->ring.half->meta.version =
				rc_id(cur) ^ 1ULL << rc_flip_bits[r] ^
				next->ring.half->meta.digest;
		CHECK(rc_id(next) != rc_id(cur), "flip %zu: one identity", r);
		idle = (kp.cfg.ring & 1) ^ 1;
		CHECK_EQ(kp_ring_write(idle, next->ring.half), 0);
		CHECK_EQ(kp_ring_flip(idle), 0);
		tr_load(next); /* the model and the check follow next */
		rc_send_all(); /* a stale slot's owner fails here */
		/* and a slot still under the ring before was hit: a miss
		 * would have kept the key under next (the test runs on one
		 * CPU), even for a key whose owner did not change */
		rc_scan(cur, &found, &wrong);
		CHECK(found == 0,
		      "flip %zu: %d slots used under the ring before", r,
		      found);
		t = cur;
		cur = next;
		next = t;
	}
	rc_send_all();
	rc_scan(cur, &found, &wrong);
	CHECK(found > min_found, "only %d of %d keys in the cache", found,
	      RC_KEYS);
	CHECK_EQ(wrong, 0);
	kp_end();
	tr_follow(NULL);
	tr_ring_free(a);
	tr_ring_free(b);
}

static void rc_flip_case(const char *name, enum ks_dist db, bool wb)
{
	struct tr_ring a, b;

	kp_begin(name);
	if (rc_build(&a, KS_DIST_KETAMA, true)) {
		kp_end();
		return;
	}
	if (rc_build(&b, db, wb)) {
		tr_ring_free(&a);
		kp_end();
		return;
	}
	rc_make_keys(db * 100 + wb);
	rc_flip(&a, &b, RC_KEYS / 2);
}

/* A ring hash whose owner on t is not owner. */
static __u32 rc_wrong_hash(const struct tr_ring *t, __u32 owner)
{
	__u32 h = 0x9e3779b9;

	while (ks_ring_owner(t->ring.half, h) == owner)
		h += 0x01000193;
	return h;
}

/*
 * Plants a slot for key 0 (its 64-bit hash, at its index, on every CPU)
 * with a ring hash that puts it on another shard, changed by how; sends
 * key 0 with the per-packet check on. how 0 is the control: the key's own
 * identity, so the planted position must win, seen in ks_shards.
 */
enum rc_plant {
	RC_PLANT_SAME = 0,
	RC_PLANT_OTHER_BYTES,
	RC_PLANT_OTHER_LEN,
	RC_PLANT_OTHER_VERSION,
	RC_PLANT_OTHER_DIST,
};

static void rc_plant_case(const char *name, enum rc_plant how)
{
	struct ks_ring_cache_slot *pc = NULL;
	struct ks_shard_stats before[64], after[64];
	struct tr_ring t;
	__u64 hash, pkts0 = tr_pkts_checked;
	__u32 idx, owner, wrong, planted;
	int c;

	kp_begin(name);
	if (rc_build(&t, KS_DIST_KETAMA, true)) {
		kp_end();
		return;
	}
	pc = calloc((size_t)kp.ncpu, sizeof(*pc));
	if (!pc)
		goto out;
	rc_make_keys(500 + how);
	/* key 0 and key 1 of one length: only the bytes tell them apart */
	rc_lens[0] = rc_lens[1] = 16;
	memcpy(rc_keys[0], "planted:key:0000", 16);
	memcpy(rc_keys[1], "planted:key:0001", 16);
	hash = kp_hash(rc_keys[0], rc_lens[0]);
	owner = ks_ring_lookup(&t.ring, rc_keys[0], rc_lens[0]);
	wrong = rc_wrong_hash(&t, owner);
	for (c = 0; c < kp.ncpu; c++) {
		pc[c].key_hash = hash;
		pc[c].version = ks_ring_cache_id(t.ring.half->meta.version,
						 t.ring.half->meta.digest);
		pc[c].dist = KS_DIST_KETAMA;
		pc[c].len = 16;
		pc[c].ring_hash = wrong;
		memcpy(pc[c].key, rc_keys[how == RC_PLANT_OTHER_BYTES], 16);
		if (how == RC_PLANT_OTHER_LEN)
			pc[c].len = 15;
		if (how == RC_PLANT_OTHER_VERSION)
			pc[c].version++;
		if (how == RC_PLANT_OTHER_DIST)
			pc[c].dist = KS_DIST_VNODE;
	}
	/* the control's planted owner is not the model's: totals unchecked */
	if (how == RC_PLANT_SAME)
		kp_x_inexact();
	tr_load(&t);
	idx = ks_ring_cache_index(hash);
	CHECK_EQ(rc_slot_io(idx, pc, true), 0);
	if (how != RC_PLANT_SAME) {
		rc_send_get(0, IPPROTO_TCP); /* checked against user space */
		rc_send_mget(0);
		CHECK_EQ(tr_pkts_checked - pkts0, 2);
		goto out;
	}
	/* the control: no per-packet check, the planted owner must show */
	tr_follow(NULL);
	CHECK_EQ(kp_shards_read(before, 64), 0);
	rc_send_get(0, IPPROTO_TCP);
	CHECK_EQ(kp_shards_read(after, 64), 0);
	planted = ks_ring_owner(t.ring.half, wrong);
	if (owner >= 64 || planted >= 64) {
		kt_failf(__FILE__, __LINE__, "owners %u, %u", owner, planted);
		goto out;
	}
	CHECK_EQ(after[owner].reads - before[owner].reads, 0);
	CHECK_EQ(after[planted].reads - before[planted].reads, 1);
out:
	free(pc);
	kp_end();
	tr_follow(NULL);
	tr_ring_free(&t);
}

/*
 * pymemcache's slots hold the winner: warmed on ring a, then a ring b of
 * other nodes written with the same version (tr_ring_build gives every
 * ring version 1) and flipped to. Keyed by the version alone, b's keys
 * would take a's winners; the per-packet check and the scan show it.
 */
static void rc_rdv_flip(void)
{
	struct tr_shape sa = { .dist = KS_DIST_PYMEMCACHE,
			       .n = KS_RDV_MAX_NODES,
			       .self = 3 };
	struct tr_shape sb = sa;
	struct tr_ring a, b;

	kp_begin("ring_cache_pymemcache_winner_follows_the_nodes");
	sb.ports = true;
	if (tr_ring_build(&a, &sa)) {
		kp_end();
		return;
	}
	if (tr_ring_build(&b, &sb)) {
		tr_ring_free(&a);
		kp_end();
		return;
	}
	CHECK_EQ(a.ring.half->meta.version, b.ring.half->meta.version);
	rc_make_keys(4711);
	/* the ASCII keys, 2 in 3, less the slots two keys share */
	rc_flip(&a, &b, RC_KEYS / 3);
}

void t_ring_cache_group(void)
{
	rc_rdv_flip();
	tr_cache_known_keys();
	rc_flip_case("ring_cache_flip_to_another_layout", KS_DIST_KETAMA,
		     false);
	rc_flip_case("ring_cache_flip_to_another_distribution",
		     KS_DIST_TWEMPROXY, true);
	rc_flip_case("ring_cache_flip_to_vnode_md5", KS_DIST_VNODE, true);
	rc_plant_case("ring_cache_same_hash_other_key_is_a_miss",
		      RC_PLANT_OTHER_BYTES);
	rc_plant_case("ring_cache_same_hash_other_length_is_a_miss",
		      RC_PLANT_OTHER_LEN);
	rc_plant_case("ring_cache_other_ring_version_is_a_miss",
		      RC_PLANT_OTHER_VERSION);
	rc_plant_case("ring_cache_other_distribution_is_a_miss",
		      RC_PLANT_OTHER_DIST);
	rc_plant_case("ring_cache_control_planted_position_is_used",
		      RC_PLANT_SAME);
}
