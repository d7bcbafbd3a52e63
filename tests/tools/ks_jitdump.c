// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ks_jitdump - one program's JIT image from a BPF object, for a
 * disassembler: this machine's bpftool has no libbfd, so `bpftool prog
 * dump jited` cannot show it (issue 27, the fixed cost of entering
 * keysteer's program).
 *
 *   ks_jitdump OBJ PROG FILE
 *
 * Loads OBJ with no map pinned (nothing shared is touched) and only PROG
 * of its programs, writes PROG's JIT image (every function, the main one
 * first, as the kernel lays them out) to FILE, and prints the image's
 * size and each function's length and offset in FILE. Then, on x86-64:
 *
 *   objdump -b binary -m i386:x86-64 -D FILE
 *
 * (calls and jumps out of the image show as offsets, not names). Needs
 * root.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "dp/cpu_maps.h"

static int silent(enum libbpf_print_level l, const char *fmt, va_list ap)
{
	return l == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

/* PROG's image and function lengths into FILE and stdout; 0 or -errno. */
static int dump(int fd, const char *file)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), i, nf, jl, off = 0;
	unsigned char *img = NULL;
	__u32 *lens = NULL;
	FILE *f = NULL;
	int err;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	jl = info.jited_prog_len;
	nf = info.nr_jited_func_lens;
	if (!jl)
		return -ENOTSUP; /* no JIT */
	img = malloc(jl);
	lens = calloc(nf ? nf : 1, sizeof(*lens));
	if (!img || !lens) {
		err = -ENOMEM;
		goto out;
	}
	memset(&info, 0, sizeof(info));
	info.jited_prog_len = jl;
	info.jited_prog_insns = (__u64)(unsigned long)img;
	info.nr_jited_func_lens = nf;
	info.jited_func_lens = (__u64)(unsigned long)lens;
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		err = -errno;
		goto out;
	}
	f = fopen(file, "w");
	if (!f || fwrite(img, 1, jl, f) != jl) {
		err = -errno;
		goto out;
	}
	printf("jited %u bytes, %u functions, verified_insns %u\n", jl, nf,
	       info.verified_insns);
	for (i = 0; i < nf; i++) {
		printf("function %u: offset %u, %u bytes\n", i, off, lens[i]);
		off += lens[i];
	}
	err = 0;
out:
	if (f && fclose(f) && !err)
		err = -errno;
	free(img);
	free(lens);
	return err;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map;
	int err;

	if (argc != 4) {
		fprintf(stderr, "usage: ks_jitdump OBJ PROG FILE\n");
		return 2;
	}
	libbpf_set_print(silent);
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "ks_jitdump: cannot open %s: %s\n", argv[1],
			strerror(errno));
		return 1;
	}
	prog = bpf_object__find_program_by_name(obj, argv[2]);
	if (!prog) {
		fprintf(stderr, "ks_jitdump: %s has no program %s\n", argv[1],
			argv[2]);
		err = -ENOENT;
		goto out;
	}
	/* private maps: nothing pinned, nothing reused */
	bpf_object__for_each_map (map, obj)
		bpf_map__set_pin_path(map, NULL);
	/* the sample log at this host's size, as every loader sizes it */
	err = ks_cpu_maps_size(obj);
	if (err) {
		fprintf(stderr, "ks_jitdump: sizing the sample log of %s: %s\n",
			argv[1], strerror(-err));
		goto out;
	}
	bpf_object__for_each_program (prog, obj)
		bpf_program__set_autoload(
			prog, !strcmp(bpf_program__name(prog), argv[2]));
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "ks_jitdump: loading %s failed: %s\n", argv[1],
			strerror(-err));
		goto out;
	}
	prog = bpf_object__find_program_by_name(obj, argv[2]);
	err = dump(bpf_program__fd(prog), argv[3]);
	if (err)
		fprintf(stderr, "ks_jitdump: %s: %s\n", argv[3],
			strerror(-err));
out:
	bpf_object__close(obj);
	return err ? 1 : 0;
}
