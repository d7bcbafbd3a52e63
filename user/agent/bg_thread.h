/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bg_thread.h - a thread for the agent's calls that may wait on the whole
 * machine (the rtnl lock, an RCU grace period) and so must not run on the
 * loop that arms hot keys' copies (docs/design.md, "The agent's
 * threads"). Its function runs a pass every period, and whenever the loop
 * asks for one (ks_bg_request); each finished pass is signalled on an
 * eventfd the loop can poll.
 *
 * Stopping never waits for a pass stuck in the kernel: ks_bg_stop() waits
 * a bounded time, and a thread still inside its function then is left
 * behind (detached, with its state, for the process's exit to end). So
 * the function must own what it touches (its own fds, its own copies),
 * never the caller's state that the exit path frees.
 */
#ifndef KS_BG_THREAD_H
#define KS_BG_THREAD_H

#include <linux/types.h>

struct ks_bg;

/*
 * One pass. req: the highest value asked for (ks_bg_request) when the
 * pass started; once fn returns 0, ks_bg_done() says req. A failed pass
 * (a negative errno) leaves ks_bg_done() as it was and is not tried again
 * for the same req (a new request, or the next period, tries again).
 */
typedef int (*ks_bg_fn)(void *ud, __u64 req);

/*
 * Starts the thread (util/thread.h: signals blocked in it, they stay
 * with the caller's poll; its capabilities dropped to keep_caps, KS_CAP()
 * bits, before its first pass). period_ns 0: passes only on request; else
 * one at once and then one every period_ns (counted from the end of the
 * last). 0 with *out set, or a negative errno.
 */
int ks_bg_start(struct ks_bg **out, const char *name, ks_bg_fn fn, void *ud,
		__u64 period_ns, unsigned long long keep_caps);

/* Every call below takes NULL (no thread): nothing, 0 or zeroes. */

/* Asks for a pass that starts after this call with req >= v (values only
 * rise: a smaller one than asked before changes nothing). */
void ks_bg_request(struct ks_bg *b, __u64 v);

/* The req of the last finished pass (0: none yet). */
__u64 ks_bg_done(struct ks_bg *b);

/* Readable after a pass ends; ks_bg_ack() empties it. */
int ks_bg_fd(const struct ks_bg *b);
void ks_bg_ack(struct ks_bg *b);

/* Passes finished, the longest one, and whether one is running now and
 * since when (ks_mono_ns, 0: none). */
struct ks_bg_stats {
	__u64 passes;
	__u64 pass_max_ns;
	__u64 busy_since_ns;
};
void ks_bg_stats(struct ks_bg *b, struct ks_bg_stats *st);

/*
 * Stops the thread: it starts no pass after this. Waits up to wait_ns for
 * a pass in progress to end; 0 if the thread ended (everything freed),
 * -ETIMEDOUT if it is still inside fn: it is detached and frees itself
 * when fn returns, and ud must stay valid until then (leak it: the
 * process is on its way out). NULL: nothing, 0.
 */
int ks_bg_stop(struct ks_bg *b, __u64 wait_ns);

#endif
