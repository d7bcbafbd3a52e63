// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_switches.c - the gate of the test-only switches (test_switches.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/test_switches.h"

/* Only "1": a variable left at "0" or "" by a script must not open it. */
static int allowed(void)
{
	const char *v = getenv(KS_TEST_SWITCHES_ENV);

	return v && !strcmp(v, "1");
}

int ks_test_switch(struct ks_test_switches *ts, const char *word, char *err,
		   size_t errlen)
{
	size_t o = strlen(ts->taken);

	if (!allowed()) {
		snprintf(
			err, errlen,
			"%s is a test-only switch, for a test's control run; leave it out, or in a test set " KS_TEST_SWITCHES_ENV
			"=1 in the environment",
			word);
		return -1;
	}
	/* a list cut short still warns; the warning is what matters */
	if (o < sizeof(ts->taken))
		snprintf(ts->taken + o, sizeof(ts->taken) - o, "%s%s",
			 o ? ", " : "", word);
	return 0;
}

int ks_test_switches_warning(const struct ks_test_switches *ts, char *buf,
			     size_t len)
{
	if (!ts->taken[0])
		return 0;
	snprintf(
		buf, len,
		"test-only switches in force (" KS_TEST_SWITCHES_ENV
		"=1): %s; they break guarantees on purpose, never run so in production",
		ts->taken);
	return 1;
}
