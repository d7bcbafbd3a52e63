// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fz_shards.c - libFuzzer harness of the shard list parsers (user/core/shards.c):
 * --shards lists, shard file text, shard files read from disk (a memfd),
 * and --self. On success every shard must be well formed and findable; on
 * failure the message must be terminated and name where it went wrong.
 */
#include <stdbool.h>
#include <sys/mman.h>
#include <unistd.h>
#include "ks_ring.h"
#include "core/shards.h"
#include "fz_common.h"

static void check_list(const struct ks_shards *s)
{
	char addr[8];
	__u32 i;

	FZ_CHECK(s->n >= 1 && s->n <= KS_MAX_SHARDS, "%u shards", s->n);
	for (i = 0; i < s->n; i++) {
		const struct ks_shard *sh = &s->v[i];
		size_t hl = strnlen(sh->host, sizeof(sh->host));

		FZ_CHECK(hl >= 1 && hl <= KS_SHARD_HOST_MAX, "host length %zu",
			 hl);
		FZ_CHECK(strnlen(sh->name, sizeof(sh->name)) <=
				 KS_SHARD_NAME_MAX,
			 "name not terminated");
		FZ_CHECK(sh->port >= 1, "port 0");
		FZ_CHECK(sh->weight >= 1 && sh->weight <= KS_SHARD_WEIGHT_MAX,
			 "weight %u", sh->weight);
		/* every shard is findable, and names itself: no duplicates */
		FZ_CHECK(ks_shards_find(s, sh->host, sh->port) == (int)i,
			 "shard %u found at %d", i,
			 ks_shards_find(s, sh->host, sh->port));
		ks_shard_addr(sh, addr, sizeof(addr)); /* a short buffer */
		FZ_CHECK(strlen(addr) < sizeof(addr), "address not cut");
	}
}

/* A memfd holding the bytes, read back through its /proc path; false if
 * the memfd could not be made (nothing was tested). */
static bool load_via_file(const uint8_t *p, size_t n, struct ks_shards *s,
			  char *err, size_t errlen, int *rc)
{
	char path[64];
	int fd = memfd_create("fz_shards", MFD_CLOEXEC);

	if (fd < 0)
		return false;
	if (write(fd, p, n) != (ssize_t)n) {
		close(fd);
		return false;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	*rc = ks_shards_load_file(path, s, err, errlen);
	close(fd);
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_bytes b = { data, size };
	uint8_t mode = fz_take_u8(&b);
	struct ks_shards s;
	size_t errlen;
	char *err = fz_errbuf(&b, &errlen), *text, *self = NULL;
	int rc;

	if (mode & 4) /* "host:port" for --self: a prefix of the input */
		self = fz_take_str(&b, fz_take_u8(&b) % 64);
	switch (mode & 3) {
	case 0:
		text = fz_take_rest(&b);
		rc = ks_shards_parse_list("--shards", text, &s, err, errlen);
		break;
	case 1:
		text = fz_take_rest(&b);
		rc = ks_shards_parse_text("shards.txt", text, &s, err, errlen);
		break;
	default:
		text = NULL;
		if (!load_via_file(b.p, b.n, &s, err, errlen, &rc))
			goto out;
		break;
	}
	if (rc) {
		fz_check_err(err, errlen);
		FZ_CHECK(rc < 0, "positive return %d", rc);
		goto out;
	}
	check_list(&s);
	if (self) {
		memset(err, 'Z', errlen);
		rc = ks_shards_set_self(&s, self, err, errlen);
		if (rc)
			fz_check_err(err, errlen);
		else
			FZ_CHECK(s.self < s.n, "self %u of %u", s.self, s.n);
	}
	ks_shards_free(&s);
out:
	free(text);
	free(self);
	free(err);
	return 0;
}
