#!/usr/bin/env bash
# test_steer_v6.sh - test_steer.sh over IPv6: the same topology with every
# host on 2001:2::/64 (in the benchmarking range 2001:2::/48), replicas
# given as [v6]:port, and the same spread, report, freshness, replica-death
# and agent-death checks, its cases named steer6_*.
#
# Then steer6_vlan_spread: the same steering on an 802.1Q VLAN. One shard
# and two replicas (steer_topo_up 1 2 6), and on every host's veth a VLAN
# sub-interface (id 10) with an address on 2001:2:0:a::/64, memcached on the
# shard and the replicas listening there; the agent on the shard's veth
# (the physical device: XDP sees the tagged frames) with the ring and the
# replicas on the VLAN. The client's UDP gets of a flash key leave tagged,
# so they must come back from both replicas: the datapath found the VLAN
# sub-interface (ks_vlans, filled by the agent's scan) and sent them out
# with their tag. TX VLAN offload is off on every veth end, so a tag is in
# the frame's bytes, not in the skb's metadata where XDP would not see it.
#
# A kernel without 802.1Q (CONFIG_VLAN_8021Q unset, no 8021q module) cannot
# make the devices: the case is skipped with that reason, the only skip.
# Where the module exists but cannot be loaded (no modprobe), it FAILs
# saying what to install. Tagged steering is also covered by the program
# tests (tests/prog/t_hot.c, steer_vlan_*), which need no VLAN device.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../../user/scripts/steer_topo.sh
. "$E2E_ROOT/user/scripts/steer_topo.sh"

STEER_TEST_FAMILY=6 bash "$E2E_DIR/test_steer.sh"
rc=$?

T=steer6_vlan_spread
VID=10
NET=2001:2:0:a
LOAD=$E2E_ROOT/${OUT:-build}/ks_load
KEY=flash:1

# vlan_probe: VLAN_WHY empty when this kernel makes VLAN devices, else why
# not; VLAN_KERNEL=1 when the kernel itself lacks 802.1Q (the one skip).
vlan_probe() {
	local ns=ks_vlanprobe_$$ out mods
	mods=/lib/modules/$(uname -r)
	VLAN_WHY='' VLAN_KERNEL=''
	command -v modprobe >/dev/null && modprobe -q 8021q 2>/dev/null
	if ! ip netns add "$ns"; then
		VLAN_WHY="cannot create a namespace to probe for VLAN devices"
		return
	fi
	if ! ip -n "$ns" link add ksvp0 type veth peer name ksvp1; then
		VLAN_WHY="cannot create a veth pair to probe for VLAN devices"
	elif ! out=$(ip -n "$ns" link add link ksvp0 name ksvp0.$VID type vlan id $VID 2>&1); then
		if [ -n "$(find "$mods" -name '8021q.ko*' 2>/dev/null)" ]; then
			VLAN_WHY="this kernel has the 8021q module but it did not load ($out)"
			command -v modprobe >/dev/null ||
				VLAN_WHY="$VLAN_WHY: modprobe is not installed (make deps: kmod)"
		elif [ -r /proc/config.gz ] &&
			zgrep -q '^# CONFIG_VLAN_8021Q is not set' /proc/config.gz; then
			VLAN_WHY="this kernel has no 802.1Q (CONFIG_VLAN_8021Q is not set in /proc/config.gz)"
			VLAN_KERNEL=1
		else
			VLAN_WHY="this kernel makes no VLAN devices (no 8021q module in $mods; ip: $out)"
			VLAN_KERNEL=1
		fi
	fi
	ip netns del "$ns"
}

vlan_probe
if [ -n "$VLAN_KERNEL" ]; then
	echo "SKIP $T: $VLAN_WHY; tagged steering is covered by the program tests"
	exit "$rc"
fi
e2e_init steer6_vlan
trap 'steer_topo_down; e2e_cleanup' EXIT
if [ -n "$VLAN_WHY" ]; then
	fail $T "$VLAN_WHY"
	exit 1
fi
if ! steer_topo_up 1 2 6 >"$E2E_TMP/topo.out" 2>&1; then
	fail $T "topology: $(tail -n 3 "$E2E_TMP/topo.out")"
	exit 1
fi

# vlan_host NS IF BR_IF ADDR: VLAN $VID on IF with ADDR, tags in the frames
vlan_host() {
	local ns=$1 hif=$2 bif=$3 addr=$4 v=v${2:2}
	ks_in_ns "$ns" ethtool -K "$hif" txvlan off >/dev/null &&
		ks_in_ns "$STEER_BR_NS" ethtool -K "$bif" txvlan off >/dev/null &&
		ip -n "$ns" link add link "$hif" name "$v" type vlan id "$VID" &&
		ip -n "$ns" link set "$v" up &&
		ip -n "$ns" addr add "$addr/64" dev "$v" nodad
}
id=$$
setup=ok
vlan_host "$STEER_CLIENT_NS" "ksc_$id" "kbc_$id" "$NET::1" || setup="the client"
vlan_host "${STEER_SHARD_NS[0]}" "${STEER_SHARD_IF[0]}" "kbs1_$id" "$NET::11" ||
	setup="the shard"
for i in 0 1; do
	vlan_host "${STEER_REPLICA_NS[i]}" "${STEER_REPLICA_IF[i]}" "kbr$((i + 1))_$id" \
		"$NET::$((101 + i))" || setup="replica $i"
done
# the FIB is asked from the sub-interface: its forwarding switch counts
ks_in_ns "${STEER_SHARD_NS[0]}" sysctl -qw \
	"net.ipv6.conf.v${STEER_SHARD_IF[0]:2}.forwarding=1" >/dev/null ||
	setup="forwarding on the shard's VLAN"
if [ "$setup" != ok ]; then
	fail $T "could not put $setup on VLAN $VID"
	exit 1
fi
for a in "$NET::11" "$NET::101" "$NET::102"; do
	case $a in
	*::11) ns=${STEER_SHARD_NS[0]} ;;
	*::101) ns=${STEER_REPLICA_NS[0]} ;;
	*) ns=${STEER_REPLICA_NS[1]} ;;
	esac
	_steer_memcached "$ns" "$a" # steer_topo_down stops it
	if ! ks_wait_tcp "$ns" "$a" "$STEER_PORT" 5; then
		fail $T "memcached did not start on [$a]:$STEER_PORT"
		exit 1
	fi
done
echo "[$NET::11]:$STEER_PORT" >"$E2E_TMP/shards.txt"
R0="[$NET::101]:$STEER_PORT" R1="[$NET::102]:$STEER_PORT"
if ! steer_agent_start 0 --interval 0.5 --sample 1 --shard-capacity 1000 \
	--hot-fraction 0.1 --shards-file "$E2E_TMP/shards.txt" \
	--self "[$NET::11]:$STEER_PORT" --replicas "$R0,$R1"; then
	fail $T "the agent did not attach: $(head -n 3 "$STEER_TMP/agent.0.out")"
	exit 1
fi
ks_in_ns "$STEER_CLIENT_NS" "$LOAD" --shards-file "$E2E_TMP/shards.txt" \
	--proto udp --keys 200 --zipf 0.5 --flash "$KEY:0.5" --mix get=100 \
	--preload --duration 4 --rate 2000 --json >"$E2E_TMP/load.json" \
	2>"$E2E_TMP/load.err"
why=$("$PY" - "$E2E_TMP/load.json" "$R0" "$R1" 2>"$E2E_TMP/load.sum" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
why = []
errs = sum(o["errors"] + o["timeouts"] for o in d["ops"])
total = sum(o["ops"] for o in d["ops"])
# as test_steer.sh's spread: a loaded machine loses a few UDP datagrams
# in memcached's sockets (8 of 6,233 at load 7), a tagging fault whole
# paths (a replica's third of the flash key's gets): over 1%. It asked
# for none, which such a drop failed with the steering right.
if errs * 100 > total:
    why.append("%d of %d gets failed or timed out (over 1%%)" % (errs, total))
by = d["replies_by_source"]
for r in sys.argv[2:]:
    if by.get(r, 0) < 100:
        why.append("replica %s answered %d" % (r, by.get(r, 0)))
if d["steered"] < 1000:
    why.append("only %d steered replies" % d["steered"])
print("; ".join(why) or "OK")
print("steered %d of %d tagged gets (%d failed or timed out), by source %s" % (
    d["steered"], total, errs, by), file=sys.stderr)
PYEOF
)
note "$(cat "$E2E_TMP/load.sum" 2>/dev/null)"
if [ "$why" = OK ]; then
	pass $T
else
	fail $T "${why:-no load output: $(tail -n 2 "$E2E_TMP/load.err")}; agent: $(grep -i vlan "$STEER_TMP/agent.0.out" | head -c 300)"
fi
# test_steer.sh's status; e2e_cleanup makes it 1 if this case failed
exit "$rc"
