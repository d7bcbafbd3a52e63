// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* shards.c - parsing the shard list (see shards.h for the formats). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ks_ring.h"
#include "util/file.h"
#include "util/opts.h"
#include "core/shards.h"

#define ENTRY_HINT "host:port[:weight]"

/* Where an entry came from, for messages: "f.txt:3" or "--shards item 2". */
struct origin {
	const char *source;
	__u32 line;
	int is_file;
};

static void where(const struct origin *o, char *buf, size_t len)
{
	if (o->is_file)
		snprintf(buf, len, "%s:%u", o->source, o->line);
	else
		snprintf(buf, len, "%s item %u", o->source, o->line);
}

static int fail(const struct origin *o, char *err, size_t errlen, int rc,
		const char *why, const char *fix)
{
	char at[300];

	where(o, at, sizeof(at));
	snprintf(err, errlen, "%s: %s; %s", at, why, fix);
	return rc;
}

/* Hosts the clients can name: DNS labels and IPv4 literals. */
static int host_char_ok(char c)
{
	return isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_';
}

static int name_char_ok(char c)
{
	return isgraph((unsigned char)c) && c != '#' && c != ',';
}

/* Parses "host:port[:weight]" (len bytes at s) into sh. */
static int parse_addr(const struct origin *o, const char *s, size_t len,
		      struct ks_shard *sh, char *err, size_t errlen)
{
	const char *fields[3];
	size_t flen[3], i;
	int nf = 1;
	char why[400], num[32], sub[KS_ERRLEN];
	unsigned long long v;

	size_t hlen = 0; /* a bracketed IPv6 host, brackets included */

	if (len && s[0] == '[') {
		const char *rb = memchr(s, ']', len);
		char a[INET6_ADDRSTRLEN];
		struct in6_addr a6;

		if (!rb || (size_t)(rb - s) - 1 >= sizeof(a)) {
			snprintf(why, sizeof(why),
				 "'%.*s' has no ']' after its IPv6 address",
				 (int)len, s);
			return fail(o, err, errlen, -EINVAL, why,
				    "write [IPV6]:port[:weight]");
		}
		memcpy(a, s + 1, (size_t)(rb - s) - 1);
		a[rb - s - 1] = '\0';
		if (inet_pton(AF_INET6, a, &a6) != 1) {
			snprintf(why, sizeof(why),
				 "'%s' is not an IPv6 address", a);
			return fail(o, err, errlen, -EINVAL, why,
				    "write [IPV6]:port[:weight]");
		}
		hlen = (size_t)(rb - s) + 1;
	}
	fields[0] = s;
	for (i = hlen; i < len; i++) {
		if (s[i] != ':')
			continue;
		if (nf == 3) {
			snprintf(
				why, sizeof(why),
				"'%.*s' has more than three ':' fields (an IPv6 address goes in brackets: [IPV6]:port)",
				(int)len, s);
			return fail(o, err, errlen, -EINVAL, why,
				    "write " ENTRY_HINT);
		}
		fields[nf++] = s + i + 1;
	}
	for (i = 0; i < (size_t)nf; i++)
		flen[i] = (i + 1 < (size_t)nf
				   ? (size_t)(fields[i + 1] - 1 - fields[i])
				   : (size_t)(s + len - fields[i]));
	if (nf < 2) {
		snprintf(why, sizeof(why), "'%.*s' has no port", (int)len, s);
		return fail(o, err, errlen, -EINVAL, why, "write " ENTRY_HINT);
	}
	if (flen[0] == 0) {
		snprintf(why, sizeof(why), "'%.*s' has an empty host", (int)len,
			 s);
		return fail(o, err, errlen, -EINVAL, why, "write " ENTRY_HINT);
	}
	if (flen[0] > KS_SHARD_HOST_MAX) {
		snprintf(why, sizeof(why),
			 "host is %zu characters, more than %d", flen[0],
			 KS_SHARD_HOST_MAX);
		return fail(o, err, errlen, -EINVAL, why,
			    "give a host name or IPv4 address");
	}
	for (i = 0; i < flen[0] && !hlen; i++) {
		if (!host_char_ok(fields[0][i])) {
			snprintf(why, sizeof(why),
				 "host '%.*s' has the character '%c'",
				 (int)flen[0], fields[0],
				 isprint((unsigned char)fields[0][i])
					 ? fields[0][i]
					 : '?');
			return fail(
				o, err, errlen, -EINVAL, why,
				"give a host name or IPv4 address (letters, digits, '.', '-', '_')");
		}
	}
	memcpy(sh->host, fields[0], flen[0]);
	sh->host[flen[0]] = '\0';

	for (i = 1; i < (size_t)nf; i++) {
		const char *what = i == 1 ? "port" : "weight";
		unsigned long long max = i == 1 ? 65535 : KS_SHARD_WEIGHT_MAX;

		if (flen[i] == 0 || flen[i] >= sizeof(num)) {
			snprintf(why, sizeof(why),
				 "'%.*s' has an empty or overlong %s", (int)len,
				 s, what);
			return fail(o, err, errlen, -EINVAL, why,
				    "write " ENTRY_HINT);
		}
		memcpy(num, fields[i], flen[i]);
		num[flen[i]] = '\0';
		if (ks_parse_uint(what, num, 1, max, &v, sub, sizeof(sub))) {
			if (strchr(num, '-') == NULL &&
			    strspn(num, "0123456789") == flen[i])
				snprintf(why, sizeof(why),
					 "%s %s out of range 1..%llu", what,
					 num, max);
			else
				snprintf(why, sizeof(why),
					 "%s '%s' is not a whole number", what,
					 num);
			return fail(
				o, err, errlen, -ERANGE, why,
				i == 1 ? "give a port from 1 to 65535"
				       : "give a weight from 1 to 1000000 (default 1)");
		}
		if (i == 1)
			sh->port = (__u16)v;
		else
			sh->weight = (__u32)v;
	}
	if (nf == 2)
		sh->weight = 1;
	return 0;
}

static int add_shard(struct ks_shards *s, const struct origin *o,
		     const struct ks_shard *sh, char *err, size_t errlen)
{
	struct ks_shard *nv;
	char why[700];
	__u32 i;

	for (i = 0; i < s->n; i++) {
		const struct ks_shard *p = &s->v[i];

		if (p->port == sh->port && !strcmp(p->host, sh->host)) {
			snprintf(why, sizeof(why),
				 "%s:%u is listed twice (first %s %u)",
				 sh->host, sh->port,
				 o->is_file ? "on line" : "as item", p->line);
			return fail(o, err, errlen, -EINVAL, why,
				    "list every shard once");
		}
		if (sh->name[0] && !strcmp(p->name, sh->name)) {
			snprintf(why, sizeof(why),
				 "name '%s' is used twice (first on line %u)",
				 sh->name, p->line);
			return fail(o, err, errlen, -EINVAL, why,
				    "give every shard its own name");
		}
	}
	if (s->n == KS_MAX_SHARDS) {
		snprintf(why, sizeof(why), "more than %d shards",
			 KS_MAX_SHARDS);
		return fail(o, err, errlen, -E2BIG, why,
			    "a ring holds at most 1024 shards");
	}
	nv = realloc(s->v, (s->n + 1) * sizeof(*nv));
	if (!nv) {
		snprintf(
			err, errlen,
			"out of memory reading the shard list; free some memory");
		return -ENOMEM;
	}
	s->v = nv;
	s->v[s->n++] = *sh;
	return 0;
}

static void init_list(struct ks_shards *out, const char *source)
{
	memset(out, 0, sizeof(*out));
	out->self = KS_NO_SHARD;
	snprintf(out->source, sizeof(out->source), "%s", source);
}

static int empty_list(struct ks_shards *out, char *err, size_t errlen)
{
	snprintf(err, errlen,
		 "%s lists no shards; give at least one " ENTRY_HINT,
		 out->source);
	return -EINVAL;
}

int ks_shards_parse_list(const char *what, const char *list,
			 struct ks_shards *out, char *err, size_t errlen)
{
	struct origin o = { .source = what, .is_file = 0 };
	const char *p = list, *end;
	int rc;

	init_list(out, what);
	if (!list || !*list)
		return empty_list(out, err, errlen);
	for (;;) {
		struct ks_shard sh = {};
		size_t len;

		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		o.line++;
		if (len == 0) {
			rc = fail(&o, err, errlen, -EINVAL, "empty item",
				  "separate " ENTRY_HINT
				  " items with single commas");
			goto out;
		}
		sh.line = o.line;
		rc = parse_addr(&o, p, len, &sh, err, errlen);
		if (!rc)
			rc = add_shard(out, &o, &sh, err, errlen);
		if (rc)
			goto out;
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
out:
	ks_shards_free(out);
	return rc;
}

/* One line of a shard file (no newline); blank and comment lines add nothing. */
static int parse_line(struct ks_shards *out, const struct origin *o,
		      const char *line, size_t len, char *err, size_t errlen)
{
	struct ks_shard sh = {};
	const char *tok[3];
	size_t tlen[3], i = 0;
	int nt = 0, rc;
	char why[400];

	/* '#' to the end of the line is a comment */
	for (i = 0; i < len; i++)
		if (line[i] == '#')
			len = i;
	i = 0;
	while (i < len) {
		while (i < len && isspace((unsigned char)line[i]))
			i++;
		if (i == len)
			break;
		if (nt == 3) {
			snprintf(why, sizeof(why),
				 "unexpected '%.*s' after the name",
				 (int)(len - i), line + i);
			return fail(o, err, errlen, -EINVAL, why,
				    "write " ENTRY_HINT
				    " [name], one shard per line");
		}
		tok[nt] = line + i;
		while (i < len && !isspace((unsigned char)line[i]))
			i++;
		tlen[nt] = (size_t)(line + i - tok[nt]);
		nt++;
	}
	if (nt == 0)
		return 0;
	/* a nutcracker.yml list item: "- host:port:weight name" */
	if (tlen[0] == 1 && tok[0][0] == '-') {
		for (i = 1; i < (size_t)nt; i++) {
			tok[i - 1] = tok[i];
			tlen[i - 1] = tlen[i];
		}
		if (--nt == 0)
			return fail(o, err, errlen, -EINVAL,
				    "'-' without a shard",
				    "write " ENTRY_HINT " [name]");
	}
	if (nt == 3) {
		snprintf(why, sizeof(why), "unexpected '%.*s' after the name",
			 (int)tlen[2], tok[2]);
		return fail(o, err, errlen, -EINVAL, why,
			    "write " ENTRY_HINT " [name], one shard per line");
	}
	sh.line = o->line;
	rc = parse_addr(o, tok[0], tlen[0], &sh, err, errlen);
	if (rc)
		return rc;
	if (nt == 2) {
		if (tlen[1] > KS_SHARD_NAME_MAX) {
			snprintf(why, sizeof(why),
				 "name is %zu characters, more than %d",
				 tlen[1], KS_SHARD_NAME_MAX);
			return fail(o, err, errlen, -EINVAL, why,
				    "shorten the name");
		}
		for (i = 0; i < tlen[1]; i++) {
			if (!name_char_ok(tok[1][i])) {
				snprintf(why, sizeof(why),
					 "name '%.*s' has the character '%c'",
					 (int)tlen[1], tok[1],
					 isprint((unsigned char)tok[1][i])
						 ? tok[1][i]
						 : '?');
				return fail(
					o, err, errlen, -EINVAL, why,
					"use printable characters other than ',' and '#'");
			}
		}
		memcpy(sh.name, tok[1], tlen[1]);
		sh.name[tlen[1]] = '\0';
	}
	return add_shard(out, o, &sh, err, errlen);
}

int ks_shards_parse_text(const char *source, const char *text,
			 struct ks_shards *out, char *err, size_t errlen)
{
	struct origin o = { .source = source, .is_file = 1 };
	const char *p = text;
	int rc;

	init_list(out, source);
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		o.line++;
		rc = parse_line(out, &o, p, len, err, errlen);
		if (rc) {
			ks_shards_free(out);
			return rc;
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	if (!out->n)
		return empty_list(out, err, errlen);
	return 0;
}

int ks_shards_load_file(const char *path, struct ks_shards *out, char *err,
			size_t errlen)
{
	char *text;
	size_t n;
	int rc = ks_read_file(path, KS_SHARD_FILE_MAX, &text, &n);

	switch (rc) {
	case 0:
		break;
	case -ENOMEM:
		snprintf(err, errlen,
			 "out of memory reading %s; free some memory", path);
		return rc;
	case -EIO:
		snprintf(err, errlen,
			 "cannot read the shard file %s; check the file", path);
		return rc;
	case -EFBIG:
		snprintf(
			err, errlen,
			"the shard file %s is larger than %d bytes; list at most %d shards, one per line",
			path, KS_SHARD_FILE_MAX, KS_MAX_SHARDS);
		return rc;
	default:
		snprintf(err, errlen,
			 "cannot open the shard file %s: %s; check the path",
			 path, strerror(-rc));
		return rc;
	}
	if (memchr(text, '\0', n)) {
		rc = -EINVAL;
		snprintf(err, errlen,
			 "the shard file %s holds a NUL byte; give a text file",
			 path);
	} else {
		rc = ks_shards_parse_text(path, text, out, err, errlen);
	}
	free(text);
	return rc;
}

int ks_shards_find(const struct ks_shards *s, const char *host, __u16 port)
{
	__u32 i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].port == port && !strcmp(s->v[i].host, host))
			return (int)i;
	return -1;
}

int ks_shards_set_self(struct ks_shards *s, const char *hostport, char *err,
		       size_t errlen)
{
	struct origin o = { .source = "--self", .line = 1, .is_file = 0 };
	struct ks_shard sh = {};
	char sub[KS_ERRLEN];
	int i;

	if (!hostport || !*hostport) {
		snprintf(
			err, errlen,
			"--self needs host:port; name the shard this host serves");
		return -EINVAL;
	}
	if (parse_addr(&o, hostport, strlen(hostport), &sh, sub, sizeof(sub))) {
		/* "--self item 1: why; fix" reads oddly: drop the item part */
		const char *colon = strstr(sub, ": ");

		snprintf(err, errlen, "--self%s", colon ? colon : sub);
		return -EINVAL;
	}
	if (strchr(strrchr(hostport, ']') ? strrchr(hostport, ']') : hostport,
		   ':') != strrchr(hostport, ':')) {
		snprintf(err, errlen,
			 "--self '%s' has a weight; give host:port only",
			 hostport);
		return -EINVAL;
	}
	i = ks_shards_find(s, sh.host, sh.port);
	if (i < 0) {
		snprintf(
			err, errlen,
			"--self %s:%u is not in %s; give one of the shards listed there",
			sh.host, sh.port, s->source);
		return -ENOENT;
	}
	s->self = (__u32)i;
	return 0;
}

void ks_shard_addr(const struct ks_shard *sh, char *buf, size_t len)
{
	snprintf(buf, len, "%s:%u", sh->host, sh->port);
}

void ks_shards_free(struct ks_shards *s)
{
	free(s->v);
	s->v = NULL;
	s->n = 0;
	s->self = KS_NO_SHARD;
}
