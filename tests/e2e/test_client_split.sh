#!/usr/bin/env bash
# test_client_split.sh - split write-hot counters through libkeysteer
# (issue 13, docs/client.md "Split counters"), on the steering topology
# (steer_topo.sh): 4 shards with an agent each (--etcd, --self), etcd in
# the client's namespace, a second client host on the bridge.
#
# 1. The fleet's pins (agent pins set) split votes:* into 8 sub-keys; the
#    agents publish the counter's hot/ entry with "subkeys":8 once their
#    datapaths see its increments.
# 2. build/tests/ks_counter on both client hosts at once: 3 writers each
#    (handles of their own) increment votes:1 through the library (on
#    client 1 every 10th operation a decrement, which a split counter
#    takes on a sub-key, never clamped at zero); on
#    client 2 they increment votes:2 too (written by that process only),
#    a reader checks every sum of votes:2 against the increments
#    acknowledged before it and sent before it ended, and a folder folds
#    every sub-key of both into their bases every 20 ms
#    (KEYSTEER_FOLD_ALL, under load). Midway the pins change K to 3, then
#    are cleared (the agents' own write-hot detection decides K from then
#    on). Each sum read back equals its start plus every acknowledged
#    increment, exactly; no sum was short or double; sub-keys were written
#    and folded; once the load stops and the key cools, a handle's reads
#    after the grace fold what is left and lower the width to 1.
# 1b. The Python adapter (ctypes over libkeysteer.so) on client 2: 20
#    increments of the split counter (each None: it went to a part) read
#    back as +100, a plain counter's values, a set of the split key refused.
# 2b. A folder that died holding the fold sequence (votes:3~ksf left odd,
#    a sub-key holding 7): reads are refused (-EBUSY) for a while, then a
#    read's fold takes the sequence over, and the counter reads 7.
# 3. Control: the same with fold=unsafe (the fold reads a sub-key, waits,
#    then stores its zero, without the fold sequence): counts must be lost
#    (the sum below start plus acknowledged) or sums seen short or double.
# Namespaces, veths, etcd, memcached and agents are this script's own, by
# PID, and removed on every exit path. About 50 s.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../../user/scripts/steer_topo.sh
. "$E2E_ROOT/user/scripts/steer_topo.sh"
e2e_init client_split

ETCD_PID=
LOAD_PID=
trap e2e_topo_etcd_cleanup EXIT

e2e_need_etcd client_split

COUNTER=$E2E_ROOT/${OUT:-build}/tests/ks_counter
if [ ! -x "$COUNTER" ]; then
	fail client_split_setup "$COUNTER is missing; run 'make all tests'"
	exit 1
fi
KEY=votes:1
CLUSTER=csplit
SECONDS_RUN=${CLIENT_SPLIT_SECONDS:-9}

if ! steer_topo_up 4 0 >"$E2E_TMP/topo.out" 2>&1; then
	fail client_split_topology "$(tail -n 3 "$E2E_TMP/topo.out")"
	exit 1
fi
CNS=$STEER_CLIENT_NS
CNS2=ks_stc2_$$
if ! steer_host_add "$CNS2" "ksc2_$$" 198.18.2.2 >>"$E2E_TMP/topo.out" 2>&1; then
	fail client_split_topology "second client: $(tail -n 3 "$E2E_TMP/topo.out")"
	exit 1
fi
URL=http://$STEER_CLIENT_ADDR:2379
if ! e2e_etcd_start "$CNS" csplit "$URL" 2380 >"$E2E_TMP/etcd_start.out"; then
	fail client_split_setup "$(cat "$E2E_TMP/etcd_start.out")"
	exit 1
fi
ETCD_PID=$E2E_ETCD_PID
# a lag bound of 2 s (+1) and a grace of 5 s keep the test short
SPEC="etcd=$URL cluster=$CLUSTER timeout_ms=1000 stale_view_ms=2000 split_grace_ms=5000"

# a fresh etcd on a loaded machine may take a while to answer its first put
for ((i = 0; i < 5; i++)); do
	ks_in_ns "$CNS" "$AGENT" ring set --etcd "$URL" --cluster "$CLUSTER" \
		--shards-file "$STEER_SHARDS_FILE" >"$E2E_TMP/ringset.out" 2>&1 && break
	sleep 1
done
if [ "$i" = 5 ]; then
	fail client_split_setup "ring set: $(cat "$E2E_TMP/ringset.out")"
	exit 1
fi
for i in 0 1 2 3; do
	if ! steer_agent_start "$i" --interval 0.5 --sample 1 \
		--etcd "$URL" --cluster "$CLUSTER" \
		--self "${STEER_SHARD_ADDR[$i]}:$STEER_PORT"; then
		fail client_split_agents "agent $i did not attach: $(head -n 3 "$STEER_TMP/agent.$i.out")"
		exit 1
	fi
done

# pins K: the fleet's pins split votes:* into K sub-keys (none: cleared)
pins() {
	if [ "$1" = none ]; then
		: >"$E2E_TMP/pins.txt"
	else
		printf 'split-prefix votes: %s\n' "$1" >"$E2E_TMP/pins.txt"
	fi
	ks_in_ns "$CNS" "$AGENT" pins set --etcd "$URL" --cluster "$CLUSTER" \
		--pins "$E2E_TMP/pins.txt" >>"$E2E_TMP/pins.out" 2>&1
}
# hot_subkeys: the subkeys of the counter's hot/ entry in etcd ("" if none)
hot_subkeys() {
	ks_in_ns "$CNS" etcdctl --endpoints "$URL" get --prefix \
		"/keysteer/$CLUSTER/hot/" --print-value-only 2>/dev/null |
		"$PY" -c 'import json, sys
for line in sys.stdin:
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if d.get("key") == sys.argv[1] and d.get("write_hot"):
        print(d.get("subkeys"))' "$KEY"
}
# counter NS NAME KEYS ARGS...: ks_counter run in NS, output in NAME.out
counter() {
	local ns=$1 name=$2 keys=$3
	shift 3
	ks_in_ns "$ns" timeout $((SECONDS_RUN + 30)) "$COUNTER" "$SPEC$EXTRA" run \
		"$keys" "$@" >"$E2E_TMP/$name.out" 2>"$E2E_TMP/$name.err"
}
field() { # NAME FIELD [KEY]: a field=value of ks_counter's output, summed
	grep "${3:+key=$3 }" "$E2E_TMP/$1.out" | grep -o "\b$2=[0-9]*" |
		cut -d= -f2 | awk '{s += $1} END {print s + 0}'
}
read_sum() { # [KEY]
	ks_in_ns "$CNS" "$COUNTER" "$SPEC$EXTRA" get "${1:-$KEY}" 2>"$E2E_TMP/get.err" |
		awk '{print $2}'
}
mc_cmd() { # KEY COMMAND: one meta command to KEY's owner, its reply lines
	local owner
	owner=$("$AGENT" ring lookup --shards-file "$STEER_SHARDS_FILE" "$1" | awk '{print $2}')
	ks_in_ns "$CNS" "$PY" - "${STEER_SHARD_ADDR[owner]}" "$2" <<'PYEOF'
import socket, sys, time
s = socket.create_connection((sys.argv[1], 11211), timeout=2)
s.sendall(sys.argv[2].encode().decode("unicode_escape").encode() + b"mn\r\n")
r = b""
while not r.endswith(b"MN\r\n"):
    r += s.recv(4096)
print(r.decode().replace("\r\n", " "))
PYEOF
}
# expect NAME TEXT PATTERN: pass when TEXT matches PATTERN, else fail with it
expect() {
	if grep -q -- "$3" <<<"$2"; then
		pass "$1"
	else
		fail "$1" "$2"
	fi
}
# pins_applied: 0 once every agent has logged the pins of the revision the
# last 'pins set' wrote ("pins from etcd KEY revision R: N rules"), 1 if
# one has not within 30 s (a guard for a loaded machine, not a property)
pins_applied() {
	local rev i a
	rev=$(awk '$1 == "revision" {r = $2} END {print r}' "$E2E_TMP/pins.out")
	[ -n "$rev" ] || return 1
	for a in 0 1 2 3; do
		e2e_wait_line "$STEER_TMP/agent.$a.out" "pins from etcd .* revision $rev: " \
			"${STEER_AGENT_PIDS[a]}" 300 || return 1
	done
}
wait_k() { # K: 0 once the counter's hot/ entry says K sub-keys (60 s a guard)
	local t0=$SECONDS
	while [ $((SECONDS - t0)) -lt 60 ]; do
		[ "$(hot_subkeys)" = "$1" ] && return 0
		sleep 0.25 # a poll's step
	done
	return 1
}

# --- 1. the fleet splits the counter ------------------------------------------
EXTRA=
pins 8
# written to until the fleet publishes it split (3 s of writes at a time,
# again while it has not: a loaded agent may take more intervals to see
# them), 60 s a guard
counter "$CNS" warm "$KEY:1" --writers 2 --seconds 3 &
WARM=$!
K='' t0=$SECONDS
while :; do
	K=$(hot_subkeys)
	[ "$K" = 8 ] && break
	[ $((SECONDS - t0)) -lt 60 ] || break
	if ! kill -0 "$WARM" 2>/dev/null; then
		wait "$WARM"
		counter "$CNS" warm "$KEY:1" --writers 2 --seconds 3 &
		WARM=$!
	fi
	sleep 0.25 # a poll's step
done
wait "$WARM"
if [ "$K" = 8 ]; then
	pass client_split_fleet_publishes_subkeys
else
	fail client_split_fleet_publishes_subkeys "hot/ entry subkeys '$K', want 8: $(tail -n 2 "$E2E_TMP/pins.out")"
	exit 1
fi

# --- 1b. the Python adapter: the same C code through ctypes ------------------
ks_in_ns "$CNS2" env KEYSTEER_LIB="$E2E_ROOT/${OUT:-build}/libkeysteer.so" \
	PYTHONPATH="$E2E_ROOT/user/client/python" "$PY" - "$SPEC" "$KEY" \
	>"$E2E_TMP/py.out" 2>&1 <<'PYEOF'
import errno, sys
from keysteer_client import Client, KeysteerError
spec, key = sys.argv[1], sys.argv[2]
with Client(spec) as c:
    before = c.counter(key)
    split = [c.incr(key, 5) for _ in range(20)]
    after = c.counter(key)
    plain = [c.incr("plain:py", 3), c.incr("plain:py", 2), c.decr("plain:py", 10)]
    try:
        c.set(key, b"0")
        refused = "set taken"
    except KeysteerError as e:
        refused = "refused" if e.errno == errno.EBUSY else "errno %d" % e.errno
    st = c.stats()
    print("split_none=%d sum_ok=%d plain=%s set=%s subkey_writes=%d" % (
        split.count(None), after - before == 100, ",".join(map(str, plain)),
        refused, st["subkey_writes"]))
PYEOF
PYOUT=$(cat "$E2E_TMP/py.out")
note "python: $PYOUT"
# plain:py is created at 3, then 5, then clamps at 0 (a fresh key each run:
# the test's own memcacheds)
expect client_split_python_adapter "$PYOUT" \
	'split_none=20 sum_ok=1 plain=3,5,0 set=refused subkey_writes=[1-9]'

# run NAME: both client hosts at once for SECONDS_RUN s, K 8 -> 3 -> cooled.
# The counters start once every agent has the pins (K 8). The two pin
# changes are spread over the run, a third of it apart: a pace that puts
# each K under load for a while, not a wait; what each must have done is
# checked by its event (wait_k 3) and by the counts after the run.
run() {
	local name=$1 p1 p2 half=$((SECONDS_RUN / 3))
	pins 8
	pins_applied ||
		note "not every agent logged the pins of $(tail -n 1 "$E2E_TMP/pins.out") within 30 s"
	counter "$CNS" "$name.1" "$KEY:1" --writers 3 --seconds "$SECONDS_RUN" \
		--decr-every 10 &
	p1=$!
	counter "$CNS2" "$name.2" "$KEY:1,votes:2:1" --writers 3 --readers 1 \
		--bound-key votes:2 --seconds "$SECONDS_RUN" \
		--fold-all-ms "${FOLD_MS:-20}" &
	p2=$!
	sleep "$half" # the pace: K 8 under load for a third of the run
	pins 3
	K3=
	wait_k 3 && K3=3
	sleep "$half" # the pace: K 3 under load for the next third
	pins none
	wait "$p1" "$p2"
}

# --- 2. safe folds, K changes, cooling ----------------------------------------
START=$(read_sum)
START2=$(read_sum votes:2)
run safe
cat "$E2E_TMP/safe.1.out" "$E2E_TMP/safe.2.out" >"$E2E_TMP/safe.out"
ACKED=$(($(field safe acked "$KEY") - $(field safe decr_acked "$KEY")))
DECRS=$(field safe decr_acked "$KEY")
UNC=$(field safe uncertain)
ACKED2=$(field safe acked votes:2)
FINAL=$(read_sum)
FINAL2=$(read_sum votes:2)
K_AUTO=$(hot_subkeys)
note "safe: $KEY start $START, acked $ACKED net of $DECRS decrements (uncertain $UNC), read back $FINAL; votes:2 $START2 + $ACKED2 -> $FINAL2; K 8 -> ${K3:-?} -> ${K_AUTO:-none} (the agents' own); $(tail -n 1 "$E2E_TMP/safe.2.out")"
if [ -n "$START" ] && [ -n "$FINAL" ] && [ "$ACKED" -gt 1000 ] &&
	[ "$FINAL" -ge $((START + ACKED - UNC)) ] && [ "$FINAL" -le $((START + ACKED + UNC)) ] &&
	[ "$DECRS" -gt 100 ] && [ -n "$FINAL2" ] && [ "$ACKED2" -gt 100 ] &&
	[ "$FINAL2" -ge $((START2 + ACKED2)) ] && [ "$FINAL2" -le $((START2 + ACKED2 + UNC)) ] &&
	[ "$(field safe errors)" = 0 ]; then
	pass client_split_sum_equals_acknowledged
else
	fail client_split_sum_equals_acknowledged "$START + $ACKED (uncertain $UNC) -> $FINAL, $START2 + $ACKED2 -> $FINAL2; errors $(field safe errors): $(grep first_error "$E2E_TMP"/safe.*.out | head -n 1)"
fi
if [ "$(field safe short)" = 0 ] && [ "$(field safe double)" = 0 ] &&
	[ "$(field safe reads)" -gt 50 ] && [ "$(field safe read_errors)" = 0 ]; then
	pass client_split_concurrent_sums_never_short_or_double
else
	fail client_split_concurrent_sums_never_short_or_double "reads $(field safe reads), short $(field safe short), double $(field safe double), errors $(field safe read_errors)"
fi
if [ "$(field safe subkey_writes)" -gt 100 ] && [ "$(field safe folded)" -gt 10 ] &&
	[ "${K3:-}" = 3 ]; then
	pass client_split_subkeys_written_and_folded
else
	fail client_split_subkeys_written_and_folded "sub-key writes $(field safe subkey_writes), folded $(field safe folded), K after the change '${K3:-}'"
fi

# the load is over: the key cools; one handle's reads, past the grace,
# fold what is left and lower the width
ks_in_ns "$CNS" "$COUNTER" "$SPEC" watch "$KEY" 14 >"$E2E_TMP/watch.out" 2>&1
AFTER=$(awk '{print $2}' "$E2E_TMP/watch.out")
W=$(mc_cmd "$KEY~ksw" "mg $KEY~ksw v\\r\\n")
if [ "$AFTER" = "$FINAL" ] && grep -Eq '^(VA [0-9]+ 1 |EN )' <<<"$W"; then
	pass client_split_cooled_counter_folds_back
else
	fail client_split_cooled_counter_folds_back "after the grace: sum $AFTER (was $FINAL), width '$W', want 1; hot/ subkeys now '$(hot_subkeys)'; $(cat "$E2E_TMP/watch.out")"
fi

# --- 2b. a fold that died mid-way is taken over --------------------------------
mc_cmd votes:3~ksf 'ms votes:3~ksf 1 T0\r\n1\r\n' >/dev/null
mc_cmd votes:3~ksw 'ms votes:3~ksw 1 T0\r\n2\r\n' >/dev/null
mc_cmd votes:3~ks1 'ms votes:3~ks1 19 T0\r\n9223372036854775815\r\n' >/dev/null
ks_in_ns "$CNS" "$COUNTER" "$SPEC timeout_ms=300" watch votes:3 9 >"$E2E_TMP/stuck.out" 2>&1
STUCK=$(cat "$E2E_TMP/stuck.out")
note "a dead folder's sequence: $STUCK; sequence now $(mc_cmd votes:3~ksf 'mg votes:3~ksf v\r\n')"
expect client_split_dead_folder_taken_over "$STUCK" \
	'^votes:3 7 folded=1 busy=[1-9][0-9]* ok=1'

# --- 3. control: a fold that reads, then resets --------------------------------
# fold=unsafe is a test-only word: these handles alone get the variable
EXTRA=" fold=unsafe"
FOLD_MS=5
START=$(KEYSTEER_TEST_SWITCHES=1 read_sum)
KEYSTEER_TEST_SWITCHES=1 run unsafe
cat "$E2E_TMP/unsafe.1.out" "$E2E_TMP/unsafe.2.out" >"$E2E_TMP/unsafe.out"
ACKED=$(($(field unsafe acked "$KEY") - $(field unsafe decr_acked "$KEY")))
FINAL=$(KEYSTEER_TEST_SWITCHES=1 read_sum)
BAD=$(($(field unsafe short) + $(field unsafe double)))
note "control: start $START, acked $ACKED, read back $FINAL, $BAD sums short or double"
if [ -n "$FINAL" ] && [ "$ACKED" -gt 1000 ] &&
	{ [ "$FINAL" -lt $((START + ACKED)) ] || [ "$BAD" -gt 0 ]; }; then
	pass client_split_control_unsafe_fold_loses_counts
else
	fail client_split_control_unsafe_fold_loses_counts "the broken fold lost nothing: start $START + acked $ACKED = read back $FINAL, $BAD bad sums"
fi
