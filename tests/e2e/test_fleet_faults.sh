#!/usr/bin/env bash
# test_fleet_faults.sh - the fleet under faults (issue 12, "Faults";
# docs/fleet.md) with Debian's etcd 3.4, never a mock. The steering
# topology with 4 shards (user/scripts/steer_topo.sh: memcached on each, an
# agent per shard with --etcd, --self, --interval 1) and a 3-member etcd
# cluster, each member in a namespace of its own on the same bridge
# (tests/e2e/etcd_cluster.sh), every URL on a 198.18.2.x address. ks_load
# sends TCP gets and sets over the ketama ring of the 4 shards from the
# client namespace during every scenario (bounded in count and time); its
# failed requests must be 0 at the end of each (memcached never depends on
# etcd). Scenarios, each with its own result lines:
# 1. the leader SIGKILLed right after a `ring set` (once while it runs),
#    restarted with its data before the next round; a set that exits
#    non-zero is retried after `ring get`: every agent ends on the last
#    ring, every successful set is in etcd's history, none lost;
# 2. all three members SIGSTOPped for 10 s: the agents stay up, count
#    (report totals rise), keep their ring; after SIGCONT every agent
#    republishes hosts/SELF within an interval and an allowance, all 4 in
#    `agent fleet`; the time each took and the longest interval during the
#    outage are printed;
# 4. two concurrent `ring set --if-revision R` through different first
#    endpoints: one wins, the other exits 1 naming the winner;
# 5. a ring that is not JSON and one whose digest its shards do not build,
#    put with etcdctl: refused by every agent (reload_errors, logged once),
#    never pushed (the report's digest), then a good ring taken; a hot/
#    entry that does not parse: `agent fleet` counts it refused, or at least
#    still works and lists no such host;
# 3. (last) an agent SIGKILLed: its hosts/ entry gone within its lease,
#    `agent fleet` (text, --json) lists its shard without an agent, its hot/
#    entries gone (skip when the agent never published one).
# Every process is stopped by its pid and every namespace deleted on every
# exit path (the EXIT trap). E2E_KEEP=1 keeps the logs.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=fleet_lib.sh
. "$E2E_DIR/fleet_lib.sh"
# shellcheck source=etcd_cluster.sh
. "$E2E_DIR/etcd_cluster.sh"
# shellcheck source=../../user/scripts/steer_topo.sh
. "$E2E_ROOT/user/scripts/steer_topo.sh"
e2e_init fleet_faults

LOAD=$E2E_ROOT/${OUT:-build}/ks_load
KEY=/keysteer/default/ring
PFX=/keysteer/default
IV_MS=1000
# How long after etcd's return an agent may take to republish: one
# interval, plus one etcd call's deadline (2 s: an interval that began its
# keepalive on a stopped member waits that long), plus 0.5 s for a loaded
# machine.
REPUBLISH_MAX_MS=$((IV_MS + 2000 + 500))
# The longest interval allowed during the outage: today every etcd call of
# an interval blocks up to its 2 s deadline; loose (two deadlines and 1 s).
STRETCH_MAX_MS=$((IV_MS + 2 * 2000 + 1000))
# The lease is 3 intervals; etcd checks expiry every 500 ms; 1 s more for
# the machine.
LEASE_GONE_MAX_MS=$((3 * IV_MS + 1500))
LOAD_PID=
SELF=()
N=4

faults_cleanup() {
	local rc=$?
	[ -n "$LOAD_PID" ] && ks_stop_pid "$LOAD_PID" TERM 5
	if [ -n "${E2E_KEEP:-}" ] && [ -n "$STEER_TMP" ]; then
		cp "$STEER_TMP"/agent.*.out "$E2E_TMP/" 2>/dev/null
	fi
	steer_agents_stop # the agents first: they talk to etcd
	etcd_cluster_stop
	steer_topo_down
	(exit "$rc")
	e2e_cleanup
}
trap faults_cleanup EXIT

for tool in etcd etcdctl memcached; do
	if ! command -v "$tool" >/dev/null; then
		skip fleet_faults "$tool is not installed (make deps)"
		exit 0
	fi
done
if [ ! -x "$LOAD" ]; then
	fail fleet_faults "$LOAD is missing; run 'make' first"
	exit 1
fi

if ! steer_topo_up "$N" 0; then
	fail fleet_faults_setup "the topology did not come up"
	exit 1
fi
specs=()
for i in 0 1 2; do
	ns=ks_stet$((i + 1))_$$
	if ! steer_host_add "$ns" "kse$((i + 1))_$$" "198.18.2.$((201 + i))"; then
		fail fleet_faults_setup "etcd member namespace $ns"
		exit 1
	fi
	specs+=("$ns:198.18.2.$((201 + i))")
done
if ! etcd_cluster_start "$E2E_TMP/etcd" "${specs[@]}"; then
	fail fleet_faults_setup "the etcd cluster did not start"
	exit 1
fi
for i in "${!STEER_SHARD_ADDR[@]}"; do
	SELF[i]=${STEER_SHARD_ADDR[i]}:$STEER_PORT
done

CLI() { ks_in_ns "$STEER_CLIENT_NS" "$AGENT" "$@"; }
FF() { "$PY" "$E2E_DIR/ks_fleet_faults.py" "$@"; }
RK() { "$PY" "$E2E_DIR/ks_ring_keys.py" "$@"; }
ms_now() { echo $(($(date +%s%N) / 1000000)); }
# ring_list W0 W1 W2 W3: the 4 shards with those weights
ring_list() {
	local i list=
	for i in "${!SELF[@]}"; do
		list+=${list:+,}${SELF[i]}:${1:-1}
		shift
	done
	echo "$list"
}
# ring_now: "REVISION DIGEST" of the ring in etcd
ring_now() {
	CLI ring get --etcd "$ETCD_URLS" --json 2>/dev/null | "$PY" -c 'import json,sys
d = json.load(sys.stdin); print(d["revision"], (d["ring"] or {}).get("digest"))'
}
report() { "$AGENT" report --iface "${STEER_SHARD_IF[$1]}" --json >"$2" 2>"$2.err"; }
agent_out() { echo "$STEER_TMP/agent.$1.out"; }
# rep_field I PATH: one field of agent I's report (fresh)
rep_field() {
	report "$1" "$E2E_TMP/rep.$1.json" &&
		RK field --report "$E2E_TMP/rep.$1.json" "$2"
}
# ops_total I: every request the datapath of agent I has counted
ops_total() {
	report "$1" "$E2E_TMP/rep.$1.json" && "$PY" -c 'import json,sys
c = json.load(open(sys.argv[1]))["totals"]["classes"]
print(sum(v["requests"] for v in c.values()))' "$E2E_TMP/rep.$1.json"
}
hosts_now() { etcd_ctl get --prefix "$PFX/hosts/" -w json 2>/dev/null | FF hosts; }
fleet_json() { CLI fleet --etcd "$ETCD_URLS" --json >"$1" 2>"$1.err"; }

# wait_all_on REV DIGEST TENTHS: every running agent's report at that ring
# version and digest; 0 and the time in WAITED_MS, else 1 and the laggards
# in LAGGARDS.
wait_all_on() {
	local rev=$1 dig=$2 tenths=$3 t0 i k v d
	t0=$(ms_now)
	for ((k = 0; k < tenths; k++)); do
		LAGGARDS=
		for i in "${AGENTS[@]}"; do
			v=$(rep_field "$i" ring.version)
			d=$(RK field --report "$E2E_TMP/rep.$i.json" ring.digest 2>/dev/null)
			[ "$v $d" = "$rev $dig" ] || LAGGARDS+=" ${SELF[i]}=v$v/$d"
		done
		if [ -z "$LAGGARDS" ]; then
			WAITED_MS=$(($(ms_now) - t0))
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# load_start NAME SECONDS: ks_load in the client namespace, in the
# background: TCP, 1500 ops/s over 2 connections, a flash key of 20% (hot
# for --shard-capacity 1000), bounded by SECONDS and the count.
load_start() {
	ks_in_ns_bg "$STEER_CLIENT_NS" nice -n "$KS_NICE" "$LOAD" \
		--shards-file "$STEER_SHARDS_FILE" --proto tcp --conns 2 \
		--keys 2000 --flash flash:1:0.2 --rate 1500 \
		--duration "$2" --count $(($2 * 1500)) --json \
		</dev/null >"$E2E_TMP/load.$1.json" 2>"$E2E_TMP/load.$1.err"
	LOAD_PID=$KS_BG_PID
}
# load_end NAME: stop the load (SIGTERM: it prints its summary) and check
# that no request failed.
load_end() {
	local res
	ks_stop_pid "$LOAD_PID" TERM 10
	LOAD_PID=
	res=$(FF load "$E2E_TMP/load.$1.json" 2>/dev/null)
	if [ -n "$res" ] && [ "${res%% *}" = 0 ] && [ "${res##* }" -gt 0 ]; then
		pass "fleet_faults_$1_no_failed_requests"
		note "$1: ${res##* } requests, 0 failed"
	else
		fail "fleet_faults_$1_no_failed_requests" "failed/sent '${res:-no summary}': $(head -c 300 "$E2E_TMP/load.$1.err")"
	fi
}

# hot_seen: note whether agent VICTIM has published a hot/ entry yet
VICTIM=3
HOT_SEEN=0
hot_check() {
	local n
	n=$(etcd_ctl get --prefix "$PFX/hot/" -w json 2>/dev/null | FF hot "${SELF[VICTIM]}")
	[ "${n:-0}" -gt 0 ] && HOT_SEEN=1
	HOT_N=${n:-0}
}

# ---- the ring and the agents ----------------------------------------------
out=$(CLI ring set --etcd "$ETCD_URLS" --shards "$(ring_list 1 1 1 1)" 2>&1)
if ! grep -q '^revision [0-9]* digest ' <<<"$out"; then
	fail fleet_faults_setup "ring set: $out"
	exit 1
fi
AGENTS=()
for i in "${!SELF[@]}"; do
	if ! steer_agent_start "$i" --etcd "$ETCD_URLS" --self "${SELF[i]}" \
		--interval $((IV_MS / 1000)) --shard-capacity 1000 -v; then
		fail fleet_faults_setup "agent $i did not start: $(tail -3 "$(agent_out "$i")")"
		exit 1
	fi
	AGENTS+=("$i")
done
read -r rev dig <<<"$(ring_now)"
if wait_all_on "$rev" "$dig" 50; then
	note "4 agents on ring v$rev ($dig); etcd members ${ETCD_URLS//,/ }"
else
	fail fleet_faults_setup "agents not on ring v$rev:$LAGGARDS"
	exit 1
fi

# ---- 1. the leader killed during ring changes -----------------------------
load_start leader_kill 60
SET_REVS=() SET_DIGS=() RETRIES=0 ok=1 why=
for round in 1 2 3 4; do
	# weight round+1 on shard round%4: a new ring each round
	w=(1 1 1 1)
	w[round % 4]=$((round + 1))
	list=$(ring_list "${w[@]}")
	leader=$(etcd_leader)
	if [ -z "$leader" ] && ! etcd_wait_healthy 10; then
		why="round $round: no leader"
		ok=0
		break
	fi
	leader=$(etcd_leader)
	if [ "$round" = 2 ]; then
		# killed while the set runs
		t0=$(ms_now)
		CLI ring set --etcd "$ETCD_URLS" --shards "$list" \
			>"$E2E_TMP/set.out" 2>"$E2E_TMP/set.err" &
		sp=$!
		etcd_member_kill "$leader"
		tk=$(($(ms_now) - t0))
		wait "$sp"
		rc=$?
		note "round $round: the leader killed $tk ms after the set started, which returned after $(($(ms_now) - t0)) ms"
	else
		CLI ring set --etcd "$ETCD_URLS" --shards "$list" \
			>"$E2E_TMP/set.out" 2>"$E2E_TMP/set.err"
		rc=$?
		etcd_member_kill "$leader"
	fi
	note "round $round: ring set exit $rc, leader m$((leader + 1)) killed: $(cat "$E2E_TMP/set.out" "$E2E_TMP/set.err" | head -c 200 | tr '\n' ' ')"
	want=$("$AGENT" ring diff --from "$list" --to "$list" --keys 1 2>/dev/null |
		sed -n 's/^from [0-9]* shards (digest \([0-9a-f]*\)).*/\1/p')
	got=
	if [ $rc -eq 0 ]; then
		got=$(awk '/^revision/ {print $2, $4}' "$E2E_TMP/set.out")
	fi
	try=0
	while [ -z "$got" ] && [ $try -lt 20 ]; do
		try=$((try + 1))
		# not done (or not known): read the ring, set again only if the
		# first attempt did not happen
		read -r r d <<<"$(ring_now)"
		if [ -n "$want" ] && [ "$d" = "$want" ]; then
			got="$r $d"
			note "round $round: the failed set had happened (revision $r)"
			break
		fi
		sleep 0.3
		RETRIES=$((RETRIES + 1))
		CLI ring set --etcd "$ETCD_URLS" --shards "$list" \
			>"$E2E_TMP/set.out" 2>"$E2E_TMP/set.err" &&
			got=$(awk '/^revision/ {print $2, $4}' "$E2E_TMP/set.out")
	done
	if [ -z "$got" ]; then
		why="round $round: no ring set succeeded: $(cat "$E2E_TMP/set.err")"
		ok=0
		break
	fi
	SET_REVS+=("${got% *}") SET_DIGS+=("${got#* }")
	etcd_member_start "$leader"
	if ! etcd_wait_healthy 15; then
		why="round $round: the cluster not healthy 15 s after m$((leader + 1)) restarted"
		ok=0
		break
	fi
done
if [ $ok = 1 ]; then
	pass fleet_faults_leader_kill_sets_done
	note "revisions ${SET_REVS[*]}, $RETRIES retries"
else
	fail fleet_faults_leader_kill_sets_done "$why"
fi
# every successful set in etcd's history, in order, the last one the ring
hist=ok prev=0
for k in "${!SET_REVS[@]}"; do
	r=${SET_REVS[k]}
	if [ "$r" -le "$prev" ] ||
		! etcd_ctl get --rev="$r" "$KEY" -w json 2>/dev/null | FF at "$r" "${SET_DIGS[k]}"; then
		hist="revision $r (${SET_DIGS[k]}) not in etcd's history as written"
		break
	fi
	prev=$r
done
read -r frev fdig <<<"$(ring_now)"
last=$((${#SET_REVS[@]} - 1))
if [ $ok = 1 ] && [ "$hist" = ok ] && [ "$frev" = "${SET_REVS[last]}" ] &&
	[ "$fdig" = "${SET_DIGS[last]}" ]; then
	pass fleet_faults_leader_kill_no_change_lost
else
	fail fleet_faults_leader_kill_no_change_lost "$hist; etcd at $frev $fdig, last set ${SET_REVS[last]:-} ${SET_DIGS[last]:-}"
fi
conv_ok=
if wait_all_on "$frev" "$fdig" 80; then
	conv_ms=$WAITED_MS
	for ((k = 0; k < 40; k++)); do
		fleet_json "$E2E_TMP/fleet.json"
		read -r nh revs _ _ <<<"$(FF fleet "$E2E_TMP/fleet.json" 2>/dev/null)"
		[ "$nh" = 4 ] && [ "$revs" = "$frev,$frev,$frev,$frev" ] && conv_ok=1 && break
		sleep 0.2
	done
fi
if [ -n "$conv_ok" ] && [ "$conv_ms" -le $((5 * IV_MS)) ]; then
	pass fleet_faults_leader_kill_agents_converge
	note "every agent on ring v$frev ($fdig) $conv_ms ms after the cluster was whole again; agent fleet: 4 hosts at $frev"
else
	fail fleet_faults_leader_kill_agents_converge "want v$frev $fdig within 5 intervals:${LAGGARDS:-} fleet: ${nh:-?} hosts at ${revs:-?}"
fi
load_end leader_kill
