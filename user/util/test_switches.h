/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_switches.h - switches that exist only so a test's control run can
 * break a guarantee (a freshness protocol off, a race widened): the
 * agent's --copy-protocol, --fill-delay-ms, --stream-state, --rate-scaling,
 * --place-scaling,
 * --log-samples (and replay's --log-samples drop), --drain-share,
 * --limit-auto-residual,
 * --limit-reply-head, --etcd-hot-events, --etcd-loop-call, --fleet-schema,
 * --ring-purge and --thread-caps,
 * libkeysteer's fold=,
 * batch_invalidate=, batch_limit=, limit_clients=, l1_drop=, invalidate=,
 * ring_union=, view_delay_ms=,
 * view_skip= and stale_read=. A command line, config file or spec that
 * names one is
 * refused unless the environment says KEYSTEER_TEST_SWITCHES=1, and a
 * process that takes one warns at start (docs/operations.md). The agent
 * and the library share this one gate, so the variable and the messages
 * are the same on both sides.
 */
#ifndef KS_TEST_SWITCHES_H
#define KS_TEST_SWITCHES_H

#include <stddef.h>

#define KS_TEST_SWITCHES_ENV "KEYSTEER_TEST_SWITCHES"

/* The test-only switches one run or handle took, as written. */
struct ks_test_switches {
	char taken[256]; /* "--copy-protocol off, --fill-delay-ms 20" */
};

/*
 * A test-only switch, named as its user wrote it ("--copy-protocol off",
 * "fold=unsafe"): 0 with word noted in ts when KEYSTEER_TEST_SWITCHES=1
 * is in the environment, else -1 with "<word> is a test-only switch ...;
 * <what to do>" in err. Its value is still the switch's parser's to check.
 */
int ks_test_switch(struct ks_test_switches *ts, const char *word, char *err,
		   size_t errlen);

/* The warning a process logs at start when ts took any switch: 1 with
 * the line in buf, 0 when it took none. */
int ks_test_switches_warning(const struct ks_test_switches *ts, char *buf,
			     size_t len);

#endif
