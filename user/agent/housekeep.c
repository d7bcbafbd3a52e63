// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * housekeep.c - the link check and the VLAN sync on a thread of their own
 * (see housekeep.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "agent/housekeep.h"
#include "net/vlan_devs.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/privs.h"

/*
 * The device's VLAN sub-interfaces into ks_vlans, so tagged gets can be
 * steered out of them; every pass, since sub-interfaces come and go.
 * warn: say which of them lack the forwarding the FIB lookup needs.
 */
static void sync_vlans(struct ks_housekeep *h, int warn)
{
	struct ks_vlan_dev devs[KS_MAX_VLAN_DEVS];
	char name[IF_NAMESIZE];
	__u32 ifindex;
	int n, i;

	if (h->vlans_fd < 0)
		return;
	ifindex = if_nametoindex(h->ifname);
	n = ifindex ? ks_vlan_devs(ifindex, devs, KS_MAX_VLAN_DEVS) : -ENODEV;
	if (n < 0) {
		ks_debug("VLAN sub-interfaces of %s: %s", h->ifname,
			 strerror(-n));
		return;
	}
	if (ks_vlan_devs_sync(h->vlans_fd, devs, (unsigned)n))
		ks_debug("ks_vlans: %s", strerror(errno));
	/* two entries each: its tags, and its mark (vlan_devs.h) */
	if ((unsigned)n / 2 != h->nvlans)
		ks_info("steering tagged gets on %d VLAN sub-interface%s of %s",
			n / 2, n == 2 ? "" : "s", h->ifname);
	h->nvlans = (unsigned)n / 2;
	for (i = 0; warn && i < n; i++)
		if (devs[i].key.ifindex == ifindex &&
		    if_indextoname(devs[i].ifindex, name) &&
		    ks_forwarding_on(name, h->v6) <= 0)
			ks_warn("VLAN %s has %s forwarding off: its gets stay with the owner; run 'sysctl -w net.%s.conf.%s.forwarding=1'",
				name, h->v6 ? "IPv6" : "IPv4",
				h->v6 ? "ipv6" : "ipv4", name);
}

/* --housekeeping-delay-ms: a sleep that neither a signal nor the stop
 * cuts short, as a task waiting for the rtnl lock is not woken by one. */
static void test_delay(const struct ks_housekeep *h)
{
	__u64 until;
	struct timespec ts;

	if (!h->o.delay_ms)
		return;
	ks_warn("test: the link check held %u ms (--housekeeping-delay-ms)",
		h->o.delay_ms);
	until = ks_mono_ns() + (__u64)h->o.delay_ms * 1000000ULL;
	ts.tv_sec = (time_t)(until / 1000000000ULL);
	ts.tv_nsec = (long)(until % 1000000000ULL);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

static int pass(void *ud, __u64 req)
{
	struct ks_housekeep *h = ud;

	(void)req;
	test_delay(h);
	if (!ks_link_probe_attached(&h->probe))
		__atomic_store_n(&h->detached, 1, __ATOMIC_RELEASE);
	/* the first sync says which sub-interfaces do not forward */
	sync_vlans(h, !h->synced);
	h->synced = 1;
	return 0;
}

static void hk_free(struct ks_housekeep *h)
{
	ks_link_probe_close(&h->probe);
	if (h->vlans_fd >= 0)
		close(h->vlans_fd);
	free(h);
}

int ks_housekeep_start(struct ks_housekeep **out,
		       const struct ks_housekeep_opts *o,
		       const struct ks_attachment *a, const char *ifname,
		       int vlans_fd, int v6, __u64 period_ns)
{
	struct ks_housekeep *h = calloc(1, sizeof(*h));
	int err;

	*out = NULL;
	if (!h)
		return -ENOMEM;
	h->o = *o;
	h->v6 = v6;
	h->vlans_fd = -1;
	snprintf(h->ifname, sizeof(h->ifname), "%s", ifname);
	err = ks_link_probe_open(a, &h->probe);
	if (!err && vlans_fd >= 0) {
		h->vlans_fd = fcntl(vlans_fd, F_DUPFD_CLOEXEC, 0);
		if (h->vlans_fd < 0)
			err = -errno;
	}
	if (err) {
		hk_free(h);
		return err;
	}
	/* no sync here: the first pass, at once, on the thread; the
	 * start's own rtnl wait held the first interval 19.5 s in one
	 * run of test_steer_housekeep (docs/testing.md) */
	if (!o->on_loop) {
		/* CAP_BPF: bpf() on the link and on ks_vlans. The
		 * netlink dumps (links, tc filters) take rtnl but no
		 * capability, and it changes no device: no
		 * CAP_NET_ADMIN */
		err = ks_bg_start(&h->bg, "ks-housekeep", pass, h, period_ns,
				  KS_CAP(CAP_BPF));
		if (err) {
			hk_free(h);
			return err;
		}
	}
	*out = h;
	return 0;
}

void ks_housekeep_loop_turn(struct ks_housekeep *h)
{
	__u64 t0, dt;

	if (!h || h->bg)
		return;
	t0 = ks_mono_ns();
	pass(h, 0);
	dt = ks_mono_ns() - t0;
	h->loop_st.passes++;
	if (dt > h->loop_st.pass_max_ns)
		h->loop_st.pass_max_ns = dt;
}

int ks_housekeep_detached(struct ks_housekeep *h)
{
	return h && __atomic_load_n(&h->detached, __ATOMIC_ACQUIRE);
}

void ks_housekeep_stats(struct ks_housekeep *h, struct ks_bg_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (h && h->bg)
		ks_bg_stats(h->bg, st);
	else if (h)
		*st = h->loop_st;
}

void ks_housekeep_stop(struct ks_housekeep *h)
{
	if (!h)
		return;
	if (ks_bg_stop(h->bg, KS_HK_STOP_WAIT_NS)) {
		/* h stays the thread's: it is leaked, not freed under it */
		ks_info("left the housekeeping thread in a call that has not returned (the rtnl lock held elsewhere); exiting without it");
		return;
	}
	hk_free(h);
}
