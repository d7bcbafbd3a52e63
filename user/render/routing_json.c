// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * routing_json.c - the hot-key table as the routing document (see
 * routing_json.h), written with the agent's JSON buffer writer.
 */
#include <string.h>
#include <math.h>
#include <stdlib.h>
#include "core/mc_key.h"
#include "core/replicas.h"
#include "render/json.h"
#include "render/routing_json.h"

static double finite_or_0(double x)
{
	return isfinite(x) ? x : 0;
}

static int by_hash(const void *a, const void *b)
{
	const struct ks_hot_entry *x = *(const struct ks_hot_entry *const *)a;
	const struct ks_hot_entry *y = *(const struct ks_hot_entry *const *)b;

	return x->hash < y->hash ? -1 : x->hash > y->hash;
}

/* ,"replicas":[...] of a key whose reads go to replicas. */
static void json_replicas(struct ks_json_buf *w, const struct ks_hot_entry *e,
			  const struct ks_replica_set *rs)
{
	__u8 pick[KS_MAX_COPIES - 1];
	unsigned n = e->copies, i;

	if (!rs || !rs->n || n < 2 || ks_mc_key_check(e->key, e->len))
		return;
	n = ks_rendezvous_pick(
		e->hash, rs,
		n - 1 < KS_MAX_COPIES - 1 ? n - 1 : KS_MAX_COPIES - 1, pick);
	ks_json_buf_printf(w, ",\"replicas\":[");
	for (i = 0; i < n; i++)
		ks_json_buf_printf(w, "%s\"%s\"", i ? "," : "",
				   rs->r[pick[i]].text);
	ks_json_buf_printf(w, "]");
}

size_t ks_hot_json(const struct ks_hot_table *t, const struct ks_hot_policy *p,
		   const struct ks_replica_set *rs, __u64 ring_version,
		   char *buf, size_t size)
{
	return ks_hot_json_steer(t, p, rs, -1, ring_version, buf, size);
}

/* ,"replica_set":[...],"owner_turns":N: what a client following this
 * document needs besides the keys (docs/client.md, "The view from
 * routing documents"). */
static void json_steer(struct ks_json_buf *w, const struct ks_replica_set *rs,
		       int owner_turns)
{
	unsigned i;

	if (rs && rs->n) {
		ks_json_buf_printf(w, ",\"replica_set\":[");
		for (i = 0; i < rs->n; i++)
			ks_json_buf_printf(w, "%s\"%s\"", i ? "," : "",
					   rs->r[i].text);
		ks_json_buf_printf(w, "]");
	}
	if (owner_turns >= 0)
		ks_json_buf_printf(w, ",\"owner_turns\":%d", owner_turns);
}

size_t ks_hot_json_steer(const struct ks_hot_table *t,
			 const struct ks_hot_policy *p,
			 const struct ks_replica_set *rs, int owner_turns,
			 __u64 ring_version, char *buf, size_t size)
{
	const struct ks_hot_entry *sorted[KS_HOT_CAP];
	const struct ks_hot_entry *e;
	struct ks_json_buf w = { buf, size, 0 };
	size_t pos = 0, n = 0, i;

	while ((e = ks_hot_next(t, &pos)))
		sorted[n++] = e;
	/* Hash order: the same table always renders the same bytes. */
	qsort(sorted, n, sizeof(sorted[0]), by_hash);

	ks_json_buf_printf(
		&w,
		"{\"version\":%llu,\"ring_version\":%llu,\"seq\":%u,"
		"\"read_threshold_ps\":%.1f,\"write_threshold_ps\":%.1f,"
		"\"max_copies\":%u,\"keys\":[",
		(unsigned long long)t->version,
		(unsigned long long)ring_version, t->seq,
		finite_or_0(ks_hot_read_threshold(p)),
		finite_or_0(ks_hot_write_threshold(p)), ks_hot_max_copies(p));
	for (i = 0; i < n; i++) {
		e = sorted[i];
		ks_json_buf_printf(&w, "%s{\"key\":", i ? "," : "");
		ks_json_buf_string(&w, e->key, e->len);
		ks_json_buf_printf(
			&w,
			",\"hash\":\"%016llx\",\"state\":\"%s\","
			"\"read_hot\":%s,\"write_hot\":%s,\"copies\":%u,"
			"\"subkeys\":%u,\"reads_ps\":%.1f,\"writes_ps\":%.1f,"
			"\"intervals_hot\":%u,\"entered_seq\":%u",
			(unsigned long long)e->hash,
			e->state == KS_HOT_PINNED ? "pinned" : "hot",
			e->read_hot ? "true" : "false",
			e->write_hot ? "true" : "false", e->copies, e->subkeys,
			finite_or_0(e->reads_ps), finite_or_0(e->writes_ps),
			e->intervals_hot, e->entered_seq);
		json_replicas(&w, e, rs);
		ks_json_buf_printf(&w, "}");
	}
	ks_json_buf_printf(&w, "],\"rules\":[");
	for (i = 0; i < t->rules.n; i++) {
		const struct ks_hot_rule *r = &t->rules.r[i];

		ks_json_buf_printf(
			&w, "%s{\"type\":\"%s\",\"%s\":", i ? "," : "",
			ks_hot_rule_name(r->type),
			r->type == KS_RULE_PIN || r->type == KS_RULE_LIMIT ||
					r->type == KS_RULE_SHARD
				? "key"
				: "prefix");
		ks_json_buf_string(&w, r->key, r->len);
		if (ks_hot_rule_is_shard(r->type)) {
			/* a dedicated shard: the shard, no count */
			ks_json_buf_printf(&w, ",\"shard\":");
			ks_json_buf_string(&w, (const __u8 *)r->shard,
					   strlen(r->shard));
			ks_json_buf_printf(&w, "}");
			continue;
		}
		ks_json_buf_printf(&w, ",\"%s\":%u}",
				   ks_hot_rule_is_limit(r->type) ? "rate_per_s"
				   : r->type == KS_RULE_SPLIT_PREFIX ? "ways"
								     : "copies",
				   r->count);
	}
	ks_json_buf_printf(&w, "]");
	json_steer(&w, rs, owner_turns);
	ks_json_buf_printf(&w, "}");
	return ks_json_buf_end(&w);
}
