// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "dp/limit_map.h"

static int open_one(void *obj, const char *pin_dir, const char *name)
{
	char path[512];

	if (obj)
		return bpf_object__find_map_fd_by_name(obj, name);
	snprintf(path, sizeof(path), "%s/%s", pin_dir, name);
	return bpf_obj_get(path);
}

int ks_limit_map_open(struct ks_limit_map *m, void *obj, const char *pin_dir)
{
	memset(m, 0, sizeof(*m));
	m->limits = m->stats = m->info = m->pkts = -1;
	m->own = !obj;
	m->ncpus = libbpf_num_possible_cpus();
	if (m->ncpus <= 0)
		return m->ncpus ? m->ncpus : -EINVAL;
	m->row = calloc((size_t)m->ncpus, sizeof(*m->row));
	if (!m->row)
		return -ENOMEM;
	m->limits = open_one(obj, pin_dir, "ks_limits");
	m->stats = open_one(obj, pin_dir, "ks_limit_stats");
	m->info = open_one(obj, pin_dir, "ks_limit_info");
	m->pkts = open_one(obj, pin_dir, "ks_limit_pkts");
	if (m->limits < 0 || m->stats < 0 || m->info < 0 || m->pkts < 0) {
		ks_limit_map_close(m);
		return -ENOENT;
	}
	return 0;
}

void ks_limit_map_close(struct ks_limit_map *m)
{
	/* a loaded object's fds are the object's to close */
	if (m->own) {
		if (m->limits >= 0)
			close(m->limits);
		if (m->stats >= 0)
			close(m->stats);
		if (m->info >= 0)
			close(m->info);
		if (m->pkts >= 0)
			close(m->pkts);
	}
	m->limits = m->stats = m->info = m->pkts = -1;
	free(m->row);
	m->row = NULL;
}

int ks_limit_map_clear(struct ks_limit_map *m)
{
	struct ks_limit_info none = {};
	__u64 key, next;
	__u32 i;
	int err = 0;

	while (!bpf_map_get_next_key(m->limits, NULL, &next)) {
		key = next;
		if (bpf_map_delete_elem(m->limits, &key))
			return -errno;
	}
	for (i = 0; i < KS_LIMIT_SLOTS && !err; i++)
		if (bpf_map_update_elem(m->info, &i, &none, 0))
			err = -errno;
	return err;
}

int ks_limit_map_sync(struct ks_limit_map *m, struct ks_limit_set *s)
{
	__u32 i;
	int err = 0;

	for (i = 0; i < KS_LIMIT_SLOTS; i++) {
		struct ks_limit_entry *e = &s->e[i];
		struct ks_limit_slot v;

		if (e->state == KS_LIMIT_GONE) {
			if (bpf_map_delete_elem(m->limits, &e->old_hash) &&
			    errno != ENOENT && !err)
				err = -errno;
			continue;
		}
		if (e->state != KS_LIMIT_DIRTY)
			continue;
		/* a row taken over from another key: that key's entry first */
		if (e->old_hash && e->old_hash != e->hash &&
		    bpf_map_delete_elem(m->limits, &e->old_hash) &&
		    errno != ENOENT && !err)
			err = -errno;
		if (e->fresh) {
			memset(m->row, 0, (size_t)m->ncpus * sizeof(*m->row));
			if (bpf_map_update_elem(m->stats, &i, m->row, 0) &&
			    !err)
				err = -errno;
		}
		memset(&v, 0, sizeof(v));
		v.id = i;
		v.interval_ns = ks_limit_interval_ns(e->rate);
		v.tau_ns = ks_limit_tau_ns(e->rate);
		v.len = e->len;
		memcpy(v.key, e->key, e->len);
		if (bpf_map_update_elem(m->limits, &e->hash, &v, 0) && !err)
			err = -errno;
	}
	if (!err)
		ks_limits_synced(s);
	return err;
}

int ks_limit_map_read(struct ks_limit_map *m, __u32 id,
		      struct ks_limit_stats *sum)
{
	int c;

	memset(sum, 0, sizeof(*sum));
	if (bpf_map_lookup_elem(m->stats, &id, m->row))
		return -errno;
	for (c = 0; c < m->ncpus; c++) {
		sum->allowed += m->row[c].allowed;
		sum->refused += m->row[c].refused;
		sum->collided += m->row[c].collided;
		sum->tcp += m->row[c].tcp;
	}
	return 0;
}

int ks_limit_map_pkts(struct ks_limit_map *m, struct ks_limit_pkts *sum)
{
	struct ks_limit_pkts *v;
	__u32 zero = 0;
	int c, i;

	memset(sum, 0, sizeof(*sum));
	v = calloc((size_t)m->ncpus, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(m->pkts, &zero, v)) {
		free(v);
		return -errno;
	}
	for (c = 0; c < m->ncpus; c++)
		for (i = 0; i < KS_LIM_MAX; i++)
			sum->n[i] += v[c].n[i];
	free(v);
	return 0;
}
