// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * --preload: every key is set once, before the timed run, so its gets hit.
 * Each thread owns whole shards (shard s goes to thread s % threads) and
 * sends their keys over one TCP connection per shard, LD_PRELOAD_BATCH
 * sets at a time before reading the STOREDs: one round trip per batch
 * instead of per key, so 100,000 keys take well under a second. None of
 * this is counted in the run's figures (the threads' own counters are
 * separate from the run's workers).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "load.h"
#include "util/opts.h"

struct preload_job {
	struct ld_run *run;
	const __u32 *owner; /* shard of every key id */
	__u32 nkeys;        /* keys + flash keys */
	__u32 first, step;  /* shards first, first + step, ... */
	struct ld_worker w;
	pthread_t tid;
	int started;
	char why[KS_ERRLEN * 2];
};

static size_t set_cmd_len(const struct ld_cfg *cfg)
{
	/* "set " key " 0 0 " bytes "\r\n" value "\r\n" */
	return 4 + KS_MAX_KEY_LEN + 5 + 10 + 2 + cfg->value_size + 2;
}

static __u32 batch_size(const struct ld_cfg *cfg)
{
	size_t per = set_cmd_len(cfg), b = (256U << 10) / per;

	if (b < 1)
		b = 1;
	return b > LD_PRELOAD_BATCH ? LD_PRELOAD_BATCH : (__u32)b;
}

/* Sends n pipelined sets in buf[0..len) to shard sh, reads n STOREDs. */
static int flush_batch(struct preload_job *j, __u32 sh, const char *buf,
		       size_t len, __u32 n)
{
	__u64 hits = 0;
	int rc = ld_tcp_send(&j->w, sh, buf, len);
	__u32 i;

	for (i = 0; !rc && i < n; i++)
		rc = ld_tcp_reply(&j->w, sh, 0, &hits);
	if (rc)
		snprintf(
			j->why, sizeof(j->why),
			"preload: set to %s failed (%s); check that memcached runs there",
			j->run->addr[sh].name,
			rc == -ETIMEDOUT ? "no reply in time"
					 : "bad reply or closed");
	return rc;
}

static int preload_shard(struct preload_job *j, __u32 sh, char *buf,
			 __u32 batch)
{
	const struct ld_cfg *cfg = j->run->cfg;
	size_t len = 0;
	__u32 id, n = 0;

	for (id = 0; id < j->nkeys && !j->run->stop; id++) {
		char *o = buf + len;

		if (j->owner[id] != sh)
			continue;
		o += sprintf(o, "set ");
		o += ld_key_name(j->run, id, o);
		o += sprintf(o, " 0 0 %u\r\n", cfg->value_size);
		memcpy(o, j->run->value, cfg->value_size);
		o += cfg->value_size;
		o += sprintf(o, "\r\n");
		len = (size_t)(o - buf);
		if (++n == batch) {
			if (flush_batch(j, sh, buf, len, n))
				return -EIO;
			len = n = 0;
		}
	}
	if (n && flush_batch(j, sh, buf, len, n))
		return -EIO;
	return 0;
}

static void *preload_main(void *arg)
{
	struct preload_job *j = arg;
	__u32 batch = batch_size(j->run->cfg), sh;
	char *buf = malloc((size_t)batch * set_cmd_len(j->run->cfg));

	if (!buf) {
		snprintf(j->why, sizeof(j->why),
			 "preload: out of memory; give a smaller --value-size");
		return NULL;
	}
	for (sh = j->first; sh < j->run->nshards; sh += j->step)
		if (preload_shard(j, sh, buf, batch))
			break;
	free(buf);
	return NULL;
}

int ld_preload(struct ld_run *run, double *secs, char *err, size_t errlen)
{
	const struct ld_cfg *cfg = run->cfg;
	__u32 nkeys = cfg->keys + (__u32)cfg->nflash, id, i;
	__u32 nthreads = cfg->conns < run->nshards ? cfg->conns : run->nshards;
	char key[KS_MAX_KEY_LEN + 1];
	struct preload_job *jobs = calloc(nthreads, sizeof(*jobs));
	__u32 *owner = malloc((size_t)nkeys * sizeof(*owner));
	__u64 t0 = ld_now_ns();
	int rc = 0;

	if (!jobs || !owner) {
		snprintf(err, errlen,
			 "preload: out of memory; give fewer --keys");
		rc = -ENOMEM;
		goto out;
	}
	for (id = 0; id < nkeys; id++)
		owner[id] = ld_shard_of(run, key, ld_key_name(run, id, key));
	for (i = 0; i < nthreads; i++) {
		struct preload_job *j = &jobs[i];

		j->run = run;
		j->owner = owner;
		j->nkeys = nkeys;
		j->first = i;
		j->step = nthreads;
		if (ld_worker_init(&j->w, run, i, 0) ||
		    pthread_create(&j->tid, NULL, preload_main, j)) {
			snprintf(
				j->why, sizeof(j->why),
				"preload: cannot start thread %u; give fewer --conns",
				i);
			break;
		}
		j->started = 1;
	}
	for (i = 0; i < nthreads; i++) {
		if (jobs[i].started)
			pthread_join(jobs[i].tid, NULL);
		if (jobs[i].w.run)
			ld_worker_free(&jobs[i].w);
		if (jobs[i].why[0] && !rc) {
			snprintf(err, errlen, "%s", jobs[i].why);
			rc = -EIO;
		}
	}
	if (!rc && run->stop) {
		snprintf(err, errlen, "preload: interrupted; run again");
		rc = -EINTR;
	}
	*secs = (double)(ld_now_ns() - t0) / 1e9;
out:
	free(jobs);
	free(owner);
	return rc;
}
