// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* purge.c - the pure parts of the ownership-loss purge (core/purge.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/purge.h"
#include "core/ring_diff.h"

int ks_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* memcached's uriencode escapes every byte outside [A-Za-z0-9-._~] as
 * %XX; anything else passes as is, so a '%' not followed by two hex
 * digits cannot come from it. */
static int uri_decode(const char *s, size_t n, __u8 *out, size_t *olen)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		int hi, lo;

		if (o == KS_MC_KEY_MAX)
			return -1;
		if (s[i] != '%') {
			out[o++] = (__u8)s[i];
			continue;
		}
		if (i + 2 >= n)
			return -1;
		hi = ks_hex_digit(s[i + 1]);
		lo = ks_hex_digit(s[i + 2]);
		if (hi < 0 || lo < 0)
			return -1;
		out[o++] = (__u8)(hi << 4 | lo);
		i += 2;
	}
	*olen = o;
	return o ? 0 : -1;
}

static int starts(const char *line, size_t len, const char *word)
{
	size_t n = strlen(word);

	return len >= n && !memcmp(line, word, n) &&
	       (len == n || line[n] == ' ');
}

enum ks_md_line ks_metadump_line(const char *line, size_t len, __u8 *key,
				 size_t *klen)
{
	size_t n;

	if (len >= 4 && !memcmp(line, "key=", 4)) {
		n = 4;
		while (n < len && line[n] != ' ')
			n++;
		if (uri_decode(line + 4, n - 4, key, klen))
			return KS_MD_BAD;
		return KS_MD_ITEM;
	}
	if (len == 3 && !memcmp(line, "END", 3))
		return KS_MD_END;
	if (starts(line, len, "BUSY"))
		return KS_MD_BUSY;
	if (starts(line, len, "NOTSTARTED"))
		return KS_MD_EMPTY;
	if (starts(line, len, "ERROR") || starts(line, len, "CLIENT_ERROR") ||
	    starts(line, len, "SERVER_ERROR") || starts(line, len, "BADCLASS"))
		return KS_MD_ERROR;
	return KS_MD_BAD;
}

int ks_purge_owned(const struct ks_ring *r, __u32 self, const void *key,
		   size_t len)
{
	if (self == KS_NO_SHARD || !r->half)
		return 0;
	return ks_ring_lookup(r, key, len) == self;
}

__u32 ks_purge_self_index(const struct ks_shards *s, const char *self)
{
	char host[KS_SHARD_HOST_MAX + 1];
	const char *colon;
	unsigned long port;
	char *end;
	int i;

	if (!self || !(colon = strrchr(self, ':')) || colon == self ||
	    (size_t)(colon - self) > KS_SHARD_HOST_MAX)
		return KS_NO_SHARD;
	port = strtoul(colon + 1, &end, 10);
	if (*end || !colon[1] || port == 0 || port > 65535)
		return KS_NO_SHARD;
	memcpy(host, self, (size_t)(colon - self));
	host[colon - self] = '\0';
	i = ks_shards_find(s, host, (__u16)port);
	return i < 0 ? KS_NO_SHARD : (__u32)i;
}

int ks_purge_gate(const struct ks_ring *rf, const struct ks_shards *sf,
		  const struct ks_ring *rt, const struct ks_shards *st,
		  const char *self, int forced, struct ks_purge_gate *g)
{
	__u32 i;
	__u32 sf_self = ks_purge_self_index(sf, self);
	__u32 st_self = ks_purge_self_index(st, self);
	__u64 away = 0;
	struct ks_ring_diff d;
	char key[32], refusal[160];

	memset(g, 0, sizeof(*g));
	g->forced = forced;
	if (ks_ring_diff_init(&d, rf, sf, rt, st))
		return -ENOMEM;
	for (i = 0; i < KS_PURGE_SAMPLES; i++) {
		int n = snprintf(key, sizeof(key), "ks:purge:sample:%u", i);
		__u32 a = ks_ring_lookup(rf, key, (size_t)n);

		ks_ring_diff_key(&d, key, (size_t)n);
		away += a == sf_self && sf_self != KS_NO_SHARD &&
			!ks_purge_owned(rt, st_self, key, (size_t)n);
	}
	g->moved = d.keys ? (double)d.moved / (double)d.keys : 0;
	g->away = (double)away / KS_PURGE_SAMPLES;
	ks_ring_diff_free(&d);
	g->changed = ks_ring_shards_missing(sf, st) +
		     ks_ring_shards_missing(st, sf);
	/* the rule 'ring set' holds an operator to without --force: what
	 * it writes unforced, every agent purges for */
	g->ideal = ks_ring_ideal_moved(sf, st);
	g->limit = ks_ring_move_limit(g->ideal);
	g->allowed = forced ||
		     !ks_ring_change_needs_force(sf, st, g->moved, refusal,
						 sizeof(refusal));
	if (g->allowed)
		snprintf(
			g->why, sizeof(g->why),
			"the change moves %.1f%% of keys (%s%.1f%%), %.1f%% away from this shard",
			g->moved * 100, forced ? "forced; ideal " : "ideal ",
			g->ideal * 100, g->away * 100);
	else
		snprintf(
			g->why, sizeof(g->why),
			"the change was not forced (agent ring set --force) and %s",
			refusal);
	return 0;
}

__u64 ks_pace_due(__u64 start_ns, __u64 done, __u64 rate)
{
	if (!rate)
		return ~0ULL;
	/* done / rate seconds, exact to the ns for any count below 2^34 */
	return start_ns + done / rate * 1000000000ULL +
	       done % rate * 1000000000ULL / rate;
}

__u64 ks_pace_rebase(__u64 start_ns, __u64 done, __u64 rate, __u64 now)
{
	__u64 due = ks_pace_due(start_ns, done, rate);

	if (!rate || now <= due + KS_PACE_SLACK_NS)
		return start_ns;
	return start_ns + (now - KS_PACE_SLACK_NS - due);
}

__u32 ks_pace_batch(__u64 rate)
{
	__u64 b = rate / 20;

	if (b < 1)
		return 1;
	return b > KS_PURGE_BATCH ? KS_PURGE_BATCH : (__u32)b;
}

double ks_purge_rate(__u64 n, __u64 ns)
{
	return ns ? (double)n * 1e9 / (double)ns : 0;
}

int ks_ring_dup(struct ks_ring *dst, const struct ks_ring *r)
{
	__u32 i, n;
	size_t cap = 0, off = 0;

	memset(dst, 0, sizeof(*dst));
	if (!r->half)
		return 0;
	dst->vnodes = r->vnodes;
	dst->half = malloc(sizeof(*dst->half));
	if (!dst->half)
		return -ENOMEM;
	memcpy(dst->half, r->half, sizeof(*dst->half));
	if (!r->rdv)
		return 0;
	n = r->half->meta.nshards;
	for (i = 0; i < n; i++)
		cap += strlen(r->rdv[i].name) + 1;
	dst->rdv = calloc(n, sizeof(*dst->rdv));
	dst->rdv_names = malloc(cap ? cap : 1);
	if (!dst->rdv || !dst->rdv_names) {
		ks_ring_free(dst);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		size_t l = strlen(r->rdv[i].name) + 1;

		dst->rdv[i] = r->rdv[i];
		memcpy(dst->rdv_names + off, r->rdv[i].name, l);
		dst->rdv[i].name = dst->rdv_names + off;
		off += l;
	}
	return 0;
}

int ks_shards_dup(struct ks_shards *dst, const struct ks_shards *s)
{
	*dst = *s;
	dst->v = NULL;
	if (!s->n)
		return 0;
	dst->v = malloc(s->n * sizeof(*dst->v));
	if (!dst->v) {
		memset(dst, 0, sizeof(*dst));
		return -ENOMEM;
	}
	memcpy(dst->v, s->v, s->n * sizeof(*dst->v));
	return 0;
}

const char *ks_purge_state_name(__u32 state)
{
	static const char *const names[] = { "off", "idle", "purging", "grace",
					     "sweeping" };

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}
