#!/usr/bin/env bash
# test_dedicated.sh - dedicated shards (docs/placement.md, "Dedicated
# shards") on real memcached: the steering topology with 3 shards and no
# replicas, etcd in the client's namespace, the ketama ring in etcd,
# agents with --etcd --sample 1, and libkeysteer through its Python
# adapter (the C library's routing, over ctypes).
#
# 1. 'agent pins set' refuses a shard rule naming a shard the fleet's ring
#    lacks, nothing written; 'agent run --pins' with a ring refuses it
#    before attaching.
# 2. pins with 'shard tenant7:* SHARD2' and one exact key: every agent
#    puts the rules in its datapath (its log says so).
# 3. 200 tenant keys and 200 other keys set and read through the library:
#    from memcached's own stats (curr_items, cmd_set, cmd_get of each
#    shard), every tenant key on shard 2 and every other key exactly
#    where 'agent ring lookup' (no pins) puts it. The control: the ring
#    alone spreads the tenant keys over at least 2 shards.
# 4. The datapath's counting: no agent saw a misdirected key (shard 2's
#    agent counts the tenant keys for itself), and shard 2's report shows
#    the rule with the sampled keys it placed.
# 5. 'agent fleet' (text and JSON) shows the rules and shard 2's load.
# 6. A ring change that takes ranges from shard 2 (weights 2 2 1, forced):
#    shard 2's agent purges what the new ring places elsewhere, and not a
#    tenant key (every one read back from shard 2 through the library);
#    the ring alone would have taken some of them (the control).
# 7. A ring without shard 2: a new handle places new tenant keys by the
#    ring again (memcached's stats), and shard 2's agent logs the rule
#    whose shard the ring lacks.
# Everything is this script's own, by PID, and removed on every exit path.
# About 40 s.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../../user/scripts/steer_topo.sh
. "$E2E_ROOT/user/scripts/steer_topo.sh"
# shellcheck source=client_lib.sh
. "$(dirname "$0")/client_lib.sh"
client_init dedicated
CLUSTER=hsded$$
LIB=$E2E_ROOT/${OUT:-build}/libkeysteer.so
client_need_bins dedicated "$LIB" || exit 1
client_fleet_up dedicated 3 0 || exit 1
S=("${STEER_SHARD_ADDR[0]}:$STEER_PORT" "${STEER_SHARD_ADDR[1]}:$STEER_PORT"
	"${STEER_SHARD_ADDR[2]}:$STEER_PORT")
NKEYS=200

# py ARGS...: the library through its Python adapter, in the client's
# namespace
py() {
	ks_in_ns "$CNS" env KEYSTEER_LIB="$LIB" \
		PYTHONPATH="$E2E_ROOT/user/client/python" "$PY" "$@"
}
# stats NAME: every shard's memcached stats (ks_clients.py's reader) as a
# JSON list into $E2E_TMP/NAME.json
stats() {
	local hp
	{
		echo '['
		for hp in "${S[@]}"; do
			[ "$hp" = "${S[0]}" ] || echo ','
			ks_in_ns "$CNS" "$PY" "$E2E_ROOT/tests/e2e/ks_clients.py" stats \
				"${hp%:*}" "${hp##*:}"
		done
		echo ']'
	} >"$E2E_TMP/$1.json" 2>"$E2E_TMP/$1.err"
}
# owners PREFIX N [PINS]: how many of PREFIX0..PREFIX(N-1) each shard owns
# by 'agent ring lookup' on the ring in $STEER_SHARDS_FILE, as "a b c"
owners() {
	local i
	for ((i = 0; i < $2; i++)); do echo "$1$i"; done |
		"$AGENT" ring lookup --shards-file "${RING_FILE:-$STEER_SHARDS_FILE}" \
			${3:+--pins "$3"} |
		awk -v n="${NSH:-3}" '{c[$2]++} END {for (i = 0; i < n; i++) printf "%s%d", i ? " " : "", c[i] + 0}'
}
# delta A B FIELD: per shard B.FIELD - A.FIELD, as "a b c"
delta() {
	"$PY" -c 'import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
print(" ".join(str(y.get(sys.argv[3], 0) - x.get(sys.argv[3], 0)) for x, y in zip(a, b)))' \
		"$E2E_TMP/$1.json" "$E2E_TMP/$2.json" "$3"
}
# add "a b c" "d e f": the sum, per shard
add() { paste -d' ' <(tr ' ' '\n' <<<"$1") <(tr ' ' '\n' <<<"$2") | awk '{printf "%s%d", (NR > 1 ? " " : ""), $1 + $2}'; }

# --- 1. a shard the ring lacks is refused ----------------------------------
printf 'shard tenant7:* 198.18.2.99:11211\n' >"$E2E_TMP/bad.pins"
out=$(ks_in_ns "$CNS" "$AGENT" pins set --etcd "$URL" --cluster "$CLUSTER" \
	--pins "$E2E_TMP/bad.pins" 2>&1)
rc=$?
got=$(ks_in_ns "$CNS" "$AGENT" pins get --etcd "$URL" --cluster "$CLUSTER" --json 2>&1)
# and 'agent run --pins' with a ring: exit 2 before anything is attached
out2=$(ks_in_ns "${STEER_SHARD_NS[0]}" "$AGENT" run --iface "${STEER_SHARD_IF[0]}" \
	--shards-file "$STEER_SHARDS_FILE" --pins "$E2E_TMP/bad.pins" 2>&1)
rc2=$?
if [ "$rc" = 2 ] && grep -q 'no shard 198.18.2.99:11211 in the ring' <<<"$out" &&
	grep -q 'nothing written' <<<"$out" && grep -q '"pins": null' <<<"$got" &&
	[ "$rc2" = 2 ] && grep -q "^agent: --pins .*bad.pins: shard tenant7:\* 198.18.2.99:11211: no shard" <<<"$out2" &&
	[ ! -e "$STEER_PIN_ROOT/${STEER_SHARD_IF[0]}" ]; then
	pass dedicated_unknown_shard_refused
else
	fail dedicated_unknown_shard_refused "exit $rc: $out; pins get: $(head -c 300 <<<"$got"); run: exit $rc2: $out2"
fi

# --- 2. the pins, the agents ------------------------------------------------
printf '# tenant 7 has a shard of its own\nshard tenant7:* %s\nshard vip:key %s\n' \
	"${S[2]}" "${S[2]}" >"$E2E_TMP/ded.pins"
if ! out=$(ks_in_ns "$CNS" "$AGENT" pins set --etcd "$URL" --cluster "$CLUSTER" \
	--pins "$E2E_TMP/ded.pins" 2>&1); then
	fail dedicated_pins_set "$out"
	exit 1
fi
for i in 0 1 2; do
	if ! steer_agent_start "$i" --interval 0.5 --sample 1 \
		--etcd "$URL" --cluster "$CLUSTER" --self "${S[$i]}"; then
		fail dedicated_agents "agent $i did not attach: $(head -n 3 "$STEER_TMP/agent.$i.out")"
		exit 1
	fi
done
ok=1
for i in 0 1 2; do
	e2e_wait_line "$STEER_TMP/agent.$i.out" 'dedicated shards: 2 shard rules in the datapath' \
		"${STEER_AGENT_PIDS[$i]}" 300 || ok=0
done
if [ "$ok" = 1 ]; then
	pass dedicated_agents_take_the_rules
else
	fail dedicated_agents_take_the_rules "$(grep -h -i 'pins\|dedicated\|shard rule' "$STEER_TMP"/agent.*.out | head -n 6)"
fi

# --- 3. the library places the keys -----------------------------------------
tenant_ring=$(owners tenant7: "$NKEYS")
others=$(owners other: "$NKEYS")
with_pins=$(owners tenant7: "$NKEYS" "$E2E_TMP/ded.pins")
note "tenant7 keys by the ring alone: $tenant_ring; with the pins: $with_pins; other keys: $others"
stats before
py - "$SPEC" "$NKEYS" >"$E2E_TMP/py.out" 2>&1 <<'PYEOF'
import sys
from keysteer_client import Client
spec, n = sys.argv[1], int(sys.argv[2])
with Client(spec) as c:
    for i in range(n):
        c.set("tenant7:%d" % i, b"t%d" % i)
        c.set("other:%d" % i, b"o%d" % i)
    bad = 0
    for i in range(n):
        bad += c.get("tenant7:%d" % i) != b"t%d" % i
        bad += c.get("other:%d" % i) != b"o%d" % i
    print("misread", bad)
PYEOF
rc=$?
stats after
want=$(add "$others" "0 0 $NKEYS")
items=$(delta before after curr_items)
sets=$(delta before after cmd_set)
gets=$(delta before after cmd_get)
note "per shard: curr_items +$items, cmd_set +$sets, cmd_get +$gets; want $want each"
if [ "$rc" = 0 ] && grep -q '^misread 0$' "$E2E_TMP/py.out" &&
	[ "$items" = "$want" ] && [ "$sets" = "$want" ] && [ "$gets" = "$want" ] &&
	[ "$with_pins" = "0 0 $NKEYS" ]; then
	pass dedicated_tenant_keys_only_on_their_shard
else
	fail dedicated_tenant_keys_only_on_their_shard "exit $rc $(head -c 300 "$E2E_TMP/py.out"); items $items sets $sets gets $gets, want $want; ring lookup --pins $with_pins"
fi
# the control: without the rule the tenant's keys are not all on shard 2
if [ "$(awk '{print ($1 > 0) + ($2 > 0) + ($3 > 0)}' <<<"$tenant_ring")" -ge 2 ]; then
	pass dedicated_control_ring_spreads_the_tenant
else
	fail dedicated_control_ring_spreads_the_tenant "the ring alone puts them $tenant_ring: the check above shows nothing"
fi

# --- 4. the datapath's counting ---------------------------------------------
# every agent has counted the library's requests (its ring_hit counter
# reached them): then none was misdirected, shard 2's tenant keys included
rep() { ks_in_ns "${STEER_SHARD_NS[$1]}" "$AGENT" report --iface "${STEER_SHARD_IF[$1]}" "${@:2}"; }
jpkt() { "$PY" -c 'import json, sys; d = json.load(sys.stdin); print(d["totals"]["packets"][sys.argv[1]])' "$1"; }
ok=1 why=
for i in 0 1 2; do
	w=$(awk -v i="$i" '{print $(i + 1) * 2}' <<<"$want")
	hits=0
	# the requests were answered before the stats: the counters have
	# them already; the bound is for a report that never reads (30 s)
	for ((t = 0; t < 100; t++)); do
		hits=$(rep "$i" --json 2>"$E2E_TMP/rep.err" | jpkt ring_hit 2>>"$E2E_TMP/rep.err" || echo 0)
		[ "${hits:-0}" -ge "$w" ] && break
		sleep 0.3
	done
	mis=$(rep "$i" --json 2>>"$E2E_TMP/rep.err" | jpkt misdirected 2>>"$E2E_TMP/rep.err" || echo '?')
	why+=" shard $i: ring_hit $hits (want >= $w) misdirected $mis;"
	[ "${hits:-0}" -ge "$w" ] && [ "$mis" = 0 ] || ok=0
done
rep 2 >"$E2E_TMP/report2.txt" 2>&1
placed=$(sed -n 's/.*sampled keys placed by them \([0-9]*\) .*/\1/p' "$E2E_TMP/report2.txt")
note "datapath:$why shard 2 placed by its rules: ${placed:-none}"
if [ "$ok" = 1 ] && [ "${placed:-0}" -eq $((2 * NKEYS)) ] &&
	grep -q "tenant7:\* *${S[2]}" "$E2E_TMP/report2.txt"; then
	pass dedicated_datapath_counts_on_named_shard
else
	fail dedicated_datapath_counts_on_named_shard "$why $(tail -c 300 "$E2E_TMP/rep.err") placed ${placed:-none}; $(grep -A3 dedicated "$E2E_TMP/report2.txt" | head -n 4)"
fi

# --- 5. the fleet view ---------------------------------------------------------
# the agents' load documents carry the interval's rates: wait for shard 2's
# agent's document (the event: both views show its reads; the keys were
# read above, the rates fall back to 0 after, still numbers). The text and
# the JSON are two reads of etcd: each poll takes both, since the first
# may come before the document and the second after it. 30 s by the
# clock, a guard.
fleet_views() {
	ks_in_ns "$CNS" "$AGENT" fleet --etcd "$URL" --cluster "$CLUSTER" >"$E2E_TMP/fleet.txt" 2>&1
	ks_in_ns "$CNS" "$AGENT" fleet --etcd "$URL" --cluster "$CLUSTER" --json >"$E2E_TMP/fleet.json" 2>&1
	fj=$("$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
r = d["dedicated"]
print(len(r), r[0]["type"], r[0]["prefix"], r[0]["shard"], r[0]["index"], r[0]["reads_per_s"] is not None, r[1]["type"], r[1]["key"])' \
		"$E2E_TMP/fleet.json" 2>&1)
	grep -q '^dedicated shards (pins revision' "$E2E_TMP/fleet.txt" &&
		grep -qE "^  tenant7:\* +${S[2]} +[0-9.]+ +[0-9.]+$" "$E2E_TMP/fleet.txt" &&
		[ "$fj" = "2 shard-prefix tenant7: ${S[2]} 2 True shard vip:key" ]
}
fj='' t0=$SECONDS fleet_ok=
while [ $((SECONDS - t0)) -lt 30 ]; do
	fleet_views && { fleet_ok=1; break; }
	sleep 0.25
done
note "fleet --json dedicated: $fj"
if [ -n "$fleet_ok" ]; then
	pass dedicated_fleet_view_shows_rules_and_load
else
	fail dedicated_fleet_view_shows_rules_and_load "$(grep -A4 '^dedicated' "$E2E_TMP/fleet.txt" | head -n 5); json: $fj"
fi

# --- 6. a ring change takes ranges from shard 2: its purge keeps the tenant --------
# weights 2 2 1: shard 2 loses keys, and its agent purges what the new
# ring places elsewhere (forced: the change moves more than the ideal
# share); the tenant's keys are shard 2's by their rule and stay
awk 'NR <= 2 {print $1 ":2"} NR == 3 {print $1 ":1"}' "$STEER_SHARDS_FILE" >"$E2E_TMP/w.txt"
lost=$(RING_FILE=$E2E_TMP/w.txt owners tenant7: "$NKEYS" | awk '{print $1 + $2}')
npurge=$(grep -c 'items deleted' "$STEER_TMP/agent.2.out")
if ! out=$(ks_in_ns "$CNS" "$AGENT" ring set --etcd "$URL" --cluster "$CLUSTER" \
	--shards-file "$E2E_TMP/w.txt" --force 2>&1); then
	fail dedicated_purge_keeps_the_tenant "ring set: $out"
	exit 1
fi
for ((t = 0; t < 600; t++)); do
	[ "$(grep -c 'items deleted' "$STEER_TMP/agent.2.out")" -gt "$npurge" ] && break
	kill -0 "${STEER_AGENT_PIDS[2]}" 2>/dev/null || break
	sleep 0.1
done
purged=$(grep 'items deleted' "$STEER_TMP/agent.2.out" | tail -n 1)
py - "$SPEC" "$NKEYS" >"$E2E_TMP/py3.out" 2>&1 <<'PYEOF'
import sys, time
from keysteer_client import Client
spec, n = sys.argv[1], int(sys.argv[2])
with Client(spec) as c:
    # the handle reads the new ring at open: the tenant's keys still
    # go to shard 2 by their rule
    print("tenant_hits", sum(c.get("tenant7:%d" % i) == b"t%d" % i for i in range(n)))
PYEOF
note "weights 2 2 1: the ring alone would take $lost of the $NKEYS tenant keys from shard 2; shard 2's purge: ${purged#*keysteer: }; $(cat "$E2E_TMP/py3.out")"
if [ -n "$purged" ] && [ "$lost" -gt 0 ] &&
	grep -q "^tenant_hits $NKEYS$" "$E2E_TMP/py3.out" &&
	grep -qE 'purge [^:]*: [1-9][0-9]* of' <<<"$purged"; then
	pass dedicated_purge_keeps_the_tenant
else
	fail dedicated_purge_keeps_the_tenant "purge: ${purged:-none}; lost by the ring $lost; $(head -c 300 "$E2E_TMP/py3.out")"
fi

# --- 7. the ring loses shard 2 ---------------------------------------------------
head -n 2 "$STEER_SHARDS_FILE" >"$E2E_TMP/two.txt"
if ! out=$(ks_in_ns "$CNS" "$AGENT" ring set --etcd "$URL" --cluster "$CLUSTER" \
	--shards-file "$E2E_TMP/two.txt" --force 2>&1); then
	fail dedicated_ring_without_the_shard "ring set: $out"
	exit 1
fi
e2e_wait_line "$STEER_TMP/agent.2.out" "has no shard ${S[2]}; its keys stay with their ring owner" \
	"${STEER_AGENT_PIDS[2]}" 300
logged=$?
want2=$(RING_FILE=$E2E_TMP/two.txt NSH=2 owners tenant7:new: "$NKEYS")
stats before2
py - "$SPEC" "$NKEYS" >"$E2E_TMP/py2.out" 2>&1 <<'PYEOF'
import sys
from keysteer_client import Client
spec, n = sys.argv[1], int(sys.argv[2])
with Client(spec) as c:
    for i in range(n):
        c.set("tenant7:new:%d" % i, b"n")
PYEOF
rc=$?
stats after2
items=$(delta before2 after2 cmd_set)
note "a ring without shard 2: tenant7:new: keys by the ring $want2; cmd_set +$items"
if [ "$rc" = 0 ] && [ "$logged" = 0 ] && [ "$items" = "$want2 0" ]; then
	pass dedicated_ring_without_the_shard
else
	fail dedicated_ring_without_the_shard "exit $rc $(head -c 200 "$E2E_TMP/py2.out"); logged $logged; cmd_set $items, want $want2 0"
fi
exit "$E2E_FAILED"
