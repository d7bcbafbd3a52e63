// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* run_dedicated.c - shard rules into the datapath (run_dedicated.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "agent/run_dedicated.h"
#include "agent/run_purge.h"
#include "core/dedicated.h"
#include "util/log.h"

void ks_run_ded_start(struct ks_run_ded *d, const char *pin_dir)
{
	int err = ks_ded_open(&d->fds, pin_dir);

	d->open = !err;
	if (err)
		ks_warn("dedicated shards' maps not in %s (%s): a datapath from before them; shard rules apply to clients only",
			pin_dir, strerror(-err));
}

static void write_maps(struct ks_run_ded *d)
{
	const int *idx[KS_DEDICATED_HALVES] = { d->idx[0], d->idx[1] };
	int err;

	if (!d->open)
		return;
	err = ks_ded_write(&d->fds, &d->rules, idx);
	if (err)
		ks_err("cannot write the dedicated shards' maps (%s); rerun with -v",
		       strerror(-err));
}

/* Logs the rules whose shard the live ring lacks, when that changed. */
static void note_lost(struct ks_run_ded *d, const struct ks_shards *live)
{
	size_t i, lost = 0;

	for (i = 0; i < d->rules.n; i++) {
		const struct ks_hot_rule *r = &d->rules.r[i];

		if (!ks_hot_rule_is_shard(r->type) || d->idx[0][i] >= 0)
			continue;
		lost++;
		ks_warn("shard %.*s%s %s: the ring (%u shards) has no shard %s; its keys stay with their ring owner",
			(int)r->len, (const char *)r->key,
			r->type == KS_RULE_SHARD_PREFIX ? "*" : "", r->shard,
			live ? live->n : 0, r->shard);
	}
	if (!lost && d->lost)
		ks_info("every shard rule's shard is in the ring again");
	d->lost = lost;
}

void ks_run_ded_ring(struct ks_run_ded *d, const struct ks_shards *next,
		     __u32 idle)
{
	if (!d || !d->open || !ks_dedicated_count(&d->rules))
		return;
	ks_dedicated_resolve(&d->rules, next, d->idx[idle & 1]);
	write_maps(d);
}

void ks_run_ded_sync(struct ks_run_ded *d, const struct ks_hot_rules *rules,
		     const struct ks_shards *live, __u64 ring_version)
{
	static const struct ks_shards none;
	size_t i;

	if (!d)
		return;
	/* only the shard rules: the others change with every pin edit */
	memset(&d->next, 0, sizeof(d->next));
	for (i = 0; i < rules->n; i++)
		if (ks_hot_rule_is_shard(rules->r[i].type))
			d->next.r[d->next.n++] = rules->r[i];
	if (d->written && ring_version == d->ring_version &&
	    !memcmp(&d->next, &d->rules, sizeof(d->rules)))
		return;
	if (!d->written || memcmp(&d->next, &d->rules, sizeof(d->rules)))
		ks_run_purge_rules(d->purge, &d->next);
	d->rules = d->next;
	/* the old half has no reader once a push returned: both halves are
	 * the live ring's */
	ks_dedicated_resolve(&d->rules, live ? live : &none, d->idx[0]);
	memcpy(d->idx[1], d->idx[0], sizeof(d->idx[0]));
	d->ring_version = ring_version;
	d->written = 1;
	write_maps(d);
	note_lost(d, live);
	if (d->rules.n)
		ks_info("dedicated shards: %zu shard rules in the datapath",
			d->rules.n);
}

int ks_run_ded_owner(const struct ks_run_ded *d, const void *key, size_t len)
{
	if (!d || !d->written || !d->rules.n)
		return -1;
	return ks_dedicated_place(&d->rules, d->idx[0], key, len, NULL);
}

void ks_run_ded_free(struct ks_run_ded *d)
{
	if (d && d->open)
		ks_ded_close(&d->fds);
}
