// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fleet_file.c - a handle's view from the host follower's view file
 * (view_file=PATH, or KS_VIEW_FILE_DIR/CLUSTER.view when present and
 * fresh; docs/client.md, "One view per host") instead of a watch of its
 * own. Two parts: the source (ksc_vfile_*: a file, its snapshots and the
 * follower's liveness, nothing of the handle's, so any follower of the
 * process can take it) and the handle's thread that replays each new
 * snapshot into the view. The follower dead, stopped or cut off from etcd
 * is the view down: owners only after stale_view_ms, as with etcd away.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include "client/client.h"
#include "core/view_file.h"

struct ksc_vfile {
	char path[PATH_MAX];
	char prefix[KSC_PREFIX_MAX];
	struct ks_view_map map; /* the newest file taken */
	struct ks_view_snap snap;
	int ifd;     /* inotify on the file's folder, or -1 */
	int refused; /* the path's file now is one refused */
	__u64 bad_dev, bad_ino;
	char why[KSC_ERR_MAX]; /* ... and why */
};

int ksc_vfile_open(struct ksc_vfile **out, const char *path, const char *prefix,
		   char *err, size_t errlen)
{
	struct ksc_vfile *f = calloc(1, sizeof(*f));
	char dir[PATH_MAX], *slash;
	int ret;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	snprintf(f->path, sizeof(f->path), "%s", path);
	snprintf(f->prefix, sizeof(f->prefix), "%s", prefix);
	ret = ks_view_file_map(path, prefix, &f->map, &f->snap, err, errlen);
	if (ret) {
		free(f);
		return ret;
	}
	/* the rename wakes the reader at once; without inotify the poll's
	 * interval still finds it */
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	f->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (f->ifd >= 0 &&
	    inotify_add_watch(f->ifd, slash ? dir : ".",
			      IN_MOVED_TO | IN_CREATE | IN_DELETE) < 0) {
		close(f->ifd);
		f->ifd = -1;
	}
	*out = f;
	return 0;
}

int ksc_vfile_fd(const struct ksc_vfile *f)
{
	return f->ifd;
}

const struct ks_view_snap *ksc_vfile_snap(const struct ksc_vfile *f)
{
	return &f->snap;
}

/*
 * A new file at the path taken: 1 (ksc_vfile_snap is it), 0 when none,
 * -EBADMSG etc. when the path's new file is refused (f->why; the last
 * snapshot taken stays).
 */
int ksc_vfile_poll(struct ksc_vfile *f)
{
	struct ks_view_map m;
	struct ks_view_snap s;
	char buf[4096];
	int ret;

	struct stat st;

	while (f->ifd >= 0 && read(f->ifd, buf, sizeof(buf)) > 0)
		;
	/* no file (removed by hand): the last one's heartbeat ages */
	if (stat(f->path, &st) ||
	    (st.st_dev == f->map.dev && st.st_ino == f->map.ino))
		return 0;
	/* refused once, not read again at every wake */
	if (f->refused && st.st_dev == f->bad_dev && st.st_ino == f->bad_ino)
		return -EBADMSG;
	ret = ks_view_file_map(f->path, f->prefix, &m, &s, f->why,
			       sizeof(f->why));
	if (ret) {
		f->refused = 1;
		f->bad_dev = st.st_dev;
		f->bad_ino = st.st_ino;
		return ret;
	}
	f->refused = 0;
	ks_view_snap_free(&f->snap);
	ks_view_map_close(&f->map);
	f->map = m;
	f->snap = s;
	return 1;
}

/* The follower's watch up and its heartbeat at most lag_ms old; *at_ms
 * (may be NULL) the heartbeat, when the follower last said so. */
int ksc_vfile_fresh(const struct ksc_vfile *f, __u64 now_ms, unsigned lag_ms,
		    __u64 *at_ms)
{
	struct ks_view_file_live l;

	if (f->refused)
		return 0;
	ks_view_file_live_load(&f->map, &l);
	if (at_ms)
		*at_ms = l.heartbeat_ms < now_ms ? l.heartbeat_ms : now_ms;
	return l.up && now_ms <= l.heartbeat_ms + lag_ms;
}

void ksc_vfile_release(struct ksc_vfile *f)
{
	ks_view_snap_free(&f->snap);
	ks_view_map_drop_body(&f->map);
}

const char *ksc_vfile_why(const struct ksc_vfile *f)
{
	return f->why;
}

void ksc_vfile_close(struct ksc_vfile *f)
{
	if (!f)
		return;
	ks_view_snap_free(&f->snap);
	ks_view_map_close(&f->map);
	if (f->ifd >= 0)
		close(f->ifd);
	free(f);
}

/* ---- the handle's side ---- */

static void *file_main(void *arg)
{
	struct keysteer *ks = arg;
	struct ksc_vfile *f = ks->vfile;
	__s64 since = ks->vfile_rev;
	__u64 pid = ks->vfile_pid, now, at, purged = 0;
	__u64 changes = ks->view.ring_changes;
	char said[KSC_ERR_MAX] = "";
	struct pollfd p[2];
	int rc;

	for (;;) {
		p[0] = (struct pollfd){ .fd = f->ifd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = ks->stop_fd, .events = POLLIN };
		/* the interval bounds how late a dead follower is noticed
		 * (beside view_file_lag_ms), and finds a file inotify
		 * missed */
		if (poll(p, 2, 100) > 0 && p[1].revents)
			break;
		rc = ksc_vfile_poll(f);
		now = ksc_now_ms();
		if (rc == 1) {
			const struct ks_view_snap *s = ksc_vfile_snap(f);

			/* another follower's, or an older revision (etcd
			 * restored): read whole; else only what is newer */
			if (s->pid != pid || s->revision < since)
				since = 0;
			pthread_mutex_lock(&ks->lock);
			ksc_view_replay(&ks->view, s->kvs, s->n, since,
					s->revision, now);
			pthread_mutex_unlock(&ks->lock);
			since = s->revision;
			pid = s->pid;
			ksc_vfile_release(f);
		} else if (rc < 0 && strcmp(said, ksc_vfile_why(f))) {
			/* a library has no log: stderr once per reason */
			snprintf(said, sizeof(said), "%s", ksc_vfile_why(f));
			fprintf(stderr,
				"libkeysteer: %s; the view stays as it "
				"was, and goes stale\n",
				said);
			pthread_mutex_lock(&ks->lock);
			ks->view.refused++;
			pthread_mutex_unlock(&ks->lock);
		}
		if (rc >= 0)
			said[0] = '\0';
		if (__atomic_load_n(&ks->view.ring_changes, __ATOMIC_RELAXED) !=
			    changes &&
		    ks->ring_union == KSC_UNION_ON) {
			changes = ks->view.ring_changes;
			ksc_ring_catchup(ks);
		}
		/* up as of the follower's last beat: owners only
		 * stale_view_ms after it, as after etcd's last answer */
		rc = ksc_vfile_fresh(f, now, ks->vfile_lag_ms, &at);
		ksc_fleet_mark_up(ks, rc, rc ? at : now);
		if (now - purged > 1000) {
			pthread_mutex_lock(&ks->lock);
			ksc_view_purge(&ks->view, now, KSC_GONE_KEEP_MS);
			pthread_mutex_unlock(&ks->lock);
			purged = now;
		}
	}
	return NULL;
}

int ksc_file_open(struct keysteer *ks, const char *path, int must)
{
	const struct ks_view_snap *s;
	char err[KSC_ERR_MAX];
	int ret;

	ret = ksc_vfile_open(&ks->vfile, path, ks->view.prefix, err,
			     sizeof(err));
	if (ret)
		return must ? ksc_err(ks, ret, "%s", err) : ret;
	/* a default file left by a follower gone: etcd is followed instead */
	if (!must &&
	    !ksc_vfile_fresh(ks->vfile, ksc_now_ms(), ks->vfile_lag_ms, NULL)) {
		ksc_file_close(ks);
		return -ESTALE;
	}
	s = ksc_vfile_snap(ks->vfile);
	pthread_mutex_lock(&ks->lock);
	ret = ksc_view_load(&ks->view, s->kvs, s->n, s->revision, ksc_now_ms());
	pthread_mutex_unlock(&ks->lock);
	ks->vfile_rev = s->revision;
	ks->vfile_pid = s->pid;
	ksc_vfile_release(ks->vfile);
	if (ret)
		return ksc_err(ks, ret, "view_file=%s: %s", path, ks->view.why);
	ret = ksc_fleet_thread_start(ks, file_main);
	/* a follower already down at open: owners only after stale_view_ms
	 * from now, as a handle whose etcd went away at open */
	if (!ret)
		ksc_fleet_mark_up(ks,
				  ksc_vfile_fresh(ks->vfile, ksc_now_ms(),
						  ks->vfile_lag_ms, NULL),
				  ksc_now_ms());
	return ret;
}

void ksc_file_close(struct keysteer *ks)
{
	ksc_vfile_close(ks->vfile);
	ks->vfile = NULL;
}
