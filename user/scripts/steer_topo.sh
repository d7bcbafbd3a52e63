# shellcheck shell=bash
# steer_topo.sh - the steering topology: a client, NSHARDS shard hosts and
# NREPLICAS L1 replica hosts, each a network namespace joined by a veth pair
# to one Linux bridge in a namespace of its own, with memcached (TCP+UDP
# 11211) on every shard and replica. Source it (the e2e tests and
# tests/bench/steer_bench.sh and the demo do); it defines functions only.
#
#   steer_topo_up NSHARDS NREPLICAS [6]  build it; 1 (after a message) on
#                                     failure. With 6 every host has IPv6
#                                     too (2001:2::/64, in the benchmarking
#                                     range 2001:2::/48), and the ADDR arrays,
#                                     the shard file, STEER_REPLICAS and
#                                     memcached are IPv6: [2001:2::11]:11211
#   steer_topo_down                   remove everything; safe to call twice,
#                                     call it from the caller's EXIT trap
#   steer_agent_start IDX ARGS...     `agent run --iface <shard IDX's if> ARGS`
#                                     in shard IDX's namespace, waits until
#                                     it has attached (0) or exited (1)
#   steer_agents_stop                 SIGINT every agent started, wait
#   steer_host_add NS IF ADDR         one more host on the bridge, no
#                                     memcached (an etcd member): namespace
#                                     NS, interface IF (at most 15 bytes),
#                                     ADDR/24; steer_topo_down deletes it
#
# After steer_topo_up (arrays are indexed 0..N-1):
#   STEER_CLIENT_NS STEER_CLIENT_ADDR   the client (198.18.2.1)
#   STEER_SHARD_NS[] STEER_SHARD_IF[] STEER_SHARD_ADDR[]    (198.18.2.11..)
#   STEER_REPLICA_NS[] STEER_REPLICA_IF[] STEER_REPLICA_ADDR[] (198.18.2.101..)
#   STEER_*_ADDR4[]: the IPv4 addresses (the same as *_ADDR without 6)
#   STEER_FAMILY (4 or 6), STEER_HOSTPORT ADDR: "ADDR:PORT" or "[ADDR]:PORT"
#   STEER_PORT (11211), STEER_SHARDS_FILE (one "addr:port" a line, for the
#   ketama ring of ks_load and the agent), STEER_REPLICAS ("addr:port,..."),
#   STEER_TMP (a temp folder removed by steer_topo_down)
#
# Every name carries the PID of the sourcing shell ($$), so parallel runs
# never clash. The shard-side interface names are unique across shards
# (the agent's pins are keyed by interface name on the one shared bpffs).
# The bridge-side peer of every shard veth runs build/ks_empty.bpf.o: a veth
# delivers frames that its peer sent with XDP_TX (steering) only when the
# receiving end has an XDP program (or GRO, which needs ethtool). Shard
# interfaces have IPv4 (and with 6, IPv6) forwarding on (the agent's
# next-hop lookup needs it).
# Every host's veth computes its checksums in software (TX checksum offload
# off), so a steered frame arrives with a valid one: see _steer_tx_csum_off.

STEER_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=netns.sh
. "$STEER_ROOT/user/scripts/netns.sh"

STEER_PORT=11211
STEER_NET=198.18.2
STEER_NET6=2001:2
STEER_FAMILY=4
STEER_AGENT=$STEER_ROOT/${OUT:-build}/agent
STEER_EMPTY_OBJ=$STEER_ROOT/${OUT:-build}/ks_empty.bpf.o
STEER_PIN_ROOT=/sys/fs/bpf/keysteer

STEER_BR_NS=
STEER_CLIENT_NS=
STEER_SHARD_NS=() STEER_SHARD_IF=() STEER_SHARD_ADDR=() STEER_SHARD_ADDR4=()
STEER_REPLICA_NS=() STEER_REPLICA_IF=() STEER_REPLICA_ADDR=() STEER_REPLICA_ADDR4=()
STEER_ALL_NS=()
STEER_MC_PIDS=()
STEER_AGENT_PIDS=()
STEER_TMP=

steer_msg() { echo "steer_topo: $*" >&2; }

# STEER_HOSTPORT ADDR: ADDR:PORT, an IPv6 address in brackets.
STEER_HOSTPORT() {
	case $1 in
	*:*) echo "[$1]:$STEER_PORT" ;;
	*) echo "$1:$STEER_PORT" ;;
	esac
}

# _steer_addr6 IPV4: the host's IPv6 address, its last IPv4 byte in the
# last group (198.18.2.11 -> 2001:2::11).
_steer_addr6() { echo "$STEER_NET6::${1##*.}"; }

# Detach any XDP program the agent left on our shard interfaces (before the
# namespaces go, while `agent detach` can still find the interface).
_steer_detach_leftovers() {
	local i ifn
	for i in "${!STEER_SHARD_IF[@]}"; do
		ifn=${STEER_SHARD_IF[i]}
		[ -e "$STEER_PIN_ROOT/$ifn" ] || continue
		ks_in_ns "${STEER_SHARD_NS[i]}" "$STEER_AGENT" detach --iface "$ifn" \
			>/dev/null 2>&1
		[ -e "$STEER_PIN_ROOT/$ifn" ] && rm -rf "${STEER_PIN_ROOT:?}/$ifn"
	done
}

steer_topo_down() {
	steer_agents_stop
	_steer_detach_leftovers
	_steer_stop_pids TERM 5 "${STEER_MC_PIDS[@]}"
	STEER_MC_PIDS=()
	ks_ns_delete "${STEER_ALL_NS[@]}"
	STEER_ALL_NS=()
	STEER_BR_NS=
	[ -n "$STEER_TMP" ] && rm -rf "$STEER_TMP"
	STEER_TMP=
	return 0
}

# _steer_tx_csum_off NS IF: software UDP/TCP checksums on IF, as
# `ethtool -K IF tx off` would (no ethtool here: its ioctl, from Python).
# With offload on, a veth hands its peer a frame whose checksum field holds
# only the pseudo-header sum, plus a note in the skb that it is unfinished;
# a frame that XDP_TX sends on loses that note and the replica drops it as
# corrupt. With it off every frame on the bridge carries a full checksum,
# as on a real wire.
_steer_tx_csum_off() {
	ks_in_ns "$1" /usr/bin/python3 -c '
import ctypes, fcntl, socket, struct, sys
SIOCETHTOOL, ETHTOOL_GTXCSUM, ETHTOOL_STXCSUM = 0x8946, 0x16, 0x17
def ethtool(cmd, data=0):
    val = ctypes.create_string_buffer(struct.pack("II", cmd, data))
    ifr = struct.pack("16sP", sys.argv[1].encode(), ctypes.addressof(val)).ljust(40, b"\0")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s.fileno(), SIOCETHTOOL, ifr)
    return struct.unpack("II", val.raw[:8])[1]
ethtool(ETHTOOL_STXCSUM, 0)
sys.exit(ethtool(ETHTOOL_GTXCSUM) != 0)
' "$2"
}

# _steer_host NS HOST_IF BR_IF ADDR: namespace NS joined to the bridge.
_steer_host() {
	local ns=$1 hif=$2 bif=$3 addr=$4
	ip netns add "$ns" || return 1
	STEER_ALL_NS+=("$ns")
	if [ "$STEER_FAMILY" = 6 ]; then
		# IPv6 without the chatter: no router solicitations, no DAD
		# wait (the addresses are unique by construction), no RAs
		ks_in_ns "$ns" sysctl -qw net.ipv6.conf.all.accept_ra=0 \
			net.ipv6.conf.default.accept_ra=0 \
			net.ipv6.conf.all.router_solicitations=0 \
			net.ipv6.conf.default.router_solicitations=0 \
			net.ipv6.conf.default.accept_dad=0 >/dev/null || return 1
	else
		# No IPv6: its router solicitations and MLD reports would only
		# add packets the agent and the counters have to look past.
		ks_in_ns "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
			net.ipv6.conf.default.disable_ipv6=1 >/dev/null || return 1
	fi
	ip link add "$hif" netns "$ns" type veth peer name "$bif" netns "$STEER_BR_NS" ||
		return 1
	ip -n "$ns" addr add "$addr/24" dev "$hif" &&
		ip -n "$ns" link set lo up &&
		ip -n "$ns" link set "$hif" up &&
		ip -n "$STEER_BR_NS" link set "$bif" master steerbr up || return 1
	if [ "$STEER_FAMILY" = 6 ]; then
		ip -n "$ns" addr add "$(_steer_addr6 "$addr")/64" dev "$hif" nodad ||
			return 1
	fi
	_steer_tx_csum_off "$ns" "$hif" ||
		{ steer_msg "cannot turn TX checksum offload off on $hif"; return 1; }
}

steer_host_add() {
	_steer_host "$1" "$2" "kb${2:2}" "$3" ||
		{ steer_msg "cannot set up host $3 ($1, $2)"; return 1; }
}

# _steer_xdp_pass BR_IF: the pass-through XDP program on a bridge port.
_steer_xdp_pass() {
	local bif=$1
	ip -n "$STEER_BR_NS" link set dev "$bif" xdpdrv obj "$STEER_EMPTY_OBJ" sec xdp ||
		return 1
	grep -q 'prog/xdp' <<<"$(ip -n "$STEER_BR_NS" -d link show dev "$bif")"
}

# _steer_memcached NS ADDR: one memcached, PID recorded for steer_topo_down.
_steer_memcached() {
	local ns=$1 addr=$2
	case $addr in *:*) addr="[$addr]" ;; esac
	ks_in_ns_bg "$ns" nice -n "${KS_NICE:-0}" memcached -u nobody -l "$addr" \
		-p "$STEER_PORT" -U "$STEER_PORT" -m 64 -t 1 </dev/null >/dev/null 2>&1
	STEER_MC_PIDS+=("$KS_BG_PID")
}

# _steer_member shard|replica I: host I (0-based) of that kind, on the
# bridge; a shard's bridge port gets the pass-through XDP program.
_steer_member() {
	local kind=$1 i=$2 id=$$ n=$(($2 + 1)) ns hif addr addr4
	if [ "$kind" = shard ]; then
		ns=ks_stsh${n}_$id hif=kss${n}_$id addr4=$STEER_NET.$((11 + i))
	else
		ns=ks_strp${n}_$id hif=ksr${n}_$id addr4=$STEER_NET.$((101 + i))
	fi
	addr=$addr4
	[ "$STEER_FAMILY" = 6 ] && addr=$(_steer_addr6 "$addr4")
	# The bridge port: kbs1_PID for kss1_PID, kbr1_PID for ksr1_PID.
	local bif=kb${hif:2}
	if ! _steer_host "$ns" "$hif" "$bif" "$addr4"; then
		steer_msg "cannot set up $kind $n ($ns, $hif)"
		return 1
	fi
	if [ "$kind" = replica ]; then
		STEER_REPLICA_NS+=("$ns") STEER_REPLICA_IF+=("$hif") STEER_REPLICA_ADDR+=("$addr")
		STEER_REPLICA_ADDR4+=("$addr4")
		STEER_REPLICAS+=${STEER_REPLICAS:+,}$(STEER_HOSTPORT "$addr")
		return 0
	fi
	STEER_SHARD_NS+=("$ns") STEER_SHARD_IF+=("$hif") STEER_SHARD_ADDR+=("$addr")
	STEER_SHARD_ADDR4+=("$addr4")
	STEER_HOSTPORT "$addr" >>"$STEER_SHARDS_FILE"
	# Steering asks the kernel for the next hop (bpf_fib_lookup), which
	# answers only on an interface with IPv4 forwarding on. Redirects off:
	# the shard should not tell the client about the replicas by ICMP.
	if ! ks_in_ns "$ns" sysctl -qw "net.ipv4.conf.$hif.forwarding=1" \
		net.ipv4.conf.all.send_redirects=0 "net.ipv4.conf.$hif.send_redirects=0" >/dev/null; then
		steer_msg "cannot turn IPv4 forwarding on for $hif in $ns"
		return 1
	fi
	if [ "$STEER_FAMILY" = 6 ] && ! ks_in_ns "$ns" sysctl -qw \
		"net.ipv6.conf.$hif.forwarding=1" >/dev/null; then
		steer_msg "cannot turn IPv6 forwarding on for $hif in $ns"
		return 1
	fi
	if ! _steer_xdp_pass "$bif"; then
		steer_msg "cannot attach $STEER_EMPTY_OBJ to $bif in $STEER_BR_NS (native XDP on veth)"
		return 1
	fi
}

steer_topo_up() {
	local nsh=$1 nrep=$2 id=$$ i
	STEER_FAMILY=${3:-4}
	if [ "$STEER_FAMILY" != 4 ] && [ "$STEER_FAMILY" != 6 ]; then
		steer_msg "family is 4 or 6, got '$STEER_FAMILY'"
		return 1
	fi
	if ! [[ "$nsh" =~ ^[0-9]+$ && "$nrep" =~ ^[0-9]+$ ]] ||
		[ "$nsh" -lt 1 ] || [ "$nsh" -gt 89 ] || [ "$nrep" -gt 99 ]; then
		steer_msg "want 1..89 shards and 0..99 replicas, got '$nsh' '$nrep'"
		return 1
	fi
	if ! command -v memcached >/dev/null; then
		steer_msg "memcached is not installed (make deps: memcached)"
		return 1
	fi
	if [ ! -r "$STEER_EMPTY_OBJ" ]; then
		steer_msg "$STEER_EMPTY_OBJ is missing; run 'make' first"
		return 1
	fi
	STEER_TMP=$(mktemp -d "/tmp/ks_steer_topo.$id.XXXXXX") || return 1
	STEER_BR_NS=ks_stbr_$id
	STEER_CLIENT_NS=ks_stcl_$id
	STEER_CLIENT_ADDR=$STEER_NET.1
	[ "$STEER_FAMILY" = 6 ] && STEER_CLIENT_ADDR=$(_steer_addr6 "$STEER_NET.1")
	STEER_SHARD_NS=() STEER_SHARD_IF=() STEER_SHARD_ADDR=() STEER_SHARD_ADDR4=()
	STEER_REPLICA_NS=() STEER_REPLICA_IF=() STEER_REPLICA_ADDR=() STEER_REPLICA_ADDR4=()
	STEER_SHARDS_FILE=$STEER_TMP/shards.txt
	STEER_REPLICAS=
	: >"$STEER_SHARDS_FILE"

	if ! ip netns add "$STEER_BR_NS"; then
		steer_msg "cannot create namespace $STEER_BR_NS"
		return 1
	fi
	STEER_ALL_NS+=("$STEER_BR_NS")
	if ! ip -n "$STEER_BR_NS" link add steerbr type bridge ||
		! ip -n "$STEER_BR_NS" link set steerbr up; then
		steer_msg "cannot create the bridge in $STEER_BR_NS"
		return 1
	fi
	if ! _steer_host "$STEER_CLIENT_NS" "ksc_$id" "kbc_$id" "$STEER_NET.1"; then
		steer_msg "cannot set up the client namespace"
		return 1
	fi
	for ((i = 0; i < nsh; i++)); do
		_steer_member shard "$i" || return 1
	done
	for ((i = 0; i < nrep; i++)); do
		_steer_member replica "$i" || return 1
	done
	local mc_ns=("${STEER_SHARD_NS[@]}" "${STEER_REPLICA_NS[@]}")
	local mc_addr=("${STEER_SHARD_ADDR[@]}" "${STEER_REPLICA_ADDR[@]}")
	for i in "${!mc_ns[@]}"; do
		_steer_memcached "${mc_ns[i]}" "${mc_addr[i]}"
	done
	for i in "${!mc_ns[@]}"; do
		ks_wait_tcp "${mc_ns[i]}" "${mc_addr[i]}" "$STEER_PORT" 5 ||
			{ steer_msg "memcached did not start on ${mc_addr[i]}"; return 1; }
	done
}

# steer_agent_start IDX ARGS...: output in $STEER_TMP/agent.IDX.out. 0 once
# the agent says it attached and has pinned its link; 1 if it exited (its
# status in STEER_AGENT_RC) or did not attach within 60 s (it is left
# running; steer_agents_stop ends it). Quiet, an agent attaches in under a
# second; at load 30 on 2 cores, the BPF verifier and an etcd starved of
# CPU took more than 10 s. KS_AGENT_NICE (default 0) is the agents' nice
# value, for a test whose subject is not how soon a loaded machine runs
# them.
# shellcheck disable=SC2034 # STEER_AGENT_RC is for the caller
steer_agent_start() {
	local idx=$1 ifn out pid i
	shift
	ifn=${STEER_SHARD_IF[idx]} out=$STEER_TMP/agent.$idx.out
	STEER_AGENT_RC=
	ks_in_ns_bg "${STEER_SHARD_NS[idx]}" nice -n "${KS_AGENT_NICE:-0}" \
		"$STEER_AGENT" run --iface "$ifn" "$@" \
		</dev/null >"$out" 2>&1
	pid=$KS_BG_PID
	STEER_AGENT_PIDS+=("$pid")
	for ((i = 0; i < 600; i++)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			STEER_AGENT_RC=$?
			return 1
		fi
		grep -q "attached to $ifn" "$out" && [ -e "$STEER_PIN_ROOT/$ifn/link" ] &&
			return 0
		sleep 0.1
	done
	return 1
}

# _steer_stop_pids SIGNAL SECONDS PID...: signal them all at once (memcached
# takes about a second to exit, agents to detach: in parallel, not in
# turn), wait, and SIGKILL any still there after SECONDS.
_steer_stop_pids() {
	local sig=$1 secs=$2 pid i
	shift 2
	for pid in "$@"; do
		kill -s "$sig" "$pid" 2>/dev/null
	done
	for pid in "$@"; do
		for ((i = 0; i < secs * 10; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			steer_msg "pid $pid ignored SIG$sig for $secs s; killing it"
			kill -KILL "$pid" 2>/dev/null
		fi
		wait "$pid" 2>/dev/null
	done
}

# 60 s before SIGKILL: an agent's exit detaches, which waits for the
# machine's rtnl lock and grace periods (seconds at load)
steer_agents_stop() {
	_steer_stop_pids INT 60 "${STEER_AGENT_PIDS[@]}"
	STEER_AGENT_PIDS=()
}
