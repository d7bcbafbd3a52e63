#!/usr/bin/env bash
# votes_bench.sh - the talent show's final vote of issue 13 (`make
# bench-votes`): how many increments the busiest shard takes, from
# memcached's own counters, without and with libkeysteer's split counters.
#
# 16 shards on one bridge (user/scripts/steer_topo.sh), etcd and a client
# host in one namespace, a second client host beside it. On both, ks_counter
# (tests/client/ks_counter.c) runs WRITERS handles each, incrementing 4
# counters through the library: votes:a 60%, votes:b 25%, votes:c 10%,
# votes:d 5% of the increments. Rounds of two runs each, interleaved:
#   plain  no agents: no hot/ entries, every increment goes to the base key
#   split  an agent per shard (--etcd), whose write-hot detection picks K for
#          each counter (budget = hot-fraction x shard-capacity = the rate
#          of the run's own first 3 s / PARTS, 512: a counter taking share
#          p of the votes wants K = p x PARTS, at most 64)
# Each run lasts WARMUP + DURATION s; the figure is busiest / mean of the 16
# shards' incr_hits + incr_misses over the DURATION window. After every
# split run the load stops, the counters cool (K back to 1) and a handle's
# reads past the grace fold the sub-keys back; then each counter read back
# must equal its start plus the increments acknowledged, exactly.
#
#   sudo tests/bench/votes_bench.sh [--json FILE] [--rounds N] [--duration S]
#        [--warmup S] [--writers N] [--parts N]
#
# Prints a table; --json FILE gets the figures. Everything (namespaces,
# memcached, agents, etcd) is removed on every exit path.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../user/scripts/steer_topo.sh
. "$ROOT/user/scripts/steer_topo.sh"
COUNTER=$ROOT/${OUT:-build}/tests/ks_counter
MC_STATS=$ROOT/user/scripts/mc_stats.py
PY=/usr/bin/python3

SHARDS=16 ROUNDS=2 DURATION=10 WARMUP=6 WRITERS=3 PARTS=512
KEYS="votes:a:60,votes:b:25,votes:c:10,votes:d:5"
CLUSTER=votes JSON_OUT=''

usage() {
	sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit "${1:-2}"
}
num() { # NAME VALUE LO HI
	if ! [[ "$2" =~ ^[0-9]+$ ]] || [ "$2" -lt "$3" ] || [ "$2" -gt "$4" ]; then
		echo "votes_bench.sh: $1 wants a number $3..$4, got '$2'" >&2
		exit 2
	fi
}
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage 0 ;;
	*) [ $# -ge 2 ] || { echo "votes_bench.sh: $1 needs a value; see --help" >&2; exit 2; } ;;
	esac
	case $1 in
	--json) JSON_OUT=$2 ;;
	--rounds) num "$1" "$2" 1 5; ROUNDS=$2 ;;
	--duration) num "$1" "$2" 2 120; DURATION=$2 ;;
	--warmup) num "$1" "$2" 2 60; WARMUP=$2 ;;
	--writers) num "$1" "$2" 1 16; WRITERS=$2 ;;
	--parts) num "$1" "$2" 16 4096; PARTS=$2 ;;
	*) echo "votes_bench.sh: unknown option '$1'; see --help" >&2; exit 2 ;;
	esac
	shift 2
done
[ "$(id -u)" = 0 ] || { echo "votes_bench.sh: needs root (namespaces, XDP)" >&2; exit 1; }
for b in "$COUNTER" "$STEER_AGENT" "$STEER_EMPTY_OBJ"; do
	[ -x "$b" ] || [ -r "$b" ] || { echo "votes_bench.sh: $b is missing; run 'make all tests'" >&2; exit 1; }
done
command -v etcd >/dev/null || { echo "votes_bench.sh: etcd is missing; run 'make deps'" >&2; exit 1; }

TMP=$(mktemp -d /tmp/ks_votes.XXXXXX)
ETCD_PID=
cleanup() {
	for p in "${LOAD_PIDS[@]}"; do ks_stop_pid "$p" TERM 5; done
	steer_topo_down
	[ -n "$ETCD_PID" ] && ks_stop_pid "$ETCD_PID" TERM 5
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

echo "votes_bench: $SHARDS shards, 2 client hosts x $WRITERS writers, $ROUNDS rounds of plain and split, ${WARMUP}+${DURATION} s a run"
steer_topo_up "$SHARDS" 0 >"$TMP/topo.out" 2>&1 || { tail -n 3 "$TMP/topo.out"; exit 1; }
CNS=$STEER_CLIENT_NS CNS2=ks_vc2_$$
steer_host_add "$CNS2" "ksv2_$$" 198.18.2.2 >>"$TMP/topo.out" 2>&1 || { tail -n 3 "$TMP/topo.out"; exit 1; }
URL=http://$STEER_CLIENT_ADDR:2379
ks_start_etcd "$CNS" votes "$URL" 2380 "$TMP" >"$TMP/etcd.out" 2>&1 || { cat "$TMP/etcd.out"; exit 1; }
ETCD_PID=$KS_ETCD_PID
# a fresh etcd on a loaded machine may take a while to answer its first put
for ((i = 0; i < 5; i++)); do
	ks_in_ns "$CNS" "$STEER_AGENT" ring set --etcd "$URL" --cluster "$CLUSTER" \
		--shards-file "$STEER_SHARDS_FILE" >"$TMP/ringset.out" 2>&1 && break
	sleep 1
done
[ "$i" -lt 5 ] || { cat "$TMP/ringset.out"; exit 1; }
SPEC="etcd=$URL cluster=$CLUSTER timeout_ms=1000 stale_view_ms=2000 split_grace_ms=4000"
SERVERS=$(paste -sd' ' "$STEER_SHARDS_FILE")
KEY_NAMES=$(tr ',' '\n' <<<"$KEYS" | sed 's/:[0-9]*$//' | paste -sd' ')

snap() { ks_in_ns "$CNS" "$PY" "$MC_STATS" snap $SERVERS >"$TMP/$1.json"; }
# ratio BEFORE AFTER: busiest/mean of incr_hits+incr_misses, and the total
ratio() {
	"$PY" - "$TMP/$1.json" "$TMP/$2.json" <<'PYEOF'
import json, sys
b = json.load(open(sys.argv[1]))["servers"]
a = json.load(open(sys.argv[2]))["servers"]
f = ("incr_hits", "incr_misses", "decr_hits", "decr_misses")
d = {hp: sum(a[hp].get(x, 0) - b[hp].get(x, 0) for x in f) for hp in a}
mean = sum(d.values()) / len(d)
top = sorted(d.values(), reverse=True)[:3]
print("%.3f %d %d %s" % (max(d.values()) / mean if mean else 0, sum(d.values()), max(d.values()),
                         ",".join("%.2f" % (v / mean) for v in top) if mean else "-"))
PYEOF
}
sums() { # the counters read back, "KEY VALUE" lines
	ks_in_ns "$CNS" "$COUNTER" "$SPEC" get $KEY_NAMES
}
# load NAME [agents]: both client hosts; with agents, the budget is set
# from the first 3 s of this very run's rate (the shared machine's speed
# moves a lot between runs) and the agents are started; then WARMUP s,
# stats, DURATION s, stats, and the writers stopped (SIGTERM, by PID)
LOAD_PIDS=()
load() {
	local name=$1 t
	ks_in_ns_bg "$CNS" "$COUNTER" "$SPEC" run "$KEYS" --writers "$WRITERS" \
		--seconds 600 >"$TMP/$name.1.out" 2>&1
	LOAD_PIDS=("$KS_BG_PID")
	ks_in_ns_bg "$CNS2" "$COUNTER" "$SPEC" run "$KEYS" --writers "$WRITERS" \
		--seconds 600 >"$TMP/$name.2.out" 2>&1
	LOAD_PIDS+=("$KS_BG_PID")
	if [ "${2:-}" = agents ]; then
		sleep 1
		snap "$name.cal0"
		sleep 2
		snap "$name.cal1"
		read -r _ t _ _ < <(ratio "$name.cal0" "$name.cal1")
		agents_start $((t / 2 / PARTS))
	fi
	# K of every counter every second, as the fleet says it
	for ((j = 0; j < WARMUP + DURATION; j++)); do
		echo "$(hot_k)"
		sleep 1
	done >"$TMP/$name.klog" &
	sleep "$WARMUP"
	snap "$name.before"
	sleep "$DURATION"
	snap "$name.after"
	hot_k >"$TMP/$name.k"
	for p in "${LOAD_PIDS[@]}"; do ks_stop_pid "$p" TERM 20; done
	LOAD_PIDS=()
}
# agents_start BUDGET: an agent per shard, write-hot at BUDGET writes/s
agents_start() {
	local budget=$1 i
	[ "$budget" -ge 10 ] || budget=10
	BUDGET=$budget
	for ((i = 0; i < SHARDS; i++)); do
		steer_agent_start "$i" --interval 0.5 --sample 1 \
			--shard-capacity 100000 --hot-fraction "$("$PY" -c "print($budget / 100000)")" \
			--etcd "$URL" --cluster "$CLUSTER" \
			--self "${STEER_SHARD_ADDR[$i]}:$STEER_PORT" ||
			{ echo "agent $i did not start: $(head -n 3 "$STEER_TMP/agent.$i.out")"; exit 1; }
	done
}
acked() { # NAME KEY: acknowledged increments of KEY in run NAME
	cat "$TMP/$1".[12].out | grep "^key=$2 " | grep -o 'acked=[0-9]*' |
		cut -d= -f2 | awk '{s += $1} END {print s + 0}'
}
uncertain() { # NAME KEY: increments of KEY whose outcome no reply told
	cat "$TMP/$1".[12].out | grep "^key=$2 " | grep -o 'uncertain=[0-9]*' |
		cut -d= -f2 | awk '{s += $1} END {print s + 0}'
}
# check NAME BEFORE_SUMS AFTER_SUMS: every counter's start + acked = read
# (with increments that timed out after they were sent, UNCERTAIN, the read
# must lie in [start + acked, start + acked + uncertain]: reported apart)
UNCERTAIN=0
check() {
	local k start after want unc bad=0
	for k in $KEY_NAMES; do
		start=$(awk -v k="$k" '$1 == k {print $2}' "$2")
		after=$(awk -v k="$k" '$1 == k {print $2}' "$3")
		want=$((start + $(acked "$1" "$k")))
		unc=$(uncertain "$1" "$k")
		UNCERTAIN=$((UNCERTAIN + unc))
		if [ -z "$after" ] || [ "$after" -lt "$want" ] || [ "$after" -gt $((want + unc)) ]; then
			echo "  $1: $k read back $after, want $start + acked = $want (+ up to $unc uncertain)" >&2
			bad=1
		fi
	done
	return $bad
}
hot_k() { # the K of each counter's hot/ entry now, "a=K b=K ..."
	ks_in_ns "$CNS" etcdctl --endpoints "$URL" get --prefix "/keysteer/$CLUSTER/hot/" \
		--print-value-only 2>/dev/null | "$PY" -c 'import json, sys
k = {}
for line in sys.stdin:
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if d.get("key", "") in ("votes:a", "votes:b", "votes:c", "votes:d") and d.get("write_hot"):
        k[d["key"][6:]] = d.get("subkeys")
print(" ".join("%s=%s" % (n, k.get(n, 1)) for n in "abcd"))'
}

PLAIN=() SPLIT=() EXACT=0 RUNS=0 KS=() KCHANGES=() RATE=0
for ((r = 1; r <= ROUNDS; r++)); do
	sums >"$TMP/p$r.start"
	load "p$r"
	sums >"$TMP/p$r.end"
	read -r pr ptot pmax ptop < <(ratio "p$r.before" "p$r.after")
	PLAIN+=("$pr")
	RUNS=$((RUNS + 1))
	check "p$r" "$TMP/p$r.start" "$TMP/p$r.end" && EXACT=$((EXACT + 1))
	sums >"$TMP/s$r.start"
	load "s$r" agents
	KS+=("$(cat "$TMP/s$r.k")")
	# changes of K seen over the run, every counter's (from 1 on)
	KCH=$(tr ' ' '\n' <"$TMP/s$r.klog" | sort -s -t= -k1,1 | awk -F= '$1 == p && $2 != v {n++} {p = $1; v = $2} END {print n + 0}')
	KCHANGES+=("$KCH")
	read -r sr stot smax stop < <(ratio "s$r.before" "s$r.after")
	SPLIT+=("$sr")
	# the vote is over: the counters cool, reads past the grace fold back
	ks_in_ns "$CNS" "$COUNTER" "$SPEC" watch votes:a 12 >"$TMP/s$r.watch" 2>&1
	sums >"$TMP/s$r.end"
	RUNS=$((RUNS + 1))
	check "s$r" "$TMP/s$r.start" "$TMP/s$r.end" && EXACT=$((EXACT + 1))
	steer_agents_stop
	printf 'round %d: plain %.2fx (%d incr/s, busiest %d), split %.2fx (%d incr/s, busiest %d, top 3 shards %s x mean), K %s (%s changes of K seen; budget %s writes/s), hot/ after cooling: %s\n' \
		"$r" "$pr" "$((ptot / DURATION))" "$pmax" "$sr" "$((stot / DURATION))" "$smax" "$stop" "${KS[-1]}" "$KCH" "$BUDGET" "$(hot_k)"
done
med() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
PM=$(med "${PLAIN[@]}") SM=$(med "${SPLIT[@]}")
echo "busiest/mean shard (incr, memcached stats), median of $ROUNDS: plain ${PM}x, split ${SM}x; counters exact in $EXACT of $RUNS runs ($UNCERTAIN increments timed out after they were sent: counted or not, no reply said)"
if [ -n "$JSON_OUT" ]; then
	"$PY" - "$JSON_OUT" "$PM" "$SM" "$EXACT" "$RUNS" "${PLAIN[*]}" "${SPLIT[*]}" "$WRITERS" "$DURATION" "$WARMUP" "$UNCERTAIN" <<'PYEOF'
import json, sys
o, pm, sm, ex, runs, pl, sp, w, d, wu, unc = sys.argv[1:]
json.dump({"plain_busiest_over_mean": float(pm), "split_busiest_over_mean": float(sm),
           "plain_rounds": [float(x) for x in pl.split()], "split_rounds": [float(x) for x in sp.split()],
           "exact_runs": int(ex), "runs": int(runs), "writers_per_host": int(w),
           "duration_s": int(d), "warmup_s": int(wu), "uncertain": int(unc)},
          open(o, "w"), indent=1)
PYEOF
fi
[ "$EXACT" = "$RUNS" ]
