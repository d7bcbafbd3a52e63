// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_pins.c - 'agent pins set|get': the fleet's pin and split rules in
 * etcd, /keysteer/CLUSTER/pins (core/pins_doc.h, docs/fleet.md).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli_options.h"
#include "cli/cmds.h"
#include "cli/etcd_cli.h"
#include "cli/etcd_doc_cli.h"
#include "core/dedicated.h"
#include "core/pins_doc.h"
#include "core/ring_doc.h"
#include "net/etcd.h"
#include "util/file.h"
#include "util/log.h"
#include "util/opts.h"

struct pins_args {
	struct ks_etcd_conf ec;
	char key[sizeof(KS_ETCD_ROOT) + KS_CLUSTER_MAX + 8];
	const char *file;
	int64_t expect;
	int pinned, json;
};

/* The options of set (cmd KS_CMD_PINS_SET) or get; 0, -1 (--help
 * printed: exit 0) or an exit code. */
static int parse(int argc, char **argv, unsigned cmd, struct pins_args *a)
{
	const char *name = cmd == KS_CMD_PINS_SET ? "pins set" : "pins get";
	struct ks_cli_getopt g;
	char err[KS_ERRLEN_DOC];
	unsigned long long v;
	int ch, n, rc;

	memset(a, 0, sizeof(*a));
	ks_etcd_conf_init(&a->ec);
	ks_cli_getopt_init(&g, cmd);
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, g.shorts, g.lo, NULL)) != -1) {
		switch (ch) {
		case 'h':
			ks_help_pins(stdout);
			return -1;
		case 'j':
			a->json = 1;
			continue;
		case 'P':
			a->file = optarg;
			continue;
		case KS_OPTV_IF_REVISION:
			if (ks_parse_uint("--if-revision", optarg, 0, INT64_MAX,
					  &v, err, sizeof(err))) {
				ks_err("%s", err);
				return KS_EXIT_USAGE;
			}
			a->expect = (int64_t)v;
			a->pinned = 1;
			continue;
		}
		n = ks_etcd_cli_opt(&a->ec, ch, optarg, err, sizeof(err));
		if (n < 0) {
			ks_err("%s", err);
			return KS_EXIT_USAGE;
		}
		if (!n)
			return ks_bad_option(name, ch, argv);
	}
	rc = ks_etcd_args_done(&a->ec, name,
			       cmd == KS_CMD_PINS_SET
				       ? "writes the fleet's pins into etcd"
				       : "reads the fleet's pins from etcd",
			       argc, argv);
	if (rc)
		return rc;
	if (cmd == KS_CMD_PINS_SET && !a->file)
		return ks_usage_error(
			name,
			"no --pins FILE given; give the pin file to write (an empty one clears the fleet's pins)");
	ks_pins_doc_key(a->ec.cluster, a->key, sizeof(a->key));
	return 0;
}

/* Who holds the pins now, in words, for a refused write. */
static void describe_current(const struct ks_etcd_range *cur, char *buf,
			     size_t len)
{
	struct ks_pins_doc *d = malloc(sizeof(*d));
	char err[KS_ERRLEN_DOC];

	if (!cur->n) {
		snprintf(buf, len, "the pins are absent now (deleted)");
	} else if (!d ||
		   ks_pins_doc_decode(cur->kvs[0].value, cur->kvs[0].value_len,
				      "etcd", d, err, sizeof(err))) {
		snprintf(buf, len,
			 "revision %" PRId64
			 " holds a document that does not read (%s)",
			 cur->kvs[0].mod_revision, d ? err : "out of memory");
	} else {
		snprintf(buf, len,
			 "revision %" PRId64 " by %s at %s won (%zu rules)",
			 cur->kvs[0].mod_revision,
			 d->written_by[0] ? d->written_by : "an unnamed writer",
			 d->written_at[0] ? d->written_at : "an unknown time",
			 d->rules.n);
	}
	free(d);
}

/*
 * Shard rules name shards of the fleet's ring as it is now: 0, or an exit
 * code after saying which rule names which missing shard. No ring in etcd
 * yet: nothing to check against (each agent checks its own ring and logs
 * a rule whose shard it lacks; the rule then places nothing).
 */
static int check_shards(struct ks_etcd *c, const char *cluster,
			const struct ks_hot_rules *rules, const char *file)
{
	char key[sizeof(KS_ETCD_ROOT) + KS_CLUSTER_MAX + 8];
	char err[KS_ERRLEN_DOC * 2], src[64];
	struct ks_etcd_range cur;
	struct ks_ring_doc d;
	struct ks_shards s;
	struct ks_ring r;
	int rc = 0;

	if (!ks_dedicated_count(rules))
		return 0;
	ks_ring_doc_key(cluster, key, sizeof(key));
	if (ks_etcd_range(c, key, strlen(key), 0, &cur)) {
		ks_err("cannot read %s to check the shard rules: %s; nothing written",
		       key, ks_etcd_errmsg(c));
		return KS_EXIT_FAIL;
	}
	if (!cur.n) {
		ks_info("no ring at %s yet: the shard rules' shards are checked by each agent against its ring",
			key);
		ks_etcd_range_free(&cur);
		return 0;
	}
	if (ks_ring_doc_decode(cur.kvs[0].value, cur.kvs[0].value_len, &d, err,
			       sizeof(err)) ||
	    ks_ring_doc_build(&d, NULL, 0, &s, &r, err, sizeof(err))) {
		ks_err("the ring at %s does not read (%s): shard rules cannot be checked; nothing written",
		       key, err);
		ks_etcd_range_free(&cur);
		return KS_EXIT_FAIL;
	}
	ks_ring_doc_free(&d);
	snprintf(src, sizeof(src), "the fleet's ring, revision %" PRId64,
		 cur.kvs[0].mod_revision);
	snprintf(s.source, sizeof(s.source), "%s", src);
	if (ks_dedicated_check(rules, &s, err, sizeof(err))) {
		ks_err("--pins %s: %s; nothing written", file, err);
		rc = KS_EXIT_USAGE;
	}
	ks_ring_free(&r);
	ks_shards_free(&s);
	ks_etcd_range_free(&cur);
	return rc;
}

static int pins_set(int argc, char **argv)
{
	struct ks_pins_doc *d = malloc(sizeof(*d));
	struct ks_etcd *c = NULL;
	struct pins_args a;
	char err[KS_ERRLEN_DOC * 2], by[400], at[40], *text = NULL, *doc = NULL;
	size_t len;
	int64_t rev = 0;
	int rc = parse(argc, argv, KS_CMD_PINS_SET, &a);

	if (rc || !d) {
		free(d);
		return rc < 0 ? KS_EXIT_OK : rc ? rc : KS_EXIT_FAIL;
	}
	/* checked as the agent will read it: a bad line is refused before
	 * anything is written */
	rc = ks_read_file(a.file, KS_PINS_DOC_MAX, &text, &len);
	if (rc) {
		ks_err("cannot read --pins %s (%s)", a.file,
		       rc == -EFBIG ? "larger than 1 MiB" : strerror(-rc));
		rc = KS_EXIT_USAGE;
		goto out;
	}
	rc = KS_EXIT_USAGE;
	if (ks_hot_rules_parse(&d->rules, text, len, a.file, err,
			       sizeof(err))) {
		ks_err("%s; nothing written", err);
		goto out;
	}
	ks_writer_id(by, sizeof(by), at, sizeof(at));
	doc = ks_pins_doc_encode(text, len, d->rules.n, by, at);
	if (!doc) {
		ks_err("--pins %s is not UTF-8 text; etcd's pins hold keys as text",
		       a.file);
		goto out;
	}
	if (ks_etcd_conf_connect(&a.ec, &c, err, sizeof(err))) {
		ks_err("%s", err);
		goto out;
	}
	rc = check_shards(c, a.ec.cluster, &d->rules, a.file);
	if (rc)
		goto out;
	rc = ks_etcd_doc_write(c, a.key, "pins", doc, strlen(doc), a.expect,
			       a.pinned, describe_current, &rev);
	if (!rc)
		printf("revision %" PRId64 " %zu rules %s\n", rev, d->rules.n,
		       a.key);
out:
	free(text);
	free(doc);
	free(d);
	ks_etcd_close(c);
	return rc;
}

static void print_json(const struct pins_args *a, const struct ks_etcd_range *r,
		       int ok, size_t nrules, const char *err)
{
	const struct ks_etcd_kv *kv = r->n ? &r->kvs[0] : NULL;
	json_t *o = json_object(), *doc = NULL;
	json_error_t je;

	json_object_set_new(o, "key", json_string(a->key));
	json_object_set_new(o, "revision",
			    json_integer(kv ? kv->mod_revision : 0));
	json_object_set_new(o, "store_revision", json_integer(r->revision));
	if (kv) {
		doc = json_loadb(kv->value, kv->value_len, 0, &je);
		json_object_set_new(o, "valid", json_boolean(ok));
		if (ok)
			json_object_set_new(o, "rules",
					    json_integer((json_int_t)nrules));
		else
			json_object_set_new(o, "error", json_string(err));
	}
	json_object_set_new(o, "pins", doc ? doc : json_null());
	if (kv && !doc)
		json_object_set_new(o, "raw",
				    json_stringn(kv->value, kv->value_len));
	json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	putchar('\n');
	json_decref(o);
}

static int pins_get(int argc, char **argv)
{
	struct ks_pins_doc *d = malloc(sizeof(*d));
	struct ks_etcd_range r = { 0 };
	struct ks_etcd *c = NULL;
	struct pins_args a;
	char err[KS_ERRLEN_DOC * 2];
	json_error_t je;
	json_t *o;
	int ok = 0, rc = parse(argc, argv, KS_CMD_PINS_GET, &a);

	if (rc || !d) {
		free(d);
		return rc < 0 ? KS_EXIT_OK : rc ? rc : KS_EXIT_FAIL;
	}
	if (ks_etcd_conf_connect(&a.ec, &c, err, sizeof(err))) {
		ks_err("%s", err);
		rc = KS_EXIT_USAGE;
		goto out;
	}
	rc = KS_EXIT_FAIL;
	if (ks_etcd_range(c, a.key, strlen(a.key), 0, &r)) {
		ks_err("cannot read %s: %s", a.key, ks_etcd_errmsg(c));
		goto out;
	}
	if (r.n)
		ok = !ks_pins_doc_decode(r.kvs[0].value, r.kvs[0].value_len,
					 "etcd", d, err, sizeof(err));
	if (a.json) {
		print_json(&a, &r, ok, d->rules.n, err);
		rc = !r.n || ok ? KS_EXIT_OK : KS_EXIT_FAIL;
		goto out;
	}
	if (!r.n) {
		printf("no pins at %s (etcd revision %" PRId64
		       "): agents use their own --pins files\n",
		       a.key, r.revision);
		rc = KS_EXIT_OK;
		goto out;
	}
	printf("%s revision %" PRId64 "%s", a.key, r.kvs[0].mod_revision,
	       ok ? "" : "\n");
	if (!ok) {
		ks_err("the pins at %s are refused: %s", a.key, err);
		goto out;
	}
	printf(", %zu rules, by %s at %s\n", d->rules.n, d->written_by,
	       d->written_at);
	o = json_loadb(r.kvs[0].value, r.kvs[0].value_len, 0, &je);
	fputs(json_string_value(json_object_get(o, "rules")), stdout);
	json_decref(o);
	rc = KS_EXIT_OK;
out:
	free(d);
	ks_etcd_range_free(&r);
	ks_etcd_close(c);
	return rc;
}

int cmd_pins(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		ks_help_pins(argc < 2 ? stderr : stdout);
		return argc < 2 ? KS_EXIT_USAGE : KS_EXIT_OK;
	}
	if (!strcmp(argv[1], "set"))
		return pins_set(argc - 1, argv + 1);
	if (!strcmp(argv[1], "get"))
		return pins_get(argc - 1, argv + 1);
	return ks_usage_error("pins", "give 'set' or 'get'");
}
