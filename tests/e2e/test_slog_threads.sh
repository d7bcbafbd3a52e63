#!/usr/bin/env bash
# test_slog_threads.sh - the sample log drained by K threads (issue 27,
# "The agent on big hosts"; core/slog_part.h): each thread owns a fixed
# set of CPUs' logs, so every log keeps one consumer, and every record the
# datapath appends is taken once. An agent with --drain-threads 2 (this
# machine's two CPUs, one each) and every key sampled runs under UDP
# gets sent from a client pinned to CPU 0 and another pinned to CPU 1 (a
# veth's XDP runs on the sender's CPU, so both logs fill). When the gets
# have stopped and the datapath's count of appended keys
# (totals.packets.slog) holds still, the agent is stopped: its last drain
# done, its exit lines give what each thread took from each CPU's log.
#   - the records the threads took, summed, equal the datapath's count,
#     and every one was folded (or late, counted), none thrown away;
#   - each CPU's log was read by one thread only, and both had records.
# Control: KEYSTEER_TEST_SWITCHES=1 with --drain-share on gives thread 1
# CPU 0's log as well as thread 0: the test must then see that log taken
# by two threads (two consumers: the single-consumer protocol of
# ks_slog_slot/ks_slog_publish broken; the records a race between them
# takes twice are counted twice, which t_slog_part.c's control shows
# deterministically).
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init slog_threads
e2e_prefix kdt
e2e_need_load slog_threads_setup
e2e_require slog_threads_setup "make deps: python3" "$PY"
e2e_require slog_threads_setup "taskset (util-linux)" taskset
e2e_net_up

LOAD_PIDS=
threads_cleanup() {
	local rc=$? p
	for p in $LOAD_PIDS; do ks_stop_pid "$p" KILL 5 2>/dev/null; done
	(exit "$rc")
	e2e_cleanup
}
trap threads_cleanup EXIT

# slog_count: the datapath's appended keys (every CPU), or nothing
slog_count() {
	e2e_agent report --iface "$SIF" --json 2>/dev/null |
		"$PY" -c 'import json,sys
print(json.load(sys.stdin)["totals"]["packets"]["slog"])' 2>/dev/null
}

# run PREFIX ARGS...: the agent with ARGS under the two pinned loads;
# leaves its output in $E2E_TMP/agent.out and the datapath's final count
# in $E2E_TMP/slog.txt; 1 (after a FAIL) when a step did not happen
run() {
	local pre=$1 cpu n prev i
	shift
	LOAD_PIDS=
	if ! e2e_agent_start --sample 1 --interval 0.5 --drain-threads 2 "$@"; then
		fail "${pre}_setup" "the agent did not start: $(head -c 300 "$E2E_TMP/agent.out")"
		return 1
	fi
	if ! e2e_wait_line "$E2E_TMP/agent.out" "sample log: 2 drain threads for" \
		"$E2E_AGENT_PID" 600; then
		fail "${pre}_setup" "no sample log with 2 drain threads: $(grep -m3 'sample log' "$E2E_TMP/agent.out")"
		return 1
	fi
	for cpu in 0 1; do
		ks_in_ns_bg "$CNS" taskset -c "$cpu" "$LOAD" --server "$SADDR:$PORT" \
			--proto udp-gets --keys 1000 --duration 60 --rate 400 \
			--timeout 0.5 --json </dev/null >"$E2E_TMP/load$cpu.json" \
			2>"$E2E_TMP/load$cpu.err"
		LOAD_PIDS="$LOAD_PIDS $KS_BG_PID"
	done
	# at least 4,000 keys through the log: 60 s at most
	for ((i = 0; i < 600; i++)); do
		n=$(slog_count)
		[ "${n:-0}" -ge 4000 ] && break
		kill -0 "$E2E_AGENT_PID" 2>/dev/null || break
		sleep 0.1
	done
	for cpu in $LOAD_PIDS; do ks_stop_pid "$cpu" INT 10; done
	LOAD_PIDS=
	if [ "${n:-0}" -lt 4000 ]; then
		fail "${pre}_setup" "only ${n:-no} keys logged in 60 s: $(tail -c 200 "$E2E_TMP/load0.err")"
		return 1
	fi
	# the count holds still over a second (no packet left in flight)
	prev=
	for ((i = 0; i < 60; i++)); do
		n=$(slog_count)
		[ -n "$n" ] && [ "$n" = "$prev" ] && break
		prev=$n
		sleep 1
	done
	if [ -z "$n" ] || [ "$n" != "$prev" ]; then
		fail "${pre}_setup" "the datapath's count did not settle: $prev then $n"
		return 1
	fi
	echo "$n" >"$E2E_TMP/slog.txt"
	e2e_agent_stop INT
	return 0
}

# account: what the exit lines say against the datapath's count, as
# "<records equal> <one thread a CPU> <every CPU had records> <text>"
account() {
	"$PY" - "$E2E_TMP/agent.out" "$(cat "$E2E_TMP/slog.txt")" <<'PY'
import re, sys
out, written = open(sys.argv[1]).read(), int(sys.argv[2])
by_cpu = {}
for m in re.finditer(r"sample log: drain thread (\d+) took (\d+) records:(.*)", out):
    for c in re.finditer(r"CPU (\d+) (\d+)", m.group(3)):
        if int(c.group(2)):
            by_cpu.setdefault(int(c.group(1)), []).append((int(m.group(1)), int(c.group(2))))
t = re.search(r"sample log: (\d+) records taken by (\d+) drain threads: "
              r"(\d+) folded, (\d+) late, (\d+) bad, (\d+) dropped", out)
if not t:
    print("0 0 0 no account line in the agent's output")
    sys.exit(0)
taken, nthr, folded, late, bad, dropped = map(int, t.groups())
equal = taken == written and folded + late + bad == taken and not dropped
one = all(len(v) == 1 for v in by_cpu.values())
both = sorted(by_cpu) == [0, 1]
print(int(equal), int(one), int(both),
      "datapath %d, taken %d by %d threads (%d folded, %d late, %d bad, %d dropped); by CPU %s"
      % (written, taken, nthr, folded, late, bad, dropped,
         {c: v for c, v in sorted(by_cpu.items())}))
PY
}

if run slog_threads; then
	read -r equal one both text <<<"$(account)"
	note "$text"
	if [ "$equal" = 1 ]; then
		pass slog_threads_every_record_taken_once
	else
		fail slog_threads_every_record_taken_once "$text"
	fi
	if [ "$one" = 1 ] && [ "$both" = 1 ]; then
		pass slog_threads_each_log_one_thread
	else
		fail slog_threads_each_log_one_thread "$text"
	fi
fi

export KEYSTEER_TEST_SWITCHES=1
if run slog_threads_control --drain-share on; then
	read -r equal one both text <<<"$(account)"
	note "control: $text"
	if [ "$one" = 0 ]; then
		pass slog_threads_control_shared_log_two_consumers
	else
		fail slog_threads_control_shared_log_two_consumers "CPU 0's log given to two threads, yet one took it all: $text"
	fi
fi
unset KEYSTEER_TEST_SWITCHES
e2e_expect_clean slog_threads_clean
exit "$E2E_FAILED"
