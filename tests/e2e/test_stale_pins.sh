#!/usr/bin/env bash
# test_stale_pins.sh - an agent SIGKILLed on an interface that is then
# deleted leaves its pins (maps and link, ~50 MiB) under
# /sys/fs/bpf/keysteer/<iface>; the next agent to start, on any interface,
# removes them and says so. The rule (user/dp/attach.h,
# ks_remove_stale_pins): a folder goes only when its pinned link is
# attached to no device (the kernel detached it with the device, in
# whatever namespace) and its agent is not running; pin folders are named
# by interface alone and shared by every network namespace on this bpffs,
# so the name is never the test. The safety check: an interface in another
# namespace (the client's), its agent SIGKILLed too, keeps its pins, though
# the new agent's namespace has no interface of that name (the premise is
# checked: a rule by name would have removed them). The control: before
# the new start, the deleted interface's pins are still there, so the
# removal is the start's doing.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init stale_pins
e2e_net_up

GONE=ks_g$$  # in the server namespace, deleted after its agent's death
GONEP=ks_h$$ # its peer
KEEP=ks_k$$  # in the client namespace, stays
KEEPP=ks_l$$
OLD_PIDS=()

stale_cleanup() {
	local rc=$? pid
	for pid in "${OLD_PIDS[@]}"; do
		ks_stop_pid "$pid" KILL 5 2>/dev/null
	done
	ks_in_ns "$CNS" "$AGENT" detach --iface "$KEEP" >/dev/null 2>&1
	ks_in_ns "$SNS" "$AGENT" detach --iface "$GONE" >/dev/null 2>&1
	rm -rf "${PIN_ROOT:?}/$GONE" "${PIN_ROOT:?}/$KEEP"
	(exit "$rc")
	e2e_cleanup
}
trap stale_cleanup EXIT

# veth NS IF PEER: a pair, both ends up, inside NS
veth() {
	ip -n "$1" link add "$2" type veth peer name "$3" &&
		ip -n "$1" link set "$2" up && ip -n "$1" link set "$3" up
}

# killed_agent NS IF: an agent on IF in NS, attached and pinned, then
# SIGKILLed (nothing of its own cleanup runs)
killed_agent() {
	local ns=$1 ifname=$2 pid i
	ks_in_ns_bg "$ns" "$AGENT" run --iface "$ifname" \
		</dev/null >"$E2E_TMP/agent_$ifname.out" 2>&1
	pid=$KS_BG_PID
	OLD_PIDS+=("$pid")
	if ! e2e_wait_line "$E2E_TMP/agent_$ifname.out" "attached to $ifname" "$pid"; then
		note "agent on $ifname did not attach: $(head -c 300 "$E2E_TMP/agent_$ifname.out")"
		return 1
	fi
	for ((i = 0; i < 100; i++)); do
		[ -e "$PIN_ROOT/$ifname/link" ] && break
		sleep 0.1
	done
	{
		kill -KILL "$pid"
		wait "$pid"
	} 2>/dev/null
	[ -e "$PIN_ROOT/$ifname/link" ]
}

if ! veth "$SNS" "$GONE" "$GONEP" || ! veth "$CNS" "$KEEP" "$KEEPP"; then
	fail stale_pins_setup "cannot create the test veths"
	exit 1
fi
if ! killed_agent "$SNS" "$GONE" || ! killed_agent "$CNS" "$KEEP"; then
	fail stale_pins_setup "an agent did not attach and pin its link"
	exit 1
fi
ip -n "$SNS" link del "$GONE"

# the control: deleting the interface alone removes nothing
if [ -e "$PIN_ROOT/$GONE/link" ]; then
	pass stale_pins_control_left_after_delete
else
	fail stale_pins_control_left_after_delete "the pins of $GONE went with the interface, before any agent started: nothing left to test"
fi

if ! e2e_agent_start; then
	fail stale_pins_setup "the new agent on $SIF did not attach"
	exit 1
fi
if [ ! -e "$PIN_ROOT/$GONE" ]; then
	pass stale_pins_removed_when_interface_gone
else
	fail stale_pins_removed_when_interface_gone "$PIN_ROOT/$GONE is still there: $(ls "$PIN_ROOT/$GONE" | tr '\n' ' ')"
fi
if grep -q "removed the stale pins of $GONE" "$E2E_TMP/agent.out"; then
	note "$(grep "removed the stale pins of $GONE" "$E2E_TMP/agent.out")"
	pass stale_pins_removal_logged
else
	fail stale_pins_removal_logged "no 'removed the stale pins of $GONE' in the agent's log: $(head -c 300 "$E2E_TMP/agent.out")"
fi
if ip -n "$SNS" link show "$KEEP" >/dev/null 2>&1; then
	fail stale_pins_kept_in_other_namespace "the premise is wrong: $KEEP exists in the new agent's namespace too"
elif [ ! -e "$PIN_ROOT/$KEEP/link" ]; then
	fail stale_pins_kept_in_other_namespace "the pins of $KEEP (alive in $CNS) were removed"
elif grep -q "stale pins of $KEEP" "$E2E_TMP/agent.out"; then
	fail stale_pins_kept_in_other_namespace "the agent says it removed the pins of $KEEP"
else
	pass stale_pins_kept_in_other_namespace
fi
e2e_agent_stop
exit "$E2E_FAILED"
