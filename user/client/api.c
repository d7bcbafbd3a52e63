// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * api.c - libkeysteer's public calls (libkeysteer.h, docs/client.md): the
 * handle's options, reads to a copy or the owner, writes to the owner and
 * then the invalidation of every replica that may hold a copy.
 */
#include <errno.h>
#include <limits.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "client/client.h"
#include "client/route.h"
#include "core/hot_doc.h"
#include "core/limits.h"
#include "core/mc_key.h"
#include "core/ring_doc.h"
#include "core/view_file.h"
#include "net/etcd.h"
#include "util/clock.h"
#include "util/test_switches.h"

#define KSC_API __attribute__((visibility("default")))

__u64 ksc_now_ms(void)
{
	return ks_mono_ns() / 1000000;
}

int ksc_err(struct keysteer *ks, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ks->err, sizeof(ks->err), fmt, ap);
	va_end(ap);
	return err;
}

/* ---- options ---- */

struct spec {
	char *etcd, *cluster, *servers, *dist, *replicas, *routing;
	char *view_file; /* the host follower's file, or "none" */
	int view_none;   /* view_file=none: etcd, even with a default file */
	/* etcd's user and TLS files (net/etcd.h); the password only ever
	 * from a file, read by keysteer_open */
	char *etcd_user, *etcd_pw_file, *etcd_ca, *etcd_cert, *etcd_key;
	char pw_sum[20]; /* the password's hash, in the follower's key */
	long l1_keys, l1_ttl_ms, l1_bytes; /* 0: not given */
	const char *l1_drop;
	struct ks_test_switches ts; /* the test-only words taken */
};

/* The words that exist only so a test's control run can break a
 * guarantee (docs/operations.md): gated here, parsed where they belong. */
static const char *const test_words[] = { "fold",        "batch_invalidate",
					  "l1_drop",     "invalidate",
					  "ring_union",  "view_delay_ms",
					  "stale_read",  "view_skip",
					  "batch_limit", "limit_clients" };

/* 0 for any word a spec may give, else the gate's answer. */
static int test_word(struct keysteer *ks, struct spec *sp, const char *w,
		     const char *val)
{
	char word[KSC_ERR_MAX / 2], err[KSC_ERR_MAX];
	size_t i;

	for (i = 0; i < sizeof(test_words) / sizeof(test_words[0]); i++) {
		if (strcmp(w, test_words[i]))
			continue;
		snprintf(word, sizeof(word), "%s=%s", w, val);
		if (ks_test_switch(&sp->ts, word, err, sizeof(err)))
			return ksc_err(ks, -EINVAL, "%s", err);
		break;
	}
	return 0;
}

static int num_opt(struct keysteer *ks, const char *name, const char *val,
		   long lo, long hi, long *out)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(val, &end, 10);
	if (errno || !*val || *end || n < lo || n > hi)
		return ksc_err(ks, -EINVAL, "%s=%s: want a number %ld..%ld",
			       name, val, lo, hi);
	*out = n;
	return 0;
}

static int parse_word(struct keysteer *ks, struct spec *sp, char *w)
{
	char *eq = strchr(w, '=');
	const char *val;
	long n;
	int ret = 0;

	if (!eq)
		return ksc_err(ks, -EINVAL, "'%s' is not NAME=VALUE", w);
	*eq = '\0';
	val = eq + 1;
	if ((ret = test_word(ks, sp, w, val)))
		return ret;
	if (!strcmp(w, "etcd"))
		sp->etcd = eq + 1;
	else if (!strcmp(w, "cluster"))
		sp->cluster = eq + 1;
	else if (!strcmp(w, "etcd_user"))
		sp->etcd_user = eq + 1;
	else if (!strcmp(w, "etcd_password_file"))
		sp->etcd_pw_file = eq + 1;
	else if (!strcmp(w, "etcd_password"))
		/* the value is not echoed: it is the secret */
		return ksc_err(ks, -EINVAL,
			       "etcd_password= is not taken: a spec string "
			       "ends up in logs; put the password on the "
			       "first line of a file and give "
			       "etcd_password_file=PATH");
	else if (!strcmp(w, "etcd_ca"))
		sp->etcd_ca = eq + 1;
	else if (!strcmp(w, "etcd_cert"))
		sp->etcd_cert = eq + 1;
	else if (!strcmp(w, "etcd_key"))
		sp->etcd_key = eq + 1;
	else if (!strcmp(w, "servers"))
		sp->servers = eq + 1;
	else if (!strcmp(w, "distribution"))
		sp->dist = eq + 1;
	else if (!strcmp(w, "replicas"))
		sp->replicas = eq + 1;
	else if (!strcmp(w, "timeout_ms")) {
		if (!(ret = num_opt(ks, w, val, 1, 60000, &n)))
			ks->timeout_ms = (int)n;
	} else if (!strcmp(w, "etcd_timeout_ms")) {
		if (!(ret = num_opt(ks, w, val, 1, 60000, &n)))
			ks->etcd_timeout_ms = (int)n;
	} else if (!strcmp(w, "stale_view_ms")) {
		if (!(ret = num_opt(ks, w, val, 0, 3600000, &n)))
			ks->stale_view_ms = (unsigned)n;
	} else if (!strcmp(w, "limit_share")) {
		if (!(ret = num_opt(ks, w, val, 1, 1000000, &n)))
			ks->limit_share = (unsigned)n;
	} else if (!strcmp(w, "inval_ttl_s")) {
		if (!(ret = num_opt(ks, w, val, 1, 3600, &n)))
			ks->inval_ttl_s = (int)n;
	} else if (!strcmp(w, "view_file")) {
		sp->view_file = eq + 1;
	} else if (!strcmp(w, "view_file_lag_ms")) {
		if (!(ret = num_opt(ks, w, val, 1, 3600000, &n)))
			ks->vfile_lag_ms = (unsigned)n;
	} else if (!strcmp(w, "routing")) {
		sp->routing = eq + 1;
	} else if (!strcmp(w, "routing_poll_ms")) {
		if (!(ret = num_opt(ks, w, val, 10, 60000, &n)))
			ks->rt_poll_ms = (unsigned)n;
	} else if (!strcmp(w, "l1_keys")) {
		ret = num_opt(ks, w, val, 1, KSC_L1_KEYS, &sp->l1_keys);
	} else if (!strcmp(w, "l1_ttl_ms")) {
		ret = num_opt(ks, w, val, 1, 3600000, &sp->l1_ttl_ms);
	} else if (!strcmp(w, "l1_bytes")) {
		ret = num_opt(ks, w, val, 1024, 1L << 40, &sp->l1_bytes);
	} else if (!strcmp(w, "l1_drop")) {
		if (strcmp(val, "events") && strcmp(val, "ttl"))
			return ksc_err(ks, -EINVAL,
				       "l1_drop=%s: want events or ttl", val);
		sp->l1_drop = val;
	} else if (!strcmp(w, "invalidate")) {
		if (strcmp(val, "all") && strcmp(val, "hot"))
			return ksc_err(ks, -EINVAL,
				       "invalidate=%s: want all or hot", val);
		ks->inval_all = !strcmp(val, "all");
	} else if (!strcmp(w, "ring_grace_ms")) {
		if (!(ret = num_opt(ks, w, val, 1, 3600000, &n)))
			ks->ring_grace_ms = (unsigned)n;
	} else if (!strcmp(w, "ring_union")) {
		if (!strcmp(val, "on"))
			ks->ring_union = KSC_UNION_ON;
		else if (!strcmp(val, "noinval"))
			ks->ring_union = KSC_UNION_NOINVAL;
		else if (!strcmp(val, "off"))
			ks->ring_union = KSC_UNION_OFF;
		else if (!strcmp(val, "nocatchup"))
			ks->ring_union = KSC_UNION_NOCATCHUP;
		else
			return ksc_err(ks, -EINVAL,
				       "ring_union=%s: want on, noinval, "
				       "nocatchup or off",
				       val);
	} else if (!strcmp(w, "view_delay_ms")) {
		if (!(ret = num_opt(ks, w, val, 1, 600000, &n)))
			ks->view_delay_ms = (unsigned)n;
	} else if (!strcmp(w, "view_skip")) {
		if (strcmp(val, "hot"))
			return ksc_err(ks, -EINVAL, "view_skip=%s: want hot",
				       val);
		ks->view_skip_hot = 1;
	} else if (!strcmp(w, "view")) {
		if (strcmp(val, "shared") && strcmp(val, "own"))
			return ksc_err(ks, -EINVAL,
				       "view=%s: want shared or own", val);
		ks->own_view = !strcmp(val, "own");
	} else if (!strcmp(w, "stale_read")) {
		if (strcmp(val, "miss") && strcmp(val, "fresh"))
			return ksc_err(ks, -EINVAL,
				       "stale_read=%s: want miss or fresh",
				       val);
		ks->stale_as_fresh = !strcmp(val, "fresh");
	} else if (!strcmp(w, "batch_invalidate")) {
		ret = ksc_batch_option(ks, val);
	} else if (!strcmp(w, "batch_limit")) {
		if (strcmp(val, "on") && strcmp(val, "off"))
			return ksc_err(ks, -EINVAL,
				       "batch_limit=%s: want on or off", val);
		ks->batch_skip_limit = !strcmp(val, "off");
	} else if (!strcmp(w, "limit_clients")) {
		if (strcmp(val, "on") && strcmp(val, "off"))
			return ksc_err(ks, -EINVAL,
				       "limit_clients=%s: want on or off", val);
		ks->limit_clients_off = !strcmp(val, "off");
	} else if ((ret = ksc_counter_option(ks, w, val)) == 1) {
		return ksc_err(ks, -EINVAL, "unknown option '%s'", w);
	}
	return ret;
}

/* The L1 of l1_keys= (opt-in: docs/client.md says why). */
static int l1_spec(struct keysteer *ks, const struct spec *sp)
{
	if (!sp->l1_keys) {
		if (sp->l1_ttl_ms || sp->l1_bytes || sp->l1_drop)
			return ksc_err(ks, -EINVAL,
				       "l1_ttl_ms=, l1_bytes= and l1_drop= go "
				       "with l1_keys=N (the L1 is off)");
		return 0;
	}
	if (!sp->etcd && !sp->view_file)
		return ksc_err(ks, -EINVAL,
			       "l1_keys= needs etcd=URL: its entries are "
			       "dropped on etcd's dirty events (routing "
			       "documents carry none)");
	ks->l1_follow = !sp->l1_drop || !strcmp(sp->l1_drop, "events");
	if (ksc_l1_init(&ks->l1, (unsigned)sp->l1_keys,
			sp->l1_bytes ? (size_t)sp->l1_bytes : KSC_L1_BYTES,
			sp->l1_ttl_ms ? (unsigned)sp->l1_ttl_ms
				      : KSC_L1_TTL_MS))
		return ksc_err(ks, -ENOMEM, "l1_keys=%ld: out of memory",
			       sp->l1_keys);
	ks->l1_on = 1;
	return 0;
}

/* The etcd words beside etcd=: each needs it, a user needs a password
 * file and a file a user (refused here, before any I/O). */
static int etcd_auth_spec(struct keysteer *ks, const struct spec *sp)
{
	const char *lone = sp->etcd_user      ? "etcd_user="
			   : sp->etcd_pw_file ? "etcd_password_file="
			   : sp->etcd_ca      ? "etcd_ca="
			   : sp->etcd_cert    ? "etcd_cert="
			   : sp->etcd_key     ? "etcd_key="
					      : NULL;

	if (lone && !sp->etcd)
		return ksc_err(ks, -EINVAL, "%s goes with etcd=URL,...", lone);
	if (sp->etcd_user && !sp->etcd_pw_file)
		return ksc_err(ks, -EINVAL,
			       "etcd_user=%s needs etcd_password_file=PATH "
			       "(a password is never given in a spec)",
			       sp->etcd_user);
	if (sp->etcd_pw_file && !sp->etcd_user)
		return ksc_err(ks, -EINVAL,
			       "etcd_password_file= needs etcd_user=NAME");
	return 0;
}

/*
 * What makes two handles' followers read the same: the fleet (endpoints,
 * cluster), who reads it (user, a hash of the password, TLS files), the
 * opening thread's network namespace (the follower's thread starts in
 * its opener's, where the endpoints resolve and route), the etcd client's
 * timeout, and the test-only words that change what the follower applies. Options a handle applies itself to what it reads
 * (stale_view_ms, ring_grace_ms, ring_union, the L1's) are not in it:
 * handles differing in them share one view.
 */
static char *share_key(const struct keysteer *ks, const struct spec *sp)
{
	struct stat ns = { 0 };
	char *key = NULL;

	/* no /proc: every handle in one namespace, as a process mostly is */
	stat("/proc/thread-self/ns/net", &ns);
	if (asprintf(&key,
		     "etcd=%s\ncluster=%s\nuser=%s\npw=%s\nca=%s\ncert=%s\n"
		     "key=%s\nnetns=%llu:%llu\ntimeout=%d\ndelay=%u\nskip=%d\n"
		     "lshare=%u\nlclients=%d",
		     sp->etcd, sp->cluster ? sp->cluster : KS_CLUSTER_DEFAULT,
		     sp->etcd_user ? sp->etcd_user : "", sp->pw_sum,
		     sp->etcd_ca ? sp->etcd_ca : "",
		     sp->etcd_cert ? sp->etcd_cert : "",
		     sp->etcd_key ? sp->etcd_key : "",
		     (unsigned long long)ns.st_dev,
		     (unsigned long long)ns.st_ino, ks->etcd_timeout_ms,
		     ks->view_delay_ms, ks->view_skip_hot, ks->limit_share,
		     ks->limit_clients_off) < 0)
		return NULL;
	return key;
}

/* FNV-1a of the password: two handles with different passwords for one
 * user do not share, and the key keeps no copy of the secret. */
static void pw_sum(const char *pw, char out[20])
{
	__u64 h = 0xcbf29ce484222325ULL;

	for (; *pw; pw++)
		h = (h ^ (unsigned char)*pw) * 0x100000001b3ULL;
	snprintf(out, 20, "%016llx", (unsigned long long)h);
}

/* The fleet's client with the spec's user and TLS files; the password is
 * read here, at open, and wiped once the client holds its copy. The
 * handle joins the process's follower of the same key, or makes it. */
static int fleet_share_open(struct keysteer *ks, struct spec *sp,
			    const struct ks_etcd_opts *o)
{
	char *key = ks->own_view ? NULL : share_key(ks, sp);
	int fresh, ret;

	if (!ks->own_view && !key)
		return ksc_err(ks, -ENOMEM, "out of memory");
	ret = ksc_share_get(ks, key,
			    sp->cluster ? sp->cluster : KS_CLUSTER_DEFAULT,
			    &fresh);
	free(key);
	if (ret)
		return ret;
	ret = ksc_fleet_open(ks, o, fresh);
	if (fresh)
		ksc_share_ready(ks, !ret);
	return ret;
}

static int fleet_spec_open(struct keysteer *ks, struct spec *sp)
{
	struct ks_etcd_opts o = { .endpoints = sp->etcd,
				  .ca_file = sp->etcd_ca,
				  .cert_file = sp->etcd_cert,
				  .key_file = sp->etcd_key,
				  .user = sp->etcd_user };
	char pw[512], err[KSC_ERR_MAX];
	int ret;

	if (sp->etcd_user) {
		ret = ks_etcd_read_password(
			"etcd_password_file=", sp->etcd_pw_file, pw, sizeof(pw),
			err, sizeof(err));
		if (ret)
			return ksc_err(ks, ret, "%s", err);
		o.password = pw;
		pw_sum(pw, sp->pw_sum);
	}
	ret = fleet_share_open(ks, sp, &o);
	if (sp->etcd_user)
		explicit_bzero(pw, sizeof(pw));
	return ret;
}

/* view_file= with what it goes with; "none" taken as not given. */
static int view_file_spec(struct keysteer *ks, struct spec *sp)
{
	if (sp->view_file && !strcmp(sp->view_file, "none")) {
		if (!sp->etcd)
			return ksc_err(ks, -EINVAL,
				       "view_file=none goes with etcd=URL");
		sp->view_file = NULL;
		sp->view_none = 1;
		return 0;
	}
	if (sp->view_file && (sp->servers || sp->routing))
		return ksc_err(ks, -EINVAL,
			       "view_file= is the fleet's view: it goes with "
			       "cluster=, not with servers= or routing=");
	if (sp->view_file && ks->view_delay_ms)
		return ksc_err(ks, -EINVAL,
			       "view_delay_ms= goes with a view followed from "
			       "etcd, not view_file=");
	if (ks->vfile_lag_ms && !sp->view_file && !sp->etcd)
		return ksc_err(ks, -EINVAL,
			       "view_file_lag_ms= goes with view_file=PATH");
	return 0;
}

/*
 * The view from the host follower's file (docs/client.md, "One view per
 * host"): view_file=PATH, or the default path when the spec says etcd=
 * and a follower keeps that file fresh; else from etcd, as a handle of
 * its own.
 */
static int file_share_open(struct keysteer *ks, const struct spec *sp,
			   const char *path, int must)
{
	char *key = NULL;
	int fresh, ret;

	/* handles on one file with one lag bound share its follower (the
	 * bound says when the view is down, so it is the follower's) */
	if (!ks->own_view &&
	    asprintf(&key, "view_file=%s\nlag=%u\nlshare=%u\nlclients=%d", path,
		     ks->vfile_lag_ms, ks->limit_share,
		     ks->limit_clients_off) < 0)
		return ksc_err(ks, -ENOMEM, "out of memory");
	ret = ksc_share_get(ks, key,
			    sp->cluster ? sp->cluster : KS_CLUSTER_DEFAULT,
			    &fresh);
	free(key);
	if (ret)
		return ret;
	ret = ksc_file_open(ks, path, must, fresh);
	if (fresh)
		ksc_share_ready(ks, !ret);
	/* the default file passed over: off its follower, for etcd's */
	if (ret && !must) {
		ksc_share_put(ks);
		ks->err[0] = '\0';
	}
	return ret;
}

static int fleet_or_file_open(struct keysteer *ks, struct spec *sp)
{
	char path[PATH_MAX];

	if (!ks->vfile_lag_ms)
		ks->vfile_lag_ms = KSC_VFILE_LAG_MS;
	if (sp->view_file)
		return file_share_open(ks, sp, sp->view_file, 1);
	if (!sp->view_none && !ks->view_skip_hot && !ks->view_delay_ms &&
	    !ks_view_file_default(sp->cluster ? sp->cluster
					      : KS_CLUSTER_DEFAULT,
				  path, sizeof(path)) &&
	    !file_share_open(ks, sp, path, 0))
		return 0;
	return fleet_spec_open(ks, sp);
}

static int open_spec(struct keysteer *ks, char *buf)
{
	struct spec sp = { 0 };
	char *save = NULL, *w, warn[KSC_ERR_MAX];
	int ret, fresh;

	for (w = strtok_r(buf, " \t\n", &save); w;
	     w = strtok_r(NULL, " \t\n", &save))
		if ((ret = parse_word(ks, &sp, w)))
			return ret;
	/* a library has no log of its own: stderr, as the agent's */
	if (ks_test_switches_warning(&sp.ts, warn, sizeof(warn)))
		fprintf(stderr, "libkeysteer: warning: %s\n", warn);
	if ((ret = view_file_spec(ks, &sp)))
		return ret;
	if (!!(sp.etcd || sp.view_file) + !!sp.servers != 1)
		return ksc_err(ks, -EINVAL,
			       "give one of etcd=URL,... (or view_file=PATH) "
			       "and servers=H:P,...");
	if (sp.etcd && (sp.dist || sp.replicas))
		return ksc_err(ks, -EINVAL,
			       "distribution= and replicas= go with servers=; "
			       "with etcd= the fleet says them");
	if (sp.routing && !sp.servers)
		return ksc_err(ks, -EINVAL,
			       "routing= gives the hot keys, not the ring: "
			       "give the shards as servers=H:P,... too");
	if (ks->rt_poll_ms && !sp.routing)
		return ksc_err(ks, -EINVAL,
			       "routing_poll_ms= goes with "
			       "routing=URL");
	if ((ret = etcd_auth_spec(ks, &sp)) || (ret = l1_spec(ks, &sp)))
		return ret;
	if (ks->own_view && !sp.etcd && !sp.view_file)
		return ksc_err(ks, -EINVAL,
			       "view=own goes with etcd=URL or view_file= (a "
			       "servers= handle's view is its own)");
	if (ks->view_skip_hot && (!sp.etcd || sp.view_file))
		return ksc_err(ks, -EINVAL,
			       "view_skip= goes with etcd=URL (a view "
			       "followed from etcd, not view_file=)");
	if (sp.etcd || sp.view_file)
		return fleet_or_file_open(ks, &sp);
	/* a static ring and routing documents: a view of the handle's own
	 * (docs/client.md says why they are not shared) */
	if ((ret = ksc_share_get(ks, NULL,
				 sp.cluster ? sp.cluster : KS_CLUSTER_DEFAULT,
				 &fresh)))
		return ret;
	ret = ksc_view_static(&ks->fo->view, sp.servers, sp.dist, sp.replicas);
	if (ret)
		return ksc_err(ks, ret, "%s", ks->fo->view.why);
	if (sp.routing) {
		if (!ks->rt_poll_ms)
			ks->rt_poll_ms = KSC_ROUTING_POLL_MS;
		return ksc_routing_open(ks, sp.routing);
	}
	return 0;
}

KSC_API int keysteer_open(struct keysteer **out, const char *spec)
{
	struct keysteer *ks = calloc(1, sizeof(*ks));
	char *buf;
	int ret;

	*out = ks;
	if (!ks)
		return -ENOMEM;
	ks->timeout_ms = KSC_TIMEOUT_MS;
	ks->limit_share = 0; /* the fleet's count of views (limit_reg.c) */
	ks->etcd_timeout_ms = 2000;
	ks->stale_view_ms = KSC_STALE_VIEW_MS;
	ks->inval_ttl_s = KSC_INVAL_TTL_S;
	ks->inval_all = 1;
	ks->since_ms = ksc_now_ms();
	pthread_mutex_init(&ks->wlog_lock, NULL);
	buf = strdup(spec ? spec : "");
	if (!buf)
		return ksc_err(ks, -ENOMEM, "out of memory");
	ret = open_spec(ks, buf);
	free(buf);
	return ret;
}

KSC_API void keysteer_close(struct keysteer *ks)
{
	if (!ks)
		return;
	/* the last handle out stops the follower's thread (a routing
	 * handle's poll, too, before its URLs go) */
	ksc_share_put(ks);
	ksc_routing_close(ks);
	ksc_conns_close(ks);
	ksc_wlog_free(&ks->wlog);
	ksc_l1_free(&ks->l1);
	pthread_mutex_destroy(&ks->wlog_lock);
	free(ks);
}

KSC_API const char *keysteer_errmsg(const struct keysteer *ks)
{
	return ks ? ks->err : "out of memory";
}

KSC_API void keysteer_free(void *value)
{
	free(value);
}

int ksc_check_key(struct keysteer *ks, const void *key, size_t klen)
{
	if (!key || ks_mc_key_check(key, klen))
		return ksc_err(ks, -EINVAL,
			       "a key is 1..%d bytes without spaces or "
			       "control bytes",
			       KS_MC_KEY_MAX);
	return 0;
}

/* ---- rate limits (limit.h) ---- */

int ksc_limit_check(struct keysteer *ks, const void *key, size_t klen)
{
	static struct ks_hot_rules rules_none;
	/* a hot/ entry's automatic cap as a rule (one per call: the
	 * caller's stack, not shared) */
	struct ks_hot_rule capr;
	struct ksc_follower *f = ks->fo;
	const struct ks_hot_rule *r = NULL;
	enum ksc_limit_verdict d;
	struct ks_hot_rules *rules;
	struct ksc_view *v;
	__u64 hash = 0, ver;
	char rule[KS_MAX_KEY_LEN + 2];
	__u32 rate, cap;
	unsigned share, n;
	int self_in = 0, share_set, made, counted = 0;
	__u64 made0;

	v = ksc_rdlock(ks);
	/* a view without limit rules or caps pays this one test */
	if (!v->lim && !v->ncaps) {
		ver = v->lim_version;
		ksc_unlock(ks);
		if (__atomic_load_n(&f->lim_version, __ATOMIC_RELAXED) != ver) {
			pthread_mutex_lock(&f->llock);
			ksc_limits_prune(&f->limits, &rules_none);
			f->lim_version = ver;
			pthread_mutex_unlock(&f->llock);
		}
		return 0;
	}
	rules = v->lim ? v->lim : &rules_none;
	ver = v->lim_version;
	/* the rule first, under the read lock alone: a key no rule names
	 * never waits for the table's lock; a rule wins over a cap */
	r = ks_limit_rule_match(rules, key, klen);
	if (!r && v->ncaps) {
		hash = ksc_key_hash(key, klen);
		cap = ksc_view_auto_cap(v, key, klen, hash);
		if (cap) {
			capr.type = KS_RULE_LIMIT_AUTO;
			capr.len = (__u16)klen;
			capr.count = cap;
			memcpy(capr.key, key, klen);
			r = &capr;
		}
	}
	if (!r) {
		ksc_unlock(ks);
		return 0;
	}
	if (!hash)
		hash = ksc_key_hash(key, klen);
	/* the share: limit_share=N, else the views registered for the key
	 * (limit_reg.c); only a view that follows etcd registers, so the
	 * others (servers=, routing=, view_file=) count 1 for themselves */
	share = f->limits.share;
	share_set = share != 0;
	if (!share && !f->reg_off && f->etcd) {
		/* two statements: self_in is an output of the count */
		n = ksc_view_limit_clients(v, hash, f->reg_id, &self_in);
		share = ksc_limit_share(0, n, self_in);
		counted = 1;
	}
	/* the table's lock inside the view's read lock: the rules stay put
	 * while the bucket is taken; no path takes them the other way */
	pthread_mutex_lock(&f->llock);
	if (f->lim_version != ver) { /* new rules: unnamed keys' buckets go */
		ksc_limits_prune(&f->limits, rules);
		f->lim_version = ver;
	}
	made0 = f->limits.made;
	/* counted but not yet seen registered: a new bucket starts empty */
	d = ksc_limit_take_cold(&f->limits, r, key, klen, hash, ks_mono_ns(),
				share ? share : 1,
				!share_set && counted && !self_in);
	made = f->limits.made != made0;
	pthread_mutex_unlock(&f->llock);
	/* a key this view never called: its registration at once, so the
	 * other views' shares shrink within a put and a watch event, not a
	 * tick of the thread (an eventfd write fails only at overflow,
	 * when a wake is pending anyway) */
	if (made && !share_set && !f->reg_off && f->etcd && f->wake_fd >= 0) {
		__u64 one = 1;
		ssize_t w = write(f->wake_fd, &one, sizeof(one));

		(void)w;
	}
	rate = r->count;
	snprintf(rule, sizeof(rule), "%.*s%s", (int)r->len,
		 (const char *)r->key,
		 r->type == KS_RULE_LIMIT_PREFIX ? "*" : "");
	ksc_unlock(ks);
	if (d != KSC_LIM_REFUSED) {
		ks->st.limit_allowed++;
		return 0;
	}
	ks->st.limit_refused++;
	if (r == &capr)
		return ksc_err(ks, -KEYSTEER_ELIMIT,
			       "'%.*s' is over its automatic cap of %u/s "
			       "(its hot/ entry, the owner's --limit-auto): "
			       "not sent",
			       (int)klen, (const char *)key, rate);
	return ksc_err(ks, -KEYSTEER_ELIMIT,
		       "'%.*s' is over its rate limit (limit %s %u/s in the "
		       "fleet's pins): not sent",
		       (int)klen, (const char *)key, rule, rate);
}

KSC_API const char *keysteer_strerror(int err)
{
	if (err == -KEYSTEER_ELIMIT || err == KEYSTEER_ELIMIT)
		return "over the key's rate limit";
	return strerror(err < 0 ? -err : err);
}

KSC_API int keysteer_limit_stat(struct keysteer *ks, const void *key,
				size_t klen, struct keysteer_limit_stat *st,
				size_t size)
{
	const struct ksc_limit_bucket *b;
	struct keysteer_limit_stat s = { 0 };

	if (!ks || !ks->fo || !st || !key || ks_mc_key_check(key, klen))
		return -EINVAL;
	pthread_mutex_lock(&ks->fo->llock);
	b = ksc_limit_find(&ks->fo->limits, key, klen, ksc_key_hash(key, klen));
	if (b) {
		s.rate = b->rate;
		s.burst = (uint32_t)(b->tau_ns / b->interval_ns + 1);
		s.allowed = b->allowed;
		s.refused = b->refused;
		s.prefix_rule = b->rule_len != 0;
		s.share = b->share;
	}
	pthread_mutex_unlock(&ks->fo->llock);
	memcpy(st, &s, size < sizeof(s) ? size : sizeof(s));
	return b != NULL;
}

/* ---- reads ---- */

/*
 * Whether the L1 may be used now: the watch is up and has not dropped
 * since the L1 was last checked (else it is flushed: events may have been
 * missed). l1_drop=ttl (the control) skips the view's version.
 */
static int l1_usable(struct keysteer *ks)
{
	unsigned epoch;

	if (!ks->l1_on)
		return 0;
	epoch = __atomic_load_n(&ks->fo->l1_epoch, __ATOMIC_ACQUIRE);
	if (epoch != ks->l1_seen_epoch) {
		ksc_l1_flush(&ks->l1);
		ks->l1_seen_epoch = epoch;
	}
	return __atomic_load_n(&ks->fo->view_up, __ATOMIC_ACQUIRE);
}

/* 1 and the value when the L1 has key at the view's version now. */
static int l1_read(struct keysteer *ks, const void *key, size_t klen,
		   __u64 hash, __s64 stamp, __u64 now, void **value,
		   size_t *len, uint32_t *flags)
{
	const struct ksc_l1_entry *e;

	e = ksc_l1_get(&ks->l1, key, klen, hash,
		       ks->l1_follow ? stamp : KSC_L1_ANY, now);
	if (!e || !(*value = malloc(e->len + 1)))
		return 0;
	memcpy(*value, e->value, e->len + 1);
	if (len)
		*len = e->len;
	if (flags)
		*flags = e->flags;
	return 1;
}

static int fetch(struct keysteer *ks, unsigned id, const void *key, size_t klen,
		 struct ks_mc_item *it)
{
	struct ksc_conn *c = ksc_conn_get(ks, id);
	char name[KSC_ADDR_MAX];
	int ret;

	memset(it, 0, sizeof(*it));
	if (!c)
		return -EHOSTUNREACH;
	ret = ks_mc_fetch(&c->mc, key, klen, it);
	if (ret) {
		ksc_server_name(ks, id, name, sizeof(name));
		ksc_err(ks, ret, "get from %s: %s", name, strerror(-ret));
	}
	return ret;
}

/* ---- ring changes (docs/client.md, "Ring changes") ---- */

static unsigned ring_grace(const struct keysteer *ks)
{
	return ks->ring_grace_ms ? ks->ring_grace_ms
				 : 3 * (ks->stale_view_ms + 1000);
}

static void move_locked(struct keysteer *ks, const struct ksc_view *v,
			const void *key, size_t klen, __u64 now,
			struct ksc_move *m)
{
	ksc_route_move(v, key, klen, now, ring_grace(ks), m);
	if (ks->ring_union == KSC_UNION_OFF) {
		m->old = KSC_NONE;
		m->read_old = m->inval_old = 0;
	} else if (ks->ring_union == KSC_UNION_NOINVAL) {
		m->inval_old = 0;
	}
}

void ksc_move_now(struct keysteer *ks, const void *key, size_t klen,
		  struct ksc_move *m)
{
	__u64 now = ksc_now_ms();

	const struct ksc_view *v = ksc_rdlock(ks);

	move_locked(ks, v, key, klen, now, m);
	ksc_unlock(ks);
}

void ksc_ring_log(struct keysteer *ks, const void *key, size_t klen,
		  const struct ksc_move *m)
{
	unsigned now_owner = KSC_NONE;
	const struct ksc_view *v;
	struct ksc_conn *c;

	if (!ks->follows || ks->rt_n || ks->ring_union != KSC_UNION_ON)
		return;
	v = ksc_rdlock(ks);
	/* the follower collects the log under these locks after it applied
	 * a ring (the view's lock keeps the ring as it is meanwhile): logged
	 * before that, the write is its to catch up; after, this call's */
	pthread_mutex_lock(&ks->wlog_lock);
	if (v->ring_rev == m->rev)
		ksc_wlog_add(&ks->wlog, key, klen, m->rev, ksc_now_ms());
	else
		now_owner = ksc_view_owner(v, key, klen);
	pthread_mutex_unlock(&ks->wlog_lock);
	ksc_unlock(ks);
	if (now_owner == KSC_NONE || now_owner == m->owner)
		return;
	c = ksc_conn_get(ks, now_owner);
	if (c && !ks_mc_delete(&c->mc, key, klen))
		__atomic_add_fetch(&ks->catchups, 1, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&ks->catchup_missed, 1, __ATOMIC_RELAXED);
}

int ksc_inval_old(struct keysteer *ks, const struct ksc_move *m,
		  const void *key, size_t klen, __u64 hash)
{
	struct ksc_conn *c = ksc_conn_get(ks, m->old);
	char name[KSC_ADDR_MAX];
	int ret = c ? ks_mc_delete(&c->mc, key, klen) : -EHOSTUNREACH;

	/* a refused connection: no memcached there serves it, and one that
	 * starts again starts empty */
	if (!ret || ret == -ECONNREFUSED) {
		ks->st.ring_invals++;
		ret = 0;
	} else {
		ks->st.ring_inval_errors++;
		ksc_server_name(ks, m->old, name, sizeof(name));
		ret = ksc_err(ks, -EIO,
			      "the key's old owner %s not invalidated (%s): "
			      "readers still on the old ring may read the old "
			      "value there",
			      name, strerror(-ret));
	}
	/* copies its agent made from it are old values too */
	if (ksc_invalidate(ks, m->old, key, klen, hash))
		ret = -EIO;
	return ret;
}

/*
 * A moved key's read inside its grace: its old owner first. 1 with *it
 * when the old owner has it (then added to the new owner, if absent
 * there: the warm-up), 0 to read the new owner.
 */
static int read_old(struct keysteer *ks, const struct ksc_move *m,
		    const void *key, size_t klen, struct ks_mc_item *it)
{
	struct ksc_conn *c, *o;
	__u64 cas = 0, now = ksc_now_ms();
	long ttl;
	int ret;

	/* an old owner that failed is skipped for a second, as a replica
	 * is: a removed shard that died would otherwise cost every moved
	 * key's read a timeout for the whole grace (docs/client.md says what
	 * that second costs) */
	if (m->old < ks->nconn && ks->conn[m->old].skip_until_ms > now)
		return 0;
	ret = fetch(ks, m->old, key, klen, it);
	if (ret && ret != -ECONNREFUSED && m->old < ks->nconn)
		ks->conn[m->old].skip_until_ms = now + KSC_REPLICA_BACKOFF_MS;
	/* an old owner that fails or is gone holds nothing to read */
	if (ret || !it->found || it->stale) {
		ks_mc_item_free(it);
		return 0;
	}
	ks->st.ring_old_reads++;
	ttl = it->ttl < 0 ? 0 : it->ttl ? it->ttl : 1;
	c = ksc_conn_get(ks, m->owner);
	/* add, never set: a value written meanwhile is newer (-EAGAIN) */
	if (!c || ks_mc_store_if(&c->mc, key, klen, it, ttl, 0))
		return 1;
	ks->st.ring_warmups++;
	/* a write that deleted the old copy after it was read may have
	 * reached the new owner before this add: the add is taken back
	 * (docs/client.md, the warm-up's race) */
	o = ksc_conn_get(ks, m->old);
	if (!o || ks_mc_cas(&o->mc, key, klen, &cas) || cas != it->cas) {
		ks_mc_delete(&c->mc, key, klen);
		ks->st.ring_warm_undone++;
	}
	return 1;
}

KSC_API int keysteer_get(struct keysteer *ks, const void *key, size_t klen,
			 void **value, size_t *len, uint32_t *flags)
{
	struct ksc_read_plan p;
	struct ks_mc_item it;
	struct ksc_view *v;
	struct ksc_move mv;
	struct ksc_conn *c;
	__u64 hash, now;
	int ret, l1 = 0;

	*value = NULL;
	if (len)
		*len = 0;
	if ((ret = ksc_check_key(ks, key, klen)))
		goto fail;
	if (ks->lim_taken)
		ks->lim_taken = 0;
	else if ((ret = ksc_limit_check(ks, key, klen)))
		goto fail;
	ks->st.gets++;
	hash = ksc_key_hash(key, klen);
	now = ksc_now_ms();
	v = ksc_rdlock(ks);
	ksc_route_read(v, key, klen, hash, ksc_fleet_owners_only(ks, now), &p);
	move_locked(ks, v, key, klen, now, &mv);
	ksc_unlock(ks);
	if (p.owner == KSC_NONE) {
		ret = ksc_err(ks, -ENOENT, "no ring yet: the fleet has none");
		goto fail;
	}
	if (mv.read_old) {
		/* neither copies nor the L1: both hold the new owner's value,
		 * which a writer still on the old ring did not reach */
		p.copy = KSC_NONE;
		p.stamp = 0;
		if (read_old(ks, &mv, key, klen, &it) == 1)
			goto found;
	}
	/* only armed keys, and only while the view follows the fleet; the
	 * control (l1_drop=ttl) looks whatever the view says */
	l1 = !mv.read_old && (p.stamp || !ks->l1_follow) && l1_usable(ks);
	if (l1 &&
	    l1_read(ks, key, klen, hash, p.stamp, now, value, len, flags)) {
		ks->st.hits++;
		ks->err[0] = '\0';
		return 1;
	}
	if (p.copy != KSC_NONE) {
		c = p.copy < ks->nconn ? &ks->conn[p.copy] : NULL;
		if (c && c->skip_until_ms > now) {
			ks->st.fallbacks++;
		} else {
			ret = fetch(ks, p.copy, key, klen, &it);
			if (!ret && ks_mc_copy_usable(&it)) {
				ks->st.copy_reads++;
				goto found;
			}
			/* stale, a tombstone, a miss or an error: the owner */
			if (ret && p.copy < ks->nconn)
				ks->conn[p.copy].skip_until_ms =
					now + KSC_REPLICA_BACKOFF_MS;
			ks_mc_item_free(&it);
			ks->st.fallbacks++;
		}
	}
	ret = fetch(ks, p.owner, key, klen, &it);
	if (ret)
		goto fail;
	ks->st.owner_reads++;
	if (it.found && !ks_mc_owner_value(&it) && !ks->stale_as_fresh) {
		/* a write's stale mark: never a fresh hit; the refill's W
		 * that memcached gave this plain read goes back, else
		 * keysteer_fetch's callers would wait out the mark */
		ks->st.stale_misses++;
		if (it.win)
			ksc_owner_hand_back(ks, p.owner, key, klen, it.cas);
		ks_mc_item_free(&it);
	}
	if (!it.found) {
		ks_mc_item_free(&it);
		ks->err[0] = '\0';
		return 0;
	}
found:
	/* stamped with the version routed under, before the fetch: an event
	 * applied meanwhile makes the next lookup drop it */
	if (l1 && p.stamp &&
	    ksc_l1_put(&ks->l1, key, klen, hash, p.stamp, it.value, it.len,
		       it.flags, it.ttl, now) < 0)
		ks->st.errors++;
	ks->st.hits++;
	*value = it.value; /* the item's malloc'd, NUL-terminated bytes */
	if (len)
		*len = it.len;
	if (flags)
		*flags = it.flags;
	ks->err[0] = '\0';
	return 1;
fail:
	ks->st.errors++;
	return ret;
}

/* ---- writes ---- */

/*
 * Every replica that may hold a copy of key, invalidated (docs/client.md):
 * 0, or -EIO naming the first that could not be. A replica that refuses
 * the connection runs no memcached, so serves no copy (and one that
 * starts again starts empty): that counts as done.
 */
int ksc_invalidate(struct keysteer *ks, unsigned owner, const void *key,
		   size_t klen, __u64 hash)
{
	__u16 ids[KSC_INVAL_MAX];
	char name[KSC_ADDR_MAX];
	unsigned n, i, bad = 0;
	struct ksc_conn *c;
	int ret;

	n = ksc_route_inval(ksc_rdlock(ks), owner, hash, ks->inval_all, ids,
			    KSC_INVAL_MAX);
	ksc_unlock(ks);
	for (i = 0; i < n; i++) {
		c = ksc_conn_get(ks, ids[i]);
		ret = c ? ks_mc_invalidate(&c->mc, key, klen, ks->inval_ttl_s)
			: -EHOSTUNREACH;
		if (!ret || ret == -ECONNREFUSED) {
			ks->st.invalidations++;
			continue;
		}
		ks->st.inval_errors++;
		if (!bad++) {
			ksc_server_name(ks, ids[i], name, sizeof(name));
			ksc_err(ks, -EIO,
				"written to the owner, but replica %s not "
				"invalidated (%s): readers reaching it may "
				"read the old value until its copy expires",
				name, strerror(-ret));
		}
	}
	return bad ? -EIO : 0;
}

void ksc_owner_hand_back(struct keysteer *ks, unsigned owner, const void *key,
			 size_t klen, __u64 cas)
{
	struct ksc_conn *c = ksc_conn_get(ks, owner);

	/* a failure leaves the token out until the mark expires: the
	 * refill then waits for max_stale_s, never serves older */
	if (c && !ks_mc_hand_back(&c->mc, key, klen, cas))
		ks->st.hand_backs++;
}

/* What a write does at the owner: WR_SET, WR_DELETE, or WR_STALE (mark
 * the value stale for at most max_stale s instead of removing it). */
enum {
	WR_SET,
	WR_DELETE,
	WR_STALE
};

static int owner_write(struct ksc_conn *c, const void *key, size_t klen,
		       const struct ks_mc_item *it, uint32_t exptime, int how,
		       long max_stale)
{
	if (how == WR_SET)
		return ks_mc_store(&c->mc, key, klen, it, (long)exptime);
	if (how == WR_STALE)
		return ks_mc_mark_stale(&c->mc, key, klen, max_stale);
	return ks_mc_delete(&c->mc, key, klen);
}

static int write_op(struct keysteer *ks, const void *key, size_t klen,
		    const void *value, size_t len, uint32_t flags,
		    uint32_t exptime, int how, long max_stale)
{
	int del = how != WR_SET;
	static const char *const verb[] = { "set", "delete", "stale mark" };

	struct ks_mc_item it = { 0 };
	char name[KSC_ADDR_MAX];
	struct ksc_move mv;
	struct ksc_conn *c;
	unsigned owner;
	__u64 hash;
	int ret, inv, inv_old = 0;

	if ((ret = ksc_check_key(ks, key, klen)))
		goto fail;
	if (!del && exptime > KS_MC_TTL_MAX) {
		ret = ksc_err(ks, -EINVAL, "exptime %u: at most %ld s", exptime,
			      KS_MC_TTL_MAX);
		goto fail;
	}
	hash = ksc_key_hash(key, klen);
	if (!del && (ret = ksc_counter_refuse_set(ks, key, klen, hash)))
		goto fail;
	if ((ret = ksc_limit_check(ks, key, klen)))
		goto fail;
	/* before the write: this handle never reads its old value again */
	if (ks->l1_on)
		ksc_l1_drop(&ks->l1, key, klen, hash);
	ksc_move_now(ks, key, klen, &mv);
	owner = mv.owner;
	if (owner == KSC_NONE) {
		ret = ksc_err(ks, -ENOENT, "no ring yet: the fleet has none");
		goto fail;
	}
	c = ksc_conn_get(ks, owner);
	if (!c) {
		ret = -EHOSTUNREACH;
		goto fail;
	}
	it.value = (char *)value;
	it.len = len;
	it.flags = flags;
	ret = owner_write(c, key, klen, &it, exptime, how, max_stale);
	if (ret && ret != -ETIMEDOUT && ret != -ECONNRESET) {
		/* refused, never happened: nothing to invalidate */
		ksc_server_name(ks, owner, name, sizeof(name));
		ret = ksc_err(ks, ret, "%s on %s: %s", verb[how], name,
			      strerror(-ret));
		goto fail;
	}
	/* a write that may have happened is invalidated as one that did */
	inv = ksc_invalidate(ks, owner, key, klen, hash);
	/* then the key's old owner, after the new one took the write (in
	 * this order a reader that finds the old copy gone finds this write
	 * at the new owner); a delete is made at the new owner once more
	 * after that, over any warm-up that read the old copy before and
	 * added it since (docs/client.md, "Ring changes") */
	if (mv.inval_old) {
		inv_old = ksc_inval_old(ks, &mv, key, klen, hash);
		if (del && owner_write(c, key, klen, &it, 0, how, max_stale) &&
		    !inv_old)
			inv_old = ksc_err(ks, -EIO,
					  "deleted, but not again at the new "
					  "owner after the old one");
	}
	if (ret) {
		ksc_server_name(ks, owner, name, sizeof(name));
		ret = ksc_err(ks, ret, "%s on %s: %s", verb[how], name,
			      strerror(-ret));
		goto fail;
	}
	if (how == WR_STALE)
		ks->st.stale_marks++;
	else if (del)
		ks->st.deletes++;
	else
		ks->st.sets++;
	ksc_ring_log(ks, key, klen, &mv);
	if ((ret = inv ? inv : inv_old))
		goto fail;
	ks->err[0] = '\0';
	return 0;
fail:
	ks->st.errors++;
	return ret;
}

KSC_API int keysteer_set(struct keysteer *ks, const void *key, size_t klen,
			 const void *value, size_t len, uint32_t flags,
			 uint32_t exptime)
{
	if (!value && len)
		return ksc_err(ks, -EINVAL, "a value of %zu bytes at NULL",
			       len);
	return write_op(ks, key, klen, value ? value : "", len, flags, exptime,
			WR_SET, 0);
}

KSC_API int keysteer_delete(struct keysteer *ks, const void *key, size_t klen)
{
	return write_op(ks, key, klen, NULL, 0, 0, 0, WR_DELETE, 0);
}

KSC_API int keysteer_delete_stale(struct keysteer *ks, const void *key,
				  size_t klen, uint32_t max_stale_s)
{
	if (max_stale_s < 1 || max_stale_s > KS_MC_TTL_MAX) {
		ks->st.errors++;
		return ksc_err(ks, -EINVAL, "max_stale_s %u: want 1..%ld",
			       max_stale_s, KS_MC_TTL_MAX);
	}
	return write_op(ks, key, klen, NULL, 0, 0, 0, WR_STALE,
			(long)max_stale_s);
}

KSC_API int keysteer_stats(struct keysteer *ks, struct keysteer_stats *st,
			   size_t size)
{
	const struct ksc_view *v;
	struct keysteer_stats s;
	__u64 now = ksc_now_ms();
	size_t i;

	if (!ks || !st || !ks->fo) /* a failed open's handle */
		return -EINVAL;
	s = ks->st;
	v = ksc_rdlock(ks);
	s.view_revision = v->revision;
	s.ring_revision = v->ring_rev;
	s.hot_keys = v->hlive;
	s.armed_keys = 0;
	for (i = 0; i < v->hcap; i++)
		s.armed_keys += v->hot[i].hash && v->hot[i].live &&
				v->hot[i].state == KS_HDS_ARMED;
	s.view_updates = v->updates;
	s.view_refused = v->refused;
	s.ring_changes = v->ring_changes;
	s.ring_catchups = __atomic_load_n(&ks->catchups, __ATOMIC_RELAXED);
	s.ring_catchup_missed = __atomic_load_n(&ks->catchup_missed,
						__ATOMIC_RELAXED);
	s.ring_grace_ms = 0;
	if (v->have_prev && ks->ring_union != KSC_UNION_OFF &&
	    now - v->ring_since_ms < ring_grace(ks))
		s.ring_grace_ms = ring_grace(ks) - (now - v->ring_since_ms);
	s.limit_rules = 0;
	for (i = 0; v->lim && i < v->lim->n; i++)
		s.limit_rules += ks_hot_rule_is_limit(v->lim->r[i].type) != 0;
	ksc_unlock(ks);
	pthread_mutex_lock(&ks->fo->llock);
	s.limit_keys = ks->fo->limits.used;
	s.limit_no_room = ks->fo->limits.no_room;
	s.limit_reg_puts = __atomic_load_n(&ks->fo->reg_puts, __ATOMIC_RELAXED);
	s.limit_reg_dels = __atomic_load_n(&ks->fo->reg_dels, __ATOMIC_RELAXED);
	s.limit_reg_errors = __atomic_load_n(&ks->fo->reg_errors,
					     __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ks->fo->llock);
	s.view_handles = ksc_share_handles(ks->fo);
	s.view_skipped = __atomic_load_n(&ks->fo->skipped, __ATOMIC_RELAXED);
	s.view_up = ks->follows ? __atomic_load_n(&ks->fo->view_up,
						  __ATOMIC_ACQUIRE)
				: 1;
	s.owners_only = ksc_fleet_owners_only(ks, now);
	s.l1_hits = ks->l1.c.hits;
	s.l1_misses = ks->l1.c.misses;
	s.l1_drops = ks->l1.c.drops;
	s.l1_write_drops = ks->l1.c.write_drops;
	s.l1_flushes = ks->l1.c.flushes;
	s.l1_evictions = ks->l1.c.evictions;
	s.l1_expired = ks->l1.c.expired;
	s.l1_keys = ks->l1.n;
	s.l1_bytes = ks->l1.bytes;
	s.view_age_ms = ks->follows && !s.view_up
				? now - __atomic_load_n(&ks->fo->last_up_ms,
							__ATOMIC_ACQUIRE)
				: 0;
	memcpy(st, &s, size < sizeof(s) ? size : sizeof(s));
	return 0;
}
