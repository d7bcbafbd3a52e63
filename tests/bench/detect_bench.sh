#!/usr/bin/env bash
# detect_bench.sh - detection to every client (issue 25; docs/fleet.md,
# "Clients at scale"; make bench-detect): the time from the first request
# of a key that is hot from its start to the moment each of N library
# handles on another host reads it from a copy, for N followers.
#
# The steering topology (user/scripts/steer_topo.sh): one shard with its
# agent (XDP on its veth, --etcd --self --replicas, 0.5 s intervals, every
# request sampled, hot above 100 reads/s: --shard-capacity 1000
# --hot-fraction 0.1), two L1 replicas, etcd 3.4 on the client host
# (198.18.2.1), and a second client host (198.18.2.2) running
# build/tests/ks_client_swarm with N handles. Per repeat, a new key is
# set on its owner through the library, the swarm is told to watch for
# it, and ks_load starts on the first client host: UDP gets, the key half
# of 1,000 a second (five times the threshold from its first request),
# the rest over 200 cold keys. T0 is taken just before ks_load is exec'd
# (its first request follows within a few ms). Per handle the swarm
# reports A, when its view first had the key armed (from then on a reader
# reads copies), and R, when its first read of the key from a copy
# returned (reads run one handle after another in one thread: with 1,000
# handles R includes that queue). Then the load stops and the key cools
# (no entry armed in etcd, then no view armed for 2 s in a row) before the
# next repeat.
#
#   tests/bench/detect_bench.sh [--modes own,shared,file]
#       [--followers 1,100,1000] [--repeats N] [--json FILE]
#       [--agent-args 'ARGS'] [--words 'SPEC WORDS']
#
# Modes, how the N handles follow (each mode runs every N):
#   own     view=own: a watch, a connection and a thread per handle (the
#           library before issue 25)
#   shared  the default: the process's handles share one view and one
#           watch (view_file=none, so a follower's default file on this
#           machine is not taken)
#   file    'agent follow' runs in the second client host's namespace
#           (one watch of etcd, its view file in a folder of this script's
#           own under /dev/shm: tmpfs, as /run/keysteer is on a real host)
#           and the handles open with view_file=THAT: a host follower's view
# --words are added to every keysteer_open of the followers.
#
# Per repeat a watcher on the etcd host (the gateway's /v3/watch of
# hot/, started and created before the load) also notes E, when the
# key's entry was first put armed: A - E is the client side alone (etcd
# to the views), apart from the agent's detection (T0 to E).
#
# Prints p50/p99/max of A and R over every (repeat, handle) per mode and
# N, and p50/p99 of A - E. Every wait is bounded; namespaces, memcached, the agent, etcd, the
# follower, the load and the swarm are this script's own (by PID) and
# removed on every exit path.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../user/scripts/steer_topo.sh
. "$ROOT/user/scripts/steer_topo.sh"
SWARM=$ROOT/${OUT:-build}/tests/ks_client_swarm
EXAMPLE=$ROOT/${OUT:-build}/ks_client_example
LOAD=$ROOT/${OUT:-build}/ks_load
PY=/usr/bin/python3

MODES=own,shared,file
FOLLOWERS=1,100,1000
REPEATS=5
JSON_OUT=
AGENT_ARGS=
WORDS=
CLUSTER=detect
WAIT_MS=60000

usage() {
	sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit "${1:-2}"
}
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage 0 ;;
	*) [ $# -ge 2 ] || { echo "detect_bench.sh: $1 needs a value; see --help" >&2; exit 2; } ;;
	esac
	case $1 in
	--modes) MODES=$2 ;;
	--followers) FOLLOWERS=$2 ;;
	--repeats) REPEATS=$2 ;;
	--json) JSON_OUT=$2 ;;
	--agent-args) AGENT_ARGS=$2 ;;
	--words) WORDS=$2 ;;
	*) echo "detect_bench.sh: unknown option '$1'; see --help" >&2; exit 2 ;;
	esac
	shift 2
done
IFS=, read -r -a NS_LIST <<<"$FOLLOWERS"
IFS=, read -r -a MODE_LIST <<<"$MODES"
for m in "${MODE_LIST[@]}"; do
	case $m in
	own | shared | file) ;;
	*) echo "detect_bench.sh: mode '$m' is none of own, shared, file" >&2; exit 2 ;;
	esac
done
for n in "${NS_LIST[@]}" "$REPEATS"; do
	if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt 5000 ]; then
		echo "detect_bench.sh: '$n' is not a number 1..5000" >&2
		exit 2
	fi
done
[ "$(id -u)" = 0 ] || { echo "detect_bench.sh: needs root (namespaces, XDP)" >&2; exit 1; }
for b in "$SWARM" "$EXAMPLE" "$LOAD" "$STEER_AGENT" "$STEER_EMPTY_OBJ"; do
	[ -e "$b" ] || { echo "detect_bench.sh: $b is missing; run 'make all tests'" >&2; exit 1; }
done
for t in etcd etcdctl memcached "$PY"; do
	command -v "$t" >/dev/null || { echo "detect_bench.sh: $t is missing; run 'make deps'" >&2; exit 1; }
done

TMP=$(mktemp -d /tmp/ks_detect.XXXXXX)
VDIR=
ETCD_PID= LOAD_PID= SWARM_PID= FOLLOW_PID= EW_PID=
cleanup() {
	trap - EXIT INT TERM HUP
	exec 3>&- 2>/dev/null
	[ -n "$EW_PID" ] && ks_stop_pid "$EW_PID" TERM 5
	[ -n "$LOAD_PID" ] && ks_stop_pid "$LOAD_PID" TERM 5
	[ -n "$SWARM_PID" ] && ks_stop_pid "$SWARM_PID" TERM 10
	[ -n "$FOLLOW_PID" ] && ks_stop_pid "$FOLLOW_PID" TERM 5
	steer_topo_down
	[ -n "$ETCD_PID" ] && ks_stop_pid "$ETCD_PID" TERM 5
	[ -n "$VDIR" ] && rm -rf "$VDIR"
	if [ -n "${DETECT_KEEP:-}" ]; then echo "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# wait_line FILE PATTERN COUNT SECONDS: 0 once FILE has COUNT lines
# matching PATTERN (grep -E), 1 when SECONDS pass or the swarm exited
wait_line() {
	local i
	for ((i = 0; i < $4 * 10; i++)); do
		[ "$(grep -cE -- "$2" "$1" 2>/dev/null)" -ge "$3" ] && return 0
		[ -n "$SWARM_PID" ] && ! kill -0 "$SWARM_PID" 2>/dev/null && return 1
		sleep 0.1
	done
	return 1
}

echo "detect_bench: modes ${MODE_LIST[*]}, followers ${NS_LIST[*]}, $REPEATS repeat(s), words '$WORDS'; load $(cut -d' ' -f1-3 /proc/loadavg)"
steer_topo_up 1 2 >"$TMP/topo.out" 2>&1 || { tail -n 3 "$TMP/topo.out"; exit 1; }
CNS=$STEER_CLIENT_NS CNS2=ks_dc2_$$
steer_host_add "$CNS2" "ksd2_$$" 198.18.2.2 >>"$TMP/topo.out" 2>&1 || { tail -n 3 "$TMP/topo.out"; exit 1; }
URL=http://$STEER_CLIENT_ADDR:2379
ks_start_etcd "$CNS" detect "$URL" 2380 "$TMP" >"$TMP/etcd.out" 2>&1 || { cat "$TMP/etcd.out"; exit 1; }
ETCD_PID=$KS_ETCD_PID
for ((i = 0; i < 5; i++)); do
	ks_in_ns "$CNS" "$STEER_AGENT" ring set --etcd "$URL" --cluster "$CLUSTER" \
		--shards-file "$STEER_SHARDS_FILE" >"$TMP/ringset.out" 2>&1 && break
	sleep 1
done
[ "$i" -lt 5 ] || { cat "$TMP/ringset.out"; exit 1; }
SPEC="etcd=$URL cluster=$CLUSTER timeout_ms=1000 etcd_timeout_ms=30000"
if [[ ",$MODES," == *,file,* ]]; then
	VDIR=$(mktemp -d /dev/shm/ks_detect.XXXXXX) || exit 1
fi
VIEW=$VDIR/follow/$CLUSTER.view
# shellcheck disable=SC2086 # AGENT_ARGS: words
if ! steer_agent_start 0 --interval 0.5 --sample 1 --shard-capacity 1000 \
	--hot-fraction 0.1 --etcd "$URL" --cluster "$CLUSTER" \
	--self "${STEER_SHARD_ADDR[0]}:$STEER_PORT" --replicas "$STEER_REPLICAS" \
	$AGENT_ARGS >"$TMP/agent_start.out" 2>&1; then
	echo "detect_bench: the agent did not attach: $(head -n 3 "$STEER_TMP/agent.0.out")" >&2
	exit 1
fi

# The E watcher: URL PREFIX READY OUT. Its watch created, READY is made;
# the first put under PREFIX whose value says armed writes its
# CLOCK_MONOTONIC ns (every namespace of the machine shares the clock)
# into OUT and it exits.
EWATCH='import base64, http.client, json, sys, time, urllib.parse
url, pfx, ready, out = sys.argv[1:5]
u = urllib.parse.urlparse(url)
b = lambda x: base64.b64encode(x).decode()
end = pfx[:-1].encode() + bytes([pfx.encode()[-1] + 1])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
c.request("POST", "/v3/watch", json.dumps({"create_request": {
    "key": b(pfx.encode()), "range_end": b(end)}}))
r = c.getresponse()
buf = b""
while True:
    chunk = r.read1(65536)
    if not chunk:
        sys.exit(1)
    buf += chunk
    while b"\n" in buf:
        line, buf = buf.split(b"\n", 1)
        if not line.strip():
            continue
        res = json.loads(line).get("result", {})
        if res.get("created"):
            open(ready, "w").close()
        for ev in res.get("events", []):
            v = base64.b64decode(ev["kv"].get("value", ""))
            if ev.get("type", "PUT") == "PUT" and b"\"state\":\"armed\"" in v:
                t = time.monotonic_ns()
                with open(out, "w") as f:
                    f.write("%d\n" % t)
                sys.exit(0)'

# start_follower: 'agent follow' on the second client host, its file at
# $VIEW; 0 once the file is there, 1 (said why) when it is not in 30 s
start_follower() {
	local i
	rm -rf "$VDIR/follow"
	ks_in_ns_bg "$CNS2" "$STEER_AGENT" follow --etcd "$URL" --cluster "$CLUSTER" \
		--view-file "$VIEW" </dev/null >"$TMP/follow.out" 2>&1
	FOLLOW_PID=$KS_BG_PID
	for ((i = 0; i < 300; i++)); do
		[ -s "$VIEW" ] && return 0
		kill -0 "$FOLLOW_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "detect_bench: agent follow wrote no $VIEW: $(tail -n 3 "$TMP/follow.out")" >&2
	return 1
}

failed=0
for mode in "${MODE_LIST[@]}"; do
	# the followers' spec: the key's writer keeps the plain one
	case $mode in
	own) FSPEC="$SPEC view=own view_file=none" ;;
	shared) FSPEC="$SPEC view_file=none" ;;
	file) FSPEC="$SPEC view_file=$VIEW" ;;
	esac
	FSPEC="$FSPEC${WORDS:+ $WORDS}"
	if [ "$mode" = file ] && ! start_follower; then
		failed=1
		break
	fi
	for n in "${NS_LIST[@]}"; do
		out=$TMP/swarm.$mode.$n
		mkfifo "$TMP/in.$mode.$n"
		# read-write: opening a fifo for writing alone waits for its reader
		exec 3<>"$TMP/in.$mode.$n"
		# not ks_in_ns_bg: a background command in a function gets /dev/null
		# as stdin, whatever the call redirects
		nsenter --net="$KS_NETNS_RUN/$CNS2" -- "$SWARM" --spec "$FSPEC" \
			--handles "$n" --wait-ms "$WAIT_MS" --open-threads 4 \
			<"$TMP/in.$mode.$n" >"$out" 2>"$out.err" &
		SWARM_PID=$!
		if ! wait_line "$out" '^OPENED ' 1 300; then
			echo "detect_bench: $mode, $n followers did not open: $(tail -c 300 "$out.err")" >&2
			failed=1
			break
		fi
		echo "== $mode, $n followers: $(sed 's/^OPENED //' <(grep '^OPENED' "$out"))"
		for ((r = 1; r <= REPEATS; r++)); do
			key=detect:$mode:$n:$r:$$
			if ! ks_in_ns "$CNS" "$EXAMPLE" "$SPEC" set "$key" "v$r" >"$TMP/set.out" 2>&1; then
				echo "detect_bench: set $key: $(cat "$TMP/set.out")" >&2
				failed=1
				break 2
			fi
			echo "D $key" >&3
			rm -f "$TMP/t0" "$TMP/e_ready" "$TMP/e_armed"
			# E: the first armed put under hot/ (the last key cooled:
			# none is armed now), stamped on the etcd host
			ks_in_ns_bg "$CNS" "$PY" -c "$EWATCH" "$URL" "/keysteer/$CLUSTER/hot/" \
				"$TMP/e_ready" "$TMP/e_armed" </dev/null >"$TMP/ewatch.out" 2>&1
			EW_PID=$KS_BG_PID
			for ((i = 0; i < 200; i++)); do
				[ -e "$TMP/e_ready" ] && break
				kill -0 "$EW_PID" 2>/dev/null || break
				sleep 0.05
			done
			# T0 just before the exec: the load's first request follows it
			ks_in_ns_bg "$CNS" "$PY" -c 'import os, sys, time
with open(sys.argv[1], "w") as f:
    f.write("%d\n" % time.monotonic_ns())
os.execv(sys.argv[2], sys.argv[2:])' "$TMP/t0" "$LOAD" \
				--shards-file "$STEER_SHARDS_FILE" --proto udp --keys 200 \
				--zipf 0.5 --flash "$key:0.5" --mix get=100 --duration 300 \
				--rate 1000 </dev/null >"$TMP/load.out" 2>&1
			LOAD_PID=$KS_BG_PID
			for ((i = 0; i < 100; i++)); do
				[ -s "$TMP/t0" ] && break
				sleep 0.05
			done
			echo "T $(cat "$TMP/t0")" >&3
			if ! wait_line "$out" '^DETECT ' "$r" $((WAIT_MS / 1000 + 30)); then
				echo "detect_bench: no answer for $key: $(tail -c 300 "$out.err")" >&2
				failed=1
				break 2
			fi
			note=$(grep '^DETECT ' "$out" | tail -n 1 | cut -d' ' -f2,3)
			# T0 and E of this repeat, in order beside its DETECT line
			echo "$(cat "$TMP/t0") $(cat "$TMP/e_armed" 2>/dev/null || echo -1)" >>"$out.e"
			ks_stop_pid "$EW_PID" TERM 5
			EW_PID=
			ks_stop_pid "$LOAD_PID" TERM 5
			LOAD_PID=
			# cooled: no entry armed in etcd, then no view armed for 2 s
			for ((i = 0; i < 1200; i++)); do
				! grep -q '"state":"armed"' <<<"$(ks_in_ns "$CNS" etcdctl --endpoints "$URL" \
					get --prefix "/keysteer/$CLUSTER/hot/" --print-value-only 2>&1)" && break
				sleep 0.1
			done
			echo "C" >&3
			wait_line "$out" '^COLD ' "$r" $((WAIT_MS / 1000 + 30))
			echo "   repeat $r: armed/copied $note; cooled: $(grep '^COLD ' "$out" | tail -n 1)"
		done
		echo "Q" >&3
		exec 3>&-
		wait_line "$out" '^BYE ' 1 60
		ks_stop_pid "$SWARM_PID" TERM 10
		SWARM_PID=
	done
	[ "$failed" = 0 ] || break
	if [ -n "$FOLLOW_PID" ]; then
		if ! kill -0 "$FOLLOW_PID" 2>/dev/null; then
			echo "detect_bench: agent follow exited during the run: $(tail -n 3 "$TMP/follow.out")" >&2
			failed=1
		fi
		ks_stop_pid "$FOLLOW_PID" TERM 5
		FOLLOW_PID=
	fi
done

"$PY" - "$TMP" "$JSON_OUT" "$MODES" "${NS_LIST[@]}" <<'PYEOF'
import json, math, os, sys
tmp, json_out = sys.argv[1], sys.argv[2]
modes, ns = sys.argv[3].split(','), [int(x) for x in sys.argv[4:]]
def pct(v, q):
    v = sorted(v)  # nearest rank: of 100, p99 is the 99th
    return v[max(0, math.ceil(q * len(v)) - 1)] / 1e3 if v else float('nan')
rows = []
for mode, n in [(m, n) for m in modes for n in ns]:
    path = os.path.join(tmp, 'swarm.%s.%d' % (mode, n))
    if not os.path.exists(path):
        continue
    a, r, miss_a, miss_r, early, reps = [], [], 0, 0, 0, 0
    ae, det = [], []
    te = [tuple(int(x) for x in l.split()) for l in open(path + '.e')] \
        if os.path.exists(path + '.e') else []
    k = -1
    for line in open(path):
        if not line.startswith('DETECT '):
            continue
        k += 1
        f = [int(x) for x in line.split()[1:]]
        d = f[2:]
        if len(d) != 2 * n:
            continue
        if k < len(te) and te[k][1] > 0:
            e_us = (te[k][1] - te[k][0]) / 1e3  # T0 to E
            det.append(e_us)
            ae += [x - e_us for x in d[:n] if x >= 0]
        reps += 1
        a += [x for x in d[:n] if x >= 0]
        r += [x for x in d[n:] if x >= 0]
        miss_a += sum(1 for x in d[:n] if x == -1)
        miss_r += sum(1 for x in d[n:] if x == -1)
        early += sum(1 for x in d[:n] + d[n:] if x == -2)
    rows.append({'mode': mode, 'followers': n, 'repeats': reps,
                 'armed_p50_ms': pct(a, .5), 'armed_p99_ms': pct(a, .99),
                 'armed_max_ms': max(a) / 1e3 if a else None,
                 'copy_read_p50_ms': pct(r, .5),
                 'copy_read_p99_ms': pct(r, .99),
                 'copy_read_max_ms': max(r) / 1e3 if r else None,
                 'agent_p50_ms': pct(det, .5), 'agent_max_ms':
                 max(det) / 1e3 if det else None,
                 'etcd_to_view_p50_ms': pct(ae, .5),
                 'etcd_to_view_p99_ms': pct(ae, .99),
                 'etcd_to_view_max_ms': max(ae) / 1e3 if ae else None,
                 'not_armed': miss_a, 'no_copy_read': miss_r,
                 'before_t0': early})
print()
print('| mode | followers | repeats | armed in view p50 ms | p99 | max | read from a copy p50 ms | p99 | max | agent: T0 to armed in etcd p50 / max ms | armed in etcd to in view p50 / p99 / max ms | not armed | no copy read | before T0 |')
print('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
fmt = lambda x: '-' if x is None or x != x else '%.0f' % x
fmt1 = lambda x: '-' if x is None or x != x else '%.1f' % x
for w in rows:
    print('| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s / %s | %d | %d | %d |' % (
        w['mode'], w['followers'], w['repeats'], fmt(w['armed_p50_ms']),
        fmt(w['armed_p99_ms']), fmt(w['armed_max_ms']),
        fmt(w['copy_read_p50_ms']), fmt(w['copy_read_p99_ms']),
        fmt(w['copy_read_max_ms']), fmt(w['agent_p50_ms']),
        fmt(w['agent_max_ms']), fmt1(w['etcd_to_view_p50_ms']),
        fmt1(w['etcd_to_view_p99_ms']), fmt1(w['etcd_to_view_max_ms']),
        w['not_armed'], w['no_copy_read'], w['before_t0']))
if json_out:
    json.dump(rows, open(json_out, 'w'), indent=1)
PYEOF
exit "$failed"
