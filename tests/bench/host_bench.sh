#!/usr/bin/env bash
# host_bench.sh - keysteer on live traffic, side by side with a libpcap
# observer (issue 14): memcached in a namespace, ks_load flat out, every
# observer configuration interleaved in rounds in one run.
#
#   sudo tests/bench/host_bench.sh [--rounds N] [--duration SEC]
#        [--conns N] [--configs 'C ...'] [--workloads 'W ...']
#        [--json FILE] [--markdown FILE] [--perf-hz HZ]
#
# The steering topology (user/scripts/steer_topo.sh) with one shard and one
# L1 replica: the client namespace sends, through the bridge, to the
# shard's memcached; every observer watches the shard's veth, ingress.
# Configurations (default all, in this order, the order rotated by one
# each round):
#   none      nothing attached
#   empty     the empty XDP program (build/ks_empty.bpf.o), native
#   ks8       agent run --sample 8
#   ks1       agent run --sample 1
#   ksauto    agent run --sample auto (its default target)
#   ks8ring   --sample 8 with a 64-shard ketama ring (the shard is --self;
#             63 more addresses nobody serves)
#   ks8hot    --sample 8 with the hot-key table on: the replica as
#             --replicas and a threshold the flash key passes, so it is
#             armed and its UDP gets are steered (every packet pays the
#             hot lookup)
#   pcap      tcpdump -s 0 (full frames) writing to a file
#   pcap96    tcpdump -s 96
# Workloads (default all): udp (gets over UDP), tcp (gets over TCP), mix
# (TCP: get=80, mget=10 of 8 keys, set=10). 100,000 keys, Zipf 0.99, plus
# a flash key at 10%, preloaded; --conns (default 8) connections as fast
# as they go for --duration (default 5) s per run, --rounds (default 3).
#
# Per run: ops/s and p99 from ks_load; memcached's cmd_get over the run
# (the shard's and the replica's: ks8hot moves the flash key's gets);
# what the observer saw (keysteer: the keys of read requests it counted,
# from its metrics; pcap: the same counted by `agent replay` of the
# capture, and tcpdump's own captured/dropped counts); CPU: keysteer's
# program run time per packet from bpf_stats (kernel.bpf_stats_enabled is
# turned on for the run and put back), the agent's CPU, tcpdump's user +
# system time, the shard's memcached's user + system time and the
# machine's softirq time. The summary (tests/bench/host_report.py) is the
# median of the rounds, as ratios to `none` and to `empty` of the same
# run; then issue 27's goal: each observer's CPU per request with its
# spread over the rounds, tcpdump -s 0 / keysteer per round with its
# interval, and each observer's share of the host's CPU per request
# (memcached's process time plus the softirq time, the same run).
#
# --perf-hz HZ (default 0, off): perf record (cpu-clock, every CPU, call
# graphs) at HZ samples a second during every run, for the kernel time
# the observers spend outside their process: AF_PACKET's tpacket_rcv for
# tcpdump (it copies each frame in the softirq that received it, or in
# memcached's send for a reply) and the XDP program for keysteer, both
# counted the same way. perf's own cost slows every configuration alike;
# the throughput figures of record come from runs without it. Without
# perf the goal's figure is counted by the host's CPU instead: the
# observer's process time plus what memcached's process time and the
# softirq time grew per request over `none` in the same round.
#
# Everything is removed on every exit path; eth0 and the host's interfaces
# are never touched.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../user/scripts/steer_topo.sh
. "$ROOT/user/scripts/steer_topo.sh"
LOAD=$ROOT/${OUT:-build}/ks_load
AGENT=$ROOT/${OUT:-build}/agent
MC_STATS=$ROOT/user/scripts/mc_stats.py
REPORT=$ROOT/tests/bench/host_report.py
PY=/usr/bin/python3
ROUNDS=3 DURATION=5 CONNS=8 JSON_OUT='' MD_OUT='' PERF_HZ=0
CONFIGS='none empty ks8 ks1 ksauto ks8ring ks8hot pcap pcap96'
WORKLOADS='udp tcp mix'
MPORT=44189 # the agent's metrics, on the shard namespace's loopback

# shellcheck source=bench_opts.sh
. "$ROOT/tests/bench/bench_opts.sh"
bench_opts '--rounds:ROUNDS --duration:DURATION --conns:CONNS --configs:CONFIGS
	--workloads:WORKLOADS --json:JSON_OUT --markdown:MD_OUT --perf-hz:PERF_HZ' "$@"
for c in $CONFIGS; do
	case $c in
	none | empty | ks8 | ks1 | ksauto | ks8ring | ks8hot | pcap | pcap96) ;;
	*) echo "host_bench.sh: unknown configuration '$c'; see --help" >&2; exit 2 ;;
	esac
done
for w in $WORKLOADS; do
	case $w in
	udp | tcp | mix) ;;
	*) echo "host_bench.sh: unknown workload '$w'; see --help" >&2; exit 2 ;;
	esac
done
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ && "$DURATION" =~ ^[1-9][0-9]*$ && "$CONNS" =~ ^[1-9][0-9]*$ ]] ||
	{ echo "host_bench.sh: --rounds, --duration and --conns take positive integers" >&2; exit 2; }
[[ "$PERF_HZ" =~ ^[0-9]+$ && "$PERF_HZ" -le 20000 ]] ||
	{ echo "host_bench.sh: --perf-hz takes 0 (off) to 20000 samples a second" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "host_bench.sh: needs root (namespaces, XDP)" >&2; exit 1; }
for b in "$LOAD" "$AGENT" "$STEER_EMPTY_OBJ"; do
	[ -e "$b" ] || { echo "host_bench.sh: $b missing; run make first" >&2; exit 1; }
done
command -v tcpdump >/dev/null || { echo "host_bench.sh: tcpdump missing (make deps)" >&2; exit 1; }
command -v bpftool >/dev/null || { echo "host_bench.sh: bpftool missing (make deps)" >&2; exit 1; }
[ "$PERF_HZ" = 0 ] || command -v perf >/dev/null ||
	{ echo "host_bench.sh: --perf-hz needs perf (apt-get install linux-perf)" >&2; exit 1; }

# shellcheck source=live_lib.sh
. "$ROOT/tests/bench/live_lib.sh"

DUMP_PID='' PERF_PID=''
live_on_exit() {
	[ -n "$DUMP_PID" ] && ks_stop_pid "$DUMP_PID" INT
	[ -n "$PERF_PID" ] && ks_stop_pid "$PERF_PID" INT
}
live_up 1
ip netns exec "$NS" sysctl -qw "net.ipv4.conf.$IF.forwarding=1"
{
	echo "$SRV"
	for ((i = 1; i < 64; i++)); do echo "198.19.0.$i:$STEER_PORT"; done
} >"$STEER_TMP/ring64.txt"

# the shard's memcached (nsenter and nice exec it: the PID is its own)
MC_PID=${STEER_MC_PIDS[0]}
[ "$(cat "/proc/$MC_PID/comm" 2>/dev/null)" = memcached ] ||
	{ echo "host_bench.sh: the shard's memcached is not PID $MC_PID" >&2; exit 1; }

mapfile -t pre < <(live_load_args tcp)
ks_in_ns "$STEER_CLIENT_NS" "$LOAD" "${pre[@]}" --preload --count 1 >/dev/null ||
	{ echo "host_bench.sh: preloading memcached failed" >&2; exit 1; }

scrape() {
	ks_in_ns "$NS" curl -sf --max-time 2 "http://127.0.0.1:$MPORT/metrics"
}

softirq_ticks() {
	awk '$1 == "cpu" { print $8 }' /proc/stat
}

# ks_run_all: "ID:RUN_TIME_NS,..." of every keysteer entry program loaded
# on the machine (other work's too): perf's samples of the symbol cannot
# tell them apart, bpf_stats can, so host_report.py gives this run's
# program its bpf_stats share of them (by ID: a program unloaded during
# the run takes its total with it).
ks_run_all() {
	bpftool -j prog show | "$PY" -c '
import json, sys
print(",".join("%d:%d" % (p["id"], p.get("run_time_ns", 0)) for p in json.load(sys.stdin)
               if p.get("name") in ("ks_ingress", "ks_tc_ingress")) or "-")'
}

proc_ticks() { # PID -> utime+stime in clock ticks
	awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# observer_up CONFIG: attach or start it; 1 on failure.
observer_up() {
	case $1 in
	none) return 0 ;;
	empty)
		ip -n "$NS" link set dev "$IF" xdpdrv obj "$STEER_EMPTY_OBJ" sec xdp ;;
	ks8 | ks1 | ksauto | ks8ring | ks8hot)
		local a=(--sample 8 --metrics "127.0.0.1:$MPORT")
		case $1 in
		ks1) a=(--sample 1 --metrics "127.0.0.1:$MPORT") ;;
		ksauto) a=(--sample auto --metrics "127.0.0.1:$MPORT") ;;
		ks8ring) a+=(--shards-file "$STEER_TMP/ring64.txt" --self "$SRV") ;;
		ks8hot) a+=(--shards "$SRV" --self "$SRV" --replicas "$STEER_REPLICAS"
			--shard-capacity 100000 --hot-fraction 0.01) ;;
		esac
		steer_agent_start 0 "${a[@]}" || {
			echo "host_bench.sh: agent ($1) did not attach:" >&2
			tail -3 "$STEER_TMP/agent.0.out" >&2
			return 1
		} ;;
	pcap | pcap96)
		local snap=0
		[ "$1" = pcap96 ] && snap=96
		rm -f "$STEER_TMP/cap.pcap"
		ks_in_ns_bg "$NS" tcpdump -i "$IF" -Q in -s "$snap" -B 8192 -w "$STEER_TMP/cap.pcap" \
			"port $STEER_PORT" 2>"$STEER_TMP/tcpdump.err"
		DUMP_PID=$KS_BG_PID
		local i
		for ((i = 0; i < 50; i++)); do
			grep -q "listening on" "$STEER_TMP/tcpdump.err" && return 0
			sleep 0.1
		done
		echo "host_bench.sh: tcpdump did not start: $(head -c 200 "$STEER_TMP/tcpdump.err")" >&2
		return 1 ;;
	esac
}

observer_down() {
	case $1 in
	empty) ip -n "$NS" link set dev "$IF" xdpdrv off ;;
	ks*) steer_agents_stop ;;
	pcap*) ks_stop_pid "$DUMP_PID" INT; DUMP_PID='' ;;
	esac
}

# one_run ROUND CONFIG WORKLOAD: appends one JSON line to $RUNS.
one_run() {
	local round=$1 cfg=$2 wl=$3 id s0 s1 sq0 sq1 m0=$STEER_TMP/m0 m1=$STEER_TMP/m1
	local apid='' a0=0 a1=0 d0=0 d1=0 c0 c1 k0 k1 t0 t1 la0 la1
	observer_up "$cfg" || return 1
	case $cfg in
	ks8hot) sleep 3 ;; # the flash key found, armed and filled
	ks*) sleep 1.2 ;;
	esac
	id=$(live_xdp_prog_id)
	case $cfg in ks*)
		apid=${STEER_AGENT_PIDS[0]}
		scrape >"$m0" || return 1 ;;
	esac
	mapfile -t la < <(live_load_args "$wl")
	ks_in_ns "$STEER_CLIENT_NS" "$PY" "$MC_STATS" snap "$SRV" "$STEER_REPLICAS" >"$STEER_TMP/mc0"
	s0=$(live_prog_stats "$id") sq0=$(softirq_ticks)
	[ -n "$apid" ] && a0=$(proc_ticks "$apid")
	[ -n "$DUMP_PID" ] && d0=$(proc_ticks "$DUMP_PID")
	c0=$(proc_ticks "$MC_PID") k0=$(ks_run_all)
	if [ "$PERF_HZ" != 0 ]; then
		rm -f "$STEER_TMP/perf.data"
		perf record -q -e cpu-clock -a -g -F "$PERF_HZ" -o "$STEER_TMP/perf.data" \
			-- sleep "$DURATION" 2>"$STEER_TMP/perf.err" &
		PERF_PID=$!
	fi
	t0=$(date +%s.%N) la0=$(cut -d' ' -f1 /proc/loadavg)
	ks_in_ns "$STEER_CLIENT_NS" "$LOAD" "${la[@]}" --duration "$DURATION" >"$STEER_TMP/load.json" ||
		{ echo "host_bench.sh: ks_load failed ($cfg $wl)" >&2; return 1; }
	t1=$(date +%s.%N) la1=$(cut -d' ' -f1 /proc/loadavg)
	local perf_json=null
	if [ -n "$PERF_PID" ]; then
		wait "$PERF_PID"
		PERF_PID=''
		perf_json=$STEER_TMP/perf.json
		"$PY" "$REPORT" perf-cost "$STEER_TMP/perf.data" --hz "$PERF_HZ" >"$perf_json" ||
			{ echo "host_bench.sh: perf report failed: $(head -c 200 "$STEER_TMP/perf.err")" >&2; return 1; }
	fi
	s1=$(live_prog_stats "$id") sq1=$(softirq_ticks)
	[ -n "$apid" ] && a1=$(proc_ticks "$apid")
	[ -n "$DUMP_PID" ] && d1=$(proc_ticks "$DUMP_PID")
	c1=$(proc_ticks "$MC_PID") k1=$(ks_run_all)
	ks_in_ns "$STEER_CLIENT_NS" "$PY" "$MC_STATS" snap "$SRV" "$STEER_REPLICAS" >"$STEER_TMP/mc1"
	case $cfg in ks*)
		# the datapath counts as the packets pass; the interval that
		# publishes them ends within a second
		sleep 1.1
		scrape >"$m1" || return 1 ;;
	esac
	observer_down "$cfg"
	local seen='null' cap='null' drop='null' samp='null'
	case $cfg in
	ks*)
		seen=$("$PY" "$REPORT" metrics-read-keys "$m0" "$m1")
		samp=$("$PY" "$REPORT" metrics-sampled "$m0" "$m1") ;;
	pcap*)
		cap=$(awk '/packets captured/ { print $1 }' "$STEER_TMP/tcpdump.err")
		drop=$(awk '/packets dropped by kernel/ { print $1 }' "$STEER_TMP/tcpdump.err")
		if [ "$cfg" = pcap ]; then
			"$AGENT" replay --json "$STEER_TMP/cap.pcap" >"$STEER_TMP/rep.json" 2>/dev/null &&
				seen=$("$PY" "$REPORT" replay-read-keys "$STEER_TMP/rep.json")
		fi ;;
	esac
	"$PY" "$REPORT" run --round "$round" --config "$cfg" --workload "$wl" \
		--load "$STEER_TMP/load.json" --mc0 "$STEER_TMP/mc0" --mc1 "$STEER_TMP/mc1" \
		--prog "$s0" "$s1" --softirq "$sq0" "$sq1" --agent "$a0" "$a1" \
		--dump "$d0" "$d1" --memcached "$c0" "$c1" --ks_all "$k0" "$k1" --sampled "${samp:-null}" --seen "${seen:-null}" --captured "${cap:-null}" \
		--dropped "${drop:-null}" --wall "$t0" "$t1" --loadavg "$la0" "$la1" --perf "$perf_json" >>"$RUNS" ||
		{ echo "host_bench.sh: summing up $cfg $wl failed" >&2; return 1; }
	tail -1 "$RUNS" | "$PY" "$REPORT" line
}

read -ra cfgs <<<"$CONFIGS"
for ((r = 0; r < ROUNDS; r++)); do
	for ((k = 0; k < ${#cfgs[@]}; k++)); do
		cfg=${cfgs[(k + r) % ${#cfgs[@]}]}
		for wl in $WORKLOADS; do
			one_run "$r" "$cfg" "$wl" || exit 1
		done
	done
done
[ -n "$JSON_OUT" ] && cp "$RUNS" "$JSON_OUT"
args=(summary "$RUNS" --rounds "$ROUNDS" --duration "$DURATION" --conns "$CONNS")
[ -n "$MD_OUT" ] && args+=(--markdown "$MD_OUT")
"$PY" "$REPORT" "${args[@]}"
