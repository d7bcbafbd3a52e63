// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fz_opts.c - libFuzzer harness of the option value parsers: whole numbers
 * and seconds and port lists (user/util/opts.c), decimals (user/agent/run_hot.c
 * ks_parse_double), interface names (user/util/opts.c), --listen
 * (user/net/http_serve.c) and --sample (user/core/sample_rate.c). The
 * first byte picks the parser, the next ones the bounds and the error
 * buffer's size. An accepted value must lie in its bounds and, where a
 * formatter exists, survive formatting and parsing again unchanged.
 */
#include <math.h>
#include <netinet/in.h>
#include <net/if.h>
#include "util/opts.h"
#include "agent/run_hot.h"
#include "net/http_serve.h"
#include "core/sample_rate.h"
#include "fz_common.h"

static void fuzz_uint(struct fz_bytes *b, char *err, size_t errlen)
{
	unsigned long long lo = fz_take_u32(b), hi = fz_take_u32(b), v = 0;
	char *s;
	int rc;

	if (fz_take_u8(b) & 1)
		hi = hi << 32 | fz_take_u32(b);
	s = fz_take_rest(b);
	rc = ks_parse_uint("--n", s, lo, hi, &v, err, errlen);
	if (rc)
		fz_check_err(err, errlen);
	else
		FZ_CHECK(v >= lo && v <= hi, "%llu outside %llu..%llu", v, lo,
			 hi);
	free(s);
}

static void fuzz_seconds(struct fz_bytes *b, char *err, size_t errlen)
{
	__u32 lo = fz_take_u32(b), hi = fz_take_u32(b), ms = 0, again = 0;
	char *s = fz_take_rest(b), text[32];
	int rc;

	rc = ks_parse_seconds("--interval", s, lo, hi, &ms, err, errlen);
	if (rc) {
		fz_check_err(err, errlen);
	} else {
		FZ_CHECK(ms >= lo && ms <= hi, "%u ms outside %u..%u", ms, lo,
			 hi);
		ks_format_seconds(ms, text, sizeof(text));
		FZ_CHECK(!ks_parse_seconds("--interval", text, lo, hi, &again,
					   err, errlen) &&
				 again == ms,
			 "%u ms formats as '%s', which parses to %u", ms, text,
			 again);
	}
	free(s);
}

static void fuzz_ports(struct fz_bytes *b, char *err, size_t errlen)
{
	__u16 ports[KS_MAX_PORTS], again[KS_MAX_PORTS];
	char *s = fz_take_rest(b), text[80];
	int n = -1, m = -1, i, j, rc;

	rc = ks_parse_ports(s, ports, &n, err, errlen);
	if (rc) {
		fz_check_err(err, errlen);
		free(s);
		return;
	}
	FZ_CHECK(n >= 1 && n <= KS_MAX_PORTS, "%d ports", n);
	for (i = 0; i < KS_MAX_PORTS; i++) {
		FZ_CHECK((i < n) == (ports[i] != 0), "slot %d is %u", i,
			 ports[i]);
		for (j = 0; j < i && i < n; j++)
			FZ_CHECK(ports[i] != ports[j], "port %u twice",
				 ports[i]);
	}
	ks_format_ports(ports, text, sizeof(text));
	FZ_CHECK(!ks_parse_ports(text, again, &m, err, errlen) && m == n &&
			 !memcmp(again, ports, sizeof(ports)),
		 "ports format as '%s', which parses differently", text);
	free(s);
}

static void fuzz_double(struct fz_bytes *b, char *err, size_t errlen)
{
	double lo = (double)(int32_t)fz_take_u32(b) / 8,
	       hi = lo + (double)fz_take_u32(b), v = NAN;
	char *s = fz_take_rest(b);

	if (ks_parse_double("--hot-fraction", s, lo, hi, &v, err, errlen))
		fz_check_err(err, errlen);
	else
		FZ_CHECK(isfinite(v) && v >= lo && v <= hi, "%g outside %g..%g",
			 v, lo, hi);
	free(s);
}

static void fuzz_ifname(struct fz_bytes *b, char *err, size_t errlen)
{
	char *s = fz_take_rest(b);

	if (ks_check_ifname_syntax(s, err, errlen)) {
		fz_check_err(err, errlen);
	} else {
		/* a name that cannot leave the pin folder */
		FZ_CHECK(strlen(s) < IF_NAMESIZE && !strchr(s, '/') &&
				 strcmp(s, "..") && strcmp(s, "."),
			 "'%s' accepted", s);
	}
	free(s);
}

/*
 * --sample N | auto[:TARGET] (core/sample_rate.c, since 06ad236; --sample
 * was ks_parse_uint's before): a fixed rate in 1..max_n or auto with a
 * target in range, never both; and the controller's next rate for that
 * target from any counts is a power of two in 1..KS_RATE_MAX_N, given
 * the rate before as the agent gives it: KS_RATE_START or 1 at first,
 * then the controller's own answers, so always a power of two in range
 * (from any other N it may keep that N, which no caller gives it).
 */
static void fuzz_sample(struct fz_bytes *b, char *err, size_t errlen)
{
	__u32 max_n = 1 + fz_take_u32(b) % 1000000,
	      cur = 1u << (fz_take_u32(b) % 11), n; /* 1..KS_RATE_MAX_N */
	__u64 keys = (__u64)fz_take_u32(b) << 16 | fz_take_u8(b);
	__u32 ns = fz_take_u32(b);
	struct ks_sample_opt o;
	char *s = fz_take_rest(b);

	memset(&o, 0xa5, sizeof(o));
	if (ks_sample_parse(s, max_n, &o, err, errlen)) {
		fz_check_err(err, errlen);
	} else if (o.target) {
		FZ_CHECK(!o.n && o.target >= KS_RATE_TARGET_MIN &&
				 o.target <= KS_RATE_TARGET_MAX &&
				 !strncmp(s, "auto", 4),
			 "'%s': n %u target %u", s, o.n, o.target);
		n = ks_rate_next(cur, keys, ns ? ns : 1, o.target);
		FZ_CHECK(n >= 1 && n <= KS_RATE_MAX_N && !(n & (n - 1)),
			 "rate 1 in %u from %u after %llu keys in %u ns", n,
			 cur, (unsigned long long)keys, ns);
	} else {
		FZ_CHECK(o.n >= 1 && o.n <= max_n, "'%s': n %u of 1..%u", s,
			 o.n, max_n);
	}
	free(s);
}

static void fuzz_listen(struct fz_bytes *b, char *err, size_t errlen)
{
	struct sockaddr_in a;
	char *s = fz_take_rest(b);

	memset(&a, 0xa5, sizeof(a));
	if (ks_http_parse_listen(s, &a, err, errlen))
		fz_check_err(err, errlen);
	else
		FZ_CHECK(a.sin_family == AF_INET && ntohs(a.sin_port) >= 1,
			 "accepted with family %u port %u", a.sin_family,
			 ntohs(a.sin_port));
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_bytes b = { data, size };
	uint8_t which = fz_take_u8(&b);
	size_t errlen;
	char *err = fz_errbuf(&b, &errlen);

	switch (which % 7) { /* 0..5 pick as they did before sample came */
	case 0:
		fuzz_uint(&b, err, errlen);
		break;
	case 1:
		fuzz_seconds(&b, err, errlen);
		break;
	case 2:
		fuzz_ports(&b, err, errlen);
		break;
	case 3:
		fuzz_double(&b, err, errlen);
		break;
	case 4:
		fuzz_ifname(&b, err, errlen);
		break;
	case 5:
		fuzz_listen(&b, err, errlen);
		break;
	default:
		fuzz_sample(&b, err, errlen);
		break;
	}
	free(err);
	return 0;
}
