// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ks_load - memcached load generator. --conns threads, each with one
 * persistent socket per shard and one operation in flight; with --rate
 * each thread keeps its own schedule of rate/conns ops/s (a late op is sent
 * at once, never skipped, so the count is exact and latency is measured
 * from the moment it was sent). Keys are routed with the agent's ring code
 * (user/core/ring.h), so they land where the clients' ring puts them.
 */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include "load.h"
#include "util/opts.h"

static struct ld_run *g_run;

static void on_signal(int sig)
{
	(void)sig;
	if (g_run)
		g_run->stop = 1;
}

/* Key id: 0..keys-1 are the Zipf ranks 1..keys, then the flash keys. */
static __u32 draw_key(struct ld_worker *w)
{
	const struct ld_run *run = w->run;
	double u = ks_rng_unit(&w->rng);
	int i;

	for (i = 0; i < run->cfg->nflash; i++)
		if (u < run->flash_cum[i])
			return run->cfg->keys + (__u32)i;
	return ks_zipf_rank(&run->zipf, ks_rng_unit(&w->rng)) - 1;
}

size_t ld_key_name(const struct ld_run *run, __u32 id, char *buf)
{
	if (id >= run->cfg->keys)
		return (size_t)sprintf(
			buf, "%s", run->cfg->flash[id - run->cfg->keys].key);
	return (size_t)sprintf(buf, "%s%u", run->cfg->prefix, id + 1);
}

__u32 ld_shard_of(const struct ld_run *run, const char *key, size_t len)
{
	return run->use_ring ? ks_ring_lookup(&run->ring, key, len) : 0;
}

static int pick_op(struct ld_worker *w)
{
	__u32 r = (__u32)(ks_rng_next(&w->rng) % w->run->mix_total);
	int op;

	for (op = 0; op < LD_NOPS - 1; op++) {
		if (r < w->run->cfg->mix[op])
			return op;
		r -= w->run->cfg->mix[op];
	}
	return op;
}

static int proto_of(const struct ld_cfg *cfg, int op)
{
	if (cfg->mode == LD_MODE_TCP)
		return LD_TCP;
	if (cfg->mode == LD_MODE_UDP)
		return LD_UDP;
	return op == LD_SET ? LD_TCP : LD_UDP;
}

static void count_exact(struct ld_run *run, __u32 id, int is_set)
{
	if (!run->exact_gets)
		return;
	__atomic_fetch_add(is_set ? &run->exact_sets[id] : &run->exact_gets[id],
			   1, __ATOMIC_RELAXED);
}

/* Per shard, the command being built for one operation. */
struct ld_part {
	__u32 shard;
	size_t off, len;
	__u32 nkeys;
	__u32 ids[LD_MAX_MGET];
	__u16 reqid;
};

static int send_part(struct ld_worker *w, int proto, struct ld_part *p)
{
	if (proto == LD_TCP)
		return ld_tcp_send(w, p->shard, w->out + p->off, p->len);
	p->reqid = w->reqid++;
	return ld_udp_send(w, p->shard, p->reqid, w->out + p->off, p->len);
}

static int reply_part(struct ld_worker *w, int proto, struct ld_part *p,
		      int is_get, __u64 *hits)
{
	if (proto == LD_TCP)
		return ld_tcp_reply(w, p->shard, is_get, hits);
	return ld_udp_reply(w, p->shard, p->reqid, is_get, hits);
}

/* One operation: build the per-shard commands, send them all, then read
 * every reply. Returns 0 or the first error. */
static int run_op(struct ld_worker *w, int op, int proto)
{
	struct ld_run *run = w->run;
	const struct ld_cfg *cfg = run->cfg;
	struct ld_part parts[LD_MAX_MGET];
	struct ld_opstat *st = &w->st[op][proto];
	__u32 nparts = 0, nkeys = op == LD_MGET ? cfg->mget_size : 1, i, j;
	char key[KS_MAX_KEY_LEN + 1];
	int rc = 0, sent_rc;
	__u64 hits = 0;
	size_t used = 0;

	/* Group the keys by shard, then write each shard's command. */
	__u32 ids[LD_MAX_MGET], owner[LD_MAX_MGET];

	for (i = 0; i < nkeys; i++) {
		size_t len;

		ids[i] = draw_key(w);
		len = ld_key_name(run, ids[i], key);
		owner[i] = ld_shard_of(run, key, len);
	}
	for (i = 0; i < nkeys; i++) {
		for (j = 0; j < nparts && parts[j].shard != owner[i]; j++)
			;
		if (j == nparts) {
			parts[j].shard = owner[i];
			parts[j].nkeys = 0;
			nparts++;
		}
		parts[j].ids[parts[j].nkeys++] = ids[i];
	}
	for (j = 0; j < nparts; j++) {
		struct ld_part *p = &parts[j];
		char *o;

		p->off = used;
		o = w->out + used;
		if (op == LD_SET) {
			size_t klen = ld_key_name(run, p->ids[0], key);

			o += sprintf(o, "set %.*s 0 0 %u\r\n", (int)klen, key,
				     cfg->value_size);
			memcpy(o, run->value, cfg->value_size);
			o += cfg->value_size;
			o += sprintf(o, "\r\n");
		} else {
			o += sprintf(o, "get");
			for (i = 0; i < p->nkeys; i++) {
				*o++ = ' ';
				o += ld_key_name(run, p->ids[i], o);
			}
			o += sprintf(o, "\r\n");
		}
		p->len = (size_t)(o - (w->out + used));
		used += p->len;
	}

	__u64 t0 = ld_now_ns();

	for (j = 0; j < nparts; j++) {
		struct ld_part *p = &parts[j];

		sent_rc = send_part(w, proto, p);
		if (sent_rc) {
			if (!rc)
				rc = sent_rc;
			p->nkeys = 0; /* marks it unsent: no reply to read */
			continue;
		}
		st->msgs++;
		st->keys += p->nkeys;
		for (i = 0; i < p->nkeys; i++) {
			count_exact(run, p->ids[i], op == LD_SET);
			if (op == LD_SET)
				w->shard[p->shard].set_keys++;
			else
				w->shard[p->shard].get_keys++;
		}
	}
	for (j = 0; j < nparts; j++) {
		int r;

		if (!parts[j].nkeys)
			continue;
		r = reply_part(w, proto, &parts[j], op != LD_SET, &hits);
		if (r && !rc)
			rc = r;
	}
	st->ops++;
	st->hits += hits;
	if (rc == -EBUSY) {
		st->refused++;
		rc = 0;
	} else if (rc) {
		st->errors++;
		if (rc == -ETIMEDOUT)
			st->timeouts++;
	} else {
		ks_hist_add(&st->lat, ld_now_ns() - t0);
	}
	return rc;
}

static void sleep_until(__u64 ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ULL),
			       .tv_nsec = (long)(ns % 1000000000ULL) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

static void *worker_main(void *arg)
{
	struct ld_worker *w = arg;
	struct ld_run *run = w->run;
	const struct ld_cfg *cfg = run->cfg;
	double interval = cfg->rate ? 1e9 * cfg->conns / (double)cfg->rate : 0;
	/* Threads start spread over one interval so they do not send in step. */
	double next = (double)run->start_ns + interval * w->idx / cfg->conns;
	__u64 done = 0;

	while (!run->stop && (!w->quota || done < w->quota)) {
		int op;

		if (interval) {
			if (run->deadline_ns && (__u64)next >= run->deadline_ns)
				break;
			sleep_until((__u64)next);
			next += interval;
		}
		if (run->deadline_ns && ld_now_ns() >= run->deadline_ns)
			break;
		op = pick_op(w);
		run_op(w, op, proto_of(cfg, op));
		done++;
	}
	return NULL;
}

static int resolve(struct ld_run *run, char *err, size_t errlen)
{
	__u32 i;

	run->addr = calloc(run->nshards, sizeof(*run->addr));
	if (!run->addr) {
		snprintf(err, errlen, "out of memory; try fewer shards");
		return -ENOMEM;
	}
	for (i = 0; i < run->nshards; i++) {
		const struct ks_shard *sh = &run->shards.v[i];
		struct addrinfo hints = { .ai_family = AF_UNSPEC,
					  .ai_socktype = SOCK_DGRAM },
				*res = NULL;
		char host[KS_SHARD_HOST_MAX + 1];
		size_t hl = strlen(sh->host);
		int rc;

		/* "[v6]" as the shard list writes it: the address inside */
		if (hl > 2 && sh->host[0] == '[' && sh->host[hl - 1] == ']')
			snprintf(host, sizeof(host), "%.*s", (int)(hl - 2),
				 sh->host + 1);
		else
			snprintf(host, sizeof(host), "%s", sh->host);
		rc = getaddrinfo(host, NULL, &hints, &res);
		if (rc || !res || res->ai_addrlen > sizeof(run->addr[i].sa)) {
			snprintf(
				err, errlen,
				"cannot resolve '%s': %s; give an IPv4 or [IPv6] address",
				sh->host, rc ? gai_strerror(rc) : "no address");
			if (res)
				freeaddrinfo(res);
			return -EINVAL;
		}
		memset(&run->addr[i].sa, 0, sizeof(run->addr[i].sa));
		memcpy(&run->addr[i].sa, res->ai_addr, res->ai_addrlen);
		if (run->addr[i].sa.sa.sa_family == AF_INET6)
			run->addr[i].sa.v6.sin6_port = htons(sh->port);
		else
			run->addr[i].sa.v4.sin_port = htons(sh->port);
		ks_shard_addr(sh, run->addr[i].name, sizeof(run->addr[i].name));
		freeaddrinfo(res);
	}
	return 0;
}

static int setup(struct ld_run *run, const struct ld_cfg *cfg, char *err,
		 size_t errlen)
{
	double cum = 0;
	int i, rc;

	run->cfg = cfg;
	if (cfg->server) {
		rc = ks_shards_parse_list("--server", cfg->server, &run->shards,
					  err, errlen);
		if (!rc && run->shards.n != 1) {
			snprintf(
				err, errlen,
				"--server takes one host:port; use --shards for several");
			rc = -EINVAL;
		}
	} else {
		rc = ks_ring_load(&cfg->ring, &run->shards, &run->ring, 1, err,
				  errlen);
		run->use_ring = !rc;
	}
	if (rc)
		return 2;
	run->nshards = run->shards.n;
	if (resolve(run, err, errlen))
		return 2;
	if (ks_zipf_init(&run->zipf, cfg->keys, cfg->zipf)) {
		snprintf(err, errlen,
			 "no memory for the CDF of %u keys; give fewer --keys",
			 cfg->keys);
		return 1;
	}
	for (i = 0; i < cfg->nflash; i++) {
		cum += cfg->flash[i].share;
		run->flash_cum[i] = cum;
	}
	for (i = 0; i < LD_NOPS; i++)
		run->mix_total += cfg->mix[i];
	run->value = malloc(cfg->value_size);
	if (!run->value)
		goto nomem;
	for (__u32 b = 0; b < cfg->value_size; b++)
		run->value[b] = (char)('a' + b % 26);
	if (cfg->exact_file) {
		size_t n = (size_t)cfg->keys + (size_t)cfg->nflash;

		run->exact_gets = calloc(n, sizeof(__u64));
		run->exact_sets = calloc(n, sizeof(__u64));
		if (!run->exact_gets || !run->exact_sets)
			goto nomem;
	}
	return 0;
nomem:
	snprintf(err, errlen,
		 "out of memory; give fewer --keys or a smaller --value-size");
	return 1;
}

int ld_worker_init(struct ld_worker *w, struct ld_run *run, __u32 idx,
		   __u64 quota)
{
	const struct ld_cfg *cfg = run->cfg;
	__u32 i;

	memset(w, 0, sizeof(*w));
	w->run = run;
	w->idx = idx;
	w->quota = quota;
	ks_rng_seed(&w->rng, cfg->seed + idx);
	w->reqid = (__u16)(idx * 7919);
	w->tcp_fd = malloc(run->nshards * sizeof(int));
	w->udp_fd = malloc(run->nshards * sizeof(int));
	w->shard = calloc(run->nshards, sizeof(*w->shard));
	/* The largest request: an mget of long keys, or one set. */
	w->outcap = (size_t)LD_MAX_MGET * (KS_MAX_KEY_LEN + 8) +
		    cfg->value_size + 512;
	w->out = malloc(w->outcap);
	w->incap = 65536;
	w->in = malloc(w->incap);
	if (!w->tcp_fd || !w->udp_fd || !w->shard || !w->out || !w->in)
		return -ENOMEM;
	for (i = 0; i < run->nshards; i++)
		w->tcp_fd[i] = w->udp_fd[i] = -1;
	return 0;
}

void ld_worker_free(struct ld_worker *w)
{
	if (w->tcp_fd && w->udp_fd)
		ld_worker_close(w);
	free(w->tcp_fd);
	free(w->udp_fd);
	free(w->shard);
	free(w->out);
	free(w->in);
}

int main(int argc, char **argv)
{
	static struct ld_run run;
	struct ld_worker *ws = NULL;
	struct ld_totals t = {};
	struct sigaction sa = { .sa_handler = on_signal };
	char err[KS_ERRLEN * 2];
	struct ld_cfg cfg;
	int rc;
	__u32 i, started = 0;

	rc = ld_parse_args(argc, argv, &cfg);
	if (rc)
		return rc == 1 ? 0 : rc;
	rc = setup(&run, &cfg, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "ks_load: %s\n", err);
		return rc;
	}
	ws = calloc(cfg.conns, sizeof(*ws));
	t.shard = calloc(run.nshards, sizeof(*t.shard));
	if (!ws || !t.shard) {
		fprintf(stderr, "ks_load: out of memory; give fewer --conns\n");
		return 1;
	}
	g_run = &run;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (cfg.preload) {
		if (ld_preload(&run, &t.preload_secs, err, sizeof(err))) {
			fprintf(stderr, "ks_load: %s\n", err);
			rc = 1;
			goto out;
		}
		if (!cfg.json) {
			__u64 n = (__u64)cfg.keys + (__u64)cfg.nflash;

			printf("preload: %llu keys set over TCP in %.3f s (%.0f/s), %u-byte values\n",
			       (unsigned long long)n, t.preload_secs,
			       t.preload_secs > 0 ? n / t.preload_secs : 0,
			       cfg.value_size);
			fflush(stdout);
		}
	}
	run.start_ns = ld_now_ns();
	if (cfg.duration_ms)
		run.deadline_ns = run.start_ns +
				  (__u64)cfg.duration_ms * 1000000ULL;
	for (i = 0; i < cfg.conns; i++) {
		__u64 quota = 0;

		/* --count split over the threads, the remainder to the first. */
		if (cfg.count)
			quota = cfg.count / cfg.conns +
				(i < cfg.count % cfg.conns);
		if (cfg.count && !quota)
			continue;
		if (ld_worker_init(&ws[i], &run, i, quota) ||
		    pthread_create(&ws[i].tid, NULL, worker_main, &ws[i])) {
			fprintf(stderr,
				"ks_load: cannot start connection thread %u; give fewer --conns\n",
				i);
			ld_worker_free(&ws[i]);
			ws[i].run =
				NULL; /* not running: not joined, not summed */
			run.stop = 1;
			break;
		}
		started = i + 1;
	}
	for (i = 0; i < started; i++)
		if (ws[i].run)
			pthread_join(ws[i].tid, NULL);
	t.secs = (double)(ld_now_ns() - run.start_ns) / 1e9;
	ld_sum_workers(&run, ws, started, &t);
	if (cfg.json)
		ld_print_json(&run, &t);
	else
		ld_print_table(&run, &t);
	rc = 0;
	if (cfg.exact_file && ld_write_exact(&run))
		rc = 1;
out:
	for (i = 0; i < cfg.conns; i++)
		if (ws[i].run)
			ld_worker_free(&ws[i]);
	free(ws);
	free(t.shard);
	free(run.value);
	free(run.exact_gets);
	free(run.exact_sets);
	free(run.addr);
	ks_zipf_free(&run.zipf);
	ks_ring_free(&run.ring);
	ks_shards_free(&run.shards);
	return rc;
}
