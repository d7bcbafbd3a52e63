// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fz_config.c - libFuzzer harness of 'agent run --config' (user/
 * config_file.c): the file parser on a buffer of exactly the file's size
 * (not NUL-terminated, as the API allows), its settings given to run's
 * options through the option table (ks_conf_apply), and ks_conf_find on
 * argvs made of the input. Settings come out in line order; each one the
 * handler gets is a config key of run with the line's value (NULL for a
 * flag set to yes); a refused file or setting says "NAME:LINE: ...".
 * Half the files go through the gate of the test-only switches
 * (ks_opt_gated_set, as 'agent run' applies them since 8db1964), with or
 * without KEYSTEER_TEST_SWITCHES=1: closed, a switch never reaches the
 * handler and its line is refused with the gate's own message; open, each
 * switch set is noted for the warning at start, as written.
 */
#include <errno.h>
#include "cli/cli_options.h"
#include "cli/config_file.h"
#include "util/test_switches.h"
#include "fz_common.h"

/* A handler that checks what it gets against the settings in order. */
struct walk {
	const struct ks_conf *c;
	size_t next;   /* the setting to look at next */
	int refuse;    /* refuse every value: the refusal path */
	int closed;    /* behind the gate, KEYSTEER_TEST_SWITCHES unset */
	size_t passed; /* test-only switches the handler got */
	/* what the open gate must have noted: "--NAME VALUE" of each, as
	 * ks_opt_gated_set words it (cut to its KS_ERRLEN buffer) */
	char expect[1024];
};

static int take(void *ctx, int val, const char *arg, char *err, size_t errlen)
{
	struct walk *w = ctx;
	const struct ks_conf_entry *e = NULL;
	const struct ks_cli_opt *o;

	/* settings skipped before this one can only be flags set to no */
	while (w->next < w->c->n) {
		e = &w->c->e[w->next++];
		o = ks_cli_find(KS_CMD_RUN, e->key);
		if (o && o->val == val)
			break;
		FZ_CHECK(o && o->has_arg == no_argument &&
				 !strcmp(e->value, "no"),
			 "setting '%s' skipped", e->key);
		e = NULL;
	}
	FZ_CHECK(e, "value %d given for no setting", val);
	o = ks_cli_find(KS_CMD_RUN, e->key);
	FZ_CHECK(o->flags & KS_OPT_CONF, "'%s' is no config key", e->key);
	FZ_CHECK(!w->closed || !(o->flags & KS_OPT_TEST),
		 "test-only switch '%s' passed the closed gate", e->key);
	if (o->flags & KS_OPT_TEST) {
		char word[KS_ERRLEN];
		size_t n = strlen(w->expect);

		w->passed++;
		snprintf(word, sizeof(word), "--%s%s%s", o->name,
			 arg ? " " : "", arg ? arg : "");
		snprintf(w->expect + n, sizeof(w->expect) - n, "%s%s",
			 n ? ", " : "", word);
	}
	FZ_CHECK(o->has_arg == no_argument ? arg == NULL : arg == e->value,
		 "'%s' given '%s'", e->key, arg ? arg : "(null)");
	if (w->refuse) {
		snprintf(err, errlen, "refused; as the fuzzer wants");
		return -1;
	}
	return 1;
}

static void check_conf(const struct ks_conf *c, int refuse, int gated, int open)
{
	struct ks_conf_error e;
	static struct walk w;
	struct ks_opt_gate g = { .cmd = KS_CMD_RUN, .set = take, .ctx = &w };
	unsigned int last = 0;
	size_t i;
	int rc;
	char warn[512];

	memset(&w, 0, sizeof(w));
	w.c = c;
	w.refuse = refuse;
	w.closed = gated && !open;

	for (i = 0; i < c->n; i++) {
		FZ_CHECK(c->e[i].line >= 1 && c->e[i].line >= last,
			 "line %u after %u", c->e[i].line, last);
		FZ_CHECK(c->e[i].key && c->e[i].key[0] && c->e[i].value,
			 "entry %zu without a key", i);
		last = c->e[i].line;
	}
	if (gated && open)
		setenv(KS_TEST_SWITCHES_ENV, "1", 1);
	else
		unsetenv(KS_TEST_SWITCHES_ENV);
	rc = gated ? ks_conf_apply(c, KS_CMD_RUN, "run", ks_opt_gated_set, &g,
				   &e)
		   : ks_conf_apply(c, KS_CMD_RUN, "run", take, &w, &e);
	unsetenv(KS_TEST_SWITCHES_ENV);
	if (rc == -EINVAL) {
		FZ_CHECK(e.line && !strncmp(e.line, "agent.conf:", 11) &&
				 strchr(e.line, ';'),
			 "message '%s'", e.line);
		/* a value refused: by the handler, or by the closed gate in
		 * its own words ("--NAME [VALUE] is a test-only switch") */
		FZ_CHECK(!e.value[0] || refuse ||
				 (w.closed && !strncmp(e.value, "--", 2) &&
				  strstr(e.value, " is a test-only switch")),
			 "a value message '%s'", e.value);
	} else {
		FZ_CHECK(rc == 0 || rc == -ENOMEM, "returned %d", rc);
		FZ_CHECK(!e.line, "a message '%s' with %d", e.line, rc);
	}
	/* the open gate noted each switch the handler got, in order, for
	 * the warning at start (the list cut at its 255 bytes) */
	if (gated && open)
		FZ_CHECK(!strncmp(g.ts.taken, w.expect,
				  sizeof(g.ts.taken) - 1) &&
				 ks_test_switches_warning(&g.ts, warn,
							  sizeof(warn)) ==
					 (w.passed > 0),
			 "%zu switches passed as '%s', noted '%s'", w.passed,
			 w.expect, g.ts.taken);
	else
		FZ_CHECK(!g.ts.taken[0], "a closed gate noted '%s'",
			 g.ts.taken);
	free(e.line);
}

/* The input as argv words split at NUL bytes (at most 16). */
static void fuzz_find(const uint8_t *p, size_t n, char *err, size_t errlen)
{
	char *copy = malloc(n + 1), *argv[18];
	const char *path;
	int argc = 1, at, span, rc;
	size_t i, start = 0;

	FZ_CHECK(copy != NULL, "out of memory");
	memcpy(copy, p, n);
	copy[n] = '\0';
	argv[0] = (char *)"run";
	for (i = 0; i <= n && argc < 17; i++)
		if (copy[i] == '\0') {
			argv[argc++] = copy + start;
			start = i + 1;
		}
	argv[argc] = NULL;
	rc = ks_conf_find(argc, argv, &at, &span, &path, err, errlen);
	if (rc) {
		fz_check_err(err, errlen);
	} else if (at >= 0) {
		FZ_CHECK(at >= 1 && (span == 1 || span == 2) &&
				 at + span <= argc,
			 "at %d span %d of %d", at, span, argc);
		FZ_CHECK(path && *path && !strncmp(argv[at], "--config", 8),
			 "'%s' taken for --config", argv[at]);
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_bytes b = { data, size };
	uint8_t mode = fz_take_u8(&b);
	struct ks_conf c;
	size_t errlen;
	char *err = fz_errbuf(&b, &errlen), *text;
	int rc;

	if (mode & 1) {
		fuzz_find(b.p, b.n, err, errlen);
		free(err);
		return 0;
	}
	text = malloc(b.n ? b.n : 1);
	FZ_CHECK(text != NULL, "out of memory");
	memcpy(text, b.p, b.n);
	rc = ks_conf_parse("agent.conf", text, b.n, &c, err, errlen);
	if (rc) {
		FZ_CHECK(rc == -EINVAL || rc == -ENOMEM, "returned %d", rc);
		FZ_CHECK(c.n == 0 && c.e == NULL,
			 "a refused file left %zu settings", c.n);
		fz_check_err(err, errlen);
		FZ_CHECK(errlen < 12 || !strncmp(err, "agent.conf:", 11),
			 "message '%s' does not name the file", err);
	} else {
		check_conf(&c, mode & 2, mode & 4, mode & 8);
		ks_conf_free(&c);
	}
	free(text);
	free(err);
	return 0;
}
