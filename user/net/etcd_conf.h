/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * etcd_conf.h - what the etcd options of 'agent run', 'agent ring get' and
 * 'agent ring set' say (--etcd, --cluster, --etcd-ca/-cert/-key,
 * --etcd-user, --etcd-password-file, --etcd-optional; cli/etcd_cli.c sets
 * them), and the start-up check they share: the URLs parsed, the password
 * read, etcd asked for its status (reachable, credentials taken) before
 * anything else happens.
 */
#ifndef KS_ETCD_CONF_H
#define KS_ETCD_CONF_H

#include <stddef.h>
#include "core/ring_doc.h"

/* The password of --etcd-user when no --etcd-password-file is given. */
#define KS_ETCD_PASSWORD_ENV "KEYSTEER_ETCD_PASSWORD"

struct ks_etcd;

struct ks_etcd_conf {
	const char *endpoints; /* --etcd; NULL: no etcd */
	const char *cluster;   /* --cluster, KS_CLUSTER_DEFAULT */
	const char *ca, *cert, *key, *user, *password_file;
	int optional;   /* --etcd-optional */
	int timeout_ms; /* --etcd-timeout; 0: KS_ETCD_TIMEOUT_MS */
	char ring_key[sizeof(KS_ETCD_ROOT) + KS_CLUSTER_MAX + 8];
	char version[64]; /* etcd's, after ks_etcd_conf_connect */
};

void ks_etcd_conf_init(struct ks_etcd_conf *e);
/*
 * Checks the options without I/O: the cluster name, etcd options given
 * without --etcd; fills ring_key. 0 or -EINVAL with err.
 */
int ks_etcd_conf_check(struct ks_etcd_conf *e, char *err, size_t errlen);
/*
 * Opens the client (bad URLs, TLS files: -EINVAL), reads the password and
 * asks etcd for its status (unreachable, timed out: -EHOSTUNREACH,
 * -ETIMEDOUT; credentials refused: -EACCES). On error *c is NULL and err
 * is one line naming the endpoints and what to do.
 */
int ks_etcd_conf_connect(struct ks_etcd_conf *e, struct ks_etcd **c, char *err,
			 size_t errlen);

#endif
