#!/usr/bin/env bash
# run.sh - run keysteer's test tiers and add up their results.
#
#   tests/run.sh [format] [unit] [compat] [prog] [fuzz] [e2e]   (no argument: all, in that order)
#   tests/run.sh test_steer test_ring_cli ...   those e2e scripts alone
#
# format: every C file as .clang-format says (tests/format_check.sh), and
# user/ in the layout docs/design.md gives it (tests/layout_check.py).
#
# compat: the ring builder against Debian's libmemcached (tests/compat).
# fuzz: a bounded run of the fuzzers (tests/fuzz/run_fuzz.sh --tier, about
# 62 s of fuzzing: 24 + 8 + 6 + 8 x 3 s; docs/fuzzing.md), limited to FUZZ_TIMEOUT.
#
# Every test prints one line "PASS name", "FAIL name: why" or "SKIP name: why";
# this script echoes all output, counts those lines and ends with exactly one
# line "N passed, N failed, N skipped". A tier program that exits non-zero
# without printing any FAIL line (it crashed, or died before its checks) counts
# as one more failure, named after it; so does one that runs past its time
# limit (E2E_TIMEOUT per e2e script unless its header says "# e2e-timeout: N",
# TIER_TIMEOUT for unit and prog). Exit status is non-zero when anything failed or nothing passed
# (a run where everything skipped has tested nothing).
#
# Each unit (format, layout, unit_test, ring_compat, prog_test, fuzz, every
# tests/e2e/test_*.sh) has a plan, tests/plans/UNIT.plan: the names it must report,
# one a line. After the unit, a planned name that never came is a FAIL, so is
# a PASS or SKIP of a name the plan lacks, a name reported twice, and a unit
# without a plan (docs/testing.md; tests/plans/update.sh rewrites plans).
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
# seconds for the whole fuzz tier: a guard against a hang, not a bound on
# speed. The tier fuzzes for a fixed ~62 s (run_fuzz.sh --tier;
# ~100 s when this limit was set); on a
# loaded 2-core machine (load average 36, other builds beside it) the
# starts of dfuzz and the eight sanitized harnesses took it past 150 s.
FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-300}

tiers=("$@")
[ ${#tiers[@]} -eq 0 ] && tiers=(format unit compat prog fuzz e2e)
for tier in "${tiers[@]}"; do
	case $tier in
	format | unit | compat | prog | fuzz | e2e) ;;
	*)
		[[ "$tier" == test_* && -f tests/e2e/$tier.sh ]] && continue
		echo "run.sh: unknown tier '$tier'; use format, unit, compat, prog, fuzz, e2e or the name of a tests/e2e/test_*.sh" >&2
		exit 2
		;;
	esac
done

passed=0 failed=0 skipped=0

# A program of ours that faults inside a script whose retries or output
# checks hide it (a client library that crashed at every close did, 3 Dec)
# is a failure all the same: the kernel logs every fault. kernel_log_stamp
# is the kernel log's last time stamp; crashes_since NAME STAMP prints a
# FAIL for each fault of one of this tree's programs logged after it.
kernel_log_stamp() {
	dmesg 2>/dev/null | sed -n '$s/^\[ *\([0-9.]*\)\].*/\1/p'
}
crashes_since() {
	[ -n "$2" ] || return 0
	dmesg 2>/dev/null | awk -v unit="$1" -v t0="$2" '
		match($0, /^\[ *[0-9.]+\]/) {
			t = substr($0, 2, RLENGTH - 2) + 0
			if (t <= t0 + 0)
				next
			if ($0 !~ /segfault at|general protection|trap (invalid|divide|int3)/)
				next
			line = $0
			sub(/^\[ *[0-9.]+\] */, "", line)
			if (line !~ /^(ks_|agent\[|prog_test|unit_test|etcd_test|ring_compat|bench\[|dfuzz|fz_|fleet_scale|view_refresh|acc_gen|client_bench)/)
				next
			$0 = line
			print "FAIL " unit "_no_crash: a program faulted during it (kernel log: " $0 ")"
		}'
}

# run_one NAME LIMIT CMD...: runs CMD for at most LIMIT seconds, prints its
# output and counts its result lines. Output goes through a file, not a
# pipe, so a stray process that inherited the pipe could not hang the run.
run_one() {
	local name=$1 limit=$2 out rc p f s k0 t0=$SECONDS
	shift 2
	out=$(mktemp)
	echo "=== $name"
	k0=$(kernel_log_stamp)
	timeout --signal=TERM --kill-after=20 "$limit" "$@" >"$out" 2>&1
	rc=$?
	# each unit's time, so the whole run's 30 minutes can be budgeted
	echo "--- $name took $((SECONDS - t0)) s (limit $limit s)" >>"$out"
	crashes_since "$name" "$k0" >>"$out"
	cat "$out"
	p=$(grep -c '^PASS ' "$out")
	f=$(grep -c '^FAIL ' "$out")
	s=$(grep -c '^SKIP ' "$out")
	# timeout(1) exits 124 (137 after its KILL): a hang is always a failure.
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "FAIL $name: timed out after ${limit}s"
		f=$((f + 1))
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL $name: exited with status $rc without reporting a failure"
		f=1
	fi
	plan_check "$name" "$out" >"$out.plan"
	cat "$out.plan"
	f=$((f + $(grep -c '^FAIL ' "$out.plan")))
	rm -f "$out" "$out.plan"
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
}

# plan_check UNIT OUT: a FAIL line for each way OUT (the unit's output)
# departs from tests/plans/UNIT.plan. A FAIL of a name the plan lacks is no
# departure: it is already a failure (a setup step, say, that has no PASS).
plan_check() {
	local name=$1 out=$2 plan=tests/plans/$1.plan
	if [ ! -f "$plan" ]; then
		echo "FAIL $name: no plan $plan (write it with tests/plans/update.sh)"
		return 1
	fi
	awk -v unit="$name" -v plan="$plan" '
		FNR == NR {
			if ($0 !~ /^[ \t]*(#|$)/ && !($1 in planned))
				planned[order[++np] = $1] = 1
			next
		}
		/^(PASS|FAIL|SKIP) / {
			n = $2
			sub(/:$/, "", n)
			if (++seen[n] == 2)
				print "FAIL " n ": reported more than once by " unit
			if (!(n in planned) && $1 != "FAIL" && seen[n] == 1)
				print "FAIL " n ": reported by " unit " but not in " plan
		}
		END {
			for (i = 1; i <= np; i++)
				if (!(order[i] in seen))
					print "FAIL " order[i] ": planned in " plan " but never reported"
		}' "$plan" "$out"
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
		# guards against a hang, not bounds: clang-format over every
		# file took more than 120 s beside this session's e2e runs and
		# stress-ng (load 16)
		run_one format 600 bash tests/format_check.sh
		run_one layout 300 /usr/bin/python3 tests/layout_check.py
		;;
	unit) run_binary unit_test "$BUILD/tests/unit_test" ;;
	compat) run_binary ring_compat "$BUILD/tests/ring_compat" ;;
	prog) run_binary prog_test "$BUILD/tests/prog_test" ;;
	fuzz) run_one fuzz "$FUZZ_TIMEOUT" bash tests/fuzz/run_fuzz.sh --tier ;;
	e2e) run_e2e ;;
	# one script by name (checked above): its own limit, as in the e2e tier
	*) run_one "$tier" "$(e2e_limit "tests/e2e/$tier.sh")" bash "tests/e2e/$tier.sh" ;;
	esac
done

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
