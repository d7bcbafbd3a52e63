// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "render/json.h"
#include "render/report_limit.h"
#include "render/text.h"

/* What the report says of TCP: one line, the same in text and JSON. */
#define KS_LIMIT_TCP_NOTE                                                      \
	"TCP gets are counted, not refused: a request cannot be taken out "    \
	"of a stream; libkeysteer refuses them in the client"

void ks_render_limit_text(FILE *f, const struct ks_limit_view *l)
{
	char key[4 * KS_KEY_BUF + 8];
	size_t i;

	if (!l->n)
		return;
	fprintf(f,
		"\nrate limits (UDP gets over the limit answered SERVER_ERROR):\n"
		"  %-32s %9s %11s %11s %11s %11s\n",
		"key", "limit/s", "allowed/s", "refused/s", "tcp/s", "refused");
	for (i = 0; i < l->n; i++) {
		const struct ks_limit_info *r = &l->row[i];

		if (l->hash_only)
			snprintf(key, sizeof(key), "%016llx",
				 (unsigned long long)r->hash);
		else
			ks_key_text(r->key, r->len, key, sizeof(key));
		fprintf(f, "  %-32s %9u %11.1f %11.1f %11.1f %11llu%s\n", key,
			r->rate, r->allowed_mps / 1000.0,
			r->refused_mps / 1000.0, r->tcp_mps / 1000.0,
			(unsigned long long)r->refused,
			r->automatic  ? "  (auto)"
			: r->rule_len ? "  (prefix rule)"
				      : "");
	}
	fprintf(f, "  %s\n", KS_LIMIT_TCP_NOTE);
}

void ks_render_limit_json(FILE *f, const struct ks_limit_view *l)
{
	size_t i;

	fprintf(f,
		",\"limits\":{\"checked\":%llu,\"replied\":%llu,\"dropped\":%llu,"
		"\"no_reply\":%llu,\"grown_at_head\":%llu,\"other_shape\":%llu,"
		"\"tcp\":\"%s\",\"keys\":[",
		(unsigned long long)l->pkts.n[KS_LIM_CHECKED],
		(unsigned long long)l->pkts.n[KS_LIM_REPLIED],
		(unsigned long long)l->pkts.n[KS_LIM_DROPPED],
		(unsigned long long)l->pkts.n[KS_LIM_NO_REPLY],
		(unsigned long long)l->pkts.n[KS_LIM_GREW_HEAD],
		(unsigned long long)l->pkts.n[KS_LIM_OTHER], KS_LIMIT_TCP_NOTE);
	for (i = 0; i < l->n; i++) {
		const struct ks_limit_info *r = &l->row[i];

		fprintf(f, "%s{", i ? "," : "");
		if (!l->hash_only) {
			fprintf(f, "\"key\":");
			ks_json_string(f, r->key, r->len);
			fputc(',', f);
		}
		fprintf(f,
			"\"hash\":\"0x%016llx\",\"rate_per_s\":%u,\"burst\":%u,"
			"\"prefix_rule\":%s,\"auto\":%s,\"allowed_per_s\":%.3f,"
			"\"refused_per_s\":%.3f,\"tcp_per_s\":%.3f,"
			"\"allowed\":%llu,\"refused\":%llu,\"tcp_gets\":%llu,"
			"\"collided\":%llu}",
			(unsigned long long)r->hash, r->rate, r->burst,
			r->rule_len ? "true" : "false",
			r->automatic ? "true" : "false",
			r->allowed_mps / 1000.0, r->refused_mps / 1000.0,
			r->tcp_mps / 1000.0, (unsigned long long)r->allowed,
			(unsigned long long)r->refused,
			(unsigned long long)r->tcp,
			(unsigned long long)r->collided);
	}
	fprintf(f, "]}");
}
