// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The unit tier: pure user-space logic of the agent, no BPF, no root. */
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


int main(void)
{
	test_merge();
	test_estimate();
	test_topk();
	test_report();
	test_opts();
	test_names();
	test_ring();
	test_shards();
	test_shard_rates();
	test_zipf();
	test_hotkeys();
	test_run_hot();
	test_replicas();
	test_mc_client();
	test_http_serve();
	test_report_hot();
	test_hot_map();
	test_metrics();
	test_dashboard();
	test_config_file();
	test_cli_options();
	test_pcap();
	test_etcd_codec();
	test_steer_fsm();
	return kt_summary("unit");
}
