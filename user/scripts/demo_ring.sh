#!/usr/bin/env bash
# demo_ring.sh - the fourth part of `make demo`: a shard added and removed.
# A key that moves from shard A to a new shard E, is written on E, and moves
# back to A when E leaves finds its old value still on A: an acknowledged
# write undone. Shown twice with plain clients: agents with the
# ownership-loss purge off (--purge-rate 0 --purge-sweep-rate 0, the
# production way to turn it off), where every moved key reads its old value
# again; then with it on (the defaults), where none does.
#
#   DEMO_RING_KEYS=3000 user/scripts/demo_ring.sh
#       (run as root, after `make`; about 25 s. DEMO_RING_KEYS, default
#       3000, 100..100000, is how many keys the client writes)
#
# The network is steer_topo.sh's on a subnet of its own, 198.18.4.0/24 (no
# other demo part or test uses it): a client with etcd 3.4 (198.18.4.1, on
# that address only) and shards A, B, C, E (198.18.4.11-14), each a
# namespace with memcached, on one bridge. A, B and C run an agent with
# --etcd --self; E is a plain memcached. Every name carries this shell's
# PID. Everything it made is removed on every exit, Ctrl-C included; only
# processes it started are stopped, by their PIDs.
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=steer_topo.sh
. "$ROOT/user/scripts/steer_topo.sh"
# shellcheck source=demo_lib.sh
. "$ROOT/user/scripts/demo_lib.sh"
STEER_NET=198.18.4
DEMO_RING_KEYS=${DEMO_RING_KEYS:-3000}
CLUSTER=demoring
NAMES=(A B C E)
# Waits for agents, etcd and the purge: quiet each takes about a second;
# the bound is for a loaded 2-core machine.
WAIT_S=60

ETCD_PID=''

cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	echo
	say "cleaning up"
	demo_etcd_topo_down
	exit "$rc"
}

demo_need_root
case $DEMO_RING_KEYS in
'' | *[!0-9]*) die "DEMO_RING_KEYS='$DEMO_RING_KEYS' is not a whole number" ;;
esac
if [ "$DEMO_RING_KEYS" -lt 100 ] || [ "$DEMO_RING_KEYS" -gt 100000 ]; then
	die "DEMO_RING_KEYS must be 100..100000"
fi
[ -x "$STEER_AGENT" ] || die "$STEER_AGENT is missing; run 'make' first"
for t in etcd memcached; do
	command -v "$t" >/dev/null || die "$t is missing; run 'make deps'"
done
"$PY" -c 'import pymemcache' 2>/dev/null ||
	die "$PY cannot import pymemcache; install python3-pymemcache (make deps)"
demo_traps cleanup

say "network: a client with etcd ($STEER_NET.1) and shards A, B, C, E ($STEER_NET.11-14) on one bridge, memcached on each"
steer_topo_up 4 0 || die "could not build the network"
CNS=$STEER_CLIENT_NS
URL=http://$STEER_CLIENT_ADDR:2379
ETCD=(--etcd "$URL" --etcd-timeout 10000 --cluster "$CLUSTER")
client() { ks_in_ns "$CNS" "$@"; }
ring_py() { client "$PY" "$ROOT/user/scripts/demo_ring.py" "$@"; }
T=$STEER_TMP
ABC=$T/abc.txt ABCE=$T/abce.txt
head -n 3 "$STEER_SHARDS_FILE" >"$ABC"
cp "$STEER_SHARDS_FILE" "$ABCE"
E_HP=$(sed -n 4p "$ABCE")
for ((i = 0; i < DEMO_RING_KEYS; i++)); do printf 'user:%06d\n' "$i"; done >"$T/keys"
for ring in abc abce; do
	"$STEER_AGENT" ring lookup --shards-file "$T/$ring.txt" <"$T/keys" >"$T/lk_$ring" ||
		die "agent ring lookup failed"
done
for i in "${!NAMES[@]}"; do
	echo "  ${NAMES[i]} ${STEER_SHARD_ADDR[i]}:$STEER_PORT"
done

ks_start_etcd "$CNS" demoring "$URL" 2380 "$T" >"$T/etcd.start" ||
	die "$(cat "$T/etcd.start")"
ETCD_PID=$KS_ETCD_PID
echo "etcd $(etcd --version | awk '/^etcd Version/ {print $3}') on $URL (client namespace only), pid $ETCD_PID"

# ring_set FILE: `agent ring set`, its account of what the change moves
# shown; REV is the etcd revision it wrote.
REV=
ring_set() {
	local out
	out=$(client "$STEER_AGENT" ring set "${ETCD[@]}" --shards-file "$1" 2>&1)
	sed '/^ *$/d; s/^/  /' <<<"$out"
	REV=$(sed -n 's/^revision \([0-9]*\) digest .*/\1/p' <<<"$out")
	[ -n "$REV" ] || die "agent ring set failed"
}

# agents_at REV ring|purged: 0 once the report of each agent (A, B, C) runs
# ring version REV and, with purged, has ended a purge pass for it.
agents_at() {
	local end=$((SECONDS + WAIT_S)) i
	while [ "$SECONDS" -lt "$end" ]; do
		for i in 0 1 2; do
			ks_in_ns "${STEER_SHARD_NS[i]}" "$STEER_AGENT" report \
				--iface "${STEER_SHARD_IF[i]}" --json >"$T/rep.$i.json" 2>/dev/null ||
				: >"$T/rep.$i.json"
		done
		ring_py agents "$1" "$2" "$T"/rep.[012].json && return 0
		nap 0.2
	done
	return 1
}

# agents_start ARGS...: an agent on A, B and C with --etcd --self ARGS.
agents_start() {
	local i
	for i in 0 1 2; do
		steer_agent_start "$i" "${ETCD[@]}" --self "${STEER_SHARD_ADDR[i]}:$STEER_PORT" \
			--interval 0.5 "$@" ||
			die "the agent on ${NAMES[i]} did not start: $(head -n 2 "$T/agent.$i.out")"
	done
}

# a_report_purge: the purge line of A's agent report (its text form).
a_report_purge() {
	ks_in_ns "${STEER_SHARD_NS[0]}" "$STEER_AGENT" report --iface "${STEER_SHARD_IF[0]}" |
		sed -n 's/^ *\(purge .*\)/  \1/p'
}

# scenario off|on: {A,B,C} -> {A,B,C,E} -> {A,B,C} with the client
# writing; FINAL is demo_ring.py final's line.
scenario() {
	local mode=$1 nmoved out i
	if [ -z "$REV" ]; then
		say "agent ring set {A,B,C}"
		ring_set "$ABC"
	fi
	agents_at "$REV" ring || die "the agents did not take ring revision $REV in $WAIT_S s"
	out=$(ring_py write "$T/lk_abc" v1) || die "the client could not write"
	echo "the client writes $DEMO_RING_KEYS keys as v1, each on its owner under {A,B,C}: $out"

	say "add E: agent ring set {A,B,C,E}"
	ring_set "$ABCE"
	if [ "$mode" = on ]; then
		agents_at "$REV" purged ||
			die "no finished purge for ring revision $REV in $WAIT_S s: $(grep -h purge "$T"/agent.*.out | tail -n 3)"
		echo "every agent's report says its purge pass for revision $REV ended; A's:"
		a_report_purge
		for ((i = 0; i < WAIT_S * 4; i++)); do
			client "$STEER_AGENT" fleet "${ETCD[@]}" --json >"$T/fleet.json" 2>/dev/null &&
				ring_py purging "$T/fleet.json" 3 && break
			nap 0.25
		done
		ring_py purging "$T/fleet.json" 3 ||
			warn "agent fleet does not mark A, B and C purging after $WAIT_S s"
		echo "agent fleet (the shards that lost keys to E marked PURGING for the grace period):"
		client "$STEER_AGENT" fleet "${ETCD[@]}" --top 0 | sed -n '/^shards\|^ *SHARD\|^ *[0-9]/p' |
			sed 's/^/  /'
	else
		agents_at "$REV" ring || die "the agents did not take ring revision $REV in $WAIT_S s"
		echo "every agent runs ring revision $REV; the purge in A's report (--json): $(ring_py field "$T/rep.0.json" ring.purge.state)"
	fi
	out=$(ring_py held "$T/lk_abc" "$T/lk_abce" v1)
	nmoved=$(awk '{print $2}' <<<"$out")
	echo "the change moved $nmoved keys to E; their old owners still hold $(awk '{print $4}' <<<"$out") of them as v1"
	out=$(ring_py write "$T/lk_abce" v2 "$E_HP") || die "the client could not write"
	echo "the client writes the $nmoved keys E now owns as v2, on E: $out"

	say "remove E: agent ring set {A,B,C}"
	ring_set "$ABC"
	agents_at "$REV" ring || die "the agents did not take ring revision $REV in $WAIT_S s"
	FINAL=$(ring_py final "$T/lk_abc" "$T/lk_abce") || die "the client could not read"
	read -r _ nmoved _ stale _ missing _ lost <<<"$FINAL"
	echo "every key read from its owner under {A,B,C}: of the $nmoved keys that went to E and back,"
	echo "  $stale read their old value v1 again (v2 undone), $missing miss; of the others $lost lost their v1"
}

say "1. the purge off: agents on A, B, C with --etcd $URL --cluster $CLUSTER --self ADDR:11211 --purge-rate 0 --purge-sweep-rate 0"
agents_start --purge-rate 0 --purge-sweep-rate 0
scenario off
FINAL_OFF=$FINAL

say "2. the purge on (its defaults): fresh agents, each memcached emptied (flush_all)"
steer_agents_stop
mapfile -t ALL <"$ABCE"
ring_py flush "${ALL[@]}" || die "flush_all failed"
agents_start
scenario on
FINAL_ON=$FINAL

say "summary: a shard added and removed, with plain ketama clients"
ring_py summary "$FINAL_OFF" "$FINAL_ON"
