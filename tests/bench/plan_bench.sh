#!/usr/bin/env bash
# plan_bench.sh - a ring planned from measured load (issue 26, make
# bench-plan; docs/placement.md): busiest/mean shard from memcached's own
# counters (cmd_get of every shard over the measured window) with the
# ketama ring, with the agents' --balance, and with the ring `agent ring
# plan` proposed from the agents' load documents, for two workloads:
#
#   flash   the flash sale of bench-steer-tcp: 100,000 keys Zipf 0.99 plus
#           one flash key with 24% of the gets
#   zipf1   100,000 keys Zipf 1.0, no flash key
#
# 16 shards and 4 L1 replicas (user/scripts/steer_topo.sh), etcd in the
# client's namespace holding the ring, one agent per shard with --etcd
# (copies on: --replicas, --owner-share 1/64; --export-keys, so the load
# documents carry the top keys' bytes the plan places), the load through
# libkeysteer over TCP (build/tests/ks_client_load). Per workload:
#
#   ketama   the ketama ring; `agent ring plan --window` runs during its
#            measured window and writes the plan
#   balance  the same ring, agents with --balance 0.10
#   planned  `agent ring set --plan` (the move limit of ring set applies:
#            --force is given only when it refused, and the run says so),
#            the agents as in 'ketama'
#
# and the keys the plan moved, as a share of the workload's keys (`agent
# ring diff --to-plan --keys-file`). Each run: preload (ks_load, ketama),
# WARMUP + DURATION s of load.
#
#   sudo tests/bench/plan_bench.sh [--json FILE] [--rate R] [--duration SEC]
#        [--warmup SEC] [--conns N] [--only flash|zipf1] [--target F] [--keep]
#
# Everything (namespaces, memcached, agents, etcd) is removed on every exit
# path.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../user/scripts/steer_topo.sh
. "$ROOT/user/scripts/steer_topo.sh"
LOAD=$ROOT/${OUT:-build}/ks_load
CLIENT_LOAD=$ROOT/${OUT:-build}/tests/ks_client_load
MC_STATS=$ROOT/user/scripts/mc_stats.py
PY=/usr/bin/python3

SHARDS=16 REPLICAS=4 KEYS=100000 RATE=16000 CONNS=8 DURATION=30 WARMUP=4
# --sample 1: each shard's load and top keys counted, not sampled 1 in 8 (a
# shard here serves about 500 gets/s: 1 in 8 over the window leaves about
# 2% of sampling error in the plan's input, as large as what it corrects)
INTERVAL=1 HOT_FRACTION=0.03 TARGET=1.02 SAMPLE=1 JSON_OUT='' ONLY='' KEEP=
while [ $# -gt 0 ]; do
	case $1 in
	--keep) KEEP=1; shift; continue ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	esac
	[ $# -ge 2 ] || { echo "plan_bench.sh: $1 needs a value" >&2; exit 2; }
	case $1 in
	--json) JSON_OUT=$2 ;;
	--rate) RATE=$2 ;;
	--duration) DURATION=$2 ;;
	--warmup) WARMUP=$2 ;;
	--conns) CONNS=$2 ;;
	--only) ONLY=$2 ;;
	--target) TARGET=$2 ;;
	*) echo "plan_bench.sh: unknown option '$1'; see --help" >&2; exit 2 ;;
	esac
	shift 2
done
for v in RATE DURATION WARMUP CONNS; do
	if ! [[ "${!v}" =~ ^[0-9]+$ ]] || [ "${!v}" -lt 1 ] || [ "${!v}" -gt 1000000 ]; then
		echo "plan_bench.sh: --${v,,} '${!v}' is not a whole number in 1..1000000" >&2
		exit 2
	fi
done
[ "$DURATION" -ge 4 ] || { echo "plan_bench.sh: --duration at least 4 (the plan's window)" >&2; exit 2; }
case $ONLY in "" | flash | zipf1) ;; *) echo "plan_bench.sh: --only flash or zipf1" >&2; exit 2 ;; esac
[ "$(id -u)" -eq 0 ] || { echo "plan_bench.sh: needs root (namespaces, XDP)" >&2; exit 2; }
for f in "$LOAD" "$STEER_AGENT" "$CLIENT_LOAD"; do
	[ -x "$f" ] || { echo "plan_bench.sh: $f is missing; run 'make all tests' first" >&2; exit 2; }
done
CAPACITY=$((RATE / SHARDS))

BENCH_TMP=$(mktemp -d /tmp/ks_plan_bench.XXXXXX)
BENCH_LOAD_PID= BENCH_PLAN_PID= BENCH_ETCD_PID=
bench_cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	[ -n "$BENCH_LOAD_PID" ] && ks_stop_pid "$BENCH_LOAD_PID" TERM 3
	[ -n "$BENCH_PLAN_PID" ] && ks_stop_pid "$BENCH_PLAN_PID" TERM 3
	[ -n "$STEER_TMP" ] && cp "$STEER_TMP"/agent.*.out "$BENCH_TMP"/ 2>/dev/null
	steer_topo_down
	[ -n "$BENCH_ETCD_PID" ] && ks_stop_pid "$BENCH_ETCD_PID" TERM 5
	if [ -n "$KEEP" ]; then echo "kept $BENCH_TMP"; else rm -rf "$BENCH_TMP"; fi
	exit "$rc"
}
trap bench_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

in_client() { ks_in_ns "$STEER_CLIENT_NS" "$@"; }
agent_c() { in_client "$STEER_AGENT" "$@"; }

# agents_up ARGS...: one agent per shard, following the ring in etcd
agents_up() {
	local i
	for i in "${!STEER_SHARD_NS[@]}"; do
		# shellcheck disable=SC2086
		if ! steer_agent_start "$i" --etcd "$ETCD_URL" --cluster planbench \
			--self "${STEER_SHARD_ADDR[i]}:$STEER_PORT" --replicas "$STEER_REPLICAS" \
			--shard-capacity "$CAPACITY" --interval "$INTERVAL" \
			--hot-fraction "$HOT_FRACTION" --owner-share 0.015625 --export-keys \
			--sample "$SAMPLE" "$@"; then
			echo "plan_bench.sh: agent $i did not attach: $(head -n 2 "$STEER_TMP/agent.$i.out")" >&2
			return 1
		fi
	done
}

# run NAME FLASHARGS...: preload, the load, stats snapshots at the end of
# the warm-up and at the end; with PLAN_OUT set, `agent ring plan` over
# the measured window writes it
run() {
	local t=$BENCH_TMP/$1 w
	shift
	in_client "$LOAD" --shards-file "$STEER_SHARDS_FILE" --distribution ketama --proto udp \
		--mix get=100 --keys "$KEYS" --zipf "$ZIPF" "$@" --conns "$CONNS" --json \
		--preload --count 1 >"$t.preload.json" 2>"$t.err" ||
		{ echo "plan_bench.sh: preload failed: $(head -c 300 "$t.err")" >&2; return 1; }
	ks_in_ns_bg "$STEER_CLIENT_NS" "$CLIENT_LOAD" --spec "$SPEC" --threads "$CONNS" \
		--keys "$KEYS" --zipf "$ZIPF" "$@" --rate "$RATE" \
		--duration $((WARMUP + DURATION)) >"$t.load.json" 2>"$t.lerr"
	BENCH_LOAD_PID=$KS_BG_PID
	sleep "$WARMUP"
	in_client "$PY" "$MC_STATS" snap "${ALL_MC[@]}" >"$t.s1.json" || return 1
	if [ -n "${PLAN_OUT:-}" ]; then
		w=$((DURATION - 2))
		ks_in_ns_bg "$STEER_CLIENT_NS" "$STEER_AGENT" ring plan --etcd "$ETCD_URL" \
			--cluster planbench --window "$w" --target "$TARGET" --out "$PLAN_OUT" \
			>"$t.plan.out" 2>&1
		BENCH_PLAN_PID=$KS_BG_PID
	fi
	wait "$BENCH_LOAD_PID"
	BENCH_LOAD_PID=
	in_client "$PY" "$MC_STATS" snap "${ALL_MC[@]}" >"$t.s2.json" || return 1
	if [ -n "$BENCH_PLAN_PID" ]; then
		wait "$BENCH_PLAN_PID"
		echo $? >"$t.plan.rc"
		BENCH_PLAN_PID=
	fi
	"$PY" "$MC_STATS" diff "$t.s1.json" "$t.s2.json" --fields cmd_get,get_hits \
		--group "shards=$SHARD_LIST" >"$t.window.json"
}

ring_names() {
	agent_c ring set --etcd "$ETCD_URL" --cluster planbench --shards-file "$STEER_SHARDS_FILE" \
		--clients keysteer --force >"$BENCH_TMP/ringset.$1.out" 2>&1
}

if ! steer_topo_up "$SHARDS" "$REPLICAS"; then
	echo "plan_bench.sh: the topology did not come up" >&2
	exit 1
fi
ETCD_URL=http://$STEER_CLIENT_ADDR:2379
SPEC="etcd=$ETCD_URL cluster=planbench"
if ! ks_start_etcd "$STEER_CLIENT_NS" planbench "$ETCD_URL" 2380 "$BENCH_TMP" >"$BENCH_TMP/etcd.out"; then
	BENCH_ETCD_PID=$KS_ETCD_PID
	echo "plan_bench.sh: etcd did not start: $(cat "$BENCH_TMP/etcd.out")" >&2
	exit 1
fi
BENCH_ETCD_PID=$KS_ETCD_PID
ALL_MC=()
for a in "${STEER_SHARD_ADDR[@]}" "${STEER_REPLICA_ADDR[@]}"; do ALL_MC+=("$a:$STEER_PORT"); done
SHARD_LIST=$(IFS=,; echo "${ALL_MC[*]:0:SHARDS}")
cp "$STEER_SHARDS_FILE" "$BENCH_TMP/shards.txt"
seq -f 'key:%.0f' 1 "$KEYS" >"$BENCH_TMP/keys.txt"
echo "plan_bench: $SHARDS shards, $REPLICAS replicas; ks_client_load TCP through libkeysteer (etcd), $KEYS keys;" \
	"$RATE gets/s on $CONNS threads, $WARMUP s warm-up + $DURATION s measured; agents --shard-capacity $CAPACITY" \
	"--hot-fraction $HOT_FRACTION --owner-share 0.015625 --export-keys --sample $SAMPLE; plan --target $TARGET"

WLS=()
[ "$ONLY" != zipf1 ] && WLS+=(flash)
[ "$ONLY" != flash ] && WLS+=(zipf1)
for wl in "${WLS[@]}"; do
	if [ "$wl" = flash ]; then ZIPF=0.99 FL=(--flash flash:1:0.24); else ZIPF=1.0 FL=(); fi
	ring_names "$wl" || { echo "plan_bench.sh: ring set: $(cat "$BENCH_TMP/ringset.$wl.out")" >&2; exit 1; }
	echo "$wl: run 'ketama' (and ring plan over its window)"
	agents_up || exit 1
	PLAN_OUT=$BENCH_TMP/$wl.plan.json run "$wl.ketama" "${FL[@]}" || exit 1
	steer_agents_stop
	echo "$wl: run 'balance'"
	agents_up --balance 0.10 || exit 1
	PLAN_OUT='' run "$wl.balance" "${FL[@]}" || exit 1
	steer_agents_stop
	if [ "$(cat "$BENCH_TMP/$wl.ketama.plan.rc")" != 0 ]; then
		echo "plan_bench.sh: ring plan failed: $(cat "$BENCH_TMP/$wl.ketama.plan.out")" >&2
		exit 1
	fi
	cat "$BENCH_TMP/$wl.ketama.plan.out"
	# the move limit of ring set: --force only when it refused
	FORCED=0
	if ! agent_c ring set --etcd "$ETCD_URL" --cluster planbench --plan "$BENCH_TMP/$wl.plan.json" \
		>"$BENCH_TMP/$wl.planset.out" 2>&1; then
		FORCED=1
		agent_c ring set --etcd "$ETCD_URL" --cluster planbench --plan "$BENCH_TMP/$wl.plan.json" \
			--force >>"$BENCH_TMP/$wl.planset.out" 2>&1 ||
			{ echo "plan_bench.sh: ring set --plan: $(cat "$BENCH_TMP/$wl.planset.out")" >&2; exit 1; }
	fi
	echo "$FORCED" >"$BENCH_TMP/$wl.forced"
	"$STEER_AGENT" ring diff --from-file "$BENCH_TMP/shards.txt" --to-plan "$BENCH_TMP/$wl.plan.json" \
		--keys-file "$BENCH_TMP/keys.txt" >"$BENCH_TMP/$wl.diff.out" 2>&1
	echo "$wl: run 'planned'"
	agents_up || exit 1
	PLAN_OUT='' run "$wl.planned" "${FL[@]}" || exit 1
	steer_agents_stop
done

export SHARDS REPLICAS KEYS RATE CONNS WARMUP DURATION CAPACITY HOT_FRACTION TARGET
"$PY" - "$BENCH_TMP" "${JSON_OUT:-}" "${WLS[@]}" <<'PYEOF'
import json, os, re, sys
tmp, out_path, wls = sys.argv[1], sys.argv[2], sys.argv[3:]
env = os.environ
res = {"config": {k.lower(): env[k] for k in ("SHARDS", "REPLICAS", "KEYS", "RATE", "CONNS",
       "WARMUP", "DURATION", "CAPACITY", "HOT_FRACTION", "TARGET")}, "workloads": {}}
def j(name):
    return json.load(open(os.path.join(tmp, name)))
print("%-6s %-8s %12s %8s %8s" % ("load", "ring", "busiest/mean", "hit%", "gets/s"))
for wl in wls:
    w = {}
    for run in ("ketama", "balance", "planned"):
        win = j("%s.%s.window.json" % (wl, run))
        ld = j("%s.%s.load.json" % (wl, run))
        g = win["groups"]["shards"]["cmd_get"]
        hits = win["groups"]["shards"]["get_hits"]["total"] if "total" in win["groups"]["shards"]["get_hits"] else None
        w[run] = {"busiest_over_mean": round(g["busiest_over_mean"], 3),
                  "shard_cmd_get": {a: d["cmd_get"] for a, d in win["deltas"].items()},
                  "gets_per_s": ld["gets_per_s"], "copy_reads": ld["copy_reads"],
                  "hits": ld["hits"], "gets": ld["gets"]}
        print("%-6s %-8s %12.3f %8.1f %8.0f" % (wl, run, g["busiest_over_mean"],
              100.0 * ld["hits"] / max(1, ld["gets"]), ld["gets_per_s"]))
    plan = open(os.path.join(tmp, "%s.ketama.plan.out" % wl)).read()
    m = re.search(r"busiest/mean: now ([0-9.]+), planned ([0-9.]+)", plan)
    mv = re.search(r"moves: (\d+) sampled keys .*?, (\d+) slices = ([0-9.]+)%", plan)
    d = open(os.path.join(tmp, "%s.diff.out" % wl)).read()
    md = re.search(r"moved (\d+) of (\d+) keys \(([0-9.]+)%\)", d)
    w["plan"] = {"model_now": float(m.group(1)), "model_planned": float(m.group(2)),
                 "keys_carved": int(mv.group(1)), "slices": int(mv.group(2)),
                 "space_moved_pct": float(mv.group(3)),
                 "keys_moved": int(md.group(1)), "keys": int(md.group(2)),
                 "keys_moved_pct": float(md.group(3)),
                 "forced": open(os.path.join(tmp, "%s.forced" % wl)).read().strip() == "1"}
    print("%-6s plan: model %.3f -> %.3f; %d keys carved, %d slices; keys moved %d of %d (%.3f%%)%s" % (
        wl, w["plan"]["model_now"], w["plan"]["model_planned"], w["plan"]["keys_carved"],
        w["plan"]["slices"], w["plan"]["keys_moved"], w["plan"]["keys"], w["plan"]["keys_moved_pct"],
        "; ring set needed --force" if w["plan"]["forced"] else "; within ring set's move limit"))
    res["workloads"][wl] = w
if out_path:
    json.dump(res, open(out_path, "w"), indent=1)
    print("figures in %s" % out_path)
PYEOF
