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
bad=()
while IFS= read -r f; do
	if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
		bad+=("$f")
	fi
done < <(git ls-files 'bpf/*.[ch]' 'user/*.[ch]' 'tests/*.[ch]' 2>/dev/null ||
	find bpf user tests -name '*.[ch]')
if [ ${#bad[@]} -eq 0 ]; then
	echo "PASS format"
	exit 0
fi
echo "FAIL format: ${#bad[@]} file(s) differ from .clang-format (run 'make format'): ${bad[*]:0:10}"
exit 1
