#!/usr/bin/env bash
# steer_bench.sh - the flash-sale benchmark of issue 4: how much load the
# busiest shard carries, from memcached's own counters, without and with
# keysteer's steering.
#
# 8 shards and 4 L1 replicas on one bridge (user/scripts/steer_topo.sh); the
# client runs ks_load over UDP, routed with ketama: 100,000 keys with Zipf
# 0.99 popularity plus one flash key taking 24% of the requests, gets only,
# at a fixed rate. Every key is preloaded (ks_load --preload) so gets hit.
# Two runs: without agents, then with one agent per shard (bench_agent_start
# below). Each run lasts WARMUP + DURATION seconds; the figures are the
# cmd_get deltas of every memcached over the DURATION window (after the
# warm-up, so the agents have had time to find the key), plus the whole run.
#
#   sudo tests/bench/steer_bench.sh [--json FILE] [--rate R] [--duration SEC]
#        [--warmup SEC] [--conns N] [--shard-capacity OPS] [--interval SEC]
#        [--hot-fraction F] [--pins FILE] [--agent-args 'ARGS'] [--only none|steering] [--keep]
#        [--via udp|library]
#
# --via library (make bench-steer-tcp): the same workload over TCP through
# libkeysteer (build/tests/ks_client_load, --conns threads each with a
# handle of its own), etcd in the client's namespace holding the ring
# (`agent ring set`), the agents publishing to it (--etcd), so the library
# reads armed keys from their copies. 'none' is the library with no agents
# (no hot keys: every read to its owner).
#
# Prints a table; --json FILE gets the figures. If the agent refuses the
# command line (e.g. --replicas as an address list), the steering run is
# reported as not run, with the agent's message: never faked. Everything
# (namespaces, memcached, agents, pins) is removed on every exit path.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../user/scripts/steer_topo.sh
. "$ROOT/user/scripts/steer_topo.sh"
LOAD=$ROOT/${OUT:-build}/ks_load
MC_STATS=$ROOT/user/scripts/mc_stats.py
PY=/usr/bin/python3

SHARDS=8 REPLICAS=4 KEYS=100000 ZIPF=0.99 FLASH_SHARE=0.24
RATE=15000 CONNS=8 DURATION=10 WARMUP=3 INTERVAL=1 CAPACITY='' PINS=''
# Keys at 3% of a shard's capacity are hot: at the default capacity (the
# mean load) that is the flash key and the Zipf head down to rank ~15;
# docs/steering.md has the sweep over this knob.
HOT_FRACTION=0.03
AGENT_EXTRA='' JSON_OUT='' ONLY='' KEEP=
VIA=udp CLIENT_LOAD=$ROOT/${OUT:-build}/tests/ks_client_load BENCH_ETCD_PID=

usage() {
	sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit "${1:-2}"
}

while [ $# -gt 0 ]; do
	case $1 in
	--keep | -h | --help) ;;
	*) [ $# -ge 2 ] || { echo "steer_bench.sh: $1 needs a value; see --help" >&2; exit 2; } ;;
	esac
	case $1 in
	--json) JSON_OUT=$2; shift ;;
	--rate) RATE=$2; shift ;;
	--duration) DURATION=$2; shift ;;
	--warmup) WARMUP=$2; shift ;;
	--conns) CONNS=$2; shift ;;
	--shard-capacity) CAPACITY=$2; shift ;;
	--interval) INTERVAL=$2; shift ;;
	--hot-fraction) HOT_FRACTION=$2; shift ;;
	--pins) PINS=$2; shift ;;
	--agent-args) AGENT_EXTRA=$2; shift ;;
	--only) ONLY=$2; shift ;;
	--via) VIA=$2; shift ;;
	--keep) KEEP=1 ;;
	-h | --help) usage 0 ;;
	*) echo "steer_bench.sh: unknown option '$1'; see --help" >&2; exit 2 ;;
	esac
	shift
done
for v in RATE DURATION WARMUP CONNS; do
	if ! [[ "${!v}" =~ ^[0-9]+$ ]] || [ "${!v}" -lt 1 ] || [ "${!v}" -gt 1000000 ]; then
		echo "steer_bench.sh: --${v,,} '${!v}' is not a whole number in 1..1000000" >&2
		exit 2
	fi
done
if [ "$DURATION" -gt 120 ] || [ "$WARMUP" -gt 60 ]; then
	echo "steer_bench.sh: keep --duration <= 120 and --warmup <= 60" >&2
	exit 2
fi
case $ONLY in "" | none | steering) ;; *) echo "steer_bench.sh: --only none or steering" >&2; exit 2 ;; esac
case $VIA in udp | library) ;; *) echo "steer_bench.sh: --via udp or library, not '$VIA'" >&2; exit 2 ;; esac
# One shard's capacity: by default the mean load a shard gets at this rate,
# so the flash key (24% of all requests, about 2x a shard's mean) is hot.
CAPACITY=${CAPACITY:-$((RATE / SHARDS))}
if [ "$(id -u)" -ne 0 ]; then
	echo "steer_bench.sh: needs root (namespaces, XDP)" >&2
	exit 2
fi
for f in "$LOAD" "$STEER_AGENT" $([ "$VIA" = library ] && echo "$CLIENT_LOAD"); do
	[ -x "$f" ] || { echo "steer_bench.sh: $f is missing; run 'make' first" >&2; exit 2; }
done

BENCH_TMP=$(mktemp -d /tmp/ks_steer_bench.XXXXXX)
BENCH_LOAD_PID=
bench_cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	[ -n "$BENCH_LOAD_PID" ] && ks_stop_pid "$BENCH_LOAD_PID" TERM 3
	# The agents' logs outlive the topology's temp folder.
	[ -n "$STEER_TMP" ] && cp "$STEER_TMP"/agent.*.out "$BENCH_TMP"/ 2>/dev/null
	steer_topo_down
	[ -n "$BENCH_ETCD_PID" ] && ks_stop_pid "$BENCH_ETCD_PID" TERM 5
	if [ -n "$KEEP" ]; then
		echo "kept $BENCH_TMP"
	else
		rm -rf "$BENCH_TMP"
	fi
	exit "$rc"
}
trap bench_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# THE agent command line, one shard's; adjust it here (or with --agent-args).
# shellcheck disable=SC2086 # AGENT_EXTRA is meant to split into words
bench_agent_start() {
	local i=$1 ring=(--shards-file "$STEER_SHARDS_FILE")
	[ "$VIA" = library ] && ring=(--etcd "$BENCH_ETCD_URL" --cluster steerbench)
	steer_agent_start "$i" "${ring[@]}" \
		--self "${STEER_SHARD_ADDR[i]}:$STEER_PORT" --replicas "$STEER_REPLICAS" \
		--shard-capacity "$CAPACITY" --interval "$INTERVAL" \
		--hot-fraction "$HOT_FRACTION" \
		${PINS:+--pins "$PINS"} $AGENT_EXTRA
}

# bench_agents_up: one agent per shard; 1 with the reason in BENCH_NO_AGENT.
bench_agents_up() {
	local i out
	BENCH_NO_AGENT=
	for i in "${!STEER_SHARD_NS[@]}"; do
		bench_agent_start "$i" && continue
		out=$STEER_TMP/agent.$i.out
		if [ -z "$STEER_AGENT_RC" ]; then
			BENCH_NO_AGENT="the agent on ${STEER_SHARD_IF[i]} did not attach in 10 s"
		elif [ "$STEER_AGENT_RC" = 2 ] && grep -q -- '--replicas' "$out"; then
			BENCH_NO_AGENT="the agent refused --replicas $STEER_REPLICAS: $(head -n 1 "$out")"
		else
			BENCH_NO_AGENT="the agent on ${STEER_SHARD_IF[i]} exited with status $STEER_AGENT_RC: $(head -n 1 "$out")"
		fi
		steer_agents_stop
		return 1
	done
}

in_client() { ks_in_ns "$STEER_CLIENT_NS" "$@"; }
snap() { in_client "$PY" "$MC_STATS" snap "${ALL_MC[@]}" >"$1"; }

# bench_run NAME: preload, then the paced load with three stats snapshots
# (start, end of warm-up, end); files $BENCH_TMP/NAME.*.
bench_run() {
	local t=$BENCH_TMP/$1
	in_client "$LOAD" "${LOAD_ARGS[@]}" --preload --count 1 >"$t.preload.json" 2>"$t.err" ||
		{ echo "steer_bench.sh: preload failed: $(head -c 300 "$t.err")" >&2; return 1; }
	snap "$t.s0.json" || return 1
	if [ "$VIA" = library ]; then
		ks_in_ns_bg "$STEER_CLIENT_NS" "$CLIENT_LOAD" --spec "$BENCH_SPEC" \
			--threads "$CONNS" --keys "$KEYS" --zipf "$ZIPF" \
			--flash "flash:1:$FLASH_SHARE" --rate "$RATE" --per-key 64 \
			--duration $((WARMUP + DURATION)) >"$t.load.json" 2>"$t.err"
	else
		ks_in_ns_bg "$STEER_CLIENT_NS" "$LOAD" "${LOAD_ARGS[@]}" --rate "$RATE" \
			--duration $((WARMUP + DURATION)) >"$t.load.json" 2>"$t.err"
	fi
	BENCH_LOAD_PID=$KS_BG_PID
	sleep "$WARMUP"
	snap "$t.s1.json" || return 1
	wait "$BENCH_LOAD_PID"
	# ks_client_load exits 1 when some gets failed: counted in the
	# figures (the timeouts column), not the end of the run
	case $?:$VIA in
	0:* | 1:library) ;;
	*) echo "steer_bench.sh: the load failed: $(head -c 300 "$t.err")" >&2; return 1 ;;
	esac
	BENCH_LOAD_PID=
	snap "$t.s2.json" || return 1
	"$PY" "$MC_STATS" diff "$t.s1.json" "$t.s2.json" --fields cmd_get,get_hits,cmd_set \
		"${STATS_GROUPS[@]}" >"$t.window.json" &&
		"$PY" "$MC_STATS" diff "$t.s0.json" "$t.s2.json" --fields cmd_get,get_hits,cmd_set \
			"${STATS_GROUPS[@]}" >"$t.whole.json"
}

# ---- the topology
if ! steer_topo_up "$SHARDS" "$REPLICAS"; then
	echo "steer_bench.sh: the topology did not come up" >&2
	exit 1
fi
if [ "$VIA" = library ]; then
	BENCH_ETCD_URL=http://$STEER_CLIENT_ADDR:2379
	BENCH_SPEC="etcd=$BENCH_ETCD_URL cluster=steerbench"
	if ! ks_start_etcd "$STEER_CLIENT_NS" steerbench "$BENCH_ETCD_URL" 2380 "$BENCH_TMP" \
		>"$BENCH_TMP/etcd.out"; then
		BENCH_ETCD_PID=$KS_ETCD_PID
		echo "steer_bench.sh: etcd did not start: $(cat "$BENCH_TMP/etcd.out")" >&2
		exit 1
	fi
	BENCH_ETCD_PID=$KS_ETCD_PID
	if ! ks_in_ns "$STEER_CLIENT_NS" "$STEER_AGENT" ring set --etcd "$BENCH_ETCD_URL" \
		--cluster steerbench --shards-file "$STEER_SHARDS_FILE" >"$BENCH_TMP/ringset.out" 2>&1; then
		echo "steer_bench.sh: agent ring set: $(cat "$BENCH_TMP/ringset.out")" >&2
		exit 1
	fi
fi
LOAD_ARGS=(--shards-file "$STEER_SHARDS_FILE" --distribution ketama --proto udp
	--mix get=100 --keys "$KEYS" --zipf "$ZIPF" --flash "flash:1:$FLASH_SHARE"
	--conns "$CONNS" --json)

ALL_MC=()
for a in "${STEER_SHARD_ADDR[@]}" "${STEER_REPLICA_ADDR[@]}"; do
	ALL_MC+=("$a:$STEER_PORT")
done
STATS_GROUPS=(--group "shards=$(IFS=,; echo "${ALL_MC[*]:0:SHARDS}")"
	--group "replicas=$(IFS=,; echo "${ALL_MC[*]:SHARDS}")"
	--group "all=$(IFS=,; echo "${ALL_MC[*]}")")

CLIENT_LINE="ks_load UDP ketama"
[ "$VIA" = library ] && CLIENT_LINE="ks_client_load TCP through libkeysteer (etcd)"
echo "steer_bench: $SHARDS shards, $REPLICAS replicas; $CLIENT_LINE, $KEYS keys zipf $ZIPF +" \
	"flash key $FLASH_SHARE; $RATE gets/s on $CONNS conns, $WARMUP s warm-up + $DURATION s measured;" \
	"agent --shard-capacity $CAPACITY --hot-fraction $HOT_FRACTION --interval $INTERVAL"
RUNS=()
if [ "$ONLY" != steering ]; then
	echo "run 'none': no agents"
	bench_run none || exit 1
	RUNS+=(none)
fi
if [ "$ONLY" != none ]; then
	echo "run 'steering': one agent per shard"
	if bench_agents_up; then
		bench_run steering || exit 1
		steer_agents_stop
	else
		echo "steer_bench.sh: the steering run could not run: $BENCH_NO_AGENT" >&2
		echo "$BENCH_NO_AGENT" >"$BENCH_TMP/steering.notrun"
	fi
	RUNS+=(steering)
fi
cp "$STEER_SHARDS_FILE" "$BENCH_TMP/shards.txt"

# ---- the figures
AGENT_LINE="agent run --iface IF --shards-file F --self ADDR:$STEER_PORT --replicas $STEER_REPLICAS"
AGENT_LINE+=" --shard-capacity $CAPACITY --interval $INTERVAL${PINS:+ --pins $PINS}${AGENT_EXTRA:+ $AGENT_EXTRA}"
[ "$VIA" = library ] && AGENT_LINE+=" --etcd URL --cluster steerbench"
export SHARDS REPLICAS KEYS ZIPF FLASH_SHARE RATE CONNS WARMUP DURATION CAPACITY INTERVAL AGENT_LINE VIA
"$PY" - "$BENCH_TMP" "${JSON_OUT:-}" "${RUNS[@]}" <<'PYEOF'
import json, os, sys
tmp, out_path, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
env = os.environ
cfg = {"shards": int(env["SHARDS"]), "replicas": int(env["REPLICAS"]), "keys": int(env["KEYS"]),
       "zipf": float(env["ZIPF"]), "flash_share": float(env["FLASH_SHARE"]),
       "rate": int(env["RATE"]), "conns": int(env["CONNS"]), "warmup_s": int(env["WARMUP"]),
       "duration_s": int(env["DURATION"]), "shard_capacity": int(env["CAPACITY"]),
       "interval_s": float(env["INTERVAL"]), "distribution": "ketama",
       "proto": "udp" if env["VIA"] == "udp" else "tcp through libkeysteer",
       "agent": env["AGENT_LINE"]}

def load(name, part):
    with open(os.path.join(tmp, "%s.%s.json" % (name, part))) as f:
        return json.load(f)

def spread(diff):
    g = diff["groups"]
    sh = g["shards"]["cmd_get"]
    return {
        "shard_cmd_get": {a: d["cmd_get"] for a, d in diff["deltas"].items() if a in shard_addrs},
        "replica_cmd_get": {a: d["cmd_get"] for a, d in diff["deltas"].items() if a not in shard_addrs},
        "replica_get_hits": sum(d["get_hits"] for a, d in diff["deltas"].items() if a not in shard_addrs),
        "busiest_shard": sh["busiest"], "busiest_over_mean": round(sh["busiest_over_mean"], 3),
        "all_hosts_busiest_over_mean": round(g["all"]["cmd_get"]["busiest_over_mean"], 3),
    }

result = {"config": cfg, "runs": {}}
shard_addrs = set()
pre_shards = [l.strip() for l in open(os.path.join(tmp, "shards.txt")) if l.strip()]
for name in runs:
    if os.path.exists(os.path.join(tmp, name + ".notrun")):
        result["runs"][name] = {"ran": False, "reason": open(os.path.join(tmp, name + ".notrun")).read().strip()}
        continue
    ld, pre = load(name, "load"), load(name, "preload")
    if "ops" in ld:
        shard_addrs = {s["addr"] for s in ld["shards"]}
        o = ld["ops"][0]
        r = {"ran": True, "preload_s": pre["preload_s"], "ops": o["ops"],
             "ops_per_s": round(o["ops"] / ld["duration_s"], 1), "hits": o["hits"],
             "errors": o["errors"], "timeouts": o["timeouts"], "latency_us": o["latency_us"],
             "steered": ld["steered"], "first_steered_ms": ld["first_steered_ms"],
             "replies_by_source": ld["replies_by_source"]}
    else:
        # ks_client_load: the library's own counters of where reads went
        shard_addrs = set(pre_shards)
        r = {"ran": True, "preload_s": pre["preload_s"], "ops": ld["gets"],
             "ops_per_s": ld["gets_per_s"], "hits": ld["hits"], "errors": ld["errors"],
             "timeouts": ld["errors"], "latency_us": ld["latency_us"],
             "steered": ld["copy_reads"], "first_steered_ms": None,
             "fallbacks": ld["fallbacks"], "owner_reads": ld["owner_reads"],
             "per_second": ld["per_second"]}
    r.update(spread(load(name, "window")))
    r["whole_run"] = spread(load(name, "whole"))
    result["runs"][name] = r

print("%-9s %9s %8s %8s %12s %12s %10s %9s %14s" % ("run", "ops/s", "timeouts", "hit%",
      "busiest/mean", "all/mean", "replicas", "steered", "first_steer_ms"))
for name, r in result["runs"].items():
    if not r["ran"]:
        print("%-9s not run: %s" % (name, r["reason"]))
        continue
    print("%-9s %9.0f %8d %8.1f %12.2f %12.2f %10d %9d %14s" % (name, r["ops_per_s"],
          r["timeouts"], 100.0 * r["hits"] / max(1, r["ops"]), r["busiest_over_mean"],
          r["all_hosts_busiest_over_mean"], sum(r["replica_cmd_get"].values()), r["steered"],
          "-" if r["first_steered_ms"] is None else "%.0f" % r["first_steered_ms"]))
ran = [n for n, r in result["runs"].items() if r["ran"]]
if ran:
    print("cmd_get per host over the %s s window:" % cfg["duration_s"])
    first = result["runs"][ran[0]]
    for a in list(first["shard_cmd_get"]) + list(first["replica_cmd_get"]):
        cells = ["%s %8d" % (n, {**result["runs"][n]["shard_cmd_get"],
                                 **result["runs"][n]["replica_cmd_get"]}[a]) for n in ran]
        print("  %-8s %-18s %s" % ("shard" if a in first["shard_cmd_get"] else "replica", a,
                                   "   ".join(cells)))
if out_path:
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)
    print("figures in %s" % out_path)
PYEOF
