/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * attach.h - the lifecycle of keysteer on one interface: the bpffs mount,
 * the per-interface pin folder <KS_PIN_ROOT>/<ifname> (maps pinned by name
 * plus the XDP or tcx link as "link", or for a classic tc filter the
 * "tc_filter" state map), the already-attached check, attach with a
 * native-then-generic fallback (XDP) or tcx-then-clsact-filter (tc), and
 * teardown that leaves nothing behind.
 */
#ifndef KS_ATTACH_H
#define KS_ATTACH_H

#include <limits.h>
#include <net/if.h>
#include "keysteer.h"
#include "dp/collect.h"

#define KS_BPFFS            "/sys/fs/bpf"
#define KS_PROG_NAME        "ks_ingress"
#define KS_TC_PROG_NAME     "ks_tc_ingress"
#define KS_EGRESS_PROG_NAME "ks_tc_egress"

/* What 'agent run' attaches: XDP in a mode, or the tc ingress program. */
enum ks_xdp_req {
	KS_XDP_AUTO = 0,
	KS_XDP_NATIVE,
	KS_XDP_GENERIC,
	KS_HOOK_TC, /* --attach tc: ks_tc_ingress at tc ingress */
};

/* ks_report.xdp_mode values (bpf/keysteer.h names 1 and 2; 3 is the
 * agent's: the tc ingress hook, tcx link or clsact filter) */
#define KS_XDP_MODE_NATIVE  1
#define KS_XDP_MODE_GENERIC 2
#define KS_XDP_MODE_TC      3

/* How the tc program is attached (ks_attachment.tc_kind). */
#define KS_TC_NONE 0
#define KS_TC_TCX  1 /* a tcx bpf_link (kernel 6.6+), pinned as "link" */
#define KS_TC_FILTER                                                           \
	2 /* a cls_bpf filter on the clsact qdisc (older
			* kernels): state pinned as "tc_filter" */

/* The classic filter: handle "KS" at the last priority, so it runs after
 * every other ingress filter and counts what they let through. */
#define KS_TC_HANDLE 0x4b53
#define KS_TC_PRIO   0xfff0

struct keysteer_bpf;

struct ks_attachment {
	struct keysteer_bpf *skel;
	int link_fd;
	unsigned int ifindex;
	__u32 xdp_mode;         /* KS_XDP_MODE_* once attached */
	int mounted_bpffs;      /* we mounted KS_BPFFS: unmount if left empty */
	int adopted;            /* took over a dead agent's attachment */
	int hook_tc;            /* the tc program, not XDP */
	int tc_kind;            /* KS_TC_* once attached */
	int tc_made_qdisc;      /* clsact was created by keysteer: removed
				  * with the filter (classic filter only) */
	__u32 prog_id;          /* the classic filter's program */
	int egress_fd;          /* ks_tc_egress's tcx link (pinned as
				  * "egress_link"), or -1 */
	int egress;             /* ks_tc_egress attached: the config's
				  * KS_CFG_REPLIES stays on */
	struct ks_config found; /* the pinned config it had (adopted) */
	char ifname[IF_NAMESIZE];
	char pin_dir[PATH_MAX];
};

/* "<KS_PIN_ROOT>/<ifname>"; ifname must have passed the syntax check. */
void ks_pin_dir(const char *ifname, char *buf, size_t len);

/* Is KS_BPFFS a mounted bpf filesystem? */
int ks_bpffs_mounted(void);

/*
 * 0 when the interface is free. KS_ADOPT when the pin folder holds the
 * link of an agent that is no longer running: its program keeps counting
 * (fail-open), and a new agent takes it over (ks_attach with adopt). A
 * negative errno, message in err, when a live agent or another XDP program
 * has the interface. A folder holding only maps from a run that died
 * before attaching is removed.
 */
#define KS_ADOPT 1
int ks_check_free(const char *ifname, unsigned int ifindex, enum ks_xdp_req req,
		  char *err, size_t errlen);

/*
 * The first thing a take-over does (after ks_check_free said KS_ADOPT),
 * before the load, the link's switch or anything of this agent's own:
 * the pinned config's flags that belonged to the dead agent's process
 * dropped (ks_slog_takeover_flags: its sample log's drain), so the
 * datapath stops writing records nobody drains now, not once this agent
 * has started, and also when its take-over fails. The flag is set again
 * once this agent's own drain runs. 0 (also when nothing was set), or a
 * negative errno when the pinned config cannot be read or written: the
 * take-over then says what is wrong.
 */
int ks_adopt_orphaned_flags(const char *ifname);

/*
 * Mounts bpffs if needed, loads the object with maps pinned in the
 * interface's folder, writes cfg, attaches ks_ingress (or ks_tc_ingress at
 * tc ingress for KS_HOOK_TC: a tcx link where the kernel has tcx, else a
 * cls_bpf filter on clsact, the qdisc created if missing) and pins the link
 * (or the filter's state).
 * On failure logs what went wrong and what to do, and removes everything
 * it made. Returns 0 or a negative errno.
 *
 * adopt (after ks_check_free said KS_ADOPT): the object is loaded on the
 * pinned maps as they are (counters, sketch, ring, hot slots), cfg's ports
 * and sample rate are merged into the pinned config (its seq, ring half,
 * trace and hot flag kept), and the pinned link is switched to the new
 * program with bpf_link_update: one atomic swap, never a moment without a
 * program. On failure the old program stays attached and pinned.
 */
int ks_attach(struct ks_attachment *a, const char *ifname, unsigned int ifindex,
	      enum ks_xdp_req req, const struct ks_config *cfg, int adopt);

/*
 * With KS_CFG_REPLIES in cfg, ks_attach also attaches ks_tc_egress at tcx
 * egress of the interface (the owner's replies leave by it; a take-over
 * switches the pinned "egress_link"). Where it cannot (no tcx: kernels
 * before 6.6), it says so, leaves the flag off in the config and goes on
 * without: a->egress is 0.
 */

/*
 * Lets group gid read the pins (agent report, an exporter with CAP_BPF):
 * KS_PIN_ROOT and the interface's folder 0750, the pinned maps and link
 * 0640, all of that group. 0 or -errno.
 */
int ks_pins_share(const struct ks_attachment *a, gid_t gid);

/* The map fds of a loaded attachment. */
void ks_attachment_maps(const struct ks_attachment *a, struct ks_maps *m);

/*
 * What the link check needs, owned by whoever checks: a dup of the
 * link's fd, so the check can run on the housekeeping thread
 * (agent/housekeep.h) while the exit path tears the attachment down, and
 * a check stuck on the rtnl lock never reads an fd closed and reused
 * under it. ks_teardown() detaches the link explicitly, so the dup does
 * not keep it attached.
 */
struct ks_link_probe {
	int link_fd;   /* -1: none */
	int tc_filter; /* a classic tc filter: looked up by prog_id */
	unsigned int ifindex;
	__u32 prog_id;
};
/* 0, or a negative errno (the dup failed). */
int ks_link_probe_open(const struct ks_attachment *a, struct ks_link_probe *p);
/* 1 while the link is still attached to an interface (not detached by
 * 'agent detach' or the interface going away), 0 if not. Takes the rtnl
 * lock in the kernel (an XDP link's info, a tc filter dump): slow while
 * the machine changes its interfaces. */
int ks_link_probe_attached(const struct ks_link_probe *p);
void ks_link_probe_close(struct ks_link_probe *p);

/* "native XDP", "generic XDP", "tc ingress, tcx link", ...: for messages. */
const char *ks_hook_desc(const struct ks_attachment *a);

/* Detaches, unpins everything, removes the folder (and the clsact qdisc
 * if keysteer created it); safe to call twice. */
void ks_teardown(struct ks_attachment *a);

/*
 * 'agent detach': removes the pinned link and maps and the folder (and the
 * classic tc filter with the clsact qdisc if keysteer created it), and
 * detaches a keysteer XDP or tc program still on the interface. Prints what it
 * removed. Returns 0, or -ENOENT when there was nothing to remove.
 */
int ks_detach_iface(const char *ifname);

/*
 * Names of interfaces with a pin folder, up to max; returns how many there
 * are (which may exceed max).
 */
int ks_list_attached(char names[][IF_NAMESIZE], int max);

/*
 * At an agent's start: removes every pin folder whose interface is gone,
 * and logs each. Pin folders are named by interface alone, and an agent
 * in another network namespace (sharing this bpffs) may own one, so the
 * name is never the test: a folder goes only when its pinned link (XDP or
 * tcx) is attached to no device at all (the kernel detaches a link when
 * its device is deleted, whatever its namespace) and the agent recorded
 * in it is not running (a running one cleans up after itself). A folder
 * without a link (a classic tc filter's, or one whose agent is still
 * pinning) is left alone. Returns how many folders it removed.
 */
int ks_remove_stale_pins(void);

/* Whether pid is a running process (not gone, not a zombie). */
int ks_pid_alive(__u32 pid);

/* The pid recorded in a pin folder's ks_report, 0 if unknown. */
__u32 ks_pinned_agent_pid(const char *pin_dir);

#endif
