/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_hot.h - the hot-key part of 'agent report': the slots the agent
 * keeps in ks_hot (key, rates, copies, state, steered and TCP reads, the
 * replicas) and each replica's load. Pure rendering over copies of the
 * maps, like report.c.
 */
#ifndef KS_REPORT_HOT_H
#define KS_REPORT_HOT_H

#include <stdio.h>
#include "keysteer.h"

struct ks_hot_view {
	const struct ks_hot_slot *slot; /* used slots only */
	size_t n;
	const struct ks_replica *rep; /* KS_MAX_REPLICAS entries */
	__u64 now_mono_ns;            /* to tell armed from expired */
	int hash_only;
	int replies; /* ks_report.replies: the owner's replies counted */
};

/* Where the owner's hits and misses come from, as the report, the
 * metrics and the fleet name it. */
#define KS_REPLIES_SOURCE "tc egress, exact for UDP and unpipelined TCP"

/* "armed", "dirty", "expired", "filling" or "counted" (one copy). */
const char *ks_hot_state_name(const struct ks_hot_slot *s, __u64 now_mono_ns);

void ks_render_hot_text(FILE *f, const struct ks_hot_view *h);
/* ,"hot_keys":[...],"replicas":[...] */
void ks_render_hot_json(FILE *f, const struct ks_hot_view *h);

#endif
