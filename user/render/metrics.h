/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metrics.h - the Prometheus metrics of 'agent run' (--metrics): the
 * datapath's cumulative counters, the ring's per-shard load, the hot-key
 * table and the steering state, the top keys, rendered once per interval
 * in the text exposition format (version 0.0.4) and published to the HTTP
 * server that answers GET /metrics. docs/metrics.md lists every metric.
 *
 * Keys are user data: by default a key appears only as its 64-bit hash
 * (label hash="0x..."); --export-keys adds a key label, with every byte
 * that is not printable ASCII written as \xNN and a backslash doubled
 * (as in the text report), then escaped for the exposition format.
 *
 * ks_metrics_render is pure (no BPF, no I/O besides the stream), so the
 * unit tests render synthetic inputs into memory.
 */
#ifndef KS_METRICS_H
#define KS_METRICS_H

#include <stdio.h>
#include "core/estimate.h"
#include "net/http_serve.h"
#include "core/hotkeys.h"
#include "ks_shard_report.h"
#include "agent/run_steer.h"

struct ks_metrics_in {
	const struct ks_report *rep;        /* header and the top keys */
	const struct ks_totals *totals;     /* cumulative datapath counters */
	const struct ks_shard_report *ring; /* NULL or nshards 0: no ring */
	const struct ks_hot_table *table;   /* NULL: no hot-key table */
	/* The datapath's hot slots (steer->map.slot), the copy counters and
	 * the replicas; NULL or a map not open: none. */
	const struct ks_run_steer *steer;
	__u64 now_mono_ns;     /* tells armed slots from expired ones */
	__u64 intervals;       /* intervals ended since the start */
	__u64 candidates;      /* distinct keys in the candidate tables in
				* the last interval */
	__u64 candidate_slots; /* KS_CAND_SLOTS x CPUs */
	__u64 rss_bytes;       /* the agent's resident memory */
	int export_keys;       /* key labels besides the hashes */
};

/* The whole exposition, every family with its HELP and TYPE lines. */
void ks_metrics_render(FILE *f, const struct ks_metrics_in *in);

/* ---- the 'agent run' side ---- */

struct ks_run_metrics {
	const char *spec;   /* --metrics [ADDR:]PORT; NULL: no metrics */
	int export_keys;    /* --export-keys */
	/* Its own server, unless --metrics names the --listen address: then
	 * that server answers /metrics too and srv points at it. */
	struct ks_http_server own;
	int own_open;
	struct ks_http_server *srv;
	__u64 intervals;
	__u64 publish_errors; /* renderings that could not be published */
};

/*
 * Before anything is attached: --export-keys without --metrics is refused;
 * --metrics is parsed and, unless it is the address of --listen (listen,
 * already opened in listen_srv; both may be NULL), its own server opened,
 * so a bad address or a port in use stops the agent first. 0, or -errno
 * with "<what>; <what to do>" in err.
 */
int ks_run_metrics_prepare(struct ks_run_metrics *m, const char *listen,
			   struct ks_http_server *listen_srv, char *err,
			   size_t errlen);

/*
 * Renders in (the agent-wide fields now_mono_ns, rss_bytes, export_keys
 * and intervals are filled here) and publishes it for GET /metrics.
 * interval_ended counts one more interval first (0 for the rendering
 * at start).
 */
void ks_run_metrics_publish(struct ks_run_metrics *m,
			    const struct ks_metrics_in *in, int interval_ended);

/* The resident set of this process in bytes (0 if /proc cannot tell). */
__u64 ks_self_rss_bytes(void);

void ks_run_metrics_free(struct ks_run_metrics *m);

#endif
