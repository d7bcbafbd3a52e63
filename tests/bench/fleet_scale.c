// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fleet_scale.c - one etcd for many hosts (issue 12, "Scale, measured";
 * docs/fleet.md, "Scale"): N simulated agents in one process, each the
 * agent's own publishing code (agent/fleet_pub.h on net/etcd_pub.h, one
 * publisher thread, one lease and one etcd client per agent) fed fake
 * datapath numbers once per interval, against one etcd that
 * tests/bench/fleet_scale.sh starts.
 *
 * Each agent has a hot-key table of --hot entries (read-hot, state
 * "counting": no ring and no steering, so every key is its own) and a
 * report whose class rates and top keys follow the table. Steady state:
 * every rate jitters by up to --jitter of itself each interval, under the
 * tenth that makes a rate worth republishing. Churn: each interval
 * --churn-replace keys leave and as many new ones enter, and
 * --churn-move others have their rate doubled or halved (their copies
 * follow). Agents tick at their own phase, spread evenly over the
 * interval, as independent hosts would.
 *
 * Watch latency: the benchmark links with --wrap=ks_etcd_pub_set and
 * --wrap=ks_etcd_pub_delete, so every change fleet_pub hands to its
 * publisher is timestamped at the hand-over, by key and value; one watch
 * on /keysteer/CLUSTER/, the prefix a library handle watches, and one on
 * /keysteer-load/CLUSTER/ (the agents' load documents; each a thread and a
 * client of its own) match each event to it; client_events_ps counts
 * what the first delivered, what every handle would receive. The time runs from the hand-over to the event's arrival at
 * the watcher: the publisher's wait, the transaction, raft and the watch.
 *
 * Per phase (warm-up not reported) it prints one "RESULT" line of
 * key=value pairs: rates from etcd's /metrics and from the publishers'
 * own counters, watch p50/p99/max, etcd's CPU from /proc/PID/stat as a
 * share of one core, its RSS, and this process's own CPU.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <curl/curl.h>
#include "agent/fleet_pub.h"
#include "core/hotkeys.h"
#include "net/etcd.h"
#include "net/etcd_pub.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/opts.h"

#define AGENTS_MAX  1024
#define HOT_MAX     128 /* of KS_HOT_CAP: room for churn's newcomers */
#define HIST        4   /* hand-overs remembered per key */
#define SLOTS_LOG   19  /* keys remembered: 512 Ki */
#define TOP_N       10  /* report top keys: what hosts/ publishes */
#define RATE_MIN    500.0
#define RATE_MAX    200000.0
#define COPY_BUDGET 10000.0 /* reads/s per copy */
#define ZIPF_TOP    64000.0 /* reads/s of the busiest key */
#define FLAT_LO     2000.0
#define FLAT_HI     20000.0

enum phase {
	PH_WARMUP,
	PH_STEADY,
	PH_CHURN,
	PH_N
};
static const char *const phase_name[PH_N] = { "warmup", "steady", "churn" };

struct args {
	const char *etcd;
	const char *cluster;
	unsigned agents, hot, interval_ms;
	unsigned warmup_s, steady_s, churn_s;
	unsigned churn_replace, churn_move;
	unsigned churn_agents; /* of them, the ones that churn; 0: all */
	double jitter;
	int flat;                    /* --flat: rates spread evenly, not Zipf */
	enum ks_fleet_compat compat; /* --fleet-compat, as the agent's */
	unsigned load_every;         /* --load-every, as the agent's */
	int counting_in_hot; /* --counting-in-hot: the layout before issue 25
			      * moved counted keys to the load document */
	unsigned etcd_pid;   /* 0: not measured */
	unsigned seed;
	int verbose;
};

/* ---- hand-overs and their watch events ---- */

struct handover {
	__u64 vhash; /* of the value; 1: a delete */
	__u64 t_ns;  /* 0: empty or already matched */
	__u8 phase;
};

struct slot {
	__u64 id; /* of the key; 0: free */
	unsigned next;
	struct handover h[HIST];
};

struct lat {
	__u64 *ns;
	size_t n, cap;
};

static struct {
	pthread_mutex_t mu;
	struct slot *slots;
	/* [PH_N]: after the last phase, while the last events drain */
	enum phase phase;          /* the main thread's, for hand-overs */
	__u64 sets[PH_N + 1];      /* changes handed over */
	__u64 load_sets[PH_N + 1]; /* ... of them, load documents */
	__u64 events[PH_N + 1];    /* watch events (by arrival) */
	__u64 cevents[PH_N + 1];   /* ... of them, on a client's prefix */
	__u64 unmatched[PH_N + 1]; /* events no hand-over explains */
	__u64 untracked;           /* hand-overs with no slot left */
	struct lat lat[PH_N + 1];  /* by the hand-over's phase */
	enum phase watch_phase;    /* for arrivals */
	int stop;
} g = { .mu = PTHREAD_MUTEX_INITIALIZER };

static __u64 fnv64(const void *p, size_t n)
{
	const unsigned char *b = p;
	__u64 h = 0xcbf29ce484222325ULL;

	while (n--) {
		h ^= *b++;
		h *= 0x100000001b3ULL;
	}
	return h ? h : 1;
}

/* Under g.mu: the slot of key id, claimed if new; NULL when full. */
static struct slot *slot_of(__u64 id, int claim)
{
	size_t mask = ((size_t)1 << SLOTS_LOG) - 1, i = id & mask, probes;

	for (probes = 0; probes <= mask; probes++, i = (i + 1) & mask) {
		if (g.slots[i].id == id)
			return &g.slots[i];
		if (!g.slots[i].id) {
			if (!claim)
				return NULL;
			g.slots[i].id = id;
			return &g.slots[i];
		}
	}
	return NULL;
}

/* Under g.mu: key was handed over at t_ns with a value of hash vhash. */
static void handed_over(const char *key, __u64 vhash, __u64 t_ns)
{
	struct slot *s = slot_of(fnv64(key, strlen(key)), 1);

	g.sets[g.phase]++;
	if (!s) {
		g.untracked++;
		return;
	}
	s->h[s->next] = (struct handover){ vhash, t_ns, g.phase };
	s->next = (s->next + 1) % HIST;
}

/*
 * fleet_pub's calls into its publisher, timestamped on their way: the
 * time is taken before the call, and g.mu held across it, so the watcher
 * cannot see the write before the hand-over is on record (the publisher
 * takes its own lock only, never g.mu).
 */
int __real_ks_etcd_pub_set(struct ks_etcd_pub *p, const char *key,
			   const void *val, size_t vlen);
int __real_ks_etcd_pub_delete(struct ks_etcd_pub *p, const char *key);
int __wrap_ks_etcd_pub_set(struct ks_etcd_pub *p, const char *key,
			   const void *val, size_t vlen);
int __wrap_ks_etcd_pub_delete(struct ks_etcd_pub *p, const char *key);

int __wrap_ks_etcd_pub_set(struct ks_etcd_pub *p, const char *key,
			   const void *val, size_t vlen)
{
	__u64 vh = fnv64(val, vlen) | 2; /* never 1, the delete mark */
	__u64 t;
	int rc;

	pthread_mutex_lock(&g.mu);
	t = ks_mono_ns();
	rc = __real_ks_etcd_pub_set(p, key, val, vlen);
	if (rc == 1)
		handed_over(key, vh, t);
	if (rc == 1 && !strncmp(key, KS_LOAD_ROOT, strlen(KS_LOAD_ROOT)))
		g.load_sets[g.phase]++;
	pthread_mutex_unlock(&g.mu);
	if (rc == 1 && getenv("FLEET_SCALE_TRACE"))
		fprintf(stderr, "set %s %.*s\n", key, (int)vlen,
			(const char *)val);
	return rc;
}

int __wrap_ks_etcd_pub_delete(struct ks_etcd_pub *p, const char *key)
{
	__u64 t;
	int rc;

	pthread_mutex_lock(&g.mu);
	t = ks_mono_ns();
	rc = __real_ks_etcd_pub_delete(p, key);
	if (rc == 1)
		handed_over(key, 1, t);
	pthread_mutex_unlock(&g.mu);
	return rc;
}

static void lat_add(struct lat *l, __u64 ns)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 4096;
		__u64 *p = realloc(l->ns, cap * sizeof(*p));

		if (!p)
			return;
		l->ns = p;
		l->cap = cap;
	}
	l->ns[l->n++] = ns;
}

/* Under g.mu: one event, arrived at now (client: on the prefix a
 * library handle watches). */
static void event_arrived(const struct ks_etcd_event *ev, __u64 now, int client)
{
	__u64 vh = ev->type == KS_ETCD_EV_DELETE
			   ? 1
			   : fnv64(ev->kv.value, ev->kv.value_len) | 2;
	struct slot *s = slot_of(fnv64(ev->kv.key, ev->kv.key_len), 0);
	struct handover *best = NULL;
	unsigned i;

	g.events[g.watch_phase]++;
	g.cevents[g.watch_phase] += client;
	for (i = 0; s && i < HIST; i++) {
		struct handover *h = &s->h[i];

		if (h->t_ns && h->vhash == vh && h->t_ns <= now &&
		    (!best || h->t_ns > best->t_ns))
			best = h;
	}
	if (!best) {
		g.unmatched[g.watch_phase]++;
		return;
	}
	lat_add(&g.lat[best->phase], now - best->t_ns);
	best->t_ns = 0;
}

struct watcher {
	struct ks_etcd *c;
	struct ks_etcd_watch *w;
	pthread_t th;
	int errors;
	int client; /* /keysteer/CLUSTER/, else /keysteer-load/CLUSTER/ */
};

static void *watch_main(void *arg)
{
	struct watcher *wt = arg;

	for (;;) {
		struct pollfd p = { .fd = ks_etcd_watch_fd(wt->w),
				    .events = POLLIN };
		int t = ks_etcd_watch_timeout_ms(wt->w);
		struct ks_etcd_event ev;
		__u64 now;
		int stop;

		pthread_mutex_lock(&g.mu);
		stop = g.stop;
		pthread_mutex_unlock(&g.mu);
		if (stop)
			break;
		poll(&p, 1, t < 0 || t > 100 ? 100 : t);
		if (ks_etcd_watch_run(wt->w) < 0) {
			wt->errors++;
			ks_warn("watch: %s", ks_etcd_watch_errmsg(wt->w));
		}
		/* every event of this read arrived now */
		now = ks_mono_ns();
		pthread_mutex_lock(&g.mu);
		while (ks_etcd_watch_next(wt->w, &ev) == 1) {
			event_arrived(&ev, now, wt->client);
			ks_etcd_event_free(&ev);
		}
		pthread_mutex_unlock(&g.mu);
	}
	return NULL;
}

/* ---- the simulated agents ---- */

struct agent {
	struct ks_fleet_pub fp;
	struct ks_report rep;
	struct ks_hot_table t;
	double base[HOT_MAX]; /* each entry's rate, before jitter */
	__u64 rng;
	__u32 next_key; /* the next new key's number */
	unsigned idx;
};

static __u64 rnd(struct agent *a)
{
	a->rng ^= a->rng << 13;
	a->rng ^= a->rng >> 7;
	a->rng ^= a->rng << 17;
	return a->rng;
}

static double urand(struct agent *a) /* [0, 1) */
{
	return (double)(rnd(a) >> 11) / 9007199254740992.0;
}

static unsigned copies_for(double reads_ps)
{
	unsigned c = 1 + (unsigned)ceil(reads_ps / COPY_BUDGET);

	return c > KS_MAX_COPIES ? KS_MAX_COPIES : c;
}

/* A key's rate at rank r (1: the busiest): Zipf (s = 1) from
 * ZIPF_TOP reads/s, or with --flat anywhere in [FLAT_LO, FLAT_HI). */
static double rate_at(struct agent *a, const struct args *o, unsigned r)
{
	if (o->flat)
		return FLAT_LO + (FLAT_HI - FLAT_LO) * urand(a);
	return ZIPF_TOP / (double)r;
}

/* Slot i holds a new key, at rank r's rate. */
static void new_key(struct agent *a, const struct args *o, unsigned i,
		    unsigned r)
{
	struct ks_hot_entry *e = &a->t.e[i];
	__u64 buf[KS_KEY_WORDS] = { 0 };
	int n;

	n = snprintf((char *)buf, sizeof(buf), "bench:host%03u:item:%07u",
		     a->idx, a->next_key++);
	memset(e, 0, sizeof(*e));
	memcpy(e->key, buf, (size_t)n);
	e->len = (__u16)n;
	e->hash = ks_key_hash(buf, (__u32)n);
	e->state = KS_HOT_HOT;
	e->read_hot = 1;
	a->base[i] = rate_at(a, o, r);
	e->copies = copies_for(a->base[i]);
	e->copies_rate = a->base[i];
}

static int by_rate(const void *x, const void *y)
{
	const struct ks_top_entry *a = x, *b = y;

	return a->reads_mps < b->reads_mps   ? 1
	       : a->reads_mps > b->reads_mps ? -1
					     : 0;
}

/* The report as a datapath would leave it: class rates the sum of the
 * table's, top keys the busiest of it. */
static void fill_report(struct agent *a, const struct args *o, __u32 seq)
{
	struct ks_top_entry all[HOT_MAX];
	double reads = 0, writes = 0;
	unsigned i, n = 0;

	for (i = 0; i < o->hot; i++) {
		const struct ks_hot_entry *e = &a->t.e[i];
		struct ks_top_entry *t = &all[n++];

		reads += e->reads_ps;
		writes += e->writes_ps;
		memset(t, 0, sizeof(*t));
		t->hash = e->hash;
		t->reads_mps = (__u64)(e->reads_ps * 1000.0);
		t->writes_mps = (__u64)(e->writes_ps * 1000.0);
		t->len = e->len;
		memcpy(t->key, e->key, e->len);
	}
	qsort(all, n, sizeof(all[0]), by_rate);
	a->rep.seq = seq;
	a->rep.updated_ns = ks_real_ns();
	a->rep.elapsed_ns = (__u64)o->interval_ms * 1000000ULL;
	/* the hot keys are half of the host's requests */
	a->rep.class_req_mps[KS_CLASS_READ] = (__u64)(reads * 2 * 1000.0);
	a->rep.class_req_mps[KS_CLASS_WRITE] = (__u64)(writes * 2 * 1000.0);
	a->rep.class_req_mps[KS_CLASS_OTHER] = 20 * 1000;
	a->rep.n_top = n < TOP_N ? n : TOP_N;
	memcpy(a->rep.top, all, a->rep.n_top * sizeof(all[0]));
}

/* One interval of agent a: the table moves as the phase says, then the
 * agent's own publishing code. */
static void tick(struct agent *a, const struct args *o, enum phase ph,
		 __u32 seq)
{
	unsigned i, k;

	if (ph == PH_CHURN && (!o->churn_agents || a->idx < o->churn_agents)) {
		for (k = 0; k < o->churn_replace; k++)
			new_key(a, o, (unsigned)(rnd(a) % o->hot),
				1 + (unsigned)(rnd(a) % o->hot));
		for (k = 0; k < o->churn_move; k++) {
			i = (unsigned)(rnd(a) % o->hot);
			if (a->base[i] * 2 > RATE_MAX ||
			    (a->base[i] / 2 >= RATE_MIN && (rnd(a) & 1)))
				a->base[i] /= 2;
			else
				a->base[i] *= 2;
			a->t.e[i].copies = copies_for(a->base[i]);
			a->t.e[i].copies_rate = a->base[i];
		}
	}
	for (i = 0; i < o->hot; i++) {
		struct ks_hot_entry *e = &a->t.e[i];
		double j = 1.0 + o->jitter * (2.0 * urand(a) - 1.0);

		e->reads_ps = a->base[i] * j;
		e->writes_ps = a->base[i] * 0.01 * j;
		e->intervals_hot++;
	}
	a->t.seq = seq;
	fill_report(a, o, seq);
	ks_fleet_pub_interval(&a->fp, &a->rep, NULL, &a->t, NULL, 0);
}

static void agent_init(struct agent *a, unsigned idx, const struct args *o)
{
	unsigned i;

	memset(a, 0, sizeof(*a));
	a->idx = idx;
	a->rng = 0x9e3779b97f4a7c15ULL ^ ((__u64)(o->seed + 1) << 20) ^ idx;
	ks_hot_init(&a->t);
	for (i = 0; i < o->hot; i++)
		new_key(a, o, i, i + 1);
	a->t.used = o->hot;
	a->rep.version = KS_REPORT_VERSION;
	a->rep.agent_pid = (__u32)getpid();
	a->rep.sample_n = 64;
	a->rep.interval_ms = o->interval_ms;
	a->rep.start_ns = ks_real_ns();
	snprintf(a->rep.ifname, sizeof(a->rep.ifname), "bench%u", idx);
}

/* ---- what etcd says about itself ---- */

enum {
	M_PUT,
	M_DELETE,
	M_TXN_MULTI,
	M_RENEWED,
	M_EVENTS,
	M_G_TXN,
	M_G_PUT,
	M_G_KEEPALIVE,
	M_G_GRANT,
	M_FSYNC,
	M_COMMIT,
	M_RECV,
	M_SENT,
	M_N
};

/* a metric, and a label every summed line must have (NULL: any) */
static const struct {
	const char *name, *label, *field;
} metric[M_N] = {
	[M_PUT] = { "etcd_mvcc_put_total", NULL, "mvcc_puts" },
	[M_DELETE] = { "etcd_mvcc_delete_total", NULL, "mvcc_deletes" },
	[M_TXN_MULTI] = { "etcd_mvcc_txn_total", NULL, "mvcc_txns" },
	[M_RENEWED] = { "etcd_debugging_lease_renewed_total", NULL,
			"lease_renewed" },
	[M_EVENTS] = { "etcd_debugging_mvcc_events_total", NULL,
		       "watch_events_sent" },
	[M_G_TXN] = { "grpc_server_handled_total", "grpc_method=\"Txn\"",
		      "grpc_txn" },
	[M_G_PUT] = { "grpc_server_handled_total", "grpc_method=\"Put\"",
		      "grpc_put" },
	[M_G_KEEPALIVE] = { "grpc_server_handled_total",
			    "grpc_method=\"LeaseKeepAlive\"",
			    "grpc_keepalive" },
	[M_G_GRANT] = { "grpc_server_handled_total",
			"grpc_method=\"LeaseGrant\"", "grpc_grant" },
	[M_FSYNC] = { "etcd_disk_wal_fsync_duration_seconds_count", NULL,
		      "wal_fsyncs" },
	[M_COMMIT] = { "etcd_disk_backend_commit_duration_seconds_count", NULL,
		       "backend_commits" },
	/* bytes through etcd's gRPC server, the gateway's included: what
	 * the publishers send, and what the watches carry out */
	[M_RECV] = { "etcd_network_client_grpc_received_bytes_total", NULL,
		     "grpc_recv_bytes" },
	[M_SENT] = { "etcd_network_client_grpc_sent_bytes_total", NULL,
		     "grpc_sent_bytes" },
};

struct buf {
	char *p;
	size_t n;
};

static size_t buf_write(char *d, size_t sz, size_t nm, void *ud)
{
	struct buf *b = ud;
	char *p = realloc(b->p, b->n + sz * nm + 1);

	if (!p)
		return 0;
	memcpy(p + b->n, d, sz * nm);
	b->p = p;
	b->n += sz * nm;
	b->p[b->n] = '\0';
	return sz * nm;
}

/* etcd's /metrics, summed as metric[] says; 0 or -1. */
static int scrape(const char *etcd, double out[M_N])
{
	char url[KS_ETCD_URL_MAX + 16];
	struct buf b = { 0 };
	CURL *h = curl_easy_init();
	char *line, *save = NULL;
	const char *comma;
	int rc = -1, i;

	memset(out, 0, M_N * sizeof(out[0]));
	if (!h)
		return -1;
	comma = strchr(etcd, ',');
	snprintf(url, sizeof(url), "%.*s/metrics",
		 comma ? (int)(comma - etcd) : (int)strlen(etcd), etcd);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, buf_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	if (curl_easy_perform(h) != CURLE_OK || !b.p)
		goto out;
	for (line = strtok_r(b.p, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *v;

		if (line[0] == '#')
			continue;
		v = strrchr(line, ' ');
		if (!v)
			continue;
		for (i = 0; i < M_N; i++) {
			size_t l = strlen(metric[i].name);

			if (strncmp(line, metric[i].name, l) ||
			    (line[l] != ' ' && line[l] != '{'))
				continue;
			if (metric[i].label && !strstr(line, metric[i].label))
				continue;
			out[i] += strtod(v + 1, NULL);
		}
	}
	rc = 0;
out:
	curl_easy_cleanup(h);
	free(b.p);
	return rc;
}

/* etcd's utime + stime in seconds and its RSS in MiB; -1 when unreadable. */
static int proc_of(unsigned pid, double *cpu_s, double *rss_mib)
{
	char path[64], text[2048], *p;
	unsigned long long ut = 0, st = 0;
	long rss_pages = 0;
	FILE *f;
	size_t n;

	*cpu_s = *rss_mib = 0;
	if (!pid)
		return -1;
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	/* after "(comm)": state is field 3, utime 14, stime 15, rss 24 */
	p = strrchr(text, ')');
	if (!p ||
	    sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %*u %*u %ld",
		   &ut, &st, &rss_pages) != 3)
		return -1;
	*cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	*rss_mib = (double)rss_pages * (double)sysconf(_SC_PAGESIZE) /
		   (1024.0 * 1024.0);
	return 0;
}

struct snap {
	__u64 t_ns;
	double m[M_N];
	int m_ok;
	double etcd_cpu_s, etcd_rss_mib;
	double self_cpu_s;
	struct ks_etcd_pub_stats pub; /* summed; max_wait_ns the max */
};

static void take(struct snap *s, struct agent *ag, const struct args *o)
{
	struct rusage ru;
	unsigned i;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < o->agents; i++) {
		struct ks_etcd_pub_stats st;

		if (!ag[i].fp.pub)
			continue;
		ks_etcd_pub_stats(ag[i].fp.pub, &st);
		s->pub.txns += st.txns;
		s->pub.puts += st.puts;
		s->pub.deletes += st.deletes;
		s->pub.keepalives += st.keepalives;
		s->pub.grants += st.grants;
		s->pub.errors += st.errors;
		s->pub.pending += st.pending;
		s->pub.keys += st.keys;
		if (st.max_wait_ns > s->pub.max_wait_ns)
			s->pub.max_wait_ns = st.max_wait_ns;
	}
	s->m_ok = !scrape(o->etcd, s->m);
	proc_of(o->etcd_pid, &s->etcd_cpu_s, &s->etcd_rss_mib);
	getrusage(RUSAGE_SELF, &ru);
	s->self_cpu_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
			(double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	s->t_ns = ks_mono_ns();
}

static int cmp_u64(const void *x, const void *y)
{
	__u64 a = *(const __u64 *)x, b = *(const __u64 *)y;

	return a < b ? -1 : a > b;
}

static double pct_ms(const struct lat *l, double q)
{
	size_t i;

	if (!l->n)
		return 0;
	i = (size_t)ceil(q * (double)l->n) - 1;
	if (i >= l->n)
		i = l->n - 1;
	return (double)l->ns[i] / 1e6;
}

/* One phase's RESULT line, from snapshots a (its start) and b (its end). */
static void report(const struct args *o, enum phase ph, const struct snap *a,
		   const struct snap *b, __u64 late_ns)
{
	double s = (double)(b->t_ns - a->t_ns) / 1e9, n = o->agents;
	struct lat *l = &g.lat[ph];
	int i;

	pthread_mutex_lock(&g.mu);
	qsort(l->ns, l->n, sizeof(l->ns[0]), cmp_u64);
	printf("RESULT agents=%u phase=%s seconds=%.1f hot=%u rates=%s interval_ms=%u churn_agents=%u",
	       o->agents, phase_name[ph], s, o->hot, o->flat ? "flat" : "zipf",
	       o->interval_ms,
	       o->churn_agents && o->churn_agents < o->agents ? o->churn_agents
							      : o->agents);
	/* what the agents did: changes handed over, the publishers' writes */
	printf(" sets_ps=%.1f pub_txns_ps=%.1f pub_puts_ps=%.1f pub_deletes_ps=%.1f pub_keepalives_ps=%.1f pub_errors=%" PRIu64
	       " pub_grants=%" PRIu64 " pub_max_wait_ms=%.1f",
	       (double)g.sets[ph] / s, (double)(b->pub.txns - a->pub.txns) / s,
	       (double)(b->pub.puts - a->pub.puts) / s,
	       (double)(b->pub.deletes - a->pub.deletes) / s,
	       (double)(b->pub.keepalives - a->pub.keepalives) / s,
	       b->pub.errors - a->pub.errors, b->pub.grants - a->pub.grants,
	       b->pub.max_wait_ns / 1e6);
	/* txns an agent makes per interval: 1 is one per change burst */
	printf(" per_agent_puts_ps=%.3f per_agent_txns_pi=%.2f per_agent_writes_ps=%.3f",
	       (double)(b->pub.puts - a->pub.puts) / s / n,
	       (double)(b->pub.txns - a->pub.txns) / n /
		       (s * 1000.0 / o->interval_ms),
	       (double)(b->pub.puts - a->pub.puts + b->pub.deletes -
			a->pub.deletes) /
		       s / n);
	/* what etcd counted */
	for (i = 0; i < M_N; i++)
		printf(" %s_ps=%.1f", metric[i].field,
		       a->m_ok && b->m_ok ? (b->m[i] - a->m[i]) / s : -1.0);
	printf(" client_events_ps=%.1f load_sets_ps=%.1f",
	       (double)g.cevents[ph] / s, (double)g.load_sets[ph] / s);
	printf(" watch_events_ps=%.1f watch_n=%zu watch_unmatched=%llu"
	       " watch_p50_ms=%.2f watch_p99_ms=%.2f watch_max_ms=%.2f",
	       (double)g.events[ph] / s, l->n,
	       (unsigned long long)g.unmatched[ph], pct_ms(l, 0.50),
	       pct_ms(l, 0.99), pct_ms(l, 1.0));
	printf(" etcd_cpu_pct=%.1f etcd_rss_mib=%.1f bench_cpu_pct=%.1f tick_late_max_ms=%.1f\n",
	       100.0 * (b->etcd_cpu_s - a->etcd_cpu_s) / s, b->etcd_rss_mib,
	       100.0 * (b->self_cpu_s - a->self_cpu_s) / s, late_ns / 1e6);
	pthread_mutex_unlock(&g.mu);
	fflush(stdout);
}

/* ---- options ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: fleet_scale --etcd URL --agents N [--etcd-pid PID] [--hot K]\n"
		"                   [--interval S] [--warmup S] [--steady S] [--churn S]\n"
		"                   [--churn-replace K] [--churn-move K] [--churn-agents K]\n"
		"                   [--jitter F] [--flat] [--cluster NAME] [--seed N] [-v]\n"
		"                   [--fleet-compat MODE] [--load-every N]\n"
		"                   [--counting-in-hot]\n"
		"\n"
		"Runs N simulated agents (the agent's publishing code, fake datapath\n"
		"numbers) against one etcd: a warm-up, a steady state and a churn phase,\n"
		"one RESULT line each for the last two. tests/bench/fleet_scale.sh starts\n"
		"etcd and runs the points (docs/fleet.md, \"Scale\").\n"
		"\n"
		"Options:\n"
		"  --etcd URL         the etcd (its /metrics is read too)\n"
		"  --agents N         simulated agents, 1..%u\n"
		"  --etcd-pid PID     etcd's pid, for its CPU and RSS (else not measured)\n"
		"  --hot K            hot keys per agent, 1..%u (default 64)\n"
		"  --interval S       seconds between an agent's intervals (default 1)\n"
		"  --warmup S, --steady S, --churn S\n"
		"                     phase lengths in intervals (default 5, 25, 20)\n"
		"  --churn-replace K  keys leaving and entering per agent per interval\n"
		"                     under churn (default 16)\n"
		"  --churn-move K     keys whose rate doubles or halves per interval\n"
		"                     under churn (default 16)\n"
		"  --churn-agents K   only the first K agents churn (default: all)\n"
		"  --jitter F         a rate's change per interval, at most F of it\n"
		"                     (default 0.03; 0.10 and more is a republish)\n"
		"  --flat             hot keys' rates spread evenly over 2k..20k reads/s\n"
		"                     (default: Zipf, the busiest at 64k reads/s, the\n"
		"                     k-th at 64k/k)\n"
		"  --cluster NAME     key prefix /keysteer/NAME/ (default bench)\n"
		"  --fleet-compat M   the agents' hosts/ entries: members (default),\n"
		"                     full or off, as agent run's option\n"
		"  --load-every N     load documents at most every N intervals\n"
		"                     (default 1), as agent run's option\n"
		"  --counting-in-hot  every hot key a hot/ entry, as before keys only\n"
		"                     counted went to the load document (these agents\n"
		"                     have no steering: every key is only counted)\n"
		"  --seed N           of the fake rates (default 0)\n"
		"  -v                 the agents' own log lines\n"
		"\n"
		"Example:\n"
		"  fleet_scale --etcd http://127.0.0.1:2379 --agents 64 --etcd-pid 1234\n",
		AGENTS_MAX, HOT_MAX);
}

static int parse_args(int argc, char **argv, struct args *o)
{
	static const struct option lo[] = {
		{ "etcd", required_argument, NULL, 'e' },
		{ "agents", required_argument, NULL, 'n' },
		{ "etcd-pid", required_argument, NULL, 'p' },
		{ "hot", required_argument, NULL, 'k' },
		{ "interval", required_argument, NULL, 'i' },
		{ "warmup", required_argument, NULL, 'W' },
		{ "steady", required_argument, NULL, 'S' },
		{ "churn", required_argument, NULL, 'C' },
		{ "churn-replace", required_argument, NULL, 'r' },
		{ "churn-move", required_argument, NULL, 'm' },
		{ "churn-agents", required_argument, NULL, 'a' },
		{ "jitter", required_argument, NULL, 'j' },
		{ "cluster", required_argument, NULL, 'c' },
		{ "seed", required_argument, NULL, 's' },
		{ "flat", no_argument, NULL, 'f' },
		{ "fleet-compat", required_argument, NULL, 'F' },
		{ "load-every", required_argument, NULL, 'L' },
		{ "counting-in-hot", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* the whole-number options: getopt's value, name, range, where */
	const struct {
		int c;
		const char *name;
		unsigned min, max, *dst;
	} counts[] = {
		{ 'n', "--agents", 1, AGENTS_MAX, &o->agents },
		{ 'p', "--etcd-pid", 1, 0x7fffffff, &o->etcd_pid },
		{ 'k', "--hot", 1, HOT_MAX, &o->hot },
		{ 'W', "--warmup", 0, 3600, &o->warmup_s },
		{ 'S', "--steady", 0, 3600, &o->steady_s },
		{ 'C', "--churn", 0, 3600, &o->churn_s },
		{ 'r', "--churn-replace", 0, HOT_MAX, &o->churn_replace },
		{ 'm', "--churn-move", 0, HOT_MAX, &o->churn_move },
		{ 'a', "--churn-agents", 0, AGENTS_MAX, &o->churn_agents },
		{ 's', "--seed", 0, 0x7fffffff, &o->seed },
		{ 'L', "--load-every", 1, KS_LOAD_EVERY_MAX, &o->load_every },
		{ 0, NULL, 0, 0, NULL },
	};
	char err[KS_ERRLEN];
	unsigned long long v;
	int c, rc = 0;
	size_t i;

	*o = (struct args){ .cluster = "bench",
			    .hot = 64,
			    .interval_ms = 1000,
			    .warmup_s = 5,
			    .steady_s = 25,
			    .churn_s = 20,
			    .churn_replace = 16,
			    .churn_move = 16,
			    .load_every = KS_LOAD_EVERY_DEFAULT,
			    .jitter = 0.03 };
	while ((c = getopt_long(argc, argv, "vh", lo, NULL)) != -1) {
		rc = 0;
		switch (c) {
		case 'e':
			o->etcd = optarg;
			break;
		case 'c':
			o->cluster = optarg;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'f':
			o->flat = 1;
			break;
		case 'H':
			o->counting_in_hot = 1;
			break;
		case 'F':
			if (ks_fleet_compat_parse(optarg, &o->compat)) {
				snprintf(
					err, sizeof(err),
					"--fleet-compat %s: members, full or off",
					optarg);
				rc = -EINVAL;
			}
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'i':
			rc = ks_parse_seconds("--interval", optarg, 100, 60000,
					      &o->interval_ms, err,
					      sizeof(err));
			break;
		case 'j':
			o->jitter = strtod(optarg, NULL);
			if (!(o->jitter >= 0 && o->jitter < 0.5)) {
				snprintf(err, sizeof(err),
					 "--jitter %s is not in [0, 0.5)",
					 optarg);
				rc = -EINVAL;
			}
			break;
		default:
			for (i = 0; counts[i].c && counts[i].c != c; i++)
				;
			if (!counts[i].c) {
				usage(stderr);
				return -EINVAL;
			}
			rc = ks_parse_uint(counts[i].name, optarg,
					   counts[i].min, counts[i].max, &v,
					   err, sizeof(err));
			if (!rc)
				*counts[i].dst = (unsigned)v;
			break;
		}
		if (rc) {
			fprintf(stderr, "fleet_scale: %s\n", err);
			return rc;
		}
	}
	if (!o->etcd || !o->agents) {
		fprintf(stderr,
			"fleet_scale: --etcd and --agents are required; see --help\n");
		return -EINVAL;
	}
	return 0;
}

/* ---- the run ---- */

static void sleep_until(__u64 mono_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(mono_ns / 1000000000ULL),
			       .tv_nsec = (long)(mono_ns % 1000000000ULL) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

static int start_watch(struct watcher *wt, const struct args *o, int client)
{
	struct ks_etcd_opts eo = { .endpoints = o->etcd };
	char err[256], prefix[sizeof(KS_LOAD_ROOT) + KS_CLUSTER_MAX + 2];
	__u64 end;

	wt->client = client;

	if (ks_etcd_open(&wt->c, &eo, err, sizeof(err))) {
		fprintf(stderr, "fleet_scale: %s\n", err);
		return -1;
	}
	snprintf(prefix, sizeof(prefix), "%s%s/",
		 client ? KS_ETCD_ROOT : KS_LOAD_ROOT, o->cluster);
	if (ks_etcd_watch_start(wt->c, prefix, strlen(prefix), KS_ETCD_PREFIX,
				0, &wt->w)) {
		fprintf(stderr, "fleet_scale: watch: %s\n",
			ks_etcd_errmsg(wt->c));
		return -1;
	}
	end = ks_mono_ns() + 5000000000ULL;
	while (!ks_etcd_watch_created(wt->w) && ks_mono_ns() < end) {
		struct pollfd p = { .fd = ks_etcd_watch_fd(wt->w),
				    .events = POLLIN };

		poll(&p, 1, 50);
		ks_etcd_watch_run(wt->w);
	}
	if (!ks_etcd_watch_created(wt->w)) {
		fprintf(stderr,
			"fleet_scale: the watch on %s was not created: %s\n",
			prefix, ks_etcd_watch_errmsg(wt->w));
		return -1;
	}
	if (pthread_create(&wt->th, NULL, watch_main, wt)) {
		fprintf(stderr, "fleet_scale: cannot start the watcher\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ks_etcd_opts eo = { 0 };
	struct watcher wt[2] = { { 0 } };
	struct ks_etcd *c = NULL;
	struct agent *ag = NULL;
	struct snap snaps[PH_N + 1];
	__u64 late[PH_N] = { 0 }, t0, iv;
	char err[256], ver[64] = "", self[64];
	unsigned i, k, bound[PH_N + 1], started = 0;
	int rc = 1, watching = 0;
	enum phase ph;
	struct args o;

	if (parse_args(argc, argv, &o))
		return 2;
	ks_log_set_level(o.verbose ? KS_LOG_INFO : KS_LOG_WARN);
	/* once, before any thread: every client's own init is then a count */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "fleet_scale: libcurl did not initialise\n");
		return 1;
	}
	g.slots = calloc((size_t)1 << SLOTS_LOG, sizeof(*g.slots));
	ag = calloc(o.agents, sizeof(*ag));
	if (!g.slots || !ag) {
		fprintf(stderr, "fleet_scale: out of memory\n");
		goto out;
	}
	eo.endpoints = o.etcd;
	if (ks_etcd_open(&c, &eo, err, sizeof(err))) {
		fprintf(stderr, "fleet_scale: %s\n", err);
		goto out;
	}
	if (ks_etcd_status(c, ver, sizeof(ver))) {
		fprintf(stderr, "fleet_scale: etcd at %s: %s\n", o.etcd,
			ks_etcd_errmsg(c));
		goto out;
	}
	printf("# fleet_scale: etcd %s at %s; %u agents, %u hot keys each (%s rates), interval %u ms; %u+%u+%u intervals (warm-up, steady, churn); churn: %u keys replaced and %u rates doubled or halved per agent per interval; jitter %.2f\n",
	       ver, o.etcd, o.agents, o.hot, o.flat ? "flat" : "Zipf",
	       o.interval_ms, o.warmup_s, o.steady_s, o.churn_s,
	       o.churn_replace, o.churn_move, o.jitter);
	fflush(stdout);
	if (start_watch(&wt[0], &o, 1))
		goto out;
	watching = 1;
	if (start_watch(&wt[1], &o, 0))
		goto out;
	watching = 2;
	for (i = 0; i < o.agents; i++) {
		agent_init(&ag[i], i, &o);
		/* 198.18.9.1 on: the benchmarking range, never a real host */
		snprintf(self, sizeof(self), "198.18.%u.%u:11211", 9 + i / 250,
			 1 + i % 250);
		ks_fleet_pub_start(&ag[i].fp, c, o.cluster, self, "bench0",
				   o.interval_ms, 0, 0);
		ag[i].fp.compat = o.compat;
		ag[i].fp.load_every = o.load_every;
		ag[i].fp.counting_in_hot = o.counting_in_hot;
		if (!ag[i].fp.pub) {
			fprintf(stderr, "fleet_scale: agent %s did not start\n",
				self);
			goto out;
		}
		started = i + 1;
	}

	/* interval k of agent i is due at t0 + k iv + i iv / N */
	bound[PH_WARMUP] = 0;
	bound[PH_STEADY] = o.warmup_s;
	bound[PH_CHURN] = o.warmup_s + o.steady_s;
	bound[PH_N] = o.warmup_s + o.steady_s + o.churn_s;
	iv = (__u64)o.interval_ms * 1000000ULL;
	t0 = ks_mono_ns();
	ph = PH_WARMUP;
	for (k = 0;; k++) {
		/* phase b starts (b = PH_N: the run ends) at interval bound[b];
		 * a phase of no intervals starts and ends there */
		while (ph < PH_N && k == bound[ph + 1]) {
			ph++;
			sleep_until(t0 + k * iv);
			take(&snaps[ph], ag, &o);
			pthread_mutex_lock(&g.mu);
			g.phase = g.watch_phase = ph;
			pthread_mutex_unlock(&g.mu);
		}
		if (ph == PH_N)
			break;
		for (i = 0; i < o.agents; i++) {
			__u64 due = t0 + k * iv + i * iv / o.agents, now;

			sleep_until(due);
			now = ks_mono_ns();
			if (now - due > late[ph])
				late[ph] = now - due;
			tick(&ag[i], &o, ph, k + 1);
		}
	}
	/* the last changes' events are still on their way: their latencies
	 * count (arrivals now are the drain's), the rates are taken */
	sleep_until(ks_mono_ns() + 2 * iv);
	if (o.steady_s)
		report(&o, PH_STEADY, &snaps[PH_STEADY], &snaps[PH_CHURN],
		       late[PH_STEADY]);
	if (o.churn_s)
		report(&o, PH_CHURN, &snaps[PH_CHURN], &snaps[PH_N],
		       late[PH_CHURN]);
	rc = 0;
out:
	if (watching) {
		pthread_mutex_lock(&g.mu);
		g.stop = 1;
		pthread_mutex_unlock(&g.mu);
		for (i = 0; i < (unsigned)watching; i++)
			pthread_join(wt[i].th, NULL);
	}
	for (i = 0; i < 2; i++) {
		ks_etcd_watch_stop(wt[i].w);
		ks_etcd_close(wt[i].c);
	}
	for (i = 0; i < started; i++)
		ks_fleet_pub_stop(&ag[i].fp);
	ks_etcd_close(c);
	free(ag);
	free(g.slots);
	for (i = 0; i <= PH_N; i++)
		free(g.lat[i].ns);
	curl_global_cleanup();
	return rc;
}
