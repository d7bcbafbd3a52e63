# shellcheck shell=bash
# live_lib.sh - what host_bench.sh and stage_bench.sh share: the one-shard
# topology with bpf_stats on (live_up), ks_load's command line for a
# workload and the XDP program's bpf_stats on the shard's veth. Source it
# after steer_topo.sh; it defines functions only and reads CONNS and PY.

# live_up NREPLICAS: steer_topo with one shard and NREPLICAS replicas,
# kernel.bpf_stats_enabled on, both undone on exit (first the caller's
# live_on_exit, when it defines one). Sets NS, IF, SRV (the shard's
# address:port) and RUNS (an empty file for the runs' lines).
live_up() {
	LIVE_STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled)
	trap live_down EXIT
	trap 'exit 130' INT TERM HUP
	steer_topo_up 1 "$1" || exit 1
	NS=${STEER_SHARD_NS[0]} IF=${STEER_SHARD_IF[0]} SRV=${STEER_SHARD_ADDR[0]}:$STEER_PORT
	RUNS=$STEER_TMP/runs.jsonl
	: >"$RUNS"
	sysctl -qw kernel.bpf_stats_enabled=1
}
live_down() {
	declare -F live_on_exit >/dev/null && live_on_exit
	steer_agents_stop
	steer_topo_down
	sysctl -qw kernel.bpf_stats_enabled="$LIVE_STATS_WAS"
}

# live_load_args WORKLOAD: ks_load's arguments, one a line: udp (gets over
# UDP), tcp (gets over TCP), mix (TCP: get=80, mget=10 of 8 keys, set=10);
# 100,000 keys, Zipf 0.99, a flash key at 10%, flat out.
live_load_args() {
	local a=(--server "$SRV" --keys 100000 --zipf 0.99 --flash flash:1:0.10
		--conns "$CONNS" --rate 0 --json)
	# shellcheck disable=SC2054 # the commas are ks_load's
	case $1 in
	udp) a+=(--proto udp --mix get=100) ;;
	tcp) a+=(--proto tcp --mix get=100) ;;
	mix) a+=(--proto tcp --mix get=80,mget=10,set=10 --mget-size 8) ;;
	esac
	printf '%s\n' "${a[@]}"
}

# live_xdp_prog_id: the id of the XDP program on the shard's veth, or
# nothing.
live_xdp_prog_id() {
	ip -n "$NS" -d -j link show dev "$IF" | "$PY" -c '
import json, sys
l = json.load(sys.stdin)[0]
x = l.get("xdp") or {}
p = x.get("prog") or next((a.get("prog") for a in x.get("attached", []) if a.get("prog")), None)
print(p["id"] if p else "")'
}

# live_prog_stats ID: "run_time_ns run_cnt" of the program ("0 0" for no
# id).
live_prog_stats() {
	[ -n "$1" ] || { echo "0 0"; return; }
	bpftool -j prog show id "$1" | "$PY" -c '
import json, sys
p = json.load(sys.stdin)
print(p.get("run_time_ns", 0), p.get("run_cnt", 0))'
}
