// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bench_calls.c - `bench --calls NAMES`: how many BPF-to-BPF calls and
 * bpf_loop callbacks ks_ingress makes per packet of each scenario. Only a
 * build made by tests/bench/calls_build.sh can say: there every function
 * that stays a function of its own (each __noinline one, each bpf_loop
 * callback) counts its entries in the per-CPU array ks_callcount, slot
 * by slot as NAMES lists them. (fentry counters would need no such build,
 * but loading a tracing program is refused on the machines of issue 27.)
 * The counts are read around each timing, so they cover exactly the
 * timed packets. A call and its return are what a mitigated return
 * (retpolines, Safe RET) makes dear: this is the figure to cut.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "keysteer.skel.h"
#include "bench.h"

static struct {
	int map_fd, ncpu, n;
	char name[BENCH_CALLS_MAX][64];
} cc = { .map_fd = -1 };

int bench_calls_attach(struct bench_env *e, const char *names)
{
	struct bpf_map *m = bpf_object__find_map_by_name(e->ks->obj,
							 "ks_callcount");
	FILE *f;
	char line[64];

	if (!m) {
		fprintf(stderr,
			"bench --calls: this build has no call counters; "
			"run tests/bench/calls_build.sh\n");
		return -ENOENT;
	}
	f = fopen(names, "r");
	if (!f) {
		fprintf(stderr, "bench --calls: %s: %s\n", names,
			strerror(errno));
		return -errno;
	}
	while (cc.n < BENCH_CALLS_MAX && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		snprintf(cc.name[cc.n++], sizeof(cc.name[0]), "%s", line);
	}
	fclose(f);
	cc.map_fd = bpf_map__fd(m);
	cc.ncpu = e->ncpu;
	return cc.n && cc.ncpu > 0 ? 0 : -EINVAL;
}

int bench_calls_n(void)
{
	return cc.n;
}

const char *bench_calls_name(int i)
{
	return i >= 0 && i < cc.n ? cc.name[i] : "?";
}

/* counts[i]: entries of function i so far, over every CPU. */
int bench_calls_read(__u64 *counts)
{
	__u64 *v = calloc(cc.ncpu, sizeof(*v));
	int i, c, err = 0;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < cc.n && !err; i++) {
		__u32 k = (__u32)i;

		if (bpf_map_lookup_elem(cc.map_fd, &k, v)) {
			err = -errno;
			break;
		}
		counts[i] = 0;
		for (c = 0; c < cc.ncpu; c++)
			counts[i] += v[c];
	}
	free(v);
	return err;
}
