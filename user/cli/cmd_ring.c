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
#include "core/dedicated.h"
#include "core/ring_doc.h"
#include "net/etcd.h"
#include "cli/cli_options.h"
#include "cli/cmds.h"
#include "util/log.h"
#include "util/opts.h"
#include "core/ring.h"
#include "core/ring_diff.h"

/* A key line's length without its newline and a trailing CR. */
static ssize_t key_line_len(const char *line, ssize_t len)
{
	if (len && line[len - 1] == '\n')
		len--;
	if (len && line[len - 1] == '\r')
		len--;
	return len;
}

/* The shard rules of --pins, resolved against the ring; n 0: none. */
struct lookup_pins {
	struct ks_hot_rules rules;
	int idx[KS_HOT_RULES_MAX];
};

/* Prints one lookup line; 0, or -1 when the key is not a memcached key.
 * A key a shard rule places gets a fourth column: the rule and the ring's
 * own owner. */
static int lookup_one(const struct ks_ring *r, const struct ks_shards *s,
		      const struct lookup_pins *p, const char *key, size_t len,
		      const char *where)
{
	const struct ks_hot_rule *rule = NULL;
	__u32 idx, ring_idx;
	int d = -1;

	if (len == 0 || len > KS_MAX_KEY_LEN) {
		ks_err("%skey '%.40s%s' is %zu bytes; memcached keys are 1 to %d bytes",
		       where, key, len > 40 ? "..." : "", len, KS_MAX_KEY_LEN);
		return -1;
	}
	idx = ring_idx = ks_ring_lookup(r, key, len);
	if (p->rules.n)
		d = ks_dedicated_place(&p->rules, p->idx, key, len, &rule);
	if (d >= 0)
		idx = (__u32)d;
	if (idx >= s->n || ring_idx >= s->n) { /* not with a built ring */
		ks_err("%sno shard for key '%s'; report this as a bug", where,
		       key);
		return -1;
	}
	printf("%.*s\t%u\t%s:%u", (int)len, key, idx, s->v[idx].host,
	       s->v[idx].port);
	if (d >= 0)
		printf("\tdedicated: shard %.*s%s (ring: %u %s:%u)",
		       (int)rule->len, (const char *)rule->key,
		       rule->type == KS_RULE_SHARD_PREFIX ? "*" : "", ring_idx,
		       s->v[ring_idx].host, s->v[ring_idx].port);
	putchar('\n');
	return 0;
}

static int ring_lookup(int argc, char **argv)
{
	static struct lookup_pins pins;
	const char *pins_path = NULL;
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
		if (c == 'P') {
			pins_path = optarg;
			continue;
		}
		if (c == KS_OPTV_PLAN) {
			spec.plan = optarg;
			continue;
		}
		n = ks_ring_spec_opt(&spec, c, optarg, err, sizeof(err));
		if (n < 0) {
			ks_err("%s", err);
			return KS_EXIT_USAGE;
		}
		if (!n)
			return ks_bad_option("ring lookup", c, argv);
	}
	if (pins_path &&
	    ks_hot_rules_load(&pins.rules, pins_path, err, sizeof(err))) {
		ks_err("%s", err);
		return KS_EXIT_USAGE;
	}
	if (ks_ring_doc_load_spec(&spec, &shards, &ring, 0, NULL, err,
				  sizeof(err))) {
		ks_err("%s", err);
		return KS_EXIT_USAGE;
	}
	/* the agent's check: a shard rule names a shard of this ring */
	if (ks_dedicated_check(&pins.rules, &shards, err, sizeof(err))) {
		ks_err("--pins %s: %s", pins_path, err);
		ks_ring_free(&ring);
		ks_shards_free(&shards);
		return KS_EXIT_USAGE;
	}
	ks_dedicated_resolve(&pins.rules, &shards, pins.idx);
	if (optind < argc) {
		for (i = optind; i < argc; i++)
			bad |= lookup_one(&ring, &shards, &pins, argv[i],
					  strlen(argv[i]), "");
	} else {
		char *line = NULL, where[48];
		size_t cap = 0;
		ssize_t len;
		unsigned long n = 0;

		while ((len = getline(&line, &cap, stdin)) >= 0) {
			n++;
			len = key_line_len(line, len);
			if (!len)
				continue; /* blank lines are skipped */
			snprintf(where, sizeof(where), "stdin:%lu: ", n);
			bad |= lookup_one(&ring, &shards, &pins, line,
					  (size_t)len, where);
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

/* Where diff's keys come from: a file of keys, or key:0 .. key:N-1. */
struct diff_keys {
	FILE *f;         /* NULL: the sample keys */
	const char *src; /* the file's name in messages */
	__u32 n;         /* sample keys */
};

/* Places every key; 0, or an exit status after a message. */
static int diff_place(struct ks_ring_diff *d, const struct diff_keys *k)
{
	char key[32], *line = NULL;
	size_t cap = 0;
	ssize_t len;
	unsigned long ln = 0;
	int bad = 0;
	__u32 i;

	for (i = 0; !k->f && i < k->n; i++) {
		len = snprintf(key, sizeof(key), "key:%u", i);
		if (ks_ring_diff_key(d, key, (size_t)len) < 0) {
			ks_err("no shard for key '%s'; report this as a bug",
			       key);
			return KS_EXIT_FAIL;
		}
	}
	while (k->f && (len = getline(&line, &cap, k->f)) >= 0) {
		ln++;
		len = key_line_len(line, len);
		if (!len)
			continue;
		if (len > KS_MAX_KEY_LEN) {
			ks_err("%s:%lu: key of %zd bytes; memcached keys are 1 to %d bytes",
			       k->src, ln, len, KS_MAX_KEY_LEN);
			bad = 1;
			continue;
		}
		if (ks_ring_diff_key(d, line, (size_t)len) < 0) {
			ks_err("%s:%lu: no shard for the key; report this as a bug",
			       k->src, ln);
			bad = 1;
		}
	}
	free(line);
	if (!d->keys) {
		ks_err("%s holds no keys; give one key a line", k->src);
		return KS_EXIT_USAGE;
	}
	return bad ? KS_EXIT_FAIL : 0;
}

static void print_moves(const struct ks_ring_diff *d)
{
	const struct ks_shards *sf = d->sf, *st = d->st;
	struct pair *list;
	__u32 i, j, npairs = 0;
	char a[KS_SHARD_HOST_MAX + 8], b[KS_SHARD_HOST_MAX + 8];

	list = calloc((size_t)sf->n * st->n, sizeof(*list)); /* n >= 1 */
	for (i = 0; list && i < sf->n; i++)
		for (j = 0; j < st->n; j++)
			if (d->pairs[(size_t)i * st->n + j])
				list[npairs++] = (struct pair){
					i, j, d->pairs[(size_t)i * st->n + j]
				};
	if (!list || !npairs) {
		free(list);
		return;
	}
	qsort(list, npairs, sizeof(*list), pair_cmp);
	printf("\nmoved keys, from -> to:\n");
	for (i = 0; i < npairs; i++) {
		ks_shard_addr(&sf->v[list[i].from], a, sizeof(a));
		ks_shard_addr(&st->v[list[i].to], b, sizeof(b));
		printf("  %s -> %s\t%u\n", a, b, list[i].keys);
	}
	free(list);
}

/* Every shard of either side, from-side order first: keys before and
 * after, and how many left and came. */
static void print_per_shard(const struct ks_ring_diff *d)
{
	const struct ks_shards *sf = d->sf, *st = d->st;
	char addr[KS_SHARD_HOST_MAX + 8];
	__u32 i, j;

	printf("\nper shard:\n  %-24s %9s %9s %9s %9s\n", "shard", "before",
	       "after", "out", "in");
	for (i = 0; i < sf->n; i++) {
		int t = ks_shards_find(st, sf->v[i].host, sf->v[i].port);

		ks_shard_addr(&sf->v[i], addr, sizeof(addr));
		printf("  %-24s %9u %9u %9u %9u\n", addr, d->before[i],
		       t >= 0 ? d->after[t] : 0, d->out[i],
		       t >= 0 ? d->in[t] : 0);
	}
	for (j = 0; j < st->n; j++) {
		if (d->same[j] >= 0)
			continue;
		ks_shard_addr(&st->v[j], addr, sizeof(addr));
		printf("  %-24s %9u %9u %9u %9u\n", addr, 0, d->after[j], 0,
		       d->in[j]);
	}
}

/* Counts, moves and prints; the rings are built. */
static int diff_rings(const struct ks_ring *rf, const struct ks_shards *sf,
		      const struct ks_ring *rt, const struct ks_shards *st,
		      const struct diff_keys *k)
{
	__u32 df = rf->half->meta.dist, dt = rt->half->meta.dist;
	struct ks_ring_diff d;
	int rc;

	if (ks_ring_diff_init(&d, rf, sf, rt, st)) {
		ks_err("out of memory counting keys; use fewer shards");
		return KS_EXIT_FAIL;
	}
	rc = diff_place(&d, k);
	if (rc == KS_EXIT_USAGE || !d.keys)
		goto out;
	if (df == dt)
		printf("distribution %s", ks_dist_name(df));
	else
		printf("distribution %s -> %s", ks_dist_name(df),
		       ks_dist_name(dt));
	if (k->f)
		printf(", %llu keys from %s\n", (unsigned long long)d.keys,
		       k->src);
	else
		printf(", %u keys (key:0 .. key:%u)\n", k->n, k->n - 1);
	printf("from %u shards (digest %016llx), to %u shards (digest %016llx)\n",
	       sf->n, (unsigned long long)rf->half->meta.digest, st->n,
	       (unsigned long long)rt->half->meta.digest);
	printf("moved %llu of %llu keys (%.2f%%)\n",
	       (unsigned long long)d.moved, (unsigned long long)d.keys,
	       100.0 * (double)d.moved / (double)d.keys);
	print_moves(&d);
	print_per_shard(&d);
	printf("\nbalance (keys per shard):\n");
	printf("  %-5s %6s  %-24s %9s %11s %12s\n", "ring", "shards", "busiest",
	       "keys", "mean", "busiest/mean");
	print_balance("from", sf, d.before, (__u32)d.keys);
	print_balance("to", st, d.after, (__u32)d.keys);
out:
	ks_ring_diff_free(&d);
	return rc;
}

/* A side's distribution or client option; 0, or an exit status. */
static int diff_side_opt(struct ks_ring_spec *side, int c, const char *arg)
{
	char err[KS_ERRLEN * 2];

	if (ks_ring_spec_opt(side, c, arg, err, sizeof(err)) < 0) {
		ks_err("%s", err);
		return KS_EXIT_USAGE;
	}
	return 0;
}

static int ring_diff(int argc, char **argv)
{
	struct ks_cli_getopt g;
	struct ks_ring_spec from, to;
	struct ks_shards sf, st;
	struct ks_ring rf, rt;
	struct diff_keys k = { .n = KS_DIFF_KEYS_DEFAULT };
	char err[KS_ERRLEN * 2], what[160];
	unsigned long long v;
	const char *to_list = NULL, *to_file = NULL, *both_list = NULL,
		   *both_file = NULL, *keys_file = NULL;
	int c, rc, n_given = 0;

	ks_ring_spec_init(&from, "--from", "--from-file");
	ks_ring_spec_init(&to, "--to", "--to-file");
	ks_cli_getopt_init(&g, KS_CMD_RING_DIFF);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, g.shorts, g.lo, NULL)) != -1) {
		rc = 0;
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
		case 'S':
			both_list = optarg;
			break;
		case KS_OPTV_SHARDS_FILE2:
			both_file = optarg;
			break;
		case KS_OPTV_KEYS_FILE:
			keys_file = optarg;
			break;
		case KS_OPTV_FROM_PLAN:
			from.plan = optarg;
			from.plan_flag = "--from-plan";
			break;
		case KS_OPTV_TO_PLAN:
			to.plan = optarg;
			to.plan_flag = "--to-plan";
			break;
		case 'k':
			if (ks_parse_uint("--keys", optarg, 1, KS_DIFF_KEYS_MAX,
					  &v, err, sizeof(err))) {
				ks_err("%s", err);
				return KS_EXIT_USAGE;
			}
			k.n = (__u32)v;
			n_given = 1;
			break;
		case 'D':
		case 'N':
		case KS_OPTV_CLIENT:
		case KS_OPTV_KEY_HASH:
		case KS_OPTV_HASH_TAG:
			rc = diff_side_opt(&from, c, optarg);
			if (!rc)
				rc = diff_side_opt(&to, c, optarg);
			break;
		case KS_OPTV_FROM_DIST:
			rc = diff_side_opt(&from, 'D', optarg);
			break;
		case KS_OPTV_TO_DIST:
			rc = diff_side_opt(&to, 'D', optarg);
			break;
		case KS_OPTV_FROM_CLIENT:
			rc = diff_side_opt(&from, KS_OPTV_CLIENT, optarg);
			break;
		case KS_OPTV_TO_CLIENT:
			rc = diff_side_opt(&to, KS_OPTV_CLIENT, optarg);
			break;
		case 'h':
			ks_help_ring(stdout);
			return KS_EXIT_OK;
		default:
			return ks_bad_option("ring diff", c, argv);
		}
		if (rc)
			return rc;
	}
	if (optind < argc) {
		snprintf(what, sizeof(what), "unexpected argument '%s'",
			 argv[optind]);
		return ks_usage_error("ring diff", what);
	}
	if ((both_list || both_file) &&
	    (from.list || from.file || to_list || to_file))
		return ks_usage_error(
			"ring diff",
			"--shards/--shards-file is both sides' list; give it, or --from and --to, not both");
	if (both_list && both_file)
		return ks_usage_error(
			"ring diff",
			"both --shards and --shards-file given; give one of them");
	if (keys_file && n_given)
		return ks_usage_error(
			"ring diff",
			"--keys N samples key:0 .. key:N-1 and --keys-file reads keys; give one of them");
	if (both_list || both_file) {
		from.list = to_list = both_list;
		from.file = to_file = both_file;
		from.flag = to.flag = "--shards";
		from.file_flag = to.file_flag = "--shards-file";
	}
	to.list = to_list;
	to.file = to_file;
	if (keys_file) {
		k.src = keys_file;
		k.f = strcmp(keys_file, "-") ? fopen(keys_file, "r") : stdin;
		if (!k.f) {
			ks_err("cannot read --keys-file %s: %s; give a file of keys, one a line",
			       keys_file, strerror(errno));
			return KS_EXIT_USAGE;
		}
		if (k.f == stdin)
			k.src = "stdin";
	}
	rc = KS_EXIT_USAGE;
	if (ks_ring_doc_load_spec(&from, &sf, &rf, 0, NULL, err, sizeof(err))) {
		ks_err("%s", err);
		goto close;
	}
	if (ks_ring_doc_load_spec(&to, &st, &rt, 0, NULL, err, sizeof(err))) {
		ks_err("%s", err);
		ks_ring_free(&rf);
		ks_shards_free(&sf);
		goto close;
	}
	rc = diff_rings(&rf, &sf, &rt, &st, &k);
	ks_ring_free(&rf);
	ks_ring_free(&rt);
	ks_shards_free(&sf);
	ks_shards_free(&st);
close:
	if (k.f && k.f != stdin)
		fclose(k.f);
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

/* The ring at kv built as an agent without --self builds it; 0, or
 * nonzero with why in err. */
static int build_current(const struct ks_etcd_kv *kv, struct ks_shards *s,
			 struct ks_ring *r, char *err, size_t errlen)
{
	struct ks_ring_doc d;
	int rc;

	rc = ks_ring_doc_decode(kv->value, kv->value_len, &d, err, errlen);
	if (rc)
		return rc;
	rc = ks_ring_doc_build(&d, NULL, 0, s, r, err, errlen);
	ks_ring_doc_free(&d);
	return rc;
}

/*
 * What writing (st, rt) over the ring at cur moves, printed; 1 when it
 * breaks the rule of an unforced change (ks_ring_change_needs_force)
 * and force is not given,
 * 0 to write, or an exit status (> 1) when the keys could not be placed.
 * A ring that is absent or does not read is not compared: there is
 * nothing (the first ring) or nothing known (agents that refused it run
 * their previous ring) to compare with, and the write replaces it.
 */
static int set_diff(const struct ks_etcd_range *cur, const char *key,
		    const struct ks_ring *rt, const struct ks_shards *st,
		    int force)
{
	struct diff_keys k = { .n = KS_DIFF_KEYS_DEFAULT };
	struct ks_ring_diff d;
	struct ks_shards sf;
	struct ks_ring rf;
	char err[KS_ERRLEN_DOC * 2], why[200];
	double moved, ideal, limit;
	int rc;

	if (!cur->n) {
		printf("no ring at %s yet: this is the first, nothing moves\n",
		       key);
		return 0;
	}
	if (build_current(&cur->kvs[0], &sf, &rf, err, sizeof(err))) {
		printf("the ring at %s revision %" PRId64
		       " does not read (%s): what this change moves is not known (agents that refused it run their previous ring)\n",
		       key, cur->kvs[0].mod_revision, err);
		return 0;
	}
	if (ks_ring_diff_init(&d, &rf, &sf, rt, st)) {
		ks_err("out of memory counting keys; use fewer shards");
		rc = KS_EXIT_FAIL;
		goto out;
	}
	rc = diff_place(&d, &k);
	if (rc)
		goto free_diff;
	moved = (double)d.moved / (double)d.keys;
	ideal = ks_ring_ideal_moved(&sf, st);
	limit = ks_ring_move_limit(ideal);
	printf("change at %s revision %" PRId64
	       ": %u shards %s (digest %016llx) -> %u shards %s (digest %016llx)\n",
	       key, cur->kvs[0].mod_revision, sf.n,
	       ks_dist_name(rf.half->meta.dist),
	       (unsigned long long)rf.half->meta.digest, st->n,
	       ks_dist_name(rt->half->meta.dist),
	       (unsigned long long)rt->half->meta.digest);
	printf("moves %llu of %llu sample keys (%.2f%%); ideal %.2f%%, limit %.2f%%\n",
	       (unsigned long long)d.moved, (unsigned long long)d.keys,
	       100.0 * moved, 100.0 * ideal, 100.0 * limit);
	print_per_shard(&d);
	rc = 0;
	if (ks_ring_change_needs_force(&sf, st, moved, why, sizeof(why))) {
		if (force) {
			printf("--force: written past the limit (%s), marked \"force\": true\n",
			       why);
		} else {
			ks_err("ring not written: %s Check it with 'agent ring diff', or give --force to write it",
			       why);
			rc = 1;
		}
	}
free_diff:
	ks_ring_diff_free(&d);
out:
	ks_ring_free(&rf);
	ks_shards_free(&sf);
	return rc;
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
	int ch, n, rc, pinned = 0, force = 0, clients = -1, plan_ks = 0;

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
		if (ch == KS_OPTV_FORCE) {
			force = 1;
			continue;
		}
		if (ch == KS_OPTV_PLAN) {
			spec.plan = optarg;
			continue;
		}
		if (ch == KS_OPTV_CLIENTS) {
			if (strcmp(optarg, KS_RING_DOC_CLIENTS_KS) &&
			    strcmp(optarg, "any")) {
				ks_err("--clients '%s': give keysteer (every client reads the ring from etcd) or any",
				       optarg);
				return KS_EXIT_USAGE;
			}
			clients = !strcmp(optarg, KS_RING_DOC_CLIENTS_KS) ? 1
									  : 0;
			continue;
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
	if (ks_ring_doc_load_spec(&spec, &shards, &ring, 0, &plan_ks, err,
				  sizeof(err))) {
		ks_err("%s", err);
		return KS_EXIT_USAGE;
	}
	if (clients < 0 && spec.plan)
		clients = plan_ks;
	/* a ring of explicit points for clients that build their ring from
	 * a server list would send the planned keys to their old owners */
	if (ring.half->meta.planned && !clients) {
		ks_err("%s holds explicit points, which only clients that read the ring from etcd (libkeysteer) follow; write it with --clients keysteer if every client does (docs/placement.md)",
		       spec.plan);
		ks_ring_free(&ring);
		ks_shards_free(&shards);
		return KS_EXIT_USAGE;
	}
	rc = KS_EXIT_USAGE;
	if (ks_etcd_conf_connect(&ec, &c, err, sizeof(err))) {
		ks_err("%s", err);
		goto out;
	}
	rc = KS_EXIT_FAIL;
	if (ks_etcd_range(c, ec.ring_key, strlen(ec.ring_key), 0, &cur)) {
		ks_err("cannot read %s: %s", ec.ring_key, ks_etcd_errmsg(c));
		goto out;
	}
	/* without --clients (or a plan), the declaration of the ring it
	 * replaces stays: adding a shard does not undo it */
	if (clients < 0) {
		struct ks_ring_doc d;
		char derr[KS_ERRLEN_DOC];

		clients = 0;
		if (cur.n &&
		    !ks_ring_doc_decode(cur.kvs[0].value, cur.kvs[0].value_len,
					&d, derr, sizeof(derr))) {
			clients = d.clients_ks;
			ks_ring_doc_free(&d);
		}
	}
	/* The diff is against the revision read: the write is pinned to it,
	 * so what was printed is what the write replaces (a change in
	 * between is refused naming its writer). An --if-revision that
	 * differs already is refused by the write, with no diff. */
	if (!pinned || expect == (cur.n ? cur.kvs[0].mod_revision : 0)) {
		n = set_diff(&cur, ec.ring_key, &ring, &shards, force);
		if (n) {
			rc = n > 1 ? n : KS_EXIT_FAIL;
			goto out;
		}
		expect = cur.n ? cur.kvs[0].mod_revision : 0;
		pinned = 1;
	}
	/* the change is written only when what it moves could be shown */
	if (fflush(stdout) || ferror(stdout)) {
		ks_err("cannot print what the change moves (%s); the ring is not written",
		       strerror(errno));
		goto out;
	}
	ks_writer_id(by, sizeof(by), at, sizeof(at));
	if (ks_ring_doc_encode_ext(&ring, &shards, by, at, force, clients, &doc,
				   &doclen)) {
		ks_err("out of memory encoding the ring; free some memory");
		goto out;
	}
	rc = ks_etcd_doc_write(c, ec.ring_key, "ring", doc, doclen, expect,
			       pinned, describe_current, &rev);
	if (rc)
		goto out;
	printf("revision %" PRId64
	       " digest %016llx %u shards %s %u%s points %s\n",
	       rev, (unsigned long long)ring.half->meta.digest, shards.n,
	       ks_dist_name(ring.half->meta.dist), ring.half->meta.npoints,
	       ring.half->meta.planned ? " explicit" : "", ec.ring_key);
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
	if (!strcmp(sub, "plan"))
		return ks_ring_plan_cmd(argc - 1, argv + 1);
	fprintf(stderr,
		"agent: unknown ring command '%s'; the ring commands are lookup, diff, get, set and plan (see 'agent ring --help')\n",
		sub);
	return KS_EXIT_USAGE;
}
