// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Shard lists: --shards items, shard files, --self; messages name the
 * source, the line and the reason, and say what to do. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ktest.h"
#include "ks_ring.h"
#include "util/opts.h"
#include "core/shards.h"
#include "unit.h"

/* err is the message expected to start with want and to carry "; ". */
static int says(const char *err, const char *want)
{
	return !strncmp(err, want, strlen(want)) && strstr(err, "; ");
}

static void flag_lists(void)
{
	struct ks_shards s;
	char err[KS_ERRLEN * 2];

	kt_begin("shards_flag_list");
	CHECK(!ks_shards_parse_list(
		      "--shards",
		      "10.0.0.1:11211,cache-b.example.com:11212:3,c_1:1:1000000",
		      &s, err, sizeof(err)),
	      "%s", err);
	CHECK_EQ(s.n, 3);
	if (s.n == 3) {
		CHECK(!strcmp(s.v[0].host, "10.0.0.1") &&
			      s.v[0].port == 11211 && s.v[0].weight == 1 &&
			      !s.v[0].name[0],
		      "item 1: %s %u %u", s.v[0].host, s.v[0].port,
		      s.v[0].weight);
		CHECK(!strcmp(s.v[1].host, "cache-b.example.com") &&
			      s.v[1].port == 11212 && s.v[1].weight == 3,
		      "item 2: %s %u %u", s.v[1].host, s.v[1].port,
		      s.v[1].weight);
		CHECK_EQ(s.v[2].weight, 1000000);
		CHECK_EQ(s.self, KS_NO_SHARD);
		CHECK_EQ(ks_shards_find(&s, "cache-b.example.com", 11212), 1);
		CHECK_EQ(ks_shards_find(&s, "cache-b.example.com", 11211), -1);
	}
	ks_shards_free(&s);
	kt_end();

	kt_begin("shards_flag_errors");
	{
		static const struct {
			const char *list, *msg;
		} bad[] = {
			{ "a:1,b:70000",
			  "--shards item 2: port 70000 out of range 1..65535" },
			{ "a:0",
			  "--shards item 1: port 0 out of range 1..65535" },
			{ "a:x1",
			  "--shards item 1: port 'x1' is not a whole number" },
			{ "a", "--shards item 1: 'a' has no port" },
			{ ":11211",
			  "--shards item 1: ':11211' has an empty host" },
			{ "a:1:0",
			  "--shards item 1: weight 0 out of range 1..1000000" },
			{ "a:1:1000001",
			  "--shards item 1: weight 1000001 out of range" },
			{ "a:1:2:3",
			  "--shards item 1: 'a:1:2:3' has more than three" },
			{ "::1:11211",
			  "--shards item 1: '::1:11211' has more than three" },
			{ "[2001:2::11",
			  "--shards item 1: '[2001:2::11' has no ']'" },
			{ "[2001:2::zz]:1", "--shards item 1: '2001:2::zz' is "
					    "not an IPv6 address" },
			{ "[2001:2::11]",
			  "--shards item 1: '[2001:2::11]' has no port" },
			{ "[2001:2::11]:1:2:3",
			  "--shards item 1: '[2001:2::11]:1:2:3' has more" },
			{ "a:1,,b:2", "--shards item 2: empty item" },
			{ "a:1,", "--shards item 2: empty item" },
			{ "a b:1",
			  "--shards item 1: host 'a b' has the character ' '" },
			{ "a:1,a:1:5",
			  "--shards item 2: a:1 is listed twice (first as item 1)" },
			{ "", "--shards lists no shards" },
		};
		size_t i;

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			int rc = ks_shards_parse_list("--shards", bad[i].list,
						      &s, err, sizeof(err));

			CHECK(rc < 0, "'%s' accepted", bad[i].list);
			CHECK(rc >= 0 || says(err, bad[i].msg), "'%s': %s",
			      bad[i].list, err);
			CHECK(s.v == NULL && s.n == 0,
			      "'%s' left shards behind", bad[i].list);
		}
	}
	kt_end();
}

static void files(void)
{
	struct ks_shards s;
	char err[KS_ERRLEN * 2];

	kt_begin("shards_file_text");
	CHECK(!ks_shards_parse_text("shards.txt",
				    "# the fleet\n"
				    "\n"
				    "10.0.0.1:11211\n"
				    "   10.0.0.2:11211:2   b   # second\r\n"
				    "- 10.0.0.3:22122:1 shard-c\n"
				    "\t10.0.0.4:11211 d",
				    &s, err, sizeof(err)),
	      "%s", err);
	CHECK_EQ(s.n, 4);
	if (s.n == 4) {
		CHECK(s.v[0].line == 3 && !s.v[0].name[0], "line %u",
		      s.v[0].line);
		CHECK(s.v[1].weight == 2 && !strcmp(s.v[1].name, "b") &&
			      s.v[1].line == 4,
		      "line 4: %u '%s'", s.v[1].weight, s.v[1].name);
		CHECK(!strcmp(s.v[2].name, "shard-c") && s.v[2].port == 22122,
		      "nutcracker list item: '%s' %u", s.v[2].name,
		      s.v[2].port);
		CHECK(!strcmp(s.v[3].name, "d"), "no final newline: '%s'",
		      s.v[3].name);
	}
	CHECK(!strcmp(s.source, "shards.txt"), "source %s", s.source);
	ks_shards_free(&s);
	kt_end();

	kt_begin("shards_file_errors");
	{
		static const struct {
			const char *text, *msg;
		} bad[] = {
			{ "a:1\nb:2\nc:70000\n",
			  "shards.txt:3: port 70000 out of range 1..65535" },
			{ "a:1 x y\n",
			  "shards.txt:1: unexpected 'y' after the name" },
			{ "a:1 n\nb:2 n\n",
			  "shards.txt:2: name 'n' is used twice (first on line 1)" },
			{ "a:1\n\nA:2\na:1\n",
			  "shards.txt:4: a:1 is listed twice (first on line 1)" },
			{ "# nothing\n\n", "shards.txt lists no shards" },
			{ "-\n", "shards.txt:1: '-' without a shard" },
			{ "a:1 bad\x01name\n", "shards.txt:1: name 'bad" },
		};
		size_t i;

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			int rc = ks_shards_parse_text("shards.txt", bad[i].text,
						      &s, err, sizeof(err));

			CHECK(rc < 0, "text %zu accepted", i);
			CHECK(rc >= 0 || says(err, bad[i].msg), "text %zu: %s",
			      i, err);
			if (!rc)
				ks_shards_free(&s);
		}
	}
	kt_end();

	kt_begin("shards_load_file");
	{
		char path[] = "/tmp/ks_shards_XXXXXX";
		int fd = mkstemp(path);
		FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

		CHECK(f != NULL, "mkstemp failed");
		if (f) {
			fputs("10.0.0.1:11211\n10.0.0.2:11212:4 two\n", f);
			fclose(f);
			CHECK(!ks_shards_load_file(path, &s, err, sizeof(err)),
			      "%s", err);
			CHECK(s.n == 2 && s.v[1].weight == 4, "n %u", s.n);
			CHECK(!strcmp(s.source, path), "source %s", s.source);
			ks_shards_free(&s);
			unlink(path);
		}
		CHECK(ks_shards_load_file("/nonexistent/shards.txt", &s, err,
					  sizeof(err)) == -ENOENT,
		      "missing file");
		CHECK(says(err,
			   "cannot open the shard file /nonexistent/shards.txt"),
		      "message: %s", err);
	}
	kt_end();
}

static void self(void)
{
	struct ks_shards s;
	char err[KS_ERRLEN * 2];

	kt_begin("shards_self");
	CHECK(!ks_shards_parse_list("--shards", "10.0.0.1:11211,10.0.0.2:11211",
				    &s, err, sizeof(err)),
	      "%s", err);
	CHECK(!ks_shards_set_self(&s, "10.0.0.2:11211", err, sizeof(err)), "%s",
	      err);
	CHECK_EQ(s.self, 1);
	CHECK(ks_shards_set_self(&s, "10.0.0.3:11211", err, sizeof(err)) ==
		      -ENOENT,
	      "unknown self accepted");
	CHECK(says(err, "--self 10.0.0.3:11211 is not in --shards"),
	      "message: %s", err);
	CHECK(ks_shards_set_self(&s, "10.0.0.2", err, sizeof(err)) == -EINVAL,
	      "self without port accepted");
	CHECK(says(err, "--self: '10.0.0.2' has no port"), "message: %s", err);
	CHECK(ks_shards_set_self(&s, "10.0.0.2:11211:3", err, sizeof(err)) ==
		      -EINVAL,
	      "self with weight accepted");
	CHECK_EQ(s.self, 1); /* failures leave it alone */
	ks_shards_free(&s);

	/* IPv6 literals in brackets, kept as written (the ring hashes them) */
	CHECK(!ks_shards_parse_list("--shards",
				    "[2001:2::11]:11211,[2001:2::12]:11211:2",
				    &s, err, sizeof(err)),
	      "%s", err);
	CHECK(s.n == 2 && !strcmp(s.v[0].host, "[2001:2::11]") &&
		      s.v[0].port == 11211 && s.v[1].weight == 2,
	      "IPv6 items");
	CHECK(!ks_shards_set_self(&s, "[2001:2::12]:11211", err, sizeof(err)),
	      "IPv6 self: %s", err);
	CHECK_EQ(s.self, 1);
	CHECK(ks_shards_set_self(&s, "[2001:2::12]:11211:2", err,
				 sizeof(err)) == -EINVAL,
	      "IPv6 self with weight accepted");
	ks_shards_free(&s);
	kt_end();
}

void test_shards(void)
{
	flag_lists();
	files();
	self();
}
