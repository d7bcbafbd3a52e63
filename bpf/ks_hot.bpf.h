/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ks_hot.bpf.h - keys the agent declared hot (map ks_hot, see keysteer.h).
 * While the table has entries every key is hashed and looked up here, not
 * only the sampled ones: a write to a hot key must mark it dirty at once,
 * and a read of it may be steered. With the table empty nothing here runs.
 */
#ifndef KS_HOT_BPF_H
#define KS_HOT_BPF_H

#include "ks_count.bpf.h"
#include "ks_scratch.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KS_HOT_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct ks_hot_slot);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_hot SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct ks_hot_filter);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_hot_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KS_HOT_SLOTS);
	__type(key, __u32);
	__type(value, struct ks_hot_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_hot_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KS_MAX_REPLICAS);
	__type(key, __u32);
	__type(value, struct ks_replica);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_replicas SEC(".maps");

/* The agent's VLAN sub-interfaces: where a tagged get may be steered. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KS_MAX_VLAN_DEVS);
	__type(key, struct ks_vlan_key);
	__type(value, __u32); /* the sub-interface's ifindex */
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_vlans SEC(".maps");

/* Reads steered to each replica, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KS_MAX_REPLICAS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_replica_stats SEC(".maps");

/* Wakes the agent when a write dirties an armed key, so it refills the
 * replicas now rather than at the next interval. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ks_hot_events SEC(".maps");

#define KS_READ_ONCE(x) (*(volatile typeof(x) *)&(x))

/* A write: reads of the key go to the owner until the agent re-arms. */
static __always_inline void ks_hot_dirty(struct ks_hot_slot *slot, __u32 idx,
					 __u64 hash)
{
	struct ks_hot_event *ev;
	__u64 seq;

	/* Fetch-and-add would need -mcpu=v3; a racing second writer may
	 * send a duplicate event, which the agent tolerates. */
	__sync_fetch_and_add(&slot->write_seq, 1);
	slot->last_write_ns = bpf_ktime_get_ns();
	seq = KS_READ_ONCE(slot->write_seq);
	if (seq - 1 != KS_READ_ONCE(slot->armed_seq) ||
	    !KS_READ_ONCE(slot->expires_ns))
		return; /* already dirty, or not armed at all */
	ev = bpf_ringbuf_reserve(&ks_hot_events, sizeof(*ev), 0);
	if (!ev)
		return; /* the agent also scans the table every interval */
	ev->hash = hash;
	ev->write_seq = seq;
	ev->slot = idx;
	ev->pad = 0;
	bpf_ringbuf_submit(ev, 0);
}

/* May the key of this hash be in ks_hot? Yes when the filter is gone. */
static __always_inline bool ks_hot_maybe(__u64 hash)
{
	__u32 zero = 0;
	struct ks_hot_filter *f = bpf_map_lookup_elem(&ks_hot_filter, &zero);

	return !f || ks_hot_filter_has(f, ks_hot_bucket(hash));
}

/*
 * Every key while the table has entries, its hash in hand. A lone UDP get
 * of a hot key is left in s->steer_slot for ks_steer(); the packet is not
 * known to be a lone get until the parse ends.
 */
__noinline int ks_hot_key(struct ks_scratch *s, __u64 hash, __u32 op)
{
	struct ks_hot_slot *slot = NULL;
	struct ks_hot_stats *st;
	__u32 base, w, idx = 0, cls;

	if (!s)
		return 0;
	base = ks_hot_bucket(hash) * KS_HOT_WAYS;
#pragma unroll
	for (w = 0; w < KS_HOT_WAYS; w++) {
		idx = base + w;
		slot = bpf_map_lookup_elem(&ks_hot, &idx);
		if (!slot)
			return 0;
		if (KS_READ_ONCE(slot->hash) == hash)
			break;
	}
	if (w == KS_HOT_WAYS || !slot)
		return 0;
	st = bpf_map_lookup_elem(&ks_hot_stats, &idx);
	if (!st)
		return 0;
	cls = ks_op_class(op);
	if (cls == KS_CLASS_WRITE) {
		st->writes++;
		ks_count_pkt(KS_PKT_HOT_WRITE);
		ks_hot_dirty(slot, idx, hash);
		return 1;
	}
	if (cls != KS_CLASS_READ)
		return 1;
	/* the packet's reply may be paired with it (ks_reply.bpf.h) */
	s->reply_slot = idx + 1;
	s->reply_hash = hash;
	st->reads++;
	ks_count_pkt(KS_PKT_HOT_READ);
	if (s->proto == IPPROTO_TCP)
		st->tcp_reads++;
	else if (op == KS_OP_GET && s->pkt_keys == 1)
		s->steer_slot = idx + 1;
	else
		st->owner++;
	return 1;
}

/* A read of slot idx that stays with the owner, counted. */
static __always_inline void ks_hot_owner(__u32 idx)
{
	struct ks_hot_stats *st = bpf_map_lookup_elem(&ks_hot_stats, &idx);

	if (st)
		st->owner++;
}

#endif
