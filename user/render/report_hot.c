// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report_hot.c - the hot-key table and the replicas in the report.
 */
#include <arpa/inet.h>
#include <string.h>
#include "core/replicas.h"
#include "render/json.h"
#include "render/report_hot.h"
#include "render/text.h"

const char *ks_hot_state_name(const struct ks_hot_slot *s, __u64 now_mono_ns)
{
	if (s->ncopies < 2)
		return "counted";
	if (!s->expires_ns)
		return s->write_seq != s->armed_seq ? "dirty" : "filling";
	if (s->expires_ns <= now_mono_ns)
		return "expired";
	return s->armed_seq == s->write_seq ? "armed" : "dirty";
}

static void replica_text(const struct ks_replica *r, char *buf, size_t len)
{
	ks_replica_format(r->family, &r->addr, ntohs(r->port), buf, len);
}

/* The replicas of a slot as "a:p,b:p" (copies beyond the owner). */
static void slot_replicas(const struct ks_hot_view *h,
			  const struct ks_hot_slot *s, char *buf, size_t len)
{
	size_t off = 0;
	__u32 i;

	buf[0] = '\0';
	for (i = 1; i < s->ncopies && i < KS_MAX_COPIES; i++) {
		char one[KS_REPLICA_TEXT];

		replica_text(&h->rep[s->replica[i - 1] % KS_MAX_REPLICAS], one,
			     sizeof(one));
		off += snprintf(buf + off, off < len ? len - off : 0, "%s%s",
				i > 1 ? "," : "", one);
	}
	if (!buf[0])
		snprintf(buf, len, "-");
}

static const char *flag_text(const struct ks_hot_slot *s)
{
	if (s->flags & KS_HOTF_PINNED)
		return "pinned";
	if ((s->flags & KS_HOTF_READ_HOT) && (s->flags & KS_HOTF_WRITE_HOT))
		return "read+write";
	if (s->flags & KS_HOTF_WRITE_HOT)
		return "write";
	return "read";
}

void ks_render_hot_text(FILE *f, const struct ks_hot_view *h)
{
	char key[40], reps[KS_MAX_COPIES * KS_REPLICA_TEXT];
	size_t i;

	fprintf(f, "\nhot keys: %zu\n", h->n);
	if (!h->n)
		return;
	if (h->replies)
		fprintf(f, "  owner hits/s, misses/s: from its replies (%s)\n",
			KS_REPLIES_SOURCE);
	else
		fprintf(f,
			"  owner hits/s, misses/s: not counted (--owner-replies off, or no tcx)\n");
	fprintf(f, "  %-32s %11s %10s %6s %-7s %-10s %11s %9s %10s %10s  %s\n",
		"key", "reads/s", "writes/s", "copies", "state", "hot",
		"steered/s", "tcp/s", "hits/s", "misses/s", "replicas");
	for (i = 0; i < h->n; i++) {
		const struct ks_hot_slot *s = &h->slot[i];

		if (h->hash_only)
			snprintf(key, sizeof(key), "%016llx",
				 (unsigned long long)s->hash);
		else
			ks_key_text(s->key, s->len, key, sizeof(key));
		slot_replicas(h, s, reps, sizeof(reps));
		fprintf(f,
			"  %-32s %11.1f %10.1f %3u/%-2u %-7s %-10s %11.1f %9.1f",
			key, s->reads_mps / 1000.0, s->writes_mps / 1000.0,
			s->ncopies, s->copies,
			ks_hot_state_name(s, h->now_mono_ns), flag_text(s),
			s->steered_mps / 1000.0, s->tcp_mps / 1000.0);
		if (h->replies)
			fprintf(f, " %10.1f %10.1f", s->hits_mps / 1000.0,
				s->misses_mps / 1000.0);
		else
			fprintf(f, " %10s %10s", "-", "-");
		fprintf(f, "  %s", reps);
		if (h->replies && (s->unpaired_mps || s->malformed_mps))
			fprintf(f, "  (unpaired %.1f/s, malformed %.1f/s)",
				s->unpaired_mps / 1000.0,
				s->malformed_mps / 1000.0);
		if (s->subkeys)
			fprintf(f, "  (split into %u sub-keys)", s->subkeys);
		fputc('\n', f);
	}
	fprintf(f, "replicas:\n");
	for (i = 0; i < KS_MAX_REPLICAS; i++) {
		if (!h->rep[i].family)
			continue;
		replica_text(&h->rep[i], reps, sizeof(reps));
		fprintf(f, "  %-22s %11.1f steered reads/s\n", reps,
			h->rep[i].steered_mps / 1000.0);
	}
}

static void json_slot(FILE *f, const struct ks_hot_view *h,
		      const struct ks_hot_slot *s)
{
	char one[KS_REPLICA_TEXT];
	__u32 i;

	fprintf(f, "{");
	if (!h->hash_only) {
		fprintf(f, "\"key\":");
		ks_json_string(f, s->key, s->len);
		fputc(',', f);
	}
	fprintf(f,
		"\"hash\":\"0x%016llx\",\"reads_per_s\":%.3f,\"writes_per_s\":%.3f,"
		"\"copies\":%u,\"copies_wanted\":%u,\"subkeys\":%u,\"state\":\"%s\","
		"\"read_hot\":%s,\"write_hot\":%s,\"pinned\":%s,"
		"\"steered_per_s\":%.3f,\"tcp_reads_per_s\":%.3f,"
		"\"write_seq\":%llu,\"replicas\":[",
		(unsigned long long)s->hash, s->reads_mps / 1000.0,
		s->writes_mps / 1000.0, s->ncopies, s->copies, s->subkeys,
		ks_hot_state_name(s, h->now_mono_ns),
		s->flags & KS_HOTF_READ_HOT ? "true" : "false",
		s->flags & KS_HOTF_WRITE_HOT ? "true" : "false",
		s->flags & KS_HOTF_PINNED ? "true" : "false",
		s->steered_mps / 1000.0, s->tcp_mps / 1000.0,
		(unsigned long long)s->write_seq);
	for (i = 1; i < s->ncopies && i < KS_MAX_COPIES; i++) {
		replica_text(&h->rep[s->replica[i - 1] % KS_MAX_REPLICAS], one,
			     sizeof(one));
		fprintf(f, "%s\"%s\"", i > 1 ? "," : "", one);
	}
	fputc(']', f);
	if (h->replies)
		fprintf(f,
			",\"owner\":{\"hits_per_s\":%.3f,\"misses_per_s\":%.3f,"
			"\"unpaired_per_s\":%.3f,\"malformed_per_s\":%.3f,"
			"\"hits\":%llu,\"misses\":%llu,\"unpaired\":%llu,"
			"\"malformed\":%llu}",
			s->hits_mps / 1000.0, s->misses_mps / 1000.0,
			s->unpaired_mps / 1000.0, s->malformed_mps / 1000.0,
			(unsigned long long)s->replies.hits,
			(unsigned long long)s->replies.misses,
			(unsigned long long)s->replies.unpaired,
			(unsigned long long)s->replies.malformed);
	else
		fprintf(f, ",\"owner\":null");
	fputc('}', f);
}

void ks_render_hot_json(FILE *f, const struct ks_hot_view *h)
{
	char one[KS_REPLICA_TEXT];
	size_t i;
	int first = 1;

	/* the source once, beside the keys: what "owner" in each means */
	fprintf(f, ",\"owner_replies\":");
	if (h->replies)
		fprintf(f, "{\"counted\":true,\"source\":\"%s\"}",
			KS_REPLIES_SOURCE);
	else
		fprintf(f, "{\"counted\":false,\"source\":null}");
	fprintf(f, ",\"hot_keys\":[");
	for (i = 0; i < h->n; i++) {
		if (i)
			fputc(',', f);
		json_slot(f, h, &h->slot[i]);
	}
	fprintf(f, "],\"replicas\":[");
	for (i = 0; i < KS_MAX_REPLICAS; i++) {
		if (!h->rep[i].family)
			continue;
		replica_text(&h->rep[i], one, sizeof(one));
		fprintf(f, "%s{\"addr\":\"%s\",\"steered_per_s\":%.3f}",
			first ? "" : ",", one, h->rep[i].steered_mps / 1000.0);
		first = 0;
	}
	fputc(']', f);
}
