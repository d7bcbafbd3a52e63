// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* etcd_conf.c - the etcd options' checks and the start-up check (etcd_conf.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "net/etcd_conf.h"
#include "net/etcd.h"

void ks_etcd_conf_init(struct ks_etcd_conf *e)
{
	memset(e, 0, sizeof(*e));
	e->cluster = KS_CLUSTER_DEFAULT;
}

int ks_etcd_conf_check(struct ks_etcd_conf *e, char *err, size_t errlen)
{
	const char *lone = e->ca              ? "--etcd-ca"
			   : e->cert          ? "--etcd-cert"
			   : e->key           ? "--etcd-key"
			   : e->user          ? "--etcd-user"
			   : e->password_file ? "--etcd-password-file"
			   : e->optional      ? "--etcd-optional"
			   : e->timeout_ms    ? "--etcd-timeout"
					      : NULL;

	if (!e->endpoints) {
		if (lone) {
			snprintf(
				err, errlen,
				"%s needs --etcd URL[,URL...]; give the etcd endpoints too",
				lone);
			return -EINVAL;
		}
		return 0;
	}
	if (ks_cluster_check(e->cluster, err, errlen))
		return -EINVAL;
	if (e->password_file && !e->user) {
		snprintf(
			err, errlen,
			"--etcd-password-file needs --etcd-user; give the user too");
		return -EINVAL;
	}
	ks_ring_doc_key(e->cluster, e->ring_key, sizeof(e->ring_key));
	return 0;
}

int ks_etcd_conf_connect(struct ks_etcd_conf *e, struct ks_etcd **c, char *err,
			 size_t errlen)
{
	struct ks_etcd_opts o = {
		.endpoints = e->endpoints,
		.ca_file = e->ca,
		.cert_file = e->cert,
		.key_file = e->key,
		.user = e->user,
		.timeout_ms = e->timeout_ms,
	};
	char pw[512] = "", sub[KS_ERRLEN_DOC];
	const char *env = getenv(KS_ETCD_PASSWORD_ENV);
	int rc;

	*c = NULL;
	if (e->user) {
		if (e->password_file) {
			rc = ks_etcd_read_password("--etcd-password-file ",
						   e->password_file, pw,
						   sizeof(pw), err, errlen);
			if (rc)
				return rc;
		} else if (env && *env) {
			snprintf(pw, sizeof(pw), "%s", env);
		} else {
			snprintf(
				err, errlen,
				"--etcd-user %s needs a password: set " KS_ETCD_PASSWORD_ENV
				" or give --etcd-password-file FILE (never on the command line)",
				e->user);
			return -EINVAL;
		}
		o.password = pw;
	}
	rc = ks_etcd_open(c, &o, sub, sizeof(sub));
	explicit_bzero(pw, sizeof(pw));
	if (rc) {
		snprintf(err, errlen, "--etcd: %s", sub);
		return rc == -ENOMEM ? rc : -EINVAL;
	}
	rc = ks_etcd_status(*c, e->version, sizeof(e->version));
	if (rc) {
		snprintf(
			err, errlen, "etcd at %s: %s%s", e->endpoints,
			ks_etcd_errmsg(*c),
			rc == -EACCES
				? "; check --etcd-user and its password, or the certificates"
				: "; check --etcd and that etcd runs");
		ks_etcd_close(*c);
		*c = NULL;
		return rc;
	}
	return 0;
}
