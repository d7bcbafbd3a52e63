#!/usr/bin/env bash
# host_bench.sh - keysteer on live traffic (issue 14): memcached (Debian) in
# a namespace, ks_load flat out over TCP and over UDP (gets), and in turn
# nothing attached, the empty XDP program, keysteer --sample 8 and 1,
# keysteer with a 64-shard ketama ring, and tcpdump writing a capture (full
# and 96-byte snaplen: the libpcap observer mctop and memkeys are built on),
# interleaved in rounds.
#
#   sudo tests/bench/host_bench.sh [--rounds N] [--seconds S] [--conns N]
#        [--only CONFIG,...] [--raw FILE]
#
# Per configuration and protocol, medians over rounds: ops/s and p99 from
# ks_load, as ratios to nothing attached and to the empty program; the
# requests the observer saw against memcached's own cmd_get (keysteer: its
# get requests; tcpdump: captured request packets); CPU: bpf_stats run time
# per packet for XDP programs (build/tests/ks_bpfstats holds the statistics
# on for the run, the sysctl is never written), user+system time of tcpdump
# per request (its softirq share is not attributed to it by the kernel).
# Two namespaces of its own joined by a veth pair (198.18.3.1, 198.18.3.2),
# deleted on every exit path with every process it started (by PID).
set -u
ARGS=("$@")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$ROOT/${OUT:-build}
ROUNDS=3 SECONDS_PER=4 CONNS=8 ONLY='' RAW=''
CONFIGS=(none empty ks8 ks1 ring64 pcap pcap96)

# shellcheck source=../../user/scripts/netns.sh
. "$ROOT/user/scripts/netns.sh"

while [ $# -gt 0 ]; do
	[ "$1" = -h ] || [ "$1" = --help ] && { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0; }
	[ $# -ge 2 ] || { echo "host_bench.sh: unknown option or no value: $1" >&2; exit 2; }
	case $1 in
	--rounds) ROUNDS=$2 ;;
	--seconds) SECONDS_PER=$2 ;;
	--conns) CONNS=$2 ;;
	--only) ONLY=$2 ;;
	--raw) RAW=$2 ;;
	*) echo "host_bench.sh: unknown option $1; see --help" >&2; exit 2 ;;
	esac
	shift 2
done
for v in ROUNDS SECONDS_PER CONNS; do
	if ! [[ "${!v}" =~ ^[0-9]+$ ]] || [ "${!v}" -lt 1 ] || [ "${!v}" -gt 60 ]; then
		echo "host_bench.sh: $v '${!v}' is not a whole number in 1..60" >&2
		exit 2
	fi
done
[ -n "$ONLY" ] && IFS=, read -r -a CONFIGS <<< "none,empty,$ONLY"
[ "$(id -u)" = 0 ] || { echo "host_bench.sh: needs root (namespaces, XDP)" >&2; exit 1; }
for f in "$B/agent" "$B/ks_load" "$B/ks_empty.bpf.o" "$B/tests/ks_bpfstats"; do
	[ -e "$f" ] || { echo "host_bench.sh: $f missing; run make all tests first" >&2; exit 1; }
done
for c in memcached tcpdump; do
	command -v $c >/dev/null || { echo "host_bench.sh: $c missing (make deps)" >&2; exit 1; }
done

# Everything below runs with the BPF run-time statistics on.
if [ -z "${KS_HOST_BENCH_STATS:-}" ]; then
	KS_HOST_BENCH_STATS=1 exec "$B/tests/ks_bpfstats" run "$0" "${ARGS[@]}"
fi

CNS=ksh-c-$$ SNS=ksh-s-$$ CIF=khc$$ SIF=khs$$
SADDR=198.18.3.2
TMP=$(mktemp -d /tmp/ks_host_bench.XXXXXX)
KS_MEMCACHED_PID='' OBS_PID=''

cleanup() {
	trap - EXIT INT TERM HUP
	ks_stop_pid "$OBS_PID" INT
	ks_stop_pid "$KS_MEMCACHED_PID" TERM
	ip -n "$SNS" link set dev "$SIF" xdp off 2>/dev/null
	ks_ns_delete "$CNS" "$SNS"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

ks_pair_create "$CNS" "$SNS" "$CIF" "$SIF" 198.18.3.1/24 $SADDR/24 ||
	{ echo "host_bench.sh: making the namespaces failed" >&2; exit 1; }
ks_start_memcached "$SNS" $SADDR 11211 || exit 1
LOAD=(ks_in_ns "$CNS" "$B/ks_load" --server $SADDR:11211 --keys 10000 --mix get=100
	--conns "$CONNS")
"${LOAD[@]}" --proto tcp --preload --count 1 >/dev/null ||
	{ echo "host_bench.sh: ks_load could not preload memcached" >&2; exit 1; }

# 64 shards, this one first; the rest never answer (the client is ks_load
# with --server: every key comes here, most of them misdirected)
for i in $(seq 0 63); do
	if [ "$i" = 0 ]; then echo "$SADDR:11211"; else echo "10.99.$((i / 250)).$((i % 250)):11211"; fi
done > "$TMP/shards64"

cmd_get() {
	ks_in_ns "$CNS" bash -c "exec 3<>/dev/tcp/$SADDR/11211 && printf 'stats\r\nquit\r\n' >&3 && cat <&3" 2>/dev/null |
		awk '/^STAT cmd_get /{ print $3 + 0 }'
}
xdp_id() { ip -n "$SNS" link show dev "$SIF" | grep -o 'prog/xdp id [0-9]*' | awk '{ print $3 }'; }
# Get requests keysteer counted since load: ks_ops[KS_OP_GET] of the
# attached program, summed over CPUs (by map id: the program names
# the map, whatever the agent pinned).
agent_gets() {
	local id
	id=$(xdp_id)
	[ -n "$id" ] || return 1
	python3 - "$id" <<'PY'
import json, subprocess, sys
def tool(*a):
    return json.loads(subprocess.run(["bpftool", "-j", *a], check=True,
                                     capture_output=True, text=True).stdout)
prog = tool("prog", "show", "id", sys.argv[1])
for m in prog.get("map_ids", []):
    if tool("map", "show", "id", str(m)).get("name") != "ks_ops":
        continue
    v = tool("map", "lookup", "id", str(m), "key", "0", "0", "0", "0")
    print(sum(c["value"]["requests"] for c in v["formatted"]["values"]))
    break
else:
    sys.exit(1)
PY
}

# start CONFIG: attaches or starts the observer; 0 when it is in place
start() {
	OBS_PID=''
	case $1 in
	none) return 0 ;;
	empty) ip -n "$SNS" link set dev "$SIF" xdpdrv obj "$B/ks_empty.bpf.o" sec xdp ;;
	ks8 | ks1 | ring64)
		local args=(--iface "$SIF" --sample 8 --interval 1)
		[ "$1" = ks1 ] && args=(--iface "$SIF" --sample 1 --interval 1)
		[ "$1" = ring64 ] && args+=(--shards-file "$TMP/shards64" --self $SADDR:11211)
		ks_in_ns_bg "$SNS" "$B/agent" run "${args[@]}" > "$TMP/agent.out" 2>&1
		OBS_PID=$KS_BG_PID
		local i
		for i in $(seq 100); do
			[ -n "$(xdp_id)" ] && agent_gets >/dev/null && return 0
			kill -0 "$OBS_PID" 2>/dev/null || break
			sleep 0.1
		done
		echo "host_bench.sh: the agent did not attach: $(head -n 2 "$TMP/agent.out")" >&2
		return 1 ;;
	pcap | pcap96)
		local snap=0
		[ "$1" = pcap96 ] && snap=96
		rm -f "$TMP/cap.pcap"
		ks_in_ns_bg "$SNS" tcpdump -i "$SIF" -s $snap -w "$TMP/cap.pcap" -n 'dst port 11211' \
			2> "$TMP/tcpdump.err"
		OBS_PID=$KS_BG_PID
		sleep 1 ;;
	esac
}
stop() {
	case $1 in
	empty) ip -n "$SNS" link set dev "$SIF" xdp off ;;
	ks8 | ks1 | ring64 | pcap | pcap96) ks_stop_pid "$OBS_PID" INT ;;
	esac
	OBS_PID=''
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# one trial: prints "round config proto ops p99 cmd_get seen run_ns run_cnt obs_ticks"
trial() {
	local r=$1 cfg=$2 proto=$3 id st0 st1 g0 g1 s0 s1 t0 t1 out ops p99 seen
	id=$(xdp_id)
	g0=$(cmd_get)
	st0="0 0"
	[ -n "$id" ] && st0=$("$B/tests/ks_bpfstats" show "$id")
	s0=0
	case $cfg in ks*|ring*) s0=$(agent_gets) ;; esac
	t0=0
	case $cfg in pcap*) t0=$(cpu_ticks "$OBS_PID") ;; esac
	out=$("${LOAD[@]}" --proto "$proto" --duration "$SECONDS_PER" --json) || return 1
	t1=0
	case $cfg in pcap*) t1=$(cpu_ticks "$OBS_PID") ;; esac
	g1=$(cmd_get)
	st1="0 0"
	[ -n "$id" ] && st1=$("$B/tests/ks_bpfstats" show "$id")
	seen=-1
	case $cfg in ks*|ring*) s1=$(agent_gets); seen=$((s1 - s0)) ;; esac
	ops=$(python3 -c 'import json,sys; d=json.load(sys.stdin); o=d["ops"][0]; print(o["ops"]/d["duration_s"], o["latency_us"]["p99"])' <<< "$out")
	set -- $st0 $st1
	echo "$r $cfg $proto $ops $((g1 - g0)) $seen $(($3 - $1)) $(($4 - $2)) $((t1 - t0))"
}

echo "host_bench: memcached 1 x 2 threads in $SNS; ks_load --conns $CONNS flat out, gets of 10,000 keys"
echo "  $ROUNDS rounds x ${#CONFIGS[@]} configurations x tcp,udp x ${SECONDS_PER} s; CPU $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg)"
: > "$TMP/raw"
for r in $(seq "$ROUNDS"); do
	for cfg in "${CONFIGS[@]}"; do
		start "$cfg" || exit 1
		for proto in tcp udp; do
			line=$(trial "$r" "$cfg" "$proto") || { echo "host_bench.sh: ks_load failed" >&2; exit 1; }
			echo "$line" >> "$TMP/raw"
			echo "  $line"
		done
		if [ "${cfg#pcap}" != "$cfg" ]; then
			stop "$cfg"
			# request packets of both protocols in this capture
			n=$(tcpdump -r "$TMP/cap.pcap" -n 'udp or (tcp[tcpflags] & tcp-push != 0)' 2>/dev/null | wc -l)
			echo "$r $cfg both captured $n $(grep -o '[0-9]* packets dropped by kernel' "$TMP/tcpdump.err")" >> "$TMP/raw"
		else
			stop "$cfg"
		fi
	done
done
[ -n "$RAW" ] && cp "$TMP/raw" "$RAW"
python3 "$ROOT/tests/bench/host_report.py" "$TMP/raw"
