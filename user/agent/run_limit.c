// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <inttypes.h>
#include <string.h>
#include <bpf/bpf.h>
#include "agent/run_limit.h"
#include "util/log.h"

int ks_run_limit_start(struct ks_run_limit *l, const char *pin_dir)
{
	int err;

	ks_limits_init(&l->set);
	err = ks_limit_map_open(&l->map, NULL, pin_dir);
	if (!err)
		err = ks_limit_map_clear(&l->map);
	l->open = !err;
	return err;
}

int ks_run_limit_interval(struct ks_run_limit *l,
			  const struct ks_hot_rules *rules,
			  const struct ks_top_entry *ranked, size_t n,
			  __u32 seq, __u64 now_ns)
{
	double elapsed = l->read_ns ? (now_ns - l->read_ns) / 1e9 : 0;
	struct ks_limit_info info;
	size_t pos = 0;
	__u32 id;
	int err;

	if (!l->open)
		return 0;
	if (ks_limits_plan(&l->set, rules, ranked, n, seq)) {
		err = ks_limit_map_sync(&l->map, &l->set);
		if (err)
			ks_warn("rate limits not written to the datapath (%s); retried next interval",
				strerror(-err));
	}
	l->read_ns = now_ns;
	while (ks_limits_next(&l->set, &pos)) {
		struct ks_limit_stats sum;

		id = (__u32)(pos - 1);
		if (!ks_limit_map_read(&l->map, id, &sum))
			ks_limits_account(&l->set, id, &sum, elapsed);
	}
	ks_limit_map_pkts(&l->map, &l->pkts);
	/* rows with a key, and rows whose key just went: not all 256 */
	for (id = 0; id < KS_LIMIT_SLOTS; id++) {
		ks_limits_info(&l->set, id, &info);
		if (!info.rate && !l->shown[id])
			continue;
		if (!bpf_map_update_elem(l->map.info, &id, &info, 0))
			l->shown[id] = info.rate != 0;
	}
	return l->set.live > 0;
}

void ks_run_limit_status(const struct ks_run_limit *l, FILE *f, __u32 seq,
			 int log_keys)
{
	const struct ks_limit_entry *e;
	double allowed = 0, refused = 0, tcp = 0;
	size_t pos = 0;

	if (!l->open || !l->set.live)
		return;
	while ((e = ks_limits_next(&l->set, &pos))) {
		allowed += e->allowed_ps;
		refused += e->refused_ps;
		tcp += e->tcp_ps;
	}
	fprintf(f,
		"keysteer: #%u limits: %zu keys, %.1f/s allowed, %.1f/s refused over UDP, %.1f/s over TCP (not refused)\n",
		seq, l->set.live, allowed, refused, tcp);
	(void)log_keys;
}

void ks_run_limit_stop(struct ks_run_limit *l)
{
	if (l->open)
		ks_limit_map_close(&l->map);
	l->open = 0;
}
