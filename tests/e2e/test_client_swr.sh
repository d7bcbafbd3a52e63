#!/usr/bin/env bash
# test_client_swr.sh - stale-while-revalidate through libkeysteer
# (docs/client.md "Stale-while-revalidate", issue 24): a writer that
# updates its "database" and then calls keysteer_delete_stale (Python
# Client.delete(key, max_stale=3)), and readers on two processes through
# get_or_fill(allow_stale=True), get_or_fill() and get(), against a real
# memcached 1.6 in a namespace of this script's own, on 127.0.0.1. Every
# read is checked by tests/e2e/ks_swr.py against every write's
# acknowledgement and mark (CLOCK_MONOTONIC, shared by the processes):
#
#   swr_no_stale_value_unflagged   no value older than a write acknowledged
#                    before the read began is returned unflagged, and none
#                    flagged to a caller that did not allow it
#   swr_flagged_never_older_than_max_stale  a flagged value is served at
#                    most max_stale (3 s) after the write that superseded
#                    it, plus 500 ms for memcached's one-second clock (a
#                    time bound is the property; the room is for a loaded
#                    2-core machine); a 4 s fill makes the oldest pass 1 s
#                    (half of max_stale - 1 s, the earliest a mark can end
#                    on memcached's whole-second clock), or the check
#                    proves nothing and FAILs
#   swr_lease_winner_refills       a write followed by 200 ms of quiet is
#                    refilled and read fresh (at least half of them)
#   swr_every_call_answered        no call failed
#   swr_control_stale_as_fresh_shows_unflagged  the same run with readers
#                    that take a stale owner item as a hit (the test-only
#                    stale_read=fresh) must return old values unflagged,
#                    else the checks above cannot see the violation
#
# memcached and every caller are stopped by PID and the namespace removed
# on every exit path. About 40 s quiet.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init client_swr
e2e_require client_swr_setup "make deps: memcached" memcached
e2e_require client_swr_setup "apt-get install python3" "$PY"

SWR=$E2E_ROOT/tests/e2e/ks_swr.py
LIB=$E2E_ROOT/${OUT:-build}/libkeysteer.so
NS=ks_swr_$$
MC_PID=
SWR_PIDS=()
swr_cleanup() {
	local rc=$? pid
	for pid in "${SWR_PIDS[@]}"; do
		ks_stop_pid "$pid" KILL 5
	done
	ks_stop_pid "$MC_PID" TERM 5
	ks_ns_delete "$NS"
	(exit "$rc")
	e2e_cleanup
}
trap swr_cleanup EXIT

if [ ! -f "$LIB" ]; then
	fail client_swr_setup "$LIB is missing; run 'make all'"
	exit 1
fi
export KEYSTEER_LIB=$LIB
if ! ip netns add "$NS" || ! ip -n "$NS" link set lo up; then
	fail client_swr_setup "cannot make namespace $NS"
	exit 1
fi
ks_in_ns_bg "$NS" memcached -u nobody -l 127.0.0.1 -p 11211 -U 0 -m 64 -t 2 \
	</dev/null >/dev/null 2>&1
MC_PID=$KS_BG_PID
if ! ks_wait_tcp "$NS" 127.0.0.1 11211 10; then
	fail client_swr_setup "memcached did not start"
	exit 1
fi
# 5 s per memcached call: no check here is about memcached's speed
SPEC="servers=127.0.0.1:11211 timeout_ms=5000"

# swr_run TAG READER_SPEC: a writer process (with 6 readers) and a reader
# process (6 readers), started together once both have their handles
# (ready files, within 60 s: a guard against a start that never comes);
# 0 when both exited 0. The key and database are the run's own.
swr_run() {
	local tag=$1 rspec=$2 pids=() rc=0 i pid
	echo "0 40" >"$E2E_TMP/$tag.db"
	for i in 0 1; do
		ks_in_ns_bg "$NS" env KEYSTEER_TEST_SWITCHES="${SWITCHES:-}" \
			timeout 120 "$PY" "$SWR" run --spec "$rspec" \
			--key "swr:$tag" --db "$E2E_TMP/$tag.db" --threads 6 \
			--seconds 12 --max-stale 3 $([ "$i" = 0 ] && echo --writer) \
			--ready "$E2E_TMP/$tag.$i.ready" --go "$E2E_TMP/$tag.go" \
			</dev/null >"$E2E_TMP/$tag.$i.json" 2>"$E2E_TMP/$tag.$i.err"
		pids+=("$KS_BG_PID")
		SWR_PIDS+=("$KS_BG_PID")
	done
	for ((i = 0; i < 1200; i++)); do
		[ -f "$E2E_TMP/$tag.0.ready" ] && [ -f "$E2E_TMP/$tag.1.ready" ] && break
		sleep 0.05
	done
	touch "$E2E_TMP/$tag.go"
	for pid in "${pids[@]}"; do
		wait "$pid" || rc=1
	done
	return $rc
}

# 1. the mechanism: readers as they are
if swr_run swr "$SPEC"; then
	"$PY" "$SWR" check --max-stale 3 "$E2E_TMP/swr.0.json" \
		"$E2E_TMP/swr.1.json" || E2E_FAILED=1
else
	fail swr_every_call_answered "a process failed: $(tail -n 5 "$E2E_TMP"/swr.*.err)"
fi

# 2. the control: the writers the same, readers that take a stale owner
# item as a hit (the writer's handle has the switch too: it reads nothing)
if SWITCHES=1 swr_run control "$SPEC stale_read=fresh"; then
	"$PY" "$SWR" check --max-stale 3 --control "$E2E_TMP/control.0.json" \
		"$E2E_TMP/control.1.json" || E2E_FAILED=1
else
	fail swr_control_stale_as_fresh_shows_unflagged "a process failed: $(tail -n 5 "$E2E_TMP"/control.*.err)"
fi
exit "$E2E_FAILED"
