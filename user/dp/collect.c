// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * collect.c - reading the datapath's maps into the agent (see collect.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "dp/collect.h"
#include "core/hotkeys.h"
#include "core/sample_rate.h"
#include "util/clock.h"
#include "util/log.h"

void ks_maps_init(struct ks_maps *m)
{
	m->config = m->ops = m->errors = m->pkts = -1;
	m->cms = m->cands = m->events = m->report = -1;
	m->ring = m->shards = m->misdirect = m->shard_report = -1;
	m->hot = m->hot_stats = m->replicas = m->replica_stats = -1;
	m->hot_events = m->vlans = -1;
	m->hot_filter = -1;
	m->hot_replies = -1;
	m->rate = -1;
	m->slog = m->slog_pos = -1;
}

int ks_maps_open_pinned(struct ks_maps *m, const char *pin_dir)
{
	const struct {
		const char *name;
		int *fd;
	} tab[] = {
		{ "ks_config", &m->config },
		{ "ks_ops", &m->ops },
		{ "ks_errors", &m->errors },
		{ "ks_pkts", &m->pkts },
		{ "ks_cms", &m->cms },
		{ "ks_cands", &m->cands },
		{ "ks_events", &m->events },
		{ "ks_report", &m->report },
		{ "ks_ring", &m->ring },
		{ "ks_shards", &m->shards },
		{ "ks_misdirect", &m->misdirect },
		{ "ks_shard_report", &m->shard_report },
		{ "ks_hot", &m->hot },
		{ "ks_hot_stats", &m->hot_stats },
		{ "ks_replicas", &m->replicas },
		{ "ks_replica_stats", &m->replica_stats },
		{ "ks_hot_events", &m->hot_events },
		{ "ks_hot_filter", &m->hot_filter },
	};
	char path[PATH_MAX];
	size_t i;

	ks_maps_init(m);
	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", pin_dir, tab[i].name);
		*tab[i].fd = bpf_obj_get(path);
		if (*tab[i].fd < 0) {
			int err = -errno;

			ks_debug("opening %s: %s", path, strerror(errno));
			ks_maps_close(m);
			return err;
		}
	}
	return 0;
}

void ks_maps_close(struct ks_maps *m)
{
	int *fds[] = { &m->config,        &m->ops,         &m->errors,
		       &m->pkts,          &m->cms,         &m->cands,
		       &m->events,        &m->report,      &m->ring,
		       &m->shards,        &m->misdirect,   &m->shard_report,
		       &m->hot,           &m->hot_stats,   &m->replicas,
		       &m->replica_stats, &m->hot_events,  &m->vlans,
		       &m->hot_filter,    &m->hot_replies, &m->rate,
		       &m->slog,          &m->slog_pos };
	size_t i;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

int ks_collector_init(struct ks_collector *c, const struct ks_maps *m)
{
	memset(c, 0, sizeof(*c));
	c->maps = m;
	c->ncpus = libbpf_num_possible_cpus();
	if (c->ncpus <= 0)
		return c->ncpus < 0 ? c->ncpus : -EINVAL;
	c->row_buf = calloc((size_t)c->ncpus,
			    ks_percpu_stride(sizeof(__u32) * KS_CMS_SEG));
	c->cand_buf = calloc((size_t)c->ncpus,
			     ks_percpu_stride(sizeof(struct ks_cand)));
	c->cands_cap = (size_t)c->ncpus * KS_CAND_SLOTS;
	c->cands = calloc(c->cands_cap, sizeof(struct ks_cand));
	c->ranked = calloc(KS_HOT_CAP, sizeof(struct ks_top_entry));
	if (!c->row_buf || !c->cand_buf || !c->cands || !c->ranked) {
		ks_collector_free(c);
		return -ENOMEM;
	}
	return 0;
}

int ks_collector_set_slog(struct ks_collector *c, struct ks_slog_fold *const *f,
			  int k)
{
	size_t cap = (size_t)c->ncpus * KS_CAND_SLOTS +
		     (f ? ks_slog_folds_slots(f, k) : 0);
	struct ks_cand *n = realloc(c->cands, cap * sizeof(*n));

	if (!n)
		return -ENOMEM;
	c->cands = n;
	c->cands_cap = cap;
	c->slog = f;
	c->nslog = f ? k : 0;
	return 0;
}

void ks_collector_free(struct ks_collector *c)
{
	free(c->row_buf);
	free(c->cand_buf);
	free(c->cands);
	free(c->ranked);
	c->row_buf = NULL;
	c->cand_buf = NULL;
	c->cands = NULL;
	c->ranked = NULL;
	c->nranked = 0;
}

/* Sums ncpus u64 counters laid out stride 8 (a percpu u64 lookup). */
static int sum_u64_percpu(int fd, __u32 key, int ncpus, __u64 *buf, __u64 *out)
{
	int cpu;

	if (bpf_map_lookup_elem(fd, &key, buf))
		return -errno;
	*out = 0;
	for (cpu = 0; cpu < ncpus; cpu++)
		*out += buf[cpu];
	return 0;
}

/* ks_pkts is one per-CPU struct ks_pkt_counters (a multiple of 8 bytes). */
static int sum_pkt_counters(int fd, int ncpus, __u64 out[KS_PKT_MAX])
{
	struct ks_pkt_counters *buf = calloc((size_t)ncpus, sizeof(*buf));
	__u32 zero = 0, k;
	int cpu, err = 0;

	if (!buf)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &zero, buf)) {
		err = -errno;
		goto out;
	}
	for (k = 0; k < KS_PKT_MAX; k++) {
		out[k] = 0;
		for (cpu = 0; cpu < ncpus; cpu++)
			out[k] += buf[cpu].n[k];
	}
out:
	free(buf);
	return err;
}

int ks_read_totals(struct ks_collector *c, struct ks_totals *t)
{
	const struct ks_maps *m = c->maps;
	/* struct ks_op_stats is 24 bytes: already a multiple of 8. */
	struct ks_op_stats *ops;
	__u64 *u64s;
	__u32 k;
	int cpu, err = 0;

	memset(t, 0, sizeof(*t));
	ops = calloc((size_t)c->ncpus, sizeof(*ops));
	u64s = calloc((size_t)c->ncpus, sizeof(*u64s));
	if (!ops || !u64s) {
		err = -ENOMEM;
		goto out;
	}
	for (k = 0; k < KS_OP_MAX; k++) {
		if (bpf_map_lookup_elem(m->ops, &k, ops)) {
			err = -errno;
			goto out;
		}
		for (cpu = 0; cpu < c->ncpus; cpu++) {
			t->ops[k].requests += ops[cpu].requests;
			t->ops[k].keys += ops[cpu].keys;
			t->ops[k].bytes += ops[cpu].bytes;
		}
	}
	for (k = 0; k < KS_ERR_MAX && !err; k++)
		err = sum_u64_percpu(m->errors, k, c->ncpus, u64s,
				     &t->errors[k]);
	if (!err)
		err = sum_pkt_counters(m->pkts, c->ncpus, t->pkts);
	/* ks_ops lacks the fast path's gets: every reader of these totals
	 * (report, metrics, replay, the interval's rates) sees them once */
	if (!err)
		ks_ops_fold_fast(t->ops, t->pkts);
out:
	free(ops);
	free(u64s);
	return err;
}

int ks_read_sketch(struct ks_collector *c, __u32 epoch, struct ks_sketch *out,
		   const __u32 *cpu_n)
{
	size_t stride = ks_percpu_stride(sizeof(__u32) * KS_CMS_SEG);
	__u32 cls, r, seg;

	memset(out, 0, sizeof(*out));
	for (cls = 0; cls < KS_CMS_CLASSES; cls++) {
		for (r = 0; r < KS_CMS_DEPTH; r++) {
			for (seg = 0; seg < KS_CMS_SEGS; seg++) {
				__u32 key = ks_cms_entry(
					ks_cms_index(epoch, cls, r), seg);

				if (bpf_map_lookup_elem(c->maps->cms, &key,
							c->row_buf))
					return -errno;
				ks_cms_merge_row_weighted(
					&out->c[cls][r][seg * KS_CMS_SEG],
					c->row_buf, c->ncpus, stride, cpu_n);
			}
		}
	}
	if (c->slog)
		ks_slog_folds_sketch(c->slog, c->nslog, epoch, out);
	return 0;
}

int ks_zero_sketch(struct ks_collector *c, __u32 epoch)
{
	size_t stride = ks_percpu_stride(sizeof(__u32) * KS_CMS_SEG);
	__u32 cls, r, seg;

	memset(c->row_buf, 0, stride * (size_t)c->ncpus);
	for (cls = 0; cls < KS_CMS_CLASSES; cls++) {
		for (r = 0; r < KS_CMS_DEPTH; r++) {
			for (seg = 0; seg < KS_CMS_SEGS; seg++) {
				__u32 key = ks_cms_entry(
					ks_cms_index(epoch, cls, r), seg);

				if (bpf_map_update_elem(c->maps->cms, &key,
							c->row_buf, BPF_ANY))
					return -errno;
			}
		}
	}
	if (c->slog)
		ks_slog_folds_reset(c->slog, c->nslog, epoch);
	return 0;
}

long ks_read_cands(struct ks_collector *c, __u32 seq)
{
	size_t stride = ks_percpu_stride(sizeof(struct ks_cand));
	const unsigned char *buf = (const unsigned char *)c->cand_buf;
	size_t n = 0;
	__u32 slot;
	int cpu;

	for (slot = 0; slot < KS_CAND_SLOTS; slot++) {
		if (bpf_map_lookup_elem(c->maps->cands, &slot, c->cand_buf))
			return -errno;
		for (cpu = 0; cpu < c->ncpus; cpu++) {
			const struct ks_cand *cand =
				(const void *)(buf + (size_t)cpu * stride);

			if (n < c->cands_cap && ks_cand_usable(cand, seq))
				c->cands[n++] = *cand;
		}
	}
	/* keys the log brought: one table a drain thread, in keys; a key
	 * also in a CPU's table (its log was full once) or in two threads'
	 * tables is one key */
	if (c->slog)
		n += ks_slog_folds_cands(c->slog, c->nslog, seq, c->cands + n,
					 c->cands_cap - n);
	return (long)ks_cands_dedup(c->cands, n);
}

int ks_read_config(const struct ks_maps *m, struct ks_config *cfg)
{
	__u32 key = 0;

	return bpf_map_lookup_elem(m->config, &key, cfg) ? -errno : 0;
}

int ks_write_config(const struct ks_maps *m, const struct ks_config *cfg)
{
	__u32 key = 0;

	return bpf_map_update_elem(m->config, &key, cfg, BPF_ANY) ? -errno : 0;
}

int ks_read_report(const struct ks_maps *m, struct ks_report *rep)
{
	__u32 key = 0;

	return bpf_map_lookup_elem_flags(m->report, &key, rep, BPF_F_LOCK)
		       ? -errno
		       : 0;
}

int ks_write_report(const struct ks_maps *m, const struct ks_report *rep)
{
	__u32 key = 0;

	return bpf_map_update_elem(m->report, &key, rep, BPF_F_LOCK) ? -errno
								     : 0;
}

int ks_read_shard_counts(struct ks_collector *c, __u32 n,
			 struct ks_shard_counts *out, __u64 *cpu_load)
{
	size_t stride = ks_percpu_stride(sizeof(struct ks_shard_stats));
	void *buf = calloc((size_t)c->ncpus, stride);
	__u32 i;
	int err = 0, cpu;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < n && i < KS_MAX_SHARDS; i++) {
		if (bpf_map_lookup_elem(c->maps->shards, &i, buf)) {
			err = -errno;
			break;
		}
		ks_shard_sum(buf, c->ncpus, stride, &out[i]);
		for (cpu = 0; cpu_load && cpu < c->ncpus; cpu++) {
			const struct ks_shard_stats *st =
				(const void *)((const char *)buf +
					       (size_t)cpu * stride);

			cpu_load[(size_t)i * c->ncpus + cpu] = st->reads +
							       st->writes;
		}
	}
	free(buf);
	return err;
}

long ks_read_misdirect(struct ks_collector *c, struct ks_misdirect *out)
{
	size_t stride = ks_percpu_stride(sizeof(struct ks_misdirect));
	unsigned char *buf = calloc((size_t)c->ncpus, stride);
	long n = 0;
	__u32 slot;
	int cpu;

	if (!buf)
		return -ENOMEM;
	for (slot = 0; slot < KS_MISDIRECT_SLOTS; slot++) {
		if (bpf_map_lookup_elem(c->maps->misdirect, &slot, buf)) {
			n = -errno;
			break;
		}
		for (cpu = 0; cpu < c->ncpus; cpu++)
			memcpy(&out[n++], buf + (size_t)cpu * stride,
			       sizeof(*out));
	}
	free(buf);
	return n;
}

int ks_read_shard_report(const struct ks_maps *m, struct ks_shard_report *r)
{
	__u32 key = 0;

	return bpf_map_lookup_elem_flags(m->shard_report, &key, r, BPF_F_LOCK)
		       ? -errno
		       : 0;
}

int ks_write_shard_report(const struct ks_maps *m,
			  const struct ks_shard_report *r)
{
	__u32 key = 0;

	return bpf_map_update_elem(m->shard_report, &key, r, BPF_F_LOCK)
		       ? -errno
		       : 0;
}

long ks_estimate_interval(struct ks_collector *c, __u32 epoch, __u32 seq,
			  const __u32 *cpu_n, __u32 top, __u64 elapsed_ns,
			  const struct ks_totals *prev, struct ks_totals *cur,
			  struct ks_sketch *sk, __u64 *totals_ns,
			  struct ks_report *rep)
{
	struct ks_interval iv;
	__u64 rates_ns = elapsed_ns, now;
	long ncands;
	int err;

	err = ks_read_totals(c, cur);
	if (err)
		return err;
	if (totals_ns) {
		now = ks_mono_ns();
		rates_ns = now - *totals_ns;
		*totals_ns = now;
	}
	err = ks_read_sketch(c, epoch, sk, cpu_n);
	if (err)
		return err;
	ncands = ks_read_cands(c, seq);
	if (ncands < 0)
		return ncands;
	/* the sketch is in keys already: scaled by 1 */
	ks_interval_init(&iv, sk, prev, cur, 1, elapsed_ns);
	iv.rate_max = ks_rates_max(cpu_n, c->ncpus);
	ks_fill_rates(prev, cur, rates_ns, rep);
	rep->sampled_total = cur->pkts[KS_PKT_SAMPLED] -
			     prev->pkts[KS_PKT_SAMPLED];
	c->nranked = ks_top_rank(sk, &iv, c->cands, (size_t)ncands, c->ranked,
				 KS_HOT_CAP, top, rep);
	return ncands;
}
