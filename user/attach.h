/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * attach.h - the lifecycle of keysteer on one interface: the bpffs mount,
 * the per-interface pin folder <KS_PIN_ROOT>/<ifname> (maps pinned by name
 * plus the XDP link as "link"), the already-attached check, attach with a
 * native-then-generic fallback, and teardown that leaves nothing behind.
 */
#ifndef KS_ATTACH_H
#define KS_ATTACH_H

#include <limits.h>
#include <net/if.h>
#include "keysteer.h"
#include "collect.h"

#define KS_BPFFS "/sys/fs/bpf"
#define KS_PROG_NAME "ks_ingress"

enum ks_xdp_req {
	KS_XDP_AUTO = 0,
	KS_XDP_NATIVE,
	KS_XDP_GENERIC,
};

/* ks_report.xdp_mode values */
#define KS_XDP_MODE_NATIVE  1
#define KS_XDP_MODE_GENERIC 2

struct keysteer_bpf;

struct ks_attachment {
	struct keysteer_bpf *skel;
	int link_fd;
	unsigned int ifindex;
	__u32 xdp_mode;          /* KS_XDP_MODE_* once attached */
	int mounted_bpffs;       /* we mounted KS_BPFFS: unmount if left empty */
	int adopted;             /* took over a dead agent's attachment */
	struct ks_config found;  /* the pinned config it had (adopted) */
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
int ks_check_free(const char *ifname, unsigned int ifindex, char *err,
		  size_t errlen);

/*
 * Mounts bpffs if needed, loads the object with maps pinned in the
 * interface's folder, writes cfg, attaches ks_ingress and pins the link.
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
int ks_attach(struct ks_attachment *a, const char *ifname,
	      unsigned int ifindex, enum ks_xdp_req req,
	      const struct ks_config *cfg, int adopt);

/*
 * Lets group gid read the pins (agent report, an exporter with CAP_BPF):
 * KS_PIN_ROOT and the interface's folder 0750, the pinned maps and link
 * 0640, all of that group. 0 or -errno.
 */
int ks_pins_share(const struct ks_attachment *a, gid_t gid);

/* The map fds of a loaded attachment. */
void ks_attachment_maps(const struct ks_attachment *a, struct ks_maps *m);

/* 1 while the link is still attached to an interface (not detached by
 * 'agent detach' or the interface going away), 0 if not. */
int ks_link_attached(const struct ks_attachment *a);

/* Detaches, unpins everything, removes the folder; safe to call twice. */
void ks_teardown(struct ks_attachment *a);

/*
 * 'agent detach': removes the pinned link and maps and the folder, and
 * detaches a keysteer XDP program still on the interface. Prints what it
 * removed. Returns 0, or -ENOENT when there was nothing to remove.
 */
int ks_detach_iface(const char *ifname);

/*
 * Names of interfaces with a pin folder, up to max; returns how many there
 * are (which may exceed max).
 */
int ks_list_attached(char names[][IF_NAMESIZE], int max);

/* Whether pid is a running process (not gone, not a zombie). */
int ks_pid_alive(__u32 pid);

/* The pid recorded in a pin folder's ks_report, 0 if unknown. */
__u32 ks_pinned_agent_pid(const char *pin_dir);

#endif
