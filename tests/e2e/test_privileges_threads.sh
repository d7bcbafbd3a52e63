#!/usr/bin/env bash
# test_privileges_threads.sh - every thread of a running agent has dropped
# its capabilities and blocks the signals the main thread handles
# (docs/operations.md, "The agent's threads"; user/util/thread.h).
# Capabilities, the bounding set, no_new_privs and the signal mask are per
# thread on Linux: the main thread's drop after attaching does not reach
# the threads started before it (the etcd keeper and publisher, the sample
# log's drains, ks-grace, the purge), and a signal goes to any thread that
# does not block it.
#
# One etcd in the server namespace, a ring of this shard, a replica (a
# second memcached: the fill worker), the agent with --etcd, --self (the
# purge), --drain-threads 2, --pins and --metrics, -v; its threads read
# from /proc/PID/task/*/status by ks_thread_caps.py once it has dropped
# its own and run two intervals:
#   privileges_threads_listed            the main thread and ks-housekeep,
#       ks-grace, ks-etcd-keep, ks-etcd-pub, ks-drain-0, ks-drain-1,
#       ks-purge, ks-fill are all there
#   privileges_threads_caps              the main thread CAP_BPF and
#       CAP_NET_ADMIN (CapEff, CapPrm, CapBnd); ks-housekeep CAP_BPF, every
#       other thread nothing (CapEff, CapPrm), each a CapBnd within the
#       main thread's, CapInh 0, NoNewPrivs 1
#   privileges_threads_signals_blocked   every thread but the main one
#       blocks SIGINT, SIGTERM and SIGHUP (SigBlk); the main thread none
#   privileges_threads_drain_nice        the drains at nice -10, which
#       takes CAP_SYS_NICE: set before their drop
#   privileges_threads_still_work        the publisher put members/SELF
#       and the keeper renewed its lease after the drop
#   privileges_threads_sighup_reloads    three SIGHUPs, three "pins
#       reloaded" lines with the pin file's new rule count, and the
#       threads as before
#   privileges_threads_sigint_clean_exit SIGINT: exit 0, nothing left
#   privileges_threads_sigterm_clean_exit a second agent, SIGTERM: the same
#   privileges_threads_housekeep_sees_detach a third agent's link detached
#       from outside (bpftool link detach): ks-housekeep, with CAP_BPF
#       alone, finds it and the agent stops, saying so (that it works with
#       the reduced set; on kernels from 6.5 its bpf() calls on fds it
#       holds need no capability at all, so this is no control of CAP_BPF)
#   privileges_threads_control_keeps     the control: --thread-caps keep
#       (test-only) skips the threads' own drop, and a thread holds a
#       capability the main thread dropped
# etcd, the replica and the agents are stopped by their pids on every exit
# path. About 40 s.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=fleet_lib.sh
. "$E2E_DIR/fleet_lib.sh"
e2e_init privileges_threads
e2e_prefix kth

REPL_PID=
threads_cleanup() {
	local rc=$?
	[ -n "$REPL_PID" ] && ks_stop_pid "$REPL_PID" TERM 5
	(exit "$rc")
	fleet_etcd_cleanup
}
trap threads_cleanup EXIT

e2e_need_etcd privileges_threads_setup
e2e_net_up
URL=http://$SADDR:2379
fleet_etcd_up "$SNS" kth "$URL" privileges_threads_setup
SELF=$SADDR:$PORT
CLUSTER=kth_$$
MPORT=44711 # the agent's metrics, on its namespace's loopback
WANT=(ks-housekeep ks-grace ks-etcd-keep ks-etcd-pub ks-drain-0 ks-drain-1
	ks-purge ks-fill)
out=$(e2e_agent ring set --etcd "$URL" --etcd-timeout 10000 --cluster "$CLUSTER" \
	--shards "$SELF" 2>&1)
if ! grep -q '^revision [0-9]* digest ' <<<"$out"; then
	fail privileges_threads_setup "ring set: $out"
	exit 1
fi
# the replica: a memcached of its own, stopped by its pid
MC_PID=$KS_MEMCACHED_PID
REPL=$SADDR:11212
if ! ks_start_memcached "$SNS" "$SADDR" 11212; then
	fail privileges_threads_setup "the replica's memcached did not start"
	exit 1
fi
REPL_PID=$KS_MEMCACHED_PID
KS_MEMCACHED_PID=$MC_PID
# steering's next-hop lookup (the agent refuses replicas without it)
ks_in_ns "$SNS" sysctl -qw "net.ipv4.conf.$SIF.forwarding=1"
printf 'pin local:1 1\n' >"$E2E_TMP/local.pins"

# start [ARGS...]: the agent with every thread, waited for until it has
# dropped its capabilities, holds its lease and has run 2 intervals
start() {
	if ! e2e_agent_start --interval 0.5 --etcd "$URL" --etcd-timeout 10000 \
		--cluster "$CLUSTER" --self "$SELF" --drain-threads 2 \
		--replicas "$REPL" --pins "$E2E_TMP/local.pins" \
		--metrics "127.0.0.1:$MPORT" -v "$@"; then
		WHY="the agent did not start"
		return 1
	fi
	if ! e2e_wait_line "$E2E_TMP/agent.out" "sample log: 2 drain threads" "$E2E_AGENT_PID" 300 ||
		! e2e_wait_line "$E2E_TMP/agent.out" "capabilities now" "$E2E_AGENT_PID" 300 ||
		! e2e_wait_line "$E2E_TMP/agent.out" "under a lease of [0-9]+ s" "$E2E_AGENT_PID" 300 ||
		! e2e_wait_intervals 2; then
		WHY="the agent did not get to its second interval: $(tail -n 5 "$E2E_TMP/agent.out")"
		return 1
	fi
}

check() { # MODE: ks_thread_caps.py's verdict on the running agent
	"$PY" "$E2E_DIR/ks_thread_caps.py" "$E2E_AGENT_PID" "$1" "${WANT[@]}"
}

# verdict NAME CATEGORY: PASS NAME when the checker found nothing wrong,
# or found breaches of other categories only; else FAIL NAME with its
# lines of CATEGORY (or all it said, when it gave no verdict at all)
verdict() {
	local name=$1 cat=$2
	if grep -q "^ok " <<<"$V" ||
		{ grep -q "^bad " <<<"$V" && ! grep -q "^bad $cat:" <<<"$V"; }; then
		pass "$name"
	elif grep -q "^bad $cat:" <<<"$V"; then
		fail "$name" "$(grep "^bad $cat:" <<<"$V" | tr '\n' ';')"
	else
		fail "$name" "no verdict from ks_thread_caps.py: $V"
	fi
}

WHY=''
if ! start; then
	fail privileges_threads_listed "$WHY"
	exit 1
fi
V=$(check fix)
note "the agent's threads:"
grep '^  ' <<<"$V"
verdict privileges_threads_listed listed
verdict privileges_threads_caps caps
verdict privileges_threads_signals_blocked signals
verdict privileges_threads_drain_nice nice

# after the drop: the member document is there and the keeper renews the
# lease (a keepalive every third of the 5 s TTL; 60 intervals bound it)
ok=''
for ((i = 0; i < 60; i++)); do
	ka=$(fleet_pub_field keepalives)
	member=$(ks_in_ns "$CNS" etcdctl --endpoints "$URL" --command-timeout 10s \
		get "/keysteer/$CLUSTER/members/$SELF" --print-value-only 2>/dev/null)
	if [ "${ka:-0}" -gt 0 ] && [ -n "$member" ]; then
		ok=1
		break
	fi
	e2e_wait_intervals 1 || break
done
if [ -n "$ok" ]; then
	pass privileges_threads_still_work
	note "members/$SELF put, $ka keepalives"
else
	fail privileges_threads_still_work "keepalives '${ka:-}', members/$SELF '${member:-}': $(tail -n 3 "$E2E_TMP/agent.out")"
fi

# SIGHUP x3: each reloads the pin file (1, 2, 3 rules), with every
# thread blocking it but the main one
ok=1
for n in 1 2 3; do
	: >"$E2E_TMP/local.pins"
	for ((r = 1; r <= n + 1; r++)); do
		printf 'pin local:%d 1\n' "$r" >>"$E2E_TMP/local.pins"
	done
	kill -HUP "$E2E_AGENT_PID"
	if ! e2e_wait_line "$E2E_TMP/agent.out" "pins reloaded from .*: $((n + 1)) rules" \
		"$E2E_AGENT_PID" 300; then
		ok=''
		break
	fi
done
V2=$(check fix)
if [ -n "$ok" ] && grep -q "^ok " <<<"$V2"; then
	pass privileges_threads_sighup_reloads
else
	fail privileges_threads_sighup_reloads "reload $n: $(grep -c 'pins reloaded' "$E2E_TMP/agent.out") reload lines, alive $(kill -0 "$E2E_AGENT_PID" 2>/dev/null && echo yes || echo no); $(grep '^bad' <<<"$V2" | tr '\n' ';')"
fi

e2e_agent_stop INT
if [ "$E2E_AGENT_RC" = 0 ] && ! e2e_pins_exist && ! e2e_xdp_attached; then
	pass privileges_threads_sigint_clean_exit
else
	fail privileges_threads_sigint_clean_exit "exit ${E2E_AGENT_RC:-?}, pins or program left: $(tail -n 3 "$E2E_TMP/agent.out")"
fi

# SIGTERM, every thread running
if start; then
	V=$(check fix)
	e2e_agent_stop TERM
	if [ "$E2E_AGENT_RC" = 0 ] && ! e2e_pins_exist && ! e2e_xdp_attached &&
		grep -q "^ok " <<<"$V"; then
		pass privileges_threads_sigterm_clean_exit
	else
		fail privileges_threads_sigterm_clean_exit "exit ${E2E_AGENT_RC:-?}; $(grep '^bad' <<<"$V" | tr '\n' ';') $(tail -n 3 "$E2E_TMP/agent.out")"
	fi
else
	fail privileges_threads_sigterm_clean_exit "$WHY"
fi

# ks-housekeep's link check with CAP_BPF alone: the link detached from
# outside (bpftool, BPF_LINK_DETACH), the agent sees it and stops
if start; then
	ks_in_ns "$SNS" bpftool link detach pinned "$PIN_ROOT/$SIF/link" \
		>"$E2E_TMP/bpftool.out" 2>&1
	if e2e_wait_line "$E2E_TMP/agent.out" "program on $SIF was detached" \
		"$E2E_AGENT_PID" 300; then
		pass privileges_threads_housekeep_sees_detach
	else
		fail privileges_threads_housekeep_sees_detach "no 'was detached' line: bpftool: $(head -c 200 "$E2E_TMP/bpftool.out"); agent: $(tail -n 3 "$E2E_TMP/agent.out")"
	fi
	e2e_agent_stop INT
	# what the stop on its own leaves (pins) goes as an operator would
	e2e_agent detach --iface "$SIF" >/dev/null 2>&1
else
	fail privileges_threads_housekeep_sees_detach "$WHY"
fi

# the control: the threads skip their own drop; those started before the
# main thread's keep what it dropped
if KEYSTEER_TEST_SWITCHES=1 start --thread-caps keep; then
	V=$(check control)
	n=$(sed -n 's/^kept \([0-9]*\)$/\1/p' <<<"$V")
	if [ "${n:-0}" -ge 1 ] && grep -q "test-only switches in force.*--thread-caps keep" "$E2E_TMP/agent.out"; then
		pass privileges_threads_control_keeps
		note "$n threads with capabilities the main thread dropped:"
		grep '^  kept' <<<"$V"
	else
		fail privileges_threads_control_keeps "no thread kept a capability: $V"
	fi
	e2e_agent_stop INT
else
	fail privileges_threads_control_keeps "$WHY"
fi
exit "$E2E_FAILED"
