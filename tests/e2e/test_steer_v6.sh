#!/usr/bin/env bash
# test_steer_v6.sh - test_steer.sh over IPv6: the same topology with every
# host on 2001:2::/64 (in the benchmarking range 2001:2::/48), replicas
# given as [v6]:port, and the same spread, report, freshness, replica-death
# and agent-death checks, its cases named steer6_*.
#
# VLANs end to end need VLAN devices in the namespaces (a sub-interface on
# each veth end); a kernel built without 802.1Q (CONFIG_VLAN_8021Q, as on
# the VM this was written on) cannot make them, and the case is skipped
# with that reason. Tagged steering is covered by the program tests
# (tests/prog/t_hot.c, steer_vlan_*), which need no VLAN device.
set -u
dir=$(dirname "$0")
STEER_TEST_FAMILY=6 bash "$dir/test_steer.sh"
rc=$?

ns=ks_vlanprobe_$$
why="no VLAN end-to-end case yet: the program tests cover tagged steering"
if ip netns add "$ns" 2>/dev/null; then
	if ! ip -n "$ns" link add ksvp0 type veth peer name ksvp1 2>/dev/null ||
		! ip -n "$ns" link add link ksvp0 name ksvp0.10 type vlan id 10 \
			2>/dev/null; then
		why="this kernel makes no VLAN devices (CONFIG_VLAN_8021Q); tagged steering is covered by the program tests"
	fi
	ip netns del "$ns"
fi
echo "SKIP steer6_vlan_spread: $why"
exit "$rc"
