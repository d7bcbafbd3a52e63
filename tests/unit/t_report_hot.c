// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_report_hot.c - the report's hot-key section: the state each slot is
 * shown in, the text rows and the JSON, from synthetic slots.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ktest.h"
#include "render/report_hot.h"
#include "unit.h"

#define NOW 1000000000000ULL

static void slot(struct ks_hot_slot *s, const char *key, __u32 ncopies,
		 __u64 expires, __u64 armed, __u64 wseq)
{
	memset(s, 0, sizeof(*s));
	s->len = strlen(key);
	memcpy(s->key, key, s->len);
	s->hash = ut_hash(key);
	s->ncopies = ncopies;
	s->copies = ncopies;
	s->replica[0] = 1;
	s->replica[1] = 0;
	s->expires_ns = expires;
	s->armed_seq = armed;
	s->write_seq = wseq;
	s->reads_mps = 23000500;
	s->steered_mps = 18000000;
	s->flags = KS_HOTF_READ_HOT;
}

static char *render(const struct ks_hot_view *h, int json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (json)
		ks_render_hot_json(f, h);
	else
		ks_render_hot_text(f, h);
	fclose(f);
	return buf;
}

static void test_states(void)
{
	struct ks_hot_slot s;

	kt_begin("report_hot_states");
	slot(&s, "k", 1, NOW + 1, 0, 0);
	CHECK(!strcmp(ks_hot_state_name(&s, NOW), "counted"), "one copy");
	slot(&s, "k", 3, NOW + 1, 4, 4);
	CHECK(!strcmp(ks_hot_state_name(&s, NOW), "armed"), "armed");
	slot(&s, "k", 3, NOW + 1, 4, 5);
	CHECK(!strcmp(ks_hot_state_name(&s, NOW), "dirty"), "written since");
	slot(&s, "k", 3, NOW - 1, 4, 4);
	CHECK(!strcmp(ks_hot_state_name(&s, NOW), "expired"), "expired");
	slot(&s, "k", 3, 0, 0, 0);
	CHECK(!strcmp(ks_hot_state_name(&s, NOW), "filling"), "not armed yet");
	slot(&s, "k", 3, 0, 0, 2);
	CHECK(!strcmp(ks_hot_state_name(&s, NOW), "dirty"),
	      "disarmed after writes");
	kt_end();
}

static void test_render(void)
{
	struct ks_replica rep[KS_MAX_REPLICAS] = {};
	struct ks_hot_slot s[2];
	struct ks_hot_view h = {
		.slot = s, .n = 2, .rep = rep, .now_mono_ns = NOW
	};
	char *t;

	kt_begin("report_hot_text_and_json");
	inet_pton(AF_INET, "198.18.2.101", &rep[0].addr);
	rep[0].port = htons(11211);
	inet_pton(AF_INET, "198.18.2.102", &rep[1].addr);
	rep[1].port = htons(11212);
	rep[1].steered_mps = 9000000;
	rep[0].family = rep[1].family = KS_AF_INET;
	/* an IPv6 replica prints as [addr]:port */
	inet_pton(AF_INET6, "2001:2::10", rep[2].addr.v6);
	rep[2].port = htons(11213);
	rep[2].family = KS_AF_INET6;
	slot(&s[0], "flash:1", 3, NOW + 5, 7, 7);
	slot(&s[1], "bad\001key", 1, 0, 0, 0);
	s[1].flags = KS_HOTF_WRITE_HOT;
	s[1].subkeys = 4;
	t = render(&h, 0);
	CHECK(t && strstr(t, "hot keys: 2"), "count line");
	CHECK(t && strstr(t, "flash:1") && strstr(t, "23000.5") &&
		      strstr(t, "armed") &&
		      strstr(t, "198.18.2.102:11212,198.18.2.101:11211"),
	      "flash row: %s", t ? t : "");
	CHECK(t && strstr(t, "bad\\x01key") && strstr(t, "counted") &&
		      strstr(t, "split into 4 sub-keys"),
	      "escaped write-hot row");
	CHECK(t && strstr(t, "198.18.2.102:11212") &&
		      strstr(t, "9000.0 steered"),
	      "replica load");
	CHECK(t && strstr(t, "[2001:2::10]:11213"), "IPv6 replica: %s",
	      t ? t : "");
	free(t);
	t = render(&h, 1);
	CHECK(t && strstr(t, ",\"hot_keys\":[{\"key\":\"flash:1\""),
	      "json key: %s", t ? t : "");
	CHECK(t && strstr(t, "\"state\":\"armed\"") &&
		      strstr(t,
			     "\"replicas\":[\"198.18.2.102:11212\",\"198.18.2.101:11211\"]"),
	      "json state and replicas");
	CHECK(t && strstr(t, "\"key\":\"bad\\u0001key\""), "json escapes");
	CHECK(t && strstr(t,
			  "{\"addr\":\"198.18.2.102:11212\",\"steered_per_s\":9000.000}"),
	      "json replica load");
	CHECK(t && strstr(t, "{\"addr\":\"[2001:2::10]:11213\""),
	      "json IPv6 replica");
	free(t);
	h.hash_only = 1;
	t = render(&h, 1);
	CHECK(t && !strstr(t, "flash:1") && strstr(t, "\"hash\":\"0x"),
	      "hash only hides keys");
	free(t);
	kt_end();
}

/* The owner's hits and misses: shown with their source while counted,
 * "-" and null (never a zero that reads as no misses) while not. */
static void test_owner_replies(void)
{
	struct ks_replica rep[KS_MAX_REPLICAS] = {};
	struct ks_hot_slot s;
	struct ks_hot_view h = {
		.slot = &s, .n = 1, .rep = rep, .now_mono_ns = NOW
	};
	char *t;

	kt_begin("report_hot_owner_misses_with_source");
	slot(&s, "flash:1", 1, 0, 0, 0);
	s.hits_mps = 1500000;
	s.misses_mps = 2250;
	s.unpaired_mps = 500;
	s.replies.hits = 1501;
	s.replies.misses = 3;
	s.replies.unpaired = 1;
	h.replies = 1;
	t = render(&h, 0);
	CHECK(t && strstr(t, "hits/s") && strstr(t, "misses/s") &&
		      strstr(t, KS_REPLIES_SOURCE) && strstr(t, " 1500.0 ") &&
		      strstr(t, " 2.2") && strstr(t, "unpaired 0.5/s"),
	      "text: %s", t ? t : "");
	free(t);
	t = render(&h, 1);
	CHECK(t &&
		      strstr(t,
			     "\"owner_replies\":{\"counted\":true,\"source\":\"" KS_REPLIES_SOURCE
			     "\"}") &&
		      strstr(t,
			     "\"owner\":{\"hits_per_s\":1500.000,\"misses_per_s\":2.250,\"unpaired_per_s\":0.500,\"malformed_per_s\":0.000,\"hits\":1501,\"misses\":3,\"unpaired\":1,\"malformed\":0}"),
	      "json: %s", t ? t : "");
	free(t);
	h.replies = 0;
	t = render(&h, 0);
	CHECK(t && strstr(t, "not counted") && !strstr(t, "1500.0"),
	      "text off: %s", t ? t : "");
	free(t);
	t = render(&h, 1);
	CHECK(t && strstr(t, "\"owner_replies\":{\"counted\":false,\"source\":null}") &&
		      strstr(t, "\"owner\":null"),
	      "json off: %s", t ? t : "");
	free(t);
	kt_end();
}

void test_report_hot(void)
{
	test_states();
	test_owner_replies();
	test_render();
}
