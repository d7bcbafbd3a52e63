// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * estimate.c - the interval arithmetic (see estimate.h): sketch merging,
 * point queries, rate estimates with their bound, top-K, class rates.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/estimate.h"

void ks_cms_merge_row_weighted(__u32 dst[KS_CMS_SEG], const void *percpu,
			       int ncpus, size_t stride, const __u32 *n)
{
	const unsigned char *base = percpu;
	int cpu;
	__u32 i;

	for (cpu = 0; cpu < ncpus; cpu++) {
		const __u32 *row = (const __u32 *)(base + (size_t)cpu * stride);
		__u64 w = n && n[cpu] ? n[cpu] : 1;

		for (i = 0; i < KS_CMS_SEG; i++) {
			__u64 sum = dst[i] + (__u64)row[i] * w;

			dst[i] = sum > ~0U ? ~0U : (__u32)sum;
		}
	}
}

void ks_cms_merge_row(__u32 dst[KS_CMS_SEG], const void *percpu, int ncpus,
		      size_t stride)
{
	ks_cms_merge_row_weighted(dst, percpu, ncpus, stride, NULL);
}

__u32 ks_cms_point(const struct ks_sketch *s, __u32 cls, __u64 hash)
{
	__u32 r, best = ~0U;

	for (r = 0; r < KS_CMS_DEPTH; r++) {
		__u32 v = s->c[cls][r][ks_cms_col(hash, r)];

		if (v < best)
			best = v;
	}
	return best;
}

__u64 ks_class_stream_len(const struct ks_sketch *s, __u32 cls,
			  __u64 class_keys, __u32 sample_n)
{
	__u64 n = sample_n ? sample_n : 1, implied, most = 0;
	__u32 r, i;

	implied = (class_keys + n - 1) / n;
	for (r = 0; r < KS_CMS_DEPTH; r++) {
		__u64 sum = 0;

		for (i = 0; i < KS_CMS_WIDTH; i++)
			sum += s->c[cls][r][i];
		if (sum > most)
			most = sum;
	}
	return implied > most ? implied : most;
}

double ks_cms_bound(__u64 stream_len)
{
	return M_E / KS_CMS_WIDTH * (double)stream_len;
}

double ks_sampling_bound(double count, __u32 n)
{
	if (n <= 1 || count <= 0)
		return 0;
	return 2.0 * sqrt(count * n * (double)(n - 1));
}

void ks_estimate_key(const struct ks_sketch *s, const struct ks_interval *iv,
		     __u64 hash, struct ks_key_estimate *out)
{
	double n = iv->sample_n ? iv->sample_n : 1;
	double secs = iv->elapsed_ns ? iv->elapsed_ns / 1e9 : 1.0;
	double cm, samp;
	__u32 bn;

	out->reads = ks_cms_point(s, KS_CLASS_READ, hash);
	out->writes = ks_cms_point(s, KS_CLASS_WRITE, hash);
	out->reads_ps = out->reads * n / secs;
	out->writes_ps = out->writes * n / secs;
	/* Both sketches can overcount the key, each by its own bound. */
	cm = ks_cms_bound(iv->class_sampled[KS_CLASS_READ]) +
	     ks_cms_bound(iv->class_sampled[KS_CLASS_WRITE]);
	/* CPUs at different rates: the variance of the scaled-up count,
	 * sum of c_cpu * n_cpu * (n_cpu - 1), is at most its keys times
	 * (largest n - 1), which is the bound's form with that n */
	bn = iv->rate_max ? iv->rate_max : iv->sample_n;
	samp = bn > 1 ? 2.0 * sqrt(((double)out->reads + out->writes) * n *
				   (bn - 1.0))
		      : 0;
	out->err_ps = (cm * n + samp) / secs;
	out->share = 0;
	/* Operators think in requests: a flash-sale key named by a quarter
	 * of the requests shows 25%, however many keys multi-gets carry. */
	if (iv->total_requests) {
		out->share = ((double)out->reads + out->writes) * n /
			     (double)iv->total_requests;
		if (out->share > 1)
			out->share = 1;
	}
}

int ks_cand_usable(const struct ks_cand *c, __u32 seq)
{
	__u64 words[KS_KEY_WORDS];

	if (!c->hash || !c->len || c->len > KS_MAX_KEY_LEN)
		return 0;
	/* Serial-number compare: seq wraps after 2^32 intervals. */
	if ((__s32)(c->seq - seq) < 0)
		return 0;
	memcpy(words, c->key, sizeof(words));
	return ks_key_hash(words, c->len) == c->hash;
}

/* By hash, the heaviest slot of a hash first (the one dedup keeps). */
static int cmp_cand_hash(const void *a, const void *b)
{
	const struct ks_cand *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return 0;
}

/*
 * For n items with 64-bit keys key[i], sets best[i] for the one item of
 * each key that better(c, i, j) prefers to every other j (of items it
 * prefers none of, the first): an open-addressing table of indexes, one
 * pass. A host of N CPUs hands over up to N * KS_CAND_SLOTS candidate
 * slots, and sorting them (or records of them) for this cost 30 to 40 ms
 * an interval at 128 CPUs (docs/benchmarks.md, "The agent on big hosts").
 * -ENOMEM: nothing set.
 */
static int mark_best(const __u64 *key, size_t n, const struct ks_cand *c,
		     int (*better)(const struct ks_cand *c, size_t i, size_t j),
		     __u8 *best)
{
	size_t cap = 16, i, h;
	__u32 *tab;

	if (n >= ~0U / 2)
		return -ENOMEM;
	while (cap < 2 * n)
		cap <<= 1;
	tab = malloc(cap * sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	memset(tab, 0xff, cap * sizeof(*tab)); /* ~0U: empty */
	for (i = 0; i < n; i++) {
		for (h = ks_hash_fmix(key[i]) & (cap - 1);;
		     h = (h + 1) & (cap - 1)) {
			if (tab[h] == ~0U) {
				tab[h] = (__u32)i;
				break;
			}
			if (key[tab[h]] == key[i]) {
				if (better(c, i, tab[h]))
					tab[h] = (__u32)i;
				break;
			}
		}
	}
	for (h = 0; h < cap; h++)
		if (tab[h] != ~0U)
			best[tab[h]] = 1;
	free(tab);
	return 0;
}

/* dedup keeps the slot of the highest count */
static int heavier_slot(const struct ks_cand *c, size_t i, size_t j)
{
	return c[i].count > c[j].count;
}

size_t ks_cands_dedup(struct ks_cand *c, size_t n)
{
	__u64 *key;
	__u8 *keep;
	size_t i, out = 0;

	if (!n)
		return 0;
	key = malloc(n * sizeof(*key));
	keep = calloc(n, 1);
	for (i = 0; key && i < n; i++)
		key[i] = c[i].hash;
	if (!key || !keep || mark_best(key, n, c, heavier_slot, keep)) {
		/* out of memory: the slots themselves, sorted by hash */
		free(key);
		free(keep);
		qsort(c, n, sizeof(*c), cmp_cand_hash);
		for (i = 1; i < n; i++) {
			if (c[i].hash != c[out].hash)
				c[++out] = c[i];
		}
		return out + 1;
	}
	/* in their own order: one pass over the slots, none moved twice */
	for (i = 0; i < n; i++)
		if (keep[i]) {
			if (out != i)
				c[out] = c[i];
			out++;
		}
	free(key);
	free(keep);
	return out;
}

_Static_assert(KS_CMS_DEPTH <= 4 && KS_CMS_WIDTH <= 65536,
	       "a sketch signature fits 64 bits");

__u64 ks_cms_signature(__u64 hash)
{
	__u64 sig = 0;
	__u32 r;

	for (r = 0; r < KS_CMS_DEPTH; r++)
		sig = sig * KS_CMS_WIDTH + ks_cms_col(hash, r);
	return sig;
}

/* of twins the slot with the highest count, then the lowest hash */
static int heavier_twin(const struct ks_cand *c, size_t i, size_t j)
{
	if (c[i].count != c[j].count)
		return c[i].count > c[j].count;
	return c[i].hash < c[j].hash;
}

/*
 * Marks in twin[] every candidate whose sketch signature a heavier slot
 * (by its count, then hash) has too. 0, or -ENOMEM (nothing marked).
 */
static int mark_twins(const struct ks_cand *c, size_t n, __u8 *twin)
{
	__u64 *sig = malloc(n * sizeof(*sig));
	size_t i;
	int err;

	if (!sig)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		sig[i] = ks_cms_signature(c[i].hash);
	err = mark_best(sig, n, c, heavier_twin, twin);
	free(sig);
	if (err)
		return err;
	for (i = 0; i < n; i++)
		twin[i] = !twin[i];
	return 0;
}

/* A candidate's place in the ranking: its reads + writes (milli per
 * second, as the entry will have them), its hash, its index. */
struct top_ord {
	__u64 sum, hash;
	size_t i;
};

/* 1 if a ranks before b: heavier (reads + writes), then the lower hash. */
static int top_ahead(const struct top_ord *a, const struct top_ord *b)
{
	if (a->sum != b->sum)
		return a->sum > b->sum;
	return a->hash < b->hash;
}

static int cmp_top_ord(const void *a, const void *b)
{
	const struct top_ord *x = a, *y = b;

	if (top_ahead(x, y))
		return -1;
	return top_ahead(y, x);
}

/* Heap of the k best so far with the last-ranked at the root. */
static void heap_down(struct top_ord *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, w = i;
		struct top_ord t;

		if (l < n && top_ahead(&h[w], &h[l]))
			w = l;
		if (r < n && top_ahead(&h[w], &h[r]))
			w = r;
		if (w == i)
			return;
		t = h[i];
		h[i] = h[w];
		h[w] = t;
		i = w;
	}
}

/* The entry of candidate c under iv. */
static void top_entry(const struct ks_sketch *s, const struct ks_interval *iv,
		      const struct ks_cand *c, struct ks_top_entry *t)
{
	struct ks_key_estimate e;

	ks_estimate_key(s, iv, c->hash, &e);
	memset(t, 0, sizeof(*t));
	t->hash = c->hash;
	t->reads_mps = ks_to_mps(e.reads_ps);
	t->writes_mps = ks_to_mps(e.writes_ps);
	t->err_mps = ks_to_mps(e.err_ps);
	t->share_ppm = (__u32)llround(e.share * 1e6);
	t->len = c->len > KS_MAX_KEY_LEN ? KS_MAX_KEY_LEN : c->len;
	memcpy(t->key, c->key, t->len);
}

/*
 * Ranks 24-byte records and keeps the k best in a heap (n log k), then
 * makes entries of those k only: a host of N CPUs hands over up to
 * N * KS_CAND_SLOTS candidates, and making and sorting an entry of 296
 * bytes for each cost 115 ms an interval and 36 MiB at 128 CPUs
 * (docs/benchmarks.md, "The agent on big hosts").
 */
size_t ks_top_select(const struct ks_sketch *s, const struct ks_interval *iv,
		     const struct ks_cand *c, size_t n,
		     struct ks_top_entry *out, size_t k)
{
	struct top_ord *o;
	__u8 *twin;
	size_t i, m = 0;

	if (!n || !k)
		return 0;
	o = malloc(n * sizeof(*o));
	twin = calloc(n, 1);
	if (!o || !twin) {
		free(o);
		free(twin);
		return 0;
	}
	mark_twins(c, n, twin); /* out of memory: no twin dropped */
	for (i = 0; i < n; i++) {
		struct ks_key_estimate e;
		struct top_ord r;

		if (twin[i])
			continue;
		ks_estimate_key(s, iv, c[i].hash, &e);
		if (!e.reads && !e.writes)
			continue;
		r = (struct top_ord){ ks_to_mps(e.reads_ps) +
					      ks_to_mps(e.writes_ps),
				      c[i].hash, i };
		if (m < k) {
			o[m++] = r;
			if (m == k) /* full: the heap from here on */
				for (size_t j = k / 2; j-- > 0;)
					heap_down(o, k, j);
		} else if (top_ahead(&r, &o[0])) {
			o[0] = r;
			heap_down(o, k, 0);
		}
	}
	qsort(o, m, sizeof(*o), cmp_top_ord);
	for (i = 0; i < m; i++)
		top_entry(s, iv, &c[o[i].i], &out[i]);
	free(o);
	free(twin);
	return m;
}

size_t ks_top_rank(const struct ks_sketch *s, const struct ks_interval *iv,
		   const struct ks_cand *c, size_t n,
		   struct ks_top_entry *ranked, size_t cap, __u32 top,
		   struct ks_report *rep)
{
	size_t m = ks_top_select(s, iv, c, n, ranked, cap), head = top;

	if (head > KS_REPORT_TOP)
		head = KS_REPORT_TOP;
	if (head > m)
		head = m;
	memset(rep->top, 0, sizeof(rep->top));
	memcpy(rep->top, ranked, head * sizeof(*ranked));
	rep->n_top = (__u32)head;
	return m;
}

__u64 ks_to_mps(double per_s)
{
	if (!(per_s > 0)) /* also NaN */
		return 0;
	if (per_s >= 1.8e16)
		return ~0ULL;
	return (__u64)llround(per_s * 1000.0);
}

static __u64 delta(__u64 prev, __u64 cur)
{
	return cur >= prev ? cur - prev : 0;
}

void ks_ops_fold_fast(struct ks_op_stats ops[KS_OP_MAX],
		      const __u64 pkts[KS_PKT_MAX])
{
	ops[KS_OP_GET].requests += pkts[KS_PKT_FAST_GET];
	ops[KS_OP_GET].keys += pkts[KS_PKT_FAST_GET];
	ops[KS_OP_GET].bytes += pkts[KS_PKT_FAST_GET_BYTES];
}

void ks_interval_init(struct ks_interval *iv, const struct ks_sketch *s,
		      const struct ks_totals *prev, const struct ks_totals *cur,
		      __u32 sample_n, __u64 elapsed_ns)
{
	__u64 keys[KS_CLASS_MAX];
	__u32 cls;

	memset(iv, 0, sizeof(*iv));
	iv->sample_n = sample_n;
	iv->elapsed_ns = elapsed_ns;
	ks_class_keys(prev, cur, keys);
	for (cls = 0; cls < KS_CMS_CLASSES; cls++)
		iv->class_sampled[cls] = ks_class_stream_len(s, cls, keys[cls],
							     sample_n);
	iv->total_requests = ks_total_requests(prev, cur);
}

void ks_class_keys(const struct ks_totals *prev, const struct ks_totals *cur,
		   __u64 keys[KS_CLASS_MAX])
{
	__u32 op;

	memset(keys, 0, sizeof(keys[0]) * KS_CLASS_MAX);
	for (op = 0; op < KS_OP_MAX; op++)
		keys[ks_op_class(op)] += delta(prev->ops[op].keys,
					       cur->ops[op].keys);
}

__u64 ks_total_requests(const struct ks_totals *prev,
			const struct ks_totals *cur)
{
	__u64 n = 0;
	__u32 op;

	for (op = 0; op < KS_OP_MAX; op++)
		n += delta(prev->ops[op].requests, cur->ops[op].requests);
	return n;
}

void ks_fill_rates(const struct ks_totals *prev, const struct ks_totals *cur,
		   __u64 elapsed_ns, struct ks_report *rep)
{
	double secs = elapsed_ns ? elapsed_ns / 1e9 : 1.0;
	__u64 req[KS_CLASS_MAX] = {}, keys[KS_CLASS_MAX] = {};
	__u64 bytes[KS_CLASS_MAX] = {};
	__u32 op, r, cls;

	for (op = 0; op < KS_OP_MAX; op++) {
		cls = ks_op_class(op);
		req[cls] += delta(prev->ops[op].requests,
				  cur->ops[op].requests);
		keys[cls] += delta(prev->ops[op].keys, cur->ops[op].keys);
		bytes[cls] += delta(prev->ops[op].bytes, cur->ops[op].bytes);
	}
	for (cls = 0; cls < KS_CLASS_MAX; cls++) {
		rep->class_req_mps[cls] = ks_to_mps(req[cls] / secs);
		rep->class_key_mps[cls] = ks_to_mps(keys[cls] / secs);
		rep->class_byte_mps[cls] = ks_to_mps(bytes[cls] / secs);
	}
	for (r = 0; r < KS_ERR_MAX; r++)
		rep->err_mps[r] = ks_to_mps(
			delta(prev->errors[r], cur->errors[r]) / secs);
}
