#!/usr/bin/env bash
# test_fleet_hosts.sh - hosts/<self> and 'agent fleet' (issue 12,
# docs/fleet.md) against Debian's etcd 3.4. One etcd in the server
# namespace on the veth address, a ring of two shards set in it, two
# agents with --etcd: one on the server's veth end, one on the client's
# (its own namespace). Checks: 'agent fleet' (text and --json) lists both
# with the ring revision they run; each entry is under a lease; an agent
# SIGKILLed loses its entry within its lease (3 intervals) while the
# survivor's stays; a clean stop (SIGINT) revokes the lease at once.
# etcd and the second agent are stopped by their pids on every exit path.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init fleet_hosts

ETCD_PID=
B_PID=
INTERVAL=1

hosts_cleanup() {
	local rc=$?
	[ -n "$E2E_AGENT_PID" ] && e2e_agent_stop INT
	[ -n "$B_PID" ] && ks_stop_pid "$B_PID" INT 5
	ks_in_ns "$CNS" "$AGENT" detach --iface "$CIF" >/dev/null 2>&1
	[ -n "$ETCD_PID" ] && ks_stop_pid "$ETCD_PID" TERM 5
	(exit "$rc")
	e2e_cleanup
}
trap hosts_cleanup EXIT

e2e_need_etcd fleet_hosts || exit 0
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

FLEET() { e2e_agent fleet --etcd "$URL" "$@"; }
jq_py() { "$PY" -c "$1" "$E2E_TMP/fleet.json"; }

if ! e2e_agent_start --interval "$INTERVAL" --etcd "$URL" --self "$A" -v; then
	fail fleet_hosts_agent_a "did not start"
	exit 1
fi
ks_in_ns_bg "$CNS" "$AGENT" run --iface "$CIF" --interval "$INTERVAL" \
	--etcd "$URL" --self "$B" -v </dev/null >"$E2E_TMP/agent_b.out" 2>&1
B_PID=$KS_BG_PID

# both listed, each at the ring's revision
ok=
for ((i = 0; i < 50; i++)); do
	FLEET --json >"$E2E_TMP/fleet.json" 2>"$E2E_TMP/fleet.err"
	n=$(jq_py 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for h in d["hosts"] if h["ring_revision"]=='"$REV"' and h["valid"]))' 2>/dev/null)
	[ "$n" = 2 ] && ok=1 && break
	sleep 0.2
done
if [ -n "$ok" ] && jq_py 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["schema"]==1 and d["ring_revision"]=='"$REV"'
s=sorted(h["self"] for h in d["hosts"]); assert s==sorted(["'"$A"'","'"$B"'"]), s
for h in d["hosts"]:
    st=h["status"]; assert st["schema"]==1 and st["self"]==h["self"]
    assert st["shard"]["name"]==h["self"] and "updated_at" in st and st["interval_ms"]==1000
    assert all(len(k["hash"])==16 and "key" not in k for k in st["top"])
'; then
	pass fleet_hosts_both_listed
else
	fail fleet_hosts_both_listed "$(cat "$E2E_TMP/fleet.json" "$E2E_TMP/fleet.err" "$E2E_TMP/agent_b.out")"
fi
text=$(FLEET 2>&1)
if grep -q "^fleet default: ring revision $REV, 2 hosts" <<<"$text" &&
	grep -q "^$A .* $REV\$" <<<"$text" && grep -q "^$B .* $REV\$" <<<"$text" &&
	grep -q "^reads/s across hosts: max" <<<"$text"; then
	pass fleet_hosts_text
else
	fail fleet_hosts_text "$text"
fi
lease=$(ks_in_ns "$SNS" etcdctl --endpoints "$URL" get "/keysteer/default/hosts/$B" -w json |
	"$PY" -c 'import json,sys; print(json.load(sys.stdin)["kvs"][0].get("lease",0))')
if [ -n "$lease" ] && [ "$lease" != 0 ]; then
	pass fleet_hosts_under_lease
else
	fail fleet_hosts_under_lease "lease '$lease'"
fi

# SIGKILL B: its entry goes within its lease (3 s), A's stays
kill -KILL "$B_PID"
wait "$B_PID" 2>/dev/null
B_PID=
t0=$(date +%s%N)
gone=
for ((i = 0; i < 60; i++)); do
	text=$(FLEET 2>&1)
	if ! grep -q "^$B " <<<"$text"; then
		gone=$((($(date +%s%N) - t0) / 1000000))
		break
	fi
	sleep 0.1
done
if [ -n "$gone" ] && [ "$gone" -le 4500 ] && grep -q "^$A " <<<"$text" &&
	grep -q "1 host " <<<"$text"; then
	pass fleet_hosts_killed_entry_expires
	note "the killed agent's entry went ${gone} ms after SIGKILL (lease 3 s)"
else
	fail fleet_hosts_killed_entry_expires "after ${gone:-6000+} ms: $text"
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
sleep 2
if FLEET | grep -q "^$A "; then
	pass fleet_hosts_survivor_stays
else
	fail fleet_hosts_survivor_stays "$(FLEET 2>&1)"
fi

# a clean stop revokes at once
e2e_agent_stop INT
if FLEET | grep -q "^fleet default: ring revision $REV, 0 hosts"; then
	pass fleet_hosts_clean_stop_revokes
else
	fail fleet_hosts_clean_stop_revokes "$(FLEET 2>&1)"
fi
e2e_expect_clean fleet_hosts_agent_clean_exit
