// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_ring_swap.c - ring swaps under load: the program runs in a loop on
 * one thread, one packet per BPF_PROG_TEST_RUN, while another thread
 * pushes rings A and B alternately the way the agent does (write the idle
 * half, flip ks_config.ring, wait an RCU grace period). Every packet must
 * count exactly what A or B gives for it, never a mix of the two; two
 * broken writers show that the check sees a mix when there is one.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <netinet/in.h>
#include <sys/syscall.h>
#include "groups.h"
#include "tr.h"

/*
 * Ring A: ketama over 4 shards (owners 0..3), self 0. Ring B: twemproxy
 * over 5 other hosts, relabelled as shards 4..8 of 9, no self. Every key
 * has one answer in each and they never coincide, and a lookup that mixed
 * the two (A's meta with B's points, half of each index, ...) gives counts
 * that are neither A's nor B's for that packet.
 */
#define SW_SHARDS 9
#define SW_PKTS   48
/* the grace-period run's time guard: a loaded 2-core machine may not push
 * all its swaps in it (a tenth then suffices) */
#define SW_GRACE_MAX_S 120

struct sw_pkt {
	struct pkt p;
	struct pkt rst; /* releases p's flow after each run (kp_rst_for) */
	struct ks_shard_stats want[2][SW_SHARDS]; /* under A, under B */
};

enum sw_mode {
	SW_GRACE,    /* write idle half, flip, wait a grace period */
	SW_NO_GRACE, /* write idle half, flip, rewrite the other at once */
	SW_IN_PLACE, /* rewrite the active half: the detector's control */
};

struct sw_env {
	struct tr_ring a, b;
	struct sw_pkt *pkts;
	enum sw_mode mode;
	__u32 swaps;  /* pushes to make */
	double max_s; /* and at most this long */
	int writer_cpu;
	volatile int stop; /* reader -> writer: give up */
	__u64 seen;        /* reader -> writer: packets classified so far */
	/* writer -> reader */
	volatile int done;
	__u32 pushed;
	int werr;
	double push_s; /* time the pushes took */
};

static double sw_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long sw_membarrier(void)
{
	return syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);
}

/*
 * SW_GRACE: waits until the reader has classified a packet that began
 * after the push (its second from now: the one in flight may have begun
 * before), so that it sees every ring as it goes however the load
 * schedules the two threads. False when the reader stopped or time ran
 * out.
 */
static bool sw_wait_seen(struct sw_env *e, double t0)
{
	__u64 want = __atomic_load_n(&e->seen, __ATOMIC_ACQUIRE) + 2;

	while (__atomic_load_n(&e->seen, __ATOMIC_ACQUIRE) < want) {
		if (e->stop || sw_now() - t0 >= e->max_s)
			return false;
		sched_yield();
	}
	return true;
}

static void *sw_writer(void *arg)
{
	struct sw_env *e = arg;
	double t0 = sw_now();
	__u32 active = 0, i;
	cpu_set_t set;
	bool go;

	CPU_ZERO(&set);
	CPU_SET(e->writer_cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	/* ring A, seen before the first push */
	go = e->mode != SW_GRACE || sw_wait_seen(e, t0);
	for (i = 0; go && i < e->swaps && !e->stop && sw_now() - t0 < e->max_s;
	     i++) {
		const struct ks_ring_half *next;
		__u32 idle = active ^ 1;

		if (e->mode == SW_IN_PLACE) {
			/* B, A, B, ... over A in the active half */
			next = i % 2 ? e->a.ring.half : e->b.ring.half;
			e->werr = kp_ring_write(active, next);
		} else {
			/*
			 * B, B, A, A, B, B, ...: half 1 gets pushes 0, 2, 4,
			 * half 0 (A at the start) pushes 1, 3, 5, so every
			 * write changes the half it writes (plain B, A, B
			 * would leave A in one half and B in the other, and
			 * a rewrite would change nothing), and the active
			 * ring changes every second push.
			 */
			next = (i / 2) % 2 ? e->a.ring.half : e->b.ring.half;
			e->werr = kp_ring_write(idle, next);
			if (!e->werr)
				e->werr = kp_ring_flip(idle);
			/* no packet may still read the half written next */
			if (!e->werr && e->mode == SW_GRACE && sw_membarrier())
				e->werr = -errno;
			active = idle;
		}
		if (e->werr)
			break;
		e->pushed = i + 1;
		if (e->mode == SW_GRACE && !sw_wait_seen(e, t0))
			break;
	}
	e->push_s = sw_now() - t0;
	__atomic_store_n(&e->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Builds rings A and B and the packets, with each one's counts under
 * either ring. longest: every packet the longest the datapath parses (252
 * keys in two gets: 252 MD5s, about 50 us), to widen the race window of
 * the unguarded swap; else every shape: lone short gets (fast path), long
 * keys, 150-key gets, sets.
 */
static int sw_prepare(struct sw_env *e, bool longest)
{
	static struct tr_seg g;
	struct tr_shape sa = { .dist = KS_DIST_KETAMA, .n = 4, .self = 0 };
	struct tr_shape sb = { .dist = KS_DIST_TWEMPROXY,
			       .n = 5,
			       .ports = true,
			       .self = KS_NO_SHARD };
	struct ks_ring_half *hb;
	__u32 i, x = 99;
	int k;

	if (tr_ring_build(&e->a, &sa))
		return -1;
	if (tr_ring_build(&e->b, &sb)) {
		tr_ring_free(&e->a);
		return -1;
	}
	hb = e->b.ring.half;
	for (i = 0; i < hb->meta.npoints; i++)
		hb->points[i].shard += 4;
	hb->meta.nshards = SW_SHARDS;
	e->pkts = calloc(SW_PKTS, sizeof(*e->pkts));
	if (!e->pkts)
		return -1;
	for (k = 0; k < SW_PKTS; k++) {
		struct sw_pkt *sp = &e->pkts[k];

		tr_seg_clear(&g);
		if (longest) {
			/* the parse loop's KS_MAX_ITEMS steps: a command and a
			 * line end per request, one per key */
			tr_seg_get(&g, "get", KS_OP_GET, KS_MAX_KEYS_PER_REQ, 5,
				   &x, false);
			tr_seg_get(&g, "get", KS_OP_GET,
				   KS_MAX_ITEMS - 4 - KS_MAX_KEYS_PER_REQ, 5,
				   &x, false);
			goto built;
		}
		switch (k % 4) {
		case 0: /* fast path */
			tr_seg_get(&g, "get", KS_OP_GET, 1, 16, &x, k % 8 == 0);
			break;
		case 1: /* one long key, general path */
			tr_seg_get(&g, "get", KS_OP_GET, 1, KS_MAX_KEY_LEN, &x,
				   true);
			break;
		case 2: /* many short keys: a long packet, many lookups */
			tr_seg_get(&g, "get", KS_OP_GET, 150, 8, &x, false);
			break;
		default:
			tr_seg_store(&g, "set", KS_OP_SET, tr_pick_len(&x, 64),
				     10, false);
			break;
		}
built:
		tr_pkt(&sp->p, &g, 0, IPPROTO_TCP, (__u16)(30000 + k));
		kp_rst_for(&sp->rst, &sp->p);
		tr_expect(&e->a, &g, sp->want[0], SW_SHARDS);
		tr_expect(&e->b, &g, sp->want[1], SW_SHARDS);
		if (!memcmp(sp->want[0], sp->want[1], sizeof(sp->want[0]))) {
			kt_failf(__FILE__, __LINE__,
				 "packet %d: rings A and B agree", k);
			return -1;
		}
	}
	return 0;
}

struct sw_result {
	__u64 pkts, from_a, from_b, mixed, changes, bad_runs;
	char first_mix[400]; /* reads+writes per shard: got, A's, B's */
};

static int sw_hist(char *out, size_t cap, const struct ks_shard_stats *v)
{
	int n = 0, i;

	for (i = 0; i < SW_SHARDS; i++)
		n += snprintf(out + n, cap - (size_t)n, "%s%llu", i ? "," : "",
			      (unsigned long long)(v[i].reads + v[i].writes));
	return n;
}

/* The reader: one packet per test run, the shards' change compared with
 * A's and B's counts for it, until the writer is done. */
static void sw_read(struct sw_env *e, struct sw_result *res)
{
	static __u8 out[PKT_MAX + 512];
	struct ks_shard_stats prev[SW_SHARDS], now[SW_SHARDS], d[SW_SHARDS];
	int last = -1, i;

	memset(res, 0, sizeof(*res));
	if (kp_shards_read(prev, SW_SHARDS)) {
		res->bad_runs++;
		return;
	}
	while (!__atomic_load_n(&e->done, __ATOMIC_ACQUIRE)) {
		const struct sw_pkt *sp = &e->pkts[res->pkts % SW_PKTS];
		__u32 rc = 0, olen = sizeof(out);
		int from;

		__atomic_store_n(&e->seen, res->pkts, __ATOMIC_RELEASE);
		/* the control has shown what it must: no need to go on */
		if (e->mode == SW_NO_GRACE && res->mixed)
			e->stop = 1;

		if (kp_run(kp.xdp_fd, sp->p.b, sp->p.len, &rc, out, &olen) ||
		    rc != TR_XDP_PASS || olen != sp->p.len ||
		    memcmp(out, sp->p.b, olen) ||
		    kp_shards_read(now, SW_SHARDS)) {
			res->bad_runs++;
			break;
		}
		/* the same segment again next time: a flow of its own again,
		 * not a retransmission (a datapath that follows streams) */
		olen = sizeof(out);
		if (kp_run(kp.xdp_fd, sp->rst.b, sp->rst.len, &rc, out,
			   &olen)) {
			res->bad_runs++;
			break;
		}
		res->pkts++;
		/*
		 * A moment off the CPU every 256 packets (about 1.3 ms) is
		 * a quiescent state: without it, this loop of syscalls
		 * stretches each grace period from ~8 to ~25 ms and 2000
		 * pushes take a minute. A NIC's poll loop pauses likewise.
		 */
		if (e->mode == SW_GRACE && res->pkts % 256 == 0)
			usleep(1);
		for (i = 0; i < SW_SHARDS; i++) {
			d[i].reads = now[i].reads - prev[i].reads;
			d[i].writes = now[i].writes - prev[i].writes;
			d[i].misdirected = now[i].misdirected -
					   prev[i].misdirected;
			d[i].pad = 0;
		}
		memcpy(prev, now, sizeof(prev));
		if (!memcmp(d, sp->want[0], sizeof(d))) {
			from = 0;
			res->from_a++;
		} else if (!memcmp(d, sp->want[1], sizeof(d))) {
			from = 1;
			res->from_b++;
		} else {
			if (!res->mixed++) {
				char *o = res->first_mix;
				size_t cap = sizeof(res->first_mix);
				int n = 0;

				n += snprintf(o + n, cap - n, "got ");
				n += sw_hist(o + n, cap - n, d);
				n += snprintf(o + n, cap - n, ", A ");
				n += sw_hist(o + n, cap - n, sp->want[0]);
				n += snprintf(o + n, cap - n, ", B ");
				sw_hist(o + n, cap - n, sp->want[1]);
			}
			continue;
		}
		if (last >= 0 && from != last)
			res->changes++;
		last = from;
	}
}

/* Another online CPU than the test's, or -1. */
static int sw_other_cpu(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN), c;

	for (c = 0; c < n; c++)
		if (c != kp.cpu)
			return (int)c;
	return -1;
}

static __u32 sw_swaps(void)
{
	const char *v = getenv("KP_RING_SWAPS");
	long n = v ? strtol(v, NULL, 10) : 0;

	/* 1000: each push waits for the reader to see it (~55 ms a push on
	 * a quiet machine), so 1000 keep the run near a minute */
	return n > 0 && n <= 1000000 ? (__u32)n : 1000;
}

static void sw_done(struct sw_env *e)
{
	free(e->pkts);
	e->pkts = NULL;
	tr_ring_free(&e->a);
	tr_ring_free(&e->b);
	/* the model knew none of this: back to a clean state */
	kp_reset();
}

/*
 * One swap test into e and res, A in the active half at the start; false
 * when it could not run (the test is then failed or skipped). The caller
 * judges the result, then calls sw_done().
 */
static bool sw_run(enum sw_mode mode, __u32 swaps, double max_s,
		   struct sw_result *res, struct sw_env *e)
{
	pthread_t th;

	memset(e, 0, sizeof(*e));
	e->mode = mode;
	e->swaps = swaps;
	e->max_s = max_s;
	e->writer_cpu = sw_other_cpu();
	if (e->writer_cpu < 0) {
		kt_skipf("one CPU online: a writer and a reader need two");
		return false;
	}
	if (sw_prepare(e, mode == SW_NO_GRACE) ||
	    kp_ring_write(0, e->a.ring.half) || kp_ring_flip(0)) {
		kt_failf(__FILE__, __LINE__, "preparing rings A and B failed");
		sw_done(e);
		return false;
	}
	if (pthread_create(&th, NULL, sw_writer, e)) {
		kt_failf(__FILE__, __LINE__, "pthread_create failed");
		sw_done(e);
		return false;
	}
	sw_read(e, res);
	if (res->bad_runs)
		e->stop = 1; /* the reader cannot go on */
	pthread_join(th, NULL);
	return true;
}

void t_ring_swap_group(void)
{
	struct sw_result res;
	struct sw_env *e = calloc(1, sizeof(*e));
	__u32 swaps = sw_swaps();

	if (!e)
		return;

	/* the push protocol: never a mixed packet */
	kp_begin("ring_swap_under_load_never_mixes_rings");
	if (sw_membarrier()) {
		kt_skipf("membarrier(MEMBARRIER_CMD_GLOBAL) failed: %s",
			 strerror(errno));
	} else if (sw_run(SW_GRACE, swaps, SW_GRACE_MAX_S, &res, e)) {
		printf("# ring swap with grace period: %u pushes in %.1f s, %llu packets (%llu ring A, %llu ring B, %llu switches seen), %llu mixed\n",
		       e->pushed, e->push_s, (unsigned long long)res.pkts,
		       (unsigned long long)res.from_a,
		       (unsigned long long)res.from_b,
		       (unsigned long long)res.changes,
		       (unsigned long long)res.mixed);
		CHECK_EQ(e->werr, 0);
		CHECK_EQ(res.bad_runs, 0);
		/* all of them, or a tenth when the load stretched the grace
		 * periods past the time the tier can give */
		CHECK(e->pushed == swaps || (e->push_s >= SW_GRACE_MAX_S &&
					     e->pushed >= swaps / 10),
		      "only %u of %u pushes in %.0f s", e->pushed, swaps,
		      e->push_s);
		CHECK(res.mixed == 0,
		      "%llu of %llu packets counted neither A's nor B's answer (first, reads+writes of shards 0..8: %s)",
		      (unsigned long long)res.mixed,
		      (unsigned long long)res.pkts, res.first_mix);
		/* the reader saw both rings, and the swaps as they went */
		CHECK(res.from_a > 0 && res.from_b > 0,
		      "ring A %llu, ring B %llu packets",
		      (unsigned long long)res.from_a,
		      (unsigned long long)res.from_b);
		/* the active ring changes with pushes 0, 2, 4, ...; the
		 * writer waited for the reader after each, so the reader saw
		 * every switch (maybe not the last when time ran out) */
		CHECK(res.changes == (e->pushed + 1) / 2 ||
			      (e->pushed < swaps &&
			       res.changes + 1 == (e->pushed + 1) / 2),
		      "%llu ring switches seen over %u pushes, want %u",
		      (unsigned long long)res.changes, e->pushed,
		      (e->pushed + 1) / 2);
		sw_done(e);
	}
	kp_end();

	/*
	 * The detector's control: rewriting the half packets read. If this
	 * saw no mix, a clean run above would prove nothing.
	 */
	kp_begin("ring_swap_detects_rewrite_of_active_half");
	if (sw_run(SW_IN_PLACE, 4000, 10, &res, e)) {
		printf("# ring rewritten in place: %u writes in %.1f s, %llu packets, %llu mixed; first, reads+writes of shards 0..8: %s\n",
		       e->pushed, e->push_s, (unsigned long long)res.pkts,
		       (unsigned long long)res.mixed, res.first_mix);
		CHECK_EQ(e->werr, 0);
		CHECK_EQ(res.bad_runs, 0);
		CHECK(res.mixed > 0,
		      "no mixed packet in %llu while the active half was rewritten %u times",
		      (unsigned long long)res.pkts, e->pushed);
		sw_done(e);
	}
	kp_end();

	/*
	 * The protocol without its wait: the writer rewrites a half right
	 * after flipping away from it, while a packet that read the old
	 * index may still be reading that half. The race needs a packet
	 * (here the longest, ~50 us) to outlast the syscall's copy of the
	 * 1.5 MiB value from user memory (~0.2 ms), which only an interrupt
	 * or the hypervisor taking the vCPU in the packet's middle makes (a
	 * PREEMPT_NONE kernel never preempts the program itself, so the
	 * test cannot place the pause). So it runs until the first mix, with
	 * a guard of 120 s, and a run that shows none fails: a control that
	 * showed nothing would leave the test above proving nothing.
	 */
	kp_begin("ring_swap_without_grace_period_mixes");
	if (sw_run(SW_NO_GRACE, 1000000, 120, &res, e)) {
		printf("# ring swap without grace period: %u pushes in %.1f s, %llu packets, %llu mixed%s%s\n",
		       e->pushed, e->push_s, (unsigned long long)res.pkts,
		       (unsigned long long)res.mixed,
		       res.mixed ? "; first, reads+writes of shards 0..8: "
				 : "",
		       res.first_mix);
		CHECK_EQ(e->werr, 0);
		CHECK_EQ(res.bad_runs, 0);
		CHECK(res.mixed > 0,
		      "no mixed packet in %llu packets over %u unguarded pushes in %.0f s (a packet must outlast the push's 0.2 ms copy-in)",
		      (unsigned long long)res.pkts, e->pushed, e->push_s);
		sw_done(e);
	}
	kp_end();
	free(e);
}
