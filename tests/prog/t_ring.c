// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_ring.c - the clients' ring in the datapath (bpf/ks_ring.bpf.h): every
 * sampled read and write key is placed on the active half of ks_ring and
 * counted for its owner in ks_shards; a key owned by another shard than
 * this host's (meta.self) is misdirected, and its client is kept in
 * ks_misdirect.
 *
 * The reference is the user-space builder and lookup (user/core/ring.h). For
 * every distribution and shard count a ring is built and loaded, and
 * packets of many shapes are sent one at a time; after each packet the
 * change in ks_shards must be exactly what ks_ring_lookup() gives for its
 * keys (tr.c). A one-key packet pins down one key's owner, so kernel and
 * user space agree key by key. At the end kp's model checks the totals,
 * ring_hit and misdirected, and the client in every misdirect slot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include "groups.h"
#include "tr.h"
#include "core/ring_plan.h"
#include "core/ring_points.h"

static void tr_traffic(int npkts, __u32 seed)
{
	static struct tr_seg g;
	__u32 x = seed;
	int i;

	for (i = 0; i < npkts; i++) {
		__u16 sport = (__u16)(20000 + i * 7 + seed % 1000);
		bool utf = (i / 10) % 2;

		tr_seg_clear(&g);
		switch (i % 10) {
		case 0: /* fast path: "get <key of <= 32 bytes>\r\n" */
			tr_seg_get(&g, "get", KS_OP_GET, 1, 32, &x, utf);
			tr_send(&g, 0, IPPROTO_TCP, sport);
			break;
		case 1: /* general path: a longer lone get, or a gets */
			tr_seg_get(&g, i % 20 == 1 ? "get" : "gets",
				   i % 20 == 1 ? KS_OP_GET : KS_OP_GETS, 1,
				   KS_MAX_KEY_LEN, &x, utf);
			tr_send(&g, 0, IPPROTO_TCP, sport);
			break;
		case 2: /* a multi-get, keys of every length */
			tr_seg_get(&g, "get", KS_OP_GET,
				   2 + (int)(tr_rand(&x) % 40), KS_MAX_KEY_LEN,
				   &x, utf);
			tr_send(&g, 0, IPPROTO_TCP, sport);
			break;
		case 3: /* a set of any key */
			tr_seg_store(&g, "set", KS_OP_SET,
				     tr_pick_len(&x, KS_MAX_KEY_LEN),
				     tr_rand(&x) % 200, utf);
			tr_send(&g, 0, IPPROTO_TCP, sport);
			break;
		case 4: /* one-key commands of both classes, pipelined */
			tr_seg_one(&g, "delete", KS_OP_DELETE,
				   tr_pick_len(&x, 120), "\r\n", utf);
			tr_seg_one(&g, "incr", KS_OP_INCR, tr_pick_len(&x, 120),
				   " 5\r\n", utf);
			tr_seg_one(&g, "touch", KS_OP_TOUCH,
				   tr_pick_len(&x, 120), " 60\r\n", utf);
			tr_seg_one(&g, "mg", KS_OP_MG, tr_pick_len(&x, 120),
				   " v t\r\n", utf);
			tr_seg_one(&g, "ms", KS_OP_MS, tr_pick_len(&x, 120),
				   " 2 T0\r\nhi\r\n", utf);
			tr_seg_one(&g, "md", KS_OP_MD, tr_pick_len(&x, 120),
				   " q\r\n", utf);
			tr_seg_get(&g, "gat 10", KS_OP_GAT, 3, 120, &x, utf);
			/* "other" keys are sampled, never placed on the ring */
			tr_seg_one(&g, "me", KS_OP_ME, tr_pick_len(&x, 60),
				   "\r\n", utf);
			tr_send(&g, 0, IPPROTO_TCP, sport);
			break;
		case 5: /* binary GETK and SET, keys of any byte */
			tr_seg_bin(&g, 0x0c, KS_OP_GET,
				   tr_pick_len(&x, KS_MAX_KEY_LEN));
			tr_seg_bin(&g, 0x01, KS_OP_SET,
				   tr_pick_len(&x, KS_MAX_KEY_LEN));
			tr_send(&g, 0, IPPROTO_TCP, sport);
			break;
		case 6: /* UDP from IPv4 */
			tr_seg_get(&g, "get", KS_OP_GET,
				   1 + (int)(tr_rand(&x) % 20), KS_MAX_KEY_LEN,
				   &x, utf);
			tr_send(&g, 0, IPPROTO_UDP, sport);
			break;
		case 7: /* IPv6: a lone short get (fast path) */
			tr_seg_get(&g, "get", KS_OP_GET, 1, 32, &x, utf);
			tr_send(&g, 1, IPPROTO_TCP, sport);
			break;
		case 8: /* IPv6: gets and a set pipelined */
			tr_seg_get(&g, "get", KS_OP_GET, 3, 100, &x, utf);
			tr_seg_store(&g, "set", KS_OP_SET, tr_pick_len(&x, 100),
				     3, utf);
			tr_send(&g, 1, i % 20 == 8 ? IPPROTO_UDP : IPPROTO_TCP,
				sport);
			break;
		default: /* the longest keys, one request each */
			tr_seg_one(&g, "get", KS_OP_GET, KS_MAX_KEY_LEN, "\r\n",
				   utf);
			tr_send(&g, 0, IPPROTO_TCP, sport);
			break;
		}
	}
}

/* ---- each distribution and shard count ---- */

static const __u32 tr_counts[] = { 1, 2, 4, 7, 64, 1024 };
/* pymemcache runs in the datapath up to KS_RDV_MAX_NODES shards */
static const __u32 tr_rdv_counts[] = { 1, 2, 4, 7, 16, KS_RDV_MAX_NODES };
_Static_assert(sizeof(tr_counts) == sizeof(tr_rdv_counts), "counts");

static __u32 tr_count(enum ks_dist dist, int ci)
{
	return dist == KS_DIST_PYMEMCACHE ? tr_rdv_counts[ci] : tr_counts[ci];
}

/* libmemcached's unweighted ketama refuses weights (it would be the
 * weighted ring), and so does pymemcache: their lists have none. */
static bool tr_dist_weighted(enum ks_dist dist)
{
	return dist != KS_DIST_KETAMA_PLAIN && dist != KS_DIST_PYMEMCACHE;
}

static void tr_dist_case(enum ks_dist dist, int ci)
{
	static char name[80];
	struct tr_shape s = { .dist = dist, .n = tr_count(dist, ci) };
	int v = ci + (int)dist;
	struct tr_ring t;
	__u64 keys0 = tr_keys_checked;
	char *c;

	s.weights = v % 2 && tr_dist_weighted(dist);
	s.ports = v % 3 == 1;
	s.names = v % 4 >= 2;
	/* a cache host (misdirected keys counted), a client host for some */
	s.self = v % 5 == 4 ? KS_NO_SHARD : (s.n * 2) / 3;
	snprintf(name, sizeof(name), "ring_%s_%u_shards%s%s%s%s",
		 ks_dist_name(dist), s.n, s.weights ? "_weighted" : "",
		 s.ports ? "_ports" : "", s.names ? "_named" : "",
		 s.self == KS_NO_SHARD ? "_no_self" : "");
	for (c = name; *c; c++)
		if (*c == '-')
			*c = '_';

	kp_begin(name);
	if (tr_ring_build(&t, &s)) {
		kp_end();
		return;
	}
	/* the watched port need not be memcached's default */
	tr_dport = v % 2 ? 11311 : 11211;
	if (tr_dport != 11211)
		kp_set_ports(2, 11311, 22122);
	tr_load(&t);
	tr_traffic(160, 1000u * (__u32)dist + (__u32)ci);
	/* pymemcache leaves the non-ASCII keys (about 2 in 3) unplaced */
	CHECK(kp_pkt(KS_PKT_RING_HIT) >
		      (dist == KS_DIST_PYMEMCACHE && s.n > 1 ? 200 : 500),
	      "only %llu keys placed on the ring",
	      (unsigned long long)kp_pkt(KS_PKT_RING_HIT));
	CHECK((kp_pkt(KS_PKT_RING_UNPLACED) > 0) ==
		      (dist == KS_DIST_PYMEMCACHE && s.n > 1),
	      "%llu keys unplaced",
	      (unsigned long long)kp_pkt(KS_PKT_RING_UNPLACED));
	CHECK(s.n == 1 || s.self == KS_NO_SHARD ||
		      kp_pkt(KS_PKT_MISDIRECTED) > 0,
	      "no key misdirected on a ring of %u shards", s.n);
	CHECK(tr_keys_checked - keys0 > 500, "only %llu keys checked",
	      (unsigned long long)(tr_keys_checked - keys0));
	kp_end();
	tr_follow(NULL);
	tr_dport = 11211;
	tr_ring_free(&t);
}

/*
 * Every key length 1..250, as a lone text get (fast path up to 32 bytes)
 * and as a binary get whose key has any byte (0x00, spaces, >= 0x80), on a
 * ring of 1024 shards: a key hashed differently from user space lands on
 * another shard with odds 1023 in 1024, and each packet pins one key.
 * pymemcache (KS_RDV_MAX_NODES shards) gets an ASCII text get of every
 * length too, twice (the second from the ring cache), as the others'
 * keys with a byte >= 0x80 are counted unplaced.
 */
static void tr_every_length_keyed(enum ks_dist dist, __u32 kh, const char *tag)
{
	static struct tr_seg g;
	static char name[96];
	bool rdv = dist == KS_DIST_PYMEMCACHE;
	struct tr_shape s = { .dist = dist,
			      .n = rdv ? KS_RDV_MAX_NODES : 1024,
			      .weights = tr_dist_weighted(dist),
			      .self = 5,
			      .kh = kh,
			      .tag = tag };
	struct tr_ring t;
	__u64 keys0 = tr_keys_checked;
	size_t len;
	char *c;
	int i;

	snprintf(name, sizeof(name), "ring_%s%s%s%s_every_key_length_%u_shards",
		 ks_dist_name(dist), kh ? "_key_" : "",
		 kh ? ks_key_hash_name(kh - 1) : "", tag ? "_hash_tag" : "",
		 s.n);
	for (c = name; *c; c++)
		if (*c == '-')
			*c = '_';
	kp_begin(name);
	if (tr_ring_build(&t, &s)) {
		kp_end();
		return;
	}
	tr_load(&t);
	for (len = 1; len <= KS_MAX_KEY_LEN; len++) {
		tr_seg_clear(&g);
		tr_seg_one(&g, "get", KS_OP_GET, len, "\r\n", len % 2);
		tr_send(&g, 0, IPPROTO_TCP, (__u16)(10000 + len));
		tr_seg_clear(&g);
		tr_seg_bin(&g, 0x0c, KS_OP_GET, len);
		tr_send(&g, 0, IPPROTO_TCP, (__u16)(10000 + len));
		tr_seg_clear(&g);
		tr_seg_one(&g, "get", KS_OP_GET, len, "\r\n", false);
		for (i = 0; rdv && i < 2; i++)
			tr_send(&g, 0, IPPROTO_TCP, (__u16)(20000 + len));
	}
	CHECK_EQ(tr_keys_checked - keys0, (rdv ? 4 : 2) * KS_MAX_KEY_LEN);
	if (rdv) { /* ASCII keys all placed, the others many left */
		CHECK(kp_pkt(KS_PKT_RING_HIT) >= 2 * KS_MAX_KEY_LEN &&
			      kp_pkt(KS_PKT_RING_UNPLACED) > KS_MAX_KEY_LEN / 2,
		      "placed %llu, unplaced %llu",
		      (unsigned long long)kp_pkt(KS_PKT_RING_HIT),
		      (unsigned long long)kp_pkt(KS_PKT_RING_UNPLACED));
		CHECK_EQ(kp_pkt(KS_PKT_RING_HIT) + kp_pkt(KS_PKT_RING_UNPLACED),
			 4 * KS_MAX_KEY_LEN);
	} else {
		CHECK_EQ(kp_pkt(KS_PKT_RING_HIT), 2 * KS_MAX_KEY_LEN);
	}
	kp_end();
	tr_follow(NULL);
	tr_ring_free(&t);
}

static void tr_every_length(enum ks_dist dist)
{
	tr_every_length_keyed(dist, 0, NULL);
}

/*
 * Every key hash (twemproxy's twelve) on twemproxy's ketama and modula
 * rings and on plain modula (gomemcache is modula with crc32a), with and
 * without a hash tag, and a non-default hash on three clients' rings: the key bytes are 0x21..0x7e and binary, so '{'
 * and '}' fall inside many of the longer keys, and some tags are empty
 * ("{}") or open only.
 */
static void tr_key_hashes(void)
{
	static const enum ks_dist dists[] = { KS_DIST_TWEMPROXY,
					      KS_DIST_TWEMPROXY_MODULA,
					      KS_DIST_MODULA };
	__u32 kh, d;

	for (kh = 0; kh < KS_KH_MAX; kh++)
		for (d = 0; d < 3; d++)
			tr_every_length_keyed(dists[d], kh + 1,
					      (kh + d) % 2 ? "{}" : NULL);
	/* the other clients' rings take another hash the same way; dalli's
	 * lookup complements whatever hash it is given */
	tr_every_length_keyed(KS_DIST_DALLI, 1 + KS_KH_MURMUR, "{}");
	tr_every_length_keyed(KS_DIST_KETAMA_PLAIN, 1 + KS_KH_CRC32A, NULL);
	tr_every_length_keyed(KS_DIST_MODULA_OAAT, 1 + KS_KH_FNV1A_64, "{}");
}

/* ---- the ring's edges ---- */

/* A small ring for the tests below: 4 ketama shards, self 1. */
static int tr_small(struct tr_ring *t, enum ks_dist dist, __u32 self)
{
	struct tr_shape s = { .dist = dist, .n = 4, .self = self };

	return tr_ring_build(t, &s);
}

static void tr_no_ring(void)
{
	struct tr_ring t;
	struct ks_ring_half *h;

	/* just loaded: both halves empty */
	kp_begin("ring_none_loaded_counts_nothing");
	tr_traffic(40, 7);
	CHECK_EQ(kp_pkt(KS_PKT_RING_HIT), 0);
	kp_end();

	/* a half with points but nshards 0 is no ring */
	kp_begin("ring_nshards_0_counts_nothing");
	if (!tr_small(&t, KS_DIST_KETAMA, 1)) {
		h = malloc(sizeof(*h));
		if (h) {
			memcpy(h, t.ring.half, sizeof(*h));
			h->meta.nshards = 0;
			CHECK_EQ(kp_ring_write(0, h), 0);
			CHECK_EQ(kp_ring_write(1, h), 0);
			free(h);
		}
		tr_traffic(40, 8);
		CHECK(kp_pkt(KS_PKT_SAMPLED) > 0, "nothing sampled");
		tr_ring_free(&t);
	}
	kp_end();

	/* the idle half is never read; a flip makes it the ring */
	kp_begin("ring_idle_half_unread_until_flipped");
	if (!tr_small(&t, KS_DIST_TWEMPROXY, 2)) {
		CHECK_EQ(kp_ring_write(1, t.ring.half), 0);
		tr_traffic(30, 9);
		kp_check("ring in idle half 1");
		CHECK_EQ(kp_ring_flip(1), 0);
		kp.x.ring = &t.ring; /* the model follows the flip */
		tr_follow(&t);
		tr_traffic(30, 10);
		CHECK(kp_pkt(KS_PKT_RING_HIT) > 0, "nothing placed after flip");
		kp_check("after the flip to half 1");
		/* and back to the empty half 0 */
		CHECK_EQ(kp_ring_flip(0), 0);
		kp.x.ring = NULL;
		tr_follow(NULL);
		tr_traffic(30, 11);
		kp_end();
		tr_ring_free(&t);
	} else {
		kp_end();
	}
}

/* self = KS_NO_SHARD (a client host): counted, never misdirected. */
static void tr_no_self(void)
{
	struct tr_ring t;

	kp_begin("ring_without_self_never_misdirects");
	if (!tr_small(&t, KS_DIST_KETAMA, KS_NO_SHARD)) {
		tr_load(&t);
		tr_traffic(40, 12);
		CHECK(kp_pkt(KS_PKT_RING_HIT) > 0, "nothing placed");
		CHECK_EQ(kp_pkt(KS_PKT_MISDIRECTED), 0);
		kp_end();
		tr_follow(NULL);
		tr_ring_free(&t);
	} else {
		kp_end();
	}
}

/*
 * Misdirected clients: 40 keys from TCP/UDP over IPv4/IPv6 clients, each
 * owned by another shard; the 32 slots hold the last 32 round robin, with
 * address, port, protocol, owner and key hash (kp's model checks them).
 */
static void tr_misdirect_slots(void)
{
	static struct tr_seg g;
	struct tr_ring t;
	struct ks_misdirect m;
	__u32 found = 0, tries = 0;
	int i;

	kp_begin("ring_misdirect_slots_keep_last_32_clients");
	if (tr_small(&t, KS_DIST_KETAMA, 0)) {
		kp_end();
		return;
	}
	tr_load(&t);
	while (found < 40 && tries++ < 10000) {
		const __u8 *k = tr_new_key(12 + found % 20, found % 2);

		if (ks_ring_lookup(&t.ring, k, 12 + found % 20) == 0)
			continue; /* owned by self: not misdirected */
		tr_seg_clear(&g);
		tr_seg_req(&g, KS_OP_GET);
		tr_seg_puts(&g, "get ");
		tr_seg_key(&g, k, 12 + found % 20, true);
		tr_seg_puts(&g, "\r\n");
		tr_seg_end(&g);
		tr_send(&g, found % 4 >= 2,
			found % 2 ? IPPROTO_UDP : IPPROTO_TCP,
			(__u16)(50000 + found));
		found++;
	}
	CHECK_EQ(kp_pkt(KS_PKT_MISDIRECTED), 40);
	/* the model checks every slot; pin one down here too: the 40th key
	 * (found 39: UDP over IPv6, port 50039) is in slot 39 % 32 = 7 */
	CHECK_EQ(kp_misdirect_read(7, kp.cpu, &m), 0);
	CHECK_EQ(m.sport, 50039);
	CHECK_EQ(m.proto, IPPROTO_UDP);
	CHECK(m.saddr[0] == 0x20 && m.saddr[1] == 0x01, "slot 7 not IPv6");
	CHECK_EQ(kp_misdirect_read(8, kp.cpu, &m), 0);
	CHECK_EQ(m.sport, 50008); /* key 8 (TCP, IPv4), 32 + 8 not yet */
	for (i = 0; i < 10; i++)
		CHECK(m.saddr[i] == 0, "IPv4 slot not ::ffff:a.b.c.d");
	CHECK(m.saddr[10] == 0xff && m.saddr[11] == 0xff && m.saddr[12] == 198,
	      "IPv4 slot not ::ffff:198.18.0.x");
	kp_end();
	tr_follow(NULL);
	tr_ring_free(&t);
}

/*
 * sample_n 3: only sampled keys reach the ring. 30 gets of one key give
 * 10 samples, all counted for that key's owner.
 */
static void tr_sampled_only(void)
{
	static struct tr_seg g;
	struct ks_shard_stats st[4];
	struct tr_ring t;
	__u8 k[16];
	__u32 owner;
	int i;

	kp_begin("ring_counts_sampled_keys_only");
	if (tr_small(&t, KS_DIST_TWEMPROXY, KS_NO_SHARD)) {
		kp_end();
		return;
	}
	tr_load(&t);
	kp_set_sample(3);
	tr_key(k, sizeof(k), 4242, true);
	owner = ks_ring_lookup(&t.ring, k, sizeof(k));
	tr_follow(NULL); /* the per-packet check knows no sampling */
	for (i = 0; i < 30; i++) {
		tr_seg_clear(&g);
		tr_seg_req(&g, KS_OP_GET);
		tr_seg_puts(&g, "get ");
		tr_seg_key(&g, k, sizeof(k), true);
		tr_seg_puts(&g, "\r\n");
		tr_seg_end(&g);
		tr_send(&g, 0, IPPROTO_TCP, 40000);
	}
	CHECK_EQ(kp_pkt(KS_PKT_SAMPLED), 10);
	CHECK_EQ(kp_pkt(KS_PKT_RING_HIT), 10);
	CHECK_EQ(kp_shards_read(st, 4), 0);
	for (i = 0; i < 4; i++)
		CHECK_EQ(st[i].reads, (__u32)i == owner ? 10 : 0);
	kp_end();
	tr_ring_free(&t);
}

/* The tc program places keys as XDP does. */
static void tr_tc(void)
{
	static struct tr_seg g;
	static struct pkt p;
	struct tr_ring t;
	__u32 x = 5;
	int i, r, k;

	kp_begin("ring_tc_program_places_keys");
	if (tr_small(&t, KS_DIST_VNODE, 3)) {
		kp_end();
		return;
	}
	tr_load(&t);
	for (i = 0; i < 20; i++) {
		tr_seg_clear(&g);
		tr_seg_get(&g, "get", KS_OP_GET, 1 + i % 5, KS_MAX_KEY_LEN, &x,
			   i % 2);
		tr_seg_store(&g, "set", KS_OP_SET, tr_pick_len(&x, 200), 5,
			     true);
		tr_pkt(&p, &g, i % 2, IPPROTO_TCP, (__u16)(41000 + i));
		kp_send_tc(&p);
		for (r = 0; r < g.nreq; r++) {
			kp_x_req(g.req[r].op, g.req[r].bytes, NULL);
			for (k = 0; k < g.req[r].nkeys; k++) {
				const struct tr_key *e =
					&g.keys[g.req[r].first + k];

				kp_x_keyn(e->op, e->b, e->len);
			}
		}
	}
	CHECK(kp_pkt(KS_PKT_RING_HIT) >= 40, "tc placed %llu keys",
	      (unsigned long long)kp_pkt(KS_PKT_RING_HIT));
	kp_end();
	tr_follow(NULL);
	tr_ring_free(&t);
}

/*
 * A ring of explicit points (issue 26): a plan from core/ring_plan.h on
 * 16 ketama shards, shard 5 loaded twice the others with 8 of its keys
 * known, so the plan gives those keys arcs of their own and slices of
 * shard 5's arcs to the light shards. The datapath must place every key
 * as user space does on the planned points (tr_send, packet by packet),
 * and the known keys must be on shards other than their ketama owner's:
 * a datapath on the names' ring would count them for shard 5.
 */
static void tr_explicit_points(void)
{
	struct tr_shape s = { .dist = KS_DIST_KETAMA, .n = 16, .self = 5 };
	struct ks_plan_key keys[8];
	struct ks_plan_in in = { 0 };
	struct ks_plan_out out;
	struct tr_ring t;
	struct ks_ring e;
	static struct tr_seg g;
	double load[16];
	char err[512];
	__u8 kb[8][24];
	size_t kl[8];
	__u32 i, nk = 0, seed = 0, off5 = 0, carved;

	kp_begin("ring_explicit_points_planned_16_shards");
	if (tr_ring_build(&t, &s)) {
		kp_end();
		return;
	}
	for (i = 0; i < 16; i++)
		load[i] = 100;
	load[5] = 200;
	/* 8 keys of shard 5, 10 requests/s each */
	while (nk < 8 && seed < 100000) {
		int n = snprintf((char *)kb[nk], sizeof(kb[nk]), "plan:%u",
				 seed++);

		if (ks_ring_lookup(&t.ring, kb[nk], (size_t)n) != 5)
			continue;
		kl[nk] = (size_t)n;
		keys[nk].hash = ks_ring_hash(&t.ring, kb[nk], (size_t)n);
		keys[nk].load = 10;
		keys[nk++].fixed = 0;
	}
	in.base = &t.ring;
	in.load = load;
	in.keys = keys;
	in.nkeys = nk;
	in.target = 1.02;
	CHECK(nk == 8 && !ks_ring_plan(&in, &out, err, sizeof(err)), "plan: %s",
	      err);
	CHECK(out.keys_carved > 0 && out.slices > 0,
	      "%u keys carved, %u slices", out.keys_carved, out.slices);
	if (ks_ring_build_points(&e, &t.ring, &t.shards, out.pts, out.npts, err,
				 sizeof(err))) {
		CHECK(0, "build: %s", err);
		ks_ring_plan_free(&out);
		tr_ring_free(&t);
		kp_end();
		return;
	}
	carved = out.keys_carved;
	ks_ring_plan_free(&out);
	/* slices stop short of known keys: exactly the carved keys left */
	for (i = 0; i < nk; i++)
		off5 += ks_ring_lookup(&e, kb[i], kl[i]) != 5;
	CHECK(off5 == carved && off5 >= 1,
	      "%u of %u keys off shard 5, %u carved", off5, nk, carved);
	ks_ring_free(&t.ring);
	t.ring = e;
	tr_load(&t);
	/* the known keys, one a packet, then every shape of traffic */
	for (i = 0; i < nk; i++) {
		tr_seg_clear(&g);
		tr_seg_req(&g, KS_OP_GET);
		tr_seg_puts(&g, "get ");
		tr_seg_key(&g, kb[i], kl[i], true);
		tr_seg_puts(&g, "\r\n");
		tr_seg_end(&g);
		tr_send(&g, 0, IPPROTO_TCP, (__u16)(41000 + i));
	}
	tr_traffic(160, 2600);
	CHECK(t.ring.half->meta.planned == 1, "planned");
	CHECK(kp_pkt(KS_PKT_RING_HIT) > 500, "only %llu keys placed",
	      (unsigned long long)kp_pkt(KS_PKT_RING_HIT));
	kp_end();
	tr_follow(NULL);
	tr_ring_free(&t);
}

void t_ring_group(void)
{
	int d, c;

	for (d = 0; d < KS_DIST_MAX; d++)
		for (c = 0; c < (int)(sizeof(tr_counts) / sizeof(tr_counts[0]));
		     c++)
			tr_dist_case((enum ks_dist)d, c);
	for (d = 0; d < KS_DIST_MAX; d++)
		tr_every_length((enum ks_dist)d);
	tr_key_hashes();
	tr_no_ring();
	tr_no_self();
	tr_misdirect_slots();
	tr_sampled_only();
	tr_tc();
	tr_explicit_points();
	printf("# ring: %llu packets and %llu keys checked against user space one packet at a time\n",
	       (unsigned long long)tr_pkts_checked,
	       (unsigned long long)tr_keys_checked);
}
