// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * loop.c - the agent's heart (see loop.h): attach, then once per interval
 * flip the epoch, merge what the datapath sampled in the interval that
 * just ended, publish the estimates in ks_report, drive the ring, the
 * hot-key table and steering, and clear that epoch for its next turn;
 * between intervals, serve HTTP and the steering events.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "agent/loop.h"
#include "cli/cmds.h"
#include "core/estimate.h"
#include "dp/bpf_log.h"
#include "dp/ring_push.h"
#include "net/flow_cpu.h"
#include "render/report.h"
#include "render/text.h"
#include "util/opts.h"
#include "util/clock.h"
#include "util/privs.h"
#include "util/sig.h"

/* In-flight packets may still write the old epoch right after the flip. */
#define KS_FLIP_GRACE_NS 2000000ULL

static void publish_header(struct ks_agent *st)
{
	struct ks_report *r = st->rep;

	r->version = KS_REPORT_VERSION;
	r->agent_pid = (__u32)getpid();
	ks_rates_report(&st->rates, r);
	r->interval_ms = st->o.interval_ms;
	r->xdp_mode = st->att.xdp_mode;
	r->replies = (__u32)st->att.egress;
	snprintf(r->ifname, sizeof(r->ifname), "%s", st->o.ifname);
}

/* This run's flags (KS_CFG_NO_STREAM from --stream-state,
 * KS_CFG_LIMIT_GROW_TAIL from --limit-reply-head, KS_CFG_REPLIES from
 * --owner-replies while ks_tc_egress is attached, or before the attach
 * asks for it) in cfg; any other bit is left as it was. */
static void put_flags(const struct ks_agent *st, struct ks_config *cfg)
{
	const __u32 own = KS_CFG_NO_STREAM | KS_CFG_LIMIT_GROW_TAIL;
	int replies = st->att.skel ? st->att.egress : st->o.owner_replies;

	cfg->flags = (cfg->flags & ~(own | KS_CFG_REPLIES | KS_CFG_SLOG)) |
		     (st->o.cfg_flags & own) | (replies ? KS_CFG_REPLIES : 0) |
		     (st->slog_on ? KS_CFG_SLOG : 0);
}

/*
 * Writes the config, with ks_config.ring put back first if a racing
 * write moved it; then waits out the packets that read the half it
 * pointed at, which the next ring push may overwrite.
 */
static int write_config(struct ks_agent *st, struct ks_config *cfg)
{
	int fixed = ks_run_ring_fix_config(st->ring, cfg);
	int err;

	put_flags(st, cfg);
	err = ks_write_config(&st->maps, cfg);

	/* Stays on this thread, in line: the next ring push (here too)
	 * rewrites the half the racing write had packets read, so this
	 * wait must be over first. Only after such a race ('agent trace'
	 * rewriting the config), never in a steady interval. */
	if (!err && fixed)
		err = ks_rcu_wait();
	return err;
}

/* Moves seq on, keeping whatever else is in ks_config (the trace flag
 * belongs to 'agent trace'); --sample auto's rates for the epoch ahead go
 * into ks_rate first, so that no CPU starts it at another rate. */
static int flip_epoch(struct ks_agent *st, __u64 elapsed_ns)
{
	struct ks_config cfg;
	int err;

	err = ks_rates_flip(&st->rates, &st->maps, st->seq + 1, elapsed_ns);
	if (!err)
		err = ks_read_config(&st->maps, &cfg);
	if (err)
		return err;
	memcpy(cfg.ports, st->o.ports, sizeof(cfg.ports));
	cfg.sample_n = st->o.sample_n;
	cfg.seq = ++st->seq;
	return write_config(st, &cfg);
}

/*
 * 'agent trace' rewrites the config to toggle its flag; if its write
 * raced with our flip it may have put the old seq back. Put ours back.
 */
static void keep_seq(struct ks_agent *st)
{
	struct ks_config cfg, probe;

	if (ks_read_config(&st->maps, &cfg))
		return;
	probe = cfg; /* write_config() makes the ring fix itself */
	if (cfg.seq == st->seq && !ks_run_ring_fix_config(st->ring, &probe))
		return;
	if (cfg.seq != st->seq)
		ks_debug(
			"seq was %u, not %u (a racing config write); fixing it",
			cfg.seq, st->seq);
	cfg.seq = st->seq;
	write_config(st, &cfg);
}

/* ks_config.hot follows the slots in use: with none, the datapath does
 * not hash unsampled keys at all. */
static void set_hot_flag(struct ks_agent *st, __u32 on)
{
	struct ks_config cfg;

	if (ks_read_config(&st->maps, &cfg) || cfg.hot == on)
		return;
	cfg.hot = on;
	write_config(st, &cfg);
}

/* KS_CFG_LIMITS while any key is limited: without it UDP gets skip the
 * limit check. */
static void set_limit_flag(struct ks_agent *st, int on)
{
	struct ks_config cfg;
	__u32 want;

	if (ks_read_config(&st->maps, &cfg))
		return;
	want = on ? cfg.flags | KS_CFG_LIMITS : cfg.flags & ~KS_CFG_LIMITS;
	if (want == cfg.flags)
		return;
	cfg.flags = want;
	write_config(st, &cfg);
}

static void ring_status_line(const struct ks_run_ring *ring)
{
	const struct ks_shard_report *g = ring->rep;
	__u64 mis = 0;
	__u32 i;

	if (!ks_run_ring_enabled(ring) || !g || !g->nshards)
		return;
	for (i = 0; i < g->nshards; i++)
		mis += g->shards[i].misdirected_mps;
	if (g->busiest >= g->nshards) {
		fprintf(stderr, "keysteer: #%u ring v%llu: no keys placed\n",
			g->seq, (unsigned long long)g->ring_version);
		return;
	}
	fprintf(stderr,
		"keysteer: #%u ring v%llu: %.1f keys/s, busiest shard %s %.2fx mean, misdirected %.1f/s\n",
		g->seq, (unsigned long long)g->ring_version,
		g->hits_mps / 1000.0, g->shards[g->busiest].name,
		g->shards[g->busiest].ratio_milli / 1000.0, mis / 1000.0);
}

static void status_line(const struct ks_agent *st, long ncands)
{
	const struct ks_report *r = st->rep;
	char key[48] = "-", *buf = NULL;
	size_t len = 0;
	FILE *m;

	/* key bytes may be user data: logged only when asked */
	if (r->n_top && st->o.log_keys)
		ks_key_text(r->top[0].key, r->top[0].len, key, sizeof(key));
	else if (r->n_top)
		snprintf(key, sizeof(key), "hash %016llx",
			 (unsigned long long)r->top[0].hash);
	fprintf(stderr,
		"keysteer: #%u %.1f req/s (read %.1f, write %.1f, other %.1f), %llu sampled, %ld candidates, top %s %.1f/s, work %.2f ms\n",
		r->seq,
		(r->class_req_mps[KS_CLASS_READ] +
		 r->class_req_mps[KS_CLASS_WRITE] +
		 r->class_req_mps[KS_CLASS_OTHER]) /
			1000.0,
		r->class_req_mps[KS_CLASS_READ] / 1000.0,
		r->class_req_mps[KS_CLASS_WRITE] / 1000.0,
		r->class_req_mps[KS_CLASS_OTHER] / 1000.0,
		(unsigned long long)r->sampled_total, ncands, key,
		r->n_top ? (r->top[0].reads_mps + r->top[0].writes_mps) / 1000.0
			 : 0.0,
		st->work_ns / 1e6);
	if (st->slog_on) {
		struct ks_slog_stats ss;

		ks_slog_stats(&st->slog, &ss);
		fprintf(stderr,
			"keysteer: #%u sample log: %llu records folded, %llu late, %llu dropped, %llu bad; most waiting on a CPU %u of %u, drain every %.1f ms, %d drain threads\n",
			r->seq, (unsigned long long)ss.folded,
			(unsigned long long)ss.late,
			(unsigned long long)ss.dropped,
			(unsigned long long)ss.bad, ss.fill_max, KS_SLOG_RECS,
			ss.period_ns / 1e6, st->slog.nshards);
	}
	ring_status_line(st->ring);
	/* lines made of pieces, put out whole: stderr is unbuffered, and a
	 * thread's log line (the purge's, the publisher's) could otherwise
	 * land between two pieces and cut the line tests and operators
	 * read */
	m = open_memstream(&buf, &len);
	ks_run_etcd_status(st->etcd, m ? m : stderr, r->seq);
	ks_run_steer_status(st->steer, m ? m : stderr, r->seq);
	ks_run_limit_status(st->limit, m ? m : stderr, r->seq, st->o.log_keys);
	if (m) {
		fclose(m);
		fwrite(buf, 1, len, stderr);
		free(buf);
	}
	if (st->http)
		fprintf(stderr,
			"keysteer: #%u http: %llu documents served, %llu errors\n",
			r->seq, (unsigned long long)st->http->stats.served,
			(unsigned long long)st->http->stats.errors);
}

/* The metrics of what the interval (or the start) left in st. */
static void publish_metrics(struct ks_agent *st, const struct ks_totals *t,
			    long ncands, int interval_ended)
{
	struct ks_slog_stats ss = { 0 };
	struct ks_metrics_in in;

	if (st->slog_on)
		ks_slog_stats(&st->slog, &ss);
	in = (struct ks_metrics_in){
		.rep = st->rep,
		.totals = t,
		.ring = ks_run_ring_enabled(st->ring) ? st->ring->rep : NULL,
		.table = st->hot->table,
		.balance = st->hot->o.balance > 0 ? &st->hot->bal : NULL,
		.read_threshold = ks_hot_read_threshold(&st->hot->o.pol),
		.candidates = ncands > 0 ? (__u64)ncands : 0,
		.candidate_slots = st->col.cands_cap,
		.slog_on = st->slog_on,
		.slog_folded = ss.folded,
		.slog_late = ss.late,
		.work_ns = st->work_ns,
		.work_max_ns = st->work_max_ns,
		.interval_max_ns = st->interval_max_ns,
		.cpu_ns = ks_process_cpu_ns(),
		.limits = st->limit && st->limit->open ? &st->limit->set : NULL,
		.limit_pkts = st->limit ? &st->limit->pkts : NULL,
	};

	struct ks_bg_stats hk;

	ks_housekeep_stats(st->hk, &hk);
	in.hk_passes = hk.passes;
	in.hk_pass_max_ns = hk.pass_max_ns;
	ks_run_metrics_publish(st->metrics, &in, st->steer, interval_ended);
}

/* --balance: this shard's served reads against the fleet's mean. */
static void fleet_load(struct ks_agent *st)
{
	const struct ks_run_ring *ring = ks_run_ring_enabled(st->ring)
						 ? st->ring
						 : NULL;
	double own, mean;
	size_t shards;

	if (st->hot->o.balance <= 0)
		return;
	own = ks_fleet_pub_served_ps(st->rep, ring, st->steer);
	mean = ks_run_etcd_fleet_mean(st->etcd, st->ring->spec.self, own,
				      &shards);
	ks_run_hot_fleet_load(st->hot, own, mean, shards,
			      ks_run_steer_owner_turns(st->steer) /
				      (double)KS_STEER_SCHED);
}

static int one_interval(struct ks_agent *st)
{
	__u32 old_seq = st->seq, epoch = old_seq & 1;
	__u64 now, elapsed_ns, cpu0 = ks_thread_cpu_ns();
	size_t nunseen, ndp;
	long ncands;
	int err;

	/* the log's records of the next interval have a home before any
	 * CPU can write one */
	if (st->slog_on)
		ks_slog_flip_begin(&st->slog, old_seq + 1);
	err = flip_epoch(st, ks_mono_ns() - st->flip_ns);
	if (err)
		return err;
	now = ks_mono_ns();
	elapsed_ns = now - st->flip_ns;
	if (elapsed_ns > st->interval_max_ns)
		st->interval_max_ns = elapsed_ns;
	st->flip_ns = now;
	ks_sleep_until(now + KS_FLIP_GRACE_NS);
	keep_seq(st);
	/* every record of the interval just ended that is in the log
	 * now is folded; one written later is late (counted, dropped) */
	if (st->slog_on)
		ks_slog_flip_end(&st->slog, old_seq);

	publish_header(st);
	/* --rate-scaling off (a test's control): every CPU's count as if
	 * it sampled every key */
	ncands = ks_estimate_interval(
		&st->col, epoch, old_seq,
		st->o.rate_unscaled ? NULL : st->rates.ended, st->o.top,
		elapsed_ns, &st->prev, &st->cur, st->sketch, &st->totals_ns,
		st->rep);
	if (ncands < 0)
		return (int)ncands;
	st->rep->seq = old_seq;
	st->rep->updated_ns = ks_real_ns();
	st->rep->elapsed_ns = elapsed_ns;
	err = ks_write_report(&st->maps, st->rep);
	if (err)
		return err;
	if (st->ring->rep)
		ks_run_purge_report(st->purge, &st->ring->rep->purge);
	st->ring->scale = ks_rates_effective(&st->rates);
	st->ring->sample_n = st->rep->sample_n;
	/* the epoch just ended's (ks_rates_flip turned them) */
	st->ring->cpu_n = st->rates.ended;
	st->ring->cpu_p = st->rates.p_ended;
	err = ks_run_ring_interval(st->ring, &st->maps, &st->col, old_seq);
	if (err)
		return err;
	nunseen = ks_run_steer_sample(st->steer, elapsed_ns / 1e9, st->unseen,
				      KS_HOT_SLOTS);
	fleet_load(st);
	ks_run_hot_interval(st->hot, st->col.ranked, st->col.nranked,
			    st->unseen, nunseen, old_seq, st->ring->version);
	set_hot_flag(st, ks_run_steer_interval(st->steer, st->hot->table,
					       elapsed_ns / 1e9) > 0);
	ndp = ks_run_steer_auto_dp(st->steer, st->autodp, KS_HOT_SLOTS);
	set_limit_flag(st,
		       ks_run_limit_interval(st->limit, &st->hot->table->rules,
					     st->hot->table, st->col.ranked,
					     st->col.nranked, st->autodp, ndp,
					     old_seq, ks_mono_ns()));
	if (st->o.stall_ms && old_seq == st->o.stall_seq) {
		/* --stall-interval (a test's): the loop held up as on a
		 * machine too loaded to run it; the lease must not care */
		ks_warn("test: interval #%u stalled %u ms (--stall-interval)",
			old_seq, st->o.stall_ms);
		ks_sleep_until(ks_mono_ns() +
			       (__u64)st->o.stall_ms * 1000000ULL);
	}
	ks_run_etcd_publish_interval(
		st->etcd, st->rep,
		ks_run_ring_enabled(st->ring) ? st->ring : NULL, st->hot->table,
		st->steer,
		st->limit && st->limit->open ? &st->limit->set : NULL);
	/* The next flip hands this epoch back to the datapath: empty. */
	err = ks_zero_sketch(&st->col, epoch);
	if (err)
		return err;
	st->prev = st->cur;
	st->work_ns = ks_thread_cpu_ns() - cpu0;
	if (st->work_ns > st->work_max_ns)
		st->work_max_ns = st->work_ns;
	publish_metrics(st, &st->cur, ncands, 1);
	if (st->o.verbose)
		status_line(st, ncands);
	return 0;
}

/*
 * The sample log's drain started, then KS_CFG_SLOG set: from then on the
 * datapath appends sampled keys for the drain to fold. Maps without the
 * log (a program of an older build taken over) leave the in-kernel way.
 */
static int slog_on(struct ks_agent *st)
{
	struct ks_config cfg;
	int err;
	struct ks_slog_opts so = {
		.threads = st->o.slog_threads,
		.share = st->o.slog_share,
		.unscaled = st->o.rate_unscaled,
		.drop = st->o.slog_mode == KS_SLOG_DROP,
		.nice = KS_SLOG_NICE,
	};

	err = ks_slog_open(&st->slog, st->maps.slog, st->maps.slog_pos,
			   st->col.ncpus, st->seq, &so);
	if (err == -EINVAL) {
		ks_info("no sample log in this datapath: sampled keys go to its own sketch");
		return 0;
	}
	if (!err)
		err = ks_collector_set_slog(&st->col, st->slog.folds,
					    st->slog.nshards);
	/* the drain has run (what a dead agent's datapath left in the log
	 * is folded, in the epoch it was written in) and its thread is
	 * started before the flag says so; a take-over cleared the dead
	 * agent's flag first thing (ks_adopt_orphaned_flags) */
	if (!err) {
		ks_slog_drain(&st->slog);
		err = ks_slog_start(&st->slog);
	}
	if (!err) {
		st->slog_on = 1;
		err = ks_read_config(&st->maps, &cfg);
		if (!err)
			err = write_config(st, &cfg);
	}
	if (err) {
		ks_err("cannot start the sample log's drain (%s); rerun with -v",
		       strerror(-err));
		return err;
	}
	ks_info("sample log: %d drain thread%s for %d CPUs", st->slog.nshards,
		st->slog.nshards == 1 ? "" : "s", st->col.ncpus);
	return 0;
}

/*
 * What the drain threads took over the agent's life, each CPU's log by
 * the threads that read it: with the flag cleared and the last drain
 * done, the total is every record the datapath appended (its
 * keysteer_sample_log_keys_total), and each CPU is under one thread
 * (test_slog_threads.sh reads these lines).
 */
static void slog_account(const struct ks_slog *s)
{
	struct ks_slog_stats ss;
	char line[1024];
	int t, i;

	for (t = 0; t < s->nshards; t++) {
		const struct ks_slog_shard *sh = &s->sh[t];
		size_t o = 0;

		line[0] = 0;
		for (i = 0; i < sh->ncpus && o < sizeof(line) - 1; i++)
			o += (size_t)snprintf(line + o, sizeof(line) - o,
					      "%s CPU %d %llu", i ? "," : "",
					      sh->cpus[i],
					      (unsigned long long)sh->taken[i]);
		ks_info("sample log: drain thread %d took %llu records:%s", t,
			(unsigned long long)sh->records, line);
	}
	ks_slog_stats(s, &ss);
	ks_info("sample log: %llu records taken by %d drain threads: %llu folded, %llu late, %llu bad, %llu dropped",
		(unsigned long long)ss.records, s->nshards,
		(unsigned long long)ss.folded, (unsigned long long)ss.late,
		(unsigned long long)ss.bad, (unsigned long long)ss.dropped);
}

void ks_agent_hk_stop(struct ks_agent *st)
{
	ks_housekeep_stop(st->hk);
	st->hk = NULL;
}

void ks_agent_slog_off(struct ks_agent *st)
{
	struct ks_config cfg;

	if (!st->slog_on)
		return;
	st->slog_on = 0;
	if (ks_read_config(&st->maps, &cfg) || write_config(st, &cfg))
		ks_warn("cannot clear the sample log's flag; the datapath falls back to its own sketch when the log is full");
	else
		/* packets that saw the flag set are done before the drain's
		 * last pass, or their records land after it. On the way out
		 * only, with nothing left to arm: it stays here. */
		ks_rcu_wait();
	ks_slog_stop(&st->slog);
	slog_account(&st->slog);
	ks_slog_close(&st->slog);
	st->col.slog = NULL;
	st->col.nslog = 0;
}

int ks_agent_start(struct ks_agent *st)
{
	struct ks_config cfg = { .sample_n = st->o.sample_n, .seq = 0 };
	char ports[64], iv[32], samp[96];
	int err;

	memcpy(cfg.ports, st->o.ports, sizeof(cfg.ports));
	put_flags(st, &cfg);
	if (ks_attach(&st->att, st->o.ifname, st->o.ifindex,
		      st->o.attach_tc ? KS_HOOK_TC : st->o.xdp, &cfg,
		      st->adopt))
		return KS_EXIT_FAIL;
	if (st->o.group_set) {
		int err = ks_pins_share(&st->att, st->o.group);

		if (err) {
			ks_err("cannot give group %u read access to %s (%s); check the bpffs",
			       (unsigned)st->o.group, st->att.pin_dir,
			       strerror(-err));
			return KS_EXIT_FAIL;
		}
	}
	/* a taken-over datapath goes on at its own epoch sequence */
	if (st->att.adopted)
		st->seq = st->att.found.seq;
	ks_attachment_maps(&st->att, &st->maps);
	/* a take-over keeps the pinned config's flags: put this run's in */
	if (st->att.adopted) {
		struct ks_config cur;

		err = ks_read_config(&st->maps, &cur);
		if (!err) {
			put_flags(st, &cur);
			err = ks_write_config(&st->maps, &cur);
		}
		if (err) {
			ks_err("cannot write the configuration map (%s); rerun with -v",
			       strerror(-err));
			return KS_EXIT_FAIL;
		}
	}
	err = ks_collector_init(&st->col, &st->maps);
	if (!err)
		err = ks_rates_init(
			&st->rates, st->col.ncpus,
			&(struct ks_sample_opt){
				.n = st->o.sample_target ? 0 : st->o.sample_n,
				.target = st->o.sample_target,
				.place_target = st->o.place_target,
				.place_unit = st->o.place_unit },
			st->o.sample_n);
	st->sketch = malloc(sizeof(*st->sketch));
	st->rep = calloc(1, sizeof(*st->rep));
	if (err || !st->sketch || !st->rep) {
		ks_err("out of memory for the interval buffers (%s); free some memory",
		       strerror(err ? -err : ENOMEM));
		return KS_EXIT_FAIL;
	}
	/* before the first packet of the first epoch counts */
	err = ks_rates_start(&st->rates, &st->maps);
	if (err) {
		ks_err("cannot write the per-CPU sample rates (%s); rerun with -v",
		       strerror(-err));
		return KS_EXIT_FAIL;
	}
	if (st->o.slog_mode != KS_SLOG_OFF && slog_on(st))
		return KS_EXIT_FAIL;
	publish_header(st);
	st->rep->start_ns = ks_real_ns();
	err = ks_write_report(&st->maps, st->rep);
	if (!err)
		err = ks_read_totals(&st->col, &st->prev);
	if (err) {
		ks_err("cannot read or write the pinned maps (%s); rerun with -v",
		       strerror(-err));
		return KS_EXIT_FAIL;
	}
	st->flip_ns = st->totals_ns = ks_mono_ns();
	ks_format_ports(st->o.ports, ports, sizeof(ports));
	ks_format_seconds(st->o.interval_ms, iv, sizeof(iv));
	if (st->o.sample_target)
		snprintf(samp, sizeof(samp),
			 "sample auto (%u sampled keys/s per CPU, from 1/%u)",
			 st->o.sample_target, st->o.sample_n);
	else
		snprintf(samp, sizeof(samp), "sample 1/%u", st->o.sample_n);
	if (st->o.place_target) {
		size_t l = strlen(samp);

		snprintf(samp + l, sizeof(samp) - l,
			 ", ring placements at most ~%u/s per CPU",
			 st->o.place_target);
	}
	printf("keysteer: attached to %s (%s), %s, interval %s s, ports %s%s\n",
	       st->o.ifname, ks_hook_desc(&st->att), samp, iv, ports,
	       st->att.adopted
		       ? "; took over the running program, its counters, ring and hot keys"
		       : "");
	fflush(stdout);
	if (st->o.attach_tc && ks_flow_cpu_risk(st->o.ifname) == 1)
		ks_warn("%s is a veth without RPS: its peer's TSO frames are parsed on the CPUs that send them, so one TCP connection's segments can be parsed on two CPUs at once and its counts go wrong; set rps_cpus on its receive queues (docs/operations.md, \"One CPU per flow\")",
			st->o.ifname);
	/* before the first push, which hands it the ring to sweep for */
	if (st->purge && (err = ks_run_purge_start(st->purge))) {
		ks_err("cannot start the purge thread (%s); free some memory or rerun with --purge-rate 0 --purge-sweep-rate 0",
		       strerror(-err));
		return KS_EXIT_FAIL;
	}
	/* the shard rules before the first push, which adds its indexes */
	ks_run_ded_start(st->ded, st->att.pin_dir);
	ks_run_ded_sync(st->ded, &st->hot->table->rules, NULL, 0);
	if (ks_run_ring_start(st->ring, &st->maps, &st->col))
		return KS_EXIT_FAIL;
	ks_run_etcd_publish_start(st->etcd, st->ring->spec.self, st->o.ifname,
				  st->o.interval_ms, st->metrics->export_keys);
	if (st->etcd && !st->etcd->no_hot_events) {
		st->steer->on_state = ks_fleet_pub_steered;
		st->steer->on_state_ud = &st->etcd->fleet;
	}
	if (ks_run_hot_start(st->hot, st->ring->version))
		return KS_EXIT_FAIL;
	st->steer->replies = st->att.egress;
	if (ks_run_steer_start(st->steer, &st->maps))
		return KS_EXIT_FAIL;
	if (st->att.adopted)
		ks_run_steer_adopt(st->steer, st->hot->table, &st->hot->o.pol);
	st->limit = calloc(1, sizeof(*st->limit));
	if (!st->limit ||
	    ks_run_limit_start(st->limit, st->att.pin_dir, st->o.limit_auto,
			       st->hot->o.pol.shard_capacity_ops)) {
		ks_err("cannot open the rate-limit maps; rerun with -v");
		return KS_EXIT_FAIL;
	}
	st->limit->log_keys = st->o.log_keys;
	ks_run_limit_auto_verdict(st->limit, st->o.limit_auto_verdict);
	if (st->limit->autocap)
		printf("keysteer: automatic cap at %u/s (%g x --shard-capacity) for keys no copy or split takes\n",
		       st->limit->autocap->rate, st->o.limit_auto);
	/* exact limits hold from the start, as pins do */
	set_limit_flag(st, ks_run_limit_interval(
				   st->limit, &st->hot->table->rules, NULL,
				   NULL, 0, NULL, 0, st->seq, ks_mono_ns()));
	/* pins are hot from the start */
	set_hot_flag(st,
		     ks_run_steer_interval(st->steer, st->hot->table, 0) > 0);
	if (st->steer->rs.n)
		printf("keysteer: %u L1 replicas, copies read from %s\n",
		       st->steer->rs.n, st->steer->owner.text);
	if (st->http)
		printf("keysteer: routing document on %s%s/routing\n",
		       st->http->unix_path[0] ? "unix:" : "http://",
		       st->http->name);
	/* everything is loaded, attached, bound and open: from here on the
	 * agent needs bpf() on its maps and the link, nothing else. This
	 * thread's only: the ones already running dropped their own when
	 * they started (util/thread.h) */
	if (!st->o.keep_privileges) {
		int err = ks_drop_privileges(st->att.mounted_bpffs);

		if (err) {
			ks_err("cannot drop capabilities (%s); run with --keep-privileges to skip this",
			       strerror(-err));
			return KS_EXIT_FAIL;
		}
		ks_debug("capabilities now %#llx", ks_cap_effective());
	}
	/* After the drop: the thread starts with what the loop keeps and
	 * drops to CAP_BPF (agent/housekeep.c). Its first pass runs at
	 * once, on the thread (its VLAN sync warns about sub-interfaces
	 * that do not forward). */
	err = ks_housekeep_start(&st->hk, &st->o.hk, &st->att, st->o.ifname,
				 st->steer->rs.n ? st->maps.vlans : -1,
				 st->steer->rs.n && st->steer->rs.r[0].family ==
							    KS_AF_INET6,
				 (__u64)st->o.interval_ms * 1000000ULL);
	if (err) {
		ks_err("cannot start the housekeeping thread (%s); free some memory",
		       strerror(-err));
		return KS_EXIT_FAIL;
	}
	/* Scrapes before the first interval ends get the counters so far. */
	publish_metrics(st, &st->prev, 0, 0);
	if (st->metrics->srv)
		printf("keysteer: metrics on http://%s/metrics%s\n",
		       st->metrics->srv->name,
		       st->metrics->export_keys ? " (with keys)" : "");
	fflush(stdout);
	return 0;
}

/* Waits for dirty events, HTTP clients or the timeout, then serves them. */
static void wait_events(struct ks_agent *st, __u64 until)
{
	struct pollfd pfd[1 + KS_RUN_ETCD_FDS + 2 * KS_HTTP_POLLFDS];
	int efd[KS_RUN_ETCD_FDS], i;
	__u64 now = ks_mono_ns();
	int n = 0, nh = 0, nm = 0, ne = 0, t, tmo;

	tmo = until > now ? (int)((until - now + 999999) / 1000000) : 0;
	t = ks_run_steer_timeout_ms(st->steer);
	if (t >= 0 && t < tmo)
		tmo = t;
	if (ks_run_steer_fd(st->steer) >= 0) {
		pfd[0].fd = ks_run_steer_fd(st->steer);
		pfd[0].events = POLLIN;
		n = 1;
	}
	if (st->http)
		nh = ks_http_poll_add(st->http, pfd + n, KS_HTTP_POLLFDS, now,
				      &tmo);
	if (st->metrics->own_open)
		nm = ks_http_poll_add(&st->metrics->own, pfd + n + nh,
				      KS_HTTP_POLLFDS, now, &tmo);
	/* the etcd watches: one fd each (agent/run_etcd.c runs them) */
	t = ks_run_etcd_timeout_ms(st->etcd);
	if (t >= 0 && t < tmo)
		tmo = t;
	ne = ks_run_etcd_fds(st->etcd, efd);
	for (i = 0; i < ne; i++) {
		pfd[n + nh + nm + i].fd = efd[i];
		pfd[n + nh + nm + i].events = POLLIN;
	}
	if (poll(pfd, n + nh + nm + ne, tmo) < 0 && errno != EINTR)
		ks_sleep_until(until);
	ks_run_steer_poll(st->steer);
	if (st->http)
		ks_http_service(st->http, pfd + n, nh, st->hot->doc,
				st->hot->doc_len, ks_mono_ns());
	if (st->metrics->own_open)
		ks_http_service(&st->metrics->own, pfd + n + nh, nm, NULL, 0,
				ks_mono_ns());
}

/* Sleeps until the deadline, waking at least every 100 ms so SIGHUP and
 * shard file changes are handled between intervals; then the ring. */
static int wait_interval(struct ks_agent *st, __u64 deadline)
{
	while (!ks_stop) {
		__u64 now = ks_mono_ns();
		int hup = ks_reload, err;

		ks_reload = 0;
		ks_run_hot_poll(st->hot, hup);
		err = ks_run_ring_poll(st->ring, &st->maps, &st->col, hup);
		if (!err)
			err = ks_run_etcd_poll(st->etcd, st->ring, st->hot,
					       &st->maps, &st->col);
		if (err) {
			ks_err("reloading the ring failed (%s); stopping, rerun with -v",
			       strerror(-err));
			return err;
		}
		/* a new pin set or a new ring: the shard rules follow */
		ks_run_ded_sync(st->ded, &st->hot->table->rules,
				ks_run_ring_enabled(st->ring)
					? &st->ring->shards
					: NULL,
				st->ring->version);
		if (now >= deadline)
			return 0;
		wait_events(st, now + 100000000ULL < deadline
					? now + 100000000ULL
					: deadline);
	}
	return 0;
}

int ks_agent_loop(struct ks_agent *st)
{
	__u64 step = (__u64)st->o.interval_ms * 1000000ULL;
	__u64 deadline = st->flip_ns + step;
	int err;

	for (;;) {
		if (wait_interval(st, deadline))
			return KS_EXIT_FAIL;
		/* --housekeeping loop (a test's control): the link check
		 * and the VLAN sync here, holding this interval, as before */
		ks_housekeep_loop_turn(st->hk);
		if (ks_stop)
			break;
		if (ks_housekeep_detached(st->hk)) {
			ks_warn("the %s program on %s was detached (by 'agent detach' or the interface going away); stopping",
				st->o.attach_tc ? "tc" : "XDP", st->o.ifname);
			return KS_EXIT_FAIL;
		}
		err = one_interval(st);
		if (err) {
			ks_err("interval failed (%s); stopping, rerun with -v",
			       strerror(-err));
			return KS_EXIT_FAIL;
		}
		deadline += step;
		/* After a stall (suspend, debugger) do not catch up in a
		 * burst of zero-length intervals. */
		if (deadline < ks_mono_ns())
			deadline = ks_mono_ns() + step;
	}
	return KS_EXIT_OK;
}
