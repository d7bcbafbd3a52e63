// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * run_metrics.c - --metrics in 'agent run' (see run_metrics.h): the
 * server, the steering controller's view, rendering and publishing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "agent/run_metrics.h"
#include "agent/run_steer.h"
#include "util/clock.h"

int ks_run_metrics_prepare(struct ks_run_metrics *m, const char *listen,
			   struct ks_http_server *listen_srv, char *err,
			   size_t errlen)
{
	struct sockaddr_in a, l;
	char e2[8];
	int rc;

	if (!m->spec) {
		if (m->export_keys && !m->keys_to_etcd) {
			snprintf(
				err, errlen,
				"--export-keys labels the metrics (and the fleet's top keys) with the keys; add --metrics [ADDR:]PORT or --etcd URL");
			return -EINVAL;
		}
		return 0;
	}
	if (ks_http_parse_addr("--metrics", m->spec, &a, err, errlen))
		return -EINVAL;
	/* The --listen address: one server answers both paths. */
	if (listen && listen_srv &&
	    !ks_http_parse_listen(listen, &l, e2, sizeof(e2)) &&
	    l.sin_addr.s_addr == a.sin_addr.s_addr &&
	    l.sin_port == a.sin_port) {
		listen_srv->serves = KS_HTTP_SERVES(KS_HTTP_ROUTING) |
				     KS_HTTP_SERVES(KS_HTTP_METRICS);
		m->srv = listen_srv;
		return 0;
	}
	m->own.serves = KS_HTTP_SERVES(KS_HTTP_METRICS);
	m->own.flag = "--metrics";
	rc = ks_http_open(&m->own, &a, err, errlen);
	if (rc)
		return rc;
	m->own_open = 1;
	m->srv = &m->own;
	return 0;
}

__u64 ks_self_rss_bytes(void)
{
	unsigned long long size = 0, resident = 0;
	long page = sysconf(_SC_PAGESIZE);
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return page > 0 ? resident * (__u64)page : 0;
}

void ks_run_metrics_steer_view(struct ks_metrics_steer *out,
			       const struct ks_run_steer *s, __u64 now_mono_ns)
{
	unsigned i;

	memset(out, 0, sizeof(*out));
	out->slot = s->map_open ? s->map.slot : NULL;
	out->n_replicas = s->rs.n < KS_MAX_REPLICAS ? s->rs.n : KS_MAX_REPLICAS;
	for (i = 0; i < out->n_replicas; i++) {
		out->replica[i].name = s->rs.r[i].text;
		out->replica[i].up = ks_steer_replica_up(&s->fsm, i,
							 now_mono_ns);
		out->replica[i].steered = s->prev_rep_steered[i];
	}
	out->fills = s->fsm.fills;
	out->fill_errors = s->fsm.fill_errors;
	out->events = s->fsm.events;
	out->no_slot = s->fsm.no_slot;
	out->rearms = s->fsm.rearms;
	out->rearm_ms_sum = s->fsm.rearm_ms_sum;
	out->rearm_ms_max = s->fsm.rearm_ms_max;
	out->arms = s->arms;
	out->arm_gap_max_ns = s->arm_gap_max_ns;
}

void ks_run_metrics_publish(struct ks_run_metrics *m,
			    const struct ks_metrics_in *in,
			    const struct ks_run_steer *steer,
			    int interval_ended)
{
	struct ks_metrics_in full = *in;
	struct ks_metrics_steer sv;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (!m->srv)
		return;
	m->intervals += interval_ended != 0;
	full.intervals = m->intervals;
	full.export_keys = m->export_keys;
	full.now_mono_ns = ks_mono_ns();
	full.rss_bytes = ks_self_rss_bytes();
	full.steer = NULL;
	if (steer) {
		ks_run_metrics_steer_view(&sv, steer, full.now_mono_ns);
		full.steer = &sv;
	}
	f = open_memstream(&buf, &len);
	if (f) {
		ks_metrics_render(f, &full);
		if (fclose(f)) { /* out of memory while writing */
			free(buf);
			buf = NULL;
		}
	}
	/* A failed rendering leaves the last one served: stale, not wrong. */
	if (!buf || ks_http_publish(m->srv, KS_HTTP_METRICS, buf, len))
		m->publish_errors++;
	free(buf);
}

void ks_run_metrics_free(struct ks_run_metrics *m)
{
	if (m->own_open)
		ks_http_close(&m->own);
	m->own_open = 0;
	m->srv = NULL;
}
