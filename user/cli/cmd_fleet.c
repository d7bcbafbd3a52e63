// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_fleet.c - 'agent fleet': one range read of /keysteer/CLUSTER/ (the
 * ring and every agent's hosts/<self>, docs/fleet.md) and the fleet on
 * one screen: each host's reads/s, writes/s and the ring revision it runs
 * (marked when older than the ring's), max and mean of reads/s; --json a
 * versioned document of the same.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "cli/cmds.h"
#include "cli/cli_options.h"
#include "cli/etcd_cli.h"
#include "core/ring_doc.h"
#include "net/etcd.h"
#include "net/etcd_conf.h"
#include "util/log.h"

#define KS_FLEET_SCHEMA 1

struct host_row {
	const char *self;
	json_t *doc; /* borrowed from the parsed document */
	double reads, writes, mis;
	int64_t ring_rev, mod_rev, lease;
	int have_shard, stale, valid;
};

static double num(json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

/* A host's row from its document; valid 0 when it does not read. */
static void host_row(struct host_row *h, const struct ks_etcd_kv *kv,
		     size_t plen, int64_t ring_rev)
{
	json_error_t je;
	json_t *sh, *cl;

	memset(h, 0, sizeof(*h));
	h->self = kv->key + plen;
	h->mod_rev = kv->mod_revision;
	h->lease = kv->lease;
	h->doc = json_loadb(kv->value, kv->value_len, 0, &je);
	if (!json_is_object(h->doc) ||
	    json_integer_value(json_object_get(h->doc, "schema")) < 1)
		return;
	h->valid = 1;
	h->ring_rev = json_integer_value(
		json_object_get(h->doc, "ring_revision"));
	sh = json_object_get(h->doc, "shard");
	cl = json_object_get(h->doc, "class_rates");
	if (json_is_object(sh)) {
		h->have_shard = 1;
		h->reads = num(sh, "reads_per_s");
		h->writes = num(sh, "writes_per_s");
		h->mis = num(sh, "misdirected_per_s");
	} else {
		h->reads = num(cl, "read");
		h->writes = num(cl, "write");
	}
	h->stale = ring_rev > 0 && h->ring_rev < ring_rev;
}

/* The ring's shards no valid hosts/ entry names (its --self): shards whose
 * agent is gone, or never ran. Returns how many went into out[]. */
static size_t shards_without_agent(const struct ks_etcd_kv *ring,
				   const struct host_row *h, size_t n,
				   char (*out)[KS_SHARD_HOST_MAX + 8],
				   size_t max)
{
	struct ks_ring_doc d;
	char err[KS_ERRLEN_DOC], name[KS_SHARD_HOST_MAX + 8];
	size_t i, j, k = 0;

	if (!ring || ks_ring_doc_decode(ring->value, ring->value_len, &d, err,
					sizeof(err)))
		return 0;
	for (i = 0; i < d.shards.n && k < max; i++) {
		snprintf(name, sizeof(name), "%s:%u", d.shards.v[i].host,
			 d.shards.v[i].port);
		for (j = 0; j < n; j++)
			if (h[j].valid && !strcmp(h[j].self, name))
				break;
		if (j == n)
			snprintf(out[k++], sizeof(out[0]), "%s", name);
	}
	ks_ring_doc_free(&d);
	return k;
}

static void print_json(const char *cluster, const struct ks_etcd_range *rr,
		       int64_t ring_rev, struct host_row *h, size_t n,
		       double max, double mean, const char *max_host,
		       char (*na)[KS_SHARD_HOST_MAX + 8], size_t nna)
{
	json_t *o = json_object(), *hs = json_array(), *rd = json_object();
	size_t i;

	json_object_set_new(o, "schema", json_integer(KS_FLEET_SCHEMA));
	json_object_set_new(o, "cluster", json_string(cluster));
	json_object_set_new(o, "store_revision", json_integer(rr->revision));
	json_object_set_new(o, "ring_revision", json_integer(ring_rev));
	for (i = 0; i < n; i++) {
		json_t *r = json_object();

		json_object_set_new(r, "self", json_string(h[i].self));
		json_object_set_new(r, "valid", json_boolean(h[i].valid));
		json_object_set_new(r, "ring_revision",
				    json_integer(h[i].ring_rev));
		json_object_set_new(r, "ring_stale", json_boolean(h[i].stale));
		json_object_set_new(r, "reads_per_s", json_real(h[i].reads));
		json_object_set_new(r, "writes_per_s", json_real(h[i].writes));
		json_object_set_new(r, "misdirected_per_s",
				    json_real(h[i].mis));
		json_object_set_new(
			r, "rates_of",
			json_string(h[i].have_shard ? "shard" : "host"));
		json_object_set_new(r, "mod_revision",
				    json_integer(h[i].mod_rev));
		json_object_set_new(r, "status",
				    h[i].doc ? json_incref(h[i].doc)
					     : json_null());
		json_array_append_new(hs, r);
	}
	json_object_set_new(o, "hosts", hs);
	hs = json_array();
	for (i = 0; i < nna; i++)
		json_array_append_new(hs, json_string(na[i]));
	json_object_set_new(o, "shards_without_agent", hs);
	json_object_set_new(rd, "max", json_real(max));
	json_object_set_new(rd, "mean", json_real(mean));
	json_object_set_new(rd, "max_host",
			    max_host ? json_string(max_host) : json_null());
	json_object_set_new(o, "reads_per_s", rd);
	json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	putchar('\n');
	json_decref(o);
}

static void print_text(const char *cluster, const struct ks_etcd_range *rr,
		       int64_t ring_rev, struct host_row *h, size_t n,
		       double max, double mean, const char *max_host,
		       char (*na)[KS_SHARD_HOST_MAX + 8], size_t nna)
{
	size_t i;

	printf("fleet %s: ring revision %" PRId64
	       ", %zu host%s (etcd revision %" PRId64 ")\n",
	       cluster, ring_rev, n, n == 1 ? "" : "s", rr->revision);
	if (!n) {
		printf("no agent has published under hosts/\n");
		return;
	}
	printf("%-32s %12s %12s %12s %8s\n", "HOST", "READS/S", "WRITES/S",
	       "MISDIR/S", "RING");
	for (i = 0; i < n; i++) {
		if (!h[i].valid) {
			printf("%-32s %12s %12s %12s %8s  (document refused)\n",
			       h[i].self, "-", "-", "-", "-");
			continue;
		}
		printf("%-32s %12.1f %12.1f %12.1f %8" PRId64 "%s%s\n",
		       h[i].self, h[i].reads, h[i].writes, h[i].mis,
		       h[i].ring_rev, h[i].stale ? "  OLD RING" : "",
		       h[i].have_shard ? "" : "  (no ring: host totals)");
	}
	printf("reads/s across hosts: max %.1f (%s), mean %.1f, max/mean %.2f\n",
	       max, max_host ? max_host : "-", mean,
	       mean > 0 ? max / mean : 0.0);
	if (nna) {
		printf("shards without an agent:");
		for (i = 0; i < nna; i++)
			printf(" %s", na[i]);
		printf("\n");
	}
}

int cmd_fleet(int argc, char **argv)
{
	struct ks_cli_getopt g;
	struct ks_etcd_conf ec;
	struct ks_etcd *c = NULL;
	struct ks_etcd_range rr = { 0 };
	struct host_row *h = NULL;
	char err[KS_ERRLEN_DOC * 2], prefix[sizeof(ec.ring_key)], hp[400];
	const char *max_host = NULL;
	double max = 0, sum = 0;
	int ch, r, json = 0, rc = KS_EXIT_FAIL;
	int64_t ring_rev = 0;
	size_t i, n = 0, nv = 0, plen, hlen, nna = 0;
	const struct ks_etcd_kv *ring_kv = NULL;
	char(*na)[KS_SHARD_HOST_MAX + 8] = NULL;

	ks_etcd_conf_init(&ec);
	ks_cli_getopt_init(&g, KS_CMD_FLEET);
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, g.shorts, g.lo, NULL)) != -1) {
		if (ch == 'h') {
			ks_help_fleet(stdout);
			return KS_EXIT_OK;
		}
		if (ch == 'j') {
			json = 1;
			continue;
		}
		r = ks_etcd_cli_opt(&ec, ch, optarg, err, sizeof(err));
		if (r < 0) {
			ks_err("%s", err);
			return KS_EXIT_USAGE;
		}
		if (!r)
			return ks_bad_option("fleet", ch, argv);
	}
	if (optind < argc)
		return ks_no_args("fleet", argc, argv);
	if (!ec.endpoints)
		return ks_usage_error(
			"fleet",
			"no --etcd URL[,URL...] given; fleet reads the fleet from etcd");
	if (ks_etcd_conf_check(&ec, err, sizeof(err))) {
		ks_err("%s", err);
		return KS_EXIT_USAGE;
	}
	if (ks_etcd_conf_connect(&ec, &c, err, sizeof(err))) {
		ks_err("%s", err);
		return KS_EXIT_USAGE;
	}
	plen = strlen(ec.ring_key) - strlen("ring");
	snprintf(prefix, sizeof(prefix), "%.*s", (int)plen, ec.ring_key);
	hlen = (size_t)snprintf(hp, sizeof(hp), "%shosts/", prefix);
	if (ks_etcd_range(c, prefix, plen, KS_ETCD_PREFIX, &rr)) {
		ks_err("cannot read %s: %s", prefix, ks_etcd_errmsg(c));
		goto out;
	}
	h = calloc(rr.n ? rr.n : 1, sizeof(*h));
	if (!h) {
		ks_err("out of memory");
		goto out;
	}
	for (i = 0; i < rr.n; i++)
		if (rr.kvs[i].key_len == strlen(ec.ring_key) &&
		    !memcmp(rr.kvs[i].key, ec.ring_key, rr.kvs[i].key_len)) {
			ring_rev = rr.kvs[i].mod_revision;
			ring_kv = &rr.kvs[i];
		}
	for (i = 0; i < rr.n; i++) {
		const struct ks_etcd_kv *kv = &rr.kvs[i];

		if (kv->key_len <= hlen || memcmp(kv->key, hp, hlen))
			continue;
		host_row(&h[n], kv, hlen, ring_rev);
		if (h[n].valid) {
			nv++;
			sum += h[n].reads;
			if (!max_host || h[n].reads > max) {
				max = h[n].reads;
				max_host = h[n].self;
			}
		}
		n++;
	}
	na = calloc(KS_MAX_SHARDS, sizeof(*na));
	if (!na) {
		ks_err("out of memory");
		goto out;
	}
	nna = shards_without_agent(ring_kv, h, n, na, KS_MAX_SHARDS);
	if (json)
		print_json(ec.cluster, &rr, ring_rev, h, n, max,
			   nv ? sum / nv : 0, max_host, na, nna);
	else
		print_text(ec.cluster, &rr, ring_rev, h, n, max,
			   nv ? sum / nv : 0, max_host, na, nna);
	rc = KS_EXIT_OK;
out:
	for (i = 0; h && i < n; i++)
		json_decref(h[i].doc);
	free(h);
	free(na);
	ks_etcd_range_free(&rr);
	ks_etcd_close(c);
	return rc;
}
