// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * hot_map.c - field-by-field writes to the mmapped ks_hot slots (see
 * hot_map.h for the protocol). Stores that publish a state use release
 * order so the fields written before them are visible first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "dp/hot_map.h"

#define STORE(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELEASE)
#define LOAD(p)     __atomic_load_n(&(p), __ATOMIC_ACQUIRE)

/* Page-rounded shared mapping of an mmapable map's values, or NULL. */
static void *map_values(int fd, size_t len, size_t *rounded)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	*rounded = (len + page - 1) / page * page;
	p = mmap(NULL, *rounded, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* A bucket's filter bit, on: before any of its ways gets a hash. */
static void filter_mark(struct ks_hot_map *m, __u32 b)
{
	__atomic_fetch_or(&m->filter->bits[b / 64], 1ULL << (b % 64),
			  __ATOMIC_SEQ_CST);
}

/* Off once no way of the bucket holds a key or waits for its grace
 * period: a packet that still saw the bit set only looks up in vain. */
static void filter_update(struct ks_hot_map *m, __u32 b)
{
	int w, idx;

	for (w = 0; w < KS_HOT_WAYS; w++) {
		idx = (int)b * KS_HOT_WAYS + w;
		if (LOAD(m->slot[idx].hash) || m->releasing[idx])
			return;
	}
	__atomic_fetch_and(&m->filter->bits[b / 64], ~(1ULL << (b % 64)),
			   __ATOMIC_SEQ_CST);
}

int ks_hot_map_open(struct ks_hot_map *m, int hot_fd, int filter_fd,
		    int stats_fd, int replicas_fd, int rstats_fd)
{
	int i;

	memset(m, 0, sizeof(*m));
	m->hot_fd = hot_fd;
	m->stats_fd = stats_fd;
	m->replicas_fd = replicas_fd;
	m->rstats_fd = rstats_fd;
	m->replies_fd = -1;
	m->ncpu = libbpf_num_possible_cpus();
	if (m->ncpu <= 0)
		return m->ncpu ? m->ncpu : -EINVAL;
	m->slot = map_values(hot_fd, sizeof(struct ks_hot_slot) * KS_HOT_SLOTS,
			     &m->map_len);
	if (!m->slot)
		return -errno;
	m->filter = map_values(filter_fd, sizeof(struct ks_hot_filter),
			       &m->filter_len);
	if (!m->filter) {
		i = -errno;
		ks_hot_map_close(m);
		return i;
	}
	/* keys an earlier agent left: their bits on (stale bits off later,
	 * as their buckets empty) */
	for (i = 0; i < KS_HOT_SLOTS; i++) {
		if (!m->slot[i].hash)
			continue;
		filter_mark(m, (__u32)i / KS_HOT_WAYS);
		m->used++;
	}
	return 0;
}

void ks_hot_map_close(struct ks_hot_map *m)
{
	if (m->slot)
		munmap(m->slot, m->map_len);
	if (m->filter)
		munmap(m->filter, m->filter_len);
	m->slot = NULL;
	m->filter = NULL;
}

int ks_hot_map_find(const struct ks_hot_map *m, __u64 hash)
{
	int base = ks_hot_bucket(hash) * KS_HOT_WAYS, w;

	for (w = 0; w < KS_HOT_WAYS; w++)
		if (m->slot[base + w].hash == hash)
			return base + w;
	return -1;
}

int ks_hot_map_alloc(struct ks_hot_map *m, __u64 hash, const __u8 *key,
		     __u16 len)
{
	int base = ks_hot_bucket(hash) * KS_HOT_WAYS, w, idx;

	for (w = 0; w < KS_HOT_WAYS; w++) {
		idx = base + w;
		if (!m->slot[idx].hash && !m->releasing[idx])
			break;
	}
	if (w == KS_HOT_WAYS)
		return -ENOSPC;
	ks_hot_map_install(m, idx, hash, key, len);
	return idx;
}

void ks_hot_map_install(struct ks_hot_map *m, int idx, __u64 hash,
			const __u8 *key, __u16 len)
{
	struct ks_hot_slot *s = &m->slot[idx];

	/* free slots are all zero (reclaim clears them): no packet can
	 * match this one before its hash is stored, last */
	s->ncopies = 1;
	s->len = len > KS_KEY_BUF ? KS_KEY_BUF : len;
	memcpy(s->key, key, s->len);
	ks_hot_map_stats_clear(m, idx);
	filter_mark(m, (__u32)idx / KS_HOT_WAYS);
	STORE(s->hash, hash);
	m->used++;
}

void ks_hot_map_set_copies(struct ks_hot_map *m, int idx, __u32 ncopies,
			   const __u8 *replicas, unsigned owner_turns)
{
	struct ks_hot_slot *s = &m->slot[idx];
	__u32 i;

	if (ncopies < 1)
		ncopies = 1;
	if (ncopies > KS_MAX_COPIES)
		ncopies = KS_MAX_COPIES;
	for (i = 0; i + 1 < KS_MAX_COPIES; i++)
		s->replica[i] = i + 1 < ncopies ? replicas[i] : 0;
	ks_steer_schedule(s->sched, ncopies, owner_turns);
	STORE(s->ncopies, ncopies);
}

void ks_hot_map_arm(struct ks_hot_map *m, int idx, __u64 seq, __u64 expires_ns)
{
	struct ks_hot_slot *s = &m->slot[idx];

	STORE(s->armed_seq, seq);
	STORE(s->expires_ns, expires_ns);
}

void ks_hot_map_extend(struct ks_hot_map *m, int idx, __u64 expires_ns)
{
	struct ks_hot_slot *s = &m->slot[idx];

	if (LOAD(s->expires_ns))
		STORE(s->expires_ns, expires_ns);
}

void ks_hot_map_disarm(struct ks_hot_map *m, int idx)
{
	STORE(m->slot[idx].expires_ns, 0);
}

void ks_hot_map_release(struct ks_hot_map *m, int idx)
{
	struct ks_hot_slot *s = &m->slot[idx];

	if (!s->hash)
		return;
	STORE(s->expires_ns, 0);
	STORE(s->hash, 0);
	m->releasing[idx] = 1;
	m->used--;
}

unsigned ks_hot_map_reclaim(struct ks_hot_map *m)
{
	unsigned n = 0;
	int i;

	for (i = 0; i < KS_HOT_SLOTS; i++) {
		if (!m->releasing[i])
			continue;
		ks_hot_map_clear(m, i);
		n++;
	}
	return n;
}

void ks_hot_map_clear(struct ks_hot_map *m, int idx)
{
	memset(&m->slot[idx], 0, sizeof(m->slot[idx]));
	m->releasing[idx] = 0;
	filter_update(m, (__u32)idx / KS_HOT_WAYS);
}

int ks_hot_map_releasing(const struct ks_hot_map *m)
{
	int i;

	for (i = 0; i < KS_HOT_SLOTS; i++)
		if (m->releasing[i])
			return 1;
	return 0;
}

__u64 ks_hot_map_write_seq(const struct ks_hot_map *m, int idx)
{
	return LOAD(m->slot[idx].write_seq);
}

__u64 ks_hot_map_last_write(const struct ks_hot_map *m, int idx)
{
	return LOAD(m->slot[idx].last_write_ns);
}

int ks_hot_map_armed(const struct ks_hot_map *m, int idx)
{
	const struct ks_hot_slot *s = &m->slot[idx];

	return LOAD(s->expires_ns) && LOAD(s->armed_seq) == LOAD(s->write_seq);
}

int ks_hot_map_stats(const struct ks_hot_map *m, int idx,
		     struct ks_hot_stats *sum)
{
	struct ks_hot_stats *v = calloc(m->ncpu, sizeof(*v));
	__u32 key = idx;
	int c, ret = 0;

	memset(sum, 0, sizeof(*sum));
	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(m->stats_fd, &key, v)) {
		ret = -errno;
		goto out;
	}
	for (c = 0; c < m->ncpu; c++) {
		sum->reads += v[c].reads;
		sum->writes += v[c].writes;
		sum->steered += v[c].steered;
		sum->tcp_reads += v[c].tcp_reads;
		sum->owner += v[c].owner;
	}
out:
	free(v);
	return ret;
}

void ks_hot_map_use_replies(struct ks_hot_map *m, int replies_fd)
{
	m->replies_fd = replies_fd;
}

int ks_hot_map_replies(const struct ks_hot_map *m, int idx,
		       struct ks_hot_replies *sum)
{
	struct ks_hot_replies *v;
	__u32 key = idx;
	int c, ret = 0;

	memset(sum, 0, sizeof(*sum));
	if (m->replies_fd < 0)
		return -ENOENT;
	v = calloc(m->ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(m->replies_fd, &key, v))
		ret = -errno;
	for (c = 0; !ret && c < m->ncpu; c++) {
		sum->hits += v[c].hits;
		sum->misses += v[c].misses;
		sum->unpaired += v[c].unpaired;
		sum->malformed += v[c].malformed;
	}
	free(v);
	return ret;
}

int ks_hot_map_stats_clear(const struct ks_hot_map *m, int idx)
{
	/* the larger of the two per-CPU values, zero for either */
	size_t one = sizeof(struct ks_hot_stats) > sizeof(struct ks_hot_replies)
			     ? sizeof(struct ks_hot_stats)
			     : sizeof(struct ks_hot_replies);
	void *v = calloc(m->ncpu, one);
	__u32 key = idx;
	int ret = 0;

	if (!v)
		return -ENOMEM;
	if (bpf_map_update_elem(m->stats_fd, &key, v, BPF_ANY))
		ret = -errno;
	if (!ret && m->replies_fd >= 0 &&
	    bpf_map_update_elem(m->replies_fd, &key, v, BPF_ANY))
		ret = -errno;
	free(v);
	return ret;
}

int ks_hot_map_set_replicas(const struct ks_hot_map *m,
			    const struct ks_replica *r, unsigned n)
{
	struct ks_replica none = {};
	__u32 i;

	for (i = 0; i < KS_MAX_REPLICAS; i++)
		if (bpf_map_update_elem(m->replicas_fd, &i,
					i < n ? &r[i] : &none, BPF_ANY))
			return -errno;
	return 0;
}

int ks_hot_map_replica_steered(const struct ks_hot_map *m, unsigned i,
			       __u64 *out)
{
	__u64 *v = calloc(m->ncpu, sizeof(*v));
	__u32 key = i;
	int c, ret = 0;

	*out = 0;
	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(m->rstats_fd, &key, v))
		ret = -errno;
	else
		for (c = 0; c < m->ncpu; c++)
			*out += v[c];
	free(v);
	return ret;
}
