// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ks_vcount - the verifier's instructions processed for every program of
 * a BPF object, loaded with no map pinned (nothing shared is touched):
 *
 *   ks_vcount [--frames] [OBJ]...     (default build/keysteer.bpf.o)
 *
 * One line per program: object, program, verified_insns (the kernel's
 * bpf_prog_info), and the log's own "processed N insns" line, which
 * log_level 4 (BPF_LOG_STATS) asks for. --frames: then a line per
 * function of the program, its stack frame in bytes as the log's "stack
 * depth" line gives it, largest first (docs/benchmarks.md "The stack":
 * the kernel sums a call chain's frames, each rounded up to 16, against
 * 512; a frame that inlines a bpf_loop() shows 24 bytes more here than
 * that check counted). Needs root.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "dp/cpu_maps.h"

#define LOG_SIZE (1 << 20)

static int silent(enum libbpf_print_level l, const char *fmt, va_list ap)
{
	return l == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

static int frames;

/* The log's line that starts with what, or "". */
static const char *log_line(const char *log, const char *what, char *buf,
			    size_t len)
{
	const char *p = strstr(log, what);
	size_t n;

	buf[0] = '\0';
	if (!p)
		return buf;
	n = strcspn(p, "\n");
	snprintf(buf, len, "%.*s", (int)n, p);
	return buf;
}

struct frame {
	const char *name;
	long bytes;
};

static int frame_cmp(const void *a, const void *b)
{
	const struct frame *x = a, *y = b;

	return (y->bytes > x->bytes) - (y->bytes < x->bytes);
}

/* Each function of prog (fd) with its frame from the log's "stack depth
 * A+B+..." line, in the order of the program's func_info, largest first. */
static void print_frames(int fd, const char *log)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), n, i;
	struct bpf_func_info *fi = NULL;
	struct frame *f = NULL;
	struct btf *btf = NULL;
	const char *p = strstr(log, "stack depth ");
	char *end;

	if (!p || bpf_obj_get_info_by_fd(fd, &info, &len))
		return;
	n = info.nr_func_info;
	fi = calloc(n, sizeof(*fi));
	f = calloc(n, sizeof(*f));
	if (!fi || !f)
		goto out;
	memset(&info, 0, sizeof(info));
	info.nr_func_info = n;
	info.func_info_rec_size = sizeof(*fi);
	info.func_info = (unsigned long)fi;
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		goto out;
	btf = btf__load_from_kernel_by_id(info.btf_id);
	if (!btf)
		goto out;
	p += strlen("stack depth ");
	for (i = 0; i < n; i++) {
		const struct btf_type *t = btf__type_by_id(btf, fi[i].type_id);

		f[i].name = t ? btf__name_by_offset(btf, t->name_off) : "?";
		f[i].bytes = strtol(p, &end, 10);
		p = *end == '+' ? end + 1 : end;
	}
	qsort(f, n, sizeof(*f), frame_cmp);
	for (i = 0; i < n; i++)
		printf("  %5ld %s\n", f[i].bytes, f[i].name);
out:
	btf__free(btf);
	free(f);
	free(fi);
}

static int count(const char *path)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map;
	char *logs[16] = {};
	int i = 0, err;

	obj = bpf_object__open_file(path, NULL);
	if (!obj) {
		fprintf(stderr, "ks_vcount: cannot open %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	/* private maps: nothing pinned, nothing reused */
	bpf_object__for_each_map (map, obj)
		bpf_map__set_pin_path(map, NULL);
	/* the sample log at this host's size, as every loader sizes it */
	err = ks_cpu_maps_size(obj);
	if (err) {
		fprintf(stderr, "ks_vcount: sizing the sample log of %s: %s\n",
			path, strerror(-err));
		goto out;
	}
	bpf_object__for_each_program (prog, obj) {
		if (i == 16)
			break;
		logs[i] = calloc(1, LOG_SIZE);
		if (logs[i]) {
			bpf_program__set_log_buf(prog, logs[i], LOG_SIZE);
			bpf_program__set_log_level(prog, 4);
		}
		i++;
	}
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "ks_vcount: loading %s failed: %s\n", path,
			strerror(-err));
		goto out;
	}
	i = 0;
	bpf_object__for_each_program (prog, obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		char line[160];

		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			info.verified_insns = 0;
		printf("%s %s verified_insns=%u xlated=%u  [%s]\n", path,
		       bpf_program__name(prog), info.verified_insns,
		       info.xlated_prog_len,
		       i < 16 && logs[i] ? log_line(logs[i], "processed ", line,
						    sizeof(line))
					 : "");
		if (frames && i < 16 && logs[i])
			print_frames(bpf_program__fd(prog), logs[i]);
		i++;
	}
out:
	for (i = 0; i < 16; i++)
		free(logs[i]);
	bpf_object__close(obj);
	return err ? -1 : 0;
}

int main(int argc, char **argv)
{
	int i, rc = 0;

	libbpf_set_print(silent);
	if (argc > 1 && !strcmp(argv[1], "--frames")) {
		frames = 1;
		argv++;
		argc--;
	}
	if (argc < 2)
		return count("build/keysteer.bpf.o") ? 1 : 0;
	for (i = 1; i < argc; i++)
		if (count(argv[i]))
			rc = 1;
	return rc;
}
