// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * t_stack.c - the BPF stack's headroom (issue 27, docs/benchmarks.md "The
 * stack"). The kernel refuses a program when any chain of BPF-to-BPF
 * calls (and bpf_loop() callbacks) needs more than 512 bytes of stack, its
 * frames each rounded up to 16; the sampled get's chain with a ring loaded
 * once stood at 512 exactly, so the next byte on it would have been
 * refused at load, with nothing to say so before.
 *
 * The kernel is the judge here, not a sum of ours: the Makefile builds the
 * object again with KS_STACK_MARGIN (stack_margin.h) bytes planted in each
 * program's own frame (bpf/keysteer.bpf.c, KS_STACK_PLANT), where every
 * chain of that program begins. That copy loads only if every chain has
 * the margin to spare. Each program is loaded alone from both objects
 * (maps private, nothing pinned), and its frame as the verifier's stats
 * give it must have grown by the margin: else the plant was folded away
 * and the load proves nothing. tests/prog/stack_control.sh is the
 * control: an object whose MD5 frame is back at 168 bytes must fail here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "ktest.h"
#include "groups.h"
#include "stack_margin.h"
#include "dp/cpu_maps.h"
#include "keysteer.skel.h"
#include "tests/keysteer_stack.skel.h"

#define TS_LOG (1 << 20)

/* The log's line that starts with what, copied into buf, or "". */
static const char *ts_line(const char *log, const char *what, char *buf,
			   size_t len)
{
	const char *p = strstr(log, what);

	buf[0] = '\0';
	if (p)
		snprintf(buf, len, "%.*s", (int)strcspn(p, "\n"), p);
	return buf;
}

/*
 * Program prog of the object in bytes loaded alone, every map private:
 * 0 and its own frame's bytes (the first figure of the verifier's "stack
 * depth" line) in *depth, or -errno with the verifier's log in log.
 */
static int ts_load(const void *bytes, size_t size, const char *name,
		   const char *prog, int *depth, char *log)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = name);
	struct bpf_program *p;
	struct bpf_object *obj;
	struct bpf_map *m;
	const char *d;
	int err, found = 0;

	log[0] = '\0';
	*depth = -1;
	obj = bpf_object__open_mem(bytes, size, &opts);
	if (!obj)
		return -errno;
	bpf_object__for_each_map (m, obj)
		bpf_map__set_pin_path(m, NULL);
	err = ks_cpu_maps_size(obj);
	if (err)
		goto out;
	bpf_object__for_each_program (p, obj) {
		bool it = !strcmp(bpf_program__name(p), prog);

		bpf_program__set_autoload(p, it);
		if (!it)
			continue;
		found = 1;
		bpf_program__set_log_buf(p, log, TS_LOG);
		bpf_program__set_log_level(p, 4); /* the stats alone */
	}
	err = found ? bpf_object__load(obj) : -ENOENT;
	d = strstr(log, "stack depth ");
	if (!err && d)
		*depth = atoi(d + strlen("stack depth "));
out:
	bpf_object__close(obj);
	return err;
}

static void ts_headroom(const char *prog, char *log)
{
	size_t base_sz, plant_sz;
	const void *base = keysteer_bpf__elf_bytes(&base_sz);
	const void *plant = keysteer_stack__elf_bytes(&plant_sz);
	int err, d0, d1;
	char name[64], line[160];

	snprintf(name, sizeof(name), "stack_headroom_%s", prog);
	kt_begin(name);
	err = ts_load(base, base_sz, "keysteer", prog, &d0, log);
	if (err) {
		kt_failf(__FILE__, __LINE__, "%s does not load: %s (%s)", prog,
			 strerror(-err),
			 ts_line(log, "combined stack", line, sizeof(line)));
		kt_end();
		return;
	}
	err = ts_load(plant, plant_sz, "keysteer_stack", prog, &d1, log);
	if (err) {
		const char *why = ts_line(log, "combined stack", line,
					  sizeof(line));

		kt_failf(
			__FILE__, __LINE__,
			"with %d bytes more in its frame %s is refused (%s): "
			"a chain of its calls has less than %d bytes of the "
			"kernel's 512 to spare (docs/benchmarks.md, The stack)",
			KS_STACK_MARGIN, prog, *why ? why : strerror(-err),
			KS_STACK_MARGIN);
		kt_end();
		return;
	}
	/* the control of the plant: had clang shared its bytes with other
	 * slots, the copy would load with no headroom at all */
	CHECK(d0 > 0 && d1 >= d0 + KS_STACK_MARGIN,
	      "%s's frame is %d bytes planted, %d not: the %d planted bytes "
	      "are not all in it, so its load proves nothing",
	      prog, d1, d0, KS_STACK_MARGIN);
	printf("# %s: own frame %d bytes, %d with the %d planted: loads\n",
	       prog, d0, d1, KS_STACK_MARGIN);
	kt_end();
}

void t_stack_group(void)
{
	static const char *const progs[] = { "ks_ingress", "ks_tc_ingress",
					     "ks_tc_egress" };
	char *log = malloc(TS_LOG);
	size_t i;

	if (!log) {
		kt_begin("stack_headroom");
		kt_failf(__FILE__, __LINE__, "out of memory");
		kt_end();
		return;
	}
	for (i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		ts_headroom(progs[i], log);
	free(log);
}
