# shellcheck shell=bash
# lib.sh - shared set-up, checks and cleanup for the e2e tests. Source it
# from a tests/e2e/test_*.sh script run as root from anywhere.
#
# e2e_init NAME          names, temp folder, traps (call first)
# e2e_net_up             client and server namespaces joined by a veth pair,
#                        memcached (TCP+UDP) on the server side
# e2e_agent_start ARGS   `agent run --iface $SIF ARGS` in the server
#                        namespace, in the background; waits until attached
# e2e_agent_stop [SIG]   stops it (SIGINT by default) and sets E2E_AGENT_RC
# e2e_agent ARGS         any other agent command, in the server namespace
# e2e_mc_stats ADDR PORT NAME...
#                        memcached's stats values, from the client side
# e2e_agent_stop_clean PREFIX
#                        stops it; PASS PREFIX_agent_exit (exit 0) and
#                        PREFIX_clean (nothing left on $SIF)
# e2e_prefix P           the namespaces and veths named P_... (not ks_...)
# e2e_need_load NAME     LOAD=build/ks_load, or FAIL NAME and exit
# e2e_side_by_side FLAG VAR SCRIPT ITEM...
#                        the script again once per ITEM, all at once, each
#                        its own set-up (e2e_children_stop on exit)
# e2e_report_json NAME FILE
#                        `agent report --json` into FILE, schema-checked
# e2e_expect_refused NAME PATTERN ARGS
#                        `agent run --iface $SIF ARGS` exits 2 with one
#                        stderr line matching PATTERN, nothing attached
# e2e_require NAME WHY TOOL...
#                        FAIL NAME and exit 1 unless every TOOL is on PATH
#                        (WHY: where they come from, e.g. "make deps:
#                        memcached"); a missing package is never a SKIP
# pass/fail/skip NAME    the result lines tests/run.sh counts
#
# E2E_KEEP=1 keeps the temp folder (agent output, polls, load summaries).
# Everything is named with the script's PID, so two scripts never share
# anything, and everything is removed on every exit path by the EXIT trap.

# A pipeline fails when any command in it fails, not only the last: `if !
# load | sed` must test the load. So a check never pipes into `grep -q` or
# `head` (their early exit kills the writer with SIGPIPE and fails the
# pipeline): it greps the output whole, `grep -q P <<<"$(cmd)"`.
set -o pipefail

E2E_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../../user/scripts/netns.sh
. "$E2E_ROOT/user/scripts/netns.sh"

AGENT=$E2E_ROOT/${OUT:-build}/agent
PY=/usr/bin/python3 # Debian's, which has pymemcache
# shellcheck disable=SC2034 # used by the test scripts
E2E_DIR=$E2E_ROOT/tests/e2e
BPFFS=/sys/fs/bpf
PIN_ROOT=$BPFFS/keysteer

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; E2E_FAILED=1; }
skip() { echo "SKIP $1: $2"; }
note() { echo "  $*"; }

e2e_require() {
	local name=$1 why=$2 tool
	shift 2
	for tool in "$@"; do
		if ! command -v "$tool" >/dev/null; then
			fail "$name" "$tool is not installed ($why)"
			exit 1
		fi
	done
}

e2e_init() {
	E2E_NAME=$1
	E2E_FAILED=0
	CNS=ks_cli_$$
	SNS=ks_srv_$$
	CIF=ks_c$$
	SIF=ks_s$$
	CADDR=198.18.0.1
	SADDR=198.18.0.2
	PORT=11211
	E2E_AGENT_PID=
	KS_MEMCACHED_PID=
	E2E_POLLER_PID=
	E2E_TMP=$(mktemp -d "/tmp/ks_e2e_${E2E_NAME}.XXXXXX")
	# etcd's data (KS_ETCD_DATA: ks_start_etcd, etcd_cluster.sh) on
	# tmpfs: its WAL fsyncs on the shared disk took 2 to 43 s while other
	# work wrote to it (etcd's "wal: sync duration of 43.120664081s"), and
	# etcd serves nothing while it waits, so every etcd deadline of a test
	# failed; the tests are about keysteer, not the disk under etcd. Logs
	# stay in E2E_TMP. Where /dev/shm cannot be used, E2E_TMP.
	KS_ETCD_DATA=$(mktemp -d "/dev/shm/ks_e2e_etcd_${E2E_NAME}.XXXXXX" 2>/dev/null) ||
		KS_ETCD_DATA=$E2E_TMP
	# The agent mounts bpffs when it is missing; note whether it was there
	# so cleanup can leave the machine as it found it.
	E2E_BPFFS_BEFORE=0
	e2e_bpffs_mounted && E2E_BPFFS_BEFORE=1
	trap e2e_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
	if [ "$(id -u)" -ne 0 ]; then
		skip "$E2E_NAME" "needs root (namespaces, BPF)"
		exit 0
	fi
	if [ ! -x "$AGENT" ]; then
		fail "$E2E_NAME" "$AGENT is missing; run 'make' first"
		exit 1
	fi
}

# e2e_prefix P: the namespaces and the veth pair named P_cli_PID,
# P_srv_PID, P_cPID and P_sPID instead of ks_...: a test's own prefix, so
# that its leftovers, if any, are told from other tests' (call after
# e2e_init, before e2e_net_up).
e2e_prefix() {
	CNS=$1_cli_$$
	SNS=$1_srv_$$
	CIF=$1_c$$
	SIF=$1_s$$
}

# e2e_children_stop PID...: the script's own copies, run side by side
# (test_clients.sh's passes, test_steer_housekeep.sh's cases: each with
# its own set-up and EXIT trap), ended on the caller's exit. A TERM or INT
# sent to the process group (timeout(1)'s, a terminal's) reached them
# too, and a second one would cut their cleanup short (it resets the
# traps): so each is first waited for, 90 s at most, and only then
# signalled (the caller ended for another reason).
e2e_children_stop() {
	local pid i
	for pid in "$@"; do
		for ((i = 0; i < 900; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		ks_stop_pid "$pid" TERM 60
	done
}

# e2e_side_by_side FLAG VAR SCRIPT ITEM...: SCRIPT (the caller itself)
# again once per ITEM, all at once, each with FLAG=1 and VAR=ITEM in its
# environment and its own set-up, EXIT trap and output
# ($E2E_TMP/copy.ITEM.out); waits for all of them, then prints their
# outputs in ITEM order; E2E_FAILED=1 when one exited non-zero. The
# caller's EXIT trap becomes e2e_children_stop's, then e2e_cleanup.
e2e_side_by_side_exit() {
	local rc=$?
	e2e_children_stop "${E2E_COPIES[@]}"
	(exit "$rc")
	e2e_cleanup
}
e2e_side_by_side() {
	local flag=$1 var=$2 script=$3 item i=0
	shift 3
	E2E_COPIES=()
	trap e2e_side_by_side_exit EXIT
	for item in "$@"; do
		env "$flag=1" "$var=$item" bash "$script" >"$E2E_TMP/copy.$item.out" 2>&1 &
		E2E_COPIES+=("$!")
	done
	for item in "$@"; do
		if ! wait "${E2E_COPIES[i]}"; then
			E2E_FAILED=1
			note "$var=$item: its process exited non-zero"
		fi
		i=$((i + 1))
	done
	E2E_COPIES=()
	for item in "$@"; do
		cat "$E2E_TMP/copy.$item.out"
	done
}

# e2e_need_load NAME: LOAD set to build/ks_load; FAIL NAME and exit 1 when
# it is not built.
e2e_need_load() {
	LOAD=$E2E_ROOT/${OUT:-build}/ks_load
	if [ ! -x "$LOAD" ]; then
		fail "$1" "$LOAD is missing; run 'make' first"
		exit 1
	fi
}

# e2e_loads_stop: SIGINT each ks_load of LOAD_PIDS (it finishes its
# requests in flight and prints its JSON) and wait; 0 when every one
# exited 0. LOAD_PIDS is emptied.
e2e_loads_stop() {
	local p rc=0
	for p in "${LOAD_PIDS[@]}"; do
		kill -INT "$p" 2>/dev/null
	done
	for p in "${LOAD_PIDS[@]}"; do
		wait "$p" || rc=1
	done
	LOAD_PIDS=()
	return "$rc"
}

# e2e_load_gets NAME: "ops refused errors timeouts steered" of the gets
# in ks_load's JSON $E2E_TMP/NAME.json
e2e_load_gets() {
	"$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
g = [o for o in d["ops"] if o["op"] == "get"][0]
print(g["ops"], g["refused"], g["errors"], g["timeouts"], d.get("steered", 0))
' "$E2E_TMP/$1.json"
}

# e2e_report_json NAME FILE: `agent report --iface $SIF --json` into FILE,
# valid against docs/report.schema.json; 1 with FAIL NAME (the report's
# head and what the schema check said) if not.
e2e_report_json() {
	local name=$1 file=$2
	if e2e_agent report --iface "$SIF" --json >"$file" 2>"$file.err" &&
		"$PY" "$E2E_DIR/ks_json_schema.py" "$E2E_ROOT/docs/report.schema.json" \
			"$file" >"$file.schema" 2>&1; then
		return 0
	fi
	fail "$name" "$(head -c 600 "$file" "$file.err" "$file.schema" 2>/dev/null)"
	return 1
}

# e2e_wait_line FILE PATTERN PID [TENTHS]: 0 once FILE has a line matching
# PATTERN (grep -E), 1 if PID exits first or the guard passes: TENTHS
# tenths of a second, 60 s at least, by the clock. The guard is reached
# only when the line never comes: the lines waited for are the agent's
# (an interval, a reload, an attach), and at load 30 one agent took 47 s
# over an interval, so a guard of a few seconds failed runs with nothing
# wrong.
E2E_WAIT_MIN_S=60
e2e_wait_line() {
	local file=$1 pattern=$2 pid=$3 secs=$((${4:-0} / 10)) t0=$SECONDS
	[ "$secs" -ge "$E2E_WAIT_MIN_S" ] || secs=$E2E_WAIT_MIN_S
	while :; do
		grep -qE -- "$pattern" "$file" 2>/dev/null && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		[ $((SECONDS - t0)) -lt "$secs" ] || return 1
		sleep 0.1 # a poll's step
	done
}

# e2e_wait_intervals N [FILE] [PID]: 0 once an agent run with -v has logged
# N more intervals than it had when called (its "keysteer: #SEQ ..." lines
# in FILE, $E2E_TMP/agent.out by default), 1 if PID ($E2E_AGENT_PID) exits
# first or the guard passes (60 s, and 15 s an interval past 4: an
# interval stretched to 5 to 9 s at load 43). For a check that something
# did not happen: what passes is the agent's intervals, not a guessed time.
e2e_wait_intervals() {
	local n=$1 file=${2:-$E2E_TMP/agent.out} pid=${3:-$E2E_AGENT_PID} seq
	seq=$(sed -n 's/^keysteer: #\([0-9]*\) .*/\1/p' "$file" | tail -n 1)
	e2e_wait_line "$file" "^keysteer: #$((${seq:--1} + n)) " "$pid" $((n * 150))
}

# e2e_watch_seq FILE: the newest interval in a `report --watch --json`
# file so far (0 before the first)
e2e_watch_seq() {
	"$PY" -c 'import json,sys
s = 0
for l in open(sys.argv[1]):
    try: s = max(s, json.loads(l).get("seq", 0))
    except ValueError: pass
print(s)' "$1"
}

# e2e_wait_watch_seq FILE N: 0 once an interval numbered N or later is in
# FILE (as e2e_watch_seq), 1 if the agent ($E2E_AGENT_PID) exits first or
# after 60 s (a loaded machine)
e2e_wait_watch_seq() {
	local i
	for ((i = 0; i < 600; i++)); do
		[ "$(e2e_watch_seq "$1")" -ge "$2" ] && return 0
		kill -0 "$E2E_AGENT_PID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

e2e_bpffs_mounted() {
	[ "$(stat -f -c %T "$BPFFS" 2>/dev/null)" = bpf_fs ]
}

# True while keysteer has pins for our interface.
e2e_pins_exist() {
	[ -e "$PIN_ROOT/$SIF" ]
}

# True while an XDP program is attached to our server-side veth.
e2e_xdp_attached() {
	grep -q 'prog/xdp' <<<"$(ip -n "$SNS" -d link show dev "$SIF" 2>/dev/null)"
}

# e2e_tc_left: what of keysteer's tc attachment is on our veth (a tcx
# program at ingress or egress, a tc ingress filter, the clsact qdisc),
# empty if nothing; the
# tests never add tc filters or clsact themselves unless they say so.
e2e_tc_left() {
	local left=""
	[ -n "$(ks_in_ns "$SNS" "$PY" "$E2E_DIR/ks_tcx.py" "$SIF" 2>/dev/null)" ] &&
		left="a tcx program"
	# the owner's replies (--owner-replies): any hook, tcx egress
	[ -n "$(ks_in_ns "$SNS" "$PY" "$E2E_DIR/ks_tcx.py" "$SIF" egress 2>/dev/null)" ] &&
		left="${left:+$left, }a tcx egress program"
	grep -q . <<<"$(ks_in_ns "$SNS" tc filter show dev "$SIF" ingress 2>/dev/null)" &&
		left="${left:+$left, }a tc ingress filter"
	grep -q clsact <<<"$(ks_in_ns "$SNS" tc qdisc show dev "$SIF" 2>/dev/null)" &&
		left="${left:+$left, }a clsact qdisc"
	echo "$left"
}
e2e_tc_attached() {
	[ -n "$(e2e_tc_left)" ]
}

e2e_net_up() {
	e2e_require "${E2E_NAME}_setup" "make deps: memcached" memcached
	if ! ks_pair_create "$CNS" "$SNS" "$CIF" "$SIF" "$CADDR/24" "$SADDR/24"; then
		fail "${E2E_NAME}_setup" "could not create namespaces and veth pair"
		exit 1
	fi
	if ! ks_start_memcached "$SNS" "$SADDR" "$PORT"; then
		fail "${E2E_NAME}_setup" "memcached did not start"
		exit 1
	fi
}

# Runs in the client namespace with Debian's python. The load generator and
# memcached run at nice -10: the tests compare rates with a paced load, and a
# client that other work on the machine holds up shifts requests between
# intervals (the checker leaves such intervals out; fewer of them is better).
KS_NICE=-10
# etcd at nice -10 too (ks_start_etcd, etcd_cluster.sh, the etcds of
# test_etcd_client and test_etcd_proxy): on 2 CPUs at a load average of 52
# to 70 an etcd at nice 0 went more than 5 s without serving (7.3 s once:
# no keepalive answered, watches broken), so every agent's lease expired
# and every etcd deadline of the suite was missed. What the tests check is
# what keysteer does with etcd, not etcd's own stalls under the suite's
# load; a test of etcd away stops it (SIGSTOP, SIGKILL), it does not
# starve it. A caller may still set KS_ETCD_NICE.
KS_ETCD_NICE=${KS_ETCD_NICE:--10}
e2e_client() {
	ks_in_ns "$CNS" nice -n "$KS_NICE" "$PY" "$@"
}

e2e_agent() {
	ks_in_ns "$SNS" "$AGENT" "$@"
}

# e2e_agent_start ARGS...: output goes to $E2E_TMP/agent.out. Returns 0 once
# the agent says it attached and its link is pinned, 1 if it exited or did
# not attach in 60 s (it is left running then; cleanup stops it). 60 s: an
# agent with --etcd reads etcd before it attaches, and a loaded machine's
# etcd (auth on: a bcrypt check per login) can take seconds a call; the
# wait ends at the attach, so only a failure waits that long.
# KS_AGENT_NICE (default 0): the agent's nice value, for a test whose
# subject is what the agent counts, not how soon a loaded machine runs it.
e2e_agent_start() {
	local i
	if e2e_pins_exist || e2e_xdp_attached || e2e_tc_attached; then
		note "keysteer is already on $SIF before this start"
		return 1
	fi
	ks_in_ns_bg "$SNS" nice -n "${KS_AGENT_NICE:-0}" "$AGENT" run --iface "$SIF" "$@" \
		</dev/null >"$E2E_TMP/agent.out" 2>&1
	E2E_AGENT_PID=$KS_BG_PID
	for ((i = 0; i < 600; i++)); do
		if ! kill -0 "$E2E_AGENT_PID" 2>/dev/null; then
			wait "$E2E_AGENT_PID"
			E2E_AGENT_RC=$?
			E2E_AGENT_PID=
			note "agent exited with status $E2E_AGENT_RC:"
			sed 's/^/    /' "$E2E_TMP/agent.out"
			return 1
		fi
		# a classic tc filter (no tcx) pins its state, not a link
		if { [ -e "$PIN_ROOT/$SIF/link" ] ||
			[ -e "$PIN_ROOT/$SIF/tc_filter" ]; } &&
			grep -q "attached to $SIF" "$E2E_TMP/agent.out"; then
			return 0
		fi
		sleep 0.1
	done
	note "agent did not pin its link in 10 s:"
	sed 's/^/    /' "$E2E_TMP/agent.out"
	return 1
}

# e2e_agent_stop [SIGNAL]: signal the agent and wait (60 s, then SIGKILL).
# stderr is silenced so bash's "Killed" job notice does not clutter the log.
# 60 s, not 10: the exit detaches, which waits for the rtnl lock and RCU
# grace periods, the whole machine's (agents at load 25 to 29 were
# SIGKILLed at 10 s, failing their clean-exit checks with nothing wrong); a
# stop past 10 s is noted.
e2e_agent_stop() {
	local sig=${1:-INT} t0=$SECONDS
	E2E_AGENT_RC=
	[ -n "$E2E_AGENT_PID" ] || return 0
	{
		kill -s "$sig" "$E2E_AGENT_PID"
		while kill -0 "$E2E_AGENT_PID" && [ $((SECONDS - t0)) -lt 60 ]; do
			sleep 0.1 # a poll's step
		done
		if kill -0 "$E2E_AGENT_PID"; then
			note "agent ignored SIG$sig for 60 s; killing it"
			kill -KILL "$E2E_AGENT_PID"
		elif [ $((SECONDS - t0)) -gt 10 ]; then
			note "the agent took $((SECONDS - t0)) s to exit on SIG$sig"
		fi
		wait "$E2E_AGENT_PID"
		E2E_AGENT_RC=$?
	} 2>/dev/null
	E2E_AGENT_PID=
}

# e2e_expect_refused NAME PATTERN ARGS...: agent run ARGS must exit 2 with
# one stderr line, matching "agent: PATTERN", and leave no pins and no XDP
# program.
e2e_expect_refused() {
	local name=$1 pattern=$2 rc
	shift 2
	e2e_agent run --iface "$SIF" "$@" >"$E2E_TMP/ref.out" 2>"$E2E_TMP/ref.err"
	rc=$?
	if [ "$rc" -ne 2 ]; then
		fail "$name" "exit $rc, want 2: $(head -c 300 "$E2E_TMP/ref.err")"
	elif ! grep -qE "^agent: $pattern" "$E2E_TMP/ref.err"; then
		fail "$name" "stderr does not match '$pattern': $(head -c 300 "$E2E_TMP/ref.err")"
	elif [ "$(grep -c . "$E2E_TMP/ref.err")" -ne 1 ]; then
		fail "$name" "more than one line: $(head -c 300 "$E2E_TMP/ref.err")"
	elif e2e_pins_exist || e2e_xdp_attached; then
		fail "$name" "refused but left pins or an XDP program behind"
	else
		note "$(head -n 1 "$E2E_TMP/ref.err")"
		pass "$name"
	fi
}

# e2e_expect_clean NAME: PASS if nothing of keysteer is left on our
# interface (no pins, no XDP program, no tc program, filter or clsact),
# FAIL naming what is left.
e2e_expect_clean() {
	local left="" tc
	e2e_pins_exist && left="pins in $PIN_ROOT/$SIF"
	e2e_xdp_attached && left="${left:+$left, }an XDP program on $SIF"
	tc=$(e2e_tc_left)
	[ -n "$tc" ] && left="${left:+$left, }$tc on $SIF"
	if [ -z "$left" ]; then
		pass "$1"
	else
		fail "$1" "left behind: $left"
	fi
}

# e2e_agent_stop_clean PREFIX: SIGINT the agent, then PASS PREFIX_agent_exit
# when it exited 0 and PREFIX_clean when it left nothing behind.
e2e_agent_stop_clean() {
	e2e_agent_stop INT
	if [ "$E2E_AGENT_RC" = 0 ]; then
		pass "$1_agent_exit"
	else
		fail "$1_agent_exit" "agent exited $E2E_AGENT_RC"
	fi
	e2e_expect_clean "$1_clean"
}

# e2e_mc_stats ADDR PORT NAME...: the named `stats` values of the
# memcached at ADDR:PORT, asked from the client namespace, one line,
# space-separated.
e2e_mc_stats() {
	ks_in_ns "$CNS" "$PY" -c '
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
s.sendall(b"stats\r\n")
buf = b""
while not buf.endswith(b"END\r\n"):
    d = s.recv(65536)
    if not d:
        break
    buf += d
st = dict(l.split()[1:3] for l in buf.decode().splitlines() if l.startswith("STAT "))
print(" ".join(st[n] for n in sys.argv[3:]))
' "$@"
}

# e2e_one_shard_fleet RESULT NAME PEER_PORT: the fleet of one shard that
# the libkeysteer tests start from, in namespace $CNS (created here, lo up;
# e2e_cleanup deletes it): memcached on 127.0.0.1:$MC_PORT, etcd on $URL
# (data under $E2E_TMP/NAME.*, its PID in ETCD_PID for the caller's trap,
# set even when it failed to start) and cluster $CLUSTER's ring of that
# one shard. 0, or FAIL RESULT naming the step and 1.
e2e_one_shard_fleet() {
	local out
	if ! ip netns add "$CNS" || ! ip -n "$CNS" link set lo up; then
		fail "$1" "namespace $CNS"
		return 1
	fi
	if ! ks_start_memcached "$CNS" 127.0.0.1 "$MC_PORT"; then
		fail "$1" "memcached did not start"
		return 1
	fi
	if ! e2e_etcd_start "$CNS" "$2" "$URL" "$3" >"$E2E_TMP/etcd_start.out"; then
		ETCD_PID=$E2E_ETCD_PID
		fail "$1" "$(cat "$E2E_TMP/etcd_start.out")"
		return 1
	fi
	ETCD_PID=$E2E_ETCD_PID
	if ! out=$(ks_in_ns "$CNS" "$AGENT" ring set --etcd "$URL" \
		--cluster "$CLUSTER" --shards "127.0.0.1:$MC_PORT" 2>&1); then
		fail "$1" "ring set: $out"
		return 1
	fi
}

# e2e_need_etcd TEST: returns when etcd and etcdctl are installed, else
# FAIL TEST and exit 1 (the test suite installs them: a missing one is a
# failure, not a skip).
e2e_need_etcd() {
	e2e_require "$1" "make deps: etcd-server, etcd-client" etcd etcdctl
}

# e2e_etcd_start NS NAME URL PEER_PORT [ARGS...]: ks_start_etcd (netns.sh)
# with data and log under $E2E_TMP/NAME.*; sets E2E_ETCD_PID (the caller
# stops it by that pid). 1 with the log's tail when it does not listen
# within 10 s.
e2e_etcd_start() {
	local ns=$1 name=$2 url=$3 peer=$4 rc
	shift 4
	ks_start_etcd "$ns" "$name" "$url" "$peer" "$E2E_TMP" "$@"
	rc=$?
	# shellcheck disable=SC2034 # for the caller
	E2E_ETCD_PID=$KS_ETCD_PID
	return "$rc"
}

# The EXIT trap of a test on steer_topo.sh with an etcd and a load: the
# load (LOAD_PID), the topology (its agents, memcacheds, namespaces), then
# etcd (ETCD_PID), each by its pid, then e2e_cleanup.
e2e_topo_etcd_cleanup() {
	local rc=$?
	[ -n "${LOAD_PID:-}" ] && ks_stop_pid "$LOAD_PID" INT 5
	steer_topo_down
	[ -n "${ETCD_PID:-}" ] && ks_stop_pid "$ETCD_PID" TERM 5
	(exit "$rc")
	e2e_cleanup
}

e2e_cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	[ -n "$E2E_POLLER_PID" ] && ks_stop_pid "$E2E_POLLER_PID" TERM 3
	[ -n "$E2E_AGENT_PID" ] && e2e_agent_stop INT
	# A leftover of ours (an agent that died, a failed check): the agent's
	# own detach removes it, so the next run starts clean.
	if e2e_pins_exist || e2e_xdp_attached || e2e_tc_attached; then
		note "cleanup: removing keysteer leftovers on $SIF"
		e2e_agent detach --iface "$SIF" >/dev/null 2>&1
	fi
	[ -n "$KS_MEMCACHED_PID" ] && ks_stop_pid "$KS_MEMCACHED_PID" TERM 5
	ks_ns_delete "$CNS" "$SNS"
	# Our pin folder can outlive the interface only if detach failed.
	[ -e "$PIN_ROOT/$SIF" ] && rm -rf "${PIN_ROOT:?}/$SIF"
	if [ "$E2E_BPFFS_BEFORE" = 0 ] && e2e_bpffs_mounted; then
		rmdir "$PIN_ROOT" 2>/dev/null
		[ -z "$(ls -A "$BPFFS" 2>/dev/null)" ] && umount "$BPFFS" 2>/dev/null
	fi
	if [ -n "${E2E_KEEP:-}" ]; then
		echo "  kept $E2E_TMP (E2E_KEEP is set)"
	else
		rm -rf "$E2E_TMP"
	fi
	# etcd's data in memory, kept or not: its logs are in E2E_TMP
	[ -n "${KS_ETCD_DATA:-}" ] && [ "$KS_ETCD_DATA" != "$E2E_TMP" ] &&
		rm -rf "$KS_ETCD_DATA"
	[ "$rc" -eq 0 ] && [ "$E2E_FAILED" != 0 ] && rc=1
	exit "$rc"
}
