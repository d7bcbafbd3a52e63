// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* etcd_mirror.c - a prefix kept in step with a watch (see etcd_mirror.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/etcd_mirror.h"

void ks_etcd_mirror_load(struct ks_etcd_mirror *m, struct ks_etcd_range *r)
{
	m->revision = r->revision;
	m->n = m->cap = r->n;
	m->kvs = r->kvs;
	memset(r, 0, sizeof(*r));
}

static int key_cmp(const struct ks_etcd_kv *a, const char *key, size_t len)
{
	size_t n = a->key_len < len ? a->key_len : len;
	int c = memcmp(a->key, key, n);

	if (c)
		return c;
	return a->key_len < len ? -1 : a->key_len > len;
}

/* The index of key, or where it would go; *found says which. */
static size_t find(const struct ks_etcd_mirror *m, const char *key, size_t len,
		   int *found)
{
	size_t lo = 0, hi = m->n;

	*found = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = key_cmp(&m->kvs[mid], key, len);

		if (!c) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ks_etcd_mirror_apply(struct ks_etcd_mirror *m, struct ks_etcd_event *ev)
{
	int found;
	size_t i = find(m, ev->kv.key, ev->kv.key_len, &found);

	if (ev->kv.mod_revision > m->revision)
		m->revision = ev->kv.mod_revision;
	if (ev->type == KS_ETCD_EV_DELETE) {
		if (!found)
			return 0;
		ks_etcd_kv_free(&m->kvs[i]);
		memmove(&m->kvs[i], &m->kvs[i + 1],
			(m->n - i - 1) * sizeof(m->kvs[0]));
		m->n--;
		return 0;
	}
	if (found) {
		ks_etcd_kv_free(&m->kvs[i]);
	} else {
		if (m->n == m->cap) {
			size_t cap = m->cap ? 2 * m->cap : 16;
			struct ks_etcd_kv *k = realloc(m->kvs,
						       cap * sizeof(*k));

			if (!k)
				return -ENOMEM;
			m->kvs = k;
			m->cap = cap;
		}
		memmove(&m->kvs[i + 1], &m->kvs[i],
			(m->n - i) * sizeof(m->kvs[0]));
		m->n++;
	}
	m->kvs[i] = ev->kv;
	memset(&ev->kv, 0, sizeof(ev->kv));
	return 0;
}

void ks_etcd_mirror_free(struct ks_etcd_mirror *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		ks_etcd_kv_free(&m->kvs[i]);
	free(m->kvs);
	memset(m, 0, sizeof(*m));
}
