#!/usr/bin/env bash
# run_fuzz.sh - runs the fuzzers and prints one PASS/FAIL/SKIP line each,
# with '#' lines for the executions (tests/run.sh counts the result lines).
#
#   tests/fuzz/run_fuzz.sh --tier             the bounded run of the test
#                                             command (~80 s on 2 cores)
#   tests/fuzz/run_fuzz.sh --seconds S [--seed N]
#                                             each fuzzer S seconds (make fuzz)
#
# dfuzz (differential, the datapath against tests/fuzz/ref_mc.c) runs with a
# fixed seed, twice: at --sample 1 (every key traced) and at --sample 3,
# where the multi-get key runs count keys without sampling each; each libFuzzer harness build/fuzz/fz_* starts from its seed
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
	dfuzz_seconds=${FUZZ_DFUZZ_SECONDS:-36}
	sampled_seconds=${FUZZ_DFUZZ_SAMPLED_SECONDS:-12}
	harness_seconds=${FUZZ_HARNESS_SECONDS:-4}
else
	dfuzz_seconds=$seconds
	sampled_seconds=$seconds
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
else
	echo "FAIL dfuzz: $FZ/dfuzz is missing; run 'make'"
	echo "FAIL dfuzz_sample3: $FZ/dfuzz is missing; run 'make'"
	failed=1
fi

# ---- the libFuzzer harnesses ----
runtime=$(clang -print-resource-dir 2>/dev/null)/lib/linux/libclang_rt.fuzzer-$(uname -m).a

# fuzz_one NAME: runs $FZ/fz_NAME for harness_seconds and reports.
fuzz_one() {
	local name=$1 bin=$FZ/fz_$1 corpus log rc runs secs art
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
	if [ "$rc" -eq 0 ] && [ -n "$runs" ]; then
		echo "# fz_$name: $runs executions in ${secs}s ($((runs / (secs > 0 ? secs : 1)))/s), corpus $(ls "$corpus" | wc -l) inputs"
		echo "PASS fz_$name"
	else
		# the sanitizer's or the harness's own words, then where the input is
		grep -m3 -E '^(==[0-9]+==ERROR|SUMMARY|fz: |.*runtime error:)' "$log" | sed 's/^/# /'
		echo "FAIL fz_$name: exit $rc, ${runs:-no} executions; reproducer ${art:-(none written)}; replay: $bin ${art:-INPUT}"
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
