/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * run_metrics.h - the metrics in 'agent run' (--metrics, --export-keys):
 * the HTTP server that answers GET /metrics (its own, or the --listen one
 * when both name the same address), and once per interval the exposition
 * rendered by render/metrics.h from what the agent holds, its steering
 * controller seen through struct ks_metrics_steer, then published there.
 */
#ifndef KS_RUN_METRICS_H
#define KS_RUN_METRICS_H

#include <stddef.h>
#include "render/metrics.h"
#include "net/http_serve.h"

struct ks_run_steer;

struct ks_run_metrics {
	const char *spec; /* --metrics [ADDR:]PORT; NULL: no metrics */
	int export_keys;  /* --export-keys */
	int keys_to_etcd; /* --etcd: the keys go into hosts/<self> too */
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
 * What the metrics show of the steering controller s at now_mono_ns: the
 * datapath's slots (when the map is open), the replicas with their up
 * state and steered reads, the machine's counters. out points into s.
 */
void ks_run_metrics_steer_view(struct ks_metrics_steer *out,
			       const struct ks_run_steer *s, __u64 now_mono_ns);

/*
 * Renders in (the agent-wide fields now_mono_ns, rss_bytes, export_keys
 * and intervals are filled here, and in->steer from steer, which may be
 * NULL: no steering) and publishes it for GET /metrics. interval_ended
 * counts one more interval first (0 for the rendering at start).
 */
void ks_run_metrics_publish(struct ks_run_metrics *m,
			    const struct ks_metrics_in *in,
			    const struct ks_run_steer *steer,
			    int interval_ended);

/* The resident set of this process in bytes (0 if /proc cannot tell). */
__u64 ks_self_rss_bytes(void);

void ks_run_metrics_free(struct ks_run_metrics *m);

#endif
