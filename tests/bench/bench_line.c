// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench_line.c - `bench line`: packets per second through a veth pair on
 * one core, keysteer attached (native XDP) on the receiving end against
 * the empty program attached there, alternating in the same run.
 *
 * The sender is xdp-trafficgen's own engine: BPF_PROG_TEST_RUN in live
 * frames mode (BPF_F_TEST_XDP_LIVE_FRAMES) with a tiny XDP program that
 * returns XDP_TX, so the kernel sends the frame out of the sender's veth
 * `packets` times from a page pool, with no socket or skb on the way.
 * xdp-trafficgen itself sends only payloads of zeros (its UDP and TCP
 * packets are calloc'd), which are no memcached request; here the frames
 * are the benchmark's own: an unsampled 16-byte UDP get, or TCP segments
 * of 1448 value bytes inside a set's data block. For TCP the sending
 * program writes each frame's sequence number from a map (as
 * xdp-trafficgen's TCP mode does), so the receiver sees one in-order
 * stream opened by a SYN.
 *
 * Everything runs on the pinned CPU: the test run's batches flush the
 * frames into the peer's ring and the peer's NAPI poll (the XDP program
 * under test, then the stack) runs when the batch re-enables bottom
 * halves. The frames go to an address that is not the receiver's and the
 * receiver does not forward, so the stack drops each one right after the
 * route lookup (counted as IP InReceives, which is what is read here).
 * The network namespaces and the veth pair are made and removed by
 * tests/bench/line_bench.sh.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "keysteer.skel.h"
#include "ks_empty.skel.h"
#include "dp/load_private.h"
#include "dp/slog.h"
#include "bench.h"
#include "ks_ring_cache.h"
#include "core/sample_rate.h"
#include "util/clock.h"
#include "util/opts.h"
#include "util/spread.h"

#define MSS             1448
#define LINE_ISN        0xfff00000U
#define CONT_VALUE_LEN  (1U << 30)
#define LINE_BLOCKS_MAX 100000
#define LINE_LEVEL      0.95 /* of the ratio's interval */

/* The packet kinds, each timed on the frames of a `make bench` scenario. */
enum {
	LINE_UDP_GET,
	LINE_TCP_GET,
	LINE_TCP_CONT,
	LINE_UDP_SAMPLED, /* --sample: the only kind of the run */
	LINE_KINDS
};
static const struct line_kind {
	const char *id, *name, *scen;
} line_kinds[LINE_KINDS] = {
	{ "udp_get16_unsampled", "UDP get, 16-byte key, unsampled (72 B)",
	  "udp_get16_unsampled" },
	{ "tcp_get16_unsampled", "TCP get in order, 16-byte key (76 B)",
	  "get16_unsampled" },
	{ "tcp_cont_value", "TCP segment continuing a value (1502 B)",
	  "cont_value" },
	/* the UDP get's frame, each one's key different (the sender writes
	 * 4 of its 16 bytes from a counter), keysteer sampling at --sample */
	{ "udp_get16_sampled", "UDP get, 16-byte keys all different (72 B)",
	  "udp_get16_unsampled" },
};

struct line_args {
	const char *gen_ns, *gen_if, *rx_ns, *rx_if, *rx_mac;
	__u32 packets, trials, max_trials; /* a burst; blocks at least, most */
	double width;      /* the ratio's 95% interval at most this wide */
	double seconds;    /* and at most this long (wall time), however wide */
	const char *trace; /* --trace FILE: a line per block, for study */
	const char *hold_if; /* --hold-if P: devices P0, P1, P2 in gen-ns */
	int cpu;
	bool json;
	/* --sample N|auto[:T]: the sampled kind alone, keysteer at a fixed
	 * 1 in N or at the rate auto's controller picks for the load */
	bool sampled;
	struct ks_sample_opt samp;
	/* --log-samples off: the sampled kind without the sample log (the
	 * in-kernel sketch takes every sampled key), for the build before */
	bool slog_off;
	/* --slog: the sample log on, its tails moved up by a thread of
	 * this process (slog_advance): the datapath's side alone */
	bool slog;
	/* --object OBJ: keysteer's XDP program from another build's
	 * keysteer.bpf.o (main's, or a stop of tests/bench/stage_build.sh
	 * --express), with its own maps, in place of this build's */
	const char *object;
	/* --ring N: a ketama ring of N shards loaded (the sampled kind:
	 * every sampled key placed on it), this host on none of them, so
	 * every key counts for its owner as an owned key does */
	__u32 ring;
	/* --keys N (with --sample): the sender draws each frame's key
	 * uniformly from N keys instead of making every key new */
	__u32 nkeys;
	/* --place-target T|off (with --sample; default the agent's): the
	 * ring placement's 1 in P, picked after each keysteer trial from
	 * the keys it sampled as the agent picks it (ks_place_next) */
	__u32 place_target;
};

/* ---- the sending program, as raw instructions: nothing to build ---- */

#define INSN(c, d, s, o, i)                                                    \
	((struct bpf_insn){ .code = (c),                                       \
			    .dst_reg = (d),                                    \
			    .src_reg = (s),                                    \
			    .off = (o),                                        \
			    .imm = (i) })

/* r6 = ctx; r0 = the map's entry 0 (NULL: the caller jumps to tx) */
#define GEN_LOOKUP(map_fd)                                                     \
	INSN(BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0),                         \
		INSN(BPF_ST | BPF_MEM | BPF_W, 10, 0, -4, 0),                  \
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0),                \
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -4),                \
		INSN(BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_FD, 0,       \
		     map_fd),                                                  \
		INSN(0, 0, 0, 0, 0),                                           \
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem)

static int gen_load(const struct bpf_insn *p, __u32 n, const char *name)
{
	static char log[8192];
	LIBBPF_OPTS(bpf_prog_load_opts, o, .log_buf = log,
		    .log_size = sizeof(log), .log_level = 1);
	int fd;

	fd = bpf_prog_load(BPF_PROG_TYPE_XDP, name, "GPL", p, n, &o);
	if (fd < 0)
		fprintf(stderr, "bench line: the sending program %s: %s\n%s",
			name, strerror(errno), log);
	return fd;
}

static int gen_prog(int map_fd)
{
	struct bpf_insn p[] = {
		GEN_LOOKUP(map_fd),
		INSN(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 13, 0), /* -> tx */
		INSN(BPF_LDX | BPF_MEM | BPF_DW, 1, 0, 0, 0), /* seq */
		INSN(BPF_LDX | BPF_MEM | BPF_DW, 2, 0, 8, 0), /* step */
		INSN(BPF_JMP | BPF_JEQ | BPF_K, 2, 0, 10, 0), /* UDP: -> tx */
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, 3, 1, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_X, 3, 2, 0, 0),
		INSN(BPF_STX | BPF_MEM | BPF_DW, 0, 3, 0, 0), /* seq += step */
		INSN(BPF_LDX | BPF_MEM | BPF_W, 2, 6, 0, 0),  /* data */
		INSN(BPF_LDX | BPF_MEM | BPF_W, 3, 6, 4, 0),  /* data_end */
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, 4, 2, 0, 0),
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, 4, 0, 0, 42),
		INSN(BPF_JMP | BPF_JGT | BPF_X, 4, 3, 2, 0), /* -> tx */
		INSN(BPF_ALU | BPF_END | BPF_TO_BE, 1, 0, 0, 32),
		INSN(BPF_STX | BPF_MEM | BPF_W, 2, 1, 38, 0), /* tcp seq */
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, XDP_TX), /* tx: */
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};

	return gen_load(p, sizeof(p) / sizeof(p[0]), "ks_line_gen");
}

/*
 * The sending program for the sampled kind: every frame's key differs,
 * so that keysteer samples keys it has not seen (its sketch and candidate
 * lines missed, as on a real shard's long tail). A counter in the map's
 * first word, incremented per frame, is written as 4 characters
 * '0'..'o' (6 bits each: no space or control byte, so a valid key) at
 * key_off. The UDP checksum of that frame is zero (none, in IPv4).
 */
/* key character i: ((ctr >> 6i) & 63) + '0', stored at key_off + i */
#define KEY_CHAR(i)                                                            \
	INSN(BPF_ALU64 | BPF_MOV | BPF_X, 4, 1, 0, 0),                         \
		INSN(BPF_ALU64 | BPF_RSH | BPF_K, 4, 0, 0, 6 * (i)),           \
		INSN(BPF_ALU64 | BPF_AND | BPF_K, 4, 0, 0, 63),                \
		INSN(BPF_ALU64 | BPF_ADD | BPF_K, 4, 0, 0, '0'),               \
		INSN(BPF_STX | BPF_MEM | BPF_B, 2, 4, (__s16)(key_off + (i)),  \
		     0)

static int gen_prog_keys(int map_fd, __u32 key_off, __u32 nkeys)
{
	struct bpf_insn p[64] = { GEN_LOOKUP(map_fd) };
	__u32 n = 7, tx_jump, kc0;

	tx_jump = n;
	p[n++] = INSN(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0, 0);  /* -> tx */
	p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_DW, 1, 0, 0, 0); /* ctr */
	p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, 3, 1, 0, 0);
	p[n++] = INSN(BPF_ALU64 | BPF_ADD | BPF_K, 3, 0, 0, 1);
	p[n++] = INSN(BPF_STX | BPF_MEM | BPF_DW, 0, 3, 0, 0); /* ctr++ */
	if (nkeys) {
		/* --keys N: the key number a uniform draw from 0..N-1, not
		 * the counter (a cycle through N keys would meet the
		 * sampler's fixed countdown: at 1 in 8 it would sample
		 * only N/8 of them) */
		p[n++] = INSN(BPF_JMP | BPF_CALL, 0, 0, 0,
			      BPF_FUNC_get_prandom_u32);
		p[n++] = INSN(BPF_ALU | BPF_MOD | BPF_K, 0, 0, 0, (__s32)nkeys);
		p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, 1, 0, 0, 0);
	}
	p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_W, 2, 6, 0, 0); /* data */
	p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_W, 3, 6, 4, 0); /* data_end */
	p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, 4, 2, 0, 0);
	p[n++] = INSN(BPF_ALU64 | BPF_ADD | BPF_K, 4, 0, 0, (__s32)key_off + 4);
	kc0 = n;
	p[n++] = INSN(BPF_JMP | BPF_JGT | BPF_X, 4, 3, 20, 0); /* -> tx */
	{
		const struct bpf_insn kc[] = { KEY_CHAR(0), KEY_CHAR(1),
					       KEY_CHAR(2), KEY_CHAR(3) };

		memcpy(&p[n], kc, sizeof(kc));
		n += sizeof(kc) / sizeof(kc[0]);
	}
	p[tx_jump].off = (__s16)(n - tx_jump - 1);
	p[kc0].off = (__s16)(n - kc0 - 1);
	p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, XDP_TX); /* tx: */
	p[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	return gen_load(p, n, "ks_line_genk");
}

/*
 * --keys N: the share of sampled keys the ring cache can hit in the
 * long run, from the N keys' own cache slots. The draw is uniform, so a
 * sampled key finds its slot holding itself with probability 1/m, m the
 * keys sharing the slot: over all keys, slots used / N.
 */
static double keys_hit_share(const __u8 *key16, __u32 nkeys)
{
	__u8 *used = calloc(KS_RING_CACHE_SLOTS, 1);
	__u32 i, j, slots = 0;
	__u64 w[KS_KEY_WORDS] = { 0 };

	if (!used)
		return -1;
	memcpy(w, key16, 16);
	for (i = 0; i < nkeys; i++) {
		__u32 idx;

		for (j = 0; j < 4; j++)
			((__u8 *)w)[j] = (__u8)(((i >> (6 * j)) & 63) + '0');
		idx = ks_ring_cache_index(ks_key_hash(w, 16));
		slots += !used[idx];
		used[idx] = 1;
	}
	free(used);
	return (double)slots / nkeys;
}

/* ---- namespaces ---- */

static int ns_fd(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	return open(path, O_RDONLY | O_CLOEXEC);
}

static int ns_enter(int fd)
{
	return setns(fd, CLONE_NEWNET) ? -errno : 0;
}

/* Ip: InReceives of the namespace the snmp file was opened in. */
static long long in_receives(int fd)
{
	char buf[8192], *p;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	long long v[4];

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* the second "Ip:" line holds the values; InReceives is the 3rd */
	p = strstr(buf, "Ip:");
	p = p ? strstr(p + 3, "\nIp:") : NULL;
	if (!p || sscanf(p, "\nIp: %lld %lld %lld", &v[0], &v[1], &v[2]) != 3)
		return -1;
	return v[2];
}

/* ---- frames ---- */

static int parse_mac(const char *s, __u8 mac[6])
{
	unsigned int m[6];
	int i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4],
		   &m[5]) != 6)
		return -EINVAL;
	for (i = 0; i < 6; i++)
		mac[i] = (__u8)m[i];
	return 0;
}

/*
 * The benchmark's frames, readdressed: to the receiver's MAC, from
 * 198.18.1.1 to 198.19.255.9 (not the receiver's address: dropped after
 * the route lookup). Both checksums are fixed up for the new addresses.
 */
static void readdress(__u8 *f, __u32 len, const __u8 mac[6])
{
	static const __u8 src[4] = { 198, 18, 1, 1 },
			  dst[4] = { 198, 19, 255, 9 };
	__u8 *ip = f + 14, *l4 = ip + 20;
	__u32 sum = 0, i, l4len = len - 34;
	bool tcp = ip[9] == 6;

	memcpy(f, mac, 6);
	memcpy(ip + 12, src, 4);
	memcpy(ip + 16, dst, 4);
	ip[10] = ip[11] = 0;
	for (i = 0; i < 20; i += 2)
		sum += ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip[10] = (__u8)(~sum >> 8);
	ip[11] = (__u8)~sum;
	/* the L4 checksum over the pseudo-header and the segment */
	l4[tcp ? 16 : 6] = l4[tcp ? 17 : 7] = 0;
	sum = ip[9] + l4len;
	for (i = 12; i < 20; i += 2)
		sum += ip[i] << 8 | ip[i + 1];
	for (i = 0; i + 1 < l4len; i += 2)
		sum += l4[i] << 8 | l4[i + 1];
	if (l4len & 1)
		sum += l4[l4len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	l4[tcp ? 16 : 6] = (__u8)(~sum >> 8);
	l4[tcp ? 17 : 7] = (__u8)~sum;
}

struct line_env {
	int softirqd; /* /proc/<ksoftirqd of the CPU>/schedstat, or -1 */
	struct keysteer_bpf *ks;
	struct ks_empty_bpf *empty;
	struct bench_env be; /* for bench_counts() */
	int gen_fd, map_fd, gen_if, rx_if, gen_ns, rx_ns, snmp_fd;
	int link_fd; /* the receiver's XDP link: programs swapped through it */
	int link_prog; /* the program attached through it */
	__u8 mac[6];
	__u64 key_ctr; /* the sampled kind's next key number */
};

/* The program under test: this build's ks_ingress, or --object's. */
static int line_ks_fd(const struct line_env *le)
{
	return le->be.have_before ? le->be.before.prog_fd
				  : bpf_program__fd(le->ks->progs.ks_ingress);
}

/* ns the CPU's ksoftirqd has run (the first field of its schedstat). */
static long long softirqd_ns(int fd)
{
	char buf[128];
	ssize_t n;

	if (fd < 0)
		return 0;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return atoll(buf);
}

/* The schedstat of ksoftirqd/cpu, found by its name; -1 if none. */
static int softirqd_open(int cpu)
{
	char want[32], path[320], comm[32];
	struct dirent *d;
	DIR *dir = opendir("/proc");
	int fd = -1;

	snprintf(want, sizeof(want), "ksoftirqd/%d\n", cpu);
	while (dir && fd < 0 && (d = readdir(dir))) {
		int c;
		ssize_t n;

		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		c = open(path, O_RDONLY | O_CLOEXEC);
		if (c < 0)
			continue;
		n = read(c, comm, sizeof(comm) - 1);
		close(c);
		if (n <= 0)
			continue;
		comm[n] = '\0';
		if (strcmp(comm, want))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/schedstat", d->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (dir)
		closedir(dir);
	return fd;
}

static double ts_secs(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) + (b->tv_nsec - a->tv_nsec) / 1e9;
}

/*
 * Sends frame count times from the sender's veth; the seq map says what
 * the program writes into a TCP frame (step 0: nothing). *secs is the
 * wall time; *cpu_secs the CPU time the packets took on this CPU: this
 * thread's (the sender, and the receiver's NAPI poll, which runs in the
 * thread as bottom halves come back on) plus what the CPU's ksoftirqd ran
 * meanwhile (the poll, when the kernel deferred it there). Time other
 * tasks held the CPU, and time the hypervisor stole (paravirt steal
 * accounting), is in neither: on a shared machine it is the figure that
 * stays put.
 */
static int send_frames(struct line_env *le, __u8 *frame, __u32 len, __u32 count,
		       __u64 seq, __u64 step, double *secs, double *cpu_secs)
{
	struct xdp_md ctx = { .data_end = len, .ingress_ifindex = le->gen_if };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = len,
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = count,
		    .flags = BPF_F_TEST_XDP_LIVE_FRAMES);
	__u64 v[2] = { seq, step };
	struct timespec a, b, ca, cb;
	long long sa, sb;
	__u32 zero = 0;
	int err;

	if (bpf_map_update_elem(le->map_fd, &zero, v, BPF_ANY))
		return -errno;
	err = ns_enter(le->gen_ns);
	sa = softirqd_ns(le->softirqd);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
	clock_gettime(CLOCK_MONOTONIC, &a);
	if (!err && bpf_prog_test_run_opts(le->gen_fd, &o))
		err = -errno;
	clock_gettime(CLOCK_MONOTONIC, &b);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cb);
	sb = softirqd_ns(le->softirqd);
	if (secs)
		*secs = ts_secs(&a, &b);
	if (cpu_secs)
		*cpu_secs = ts_secs(&ca, &cb) + (sb - sa) / 1e9;
	return err;
}

/*
 * The program under test on the receiver. The first call makes an XDP
 * link (native mode) in the receiver's namespace; every later one swaps
 * the link's program (bpf_link_update: the driver exchanges one program
 * pointer for another; no netlink, no namespace change, and the veth
 * keeps its rings and page pool), so bursts of a few milliseconds can
 * take turns. The swap's wall time (the kernel's XDP dispatcher waits
 * out an RCU grace period: 5-15 ms on the loaded 2-core VM) is outside
 * the timed part; a burst that keeps the program swaps nothing.
 */
static int attach(struct line_env *le, int prog_fd)
{
	LIBBPF_OPTS(bpf_link_create_opts, o, .flags = XDP_FLAGS_DRV_MODE);
	int err;

	if (le->link_fd >= 0 && le->link_prog == prog_fd)
		return 0;
	le->link_prog = prog_fd;
	if (le->link_fd >= 0)
		return bpf_link_update(le->link_fd, prog_fd, NULL) ? -errno : 0;
	err = ns_enter(le->rx_ns);
	if (err)
		return err;
	le->link_fd = bpf_link_create(prog_fd, le->rx_if, BPF_XDP, &o);
	return le->link_fd < 0 ? -errno : 0;
}

/* One trial (a burst): the program attached, packets frames sent; pps
 * delivered. */
struct trial {
	double pps, secs; /* packets per CPU second; wall seconds */
	double cpu_secs, wall_pps;
	long long delivered;
	__u64 parsed;       /* keysteer's count of what it parsed (keys or
		       * continuations); 0 for the empty program */
	__u64 sampled;      /* keys keysteer sampled */
	double attach_secs; /* the program's swap, wall time */
	long switches;      /* involuntary context switches while timed */
	double delay_secs;  /* time waited runnable for the CPU while timed */
	bool ok;
};

/* This thread's involuntary context switches so far: another task (or
 * ksoftirqd) took the CPU from it. */
static long line_preempted(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? 0 : ru.ru_nivcsw;
}

/* ns this thread has waited runnable for the CPU (its schedstat's
 * run_delay): the time another task held the CPU it wanted; 0 when the
 * kernel keeps no schedstats. */
static long long line_run_delay(void)
{
	char buf[128];
	long long run = 0, delay = 0;
	int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return sscanf(buf, "%lld %lld", &run, &delay) == 2 ? delay : 0;
}

static int run_trial(struct line_env *le, bool ks, struct bench_scen *s,
		     struct bench_scen *syn_fin, __u32 packets, struct trial *t,
		     bool keys)
{
	/* the counters of the build under test (--object's, or this one's) */
	const struct bench_obj *o = le->be.have_before ? &le->be.before
						       : &le->be.cur;
	struct bench_counts b, a;
	long long r0, r1;
	/* the key-writing sender counts keys in the map's first word */
	__u64 seq = keys ? le->key_ctr : LINE_ISN;
	bool tcp = s->stream;
	int err;

	struct timespec w0, w1;
	long long d0;
	long sw0;

	memset(t, 0, sizeof(*t));
	clock_gettime(CLOCK_MONOTONIC, &w0);
	err = attach(le, ks ? line_ks_fd(le)
			    : bpf_program__fd(le->empty->progs.ks_empty));
	clock_gettime(CLOCK_MONOTONIC, &w1);
	t->attach_secs = ts_secs(&w0, &w1);
	if (err)
		return err;
	if (tcp) {
		/* SYN, then (continuations) the set's line: the stream is
		 * inside its value */
		err = send_frames(le, syn_fin[0].frame, syn_fin[0].len, 1, seq,
				  1, NULL, NULL);
		seq += 1;
		if (!err && s->pro)
			err = send_frames(le, s->pro, s->pro_len, 1, seq,
					  s->pro_plen, NULL, NULL);
		seq += s->pro ? s->pro_plen : 0;
	}
	if (!err)
		err = bench_counts(&le->be, o, &b);
	r0 = in_receives(le->snmp_fd);
	sw0 = line_preempted();
	d0 = line_run_delay();
	if (!err)
		err = send_frames(le, s->frame, s->len, packets, seq,
				  tcp ? s->plen : 0, &t->secs, &t->cpu_secs);
	t->switches = line_preempted() - sw0;
	t->delay_secs = (line_run_delay() - d0) / 1e9;
	seq += tcp ? packets * s->plen : 0;
	le->key_ctr += keys ? packets : 0;
	r1 = in_receives(le->snmp_fd);
	if (!err)
		err = bench_counts(&le->be, o, &a);
	if (!err && tcp)
		err = send_frames(le, syn_fin[1].frame, syn_fin[1].len, 1, seq,
				  1, NULL, NULL);
	if (err)
		return err;
	t->delivered = r1 - r0;
	t->pps = t->cpu_secs > 0 ? t->delivered / t->cpu_secs : 0;
	t->wall_pps = t->secs > 0 ? t->delivered / t->secs : 0;
	t->parsed = s->cont ? a.flow_cont - b.flow_cont : a.keys - b.keys;
	t->sampled = a.sampled - b.sampled;
	/* keysteer parsed every packet the stack got, on the path claimed */
	t->ok = t->delivered > 0 && r0 >= 0 &&
		(!ks || (t->parsed == (__u64)t->delivered &&
			 a.resync == b.resync && a.errors == b.errors));
	return 0;
}

/*
 * Every XDP program attached to a device in driver or generic mode is
 * also in the kernel's XDP dispatcher (a direct-call trampoline), and
 * each change of the dispatcher's set waits out an RCU grace period: a
 * test run adds its sending program at the start and takes it out at the
 * end, and a swap takes one program out and puts the other in. Three
 * grace periods a burst (10-100 ms on the loaded VM, against a burst's
 * 20 ms of CPU) slept away most of a run, and other tasks filled the
 * sleeps and the caches. With each of the three programs also attached
 * (generic mode) to a device of its own on which no packet ever arrives
 * (--hold-if P: devices P0, P1, P2 in the sender's namespace, left down, made
 * by tests/bench/line_bench.sh), every program stays in the dispatcher
 * for the whole run and no test run or swap changes its set. Both
 * programs under test are called through the same three-entry dispatcher.
 */
static int line_hold(const struct line_args *a, struct line_env *le)
{
	int fds[3] = { le->gen_fd, bpf_program__fd(le->empty->progs.ks_empty),
		       line_ks_fd(le) };
	char name[IF_NAMESIZE];
	int i, ifx, err = ns_enter(le->gen_ns);

	for (i = 0; i < 3 && !err; i++) {
		snprintf(name, sizeof(name), "%s%d", a->hold_if, i);
		ifx = (int)if_nametoindex(name);
		err = ifx ? bpf_xdp_attach(ifx, fds[i], XDP_FLAGS_SKB_MODE,
					   NULL)
			  : -ENODEV;
		if (err)
			fprintf(stderr, "bench line: --hold-if: %s in %s: %s\n",
				name, a->gen_ns, strerror(-err));
	}
	return err;
}

static int line_parse(int argc, char **argv, struct line_args *a)
{
	static const struct option lo[] = {
		{ "gen-ns", required_argument, NULL, 'g' },
		{ "gen-if", required_argument, NULL, 'G' },
		{ "rx-ns", required_argument, NULL, 'r' },
		{ "rx-if", required_argument, NULL, 'R' },
		{ "rx-mac", required_argument, NULL, 'm' },
		{ "packets", required_argument, NULL, 'p' },
		{ "trials", required_argument, NULL, 't' },
		{ "max-trials", required_argument, NULL, 'T' },
		{ "width", required_argument, NULL, 'w' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 'S' },
		{ "trace", required_argument, NULL, 'x' },
		{ "hold-if", required_argument, NULL, 'H' },
		{ "json", no_argument, NULL, 'j' },
		{ "sample", required_argument, NULL, 's' },
		{ "log-samples", required_argument, NULL, 'O' },
		{ "slog", no_argument, NULL, 'L' },
		{ "object", required_argument, NULL, 'o' },
		{ "ring", required_argument, NULL, 'N' },
		{ "keys", required_argument, NULL, 'K' },
		{ "place-target", required_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	char err[KS_ERRLEN];
	unsigned long long v;
	int c;

	a->packets = 32768;
	a->trials = 20;
	a->max_trials = 20000;
	a->seconds = 300;
	a->width = 0.02;
	a->cpu = -1;
	a->place_target = KS_PLACE_TARGET_DEFAULT;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'g':
			a->gen_ns = optarg;
			break;
		case 'G':
			a->gen_if = optarg;
			break;
		case 'r':
			a->rx_ns = optarg;
			break;
		case 'R':
			a->rx_if = optarg;
			break;
		case 'm':
			a->rx_mac = optarg;
			break;
		case 'j':
			a->json = true;
			break;
		case 'L':
			a->slog = true;
			break;
		case 'o':
			a->object = optarg;
			break;
		case 'N':
			if (ks_parse_uint("--ring", optarg, 1, KS_MAX_SHARDS,
					  &v, err, sizeof(err)))
				goto bad;
			a->ring = (__u32)v;
			break;
		case 'K':
			/* 4 key characters of 6 bits each: 2^24 keys */
			if (ks_parse_uint("--keys", optarg, 1, 1U << 24, &v,
					  err, sizeof(err)))
				goto bad;
			a->nkeys = (__u32)v;
			break;
		case 's':
			if (ks_sample_parse(optarg, 1000000, &a->samp, err,
					    sizeof(err)))
				goto bad;
			a->sampled = true;
			break;
		case 'P':
			if (ks_place_parse(optarg, &a->place_target, err,
					   sizeof(err)))
				goto bad;
			break;
		case 'O':
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				snprintf(err, sizeof(err),
					 "--log-samples %s: on or off", optarg);
				goto bad;
			}
			a->slog_off = !strcmp(optarg, "off");
			break;
		case 'p':
			if (ks_parse_uint("--packets", optarg, 1000, 740000, &v,
					  err, sizeof(err)))
				goto bad;
			a->packets = (__u32)v;
			break;
		case 't':
		case 'T':
			if (ks_parse_uint(c == 't' ? "--trials"
						   : "--max-trials",
					  optarg, 1, LINE_BLOCKS_MAX, &v, err,
					  sizeof(err)))
				goto bad;
			*(c == 't' ? &a->trials : &a->max_trials) = (__u32)v;
			break;
		case 'w': {
			char *e;

			a->width = strtod(optarg, &e);
			if (e == optarg || *e ||
			    !(a->width > 0 && a->width < 1)) {
				snprintf(err, sizeof(err),
					 "--width: %s is no number in (0, 1)",
					 optarg);
				goto bad;
			}
			break;
		}
		case 'x':
			a->trace = optarg;
			break;
		case 'H':
			a->hold_if = optarg;
			break;
		case 'S':
			if (ks_parse_uint("--seconds", optarg, 1, 86400, &v,
					  err, sizeof(err)))
				goto bad;
			a->seconds = (double)v;
			break;
		case 'c':
			if (ks_parse_uint("--cpu", optarg, 0, CPU_SETSIZE - 1,
					  &v, err, sizeof(err)))
				goto bad;
			a->cpu = (int)v;
			break;
		default:
			return -EINVAL;
		}
	}
	if (a->max_trials < a->trials)
		a->max_trials = a->trials;
	/* the sampled kind's log and drain are this build's maps */
	if (a->object && (a->sampled || a->slog)) {
		fprintf(stderr, "bench line: --object times the unsampled "
				"kinds only (not with --sample or --slog)\n");
		return -EINVAL;
	}
	if (a->ring && !a->sampled) {
		/* only sampled keys are placed on a ring */
		snprintf(err, sizeof(err), "--ring needs --sample");
		goto bad;
	}
	if (a->nkeys && !a->sampled) {
		/* only the sampled kind's sender writes keys */
		snprintf(err, sizeof(err), "--keys needs --sample");
		goto bad;
	}
	if (!a->gen_ns || !a->gen_if || !a->rx_ns || !a->rx_if || !a->rx_mac) {
		fprintf(stderr,
			"bench line: --gen-ns, --gen-if, --rx-ns, "
			"--rx-if and --rx-mac are needed (tests/bench/line_bench.sh "
			"passes them)\n");
		return -EINVAL;
	}
	return 0;
bad:
	fprintf(stderr, "bench line: %s\n", err);
	return -EINVAL;
}

/*
 * One kind's blocks so far. A block is four bursts of --packets frames,
 * the empty program's and keysteer's in the order E K K E or K E E K
 * (alternating by block), a few milliseconds each: whatever drifts on a
 * shared machine over the block's ~20 ms (the CPU's speed, a neighbour's
 * cache traffic) cancels in its ratio when the drift is linear, and
 * shares both sides when it is not. The figure is the median of all the
 * blocks' ratios. A block is also marked clean when the sender waited for
 * the CPU (another task held it) for at most LINE_CLEAN of its timed
 * bursts' CPU time, and the clean blocks' median is printed beside, for
 * study: on the loaded VM few blocks are clean, and trimming the others
 * did not narrow the interval in the time it leaves (docs/benchmarks.md).
 */
#define LINE_CLEAN 0.05
struct line_fig {
	double *ratio, *more_ns, *pps[2], *wall_ratio, *rate_n, *frac;
	double *off; /* the block's largest share of a burst's wall time off
		      * the CPU (the test run's own sleeps, preemption) */
	bool *clean;
	double *tmp; /* the clean blocks' ratios, for their spread */
	__u32 nclean;
	struct ks_spread sp; /* the figure: all blocks' */
	struct ks_spread wall, cl;
};

static int line_fig_alloc(struct line_fig *f, __u32 n)
{
	double **d[] = { &f->ratio,  &f->more_ns,    &f->pps[0],
			 &f->pps[1], &f->wall_ratio, &f->rate_n,
			 &f->frac,   &f->off,        &f->tmp };
	size_t i;

	for (i = 0; i < sizeof(d) / sizeof(d[0]); i++)
		if (!(*d[i] = calloc(n, sizeof(double))))
			return -ENOMEM;
	f->clean = calloc(n, sizeof(bool));
	return f->clean ? 0 : -ENOMEM;
}

static void line_fig_free(struct line_fig *f)
{
	free(f->ratio);
	free(f->more_ns);
	free(f->pps[0]);
	free(f->pps[1]);
	free(f->wall_ratio);
	free(f->rate_n);
	free(f->frac);
	free(f->off);
	free(f->tmp);
	free(f->clean);
}

/* The spreads of the first n blocks: all of them (the figure), the
 * clean ones, by wall time. */
static int line_fig_spread(struct line_fig *f, __u32 n)
{
	__u32 i;

	f->nclean = 0;
	for (i = 0; i < n; i++)
		if (f->clean[i])
			f->tmp[f->nclean++] = f->ratio[i];
	if (ks_spread_of(f->ratio, n, LINE_LEVEL, &f->sp) ||
	    ks_spread_of(f->wall_ratio, n, LINE_LEVEL, &f->wall))
		return -EINVAL;
	memset(&f->cl, 0, sizeof(f->cl));
	if (f->nclean && ks_spread_of(f->tmp, f->nclean, LINE_LEVEL, &f->cl))
		return -EINVAL;
	return 0;
}

/* The median of v[0..n) (bench_median() holds at most BENCH_RUNS_MAX;
 * a run here has thousands of blocks); 0 for none. */
static double line_median(const double *v, __u32 n)
{
	struct ks_spread s;

	return n && !ks_spread_of(v, n, LINE_LEVEL, &s) ? s.median : 0;
}

/* The smallest (max false) or largest (max true) of v[0..n). */
static double line_extreme(const double *v, __u32 n, bool max)
{
	double m = n ? v[0] : 0;
	__u32 i;

	for (i = 1; i < n; i++)
		m = (v[i] > m) == max ? v[i] : m;
	return m;
}

/* A kind's name in the table; the sampled kind's says --keys N. */
static const char *kind_name(const struct line_args *a, int k)
{
	static char buf[64];

	if (k != LINE_UDP_SAMPLED || !a->nkeys)
		return line_kinds[k].name;
	snprintf(buf, sizeof(buf), "UDP get, 16-byte keys, %u of them (72 B)",
		 a->nkeys);
	return buf;
}

/* The sampled kind's --sample as given: "8", "auto" or "auto:T". */
static const char *sample_str(const struct line_args *a, char *buf, size_t n)
{
	if (a->samp.n)
		snprintf(buf, n, "%u", a->samp.n);
	else if (a->samp.target == KS_RATE_TARGET_DEFAULT)
		snprintf(buf, n, "auto");
	else
		snprintf(buf, n, "auto:%u", a->samp.target);
	return buf;
}

static void line_print(const struct line_args *a, int cpu, struct line_fig *fig,
		       __u32 pairs, bool ok, bool known, int k0, int k1,
		       double secs)
{
	/* the sampled kind's rate in force: median, min, max; keys sampled */
	double rn = line_median(fig[k0].rate_n, pairs),
	       rlo = line_extreme(fig[k0].rate_n, pairs, false),
	       rhi = line_extreme(fig[k0].rate_n, pairs, true),
	       frac = line_median(fig[k0].frac, pairs);
	char sbuf[32];
	int k;

	sample_str(a, sbuf, sizeof(sbuf));
	if (a->json) {
		/* version 3: pairs counts blocks (each two pairs of bursts,
		 * ABBA); packets is a burst's */
		printf("{\"version\":3,\"cpu\":%d,\"packets\":%u,\"pairs\":%u,"
		       "\"min_pairs\":%u,\"max_pairs\":%u,\"width\":%.4f,"
		       "\"spread_known\":%s,\"valid\":%s,\"blocks\":%u,"
		       "\"bursts_per_block\":4,\"seconds\":%.1f,"
		       "\"max_seconds\":%.0f,",
		       cpu, a->packets, pairs, a->trials, a->max_trials,
		       a->width, known ? "true" : "false",
		       ok ? "true" : "false", pairs, secs, a->seconds);
		if (a->object) {
			printf("\"object\":");
			bench_json_str(a->object);
			printf(",");
		}
		if (a->sampled)
			printf("\"sample\":\"%s\",\"rate_n\":%.0f,"
			       "\"rate_n_min\":%.0f,\"rate_n_max\":%.0f,"
			       "\"sampled_fraction\":%.5f,\"keys\":%u,",
			       sbuf, rn, rlo, rhi, frac, a->nkeys);
		printf("\"results\":[");
		for (k = k0; k < k1; k++)
			printf("%s{\"name\":\"%s\",\"empty_pps\":%.0f,"
			       "\"keysteer_pps\":%.0f,\"ratio\":%.4f,"
			       "\"ratio_lo\":%.4f,\"ratio_hi\":%.4f,"
			       "\"ratio_level\":%.4f,\"ratio_min\":%.4f,"
			       "\"ratio_max\":%.4f,\"wall_ratio\":%.4f,"
			       "\"wall_ratio_lo\":%.4f,\"wall_ratio_hi\":%.4f,"
			       "\"ns_per_pkt_over_empty\":%.1f,"
			       "\"blocks_clean\":%u,\"clean_ratio\":%.4f,"
			       "\"clean_ratio_lo\":%.4f,"
			       "\"clean_ratio_hi\":%.4f}",
			       k > k0 ? "," : "", line_kinds[k].id,
			       line_median(fig[k].pps[0], pairs),
			       line_median(fig[k].pps[1], pairs),
			       fig[k].sp.median, fig[k].sp.lo, fig[k].sp.hi,
			       fig[k].sp.level, fig[k].sp.min, fig[k].sp.max,
			       fig[k].wall.median, fig[k].wall.lo,
			       fig[k].wall.hi,
			       line_median(fig[k].more_ns, pairs),
			       fig[k].nclean, fig[k].cl.median, fig[k].cl.lo,
			       fig[k].cl.hi);
		printf("]}\n");
		return;
	}
	printf("%-40s %9s %9s %7s %15s %15s %8s\n", "packets", "empty",
	       "keysteer", "ratio", "95% interval", "min..max", "ns/pkt");
	printf("%-40s %9s %9s %7s %15s %15s %8s\n", "", "Mpps", "Mpps",
	       "median", "of the median", "of the blocks", "more");
	for (k = k0; k < k1; k++)
		printf("%-40s %9.3f %9.3f %7.3f %7.3f..%-6.3f %7.3f..%-6.3f "
		       "%8.1f%s\n",
		       kind_name(a, k), line_median(fig[k].pps[0], pairs) / 1e6,
		       line_median(fig[k].pps[1], pairs) / 1e6,
		       fig[k].sp.median, fig[k].sp.lo, fig[k].sp.hi,
		       fig[k].sp.min, fig[k].sp.max,
		       line_median(fig[k].more_ns, pairs),
		       ok ? "" : "  INVALID");
	for (k = k0; k < k1; k++)
		printf("%-40s by wall time (not CPU time): ratio %.3f, "
		       "interval %.3f..%.3f; %u of %u blocks clean: %.3f "
		       "%.3f..%.3f\n",
		       kind_name(a, k), fig[k].wall.median, fig[k].wall.lo,
		       fig[k].wall.hi, fig[k].nclean, pairs, fig[k].cl.median,
		       fig[k].cl.lo, fig[k].cl.hi);
	if (a->sampled)
		printf("keysteer --sample %s: the rate in force 1 in %.0f "
		       "(median of the blocks; %.0f..%.0f), keys sampled %.4f "
		       "of those counted\n",
		       sbuf, rn, rlo, rhi, frac);
	printf("%u blocks (4 bursts each, ABBA) in %.0f s; %s\n", pairs, secs,
	       known ? "every ratio's 95% interval is within the width asked"
		     : "the spread asked was not reached: the intervals above "
		       "are what the blocks give");
}

/*
 * The sampled kind's sample log, drained as 'agent run' drains it: the
 * agent's own drain (dp/slog.c) in a thread on another CPU than the
 * receiving one, KS_CFG_SLOG set, so the line rate is taken with the
 * records folded (their lines moving to the drain's CPU and back).
 */
static __u64 slog_t0;

static int slog_start(struct line_env *le, struct ks_slog *sl, int rx_cpu)
{
	/* one thread, kept off the receiving CPU; at the agent's nice */
	struct ks_slog_opts so = { .threads = 1, .nice = KS_SLOG_NICE };
	cpu_set_t set;
	int err, c, n = libbpf_num_possible_cpus();

	err = ks_slog_open(sl, bpf_map__fd(le->ks->maps.ks_slog),
			   bpf_map__fd(le->ks->maps.ks_slog_pos), le->be.ncpu,
			   0, &so);
	if (!err)
		err = ks_slog_start(sl);
	if (err) {
		fprintf(stderr, "bench line: the sample log's drain: %s\n",
			strerror(-err));
		return err;
	}
	CPU_ZERO(&set);
	for (c = 0; c < n && c < CPU_SETSIZE; c++)
		if (c != rx_cpu)
			CPU_SET(c, &set);
	if (CPU_COUNT(&set) &&
	    pthread_setaffinity_np(sl->sh[0].th, sizeof(set), &set))
		fprintf(stderr,
			"bench line: the drain stays on the receiving CPU\n");
	slog_t0 = ks_mono_ns();
	le->be.cfg.flags |= KS_CFG_SLOG;
	return 0;
}

/*
 * --ring N: a ketama ring of N shards (libmemcached's, the commonest
 * client ring) in the active half, built by the agent's builder
 * (bench_ring), with this host on none of its shards (meta.self
 * KS_NO_SHARD): every sampled key is searched for and counted for its
 * owner, as a key this host owns is, and none is misdirected (a sender
 * whose keys all differ cannot send only keys one shard owns).
 */
/* the counts when the ring was loaded: the keys sampled before it (the
 * countdown's set-up) were placed on none */
static struct bench_counts ring_c0;

static int line_ring(struct line_env *le, __u32 n)
{
	static const char key[] = "0123456789abcdef";
	struct ks_ring_half *h = bench_ring(KS_DIST_KETAMA, n, key,
					    sizeof(key) - 1, false);
	int err;

	if (!h) {
		fprintf(stderr, "bench line: --ring %u: building it failed\n",
			n);
		return -1;
	}
	h->meta.self = KS_NO_SHARD;
	err = bench_counts(&le->be, &le->be.cur, &ring_c0);
	if (!err)
		err = bench_set_ring(&le->be, h);
	free(h);
	if (err)
		fprintf(stderr, "bench line: --ring %u: loading it: %s\n", n,
			strerror(-err));
	return err;
}

/*
 * The placement's 1 in P (issue 27): the smallest and largest this run
 * set, and how many times it moved. A move can leave up to the larger
 * P's keys counted on the wrong side of it, so the shards' counts sum
 * to the sampled keys within (moves + 1) times the largest P.
 */
static __u32 place_p = 1, place_lo = 1, place_hi = 1, place_moves;

/*
 * The sampled kind's rates as the agent writes them under --sample auto:
 * every CPU's ks_rate entry for epoch 0 holds n and the placement's p
 * (the receiving CPU is whichever the veth's NAPI runs on). The datapath
 * reads its entry again when ks_config's seq or sample_n moves
 * (ks_sample_rate); the agent moves seq every interval, and here seq
 * stays 0, so ks_config.sample_n, which the entry's n overrides, is only
 * the trigger: n, and n with its top bit set, in turn.
 */
static int line_set_rates(struct line_env *le, __u32 n, __u32 p)
{
	static __u32 flip;
	struct ks_rate_entry *v = calloc((size_t)le->be.ncpu, sizeof(*v));
	__u32 zero = 0;
	int c, err = 0;

	if (!v)
		return -ENOMEM;
	for (c = 0; c < le->be.ncpu; c++) {
		v[c].n = n;
		v[c].p = p;
	}
	if (bpf_map_update_elem(bpf_map__fd(le->ks->maps.ks_rate), &zero, v,
				BPF_ANY))
		err = -errno;
	free(v);
	if (err)
		return err;
	flip ^= 1U << 31;
	return bench_set_sample(&le->be, n | flip);
}

/* Every CPU's count of every shard's reads and writes. */
static int ring_counted(struct line_env *le, __u32 n, __u64 *sum)
{
	struct ks_shard_stats *v = calloc((size_t)le->be.ncpu, sizeof(*v));
	__u32 i;
	int c, err = 0;

	*sum = 0;
	if (!v)
		return -ENOMEM;
	for (i = 0; i < n && !err; i++) {
		if (bpf_map_lookup_elem(bpf_map__fd(le->ks->maps.ks_shards), &i,
					v)) {
			err = -errno;
			break;
		}
		for (c = 0; c < le->be.ncpu; c++)
			*sum += v[c].reads + v[c].writes;
	}
	free(v);
	return err;
}

/* --ring: the keys placed on it; false unless the shards counted every
 * sampled key (1 in P placed, each counted P: within the bound above),
 * no more placed than sampled, and none misdirected. */
static bool ring_print(struct line_env *le, const struct line_args *a,
		       bool json)
{
	struct bench_counts c;
	FILE *f = json ? stderr : stdout;
	__u64 hit, sampled, mis, counted, slack, off;

	if (bench_counts(&le->be, &le->be.cur, &c) ||
	    ring_counted(le, a->ring, &counted))
		return false;
	hit = c.ring_hit - ring_c0.ring_hit;
	sampled = c.sampled - ring_c0.sampled;
	mis = c.misdirected - ring_c0.misdirected;
	slack = (__u64)(place_moves + 1) * place_hi;
	off = counted > sampled ? counted - sampled : sampled - counted;
	fprintf(f,
		"ring: ketama, %u shards, this host on none: %llu keys placed "
		"(ring_hit) of %llu sampled, 1 in P with P %u..%u "
		"(--place-target %u, %u moves), the shards counted %llu "
		"(each placed key P; within %llu of the sampled keys), %llu "
		"misdirected\n",
		a->ring, (unsigned long long)hit, (unsigned long long)sampled,
		place_lo, place_hi, a->place_target, place_moves,
		(unsigned long long)counted, (unsigned long long)slack,
		(unsigned long long)mis);
	return hit <= sampled && off <= slack && !mis;
}

/* The drain stopped (a last pass) and what it did; false if a sampled
 * key was neither appended nor taken by the in-kernel sketch. */
static bool slog_print(struct line_env *le, struct ks_slog *sl, bool json)
{
	struct bench_counts c;
	struct ks_slog_stats ss;
	double secs = (ks_mono_ns() - slog_t0) / 1e9;
	FILE *f = json ? stderr : stdout;

	if (!sl->pos) {
		fprintf(f,
			"sample log: no drain (--log-samples off, or --slog's "
			"stand-in)\n");
		return true;
	}
	ks_slog_stop(sl);
	ks_slog_stats(sl, &ss);
	if (bench_counts(&le->be, &le->be.cur, &c))
		return false;
	fprintf(f,
		"sample log: %llu keys appended, %llu taken by the in-kernel "
		"sketch (log full); %llu records folded, %llu late; the "
		"drain's thread %.1f ms of CPU over %.1f s (%.2f%% of a CPU), "
		"at most %u records waiting on a CPU, its period %.1f ms at "
		"the end\n",
		(unsigned long long)c.slog, (unsigned long long)c.slog_full,
		(unsigned long long)ss.folded, (unsigned long long)ss.late,
		ss.thread_ns / 1e6, secs,
		secs > 0 ? ss.thread_ns / 1e7 / secs : 0, ss.fill_max,
		ss.period_ns / 1e6);
	return c.slog == ss.records;
}

/* --slog: keys the log took and keys a full log sent to the sketch,
 * over every CPU (ks_pkts). */
static void slog_counts(const struct line_env *le, __u64 *logged, __u64 *full)
{
	struct ks_pkt_counters *v = calloc((size_t)le->be.ncpu, sizeof(*v));
	__u32 zero = 0;
	int j;

	if (v &&
	    !bpf_map_lookup_elem(bpf_map__fd(le->ks->maps.ks_pkts), &zero, v))
		for (j = 0; j < le->be.ncpu; j++) {
			*logged += v[j].n[KS_PKT_SLOG];
			*full += v[j].n[KS_PKT_SLOG_FULL];
		}
	free(v);
}

/*
 * --slog: a stand-in for the agent's drain that folds nothing: every
 * millisecond, each CPU's tail is set to its head (the log holds 4096
 * records, about 20 ms of keys at 1 in 8 of 1.5 Mpps). It runs on
 * whatever CPU the scheduler gives it, so the head's line moves between
 * CPUs as a real drain's would make it; the records' lines are not read.
 */
static volatile int slog_stop;

static void *slog_advance(void *arg)
{
	struct bench_env *be = arg;
	struct timespec ms = { 0, 1000000 };

	while (!slog_stop) {
		bench_slog_drain(be);
		nanosleep(&ms, NULL);
	}
	return NULL;
}

int bench_line_main(int argc, char **argv)
{
	struct bench_scen *sc = NULL, kind_sc[LINE_KINDS] = {}, sf[2] = {};
	struct ks_slog slog = {};
	struct line_env le = { .softirqd = -1,
			       .gen_fd = -1,
			       .map_fd = -1,
			       .gen_ns = -1,
			       .rx_ns = -1,
			       .snmp_fd = -1,
			       .link_fd = -1 };
	struct line_args a = {};
	struct line_fig *fig = NULL;
	struct trial t;
	struct timespec t0, now, last;
	FILE *trace = NULL;
	double secs = 0;
	bool ok = true, known = false, timed_out = false, slog_running = false;
	bool told[LINE_KINDS][2] = {};
	pthread_t slog_thr;
	__u32 i, pairs = 0, key_off = 0, rate_n = 0, rn, pn;
	int n = 0, k, k0, k1, err, rc = 1, cpu;

	if (line_parse(argc, argv, &a))
		return 2;
	/* --sample: the sampled kind alone; else the three unsampled ones */
	k0 = a.sampled ? LINE_UDP_SAMPLED : 0;
	k1 = a.sampled ? LINE_KINDS : LINE_UDP_SAMPLED;
	if (parse_mac(a.rx_mac, le.mac)) {
		fprintf(stderr, "bench line: --rx-mac: not a MAC address\n");
		return 2;
	}
	if (a.packets > CONT_VALUE_LEN / MSS - 2) {
		fprintf(stderr,
			"bench line: at most %u packets a trial (one set's "
			"value)\n",
			CONT_VALUE_LEN / MSS - 2);
		return 2;
	}
	cpu = bench_pin_cpu(a.cpu);
	if (cpu < 0) {
		fprintf(stderr, "bench line: cannot pin to CPU %d\n", a.cpu);
		return 1;
	}
	le.softirqd = softirqd_open(cpu);
	if (le.softirqd < 0) {
		fprintf(stderr, "bench line: no ksoftirqd/%d in /proc\n", cpu);
		return 1;
	}
	fig = calloc(LINE_KINDS, sizeof(*fig));
	if (!fig)
		goto out;
	for (k = 0; k < LINE_KINDS; k++)
		if (line_fig_alloc(&fig[k], a.max_trials))
			goto out;
	if (a.trace && !(trace = fopen(a.trace, "w"))) {
		fprintf(stderr, "bench line: --trace %s: %s\n", a.trace,
			strerror(errno));
		goto out;
	}
	/* the benchmark's own frames: the unsampled UDP get, the TCP get
	 * (in order, one flow), the value continuation segment (with its
	 * set line) */
	n = bench_scenarios(&sc);
	for (i = 0; i < (__u32)(n > 0 ? n : 0); i++)
		for (k = 0; k < LINE_KINDS; k++)
			if (!strcmp(sc[i].id, line_kinds[k].scen))
				kind_sc[k] = sc[i];
	for (k = 0; k < LINE_KINDS; k++) {
		if (!kind_sc[k].frame ||
		    (k == LINE_TCP_CONT && !kind_sc[k].pro) ||
		    kind_sc[k].stream !=
			    (k == LINE_TCP_GET || k == LINE_TCP_CONT)) {
			fprintf(stderr,
				"bench line: building the frames failed\n");
			goto out;
		}
		readdress(kind_sc[k].frame, kind_sc[k].len, le.mac);
		if (kind_sc[k].pro)
			readdress(kind_sc[k].pro, kind_sc[k].pro_len, le.mac);
	}
	if (a.sampled) {
		/* the key's first 4 bytes change per frame: the UDP
		 * checksum goes (0 is none in IPv4), and the key is found
		 * after the get (14 + 20 + 8 + memcached's 8-byte frame
		 * header) */
		struct bench_scen *sk = &kind_sc[LINE_UDP_SAMPLED];
		const __u8 *g = memmem(sk->frame, sk->len, "get ", 4);

		key_off = g ? (__u32)(g - sk->frame) + 4 : 0;
		if (!g || key_off + 16 > sk->len) {
			fprintf(stderr, "bench line: no key in the UDP get\n");
			goto out;
		}
		sk->frame[14 + 20 + 6] = sk->frame[14 + 20 + 7] = 0;
	}
	for (k = 0; k < 2; k++) {
		sf[k].frame = calloc(1, 128);
		if (!sf[k].frame)
			goto out;
		sf[k].len = (__u32)bench_frame_tcp4_seg(
			sf[k].frame, 128, 40000, BENCH_MC_PORT, 0,
			k ? BENCH_TCP_FIN | 0x10 : BENCH_TCP_SYN, NULL, 0);
		readdress(sf[k].frame, sf[k].len, le.mac);
	}

	le.gen_ns = ns_fd(a.gen_ns);
	le.rx_ns = ns_fd(a.rx_ns);
	if (le.gen_ns < 0 || le.rx_ns < 0) {
		fprintf(stderr, "bench line: no network namespace %s or %s\n",
			a.gen_ns, a.rx_ns);
		goto out;
	}
	if (ns_enter(le.rx_ns) ||
	    (le.snmp_fd = open("/proc/self/net/snmp", O_RDONLY)) < 0 ||
	    !(le.rx_if = (int)if_nametoindex(a.rx_if)) || ns_enter(le.gen_ns) ||
	    !(le.gen_if = (int)if_nametoindex(a.gen_if))) {
		fprintf(stderr, "bench line: %s in %s or %s in %s not found\n",
			a.rx_if, a.rx_ns, a.gen_if, a.gen_ns);
		goto out;
	}

	le.ks = ks_load_private(1, &err);
	le.empty = ks_empty_bpf__open_and_load();
	le.map_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ks_line_seq", 4, 16, 1,
				   NULL);
	le.gen_fd = le.map_fd < 0 ? -1
		    : a.sampled   ? gen_prog_keys(le.map_fd, key_off, a.nkeys)
				  : gen_prog(le.map_fd);
	if (!le.ks || !le.empty || le.gen_fd < 0) {
		fprintf(stderr,
			"bench line: loading the programs failed (%s)\n",
			!le.ks      ? "keysteer"
			: !le.empty ? "empty"
				    : "sender");
		goto out;
	}
	/* before the hold devices take the program under test */
	if (a.object && (err = bench_open_other(&le.be, a.object))) {
		fprintf(stderr, "bench line: --object %s: %s\n", a.object,
			strerror(-err));
		goto out;
	}
	if (a.hold_if && line_hold(&a, &le))
		goto out;
	le.be.ks = le.ks;
	le.be.ncpu = libbpf_num_possible_cpus();
	if (le.be.ncpu <= 0 || bench_set_sample(&le.be, 1))
		goto out;
	le.be.cur.pkts_fd = bpf_map__fd(le.ks->maps.ks_pkts);
	le.be.cur.errors_fd = bpf_map__fd(le.ks->maps.ks_errors);
	le.be.cur.ops_fd = bpf_map__fd(le.ks->maps.ks_ops);
	le.be.cur.npkt = KS_PKT_MAX;
	le.be.cur.nerr = KS_ERR_MAX;
	le.be.cur.nop = KS_OP_MAX;
	{
		/* one sampled packet leaves this CPU's countdown at 0; then
		 * 2^30 keys before the next sample: unsampled throughout */
		__u32 ns;

		err = bench_run(line_ks_fd(&le), kind_sc[LINE_UDP_GET].frame,
				kind_sc[LINE_UDP_GET].len, 1, &ns);
		if (err || bench_set_sample(&le.be, BENCH_UNSAMPLED))
			goto out;
	}
	/*
	 * --sample N: 1 in N throughout. auto: the first pair at auto's
	 * start rate, then after each keysteer trial the controller the
	 * agent runs every interval (ks_rate_next) picks the next from the
	 * keys that trial counted over its CPU time: the rate auto settles
	 * on at this load (keys per CPU second). The datapath then runs exactly as at --sample N
	 * (the agent's ks_rate entry, looked up once per epoch, holds the
	 * N that ks_config.sample_n holds here).
	 */
	if (a.slog) {
		err = bench_slog_on(&le.be);
		if (!err)
			err = -pthread_create(&slog_thr, NULL, slog_advance,
					      &le.be);
		if (err) {
			fprintf(stderr, "bench line: --slog: %s\n",
				strerror(-err));
			goto out;
		}
		slog_running = true;
	}
	if (a.ring && line_ring(&le, a.ring))
		goto out;
	if (a.sampled) {
		rate_n = a.samp.n ? a.samp.n : KS_RATE_START;
		/* --slog's stand-in moves the tails: no drain beside it */
		if ((!a.slog_off && !a.slog && slog_start(&le, &slog, cpu)) ||
		    line_set_rates(&le, rate_n, place_p))
			goto out;
	}

	if (!a.json)
		printf("line rate through a veth pair, one core (CPU %d), "
		       "bursts of %u packets, empty and "
		       "keysteer in blocks of four (E K K E, K E E K), until "
		       "every ratio's %.0f%% interval is at most %.3f wide "
		       "(%u to %u blocks, at most %.0f s)\n",
		       cpu, a.packets, LINE_LEVEL * 100, a.width, a.trials,
		       a.max_trials, a.seconds);
	if (!a.json && a.object)
		printf("keysteer: ks_ingress of %s (--object), its own maps\n",
		       a.object);
	/*
	 * The kinds take turns, a block each per round; within a block the
	 * programs swap every burst (bpf_link_update), so the ratio of a
	 * block compares the two on the machine of the same 20 ms.
	 */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	last = t0;
	for (i = 0; i < a.max_trials && !known && !timed_out; i++) {
		for (k = k0; k < k1; k++) {
			double cpu_s[2] = { 0, 0 }, wall_s[2] = { 0, 0 };
			double dl[2] = { 0, 0 }, off = 0, parsed = 0, smp = 0;
			double att = 0, delay = 0;
			long sw = 0;
			int j;

			for (j = 0; j < 4; j++) {
				/* E K K E in even blocks, K E E K in odd */
				bool ks = ((j == 1 || j == 2) ^ (i & 1)) != 0;

				err = run_trial(&le, ks, &kind_sc[k], sf,
						a.packets, &t, a.sampled);
				if (err) {
					fprintf(stderr,
						"bench line: trial failed: "
						"%s\n",
						strerror(-err));
					goto out;
				}
				/* once a kind and program: a stop build
				 * (--object) misses every burst */
				if (!t.ok && !told[k][ks]) {
					told[k][ks] = true;
					fprintf(stderr,
						"bench line: %s %s: %lld "
						"delivered of %u, keysteer parsed "
						"%llu\n",
						line_kinds[k].id,
						ks ? "keysteer" : "empty",
						t.delivered, a.packets,
						(unsigned long long)t.parsed);
					ok = false;
				}
				if (t.delivered <
				    (long long)a.packets * 99 / 100)
					fprintf(stderr,
						"bench line: %s %s: only "
						"%lld of %u delivered\n",
						line_kinds[k].id,
						ks ? "keysteer" : "empty",
						t.delivered, a.packets);
				att += t.attach_secs;
				delay += t.delay_secs;
				sw += t.switches;
				cpu_s[ks] += t.cpu_secs;
				wall_s[ks] += t.secs;
				dl[ks] += (double)t.delivered;
				if (t.secs > 0 &&
				    (t.secs - t.cpu_secs) / t.secs > off)
					off = (t.secs - t.cpu_secs) / t.secs;
				if (!ks || !a.sampled)
					continue;
				fig[k].rate_n[i] = rate_n;
				parsed += (double)t.parsed;
				smp += (double)t.sampled;
				if (!t.sampled && rate_n <= t.parsed) {
					fprintf(stderr,
						"bench line: keysteer sampled "
						"no key at 1 in %u\n",
						rate_n);
					ok = false;
				}
				/* over the trial's CPU time: the load of
				 * a CPU doing nothing else (on a shared
				 * machine the wall time holds other work's
				 * time too, and auto would see less load
				 * than the line rate); the placement's P
				 * from the keys it sampled, under a fixed
				 * --sample N too, as the agent picks it */
				pn = ks_place_next(place_p, t.sampled,
						   (__u64)(t.cpu_secs * 1e9),
						   a.place_target);
				rn = a.samp.n
					     ? rate_n
					     : ks_rate_next(rate_n, t.parsed,
							    (__u64)(t.cpu_secs *
								    1e9),
							    a.samp.target);
				if (pn == place_p && rn == rate_n)
					continue;
				if (pn != place_p) {
					place_moves++;
					place_lo = pn < place_lo ? pn
								 : place_lo;
					place_hi = pn > place_hi ? pn
								 : place_hi;
				}
				place_p = pn;
				rate_n = rn;
				if (line_set_rates(&le, rate_n, place_p))
					goto out;
			}
			fig[k].frac[i] = parsed > 0 ? smp / parsed : 0;
			for (j = 0; j < 2; j++)
				fig[k].pps[j][i] = cpu_s[j] > 0
							   ? dl[j] / cpu_s[j]
							   : 0;
			fig[k].ratio[i] = fig[k].pps[0][i] > 0
						  ? fig[k].pps[1][i] /
							    fig[k].pps[0][i]
						  : 0;
			fig[k].wall_ratio[i] = wall_s[0] > 0 && wall_s[1] > 0 &&
							       dl[0] > 0
						       ? (dl[1] / wall_s[1]) /
								 (dl[0] /
								  wall_s[0])
						       : 0;
			fig[k].more_ns[i] =
				fig[k].pps[0][i] > 0 && fig[k].pps[1][i] > 0
					? 1e9 / fig[k].pps[1][i] -
						  1e9 / fig[k].pps[0][i]
					: 0;
			fig[k].off[i] = off;
			fig[k].clean[i] = delay <=
					  LINE_CLEAN * (cpu_s[0] + cpu_s[1]);
			if (trace)
				fprintf(trace,
					"%s %u %.6f %.6f %.6f %.6f %.6f %.4f "
					"%.6f %ld %.6f\n",
					line_kinds[k].id, i, fig[k].ratio[i],
					fig[k].wall_ratio[i], cpu_s[0],
					cpu_s[1], wall_s[0] + wall_s[1], off,
					att, sw, delay);
		}
		pairs = i + 1;
		known = true;
		for (k = k0; k < k1; k++) {
			if (line_fig_spread(&fig[k], pairs))
				goto out;
			known = known && ks_spread_known(&fig[k].sp, a.trials,
							 LINE_LEVEL, a.width);
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		secs = ts_secs(&t0, &now);
		timed_out = secs >= a.seconds;
		/* progress every 10 s, and the last */
		if (a.json || (ts_secs(&last, &now) < 10 && !known &&
			       !timed_out && pairs < a.max_trials))
			continue;
		last = now;
		fprintf(stderr, "bench line: %u blocks, %.0f s, ratios", pairs,
			secs);
		for (k = k0; k < k1; k++)
			fprintf(stderr, " %.3f [%.3f..%.3f]", fig[k].sp.median,
				fig[k].sp.lo, fig[k].sp.hi);
		if (a.sampled)
			fprintf(stderr, " at 1 in %u, placing 1 in %u", rate_n,
				place_p);
		fprintf(stderr, "\n");
	}
	line_print(&a, cpu, fig, pairs, ok, known, k0, k1, secs);
	if (a.sampled)
		ok = slog_print(&le, &slog, a.json) && ok;
	if (a.ring)
		ok = ring_print(&le, &a, a.json) && ok;
	if (a.nkeys)
		fprintf(a.json ? stderr : stdout,
			"keys: each frame's drawn uniformly from %u keys; the "
			"ring cache (%u slots a CPU) can hit %.3f of the sampled "
			"keys once warm\n",
			a.nkeys, KS_RING_CACHE_SLOTS,
			keys_hit_share(kind_sc[LINE_UDP_SAMPLED].frame +
					       key_off,
				       a.nkeys));
	rc = ok ? 0 : 1;
	if (a.slog) {
		__u64 logged = 0, full = 0;

		slog_counts(&le, &logged, &full);
		fprintf(stderr,
			"bench line: --slog (the datapath's side alone, the "
			"tails moved by a thread): %llu keys logged, %llu "
			"taken by the in-kernel sketch for a full log\n",
			(unsigned long long)logged, (unsigned long long)full);
	}
out:
	if (slog_running) {
		slog_stop = 1;
		pthread_join(slog_thr, NULL);
	}
	ks_slog_close(&slog);
	if (le.link_fd >= 0)
		close(le.link_fd); /* the link's end detaches its program */
	if (le.rx_ns >= 0 && !ns_enter(le.rx_ns) && le.rx_if)
		bpf_xdp_detach(le.rx_if, XDP_FLAGS_DRV_MODE, NULL);
	if (le.gen_fd >= 0)
		close(le.gen_fd);
	if (le.map_fd >= 0)
		close(le.map_fd);
	if (le.snmp_fd >= 0)
		close(le.snmp_fd);
	if (le.softirqd >= 0)
		close(le.softirqd);
	ks_empty_bpf__destroy(le.empty);
	bpf_object__close(le.be.before.obj);
	keysteer_bpf__destroy(le.ks);
	free(sf[0].frame);
	free(sf[1].frame);
	for (k = 0; fig && k < LINE_KINDS; k++)
		line_fig_free(&fig[k]);
	free(fig);
	if (trace)
		fclose(trace);
	bench_scenarios_free(sc, n > 0 ? n : 0);
	return rc;
}
