# shellcheck shell=bash
# netns.sh - network-namespace helpers shared by the demo and the e2e tests.
# Source it; it defines functions only and changes nothing by itself.
#
# Everything made here is named with a ks_ prefix and the caller's PID, lives
# in namespaces the caller creates, and uses addresses from 198.18.0.0/15
# (RFC 2544's benchmarking range), so it can never clash with or touch the
# host's own interfaces. Deleting a namespace deletes the veth end inside it
# and with it the peer, so ks_ns_delete is the whole network cleanup.
#
# Commands run in a namespace through nsenter --net only: unlike
# `ip netns exec`, it keeps the caller's mount namespace, so /sys/fs/bpf (and
# the agent's pins in it) are the same for every process of a test, whichever
# namespace it runs in. The flip side: /sys/class/net inside such a process
# still describes the root namespace, which our tools do not read.

KS_NETNS_RUN=/run/netns

# ks_in_ns NS CMD...: run CMD in network namespace NS, in the foreground.
# Not for `ks_in_ns ... &`: bash would fork a subshell for the function, and
# $! would be that subshell, not CMD. Background starts use ks_in_ns_bg.
ks_in_ns() {
	local ns=$1
	shift
	nsenter --net="$KS_NETNS_RUN/$ns" -- "$@"
}

# ks_in_ns_bg NS CMD... [>redirections]: start CMD in NS in the background and
# set KS_BG_PID to CMD's own PID (nsenter execs CMD, without forking), so the
# caller can signal and wait for exactly that process. Note that a
# non-interactive shell starts background jobs with SIGINT ignored: CMD sees
# SIGINT only if it installs its own handler (the agent and memcached do).
ks_in_ns_bg() {
	local ns=$1
	shift
	nsenter --net="$KS_NETNS_RUN/$ns" -- "$@" &
	KS_BG_PID=$!
}

# ks_pair_create CLI_NS SRV_NS CLI_IF SRV_IF CLI_ADDR/LEN SRV_ADDR/LEN
# Two namespaces joined by one veth pair, loopback up in both.
ks_pair_create() {
	local cns=$1 sns=$2 cif=$3 sif=$4 caddr=$5 saddr=$6
	ip netns add "$cns" || return 1
	ip netns add "$sns" || return 1
	# Create the pair directly inside the namespaces: neither end ever
	# exists in the root namespace, not even for a moment.
	ip link add "$cif" netns "$cns" type veth peer name "$sif" netns "$sns" ||
		return 1
	ip -n "$cns" addr add "$caddr" dev "$cif" || return 1
	ip -n "$sns" addr add "$saddr" dev "$sif" || return 1
	ip -n "$cns" link set lo up || return 1
	ip -n "$sns" link set lo up || return 1
	ip -n "$cns" link set "$cif" up || return 1
	ip -n "$sns" link set "$sif" up || return 1
}

# ks_flow_one_cpu NS IF: every TCP flow arriving on IF handled by one CPU
# at a time, as a NIC's receive-side scaling does. A veth whose peer sends
# TSO frames hands them to the sending CPU's backlog, not to its NAPI, so
# the segments of one connection can be parsed on two CPUs at once (the
# process's and the one taking its ACKs) and a stream's state raced
# (docs/operations.md, "One CPU per flow"); RPS over all CPUs puts each
# flow on one CPU by its hash.
ks_flow_one_cpu() {
	local ns=$1 ifc=$2 n mask q
	n=$(nproc --all) || return 1
	mask=$(printf '%x' $(((1 << n) - 1)))
	ip netns exec "$ns" sh -c '
		for q in /sys/class/net/'"$ifc"'/queues/rx-*; do
			echo '"$mask"' >"$q/rps_cpus" || exit 1
		done' || return 1
	for q in $(ip netns exec "$ns" sh -c "cat /sys/class/net/$ifc/queues/rx-*/rps_cpus"); do
		[ "$((16#${q//,/}))" -ne 0 ] || return 1
	done
}

# ks_ns_delete NS...: delete namespaces that exist; quiet about the others.
ks_ns_delete() {
	local ns
	for ns in "$@"; do
		[ -n "$ns" ] || continue
		ip netns del "$ns" 2>/dev/null || true
	done
}

# ks_stop_pid PID [SIGNAL [SECONDS]]: signal a process we started and wait
# for it; SIGKILL if it is still there after SECONDS (default 5).
ks_stop_pid() {
	local pid=$1 sig=${2:-TERM} secs=${3:-5} i
	[ -n "$pid" ] || return 0
	kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
	kill -s "$sig" "$pid" 2>/dev/null
	for ((i = 0; i < secs * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "netns.sh: pid $pid ignored SIG$sig for ${secs}s; killing it" >&2
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	return 0
}

# ks_wait_tcp NS ADDR PORT [SECONDS]: wait until something listens there:
# SECONDS by the clock, 30 at least (a server's start on a loaded machine
# took more than the 5 s most callers give; the wait ends at the listen).
ks_wait_tcp() {
	local ns=$1 addr=$2 port=$3 secs=${4:-30} t0=$SECONDS
	[ "$secs" -ge 30 ] || secs=30
	while [ $((SECONDS - t0)) -lt "$secs" ]; do
		if ks_in_ns "$ns" bash -c "exec 3<>/dev/tcp/$addr/$port" 2>/dev/null; then
			return 0
		fi
		sleep 0.05
	done
	return 1
}

# ks_start_memcached NS ADDR PORT: memcached on TCP and UDP PORT at ADDR in NS,
# in the background. Sets KS_MEMCACHED_PID; returns non-zero if it does not
# come up. The caller stops it with ks_stop_pid. KS_NICE (default 0) is
# its nice value: the tests raise it so a busy machine disturbs them less.
ks_start_memcached() {
	local ns=$1 addr=$2 port=$3
	# Output to /dev/null so memcached never holds the caller's pipes open.
	ks_in_ns_bg "$ns" nice -n "${KS_NICE:-0}" memcached -u nobody -l "$addr" -p "$port" -U "$port" \
		-m 64 -t 2 -c 256 </dev/null >/dev/null 2>&1
	# shellcheck disable=SC2034 # for the caller
	KS_MEMCACHED_PID=$KS_BG_PID
	if ! ks_wait_tcp "$ns" "$addr" "$port" 5; then
		echo "netns.sh: memcached did not start on $addr:$port" >&2
		return 1
	fi
}

# ks_start_etcd NS NAME URL PEER_PORT DIR [ARGS...]: a single-member etcd in
# namespace NS serving clients on URL only (an address of NS), its peer port
# on the namespace's loopback, data in DIR/NAME.data and its log appended to
# DIR/NAME.log, in the background. Sets KS_ETCD_PID (the caller stops it by
# that pid with ks_stop_pid, also when this fails); 1 with the log's tail
# on stdout when it does not listen within 10 s. KS_ETCD_NICE (default 0)
# is its nice value, for a test whose subject is not etcd's own stalls;
# KS_ETCD_DATA (default DIR) the folder of its data (the tests': tmpfs).
ks_start_etcd() {
	local ns=$1 name=$2 url=$3 peer=http://127.0.0.1:$4 dir=$5 hostport
	shift 5
	ks_in_ns_bg "$ns" nice -n "${KS_ETCD_NICE:-0}" etcd --name "$name" \
		--data-dir "${KS_ETCD_DATA:-$dir}/$name.data" \
		--listen-client-urls "$url" --advertise-client-urls "$url" \
		--listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
		--initial-cluster "$name=$peer" "$@" \
		</dev/null >>"$dir/$name.log" 2>&1
	# shellcheck disable=SC2034 # for the caller
	KS_ETCD_PID=$KS_BG_PID
	hostport=${url#*://}
	if ! ks_wait_tcp "$ns" "${hostport%:*}" "${hostport##*:}" 10; then
		echo "etcd $name did not start: $(tail -3 "$dir/$name.log")"
		return 1
	fi
}
