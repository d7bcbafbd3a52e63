#!/usr/bin/env bash
# test_steer.sh - hot keys steered to L1 replicas, end to end, on the
# steering topology (steer_topo.sh): a client, 2 shard hosts each running
# memcached and an agent (ketama ring, --self, --replicas), 2 replica hosts,
# one bridge.
#
# 1. A flash key read by 1000 gets/s over UDP (threshold 100/s: capacity
#    1000 x 0.1) turns hot by rate: its gets are spread over the owner and
#    both replicas (replies come from the replicas' addresses, each replica's
#    own memcached cmd_get moves), with no errors, and the key is hot at
#    the next boundary: the owner's first interval with the key in the
#    datapath (its -v lines) at most one after the first with reads (a
#    load starting just before an interval ends is not yet enough to be
#    hot there). Counted in the agent's intervals, not timed: the first
#    steered reply (printed) came 375 to 470 ms after the load's start
#    quiet, 602 ms at load 25, against a bound of an interval + 300 ms
#    that a late interval or slow fill on a loaded machine exceeds.
# 2. The report, taken while the load runs, shows the key armed with its
#    replicas and their load (the load runs on until it does).
# 3. Freshness (ks_fresh.py): readers hammer the key while a writer sets new
#    values on the owner; no read sent after a write's ack may see an older
#    value. Re-arm times are printed.
# 4. A replica dies (its memcached killed): within a few intervals the
#    agent has moved the key's copies to the other replica; gets after that
#    never time out and none is answered by the dead one. A get sent to the
#    dead replica never has a reply, so a 2 s timeout tells it apart from a
#    reply a loaded machine made late (0.2 s timed out 2 to 4 of 1000).
# 5. SIGKILL the agent: steering stops within its 3-interval TTL.
#
# STEER_TEST_FAMILY=6 (what test_steer_v6.sh sets) runs all of it over
# IPv6 (steer_topo_up ... 6: 2001:2::/64, replicas as [v6]:port), its
# cases named steer6_*.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../../user/scripts/steer_topo.sh
. "$E2E_ROOT/user/scripts/steer_topo.sh"
FAMILY=${STEER_TEST_FAMILY:-4}
T=steer
[ "$FAMILY" = 6 ] && T=steer6
e2e_init "$T"
trap 'steer_topo_down; e2e_cleanup' EXIT

LOAD=$E2E_ROOT/${OUT:-build}/ks_load
INTERVAL_MS=500
KEY=flash:1

if ! steer_topo_up 2 2 "$FAMILY" >"$E2E_TMP/topo.out" 2>&1; then
	fail ${T}_topology "$(tail -n 3 "$E2E_TMP/topo.out")"
	exit 1
fi
# Which shard owns the key, by the ring the clients use.
OWNER=$("$AGENT" ring lookup --shards-file "$STEER_SHARDS_FILE" "$KEY" |
	awk '{print $2}')
OADDR=${STEER_SHARD_ADDR[OWNER]}
OHP=$(STEER_HOSTPORT "$OADDR") # ADDR:PORT, or [ADDR]:PORT
R0HP=$(STEER_HOSTPORT "${STEER_REPLICA_ADDR[0]}")
R1HP=$(STEER_HOSTPORT "${STEER_REPLICA_ADDR[1]}")
note "$KEY is owned by shard $OWNER ($OADDR)"

agent_args() { # IDX
	echo -v --interval 0.5 --sample 1 --shard-capacity 1000 --hot-fraction 0.1 \
		--shards-file "$STEER_SHARDS_FILE" \
		--self "$(STEER_HOSTPORT "${STEER_SHARD_ADDR[$1]}")" \
		--replicas "$STEER_REPLICAS"
}
for i in 0 1; do
	# shellcheck disable=SC2046 # the arguments are meant to split
	if ! steer_agent_start "$i" $(agent_args "$i"); then
		fail ${T}_agents "agent $i did not attach: $(head -n 3 "$STEER_TMP/agent.$i.out")"
		exit 1
	fi
done

mc_gets() { # NS HOST:PORT -> cmd_get
	ks_in_ns "$1" "$PY" "$E2E_ROOT/user/scripts/mc_stats.py" snap "$2" \
		>"$E2E_TMP/snap.json" 2>/dev/null
	"$PY" -c 'import json,sys
d = json.load(open(sys.argv[1]))
def find(o):
    if isinstance(o, dict):
        if "cmd_get" in o:
            return o["cmd_get"]
        for v in o.values():
            r = find(v)
            if r is not None:
                return r
    if isinstance(o, list):
        for v in o:
            r = find(v)
            if r is not None:
                return r
print(find(d))' "$E2E_TMP/snap.json" 2>/dev/null
}
r0_before=$(mc_gets "$STEER_CLIENT_NS" "$R0HP")
r1_before=$(mc_gets "$STEER_CLIENT_NS" "$R1HP")

# hot_boundary LOG: "A H" from an agent's -v lines: A the first interval
# with reads counted, H the first with a key in the datapath (each empty
# when there is none)
hot_boundary() {
	"$PY" - "$1" <<'PYEOF'
import re, sys
a = h = None
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"keysteer: #(\d+) [0-9.]+ req/s \(read ([0-9.]+),", line)
    if m and a is None and float(m.group(2)) > 0:
        a = int(m.group(1))
    m = re.match(r"keysteer: #(\d+) hot: (\d+) keys in the datapath", line)
    if m and h is None and int(m.group(2)) > 0:
        h = int(m.group(1))
print("" if a is None else a, "" if h is None else h)
PYEOF
}

# report_hot FILE: "OK" when the owner's report (JSON, in FILE) shows the
# key armed with its replicas, else why not
report_hot() {
	"$PY" - "$1" "$KEY" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
k = [h for h in d["hot_keys"] if h.get("key") == sys.argv[2]]
why = []
if not k:
    why.append("%s not in hot_keys %r" % (sys.argv[2], d["hot_keys"]))
else:
    k = k[0]
    if k["state"] not in ("armed", "dirty", "filling") or k["copies"] != 3 or len(k["replicas"]) != 2:
        why.append("entry %r" % k)
if len(d["replicas"]) != 2:
    why.append("replicas %r" % d["replicas"])
print("; ".join(why) or "OK")
PYEOF
}

# --- 1. a key turning hot by rate is steered -------------------------------
# The load runs 4 s (a pace: the counts below are of a run that long),
# and on until the owner's report, taken while it runs, shows the key
# armed (60 s a guard); SIGTERM ends it then with its summary. It ran a
# fixed 4 s and the report was taken after it, two stats reads later:
# the key leaves the table once its smoothed rate falls under 0.7 of the
# threshold (1000, 500, 250, 125, 62.5 reads/s: the 4th interval, 2 s
# after the load), which a loaded machine's two Python runs can outlast.
ks_in_ns_bg "$STEER_CLIENT_NS" "$LOAD" --shards-file "$STEER_SHARDS_FILE" \
	--proto udp --keys 200 --zipf 0.5 --flash "$KEY:0.5" --mix get=100 \
	--preload --duration 120 --rate 2000 --json >"$E2E_TMP/load.json" \
	2>"$E2E_TMP/load.err"
load_pid=$KS_BG_PID
t0=$SECONDS
: >"$E2E_TMP/report.json"
while kill -0 "$load_pid" 2>/dev/null && [ $((SECONDS - t0)) -lt 60 ]; do
	if [ $((SECONDS - t0)) -ge 4 ] &&
		"$AGENT" report --iface "${STEER_SHARD_IF[OWNER]}" --json >"$E2E_TMP/report.json" 2>&1 &&
		[ "$(report_hot "$E2E_TMP/report.json")" = OK ]; then
		"$AGENT" report --iface "${STEER_SHARD_IF[OWNER]}" >"$E2E_TMP/report.txt" 2>&1
		break
	fi
	sleep 0.2
done
kill -TERM "$load_pid" 2>/dev/null
wait "$load_pid"
note "the load ran $((SECONDS - t0)) s (exit $?)"
why=$("$PY" - "$E2E_TMP/load.json" "$INTERVAL_MS" "$R0HP" "$R1HP" 2>"$E2E_TMP/load.sum" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
iv = float(sys.argv[2]); reps = sys.argv[3:]
why = []
errs = sum(o["errors"] + o["timeouts"] for o in d["ops"])
total = sum(o["ops"] for o in d["ops"])
# A loaded machine loses a few UDP datagrams in memcached's sockets (8 of
# 6,233 at load 7); a steering fault loses whole paths: far over 1%.
if errs * 100 > total:
    why.append("%d of %d gets failed or timed out (over 1%%)" % (errs, total))
by = d["replies_by_source"]
for r in reps:
    if by.get(r, 0) < 100:
        why.append("replica %s answered %d" % (r, by.get(r, 0)))
if d["steered"] < 1000:
    why.append("only %d steered replies" % d["steered"])
fs = d["first_steered_ms"]
if fs is None:
    why.append("no steered reply")
print("; ".join(why) or "OK")
print("steered %d of %d gets (%d failed or timed out), by source %s, first steered after %s ms" % (
    d["steered"], total, errs, by, fs), file=sys.stderr)
PYEOF
)
note "$(cat "$E2E_TMP/load.sum" 2>/dev/null)"
# hot at the next boundary, by the owner's own intervals (its -v lines):
# the first interval with reads counted (the load's first, maybe a sliver
# of it) is A, the first whose line has the key in the datapath (the
# table's decision, installed in the same interval) at most A + 1. It was
# the first steered reply within an interval + 300 ms of the load's start
# (375 to 470 ms quiet, 602 at load 25), which a loaded machine's late
# interval or slow fill exceeds with the key hot at the right boundary.
read -r a_seq h_seq <<<"$(hot_boundary "$STEER_TMP/agent.$OWNER.out")"
note "the owner's first interval with reads #${a_seq:-none}, with the key in the datapath #${h_seq:-none}"
if [ "$why" = OK ] && { [ -z "$a_seq" ] || [ -z "$h_seq" ] || [ "$h_seq" -gt $((a_seq + 1)) ]; }; then
	why="the key in the datapath at interval #${h_seq:-never}, the load's first #${a_seq:-never} (want at most one more)"
fi
if [ "$why" = OK ]; then
	pass ${T}_flash_key_spread_over_replicas
else
	fail ${T}_flash_key_spread_over_replicas "${why:-no load output: $(tail -n 2 "$E2E_TMP/load.err")}"
fi

r0_after=$(mc_gets "$STEER_CLIENT_NS" "$R0HP")
r1_after=$(mc_gets "$STEER_CLIENT_NS" "$R1HP")
if [ -n "$r0_after" ] && [ -n "$r1_after" ] &&
	[ $((r0_after - r0_before)) -ge 100 ] && [ $((r1_after - r1_before)) -ge 100 ]; then
	pass ${T}_replicas_serve_gets
	note "replica cmd_get +$((r0_after - r0_before)), +$((r1_after - r1_before))"
else
	fail ${T}_replicas_serve_gets "cmd_get ${r0_before:-?}->${r0_after:-?}, ${r1_before:-?}->${r1_after:-?}"
fi

# --- 2. the report (taken while the load ran, above) ----------------------
why=$(report_hot "$E2E_TMP/report.json" 2>&1)
if [ "$why" = OK ]; then
	pass ${T}_report_hot_keys
else
	fail ${T}_report_hot_keys "${why:-no report}"
fi
if grep -q "^hot keys:" "$E2E_TMP/report.txt" && grep -q "steered reads/s" "$E2E_TMP/report.txt"; then
	pass ${T}_report_text
else
	fail ${T}_report_text "$(tail -n 5 "$E2E_TMP/report.txt")"
fi

# --- 3. freshness -----------------------------------------------------------
# The key stays hot while the checker reads it at ~1000/s.
ks_in_ns "$STEER_CLIENT_NS" "$PY" "$E2E_DIR/ks_fresh.py" --owner "$OHP" \
	--key "$KEY" --duration 5 --readers 4 --write-interval 0.05 --rate 1500 \
	>"$E2E_TMP/fresh.json" 2>"$E2E_TMP/fresh.err"
rc=$?
why=$("$PY" - "$E2E_TMP/fresh.json" 2>"$E2E_TMP/fresh.sum" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
why = []
if d["stale_reads"] != 0:
    why.append("%d stale reads, e.g. %r" % (d["stale_reads"], d.get("stale_examples", [])[:3]))
if d["steered_reads"] < 100:
    why.append("only %d steered reads" % d["steered_reads"])
if d["writes"] < 20:
    why.append("only %d writes" % d["writes"])
print("; ".join(why) or "OK")
p = d.get("rearm_ms_percentiles_after_first_steered") or d.get("rearm_ms_percentiles")
print("reads %d, steered %d, writes %d, stale %d, write -> re-armed ms %s" % (
    d["reads"], d["steered_reads"], d["writes"], d["stale_reads"], p), file=sys.stderr)
PYEOF
)
if [ "$rc" -le 1 ] && [ "$why" = OK ]; then
	pass ${T}_no_stale_reads
	note "$(cat "$E2E_TMP/fresh.sum")"
else
	fail ${T}_no_stale_reads "exit $rc: ${why:-$(tail -n 2 "$E2E_TMP/fresh.err")}"
fi

# --- 4. a replica dies --------------------------------------------------------
dead=${STEER_MC_PIDS[${#STEER_SHARD_ADDR[@]} + 1]} # replica 1's memcached
kill -KILL "$dead" 2>/dev/null
wait "$dead" 2>/dev/null
# the load keeps the key hot; the next refresh fails and moves the copies
ks_in_ns "$STEER_CLIENT_NS" "$LOAD" --server "$OHP" --proto udp \
	--keys 1 --flash "$KEY:0.99" --mix get=100 --duration 2.5 --rate 500 \
	--timeout 0.2 --json >"$E2E_TMP/failing.json" 2>/dev/null
note "while the replica was found dead: $("$PY" -c 'import json,sys
d = json.load(open(sys.argv[1]))
print("%d of %d gets timed out" % (sum(o["timeouts"] for o in d["ops"]), sum(o["ops"] for o in d["ops"])))' "$E2E_TMP/failing.json" 2>&1)"
ks_in_ns "$STEER_CLIENT_NS" "$LOAD" --server "$OHP" --proto udp \
	--keys 1 --flash "$KEY:0.99" --mix get=100 --duration 2 --rate 500 \
	--timeout 2 --json >"$E2E_TMP/failover.json" 2>"$E2E_TMP/failover.err"
why=$("$PY" - "$E2E_TMP/failover.json" "$R0HP" "$R1HP" \
	2>"$E2E_TMP/failover.sum" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
alive, dead = sys.argv[2], sys.argv[3]
by = d["replies_by_source"]
errs = sum(o["errors"] + o["timeouts"] for o in d["ops"])
why = []
if errs:
    why.append("%d gets failed or timed out" % errs)
if by.get(dead, 0):
    why.append("the dead replica answered %d" % by[dead])
if by.get(alive, 0) < 200:
    why.append("the live replica answered only %d" % by.get(alive, 0))
print("; ".join(why) or "OK")
print("after the failover: %r, %d failed" % (by, errs), file=sys.stderr)
PYEOF
)
if [ "$why" = OK ]; then
	pass ${T}_replica_failover
	note "$(cat "$E2E_TMP/failover.sum")"
else
	fail ${T}_replica_failover "${why:-$(tail -n 2 "$E2E_TMP/failover.err")}"
fi

# --- 5. a dead agent stops steering within its TTL -------------------------
apid=${STEER_AGENT_PIDS[OWNER]}
kill -KILL "$apid" 2>/dev/null
wait "$apid" 2>/dev/null
sleep $(((3 * INTERVAL_MS + 300) / 1000)).$(((3 * INTERVAL_MS + 300) % 1000 / 100))
ks_in_ns "$STEER_CLIENT_NS" "$LOAD" --server "$OHP" --proto udp \
	--keys 1 --flash "$KEY:0.99" --mix get=100 --count 300 --rate 1000 --json \
	>"$E2E_TMP/dead.json" 2>"$E2E_TMP/dead.err"
# the gets answered, and by the owner: no reply at all would say nothing
# about where replies come from (up to 1% may go unanswered: a UDP
# datagram lost on a loaded machine is not a steered one)
why=$("$PY" - "$E2E_TMP/dead.json" "$OHP" 300 <<'PYEOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print("no output"); sys.exit()
owner, n = sys.argv[2], int(sys.argv[3])
by = d["replies_by_source"]
sent = sum(o["ops"] for o in d["ops"])
errors = sum(o["errors"] for o in d["ops"])
why = []
if d["steered"]:
    why.append("%d steered replies" % d["steered"])
# (it failed on any error, a lost datagram among them, which the 1% for
# unanswered gets above is for)
if sent != n or errors > n // 100 or by.get(owner, 0) < n - n // 100 or set(by) - {owner}:
    why.append("%d gets sent, %d errors, replies by source %r (want %d or more, all from the owner %s)" % (
        sent, errors, by, n - n // 100, owner))
print("; ".join(why) or "OK")
PYEOF
)
if [ "$why" = OK ]; then
	pass ${T}_stops_after_agent_death
else
	fail ${T}_stops_after_agent_death "${why:-the check crashed} 1.8 s after SIGKILL $(tail -n 2 "$E2E_TMP/dead.err")"
fi
# its pins outlive it: detach them like an operator would
e2e_agent detach --iface "${STEER_SHARD_IF[OWNER]}" >/dev/null 2>&1
steer_agents_stop
exit "$E2E_FAILED"
