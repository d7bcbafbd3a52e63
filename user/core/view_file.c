// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* view_file.c - the host follower's view file (see view_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "core/ring_doc.h"
#include "core/view_file.h"

#define REC_HDR 16u /* u32 klen, u32 vlen, s64 mod_revision */

int ks_view_range(const char *cluster, char *buf, size_t len, char *err,
		  size_t errlen)
{
	int n;

	if (ks_cluster_check(cluster, err, errlen))
		return -EINVAL;
	n = snprintf(buf, len, KS_ETCD_ROOT "%s/", cluster);
	if (n < 0 || (size_t)n >= len) {
		snprintf(err, errlen, "cluster %s: name too long", cluster);
		return -ENOSPC;
	}
	return n;
}

int ks_view_file_default(const char *cluster, char *buf, size_t len)
{
	int n = snprintf(buf, len, KS_VIEW_FILE_DIR "/%s.view", cluster);

	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

/*
 * A 64-bit sum, four words at a time in four independent lanes (every
 * handle of the host checks every snapshot: a byte at a time cost 100
 * handles 40% of a core under the fleet's churn, and one serial lane was
 * still the handles' top function in perf). It must catch a torn, cut or
 * damaged file, not an adversary: a writer of the file can write any view
 * it likes anyway.
 */
#define SUM_MUL 0xff51afd7ed558ccdull

static __u64 sum_mix(__u64 h, __u64 w)
{
	h = (h ^ w) * SUM_MUL;
	return h ^ (h >> 29);
}

static __u64 sum64(const void *p, size_t n)
{
	const unsigned char *b = p;
	__u64 h[4] = { 0xcbf29ce484222325ull ^ n, 0x9e3779b97f4a7c15ull,
		       0xc4ceb9fe1a85ec53ull, 0x27d4eb2f165667c5ull };
	__u64 w[4];
	unsigned i;

	for (; n >= 32; b += 32, n -= 32) {
		memcpy(w, b, 32);
		for (i = 0; i < 4; i++)
			h[i] = sum_mix(h[i], w[i]);
	}
	for (; n >= 8; b += 8, n -= 8) {
		memcpy(w, b, 8);
		h[0] = sum_mix(h[0], w[0]);
	}
	w[0] = 0;
	memcpy(w, b, n);
	h[0] = sum_mix(h[0], w[0]);
	for (i = 1; i < 4; i++)
		h[0] = sum_mix(h[0], h[i]);
	return h[0];
}

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

size_t ks_view_file_size(const struct ks_etcd_kv *kvs, size_t n)
{
	size_t i, len = sizeof(struct ks_view_file_hdr);

	for (i = 0; i < n; i++)
		len += pad8(REC_HDR + kvs[i].key_len + kvs[i].value_len);
	return len;
}

int ks_view_file_encode(void *buf, size_t len,
			const struct ks_view_file_meta *m,
			const struct ks_etcd_kv *kvs, size_t n)
{
	struct ks_view_file_hdr *h = buf;
	size_t i, plen = strlen(m->prefix), off = sizeof(*h);
	unsigned char *b = buf;

	if (plen >= sizeof(h->prefix))
		return -EINVAL;
	if (len > KS_VIEW_FILE_MAX)
		return -E2BIG;
	memset(buf, 0, len);
	for (i = 0; i < n; i++) {
		__u32 kl = (__u32)kvs[i].key_len, vl = (__u32)kvs[i].value_len;
		__s64 rev = kvs[i].mod_revision;
		size_t rl = pad8(REC_HDR + kl + vl);

		if (kl < plen || memcmp(kvs[i].key, m->prefix, plen) ||
		    off + rl > len)
			return -EINVAL;
		memcpy(b + off, &kl, 4);
		memcpy(b + off + 4, &vl, 4);
		memcpy(b + off + 8, &rev, 8);
		memcpy(b + off + REC_HDR, kvs[i].key, kl);
		memcpy(b + off + REC_HDR + kl, kvs[i].value, vl);
		off += rl;
	}
	memcpy(h->magic, KS_VIEW_FILE_MAGIC, sizeof(h->magic));
	h->version = KS_VIEW_FILE_VERSION;
	h->hdr_len = sizeof(*h);
	h->generation = m->generation;
	h->revision = m->revision;
	h->nkv = n;
	h->body_len = off - sizeof(*h);
	h->body_sum = sum64(b + sizeof(*h), h->body_len);
	h->writer_pid = m->pid;
	memcpy(h->prefix, m->prefix, plen);
	h->hdr_sum = sum64(h, offsetof(struct ks_view_file_hdr, hdr_sum));
	h->live = m->live;
	return 0;
}

static int bad(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int bad(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return ret;
}

int ks_view_file_decode(const void *buf, size_t len, const char *prefix,
			struct ks_view_snap *s, char *err, size_t errlen)
{
	const struct ks_view_file_hdr *h = buf;
	const unsigned char *b = buf;
	size_t i, off = sizeof(*h), plen = strlen(prefix);

	memset(s, 0, sizeof(*s));
	if (len < sizeof(*h) || memcmp(h->magic, KS_VIEW_FILE_MAGIC, 8))
		return bad(err, errlen, -EBADMSG,
			   "not a keysteer view file (%zu bytes, no magic)",
			   len);
	if (h->version != KS_VIEW_FILE_VERSION || h->hdr_len != sizeof(*h))
		return bad(err, errlen, -EBADMSG,
			   "view file version %u (header %u bytes), this "
			   "library reads version %u: follower and library "
			   "differ",
			   h->version, h->hdr_len, KS_VIEW_FILE_VERSION);
	if (h->hdr_sum != sum64(h, offsetof(struct ks_view_file_hdr, hdr_sum)))
		return bad(err, errlen, -EBADMSG,
			   "view file header checksum wrong: torn or damaged");
	if (h->body_len != len - sizeof(*h))
		return bad(err, errlen, -EBADMSG,
			   "view file of %zu bytes, its header says %llu: "
			   "truncated or torn",
			   len, (unsigned long long)(h->body_len + sizeof(*h)));
	if (h->body_sum != sum64(b + sizeof(*h), h->body_len))
		return bad(err, errlen, -EBADMSG,
			   "view file body checksum wrong (generation %llu): "
			   "torn or damaged",
			   (unsigned long long)h->generation);
	if (strnlen(h->prefix, sizeof(h->prefix)) != plen ||
	    memcmp(h->prefix, prefix, plen))
		return bad(err, errlen, -ESTALE, "view file of %.*s, not of %s",
			   (int)sizeof(h->prefix), h->prefix, prefix);
	if (h->nkv > h->body_len / REC_HDR)
		return bad(err, errlen, -EBADMSG,
			   "view file says %llu documents in %llu bytes",
			   (unsigned long long)h->nkv,
			   (unsigned long long)h->body_len);
	s->kvs = calloc(h->nkv ? h->nkv : 1, sizeof(*s->kvs));
	if (!s->kvs)
		return bad(err, errlen, -ENOMEM, "view file: out of memory");
	for (i = 0; i < h->nkv; i++) {
		__u32 kl, vl;
		__s64 rev;

		if (len - off < REC_HDR)
			goto cut;
		memcpy(&kl, b + off, 4);
		memcpy(&vl, b + off + 4, 4);
		memcpy(&rev, b + off + 8, 8);
		if ((size_t)kl + vl > len - off - REC_HDR)
			goto cut;
		if (kl < plen || memcmp(b + off + REC_HDR, prefix, plen)) {
			ks_view_snap_free(s);
			return bad(err, errlen, -EBADMSG,
				   "view file document %zu is outside %s", i,
				   prefix);
		}
		s->kvs[i] = (struct ks_etcd_kv){
			.key = (char *)(b + off + REC_HDR),
			.value = (char *)(b + off + REC_HDR + kl),
			.key_len = kl,
			.value_len = vl,
			.mod_revision = rev,
		};
		off += pad8(REC_HDR + kl + vl);
	}
	if (off != len)
		goto cut;
	s->n = h->nkv;
	s->generation = h->generation;
	s->pid = h->writer_pid;
	s->revision = h->revision;
	return 0;
cut:
	ks_view_snap_free(s);
	return bad(err, errlen, -EBADMSG,
		   "view file records do not fill its %zu bytes exactly", len);
}

void ks_view_snap_free(struct ks_view_snap *s)
{
	free(s->kvs);
	memset(s, 0, sizeof(*s));
}

/* ---- the follower's side ---- */

static int mkdir_for(const char *path)
{
	char dir[4096];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int ks_view_file_publish(struct ks_view_writer *w,
			 const struct ks_view_file_meta *m,
			 const struct ks_etcd_kv *kvs, size_t n, char *err,
			 size_t errlen)
{
	size_t len = ks_view_file_size(kvs, n);
	char tmp[sizeof(w->path) + 32];
	void *map = MAP_FAILED;
	int fd, ret;

	if (len > KS_VIEW_FILE_MAX)
		return bad(err, errlen, -E2BIG,
			   "the view is %zu bytes, more than a view file's %u",
			   len, KS_VIEW_FILE_MAX);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", w->path, (int)getpid());
	if ((ret = mkdir_for(w->path)))
		return bad(err, errlen, ret, "cannot make the folder of %s: %s",
			   w->path, strerror(-ret));
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return bad(err, errlen, -errno, "cannot write %s: %s", tmp,
			   strerror(errno));
	/* the file is written through the mapping its liveness words will
	 * be stored in: no second copy of the view in the follower */
	if (ftruncate(fd, (off_t)len) ||
	    (map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			0)) == MAP_FAILED) {
		ret = -errno;
		goto fail;
	}
	close(fd);
	fd = -1;
	ret = ks_view_file_encode(map, len, m, kvs, n);
	if (ret) {
		errno = -ret;
		goto fail;
	}
	if (rename(tmp, w->path)) {
		ret = -errno;
		goto fail;
	}
	if (w->map)
		munmap(w->map, w->len);
	w->map = map;
	w->len = len;
	return 0;
fail:
	snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(-ret));
	if (map != MAP_FAILED)
		munmap(map, len);
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return ret;
}

void ks_view_file_beat(struct ks_view_writer *w,
		       const struct ks_view_file_live *l)
{
	struct ks_view_file_live *d;

	if (!w->map)
		return;
	d = ks_view_file_live(w->map);
	__atomic_store_n(&d->up, l->up, __ATOMIC_RELAXED);
	__atomic_store_n(&d->since_ms, l->since_ms, __ATOMIC_RELAXED);
	/* last: a reader that sees this beat sees the words before it */
	__atomic_store_n(&d->heartbeat_ms, l->heartbeat_ms, __ATOMIC_RELEASE);
}

void ks_view_writer_close(struct ks_view_writer *w)
{
	if (w->map)
		munmap(w->map, w->len);
	w->map = NULL;
	w->len = 0;
}

/* ---- a reader's side ---- */

int ks_view_file_map(const char *path, const char *prefix,
		     struct ks_view_map *m, struct ks_view_snap *s, char *err,
		     size_t errlen)
{
	struct stat st;
	void *map;
	int fd, ret;

	memset(m, 0, sizeof(*m));
	memset(s, 0, sizeof(*s));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return bad(err, errlen, -errno, "view_file=%s: %s", path,
			   strerror(errno));
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		return bad(err, errlen, ret, "view_file=%s: %s", path,
			   strerror(-ret));
	}
	if (!S_ISREG(st.st_mode) || st.st_size < 1 ||
	    (unsigned long long)st.st_size > KS_VIEW_FILE_MAX) {
		close(fd);
		return bad(err, errlen, -EBADMSG,
			   "view_file=%s: not a view file (%lld bytes)", path,
			   (long long)st.st_size);
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	ret = -errno;
	close(fd);
	if (map == MAP_FAILED)
		return bad(err, errlen, ret, "view_file=%s: mmap: %s", path,
			   strerror(-ret));
	m->map = map;
	m->len = (size_t)st.st_size;
	m->dev = st.st_dev;
	m->ino = st.st_ino;
	ret = ks_view_file_decode(map, m->len, prefix, s, err, errlen);
	if (ret) {
		char why[400];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "view_file=%s: refused: %s", path, why);
		ks_view_map_close(m);
	}
	return ret;
}

int ks_view_file_changed(const char *path, const struct ks_view_map *m)
{
	struct stat st;

	if (stat(path, &st))
		return 1;
	return st.st_dev != m->dev || st.st_ino != m->ino;
}

void ks_view_map_drop_body(struct ks_view_map *m)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	/* a shared file mapping: the pages stay in the page cache for the
	 * host's other handles, only this process's share of them goes */
	if (m->map && m->len > page)
		madvise((char *)m->map + page, m->len - page, MADV_DONTNEED);
}

void ks_view_map_close(struct ks_view_map *m)
{
	if (m->map)
		munmap(m->map, m->len);
	memset(m, 0, sizeof(*m));
}

void ks_view_file_live_load(const struct ks_view_map *m,
			    struct ks_view_file_live *l)
{
	struct ks_view_file_live *s = ks_view_file_live(m->map);

	l->heartbeat_ms = __atomic_load_n(&s->heartbeat_ms, __ATOMIC_ACQUIRE);
	l->up = __atomic_load_n(&s->up, __ATOMIC_RELAXED);
	l->since_ms = __atomic_load_n(&s->since_ms, __ATOMIC_RELAXED);
	l->pad = 0;
}
