// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench_report.c - from timings to figures (medians of the differences to
 * the empty program) and their two forms: the table for people and one
 * JSON document for scripts. Both carry the same numbers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "bench.h"
#include "core/ring.h"
#include "util/spread.h"

void bench_read_machine(struct bench_machine *m)
{
	struct utsname u;
	char line[256];
	FILE *f;

	memset(m, 0, sizeof(*m));
	snprintf(m->kernel, sizeof(m->kernel), "%s",
		 uname(&u) ? "unknown" : u.release);
	snprintf(m->cpu_model, sizeof(m->cpu_model), "unknown");
	f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon += strspn(colon + 1, " \t") + 1;
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(m->cpu_model, sizeof(m->cpu_model), "%s", colon);
		break;
	}
	if (f)
		fclose(f);
	m->cpus = sysconf(_SC_NPROCESSORS_ONLN);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bench_median(const double *v, __u32 n)
{
	double tmp[BENCH_RUNS_MAX];

	memcpy(tmp, v, n * sizeof(*v));
	qsort(tmp, n, sizeof(*tmp), cmp_double);
	return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

static double vmin(const double *v, __u32 n)
{
	double m = v[0];
	__u32 i;

	for (i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

static double vmax(const double *v, __u32 n)
{
	double m = v[0];
	__u32 i;

	for (i = 1; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

/* Median of every baseline timing taken, for the table's first row. */
static double baseline_median(const struct bench_samples *res, int n,
			      __u32 runs)
{
	double all[BENCH_RUNS_MAX * 32];
	__u32 k = 0, r;
	int i;

	for (i = 0; i < n && k + runs <= BENCH_RUNS_MAX * 32; i++)
		for (r = 0; r < runs; r++)
			all[k++] = res[i].empty[r];
	qsort(all, k, sizeof(*all), cmp_double);
	return k % 2 ? all[k / 2] : (all[k / 2 - 1] + all[k / 2]) / 2;
}

static const char *met(bool ok)
{
	return ok ? "met" : "NOT met";
}

double bench_over_base(const struct bench_report *rep, int i)
{
	const struct bench_samples *s = &rep->res[i];
	const struct bench_samples *b = &rep->res[rep->sc[i].base];
	double d[BENCH_RUNS_MAX];
	__u32 r;

	/* per run, so both sides saw the machine at the same moment */
	for (r = 0; r < rep->runs; r++)
		d[r] = s->scen[r] - b->scen[r];
	return bench_median(d, rep->runs);
}

static const char *dist_label(__u32 dist)
{
	switch (dist) {
	case KS_DIST_KETAMA:
		return "ketama (MD5)";
	case KS_DIST_TWEMPROXY:
		return "twemproxy (FNV-1a)";
	case KS_DIST_KETAMA_PLAIN:
		return "ketama-plain (one_at_a_time)";
	case KS_DIST_DALLI:
		return "dalli (crc32a)";
	case KS_DIST_SPY:
		return "spymemcached (MD5)";
	case KS_DIST_PYMEMCACHE:
		return "pymemcache (murmur3)";
	default:
		return "?";
	}
}

/* "ketama (MD5)", or the distribution and its key hash when it is not
 * one of the rings dist_label() names with its default hash. */
static const char *ring_label(const struct bench_scen *sc)
{
	static char buf[64];

	if (!sc->ring_tagged &&
	    sc->ring_key_hash == ks_dist_default_key_hash(sc->ring_dist) &&
	    strcmp(dist_label(sc->ring_dist), "?"))
		return dist_label(sc->ring_dist);
	snprintf(buf, sizeof(buf), "%s %s%s", ks_dist_name(sc->ring_dist),
		 ks_key_hash_name(sc->ring_key_hash),
		 sc->ring_tagged ? " {}" : "");
	return buf;
}

/* The ring's own cost: each ring scenario over its packet without one. */
static void print_ring_table(const struct bench_report *rep)
{
	const struct bench_scen *sc = rep->sc;
	int i, any = 0;

	for (i = 0; i < rep->n; i++) {
		if (sc[i].base < 0 || sc[i].hot)
			continue;
		if (!any++)
			printf("\nring lookup, ns over the same packet with no ring loaded:\n"
			       "  %-50s %-18s %6s %6s\n",
			       "scenario", "ring", "shards", "ns");
		printf("  %-50s %-18s %6u %6.1f%s\n", sc[i].label,
		       ring_label(&sc[i]), sc[i].ring_shards,
		       bench_over_base(rep, i),
		       rep->res[i].valid && rep->res[sc[i].base].valid
			       ? ""
			       : "  INVALID");
	}
}

static const char *hot_label(int hot)
{
	switch (hot) {
	case BH_OTHER:
		return "other";
	case BH_KEY:
		return "key";
	case BH_STEER:
		return "steer";
	case BH_STEER6:
		return "steer6";
	case BH_STEER_VLAN:
		return "steer-vlan";
	case BH_LIMIT_OTHER:
		return "lim-other";
	case BH_LIMIT_UNDER:
		return "lim-under";
	case BH_LIMIT_REPLY:
		return "lim-reply";
	case BH_LIMIT_DROP:
		return "lim-drop";
	case BH_LIMIT_REPLY_HEAD:
		return "lim-reply-head";
	default:
		return "none";
	}
}

/* The hot table's own cost: each over its packet with the table empty. */
static void print_hot_table(const struct bench_report *rep)
{
	const struct bench_scen *sc = rep->sc;
	int i, any = 0;

	for (i = 0; i < rep->n; i++) {
		if (sc[i].base < 0 || !sc[i].hot)
			continue;
		if (!any++)
			printf("\nhot keys, ns over the same packet with the hot table empty:\n"
			       "  %-50s %-6s %6s\n",
			       "scenario", "table", "ns");
		printf("  %-50s %-6s %6.1f%s\n", sc[i].label,
		       hot_label(sc[i].hot), bench_over_base(rep, i),
		       rep->res[i].valid && rep->res[sc[i].base].valid
			       ? ""
			       : "  INVALID");
	}
}

/* The IPv4 steered get, which the other steered frames are compared
 * with; -1 if not in the run (--only). */
static int steer4_index(const struct bench_report *rep)
{
	int i;

	for (i = 0; i < rep->n; i++)
		if (rep->sc[i].hot == BH_STEER &&
		    !strcmp(rep->sc[i].id, BENCH_STEER4_ID))
			return i;
	return -1;
}

/* Scenario i's cost over empty as a multiple of scenario j's, per run
 * (both timed at the same moment), median over runs. */
static double over_ratio(const struct bench_report *rep, int i, int j)
{
	double d[BENCH_RUNS_MAX];
	__u32 r;

	for (r = 0; r < rep->runs; r++)
		d[r] = rep->res[j].over[r] > 0
			       ? rep->res[i].over[r] / rep->res[j].over[r]
			       : 0;
	return bench_median(d, rep->runs);
}

/* IPv6 and VLAN steering against the IPv4 steered get of the same run. */
static void print_steer_table(const struct bench_report *rep)
{
	const struct bench_scen *sc = rep->sc;
	int i, j = steer4_index(rep), any = 0;

	if (j < 0)
		return;
	for (i = 0; i < rep->n; i++) {
		if (i == j || !bench_hot_steers(sc[i].hot))
			continue;
		if (!any++)
			printf("\nsteering by frame, ns over empty against the IPv4 steered get (%.1f ns):\n"
			       "  %-58s %8s %6s\n",
			       bench_median(rep->res[j].over, rep->runs),
			       "scenario", "ns", "ratio");
		printf("  %-58s %8.1f %6.2f%s\n", sc[i].label,
		       bench_median(rep->res[i].over, rep->runs),
		       over_ratio(rep, i, j),
		       rep->res[i].valid && rep->res[j].valid ? ""
							      : "  INVALID");
	}
}

/*
 * This build against the other (--before, --against), run by run: each
 * run times both on the same packets, packet by packet, so the
 * difference of a run is free of what moves between runs. The median
 * difference with its 95% interval (order statistics): a change is
 * measured when the interval leaves out 0.
 */
static void print_paired(const struct bench_report *rep)
{
	const struct bench_samples *res = rep->res;
	double d[BENCH_RUNS_MAX];
	struct ks_spread sp;
	int i, any = 0;
	__u32 r;

	for (i = 0; i < rep->n; i++) {
		if (!res[i].old)
			continue;
		for (r = 0; r < rep->runs; r++)
			d[r] = res[i].scen[r] - res[i].old[r];
		if (ks_spread_of(d, rep->runs, 0.95, &sp))
			continue;
		if (!any++)
			printf("\nthis build - the other, ns per packet, run by run "
			       "(median, its %.0f%% interval):\n",
			       sp.level * 100);
		printf("  %-50s %8.1f  [%.1f..%.1f]%s\n", rep->sc[i].label,
		       sp.median, sp.lo, sp.hi,
		       sp.lo > 0 || sp.hi < 0 ? "" : "  (0 inside)");
	}
}

void bench_print_table(const struct bench_report *rep)
{
	const struct bench_machine *m = rep->machine;
	const struct bench_scen *sc = rep->sc;
	const struct bench_samples *res = rep->res;
	const struct bench_prog_info *pi = rep->pi;
	int n = rep->n, npi = rep->npi;
	int i;

	printf("keysteer datapath benchmark (XDP, one packet per "
	       "BPF_PROG_TEST_RUN, timed by bpf_stats)\n");
	printf("kernel %s, %s, %ld CPUs, pinned to CPU %d\n", m->kernel,
	       m->cpu_model, m->cpus, rep->cpu);
	printf("%u packets per timing, %u runs, median over runs%s\n",
	       rep->packets, rep->runs,
	       rep->packets < BENCH_PACKETS_RECORD
		       ? " (fewer packets than the figures of record: indicative only)"
		       : "");
	if (rep->before)
		printf("before: %s (the build before TCP streams), same packets, "
		       "same run\n",
		       rep->before);
	printf("\n%-50s %5s %4s %8s %10s %13s %8s %6s\n", "scenario", "bytes",
	       "keys", "ns/pkt", "over empty", "(min..max)", "before", "ratio");
	printf("%-50s %5s %4s %8.1f %10s\n", "empty XDP program (baseline)",
	       "-", "-", baseline_median(res, n, rep->runs), "0");
	for (i = 0; i < n; i++) {
		char range[32], old[32] = "", ratio[32] = "";
		double v = bench_median(res[i].over, rep->runs);

		snprintf(range, sizeof(range), "(%.0f..%.0f)",
			 vmin(res[i].over, rep->runs),
			 vmax(res[i].over, rep->runs));
		if (res[i].old) {
			double o = bench_median(res[i].old_over, rep->runs);

			snprintf(old, sizeof(old), "%.1f", o);
			if (o > 0)
				snprintf(ratio, sizeof(ratio), "%.2f", v / o);
		}
		printf("%-50s %5u %4u %8.1f %10.1f %13s %8s %6s%s\n",
		       sc[i].label, sc[i].len, sc[i].keys,
		       bench_median(res[i].scen, rep->runs), v, range, old,
		       ratio, res[i].valid ? "" : "  INVALID");
	}

	print_ring_table(rep);
	print_hot_table(rep);
	print_steer_table(rep);
	print_paired(rep);

	printf("\ntargets (ns over empty; ring: over the packet with no ring):\n");
	for (i = 0; i < n; i++) {
		double v = bench_median(res[i].over, rep->runs);

		if (sc[i].target_ns > 0)
			printf("  %-50s <= %3.0f: %6.1f  %s\n", sc[i].label,
			       sc[i].target_ns, v, met(v <= sc[i].target_ns));
		if (sc[i].ring_target_ns > 0) {
			v = bench_over_base(rep, i);
			printf("  %-50s <= %3.0f: %6.1f  %s\n", sc[i].label,
			       sc[i].ring_target_ns, v,
			       met(v <= sc[i].ring_target_ns));
		}
		if (sc[i].ratio_target > 0 && res[i].old) {
			double o = bench_median(res[i].old_over, rep->runs);

			printf("  %-50s <= %.1fx the build before: %.2fx  %s\n",
			       sc[i].label, sc[i].ratio_target,
			       o > 0 ? v / o : 0,
			       met(o > 0 && v / o <= sc[i].ratio_target));
		}
	}

	printf("\nverifier, instructions processed (limit %u, target <= %u):\n",
	       BENCH_VERIFIER_LIMIT, BENCH_VERIFIER_TARGET);
	for (i = 0; i < npi; i++) {
		bool ks = strcmp(pi[i].name, "ks_empty") != 0;

		printf("  %-18s %8u   xlated %6u B, jited %6u B%s%s\n",
		       pi[i].name, pi[i].verified_insns, pi[i].xlated_len,
		       pi[i].jited_len, ks ? "   " : "",
		       ks ? met(pi[i].verified_insns &&
				pi[i].verified_insns <= BENCH_VERIFIER_TARGET)
			  : "");
	}
}

/* JSON string: our strings are plain ASCII, /proc text might not be. */
void bench_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

void bench_print_json(const struct bench_report *rep)
{
	const struct bench_machine *m = rep->machine;
	const struct bench_scen *sc = rep->sc;
	const struct bench_samples *res = rep->res;
	const struct bench_prog_info *pi = rep->pi;
	int n = rep->n, npi = rep->npi;
	__u32 r;
	int i;

	printf("{\"version\":2,\"kernel\":");
	bench_json_str(m->kernel);
	printf(",\"cpu_model\":");
	bench_json_str(m->cpu_model);
	printf(",\"cpus\":%ld,\"pinned_cpu\":%d,\"method\":\"bpf_stats, "
	       "one packet per BPF_PROG_TEST_RUN, TCP as in-order streams\","
	       "\"packets\":%u,\"runs\":%u,",
	       m->cpus, rep->cpu, rep->packets, rep->runs);
	if (rep->before) {
		printf("\"before\":");
		bench_json_str(rep->before);
		printf(",");
	}
	printf("\"baseline_ns\":%.1f,\"results\":[",
	       baseline_median(res, n, rep->runs));
	for (i = 0; i < n; i++) {
		double v = bench_median(res[i].over, rep->runs);

		printf("%s{\"name\":\"%s\",\"label\":\"%s\",\"frame_bytes\":%u,"
		       "\"keys\":%u,\"sampled\":%s,\"valid\":%s,"
		       "\"ns_median\":%.1f,\"over_empty_median\":%.1f,"
		       "\"over_empty_min\":%.1f,\"over_empty_max\":%.1f,",
		       i ? "," : "", sc[i].id, sc[i].label, sc[i].len,
		       sc[i].keys, sc[i].sampled ? "true" : "false",
		       res[i].valid ? "true" : "false",
		       bench_median(res[i].scen, rep->runs), v,
		       vmin(res[i].over, rep->runs),
		       vmax(res[i].over, rep->runs));
		if (sc[i].target_ns > 0)
			printf("\"target_ns\":%.0f,\"target_met\":%s,",
			       sc[i].target_ns,
			       v <= sc[i].target_ns ? "true" : "false");
		if (res[i].old) {
			double o = bench_median(res[i].old_over, rep->runs);

			printf("\"before_over_empty_median\":%.1f,", o);
			if (o > 0)
				printf("\"ratio_to_before\":%.3f,", v / o);
			if (sc[i].ratio_target > 0)
				printf("\"ratio_target\":%.1f,\"ratio_target_met\":%s,",
				       sc[i].ratio_target,
				       o > 0 && v / o <= sc[i].ratio_target
					       ? "true"
					       : "false");
		}
		if (bench_hot_steers(sc[i].hot) && steer4_index(rep) >= 0 &&
		    i != steer4_index(rep))
			printf("\"ratio_to_ipv4_steered\":%.3f,",
			       over_ratio(rep, i, steer4_index(rep)));
		if (sc[i].base >= 0 && sc[i].hot) {
			printf("\"hot\":{\"table\":\"%s\",\"base\":\"%s\","
			       "\"over_base_median\":%.1f},",
			       hot_label(sc[i].hot), sc[sc[i].base].id,
			       bench_over_base(rep, i));
		} else if (sc[i].base >= 0) {
			double rv = bench_over_base(rep, i);

			printf("\"ring\":{\"key_hash\":\"%s\",\"hash_tag\":%s,",
			       ks_key_hash_name(sc[i].ring_key_hash),
			       sc[i].ring_tagged ? "true" : "false");
			printf("\"distribution\":\"%s\",\"shards\":%u,"
			       "\"misdirected\":%s,\"base\":\"%s\","
			       "\"over_base_median\":%.1f",
			       ks_dist_name(sc[i].ring_dist), sc[i].ring_shards,
			       sc[i].misdirected ? "true" : "false",
			       sc[sc[i].base].id, rv);
			if (sc[i].ring_target_ns > 0)
				printf(",\"target_ns\":%.0f,\"target_met\":%s",
				       sc[i].ring_target_ns,
				       rv <= sc[i].ring_target_ns ? "true"
								  : "false");
			printf("},");
		}
		printf("\"runs_empty_scenario_ns\":[");
		for (r = 0; r < rep->runs; r++) {
			printf("%s[%.1f,%.1f", r ? "," : "", res[i].empty[r],
			       res[i].scen[r]);
			if (res[i].old)
				printf(",%.1f", res[i].old[r]);
			printf("]");
		}
		printf("]}");
	}
	printf("],\"verifier\":[");
	for (i = 0; i < npi; i++) {
		bool ks = strcmp(pi[i].name, "ks_empty") != 0;

		printf("%s{\"program\":\"%s\",\"verified_insns\":%u,"
		       "\"xlated_bytes\":%u,\"jited_bytes\":%u",
		       i ? "," : "", pi[i].name, pi[i].verified_insns,
		       pi[i].xlated_len, pi[i].jited_len);
		if (ks)
			printf(",\"target\":%u,\"target_met\":%s",
			       BENCH_VERIFIER_TARGET,
			       pi[i].verified_insns &&
					       pi[i].verified_insns <=
						       BENCH_VERIFIER_TARGET
				       ? "true"
				       : "false");
		printf("}");
	}
	printf("]}\n");
}
