/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * names.h - the one table of printable names for the datapath's enums
 * (reasons, ops, classes, packet counters), used by report, trace and the
 * tests. The names are part of the JSON output: do not rename them.
 */
#ifndef KS_NAMES_H
#define KS_NAMES_H

#include <stddef.h>

extern const char *const ks_reason_names[];
extern const size_t ks_reason_names_n;
extern const char *const ks_op_names[];
extern const size_t ks_op_names_n;
extern const char *const ks_class_names[];
extern const size_t ks_class_names_n;
extern const char *const ks_pkt_names[];
extern const size_t ks_pkt_names_n;

/* Out-of-range values give "?" rather than crashing a report. */
const char *ks_reason_name(unsigned int reason);
const char *ks_op_name(unsigned int op);
const char *ks_class_name(unsigned int cls);
const char *ks_pkt_name(unsigned int counter);

#endif
