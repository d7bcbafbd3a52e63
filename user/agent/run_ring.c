// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * run_ring.c - the ring in 'agent run' (see run_ring.h): build, push,
 * reload on SIGHUP or a changed shard file, publish the per-shard rates.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "util/log.h"
#include "util/opts.h"
#include "dp/ring_push.h"
#include "agent/run_ring.h"
#include "agent/run_purge.h"
#include "agent/run_dedicated.h"
#include "util/clock.h"

void ks_file_sig_get(const char *path, struct ks_file_sig *sig)
{
	struct stat st;

	memset(sig, 0, sizeof(*sig));
	if (stat(path, &st))
		return;
	sig->exists = 1;
	sig->dev = st.st_dev;
	sig->ino = st.st_ino;
	sig->size = st.st_size;
	sig->mtime_ns = (__u64)st.st_mtim.tv_sec * 1000000000ULL +
			(__u64)st.st_mtim.tv_nsec;
	sig->ctime_ns = (__u64)st.st_ctim.tv_sec * 1000000000ULL +
			(__u64)st.st_ctim.tv_nsec;
}

int ks_file_sig_equal(const struct ks_file_sig *a, const struct ks_file_sig *b)
{
	if (a->exists != b->exists)
		return 0;
	if (!a->exists)
		return 1;
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

void ks_run_ring_init(struct ks_run_ring *r)
{
	ks_ring_spec_init(&r->spec, "--shards", "--shards-file");
}

int ks_run_ring_opt(struct ks_run_ring *r, int c, const char *arg, char *err,
		    size_t errlen)
{
	int n = ks_ring_spec_opt(&r->spec, c, arg, err, errlen);

	if (n > 0 && (c == 'D' || c == 'N'))
		r->dist_given = 1;
	return n;
}

int ks_run_ring_prepare(struct ks_run_ring *r, __u32 sample_n, char *err,
			size_t errlen)
{
	int rc;

	r->sample_n = sample_n;
	if (!ks_run_ring_enabled(r) && r->etcd) {
		/* the ring comes from etcd: its document names the
		 * distribution; --self is checked against it */
		if (r->dist_given) {
			snprintf(
				err, errlen,
				"--distribution/--vnodes need --shards or --shards-file; with --etcd alone the ring document names its distribution");
			return -EINVAL;
		}
		goto buffers;
	}
	if (!ks_run_ring_enabled(r)) {
		const char *alone = r->spec.self    ? "--self"
				    : r->dist_given ? "--distribution/--vnodes"
						    : NULL;

		if (alone) {
			snprintf(
				err, errlen,
				"%s needs a shard list; give --shards LIST or --shards-file FILE too",
				alone);
			return -EINVAL;
		}
		return 0;
	}
	/* The signature before the read: a write after it shows as a
	 * change and is loaded then. */
	if (r->spec.file)
		ks_file_sig_get(r->spec.file, &r->acted);
	rc = ks_ring_load(&r->spec, &r->next_shards, &r->next, 0, err, errlen);
	if (rc)
		return rc;
	/* pymemcache-bytes, or pymemcache past KS_RDV_MAX_NODES: refused
	 * before anything is attached */
	rc = ks_ring_in_kernel(&r->next, err, errlen);
	if (rc) {
		ks_ring_free(&r->next);
		ks_shards_free(&r->next_shards);
		return rc;
	}
buffers:
	r->base = calloc(KS_MAX_SHARDS, sizeof(*r->base));
	r->prev = calloc(KS_MAX_SHARDS, sizeof(*r->prev));
	r->cur = calloc(KS_MAX_SHARDS, sizeof(*r->cur));
	r->rep = calloc(1, sizeof(*r->rep));
	if (!r->base || !r->prev || !r->cur || !r->rep) {
		snprintf(
			err, errlen,
			"out of memory for the shard report; free some memory");
		return -ENOMEM;
	}
	return 0;
}

static void publish_header(struct ks_run_ring *r)
{
	struct ks_shard_report *rep = r->rep;

	rep->version = KS_SHARD_REPORT_VERSION;
	rep->nshards = r->shards.n;
	rep->sample_n = r->sample_n;
	snprintf(rep->source, sizeof(rep->source), "%s",
		 r->ext_source[0] ? r->ext_source
		 : r->spec.file   ? r->spec.file
				  : r->spec.flag);
}

static void log_push(const struct ks_run_ring *r, double ms)
{
	char self[KS_SHARD_NAME_LEN + 160] = "", key[48] = "";
	const struct ks_ring_meta *m = r->live.half ? &r->live.half->meta
						    : NULL;

	if (r->rep->self < r->shards.n)
		snprintf(self, sizeof(self), ", self %s",
			 r->rep->shards[r->rep->self].name);
	else if (r->rep->self == KS_SELF_OUTSIDE)
		snprintf(
			self, sizeof(self),
			", self %.*s not in the ring: it owns no keys, every request to it is misdirected",
			KS_SHARD_NAME_LEN, r->spec.self ? r->spec.self : "?");
	/* the key hash and tag only when they are not the distribution's */
	if (m &&
	    (m->tagged || m->key_hash != ks_dist_default_key_hash(m->dist))) {
		char tag[16] = "";

		if (m->tagged)
			snprintf(tag, sizeof(tag), " hash tag %c%c",
				 m->hash_tag[0], m->hash_tag[1]);
		snprintf(key, sizeof(key), " key hash %s%s",
			 ks_key_hash_name(m->key_hash), tag);
	}
	printf("keysteer: ring v%llu digest %016llx %u shards %s%s%s (pushed in %.1f ms)\n",
	       (unsigned long long)r->version, (unsigned long long)r->digest,
	       r->shards.n, ks_dist_name(r->rep->dist), key, self, ms);
	fflush(stdout);
}

/* The per-CPU counts, sized for the collector's CPUs at the first read. */
static int cpu_bufs(struct ks_run_ring *r, const struct ks_collector *c)
{
	size_t n = (size_t)KS_MAX_SHARDS * (size_t)c->ncpus;

	if (r->cpu_prev && r->ncpus == c->ncpus)
		return 0;
	free(r->cpu_prev);
	free(r->cpu_cur);
	r->cpu_prev = calloc(n, sizeof(*r->cpu_prev));
	r->cpu_cur = calloc(n, sizeof(*r->cpu_cur));
	r->ncpus = c->ncpus;
	return r->cpu_prev && r->cpu_cur ? 0 : -ENOMEM;
}

/*
 * Pushes r->next (its shards in r->next_shards), makes it the current
 * ring, restarts the counters from what they read now and publishes a
 * report of the new ring with no rates yet.
 */
static int push_next(struct ks_run_ring *r, const struct ks_maps *m,
		     struct ks_collector *c)
{
	struct ks_shard_report *rep = r->rep;
	struct ks_config cfg;
	__u64 t0 = ks_mono_ns();
	__u32 n = r->next_shards.n;
	char why[KS_ERRLEN * 2];
	int err;

	/* a ring from etcd or a reloaded file may name one the datapath
	 * cannot search */
	err = ks_ring_in_kernel(&r->next, why, sizeof(why));
	if (err) {
		ks_err("%s; not pushed, the datapath keeps its ring", why);
		return err;
	}
	/* the shard rules' indexes in this ring, before the flip */
	if (r->ded && !ks_read_config(m, &cfg))
		ks_run_ded_ring(r->ded, &r->next_shards, (cfg.ring & 1) ^ 1);
	err = ks_ring_push(m->ring, m->config, r->next.half);
	if (!err)
		err = ks_read_config(m, &cfg);
	if (err) {
		ks_err("cannot push the ring into the datapath (%s); rerun with -v",
		       strerror(-err));
		return err;
	}
	r->active = cfg.ring & 1;
	/* only a document from etcd can say forced; a shard file's change
	 * is held to the limit */
	ks_run_purge_ring(r->purge, &r->next, &r->next_shards,
			  r->ext_source[0] ? r->ext_version
					   : r->next.half->meta.version,
			  r->ext_source[0] && r->ext_forced);
	/* After the push's grace period no packet counts for the old ring:
	 * from here on every count is the new ring's. */
	err = cpu_bufs(r, c);
	if (!err)
		err = ks_read_shard_counts(c, n, r->base, r->cpu_prev);
	if (err) {
		ks_err("cannot read the per-shard counters (%s); rerun with -v",
		       strerror(-err));
		return err;
	}
	memcpy(r->prev, r->base, n * sizeof(*r->base));
	r->prev_ns = ks_mono_ns();
	r->base_ns = r->prev_ns;

	ks_shards_free(&r->shards);
	r->shards = r->next_shards;
	memset(&r->next_shards, 0, sizeof(r->next_shards));
	/* the datapath's generation rises with every push; a ring from etcd
	 * shows its revision */
	r->version = r->ext_source[0] ? r->ext_version
				      : r->next.half->meta.version;
	r->digest = r->next.half->meta.digest;
	memset(rep->shards, 0, sizeof(rep->shards));
	rep->dist = r->next.half->meta.dist;
	rep->self = r->next.half->meta.self;
	rep->busiest = KS_NO_SHARD;
	rep->ring_version = r->version;
	rep->digest = r->digest;
	rep->pushed_mono_ns = t0;
	rep->pushed_real_ns = ks_real_ns();
	rep->elapsed_ns = 0;
	rep->hits_mps = 0;
	rep->reload_err[0] = '\0';
	rep->reload_err_real_ns = 0;
	/* kept for lookups in user space (which hot keys this host owns) */
	ks_ring_free(&r->live);
	r->live = r->next;
	memset(&r->next, 0, sizeof(r->next));
	ks_shard_names(rep, &r->shards);
	publish_header(r);
	log_push(r, (ks_mono_ns() - t0) / 1e6);
	err = ks_write_shard_report(m, rep);
	if (err)
		ks_err("cannot write the shard report map (%s); rerun with -v",
		       strerror(-err));
	return err;
}

int ks_run_ring_start(struct ks_run_ring *r, const struct ks_maps *m,
		      struct ks_collector *c)
{
	if (!ks_run_ring_enabled(r))
		return 0;
	r->next_check_ns = ks_mono_ns() + KS_RING_CHECK_NS;
	return push_next(r, m, c);
}

/* A reload that failed: logged, published, and the old ring kept. */
static int reload_failed(struct ks_run_ring *r, const struct ks_maps *m,
			 const char *why)
{
	struct ks_shard_report *rep = r->rep;

	ks_warn("ring not reloaded, v%llu stays: %s",
		(unsigned long long)r->version, why);
	rep->reload_errors++;
	rep->reload_err_real_ns = ks_real_ns();
	/* cut to the map's field; the log above has it whole */
	snprintf(rep->reload_err, sizeof(rep->reload_err), "%.*s",
		 (int)sizeof(rep->reload_err) - 1, why);
	return ks_write_shard_report(m, rep);
}

static int reload(struct ks_run_ring *r, const struct ks_maps *m,
		  struct ks_collector *c, const char *why)
{
	char err[KS_ERRLEN * 2];
	int rc;

	if (r->spec.file)
		ks_file_sig_get(r->spec.file, &r->acted);
	r->have_pending = 0;
	rc = ks_ring_load(&r->spec, &r->next_shards, &r->next, 0, err,
			  sizeof(err));
	if (rc)
		return reload_failed(r, m, err);
	if (r->next.half->meta.digest == r->digest &&
	    r->next.half->meta.self == r->rep->self) {
		ks_info("%s: the ring is unchanged (digest %016llx); v%llu stays",
			why, (unsigned long long)r->digest,
			(unsigned long long)r->version);
		ks_ring_free(&r->next);
		ks_shards_free(&r->next_shards);
		if (r->rep->reload_err[0]) {
			r->rep->reload_err[0] = '\0';
			return ks_write_shard_report(m, r->rep);
		}
		return 0;
	}
	ks_info("%s: loading the new ring", why);
	return push_next(r, m, c);
}

int ks_run_ring_poll(struct ks_run_ring *r, const struct ks_maps *m,
		     struct ks_collector *c, int hup)
{
	struct ks_file_sig now_sig;
	__u64 now = ks_mono_ns();

	if (!ks_run_ring_enabled(r)) {
		if (hup && !r->etcd)
			ks_info("SIGHUP: no ring to reload (the agent runs without --shards)");
		return 0;
	}
	/* a ring from etcd follows etcd: the list or file is not reloaded */
	if (r->ext_source[0]) {
		if (hup)
			ks_info("SIGHUP: the ring follows %s (v%llu); nothing to reload",
				r->ext_source, (unsigned long long)r->version);
		return 0;
	}
	if (hup)
		return reload(r, m, c, "SIGHUP");
	if (!r->spec.file || now < r->next_check_ns)
		return 0;
	r->next_check_ns = now + KS_RING_CHECK_NS;
	ks_file_sig_get(r->spec.file, &now_sig);
	if (ks_file_sig_equal(&now_sig, &r->acted)) {
		r->have_pending = 0;
		return 0;
	}
	/* An editor may still be writing: load only a file that stayed the
	 * same for one check. */
	if (!r->have_pending || !ks_file_sig_equal(&now_sig, &r->pending)) {
		r->pending = now_sig;
		r->have_pending = 1;
		return 0;
	}
	return reload(r, m, c, r->spec.file);
}

int ks_run_ring_rows(struct ks_run_ring *r, struct ks_collector *c,
		     double scale, __u32 seq, __u64 elapsed_ns)
{
	__u32 n = r->shards.n;
	__u64 *t;
	int err = cpu_bufs(r, c);

	if (!err)
		err = ks_read_shard_counts(c, n, r->cur, r->cpu_cur);
	if (err)
		return err;
	ks_shard_fill(r->rep, r->base, r->prev, r->cur, n, scale, elapsed_ns);
	ks_shard_fill_err(r->rep, r->cpu_prev, r->cpu_cur, n, r->ncpus,
			  r->cpu_n, r->cpu_p, scale, elapsed_ns);
	r->rep->seq = seq;
	r->rep->elapsed_ns = elapsed_ns;
	memcpy(r->prev, r->cur, n * sizeof(*r->cur));
	t = r->cpu_prev;
	r->cpu_prev = r->cpu_cur;
	r->cpu_cur = t;
	return 0;
}

int ks_run_ring_interval(struct ks_run_ring *r, const struct ks_maps *m,
			 struct ks_collector *c, __u32 seq)
{
	__u32 n = r->shards.n;
	__u64 now;
	int err;

	if (!ks_run_ring_enabled(r) || !n)
		return 0;
	now = ks_mono_ns();
	err = ks_run_ring_rows(r, c, r->scale > 0 ? r->scale : r->sample_n, seq,
			       now - r->prev_ns);
	if (err)
		return err;
	r->prev_ns = now;
	publish_header(r);
	return ks_write_shard_report(m, r->rep);
}

int ks_run_ring_take(struct ks_run_ring *r, const struct ks_maps *m,
		     struct ks_collector *c, struct ks_shards *shards,
		     struct ks_ring *ring, __u64 version, const char *source)
{
	int same;

	if (!m) { /* before the start: it is the ring to push */
		ks_ring_free(&r->next);
		ks_shards_free(&r->next_shards);
	}
	same = m && r->shards.n && ring->half->meta.digest == r->digest &&
	       ring->half->meta.self == r->rep->self;
	ks_ring_free(&r->next);
	ks_shards_free(&r->next_shards);
	r->next = *ring;
	r->next_shards = *shards;
	memset(ring, 0, sizeof(*ring));
	memset(shards, 0, sizeof(*shards));
	if (!r->ext_source[0] && (r->spec.list || r->spec.file))
		ks_info("the ring now follows %s; %s is no longer read", source,
			r->spec.file ? r->spec.file : r->spec.flag);
	snprintf(r->ext_source, sizeof(r->ext_source), "%s", source);
	r->ext_version = version;
	r->have_pending = 0;
	if (!m)
		return 0;
	if (same) {
		ks_info("%s v%llu: the ring is unchanged (digest %016llx); now v%llu",
			source, (unsigned long long)version,
			(unsigned long long)r->digest,
			(unsigned long long)version);
		ks_ring_free(&r->next);
		ks_shards_free(&r->next_shards);
		r->version = version;
		r->rep->ring_version = version;
		r->rep->reload_err[0] = '\0';
		publish_header(r);
		return ks_write_shard_report(m, r->rep);
	}
	ks_info("%s v%llu: loading the new ring", source,
		(unsigned long long)version);
	return push_next(r, m, c);
}

int ks_run_ring_refuse(struct ks_run_ring *r, const struct ks_maps *m,
		       const char *why)
{
	if (!m || !r->rep) {
		ks_warn("ring refused: %s", why);
		if (r->rep)
			r->rep->reload_errors++;
		return 0;
	}
	return reload_failed(r, m, why);
}

int ks_run_ring_fix_config(const struct ks_run_ring *r, struct ks_config *cfg)
{
	if (!ks_run_ring_enabled(r) || !r->shards.n || cfg->ring == r->active)
		return 0;
	ks_debug(
		"ks_config.ring was %u, not %u (a racing config write); fixing it",
		cfg->ring, r->active);
	cfg->ring = r->active;
	return 1;
}

__u32 ks_run_ring_owner(const struct ks_run_ring *r, const void *key,
			size_t len)
{
	int d;

	if (!r || !r->live.half || !r->shards.n)
		return KS_NO_SHARD;
	/* a key a shard rule gives this ring's shard d is d's (its agent
	 * publishes its hot/ entry, its clients read it there) */
	d = ks_run_ded_owner(r->ded, key, len);
	if (d >= 0 && (__u32)d < r->shards.n)
		return (__u32)d;
	return ks_ring_lookup(&r->live, key, len);
}

void ks_run_ring_free(struct ks_run_ring *r)
{
	ks_ring_free(&r->live);
	ks_ring_free(&r->next);
	ks_shards_free(&r->next_shards);
	ks_shards_free(&r->shards);
	free(r->base);
	free(r->prev);
	free(r->cur);
	free(r->rep);
	free(r->cpu_prev);
	free(r->cpu_cur);
	r->cpu_prev = r->cpu_cur = NULL;
	r->base = r->prev = r->cur = NULL;
	r->rep = NULL;
}
