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
	# write now and then; freshness does not depend on it. etcd 10 s per
	# call: at load 36 etcd did not answer an open's one read within the
	# default 2 s ("did not answer within 2000 ms": every open of a run
	# failed), nor start a watch within it; no check here is about etcd's
	# speed (a dead etcd breaks the connection, seen at once)
	SPEC="etcd=$URL cluster=$CLUSTER timeout_ms=1000 etcd_timeout_ms=10000"
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
			# the end of its output says why (the start is etcd's)
			fail "${name}_agents" "agent $i ($*) did not attach (${STEER_AGENT_RC:+exit $STEER_AGENT_RC}${STEER_AGENT_RC:-still running, no 'attached' line}): $(grep -v '^libbpf' "$STEER_TMP/agent.$i.out" | tail -n 4)"
			return 1
		fi
	done
}

# client_wait_armed EXAMPLE: 0 once a new handle on the fleet sees a key's
# entry armed (the library's own view, from etcd), within 60 s (a guard
# against a run that never arms, with room for a loaded 2-core machine);
# ARMED_AFTER the ms it took, else ARMED_WHY what it saw.
client_wait_armed() {
	local i out rc
	for ((i = 0; i < 240; i++)); do
		out=$(ks_in_ns "$CNS2" "$1" "$SPEC" stats 2>&1)
		rc=$?
		# a handle that crashes (at its close too) is never a retry
		if [ "$rc" -ge 128 ]; then
			ARMED_WHY="$(basename "$1") died of signal $((rc - 128)): $out"
			return 1
		fi
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
# UDP gets with KEY at half of them in the background (LOAD_PID) until the
# script's cleanup (e2e_topo_etcd_cleanup) stops it. SECONDS is what the
# script needs quiet; the load's own bound is 4 times that, since a loaded
# 2-core machine stretches the script's steps (a load that ended on its
# own before the last agent restart left nothing to arm the key again),
# and run.sh's time limit stops the script long before.
client_hot_load() {
	local name=$1 example=$2 load=$3 key=$4
	if ! ks_in_ns "$CNS" "$example" "$SPEC" set "$key" "$5" >"$E2E_TMP/set0.out" 2>&1; then
		fail "${name}_setup" "the first set through the library: $(cat "$E2E_TMP/set0.out")"
		return 1
	fi
	ks_in_ns_bg "$CNS" "$load" --shards-file "$STEER_SHARDS_FILE" \
		--proto udp --keys 200 --zipf 0.5 --flash "$key:0.5" --mix get=100 \
		--duration "$(($6 * 4))" --rate 1000 --json \
		</dev/null >"$E2E_TMP/load.json" 2>"$E2E_TMP/load.err"
	LOAD_PID=$KS_BG_PID
}

# client_fresh NAME WRITE_INTERVAL_MS [ARGS...]: $FRESH (ks_client_fresh)
# on SPEC (FRESH_SPEC when set) and KEY for DURATION s, the writer on
# client 1, 2 readers on client 2; the document in $E2E_TMP/NAME.json, its
# exit status in NAME.rc. The run stops itself DURATION s after it starts,
# once its last calls return (each bounded by timeout_ms); what is waited
# for is that exit. With FRESH_MAX_DURATION set, ARGS may ask the run to
# go on past DURATION until copies were read (--until-copy-reads,
# --until-stale-copies), up to that many seconds, both counted from the
# moment every handle is open (--from-open); the guard grows by as much. The guard against a hang has room for a loaded 2-core
# machine (DURATION + 20 s killed a run there, leaving "no document"): past
# it, the threads' stacks go to NAME.err, so a hang says where it was, and
# the status is 124 (as timeout(1)'s).
client_fresh() {
	local name=$1 wi=$2 pid rc guard max=${FRESH_MAX_DURATION:-$DURATION}
	shift 2
	guard=$((SECONDS + 2 * DURATION + max + 60))
	ks_in_ns_bg "$CNS" "$FRESH" --spec "${FRESH_SPEC:-$SPEC}" \
		--key "$KEY" --writer-ns "$CNS" --reader-ns "$CNS2" \
		--duration "$DURATION" ${FRESH_MAX_DURATION:+--max-duration "$max" --from-open} --readers 2 --rate 1500 \
		--write-interval-ms "$wi" "$@" >"$E2E_TMP/$name.json" 2>"$E2E_TMP/$name.err"
	pid=$KS_BG_PID
	while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$guard" ]; do
		sleep 0.2
	done
	if kill -0 "$pid" 2>/dev/null; then
		{
			echo "ks_client_fresh: still running $((2 * DURATION + max + 60)) s after its start; its threads:"
			if command -v gdb >/dev/null; then
				gdb -p "$pid" -batch -ex "thread apply all bt" 2>&1 | grep -E '^(Thread|#)'
			else
				grep -H . /proc/"$pid"/task/*/wchan
			fi
		} >>"$E2E_TMP/$name.err"
		kill -KILL "$pid"
		wait "$pid" 2>/dev/null
		rc=124
	else
		wait "$pid"
		rc=$?
	fi
	echo "$rc" >"$E2E_TMP/$name.rc"
}

# client_fresh_check NAME WANT [MIN_COPY_PERMILLE [MIN_WRITES
# [MIN_COPY_READS]]]: what client_fresh's run NAME shows: "OK", or why not
# (one line). WANT clean: no stale read, at most 1% of requests failed, at
# least MIN_WRITES writes (100), and reads from copies at least
# MIN_COPY_PERMILLE per mille of the reads and at least MIN_COPY_READS
# (default 1 read): a run that hardly read a copy proves nothing about
# copies. A count (with --until-copy-reads the same N) is an event a run
# can wait for; a share is a rate over a time the test does not control. WANT stale (a control): the run whole (a
# document, exit 1, at most 1% failed, MIN_WRITES writes) and the
# violation itself, stale reads served by copies; a crash, a timeout or
# failed requests are not a violation.
client_fresh_check() {
	"$PY" - "$E2E_TMP/$1.json" "$(cat "$E2E_TMP/$1.rc" 2>/dev/null)" "$2" "${3:-0}" "${4:-100}" "${5:-1}" <<'PYEOF'
import json, sys
path, rc, want = sys.argv[1], sys.argv[2], sys.argv[3]
permille, min_writes, min_copies = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
try:
    d = json.load(open(path))
except (OSError, ValueError):
    print("no document (exit %s)" % rc); sys.exit()
why = []
# A request that failed (its timeout_ms passed on a loaded machine) is
# not acknowledged, so it hides no stale read; more than 1% of either
# kind failing is a run too broken to judge.
if d["read_errors"] * 100 > d["reads"] or d["write_errors"] * 100 > d["writes"]:
    why.append("%d of %d reads and %d of %d writes failed (%s)" % (d["read_errors"], d["reads"], d["write_errors"], d["writes"], "; ".join("%s: %s" % (k, d.get(k)) for k in ("read_error", "write_error") if d.get(k))))
if d["writes"] < min_writes:
    why.append("only %d writes, want %d" % (d["writes"], min_writes))
if want == "clean":
    # exit 3: no stale read, some request failed (judged above)
    if rc not in ("0", "3") or d["stale_reads"]:
        why.append("exit %s, %d stale reads" % (rc, d["stale_reads"]))
    least = max(min_copies, d["reads"] * permille // 1000)
    if d["copy_reads"] < least:
        why.append("%d of %d reads from copies in %s s, want at least %d" % (d["copy_reads"], d["reads"], d.get("seconds", "?"), least))
else:
    if rc != "1":
        why.append("exit %s, want 1 (stale reads)" % rc)
    if not d["stale_from_copies"]:
        why.append("no stale read from a copy (%d stale in all): the control shows nothing" % d["stale_reads"])
print("; ".join(why) or "OK")
PYEOF
}

# client_fresh_expect NAME WANT TEST [MIN_COPY_PERMILLE [MIN_WRITES
# [MIN_COPY_READS]]]: TEST passes when client_fresh_check says OK, else
# fails with why and the caller's summary NAME.
client_fresh_expect() {
	local why
	why=$(client_fresh_check "$1" "$2" "${4:-0}" "${5:-100}" "${6:-1}")
	if [ "$why" = OK ]; then
		pass "$3"
	else
		# the end of stderr: a hang's thread stacks are appended there,
		# after the start's warnings
		fail "$3" "${why:-the check crashed}: $(summary "$1") $(tail -c 1500 "$E2E_TMP/$1.err" | tr '\n' '|')"
	fi
}
