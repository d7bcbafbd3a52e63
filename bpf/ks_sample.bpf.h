/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_sample.bpf.h - what happens to a key: 1 in N keys (per-CPU countdown,
 * no floating point) is copied, hashed, counted in the current epoch's
 * count-min sketch with conservative update, offered to the candidate
 * table and, while someone traces, sent to the ring buffer.
 */
#ifndef KS_SAMPLE_BPF_H
#define KS_SAMPLE_BPF_H

#include "ks_count.bpf.h"
#include "ks_scratch.bpf.h"
#include "ks_ring.bpf.h"
#include "ks_hot.bpf.h"

/*
 * One 8-byte load at any byte offset. Without the alignment promise clang
 * 14 emits eight byte loads and fourteen shifts/ORs; the verifier allows
 * unaligned map-value loads where the CPU does (x86-64, arm64).
 */
static __always_inline __u64 ks_win_word(struct ks_scratch *s, __u32 pos)
{
	return *(__u64 *)__builtin_assume_aligned(&s->win[pos & KS_WIN_MASK],
						  8);
}

/*
 * Conservative update: raise only the counters that equal the minimum,
 * which keeps the overestimate of heavy keys far below plain count-min.
 * Returns the key's new estimate in this epoch.
 */
static __always_inline __u32 ks_cms_add(__u64 hash, __u32 epoch, __u32 cls)
{
	struct ks_cms_row *row[KS_CMS_DEPTH];
	__u32 col[KS_CMS_DEPTH];
	__u32 r, idx, est = 0xffffffff;

#pragma unroll
	for (r = 0; r < KS_CMS_DEPTH; r++) {
		col[r] = ks_cms_col(hash, r);
		idx = ks_cms_entry(ks_cms_index(epoch, cls, r),
				   col[r] / KS_CMS_SEG);
		row[r] = bpf_map_lookup_elem(&ks_cms, &idx);
		if (!row[r])
			return 0;
		col[r] %= KS_CMS_SEG;
		if (row[r]->c[col[r]] < est)
			est = row[r]->c[col[r]];
	}
	est += 1;
#pragma unroll
	for (r = 0; r < KS_CMS_DEPTH; r++)
		if (row[r]->c[col[r]] < est)
			row[r]->c[col[r]] = est;
	return est;
}

/*
 * The candidate table keeps the key bytes the sketch cannot: a bucket of
 * KS_CAND_WAYS slots per hash. A key already there is refreshed; a new key
 * takes a free or stale slot, or evicts the lightest one if it is heavier.
 */
static __always_inline void ks_cand_offer(struct ks_scratch *s, __u64 hash,
					  __u32 len, __u32 est)
{
	struct ks_cand *slot, *victim = NULL;
	__u32 base = ks_cand_bucket(hash) * KS_CAND_WAYS;
	__u32 w, idx, victim_count = 0xffffffff;
	int evict = 0;

#pragma unroll
	for (w = 0; w < KS_CAND_WAYS; w++) {
		idx = base + w;
		slot = bpf_map_lookup_elem(&ks_cands, &idx);
		if (!slot)
			return;
		if (slot->hash == hash) {
			/* est is per class: keep the heavier, so one write
			 * does not make a read-hot key look light */
			if (slot->seq != s->seq || slot->count < est)
				slot->count = est;
			slot->seq = s->seq;
			return;
		}
		if (slot->hash == 0 || slot->seq != s->seq) {
			if (victim_count) {
				victim = slot;
				victim_count = 0;
				evict = slot->hash != 0;
			}
		} else if (slot->count < victim_count) {
			victim = slot;
			victim_count = slot->count;
			evict = 1;
		}
	}
	if (!victim || est <= victim_count)
		return;
	ks_count_pkt(evict ? KS_PKT_CAND_EVICT : KS_PKT_CAND_INSERT);
	victim->hash = hash;
	victim->seq = s->seq;
	victim->count = est;
	victim->len = len;
	__builtin_memcpy(victim->key, s->key, KS_KEY_BUF);
}

static __always_inline void ks_trace_key(struct ks_scratch *s, __u64 hash,
					 __u32 len, __u32 op)
{
	struct ks_event *ev;

	ev = bpf_ringbuf_reserve(&ks_events, sizeof(*ev), 0);
	if (!ev) {
		ks_count_pkt(KS_PKT_TRACE_DROP);
		return;
	}
	ev->ts_ns = bpf_ktime_get_ns();
	ev->hash = hash;
	__builtin_memcpy(ev->saddr, s->saddr, 16);
	ev->sport = s->sport;
	ev->op = op;
	ev->cls = ks_op_class(op);
	ev->proto = s->proto;
	ev->pad = 0;
	ev->len = len;
	__builtin_memcpy(ev->key, s->key, KS_KEY_BUF);
	bpf_ringbuf_submit(ev, 0);
}

/* Words of s->key the last sampled key left nonzero. */
static __always_inline __u32 ks_key_words(__u32 len)
{
	return (len + 7) / 8;
}

/*
 * Zeroes the words of s->key an earlier key used, so no byte of it
 * lingers in a candidate slot or trace event.
 */
__noinline int ks_key_clear(struct ks_scratch *s)
{
	__u32 i, used;
	__u64 zero = 0;

	if (!s)
		return 0;
	/* a zero clang cannot see, or the loop becomes a memset call */
	KS_OPAQUE(zero);
	used = s->key_words;
	for (i = 0; i < KS_KEY_WORDS; i++) {
		if (i >= used)
			break;
		s->key[i] = zero;
	}
	return 0;
}

/*
 * Copies [pos, pos+len) of the window into s->key, zero-padded. Global,
 * like the hash below, so that the verifier walks each length-dependent
 * loop once rather than once per exit of the other; and the clearing goes
 * first, in a call of its own, for the same reason: after the copy loop
 * the verifier knows words exactly on each of its 32 exits, and a loop
 * there would be walked once per exit.
 */
__noinline int ks_key_copy(struct ks_scratch *s, __u32 pos, __u32 len)
{
	__u32 i, words = ks_key_words(len), tail = len % 8;

	if (!s)
		return 0;
	ks_key_clear(s);
	for (i = 0; i < KS_KEY_WORDS; i++) {
		if (i >= words)
			break;
		s->key[i] = ks_win_word(s, pos + i * 8);
	}
	if (words && tail)
		s->key[(words - 1) & (KS_KEY_WORDS - 1)] &= (1ULL
							     << (tail * 8)) -
							    1;
	s->key_words = words;
	return 0;
}

__noinline __u64 ks_key_hash_scratch(struct ks_scratch *s, __u32 len)
{
	return s ? ks_key_hash(s->key, len) : 0;
}

/*
 * The rate in force on this CPU: its ks_rate entry for the epoch of seq,
 * else cfg_n (ks_config.sample_n), else 1; and its placement's 1 in P
 * from the same entry, else 1 (ks_place_next). A global function: the
 * verifier walks it once, not once more for every path of the parser
 * after the branch that calls it.
 */
__noinline int ks_sample_rate_load(struct ks_scratch *s, __u32 seq, __u32 cfg_n)
{
	__u32 idx = seq & (KS_EPOCHS - 1);
	struct ks_rate_entry *e;
	__u32 p;

	if (!s)
		return 0;
	e = bpf_map_lookup_elem(&ks_rate, &idx);
	s->sample_n = e && e->n ? e->n : cfg_n ? cfg_n : 1;
	p = e ? e->p & ~KS_RATE_P_UNIT : 0;
	s->place_p = p ? p : 1;
	s->place_w = e && (e->p & KS_RATE_P_UNIT) ? 1 : s->place_p;
	s->rate_seq = seq;
	s->rate_cfg = cfg_n;
	return 0;
}

/*
 * Looked up only when seq or the configured rate moves, once per CPU per
 * interval: an unsampled packet pays three compares of words already in
 * cache, and a write to the entry of the running epoch cannot change the
 * rate halfway through it.
 */
static __always_inline void ks_sample_rate(struct ks_scratch *s,
					   const struct ks_config *cfg)
{
	if (s->rate_seq != cfg->seq || s->rate_cfg != cfg->sample_n ||
	    !s->sample_n)
		ks_sample_rate_load(s, cfg->seq, cfg->sample_n);
}

/* The per-CPU countdown: true for 1 in sample_n keys. */
static __always_inline bool ks_sample_due(struct ks_scratch *s)
{
	if (s->countdown == 0 || s->countdown > s->sample_n)
		s->countdown = s->sample_n;
	return --s->countdown == 0;
}

/*
 * This CPU's next free record of the sample log, or NULL (*pos and *head
 * set for ks_slog_publish()): the log full (counted when count_full, a
 * constant), or no log entry for this CPU. Nothing is published until
 * ks_slog_publish().
 */
static __always_inline struct ks_slog_rec *ks_slog_slot(
	struct ks_slog_pos **pos, __u64 *head, const bool count_full)
{
	__u32 cpu, idx;
	__u64 tail;

	/*
	 * The verifier inlines this helper on x86-64 (6.10+: one per-CPU
	 * load); keeping the number in the scratch instead measured 2-9 ns
	 * slower on the single-key sampled packets (a branch and a store).
	 * Elsewhere it is a helper call.
	 */
	cpu = bpf_get_smp_processor_id();
	*pos = bpf_map_lookup_elem(&ks_slog_pos, &cpu);
	if (!*pos)
		return NULL;
	*head = (*pos)->head;
	/* the agent's tail, read once: it only ever grows, so a stale value
	 * can only make the log look fuller than it is */
	tail = *(volatile __u64 *)&(*pos)->tail;
	if (*head - tail >= KS_SLOG_RECS) {
		if (count_full)
			ks_count_pkt(KS_PKT_SLOG_FULL);
		return NULL;
	}
	idx = cpu * KS_SLOG_RECS + (__u32)(*head & KS_SLOG_MASK);
	return bpf_map_lookup_elem(&ks_slog, &idx);
}

/*
 * The record ks_slog_slot() gave, written, published for the drain. A
 * compiler barrier is enough on x86-64: TSO keeps stores in program
 * order, and the agent reads head (then the record) with loads TSO keeps
 * in order too. arm64 would need a release store of head here
 * (__atomic_store_n(..., __ATOMIC_RELEASE), or BPF's store_release on
 * 6.15+ kernels) and an acquire load of it in the agent.
 */
static __always_inline void ks_slog_publish(struct ks_slog_pos *pos, __u64 head)
{
	asm volatile("" ::: "memory");
	*(volatile __u64 *)&pos->head = head + 1;
}

/*
 * The sample log (issue 27; keysteer.h): a sampled read or write of up to
 * KS_SLOG_KEY bytes appended to this CPU's log for the agent to fold into
 * the sketch and the candidates in user space, so the datapath pays one
 * 64-byte record (one line) instead of the sketch's four rows and a
 * candidate bucket. Returns 1 when the record is in, 0 when the in-kernel
 * sketch must take the key: the log full (the drain behind or stopped;
 * counted), the rate beyond the record's 16 bits, or no log entry for
 * this CPU (a loader that did not size the maps). Never both, never
 * neither: no sample lost, none counted twice.
 */
static __always_inline int ks_slog_put(struct ks_scratch *s, __u64 hash,
				       __u32 len, __u32 cls)
{
	struct ks_config *cfg;
	struct ks_slog_pos *pos;
	struct ks_slog_rec *r;
	__u32 i, zero = 0;
	__u64 head;

	/*
	 * The flag read here, by the sampled key, not copied into the
	 * scratch with every packet: a field more written per packet, and
	 * the scratch's fields moved by it, cost the general path's
	 * unsampled packets 4-6 ns in `make bench`. The lookup is inlined
	 * and its line is in cache (the packet read it).
	 */
	cfg = bpf_map_lookup_elem(&ks_config, &zero);
	if (!cfg || !(cfg->flags & KS_CFG_SLOG) || s->sample_n > 0xffff)
		return 0;
	r = ks_slog_slot(&pos, &head, true);
	if (!r)
		return 0;
	r->hash = hash;
	r->len = (__u16)len;
	r->cls = (__u8)cls;
	r->pad = 0;
	r->seq = (__u16)s->seq;
	r->n = (__u16)s->sample_n;
	/* s->key is zero past the key (ks_key_copy, ks_fast_key_load), so
	 * no byte of an earlier, longer key reaches the record */
#pragma unroll
	for (i = 0; i < KS_SLOG_KEY / 8; i++)
		r->key[i] = s->key[i];
	ks_slog_publish(pos, head);
	ks_count_pkt(KS_PKT_SLOG);
	return 1;
}

/* A sampled key, already in s->key, its hash in hand: sketch and
 * candidates (or the sample log, while an agent drains it), ring, trace. */
static __always_inline void ks_key_record(struct ks_scratch *s, __u64 hash,
					  __u32 len, __u32 op)
{
	__u32 cls = ks_op_class(op);

	ks_count_pkt(KS_PKT_SAMPLED);
	if (cls == KS_CLASS_READ || cls == KS_CLASS_WRITE) {
		if (!(len <= KS_SLOG_KEY && ks_slog_put(s, hash, len, cls)))
			ks_cand_offer(s, hash, len,
				      ks_cms_add(hash, s->seq & 1, cls));
		ks_ring_defer(s, len, cls, hash);
	}
	if (s->trace)
		ks_trace_key(s, hash, len, op);
}

/*
 * A key in s->key that is due for sampling, or looked up in the hot table,
 * or both: hashed once for either.
 */
__noinline int ks_key_take(struct ks_scratch *s, __u32 len, __u32 op, __u32 due)
{
	__u64 hash;

	if (!s)
		return 0;
	hash = ks_key_hash_scratch(s, len);
	if (due)
		ks_key_record(s, hash, len, op);
	if (s->hot && ks_hot_maybe(hash))
		ks_hot_key(s, hash, op);
	return 1;
}

/*
 * Every key of a valid request: counted towards the packet, and copied
 * only when sampled or when the hot table needs it. len is
 * 1..KS_MAX_KEY_LEN and [pos, pos+len) lies inside the window.
 */
static __always_inline void ks_key_at(struct ks_scratch *s, __u32 pos,
				      __u32 len, __u32 op)
{
	bool due = ks_sample_due(s);

	s->pkt_keys++;
	if (!due && !s->hot)
		return;
	ks_key_copy(s, pos, len);
	ks_key_take(s, len, op, due);
}

#endif
