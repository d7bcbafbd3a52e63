#!/usr/bin/env bash
# agent_big.sh - make bench-agent-big (docs/benchmarks.md, "The agent on
# big hosts"): build/tests/agent_big at each simulated CPU count, ROUNDS
# rounds; with --before REV also the same bench linked with REV's
# user/core/estimate.c and user/dp/collect.c (built here, in a temporary
# folder), run alternately with this tree's in every round, and the
# ratio this / before of user-space ms per interval per round. With the
# sample log (--slog-rate R, keys a second a CPU the drain's cost is
# scaled to; default 262,144, --sample auto's default target; 0 for
# none) every round runs the bench with the log, as the agent runs by
# default, and without it (--log-samples off), in alternating order; and
# with the log drained by one thread (--slog-threads 1) beside the
# agent's automatic count of drain threads (one per 16 CPUs).
#
#   sudo tests/bench/agent_big.sh [--cpus 2,16,64,128] [--rounds 3]
#        [--intervals 5] [--before REV] [--slog-rate 262144] [--json FILE]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUTD=$ROOT/${OUT:-build}
BIN=$OUTD/tests/agent_big
CPUS=2,16,64,128 ROUNDS=3 INTERVALS=5 BEFORE='' JSON_OUT='' SLOG_RATE=262144
# shellcheck source=bench_opts.sh
. "$ROOT/tests/bench/bench_opts.sh"
bench_opts '--cpus:CPUS --rounds:ROUNDS --intervals:INTERVALS
	--before:BEFORE --json:JSON_OUT --slog-rate:SLOG_RATE' "$@"
case $ROUNDS in '' | *[!0-9]* | 0) echo "agent_big.sh: --rounds wants a number >= 1" >&2; exit 2 ;; esac
case $SLOG_RATE in '' | *[!0-9]*) echo "agent_big.sh: --slog-rate wants a number >= 0" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "agent_big.sh: needs root (BPF maps)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "agent_big.sh: $BIN missing; run make tests first" >&2; exit 1; }
DIR=$(mktemp -d /tmp/ks_agent_big.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
trap 'exit 130' INT TERM HUP

if [ -n "$BEFORE" ]; then
	# REV's two files over this tree's objects: the archive's own
	# estimate.o is not pulled in once its symbols are defined
	git -C "$ROOT" rev-parse --verify -q "$BEFORE^{commit}" >/dev/null ||
		{ echo "agent_big.sh: --before: no commit $BEFORE" >&2; exit 2; }
	mkdir -p "$DIR/src/core" "$DIR/src/dp"
	for f in core/estimate dp/collect; do
		git -C "$ROOT" show "$BEFORE:user/$f.c" >"$DIR/src/$f.c" &&
			gcc -O2 -g -Wall -D_GNU_SOURCE -I"$OUTD" -I"$ROOT/bpf" \
				-I"$ROOT/user" -c "$DIR/src/$f.c" -o "$DIR/$(basename $f).o" ||
			{ echo "agent_big.sh: building $BEFORE's $f.c failed" >&2; exit 1; }
	done
	part=()
	# the Makefile's AGENT_PART: user/{cli,dp,net,agent}/*.c's objects
	for c in "$ROOT"/user/{cli,dp,net,agent}/*.c; do
		o=${c#"$ROOT"/user/}
		case $o in dp/collect.c) ;; *) part+=("$OUTD/user/${o%.c}.o") ;; esac
	done
	gcc -O2 -g "$OUTD/tests/obj/bench/agent_big.o" \
		"$OUTD/tests/obj/bench/agent_big_model.o" "$DIR/estimate.o" \
		"$DIR/collect.o" "${part[@]}" "$OUTD/libks.a" -o "$DIR/agent_big_before" \
		-lbpf -lelf -lz -lm -lcurl -ljansson -lmicrohttpd \
		-Wl,--wrap=bpf_map_lookup_elem,--wrap=bpf_map_update_elem \
		-Wl,--wrap=libbpf_num_possible_cpus ||
		{ echo "agent_big.sh: linking the $BEFORE bench failed" >&2; exit 1; }
fi

for ((r = 1; r <= ROUNDS; r++)); do
	args=(--cpus "$CPUS" --intervals "$INTERVALS" --obj "$OUTD/keysteer.bpf.o")
	nolog() {
		[ "$SLOG_RATE" = 0 ] || "$BIN" "${args[@]}" --no-kernel \
			--slog-rate 0 >"$DIR/nolog.$r" ||
			{ echo "agent_big.sh: round $r (no log) failed" >&2; exit 1; }
	}
	# one drain thread, against the agent's automatic count (this)
	one() {
		[ "$SLOG_RATE" = 0 ] || "$BIN" "${args[@]}" --no-kernel \
			--slog-rate "$SLOG_RATE" --slog-threads 1 >"$DIR/one.$r" ||
			{ echo "agent_big.sh: round $r (one drain thread) failed" >&2; exit 1; }
	}
	# the baselines first in odd rounds, second in even ones
	[ $((r % 2)) = 1 ] && nolog && one
	# the kernel's part once a round (the same code in all)
	"$BIN" "${args[@]}" --slog-rate "$SLOG_RATE" >"$DIR/this.$r" ||
		{ echo "agent_big.sh: round $r failed" >&2; exit 1; }
	[ $((r % 2)) = 0 ] && one && nolog
	if [ -n "$BEFORE" ]; then
		"$DIR/agent_big_before" "${args[@]}" --no-kernel >"$DIR/before.$r" ||
			{ echo "agent_big.sh: round $r (before) failed" >&2; exit 1; }
	fi
	echo "round $r of $ROUNDS done" >&2
done

/usr/bin/python3 "$ROOT/tests/bench/agent_big_report.py" "$DIR" "$ROUNDS" \
	"${BEFORE:+$BEFORE}" "$JSON_OUT"
