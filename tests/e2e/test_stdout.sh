#!/usr/bin/env bash
# test_stdout.sh - a command whose result goes to stdout says so when it
# did not get there: `report --json`, `replay --json`, `ring lookup`,
# `ring get --json` and `fleet --json` with stdout on /dev/full (ENOSPC)
# exit 1 with "agent: the output on stdout is incomplete..." on stderr.
# A closed pipe: with SIGPIPE ignored (inherited, as from a Python parent
# or a supervisor) the EPIPE is the same failure, exit 1 and the message;
# with SIGPIPE at its default the kernel ends the command by it (exit
# 128+13 in a shell), the Unix way `agent ... | head` stays quiet. Each
# command's control is the same run into a file: exit 0 and whole output,
# so a check that failed every run could not pass.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init stdout
e2e_net_up

ETCD_PID=
stdout_cleanup() {
	local rc=$?
	[ -n "$ETCD_PID" ] && ks_stop_pid "$ETCD_PID" TERM 5
	(exit "$rc")
	e2e_cleanup
}
trap stdout_cleanup EXIT

MSG='^agent: the output on stdout is incomplete'

# expect_full NAME ARGS...: `ARGS >/dev/full` exits 1 with the message.
expect_full() {
	local name=$1 rc
	shift
	"$@" >/dev/full 2>"$E2E_TMP/$name.err"
	rc=$?
	if [ "$rc" -ne 1 ]; then
		fail "$name" "exit $rc with stdout on /dev/full, want 1: $(tail -c 300 "$E2E_TMP/$name.err")"
	elif ! grep -q "$MSG" "$E2E_TMP/$name.err"; then
		fail "$name" "no 'output on stdout is incomplete' line: $(tail -c 300 "$E2E_TMP/$name.err")"
	else
		pass "$name"
	fi
}

# expect_whole NAME CHECK ARGS...: the control, `ARGS >FILE` exits 0 and
# CHECK (a command reading FILE on stdin) accepts what it wrote.
expect_whole() {
	local name=$1 check=$2 rc
	shift 2
	"$@" >"$E2E_TMP/$name.out" 2>"$E2E_TMP/$name.err"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		fail "$name" "exit $rc into a file: $(tail -c 300 "$E2E_TMP/$name.err")"
	elif ! "$check" <"$E2E_TMP/$name.out" >/dev/null 2>&1; then
		fail "$name" "the output into a file is not whole: $(head -c 200 "$E2E_TMP/$name.out")"
	elif grep -q "$MSG" "$E2E_TMP/$name.err"; then
		fail "$name" "complained of a complete output"
	else
		pass "$name"
	fi
}

json_ok() { "$PY" -c 'import json, sys; json.load(sys.stdin)'; }
line_ok() { grep -q .; }

# expect_closed_pipe NAME IGNORED ARGS...: ARGS with stdout on a pipe whose
# reader is already gone; IGNORED=1: SIGPIPE ignored, exit 1 and the
# message; IGNORED=0: the default, killed by SIGPIPE.
expect_closed_pipe() {
	local name=$1 ignored=$2 got
	shift 2
	got=$("$PY" - "$ignored" "$@" 2>&1 <<'EOF'
import os, signal, subprocess, sys
ignored = sys.argv[1] == "1"
r, w = os.pipe()
os.close(r)
# Python ignores SIGPIPE itself; restore_signals hands the child the
# default, or (False) the ignored disposition, as a supervisor might
p = subprocess.run(sys.argv[2:], stdout=w, stderr=subprocess.PIPE,
                   text=True, restore_signals=not ignored)
print("rc=%d" % p.returncode)
print(p.stderr)
EOF
	)
	if [ "$ignored" = 1 ]; then
		if [ "$(head -n 1 <<<"$got")" != rc=1 ] || ! grep -q "$MSG" <<<"$got"; then
			fail "$name" "SIGPIPE ignored: want exit 1 and the message, got: $(head -c 300 <<<"$got")"
		else
			pass "$name"
		fi
	elif [ "$(head -n 1 <<<"$got")" != rc=-13 ]; then
		fail "$name" "SIGPIPE default: want death by SIGPIPE, got: $(head -c 300 <<<"$got")"
	else
		pass "$name"
	fi
}

NS=(nsenter --net="/run/netns/$SNS" --)
SHARDS=$SADDR:$PORT,198.18.0.3:$PORT

expect_full stdout_ring_lookup_full "$AGENT" ring lookup --shards "$SHARDS" k1 k2
expect_whole stdout_ring_lookup_control line_ok "$AGENT" ring lookup --shards "$SHARDS" k1 k2

CAP=$E2E_ROOT/tests/fuzz/corpus/pcap/seed00
expect_full stdout_replay_json_full "$AGENT" replay --json "$CAP"
expect_whole stdout_replay_json_control json_ok "$AGENT" replay --json "$CAP"

if ! e2e_agent_start --sample 1; then
	fail stdout_setup "agent run did not attach"
	exit 1
fi
REPORT=("${NS[@]}" "$AGENT" report --json --iface "$SIF")
expect_full stdout_report_json_full "${REPORT[@]}"
expect_whole stdout_report_json_control json_ok "${REPORT[@]}"
expect_closed_pipe stdout_report_closed_pipe_sigpipe_ignored 1 "${REPORT[@]}"
expect_closed_pipe stdout_report_closed_pipe_sigpipe_default 0 "${REPORT[@]}"
e2e_agent_stop

# ring get and fleet read etcd: one member in the server namespace
e2e_need_etcd stdout_etcd || exit 0
URL=http://$SADDR:2379
if ! e2e_etcd_start "$SNS" stdout "$URL" 2380 >"$E2E_TMP/etcd_start.out"; then
	fail stdout_etcd_setup "$(cat "$E2E_TMP/etcd_start.out")"
	exit 1
fi
ETCD_PID=$E2E_ETCD_PID
# 10 s a call: on a loaded machine etcd's fsync alone took over the 2 s default
if ! out=$("${NS[@]}" "$AGENT" ring set --etcd "$URL" --etcd-timeout 10000 --shards "$SHARDS" 2>&1); then
	fail stdout_etcd_setup "ring set: $out"
	exit 1
fi
RING_GET=("${NS[@]}" "$AGENT" ring get --etcd "$URL" --etcd-timeout 10000 --json)
expect_full stdout_ring_get_json_full "${RING_GET[@]}"
expect_whole stdout_ring_get_json_control json_ok "${RING_GET[@]}"
FLEET=("${NS[@]}" "$AGENT" fleet --etcd "$URL" --etcd-timeout 10000 --json)
expect_full stdout_fleet_json_full "${FLEET[@]}"
expect_whole stdout_fleet_json_control json_ok "${FLEET[@]}"
exit "$E2E_FAILED"
