// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * view_rev.c - keysteer_view_revision (libkeysteer.h): the one figure a
 * caller that waits for its own change to reach a handle's view needs
 * (make bench-clients polls it for thousands of handles a millisecond).
 * keysteer_stats gives the same number, but it also counts the armed
 * entries of the whole hot-key table under the view's lock, which is
 * too slow to poll and holds up the view's follower while it runs.
 */
#include "client/client.h"

#define KSC_API __attribute__((visibility("default")))

KSC_API int64_t keysteer_view_revision(struct keysteer *ks)
{
	int64_t rev;

	if (!ks || !ks->fo)
		return 0;
	rev = ksc_rdlock(ks)->revision;
	ksc_unlock(ks);
	return rev;
}
