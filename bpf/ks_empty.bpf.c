// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The benchmark baseline: the cheapest XDP program there is. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

SEC("xdp")
int ks_empty(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
