// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * config_file.c - 'agent run --config FILE' (see config_file.h): a pure
 * parser from a buffer to settings, a thin file reader, and the settings
 * given to a command's option handler through the option table, each
 * refusal named by its FILE:LINE.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli_options.h"
#include "cli/config_file.h"
#include "util/file.h"
#include "util/opts.h"

static int line_fail(char *err, size_t errlen, const char *name,
		     unsigned int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int line_fail(char *err, size_t errlen, const char *name,
		     unsigned int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(err, errlen, "%s:%u: ", name, line);
	if (n >= 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int is_blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* Trims blanks from both ends of s in place; returns the new start. */
static char *trim(char *s)
{
	char *e = s + strlen(s);

	while (is_blank(*s))
		s++;
	while (e > s && is_blank(e[-1]))
		*--e = '\0';
	return s;
}

/* '#' starts a comment at the start of a line or after a blank, so a
 * value such as "a#1" keeps its '#'. */
static void cut_comment(char *s)
{
	char *p;

	for (p = s; *p; p++) {
		if (*p == '#' && (p == s || is_blank(p[-1]))) {
			*p = '\0';
			return;
		}
	}
}

/* A lower-case long option name: a letter, then letters, digits, '-'. */
static int key_ok(const char *k)
{
	const char *p;

	if (*k < 'a' || *k > 'z')
		return 0;
	for (p = k; *p; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		      *p == '-'))
			return 0;
	}
	return 1;
}

/* Drops one pair of matching quotes around the whole value. */
static char *unquote(char *v)
{
	size_t n = strlen(v);

	if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
		v[n - 1] = '\0';
		return v + 1;
	}
	return v;
}

static int check_key(const struct ks_conf *c, unsigned int line,
		     const char *key, char *err, size_t errlen)
{
	size_t i;

	if (!*key)
		return line_fail(
			err, errlen, c->name, line,
			"no key before '='; write 'key = value', e.g. 'sample = 8'");
	if (*key == '-') {
		const char *bare = key + strspn(key, "-");

		return line_fail(err, errlen, c->name, line,
				 "'%.64s' has dashes; write '%.64s = ...'", key,
				 bare);
	}
	if (!key_ok(key))
		return line_fail(
			err, errlen, c->name, line,
			"'%.64s' is not a key; keys are the long options of 'agent run' in lower case without the dashes (see 'agent run --help')",
			key);
	/* Not run options: one file per run, and help is no setting. */
	if (!strcmp(key, "config"))
		return line_fail(
			err, errlen, c->name, line,
			"a config file cannot name another; give one --config FILE");
	if (!strcmp(key, "help"))
		return line_fail(
			err, errlen, c->name, line,
			"'help' is not a setting; see 'agent run --help' for the keys");
	for (i = 0; i < c->n; i++) {
		if (!strcmp(c->e[i].key, key))
			return line_fail(
				err, errlen, c->name, line,
				"'%s' is set twice (first on line %u); keep one of the lines",
				key, c->e[i].line);
	}
	return 0;
}

static int add_entry(struct ks_conf *c, unsigned int line, const char *key,
		     const char *value)
{
	struct ks_conf_entry *e, *grown;

	grown = realloc(c->e, (c->n + 1) * sizeof(*c->e));
	if (!grown)
		return -ENOMEM;
	c->e = grown;
	e = &c->e[c->n];
	memset(e, 0, sizeof(*e));
	e->line = line;
	e->key = strdup(key);
	e->value = strdup(value);
	if (!e->key || !e->value) {
		free(e->key);
		free(e->value);
		return -ENOMEM;
	}
	c->n++;
	return 0;
}

/* One line, s[0..n) without its '\n'; t is scratch of n + 1 bytes. */
static int parse_line(struct ks_conf *c, unsigned int line, const char *s,
		      size_t n, char *t, char *err, size_t errlen)
{
	char *body, *eq, *key, *value;

	if (n > KS_CONF_LINE_MAX)
		return line_fail(
			err, errlen, c->name, line,
			"the line is longer than %d bytes; put long shard lists in a shards-file",
			KS_CONF_LINE_MAX);
	if (memchr(s, '\0', n))
		return line_fail(err, errlen, c->name, line,
				 "the line holds a NUL byte; give a text file");
	if (n && s[n - 1] == '\r') /* written on Windows */
		n--;
	memcpy(t, s, n);
	t[n] = '\0';
	cut_comment(t);
	body = trim(t);
	if (!*body)
		return 0;
	eq = strchr(body, '=');
	if (!eq)
		return line_fail(
			err, errlen, c->name, line,
			"'%.64s' is not 'key = value'; write one setting per line, e.g. 'sample = 8' ('#' starts a comment)",
			body);
	*eq = '\0';
	key = trim(body);
	if (check_key(c, line, key, err, errlen))
		return -EINVAL;
	value = unquote(trim(eq + 1));
	if (!*value)
		return line_fail(
			err, errlen, c->name, line,
			"'%s' has no value; write '%s = VALUE' (a flag: '%s = yes')",
			key, key, key);
	return add_entry(c, line, key, value);
}

int ks_conf_parse(const char *name, const char *buf, size_t len,
		  struct ks_conf *c, char *err, size_t errlen)
{
	const char *p = buf, *end = buf + len;
	unsigned int line = 0;
	char *scratch;
	int rc = 0;

	memset(c, 0, sizeof(*c));
	c->name = strdup(name);
	/* One scratch line for all: no line is longer than the buffer. */
	scratch = malloc(len + 1);
	if (!c->name || !scratch) {
		free(scratch);
		ks_conf_free(c);
		snprintf(err, errlen,
			 "out of memory reading %s; free some memory", name);
		return -ENOMEM;
	}
	while (p < end && !rc) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		rc = parse_line(c, ++line, p, (size_t)(le - p), scratch, err,
				errlen);
		p = nl ? nl + 1 : end;
	}
	free(scratch);
	if (rc == -ENOMEM)
		snprintf(err, errlen,
			 "out of memory reading %s; free some memory", name);
	if (rc)
		ks_conf_free(c);
	return rc;
}

int ks_conf_load(const char *path, struct ks_conf *c, char *err, size_t errlen)
{
	char *buf;
	size_t len;
	int rc = ks_read_file(path, KS_CONF_FILE_MAX, &buf, &len);

	memset(c, 0, sizeof(*c));
	if (rc == -EFBIG)
		snprintf(
			err, errlen,
			"%s: larger than %u KiB; give the keysteer config file to --config",
			path, KS_CONF_FILE_MAX / 1024);
	else if (rc == -EIO)
		snprintf(
			err, errlen,
			"%s: cannot read it (a folder?); give the keysteer config file to --config",
			path);
	else if (rc)
		snprintf(
			err, errlen,
			"%s: cannot open it (%s); check the path given to --config",
			path, strerror(-rc));
	if (rc)
		return rc;
	rc = ks_conf_parse(path, buf, len, c, err, errlen);
	free(buf);
	return rc;
}

void ks_conf_free(struct ks_conf *c)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		free(c->e[i].key);
		free(c->e[i].value);
	}
	free(c->e);
	free(c->name);
	memset(c, 0, sizeof(*c));
}

int ks_conf_find(int argc, char **argv, int *at, int *span, const char **path,
		 char *err, size_t errlen)
{
	static const char opt[] = "--config";
	const size_t optlen = sizeof(opt) - 1;
	int i;

	*at = -1;
	*span = 0;
	*path = NULL;
	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		const char *p;
		int n;

		if (!strcmp(argv[i], opt)) {
			if (i + 1 >= argc || !strcmp(argv[i + 1], "--")) {
				snprintf(
					err, errlen,
					"option '--config' needs a value; give --config FILE");
				return -EINVAL;
			}
			p = argv[i + 1];
			n = 2;
		} else if (!strncmp(argv[i], opt, optlen) &&
			   argv[i][optlen] == '=') {
			p = argv[i] + optlen + 1;
			n = 1;
		} else {
			continue;
		}
		if (*at >= 0) {
			snprintf(
				err, errlen,
				"--config is given twice; give one file (options after it override it)");
			return -EINVAL;
		}
		if (!*p) {
			snprintf(
				err, errlen,
				"option '--config' needs a value; give --config FILE");
			return -EINVAL;
		}
		*at = i;
		*span = n;
		*path = p;
		i += n - 1;
	}
	return 0;
}

static int apply_fail(struct ks_conf_error *e, const char *name,
		      unsigned int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* e->line = "NAME:LINE: " and the message, as long as it is. */
static int apply_fail(struct ks_conf_error *e, const char *name,
		      unsigned int line, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0 || asprintf(&e->line, "%s:%u: %s", name, line, msg) < 0)
		e->line = NULL;
	free(n < 0 ? NULL : msg);
	return e->line ? -EINVAL : -ENOMEM;
}

/* A key that is none of cmd's config keys; what getopt_long would take
 * for an abbreviation of one of cmd's options (--config apart) is named. */
static int unknown_key(struct ks_conf_error *e, const struct ks_conf *c,
		       const struct ks_conf_entry *s, unsigned int cmd,
		       const char *cmdname)
{
	const struct ks_cli_opt *o = NULL;

	e->value[0] = '\0';
	if (!ks_cli_find(cmd, s->key))
		o = ks_cli_prefix(cmd, s->key, "config");
	if (o)
		return apply_fail(
			e, c->name, s->line,
			"unknown key '%s' (did you mean '%s'?); keys are the full long options, see 'agent %s --help'",
			s->key, o->name, cmdname);
	return apply_fail(
		e, c->name, s->line,
		"unknown key '%s'; see 'agent %s --help' for the keys", s->key,
		cmdname);
}

int ks_opt_gated_set(void *gate, int val, const char *arg, char *err,
		     size_t errlen)
{
	struct ks_opt_gate *g = gate;
	const struct ks_cli_opt *o = ks_cli_by_val(g->cmd, val);
	char word[KS_ERRLEN];

	if (o && (o->flags & KS_OPT_TEST)) {
		/* as the command line writes it, whatever named it */
		snprintf(word, sizeof(word), "--%s%s%s", o->name,
			 arg ? " " : "", arg ? arg : "");
		if (ks_test_switch(&g->ts, word, err, errlen))
			return -1;
	}
	return g->set(g->ctx, val, arg, err, errlen);
}

/* The settings of c one by one, through cmd's entries of the table. */
int ks_conf_apply(const struct ks_conf *c, unsigned int cmd,
		  const char *cmdname, ks_opt_set_fn set, void *ctx,
		  struct ks_conf_error *e)
{
	size_t i;

	e->value[0] = '\0';
	e->line = NULL;
	for (i = 0; i < c->n; i++) {
		const struct ks_conf_entry *s = &c->e[i];
		const struct ks_cli_opt *o = ks_cli_find(cmd, s->key);
		const char *arg = s->value;
		int n;

		/* config and help are refused when parsed already */
		if (!o || !(o->flags & KS_OPT_CONF))
			return unknown_key(e, c, s, cmd, cmdname);
		if (o->has_arg == no_argument) {
			if (!strcmp(s->value, "no"))
				continue; /* left off */
			if (strcmp(s->value, "yes"))
				return apply_fail(
					e, c->name, s->line,
					"'%s' is a flag and takes no value ('%s'); write '%s = yes' or '%s = no'",
					s->key, s->value, s->key, s->key);
			arg = NULL;
		}
		n = set(ctx, o->val, arg, e->value, sizeof(e->value));
		if (n < 0)
			return apply_fail(
				e, c->name, s->line,
				"'%s = %s' is refused (see above); fix that line",
				s->key, s->value);
		if (!n) /* an entry its handler does not know */
			return unknown_key(e, c, s, cmd, cmdname);
	}
	return 0;
}
