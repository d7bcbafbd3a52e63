// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* l1.c - the in-process L1 (see l1.h): chained buckets and a recency list
 * over one array of slots, so nothing is allocated per entry but its value. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "client/l1.h"

static __u32 bucket_of(const struct ksc_l1 *l, __u64 hash)
{
	return (__u32)(hash * 0x9e3779b97f4a7c15ULL >> 32) & (l->nbucket - 1);
}

int ksc_l1_init(struct ksc_l1 *l, unsigned max_keys, size_t max_bytes,
		unsigned ttl_ms)
{
	__u32 i;

	memset(l, 0, sizeof(*l));
	if (!max_keys || max_keys > KSC_L1_KEYS || !max_bytes || !ttl_ms)
		return -EINVAL;
	l->max_keys = max_keys;
	l->max_bytes = max_bytes;
	l->ttl_ms = ttl_ms;
	for (l->nbucket = 1; l->nbucket < max_keys; l->nbucket *= 2)
		;
	l->e = calloc(max_keys, sizeof(*l->e));
	l->bucket = malloc(l->nbucket * sizeof(*l->bucket));
	if (!l->e || !l->bucket) {
		ksc_l1_free(l);
		return -ENOMEM;
	}
	for (i = 0; i < l->nbucket; i++)
		l->bucket[i] = KSC_L1_NONE;
	for (i = 0; i < max_keys; i++)
		l->e[i].hnext = i + 1 < max_keys ? i + 1 : KSC_L1_NONE;
	l->free = 0;
	l->head = l->tail = KSC_L1_NONE;
	return 0;
}

void ksc_l1_free(struct ksc_l1 *l)
{
	unsigned i;

	for (i = 0; l->e && i < l->max_keys; i++)
		free(l->e[i].value);
	free(l->e);
	free(l->bucket);
	memset(l, 0, sizeof(*l));
}

static void list_unlink(struct ksc_l1 *l, __u32 i)
{
	struct ksc_l1_entry *e = &l->e[i];

	if (e->prev != KSC_L1_NONE)
		l->e[e->prev].next = e->next;
	else
		l->head = e->next;
	if (e->next != KSC_L1_NONE)
		l->e[e->next].prev = e->prev;
	else
		l->tail = e->prev;
}

static void list_front(struct ksc_l1 *l, __u32 i)
{
	l->e[i].prev = KSC_L1_NONE;
	l->e[i].next = l->head;
	if (l->head != KSC_L1_NONE)
		l->e[l->head].prev = i;
	l->head = i;
	if (l->tail == KSC_L1_NONE)
		l->tail = i;
}

/* The slot of key, KSC_L1_NONE if absent; *link: what points at it. */
static __u32 find(struct ksc_l1 *l, const void *key, size_t klen, __u64 hash,
		  __u32 **link)
{
	__u32 *p = &l->bucket[bucket_of(l, hash)];

	for (; *p != KSC_L1_NONE; p = &l->e[*p].hnext) {
		const struct ksc_l1_entry *e = &l->e[*p];

		if (e->hash == hash && e->klen == klen &&
		    !memcmp(e->key, key, klen))
			break;
	}
	*link = p;
	return *p;
}

static void remove_at(struct ksc_l1 *l, __u32 *link)
{
	__u32 i = *link;
	struct ksc_l1_entry *e = &l->e[i];

	*link = e->hnext;
	list_unlink(l, i);
	l->bytes -= e->len + e->klen;
	l->n--;
	free(e->value);
	memset(e, 0, sizeof(*e));
	e->hnext = l->free;
	l->free = i;
}

/* The link that points at slot i in its bucket. */
static __u32 *link_of(struct ksc_l1 *l, __u32 i)
{
	__u32 *p = &l->bucket[bucket_of(l, l->e[i].hash)];

	while (*p != i)
		p = &l->e[*p].hnext;
	return p;
}

const struct ksc_l1_entry *ksc_l1_get(struct ksc_l1 *l, const void *key,
				      size_t klen, __u64 hash, __s64 stamp,
				      __u64 now_ms)
{
	__u32 *link, i = find(l, key, klen, hash, &link);
	struct ksc_l1_entry *e;

	if (i == KSC_L1_NONE) {
		l->c.misses++;
		return NULL;
	}
	e = &l->e[i];
	if (now_ms >= e->expires_ms ||
	    (stamp != KSC_L1_ANY && e->stamp != stamp)) {
		if (now_ms >= e->expires_ms)
			l->c.expired++;
		else
			l->c.drops++;
		remove_at(l, link);
		l->c.misses++;
		return NULL;
	}
	list_unlink(l, i);
	list_front(l, i);
	l->c.hits++;
	return e;
}

int ksc_l1_drop(struct ksc_l1 *l, const void *key, size_t klen, __u64 hash)
{
	__u32 *link;

	if (!l->e || find(l, key, klen, hash, &link) == KSC_L1_NONE)
		return 0;
	remove_at(l, link);
	l->c.write_drops++;
	return 1;
}

void ksc_l1_flush(struct ksc_l1 *l)
{
	/* counted when it dropped something: the watch's first start is a
	 * drop too, before anything was kept */
	if (l->n)
		l->c.flushes++;
	while (l->tail != KSC_L1_NONE)
		remove_at(l, link_of(l, l->tail));
}

int ksc_l1_put(struct ksc_l1 *l, const void *key, size_t klen, __u64 hash,
	       __s64 stamp, const void *value, size_t len, __u32 flags,
	       long ttl_s, __u64 now_ms)
{
	__u64 ttl = l->ttl_ms;
	struct ksc_l1_entry *e;
	__u32 *link, i;
	char *copy;

	if (!klen || klen > KS_MC_KEY_MAX || stamp <= 0)
		return 1;
	if (ttl_s >= 0 && (__u64)ttl_s * 1000 < ttl)
		ttl = (__u64)ttl_s * 1000;
	if (!ttl || len + klen > l->max_bytes)
		return 1;
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, value, len);
	copy[len] = '\0';
	if (find(l, key, klen, hash, &link) != KSC_L1_NONE)
		remove_at(l, link);
	while (l->n == l->max_keys || l->bytes + len + klen > l->max_bytes) {
		remove_at(l, link_of(l, l->tail));
		l->c.evictions++;
	}
	i = l->free;
	e = &l->e[i];
	l->free = e->hnext;
	e->hash = hash;
	e->stamp = stamp;
	e->expires_ms = now_ms + ttl;
	e->value = copy;
	e->len = len;
	e->flags = flags;
	e->klen = (__u16)klen;
	memcpy(e->key, key, klen);
	link = &l->bucket[bucket_of(l, hash)];
	e->hnext = *link;
	*link = i;
	list_front(l, i);
	l->n++;
	l->bytes += len + klen;
	return 0;
}
