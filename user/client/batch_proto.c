// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * batch_proto.c - the text of keysteer_set_many's pipelines (batch_proto.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "client/batch_proto.h"
#include "net/mc_client.h" /* KS_MC_TOMB_FLAGS */

size_t ksc_batch_line(char *buf, enum ksc_batch_cmd cmd, const void *key,
		      size_t klen, size_t vlen, __u32 flags, long ttl,
		      unsigned n)
{
	int k = (int)klen, len;

	switch (cmd) {
	case KSC_BC_SET:
		len = snprintf(buf, KSC_BATCH_LINE_MAX,
			       "ms %.*s %zu T%ld F%u q O%u\r\n", k,
			       (const char *)key, vlen, ttl, flags, n);
		break;
	case KSC_BC_MARK:
		len = snprintf(buf, KSC_BATCH_LINE_MAX,
			       "md %.*s I T%ld q O%u\r\n", k, (const char *)key,
			       ttl, n);
		break;
	default:
		len = snprintf(buf, KSC_BATCH_LINE_MAX,
			       "ms %.*s 0 ME T%ld F%u q O%u\r\n\r\n", k,
			       (const char *)key, ttl, KS_MC_TOMB_FLAGS, n);
		break;
	}
	return len < 0 ? 0 : (size_t)len;
}

/* "O<n>" among the line's tokens; -1 when there is none. */
static long opaque_of(const char *line)
{
	const char *p = line;
	char *end;
	long v;

	while ((p = strstr(p, " O"))) {
		p += 2;
		v = strtol(p, &end, 10);
		if (end != p && v >= 0 && (*end == '\0' || *end == ' '))
			return v;
	}
	return -1;
}

void ksc_batch_reply_parse(const char *line, struct ksc_batch_reply *r)
{
	static const struct {
		const char *word;
		enum ksc_batch_code code;
	} codes[] = { { "MN", KSC_BR_MN },
		      { "HD", KSC_BR_HD },
		      { "NF", KSC_BR_NF },
		      { "NS", KSC_BR_NS },
		      { "EX", KSC_BR_EX } };
	size_t i;

	r->opaque = -1;
	r->code = KSC_BR_BAD;
	if (!strncmp(line, "SERVER_ERROR", 12) ||
	    !strncmp(line, "CLIENT_ERROR", 12) || !strcmp(line, "ERROR")) {
		r->code = KSC_BR_ERROR;
		return;
	}
	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (!strncmp(line, codes[i].word, 2) &&
		    (line[2] == '\0' || line[2] == ' ')) {
			r->code = codes[i].code;
			r->opaque = opaque_of(line);
			return;
		}
}

enum ksc_inv_state ksc_inv_step(enum ksc_inv_state s, int answered,
				enum ksc_batch_code code)
{
	if (s != KSC_INV_MARK && s != KSC_INV_TOMB)
		return s;
	if (!answered || code == KSC_BR_HD)
		return KSC_INV_DONE;
	if (s == KSC_INV_MARK && code == KSC_BR_NF)
		return KSC_INV_TOMB;
	if (s == KSC_INV_TOMB && code == KSC_BR_NS)
		return KSC_INV_MARK;
	return KSC_INV_FAIL;
}
