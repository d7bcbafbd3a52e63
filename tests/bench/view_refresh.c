// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * view_refresh.c - what one view refresh from a host follower's view file
 * costs a process (make bench-view-file; docs/client.md, "One view per
 * host"): a fleet of HOSTS members/ documents, its ring and HOT armed hot/
 * entries, as the agents encode them, in a view file written by the
 * follower's own writer (ks_view_file_publish). Then SNAPS times: one hot/
 * entry changes (its write sequence, armed <-> dirty, a new revision), the
 * writer publishes the whole file again (timed: the follower's cost), and
 * the reader takes it as a handle's follower thread does (fleet_file.c:
 * ksc_vfile_poll maps and checks the new file, ksc_view_replay applies
 * what is newer than the last snapshot, ksc_vfile_release): timed whole
 * and in its two parts.
 *
 * The baseline in the same run: the same change applied as one watch
 * event is (ksc_view_put of the one document; the gateway's JSON and
 * base64 around it not counted), what a handle following etcd itself
 * does per change.
 *
 *   view_refresh [--hot N[,N...]] [--hosts H] [--snaps S] [--dir D]
 *
 * The file goes into a folder of the run's own under D (default /dev/shm:
 * tmpfs, as /run/keysteer is on a real host; on ext4 every snapshot is a
 * disk file's write and map, several times slower).
 *
 * One line per HOT: "RESULT hot=.. hosts=.. bytes=.. refresh_cpu_p50_us=..
 * refresh_cpu_p99_us=.. refresh_p50_us=.. refresh_p99_us=.. map_p50_us=..
 * replay_p50_us=.. publish_p50_us=.. publish_p99_us=.. event_cpu_p50_us=..
 * event_p50_us=.. ratio=..": _cpu_ the reading thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID: what the process pays, whatever else the
 * machine runs), the others wall time; ratio: the refresh's CPU p50 over
 * the event's.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "client/client.h"
#include "core/host_doc.h"
#include "core/hot_doc.h"
#include "core/ring.h"
#include "core/ring_doc.h"
#include "core/shards.h"
#include "core/view_file.h"
#include "keysteer.h"

#define CLUSTER  "vr"
#define HOT_MAX  65536
#define HOST_MAX 1024

static __u64 mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (__u64)t.tv_sec * 1000000000ull + (__u64)t.tv_nsec;
}

/* this thread's CPU time: what a refresh costs the process, whatever the
 * machine's other work preempts it for */
static __u64 cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (__u64)t.tv_sec * 1000000000ull + (__u64)t.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/* nearest rank, in us */
static double pct(__u64 *v, size_t n, double q)
{
	size_t i = (size_t)(q * (double)n + 0.999999);

	qsort(v, n, sizeof(*v), cmp_u64);
	if (i < 1)
		i = 1;
	return (double)v[i - 1] / 1e3;
}

/* The key of hot/ entry k (into key, KS_KEY_BUF zeroed past it) and its
 * ks_key_hash */
static __u64 key_of(unsigned k, __u8 *key, __u16 *len)
{
	__u64 buf[KS_KEY_BUF / 8];

	memset(buf, 0, sizeof(buf));
	*len = (__u16)snprintf((char *)buf, sizeof(buf), "product:%08u:detail",
			       k);
	memcpy(key, buf, sizeof(buf));
	return ks_key_hash(buf, *len);
}

static struct ks_etcd_kv kv_of(char *key, char *val, __s64 rev)
{
	return (struct ks_etcd_kv){ .key = key,
				    .value = val,
				    .key_len = strlen(key),
				    .value_len = strlen(val),
				    .mod_revision = rev };
}

static void host_name(char *buf, size_t len, unsigned i, unsigned net)
{
	snprintf(buf, len, "198.%u.%u.%u:11211", 18 + net / 4,
		 net % 4 * 64 + i / 256, i % 256);
}

/* The ring document of hosts 0..h-1 (malloc'd), or NULL. */
static char *ring_doc(unsigned h)
{
	char err[256], *list, *out = NULL;
	struct ks_shards s;
	struct ks_ring r;
	size_t len, off = 0;
	unsigned i;

	list = calloc(h, 32);
	if (!list)
		return NULL;
	for (i = 0; i < h; i++) {
		host_name(list + off, 32, i, 0);
		off += strlen(list + off);
		list[off++] = i + 1 < h ? ',' : '\0';
	}
	if (!ks_shards_parse_list(CLUSTER, list, &s, err, sizeof(err))) {
		if (!ks_ring_build(&r, &s, KS_DIST_KETAMA, 0, 1, err,
				   sizeof(err)))
			ks_ring_doc_encode(&r, &s, CLUSTER, NULL, &out, &len);
		ks_ring_free(&r);
		ks_shards_free(&s);
	}
	free(list);
	return out;
}

static char *member_doc(unsigned i)
{
	struct ks_host_doc d;

	memset(&d, 0, sizeof(d));
	host_name(d.self, sizeof(d.self), i, 0);
	snprintf(d.agent_version, sizeof(d.agent_version), "bench");
	d.pid = 1000 + i;
	d.has_shard = 1;
	snprintf(d.shard, sizeof(d.shard), "%s", d.self);
	d.interval_ms = 1000;
	d.sample_n = 1;
	host_name(d.replicas[d.nreplicas++], 48, i, 1);
	host_name(d.replicas[d.nreplicas++], 48, i, 2);
	return ks_host_doc_encode_kind(&d, KS_HDK_MEMBER, NULL);
}

/* hot/ entry k, owned by host k % h, copies on its two replicas; odd
 * write_seq: dirty, even: armed */
static char *hot_doc(unsigned k, unsigned h, __u64 seq)
{
	struct ks_hot_doc d;

	memset(&d, 0, sizeof(d));
	d.hash = key_of(k, d.key, &d.len);
	d.has_key = 1;
	d.read_hot = 1;
	d.state = seq & 1 ? KS_HDS_DIRTY : KS_HDS_ARMED;
	d.copies = 3;
	d.subkeys = 1;
	d.nreplicas = 2;
	host_name(d.owner, sizeof(d.owner), k % h, 0);
	host_name(d.replica[0], sizeof(d.replica[0]), k % h, 1);
	host_name(d.replica[1], sizeof(d.replica[1]), k % h, 2);
	d.write_seq = seq;
	d.owner_turns = 1;
	d.reads_ps = 2000 + k;
	return ks_hot_doc_encode(&d);
}

static char *hot_key(unsigned k)
{
	__u8 key[KS_KEY_BUF];
	char *out = malloc(96);
	__u16 len;
	__u64 hash = key_of(k, key, &len);

	if (out)
		ks_hot_doc_key(CLUSTER, hash, out, 96);
	return out;
}

static int run(unsigned nhot, unsigned nhost, unsigned snaps, const char *dir)
{
	size_t n = 1 + nhost + nhot, i;
	struct ks_etcd_kv *kvs = calloc(n, sizeof(*kvs));
	__u64 *t_all = calloc(snaps, 8), *t_map = calloc(snaps, 8),
	      *t_rep = calloc(snaps, 8), *t_pub = calloc(snaps, 8),
	      *t_ev = calloc(snaps, 8), *c_all = calloc(snaps, 8),
	      *c_ev = calloc(snaps, 8);
	struct ks_view_writer w;
	struct ks_view_file_meta m;
	struct ksc_view view, eview;
	struct ksc_vfile *vf = NULL;
	char prefix[KS_VIEW_PREFIX_MAX], err[512];
	__s64 rev = 1, since;
	unsigned s, k;
	int ret = 1;

	memset(&w, 0, sizeof(w));
	memset(&view, 0, sizeof(view));
	memset(&eview, 0, sizeof(eview));
	if (!kvs || !t_all || !t_map || !t_rep || !t_pub || !t_ev || !c_all ||
	    !c_ev)
		goto out;
	snprintf(w.path, sizeof(w.path), "%s/%s.view", dir, CLUSTER);
	if (ks_view_range(CLUSTER, prefix, sizeof(prefix), err, sizeof(err)) <
	    0)
		goto out;
	/* the documents, each its own revision as etcd would give them */
	kvs[0] = kv_of(strdup(prefix), ring_doc(nhost), rev++);
	if (kvs[0].key)
		kvs[0].key = realloc(kvs[0].key, strlen(prefix) + 8);
	if (!kvs[0].key || !kvs[0].value)
		goto out;
	strcat(kvs[0].key, "ring");
	kvs[0].key_len = strlen(kvs[0].key);
	for (i = 0; i < nhost; i++) {
		char *key = malloc(128);

		if (!key)
			goto out;
		snprintf(key, 128, "%smembers/", prefix);
		host_name(key + strlen(key), 64, (unsigned)i, 0);
		kvs[1 + i] = kv_of(key, member_doc((unsigned)i), rev++);
	}
	for (k = 0; k < nhot; k++)
		kvs[1 + nhost + k] = kv_of(hot_key(k), hot_doc(k, nhost, 2),
					   rev++);
	for (i = 0; i < n; i++)
		if (!kvs[i].key || !kvs[i].value)
			goto out;
	m = (struct ks_view_file_meta){ .prefix = prefix,
					.generation = 1,
					.pid = (__u64)getpid(),
					.revision = rev - 1,
					.live = { .up = 1 } };
	if (ks_view_file_publish(&w, &m, kvs, n, err, sizeof(err))) {
		fprintf(stderr, "view_refresh: %s\n", err);
		goto out;
	}
	if (ksc_view_init(&view, CLUSTER) || ksc_view_init(&eview, CLUSTER) ||
	    ksc_vfile_open(&vf, w.path, view.prefix, err, sizeof(err))) {
		fprintf(stderr, "view_refresh: %s\n", err);
		goto out;
	}
	/* the open: the whole file into the view, as ksc_file_open */
	ksc_view_load(&view, ksc_vfile_snap(vf)->kvs, ksc_vfile_snap(vf)->n,
		      m.revision, 1);
	ksc_vfile_release(vf);
	since = m.revision;
	ksc_view_load(&eview, kvs, n, m.revision, 1);
	if (view.hlive != nhot || eview.hlive != nhot || !view.have_ring) {
		fprintf(stderr,
			"view_refresh: the view took %zu of %u hot/ entries "
			"(ring %d): %s\n",
			view.hlive, nhot, view.have_ring, view.why);
		goto out;
	}
	for (s = 0; s < snaps; s++) {
		struct ks_etcd_kv *c = &kvs[1 + nhost + (s * 7919u) % nhot];
		const struct ks_view_snap *sn;
		__u64 t0, t1, t2, t3, c0;
		int rc;

		k = (unsigned)(c - kvs) - 1 - nhost;
		free(c->value);
		c->value = hot_doc(k, nhost, 3 + s);
		if (!c->value)
			goto out;
		c->value_len = strlen(c->value);
		c->mod_revision = rev++;
		m.generation++;
		m.revision = c->mod_revision;
		t0 = mono_ns();
		if (ks_view_file_publish(&w, &m, kvs, n, err, sizeof(err))) {
			fprintf(stderr, "view_refresh: %s\n", err);
			goto out;
		}
		c0 = cpu_ns();
		t1 = mono_ns();
		rc = ksc_vfile_poll(vf);
		t2 = mono_ns();
		if (rc != 1) {
			fprintf(stderr,
				"view_refresh: snapshot %u not taken (%d): %s\n",
				s, rc, ksc_vfile_why(vf));
			goto out;
		}
		sn = ksc_vfile_snap(vf);
		ksc_view_replay(&view, sn->kvs, sn->n, since, sn->revision, 1);
		since = sn->revision;
		ksc_vfile_release(vf);
		t3 = mono_ns();
		c_all[s] = cpu_ns() - c0;
		t_pub[s] = t1 - t0;
		t_map[s] = t2 - t1;
		t_rep[s] = t3 - t2;
		t_all[s] = t3 - t1;
		/* the baseline: the same change as one event */
		c0 = cpu_ns();
		t0 = mono_ns();
		ksc_view_put(&eview, c->key, c->key_len, c->value, c->value_len,
			     c->mod_revision);
		t_ev[s] = mono_ns() - t0;
		c_ev[s] = cpu_ns() - c0;
		if (view.revision != c->mod_revision ||
		    eview.revision != c->mod_revision) {
			fprintf(stderr,
				"view_refresh: revision %lld not applied\n",
				(long long)c->mod_revision);
			goto out;
		}
	}
	{
		double cpu50 = pct(c_all, snaps, .5),
		       ev50 = pct(c_ev, snaps, .5);

		printf("RESULT hot=%u hosts=%u docs=%zu bytes=%zu "
		       "refresh_cpu_p50_us=%.1f refresh_cpu_p99_us=%.1f "
		       "refresh_p50_us=%.1f refresh_p99_us=%.1f "
		       "map_p50_us=%.1f replay_p50_us=%.1f "
		       "publish_p50_us=%.1f publish_p99_us=%.1f "
		       "event_cpu_p50_us=%.2f event_p50_us=%.2f ratio=%.0f\n",
		       nhot, nhost, n, w.len, cpu50, pct(c_all, snaps, .99),
		       pct(t_all, snaps, .5), pct(t_all, snaps, .99),
		       pct(t_map, snaps, .5), pct(t_rep, snaps, .5),
		       pct(t_pub, snaps, .5), pct(t_pub, snaps, .99), ev50,
		       pct(t_ev, snaps, .5), ev50 > 0 ? cpu50 / ev50 : 0);
	}
	ret = 0;
out:
	if (ret)
		fprintf(stderr, "view_refresh: hot=%u hosts=%u failed\n", nhot,
			nhost);
	ksc_vfile_close(vf);
	ks_view_writer_close(&w);
	unlink(w.path);
	ksc_view_free(&view);
	ksc_view_free(&eview);
	for (i = 0; kvs && i < n; i++) {
		free(kvs[i].key);
		free(kvs[i].value);
	}
	free(kvs);
	free(t_all);
	free(t_map);
	free(t_rep);
	free(t_pub);
	free(t_ev);
	free(c_all);
	free(c_ev);
	return ret;
}

static int number(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "hot", 1, NULL, 'o' },   { "hosts", 1, NULL, 'H' },
		{ "snaps", 1, NULL, 's' }, { "dir", 1, NULL, 'd' },
		{ "help", 0, NULL, 'h' },  { 0 }
	};
	char hots[256] = "256,1024,4096,16384", *save = NULL, *t;
	char dir[4096] = "/dev/shm";
	unsigned nhost = 64, snaps = 2000, nhot;
	int ch, rc = 0;

	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 'o':
			snprintf(hots, sizeof(hots), "%s", optarg);
			break;
		case 'H':
			if (number(optarg, 1, HOST_MAX, &nhost))
				goto usage;
			break;
		case 's':
			if (number(optarg, 10, 1000000, &snaps))
				goto usage;
			break;
		case 'd':
			if (strlen(optarg) > 4000)
				goto usage;
			snprintf(dir, sizeof(dir), "%s", optarg);
			break;
		case 'h':
			printf("usage: view_refresh [--hot N[,N...]] [--hosts H] "
			       "[--snaps S] [--dir D]\n");
			return 0;
		default:
			goto usage;
		}
	}
	if (optind != argc)
		goto usage;
	/* a folder of this run's own under the parent */
	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir),
		 "/ks_view_refresh.XXXXXX");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "view_refresh: cannot make %s: %s\n", dir,
			strerror(errno));
		return 1;
	}
	for (t = strtok_r(hots, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		if (number(t, 1, HOT_MAX, &nhot)) {
			fprintf(stderr,
				"view_refresh: --hot '%s' is not 1..%u\n", t,
				HOT_MAX);
			rc = 2;
			break;
		}
		if (run(nhot, nhost, snaps, dir))
			rc = 1;
	}
	rmdir(dir);
	return rc;
usage:
	fprintf(stderr, "view_refresh: bad arguments; see --help\n");
	return 2;
}
