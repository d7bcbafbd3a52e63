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
#   balance  the ketama ring, agents with --balance 0.10 (a load of its own)
#   ketama   the ketama ring; `agent ring plan --window DURATION` over the
#            agents' load documents is the measured window (memcached's
#            counters read at its start and end), and writes the plan
#   planned  `agent ring set --plan` while the same agents and the same
#            load run on (the move limit of ring set applies: --force is
#            given only when it refused, and the run says so), then the
#            same window on the planned ring
#
# Every window starts on events, not after a guessed warm-up: every
# shard's load document at the ring's revision, and the fleet's hot set
# settled (steady() below). The planned window measures the load the plan
# was made from: the same generator, the same agents' hot-key tables, as
# a fleet applies a plan. Each window's own gets/s and hit ratio are
# memcached's (every shard and replica), and 'docs said' is the busiest /
# mean of the agents' load documents over that window, as `ring plan`
# read them; the plan's line gives a shard's largest difference between
# the plan's model and memcached's count in the planned window. Also the
# keys the plan moved, as a share of the workload's keys (`agent ring diff
# --to-plan --keys-file`). Beside every window, tests/bench/plan_trace.py
# reads the load documents and memcached's counts once a second: the
# summary's "rates err" and "counted err" are a shard's largest
# difference between memcached's count of the window and the mean of the
# documents' rates, and their counters, as shares of the mean; the plan's
# line gives the same for the plan's input ("input") and its outcome.
#
#   sudo tests/bench/plan_bench.sh [--json FILE] [--rate R] [--duration SEC]
#        [--warmup READS] [--conns N] [--only flash|zipf1] [--target F] [--keep]
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

# WARMUP: reads of every load document before a window may start
SHARDS=16 REPLICAS=4 KEYS=100000 RATE=16000 CONNS=8 DURATION=30 WARMUP=10
# --sample 1: each shard's load and top keys counted, not sampled 1 in 8 (a
# shard here serves about 500 gets/s: 1 in 8 over the window leaves about
# 2% of sampling error in the plan's input, as large as what it corrects)
INTERVAL=1 HOT_FRACTION=0.03 TARGET=1.02 SAMPLE=1 JSON_OUT='' ONLY='' KEEP=
STEADY_READS=5 STEADY_MAX=180 WINDOW_TRIES=2 RATE_TOL=0.03 WINDOW_RATE=
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
BENCH_LOAD_PID= BENCH_PLAN_PID= BENCH_ETCD_PID= BENCH_TRACE_PID=
bench_cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	[ -n "$BENCH_LOAD_PID" ] && ks_stop_pid "$BENCH_LOAD_PID" TERM 3
	[ -n "$BENCH_PLAN_PID" ] && ks_stop_pid "$BENCH_PLAN_PID" TERM 3
	[ -n "$BENCH_TRACE_PID" ] && ks_stop_pid "$BENCH_TRACE_PID" TERM 3
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
		# --etcd-timeout: at load average 50 an agent waited more than the
		# default 2 s for etcd at its start, and the run stopped
		# shellcheck disable=SC2086
		if ! steer_agent_start "$i" --etcd "$ETCD_URL" --etcd-timeout 10000 --cluster planbench \
			--self "${STEER_SHARD_ADDR[i]}:$STEER_PORT" --replicas "$STEER_REPLICAS" \
			--shard-capacity "$CAPACITY" --interval "$INTERVAL" \
			--hot-fraction "$HOT_FRACTION" --owner-share 0.015625 --export-keys \
			--sample "$SAMPLE" "$@"; then
			echo "plan_bench.sh: agent $i did not attach: $(head -n 2 "$STEER_TMP/agent.$i.out")" >&2
			return 1
		fi
	done
}

# load_start NAME FLASHARGS...: preload every key on its ketama owner,
# then the load through libkeysteer until load_stop (a TERM: it prints its
# JSON for what ran)
load_start() {
	local t=$BENCH_TMP/$1
	shift
	in_client "$LOAD" --shards-file "$STEER_SHARDS_FILE" --distribution ketama --proto udp \
		--mix get=100 --keys "$KEYS" --zipf "$ZIPF" "$@" --conns "$CONNS" --json \
		--preload --count 1 >"$t.preload.json" 2>"$t.err" ||
		{ echo "plan_bench.sh: preload failed: $(head -c 300 "$t.err")" >&2; return 1; }
	ks_in_ns_bg "$STEER_CLIENT_NS" "$CLIENT_LOAD" --spec "$SPEC" --threads "$CONNS" \
		--keys "$KEYS" --zipf "$ZIPF" "$@" --rate "$RATE" \
		--duration 1800 >"$t.load.json" 2>"$t.lerr"
	BENCH_LOAD_PID=$KS_BG_PID
}
load_stop() {
	ks_stop_pid "$BENCH_LOAD_PID" TERM 10
	BENCH_LOAD_PID=
}

# steady NAME: waits until every shard's agent has published its load
# document at the ring's revision, no shard serves misdirected requests
# (at most 0.1% of what they serve: after a ring change libkeysteer's
# handles read a moved key at its old owner first for their ring grace,
# 33 s by default, docs/client.md "Ring changes"; the old owner's
# datapath counts those reads as misdirected, so their end is an event
# in the load documents) and the fleet's hot set has settled: a
# key enters the hot set when one interval's rate crosses the threshold and
# leaves below 0.7 of it, so the keys of the Zipf body near the threshold
# enter over many intervals after the load starts; a window measured
# while they do sees owners carry load that copies take later, and a plan
# made from it is for another load. Settled: the number of hot entries of
# the last STEADY_READS reads (one a second) within 3% of their mean (at
# least 2 entries), after at least WARMUP reads. Deadline: STEADY_MAX s;
# past it the run goes on and says so. Prints the wait's figures into
# NAME.steady.
steady() {
	local t=$BENCH_TMP/$1 i rev counts=() line n lo hi sum
	rev=$(in_client etcdctl --endpoints "$ETCD_URL" get /keysteer/planbench/ring -w json 2>/dev/null |
		"$PY" -c 'import json,sys; print(json.load(sys.stdin)["kvs"][0]["mod_revision"])')
	for ((i = 0; i < STEADY_MAX; i++)); do
		line=$(in_client etcdctl --endpoints "$ETCD_URL" get --prefix /keysteer-load/planbench/ -w json 2>/dev/null |
			"$PY" -c 'import base64, json, sys
rev = int(sys.argv[1])
docs = [json.loads(base64.b64decode(kv["value"])) for kv in json.load(sys.stdin).get("kvs", [])]
at = [d for d in docs if d.get("ring_revision") == rev]
sh = [d.get("shard", {}) for d in at]
served = sum(x.get("served_per_s", 0) + x.get("writes_per_s", 0) for x in sh)
mis = sum(x.get("misdirected_per_s", 0) for x in sh)
# 1: no shard serves keys the ring gives another (a handle in its ring
# grace reads the old owner first, docs/client.md "Ring changes")
print(len(at), sum(len(d.get("hot", [])) for d in at), int(mis <= 0.001 * served), int(mis))' \
			"${rev:-0}" 2>/dev/null)
		read -r n h calm mis <<<"${line:-0 0 0 0}"
		if [ "$n" = "$SHARDS" ] && [ "$calm" = 1 ]; then
			counts+=("$h")
		else
			counts=()
		fi
		if [ "${#counts[@]}" -ge "$WARMUP" ] && [ "${#counts[@]}" -ge "$STEADY_READS" ]; then
			lo=${counts[-1]} hi=${counts[-1]} sum=0
			for h in "${counts[@]: -STEADY_READS}"; do
				[ "$h" -lt "$lo" ] && lo=$h
				[ "$h" -gt "$hi" ] && hi=$h
				sum=$((sum + h))
			done
			if [ "$lo" -ge 2 ] && [ $(((hi - lo) * 100 * STEADY_READS)) -le $((6 * sum)) ]; then
				echo "steady after $((i + 1)) reads; ring revision $rev; hot entries ${counts[*]}" >"$t.steady"
				return 0
			fi
		fi
		sleep 1 # one read of etcd a second, as 'ring plan' reads
	done
	echo "NOT steady after $STEADY_MAX reads; ring revision $rev; documents at it $n; misdirected/s $mis; hot entries ${counts[*]}" >"$t.steady"
	echo "plan_bench.sh: $1: the load documents did not settle in $STEADY_MAX s (see $t.steady); measuring anyway" >&2
}

# window NAME PLANFILE [REF]: memcached's counters around one 'agent ring
# plan --window DURATION' over the agents' load documents (its own window,
# one read a second: the measured window is the plan's, by its start and
# end, not two windows side by side); the plan written to PLANFILE. A
# window is taken at the rate it is for: memcached's gets/s over it
# (every shard and replica) within RATE_TOL of REF (--rate by default;
# the planned window's REF is the rate of the window the plan was made
# from), else it is measured again, up to WINDOW_TRIES times (then the run
# goes on with the last, and the figures say how many it took). Why: the
# hot threshold is an absolute rate, so a load generator starved by the
# machine's other work arms fewer keys of the Zipf body and leaves the
# rest on their owners: a plan made at 11,700 gets/s and measured at
# 14,300 meets another hot set (docs/placement.md). The window's rate is
# left in WINDOW_RATE.
window() {
	local t=$BENCH_TMP/$1 try rate ref=${3:-$RATE}
	for ((try = 1; try <= WINDOW_TRIES; try++)); do
		# the documents and memcached's counts a second beside the
		# plan's own reads (each try's trace replaces the last)
		rm -f "$t.trace.jsonl"
		ks_in_ns_bg "$STEER_CLIENT_NS" "$PY" "$ROOT/tests/bench/plan_trace.py" --etcd "$ETCD_URL" \
			--cluster planbench --out "$t.trace.jsonl" "${ALL_MC[@]:0:SHARDS}" 2>"$t.trace.err"
		BENCH_TRACE_PID=$KS_BG_PID
		in_client "$PY" "$MC_STATS" snap "${ALL_MC[@]}" >"$t.s1.json" || return 1
		in_client "$STEER_AGENT" ring plan --etcd "$ETCD_URL" --etcd-timeout 10000 --cluster planbench \
			--window "$DURATION" --target "$TARGET" --out "$2" >"$t.plan.out" 2>&1
		echo $? >"$t.plan.rc"
		in_client "$PY" "$MC_STATS" snap "${ALL_MC[@]}" >"$t.s2.json" || return 1
		ks_stop_pid "$BENCH_TRACE_PID" TERM 5
		BENCH_TRACE_PID=
		rate=$("$PY" - "$t.s1.json" "$t.s2.json" <<'PYEOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
print(round(sum(int(b["servers"][s]["cmd_get"]) - int(a["servers"][s]["cmd_get"])
                for s in b["servers"]) / (b["time"] - a["time"])))
PYEOF
		)
		echo "window $try: $rate gets/s (for $ref)" >>"$t.tries"
		WINDOW_RATE=$rate
		if "$PY" -c 'import sys; r, want, tol = map(float, sys.argv[1:]); sys.exit(abs(r - want) > tol * want)' \
			"${rate:-0}" "$ref" "$RATE_TOL"; then
			break
		fi
		[ "$try" -lt "$WINDOW_TRIES" ] &&
			echo "plan_bench.sh: $1: window $try at $rate gets/s, not $ref within $RATE_TOL; again" >&2
	done
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
	"$RATE gets/s on $CONNS threads, windows of $DURATION reads once settled (at least $WARMUP reads); agents --shard-capacity $CAPACITY" \
	"--hot-fraction $HOT_FRACTION --owner-share 0.015625 --export-keys --sample $SAMPLE; plan --target $TARGET"

WLS=()
[ "$ONLY" != zipf1 ] && WLS+=(flash)
[ "$ONLY" != flash ] && WLS+=(zipf1)
for wl in "${WLS[@]}"; do
	if [ "$wl" = flash ]; then ZIPF=0.99 FL=(--flash flash:1:0.24); else ZIPF=1.0 FL=(); fi
	ring_names "$wl" || { echo "plan_bench.sh: ring set: $(cat "$BENCH_TMP/ringset.$wl.out")" >&2; exit 1; }
	echo "$wl: run 'balance'"
	agents_up --balance 0.10 || exit 1
	load_start "$wl.balance" "${FL[@]}" || exit 1
	steady "$wl.balance"
	window "$wl.balance" "$BENCH_TMP/$wl.balance.plan.json" || exit 1
	load_stop
	steer_agents_stop
	# ketama, then the plan of its window written while the same agents
	# and the same load run on: the planned window measures the load the
	# plan was made from, on the planned ring (as a fleet would apply it)
	echo "$wl: run 'ketama' (ring plan over its window), then 'planned'"
	agents_up || exit 1
	load_start "$wl.ketama" "${FL[@]}" || exit 1
	steady "$wl.ketama"
	window "$wl.ketama" "$BENCH_TMP/$wl.plan.json" || exit 1
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
	steady "$wl.planned"
	# the same 'ring plan' over the planned window: what the agents'
	# load documents saw on the planned ring (its plan is not used)
	window "$wl.planned" "$BENCH_TMP/$wl.planned.plan.json" "$WINDOW_RATE" || exit 1
	load_stop
	steer_agents_stop
done

export SHARDS REPLICAS KEYS RATE CONNS WARMUP DURATION CAPACITY HOT_FRACTION TARGET ROOT
"$PY" - "$BENCH_TMP" "${JSON_OUT:-}" "${WLS[@]}" <<'PYEOF'
import json, os, re, sys
tmp, out_path, wls = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests/bench"))
import plan_trace
env = os.environ
res = {"config": {k.lower(): env[k] for k in ("SHARDS", "REPLICAS", "KEYS", "RATE", "CONNS",
       "WARMUP", "DURATION", "CAPACITY", "HOT_FRACTION", "TARGET")}, "workloads": {}}
def j(name):
    return json.load(open(os.path.join(tmp, name)))
def model(path):
    """busiest/mean now and planned, and each shard's load/s, as the
    'ring plan' of a window printed them (the agents' load documents)"""
    t = open(path).read()
    m = re.search(r"busiest/mean: now ([0-9.]+), planned ([0-9.]+)", t)
    rows = re.findall(r"^\s+\d+\s+(\S+)\s+([0-9.]+)\s+[0-9.]+\s+([0-9.]+)", t, re.M)
    return (float(m.group(1)) if m else None, float(m.group(2)) if m else None,
            {a: float(n) for a, n, _ in rows}, {a: float(p) for a, _, p in rows})
print("%-6s %-8s %12s %8s %8s %10s %8s %7s %12s %12s" % ("load", "ring", "busiest/mean", "hit%", "gets/s",
      "docs said", "steady", "windows", "rates err", "counted err"))
for wl in wls:
    w = {}
    for run in ("ketama", "balance", "planned"):
        win = j("%s.%s.window.json" % (wl, run))
        s1, s2 = j("%s.%s.s1.json" % (wl, run)), j("%s.%s.s2.json" % (wl, run))
        ld = j("%s.ketama.load.json" % wl if run == "planned" else "%s.%s.load.json" % (wl, run))
        g = win["groups"]["shards"]["cmd_get"]
        secs = s2["time"] - s1["time"]
        gets = sum(int(s2["servers"][a]["cmd_get"]) - int(s1["servers"][a]["cmd_get"]) for a in s2["servers"])
        hits = sum(int(s2["servers"][a]["get_hits"]) - int(s1["servers"][a]["get_hits"]) for a in s2["servers"])
        now, _, docs, _ = model(os.path.join(tmp, "%s.%s.plan.out" % (wl, run)))
        st = open(os.path.join(tmp, "%s.%s.steady" % (wl, run))).read().strip()
        tries = open(os.path.join(tmp, "%s.%s.tries" % (wl, run))).read().split("\n")
        # the documents a second beside the window (plan_trace.py): how
        # far the mean of their rates, and their counters, were from
        # memcached's count of each shard, as shares of the mean
        tr = plan_trace.report(os.path.join(tmp, "%s.%s.trace.jsonl" % (wl, run)))
        w[run] = {"busiest_over_mean": round(g["busiest_over_mean"], 3),
                  "trace": {k: (round(v, 3) if isinstance(v, float) else v) for k, v in tr.items() if k != "shards"},
                  "shard_cmd_get": {a: d["cmd_get"] for a, d in win["deltas"].items()},
                  "window_s": round(secs, 1), "gets_per_s": round(gets / secs), "hits": hits, "gets": gets,
                  "load_documents_said": now, "load_documents_per_shard": docs,
                  "steady": st, "windows_taken": [t for t in tries if t], "load_run": {k: ld.get(k) for k in ("gets_per_s", "copy_reads", "gets", "hits")}}
        print("%-6s %-8s %12.3f %8.1f %8.0f %10s %8s %7d %12s %12s" % (wl, run, g["busiest_over_mean"],
              100.0 * hits / max(1, gets), gets / secs, "%.3f" % now if now else "-",
              st.split(";")[0].replace("steady after ", "").replace(" reads", " s"),
              len([t for t in tries if t]),
              "%.3f" % tr["largest_error"] if "largest_error" in tr else "-",
              "%.3f" % tr["largest_counted_error"] if "largest_counted_error" in tr else "-"))
    plan = open(os.path.join(tmp, "%s.ketama.plan.out" % wl)).read()
    m = re.search(r"busiest/mean: now ([0-9.]+), planned ([0-9.]+)", plan)
    # the plan's model of each shard against memcached's counts of the
    # planned window (both as shares of their mean): the plan's error
    _, _, _, pl = model(os.path.join(tmp, "%s.ketama.plan.out" % wl))
    cnt = w["planned"]["shard_cmd_get"]
    mp, mc = sum(pl.values()) / len(pl), sum(cnt[a] for a in pl) / len(pl)
    err = max(abs(cnt[a] / mc - pl[a] / mp) for a in pl)
    # the plan's input: its model of each shard now against memcached's
    # count of the same window (the ketama window is the plan's own)
    _, _, nowm, _ = model(os.path.join(tmp, "%s.ketama.plan.out" % wl))
    kc = w["ketama"]["shard_cmd_get"]
    mn, mk = sum(nowm.values()) / len(nowm), sum(kc[a] for a in nowm) / len(nowm)
    inerr = max(abs(kc[a] / mk - nowm[a] / mn) for a in nowm)
    src = re.findall(r"^load: (\d+) shards? from (their agents' counters|the mean)", plan, re.M)
    mv = re.search(r"moves: (\d+) sampled keys .*?, (\d+) slices = ([0-9.]+)%", plan)
    d = open(os.path.join(tmp, "%s.diff.out" % wl)).read()
    md = re.search(r"moved (\d+) of (\d+) keys \(([0-9.]+)%\)", d)
    w["plan"] = {"model_now": float(m.group(1)), "model_planned": float(m.group(2)),
                 "keys_carved": int(mv.group(1)), "slices": int(mv.group(2)),
                 "space_moved_pct": float(mv.group(3)),
                 "keys_moved": int(md.group(1)), "keys": int(md.group(2)),
                 "keys_moved_pct": float(md.group(3)),
                 "forced": open(os.path.join(tmp, "%s.forced" % wl)).read().strip() == "1",
                 "largest_shard_error": round(err, 3), "largest_input_error": round(inerr, 3),
                 "input_from": {("counters" if b.startswith("their") else "rates"): int(a) for a, b in src}}
    print("%-6s plan: model %.3f -> %.3f (a shard's largest error: input %.3f against memcached's count of"
          " the plan's window, outcome %.3f against the planned window; input from %s);"
          " %d keys carved, %d slices; keys moved %d of %d (%.3f%%)%s" % (
        wl, w["plan"]["model_now"], w["plan"]["model_planned"], inerr, err,
        ", ".join("%s %d" % kv for kv in w["plan"]["input_from"].items()) or "?", w["plan"]["keys_carved"],
        w["plan"]["slices"], w["plan"]["keys_moved"], w["plan"]["keys"], w["plan"]["keys_moved_pct"],
        "; ring set needed --force" if w["plan"]["forced"] else "; within ring set's move limit"))
    res["workloads"][wl] = w
if out_path:
    json.dump(res, open(out_path, "w"), indent=1)
    print("figures in %s" % out_path)
PYEOF
