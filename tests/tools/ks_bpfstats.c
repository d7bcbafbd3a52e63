// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ks_bpfstats - runs a command with the kernel's BPF run-time statistics
 * on, and prints a program's run_time_ns and run_cnt on request:
 *
 *   ks_bpfstats run CMD [ARG]...   CMD with the statistics on
 *   ks_bpfstats show PROG_ID       "run_time_ns run_cnt" of one program
 *
 * 'run' holds a BPF_ENABLE_STATS fd while CMD runs: the effect of
 * sysctl kernel.bpf_stats_enabled=1 that ends with this process, however
 * it ends, so the sysctl is never written and nothing is left on. Needs
 * root. Used by tests/bench/host_bench.sh (docs/benchmarks.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>

static int show(const char *arg)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	char *end;
	unsigned long id = strtoul(arg, &end, 10);
	int fd;

	if (*end || !id) {
		fprintf(stderr, "ks_bpfstats: '%s' is not a program id\n", arg);
		return 2;
	}
	fd = bpf_prog_get_fd_by_id((__u32)id);
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len)) {
		fprintf(stderr, "ks_bpfstats: program %lu: %s\n", id,
			strerror(errno));
		return 1;
	}
	close(fd);
	printf("%llu %llu\n", (unsigned long long)info.run_time_ns,
	       (unsigned long long)info.run_cnt);
	return 0;
}

static int run(char **argv)
{
	int fd = bpf_enable_stats(BPF_STATS_RUN_TIME), status;
	pid_t pid;

	if (fd < 0) {
		fprintf(stderr, "ks_bpfstats: BPF_ENABLE_STATS: %s\n",
			strerror(errno));
		return 1;
	}
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(fd);
		execvp(argv[0], argv);
		fprintf(stderr, "ks_bpfstats: %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return 1;
	close(fd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "show"))
		return show(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "run"))
		return run(argv + 2);
	fprintf(stderr, "usage: ks_bpfstats run CMD [ARG]... | show PROG_ID\n");
	return 2;
}
