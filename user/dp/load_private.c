// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * load_private.c - keysteer's BPF object loaded privately, unpinned and
 * unattached (see load_private.h).
 */
#include <errno.h>
#include <bpf/libbpf.h>
#include "keysteer.skel.h"
#include "dp/load_private.h"
#include "dp/cpu_maps.h"

struct keysteer_bpf *ks_load_private(int xdp_only, int *err)
{
	struct keysteer_bpf *skel = keysteer_bpf__open();
	struct bpf_map *m;

	if (!skel) {
		*err = -errno;
		return NULL;
	}
	if (xdp_only)
		bpf_program__set_autoload(skel->progs.ks_tc_ingress, false);
	bpf_object__for_each_map (m, skel->obj) {
		*err = bpf_map__set_pin_path(m, NULL);
		if (*err)
			goto fail;
	}
	*err = ks_cpu_maps_size(skel->obj);
	if (*err)
		goto fail;
	*err = keysteer_bpf__load(skel);
	if (!*err)
		return skel;
fail:
	keysteer_bpf__destroy(skel);
	return NULL;
}
