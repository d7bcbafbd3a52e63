/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * etcd_doc_cli.h - what the commands that write one of the fleet's
 * documents into etcd share ('agent ring set/get', 'agent pins set/get',
 * docs/fleet.md): the checks after their options, who is writing, and the
 * compare-and-swap write itself, so a concurrent change is refused with
 * who won, never overwritten.
 */
#ifndef KS_ETCD_DOC_CLI_H
#define KS_ETCD_DOC_CLI_H

#include <stddef.h>
#include <stdint.h>
#include "core/etcd_codec.h"
#include "net/etcd_conf.h"

struct ks_etcd;

/* After a get/set command's options: no arguments left, --etcd given and
 * the etcd options sound; 0, or the exit code of a usage error. */
int ks_etcd_args_done(struct ks_etcd_conf *ec, const char *cmd, const char *why,
		      int argc, char **argv);

/* "user@host pid N" and the UTC time now, for written_by/written_at. */
void ks_writer_id(char *by, size_t blen, char *at, size_t alen);

/* Who holds a key now, in words, for a refused write (cur: the key read
 * again; no kvs when it is gone). */
typedef void (*ks_doc_describe_fn)(const struct ks_etcd_range *cur, char *buf,
				   size_t len);

/*
 * Writes doc at key if the key is still at revision expect (pinned: as
 * --if-revision said; else whatever a read now finds): a read, then one
 * transaction. A lost race, a broken connection or an unanswered call
 * reads the key back: this very document there is a write done; the key
 * unchanged is "may or may not have happened"; anything else is refused
 * naming the winner (describe). what ("ring", "pins") names the document
 * in messages and in the command to read it. 0 and *rev, or KS_EXIT_FAIL
 * with the message printed.
 */
int ks_etcd_doc_write(struct ks_etcd *c, const char *key, const char *what,
		      const char *doc, size_t len, int64_t expect, int pinned,
		      ks_doc_describe_fn describe, int64_t *rev);

#endif
