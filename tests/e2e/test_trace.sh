#!/usr/bin/env bash
# test_trace.sh - `agent trace` prints the sampled requests a real client
# sends, over TCP and UDP, as "<class> <op> <key> <client ip>:<port> <proto>",
# shows only hashes with --hash-only, and switches tracing off when it exits.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init trace
e2e_net_up

if ! e2e_agent_start --sample 1 --interval 1; then
	fail trace_setup "the agent did not attach"
	exit 1
fi

# start_trace OUT ARGS...: `agent trace` in the background, once it has
# switched tracing on (it says so on stderr). Sets TRACE_PID.
start_trace() {
	local out=$1 i
	shift
	ks_in_ns_bg "$SNS" "$AGENT" trace --iface "$SIF" "$@" \
		</dev/null >"$out" 2>"$out.err"
	TRACE_PID=$KS_BG_PID
	# its start line (60 s a guard: a start at load took seconds)
	e2e_wait_line "$out.err" "tracing $SIF" "$TRACE_PID"
}

# TRACE_S: the traces' --duration, a guard: --count ends them once the
# clients' requests are seen. At 20 s a whole run at load 15-19 saw the
# trace end before the set and the UDP gets were sent (three client starts
# took that long), so it is far longer than any such start.
TRACE_S=120
# wait_trace NAME: trace must exit 0 by itself (--count or --duration).
wait_trace() {
	local i rc
	for ((i = 0; i < (TRACE_S + 30) * 10; i++)); do
		kill -0 "$TRACE_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$TRACE_PID" 2>/dev/null; then
		ks_stop_pid "$TRACE_PID" TERM 3
		fail "$1" "agent trace did not stop after --count or --duration"
		return 1
	fi
	wait "$TRACE_PID"
	rc=$?
	[ "$rc" -eq 0 ] || fail "$1" "agent trace exited $rc"
	return "$rc"
}

trace_flag() {
	bpftool -j map lookup pinned "$PIN_ROOT/$SIF/ks_config" key 0 0 0 0 2>/dev/null |
		"$PY" -c 'import json,sys; print(json.load(sys.stdin)["formatted"]["value"]["trace"])' 2>/dev/null
}

out=$E2E_TMP/trace
if ! start_trace "$out" --count 7 --duration "$TRACE_S"; then
	fail trace_start "agent trace did not start: $(head -c 300 "$out.err")"
	exit 1
fi
[ "$(trace_flag)" = 1 ] && note "ks_config.trace is 1 while tracing"
if ! e2e_client "$E2E_DIR/ks_send.py" --server "$SADDR" gets trace:tcp: 3 ||
	! e2e_client "$E2E_DIR/ks_send.py" --server "$SADDR" set trace:set:1 ||
	! e2e_client "$E2E_DIR/ks_send.py" --server "$SADDR" udp-gets trace:udp: 3; then
	fail trace_traffic "memcached did not answer the client"
fi
if wait_trace trace_exit; then
	pass trace_exit
fi
sed 's/^/  trace: /' "$out"

ip='198\.18\.0\.1:[0-9]+'
# expect_lines NAME COUNT REGEX: the trace holds exactly COUNT such lines.
expect_lines() {
	local n
	n=$(grep -cE "$3" "$out")
	if [ "$n" -eq "$2" ]; then
		pass "$1"
	else
		fail "$1" "want $2 line(s) matching '$3', got $n"
	fi
}
expect_lines trace_tcp_gets 3 "^read get trace:tcp:[0-2] $ip tcp$"
expect_lines trace_tcp_set 1 "^write set trace:set:1 $ip tcp$"
expect_lines trace_udp_gets 3 "^read get trace:udp:[0-2] $ip udp$"

flag=$(trace_flag)
if [ -z "$flag" ]; then
	fail trace_switched_off "cannot read ks_config with bpftool (make deps: bpftool)"
elif [ "$flag" = 0 ]; then
	pass trace_switched_off
else
	fail trace_switched_off "ks_config.trace is still $flag after agent trace exited"
fi

out=$E2E_TMP/trace_hash
if start_trace "$out" --count 2 --hash-only --duration "$TRACE_S"; then
	e2e_client "$E2E_DIR/ks_send.py" --server "$SADDR" gets trace:hash: 2 ||
		fail trace_traffic "memcached did not answer the client"
	wait_trace trace_hash_only_exit
	sed 's/^/  trace --hash-only: /' "$out"
	if grep -q 'trace:hash' "$out"; then
		fail trace_hash_only "key bytes printed with --hash-only"
	elif [ "$(grep -cE "^read get 0x[0-9a-f]{16} $ip tcp$" "$out")" -eq 2 ]; then
		pass trace_hash_only
	else
		fail trace_hash_only "want 2 lines 'read get 0x<16 hex digits> $CADDR:PORT tcp'"
	fi
else
	fail trace_hash_only "agent trace --hash-only did not start: $(head -c 300 "$out.err")"
fi

e2e_agent_stop INT
e2e_expect_clean trace_detached
