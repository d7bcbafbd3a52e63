/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pins_doc.h - the fleet's pin and split rules in etcd,
 * /keysteer/CLUSTER/pins (schema 1, docs/fleet.md): the text of a pin file
 * (the same rules, the same syntax as 'agent run --pins FILE', hotkeys.h)
 * in a JSON document with who wrote it and when. Every agent of the
 * cluster reads it; a document that does not read, or whose rules do not
 * parse, is refused whole. Pure code: no I/O.
 */
#ifndef KS_PINS_DOC_H
#define KS_PINS_DOC_H

#include <stddef.h>
#include "core/hotkeys.h"

#define KS_PINS_DOC_SCHEMA 1
#define KS_PINS_DOC_KIND   "keysteer-pins"
#define KS_PINS_DOC_MAX    (1 << 20) /* bytes of rules, as a pin file */

/* "/keysteer/NAME/pins" into buf; the length, or -ENAMETOOLONG. */
int ks_pins_doc_key(const char *cluster, char *buf, size_t len);

/*
 * The document of a pin file's text (len bytes) holding n rules, written
 * by `by` at `at`: malloc'd compact JSON, or NULL (out of memory, or text
 * that is not UTF-8: a JSON string cannot hold it).
 */
char *ks_pins_doc_encode(const char *text, size_t len, size_t n, const char *by,
			 const char *at);

struct ks_pins_doc {
	struct ks_hot_rules rules;
	char written_by[200];
	char written_at[40];
};

/*
 * Reads a document: schema 1, kind keysteer-pins, "rules" a string that
 * parses as a pin file (its errors named "SOURCE:LINE: ..."), "count" (if
 * given) the number of rules it holds. 0, or -EINVAL with the reason.
 */
int ks_pins_doc_decode(const char *json, size_t len, const char *source,
		       struct ks_pins_doc *d, char *err, size_t errlen);

#endif
