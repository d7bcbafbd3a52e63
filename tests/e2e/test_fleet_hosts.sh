#!/usr/bin/env bash
# test_fleet_hosts.sh - hosts/<self> and 'agent fleet' (issue 12,
# docs/fleet.md) against Debian's etcd 3.4. One etcd in the server
# namespace on the veth address, a ring of two shards set in it, two
# agents with --etcd: one on the server's veth end, one on the client's
# (its own namespace). Checks: 'agent fleet' (text and --json) lists both
# with the ring revision they run; each entry is under a lease; an agent
# SIGKILLed loses its entry within its lease (3 intervals, at least 5 s:
# the delete timed by etcd's watch, stamped as it arrives, from the kill)
# while the survivor's stays; a clean stop (SIGINT) revokes the lease at
# once. etcd has one member here: no leader change re-arms a lease
# (fleet_lib.sh fleet_term_moved), so the TTL is the bound as it stands.
# Every other wait is for what it checks (a value, a log line), polled
# with a guard of 60 s that only a failure reaches.
# Agent A runs with --balance: it follows every agent's load document (a
# prefix watch of /keysteer-load/default/, and hosts/ for agents before
# schema 2), so its metrics count 2 shards while both are up and 1 after
# B's entry expired (the watch's delete).
# etcd and the second agent are stopped by their pids on every exit path.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=fleet_lib.sh
. "$E2E_DIR/fleet_lib.sh"
e2e_init fleet_hosts

ETCD_PID=
B_PID=
STAMP_PID=
INTERVAL=1
# the guard of every wait below, in seconds: reached only when what it
# waits for never comes (an agent at load 30 took 47 s over an interval)
GUARD_S=60

hosts_cleanup() {
	local rc=$?
	[ -n "$E2E_AGENT_PID" ] && e2e_agent_stop INT
	[ -n "$B_PID" ] && ks_stop_pid "$B_PID" INT 5
	[ -n "$STAMP_PID" ] && ks_stop_pid "$STAMP_PID" TERM 3
	ks_in_ns "$CNS" "$AGENT" detach --iface "$CIF" >/dev/null 2>&1
	[ -n "$ETCD_PID" ] && ks_stop_pid "$ETCD_PID" TERM 5
	(exit "$rc")
	e2e_cleanup
}
trap hosts_cleanup EXIT

e2e_need_etcd fleet_hosts
e2e_net_up

URL=http://$SADDR:2379
if ! e2e_etcd_start "$SNS" hosts "$URL" 2380 >"$E2E_TMP/etcd_start.out"; then
	fail fleet_hosts_setup "$(cat "$E2E_TMP/etcd_start.out")"
	exit 1
fi
ETCD_PID=$E2E_ETCD_PID

A=$SADDR:$PORT
B=$CADDR:$PORT
out=$(e2e_agent ring set --etcd "$URL" --shards "$A,$B" 2>&1)
REV=$(sed -n 's/^revision \([0-9]*\) .*/\1/p' <<<"$out")
if [ -z "$REV" ]; then
	fail fleet_hosts_setup "ring set: $out"
	exit 1
fi

# 10 s for etcd's answer (the CLI's default 2 s is missed at load)
FLEET() { e2e_agent fleet --etcd "$URL" --etcd-timeout 10000 "$@"; }
jq_py() { "$PY" -c "$1" "$E2E_TMP/fleet.json"; }

# A's metrics, in its namespace: VALUE of one unlabelled family, or "".
MPORT=19191
metric() {
	ks_in_ns "$SNS" "$PY" - "$MPORT" "$1" <<'PYEOF'
import sys, urllib.request
port, name = sys.argv[1:3]
try:
    body = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=3).read().decode()
except OSError:
    sys.exit(0)
for line in body.splitlines():
    if line.split(" ")[0] == name:
        print(line.split(" ")[1])
PYEOF
}
# wait_for WANT CMD...: 0 once CMD prints exactly WANT, 1 after GUARD_S.
wait_for() {
	local want=$1 t0=$SECONDS
	shift
	while :; do
		[ "$("$@")" = "$want" ] && return 0
		[ $((SECONDS - t0)) -lt "$GUARD_S" ] || return 1
		sleep 0.1 # a poll's step
	done
}
wait_metric() { wait_for "$2" metric "$1"; } # NAME WANT

printf 'pin local:1 1\n' >"$E2E_TMP/local.pins"
if ! e2e_agent_start --interval "$INTERVAL" --etcd "$URL" --self "$A" -v \
	--pins "$E2E_TMP/local.pins" --balance 0.1 --metrics "127.0.0.1:$MPORT"; then
	fail fleet_hosts_agent_a "did not start"
	exit 1
fi
ks_in_ns_bg "$CNS" "$AGENT" run --iface "$CIF" --interval "$INTERVAL" \
	--etcd "$URL" --self "$B" -v </dev/null >"$E2E_TMP/agent_b.out" 2>&1
B_PID=$KS_BG_PID

# both listed, each at the ring's revision (B was started in the
# background: its attach and first put come when the machine runs it)
ok='' t0=$SECONDS
while [ $((SECONDS - t0)) -lt "$GUARD_S" ]; do
	FLEET --json >"$E2E_TMP/fleet.json" 2>"$E2E_TMP/fleet.err"
	n=$(jq_py 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for h in d["hosts"] if h["ring_revision"]=='"$REV"' and h["valid"]))' 2>/dev/null)
	[ "$n" = 2 ] && ok=1 && break
	sleep 0.2 # a poll's step
done
if [ -n "$ok" ] && jq_py 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["schema"]==1 and d["ring_revision"]=='"$REV"'
s=sorted(h["self"] for h in d["hosts"]); assert s==sorted(["'"$A"'","'"$B"'"]), s
for h in d["hosts"]:
    # schema 2: status is the load document, member the member document
    st=h["status"]; m=h["member"]; assert h["schema"]==2 and st["schema"]==2 and st["self"]==h["self"]
    assert st["kind"]=="keysteer-load" and m["kind"]=="keysteer-member" and m["self"]==h["self"]
    assert st["shard"]["name"]==h["self"] and "updated_at" in st and m["interval_ms"]==1000
    assert m["shard"]==h["self"] and "updated_at" not in m and "top" not in m
    assert st["shard"]["served_per_s"] >= 0, st["shard"]
    assert all(len(k["hash"])==16 and "key" not in k for k in st["top"])
'; then
	pass fleet_hosts_both_listed
else
	fail fleet_hosts_both_listed "$(cat "$E2E_TMP/fleet.json" "$E2E_TMP/fleet.err" "$E2E_TMP/agent_b.out")"
fi
text=$(FLEET 2>&1)
if grep -q "^fleet default: ring revision $REV, 2 hosts" <<<"$text" &&
	grep -q "^[* ] $A .* $REV  up\$" <<<"$text" && grep -q "^[* ] $B .* $REV  up\$" <<<"$text" &&
	grep -qE "^(\* busiest |no busiest shard)" <<<"$text"; then
	pass fleet_hosts_text
else
	fail fleet_hosts_text "$text"
fi
if wait_metric keysteer_balance_shards 2 &&
	grep -q "etcd: watching /keysteer/default/hosts/ from revision" "$E2E_TMP/agent.out" &&
	grep -q "etcd: watching /keysteer-load/default/ from revision" "$E2E_TMP/agent.out" &&
	[ -n "$(metric keysteer_balance_read_threshold)" ]; then
	pass fleet_balance_follows_hosts
else
	fail fleet_balance_follows_hosts "keysteer_balance_shards '$(metric keysteer_balance_shards)': $(grep -h 'hosts/' "$E2E_TMP/agent.out" | tail -3)"
fi
# B's entry under a lease. On a loaded machine a keepalive can come after
# the 5 s lease ran out and B puts its entry again under a new one, so the
# entry may be missing for a moment: wait for it (GUARD_S).
# The same for its member and load documents (schema 2), one lease for all.
lease_of() {
	ks_in_ns "$SNS" etcdctl --endpoints "$URL" get "$1" -w json 2>/dev/null |
		"$PY" -c 'import json,sys; print(json.load(sys.stdin)["kvs"][0].get("lease",0))' 2>/dev/null
}
t0=$SECONDS
while [ $((SECONDS - t0)) -lt "$GUARD_S" ]; do
	lease=$(lease_of "/keysteer/default/hosts/$B")
	lm=$(lease_of "/keysteer/default/members/$B")
	ll=$(lease_of "/keysteer-load/default/$B")
	[ -n "$lease" ] && [ "$lease" = "$lm" ] && [ "$lease" = "$ll" ] && break
	sleep 0.2 # a poll's step
done
if [ -n "$lease" ] && [ "$lease" != 0 ] && [ "$lease" = "$lm" ] && [ "$lease" = "$ll" ]; then
	pass fleet_hosts_under_lease
else
	fail fleet_hosts_under_lease "leases: hosts/ '$lease', members/ '$lm', load '$ll'"
fi

# ---- the fleet's pins (agent pins set/get, /keysteer/default/pins) -------
PINS() { e2e_agent pins "$@" --etcd "$URL"; }
# pinned_keys WHO -> the pinned hot keys in that agent's report, sorted
pinned_keys() {
	local out
	if [ "$1" = A ]; then
		out=$(e2e_agent report --iface "$SIF" --json 2>/dev/null)
	else
		out=$(ks_in_ns "$CNS" "$AGENT" report --iface "$CIF" --json 2>/dev/null)
	fi
	"$PY" -c 'import json,sys
d = json.load(sys.stdin)
print(",".join(sorted(h["key"] for h in d["hot_keys"] if h.get("pinned"))))' <<<"$out" 2>/dev/null
}
wait_pinned() { wait_for "$2" pinned_keys "$1"; } # WHO WANT
if wait_pinned A local:1; then
	pass fleet_pins_file_rules_before_fleet
else
	fail fleet_pins_file_rules_before_fleet "A pins '$(pinned_keys A)'"
fi
printf 'pin fleet:1 1\npin-prefix\n' >"$E2E_TMP/bad.pins"
out=$(PINS set --pins "$E2E_TMP/bad.pins" 2>&1)
rc=$?
got=$(PINS get 2>&1)
if [ $rc = 2 ] && grep -q "bad.pins:2" <<<"$out" && grep -q "^no pins at" <<<"$got"; then
	pass fleet_pins_bad_file_refused_nothing_written
else
	fail fleet_pins_bad_file_refused_nothing_written "exit $rc: $out; get: $got"
fi
printf '# the sale\npin fleet:1 1\npin-prefix flash: 1\n' >"$E2E_TMP/fleet.pins"
out=$(PINS set --pins "$E2E_TMP/fleet.pins" 2>&1)
PREV=$(sed -n 's/^revision \([0-9]*\) 2 rules .*/\1/p' <<<"$out")
if [ -n "$PREV" ] && wait_pinned A fleet:1 && wait_pinned B fleet:1; then
	pass fleet_pins_set_reaches_every_agent
else
	fail fleet_pins_set_reaches_every_agent "set: $out; A '$(pinned_keys A)', B '$(pinned_keys B)'"
fi
if PINS get --json | "$PY" -c 'import json,sys
d = json.load(sys.stdin)
assert d["revision"] == '"${PREV:-0}"' and d["valid"] and d["rules"] == 2, d
assert d["pins"]["schema"] == 1 and d["pins"]["kind"] == "keysteer-pins", d
assert "pin fleet:1 1" in d["pins"]["rules"], d'; then
	pass fleet_pins_get_json
else
	fail fleet_pins_get_json "$(PINS get --json 2>&1)"
fi
printf 'pin other:1 1\n' >"$E2E_TMP/other.pins"
PINS set --pins "$E2E_TMP/other.pins" >/dev/null 2>&1
out=$(PINS set --pins "$E2E_TMP/fleet.pins" --if-revision "${PREV:-0}" 2>&1)
rc=$?
if [ $rc = 1 ] && grep -q "pins not written: .* is no longer at revision ${PREV:-x}: revision [0-9]* by .* won (1 rules)" <<<"$out"; then
	pass fleet_pins_concurrent_set_refused
else
	fail fleet_pins_concurrent_set_refused "exit $rc: $out"
fi
wait_pinned A other:1
ks_in_ns "$SNS" etcdctl --endpoints "$URL" put /keysteer/default/pins 'not json' >/dev/null
refused=
e2e_wait_line "$E2E_TMP/agent.out" \
	"pins not reloaded: etcd /keysteer/default/pins revision [0-9]* refused: not a JSON object" \
	"$E2E_AGENT_PID" $((GUARD_S * 10)) &&
	e2e_wait_line "$E2E_TMP/agent_b.out" "pins not reloaded" "$B_PID" $((GUARD_S * 10)) &&
	refused=1
# each agent's next -v line counts the refusal: an interval after it, so
# the rules checked below are the ones the refused document left in force
if [ -n "$refused" ]; then
	e2e_wait_line "$E2E_TMP/agent.out" "pins revision [0-9]*, watch up, 1 refused" "$E2E_AGENT_PID" $((GUARD_S * 10)) &&
		e2e_wait_line "$E2E_TMP/agent_b.out" "pins revision [0-9]*, watch up, 1 refused" "$B_PID" $((GUARD_S * 10)) ||
		refused=
fi
if [ -n "$refused" ] && [ "$(pinned_keys A)" = other:1 ] && [ "$(pinned_keys B)" = other:1 ] &&
	grep -q "pins revision [0-9]*, watch up, 1 refused" "$E2E_TMP/agent.out"; then
	pass fleet_pins_malformed_refused_rules_stay
else
	fail fleet_pins_malformed_refused_rules_stay "refused '${refused:-no}', A '$(pinned_keys A)', B '$(pinned_keys B)', $(grep -h 'pins' "$E2E_TMP/agent.out" | tail -2)"
fi
ks_in_ns "$SNS" etcdctl --endpoints "$URL" del /keysteer/default/pins >/dev/null
if wait_pinned A local:1 && wait_pinned B ""; then
	pass fleet_pins_deleted_file_rules_back
else
	fail fleet_pins_deleted_file_rules_back "A '$(pinned_keys A)', B '$(pinned_keys B)'"
fi

# SIGKILL B: its entry goes within its lease (the TTL B logged: 3
# intervals, at least 5 s; docs/fleet.md) and etcd's expiry check (every
# 500 ms), 1 s more for a loaded machine; its shard shows gone, A's stays.
# The delete is timed by etcd's watch of the cluster's prefix, each line
# stamped as it arrives, established before the kill (fleet_stamp_start),
# and counted from the SIGKILL: no renewal leaves B after it, while its
# exit (the wait) can come seconds later at load, and a poll of `agent
# fleet` says only that it was gone by the end of a call that takes a
# second and more there. Only a delete from the kill on counts (one before
# would be a lease B lost alive).
LEASE_S=$(sed -n 's/.*under a lease of \([0-9]*\) s.*/\1/p' "$E2E_TMP/agent_b.out")
GONE_MAX_MS=$((${LEASE_S:-5} * 1000 + 1500))
if ! fleet_stamp_start "$SNS" "$URL" /keysteer/default/ "$E2E_TMP/gone.watch"; then
	echo "$WHY" >>"$E2E_TMP/gone.watch.err"
fi
T_KILL_MS=$(date +%s%3N)
kill -KILL "$B_PID"
wait "$B_PID" 2>/dev/null
T_EXIT_MS=$(date +%s%3N)
B_PID=
# the wait ends at the delete (GUARD_S past the bound at most)
gone_at=
while [ $(($(date +%s%3N) - T_KILL_MS)) -le $((GONE_MAX_MS + GUARD_S * 1000)) ]; do
	gone_at=$("$PY" "$E2E_DIR/ks_watch_log.py" first-delete "$E2E_TMP/gone.watch" "/$B" \
		"$T_KILL_MS" 2>/dev/null)
	[ -n "$gone_at" ] && break
	sleep 0.1 # a poll's step
done
gone=${gone_at:+$((gone_at - T_KILL_MS))}
[ -n "$STAMP_PID" ] && ks_stop_pid "$STAMP_PID" TERM 3
STAMP_PID=
# the delete done: `agent fleet` shows B's shard gone (asked again while
# the CLI gets no answer)
t0=$SECONDS
while :; do
	text=$(FLEET 2>&1)
	grep -q "^  $B .* gone\$" <<<"$text" && break
	[ $((SECONDS - t0)) -lt "$GUARD_S" ] || break
	sleep 0.2 # a poll's step
done
if [ -n "$LEASE_S" ] && [ -n "$gone" ] && [ "$gone" -le "$GONE_MAX_MS" ] &&
	grep -q "^  $B .* gone\$" <<<"$text" &&
	grep -q "^[* ] $A .* up\$" <<<"$text" && grep -q "1 host " <<<"$text"; then
	pass fleet_hosts_killed_entry_expires
	note "the killed agent's entries deleted ${gone} ms after SIGKILL (etcd's watch; lease $LEASE_S s, bound $GONE_MAX_MS ms; it exited $((T_EXIT_MS - T_KILL_MS)) ms after the signal)"
else
	fail fleet_hosts_killed_entry_expires "lease '${LEASE_S:-?}' s; deleted ${gone:-never} ms after SIGKILL (etcd's watch), want at most $GONE_MAX_MS: $text $(head -c 300 "$E2E_TMP/gone.watch.err")"
fi
# ... and A's --balance no longer counts its shard (the watch's delete)
if wait_metric keysteer_balance_shards 1; then
	pass fleet_balance_drops_expired_host
else
	fail fleet_balance_drops_expired_host "keysteer_balance_shards '$(metric keysteer_balance_shards)'"
fi
# ... and fleet names its shard as one without an agent, text and JSON
if grep -q "^shards without an agent: $B\$" <<<"$text" &&
	FLEET --json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["shards_without_agent"] == ["'"$B"'"], d["shards_without_agent"]
'; then
	pass fleet_hosts_shard_without_agent_marked
else
	fail fleet_hosts_shard_without_agent_marked "$text"
fi
ks_in_ns "$CNS" "$AGENT" detach --iface "$CIF" >/dev/null 2>&1
# B's end must not take A's entry with it: two of A's intervals after the
# detach (A's own -v lines, not a guessed time) are the window in which A
# would have noticed and put it again. A is listed: at once; a machine
# too loaded for A's keepalives within its lease would have dropped it
# and A puts it again: GUARD_S for that.
e2e_wait_intervals 2
t0=$SECONDS
while [ $((SECONDS - t0)) -lt "$GUARD_S" ]; do
	grep -q "^[* ] $A .* up\$" <<<"$(FLEET 2>/dev/null)" && break
	sleep 0.2 # a poll's step
done
if grep -q "^[* ] $A .* up\$" <<<"$(FLEET)"; then
	pass fleet_hosts_survivor_stays
else
	fail fleet_hosts_survivor_stays "$(FLEET 2>&1)"
fi

# a clean stop revokes at once
e2e_agent_stop INT
if grep -q "^fleet default: ring revision $REV, 0 hosts" <<<"$(FLEET)"; then
	pass fleet_hosts_clean_stop_revokes
else
	fail fleet_hosts_clean_stop_revokes "$(FLEET 2>&1)"
fi
e2e_expect_clean fleet_hosts_agent_clean_exit
