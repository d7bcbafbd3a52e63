// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_ring_plan.c - 'agent ring plan' (issue 26, docs/placement.md):
 * reads the ring and every agent's load document over a window, plans
 * explicit points that bring the busiest shard near the mean moving the
 * fewest keys (core/ring_plan.h), prints both, and writes the planned
 * ring document for 'agent ring set --plan FILE'.
 *
 * A plan is only for a fleet whose clients read the ring from etcd
 * (libkeysteer): a client that builds its ring from a server list keeps
 * sending planned keys to their old owners. The agent cannot see what
 * a client computes; it knows two things and refuses without both:
 *  - the ring document says "clients": "keysteer" (the operator's word,
 *    'ring set --clients keysteer');
 *  - the agents' datapaths count misdirected requests (a key sent to a
 *    shard the ring does not give it to): more than 1% of the requests
 *    served in the window means some client does not follow the ring.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli_options.h"
#include "cli/cmds.h"
#include "cli/etcd_cli.h"
#include "cli/etcd_doc_cli.h"
#include "core/fleet_doc.h"
#include "core/host_doc.h"
#include "core/ring_diff.h"
#include "core/ring_doc.h"
#include "core/ring_plan.h"
#include "core/ring_points.h"
#include "net/etcd.h"
#include "util/file.h"
#include "util/log.h"
#include "util/opts.h"

/* Misdirected requests, as a share of the requests served, above which
 * some client does not follow the ring (a stale ring shows too: plan
 * once every client has the ring). */
#define PLAN_MISDIRECTED_MAX 0.01
#define PLAN_KEYS_MAX        4096

struct pkey {
	__u64 h64;
	__u32 rh;
	double load, fixed_load;
	int fixed, have_rh;
};

struct acc {
	const struct ks_ring *ring;
	const struct ks_shards *shards;
	double *served, mis, total;
	unsigned *seen;
	struct ks_plan_span *span; /* per shard: its counters' span */
	struct pkey *k;
	size_t nk;
	unsigned samples, docs, refused, other_ring;
	int64_t ring_rev; /* 0: not checked (a ring file) */
};

/* ks_key_text's escapes back to bytes ("\\\\" and "\\xNN"); the length,
 * or 0 when the text is not one. */
static size_t untext(const char *t, __u8 *out, size_t cap)
{
	size_t n = 0;
	unsigned v;

	while (*t && n < cap) {
		if (t[0] == '\\' && t[1] == '\\') {
			out[n++] = '\\';
			t += 2;
		} else if (t[0] == '\\' && t[1] == 'x' &&
			   sscanf(t + 2, "%2x", &v) == 1) {
			out[n++] = (__u8)v;
			t += 4;
		} else if (t[0] == '\\') {
			return 0;
		} else {
			out[n++] = (__u8)*t++;
		}
	}
	return *t ? 0 : n;
}

static struct pkey *key_at(struct acc *a, __u64 h64)
{
	size_t i;

	for (i = 0; i < a->nk; i++)
		if (a->k[i].h64 == h64)
			return &a->k[i];
	if (a->nk >= PLAN_KEYS_MAX)
		return NULL;
	memset(&a->k[a->nk], 0, sizeof(a->k[0]));
	a->k[a->nk].h64 = h64;
	return &a->k[a->nk++];
}

static long shard_index(const struct ks_shards *s, const char *name)
{
	char addr[KS_SHARD_HOST_MAX + 8];
	__u32 i;

	for (i = 0; i < s->n; i++) {
		ks_shard_addr(&s->v[i], addr, sizeof(addr));
		if (!strcmp(addr, name))
			return (long)i;
	}
	return -1;
}

/* One load document into the window's sums. */
static void take(struct acc *a, const char *self, const char *raw, size_t len,
		 struct ks_fleet_host *h)
{
	long idx;
	size_t i;

	ks_fleet_host_decode(self, raw, len, h);
	if (!h->valid) {
		ks_warn("ring plan: the load document of %s is refused (%s); left out",
			self, h->why);
		a->refused++;
		return;
	}
	if (!h->have_shard)
		return;
	idx = shard_index(a->shards, h->shard_name);
	if (idx < 0)
		return; /* an agent whose --self the ring does not name */
	if (a->ring_rev && h->ring_rev != a->ring_rev) {
		a->other_ring++;
		return;
	}
	a->docs++;
	ks_plan_span_take(&a->span[idx], &h->totals);
	/* what its memcached answered: reads less the steered UDP gets,
	 * and every write */
	a->served[idx] += h->served + h->writes;
	a->seen[idx]++;
	a->mis += h->mis;
	a->total += h->served + h->writes;
	for (i = 0; i < h->n_top; i++) {
		const struct ks_fleet_key *t = &h->top[i];
		__u8 kb[KS_MAX_KEY_LEN + 1];
		size_t kl;
		struct pkey *p;

		if (!t->key[0])
			continue;
		kl = untext(t->key, kb, sizeof(kb));
		if (!kl || kl > KS_MAX_KEY_LEN || !(p = key_at(a, t->hash)))
			continue;
		p->rh = ks_ring_hash(a->ring, kb, kl);
		p->have_rh = 1;
		p->load += t->reads + t->writes;
	}
	for (i = 0; i < h->n_hot; i++) {
		const struct ks_load_hot *e = &h->hot[i];
		struct pkey *p = key_at(a, e->hash);
		double f = 0;

		if (!p)
			continue;
		p->fixed = 1;
		if (!isnan(e->v[KS_LHF_OWNER_HITS]))
			f += e->v[KS_LHF_OWNER_HITS];
		if (!isnan(e->v[KS_LHF_OWNER_MISSES]))
			f += e->v[KS_LHF_OWNER_MISSES];
		p->fixed_load += f;
	}
}

/* The load documents of a file: a JSON array of them. */
static int take_file(struct acc *a, const char *path, struct ks_fleet_host *h)
{
	json_error_t je;
	json_t *arr = json_load_file(path, 0, &je);
	size_t i;
	char self[32];

	if (!json_is_array(arr)) {
		ks_err("--load-file %s is not a JSON array of load documents%s%s",
		       path, arr ? "" : ": ", arr ? "" : je.text);
		json_decref(arr);
		return -1;
	}
	for (i = 0; i < json_array_size(arr); i++) {
		char *t = json_dumps(json_array_get(arr, i), JSON_COMPACT);

		snprintf(self, sizeof(self), "file[%zu]", i);
		if (t)
			take(a, self, t, strlen(t), h);
		free(t);
	}
	json_decref(arr);
	a->samples = 1;
	return 0;
}

/* The window over etcd: one read of the load documents a second. */
static int take_etcd(struct acc *a, struct ks_etcd *c, const char *cluster,
		     unsigned window, struct ks_fleet_host *h)
{
	char prefix[sizeof(KS_LOAD_ROOT) + KS_CLUSTER_MAX + 4];
	struct timespec next;
	unsigned s;

	snprintf(prefix, sizeof(prefix), KS_LOAD_ROOT "%s/", cluster);
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (s = 0; s < window; s++) {
		struct ks_etcd_range r = { 0 };
		size_t i, pl = strlen(prefix);

		if (ks_etcd_range(c, prefix, pl, KS_ETCD_PREFIX, &r)) {
			ks_err("ring plan: cannot read %s: %s", prefix,
			       ks_etcd_errmsg(c));
			return -1;
		}
		for (i = 0; i < r.n; i++) {
			char self[160];

			snprintf(self, sizeof(self), "%.*s",
				 (int)(r.kvs[i].key_len - pl),
				 r.kvs[i].key + pl);
			take(a, self, r.kvs[i].value, r.kvs[i].value_len, h);
		}
		ks_etcd_range_free(&r);
		a->samples++;
		if (s + 1 < window) {
			next.tv_sec++;
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next,
					NULL);
		}
	}
	return 0;
}

/*
 * Each shard's load over the window: the difference of its agent's
 * counters between the first and the last document of the window when
 * they span at least half of it (exact, whenever the agent wrote), else
 * the mean of the rates the documents held at each read (agents before
 * the counters, a one-document window, an agent restarted in it). Says
 * which.
 */
static void load_of_window(struct acc *a, __u32 n, unsigned window, int etcd)
{
	__u64 min_ms = etcd && window > 1 ? (window - 1) * 500ULL : ~0ULL;
	__u64 lo = ~0ULL, hi = 0;
	/* when each span began and ended (its agent's clock, ms): spans
	 * that do not line up measured different times, which matters when
	 * the load changed within the window */
	__u64 b_lo = ~0ULL, b_hi = 0, e_lo = ~0ULL, e_hi = 0;
	unsigned counted = 0, rated = 0, rebased = 0;
	char from[200] = "";
	__u32 i;

	for (i = 0; i < n; i++) {
		const struct ks_plan_span *s = &a->span[i];
		double r;

		rebased += s->rebased;
		if (!ks_plan_span_rate(s, min_ms, &r)) {
			a->served[i] = r;
			counted++;
			if (s->ms1 - s->ms0 < lo)
				lo = s->ms1 - s->ms0;
			if (s->ms1 - s->ms0 > hi)
				hi = s->ms1 - s->ms0;
			b_lo = s->base_ms + s->ms0 < b_lo ? s->base_ms + s->ms0
							  : b_lo;
			b_hi = s->base_ms + s->ms0 > b_hi ? s->base_ms + s->ms0
							  : b_hi;
			e_lo = s->base_ms + s->ms1 < e_lo ? s->base_ms + s->ms1
							  : e_lo;
			e_hi = s->base_ms + s->ms1 > e_hi ? s->base_ms + s->ms1
							  : e_hi;
			continue;
		}
		a->served[i] /= a->seen[i];
		if (rated < 4) {
			char addr[KS_SHARD_HOST_MAX + 8];

			ks_shard_addr(&a->shards->v[i], addr, sizeof(addr));
			snprintf(from + strlen(from),
				 sizeof(from) - strlen(from), "%s%.40s",
				 rated ? ", " : "", addr);
		}
		rated++;
	}
	if (counted)
		printf("load: %u shard%s from their agents' counters over %.1f..%.1f s (begun within %.1f s of each other, ended within %.1f s)\n",
		       counted, counted == 1 ? "" : "s", lo / 1000.0,
		       hi / 1000.0, (b_hi - b_lo) / 1000.0,
		       (e_hi - e_lo) / 1000.0);
	if (rated)
		printf("load: %u shard%s from the mean of %u read%s of their rates, as their documents %s: %s%s\n",
		       rated, rated == 1 ? "" : "s", a->samples,
		       a->samples == 1 ? "" : "s",
		       !etcd ? "of a file have no window"
		       : rebased
			       ? "span less than half the window (an agent restarted or pushed its ring in it)"
			       : "carry no counters over half the window (agents before them, or not writing)",
		       from, rated > 4 ? ", ..." : "");
}

/* Sample keys key:0 .. key:N-1 whose owner differs, as ring set counts. */
static double sample_moved(const struct ks_ring *a, const struct ks_ring *b,
			   __u32 n)
{
	char key[32];
	__u32 i, moved = 0;

	for (i = 0; i < n; i++) {
		int len = snprintf(key, sizeof(key), "key:%u", i);

		moved += ks_ring_lookup(a, key, (size_t)len) !=
			 ks_ring_lookup(b, key, (size_t)len);
	}
	return (double)moved / n;
}

static int write_out(const char *path, const char *doc, size_t len)
{
	FILE *f = fopen(path, "w");
	int bad;

	if (!f) {
		ks_err("cannot write --out %s: %s", path, strerror(errno));
		return -1;
	}
	bad = fwrite(doc, 1, len, f) != len;
	bad |= fclose(f) != 0;
	if (bad)
		ks_err("cannot write --out %s: %s", path, strerror(errno));
	return bad ? -1 : 0;
}

int ks_ring_plan_cmd(int argc, char **argv)
{
	struct ks_cli_getopt g;
	struct ks_etcd_conf ec;
	struct ks_etcd *c = NULL;
	struct ks_etcd_range cur = { 0 };
	struct ks_shards shards = { 0 };
	struct ks_ring ring = { 0 }, planned = { 0 };
	struct ks_fleet_host *h = NULL;
	struct ks_plan_key *keys = NULL;
	struct ks_plan_out po = { 0 };
	struct ks_plan_in pi = { 0 };
	struct acc a = { 0 };
	char err[KS_ERRLEN_DOC * 2], by[400], at[40], tgt[32];
	const char *out = NULL, *ring_file = NULL, *load_file = NULL;
	unsigned long long v;
	unsigned window = 10;
	double target = 1.03, mean = 0, moved;
	__u32 max_points = 0, i;
	char *doc = NULL;
	size_t doclen;
	int ch, n, rc = KS_EXIT_USAGE, clients_ks = 0;

	ks_etcd_conf_init(&ec);
	ks_cli_getopt_init(&g, KS_CMD_RING_PLAN);
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, g.shorts, g.lo, NULL)) != -1) {
		switch (ch) {
		case 'h':
			ks_help_ring(stdout);
			return KS_EXIT_OK;
		case KS_OPTV_WINDOW:
			if (ks_parse_uint("--window", optarg, 1, 3600, &v, err,
					  sizeof(err)))
				goto usage;
			window = (unsigned)v;
			continue;
		case KS_OPTV_TARGET: {
			char *end;

			target = strtod(optarg, &end);
			if (*end || end == optarg || !(target >= 1.001) ||
			    !(target <= 2)) {
				snprintf(
					err, sizeof(err),
					"--target '%s' is not a number 1.001..2 (the busiest shard / mean to reach)",
					optarg);
				goto usage;
			}
			continue;
		}
		case KS_OPTV_OUT:
			out = optarg;
			continue;
		case KS_OPTV_RING_FILE:
			ring_file = optarg;
			continue;
		case KS_OPTV_LOAD_FILE:
			load_file = optarg;
			continue;
		case KS_OPTV_MAX_POINTS:
			if (ks_parse_uint("--max-points", optarg, 2,
					  KS_RING_MAX_POINTS, &v, err,
					  sizeof(err)))
				goto usage;
			max_points = (__u32)v;
			continue;
		default:
			break;
		}
		n = ks_etcd_cli_opt(&ec, ch, optarg, err, sizeof(err));
		if (n < 0)
			goto usage;
		if (!n)
			return ks_bad_option("ring plan", ch, argv);
	}
	if (!out)
		return ks_usage_error(
			"ring plan",
			"--out FILE is missing: the planned ring is written there, for 'ring set --plan FILE'");
	if (!ec.endpoints && !(ring_file && load_file))
		return ks_usage_error(
			"ring plan",
			"give --etcd URL (the ring and the agents' load documents), or both --ring-file and --load-file");
	if (ec.endpoints) {
		rc = ks_etcd_args_done(&ec, "ring plan",
				       "reads the ring and the load", argc,
				       argv);
		if (rc)
			return rc;
		rc = KS_EXIT_USAGE;
		if (ks_etcd_conf_connect(&ec, &c, err, sizeof(err)))
			goto usage;
	} else if (optind < argc) {
		snprintf(err, sizeof(err), "unexpected argument '%s'",
			 argv[optind]);
		return ks_usage_error("ring plan", err);
	}
	rc = KS_EXIT_FAIL;
	/* the ring now */
	if (ring_file) {
		if (ks_ring_doc_load_file(ring_file, NULL, 0, &shards, &ring,
					  &clients_ks, err, sizeof(err))) {
			ks_err("%s", err);
			rc = KS_EXIT_USAGE;
			goto out;
		}
	} else {
		struct ks_ring_doc d;

		if (ks_etcd_range(c, ec.ring_key, strlen(ec.ring_key), 0,
				  &cur)) {
			ks_err("cannot read %s: %s", ec.ring_key,
			       ks_etcd_errmsg(c));
			goto out;
		}
		if (!cur.n) {
			ks_err("no ring at %s; write one with 'agent ring set' and let the agents measure it",
			       ec.ring_key);
			goto out;
		}
		if (ks_ring_doc_decode(cur.kvs[0].value, cur.kvs[0].value_len,
				       &d, err, sizeof(err)) ||
		    ks_ring_doc_build(&d, NULL, 0, &shards, &ring, err,
				      sizeof(err))) {
			ks_err("the ring at %s is refused: %s", ec.ring_key,
			       err);
			goto out;
		}
		clients_ks = d.clients_ks;
		ks_ring_doc_free(&d);
		a.ring_rev = cur.kvs[0].mod_revision;
	}
	if (ks_ring_points_dist_ok(ring.half->meta.dist, err, sizeof(err))) {
		ks_err("ring plan: %s", err);
		goto out;
	}
	if (!clients_ks) {
		ks_err("ring plan: the ring does not say that every client reads it from etcd (\"clients\": \"keysteer\"): a client that builds its ring from a server list (libmemcached, pymemcache, twemproxy, ...) would keep sending planned keys to their old owners. If every client uses libkeysteer, write the ring with 'agent ring set ... --clients keysteer' first (docs/placement.md)");
		goto out;
	}
	/* the load over the window */
	a.ring = &ring;
	a.shards = &shards;
	a.served = calloc(shards.n, sizeof(*a.served));
	a.seen = calloc(shards.n, sizeof(*a.seen));
	a.span = calloc(shards.n, sizeof(*a.span));
	a.k = calloc(PLAN_KEYS_MAX, sizeof(*a.k));
	h = malloc(sizeof(*h));
	if (!a.served || !a.seen || !a.span || !a.k || !h) {
		ks_err("out of memory planning the ring");
		goto out;
	}
	if (load_file ? take_file(&a, load_file, h)
		      : take_etcd(&a, c, ec.cluster, window, h))
		goto out;
	for (i = 0; i < shards.n; i++)
		if (!a.seen[i]) {
			char addr[KS_SHARD_HOST_MAX + 8];

			ks_shard_addr(&shards.v[i], addr, sizeof(addr));
			ks_err("ring plan: shard %u (%s) has no load document%s: a plan needs every shard's load (is its agent running with --etcd and --self %s?)",
			       i, addr,
			       a.other_ring
				       ? " on this ring (some agents run another ring revision: plan when they all run this one)"
				       : "",
			       addr);
			goto out;
		}
	if (a.total > 0 && a.mis > PLAN_MISDIRECTED_MAX * a.total) {
		ks_err("ring plan: the agents counted %.0f misdirected requests for every %.0f served (%.2f%%, more than %.0f%%): some clients send keys where the ring in etcd does not (a client that builds its ring from a server list, or one not yet on this ring); a plan would send more there. Find them with 'agent report' (misdirected clients)",
		       a.mis / a.samples, a.total / a.samples,
		       100.0 * a.mis / a.total, 100.0 * PLAN_MISDIRECTED_MAX);
		goto out;
	}
	keys = calloc(a.nk + 1, sizeof(*keys));
	if (!keys) {
		ks_err("out of memory planning the ring");
		goto out;
	}
	load_of_window(&a, shards.n, window, !load_file);
	for (size_t k = 0; k < a.nk; k++) {
		const struct pkey *p = &a.k[k];

		if (!p->have_rh)
			continue; /* a hot key with no key bytes: spread */
		keys[pi.nkeys].hash = p->rh;
		keys[pi.nkeys].fixed = p->fixed;
		keys[pi.nkeys].load = (p->fixed ? p->fixed_load : p->load) /
				      a.samples;
		pi.nkeys++;
	}
	pi.base = &ring;
	pi.load = a.served;
	pi.keys = keys;
	pi.target = target;
	pi.max_points = max_points ? max_points : ring.half->meta.npoints + 512;
	if (ks_ring_plan(&pi, &po, err, sizeof(err))) {
		ks_err("ring plan: %s", err);
		goto out;
	}
	if (ks_ring_build_points(&planned, &ring, &shards, po.pts, po.npts, err,
				 sizeof(err))) {
		ks_err("ring plan: %s; report this as a bug", err);
		goto out;
	}
	printf("ring %s: %u shards %s, %u points, digest %016llx; load of %u documents over %u read%s\n",
	       ring_file ? ring_file : ec.ring_key, shards.n,
	       ks_dist_name(ring.half->meta.dist), ring.half->meta.npoints,
	       (unsigned long long)ring.half->meta.digest, a.docs, a.samples,
	       a.samples == 1 ? "" : "s");
	for (i = 0, n = 0; i < pi.nkeys; i++)
		n += keys[i].fixed;
	printf("sampled keys with their bytes: %u (%d served by copies, left in place)\n",
	       pi.nkeys, n);
	for (i = 0; i < shards.n; i++)
		mean += po.before[i];
	mean /= shards.n;
	printf("  %5s  %-24s %12s %8s %12s %8s\n", "shard", "host:port",
	       "now/s", "/mean", "planned/s", "/mean");
	for (i = 0; i < shards.n; i++) {
		char addr[KS_SHARD_HOST_MAX + 8];

		ks_shard_addr(&shards.v[i], addr, sizeof(addr));
		printf("  %5u  %-24s %12.1f %8.3f %12.1f %8.3f\n", i, addr,
		       po.before[i], po.before[i] / mean, po.after[i],
		       po.after[i] / mean);
	}
	snprintf(tgt, sizeof(tgt), "%.3f", target);
	printf("busiest/mean: now %.3f, planned %.3f (target %s, %s)\n",
	       po.ratio_before, po.ratio_after, tgt,
	       po.reached ? "reached" : "not reached: no more to move");
	moved = sample_moved(&ring, &planned, KS_DIFF_KEYS_DEFAULT);
	printf("moves: %u sampled keys to arcs of their own (about one key each), %u slices = %.3f%% of the hash space (that share of keys spread by the hash)\n",
	       po.keys_carved, po.slices, 100.0 * po.moved_space);
	printf("sample keys key:0..key:%u moved: %.3f%% (ring set's limit without --force: %.2f%%)\n",
	       KS_DIFF_KEYS_DEFAULT - 1, 100.0 * moved,
	       100.0 * ks_ring_move_limit(0));
	ks_writer_id(by, sizeof(by), at, sizeof(at));
	if (ks_ring_doc_encode_ext(&planned, &shards, by, at, 0, 1, &doc,
				   &doclen)) {
		ks_err("out of memory encoding the plan");
		goto out;
	}
	if (write_out(out, doc, doclen))
		goto out;
	printf("planned ring: %u explicit points, digest %016llx, in %s\n",
	       planned.half->meta.npoints,
	       (unsigned long long)planned.half->meta.digest, out);
	if (!ring_file)
		printf("write it: agent ring set --etcd %s --cluster %s --plan %s --if-revision %" PRId64
		       "\n",
		       ec.endpoints, ec.cluster, out, a.ring_rev);
	rc = KS_EXIT_OK;
	goto out;
usage:
	ks_err("%s", err);
	rc = KS_EXIT_USAGE;
out:
	free(doc);
	free(keys);
	free(h);
	free(a.served);
	free(a.seen);
	free(a.span);
	free(a.k);
	ks_ring_plan_free(&po);
	ks_ring_free(&planned);
	ks_ring_free(&ring);
	ks_shards_free(&shards);
	ks_etcd_range_free(&cur);
	ks_etcd_close(c);
	return rc;
}
