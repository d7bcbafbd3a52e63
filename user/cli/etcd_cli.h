/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * etcd_cli.h - the etcd options of the option table (cli_options.c:
 * --etcd, --cluster, --etcd-ca/-cert/-key, --etcd-user,
 * --etcd-password-file, --etcd-optional) into what they say
 * (net/etcd_conf.h), for 'agent run' and 'agent ring get/set'.
 */
#ifndef KS_ETCD_CLI_H
#define KS_ETCD_CLI_H

#include <stddef.h>
#include "net/etcd_conf.h"

/* 1 when c was an etcd option (handled), 0 when not, -1 with err. */
int ks_etcd_cli_opt(struct ks_etcd_conf *e, int c, const char *arg, char *err,
		    size_t errlen);

#endif
