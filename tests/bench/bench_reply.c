// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench_reply.c - `bench replies`: what ks_tc_egress (--owner-replies)
 * costs per reply that leaves the owner, timed by the kernel with
 * BPF_PROG_TEST_RUN like the ingress scenarios:
 *
 *   off         no hot key (or --owner-replies off): the config check only
 *   tcp_other   a TCP reply to a read no hot key waits for: parse + lookup
 *   udp_other   the same over UDP
 *   udp_paired  the reply to a hot key's UDP get: lookup, delete, the
 *               first bytes read, the slot checked and counted (each run
 *               after an untimed ks_ingress run of the get remembers it)
 *   udp_other_1 udp_other timed one run at a time, as udp_paired must be:
 *               what that method adds (the kernel's timer read per run)
 *
 * and what remembering costs ks_ingress on the hot key's get, both timed
 * one run at a time: get_on (the read remembered) against get_off.
 *
 * The medians over --runs rounds; the table's last column is the same
 * less "off", the program's own work on top of being called at all.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bench.h"
#include "keysteer.skel.h"

#define REPLY_RUNS   5
#define REPLY_REPEAT 200000
#define REPLY_PAIRS  20000

/* Reverses a bench frame (Ethernet + IPv4 + TCP/UDP): the server's reply
 * to the client that sent it. Swapping the two addresses and the two
 * ports leaves every checksum as it was. */
static void turn_round(__u8 *f)
{
	__u8 t[4];

	memcpy(t, f + 26, 4);
	memcpy(f + 26, f + 30, 4);
	memcpy(f + 30, t, 4);
	memcpy(t, f + 34, 2);
	memcpy(f + 34, f + 36, 2);
	memcpy(f + 36, t, 2);
}

/* One test run; the kernel's ns per run, or 0 on failure. */
static __u32 run(int fd, const __u8 *frame, __u32 len, __u32 repeat)
{
	__u8 out[256];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = len,
		    .data_out = out, .data_size_out = sizeof(out),
		    .repeat = repeat);

	if (bpf_prog_test_run_opts(fd, &o))
		return 0;
	return o.duration ? o.duration : 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int set_cfg(struct bench_env *e, int hot, int replies)
{
	__u32 zero = 0;

	e->cfg.hot = hot;
	e->cfg.flags = replies ? KS_CFG_REPLIES : 0;
	return bpf_map_update_elem(bpf_map__fd(e->ks->maps.ks_config), &zero,
				   &e->cfg, BPF_ANY)
		       ? -errno
		       : 0;
}

int bench_reply_main(int argc, char **argv)
{
	static const char val[] = "VALUE k 0 1\r\nx\r\nEND\r\n";
	char key[32], line[64];
	__u8 get[256], tcp[256], udp[256];
	__u32 get_len, tcp_len, udp_len, ns;
	double v[7][REPLY_RUNS], med[7];
	struct ks_hot_replies r;
	struct bench_env e;
	int egress, ingress, i, k, idx, rc = 1;
	size_t ll, klen = 16;
	__u64 kw[KS_KEY_WORDS] = {};
	static const char *const name[7] = { "off",         "tcp_other",
					     "udp_other",   "udp_paired",
					     "udp_other_1", "get_on",
					     "get_off" };

	(void)argc;
	(void)argv;
	if (bench_open(&e, -1, NULL))
		return 1;
	egress = bpf_program__fd(e.ks->progs.ks_tc_egress);
	ingress = e.xdp_fd;
	bench_set_sample(&e, BENCH_UNSAMPLED);
	/* the get's key is the hot one */
	ll = bench_get_line(line, sizeof(line), 1, klen);
	memcpy(key, line + 4, klen);
	get_len = (__u32)bench_frame_udp4(get, sizeof(get), BENCH_MC_PORT, line,
					  ll);
	udp_len = (__u32)bench_frame_udp4(udp, sizeof(udp), BENCH_MC_PORT, val,
					  sizeof(val) - 1);
	memcpy(udp + 42, get + 42, 2); /* the get's request id */
	turn_round(udp);
	tcp_len = (__u32)bench_frame_tcp4_seg(tcp, sizeof(tcp), 40001,
					      BENCH_MC_PORT, 1, 0x18, val,
					      sizeof(val) - 1);
	turn_round(tcp);
	memcpy(kw, key, klen);
	idx = ks_hot_map_alloc(&e.hot, ks_key_hash(kw, klen), (const __u8 *)key,
			       klen);
	if (!get_len || !udp_len || !tcp_len || idx < 0) {
		fprintf(stderr, "bench replies: building the frames failed\n");
		goto out;
	}
	ks_hot_map_use_replies(&e.hot, bpf_map__fd(e.ks->maps.ks_hot_replies));
	for (k = 0; k < REPLY_RUNS; k++) {
		if (set_cfg(&e, 0, 1))
			goto out;
		v[0][k] = run(egress, tcp, tcp_len, REPLY_REPEAT);
		if (set_cfg(&e, 1, 1))
			goto out;
		v[1][k] = run(egress, tcp, tcp_len, REPLY_REPEAT);
		v[2][k] = run(egress, udp, udp_len, REPLY_REPEAT);
		/* one pair at a time: the get remembers, the reply takes it */
		v[3][k] = v[5][k] = 0;
		for (i = 0; i < REPLY_PAIRS; i++) {
			ns = run(ingress, get, get_len, 1);
			if (!ns)
				goto out;
			v[5][k] += ns;
			ns = run(egress, udp, udp_len, 1);
			if (!ns)
				goto out;
			v[3][k] += ns;
		}
		v[3][k] /= REPLY_PAIRS;
		v[5][k] /= REPLY_PAIRS;
		if (set_cfg(&e, 1, 0))
			goto out;
		v[6][k] = 0;
		for (i = 0; i < REPLY_PAIRS; i++) {
			ns = run(ingress, get, get_len, 1);
			if (!ns)
				goto out;
			v[6][k] += ns;
		}
		v[6][k] /= REPLY_PAIRS;
		if (set_cfg(&e, 1, 1))
			goto out;
		v[4][k] = 0;
		for (i = 0; i < REPLY_PAIRS; i++) {
			ns = run(egress, udp, udp_len, 1);
			if (!ns)
				goto out;
			v[4][k] += ns;
		}
		v[4][k] /= REPLY_PAIRS;
	}
	/* the paired case took its path: every reply counted a hit */
	if (ks_hot_map_replies(&e.hot, idx, &r) ||
	    r.hits != (__u64)REPLY_RUNS * REPLY_PAIRS || r.misses ||
	    r.malformed) {
		fprintf(stderr,
			"bench replies: %llu hits, %llu misses, %llu malformed, want %u hits\n",
			(unsigned long long)r.hits,
			(unsigned long long)r.misses,
			(unsigned long long)r.malformed,
			REPLY_RUNS * REPLY_PAIRS);
		goto out;
	}
	printf("ks_tc_egress, ns per reply (median of %d runs; %u repeats, paired: %u pairs of 1)\n",
	       REPLY_RUNS, REPLY_REPEAT, REPLY_PAIRS);
	printf("  %-12s %8s %10s\n", "reply", "ns", "over off");
	for (i = 0; i < 7; i++) {
		med[i] = median(v[i], REPLY_RUNS);
		if (i == 5)
			printf("ks_ingress, ns per hot-key UDP get (one run at a time)\n");
		if (i < 5)
			printf("  %-12s %8.1f %10.1f\n", name[i], med[i],
			       med[i] - med[0]);
		else
			printf("  %-12s %8.1f\n", name[i], med[i]);
	}
	printf("pairing: %.1f ns a hot-key reply (udp_paired - udp_other_1), %.1f ns its get (get_on - get_off)\n",
	       med[3] - med[4], med[5] - med[6]);
	rc = 0;
out:
	bench_close(&e);
	return rc;
}
