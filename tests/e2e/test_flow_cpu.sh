#!/usr/bin/env bash
# test_flow_cpu.sh - the agent says when a device may parse one TCP
# connection on two CPUs at once (docs/operations.md, "One CPU per flow"):
# `agent run --attach tc` on a veth with no RPS warns, naming rps_cpus; the
# same veth with RPS on its receive queue (tests' ks_flow_one_cpu), and
# XDP, which runs in the veth's NAPI, do not. The agent runs under `ip
# netns exec`, which shows it its namespace's sysfs, as an agent on a host
# sees the host's; it changes nothing on the device (the mask is read
# back unchanged).
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init flow_cpu
if ! ks_pair_create "$CNS" "$SNS" "$CIF" "$SIF" "$CADDR/24" "$SADDR/24"; then
	fail flow_cpu_setup "could not create namespaces and veth pair"
	exit 1
fi
RPS=/sys/class/net/$SIF/queues/rx-0/rps_cpus
rps() { ip netns exec "$SNS" cat "$RPS"; }

# run_once NAME ARGS...: an agent under `ip netns exec` until it attached,
# then SIGINT; its whole output in $E2E_TMP/NAME.out
run_once() {
	local name=$1 pid
	shift
	ip netns exec "$SNS" "$AGENT" run --iface "$SIF" --interval 1 "$@" \
		</dev/null >"$E2E_TMP/$name.out" 2>&1 &
	pid=$!
	if ! e2e_wait_line "$E2E_TMP/$name.out" "attached to $SIF" "$pid" 300; then
		kill -INT "$pid" 2>/dev/null
		wait "$pid"
		fail "$name" "the agent did not attach: $(head -c 300 "$E2E_TMP/$name.out")"
		return 1
	fi
	kill -INT "$pid"
	wait "$pid"
	return 0
}

before=$(rps)
if run_once flow_cpu_tc_no_rps_warns --attach tc; then
	if grep -q "veth without RPS.*rps_cpus" "$E2E_TMP/flow_cpu_tc_no_rps_warns.out" &&
		[ "$(rps)" = "$before" ]; then
		pass flow_cpu_tc_no_rps_warns
	else
		fail flow_cpu_tc_no_rps_warns "want the warning naming rps_cpus and the mask left at '$before' (now '$(rps)'): $(head -c 400 "$E2E_TMP/flow_cpu_tc_no_rps_warns.out")"
	fi
fi
if run_once flow_cpu_xdp_quiet; then
	if ! grep -q "without RPS" "$E2E_TMP/flow_cpu_xdp_quiet.out"; then
		pass flow_cpu_xdp_quiet
	else
		fail flow_cpu_xdp_quiet "XDP runs in the veth's NAPI; no warning wanted"
	fi
fi
if ! ks_flow_one_cpu "$SNS" "$SIF"; then
	fail flow_cpu_tc_rps_quiet "could not set RPS on $SIF"
elif run_once flow_cpu_tc_rps_quiet --attach tc; then
	if ! grep -q "without RPS" "$E2E_TMP/flow_cpu_tc_rps_quiet.out"; then
		pass flow_cpu_tc_rps_quiet
	else
		fail flow_cpu_tc_rps_quiet "RPS is on ($(rps)); no warning wanted"
	fi
fi
e2e_expect_clean flow_cpu_clean
