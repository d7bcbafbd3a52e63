#!/usr/bin/env bash
# test_fleet_member_stop.sh - an etcd member that stops answering does not
# cost an agent its lease while the other members serve (docs/fleet.md,
# "Endpoints"; Debian's etcd 3.4, never a mock).
#
# A 3-member cluster (tests/e2e/etcd_cluster.sh) in the server namespace,
# on 127.0.0.11-13; one agent (--interval 0.5, -v) with --etcd naming the
# three, a follower first ("member S"), so its keeper renews on member S.
# A follower, and kept one (etcdctl move-leader, should it have become the
# leader): a leader stopped and resumed may revoke, on the lease deadlines
# it had before the stop, a lease the new leader kept alive (etcd 3.4;
# seen here once: 2 leases and a delete with at most 2,674 ms between
# renewals), which is etcd's doing, not the client's. Member S is
# SIGSTOPped: its kernel still takes connections and requests, nobody
# answers. The keeper's renewal there times out: its longest time between
# renewals is then at least the call's 2 s timeout (CALL_MS), which shows
# the stop met the keeper (under it, the run proves nothing: a FAIL); the
# agent's log names member S for a call that timed out, the sign the stop
# took. Member S stays stopped for the lease's TTL and
# 3 s more (the TTL the agent logs, 5 s: a time this test sets, longer
# than any renewal gap a lease survives), counted from the stop or from
# the last leader change seen meanwhile (then with etcd's 1 s election
# timeout: a new leader re-arms every lease for that long, fleet_lib.sh
# fleet_term_moved, and the control would keep its lease by etcd's
# doing), then SIGCONT. A watch of
# /keysteer/CLUSTER/ on members 2 and 3, from before the agent's start,
# sees every event of members/SELF; a sentinel put after the stop ends
# what is counted.
#   fleet_member_stop_lease_held   no delete of members/SELF, 1 lease, the
#       longest time between renewals under the TTL (a timed-out call
#       leaves the client on the next endpoint: net/etcd.c)
#   fleet_member_stop_control_one_endpoint_expires   the control: the same
#       stop with the agent given member S alone (--etcd URL_S), so its
#       keeper cannot leave it: members/SELF deleted by the expiry, a
#       second lease after SIGCONT. It shows the stop is long enough to
#       cost a lease that stays on the stopped member (as every keeper did
#       before the move, docs/testing.md).
# Each run in a cluster of its own. etcd, the watch and the agent are
# stopped by their pids, the namespaces deleted, on every exit path.
# About 60 s.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=fleet_lib.sh
. "$E2E_DIR/fleet_lib.sh"
# shellcheck source=etcd_cluster.sh
. "$E2E_DIR/etcd_cluster.sh"
e2e_init fleet_member_stop
e2e_prefix ksmstop
# The agent at nice -10 (e2e_agent_start's KS_AGENT_NICE), as etcd is: the
# subject is the keeper against a stalled loop or member, not how soon a
# loaded machine runs the agent; at nice 0 beside stress-ng and other
# work (load 20 to 33) its threads waited 7 to 170 s in all for a CPU in
# a run and the fix lost its lease (docs/testing.md). The controls break
# the mechanism itself, which no CPU share mends.
KS_AGENT_NICE=${KS_AGENT_NICE:--10}

WATCH_PID=
IV=0.5
CALL_MS=2000 # the agent's etcd call timeout (KS_ETCD_TIMEOUT_MS, its default)
HOLD_EXTRA_MS=3000

mstop_cleanup() {
	local rc=$?
	[ -n "$E2E_AGENT_PID" ] && e2e_agent_stop INT
	[ -n "$WATCH_PID" ] && ks_stop_pid "$WATCH_PID" TERM 3
	etcd_cluster_stop
	(exit "$rc")
	e2e_cleanup
}
trap mstop_cleanup EXIT

e2e_need_etcd fleet_member_stop_setup
e2e_net_up
if ! etcd_cluster_start "$E2E_TMP/etcd" "$SNS:127.0.0.11" "$SNS:127.0.0.12" \
	"$SNS:127.0.0.13" 2>"$E2E_TMP/etcd_start.out"; then
	fail fleet_member_stop_setup "$(cat "$E2E_TMP/etcd_start.out")"
	exit 1
fi
SELF=$SADDR:$PORT
# member S, the one stopped: a follower; LIVE the others, what the test
# reads and writes through while S is stopped (set by pick_member)
S=
LIVE=
pick_member() {
	local l i
	l=$(etcd_leader)
	S=$(((${l:-0} + 1) % 3))
	LIVE=
	for i in 0 1 2; do
		[ "$i" != "$S" ] && LIVE+=${LIVE:+,}${ETCD_URL[i]}
	done
}
# member_id I: member I's ID, in hex, as move-leader takes it
member_id() {
	ks_in_ns "$SNS" etcdctl --endpoints "${ETCD_URL[$1]}" endpoint status -w json 2>/dev/null |
		"$PY" -c 'import json,sys; print("%x" % json.load(sys.stdin)[0]["Status"]["header"]["member_id"])' 2>/dev/null
}
# keep_follower: 0 once member S is not the leader (the leadership moved
# to the next member if S had become it)
keep_follower() {
	[ "$(etcd_leader)" != "$S" ] && return 0
	ks_in_ns "$SNS" etcdctl --endpoints "${ETCD_URL[S]}" move-leader \
		"$(member_id $(((S + 1) % 3)))" >>"$E2E_TMP/move_leader.out" 2>&1
	[ "$(etcd_leader)" != "$S" ]
}
LIVECTL() { ks_in_ns "$SNS" etcdctl --endpoints "$LIVE" --command-timeout 5s "$@"; }
# run MODE: the agent in cluster mstop_MODE on every member, member S first
# (fix), or on member S alone (control); member S stopped under it for
# the TTL and HOLD_EXTRA_MS, then resumed; until
# the sentinel after it. Sets PUTS, DELS (of members/SELF), LEASES,
# GAP_MS, TTL_S, WHY (empty when the run went as planned).
run() {
	local mode=$1 urls cluster=mstop_$1 ttl key probe rev i t_stop t_ref
	local hold elections term0 rd0
	WHY='' PUTS='' DELS='' LEASES='' GAP_MS='' TTL_S='' RUN_DELAY_MS=''
	pick_member
	urls=${ETCD_URL[S]}
	[ "$mode" = fix ] && urls+=,$LIVE
	key=/keysteer/$cluster/members/$SELF
	probe=/keysteer/$cluster/probe
	# the ring set, the watch of the cluster established before the agent
	fleet_watch_start "$SNS" "$LIVE" "$cluster" "$SELF" "$E2E_TMP/$mode.watch" || return
	if ! e2e_agent_start --interval "$IV" --etcd "$urls" --cluster "$cluster" \
		--self "$SELF" -v; then
		WHY="the agent did not start"
		return
	fi
	if ! e2e_wait_line "$E2E_TMP/agent.out" "under a lease of [0-9]+ s" "$E2E_AGENT_PID" 300; then
		WHY="the agent never took a lease: $(tail -n 3 "$E2E_TMP/agent.out")"
		return
	fi
	ttl=$(sed -n 's/.*under a lease of \([0-9]*\) s.*/\1/p' "$E2E_TMP/agent.out" | head -n 1)
	rd0=$(fleet_run_delay "$E2E_AGENT_PID") # the machine's share, below
	# members/SELF written and renewed before the stop: 2 intervals
	for ((i = 0; i < 300; i++)); do
		read -r PUTS DELS _ <<<"$(fleet_watch_events "$E2E_TMP/$mode.watch" "$key" "$probe" 0)"
		[ "${PUTS:-0}" -ge 1 ] && break
		sleep 0.1
	done
	if [ "${PUTS:-0}" -lt 1 ] || ! e2e_wait_intervals 2; then
		WHY="members/$SELF never written: $(tail -n 3 "$E2E_TMP/agent.out")"
		return
	fi
	if ! keep_follower; then
		WHY="member S ($S) is the leader and move-leader did not move it: $(tail -n 2 "$E2E_TMP/move_leader.out")"
		return
	fi
	fleet_term_start LIVECTL
	term0=$TERM_NOW
	etcd_member_signal "$S" STOP
	t_stop=$(date +%s%3N)
	# the stop took: a call of the publisher timed out there (the writer's
	# or the keeper's: the agent logs the first failure of the two)
	if ! e2e_wait_line "$E2E_TMP/agent.out" "etcd at ${ETCD_URL[S]} did not answer" \
		"$E2E_AGENT_PID" 600; then
		etcd_member_signal "$S" CONT
		WHY="no etcd call timed out on member S (${ETCD_URL[S]}) within 60 s of its stop: $(grep -E 'etcd' "$E2E_TMP/agent.out" | tail -n 3)"
		return
	fi
	# held past the TTL: a lease left on member S has expired by then.
	# From the stop, or from a leader change seen since (the members
	# serving polled): a new leader re-arms every lease for the TTL and
	# its election timeout (fleet_lib.sh fleet_term_moved), and the
	# control, resumed before that ran out, would keep its lease by
	# etcd's doing, not the client's (120 s at most)
	t_ref=$t_stop hold=$((ttl * 1000 + HOLD_EXTRA_MS)) elections=0
	while [ $(($(date +%s%3N) - t_ref)) -lt "$hold" ] &&
		[ $(($(date +%s%3N) - t_stop)) -lt 120000 ]; do
		if fleet_term_moved LIVECTL; then
			t_ref=$TERM_MOVED_MS elections=$((elections + 1))
			hold=$((ttl * 1000 + FLEET_ETCD_ELECTION_MS + HOLD_EXTRA_MS))
		fi
		sleep 0.1 # a pace: the hold is this test's own time
	done
	etcd_member_signal "$S" CONT
	note "$mode: member S, $((S + 1)) of 3 (${ETCD_URL[S]}), a follower, stopped $(($(date +%s%3N) - t_stop)) ms under a lease of $ttl s; $elections leader change(s) seen during the hold (raft term $term0 to $TERM_NOW)"
	# the control's keeper finds its lease gone once member S answers
	# again (60 s for a loaded etcd)
	if [ "$mode" = control ] &&
		! e2e_wait_line "$E2E_TMP/agent.out" "the lease was gone" "$E2E_AGENT_PID" 600; then
		note "control: the agent never logged its lease gone"
	fi
	if ! e2e_wait_intervals 4; then
		WHY="the agent logged no intervals after the stop: $(tail -n 3 "$E2E_TMP/agent.out")"
		return
	fi
	rev=$(fleet_put_revision LIVECTL "$probe" after)
	fleet_lease_tally "$E2E_TMP/$mode.watch" "$key" "$probe" "${rev:-0}" || return
	RUN_DELAY_MS=$(fleet_run_delay "$E2E_AGENT_PID" "$rd0")
	note "$mode (--etcd $urls): members/$SELF: $PUTS puts, $DELS deletes in the watch; $LEASES leases, $(fleet_pub_field keepalives) keepalives, longest between renewals $GAP_MS ms of $TTL_S s; the agent's threads waited for a CPU $RUN_DELAY_MS ms in all over the run (the most of any thread)"
}

stop_run() { fleet_stop_run "$@"; } # the agent clean, the watch stopped

run fix
if [ -n "$WHY" ]; then
	fail fleet_member_stop_lease_held "$WHY"
elif [ -z "$GAP_MS" ] || [ "$GAP_MS" -lt "$CALL_MS" ]; then
	fail fleet_member_stop_lease_held "the keeper never waited on member S (longest between renewals ${GAP_MS:-?} ms, under the $CALL_MS ms of a timed-out call): the stop missed it, nothing is shown"
elif [ "$DELS" = 0 ] && [ "${PUTS:-0}" -ge 1 ] && [ "$LEASES" = 1 ] &&
	[ "$GAP_MS" -lt $((TTL_S * 1000)) ]; then
	pass fleet_member_stop_lease_held
else
	fail fleet_member_stop_lease_held "members/$SELF: ${PUTS:-?} puts, ${DELS:-?} deletes (want 0); ${LEASES:-?} leases (want 1); longest between renewals ${GAP_MS:-?} ms of ${TTL_S:-?} s; the agent's threads waited for a CPU ${RUN_DELAY_MS:-?} ms in all over the run (schedstat run_delay, the most of any thread: a total under the TTL rules out a machine that starved it that long): $(grep -E 'lease|etcd' "$E2E_TMP/agent.out" | tail -n 4)"
fi
stop_run fleet_member_stop_fix

run control
if [ -n "$WHY" ]; then
	fail fleet_member_stop_control_one_endpoint_expires "$WHY"
elif [ "${DELS:-0}" -ge 1 ] && [ "${LEASES:-0}" -ge 2 ] &&
	grep -q "the lease was gone" "$E2E_TMP/agent.out"; then
	pass fleet_member_stop_control_one_endpoint_expires
else
	fail fleet_member_stop_control_one_endpoint_expires "want members/$SELF deleted by the expiry and a second lease: ${PUTS:-?} puts, ${DELS:-?} deletes, ${LEASES:-?} leases, longest between renewals ${GAP_MS:-?} ms of ${TTL_S:-?} s"
fi
stop_run fleet_member_stop_control
