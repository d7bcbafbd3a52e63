// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * attach.c - pins, attach, take-over and teardown on one interface (see
 * attach.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "keysteer.skel.h"
#include "dp/attach.h"
#include "core/slog_fold.h"
#include "dp/cpu_maps.h"
#include "util/log.h"

/* Not in Debian 12's uapi headers (kernel 6.1): tcx came with 6.6. */
#define KS_BPF_TCX_INGRESS   ((enum bpf_attach_type)46)
#define KS_BPF_TCX_EGRESS    ((enum bpf_attach_type)47)
#define KS_BPF_LINK_TYPE_TCX 11

/* Test control: KS_TC_FORCE_FILTER=1 takes the classic clsact filter even
 * where the kernel has tcx (how tests cover the path of older kernels). */
#define KS_TC_FORCE_ENV "KS_TC_FORCE_FILTER"

/* What the classic filter's "tc_filter" pin holds (an array of one). */
struct ks_tc_pin {
	__u32 magic;      /* KS_TC_PIN_MAGIC */
	__u32 made_qdisc; /* keysteer created the clsact qdisc */
	__u32 handle;
	__u32 priority;
};
#define KS_TC_PIN_MAGIC 0x4b537463 /* "KStc" */

/* Which attachment a pin folder holds. */
enum {
	KS_PIN_NONE,
	KS_PIN_XDP,
	KS_PIN_TCX,
	KS_PIN_FILTER
};

void ks_pin_dir(const char *ifname, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", KS_PIN_ROOT, ifname);
}

int ks_bpffs_mounted(void)
{
	struct statfs st;

	return statfs(KS_BPFFS, &st) == 0 && st.f_type == BPF_FS_MAGIC;
}

static int dir_is_empty(const char *path)
{
	struct dirent *d;
	DIR *dir = opendir(path);
	int empty = 1;

	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		/* maps.debug and progs.debug come with every bpffs mount
		 * (bpf_preload); they are not anyone's pins. */
		if (strcmp(d->d_name, ".") && strcmp(d->d_name, "..") &&
		    strcmp(d->d_name, "maps.debug") &&
		    strcmp(d->d_name, "progs.debug")) {
			empty = 0;
			break;
		}
	}
	closedir(dir);
	return empty;
}

/*
 * Unlinks every entry of a pin folder (pins are files; there are no
 * subfolders), then the folder, then KS_PIN_ROOT if nothing else is
 * attached. say: print each removal (for 'agent detach'). Returns how
 * many entries it removed, folder included.
 */
static int remove_pin_dir(const char *pin_dir, int say)
{
	char path[PATH_MAX];
	struct dirent *d;
	int removed = 0;
	DIR *dir;

	dir = opendir(pin_dir);
	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", pin_dir, d->d_name);
		if (unlink(path)) {
			ks_warn("cannot remove %s: %s; remove it by hand", path,
				strerror(errno));
			continue;
		}
		removed++;
		if (say)
			printf("keysteer: removed %s\n", path);
	}
	closedir(dir);
	if (rmdir(pin_dir) == 0) {
		removed++;
		if (say)
			printf("keysteer: removed %s\n", pin_dir);
	} else if (errno != ENOENT) {
		ks_warn("cannot remove %s: %s; remove it by hand", pin_dir,
			strerror(errno));
	}
	/* Fails with ENOTEMPTY while another interface is attached. */
	rmdir(KS_PIN_ROOT);
	return removed;
}

__u32 ks_pinned_agent_pid(const char *pin_dir)
{
	struct ks_report *rep;
	char path[PATH_MAX];
	__u32 key = 0, pid = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/ks_report", pin_dir);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	rep = calloc(1, sizeof(*rep));
	if (rep && !bpf_map_lookup_elem_flags(fd, &key, rep, BPF_F_LOCK))
		pid = rep->agent_pid;
	free(rep);
	close(fd);
	return pid;
}

int ks_pid_alive(__u32 pid)
{
	char path[64], buf[256], *p;
	FILE *f;
	int alive;

	if (!pid)
		return 0;
	/* EPERM: it exists, we may just not signal it. */
	if (kill((pid_t)pid, 0) && errno != EPERM)
		return 0;
	/* A killed agent nobody reaped yet is a zombie: not running. */
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 1;
	alive = 1;
	if (fgets(buf, sizeof(buf), f)) {
		p = strrchr(buf, ')'); /* comm may hold spaces and parens */
		if (p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
			alive = 0;
	}
	fclose(f);
	return alive;
}

struct xdp_prog {
	__u32 id;
	__u8 mode; /* XDP_ATTACHED_* */
	char name[BPF_OBJ_NAME_LEN];
};

static const char *xdp_mode_name(__u8 mode)
{
	switch (mode) {
	case XDP_ATTACHED_DRV:
		return "native";
	case XDP_ATTACHED_SKB:
		return "generic";
	case XDP_ATTACHED_HW:
		return "offloaded";
	default:
		return "unknown mode";
	}
}

/*
 * The XDP programs on an interface, one per mode (an interface can carry a
 * native and a generic program at once). Returns how many.
 */
static int query_xdp(unsigned int ifindex, struct xdp_prog progs[3])
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	static const __u8 modes[3] = { XDP_ATTACHED_DRV, XDP_ATTACHED_SKB,
				       XDP_ATTACHED_HW };
	__u32 ids[3];
	int i, n = 0;

	if (bpf_xdp_query((int)ifindex, 0, &q))
		return 0;
	ids[0] = q.drv_prog_id;
	ids[1] = q.skb_prog_id;
	ids[2] = q.hw_prog_id;
	for (i = 0; i < 3; i++) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd;

		if (!ids[i])
			continue;
		progs[n].id = ids[i];
		progs[n].mode = modes[i];
		snprintf(progs[n].name, sizeof(progs[n].name), "?");
		fd = bpf_prog_get_fd_by_id(ids[i]);
		if (fd >= 0) {
			if (!bpf_obj_get_info_by_fd(fd, &info, &len))
				snprintf(progs[n].name, sizeof(progs[n].name),
					 "%s", info.name);
			close(fd);
		}
		n++;
	}
	return n;
}

static void prog_name(__u32 id, char name[BPF_OBJ_NAME_LEN])
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(id);

	snprintf(name, BPF_OBJ_NAME_LEN, "?");
	if (fd < 0)
		return;
	if (!bpf_obj_get_info_by_fd(fd, &info, &len))
		snprintf(name, BPF_OBJ_NAME_LEN, "%s", info.name);
	close(fd);
}

/* Whether the kernel has tcx: querying its ingress is EINVAL without. */
static int tcx_supported(unsigned int ifindex)
{
	__u32 ids[1], cnt = 1;

	if (getenv(KS_TC_FORCE_ENV) && !strcmp(getenv(KS_TC_FORCE_ENV), "1"))
		return 0;
	return !bpf_prog_query((int)ifindex, KS_BPF_TCX_INGRESS, 0, NULL, ids,
			       &cnt) ||
	       errno == ENOSPC;
}

/* The first tcx ingress program of ifindex named name: its id, or 0. */
static __u32 tcx_find(unsigned int ifindex, const char *name)
{
	__u32 ids[64], cnt = 64, i;
	char n[BPF_OBJ_NAME_LEN];

	if (bpf_prog_query((int)ifindex, KS_BPF_TCX_INGRESS, 0, NULL, ids,
			   &cnt) &&
	    errno != ENOSPC)
		return 0;
	for (i = 0; i < cnt && i < 64; i++) {
		prog_name(ids[i], n);
		if (!strcmp(n, name))
			return ids[i];
	}
	return 0;
}

/* The program id of the filter at keysteer's handle and priority on the
 * ingress of ifindex, 0 if there is none. */
static __u32 tc_filter_id(unsigned int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, h, .ifindex = (int)ifindex,
		    .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, o, .handle = KS_TC_HANDLE,
		    .priority = KS_TC_PRIO);
	libbpf_print_fn_t print;
	int err;

	/* no clsact qdisc is the usual answer: keep libbpf from printing
	 * the kernel's "Parent Qdisc doesn't exists" */
	print = libbpf_set_print(NULL);
	err = bpf_tc_query(&h, &o);
	libbpf_set_print(print);
	return err ? 0 : o.prog_id;
}

/*
 * That filter's program id when it is ks_tc_ingress, else 0 (a foreign
 * one's id in *foreign, if given). Naming it needs CAP_SYS_ADMIN.
 */
static __u32 tc_filter_find(unsigned int ifindex, __u32 *foreign)
{
	__u32 id = tc_filter_id(ifindex);
	char n[BPF_OBJ_NAME_LEN];

	if (foreign)
		*foreign = 0;
	if (!id)
		return 0;
	prog_name(id, n);
	if (!strcmp(n, KS_TC_PROG_NAME))
		return id;
	if (foreign)
		*foreign = id;
	return 0;
}

/*
 * Takes keysteer's classic filter off ifindex (the one holding prog id
 * want, or with want 0 the one named ks_tc_ingress), and the clsact qdisc
 * with it when keysteer made that (made_qdisc). say: print what went.
 * Returns how many things it removed.
 */
static int tc_filter_remove(unsigned int ifindex, __u32 want, int made_qdisc,
			    int say)
{
	LIBBPF_OPTS(bpf_tc_hook, h, .ifindex = (int)ifindex,
		    .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, o, .handle = KS_TC_HANDLE,
		    .priority = KS_TC_PRIO);
	/* the agent's own teardown has no CAP_SYS_ADMIN to name it */
	__u32 id = want ? (tc_filter_id(ifindex) == want ? want : 0)
			: tc_filter_find(ifindex, NULL);
	char ifname[IF_NAMESIZE] = "?";
	int done = 0, err;

	if_indextoname(ifindex, ifname);
	if (id) {
		err = bpf_tc_detach(&h, &o);
		if (err)
			ks_warn("cannot remove keysteer's tc filter from %s (%s); try 'tc filter del dev %s ingress pref %u'",
				ifname, strerror(-err), ifname, KS_TC_PRIO);
		else {
			done++;
			if (say)
				printf("keysteer: removed the tc filter %s (id %u, pref %u) from %s ingress\n",
				       KS_TC_PROG_NAME, id, KS_TC_PRIO, ifname);
		}
	}
	if (made_qdisc) {
		/* INGRESS|EGRESS is the qdisc itself; INGRESS alone would
		 * only flush its filters */
		h.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		err = bpf_tc_hook_destroy(&h);
		if (!err) {
			done++;
			if (say)
				printf("keysteer: removed the clsact qdisc it had added to %s\n",
				       ifname);
		} else if (err != -ENOENT && err != -EINVAL) {
			ks_warn("cannot remove the clsact qdisc keysteer added to %s (%s); try 'tc qdisc del dev %s clsact'",
				ifname, strerror(-err), ifname);
		}
	}
	return done;
}

/* The classic filter's pinned state; 0 or -errno. */
static int read_tc_pin(const char *pin_dir, struct ks_tc_pin *tp)
{
	char path[PATH_MAX + 16];
	__u32 key = 0;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/tc_filter", pin_dir);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	if (bpf_map_lookup_elem(fd, &key, tp))
		err = -errno;
	else if (tp->magic != KS_TC_PIN_MAGIC)
		err = -EINVAL;
	close(fd);
	return err;
}

/* What a pin folder holds: the classic filter's state, or a link (XDP or
 * tcx, by the link's own type). */
static int pinned_hook(const char *pin_dir)
{
	char path[PATH_MAX + 16];
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);
	struct stat st;
	int fd, kind = KS_PIN_XDP;

	if (!ks_bpffs_mounted())
		return KS_PIN_NONE;
	snprintf(path, sizeof(path), "%s/tc_filter", pin_dir);
	if (stat(path, &st) == 0)
		return KS_PIN_FILTER;
	snprintf(path, sizeof(path), "%s/link", pin_dir);
	if (stat(path, &st))
		return KS_PIN_NONE;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return KS_PIN_XDP;
	if (!bpf_obj_get_info_by_fd(fd, &info, &len) &&
	    info.type == KS_BPF_LINK_TYPE_TCX)
		kind = KS_PIN_TCX;
	close(fd);
	return kind;
}

int ks_check_free(const char *ifname, unsigned int ifindex, enum ks_xdp_req req,
		  char *err, size_t errlen)
{
	struct xdp_prog progs[3];
	char pin_dir[PATH_MAX];
	int i, n, has_link, ours_xdp = 0, ours_tcx, ours_flt, ours, kind;
	__u32 foreign_flt = 0;
	struct stat st;

	ks_pin_dir(ifname, pin_dir, sizeof(pin_dir));
	kind = pinned_hook(pin_dir);
	has_link = kind != KS_PIN_NONE;
	n = query_xdp(ifindex, progs);
	for (i = 0; i < n; i++)
		ours_xdp |= !strcmp(progs[i].name, KS_PROG_NAME);
	ours_tcx = tcx_find(ifindex, KS_TC_PROG_NAME) != 0;
	ours_flt = tc_filter_find(ifindex, &foreign_flt) != 0;
	ours = ours_xdp || ours_tcx || ours_flt;

	if (has_link || ours) {
		__u32 pid = has_link ? ks_pinned_agent_pid(pin_dir) : 0;
		int live = kind == KS_PIN_XDP   ? ours_xdp
			   : kind == KS_PIN_TCX ? ours_tcx
						: ours_flt;
		char who[48];

		/* the program outlived its agent: take it over, at its hook */
		if (has_link && live && pid && !ks_pid_alive(pid)) {
			if ((kind != KS_PIN_XDP) != (req == KS_HOOK_TC)) {
				snprintf(
					err, errlen,
					"keysteer on %s was attached at the %s hook by pid %u, no longer running; give --attach %s to take it over, or run 'agent detach --iface %s' first",
					ifname,
					kind == KS_PIN_XDP ? "XDP" : "tc", pid,
					kind == KS_PIN_XDP ? "xdp" : "tc",
					ifname);
				return -EEXIST;
			}
			snprintf(
				err, errlen,
				"taking over keysteer on %s from pid %u, no longer running",
				ifname, pid);
			return KS_ADOPT;
		}
		if (!pid)
			snprintf(who, sizeof(who), "pid unknown");
		else if (!ks_pid_alive(pid))
			snprintf(who, sizeof(who), "pid %u, no longer running",
				 pid);
		else
			snprintf(who, sizeof(who), "pid %u", pid);
		snprintf(
			err, errlen,
			"keysteer is already attached to %s (%s); run 'agent detach --iface %s'",
			ifname, who, ifname);
		return -EEXIST;
	}
	if (n && req != KS_HOOK_TC) {
		const char *off = progs[0].mode == XDP_ATTACHED_SKB
					  ? "xdpgeneric"
				  : progs[0].mode == XDP_ATTACHED_HW
					  ? "xdpoffload"
					  : "xdpdrv";

		snprintf(
			err, errlen,
			"%s already has an XDP program (%s, id %u, %s); remove it first (if 'ip' attached it: 'ip link set dev %s %s off') or choose another interface",
			ifname, progs[0].name, progs[0].id,
			xdp_mode_name(progs[0].mode), ifname, off);
		return -EBUSY;
	}
	/* Only the classic filter (no tcx) needs keysteer's handle/pref. */
	if (foreign_flt && req == KS_HOOK_TC && !tcx_supported(ifindex)) {
		char name[BPF_OBJ_NAME_LEN];

		prog_name(foreign_flt, name);
		snprintf(
			err, errlen,
			"%s already has a tc ingress filter at pref %u handle %#x (%s, id %u), where keysteer's goes; remove it ('tc filter del dev %s ingress pref %u') or choose another interface",
			ifname, KS_TC_PRIO, KS_TC_HANDLE, name, foreign_flt,
			ifname, KS_TC_PRIO);
		return -EBUSY;
	}
	/* Maps without a link: a run that died between load and attach. */
	if (ks_bpffs_mounted() && stat(pin_dir, &st) == 0) {
		ks_warn("removing leftover pins of an earlier run in %s",
			pin_dir);
		remove_pin_dir(pin_dir, 0);
	}
	return 0;
}

static int mount_bpffs(struct ks_attachment *a)
{
	if (ks_bpffs_mounted())
		return 0;
	if (mount("bpf", KS_BPFFS, "bpf", 0, "mode=0700")) {
		int err = -errno;

		ks_err("cannot mount the BPF filesystem on %s (%s); mount it with 'mount -t bpf bpf %s'",
		       KS_BPFFS, strerror(errno), KS_BPFFS);
		return err;
	}
	a->mounted_bpffs = 1;
	/*
	 * 'ip netns exec' gives each command a fresh /sys without bpffs, so
	 * a mount made here is private to this agent's mount namespace.
	 */
	ks_info("mounted the BPF filesystem on %s (it was not mounted; under 'ip netns exec' the mount is private to this agent, see 'agent run --help')",
		KS_BPFFS);
	return 0;
}

static int make_pin_dir(struct ks_attachment *a)
{
	if (mkdir(KS_PIN_ROOT, 0700) && errno != EEXIST)
		goto fail;
	if (mkdir(a->pin_dir, 0700) && errno != EEXIST)
		goto fail;
	return 0;
fail:
	ks_err("cannot create %s (%s); check that %s is a writable bpffs",
	       a->pin_dir, strerror(errno), KS_BPFFS);
	return -errno;
}

static void explain_load_error(int err)
{
	if (err == -EPERM) {
		ks_err("the kernel refused to load BPF programs (%s); run as root with CAP_BPF, CAP_NET_ADMIN and CAP_SYS_ADMIN, and check kernel lockdown",
		       strerror(-err));
	} else if (err == -ENOSYS || err == -EOPNOTSUPP) {
		ks_err("this kernel has no BPF support (%s); use a kernel with CONFIG_BPF_SYSCALL and XDP",
		       strerror(-err));
	} else if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		ks_err("loading the BPF programs failed (%s) and the kernel has no BTF; use a kernel with CONFIG_DEBUG_INFO_BTF",
		       strerror(-err));
	} else {
		ks_err("loading the BPF programs failed (%s); rerun with -v for libbpf's log (the verifier's reason is above)",
		       strerror(-err));
	}
}

int ks_adopt_orphaned_flags(const char *ifname)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	struct ks_config c;
	__u32 key = 0, flags;
	int fd, err = 0;

	ks_pin_dir(ifname, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/ks_config", dir);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	if (bpf_map_lookup_elem(fd, &key, &c)) {
		err = -errno;
	} else {
		flags = ks_slog_takeover_flags(c.flags);
		if (flags != c.flags) {
			c.flags = flags;
			if (bpf_map_update_elem(fd, &key, &c, BPF_ANY))
				err = -errno;
			else
				ks_debug(
					"%s: the dead agent's sample-log flag cleared: no records until this agent's drain runs",
					path);
		}
	}
	close(fd);
	return err;
}

/* The pinned config, with this run's ports and sample rate: the epoch
 * sequence, the active ring half, tracing and the hot flag carry on. */
static int merge_config(struct ks_attachment *a, const struct ks_maps *m,
			const struct ks_config *cfg)
{
	struct ks_config c;
	int err = ks_read_config(m, &c);

	if (err)
		return err;
	a->found = c;
	memcpy(c.ports, cfg->ports, sizeof(c.ports));
	c.sample_n = cfg->sample_n;
	return ks_write_config(m, &c);
}

/*
 * Before a take-over: does every pinned map hold what this agent's program
 * stores in it? libbpf refuses one that does not ("parameter mismatch")
 * and the load fails with EINVAL, which reads like a verifier error; here
 * the map and its sizes are named. A layout that changed between versions
 * (ks_pkts grew by the fast path's two counters) needs 'agent detach'
 * first. Returns 0, or -ESTALE once it has said why.
 */
static int pins_fit(const struct ks_attachment *a)
{
	const struct bpf_map *m;

	bpf_object__for_each_map (m, a->skel->obj) {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);
		const char *path = bpf_map__pin_path(m);
		int fd = path ? bpf_obj_get(path) : -1;

		/* not pinned: libbpf makes it afresh */
		if (fd < 0)
			continue;
		if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
			close(fd);
			continue; /* the load says what is wrong */
		}
		close(fd);
		if (info.type == bpf_map__type(m) &&
		    info.key_size == bpf_map__key_size(m) &&
		    info.value_size == bpf_map__value_size(m) &&
		    info.max_entries == bpf_map__max_entries(m))
			continue;
		if (info.type == bpf_map__type(m) &&
		    info.key_size == bpf_map__key_size(m) &&
		    info.value_size == bpf_map__value_size(m))
			/* the sample log, sized by CPUs (ks_cpu_maps_size) */
			ks_err("the pinned map %s holds %u entries, this agent's %s %u (another keysteer version, or the host's CPUs changed); run 'agent detach --iface %s' and start again (its counters start from zero)",
			       path, info.max_entries, bpf_map__name(m),
			       bpf_map__max_entries(m), a->ifname);
		else
			ks_err("the pinned map %s holds %u-byte keys and %u-byte values, this agent's %s %u and %u (another keysteer version); run 'agent detach --iface %s' and start again (its counters start from zero)",
			       path, info.key_size, info.value_size,
			       bpf_map__name(m), bpf_map__key_size(m),
			       bpf_map__value_size(m), a->ifname);
		return -ESTALE;
	}
	return 0;
}

static int load(struct ks_attachment *a, const struct ks_config *cfg)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .pin_root_path = a->pin_dir);
	struct bpf_program *other;
	struct ks_maps m;
	int err;

	a->skel = keysteer_bpf__open_opts(&oo);
	if (!a->skel) {
		err = -errno;
		ks_err("cannot open the embedded BPF object (%s); rebuild the agent with 'make'",
		       strerror(errno));
		return err;
	}
	/* Both programs share the library; only the one attached is
	 * verified. */
	other = bpf_object__find_program_by_name(
		a->skel->obj, a->hook_tc ? KS_PROG_NAME : KS_TC_PROG_NAME);
	if (other)
		bpf_program__set_autoload(other, false);
	bpf_program__set_autoload(a->skel->progs.ks_tc_egress,
				  (cfg->flags & KS_CFG_REPLIES) != 0);
	/* before pins_fit: a pinned log is compared at this host's size */
	err = ks_cpu_maps_size(a->skel->obj);
	if (err) {
		ks_err("cannot size the sample log's maps (%s); rebuild the agent with 'make'",
		       strerror(-err));
		return err;
	}
	if (a->adopted) {
		err = pins_fit(a);
		if (err)
			return err;
	}
	err = keysteer_bpf__load(a->skel);
	if (err) {
		explain_load_error(err < 0 ? err : -errno);
		return err < 0 ? err : -EINVAL;
	}
	ks_attachment_maps(a, &m);
	err = a->adopted ? merge_config(a, &m, cfg) : ks_write_config(&m, cfg);
	if (err)
		ks_err("cannot write the configuration map (%s); rerun with -v",
		       strerror(-err));
	return err;
}

/* The dead agent's XDP mode, from its last published report. */
static __u32 pinned_xdp_mode(const char *pin_dir)
{
	struct ks_report *rep = calloc(1, sizeof(*rep));
	char path[PATH_MAX + 16];
	__u32 key = 0, mode = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/ks_report", pin_dir);
	fd = bpf_obj_get(path);
	if (rep && fd >= 0 &&
	    !bpf_map_lookup_elem_flags(fd, &key, rep, BPF_F_LOCK))
		mode = rep->xdp_mode;
	if (fd >= 0)
		close(fd);
	free(rep);
	return mode;
}

/* Switches the pinned link to the freshly loaded program. */
static int take_over_link(struct ks_attachment *a)
{
	char path[PATH_MAX + 8];
	int fd, err;

	snprintf(path, sizeof(path), "%s/link", a->pin_dir);
	fd = bpf_obj_get(path);
	if (fd < 0) {
		err = -errno;
		ks_err("cannot open the pinned link %s (%s); run 'agent detach --iface %s' and start again",
		       path, strerror(errno), a->ifname);
		return err;
	}
	if (bpf_link_update(
		    fd,
		    bpf_program__fd(a->hook_tc ? a->skel->progs.ks_tc_ingress
					       : a->skel->progs.ks_ingress),
		    NULL)) {
		err = -errno;
		close(fd);
		ks_err("cannot switch the running %s program to this agent's (%s); the old one keeps running: run 'agent detach --iface %s' and start again",
		       a->hook_tc ? "tc" : "XDP", strerror(-err), a->ifname);
		return err;
	}
	a->link_fd = fd;
	if (a->hook_tc) {
		a->tc_kind = KS_TC_TCX;
		a->xdp_mode = KS_XDP_MODE_TC;
		return 0;
	}
	a->xdp_mode = pinned_xdp_mode(a->pin_dir);
	if (!a->xdp_mode || a->xdp_mode == KS_XDP_MODE_TC)
		a->xdp_mode = KS_XDP_MODE_NATIVE;
	return 0;
}

static __u32 prog_id_of(int fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/* The classic filter: replace its program in place (tc swaps it under
 * RCU, no moment without one). */
static int take_over_filter(struct ks_attachment *a)
{
	LIBBPF_OPTS(bpf_tc_hook, h, .ifindex = (int)a->ifindex,
		    .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, o, .handle = KS_TC_HANDLE,
		    .priority = KS_TC_PRIO, .flags = BPF_TC_F_REPLACE);
	struct ks_tc_pin tp;
	int err = read_tc_pin(a->pin_dir, &tp);

	if (err) {
		ks_err("cannot read the pinned tc filter state in %s (%s); run 'agent detach --iface %s' and start again",
		       a->pin_dir, strerror(-err), a->ifname);
		return err;
	}
	o.prog_fd = bpf_program__fd(a->skel->progs.ks_tc_ingress);
	err = bpf_tc_attach(&h, &o);
	if (err) {
		ks_err("cannot switch the running tc filter to this agent's program (%s); the old one keeps running: run 'agent detach --iface %s' and start again",
		       strerror(-err), a->ifname);
		return err;
	}
	a->tc_made_qdisc = (int)tp.made_qdisc;
	a->tc_kind = KS_TC_FILTER;
	a->prog_id = o.prog_id ? o.prog_id : prog_id_of(o.prog_fd);
	a->xdp_mode = KS_XDP_MODE_TC;
	return 0;
}

/* A failed take-over leaves the old attachment exactly as it was. */
static int adopt_failed(struct ks_attachment *a, int err)
{
	if (a->link_fd >= 0)
		close(a->link_fd);
	a->link_fd = -1;
	if (a->skel) {
		/* maps were reused from the pins: destroying the object
		 * closes our fds, the pins stay */
		keysteer_bpf__destroy(a->skel);
		a->skel = NULL;
	}
	a->pin_dir[0] = '\0';
	return err;
}

static int link_xdp(struct ks_attachment *a, __u32 flags)
{
	LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = flags);
	int fd;

	fd = bpf_link_create(bpf_program__fd(a->skel->progs.ks_ingress),
			     (int)a->ifindex, BPF_XDP, &lo);
	return fd < 0 ? -errno : fd;
}

static int attach_xdp(struct ks_attachment *a, enum ks_xdp_req req)
{
	int fd;

	if (req != KS_XDP_GENERIC) {
		fd = link_xdp(a, XDP_FLAGS_DRV_MODE);
		if (fd >= 0) {
			a->link_fd = fd;
			a->xdp_mode = KS_XDP_MODE_NATIVE;
			return 0;
		}
		/* Busy means another program won the race: no fallback. */
		if (req == KS_XDP_NATIVE || fd == -EBUSY || fd == -EEXIST) {
			ks_err("cannot attach XDP in native mode to %s (%s); %s",
			       a->ifname, strerror(-fd),
			       fd == -EBUSY || fd == -EEXIST
				       ? "another XDP program is attached, remove it first"
				       : "use --xdp-mode generic (or auto) for drivers without native XDP");
			return fd;
		}
		ks_warn("native XDP is not available on %s (%s); using generic XDP, which is slower",
			a->ifname, strerror(-fd));
	}
	fd = link_xdp(a, XDP_FLAGS_SKB_MODE);
	if (fd < 0) {
		ks_err("cannot attach XDP to %s (%s); check that the interface is up and has no other XDP program",
		       a->ifname, strerror(-fd));
		return fd;
	}
	a->link_fd = fd;
	a->xdp_mode = KS_XDP_MODE_GENERIC;
	return 0;
}

/* Pins the classic filter's state: whether keysteer made the qdisc. */
static int pin_tc_state(struct ks_attachment *a)
{
	struct ks_tc_pin tp = { .magic = KS_TC_PIN_MAGIC,
				.made_qdisc = (__u32)a->tc_made_qdisc,
				.handle = KS_TC_HANDLE,
				.priority = KS_TC_PRIO };
	char path[PATH_MAX + 16];
	__u32 key = 0;
	int fd, err = 0;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ks_tc_filter", sizeof(key),
			    sizeof(tp), 1, NULL);
	if (fd < 0)
		err = -errno;
	snprintf(path, sizeof(path), "%s/tc_filter", a->pin_dir);
	if (!err && bpf_map_update_elem(fd, &key, &tp, BPF_ANY))
		err = -errno;
	if (!err && bpf_obj_pin(fd, path))
		err = -errno;
	if (fd >= 0)
		close(fd);
	if (err)
		ks_err("cannot pin the tc filter state at %s (%s); check the bpffs on %s",
		       path, strerror(-err), KS_BPFFS);
	return err;
}

/* Kernels without tcx: a cls_bpf filter (direct action) on clsact. */
static int attach_tc_filter(struct ks_attachment *a, int prog_fd)
{
	LIBBPF_OPTS(bpf_tc_hook, h, .ifindex = (int)a->ifindex,
		    .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, o, .prog_fd = prog_fd, .handle = KS_TC_HANDLE,
		    .priority = KS_TC_PRIO);
	libbpf_print_fn_t print;
	int err;

	/* an existing clsact is EEXIST, and libbpf would print the
	 * kernel's "Exclusivity flag on" */
	print = libbpf_set_print(NULL);
	err = bpf_tc_hook_create(&h);
	libbpf_set_print(print);
	if (!err) {
		a->tc_made_qdisc = 1;
	} else if (err != -EEXIST) {
		ks_err("cannot add a clsact qdisc to %s (%s); check 'tc qdisc show dev %s' (another ingress qdisc is in the way)",
		       a->ifname, strerror(-err), a->ifname);
		return err;
	}
	/* the state first: a crash after this leaves what detach needs */
	err = pin_tc_state(a);
	if (err)
		return err;
	err = bpf_tc_attach(&h, &o);
	if (err) {
		ks_err("cannot attach the tc program to %s ingress (%s); %s",
		       a->ifname, strerror(-err),
		       err == -EEXIST
			       ? "a filter holds keysteer's pref, remove it with 'tc filter del dev IF ingress pref 65520'"
			       : "check that the interface is up ('tc filter show dev IF ingress')");
		return err;
	}
	a->tc_kind = KS_TC_FILTER;
	a->prog_id = o.prog_id ? o.prog_id : prog_id_of(prog_fd);
	a->xdp_mode = KS_XDP_MODE_TC;
	return 0;
}

/* tc ingress: a tcx link where the kernel has tcx (6.6+; appended after
 * any other tcx program), else the classic filter. */
static int attach_tc(struct ks_attachment *a)
{
	int prog_fd = bpf_program__fd(a->skel->progs.ks_tc_ingress);
	int fd;

	if (tcx_supported(a->ifindex)) {
		fd = bpf_link_create(prog_fd, (int)a->ifindex,
				     KS_BPF_TCX_INGRESS, NULL);
		if (fd >= 0) {
			a->link_fd = fd;
			a->tc_kind = KS_TC_TCX;
			a->xdp_mode = KS_XDP_MODE_TC;
			return 0;
		}
		ks_err("cannot attach the tc program to %s ingress (tcx: %s); check that the interface is up",
		       a->ifname, strerror(-fd));
		return fd;
	}
	ks_debug("no tcx (kernel before 6.6, or %s=1): a clsact filter instead",
		 KS_TC_FORCE_ENV);
	return attach_tc_filter(a, prog_fd);
}

/* Without tcx, or when it fails: the agent runs without reply counts. */
static void egress_off(struct ks_attachment *a, const struct ks_config *cfg,
		       const char *why)
{
	struct ks_config c = *cfg;
	struct ks_maps m;

	ks_warn("not counting the owner's replies (hits and misses of hot keys) on %s: %s; the rest runs as usual",
		a->ifname, why);
	a->egress = 0;
	c.flags &= ~(__u32)KS_CFG_REPLIES;
	ks_attachment_maps(a, &m);
	ks_write_config(&m, &c);
}

/*
 * ks_tc_egress at tcx egress, pinned as "egress_link"; a take-over switches
 * a pinned one to the new program. Only tcx: a clsact filter would leave a
 * second filter to find and remove on kernels that are leaving anyway.
 */
static void attach_egress(struct ks_attachment *a, const struct ks_config *cfg)
{
	int prog_fd = bpf_program__fd(a->skel->progs.ks_tc_egress);
	char path[PATH_MAX + 16], why[PATH_MAX + 128];
	int fd;

	snprintf(path, sizeof(path), "%s/egress_link", a->pin_dir);
	fd = a->adopted ? bpf_obj_get(path) : -1;
	if (fd >= 0) {
		if (!bpf_link_update(fd, prog_fd, NULL)) {
			a->egress_fd = fd;
			a->egress = 1;
			return;
		}
		snprintf(why, sizeof(why), "cannot switch the pinned %s (%s)",
			 path, strerror(errno));
		close(fd);
		egress_off(a, cfg, why);
		return;
	}
	if (!tcx_supported(a->ifindex)) {
		egress_off(a, cfg, "the kernel has no tcx (6.6+)");
		return;
	}
	fd = bpf_link_create(prog_fd, (int)a->ifindex, KS_BPF_TCX_EGRESS, NULL);
	if (fd < 0) {
		snprintf(why, sizeof(why), "tcx egress: %s", strerror(errno));
		egress_off(a, cfg, why);
		return;
	}
	if (bpf_obj_pin(fd, path)) {
		snprintf(why, sizeof(why), "cannot pin %s (%s)", path,
			 strerror(errno));
		bpf_link_detach(fd);
		close(fd);
		egress_off(a, cfg, why);
		return;
	}
	a->egress_fd = fd;
	a->egress = 1;
}

/* A take-over by an agent that does not count replies: the dead agent's
 * egress link goes. */
static void drop_pinned_egress(struct ks_attachment *a)
{
	char path[PATH_MAX + 16];
	int fd;

	snprintf(path, sizeof(path), "%s/egress_link", a->pin_dir);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return;
	bpf_link_detach(fd);
	close(fd);
	unlink(path);
}

const char *ks_hook_desc(const struct ks_attachment *a)
{
	if (a->tc_kind == KS_TC_TCX)
		return "tc ingress, tcx link";
	if (a->tc_kind == KS_TC_FILTER)
		return a->tc_made_qdisc
			       ? "tc ingress, clsact filter; qdisc added"
			       : "tc ingress, clsact filter";
	return a->xdp_mode == KS_XDP_MODE_NATIVE ? "native" : "generic";
}

int ks_attach(struct ks_attachment *a, const char *ifname, unsigned int ifindex,
	      enum ks_xdp_req req, const struct ks_config *cfg, int adopt)
{
	char path[PATH_MAX + 8];
	int err;

	memset(a, 0, sizeof(*a));
	a->link_fd = -1;
	a->egress_fd = -1;
	a->ifindex = ifindex;
	a->adopted = adopt;
	a->hook_tc = req == KS_HOOK_TC;
	snprintf(a->ifname, sizeof(a->ifname), "%s", ifname);
	ks_pin_dir(ifname, a->pin_dir, sizeof(a->pin_dir));
	if (adopt) {
		err = load(a, cfg);
		if (err == -EINVAL || err == -ENOTSUP)
			ks_err("the pinned maps in %s do not fit this agent's program (another keysteer version?); run 'agent detach --iface %s' and start again",
			       a->pin_dir, ifname);
		if (!err)
			err = a->hook_tc && pinned_hook(a->pin_dir) ==
						      KS_PIN_FILTER
				      ? take_over_filter(a)
				      : take_over_link(a);
		if (err)
			return adopt_failed(a, err);
		if (cfg->flags & KS_CFG_REPLIES)
			attach_egress(a, cfg);
		else
			drop_pinned_egress(a);
		return 0;
	}

	err = mount_bpffs(a);
	if (err)
		return err;
	err = make_pin_dir(a);
	if (!err)
		err = load(a, cfg);
	if (!err)
		err = a->hook_tc ? attach_tc(a) : attach_xdp(a, req);
	/* the classic filter has no link: its state is pinned already */
	if (!err && a->link_fd >= 0) {
		snprintf(path, sizeof(path), "%s/link", a->pin_dir);
		if (bpf_obj_pin(a->link_fd, path)) {
			err = -errno;
			ks_err("cannot pin the %s link at %s (%s); check the bpffs on %s",
			       a->hook_tc ? "tcx" : "XDP", path,
			       strerror(errno), KS_BPFFS);
		}
	}
	if (!err && (cfg->flags & KS_CFG_REPLIES))
		attach_egress(a, cfg);
	if (err)
		ks_teardown(a);
	return err;
}

static int share_one(const char *path, gid_t gid, mode_t mode)
{
	if (chown(path, (uid_t)-1, gid) || chmod(path, mode))
		return -errno;
	return 0;
}

int ks_pins_share(const struct ks_attachment *a, gid_t gid)
{
	char path[PATH_MAX + NAME_MAX + 2];
	struct dirent *de;
	DIR *d;
	int err;

	err = share_one(KS_PIN_ROOT, gid, 0750);
	if (!err)
		err = share_one(a->pin_dir, gid, 0750);
	d = err ? NULL : opendir(a->pin_dir);
	if (!err && !d)
		err = -errno;
	while (d && !err && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", a->pin_dir, de->d_name);
		err = share_one(path, gid, 0640);
	}
	if (d)
		closedir(d);
	return err;
}

void ks_attachment_maps(const struct ks_attachment *a, struct ks_maps *m)
{
	ks_maps_init(m);
	if (!a->skel)
		return;
	m->config = bpf_map__fd(a->skel->maps.ks_config);
	m->ops = bpf_map__fd(a->skel->maps.ks_ops);
	m->errors = bpf_map__fd(a->skel->maps.ks_errors);
	m->pkts = bpf_map__fd(a->skel->maps.ks_pkts);
	m->cms = bpf_map__fd(a->skel->maps.ks_cms);
	m->cands = bpf_map__fd(a->skel->maps.ks_cands);
	m->events = bpf_map__fd(a->skel->maps.ks_events);
	m->report = bpf_map__fd(a->skel->maps.ks_report);
	m->ring = bpf_map__fd(a->skel->maps.ks_ring);
	m->shards = bpf_map__fd(a->skel->maps.ks_shards);
	m->misdirect = bpf_map__fd(a->skel->maps.ks_misdirect);
	m->shard_report = bpf_map__fd(a->skel->maps.ks_shard_report);
	m->hot = bpf_map__fd(a->skel->maps.ks_hot);
	m->hot_stats = bpf_map__fd(a->skel->maps.ks_hot_stats);
	m->replicas = bpf_map__fd(a->skel->maps.ks_replicas);
	m->replica_stats = bpf_map__fd(a->skel->maps.ks_replica_stats);
	m->hot_events = bpf_map__fd(a->skel->maps.ks_hot_events);
	m->vlans = bpf_map__fd(a->skel->maps.ks_vlans);
	m->hot_filter = bpf_map__fd(a->skel->maps.ks_hot_filter);
	m->hot_replies = bpf_map__fd(a->skel->maps.ks_hot_replies);
	m->rate = bpf_map__fd(a->skel->maps.ks_rate);
	m->slog = bpf_map__fd(a->skel->maps.ks_slog);
	m->slog_pos = bpf_map__fd(a->skel->maps.ks_slog_pos);
}

int ks_link_probe_open(const struct ks_attachment *a, struct ks_link_probe *p)
{
	p->link_fd = -1;
	p->tc_filter = a->tc_kind == KS_TC_FILTER;
	p->ifindex = a->ifindex;
	p->prog_id = a->prog_id;
	if (p->tc_filter || a->link_fd < 0)
		return 0;
	p->link_fd = fcntl(a->link_fd, F_DUPFD_CLOEXEC, 0);
	return p->link_fd < 0 ? -errno : 0;
}

int ks_link_probe_attached(const struct ks_link_probe *p)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	if (p->tc_filter)
		return tc_filter_id(p->ifindex) == p->prog_id;
	if (p->link_fd < 0)
		return 0;
	if (bpf_obj_get_info_by_fd(p->link_fd, &info, &len))
		return 1; /* cannot tell: assume it is */
	/* a tcx link's info starts with its ifindex too; 0 once detached */
	return info.xdp.ifindex != 0;
}

void ks_link_probe_close(struct ks_link_probe *p)
{
	if (p->link_fd >= 0)
		close(p->link_fd);
	p->link_fd = -1;
}

void ks_teardown(struct ks_attachment *a)
{
	if (a->egress_fd >= 0) {
		bpf_link_detach(a->egress_fd);
		close(a->egress_fd);
		a->egress_fd = -1;
	}
	a->egress = 0;
	if (a->link_fd >= 0) {
		/* Detach now even if some other process holds the link. */
		bpf_link_detach(a->link_fd);
		close(a->link_fd);
		a->link_fd = -1;
	}
	if (a->tc_kind == KS_TC_FILTER || a->tc_made_qdisc)
		tc_filter_remove(a->ifindex, a->prog_id, a->tc_made_qdisc, 0);
	a->tc_kind = KS_TC_NONE;
	a->tc_made_qdisc = 0;
	if (a->pin_dir[0])
		remove_pin_dir(a->pin_dir, 0);
	if (a->skel) {
		keysteer_bpf__destroy(a->skel);
		a->skel = NULL;
	}
	/* Leave the system as found: our bpffs mount goes if it is empty. */
	if (a->mounted_bpffs && dir_is_empty(KS_BPFFS)) {
		if (umount2(KS_BPFFS, 0) == 0)
			a->mounted_bpffs = 0;
	}
	a->pin_dir[0] = '\0';
}

/* Finds the bpf_link of type (XDP or tcx) that holds prog_id on ifindex;
 * fd or -ENOENT. */
static int find_link(unsigned int ifindex, __u32 prog_id, __u32 type)
{
	__u32 id = 0;

	while (!bpf_link_get_next_id(id, &id)) {
		struct bpf_link_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_link_get_fd_by_id(id);

		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) &&
		    info.type == type && info.prog_id == prog_id &&
		    info.xdp.ifindex == ifindex)
			return fd;
		close(fd);
	}
	return -ENOENT;
}

static int detach_leftover_xdp(const char *ifname)
{
	struct xdp_prog progs[3];
	unsigned int ifindex = if_nametoindex(ifname);
	int i, n, done = 0;

	if (!ifindex)
		return 0;
	n = query_xdp(ifindex, progs);
	for (i = 0; i < n; i++) {
		__u32 flags = progs[i].mode == XDP_ATTACHED_SKB
				      ? XDP_FLAGS_SKB_MODE
			      : progs[i].mode == XDP_ATTACHED_HW
				      ? XDP_FLAGS_HW_MODE
				      : XDP_FLAGS_DRV_MODE;
		int fd, err = 0;

		if (strcmp(progs[i].name, KS_PROG_NAME))
			continue;
		/* A link-attached program refuses netlink detach (EBUSY):
		 * detach it through its link instead. */
		if (bpf_xdp_detach((int)ifindex, flags, NULL)) {
			fd = find_link(ifindex, progs[i].id, BPF_LINK_TYPE_XDP);
			err = fd < 0 ? fd : bpf_link_detach(fd);
			if (fd >= 0)
				close(fd);
		}
		if (err) {
			ks_warn("cannot detach %s (id %u) from %s (%s); try 'ip link set dev %s xdp off'",
				KS_PROG_NAME, progs[i].id, ifname,
				strerror(-err), ifname);
			continue;
		}
		printf("keysteer: detached %s (id %u, %s) from %s\n",
		       KS_PROG_NAME, progs[i].id, xdp_mode_name(progs[i].mode),
		       ifname);
		done++;
	}
	return done;
}

/* A keysteer tc program left at tcx ingress without its pins, or at
 * keysteer's filter pref (its clsact qdisc stays: who made it is in the
 * pins, which are gone). */
static int detach_leftover_tc(const char *ifname)
{
	unsigned int ifindex = if_nametoindex(ifname);
	int done = 0, guard, fd, err;
	__u32 id;

	if (!ifindex)
		return 0;
	for (guard = 0; guard < 8 && (id = tcx_find(ifindex, KS_TC_PROG_NAME));
	     guard++) {
		fd = find_link(ifindex, id, KS_BPF_LINK_TYPE_TCX);
		err = fd < 0 ? fd : bpf_link_detach(fd);
		if (fd >= 0)
			close(fd);
		if (err) {
			ks_warn("cannot detach %s (id %u) from %s tcx ingress (%s); try 'bpftool net detach tcx_ingress dev %s'",
				KS_TC_PROG_NAME, id, ifname, strerror(-err),
				ifname);
			break;
		}
		printf("keysteer: detached %s (id %u, tcx) from %s\n",
		       KS_TC_PROG_NAME, id, ifname);
		done++;
	}
	return done + tc_filter_remove(ifindex, 0, 0, 1);
}

int ks_detach_iface(const char *ifname)
{
	char pin_dir[PATH_MAX], path[PATH_MAX + 16];
	int done = 0, fd, kind;
	struct ks_tc_pin tp;
	__u32 pid = 0;

	ks_pin_dir(ifname, pin_dir, sizeof(pin_dir));
	if (ks_bpffs_mounted()) {
		pid = ks_pinned_agent_pid(pin_dir);
		kind = pinned_hook(pin_dir);
		snprintf(path, sizeof(path), "%s/link", pin_dir);
		fd = bpf_obj_get(path);
		if (fd >= 0) {
			/* Takes the program off even while an agent still
			 * holds the link; that agent notices and exits. */
			if (!bpf_link_detach(fd)) {
				printf("keysteer: detached the %s link pinned at %s\n",
				       kind == KS_PIN_TCX ? "tcx" : "XDP",
				       path);
				done++;
			}
			close(fd);
		}
		snprintf(path, sizeof(path), "%s/egress_link", pin_dir);
		fd = bpf_obj_get(path);
		if (fd >= 0) {
			if (!bpf_link_detach(fd)) {
				printf("keysteer: detached the tcx egress link pinned at %s\n",
				       path);
				done++;
			}
			close(fd);
		}
		/* the classic filter, and the qdisc if keysteer made it */
		if (kind == KS_PIN_FILTER && !read_tc_pin(pin_dir, &tp) &&
		    if_nametoindex(ifname))
			done += tc_filter_remove(if_nametoindex(ifname), 0,
						 (int)tp.made_qdisc, 1);
		done += remove_pin_dir(pin_dir, 1);
	}
	done += detach_leftover_xdp(ifname);
	done += detach_leftover_tc(ifname);
	if (done && pid != (__u32)getpid() && ks_pid_alive(pid))
		printf("keysteer: agent pid %u is still running; it exits at its next interval\n",
		       pid);
	return done ? 0 : -ENOENT;
}

/* A pin folder whose link outlived its device and its agent: 1, and the
 * agent's pid in *pid; 0 when it may be anyone's still (or cannot tell). */
static int pins_stale(const char *pin_dir, __u32 *pid)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);
	char path[PATH_MAX + 8];
	int fd, err;

	snprintf(path, sizeof(path), "%s/link", pin_dir);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	err = bpf_obj_get_info_by_fd(fd, &info, &len);
	close(fd);
	if (err || (info.type != BPF_LINK_TYPE_XDP &&
		    info.type != KS_BPF_LINK_TYPE_TCX))
		return 0;
	/* a tcx link's info starts with its ifindex too; 0 once detached */
	if (info.xdp.ifindex)
		return 0;
	*pid = ks_pinned_agent_pid(pin_dir);
	return !ks_pid_alive(*pid);
}

int ks_remove_stale_pins(void)
{
	char names[64][IF_NAMESIZE], pin_dir[PATH_MAX];
	int n = ks_list_attached(names, 64), i, removed = 0;
	__u32 pid = 0;

	/* past 64 folders the rest wait for a later start */
	for (i = 0; i < n && i < 64; i++) {
		ks_pin_dir(names[i], pin_dir, sizeof(pin_dir));
		if (!pins_stale(pin_dir, &pid))
			continue;
		remove_pin_dir(pin_dir, 0);
		removed++;
		ks_info("removed the stale pins of %s (%s): its link is attached to no interface in any namespace, the interface is gone, and its agent (pid %u) is not running",
			names[i], pin_dir, pid);
	}
	return removed;
}

int ks_list_attached(char names[][IF_NAMESIZE], int max)
{
	struct dirent *d;
	DIR *dir;
	int n = 0;

	if (!ks_bpffs_mounted())
		return 0;
	dir = opendir(KS_PIN_ROOT);
	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		size_t len = strlen(d->d_name);

		/* Not a folder this agent would make: leave it alone. */
		if (d->d_type != DT_DIR || len >= IF_NAMESIZE ||
		    !strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		if (n < max)
			memcpy(names[n], d->d_name, len + 1);
		n++;
	}
	closedir(dir);
	return n;
}
