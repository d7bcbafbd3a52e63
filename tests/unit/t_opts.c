// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Option parsing: numbers, decimal seconds, port lists, interface names. */
#include <errno.h>
#include <string.h>
#include "ktest.h"
#include "util/opts.h"
#include "unit.h"

static int has(const char *err, const char *what)
{
	return strstr(err, what) != NULL && strchr(err, ';') != NULL;
}

static void numbers(void)
{
	char err[KS_ERRLEN];
	unsigned long long v = 99;

	kt_begin("parse_uint_ranges");
	CHECK(ks_parse_uint("--sample", "1", 1, 100, &v, err, sizeof(err)) ==
			      0 &&
		      v == 1,
	      "1 rejected");
	CHECK(ks_parse_uint("--sample", "100", 1, 100, &v, err, sizeof(err)) ==
			      0 &&
		      v == 100,
	      "max rejected");
	CHECK_EQ(ks_parse_uint("--sample", "0", 1, 100, &v, err, sizeof(err)),
		 -ERANGE);
	CHECK(has(err, "--sample '0' is out of range"), "message: %s", err);
	CHECK_EQ(ks_parse_uint("--sample", "101", 1, 100, &v, err, sizeof(err)),
		 -ERANGE);
	CHECK_EQ(ks_parse_uint("--sample", "18446744073709551616", 1, 100, &v,
			       err, sizeof(err)),
		 -ERANGE);
	CHECK_EQ(ks_parse_uint("--sample", "-1", 1, 100, &v, err, sizeof(err)),
		 -EINVAL);
	CHECK(has(err, "not a whole number"), "message: %s", err);
	CHECK_EQ(
		ks_parse_uint("--sample", "0x10", 1, 100, &v, err, sizeof(err)),
		-EINVAL);
	CHECK_EQ(ks_parse_uint("--sample", " 5", 1, 100, &v, err, sizeof(err)),
		 -EINVAL);
	CHECK_EQ(ks_parse_uint("--sample", "5s", 1, 100, &v, err, sizeof(err)),
		 -EINVAL);
	CHECK_EQ(ks_parse_uint("--sample", "", 1, 100, &v, err, sizeof(err)),
		 -EINVAL);
	CHECK_EQ(v, 100); /* failures leave the output alone */
	kt_end();

	kt_begin("parse_decimal_seconds");
	{
		__u32 ms = 0;

		CHECK(!ks_parse_seconds("--interval", "0.5", 100, 3600000, &ms,
					err, sizeof(err)) &&
			      ms == 500,
		      "0.5 -> %u", ms);
		CHECK(!ks_parse_seconds("--interval", "1", 100, 3600000, &ms,
					err, sizeof(err)) &&
			      ms == 1000,
		      "1 -> %u", ms);
		CHECK(!ks_parse_seconds("--interval", "2.125", 100, 3600000,
					&ms, err, sizeof(err)) &&
			      ms == 2125,
		      "2.125 -> %u", ms);
		CHECK(!ks_parse_seconds("--interval", "0.1", 100, 3600000, &ms,
					err, sizeof(err)) &&
			      ms == 100,
		      "0.1 -> %u", ms);
		CHECK(!ks_parse_seconds("--interval", "3600", 100, 3600000, &ms,
					err, sizeof(err)) &&
			      ms == 3600000,
		      "3600 -> %u", ms);
		CHECK(!ks_parse_seconds("--interval", ".5", 100, 3600000, &ms,
					err, sizeof(err)) &&
			      ms == 500,
		      ".5 -> %u", ms);
		CHECK_EQ(ks_parse_seconds("--interval", "0.09", 100, 3600000,
					  &ms, err, sizeof(err)),
			 -ERANGE);
		CHECK(has(err, "from 0.1 to 3600"), "message: %s", err);
		CHECK_EQ(ks_parse_seconds("--interval", "3600.001", 100,
					  3600000, &ms, err, sizeof(err)),
			 -ERANGE);
		CHECK_EQ(ks_parse_seconds("--interval", "99999999999", 100,
					  3600000, &ms, err, sizeof(err)),
			 -ERANGE);
		CHECK_EQ(ks_parse_seconds("--interval", "0.0001", 100, 3600000,
					  &ms, err, sizeof(err)),
			 -EINVAL);
		CHECK(has(err, "more than 3 decimals"), "message: %s", err);
		CHECK_EQ(ks_parse_seconds("--interval", "1.2.3", 100, 3600000,
					  &ms, err, sizeof(err)),
			 -EINVAL);
		CHECK_EQ(ks_parse_seconds("--interval", "1s", 100, 3600000, &ms,
					  err, sizeof(err)),
			 -EINVAL);
		CHECK_EQ(ks_parse_seconds("--interval", ".", 100, 3600000, &ms,
					  err, sizeof(err)),
			 -EINVAL);
		CHECK_EQ(ks_parse_seconds("--interval", "-1", 100, 3600000, &ms,
					  err, sizeof(err)),
			 -EINVAL);
		CHECK_EQ(ms, 500); /* failures leave the last value */
	}
	kt_end();

	kt_begin("format_seconds");
	{
		char b[16];

		ks_format_seconds(500, b, sizeof(b));
		CHECK(!strcmp(b, "0.5"), "500 -> %s", b);
		ks_format_seconds(1000, b, sizeof(b));
		CHECK(!strcmp(b, "1"), "1000 -> %s", b);
		ks_format_seconds(2125, b, sizeof(b));
		CHECK(!strcmp(b, "2.125"), "2125 -> %s", b);
		ks_format_seconds(1050, b, sizeof(b));
		CHECK(!strcmp(b, "1.05"), "1050 -> %s", b);
	}
	kt_end();
}

static void ports(void)
{
	__u16 p[KS_MAX_PORTS];
	char err[KS_ERRLEN], buf[64];
	int n = 0;

	kt_begin("parse_ports_list");
	CHECK(!ks_parse_ports("11211,11212", p, &n, err, sizeof(err)),
	      "rejected: %s", err);
	CHECK_EQ(n, 2);
	CHECK_EQ(p[0], 11211);
	CHECK_EQ(p[1], 11212);
	CHECK_EQ(p[2], 0);
	ks_format_ports(p, buf, sizeof(buf));
	CHECK(!strcmp(buf, "11211,11212"), "formatted %s", buf);
	CHECK(!ks_parse_ports("1,2,3,4,5,6,7,65535", p, &n, err, sizeof(err)),
	      "8 ports rejected: %s", err);
	CHECK_EQ(n, 8);
	CHECK_EQ(p[7], 65535);
	kt_end();

	kt_begin("parse_ports_errors");
	CHECK(ks_parse_ports("1,2,3,4,5,6,7,8,9", p, &n, err, sizeof(err)),
	      "9 ports taken");
	CHECK(has(err, "more than 8 ports"), "message: %s", err);
	CHECK(ks_parse_ports("0", p, &n, err, sizeof(err)), "port 0 taken");
	CHECK(has(err, "port '0'"), "message: %s", err);
	CHECK(ks_parse_ports("65536", p, &n, err, sizeof(err)), "65536 taken");
	CHECK(ks_parse_ports("11211,", p, &n, err, sizeof(err)),
	      "trailing comma taken");
	CHECK(has(err, "empty"), "message: %s", err);
	CHECK(ks_parse_ports(",11211", p, &n, err, sizeof(err)),
	      "leading comma taken");
	CHECK(ks_parse_ports("11211,,1", p, &n, err, sizeof(err)),
	      "double comma taken");
	CHECK(ks_parse_ports("abc", p, &n, err, sizeof(err)), "abc taken");
	CHECK(ks_parse_ports("11211 ,1", p, &n, err, sizeof(err)),
	      "space taken");
	CHECK(ks_parse_ports("", p, &n, err, sizeof(err)), "empty taken");
	CHECK(ks_parse_ports("80,80", p, &n, err, sizeof(err)),
	      "duplicate taken");
	CHECK(has(err, "twice"), "message: %s", err);
	CHECK(ks_parse_ports("123456789012345678,1", p, &n, err, sizeof(err)),
	      "overlong item taken");
	kt_end();
}

static void ifnames(void)
{
	char err[KS_ERRLEN];
	unsigned int idx = 0;

	kt_begin("interface_names");
	CHECK(!ks_check_ifname_syntax("eth0", err, sizeof(err)), "eth0: %s",
	      err);
	CHECK(!ks_check_ifname_syntax("veth-c0.10", err, sizeof(err)),
	      "veth-c0.10: %s", err);
	CHECK(ks_check_ifname_syntax("", err, sizeof(err)), "empty taken");
	CHECK(ks_check_ifname_syntax("0123456789abcdef", err, sizeof(err)),
	      "16 characters taken");
	CHECK(has(err, "longer than 15"), "message: %s", err);
	CHECK(!ks_check_ifname_syntax("0123456789abcde", err, sizeof(err)),
	      "15 characters rejected");
	CHECK(ks_check_ifname_syntax("a/b", err, sizeof(err)), "slash taken");
	CHECK(ks_check_ifname_syntax("..", err, sizeof(err)), "'..' taken");
	CHECK(ks_check_ifname_syntax("a b", err, sizeof(err)), "space taken");
	CHECK(ks_check_ifname_syntax("a:1", err, sizeof(err)), "colon taken");
	CHECK(!ks_resolve_ifname("lo", &idx, err, sizeof(err)) && idx > 0,
	      "lo not found: %s", err);
	CHECK_EQ(ks_resolve_ifname("ks-nosuch-if", &idx, err, sizeof(err)),
		 -ENODEV);
	CHECK(has(err, "no interface 'ks-nosuch-if'"), "message: %s", err);
	kt_end();
}

void test_opts(void)
{
	numbers();
	ports();
	ifnames();
}
