// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The compat tier: keysteer's ring builder against a real client,
 * Debian's libmemcached. For each server list, libmemcached is set up as
 * PHP's OPT_LIBKETAMA_COMPATIBLE sets it (MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED:
 * weighted ketama, MD5 key hash), no server runs, and
 * memcached_generate_hash() names the server of each key; keysteer's
 * 'ketama' ring must name the same index for every key. Also checked: the
 * 'twemproxy-md5' ring of servers without names is libmemcached's ring
 * (nutcracker names points as libmemcached does and computes the same
 * point counts), so nutcracker's md5 variant is held to a real client too.
 * twemproxy itself is the oracle of its rings: keys routed through a real
 * nutcracker to real memcached processes (tests/compat/nutcracker_ref.py)
 * for every distribution, key hash and hash_tag it has.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <libmemcached/memcached.h>
#include "ktest.h"
#include "clients_compat.h"
#include "core/ring.h"
#include "core/shards.h"

#define KEYS_PER_CONFIG 4000

static __u64 rng_state = 0x9e3779b97f4a7c15ULL;

static __u64 rnd(void)
{
	/* xorshift64*: deterministic, so a failure reproduces */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

/*
 * Key i of a config: short ASCII, UTF-8, lengths around MD5's block
 * edges (55, 56, 63, 64, 119, 120, ...), and 250-byte keys.
 */
static size_t make_key(__u32 i, char *key)
{
	static const char *const utf8[] = {
		"ключ", "キー", "clé", "Schlüssel", "🔑", "mañana", "日本語",
	};
	static const size_t edges[] = { 1,   55,  56,  57,  63,  64,
					65,  119, 120, 121, 183, 184,
					191, 192, 247, 248, 249, 250 };
	size_t len, j;

	switch (i % 5) {
	case 0:
		return (size_t)snprintf(key, 251, "user:%u", i);
	case 1:
		return (size_t)snprintf(key, 251, "%s:%u:%s", utf8[i % 7], i,
					utf8[(i / 7) % 7]);
	case 2:
		len = edges[(i / 5) % (sizeof(edges) / sizeof(edges[0]))];
		break;
	case 3:
		len = 250;
		break;
	default:
		len = 1 + rnd() % 250;
		break;
	}
	for (j = 0; j < len; j++) /* printable, as memcached keys are */
		key[j] = (char)('!' + rnd() % 94);
	key[len] = '\0';
	return len;
}

struct config {
	const char *what;
	__u32 n;
	int weights;   /* 0 all 1; 1 random 1..10; 2 random 1..1000000 */
	int ports;     /* 0 all 11211; 1 random; 2 mixed */
	int hostnames; /* 0 IPv4 literals; 1 DNS names */
};

static void make_shards(const struct config *c, struct ks_shards *s)
{
	__u32 i;

	memset(s, 0, sizeof(*s));
	s->self = KS_NO_SHARD;
	snprintf(s->source, sizeof(s->source), "test");
	s->n = c->n;
	s->v = calloc(c->n, sizeof(*s->v));
	for (i = 0; i < c->n; i++) {
		struct ks_shard *sh = &s->v[i];

		if (c->hostnames)
			snprintf(sh->host, sizeof(sh->host),
				 "cache-%u.rack%u.example.com", i, i % 7);
		else
			snprintf(sh->host, sizeof(sh->host), "10.%u.%u.%u",
				 i / 250, i % 250, 1 + i % 3);
		sh->port = KS_MEMCACHED_PORT;
		if (c->ports == 1 || (c->ports == 2 && (i & 1)))
			sh->port = (__u16)(1024 + rnd() % 64000);
		sh->weight = 1;
		if (c->weights == 1)
			sh->weight = (__u32)(1 + rnd() % 10);
		else if (c->weights == 2)
			sh->weight = (__u32)(1 + rnd() % KS_SHARD_WEIGHT_MAX);
		sh->line = i + 1;
	}
}

static memcached_st *make_client(const struct ks_shards *s, char *why,
				 size_t len)
{
	memcached_st *m = memcached_create(NULL);
	__u32 i;

	if (!m) {
		snprintf(why, len, "memcached_create failed");
		return NULL;
	}
	/* The brief's order: ketama, then weighted (which also picks MD5;
	 * setting the distribution after it would turn weighting off). */
	memcached_behavior_set(m, MEMCACHED_BEHAVIOR_DISTRIBUTION,
			       MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA);
	memcached_behavior_set(m, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1);
	for (i = 0; i < s->n; i++) {
		memcached_return_t rc = memcached_server_add_with_weight(
			m, s->v[i].host, s->v[i].port, s->v[i].weight);

		if (rc != MEMCACHED_SUCCESS) {
			snprintf(why, len, "adding %s:%u: %s", s->v[i].host,
				 s->v[i].port, memcached_strerror(m, rc));
			memcached_free(m);
			return NULL;
		}
	}
	if (memcached_behavior_get(m, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED) !=
		    1 ||
	    memcached_behavior_get(m, MEMCACHED_BEHAVIOR_HASH) !=
		    MEMCACHED_HASH_MD5) {
		snprintf(why, len,
			 "libmemcached is not in weighted ketama with MD5");
		memcached_free(m);
		return NULL;
	}
	return m;
}

static __u64 total_keys, total_configs, total_mismatch;

static void run_config(const struct config *c)
{
	struct ks_shards s;
	struct ks_ring ketama, tw;
	memcached_st *m;
	char err[512], key[256];
	__u32 i, bad = 0, bad_tw = 0;
	int rc;

	kt_begin(c->what);
	make_shards(c, &s);
	m = make_client(&s, err, sizeof(err));
	if (!m) {
		CHECK(0, "%s", err);
		ks_shards_free(&s);
		kt_end();
		return;
	}
	rc = ks_ring_build(&ketama, &s, KS_DIST_KETAMA, 0, 1, err, sizeof(err));
	CHECK(rc == 0, "ketama build: %s", err);
	rc |= ks_ring_build(&tw, &s, KS_DIST_TWEMPROXY_MD5, 0, 1, err,
			    sizeof(err));
	CHECK(rc == 0, "twemproxy-md5 build: %s", err);
	for (i = 0; !rc && i < KEYS_PER_CONFIG; i++) {
		size_t len = make_key(i, key);
		__u32 want = memcached_generate_hash(m, key, len);
		__u32 got = ks_ring_lookup(&ketama, key, len);
		__u32 got_tw = ks_ring_lookup(&tw, key, len);

		if (got != want && bad++ < 2)
			CHECK(0,
			      "key '%.30s' (%zu bytes): libmemcached %u, keysteer %u",
			      key, len, want, got);
		if (got_tw != want && bad_tw++ < 2)
			CHECK(0,
			      "key '%.30s' (%zu bytes): libmemcached %u, twemproxy-md5 %u",
			      key, len, want, got_tw);
	}
	CHECK(bad == 0, "%u of %u keys differ from libmemcached", bad,
	      KEYS_PER_CONFIG);
	CHECK(bad_tw == 0, "%u of %u twemproxy-md5 keys differ", bad_tw,
	      KEYS_PER_CONFIG);
	total_keys += KEYS_PER_CONFIG;
	total_configs++;
	total_mismatch += bad;
	ks_ring_free(&ketama);
	ks_ring_free(&tw);
	memcached_free(m);
	ks_shards_free(&s);
	kt_end();
}

/*
 * Ties: two servers' points with the same value. libmemcached sorts them
 * by server index and its search lands on the first, so the lower index
 * owns the arc that ends at the tied value. A 100-server ring has 16,000
 * points, a tie about every 30 rings: build rings of random servers until
 * one has a tie, then find keys whose hash falls in that arc.
 */
static void tie_test(void)
{
	struct config c = { .n = 100 };
	char err[512], key[64];
	__u32 tries, i, found = 0, hits = 0, bad = 0;

	kt_begin("compat_ketama_tie_lower_index_wins");
	for (tries = 0; tries < 2000 && !found; tries++) {
		struct ks_shards s;
		struct ks_ring r;
		const struct ks_ring_point *p;
		memcached_st *m;
		__u32 lo = 0, hi = 0;

		make_shards(&c, &s);
		for (i = 0; i < s.n;
		     i++) /* random hosts: a new ring each try */
			snprintf(s.v[i].host, sizeof(s.v[i].host),
				 "10.%u.%u.%u", (__u32)(rnd() % 256),
				 (__u32)(rnd() % 256), (__u32)(rnd() % 256));
		if (ks_ring_build(&r, &s, KS_DIST_KETAMA, 0, 1, err,
				  sizeof(err))) {
			CHECK(0, "build: %s", err);
			ks_shards_free(&s);
			break;
		}
		p = r.half->points;
		for (i = 1; i < r.half->meta.npoints && !found; i++) {
			if (p[i].value == p[i - 1].value &&
			    p[i].shard != p[i - 1].shard && i >= 2) {
				found = 1;
				lo = p[i - 2].value;
				hi = p[i].value;
				CHECK(p[i - 1].shard < p[i].shard,
				      "tie sorted higher index first");
			}
		}
		if (found) {
			m = make_client(&s, err, sizeof(err));
			CHECK(m != NULL, "%s", err);
			/* keys whose hash is in (lo, hi]: the tie winner's arc */
			for (i = 0; m && i < 50000000 && hits < 20; i++) {
				size_t len = (size_t)snprintf(key, sizeof(key),
							      "tie:%u", i);
				__u32 h = ks_ring_hash(&r, key, len);
				__u32 want, got;

				if (!(h > lo && h <= hi))
					continue;
				hits++;
				want = memcached_generate_hash(m, key, len);
				got = ks_ring_lookup(&r, key, len);
				if (want != got && bad++ < 2)
					CHECK(0,
					      "key %s on a tie: libmemcached %u, keysteer %u",
					      key, want, got);
			}
			if (m)
				memcached_free(m);
			CHECK(hits > 0, "no key found in the tied arc");
			total_keys += hits;
			total_mismatch += bad;
		}
		ks_ring_free(&r);
		ks_shards_free(&s);
	}
	if (!found)
		kt_failf(__FILE__, __LINE__,
			 "no tie in %u random 100-server rings: nothing tested",
			 tries);
	kt_end();
}

/* A reference's "ring" (a new server list) or "server LINE" line into
 * text (64 KiB); 1 when it was one of those. */
static int server_list_line(const char *line, char *text, size_t *off)
{
	if (!strncmp(line, "ring ", 5)) {
		*off = 0;
		text[0] = '\0';
		return 1;
	}
	if (!strncmp(line, "server ", 7)) {
		*off += (size_t)snprintf(text + *off, (1 << 16) - *off, "%s",
					 line + 7);
		return 1;
	}
	return 0;
}

static int unhex(const char *hex, char *out, size_t cap)
{
	size_t n = 0;
	unsigned int b;

	while (hex[0] && hex[1] && hex[0] != '\n' && n < cap) {
		if (sscanf(hex, "%2x", &b) != 1)
			return -1;
		out[n++] = (char)b;
		hex += 2;
	}
	return (int)n;
}

#define NUTCRACKER_REF "tests/compat/nutcracker_ref.py"

/* One pool of nutcracker_ref.py: its ring, and the keys it placed. */
struct nut_pool {
	enum ks_dist dist;
	struct ks_ring_key key;
	char what[96]; /* "ketama/crc32/{}" */
};

/* "pool DIST HASH TAG" into p; 0, or -1 when the line is not one. */
static int nut_pool_line(const char *line, struct nut_pool *p, char *err,
			 size_t errlen)
{
	char dist[32], hash[32], tag[8];
	__u32 kh;

	if (sscanf(line, "pool %31s %31s %7s", dist, hash, tag) != 3)
		return -1;
	memset(p, 0, sizeof(*p));
	p->dist = !strcmp(dist, "modula") ? KS_DIST_TWEMPROXY_MODULA
					  : KS_DIST_TWEMPROXY;
	if (ks_key_hash_parse(hash, &kh, err, errlen))
		return -1;
	p->key.hash = (int)kh;
	if (strcmp(tag, "-") && ks_ring_key_tag(&p->key, tag, err, errlen))
		return -1;
	snprintf(p->what, sizeof(p->what), "%s/%s/%s", dist, hash, tag);
	return 0;
}

/* A "server HOST:PORT:W NAME" line as a shard file line (NAME - is none). */
static void nut_server_line(const char *line, char *text, size_t *off)
{
	char addr[80], name[80];

	if (sscanf(line, "server %79s %79s", addr, name) != 2)
		return;
	*off += (size_t)snprintf(text + *off, (1 << 16) - *off, "%s%s%s\n",
				 addr, strcmp(name, "-") ? " " : "",
				 strcmp(name, "-") ? name : "");
}

/* The keys of one pool, its first key line in line, up to "end"; the
 * disagreements. */
static __u32 nut_keys(const struct ks_ring *r, const struct ks_ring *other,
		      const struct nut_pool *p, FILE *in, char *line,
		      size_t cap, __u32 *nkeys, __u32 *other_bad)
{
	char key[KS_KEY_BUF], hex[2 * KS_KEY_BUF + 2];
	__u32 bad = 0, got;
	unsigned int want;
	int len;

	for (; strncmp(line, "end", 3); line = fgets(line, (int)cap, in)) {
		if (!line)
			break;
		if (sscanf(line, "key %513s %u", hex, &want) != 2)
			continue;
		len = unhex(hex, key, sizeof(key));
		if (len <= 0)
			continue;
		(*nkeys)++;
		got = ks_ring_lookup(r, key, (size_t)len);
		if (got != want) {
			CHECK(0, "%s key %.40s: keysteer %u, nutcracker %u",
			      p->what, hex, got, want);
			bad++;
		}
		if (other->half)
			*other_bad += ks_ring_lookup(other, key, (size_t)len) !=
				      want;
	}
	return bad;
}

/*
 * twemproxy itself as the oracle: Debian's nutcracker in front of real
 * memcached processes on 127.0.0.1 (tests/compat/nutcracker_ref.py), a
 * pool per distribution (ketama, modula) x key hash (all 12) x hash_tag
 * (none, "{}"), each server list with weights and names on some lists;
 * keys set through the pool, each memcached asked which it holds.
 * keysteer's twemproxy / twemproxy-modula ring with that --key-hash and
 * --hash-tag must name the same server for every key. KS_COMPAT_FULL=1
 * (make compat-full) runs 24 lists and 115,200 keys.
 */
static void nutcracker_reference(void)
{
	const char *full = getenv("KS_COMPAT_FULL");
	int is_full = full && *full == '1';
	char line[1200], *text = malloc(1 << 16), cmd[256], err[512];
	__u32 npools = 0, nkeys = 0, bad = 0, nlists = 0;
	__u32 hashes_seen = 0, min_keys = is_full ? 100000 : 5000,
	      other_bad = 0;
	struct nut_pool pool = {};
	size_t off = 0;
	FILE *in;

	kt_begin("compat_nutcracker_every_hash");
	if (access("/usr/bin/python3", X_OK) || access(NUTCRACKER_REF, R_OK) ||
	    system("command -v nutcracker >/dev/null") ||
	    system("command -v memcached >/dev/null")) {
		kt_failf(
			__FILE__, __LINE__,
			"needs /usr/bin/python3, nutcracker, memcached and %s (make deps; run from the repository root)",
			NUTCRACKER_REF);
		free(text);
		kt_end();
		return;
	}
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s%s", NUTCRACKER_REF,
		 is_full ? " --full" : "");
	in = popen(cmd, "r");
	CHECK(in != NULL, "cannot run %s", NUTCRACKER_REF);
	while (in && text && fgets(line, sizeof(line), in)) {
		struct ks_shards s;
		struct ks_ring r = {}, other = {};
		int rc;

		if (!strncmp(line, "ring ", 5)) {
			off = 0;
			text[0] = '\0';
		} else if (!strncmp(line, "pool ", 5)) {
			CHECK(nut_pool_line(line, &pool, err, sizeof(err)) == 0,
			      "pool line %s: %s", line, err);
		} else if (!strncmp(line, "server ", 7)) {
			nut_server_line(line, text, &off);
		} else if (!strncmp(line, "key ", 4)) {
			/* the first key: the pool is complete; go back to it */
			rc = ks_shards_parse_text("nutcracker", text, &s, err,
						  sizeof(err));
			if (!rc) {
				/* and the next hash, to show a wrong one fails */
				struct ks_ring_key next = pool.key;

				next.hash = (next.hash + 1) % KS_KH_MAX;
				rc = ks_ring_build_keyed(&r, &s, pool.dist,
							 &pool.key, 0, 1, err,
							 sizeof(err));
				if (!rc && ks_ring_build_keyed(
						   &other, &s, pool.dist, &next,
						   0, 1, err, sizeof(err)))
					memset(&other, 0, sizeof(other));
				ks_shards_free(&s);
			}
			CHECK(rc == 0, "%s: %s", pool.what, err);
			if (rc)
				break;
			bad += nut_keys(&r, &other, &pool, in, line,
					sizeof(line), &nkeys, &other_bad);
			if (r.half && r.half->meta.nshards > 1)
				hashes_seen |= 1U << pool.key.hash;
			nlists += pool.dist == KS_DIST_TWEMPROXY &&
				  pool.key.hash == KS_KH_ONE_AT_A_TIME &&
				  !pool.key.tag[0];
			ks_ring_free(&r);
			ks_ring_free(&other);
			npools++;
		}
	}
	if (in)
		CHECK(pclose(in) == 0, "%s failed", NUTCRACKER_REF);
	CHECK(hashes_seen == (1U << KS_KH_MAX) - 1,
	      "key hashes seen on rings of 2+ servers: %#x", hashes_seen);
	CHECK(nkeys >= min_keys && nlists >= (is_full ? 20U : 6U),
	      "only %u keys, %u server lists", nkeys, nlists);
	CHECK_EQ(bad, 0);
	printf("# compat: nutcracker: %u keys over %u server lists x %u pools (ketama, modula x 12 key hashes x hash_tag none, {}), %u disagreements\n",
	       nkeys, nlists, npools, bad);
	/* one-server pools place every key on server 0 whatever the hash */
	CHECK(other_bad > nkeys / 4,
	      "the next key hash only %u of %u elsewhere", other_bad, nkeys);
	printf("# compat: nutcracker with each pool's next key hash in its place (a wrong setting): %u of %u keys elsewhere\n",
	       other_bad, nkeys);
	free(text);
	kt_end();
}

#define PYMEMCACHE_REF "tests/compat/pymemcache_ref.py"

/* Compares one key line "key HEX STR BYTES"; the mismatches it found. */
static __u32 check_pm_key(const struct ks_ring *str, const struct ks_ring *byt,
			  const char *line, __u32 ring, __u32 *nkeys)
{
	int want_str, want_bytes, len;
	char hex[600], key[256];
	__u32 bad = 0, got;

	if (sscanf(line, "key %599s %d %d", hex, &want_str, &want_bytes) != 3)
		return 0;
	len = unhex(hex, key, sizeof(key));
	if (len <= 0)
		return 0;
	if (want_str >= 0) {
		(*nkeys)++;
		got = ks_ring_lookup(str, key, (size_t)len);
		if (got != (__u32)want_str) {
			CHECK(0,
			      "ring %u str key %.40s: keysteer %u, pymemcache %d",
			      ring, hex, got, want_str);
			bad++;
		}
	}
	(*nkeys)++;
	got = ks_ring_lookup(byt, key, (size_t)len);
	if (got != (__u32)want_bytes) {
		CHECK(0, "ring %u bytes key %.40s: keysteer %u, pymemcache %d",
		      ring, hex, got, want_bytes);
		bad++;
	}
	return bad;
}

/*
 * pymemcache_ref.py is pure Python, pymemcache's murmur3 too: the tier's
 * 14,400 keys (one hash per server per lookup) take ~40 s of one CPU, half
 * of this program's time when it ran in line. So main() starts it first
 * (pymemcache_start) and it writes its vectors to a file while the C
 * checks use the other CPU; pymemcache_reference(), called last, waits
 * for it (no bound here: run.sh's limit on the tier is the bound) and
 * reads the file. The vectors and every check on them are as before.
 * (Two processes of half the lists each gained nothing more: 71 and 72 s
 * against 68 and 74 s; the C checks and the other references are then
 * the longer path.)
 */
static pid_t pm_pid = -1;
static char pm_out[] = "/tmp/ks_pymemcache_ref.XXXXXX";

static void pymemcache_start(void)
{
	const char *full = getenv("KS_COMPAT_FULL");
	char *argv[] = { "/usr/bin/python3", PYMEMCACHE_REF,
			 full && *full == '1' ? "--full" : NULL, NULL };
	int fd = mkostemp(pm_out, O_CLOEXEC);

	if (fd < 0)
		return;
	fflush(stdout);
	pm_pid = fork();
	if (pm_pid == 0) {
		if (dup2(fd, STDOUT_FILENO) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd);
}

/*
 * pymemcache's HashClient (rendezvous hashing) as the oracle: its own
 * _get_client() names the server of every key, as a str and as bytes.
 * KS_COMPAT_FULL=1 (make compat-full) checks 120,000 keys, the tier a
 * sample of 14,400.
 */
static void pymemcache_reference(void)
{
	const char *full = getenv("KS_COMPAT_FULL");
	char line[1200], *text = malloc(1 << 16);
	__u32 nrings = 0, nkeys = 0, nwire = 0, bad = 0, min_wire;
	size_t off = 0;
	int status = -1;
	FILE *in = NULL;

	/* reaped first, whatever follows: no child outlives the check */
	if (pm_pid > 0 && waitpid(pm_pid, &status, 0) != pm_pid)
		status = -1;

	kt_begin("compat_pymemcache_hashclient");
	if (access("/usr/bin/python3", X_OK) || access(PYMEMCACHE_REF, R_OK) ||
	    system("/usr/bin/python3 -c 'import pymemcache' 2>/dev/null")) {
		kt_failf(
			__FILE__, __LINE__,
			"needs /usr/bin/python3 with python3-pymemcache and %s (run from the repository root; make deps)",
			PYMEMCACHE_REF);
		free(text);
		if (pm_pid > 0)
			unlink(pm_out);
		kt_end();
		return;
	}
	min_wire = full && *full == '1' ? 100000 : 10000;
	if (pm_pid > 0)
		in = fopen(pm_out, "r");
	CHECK(in != NULL, "cannot run %s", PYMEMCACHE_REF);
	while (in && text && fgets(line, sizeof(line), in)) {
		if (server_list_line(line, text, &off)) {
			continue;
		} else if (!strncmp(line, "key ", 4)) {
			struct ks_ring str = {}, byt = {};
			struct ks_shards s;
			char err[512];
			int rc;

			rc = ks_shards_parse_text("pymemcache", text, &s, err,
						  sizeof(err));
			if (!rc) {
				rc = ks_ring_build(&str, &s, KS_DIST_PYMEMCACHE,
						   0, 1, err, sizeof(err));
				if (!rc)
					rc = ks_ring_build(
						&byt, &s,
						KS_DIST_PYMEMCACHE_BYTES, 0, 1,
						err, sizeof(err));
				ks_shards_free(&s);
			}
			CHECK(rc == 0, "ring %u: %s", nrings, err);
			do {
				if (!strncmp(line, "end", 3))
					break;
				if (!rc) {
					nwire++;
					bad += check_pm_key(&str, &byt, line,
							    nrings, &nkeys);
				}
			} while (fgets(line, (int)sizeof(line), in));
			ks_ring_free(&str);
			ks_ring_free(&byt);
			nrings++;
		}
	}
	if (in)
		fclose(in);
	if (pm_pid > 0) {
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "%s failed (wait status %d)", PYMEMCACHE_REF, status);
		unlink(pm_out);
	}
	CHECK(nrings >= 20 && nwire >= min_wire, "only %u rings, %u keys",
	      nrings, nwire);
	CHECK_EQ(bad, 0);
	printf("# compat: pymemcache: %u keys (%u lookups, str and bytes) over %u server lists, %u disagreements\n",
	       nwire, nkeys, nrings, bad);
	free(text);
	kt_end();
}

#define PYLIBMC_REF "tests/compat/pylibmc_ref.py"

/* One run of a reference that prints "ring", "server LINE", "key HEX
 * INDEX" and "end" lines (cmd, through popen; pylibmc_ref.py and
 * php_memcached_ref.php store the keys in real memcached first): the keys
 * it placed, and how many ks_ring_lookup (dist, key) placed elsewhere. */
static int ref_run(const char *cmd, const char *what, enum ks_dist dist,
		   const struct ks_ring_key *kkey, unsigned *nkeys,
		   unsigned *nrings, unsigned *bad)
{
	char line[1024], *text = malloc(1 << 16), err[512];
	size_t off = 0;
	FILE *in;

	*nkeys = *nrings = *bad = 0;
	in = text ? popen(cmd, "r") : NULL;
	while (in && fgets(line, sizeof(line), in)) {
		struct ks_shards sh;
		struct ks_ring r = {};
		unsigned char key[KS_MAX_KEY_LEN];
		unsigned idx, i;
		size_t klen;
		char hex[2 * KS_MAX_KEY_LEN + 2];

		if (server_list_line(line, text, &off) ||
		    strncmp(line, "key ", 4))
			continue;
		if (ks_shards_parse_text(what, text, &sh, err, sizeof(err)) ||
		    ks_ring_build_keyed(&r, &sh, dist, kkey, 0, 1, err,
					sizeof(err))) {
			CHECK(0, "ring %u: %s", *nrings, err);
			break;
		}
		do {
			if (!strncmp(line, "end", 3))
				break;
			if (sscanf(line, "key %501s %u", hex, &idx) != 2)
				continue;
			klen = strlen(hex) / 2;
			for (i = 0; i < klen; i++)
				sscanf(hex + 2 * i, "%2hhx", &key[i]);
			(*nkeys)++;
			*bad += ks_ring_lookup(&r, key, klen) != idx;
		} while (fgets(line, (int)sizeof(line), in));
		ks_ring_free(&r);
		ks_shards_free(&sh);
		(*nrings)++;
	}
	free(text);
	return in && pclose(in) == 0 ? 0 : -1;
}

#define GOMEMCACHE_REF "tests/compat/gomemcache_ref.go"

/*
 * gomemcache (Debian's golang-github-bradfitz-gomemcache-dev) as the
 * oracle: a Go program built here, offline in GOPATH mode against the
 * Debian source, asks its ServerList.PickServer (crc32.ChecksumIEEE of
 * the key % the number of servers) for every key; keysteer's modula with
 * --key-hash crc32a must name the same server. The same keys with
 * keysteer's crc32 (libmemcached's 15-bit one) in its place disagree, a
 * figure printed to show the check can fail. KS_COMPAT_FULL=1: 100,000
 * keys.
 */
static void gomemcache_reference(void)
{
	const char *full = getenv("KS_COMPAT_FULL");
	int is_full = full && *full == '1';
	struct ks_ring_key crc32a = { .hash = KS_KH_CRC32A };
	struct ks_ring_key crc32 = { .hash = KS_KH_CRC32 };
	char dir[] = "/tmp/ks-gomemcache-XXXXXX", cmd[700];
	unsigned nkeys, nrings, bad, nk2, nr2, bad2;
	int rc;

	kt_begin("compat_gomemcache_serverlist");
	if (system("command -v go >/dev/null") ||
	    access("/usr/share/gocode/src/github.com/bradfitz/gomemcache/memcache",
		   R_OK) ||
	    access(GOMEMCACHE_REF, R_OK) || !mkdtemp(dir)) {
		kt_failf(
			__FILE__, __LINE__,
			"needs golang-go, golang-github-bradfitz-gomemcache-dev and %s (make deps; run from the repository root)",
			GOMEMCACHE_REF);
		kt_end();
		return;
	}
	snprintf(
		cmd, sizeof(cmd),
		"env GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=%s/cache GOFLAGS= go build -o %s/ref %s",
		dir, dir, GOMEMCACHE_REF);
	rc = system(cmd);
	CHECK(rc == 0, "%s failed", cmd);
	snprintf(cmd, sizeof(cmd), "%s/ref -lists %d -keys %d", dir,
		 is_full ? 40 : 20, is_full ? 2500 : 300);
	if (!rc) {
		rc = ref_run(cmd, "gomemcache", KS_DIST_MODULA, &crc32a, &nkeys,
			     &nrings, &bad);
		CHECK(rc == 0, "%s failed", cmd);
		CHECK(nrings >= 20 && nkeys >= (is_full ? 100000U : 6000U),
		      "only %u lists, %u keys", nrings, nkeys);
		CHECK_EQ(bad, 0);
		printf("# compat: gomemcache: %u keys over %u server lists, %u disagreements (modula, crc32a)\n",
		       nkeys, nrings, bad);
		if (!ref_run(cmd, "gomemcache", KS_DIST_MODULA, &crc32, &nk2,
			     &nr2, &bad2))
			printf("# compat: gomemcache against modula with crc32 (a wrong setting): %u of %u keys elsewhere\n",
			       bad2, nk2);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		CHECK(0, "%s failed", cmd);
	kt_end();
}

#define PHP_REF "tests/compat/php_memcached_ref.php"

/* One setting of a client under test with ref_run: the test's name,
 * the reference's mode word, the ring keysteer must agree with. */
struct stored_ref {
	const char *test, *mode;
	enum ks_dist dist;
};

/* Each setting of one client, or each failed with need when the client
 * is missing (the suite installs it: make deps). cmd_fmt has two %s, the mode and more arguments: full_args
 * in make compat-full (KS_COMPAT_FULL=1), which must place 100,000 keys. */
static void stored_refs(const char *client, const char *cmd_fmt,
			const char *full_args, int have, const char *need,
			const struct stored_ref *runs, size_t n)
{
	const char *full = getenv("KS_COMPAT_FULL");
	int is_full = full && *full == '1';
	unsigned nkeys, nrings, bad, min_keys = is_full ? 100000 : 8000;
	char cmd[256];
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		kt_begin(runs[i].test);
		if (!have) {
			kt_failf(
				__FILE__, __LINE__,
				"needs %s (make deps; run from the repository root)",
				need);
			kt_end();
			continue;
		}
		snprintf(cmd, sizeof(cmd), cmd_fmt, runs[i].mode,
			 is_full ? full_args : "");
		rc = ref_run(cmd, client, runs[i].dist, NULL, &nkeys, &nrings,
			     &bad);
		CHECK(rc == 0, "%s failed", cmd);
		CHECK(nrings >= 20 && nkeys >= min_keys,
		      "only %u lists, %u keys", nrings, nkeys);
		CHECK_EQ(bad, 0);
		printf("# compat: %s %s (keysteer %s): %u keys over %u server lists, %u disagreements\n",
		       client, runs[i].mode, ks_dist_name(runs[i].dist), nkeys,
		       nrings, bad);
		kt_end();
	}
}

/*
 * pylibmc (Debian's python3-pylibmc) and php-memcached (Debian's
 * php-memcached) as oracles: keys set through them on real memcached
 * processes, each memcached asked which it holds. pylibmc's
 * ketama_weighted and PHP's OPT_LIBKETAMA_COMPATIBLE are keysteer's
 * ketama; pylibmc's plain "ketama" and PHP's DISTRIBUTION_CONSISTENT
 * (unweighted, 100 points a server, one_at_a_time) ketama-plain; both
 * with no options (modula, one_at_a_time) modula-oaat. PHP refuses keys
 * with bytes >= 0x80, so its keys are ASCII. About 9,000 keys a setting
 * in the tier, 100,000 in make compat-full.
 */
static void stored_references(void)
{
	static const struct stored_ref pylibmc[] = {
		{ "compat_pylibmc_ketama_weighted", "ketama_weighted",
		  KS_DIST_KETAMA },
		{ "compat_pylibmc_ketama_plain", "ketama",
		  KS_DIST_KETAMA_PLAIN },
		{ "compat_pylibmc_default_modula", "default",
		  KS_DIST_MODULA_OAAT },
	};
	static const struct stored_ref php[] = {
		{ "compat_php_memcached_default", "default",
		  KS_DIST_MODULA_OAAT },
		{ "compat_php_memcached_consistent", "consistent",
		  KS_DIST_KETAMA_PLAIN },
		{ "compat_php_memcached_libketama", "libketama",
		  KS_DIST_KETAMA },
	};
	int memcached = !system("command -v memcached >/dev/null");

	stored_refs(
		"pylibmc", "/usr/bin/python3 " PYLIBMC_REF " --behaviour %s%s",
		" --keys 6500",
		memcached && !access("/usr/bin/python3", X_OK) &&
			!access(PYLIBMC_REF, R_OK) &&
			!system("/usr/bin/python3 -c 'import pylibmc' 2>/dev/null"),
		"/usr/bin/python3 with python3-pylibmc, memcached and " PYLIBMC_REF,
		pylibmc, sizeof(pylibmc) / sizeof(pylibmc[0]));
	stored_refs(
		"php-memcached", "php " PHP_REF " %s%s", " 20 6500",
		memcached && !access(PHP_REF, R_OK) &&
			!system("php -r 'exit(class_exists(\"Memcached\") ? 0 : 1);' 2>/dev/null"),
		"php-cli with php-memcached, memcached and " PHP_REF, php,
		sizeof(php) / sizeof(php[0]));
}

/*
 * ns per user-space lookup (ks_ring_lookup, as 'agent ring lookup' and the
 * agent's user-space paths call it), pymemcache against ketama in the
 * same run, best of 5 rounds of 20,000 keys. A figure, not a check.
 */
static void pymemcache_cost(void)
{
	static const __u32 sizes[] = { 4, 16, 64 };
	static const size_t lens[] = { 10, 64, 250 };
	enum ks_dist dists[] = { KS_DIST_PYMEMCACHE, KS_DIST_KETAMA };
	char list[64 * 24], key[KS_MAX_KEY_LEN + 1], err[512];
	volatile __u32 sink = 0;
	size_t l, off;
	__u32 si, d, i, round;

	for (si = 0; si < 3; si++) {
		struct ks_shards s;

		for (i = 0, off = 0; i < sizes[si]; i++)
			off += (size_t)snprintf(list + off, sizeof(list) - off,
						"%s10.0.%u.%u:11211",
						i ? "," : "", i / 250, i % 250);
		if (ks_shards_parse_list("--shards", list, &s, err,
					 sizeof(err)))
			return;
		for (d = 0; d < 2; d++) {
			struct ks_ring r;

			if (ks_ring_build(&r, &s, dists[d], 0, 1, err,
					  sizeof(err)))
				continue;
			printf("# cost: %-10s %2u servers:",
			       ks_dist_name(dists[d]), sizes[si]);
			for (l = 0; l < 3; l++) {
				double best = 1e30;

				memset(key, 'k', sizeof(key));
				for (round = 0; round < 5; round++) {
					struct timespec a, b;
					double ns;

					clock_gettime(CLOCK_MONOTONIC, &a);
					for (i = 0; i < 20000; i++) {
						snprintf(key, 11, "user:%05u",
							 i);
						key[10] = 'k';
						sink += ks_ring_lookup(&r, key,
								       lens[l]);
					}
					clock_gettime(CLOCK_MONOTONIC, &b);
					ns = ((double)(b.tv_sec - a.tv_sec) *
						      1e9 +
					      (double)(b.tv_nsec - a.tv_nsec)) /
					     20000;
					if (ns < best)
						best = ns;
				}
				printf(" %zu-byte key %.0f ns", lens[l], best);
			}
			printf("\n");
			ks_ring_free(&r);
		}
		ks_shards_free(&s);
	}
	(void)sink;
}

int main(void)
{
	static const struct {
		const char *name;
		int weights, ports, hostnames;
	} kinds[] = {
		{ "equal", 0, 0, 0 },
		{ "weighted", 1, 0, 0 },
		{ "ports", 0, 1, 0 },
		{ "weighted_ports", 1, 2, 0 },
		{ "big_weights_names", 2, 2, 1 },
	};
	char names[5][100][48];
	__u32 n, k;

	pymemcache_start();
	for (k = 0; k < 5; k++) {
		for (n = 1; n <= 100; n++) {
			struct config c = { .n = n,
					    .weights = kinds[k].weights,
					    .ports = kinds[k].ports,
					    .hostnames = kinds[k].hostnames };

			/* every count for equal weights; a spread for the rest */
			if (k && n > 12 && n % 11 && n != 100)
				continue;
			snprintf(names[k][n - 1], sizeof(names[k][n - 1]),
				 "compat_ketama_%s_%u", kinds[k].name, n);
			c.what = names[k][n - 1];
			run_config(&c);
		}
	}
	tie_test();
	nutcracker_reference();
	stored_references();
	gomemcache_reference();
	ks_clients_compat();
	pymemcache_reference(); /* last: its reference ran beside the rest */
	pymemcache_cost();
	printf("# compat: %llu keys over %llu server lists, %llu mismatches\n",
	       (unsigned long long)total_keys,
	       (unsigned long long)total_configs,
	       (unsigned long long)total_mismatch);
	return kt_summary("compat");
}
