// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* etcd_cli.c - the etcd options (etcd_cli.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "cli/cli_options.h"
#include "cli/etcd_cli.h"

int ks_etcd_cli_opt(struct ks_etcd_conf *e, int c, const char *arg, char *err,
		    size_t errlen)
{
	switch (c) {
	case KS_OPTV_ETCD:
		e->endpoints = arg;
		return 1;
	case KS_OPTV_CLUSTER:
		if (ks_cluster_check(arg, err, errlen))
			return -1;
		e->cluster = arg;
		return 1;
	case KS_OPTV_ETCD_CA:
		e->ca = arg;
		return 1;
	case KS_OPTV_ETCD_CERT:
		e->cert = arg;
		return 1;
	case KS_OPTV_ETCD_KEY:
		e->key = arg;
		return 1;
	case KS_OPTV_ETCD_USER:
		e->user = arg;
		return 1;
	case KS_OPTV_ETCD_PWFILE:
		e->password_file = arg;
		return 1;
	case KS_OPTV_ETCD_TIMEOUT: {
		char *end;
		long ms;

		errno = 0;
		ms = strtol(arg, &end, 10);
		if (errno || !*arg || *end || ms < 1 || ms > 60000) {
			snprintf(err, errlen,
				 "--etcd-timeout '%s': want 1..60000 ms", arg);
			return -1;
		}
		e->timeout_ms = (int)ms;
		return 1;
	}
	case KS_OPTV_ETCD_OPTIONAL:
		e->optional = 1;
		return 1;
	default:
		return 0;
	}
}
