// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * clients_compat.c - keysteer's rings of more clients against the clients'
 * own code, key by key:
 *  - libmemcached's unweighted ketama and its default modula (both with
 *    one_at_a_time), in process: memcached_generate_hash() with the
 *    behaviours pylibmc's "ketama" and php-memcached's
 *    DISTRIBUTION_CONSISTENT set, and with none (their default);
 *  - Ruby's dalli: its own Dalli::Ring (tests/compat/dalli_ref.rb);
 *  - spymemcached: its own KetamaNodeLocator in both key formats
 *    (tests/compat/SpyRef.java, compiled here against Debian's jar).
 * The same server lists (1 to 100 servers; weights, ports and DNS names
 * where the client has them) and the same keys (short, long up to 250
 * bytes, UTF-8, binary where the client takes bytes) for every client.
 * KS_COMPAT_FULL=1 (make compat-full) checks 5,000 keys a list, the tier
 * 500.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <libmemcached/memcached.h>
#include "ktest.h"
#include "clients_compat.h"
#include "core/ring.h"
#include "core/shards.h"

#define NLISTS    24
#define KEYS_FULL 5000
#define KEYS_TIER 500

static const __u32 list_sizes[NLISTS] = { 1,  2,  3,  4,  5,  7,  8,   10,
					  13, 16, 20, 25, 31, 47, 50,  55,
					  61, 64, 71, 80, 94, 99, 100, 100 };

static __u64 cc_state;

static __u32 cc_rand(void)
{
	/* xorshift64*, seeded per list: a failure reproduces */
	cc_state ^= cc_state >> 12;
	cc_state ^= cc_state << 25;
	cc_state ^= cc_state >> 27;
	return (__u32)((cc_state * 0x2545f4914f6cdd1dULL) >> 32);
}

/* What a list may have: the client's features. */
enum {
	CC_WEIGHTS = 1,
	CC_NAMES = 2,
	CC_BINARY = 4
};

/*
 * List li: weights 1..10 or 1..1000 on two lists in three (when the
 * client has weights), a random port on every other list, DNS names
 * (cache-i.rackj.example, whose addresses the hosts file below gives) on
 * every fourth. IPv4 literals come from 10.0.0.0/8, names from
 * 10.200.0.0/16, so a literal never has a name.
 */
static void make_list(__u32 li, int feat, struct ks_shards *s)
{
	__u32 i;

	memset(s, 0, sizeof(*s));
	cc_state = 0x9e3779b97f4a7c15ULL ^ ((__u64)li << 32 | (__u32)feat);
	s->self = KS_NO_SHARD;
	snprintf(s->source, sizeof(s->source), "list %u", li);
	s->n = list_sizes[li];
	s->v = calloc(s->n, sizeof(*s->v));
	for (i = 0; i < s->n; i++) {
		struct ks_shard *sh = &s->v[i];

		if ((feat & CC_NAMES) && li % 4 == 3)
			snprintf(sh->host, sizeof(sh->host),
				 "cache-%u.rack%u.example", i, i % 7);
		else
			snprintf(sh->host, sizeof(sh->host), "10.%u.%u.%u", li,
				 i / 200, 1 + i % 200);
		sh->port = li % 2 ? (__u16)(1024 + cc_rand() % 60000)
				  : KS_MEMCACHED_PORT;
		sh->weight = 1;
		if ((feat & CC_WEIGHTS) && li % 3 == 1)
			sh->weight = 1 + cc_rand() % 10;
		else if ((feat & CC_WEIGHTS) && li % 3 == 2)
			sh->weight = 1 + cc_rand() % 1000;
		sh->line = i + 1;
	}
}

/* The address a name of make_list resolves to in the hosts file. */
static void name_addr(__u32 i, char *buf, size_t len)
{
	snprintf(buf, len, "10.200.%u.%u", i / 200, 1 + i % 200);
}

/*
 * Key i of a list: short ASCII, UTF-8 words, random printable lengths
 * 1..250, exactly 250, MD5's block edges, and (CC_BINARY) any bytes but
 * 0, whitespace and control characters left in.
 */
static size_t make_key(__u32 i, int feat, char *key)
{
	static const char *const utf8[] = { "ключ",      "キー", "clé",
					    "Schlüssel", "🔑",    "日本語" };
	static const size_t edges[] = { 1, 55, 56, 63, 64, 119, 120, 247 };
	size_t len, j;

	switch (i % 6) {
	case 0:
		return (size_t)snprintf(key, 251, "user:%u", i);
	case 1:
		return (size_t)snprintf(key, 251, "%s:%u:%s", utf8[i % 6], i,
					utf8[(i / 6) % 6]);
	case 2:
		len = edges[(i / 6) % 8];
		break;
	case 3:
		len = 250;
		break;
	case 4:
		if (feat & CC_BINARY) {
			len = 1 + cc_rand() % 250;
			for (j = 0; j < len; j++)
				key[j] = (char)(1 + cc_rand() % 255);
			key[len] = '\0';
			return len;
		}
		/* fallthrough */
	default:
		len = 1 + cc_rand() % 250;
		break;
	}
	for (j = 0; j < len; j++)
		key[j] = (char)('!' + cc_rand() % 94);
	key[len] = '\0';
	return len;
}

static __u32 keys_per_list(void)
{
	const char *full = getenv("KS_COMPAT_FULL");

	return full && *full == '1' ? KEYS_FULL : KEYS_TIER;
}

/* ---- libmemcached, in process ---- */

/* How the clients set libmemcached up. */
enum libmc_setup {
	LIBMC_KETAMA,     /* pylibmc {"ketama": True}: BEHAVIOR_KETAMA */
	LIBMC_CONSISTENT, /* php-memcached OPT_DISTRIBUTION=CONSISTENT */
	LIBMC_DEFAULT,    /* neither: modula */
};

static memcached_st *libmc_client(const struct ks_shards *s,
				  enum libmc_setup how)
{
	memcached_st *m = memcached_create(NULL);
	__u32 i;

	if (!m)
		return NULL;
	if (how == LIBMC_KETAMA)
		memcached_behavior_set(m, MEMCACHED_BEHAVIOR_KETAMA, 1);
	else if (how == LIBMC_CONSISTENT)
		memcached_behavior_set(m, MEMCACHED_BEHAVIOR_DISTRIBUTION,
				       MEMCACHED_DISTRIBUTION_CONSISTENT);
	for (i = 0; i < s->n; i++)
		if (memcached_server_add(m, s->v[i].host, s->v[i].port) !=
		    MEMCACHED_SUCCESS) {
			memcached_free(m);
			return NULL;
		}
	return m;
}

static void libmc_case(const char *what, const char *label,
		       enum libmc_setup how, enum ks_dist dist)
{
	__u32 nkeys = keys_per_list(), li, i, total = 0, bad = 0;
	char key[256], err[512];

	kt_begin(what);
	for (li = 0; li < NLISTS; li++) {
		struct ks_shards s;
		struct ks_ring r;
		memcached_st *m;

		make_list(li, CC_NAMES, &s);
		m = libmc_client(&s, how);
		CHECK(m != NULL, "list %u: libmemcached refused it", li);
		if (!m || ks_ring_build(&r, &s, dist, 0, 1, err, sizeof(err))) {
			CHECK(m == NULL, "list %u: %s", li, err);
			if (m)
				memcached_free(m);
			ks_shards_free(&s);
			continue;
		}
		for (i = 0; i < nkeys; i++) {
			size_t len = make_key(i, CC_BINARY, key);
			__u32 want = memcached_generate_hash(m, key, len);
			__u32 got = ks_ring_lookup(&r, key, len);

			total++;
			if (got != want && bad++ < 3)
				CHECK(0,
				      "list %u (%u servers) key %u (%zu bytes): libmemcached %u, keysteer %u",
				      li, s.n, i, len, want, got);
		}
		ks_ring_free(&r);
		memcached_free(m);
		ks_shards_free(&s);
	}
	CHECK(total >= NLISTS * nkeys, "only %u keys checked", total);
	CHECK_EQ(bad, 0);
	printf("# compat: libmemcached %s (keysteer %s): %u keys over %u server lists, %u disagreements\n",
	       label, ks_dist_name(dist), total, NLISTS, bad);
	kt_end();
}

/* libmemcached switches to the weighted ring when a server has a weight:
 * keysteer's unweighted ring refuses such a list rather than guess. */
static void libmc_weights_refused(void)
{
	struct ks_shards s;
	struct ks_ring r;
	char err[512];

	kt_begin("compat_ketama_plain_refuses_weights");
	make_list(1, CC_WEIGHTS, &s);
	CHECK(ks_ring_build(&r, &s, KS_DIST_KETAMA_PLAIN, 0, 1, err,
			    sizeof(err)) < 0,
	      "a weighted list was taken");
	CHECK(strstr(err, "libmemcached-weighted") != NULL, "message: %s", err);
	ks_shards_free(&s);
	kt_end();
}

/* ---- oracles in other languages, over a pipe of requests ---- */

struct oracle {
	const char *test;  /* test name */
	const char *label; /* in the figure line */
	const char *cmd;   /* reads requests on stdin, answers on stdout */
	enum ks_dist dist;
	int feat;
	/* the shard name the client's node string needs, or NULL */
	void (*name_of)(struct ks_shard *sh, __u32 i);
};

/* spymemcached's SPYMEMCACHED format prints a resolved name as
 * "name/ip:port": what an operator gives as the shard's name. */
static void spy_name(struct ks_shard *sh, __u32 i)
{
	char ip[32];

	if (strncmp(sh->host, "cache-", 6))
		return;
	name_addr(i, ip, sizeof(ip));
	snprintf(sh->name, sizeof(sh->name), "%.40s/%s:%u", sh->host, ip,
		 sh->port);
}

static int write_requests(const struct oracle *o, const char *path)
{
	FILE *f = fopen(path, "w");
	__u32 nkeys = keys_per_list(), li, i;
	char key[256];
	size_t len, j;

	if (!f)
		return -1;
	for (li = 0; li < NLISTS; li++) {
		struct ks_shards s;

		make_list(li, o->feat, &s);
		fprintf(f, "ring\n");
		for (i = 0; i < s.n; i++)
			fprintf(f, "server %s:%u:%u\n", s.v[i].host,
				s.v[i].port, s.v[i].weight);
		for (i = 0; i < nkeys; i++) {
			len = make_key(i, o->feat, key);
			fprintf(f, "key ");
			for (j = 0; j < len; j++)
				fprintf(f, "%02x", (unsigned char)key[j]);
			fprintf(f, "\n");
		}
		ks_shards_free(&s);
	}
	return fclose(f);
}

static void oracle_case(const struct oracle *o, const char *dir)
{
	__u32 nkeys = keys_per_list(), li, i, total = 0, bad = 0, foil = 0;
	char req[512], cmd[1536], err[512], key[256];
	FILE *in = NULL;

	kt_begin(o->test);
	snprintf(req, sizeof(req), "%s/%s.req", dir, o->test);
	CHECK(write_requests(o, req) == 0, "cannot write %s", req);
	snprintf(cmd, sizeof(cmd), "%s < %s", o->cmd, req);
	in = popen(cmd, "r");
	CHECK(in != NULL, "cannot run %s", o->cmd);
	for (li = 0; in && li < NLISTS; li++) {
		struct ks_shards s;
		struct ks_ring r, v = {};
		int built;

		make_list(li, o->feat, &s);
		for (i = 0; o->name_of && i < s.n; i++)
			o->name_of(&s.v[i], i);
		built = !ks_ring_build(&r, &s, o->dist, 0, 1, err, sizeof(err));
		CHECK(built, "list %u: %s", li, err);
		/* the foil: another ring must disagree, or the oracle says
		 * nothing (a check that could not fail) */
		built &= !ks_ring_build(&v, &s, KS_DIST_VNODE, 0, 1, err,
					sizeof(err));
		for (i = 0; i < nkeys; i++) {
			size_t len = make_key(i, o->feat, key);
			unsigned want;
			__u32 got;

			if (fscanf(in, "%u", &want) != 1) {
				CHECK(0, "%s answered only %u keys", o->label,
				      total);
				break;
			}
			total++;
			got = built ? ks_ring_lookup(&r, key, len)
				    : KS_NO_SHARD;
			foil += built && ks_ring_lookup(&v, key, len) != want;
			if (got != want && bad++ < 3)
				CHECK(0,
				      "list %u (%u servers) key %u (%zu bytes): %s %u, keysteer %u",
				      li, s.n, i, len, o->label, want, got);
		}
		ks_ring_free(&r);
		ks_ring_free(&v);
		ks_shards_free(&s);
	}
	if (in)
		CHECK(pclose(in) == 0, "%s failed", o->cmd);
	unlink(req);
	CHECK(total == NLISTS * nkeys, "%u of %u keys answered", total,
	      NLISTS * nkeys);
	CHECK_EQ(bad, 0);
	CHECK(foil > total / 2, "a vnode ring disagrees on only %u of %u keys",
	      foil, total);
	printf("# compat: %s: %u keys over %u server lists (1 to 100 servers), %u disagreements (vnode in its place: %u)\n",
	       o->label, total, NLISTS, bad, foil);
	kt_end();
}

#define DALLI_REF "tests/compat/dalli_ref.rb"
#define SPY_REF   "tests/compat/SpyRef.java"
#define SPY_JAR   "/usr/share/java/spymemcached.jar"

static void dalli_cases(const char *dir)
{
	static const struct oracle o = { "compat_dalli_ring",
					 "dalli Ring",
					 "/usr/bin/ruby " DALLI_REF,
					 KS_DIST_DALLI,
					 CC_WEIGHTS | CC_NAMES | CC_BINARY,
					 NULL };

	if (system("/usr/bin/ruby -e 'require \"dalli\"' 2>/dev/null") ||
	    access(DALLI_REF, R_OK)) {
		kt_begin(o.test);
		kt_failf(
			__FILE__, __LINE__,
			"needs /usr/bin/ruby with ruby-dalli and %s (make deps; run from the repository root)",
			DALLI_REF);
		kt_end();
		return;
	}
	oracle_case(&o, dir);
}

/* The hosts file the JVM resolves make_list's names with (no DNS). */
static int write_hosts(const char *path)
{
	FILE *f = fopen(path, "w");
	char ip[32];
	__u32 i;

	if (!f)
		return -1;
	for (i = 0; i < 100; i++) {
		name_addr(i, ip, sizeof(ip));
		fprintf(f, "%s cache-%u.rack%u.example\n", ip, i, i % 7);
	}
	return fclose(f);
}

/*
 * Where SpyRef.class goes: beside this program (build/tests/spyref/), so
 * javac (~2 s of CPU, 4 s on a loaded machine) runs only when SpyRef.java
 * is newer than the class; dir (removed after the run) when that
 * directory cannot be made.
 */
static void spy_classes(const char *dir, char *out, size_t size)
{
	char exe[400];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	exe[n > 0 ? n : 0] = '\0';
	slash = strrchr(exe, '/');
	if (n > 0 && slash) {
		*slash = '\0';
		snprintf(out, size, "%s/spyref", exe);
		if (!mkdir(out, 0755) || errno == EEXIST)
			return;
	}
	snprintf(out, size, "%s", dir);
}

/* SpyRef.class in classes is newer than SpyRef.java and the jar */
static int spy_class_fresh(const char *classes)
{
	struct stat src, jar, cls;
	char path[600];

	snprintf(path, sizeof(path), "%s/SpyRef.class", classes);
	return !stat(SPY_REF, &src) && !stat(SPY_JAR, &jar) &&
	       !stat(path, &cls) && cls.st_mtim.tv_sec > src.st_mtim.tv_sec &&
	       cls.st_mtim.tv_sec > jar.st_mtim.tv_sec;
}

static void spy_cases(const char *dir)
{
	struct oracle o[2] = {
		{ "compat_spymemcached_ketama",
		  "spymemcached KetamaNodeLocator (SPYMEMCACHED)", NULL,
		  KS_DIST_SPY, CC_WEIGHTS | CC_NAMES, spy_name },
		{ "compat_spymemcached_libmemcached_format",
		  "spymemcached KetamaNodeLocator (LIBMEMCACHED)", NULL,
		  KS_DIST_SPY_LIBMC, CC_WEIGHTS | CC_NAMES, NULL },
	};
	char cmd[2][1536], hosts[512], classes[512];
	int i;

	spy_classes(dir, classes, sizeof(classes));
	snprintf(cmd[0], sizeof(cmd[0]),
		 "javac -d %s -cp " SPY_JAR " " SPY_REF " >/dev/null", classes);
	/* A missing package and a program that does not compile are both
	 * failures: the suite installs the first, the second is a bug here. */
	if (access(SPY_JAR, R_OK) || access(SPY_REF, R_OK) ||
	    system("command -v javac >/dev/null")) {
		for (i = 0; i < 2; i++) {
			kt_begin(o[i].test);
			kt_failf(
				__FILE__, __LINE__,
				"needs javac (openjdk-17-jdk-headless), libspymemcached-java (" SPY_JAR
				") and %s (make deps; run from the repository root)",
				SPY_REF);
			kt_end();
		}
		return;
	}
	if (!spy_class_fresh(classes) && system(cmd[0])) {
		for (i = 0; i < 2; i++) {
			kt_begin(o[i].test);
			kt_failf(__FILE__, __LINE__, "%s failed", cmd[0]);
			kt_end();
		}
		return;
	}
	snprintf(hosts, sizeof(hosts), "%s/hosts", dir);
	if (write_hosts(hosts)) {
		kt_begin("compat_spymemcached_hosts_file");
		CHECK(0, "cannot write %s", hosts);
		kt_end();
		return;
	}
	for (i = 0; i < 2; i++) {
		snprintf(cmd[i], sizeof(cmd[i]),
			 "java -Djdk.net.hosts.file=%s -cp " SPY_JAR
			 ":%s SpyRef %s",
			 hosts, classes, i ? "LIBMEMCACHED" : "SPYMEMCACHED");
		o[i].cmd = cmd[i];
		oracle_case(&o[i], dir);
	}
	unlink(hosts);
}

void ks_clients_compat(void)
{
	char dir[] = "/tmp/ks_clients_compat.XXXXXX";
	char rm[128];

	libmc_case("compat_libmemcached_ketama_plain", "BEHAVIOR_KETAMA",
		   LIBMC_KETAMA, KS_DIST_KETAMA_PLAIN);
	libmc_case("compat_libmemcached_consistent", "DISTRIBUTION_CONSISTENT",
		   LIBMC_CONSISTENT, KS_DIST_KETAMA_PLAIN);
	libmc_case("compat_libmemcached_default_modula", "default",
		   LIBMC_DEFAULT, KS_DIST_MODULA_OAAT);
	libmc_weights_refused();
	if (!mkdtemp(dir)) {
		kt_begin("compat_clients_tmpdir");
		CHECK(0, "cannot make a directory in /tmp");
		kt_end();
		return;
	}
	dalli_cases(dir);
	spy_cases(dir);
	snprintf(rm, sizeof(rm), "rm -rf %s", dir);
	if (system(rm))
		fprintf(stderr, "# cannot remove %s\n", dir);
}
