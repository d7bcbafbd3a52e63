// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* unseen.c - an armed key's rate from its owner's turns (see unseen.h). */
#include <string.h>
#include "core/steer_sched.h"
#include "core/unseen.h"

void ks_unseen_reset(struct ks_unseen_window *w)
{
	memset(w, 0, sizeof(*w));
}

enum ks_unseen_verdict ks_unseen_add(struct ks_unseen_window *w,
				     __u64 owner_reads, double secs,
				     unsigned owner_turns, double *reads_ps)
{
	double reads = 0, span = 0;
	unsigned i, cell;

	*reads_ps = 0;
	if (!owner_turns || owner_turns >= KS_STEER_SCHED || secs <= 0)
		return KS_UNSEEN_NONE;
	w->reads[w->head] = owner_reads > 0xffffffffu ? 0xffffffffu
						      : (__u32)owner_reads;
	w->secs[w->head] = (float)secs;
	w->head = (w->head + 1) % KS_UNSEEN_WINDOW;
	if (w->n < KS_UNSEEN_WINDOW)
		w->n++;
	/* newest first, until the pooled reads are enough to tell */
	for (i = 0; i < w->n && reads < KS_UNSEEN_MIN_READS; i++) {
		cell = (w->head + KS_UNSEEN_WINDOW - 1 - i) % KS_UNSEEN_WINDOW;
		reads += w->reads[cell];
		span += w->secs[cell];
	}
	if (reads < KS_UNSEEN_MIN_READS && w->n < KS_UNSEEN_WINDOW)
		return KS_UNSEEN_HOLD;
	*reads_ps = ks_steer_unseen_reads(reads / span, owner_turns);
	return KS_UNSEEN_RATE;
}
