/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kp.h - harness of the program tests. One loaded keysteer object (maps
 * never pinned), reset to its just-loaded state before every test; packets
 * run through ks_ingress with BPF_PROG_TEST_RUN; an expectation model that
 * each test fills in (ops, errors, packet counters, and for sample_n = 1 an
 * exact count-min sketch with conservative update, the candidate table, the
 * trace events and, with a ring loaded, the per-shard counters and the
 * misdirected clients), then compared with every map at kp_end().
 *
 * Usage:
 *   kp_begin("name");            default config: ports 0, sample_n 1, seq 0
 *   kp_send_tcp4("get a\r\n");   build, run, check verdict and bytes
 *   kp_x_req(KS_OP_GET, 7, "a", NULL);
 *   kp_end();                    compare everything, print PASS/FAIL
 */
#ifndef KS_TEST_KP_H
#define KS_TEST_KP_H

#include <stddef.h>
#include <stdbool.h>
#include "keysteer.h"
#include "ks_ring.h"
#include "pkt.h"
#include "ktest.h"

#define KP_DONTCARE (-1LL)
#define KP_MAX_MKEYS 2048
#define KP_MAX_EVENTS 1024

/* A key as the model knows it. */
struct kp_mkey {
	__u8 key[KS_KEY_BUF];
	__u16 len;
	__u64 hash;
	__u32 count;      /* sketch estimate after its last sample */
	__u32 seq;        /* config seq of its last sample */
	int cls;          /* class of its first sample, -1 before */
	bool count_known; /* false once sampled in both classes */
};

struct kp_mevent {
	__u64 hash;
	__u8 saddr[16];
	__u16 sport;
	__u8 op, cls, proto;
	__u16 len;
	__u8 key[KS_KEY_BUF];
};

/* What the maps must hold at kp_end(). */
struct kp_model {
	struct ks_op_stats ops[KS_OP_MAX];
	long long err[KS_ERR_MAX];
	long long pkts[KS_PKT_MAX];     /* KP_DONTCARE: not compared */
	bool op_dontcare[KS_OP_MAX];
	bool exact;                     /* keys sampled are known (sample_n 1) */
	bool check_sketch, check_cands, check_events;
	bool cands_allow_extra;         /* extra slots are not an error */
	int nkeys;
	struct kp_mkey keys[KP_MAX_MKEYS];
	int nevents;
	struct kp_mevent events[KP_MAX_EVENTS];
	/* the packet last sent, for the trace expectations */
	__u8 saddr[16];
	__u16 sport;
	__u8 proto;
	/* the ring sampled reads and writes are placed on (kp_ring_load) */
	const struct ks_ring *ring;
	bool ring_inexact;  /* a ring met sample_n > 1: shards not compared */
	struct ks_shard_stats shards[KS_MAX_SHARDS];
	__u32 nmis;         /* misdirected keys so far (this CPU) */
	struct ks_misdirect mis[KS_MISDIRECT_SLOTS]; /* ts_ns: any nonzero */
};

struct kp_env {
	struct ks_config cfg;
	struct kp_model x;
	int ncpu;
	int cpu;          /* the CPU this process is pinned to */
	int xdp_fd, tc_fd;
	/* events read from the ring buffer in the last kp_read_events() */
	int ngot;
	struct ks_event got[KP_MAX_EVENTS];
	bool draining;
};

extern struct kp_env kp;

/* Loads the object; returns 0, or a negative errno and prints why. */
int kp_setup(void);
void kp_teardown(void);
/* True when no keysteer map or pin was created under /sys/fs/bpf. */
bool kp_nothing_pinned(void);
/* True if /sys/fs/bpf/<name> exists. */
bool kp_pin_exists(const char *name);

/* ---- test life cycle ---- */
void kp_begin(const char *name);
void kp_config(const struct ks_config *cfg); /* write and remember it */
void kp_set_ports(int n, ...);               /* ports for this test */
void kp_set_sample(__u32 n);
void kp_set_seq(__u32 seq);
void kp_set_trace(__u32 on);
/* Zero every map and the model, keep the current config (used by loops). */
void kp_reset(void);
/* Compare maps with the model; ctx prefixes any failure (may be NULL). */
void kp_check(const char *ctx);
/* kp_check(NULL) then print the test line. */
void kp_end(void);

/* ---- the ring (bpf/ks_ring.h; built with user/ring.h) ---- */
struct ks_ring;
/*
 * Writes h into half `half` of ks_ring (NULL: an empty half, nshards 0).
 * Safe from a second thread. The ring map is restored at the next reset
 * only after such a write (two 1.5 MiB halves would double every reset).
 */
int kp_ring_write(__u32 half, const struct ks_ring_half *h);
/* Makes `half` the active one (ks_config.ring, kp.cfg.ring); nothing else. */
int kp_ring_flip(__u32 half);
/*
 * Loads r into the active half and into the model: from now on every
 * sampled read or write key is placed on r with ks_ring_lookup(), and
 * ks_shards, ring_hit, misdirected and the ks_misdirect slots are expected
 * to follow. r must live until the next reset; NULL loads an empty half.
 * Every test checks ks_shards and ks_misdirect: all zero without a ring.
 */
void kp_ring_load(const struct ks_ring *r);
/* Shards 0..n-1 of ks_shards summed over CPUs; 0 or -errno. */
int kp_shards_read(struct ks_shard_stats *out, __u32 n);
/* Slot of ks_misdirect as CPU cpu holds it; 0 or -errno. */
int kp_misdirect_read(__u32 slot, int cpu, struct ks_misdirect *out);

/* ---- running packets ---- */
/* Runs a program on data; returns 0 or -errno; retval/out as the kernel
 * reports them. */
int kp_run(int prog_fd, const void *data, __u32 len, __u32 *retval,
	   void *out, __u32 *out_len);
/* Runs p through ks_ingress; checks XDP_PASS and an unchanged packet;
 * expects KS_PKT_SEEN. Returns 0 or the run's -errno. */
int kp_send(const struct pkt *p);
/* As kp_send, and expects KS_PKT_MEMCACHED and KS_PKT_TCP/UDP. */
void kp_send_mc(const struct pkt *p);
/* A memcached packet through the tc program: TC_ACT_OK, unchanged;
 * expects SEEN, MEMCACHED and TCP/UDP like kp_send_mc(). */
void kp_send_tc(const struct pkt *p);

/* Builds: IPv4/IPv6, TCP/UDP with defaults, payload as given. */
void kp_build(struct pkt *p, const struct pkt_opts *o, const void *pay,
	      size_t len);
void kp_tcp4(struct pkt *p, const void *pay, size_t len);
void kp_udp4(struct pkt *p, const void *pay, size_t len);
void kp_tcp6(struct pkt *p, const void *pay, size_t len);
void kp_udp6(struct pkt *p, const void *pay, size_t len);
/* Build an IPv4 TCP packet from a C string and kp_send_mc() it. */
void kp_send_tcp4(const char *pay);

/* ---- expectations ---- */
/* One request of op, bytes long, with the NULL-terminated list of keys. */
void kp_x_req(int op, size_t bytes, ...);
/* One more key of op (request already counted). */
void kp_x_keyn(int op, const void *key, size_t len);
void kp_x_err(int reason);
/* Packet counters that the test does not pin down. */
void kp_x_pkt_dontcare(int counter);
void kp_x_l4_dontcare(void); /* MEMCACHED, TCP, UDP */
void kp_x_op_dontcare(int op);
void kp_x_err_dontcare(int reason);
/* The sketch's point query for key in (epoch, cls): min over the rows. */
__u32 kp_cms_query(__u32 epoch, __u32 cls, const void *key, size_t len);
/* Candidate slot holding key on this CPU, copied to out; false if none. */
bool kp_cand_find(const void *key, size_t len, struct ks_cand *out);
/* Counters, summed over CPUs. */
__u64 kp_pkt(int counter);
__u64 kp_errc(int reason);
struct ks_op_stats kp_op(int op);
/* Drain the ring buffer into kp.got; returns the number read. */
int kp_read_events(void);

/* ---- misc ---- */
/* fd of the loaded object's map called name, or -1. */
int kp_map_fd(const char *name);
__u64 kp_hash(const void *key, size_t len);
const char *kp_op_name(int op);
const char *kp_err_name(int reason);
/* Fills buf with a key of len bytes, distinct for each seed. */
void kp_make_key(char *buf, size_t len, unsigned int seed);

#endif
