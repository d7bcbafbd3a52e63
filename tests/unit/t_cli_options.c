// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The option table (user/cli/cli_options.c): well formed per command, the
 * getopt tables and --help lists made from it, the config example's keys,
 * and the man page: the options of each command's section of
 * user/dist/keysteer-agent.8 (its .TP items) are the table's, with the
 * same metavars, both ways.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli_options.h"
#include "cli/cmds.h"
#include "ktest.h"
#include "unit.h"

static const struct {
	const char *name; /* as in 'agent help NAME' and the man page's .SS */
	unsigned int mask;
} cmds[] = {
	{ "run", KS_CMD_RUN },       { "report", KS_CMD_REPORT },
	{ "trace", KS_CMD_TRACE },   { "detach", KS_CMD_DETACH },
	{ "ring", KS_CMD_RING },     { "replay", KS_CMD_REPLAY },
	{ "fleet", KS_CMD_FLEET },   { "pins", KS_CMD_PINS },
	{ "follow", KS_CMD_FOLLOW },
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

/* The one-command bits getopt tables are built for. */
static const unsigned int bits[] = {
	KS_CMD_RUN,         KS_CMD_REPORT,    KS_CMD_TRACE,    KS_CMD_DETACH,
	KS_CMD_RING_LOOKUP, KS_CMD_RING_DIFF, KS_CMD_REPLAY,   KS_CMD_RING_GET,
	KS_CMD_RING_SET,    KS_CMD_FLEET,     KS_CMD_PINS_GET, KS_CMD_PINS_SET,
	KS_CMD_FOLLOW,
};

/* Appends to a message buffer, for one CHECK naming every difference. */
static void add(char *buf, size_t len, const char *fmt, const char *a,
		const char *b)
{
	size_t o = strlen(buf);

	if (o < len)
		snprintf(buf + o, len - o, fmt, a, b);
}

static void table_well_formed(void)
{
	char bad[400] = "";
	unsigned int i, j, k;

	kt_begin("cli_table_well_formed");
	for (i = 0; i < ks_cli_nopts; i++) {
		const struct ks_cli_opt *o = &ks_cli_opts[i];

		if (!o->name || !o->name[0] || !o->help || !o->help[0] ||
		    !o->cmds)
			add(bad, sizeof(bad), " %s%s(name, help or commands)",
			    o->name ? o->name : "?", "");
		if ((o->has_arg == required_argument) != (o->metavar != NULL))
			add(bad, sizeof(bad), " %s%s(metavar and argument)",
			    o->name, "");
		/* config files are run's */
		if ((o->flags & KS_OPT_CONF) && !(o->cmds & KS_CMD_RUN))
			add(bad, sizeof(bad), " %s%s(a key, not of run)",
			    o->name, "");
		if ((o->flags & KS_OPT_SHORT) &&
		    !((o->val >= 'a' && o->val <= 'z') ||
		      (o->val >= 'A' && o->val <= 'Z')))
			add(bad, sizeof(bad),
			    " %s%s(short option not a letter)", o->name, "");
	}
	/* per command: no name and no getopt value twice */
	for (k = 0; k < sizeof(bits) / sizeof(bits[0]); k++) {
		unsigned int n = 0;

		for (i = 0; i < ks_cli_nopts; i++) {
			if (!(ks_cli_opts[i].cmds & bits[k]))
				continue;
			n++;
			for (j = i + 1; j < ks_cli_nopts; j++) {
				if (!(ks_cli_opts[j].cmds & bits[k]))
					continue;
				if (!strcmp(ks_cli_opts[i].name,
					    ks_cli_opts[j].name))
					add(bad, sizeof(bad), " %s twice%s",
					    ks_cli_opts[i].name, "");
				if (ks_cli_opts[i].val == ks_cli_opts[j].val)
					add(bad, sizeof(bad),
					    " %s and %s share a value",
					    ks_cli_opts[i].name,
					    ks_cli_opts[j].name);
			}
		}
		CHECK(n <= KS_CLI_MAX_OPTS, "command %#x has %u options",
		      bits[k], n);
	}
	CHECK(!bad[0], "entries:%s", bad);
	kt_end();
}

static void getopt_tables(void)
{
	struct ks_cli_getopt g;
	unsigned int i, k, n;

	kt_begin("cli_getopt_tables");
	for (k = 0; k < sizeof(bits) / sizeof(bits[0]); k++) {
		ks_cli_getopt_init(&g, bits[k]);
		for (i = n = 0; i < ks_cli_nopts; i++)
			n += !!(ks_cli_opts[i].cmds & bits[k]);
		CHECK(g.n == n && g.lo[n].name == NULL, "command %#x: %u of %u",
		      bits[k], g.n, n);
		CHECK(g.shorts[0] == ':', "shorts '%s'", g.shorts);
	}
	ks_cli_getopt_init(&g, KS_CMD_RUN);
	CHECK(!strcmp(g.shorts, ":vh"), "run's short options '%s'", g.shorts);
	ks_cli_getopt_init(&g, KS_CMD_RING_DIFF);
	CHECK(!strcmp(g.shorts, ":h"), "ring diff's short options '%s'",
	      g.shorts);
	kt_end();

	kt_begin("cli_lookups");
	CHECK(ks_cli_find(KS_CMD_RUN, "sample") &&
		      ks_cli_find(KS_CMD_RUN, "sample")->val == 's',
	      "run --sample");
	CHECK(!ks_cli_find(KS_CMD_REPORT, "sample"), "report --sample");
	CHECK(!ks_cli_find(KS_CMD_RING_DIFF, "self"), "ring diff --self");
	CHECK(ks_cli_find(KS_CMD_RUN, "top") !=
		      ks_cli_find(KS_CMD_REPORT, "top"),
	      "run and report share the wording of --top");
	CHECK(ks_cli_prefix(KS_CMD_RUN, "samp", "config") ==
		      ks_cli_find(KS_CMD_RUN, "sample"),
	      "'samp' is not taken for --sample");
	CHECK(!ks_cli_prefix(KS_CMD_RUN, "s", "config"), "'s' is ambiguous");
	CHECK(!ks_cli_prefix(KS_CMD_RUN, "conf", "config"),
	      "'conf' leads to --config");
	CHECK(!ks_cli_prefix(KS_CMD_RUN, "bogus", NULL), "'bogus'");
	kt_end();
}

/* Opens a file of the source tree: from the current folder (tests/run.sh
 * runs in the tree), else from the test binary's OUT/tests/.. /.. */
static FILE *open_src(const char *rel)
{
	char exe[PATH_MAX], path[PATH_MAX * 2];
	FILE *f = fopen(rel, "r");
	ssize_t n;

	if (f)
		return f;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	snprintf(path, sizeof(path), "%s/../../%s", dirname(exe), rel);
	return fopen(path, "r");
}

/* The help text of a command, captured. */
static char *help_of(const char *cmd)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	ks_help_for(cmd, f);
	fclose(f);
	return buf;
}

static void help_lists(void)
{
	char bad[400] = "", syn[64], want[80];
	unsigned int c, i;

	kt_begin("cli_help_lists_the_table");
	for (c = 0; c < NCMDS; c++) {
		char *h = help_of(cmds[c].name), *line, *save = NULL;

		if (!h) {
			kt_failf(__FILE__, __LINE__, "open_memstream failed");
			break;
		}
		/* every entry has its line... */
		for (i = 0; i < ks_cli_nopts; i++) {
			const struct ks_cli_opt *o = &ks_cli_opts[i];

			if (!(o->cmds & cmds[c].mask) ||
			    (o->flags & KS_OPT_HIDE))
				continue;
			ks_cli_synopsis(o, syn, sizeof(syn));
			snprintf(want, sizeof(want), "\n  %s ", syn);
			if (!strstr(h, want))
				add(bad, sizeof(bad), " %s: no '%s' line",
				    cmds[c].name, syn);
		}
		/* ...and every option line (as test_install.sh reads them:
		 * a dash after the indent) is an entry's */
		for (line = strtok_r(h, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			char name[40];
			const char *p = line + strspn(line, " ");

			if (p == line || *p != '-')
				continue;
			if (!strncmp(p, "-v, ", 4))
				p += 4;
			if (sscanf(p, "--%39[a-z0-9-]", name) != 1 ||
			    !ks_cli_find(cmds[c].mask, name))
				add(bad, sizeof(bad),
				    " %s: '%.30s' is no entry", cmds[c].name,
				    p);
		}
		free(h);
	}
	CHECK(!bad[0], "%s", bad);
	kt_end();
}

static void example_keys(void)
{
	char line[512], key[64], bad[300] = "", test[300] = "";
	FILE *f = open_src("user/dist/keysteer.conf.example");
	int n = 0;

	kt_begin("cli_config_example_keys");
	if (!f) {
		CHECK(0, "cannot open user/dist/keysteer.conf.example");
		kt_end();
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		const struct ks_cli_opt *o;
		const char *p = line[0] == '#' ? line + 1 : line;

		if (sscanf(p, "%63[a-z0-9-] =", key) != 1 || !strstr(p, "="))
			continue;
		if (!strchr("abcdefghijklmnopqrstuvwxyz", key[0]))
			continue;
		n++;
		o = ks_cli_find(KS_CMD_RUN, key);
		if (!o || !(o->flags & KS_OPT_CONF))
			add(bad, sizeof(bad), " %s%s", key, "");
		else if (o->flags & KS_OPT_TEST)
			add(test, sizeof(test), " %s%s", key, "");
	}
	fclose(f);
	CHECK(!bad[0], "not config keys of run:%s", bad);
	/* an example is what operators copy: no test-only switch in it */
	CHECK(!test[0], "test-only switches in the example:%s", test);
	CHECK(n >= 20, "only %d keys found", n);
	kt_end();
}

/* ---- the man page ---- */

#define MAN_MAX 256

struct man_opt {
	unsigned int mask; /* the section's commands */
	char sec[16];
	char name[40]; /* the long name, or the letter of a short one */
	int is_short;
	char metavar[40]; /* from .BI, "" when not given */
	int flag_tag;     /* alone on a .B line: takes no value */
};

/* Splits a macro line's arguments (roff quoting), escapes undone. */
static int roff_args(const char *line, char out[][64], int max)
{
	const char *p = line;
	int n = 0;

	p += strcspn(p, " "); /* the macro */
	while (*p && n < max) {
		char tok[128];
		size_t t = 0;
		int quoted;

		while (*p == ' ')
			p++;
		if (!*p)
			break;
		quoted = *p == '"';
		if (quoted)
			p++;
		while (*p && (quoted ? *p != '"' : *p != ' ') &&
		       t < sizeof(tok) - 1)
			tok[t++] = *p++;
		if (quoted && *p == '"')
			p++;
		tok[t] = '\0';
		/* \- is a dash; \fB \fI \fR \fP and \& are fonts and nothing */
		{
			char *r = tok, *w = out[n];
			size_t room = 63;

			while (*r && room) {
				if (r[0] == '\\' && r[1] == '-') {
					*w++ = '-';
					r += 2;
				} else if (r[0] == '\\' && r[1] == 'f' &&
					   r[2]) {
					r += 3;
					continue;
				} else if (r[0] == '\\' && r[1] == '&') {
					r += 2;
					continue;
				} else {
					*w++ = *r++;
				}
				room--;
			}
			*w = '\0';
		}
		n++;
	}
	return n;
}

/* The options of every command section's .TP tags. */
static int man_options(FILE *f, struct man_opt *m, int max)
{
	char line[1024], sec[16] = "", args[16][64];
	unsigned int mask = 0;
	int n = 0, tag = 0;

	while (fgets(line, sizeof(line), f)) {
		int na, i;

		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, ".SH", 3)) {
			mask = 0;
			continue;
		}
		if (!strncmp(line, ".SS ", 4)) {
			size_t c;

			snprintf(sec, sizeof(sec), "%.*s",
				 (int)strcspn(line + 4, " ,"), line + 4);
			mask = 0;
			for (c = 0; c < NCMDS; c++)
				if (!strcmp(sec, cmds[c].name))
					mask = cmds[c].mask;
			continue;
		}
		if (!strcmp(line, ".TP")) {
			tag = 1;
			continue;
		}
		if (!tag || !mask)
			continue;
		tag = 0; /* this line is the tag */
		na = roff_args(line, args, 16);
		for (i = 0; i < na && n < max; i++) {
			const char *a = args[i];

			if (a[0] != '-')
				continue;
			memset(&m[n], 0, sizeof(m[n]));
			m[n].mask = mask;
			snprintf(m[n].sec, sizeof(m[n].sec), "%s", sec);
			m[n].is_short = a[1] != '-';
			snprintf(m[n].name, sizeof(m[n].name), "%s",
				 a + 1 + !m[n].is_short);
			if (!strncmp(line, ".BI ", 4) && i + 1 < na &&
			    args[i + 1][0] == ' ')
				snprintf(m[n].metavar, sizeof(m[n].metavar),
					 "%s", args[i + 1] + 1);
			m[n].flag_tag = !strncmp(line, ".B ", 3) && na == 1;
			n++;
		}
	}
	return n;
}

static void man_page(void)
{
	static struct man_opt m[MAN_MAX];
	char bad[480] = "", what[96];
	FILE *f = open_src("user/dist/keysteer-agent.8");
	unsigned int c, i;
	int n, k;

	kt_begin("cli_man_page_equals_table");
	if (!f) {
		CHECK(0, "cannot open user/dist/keysteer-agent.8");
		kt_end();
		return;
	}
	n = man_options(f, m, MAN_MAX);
	fclose(f);
	CHECK(n >= 60, "only %d options in the man page's sections", n);
	/* the page's options are the table's, metavars and flags too */
	for (k = 0; k < n; k++) {
		const struct ks_cli_opt *o = NULL;

		if (m[k].is_short) {
			/* a short option: a KS_OPT_SHORT entry of the section */
			for (i = 0; i < ks_cli_nopts && !o; i++)
				if ((ks_cli_opts[i].cmds & m[k].mask) &&
				    (ks_cli_opts[i].flags & KS_OPT_SHORT) &&
				    !(ks_cli_opts[i].flags & KS_OPT_HIDE) &&
				    ks_cli_opts[i].val == m[k].name[0])
					o = &ks_cli_opts[i];
			if (!o)
				add(bad, sizeof(bad),
				    " %s: -%s not in the table;", m[k].sec,
				    m[k].name);
			continue;
		}
		o = ks_cli_find(m[k].mask, m[k].name);
		snprintf(what, sizeof(what), "%s --%s", m[k].sec, m[k].name);
		if (!o || (o->flags & KS_OPT_HIDE))
			add(bad, sizeof(bad), " %s%s: not in the table;", what,
			    "");
		else if (m[k].metavar[0] &&
			 (!o->metavar || strcmp(o->metavar, m[k].metavar)))
			add(bad, sizeof(bad), " %s: metavar '%s' in the page;",
			    what, m[k].metavar);
		else if (m[k].flag_tag && o->has_arg != no_argument)
			add(bad, sizeof(bad), " %s%s: a flag in the page;",
			    what, "");
	}
	/* the table's options are in the page, in their commands' sections */
	for (c = 0; c < NCMDS; c++) {
		for (i = 0; i < ks_cli_nopts; i++) {
			const struct ks_cli_opt *o = &ks_cli_opts[i];
			int found = 0, found_short = 0;

			if (!(o->cmds & cmds[c].mask) ||
			    (o->flags & KS_OPT_HIDE))
				continue;
			for (k = 0; k < n; k++) {
				if (m[k].mask != cmds[c].mask)
					continue;
				found |= !m[k].is_short &&
					 !strcmp(m[k].name, o->name);
				found_short |= m[k].is_short &&
					       m[k].name[0] == o->val;
			}
			if (!found)
				add(bad, sizeof(bad),
				    " %s --%s: not in the page;", cmds[c].name,
				    o->name);
			else if ((o->flags & KS_OPT_SHORT) && !found_short)
				add(bad, sizeof(bad),
				    " %s --%s: no short option in the page;",
				    cmds[c].name, o->name);
		}
	}
	CHECK(!bad[0],
	      "user/dist/keysteer-agent.8 and user/cli/cli_options.c differ:%s",
	      bad);
	kt_end();
}

void test_cli_options(void)
{
	table_well_formed();
	getopt_tables();
	help_lists();
	example_keys();
	man_page();
}
