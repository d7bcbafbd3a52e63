#!/usr/bin/env bash
# format_check.sh - every C file of the tree as .clang-format says: prints
# "PASS format" or "FAIL format: ..." naming the files to run `make format`
# on (tests/run.sh counts the line). Needs clang-format (clang's package).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

if ! command -v clang-format >/dev/null 2>&1; then
	echo "FAIL format: clang-format is missing; install clang-format (make deps)"
	exit 1
fi
# One clang-format for all the files (xargs splits only past ARG_MAX): one
# process a file cost 15 s of the run quiet and 35 s at load 15, this 2 s.
# clang-format goes on past a file that differs and names each in a
# "FILE:LINE:COL: error: code should be clang-formatted" line; any other
# failure (an unreadable file or .clang-format) exits non-zero without one.
out=$( (git ls-files -z 'bpf/*.[ch]' 'user/*.[ch]' 'tests/*.[ch]' 2>/dev/null ||
	find bpf user tests -name '*.[ch]' -print0) |
	xargs -0 clang-format --dry-run -Werror 2>&1 >/dev/null)
rc=$?
mapfile -t bad < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' <<<"$out" | sort -u)
if [ "$rc" -eq 0 ] && [ ${#bad[@]} -eq 0 ]; then
	echo "PASS format"
	exit 0
fi
if [ ${#bad[@]} -eq 0 ]; then
	echo "FAIL format: clang-format exited $rc: $(head -n 3 <<<"$out" | tr '\n' ' ')"
	exit 1
fi
echo "FAIL format: ${#bad[@]} file(s) differ from .clang-format (run 'make format'): ${bad[*]:0:10}"
exit 1
