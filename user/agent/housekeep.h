/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * housekeep.h - the agent's work that waits on the rtnl lock, taken off
 * the loop that arms hot keys' copies (docs/design.md, "The agent's
 * threads"): once an interval, on a thread of its own, whether the link
 * is still attached (a BPF_OBJ_GET_INFO_BY_FD on an XDP link takes rtnl)
 * and the device's VLAN sub-interfaces into ks_vlans (a netlink dump).
 * Neither is ordered with steering: a detach seen an interval late stops
 * the agent an interval late, and a sub-interface's tags in ks_vlans only
 * let tagged gets be steered out of it. Under a machine that creates and
 * deletes namespaces all the time either call took up to 8 s
 * (docs/testing.md): on the loop, that held every re-arm.
 *
 * The thread owns what it touches (a dup of the link's fd and of
 * ks_vlans, the device's name), so the exit path does not wait for a
 * call stuck on rtnl: it leaves it behind (bg_thread.h).
 */
#ifndef KS_HOUSEKEEP_H
#define KS_HOUSEKEEP_H

#include <linux/types.h>
#include <net/if.h>
#include "dp/attach.h"
#include "agent/bg_thread.h"

/* How long the exit path waits for a pass in progress. */
#define KS_HK_STOP_WAIT_NS 200000000ULL

struct ks_housekeep_opts {
	/* --housekeeping loop (a test's control): the passes on the loop's
	 * thread before each interval, as before the thread existed */
	int on_loop;
	/* --housekeeping-delay-ms (a test's): each link check is held this
	 * long first, in a sleep no signal ends, as a call waiting for
	 * the rtnl lock is */
	unsigned delay_ms;
};

struct ks_housekeep {
	struct ks_housekeep_opts o;
	/* the pass's own; nobody else reads or closes them */
	struct ks_link_probe probe;
	int vlans_fd; /* a dup of ks_vlans; -1: no VLAN steering */
	int v6;       /* the replicas' family, for the forwarding warning */
	char ifname[IF_NAMESIZE];
	unsigned nvlans; /* sub-interfaces, as last synced */
	int synced;      /* a pass has synced them once */
	/* the result the loop reads */
	int detached;     /* atomic: the link was found detached */
	struct ks_bg *bg; /* NULL: on the loop (o.on_loop) */
	/* passes on the loop: their count and the longest */
	struct ks_bg_stats loop_st;
};

/*
 * Starts the thread: a pass at once (its VLAN sync warns about
 * sub-interfaces without forwarding), then one every period_ns. Nothing
 * here waits on rtnl. vlans_fd: ks_vlans, or -1 without replicas (nothing
 * steered); v6: the replicas are IPv6. 0 with *out set, or a negative
 * errno.
 */
int ks_housekeep_start(struct ks_housekeep **out,
		       const struct ks_housekeep_opts *o,
		       const struct ks_attachment *a, const char *ifname,
		       int vlans_fd, int v6, __u64 period_ns);
/* Before each interval: the pass itself with o.on_loop, else nothing. */
void ks_housekeep_loop_turn(struct ks_housekeep *h);
/* 1 once a pass found the link detached. */
int ks_housekeep_detached(struct ks_housekeep *h);
/* The passes so far (the thread's or the loop's). */
void ks_housekeep_stats(struct ks_housekeep *h, struct ks_bg_stats *st);
/* Stops the passes, waiting at most KS_HK_STOP_WAIT_NS for one in
 * progress (one still in the kernel is left behind, with its state).
 * NULL: nothing. */
void ks_housekeep_stop(struct ks_housekeep *h);

#endif
