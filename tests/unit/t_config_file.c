// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The 'agent run --config FILE' parser: good files, every kind of bad
 * line with its FILE:LINE, duplicates, long lines, the file reader, the
 * splice into run's argv, and getopt's view of the spliced words.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "config_file.h"
#include "ktest.h"
#include "opts.h"
#include "unit.h"

static int parse(const char *text, struct ks_conf *c, char *err,
		 size_t errlen)
{
	err[0] = '\0';
	return ks_conf_parse("k.conf", text, strlen(text), c, err, errlen);
}

/* The words of c in order, space separated, for one comparison. */
static const char *words(const struct ks_conf *c)
{
	static char buf[512];
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < c->n; i++) {
		if (c->e[i].word)
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s",
					      o ? " " : "", c->e[i].word);
	}
	return buf;
}

static void good_files(void)
{
	char err[KS_ERRLEN * 2];
	struct ks_conf c;

	kt_begin("conf_good_file");
	CHECK_EQ(parse("# keysteer on eth1\n"
		       "\n"
		       "iface = eth1\n"
		       "  sample=8   # one in eight\n"
		       "\tshards-file = /etc/keysteer/shards.txt\n"
		       "replicas = 198.18.0.9:11211,198.18.0.10:11211\n"
		       "verbose = yes\n"
		       "routing-file = /run/keysteer/eth1/a#b.json\n",
		       &c, err, sizeof(err)),
		 0);
	CHECK(!strcmp(words(&c),
		      "--iface=eth1 --sample=8 --shards-file=/etc/keysteer/shards.txt "
		      "--replicas=198.18.0.9:11211,198.18.0.10:11211 --verbose "
		      "--routing-file=/run/keysteer/eth1/a#b.json"),
	      "words: %s", words(&c));
	CHECK_EQ(c.n, 6);
	if (c.n == 6) {
		CHECK_EQ(c.e[0].line, 3);
		CHECK_EQ(c.e[1].line, 4);
		CHECK_EQ(c.e[4].line, 7);
		CHECK(!strcmp(c.e[1].key, "sample") &&
			      !strcmp(c.e[1].value, "8"),
		      "entry 1: %s = %s", c.e[1].key, c.e[1].value);
	}
	ks_conf_free(&c);
	kt_end();

	kt_begin("conf_flags_quotes_crlf");
	CHECK_EQ(parse("verbose = no\r\niface = \"eth 1\"\r\nlisten='9180'\r\n"
		       "self = 198.18.0.2:11211",
		       &c, err, sizeof(err)),
		 0);
	/* 'no' leaves the flag off: no word, but the line is remembered */
	CHECK(!strcmp(words(&c),
		      "--iface=eth 1 --listen=9180 --self=198.18.0.2:11211"),
	      "words: %s", words(&c));
	CHECK(c.n == 4 && c.e[0].word == NULL && c.e[3].line == 4,
	      "n %zu", c.n);
	ks_conf_free(&c);
	kt_end();

	kt_begin("conf_empty_files");
	CHECK_EQ(parse("", &c, err, sizeof(err)), 0);
	CHECK_EQ(c.n, 0);
	ks_conf_free(&c);
	CHECK_EQ(parse("\n# only comments\n   \n\t# indented\n", &c, err,
		       sizeof(err)),
		 0);
	CHECK_EQ(c.n, 0);
	ks_conf_free(&c);
	kt_end();
}

struct bad_case {
	const char *name;
	const char *text;
	const char *want; /* in the message, after "k.conf:LINE: " */
	unsigned int line;
};

static void bad_lines(void)
{
	static const struct bad_case cases[] = {
		{ "no_equals", "iface = eth1\nsample 8\n", "'sample 8' is not 'key = value'", 2 },
		{ "no_key", "= 8\n", "no key before '='", 1 },
		{ "dashes", "\n\n--sample = 8\n", "'--sample' has dashes; write 'sample = ...'", 3 },
		{ "upper_case", "Sample = 8\n", "'Sample' is not a key", 1 },
		{ "space_in_key", "hot fraction = 0.1\n", "'hot fraction' is not a key", 1 },
		{ "digit_first", "1sample = 8\n", "'1sample' is not a key", 1 },
		{ "no_value", "iface = eth1\nsample =   # none\n", "'sample' has no value", 2 },
		{ "empty_quotes", "iface = \"\"\n", "'iface' has no value", 1 },
		{ "nested_config", "config = other.conf\n", "cannot name another", 1 },
		{ "help_key", "help = yes\n", "'help' is not a setting", 1 },
		{ "duplicate", "sample = 8\niface = a\n\nsample = 16\n",
		  "'sample' is set twice (first on line 1)", 4 },
		{ "duplicate_flag", "verbose = yes\nverbose = no\n",
		  "'verbose' is set twice", 2 },
	};
	char err[KS_ERRLEN * 2], want[128];
	struct ks_conf c;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char name[64];

		snprintf(name, sizeof(name), "conf_bad_%s", cases[i].name);
		kt_begin(name);
		CHECK_EQ(parse(cases[i].text, &c, err, sizeof(err)), -EINVAL);
		snprintf(want, sizeof(want), "k.conf:%u: ", cases[i].line);
		CHECK(!strncmp(err, want, strlen(want)), "want '%s...', got: %s",
		      want, err);
		CHECK(strstr(err, cases[i].want), "want '%s' in: %s",
		      cases[i].want, err);
		CHECK(strchr(err, ';'), "no '; what to do' in: %s", err);
		CHECK(c.n == 0 && c.e == NULL && c.name == NULL,
		      "not freed after the error");
		kt_end();
	}

	kt_begin("conf_bad_nul_byte");
	{
		static const char text[] = "iface = eth1\nsam\0ple = 8\n";

		CHECK_EQ(ks_conf_parse("k.conf", text, sizeof(text) - 1, &c,
				       err, sizeof(err)),
			 -EINVAL);
		CHECK(strstr(err, "k.conf:2: the line holds a NUL byte"), "%s",
		      err);
	}
	kt_end();
}

static void long_lines(void)
{
	char err[KS_ERRLEN * 2];
	size_t fit = KS_CONF_LINE_MAX, n;
	struct ks_conf c;
	char *text;

	kt_begin("conf_long_lines");
	/* "# ...\n" then "shards = xxx...": the line exactly at the limit
	 * passes, one byte more is refused with its line number. */
	text = malloc(fit + 64);
	if (!text) {
		kt_skipf("out of memory");
		kt_end();
		return;
	}
	n = (size_t)sprintf(text, "# long\nshards = ");
	memset(text + n, 'a', fit - strlen("shards = "));
	n += fit - strlen("shards = ");
	text[n] = '\n';
	CHECK_EQ(ks_conf_parse("k.conf", text, n + 1, &c, err, sizeof(err)), 0);
	CHECK(c.n == 1 && strlen(c.e[0].value) == fit - strlen("shards = "),
	      "value of %zu bytes", c.n ? strlen(c.e[0].value) : 0);
	ks_conf_free(&c);
	text[n] = 'a';
	text[n + 1] = '\n';
	CHECK_EQ(ks_conf_parse("k.conf", text, n + 2, &c, err, sizeof(err)),
		 -EINVAL);
	CHECK(strstr(err, "k.conf:2: the line is longer than 65536 bytes"),
	      "%s", err);
	free(text);
	kt_end();
}

static void reader(void)
{
	char err[KS_ERRLEN * 2], path[] = "/tmp/ks_conf_ut.XXXXXX";
	struct ks_conf c;
	FILE *f;
	int fd;

	kt_begin("conf_load_missing_file");
	CHECK_EQ(ks_conf_load("/nonexistent/keysteer.conf", &c, err,
			      sizeof(err)),
		 -ENOENT);
	CHECK(strstr(err, "/nonexistent/keysteer.conf: cannot open it (No such file or directory); check the path"),
	      "%s", err);
	CHECK_EQ(ks_conf_load("/tmp", &c, err, sizeof(err)), -EIO);
	CHECK(strstr(err, "/tmp: cannot read it"), "%s", err);
	kt_end();

	kt_begin("conf_load_file");
	fd = mkstemp(path);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		kt_skipf("cannot make a temp file in /tmp");
		kt_end();
		return;
	}
	fprintf(f, "iface = eth1\nsmaple = 8\n");
	fclose(f);
	CHECK_EQ(ks_conf_load(path, &c, err, sizeof(err)), 0);
	CHECK(c.n == 2 && !strcmp(c.name, path), "n %zu", c.n);
	ks_conf_free(&c);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "iface = eth1\nsample\n");
		fclose(f);
	}
	CHECK_EQ(ks_conf_load(path, &c, err, sizeof(err)), -EINVAL);
	CHECK(!strncmp(err, path, strlen(path)) &&
		      !strncmp(err + strlen(path), ":2: ", 4),
	      "%s", err);
	/* one byte past the size limit */
	if (truncate(path, KS_CONF_FILE_MAX + 1) == 0) {
		CHECK_EQ(ks_conf_load(path, &c, err, sizeof(err)), -EFBIG);
		CHECK(strstr(err, "larger than 1024 KiB"), "%s", err);
	}
	unlink(path);
	kt_end();
}

static void find_and_splice(void)
{
	char *run1[] = { "run", "--iface", "x", "--config", "k.conf", "-v", NULL };
	char *run2[] = { "run", "--config=k.conf", "--", "extra", NULL };
	char *twice[] = { "run", "--config", "a", "--config=b", NULL };
	char *novalue[] = { "run", "--config", NULL };
	char *novalue2[] = { "run", "--config=", NULL };
	char *after_dd[] = { "run", "--", "--config", "a", NULL };
	char err[KS_ERRLEN * 2];
	const char *path;
	struct ks_conf c;
	int at, span, n;
	char **av;

	kt_begin("conf_find");
	CHECK_EQ(ks_conf_find(6, run1, &at, &span, &path, err, sizeof(err)), 0);
	CHECK(at == 3 && span == 2 && !strcmp(path, "k.conf"), "at %d span %d",
	      at, span);
	CHECK_EQ(ks_conf_find(4, run2, &at, &span, &path, err, sizeof(err)), 0);
	CHECK(at == 1 && span == 1 && !strcmp(path, "k.conf"), "at %d span %d",
	      at, span);
	CHECK_EQ(ks_conf_find(4, twice, &at, &span, &path, err, sizeof(err)),
		 -EINVAL);
	CHECK(strstr(err, "--config is given twice"), "%s", err);
	CHECK_EQ(ks_conf_find(2, novalue, &at, &span, &path, err, sizeof(err)),
		 -EINVAL);
	CHECK(strstr(err, "'--config' needs a value"), "%s", err);
	CHECK_EQ(ks_conf_find(2, novalue2, &at, &span, &path, err,
			      sizeof(err)),
		 -EINVAL);
	CHECK_EQ(ks_conf_find(4, after_dd, &at, &span, &path, err, sizeof(err)),
		 0);
	CHECK_EQ(at, -1);
	kt_end();

	kt_begin("conf_splice_order");
	CHECK_EQ(parse("sample = 8\nverbose = no\nports = 11211\n", &c, err,
		       sizeof(err)),
		 0);
	CHECK_EQ(ks_conf_splice(6, run1, 3, 2, &c, &av, &n), 0);
	/* in place of --config FILE, so later options override the file;
	 * a final "--" marks the end of the options */
	CHECK_EQ(n, 7);
	if (n == 7) {
		CHECK(!strcmp(av[1], "--iface") && !strcmp(av[3], "--sample=8") &&
			      !strcmp(av[4], "--ports=11211") &&
			      !strcmp(av[5], "-v") && !strcmp(av[6], "--") &&
			      av[7] == NULL,
		      "%s %s %s %s", av[3], av[4], av[5], av[6]);
		CHECK(ks_conf_entry_of(&c, av[3]) == &c.e[0] &&
			      ks_conf_entry_of(&c, av[4]) == &c.e[2] &&
			      ks_conf_entry_of(&c, av[1]) == NULL,
		      "entries not found by their words");
	}
	free(av);
	/* no second "--" when argv has one */
	CHECK_EQ(ks_conf_splice(4, run2, 1, 1, &c, &av, &n), 0);
	CHECK(n == 5 && !strcmp(av[3], "--") && !strcmp(av[4], "extra"),
	      "n %d", n);
	free(av);
	ks_conf_free(&c);
	kt_end();
}

/*
 * What the spliced words look like to getopt_long with a table of the
 * shape parse_run() has: values come through, a misspelt key is '?' with
 * optopt 0 (an unknown key), a value on a flag is '?' with optopt set.
 */
static void through_getopt(void)
{
	static const struct option lopts[] = {
		{ "iface", required_argument, NULL, 'i' },
		{ "sample", required_argument, NULL, 's' },
		{ "verbose", no_argument, NULL, 'v' },
		{},
	};
	char *run[] = { "run", "--config", "k.conf", "--sample", "4", NULL };
	char err[KS_ERRLEN * 2], *iface = NULL, *sample = NULL;
	int verbose = 0, n, ch, unknown_at = 0, flag_at = 0;
	struct ks_conf c;
	char **av;

	kt_begin("conf_words_through_getopt");
	CHECK_EQ(parse("iface = eth1\nsample = 8\nsmaple = 9\nverbose = 3\n"
		       "verbose2 = yes\n",
		       &c, err, sizeof(err)),
		 0);
	if (ks_conf_splice(5, run, 1, 2, &c, &av, &n)) {
		kt_skipf("out of memory");
		ks_conf_free(&c);
		kt_end();
		return;
	}
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(n, av, ":v", lopts, NULL)) != -1) {
		const struct ks_conf_entry *e =
			ks_conf_entry_of(&c, av[optind - 1]);

		if (ch == 'i')
			iface = optarg;
		else if (ch == 's')
			sample = optarg;
		else if (ch == 'v')
			verbose = 1;
		else if (ch == '?' && e && !optopt)
			unknown_at = unknown_at ? unknown_at : (int)e->line;
		else if (ch == '?' && e && optopt == 'v')
			flag_at = (int)e->line;
	}
	CHECK(iface && !strcmp(iface, "eth1"), "iface %s", iface);
	CHECK(sample && !strcmp(sample, "4"), "command line after the file wins: %s",
	      sample);
	CHECK_EQ(unknown_at, 3);
	CHECK_EQ(flag_at, 4);
	CHECK_EQ(verbose, 0);
	CHECK_EQ(optind, n); /* stopped on our "--" */
	free(av);
	ks_conf_free(&c);
	kt_end();
}

void test_config_file(void)
{
	good_files();
	bad_lines();
	long_lines();
	reader();
	find_and_splice();
	through_getopt();
}
