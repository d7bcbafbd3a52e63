// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Rendering: JSON escaping of key bytes, the JSON document parses (a small
 * strict checker below) and carries the contract's fields, --hash-only
 * hides key bytes, the text dashboard, trace lines.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include "ktest.h"
#include "core/names.h"
#include "render/json.h"
#include "render/report.h"
#include "render/text.h"
#include "cli/cmd_trace.h"
#include "unit.h"

/* Renders into a malloc'd string via a memory stream. Not inlined: gcc
 * 12 then takes the result for a pointer to the local it was returned
 * through (-Wdangling-pointer false positive on comparisons). */
static __attribute__((noinline)) char *render(
	void (*fn)(FILE *, const struct ks_view *), const struct ks_view *v)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	fn(f, v);
	fclose(f);
	return buf;
}

static char *json_of(const __u8 *s, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ks_json_string(f, s, n);
	fclose(f);
	return buf;
}

/* ks_render_totals_text as a renderer of a view, for render(). */
static void totals_text(FILE *f, const struct ks_view *v)
{
	ks_render_totals_text(f, v->totals);
}

static char *render_totals(const struct ks_totals *t)
{
	struct ks_view v = { .totals = t };

	return render(totals_text, &v);
}

/* ---- a strict JSON syntax checker: returns the end or NULL ---- */
static const char *j_value(const char *p, int depth);

static const char *j_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *j_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p != '"') {
		if ((unsigned char)*p < 0x20 || !*p)
			return NULL;
		if (*p == '\\') {
			p++;
			if (*p == 'u') {
				int i;

				for (i = 1; i <= 4; i++)
					if (!isxdigit((unsigned char)p[i]))
						return NULL;
				p += 4;
			} else if (!strchr("\"\\/bfnrt", *p)) {
				return NULL;
			}
		}
		p++;
	}
	return p + 1;
}

static const char *j_number(const char *p)
{
	const char *s = p;

	if (*p == '-')
		p++;
	if (!isdigit((unsigned char)*p))
		return NULL;
	while (isdigit((unsigned char)*p))
		p++;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return NULL;
		while (isdigit((unsigned char)*p))
			p++;
	}
	return p > s ? p : NULL;
}

static const char *j_container(const char *p, int depth, char close, int obj)
{
	p = j_ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (obj) {
			p = j_string(j_ws(p));
			if (!p)
				return NULL;
			p = j_ws(p);
			if (*p++ != ':')
				return NULL;
		}
		p = j_value(p, depth + 1);
		if (!p)
			return NULL;
		p = j_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

static const char *j_value(const char *p, int depth)
{
	if (depth > 16)
		return NULL;
	p = j_ws(p);
	if (*p == '{')
		return j_container(p, depth, '}', 1);
	if (*p == '[')
		return j_container(p, depth, ']', 0);
	if (*p == '"')
		return j_string(p);
	if (!strncmp(p, "true", 4))
		return p + 4;
	if (!strncmp(p, "false", 5))
		return p + 5;
	if (!strncmp(p, "null", 4))
		return p + 4;
	return j_number(p);
}

static int json_valid(const char *doc)
{
	const char *end = j_value(doc, 0);

	return end && *j_ws(end) == '\0';
}

static void fill_report(struct ks_report *r, struct ks_totals *t)
{
	static const __u8 evil[] = "he said \"hi\"\\\n\x01\xff<x>";

	memset(r, 0, sizeof(*r));
	memset(t, 0, sizeof(*t));
	r->version = KS_REPORT_VERSION;
	r->agent_pid = 4242;
	r->sample_n = 8;
	r->interval_ms = 500;
	r->seq = 12;
	r->xdp_mode = 1;
	r->start_ns = 1000000000000ULL;
	r->updated_ns = 1000000000000ULL + 6000000000ULL;
	snprintf(r->ifname, sizeof(r->ifname), "veth-c0");
	r->class_req_mps[KS_CLASS_READ] = 1234567;
	r->class_key_mps[KS_CLASS_WRITE] = 5;
	r->err_mps[KS_ERR_MIDSTREAM] = 2500;
	t->errors[KS_ERR_MIDSTREAM] = 77;
	r->n_top = 3;
	r->top[0].hash = 0x1234abcd5678ef90ULL;
	r->top[0].reads_mps = 100500;
	r->top[0].writes_mps = 2000;
	r->top[0].err_mps = 1250;
	r->top[0].share_ppm = 250000;
	r->top[0].len = (__u16)(sizeof(evil) - 1);
	memcpy(r->top[0].key, evil, sizeof(evil) - 1);
	r->top[1].hash = 2;
	r->top[1].len = 5;
	memcpy(r->top[1].key, "plain", 5);
	r->top[2].hash = 3;
	r->top[2].len = KS_MAX_KEY_LEN;
	memset(r->top[2].key, 'k', KS_MAX_KEY_LEN);
}

static void json_escaping(void)
{
	static const __u8 raw[] = { 'a',  '"',  'b',  '\\', 'c', '\n',
				    0x01, 0x7f, 0xff, '/',  0 };
	char *s;

	kt_begin("json_escapes_key_bytes");
	s = json_of(raw, sizeof(raw));
	CHECK(!strcmp(s, "\"a\\\"b\\\\c\\u000a\\u0001\\u007f\\u00ff/\\u0000\""),
	      "got %s", s);
	CHECK(json_valid(s), "not a JSON string: %s", s);
	free(s);
	s = json_of((const __u8 *)"", 0);
	CHECK(!strcmp(s, "\"\""), "empty key gave %s", s);
	free(s);
	kt_end();

	kt_begin("text_key_escaping_and_cut");
	{
		char buf[16];

		ks_key_text((const __u8 *)"a b\\\x01", 5, buf, sizeof(buf));
		CHECK(!strcmp(buf, "a\\x20b\\\\\\x01"), "got '%s'", buf);
		ks_key_text((const __u8 *)"0123456789abcdefghij", 20, buf,
			    sizeof(buf));
		CHECK(!strcmp(buf, "0123456789ab..."), "got '%s'", buf);
		ks_key_text((const __u8 *)"0123456789abcde", 15, buf,
			    sizeof(buf));
		CHECK(!strcmp(buf, "0123456789abcde"), "exact fit cut: '%s'",
		      buf);
		/* never cuts inside an escape */
		ks_key_text((const __u8 *)"0123456789a\x01\x02\x03", 14, buf,
			    sizeof(buf));
		CHECK(!strcmp(buf, "0123456789a..."), "got '%s'", buf);
	}
	kt_end();
}

static void json_document(void)
{
	struct ks_report *r = malloc(sizeof(*r));
	struct ks_totals t;
	struct ks_view v = { .rep = r,
			     .totals = &t,
			     .agent_alive = 1,
			     .now_ns = 1000000000000ULL + 7500000000ULL,
			     .top = 20 };
	char *doc;
	size_t i;

	fill_report(r, &t);
	kt_begin("json_report_is_valid_and_complete");
	doc = render(ks_render_json, &v);
	CHECK(json_valid(doc), "invalid JSON: %.300s", doc);
	CHECK(!strncmp(doc, "{\"version\":1,", 13), "no version first");
	CHECK(strstr(doc, "\"iface\":\"veth-c0\"") != NULL, "iface");
	CHECK(strstr(doc, "\"agent_pid\":4242,\"agent_alive\":true") != NULL,
	      "pid/alive");
	CHECK(strstr(doc, "\"uptime_s\":7.500") != NULL, "uptime");
	CHECK(strstr(doc, "\"sample_n\":8") != NULL, "sample_n");
	CHECK(strstr(doc, "\"interval_s\":0.500") != NULL, "interval");
	CHECK(strstr(doc, "\"read\":{\"requests_per_s\":1234.567,") != NULL,
	      "read class rate");
	CHECK(strstr(doc, "\"midstream\":{\"per_s\":2.500,\"total\":77}") !=
		      NULL,
	      "midstream error");
	for (i = 0; i < ks_reason_names_n; i++) {
		char want[64];

		snprintf(want, sizeof(want),
			 "\"%s\":{\"per_s\":", ks_reason_names[i]);
		CHECK(strstr(doc, want) != NULL, "reason %s missing",
		      ks_reason_names[i]);
	}
	CHECK(strstr(doc,
		     "\"key\":\"he said \\\"hi\\\"\\\\\\u000a\\u0001\\u00ff<x>\"") !=
		      NULL,
	      "escaped key: %.600s", doc);
	CHECK(strstr(doc,
		     "\"hash\":\"0x1234abcd5678ef90\",\"reads_per_s\":100.500,\"writes_per_s\":2.000,\"share\":0.250000,\"error_bound\":1.250") !=
		      NULL,
	      "top entry fields");
	free(doc);
	kt_end();

	kt_begin("json_hash_only_hides_keys");
	v.hash_only = 1;
	v.agent_alive = 0;
	doc = render(ks_render_json, &v);
	CHECK(json_valid(doc), "invalid JSON");
	CHECK(strstr(doc, "\"key\"") == NULL, "key bytes shown");
	CHECK(strstr(doc, "plain") == NULL, "key bytes shown");
	CHECK(strstr(doc, "\"hash\":\"0x0000000000000002\"") != NULL,
	      "hash missing");
	CHECK(strstr(doc, "\"agent_alive\":false") != NULL, "alive");
	/* a dead agent's uptime stops at its last update */
	CHECK(strstr(doc, "\"uptime_s\":6.000") != NULL, "uptime of dead");
	free(doc);
	kt_end();

	kt_begin("json_top_limit");
	v.hash_only = 0;
	v.top = 1;
	doc = render(ks_render_json, &v);
	CHECK(json_valid(doc), "invalid JSON");
	CHECK(strstr(doc, "plain") == NULL, "second entry shown with top 1");
	free(doc);
	kt_end();

	kt_begin("text_dashboard");
	v.top = 20;
	doc = render(ks_render_text, &v);
	CHECK(strstr(doc, "veth-c0") != NULL, "no interface");
	CHECK(strstr(doc, "4242 (running)") == NULL, "alive shown for dead");
	CHECK(strstr(doc, "sample 1/8") != NULL, "no sample rate");
	CHECK(strstr(doc, "midstream") != NULL, "no error row");
	CHECK(strstr(doc, "not_memcached") == NULL, "zero error row shown");
	CHECK(strstr(doc, "1234.6") != NULL, "no read rate");
	CHECK(strstr(doc, "he\\x20said\\x20\"hi\"\\\\\\x0a\\x01\\xff<x>") !=
		      NULL,
	      "key not escaped: %.900s", doc);
	CHECK(strstr(doc, "\n") != NULL && strstr(doc, "\x01") == NULL,
	      "raw control byte in text");
	CHECK(strstr(doc, "25.00%") != NULL, "no share");
	free(doc);
	v.hash_only = 1;
	doc = render(ks_render_text, &v);
	CHECK(strstr(doc, "0x1234abcd5678ef90") != NULL, "no hash");
	CHECK(strstr(doc, "plain") == NULL, "key shown with hash-only");
	free(doc);
	kt_end();

	/* --sample auto: each CPU's rate, runs of one rate folded */
	kt_begin("report_sample_auto_per_cpu");
	v.hash_only = 0;
	r->sample_n = 32;
	r->sample_target = 500;
	r->ncpu_n = 4;
	r->cpu_n[0] = r->cpu_n[1] = r->cpu_n[2] = 1;
	r->cpu_n[3] = 32;
	doc = render(ks_render_text, &v);
	CHECK(strstr(doc, "sample 1/32") != NULL, "largest rate: %.300s", doc);
	CHECK(strstr(doc,
		     "sample auto, 500 sampled keys/s per CPU aimed at:  cpu 0-2 1/1  cpu 3 1/32\n") !=
		      NULL,
	      "per-CPU line: %.600s", doc);
	free(doc);
	doc = render(ks_render_json, &v);
	CHECK(json_valid(doc), "invalid JSON");
	CHECK(strstr(doc, "\"sample_n\":32,\"interval_s\":0.500,") != NULL,
	      "sample_n: %.300s", doc);
	CHECK(strstr(doc,
		     "\"sample_target\":500,\"sample_cpu_n\":[1,1,1,32],") !=
		      NULL,
	      "per-CPU rates: %.600s", doc);
	/* no placement target: 0, and every CPU placing all (1) */
	CHECK(strstr(doc, "\"place_target\":0,\"place_cpu_p\":[1,1,1,1],") !=
		      NULL,
	      "placement: %.600s", doc);
	free(doc);
	kt_end();

	/* --place-target (issue 27): each CPU's 1 in P of its sampled keys
	 * placed on the ring, beside its sample rate; no line while every
	 * CPU places all */
	kt_begin("report_place_rate_per_cpu");
	r->place_target = 4096;
	r->place_p = 1;
	r->cpu_p[0] = r->cpu_p[1] = r->cpu_p[2] = r->cpu_p[3] = 1;
	doc = render(ks_render_text, &v);
	CHECK(strstr(doc, "ring placement") == NULL, "P 1 shown: %.600s", doc);
	free(doc);
	r->place_p = 64;
	r->cpu_p[3] = 64;
	doc = render(ks_render_text, &v);
	CHECK(strstr(doc,
		     "ring placement, at most ~4096/s per CPU (each counted P):  cpu 0-2 1/1  cpu 3 1/64\n") !=
		      NULL,
	      "per-CPU placement line: %.600s", doc);
	free(doc);
	doc = render(ks_render_json, &v);
	CHECK(json_valid(doc), "invalid JSON");
	CHECK(strstr(doc,
		     "\"sample_cpu_n\":[1,1,1,32],\"place_target\":4096,\"place_cpu_p\":[1,1,1,64],\"seq\"") !=
		      NULL,
	      "per-CPU placement: %.600s", doc);
	free(doc);
	kt_end();
	free(r);
}

static void trace_lines(void)
{
	struct ks_event e = {};
	char line[1200];

	kt_begin("trace_line_format");
	e.cls = KS_CLASS_READ;
	e.op = KS_OP_GETS;
	e.proto = IPPROTO_TCP;
	e.sport = 40000;
	e.saddr[10] = 0xff;
	e.saddr[11] = 0xff;
	inet_pton(AF_INET, "198.18.5.2", e.saddr + 12);
	e.len = 5;
	memcpy(e.key, "k\x01y z", 5);
	e.hash = 0xabc;
	ks_format_event(&e, 0, line, sizeof(line));
	CHECK(!strcmp(line, "read gets k\\x01y\\x20z 198.18.5.2:40000 tcp"),
	      "got '%s'", line);
	ks_format_event(&e, 1, line, sizeof(line));
	CHECK(!strcmp(line,
		      "read gets 0x0000000000000abc 198.18.5.2:40000 tcp"),
	      "got '%s'", line);
	inet_pton(AF_INET6, "2001:db8::1", e.saddr);
	e.proto = IPPROTO_UDP;
	e.cls = KS_CLASS_WRITE;
	e.op = KS_OP_MS;
	ks_format_event(&e, 1, line, sizeof(line));
	CHECK(!strcmp(line,
		      "write ms 0x0000000000000abc [2001:db8::1]:40000 udp"),
	      "got '%s'", line);
	kt_end();
}

/* A ring of n shards, shard i with reads i+1 per second (milli units). */
static struct ks_shard_report *ring_report(__u32 n)
{
	struct ks_shard_report *g = calloc(1, sizeof(*g));
	__u32 i;

	g->version = KS_SHARD_REPORT_VERSION;
	g->nshards = n;
	g->dist = KS_DIST_TWEMPROXY;
	g->self = 0;
	g->busiest = n - 1;
	g->seq = 12;
	g->ring_version = 3;
	g->digest = 0x00ab00cd00ef0012ULL;
	g->pushed_real_ns = 1000000000000ULL + 2500000000ULL;
	g->pushed_mono_ns = 5000;
	g->elapsed_ns = 500000000ULL;
	g->hits_mps = 123456;
	snprintf(g->source, sizeof(g->source), "shards \"a\".txt");
	for (i = 0; i < n; i++) {
		snprintf(g->shards[i].name, sizeof(g->shards[i].name),
			 "10.0.%u.%u:11211", i / 250, i % 250 + 1);
		g->shards[i].reads_mps = (i + 1) * 1000ULL;
		g->shards[i].writes_mps = 250;
		g->shards[i].misdirected_mps = i ? (i + 1) * 1000ULL + 250 : 0;
		g->shards[i].share_ppm = 1000000 / n;
		g->shards[i].ratio_milli = 1000 + i;
		g->shards[i].reads = 10 * i;
		g->shards[i].writes = 7;
		g->shards[i].misdirected = i ? 10 * i + 7 : 0;
		g->shards[i].load_err_mps = 125 * i;
	}
	return g;
}

/* Offset of needle in doc, or -1. */
static long pos(const char *doc, const char *needle)
{
	const char *p = strstr(doc, needle);

	return p ? (long)(p - doc) : -1;
}

static void ring_sections(void)
{
	struct ks_report *r = malloc(sizeof(*r));
	struct ks_shard_report *g = ring_report(4);
	struct ks_misdirect m[2] = {};
	struct ks_totals t;
	struct ks_view v = { .rep = r,
			     .totals = &t,
			     .agent_alive = 1,
			     .now_ns = 1000000000000ULL + 7500000000ULL,
			     .top = 20,
			     .ring = g,
			     .mis = m,
			     .n_mis = 2,
			     .now_mono_ns = 3000000000ULL };
	char *doc;

	fill_report(r, &t);
	m[0].ts_ns = 2000000000ULL;
	m[0].saddr[10] = m[0].saddr[11] = 0xff;
	m[0].saddr[12] = 198;
	m[0].saddr[13] = 18;
	m[0].saddr[15] = 1;
	m[0].sport = 40000;
	m[0].proto = 6;
	m[0].owner = 2;
	m[1].saddr[0] = 0x20;
	m[1].saddr[1] = 0x01;
	m[1].saddr[15] = 7;
	m[1].sport = 5;
	m[1].proto = 17;
	m[1].owner = 99; /* not of this ring: no name */

	kt_begin("json_ring_and_shards");
	doc = render(ks_render_json, &v);
	CHECK(json_valid(doc), "invalid JSON: %.2000s", doc);
	CHECK(strstr(doc,
		     "\"ring\":{\"distribution\":\"twemproxy\",\"version\":3,\"digest\":\"00ab00cd00ef0012\",\"nshards\":4,\"self\":\"10.0.0.1:11211\",\"self_index\":0,") !=
		      NULL,
	      "ring head: %.3000s", doc);
	CHECK(strstr(doc, "\"source\":\"shards \\\"a\\\".txt\"") != NULL,
	      "source not escaped");
	CHECK(strstr(doc, "\"pushed_s_ago\":5.000") != NULL, "push age");
	CHECK(strstr(doc,
		     "\"interval_s\":0.500,\"keys_per_s\":123.456,\"busiest\":3,\"reload_errors\":0,\"last_reload_error\":null,\"purge\":{\"state\":\"off\",\"in_progress\":false,\"purged_total\":0,\"swept_total\":0,\"listed_total\":0,\"refused_total\":0,\"errors_total\":0,\"ring_version\":0,\"passes\":0,\"first_pass_s\":null,\"first_pass_items\":0,\"items_per_s\":0.000,\"rate_limit\":0,\"sweep_rate_limit\":0,\"last_error\":null}}") !=
		      NULL,
	      "ring tail: %.3000s", doc);
	CHECK(strstr(doc,
		     "{\"index\":1,\"name\":\"10.0.0.2:11211\",\"reads_per_s\":2.000,\"writes_per_s\":0.250,\"load_err_per_s\":0.125,\"share\":0.250000,\"ratio_to_mean\":1.001,\"misdirected_per_s\":2.250,\"busiest\":false,\"self\":false,\"reads_total\":10,\"writes_total\":7,\"misdirected_total\":17}") !=
		      NULL,
	      "shard row: %.3000s", doc);
	CHECK(strstr(doc,
		     "\"index\":3,\"name\":\"10.0.0.4:11211\",\"reads_per_s\":4.000") !=
		      NULL,
	      "last shard");
	CHECK(strstr(doc,
		     "\"busiest\":true,\"self\":false,\"reads_total\":30") !=
		      NULL,
	      "busiest flag on shard 3");
	CHECK(strstr(doc, "\"index\":0,\"name\":\"10.0.0.1:11211\"") <
		      strstr(doc, "\"index\":1,"),
	      "shards not in index order");
	CHECK(strstr(doc,
		     "\"misdirected_clients\":[{\"addr\":\"198.18.0.1\",\"port\":40000,\"proto\":\"tcp\",\"owner\":2,\"owner_name\":\"10.0.0.3:11211\",\"age_s\":1.000},{\"addr\":\"2001::7\",\"port\":5,\"proto\":\"udp\",\"owner\":99,\"owner_name\":\"?\",\"age_s\":3.000}]}") !=
		      NULL,
	      "misdirected clients: %.3000s", doc);
	free(doc);
	kt_end();

	kt_begin("json_no_ring");
	v.ring = NULL;
	doc = render(ks_render_json, &v);
	CHECK(json_valid(doc), "invalid JSON");
	CHECK(strstr(doc,
		     "\"ring\":null,\"shards\":[],\"misdirected_clients\":[]}") !=
		      NULL,
	      "no-ring fields: %.2000s", doc);
	free(doc);
	g->version = 0; /* a map the agent never wrote */
	v.ring = g;
	doc = render(ks_render_json, &v);
	CHECK(strstr(doc, "\"ring\":null") != NULL, "unwritten map shown");
	free(doc);
	g->version = KS_SHARD_REPORT_VERSION;
	kt_end();

	kt_begin("json_ring_reload_error_and_no_self");
	g->self = KS_NO_SHARD;
	g->busiest = KS_NO_SHARD;
	g->reload_errors = 2;
	snprintf(g->reload_err, sizeof(g->reload_err),
		 "s.txt:3: port 70000 out of range");
	doc = render(ks_render_json, &v);
	CHECK(json_valid(doc), "invalid JSON");
	CHECK(strstr(doc, "\"self\":null,\"self_index\":null") != NULL,
	      "self null");
	CHECK(strstr(doc,
		     "\"busiest\":null,\"reload_errors\":2,\"last_reload_error\":\"s.txt:3: port 70000 out of range\"") !=
		      NULL,
	      "reload error: %.3000s", doc);
	CHECK(strstr(doc, "\"busiest\":true") == NULL,
	      "a shard marked busiest");
	free(doc);
	doc = render(ks_render_text, &v);
	CHECK(strstr(doc, "self none") != NULL, "text self none");
	CHECK(strstr(doc, "last reload failed") != NULL &&
		      strstr(doc, "s.txt:3: port 70000") != NULL,
	      "text reload error");
	CHECK(strstr(doc, "misdirected clients") == NULL,
	      "misdirected clients shown without self");
	free(doc);
	g->self = 0;
	g->busiest = 3;
	g->reload_err[0] = '\0';
	kt_end();

	kt_begin("text_ring_and_shard_rows");
	doc = render(ks_render_text, &v);
	CHECK(strstr(doc,
		     "ring twemproxy v3 digest 00ab00cd00ef0012   4 shards   self 10.0.0.1:11211 (#0)") !=
		      NULL,
	      "ring line: %.3000s", doc);
	{
		long a = pos(doc, "\n10.0.0.4:11211"),
		     b = pos(doc, "\n10.0.0.3:11211"),
		     c = pos(doc, "\n10.0.0.1:11211"),
		     mark = pos(doc, "<- busiest"),
		     eol = pos(doc + a + 1, "\n");

		CHECK(a >= 0 && b > a && c > b,
		      "rows not busiest first: %.3000s", doc);
		CHECK(mark > a && mark < a + 1 + eol,
		      "busiest not marked on its row");
		/* its +/- (0.375/s) in the column after writes/s */
		CHECK(strstr(doc, "reads/s     writes/s   +/- per s") &&
			      strstr(doc + a, " 0.2         0.4  ") ==
				      doc + a + 53,
		      "+/- column: %.3000s", doc);
	}
	CHECK(strstr(doc, "(self)") != NULL, "self not marked");
	CHECK(strstr(doc, "198.18.0.1:40000 tcp -> #2 10.0.0.3:11211") != NULL,
	      "misdirected client line: %.3000s", doc);
	CHECK(strstr(doc, "more shards") == NULL, "cut with 4 shards");
	free(doc);
	kt_end();

	kt_begin("report_purge_text_and_json");
	doc = render(ks_render_text, &v);
	CHECK(strstr(doc, "purge ") == NULL, "a purge line with none: %.3000s",
	      doc);
	free(doc);
	g->purge = (struct ks_purge_report){ .purged = 726,
					     .swept = 3,
					     .listed = 3000,
					     .refused = 1,
					     .ring_version = 21,
					     .last_ns = 1500000000ULL,
					     .last_items = 726,
					     .rate_mps = 4999500,
					     .state = KS_PURGE_GRACE,
					     .passes = 2,
					     .rate_limit = 5000,
					     .sweep_limit = 200 };
	snprintf(g->purge.why, sizeof(g->purge.why),
		 "ring v19: the change moves 66.8%% of keys");
	doc = render(ks_render_text, &v);
	CHECK(strstr(doc,
		     "purge grace: 726 purged (ring v21: 2 passes, first pass 1.5 s, 5000 items/s, bound 5000/s), 3 swept (bound 200/s), 1 refused, 0 errors\n") !=
			      NULL &&
		      strstr(doc,
			     "purge: last refused or failed: ring v19: the change moves 66.8% of keys\n") !=
			      NULL,
	      "purge lines: %.3000s", doc);
	free(doc);
	doc = render(ks_render_json, &v);
	CHECK(json_valid(doc), "invalid JSON");
	CHECK(strstr(doc,
		     "\"purge\":{\"state\":\"grace\",\"in_progress\":true,\"purged_total\":726,\"swept_total\":3,\"listed_total\":3000,\"refused_total\":1,\"errors_total\":0,\"ring_version\":21,\"passes\":2,\"first_pass_s\":1.500,\"first_pass_items\":726,\"items_per_s\":4999.500,\"rate_limit\":5000,\"sweep_rate_limit\":200,\"last_error\":\"ring v19: the change moves 66.8% of keys\"}") !=
		      NULL,
	      "purge JSON: %.3000s", doc);
	free(doc);
	memset(&g->purge, 0, sizeof(g->purge));
	kt_end();

	kt_begin("text_shards_top_n_of_many");
	free(g);
	g = ring_report(1024);
	v.ring = g;
	v.shards_top = 5;
	doc = render(ks_render_text, &v);
	CHECK(strstr(doc, "... 1019 more shards") != NULL, "no 'more': %.3000s",
	      doc);
	CHECK(strstr(doc, "10.0.4.24:11211") != NULL, "busiest (1023) missing");
	CHECK(strstr(doc, "10.0.4.20:11211") != NULL, "5th busiest missing");
	CHECK(strstr(doc, "10.0.4.19:11211") == NULL, "6th busiest shown");
	free(doc);
	v.shards_top = 0; /* the default: 16 */
	doc = render(ks_render_text, &v);
	CHECK(strstr(doc, "... 1008 more shards") != NULL, "default top");
	free(doc);
	doc = render(ks_render_json, &v);
	CHECK(json_valid(doc), "invalid JSON with 1024 shards");
	CHECK(strstr(doc, "\"index\":1023,") != NULL &&
		      strstr(doc, "\"index\":0,") != NULL,
	      "JSON lists every shard");
	free(doc);
	kt_end();
	free(g);
	free(r);
}

/* ---- the exact totals, the measured interval and the per-key counts ---- */

/* Distinct values in every counter, some past 2^53 (a double would round
 * them) and one at UINT64_MAX. */
static void fill_totals(struct ks_totals *t)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < KS_OP_MAX; i++) {
		t->ops[i].requests = 1000 + i;
		t->ops[i].keys = 2000 + 3 * i;
		t->ops[i].bytes = (1ULL << 60) + 7 * i;
	}
	for (i = 0; i < KS_ERR_MAX; i++)
		t->errors[i] = 90000000000000001ULL + i;
	for (i = 0; i < KS_PKT_MAX; i++)
		t->pkts[i] = 500 + i;
	t->pkts[KS_PKT_SEEN] = ~0ULL;
}

/* The text of doc between "key": and the end of its object, in buf. */
static int json_object(const char *doc, const char *key, char *buf, size_t len)
{
	char want[64];
	const char *p, *q;
	int depth = 0;

	snprintf(want, sizeof(want), "\"%s\":{", key);
	p = strstr(doc, want);
	if (!p)
		return 0;
	p += strlen(want) - 1;
	for (q = p; *q; q++) {
		depth += *q == '{';
		depth -= *q == '}';
		if (!depth)
			break;
	}
	if (!*q || (size_t)(q - p + 2) > len)
		return 0;
	memcpy(buf, p, (size_t)(q - p + 1));
	buf[q - p + 1] = '\0';
	return 1;
}

static void json_totals(void)
{
	struct ks_report *r = malloc(sizeof(*r));
	struct ks_totals t, dummy;
	struct ks_view v = { .rep = r,
			     .totals = &t,
			     .agent_alive = 1,
			     .now_ns = 1000000000000ULL + 7500000000ULL,
			     .top = 20 };
	struct ks_top_count exact[3] = { { 7, 11 },
					 { 0, 0 },
					 { 1ULL << 62, 1 } };
	char *doc, *tot = malloc(65536), want[256];
	__u64 cls_req[KS_CLASS_MAX] = {}, cls_keys[KS_CLASS_MAX] = {};
	__u64 cls_bytes[KS_CLASS_MAX] = {}, resyncs;
	size_t i;

	fill_report(r, &dummy);
	fill_totals(&t);
	r->elapsed_ns = 2000000000ULL + 123456; /* 2000.123456 ms */

	kt_begin("json_totals_exact");
	doc = render(ks_render_json, &v);
	CHECK(json_valid(doc), "invalid JSON: %.300s", doc);
	CHECK(json_object(doc, "totals", tot, 65536), "no totals object");
	for (i = 0; i < ks_op_names_n; i++) {
		__u32 c = ks_op_class((__u32)i);

		snprintf(
			want, sizeof(want),
			"\"%s\":{\"requests\":%llu,\"keys\":%llu,\"bytes\":%llu}",
			ks_op_names[i], (unsigned long long)t.ops[i].requests,
			(unsigned long long)t.ops[i].keys,
			(unsigned long long)t.ops[i].bytes);
		CHECK(strstr(tot, want) != NULL, "op %s: want %s in %.400s",
		      ks_op_names[i], want, tot);
		cls_req[c] += t.ops[i].requests;
		cls_keys[c] += t.ops[i].keys;
		cls_bytes[c] += t.ops[i].bytes;
	}
	for (i = 0; i < KS_CLASS_MAX; i++) {
		snprintf(
			want, sizeof(want),
			"\"%s\":{\"requests\":%llu,\"keys\":%llu,\"bytes\":%llu}",
			ks_class_names[i], (unsigned long long)cls_req[i],
			(unsigned long long)cls_keys[i],
			(unsigned long long)cls_bytes[i]);
		CHECK(strstr(strstr(tot, "\"classes\":{") ?: "", want) != NULL,
		      "class %s: want %s", ks_class_names[i], want);
	}
	/* read: get gets gat gats mg = 5 ops, requests 1000..1004 */
	CHECK(cls_req[KS_CLASS_READ] == 5010, "read requests %llu",
	      (unsigned long long)cls_req[KS_CLASS_READ]);
	for (i = 0; i < ks_reason_names_n; i++) {
		snprintf(want, sizeof(want), "\"%s\":%llu", ks_reason_names[i],
			 (unsigned long long)t.errors[i]);
		CHECK(strstr(strstr(tot, "\"errors\":{") ?: "", want) != NULL,
		      "error %s: want %s", ks_reason_names[i], want);
	}
	for (i = 0; i < ks_pkt_names_n; i++) {
		snprintf(want, sizeof(want), "\"%s\":%llu", ks_pkt_names[i],
			 (unsigned long long)t.pkts[i]);
		CHECK(strstr(strstr(tot, "\"packets\":{") ?: "", want) != NULL,
		      "packet counter %s: want %s", ks_pkt_names[i], want);
	}
	CHECK(strstr(tot, "\"seen\":18446744073709551615") != NULL,
	      "u64 max not exact");
	resyncs = t.pkts[KS_PKT_RESYNC_GAP] + t.pkts[KS_PKT_RESYNC_UNKNOWN] +
		  t.pkts[KS_PKT_RESYNC_CARRY] + t.pkts[KS_PKT_RESYNC_LOST];
	CHECK(ks_totals_resyncs(&t) == resyncs, "resyncs %llu, want %llu",
	      (unsigned long long)ks_totals_resyncs(&t),
	      (unsigned long long)resyncs);
	snprintf(want, sizeof(want), ",\"resyncs\":%llu}",
		 (unsigned long long)resyncs);
	CHECK(strstr(tot, want) != NULL && !strcmp(strstr(tot, want), want),
	      "resyncs last in totals: want %s in %.200s", want, tot);
	CHECK(strncmp(tot, "{\"ops\":{\"get\":", 14) == 0,
	      "totals starts %.40s", tot);
	kt_end();

	kt_begin("json_interval_measured_and_key_counts");
	CHECK(strstr(doc,
		     "\"interval_s\":0.500,\"interval_measured_ms\":2000.123456,") !=
		      NULL,
	      "measured interval: %.400s", doc);
	CHECK(strstr(doc, "\"top_share_of\":\"requests\",\"top\":[") != NULL,
	      "top_share_of");
	/* from the rates: 100.5 reads/s and 2 writes/s over 2.000123456 s */
	CHECK(strstr(doc,
		     "\"error_bound\":1.250,\"reads\":201,\"writes\":4,\"count\":205}") !=
		      NULL,
	      "counts from rates: %.900s", doc);
	free(doc);
	v.top_counts = exact;
	doc = render(ks_render_json, &v);
	CHECK(strstr(doc, "\"reads\":7,\"writes\":11,\"count\":18}") != NULL,
	      "given counts");
	CHECK(strstr(doc,
		     "\"reads\":4611686018427387904,\"writes\":1,\"count\":4611686018427387905}") !=
		      NULL,
	      "given counts exact past 2^53");
	free(doc);
	v.top_counts = NULL;
	r->elapsed_ns = 0; /* before the first interval */
	doc = render(ks_render_json, &v);
	CHECK(strstr(doc, "\"interval_measured_ms\":0.000000,") != NULL,
	      "no interval yet");
	CHECK(strstr(doc, "\"reads\":0,\"writes\":0,\"count\":0}") != NULL,
	      "counts with no interval");
	free(doc);
	/* a long interval: counts rounded from the milli rates */
	r->elapsed_ns = 3600ULL * 1000000000ULL;
	r->top[0].reads_mps = 1000;
	r->top[0].writes_mps = 1;
	doc = render(ks_render_json, &v);
	CHECK(strstr(doc, "\"reads\":3600,\"writes\":4,\"count\":3604}") !=
		      NULL,
	      "hour-long interval: %.900s", doc);
	free(doc);
	kt_end();

	kt_begin("text_top_counts_and_share_named");
	fill_report(r, &dummy);
	r->elapsed_ns = 2000000000ULL;
	doc = render(ks_render_text, &v);
	CHECK(strstr(doc, "share: of all requests") != NULL, "share not named");
	CHECK(strstr(doc, "(measured 2.000 s)") != NULL, "measured interval");
	CHECK(strstr(doc, " count ") != NULL, "no count column");
	CHECK(strstr(doc, "100.5          2.0          205  25.00%") != NULL,
	      "count in the row: %.1200s", doc);
	free(doc);
	kt_end();

	/* Totals as ks_read_totals makes them: ks_ops plus the fast path's
	 * gets from ks_pkts, folded once there; the renderers add nothing. */
	kt_begin("totals_fast_gets_once_in_json_and_text");
	memset(&t, 0, sizeof(t));
	t.ops[KS_OP_GET] = (struct ks_op_stats){ 5, 9, 50 };
	t.ops[KS_OP_SET] = (struct ks_op_stats){ 1, 1, 20 };
	t.pkts[KS_PKT_FAST_GET] = 3;
	t.pkts[KS_PKT_FAST_GET_BYTES] = 3 * 14;
	ks_ops_fold_fast(t.ops, t.pkts);
	doc = render(ks_render_json, &v);
	CHECK(json_valid(doc), "invalid JSON: %.300s", doc);
	CHECK(json_object(doc, "totals", tot, 65536), "no totals object");
	CHECK(strstr(tot,
		     "\"get\":{\"requests\":8,\"keys\":12,\"bytes\":92}") !=
		      NULL,
	      "get: %.400s", tot);
	CHECK(strstr(tot,
		     "\"read\":{\"requests\":8,\"keys\":12,\"bytes\":92}") !=
		      NULL,
	      "read class: %.400s", tot);
	CHECK(strstr(tot, "\"fast_get\":3,\"fast_get_bytes\":42,") != NULL,
	      "fast path counters: %.400s", tot);
	free(doc);
	doc = render_totals(&t);
	CHECK(strstr(doc,
		     "\n  get                     8             12               92\n") !=
		      NULL,
	      "get row: %s", doc);
	CHECK(strstr(doc,
		     "\nall                     9             13              112\n") !=
		      NULL,
	      "all row: %s", doc);
	free(doc);
	kt_end();

	kt_begin("text_totals_tables");
	memset(&t, 0, sizeof(t));
	t.ops[KS_OP_GET] = (struct ks_op_stats){ 7393, 16136, 144072 };
	t.ops[KS_OP_MG] = (struct ks_op_stats){ 7, 7, 70 };
	t.ops[KS_OP_SET] = (struct ks_op_stats){ 607, 607, 73835 };
	t.errors[KS_ERR_REFUSED] = 3;
	t.pkts[KS_PKT_RESYNC_GAP] = 2;
	t.pkts[KS_PKT_RESYNC_LOST] = 5;
	doc = render_totals(&t);
	CHECK(strstr(doc,
		     "\nread                 7400          16143           144142\n") !=
		      NULL,
	      "read row: %s", doc);
	CHECK(strstr(doc,
		     "\nwrite                 607            607            73835\n") !=
		      NULL,
	      "write row: %s", doc);
	CHECK(strstr(doc,
		     "\nall                  8007          16750           217977\n") !=
		      NULL,
	      "all row: %s", doc);
	CHECK(pos(doc, "\nrequests by op\n  op ") > pos(doc, "\nall "),
	      "op table after the classes: %s", doc);
	CHECK(strstr(doc,
		     "\n  get                  7393          16136           144072\n") !=
		      NULL,
	      "get row: %s", doc);
	CHECK(strstr(doc, "\n  mg ") != NULL &&
		      strstr(doc, "\n  gets ") == NULL,
	      "ops with nothing shown, or mg missing: %s", doc);
	CHECK(strstr(doc,
		     "parse errors by reason (packets)\n  refused                       3\n") !=
		      NULL,
	      "errors: %s", doc);
	CHECK(strstr(doc, "resyncs 7 (gap 2, unknown 0, carry 0, lost 5)\n") !=
		      NULL,
	      "resyncs: %s", doc);
	free(doc);
	memset(&t, 0, sizeof(t));
	doc = render_totals(&t);
	CHECK(strstr(doc, "requests by op\n  none\n") != NULL &&
		      strstr(doc, "parse errors: none\n") != NULL &&
		      strstr(doc, "resyncs 0 (") != NULL,
	      "empty totals: %s", doc);
	free(doc);
	kt_end();
	free(tot);
	free(r);
}

void test_report(void)
{
	json_escaping();
	json_document();
	ring_sections();
	json_totals();
	trace_lines();
}
