// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* ks_load's command line: every value range-checked, every refusal one
 * "ks_load: <what is wrong>; <what to do>" line and exit status 2. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "load.h"
#include "util/opts.h"

static const char *const op_names[LD_NOPS] = { "get", "mget", "set" };

const char *ld_op_name(int op)
{
	return op_names[op];
}

const char *ld_proto_name(int proto)
{
	return proto == LD_TCP ? "tcp" : "udp";
}

const char *ld_mode_name(enum ld_mode m)
{
	return m == LD_MODE_TCP ? "tcp" : m == LD_MODE_UDP ? "udp" : "udp-gets";
}

void ld_usage(FILE *f)
{
	fprintf(f,
		"ks_load - memcached load generator (text protocol, TCP and UDP)\n"
		"\n"
		"USAGE\n"
		"  ks_load (--server HOST:PORT | --shards LIST | --shards-file FILE\n"
		"           [--distribution D] [--vnodes N])\n"
		"          (--duration SEC | --count N | both) [options]\n"
		"\n"
		"Sends gets, multi-gets and sets for keys PREFIX1..PREFIXK drawn from Zipf\n"
		"(rank 1 the most popular) plus optional flash-sale keys, each to the shard\n"
		"the clients' ring gives it, then prints what it sent and the latencies.\n"
		"\n"
		"TARGETS\n"
		"  --server HOST:PORT   one memcached (IPv4 address or host name)\n"
		"  --shards LIST        host:port[:weight],... routed with the ring\n"
		"  --shards-file FILE   the same, one 'host:port[:weight] [name]' per line\n"
		"  --distribution D     ketama, twemproxy, twemproxy-md5, vnode, modula\n"
		"                       (default ketama)\n"
		"  --vnodes N           virtual nodes per shard for vnode\n"
		"  --proto P            tcp, udp, or udp-gets (gets over UDP, sets over TCP)\n"
		"                       (default tcp)\n"
		"  --conns N            connections (threads), each with one socket per shard\n"
		"                       and one request in flight, 1..%d (default 4)\n"
		"  --timeout SEC        reply timeout, 0.001..60 (default 1)\n"
		"\n"
		"WORKLOAD\n"
		"  --keys K             distinct keys, 1..%u (default 100000)\n"
		"  --zipf S             Zipf exponent, 0..10 (default 0.99; 0 = uniform)\n"
		"  --flash KEY:SHARE    KEY takes SHARE (0..1) of all requests; up to %d times\n"
		"  --key-prefix P       key names P1..PK (default 'key:')\n"
		"  --mix get=G,mget=M,set=S  weights of the ops (default get=90,set=10)\n"
		"  --mget-size M        keys per multi-get, 2..%d (default 10)\n"
		"  --value-size B       bytes per set value, 1..%u (default 32)\n"
		"  --seed N             seed of the draws (default 1); thread i uses N+i\n"
		"  --preload            first set every key (and flash key) once over TCP to\n"
		"                       its owner with --value-size bytes, so gets hit; not\n"
		"                       counted in the run's figures; prints how long it took\n"
		"\n"
		"RUN\n"
		"  --duration SEC       stop after SEC seconds, 0.001..3600\n"
		"  --count N            stop after N operations, 1..1000000000\n"
		"  --rate R             operations/s over all connections, paced; 0 = as fast\n"
		"                       as possible (default 0)\n"
		"\n"
		"OUTPUT\n"
		"  --json               one JSON document instead of the table\n"
		"  --exact-counts FILE  'key<TAB>gets<TAB>sets' for every key sent (gets\n"
		"                       counts the key in gets and multi-gets)\n"
		"  -h, --help           this text\n"
		"\n"
		"An operation counts once sent in full; hits are VALUE lines received. Over\n"
		"UDP every request is one datagram with the 8-byte frame header and its own\n"
		"request id; the reply is read until END and is taken from any address that\n"
		"answers with that id (a steered request is answered by a replica). Replies\n"
		"are counted by source; 'steered' ones came from another address than the\n"
		"request went to (JSON: replies_by_source, steered, first_steered_ms, the\n"
		"time from the start to the first steered reply, null if none). A UDP reply\n"
		"that is a SERVER_ERROR line (a rate limit's refusal) counts as refused, not\n"
		"as an error, and adds no latency (JSON: refused). Exit 0\n"
		"after a run, 1 if the run or its preload could not start or failed, 2 for\n"
		"bad flags.\n"
		"\n"
		"EXAMPLES\n"
		"  ks_load --server 127.0.0.1:11211 --duration 5 --rate 10000\n"
		"  ks_load --shards-file shards.txt --proto udp --keys 100000 --zipf 0.99 \\\n"
		"          --flash flash:1:0.24 --duration 10 --rate 50000 --json\n"
		"  ks_load --shards-file shards.txt --proto udp --mix get=100 --preload \\\n"
		"          --flash flash:1:0.24 --duration 10 --rate 20000\n"
		"  ks_load --server 198.18.0.2:11211 --count 100000 --rate 0 \\\n"
		"          --mix get=80,mget=10,set=10 --mget-size 8 --exact-counts out.tsv\n",
		LD_MAX_CONNS, KS_ZIPF_MAX_KEYS, LD_MAX_FLASH, LD_MAX_MGET,
		LD_MAX_VALUE);
}

static int refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int refuse(const char *fmt, ...)
{
	va_list ap;

	fputs("ks_load: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 2;
}

static int parse_real(const char *what, const char *s, double min, double max,
		      const char *example, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(v) || v < min || v > max)
		return refuse("%s '%s' is not a number in %g..%g; give e.g. %s",
			      what, s, min, max, example);
	*out = v;
	return 0;
}

static int parse_flash(struct ld_cfg *cfg, const char *s)
{
	const char *colon = strrchr(s, ':');
	struct ld_flash *f;
	size_t klen;

	if (cfg->nflash == LD_MAX_FLASH)
		return refuse("more than %d --flash keys; give fewer",
			      LD_MAX_FLASH);
	if (!colon || colon == s)
		return refuse(
			"--flash '%s' is not KEY:SHARE; give e.g. --flash flash:1:0.24",
			s);
	klen = (size_t)(colon - s);
	if (klen > KS_MAX_KEY_LEN)
		return refuse(
			"--flash key is %zu bytes; memcached keys are at most %d",
			klen, KS_MAX_KEY_LEN);
	f = &cfg->flash[cfg->nflash];
	memcpy(f->key, s, klen);
	f->key[klen] = 0;
	if (strpbrk(f->key, " \t\r\n"))
		return refuse(
			"--flash key '%s' has white space; memcached keys cannot",
			f->key);
	if (parse_real("--flash share", colon + 1, 0, 1, "--flash flash:1:0.24",
		       &f->share))
		return 2;
	cfg->nflash++;
	return 0;
}

static int parse_mix(struct ld_cfg *cfg, const char *s)
{
	char buf[256], *save = NULL, *tok;
	__u64 total = 0;

	if (strlen(s) >= sizeof(buf))
		return refuse(
			"--mix is too long; give e.g. --mix get=80,mget=10,set=10");
	strcpy(buf, s);
	memset(cfg->mix, 0, sizeof(cfg->mix));
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		unsigned long long w;
		char err[KS_ERRLEN];
		int op;

		if (!eq)
			return refuse(
				"--mix item '%s' is not OP=WEIGHT; give e.g. --mix get=80,mget=10,set=10",
				tok);
		*eq = 0;
		for (op = 0; op < LD_NOPS; op++)
			if (!strcmp(tok, op_names[op]))
				break;
		if (op == LD_NOPS)
			return refuse(
				"--mix op '%s' is unknown; use get, mget or set",
				tok);
		if (ks_parse_uint("--mix weight", eq + 1, 0, 1000000, &w, err,
				  sizeof(err)))
			return refuse("%s", err);
		cfg->mix[op] = (__u32)w;
		total += w;
	}
	if (!total)
		return refuse(
			"--mix '%s' has no weight above 0; give e.g. --mix get=90,set=10",
			s);
	return 0;
}

enum {
	O_SERVER = 256,
	O_SHARDS,
	O_SHARDS_FILE,
	O_DIST,
	O_VNODES,
	O_PROTO,
	O_CONNS,
	O_TIMEOUT,
	O_KEYS,
	O_ZIPF,
	O_FLASH,
	O_PREFIX,
	O_MIX,
	O_MGET,
	O_VALUE,
	O_SEED,
	O_DURATION,
	O_COUNT,
	O_RATE,
	O_JSON,
	O_EXACT,
	O_PRELOAD,
};

static const struct option long_opts[] = {
	{ "server", required_argument, NULL, O_SERVER },
	{ "shards", required_argument, NULL, O_SHARDS },
	{ "shards-file", required_argument, NULL, O_SHARDS_FILE },
	{ "distribution", required_argument, NULL, O_DIST },
	{ "vnodes", required_argument, NULL, O_VNODES },
	{ "proto", required_argument, NULL, O_PROTO },
	{ "conns", required_argument, NULL, O_CONNS },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ "keys", required_argument, NULL, O_KEYS },
	{ "zipf", required_argument, NULL, O_ZIPF },
	{ "flash", required_argument, NULL, O_FLASH },
	{ "key-prefix", required_argument, NULL, O_PREFIX },
	{ "mix", required_argument, NULL, O_MIX },
	{ "mget-size", required_argument, NULL, O_MGET },
	{ "value-size", required_argument, NULL, O_VALUE },
	{ "seed", required_argument, NULL, O_SEED },
	{ "duration", required_argument, NULL, O_DURATION },
	{ "count", required_argument, NULL, O_COUNT },
	{ "rate", required_argument, NULL, O_RATE },
	{ "json", no_argument, NULL, O_JSON },
	{ "exact-counts", required_argument, NULL, O_EXACT },
	{ "preload", no_argument, NULL, O_PRELOAD },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* A whole-number option; its name comes from the table. */
static int uint_opt(int id, const char *s, unsigned long long min,
		    unsigned long long max, unsigned long long *out)
{
	char what[40], err[KS_ERRLEN];
	const struct option *o;

	for (o = long_opts; o->name && o->val != id; o++)
		;
	snprintf(what, sizeof(what), "--%s", o->name ? o->name : "?");
	if (ks_parse_uint(what, s, min, max, out, err, sizeof(err)))
		return refuse("%s", err);
	return 0;
}

static int check(struct ld_cfg *cfg)
{
	double share = 0;
	size_t longest;
	char digits[16];
	int i;

	if (!cfg->server && !cfg->ring.list && !cfg->ring.file)
		return refuse(
			"no target given; give --server HOST:PORT, --shards LIST or --shards-file FILE");
	if (!!cfg->server + !!cfg->ring.list + !!cfg->ring.file > 1)
		return refuse(
			"more than one of --server, --shards, --shards-file given; give only one");
	if (!cfg->duration_ms && !cfg->count)
		return refuse(
			"the run is unbounded; give --duration SEC, --count N or both");
	for (i = 0; i < cfg->nflash; i++)
		share += cfg->flash[i].share;
	if (share > 0.999)
		return refuse(
			"--flash shares add up to %.3f; keep them below 1 so Zipf keys get some requests",
			share);
	snprintf(digits, sizeof(digits), "%u", cfg->keys);
	longest = strlen(cfg->prefix) + strlen(digits);
	if (longest > KS_MAX_KEY_LEN)
		return refuse(
			"--key-prefix makes keys of %zu bytes; memcached keys are at most %d",
			longest, KS_MAX_KEY_LEN);
	if (strpbrk(cfg->prefix, " \t\r\n"))
		return refuse(
			"--key-prefix has white space; memcached keys cannot");
	if (cfg->mode == LD_MODE_UDP && cfg->mix[LD_SET] &&
	    cfg->value_size + KS_MAX_KEY_LEN + 64 > LD_UDP_MAX_REQ)
		return refuse(
			"--value-size %u does not fit one UDP datagram; use --proto udp-gets or a smaller value",
			cfg->value_size);
	return 0;
}

int ld_parse_args(int argc, char **argv, struct ld_cfg *cfg)
{
	unsigned long long v;
	char err[KS_ERRLEN];
	int c, rc;

	memset(cfg, 0, sizeof(*cfg));
	cfg->ring.dist = KS_DIST_KETAMA;
	cfg->ring.flag = "--shards";
	cfg->ring.file_flag = "--shards-file";
	cfg->keys = 100000;
	cfg->zipf = 0.99;
	cfg->seed = 1;
	cfg->mix[LD_GET] = 90;
	cfg->mix[LD_SET] = 10;
	cfg->mget_size = 10;
	cfg->value_size = 32;
	cfg->conns = 4;
	cfg->timeout_ms = 1000;
	cfg->mode = LD_MODE_TCP;
	cfg->prefix = "key:";

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
		rc = 0;
		switch (c) {
		case 'h':
			ld_usage(stdout);
			return 1;
		case O_SERVER:
			cfg->server = optarg;
			break;
		case O_SHARDS:
			cfg->ring.list = optarg;
			break;
		case O_SHARDS_FILE:
			cfg->ring.file = optarg;
			break;
		case O_DIST:
			if (ks_dist_parse(optarg, &cfg->ring.dist, err,
					  sizeof(err)))
				return refuse("%s", err);
			break;
		case O_VNODES:
			rc = uint_opt(c, optarg, 1, 10000, &v);
			cfg->ring.vnodes = (__u32)v;
			break;
		case O_PROTO:
			if (!strcmp(optarg, "tcp"))
				cfg->mode = LD_MODE_TCP;
			else if (!strcmp(optarg, "udp"))
				cfg->mode = LD_MODE_UDP;
			else if (!strcmp(optarg, "udp-gets"))
				cfg->mode = LD_MODE_UDP_GETS;
			else
				return refuse(
					"--proto '%s' is unknown; use tcp, udp or udp-gets",
					optarg);
			break;
		case O_CONNS:
			rc = uint_opt(c, optarg, 1, LD_MAX_CONNS, &v);
			cfg->conns = (__u32)v;
			break;
		case O_TIMEOUT:
			if (ks_parse_seconds("--timeout", optarg, 1, 60000,
					     &cfg->timeout_ms, err,
					     sizeof(err)))
				return refuse("%s", err);
			break;
		case O_KEYS:
			rc = uint_opt(c, optarg, 1, KS_ZIPF_MAX_KEYS, &v);
			cfg->keys = (__u32)v;
			break;
		case O_ZIPF:
			rc = parse_real("--zipf", optarg, 0, 10, "--zipf 0.99",
					&cfg->zipf);
			break;
		case O_FLASH:
			rc = parse_flash(cfg, optarg);
			break;
		case O_PREFIX:
			cfg->prefix = optarg;
			break;
		case O_MIX:
			rc = parse_mix(cfg, optarg);
			break;
		case O_MGET:
			rc = uint_opt(c, optarg, 2, LD_MAX_MGET, &v);
			cfg->mget_size = (__u32)v;
			break;
		case O_VALUE:
			rc = uint_opt(c, optarg, 1, LD_MAX_VALUE, &v);
			cfg->value_size = (__u32)v;
			break;
		case O_SEED:
			rc = uint_opt(c, optarg, 0, ~0ULL, &cfg->seed);
			break;
		case O_DURATION:
			if (ks_parse_seconds("--duration", optarg, 1, 3600000,
					     &cfg->duration_ms, err,
					     sizeof(err)))
				return refuse("%s", err);
			break;
		case O_COUNT:
			rc = uint_opt(c, optarg, 1, 1000000000, &cfg->count);
			break;
		case O_RATE:
			rc = uint_opt(c, optarg, 0, 100000000, &cfg->rate);
			break;
		case O_JSON:
			cfg->json = 1;
			break;
		case O_EXACT:
			cfg->exact_file = optarg;
			break;
		case O_PRELOAD:
			cfg->preload = 1;
			break;
		case ':':
			return refuse("%s needs a value; see ks_load --help",
				      argv[optind - 1]);
		default:
			return refuse("unknown option '%s'; see ks_load --help",
				      argv[optind - 1]);
		}
		if (rc)
			return 2;
	}
	if (optind < argc)
		return refuse(
			"unexpected argument '%s'; options only, see ks_load --help",
			argv[optind]);
	return check(cfg);
}
