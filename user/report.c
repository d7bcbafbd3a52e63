// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <string.h>
#include "names.h"
#include "opts.h"
#include "report.h"

#define KEY_COL 40 /* text dashboard: key column width */

void ks_json_string(FILE *f, const __u8 *s, size_t len)
{
	size_t i;

	fputc('"', f);
	for (i = 0; i < len; i++) {
		__u8 c = s[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

char *ks_key_text(const __u8 *s, size_t len, char *buf, size_t buflen)
{
	size_t i, o = 0, fit = 0;

	if (!buflen)
		return buf;
	for (i = 0; i < len; i++) {
		char tmp[5];
		size_t n;

		/* fit: the last escape boundary that leaves room for "..." */
		if (o + 3 < buflen)
			fit = o;
		if (s[i] == '\\')
			n = (size_t)snprintf(tmp, sizeof(tmp), "\\\\");
		else if (s[i] > 0x20 && s[i] < 0x7f)
			n = (size_t)snprintf(tmp, sizeof(tmp), "%c", s[i]);
		else
			n = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", s[i]);
		if (o + n >= buflen) {
			o = fit;
			if (o + 3 < buflen) {
				memcpy(buf + o, "...", 3);
				o += 3;
			}
			break;
		}
		memcpy(buf + o, tmp, n);
		o += n;
	}
	buf[o] = '\0';
	return buf;
}

void ks_format_duration(__u64 ns, char *buf, size_t len)
{
	__u64 s = ns / 1000000000ULL;

	if (s < 60)
		snprintf(buf, len, "%.1f s", ns / 1e9);
	else if (s < 3600)
		snprintf(buf, len, "%llum%02llus", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%lluh%02llum", s / 3600, (s / 60) % 60);
	else
		snprintf(buf, len, "%llud%02lluh", s / 86400, (s / 3600) % 24);
}

void ks_format_bytes_rate(double bps, char *buf, size_t len)
{
	static const char *const units[] = { "B/s", "KB/s", "MB/s", "GB/s" };
	int u = 0;

	while (bps >= 1000 && u < 3) {
		bps /= 1000;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", bps, units[u]);
}

static double per_s(__u64 mps)
{
	return mps / 1000.0;
}

/* Exact decimal of a milli value, no float rounding in the JSON. */
static void json_milli(FILE *f, __u64 m)
{
	fprintf(f, "%llu.%03llu", m / 1000, m % 1000);
}

static const char *mode_name(__u32 mode)
{
	return mode == 1 ? "native" : mode == 2 ? "generic" : "unknown";
}

static __u64 uptime_ns(const struct ks_view *v)
{
	const struct ks_report *r = v->rep;
	__u64 end = v->agent_alive ? v->now_ns : r->updated_ns;

	return end > r->start_ns && r->start_ns ? end - r->start_ns : 0;
}

static int n_top(const struct ks_view *v)
{
	int n = (int)v->rep->n_top;

	if (n > KS_REPORT_TOP)
		n = KS_REPORT_TOP;
	return n < v->top ? n : v->top;
}

static void text_header(FILE *f, const struct ks_view *v)
{
	const struct ks_report *r = v->rep;
	char up[32], iv[32], age[32];

	ks_format_duration(uptime_ns(v), up, sizeof(up));
	ks_format_seconds(r->interval_ms, iv, sizeof(iv));
	fprintf(f, "keysteer %s on %.16s (%s XDP)   agent pid %u (%s)   uptime %s\n",
		KS_VERSION_STR, r->ifname, mode_name(r->xdp_mode), r->agent_pid,
		v->agent_alive ? "running" : "not running", up);
	if (!r->updated_ns) {
		snprintf(age, sizeof(age), "no interval yet");
	} else {
		ks_format_duration(v->now_ns > r->updated_ns ?
					   v->now_ns - r->updated_ns : 0,
				   age, sizeof(age));
		strcat(age, " ago");
	}
	fprintf(f, "sample 1/%u   interval %s s   interval #%u   updated %s\n\n",
		r->sample_n ? r->sample_n : 1, iv, r->seq, age);
}

static void text_classes(FILE *f, const struct ks_view *v)
{
	const struct ks_report *r = v->rep;
	double req = 0, keys = 0;
	__u32 c;

	fprintf(f, "%-10s %14s %14s %14s\n", "class", "requests/s", "keys/s",
		"bytes/s");
	for (c = 0; c < KS_CLASS_MAX; c++) {
		char b[32];

		ks_format_bytes_rate(per_s(r->class_byte_mps[c]), b, sizeof(b));
		fprintf(f, "%-10s %14.1f %14.1f %14s\n", ks_class_name(c),
			per_s(r->class_req_mps[c]), per_s(r->class_key_mps[c]),
			b);
		req += per_s(r->class_req_mps[c]);
		keys += per_s(r->class_key_mps[c]);
	}
	fprintf(f, "%-10s %14.1f %14.1f\n\n", "all", req, keys);
}

static void text_errors(FILE *f, const struct ks_view *v)
{
	int any = 0;
	__u32 e;

	for (e = 0; e < KS_ERR_MAX; e++) {
		if (!v->totals->errors[e] && !v->rep->err_mps[e])
			continue;
		if (!any++)
			fprintf(f, "%-16s %12s %14s\n", "parse errors", "per s",
				"total");
		fprintf(f, "%-16s %12.1f %14llu\n", ks_reason_name(e),
			per_s(v->rep->err_mps[e]),
			(unsigned long long)v->totals->errors[e]);
	}
	if (!any)
		fprintf(f, "parse errors: none\n");
	fputc('\n', f);
}

static void text_top(FILE *f, const struct ks_view *v)
{
	const struct ks_report *r = v->rep;
	int i, n = n_top(v);

	fprintf(f, "top %d keys (%u sampled keys in the last interval)\n", n,
		(unsigned int)r->sampled_total);
	if (!n) {
		fprintf(f, "  (none yet)\n");
		return;
	}
	fprintf(f, "%3s  %-*s %12s %12s %7s %11s\n", "#", KEY_COL, "key",
		"reads/s", "writes/s", "share", "+/- per s");
	for (i = 0; i < n; i++) {
		const struct ks_top_entry *t = &r->top[i];
		char key[KEY_COL + 1];

		if (v->hash_only)
			snprintf(key, sizeof(key), "0x%016llx",
				 (unsigned long long)t->hash);
		else
			ks_key_text(t->key, t->len > KS_MAX_KEY_LEN ?
						    KS_MAX_KEY_LEN : t->len,
				    key, sizeof(key));
		fprintf(f, "%3d  %-*s %12.1f %12.1f %6.2f%% %11.1f\n", i + 1,
			KEY_COL, key, per_s(t->reads_mps), per_s(t->writes_mps),
			t->share_ppm / 1e4, per_s(t->err_mps));
	}
}

void ks_render_text(FILE *f, const struct ks_view *v)
{
	text_header(f, v);
	text_classes(f, v);
	text_errors(f, v);
	text_top(f, v);
}

static void json_class(FILE *f, const struct ks_report *r, __u32 c)
{
	fprintf(f, "\"%s\":{\"requests_per_s\":", ks_class_name(c));
	json_milli(f, r->class_req_mps[c]);
	fprintf(f, ",\"keys_per_s\":");
	json_milli(f, r->class_key_mps[c]);
	fprintf(f, ",\"bytes_per_s\":");
	json_milli(f, r->class_byte_mps[c]);
	fputc('}', f);
}

static void json_top_entry(FILE *f, const struct ks_view *v,
			   const struct ks_top_entry *t)
{
	fputc('{', f);
	if (!v->hash_only) {
		fprintf(f, "\"key\":");
		ks_json_string(f, t->key,
			       t->len > KS_MAX_KEY_LEN ? KS_MAX_KEY_LEN : t->len);
		fputc(',', f);
	}
	fprintf(f, "\"hash\":\"0x%016llx\",\"reads_per_s\":",
		(unsigned long long)t->hash);
	json_milli(f, t->reads_mps);
	fprintf(f, ",\"writes_per_s\":");
	json_milli(f, t->writes_mps);
	fprintf(f, ",\"share\":%u.%06u,\"error_bound\":",
		t->share_ppm / 1000000, t->share_ppm % 1000000);
	json_milli(f, t->err_mps);
	fputc('}', f);
}

void ks_render_json(FILE *f, const struct ks_view *v)
{
	const struct ks_report *r = v->rep;
	char ifname[sizeof(r->ifname) + 1];
	__u64 up = uptime_ns(v);
	int i, n = n_top(v);
	__u32 c;

	memcpy(ifname, r->ifname, sizeof(r->ifname));
	ifname[sizeof(r->ifname)] = '\0';
	fprintf(f, "{\"version\":%d,\"iface\":", KS_REPORT_VERSION);
	ks_json_string(f, (const __u8 *)ifname, strlen(ifname));
	fprintf(f, ",\"xdp_mode\":\"%s\",\"agent_pid\":%u,\"agent_alive\":%s,",
		mode_name(r->xdp_mode), r->agent_pid,
		v->agent_alive ? "true" : "false");
	fprintf(f, "\"uptime_s\":%llu.%03llu,\"sample_n\":%u,\"interval_s\":%u.%03u,",
		up / 1000000000ULL, (up / 1000000ULL) % 1000,
		r->sample_n ? r->sample_n : 1, r->interval_ms / 1000,
		r->interval_ms % 1000);
	fprintf(f, "\"seq\":%u,\"sampled_keys\":%llu,\"classes\":{", r->seq,
		(unsigned long long)r->sampled_total);
	for (c = 0; c < KS_CLASS_MAX; c++) {
		if (c)
			fputc(',', f);
		json_class(f, r, c);
	}
	fprintf(f, "},\"errors\":{");
	for (c = 0; c < KS_ERR_MAX; c++) {
		fprintf(f, "%s\"%s\":{\"per_s\":", c ? "," : "",
			ks_reason_name(c));
		json_milli(f, r->err_mps[c]);
		fprintf(f, ",\"total\":%llu}",
			(unsigned long long)v->totals->errors[c]);
	}
	fprintf(f, "},\"top\":[");
	for (i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		json_top_entry(f, v, &r->top[i]);
	}
	fprintf(f, "]}\n");
}
