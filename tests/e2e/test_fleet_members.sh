#!/usr/bin/env bash
# test_fleet_members.sh - fleet schema 2 (issue 25, docs/fleet.md "Rolling
# upgrade to schema 2"): members/SELF for clients, each agent's load
# document under /keysteer-load/CLUSTER/, outside the prefix a library
# handle watches. The steering topology with 2 shards and 2 L1 replicas,
# etcd, and a fleet in the middle of an upgrade: agent 0 of schema 2 with
# the default --fleet-compat members (members/, its load document, and a
# hosts/ entry marked compat for old readers, rewritten only when anything
# but a rate changes), agent 1 as an agent before schema 2 wrote (the
# test-only --fleet-schema 1: hosts/ only, rewritten when a rate moves).
#
# 1. 'agent fleet --json' lists both, each joined with its shard at the
#    ring's revision: agent 0 from members/ and its load document (its
#    compat hosts/ entry not listed again), agent 1 from hosts/; in etcd,
#    agent 1 has nothing but hosts/.
# 2. A library handle has both owners' replica sets: a write of a key of
#    each owner invalidates both replicas (agent 0's set comes from
#    members/ alone).
# 3. A load-only update delivers nothing to clients: a watch on exactly the
#    range a handle watches (/keysteer/CLUSTER/, prefix) and one on the
#    load documents, while uniform load (no key turns hot) changes rates
#    phase after phase: agent 0's load document is written at least 3
#    times and the client range sees no event of agent 0 at all. Control,
#    the same watch: agent 1 (the old format) puts its hosts/ entry at
#    least 3 times, every one delivered to every client.
# 4. A hot key's rate alone delivers nothing to clients either: a flash key
#    of each owner, armed, then read in phases that move its rate between
#    400 and 1200 reads/s (3 copies throughout): from the revision both
#    were armed, a watch on the client range sees no put of agent 0's hot/
#    entry that changed only reads_per_s/writes_per_s (nor a delete),
#    while agent 0's load document carries the key's moving reads (at
#    least 3 moves). Control, the same watch: agent 1 (the test-only
#    --fleet-schema 1, the rule before the load document's hot list)
#    rewrites its entry for rates alone at least 3 times. 'agent fleet
#    --json' shows agent 0's key with the rates of agent 0's load
#    document in the same snapshot ("rates_of": "load"), agent 1's from
#    its hot/ entry ("entry").
# 5. A key only counted reaches no client in its whole life (issue 25): a
#    pin of one copy for a key of each owner (the fleet's pins: in the
#    hot-key table, counted, never copied, state "counting"), then the pins
#    removed. From the revision before the pins to a sentinel put in the
#    client range once agent 0's load document no longer lists the key
#    (the agent has acted on the removal; the watch delivered the
#    sentinel, so it delivered everything before it), a watch on the
#    client range sees no event of agent 0's key, while agent 0's load
#    document lists it with its entry ("counting") and then no more, and
#    'agent fleet --json' shows it owned by agent 0 in state counting. Control, the same watch: agent 1 (the test-only
#    --fleet-schema 1, the layout before: every key of its table in hot/)
#    puts and deletes its key's hot/ entry, each delivered to every
#    client.
# Checks 3 to 5 end their count at a sentinel key put in the watched
# range after the agents have acted, never at a grace time.
# Everything is this script's own, by PID, and removed on every exit path.
# About 30 to 60 s.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../../user/scripts/steer_topo.sh
. "$E2E_ROOT/user/scripts/steer_topo.sh"
# shellcheck source=client_lib.sh
. "$(dirname "$0")/client_lib.sh"
client_init fleet_members
WATCH_PIDS=()
members_cleanup() {
	local rc=$? p
	for p in "${WATCH_PIDS[@]}"; do
		ks_stop_pid "$p" TERM 5
	done
	(exit "$rc")
	e2e_topo_etcd_cleanup
}
trap members_cleanup EXIT

client_need_bins fleet_members "$LOAD" "$EXAMPLE" || exit 1
CLUSTER=members
client_fleet_up fleet_members 2 2 || exit 1
A=${STEER_SHARD_ADDR[0]}:$STEER_PORT
B=${STEER_SHARD_ADDR[1]}:$STEER_PORT
# A loaded machine's etcd answers slowly, and under `stress-ng --cpu 2`
# it refused some writes with "etcdserver: request timed out": every etcd
# client here has a call deadline of 30 s, and the writes this script
# makes (the sentinels, the pins) are tried again until they land, with
# a deadline.
ETCDCTL() { ks_in_ns "$CNS" etcdctl --command-timeout=30s --dial-timeout=10s --endpoints "$URL" "$@"; }
ETO=(--etcd-timeout 30000)

# agent 0 as schema 2 writes it after the upgrade, agent 1 as before it
export KEYSTEER_TEST_SWITCHES=1
for i in 0 1; do
	if [ "$i" = 0 ]; then args=(); else args=(--fleet-schema 1); fi
	if ! steer_agent_start "$i" --interval 0.5 --sample 1 \
		--shard-capacity 1000 --hot-fraction 0.1 \
		--etcd "$URL" --cluster "$CLUSTER" \
		--self "${STEER_SHARD_ADDR[$i]}:$STEER_PORT" \
		--replicas "$STEER_REPLICAS" "${args[@]}"; then
		fail fleet_members_agents "agent $i did not attach: $(head -n 3 "$STEER_TMP/agent.$i.out")"
		exit 1
	fi
done
unset KEYSTEER_TEST_SWITCHES
REV=$(ETCDCTL get "/keysteer/$CLUSTER/ring" -w json |
	"$PY" -c 'import json,sys; print(json.load(sys.stdin)["kvs"][0]["mod_revision"])')

# ---- 1. agent fleet sees both schemas --------------------------------------
fleet_ok() {
	ks_in_ns "$CNS" "$AGENT" fleet --etcd "$URL" "${ETO[@]}" --cluster "$CLUSTER" --json \
		>"$E2E_TMP/fleet.json" 2>"$E2E_TMP/fleet.err" || return 1
	"$PY" - "$E2E_TMP/fleet.json" "$A" "$B" "$REV" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
a, b, rev = sys.argv[2], sys.argv[3], int(sys.argv[4])
hosts = {h["self"]: h for h in d["hosts"]}
assert sorted(hosts) == sorted([a, b]), sorted(hosts)
ha, hb = hosts[a], hosts[b]
assert ha["valid"] and hb["valid"], (ha, hb)
assert ha["schema"] == 2 and ha["member"]["kind"] == "keysteer-member", ha
assert ha["status"]["kind"] == "keysteer-load" and ha["shard"] == a, ha
assert hb["schema"] == 1 and "member" not in hb and hb["status"]["schema"] == 1, hb
assert hb["shard"] == b, hb
for h in (ha, hb):
    assert h["ring_revision"] == rev and not h["ring_stale"], h
shards = {s["name"]: s for s in d["shards"]}
assert shards[a]["agent"] == "up" and shards[b]["agent"] == "up", d["shards"]
PYEOF
}
ok=
for ((i = 0; i < 100; i++)); do
	fleet_ok 2>"$E2E_TMP/fleet.why" && ok=1 && break
	sleep 0.2
done
keys=$(ETCDCTL get --prefix "/keysteer/$CLUSTER/" --keys-only | grep -v '^$' | grep -v '/hot/')
loads=$(ETCDCTL get --prefix "/keysteer-load/$CLUSTER/" --keys-only | grep -v '^$')
want_keys=$(printf '%s\n' "/keysteer/$CLUSTER/hosts/$A" "/keysteer/$CLUSTER/hosts/$B" \
	"/keysteer/$CLUSTER/members/$A" "/keysteer/$CLUSTER/ring" | sort)
compat=$(ETCDCTL get --print-value-only "/keysteer/$CLUSTER/hosts/$A" |
	"$PY" -c 'import json,sys; print(json.load(sys.stdin).get("compat"))' 2>&1)
if [ -n "$ok" ] && [ "$(sort <<<"$keys")" = "$want_keys" ] && [ "$compat" = True ] &&
	[ "$loads" = "/keysteer-load/$CLUSTER/$A" ]; then
	pass fleet_members_mixed_fleet_listed
else
	fail fleet_members_mixed_fleet_listed "$(tail -n 3 "$E2E_TMP/fleet.why") keys: $keys; loads: $loads; compat '$compat'; $(head -c 1500 "$E2E_TMP/fleet.json")"
fi

# ---- 2. a handle's replica sets: both owners -------------------------------
# key_of SHARD [PREFIX]: a key the ring gives to that shard
key_of() {
	local k p=${2:-m}
	for ((k = 0; k < 200; k++)); do
		if [ "$("$AGENT" ring lookup --shards-file "$STEER_SHARDS_FILE" "$p:$k" |
			awk '{print $2}')" = "$1" ]; then
			echo "$p:$k"
			return 0
		fi
	done
	return 1
}
KA=$(key_of 0) KB=$(key_of 1)
NREP=$(wc -w <<<"${STEER_REPLICAS//,/ }")
sets_ok=
if [ -n "$KA" ] && [ -n "$KB" ]; then
	out=$(ks_in_ns "$CNS" "$PY" - "$E2E_ROOT" "$SPEC" "$KA" "$KB" <<'PYEOF' 2>&1
import os, sys
root, spec, ka, kb = sys.argv[1:5]
sys.path.insert(0, os.path.join(root, "user", "client", "python"))
from keysteer_client import Client
c = Client(spec)
def inval():
    s = c.stats()
    return s["invalidations"] + s["inval_errors"]
n0 = inval(); c.set(ka, b"v"); n1 = inval(); c.set(kb, b"v"); n2 = inval()
print("owner0 %d owner1 %d view_refused %d" % (n1 - n0, n2 - n1, c.stats()["view_refused"]))
PYEOF
	)
	[ "$out" = "owner0 $NREP owner1 $NREP view_refused 0" ] && sets_ok=1
fi
if [ -n "$sets_ok" ]; then
	pass fleet_members_library_replica_sets
else
	fail fleet_members_library_replica_sets "keys '$KA' '$KB', want $NREP replicas each: $out"
fi

# ---- 3. a load-only update delivers nothing to clients ---------------------
# etcdctl watch -w json: one JSON object a line per watch response
watch_bg() { # NAME PREFIX
	ks_in_ns_bg "$CNS" etcdctl --endpoints "$URL" watch --prefix "$2" -w json \
		</dev/null >"$E2E_TMP/$1.watch" 2>"$E2E_TMP/$1.watch.err"
	WATCH_PIDS+=("$KS_BG_PID")
}
# count NAME KEY: puts and deletes of KEY the watch NAME delivered
count() {
	"$PY" - "$E2E_TMP/$1.watch" "$2" <<'PYEOF'
import base64, json, sys
n = 0
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith("{"):
        continue
    for ev in json.loads(line).get("Events") or []:
        if base64.b64decode(ev["kv"]["key"]).decode() == sys.argv[2]:
            n += 1
print(n)
PYEOF
}
all_events() { # NAME: every event the watch delivered, by key
	"$PY" - "$E2E_TMP/$1.watch" <<'PYEOF'
import base64, collections, json, sys
c = collections.Counter()
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{"):
        for ev in json.loads(line).get("Events") or []:
            c[base64.b64decode(ev["kv"]["key"]).decode()] += 1
print(" ".join("%s=%d" % kv for kv in sorted(c.items())) or "none")
PYEOF
}
# sentinel NAME RANGE: puts RANGEprobe (a key no agent or client reads)
# and waits until the watch NAME (of RANGE) has delivered that put; prints
# its revision. etcd delivers a watch's events in revision order, so
# every event of the range before the sentinel's revision is in the watch
# file then: the event, not a grace time, ends what a check counts. 60 s
# of room for a loaded machine; 1 when the sentinel never arrived.
sentinel() {
	local rev= i
	for ((i = 0; i < 5 && !rev; i++)); do
		rev=$(ETCDCTL put "$2probe" "sentinel" -w json 2>>"$E2E_TMP/sentinel.err" |
			"$PY" -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])' 2>>"$E2E_TMP/sentinel.err")
	done
	[ -n "$rev" ] || return 1
	for ((i = 0; i < 300; i++)); do
		"$PY" - "$E2E_TMP/$1.watch" "$2probe" "$rev" "$E2E_ROOT/tests/e2e" <<'PYEOF' && echo "$rev" && return 0
import base64, sys
sys.path.insert(0, sys.argv[4])
from ks_watch_log import events
sys.exit(0 if any(base64.b64decode(ev["kv"]["key"]).decode() == sys.argv[2] and
                  int(ev["kv"]["mod_revision"]) == int(sys.argv[3])
                  for ev in events(sys.argv[1])) else 1)
PYEOF
		sleep 0.2
	done
	echo "sentinel $2probe at revision $rev not delivered to the watch $1 in 60 s" >>"$E2E_TMP/sentinel.err"
	return 1
}
# agent0_news CLIENTWATCH LOADWATCH -> "EVENTS EXPIRIES": events of agent
# 0's members/ and hosts/ entries in the client watch, leaving out its
# lease's expiries (a machine too loaded for a keepalive within the lease,
# 3 intervals): at the revision of a delete of its load document every
# key of the lease goes at once, and at the first put of the load document
# after it the agent writes its keys again in one transaction. Both are
# liveness, not a load update.
agent0_news() {
	"$PY" - "$E2E_TMP/$1.watch" "$E2E_TMP/$2.watch" "$A" "$CLUSTER" "$E2E_ROOT/tests/e2e" <<'PYEOF'
import base64, sys
cw, lw, a, cluster = sys.argv[1:5]
sys.path.insert(0, sys.argv[5])
from ks_watch_log import events
load_key = "/keysteer-load/%s/%s" % (cluster, a)
skip, expiries, gone = set(), 0, False
for ev in events(lw):
    if base64.b64decode(ev["kv"]["key"]).decode() != load_key:
        continue
    rev = int(ev["kv"]["mod_revision"])
    if ev.get("type") in (1, "DELETE"):
        skip.add(rev)
        expiries, gone = expiries + 1, True
    elif gone:
        skip.add(rev)
        gone = False
keys = {"/keysteer/%s/members/%s" % (cluster, a), "/keysteer/%s/hosts/%s" % (cluster, a)}
print(sum(1 for ev in events(cw) if base64.b64decode(ev["kv"]["key"]).decode() in keys and
          int(ev["kv"]["mod_revision"]) not in skip), expiries)
PYEOF
}
watch_bg client "/keysteer/$CLUSTER/"
watch_bg loads "/keysteer-load/$CLUSTER/"
# both watches established: a put of a key nobody reads in each range
for ((i = 0; i < 100; i++)); do
	ETCDCTL put "/keysteer/$CLUSTER/probe" 1 >/dev/null
	ETCDCTL put "/keysteer-load/$CLUSTER/probe" 1 >/dev/null
	[ "$(count client "/keysteer/$CLUSTER/probe")" -ge 1 ] &&
		[ "$(count loads "/keysteer-load/$CLUSTER/probe")" -ge 1 ] && break
	sleep 0.2
done
# uniform load over 20000 keys, phases of 2 s alternating 200 and 2000
# gets/s: every shard's rates move by far more than the tenth that makes a
# load document, and no key comes near the hot threshold (100 reads/s)
want=3
for ((p = 0; p < 12; p++)); do
	rate=$((p % 2 ? 2000 : 200))
	ks_in_ns "$CNS" "$LOAD" --shards-file "$STEER_SHARDS_FILE" --proto udp \
		--keys 20000 --zipf 0 --mix get=100 --duration 2 --rate "$rate" \
		>/dev/null 2>"$E2E_TMP/load.err"
	[ "$p" -ge 5 ] && [ "$(count loads "/keysteer-load/$CLUSTER/$A")" -ge "$want" ] &&
		[ "$(count client "/keysteer/$CLUSTER/hosts/$B")" -ge "$want" ] && break
done
# the agents have acted on the end of the load (agent 0 writes its load
# document again: its rates fell to 0), then a sentinel after it: every
# event of the client range up to then has been delivered
la=$(count loads "/keysteer-load/$CLUSTER/$A")
for ((i = 0; i < 300; i++)); do
	[ "$(count loads "/keysteer-load/$CLUSTER/$A")" -gt "$la" ] && break
	sleep 0.2
done
S3=$(sentinel client "/keysteer/$CLUSTER/")
la=$(count loads "/keysteer-load/$CLUSTER/$A")
read -r ca expiries <<<"$(agent0_news client loads 2>"$E2E_TMP/news.err")"
cb=$(count client "/keysteer/$CLUSTER/hosts/$B")
hot=$(ETCDCTL get --prefix "/keysteer/$CLUSTER/hot/" --keys-only | grep -c .)
note "during the load: agent 0's load document written $la times, its keys in the client range $ca times (its lease expired $expiries times); agent 1's hosts/ (the old format) $cb times; client range: $(all_events client)"
if [ -n "$S3" ] && [ "$la" -ge "$want" ] && [ "${ca:-}" = 0 ]; then
	pass fleet_members_load_updates_reach_no_client
else
	fail fleet_members_load_updates_reach_no_client "sentinel revision '$S3'; load documents $la (want >= $want), client events for agent 0: $ca (want 0); $(cat "$E2E_TMP/client.watch.err" "$E2E_TMP/load.err" "$E2E_TMP/sentinel.err" 2>/dev/null | tail -n 3)"
fi
# the control: the old format's load updates, in the same watch
if [ -n "$S3" ] && [ "$cb" -ge "$want" ] && [ "$hot" = 0 ]; then
	pass fleet_members_control_old_format_reaches_clients
else
	fail fleet_members_control_old_format_reaches_clients "hosts/ of agent 1 delivered $cb times (want >= $want); hot/ entries $hot (want 0)"
fi

# ---- 4. a hot key's rates reach no client either ----------------------------
# KA (agent 0's) and KB (agent 1's, the old format) turned hot by a flash
# share each, then read in phases of 2 s alternating 1000 and 3000 gets/s:
# each key 400 and 1200 reads/s, always far above the hot threshold (100)
# and above the 3 copies it can have (2 replicas), so nothing a client reads
# changes while its rates move by far more than a tenth.
flash_phase() { # RATE [ks_load options]
	local rate=$1
	shift
	ks_in_ns "$CNS" "$LOAD" --shards-file "$STEER_SHARDS_FILE" --proto udp \
		--keys 20 --zipf 0 --flash "$KA:0.4" --flash "$KB:0.4" \
		--mix get=100 --duration 2 --rate "$rate" "$@" \
		>/dev/null 2>"$E2E_TMP/flash.err"
}
# armed KA KB -> "REV" and the hot/ entries as etcd holds them at REV
armed() {
	ETCDCTL get --prefix "/keysteer/$CLUSTER/hot/" -w json >"$E2E_TMP/hot0.json" 2>&1 &&
		"$PY" - "$E2E_TMP/hot0.json" "$KA" "$A" "$KB" "$B" <<'PYEOF'
import base64, json, sys
d = json.load(open(sys.argv[1]))
want = {sys.argv[2]: sys.argv[3], sys.argv[4]: sys.argv[5]}
got = {}
for kv in d.get("kvs", []):
    v = json.loads(base64.b64decode(kv["value"]))
    if v.get("key") in want and v["owner"] == want[v["key"]] and v["state"] == "armed":
        got[v["key"]] = v
assert len(got) == 2, got
print(d["header"]["revision"])
PYEOF
}
R0=
for ((p = 0; p < 10; p++)); do
	pre=()
	[ "$p" = 0 ] && pre=(--preload)
	flash_phase 3000 "${pre[@]}"
	R0=$(armed 2>/dev/null) && break
	R0=
done
# watch_both N REV: client$N.watch and loads$N.watch, the client range and
# the load documents, each from revision REV + 1
watch_both() {
	ks_in_ns_bg "$CNS" etcdctl --endpoints "$URL" watch --prefix "/keysteer/$CLUSTER/" \
		--rev $(($2 + 1)) -w json </dev/null >"$E2E_TMP/client$1.watch" 2>"$E2E_TMP/client$1.watch.err"
	WATCH_PIDS+=("$KS_BG_PID")
	ks_in_ns_bg "$CNS" etcdctl --endpoints "$URL" watch --prefix "/keysteer-load/$CLUSTER/" \
		--rev $(($2 + 1)) -w json </dev/null >"$E2E_TMP/loads$1.watch" 2>"$E2E_TMP/loads$1.watch.err"
	WATCH_PIDS+=("$KS_BG_PID")
}
watch_both 2 "${R0:-0}"
# hot_events: what the two watches saw since R0 (see the output line)
hot_events() {
	"$PY" - "$E2E_TMP/hot0.json" "$E2E_TMP/client2.watch" "$E2E_TMP/loads2.watch" \
		"$KA" "$KB" "/keysteer-load/$CLUSTER/$A" "$E2E_ROOT/tests/e2e" <<'PYEOF'
import base64, json, sys
base, cw, lw, ka, kb, load_key = sys.argv[1:7]
sys.path.insert(0, sys.argv[7])
from ks_watch_log import events
RATES = ("reads_per_s", "writes_per_s")
prev, hashes = {}, {}
for kv in json.load(open(base)).get("kvs", []):
    v = json.loads(base64.b64decode(kv["value"]))
    if v.get("key") in (ka, kb):
        prev[base64.b64decode(kv["key"]).decode()] = v
        hashes[v["key"]] = v["hash"]
# the revisions at which agent 0's load document was deleted: its lease
# expired (a machine too loaded for a keepalive within the lease, 3
# intervals), which deletes every key of the lease at once: a liveness
# event, not a rate's news, so not counted as a delete below
expired = {int(ev["kv"]["mod_revision"]) for ev in events(lw)
           if ev.get("type") in (1, "DELETE") and
           base64.b64decode(ev["kv"]["key"]).decode() == load_key}
# per hot/ entry: puts that changed only a rate, puts that changed more,
# deletes
n = {k: [0, 0, 0] for k in prev}
for ev in events(cw):
    key = base64.b64decode(ev["kv"]["key"]).decode()
    if key not in n:
        continue
    if ev.get("type") in (1, "DELETE"):
        if int(ev["kv"]["mod_revision"]) not in expired:
            n[key][2] += 1
        prev.pop(key, None)
        continue
    v = json.loads(base64.b64decode(ev["kv"]["value"]))
    strip = lambda d: {f: x for f, x in d.items() if f not in RATES}
    n[key][0 if key in prev and strip(v) == strip(prev[key]) else 1] += 1
    prev[key] = v
# agent 0's load document: puts whose hot list moved KA's reads
moves, last, puts = 0, None, 0
for ev in events(lw):
    if (base64.b64decode(ev["kv"]["key"]).decode() != load_key or
            ev.get("type") in (1, "DELETE")):
        continue
    puts += 1
    doc = json.loads(base64.b64decode(ev["kv"]["value"]))
    r = [h["reads_per_s"] for h in doc.get("hot", []) if h["hash"] == hashes.get(ka)]
    if r and last is not None and r[0] != last:
        moves += 1
    if r:
        last = r[0]
a = n.get("/keysteer/%s/hot/%s" % (load_key.split("/")[2], hashes.get(ka)), [-1] * 3)
b = n.get("/keysteer/%s/hot/%s" % (load_key.split("/")[2], hashes.get(kb)), [-1] * 3)
print(a[0], a[1], a[2], b[0], b[1], b[2], moves, puts)
PYEOF
}
ev=(-1 -1 -1 -1 -1 -1 -1 -1)
for ((p = 0; R0 && p < 12; p++)); do
	flash_phase $((p % 2 ? 3000 : 1000))
	read -r -a ev <<<"$(hot_events 2>"$E2E_TMP/hot_events.err")"
	[ "$p" -ge 3 ] && [ "${ev[3]:--1}" -ge 3 ] && [ "${ev[6]:--1}" -ge 3 ] && break
done
# the keys kept hot (a cooled key's entry is deleted, which is news) for
# the last events and agent fleet below
ks_in_ns_bg "$CNS" "$LOAD" --shards-file "$STEER_SHARDS_FILE" --proto udp \
	--keys 20 --zipf 0 --flash "$KA:0.4" --flash "$KB:0.4" \
	--mix get=100 --duration 60 --rate 2000 </dev/null >/dev/null 2>&1
WATCH_PIDS+=("$KS_BG_PID")
# a sentinel in each range after the phases: every event of both up to
# then has been delivered to the watches
S4=
if [ -n "$R0" ] && s1=$(sentinel client2 "/keysteer/$CLUSTER/") &&
	s2=$(sentinel loads2 "/keysteer-load/$CLUSTER/"); then
	S4=$s1/$s2
fi
[ -n "$R0" ] && read -r -a ev <<<"$(hot_events 2>"$E2E_TMP/hot_events.err")"
note "hot keys from revision ${R0:-none}: agent 0's hot/ entry: ${ev[0]} rate-only puts, ${ev[1]} other puts, ${ev[2]} deletes; its load document ${ev[7]} puts, KA's reads moved in ${ev[6]}; agent 1's (old format) hot/ entry: ${ev[3]} rate-only puts, ${ev[4]} other, ${ev[5]} deletes"
if [ -n "$R0" ] && [ -n "$S4" ] && [ "${ev[0]}" = 0 ] && [ "${ev[2]}" = 0 ] && [ "${ev[6]:--1}" -ge 3 ]; then
	pass fleet_members_hot_rates_reach_no_client
else
	fail fleet_members_hot_rates_reach_no_client "armed at revision '${R0}', sentinels at '$S4' $(tail -n 1 "$E2E_TMP/sentinel.err" 2>/dev/null); agent 0's hot/ entry rewritten for a rate alone ${ev[0]} times (want 0), deleted ${ev[2]} (want 0); KA's reads moved in ${ev[6]} load documents (want >= 3); $(tail -n 3 "$E2E_TMP/hot_events.err" "$E2E_TMP/flash.err" "$E2E_TMP/client2.watch.err" 2>/dev/null)"
fi
# the control: the old rule, in the same watch, rewrites for rates alone
if [ -n "$R0" ] && [ "${ev[3]:--1}" -ge 3 ]; then
	pass fleet_members_hot_control_old_rule_rewrites
else
	fail fleet_members_hot_control_old_rule_rewrites "agent 1's hot/ entry rewritten for a rate alone ${ev[3]} times (want >= 3)"
fi
# agent fleet: KA's rates from agent 0's load document (the one in the
# same snapshot), KB's from its hot/ entry
fleet_hot_ok() {
	ks_in_ns "$CNS" "$AGENT" fleet --etcd "$URL" "${ETO[@]}" --cluster "$CLUSTER" --json \
		>"$E2E_TMP/fleet2.json" 2>"$E2E_TMP/fleet2.err" || return 1
	"$PY" - "$E2E_TMP/fleet2.json" "$A" "$KA" "$KB" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
a, ka, kb = sys.argv[2:5]
hot = {h.get("key"): h for h in d["hot"]}
ha, hb = hot[ka], hot[kb]
listed = [h for h in {x["self"]: x for x in d["hosts"]}[a]["status"]["hot"]
          if h["hash"] == ha["hash"]]
assert ha["rates_of"] == "load" and len(listed) == 1, (ha, listed)
assert ha["reads_per_s"] == listed[0]["reads_per_s"], (ha, listed)
assert ha["writes_per_s"] == listed[0]["writes_per_s"], (ha, listed)
assert hb["rates_of"] == "entry", hb
PYEOF
}
ok=
for ((i = 0; R0 && i < 20; i++)); do
	fleet_hot_ok 2>"$E2E_TMP/fleet2.why" && ok=1 && break
	sleep 0.2
done
if [ -n "$ok" ]; then
	pass fleet_members_fleet_hot_rates_from_load
else
	fail fleet_members_fleet_hot_rates_from_load "$(tail -n 3 "$E2E_TMP/fleet2.why" "$E2E_TMP/fleet2.err" 2>/dev/null) $(head -c 1500 "$E2E_TMP/fleet2.json" 2>/dev/null)"
fi

# ---- 5. a key only counted reaches no client ---------------------------------
PA=$(key_of 0 cnt) PB=$(key_of 1 cnt)
R1=$(ETCDCTL get "/keysteer/$CLUSTER/ring" -w json |
	"$PY" -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])')
watch_both 3 "${R1:-0}"
# counted_events [REV] -> "A_EVENTS A_LISTED A_UNLISTED B_PUTS B_DELETES":
# events of PA's hot/ entry in the client range (by its key or its hash),
# agent 0's load documents that listed PA with its counting entry, those
# after one that listed it which no longer did, and PB's hot/ puts and
# deletes; with REV, only events of revisions below it
counted_events() {
	"$PY" - "$E2E_TMP/client3.watch" "$E2E_TMP/loads3.watch" "$PA" "$PB" \
		"/keysteer-load/$CLUSTER/$A" "$E2E_ROOT/tests/e2e" "${1:-0}" <<'PYEOF'
import base64, json, sys
cw, lw, pa, pb, load_key = sys.argv[1:6]
sys.path.insert(0, sys.argv[6])
below = int(sys.argv[7])
from ks_watch_log import events
ha, listed, unlisted = None, 0, 0
for ev in events(lw):
    # a delete is the lease's expiry (a loaded machine), not the agent
    # acting on the pins: it neither lists nor unlists the key
    if (base64.b64decode(ev["kv"]["key"]).decode() != load_key or
            ev.get("type") in (1, "DELETE")):
        continue
    doc = json.loads(base64.b64decode(ev["kv"]["value"]))
    here = [h for h in doc.get("hot", []) if h.get("entry", {}).get("key") == pa]
    # the entry leaves out each field at its default (state: counting)
    if here and here[0]["entry"].get("state", "counting") == "counting":
        ha, listed = here[0]["hash"], listed + 1
    elif listed and not [h for h in doc.get("hot", []) if h["hash"] == ha]:
        unlisted += 1
a = pb_puts = pb_dels = 0
hb = None
for ev in events(cw):
    key = base64.b64decode(ev["kv"]["key"]).decode()
    if "/hot/" not in key or (below and int(ev["kv"]["mod_revision"]) >= below):
        continue
    deleted = ev.get("type") in (1, "DELETE")
    v = {} if deleted else json.loads(base64.b64decode(ev["kv"]["value"]))
    if v.get("key") == pa or (ha and key.endswith("/hot/" + ha)):
        a += 1
    if v.get("key") == pb:
        hb = key
        pb_puts += 1
    elif deleted and key == hb:
        pb_dels += 1
print(a, listed, unlisted, pb_puts, pb_dels)
PYEOF
}
cev_now() { # [REV]: cev=(counted_events [REV]), kept as it was when that fails
	local got
	read -r -a got <<<"$(counted_events "$@" 2>"$E2E_TMP/counted.err")"
	[ "${#got[@]}" = 5 ] && cev=("${got[@]}")
}
pins() { # FILE: written, tried again (the same document) until it lands
	local i
	for ((i = 0; i < 5; i++)); do
		ks_in_ns "$CNS" "$AGENT" pins set --etcd "$URL" "${ETO[@]}" --cluster "$CLUSTER" \
			--pins "$1" >>"$E2E_TMP/pins.out" 2>&1 && return 0
	done
	return 1
}
cev=(-1 -1 -1 -1 -1)
fleet_counted= S5=
printf 'pin %s 1\npin %s 1\n' "$PA" "$PB" >"$E2E_TMP/counted.pins"
: >"$E2E_TMP/none.pins"
if [ -n "$PA" ] && [ -n "$PB" ] && [ -n "$R1" ] && pins "$E2E_TMP/counted.pins"; then
	# both pins in their owners' tables: 20 s is room for a loaded machine
	for ((i = 0; i < 100; i++)); do
		cev_now
		[ "${cev[1]:-0}" -ge 1 ] && [ "${cev[3]:-0}" -ge 1 ] && break
		sleep 0.2
	done
	for ((i = 0; i < 20; i++)); do
		ks_in_ns "$CNS" "$AGENT" fleet --etcd "$URL" "${ETO[@]}" --cluster "$CLUSTER" --json \
			>"$E2E_TMP/fleet3.json" 2>"$E2E_TMP/fleet3.err" &&
			"$PY" - "$E2E_TMP/fleet3.json" "$A" "$PA" <<'PYEOF' 2>"$E2E_TMP/fleet3.why" && fleet_counted=1 && break
import json, sys
d = json.load(open(sys.argv[1]))
a, pa = sys.argv[2:4]
h = [x for x in d["hot"] if x.get("key") == pa]
assert len(h) == 1 and h[0]["owner"] == a and h[0]["state"] == "counting", h
PYEOF
		sleep 0.2
	done
	pins "$E2E_TMP/none.pins"
	for ((i = 0; i < 100; i++)); do
		cev_now
		[ "${cev[2]:-0}" -ge 1 ] && [ "${cev[4]:-0}" -ge 1 ] && break
		sleep 0.2
	done
	# agent 0 has acted on the removal: it wrote the load document
	# without PA (one transaction an interval holds its hot/ writes and
	# its load document, so every hot/ event of PA's life is at a lower
	# revision). A sentinel put after it, once the client watch has
	# delivered it, ends the count: no event of PA's before it.
	if [ "${cev[2]:-0}" -ge 1 ] && S5=$(sentinel client3 "/keysteer/$CLUSTER/"); then
		cev_now "$S5"
	fi
fi
note "a key only counted ($PA of agent 0, $PB of agent 1) from revision ${R1:-none} to the sentinel at ${S5:-none}: client range events of $PA's entry ${cev[0]}, agent 0's load documents listing it ${cev[1]}, then not ${cev[2]}; $PB's hot/ entry (old layout) ${cev[3]} puts, ${cev[4]} deletes"
if [ -n "$S5" ] && [ "${cev[0]}" = 0 ] && [ "${cev[1]:-0}" -ge 1 ] && [ "${cev[2]:-0}" -ge 1 ]; then
	pass fleet_members_counted_key_reaches_no_client
else
	fail fleet_members_counted_key_reaches_no_client "sentinel revision '$S5' $(tail -n 1 "$E2E_TMP/sentinel.err" 2>/dev/null); events of $PA's entry in the client range ${cev[0]} (want 0); load documents listing it ${cev[1]}, then not ${cev[2]} (want >= 1 each); $(tail -n 3 "$E2E_TMP/pins.out" "$E2E_TMP/counted.err" "$E2E_TMP/client3.watch.err" 2>/dev/null)"
fi
# the control: the layout before, in the same watch, delivers the key's
# birth and death to every client
if [ -n "$S5" ] && [ "${cev[3]:-0}" -ge 1 ] && [ "${cev[4]:-0}" -ge 1 ]; then
	pass fleet_members_counted_control_old_layout_reaches_clients
else
	fail fleet_members_counted_control_old_layout_reaches_clients "$PB's hot/ entry: ${cev[3]} puts, ${cev[4]} deletes in the client range (want >= 1 each)"
fi
if [ -n "$fleet_counted" ]; then
	pass fleet_members_fleet_lists_counted_key
else
	fail fleet_members_fleet_lists_counted_key "$(tail -n 3 "$E2E_TMP/fleet3.why" "$E2E_TMP/fleet3.err" 2>/dev/null) $(head -c 1500 "$E2E_TMP/fleet3.json" 2>/dev/null)"
fi
