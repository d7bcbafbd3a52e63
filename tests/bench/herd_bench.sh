#!/usr/bin/env bash
# herd_bench.sh - `make bench-herd` (issue 24, docs/client.md
# "Read-through"): one hot key, 1 s TTL, read flat out by 64 callers on 2
# client hosts (namespaces, 32 threads with a handle each, the Python
# adapter), each miss's "database" read taking 50 ms, for 10 s: database
# fills per expiry with the plain pattern (get, fill on a miss, set) and
# with get_or_fill (keysteer_fetch), and the p99 latency of the calls
# that began while an expiry's fill ran. memcached 1.6 runs in a third
# namespace joined to each client host by a veth pair (198.18.30.0/30,
# 198.18.31.0/30). Everything is removed on every exit path.
#
#   tests/bench/herd_bench.sh [--seconds S] [--threads N] [--json FILE]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../user/scripts/netns.sh
. "$ROOT/user/scripts/netns.sh"
PY=/usr/bin/python3
SECONDS_RUN=10
THREADS=32
JSON=
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) SECONDS_RUN=$2; shift 2 ;;
	--threads) THREADS=$2; shift 2 ;;
	--json) JSON=$2; shift 2 ;;
	*) echo "usage: $0 [--seconds S] [--threads N] [--json FILE]" >&2; exit 2 ;;
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

# run MODE: both hosts' callers, started together once all have handles
run() {
	local mode=$1 i ns addr pids=()
	rm -f "$TMP/$mode.go"
	for i in 1 2; do
		ns=$C1 addr=198.18.30.2
		[ "$i" = 2 ] && ns=$C2 addr=198.18.31.2
		ks_in_ns_bg "$ns" "$PY" "$ROOT/tests/e2e/ks_herd.py" \
			--spec "servers=$addr:11211 timeout_ms=2000" --key "bench:$mode" \
			--threads "$THREADS" --seconds "$SECONDS_RUN" --ttl 1 --fill-ms 50 \
			--mode "$mode" --ready "$TMP/$mode.$i.ready" --go "$TMP/$mode.go" \
			</dev/null >"$TMP/$mode.$i.json" 2>"$TMP/$mode.$i.err"
		pids+=("$KS_BG_PID")
		PIDS+=("$KS_BG_PID")
	done
	for ((i = 0; i < 1200; i++)); do
		[ -f "$TMP/$mode.1.ready" ] && [ -f "$TMP/$mode.2.ready" ] && break
		sleep 0.05
	done
	touch "$TMP/$mode.go"
	for i in "${pids[@]}"; do
		wait "$i" || { echo "herd_bench: a $mode caller failed: $(tail -n 3 "$TMP/$mode".*.err)" >&2; exit 1; }
	done
	"$PY" "$ROOT/tests/e2e/ks_herd_check.py" summary --ttl 1 "$TMP/$mode".[12].json >"$TMP/$mode.sum"
}

run plain
run fetch
"$PY" - "$TMP/plain.sum" "$TMP/fetch.sum" "$THREADS" "$SECONDS_RUN" "${JSON:-}" <<'EOF'
import json, sys
plain, fetch = (json.load(open(p)) for p in sys.argv[1:3])
print("| pattern | callers | fills | expiries seen | fills per expiry | "
      "calls | errors | p99 call | p99 call during an expiry | max call |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for name, s in (("plain get/fill/set", plain), ("get_or_fill", fetch)):
    print("| %s | %d | %d | %d | %.2f | %d | %d | %.1f ms | %.1f ms | %.1f ms |" % (
        name, s["handles"], s["fills"], s["expiries_seen"],
        s["fills_per_expiry"], s["calls"], sum(s["errors"].values()),
        s["p99_call_s"] * 1e3, s["p99_call_during_expiry_s"] * 1e3,
        s["max_call_s"] * 1e3))
print("get_or_fill stats: %s" % json.dumps(fetch["stats"]))
if sys.argv[5]:
    json.dump({"threads_per_host": int(sys.argv[3]), "seconds": float(sys.argv[4]),
               "plain": plain, "fetch": fetch}, open(sys.argv[5], "w"))
EOF
