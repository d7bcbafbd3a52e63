# shellcheck shell=bash
# herd_lib.sh - the set-up the hot-key callers' tests share
# (test_client_herd.sh, test_client_swr.sh): memcached 1.6 in a namespace
# of the script's own, on 127.0.0.1, and caller processes started
# together. Source it after lib.sh and e2e_init.
#
#   herd_setup NAME   the namespace, memcached and the EXIT trap that stops
#                     every process started here by PID and removes the
#                     namespace; sets NS, MC_PID, SPEC and KEYSTEER_LIB;
#                     FAIL NAME_setup and exit 1 when it cannot
#   herd_mc_start     (re)starts memcached in NS; sets MC_PID
#   herd_spawn TAG I CMD...  CMD in NS in the background, stdout in
#                     $E2E_TMP/TAG.I.json and stderr in TAG.I.err
#   herd_go TAG N     once the N processes of TAG wrote their ready files
#                     ($E2E_TMP/TAG.*.ready, within 60 s: a guard against
#                     a start that never comes), creates $E2E_TMP/TAG.go
#                     and waits for them; 0 when all exited 0
#   herd_start TAG N, herd_wait TAG   herd_go's two halves, so that runs
#                     on keys (and "databases") of their own can overlap:
#                     start each, then wait for each; a run's verdict is
#                     still its own processes' documents alone

MC_PID=
HERD_PIDS=()
declare -A HERD_TAG_PIDS=() # TAG -> its processes' PIDs

herd_cleanup() {
	local rc=$? pid
	for pid in "${HERD_PIDS[@]}"; do
		ks_stop_pid "$pid" KILL 5
	done
	ks_stop_pid "$MC_PID" TERM 5
	ks_ns_delete "$NS"
	(exit "$rc")
	e2e_cleanup
}

herd_mc_start() {
	ks_in_ns_bg "$NS" memcached -u nobody -l 127.0.0.1 -p 11211 -U 0 -m 64 -t 2 \
		</dev/null >/dev/null 2>&1
	MC_PID=$KS_BG_PID
}

herd_setup() {
	local name=$1 lib=$E2E_ROOT/${OUT:-build}/libkeysteer.so
	NS=ks_${name#client_}_$$
	trap herd_cleanup EXIT
	if [ ! -f "$lib" ]; then
		fail "${name}_setup" "$lib is missing; run 'make all'"
		exit 1
	fi
	export KEYSTEER_LIB=$lib
	if ! ip netns add "$NS" || ! ip -n "$NS" link set lo up; then
		fail "${name}_setup" "cannot make namespace $NS"
		exit 1
	fi
	herd_mc_start
	if ! ks_wait_tcp "$NS" 127.0.0.1 11211 10; then
		fail "${name}_setup" "memcached did not start"
		exit 1
	fi
	# 5 s per memcached call: at load 9 (four helpers' builds and tests) a
	# 2 s bound failed 5 of 147488 gets; no check here is about
	# memcached's speed
	# shellcheck disable=SC2034 # for the sourcing script
	SPEC="servers=127.0.0.1:11211 timeout_ms=5000"
}

herd_spawn() {
	local tag=$1 i=$2
	shift 2
	[ "$i" = 0 ] && rm -f "$E2E_TMP/$tag.go" && HERD_TAG_PIDS[$tag]=
	ks_in_ns_bg "$NS" "$@" </dev/null >"$E2E_TMP/$tag.$i.json" 2>"$E2E_TMP/$tag.$i.err"
	HERD_TAG_PIDS[$tag]+=" $KS_BG_PID"
	HERD_PIDS+=("$KS_BG_PID")
}

herd_start() {
	local tag=$1 n=$2 i
	for ((i = 0; i < 1200; i++)); do
		[ "$(ls "$E2E_TMP/$tag".*.ready 2>/dev/null | wc -l)" -eq "$n" ] && break
		sleep 0.05
	done
	touch "$E2E_TMP/$tag.go"
}

herd_wait() {
	local pid rc=0
	for pid in ${HERD_TAG_PIDS[$1]}; do
		wait "$pid" || rc=1
	done
	return $rc
}

herd_go() {
	herd_start "$1" "$2"
	herd_wait "$1"
}
