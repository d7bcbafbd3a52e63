#!/usr/bin/env bash
# herd_bench.sh - `make bench-herd` (issue 24, docs/client.md
# "Read-through"): one hot key, 1 s TTL, read flat out by 64 callers on 2
# client hosts (namespaces, 32 threads with a handle each, the Python
# adapter), each miss's "database" read taking 50 ms, for 10 s: database
# fills per expiry with the plain pattern (get, fill on a miss, set) and
# with get_or_fill (keysteer_fetch), and the p99 latency of the calls
# that began while an expiry's fill ran. Then the same amid normal
# traffic: each call reads the hot key with probability SHARE (1%), else
# one of ZIPF other keys (10,000, Zipf 0.99, stored first so they hit),
# through the same pattern. Then, amid that traffic, the hot key
# invalidated by a writer every second instead of expiring (TTL 60 s): a
# plain delete with the plain pattern and with get_or_fill, and the stale
# mark (delete(max_stale=MAX_STALE), keysteer_delete_stale) with
# get_or_fill(allow_stale=True): fills per invalidation, the values served
# flagged stale and the staleness of each. Last, amid that traffic, the
# hot key with early refresh on (get_or_fill(refresh=2), TTL 3 s, stored
# first): the expiries its readers saw (calls that waited for a fill or
# won a lease on a miss), its fills and the refreshes won. memcached 1.6 runs in a third
# namespace joined to each client host by a veth pair (198.18.30.0/30,
# 198.18.31.0/30). Everything is removed on every exit path.
#
#   tests/bench/herd_bench.sh [--seconds S] [--threads N] [--zipf N]
#                             [--share P] [--max-stale S] [--alone]
#                             [--json FILE]
#
# --alone: the hot key alone, expiring, only (make demo's short part).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../user/scripts/netns.sh
. "$ROOT/user/scripts/netns.sh"
PY=/usr/bin/python3
SECONDS_RUN=10
THREADS=32
ZIPF=10000
SHARE=0.01
MAX_STALE=2
ALONE=0
JSON=
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) SECONDS_RUN=$2; shift 2 ;;
	--threads) THREADS=$2; shift 2 ;;
	--zipf) ZIPF=$2; shift 2 ;;
	--share) SHARE=$2; shift 2 ;;
	--max-stale) MAX_STALE=$2; shift 2 ;;
	--alone) ALONE=1; shift ;;
	--json) JSON=$2; shift 2 ;;
	*) echo "usage: $0 [--seconds S] [--threads N] [--zipf N] [--share P] [--max-stale S] [--alone] [--json FILE]" >&2; exit 2 ;;
	esac
done
for t in memcached "$PY" ip nsenter; do
	command -v "$t" >/dev/null || { echo "herd_bench: $t is not installed (make deps)" >&2; exit 1; }
done
LIB=$ROOT/${OUT:-build}/libkeysteer.so
[ -f "$LIB" ] || { echo "herd_bench: $LIB is missing; run 'make all'" >&2; exit 1; }
export KEYSTEER_LIB=$LIB

SNS=ks_hbs_$$ C1=ks_hbc1_$$ C2=ks_hbc2_$$
TMP=$(mktemp -d /tmp/ks_herd_bench.XXXXXX)
MC_PID=
PIDS=()
cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do
		ks_stop_pid "$pid" KILL 5
	done
	ks_stop_pid "$MC_PID" TERM 5
	ks_ns_delete "$C1" "$C2" "$SNS"
	rm -rf "$TMP"
}
trap cleanup EXIT

ks_pair_create "$C1" "$SNS" hb1c$$ hb1s$$ 198.18.30.1/30 198.18.30.2/30 || exit 1
ip netns add "$C2" || exit 1
ip link add hb2c$$ netns "$C2" type veth peer name hb2s$$ netns "$SNS" || exit 1
ip -n "$C2" addr add 198.18.31.1/30 dev hb2c$$ && ip -n "$SNS" addr add 198.18.31.2/30 dev hb2s$$ &&
	ip -n "$C2" link set lo up && ip -n "$C2" link set hb2c$$ up && ip -n "$SNS" link set hb2s$$ up || exit 1
ks_in_ns_bg "$SNS" memcached -u nobody -l 198.18.30.2,198.18.31.2 -p 11211 -U 0 -m 64 -t 2 -c 1024 \
	</dev/null >/dev/null 2>&1
MC_PID=$KS_BG_PID
ks_wait_tcp "$C1" 198.18.30.2 11211 10 && ks_wait_tcp "$C2" 198.18.31.2 11211 10 ||
	{ echo "herd_bench: memcached did not start" >&2; exit 1; }

# run TAG MODE TTL [ARGS...]: both hosts' callers (ks_herd.py --mode
# MODE, ARGS each), started together once all have handles; host 1 also
# stores the other keys and the hot key first and runs the writer (the
# words after "--" in ARGS are host 1's alone). The summary in TAG.sum.
run() {
	local tag=$1 mode=$2 ttl=$3 i ns addr pids=() both=() one=()
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do both+=("$1"); shift; done
	[ $# -gt 0 ] && shift && one=("$@")
	rm -f "$TMP/$tag.go"
	echo "0 50" >"$TMP/herd.db"
	for i in 1 2; do
		ns=$C1 addr=198.18.30.2
		[ "$i" = 2 ] && ns=$C2 addr=198.18.31.2 && one=()
		ks_in_ns_bg "$ns" "$PY" "$ROOT/tests/e2e/ks_herd.py" \
			--spec "servers=$addr:11211 timeout_ms=2000" --key "bench:$tag" \
			--threads "$THREADS" --seconds "$SECONDS_RUN" --ttl "$ttl" --fill-ms 50 \
			--mode "$mode" --ready "$TMP/$tag.$i.ready" \
			--go "$TMP/$tag.go" "${both[@]}" "${one[@]}" \
			</dev/null >"$TMP/$tag.$i.json" 2>"$TMP/$tag.$i.err"
		pids+=("$KS_BG_PID")
		PIDS+=("$KS_BG_PID")
	done
	# the other keys' stores come first: 10,000 sets, longer loaded
	for ((i = 0; i < 2400; i++)); do
		[ -f "$TMP/$tag.1.ready" ] && [ -f "$TMP/$tag.2.ready" ] && break
		sleep 0.05
	done
	touch "$TMP/$tag.go"
	for i in "${pids[@]}"; do
		wait "$i" || { echo "herd_bench: a $tag caller failed: $(tail -n 3 "$TMP/$tag".*.err)" >&2; exit 1; }
	done
	"$PY" "$ROOT/tests/e2e/ks_herd_check.py" summary --ttl "$ttl" "$TMP/$tag".[12].json >"$TMP/$tag.sum"
}

AMID=(--zipf-keys "$ZIPF" --hot-share "$SHARE")
# the invalidated runs: the versions the database (a file) holds, the
# writer's version 0 stored before the first write
DB=(--db "$TMP/herd.db")
INVAL=(--invalidate-every 1 --prefill --zipf-prefill)
run plain plain 1
run fetch fetch 1
if [ "$ALONE" = 1 ]; then
	"$PY" "$ROOT/tests/bench/herd_report.py" "$TMP" "$THREADS" "$SECONDS_RUN" "${JSON:-}"
	exit
fi
run plain_amid plain 1 "${AMID[@]}" -- --zipf-prefill
run fetch_amid fetch 1 "${AMID[@]}" -- --zipf-prefill
run plain_del plain 60 "${AMID[@]}" "${DB[@]}" -- "${INVAL[@]}"
run fetch_del fetch 60 "${AMID[@]}" "${DB[@]}" -- "${INVAL[@]}"
run fetch_swr fetch 60 "${AMID[@]}" "${DB[@]}" --allow-stale -- \
	"${INVAL[@]}" --max-stale "$MAX_STALE"
# memcached's R wins once fewer than R whole ticks are left, and an item
# is gone at its last tick: R1 never wins before expiry, R2 wins with
# about 1 s left (a fill is 50 ms); TTL 3 s keeps it above R
run fetch_refresh fetch 3 "${AMID[@]}" --refresh 2 --lease 3 -- \
	--zipf-prefill --prefill
"$PY" "$ROOT/tests/bench/herd_report.py" "$TMP" "$THREADS" "$SECONDS_RUN" "${JSON:-}"
