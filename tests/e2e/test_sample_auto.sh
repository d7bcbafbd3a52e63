#!/bin/bash
# test_sample_auto.sh - --sample auto (docs/accuracy.md, "Adaptive
# sampling"): with no load every CPU ends at 1 in 1; a paced load of one
# key (20 copies a get, 400 gets/s: 8,000 keys/s) against a target of 500
# sampled keys/s per CPU lowers the rate of the CPU that carries it; and
# the key's estimates, summed over every interval from the agent's start
# to after the load (at 1 in 8, then 1 in 1, then lower), equal
# memcached's own cmd_get within the summed error bounds. Every step waits
# for the report that shows it (agent report --watch --json), each wait
# bounded. Control: KEYSTEER_TEST_SWITCHES=1 with
# KS_TEST_RATE_UNSCALED=1 makes the agent merge the sketch without each
# CPU's rate (as if every CPU sampled every key); the same sum must then
# fall outside the bounds.
# The key's gets go through the sample log (issue 27): the agent's drain
# folds them, and its -v line at the end must show records folded and
# none taken by the in-kernel sketch with the log full, nor late ones
# beyond a handful. Second control: --log-samples drop (the drain takes
# the records and throws them away) must miss too: no sample is lost
# on the way through the log, or the main run would miss as it does.
# Every run drains the log with two threads (--drain-threads 2), one for
# each of this machine's CPUs, as a big host's agent does by default.
. "$(dirname "$0")/lib.sh"
e2e_init sample_auto
# names of our own (helpers run side by side): "ha" + the PID
CNS=ha_cli_$$
SNS=ha_srv_$$
CIF=ha_c$$
SIF=ha_s$$
e2e_require sample_auto_setup "make deps: python3" "$PY"
e2e_net_up

TARGET=500
KEY=ha:hot
WATCH=$E2E_TMP/watch.jsonl
LOAD_PID=

stop_load() {
	[ -n "$LOAD_PID" ] && ks_stop_pid "$LOAD_PID" TERM 10
	LOAD_PID=
}
cleanup() {
	local rc=$?
	stop_load
	(exit "$rc")
	e2e_cleanup
}
trap cleanup EXIT

check() { "$PY" "$E2E_DIR/ks_rate_check.py" "$WATCH" "$@"; }

# wait_for WHAT ARGS...: until ks_rate_check.py WHAT ARGS holds, the agent
# alive, 60 s at most (a loaded machine; intervals are 1 s)
wait_for() {
	local i
	for ((i = 0; i < 600; i++)); do
		check "$@" && return 0
		kill -0 "$E2E_AGENT_PID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# one run: PREFIX for the result names, then extra agent options
run() {
	local pre=$1 n true base quiet
	shift
	: >"$WATCH"
	if ! e2e_client "$E2E_DIR/ks_rate_load.py" "$SADDR" "$PORT" set "$KEY" ||
		! base=$(e2e_client "$E2E_DIR/ks_rate_load.py" "$SADDR" "$PORT" cmd_get); then
		fail "${pre}_setup" "cannot set $KEY or read memcached's stats"
		return 1
	fi
	# two drain threads, one a CPU here: the estimates hold with the
	# log split between threads (core/slog_part.h)
	if ! e2e_agent_start --sample "auto:$TARGET" --interval 1 -v \
		--drain-threads 2 "$@"; then
		fail "${pre}_setup" "the agent did not start"
		return 1
	fi
	# every interval must be seen: polled 10 times an interval, ahead
	# of other work on the machine (nice, as the e2e loads are)
	ks_in_ns_bg "$SNS" nice -n "$KS_NICE" "$AGENT" report --iface "$SIF" \
		--watch --json --interval 0.1 </dev/null >"$WATCH" 2>"$E2E_TMP/watch.err"
	E2E_POLLER_PID=$KS_BG_PID

	# no load: from 1 in 8 (auto's start) to 1 in 1 on every CPU
	if wait_for quiet "$TARGET" >"$E2E_TMP/quiet.txt"; then
		# its first word is the interval's seq
		quiet=$(cut -d' ' -f1 "$E2E_TMP/quiet.txt")
		note "$(cut -d' ' -f2- "$E2E_TMP/quiet.txt")"
		[ "$pre" = sample_auto ] && pass "${pre}_quiet_cpus_at_1"
	else
		fail "${pre}_quiet_cpus_at_1" "no report with every CPU at 1/1 in 60 s"
		return 1
	fi

	# 8,000 keys/s against a target of 500 a CPU: 1 in 16 or 32
	ks_in_ns_bg "$CNS" "$PY" "$E2E_DIR/ks_rate_load.py" "$SADDR" "$PORT" \
		load "$KEY" 20 400 >"$E2E_TMP/load.json" 2>"$E2E_TMP/load.err"
	LOAD_PID=$KS_BG_PID
	if wait_for loaded 8 "$quiet" >"$E2E_TMP/loaded.txt"; then
		note "$(cat "$E2E_TMP/loaded.txt")"
		[ "$pre" = sample_auto ] && pass "${pre}_loaded_cpu_lowers_rate"
	else
		fail "${pre}_loaded_cpu_lowers_rate" "no CPU at 1/8 or lower in 60 s under load"
		return 1
	fi
	# two more intervals at the lowered rate, then the load stops
	n=$(check seq)
	if ! e2e_wait_watch_seq "$WATCH" $((n + 2)); then
		fail "${pre}_setup" "the intervals stopped under load"
		return 1
	fi
	stop_load
	note "load: $(cat "$E2E_TMP/load.json")"
	# every key the load sent is in an interval closed after it stopped
	n=$(check seq)
	if ! e2e_wait_watch_seq "$WATCH" $((n + 2)); then
		fail "${pre}_setup" "the intervals stopped after the load"
		return 1
	fi
	ks_stop_pid "$E2E_POLLER_PID" TERM 5
	E2E_POLLER_PID=
	true=$(e2e_client "$E2E_DIR/ks_rate_load.py" "$SADDR" "$PORT" cmd_get)
	# the log's last -v line and the datapath's fallback count, before
	# the agent's exit takes its pins
	grep 'sample log:' "$E2E_TMP/agent.out" | tail -n 1 >"$E2E_TMP/slog.txt"
	e2e_agent report --iface "$SIF" --json 2>/dev/null >"$E2E_TMP/final.json"
	e2e_agent_stop INT
	# the gets this agent saw: memcached's count since before it started
	check sum "$KEY" $((true - base)) >"$E2E_TMP/sum.txt"
	SUM_RC=$?
	note "$(cat "$E2E_TMP/sum.txt")"
	return 0
}

# what a run left running, stopped (a run that failed half-way)
end_run() {
	stop_load
	ks_stop_pid "$E2E_POLLER_PID" TERM 5
	E2E_POLLER_PID=
	e2e_agent_stop INT
}

SUM_RC=
if run sample_auto; then
	if [ "$SUM_RC" = 0 ]; then
		pass sample_auto_estimates_across_rate_change
	else
		fail sample_auto_estimates_across_rate_change "$(cat "$E2E_TMP/sum.txt")"
	fi
	# "#N sample log: F records folded, L late, D dropped, B bad; ..."
	slog=$(cat "$E2E_TMP/slog.txt")
	full=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["totals"]["packets"]["slog_full"])' \
		"$E2E_TMP/final.json" 2>/dev/null)
	note "${slog#*keysteer: }; keys taken with the log full: ${full:-?}"
	if [[ "$slog" =~ sample\ log:\ ([0-9]+)\ records\ folded,\ ([0-9]+)\ late,\ 0\ dropped,\ 0\ bad ]] &&
		[ "${BASH_REMATCH[1]}" -gt 1000 ] && [ "${BASH_REMATCH[2]}" -le 10 ] &&
		[ "$full" = 0 ]; then
		pass sample_auto_through_the_sample_log
	else
		fail sample_auto_through_the_sample_log "'$slog', slog_full ${full:-?}"
	fi
fi
end_run

# control RESULT WHAT PREFIX ARGS...: a run with the agent's ARGS whose
# summed estimates must miss memcached's count (WHAT broke them)
control() {
	local name=$1 what=$2 pre=$3
	shift 3
	SUM_RC=
	if run "$pre" "$@"; then
		if [ "$SUM_RC" = 1 ]; then
			pass "$name"
		else
			fail "$name" "the estimates held $what: $(cat "$E2E_TMP/sum.txt")"
		fi
	fi
	end_run
}

export KEYSTEER_TEST_SWITCHES=1
# the same without each CPU's rate in the merge must miss
control sample_auto_control_unscaled_misses "without the rates" \
	sample_auto_control --rate-scaling off
# the log's records thrown away by the drain must miss
control sample_auto_control_log_dropped_misses \
	"with the log's records dropped" sample_auto_log_control --log-samples drop
unset KEYSTEER_TEST_SWITCHES
e2e_expect_clean sample_auto_clean
