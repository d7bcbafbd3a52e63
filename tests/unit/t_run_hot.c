// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The hot-key table as 'agent run' drives it (user/agent/run_hot.c): options,
 * the pin file checked up front and watched, the routing file written
 * atomically when the table changes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ktest.h"
#include "util/opts.h"
#include "agent/run_hot.h"
#include "unit.h"

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* The whole file, NUL-terminated (static buffer), or "" if absent. */
static const char *slurp(const char *path)
{
	static char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n = 0;

	buf[0] = 0;
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = 0;
	return buf;
}

static void top_entry(struct ks_top_entry *e, const char *key, double reads)
{
	memset(e, 0, sizeof(*e));
	e->len = (__u16)strlen(key);
	memcpy(e->key, key, e->len);
	e->hash = ut_hash(key);
	e->reads_mps = (__u64)(reads * 1000);
}

static void t_parse_double(void)
{
	char err[KS_ERRLEN];
	double v = -1;

	kt_begin("run_hot_parse_double");
	CHECK(!ks_parse_double("--hot-fraction", "0.25", 0.0001, 1, &v, err,
			       sizeof(err)) &&
		      v == 0.25,
	      "0.25 -> %g", v);
	CHECK(ks_parse_double("--hot-fraction", "2", 0.0001, 1, &v, err,
			      sizeof(err)) == -ERANGE,
	      "2 accepted");
	CHECK(strstr(err, "--hot-fraction") != NULL, "err '%s'", err);
	CHECK(ks_parse_double("--x", "1x", 0, 10, &v, err, sizeof(err)) ==
		      -EINVAL,
	      "1x accepted");
	CHECK(ks_parse_double("--x", "", 0, 10, &v, err, sizeof(err)) ==
		      -EINVAL,
	      "empty accepted");
	CHECK(ks_parse_double("--x", "nan", 0, 10, &v, err, sizeof(err)),
	      "nan accepted");
	kt_end();
}

static void t_routing(void)
{
	char dir[] = "/tmp/ks_ut_hot.XXXXXX", pins[64], route[64], tmp[80];
	char err[KS_ERRLEN * 2];
	struct ks_run_hot h;
	struct ks_top_entry top[2];
	struct stat st;
	__u64 v1;

	kt_begin("run_hot_routing_file");
	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		kt_end();
		return;
	}
	snprintf(pins, sizeof(pins), "%s/pins", dir);
	snprintf(route, sizeof(route), "%s/route.json", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", route);

	/* A bad pin file is refused up front with FILE:LINE. */
	put(pins, "# c\npin a 3\npin b\n");
	ks_run_hot_defaults(&h);
	h.o.pins_path = pins;
	h.o.routing_path = route;
	h.o.replicas = 2;
	CHECK(ks_run_hot_prepare(&h, err, sizeof(err)) < 0,
	      "bad pins accepted");
	snprintf(tmp, sizeof(tmp), "%s:3:", pins);
	CHECK(strstr(err, tmp) != NULL, "err '%s' lacks '%s'", err, tmp);
	ks_run_hot_free(&h);
	snprintf(tmp, sizeof(tmp), "%s.tmp", route);

	put(pins, "pin pinned:key 3\n");
	ks_run_hot_defaults(&h);
	h.o.pins_path = pins;
	h.o.routing_path = route;
	h.o.replicas = 2;
	CHECK(!ks_run_hot_prepare(&h, err, sizeof(err)), "prepare: %s", err);
	CHECK_EQ(h.o.pol.max_copies, 3);
	CHECK(!ks_run_hot_start(&h, 7), "start failed");
	CHECK(strstr(slurp(route), "\"key\":\"pinned:key\"") != NULL,
	      "no pin at start: %.200s", slurp(route));
	CHECK(strstr(slurp(route), "\"ring_version\":7") != NULL,
	      "ring version: %.200s", slurp(route));
	CHECK(!stat(route, &st) && (st.st_mode & 0777) == 0640, "mode %o",
	      st.st_mode & 0777);
	CHECK(access(tmp, F_OK), "%s left behind", tmp);
	v1 = h.table->version;

	/* A hot key turns up in the file in the interval it turns hot; a
	 * cold one does not. */
	top_entry(&top[0], "flash:1", 30000);
	top_entry(&top[1], "cold:9", 50);
	ks_run_hot_interval(&h, top, 2, NULL, 0, 1, 7);
	CHECK(h.table->version != v1, "version did not move");
	CHECK(strstr(slurp(route), "\"key\":\"flash:1\"") != NULL,
	      "flash:1 missing: %.300s", slurp(route));
	CHECK(!strstr(slurp(route), "cold:9"), "cold key listed");

	/* A bad new pin file keeps the old rules. */
	put(pins, "pin pinned:key zero\n");
	ks_run_hot_poll(&h, 1);
	CHECK_EQ(h.table->rules.n, 1);
	CHECK(ks_hot_find(h.table, (const __u8 *)"pinned:key", 10) != NULL,
	      "pin lost after a bad reload");
	/* A good one replaces them. */
	put(pins, "pin other 2\n");
	ks_run_hot_poll(&h, 1);
	ks_run_hot_interval(&h, top, 2, NULL, 0, 2, 7);
	CHECK(strstr(slurp(route), "\"key\":\"other\"") != NULL,
	      "new pin missing: %.300s", slurp(route));
	ks_run_hot_free(&h);
	unlink(pins);
	unlink(route);
	rmdir(dir);
	kt_end();
}

void test_run_hot(void)
{
	t_parse_double();
	t_routing();
}
