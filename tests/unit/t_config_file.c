// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The 'agent run --config FILE' parser: good files, every kind of bad
 * line with its FILE:LINE, duplicates, long lines, the file reader,
 * finding --config in argv, and the settings given to run's option
 * handler through the option table (keys, flags, refusals by FILE:LINE).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli_options.h"
#include "cli/config_file.h"
#include "ktest.h"
#include "util/opts.h"
#include "unit.h"

static int parse(const char *text, struct ks_conf *c, char *err, size_t errlen)
{
	err[0] = '\0';
	return ks_conf_parse("k.conf", text, strlen(text), c, err, errlen);
}

/* The settings of c in order, "key=value" space separated. */
static const char *words(const struct ks_conf *c)
{
	static char buf[512];
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < c->n && o < sizeof(buf); i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s=%s",
				      o ? " " : "", c->e[i].key, c->e[i].value);
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
		      "iface=eth1 sample=8 shards-file=/etc/keysteer/shards.txt "
		      "replicas=198.18.0.9:11211,198.18.0.10:11211 verbose=yes "
		      "routing-file=/run/keysteer/eth1/a#b.json"),
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
	/* quotes and CR go; 'no' stays a setting (ks_conf_apply skips it) */
	CHECK(!strcmp(words(&c),
		      "verbose=no iface=eth 1 listen=9180 self=198.18.0.2:11211"),
	      "words: %s", words(&c));
	CHECK(c.n == 4 && c.e[3].line == 4, "n %zu", c.n);
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
		{ "no_equals", "iface = eth1\nsample 8\n",
		  "'sample 8' is not 'key = value'", 2 },
		{ "no_key", "= 8\n", "no key before '='", 1 },
		{ "dashes", "\n\n--sample = 8\n",
		  "'--sample' has dashes; write 'sample = ...'", 3 },
		{ "upper_case", "Sample = 8\n", "'Sample' is not a key", 1 },
		{ "space_in_key", "hot fraction = 0.1\n",
		  "'hot fraction' is not a key", 1 },
		{ "digit_first", "1sample = 8\n", "'1sample' is not a key", 1 },
		{ "no_value", "iface = eth1\nsample =   # none\n",
		  "'sample' has no value", 2 },
		{ "empty_quotes", "iface = \"\"\n", "'iface' has no value", 1 },
		{ "nested_config", "config = other.conf\n",
		  "cannot name another", 1 },
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
		CHECK(!strncmp(err, want, strlen(want)),
		      "want '%s...', got: %s", want, err);
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
		kt_failf(__FILE__, __LINE__, "out of memory");
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
	CHECK(strstr(err,
		     "/nonexistent/keysteer.conf: cannot open it (No such file or directory); check the path"),
	      "%s", err);
	CHECK_EQ(ks_conf_load("/tmp", &c, err, sizeof(err)), -EIO);
	CHECK(strstr(err, "/tmp: cannot read it"), "%s", err);
	kt_end();

	kt_begin("conf_load_file");
	fd = mkstemp(path);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		kt_failf(__FILE__, __LINE__, "cannot make a temp file in /tmp");
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

static void find_config(void)
{
	char *run1[] = {
		"run", "--iface", "x", "--config", "k.conf", "-v", NULL
	};
	char *run2[] = { "run", "--config=k.conf", "--", "extra", NULL };
	char *twice[] = { "run", "--config", "a", "--config=b", NULL };
	char *novalue[] = { "run", "--config", NULL };
	char *novalue2[] = { "run", "--config=", NULL };
	char *after_dd[] = { "run", "--", "--config", "a", NULL };
	char err[KS_ERRLEN * 2];
	const char *path;
	int at, span;

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
	CHECK_EQ(ks_conf_find(2, novalue2, &at, &span, &path, err, sizeof(err)),
		 -EINVAL);
	CHECK_EQ(ks_conf_find(4, after_dd, &at, &span, &path, err, sizeof(err)),
		 0);
	CHECK_EQ(at, -1);
	kt_end();
}

/* A stand-in for run's option handler: records "val:arg" and refuses
 * --sample 0 as run's does. */
struct recorder {
	char calls[512];
};

static int record(void *ctx, int val, const char *arg, char *err, size_t errlen)
{
	struct recorder *r = ctx;
	size_t o = strlen(r->calls);

	if (val == 's' && arg && !strcmp(arg, "0")) {
		snprintf(
			err, errlen,
			"--sample '0' is out of range; give a number from 1 to 1000000");
		return -1;
	}
	if (o < sizeof(r->calls))
		snprintf(r->calls + o, sizeof(r->calls) - o, "%s%c:%s",
			 o ? " " : "", val < 0x100 ? val : '#',
			 arg ? arg : "-");
	return 1;
}

static char e_line[1024];

/* Applies text as cmd's config through set(ctx) (r's record when set is
 * NULL); returns ks_conf_apply's result, with e->line pointing to a copy
 * of the message. */
static int apply_to(const char *text, unsigned int cmd, ks_opt_set_fn set,
		    void *ctx, struct recorder *r, struct ks_conf_error *e)
{
	char err[KS_ERRLEN * 2];
	struct ks_conf c;
	int rc;

	memset(r, 0, sizeof(*r));
	memset(e, 0, sizeof(*e));
	if (parse(text, &c, err, sizeof(err)))
		return 99; /* the text is a test's mistake */
	rc = ks_conf_apply(&c, cmd, cmd == KS_CMD_RUN ? "run" : "report",
			   set ? set : record, set ? ctx : r, e);
	ks_conf_free(&c);
	/* a copy the checks can read: "" when there is no message */
	snprintf(e_line, sizeof(e_line), "%s", e->line ? e->line : "");
	free(e->line);
	e->line = e_line;
	return rc;
}

static int apply(const char *text, unsigned int cmd, struct recorder *r,
		 struct ks_conf_error *e)
{
	return apply_to(text, cmd, NULL, NULL, r, e);
}

/* text through run's gate of the test-only switches over r's record */
static int apply_gated(const char *text, struct ks_opt_gate *g,
		       struct recorder *r, struct ks_conf_error *e)
{
	*g = (struct ks_opt_gate){ .cmd = KS_CMD_RUN, .set = record, .ctx = r };
	return apply_to(text, KS_CMD_RUN, ks_opt_gated_set, g, r, e);
}

/*
 * The test-only switches (util/test_switches.h): a config file naming one
 * is refused without KEYSTEER_TEST_SWITCHES=1 before run's handler sees
 * it, and so is the command line through the same gate; with it they
 * pass, and the warning at start names each as written.
 */
static void test_only_switches(void)
{
	static const char *const sw[][2] = {
		{ "copy-protocol", "off" },
		{ "fill-delay-ms", "20" },
		{ "stream-state", "off" },
		{ "etcd-hot-events", "on" },
		{ "ring-purge", "off" },
		{ "fleet-schema", "1" },
		{ "rate-scaling", "off" },
		{ "place-scaling", "off" },
		{ "limit-reply-head", "off" },
		{ "limit-auto-residual", "verdict" },
		{ "stall-interval", "5:8000" },
		{ "etcd-keepalive", "loop" },
		{ "etcd-loop-call", "on" },
		{ "log-samples", "drop" },
		{ "drain-share", "on" },
		{ "housekeeping", "loop" },
		{ "housekeeping-delay-ms", "5000" },
		{ "thread-caps", "keep" },
	};
	char text[128], want[256], err[KS_ERRLEN * 2], warn[512];
	struct ks_conf_error e;
	struct ks_opt_gate g;
	struct recorder r;
	unsigned int i, k, n = 0;

	kt_begin("conf_test_switch_refused");
	unsetenv(KS_TEST_SWITCHES_ENV);
	for (i = 0; i < sizeof(sw) / sizeof(sw[0]); i++) {
		snprintf(text, sizeof(text), "iface = x\n%s = %s\n", sw[i][0],
			 sw[i][1]);
		CHECK_EQ(apply_gated(text, &g, &r, &e), -EINVAL);
		snprintf(
			want, sizeof(want),
			"--%s %s is a test-only switch, for a test's control run; leave it out, or in a test set KEYSTEER_TEST_SWITCHES=1 in the environment",
			sw[i][0], sw[i][1]);
		CHECK(!strcmp(e.value, want), "%s: '%s'", sw[i][0], e.value);
		snprintf(
			want, sizeof(want),
			"k.conf:2: '%s = %s' is refused (see above); fix that line",
			sw[i][0], sw[i][1]);
		CHECK(!strcmp(e.line, want), "%s: '%s'", sw[i][0], e.line);
		CHECK(!strcmp(r.calls, "i:x"), "the handler saw it: %s",
		      r.calls);
		CHECK(!ks_test_switches_warning(&g.ts, warn, sizeof(warn)),
		      "a refused switch noted: %s", g.ts.taken);
	}
	/* the command line's way, and a variable that is not "1" */
	setenv(KS_TEST_SWITCHES_ENV, "0", 1);
	g = (struct ks_opt_gate){ .cmd = KS_CMD_RUN, .set = record, .ctx = &r };
	memset(&r, 0, sizeof(r));
	CHECK_EQ(ks_opt_gated_set(&g, KS_OPTV_COPY_PROTOCOL, "off", err,
				  sizeof(err)),
		 -1);
	CHECK(strstr(err, "--copy-protocol off is a test-only switch") &&
		      !r.calls[0],
	      "'%s', handler '%s'", err, r.calls);
	CHECK_EQ(ks_opt_gated_set(&g, 's', "4", err, sizeof(err)), 1);
	/* exactly these are flagged, and none is in --help or the page */
	for (k = 0; k < ks_cli_nopts; k++) {
		const struct ks_cli_opt *o = &ks_cli_opts[k];

		/* run's; follow's --view-drop is gated by its own parser */
		if (!(o->flags & KS_OPT_TEST) || !(o->cmds & KS_CMD_RUN))
			continue;
		n++;
		CHECK(o->flags & KS_OPT_HIDE, "--%s is shown", o->name);
		for (i = 0; i < sizeof(sw) / sizeof(sw[0]); i++)
			if (!strcmp(o->name, sw[i][0]))
				break;
		CHECK(i < sizeof(sw) / sizeof(sw[0]), "--%s flagged", o->name);
	}
	CHECK_EQ(n, sizeof(sw) / sizeof(sw[0]));
	kt_end();

	kt_begin("conf_test_switch_allowed_warns");
	setenv(KS_TEST_SWITCHES_ENV, "1", 1);
	CHECK_EQ(apply_gated("iface = x\ncopy-protocol = off\nsample = 4\n"
			     "fill-delay-ms = 20\n",
			     &g, &r, &e),
		 0);
	CHECK(!strcmp(r.calls, "i:x #:off s:4 #:20"), "calls: %s", r.calls);
	/* the command line after the file, through the same gate */
	CHECK_EQ(ks_opt_gated_set(&g, KS_OPTV_STREAM_STATE, "off", err,
				  sizeof(err)),
		 1);
	CHECK(ks_test_switches_warning(&g.ts, warn, sizeof(warn)) &&
		      !strcmp(warn,
			      "test-only switches in force (KEYSTEER_TEST_SWITCHES=1): --copy-protocol off, --fill-delay-ms 20, --stream-state off; they break guarantees on purpose, never run so in production"),
	      "warning '%s'", warn);
	/* no switch named, no warning */
	CHECK_EQ(apply_gated("iface = x\nsample = 4\n", &g, &r, &e), 0);
	CHECK(!ks_test_switches_warning(&g.ts, warn, sizeof(warn)),
	      "warning '%s'", warn);
	kt_end();

	/* left as production has it, whatever the caller's was */
	unsetenv(KS_TEST_SWITCHES_ENV);
}

static void through_the_table(void)
{
	struct ks_conf_error e;
	struct recorder r;

	kt_begin("conf_apply_in_order");
	/* values as written, flags as NULL, 'no' left out, file order */
	CHECK_EQ(apply("iface = eth1\nsample = 8\nverbose = yes\n"
		       "log-keys = no\nshards = a:1,b:2\nstream-state = off\n",
		       KS_CMD_RUN, &r, &e),
		 0);
	CHECK(!strcmp(r.calls, "i:eth1 s:8 v:- S:a:1,b:2 #:off"), "calls: %s",
	      r.calls);
	CHECK(!e_line[0] && !e.value[0], "error '%s'", e.line);
	kt_end();

	kt_begin("conf_apply_unknown_key");
	CHECK_EQ(apply("iface = x\nsmaple = 8\nsample = 4\n", KS_CMD_RUN, &r,
		       &e),
		 -EINVAL);
	CHECK(!strcmp(e.line,
		      "k.conf:2: unknown key 'smaple'; see 'agent run --help' for the keys"),
	      "%s", e.line);
	CHECK(!strcmp(r.calls, "i:x") && !e.value[0],
	      "stops at the bad line: %s", r.calls);
	/* ambiguous for getopt too: no suggestion */
	CHECK_EQ(apply("shard = x\n", KS_CMD_RUN, &r, &e), -EINVAL);
	CHECK(strstr(e.line, "k.conf:1: unknown key 'shard'; see"), "%s",
	      e.line);
	/* a key of another command's table only */
	CHECK_EQ(apply("json = yes\n", KS_CMD_RUN, &r, &e), -EINVAL);
	CHECK(strstr(e.line, "unknown key 'json'"), "%s", e.line);
	/* report takes no config file: none of its options is a key */
	CHECK_EQ(apply("json = yes\n", KS_CMD_REPORT, &r, &e), -EINVAL);
	CHECK(strstr(e.line, "unknown key 'json'; see 'agent report --help'"),
	      "%s", e.line);
	kt_end();

	kt_begin("conf_apply_long_key");
	{
		/* the whole key is quoted, and the line still ends in what
		 * to do, however long the key */
		static char text[3000];
		char err[KS_ERRLEN * 2];
		struct ks_conf c;
		const char *tail = "; see 'agent run --help' for the keys";

		memset(text, 'k', 2000);
		strcpy(text + 2000, " = yes\n");
		CHECK_EQ(parse(text, &c, err, sizeof(err)), 0);
		CHECK_EQ(ks_conf_apply(&c, KS_CMD_RUN, "run", record, &r, &e),
			 -EINVAL);
		CHECK(e.line && strlen(e.line) > 2000 &&
			      !strcmp(e.line + strlen(e.line) - strlen(tail),
				      tail),
		      "%.80s", e.line ? e.line : "(null)");
		free(e.line);
		ks_conf_free(&c);
	}
	kt_end();

	kt_begin("conf_apply_abbreviated_key");
	/* getopt_long would take 'samp' for --sample; a file may not */
	CHECK_EQ(apply("iface = x\nsamp = 8\n", KS_CMD_RUN, &r, &e), -EINVAL);
	CHECK(!strcmp(e.line,
		      "k.conf:2: unknown key 'samp' (did you mean 'sample'?); keys are the full long options, see 'agent run --help'"),
	      "%s", e.line);
	/* --config is no key, nor a suggestion */
	CHECK_EQ(apply("conf = a\n", KS_CMD_RUN, &r, &e), -EINVAL);
	CHECK(strstr(e.line, "unknown key 'conf'; see"), "%s", e.line);
	kt_end();

	kt_begin("conf_apply_flag_value");
	CHECK_EQ(apply("iface = x\nverbose = 3\n", KS_CMD_RUN, &r, &e),
		 -EINVAL);
	CHECK(!strcmp(e.line,
		      "k.conf:2: 'verbose' is a flag and takes no value ('3'); write 'verbose = yes' or 'verbose = no'"),
	      "%s", e.line);
	kt_end();

	kt_begin("conf_apply_refused_value");
	/* the handler's own message, then the line */
	CHECK_EQ(apply("iface = x\n\nsample = 0\n", KS_CMD_RUN, &r, &e),
		 -EINVAL);
	CHECK(!strcmp(e.value,
		      "--sample '0' is out of range; give a number from 1 to 1000000"),
	      "%s", e.value);
	CHECK(!strcmp(e.line,
		      "k.conf:3: 'sample = 0' is refused (see above); fix that line"),
	      "%s", e.line);
	kt_end();

	kt_begin("conf_every_run_key");
	{
		/* every key the table allows reaches the handler */
		char text[2048] = "";
		unsigned int i, n = 0;
		size_t o = 0;

		for (i = 0; i < ks_cli_nopts; i++) {
			const struct ks_cli_opt *opt = &ks_cli_opts[i];

			if (!(opt->flags & KS_OPT_CONF))
				continue;
			o += (size_t)snprintf(text + o, sizeof(text) - o,
					      "%s = %s\n", opt->name,
					      opt->metavar ? "1" : "yes");
			n++;
		}
		CHECK_EQ(apply(text, KS_CMD_RUN, &r, &e), 0);
		CHECK(n >= 25, "only %u keys", n);
		for (i = 0, o = 0; r.calls[o]; o++)
			i += r.calls[o] == ':';
		CHECK_EQ(i, n);
	}
	kt_end();
}

void test_config_file(void)
{
	good_files();
	bad_lines();
	long_lines();
	reader();
	find_config();
	through_the_table();
	test_only_switches();
}
