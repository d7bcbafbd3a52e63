/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_limit.h - the rate-limit part of 'agent report' (docs/limits.md):
 * each limited key with its limit, the UDP gets it let through and
 * refused (per second over the last interval, and since the limit was
 * set), its lone TCP gets (counted, never refused), and the datapath's
 * check counters. Pure rendering over copies of ks_limit_info and
 * ks_limit_pkts.
 */
#ifndef KS_REPORT_LIMIT_H
#define KS_REPORT_LIMIT_H

#include <stdio.h>
#include "ks_limit.h"

struct ks_limit_view {
	const struct ks_limit_info *row; /* used rows only */
	size_t n;
	struct ks_limit_pkts pkts; /* summed over CPUs */
	int hash_only;
};

void ks_render_limit_text(FILE *f, const struct ks_limit_view *l);
/* ,"limits":{...} */
void ks_render_limit_json(FILE *f, const struct ks_limit_view *l);

#endif
