#!/usr/bin/env bash
# test_client_hostview.sh - one view per host (docs/client.md, "One view per
# host"): `agent follow` publishes the range libkeysteer watches as a view
# file, and handles given view_file= follow it instead of etcd.
#
# One namespace of its own (its loopback only): etcd, the owner memcached
# (127.0.0.1:11211, the ring's one shard) and an L1 replica (11212), the
# follower, and handles through the Python adapter (tests/e2e/
# ks_hostview.py): monitor A reads the file (stale_view_ms=3000,
# view_file_lag_ms=1000), monitor B watches etcd itself (view_file=none).
#
# 1. The follower's file is taken; a ring change and hot/ puts and deletes
#    reach A as they reach B; the time from a hot/ put to a handle's view,
#    through the file and through its own watch (p50/p99, 40 puts), and
#    the memory of the follower and of both monitors are printed.
# 2. Freshness: copies made as a fill makes them (the owner's value, fresh
#    on the replica), read by a reader with its own watch; writes through
#    a handle on the file invalidate the replica: no stale read. Control:
#    a follower that leaves hosts/ and hot/ out of its file (test-only
#    --view-drop): the writer's view has no replica set, its writes leave
#    the copies, and the reader must read stale values.
# 3. The follower SIGKILLed: A's view down after view_file_lag_ms, owners
#    only no earlier than stale_view_ms after the kill; a new follower: up
#    again. SIGSTOPped: the same, and after SIGCONT a hot/ put made while
#    it was stopped arrives.
# 4. A garbage, truncated, torn (a byte changed) or other cluster's file is
#    refused at open with its reason; garbage renamed over the path under
#    a running handle is refused (stderr, view_refused), the handle goes
#    on, and takes the follower's next file.
# 5. The default path (/run/keysteer/CLUSTER.view): a handle given only an
#    etcd that does not answer opens from a fresh default file, and
#    view_file=none makes it go to etcd (and fail).
# Everything is this script's own, by PID; the namespace, the default
# file and the temp folder are removed on every exit path. About 60 s.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init client_hostview

HV=$E2E_DIR/ks_hostview.py
LIB=$E2E_ROOT/${OUT:-build}/libkeysteer.so
CLUSTER=hv$$
URL=http://127.0.0.1:2379
OWNER=127.0.0.1:11211
REPLICA=127.0.0.1:11212
VF=$E2E_TMP/run/$CLUSTER.view
DEFAULT_VF=/run/keysteer/$CLUSTER.view
KEY=flash:hv
STALE_MS=3000
LAG_MS=1000
ETCD_PID= FOLLOW_PID= MON_A= MON_B= MC1= MC2=

hv_cleanup() {
	local rc=$? p
	for p in "$MON_A" "$MON_B"; do
		ks_stop_pid "$p" TERM 5
	done
	[ -n "$FOLLOW_PID" ] && kill -CONT "$FOLLOW_PID" 2>/dev/null
	for p in "$FOLLOW_PID" "$MC1" "$MC2" "$ETCD_PID"; do
		ks_stop_pid "$p" TERM 5
	done
	rm -f "$DEFAULT_VF"
	rmdir /run/keysteer 2>/dev/null
	(exit "$rc")
	e2e_cleanup
}
trap hv_cleanup EXIT

e2e_require client_hostview_setup "make deps: memcached, etcd-server, etcd-client" \
	memcached etcd etcdctl
if [ ! -x "$AGENT" ] || [ ! -e "$LIB" ]; then
	fail client_hostview_setup "$AGENT or $LIB is missing; run 'make all tests'"
	exit 1
fi

MANY=$E2E_ROOT/${OUT:-build}/tests/ks_client_many
hv() { ks_in_ns "$CNS" env KEYSTEER_LIB="$LIB" PYTHONPATH="$E2E_ROOT/user/client/python" "$PY" "$HV" "$@"; }
hv_bg() { ks_in_ns_bg "$CNS" env KEYSTEER_LIB="$LIB" PYTHONPATH="$E2E_ROOT/user/client/python" "$PY" "$HV" "$@"; }
now() { date +%s.%N; }
ms_between() { "$PY" -c 'import sys; print(int((float(sys.argv[2]) - float(sys.argv[1])) * 1000))' "$1" "$2"; }
etcdc() { ks_in_ns "$CNS" etcdctl --endpoints "$URL" "$@"; }
# put_rev KEY VALUE: the put's etcd revision
put_rev() { etcdc put -w json "$1" "$2" | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["header"]["revision"])'; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null; }
pss_kb() { awk '/^Pss:/ {print $2}' "/proc/$1/smaps_rollup" 2>/dev/null; }

# follow_start [ARGS...]: a follower on VF (FOLLOW_PID), 0 once its file
# is there with a generation newer than before.
follow_start() {
	local i before
	before=$(stat -c %i "$VF" 2>/dev/null)
	ks_in_ns_bg "$CNS" "$AGENT" follow --etcd "$URL" --cluster "$CLUSTER" --etcd-timeout 10000 \
		--view-file "$VF" "$@" </dev/null >>"$E2E_TMP/follow.log" 2>&1
	FOLLOW_PID=$KS_BG_PID
	for ((i = 0; i < 200; i++)); do
		[ -s "$VF" ] && [ "$(stat -c %i "$VF")" != "$before" ] && return 0
		kill -0 "$FOLLOW_PID" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# ---- set-up ----
if ! ip netns add "$CNS" || ! ip -n "$CNS" link set lo up; then
	fail client_hostview_setup "could not create namespace $CNS"
	exit 1
fi
if ! e2e_etcd_start "$CNS" hv "$URL" 2380 >"$E2E_TMP/etcd_start.out"; then
	ETCD_PID=$E2E_ETCD_PID
	fail client_hostview_setup "$(cat "$E2E_TMP/etcd_start.out")"
	exit 1
fi
ETCD_PID=$E2E_ETCD_PID
ks_start_memcached "$CNS" 127.0.0.1 11211 || {
	MC1=$KS_MEMCACHED_PID
	fail client_hostview_setup "memcached on 11211 did not start"
	exit 1
}
MC1=$KS_MEMCACHED_PID
ks_start_memcached "$CNS" 127.0.0.1 11212 || {
	MC2=$KS_MEMCACHED_PID
	fail client_hostview_setup "memcached on 11212 did not start"
	exit 1
}
MC2=$KS_MEMCACHED_PID
ring_set() {
	ks_in_ns "$CNS" "$AGENT" ring set --etcd "$URL" --cluster "$CLUSTER" --etcd-timeout 10000 \
		--shards "$1" 2>&1 | awk '/^revision / {print $2}'
}
RING_REV=$(ring_set "$OWNER")
HOST_DOC="{\"schema\":1,\"self\":\"$OWNER\",\"ring_revision\":0,\"shard\":null,\"class_rates\":{\"read\":1,\"write\":0},\"top\":[],\"replicas\":[\"$REPLICA\"]}"
HASH=$(hv hash "$KEY")
if [ -z "$RING_REV" ] || ! etcdc put "/keysteer/$CLUSTER/hosts/$OWNER" "$HOST_DOC" >/dev/null; then
	fail client_hostview_setup "ring set or hosts/ put failed"
	exit 1
fi

# ---- 1. the file followed ----
if ! follow_start; then
	fail client_hostview_follower_publishes "no view file at $VF: $(tail -n 3 "$E2E_TMP/follow.log")"
	exit 1
fi
FILE_SPEC="view_file=$VF cluster=$CLUSTER timeout_ms=1000 stale_view_ms=$STALE_MS view_file_lag_ms=$LAG_MS"
ETCD_SPEC="etcd=$URL cluster=$CLUSTER view_file=none timeout_ms=1000 etcd_timeout_ms=10000 stale_view_ms=$STALE_MS"
hv_bg monitor "$FILE_SPEC" "$E2E_TMP/mon_a.log"
MON_A=$KS_BG_PID
hv_bg monitor "$ETCD_SPEC" "$E2E_TMP/mon_b.log"
MON_B=$KS_BG_PID
# wait MON SINCE EXPR [SECONDS]: monitor MON's first line after SINCE where
# EXPR holds; its time in WAIT_T, or 1 with WAIT_WHY
wait_mon() {
	local out
	out=$(hv wait "$E2E_TMP/mon_$1.log" "$2" "$3" "${4:-30}")
	if [ $? -eq 0 ]; then
		WAIT_T=$out
		return 0
	fi
	WAIT_WHY="monitor $1: $3: $out"
	return 1
}
if wait_mon a 0 "view_up == 1 and ring_revision == $RING_REV" &&
	wait_mon b 0 "view_up == 1 and ring_revision == $RING_REV"; then
	pass client_hostview_follower_publishes
else
	fail client_hostview_follower_publishes "$WAIT_WHY; $(head -c 300 "$E2E_TMP/mon_a.log")"
	exit 1
fi

T=$(now)
REV2=$(ring_set "$OWNER,127.0.0.1:11213")
REV3=$(ring_set "$OWNER")
if wait_mon a "$T" "ring_revision == $REV3" &&
	wait_mon b "$T" "ring_revision == $REV3"; then
	pass client_hostview_ring_change_seen
	note "ring revisions $REV2 then $REV3 reached the handle on the file"
else
	fail client_hostview_ring_change_seen "$WAIT_WHY"
fi

T=$(now)
etcdc put "/keysteer/$CLUSTER/hot/$HASH" "$(hv hotdoc "$KEY" "$OWNER" "$REPLICA" armed 1)" >/dev/null
OTHER=$(hv hash other:hv)
etcdc put "/keysteer/$CLUSTER/hot/$OTHER" "$(hv hotdoc other:hv "$OWNER" "" counting 1)" >/dev/null
ok=1
wait_mon a "$T" "hot_keys == 2 and armed_keys == 1" || ok=0
[ $ok = 1 ] && T2=$(now) && etcdc del "/keysteer/$CLUSTER/hot/$OTHER" >/dev/null &&
	{ wait_mon a "$T2" "hot_keys == 1 and armed_keys == 1" || ok=0; }
if [ $ok = 1 ]; then
	pass client_hostview_hot_changes_seen
else
	fail client_hostview_hot_changes_seen "$WAIT_WHY"
fi

# handles of one process on the file share one follower (one thread, no
# watch at etcd); the control, view=own, has a follower a handle
many() {
	ks_in_ns "$CNS" timeout 120 "$MANY" many "$FILE_SPEC $2" "$3" "$URL/metrics" 0 \
		>"$E2E_TMP/$1.json" 2>"$E2E_TMP/$1.err"
}
many_is() { "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(int(eval(sys.argv[2])))' "$E2E_TMP/$1.json" "$2" 2>/dev/null; }
many_says() { "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print("%d handles, view shared by %d, threads %d -> %d, etcd watchers %d -> %d, %.1f kB a handle" % (d["handles"], d["view_handles"], d["threads_before"], d["threads_after"], d["watchers_before"], d["watchers_after"], d["rss_per_handle_kb"]))' "$E2E_TMP/$1.json" 2>/dev/null || head -c 300 "$E2E_TMP/$1.err"; }
many file_shared "" 20
many file_own view=own 20
note "on the file: $(many_says file_shared); control view=own: $(many_says file_own)"
if [ "$(many_is file_shared "d['view_handles'] == 20 and d['gets'] == 20 and d['threads_after'] - d['threads_before'] == 1 and d['watchers_after'] == d['watchers_before']")" = 1 ] &&
	[ "$(many_is file_own "d['view_handles'] == 1 and d['threads_after'] - d['threads_before'] == 20")" = 1 ]; then
	pass client_hostview_one_follower_per_process
else
	fail client_hostview_one_follower_per_process "$(many_says file_shared); control: $(many_says file_own)"
fi

if hv latency "$URL" "$CLUSTER" 40 "$FILE_SPEC" "$ETCD_SPEC" >"$E2E_TMP/latency.json" 2>&1 &&
	"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if all(x["max_ms"] < 30000 for x in d) else 1)' "$E2E_TMP/latency.json"; then
	pass client_hostview_latency
	"$PY" -c 'import json, sys
for x, how in zip(json.load(open(sys.argv[1])), ("through the file", "through its own watch")):
    print("  a hot/ put to the view of a handle %s: p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d puts)" % (how, x["p50_ms"], x["p99_ms"], x["max_ms"], x["n"]))' "$E2E_TMP/latency.json"
else
	fail client_hostview_latency "a put never reached a handle: $(head -c 400 "$E2E_TMP/latency.json")"
fi
note "memory: follower RSS $(rss_kb "$FOLLOW_PID") KiB (PSS $(pss_kb "$FOLLOW_PID")), view file $(stat -c %s "$VF") bytes; monitor on the file RSS $(rss_kb "$MON_A") KiB (PSS $(pss_kb "$MON_A")), monitor on etcd RSS $(rss_kb "$MON_B") KiB (PSS $(pss_kb "$MON_B"))"

# ---- 2. freshness, and its control ----
fresh_run() {
	hv fresh "$ETCD_SPEC" "$FILE_SPEC" "$KEY" "$OWNER" "$REPLICA" 20 >"$E2E_TMP/$1.json" 2>&1
	"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["stale"], d["copy_reads_before"], d["writer_invalidations"])' "$E2E_TMP/$1.json" 2>/dev/null
}
read -r STALE COPIES INVALS <<<"$(fresh_run fresh)"
if [ "${STALE:-x}" = 0 ] && [ "${COPIES:-0}" -ge 15 ] && [ "${INVALS:-0}" -gt 0 ]; then
	pass client_hostview_no_stale_reads
	note "20 rounds: $COPIES read from the copy before the write, 0 stale reads after it; the writer (on the file) invalidated $INVALS times"
else
	fail client_hostview_no_stale_reads "stale ${STALE:-?}, copies read ${COPIES:-?}, invalidations ${INVALS:-?}: $(head -c 400 "$E2E_TMP/fresh.json")"
fi
ks_stop_pid "$FOLLOW_PID" TERM 5
if KEYSTEER_TEST_SWITCHES=1 follow_start --view-drop hosts/,hot/; then
	read -r STALE COPIES INVALS <<<"$(fresh_run control)"
	if [ "${STALE:-0}" -gt 0 ] && [ "${COPIES:-0}" -ge 15 ]; then
		pass client_hostview_control_finds_stale_reads
		note "control (follower without hosts/ and hot/): $STALE stale reads in 20 rounds, the writer invalidated ${INVALS:-?} times"
	else
		fail client_hostview_control_finds_stale_reads "stale ${STALE:-?}, copies read ${COPIES:-?}: $(head -c 400 "$E2E_TMP/control.json")"
	fi
else
	fail client_hostview_control_finds_stale_reads "the control's follower did not start: $(tail -n 3 "$E2E_TMP/follow.log")"
fi
ks_stop_pid "$FOLLOW_PID" TERM 5
if ! follow_start; then
	fail client_hostview_follower_killed "the follower did not start again: $(tail -n 3 "$E2E_TMP/follow.log")"
	exit 1
fi
wait_mon a "$(now)" "view_up == 1 and armed_keys == 1" ||
	fail client_hostview_follower_killed "not up on the new follower: $WAIT_WHY"

# ---- 3. the follower killed, stopped ----
# down_up NAME SIGNAL: the follower stopped by SIGNAL; A down, owners only
# no earlier than STALE_MS after it; then UP_CMD brings a follower back
down_check() {
	local name=$1 t0=$2 tdown town
	if ! wait_mon a "$t0" "view_up == 0" 20; then
		fail "$name" "$WAIT_WHY"
		return 1
	fi
	tdown=$WAIT_T
	if ! wait_mon a "$t0" "owners_only == 1" 30; then
		fail "$name" "$WAIT_WHY"
		return 1
	fi
	town=$WAIT_T
	DOWN_MS=$(ms_between "$t0" "$tdown")
	OWNERS_MS=$(ms_between "$t0" "$town")
	# the property: owners only once the view is stale_view_ms old, not
	# before (slack: the follower beats every 100 ms, the handle polls
	# every 100 ms)
	if [ "$OWNERS_MS" -lt $((STALE_MS - 200)) ]; then
		fail "$name" "owners only $OWNERS_MS ms after the follower stopped, before stale_view_ms $STALE_MS"
		return 1
	fi
	return 0
}
T=$(now)
kill -KILL "$FOLLOW_PID"
wait "$FOLLOW_PID" 2>/dev/null
FOLLOW_PID=
if down_check client_hostview_follower_killed "$T"; then
	note "SIGKILL: view down after $DOWN_MS ms (view_file_lag_ms $LAG_MS), owners only after $OWNERS_MS ms (stale_view_ms $STALE_MS)"
	T=$(now)
	if follow_start && wait_mon a "$T" "view_up == 1 and owners_only == 0" 20; then
		pass client_hostview_follower_killed
		note "a new follower: up again after $(ms_between "$T" "$WAIT_T") ms"
	else
		fail client_hostview_follower_killed "not up again with a new follower: ${WAIT_WHY:-$(tail -n 3 "$E2E_TMP/follow.log")}"
	fi
fi

T=$(now)
kill -STOP "$FOLLOW_PID"
if down_check client_hostview_follower_stopped "$T"; then
	note "SIGSTOP: view down after $DOWN_MS ms, owners only after $OWNERS_MS ms"
	LATE=$(hv hash late:hv)
	REV=$(put_rev "/keysteer/$CLUSTER/hot/$LATE" "$(hv hotdoc late:hv "$OWNER" "" counting 1)")
	T=$(now)
	kill -CONT "$FOLLOW_PID"
	if wait_mon a "$T" "view_up == 1 and owners_only == 0 and view_revision >= ${REV:-0} > 0" 20; then
		pass client_hostview_follower_stopped
		note "SIGCONT: up again, with the put made while stopped, after $(ms_between "$T" "$WAIT_T") ms"
	else
		fail client_hostview_follower_stopped "$WAIT_WHY"
	fi
else
	kill -CONT "$FOLLOW_PID"
fi

# ---- 4. bad files ----
BAD=$E2E_TMP/bad
mkdir -p "$BAD"
head -c 4096 /dev/urandom >"$BAD/garbage.view"
cp "$VF" "$BAD/cut.view"
truncate -s -8 "$BAD/cut.view"
cp "$VF" "$BAD/torn.view"
SIZE=$(stat -c %s "$BAD/torn.view")
printf 'X' | dd of="$BAD/torn.view" bs=1 seek=$((SIZE - 3)) conv=notrunc status=none
ok=1 why=
for c in "garbage|not a keysteer view file" "cut|truncated" "torn|body checksum wrong"; do
	f=${c%%|*} want=${c#*|}
	out=$(hv open "view_file=$BAD/$f.view cluster=$CLUSTER")
	if ! grep -qF "$want" <<<"$out"; then
		ok=0 why="$why $f.view: '$out' (want '$want');"
	fi
	note "$f.view: $out"
done
out=$(hv open "view_file=$VF cluster=other$$")
grep -qF "not of /keysteer/other$$/" <<<"$out" || { ok=0 why="$why other cluster: '$out';"; }
note "another cluster's: $out"
if [ $ok = 1 ]; then
	pass client_hostview_bad_files_refused
else
	fail client_hostview_bad_files_refused "$why"
fi

# garbage renamed over the path under a running handle
T=$(now)
cp "$BAD/garbage.view" "$VF.bad"
mv "$VF.bad" "$VF"
ok=1
wait_mon a "$T" "view_up == 0 and view_refused >= 1" 20 || { ok=0; why=$WAIT_WHY; }
kill -0 "$MON_A" 2>/dev/null || { ok=0; why="the handle's process died"; }
T=$(now)
etcdc put "/keysteer/$CLUSTER/hot/$LATE" "$(hv hotdoc late:hv "$OWNER" "" counting 2)" >/dev/null
if [ $ok = 1 ] && wait_mon a "$T" "view_up == 1" 20; then
	pass client_hostview_garbage_under_handle
else
	fail client_hostview_garbage_under_handle "${why:-$WAIT_WHY}"
fi

# ---- 5. the default path ----
ks_stop_pid "$FOLLOW_PID" TERM 5
ks_in_ns_bg "$CNS" "$AGENT" follow --etcd "$URL" --cluster "$CLUSTER" --etcd-timeout 10000 \
	</dev/null >>"$E2E_TMP/follow.log" 2>&1
FOLLOW_PID=$KS_BG_PID
for ((i = 0; i < 200; i++)); do
	[ -s "$DEFAULT_VF" ] && break
	sleep 0.05
done
DEAD=http://127.0.0.1:2999
out=$(hv open "etcd=$DEAD cluster=$CLUSTER etcd_timeout_ms=500")
out2=$(hv open "etcd=$DEAD cluster=$CLUSTER etcd_timeout_ms=500 view_file=none")
if [ "$out" = OK ] && [ "$out2" != OK ]; then
	pass client_hostview_default_path
	note "etcd= with a fresh $DEFAULT_VF: opened from it; view_file=none: $out2"
else
	fail client_hostview_default_path "with the default file: '$out'; view_file=none: '$out2'"
fi
exit "$E2E_FAILED"
