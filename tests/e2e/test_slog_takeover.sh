#!/usr/bin/env bash
# test_slog_takeover.sh - a take-over clears the dead agent's sample-log
# flag before anything else, and sets it again only once its own drain
# runs (issue 27; docs/design.md "The sample log"). An agent with the log
# on (the default) runs under a client's UDP gets, every key sampled; it
# is SIGKILLed, so KS_CFG_SLOG stays set in the pinned ks_config with no
# drain behind it (the control: set after the death, before any new
# start, so what follows is the new start's doing). Then:
#   1. a take-over that fails at its load (a pinned map that does not fit
#      this agent, as another keysteer version's pins) must leave the
#      flag clear: cleared before the load, not after it, and the
#      datapath goes back to its in-kernel sketch with no agent at all;
#   2. a take-over that succeeds sets it again, and its drain takes what
#      the datapath logs: every CPU's tail at its head, the heads moving
#      on past where they stood at the take-over.
# Both agents drain with two threads (--drain-threads 2, one a CPU here):
# the take-over's drain catches up on every CPU's log with each log under
# its one thread.
# Without the clear first thing (ks_adopt_orphaned_flags), 1 fails: the
# flag is only written after the load, which the failed take-over never
# reaches.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init slog_takeover
e2e_prefix kbg
e2e_need_load slog_takeover_setup
e2e_require slog_takeover_setup "make deps: bpftool" bpftool
e2e_net_up

PINS=$PIN_ROOT/$SIF
MAP_ID=
LOAD_PID=
# e2e_cleanup stops the agent, detaches and removes the pin folder
takeover_cleanup() {
	local rc=$?
	[ -n "$LOAD_PID" ] && ks_stop_pid "$LOAD_PID" KILL 5 2>/dev/null
	(exit "$rc")
	e2e_cleanup
}
trap takeover_cleanup EXIT

# cfg_flags: ks_config.flags of the pinned config
cfg_flags() {
	bpftool -j map dump pinned "$PINS/ks_config" 2>/dev/null |
		"$PY" -c 'import json,sys
print(json.load(sys.stdin)[0]["formatted"]["value"]["flags"])' 2>/dev/null
}
slog_set() { # 0 when KS_CFG_SLOG (4) is set, 1 when clear, 2 unreadable
	local f
	f=$(cfg_flags)
	[ -n "$f" ] || return 2
	[ $((f & 4)) -ne 0 ]
}
# log_pos: "<heads summed> <CPUs whose tail is behind their head>"
log_pos() {
	bpftool -j map dump pinned "$PINS/ks_slog_pos" 2>/dev/null |
		"$PY" -c 'import json,sys
d = json.load(sys.stdin)
h = [e["formatted"]["value"]["head"] for e in d]
t = [e["formatted"]["value"]["tail"] for e in d]
print(sum(h), sum(1 for a, b in zip(h, t) if a != b))' 2>/dev/null
}
# wait_for N CMD...: CMD true within N tenths of a second
wait_for() {
	local n=$1 i
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# gets of 1,000 keys over UDP, all through; 60 s at most, stopped at the end
ks_in_ns_bg "$CNS" "$LOAD" --server "$SADDR:$PORT" --proto udp-gets --keys 1000 \
	--duration 60 --rate 500 --timeout 0.5 --json \
	</dev/null >"$E2E_TMP/load.json" 2>"$E2E_TMP/load.err"
LOAD_PID=$KS_BG_PID

if ! e2e_agent_start --sample 1 --interval 0.5 --drain-threads 2; then
	fail slog_takeover_setup "the first agent did not attach"
	exit 1
fi
if ! wait_for 300 slog_set; then
	fail slog_takeover_setup "the first agent never set the sample log's flag (flags $(cfg_flags))"
	exit 1
fi
# its drain has taken records: the log is in use
if ! wait_for 300 eval '[ "$(log_pos | cut -d" " -f1)" -gt 0 ]'; then
	fail slog_takeover_setup "no record in the log under the client's gets: $(log_pos)"
	exit 1
fi
kill -KILL "$E2E_AGENT_PID"
wait "$E2E_AGENT_PID" 2>/dev/null
E2E_AGENT_PID=

if slog_set; then
	pass slog_takeover_control_dead_agents_flag_stays
else
	fail slog_takeover_control_dead_agents_flag_stays "flags $(cfg_flags) after the SIGKILL: nothing left to clear, nothing tested"
fi

# --- 1. a take-over that fails at its load ---------------------------------
# ks_shards swapped for an array that does not fit (the program's is per
# CPU): the load's check of the pins refuses it, as another version's
MAP_ID=$(bpftool -j map show pinned "$PINS/ks_shards" 2>/dev/null |
	"$PY" -c 'import json,sys; print(json.load(sys.stdin)["id"])' 2>/dev/null)
if [ -z "$MAP_ID" ] || ! rm "$PINS/ks_shards" ||
	! bpftool map create "$PINS/ks_shards" type array key 4 value 8 \
		entries 1 name ks_shards >/dev/null 2>&1; then
	fail slog_takeover_setup "cannot swap the pinned ks_shards (id ${MAP_ID:-?})"
	exit 1
fi
# bounded: a take-over that went through would run on
ks_in_ns "$SNS" timeout -s KILL 120 "$AGENT" run --iface "$SIF" --sample 1 \
	--interval 0.5 --drain-threads 2 </dev/null >"$E2E_TMP/failed.out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] || ! grep -q "the pinned map $PINS/ks_shards" "$E2E_TMP/failed.out"; then
	fail slog_takeover_failed_load_clears_flag "the take-over did not fail at the pins as set up (exit $rc): $(head -c 300 "$E2E_TMP/failed.out")"
elif slog_set; then
	fail slog_takeover_failed_load_clears_flag "flags $(cfg_flags) after a failed take-over: the datapath logs keys nobody drains"
else
	pass slog_takeover_failed_load_clears_flag
	note "exit $rc, flags $(cfg_flags): $(grep -m1 'pinned map' "$E2E_TMP/failed.out" | cut -c1-120)"
fi
# the real map back under its pin
rm -f "$PINS/ks_shards"
if ! bpftool map pin id "$MAP_ID" "$PINS/ks_shards"; then
	fail slog_takeover_setup "cannot pin ks_shards (id $MAP_ID) back"
	exit 1
fi

# --- 2. a take-over that succeeds -------------------------------------------
read -r head0 _ <<<"$(log_pos)"
ks_in_ns_bg "$SNS" "$AGENT" run --iface "$SIF" --sample 1 --interval 0.5 \
	--drain-threads 2 </dev/null >"$E2E_TMP/agent2.out" 2>&1
E2E_AGENT_PID=$KS_BG_PID
if ! e2e_wait_line "$E2E_TMP/agent2.out" "took over" "$E2E_AGENT_PID"; then
	fail slog_takeover_setup "the second agent did not take over: $(head -c 300 "$E2E_TMP/agent2.out")"
	exit 1
fi
# drained: every tail at its head, the heads past the take-over's (records
# logged again, so the flag is set and the drain keeps up)
drained() {
	local h b
	read -r h b <<<"$(log_pos)"
	[ -n "$h" ] && [ "$b" = 0 ] && [ "$h" -gt "${head0:-0}" ]
}
if wait_for 300 slog_set && wait_for 300 drained; then
	pass slog_takeover_sets_flag_once_draining
	note "heads $head0 at the take-over, now $(log_pos | cut -d' ' -f1), every tail at its head"
else
	fail slog_takeover_sets_flag_once_draining "flags $(cfg_flags), log (heads, CPUs behind) $(log_pos), heads at the take-over $head0"
fi
e2e_agent_stop INT
ks_stop_pid "$LOAD_PID" INT 5
LOAD_PID=
exit "$E2E_FAILED"
