/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bench.h - the benchmark's parts: a frame builder of its own (so the
 * benchmark does not move when the program tests' builder changes), the
 * loader and the timed BPF_PROG_TEST_RUN calls, and the scenario list.
 */
#ifndef KS_BENCH_H
#define KS_BENCH_H

#include <stddef.h>
#include <stdbool.h>
#include <linux/types.h>
#include "keysteer.h"
#include "ks_ring.h"
#include "dp/hot_map.h"

/* a 64 KiB GRO aggregate: IPv4's largest datagram behind Ethernet */
#define BENCH_FRAME_MAX (14 + 65535)
#define BENCH_MC_PORT   11211 /* the one port the benchmark config watches */
#define BENCH_UNSAMPLED (1U << 30) /* sample_n that never fires in a run */

/* ---- frames (bench_pkt.c) ---- */

/*
 * Ethernet + IPv4 + TCP (PSH|ACK, no options) from 198.18.0.1:40000 to
 * 198.18.0.2:dport carrying payload, checksums right. Returns the frame
 * length, or 0 if it does not fit in cap.
 */
size_t bench_frame_tcp4(__u8 *out, size_t cap, __u16 dport, const void *payload,
			size_t plen);
/* The same with the source port, sequence number and flags given
 * (BENCH_TCP_*: a SYN or FIN has no payload but may carry one). */
#define BENCH_TCP_FIN     0x01
#define BENCH_TCP_SYN     0x02
#define BENCH_TCP_PSH_ACK 0x18
size_t bench_frame_tcp4_seg(__u8 *out, size_t cap, __u16 sport, __u16 dport,
			    __u32 seq, __u8 flags, const void *payload,
			    size_t plen);
/* Rewrites the sequence number of a frame from bench_frame_tcp4*() and
 * updates its checksum (RFC 1624), so each call can send the next
 * segment of a stream from the same bytes. */
void bench_tcp_set_seq(__u8 *frame, __u32 seq);

/* The same, Ethernet + IPv4 + UDP with memcached's frame header. */
/* A UDP get frame over IPv6 and/or with ntags VLAN tags (1: 802.1Q
 * BENCH_VLAN_OUTER; 2: 802.1ad outer, 802.1Q BENCH_VLAN_INNER inside);
 * neither: bench_frame_udp4. 0 if it does not fit. */
#define BENCH_VLAN_OUTER 100
#define BENCH_VLAN_INNER 300
size_t bench_frame_udp(__u8 *out, size_t cap, __u16 dport, const void *payload,
		       size_t plen, bool v6, int ntags);
size_t bench_frame_udp4(__u8 *out, size_t cap, __u16 dport, const void *payload,
			size_t plen);

/* A printable key of len bytes, distinct for each seed. */
void bench_key(char *out, size_t len, unsigned int seed);

/* "get k1 k2 ...\r\n" with nkeys keys of keylen bytes; returns its length
 * or 0 if it does not fit. */
size_t bench_get_line(char *out, size_t cap, unsigned int nkeys, size_t keylen);

/* "set <key> 0 0 <vallen>\r\n<value>\r\n"; returns its length or 0. */
size_t bench_set_req(char *out, size_t cap, size_t keylen, size_t vallen);

/* ---- loading and running (bench_run.c) ---- */

/*
 * One keysteer object's program and the maps the benchmark reads and
 * writes: the build under test (the skeleton) or the build before TCP
 * streams (--before OBJ, opened by name), whose layouts of these maps are
 * the same but for counters added since (npkt, nerr, nop entries).
 */
struct bench_obj {
	struct bpf_object *obj; /* only for --before: closed by bench_close */
	int prog_fd, cfg_fd, pkts_fd, errors_fd, ops_fd;
	__u32 npkt, nerr, nop;
};

struct bench_env {
	struct bench_obj cur, before;
	bool have_before;
	struct keysteer_bpf *ks;
	struct ks_empty_bpf *empty;
	int xdp_fd, tc_fd, empty_fd;
	int ncpu; /* possible CPUs: size of per-CPU values */
	int cpu;  /* the CPU this process is pinned to */
	struct ks_config cfg;
	struct ks_hot_map hot; /* the hot-key slots, mmapped */
	int steer_ifindex;     /* veth of the benchmark's own netns; 0: none */
	/* bench_slog_on(): ks_slog_pos mmapped, its tails moved up to the
	 * heads by bench_slog_drain() (the agent's drain stood in for) */
	struct ks_slog_pos *slog_pos;
	struct ks_slog_pos *slog_pos_before; /* --against a build with a log */
	size_t slog_len;
	/* --against: rings and ring-cache clears written into the other
	 * build's maps too, so its ring scenarios compare (one layout) */
	bool ring_before;
};

/* What the datapath counted, summed over CPUs. */
struct bench_counts {
	__u64 sampled;  /* ks_pkts n[KS_PKT_SAMPLED] */
	__u64 ring_hit; /* ks_pkts n[KS_PKT_RING_HIT]: keys placed on the ring */
	__u64 misdirected; /* ks_pkts n[KS_PKT_MISDIRECTED] */
	__u64 not_mc;      /* ks_errors[KS_ERR_NOT_MEMCACHED] */
	__u64 errors;      /* every other ks_errors reason */
	__u64 steered;     /* ks_pkts n[KS_PKT_STEERED] */
	__u64 hot_reads, hot_writes;
	__u64 keys;     /* sum of ks_ops[*].keys, and ks_pkts' fast gets */
	__u64 requests; /* sum of ks_ops[*].requests, and the fast gets */
	/* TCP streams (0 for the build before them) */
	__u64 flow_new, flow_end, flow_cont;
	__u64 flow_dup; /* wholly or partly retransmitted segments */
	__u64 resync;   /* every KS_PKT_RESYNC_* reason */
	/* the sample log: keys appended, keys the in-kernel sketch took
	 * because the log was full (0 for a build before it) */
	__u64 slog, slog_full;
};

/* The kernel's own figures of one program (bpf_stats). */
struct bench_stats {
	__u64 run_time_ns, run_cnt;
};

struct bench_prog_info {
	const char *name;
	__u32 verified_insns; /* 0 when the kernel does not say (< 5.16) */
	__u32 xlated_len;     /* bytes of BPF code after the verifier */
	__u32 jited_len;      /* bytes of machine code */
};

/* Pins to cpu (-1: the last online one), loads both objects (and the
 * build before streams, when before is not NULL) without pinning any map.
 * Returns 0 or a negative errno after printing why. */
int bench_open(struct bench_env *e, int cpu, const char *before);
/* Another build's keysteer.bpf.o into e->before (its ks_ingress and its
 * counters; its own maps, none pinned); bench_open() does it for --before
 * and --against. 0 or -errno. */
int bench_open_other(struct bench_env *e, const char *path);
void bench_close(struct bench_env *e);

/*
 * The sample log on (KS_CFG_SLOG, kept by bench_set_sample, for the
 * --against build too: one without a log ignores the flag) with no agent
 * to drain it: ks_slog_pos mmapped (each build's), and bench_slog_drain()
 * sets every CPU's tail to its head, as a drain that folded everything
 * would. What
 * this measures is the datapath's side alone (records written, the log
 * never full); the fold's own cost is not in it. 0 or -errno.
 */
int bench_slog_on(struct bench_env *e);
void bench_slog_drain(struct bench_env *e);

/* Writes the config with this sample_n (ports: 11211 only; ring half 0),
 * into both builds. */
int bench_set_sample(struct bench_env *e, __u32 sample_n);

/* The hot table for a scenario whose first key is key[0..len). */
int bench_set_hot(struct bench_env *e, int hot, const char *key, size_t len);
/* Shard rules in the datapath's maps (bpf/ks_dedicated.h) for a scenario:
 * BD_NONE empties them. */
enum bench_ded {
	BD_NONE = 0,
	BD_OTHER,  /* an exact and a prefix rule, neither the key's, with
		    * its first byte: both lookups miss */
	BD_FIRST,  /* the same with another first byte: skipped at once */
	BD_PREFIX, /* a prefix rule of the key (its first 4 bytes) */
	BD_EXACT,  /* an exact rule of the key */
};
/* The rules' shard is shard: the ring's self, so a dedicated key stays
 * rightly directed as the scenario claims. */
int bench_set_ded(struct bench_env *e, int ded, const char *key, size_t len,
		  __u32 shard);
/* A network namespace of the benchmark's own with a veth and neighbours
 * for the steered replicas (so no packet can leave the machine's real
 * interfaces). 0 or -errno. */
int bench_steer_netns(struct bench_env *e);

/* Writes h into ks_ring half 0, the active one (NULL: an empty half); the
 * other build's too with ring_before. */
int bench_set_ring(struct bench_env *e, const struct ks_ring_half *h);
/* Empties slot idx of ks_ring_cache on every CPU. */
int bench_cache_clear(struct bench_env *e, __u32 idx);

/*
 * One BPF_PROG_TEST_RUN of repeat runs; *ns is the kernel's average time
 * per run (opts.duration). Fails with -EPROTO if the verdict is not
 * XDP_PASS (or XDP_TX when tx_ok): a benchmark of a program that drops
 * would measure nothing. ifindex: the run's ingress device (0: lo).
 */
int bench_run_on(int prog_fd, const void *frame, __u32 len, __u32 repeat,
		 int ifindex, bool tx_ok, __u32 *ns);
static inline int bench_run(int prog_fd, const void *frame, __u32 len,
			    __u32 repeat, __u32 *ns)
{
	return bench_run_on(prog_fd, frame, len, repeat, 0, false, ns);
}

int bench_counts(struct bench_env *e, const struct bench_obj *o,
		 struct bench_counts *c);
/* run_time_ns and run_cnt of a program (kernel.bpf_stats_enabled). */
int bench_prog_stats(int prog_fd, struct bench_stats *st);
/* Turns the kernel's run-time statistics on for as long as the returned
 * fd is open (BPF_ENABLE_STATS: the sysctl is left as it was, and a
 * process that dies turns them off by dying). -errno on failure. */
int bench_stats_on(void);
int bench_prog_info(int prog_fd, const char *name, struct bench_prog_info *pi);

/* ---- scenarios (bench_scen.c) ---- */

struct bench_scen {
	const char *id;    /* JSON name */
	const char *label; /* table row */
	bool sampled;      /* sample_n 1, else 1<<30 */
	bool memcached;    /* to port 11211: keys are parsed */
	__u32 keys;        /* keys per packet */
	double target_ns;  /* limit over empty; 0: none */
	/* the ring loaded for the run (NULL: an empty half, no ring) */
	struct ks_ring_half *ring;
	__u32 ring_dist; /* enum ks_dist, when ring */
	__u32 ring_shards;
	__u32 ring_key_hash;   /* enum ks_key_hash of that ring */
	bool ring_tagged;      /* ... with a hash tag */
	bool misdirected;      /* self is not the key's owner */
	int base;              /* same packet without a ring (index), or -1 */
	double ring_target_ns; /* limit over base; 0: none */
	/* the key's ring cache slot emptied before every timed packet
	 * (untimed): the lookup's cost on a key not seen before */
	bool cold;
	__u32 cache_idx; /* that slot, ks_ring_cache_index() of the key */
	int hot;         /* enum bench_hot */
	int ded;         /* enum bench_ded */
	size_t keylen;   /* of the packet's (first) key */
	__u32 reqs;      /* requests each packet completes */
	/* TCP to port 11211: each timed packet is the next segment of one
	 * flow, opened by a SYN (and the prologue segment, if any) */
	bool stream;
	__u32 plen; /* payload bytes: the step of the seq */
	__u8 *pro;  /* prologue frame, untimed (NULL: none) */
	__u32 pro_len, pro_plen;
	__u32 per_flow;      /* most timed segments one flow can take */
	bool cont;           /* every timed segment continues a request */
	bool before;         /* also timed on the build before streams */
	double ratio_target; /* limit of over empty / before's; 0: none */
	__u8 *frame;
	__u32 len;
};

/* What the hot-key table holds during a scenario. */
enum bench_hot {
	BH_NONE = 0, /* empty: ks_config.hot 0 */
	BH_OTHER,    /* another key: every key hashed and looked up */
	BH_KEY,      /* the packet's key, one copy: counted (writes dirty) */
	BH_STEER,    /* the packet's key armed with 8 copies: 7 of 8 steered */
	BH_STEER6,   /* ... to IPv6 replicas (the packet is IPv6) */
	BH_STEER_VLAN, /* ... a tagged packet, out of its own VLAN's device */
	/* rate limits (bpf/ks_limit.bpf.h), the hot table empty */
	BH_LIMIT_OTHER, /* another key limited: every UDP get looked up */
	BH_LIMIT_UNDER, /* the packet's key limited, under its limit */
	BH_LIMIT_REPLY, /* ... over it: answered SERVER_ERROR (XDP_TX) */
	BH_LIMIT_DROP,  /* ... over it: dropped (KS_CFG_LIMIT_DROP) */
	/* ... over it: replied, the frame grown at its head, as where the
	 * tail has no room (KS_CFG_LIMIT_GROW_HEAD) */
	BH_LIMIT_REPLY_HEAD,
};

static inline bool bench_hot_limits(int hot)
{
	return hot >= BH_LIMIT_OTHER && hot <= BH_LIMIT_REPLY_HEAD;
}

#define BENCH_STEER4_ID "udp_get16_unsampled_steered"

static inline bool bench_hot_steers(int hot)
{
	return hot == BH_STEER || hot == BH_STEER6 || hot == BH_STEER_VLAN;
}
#define BENCH_STEER_COPIES 8

/* Builds the scenario list; returns how many, or -1 on a builder error. */
int bench_scenarios(struct bench_scen **out);
void bench_scenarios_free(struct bench_scen *sc, int n);

/* ---- rings (bench_ring.c) ---- */

struct ks_ring_key;

/*
 * The ring of dist over nshards hosts 10.0.x.y:11211 as the agent would
 * push it, with self the owner of key (a cache host the key was sent to
 * rightly) or, misdirected, the next shard. NULL after printing why.
 */
struct ks_ring_half *bench_ring(enum ks_dist dist, __u32 nshards,
				const void *key, size_t klen, bool misdirected);
/* The same with a key hash and hash tag (ks_ring_build_keyed). */
struct ks_ring_half *bench_ring_keyed(enum ks_dist dist,
				      const struct ks_ring_key *rk,
				      __u32 nshards, const void *key,
				      size_t klen, bool misdirected);

/* ---- figures and reports (bench_report.c) ---- */

#define BENCH_RUNS_MAX        99U
#define BENCH_PACKETS_RECORD  20000U /* packets per timing of the figures */
#define BENCH_VERIFIER_TARGET 200000U
#define BENCH_VERIFIER_LIMIT  1000000U /* BPF_COMPLEXITY_LIMIT_INSNS */

/* Every timing of one scenario: runs pairs of (empty, scenario), and of
 * (empty, build before streams) where the scenario has one. */
struct bench_samples {
	double *empty, *scen, *over; /* over = scen - empty, per run */
	double *old, *old_over;      /* the build before; NULL: not timed */
	bool valid;                  /* every run counted what it should */
	__u64 *calls; /* --calls: entries of each function over the runs */
};

struct bench_machine {
	char kernel[128];
	char cpu_model[128];
	long cpus;
};

struct bench_report {
	const struct bench_machine *machine;
	int cpu;
	__u32 packets, runs;
	const char *before; /* the build before streams' object, or NULL */
	const struct bench_scen *sc;
	const struct bench_samples *res;
	int n;
	const struct bench_prog_info *pi;
	int npi;
};

void bench_read_machine(struct bench_machine *m);
/* Median of v[0..n), n <= BENCH_RUNS_MAX; v is left as it was. */
double bench_median(const double *v, __u32 n);
/* Pins the process to cpu (-1: the last online one); the CPU or -errno. */
int bench_pin_cpu(int cpu);
/* Median over runs of (scenario - its base scenario): the ring's own
 * cost, both timed in the same run. */
double bench_over_base(const struct bench_report *rep, int i);
void bench_print_table(const struct bench_report *rep);
void bench_print_json(const struct bench_report *rep);
/* s as a JSON string on stdout, quotes and escapes included */
void bench_json_str(const char *s);

/* `bench --calls NAMES` (bench_calls.c), in a build of
 * tests/bench/calls_build.sh: the entries of every function of ks_ingress;
 * bench_calls_read fills counts[bench_calls_n()]. */
#define BENCH_CALLS_MAX 128
int bench_calls_attach(struct bench_env *e, const char *names);
int bench_calls_n(void);
const char *bench_calls_name(int i);
int bench_calls_read(__u64 *counts);

/* `bench line ...`: packets/s through a veth pair (bench_line.c). */
int bench_line_main(int argc, char **argv);
/* `bench replies`: ks_tc_egress's cost per reply (bench_reply.c). */
int bench_reply_main(int argc, char **argv);

#endif
