// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* dedicated_map.c - shard rules into the datapath (dedicated_map.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "ks_ring.h"
#include "dp/dedicated_map.h"

int ks_ded_open(struct ks_ded_fds *f, const char *pin_dir)
{
	const char *names[] = { "ks_ded_meta", "ks_ded_exact", "ks_ded_prefix",
				"ks_ded_stats" };
	int *fds[] = { &f->meta, &f->exact, &f->prefix, &f->stats };
	char path[PATH_MAX];
	size_t i;

	f->meta = f->exact = f->prefix = f->stats = -1;
	for (i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s", pin_dir, names[i]);
		*fds[i] = bpf_obj_get(path);
		if (*fds[i] < 0) {
			int err = -errno;

			ks_ded_close(f);
			return err;
		}
	}
	return 0;
}

void ks_ded_close(struct ks_ded_fds *f)
{
	int *fds[] = { &f->meta, &f->exact, &f->prefix, &f->stats };
	size_t i;

	for (i = 0; i < 4; i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

static __u32 shard_of(const int *const idx[2], size_t h, size_t i)
{
	int x = idx[h] ? idx[h][i] : -1;

	return x < 0 || x >= KS_MAX_SHARDS ? KS_NO_SHARD : (__u32)x;
}

void ks_ded_exact_of(const struct ks_hot_rule *r, const __u32 shard[2],
		     __u64 *hash, struct ks_dedicated_exact *v)
{
	memset(v, 0, sizeof(*v));
	memcpy(v->key, r->key, r->len);
	v->len = r->len;
	v->shard[0] = shard[0];
	v->shard[1] = shard[1];
	*hash = ks_key_hash(v->key, r->len);
}

void ks_ded_prefix_of(const struct ks_hot_rule *r, const __u32 shard[2],
		      struct ks_dedicated_lpm_key *k,
		      struct ks_dedicated_prefix *v)
{
	memset(k, 0, sizeof(*k));
	memcpy(k->data, r->key,
	       r->len < KS_DEDICATED_PREFIX_MAX ? r->len
						: KS_DEDICATED_PREFIX_MAX);
	k->prefixlen = 8 * (r->len < KS_DEDICATED_PREFIX_MAX
				    ? r->len
				    : KS_DEDICATED_PREFIX_MAX);
	v->shard[0] = shard[0];
	v->shard[1] = shard[1];
}

/* Deletes every key of map fd not among keep[0..n) (ksize bytes each). */
static int delete_others(int fd, const void *keep, size_t n, size_t ksize)
{
	unsigned char cur[sizeof(struct ks_dedicated_lpm_key)],
		gone[KS_DEDICATED_MAX + 1][sizeof(struct ks_dedicated_lpm_key)];
	size_t ngone = 0, i;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, cur)) {
		for (i = 0; i < n; i++)
			if (!memcmp((const char *)keep + i * ksize, cur, ksize))
				break;
		if (i == n && ngone <= KS_DEDICATED_MAX)
			memcpy(gone[ngone++], cur, ksize);
		memcpy(gone[KS_DEDICATED_MAX], cur, ksize);
		prev = gone[KS_DEDICATED_MAX];
	}
	if (errno != ENOENT)
		return -errno;
	for (i = 0; i < ngone; i++)
		if (bpf_map_delete_elem(fd, gone[i]) && errno != ENOENT)
			return -errno;
	return 0;
}

int ks_ded_write(const struct ks_ded_fds *f, const struct ks_hot_rules *r,
		 const int *const idx[KS_DEDICATED_HALVES])
{
	__u64 hashes[KS_HOT_RULES_MAX];
	struct ks_dedicated_lpm_key keys[KS_HOT_RULES_MAX];
	struct ks_dedicated_meta meta = { 0 };
	struct ks_dedicated_exact ev;
	struct ks_dedicated_prefix pv;
	__u32 zero = 0, shard[2];
	size_t i;
	int err;

	for (i = 0; i < r->n; i++) {
		const struct ks_hot_rule *x = &r->r[i];

		shard[0] = shard_of(idx, 0, i);
		shard[1] = shard_of(idx, 1, i);
		if (ks_hot_rule_is_shard(x->type))
			meta.first[x->key[0] >> 6] |= 1ULL << (x->key[0] & 63);
		if (x->type == KS_RULE_SHARD) {
			ks_ded_exact_of(x, shard, &hashes[meta.exact], &ev);
			if (bpf_map_update_elem(f->exact, &hashes[meta.exact],
						&ev, BPF_ANY))
				return -errno;
			meta.exact++;
		} else if (x->type == KS_RULE_SHARD_PREFIX) {
			ks_ded_prefix_of(x, shard, &keys[meta.prefix], &pv);
			if (bpf_map_update_elem(f->prefix, &keys[meta.prefix],
						&pv, BPF_ANY))
				return -errno;
			meta.prefix++;
		}
	}
	err = delete_others(f->exact, hashes, meta.exact, sizeof(hashes[0]));
	if (!err)
		err = delete_others(f->prefix, keys, meta.prefix,
				    sizeof(keys[0]));
	if (err)
		return err;
	return bpf_map_update_elem(f->meta, &zero, &meta, BPF_ANY) ? -errno : 0;
}

int ks_ded_read_stats(const struct ks_ded_fds *f, struct ks_dedicated_stats *s)
{
	int ncpus = libbpf_num_possible_cpus(), c, k;
	struct ks_dedicated_stats *per;
	__u32 zero = 0;

	memset(s, 0, sizeof(*s));
	if (ncpus <= 0)
		return ncpus < 0 ? ncpus : -EINVAL;
	per = calloc((size_t)ncpus, sizeof(*per));
	if (!per)
		return -ENOMEM;
	if (bpf_map_lookup_elem(f->stats, &zero, per)) {
		int err = -errno;

		free(per);
		return err;
	}
	for (c = 0; c < ncpus; c++)
		for (k = 0; k < KS_DED_STAT_MAX; k++)
			s->n[k] += per[c].n[k];
	free(per);
	return 0;
}

long ks_ded_read(const struct ks_ded_fds *f, struct ks_ded_entry *out,
		 size_t max)
{
	struct ks_dedicated_lpm_key k, *pk = NULL;
	struct ks_dedicated_exact ev;
	struct ks_dedicated_prefix pv;
	__u64 h, *ph = NULL;
	size_t n = 0;

	while (n < max && !bpf_map_get_next_key(f->exact, ph, &h)) {
		ph = &h;
		if (bpf_map_lookup_elem(f->exact, &h, &ev))
			continue; /* deleted meanwhile */
		out[n].prefix = 0;
		out[n].len = ev.len < KS_KEY_BUF ? ev.len : KS_KEY_BUF;
		memcpy(out[n].key, ev.key, out[n].len);
		memcpy(out[n].shard, ev.shard, sizeof(ev.shard));
		n++;
	}
	while (n < max && !bpf_map_get_next_key(f->prefix, pk, &k)) {
		pk = &k;
		if (bpf_map_lookup_elem(f->prefix, &k, &pv))
			continue;
		out[n].prefix = 1;
		out[n].len = k.prefixlen / 8 < KS_DEDICATED_PREFIX_MAX
				     ? k.prefixlen / 8
				     : KS_DEDICATED_PREFIX_MAX;
		memcpy(out[n].key, k.data, out[n].len);
		memcpy(out[n].shard, pv.shard, sizeof(pv.shard));
		n++;
	}
	return (long)n;
}
