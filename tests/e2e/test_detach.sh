#!/usr/bin/env bash
# test_detach.sh - an agent killed with SIGKILL cannot clean up: its pinned
# link keeps the XDP program attached. `agent report` must say the agent is
# dead, `agent run` takes the leftover over (tests/e2e/test_restart.sh has
# the details), and after that one is SIGKILLed too, a take-over of pins
# of another layout is refused, `agent detach` must remove it all; a
# second detach finds nothing (exit 1), and a new agent attaches again.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init detach
e2e_net_up

if ! e2e_agent_start --sample 4 --interval 0.5; then
	fail detach_setup "the agent did not attach"
	exit 1
fi
dead=$E2E_AGENT_PID
sleep 0.6 # let it publish a report
e2e_agent_stop KILL

if [ -e "$PIN_ROOT/$SIF/link" ] && e2e_xdp_attached; then
	pass detach_leftover_after_sigkill
else
	fail detach_leftover_after_sigkill "expected the pinned link and XDP program to outlive SIGKILL; nothing to test"
	exit 1
fi

e2e_agent report --iface "$SIF" --json >"$E2E_TMP/report.json" 2>"$E2E_TMP/report.err"
if "$PY" -c '
import json, sys
doc = json.load(open(sys.argv[1]))
print("  report of the leftover: agent_pid %s alive %s" % (doc["agent_pid"], doc["agent_alive"]))
sys.exit(0 if doc["agent_pid"] == int(sys.argv[2]) and doc["agent_alive"] is False else 1)
' "$E2E_TMP/report.json" "$dead"; then
	pass detach_report_says_dead
else
	fail detach_report_says_dead "report does not show pid $dead as not alive: $(head -c 200 "$E2E_TMP/report.err")"
fi

ks_in_ns_bg "$SNS" "$AGENT" run --iface "$SIF" --sample 4 --interval 0.5 \
	</dev/null >"$E2E_TMP/run.out" 2>&1
second=$KS_BG_PID
e2e_wait_line "$E2E_TMP/run.out" "took over" "$second"
note "run over the leftover: $(head -c 300 "$E2E_TMP/run.out" | tr '\n' ' ')"
if grep -q "took over" "$E2E_TMP/run.out" && kill -0 "$second" 2>/dev/null; then
	pass detach_run_takes_over_leftover
else
	fail detach_run_takes_over_leftover "want the new agent to take the leftover over"
fi
sleep 0.6 # let it publish a report
kill -KILL "$second" 2>/dev/null
wait "$second" 2>/dev/null

# Pins of another layout (ks_pkts as an agent from before the fast path's
# two counters made it, 16 bytes shorter): the take-over is refused, naming
# the map and 'agent detach', and the leftover program goes on running.
pkts=$PIN_ROOT/$SIF/ks_pkts
vsz=$(bpftool -j map show pinned "$pkts" 2>/dev/null |
	"$PY" -c 'import json,sys; print(json.load(sys.stdin)["bytes_value"])')
if [ -n "$vsz" ] && rm -f "$pkts" &&
	bpftool map create "$pkts" type percpu_array key 4 value $((vsz - 16)) \
		entries 1 name ks_pkts; then
	timeout 15 nsenter --net="/run/netns/$SNS" -- "$AGENT" run --iface "$SIF" \
		</dev/null >"$E2E_TMP/stale.out" 2>&1
	rc=$?
	note "run over pins of another layout: exit $rc: $(grep -v '^libbpf' "$E2E_TMP/stale.out" | head -c 400 | tr '\n' ' ')"
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] &&
		grep -q "pinned map $pkts holds 4-byte keys and $((vsz - 16))-byte values" "$E2E_TMP/stale.out" &&
		grep -q "agent detach --iface $SIF" "$E2E_TMP/stale.out" &&
		e2e_xdp_attached && [ -e "$PIN_ROOT/$SIF/link" ]; then
		pass detach_run_refuses_pins_of_another_layout
	else
		fail detach_run_refuses_pins_of_another_layout "exit $rc; want a refusal naming $pkts and 'agent detach', the leftover still attached"
	fi
else
	fail detach_run_refuses_pins_of_another_layout "cannot put a shorter ks_pkts in place of $pkts (bpftool)"
fi

e2e_agent detach --iface "$SIF" >"$E2E_TMP/detach.out" 2>&1
rc=$?
sed 's/^/  detach: /' "$E2E_TMP/detach.out"
if [ "$rc" -eq 0 ] && grep -qi "removed" "$E2E_TMP/detach.out"; then
	pass detach_exit_and_message
else
	fail detach_exit_and_message "exit $rc; want 0 and a list of what was removed"
fi
e2e_expect_clean detach_removed_everything

e2e_agent detach --iface "$SIF" >"$E2E_TMP/detach2.out" 2>&1
rc=$?
note "second detach: exit $rc: $(head -c 200 "$E2E_TMP/detach2.out")"
if [ "$rc" -eq 1 ] && grep -qi "nothing attached" "$E2E_TMP/detach2.out"; then
	pass detach_nothing_attached
else
	fail detach_nothing_attached "exit $rc; want 1 and 'nothing attached'"
fi

if e2e_agent_start --sample 4 --interval 0.5; then
	pass detach_reattach
else
	fail detach_reattach "a new agent could not attach after detach"
fi
e2e_agent_stop INT
e2e_expect_clean detach_final_clean
