#!/usr/bin/env bash
# demo_steer.sh - the second part of `make demo`: one key melting one shard,
# and keysteer spreading its reads over L1 replicas.
#
#   user/scripts/demo_steer.sh      (run as root, after `make`; about 40 s)
#
# Four shard hosts and two L1 replica hosts, each a network namespace with
# memcached, on one bridge (user/scripts/steer_topo.sh); a client sends gets
# over UDP routed with the ketama ring: Zipf over 20,000 keys plus a flash
# sale key in 30% of the requests. First without keysteer, then with an
# agent on every shard. Each shard's load is read from memcached's own
# counters (cmd_get). Everything is removed on exit, Ctrl-C included.
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=steer_topo.sh
. "$ROOT/user/scripts/steer_topo.sh"
# shellcheck source=demo_lib.sh
. "$ROOT/user/scripts/demo_lib.sh"
RATE=4000 SECS=8 KEY=flash:sale

demo_need_root
for f in "$LOAD" "$STEER_AGENT"; do
	[ -x "$f" ] || die "$f is missing; run 'make' first"
done
demo_traps steer_topo_down

say "network: a client, 4 shards (198.18.2.11-14) and 2 L1 replicas (198.18.2.101-102) on one bridge"
steer_topo_up 4 2 || die "could not build the network"
MC=("${STEER_SHARD_ADDR[@]/%/:$STEER_PORT}" "${STEER_REPLICA_ADDR[@]/%/:$STEER_PORT}")
SHARDS=$(IFS=,; echo "${STEER_SHARD_ADDR[*]/%/:$STEER_PORT}")
OWNER=$("$STEER_AGENT" ring lookup --shards-file "$STEER_SHARDS_FILE" "$KEY" | awk '{print $2}')
echo "the ring gives $KEY to shard ${STEER_SHARD_ADDR[OWNER]}"

client() { ks_in_ns "$STEER_CLIENT_NS" "$@"; }
snap() { client "$PY" "$MC_STATS" snap "${MC[@]}" >"$STEER_TMP/$1.json"; }

# load NAME: SECS seconds of gets, then each host's share of them.
load() {
	local name=$1
	snap "$name.0"
	client "$LOAD" --shards-file "$STEER_SHARDS_FILE" --proto udp --keys 20000 \
		--zipf 0.9 --flash "$KEY:0.3" --mix get=100 --duration "$SECS" \
		--rate "$RATE" --conns 4 --json >"$STEER_TMP/$name.load.json" 2>/dev/null ||
		die "ks_load failed"
	snap "$name.1"
	"$PY" "$MC_STATS" diff "$STEER_TMP/$name.0.json" "$STEER_TMP/$name.1.json" \
		--fields cmd_get --group "shards=$SHARDS" >"$STEER_TMP/$name.diff.json"
	"$PY" - "$STEER_TMP/$name.diff.json" "$STEER_TMP/$name.load.json" \
		"${STEER_SHARD_ADDR[OWNER]}:$STEER_PORT" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1])); l = json.load(open(sys.argv[2]))
owner = sys.argv[3]
for hp, v in d["deltas"].items():
    kind = "replica" if int(hp.split(":")[0].split(".")[-1]) >= 100 else "shard  "
    n = v["cmd_get"]
    print("  %s %-20s %6d gets %s%s" % (kind, hp, n, "#" * (n // 800),
          "  <- owns the flash key" if hp == owner else ""))
g = d["groups"]["shards"]["cmd_get"]
print("  busiest shard / mean: %.2f; %d of %d gets answered by a replica" % (
    g["busiest_over_mean"], l["steered"], sum(o["ops"] for o in l["ops"])))
PYEOF
}

say "$SECS s of load without keysteer: $RATE gets/s over UDP, ketama, Zipf 0.9 over 20,000 keys + $KEY in 30%"
client "$LOAD" --shards-file "$STEER_SHARDS_FILE" --keys 20000 --flash "$KEY:0.3" \
	--mix set=100 --preload --count 1 >/dev/null 2>&1 || die "could not fill memcached"
load none

say "an agent on every shard: --replicas $STEER_REPLICAS --shard-capacity 1000 --hot-fraction 0.05"
for i in "${!STEER_SHARD_ADDR[@]}"; do
	steer_agent_start "$i" --interval 1 --shards-file "$STEER_SHARDS_FILE" \
		--self "${STEER_SHARD_ADDR[i]}:$STEER_PORT" --replicas "$STEER_REPLICAS" \
		--shard-capacity 1000 --hot-fraction 0.05 ||
		die "the agent on shard $i did not start: $(head -n 2 "$STEER_TMP/agent.$i.out")"
done

say "the same load with keysteer (after 2 s for the agents to find the hot keys)"
client "$LOAD" --shards-file "$STEER_SHARDS_FILE" --proto udp --keys 20000 --zipf 0.9 \
	--flash "$KEY:0.3" --mix get=100 --duration 2 --rate "$RATE" --conns 4 >/dev/null 2>&1
load steer >"$STEER_TMP/steer.table" 2>&1 &
LOAD_PID=$!
sleep $((SECS / 2))
say "agent report on the flash key's shard, mid-run (hot keys and replicas)"
"$STEER_AGENT" report --iface "${STEER_SHARD_IF[OWNER]}" | sed -n '/^hot keys/,$p'
wait "$LOAD_PID"
say "the same load with keysteer: gets per host"
cat "$STEER_TMP/steer.table"
steer_agents_stop
