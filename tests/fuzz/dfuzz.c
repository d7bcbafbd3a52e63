// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dfuzz.c - differential fuzzing of the datapath's memcached parser.
 *
 * Every input payload is framed (TCP or UDP, IPv4 or IPv6, various header
 * sizes), run through the real ks_ingress (or ks_tc_ingress) with
 * BPF_PROG_TEST_RUN at sample_n 1 with tracing on, and what the datapath
 * counted (ks_ops, ks_errors, ks_pkts deltas) and traced (ks_events: op,
 * class, key bytes, in order) is compared with the reference parser
 * (ref_mc.c). Inputs: the fixtures' payloads and truncations of each at
 * every byte, then a mix of grammar-generated payloads and mutations.
 * A mismatch is shrunk while it still mismatches the same way and written
 * with both results to the findings folder.
 *
 *   dfuzz [--seed N] [--iterations N] [--seconds S] [--seeds FILE]
 *         [--findings DIR] [--name NAME] [--repro FILE] [-v]
 *
 * Prints one line PASS NAME or FAIL NAME: why (tests/run.sh counts it),
 * after '#' comment lines with the figures. Needs root.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include "names.h"
#include "pkt.h"
#include "dfuzz.h"

#define POOL_MAX        2048   /* inputs kept for mutation */
#define MAX_FINDINGS    64     /* distinct mismatches reported in full */
#define SHRINK_TRIALS   4000   /* datapath runs one minimisation may take */
#define NO_PREFILL      (-1)

struct opts {
	__u64 seed;
	__u64 iterations;  /* 0: no limit */
	double seconds;    /* 0: no limit */
	const char *seeds;
	const char *findings;
	const char *name;
	const char *repro;
	int verbose;
};

/* The outcome of one comparison. */
struct verdict {
	bool bad;
	bool skip;       /* the kernel refused the frame (size): not a test */
	char sig[80];    /* what kind of mismatch, for de-duplication */
	char what[600];  /* the first difference, in words */
};

struct finding {
	char sig[80];
	unsigned hits;
	__u64 first_exec; /* executions before it was first seen */
	char path[512];
};

static struct {
	__u64 execs, skipped, bad_inputs;
	__u64 by_source[3]; /* seeds+truncations, generated, mutated */
	__u64 reasons[KS_ERR_MAX + 1]; /* the reference's, [KS_ERR_MAX]: none */
	__u64 ops[KS_OP_MAX];          /* inputs with a request of each op */
	__u64 tc, past_win, keys;
	struct finding f[MAX_FINDINGS];
	unsigned nf;
	unsigned more; /* distinct signatures past MAX_FINDINGS */
	struct fz_input prev; /* the input run before the current one */
} st;

static struct fz_dp dp;
static struct ref_out ref;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *frame_name(int f)
{
	static const char *const n[] = { "tcp4", "udp4", "tcp6", "udp6" };

	return f >= 0 && f < FZ_FRAMES ? n[f] : "?";
}

static const char *reason_name(int r)
{
	return r == REF_NO_REASON ? "none" : ks_reason_name((unsigned)r);
}

/* ---- comparison ---- */

static __attribute__((format(printf, 3, 4))) void
mismatch(struct verdict *v, const char *sig, const char *fmt, ...)
{
	va_list ap;

	if (v->bad)
		return; /* the first difference names the finding */
	v->bad = true;
	snprintf(v->sig, sizeof(v->sig), "%s", sig);
	va_start(ap, fmt);
	vsnprintf(v->what, sizeof(v->what), fmt, ap);
	va_end(ap);
}

/* The one reason the datapath counted: REF_NO_REASON, a reason, or -2
 * for more than one. */
static int dp_reason(const struct fz_dp *d)
{
	int i, r = REF_NO_REASON;
	__u64 total = 0;

	for (i = 0; i < KS_ERR_MAX; i++)
		if (d->err[i]) {
			total += d->err[i];
			r = i;
		}
	return total > 1 ? -2 : r;
}

/* The address ks_events carries for the builder's default source. */
static void source_addr(const struct fz_input *in, __u8 a[16])
{
	static const __u8 v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };

	if (in->frame == FZ_TCP6 || in->frame == FZ_UDP6) {
		memcpy(a, v6, 16);
		return;
	}
	memset(a, 0, 16);
	a[10] = a[11] = 0xff;
	a[12] = 198, a[13] = 18, a[14] = 0, a[15] = 1;
}

static void compare_keys(const struct fz_input *in, const struct ref_out *r,
			 const struct fz_dp *d, struct verdict *v)
{
	__u8 saddr[16], zero[KS_KEY_BUF] = { 0 };
	char sig[80];
	unsigned i;

	source_addr(in, saddr);
	if (d->nkeys != r->nkeys)
		mismatch(v, "keys-count", "%u keys traced, reference %u",
			 d->nkeys, r->nkeys);
	for (i = 0; i < d->nkeys && i < r->nkeys && !v->bad; i++) {
		const struct fz_key *k = &d->keys[i];
		const struct ref_key *x = &r->keys[i];
		__u64 words[KS_KEY_WORDS] = { 0 };

		snprintf(sig, sizeof(sig), "key-op:%s", ks_op_name(x->op));
		if (k->op != x->op || k->cls != ks_op_class(x->op))
			mismatch(v, sig, "key %u: op %s class %u, reference %s",
				 i, ks_op_name(k->op), k->cls,
				 ks_op_name(x->op));
		else if (k->len != x->len ||
			 memcmp(k->key, in->b + x->off, x->len))
			mismatch(v, "key-bytes",
				 "key %u: %u bytes traced, reference %u bytes at offset %u",
				 i, k->len, x->len, x->off);
		else if (memcmp(k->key + x->len, zero, KS_KEY_BUF - x->len))
			mismatch(v, "key-padding",
				 "key %u: bytes after its %u are not zero (an earlier key's?)",
				 i, x->len);
		if (v->bad)
			break;
		memcpy(words, in->b + x->off, x->len);
		if (k->hash != ks_key_hash(words, x->len))
			mismatch(v, "key-hash", "key %u: hash %016llx, want %016llx",
				 i, (unsigned long long)k->hash,
				 (unsigned long long)ks_key_hash(words, x->len));
		else if (k->proto != (fz_is_tcp(in) ? IPPROTO_TCP : IPPROTO_UDP) ||
			 k->sport != in->sport || memcmp(k->saddr, saddr, 16))
			mismatch(v, "key-source",
				 "key %u: proto %u sport %u or address differs",
				 i, k->proto, k->sport);
	}
}

static void compare(const struct fz_input *in, const struct ref_out *r,
		    const struct fz_dp *d, struct verdict *v)
{
	int dr = dp_reason(d), i;
	char sig[80];

	memset(v, 0, sizeof(*v));
	if (d->run_err) {
		/* frames over the test run's size limit are refused whole */
		if (d->run_err == -EINVAL || d->run_err == -E2BIG) {
			v->skip = true;
			return;
		}
		mismatch(v, "run-error", "BPF_PROG_TEST_RUN: %s",
			 strerror(-d->run_err));
		return;
	}
	if (d->changed)
		mismatch(v, "verdict", "verdict %u or the packet changed",
			 d->verdict);
	if (d->event_size_bad)
		mismatch(v, "event-size", "a ks_events record of the wrong size");
	if (dr != r->reason) {
		snprintf(sig, sizeof(sig), "reason:%s->%s", reason_name(r->reason),
			 dr == -2 ? "several" : reason_name(dr));
		mismatch(v, sig, "reason %s, reference %s",
			 dr == -2 ? "several" : reason_name(dr),
			 reason_name(r->reason));
	}
	for (i = 0; i < KS_OP_MAX && !v->bad; i++) {
		const struct ks_op_stats *a = &d->ops[i], *b = &r->ops[i];

		if (a->requests == b->requests && a->keys == b->keys &&
		    a->bytes == b->bytes)
			continue;
		snprintf(sig, sizeof(sig), "ops:%s:%s", ks_op_name(i),
			 reason_name(r->reason));
		mismatch(v, sig,
			 "op %s: requests/keys/bytes %llu/%llu/%llu, reference %llu/%llu/%llu (reason %s)",
			 ks_op_name(i), (unsigned long long)a->requests,
			 (unsigned long long)a->keys,
			 (unsigned long long)a->bytes,
			 (unsigned long long)b->requests,
			 (unsigned long long)b->keys,
			 (unsigned long long)b->bytes, reason_name(r->reason));
	}
	if (!v->bad)
		compare_keys(in, r, d, v);
	if (!v->bad && (d->pkts[KS_PKT_SAMPLED] != r->nkeys ||
			d->pkts[KS_PKT_TRACE_DROP] != 0))
		mismatch(v, "pkt-counters", "sampled %llu (want %u), trace drops %llu",
			 (unsigned long long)d->pkts[KS_PKT_SAMPLED], r->nkeys,
			 (unsigned long long)d->pkts[KS_PKT_TRACE_DROP]);
	if (!v->bad && (d->pkts[KS_PKT_SEEN] != 1 ||
			d->pkts[KS_PKT_MEMCACHED] != (in->len > 0) ||
			d->pkts[fz_is_tcp(in) ? KS_PKT_TCP : KS_PKT_UDP] !=
				(in->len > 0)))
		mismatch(v, "pkt-counters", "seen/memcached/l4 counted wrong");
}

/* Runs in (after the prefill packet, if any) and compares. */
static void check(const struct fz_input *in, int prefill,
		  const struct fz_input *prev, struct verdict *v)
{
	static struct fz_input pre;

	if (prefill != NO_PREFILL || prev) {
		if (prev) {
			pre = *prev;
		} else {
			memset(&pre, 0, sizeof(pre));
			memset(pre.b, prefill, KS_WIN);
			pre.len = KS_WIN;
			pre.sport = 40000;
		}
		fz_dp_run(&pre, &dp);
	}
	fz_dp_run(in, &dp);
	ref_mc_parse(in->b, in->len, fz_is_tcp(in), &ref);
	compare(in, &ref, &dp, v);
	/* one reading of the protocol, one finding (ref_mc.h) */
	if (v->bad && ref.note != REF_NOTE_NONE)
		snprintf(v->sig, sizeof(v->sig), "note:%s",
			 ref_note_names[ref.note]);
}

/* ---- findings ---- */

static bool same_way(const struct fz_input *in, int prefill,
		     const struct fz_input *prev, const char *sig)
{
	struct verdict v;

	check(in, prefill, prev, &v);
	return v.bad && !strcmp(v.sig, sig);
}

/*
 * Shrinks in while it mismatches the same way: whole chunks out, halving
 * the chunk size, then the framing made plain. Every trial runs after the
 * same prefill, so the window holds the same stale bytes each time.
 */
static void shrink(struct fz_input *in, int prefill,
		   const struct fz_input *prev, const char *sig)
{
	struct fz_input t;
	unsigned trials = 0;
	__u32 chunk, at;
	bool progress;

	/* the longest prefix that can go (requests before the one that
	 * matters), then the shortest head that still mismatches */
	for (at = in->len; at-- > 1 && trials < SHRINK_TRIALS;) {
		t = *in;
		memmove(t.b, t.b + at, t.len - at);
		t.len -= at;
		trials++;
		if (same_way(&t, prefill, prev, sig)) {
			*in = t;
			break;
		}
	}
	for (at = 1; at < in->len && trials < SHRINK_TRIALS; at++) {
		t = *in;
		t.len = at;
		trials++;
		if (same_way(&t, prefill, prev, sig)) {
			*in = t;
			break;
		}
	}
	chunk = in->len / 2 ? in->len / 2 : 1;
	while (chunk >= 1 && trials < SHRINK_TRIALS) {
		progress = false;
		for (at = 0; at < in->len && trials < SHRINK_TRIALS;) {
			__u32 n = at + chunk > in->len ? in->len - at : chunk;

			t = *in;
			memmove(t.b + at, t.b + at + n, t.len - at - n);
			t.len -= n;
			trials++;
			if (same_way(&t, prefill, prev, sig)) {
				*in = t;
				progress = true;
			} else {
				at += chunk;
			}
		}
		if (!progress) {
			if (chunk == 1)
				break;
			chunk /= 2;
		}
	}
	/* plain framing where it makes no difference */
	t = *in;
	t.nvlan = t.l3_words = t.l4_words = t.pad = 0;
	t.tc = 0;
	if (same_way(&t, prefill, prev, sig))
		*in = t;
	t = *in;
	t.frame = fz_is_tcp(in) ? FZ_TCP4 : FZ_UDP4;
	if (same_way(&t, prefill, prev, sig))
		*in = t;
	t = *in;
	t.sport = 40000;
	if (same_way(&t, prefill, prev, sig))
		*in = t;
}

static void describe(FILE *f, const struct fz_input *in, const char *who,
		     const struct ks_op_stats *ops, int reason, unsigned nkeys)
{
	int i;

	fprintf(f, "# %s: reason %s, %u keys;", who,
		reason == -2 ? "several" : reason_name(reason), nkeys);
	for (i = 0; i < KS_OP_MAX; i++)
		if (ops[i].requests || ops[i].keys || ops[i].bytes)
			fprintf(f, " %s %llu/%llu/%llu", ks_op_name(i),
				(unsigned long long)ops[i].requests,
				(unsigned long long)ops[i].keys,
				(unsigned long long)ops[i].bytes);
	fprintf(f, " (op requests/keys/bytes)\n");
	(void)in;
}

static void write_input(FILE *f, const char *tag, const struct fz_input *in)
{
	static char esc[4 * FZ_MAX_PAY + 1];

	fprintf(f, "%s=%s\n", tag, fz_escape(in->b, in->len, esc, sizeof(esc)));
}

/* Writes the reproducer file; returns 0 or -errno. */
static int write_finding(const struct opts *o, struct finding *fd,
			 const struct fz_input *in, int prefill,
			 const struct fz_input *prev, const struct verdict *v)
{
	char name[96];
	size_t i;
	FILE *f;

	snprintf(name, sizeof(name), "%02u-%s", st.nf, v->sig);
	for (i = 0; name[i]; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') ||
		      (name[i] >= '0' && name[i] <= '9') || name[i] == '-'))
			name[i] = name[i] == ':' || name[i] == '>' ? '-' : '_';
	snprintf(fd->path, sizeof(fd->path), "%s/%s.repro", o->findings, name);
	f = fopen(fd->path, "w");
	if (!f)
		return -errno;
	fprintf(f, "# dfuzz finding %s: %s\n", v->sig, v->what);
	fprintf(f, "# replay: build/fuzz/dfuzz --repro %s\n", fd->path);
	describe(f, in, "reference", ref.ops, ref.reason, ref.nkeys);
	describe(f, in, "datapath ", dp.ops, dp_reason(&dp), dp.nkeys);
	fprintf(f, "frame=%s vlan=%u l3=%u l4=%u tc=%u sport=%u pad=%u\n",
		frame_name(in->frame), in->nvlan, in->l3_words, in->l4_words,
		in->tc, in->sport, in->pad);
	if (prev)
		write_input(f, "prev", prev);
	else if (prefill != NO_PREFILL)
		fprintf(f, "prefill=0x%02x\n", prefill);
	write_input(f, "payload", in);
	fclose(f);
	return 0;
}

/* A mismatching input: count it, and for a new kind shrink and save it. */
static void report(const struct opts *o, const struct fz_input *bad,
		   const struct verdict *v0)
{
	static const int fills[] = { 'A', 0x00, ' ', '\n', 0xff, '0' };
	static struct fz_input in, prev;
	struct finding *fd = NULL;
	struct verdict v;
	int prefill = NO_PREFILL;
	unsigned i;
	bool with_prev = false;

	st.bad_inputs++;
	for (i = 0; i < st.nf; i++)
		if (!strcmp(st.f[i].sig, v0->sig)) {
			st.f[i].hits++;
			return;
		}
	if (st.nf == MAX_FINDINGS) {
		st.more++;
		return;
	}
	fd = &st.f[st.nf];
	snprintf(fd->sig, sizeof(fd->sig), "%s", v0->sig);
	fd->hits = 1;
	fd->first_exec = st.execs;
	in = *bad;
	prev = st.prev;
	/* a window of known bytes first, so the reproducer stands alone */
	for (i = 0; i < sizeof(fills) / sizeof(fills[0]); i++)
		if (same_way(&in, fills[i], NULL, v0->sig)) {
			prefill = fills[i];
			break;
		}
	if (prefill == NO_PREFILL)
		with_prev = same_way(&in, NO_PREFILL, &prev, v0->sig);
	if (prefill != NO_PREFILL || with_prev)
		shrink(&in, prefill, with_prev ? &prev : NULL, v0->sig);
	/* the shrunk input's own results for the file */
	check(&in, prefill, with_prev ? &prev : NULL, &v);
	if (!v.bad) /* depends on more history than one packet */
		v = *v0;
	if (o->findings && write_finding(o, fd, &in, prefill,
					 with_prev ? &prev : NULL, &v))
		snprintf(fd->path, sizeof(fd->path), "(cannot write to %s)",
			 o->findings);
	st.nf++;
	printf("# mismatch %s: %s\n#   reproducer %s%s\n", v.sig, v.what,
	       o->findings ? fd->path : "(no --findings)",
	       prefill == NO_PREFILL && !with_prev ? " (did not reproduce alone)" : "");
}

/* ---- the run ---- */

static void run_one(const struct opts *o, struct fz_input *in, int source)
{
	struct verdict v;

	int i;

	check(in, NO_PREFILL, NULL, &v);
	st.execs++;
	st.by_source[source]++;
	st.reasons[ref.reason == REF_NO_REASON ? KS_ERR_MAX : ref.reason]++;
	for (i = 0; i < KS_OP_MAX; i++)
		st.ops[i] += ref.ops[i].requests > 0;
	st.tc += in->tc;
	st.past_win += in->len > KS_WIN;
	st.keys += ref.nkeys;
	if (v.skip)
		st.skipped++;
	else if (v.bad)
		report(o, in, &v);
	if (o->verbose > 1) {
		static char esc[200];

		fprintf(stderr, "%s %s\n", v.bad ? "BAD" : "ok ",
			fz_escape(in->b, in->len < 40 ? in->len : 40, esc,
				  sizeof(esc)));
	}
	st.prev = *in;
}

/* Inputs that reached a new (reason, ops, keys) shape stay for mutation. */
static bool new_shape(const struct fz_input *in)
{
	static __u8 seen[1 << 16];
	__u32 h = (__u32)(ref.reason + 1) * 2654435761u, i;

	for (i = 0; i < KS_OP_MAX; i++)
		if (ref.ops[i].requests || ref.ops[i].keys)
			h ^= (i + 1) * 0x9e3779b9u;
	h ^= (ref.nkeys < 8 ? ref.nkeys : 8 + ref.nkeys / 32) * 0x85ebca6bu;
	h ^= (in->len > KS_WIN) * 0xc2b2ae35u + in->frame * 0x27d4eb2fu;
	h = (h ^ (h >> 16)) & 0xffff;
	if (seen[h])
		return false;
	seen[h] = 1;
	return true;
}

/* What the inputs exercised, by the reference's account. */
static void print_coverage(void)
{
	int i;

	printf("# reasons reached:");
	for (i = 0; i <= KS_ERR_MAX; i++)
		if (i >= KS_ERR_MIDSTREAM) /* the parser's; the rest are L2-L4 */
			printf(" %s %llu", i == KS_ERR_MAX ? "none" : ks_reason_name(i),
			       (unsigned long long)st.reasons[i]);
	printf("\n# inputs with a request of each op:");
	for (i = 0; i < KS_OP_MAX; i++)
		printf(" %s %llu", ks_op_name(i), (unsigned long long)st.ops[i]);
	printf("\n# keys compared %llu; inputs via tc %llu, longer than the window %llu\n",
	       (unsigned long long)st.keys, (unsigned long long)st.tc,
	       (unsigned long long)st.past_win);
}

static int fuzz(const struct opts *o)
{
	struct fz_input *pool = NULL, in;
	size_t npool = 0, cap = 0, nseeds, i;
	struct fz_rng rng = { o->seed };
	double t0 = now_s(), dt;
	__u32 n;
	int got;

	got = fz_seeds_load(o->seeds, &pool, &npool, &cap);
	if (got < 0) {
		printf("FAIL %s: cannot read seeds %s: %s\n", o->name, o->seeds,
		       strerror(-got));
		return 1;
	}
	if (fz_seeds_builtin(&pool, &npool, &cap) < 0 || npool >= POOL_MAX ||
	    !(pool = realloc(pool, POOL_MAX * sizeof(*pool)))) {
		printf("FAIL %s: out of memory\n", o->name);
		return 1;
	}
	nseeds = npool;
	/* every seed whole in each framing, then cut at every byte */
	for (i = 0; i < nseeds; i++) {
		in = pool[i];
		for (in.frame = 0; in.frame < FZ_FRAMES; in.frame++)
			run_one(o, &in, 0);
		in.frame = FZ_TCP4;
		for (n = 1; n < pool[i].len; n++) {
			in.len = n;
			in.frame = n & 1 ? FZ_TCP4 : FZ_UDP4;
			in.tc = (n & 6) == 6;
			run_one(o, &in, 0);
		}
	}
	for (;;) {
		int source;

		dt = now_s() - t0;
		if ((o->iterations && st.execs >= o->iterations) ||
		    (o->seconds > 0 && dt >= o->seconds))
			break;
		if (fz_below(&rng, 5) < 2) {
			fz_generate(&rng, &in);
			source = 1;
		} else {
			in = pool[fz_below(&rng, (__u32)npool)];
			fz_mutate(&rng, &in, &pool[fz_below(&rng, (__u32)npool)]);
			source = 2;
		}
		fz_pick_frame(&rng, &in);
		run_one(o, &in, source);
		if (npool < POOL_MAX && new_shape(&in))
			pool[npool++] = in;
	}
	dt = now_s() - t0;
	printf("# dfuzz seed %llu: %llu executions in %.1f s (%.0f/s): %llu from %zu seeds and their truncations, %llu generated, %llu mutated; %llu refused by the kernel; pool %zu\n",
	       (unsigned long long)o->seed, (unsigned long long)st.execs, dt,
	       dt > 0 ? st.execs / dt : 0.0,
	       (unsigned long long)st.by_source[0], nseeds,
	       (unsigned long long)st.by_source[1],
	       (unsigned long long)st.by_source[2],
	       (unsigned long long)st.skipped, npool);
	print_coverage();
	printf("# dfuzz: %llu mismatching inputs, %u distinct%s\n",
	       (unsigned long long)st.bad_inputs, st.nf + st.more,
	       st.more ? " (some not saved)" : "");
	for (i = 0; i < st.nf; i++)
		printf("#   %-36s %7u inputs, first at execution %llu: %s\n",
		       st.f[i].sig, st.f[i].hits,
		       (unsigned long long)st.f[i].first_exec, st.f[i].path);
	free(pool);
	if (st.nf) {
		printf("FAIL %s: %u distinct mismatches with the reference parser (first: %s)\n",
		       o->name, st.nf + st.more, st.f[0].path);
		return 1;
	}
	printf("PASS %s\n", o->name);
	return 0;
}

/* ---- replay ---- */

static int parse_frame_line(const char *l, struct fz_input *in)
{
	char fr[8];
	unsigned vl, l3, l4, tc, sp, pad = 0;
	int i;

	if (sscanf(l, "frame=%7s vlan=%u l3=%u l4=%u tc=%u sport=%u pad=%u", fr,
		   &vl, &l3, &l4, &tc, &sp, &pad) < 6)
		return -1;
	in->pad = (__u8)pad;
	for (i = 0; i < FZ_FRAMES; i++)
		if (!strcmp(fr, frame_name(i)))
			in->frame = (__u8)i;
	in->nvlan = (__u8)vl;
	in->l3_words = (__u8)l3;
	in->l4_words = (__u8)l4;
	in->tc = (__u8)tc;
	in->sport = (__u16)sp;
	return 0;
}

static int replay(const struct opts *o)
{
	static char line[4 * FZ_MAX_PAY + 64];
	static struct fz_input in, prev;
	int prefill = NO_PREFILL, have_prev = 0, have = 0;
	struct verdict v;
	unsigned pf;
	FILE *f = fopen(o->repro, "r");

	if (!f) {
		printf("FAIL %s: cannot open %s: %s\n", o->name, o->repro,
		       strerror(errno));
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "frame=", 6))
			parse_frame_line(line, &in);
		else if (sscanf(line, "prefill=0x%x", &pf) == 1)
			prefill = (int)pf;
		else if (!strncmp(line, "prev=", 5)) {
			prev.len = (__u32)fz_unescape(line + 5, prev.b, FZ_MAX_PAY);
			prev.sport = 40000;
			have_prev = 1;
		} else if (!strncmp(line, "payload=", 8)) {
			in.len = (__u32)fz_unescape(line + 8, in.b, FZ_MAX_PAY);
			have = 1;
		}
	}
	fclose(f);
	if (!have) {
		printf("FAIL %s: no payload= line in %s\n", o->name, o->repro);
		return 1;
	}
	check(&in, prefill, have_prev ? &prev : NULL, &v);
	describe(stdout, &in, "reference", ref.ops, ref.reason, ref.nkeys);
	describe(stdout, &in, "datapath ", dp.ops, dp_reason(&dp), dp.nkeys);
	if (v.bad) {
		printf("FAIL %s: %s: %s\n", o->name, v.sig, v.what);
		return 1;
	}
	printf("PASS %s\n", o->name);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"USAGE: dfuzz [--seed N] [--iterations N] [--seconds S] [--seeds FILE]\n"
		"             [--findings DIR] [--name NAME] [-v]\n"
		"       dfuzz --repro FILE\n"
		"Differential fuzzing of the keysteer datapath's memcached parser against\n"
		"the reference parser (tests/fuzz/ref_mc.c). Needs root (BPF_PROG_TEST_RUN).\n"
		"Defaults: --seed 1, --seconds 60, --seeds tests/fuzz/seeds.txt, --name dfuzz.\n"
		"EXAMPLES:\n"
		"  build/fuzz/dfuzz --seed 7 --seconds 600 --findings build/fuzz/findings\n"
		"  build/fuzz/dfuzz --repro build/fuzz/findings/00-reason-none-bad_length.repro\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "seconds", required_argument, NULL, 't' },
		{ "seeds", required_argument, NULL, 'S' },
		{ "findings", required_argument, NULL, 'f' },
		{ "name", required_argument, NULL, 'n' },
		{ "repro", required_argument, NULL, 'r' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct opts o = { .seed = 1, .seconds = 60,
			  .seeds = "tests/fuzz/seeds.txt", .name = "dfuzz" };
	int c, err, rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "vh", lo, NULL)) != -1) {
		switch (c) {
		case 's': o.seed = strtoull(optarg, NULL, 0); break;
		case 'i': o.iterations = strtoull(optarg, NULL, 0);
			  if (o.seconds == 60)
				  o.seconds = 0;
			  break;
		case 't': o.seconds = atof(optarg); break;
		case 'S': o.seeds = optarg; break;
		case 'f': o.findings = optarg; break;
		case 'n': o.name = optarg; break;
		case 'r': o.repro = optarg; break;
		case 'v': o.verbose++; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (geteuid() != 0) {
		printf("SKIP %s: needs root to run BPF programs\n", o.name);
		return 0;
	}
	if (o.findings && mkdir(o.findings, 0755) && errno != EEXIST) {
		printf("FAIL %s: cannot create %s: %s\n", o.name, o.findings,
		       strerror(errno));
		return 1;
	}
	err = fz_dp_open();
	if (err) {
		printf("FAIL %s: cannot load the keysteer BPF object: %s\n",
		       o.name, strerror(-err));
		fz_dp_close();
		return 1;
	}
	rc = o.repro ? replay(&o) : fuzz(&o);
	fz_dp_close();
	return rc;
}
