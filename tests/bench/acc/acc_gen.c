// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * acc_gen.c - the accuracy benchmark's captures (docs/accuracy.md): a
 * classic pcap of memcached text-protocol gets over UDP, with the exact
 * count of every key in every interval written alongside.
 *
 * Each interval of --interval-ms holds the same number of requests,
 * evenly spaced in time from the interval's start, so 'agent replay
 * --interval' cuts the capture exactly where this program counted. A
 * request names one key:
 *   - the hot traffic: Zipf(--zipf) over --keys keys "key:<rank>";
 *   - the churn: keys "scan:<n>" never repeated (a scan, or a client that
 *     busts the cache), --churn times the hot traffic;
 *   - two flash keys that turn hot at the start of an interval and stay:
 *     "flash:1pct" at 1% of all requests from --onset1, "flash:5pct" at 5%
 *     from --onset5.
 * Several requests share a datagram (--per-frame, pipelined), which the
 * datapath parses one by one; that keeps a replay of tens of millions of
 * requests to a minute.
 *
 * The truth file (PREFIX.truth), tab-separated:
 *   I  interval  requests  zipf  churn  flash1  flash5
 *   T  interval  key  count      (the --truth-top heaviest keys, heaviest
 *                                 first; ties by name)
 *   S  interval  shard  count    (with --shards: every request counted
 *                                 for the shard the clients' ring gives
 *                                 its key, by user space's ks_ring_lookup,
 *                                 the one ring code 'agent ring lookup'
 *                                 and the ring tests check; every shard)
 * Deterministic: the same options and --seed give the same bytes.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/pcap.h"
#include "core/ring.h"
#include "core/shards.h"
#include "load/zipf.h"

#define NS_PER_S   1000000000ULL
#define T0_S       1700000000ULL     /* the first frame: 2023-11-14 22:13:20 */
#define HDR_LEN    (14 + 20 + 8 + 8) /* Ethernet, IPv4, UDP, memcached */
#define CLIENTS    16
#define MAX_FRAME  1472 /* payload of one 1500-byte IPv4 UDP datagram */
#define KEY_MAX    32
#define N_FLASH    2
#define FLASH_NONE 0xffffffffU

struct gen_opts {
	const char *prefix;
	__u32 keys;
	double zipf;
	__u64 hot; /* hot requests per interval (Zipf and flash keys) */
	double churn;
	__u32 intervals;
	__u32 interval_ms;
	__u32 per_frame;
	__u32 truth_top;
	__u64 seed;
	__u32 onset[N_FLASH];
	const char *shards; /* --shards LIST: per-shard truth */
	const char *dist;   /* --distribution (default ketama) */
};

static const char *const flash_name[N_FLASH] = { "flash:1pct", "flash:5pct" };
static const double flash_share[N_FLASH] = { 0.01, 0.05 };

struct gen {
	struct gen_opts o;
	struct ks_zipf z;
	struct ks_rng rng;
	FILE *pcap, *truth;
	__u32 *count; /* per Zipf rank (index rank - 1), this interval */
	__u64 flash[N_FLASH], churn, zipf, requests;
	__u64 scan_next;
	__u32 req_id;
	__u8 frame[HDR_LEN + MAX_FRAME];
	/* --shards: the ring, each Zipf rank's and flash key's owner (looked
	 * up once), and this interval's requests per shard */
	struct ks_shards sh;
	struct ks_ring ring;
	__u32 *owner, flash_owner[N_FLASH];
	__u64 *shard_count;
};

static void usage(FILE *f)
{
	fputs("USAGE\n"
	      "  acc_gen --out PREFIX [--keys N] [--zipf S] [--hot N] [--churn X]\n"
	      "          [--intervals K] [--interval-ms MS] [--per-frame R]\n"
	      "          [--onset1 I] [--onset5 I] [--truth-top N] [--seed S]\n"
	      "          [--shards LIST [--distribution D]]\n"
	      "\n"
	      "Writes PREFIX.pcap and PREFIX.truth (see the head of acc_gen.c).\n"
	      "Defaults: 1000000 keys, Zipf 0.99, 1000000 hot requests per\n"
	      "interval, churn 0, 8 intervals of 1000 ms, 32 requests per frame,\n"
	      "onsets 3 and 5 (an interval >= K: never), truth top 1024, seed 1.\n",
	      f);
}

static int parse(int argc, char **argv, struct gen_opts *o)
{
	static const struct option lo[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "keys", required_argument, NULL, 'k' },
		{ "zipf", required_argument, NULL, 'z' },
		{ "hot", required_argument, NULL, 'n' },
		{ "churn", required_argument, NULL, 'c' },
		{ "intervals", required_argument, NULL, 'i' },
		{ "interval-ms", required_argument, NULL, 'm' },
		{ "per-frame", required_argument, NULL, 'r' },
		{ "onset1", required_argument, NULL, '1' },
		{ "onset5", required_argument, NULL, '5' },
		{ "truth-top", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, 's' },
		{ "shards", required_argument, NULL, 'S' },
		{ "distribution", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->keys = 1000000;
	o->zipf = 0.99;
	o->hot = 1000000;
	o->intervals = 8;
	o->interval_ms = 1000;
	o->per_frame = 32;
	o->truth_top = 1024;
	o->seed = 1;
	o->onset[0] = 3;
	o->onset[1] = 5;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->prefix = optarg;
			break;
		case 'k':
			o->keys = (__u32)strtoul(optarg, NULL, 0);
			break;
		case 'z':
			o->zipf = strtod(optarg, NULL);
			break;
		case 'n':
			o->hot = strtoull(optarg, NULL, 0);
			break;
		case 'c':
			o->churn = strtod(optarg, NULL);
			break;
		case 'i':
			o->intervals = (__u32)strtoul(optarg, NULL, 0);
			break;
		case 'm':
			o->interval_ms = (__u32)strtoul(optarg, NULL, 0);
			break;
		case 'r':
			o->per_frame = (__u32)strtoul(optarg, NULL, 0);
			break;
		case '1':
		case '5':
			o->onset[c == '5'] = (__u32)strtoul(optarg, NULL, 0);
			break;
		case 't':
			o->truth_top = (__u32)strtoul(optarg, NULL, 0);
			break;
		case 's':
			o->seed = strtoull(optarg, NULL, 0);
			break;
		case 'S':
			o->shards = optarg;
			break;
		case 'D':
			o->dist = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (!o->prefix || !o->keys || !o->hot || !o->intervals ||
	    !o->interval_ms || !o->per_frame || o->per_frame > 64 ||
	    !(o->churn >= 0 && o->churn <= 100) || optind != argc) {
		usage(stderr);
		return -1;
	}
	return 0;
}

static __u16 ip_csum(const __u8 *h, size_t len)
{
	__u32 sum = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (__u32)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

static void put16be(__u8 *b, __u16 v)
{
	b[0] = v >> 8;
	b[1] = v & 0xff;
}

/* Ethernet, IPv4 198.18.1.<client> -> 198.18.0.2, UDP to 11211 (no
 * checksum, as IPv4 allows), memcached's frame header: plen bytes of
 * requests follow. */
static void headers(struct gen *g, __u32 client, size_t plen)
{
	__u8 *b = g->frame, *ip = b + 14, *udp = ip + 20, *mc = udp + 8;
	static const __u8 dst[6] = { 0x02, 0, 0, 0, 0, 0x02 };

	memcpy(b, dst, 6);
	memset(b + 6, 0, 6);
	b[6] = 0x02;
	b[11] = (__u8)(0x10 + client);
	put16be(b + 12, 0x0800);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	put16be(ip + 2, (__u16)(20 + 8 + 8 + plen));
	put16be(ip + 4, (__u16)g->req_id);
	ip[8] = 64;
	ip[9] = 17;
	ip[12] = 198;
	ip[13] = 18;
	ip[14] = 1;
	ip[15] = (__u8)(1 + client);
	ip[16] = 198;
	ip[17] = 18;
	ip[18] = 0;
	ip[19] = 2;
	put16be(ip + 10, ip_csum(ip, 20));
	put16be(udp, (__u16)(40000 + client));
	put16be(udp + 2, 11211);
	put16be(udp + 4, (__u16)(8 + 8 + plen));
	put16be(udp + 6, 0);
	put16be(mc, (__u16)g->req_id++);
	put16be(mc + 2, 0); /* sequence */
	put16be(mc + 4, 1); /* datagrams in the message */
	put16be(mc + 6, 0);
}

/* One request more for shard o (with --shards; KS_RING_UNPLACED and the
 * like are no shard's). */
static void count_shard(struct gen *g, __u32 o)
{
	if (g->shard_count && o < g->sh.n)
		g->shard_count[o]++;
}

/*
 * --shards: the clients' ring, and the owner of every key that repeats
 * (the Zipf ranks and the flash keys) looked up once. 0, or -1 with a
 * message.
 */
static int ring_init(struct gen *g)
{
	enum ks_dist dist = KS_DIST_KETAMA;
	char err[512], key[KEY_MAX];
	__u32 i;
	int len;

	if (!g->o.shards)
		return 0;
	if ((g->o.dist && ks_dist_parse(g->o.dist, &dist, err, sizeof(err))) ||
	    ks_shards_parse_list("--shards", g->o.shards, &g->sh, err,
				 sizeof(err)) ||
	    ks_ring_build(&g->ring, &g->sh, dist, 0, 1, err, sizeof(err))) {
		fprintf(stderr, "acc_gen: %s\n", err);
		return -1;
	}
	g->owner = calloc(g->o.keys, sizeof(*g->owner));
	g->shard_count = calloc(g->sh.n, sizeof(*g->shard_count));
	if (!g->owner || !g->shard_count)
		return -1;
	for (i = 0; i < g->o.keys; i++) {
		len = snprintf(key, KEY_MAX, "key:%u", i + 1);
		g->owner[i] = ks_ring_lookup(&g->ring, key, (size_t)len);
	}
	for (i = 0; i < N_FLASH; i++)
		g->flash_owner[i] = ks_ring_lookup(&g->ring, flash_name[i],
						   strlen(flash_name[i]));
	return 0;
}

/* One request's key into key[]; counts it. Returns its length. */
static int draw_key(struct gen *g, __u32 iv, double churn_p, char *key)
{
	double u = ks_rng_unit(&g->rng), base = 0;
	__u32 f, rank;

	for (f = 0; f < N_FLASH; f++) {
		if (iv < g->o.onset[f])
			continue;
		base += flash_share[f];
		if (u < base) {
			g->flash[f]++;
			count_shard(g, g->owner ? g->flash_owner[f] : 0);
			return snprintf(key, KEY_MAX, "%s", flash_name[f]);
		}
	}
	if (u < base + churn_p) {
		int len;

		g->churn++;
		len = snprintf(key, KEY_MAX, "scan:%012llu",
			       (unsigned long long)g->scan_next++);
		if (g->owner)
			count_shard(g,
				    ks_ring_lookup(&g->ring, key, (size_t)len));
		return len;
	}
	rank = ks_zipf_rank(&g->z, ks_rng_unit(&g->rng));
	g->count[rank - 1]++;
	g->zipf++;
	count_shard(g, g->owner ? g->owner[rank - 1] : 0);
	return snprintf(key, KEY_MAX, "key:%u", rank);
}

static int write_frame(struct gen *g, __u64 ts_ns, size_t plen)
{
	__u8 rec[KS_PCAP_REC_HDR_LEN];
	__u32 len = (__u32)(HDR_LEN + plen);

	headers(g, g->req_id % CLIENTS, plen);
	ks_pcap_put_record_header(rec, 1, ts_ns, len, len);
	if (fwrite(rec, sizeof(rec), 1, g->pcap) != 1 ||
	    fwrite(g->frame, len, 1, g->pcap) != 1)
		return -1;
	return 0;
}

struct ranked {
	__u32 count;
	__u32 id; /* Zipf rank, or keys + flash index */
};

static int cmp_ranked(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* The interval's line and its heaviest keys; then the counts start over. */
static int write_truth(struct gen *g, __u32 iv)
{
	struct ranked *r = malloc(((size_t)g->o.keys + N_FLASH) * sizeof(*r));
	size_t n = 0, i;
	__u32 f;

	if (!r)
		return -1;
	for (i = 0; i < g->o.keys; i++)
		if (g->count[i])
			r[n++] = (struct ranked){ g->count[i], (__u32)i + 1 };
	for (f = 0; f < N_FLASH; f++)
		if (g->flash[f])
			r[n++] = (struct ranked){ (__u32)g->flash[f],
						  g->o.keys + 1 + f };
	qsort(r, n, sizeof(*r), cmp_ranked);
	fprintf(g->truth, "I\t%u\t%llu\t%llu\t%llu\t%llu\t%llu\n", iv,
		(unsigned long long)g->requests, (unsigned long long)g->zipf,
		(unsigned long long)g->churn, (unsigned long long)g->flash[0],
		(unsigned long long)g->flash[1]);
	for (i = 0; i < n && i < g->o.truth_top; i++) {
		if (r[i].id > g->o.keys)
			fprintf(g->truth, "T\t%u\t%s\t%u\n", iv,
				flash_name[r[i].id - g->o.keys - 1],
				r[i].count);
		else
			fprintf(g->truth, "T\t%u\tkey:%u\t%u\n", iv, r[i].id,
				r[i].count);
	}
	for (i = 0; g->shard_count && i < g->sh.n; i++) {
		fprintf(g->truth, "S\t%u\t%zu\t%llu\n", iv, i,
			(unsigned long long)g->shard_count[i]);
		g->shard_count[i] = 0;
	}
	free(r);
	memset(g->count, 0, (size_t)g->o.keys * sizeof(*g->count));
	memset(g->flash, 0, sizeof(g->flash));
	g->churn = g->zipf = g->requests = 0;
	return 0;
}

static int one_interval(struct gen *g, __u32 iv)
{
	__u64 total, frames, fr, start, step;
	char key[KEY_MAX];
	double churn_p;
	__u32 i;

	/* hot = Zipf + flash; churn = churn x hot; the flash keys' shares are
	 * of everything */
	total = (__u64)((double)g->o.hot * (1 + g->o.churn) + 0.5);
	churn_p = g->o.churn / (1 + g->o.churn);
	frames = (total + g->o.per_frame - 1) / g->o.per_frame;
	start = T0_S * NS_PER_S + (__u64)iv * g->o.interval_ms * 1000000ULL;
	step = (__u64)g->o.interval_ms * 1000000ULL / frames;
	for (fr = 0; fr < frames; fr++) {
		size_t plen = 0;
		__u32 n = g->o.per_frame;

		if (fr == frames - 1 && total % n)
			n = (__u32)(total % n);
		for (i = 0; i < n; i++) {
			int len = draw_key(g, iv, churn_p, key);

			memcpy(g->frame + HDR_LEN + plen, "get ", 4);
			memcpy(g->frame + HDR_LEN + plen + 4, key, (size_t)len);
			memcpy(g->frame + HDR_LEN + plen + 4 + len, "\r\n", 2);
			plen += 4 + (size_t)len + 2;
		}
		g->requests += n;
		if (write_frame(g, start + fr * step, plen))
			return -1;
	}
	return write_truth(g, iv);
}

static FILE *open_out(const char *prefix, const char *ext)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s.%s", prefix, ext);
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "acc_gen: cannot write %s: %s\n", path,
			strerror(errno));
	else
		setvbuf(f, NULL, _IOFBF, 1 << 22);
	return f;
}

int main(int argc, char **argv)
{
	static struct gen g;
	__u8 hdr[KS_PCAP_FILE_HDR_LEN];
	int rc = 1;
	__u32 iv;

	if (parse(argc, argv, &g.o))
		return 2;
	if (ks_zipf_init(&g.z, g.o.keys, g.o.zipf)) {
		fprintf(stderr, "acc_gen: bad --keys or --zipf\n");
		return 2;
	}
	ks_rng_seed(&g.rng, g.o.seed);
	if (ring_init(&g))
		goto out;
	g.count = calloc(g.o.keys, sizeof(*g.count));
	g.pcap = open_out(g.o.prefix, "pcap");
	g.truth = open_out(g.o.prefix, "truth");
	if (!g.count || !g.pcap || !g.truth)
		goto out;
	ks_pcap_put_file_header(hdr, 1, 65535, KS_LINKTYPE_ETHERNET);
	if (fwrite(hdr, sizeof(hdr), 1, g.pcap) != 1)
		goto out;
	for (iv = 0; iv < g.o.intervals; iv++)
		if (one_interval(&g, iv))
			goto out;
	rc = 0;
out:
	if (g.pcap && fclose(g.pcap))
		rc = 1;
	if (g.truth && fclose(g.truth))
		rc = 1;
	if (rc)
		fprintf(stderr, "acc_gen: writing %s.* failed\n", g.o.prefix);
	ks_zipf_free(&g.z);
	free(g.count);
	free(g.owner);
	free(g.shard_count);
	ks_ring_free(&g.ring);
	ks_shards_free(&g.sh);
	return rc;
}
