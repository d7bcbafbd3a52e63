// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_hot_map.c - the steering schedule: every copy gets its share of the
 * KS_STEER_SCHED turns, exactly, spread out rather than in runs.
 */
#include <string.h>
#include "dp/hot_map.h"
#include "ktest.h"
#include "unit.h"

/* Longest run of one copy in the schedule, wrapping around. */
static unsigned longest_run(const __u8 *s)
{
	unsigned i, run = 1, best = 1;

	for (i = 1; i < 2 * KS_STEER_SCHED; i++) {
		run = s[i % KS_STEER_SCHED] == s[(i - 1) % KS_STEER_SCHED]
			      ? run + 1
			      : 1;
		if (run > best)
			best = run;
	}
	return best;
}

static void test_schedule(void)
{
	__u8 s[KS_STEER_SCHED];
	unsigned count[KS_MAX_COPIES], n, owner, i, want;

	kt_begin("steer_schedule_shares");
	for (n = 2; n <= KS_MAX_COPIES; n++) {
		for (owner = 0; owner <= KS_STEER_SCHED; owner += 8) {
			memset(count, 0, sizeof(count));
			ks_steer_schedule(s, n, owner);
			for (i = 0; i < KS_STEER_SCHED; i++)
				count[s[i] < n ? s[i] : 0] += s[i] < n;
			CHECK(count[0] == owner, "n %u owner %u: owner got %u",
			      n, owner, count[0]);
			for (i = 1; i < n; i++) {
				want = (KS_STEER_SCHED - owner) / (n - 1);
				CHECK(count[i] == want || count[i] == want + 1,
				      "n %u owner %u: replica %u got %u, want %u",
				      n, owner, i, count[i], want);
			}
			/* spread: no copy more than twice in a row (twice
			 * only where uneven shares meet the wrap) unless it
			 * has over half the turns */
			if (owner <= KS_STEER_SCHED / 2 && n > 2)
				CHECK(longest_run(s) <= 2,
				      "n %u owner %u: run %u", n, owner,
				      longest_run(s));
		}
	}
	ks_steer_schedule(s, 1, 32);
	for (i = 0; i < KS_STEER_SCHED; i++)
		CHECK(s[i] == 0, "one copy: all turns to the owner");
	kt_end();
}

void test_hot_map(void)
{
	test_schedule();
}
