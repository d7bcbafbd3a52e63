#!/usr/bin/env bash
# test_restart.sh - keysteer never breaks traffic and loses nothing on a
# restart. A client runs against memcached (TCP and UDP) all through:
#   1. the agent is SIGKILLed: requests keep flowing and the datapath keeps
#      counting (fail-open);
#   2. a new agent starts: it takes over the running program (one
#      bpf_link_update: same link, new program), a second agent is refused,
#      counters go on from where they were, the epoch sequence and the ring
#      version continue, the pinned hot key is still in the datapath;
#   3. 'agent detach' removes it while traffic flows.
# Failed requests over the whole run: 0.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init restart

LOAD=$E2E_ROOT/${OUT:-build}/ks_load
PINS=$E2E_TMP/pins.txt
echo "pin hot:key 1" >"$PINS"
e2e_net_up
ARGS=(--sample 1 --interval 0.5 --shards "$SADDR:$PORT" --self "$SADDR:$PORT"
	--pins "$PINS")

if ! e2e_agent_start "${ARGS[@]}"; then
	fail restart "the first agent did not attach"
	exit 1
fi

# seen: packets the datapath ran on, summed over CPUs (pinned ks_pkts)
seen() {
	bpftool -j map dump pinned "$PIN_ROOT/$SIF/ks_pkts" 2>/dev/null |
		"$PY" -c 'import json,sys
d = json.load(sys.stdin)[0]["formatted"]
print(sum(v["value"]["n"][0] for v in d["values"]))' 2>/dev/null
}
report_field() { # FIELD: from agent report --json
	"$AGENT" report --iface "$SIF" --json 2>/dev/null |
		"$PY" -c 'import json,sys
d = json.load(sys.stdin); f = sys.argv[1]
if f == "hot": print(",".join(h.get("key", "?") for h in d["hot_keys"]))
elif f == "ring_version": print((d.get("ring") or {}).get("version"))
else: print(d[f])' "$1" 2>/dev/null
}
prog_and_link() { # "<prog id> <link id>" of the pinned XDP link
	bpftool -j link show pinned "$PIN_ROOT/$SIF/link" 2>/dev/null |
		"$PY" -c 'import json,sys
l = json.load(sys.stdin)
print(l["prog_id"], l["id"])' 2>/dev/null
}

# The client: 1,000 requests/s, gets and sets over TCP, gets over UDP, from
# before the kill until after the stop, when it is sent SIGINT (120 s is
# only its bound: on a loaded machine the steps below take what they take).
ks_in_ns_bg "$CNS" "$LOAD" --server "$SADDR:$PORT" --proto udp-gets --keys 1000 \
	--flash hot:key:0.2 --mix get=80,set=20 --duration 120 --rate 1000 \
	--timeout 0.5 --json </dev/null >"$E2E_TMP/load.json" 2>"$E2E_TMP/load.err"
LOAD_PID=$KS_BG_PID
# The kill comes under traffic, from an agent that has pushed its ring and
# run an interval under load: the datapath counting the client's packets
# (ks_pkts up), then the agent's report a seq further with a ring version
# (30 s at most; events, not a guessed time)
s0=$(seen)
for ((i = 0; i < 300; i++)); do
	s=$(seen)
	[ -n "$s" ] && [ "$s" -gt "${s0:-0}" ] && break
	sleep 0.1
done
q0=$(report_field seq)
for ((i = 0; i < 300; i++)); do
	q=$(report_field seq)
	r=$(report_field ring_version)
	[ -n "$q" ] && [ "$q" -gt "${q0:-0}" ] && [ -n "$r" ] && [ "$r" != None ] && break
	sleep 0.1
done

seq_before=$(report_field seq)
ring_before=$(report_field ring_version)
read -r prog_before link_before <<<"$(prog_and_link)"

# --- 1. SIGKILL: the program stays and counts --------------------------------
kill -KILL "$E2E_AGENT_PID"
wait "$E2E_AGENT_PID" 2>/dev/null
E2E_AGENT_PID=
s1=$(seen)
# waited for: the client's next packets, counted with no agent running
for ((i = 0; i < 100; i++)); do
	sleep 0.1
	s2=$(seen)
	[ -n "$s1" ] && [ -n "$s2" ] && [ "$s2" -gt "$s1" ] && break
done
if [ -n "$s1" ] && [ -n "$s2" ] && [ "$s2" -gt "$s1" ] && e2e_xdp_attached; then
	pass restart_fail_open_counts_on
	note "packets counted while no agent ran: $((s2 - s1)) in $(((i + 1) * 100)) ms or more"
else
	fail restart_fail_open_counts_on "seen ${s1:-?} -> ${s2:-?}, attached: $(e2e_xdp_attached && echo yes || echo no)"
fi

# --- 2. a new agent takes over -------------------------------------------------
ks_in_ns_bg "$SNS" "$AGENT" run --iface "$SIF" "${ARGS[@]}" \
	</dev/null >"$E2E_TMP/agent2.out" 2>&1
E2E_AGENT_PID=$KS_BG_PID
if e2e_wait_line "$E2E_TMP/agent2.out" "took over" "$E2E_AGENT_PID"; then
	pass restart_takes_over
else
	fail restart_takes_over "$(head -c 400 "$E2E_TMP/agent2.out")"
fi
read -r prog_after link_after <<<"$(prog_and_link)"
if [ -n "$link_before" ] && [ "$link_after" = "$link_before" ] &&
	[ -n "$prog_after" ] && [ "$prog_after" != "$prog_before" ]; then
	pass restart_program_swapped_in_place
	note "link $link_before kept, program $prog_before -> $prog_after"
else
	fail restart_program_swapped_in_place "link $link_before -> $link_after, program $prog_before -> $prog_after"
fi

# a second agent while this one lives: refused, nothing changed
ks_in_ns "$SNS" timeout 10 "$AGENT" run --iface "$SIF" >"$E2E_TMP/third.out" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && grep -q "already attached" "$E2E_TMP/third.out" &&
	[ "$(prog_and_link)" = "$prog_after $link_after" ]; then
	pass restart_no_double_attach
else
	fail restart_no_double_attach "exit $rc: $(head -c 300 "$E2E_TMP/third.out")"
fi

# Waited for (an interval of the new agent's, at least, under load): the
# counters, the epoch sequence and the ring version go on from where they
# were, and the pinned key is in the hot table.
for ((i = 0; i < 100; i++)); do
	s3=$(seen)
	seq_after=$(report_field seq)
	ring_after=$(report_field ring_version)
	hot_after=$(report_field hot)
	why=
	[ -n "$s3" ] && [ "$s3" -gt "${s2:-0}" ] || why+="packets counted went ${s2:-?} -> ${s3:-?}; "
	[ -n "$seq_after" ] && [ "$seq_after" -gt "${seq_before:-0}" ] || why+="seq ${seq_before:-?} -> ${seq_after:-?}; "
	[ -n "$ring_after" ] && [ "$ring_after" != None ] && [ "$ring_after" -gt "${ring_before:-0}" ] ||
		why+="ring version ${ring_before:-?} -> ${ring_after:-?}; "
	[[ ",$hot_after," == *",hot:key,"* ]] || why+="hot keys after: '$hot_after'; "
	[ -z "$why" ] && break
	sleep 0.2
done
if [ -z "$why" ]; then
	pass restart_state_carries_on
	note "seq $seq_before -> $seq_after, ring v$ring_before -> v$ring_after, packets $s2 -> $s3, hot: $hot_after"
else
	fail restart_state_carries_on "$why"
fi

# --- 3. detach under traffic ------------------------------------------------
e2e_agent_stop INT
# the agent has exited: its detach is done (a bounded look, 5 s, in case
# the kernel lags in showing the link gone)
for ((i = 0; i < 50; i++)); do
	! e2e_pins_exist && ! e2e_xdp_attached && break
	sleep 0.1
done
if ! e2e_pins_exist && ! e2e_xdp_attached; then
	pass restart_clean_stop_under_traffic
else
	fail restart_clean_stop_under_traffic "pins or program left after SIGINT"
fi

# the load ran through the kill, the take-over and the stop: still running
# now (not a count of requests, which a loaded machine's pace decides)
load_ran=0
kill -0 "$LOAD_PID" 2>/dev/null && load_ran=1
kill -INT "$LOAD_PID" 2>/dev/null
wait "$LOAD_PID" 2>/dev/null
why=$("$PY" - "$E2E_TMP/load.json" "$load_ran" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
ops = sum(o["ops"] for o in d["ops"])
bad = sum(o["errors"] + o["timeouts"] for o in d["ops"])
if sys.argv[2] != "1":
    print("the load ended (%d requests) before the agent stopped: the stop was not under traffic" % ops)
elif bad or not ops:
    print("%d of %d requests failed" % (bad, ops))
else:
    print("OK %d" % ops)
PYEOF
)
if [[ "$why" == OK* ]]; then
	pass restart_no_failed_requests
	note "${why#OK } requests (TCP and UDP) through kill, take-over and stop: 0 failed"
else
	fail restart_no_failed_requests "${why:-no load output: $(tail -n 2 "$E2E_TMP/load.err")}"
fi
exit "$E2E_FAILED"
