// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* dedicated.c - shard rules against a ring's shards (see dedicated.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "core/dedicated.h"

int ks_dedicated_shard_index(const struct ks_shards *s, const char *name)
{
	char addr[KS_SHARD_HOST_MAX + 8];
	__u32 i;

	for (i = 0; i < s->n; i++) {
		ks_shard_addr(&s->v[i], addr, sizeof(addr));
		if (!strcmp(addr, name))
			return (int)i;
	}
	/* a name only when no address matched: an address is unique */
	for (i = 0; i < s->n; i++)
		if (s->v[i].name[0] && !strcmp(s->v[i].name, name))
			return (int)i;
	return -1;
}

size_t ks_dedicated_count(const struct ks_hot_rules *r)
{
	size_t i, n = 0;

	for (i = 0; i < r->n; i++)
		n += ks_hot_rule_is_shard(r->r[i].type) != 0;
	return n;
}

size_t ks_dedicated_resolve(const struct ks_hot_rules *r,
			    const struct ks_shards *s, int *idx)
{
	size_t i, lost = 0;

	for (i = 0; i < r->n; i++) {
		idx[i] = -1;
		if (!ks_hot_rule_is_shard(r->r[i].type))
			continue;
		idx[i] = ks_dedicated_shard_index(s, r->r[i].shard);
		lost += idx[i] < 0;
	}
	return lost;
}

int ks_dedicated_check(const struct ks_hot_rules *r, const struct ks_shards *s,
		       char *err, size_t errlen)
{
	char list[200] = "", addr[KS_SHARD_HOST_MAX + 8];
	size_t i, off = 0;
	__u32 j;

	for (i = 0; i < r->n; i++) {
		const struct ks_hot_rule *x = &r->r[i];

		if (!ks_hot_rule_is_shard(x->type) ||
		    ks_dedicated_shard_index(s, x->shard) >= 0)
			continue;
		for (j = 0; j < s->n && off < sizeof(list) - 1; j++) {
			int n;

			ks_shard_addr(&s->v[j], addr, sizeof(addr));
			n = snprintf(list + off, sizeof(list) - off, "%s%s",
				     j ? ", " : "", addr);
			off += n > 0 ? (size_t)n : 0;
		}
		if (off >= sizeof(list) - 1)
			memcpy(list + sizeof(list) - 5, "...", 4);
		snprintf(
			err, errlen,
			"shard %.*s%s %s: no shard %s in the ring (%s, %u shards: %s)",
			(int)x->len, (const char *)x->key,
			x->type == KS_RULE_SHARD_PREFIX ? "*" : "", x->shard,
			x->shard, s->source[0] ? s->source : "the ring", s->n,
			list);
		return -ENOENT;
	}
	return 0;
}

int ks_dedicated_place(const struct ks_hot_rules *r, const int *idx,
		       const void *key, size_t len,
		       const struct ks_hot_rule **rule)
{
	const struct ks_hot_rule *m = ks_hot_shard_match(r, key, len);

	if (rule)
		*rule = m;
	if (!m)
		return -1;
	return idx[m - r->r];
}
