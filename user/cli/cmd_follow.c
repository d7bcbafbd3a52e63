// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_follow.c - 'agent follow': the host follower (docs/client.md, "One
 * view per host"). One watch of the range clients watch (ks_view_range,
 * the library's own), kept as a mirror (core/etcd_mirror.h) and published
 * after every batch of events as a new view file (core/view_file.h) that
 * every libkeysteer handle of the host maps instead of watching etcd
 * itself. Between snapshots the loop beats the newest file's heartbeat at
 * least every FOLLOW_BEAT_MS and says whether its watch is up: a follower
 * that dies, stops or loses etcd is a view gone stale to the handles.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli_options.h"
#include "cli/cmds.h"
#include "cli/etcd_cli.h"
#include "cli/etcd_doc_cli.h"
#include "core/etcd_mirror.h"
#include "core/view_file.h"
#include "net/etcd.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/sig.h"
#include "util/test_switches.h"

#define FOLLOW_BEAT_MS 100
/* at most one file per this many ms: a burst of events (the fleet's churn)
 * is one file, not one per watch message, each a whole rewrite */
#define FOLLOW_GAP_MS   5
#define FOLLOW_DROP_MAX 4

struct follow {
	struct ks_etcd_conf ec;
	char prefix[KS_VIEW_PREFIX_MAX];
	size_t plen;
	struct ks_view_writer w;
	struct ks_etcd_mirror m;
	struct ks_view_file_live live;
	__u64 generation;
	/* --view-drop (test-only): documents under these left out */
	char drop_buf[256];
	const char *drop[FOLLOW_DROP_MAX];
	unsigned ndrop;
	struct ks_test_switches ts;
};

static __u64 now_ms(void)
{
	return ks_mono_ns() / 1000000;
}

static int parse_drop(struct follow *f, const char *arg, char *err,
		      size_t errlen)
{
	char word[300], *save = NULL, *t;

	snprintf(word, sizeof(word), "--view-drop %s", arg);
	if (ks_test_switch(&f->ts, word, err, errlen))
		return -1;
	snprintf(f->drop_buf, sizeof(f->drop_buf), "%s", arg);
	for (t = strtok_r(f->drop_buf, ",", &save);
	     t && f->ndrop < FOLLOW_DROP_MAX; t = strtok_r(NULL, ",", &save))
		f->drop[f->ndrop++] = t;
	return 0;
}

static int parse(int argc, char **argv, struct follow *f)
{
	struct ks_cli_getopt g;
	char err[KS_ERRLEN_DOC];
	int ch, n;

	ks_etcd_conf_init(&f->ec);
	ks_cli_getopt_init(&g, KS_CMD_FOLLOW);
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, g.shorts, g.lo, NULL)) != -1) {
		switch (ch) {
		case 'h':
			ks_help_follow(stdout);
			return -1;
		case 'v':
			ks_log_set_level(KS_LOG_DEBUG);
			continue;
		case KS_OPTV_VIEW_FILE:
			snprintf(f->w.path, sizeof(f->w.path), "%s", optarg);
			continue;
		case KS_OPTV_VIEW_DROP:
			if (parse_drop(f, optarg, err, sizeof(err))) {
				ks_err("%s", err);
				return KS_EXIT_USAGE;
			}
			continue;
		}
		n = ks_etcd_cli_opt(&f->ec, ch, optarg, err, sizeof(err));
		if (n < 0) {
			ks_err("%s", err);
			return KS_EXIT_USAGE;
		}
		if (!n)
			return ks_bad_option("follow", ch, argv);
	}
	n = ks_etcd_args_done(
		&f->ec, "follow",
		"follows the fleet's view for this host's clients", argc, argv);
	if (n)
		return n;
	n = ks_view_range(f->ec.cluster, f->prefix, sizeof(f->prefix), err,
			  sizeof(err));
	if (n < 0) {
		ks_err("%s", err);
		return KS_EXIT_USAGE;
	}
	f->plen = (size_t)n;
	if (!f->w.path[0])
		ks_view_file_default(f->ec.cluster, f->w.path,
				     sizeof(f->w.path));
	return 0;
}

static int dropped(const struct follow *f, const struct ks_etcd_kv *kv)
{
	unsigned i;

	for (i = 0; i < f->ndrop; i++) {
		size_t l = strlen(f->drop[i]);

		if (kv->key_len >= f->plen + l &&
		    !memcmp(kv->key + f->plen, f->drop[i], l))
			return 1;
	}
	return 0;
}

/* The mirror as a new file: 0, or -1 after a message. */
static int publish(struct follow *f)
{
	struct ks_view_file_meta meta = { .prefix = f->prefix,
					  .generation = ++f->generation,
					  .pid = (__u64)getpid(),
					  .revision = f->m.revision,
					  .live = f->live };
	const struct ks_etcd_kv *kvs = f->m.kvs;
	struct ks_etcd_kv *keep = NULL;
	char err[512];
	size_t i, n = f->m.n;
	int ret;

	if (f->ndrop) {
		keep = calloc(n ? n : 1, sizeof(*keep));
		if (!keep) {
			ks_err("out of memory");
			return -1;
		}
		for (i = n = 0; i < f->m.n; i++)
			if (!dropped(f, &f->m.kvs[i]))
				keep[n++] = f->m.kvs[i];
		kvs = keep;
	}
	ret = ks_view_file_publish(&f->w, &meta, kvs, n, err, sizeof(err));
	free(keep);
	if (ret) {
		ks_err("%s; the handles keep the last view until it goes stale",
		       err);
		return -1;
	}
	ks_debug("view file %s: generation %" PRIu64 ", revision %" PRId64
		 ", %zu documents",
		 f->w.path, (uint64_t)f->generation, f->m.revision, n);
	return 0;
}

static void set_up(struct follow *f, int up, __u64 now)
{
	if ((__u64)up != f->live.up) {
		f->live.since_ms = now;
		if (up)
			ks_info("watch of %s up again", f->prefix);
		else
			ks_warn("watch of %s down: the view stays as it was; "
				"handles go to owners only after their "
				"stale_view_ms",
				f->prefix);
	}
	f->live.up = (__u64)up;
	f->live.heartbeat_ms = now;
	ks_view_file_beat(&f->w, &f->live);
}

/* The whole range again into the mirror, published: 0, or -1. */
static int read_all(struct follow *f, struct ks_etcd *c)
{
	struct ks_etcd_range r;

	if (ks_etcd_range(c, f->prefix, f->plen, KS_ETCD_PREFIX, &r)) {
		ks_warn("cannot read %s: %s", f->prefix, ks_etcd_errmsg(c));
		return -1;
	}
	ks_etcd_mirror_free(&f->m);
	ks_etcd_mirror_load(&f->m, &r);
	f->live.up = 1;
	f->live.since_ms = f->live.heartbeat_ms = now_ms();
	return publish(f);
}

static int follow_loop(struct follow *f, struct ks_etcd *c)
{
	struct ks_etcd_watch *w = NULL;
	struct ks_etcd_event ev;
	struct pollfd p;
	int rc, t, fresh = 1, changed = 0;
	__u64 now, last_pub = 0;

	while (!ks_stop) {
		if (!w &&
		    ks_etcd_watch_start(c, f->prefix, f->plen, KS_ETCD_PREFIX,
					f->m.revision + 1, &w)) {
			w = NULL;
			set_up(f, 0, now_ms());
			poll(NULL, 0, 500);
			continue;
		}
		p = (struct pollfd){ .fd = ks_etcd_watch_fd(w),
				     .events = POLLIN };
		t = ks_etcd_watch_timeout_ms(w);
		if (t < 0 || t > FOLLOW_BEAT_MS)
			t = FOLLOW_BEAT_MS;
		if (changed && t > FOLLOW_GAP_MS)
			t = FOLLOW_GAP_MS;
		poll(&p, 1, t);
		rc = ks_etcd_watch_run(w);
		while (rc > 0 && ks_etcd_watch_next(w, &ev) == 1) {
			if (ks_etcd_mirror_apply(&f->m, &ev))
				ks_err("out of memory: an event of %s lost",
				       f->prefix);
			ks_etcd_event_free(&ev);
			changed = 1;
		}
		now = now_ms();
		if (ks_etcd_watch_created(w))
			fresh = 0;
		else if (rc < 0)
			fresh = 0; /* the read's view stands only until then */
		if (changed && now - last_pub >= FOLLOW_GAP_MS) {
			publish(f);
			last_pub = now;
			changed = 0;
		}
		set_up(f, fresh || ks_etcd_watch_created(w), now);
		if (rc == -ERANGE || rc == -EACCES || rc == -EPERM) {
			ks_warn("watch of %s ended (%s): reading it again",
				f->prefix, ks_etcd_watch_errmsg(w));
			ks_etcd_watch_stop(w);
			w = NULL;
			set_up(f, 0, now);
			changed = 0;
			if (read_all(f, c))
				poll(NULL, 0, 1000);
			else
				fresh = 1;
		}
	}
	ks_etcd_watch_stop(w);
	/* stopped on purpose: said at once, not left to the heartbeat */
	set_up(f, 0, now_ms());
	return KS_EXIT_OK;
}

int cmd_follow(int argc, char **argv)
{
	struct follow *f = calloc(1, sizeof(*f));
	struct ks_etcd *c = NULL;
	char err[KS_ERRLEN_DOC], warn[400];
	int rc;

	if (!f) {
		ks_err("out of memory");
		return KS_EXIT_FAIL;
	}
	rc = parse(argc, argv, f);
	if (rc) {
		free(f);
		return rc < 0 ? KS_EXIT_OK : rc;
	}
	if (ks_test_switches_warning(&f->ts, warn, sizeof(warn)))
		ks_warn("%s", warn);
	ks_install_stop_handlers();
	if (ks_etcd_conf_connect(&f->ec, &c, err, sizeof(err))) {
		ks_err("%s", err);
		free(f);
		return KS_EXIT_USAGE;
	}
	rc = KS_EXIT_FAIL;
	if (!read_all(f, c)) {
		ks_info("following %s from revision %" PRId64 " into %s",
			f->prefix, f->m.revision, f->w.path);
		rc = follow_loop(f, c);
	}
	/* the file stays: its heartbeat stops, and handles see it stale */
	ks_view_writer_close(&f->w);
	ks_etcd_mirror_free(&f->m);
	ks_etcd_close(c);
	free(f);
	return rc;
}
