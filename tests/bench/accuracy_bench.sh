#!/bin/bash
# accuracy_bench.sh - `make bench-accuracy` (docs/accuracy.md): top-K
# accuracy at scale, exact by construction. acc_gen writes captures of
# 1,000,000 keys under Zipf 0.99 with a churn of never-repeated keys at 0x,
# 1x and 10x the hot traffic, each with its exact per-interval counts;
# `agent replay --interval` runs them through the datapath at --sample 1,
# 8 and 64; accuracy_score.py scores each run against the counts and
# prints the table. Needs root (replay loads the BPF program).
#
#   OUT=build tests/bench/accuracy_bench.sh [--docs docs/accuracy.md]
#
# HOT (requests per 1 s interval, default 1000000) and INTERVALS (6)
# scale it; about a minute and 2 GB of temporary files at the defaults.
#
# Then the load levels (LEVELS, keys/s: default 10k, 100k, 1M, 10M; no
# churn): the same traffic at each rate, replayed at --sample 8 and at
# --sample auto (AUTO, default "auto": its default target), so that the
# rate auto picks and the accuracy it keeps are side by side with the
# fixed rate's (docs/accuracy.md, "Adaptive sampling"). SECTIONS=load (or
# churn) runs one section only. With AUTO other than "auto" the load table
# is printed but not written into --docs: the docs' table is the default
# target's (other targets: docs/benchmarks.md, "The target's trade-off").
#
# The load levels' traffic is also placed on a ring of SHARDS shards
# (default 8, ketama): acc_gen counts every request for the shard that
# owns its key (the truth's S lines) and every replay follows the ring,
# so that each interval's per-shard load, with the datapath placing 1 in
# P of the sampled keys as `agent run` bounds it (--place-target, P set
# each interval from the keys sampled a second of the capture's clock),
# is scored against the exact requests per shard; auto is replayed once
# more with --place-target off (P 1: every sampled key placed) to compare
# (docs/accuracy.md, "Shard load with 1 in P placed").
set -euo pipefail

OUT=${OUT:-build}
HOT=${HOT:-1000000}
INTERVALS=${INTERVALS:-6}
SEED=${SEED:-1}
LEVELS=${LEVELS:-10000 100000 1000000 10000000}
AUTO=${AUTO:-auto}
SECTIONS=${SECTIONS:-churn load}
NSHARDS=${SHARDS:-8}
RING=$(seq -f '198.18.2.%g:11211' 1 "$NSHARDS" | paste -sd,)
DOCS=
[ "${1:-}" = --docs ] && DOCS=$2
HERE=$(cd "$(dirname "$0")" && pwd)
AGENT=$OUT/agent
GEN=$OUT/tests/acc_gen
SCORE=$HERE/accuracy_score.py

if [ "$(id -u)" != 0 ]; then
	echo "accuracy_bench: needs root (agent replay loads the BPF program)" >&2
	exit 1
fi
for f in "$AGENT" "$GEN"; do
	[ -x "$f" ] || { echo "accuracy_bench: $f missing: make all tests" >&2; exit 1; }
done
TMP=$(mktemp -d /tmp/ks_accuracy.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
START=$(date +%s)
scores=()
load_scores=()
shard_scores=()
# one replay of a capture, scored: replay CAP PREFIX SAMPLE TAG LOAD_OR_CHURN
# [PLACE_TARGET [REPLAY ARGS...]] (PLACE_TARGET "": replay's default)
replay() {
	local cap=$1 pre=$2 s=$3 tag=$4 churn=$5 pt=${6:-} t0 t1
	shift $(($# < 6 ? $# : 6))
	t0=$(date +%s.%N)
	# the hot-key table's threshold: 0.5% of all requests per second
	"$AGENT" replay --interval 1 --json --ranked 100 --top 64 \
		--shard-capacity "$cap" --hot-fraction 0.005 --sample "$s" \
		${pt:+--place-target "$pt"} "$@" \
		"$pre.pcap" >"$pre.$tag.jsonl" 2>"$pre.$tag.err" ||
		{ cat "$pre.$tag.err" >&2; exit 1; }
	t1=$(date +%s.%N)
	python3 "$SCORE" "$pre.truth" "$pre.$tag.jsonl" \
		--churn "$churn" --sample "$s" ${pt:+--place-target "$pt"} \
		--json "$pre.score.$tag.json" >/dev/null
	printf '  --sample %-6s %sreplay %.1f s\n' "$s" \
		"${pt:+--place-target $pt }" "$(echo "$t1 - $t0" | bc)"
}
for churn in 0 1 10; do
	case " $SECTIONS " in *" churn "*) ;; *) continue ;; esac
	cap=$(awk -v h="$HOT" -v c="$churn" 'BEGIN { printf "%d", h * (1 + c) }')
	t0=$(date +%s.%N)
	"$GEN" --out "$TMP/c$churn" --hot "$HOT" --churn "$churn" \
		--intervals "$INTERVALS" --onset1 2 --onset5 4 --seed "$SEED"
	t1=$(date +%s.%N)
	printf 'churn %sx: %s requests per interval, capture %s MB in %.1f s\n' \
		"$churn" "$cap" $(($(stat -c %s "$TMP/c$churn.pcap") / 1000000)) \
		"$(echo "$t1 - $t0" | bc)"
	for s in 1 8 64; do
		replay "$cap" "$TMP/c$churn" "$s" "s$s" "$churn"
		scores+=("$TMP/c$churn.score.s$s.json")
		cp "$TMP/c$churn.score.s$s.json" "$OUT/accuracy.c$churn.s$s.json"
	done
	rm -f "$TMP/c$churn.pcap"
done
for load in $LEVELS; do
	case " $SECTIONS " in *" load "*) ;; *) continue ;; esac
	t0=$(date +%s.%N)
	"$GEN" --out "$TMP/l$load" --hot "$load" --churn 0 \
		--intervals "$INTERVALS" --onset1 2 --onset5 4 --seed "$SEED" \
		--shards "$RING"
	t1=$(date +%s.%N)
	printf 'load %s keys/s: capture %s MB in %.1f s\n' "$load" \
		$(($(stat -c %s "$TMP/l$load.pcap") / 1000000)) "$(echo "$t1 - $t0" | bc)"
	for s in 8 "$AUTO"; do
		tag=s${s//:/_}
		replay "$load" "$TMP/l$load" "$s" "$tag" 0 "" --shards "$RING"
		load_scores+=("$TMP/l$load.score.$tag.json")
		shard_scores+=("$TMP/l$load.score.$tag.json")
		cp "$TMP/l$load.score.$tag.json" "$OUT/accuracy.l$load.$tag.json"
	done
	# the same at P 1: every sampled key placed
	tag=s${AUTO//:/_}.poff
	replay "$load" "$TMP/l$load" "$AUTO" "$tag" 0 off --shards "$RING"
	shard_scores+=("$TMP/l$load.score.$tag.json")
	cp "$TMP/l$load.score.$tag.json" "$OUT/accuracy.l$load.$tag.json"
	rm -f "$TMP/l$load.pcap"
done
SECS=$(($(date +%s) - START))
NOTE="Made by \`make bench-accuracy\` (HOT=$HOT INTERVALS=$INTERVALS SEED=$SEED LEVELS='$LEVELS' AUTO=$AUTO SHARDS=$NSHARDS SECTIONS='$SECTIONS') at commit $(git -C "$HERE" describe --always --dirty 2>/dev/null || echo '?'); the whole run took $SECS s on $(nproc) shared cores."
echo
if [ ${#scores[@]} -gt 0 ]; then
	python3 "$SCORE" --table ${DOCS:+--docs "$DOCS"} --note "$NOTE" "${scores[@]}"
fi
if [ ${#load_scores[@]} -gt 0 ]; then
	LOAD_DOCS=$DOCS
	if [ -n "$DOCS" ] && [ "$AUTO" != auto ]; then
		echo "accuracy_bench: AUTO=$AUTO is not the default target: the load table is not written into $DOCS" >&2
		LOAD_DOCS=
	fi
	echo
	python3 "$SCORE" --table --load ${LOAD_DOCS:+--docs "$LOAD_DOCS"} --note "$NOTE" \
		"${load_scores[@]}"
	echo
	python3 "$SCORE" --table --shards ${LOAD_DOCS:+--docs "$LOAD_DOCS"} --note "$NOTE" \
		"${shard_scores[@]}"
fi
