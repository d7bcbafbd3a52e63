#!/usr/bin/env bash
# test_ring_purge.sh - the ownership-loss purge (issue 23, docs/fleet.md
# "Purges at a ring change") with real memcached and Debian's etcd, never a
# mock. Four shard hosts A, B, C, E on one bridge (steer_topo.sh), etcd in
# the client's namespace; A, B and C run an agent with --etcd --self, E is a
# plain memcached. Plain clients: pylibmc (libmemcached's ketama) writes,
# pymemcache reads from the owner `agent ring lookup` names.
# The scenario of the issue:
#   ring {A,B,C}; 3,000 keys written as v1; ring {A,B,C,E}; the purges
#   finish (each agent's report says its pass for that revision ended);
#   the keys E now owns written as v2 on E; ring {A,B,C} again; every key
#   read from its owner.
# Checks: pylibmc placed every key where keysteer's ring says; the purge
# left no v1 of a moved key on its old owner, and the agents' purged
# counts add up to the moved keys; after the return 0 moved keys read v1
# (stale: v2 acknowledged, then undone) and 0 keys that never moved are
# lost; the metrics endpoint counts what the report does; a ring document
# written straight into etcd that moves most keys (ketama to modula, not
# forced) purges nothing and the agents say why.
# Control: the same scenario with the purge off (--ring-purge off, a
# test-only switch) must serve old values again (stale > 0), or the test
# proves nothing.
# Every process is stopped by its pid on every exit path (the EXIT trap).
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../../user/scripts/steer_topo.sh
. "$E2E_ROOT/user/scripts/steer_topo.sh"
# shellcheck source=fleet_lib.sh
. "$E2E_DIR/fleet_lib.sh"
e2e_init ring_purge

# shellcheck disable=SC2034 # e2e_topo_etcd_cleanup stops it
ETCD_PID=
CLUSTER=rp
NKEYS=3000
MPORT=9477
trap e2e_topo_etcd_cleanup EXIT
e2e_need_etcd ring_purge
e2e_require ring_purge_setup "python3-pylibmc, python3-pymemcache" "$PY"
if ! "$PY" -c 'import pylibmc, pymemcache' 2>"$E2E_TMP/py.err"; then
	fail ring_purge_setup "install python3-pylibmc and python3-pymemcache: $(tail -1 "$E2E_TMP/py.err")"
	exit 1
fi
if ! steer_topo_up 4 0 >"$E2E_TMP/topo.out" 2>&1; then
	fail ring_purge_setup "topology: $(tail -n 3 "$E2E_TMP/topo.out")"
	exit 1
fi
CNS=$STEER_CLIENT_NS
URL=http://$STEER_CLIENT_ADDR:2379
fleet_etcd_up "$CNS" ring_purge "$URL" ring_purge_setup

ABC=$E2E_TMP/abc.txt
ABCE=$E2E_TMP/abce.txt
head -n 3 "$STEER_SHARDS_FILE" >"$ABC"
cp "$STEER_SHARDS_FILE" "$ABCE"
SERVERS_ABC=$(paste -sd, "$ABC")
SERVERS_ABCE=$(paste -sd, "$ABCE")
E_HP=$(sed -n 4p "$ABCE")
for ((i = 0; i < NKEYS; i++)); do printf 'purge:%05d\n' "$i"; done >"$E2E_TMP/keys"
"$AGENT" ring lookup --shards-file "$ABC" <"$E2E_TMP/keys" >"$E2E_TMP/lk_abc"
"$AGENT" ring lookup --shards-file "$ABCE" <"$E2E_TMP/keys" >"$E2E_TMP/lk_abce"
awk -F'\t' -v e="$E_HP" '$3 == e {print $1}' "$E2E_TMP/lk_abce" >"$E2E_TMP/keys_e"

PYC() { ks_in_ns "$CNS" "$PY" "$E2E_DIR/ks_ring_purge.py" "$@"; }
REPORT() { # REPORT IDX: the agent's report as JSON, in its namespace
	ks_in_ns "${STEER_SHARD_NS[$1]}" "$AGENT" report --iface "${STEER_SHARD_IF[$1]}" --json
}
# jget FILE PATH: a field of a JSON file ("ring.purge.passes")
jget() { "$PY" -c 'import json,sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v[k] if isinstance(v, dict) else None
print(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else v)' "$@"; }

# ring_set FILE [ARGS...]: `agent ring set`; REV the revision it wrote.
ring_set() {
	local f=$1 out
	shift
	out=$(ks_in_ns "$CNS" "$AGENT" ring set --etcd "$URL" --etcd-timeout 10000 --cluster "$CLUSTER" \
		--shards-file "$f" "$@" 2>&1)
	REV=$(sed -n 's/^revision \([0-9]*\) digest .*/\1/p' <<<"$out")
	[ -n "$REV" ] || { note "ring set: $out"; return 1; }
}

# agents_start NAME ARGS...: the agents of A, B and C.
agents_start() {
	local name=$1 i
	shift
	for i in 0 1 2; do
		if ! steer_agent_start "$i" --interval 0.5 --etcd "$URL" \
			--cluster "$CLUSTER" --self "${STEER_SHARD_ADDR[$i]}:$STEER_PORT" \
			--metrics "127.0.0.1:$MPORT" "$@"; then
			fail "$name" "agent $i did not attach: $(head -n 5 "$STEER_TMP/agent.$i.out")"
			exit 1
		fi
	done
	pass "$name"
}

# wait_agents REV WHAT [SECONDS]: 0 once every agent's report shows ring
# version REV and, with WHAT = purged, a finished purge pass for it; 1
# after SECONDS (60: a loaded 2-core machine; quiet it takes about 2 s).
wait_agents() {
	local rev=$1 what=$2 secs=${3:-60} i n t
	for ((t = 0; t < secs * 5; t++)); do
		n=0
		for i in 0 1 2; do
			REPORT "$i" >"$E2E_TMP/rep.$i.json" 2>"$E2E_TMP/rep.$i.err" || continue
			[ "$(jget "$E2E_TMP/rep.$i.json" ring.version)" = "$rev" ] || continue
			if [ "$what" = purged ]; then
				[ "$(jget "$E2E_TMP/rep.$i.json" ring.purge.ring_version)" = "$rev" ] ||
					continue
				[ "$(jget "$E2E_TMP/rep.$i.json" ring.purge.passes)" -ge 1 ] || continue
			fi
			n=$((n + 1))
		done
		[ "$n" = 3 ] && return 0
		sleep 0.2
	done
	return 1
}

# put_by_hand DOC LINE: DOC put into the ring key with etcdctl, not with
# 'ring set' (so never forced); PUT_REV its revision ("" when the put
# failed), PUT_OUT etcdctl's words. 0 once every agent took PUT_REV and
# A's log says "ring vPUT_REV: LINE".
put_by_hand() {
	PUT_OUT=$(ks_in_ns "$CNS" etcdctl --endpoints "$URL" -w fields put "/keysteer/$CLUSTER/ring" "$1")
	PUT_REV=$(sed -n 's/^"Revision" : \([0-9]*\)$/\1/p' <<<"$PUT_OUT")
	[ -n "$PUT_REV" ] && wait_agents "$PUT_REV" ring &&
		e2e_wait_line "$STEER_TMP/agent.0.out" "ring v$PUT_REV: $2" \
			"${STEER_AGENT_PIDS[0]}" 100
}

# report_until FIELD OP VALUE: A's report polled into rep.0.json (60 s)
# until FIELD's value OP VALUE holds (test(1)'s operators); the report
# takes the purge thread's counters at the next interval.
report_until() {
	local t
	for ((t = 0; t < 300; t++)); do
		REPORT 0 >"$E2E_TMP/rep.0.json" &&
			test "$(jget "$E2E_TMP/rep.0.json" "$1")" "$2" "$3" && return 0
		sleep 0.2
	done
	return 1
}

flush_all() {
	local hp
	while read -r hp; do
		ks_in_ns "$CNS" "$PY" -c 'import sys
from pymemcache.client.base import Client
h, p = sys.argv[1].rsplit(":", 1)
Client((h, int(p)), connect_timeout=5).flush_all()' "$hp" </dev/null
	done <"$ABCE"
}

# scenario MODE: A -> E -> A; sets FINAL ("moved N stale S lost L other O").
# MODE purge: the checks of the purge on the way; control: none.
scenario() {
	local mode=$1 out moved left sum i
	if ! ring_set "$ABC"; then
		fail "ring_purge_${mode}_ring" "ring set {A,B,C} failed"
		exit 1
	fi
	R1=$REV
	if ! wait_agents "$R1" ring; then
		fail "ring_purge_${mode}_ring" "the agents did not take ring $R1"
		exit 1
	fi
	out=$(PYC write "$SERVERS_ABC" v1 <"$E2E_TMP/keys")
	if [ "$out" != "written $NKEYS" ]; then
		fail "ring_purge_${mode}_written" "$out"
		exit 1
	fi
	if [ "$mode" = purge ]; then
		out=$(PYC placed "$E2E_TMP/lk_abc")
		if [ "$out" = "placed $NKEYS misplaced 0 absent 0" ]; then
			pass ring_purge_clients_agree
		else
			fail ring_purge_clients_agree "pylibmc and 'ring lookup' disagree: $out"
		fi
	fi
	ring_set "$ABCE" || { fail "ring_purge_${mode}_ring" "ring set {A,B,C,E}"; exit 1; }
	R2=$REV
	if [ "$mode" = purge ]; then
		if wait_agents "$R2" purged; then
			sum=0
			for i in 0 1 2; do
				sum=$((sum + $(jget "$E2E_TMP/rep.$i.json" ring.purge.purged_total)))
			done
			out=$(PYC left "$E2E_TMP/lk_abc" "$E2E_TMP/lk_abce" v1)
			moved=$(awk '{print $2}' <<<"$out")
			left=$(awk '{print $4}' <<<"$out")
			note "ring v$R2: $out; the agents purged $sum"
			if [ "$left" = 0 ] && [ "$sum" -ge "$moved" ] && [ "$moved" -gt 0 ]; then
				pass ring_purge_moved_keys_gone
			else
				fail ring_purge_moved_keys_gone "$out, purged $sum"
			fi
			# every shard that lost keys to E is in its grace period
			# (120 s, given at the start): the fleet view says so
			for ((t = 0; t < 150; t++)); do
				ks_in_ns "$CNS" "$AGENT" fleet --etcd "$URL" --etcd-timeout 10000 \
					--cluster "$CLUSTER" --json >"$E2E_TMP/fleet.json" 2>"$E2E_TMP/fleet.err" &&
					out=$("$PY" -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(" ".join("%s=%s" % (s["name"], s["purging"]) for s in d["shards"]))' "$E2E_TMP/fleet.json") &&
					[ "$(grep -o '=True' <<<"$out" | wc -l)" = 3 ] && break
				sleep 0.2
			done
			if [ "$(grep -o '=True' <<<"$out" | wc -l)" = 3 ] &&
				[ "$(grep -o '=False' <<<"$out" | wc -l)" = 1 ]; then
				pass ring_purge_fleet_shows_purging
				note "agent fleet: $out"
			else
				fail ring_purge_fleet_shows_purging "want A, B, C purging and E not: $out $(cat "$E2E_TMP/fleet.err")"
			fi
		else
			fail ring_purge_moved_keys_gone "no finished purge for ring $R2 in 60 s: $(cat "$E2E_TMP"/rep.*.err) $(grep -h purge "$STEER_TMP"/agent.*.out | tail -n 6)"
		fi
	elif ! wait_agents "$R2" ring; then
		fail "ring_purge_${mode}_ring" "the agents did not take ring $R2"
		exit 1
	fi
	out=$(PYC write "$SERVERS_ABCE" v2 <"$E2E_TMP/keys_e")
	if [ "$out" != "written $(grep -c . "$E2E_TMP/keys_e")" ]; then
		fail "ring_purge_${mode}_written" "v2 on E: $out"
		exit 1
	fi
	ring_set "$ABC" || { fail "ring_purge_${mode}_ring" "ring set back"; exit 1; }
	R3=$REV
	if ! wait_agents "$R3" ring; then
		fail "ring_purge_${mode}_ring" "the agents did not take ring $R3"
		exit 1
	fi
	FINAL=$(PYC final "$E2E_TMP/lk_abc" "$E2E_TMP/lk_abce")
	note "$mode: after {A,B,C} -> {A,B,C,E} -> {A,B,C}: $FINAL"
}

# ---- with the purge ------------------------------------------------------
agents_start ring_purge_agents_start --purge-grace 120
scenario purge
read -r _ moved _ stale _ lost _ other <<<"$FINAL"
if [ "$stale" = 0 ] && [ "$other" = 0 ] && [ "$moved" -gt 500 ]; then
	pass ring_purge_no_stale_after_return
else
	fail ring_purge_no_stale_after_return "$FINAL"
fi
if [ "$lost" = 0 ]; then
	pass ring_purge_no_key_lost
else
	fail ring_purge_no_key_lost "$FINAL"
fi

# the metrics endpoint counts what the report does (A's)
REPORT 0 >"$E2E_TMP/rep.0.json"
m=$(ks_in_ns "${STEER_SHARD_NS[0]}" curl -s --max-time 10 "http://127.0.0.1:$MPORT/metrics")
mp=$(sed -n 's/^keysteer_purge_items_total \([0-9]*\)$/\1/p' <<<"$m")
if [ -n "$mp" ] && [ "$mp" = "$(jget "$E2E_TMP/rep.0.json" ring.purge.purged_total)" ] &&
	[ "$mp" -gt 0 ] && grep -q '^keysteer_purge_in_progress [01]$' <<<"$m"; then
	pass ring_purge_metrics
else
	fail ring_purge_metrics "keysteer_purge_items_total '$mp', report $(jget "$E2E_TMP/rep.0.json" ring.purge)"
fi

# the report with a purge in it keeps to the published schema
if out=$("$PY" "$E2E_DIR/ks_json_schema.py" "$E2E_ROOT/docs/report.schema.json" \
	"$E2E_TMP/rep.0.json" 2>&1); then
	pass ring_purge_report_schema
else
	fail ring_purge_report_schema "$out"
fi

# A document that moves most keys, put into etcd by hand (no 'ring set',
# so not forced): followed for routing, no purge, the reason logged.
before=$(jget "$E2E_TMP/rep.0.json" ring.purge.purged_total)
good=$(ks_in_ns "$CNS" etcdctl --endpoints "$URL" get "/keysteer/$CLUSTER/ring" --print-value-only)
ks_in_ns "$CNS" "$AGENT" ring set --etcd "$URL" --etcd-timeout 10000 --cluster scratch \
	--shards-file "$ABC" --distribution modula >"$E2E_TMP/scratch.out" 2>&1
doc=$(ks_in_ns "$CNS" etcdctl --endpoints "$URL" get /keysteer/scratch/ring --print-value-only)
if put_by_hand "$doc" "no purge: the change was not forced"; then
	R4=$PUT_REV
	report_until ring.purge.refused_total -ge 1
	if [ "$(jget "$E2E_TMP/rep.0.json" ring.purge.refused_total)" -ge 1 ] &&
		[ "$(jget "$E2E_TMP/rep.0.json" ring.purge.purged_total)" = "$before" ]; then
		pass ring_purge_gate_refuses_unforced
		note "$(grep -h "ring v$R4: no purge" "$STEER_TMP/agent.0.out")"
	else
		fail ring_purge_gate_refuses_unforced "report $(jget "$E2E_TMP/rep.0.json" ring.purge)"
	fi
else
	fail ring_purge_gate_refuses_unforced "revision '$PUT_REV' ($PUT_OUT $(cat "$E2E_TMP/scratch.out")): $(grep -h "purge" "$STEER_TMP/agent.0.out" | tail -n 3)"
fi

# Its revert (the document before it, put back by hand, not forced) is
# measured against the ring the purge still acts for: it moves nothing,
# so the purge follows it again (no refusal, state no longer off).
if put_by_hand "$good" "the change moves 0.0% of keys"; then
	report_until ring.purge.state != off
	if [ "$(jget "$E2E_TMP/rep.0.json" ring.purge.state)" != off ] &&
		[ "$(jget "$E2E_TMP/rep.0.json" ring.purge.refused_total)" = 1 ]; then
		pass ring_purge_gate_revert_moves_nothing
	else
		fail ring_purge_gate_revert_moves_nothing "report $(jget "$E2E_TMP/rep.0.json" ring.purge)"
	fi
else
	fail ring_purge_gate_revert_moves_nothing "revision '$PUT_REV': $(grep -h "ring v" "$STEER_TMP/agent.0.out" | tail -n 3)"
fi

# ---- control: the purge off ---------------------------------------------
steer_agents_stop
flush_all
KEYSTEER_TEST_SWITCHES=1 agents_start ring_purge_control_agents_start --ring-purge off
scenario control
read -r _ moved _ stale _ lost _ other <<<"$FINAL"
if [ "$stale" -gt 0 ]; then
	pass ring_purge_control_serves_old_values
else
	fail ring_purge_control_serves_old_values "with the purge off no stale read: the test cannot see the violation ($FINAL)"
fi
