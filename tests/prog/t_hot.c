// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_hot.c - the hot-key slots (ks_hot) in the datapath: which keys are
 * looked up and counted, writes turning an armed key dirty (with one
 * wake-up event), and, in a network namespace of the test's own with veth
 * pairs and fixed neighbours, the steering of lone UDP gets: rewrite,
 * checksums, XDP_TX or redirect, round robin, and every case that must
 * leave the packet to the owner untouched.
 *
 * Slots are written through the agent's own code (user/dp/hot_map.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "dp/hot_map.h"
#include "net/vlan_devs.h"
#include "kp.h"
#include "kt_netns.h"
#include "groups.h"

#define HOT_KEY    "hotkey01"
#define FAR_FUTURE (1ULL << 62)

static struct ks_hot_map hm;
static int nevents;
static struct ks_hot_event last_event;

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int on_hot_event(void *ctx, void *data, size_t size)
{
	if (size >= sizeof(last_event))
		memcpy(&last_event, data, sizeof(last_event));
	nevents++;
	return 0;
}

static int drain_hot_events(void)
{
	struct ring_buffer *rb;

	nevents = 0;
	rb = ring_buffer__new(kp_map_fd("ks_hot_events"), on_hot_event, NULL,
			      NULL);
	if (!rb)
		return -1;
	ring_buffer__consume(rb);
	ring_buffer__free(rb);
	return nevents;
}

/* kp_begin plus the hot table turned on and the map opened. */
static void hot_begin(const char *name)
{
	struct ks_config c;
	int err;

	kp_begin(name);
	c = kp.cfg;
	c.hot = 1;
	kp_config(&c);
	err = ks_hot_map_open(
		&hm, kp_map_fd("ks_hot"), kp_map_fd("ks_hot_filter"),
		kp_map_fd("ks_hot_stats"), kp_map_fd("ks_replicas"),
		kp_map_fd("ks_replica_stats"));
	if (err)
		kt_failf(__FILE__, __LINE__, "mmap ks_hot: %s", strerror(-err));
	drain_hot_events();
}

static void hot_end(void)
{
	ks_hot_map_close(&hm);
	kp_end();
}

static int hot_add(const char *key, __u32 ncopies, const __u8 *replicas,
		   int armed)
{
	__u64 h = kp_hash(key, strlen(key));
	int idx = ks_hot_map_alloc(&hm, h, (const __u8 *)key, strlen(key));

	if (idx < 0) {
		kt_failf(__FILE__, __LINE__, "alloc slot: %s", strerror(-idx));
		return 0;
	}
	if (ncopies > 1)
		/* every copy its equal share, the owner's included */
		ks_hot_map_set_copies(&hm, idx, ncopies, replicas,
				      KS_STEER_SCHED / ncopies);
	if (armed)
		ks_hot_map_arm(&hm, idx, ks_hot_map_write_seq(&hm, idx),
			       FAR_FUTURE);
	return idx;
}

static struct ks_hot_stats hot_stats(int idx)
{
	struct ks_hot_stats st;

	if (ks_hot_map_stats(&hm, idx, &st))
		kt_failf(__FILE__, __LINE__, "read ks_hot_stats");
	return st;
}

static void x_hot(int counter, int n)
{
	kp.x.pkts[counter] += n;
}

/* A UDP get through ks_ingress, expected to stay with the owner. */
static void send_udp_get(const char *key)
{
	char pay[300];
	struct pkt p;
	int n = snprintf(pay, sizeof(pay), "get %s\r\n", key);

	kp_udp4(&p, pay, n);
	kp_send_mc(&p);
	kp_x_req(KS_OP_GET, n, key, NULL);
}

static void test_table_off(void)
{
	struct ks_config c;
	int idx;

	hot_begin("hot_table_off_is_not_consulted");
	idx = hot_add(HOT_KEY, 1, NULL, 0);
	c = kp.cfg;
	c.hot = 0;
	kp_config(&c);
	kp_send_tcp4("get " HOT_KEY "\r\n");
	kp_x_req(KS_OP_GET, 14, HOT_KEY, NULL);
	CHECK_EQ(hot_stats(idx).reads, 0);
	hot_end();
}

static void test_reads_counted(void)
{
	struct ks_hot_stats st;
	struct pkt p;
	int idx;

	hot_begin("hot_reads_counted_by_protocol");
	idx = hot_add(HOT_KEY, 1, NULL, 0);
	kp_send_tcp4("get " HOT_KEY "\r\n");
	kp_x_req(KS_OP_GET, 14, HOT_KEY, NULL);
	kp_send_tcp4("gets other " HOT_KEY "\r\n");
	kp_x_req(KS_OP_GETS, 21, "other", HOT_KEY, NULL);
	/* UDP: the fast path, and the general parser (two keys) */
	send_udp_get(HOT_KEY);
	kp_udp4(&p, "get " HOT_KEY " other\r\n", 20);
	kp_send_mc(&p);
	kp_x_req(KS_OP_GET, 20, HOT_KEY, "other", NULL);
	/* through tc too, which never steers */
	kp_udp4(&p, "get " HOT_KEY "\r\n", 14);
	kp_send_tc(&p);
	kp_x_req(KS_OP_GET, 14, HOT_KEY, NULL);
	x_hot(KS_PKT_HOT_READ, 5);
	st = hot_stats(idx);
	CHECK_EQ(st.reads, 5);
	CHECK_EQ(st.tcp_reads, 2);
	CHECK_EQ(st.writes, 0);
	CHECK_EQ(st.steered, 0);
	/* UDP reads all stay with the owner: not armed, two keys, tc */
	CHECK_EQ(st.owner, 3);
	hot_end();
}

static void test_unsampled_looked_up(void)
{
	int idx;

	hot_begin("hot_unsampled_keys_looked_up");
	kp_set_sample(1000000);
	idx = hot_add(HOT_KEY, 1, NULL, 0);
	kp_send_tcp4("get a1 b2 " HOT_KEY " c3\r\n");
	kp_x_req(KS_OP_GET, 23, "a1", "b2", HOT_KEY, "c3", NULL);
	kp_send_tcp4("get " HOT_KEY "\r\n");
	kp_x_req(KS_OP_GET, 14, HOT_KEY, NULL);
	x_hot(KS_PKT_HOT_READ, 2);
	CHECK_EQ(hot_stats(idx).reads, 2);
	hot_end();
}

static void test_writes_dirty(void)
{
	__u64 before;
	int idx, ev;

	hot_begin("hot_write_dirties_armed_key_once");
	idx = hot_add(HOT_KEY, 1, NULL, 1);
	CHECK(ks_hot_map_armed(&hm, idx), "armed after arm");
	before = mono_ns();
	kp_send_tcp4("set " HOT_KEY " 0 0 1\r\nx\r\n");
	kp_x_req(KS_OP_SET, 23, HOT_KEY, NULL);
	CHECK_EQ(ks_hot_map_write_seq(&hm, idx), 1);
	CHECK(!ks_hot_map_armed(&hm, idx), "dirty after a write");
	CHECK(ks_hot_map_last_write(&hm, idx) >= before,
	      "last_write_ns is the write's time");
	ev = drain_hot_events();
	CHECK_EQ(ev, 1);
	CHECK_EQ(last_event.slot, (__u32)idx);
	CHECK_EQ(last_event.write_seq, 1);
	CHECK_EQ(last_event.hash, kp_hash(HOT_KEY, 8));
	/* already dirty: counted, no second wake-up */
	kp_send_tcp4("delete " HOT_KEY "\r\n");
	kp_x_req(KS_OP_DELETE, 17, HOT_KEY, NULL);
	kp_send_tcp4("ms " HOT_KEY " 1\r\ny\r\n");
	kp_x_req(KS_OP_MS, 18, HOT_KEY, NULL);
	CHECK_EQ(ks_hot_map_write_seq(&hm, idx), 3);
	CHECK_EQ(drain_hot_events(), 0);
	/* re-armed at the new sequence: the next write wakes again */
	ks_hot_map_arm(&hm, idx, 3, FAR_FUTURE);
	kp_send_tcp4("incr " HOT_KEY " 1\r\n");
	kp_x_req(KS_OP_INCR, 17, HOT_KEY, NULL);
	CHECK_EQ(drain_hot_events(), 1);
	CHECK_EQ(last_event.write_seq, 4);
	x_hot(KS_PKT_HOT_WRITE, 4);
	CHECK_EQ(hot_stats(idx).writes, 4);
	hot_end();
}

static void test_unarmed_write_no_event(void)
{
	int idx;

	hot_begin("hot_write_to_unarmed_key_no_event");
	idx = hot_add(HOT_KEY, 1, NULL, 0);
	kp_send_tcp4("set " HOT_KEY " 0 0 1\r\nx\r\n");
	kp_x_req(KS_OP_SET, 23, HOT_KEY, NULL);
	x_hot(KS_PKT_HOT_WRITE, 1);
	CHECK_EQ(ks_hot_map_write_seq(&hm, idx), 1);
	CHECK_EQ(drain_hot_events(), 0);
	hot_end();
}

static void test_other_keys(void)
{
	int idx;

	hot_begin("hot_other_keys_untouched");
	idx = hot_add(HOT_KEY, 1, NULL, 1);
	kp_send_tcp4("set hotkey02 0 0 1\r\nx\r\n");
	kp_x_req(KS_OP_SET, 23, "hotkey02", NULL);
	send_udp_get("hotkey0");
	send_udp_get("hotkey011");
	CHECK_EQ(ks_hot_map_write_seq(&hm, idx), 0);
	CHECK_EQ(hot_stats(idx).reads, 0);
	CHECK(ks_hot_map_armed(&hm, idx), "still armed");
	hot_end();
}

/* A full bucket refuses a fifth key; a released slot is reused only
 * after reclaim. */
static void test_slot_life(void)
{
	char keys[KS_HOT_WAYS + 1][16];
	__u32 bucket = 0;
	int n = 0, i, idx;

	hot_begin("hot_slot_alloc_release_reclaim");
	for (i = 0; n < KS_HOT_WAYS + 1 && i < 1000000; i++) {
		char k[16];

		snprintf(k, sizeof(k), "k%d", i);
		if (n && ks_hot_bucket(kp_hash(k, strlen(k))) != bucket)
			continue;
		bucket = ks_hot_bucket(kp_hash(k, strlen(k)));
		strcpy(keys[n++], k);
	}
	for (i = 0; i < KS_HOT_WAYS; i++)
		CHECK(ks_hot_map_alloc(&hm, kp_hash(keys[i], strlen(keys[i])),
				       (const __u8 *)keys[i],
				       strlen(keys[i])) >= 0,
		      "way %d", i);
	idx = ks_hot_map_alloc(&hm, kp_hash(keys[4], strlen(keys[4])),
			       (const __u8 *)keys[4], strlen(keys[4]));
	CHECK_EQ(idx, -ENOSPC);
	idx = ks_hot_map_find(&hm, kp_hash(keys[1], strlen(keys[1])));
	CHECK(idx >= 0, "find");
	ks_hot_map_release(&hm, idx);
	CHECK_EQ(ks_hot_map_find(&hm, kp_hash(keys[1], strlen(keys[1]))), -1);
	CHECK_EQ(ks_hot_map_alloc(&hm, kp_hash(keys[4], strlen(keys[4])),
				  (const __u8 *)keys[4], strlen(keys[4])),
		 -ENOSPC);
	CHECK_EQ(ks_hot_map_reclaim(&hm), 1);
	CHECK_EQ(ks_hot_map_alloc(&hm, kp_hash(keys[4], strlen(keys[4])),
				  (const __u8 *)keys[4], strlen(keys[4])),
		 idx);
	hot_end();
}

/* The filter bit of key's bucket, as the datapath reads it. */
static int filter_bit(const char *key)
{
	return ks_hot_filter_has(hm.filter,
				 ks_hot_bucket(kp_hash(key, strlen(key))));
}

/* A key of another bucket than HOT_KEY's, with an empty bucket. */
static const char *other_bucket_key(char *buf, size_t len)
{
	unsigned int i;

	for (i = 0;; i++) {
		kp_make_key(buf, len, 8000 + i);
		if (ks_hot_bucket(kp_hash(buf, len)) !=
		    ks_hot_bucket(kp_hash(HOT_KEY, 8)))
			return buf;
	}
}

/*
 * The presence filter (ks_hot_filter): a bucket's bit is on from before
 * its key is published until the bucket is empty after a grace period,
 * and every write and read of a hot key, by the fast path or the general
 * parser, is seen while it is on.
 */
static void test_filter_tracks_table(void)
{
	char other[16];
	int idx;

	hot_begin("hot_filter_bit_follows_the_table");
	CHECK_EQ(filter_bit(HOT_KEY), 0);
	idx = hot_add(HOT_KEY, 1, NULL, 1);
	CHECK_EQ(filter_bit(HOT_KEY), 1);
	CHECK_EQ(filter_bit(other_bucket_key(other, 12)), 0);
	/* a lone get (fast path), a multi-get and a write (general path) */
	kp_send_tcp4("get " HOT_KEY "\r\n");
	kp_x_req(KS_OP_GET, 14, HOT_KEY, NULL);
	kp_send_tcp4("get aaaa " HOT_KEY " bbbb\r\n");
	kp_x_req(KS_OP_GET, 24, "aaaa", HOT_KEY, "bbbb", NULL);
	kp_send_tcp4("set " HOT_KEY " 0 0 1\r\nx\r\n");
	kp_x_req(KS_OP_SET, 23, HOT_KEY, NULL);
	x_hot(KS_PKT_HOT_READ, 2);
	x_hot(KS_PKT_HOT_WRITE, 1);
	CHECK_EQ(hot_stats(idx).reads, 2);
	CHECK_EQ(hot_stats(idx).writes, 1);
	CHECK_EQ(ks_hot_map_write_seq(&hm, idx), 1);
	drain_hot_events();
	/* released: the bit stays until the slot is reclaimed */
	ks_hot_map_release(&hm, idx);
	CHECK_EQ(filter_bit(HOT_KEY), 1);
	CHECK_EQ(ks_hot_map_reclaim(&hm), 1);
	CHECK_EQ(filter_bit(HOT_KEY), 0);
	hot_end();
}

/*
 * The fast path hashes a lone get's key from the packet when it is not
 * due for sampling: every key length it takes (4..32 bytes: whole words,
 * the last one shifted), over XDP and tc, must find its slot. (A TCP
 * segment of a flow never opened goes to the general parser: the check
 * that both paths agree.)
 */
static void test_fast_hash_every_length(void)
{
	char key[40], pay[64];
	struct pkt p;
	size_t len;
	int idx, n;

	hot_begin("hot_fast_path_hash_every_key_length");
	kp_set_sample(1000000);
	for (len = 4; len <= 32; len++) {
		kp_make_key(key, len, 9000 + (unsigned int)len);
		idx = hot_add(key, 1, NULL, 0);
		n = snprintf(pay, sizeof(pay), "get %s\r\n", key);
		kp_tcp4(&p, pay, (size_t)n);
		kp_send_mc(&p);
		kp_udp4(&p, pay, (size_t)n);
		kp_send_tc(&p);
		send_udp_get(key);
		kp_x_req(KS_OP_GET, (size_t)n, key, NULL);
		kp_x_req(KS_OP_GET, (size_t)n, key, NULL);
		x_hot(KS_PKT_HOT_READ, 3);
		CHECK_EQ(hot_stats(idx).reads, 3);
		ks_hot_map_release(&hm, idx);
		ks_hot_map_reclaim(&hm);
	}
	hot_end();
}

/*
 * The control: with the key's bit cleared behind the agent's back, its
 * write goes unseen (the slot is not dirtied). Without it, the test above
 * could pass with a filter the datapath never reads.
 */
static void test_filter_control(void)
{
	int idx;

	hot_begin("hot_filter_control_cleared_bit_hides_writes");
	idx = hot_add(HOT_KEY, 1, NULL, 1);
	memset(hm.filter, 0, sizeof(*hm.filter));
	CHECK_EQ(filter_bit(HOT_KEY), 0);
	kp_send_tcp4("set " HOT_KEY " 0 0 1\r\nx\r\n");
	kp_x_req(KS_OP_SET, 23, HOT_KEY, NULL);
	kp_send_tcp4("get " HOT_KEY "\r\n");
	kp_x_req(KS_OP_GET, 14, HOT_KEY, NULL);
	CHECK_EQ(ks_hot_map_write_seq(&hm, idx), 0);
	CHECK_EQ(hot_stats(idx).writes, 0);
	CHECK_EQ(hot_stats(idx).reads, 0);
	CHECK(ks_hot_map_armed(&hm, idx), "still armed: the write was hidden");
	hot_end();
}

/*
 * Bytes of a stream that went by unparsed may have held a write to any hot
 * key (ks_disarm_all): every armed key turns dirty and wakes the agent
 * once, a key not armed does not, wherever in the table the keys are. The
 * keys sit in different buckets, and one in the last, so a walk that
 * reads the wrong filter bit or stops early leaves one armed. With
 * walk_on 0 the table flag is cleared after arming, which skips the walk:
 * the control, whose keys must then not look as the walk leaves them.
 */
static void gap_with_armed_keys(const char *name, int walk_on)
{
	static const char s[] = "get g1\r\nget g2\r\nget g3\r\n";
	char keys[3][16];
	int idx[3], i, n = 0, as_expected = 0;
	struct kp_flow f;
	unsigned int k;

	hot_begin(name);
	/* two armed keys of distinct buckets, one of them in the last
	 * bucket; a third key installed but not armed */
	for (k = 0; n < 3 && k < 1000000; k++) {
		__u32 b;

		kp_make_key(keys[n], 12, 20000 + k);
		b = ks_hot_bucket(kp_hash(keys[n], strlen(keys[n])));
		if (n == 0 && b != KS_HOT_BUCKETS - 1)
			continue;
		if (n > 0 && b == ks_hot_bucket(kp_hash(keys[0], 12)))
			continue;
		n++;
	}
	CHECK_EQ(n, 3);
	for (i = 0; i < 3; i++)
		idx[i] = hot_add(keys[i], 1, NULL, i < 2);
	CHECK(idx[0] >= (KS_HOT_BUCKETS - 1) * KS_HOT_WAYS,
	      "the first key is in the last bucket");
	if (!walk_on) {
		struct ks_config c = kp.cfg;

		c.hot = 0;
		kp_config(&c);
	}
	kp_flow_new(&f, 0);
	kp_flow_syn(&f);
	kp_flow_send(&f, 0, s, 8, PKT_TCP_PSH | PKT_TCP_ACK);
	kp_flow_send(&f, 16, s + 16, 8, PKT_TCP_PSH | PKT_TCP_ACK);
	kp_flow_fin(&f, 24);
	kp_x_req(KS_OP_GET, 8, "g1", NULL);
	kp_x_req(KS_OP_GET, 8, "g3", NULL);
	kp_x_pkt(KS_PKT_RESYNC_GAP, 1);
	kp_x_pkt_dontcare(KS_PKT_HOT_DISARM);
	for (i = 0; i < 3; i++)
		as_expected += ks_hot_map_write_seq(&hm, idx[i]) == (i < 2);
	if (walk_on) {
		CHECK_EQ(as_expected, 3);
		CHECK(!ks_hot_map_armed(&hm, idx[0]) &&
			      !ks_hot_map_armed(&hm, idx[1]),
		      "both armed keys dirty after the gap");
		CHECK_EQ(drain_hot_events(), 2);
	} else {
		/* without the walk the same checks must fail */
		CHECK(as_expected < 3,
		      "with the walk skipped the keys still looked dirtied");
		CHECK_EQ(drain_hot_events(), 0);
	}
	hot_end();
}

static void test_gap_dirties_every_armed_key(void)
{
	gap_with_armed_keys("hot_gap_dirties_every_armed_key", 1);
	gap_with_armed_keys("hot_gap_control_without_walk_fails", 0);
}

void t_hot_group(void)
{
	test_gap_dirties_every_armed_key();
	test_table_off();
	test_reads_counted();
	test_unsampled_looked_up();
	test_writes_dirty();
	test_unarmed_write_no_event();
	test_other_keys();
	test_slot_life();
	test_filter_tracks_table();
	test_filter_control();
	test_fast_hash_every_length();
}

/* ---------------- steering, in a namespace of our own ---------------- */

#define DEV0 "kst0"
#define DEV1 "kst1"
static const __u8 mac0[6] = { 2, 0, 0, 0, 0, 1 };
static const __u8 rmac[4][6] = {
	{ 2, 0, 0, 0, 0, 0x50 },
	{ 2, 0, 0, 0, 0, 0x52 },
	{ 2, 0, 0, 0, 0, 0x53 },
	{ 2, 0, 0, 0, 0, 0x60 },
};
static int if0, if1;

/* Replica table: 0,1,2 behind kst0 (XDP_TX), 3 behind kst1 (redirect),
 * 4 with no neighbour entry; IPv6 from 5 on: 5 behind kst0, 6 behind
 * kst1, 7 with no neighbour; then the VLANs of kst0 (steer_netns): 8, 9
 * on kst0.100 (802.1Q), 10, 11 on kst0.200.300 (802.1ad 200, 802.1Q 300
 * inside). */
static const char *const raddr[] = {
	"198.18.0.50",   "198.18.0.52",    "198.18.0.53",   "198.18.1.60",
	"198.18.0.51",   "2001:2::50",     "2001:2:1::60",  "2001:2::51",
	"198.18.100.50", "2001:2:100::50", "198.18.230.50", "2001:2:230::50"
};
static const __u16 rport[] = { 11311, 11211, 11211, 11411, 11211, 11311,
			       11411, 11211, 11212, 11213, 11214, 11215 };
#define NREPLICAS (int)(sizeof(rport) / sizeof(rport[0]))
/* neighbour MACs of replicas 5.. */
static const __u8 rmac6[][6] = {
	{ 2, 0, 0, 0, 6, 0x50 },
	{ 2, 0, 0, 0, 6, 0x60 },
	{ 0 },
	{ 2, 0, 0, 1, 0, 0x50 },
	{ 2, 0, 0, 1, 6, 0x50 },
	{ 2, 0, 0, 2, 0, 0x50 },
	{ 2, 0, 0, 2, 6, 0x50 },
};
/* stand-ins for kst0.100 and kst0.200.300 (steer_netns) */
#define VLAN_DEV1 "kstv100"
#define VLAN_DEV2 "kstv230"
static const __u8 vmac[2][6] = { { 2, 0, 0, 0, 0, 3 }, { 2, 0, 0, 0, 0, 4 } };
static struct ks_vlan_dev vdev[4]; /* as ks_vlan_devs() lists them */

static int sh(const char *cmd)
{
	int rc = system(cmd);

	return rc == 0 ? 0 : -1;
}

static int steer_netns(void)
{
	int err = kt_private_netns();

	if (err)
		return err;
	if (sh("ip link add " DEV0
	       " address 02:00:00:00:00:01 type veth peer name " DEV0 "p &&"
	       "ip link add " DEV1
	       " address 02:00:00:00:00:02 type veth peer name " DEV1 "p &&"
	       "ip link set " DEV0 "p up && ip link set " DEV1 "p up &&"
	       "ip addr add 198.18.0.2/24 dev " DEV0 " &&"
	       "ip addr add 198.18.1.2/24 dev " DEV1 " &&"
	       "ip link set " DEV0 " up && ip link set " DEV1 " up &&"
	       "ip neigh replace 198.18.0.50 lladdr 02:00:00:00:00:50 dev " DEV0
	       " nud permanent &&"
	       "ip neigh replace 198.18.0.52 lladdr 02:00:00:00:00:52 dev " DEV0
	       " nud permanent &&"
	       "ip neigh replace 198.18.0.53 lladdr 02:00:00:00:00:53 dev " DEV0
	       " nud permanent &&"
	       "ip neigh replace 198.18.1.60 lladdr 02:00:00:00:00:60 dev " DEV1
	       " nud permanent &&"
	       "sysctl -qw net.ipv4.conf." DEV0 ".forwarding=1 &&"
	       "sysctl -qw net.ipv4.conf." DEV1 ".forwarding=1"))
		return -EIO;
	/* IPv6 on both; and two devices that stand in for kst0's VLAN
	 * sub-interfaces (kst0.100, and QinQ kst0.200.300): the datapath
	 * knows them only as ifindexes in ks_vlans, and a kernel without
	 * CONFIG_VLAN_8021Q (this VM's) cannot make real ones */
	if (sh("ip addr add 2001:2::2/64 dev " DEV0 " nodad &&"
	       "ip addr add 2001:2:1::2/64 dev " DEV1 " nodad &&"
	       "ip neigh replace 2001:2::50 lladdr 02:00:00:00:06:50 dev " DEV0
	       " nud permanent &&"
	       "ip neigh replace 2001:2:1::60 lladdr 02:00:00:00:06:60 dev " DEV1
	       " nud permanent &&"
	       "sysctl -qw net.ipv6.conf." DEV0 ".forwarding=1 &&"
	       "sysctl -qw net.ipv6.conf." DEV1 ".forwarding=1 &&"
	       "ip link add " VLAN_DEV1
	       " address 02:00:00:00:00:03 type veth peer name " VLAN_DEV1
	       "p &&"
	       "ip link add " VLAN_DEV2
	       " address 02:00:00:00:00:04 type veth peer name " VLAN_DEV2
	       "p &&"
	       "ip link set " VLAN_DEV1 "p up && ip link set " VLAN_DEV2
	       "p up &&"
	       "ip link set " VLAN_DEV1 " up && ip link set " VLAN_DEV2 " up &&"
	       "ip addr add 198.18.100.2/24 dev " VLAN_DEV1 " &&"
	       "ip addr add 2001:2:100::2/64 dev " VLAN_DEV1 " nodad &&"
	       "ip addr add 198.18.230.2/24 dev " VLAN_DEV2 " &&"
	       "ip addr add 2001:2:230::2/64 dev " VLAN_DEV2 " nodad &&"
	       "ip neigh replace 198.18.100.50 lladdr 02:00:00:01:00:50 dev " VLAN_DEV1
	       " nud permanent &&"
	       "ip neigh replace 2001:2:100::50 lladdr 02:00:00:01:06:50 dev " VLAN_DEV1
	       " nud permanent &&"
	       "ip neigh replace 198.18.230.50 lladdr 02:00:00:02:00:50 dev " VLAN_DEV2
	       " nud permanent &&"
	       "ip neigh replace 2001:2:230::50 lladdr 02:00:00:02:06:50 dev " VLAN_DEV2
	       " nud permanent &&"
	       "sysctl -qw net.ipv4.conf." VLAN_DEV1 ".forwarding=1 &&"
	       "sysctl -qw net.ipv6.conf." VLAN_DEV1 ".forwarding=1 &&"
	       "sysctl -qw net.ipv4.conf." VLAN_DEV2 ".forwarding=1 &&"
	       "sysctl -qw net.ipv6.conf." VLAN_DEV2 ".forwarding=1"))
		return -EIO;
	vdev[0].key.ifindex = vdev[1].key.ifindex = if_nametoindex(DEV0);
	vdev[0].key.vid[0] = 100;
	vdev[0].ifindex = if_nametoindex(VLAN_DEV1);
	vdev[1].key.vid[0] = 200;
	vdev[1].key.vid[1] = 300;
	vdev[1].ifindex = if_nametoindex(VLAN_DEV2);
	vdev[2].key.ifindex = vdev[2].ifindex = vdev[0].ifindex;
	vdev[3].key.ifindex = vdev[3].ifindex = vdev[1].ifindex;
	if0 = if_nametoindex(DEV0);
	if1 = if_nametoindex(DEV1);
	return if0 && if1 ? 0 : -ENODEV;
}

/* The datapath accepts any mix of families (the agent gives one); the
 * tests use both at once. */
static void steer_begin(const char *name)
{
	struct ks_replica r[NREPLICAS];
	int i;

	memset(r, 0, sizeof(r));
	hot_begin(name);
	for (i = 0; i < NREPLICAS; i++) {
		if (inet_pton(AF_INET, raddr[i], &r[i].addr) == 1) {
			r[i].family = KS_AF_INET;
		} else {
			inet_pton(AF_INET6, raddr[i], r[i].addr.v6);
			r[i].family = KS_AF_INET6;
		}
		r[i].port = htons(rport[i]);
	}
	if (ks_hot_map_set_replicas(&hm, r, NREPLICAS))
		kt_failf(__FILE__, __LINE__, "write ks_replicas");
	/* through the agent's own code, as 'agent run' writes it */
	if (ks_vlan_devs_sync(kp_map_fd("ks_vlans"), vdev, 4))
		kt_failf(__FILE__, __LINE__, "write ks_vlans");
}

/* Runs p through ks_ingress as if received on ifindex. */
static int run_on(const struct pkt *p, int ifindex, __u32 *rc, __u8 *out,
		  __u32 *olen)
{
	struct xdp_md ctx = { .data_end = p->len, .ingress_ifindex = ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = p->b,
		    .data_size_in = p->len, .data_out = out,
		    .data_size_out = *olen, .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = 1);
	int err = bpf_prog_test_run_opts(kp.xdp_fd, &o);

	if (err)
		return -errno;
	*rc = o.retval;
	*olen = o.data_size_out;
	return 0;
}

/* The model's side of one UDP get of key through XDP. */
static void x_udp_get(const char *key, size_t len)
{
	kp.x.pkts[KS_PKT_SEEN]++;
	kp.x.pkts[KS_PKT_MEMCACHED]++;
	kp.x.pkts[KS_PKT_UDP]++;
	if (kp.x.pkts[KS_PKT_HOT_READ] != KP_DONTCARE)
		kp.x.pkts[KS_PKT_HOT_READ]++;
	kp_x_req(KS_OP_GET, len + 6, key, NULL);
}

static void udp_get_pkt(struct pkt *p, const char *key)
{
	char pay[300];
	int n = snprintf(pay, sizeof(pay), "get %s\r\n", key);

	kp_udp4(p, pay, n);
}

/* Checks that out is p steered to replica ri: addresses, MACs, port,
 * both checksums right, nothing else changed. */
static void check_steered(const struct pkt *p, const __u8 *out, __u32 olen,
			  int ri)
{
	struct pkt q = *p, want = *p;
	__u32 a;

	CHECK_EQ(olen, p->len);
	memcpy(q.b, out, p->len);
	CHECK(!memcmp(q.b, rmac[ri], 6), "dst MAC of replica %d", ri);
	CHECK(!memcmp(q.b + 6,
		      ri == 3 ? (const __u8[]){ 2, 0, 0, 0, 0, 2 } : mac0, 6),
	      "src MAC of the egress device");
	inet_pton(AF_INET, raddr[ri], &a);
	CHECK(!memcmp(q.b + p->l3 + 16, &a, 4), "dst IP %s", raddr[ri]);
	CHECK_EQ(q.b[p->l4 + 2] << 8 | q.b[p->l4 + 3], rport[ri]);
	CHECK(!memcmp(q.b + p->l3 + 12, p->b + p->l3 + 12, 4), "src IP kept");
	CHECK(!memcmp(q.b + p->l4, p->b + p->l4, 2), "src port kept");
	CHECK(!memcmp(q.b + p->l4 + 8, p->b + p->l4 + 8, p->len - p->l4 - 8),
	      "frame header and request kept");
	/* what the checksums should be for the new header */
	memcpy(want.b, q.b, p->len);
	pkt_fix_csums(&want);
	CHECK(!memcmp(q.b + p->l3 + 10, want.b + p->l3 + 10, 2),
	      "IPv4 header checksum");
	CHECK(!memcmp(q.b + p->l4 + 6, want.b + p->l4 + 6, 2), "UDP checksum");
}

static void test_steer_tx(void)
{
	__u8 out[PKT_MAX + 64], reps[1] = { 0 };
	__u32 rc, olen;
	struct pkt p;
	int idx;

	steer_begin("steer_lone_udp_get_xdp_tx_rewritten");
	idx = hot_add(HOT_KEY, 2, reps, 1);
	udp_get_pkt(&p, HOT_KEY);
	/* copy 0 is the owner: passed untouched */
	olen = sizeof(out);
	CHECK(!run_on(&p, if0, &rc, out, &olen), "run 1");
	CHECK_EQ(rc, XDP_PASS);
	CHECK(olen == p.len && !memcmp(out, p.b, p.len), "owner's: unchanged");
	x_udp_get(HOT_KEY, 8);
	olen = sizeof(out);
	CHECK(!run_on(&p, if0, &rc, out, &olen), "run 2");
	CHECK_EQ(rc, XDP_TX);
	check_steered(&p, out, olen, 0);
	x_udp_get(HOT_KEY, 8);
	kp.x.pkts[KS_PKT_STEERED]++;
	CHECK_EQ(hot_stats(idx).steered, 1);
	CHECK_EQ(hot_stats(idx).owner, 1);
	hot_end();
}

static void test_steer_round_robin(void)
{
	__u8 out[PKT_MAX + 64], reps[3] = { 0, 1, 2 };
	__u32 rc, olen, i, tx = 0, pass = 0;
	__u64 per[3];
	struct pkt p;
	int idx;

	steer_begin("steer_round_robin_over_copies");
	kp_set_sample(1000000);
	idx = hot_add(HOT_KEY, 4, reps, 1);
	udp_get_pkt(&p, HOT_KEY);
	for (i = 0; i < 400; i++) {
		olen = sizeof(out);
		if (run_on(&p, if0, &rc, out, &olen))
			break;
		tx += rc == XDP_TX;
		pass += rc == XDP_PASS;
		x_udp_get(HOT_KEY, 8);
	}
	kp.x.pkts[KS_PKT_STEERED] += 300;
	CHECK_EQ(tx, 300);
	CHECK_EQ(pass, 100);
	for (i = 0; i < 3; i++) {
		ks_hot_map_replica_steered(&hm, i, &per[i]);
		CHECK(per[i] == 100, "replica %u got %llu of 400", i,
		      (unsigned long long)per[i]);
	}
	CHECK_EQ(hot_stats(idx).steered, 300);
	hot_end();
}

/* Sends n gets of key on if0 and returns how many were steered. */
static int steer_count(const char *key, int n)
{
	__u8 out[PKT_MAX + 64];
	__u32 rc, olen;
	struct pkt p;
	int i, steered = 0;

	udp_get_pkt(&p, key);
	for (i = 0; i < n; i++) {
		olen = sizeof(out);
		if (run_on(&p, if0, &rc, out, &olen))
			return -1;
		x_udp_get(key, strlen(key));
		if (rc == XDP_PASS)
			CHECK(olen == p.len && !memcmp(out, p.b, p.len),
			      "passed packets are unchanged");
		else
			steered++;
	}
	kp.x.pkts[KS_PKT_STEERED] += steered;
	return steered;
}

static void test_steer_dirty(void)
{
	__u8 reps[1] = { 0 };
	int idx;

	steer_begin("steer_stops_on_write_until_rearmed");
	kp_set_sample(1000000);
	idx = hot_add(HOT_KEY, 2, reps, 1);
	CHECK_EQ(steer_count(HOT_KEY, 10), 5);
	kp_send_tcp4("set " HOT_KEY " 0 0 1\r\nx\r\n");
	kp_x_req(KS_OP_SET, 23, HOT_KEY, NULL);
	x_hot(KS_PKT_HOT_WRITE, 1);
	CHECK_EQ(steer_count(HOT_KEY, 10), 0);
	/* a refill that read the sequence before the write does not arm */
	ks_hot_map_arm(&hm, idx, 0, FAR_FUTURE);
	CHECK_EQ(steer_count(HOT_KEY, 10), 0);
	ks_hot_map_arm(&hm, idx, 1, FAR_FUTURE);
	CHECK_EQ(steer_count(HOT_KEY, 10), 5);
	hot_end();
}

static void test_steer_expired(void)
{
	__u8 reps[1] = { 0 };
	int idx;

	steer_begin("steer_stops_when_entry_expires");
	kp_set_sample(1000000);
	idx = hot_add(HOT_KEY, 2, reps, 1);
	/* the datapath reads the coarse clock: a tick (<= 10 ms) behind */
	ks_hot_map_arm(&hm, idx, 0, mono_ns() - 20000000ULL);
	CHECK_EQ(steer_count(HOT_KEY, 10), 0);
	ks_hot_map_extend(&hm, idx, mono_ns() + 1000000000ULL);
	CHECK_EQ(steer_count(HOT_KEY, 10), 5);
	ks_hot_map_disarm(&hm, idx);
	CHECK_EQ(steer_count(HOT_KEY, 10), 0);
	/* extend does not re-arm a disarmed slot */
	ks_hot_map_extend(&hm, idx, mono_ns() + 1000000000ULL);
	CHECK_EQ(steer_count(HOT_KEY, 10), 0);
	CHECK_EQ(hot_stats(idx).owner, 35);
	hot_end();
}

/* Only a datagram holding one get of one key moves. */
static void test_steer_only_lone_get(void)
{
	static const char *const pays[] = {
		"get " HOT_KEY " other\r\n",
		"gets " HOT_KEY "\r\n",
		"get " HOT_KEY "\r\nmn\r\n",
		"get " HOT_KEY "\r\nget " HOT_KEY "\r\n",
		"mg " HOT_KEY " v\r\n",
		"gat 0 " HOT_KEY "\r\n",
	};
	char longkey[41];
	__u8 out[PKT_MAX + 64], reps[1] = { 0 };
	__u32 rc, olen, i, j;
	struct pkt p;

	steer_begin("steer_only_lone_udp_gets");
	kp_set_sample(1000000);
	kp_x_op_dontcare(KS_OP_GET);
	kp_x_op_dontcare(KS_OP_GETS);
	kp_x_op_dontcare(KS_OP_MG);
	kp_x_op_dontcare(KS_OP_GAT);
	kp_x_op_dontcare(KS_OP_MN);
	kp_x_pkt_dontcare(KS_PKT_HOT_READ);
	hot_add(HOT_KEY, 2, reps, 1);
	for (i = 0; i < sizeof(pays) / sizeof(pays[0]); i++) {
		kp_udp4(&p, pays[i], strlen(pays[i]));
		for (j = 0; j < 2; j++) { /* both turns of the round robin */
			olen = sizeof(out);
			CHECK(!run_on(&p, if0, &rc, out, &olen), "run");
			CHECK(rc == XDP_PASS && olen == p.len &&
				      !memcmp(out, p.b, p.len),
			      "'%.*s' passed untouched",
			      (int)strlen(pays[i]) - 2, pays[i]);
			kp.x.pkts[KS_PKT_SEEN]++;
			kp.x.pkts[KS_PKT_MEMCACHED]++;
			kp.x.pkts[KS_PKT_UDP]++;
		}
	}
	/* TCP never moves */
	kp_send_tcp4("get " HOT_KEY "\r\n");
	kp_send_tcp4("get " HOT_KEY "\r\n");
	/* a key past the fast path's 32 bytes goes through the general
	 * parser and is steered all the same */
	kp_make_key(longkey, 40, 7);
	longkey[40] = 0;
	hot_add(longkey, 2, reps, 1);
	CHECK_EQ(steer_count(longkey, 4), 2);
	hot_end();
}

static void test_steer_no_route(void)
{
	__u8 reps[1] = { 4 };
	int idx;

	steer_begin("steer_without_neighbour_stays_with_owner");
	kp_set_sample(1000000);
	idx = hot_add(HOT_KEY, 2, reps, 1);
	CHECK_EQ(steer_count(HOT_KEY, 10), 0);
	kp.x.pkts[KS_PKT_STEER_NO_ROUTE] += 5;
	CHECK_EQ(hot_stats(idx).owner, 10);
	hot_end();
	steer_begin("steer_forwarding_off_stays_with_owner");
	kp_set_sample(1000000);
	reps[0] = 0;
	hot_add(HOT_KEY, 2, reps, 1);
	sh("sysctl -qw net.ipv4.conf." DEV0 ".forwarding=0");
	CHECK_EQ(steer_count(HOT_KEY, 10), 0);
	sh("sysctl -qw net.ipv4.conf." DEV0 ".forwarding=1");
	kp.x.pkts[KS_PKT_STEER_NO_ROUTE] += 5;
	CHECK_EQ(steer_count(HOT_KEY, 10), 5);
	hot_end();
}

static void test_steer_redirect(void)
{
	__u8 out[PKT_MAX + 64], reps[1] = { 3 };
	__u32 rc, olen;
	struct pkt p;

	steer_begin("steer_other_device_redirect");
	kp_set_sample(1000000);
	hot_add(HOT_KEY, 2, reps, 1);
	udp_get_pkt(&p, HOT_KEY);
	CHECK_EQ(steer_count(HOT_KEY, 1), 0); /* the owner's turn */
	olen = sizeof(out);
	CHECK(!run_on(&p, if0, &rc, out, &olen), "run");
	CHECK_EQ(rc, XDP_REDIRECT);
	check_steered(&p, out, olen, 3);
	x_udp_get(HOT_KEY, 8);
	kp.x.pkts[KS_PKT_STEERED]++;
	hot_end();
}

static void test_steer_csum_zero(void)
{
	__u8 out[PKT_MAX + 64], reps[1] = { 0 };
	__u32 rc, olen;
	struct pkt p;

	steer_begin("steer_udp_checksum_zero_stays_zero");
	kp_set_sample(1000000);
	hot_add(HOT_KEY, 2, reps, 1);
	udp_get_pkt(&p, HOT_KEY);
	p.b[p.l4 + 6] = p.b[p.l4 + 7] = 0;
	CHECK_EQ(steer_count(HOT_KEY, 1), 0);
	olen = sizeof(out);
	CHECK(!run_on(&p, if0, &rc, out, &olen), "run");
	CHECK_EQ(rc, XDP_TX);
	CHECK(out[p.l4 + 6] == 0 && out[p.l4 + 7] == 0, "checksum 0 kept");
	x_udp_get(HOT_KEY, 8);
	kp.x.pkts[KS_PKT_STEERED]++;
	hot_end();
}

/* A VLAN this host has no sub-interface for, and IPv6 to an IPv4
 * replica: counted each by its reason, never rewritten. */
static void test_steer_not_ipv4(void)
{
	__u8 out[PKT_MAX + 64], reps[1] = { 0 };
	struct pkt_opts o;
	__u32 rc, olen, j, k;
	struct pkt p;

	steer_begin("steer_unknown_vlan_and_family_mismatch_stay_with_owner");
	kp_set_sample(1000000);
	hot_add(HOT_KEY, 2, reps, 1);
	for (k = 0; k < 2; k++) {
		pkt_opts_default(&o, k == 1, IPPROTO_UDP);
		if (k == 0) {
			o.nvlan = 1;
			o.vlan[0].tpid = PKT_ETH_P_8021Q;
			o.vlan[0].tci = 7;
		}
		kp_build(&p, &o, "get " HOT_KEY "\r\n", 14);
		for (j = 0; j < 2; j++) {
			olen = sizeof(out);
			CHECK(!run_on(&p, if0, &rc, out, &olen), "run");
			CHECK(rc == XDP_PASS && olen == p.len &&
				      !memcmp(out, p.b, p.len),
			      "%s unchanged", k ? "IPv6" : "VLAN");
			x_udp_get(HOT_KEY, 8);
		}
	}
	kp.x.pkts[KS_PKT_STEER_NO_ROUTE] += 1; /* VLAN 7: no sub-interface */
	kp.x.pkts[KS_PKT_STEER_FAMILY] += 1;   /* IPv6 get, IPv4 replica */
	hot_end();
}

/* ---- IPv6 and VLANs ---- */

/* A UDP get of HOT_KEY: IPv6 or not, with ntags VLAN tags (vids 100, or
 * 802.1ad 200 + 802.1Q 300). */
static void get_pkt(struct pkt *p, int v6, int ntags)
{
	static const char pay[] = "get " HOT_KEY "\r\n";
	struct pkt_opts o;

	pkt_opts_default(&o, v6, IPPROTO_UDP);
	o.nvlan = ntags;
	if (ntags == 1) {
		o.vlan[0].tpid = PKT_ETH_P_8021Q;
		o.vlan[0].tci = 0x2000 | 100; /* priority 1 kept too */
	} else if (ntags == 2) {
		o.vlan[0].tpid = PKT_ETH_P_8021AD;
		o.vlan[0].tci = 200;
		o.vlan[1].tpid = PKT_ETH_P_8021Q;
		o.vlan[1].tci = 300;
	}
	kp_build(p, &o, pay, sizeof(pay) - 1);
}

/* The UDP checksum of q verified from scratch: the one's complement sum
 * over the pseudo-header (RFC 8200 8.1 / RFC 768) and the datagram is
 * 0xffff, and it is not 0 over IPv6. */
static int udp_csum_ok(const struct pkt *q)
{
	const __u8 *ip = q->b + q->l3, *uh = q->b + q->l4;
	__u32 ulen = (__u32)uh[4] << 8 | uh[5], sum;
	__u8 tail[4] = { 0, 0, 0, IPPROTO_UDP };

	if (q->ipv6) {
		sum = pkt_csum_add(0, ip + 8, 32); /* source, destination */
		tail[0] = 0;
		sum = pkt_csum_add(sum, (const __u8[]){ 0, 0, ulen >> 8, ulen },
				   4);
		sum = pkt_csum_add(sum, tail, 4);
		if (!uh[6] && !uh[7])
			return 0;
	} else {
		sum = pkt_csum_add(0, ip + 12, 8);
		sum = pkt_csum_add(
			sum, (const __u8[]){ 0, IPPROTO_UDP, ulen >> 8, ulen },
			4);
	}
	sum = pkt_csum_add(sum, uh, ulen);
	return pkt_csum_fold(sum) == 0xffff || pkt_csum_fold(sum) == 0;
}

/* out is p steered to replica ri (from 5 on: the IPv6 and VLAN ones),
 * leaving by smac: addresses, port, MACs, hop limit, checksums, tags. */
static void check_steered_to(const struct pkt *p, const __u8 *out, __u32 olen,
			     int ri, const __u8 *smac)
{
	struct pkt q = *p;
	__u8 a[16];
	int v6 = p->ipv6, alen = v6 ? 16 : 4, doff = v6 ? 24 : 16;
	int soff = v6 ? 8 : 12;

	CHECK_EQ(olen, p->len);
	memcpy(q.b, out, p->len);
	CHECK(!memcmp(q.b, rmac6[ri - 5], 6), "dst MAC of replica %d", ri);
	CHECK(!memcmp(q.b + 6, smac, 6), "src MAC of the egress device");
	CHECK(!memcmp(q.b + 12, p->b + 12, p->l3 - 12),
	      "VLAN tags and ethertype as they came");
	inet_pton(v6 ? AF_INET6 : AF_INET, raddr[ri], a);
	CHECK(!memcmp(q.b + p->l3 + doff, a, alen), "dst IP %s", raddr[ri]);
	CHECK(!memcmp(q.b + p->l3 + soff, p->b + p->l3 + soff, alen),
	      "src IP kept");
	CHECK_EQ(q.b[p->l4 + 2] << 8 | q.b[p->l4 + 3], rport[ri]);
	CHECK(!memcmp(q.b + p->l4, p->b + p->l4, 2), "src port kept");
	CHECK(!memcmp(q.b + p->l4 + 8, p->b + p->l4 + 8, p->len - p->l4 - 8),
	      "frame header and request kept");
	if (v6) {
		CHECK_EQ(q.b[p->l3 + 7], p->b[p->l3 + 7] - 1); /* hop limit */
		CHECK(!memcmp(q.b + p->l3, p->b + p->l3, 7),
		      "version, class, flow label, length, next header kept");
	} else {
		struct pkt want = q;

		pkt_fix_csums(&want);
		CHECK(!memcmp(q.b + p->l3 + 10, want.b + p->l3 + 10, 2),
		      "IPv4 header checksum");
	}
	CHECK(udp_csum_ok(&q), "UDP checksum %02x%02x does not verify",
	      q.b[p->l4 + 6], q.b[p->l4 + 7]);
}

/* One get through the round robin (owner, then replica ri); returns the
 * verdict of the replica's turn with the frame in out. */
static __u32 steer_once(const struct pkt *p, int ifindex, __u8 *out,
			__u32 *olen)
{
	__u32 rc;

	*olen = PKT_MAX + 64;
	CHECK(!run_on(p, ifindex, &rc, out, olen), "run (owner's turn)");
	CHECK(rc == XDP_PASS && !memcmp(out, p->b, p->len),
	      "the owner's turn: untouched");
	x_udp_get(HOT_KEY, 8);
	*olen = PKT_MAX + 64;
	CHECK(!run_on(p, ifindex, &rc, out, olen), "run (replica's turn)");
	x_udp_get(HOT_KEY, 8);
	return rc;
}

/* steer_begin, and HOT_KEY armed with two copies: the owner and ri. */
static int steer_one(const char *name, int ri)
{
	__u8 reps[1] = { (__u8)ri };

	steer_begin(name);
	kp_set_sample(1000000);
	return hot_add(HOT_KEY, 2, reps, 1);
}

static void test_steer_ipv6(void)
{
	static const __u8 kst1_mac[6] = { 2, 0, 0, 0, 0, 2 };
	__u8 out[PKT_MAX + 64];
	struct pkt p;
	__u32 olen;
	int idx;

	idx = steer_one("steer_ipv6_rewritten_with_valid_udp_checksum", 5);
	get_pkt(&p, 1, 0);
	CHECK(udp_csum_ok(&p), "the test's own packet verifies");
	CHECK_EQ(steer_once(&p, if0, out, &olen), XDP_TX);
	check_steered_to(&p, out, olen, 5, mac0);
	kp.x.pkts[KS_PKT_STEERED]++;
	CHECK_EQ(hot_stats(idx).steered, 1);
	hot_end();

	steer_one("steer_ipv6_other_device_redirect", 6);
	CHECK_EQ(steer_once(&p, if0, out, &olen), XDP_REDIRECT);
	check_steered_to(&p, out, olen, 6, kst1_mac);
	kp.x.pkts[KS_PKT_STEERED]++;
	hot_end();

	/* many source ports and keys' checksums: the incremental update is
	 * right whatever the words it folds */
	steer_one("steer_ipv6_checksum_over_many_frames", 5);
	{
		int i, bad = 0;

		for (i = 0; i < 200; i++) {
			struct pkt_opts o;
			struct pkt q;
			__u32 rc;

			pkt_opts_default(&o, 1, IPPROTO_UDP);
			o.sport = (__u16)(1024 + i * 317);
			o.saddr[15] = (__u8)i;
			o.saddr[9] = (__u8)(i * 7);
			o.mc.req_id = (__u16)(i * 4099);
			kp_build(&q, &o, "get " HOT_KEY "\r\n", 14);
			olen = sizeof(out);
			if (run_on(&q, if0, &rc, out, &olen))
				break;
			x_udp_get(HOT_KEY, 8);
			if (rc != XDP_TX)
				continue;
			kp.x.pkts[KS_PKT_STEERED]++;
			memcpy(q.b, out, q.len);
			bad += !udp_csum_ok(&q);
		}
		CHECK(!bad, "%d of 100 steered frames have a bad checksum",
		      bad);
	}
	hot_end();
}

static void test_steer_vlan(void)
{
	static const struct {
		const char *name;
		int v6, ntags, ri;
	} c[] = {
		{ "steer_vlan_8021q_ipv4_tags_kept", 0, 1, 8 },
		{ "steer_vlan_8021q_ipv6_tags_kept", 1, 1, 9 },
		{ "steer_vlan_qinq_ipv4_tags_kept", 0, 2, 10 },
		{ "steer_vlan_qinq_ipv6_tags_kept", 1, 2, 11 },
	};
	__u8 out[PKT_MAX + 64];
	struct pkt p;
	__u32 olen;
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		steer_one(c[i].name, c[i].ri);
		get_pkt(&p, c[i].v6, c[i].ntags);
		/* out where it came in, with its tags: XDP_TX */
		CHECK_EQ(steer_once(&p, if0, out, &olen), XDP_TX);
		check_steered_to(&p, out, olen, c[i].ri, vmac[c[i].ntags - 1]);
		kp.x.pkts[KS_PKT_STEERED]++;
		hot_end();
	}
}

/* Every case the rewrite leaves to the owner: untouched, each counted. */
static void test_steer_v6_vlan_owner(void)
{
	static const struct {
		const char *what;
		int v6, ntags, ri, counter;
	} c[] = {
		/* family: the frame's is not the replica's */
		{ "IPv4 get, IPv6 replica", 0, 0, 5, KS_PKT_STEER_FAMILY },
		{ "tagged IPv4 get, IPv6 replica", 0, 1, 9,
		  KS_PKT_STEER_FAMILY },
		{ "IPv6 get, IPv4 replica", 1, 0, 0, KS_PKT_STEER_FAMILY },
		/* no route: no neighbour, a VLAN the replica is not on */
		{ "IPv6, no neighbour", 1, 0, 7, KS_PKT_STEER_NO_ROUTE },
		{ "VLAN 100 get, replica on kst1", 0, 1, 3,
		  KS_PKT_STEER_NO_ROUTE },
		{ "VLAN 100 get, replica on the QinQ VLAN", 1, 1, 11,
		  KS_PKT_STEER_NO_ROUTE },
		{ "untagged get, replica on a VLAN", 0, 0, 8,
		  KS_PKT_STEER_NO_ROUTE },
	};
	__u8 out[PKT_MAX + 64], reps[1];
	struct pkt p;
	__u32 olen, rc;
	size_t i;

	steer_begin("steer_family_mismatch_and_wrong_vlan_stay_with_owner");
	kp_set_sample(1000000);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		int idx;

		reps[0] = (__u8)c[i].ri;
		idx = hot_add(HOT_KEY, 2, reps, 1);
		get_pkt(&p, c[i].v6, c[i].ntags);
		rc = steer_once(&p, if0, out, &olen);
		CHECK(rc == XDP_PASS && olen == p.len &&
			      !memcmp(out, p.b, p.len),
		      "%s: passed untouched", c[i].what);
		kp.x.pkts[c[i].counter]++;
		kp_check(c[i].what);
		ks_hot_map_release(&hm, idx);
		ks_hot_map_reclaim(&hm);
	}
	/* a tagged frame on a device with no sub-interfaces */
	reps[0] = 3;
	hot_add(HOT_KEY, 2, reps, 1);
	get_pkt(&p, 0, 1);
	rc = steer_once(&p, if1, out, &olen);
	CHECK(rc == XDP_PASS && !memcmp(out, p.b, p.len),
	      "tagged on kst1: untouched");
	kp.x.pkts[KS_PKT_STEER_NO_ROUTE]++;
	hot_end();
}

/* Header shapes the rewrite leaves alone, and frames too short or too
 * odd to be a get at all: untouched, counted. */
static void test_steer_v6_shapes(void)
{
	__u8 out[PKT_MAX + 64];
	struct pkt_opts o;
	struct pkt p;
	__u32 olen, rc, n;

	steer_one("steer_ipv6_shapes_stay_with_owner", 5);
	/* a destination-options header: parsed, a lone get, not moved */
	pkt_opts_default(&o, 1, IPPROTO_UDP);
	o.next = 1;
	o.ext[0].type = PKT_IP6_DST;
	o.ext[0].len8 = 0;
	kp_build(&p, &o, "get " HOT_KEY "\r\n", 14);
	rc = steer_once(&p, if0, out, &olen);
	CHECK(rc == XDP_PASS && !memcmp(out, p.b, p.len),
	      "extension header: untouched");
	kp.x.pkts[KS_PKT_STEER_SHAPE]++;
	/* hop limit 1 */
	get_pkt(&p, 1, 0);
	p.b[p.l3 + 7] = 1;
	rc = steer_once(&p, if0, out, &olen);
	CHECK(rc == XDP_PASS && !memcmp(out, p.b, p.len),
	      "hop limit 1: untouched");
	kp.x.pkts[KS_PKT_STEER_SHAPE]++;
	/* UDP checksum 0, invalid over IPv6 */
	get_pkt(&p, 1, 1);
	p.b[p.l4 + 6] = p.b[p.l4 + 7] = 0;
	rc = steer_once(&p, if0, out, &olen);
	CHECK(rc == XDP_PASS && !memcmp(out, p.b, p.len),
	      "IPv6 UDP checksum 0: untouched");
	kp.x.pkts[KS_PKT_STEER_SHAPE]++;
	hot_end();

	steer_one("steer_malformed_frames_pass_untouched", 9);
	/* a tagged IPv6 get cut at every byte before its request ends: each
	 * fails the parse (counted by reason), none is rewritten */
	get_pkt(&p, 1, 1);
	kp_x_err_dontcare(KS_ERR_TRUNC_ETH);
	kp_x_err_dontcare(KS_ERR_TRUNC_IP);
	kp_x_err_dontcare(KS_ERR_BAD_IP_HDR);
	kp_x_err_dontcare(KS_ERR_TRUNC_L4);
	kp_x_err_dontcare(KS_ERR_BAD_LENGTH);
	kp_x_err_dontcare(KS_ERR_UDP_FRAME);
	kp_x_err_dontcare(KS_ERR_TRUNC_REQ);
	kp_x_err_dontcare(KS_ERR_UNKNOWN_CMD);
	kp_x_err_dontcare(KS_ERR_BAD_KEY);
	kp_x_l4_dontcare();
	kp_x_op_dontcare(KS_OP_GET);
	kp_x_pkt_dontcare(KS_PKT_HOT_READ);
	for (n = 14; n < p.len; n++) { /* test runs take a whole MAC header */
		struct pkt q = p;

		pkt_cut(&q, n);
		olen = sizeof(out);
		CHECK(!run_on(&q, if0, &rc, out, &olen), "run");
		CHECK(rc == XDP_PASS && olen == q.len &&
			      !memcmp(out, q.b, q.len),
		      "cut at %u: untouched", n);
		kp.x.pkts[KS_PKT_SEEN]++;
	}
	/* three tags: not for keysteer at all */
	pkt_opts_default(&o, 1, IPPROTO_UDP);
	o.nvlan = 3;
	o.vlan[0].tpid = o.vlan[1].tpid = o.vlan[2].tpid = PKT_ETH_P_8021Q;
	o.vlan[0].tci = 100;
	kp_build(&p, &o, "get " HOT_KEY "\r\n", 14);
	for (n = 0; n < 2; n++) {
		olen = sizeof(out);
		CHECK(!run_on(&p, if0, &rc, out, &olen), "run");
		CHECK(rc == XDP_PASS && !memcmp(out, p.b, p.len),
		      "three tags: untouched");
		kp.x.pkts[KS_PKT_SEEN]++;
		kp_x_err(KS_ERR_NOT_MEMCACHED);
	}
	hot_end();
}

/* The agent's scan of real sub-interfaces (net/vlan_devs.c), where the
 * kernel can make them. */
static void test_vlan_scan(void)
{
	struct ks_vlan_dev d[8];
	int n, i, tags = 0, marks = 0;

	kt_begin("steer_vlan_scan_finds_sub_interfaces");
	if (sh("ip link add link " DEV1 " name " DEV1 ".5 type vlan id 5 "
	       "2>/dev/null && ip link add link " DEV1 " name " DEV1
	       ".6 type vlan proto 802.1ad id 6 && ip link add link " DEV1
	       ".6 name " DEV1 ".6.7 type vlan id 7")) {
		kt_skipf(
			"this kernel makes no VLAN devices (CONFIG_VLAN_8021Q)");
		kt_end();
		return;
	}
	n = ks_vlan_devs(if1, d, 8);
	for (i = 0; i < n; i++) {
		if (d[i].key.ifindex == (__u32)if1) {
			tags++;
			CHECK((d[i].key.vid[0] == 5 && !d[i].key.vid[1]) ||
				      (d[i].key.vid[0] == 6 &&
				       d[i].key.vid[1] == 7) ||
				      (d[i].key.vid[0] == 6 &&
				       !d[i].key.vid[1]),
			      "vids %u.%u", d[i].key.vid[0], d[i].key.vid[1]);
		} else {
			marks += d[i].key.ifindex == d[i].ifindex &&
				 !d[i].key.vid[0];
		}
	}
	CHECK(n == 6 && tags == 3 && marks == 3,
	      "%d entries, %d tagged, %d marks", n, tags, marks);
	sh("ip link del " DEV1 ".6.7; ip link del " DEV1 ".6; ip link del " DEV1
	   ".5");
	kt_end();
}

void t_steer_group(void)
{
	int err = steer_netns();

	if (err) {
		kt_begin("steer_setup");
		kt_failf(__FILE__, __LINE__,
			 "private netns with veth pairs: %s", strerror(-err));
		kt_end();
		return;
	}
	test_steer_tx();
	test_steer_round_robin();
	test_steer_dirty();
	test_steer_expired();
	test_steer_only_lone_get();
	test_steer_no_route();
	test_steer_redirect();
	test_steer_csum_zero();
	test_steer_not_ipv4();
	test_steer_ipv6();
	test_steer_vlan();
	test_steer_v6_vlan_owner();
	test_steer_v6_shapes();
	test_vlan_scan();
}
