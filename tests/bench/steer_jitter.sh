#!/usr/bin/env bash
# steer_jitter.sh - how steady the agent's interval is while it copies 256
# hot keys to 7 L1 replicas, one of them blackholed (issue 11): the time
# between epoch flips (p50/p99/max of `interval_measured_ms` over the run,
# and how far each is from the target) and the time to answer GET /routing.
#
# 1 shard and 7 replicas on one bridge (user/scripts/steer_topo.sh). The
# last replica's namespace routes the shard's address to a blackhole (`ip
# route add blackhole 198.18.2.11/32`): its SYN-ACKs go nowhere, so every
# connect to it from the shard waits the agent's full 200 ms timeout. The
# agent runs with --interval 1 (or --interval), --sample 1 and a pin file `pin-prefix bk: 8`
# (owner + all 7 replicas); ks_load sends uniform UDP gets over 256 keys
# bk:1..bk:256 (preloaded), so every key enters the hot table within a few
# intervals and stays. Every interval refreshes all 256 keys' copies, and
# each back-off of the dead replica (1, 2, 4, 8, 16 s) puts it back into
# every key's copies, whose next fills then meet its timeout.
#
# While the load runs, `agent report --json` is read every 0.1 s (each
# interval's measured length, by seq) and GET /routing is timed every 50 ms.
#
#   sudo tests/bench/steer_jitter.sh [--agent PATH] [--seconds N] [--rate R]
#        [--interval 0.25|0.5|1|2] [--value-size BYTES] [--json FILE]
#
# --interval: the agent's (default 1 s); the jitter is each measured
# interval's distance from it. On the bridge a memcached call takes tens
# of microseconds, so 256 x 8 of them fit a 1 s interval with room left;
# at 0.25 s one pass of fills plus one 200 ms timeout do not.
# --value-size: the keys' values (default 32 bytes); large ones make each
# pass of copies long (256 x 100 KB to 7 replicas is 180 MB an interval).
# --agent: the agent binary to measure (default $OUT/agent): give the one
# built from an older commit (a git worktree) to measure before a change.
# The topology, memcached and the load generator are always this tree's.
# Prints one summary line; --json FILE gets the figures. Not part of
# `make test`. Everything it made is removed on exit.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../user/scripts/steer_topo.sh
. "$ROOT/user/scripts/steer_topo.sh"
LOAD=$ROOT/${OUT:-build}/ks_load
PY=/usr/bin/python3
AGENT_BIN=$STEER_AGENT SECONDS_=40 RATE=4000 JSON_OUT='' INTERVAL=1 VSIZE=32

while [ $# -gt 0 ]; do
	case $1 in
	-h | --help)
		sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	esac
	[ $# -ge 2 ] || { echo "steer_jitter.sh: $1 needs a value" >&2; exit 2; }
	case $1 in
	--agent) AGENT_BIN=$2 ;;
	--seconds) SECONDS_=$2 ;;
	--rate) RATE=$2 ;;
	--json) JSON_OUT=$2 ;;
	--interval) INTERVAL=$2 ;;
	--value-size) VSIZE=$2 ;;
	*) echo "steer_jitter.sh: unknown option '$1'; see --help" >&2; exit 2 ;;
	esac
	shift 2
done
case $INTERVAL in
0.25 | 0.5 | 1 | 2) ;;
*) echo "steer_jitter.sh: --interval 0.25, 0.5, 1 or 2" >&2; exit 2 ;;
esac
if ! [[ "$VSIZE" =~ ^[0-9]+$ ]] || [ "$VSIZE" -lt 1 ] || [ "$VSIZE" -gt 200000 ]; then
	echo "steer_jitter.sh: --value-size '$VSIZE' is not a whole number in 1..200000" >&2
	exit 2
fi
for v in SECONDS_ RATE; do
	if ! [[ "${!v}" =~ ^[0-9]+$ ]] || [ "${!v}" -lt 5 ] || [ "${!v}" -gt 100000 ]; then
		echo "steer_jitter.sh: '${!v}' is not a whole number in 5..100000" >&2
		exit 2
	fi
done
[ "$(id -u)" -eq 0 ] || { echo "steer_jitter.sh: run as root (namespaces, XDP)" >&2; exit 2; }
[ -x "$AGENT_BIN" ] || { echo "steer_jitter.sh: no agent at $AGENT_BIN; run make" >&2; exit 2; }
[ -x "$LOAD" ] || { echo "steer_jitter.sh: no $LOAD; run make" >&2; exit 2; }
STEER_AGENT=$AGENT_BIN

trap 'steer_topo_down' EXIT
steer_topo_up 1 7 || exit 1
SHARD_NS=${STEER_SHARD_NS[0]} IFN=${STEER_SHARD_IF[0]} SELF=${STEER_SHARD_ADDR[0]}:$STEER_PORT
DEAD_NS=${STEER_REPLICA_NS[6]} DEAD=${STEER_REPLICA_ADDR[6]}
ip -n "$DEAD_NS" route add blackhole "${STEER_SHARD_ADDR[0]}/32" ||
	{ echo "steer_jitter.sh: cannot blackhole the shard in $DEAD_NS" >&2; exit 1; }
echo "pin-prefix bk: 8" >"$STEER_TMP/pins"
LISTEN=127.0.0.1:9180

if ! steer_agent_start 0 --interval "$INTERVAL" --sample 1 -v \
	--shards-file "$STEER_SHARDS_FILE" --self "$SELF" \
	--replicas "$STEER_REPLICAS" --pins "$STEER_TMP/pins" \
	--shard-capacity 100000 --listen "$LISTEN"; then
	echo "steer_jitter.sh: the agent did not start: $(head -n 3 "$STEER_TMP/agent.0.out")" >&2
	exit 1
fi

# The probes, in the shard's namespace, for the load's whole length.
cat >"$STEER_TMP/probe.py" <<'PYEOF'
import json, subprocess, sys, threading, time, urllib.request
agent, ifn, listen, secs, out = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]
end = time.monotonic() + secs
intervals, http = {}, []
def reports():
    while time.monotonic() < end:
        try:
            d = json.loads(subprocess.run([agent, "report", "--json", "--iface", ifn],
                                          capture_output=True, timeout=5).stdout)
            intervals[d["seq"]] = float(d["interval_measured_ms"])
        except Exception:
            pass
        time.sleep(0.1)
def routing():
    while time.monotonic() < end:
        t = time.monotonic()
        try:
            urllib.request.urlopen("http://%s/routing" % listen, timeout=5).read()
            http.append((time.monotonic() - t) * 1e3)
        except Exception:
            http.append(5000.0)
        time.sleep(0.05)
ts = [threading.Thread(target=f) for f in (reports, routing)]
for t in ts: t.start()
for t in ts: t.join()
json.dump({"intervals": intervals, "http_ms": http}, open(out, "w"))
PYEOF
ks_in_ns_bg "$SHARD_NS" "$PY" "$STEER_TMP/probe.py" "$AGENT_BIN" "$IFN" \
	"$LISTEN" "$SECONDS_" "$STEER_TMP/probe.json" </dev/null
PROBE_PID=$KS_BG_PID
ks_in_ns "$STEER_CLIENT_NS" "$LOAD" --shards-file "$STEER_SHARDS_FILE" \
	--proto udp --keys 256 --key-prefix bk: --zipf 0 --mix get=100 \
	--value-size "$VSIZE" --preload --duration "$SECONDS_" --rate "$RATE" --json \
	>"$STEER_TMP/load.json" 2>"$STEER_TMP/load.err" ||
	echo "steer_jitter.sh: ks_load: $(tail -n 2 "$STEER_TMP/load.err")" >&2
wait "$PROBE_PID"
STATUS=$(grep 'hot:' "$STEER_TMP/agent.0.out" | tail -n 1)

"$PY" - "$STEER_TMP/probe.json" "$STEER_TMP/load.json" "$AGENT_BIN" "$DEAD" \
	"$STATUS" "$JSON_OUT" "$INTERVAL" "$VSIZE" <<'PYEOF'
import json, sys
p = json.load(open(sys.argv[1]))
agent, dead, status, out = sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
target = float(sys.argv[7]) * 1000
vsize = int(sys.argv[8])
try:
    load = json.load(open(sys.argv[2]))
except Exception:
    load = {}
def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")
# the first intervals run before the keys are all in: skip 3 s of them
seqs = sorted(int(s) for s in p["intervals"])[int(3000 / target):]
iv = [p["intervals"][str(s)] for s in seqs]
dev = [abs(x - target) for x in iv]
http = p["http_ms"]
res = {
    "agent": agent, "blackholed_replica": dead, "interval_target_ms": target,
    "value_size": vsize,
    "intervals": len(iv),
    "interval_ms": {"p50": pct(iv, .5), "p99": pct(iv, .99), "max": max(iv) if iv else None},
    "jitter_ms": {"p50": pct(dev, .5), "p99": pct(dev, .99), "max": max(dev) if dev else None},
    "http_ms": {"n": len(http), "p50": pct(http, .5), "p99": pct(http, .99), "max": max(http) if http else None},
    "steered": load.get("steered"), "agent_status": status,
}
print("intervals %d: between flips p50 %.1f ms p99 %.1f ms max %.1f ms (|x - target|: p50 %.1f p99 %.1f max %.1f); GET /routing %d: p50 %.2f ms p99 %.2f ms max %.2f ms; steered %s" % (
    len(iv), res["interval_ms"]["p50"], res["interval_ms"]["p99"], res["interval_ms"]["max"] or 0,
    res["jitter_ms"]["p50"], res["jitter_ms"]["p99"], res["jitter_ms"]["max"] or 0,
    len(http), res["http_ms"]["p50"], res["http_ms"]["p99"], res["http_ms"]["max"] or 0,
    res["steered"]))
print(status)
if out:
    json.dump(res, open(out, "w"), indent=1)
PYEOF
