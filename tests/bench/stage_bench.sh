#!/usr/bin/env bash
# stage_bench.sh - the XDP program's run time per packet on live traffic,
# for several builds of the agent side by side with the empty program
# (issue 14): the method of host_bench.sh (memcached in a namespace,
# ks_load flat out, bpf_stats run_time_ns / run_cnt), trimmed to that one
# column, so that builds which stop after successive stages of the datapath
# (tests/bench/stage_build.sh) or a build before and after a change can be
# set against each other in the same rounds.
#
#   sudo tests/bench/stage_bench.sh --agents 'LABEL=AGENT ...' [--rounds N]
#        [--duration SEC] [--conns N] [--sample N] [--workloads 'W ...']
#        [--load-cpus LIST] [--json FILE]
#
# Each LABEL=AGENT is an agent binary (its BPF object is in its skeleton),
# run as `agent run --sample N` (default 8) on the shard's veth; the label
# `empty` is the empty XDP program (build/ks_empty.bpf.o) and needs no
# agent. Every configuration runs every workload (udp: gets over UDP, tcp:
# gets over TCP, mix: TCP get=80, mget=10 of 8 keys, set=10) once a round,
# the order rotated by one each round; 100,000 keys, Zipf 0.99, a flash key
# at 10%, preloaded, --conns (default 8) connections for --duration
# (default 5) s. Per run: ns per packet, packets per request (TCP counts
# its ACKs too), ops/s. The summary is the median over rounds with the
# min..max, and each configuration's ratio to `empty`. --load-cpus runs
# ks_load under `taskset -c LIST` (one CPU: every segment of a connection
# is then handled where the one before it was). Everything is
# removed on every exit path; eth0 is never touched.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../user/scripts/steer_topo.sh
. "$ROOT/user/scripts/steer_topo.sh"
LOAD=$ROOT/${OUT:-build}/ks_load
PY=/usr/bin/python3
ROUNDS=3 DURATION=5 CONNS=8 SAMPLE=8 JSON_OUT='' AGENTS='' LOAD_CPUS=''
WORKLOADS='udp tcp'

# shellcheck source=bench_opts.sh
. "$ROOT/tests/bench/bench_opts.sh"
bench_opts '--rounds:ROUNDS --duration:DURATION --conns:CONNS --sample:SAMPLE
	--workloads:WORKLOADS --json:JSON_OUT --agents:AGENTS --load-cpus:LOAD_CPUS' "$@"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ && "$DURATION" =~ ^[1-9][0-9]*$ &&
	"$CONNS" =~ ^[1-9][0-9]*$ && "$SAMPLE" =~ ^[1-9][0-9]*$ ]] ||
	{ echo "stage_bench.sh: --rounds, --duration, --conns and --sample take positive integers" >&2; exit 2; }
declare -A AGENT_OF=()
LABELS=(empty)
for a in $AGENTS; do
	l=${a%%=*} p=${a#*=}
	[ "$l" != "$a" ] && [ -n "$l" ] && [ "$l" != empty ] ||
		{ echo "stage_bench.sh: --agents takes LABEL=AGENT (not 'empty')" >&2; exit 2; }
	[ -x "$p" ] || { echo "stage_bench.sh: $p is not an agent binary" >&2; exit 1; }
	AGENT_OF[$l]=$p
	LABELS+=("$l")
done
[ ${#LABELS[@]} -gt 1 ] || { echo "stage_bench.sh: --agents names none; see --help" >&2; exit 2; }
for w in $WORKLOADS; do
	case $w in
	udp | tcp | mix) ;;
	*) echo "stage_bench.sh: unknown workload '$w'" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "stage_bench.sh: needs root (namespaces, XDP)" >&2; exit 1; }
for b in "$LOAD" "$STEER_EMPTY_OBJ"; do
	[ -e "$b" ] || { echo "stage_bench.sh: $b missing; run make first" >&2; exit 1; }
done
PIN=()
if [ -n "$LOAD_CPUS" ]; then
	[[ "$LOAD_CPUS" =~ ^[0-9,-]+$ ]] || { echo "stage_bench.sh: --load-cpus takes a CPU list (0 or 0-1)" >&2; exit 2; }
	PIN=(taskset -c "$LOAD_CPUS")
fi
command -v bpftool >/dev/null || { echo "stage_bench.sh: bpftool missing (make deps)" >&2; exit 1; }

# shellcheck source=live_lib.sh
. "$ROOT/tests/bench/live_lib.sh"
live_up 0

mapfile -t pre < <(live_load_args tcp)
ks_in_ns "$STEER_CLIENT_NS" "$LOAD" "${pre[@]}" --preload --count 1 >/dev/null ||
	{ echo "stage_bench.sh: preloading memcached failed" >&2; exit 1; }

observer_up() { # LABEL
	if [ "$1" = empty ]; then
		ip -n "$NS" link set dev "$IF" xdpdrv obj "$STEER_EMPTY_OBJ" sec xdp
		return
	fi
	# shellcheck disable=SC2034 # read by steer_agent_start
	STEER_AGENT=${AGENT_OF[$1]}
	steer_agent_start 0 --sample "$SAMPLE" || {
		echo "stage_bench.sh: agent ($1) did not attach:" >&2
		tail -3 "$STEER_TMP/agent.0.out" >&2
		return 1
	}
	sleep 1.2
}

observer_down() { # LABEL
	if [ "$1" = empty ]; then
		ip -n "$NS" link set dev "$IF" xdpdrv off
	else
		steer_agents_stop
	fi
}

one_run() { # ROUND LABEL WORKLOAD
	local id s0 s1
	mapfile -t la < <(live_load_args "$3")
	id=$(live_xdp_prog_id)
	[ -n "$id" ] || { echo "stage_bench.sh: nothing attached ($2)" >&2; return 1; }
	s0=$(live_prog_stats "$id")
	ks_in_ns "$STEER_CLIENT_NS" "${PIN[@]}" "$LOAD" "${la[@]}" --duration "$DURATION" >"$STEER_TMP/load.json" ||
		{ echo "stage_bench.sh: ks_load failed ($2 $3)" >&2; return 1; }
	s1=$(live_prog_stats "$id")
	"$PY" - "$1" "$2" "$3" "$s0" "$s1" "$STEER_TMP/load.json" >>"$RUNS" <<'EOF' || return 1
import json, sys
rnd, label, wl, s0, s1, path = sys.argv[1:]
t0, c0 = map(int, s0.split())
t1, c1 = map(int, s1.split())
load = json.load(open(path))
ops = sum(o["ops"] for o in load["ops"])
print(json.dumps({"round": int(rnd), "config": label, "workload": wl,
                  "ns_per_pkt": (t1 - t0) / max(c1 - c0, 1),
                  "pkts_per_op": (c1 - c0) / max(ops, 1),
                  "ops_per_s": ops / load["duration_s"]}))
EOF
	tail -1 "$RUNS"
}

for ((r = 0; r < ROUNDS; r++)); do
	echo "round $((r + 1)) of $ROUNDS, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	for ((k = 0; k < ${#LABELS[@]}; k++)); do
		cfg=${LABELS[(k + r) % ${#LABELS[@]}]}
		observer_up "$cfg" || exit 1
		for wl in $WORKLOADS; do
			one_run "$r" "$cfg" "$wl" || exit 1
		done
		observer_down "$cfg"
	done
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "$JSON_OUT" ] && cp "$RUNS" "$JSON_OUT"
"$PY" - "$RUNS" "${LABELS[@]}" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
labels = sys.argv[2:]
wls = list(dict.fromkeys(r["workload"] for r in runs))
def cell(c, w, k):
    return [r[k] for r in runs if r["config"] == c and r["workload"] == w]
print("| build | " + " | ".join(f"{w} ns/pkt (min..max) | x empty | pkts/op"
                               for w in wls) + " |")
print("|---|" + "---:|---:|---:|" * len(wls))
for c in labels:
    row = []
    for w in wls:
        v = cell(c, w, "ns_per_pkt")
        e = statistics.median(cell("empty", w, "ns_per_pkt"))
        m = statistics.median(v)
        row.append(f"{m:.1f} ({min(v):.0f}..{max(v):.0f}) | {m / e:.2f} | "
                   f"{statistics.median(cell(c, w, 'pkts_per_op')):.2f}")
    print(f"| {c} | " + " | ".join(row) + " |")
EOF
