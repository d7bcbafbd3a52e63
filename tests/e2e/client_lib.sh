#!/usr/bin/env bash
# client_lib.sh - the fleet the libkeysteer tests run on (sourced after
# lib.sh and steer_topo.sh): the steering topology with NSH shards and NREP
# L1 replicas, a second client host (198.18.2.2), etcd in the first
# client's namespace, the ring in etcd, and agents with --etcd --replicas.
# Sets CNS, CNS2, URL, ETCD_PID, SPEC (from CLUSTER and the etcd URL).
# The caller traps e2e_topo_etcd_cleanup, which removes all of it.

# the load generator and the library's example, as built
LOAD=$E2E_ROOT/${OUT:-build}/ks_load
EXAMPLE=$E2E_ROOT/${OUT:-build}/ks_client_example

# client_init NAME: e2e_init, and the cleanup of the fleet on every exit
# path; a FAIL and exit 1 when etcd is not installed (e2e_need_etcd).
client_init() {
	e2e_init "$1"
	ETCD_PID=
	LOAD_PID=
	trap e2e_topo_etcd_cleanup EXIT
	e2e_need_etcd "$1"
}

# client_topo_up NAME NSH NREP: the topology and the second client host
# (CNS, CNS2); 0, or 1 after a FAIL line.
client_topo_up() {
	local name=$1
	if ! steer_topo_up "$2" "$3" >"$E2E_TMP/topo.out" 2>&1; then
		fail "${name}_topology" "$(tail -n 3 "$E2E_TMP/topo.out")"
		return 1
	fi
	CNS=$STEER_CLIENT_NS
	CNS2=ks_stc2_$$
	if ! steer_host_add "$CNS2" "ksc2_$$" 198.18.2.2 >>"$E2E_TMP/topo.out" 2>&1; then
		fail "${name}_topology" "second client: $(tail -n 3 "$E2E_TMP/topo.out")"
		return 1
	fi
}

# client_fleet_up NAME NSH NREP: client_topo_up, etcd and the ring in it;
# 0, or 1 after a FAIL line.
client_fleet_up() {
	local name=$1
	client_topo_up "$@" || return 1
	URL=http://$STEER_CLIENT_ADDR:2379
	if ! e2e_etcd_start "$CNS" "$name" "$URL" 2380 >"$E2E_TMP/etcd_start.out"; then
		fail "${name}_setup" "$(cat "$E2E_TMP/etcd_start.out")"
		return 1
	fi
	ETCD_PID=$E2E_ETCD_PID
	# 1 s per call: on a loaded 2-core machine a 300 ms timeout failed a
	# write now and then; freshness does not depend on it
	SPEC="etcd=$URL cluster=$CLUSTER timeout_ms=1000"
	if ! ks_in_ns "$CNS" "$AGENT" ring set --etcd "$URL" --cluster "$CLUSTER" \
		--shards-file "$STEER_SHARDS_FILE" >"$E2E_TMP/ringset.out" 2>&1; then
		fail "${name}_setup" "ring set: $(cat "$E2E_TMP/ringset.out")"
		return 1
	fi
}

# client_agents_start NAME ARGS...: both agents, with the tests' common
# options (0.5 s intervals, every request sampled).
client_agents_start() {
	local name=$1 i
	shift
	for i in 0 1; do
		if ! steer_agent_start "$i" --interval 0.5 --sample 1 \
			--shard-capacity 1000 --hot-fraction 0.1 \
			--etcd "$URL" --cluster "$CLUSTER" \
			--self "${STEER_SHARD_ADDR[$i]}:$STEER_PORT" \
			--replicas "$STEER_REPLICAS" "$@"; then
			fail "${name}_agents" "agent $i ($*) did not attach: $(head -n 3 "$STEER_TMP/agent.$i.out")"
			return 1
		fi
	done
}

# client_wait_armed EXAMPLE: 0 once a new handle on the fleet sees a key's
# entry armed (the library's own view, from etcd), within 20 s;
# ARMED_AFTER the ms it took, else ARMED_WHY what it saw.
client_wait_armed() {
	local i out
	for ((i = 0; i < 80; i++)); do
		out=$(ks_in_ns "$CNS2" "$1" "$SPEC" stats 2>&1)
		if grep -q 'armed_keys [1-9]' <<<"$out"; then
			ARMED_AFTER=$((i * 250))
			return 0
		fi
		sleep 0.25
	done
	ARMED_WHY=$out
	[ -n "${URL:-}" ] && ARMED_WHY="$out; hot/: $(ks_in_ns "$CNS" etcdctl --endpoints "$URL" get --prefix "/keysteer/$CLUSTER/hot/" --print-value-only 2>&1 | head -c 600)"
	return 1
}

# client_expect_armed NAME: client_wait_armed as the test NAME_key_armed_in_view
# (PASS, and the time it took; or FAIL and 1).
client_expect_armed() {
	ARMED_AFTER= ARMED_WHY=
	if client_wait_armed "$EXAMPLE"; then
		pass "${1}_key_armed_in_view"
		note "the library's view had the key armed ${ARMED_AFTER} ms after the load started"
		return 0
	fi
	fail "${1}_key_armed_in_view" "never armed in a handle's view: $ARMED_WHY"
	return 1
}

# client_need_bins NAME BIN...: 0 when every BIN is built, else a FAIL line.
client_need_bins() {
	local name=$1 b
	shift
	for b in "$@"; do
		if [ ! -x "$b" ]; then
			fail "${name}_setup" "$b is missing; run 'make all tests'"
			return 1
		fi
	done
}

# client_hot_load NAME EXAMPLE LOAD KEY VALUE SECONDS: KEY set to VALUE
# through the library (the owner must hold it for copies to be made), then
# UDP gets with KEY at half of them for SECONDS in the background
# (LOAD_PID, which e2e_topo_etcd_cleanup stops).
client_hot_load() {
	local name=$1 example=$2 load=$3 key=$4
	if ! ks_in_ns "$CNS" "$example" "$SPEC" set "$key" "$5" >"$E2E_TMP/set0.out" 2>&1; then
		fail "${name}_setup" "the first set through the library: $(cat "$E2E_TMP/set0.out")"
		return 1
	fi
	ks_in_ns_bg "$CNS" "$load" --shards-file "$STEER_SHARDS_FILE" \
		--proto udp --keys 200 --zipf 0.5 --flash "$key:0.5" --mix get=100 \
		--duration "$6" --rate 1000 --json \
		</dev/null >"$E2E_TMP/load.json" 2>"$E2E_TMP/load.err"
	LOAD_PID=$KS_BG_PID
}

# client_fresh NAME WRITE_INTERVAL_MS [ARGS...]: $FRESH (ks_client_fresh)
# on SPEC (FRESH_SPEC when set) and KEY for DURATION s, the writer on
# client 1, 2 readers on client 2; the document in $E2E_TMP/NAME.json, its
# exit status in NAME.rc.
client_fresh() {
	local name=$1 wi=$2
	shift 2
	ks_in_ns "$CNS" timeout $((DURATION + 20)) "$FRESH" --spec "${FRESH_SPEC:-$SPEC}" \
		--key "$KEY" --writer-ns "$CNS" --reader-ns "$CNS2" \
		--duration "$DURATION" --readers 2 --rate 1500 \
		--write-interval-ms "$wi" "$@" >"$E2E_TMP/$name.json" 2>"$E2E_TMP/$name.err"
	echo $? >"$E2E_TMP/$name.rc"
}
