#!/usr/bin/env bash
# hostview_bench.sh - one view per host measured (docs/client.md, "One view
# per host"): a fleet of HOSTS hosts/ documents (about 1 KB each, as agents
# write them) and HOT armed hot/ entries in one etcd, `agent follow`
# publishing them; then
#   - the follower's memory and the view file's size;
#   - N handles in one process on the file, and N on etcd (each its own
#     watch): memory per handle and open time;
#   - etcd's CPU and the follower's while hosts/ are rewritten at CHURN
#     puts/s (the agents' load updates) with the N handles on the file,
#     then with them on etcd;
#   - a hot/ put to one handle's view, through the file and through its
#     own watch, p50/p99 of 40 (quiet, then with hosts/ rewritten at
#     CHURN puts/s, the agents' load updates, beside it), and the
#     follower's CPU under that churn.
# In a namespace of its own (loopback only), everything stopped by PID.
#   tests/bench/hostview_bench.sh [HOSTS [HOT [N [CHURN]]]]  (256 200 100 200)
set -u
# shellcheck source=../e2e/lib.sh
. "$(dirname "$0")/../e2e/lib.sh"
e2e_init hostview_bench
HOSTS=${1:-256} HOT=${2:-200} N=${3:-100} CHURN=${4:-200}
HV=$E2E_ROOT/tests/e2e/ks_hostview.py
LIB=$E2E_ROOT/${OUT:-build}/libkeysteer.so
CLUSTER=hvb$$
URL=http://127.0.0.1:2379
VF=$E2E_TMP/$CLUSTER.view
ETCD_PID= FOLLOW_PID=
bench_cleanup() {
	local rc=$?
	ks_stop_pid "$FOLLOW_PID" TERM 5
	ks_stop_pid "$ETCD_PID" TERM 5
	(exit "$rc")
	e2e_cleanup
}
trap bench_cleanup EXIT
hv() { ks_in_ns "$CNS" env KEYSTEER_LIB="$LIB" PYTHONPATH="$E2E_ROOT/user/client/python" "$PY" "$HV" "$@"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

ip netns add "$CNS" && ip -n "$CNS" link set lo up || exit 1
e2e_etcd_start "$CNS" hvb "$URL" 2380 || exit 1
ETCD_PID=$E2E_ETCD_PID
ks_in_ns "$CNS" "$AGENT" ring set --etcd "$URL" --cluster "$CLUSTER" --etcd-timeout 10000 \
	--shards 10.1.0.0:11211,10.1.0.1:11211,10.1.0.2:11211,10.1.0.3:11211 >/dev/null || exit 1
hv populate "$URL" "$CLUSTER" "$HOSTS" "$HOT" || exit 1
ks_in_ns_bg "$CNS" "$AGENT" follow --etcd "$URL" --cluster "$CLUSTER" --etcd-timeout 10000 \
	--view-file "$VF" </dev/null >"$E2E_TMP/follow.log" 2>&1
FOLLOW_PID=$KS_BG_PID
for ((i = 0; i < 200; i++)); do [ -s "$VF" ] && break; sleep 0.05; done
FILE_SPEC="view_file=$VF cluster=$CLUSTER"
ETCD_SPEC="etcd=$URL cluster=$CLUSTER view_file=none etcd_timeout_ms=10000"
echo "fleet: $HOSTS hosts/, $HOT hot/ entries; view file $(stat -c %s "$VF") bytes"
echo "follower: RSS $(awk '/^VmRSS/ {print $2}' "/proc/$FOLLOW_PID/status") KiB"
echo "handles on the file: $(hv mem "$N" "$FILE_SPEC")"
echo "handles on etcd:     $(hv mem "$N" "$ETCD_SPEC")"
# churn_cpu SPEC: N handles of SPEC held while hosts/ churn 15 s: the CPU
# of etcd and of the follower meanwhile
churn_cpu() {
	local h e0 f0 e1 f1 t0 t1 h0 h1
	ks_in_ns_bg "$CNS" env PYTHONPATH="$E2E_ROOT/user/client/python" KEYSTEER_LIB="$LIB" \
		"$PY" "$HV" mem "$N" "$1" 25 >"$E2E_TMP/hold.out" 2>&1
	h=$KS_BG_PID
	sleep 8 # the handles open (the bench's own pace, not a check)
	e0=$(cpu_ticks "$ETCD_PID") f0=$(cpu_ticks "$FOLLOW_PID") h0=$(cpu_ticks "$h") t0=$(date +%s.%N)
	hv churn "$URL" "$CLUSTER" "$HOSTS" "$CHURN" 15 >/dev/null
	e1=$(cpu_ticks "$ETCD_PID") f1=$(cpu_ticks "$FOLLOW_PID") h1=$(cpu_ticks "$h") t1=$(date +%s.%N)
	wait "$h"
	"$PY" -c 'import os, sys
e0, e1, f0, f1, h0, h1 = map(int, sys.argv[1:7]); t = float(sys.argv[8]) - float(sys.argv[7]); hz = os.sysconf("SC_CLK_TCK")
print("etcd %.0f%% of a core, follower %.0f%%, the handles%s process %.0f%%" % (100.0 * (e1 - e0) / hz / t, 100.0 * (f1 - f0) / hz / t, chr(39), 100.0 * (h1 - h0) / hz / t))' "$e0" "$e1" "$f0" "$f1" "$h0" "$h1" "$t0" "$t1"
}
echo "$N handles on the file, hosts/ at $CHURN puts/s: $(churn_cpu "$FILE_SPEC")"
echo "$N handles on etcd, hosts/ at $CHURN puts/s:     $(churn_cpu "$ETCD_SPEC")"
echo "hot/ put to a view (quiet): $(hv latency "$URL" "$CLUSTER" 40 "$FILE_SPEC" "$ETCD_SPEC")"
ks_in_ns_bg "$CNS" env PYTHONPATH="$E2E_ROOT/user/client/python" KEYSTEER_LIB="$LIB" \
	"$PY" "$HV" churn "$URL" "$CLUSTER" "$HOSTS" "$CHURN" 20 >"$E2E_TMP/churn.out" 2>&1
CHURN_PID=$KS_BG_PID
c0=$(cpu_ticks "$FOLLOW_PID")
t0=$(date +%s.%N)
echo "hot/ put to a view (hosts/ at $CHURN puts/s): $(hv latency "$URL" "$CLUSTER" 40 "$FILE_SPEC" "$ETCD_SPEC")"
c1=$(cpu_ticks "$FOLLOW_PID")
t1=$(date +%s.%N)
echo "follower CPU under the churn: $("$PY" -c 'import os, sys; print("%.0f%% of a core" % (100.0 * (int(sys.argv[2]) - int(sys.argv[1])) / os.sysconf("SC_CLK_TCK") / (float(sys.argv[4]) - float(sys.argv[3]))))' "$c0" "$c1" "$t0" "$t1")"
wait "$CHURN_PID"
echo "churn: $(cat "$E2E_TMP/churn.out")"
