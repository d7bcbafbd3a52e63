#!/usr/bin/env bash
# run.sh - run keysteer's test tiers and add up their results.
#
#   tests/run.sh [format] [unit] [compat] [prog] [fuzz] [e2e]   (no argument: all, in that order)
#
# format: every C file as .clang-format says (tests/format_check.sh), and
# user/ in the layout docs/design.md gives it (tests/layout_check.py).
#
# compat: the ring builder against Debian's libmemcached (tests/compat).
# fuzz: a bounded run of the fuzzers (tests/fuzz/run_fuzz.sh --tier, about
# 75 s; docs/fuzzing.md), limited to FUZZ_TIMEOUT.
#
# Every test prints one line "PASS name", "FAIL name: why" or "SKIP name: why";
# this script echoes all output, counts those lines and ends with exactly one
# line "N passed, N failed, N skipped". A tier program that exits non-zero
# without printing any FAIL line (it crashed, or died before its checks) counts
# as one more failure, named after it; so does one that runs past its time
# limit (E2E_TIMEOUT per e2e script unless its header says "# e2e-timeout: N",
# TIER_TIMEOUT for unit and prog). Exit status is non-zero when anything failed or nothing passed
# (a run where everything skipped has tested nothing).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
BUILD=${OUT:-build}
E2E_TIMEOUT=${E2E_TIMEOUT:-300}   # seconds per e2e script

if [ "$(id -u)" -ne 0 ]; then
	echo "run.sh: the tests load BPF programs and create network namespaces;" \
		"run as root (sudo make test)" >&2
	exit 1
fi

TIER_TIMEOUT=${TIER_TIMEOUT:-900} # seconds for the unit or prog binary
FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-150} # seconds for the whole fuzz tier

tiers=("$@")
[ ${#tiers[@]} -eq 0 ] && tiers=(format unit compat prog fuzz e2e)
for tier in "${tiers[@]}"; do
	case $tier in
	format | unit | compat | prog | fuzz | e2e) ;;
	*)
		echo "run.sh: unknown tier '$tier'; use format, unit, compat, prog, fuzz or e2e" >&2
		exit 2
		;;
	esac
done

passed=0 failed=0 skipped=0

# run_one NAME LIMIT CMD...: runs CMD for at most LIMIT seconds, prints its
# output and counts its result lines. Output goes through a file, not a
# pipe, so a stray process that inherited the pipe could not hang the run.
run_one() {
	local name=$1 limit=$2 out rc p f s
	shift 2
	out=$(mktemp)
	echo "=== $name"
	timeout --signal=TERM --kill-after=20 "$limit" "$@" >"$out" 2>&1
	rc=$?
	cat "$out"
	p=$(grep -c '^PASS ' "$out")
	f=$(grep -c '^FAIL ' "$out")
	s=$(grep -c '^SKIP ' "$out")
	rm -f "$out"
	# timeout(1) exits 124 (137 after its KILL): a hang is always a failure.
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "FAIL $name: timed out after ${limit}s"
		f=$((f + 1))
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $name: exited with status $rc without reporting a failure"
		f=1
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
}

# A tier binary that was not built is a failure, not a silent pass.
run_binary() {
	local name=$1 bin=$2
	if [ ! -x "$bin" ]; then
		echo "=== $name"
		echo "FAIL $name: $bin is missing; run 'make' first"
		failed=$((failed + 1))
		return
	fi
	run_one "$name" "$TIER_TIMEOUT" "$bin"
}

# A script whose work is longer than E2E_TIMEOUT on a loaded 2-core machine
# declares its own limit in a header line "# e2e-timeout: SECONDS".
e2e_limit() {
	local n
	n=$(sed -n '1,40s/^# e2e-timeout: *\([0-9][0-9]*\) *$/\1/p' "$1" | head -n 1)
	echo "${n:-$E2E_TIMEOUT}"
}

run_e2e() {
	local script found=0
	for script in tests/e2e/test_*.sh; do
		[ -f "$script" ] || continue
		found=1
		run_one "$(basename "$script" .sh)" "$(e2e_limit "$script")" bash "$script"
	done
	if [ "$found" -eq 0 ]; then
		echo "FAIL e2e: no tests/e2e/test_*.sh found"
		failed=$((failed + 1))
	fi
}

for tier in "${tiers[@]}"; do
	case $tier in
	format)
		run_one format 120 bash tests/format_check.sh
		run_one layout 60 /usr/bin/python3 tests/layout_check.py
		;;
	unit) run_binary unit_test "$BUILD/tests/unit_test" ;;
	compat) run_binary ring_compat "$BUILD/tests/ring_compat" ;;
	prog) run_binary prog_test "$BUILD/tests/prog_test" ;;
	fuzz) run_one fuzz "$FUZZ_TIMEOUT" bash tests/fuzz/run_fuzz.sh --tier ;;
	e2e) run_e2e ;;
	esac
done

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
