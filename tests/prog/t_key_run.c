// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_key_run.c - key runs (ks_mc_key_run() in bpf/ks_parse_mc.bpf.h): the
 * unsampled keys of a multi-get counted a word at a time. A run must count
 * exactly the keys ks_mc_key_list() would, stop before the key due for
 * sampling, and leave every odd case (the line end, a key too long, a
 * window's end) to the key list step.
 *
 * kp's model knows every key and replays the per-CPU countdown, so at the
 * end of each test the per-op requests, keys and bytes, the sketch and the
 * candidates must be exactly the model's: a run that counted one key too
 * many or too few, or let the due key pass unsampled, fails. Runs only
 * happen at sampling rates above 1, so every case runs at several.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include "groups.h"
#include "tr.h"

static const __u32 kr_rates[] = { 2, 5, 8, 64, 1000000 };

#define KR_NRATES (sizeof(kr_rates) / sizeof(kr_rates[0]))

/* Multi-gets of 2..81 fresh keys, up to maxlen bytes, TCP and UDP. */
static void kr_multigets(__u32 rate, size_t maxlen)
{
	static struct tr_seg g;
	static char name[80];
	__u32 x = rate * 7 + (__u32)maxlen;
	__u64 keys = 0, sampled;
	int i;

	snprintf(name, sizeof(name), "key_run_multigets_keys_to_%zu_sample_%u",
		 maxlen, rate);
	kp_begin(name);
	kp_set_sample(rate);
	for (i = 0; i < 60; i++) {
		int n = 2 + (int)(tr_rand(&x) % 80);

		tr_seg_clear(&g);
		if (i % 3 == 2)
			tr_seg_get(&g, "gat 10", KS_OP_GAT, n, maxlen, &x,
				   i % 2);
		else
			tr_seg_get(&g, i % 3 ? "gets" : "get",
				   i % 3 ? KS_OP_GETS : KS_OP_GET, n, maxlen,
				   &x, i % 2);
		if (g.len > TR_SEG_MAX - 300)
			continue; /* kept inside one window */
		tr_send(&g, 0, i % 4 == 3 ? IPPROTO_UDP : IPPROTO_TCP,
			(__u16)(21000 + i));
		keys += (__u64)g.nkeys;
	}
	/* 1 in rate keys, wherever the countdown began: a run that let a
	 * due key by unsampled stretches one period, and this falls short */
	sampled = kp_pkt(KS_PKT_SAMPLED);
	CHECK(sampled >= keys / rate && sampled <= keys / rate + 1,
	      "%llu of %llu keys sampled at 1 in %u",
	      (unsigned long long)sampled, (unsigned long long)keys, rate);
	kp_end();
}

/* A key of len bytes with bytes memcached takes in a key but the fast
 * path does not: '\r', a tab, 0x01, 0x7f, 0xff. */
static void kr_odd_key(__u8 *k, size_t len, __u32 *x)
{
	static const __u8 odd[] = { '\r', '\t', 0x01, 0x7f, 0xff };
	size_t j;

	memcpy(k, tr_new_key(len, false), len);
	for (j = 0; j < len; j += 1 + tr_rand(x) % 9)
		k[j] = odd[tr_rand(x) % sizeof(odd)];
}

/* Keys one to three spaces apart, odd bytes inside, 1..250 bytes
 * (238..250: past what a run counts, left to the key list step). */
static void kr_odd_lines(__u32 rate)
{
	static struct tr_seg g;
	static char name[64];
	__u8 k[KS_KEY_BUF];
	__u32 x = 99 + rate;
	int i, j, n;

	snprintf(name, sizeof(name), "key_run_odd_bytes_and_spaces_sample_%u",
		 rate);
	kp_begin(name);
	kp_set_sample(rate);
	for (i = 0; i < 40; i++) {
		tr_seg_clear(&g);
		tr_seg_req(&g, KS_OP_GET);
		tr_seg_puts(&g, "get");
		n = 2 + (int)(tr_rand(&x) % 30);
		for (j = 0; j < n; j++) {
			size_t len = j % 5 == 4 ? 230 + tr_rand(&x) % 21
						: 1 + tr_rand(&x) % 40;

			if (g.len + len + 8 > TR_SEG_MAX - 300)
				break;
			tr_seg_puts(&g, "   " + 2 - tr_rand(&x) % 3);
			kr_odd_key(k, len, &x);
			tr_seg_key(&g, k, len, true);
		}
		tr_seg_puts(&g, "\r\n");
		tr_seg_end(&g);
		tr_send(&g, 0, IPPROTO_TCP, (__u16)(22000 + i));
	}
	kp_end();
}

/*
 * A 251-byte key after nkeys short keys: memcached serves those before it
 * and refuses the line. The long key has no space in 31 words, where a
 * run must stop rather than count it.
 */
static void kr_too_long(__u32 rate, int nkeys)
{
	static char buf[4096], name[64];
	char key[256];
	struct pkt p;
	size_t n;
	int i;

	snprintf(name, sizeof(name), "key_run_251_byte_key_after_%d_sample_%u",
		 nkeys, rate);
	kp_begin(name);
	kp_set_sample(rate);
	n = (size_t)sprintf(buf, "get");
	for (i = 0; i < nkeys; i++) {
		kp_make_key(key, 16, 7000 + (unsigned int)i);
		n += (size_t)sprintf(buf + n, " %s", key);
	}
	kp_make_key(key, 251, 7999);
	n += (size_t)sprintf(buf + n, " %s tail\r\n", key);
	kp_tcp4(&p, buf, n);
	kp_send_mc(&p);
	for (i = 0; i < nkeys; i++) {
		kp_make_key(key, 16, 7000 + (unsigned int)i);
		kp_x_keyn(KS_OP_GET, key, 16);
	}
	kp_x_err(KS_ERR_KEY_TOO_LONG);
	kp_end();
}

/*
 * "get" and keys of 1..40 bytes (seeds from seed on), one to three spaces
 * apart, until the line is about cap bytes, then "\r\n"; x picks lengths
 * and spaces. Returns its length, the keys in *nk.
 */
static size_t kr_line(char *buf, size_t cap, __u32 *x, unsigned int seed,
		      int *nk)
{
	char key[64];
	size_t n = (size_t)sprintf(buf, "get"), len;

	for (*nk = 0; n < cap - 64; (*nk)++) {
		len = 1 + tr_rand(x) % 40;
		kp_make_key(key, len, seed + (unsigned int)*nk);
		n += (size_t)sprintf(buf + n, "%s%s",
				     "   " + 2 - tr_rand(x) % 3, key);
	}
	return n + (size_t)sprintf(buf + n, "\r\n");
}

/* The model gains that line: one get of n bytes and its nk keys, x as it
 * was when the line was made. */
static void kr_x_line(size_t n, __u32 x, unsigned int seed, int nk)
{
	char key[64];
	size_t len;
	int j;

	kp_x_req(KS_OP_GET, n, NULL);
	for (j = 0; j < nk; j++) {
		len = 1 + tr_rand(&x) % 40;
		tr_rand(&x);
		kp_make_key(key, len, seed + (unsigned int)j);
		kp_x_keyn(KS_OP_GET, key, len);
	}
}

/* kp_begin() of "key_run_<what>_sample_<rate>", sampling 1 in rate. */
static void kr_begin(const char *what, __u32 rate)
{
	static char name[80];

	snprintf(name, sizeof(name), "key_run_%s_sample_%u", what, rate);
	kp_begin(name);
	kp_set_sample(rate);
}

/*
 * Where a window ends mid-list. Not cut: gets longer than the 2048-byte
 * window in one segment; the window's end stops a run as a '\n' would
 * (it falls after a key's space, on a key's last byte, inside a key or
 * on a space, as the lengths move it) and the list goes on in the next
 * window. Cut: a get sent whole, then cut between two segments of a
 * flow, so that the first segment's window ends mid-list where the
 * window before held keys and spaces: a run that read past the window's
 * end would count those stale keys.
 */
static void kr_window_end(__u32 rate, bool cut)
{
	static char buf[KP_SEG_MAX];
	size_t n, cap = cut ? 2048 : sizeof(buf);
	__u32 x = 31 + rate, x0, at;
	unsigned int seed;
	struct kp_flow fl;
	struct pkt p;
	int i, nk;

	kr_begin(cut ? "get_cut_mid_list" : "get_past_the_window", rate);
	for (i = 0; i < 32; i++) {
		x0 = x;
		seed = 9000 + (unsigned int)i * 400;
		n = kr_line(buf, cap, &x, seed, &nk);
		kp_tcp4(&p, buf, n);
		kp_send_mc(&p);
		kr_x_line(n, x0, seed, nk);
		if (!cut)
			continue;
		at = 8 + (__u32)(i * 97 + tr_rand(&x) % 97) % (__u32)(n - 16);
		kp_flow_new(&fl, 0);
		kp_flow_syn(&fl);
		kp_flow_send(&fl, 0, buf, at, PKT_TCP_PSH | PKT_TCP_ACK);
		kp_flow_send(&fl, at, buf + at, n - at,
			     PKT_TCP_PSH | PKT_TCP_ACK);
		kp_flow_fin(&fl, (__u32)n);
		kr_x_line(n, x0, seed, nk);
	}
	kp_end();
}

void t_key_run_group(void)
{
	size_t r;

	for (r = 0; r < KR_NRATES; r++) {
		kr_multigets(kr_rates[r], 16);
		kr_multigets(kr_rates[r], 60);
		kr_multigets(kr_rates[r], KS_MAX_KEY_LEN);
		kr_odd_lines(kr_rates[r]);
		kr_too_long(kr_rates[r], 1);
		kr_too_long(kr_rates[r], 40);
		kr_window_end(kr_rates[r], false);
		kr_window_end(kr_rates[r], true);
	}
}
