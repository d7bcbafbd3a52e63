/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* unit.h - the unit tier's test groups, each a set of ktest tests. */
#ifndef KS_UNIT_H
#define KS_UNIT_H

#include <stddef.h>
#include "keysteer.h"
#include "core/estimate.h"

void test_merge(void);
void test_purge(void);
void test_estimate(void);
void test_topk(void);
void test_agent_big(void);
void test_report(void);
void test_opts(void);
void test_names(void);
void test_log(void);
void test_ring(void);
void test_ring_clients(void);
void test_key_hash(void);
void test_shards(void);
void test_shard_rates(void);
void test_sample_rate(void);
void test_zipf(void);
void test_spread(void);
void test_flow_cpu(void);
void test_hotkeys(void);
void test_limits(void);
void test_limit_auto(void);
void test_client_limit(void); /* t_client_limit.c: libkeysteer's */
void test_dedicated(void);    /* t_dedicated.c: shard rules */
void test_balance(void);
void test_run_hot(void);
void test_hot_ranked(void);
void test_replicas(void);
void test_mc_client(void);
void test_http_serve(void);
void test_report_hot(void);
void test_hot_map(void);
void test_metrics(void);
void test_dashboard(void);
void test_config_file(void);
void test_cli_options(void);
void test_pcap(void);
void test_etcd_codec(void);
void test_ring_doc(void);
void test_ring_plan(void);
void test_steer_fsm(void);
void test_bg_thread(void);
void test_thread(void);
void test_steer_fill(void);
void test_fleet_docs(void);
void test_fleet_view(void);
void test_client(void);
void test_client_batch(void);
void test_client_l1(void); /* part of group client */
void test_client_counter(void);
void test_client_auth(void);
void test_client_lease(void);
void test_view_file(void);
void test_slog_fold(void); /* t_slog_fold.c: the sample log's fold */
void test_slog_part(void); /* t_slog_part.c: the drain threads' split */

/*
 * Helpers shared by the groups. The conservative update here is a plain
 * reimplementation for tests only; the datapath's is in bpf/.
 */
__u64 ut_hash(const char *key);
void ut_cms_add(struct ks_sketch *s, __u32 cls, __u64 hash, __u32 times);
void ut_cand(struct ks_cand *c, const char *key, __u32 seq, __u32 count);
struct ks_limit_set;
struct ks_limit_entry;
/* The limited key's entry in s, or NULL (t_limits.c). */
const struct ks_limit_entry *ut_limit_find(const struct ks_limit_set *s,
					   const char *key);

#endif
