// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The unit tier: pure user-space logic of the agent, no BPF, no root. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "ktest.h"
#include "unit.h"

__u64 ut_hash(const char *key)
{
	__u64 words[KS_KEY_WORDS] = {};
	size_t len = strlen(key);

	memcpy(words, key, len);
	return ks_key_hash(words, (__u32)len);
}

/* Conservative update: raise only the counters at the current minimum,
 * one unit at a time, as the datapath does per sampled key. */
void ut_cms_add(struct ks_sketch *s, __u32 cls, __u64 hash, __u32 times)
{
	__u32 t, r;

	for (t = 0; t < times; t++) {
		__u32 min = ~0U;

		for (r = 0; r < KS_CMS_DEPTH; r++) {
			__u32 v = s->c[cls][r][ks_cms_col(hash, r)];

			if (v < min)
				min = v;
		}
		for (r = 0; r < KS_CMS_DEPTH; r++) {
			__u32 *v = &s->c[cls][r][ks_cms_col(hash, r)];

			if (*v == min)
				(*v)++;
		}
	}
}

void ut_cand(struct ks_cand *c, const char *key, __u32 seq, __u32 count)
{
	memset(c, 0, sizeof(*c));
	c->len = (__u16)strlen(key);
	memcpy(c->key, key, c->len);
	c->hash = ut_hash(key);
	c->seq = seq;
	c->count = count;
}

/* The groups, in the order they run; -g picks some by name. */
static const struct kt_group groups[] = {
	{ "merge", test_merge },
	{ "estimate", test_estimate },
	{ "topk", test_topk },
	{ "agent_big", test_agent_big },
	{ "report", test_report },
	{ "opts", test_opts },
	{ "names", test_names },
	{ "log", test_log },
	{ "ring", test_ring },
	{ "ring_clients", test_ring_clients },
	{ "key_hash", test_key_hash },
	{ "shards", test_shards },
	{ "shard_rates", test_shard_rates },
	{ "sample_rate", test_sample_rate },
	{ "zipf", test_zipf },
	{ "spread", test_spread },
	{ "flow_cpu", test_flow_cpu },
	{ "hotkeys", test_hotkeys },
	{ "limits", test_limits },
	{ "limit_auto", test_limit_auto },
	{ "client_limit", test_client_limit },
	{ "dedicated", test_dedicated },
	{ "balance", test_balance },
	{ "run_hot", test_run_hot },
	{ "hot_ranked", test_hot_ranked },
	{ "replicas", test_replicas },
	{ "mc_client", test_mc_client },
	{ "http_serve", test_http_serve },
	{ "report_hot", test_report_hot },
	{ "hot_map", test_hot_map },
	{ "metrics", test_metrics },
	{ "dashboard", test_dashboard },
	{ "config_file", test_config_file },
	{ "cli_options", test_cli_options },
	{ "pcap", test_pcap },
	{ "etcd_codec", test_etcd_codec },
	{ "ring_doc", test_ring_doc },
	{ "ring_plan", test_ring_plan },
	{ "purge", test_purge },
	{ "fleet_docs", test_fleet_docs },
	{ "steer_fsm", test_steer_fsm },
	{ "bg_thread", test_bg_thread },
	{ "thread", test_thread },
	{ "steer_fill", test_steer_fill },
	{ "fleet_view", test_fleet_view },
	{ "client", test_client },
	{ "client_batch", test_client_batch },
	{ "client_counter", test_client_counter },
	{ "client_auth", test_client_auth },
	{ "client_lease", test_client_lease },
	{ "view_file", test_view_file },
	{ "slog_fold", test_slog_fold },
	{ "slog_part", test_slog_part },
};
#define NGROUPS (sizeof(groups) / sizeof(groups[0]))

int main(int argc, char **argv)
{
	bool want[NGROUPS];
	size_t i;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = kt_parse_groups("unit_test", argc, argv, groups, NGROUPS, want);
	if (rc >= 0)
		return rc;
	for (i = 0; i < NGROUPS; i++)
		if (want[i])
			groups[i].run();
	return kt_summary("unit");
}
