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
# on every exit path. About 25 s quiet (the two runs side by side).
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init client_swr
e2e_require client_swr_setup "make deps: memcached" memcached
e2e_require client_swr_setup "apt-get install python3" "$PY"

# shellcheck source=herd_lib.sh
. "$E2E_DIR/herd_lib.sh"
herd_setup client_swr
SWR=$E2E_ROOT/tests/e2e/ks_swr.py

# swr_spawn TAG READER_SPEC: a writer process (with 6 readers) and a reader
# process (6 readers), to be started together once both have their
# handles (herd_start TAG 2; herd_wait TAG: 0 when both exited 0). The
# key and database are the run's own.
swr_spawn() {
	local tag=$1 rspec=$2 i
	echo "0 40" >"$E2E_TMP/$tag.db"
	for i in 0 1; do
		herd_spawn "$tag" "$i" env KEYSTEER_TEST_SWITCHES="${SWITCHES:-}" \
			timeout 120 "$PY" "$SWR" run --spec "$rspec" \
			--key "swr:$tag" --db "$E2E_TMP/$tag.db" --threads 6 \
			--seconds 12 --max-stale 3 $([ "$i" = 0 ] && echo --writer) \
			--ready "$E2E_TMP/$tag.$i.ready" --go "$E2E_TMP/$tag.go"
	done
}

# 1. the mechanism, readers as they are, and 2. its control, side by side:
# each on a key and database of its own, each judged on its own
# processes' documents; the other run is load beside it, as a loaded
# machine is (the bounds' room)
swr_spawn swr "$SPEC"
SWITCHES=1 swr_spawn control "$SPEC stale_read=fresh"
herd_start swr 2
herd_start control 2
herd_wait swr
swr_rc=$?
herd_wait control
control_rc=$?

# 1. the mechanism: readers as they are
if [ "$swr_rc" = 0 ]; then
	"$PY" "$SWR" check --max-stale 3 "$E2E_TMP/swr.0.json" \
		"$E2E_TMP/swr.1.json" || E2E_FAILED=1
else
	fail swr_every_call_answered "a process failed: $(tail -n 5 "$E2E_TMP"/swr.*.err)"
fi

# 2. the control: the writers the same, readers that take a stale owner
# item as a hit (the writer's handle has the switch too: it reads nothing)
if [ "$control_rc" = 0 ]; then
	"$PY" "$SWR" check --max-stale 3 --control "$E2E_TMP/control.0.json" \
		"$E2E_TMP/control.1.json" || E2E_FAILED=1
else
	fail swr_control_stale_as_fresh_shows_unflagged "a process failed: $(tail -n 5 "$E2E_TMP"/control.*.err)"
fi
exit "$E2E_FAILED"
