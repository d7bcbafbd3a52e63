#!/usr/bin/env bash
# demo_fleet.sh - the third part of `make demo`: the fleet in etcd. One
# etcd, four shards with an agent each, a skewed load, and `agent fleet`
# showing every shard side by side: the flash key's owner as the busiest,
# then its reads spread over two L1 replicas.
#
#   DEMO_FLEET_SECONDS=5 user/scripts/demo_fleet.sh
#       (run as root, after `make`; about 12 s. DEMO_FLEET_SECONDS, default
#       5, is how long the spread is measured once the key is armed)
#
# The network is steer_topo.sh's: a client, 4 shards (198.18.2.11-14) and 2
# L1 replicas (198.18.2.101-102), each a namespace with memcached, on one
# bridge; etcd 3.4 runs in the client's namespace, listening on its bridge
# address only. Every name carries this shell's PID. Everything it made is
# removed on every exit, Ctrl-C included; only processes it started are
# stopped, by their PIDs.
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=steer_topo.sh
. "$ROOT/user/scripts/steer_topo.sh"
# shellcheck source=demo_lib.sh
. "$ROOT/user/scripts/demo_lib.sh"
DEMO_FLEET_SECONDS=${DEMO_FLEET_SECONDS:-5}
KEY=flash:sale PCT=40 KEYS=20000 RATE=4000 CLUSTER=demo
# A key is hot at 0.5 x 1000 = 500 reads/s: the flash key (1600/s) is, the
# Zipf keys (the first about 140/s) are not, so the replicas carry it alone.
CAPACITY=1000 HOT_FRACTION=0.5

ETCD_PID='' LOAD_PID=''

cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	echo
	say "cleaning up"
	[ -n "$LOAD_PID" ] && ks_stop_pid "$LOAD_PID" TERM 3
	demo_etcd_topo_down
	exit "$rc"
}

demo_need_root
demo_seconds DEMO_FLEET_SECONDS "$DEMO_FLEET_SECONDS" 2 600
for f in "$LOAD" "$STEER_AGENT"; do
	[ -x "$f" ] || die "$f is missing; run 'make' first"
done
for t in etcd memcached; do
	command -v "$t" >/dev/null || die "$t is missing; run 'make deps'"
done
demo_traps cleanup

say "network: a client with etcd (198.18.2.1), 4 shards (198.18.2.11-14) and 2 L1 replicas (198.18.2.101-102) on one bridge, memcached on each"
steer_topo_up 4 2 || die "could not build the network"
CNS=$STEER_CLIENT_NS
URL=http://$STEER_CLIENT_ADDR:2379
ETCD=(--etcd "$URL" --cluster "$CLUSTER")
client() { ks_in_ns "$CNS" "$@"; }
fleet() { client "$STEER_AGENT" fleet "${ETCD[@]}" "$@"; }
# what the demo says about fleet documents and memcached stats
fleet_py() { "$PY" "$ROOT/user/scripts/demo_fleet.py" "$@"; }
SHARDS=("${STEER_SHARD_ADDR[@]/%/:$STEER_PORT}")
REPLICAS=("${STEER_REPLICA_ADDR[@]/%/:$STEER_PORT}")
OWNER=$("$STEER_AGENT" ring lookup --shards-file "$STEER_SHARDS_FILE" "$KEY" | awk '{print $2}')
OSELF=${SHARDS[OWNER]}
client "$LOAD" --shards-file "$STEER_SHARDS_FILE" --keys "$KEYS" --flash "$KEY:0.$PCT" \
	--mix set=100 --preload --count 1 >/dev/null 2>&1 || die "could not fill memcached"
echo "filled $KEYS keys and $KEY; the ketama ring gives $KEY to $OSELF"

ks_start_etcd "$CNS" demo "$URL" 2380 "$STEER_TMP" >"$STEER_TMP/etcd.start" ||
	die "$(cat "$STEER_TMP/etcd.start")"
ETCD_PID=$KS_ETCD_PID
echo "etcd $(etcd --version | awk '/^etcd Version/ {print $3}') on $URL (client namespace only), pid $ETCD_PID"

say "agent ring set --etcd $URL --cluster $CLUSTER --shards-file (the 4 shards)"
client "$STEER_AGENT" ring set "${ETCD[@]}" --shards-file "$STEER_SHARDS_FILE" ||
	die "ring set failed"

say "an agent per shard: --etcd $URL --self ADDR:11211 --replicas $STEER_REPLICAS --interval 1"
for i in "${!SHARDS[@]}"; do
	steer_agent_start "$i" "${ETCD[@]}" --self "${SHARDS[i]}" --interval 1 --sample 1 \
		--export-keys --replicas "$STEER_REPLICAS" --shard-capacity "$CAPACITY" \
		--hot-fraction "$HOT_FRACTION" ||
		die "the agent on ${SHARDS[i]} did not start: $(head -n 2 "$STEER_TMP/agent.$i.out")"
	echo "  ${SHARDS[i]}: $(grep -m1 "attached to" "$STEER_TMP/agent.$i.out")"
done

# wait_for MODE SECONDS ARGS...: `agent fleet --json` into $STEER_TMP/f.json
# until fleet_py MODE f.json ARGS... says so (0), or SECONDS pass (1).
wait_for() {
	local mode=$1 end=$((SECONDS + $2))
	shift 2
	while [ "$SECONDS" -lt "$end" ]; do
		fleet --json >"$STEER_TMP/f.json" 2>/dev/null &&
			fleet_py "$mode" "$STEER_TMP/f.json" "$@" && return 0
		nap 0.25
	done
	return 1
}

say "skewed load from the client: $RATE gets/s over UDP, ketama, Zipf 0.9 over $KEYS keys + $KEY in $PCT% of them"
# Bounded by --duration whatever happens here; stopped once the spread is shown.
ks_in_ns_bg "$CNS" "$LOAD" --shards-file "$STEER_SHARDS_FILE" --proto udp --keys "$KEYS" \
	--zipf 0.9 --flash "$KEY:0.$PCT" --mix get=100 --rate "$RATE" --conns 4 \
	--duration $((DEMO_FLEET_SECONDS + 40)) --json \
	</dev/null >"$STEER_TMP/load.json" 2>"$STEER_TMP/load.err"
LOAD_PID=$KS_BG_PID
nap 3.2 # three intervals, the third one under load
wait_for ready 10 "$KEY" ||
	warn "after 13 s not every shard has an agent up with reads, or $KEY has no hot/ entry"

say "agent fleet --etcd $URL --cluster $CLUSTER --top 5 (in the client namespace)"
fleet --top 5 || warn "agent fleet failed"
if fleet --json >"$STEER_TMP/story.json"; then
	fleet_py story "$STEER_TMP/story.json" "$KEY" "$OSELF"
else
	warn "agent fleet --json failed: the story is not checked"
fi

say "the load spread: $KEY armed on both replicas"
wait_for armed 10 "$KEY" "${#REPLICAS[@]}" ||
	warn "$KEY is not armed on ${#REPLICAS[@]} replicas after 10 s"
fleet --top 0 >"$STEER_TMP/hot.txt" || warn "agent fleet failed"
sed -n '/^hot keys/,$p' "$STEER_TMP/hot.txt"

say "gets per host over $DEMO_FLEET_SECONDS s: received at each shard's interface (agent fleet) and served by each memcached (stats cmd_get)"
client "$PY" "$MC_STATS" snap "${SHARDS[@]}" "${REPLICAS[@]}" >"$STEER_TMP/mc.0.json" ||
	die "memcached stats failed"
docs=()
for ((i = 1; i <= DEMO_FLEET_SECONDS; i++)); do
	nap 1
	fleet --json >"$STEER_TMP/w.$i.json" && docs+=("$STEER_TMP/w.$i.json")
done
client "$PY" "$MC_STATS" snap "${SHARDS[@]}" "${REPLICAS[@]}" >"$STEER_TMP/mc.1.json" ||
	die "memcached stats failed"
[ "${#docs[@]}" -gt 0 ] || die "agent fleet --json failed during the window"
[ "${#docs[@]}" -eq "$DEMO_FLEET_SECONDS" ] ||
	warn "agent fleet --json answered ${#docs[@]} of $DEMO_FLEET_SECONDS times; the received rates are from those"
fleet_py spread "$KEY" "$OSELF" "$STEER_TMP/mc.0.json" "$STEER_TMP/mc.1.json" "${docs[@]}"
echo "agent fleet counts each request as it arrives at a shard's interface, before"
echo "steering: the owner stays the busiest there. memcached's counters show where"
echo "the gets are served: $KEY's go to the replicas, not to its owner."

ks_stop_pid "$LOAD_PID" TERM 3
LOAD_PID=
fleet_py load "$STEER_TMP/load.json" 2>/dev/null || warn "ks_load said: $(tail -n 2 "$STEER_TMP/load.err")"

say "as an operator: agent fleet --etcd URL --cluster NAME --watch (live; Ctrl-C ends it)" \
	"and agent ring get --etcd URL --cluster NAME (the ring every agent runs); here URL was $URL, NAME $CLUSTER"
