# shellcheck shell=bash
# etcd_cluster.sh - an N-member etcd 3.4 cluster (Debian's etcd) for the
# e2e tests, one member per network namespace the caller made, client and
# peer URLs on the namespace addresses only. Source it; it defines
# functions only.
#
#   etcd_cluster_start DIR NS:ADDR...  member I (0-based, named mI+1) in NS
#                                      on ADDR:2379 (client), ADDR:2380
#                                      (peer), data $KS_ETCD_DATA/mN.data
#                                      (lib.sh: tmpfs) or DIR/mN.data, log
#                                      DIR/mN.log; waits until every member
#                                      is healthy; 1 (message on stderr)
#                                      if not within 20 s
#   etcd_member_start I                start member I again, same data dir
#   etcd_member_kill I [SIG]           SIGKILL (or SIG) member I by its pid,
#                                      wait for it, forget the pid
#   etcd_member_signal I SIG           send SIG (STOP, CONT) to member I
#   etcd_cluster_stop                  SIGKILL every member still running
#                                      (a stopped one too), wait; call it
#                                      from the EXIT trap
#   etcd_leader                        the leader's index from `etcdctl
#                                      endpoint status -w json`, empty when
#                                      no member answers as leader
#   etcd_wait_healthy SECONDS          every member healthy and a leader
#   etcd_ctl ARGS...                   etcdctl against every member, from
#                                      member 0's namespace
#
# After etcd_cluster_start: ETCD_URLS (the client URLs, comma-separated:
# what --etcd and --endpoints take), ETCD_URL[] ETCD_NS[] ETCD_ADDR[]
# ETCD_PID[] (empty while a member is down). Needs netns.sh (lib.sh and
# steer_topo.sh source it).

ETCD_URLS=
ETCD_URL=() ETCD_NS=() ETCD_ADDR=() ETCD_PID=()
ETCD_DIR=
ETCD_INITIAL=

etcd_msg() { echo "etcd_cluster: $*" >&2; }

etcd_member_start() {
	local i=$1 addr=${ETCD_ADDR[$1]}
	# KS_ETCD_NICE and KS_ETCD_DATA (tmpfs): lib.sh's, as every etcd of
	# the suite
	ks_in_ns_bg "${ETCD_NS[i]}" nice -n "${KS_ETCD_NICE:-0}" etcd --name "m$((i + 1))" \
		--data-dir "${KS_ETCD_DATA:-$ETCD_DIR}/m$((i + 1)).data" \
		--listen-client-urls "http://$addr:2379" \
		--advertise-client-urls "http://$addr:2379" \
		--listen-peer-urls "http://$addr:2380" \
		--initial-advertise-peer-urls "http://$addr:2380" \
		--initial-cluster "$ETCD_INITIAL" \
		--initial-cluster-token "ks-$$" --initial-cluster-state new \
		</dev/null >>"$ETCD_DIR/m$((i + 1)).log" 2>&1
	ETCD_PID[i]=$KS_BG_PID
}

etcd_cluster_start() {
	local dir=$1 i=0 spec
	shift
	ETCD_DIR=$dir ETCD_INITIAL='' ETCD_URLS=''
	mkdir -p "$dir" || return 1
	ETCD_URL=() ETCD_NS=() ETCD_ADDR=() ETCD_PID=()
	for spec in "$@"; do
		ETCD_NS[i]=${spec%%:*} ETCD_ADDR[i]=${spec#*:}
		ETCD_URL[i]=http://${ETCD_ADDR[i]}:2379
		ETCD_INITIAL+=${ETCD_INITIAL:+,}m$((i + 1))=http://${ETCD_ADDR[i]}:2380
		ETCD_URLS+=${ETCD_URLS:+,}${ETCD_URL[i]}
		i=$((i + 1))
	done
	for i in "${!ETCD_NS[@]}"; do
		etcd_member_start "$i"
	done
	if ! etcd_wait_healthy 20; then
		etcd_msg "the cluster did not become healthy in 20 s:"
		tail -n 3 "$dir"/m*.log | sed 's/^/    /' >&2
		return 1
	fi
}

etcd_ctl() {
	ks_in_ns "${ETCD_NS[0]}" etcdctl \
		--endpoints "$ETCD_URLS" --command-timeout 3s "$@"
}

etcd_member_signal() {
	[ -n "${ETCD_PID[$1]}" ] && kill -s "$2" "${ETCD_PID[$1]}"
}

etcd_member_kill() {
	local i=$1 sig=${2:-KILL}
	[ -n "${ETCD_PID[i]}" ] || return 0
	{
		kill -s "$sig" "${ETCD_PID[i]}"
		wait "${ETCD_PID[i]}"
	} 2>/dev/null # no job notice
	ETCD_PID[i]=
}

etcd_leader() {
	etcd_ctl endpoint status -w json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
urls = sys.argv[1].split(",")
try:
    st = json.load(sys.stdin)
except ValueError:
    sys.exit(0)
for e in st:
    s = e.get("Status", {})
    if s.get("leader") and s["header"]["member_id"] == s["leader"]:
        print(urls.index(e["Endpoint"]))
        break
' "$ETCD_URLS"
}

etcd_wait_healthy() {
	local tenths=$(($1 * 10)) i
	for ((i = 0; i < tenths; i += 2)); do
		etcd_ctl endpoint health >/dev/null 2>&1 &&
			[ -n "$(etcd_leader)" ] && return 0
		sleep 0.2
	done
	return 1
}

etcd_cluster_stop() {
	local i
	# SIGKILL: the data is the test's own, and a member left without a
	# quorum can take seconds over SIGTERM
	for i in "${!ETCD_PID[@]}"; do
		etcd_member_kill "$i" KILL
	done
	return 0
}
