// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* etcd_doc_cli.c - documents written into etcd by the CLI (etcd_doc_cli.h). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli/cmds.h"
#include "cli/etcd_doc_cli.h"
#include "core/ring_doc.h"
#include "net/etcd.h"
#include "util/log.h"

int ks_etcd_args_done(struct ks_etcd_conf *ec, const char *cmd, const char *why,
		      int argc, char **argv)
{
	char err[KS_ERRLEN_DOC], what[200];

	if (optind < argc)
		return ks_no_args(cmd, argc, argv);
	if (!ec->endpoints) {
		snprintf(what, sizeof(what),
			 "no --etcd URL[,URL...] given; %s %s", cmd, why);
		return ks_usage_error(cmd, what);
	}
	if (ks_etcd_conf_check(ec, err, sizeof(err))) {
		ks_err("%s", err);
		return KS_EXIT_USAGE;
	}
	return 0;
}

void ks_writer_id(char *by, size_t blen, char *at, size_t alen)
{
	struct passwd *pw = getpwuid(getuid());
	char host[256] = "?";
	time_t now = time(NULL);
	struct tm tm;

	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	snprintf(by, blen, "%s@%s pid %d", pw ? pw->pw_name : "?", host,
		 (int)getpid());
	gmtime_r(&now, &tm);
	strftime(at, alen, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int reread(struct ks_etcd *c, const char *key, struct ks_etcd_range *r)
{
	return ks_etcd_range(c, key, strlen(key), 0, r);
}

/* A write refused: who holds the key now (cur) instead. */
static void lost_to(const struct ks_etcd_range *cur, const char *key,
		    const char *what, const char *how, int64_t expect,
		    ks_doc_describe_fn describe)
{
	char who[600];

	describe(cur, who, sizeof(who));
	ks_err("%s not written: %s %s revision %" PRId64
	       ": %s; read it with 'agent %s get' and set again",
	       what, key, how, expect, who, what);
}

/* After a write that lost, broke mid-call or went unanswered (a member
 * without a leader may still commit it): the key read back decides. */
static int after_failed_write(struct ks_etcd *c, const char *key,
			      const char *what, const char *doc, size_t len,
			      int64_t expect, int lost,
			      ks_doc_describe_fn describe, int64_t *rev)
{
	struct ks_etcd_range cur = { 0 };
	char why[256];
	int rc = KS_EXIT_FAIL;

	snprintf(why, sizeof(why), "%s", ks_etcd_errmsg(c));
	if (reread(c, key, &cur)) {
		ks_err("the write of %s may or may not have happened (%s), and reading it again failed: %s; check with 'agent %s get'",
		       key, why, ks_etcd_errmsg(c), what);
		return rc;
	}
	if (!lost && cur.n && cur.kvs[0].value_len == len &&
	    !memcmp(cur.kvs[0].value, doc, len)) {
		*rev = cur.kvs[0].mod_revision; /* it did happen */
		rc = 0;
	} else if (!lost && (cur.n ? cur.kvs[0].mod_revision : 0) == expect) {
		/* not yet: it may still be committed */
		ks_err("the write of %s may or may not have happened (%s); it is still at revision %" PRId64
		       ": check with 'agent %s get' before setting again",
		       key, why, expect, what);
	} else {
		lost_to(&cur, key, what, "changed since", expect, describe);
	}
	ks_etcd_range_free(&cur);
	return rc;
}

int ks_etcd_doc_write(struct ks_etcd *c, const char *key, const char *what,
		      const char *doc, size_t len, int64_t expect, int pinned,
		      ks_doc_describe_fn describe, int64_t *rev)
{
	struct ks_etcd_range cur = { 0 };
	int64_t have;
	int n;

	if (reread(c, key, &cur)) {
		ks_err("cannot read %s: %s", key, ks_etcd_errmsg(c));
		return KS_EXIT_FAIL;
	}
	have = cur.n ? cur.kvs[0].mod_revision : 0;
	if (!pinned)
		expect = have;
	if (have != expect) {
		lost_to(&cur, key, what, "is no longer at", expect, describe);
		ks_etcd_range_free(&cur);
		return KS_EXIT_FAIL;
	}
	ks_etcd_range_free(&cur);
	n = ks_etcd_put_if(c, key, strlen(key), doc, len, 0, expect, rev);
	if (n == -ESTALE || n == -ECONNRESET || n == -EAGAIN || n == -ETIMEDOUT)
		return after_failed_write(c, key, what, doc, len, expect,
					  n == -ESTALE, describe, rev);
	if (n) {
		ks_err("cannot write %s: %s", key, ks_etcd_errmsg(c));
		return KS_EXIT_FAIL;
	}
	return 0;
}
