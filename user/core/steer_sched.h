/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * steer_sched.h - the 64-turn schedule the reads of an armed hot key
 * follow over its copies (the owner, copy 0, and its replicas, copies
 * 1..ncopies-1): the datapath walks it for lone UDP gets (bpf/ks_steer.bpf.h,
 * filled by the agent, user/dp/hot_map.c) and the client library for its
 * TCP reads (user/client/route.c), so both spread a key's reads alike.
 * Pure code.
 */
#ifndef KS_STEER_SCHED_H
#define KS_STEER_SCHED_H

#include <linux/types.h>
#include "keysteer.h"

/*
 * sched[KS_STEER_SCHED] for ncopies copies: owner_turns (at most
 * KS_STEER_SCHED) of every KS_STEER_SCHED turns go to copy 0, the owner,
 * the rest to copies 1..ncopies-1 evenly (the remainder to the first
 * ones), interleaved by smooth weighted round robin. One copy: all 0.
 */
void ks_steer_schedule(__u8 *sched, __u32 ncopies, unsigned owner_turns);

/*
 * The reads of an armed key that went to its copies unseen by the owner,
 * from the TCP reads the owner did see: a client of the library reads an
 * armed key on this schedule (a TCP connection cannot be moved, so the
 * datapath sees only the owner's turns), so the owner's owner_turns of
 * KS_STEER_SCHED stand for all of them. 0 when owner_turns is 0 (nothing
 * to scale: the owner sees none of them) or KS_STEER_SCHED (it sees all).
 * Plain TCP clients, which read the owner whatever the schedule, are
 * counted KS_STEER_SCHED / owner_turns times over: they make the key look
 * hotter, never colder.
 */
double ks_steer_unseen_reads(double owner_tcp_reads, unsigned owner_turns);

#endif
