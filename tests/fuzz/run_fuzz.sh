#!/usr/bin/env bash
# run_fuzz.sh - runs the fuzzers and prints one PASS/FAIL/SKIP line each,
# with '#' lines for the executions (tests/run.sh counts the result lines).
#
#   tests/fuzz/run_fuzz.sh --tier             the bounded run of the test
#                                             command (~62 s of fuzzing, ~70 s on 2 cores)
#   tests/fuzz/run_fuzz.sh --seconds S [--seed N]
#                                             each fuzzer S seconds (make fuzz)
#
# dfuzz (differential, the datapath against tests/fuzz/ref_mc.c) runs with a
# fixed seed, three times: at --sample 1 (every key traced), at --sample 3,
# where the multi-get key runs count keys without sampling each, and with
# --slog, the sample log on and tracing off as an agent runs (the express
# path samples lone gets itself only so); each libFuzzer harness build/fuzz/fz_* starts from its seed
# corpus tests/fuzz/corpus/NAME. In the bounded run the corpus is a fresh
# copy and libFuzzer's seed is fixed; the long run keeps growing
# build/fuzz/corpus/NAME. Reproducers (dfuzz findings, libFuzzer crash
# inputs) go to build/fuzz/findings/.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
BUILD=${OUT:-build}
FZ=$BUILD/fuzz

tier=0 seconds=600 seed=1
dfuzz_seconds= harness_seconds=
while [ $# -gt 0 ]; do
	case $1 in
	--tier) tier=1 ;;
	--seconds) seconds=$2; shift ;;
	--seed) seed=$2; shift ;;
	-h | --help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "run_fuzz.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
	shift
done
if [ "$tier" -eq 1 ]; then
	# a budget in the whole run's 30 minutes (docs/testing.md, "The whole
	# run's time budget"): 24 + 8 + 6 + 8 x 3 s since 3 Dec (36 + 12 + 8 x 4
	# before, no --slog run); the long runs are make fuzz's
	dfuzz_seconds=${FUZZ_DFUZZ_SECONDS:-24}
	sampled_seconds=${FUZZ_DFUZZ_SAMPLED_SECONDS:-8}
	slog_seconds=${FUZZ_DFUZZ_SLOG_SECONDS:-6}
	harness_seconds=${FUZZ_HARNESS_SECONDS:-3}
else
	dfuzz_seconds=$seconds
	sampled_seconds=$seconds
	slog_seconds=$seconds
	harness_seconds=$seconds
fi
mkdir -p "$FZ/findings"

# set when anything FAILs: the exit status says so too (make fuzz-long)
failed=0

# ---- the differential fuzzer ----
# dfuzz_one NAME SECONDS ARGS...: one dfuzz run reported as NAME. Its exit
# status counts: a dfuzz that crashes (or exits non-zero without its own
# FAIL line) is a FAIL, whatever it printed before.
dfuzz_one() {
	local name=$1 secs=$2 log rc
	shift 2
	log=$(mktemp)
	mkdir -p "$FZ/findings/$name"
	"$FZ/dfuzz" --seed "$seed" --seconds "$secs" "$@" \
		--findings "$FZ/findings/$name" --name "$name" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	if [ "$rc" -ne 0 ] && ! grep -q "^FAIL $name:" "$log"; then
		echo "FAIL $name: dfuzz exited with status $rc$([ "$rc" -gt 128 ] && echo " (signal $((rc - 128)))") without reporting a failure"
	fi
	[ "$rc" -eq 0 ] || failed=1
	rm -f "$log"
}
if [ -x "$FZ/dfuzz" ]; then
	dfuzz_one dfuzz "$dfuzz_seconds"
	dfuzz_one dfuzz_sample3 "$sampled_seconds" --sample 3
	dfuzz_one dfuzz_slog "$slog_seconds" --slog
else
	echo "FAIL dfuzz: $FZ/dfuzz is missing; run 'make'"
	echo "FAIL dfuzz_sample3: $FZ/dfuzz is missing; run 'make'"
	echo "FAIL dfuzz_slog: $FZ/dfuzz is missing; run 'make'"
	failed=1
fi

# ---- the libFuzzer harnesses ----
runtime=$(clang -print-resource-dir 2>/dev/null)/lib/linux/libclang_rt.fuzzer-$(uname -m).a

# seed_of NAME FILE: the seed in tests/fuzz/corpus/NAME with FILE's bytes,
# if one has them (a crash while libFuzzer read the seed corpus).
seed_of() {
	local f
	for f in tests/fuzz/corpus/"$1"/*; do
		[ -f "$f" ] && cmp -s "$f" "$2" && { echo "$f"; return; }
	done
}

# fuzz_one NAME: runs $FZ/fz_NAME for harness_seconds and reports. A
# failure says what happened in words (crashed on a seed, crashed on an
# input the fuzzer made after N executions, timed out, ran out of memory,
# never ran an input at all), with the reproducer and the command that
# replays it. libFuzzer prints no 'Done' line when it stops on a finding;
# its executions then come from stat::number_of_executed_units.
fuzz_one() {
	local name=$1 bin=$FZ/fz_$1 corpus log rc runs secs art what from_seed
	log=$(mktemp)
	if [ "$tier" -eq 1 ]; then
		corpus=$(mktemp -d)
		cp tests/fuzz/corpus/"$name"/* "$corpus"/ 2>/dev/null
		set -- -seed="$seed"
	else
		corpus=$FZ/corpus/$name
		mkdir -p "$corpus"
		cp -n tests/fuzz/corpus/"$name"/* "$corpus"/ 2>/dev/null
		set --
	fi
	# -timeout: one input may take 10 s at most; the outer timeout
	# catches a harness that hangs outside libFuzzer's own loop
	timeout --kill-after=10 $((harness_seconds + 60)) "$bin" "$@" \
		-max_total_time="$harness_seconds" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$FZ/findings/$name-" \
		"$corpus" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
	secs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\2/p' "$log" | tail -1)
	art=$(sed -n "s/.*Test unit written to \(.*\)$/\1/p" "$log" | tail -1)
	if [ "$rc" -eq 0 ] && [ -n "$runs" ] && [ -z "$art" ]; then
		echo "# fz_$name: $runs executions in ${secs}s ($((runs / (secs > 0 ? secs : 1)))/s), corpus $(ls "$corpus" | wc -l) inputs"
		echo "PASS fz_$name"
	else
		[ -n "$runs" ] ||
			runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
		# else the last status line ("#4096	pulse ...")
		[ -n "$runs" ] ||
			runs=$(sed -n 's/^#\([0-9][0-9]*\)[[:space:]].*/\1/p' "$log" | tail -1)
		# the sanitizer's or the harness's own words, then where the input is
		grep -m4 -E '^(==[0-9]+== ?ERROR|SUMMARY|fz: |.*runtime error:)' "$log" | sed 's/^/# /'
		from_seed=
		[ -n "$art" ] && [ -f "$art" ] && from_seed=$(seed_of "$name" "$art")
		case $art in
		*/"$name"-timeout-*) what="timed out (over -timeout=10 s)" ;;
		*/"$name"-oom-*) what="ran out of memory (over -rss_limit_mb=2048)" ;;
		*/"$name"-leak-*) what="leaked memory" ;;
		*/"$name"-slow-unit-*) what="ran slow" ;;
		"") what= ;;
		*) what="crashed" ;;
		esac
		if [ -n "$art" ] && [ -n "$from_seed" ]; then
			what="$what on the seed $from_seed, while libFuzzer read the seed corpus (${runs:-?} executions): the harness refuses a seed"
		elif [ -n "$art" ]; then
			what="$what on an input the fuzzer made, after ${runs:-?} executions"
		elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
			what="killed by the outer timeout ($((harness_seconds + 60)) s) after ${runs:-no counted} executions: a hang outside libFuzzer's loop"
		elif [ -z "$runs" ]; then
			# no input ran: the harness's start failed (or a missing
			# library); its last words say why
			what="no executions: the harness stopped before it ran an input (its last words above)"
			tail -n 3 "$log" | sed 's/^/# /'
		else
			what="stopped after $runs executions without a finding or libFuzzer's 'Done' line"
		fi
		echo "FAIL fz_$name: exit $rc, $what; reproducer ${art:-(none written)}${art:+; replay: $bin $art}"
		failed=1
	fi
	[ "$tier" -eq 1 ] && rm -rf "$corpus"
	rm -f "$log"
}

for src in tests/fuzz/fz_*.c; do
	name=$(basename "$src" .c)
	name=${name#fz_}
	if [ "$name" = http ] && [ "$(id -u)" -ne 0 ]; then
		echo "SKIP fz_$name: needs root for a network namespace of its own"
	elif [ -x "$FZ/fz_$name" ]; then
		fuzz_one "$name"
	elif [ ! -f "$runtime" ]; then
		# make fuzz builds no harness without it; that is a missing
		# package, not something the machine cannot have
		echo "FAIL fz_$name: clang's libFuzzer runtime ($runtime) is missing; run 'make deps' (Debian: libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev)"
		failed=1
	else
		echo "FAIL fz_$name: $FZ/fz_$name is missing; run 'make fuzz'"
		failed=1
	fi
done
exit "$failed"
