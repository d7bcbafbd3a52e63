// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metrics.c - the Prometheus exposition of 'agent run' (see metrics.h and
 * docs/metrics.md). Every family is written whole, HELP and TYPE first,
 * so a scrape always lists the same names whatever the traffic; only
 * per-key, per-shard and per-replica series come and go.
 */
#include <string.h>
#include "render/metrics.h"
#include "core/limits.h"
#include "core/balance.h"
#include "core/names.h"
#include "render/report_hot.h"
#include "render/text.h"

#define KEY_TEXT_MAX (KS_KEY_BUF * 4 + 8) /* every byte as \xNN */

/* The states ks_hot_state_name gives a slot, in the order exported. */
static const char *const slot_states[] = {
	"armed", "dirty", "expired", "filling", "counted",
};
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SLOT_STATES  ARRAY_LEN(slot_states)

/* Datapath counters exported one family each (ks_pkt_counters). The
 * memcached packets by protocol are one family of their own. */
static const struct {
	enum ks_pkt_counter idx;
	const char *name, *help;
} pkt_families[] = {
	{ KS_PKT_SEEN, "keysteer_packets_total",
	  "Packets the XDP program ran on." },
	{ KS_PKT_SAMPLED, "keysteer_sampled_keys_total",
	  "Keys sampled into the count-min sketch (1 in N)." },
	{ KS_PKT_CAND_INSERT, "keysteer_candidate_inserts_total",
	  "Keys taken into a candidate table." },
	{ KS_PKT_CAND_EVICT, "keysteer_candidate_evictions_total",
	  "Candidate keys evicted by a heavier newcomer." },
	{ KS_PKT_TRACE_DROP, "keysteer_trace_events_dropped_total",
	  "Trace events lost to a full ring buffer." },
	{ KS_PKT_RING_HIT, "keysteer_ring_sampled_keys_total",
	  "Sampled keys placed on the ring, 1 in P of them under --place-target (not scaled by N or P)." },
	{ KS_PKT_MISDIRECTED, "keysteer_ring_sampled_misdirected_keys_total",
	  "Placed keys the ring gives to another shard than this host's (not scaled by N or P)." },
	{ KS_PKT_HOT_READ, "keysteer_hot_key_reads_total",
	  "Reads of keys in the datapath's hot-key slots." },
	{ KS_PKT_HOT_WRITE, "keysteer_hot_key_writes_total",
	  "Writes of keys in the datapath's hot-key slots." },
	{ KS_PKT_STEERED, "keysteer_steered_reads_total",
	  "UDP gets rewritten towards an L1 replica." },
	{ KS_PKT_STEER_NO_ROUTE, "keysteer_steer_no_route_total",
	  "UDP gets of armed keys kept at the owner: no route or neighbour." },
	{ KS_PKT_STEER_FAMILY, "keysteer_steer_family_mismatch_total",
	  "UDP gets of armed keys kept at the owner: the frame's IP family is not the replicas'." },
	{ KS_PKT_STEER_SHAPE, "keysteer_steer_unsupported_header_total",
	  "UDP gets of armed keys kept at the owner: IPv4 options, IPv6 extension headers, hop limit <= 1 or IPv6 UDP checksum 0." },
	{ KS_PKT_RING_UNPLACED, "keysteer_ring_unplaced_keys_total",
	  "Sampled keys the datapath cannot place on the ring: pymemcache keys with a byte >= 0x80 (not scaled by N)." },
	{ KS_PKT_SLOG, "keysteer_sample_log_keys_total",
	  "Sampled keys the datapath appended to its sample log for the agent to fold (of the sampled keys)." },
	{ KS_PKT_SLOG_FULL, "keysteer_sample_log_full_total",
	  "Sampled keys the in-kernel sketch took because the CPU's sample log was full (of the sampled keys)." },
};

static void family(FILE *f, const char *name, const char *type,
		   const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A value: integral ones exactly, others with 15 significant digits. */
static void value(FILE *f, double v)
{
	fprintf(f, " %.15g\n", v);
}

static void count(FILE *f, __u64 v)
{
	fprintf(f, " %llu\n", (unsigned long long)v);
}

/* A label value escaped for the exposition format. */
static void label_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* name="value" for free text (keys, shard names): printable ASCII as is,
 * other bytes as \xNN (ks_key_text), so the value is always valid UTF-8. */
static void label_bytes(FILE *f, const char *name, const __u8 *b, size_t len)
{
	char text[KEY_TEXT_MAX];

	ks_key_text(b, len, text, sizeof(text));
	fprintf(f, "%s=\"", name);
	label_escaped(f, text);
	fputc('"', f);
}

/* A NUL-terminated field of size bytes (the NUL may be missing). */
static void label_str(FILE *f, const char *name, const char *s, size_t size)
{
	label_bytes(f, name, (const __u8 *)s, strnlen(s, size));
}

/* {hash="0x..."[,key="..."] (left open for more labels) */
static void key_labels(FILE *f, const struct ks_metrics_in *in, __u64 hash,
		       const __u8 *key, size_t len)
{
	fprintf(f, "{hash=\"0x%016llx\"", (unsigned long long)hash);
	if (in->export_keys) {
		fputc(',', f);
		label_bytes(f, "key", key, len);
	}
}

/* A family of one sample without labels. */
struct scalar {
	const char *name, *type, *help;
	__u64 n;  /* the value, unless real */
	double x; /* the value when real */
	int real;
};

static void scalars(FILE *f, const struct scalar *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		family(f, s[i].name, s[i].type, s[i].help);
		fputs(s[i].name, f);
		if (s[i].real)
			value(f, s[i].x);
		else
			count(f, s[i].n);
	}
}

/* A family with one label over a fixed set of values: name{label="v"} n. */
static void label_set(FILE *f, const char *name, const char *type,
		      const char *help, const char *label,
		      const char *const *vals, const __u64 *n, size_t k)
{
	size_t i;

	family(f, name, type, help);
	for (i = 0; i < k; i++) {
		fprintf(f, "%s{%s=\"%s\"}", name, label, vals[i]);
		count(f, n[i]);
	}
}

/* One gauge of each CPU's 1/N of the last interval (0 read as 1). */
static void cpu_ratio(FILE *f, const char *name, const char *help,
		      const __u32 *n, __u32 ncpu)
{
	__u32 i;

	family(f, name, "gauge", help);
	for (i = 0; i < ncpu && i < KS_REPORT_CPUS; i++)
		fprintf(f, "%s{cpu=\"%u\"} %.9g\n", name, i,
			n[i] ? 1.0 / n[i] : 1.0);
}

/* The rate in force on each CPU in the last interval (--sample auto sets
 * each its own; --sample N gives every CPU N), and the ring placement's
 * 1 in P of the sampled keys (--place-target). */
static void sample_cpu_metrics(FILE *f, const struct ks_report *r)
{
	cpu_ratio(
		f, "keysteer_sample_cpu_ratio",
		"Fraction of keys sampled on each CPU in the last interval (1/N).",
		r->cpu_n, r->ncpu_n);
	family(f, "keysteer_sample_target_keys_per_second", "gauge",
	       "--sample auto: sampled keys per second per CPU aimed at (0: a fixed --sample N).");
	fprintf(f, "keysteer_sample_target_keys_per_second %u\n",
		r->sample_target);
	cpu_ratio(
		f, "keysteer_place_cpu_ratio",
		"Fraction of the sampled keys placed on the ring on each CPU in the last interval (1/P; each placed key counts P for its shard).",
		r->cpu_p, r->ncpu_n);
	family(f, "keysteer_place_target_per_second", "gauge",
	       "--place-target: ring placements per second per CPU above which 1 in P sampled keys is placed (0: every one).");
	fprintf(f, "keysteer_place_target_per_second %u\n", r->place_target);
}

static void agent_metrics(FILE *f, const struct ks_metrics_in *in)
{
	const struct ks_report *r = in->rep;
	const struct scalar sc[] = {
		{ "keysteer_start_time_seconds", "gauge",
		  "When the agent started, seconds since the Unix epoch.",
		  .x = r->start_ns / 1e9, .real = 1 },
		{ "keysteer_resident_memory_bytes", "gauge",
		  "The agent's resident memory.", .n = in->rss_bytes },
		{ "keysteer_agent_cpu_seconds_total", "counter",
		  "CPU the agent used since it started, every thread, user and system.",
		  .x = in->cpu_ns / 1e9, .real = 1 },
		{ "keysteer_interval_work_cpu_seconds", "gauge",
		  "CPU of the last interval's work on the agent's loop thread (0 before the first).",
		  .x = in->work_ns / 1e9, .real = 1 },
		{ "keysteer_interval_work_cpu_max_seconds", "gauge",
		  "The largest interval work CPU since the agent started.",
		  .x = in->work_max_ns / 1e9, .real = 1 },
		{ "keysteer_sample_ratio", "gauge",
		  "Fraction of keys sampled into the sketch (1/N for --sample N; --sample auto: of the CPU sampling least).",
		  .x = r->sample_n ? 1.0 / r->sample_n : 1.0, .real = 1 },
		{ "keysteer_interval_target_seconds", "gauge",
		  "The configured interval (--interval).",
		  .x = r->interval_ms / 1e3, .real = 1 },
		{ "keysteer_interval_duration_seconds", "gauge",
		  "Length of the last interval as measured (0 before the first).",
		  .x = in->intervals ? r->elapsed_ns / 1e9 : 0, .real = 1 },
		{ "keysteer_interval_duration_max_seconds", "gauge",
		  "The longest interval since the agent started: how long its loop (and every refresh of hot keys' copies) was held at most.",
		  .x = in->interval_max_ns / 1e9, .real = 1 },
		{ "keysteer_last_interval_timestamp_seconds", "gauge",
		  "When the last interval ended, seconds since the Unix epoch (0 before the first).",
		  .x = in->intervals ? r->updated_ns / 1e9 : 0, .real = 1 },
		{ "keysteer_intervals_total", "counter",
		  "Intervals ended since the agent started.",
		  .n = in->intervals },
		{ "keysteer_housekeeping_passes_total", "counter",
		  "Link checks and VLAN syncs done (each waits on the kernel's rtnl lock).",
		  .n = in->hk_passes },
		{ "keysteer_housekeeping_pass_max_seconds", "gauge",
		  "The longest link check and VLAN sync since the agent started.",
		  .x = in->hk_pass_max_ns / 1e9, .real = 1 },
	};

	family(f, "keysteer_agent_info", "gauge",
	       "The agent's version, interface and hook: XDP mode native or generic, or tc (always 1).");
	fprintf(f, "keysteer_agent_info{version=\"%s\",", KS_VERSION_STR);
	label_str(f, "interface", r->ifname, sizeof(r->ifname));
	fprintf(f, ",xdp_mode=\"%s\"} 1\n",
		r->xdp_mode == 1   ? "native"
		: r->xdp_mode == 2 ? "generic"
		: r->xdp_mode == 3 ? "tc"
				   : "none");
	scalars(f, sc, ARRAY_LEN(sc));
	sample_cpu_metrics(f, r);
}

enum op_field {
	OP_REQUESTS,
	OP_KEYS,
	OP_BYTES
};

/* Requests, keys or bytes of every op, labelled with its class. */
static void op_family(FILE *f, const struct ks_metrics_in *in, const char *name,
		      const char *help, enum op_field which)
{
	__u32 op;

	family(f, name, "counter", help);
	for (op = 0; op < KS_OP_MAX; op++) {
		const struct ks_op_stats *o = &in->totals->ops[op];

		fprintf(f, "%s{class=\"%s\",op=\"%s\"}", name,
			ks_class_name(ks_op_class(op)), ks_op_name(op));
		count(f, which == OP_REQUESTS ? o->requests
			 : which == OP_KEYS   ? o->keys
					      : o->bytes);
	}
}

/* The TCP stream layer (docs/streams.md): segments by where they stood,
 * resyncs by reason, the steering fail safe. */
static void stream_metrics(FILE *f, const struct ks_totals *t)
{
	static const char *const events[] = { "opened",      "closed",
					      "continued",   "retransmitted",
					      "overlapping", "hole_filled" };
	static const char *const resyncs[] = { "gap", "unknown_flow", "carry",
					       "lost" };
	const __u64 ev[] = {
		t->pkts[KS_PKT_FLOW_NEW],     t->pkts[KS_PKT_FLOW_END],
		t->pkts[KS_PKT_FLOW_CONT],    t->pkts[KS_PKT_FLOW_DUP],
		t->pkts[KS_PKT_FLOW_OVERLAP], t->pkts[KS_PKT_FLOW_FILL]
	};
	const __u64 rs[] = { t->pkts[KS_PKT_RESYNC_GAP],
			     t->pkts[KS_PKT_RESYNC_UNKNOWN],
			     t->pkts[KS_PKT_RESYNC_CARRY],
			     t->pkts[KS_PKT_RESYNC_LOST] };
	const struct scalar sc[] = {
		{ "keysteer_hot_disarms_total", "counter",
		  "Times bytes of a stream went by unparsed and every armed hot key was made dirty.",
		  .n = t->pkts[KS_PKT_HOT_DISARM] },
		{ "keysteer_udp_first_fragments_total", "counter",
		  "First IP fragments of UDP requests, parsed as far as they go.",
		  .n = t->pkts[KS_PKT_UDP_FRAG] },
	};

	label_set(
		f, "keysteer_stream_events_total", "counter",
		"TCP flows opened and closed, and segments by where they stood in their stream.",
		"event", events, ev, ARRAY_LEN(ev));
	label_set(
		f, "keysteer_stream_resyncs_total", "counter",
		"TCP streams whose position was lost, by reason; the next request boundary resynchronises.",
		"reason", resyncs, rs, ARRAY_LEN(rs));
	scalars(f, sc, ARRAY_LEN(sc));
}

static void datapath_metrics(FILE *f, const struct ks_metrics_in *in)
{
	static const char *const protos[] = { "tcp", "udp" };
	const struct ks_totals *t = in->totals;
	const char *reasons[KS_ERR_MAX];
	__u64 errs[KS_ERR_MAX],
		by_proto[2] = { t->pkts[KS_PKT_TCP], t->pkts[KS_PKT_UDP] };
	struct scalar sc[ARRAY_LEN(pkt_families) + 5];
	size_t i, n = 0;

	op_family(f, in, "keysteer_requests_total",
		  "memcached requests parsed, by class and op.", OP_REQUESTS);
	op_family(f, in, "keysteer_keys_total",
		  "Keys in the requests parsed, by class and op.", OP_KEYS);
	op_family(
		f, in, "keysteer_request_bytes_total",
		"Bytes of the requests parsed (line and data block), by class and op.",
		OP_BYTES);
	/* not_memcached is every other packet: a family of its own */
	for (i = 0; i < KS_ERR_MAX; i++) {
		if (i == KS_ERR_NOT_MEMCACHED)
			continue;
		reasons[n] = ks_reason_name((unsigned)i);
		errs[n++] = t->errors[i];
	}
	label_set(f, "keysteer_parse_errors_total", "counter",
		  "Inputs not (fully) parsed, by reason; passed on untouched.",
		  "reason", reasons, errs, n);
	label_set(f, "keysteer_memcached_packets_total", "counter",
		  "Packets to a watched port with a payload, by protocol.",
		  "proto", protos, by_proto, 2);
	stream_metrics(f, t);

	n = 0;
	sc[n++] = (struct scalar){
		"keysteer_non_memcached_packets_total", "counter",
		"Packets that are not IP, not TCP/UDP or not to a watched port.",
		.n = t->errors[KS_ERR_NOT_MEMCACHED]
	};
	for (i = 0; i < ARRAY_LEN(pkt_families); i++)
		sc[n++] = (struct scalar){ pkt_families[i].name, "counter",
					   pkt_families[i].help,
					   .n = t->pkts[pkt_families[i].idx] };
	sc[n++] = (struct scalar){
		"keysteer_candidate_keys", "gauge",
		"Distinct keys in the candidate tables in the last interval.",
		.n = in->candidates
	};
	sc[n++] = (struct scalar){
		"keysteer_candidate_slots", "gauge",
		"Capacity of the candidate tables (slots per CPU x CPUs, and the sample log's).",
		.n = in->candidate_slots
	};
	if (in->slog_on) {
		sc[n++] = (struct scalar){
			"keysteer_sample_log_folded_total", "counter",
			"Sample log records the agent folded into its sketch.",
			.n = in->slog_folded
		};
		sc[n++] = (struct scalar){
			"keysteer_sample_log_late_total", "counter",
			"Sample log records of an interval already read out: dropped.",
			.n = in->slog_late
		};
	}
	scalars(f, sc, n);
}

enum shard_field {
	SH_READS,
	SH_WRITES,
	SH_MISDIRECTED,
	SH_RATIO,
	SH_LOAD,
	SH_LOAD_ERR
};

/* One per-shard family: name{shard="i",name="host:port"} v. */
static void shard_family(FILE *f, const struct ks_shard_report *g,
			 const char *name, const char *type, const char *help,
			 enum shard_field which)
{
	__u32 i;

	family(f, name, type, help);
	for (i = 0; i < g->nshards && i < KS_MAX_SHARDS; i++) {
		const struct ks_shard_rate *s = &g->shards[i];

		fprintf(f, "%s{shard=\"%u\",", name, i);
		label_str(f, "name", s->name, sizeof(s->name));
		fputc('}', f);
		if (which == SH_RATIO)
			value(f, s->ratio_milli / 1000.0);
		else if (which == SH_LOAD)
			value(f, (s->reads_mps + s->writes_mps) / 1000.0);
		else if (which == SH_LOAD_ERR)
			value(f, s->load_err_mps == KS_SHARD_ERR_UNKNOWN
					 ? 0
					 : s->load_err_mps / 1000.0);
		else
			count(f, which == SH_READS    ? s->reads
				 : which == SH_WRITES ? s->writes
						      : s->misdirected);
	}
}

static void ring_metrics(FILE *f, const struct ks_shard_report *g)
{
	const struct scalar sc[] = {
		{ "keysteer_ring_shards", "gauge", "Shards in the ring.",
		  .n = g->nshards },
		{ "keysteer_ring_version", "gauge",
		  "Version of the ring in the datapath (rises with every reload).",
		  .n = g->ring_version },
		{ "keysteer_ring_reload_errors_total", "counter",
		  "Ring reloads refused (a bad shard list; the old ring stays).",
		  .n = g->reload_errors },
		{ "keysteer_purge_items_total", "counter",
		  "Items deleted from this shard's memcached because a new ring places them elsewhere.",
		  .n = g->purge.purged },
		{ "keysteer_purge_swept_items_total", "counter",
		  "Items the slow sweep deleted (not this shard's under the ring).",
		  .n = g->purge.swept },
		{ "keysteer_purge_listed_items_total", "counter",
		  "Items memcached's crawler listed to the purge.",
		  .n = g->purge.listed },
		{ "keysteer_purge_refused_total", "counter",
		  "Ring changes the moved-share gate refused to purge for (not forced).",
		  .n = g->purge.refused },
		{ "keysteer_purge_errors_total", "counter",
		  "Purge passes that failed (memcached away, crawler off or busy).",
		  .n = g->purge.errors },
		{ "keysteer_purge_in_progress", "gauge",
		  "1 while a purge for a ring change runs or its grace period lasts.",
		  .n = g->purge.state == KS_PURGE_RUNNING ||
		       g->purge.state == KS_PURGE_GRACE },
		{ "keysteer_purge_ring_version", "gauge",
		  "The ring version the last purge was for (0: none).",
		  .n = g->purge.ring_version },
		{ "keysteer_purge_passes", "gauge",
		  "Purge passes finished for that ring version.",
		  .n = g->purge.passes },
		{ "keysteer_purge_items_per_second", "gauge",
		  "Deletes per second of the running purge pass, else the last.",
		  .x = g->purge.rate_mps / 1000.0, .real = 1 },
		{ "keysteer_purge_last_seconds", "gauge",
		  "How long the first pass of the last purge took (0: not ended).",
		  .x = g->purge.last_ns / 1e9, .real = 1 },
	};

	static const struct {
		const char *name, *type, *help;
		enum shard_field which;
	} fam[] = {
		{ "keysteer_shard_reads_total", "counter",
		  "Estimated reads per shard since the ring was pushed (sampled x N; restarts at a reload).",
		  SH_READS },
		{ "keysteer_shard_writes_total", "counter",
		  "Estimated writes per shard since the ring was pushed (sampled x N; restarts at a reload).",
		  SH_WRITES },
		{ "keysteer_shard_misdirected_total", "counter",
		  "Estimated keys this host got that the ring gives to the shard, since the ring was pushed.",
		  SH_MISDIRECTED },
		{ "keysteer_shard_load_ratio", "gauge",
		  "The shard's reads+writes over the mean shard's, in the last interval.",
		  SH_RATIO },
		{ "keysteer_shard_load_keys_per_second", "gauge",
		  "Estimated reads+writes per second of the shard in the last interval.",
		  SH_LOAD },
		{ "keysteer_shard_load_error_keys_per_second", "gauge",
		  "+/- of keysteer_shard_load_keys_per_second: half-width of a 95% interval for the shard's true load, from the placements (0: every key counted).",
		  SH_LOAD_ERR },
	};
	size_t i;

	scalars(f, sc, ARRAY_LEN(sc));
	for (i = 0; i < ARRAY_LEN(fam); i++)
		shard_family(f, g, fam[i].name, fam[i].type, fam[i].help,
			     fam[i].which);
}

static const struct ks_hot_slot *slots_of(const struct ks_metrics_in *in)
{
	return in->steer ? in->steer->slot : NULL;
}

static size_t state_index(const struct ks_hot_slot *s, __u64 now)
{
	const char *name = ks_hot_state_name(s, now);
	size_t i;

	for (i = 0; i < SLOT_STATES; i++)
		if (!strcmp(name, slot_states[i]))
			return i;
	return SLOT_STATES - 1;
}

/* Slots in use, and by state into by_state. */
static __u64 count_slots(const struct ks_metrics_in *in, __u64 *by_state)
{
	const struct ks_hot_slot *sl = slots_of(in);
	__u64 used = 0;
	size_t i;

	for (i = 0; sl && i < KS_HOT_SLOTS; i++) {
		if (!sl[i].hash)
			continue;
		used++;
		by_state[state_index(&sl[i], in->now_mono_ns)]++;
	}
	return used;
}

/* --balance: what the agent compares and the threshold it holds. */
static void balance_metrics(FILE *f, const struct ks_metrics_in *in)
{
	const struct ks_balance *b = in->balance;
	const struct scalar sc[] = {
		{ "keysteer_balance_read_threshold", "gauge",
		  "The read threshold in force, reads/s: the policy's, or lower while --balance sheds this shard's load.",
		  .x = b->thr > 0 ? b->thr : in->read_threshold, .real = 1 },
		{ "keysteer_balance_shard_served_reads", "gauge",
		  "Reads/s this shard served, smoothed, as --balance compares them.",
		  .x = b->own_ps, .real = 1 },
		{ "keysteer_balance_fleet_mean_reads", "gauge",
		  "The mean reads/s a shard of the fleet served, from the agents' load documents.",
		  .x = b->mean_ps, .real = 1 },
		{ "keysteer_balance_shards", "gauge",
		  "Shards the fleet's mean is over.", .n = b->shards },
	};

	scalars(f, sc, ARRAY_LEN(sc));
}

/* The agent's table and the datapath's slots. */
static void hot_metrics(FILE *f, const struct ks_metrics_in *in)
{
	static const char *const changes[] = { "entered", "left", "evicted",
					       "dropped" };
	const struct ks_hot_table *t = in->table;
	__u64 by_state[SLOT_STATES] = {};
	__u64 used = count_slots(in, by_state);
	__u64 ch[4] = { t ? t->entered : 0, t ? t->left : 0, t ? t->evicted : 0,
			t ? t->dropped : 0 };
	const struct scalar sc[] = {
		{ "keysteer_hot_table_keys", "gauge",
		  "Keys in the agent's hot-key table.", .n = t ? t->used : 0 },
		{ "keysteer_hot_table_capacity", "gauge",
		  "Entries the hot-key table holds at most.", .n = KS_HOT_CAP },
		{ "keysteer_hot_datapath_keys", "gauge",
		  "Keys in the datapath's hot-key slots.", .n = used },
		{ "keysteer_hot_slots_capacity", "gauge",
		  "Hot-key slots in the datapath.", .n = KS_HOT_SLOTS },
	};

	scalars(f, sc, ARRAY_LEN(sc));
	if (in->balance)
		balance_metrics(f, in);
	label_set(
		f, "keysteer_hot_table_changes_total", "counter",
		"Hot-key table decisions: keys that entered, left, were evicted or were dropped (table full).",
		"change", changes, ch, ARRAY_LEN(changes));
	label_set(
		f, "keysteer_hot_slots", "gauge",
		"Hot-key slots in use by state: armed (reads steered), dirty (written since the copies were made), expired (the agent stopped refreshing), filling (copies being made), counted (one copy: counted only).",
		"state", slot_states, by_state, SLOT_STATES);
}

/* One per-replica family: name{replica="ip:port"} v. */
static void replica_family(FILE *f, const struct ks_metrics_steer *s,
			   const char *name, const char *type, const char *help,
			   int up)
{
	unsigned i;

	family(f, name, type, help);
	for (i = 0; i < s->n_replicas && i < KS_MAX_REPLICAS; i++) {
		const struct ks_metrics_replica *r = &s->replica[i];

		fprintf(f, "%s{", name);
		label_bytes(f, "replica", (const __u8 *)r->name,
			    strlen(r->name));
		fputc('}', f);
		count(f, up ? (__u64)(r->up != 0) : r->steered);
	}
}

static void steer_metrics(FILE *f, const struct ks_metrics_in *in)
{
	static const struct ks_metrics_steer none;
	const struct ks_metrics_steer *s = in->steer ? in->steer : &none;
	const struct scalar sc[] = {
		{ "keysteer_steer_copies_total", "counter",
		  "Copies of hot keys' values from the owner to their replicas (attempts).",
		  .n = s->fills },
		{ "keysteer_steer_copy_failures_total", "counter",
		  "Copies that failed (a replica or the owner did not answer).",
		  .n = s->fill_errors },
		{ "keysteer_steer_dirty_events_total", "counter",
		  "Writes to armed keys reported by the datapath.",
		  .n = s->events },
		{ "keysteer_steer_no_slot_total", "counter",
		  "Hot keys left out of the datapath: their slot set was full.",
		  .n = s->no_slot },
		{ "keysteer_steer_rearm_max_seconds", "gauge",
		  "The longest re-arm since the agent started.",
		  .x = s->rearm_ms_max / 1e3, .real = 1 },
		{ "keysteer_steer_arms_total", "counter",
		  "Armings of hot keys' copies: the first, each interval's refresh, each re-arm after a write.",
		  .n = s->arms },
		{ "keysteer_steer_arm_gap_max_seconds", "gauge",
		  "The longest time between two armings while keys had copies to arm (refreshes are due every interval).",
		  .x = s->arm_gap_max_ns / 1e9, .real = 1 },
	};

	scalars(f, sc, ARRAY_LEN(sc));
	family(f, "keysteer_steer_rearm_seconds", "summary",
	       "Time from a write to an armed key to its copies re-armed.");
	fputs("keysteer_steer_rearm_seconds_sum", f);
	value(f, s->rearm_ms_sum / 1e3);
	fputs("keysteer_steer_rearm_seconds_count", f);
	count(f, s->rearms);
	replica_family(
		f, s, "keysteer_replica_steered_reads_total", "counter",
		"Reads steered to each L1 replica (as of the last interval).",
		0);
	replica_family(
		f, s, "keysteer_replica_up", "gauge",
		"1 while the replica takes copies, 0 while it is left out after a failed copy.",
		1);
}

enum top_field {
	TOP_READS,
	TOP_WRITES,
	TOP_ERROR
};

static void top_family(FILE *f, const struct ks_metrics_in *in,
		       const char *name, const char *help, enum top_field which)
{
	const struct ks_report *r = in->rep;
	__u32 i, n = r->n_top < KS_REPORT_TOP ? r->n_top : KS_REPORT_TOP;

	family(f, name, "gauge", help);
	for (i = 0; i < n; i++) {
		const struct ks_top_entry *e = &r->top[i];

		fputs(name, f);
		key_labels(f, in, e->hash, e->key,
			   e->len < KS_KEY_BUF ? e->len : KS_KEY_BUF);
		fputc('}', f);
		value(f, (which == TOP_READS    ? e->reads_mps
			  : which == TOP_WRITES ? e->writes_mps
						: e->err_mps) /
				 1000.0);
	}
}

enum hot_field {
	HK_READS,
	HK_WRITES,
	HK_STEERED,
	HK_COPIES,
	HK_STATE,
	/* the owner's replies (ks_tc_egress), only while they are counted */
	HK_HITS,
	HK_MISSES,
	HK_UNPAIRED
};

static double hot_rate(const struct ks_hot_slot *s, enum hot_field which)
{
	switch (which) {
	case HK_READS:
		return s->reads_mps / 1000.0;
	case HK_WRITES:
		return s->writes_mps / 1000.0;
	case HK_HITS:
		return s->hits_mps / 1000.0;
	case HK_MISSES:
		return s->misses_mps / 1000.0;
	case HK_UNPAIRED:
		return s->unpaired_mps / 1000.0;
	default:
		return s->steered_mps / 1000.0;
	}
}

/* One per-key family over the used hot slots. */
static void hot_key_family(FILE *f, const struct ks_metrics_in *in,
			   const char *name, const char *help,
			   enum hot_field which)
{
	const struct ks_hot_slot *sl = slots_of(in);
	size_t i, st, cur;

	family(f, name, "gauge", help);
	for (i = 0; sl && i < KS_HOT_SLOTS; i++) {
		const struct ks_hot_slot *s = &sl[i];
		size_t len = s->len < KS_KEY_BUF ? s->len : KS_KEY_BUF;

		if (!s->hash)
			continue;
		if (which == HK_STATE) { /* every state, 1 for the current */
			cur = state_index(s, in->now_mono_ns);
			for (st = 0; st < SLOT_STATES; st++) {
				fputs(name, f);
				key_labels(f, in, s->hash, s->key, len);
				fprintf(f, ",state=\"%s\"}", slot_states[st]);
				count(f, st == cur);
			}
			continue;
		}
		fputs(name, f);
		key_labels(f, in, s->hash, s->key, len);
		fputc('}', f);
		if (which == HK_COPIES)
			count(f, s->ncopies);
		else
			value(f, hot_rate(s, which));
	}
}

static void key_metrics(FILE *f, const struct ks_metrics_in *in)
{
	static const struct {
		const char *name, *help;
		int hot; /* enum hot_field over the slots, else enum top_field */
		int which;
	} fams[] = {
		{ "keysteer_top_key_reads_per_second",
		  "Estimated reads per second of the interval's top keys.", 0,
		  TOP_READS },
		{ "keysteer_top_key_writes_per_second",
		  "Estimated writes per second of the interval's top keys.", 0,
		  TOP_WRITES },
		{ "keysteer_top_key_error_per_second",
		  "Bound (+/-) on a top key's estimated reads+writes per second.",
		  0, TOP_ERROR },
		{ "keysteer_hot_key_reads_per_second",
		  "Smoothed reads per second of each key in the hot-key slots.",
		  1, HK_READS },
		{ "keysteer_hot_key_writes_per_second",
		  "Smoothed writes per second of each key in the hot-key slots.",
		  1, HK_WRITES },
		{ "keysteer_hot_key_steered_reads_per_second",
		  "Reads of each hot key steered to replicas in the last interval, per second.",
		  1, HK_STEERED },
		{ "keysteer_hot_key_copies",
		  "Copies each hot key's reads are spread over, the owner's included.",
		  1, HK_COPIES },
		{ "keysteer_hot_key_state",
		  "Each hot key's slot state: 1 for the current one.", 1,
		  HK_STATE },
		{ "keysteer_hot_key_owner_hits_per_second",
		  "Hits of each hot key at its owner in the last interval, per second, from the owner's replies (" KS_REPLIES_SOURCE
		  ").",
		  1, HK_HITS },
		{ "keysteer_hot_key_owner_misses_per_second",
		  "Misses of each hot key at its owner in the last interval, per second, from the owner's replies (" KS_REPLIES_SOURCE
		  ").",
		  1, HK_MISSES },
		{ "keysteer_hot_key_owner_unpaired_per_second",
		  "Single-key reads of each hot key whose reply could not be paired exactly (a pipelining connection), per second.",
		  1, HK_UNPAIRED },
	};
	size_t i;

	for (i = 0; i < ARRAY_LEN(fams); i++) {
		/* no family at all where nothing counts the replies, rather
		 * than zeros that would read as no misses */
		if (fams[i].which >= HK_HITS && fams[i].hot &&
		    !(in->rep && in->rep->replies))
			continue;
		if (fams[i].hot)
			hot_key_family(f, in, fams[i].name, fams[i].help,
				       (enum hot_field)fams[i].which);
		else
			top_family(f, in, fams[i].name, fams[i].help,
				   (enum top_field)fams[i].which);
	}
}

/* One per-key family over the limited keys: rate 0 the limit, 1
 * allowed/s, 2 refused/s, 3 TCP gets/s, 4 refused since set. */
static void limit_family(FILE *f, const struct ks_metrics_in *in,
			 const char *name, const char *type, const char *help,
			 int which)
{
	const struct ks_limit_entry *e;
	size_t pos = 0;

	family(f, name, type, help);
	while ((e = ks_limits_next(in->limits, &pos))) {
		fputs(name, f);
		key_labels(f, in, e->hash, e->key, e->len);
		/* a rule's limit or the automatic cap's (--limit-auto) */
		fprintf(f, ",source=\"%s\"}", e->automatic ? "auto" : "rule");
		if (which == 0)
			count(f, e->rate);
		else if (which == 4)
			count(f, e->refused);
		else
			value(f, which == 1   ? e->allowed_ps
				 : which == 2 ? e->refused_ps
					      : e->tcp_ps);
	}
}

static void limit_metrics(FILE *f, const struct ks_metrics_in *in)
{
	static const char *const ways[] = { "replied", "dropped", "no_reply" };
	const struct ks_limit_pkts *pk = in->limit_pkts;
	const struct scalar sc[] = {
		{ "keysteer_limit_keys", "gauge",
		  "Keys rate-limited in the datapath (docs/limits.md).",
		  in->limits->live },
		{ "keysteer_limit_auto_keys", "gauge",
		  "Keys of those limited by the automatic cap (--limit-auto), not by a rule.",
		  in->limits->nauto },
		{ "keysteer_limit_auto_no_room_total", "counter",
		  "Automatic caps that found no free row in the datapath's table, once an interval each.",
		  in->limits->auto_no_room },
		{ "keysteer_limit_checked_total", "counter",
		  "Lone UDP gets looked up in the rate limits while any key was limited.",
		  pk ? pk->n[KS_LIM_CHECKED] : 0 },
		{ "keysteer_limit_reply_grown_at_head_total", "counter",
		  "SERVER_ERROR replies whose frame grew at its head: the tail had no room (a short key on veth).",
		  pk ? pk->n[KS_LIM_GREW_HEAD] : 0 },
	};
	__u64 refused[3] = { pk ? pk->n[KS_LIM_REPLIED] : 0,
			     pk ? pk->n[KS_LIM_DROPPED] : 0,
			     pk ? pk->n[KS_LIM_NO_REPLY] : 0 };

	scalars(f, sc, ARRAY_LEN(sc));
	label_set(
		f, "keysteer_limit_refused_total", "counter",
		"UDP gets refused over their key's limit, by how: answered SERVER_ERROR, dropped, or dropped for want of a reply the datapath can build.",
		"way", ways, refused, ARRAY_LEN(ways));
	limit_family(f, in, "keysteer_limit_key_rate", "gauge",
		     "Each limited key's limit, gets per second.", 0);
	limit_family(
		f, in, "keysteer_limit_key_allowed_per_second", "gauge",
		"UDP gets of each limited key let through in the last interval, per second.",
		1);
	limit_family(
		f, in, "keysteer_limit_key_refused_per_second", "gauge",
		"UDP gets of each limited key refused in the last interval, per second.",
		2);
	limit_family(
		f, in, "keysteer_limit_key_tcp_per_second", "gauge",
		"Lone TCP gets of each limited key in the last interval, per second: counted, never refused.",
		3);
	limit_family(
		f, in, "keysteer_limit_key_refused_total", "counter",
		"UDP gets of each limited key refused since its limit was set.",
		4);
}

void ks_metrics_render(FILE *f, const struct ks_metrics_in *in)
{
	agent_metrics(f, in);
	datapath_metrics(f, in);
	if (in->ring && in->ring->nshards)
		ring_metrics(f, in->ring);
	hot_metrics(f, in);
	steer_metrics(f, in);
	key_metrics(f, in);
	if (in->limits)
		limit_metrics(f, in);
}
