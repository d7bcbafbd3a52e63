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

/* ---- the follower's side ---- */

/* The newest file into the view: only what is newer than the snapshot the
 * view has, or all of it from another follower or an older revision (etcd
 * restored). 1: a new one taken, 0: none, < 0: refused (f->vfile's why). */
static int take_newest(struct ksc_follower *f, __u64 now)
{
	const struct ks_view_snap *s;
	int rc = ksc_vfile_poll(f->vfile);
	__s64 since = f->vfile_rev;

	if (rc != 1)
		return rc;
	s = ksc_vfile_snap(f->vfile);
	if (s->pid != f->vfile_pid || s->revision < since)
		since = 0;
	pthread_rwlock_wrlock(&f->lock);
	ksc_view_replay(&f->view, s->kvs, s->n, since, s->revision, now);
	pthread_rwlock_unlock(&f->lock);
	f->vfile_rev = s->revision;
	f->vfile_pid = s->pid;
	ksc_vfile_release(f->vfile);
	return 1;
}

static void *file_main(void *arg)
{
	struct ksc_follower *f = arg;
	__u64 now, at, purged = 0, ticket;
	__u64 changes = f->view.ring_changes;
	char said[KSC_ERR_MAX] = "";
	struct pollfd p[3];
	int rc;

	for (;;) {
		p[0] = (struct pollfd){ .fd = f->vfile->ifd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = f->stop_fd, .events = POLLIN };
		p[2] = (struct pollfd){ .fd = f->wake_fd, .events = POLLIN };
		/* the interval bounds how late a dead follower is noticed
		 * (beside view_file_lag_ms), and finds a file inotify
		 * missed */
		if (poll(p, 3, 100) > 0 && p[1].revents)
			break;
		/* an open that asked before this look gets the file as of
		 * after its ask: no older than the follower's newest */
		ticket = ksc_fleet_read_wanted(f);
		now = ksc_now_ms();
		rc = take_newest(f, now);
		if (rc < 0 && strcmp(said, ksc_vfile_why(f->vfile))) {
			/* a library has no log: stderr once per reason */
			snprintf(said, sizeof(said), "%s",
				 ksc_vfile_why(f->vfile));
			fprintf(stderr,
				"libkeysteer: %s; the view stays as it "
				"was, and goes stale\n",
				said);
			pthread_rwlock_wrlock(&f->lock);
			f->view.refused++;
			pthread_rwlock_unlock(&f->lock);
		}
		if (rc >= 0)
			said[0] = '\0';
		if (ticket != f->read_done)
			ksc_fleet_read_answer(f, ticket, 0, "");
		if (__atomic_load_n(&f->view.ring_changes, __ATOMIC_RELAXED) !=
		    changes) {
			changes = f->view.ring_changes;
			ksc_fleet_catchup_all(f);
		}
		/* up as of the follower's last beat: owners only
		 * stale_view_ms after it, as after etcd's last answer */
		rc = ksc_vfile_fresh(f->vfile, now, f->vfile_lag_ms, &at);
		ksc_fleet_mark_up(f, rc, rc ? at : now);
		if (now - purged > 1000) {
			pthread_rwlock_wrlock(&f->lock);
			ksc_view_purge(&f->view, now, KSC_GONE_KEEP_MS);
			pthread_rwlock_unlock(&f->lock);
			purged = now;
		}
	}
	ksc_fleet_read_answer(f, ksc_fleet_read_wanted(f), -ESHUTDOWN,
			      "the view's follower stopped");
	return NULL;
}

int ksc_file_open(struct keysteer *ks, const char *path, int must, int fresh)
{
	struct ksc_follower *f = ks->fo;
	const struct ks_view_snap *s;
	char err[KSC_ERR_MAX];
	__u64 now;
	int ret;

	ks->follows = 1;
	if (!fresh) {
		/* the process follows the file already: its thread takes
		 * the newest for this open; a default file whose follower
		 * is down is passed over for etcd, as at a first open */
		ret = ksc_fleet_join(ks);
		if (!ret && !must &&
		    !__atomic_load_n(&f->view_up, __ATOMIC_ACQUIRE))
			return -ESTALE;
		return ret;
	}
	f->vfile_lag_ms = ks->vfile_lag_ms;
	ret = ksc_vfile_open(&f->vfile, path, f->view.prefix, err, sizeof(err));
	if (ret)
		return must ? ksc_err(ks, ret, "%s", err) : ret;
	now = ksc_now_ms();
	/* a default file left by a follower gone: etcd is followed instead */
	if (!must && !ksc_vfile_fresh(f->vfile, now, f->vfile_lag_ms, NULL))
		return -ESTALE;
	s = ksc_vfile_snap(f->vfile);
	pthread_rwlock_wrlock(&f->lock);
	ret = ksc_view_load(&f->view, s->kvs, s->n, s->revision, now);
	pthread_rwlock_unlock(&f->lock);
	f->vfile_rev = s->revision;
	f->vfile_pid = s->pid;
	ksc_vfile_release(f->vfile);
	if (ret)
		return ksc_err(ks, ret, "view_file=%s: %s", path, f->view.why);
	ret = ksc_fleet_thread_start(ks, file_main, f);
	/* a follower already down at open: owners only after stale_view_ms
	 * from now, as a handle whose etcd went away at open */
	if (!ret)
		ksc_fleet_mark_up(f,
				  ksc_vfile_fresh(f->vfile, ksc_now_ms(),
						  f->vfile_lag_ms, NULL),
				  ksc_now_ms());
	return ret;
}
