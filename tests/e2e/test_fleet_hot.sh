#!/usr/bin/env bash
# test_fleet_hot.sh - the fleet's hot-key table in etcd (issue 12,
# docs/fleet.md "hot/<hash>"), on the steering topology (steer_topo.sh): 2
# shards with an agent each (--etcd, --self, --replicas, --export-keys), 2
# L1 replicas, one etcd 3.4 in the client's namespace.
#
# 1. A flash key read over UDP turns hot: its owner (by the ring) publishes
#    hot/<hash> with the key, itself as owner, 3 copies, both replicas,
#    state armed, under its lease, and no owner figures; its load
#    document lists the key with the owner's hits and misses per second;
#    the other agent publishes no entry.
# 2. A client watching hot/ (ks_hot_watch.py, etcd's gateway): each write to
#    the armed key turns its entry dirty (write_seq above the armed one) and
#    then armed again; the time from the write leaving the client to the
#    watch event, p50/p99/max, is printed. The bound is the property "at
#    once, not at the next interval": the median under 100 ms (an
#    interval-driven entry would be 250 ms on average at 0.5 s intervals).
#    The max is not bounded: on a loaded 2-core machine etcd's fsync or the
#    watcher stalls for seconds at a time (2374 ms seen with stress-ng
#    --cpu 2 beside the run) without the agent being late.
# 3. Writes proportional to change: over 8 intervals the owner writes only
#    news. Every put of its entries seen by a watch (hosts/<self>, hot/)
#    changed a field other than a rate, or moved a rate by more than a
#    tenth and 1/s (the rule in docs/fleet.md), at most one transaction an
#    interval, and the lease kept by keepalives (-v line; one an interval
#    quiet, none for 5 s while etcd was starved at load 30). On a quiet machine
#    the load's rates hold and that is about 2 transactions; a loaded one
#    makes ks_load's pace (not the agent's) move by more than a tenth.
# 3b. A plain client's write (not through the library): the time until no
#    copy would serve the old value to a library reader (the agent
#    invalidates them on the dirty event), p50/p99/max; the median under
#    50 ms (on the event, not at an interval), the tail printed: a loaded
#    machine stalls a poll or the worker now and then (p99 742 ms seen
#    with stress-ng --cpu 2 beside the run).
# 4. The key cools (load stops): its entry is deleted.
# 5. Control: the owner restarted with --etcd-hot-events off (entries
#    follow the steering only at intervals): the watch must run whole (the
#    key armed, writes stored on the owner) and show the violation
#    itself: at least half of the stored writes never seen dirty (within
#    1.5 s, three intervals; a late event is not enough, a loaded machine
#    makes those with the event path too); a crash, a missing document or
#    a key never armed is a FAIL.
# etcd and the agents are stopped by their pids on every exit path.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../../user/scripts/steer_topo.sh
. "$E2E_ROOT/user/scripts/steer_topo.sh"
e2e_init fleet_hot

ETCD_PID=
LOAD_PID=
trap e2e_topo_etcd_cleanup EXIT

e2e_need_etcd fleet_hot

LOAD=$E2E_ROOT/${OUT:-build}/ks_load
KEY=flash:1
CLUSTER=hot

if ! steer_topo_up 2 2 >"$E2E_TMP/topo.out" 2>&1; then
	fail fleet_hot_topology "$(tail -n 3 "$E2E_TMP/topo.out")"
	exit 1
fi
CNS=$STEER_CLIENT_NS
URL=http://$STEER_CLIENT_ADDR:2379
if ! e2e_etcd_start "$CNS" hot "$URL" 2380 >"$E2E_TMP/etcd_start.out"; then
	fail fleet_hot_setup "$(cat "$E2E_TMP/etcd_start.out")"
	exit 1
fi
ETCD_PID=$E2E_ETCD_PID
ectl() { ks_in_ns "$CNS" etcdctl --endpoints "$URL" "$@"; }

OWNER=$("$AGENT" ring lookup --shards-file "$STEER_SHARDS_FILE" "$KEY" |
	awk '{print $2}')
OTHER=$((1 - OWNER))
OSELF=${STEER_SHARD_ADDR[OWNER]}:$STEER_PORT
note "$KEY is owned by shard $OWNER ($OSELF)"

if ! ks_in_ns "$CNS" "$AGENT" ring set --etcd "$URL" --cluster "$CLUSTER" \
	--shards-file "$STEER_SHARDS_FILE" >"$E2E_TMP/ringset.out" 2>&1; then
	fail fleet_hot_setup "ring set: $(cat "$E2E_TMP/ringset.out")"
	exit 1
fi
for i in 0 1; do
	if ! steer_agent_start "$i" -v --interval 0.5 --sample 1 \
		--shard-capacity 1000 --hot-fraction 0.1 \
		--etcd "$URL" --cluster "$CLUSTER" \
		--self "${STEER_SHARD_ADDR[$i]}:$STEER_PORT" \
		--replicas "$STEER_REPLICAS"; then
		fail fleet_hot_agents "agent $i did not attach: $(head -n 3 "$STEER_TMP/agent.$i.out")"
		exit 1
	fi
done

# UDP gets of the flash key, for as long as the checks below need: until
# step 4 stops it (a loaded machine took more than the 45 s this once ran)
ks_in_ns_bg "$CNS" "$LOAD" --shards-file "$STEER_SHARDS_FILE" \
	--proto udp --keys 200 --zipf 0.5 --flash "$KEY:0.5" --mix get=100 \
	--preload --duration 600 --rate 2000 --json \
	</dev/null >"$E2E_TMP/load.json" 2>"$E2E_TMP/load.err"
LOAD_PID=$KS_BG_PID

# --- 1. the owner's entry -----------------------------------------------
entries() { # -> one JSON line per hot/ entry: {"k": key, "lease": ..., "v": value}
	ectl get --prefix "/keysteer/$CLUSTER/hot/" -w json 2>/dev/null |
		"$PY" -c 'import base64, json, sys
d = json.load(sys.stdin)
for kv in d.get("kvs", []):
    print(json.dumps({"k": base64.b64decode(kv["key"]).decode(),
                      "lease": kv.get("lease", 0),
                      "v": base64.b64decode(kv["value"]).decode("latin-1")}))'
}
check_entry() {
	entries | "$PY" -c 'import json, sys
key, owner, reps = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
rows = [json.loads(l) for l in sys.stdin if l.strip()]
mine = []
for r in rows:
    try:
        v = json.loads(r["v"])
    except ValueError:
        print("entry %s does not parse" % r["k"]); sys.exit()
    if v.get("key") == key:
        mine.append((r, v))
why = []
if len(mine) != 1:
    why.append("%d entries for %s (of %d): %r" % (len(mine), key, len(rows), rows))
else:
    r, v = mine[0]
    if not r["k"].endswith("/" + v["hash"]): why.append("key %s, hash %s" % (r["k"], v["hash"]))
    if v["owner"] != owner: why.append("owner %s, not %s" % (v["owner"], owner))
    if v["copies"] != 3 or sorted(v["replicas"]) != sorted(reps): why.append("copies %s replicas %s" % (v["copies"], v["replicas"]))
    if v["state"] != "armed" or not v["read_hot"]: why.append("state %s read_hot %s" % (v["state"], v["read_hot"]))
    if not r["lease"]: why.append("not under a lease")
    # the owner counts its replies (--owner-replies, on by default): its
    # load document (outside what clients watch) lists the key with its
    # misses; the entry clients watch has none of them
    if "owner_misses_per_s" in v or "owner_source" in v:
        why.append("owner figures in the hot/ entry: %r" % v)
    try:
        load = json.loads(sys.argv[4])
        lh = [h for h in load.get("hot", []) if h.get("hash") == v["hash"]]
    except (ValueError, AttributeError):
        lh = []
    if len(lh) != 1 or not isinstance(lh[0].get("owner_misses_per_s"), (int, float)) or \
            not isinstance(lh[0].get("owner_hits_per_s"), (int, float)):
        why.append("the owner'"'"'s load document lists %r for the key: %.300s" % (lh, sys.argv[4]))
print("; ".join(why) or "OK")' "$KEY" "$OSELF" "$STEER_REPLICAS" "$(load_doc)"
}
load_doc() { # the owner's load document, or ""
	ectl get "/keysteer-load/$CLUSTER/$OSELF" --print-value-only 2>/dev/null
}
# 60 s by the clock, a guard (it was 40 polls, 10 s)
why='' t0=$SECONDS
while [ $((SECONDS - t0)) -lt 60 ]; do
	why=$(check_entry)
	[ "$why" = OK ] && break
	sleep 0.25
done
if [ "$why" = OK ]; then
	pass fleet_hot_owner_publishes_armed_entry
else
	fail fleet_hot_owner_publishes_armed_entry "$why"
fi

# --- 2. a client sees each write as the entry turning dirty --------------
# watch_check FILE WRITES -> OK, or why not (and the figures on stderr)
watch_check() {
	"$PY" - "$1" "$2" <<'PYEOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    print("no output"); sys.exit()
n = int(sys.argv[2])
why = []
if not d["armed_at_start"]: why.append("never armed: %r" % d.get("last_state"))
dm, rm = d.get("dirty_ms", {}), d.get("rearmed_ms", {})
if isinstance(dm, dict):
    if dm["n"] < n: why.append("%d of %d writes seen dirty (%d stored, %d of those missed, %d timeouts)" % (dm["n"], n, d["sent"], d["missed"], d["timeouts"]))
    elif dm["p50"] > 100: why.append("writes seen dirty after a median %.1f ms" % dm["p50"])
    print("write -> watch event dirty: p50 %s ms, p99 %s ms, max %s ms (n %d); armed again: p50 %s ms, p99 %s ms, max %s ms (n %d)" % (
        dm["p50"], dm["p99"], dm["max"], dm["n"], rm["p50"], rm["p99"], rm["max"], rm["n"]), file=sys.stderr)
if d["unparsed"]: why.append("unparsed entries %r" % d["unparsed"][:3])
print("; ".join(why) or "OK")
PYEOF
}
# The key must be armed before each write: up to 30 s, a refill on a
# machine at load 30 (the watch's own TIMEOUT bounds only the dirty event).
hot_watch() { # WRITES TIMEOUT OUT: the exit status in OUT.rc
	ks_in_ns "$CNS" "$PY" "$E2E_ROOT/tests/e2e/ks_hot_watch.py" --etcd "$URL" \
		--cluster "$CLUSTER" --owner "$OSELF" --key "$KEY" --writes "$1" \
		--timeout "$2" --arm-timeout 30 >"$3" 2>"$3.err"
	echo $? >"$3.rc"
}
# 20 s: every stored write must be seen dirty, and etcd starved of CPU
# (load 30 on 2 cores) has delivered an event 8.4 s late
hot_watch 30 20 "$E2E_TMP/watch.json"
why=$(watch_check "$E2E_TMP/watch.json" 30 2>"$E2E_TMP/watch.sum")
note "$(cat "$E2E_TMP/watch.sum")"
if [ "$why" = OK ]; then
	pass fleet_hot_write_turns_entry_dirty_at_once
else
	fail fleet_hot_write_turns_entry_dirty_at_once "$why $(tail -2 "$E2E_TMP/watch.json.err")"
fi

# --- 3. steady state: few writes -------------------------------------------
# snap IDX -> "TXNS KEEPALIVES INTERVALS" from one read of the owner's -v
# lines: three reads could straddle a new line and count its transactions
# against one interval too few
snap() {
	awk '/ txns/ { n++; for (i = 2; i <= NF; i++) {
		if ($i ~ /^txns/) t = $(i - 1); if ($i ~ /^keepalives/) k = $(i - 1) } }
	     END { print (t == "" ? "?" : t), (k == "" ? "?" : k), n + 0 }' \
		"$STEER_TMP/agent.$1.out"
}
intervals() { snap "$1" | awk '{print $3}'; }
news() {
	ks_in_ns "$CNS" "$PY" "$E2E_ROOT/tests/e2e/ks_pub_news.py" --etcd "$URL" \
		--prefix "/keysteer/$CLUSTER/" "$@"
}
# four of the owner's intervals (2 s at 0.5 s): the writes' rate decays out
# of the estimate; counted in its own status lines, not by a clock
w0=$(intervals "$OWNER")
for _ in $(seq 1 600); do
	[ $(($(intervals "$OWNER") - w0)) -ge 4 ] && break
	sleep 0.1
done
read -r t0 k0 n0 <<<"$(snap "$OWNER")"
r0=$(news rev 2>"$E2E_TMP/news.err")
[ -n "$r0" ] || r0=unread
# 8 intervals: waited for by the owner's own status lines, not a clock
for _ in $(seq 1 600); do
	[ $(($(intervals "$OWNER") - n0)) -ge 8 ] && break
	sleep 0.1
done
read -r t1 k1 n1 <<<"$(snap "$OWNER")"
r1=$(news rev 2>>"$E2E_TMP/news.err")
[ "$r0" = unread ] || news news --from "$r0" --to "${r1:-0}" >"$E2E_TMP/news.json" 2>>"$E2E_TMP/news.err"
# The heartbeat (hosts/<self> every KS_HOSTS_HEARTBEAT = 30 intervals)
# rewrites a document unchanged: at most one in 8 intervals.
why=$("$PY" - "$E2E_TMP/news.json" "$OSELF" <<'PYEOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    print("no news summary"); sys.exit()
hb = [s for s in d["not_news"] if "/hosts/" in s["key"]]
other = [s for s in d["not_news"] if "/hosts/" not in s["key"]]
why = []
if len(hb) > 1: why.append("%d hosts/ puts without news: %r" % (len(hb), hb[:2]))
if other: why.append("%d puts without news: %r" % (len(other), other[:2]))
print("; ".join(why) or "OK %d puts" % d["puts"])
PYEOF
)
ni=$((${n1:-0} - ${n0:-0}))
isnum() { case "$1" in '' | *[!0-9]*) return 1 ;; esac; }
if isnum "$t0" && isnum "$t1" && isnum "$k0" && isnum "$k1" &&
	[ "$ni" -ge 8 ] && [ $((t1 - t0)) -le "$ni" ] &&
	[ "${why%% *}" = OK ] && [ $((k1 - k0)) -ge 1 ]; then
	pass fleet_hot_steady_writes_few
	note "owner over $ni intervals: $((t1 - t0)) write transactions (${why#OK }, each news) and $((k1 - k0)) keepalives"
else
	fail fleet_hot_steady_writes_few "transactions ${t0:-?} -> ${t1:-?}, keepalives ${k0:-?} -> ${k1:-?} in ${ni} intervals; revisions ${r0:-?} -> ${r1:-?}: $why $(tail -2 "$E2E_TMP/news.err")"
fi

# --- 3b. plain writers: how long a copy serves the old value -------------
# A write not made through the client library (a plain set on the owner):
# the owner's agent invalidates every copy on the datapath's dirty event
# (docs/client.md); until then a library reader may read the old copy.
ks_in_ns "$CNS" "$PY" "$E2E_ROOT/tests/e2e/ks_plain_window.py" --owner "$OSELF" \
	--replicas "$STEER_REPLICAS" --key "$KEY" --writes 20 --timeout 10 \
	>"$E2E_TMP/window.json" 2>"$E2E_TMP/window.err"
why=$("$PY" - "$E2E_TMP/window.json" 2>"$E2E_TMP/window.sum" <<'PYEOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    print("no output"); sys.exit()
w = d["window_ms"]
why = []
if w["n"] < 18: why.append("%d of 20 writes measured (%d timeouts)" % (w["n"], d["timeouts"]))
elif w["p50"] > 50: why.append("p50 %.1f ms" % w["p50"])
print("plain write -> no copy serves the old value: p50 %s ms, p99 %s ms, max %s ms (n %d); ended by %s" % (
    w["p50"], w["p99"], w["max"], w["n"], d["ended_by"]), file=sys.stderr)
print("; ".join(why) or "OK")
PYEOF
)
note "$(cat "$E2E_TMP/window.sum")"
if [ "$why" = OK ]; then
	pass fleet_hot_plain_write_window
else
	fail fleet_hot_plain_write_window "$why $(tail -2 "$E2E_TMP/window.err")"
fi

# --- 5. control: without the event path the check must fail -------------
kill -INT "${STEER_AGENT_PIDS[OWNER]}" 2>/dev/null
wait "${STEER_AGENT_PIDS[OWNER]}" 2>/dev/null
# --etcd-hot-events is a test-only switch: this agent alone gets the variable
if ! KEYSTEER_TEST_SWITCHES=1 steer_agent_start "$OWNER" -v --interval 0.5 --sample 1 \
	--shard-capacity 1000 --hot-fraction 0.1 --etcd-hot-events off \
	--etcd "$URL" --cluster "$CLUSTER" --self "$OSELF" \
	--replicas "$STEER_REPLICAS"; then
	fail fleet_hot_control "the control agent did not attach: $(head -n 3 "$STEER_TMP/agent.$OWNER.out")"
else
	hot_watch 4 1.5 "$E2E_TMP/control.json"
	why=$(watch_check "$E2E_TMP/control.json" 4 2>"$E2E_TMP/control.sum")
	# the violation, counted: of the writes the owner stored, how many the
	# watch never saw dirty; anything else is no control
	verdict=$("$PY" - "$E2E_TMP/control.json" "$(cat "$E2E_TMP/control.json.rc")" 4 <<'PYEOF'
import json, sys
rc, n = sys.argv[2], int(sys.argv[3])
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print("BROKEN no document (exit %s)" % rc); sys.exit()
if rc != "0" or not d["armed_at_start"] or not d["sent"] or d["unparsed"]:
    print("BROKEN exit %s, armed at start %s, %d of %d writes stored, unparsed %r" % (
        rc, d["armed_at_start"], d["sent"], n, d["unparsed"][:2])); sys.exit()
print("%s %d of %d stored writes (of %d) never seen dirty (the others after %s ms)" % (
    "VIOLATION" if 2 * d["missed"] >= d["sent"] else "NONE", d["missed"], d["sent"], n,
    d["dirty_ms"]["samples"]))
PYEOF
)
	if [ "${verdict%% *}" = VIOLATION ] && [ "$why" != OK ]; then
		pass fleet_hot_control_without_events_fails
		note "control (--etcd-hot-events off): ${verdict#* }"
	else
		fail fleet_hot_control_without_events_fails "${verdict:-the check crashed}; $why; $(cat "$E2E_TMP/control.sum") $(tail -2 "$E2E_TMP/control.json.err")"
	fi
fi

# --- 4. the key cools: its entry goes --------------------------------------
ks_stop_pid "$LOAD_PID" INT 5
LOAD_PID=
# 60 s by the clock, a guard (it was 60 polls, 15 s)
gone='' t0=$SECONDS
while [ $((SECONDS - t0)) -lt 60 ]; do
	if [ -z "$(entries | grep -F "\"key\\\": \\\"$KEY\\\"")" ] &&
		! grep -qF "$KEY" <<<"$(entries)"; then
		gone=1
		break
	fi
	sleep 0.25
done
if [ -n "$gone" ]; then
	pass fleet_hot_cooled_entry_deleted
else
	fail fleet_hot_cooled_entry_deleted "still there 15 s after the load stopped: $(entries | head -2)"
fi
