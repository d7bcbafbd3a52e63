/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unseen.h - the rate of an armed key whose reads the owner's datapath
 * mostly does not see: clients of the library read it from its copies over
 * TCP and the owner sees only its turns of the schedule, one in 64 at
 * --owner-share 0.015625. A key at 2x the hot threshold then shows its
 * owner about 2 reads a second, in lumps (each client's schedule gives the
 * owner a turn every 64 of its reads), and one interval's count cannot
 * tell 0 from 4: scaled each interval alone, the estimate fell to 0, the
 * key cooled and was disarmed, its reads came back, it turned hot again
 * (docs/steering.md, "Where the rest of the busiest shard came from").
 * So the owner's counts are pooled over the newest intervals that hold
 * enough of them, and while too few have come in to tell, the key keeps
 * its rate. Pure code.
 */
#ifndef KS_UNSEEN_H
#define KS_UNSEEN_H

#include <linux/types.h>

#define KS_UNSEEN_WINDOW    16 /* intervals pooled at most */
#define KS_UNSEEN_MIN_READS 16 /* owner reads an estimate wants */

struct ks_unseen_window {
	__u32 reads[KS_UNSEEN_WINDOW]; /* the owner's TCP reads of each */
	float secs[KS_UNSEEN_WINDOW];  /* ... interval's length */
	__u8 n, head;                  /* intervals held; the next cell */
};

enum ks_unseen_verdict {
	KS_UNSEEN_NONE, /* nothing to scale (no owner share, or all of it) */
	KS_UNSEEN_HOLD, /* too few reads yet to tell: keep the key's rate */
	KS_UNSEEN_RATE, /* *reads_ps is the estimate */
};

void ks_unseen_reset(struct ks_unseen_window *w);

/*
 * Adds one interval in which the key was armed throughout: owner_reads
 * TCP reads of it seen in secs seconds. The estimate (KS_UNSEEN_RATE) is
 * ks_steer_unseen_reads over the newest intervals that hold at least
 * KS_UNSEEN_MIN_READS of the owner's reads, or over the whole window once
 * it is full however few they are (a key that cooled shows it within
 * KS_UNSEEN_WINDOW intervals); before that, KS_UNSEEN_HOLD.
 */
enum ks_unseen_verdict ks_unseen_add(struct ks_unseen_window *w,
				     __u64 owner_reads, double secs,
				     unsigned owner_turns, double *reads_ps);

#endif
