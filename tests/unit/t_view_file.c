// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_view_file.c - the host follower's view file (core/view_file.h): the
 * encoding read back, every kind of damage refused with its reason (a torn
 * file: halves of two snapshots; a cut one; garbage; another cluster's),
 * and the writer's rename seen by a reader as a new file while the old
 * mapping stays whole.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/view_file.h"
#include "ktest.h"
#include "unit.h"

#define PFX "/keysteer/vf/"

static struct ks_etcd_kv mk(const char *key, const char *val, int64_t rev)
{
	return (struct ks_etcd_kv){ .key = (char *)key,
				    .value = (char *)val,
				    .key_len = strlen(key),
				    .value_len = strlen(val),
				    .mod_revision = rev };
}

/* kvs encoded as generation gen at rev into a new buffer of *len. */
static void *enc(const struct ks_etcd_kv *kvs, size_t n, __u64 gen, int64_t rev,
		 size_t *len)
{
	struct ks_view_file_meta m = {
		.prefix = PFX, .generation = gen, .revision = rev, .pid = 1
	};
	void *buf;

	*len = ks_view_file_size(kvs, n);
	buf = malloc(*len);
	if (buf && ks_view_file_encode(buf, *len, &m, kvs, n)) {
		free(buf);
		buf = NULL;
	}
	return buf;
}

static void round_trip(void)
{
	struct ks_etcd_kv kvs[3] = { mk(PFX "hosts/a", "{\"x\":1}", 5),
				     mk(PFX "hot/00ff", "{}", 9),
				     mk(PFX "ring", "r", 3) };
	struct ks_view_snap s;
	char err[256], buf[64];
	size_t len, i;
	void *b = enc(kvs, 3, 7, 12, &len);

	kt_begin("view_file_round_trip");
	CHECK(b != NULL, "encode failed");
	CHECK_EQ(ks_view_range("vf", buf, sizeof(buf), err, sizeof(err)),
		 (int)strlen(PFX));
	CHECK(!strcmp(buf, PFX), "range %s", buf);
	CHECK_EQ(ks_view_range("bad/name", buf, sizeof(buf), err, sizeof(err)),
		 -EINVAL);
	if (b) {
		CHECK_EQ(ks_view_file_decode(b, len, PFX, &s, err, sizeof(err)),
			 0);
		CHECK_EQ(s.n, 3);
		CHECK_EQ(s.generation, 7);
		CHECK_EQ(s.revision, 12);
		for (i = 0; i < s.n && i < 3; i++)
			CHECK(s.kvs[i].key_len == kvs[i].key_len &&
				      !memcmp(s.kvs[i].key, kvs[i].key,
					      kvs[i].key_len) &&
				      s.kvs[i].value_len == kvs[i].value_len &&
				      !memcmp(s.kvs[i].value, kvs[i].value,
					      kvs[i].value_len) &&
				      s.kvs[i].mod_revision ==
					      kvs[i].mod_revision,
			      "document %zu differs", i);
		ks_view_snap_free(&s);
		/* an empty range is a view too (a fleet not started yet) */
		free(b);
		b = enc(NULL, 0, 1, 2, &len);
		CHECK(b &&
			      !ks_view_file_decode(b, len, PFX, &s, err,
						   sizeof(err)) &&
			      s.n == 0,
		      "empty view: %s", err);
		ks_view_snap_free(&s);
	}
	/* a key outside the range is not written */
	{
		struct ks_etcd_kv out = mk("/keysteer/other/ring", "r", 1);
		struct ks_view_file_meta m = { .prefix = PFX };
		char tmp[512];

		CHECK_EQ(ks_view_file_encode(tmp, ks_view_file_size(&out, 1),
					     &m, &out, 1),
			 -EINVAL);
	}
	free(b);
	kt_end();
}

static void refused(void)
{
	struct ks_etcd_kv a[2] = { mk(PFX "hot/01", "{\"state\":\"armed\"}", 5),
				   mk(PFX "ring", "ring-one", 3) };
	struct ks_etcd_kv b2[2] = { mk(PFX "hot/01", "{\"state\":\"dirty\"}",
				       8),
				    mk(PFX "ring", "ring-two", 7) };
	struct ks_view_snap s;
	char err[256];
	size_t la, lb, half;
	void *fa = enc(a, 2, 1, 5, &la), *fb = enc(b2, 2, 2, 8, &lb);
	unsigned char *torn;

	kt_begin("view_file_torn_read_refused");
	CHECK(fa && fb && la == lb, "same-size snapshots");
	if (!fa || !fb || la != lb)
		goto out;
	/* what a reader copying a file rewritten in place would see: the
	 * new header and the first half of the new body, then the old */
	torn = malloc(la);
	half = sizeof(struct ks_view_file_hdr) +
	       (la - sizeof(struct ks_view_file_hdr)) / 2;
	memcpy(torn, fb, half);
	memcpy(torn + half, (unsigned char *)fa + half, la - half);
	CHECK_EQ(ks_view_file_decode(torn, la, PFX, &s, err, sizeof(err)),
		 -EBADMSG);
	CHECK(strstr(err, "body checksum wrong") && strstr(err, "torn"), "'%s'",
	      err);
	/* the other way round: an old header over a new body */
	memcpy(torn, fa, sizeof(struct ks_view_file_hdr));
	memcpy(torn + sizeof(struct ks_view_file_hdr),
	       (unsigned char *)fb + sizeof(struct ks_view_file_hdr),
	       la - sizeof(struct ks_view_file_hdr));
	CHECK_EQ(ks_view_file_decode(torn, la, PFX, &s, err, sizeof(err)),
		 -EBADMSG);
	/* a header torn across its own fields */
	memcpy(torn, fa, la);
	memcpy(torn + 16, (unsigned char *)fb + 16, 16); /* generation, rev */
	CHECK_EQ(ks_view_file_decode(torn, la, PFX, &s, err, sizeof(err)),
		 -EBADMSG);
	CHECK(strstr(err, "header checksum wrong"), "'%s'", err);
	/* the liveness words are outside the sums: changing them is fine */
	memcpy(torn, fa, la);
	ks_view_file_live(torn)->heartbeat_ms = 12345;
	CHECK_EQ(ks_view_file_decode(torn, la, PFX, &s, err, sizeof(err)), 0);
	ks_view_snap_free(&s);
	free(torn);
	kt_end();

	kt_begin("view_file_truncated_garbage_other_refused");
	CHECK_EQ(ks_view_file_decode(fa, la - 8, PFX, &s, err, sizeof(err)),
		 -EBADMSG);
	CHECK(strstr(err, "truncated"), "'%s'", err);
	CHECK_EQ(ks_view_file_decode(fa, 100, PFX, &s, err, sizeof(err)),
		 -EBADMSG);
	CHECK(strstr(err, "not a keysteer view file"), "'%s'", err);
	CHECK_EQ(ks_view_file_decode("garbage, not a view file at all....", 36,
				     PFX, &s, err, sizeof(err)),
		 -EBADMSG);
	CHECK(strstr(err, "not a keysteer view file"), "'%s'", err);
	CHECK_EQ(ks_view_file_decode(fa, la, "/keysteer/other/", &s, err,
				     sizeof(err)),
		 -ESTALE);
	CHECK(strstr(err, "not of /keysteer/other/"), "'%s'", err);
	((struct ks_view_file_hdr *)fa)->version = 99;
	CHECK_EQ(ks_view_file_decode(fa, la, PFX, &s, err, sizeof(err)),
		 -EBADMSG);
	CHECK(strstr(err, "version 99"), "'%s'", err);
	kt_end();
out:
	free(fa);
	free(fb);
}

static void publish_rename(void)
{
	char dir[] = "/tmp/ks_ut_vf.XXXXXX", err[512];
	struct ks_etcd_kv one = mk(PFX "ring", "one", 3);
	struct ks_etcd_kv two = mk(PFX "ring", "two", 4);
	struct ks_view_file_meta m = { .prefix = PFX,
				       .generation = 1,
				       .revision = 3 };
	struct ks_view_writer w = { 0 };
	struct ks_view_map r1, r2;
	struct ks_view_snap s1, s2;
	struct ks_view_file_live l = { .heartbeat_ms = 77,
				       .up = 1,
				       .since_ms = 70 };

	kt_begin("view_file_rename_new_inode_old_map_whole");
	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(w.path, sizeof(w.path), "%s/sub/vf.view", dir);
	CHECK_EQ(ks_view_file_publish(&w, &m, &one, 1, err, sizeof(err)), 0);
	CHECK_EQ(ks_view_file_map(w.path, PFX, &r1, &s1, err, sizeof(err)), 0);
	CHECK_EQ(ks_view_file_changed(w.path, &r1), 0);
	ks_view_file_beat(&w, &l);
	{
		struct ks_view_file_live got;

		ks_view_file_live_load(&r1, &got);
		CHECK(got.heartbeat_ms == 77 && got.up == 1 &&
			      got.since_ms == 70,
		      "beat not seen: %llu",
		      (unsigned long long)got.heartbeat_ms);
	}
	m.generation = 2;
	m.revision = 4;
	CHECK_EQ(ks_view_file_publish(&w, &m, &two, 1, err, sizeof(err)), 0);
	CHECK_EQ(ks_view_file_changed(w.path, &r1), 1);
	/* the reader's old mapping still reads whole: the old snapshot */
	CHECK(s1.n == 1 && !memcmp(s1.kvs[0].value, "one", 3),
	      "old mapping changed");
	CHECK_EQ(ks_view_file_map(w.path, PFX, &r2, &s2, err, sizeof(err)), 0);
	CHECK(s2.n == 1 && !memcmp(s2.kvs[0].value, "two", 3) &&
		      s2.generation == 2,
	      "new file not read");
	ks_view_snap_free(&s1);
	ks_view_snap_free(&s2);
	ks_view_map_close(&r1);
	ks_view_map_close(&r2);
	ks_view_writer_close(&w);
	/* no file: refused by name */
	unlink(w.path);
	CHECK_EQ(ks_view_file_map(w.path, PFX, &r1, &s1, err, sizeof(err)),
		 -ENOENT);
	CHECK(strstr(err, w.path) != NULL, "'%s'", err);
	snprintf(err, sizeof(err), "%s/sub", dir);
	rmdir(err);
	rmdir(dir);
	kt_end();
}

void test_view_file(void)
{
	round_trip();
	refused();
	publish_rename();
}
