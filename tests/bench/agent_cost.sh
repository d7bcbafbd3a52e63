#!/usr/bin/env bash
# agent_cost.sh - the agent's own cost (issue 14): CPU per interval and
# resident memory of `agent run` on live traffic, by ring size and
# sampling, read from the agent's own metrics (docs/metrics.md:
# keysteer_agent_cpu_seconds_total, every thread; keysteer_interval_work_
# cpu_seconds, the loop thread's interval work; keysteer_resident_memory_
# bytes).
#
#   sudo tests/bench/agent_cost.sh [--rate R] [--duration SEC] [--keys K]
#        [--configs 'S:N[:H] ...'] [--hot-rate R] [--json FILE]
#
# One client and one server namespace joined by a veth pair (198.18.2.1,
# 198.18.2.2), memcached in the server's, the agent on its veth (native
# XDP). ks_load sends UDP and TCP gets, multi-gets and sets (get=80,
# mget=10, set=10) over K keys (default 1,000,000) with Zipf 0.99, paced at
# R ops/s (default 20000). Each configuration S:N is --sample S with a
# ring of N shards (N = 1: no ring; else a shards file of N entries, the
# local memcached the first and --self, the rest addresses nobody serves,
# so every interval places every sampled key among N shards). The hot-key
# table's threshold is low (--hot-fraction 0.0001) so that it holds as many
# keys as the agent lets in; no replicas (nothing is copied). A
# configuration S:N:H has exactly H hot keys instead: the K keys uniform
# (--zipf 0: none near the threshold) at R ops/s, and a second ks_load
# sending multi-gets of HOT_MGET (50) keys drawn uniformly from H keys
# hot:1..hot:H at HOT_RATE (--hot-rate, default 2048) ops/s, so the hot
# keys take the same 102,400 reads/s whatever H (1,600/s each at H = 64,
# 400/s at 256), with the threshold at 100 reads/s (--hot-fraction 0.001:
# 4x under the hot keys, far over what sketch noise gives a cold key at
# --sample 8). The table holds 256 keys at most (KS_HOT_CAP). Each run
# waits WARMUP (3) intervals, then reads the metrics at the start and end
# of DURATION (default 10) seconds: CPU per interval = the process's CPU
# over the window / intervals in it; the work figure is the median and the
# max of the per-interval gauge sampled each interval. Then a replay:
# acc_gen (tests/bench/acc) writes a capture of REPLAY_INTERVALS (8) 1 s
# intervals of 1,000,000 requests each over the same K keys, and `agent
# replay --interval 1 --sample 1 --hot-fraction 0.0001` closes them: the
# work of an interval at 1M keys/s, every key sampled (work_ms, the
# replaying thread's CPU; no ring: replay --interval has none). Everything
# is removed on every exit path.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../user/scripts/netns.sh
. "$ROOT/user/scripts/netns.sh"
AGENT=$ROOT/${OUT:-build}/agent
LOAD=$ROOT/${OUT:-build}/ks_load
GEN=$ROOT/${OUT:-build}/tests/acc_gen
REPLAY_INTERVALS=8
RATE=20000 DURATION=10 KEYS=1000000 WARMUP=3 JSON_OUT=''
HOT_RATE=2048 HOT_MGET=50
CONFIGS='8:1 8:64 8:1024 1:1 1:1024 8:1:64 8:1:256 8:64:64 8:64:256 8:1024:64 8:1024:256'

# shellcheck source=bench_opts.sh
. "$ROOT/tests/bench/bench_opts.sh"
bench_opts '--rate:RATE --duration:DURATION --keys:KEYS --configs:CONFIGS
	--hot-rate:HOT_RATE --json:JSON_OUT' "$@"
for c in $CONFIGS; do
	case $c in
	*[!0-9:]* | *:*:*:* | :* | *: | *::*) bad=1 ;;
	*:*) bad= ;;
	*) bad=1 ;;
	esac
	[ -z "$bad" ] || { echo "agent_cost.sh: --configs wants SAMPLE:SHARDS[:HOT] words, not '$c'" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "agent_cost.sh: needs root (namespaces, XDP)" >&2; exit 1; }
for b in "$AGENT" "$LOAD" "$GEN"; do
	[ -x "$b" ] || { echo "agent_cost.sh: $b missing; run make first" >&2; exit 1; }
done

CNS=ks_acc_$$ SNS=ks_acs_$$ CIF=ksac0 SIF=ksac1
CADDR=198.18.2.1 SADDR=198.18.2.2 PORT=11211 MPORT=9188
DIR=$(mktemp -d /tmp/ks_agent_cost.XXXXXX)
MC_PID='' AGENT_PID='' LOAD_PID='' HOT_PID=''
cleanup() {
	ks_stop_pid "$HOT_PID" 2>/dev/null
	ks_stop_pid "$LOAD_PID" 2>/dev/null
	ks_stop_pid "$AGENT_PID" 2>/dev/null
	ks_stop_pid "$MC_PID" 2>/dev/null
	ks_ns_delete "$CNS" "$SNS"
	rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

ks_pair_create "$CNS" "$SNS" "$CIF" "$SIF" "$CADDR/24" "$SADDR/24" ||
	{ echo "agent_cost.sh: making the namespaces failed" >&2; exit 1; }
ks_start_memcached "$SNS" "$SADDR" "$PORT" || exit 1
MC_PID=$KS_MEMCACHED_PID

# shards_file N: the local memcached first, then N - 1 addresses in
# 198.19.0.0/16 that nobody serves (only the ring's shape matters).
shards_file() {
	local n=$1 i
	echo "$SADDR:$PORT"
	for ((i = 1; i < n; i++)); do
		echo "198.19.$((i / 250)).$((i % 250 + 1)):$PORT"
	done
}

metrics() {
	ks_in_ns "$SNS" curl -sf --max-time 2 "http://127.0.0.1:$MPORT/metrics"
}

# metric NAME FILE: the value of an unlabelled metric in a scrape.
metric() {
	awk -v n="$1" '$1 == n { print $2; exit }' "$2"
}

wait_intervals() {
	local want=$1 i n
	for ((i = 0; i < 100; i++)); do
		metrics >"$DIR/m.wait" 2>/dev/null &&
			n=$(metric keysteer_intervals_total "$DIR/m.wait") &&
			[ -n "$n" ] && [ "${n%.*}" -ge "$want" ] && return 0
		sleep 0.2
	done
	return 1
}

results=()
printf '%-8s %7s %6s %9s %12s %12s %12s %9s %9s\n' sample shards hotset \
	intervals 'cpu/ivl ms' 'work p50 ms' 'work max ms' 'hot keys' 'RSS MiB'
for c in $CONFIGS; do
	IFS=: read -r s n h <<<"$c"
	# S:N: Zipf 0.99 at a low threshold; S:N:H: H hot keys (above)
	zipf=0.99 frac=0.0001
	[ -z "$h" ] || zipf=0 frac=0.001
	args=(run --iface "$SIF" --sample "$s" --metrics "127.0.0.1:$MPORT"
		--hot-fraction "$frac")
	if [ "$n" -gt 1 ]; then
		shards_file "$n" >"$DIR/shards.txt"
		args+=(--shards-file "$DIR/shards.txt" --self "$SADDR:$PORT")
	fi
	ks_in_ns_bg "$SNS" "$AGENT" "${args[@]}" >"$DIR/agent.log" 2>&1
	AGENT_PID=$KS_BG_PID
	if ! wait_intervals 1; then
		echo "agent_cost.sh: the agent ($c) did not start:" >&2
		tail -5 "$DIR/agent.log" >&2
		exit 1
	fi
	ks_in_ns_bg "$CNS" "$LOAD" --server "$SADDR:$PORT" --proto udp-gets \
		--keys "$KEYS" --zipf "$zipf" --mix get=80,mget=10,set=10 \
		--conns 4 --rate "$RATE" --duration $((WARMUP + DURATION + 3)) \
		>"$DIR/load.out" 2>&1
	LOAD_PID=$KS_BG_PID
	if [ -n "$h" ]; then
		ks_in_ns_bg "$CNS" "$LOAD" --server "$SADDR:$PORT" \
			--proto udp-gets --keys "$h" --zipf 0 --key-prefix hot: \
			--mix mget=100 --mget-size "$HOT_MGET" --conns 2 \
			--rate "$HOT_RATE" --seed 7 \
			--duration $((WARMUP + DURATION + 3)) >"$DIR/hot.out" 2>&1
		HOT_PID=$KS_BG_PID
	fi
	sleep "$WARMUP"
	metrics >"$DIR/m0" || { echo "agent_cost.sh: no metrics ($c)" >&2; exit 1; }
	works=()
	end=$((SECONDS + DURATION))
	while [ $SECONDS -lt "$end" ]; do
		sleep 1
		metrics >"$DIR/m.w" && works+=("$(metric keysteer_interval_work_cpu_seconds "$DIR/m.w")")
	done
	metrics >"$DIR/m1" || { echo "agent_cost.sh: no metrics ($c)" >&2; exit 1; }
	ks_stop_pid "$HOT_PID"; HOT_PID=''
	ks_stop_pid "$LOAD_PID"; LOAD_PID=''
	ks_stop_pid "$AGENT_PID"; AGENT_PID=''
	row=$(/usr/bin/python3 - "$DIR/m0" "$DIR/m1" "$s" "$n" "${h:-0}" "${works[@]}" <<'EOF'
import json, statistics, sys

def scrape(path):
    out = {}
    for line in open(path):
        if line.startswith('#') or ' ' not in line:
            continue
        name, val = line.rsplit(' ', 1)
        out[name] = float(val)
    return out

m0, m1 = scrape(sys.argv[1]), scrape(sys.argv[2])
works = [float(w) for w in sys.argv[6:] if w]
ivl = m1['keysteer_intervals_total'] - m0['keysteer_intervals_total']
cpu = m1['keysteer_agent_cpu_seconds_total'] - m0['keysteer_agent_cpu_seconds_total']
reqs = sum(v for k, v in m1.items() if k.startswith('keysteer_requests_total')) - \
       sum(v for k, v in m0.items() if k.startswith('keysteer_requests_total'))
print(json.dumps({
    'sample': int(sys.argv[3]), 'shards': int(sys.argv[4]),
    'hot_set': int(sys.argv[5]) or None,
    'intervals': int(ivl), 'requests_per_s': reqs / ivl if ivl else 0,
    'cpu_per_interval_ms': 1e3 * cpu / ivl if ivl else None,
    'work_p50_ms': 1e3 * statistics.median(works) if works else None,
    'work_max_ms': 1e3 * max(works) if works else None,
    'hot_keys': int(m1.get('keysteer_hot_table_keys', 0)),
    'rss_mib': m1['keysteer_resident_memory_bytes'] / 2**20,
}))
EOF
	) || { echo "agent_cost.sh: the scrapes of $c are incomplete" >&2; exit 1; }
	results+=("$row")
	/usr/bin/python3 -c '
import json, sys
r = json.loads(sys.argv[1])
print("%-8d %7d %6s %9d %12.2f %12.2f %12.2f %9d %9.1f   %.0f req/s" % (r["sample"], r["shards"],
      r["hot_set"] or "zipf", r["intervals"], r["cpu_per_interval_ms"], r["work_p50_ms"], r["work_max_ms"],
      r["hot_keys"], r["rss_mib"], r["requests_per_s"]))' "$row"
done

# The H-hot-key points against the same run's others: H = 256 over H = 64
# at one ring, and each over the run's S:N Zipf point of the same ring.
ratios=$(printf '%s\n' "${results[@]}" | /usr/bin/python3 -c '
import json, sys
runs = [json.loads(l) for l in sys.stdin]
def find(s, n, h):
    return next((r for r in runs if (r["sample"], r["shards"], r["hot_set"]) == (s, n, h)), None)
out = []
for r in runs:
    if not r["hot_set"]:
        continue
    for base, what in ((find(r["sample"], r["shards"], 64), "hot64"),
                       (find(r["sample"], r["shards"], None), "zipf")):
        if base is None or base is r:
            continue
        out.append({"point": "%d:%d:%d" % (r["sample"], r["shards"], r["hot_set"]),
                    "over": what,
                    "cpu": r["cpu_per_interval_ms"] / base["cpu_per_interval_ms"],
                    "work_p50": r["work_p50_ms"] / base["work_p50_ms"],
                    "rss": r["rss_mib"] / base["rss_mib"]})
print(json.dumps(out))') || { echo "agent_cost.sh: the ratios failed" >&2; exit 1; }
/usr/bin/python3 -c '
import json, sys
for q in json.loads(sys.argv[1]):
    print("%-12s over %-5s: cpu/ivl x%.2f, work p50 x%.2f, RSS x%.3f" % (
          q["point"], q["over"], q["cpu"], q["work_p50"], q["rss"]))' "$ratios"

"$GEN" --out "$DIR/replay" --keys "$KEYS" --intervals "$REPLAY_INTERVALS" >/dev/null ||
	{ echo "agent_cost.sh: acc_gen failed" >&2; exit 1; }
"$AGENT" replay --interval 1 --json --sample 1 --hot-fraction 0.0001 \
	"$DIR/replay.pcap" >"$DIR/replay.json" 2>"$DIR/replay.err" ||
	{ echo "agent_cost.sh: agent replay failed:" >&2; tail -3 "$DIR/replay.err" >&2; exit 1; }
rrow=$(/usr/bin/python3 - "$DIR/replay.json" <<'EOF'
import json, statistics, sys
ivs = [json.loads(l) for l in open(sys.argv[1])]
ivs = [i for i in ivs if not i['partial']]
w = [i['work_ms'] for i in ivs]
print(json.dumps({'replay_intervals': len(ivs),
                  'requests_per_interval': statistics.median(i['requests'] for i in ivs),
                  'work_p50_ms': statistics.median(w), 'work_max_ms': max(w),
                  'hot_keys': max(len(i['hot']) for i in ivs),
                  'candidates': max(i['candidates'] for i in ivs)}))
EOF
) || { echo "agent_cost.sh: the replay's output is incomplete" >&2; exit 1; }
/usr/bin/python3 -c '
import json, sys
r = json.loads(sys.argv[1])
print("replay --sample 1: %d intervals of %d requests: work p50 %.2f ms, max %.2f ms, %d hot keys, %d candidates" % (
      r["replay_intervals"], r["requests_per_interval"], r["work_p50_ms"], r["work_max_ms"],
      r["hot_keys"], r["candidates"]))' "$rrow"
if [ -n "$JSON_OUT" ]; then
	printf '%s\n' "${results[@]}" | /usr/bin/python3 -c '
import json, sys
print(json.dumps({"runs": [json.loads(l) for l in sys.stdin],
                  "ratios": json.loads(sys.argv[2]),
                  "replay": json.loads(sys.argv[1])}, indent=1))' "$rrow" "$ratios" >"$JSON_OUT"
fi
