// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* steer_sched.c - the read schedule of an armed key (see steer_sched.h). */
#include <string.h>
#include "core/steer_sched.h"

void ks_steer_schedule(__u8 *sched, __u32 ncopies, unsigned owner_turns)
{
	int weight[KS_MAX_COPIES] = { 0 }, credit[KS_MAX_COPIES] = { 0 };
	unsigned t, c, best, nrep = ncopies > 1 ? ncopies - 1 : 0;

	if (ncopies > KS_MAX_COPIES)
		ncopies = KS_MAX_COPIES, nrep = KS_MAX_COPIES - 1;
	if (!nrep) {
		memset(sched, 0, KS_STEER_SCHED);
		return;
	}
	if (owner_turns > KS_STEER_SCHED)
		owner_turns = KS_STEER_SCHED;
	weight[0] = owner_turns;
	for (c = 1; c < ncopies; c++) /* the remainder to the first ones */
		weight[c] = (KS_STEER_SCHED - owner_turns) / nrep +
			    (c - 1 < (KS_STEER_SCHED - owner_turns) % nrep);
	/* smooth weighted round robin: each turn to the copy with the most
	 * credit, which then pays the total */
	for (t = 0; t < KS_STEER_SCHED; t++) {
		best = 0;
		for (c = 0; c < ncopies; c++) {
			credit[c] += weight[c];
			if (credit[c] > credit[best])
				best = c;
		}
		credit[best] -= KS_STEER_SCHED;
		sched[t] = (__u8)best;
	}
}

double ks_steer_unseen_reads(double owner_tcp_reads, unsigned owner_turns)
{
	if (!owner_turns || owner_turns >= KS_STEER_SCHED)
		return 0;
	return owner_tcp_reads * (double)(KS_STEER_SCHED - owner_turns) /
	       owner_turns;
}
