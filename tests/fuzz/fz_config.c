// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fz_config.c - libFuzzer harness of 'agent run --config' (user/
 * config_file.c): the file parser on a buffer of exactly the file's size
 * (not NUL-terminated, as the API allows), the words it makes spliced into
 * an argv, and ks_conf_find on argvs made of the input. Settings must come
 * out in line order as "--key" words that lead back to their entry; a
 * refused file leaves nothing and says "NAME:LINE: ...".
 */
#include <errno.h>
#include "config_file.h"
#include "fz_common.h"

static void check_conf(const struct ks_conf *c)
{
	static char a0[] = "run", a1[] = "--config", a2[] = "f.conf", a3[] = "-v";
	char *argv[] = { a0, a1, a2, a3, NULL };
	unsigned int last = 0;
	size_t i, words = 0;
	char **out = NULL;
	int n = 0;

	for (i = 0; i < c->n; i++) {
		const struct ks_conf_entry *e = &c->e[i];

		FZ_CHECK(e->line >= 1 && e->line >= last, "line %u after %u",
			 e->line, last);
		FZ_CHECK(e->key && e->key[0], "entry %zu without a key", i);
		if (e->word) {
			FZ_CHECK(!strncmp(e->word, "--", 2), "word '%s'", e->word);
			FZ_CHECK(ks_conf_entry_of(c, e->word) == e,
				 "word of entry %zu leads elsewhere", i);
			words++;
		}
		last = e->line;
	}
	FZ_CHECK(!ks_conf_splice(4, argv, 1, 2, c, &out, &n), "splice failed");
	FZ_CHECK(n == (int)(2 + words + 1) && out[n] == NULL &&
		 out[0] == a0 && out[n - 2] == a3 && !strcmp(out[n - 1], "--"),
		 "spliced argv of %d words for %zu settings", n, words);
	free(out);
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
		FZ_CHECK(at >= 1 && (span == 1 || span == 2) && at + span <= argc,
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
		FZ_CHECK(c.n == 0 && c.e == NULL, "a refused file left %zu settings",
			 c.n);
		fz_check_err(err, errlen);
		FZ_CHECK(errlen < 12 || !strncmp(err, "agent.conf:", 11),
			 "message '%s' does not name the file", err);
	} else {
		check_conf(&c);
		ks_conf_free(&c);
	}
	free(text);
	free(err);
	return 0;
}
