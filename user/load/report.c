// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What a run sent and received: the threads' counters summed, printed as a
 * table or one JSON document, and the exact per-key counts file.
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include "load.h"

void ld_sum_workers(const struct ld_run *run, struct ld_worker *ws, __u32 n,
		    struct ld_totals *t)
{
	__u32 i, s;
	int op, pr;

	for (i = 0; i < n; i++) {
		if (!ws[i].run)
			continue;
		for (op = 0; op < LD_NOPS; op++)
			for (pr = 0; pr < LD_NPROTO; pr++) {
				struct ld_opstat *d = &t->st[op][pr];
				const struct ld_opstat *x = &ws[i].st[op][pr];

				d->ops += x->ops;
				d->msgs += x->msgs;
				d->keys += x->keys;
				d->hits += x->hits;
				d->errors += x->errors;
				d->timeouts += x->timeouts;
				d->refused += x->refused;
				ks_hist_merge(&d->lat, &x->lat);
			}
		for (s = 0; s < run->nshards; s++) {
			t->shard[s].get_keys += ws[i].shard[s].get_keys;
			t->shard[s].set_keys += ws[i].shard[s].set_keys;
		}
		ld_sources_merge(&t->src, &ws[i].src);
	}
}

static void source_name(const struct ld_source *x, char *buf, size_t len)
{
	ld_addr_text(&x->sa, buf, len);
}

/* ms from the run's start to the first steered reply; < 0: none. */
static double first_steered_ms(const struct ld_run *run,
			       const struct ld_totals *t)
{
	if (!t->src.first_steered_ns)
		return -1;
	return (double)(t->src.first_steered_ns - run->start_ns) / 1e6;
}

static void print_sources_table(const struct ld_run *run,
				const struct ld_totals *t)
{
	char name[INET_ADDRSTRLEN + 8];
	double first = first_steered_ms(run, t);
	__u32 i;

	for (i = 0; i < t->src.n; i++) {
		source_name(&t->src.v[i], name, sizeof(name));
		printf("udp replies from %-21s %10llu\n", name,
		       (unsigned long long)t->src.v[i].replies);
	}
	if (t->src.other)
		printf("udp replies from %-21s %10llu\n", "other",
		       (unsigned long long)t->src.other);
	printf("steered replies %llu", (unsigned long long)t->src.steered);
	if (first >= 0)
		printf(", the first %.1f ms after the start", first);
	printf("\n");
}

static void print_sources_json(const struct ld_run *run,
			       const struct ld_totals *t)
{
	char name[INET_ADDRSTRLEN + 8];
	double first = first_steered_ms(run, t);
	__u32 i;

	printf(",\"replies_by_source\":{");
	for (i = 0; i < t->src.n; i++) {
		source_name(&t->src.v[i], name, sizeof(name));
		printf("%s\"%s\":%llu", i ? "," : "", name,
		       (unsigned long long)t->src.v[i].replies);
	}
	if (t->src.other)
		printf("%s\"other\":%llu", t->src.n ? "," : "",
		       (unsigned long long)t->src.other);
	printf("},\"steered\":%llu,\"first_steered_ms\":",
	       (unsigned long long)t->src.steered);
	if (first >= 0)
		printf("%.3f", first);
	else
		printf("null");
}

static const double quantiles[] = { 0.5, 0.9, 0.99, 0.999 };
static const char *const qnames[] = { "p50", "p90", "p99", "p99.9" };
#define NQ (sizeof(quantiles) / sizeof(quantiles[0]))

void ld_print_table(const struct ld_run *run, const struct ld_totals *t)
{
	const struct ld_cfg *cfg = run->cfg;
	__u64 ops = 0, gets = 0, sets = 0, hits = 0, errs = 0;
	int op, pr;
	__u32 s, q;

	for (op = 0; op < LD_NOPS; op++)
		for (pr = 0; pr < LD_NPROTO; pr++) {
			ops += t->st[op][pr].ops;
			errs += t->st[op][pr].errors;
			hits += t->st[op][pr].hits;
			if (op == LD_SET)
				sets += t->st[op][pr].keys;
			else
				gets += t->st[op][pr].keys;
		}
	printf("ks_load: %.3f s, %llu ops (%.0f/s), proto %s, %u conns, %u shard(s), zipf %g over %u keys, %d flash key(s)\n",
	       t->secs, (unsigned long long)ops,
	       t->secs > 0 ? ops / t->secs : 0, ld_mode_name(cfg->mode),
	       cfg->conns, run->nshards, cfg->zipf, cfg->keys, cfg->nflash);
	printf("%-5s %-5s %10s %10s %10s %10s %8s %8s", "op", "proto", "ops",
	       "keys", "hits", "errors", "timeouts", "");
	for (q = 0; q < NQ; q++)
		printf(" %8s", qnames[q]);
	printf("  (us)\n");
	for (op = 0; op < LD_NOPS; op++)
		for (pr = 0; pr < LD_NPROTO; pr++) {
			const struct ld_opstat *x = &t->st[op][pr];

			if (!x->ops)
				continue;
			printf("%-5s %-5s %10llu %10llu %10llu %10llu %8llu %8s",
			       ld_op_name(op), ld_proto_name(pr),
			       (unsigned long long)x->ops,
			       (unsigned long long)x->keys,
			       (unsigned long long)x->hits,
			       (unsigned long long)x->errors,
			       (unsigned long long)x->timeouts, "");
			for (q = 0; q < NQ; q++)
				printf(" %8.1f",
				       ks_hist_quantile(&x->lat, quantiles[q]) /
					       1e3);
			printf("\n");
		}
	for (op = 0; op < LD_NOPS; op++)
		for (pr = 0; pr < LD_NPROTO; pr++)
			if (t->st[op][pr].refused)
				printf("refused: %s %s %llu (SERVER_ERROR replies)\n",
				       ld_op_name(op), ld_proto_name(pr),
				       (unsigned long long)t->st[op][pr]
					       .refused);
	printf("total: ops %llu get_keys %llu set_keys %llu hits %llu errors %llu\n",
	       (unsigned long long)ops, (unsigned long long)gets,
	       (unsigned long long)sets, (unsigned long long)hits,
	       (unsigned long long)errs);
	for (s = 0; s < run->nshards; s++)
		printf("shard %-21s get_keys %10llu set_keys %10llu\n",
		       run->addr[s].name,
		       (unsigned long long)t->shard[s].get_keys,
		       (unsigned long long)t->shard[s].set_keys);
	if (cfg->mode != LD_MODE_TCP)
		print_sources_table(run, t);
}

void ld_print_json(const struct ld_run *run, const struct ld_totals *t)
{
	const struct ld_cfg *cfg = run->cfg;
	const char *sep = "";
	int op, pr;
	__u32 s, q;

	printf("{\"duration_s\":%.6f,\"proto\":\"%s\",\"conns\":%u,\"rate\":%llu,"
	       "\"keys\":%u,\"zipf\":%g,\"seed\":%llu,\"distribution\":\"%s\",\"ops\":[",
	       t->secs, ld_mode_name(cfg->mode), cfg->conns,
	       (unsigned long long)cfg->rate, cfg->keys, cfg->zipf,
	       (unsigned long long)cfg->seed,
	       run->use_ring ? ks_dist_name(cfg->ring.dist) : "none");
	for (op = 0; op < LD_NOPS; op++)
		for (pr = 0; pr < LD_NPROTO; pr++) {
			const struct ld_opstat *x = &t->st[op][pr];

			if (!x->ops)
				continue;
			printf("%s{\"op\":\"%s\",\"proto\":\"%s\",\"ops\":%llu,\"msgs\":%llu,"
			       "\"keys\":%llu,\"hits\":%llu,\"errors\":%llu,\"timeouts\":%llu,"
			       "\"refused\":%llu,\"latency_us\":{",
			       sep, ld_op_name(op), ld_proto_name(pr),
			       (unsigned long long)x->ops,
			       (unsigned long long)x->msgs,
			       (unsigned long long)x->keys,
			       (unsigned long long)x->hits,
			       (unsigned long long)x->errors,
			       (unsigned long long)x->timeouts,
			       (unsigned long long)x->refused);
			for (q = 0; q < NQ; q++)
				printf("%s\"%s\":%.1f", q ? "," : "", qnames[q],
				       ks_hist_quantile(&x->lat, quantiles[q]) /
					       1e3);
			printf("}}");
			sep = ",";
		}
	printf("],\"shards\":[");
	for (s = 0; s < run->nshards; s++)
		printf("%s{\"addr\":\"%s\",\"get_keys\":%llu,\"set_keys\":%llu}",
		       s ? "," : "", run->addr[s].name,
		       (unsigned long long)t->shard[s].get_keys,
		       (unsigned long long)t->shard[s].set_keys);
	printf("],\"flash\":[");
	for (int i = 0; i < cfg->nflash; i++)
		printf("%s{\"key\":\"%s\",\"share\":%g}", i ? "," : "",
		       cfg->flash[i].key, cfg->flash[i].share);
	printf("]");
	print_sources_json(run, t);
	printf(",\"preload_s\":");
	if (cfg->preload)
		printf("%.3f", t->preload_secs);
	else
		printf("null");
	printf("}\n");
}

int ld_write_exact(const struct ld_run *run)
{
	const struct ld_cfg *cfg = run->cfg;
	size_t n = (size_t)cfg->keys + (size_t)cfg->nflash, i;
	char key[KS_MAX_KEY_LEN + 1];
	FILE *f = fopen(cfg->exact_file, "w");

	if (!f) {
		fprintf(stderr,
			"ks_load: cannot write %s: %s; check the path\n",
			cfg->exact_file, strerror(errno));
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (!run->exact_gets[i] && !run->exact_sets[i])
			continue;
		ld_key_name(run, (__u32)i, key);
		fprintf(f, "%s\t%llu\t%llu\n", key,
			(unsigned long long)run->exact_gets[i],
			(unsigned long long)run->exact_sets[i]);
	}
	if (fclose(f)) {
		fprintf(stderr,
			"ks_load: writing %s failed: %s; check the disk\n",
			cfg->exact_file, strerror(errno));
		return -1;
	}
	return 0;
}
