// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_ring.c - 'agent ring lookup' (where does a key live), 'agent ring
 * diff' (what moves when the shard list changes), and the fleet's ring in
 * etcd: 'agent ring set' (writes it, compare-and-swap on the revision it
 * read) and 'agent ring get'. All build the ring in user space exactly as
 * the clients do; none needs root or BPF.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli/etcd_cli.h"
#include "cli/etcd_doc_cli.h"
#include "core/ring_doc.h"
#include "net/etcd.h"
#include "cli/cli_options.h"
#include "cli/cmds.h"
#include "util/log.h"
#include "util/opts.h"
#include "core/ring.h"

/* Prints one lookup line; 0, or -1 when the key is not a memcached key. */
static int lookup_one(const struct ks_ring *r, const struct ks_shards *s,
		      const char *key, size_t len, const char *where)
{
	__u32 idx;

	if (len == 0 || len > KS_MAX_KEY_LEN) {
		ks_err("%skey '%.40s%s' is %zu bytes; memcached keys are 1 to %d bytes",
		       where, key, len > 40 ? "..." : "", len, KS_MAX_KEY_LEN);
		return -1;
	}
	idx = ks_ring_lookup(r, key, len);
	if (idx >= s->n) { /* cannot happen with a built ring */
		ks_err("%sno shard for key '%s'; report this as a bug", where,
		       key);
		return -1;
	}
	printf("%.*s\t%u\t%s:%u\n", (int)len, key, idx, s->v[idx].host,
	       s->v[idx].port);
	return 0;
}

static int ring_lookup(int argc, char **argv)
{
	struct ks_cli_getopt g;
	struct ks_ring_spec spec;
	struct ks_shards shards;
	struct ks_ring ring;
	char err[KS_ERRLEN * 2];
	int c, bad = 0, i, n;

	ks_ring_spec_init(&spec, "--shards", "--shards-file");
	ks_cli_getopt_init(&g, KS_CMD_RING_LOOKUP);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, g.shorts, g.lo, NULL)) != -1) {
		if (c == 'h') {
			ks_help_ring(stdout);
			return KS_EXIT_OK;
		}
		n = ks_ring_spec_opt(&spec, c, optarg, err, sizeof(err));
		if (n < 0) {
			ks_err("%s", err);
			return KS_EXIT_USAGE;
		}
		if (!n)
			return ks_bad_option("ring lookup", c, argv);
	}
	if (ks_ring_load(&spec, &shards, &ring, 0, err, sizeof(err))) {
		ks_err("%s", err);
		return KS_EXIT_USAGE;
	}
	if (optind < argc) {
		for (i = optind; i < argc; i++)
			bad |= lookup_one(&ring, &shards, argv[i],
					  strlen(argv[i]), "");
	} else {
		char *line = NULL, where[48];
		size_t cap = 0;
		ssize_t len;
		unsigned long n = 0;

		while ((len = getline(&line, &cap, stdin)) >= 0) {
			n++;
			if (len && line[len - 1] == '\n')
				len--;
			if (len && line[len - 1] == '\r')
				len--;
			if (!len)
				continue; /* blank lines are skipped */
			snprintf(where, sizeof(where), "stdin:%lu: ", n);
			bad |= lookup_one(&ring, &shards, line, (size_t)len,
					  where);
		}
		free(line);
	}
	ks_ring_free(&ring);
	ks_shards_free(&shards);
	return bad ? KS_EXIT_FAIL : KS_EXIT_OK;
}

struct pair {
	__u32 from, to, keys;
};

static int pair_cmp(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	if (x->keys != y->keys)
		return x->keys < y->keys ? 1 : -1;
	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	return x->to < y->to ? -1 : x->to > y->to;
}

static void print_balance(const char *label, const struct ks_shards *s,
			  const __u32 *keys, __u32 nkeys)
{
	double mean = (double)nkeys / s->n;
	__u32 i, busiest = 0;
	char addr[KS_SHARD_HOST_MAX + 8];

	for (i = 1; i < s->n; i++)
		if (keys[i] > keys[busiest])
			busiest = i;
	ks_shard_addr(&s->v[busiest], addr, sizeof(addr));
	printf("  %-5s %6u  %-24s %9u %11.1f %12.3f\n", label, s->n, addr,
	       keys[busiest], mean, keys[busiest] / mean);
}

/* Counts, moves and prints; the rings are built. */
static int diff_rings(const struct ks_ring *rf, const struct ks_shards *sf,
		      const struct ks_ring *rt, const struct ks_shards *st,
		      __u32 nkeys)
{
	__u32 *pairs, *kf, *kt, i, j, moved = 0, npairs = 0;
	int *same; /* to-shard -> from-shard with the same host:port, or -1 */
	struct pair *list = NULL;
	int rc = KS_EXIT_FAIL;

	pairs = calloc((size_t)sf->n * st->n, sizeof(*pairs));
	kf = calloc(sf->n, sizeof(*kf));
	kt = calloc(st->n, sizeof(*kt));
	same = calloc(st->n, sizeof(*same));
	if (!pairs || !kf || !kt || !same) {
		ks_err("out of memory counting %u keys; use fewer shards",
		       nkeys);
		goto out;
	}
	for (j = 0; j < st->n; j++)
		same[j] = ks_shards_find(sf, st->v[j].host, st->v[j].port);
	for (i = 0; i < nkeys; i++) {
		char key[32];
		int len = snprintf(key, sizeof(key), "key:%u", i);
		__u32 a = ks_ring_lookup(rf, key, (size_t)len);
		__u32 b = ks_ring_lookup(rt, key, (size_t)len);

		if (a >= sf->n || b >= st->n) {
			ks_err("no shard for key '%s'; report this as a bug",
			       key);
			goto out;
		}
		kf[a]++;
		kt[b]++;
		if (same[b] != (int)a) {
			moved++;
			if (!pairs[(size_t)a * st->n + b]++)
				npairs++;
		}
	}
	list = calloc(npairs ? npairs : 1, sizeof(*list));
	if (!list) {
		ks_err("out of memory listing moves; use fewer shards");
		goto out;
	}
	npairs = 0;
	for (i = 0; i < sf->n; i++)
		for (j = 0; j < st->n; j++)
			if (pairs[(size_t)i * st->n + j])
				list[npairs++] = (struct pair){
					i, j, pairs[(size_t)i * st->n + j]
				};
	qsort(list, npairs, sizeof(*list), pair_cmp);

	printf("distribution %s, %u keys (key:0 .. key:%u)\n",
	       ks_dist_name(rf->half->meta.dist), nkeys, nkeys - 1);
	printf("from %u shards (digest %016llx), to %u shards (digest %016llx)\n",
	       sf->n, (unsigned long long)rf->half->meta.digest, st->n,
	       (unsigned long long)rt->half->meta.digest);
	printf("moved %u of %u keys (%.2f%%)\n", moved, nkeys,
	       100.0 * moved / nkeys);
	if (npairs) {
		printf("\nmoved keys, from -> to:\n");
		for (i = 0; i < npairs; i++) {
			char a[KS_SHARD_HOST_MAX + 8], b[KS_SHARD_HOST_MAX + 8];

			ks_shard_addr(&sf->v[list[i].from], a, sizeof(a));
			ks_shard_addr(&st->v[list[i].to], b, sizeof(b));
			printf("  %s -> %s\t%u\n", a, b, list[i].keys);
		}
	}
	printf("\nbalance (keys per shard):\n");
	printf("  %-5s %6s  %-24s %9s %11s %12s\n", "ring", "shards", "busiest",
	       "keys", "mean", "busiest/mean");
	print_balance("from", sf, kf, nkeys);
	print_balance("to", st, kt, nkeys);
	rc = KS_EXIT_OK;
out:
	free(list);
	free(pairs);
	free(kf);
	free(kt);
	free(same);
	return rc;
}

static int ring_diff(int argc, char **argv)
{
	struct ks_cli_getopt g;
	struct ks_ring_spec from;
	struct ks_ring_spec to;
	struct ks_shards sf, st;
	struct ks_ring rf, rt;
	char err[KS_ERRLEN * 2], what[128];
	unsigned long long v;
	__u32 nkeys = KS_DIFF_KEYS_DEFAULT;
	const char *to_list = NULL, *to_file = NULL;
	int c, rc;

	ks_ring_spec_init(&from, "--from", "--from-file");
	ks_cli_getopt_init(&g, KS_CMD_RING_DIFF);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, g.shorts, g.lo, NULL)) != -1) {
		switch (c) {
		case 'F':
			from.list = optarg;
			break;
		case 'G':
			from.file = optarg;
			break;
		case 'T':
			to_list = optarg;
			break;
		case 'U':
			to_file = optarg;
			break;
		case 'k':
			if (ks_parse_uint("--keys", optarg, 1, KS_DIFF_KEYS_MAX,
					  &v, err, sizeof(err))) {
				ks_err("%s", err);
				return KS_EXIT_USAGE;
			}
			nkeys = (__u32)v;
			break;
		case 'D':
		case 'N':
		case KS_OPTV_KEY_HASH:
		case KS_OPTV_HASH_TAG:
			if (ks_ring_spec_opt(&from, c, optarg, err,
					     sizeof(err)) < 0) {
				ks_err("%s", err);
				return KS_EXIT_USAGE;
			}
			break;
		case 'h':
			ks_help_ring(stdout);
			return KS_EXIT_OK;
		default:
			return ks_bad_option("ring diff", c, argv);
		}
	}
	if (optind < argc) {
		snprintf(what, sizeof(what), "unexpected argument '%s'",
			 argv[optind]);
		return ks_usage_error("ring diff", what);
	}
	to = from;
	to.list = to_list;
	to.file = to_file;
	to.flag = "--to";
	to.file_flag = "--to-file";
	if (ks_ring_load(&from, &sf, &rf, 0, err, sizeof(err))) {
		ks_err("%s", err);
		return KS_EXIT_USAGE;
	}
	if (ks_ring_load(&to, &st, &rt, 0, err, sizeof(err))) {
		ks_err("%s", err);
		ks_ring_free(&rf);
		ks_shards_free(&sf);
		return KS_EXIT_USAGE;
	}
	rc = diff_rings(&rf, &sf, &rt, &st, nkeys);
	ks_ring_free(&rf);
	ks_ring_free(&rt);
	ks_shards_free(&sf);
	ks_shards_free(&st);
	return rc;
}

/* ---- the ring in etcd: set and get ---- */

/* Who holds the key now, in words, for a refused write. */
static void describe_current(const struct ks_etcd_range *cur, char *buf,
			     size_t len)
{
	struct ks_ring_doc d;
	char err[KS_ERRLEN_DOC];

	if (!cur->n) {
		snprintf(buf, len, "the ring is absent now (deleted)");
		return;
	}
	if (ks_ring_doc_decode(cur->kvs[0].value, cur->kvs[0].value_len, &d,
			       err, sizeof(err))) {
		snprintf(buf, len,
			 "revision %" PRId64
			 " holds a document that does not read (%s)",
			 cur->kvs[0].mod_revision, err);
		return;
	}
	snprintf(buf, len,
		 "revision %" PRId64
		 " by %s at %s won (%u shards %s, digest %016llx)",
		 cur->kvs[0].mod_revision,
		 d.written_by[0] ? d.written_by : "an unnamed writer",
		 d.written_at[0] ? d.written_at : "an unknown time", d.shards.n,
		 ks_dist_name(d.dist), (unsigned long long)d.digest);
	ks_ring_doc_free(&d);
}

static int ring_set(int argc, char **argv)
{
	struct ks_cli_getopt g;
	struct ks_ring_spec spec;
	struct ks_etcd_conf ec;
	struct ks_shards shards;
	struct ks_ring ring;
	struct ks_etcd *c = NULL;
	struct ks_etcd_range cur = { 0 };
	char err[KS_ERRLEN_DOC * 2], by[400], at[40];
	char *doc = NULL;
	size_t doclen = 0;
	unsigned long long v;
	int64_t expect, rev = 0;
	int ch, n, rc, pinned = 0;

	ks_ring_spec_init(&spec, "--shards", "--shards-file");
	ks_etcd_conf_init(&ec);
	ks_cli_getopt_init(&g, KS_CMD_RING_SET);
	optind = 1;
	opterr = 0;
	expect = 0;
	while ((ch = getopt_long(argc, argv, g.shorts, g.lo, NULL)) != -1) {
		if (ch == 'h') {
			ks_help_ring(stdout);
			return KS_EXIT_OK;
		}
		if (ch == KS_OPTV_IF_REVISION) {
			if (ks_parse_uint("--if-revision", optarg, 0, INT64_MAX,
					  &v, err, sizeof(err))) {
				ks_err("%s", err);
				return KS_EXIT_USAGE;
			}
			expect = (int64_t)v;
			pinned = 1;
			continue;
		}
		n = ks_etcd_cli_opt(&ec, ch, optarg, err, sizeof(err));
		if (!n)
			n = ks_ring_spec_opt(&spec, ch, optarg, err,
					     sizeof(err));
		if (n < 0) {
			ks_err("%s", err);
			return KS_EXIT_USAGE;
		}
		if (!n)
			return ks_bad_option("ring set", ch, argv);
	}
	rc = ks_etcd_args_done(&ec, "ring set", "writes the ring into etcd",
			       argc, argv);
	if (rc)
		return rc;
	/* The ring exactly as 'ring lookup' builds it: a bad list is
	 * refused before anything is written. */
	if (ks_ring_load(&spec, &shards, &ring, 0, err, sizeof(err))) {
		ks_err("%s", err);
		return KS_EXIT_USAGE;
	}
	rc = KS_EXIT_USAGE;
	if (ks_etcd_conf_connect(&ec, &c, err, sizeof(err))) {
		ks_err("%s", err);
		goto out;
	}
	rc = KS_EXIT_FAIL;
	ks_writer_id(by, sizeof(by), at, sizeof(at));
	if (ks_ring_doc_encode(&ring, &shards, by, at, &doc, &doclen)) {
		ks_err("out of memory encoding the ring; free some memory");
		goto out;
	}
	rc = ks_etcd_doc_write(c, ec.ring_key, "ring", doc, doclen, expect,
			       pinned, describe_current, &rev);
	if (rc)
		goto out;
	printf("revision %" PRId64
	       " digest %016llx %u shards %s %u points %s\n",
	       rev, (unsigned long long)ring.half->meta.digest, shards.n,
	       ks_dist_name(ring.half->meta.dist), ring.half->meta.npoints,
	       ec.ring_key);
	rc = KS_EXIT_OK;
out:
	free(doc);
	ks_etcd_range_free(&cur);
	ks_etcd_close(c);
	ks_ring_free(&ring);
	ks_shards_free(&shards);
	return rc;
}

static int ring_get(int argc, char **argv)
{
	struct ks_cli_getopt g;
	struct ks_etcd_conf ec;
	struct ks_etcd *c = NULL;
	struct ks_etcd_range cur = { 0 };
	struct ks_ring_doc d;
	struct ks_shards shards = { 0 };
	struct ks_ring ring = { 0 };
	char err[KS_ERRLEN_DOC * 2];
	int ch, n, rc, json = 0, ok;
	const struct ks_etcd_kv *kv;

	ks_etcd_conf_init(&ec);
	ks_cli_getopt_init(&g, KS_CMD_RING_GET);
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, g.shorts, g.lo, NULL)) != -1) {
		if (ch == 'h') {
			ks_help_ring(stdout);
			return KS_EXIT_OK;
		}
		if (ch == 'j') {
			json = 1;
			continue;
		}
		n = ks_etcd_cli_opt(&ec, ch, optarg, err, sizeof(err));
		if (n < 0) {
			ks_err("%s", err);
			return KS_EXIT_USAGE;
		}
		if (!n)
			return ks_bad_option("ring get", ch, argv);
	}
	rc = ks_etcd_args_done(&ec, "ring get", "reads the ring from etcd",
			       argc, argv);
	if (rc)
		return rc;
	if (ks_etcd_conf_connect(&ec, &c, err, sizeof(err))) {
		ks_err("%s", err);
		return KS_EXIT_USAGE;
	}
	rc = KS_EXIT_FAIL;
	if (ks_etcd_range(c, ec.ring_key, strlen(ec.ring_key), 0, &cur)) {
		ks_err("cannot read %s: %s", ec.ring_key, ks_etcd_errmsg(c));
		goto out;
	}
	if (!cur.n) {
		if (json) {
			printf("{\"key\": \"%s\", \"revision\": 0, \"store_revision\": %" PRId64
			       ", \"ring\": null}\n",
			       ec.ring_key, cur.revision);
			rc = KS_EXIT_OK;
		} else {
			ks_err("no ring at %s (etcd revision %" PRId64
			       "); write one with 'agent ring set'",
			       ec.ring_key, cur.revision);
		}
		goto out;
	}
	kv = &cur.kvs[0];
	ok = !ks_ring_doc_decode(kv->value, kv->value_len, &d, err,
				 sizeof(err));
	if (ok) {
		ok = !ks_ring_doc_build(&d, NULL, 0, &shards, &ring, err,
					sizeof(err));
		ks_ring_doc_free(&d);
	}
	if (json) {
		json_error_t je;
		json_t *o = json_object(), *docj;

		docj = json_loadb(kv->value, kv->value_len, 0, &je);
		json_object_set_new(o, "key", json_string(ec.ring_key));
		json_object_set_new(o, "revision",
				    json_integer(kv->mod_revision));
		json_object_set_new(o, "create_revision",
				    json_integer(kv->create_revision));
		json_object_set_new(o, "version", json_integer(kv->version));
		json_object_set_new(o, "store_revision",
				    json_integer(cur.revision));
		json_object_set_new(o, "valid", json_boolean(ok));
		if (!ok)
			json_object_set_new(o, "error", json_string(err));
		json_object_set_new(o, "ring", docj ? docj : json_null());
		if (!docj)
			json_object_set_new(
				o, "raw",
				json_stringn(kv->value, kv->value_len));
		json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		putchar('\n');
		json_decref(o);
	} else {
		printf("%s revision %" PRId64 " (created at %" PRId64
		       ", version %" PRId64 ")\n",
		       ec.ring_key, kv->mod_revision, kv->create_revision,
		       kv->version);
		if (ok)
			printf("%u shards %s, %u points, digest %016llx\n",
			       shards.n, ks_dist_name(ring.half->meta.dist),
			       ring.half->meta.npoints,
			       (unsigned long long)ring.half->meta.digest);
		fwrite(kv->value, 1, kv->value_len, stdout);
		if (!kv->value_len || kv->value[kv->value_len - 1] != '\n')
			putchar('\n');
	}
	if (!ok)
		ks_err("the ring at %s revision %" PRId64 " is refused: %s",
		       ec.ring_key, kv->mod_revision, err);
	rc = ok ? KS_EXIT_OK : KS_EXIT_FAIL;
out:
	ks_ring_free(&ring);
	ks_shards_free(&shards);
	ks_etcd_range_free(&cur);
	ks_etcd_close(c);
	return rc;
}

int cmd_ring(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;

	if (!sub) {
		ks_help_ring(stderr);
		return KS_EXIT_USAGE;
	}
	if (!strcmp(sub, "--help") || !strcmp(sub, "-h") ||
	    !strcmp(sub, "help")) {
		ks_help_ring(stdout);
		return KS_EXIT_OK;
	}
	if (!strcmp(sub, "lookup"))
		return ring_lookup(argc - 1, argv + 1);
	if (!strcmp(sub, "diff"))
		return ring_diff(argc - 1, argv + 1);
	if (!strcmp(sub, "set"))
		return ring_set(argc - 1, argv + 1);
	if (!strcmp(sub, "get"))
		return ring_get(argc - 1, argv + 1);
	fprintf(stderr,
		"agent: unknown ring command '%s'; the ring commands are lookup, diff, get and set (see 'agent ring --help')\n",
		sub);
	return KS_EXIT_USAGE;
}
