/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fleet.h - 'agent fleet' printed: the text screen (the ring's shards
 * with their agents, the hosts left over, the merged top keys, the hot-key
 * table) and the versioned JSON document of the same, docs/fleet.md. What
 * it prints is decided in core/fleet_view.h; this only lays it out.
 */
#ifndef KS_RENDER_FLEET_H
#define KS_RENDER_FLEET_H

#include <stdio.h>
#include "core/fleet_view.h"

#define KS_FLEET_SCHEMA 1 /* of the JSON document; additions keep it */

struct ks_fleet_out {
	const char *cluster;
	const struct ks_fleet_snapshot *s;
	const struct ks_fleet_view *v;
	size_t top_k;  /* the top keys asked for; 0: no such section */
	int hash_only; /* no key text anywhere */
	/* --watch: etcd's state in a line of its own ("watch up", or why it
	 * is reconnecting); NULL without --watch */
	const char *watch_state;
	int watch_up;
};

void ks_render_fleet_text(FILE *f, const struct ks_fleet_out *o);
/* one_line: compact, one document a line (--watch); else indented. */
void ks_render_fleet_json(FILE *f, const struct ks_fleet_out *o, int one_line);

#endif
