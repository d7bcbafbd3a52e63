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
# 2. all three members SIGSTOPped for 10 s (and until every agent has
#    logged 8 intervals in it): the agents stay up, count (their -v
#    lines), keep their ring, and their loop waits for etcd's calls at
#    most one call's deadline in all (their -v lines: 0 ms by design; the
#    control, FAULTS_AGENT_ARGS="--etcd-loop-call on", a 2 s deadline an
#    interval); after SIGCONT
#    every agent republishes hosts/SELF (etcd's watch, stamped) within an
#    interval and an allowance, all 4 in `agent fleet`; the time each
#    took and the mean intervals are printed;
# 4. two concurrent `ring set --if-revision R` through different first
#    endpoints: one wins, the other exits 1 naming the winner;
# 5. a ring that is not JSON and one whose digest its shards do not build,
#    put with etcdctl: refused by every agent (reload_errors, logged once),
#    never pushed (the report's digest), then a good ring taken; a hot/
#    entry that does not parse: `agent fleet` counts it refused, or at least
#    still works and lists no such host;
# 3. (last) an agent SIGKILLed: its hosts/ entry under a lease etcd
#    granted with the TTL the agent logged, deleted (etcd's watch, stamped)
#    within the TTL and 1.5 s of the kill, or of the last leader change
#    seen since then the TTL, etcd's election timeout and 1.5 s (a new
#    leader re-arms every lease: fleet_lib.sh fleet_term_moved),
#    `agent fleet` (text, --json) lists its shard without an agent, its hot
#    keys gone (hot/ entries, and the keys only counted its load document
#    lists; a FAIL when it never published one: nothing to check).
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
# interval (an agent between two intervals writes at the next one; one in
# the middle of a call gets its answer when etcd resumes), the publisher's
# deliberate spread of its re-puts after a lost lease (up to 0.5 s,
# KS_ETCD_PUB_REPUT_SPREAD_NS), plus 1.5 s for etcd's own recovery and a
# loaded machine (one CI run saw 2,063 ms, another 2,079 at load 30).
# Measured by etcd's watch, stamped; an agent whose loop the machine slows
# (its mean interval before the outage past --interval) gets that much
# more.
REPUBLISH_MAX_MS=$((IV_MS + 3000))
# The interval loop during the outage: etcd's calls run in the publisher's
# thread of its own (net/etcd_pub.c) and the watches never block, so the
# loop never waits for etcd. (Before that thread every call blocked the
# loop for up to its 2 s deadline: every interval took 3 s during the
# outage.) The property is measured where it is decided: each blocking
# etcd call (net/etcd.c call()) adds its time to its thread's wait, and
# the loop's -v etcd line prints the loop's own ("the loop waited MS ms in
# N etcd calls"). A healthy loop's is 0 whatever the machine's load (a
# load stretches calls, it makes none); the control (FAULTS_AGENT_ARGS=
# "--etcd-loop-call on": one call an interval on the loop) waits its
# 2,000 ms deadline at each of the outage's 8 or more intervals. The bound,
# one call's deadline in the whole outage, is far from both. (It was the
# loop's time off the CPU an interval against a window before, by
# schedstat: a healthy run's 0.95 s more and the control's 1.5 s sat on
# either side of a 1.2 s bound; those figures are still printed.)
LOOP_WAIT_MAX_MS=2000
# The lease is the TTL the agent logs (3 intervals, at least 5 s:
# docs/fleet.md); etcd checks expiry every 500 ms; 1 s more for the
# machine. Set from the victim's log line before the kill; a leader
# change after the kill moves it (scenario 3).
LEASE_GONE_MAX_MS=
LOAD_PID=
GW_PID=
REPUB_PID=
SELF=()
N=4

faults_cleanup() {
	local rc=$?
	[ -n "$LOAD_PID" ] && ks_stop_pid "$LOAD_PID" TERM 5
	[ -n "$GW_PID" ] && ks_stop_pid "$GW_PID" TERM 3
	[ -n "$REPUB_PID" ] && ks_stop_pid "$REPUB_PID" TERM 3
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

e2e_require fleet_faults "make deps: etcd-server, etcd-client, memcached" \
	etcd etcdctl memcached
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
# ring_now: "REVISION DIGEST" of the ring in etcd. Asked again until etcd
# answers (20 s at most): a loaded 3-member cluster can miss the CLI's 2 s
# deadline, and an empty answer would read as a wrong ring.
ring_now() {
	local t0 out
	t0=$(ms_now)
	until out=$(CLI ring get --etcd "$ETCD_URLS" --json 2>/dev/null | "$PY" -c 'import json,sys
d = json.load(sys.stdin); print(d["revision"], (d["ring"] or {}).get("digest"))' 2>/dev/null); do
		[ $(($(ms_now) - t0)) -lt 20000 ] || return 1
		sleep 0.3
	done
	echo "$out"
}
report() { "$AGENT" report --iface "${STEER_SHARD_IF[$1]}" --json >"$2" 2>"$2.err"; }
agent_out() { echo "$STEER_TMP/agent.$1.out"; }
# rep I: "SEQ INTERVAL_MS OPS VERSION DIGEST RELOAD_ERRORS" of agent I's
# report now (ks_fleet_faults.py report)
rep() {
	report "$1" "$E2E_TMP/rep.$1.json" && FF report "$E2E_TMP/rep.$1.json"
}
hosts_now() { etcd_ctl get --prefix "$PFX/hosts/" -w json 2>/dev/null | FF hosts; }
fleet_json() { CLI fleet --etcd "$ETCD_URLS" --json >"$1" 2>"$1.err"; }
# fleet_json_wait FILE: fleet_json until it answers, within 20 s: a cluster
# just resumed (SIGCONT) on a loaded machine may need longer than the CLI's
# 2 s deadline to answer; the check is what it answers, not how soon.
fleet_json_wait() {
	local t0
	t0=$(ms_now)
	until fleet_json "$1"; do
		[ $(($(ms_now) - t0)) -lt 20000 ] || return 1
		sleep 0.5
	done
}

# wait_all_on REV DIGEST: every running agent's report at that ring
# version and digest; 0 and the time in WAITED_MS, else (60 s: a guard,
# each round reads four reports, seconds at load) 1 and the laggards in
# LAGGARDS.
wait_all_on() {
	local rev=$1 dig=$2 t0 i v d
	t0=$(ms_now)
	while :; do
		LAGGARDS=
		for i in "${AGENTS[@]}"; do
			read -r _ _ _ v d _ <<<"$(rep "$i" 2>/dev/null)"
			[ "$v $d" = "$rev $dig" ] || LAGGARDS+=" ${SELF[i]}=v$v/$d"
		done
		if [ -z "$LAGGARDS" ]; then
			WAITED_MS=$(($(ms_now) - t0))
			return 0
		fi
		[ $(($(ms_now) - t0)) -lt 60000 ] || return 1
		sleep 0.1 # a poll's step
	done
}

# every_agent MS PRED: 0 once `PRED I` holds for every running agent I,
# 1 after MS ms
every_agent() {
	local ms=$1 t0 i n
	shift
	t0=$(ms_now)
	while [ $(($(ms_now) - t0)) -lt "$ms" ]; do
		n=0
		for i in "${AGENTS[@]}"; do
			"$@" "$i" && n=$((n + 1))
		done
		[ "$n" = ${#AGENTS[@]} ] && return 0
		sleep 0.1
	done
	return 1
}

# load_start NAME SECONDS: ks_load in the client namespace, in the
# background: TCP, 1500 ops/s over 2 connections, a flash key of 20% (hot
# for --shard-capacity 1000), bounded by SECONDS and the count. A failed
# request is an error or a reply that never came; a reply late by what a
# loaded 2-core machine adds is not, hence --timeout 10 (not the default 1).
load_start() {
	ks_in_ns_bg "$STEER_CLIENT_NS" nice -n "$KS_NICE" "$LOAD" \
		--shards-file "$STEER_SHARDS_FILE" --proto tcp --conns 2 \
		--timeout 10 \
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

# hot_check: the owners of the hot keys now in HOT_NOW (one a line), every
# owner ever seen in HOT_OWNERS: hot/ entries, and the keys only counted
# that each load document lists instead (these agents have no replicas:
# their keys are all counted), under the same lease
declare -A HOT_OWNERS=()
hot_check() {
	local o
	HOT_NOW=$({
		etcd_ctl get --prefix "$PFX/hot/" -w json | FF hot
		etcd_ctl get --prefix "/keysteer-load/default/" -w json | FF counted
	} 2>/dev/null)
	for o in $HOT_NOW; do
		HOT_OWNERS[$o]=1
	done
}

# ---- the ring and the agents ----------------------------------------------
out=$(CLI ring set --etcd "$ETCD_URLS" --shards "$(ring_list 1 1 1 1)" 2>&1)
if ! grep -q '^revision [0-9]* digest ' <<<"$out"; then
	fail fleet_faults_setup "ring set: $out"
	exit 1
fi
AGENTS=()
for i in "${!SELF[@]}"; do
	# shellcheck disable=SC2086 # FAULTS_AGENT_ARGS: words (a control)
	if ! steer_agent_start "$i" --etcd "$ETCD_URLS" --self "${SELF[i]}" \
		--interval $((IV_MS / 1000)) --shard-capacity 1000 -v \
		${FAULTS_AGENT_ARGS:-}; then
		fail fleet_faults_setup "agent $i did not start: $(tail -3 "$(agent_out "$i")")"
		exit 1
	fi
	AGENTS+=("$i")
done
read -r rev dig <<<"$(ring_now)"
if wait_all_on "$rev" "$dig"; then
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
	if [ -z "$leader" ] && ! etcd_wait_healthy 60; then
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
		sleep 0.3 # a pace: the next set, not a wait for an event
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
	if ! etcd_wait_healthy 60; then
		why="round $round: the cluster not healthy 60 s after m$((leader + 1)) restarted"
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
# Within 5 of each agent's own intervals from the moment the cluster was
# whole again (its -v lines from then on: the interval whose ring line
# first shows v$frev), not 5 s of the script's polls of four reports,
# which take seconds a round at load; the reports and `agent fleet` must
# then agree (60 s a guard, only a failure reaches it)
conv_ok='' conv_figs=''
declare -A CONV_OFF=()
for i in "${AGENTS[@]}"; do
	CONV_OFF[$i]=$(stat -c %s "$(agent_out "$i")")
done
if wait_all_on "$frev" "$fdig"; then
	conv_ms=$WAITED_MS
	t0=$SECONDS
	while [ $((SECONDS - t0)) -lt 60 ]; do
		fleet_json "$E2E_TMP/fleet.json"
		read -r nh revs _ _ <<<"$(FF fleet "$E2E_TMP/fleet.json" 2>/dev/null)"
		[ "$nh" = 4 ] && [ "$revs" = "$frev,$frev,$frev,$frev" ] && conv_ok=1 && break
		sleep 0.2 # a poll's step
	done
	# each agent's first ring line from then on, once it has logged one
	# at v$frev or 5 intervals without (60 s a guard)
	t0=$SECONDS
	for i in "${AGENTS[@]}"; do
		while :; do
			read -r n _ _ first <<<"$(FF span "$(agent_out "$i")" "${CONV_OFF[$i]}" - "$frev")"
			[ "${first:--1}" -ge 1 ] || [ "${n:-0}" -gt 5 ] ||
				[ $((SECONDS - t0)) -ge 60 ] && break
			sleep 0.2 # a poll's step
		done
		conv_figs+=" ${SELF[i]} ${first:-?};"
		[ "${first:--1}" -ge 1 ] && [ "$first" -le 5 ] || conv_ok=
	done
fi
if [ -n "$conv_ok" ]; then
	pass fleet_faults_leader_kill_agents_converge
	note "every agent on ring v$frev ($fdig) at its interval (from the cluster whole again):$conv_figs the reports all on it $conv_ms ms after; agent fleet: 4 hosts at $frev"
else
	fail fleet_faults_leader_kill_agents_converge "want v$frev $fdig within 5 intervals (the interval each took it:${conv_figs:- not reached}):${LAGGARDS:-} fleet: ${nh:-?} hosts at ${revs:-?}"
fi
load_end leader_kill

# ---- 2. etcd entirely unreachable for 10 s ---------------------------------
load_start outage 90
# the load reaching every shard before the outage: each agent's count of
# requests (its report's, written every interval) up since the load began
# (60 s for a loaded machine to start ks_load), so that what the agents
# count during the outage is the load's
declare -A OPS_L=()
for i in "${AGENTS[@]}"; do
	read -r _ _ "OPS_L[$i]" _ _ _ <<<"$(rep "$i")"
done
ops_up() { # I: agent I counted more than at the load's start
	local o
	read -r _ _ o _ _ _ <<<"$(rep "$1")"
	[ "${o:-0}" -gt "${OPS_L[$1]:-0}" ]
}
every_agent 60000 ops_up
VER0=()
for i in "${AGENTS[@]}"; do
	read -r _ _ _ "VER0[i]" _ _ <<<"$(rep "$i")"
done
hot_check
# The republish, timed by etcd's watch of the cluster's prefix (each line
# stamped as it arrives, established now; its probe key is $PFX/probe,
# which nobody reads, not one under hosts/), not by a poll of etcd after
# SIGCONT that takes seconds a round at load: the first put of each
# hosts/SELF that arrives from SIGCONT on
if ! fleet_stamp_start "${ETCD_NS[0]}" "$ETCD_URLS" "$PFX/" "$E2E_TMP/repub.watch"; then
	echo "$WHY" >>"$E2E_TMP/repub.watch.err"
fi
REPUB_PID=$STAMP_PID
# window NAME: each agent's log from now (byte offsets) until at least
# WINDOW_MS have passed and every agent has logged WINDOW_IVS intervals
# (its "#SEQ N req/s" lines) since, 120 s at most; the window's length in
# W_MS[NAME], each agent's intervals and requests in it in W_N[NAME.I] and
# W_REQS[NAME.I], its ring versions in W_VERS[NAME.I], and in W_IDLE[NAME.I]
# how long its loop (the main thread) was neither on a CPU nor waiting for
# one (the window less the thread's run time and run_delay, schedstat)
# nor held in the kernel (state D, sampled every 10 ms: the rtnl lock that
# other work's namespaces hold, grace periods; in W_HELD[NAME.I]): its
# sleeps and waits, the interval's own and any call's. The outage is
# such a window: its length is the scenario's (a pace), and the agents'
# own lines say what they did in it, however long a loaded machine makes
# it.
WINDOW_MS=10000
WINDOW_IVS=8
declare -A W_MS=() W_N=() W_REQS=() W_VERS=() W_IDLE=() W_DELAY=() W_HELD=()
declare -A W_WAIT=() W_WCALLS=()
# loop_cpu I: "RUN_NS RUN_DELAY_NS" of agent I's main thread (its loop)
loop_cpu() {
	local p=${STEER_AGENT_PIDS[$1]}
	cut -d' ' -f1,2 "/proc/$p/task/$p/schedstat" 2>/dev/null || echo "0 0"
}
window() {
	local name=$1 t0 i off=() cpu0=() n ok r0 d0 r1 d1 sp pids=() p samples held
	for i in "${AGENTS[@]}"; do
		pids+=("${STEER_AGENT_PIDS[i]}")
	done
	nice -n "$KS_NICE" "$PY" "$E2E_DIR/ks_fleet_faults.py" states "${pids[@]}" \
		>"$E2E_TMP/states.$name" 2>&1 &
	sp=$!
	t0=$(ms_now)
	for i in "${AGENTS[@]}"; do
		off[i]=$(stat -c %s "$(agent_out "$i")")
		cpu0[i]=$(loop_cpu "$i")
	done
	sleep $((WINDOW_MS / 1000)) # a pace: the window's (the outage's) length
	while :; do
		ok=1
		for i in "${AGENTS[@]}"; do
			n=$(tail -c +"$((off[i] + 1))" "$(agent_out "$i")" |
				grep -c '^keysteer: #[0-9]* [0-9.]* req/s ')
			[ "$n" -ge "$WINDOW_IVS" ] || ok=0
		done
		[ $ok = 1 ] || [ $(($(ms_now) - t0)) -ge 120000 ] && break
		sleep 0.2 # a poll's step
	done
	for i in "${AGENTS[@]}"; do
		W_END[i]=$(stat -c %s "$(agent_out "$i")")
		read -r r1 d1 <<<"$(loop_cpu "$i")"
		read -r r0 d0 <<<"${cpu0[i]}"
		W_DELAY[$name.$i]=$(((d1 - d0) / 1000000))
		W_IDLE[$name.$i]=$(((r1 - r0 + d1 - d0) / 1000000))
	done
	W_MS[$name]=$(($(ms_now) - t0))
	kill -TERM "$sp" 2>/dev/null
	wait "$sp"
	for i in "${AGENTS[@]}"; do
		read -r _ samples held <<<"$(grep "^${STEER_AGENT_PIDS[i]} " "$E2E_TMP/states.$name")"
		W_HELD[$name.$i]=$((${held:-0} * W_MS[$name] / (${samples:-0} > 0 ? samples : 1)))
		W_IDLE[$name.$i]=$((${W_MS[$name]} - ${W_IDLE[$name.$i]} - ${W_HELD[$name.$i]}))
		read -r "W_N[$name.$i]" "W_REQS[$name.$i]" "W_VERS[$name.$i]" _ \
			<<<"$(FF span "$(agent_out "$i")" "${off[i]}" "${W_END[i]}")"
		read -r "W_WCALLS[$name.$i]" "W_WAIT[$name.$i]" \
			<<<"$(FF waits "$(agent_out "$i")" "${off[i]}" "${W_END[i]}")"
	done
}
W_END=() MEAN_BEFORE=()
# The loop's pace with etcd up, over a window as long as the outage, just
# before it: the yardstick of the stretch check (same machine, same load)
window before
declare -A REPUB=()
declare -A LOG0=() # each agent's log lines before the outage
for i in "${AGENTS[@]}"; do
	LOG0[$i]=$(wc -l <"$(agent_out "$i")")
done
for m in 0 1 2; do
	etcd_member_signal "$m" STOP
done
t_stop=$(ms_now)
window outage
alive=1
for i in "${AGENTS[@]}"; do
	kill -0 "${STEER_AGENT_PIDS[i]}" 2>/dev/null || alive=0
done
for m in 0 1 2; do
	etcd_member_signal "$m" CONT
done
t_cont=$(ms_now)
note "etcd stopped for $((t_cont - t_stop)) ms"
counted=1 figures=
for i in "${AGENTS[@]}"; do
	[ "${W_N[outage.$i]}" -gt 0 ] && [ "${W_REQS[outage.$i]%.*}" -gt 0 ] &&
		[ "${W_VERS[outage.$i]}" = "${VER0[i]}" ] || counted=0
	figures+=" ${SELF[i]}: ${W_N[outage.$i]} intervals, ${W_REQS[outage.$i]} req/s summed, ring v${W_VERS[outage.$i]} (v${VER0[i]} before);"
done
if [ $alive = 1 ] && [ $counted = 1 ]; then
	pass fleet_faults_outage_agents_count
	note "during the outage (its agents' -v lines):$figures"
else
	fail fleet_faults_outage_agents_count "alive $alive, want intervals and requests counted and the ring kept:$figures"
fi
# How long each agent's loop waited for etcd's calls during the outage (its
# -v lines: LOOP_WAIT_MAX_MS above). Printed beside, not judged: its time
# off the CPU an interval (neither running nor waiting for a CPU nor held
# in the kernel: its sleeps and waits, schedstat) against its own just
# before, and the wall-clock means.
ok=1 figures=
for i in "${AGENTS[@]}"; do
	w=${W_WAIT[outage.$i]:--}
	figures+=" ${SELF[i]} waited for etcd ${w} ms in ${W_WCALLS[outage.$i]:--} calls (before ${W_WAIT[before.$i]:--} in ${W_WCALLS[before.$i]:--}),"
	# "-": no etcd line in the window, nothing to judge by
	[ "$w" != - ] && [ "${w%.*}" -le "$LOOP_WAIT_MAX_MS" ] || ok=0
	nb=${W_N[before.$i]} no=${W_N[outage.$i]}
	mb=$((W_MS[before] / (nb > 0 ? nb : 1)))
	mo=$((W_MS[outage] / (no > 0 ? no : 1)))
	ib=$((${W_IDLE[before.$i]} / (nb > 0 ? nb : 1)))
	io=$((${W_IDLE[outage.$i]} / (no > 0 ? no : 1)))
	MEAN_BEFORE[i]=$mb
	figures+=" off-CPU $io ms an interval (before $ib), wall $mo (before $mb), $no intervals in ${W_MS[outage]} ms ($nb in ${W_MS[before]}), CPU waits ${W_DELAY[outage.$i]} ms (before ${W_DELAY[before.$i]}), held in the kernel ${W_HELD[outage.$i]} ms (before ${W_HELD[before.$i]});"
done
note "the loop during the outage (--interval $IV_MS ms):$figures"
if [ $ok = 1 ]; then
	pass fleet_faults_outage_interval_stretch
else
	fail fleet_faults_outage_interval_stretch "want each agent's loop to wait for etcd at most $LOOP_WAIT_MAX_MS ms in the outage:$figures"
fi
# the republish: the watch's first put of each hosts/SELF from SIGCONT on,
# waited for (60 s a guard) and judged against REPUBLISH_MAX_MS past the
# agent's own mean interval before the outage, where it is longer than
# --interval (a loop the machine slows)
t0=$SECONDS
while [ ${#REPUB[@]} -lt ${#AGENTS[@]} ] && [ $((SECONDS - t0)) -lt 60 ]; do
	for i in "${AGENTS[@]}"; do
		[ -n "${REPUB[${SELF[i]}]:-}" ] && continue
		at=$("$PY" "$E2E_DIR/ks_watch_log.py" first-put "$E2E_TMP/repub.watch" \
			"/hosts/${SELF[i]}" "$t_cont" 2>/dev/null)
		[ -n "$at" ] && REPUB[${SELF[i]}]=$((at - t_cont))
	done
	sleep 0.1 # a poll's step
done
[ -n "$REPUB_PID" ] && ks_stop_pid "$REPUB_PID" TERM 3
REPUB_PID=
ok=1 figures=
for i in "${AGENTS[@]}"; do
	t=${REPUB[${SELF[i]}]:-}
	slow=$((MEAN_BEFORE[i] > IV_MS ? MEAN_BEFORE[i] - IV_MS : 0))
	figures+=" ${SELF[i]} ${t:-never} ms (bound $((REPUBLISH_MAX_MS + slow)));"
	[ -n "$t" ] && [ "$t" -le $((REPUBLISH_MAX_MS + slow)) ] || ok=0
done
fleet_json_wait "$E2E_TMP/fleet.json"
read -r nh revs without _ <<<"$(FF fleet "$E2E_TMP/fleet.json" 2>/dev/null)"
if [ $ok = 1 ] && [ "$nh" = 4 ] && [ "$without" = - ]; then
	pass fleet_faults_outage_republished
	note "hosts/ republished after SIGCONT (etcd's watch):$figures agent fleet: 4 hosts"
else
	fail fleet_faults_outage_republished "want each within its bound:$figures fleet: ${nh:-?} hosts, without an agent: ${without:-?} $(head -c 200 "$E2E_TMP/fleet.json.err") $(head -c 200 "$E2E_TMP/repub.watch.err")"
fi
# What the agents logged during the outage: a stopped member accepts
# connections (its kernel does) and never answers, so the failure is a
# timeout, never "no connection" (what a call on a reused connection was
# once taken for). The leader kills before leave real connect failures.
ok=1 figures=
for i in "${AGENTS[@]}"; do
	tail -n +"$((LOG0[$i] + 1))" "$(agent_out "$i")" >"$E2E_TMP/outage.$i.log"
	n=$(grep -c "etcd: .* failed (.*did not answer within 2000 ms" "$E2E_TMP/outage.$i.log")
	m=$(grep -c "no connection within" "$E2E_TMP/outage.$i.log")
	figures+=" ${SELF[i]} $n+$m;"
	[ "$n" -ge 1 ] && [ "$m" = 0 ] || ok=0
done
if [ $ok = 1 ]; then
	pass fleet_faults_outage_logged_as_timeout
else
	fail fleet_faults_outage_logged_as_timeout "want a 'did not answer' warning and no 'no connection' line (counts:$figures): $(grep -h 'etcd: keeping' "$STEER_TMP"/agent.*.out | head -4)"
fi
load_end outage

# ---- 4. two concurrent ring sets through different endpoints -------------
load_start race 30
IFS=, read -r -a URLS <<<"$ETCD_URLS"
set_a() { CLI ring set --etcd "${URLS[0]},${URLS[1]},${URLS[2]}" --shards "$LIST_A" "$@"; }
set_b() { CLI ring set --etcd "${URLS[2]},${URLS[1]},${URLS[0]}" --shards "$LIST_B" "$@"; }
ok=1
for round in 1 2 3; do
	# new rings: scenario 1 gave weights up to 5
	LIST_A=$(ring_list $((round + 5)) 1 1 1)
	LIST_B=$(ring_list 1 $((round + 5)) 1 1)
	if ! fleet_ring_race "$E2E_TMP" "$KEY" ring_now set_a set_b; then
		fail fleet_faults_concurrent_set "round $round: $RACE_WHY"
		ok=0
		break
	fi
	[ $round = 1 ] && note "$RACE_NOTE"
done
[ $ok = 1 ] && pass fleet_faults_concurrent_set
load_end race

# ---- 5. bad data in etcd ---------------------------------------------------
load_start bad_data 30
read -r rev dig <<<"$(ring_now)"
wait_all_on "$rev" "$dig" || note "not every agent on ring v$rev before the bad data:$LAGGARDS"
RE0=()
for i in "${AGENTS[@]}"; do
	read -r _ _ _ _ _ "RE0[i]" <<<"$(rep "$i")"
done
good=$(etcd_ctl get --print-value-only "$KEY")
etcd_ctl put "$KEY" '{"schema":1,"kind":"keysteer-ring","distribution":' >/dev/null
bad1=$(etcd_ctl get -w json "$KEY" | FF hosts | awk '{print $2}')
# every agent refused the first (its log line) before the second comes, so
# that each is a document of its own to refuse and log (60 s at most)
bad1_refused() { # I: agent I logged the refusal
	grep -q "ring not reloaded, v$rev stays: etcd $KEY revision $bad1 refused" \
		"$(agent_out "$1")"
}
every_agent 60000 bad1_refused
etcd_ctl put "$KEY" "$(FF bad-digest <<<"$good")" >/dev/null
bad2=$(etcd_ctl get -w json "$KEY" | FF hosts | awk '{print $2}')
SEQ_E=()
t0=$SECONDS
while [ $((SECONDS - t0)) -lt 60 ]; do # a guard: 4 reports a round
	n=0
	for i in "${AGENTS[@]}"; do
		read -r "SEQ_E[i]" _ _ _ _ e <<<"$(rep "$i")"
		[ "$e" -ge $((RE0[i] + 2)) ] && n=$((n + 1))
	done
	[ $n = ${#AGENTS[@]} ] && break
	sleep 0.1 # a poll's step
done
# one more whole interval of each agent after it counted both (its report's
# seq up by 2, not a guessed time): still nothing pushed (60 s at most)
seq_on() { # I: agent I's report 2 intervals past SEQ_E[I]
	local q
	read -r q _ _ _ _ _ <<<"$(rep "$1")"
	[ "${q:-0}" -ge $((${SEQ_E[$1]:-0} + 2)) ]
}
every_agent 60000 seq_on
ok=1 figures=
for i in "${AGENTS[@]}"; do
	read -r _ _ _ v d e <<<"$(rep "$i")"
	out=$(agent_out "$i")
	l1=$(grep -c "ring not reloaded, v$rev stays: etcd $KEY revision $bad1 refused: the ring document is not JSON" "$out")
	l2=$(grep -c "ring not reloaded, v$rev stays: etcd $KEY revision $bad2 refused: the ring document says .* digest 0123456789abcdef, but its shards build .* digest $dig" "$out")
	figures+=" ${SELF[i]}: v$v $d, reload_errors ${RE0[i]}->$e, logged $l1+$l2;"
	[ "$v $d" = "$rev $dig" ] && [ "$e" = $((RE0[i] + 2)) ] &&
		[ "$l1" = 1 ] && [ "$l2" = 1 ] || ok=0
done
if [ $ok = 1 ]; then
	pass fleet_faults_bad_ring_refused
	note "revisions $bad1 (not JSON) and $bad2 (wrong digest):$figures"
else
	fail fleet_faults_bad_ring_refused "want v$rev $dig kept, 2 more reload errors, each logged once:$figures"
fi
# A loaded 3-member cluster can miss the CLI's 2 s deadline: set again
# (60 s at most); a set that did land is only overwritten by the same ring.
t0=$(ms_now)
while :; do
	out=$(CLI ring set --etcd "$ETCD_URLS" --shards "$(ring_list 2 2 1 1)" 2>&1)
	read -r grev gdig <<<"$(awk '/^revision/ {print $2, $4}' <<<"$out")"
	[ -z "$grev" ] && [ $(($(ms_now) - t0)) -lt 60000 ] || break
	sleep 0.5
done
if [ -n "$grev" ] && wait_all_on "$grev" "$gdig"; then
	pass fleet_faults_good_ring_after_bad
	note "ring v$grev ($gdig) on every agent $WAITED_MS ms after ring set"
else
	fail fleet_faults_good_ring_after_bad "want v${grev:-?} ${gdig:-?}: $out;${LAGGARDS:-}"
fi
HOTBAD=$PFX/hot/ffffffffffffffff
etcd_ctl put "$HOTBAD" 'not a hot entry {' >/dev/null
# A loaded cluster that stalls past the agents' 5 s leases drops their
# hosts/ entries until each puts its own again: wait (60 s) for all 4.
t0=$(ms_now)
while :; do
	fleet_json "$E2E_TMP/fleet.json"
	rc=$?
	read -r nh _ _ hot_refused <<<"$(FF fleet "$E2E_TMP/fleet.json" 2>/dev/null)"
	[ "$rc" = 0 ] && [ "$nh" = 4 ] && break
	[ $(($(ms_now) - t0)) -lt 60000 ] || break
	sleep 0.5
done
text=$(CLI fleet --etcd "$ETCD_URLS" 2>&1)
trc=$?
if [ $rc = 0 ] && [ $trc = 0 ] && [ "$nh" = 4 ] && [ "${hot_refused:-0}" -ge 1 ] &&
	grep -q "refused hot/ffffffffffffffff" <<<"$text"; then
	pass fleet_faults_bad_hot_entry
	note "agent fleet --json: hot_refused $hot_refused, the entry listed as refused, 4 hosts"
else
	fail fleet_faults_bad_hot_entry "fleet exits $rc and $trc, $nh hosts, hot_refused ${hot_refused:-?}: $text"
fi
etcd_ctl del "$HOTBAD" >/dev/null
load_end bad_data

# ---- 3. an agent SIGKILLed -------------------------------------------------
load_start agent_kill 90
# the victim: an agent that publishes hot/ entries (the flash key's owner)
# once one does (60 s at most, within the 90 s load: a loaded machine is
# slow to call the key hot), else the last, and the hot/ check FAILs
VICTIM=3
t0=$SECONDS
while [ $((SECONDS - t0)) -lt 60 ]; do
	hot_check
	for i in "${AGENTS[@]}"; do
		grep -qxF "${SELF[i]}" <<<"$HOT_NOW" && VICTIM=$i && break 2
	done
	sleep 0.1
done
HOT_SEEN=${HOT_OWNERS[${SELF[VICTIM]}]:-0}
LEASE_S=$(sed -n 's/.*under a lease of \([0-9]*\) s.*/\1/p' "$(agent_out "$VICTIM")")
LEASE_GONE_MAX_MS=$((${LEASE_S:-5} * 1000 + 1500))
note "the victim: ${SELF[VICTIM]} (hot keys seen, hot/ or listed as counted: $HOT_SEEN)"
# the lease its hosts/ entry is under, as etcd granted it: the TTL the
# agent logged, not one that only reads so
vlease=$(hosts_now | awk -v s="${SELF[VICTIM]}" '$1 == s {print $3}')
GRANTED_S=
[ -n "$vlease" ] && GRANTED_S=$(etcd_ctl lease timetolive "$(printf %x "$vlease")" -w json 2>/dev/null |
	"$PY" -c 'import json,sys; print(json.load(sys.stdin)["granted-ttl"])' 2>/dev/null)
# When the entry went: etcd's watch of the cluster's prefix from a
# revision before the kill, each line stamped as it arrives (a poll says
# only that it was gone by the end of a call that takes a second and more
# on a loaded machine), and established before the kill
# (fleet_stamp_start: a second put of its probe delivered). Not
# established, at load 42 the watch was still starting (python, etcdctl)
# when the wait ended: "deleted never", the entry gone from etcd all the
# same. (From a fresh revision: a watch from revision 1 would replay the
# deletes of the outage's expired leases as if they were new.)
if ! fleet_stamp_start "${ETCD_NS[0]}" "$ETCD_URLS" "$PFX/" "$E2E_TMP/gone.watch"; then
	echo "$WHY" >>"$E2E_TMP/gone.watch.err"
fi
GW_PID=$STAMP_PID
fleet_term_start etcd_ctl
term0=$TERM_NOW
# Timed from the SIGKILL: no renewal leaves the agent after it. Its exit
# (the wait) can come seconds later on a loaded machine (the kernel
# freeing its sockets, maps and programs; once 5.1 s after the delete,
# which timed from the exit read -5,142 ms),
# so it is noted, not counted from.
t_kill=$(ms_now)
{
	kill -KILL "${STEER_AGENT_PIDS[VICTIM]}"
	wait "${STEER_AGENT_PIDS[VICTIM]}"
} 2>/dev/null
t_exit=$(ms_now)
unset "STEER_AGENT_PIDS[VICTIM]"
AGENTS=()
for i in "${!SELF[@]}"; do
	[ "$i" = "$VICTIM" ] || AGENTS+=("$i")
done
# The bound: the TTL after the kill, etcd's expiry check (500 ms) and the
# revoke's commit, 1.5 s for both on a loaded machine. Counted from the
# kill, or from a leader change seen since: a new leader re-arms the lease
# for the TTL and its election timeout (fleet_lib.sh fleet_term_moved; a
# leader moved 3.5 s after a 5 s lease's last renewal put its delete at
# 9.5 s: docs/testing.md). The wait ends at the delete, or 5 s past the
# bound (120 s at most: a cluster that keeps electing).
gone_at='' t_ref=$t_kill bound=$LEASE_GONE_MAX_MS elections=0
while :; do
	if fleet_term_moved etcd_ctl; then
		t_ref=$TERM_MOVED_MS elections=$((elections + 1))
		bound=$((LEASE_S * 1000 + FLEET_ETCD_ELECTION_MS + 1500))
	fi
	# deletes from the kill on: one before it would be a lease the
	# agent lost alive, not its death's
	gone_at=$("$PY" "$E2E_DIR/ks_watch_log.py" first-delete "$E2E_TMP/gone.watch" \
		"/${SELF[VICTIM]}" "$t_kill" 2>/dev/null)
	[ -n "$gone_at" ] && break
	now=$(ms_now)
	if [ $((now - t_ref)) -gt $((bound + 5000)) ] || [ $((now - t_kill)) -gt 120000 ]; then
		break
	fi
	sleep 0.1
done
# a leader change seen only now may have come before the delete
if fleet_term_moved etcd_ctl; then
	t_ref=$TERM_MOVED_MS elections=$((elections + 1))
	bound=$((LEASE_S * 1000 + FLEET_ETCD_ELECTION_MS + 1500))
fi
[ -n "$GW_PID" ] && ks_stop_pid "$GW_PID" TERM 3
GW_PID=
listed=
t0=$SECONDS
while [ $((SECONDS - t0)) -lt 30 ]; do # the delete done: a read no longer lists it
	listed=$(grep -c "^${SELF[VICTIM]} " <<<"$(hosts_now)")
	[ "$listed" = 0 ] && break
	sleep 0.3
done
hot_check # the same lease: gone with hosts/
text=$(CLI fleet --etcd "$ETCD_URLS" 2>&1)
fleet_json "$E2E_TMP/fleet.json"
read -r nh _ without _ <<<"$(FF fleet "$E2E_TMP/fleet.json" 2>/dev/null)"
gone=${gone_at:+$((gone_at - t_kill))}
since=${gone_at:+$((gone_at - t_ref))}
early=$(grep -c . < <("$PY" - "$E2E_TMP/gone.watch" "/${SELF[VICTIM]}" "$t_kill" "$E2E_DIR" <<'PYEOF'
import base64, sys
sys.path.insert(0, sys.argv[4])
from ks_watch_log import events
for ev in events(sys.argv[1]):
    key = base64.b64decode(ev["kv"]["key"]).decode()
    if ev.get("type") in (1, "DELETE") and key.endswith(sys.argv[2]) and ev.get("_at_ms", 0) < int(sys.argv[3]):
        print(ev["_at_ms"])
PYEOF
))
figures="lease $LEASE_S s logged, ${GRANTED_S:-?} s granted; deleted ${gone:-never} ms after SIGKILL (etcd's watch; $early delete(s) before the kill, a lease lost alive; the agent exited $((t_exit - t_kill)) ms after it); raft term $term0 to $TERM_NOW, $elections change(s) seen"
[ "$elections" -gt 0 ] && figures+=", the last $((t_ref - t_kill)) ms after the kill: deleted $since ms after it"
if [ -n "$LEASE_S" ] && [ "$GRANTED_S" = "$LEASE_S" ] && [ -n "$gone" ] &&
	[ "$since" -le "$bound" ] && [ "$listed" = 0 ]; then
	pass fleet_faults_killed_agent_entry_expires
	note "hosts/${SELF[VICTIM]}: $figures (bound $bound ms)"
else
	fail fleet_faults_killed_agent_entry_expires "want the lease granted with the logged TTL, hosts/${SELF[VICTIM]} deleted within $bound ms of the kill or of the last leader change and no longer listed ($listed): $figures $(head -c 200 "$E2E_TMP/gone.watch.err")"
fi
if [ "$nh" = 3 ] && [ "$without" = "${SELF[VICTIM]}" ] &&
	grep -q "^shards without an agent: ${SELF[VICTIM]}\$" <<<"$text" &&
	! grep -q "^${SELF[VICTIM]} " <<<"$text"; then
	pass fleet_faults_killed_agent_shard_marked
else
	fail fleet_faults_killed_agent_shard_marked "json: $nh hosts, without an agent '$without'; text: $text"
fi
if [ $HOT_SEEN = 1 ]; then
	hot_n=$(grep -cxF "${SELF[VICTIM]}" <<<"$HOT_NOW")
	if [ "$hot_n" = 0 ]; then
		pass fleet_faults_killed_agent_hot_gone
	else
		fail fleet_faults_killed_agent_hot_gone "$hot_n hot keys (hot/ or listed as counted) of ${SELF[VICTIM]} left"
	fi
else
	fail fleet_faults_killed_agent_hot_gone "no hot key (hot/ or listed as counted) of ${SELF[VICTIM]} was seen before the kill: nothing to see go"
fi
load_end agent_kill
