/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ring_push.h - puts a built ring into the datapath so that no packet ever
 * sees half of one: the ring is written whole into the idle half of map
 * ks_ring, ks_config.ring is flipped to it, and then the agent waits for
 * an RCU grace period (membarrier(MEMBARRIER_CMD_GLOBAL) runs
 * synchronize_rcu()). XDP and tc programs run inside RCU read-side
 * sections and read ks_config.ring once per packet, so once the wait
 * returns no program still reads the old half and it may be rewritten.
 */
#ifndef KS_RING_PUSH_H
#define KS_RING_PUSH_H

#include <stddef.h>
#include <linux/types.h>
#include "ks_ring.h"

/*
 * Pushes half into the datapath: fd_ring is map ks_ring, fd_config map
 * ks_config. Sets half->meta.version to one more than the newest version
 * in either half of the map (so versions rise with every push, whoever
 * pushed before), writes it into the idle half, flips ks_config.ring
 * (re-reading the config first and writing every other field back as
 * read: seq belongs to the agent's interval loop, trace to 'agent trace')
 * and waits for a grace period. Returns 0 or a negative errno.
 */
int ks_ring_push(int fd_ring, int fd_config, struct ks_ring_half *half);

/* One RCU grace period: 0 or a negative errno. */
int ks_rcu_wait(void);

/*
 * Whether ks_rcu_wait() works on this kernel (membarrier with
 * MEMBARRIER_CMD_GLOBAL); on failure writes why and what to do in err.
 */
int ks_rcu_wait_check(char *err, size_t errlen);

#endif
