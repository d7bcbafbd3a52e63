// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "agent/run_limit.h"
#include "render/text.h"
#include "util/log.h"

int ks_run_limit_start(struct ks_run_limit *l, const char *pin_dir,
		       double auto_fraction, double capacity)
{
	int err;

	ks_limits_init(&l->set);
	if (auto_fraction > 0) {
		l->autocap = malloc(sizeof(*l->autocap));
		if (!l->autocap)
			return -ENOMEM;
		ks_limit_auto_init(l->autocap, auto_fraction, capacity);
	}
	err = ks_limit_map_open(&l->map, NULL, pin_dir);
	if (!err)
		err = ks_limit_map_clear(&l->map);
	l->open = !err;
	return err;
}

void ks_run_limit_auto_verdict(struct ks_run_limit *l, int on)
{
	if (l->autocap)
		l->autocap->verdict = on;
}

/* The automatic cap's changes of the interval, one line each (the key's
 * bytes with --log-keys only: they may be user data); after the plan,
 * before the sync forgets what went. */
static void log_auto(const struct ks_run_limit *l, const __u8 *was_auto)
{
	char key[4 * KS_KEY_BUF + 8];
	size_t i;

	for (i = 0; i < KS_LIMIT_SLOTS; i++) {
		const struct ks_limit_entry *e = &l->set.e[i];
		int now = e->automatic && (e->state == KS_LIMIT_LIVE ||
					   e->state == KS_LIMIT_DIRTY);

		if (now == was_auto[i] && (!now || !e->fresh))
			continue;
		if (l->log_keys)
			ks_key_text(e->key, e->len, key, sizeof(key));
		else
			snprintf(key, sizeof(key), "hash %016llx",
				 (unsigned long long)e->hash);
		if (now)
			ks_info("automatic cap: %s limited to %u/s (%.1f/s served by this shard, what its copies and split took left out, over %.1f/s for %d intervals)",
				key, e->rate, e->residual_ps, l->autocap->line,
				KS_LIMIT_AUTO_ENTER);
		else
			ks_info("automatic cap: %s released", key);
	}
}

int ks_run_limit_interval(struct ks_run_limit *l,
			  const struct ks_hot_rules *rules,
			  const struct ks_hot_table *t,
			  const struct ks_top_entry *ranked, size_t n,
			  const struct ks_auto_dp *dp, size_t ndp, __u32 seq,
			  __u64 now_ns)
{
	double elapsed = l->read_ns ? (now_ns - l->read_ns) / 1e9 : 0;
	struct ks_limit_info info;
	__u8 was_auto[KS_LIMIT_SLOTS];
	size_t pos = 0, nw = 0, i;
	__u32 id;
	int err;

	if (!l->open)
		return 0;
	for (i = 0; i < KS_LIMIT_SLOTS; i++)
		was_auto[i] = l->set.e[i].automatic &&
			      (l->set.e[i].state == KS_LIMIT_LIVE ||
			       l->set.e[i].state == KS_LIMIT_DIRTY);
	if (l->autocap) {
		ks_limit_auto_update(l->autocap, rules, t, ranked, n, dp, ndp);
		nw = ks_limit_auto_wants(l->autocap, l->wants,
					 KS_LIMIT_AUTO_KEYS);
	}
	if (ks_limits_plan(&l->set, rules, ranked, n, seq, l->wants, nw)) {
		if (l->autocap)
			log_auto(l, was_auto);
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
		"keysteer: #%u limits: %zu keys, %.1f/s allowed, %.1f/s refused over UDP, %.1f/s over TCP (not refused)",
		seq, l->set.live, allowed, refused, tcp);
	if (l->autocap)
		fprintf(f, "; %zu automatic at %u/s", l->set.nauto,
			l->autocap->rate);
	fputc('\n', f);
	(void)log_keys;
}

void ks_run_limit_stop(struct ks_run_limit *l)
{
	if (l->open)
		ks_limit_map_close(&l->map);
	l->open = 0;
	free(l->autocap);
	l->autocap = NULL;
}
