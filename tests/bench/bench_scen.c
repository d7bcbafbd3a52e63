// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench_scen.c - the packets the benchmark times, each with what the
 * datapath must count for it, so a run that silently took another path
 * (a parse error, a missed sample) is caught instead of reported.
 */
#include <stdlib.h>
#include <string.h>
#include "bench.h"

#define TARGET_UNSAMPLED_NS 15.0 /* issue 2: unsampled GET over empty */
#define TARGET_SAMPLED_NS   60.0 /* issue 2: sampled 16-byte GET over empty */
/* issue 3: the ring lookup of a sampled 16-byte GET, FNV-1a, 1024 shards,
 * over the same GET with no ring loaded */
#define TARGET_RING_FNV_NS  25.0

enum scen_kind { SC_HTTP, SC_GET, SC_SET };

struct scen_def {
	const char *id;
	const char *label;
	enum scen_kind kind;
	unsigned int nkeys;
	size_t keylen;
	size_t vallen;
	bool sampled;
	double target_ns;
	/* ring scenarios: the ring and the scenario without it */
	enum ks_dist dist;
	__u32 shards;         /* 0: no ring */
	bool misdirected;
	const char *base_id;
	double ring_target_ns;
	int hot;              /* enum bench_hot */
	bool udp;
};

static const struct scen_def defs[] = {
	{ "not_memcached", "not memcached (TCP to port 80)", SC_HTTP,
	  0, 0, 0, false, 0 },
	{ "get16_unsampled", "get, 16-byte key, unsampled", SC_GET,
	  1, 16, 0, false, TARGET_UNSAMPLED_NS },
	{ "get16_sampled", "get, 16-byte key, sampled", SC_GET,
	  1, 16, 0, true, TARGET_SAMPLED_NS },
	{ "get250_unsampled", "get, 250-byte key, unsampled", SC_GET,
	  1, 250, 0, false, 0 },
	{ "get250_sampled", "get, 250-byte key, sampled", SC_GET,
	  1, 250, 0, true, 0 },
	{ "mget32_unsampled", "get, 32 keys of 16 bytes, unsampled", SC_GET,
	  32, 16, 0, false, 0 },
	{ "mget32_sampled", "get, 32 keys of 16 bytes, all sampled", SC_GET,
	  32, 16, 0, true, 0 },
	{ "set100_unsampled", "set, 16-byte key, 100-byte value, unsampled",
	  SC_SET, 1, 16, 100, false, 0 },
	{ "set100_sampled", "set, 16-byte key, 100-byte value, sampled",
	  SC_SET, 1, 16, 100, true, 0 },
	/* the ring: each against the same packet with no ring loaded */
	{ "get16_sampled_ketama4", "get, 16-byte key, sampled, ketama 4",
	  SC_GET, 1, 16, 0, true, 0, KS_DIST_KETAMA, 4, false,
	  "get16_sampled", 0 },
	{ "get16_sampled_ketama64", "get, 16-byte key, sampled, ketama 64",
	  SC_GET, 1, 16, 0, true, 0, KS_DIST_KETAMA, 64, false,
	  "get16_sampled", 0 },
	{ "get16_sampled_ketama1024", "get, 16-byte key, sampled, ketama 1024",
	  SC_GET, 1, 16, 0, true, 0, KS_DIST_KETAMA, 1024, false,
	  "get16_sampled", 0 },
	{ "get16_sampled_twemproxy4", "get, 16-byte key, sampled, twemproxy 4",
	  SC_GET, 1, 16, 0, true, 0, KS_DIST_TWEMPROXY, 4, false,
	  "get16_sampled", 0 },
	{ "get16_sampled_twemproxy64", "get, 16-byte key, sampled, twemproxy 64",
	  SC_GET, 1, 16, 0, true, 0, KS_DIST_TWEMPROXY, 64, false,
	  "get16_sampled", 0 },
	{ "get16_sampled_twemproxy1024",
	  "get, 16-byte key, sampled, twemproxy 1024", SC_GET, 1, 16, 0, true,
	  0, KS_DIST_TWEMPROXY, 1024, false, "get16_sampled",
	  TARGET_RING_FNV_NS },
	{ "get16_sampled_twemproxy1024_misdirected",
	  "get, 16-byte key, sampled, twemproxy 1024, misdir", SC_GET, 1, 16,
	  0, true, 0, KS_DIST_TWEMPROXY, 1024, true, "get16_sampled", 0 },
	{ "get16_unsampled_ketama1024",
	  "get, 16-byte key, unsampled, ketama 1024", SC_GET, 1, 16, 0, false,
	  0, KS_DIST_KETAMA, 1024, false, "get16_unsampled", 0 },
	{ "get250_sampled_ketama1024", "get, 250-byte key, sampled, ketama 1024",
	  SC_GET, 1, 250, 0, true, 0, KS_DIST_KETAMA, 1024, false,
	  "get250_sampled", 0 },
	{ "get250_sampled_twemproxy1024",
	  "get, 250-byte key, sampled, twemproxy 1024", SC_GET, 1, 250, 0, true,
	  0, KS_DIST_TWEMPROXY, 1024, false, "get250_sampled", 0 },
	/* hot keys: each against the same packet with the table empty */
	{ "get16_unsampled_hot_other",
	  "get, 16-byte key, unsampled, hot table on", SC_GET, 1, 16, 0, false,
	  0, 0, 0, false, "get16_unsampled", 0, BH_OTHER },
	{ "get16_unsampled_hot_key", "get, 16-byte key, unsampled, key hot",
	  SC_GET, 1, 16, 0, false, 0, 0, 0, false, "get16_unsampled", 0,
	  BH_KEY },
	{ "set100_unsampled_hot_key",
	  "set, 16-byte key, 100 B, unsampled, key hot (dirty)", SC_SET, 1, 16,
	  100, false, 0, 0, 0, false, "set100_unsampled", 0, BH_KEY },
	{ "udp_get16_unsampled", "UDP get, 16-byte key, unsampled", SC_GET, 1,
	  16, 0, false, 0, 0, 0, false, NULL, 0, BH_NONE, true },
	{ "udp_get16_unsampled_steered",
	  "UDP get, 16-byte key, unsampled, 7/8 steered", SC_GET, 1, 16, 0,
	  false, 0, 0, 0, false, "udp_get16_unsampled", 0, BH_STEER, true },
};

#define N_DEFS (sizeof(defs) / sizeof(defs[0]))

static int build_one(const struct scen_def *d, struct bench_scen *s)
{
	static const char http[] = "GET /index.html HTTP/1.1\r\n"
				   "Host: 198.18.0.2\r\n\r\n";
	char pay[BENCH_FRAME_MAX];
	size_t plen;
	__u16 dport = BENCH_MC_PORT;

	switch (d->kind) {
	case SC_HTTP:
		plen = sizeof(http) - 1;
		memcpy(pay, http, plen);
		dport = 80;
		break;
	case SC_GET:
		plen = bench_get_line(pay, sizeof(pay), d->nkeys, d->keylen);
		break;
	case SC_SET:
		plen = bench_set_req(pay, sizeof(pay), d->keylen, d->vallen);
		break;
	default:
		return -1;
	}
	if (!plen)
		return -1;
	s->id = d->id;
	s->label = d->label;
	s->sampled = d->sampled;
	s->memcached = d->kind != SC_HTTP;
	s->keys = d->nkeys;
	s->target_ns = d->target_ns;
	s->base = -1;
	s->hot = d->hot;
	s->keylen = d->keylen;
	s->len = d->udp ? bench_frame_udp4(s->frame, sizeof(s->frame), dport,
					   pay, plen) :
			  bench_frame_tcp4(s->frame, sizeof(s->frame), dport,
					   pay, plen);
	if (!s->len)
		return -1;
	if (!d->shards)
		return 0;
	/* the packet's (first) key decides the owner, and so the self that
	 * makes it rightly directed or misdirected */
	bench_key(pay, d->keylen, 0);
	s->ring = bench_ring(d->dist, d->shards, pay, d->keylen,
			     d->misdirected);
	s->ring_dist = d->dist;
	s->ring_shards = d->shards;
	s->misdirected = d->misdirected;
	s->ring_target_ns = d->ring_target_ns;
	return s->ring ? 0 : -1;
}

/* Index of the scenario named id, or -1. */
static int find_id(const struct bench_scen *s, int n, const char *id)
{
	int i;

	for (i = 0; id && i < n; i++)
		if (!strcmp(s[i].id, id))
			return i;
	return -1;
}

void bench_scenarios_free(struct bench_scen *sc, int n)
{
	int i;

	for (i = 0; sc && i < n; i++)
		free(sc[i].ring);
	free(sc);
}

int bench_scenarios(struct bench_scen **out)
{
	struct bench_scen *s;
	size_t i;

	s = calloc(N_DEFS, sizeof(*s));
	if (!s)
		return -1;
	for (i = 0; i < N_DEFS; i++) {
		if (build_one(&defs[i], &s[i])) {
			bench_scenarios_free(s, (int)N_DEFS);
			return -1;
		}
		if (defs[i].base_id) {
			s[i].base = find_id(s, (int)i, defs[i].base_id);
			if (s[i].base < 0) {
				bench_scenarios_free(s, (int)N_DEFS);
				return -1;
			}
		}
	}
	*out = s;
	return (int)N_DEFS;
}
