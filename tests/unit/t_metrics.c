// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The Prometheus exposition of 'agent run' (user/render/metrics.c) rendered from
 * synthetic inputs: exact lines for a sample of metrics, hashes only by
 * default, key labels escaped with --export-keys, every family declared
 * once with HELP and TYPE before its samples, and (when Debian's
 * prometheus package is installed) promtool's own parser and linter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ktest.h"
#include "agent/run_metrics.h"
#include "agent/run_steer.h"
#include "render/metrics.h"
#include "unit.h"

#define NOW_NS   10000000000ULL /* the fixture's CLOCK_MONOTONIC */
#define PROMTOOL "/usr/bin/promtool"

/* A key with every kind of byte the escaping must handle. */
static const char odd_key[] = "a\"b\\c\n\xff";
#define ODD_KEY_LEN (sizeof(odd_key) - 1)

struct fixture {
	struct ks_report rep;
	struct ks_totals totals;
	struct ks_shard_report ring;
	struct ks_hot_table table;
	struct ks_run_steer steer;
	struct ks_metrics_steer steer_view; /* of steer, by the agent's code */
	struct ks_hot_slot slots[KS_HOT_SLOTS];
	struct ks_metrics_in in;
};

static void put_key(__u8 *dst, __u16 *len, const char *key, size_t n)
{
	memcpy(dst, key, n);
	*len = (__u16)n;
}

static void put_slot(struct ks_hot_slot *s, const char *key, __u32 ncopies,
		     __u64 expires_ns, __u64 armed_seq, __u64 write_seq)
{
	s->hash = ut_hash(key);
	put_key(s->key, &s->len, key, strlen(key));
	s->ncopies = ncopies;
	s->expires_ns = expires_ns;
	s->armed_seq = armed_seq;
	s->write_seq = write_seq;
}

/* Two shards, four hot slots (armed, dirty, expired, counted), two
 * replicas (one down), two top keys (one with odd bytes). */
static struct fixture *fixture_new(void)
{
	struct fixture *x = calloc(1, sizeof(*x));
	struct ks_report *r;

	if (!x)
		return NULL;
	r = &x->rep;
	r->sample_n = 8;
	/* two CPUs: one placing every sampled key, one 1 in 64 of them */
	r->ncpu_n = 2;
	r->cpu_n[0] = r->cpu_n[1] = 8;
	r->place_target = 4096;
	r->place_p = 64;
	r->cpu_p[0] = 1;
	r->cpu_p[1] = 64;
	r->interval_ms = 1000;
	r->xdp_mode = 2;
	r->start_ns = 1700000000123000000ULL;
	r->updated_ns = 1700000004123000000ULL;
	r->elapsed_ns = 1500000000ULL;
	snprintf(r->ifname, sizeof(r->ifname), "eth9");
	r->n_top = 2;
	r->top[0].hash = ut_hash("user:1");
	put_key(r->top[0].key, &r->top[0].len, "user:1", 6);
	r->top[0].reads_mps = 1234500;
	r->top[0].err_mps = 50000;
	r->top[1].hash = 0xfeedULL;
	put_key(r->top[1].key, &r->top[1].len, odd_key, ODD_KEY_LEN);
	r->top[1].writes_mps = 2000;

	x->totals.ops[KS_OP_GET] = (struct ks_op_stats){ 100, 150, 4000 };
	x->totals.ops[KS_OP_SET] = (struct ks_op_stats){ 7, 7, 700 };
	x->totals.errors[KS_ERR_UNKNOWN_CMD] = 3;
	x->totals.errors[KS_ERR_NOT_MEMCACHED] = 42;
	x->totals.pkts[KS_PKT_SEEN] = 500;
	x->totals.pkts[KS_PKT_TCP] = 300;
	x->totals.pkts[KS_PKT_UDP] = 100;
	x->totals.pkts[KS_PKT_STEERED] = 9;

	x->ring.nshards = 2;
	x->ring.ring_version = 3;
	x->ring.reload_errors = 1;
	x->ring.purge.purged = 726;
	x->ring.purge.state = KS_PURGE_RUNNING;
	x->ring.purge.rate_mps = 2500500;
	snprintf(x->ring.shards[0].name, KS_SHARD_NAME_LEN, "198.18.0.2:11211");
	snprintf(x->ring.shards[1].name, KS_SHARD_NAME_LEN, "198.18.0.3:11211");
	x->ring.shards[0].reads = 1000;
	x->ring.shards[1].reads = 800;
	x->ring.shards[1].misdirected = 5;
	x->ring.shards[0].ratio_milli = 1250;
	x->ring.shards[1].ratio_milli = 750;
	x->ring.shards[0].reads_mps = 1200500;
	x->ring.shards[0].writes_mps = 100000;
	x->ring.shards[0].load_err_mps = 61250;

	x->table.used = 2;
	x->table.entered = 5;
	x->table.left = 3;
	x->table.evicted = 1;

	put_slot(&x->slots[7], "hot:armed", 3, NOW_NS + 1000000000ULL, 4, 4);
	x->slots[7].reads_mps = 2500000;
	x->slots[7].steered_mps = 2000000;
	put_slot(&x->slots[8], "hot:dirty", 3, NOW_NS + 1000000000ULL, 4, 5);
	put_slot(&x->slots[9], "hot:expired", 3, NOW_NS - 1, 4, 4);
	put_slot(&x->slots[10], "hot:counted", 1, 0, 0, 0);
	x->steer.map.slot = x->slots;
	x->steer.map_open = 1;
	x->steer.fsm.fills = 11;
	x->steer.fsm.fill_errors = 2;
	x->steer.fsm.rearms = 2;
	x->steer.fsm.rearm_ms_sum = 30;
	x->steer.fsm.rearm_ms_max = 20;
	x->steer.arms = 40;
	x->steer.arm_gap_max_ns = 750000000ULL;
	x->steer.rs.n = 2;
	snprintf(x->steer.rs.r[0].text, sizeof(x->steer.rs.r[0].text),
		 "198.18.0.10:11211");
	snprintf(x->steer.rs.r[1].text, sizeof(x->steer.rs.r[1].text),
		 "198.18.0.11:11211");
	x->steer.prev_rep_steered[0] = 77;
	x->steer.fsm.down_until[1] = NOW_NS + 5000000000ULL;
	ks_run_metrics_steer_view(&x->steer_view, &x->steer, NOW_NS);

	x->in = (struct ks_metrics_in){
		.rep = &x->rep,
		.totals = &x->totals,
		.ring = &x->ring,
		.table = &x->table,
		.steer = &x->steer_view,
		.now_mono_ns = NOW_NS,
		.intervals = 4,
		.candidates = 17,
		.candidate_slots = 2048,
		.rss_bytes = 4096,
		.work_ns = 2500000,
		.work_max_ns = 7000000,
		.interval_max_ns = 1750000000ULL,
		.cpu_ns = 3250000000ULL,
		.hk_passes = 5,
		.hk_pass_max_ns = 2500000000ULL,
	};
	return x;
}

/* The rendering as a NUL-terminated string (caller frees). */
static char *render(const struct ks_metrics_in *in)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	ks_metrics_render(f, in);
	fclose(f);
	return buf;
}

/* Whether out has line as a whole line. */
static int has_line(const char *out, const char *line)
{
	size_t n = strlen(line);
	const char *p = out;

	while ((p = strstr(p, line))) {
		if ((p == out || p[-1] == '\n') && p[n] == '\n')
			return 1;
		p++;
	}
	return 0;
}

/* Lines naming a key by hash: fmt has one %llx for ut_hash(key). */
struct keyed_line {
	const char *fmt, *key;
};

static void check_keyed(const char *out, const struct keyed_line *l, size_t n)
{
	char want[256];
	size_t i;

	for (i = 0; i < n; i++) {
		snprintf(want, sizeof(want), l[i].fmt,
			 (unsigned long long)ut_hash(l[i].key));
		CHECK(has_line(out, want), "missing line '%s'", want);
	}
}

static void t_exact_lines(void)
{
	static const struct keyed_line keyed[] = {
		{ "keysteer_top_key_reads_per_second{hash=\"0x%016llx\"} 1234.5",
		  "user:1" },
		{ "keysteer_top_key_error_per_second{hash=\"0x%016llx\"} 50",
		  "user:1" },
		{ "keysteer_hot_key_steered_reads_per_second{hash=\"0x%016llx\"} 2000",
		  "hot:armed" },
		{ "keysteer_hot_key_copies{hash=\"0x%016llx\"} 3",
		  "hot:armed" },
		{ "keysteer_hot_key_state{hash=\"0x%016llx\",state=\"dirty\"} 1",
		  "hot:dirty" },
		{ "keysteer_hot_key_state{hash=\"0x%016llx\",state=\"armed\"} 0",
		  "hot:dirty" },
		{ "keysteer_hot_key_state{hash=\"0x%016llx\",state=\"expired\"} 1",
		  "hot:expired" },
	};
	struct fixture *x = fixture_new();
	char *out;
	size_t i;
	static const char *const lines[] = {
		"# HELP keysteer_requests_total memcached requests parsed, by class and op.",
		"# TYPE keysteer_requests_total counter",
		"keysteer_agent_info{version=\"" KS_VERSION_STR
		"\",interface=\"eth9\",xdp_mode=\"generic\"} 1",
		"keysteer_start_time_seconds 1700000000.123",
		"keysteer_last_interval_timestamp_seconds 1700000004.123",
		"keysteer_resident_memory_bytes 4096",
		"keysteer_agent_cpu_seconds_total 3.25",
		"keysteer_interval_work_cpu_seconds 0.0025",
		"keysteer_interval_work_cpu_max_seconds 0.007",
		"keysteer_sample_ratio 0.125",
		"keysteer_sample_cpu_ratio{cpu=\"1\"} 0.125",
		"keysteer_place_cpu_ratio{cpu=\"0\"} 1",
		"keysteer_place_cpu_ratio{cpu=\"1\"} 0.015625",
		"keysteer_place_target_per_second 4096",
		"keysteer_interval_target_seconds 1",
		"keysteer_interval_duration_seconds 1.5",
		"keysteer_interval_duration_max_seconds 1.75",
		"keysteer_intervals_total 4",
		"keysteer_requests_total{class=\"read\",op=\"get\"} 100",
		"keysteer_keys_total{class=\"read\",op=\"get\"} 150",
		"keysteer_request_bytes_total{class=\"read\",op=\"get\"} 4000",
		"keysteer_request_bytes_total{class=\"write\",op=\"set\"} 700",
		"keysteer_requests_total{class=\"other\",op=\"mn\"} 0",
		"keysteer_parse_errors_total{reason=\"unknown_cmd\"} 3",
		"keysteer_parse_errors_total{reason=\"window\"} 0",
		"keysteer_non_memcached_packets_total 42",
		"keysteer_packets_total 500",
		"keysteer_memcached_packets_total{proto=\"tcp\"} 300",
		"keysteer_memcached_packets_total{proto=\"udp\"} 100",
		"keysteer_steered_reads_total 9",
		"keysteer_candidate_keys 17",
		"keysteer_candidate_slots 2048",
		"keysteer_ring_shards 2",
		"keysteer_ring_version 3",
		"keysteer_ring_reload_errors_total 1",
		"keysteer_purge_items_total 726",
		"keysteer_purge_in_progress 1",
		"keysteer_purge_items_per_second 2500.5",
		"keysteer_purge_refused_total 0",
		"keysteer_shard_reads_total{shard=\"0\",name=\"198.18.0.2:11211\"} 1000",
		"keysteer_shard_reads_total{shard=\"1\",name=\"198.18.0.3:11211\"} 800",
		"keysteer_shard_misdirected_total{shard=\"1\",name=\"198.18.0.3:11211\"} 5",
		"keysteer_shard_load_ratio{shard=\"0\",name=\"198.18.0.2:11211\"} 1.25",
		"keysteer_shard_load_keys_per_second{shard=\"0\",name=\"198.18.0.2:11211\"} 1300.5",
		"keysteer_shard_load_error_keys_per_second{shard=\"0\",name=\"198.18.0.2:11211\"} 61.25",
		"keysteer_shard_load_error_keys_per_second{shard=\"1\",name=\"198.18.0.3:11211\"} 0",
		"keysteer_hot_table_keys 2",
		"keysteer_hot_table_capacity 256",
		"keysteer_hot_table_changes_total{change=\"entered\"} 5",
		"keysteer_hot_table_changes_total{change=\"evicted\"} 1",
		"keysteer_hot_datapath_keys 4",
		"keysteer_hot_slots{state=\"armed\"} 1",
		"keysteer_hot_slots{state=\"dirty\"} 1",
		"keysteer_hot_slots{state=\"expired\"} 1",
		"keysteer_hot_slots{state=\"filling\"} 0",
		"keysteer_hot_slots{state=\"counted\"} 1",
		"keysteer_hot_slots_capacity 1024",
		"keysteer_steer_copies_total 11",
		"keysteer_steer_copy_failures_total 2",
		"# TYPE keysteer_steer_rearm_seconds summary",
		"keysteer_steer_rearm_seconds_sum 0.03",
		"keysteer_steer_rearm_seconds_count 2",
		"keysteer_steer_rearm_max_seconds 0.02",
		"keysteer_steer_arms_total 40",
		"keysteer_steer_arm_gap_max_seconds 0.75",
		"keysteer_housekeeping_passes_total 5",
		"keysteer_housekeeping_pass_max_seconds 2.5",
		"keysteer_replica_steered_reads_total{replica=\"198.18.0.10:11211\"} 77",
		"keysteer_replica_up{replica=\"198.18.0.10:11211\"} 1",
		"keysteer_replica_up{replica=\"198.18.0.11:11211\"} 0",
		"# TYPE keysteer_top_key_reads_per_second gauge",
	};

	kt_begin("metrics_exact_lines");
	out = x ? render(&x->in) : NULL;
	CHECK(out, "no rendering");
	for (i = 0; out && i < sizeof(lines) / sizeof(lines[0]); i++)
		CHECK(has_line(out, lines[i]), "missing line '%s'", lines[i]);
	if (out) {
		check_keyed(out, keyed, sizeof(keyed) / sizeof(keyed[0]));
		/* not_memcached is every other packet: not a parse error */
		CHECK(!strstr(out, "reason=\"not_memcached\""),
		      "not_memcached counted as a parse error");
	}
	free(out);
	free(x);
	kt_end();
}

/* The sample log's drain: its counters only while it runs. */
static void t_sample_log(void)
{
	struct fixture *x = fixture_new();
	char *out;

	kt_begin("metrics_sample_log_drain");
	out = x ? render(&x->in) : NULL;
	CHECK(out && !strstr(out, "keysteer_sample_log_folded_total"),
	      "the drain's counters without a drain");
	free(out);
	if (x) {
		x->in.slog_on = 1;
		x->in.slog_folded = 123456;
		x->in.slog_late = 7;
	}
	out = x ? render(&x->in) : NULL;
	CHECK(out, "no rendering");
	if (out) {
		CHECK(strstr(out,
			     "\nkeysteer_sample_log_folded_total 123456\n"),
		      "folded missing");
		CHECK(strstr(out, "\nkeysteer_sample_log_late_total 7\n"),
		      "late missing");
		CHECK(strstr(out,
			     "# TYPE keysteer_sample_log_late_total counter"),
		      "late's TYPE missing");
	}
	free(out);
	free(x);
	kt_end();
}

static void t_hash_only(void)
{
	struct fixture *x = fixture_new();
	char *out;

	kt_begin("metrics_hash_only_default");
	out = x ? render(&x->in) : NULL;
	CHECK(out, "no rendering");
	if (out) {
		CHECK(!strstr(out, "key=\""),
		      "a key label without --export-keys");
		CHECK(!strstr(out, "user:1") && !strstr(out, "hot:armed"),
		      "key bytes in the output without --export-keys");
		CHECK(strstr(out, "{hash=\"0x000000000000feed\"}"),
		      "the odd key's hash label is missing");
	}
	free(out);
	free(x);
	kt_end();
}

static void t_export_keys(void)
{
	static const struct keyed_line keyed[] = {
		{ "keysteer_top_key_reads_per_second{hash=\"0x%016llx\",key=\"user:1\"} 1234.5",
		  "user:1" },
		{ "keysteer_hot_key_reads_per_second{hash=\"0x%016llx\",key=\"hot:armed\"} 2500",
		  "hot:armed" },
		{ "keysteer_hot_key_state{hash=\"0x%016llx\",key=\"hot:counted\",state=\"counted\"} 1",
		  "hot:counted" },
	};
	struct fixture *x = fixture_new();
	char *out;

	kt_begin("metrics_export_keys_escaped");
	if (x)
		x->in.export_keys = 1;
	out = x ? render(&x->in) : NULL;
	CHECK(out, "no rendering");
	if (out) {
		/* a " b \ c LF 0xff: the text form a"b\\c\x0a\xff, then the
		 * exposition's escapes for the quote and each backslash */
		CHECK(has_line(
			      out,
			      "keysteer_top_key_writes_per_second{hash=\"0x000000000000feed\",key=\"a\\\"b\\\\\\\\c\\\\x0a\\\\xff\"} 2"),
		      "odd key label not escaped as expected");
		check_keyed(out, keyed, sizeof(keyed) / sizeof(keyed[0]));
		CHECK(!strchr(out, '\xff'),
		      "a raw non-ASCII byte in the output");
	}
	free(out);
	free(x);
	kt_end();
}

static void t_no_ring_no_steer(void)
{
	struct fixture *x = fixture_new();
	char *out;

	kt_begin("metrics_without_ring_or_steering");
	if (x) {
		x->in.ring = NULL;
		x->in.steer = NULL;
		x->in.table = NULL;
		x->in.intervals = 0;
	}
	out = x ? render(&x->in) : NULL;
	CHECK(out, "no rendering");
	if (out) {
		CHECK(!strstr(out, "keysteer_shard_") &&
			      !strstr(out, "keysteer_ring_shards"),
		      "per-shard metrics without a ring");
		CHECK(has_line(out, "keysteer_hot_slots{state=\"armed\"} 0") &&
			      has_line(out, "keysteer_hot_table_keys 0") &&
			      has_line(out, "keysteer_steer_copies_total 0"),
		      "hot-key families missing or not zero");
		CHECK(!strstr(out, "keysteer_replica_up{") &&
			      !strstr(out,
				      "keysteer_hot_key_reads_per_second{"),
		      "replica or hot-key series without steering");
		CHECK(has_line(out, "# TYPE keysteer_replica_up gauge"),
		      "a family left out instead of empty");
		CHECK(has_line(out, "keysteer_interval_duration_seconds 0") &&
			      has_line(out, "keysteer_intervals_total 0"),
		      "interval figures before the first interval");
	}
	free(out);
	free(x);
	kt_end();
}

/* ---- structure: what promtool checks, without promtool ---- */

#define MAX_SEEN 2048

struct seen {
	char *s[MAX_SEEN];
	size_t n;
};

/* Adds s; 0 if it was there already (or no room). */
static int seen_add(struct seen *t, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (strlen(t->s[i]) == len && !memcmp(t->s[i], s, len))
			return 0;
	if (t->n == MAX_SEEN)
		return 0;
	t->s[t->n++] = strndup(s, len);
	return 1;
}

static void seen_free(struct seen *t)
{
	while (t->n)
		free(t->s[--t->n]);
}

static int is_sample_of(const char *name, size_t n, const char *fam,
			const char *type)
{
	size_t fl = strlen(fam);

	if (n == fl && !memcmp(name, fam, n))
		return 1;
	if (strcmp(type, "summary") || n <= fl || memcmp(name, fam, fl))
		return 0;
	return (n - fl == 4 && !memcmp(name + fl, "_sum", 4)) ||
	       (n - fl == 6 && !memcmp(name + fl, "_count", 6));
}

/* Checks every line of out; the first problem goes into why. */
static int well_formed(const char *out, char *why, size_t wlen)
{
	struct seen fams = {}, series = {};
	char help[128] = "", fam[128] = "", type[16] = "";
	const char *p = out;
	int ok = 1, lineno = 0;

	while (ok && *p) {
		const char *nl = strchr(p, '\n'), *end;
		size_t len = nl ? (size_t)(nl - p) : strlen(p), n;
		char line[1200];

		lineno++;
		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		p += len + (nl ? 1 : 0);
		if (!nl) {
			snprintf(why, wlen, "line %d has no newline", lineno);
			ok = 0;
		} else if (!strncmp(line, "# HELP ", 7)) {
			sscanf(line + 7, "%127s", help);
		} else if (!strncmp(line, "# TYPE ", 7)) {
			if (sscanf(line + 7, "%127s %15s", fam, type) != 2 ||
			    strcmp(fam, help) ||
			    !seen_add(&fams, fam, strlen(fam))) {
				snprintf(why, wlen, "line %d: '%s' (HELP '%s')",
					 lineno, line, help);
				ok = 0;
			}
		} else {
			char *vend = NULL;

			n = strcspn(line, "{ ");
			end = strrchr(line, ' ');
			if (end)
				strtod(end + 1, &vend);
			if (!is_sample_of(line, n, fam, type) || !end ||
			    vend == end + 1 || *vend ||
			    !seen_add(&series, line, (size_t)(end - line))) {
				snprintf(
					why, wlen,
					"line %d: '%s' (family %s, or a repeat)",
					lineno, line, fam);
				ok = 0;
			}
		}
	}
	seen_free(&fams);
	seen_free(&series);
	return ok;
}

static void t_well_formed(void)
{
	struct fixture *x = fixture_new();
	char *out, why[1400] = "";

	kt_begin("metrics_well_formed");
	if (x)
		x->in.export_keys = 1;
	out = x ? render(&x->in) : NULL;
	CHECK(out && well_formed(out, why, sizeof(why)), "%s", why);
	free(out);
	free(x);
	kt_end();
}

/* promtool reads the exposition on stdin; exit 0 and silence: no problem. */
static void t_promtool(void)
{
	struct fixture *x;
	char *out, cmd[256], msg[400] = "";
	char tmp[] = "/tmp/ks_metrics_promtool.XXXXXX";
	int fd, st;
	FILE *p, *r;

	kt_begin("metrics_promtool_check");
	if (access(PROMTOOL, X_OK)) {
		kt_failf(__FILE__, __LINE__,
			 "%s is not installed (make deps: prometheus)",
			 PROMTOOL);
		kt_end();
		return;
	}
	x = fixture_new();
	if (x)
		x->in.export_keys = 1;
	out = x ? render(&x->in) : NULL;
	fd = mkstemp(tmp);
	CHECK(out && fd >= 0, "no rendering or no temp file");
	if (out && fd >= 0) {
		snprintf(cmd, sizeof(cmd), PROMTOOL " check metrics >%s 2>&1",
			 tmp);
		p = popen(cmd, "w");
		CHECK(p, "cannot run %s", PROMTOOL);
		if (p) {
			fputs(out, p);
			st = pclose(p);
			r = fopen(tmp, "r");
			if (r) {
				msg[fread(msg, 1, sizeof(msg) - 1, r)] = 0;
				fclose(r);
			}
			CHECK(st == 0 && !msg[0], "promtool: status %d: %s", st,
			      msg);
		}
	}
	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	free(out);
	free(x);
	kt_end();
}

void test_metrics(void)
{
	t_exact_lines();
	t_sample_log();
	t_hash_only();
	t_export_keys();
	t_no_ring_no_steer();
	t_well_formed();
	t_promtool();
}
