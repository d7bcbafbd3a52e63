// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The per-shard report's arithmetic: per-CPU sums, rates scaled by the
 * sample rate over the interval, totals since the push, share, ratio to
 * the mean, the busiest shard (ties to the lower index), the display
 * order, shard names cut to fit, the recent misdirected clients, the
 * shard file's change signature, and each shard's +/- (a 95% interval),
 * its coverage checked against the datapath's two countdowns simulated.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ktest.h"
#include "agent/run_ring.h"
#include "core/shard_rates.h"
#include "unit.h"

static void percpu_sum(void)
{
	struct ks_shard_stats cpus[3] = {
		{ .reads = 1, .writes = 10, .misdirected = 100 },
		{ .reads = 2, .writes = 20, .misdirected = 200 },
		{ .reads = 4, .writes = 40, .misdirected = 400 },
	};
	struct ks_shard_counts out;

	kt_begin("shard_sum_over_cpus");
	ks_shard_sum(cpus, 3, sizeof(cpus[0]), &out);
	CHECK_EQ(out.reads, 7);
	CHECK_EQ(out.writes, 70);
	CHECK_EQ(out.misdirected, 700);
	ks_shard_sum(cpus, 1, sizeof(cpus[0]), &out);
	CHECK_EQ(out.reads, 1);
	kt_end();
}

static void rates(void)
{
	/* 4 shards, sample 1/8, a 0.5 s interval; counts are sampled keys */
	struct ks_shard_counts base[4] = {
		{ 0, 0, 0 },
		{ 5, 5, 5 },
		{ 0, 0, 0 },
		{ 100, 0, 0 },
	};
	struct ks_shard_counts prev[4] = {
		{ 10, 0, 0 },
		{ 10, 5, 10 },
		{ 0, 0, 0 },
		{ 100, 0, 0 },
	};
	struct ks_shard_counts cur[4] = {
		{ 40, 10, 0 },
		{ 70, 25, 80 },
		{ 0, 0, 0 },
		{ 50, 0, 0 },
	};
	struct ks_shard_report *rep = calloc(1, sizeof(*rep));

	kt_begin("shard_rates_scaled_by_sample_and_interval");
	ks_shard_fill(rep, base, prev, cur, 4, 8, 500000000ULL);
	/* shard 0: 30 reads, 10 writes sampled in 0.5 s at 1/8 */
	CHECK_EQ(rep->shards[0].reads_mps, 30 * 8 * 2 * 1000ULL);
	CHECK_EQ(rep->shards[0].writes_mps, 10 * 8 * 2 * 1000ULL);
	CHECK_EQ(rep->shards[0].misdirected_mps, 0);
	CHECK_EQ(rep->shards[1].reads_mps, 60 * 16 * 1000ULL);
	CHECK_EQ(rep->shards[1].writes_mps, 20 * 16 * 1000ULL);
	CHECK_EQ(rep->shards[1].misdirected_mps, 70 * 16 * 1000ULL);
	CHECK_EQ(rep->shards[2].reads_mps, 0);
	/* a counter that went backwards (a reload) counts as 0 */
	CHECK_EQ(rep->shards[3].reads_mps, 0);
	/* every key placed: 40 + 80 sampled in 0.5 s at 1/8 */
	CHECK_EQ(rep->hits_mps, 120 * 16 * 1000ULL);
	kt_end();

	kt_begin("shard_totals_since_push");
	CHECK_EQ(rep->shards[0].reads, 40 * 8);
	CHECK_EQ(rep->shards[0].writes, 10 * 8);
	CHECK_EQ(rep->shards[1].reads, 65 * 8);
	CHECK_EQ(rep->shards[1].writes, 20 * 8);
	CHECK_EQ(rep->shards[1].misdirected, 75 * 8);
	CHECK_EQ(rep->shards[3].reads, 0);
	kt_end();

	kt_begin("shard_share_ratio_busiest");
	/* loads 40, 80, 0, 0 of 120: mean 30 */
	CHECK_EQ(rep->shards[0].share_ppm, 333333);
	CHECK_EQ(rep->shards[1].share_ppm, 666667);
	CHECK_EQ(rep->shards[2].share_ppm, 0);
	CHECK_EQ(rep->shards[0].ratio_milli, 1333);
	CHECK_EQ(rep->shards[1].ratio_milli, 2667);
	CHECK_EQ(rep->shards[2].ratio_milli, 0);
	CHECK_EQ(rep->busiest, 1);
	kt_end();

	kt_begin("shard_busiest_tie_and_idle");
	{
		struct ks_shard_counts z[3] = {}, c[3] = {
			{ 0, 0, 0 },
			{ 6, 4, 0 },
			{ 10, 0, 0 },
		};

		ks_shard_fill(rep, z, z, c, 3, 1, 1000000000ULL);
		CHECK_EQ(rep->busiest, 1); /* 10 and 10: the lower index */
		CHECK_EQ(rep->shards[1].ratio_milli, 1500);
		CHECK_EQ(rep->shards[2].ratio_milli, 1500);
		CHECK_EQ(rep->shards[0].share_ppm, 0);
		ks_shard_fill(rep, z, z, z, 3, 1, 1000000000ULL);
		CHECK_EQ(rep->busiest, KS_NO_SHARD);
		CHECK_EQ(rep->hits_mps, 0);
		CHECK_EQ(rep->shards[1].share_ppm, 0);
		CHECK_EQ(rep->shards[1].ratio_milli, 0);
		/* elapsed 0 is taken as 1 s, sample_n 0 as 1 */
		ks_shard_fill(rep, z, z, c, 3, 0, 0);
		CHECK_EQ(rep->shards[2].reads_mps, 10000);
	}
	kt_end();

	kt_begin("shard_order_busiest_first");
	{
		__u32 order[5], i;

		memset(rep, 0, sizeof(*rep));
		rep->shards[0].reads_mps = 5;
		rep->shards[1].reads_mps = 9;
		rep->shards[2].writes_mps = 9;
		rep->shards[3].reads_mps = 1;
		rep->shards[3].writes_mps = 20;
		ks_shard_order(rep, 5, order);
		CHECK(order[0] == 3 && order[1] == 1 && order[2] == 2 &&
			      order[3] == 0 && order[4] == 4,
		      "order %u %u %u %u %u", order[0], order[1], order[2],
		      order[3], order[4]);
		for (i = 0; i < 5; i++)
			CHECK(order[i] < 5, "index %u out of range", order[i]);
	}
	kt_end();
	free(rep);
}

static void names(void)
{
	struct ks_shard_report *rep = calloc(1, sizeof(*rep));
	struct ks_shards s = {};
	struct ks_shard v[2] = {};

	kt_begin("shard_names_cut_to_fit");
	snprintf(v[0].host, sizeof(v[0].host), "10.0.0.1");
	v[0].port = 11211;
	memset(v[1].host, 'h', 100);
	v[1].port = 12345;
	s.v = v;
	s.n = 2;
	ks_shard_names(rep, &s);
	CHECK(!strcmp(rep->shards[0].name, "10.0.0.1:11211"), "got '%s'",
	      rep->shards[0].name);
	CHECK(strlen(rep->shards[1].name) == KS_SHARD_NAME_LEN - 1,
	      "cut name is %zu bytes", strlen(rep->shards[1].name));
	CHECK(strstr(rep->shards[1].name, "hhh...:12345") != NULL, "got '%s'",
	      rep->shards[1].name);
	kt_end();
	free(rep);
}

static struct ks_misdirect mis(__u64 ts, __u8 last_octet, __u16 port,
			       __u32 owner)
{
	struct ks_misdirect m = {
		.ts_ns = ts, .sport = port, .proto = 6, .owner = owner
	};

	m.saddr[10] = 0xff;
	m.saddr[11] = 0xff;
	m.saddr[12] = 198;
	m.saddr[13] = 18;
	m.saddr[15] = last_octet;
	return m;
}

static void misdirected(void)
{
	struct ks_misdirect all[7], out[4];
	size_t n;

	all[0] = mis(100, 1, 1000, 1); /* before the push: left out */
	all[1] = mis(300, 1, 1000, 2);
	all[2] = mis(0, 9, 9, 9); /* an empty slot */
	all[3] = mis(500, 2, 2000, 3);
	all[4] = mis(400, 1, 1000, 3); /* same client as [1], newer */
	all[5] = mis(250, 3, 3000, 1);
	all[6] = mis(260, 4, 4000, 1);

	kt_begin("misdirected_recent_newest_first_one_per_client");
	n = ks_misdirect_recent(all, 7, 200, out, 4);
	CHECK_EQ(n, 4);
	CHECK_EQ(out[0].ts_ns, 500);
	CHECK_EQ(out[1].ts_ns, 400);
	CHECK_EQ(out[1].owner, 3); /* the client's newest slot */
	CHECK_EQ(out[2].ts_ns, 260);
	CHECK_EQ(out[3].ts_ns, 250);
	n = ks_misdirect_recent(all, 7, 200, out, 2);
	CHECK_EQ(n, 2);
	n = ks_misdirect_recent(all, 7, 1000, out, 4);
	CHECK_EQ(n, 0);
	n = ks_misdirect_recent(all, 7, 0, out, 4);
	CHECK_EQ(n, 4); /* 500, 400 (client 1), 260, 250: [0] is client 1 */
	kt_end();
}

static void file_sig(void)
{
	char path[] = "/tmp/ks_unit_sig.XXXXXX";
	struct ks_file_sig a, b, c;
	int fd = mkstemp(path);

	kt_begin("shard_file_change_signature");
	CHECK(fd >= 0, "mkstemp failed");
	if (fd >= 0) {
		ks_file_sig_get(path, &a);
		CHECK(a.exists, "file not seen");
		CHECK(write(fd, "a:1\n", 4) == 4, "write");
		ks_file_sig_get(path, &b);
		CHECK(!ks_file_sig_equal(&a, &b), "size change not seen");
		ks_file_sig_get(path, &c);
		CHECK(ks_file_sig_equal(&b, &c), "same file seen as changed");
		close(fd);
		unlink(path);
		ks_file_sig_get(path, &c);
		CHECK(!c.exists, "removed file seen");
		CHECK(!ks_file_sig_equal(&b, &c), "removal not seen");
		ks_file_sig_get(path, &a);
		CHECK(ks_file_sig_equal(&a, &c), "two missing differ");
	}
	kt_end();
}

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b) + 1);
}

static void load_err_formula(void)
{
	struct ks_shard_report *rep = calloc(1, sizeof(*rep));
	/* 2 shards x 2 CPUs, cumulative reads + writes, shard by shard */
	__u64 prev[4] = { 0, 0, 0, 0 }, cur[4] = { 100, 30, 300, 10 };
	__u32 n1[2] = { 1, 1 }, p1[2] = { 1, 1 }, n2[2] = { 2, 1 },
	      p4[2] = { 4, 1 };
	const double z = KS_SHARD_Z;

	kt_begin("shard_err_zero_when_every_key_counted");
	ks_shard_fill_err(rep, prev, cur, 2, 2, n1, p1, 1, 1000000000ULL);
	CHECK_EQ(rep->shards[0].load_err_mps, 0);
	CHECK_EQ(rep->shards[1].load_err_mps, 0);
	ks_shard_fill_err(rep, prev, cur, 2, 2, NULL, NULL, 0, 1000000000ULL);
	CHECK_EQ(rep->shards[0].load_err_mps, 0);
	kt_end();

	kt_begin("shard_err_from_n_p_and_share");
	{
		/* one CPU at W = 8 (N 2, P 4), shard 100 of 400 counted,
		 * scaled by N: 2 x 100 x 7 x 3/4 */
		__u64 d = 100, tot = 400;
		__u32 n = 2, p = 4;
		double v = ks_shard_load_var(&d, &tot, &n, &p, 1, 2);
		double h = z * sqrt(1050 + (z * 7 / 2) * (z * 7 / 2)) +
			   z * z * 7 / 2;

		CHECK(near(v, 1050), "var %f", v);
		CHECK(near(ks_shard_load_halfwidth(v, 7), h), "h %f",
		      ks_shard_load_halfwidth(v, 7));
		/* nothing placed: about 4 placements' room (z^2 (W - 1)) */
		CHECK(near(ks_shard_load_halfwidth(0, 7), z * z * 7), "h0 %f",
		      ks_shard_load_halfwidth(0, 7));
		CHECK(ks_shard_load_halfwidth(0, 0) == 0, "exact");
		/* a shard alone on its CPU: every placement is its own */
		d = tot;
		CHECK(ks_shard_load_var(&d, &tot, &n, &p, 1, 2) == 0, "alone");
		/* scaled by another N than the CPU's: (s / N)^2 */
		d = 100;
		v = ks_shard_load_var(&d, &tot, &n, &p, 1, 4);
		CHECK(near(v, 4 * 1050), "var %f", v);
	}
	/* CPU 0 at W 8, CPU 1 at 1 (adds nothing); over 0.5 s: shard 0
	 * d 100 of 400 on CPU 0, 30 of 40 on CPU 1 */
	ks_shard_fill_err(rep, prev, cur, 2, 2, n2, p4, 2, 500000000ULL);
	{
		double h = ks_shard_load_halfwidth(2.0 * 100 * 7 * 0.75, 7);

		CHECK_EQ(rep->shards[0].load_err_mps, ks_to_mps(h * 2));
		/* 300 of 400: the same (1 - 3/4) x 300 = (1 - 1/4) x 100 */
		CHECK_EQ(rep->shards[1].load_err_mps,
			 rep->shards[0].load_err_mps);
	}
	kt_end();
	free(rep);
}

/* xorshift64*: the same stream on every run */
static __u64 rnd_next(__u64 *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 2685821657736338717ULL;
}

/* The datapath's countdown (ks_sample_due, ks_place_next): true for 1 in
 * n. */
static int due(__u32 *cd, __u32 n)
{
	if (*cd == 0 || *cd > n)
		*cd = n;
	return --*cd == 0;
}

#define CAL_SHARDS    9
#define CAL_CPUS      2
#define CAL_INTERVALS 300
#define CAL_KEYS      40000 /* a CPU an interval */

/*
 * The property (issue 27): each shard's stated 95% interval covers its
 * true load in most intervals, and is not wider than it needs to be. The
 * datapath's two countdowns on two CPUs (W = N P of 4 x 16 and 1 x 32:
 * about 625 and 1,250 placements an interval) meet a stream of keys drawn
 * for 9 shards of uneven load (30% down to 0.5%, about 9 placements an
 * interval), 300 intervals: 2,700 shard-intervals. At a true 95%
 * coverage the fraction covered has a standard deviation of 0.42%, so
 * 93% is 4.8 of them below (and the intervals within one interval are
 * tied by the fixed placements a CPU makes, which narrows the count
 * rather than widens it); the interval is meant to be on the safe side
 * (about 96%). Not uselessly wide: the 95th percentile of |error| / +/-
 * is at least 0.5 (halving every interval would leave more than 5%
 * uncovered), where a calibrated one gives about 1. Its control, a
 * variance without P (tests/unit/mutants.sh shard-err-without-p),
 * covers far fewer.
 */
static void load_err_calibrated(void)
{
	static const double weight[CAL_SHARDS] = { 30, 12, 12,  10, 10,
						   10, 8,  7.5, 0.5 };
	static const __u32 nn[CAL_CPUS] = { 4, 1 }, pp[CAL_CPUS] = { 16, 32 };
	struct ks_shard_report *rep = calloc(1, sizeof(*rep));
	__u64 prev[CAL_SHARDS * CAL_CPUS] = {}, cur[CAL_SHARDS * CAL_CPUS] = {};
	__u32 scd[CAL_CPUS] = {}, pcd[CAL_CPUS] = {};
	double cum[CAL_SHARDS], ratio[CAL_SHARDS * CAL_INTERVALS], sum = 0;
	__u64 x = 0x9e3779b97f4a7c15ULL;
	size_t nr = 0, covered = 0, s;
	int iv, c, k;

	for (s = 0; s < CAL_SHARDS; s++)
		cum[s] = (sum += weight[s]);
	kt_begin("shard_err_covers_true_load_95");
	for (iv = 0; iv < CAL_INTERVALS; iv++) {
		__u64 truth[CAL_SHARDS] = {};
		/* ks_rates_effective: keys / (keys / N), summed */
		double scale = 2.0 * CAL_KEYS / (CAL_KEYS / 4.0 + CAL_KEYS);

		memcpy(prev, cur, sizeof(cur));
		for (c = 0; c < CAL_CPUS; c++)
			for (k = 0; k < CAL_KEYS; k++) {
				double u = (rnd_next(&x) >> 11) * 0x1p-53 * sum;

				for (s = 0; s < CAL_SHARDS - 1 && u >= cum[s];
				     s++)
					;
				truth[s]++;
				if (due(&scd[c], nn[c]) && due(&pcd[c], pp[c]))
					cur[s * CAL_CPUS + c] += pp[c];
			}
		ks_shard_fill_err(rep, prev, cur, CAL_SHARDS, CAL_CPUS, nn, pp,
				  scale, 1000000000ULL);
		for (s = 0; s < CAL_SHARDS; s++) {
			double d = 0, est, err, h;

			for (c = 0; c < CAL_CPUS; c++)
				d += (double)(cur[s * CAL_CPUS + c] -
					      prev[s * CAL_CPUS + c]);
			est = d * scale;
			err = fabs(est - (double)truth[s]);
			h = rep->shards[s].load_err_mps / 1000.0;
			covered += err <= h;
			ratio[nr++] = h > 0 ? err / h : 1e9;
		}
	}
	{
		size_t j, q95, above;
		double cov = (double)covered / (double)nr;

		/* the 95th percentile by counting: how many ratios reach
		 * 0.5 */
		for (j = 0, above = 0; j < nr; j++)
			above += ratio[j] >= 0.5;
		q95 = nr / 20;
		CHECK(cov >= 0.93, "covered %.4f of %zu shard-intervals", cov,
		      nr);
		CHECK(above > q95,
		      "only %zu of %zu errors reach half the +/-: too wide",
		      above, nr);
		fprintf(stderr,
			"# covered %.4f of %zu; %zu errors past half the +/-\n",
			cov, nr, above);
	}
	kt_end();
	free(rep);
}

void test_shard_rates(void)
{
	percpu_sum();
	rates();
	names();
	misdirected();
	file_sig();
	load_err_formula();
	load_err_calibrated();
}
