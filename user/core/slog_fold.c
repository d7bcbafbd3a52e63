// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * slog_fold.c - sampled keys from the log into a sketch and candidate
 * table per epoch (see slog_fold.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/slog_fold.h"

__u32 ks_slog_fold_buckets(int ncpus)
{
	__u64 want = (__u64)(ncpus > 0 ? ncpus : 1) * KS_CAND_BUCKETS;
	__u32 b = KS_CAND_BUCKETS;

	while (b < want && b < (1U << 24))
		b <<= 1;
	return b;
}

int ks_slog_fold_init(struct ks_slog_fold *f, int ncpus, __u32 seq)
{
	int e;

	memset(f, 0, sizeof(*f));
	f->nbuckets = ks_slog_fold_buckets(ncpus);
	for (e = 0; e < KS_EPOCHS; e++) {
		f->ep[e].cands = calloc((size_t)f->nbuckets * KS_CAND_WAYS,
					sizeof(struct ks_slog_cand));
		if (!f->ep[e].cands) {
			ks_slog_fold_free(f);
			return -ENOMEM;
		}
	}
	ks_slog_fold_open(f, seq);
	return 0;
}

void ks_slog_fold_free(struct ks_slog_fold *f)
{
	int e;

	for (e = 0; e < KS_EPOCHS; e++) {
		free(f->ep[e].cands);
		f->ep[e].cands = NULL;
	}
}

void ks_slog_fold_open(struct ks_slog_fold *f, __u32 seq)
{
	struct ks_slog_epoch *ep = &f->ep[seq & 1];

	ep->seq = seq;
	ep->open = 1;
}

void ks_slog_fold_close(struct ks_slog_fold *f, __u32 seq)
{
	struct ks_slog_epoch *ep = &f->ep[seq & 1];

	if (ep->seq == seq)
		ep->open = 0;
}

/*
 * Conservative update by w: the key's estimate is the least of its
 * counters; every counter under estimate + w is raised to it. Scaling
 * every weight by n scales every counter by n, so a CPU's records at one
 * rate give n times what the kernel's sketch gives for them at weight 1,
 * which is what the agent's weighted merge makes of that.
 */
static __u32 cms_add(struct ks_sketch *sk, __u32 cls, __u64 hash, __u32 w)
{
	__u32 *c[KS_CMS_DEPTH], r, est = ~0U;
	__u64 want;

	for (r = 0; r < KS_CMS_DEPTH; r++) {
		c[r] = &sk->c[cls][r][ks_cms_col(hash, r)];
		if (*c[r] < est)
			est = *c[r];
	}
	want = (__u64)est + w;
	est = want > ~0U ? ~0U : (__u32)want;
	for (r = 0; r < KS_CMS_DEPTH; r++)
		if (*c[r] < est)
			*c[r] = est;
	return est;
}

/*
 * As ks_cand_offer() in the kernel: a key already there keeps the higher
 * of its counts (est is per class, so one write does not make a read-hot
 * key look light); a new key takes a free slot, or evicts the lightest
 * one of its bucket if it is heavier.
 */
static void cand_offer(struct ks_slog_fold *f, struct ks_slog_epoch *ep,
		       const struct ks_slog_rec *r, __u32 est)
{
	__u32 b = (__u32)(r->hash >> 40) & (f->nbuckets - 1), w;
	struct ks_slog_cand *slot = &ep->cands[(size_t)b * KS_CAND_WAYS];
	struct ks_slog_cand *victim = NULL;
	__u32 victim_count = ~0U;

	for (w = 0; w < KS_CAND_WAYS; w++) {
		if (slot[w].hash == r->hash) {
			if (slot[w].count < est)
				slot[w].count = est;
			return;
		}
		if (!slot[w].hash) {
			if (victim_count) {
				victim = &slot[w];
				victim_count = 0;
			}
		} else if (slot[w].count < victim_count) {
			victim = &slot[w];
			victim_count = slot[w].count;
		}
	}
	if (!victim || est <= victim_count)
		return;
	if (victim->hash)
		f->cand_evict++;
	else
		f->cand_insert++;
	victim->hash = r->hash;
	victim->count = est;
	victim->len = r->len;
	memcpy(victim->key, r->key, sizeof(victim->key));
}

static int rec_bad(const struct ks_slog_rec *r)
{
	return !r->len || r->len > KS_SLOG_KEY || !r->hash || !r->n ||
	       (r->cls != KS_CLASS_READ && r->cls != KS_CLASS_WRITE);
}

size_t ks_slog_fold_add(struct ks_slog_fold *f, const struct ks_slog_rec *r,
			size_t n)
{
	size_t i, done = 0;

	for (i = 0; i < n; i++, r++) {
		struct ks_slog_epoch *ep = &f->ep[r->seq & 1];
		__u32 est;

		if (rec_bad(r)) {
			f->bad++;
			continue;
		}
		/* the record has seq's low 16 bits: enough to tell the two
		 * open intervals and the ones just closed apart */
		if (!ep->open || (__u16)ep->seq != r->seq) {
			f->late++;
			continue;
		}
		est = cms_add(&ep->sk, r->cls, r->hash, f->unscaled ? 1 : r->n);
		cand_offer(f, ep, r, est);
		ep->records++;
		done++;
	}
	f->folded += done;
	return done;
}

void ks_slog_fold_sketch(const struct ks_slog_fold *f, __u32 epoch,
			 struct ks_sketch *sk)
{
	const struct ks_slog_epoch *ep = &f->ep[epoch & 1];
	const __u32 *src = &ep->sk.c[0][0][0];
	__u32 *dst = &sk->c[0][0][0];
	size_t i, n = sizeof(sk->c) / sizeof(sk->c[0][0][0]);

	if (ep->open || !ep->records)
		return;
	for (i = 0; i < n; i++) {
		__u64 s = (__u64)dst[i] + src[i];

		dst[i] = s > ~0U ? ~0U : (__u32)s;
	}
}

size_t ks_slog_fold_cands(const struct ks_slog_fold *f, __u32 seq,
			  struct ks_cand *out, size_t cap)
{
	const struct ks_slog_epoch *ep = &f->ep[seq & 1];
	size_t i, n = 0, slots = (size_t)f->nbuckets * KS_CAND_WAYS;

	if (ep->open || ep->seq != seq || !ep->records)
		return 0;
	for (i = 0; i < slots && n < cap; i++) {
		const struct ks_slog_cand *s = &ep->cands[i];

		if (!s->hash)
			continue;
		memset(&out[n], 0, sizeof(out[n]));
		out[n].hash = s->hash;
		out[n].seq = seq;
		out[n].count = s->count;
		out[n].len = s->len;
		memcpy(out[n].key, s->key, sizeof(s->key));
		n++;
	}
	return n;
}

void ks_slog_fold_reset(struct ks_slog_fold *f, __u32 epoch)
{
	struct ks_slog_epoch *ep = &f->ep[epoch & 1];

	if (!ep->records)
		return;
	memset(&ep->sk, 0, sizeof(ep->sk));
	memset(ep->cands, 0,
	       (size_t)f->nbuckets * KS_CAND_WAYS * sizeof(*ep->cands));
	ep->records = 0;
}

__u32 ks_slog_fold_point(const struct ks_slog_fold *f, __u32 epoch, __u32 cls,
			 __u64 hash)
{
	return ks_cms_point(&f->ep[epoch & 1].sk, cls, hash);
}

__u64 ks_slog_period_next(__u64 period_ns, __u32 fill)
{
	__u64 next;

	if (period_ns < KS_SLOG_PERIOD_MIN_NS)
		period_ns = KS_SLOG_PERIOD_MIN_NS;
	next = fill ? period_ns * KS_SLOG_FILL_AIM / fill : 2 * period_ns;
	if (next > 2 * period_ns)
		next = 2 * period_ns;
	if (next < KS_SLOG_PERIOD_MIN_NS)
		next = KS_SLOG_PERIOD_MIN_NS;
	if (next > KS_SLOG_PERIOD_MAX_NS)
		next = KS_SLOG_PERIOD_MAX_NS;
	return next;
}

__u32 ks_slog_takeover_flags(__u32 flags)
{
	return flags & ~(__u32)KS_CFG_SLOG;
}
