// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * share.c - the process's followers (client.h struct ksc_follower,
 * docs/client.md "One view per process"): a list keyed by what changes
 * what a follower reads, so that every handle of the process that follows
 * the same fleet the same way uses one etcd client, one watch, one thread
 * and one view. The list's lock is taken before a follower's handle lock,
 * never after.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/random.h>
#include "client/client.h"

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t list_cond = PTHREAD_COND_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct ksc_follower *list;

/* A fork() while another thread holds the list's lock would leave the
 * child's copy locked for good: taken around it. The child's followers
 * have no thread; the pid check keeps its handles off them. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&list_lock);
}

static void fork_after(void)
{
	pthread_mutex_unlock(&list_lock);
}

static void once_init(void)
{
	pthread_atfork(fork_prepare, fork_after, fork_after);
}

static struct ksc_follower *follower_new(struct keysteer *ks, const char *key,
					 const char *cluster)
{
	struct ksc_follower *f = calloc(1, sizeof(*f));
	pthread_rwlockattr_t a;
	int ret;

	if (!f)
		return NULL;
	if (key && !(f->key = strdup(key))) {
		free(f);
		return NULL;
	}
	ret = ksc_view_init(&f->view, cluster);
	if (ret) {
		ksc_err(ks, ret, "%s", f->view.why);
		free(f->key);
		free(f);
		return NULL;
	}
	/* a writer waits for the readers in, not for every reader to come:
	 * glibc's default would let steady gets keep an event out */
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(
		&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&f->lock, &a);
	pthread_rwlockattr_destroy(&a);
	pthread_mutex_init(&f->olock, NULL);
	pthread_cond_init(&f->ocond, NULL);
	pthread_mutex_init(&f->hlock, NULL);
	pthread_mutex_init(&f->llock, NULL);
	ksc_limits_init(&f->limits, ks->limit_share);
	/* its name among the views registered for a limited key: random,
	 * so views of one host, or a pid reused, never share one */
	if (getrandom(&f->reg_id, sizeof(f->reg_id), 0) !=
	    (ssize_t)sizeof(f->reg_id))
		f->reg_id = (__u64)getpid() << 32 ^ (__u64)(uintptr_t)f;
	f->reg_id |= 1;
	f->reg_off = ks->limit_clients_off;
	f->stop_fd = f->wake_fd = -1;
	f->pid = (int)getpid();
	f->view_delay_ms = ks->view_delay_ms;
	f->skip_hot = ks->view_skip_hot;
	f->starting = key != NULL;
	return f;
}

static int attach(struct ksc_follower *f, struct keysteer *ks)
{
	struct keysteer **h;

	pthread_mutex_lock(&f->hlock);
	if (f->nh == f->hcap) {
		h = realloc(f->h, (f->hcap ? 2 * f->hcap : 4) * sizeof(*h));
		if (!h) {
			pthread_mutex_unlock(&f->hlock);
			return -ENOMEM;
		}
		f->h = h;
		f->hcap = f->hcap ? 2 * f->hcap : 4;
	}
	f->h[f->nh++] = ks;
	pthread_mutex_unlock(&f->hlock);
	ks->fo = f;
	return 0;
}

int ksc_share_get(struct keysteer *ks, const char *key, const char *cluster,
		  int *fresh)
{
	struct ksc_follower *f;
	int ret;

	pthread_once(&once, once_init);
	*fresh = 0;
	pthread_mutex_lock(&list_lock);
again:
	for (f = key ? list : NULL; f; f = f->next) {
		if (f->pid != (int)getpid() || strcmp(f->key, key))
			continue;
		/* its first read is under way: joined once it is up, or
		 * made again when it failed */
		if (f->starting) {
			pthread_cond_wait(&list_cond, &list_lock);
			goto again;
		}
		ret = attach(f, ks);
		pthread_mutex_unlock(&list_lock);
		return ret ? ksc_err(ks, ret, "out of memory") : 0;
	}
	f = follower_new(ks, key, cluster);
	if (!f) {
		pthread_mutex_unlock(&list_lock);
		return ks->err[0] ? -EINVAL
				  : ksc_err(ks, -ENOMEM, "out of memory");
	}
	if (attach(f, ks)) {
		pthread_mutex_unlock(&list_lock);
		ksc_view_free(&f->view);
		free(f->key);
		free(f);
		return ksc_err(ks, -ENOMEM, "out of memory");
	}
	if (key) {
		f->next = list;
		list = f;
	}
	*fresh = 1;
	pthread_mutex_unlock(&list_lock);
	return 0;
}

static void unlist(struct ksc_follower *f)
{
	struct ksc_follower **p;

	for (p = &list; *p; p = &(*p)->next)
		if (*p == f) {
			*p = f->next;
			break;
		}
}

void ksc_share_ready(struct keysteer *ks, int ok)
{
	struct ksc_follower *f = ks->fo;

	pthread_mutex_lock(&list_lock);
	if (f->starting) {
		f->starting = 0;
		/* a failed first read: the next open makes another */
		if (!ok)
			unlist(f);
		pthread_cond_broadcast(&list_cond);
	}
	pthread_mutex_unlock(&list_lock);
}

void ksc_share_put(struct keysteer *ks)
{
	struct ksc_follower *f = ks->fo;
	unsigned i, left;

	if (!f)
		return;
	pthread_mutex_lock(&list_lock);
	pthread_mutex_lock(&f->hlock);
	for (i = 0; i < f->nh && f->h[i] != ks; i++)
		;
	if (i < f->nh)
		f->h[i] = f->h[--f->nh];
	left = f->nh;
	pthread_mutex_unlock(&f->hlock);
	if (!left)
		unlist(f);
	if (!left && f->starting) {
		f->starting = 0;
		pthread_cond_broadcast(&list_cond);
	}
	pthread_mutex_unlock(&list_lock);
	if (left) {
		ks->fo = NULL;
		return;
	}
	/* the thread stopped first: a routing handle's poll reaches its
	 * view through ks->fo to the end (its only handle is this one) */
	ksc_follower_stop(f);
	ks->fo = NULL;
	ksc_view_free(&f->view);
	pthread_rwlock_destroy(&f->lock);
	pthread_mutex_destroy(&f->olock);
	pthread_cond_destroy(&f->ocond);
	pthread_mutex_destroy(&f->hlock);
	ksc_limits_free(&f->limits);
	pthread_mutex_destroy(&f->llock);
	free(f->h);
	free(f->key);
	free(f);
}

void ksc_share_each(struct ksc_follower *f, void (*fn)(struct keysteer *))
{
	unsigned i;

	pthread_mutex_lock(&f->hlock);
	for (i = 0; i < f->nh; i++)
		fn(f->h[i]);
	pthread_mutex_unlock(&f->hlock);
}

unsigned ksc_share_handles(struct ksc_follower *f)
{
	unsigned n;

	pthread_mutex_lock(&f->hlock);
	n = f->nh;
	pthread_mutex_unlock(&f->hlock);
	return n;
}
