// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report.c - a published struct ks_report and the datapath's totals as
 * the text report or one JSON document (see report.h).
 */
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include "core/names.h"
#include "util/opts.h"
#include "render/report.h"
#include "core/ring.h"
#include "core/purge.h"
#include "core/shard_rates.h"
#include "render/json.h"
#include "render/report_limit.h"
#include "render/text.h"

#define KEY_COL 40 /* text dashboard: key column width */

void ks_format_duration(__u64 ns, char *buf, size_t len)
{
	__u64 s = ns / 1000000000ULL;

	if (s < 60)
		snprintf(buf, len, "%.1f s", ns / 1e9);
	else if (s < 3600)
		snprintf(buf, len, "%llum%02llus", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%lluh%02llum", s / 3600, (s / 60) % 60);
	else
		snprintf(buf, len, "%llud%02lluh", s / 86400, (s / 3600) % 24);
}

void ks_format_bytes_rate(double bps, char *buf, size_t len)
{
	static const char *const units[] = { "B/s", "KB/s", "MB/s", "GB/s" };
	int u = 0;

	while (bps >= 1000 && u < 3) {
		bps /= 1000;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", bps, units[u]);
}

static double per_s(__u64 mps)
{
	return mps / 1000.0;
}

/* Exact decimal of a milli value, no float rounding in the JSON. */
static void json_milli(FILE *f, __u64 m)
{
	fprintf(f, "%llu.%03llu", m / 1000, m % 1000);
}

static const char *mode_name(__u32 mode)
{
	/* 3: the tc ingress hook (user/dp/attach.h KS_XDP_MODE_TC) */
	return mode == 1   ? "native"
	       : mode == 2 ? "generic"
	       : mode == 3 ? "tc"
			   : "unknown";
}

static __u64 uptime_ns(const struct ks_view *v)
{
	const struct ks_report *r = v->rep;
	__u64 end = v->agent_alive ? v->now_ns : r->updated_ns;

	return end > r->start_ns && r->start_ns ? end - r->start_ns : 0;
}

static int n_top(const struct ks_view *v)
{
	int n = (int)v->rep->n_top;

	if (n > KS_REPORT_TOP)
		n = KS_REPORT_TOP;
	return n < v->top ? n : v->top;
}

/* Each CPU's 1 in N (of v), runs of CPUs at one rate folded ("cpu 0-3
 * 1/1"), to the end of the line. */
static void text_cpu_runs(FILE *f, const __u32 *v, __u32 n)
{
	__u32 i, j;

	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && v[j] == v[i]; j++)
			;
		if (j - i > 1)
			fprintf(f, "  cpu %u-%u 1/%u", i, j - 1,
				v[i] ? v[i] : 1);
		else
			fprintf(f, "  cpu %u 1/%u", i, v[i] ? v[i] : 1);
	}
	fputc('\n', f);
}

/* --sample auto: each CPU's 1 in N of the interval; with a placement
 * target (--place-target), each CPU's 1 in P of its sampled keys placed
 * on the ring, when any CPU placed fewer than all. */
static void text_cpu_n(FILE *f, const struct ks_report *r)
{
	__u32 n = r->ncpu_n < KS_REPORT_CPUS ? r->ncpu_n : KS_REPORT_CPUS;

	if (r->sample_target) {
		fprintf(f, "sample auto, %u sampled keys/s per CPU aimed at:",
			r->sample_target);
		text_cpu_runs(f, r->cpu_n, n);
	}
	if (r->place_target && r->place_p > 1) {
		fprintf(f,
			"ring placement, at most ~%u/s per CPU (each counted P):",
			r->place_target);
		text_cpu_runs(f, r->cpu_p, n);
	}
}

static void text_header(FILE *f, const struct ks_view *v)
{
	const struct ks_report *r = v->rep;
	char up[32], iv[32], age[32];

	ks_format_duration(uptime_ns(v), up, sizeof(up));
	ks_format_seconds(r->interval_ms, iv, sizeof(iv));
	fprintf(f,
		"keysteer %s on %.16s (%s%s)   agent pid %u (%s)   uptime %s\n",
		KS_VERSION_STR, r->ifname, mode_name(r->xdp_mode),
		r->xdp_mode == 3 ? " ingress" : " XDP", r->agent_pid,
		v->agent_alive ? "running" : "not running", up);
	if (!r->updated_ns) {
		snprintf(age, sizeof(age), "no interval yet");
	} else {
		ks_format_duration(v->now_ns > r->updated_ns
					   ? v->now_ns - r->updated_ns
					   : 0,
				   age, sizeof(age));
		strcat(age, " ago");
	}
	fprintf(f,
		"sample 1/%u   interval %s s   interval #%u (measured %.3f s)   updated %s\n",
		r->sample_n ? r->sample_n : 1, iv, r->seq, r->elapsed_ns / 1e9,
		age);
	text_cpu_n(f, r);
	fputc('\n', f);
}

static void text_classes(FILE *f, const struct ks_view *v)
{
	const struct ks_report *r = v->rep;
	double req = 0, keys = 0;
	__u32 c;

	fprintf(f, "%-10s %14s %14s %14s\n", "class", "requests/s", "keys/s",
		"bytes/s");
	for (c = 0; c < KS_CLASS_MAX; c++) {
		char b[32];

		ks_format_bytes_rate(per_s(r->class_byte_mps[c]), b, sizeof(b));
		fprintf(f, "%-10s %14.1f %14.1f %14s\n", ks_class_name(c),
			per_s(r->class_req_mps[c]), per_s(r->class_key_mps[c]),
			b);
		req += per_s(r->class_req_mps[c]);
		keys += per_s(r->class_key_mps[c]);
	}
	fprintf(f, "%-10s %14.1f %14.1f\n\n", "all", req, keys);
}

static void text_errors(FILE *f, const struct ks_view *v)
{
	int any = 0;
	__u32 e;

	for (e = 0; e < KS_ERR_MAX; e++) {
		if (!v->totals->errors[e] && !v->rep->err_mps[e])
			continue;
		if (!any++)
			fprintf(f, "%-16s %12s %14s\n", "parse errors", "per s",
				"total");
		fprintf(f, "%-16s %12.1f %14llu\n", ks_reason_name(e),
			per_s(v->rep->err_mps[e]),
			(unsigned long long)v->totals->errors[e]);
	}
	if (!any)
		fprintf(f, "parse errors: none\n");
	fputc('\n', f);
}

static void text_top(FILE *f, const struct ks_view *v)
{
	const struct ks_report *r = v->rep;
	int i, n = n_top(v);

	fprintf(f,
		"top %d keys (%u sampled keys in the last interval; count: reads+writes in it, share: of all %s)\n",
		n, (unsigned int)r->sampled_total, KS_TOP_SHARE_OF);
	if (!n) {
		fprintf(f, "  (none yet)\n");
		return;
	}
	fprintf(f, "%3s  %-*s %12s %12s %12s %7s %11s\n", "#", KEY_COL, "key",
		"reads/s", "writes/s", "count", "share", "+/- per s");
	for (i = 0; i < n; i++) {
		const struct ks_top_entry *t = &r->top[i];
		struct ks_top_count cnt;
		char key[KEY_COL + 1];

		if (v->hash_only)
			snprintf(key, sizeof(key), "0x%016llx",
				 (unsigned long long)t->hash);
		else
			ks_key_text(t->key,
				    t->len > KS_MAX_KEY_LEN ? KS_MAX_KEY_LEN
							    : t->len,
				    key, sizeof(key));
		ks_top_count_of(v, i, &cnt);
		fprintf(f, "%3d  %-*s %12.1f %12.1f %12llu %6.2f%% %11.1f\n",
			i + 1, KEY_COL, key, per_s(t->reads_mps),
			per_s(t->writes_mps),
			(unsigned long long)(cnt.reads + cnt.writes),
			t->share_ppm / 1e4, per_s(t->err_mps));
	}
}

void ks_totals_classes(const struct ks_totals *t,
		       struct ks_op_stats out[KS_CLASS_MAX])
{
	__u32 op;

	memset(out, 0, sizeof(out[0]) * KS_CLASS_MAX);
	for (op = 0; op < KS_OP_MAX; op++) {
		struct ks_op_stats *c = &out[ks_op_class(op)];

		c->requests += t->ops[op].requests;
		c->keys += t->ops[op].keys;
		c->bytes += t->ops[op].bytes;
	}
}

static int is_resync(size_t counter)
{
	return !strncmp(ks_pkt_names[counter], "resync_", 7);
}

__u64 ks_totals_resyncs(const struct ks_totals *t)
{
	__u64 n = 0;
	size_t k;

	for (k = 0; k < ks_pkt_names_n; k++)
		if (is_resync(k))
			n += t->pkts[k];
	return n;
}

/* round(mps x ns / 10^12): keys in the interval from a milli rate. */
static __u64 mps_times_ns(__u64 mps, __u64 ns)
{
	unsigned __int128 x = (unsigned __int128)mps * ns + 500000000000ULL;

	x /= 1000000000000ULL;
	return x > ~0ULL ? ~0ULL : (__u64)x;
}

void ks_top_count_of(const struct ks_view *v, int i, struct ks_top_count *out)
{
	const struct ks_top_entry *t = &v->rep->top[i];

	if (v->top_counts) {
		*out = v->top_counts[i];
		return;
	}
	out->reads = mps_times_ns(t->reads_mps, v->rep->elapsed_ns);
	out->writes = mps_times_ns(t->writes_mps, v->rep->elapsed_ns);
}

#define COUNT_ROW "%-10s %14llu %14llu %16llu\n"

static void text_count_row(FILE *f, const char *indent, const char *name,
			   const struct ks_op_stats *s)
{
	fprintf(f, "%s" COUNT_ROW, indent, name,
		(unsigned long long)s->requests, (unsigned long long)s->keys,
		(unsigned long long)s->bytes);
}

void ks_render_totals_text(FILE *f, const struct ks_totals *t)
{
	struct ks_op_stats cls[KS_CLASS_MAX], all = {};
	int any = 0;
	size_t k;

	ks_totals_classes(t, cls);
	fprintf(f, "%-10s %14s %14s %16s\n", "class", "requests", "keys",
		"bytes");
	for (k = 0; k < KS_CLASS_MAX; k++) {
		text_count_row(f, "", ks_class_name((unsigned int)k), &cls[k]);
		all.requests += cls[k].requests;
		all.keys += cls[k].keys;
		all.bytes += cls[k].bytes;
	}
	text_count_row(f, "", "all", &all);
	fprintf(f, "requests by op\n");
	for (k = 0; k < ks_op_names_n; k++) {
		const struct ks_op_stats *s = &t->ops[k];

		if (!s->requests && !s->keys && !s->bytes)
			continue;
		if (!any++)
			fprintf(f, "  %-10s %14s %14s %16s\n", "op", "requests",
				"keys", "bytes");
		text_count_row(f, "  ", ks_op_names[k], s);
	}
	if (!any)
		fprintf(f, "  none\n");
	any = 0;
	for (k = 0; k < ks_reason_names_n; k++) {
		if (!t->errors[k])
			continue;
		if (!any++)
			fprintf(f, "parse errors by reason (packets)\n");
		fprintf(f, "  %-16s %14llu\n", ks_reason_names[k],
			(unsigned long long)t->errors[k]);
	}
	if (!any)
		fprintf(f, "parse errors: none\n");
	fprintf(f, "resyncs %llu", (unsigned long long)ks_totals_resyncs(t));
	any = 0;
	for (k = 0; k < ks_pkt_names_n; k++) {
		if (!is_resync(k))
			continue;
		fprintf(f, "%s%s %llu", any++ ? ", " : " (",
			ks_pkt_names[k] + 7, (unsigned long long)t->pkts[k]);
	}
	fprintf(f, "%s\n", any ? ")" : "");
}

static int has_ring(const struct ks_view *v)
{
	return v->ring && v->ring->version && v->ring->nshards &&
	       v->ring->nshards <= KS_MAX_SHARDS;
}

/* A name from the map, NUL-terminated whatever the map held. */
static void shard_name(const struct ks_shard_report *r, __u32 i, char *buf,
		       size_t len)
{
	if (i >= KS_MAX_SHARDS) {
		snprintf(buf, len, "?");
		return;
	}
	snprintf(buf, len, "%.*s", KS_SHARD_NAME_LEN - 1, r->shards[i].name);
}

static const char *proto_name(__u8 proto)
{
	return proto == IPPROTO_TCP   ? "tcp"
	       : proto == IPPROTO_UDP ? "udp"
				      : "?";
}

static __u64 age_ns(__u64 now, __u64 then)
{
	return now > then ? now - then : 0;
}

/* The ownership-loss purge's line (docs/fleet.md): only where it runs or
 * has done something. */
static void text_purge(FILE *f, const struct ks_view *v)
{
	const struct ks_purge_report *p = &v->ring->purge;
	char took[32] = "";

	if (p->state == KS_PURGE_OFF && !p->purged && !p->swept &&
	    !p->refused && !p->errors)
		return;
	if (p->last_ns)
		snprintf(took, sizeof(took), ", first pass %.1f s",
			 p->last_ns / 1e9);
	fprintf(f,
		"purge %s: %llu purged (ring v%llu: %u passes%s, %.0f items/s, bound %u/s), %llu swept (bound %u/s), %llu refused, %llu errors\n",
		ks_purge_state_name(p->state), (unsigned long long)p->purged,
		(unsigned long long)p->ring_version, p->passes, took,
		p->rate_mps / 1000.0, p->rate_limit,
		(unsigned long long)p->swept, p->sweep_limit,
		(unsigned long long)p->refused, (unsigned long long)p->errors);
	if (p->why[0])
		fprintf(f, "purge: last refused or failed: %.*s\n",
			KS_PURGE_WHY_LEN - 1, p->why);
}

static void text_ring_line(FILE *f, const struct ks_view *v)
{
	const struct ks_shard_report *r = v->ring;
	char name[KS_SHARD_NAME_LEN], age[32];

	ks_format_duration(age_ns(v->now_ns, r->pushed_real_ns), age,
			   sizeof(age));
	fprintf(f, "ring %s v%llu digest %016llx   %u shards   ",
		ks_dist_name(r->dist), (unsigned long long)r->ring_version,
		(unsigned long long)r->digest, r->nshards);
	if (r->self < r->nshards) {
		shard_name(r, r->self, name, sizeof(name));
		fprintf(f, "self %s (#%u)", name, r->self);
	} else if (r->self == KS_SELF_OUTSIDE) {
		fprintf(f, "self not in the ring (owns no keys: every request "
			   "here is misdirected)");
	} else {
		fprintf(f, "self none");
	}
	fprintf(f, "   from %.*s, pushed %s ago\n", KS_RING_SOURCE_LEN - 1,
		r->source, age);
	if (r->reload_err[0]) {
		ks_format_duration(age_ns(v->now_ns, r->reload_err_real_ns),
				   age, sizeof(age));
		fprintf(f, "last reload failed %s ago (ring kept): %.*s\n", age,
			KS_RELOAD_ERR_LEN - 1, r->reload_err);
	}
	text_purge(f, v);
}

static void text_shards(FILE *f, const struct ks_view *v)
{
	const struct ks_shard_report *r = v->ring;
	__u32 n = r->nshards, i, shown, *order;
	int top = v->shards_top > 0 ? v->shards_top : KS_SHARDS_TOP_DEFAULT;

	order = malloc(n * sizeof(*order));
	if (!order)
		return;
	ks_shard_order(r, n, order);
	shown = n < (__u32)top ? n : (__u32)top;
	fprintf(f,
		"\nshard load, busiest first (%.1f keys/s placed on the ring in interval #%u;\n"
		"+/- per s: 95%% interval of reads+writes, from the placements)\n",
		per_s(r->hits_mps), r->seq);
	fprintf(f, "%-24s %5s %12s %12s %11s %7s %7s %14s\n", "shard", "#",
		"reads/s", "writes/s", "+/- per s", "share", "x mean",
		"misdirected/s");
	for (i = 0; i < shown; i++) {
		const struct ks_shard_rate *s = &r->shards[order[i]];
		char name[KS_SHARD_NAME_LEN], err[32];

		shard_name(r, order[i], name, sizeof(name));
		if (s->load_err_mps == KS_SHARD_ERR_UNKNOWN)
			snprintf(err, sizeof(err), "-");
		else
			snprintf(err, sizeof(err), "%.1f",
				 per_s(s->load_err_mps));
		fprintf(f,
			"%-24s %5u %12.1f %12.1f %11s %6.2f%% %7.2f %14.1f%s%s\n",
			name, order[i], per_s(s->reads_mps),
			per_s(s->writes_mps), err, s->share_ppm / 1e4,
			s->ratio_milli / 1000.0, per_s(s->misdirected_mps),
			order[i] == r->busiest ? "  <- busiest" : "",
			order[i] == r->self ? "  (self)" : "");
	}
	if (shown < n)
		fprintf(f, "  ... %u more shards (--shards-top N shows more)\n",
			n - shown);
	free(order);
}

static void text_misdirected(FILE *f, const struct ks_view *v)
{
	size_t i;

	if (v->ring->self >= v->ring->nshards &&
	    v->ring->self != KS_SELF_OUTSIDE)
		return;
	if (!v->n_mis) {
		fprintf(f,
			"\nmisdirected clients: none since the ring was pushed\n");
		return;
	}
	fprintf(f,
		"\nmisdirected clients, newest first (their ring gives the key to another shard)\n");
	for (i = 0; i < v->n_mis; i++) {
		const struct ks_misdirect *m = &v->mis[i];
		char ip[64], name[KS_SHARD_NAME_LEN], age[32];

		ks_format_ip(m->saddr, ip, sizeof(ip));
		shard_name(v->ring, m->owner, name, sizeof(name));
		ks_format_duration(age_ns(v->now_mono_ns, m->ts_ns), age,
				   sizeof(age));
		fprintf(f, "  %s:%u %s -> #%u %s   %s ago\n", ip, m->sport,
			proto_name(m->proto), m->owner, name, age);
	}
}

static void text_ring(FILE *f, const struct ks_view *v)
{
	fputc('\n', f);
	if (!has_ring(v)) {
		fprintf(f,
			"ring: none (run the agent with --shards or --shards-file for per-shard load)\n");
		return;
	}
	text_ring_line(f, v);
	text_shards(f, v);
	text_misdirected(f, v);
}

void ks_render_text(FILE *f, const struct ks_view *v)
{
	text_header(f, v);
	text_classes(f, v);
	text_errors(f, v);
	text_top(f, v);
	text_ring(f, v);
	if (v->hot)
		ks_render_hot_text(f, v->hot);
	if (v->limits)
		ks_render_limit_text(f, v->limits);
}

static void json_class(FILE *f, const struct ks_report *r, __u32 c)
{
	fprintf(f, "\"%s\":{\"requests_per_s\":", ks_class_name(c));
	json_milli(f, r->class_req_mps[c]);
	fprintf(f, ",\"keys_per_s\":");
	json_milli(f, r->class_key_mps[c]);
	fprintf(f, ",\"bytes_per_s\":");
	json_milli(f, r->class_byte_mps[c]);
	fputc('}', f);
}

static void json_top_entry(FILE *f, const struct ks_view *v, int i)
{
	const struct ks_top_entry *t = &v->rep->top[i];
	struct ks_top_count cnt;

	ks_top_count_of(v, i, &cnt);
	fputc('{', f);
	if (!v->hash_only) {
		fprintf(f, "\"key\":");
		ks_json_string(f, t->key,
			       t->len > KS_MAX_KEY_LEN ? KS_MAX_KEY_LEN
						       : t->len);
		fputc(',', f);
	}
	fprintf(f, "\"hash\":\"0x%016llx\",\"reads_per_s\":",
		(unsigned long long)t->hash);
	json_milli(f, t->reads_mps);
	fprintf(f, ",\"writes_per_s\":");
	json_milli(f, t->writes_mps);
	fprintf(f,
		",\"share\":%u.%06u,\"error_bound\":", t->share_ppm / 1000000,
		t->share_ppm % 1000000);
	json_milli(f, t->err_mps);
	fprintf(f, ",\"reads\":%llu,\"writes\":%llu,\"count\":%llu}",
		(unsigned long long)cnt.reads, (unsigned long long)cnt.writes,
		(unsigned long long)(cnt.reads + cnt.writes));
}

static void json_op_stats(FILE *f, const char *name,
			  const struct ks_op_stats *s)
{
	fprintf(f, "\"%s\":{\"requests\":%llu,\"keys\":%llu,\"bytes\":%llu}",
		name, (unsigned long long)s->requests,
		(unsigned long long)s->keys, (unsigned long long)s->bytes);
}

/* ,"totals":{...}: the exact counters, every name of every table. */
static void json_totals(FILE *f, const struct ks_totals *t)
{
	struct ks_op_stats cls[KS_CLASS_MAX];
	size_t k;

	ks_totals_classes(t, cls);
	fprintf(f, ",\"totals\":{\"ops\":{");
	for (k = 0; k < ks_op_names_n; k++) {
		if (k)
			fputc(',', f);
		json_op_stats(f, ks_op_names[k], &t->ops[k]);
	}
	fprintf(f, "},\"classes\":{");
	for (k = 0; k < KS_CLASS_MAX; k++) {
		if (k)
			fputc(',', f);
		json_op_stats(f, ks_class_name((unsigned int)k), &cls[k]);
	}
	fprintf(f, "},\"errors\":{");
	for (k = 0; k < ks_reason_names_n; k++)
		fprintf(f, "%s\"%s\":%llu", k ? "," : "", ks_reason_names[k],
			(unsigned long long)t->errors[k]);
	fprintf(f, "},\"packets\":{");
	for (k = 0; k < ks_pkt_names_n; k++)
		fprintf(f, "%s\"%s\":%llu", k ? "," : "", ks_pkt_names[k],
			(unsigned long long)t->pkts[k]);
	fprintf(f, "},\"resyncs\":%llu}",
		(unsigned long long)ks_totals_resyncs(t));
}

static void json_name(FILE *f, const struct ks_shard_report *r, __u32 i)
{
	char name[KS_SHARD_NAME_LEN];

	shard_name(r, i, name, sizeof(name));
	ks_json_string(f, (const __u8 *)name, strlen(name));
}

static void json_ns_as_s(FILE *f, __u64 ns)
{
	fprintf(f, "%llu.%03llu", ns / 1000000000ULL, (ns / 1000000ULL) % 1000);
}

static void json_purge(FILE *f, const struct ks_purge_report *p)
{
	fprintf(f,
		",\"purge\":{\"state\":\"%s\",\"in_progress\":%s,\"purged_total\":%llu,\"swept_total\":%llu,\"listed_total\":%llu,\"refused_total\":%llu,\"errors_total\":%llu,\"ring_version\":%llu,\"passes\":%u,\"first_pass_s\":",
		ks_purge_state_name(p->state),
		p->state == KS_PURGE_RUNNING || p->state == KS_PURGE_GRACE
			? "true"
			: "false",
		(unsigned long long)p->purged, (unsigned long long)p->swept,
		(unsigned long long)p->listed, (unsigned long long)p->refused,
		(unsigned long long)p->errors,
		(unsigned long long)p->ring_version, p->passes);
	if (p->last_ns)
		json_ns_as_s(f, p->last_ns);
	else
		fprintf(f, "null");
	fprintf(f, ",\"first_pass_items\":%llu,\"items_per_s\":",
		(unsigned long long)p->last_items);
	json_milli(f, p->rate_mps);
	fprintf(f, ",\"rate_limit\":%u,\"sweep_rate_limit\":%u,\"last_error\":",
		p->rate_limit, p->sweep_limit);
	if (p->why[0])
		ks_json_string(f, (const __u8 *)p->why,
			       strnlen(p->why, sizeof(p->why)));
	else
		fprintf(f, "null");
	fputc('}', f);
}

static void json_ring_head(FILE *f, const struct ks_view *v)
{
	const struct ks_shard_report *r = v->ring;

	fprintf(f,
		"\"ring\":{\"distribution\":\"%s\",\"version\":%llu,\"digest\":\"%016llx\",\"nshards\":%u,\"self\":",
		ks_dist_name(r->dist), (unsigned long long)r->ring_version,
		(unsigned long long)r->digest, r->nshards);
	if (r->self < r->nshards) {
		json_name(f, r, r->self);
		fprintf(f, ",\"self_index\":%u", r->self);
	} else {
		fprintf(f, "null,\"self_index\":null");
	}
	/* null: no --self; false: a shard the ring does not have */
	fprintf(f, ",\"self_in_ring\":%s",
		r->self < r->nshards         ? "true"
		: r->self == KS_SELF_OUTSIDE ? "false"
					     : "null");
	fprintf(f, ",\"source\":");
	ks_json_string(f, (const __u8 *)r->source,
		       strnlen(r->source, sizeof(r->source)));
	fprintf(f, ",\"pushed_s_ago\":");
	json_ns_as_s(f, age_ns(v->now_ns, r->pushed_real_ns));
	fprintf(f, ",\"seq\":%u,\"interval_s\":", r->seq);
	json_ns_as_s(f, r->elapsed_ns);
	fprintf(f, ",\"keys_per_s\":");
	json_milli(f, r->hits_mps);
	fprintf(f, ",\"busiest\":");
	if (r->busiest < r->nshards)
		fprintf(f, "%u", r->busiest);
	else
		fprintf(f, "null");
	fprintf(f, ",\"reload_errors\":%u,\"last_reload_error\":",
		r->reload_errors);
	if (r->reload_err[0])
		ks_json_string(f, (const __u8 *)r->reload_err,
			       strnlen(r->reload_err, sizeof(r->reload_err)));
	else
		fprintf(f, "null");
	json_purge(f, &r->purge);
	fputc('}', f);
}

static void json_shard(FILE *f, const struct ks_shard_report *r, __u32 i)
{
	const struct ks_shard_rate *s = &r->shards[i];

	fprintf(f, "{\"index\":%u,\"name\":", i);
	json_name(f, r, i);
	fprintf(f, ",\"reads_per_s\":");
	json_milli(f, s->reads_mps);
	fprintf(f, ",\"writes_per_s\":");
	json_milli(f, s->writes_mps);
	/* the +/- of reads_per_s + writes_per_s: a 95% interval */
	fprintf(f, ",\"load_err_per_s\":");
	if (s->load_err_mps == KS_SHARD_ERR_UNKNOWN)
		fputs("null", f);
	else
		json_milli(f, s->load_err_mps);
	fprintf(f,
		",\"share\":%u.%06u,\"ratio_to_mean\":", s->share_ppm / 1000000,
		s->share_ppm % 1000000);
	json_milli(f, s->ratio_milli);
	fprintf(f, ",\"misdirected_per_s\":");
	json_milli(f, s->misdirected_mps);
	fprintf(f,
		",\"busiest\":%s,\"self\":%s,\"reads_total\":%llu,\"writes_total\":%llu,\"misdirected_total\":%llu}",
		i == r->busiest ? "true" : "false",
		i == r->self ? "true" : "false", (unsigned long long)s->reads,
		(unsigned long long)s->writes,
		(unsigned long long)s->misdirected);
}

static void json_misdirected(FILE *f, const struct ks_view *v,
			     const struct ks_misdirect *m)
{
	char ip[64];

	ks_format_ip(m->saddr, ip, sizeof(ip));
	fprintf(f,
		"{\"addr\":\"%s\",\"port\":%u,\"proto\":\"%s\",\"owner\":%u,\"owner_name\":",
		ip, m->sport, proto_name(m->proto), m->owner);
	json_name(f, v->ring,
		  m->owner < v->ring->nshards ? m->owner : KS_MAX_SHARDS);
	fprintf(f, ",\"age_s\":");
	json_ns_as_s(f, age_ns(v->now_mono_ns, m->ts_ns));
	fputc('}', f);
}

void ks_render_json_shard_rows(FILE *f, const struct ks_shard_report *r)
{
	__u32 i;

	fputc('[', f);
	for (i = 0; i < r->nshards && i < KS_MAX_SHARDS; i++) {
		if (i)
			fputc(',', f);
		json_shard(f, r, i);
	}
	fputc(']', f);
}

/* ,"ring":..,"shards":[..],"misdirected_clients":[..]; every shard, in
 * index order (--shards-top limits the text only). */
static void json_ring(FILE *f, const struct ks_view *v)
{
	__u32 i;

	if (!has_ring(v)) {
		fprintf(f,
			",\"ring\":null,\"shards\":[],\"misdirected_clients\":[]");
		return;
	}
	fputc(',', f);
	json_ring_head(f, v);
	fprintf(f, ",\"shards\":");
	ks_render_json_shard_rows(f, v->ring);
	fprintf(f, ",\"misdirected_clients\":[");
	for (i = 0; i < v->n_mis; i++) {
		if (i)
			fputc(',', f);
		json_misdirected(f, v, &v->mis[i]);
	}
	fputc(']', f);
}

void ks_render_json(FILE *f, const struct ks_view *v)
{
	const struct ks_report *r = v->rep;
	char ifname[sizeof(r->ifname) + 1];
	__u64 up = uptime_ns(v);
	int i, n = n_top(v);
	__u32 c;

	memcpy(ifname, r->ifname, sizeof(r->ifname));
	ifname[sizeof(r->ifname)] = '\0';
	fprintf(f, "{\"version\":%d,\"iface\":", KS_REPORT_VERSION);
	ks_json_string(f, (const __u8 *)ifname, strlen(ifname));
	fprintf(f, ",\"xdp_mode\":\"%s\",\"agent_pid\":%u,\"agent_alive\":%s,",
		mode_name(r->xdp_mode), r->agent_pid,
		v->agent_alive ? "true" : "false");
	fprintf(f,
		"\"uptime_s\":%llu.%03llu,\"sample_n\":%u,\"interval_s\":%u.%03u,",
		up / 1000000000ULL, (up / 1000000ULL) % 1000,
		r->sample_n ? r->sample_n : 1, r->interval_ms / 1000,
		r->interval_ms % 1000);
	/* exact: the nanoseconds as a millisecond decimal */
	fprintf(f, "\"interval_measured_ms\":%llu.%06llu,",
		(unsigned long long)(r->elapsed_ns / 1000000ULL),
		(unsigned long long)(r->elapsed_ns % 1000000ULL));
	/* the rate each CPU sampled the interval at; auto's target or 0 */
	fprintf(f, "\"sample_target\":%u,\"sample_cpu_n\":[", r->sample_target);
	for (c = 0; c < r->ncpu_n && c < KS_REPORT_CPUS; c++)
		fprintf(f, "%s%u", c ? "," : "", r->cpu_n[c]);
	/* the placement's target (0: off) and each CPU's 1 in P of its
	 * sampled keys placed on the ring */
	fprintf(f, "],\"place_target\":%u,\"place_cpu_p\":[", r->place_target);
	for (c = 0; c < r->ncpu_n && c < KS_REPORT_CPUS; c++)
		fprintf(f, "%s%u", c ? "," : "", r->cpu_p[c] ? r->cpu_p[c] : 1);
	fputs("],", f);
	fprintf(f, "\"seq\":%u,\"sampled_keys\":%llu,\"classes\":{", r->seq,
		(unsigned long long)r->sampled_total);
	for (c = 0; c < KS_CLASS_MAX; c++) {
		if (c)
			fputc(',', f);
		json_class(f, r, c);
	}
	fprintf(f, "},\"errors\":{");
	for (c = 0; c < KS_ERR_MAX; c++) {
		fprintf(f, "%s\"%s\":{\"per_s\":", c ? "," : "",
			ks_reason_name(c));
		json_milli(f, r->err_mps[c]);
		fprintf(f, ",\"total\":%llu}",
			(unsigned long long)v->totals->errors[c]);
	}
	fputc('}', f);
	json_totals(f, v->totals);
	fprintf(f, ",\"top_share_of\":\"%s\",\"top\":[", KS_TOP_SHARE_OF);
	for (i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		json_top_entry(f, v, i);
	}
	fputc(']', f);
	json_ring(f, v);
	if (v->hot)
		ks_render_hot_json(f, v->hot);
	if (v->limits)
		ks_render_limit_json(f, v->limits);
	fprintf(f, "}\n");
}

void ks_view_opts_init(struct ks_view_opts *v)
{
	memset(v, 0, sizeof(*v));
	v->top = 20;
	v->shards_top = KS_SHARDS_TOP_DEFAULT;
}

int ks_view_opt(struct ks_view_opts *v, int c, const char *arg, char *err,
		size_t errlen)
{
	unsigned long long n;

	switch (c) {
	case 't':
		if (ks_parse_uint("--top", arg, 1, KS_REPORT_TOP, &n, err,
				  errlen))
			return -1;
		v->top = (int)n;
		return 1;
	case 'j':
		v->json = 1;
		return 1;
	case 'H':
		v->hash_only = 1;
		return 1;
	case 'T':
		if (ks_parse_uint("--shards-top", arg, 1, KS_MAX_SHARDS, &n,
				  err, errlen))
			return -1;
		v->shards_top = (int)n;
		return 1;
	default:
		return 0;
	}
}
