#!/usr/bin/env bash
# test_client_herd.sh - one hot key expiring under many callers costs the
# database one read per expiry (docs/client.md "Read-through", issue 24):
# keysteer_fetch through the Python adapter's get_or_fill, against a real
# memcached 1.6 in a namespace of this script's own, on 127.0.0.1. The
# "database" is each caller's fill: 50 ms, counted with its times
# (tests/e2e/ks_herd.py); the checks are tests/e2e/ks_herd_check.py's.
#
#   herd_*           2 processes x 12 threads, a handle each, read the key
#                    flat out for 8 s, TTL 2 s: fills within 1.5 x the
#                    most expiries the run can have + 2, never two at
#                    once, every call answered within its bound
#   herd_control_*   the same callers with the plain pattern (get, fill
#                    on a miss, set) must herd: more than 2 fills per
#                    possible expiry, some at once; else the checks above
#                    prove nothing and this FAILs
#   herd_killed_*    the lease winner SIGKILLed in its fill: the others
#                    fill only after its lease (3 s) lapsed, every call of
#                    theirs answered; callers with a 300 ms bound time out
#                    within it meanwhile
#   herd_fill_raises_* every 2nd fill raises: the exception reaches that
#                    caller alone, and the next caller fills at once (the
#                    lease handed back, not left to lapse)
#   herd_restart_*   memcached restarted under a dead winner's 30 s
#                    lease: the next callers fill at once (before the
#                    restart, callers with a 500 ms bound time out: the
#                    control)
#   herd_refresh_*   early refresh (meta R): 8 threads on a key with TTL
#                    3 s for 8 s never wait for a fill, and every fill is
#                    a refresh; the control without it does wait
#
# memcached and every caller are stopped by PID and the namespace removed
# on every exit path. About 35 s quiet (runs on keys of their own side by
# side).
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init client_herd
e2e_require client_herd_setup "make deps: memcached" memcached
e2e_require client_herd_setup "apt-get install python3" "$PY"

# shellcheck source=herd_lib.sh
. "$E2E_DIR/herd_lib.sh"
herd_setup client_herd
HERD=$E2E_ROOT/tests/e2e/ks_herd.py
CHECK=$E2E_ROOT/tests/e2e/ks_herd_check.py

# herd_spawn_n TAG N ARGS...: N ks_herd.py processes (ARGS each), each
# waiting for TAG's go file once it has its handles (herd_start).
herd_spawn_n() {
	local tag=$1 n=$2 i
	shift 2
	for ((i = 0; i < n; i++)); do
		herd_spawn "$tag" "$i" timeout 120 "$PY" "$HERD" --spec "$SPEC" \
			--ready "$E2E_TMP/$tag.$i.ready" --go "$E2E_TMP/$tag.go" "$@"
	done
}

# herd_run TAG N ARGS...: herd_spawn_n, started together once every one
# has its handles (herd_go); 0 when all exited 0.
herd_run() {
	herd_spawn_n "$@"
	herd_go "$1" "$2"
}

# Runs on keys of their own overlap (1, 2 and the two of 6; 3 with 4):
# each run's checks read its own processes' documents alone, and what
# they judge (fills per expiry, overlapping fills, lease waits, calls
# within their bounds) is counted on the run's own key; the other run is
# load beside it, as a loaded machine is, for which the bounds already
# leave room. The restart (5) stops memcached under every key: alone.

herd_files() {
	ls "$E2E_TMP/$1".*.json
}

# 1. two processes of 12 threads on one key, with leases; 2. beside it,
# the control: the same callers, the plain pattern; and beside both the
# two runs of 6 (early refresh and its control), judged at the end
herd_spawn_n lease 2 --key herd:lease --threads 12 --seconds 8 --ttl 2 \
	--fill-ms 50 --mode fetch
herd_spawn_n plain 2 --key herd:plain --threads 12 --seconds 8 --ttl 2 \
	--fill-ms 50 --mode plain
# 6. early refresh: 8 threads, TTL 3 s, refresh when under 2 s are left
# (memcached's R), the key set before; the same without refresh is the
# control (its readers meet the expiries)
herd_spawn_n refresh 1 --key herd:refresh --threads 8 --seconds 8 --ttl 3 \
	--lease 3 --refresh 2 --prefill --mode fetch
herd_spawn_n norefresh 1 --key herd:norefresh --threads 8 --seconds 8 \
	--ttl 3 --lease 3 --prefill --mode fetch
herd_start lease 2
herd_start plain 2
herd_start refresh 1
herd_start norefresh 1
herd_wait lease
lease_rc=$?
herd_wait plain
plain_rc=$?
herd_wait refresh
refresh_rc=$?
herd_wait norefresh
norefresh_rc=$?
if [ "$lease_rc" = 0 ]; then
	# shellcheck disable=SC2046
	"$PY" "$CHECK" lease --ttl 2 --wait-ms 4000 --threads 24 $(herd_files lease) ||
		E2E_FAILED=1
	# shellcheck disable=SC2046
	note "leases: $("$PY" "$CHECK" summary --ttl 2 $(herd_files lease))"
else
	fail herd_every_call_answered "a caller process failed: $(cat "$E2E_TMP"/lease.*.err | tail -n 5)"
fi

if [ "$plain_rc" = 0 ]; then
	# shellcheck disable=SC2046
	"$PY" "$CHECK" control --ttl 2 $(herd_files plain) || E2E_FAILED=1
	# shellcheck disable=SC2046
	note "plain: $("$PY" "$CHECK" summary --ttl 2 $(herd_files plain))"
else
	fail herd_control_plain_pattern_herds "a caller process failed: $(cat "$E2E_TMP"/plain.*.err | tail -n 5)"
fi

# 3. the winner dies in its fill, holding a 3 s lease. The survivors and
# the short-bound callers wait for the go that the winner's death gives,
# so they read while its lease is still out. 4. (every 2nd fill raises)
# runs beside it, started at the same go.
herd_spawn_n raised 1 --key herd:raised --threads 8 --seconds 5 --ttl 2 \
	--lease 3 --fill-fails-every 2 --mode fetch
rm -f "$E2E_TMP/killed.go"
ks_in_ns_bg "$NS" timeout 120 "$PY" "$HERD" --spec "$SPEC" --key herd:killed \
	--threads 4 --seconds 5 --ttl 2 --lease 3 --mode fetch \
	--ready "$E2E_TMP/killed.surv.ready" --go "$E2E_TMP/killed.go" \
	</dev/null >"$E2E_TMP/killed.surv.json" 2>"$E2E_TMP/killed.surv.err"
SURV=$KS_BG_PID
HERD_PIDS+=("$SURV")
ks_in_ns_bg "$NS" timeout 120 "$PY" "$HERD" --spec "$SPEC" --key herd:killed \
	--threads 2 --seconds 2 --ttl 2 --lease 3 --wait-ms 300 --mode fetch \
	--ready "$E2E_TMP/killed.short.ready" --go "$E2E_TMP/killed.go" \
	</dev/null >"$E2E_TMP/killed.short.json" 2>"$E2E_TMP/killed.short.err"
SHORT=$KS_BG_PID
HERD_PIDS+=("$SHORT")
for ((i = 0; i < 1200; i++)); do
	[ -f "$E2E_TMP/killed.surv.ready" ] && [ -f "$E2E_TMP/killed.short.ready" ] && break
	sleep 0.05
done
ks_in_ns "$NS" timeout 120 "$PY" "$HERD" --spec "$SPEC" --key herd:killed \
	--threads 4 --seconds 5 --ttl 2 --lease 3 --mode fetch \
	--die-in-fill-after 0 </dev/null >/dev/null 2>"$E2E_TMP/killed.winner.err"
winner_rc=$?
touch "$E2E_TMP/killed.go"
herd_start raised 1
wait "$SURV"
surv_rc=$?
wait "$SHORT"
short_rc=$?
if [ "$winner_rc" -ne 137 ]; then
	fail herd_killed_winner_lease_lapses "the winner was not SIGKILLed in its fill (exit $winner_rc): $(tail -n 3 "$E2E_TMP/killed.winner.err")"
elif [ "$surv_rc" -ne 0 ] || [ "$short_rc" -ne 0 ]; then
	fail herd_killed_winner_lease_lapses "a caller process failed ($surv_rc, $short_rc): $(tail -n 3 "$E2E_TMP"/killed.s*.err)"
else
	"$PY" "$CHECK" killed --lease 3 --died "$E2E_TMP/killed.winner.err" \
		--short "$E2E_TMP/killed.short.json" "$E2E_TMP/killed.surv.json" ||
		E2E_FAILED=1
fi

# 4. every 2nd fill raises
if herd_wait raised; then
	"$PY" "$CHECK" raised --lease 3 "$E2E_TMP/raised.0.json" || E2E_FAILED=1
else
	fail herd_fill_raises_to_its_caller "the caller process failed: $(tail -n 5 "$E2E_TMP/raised.0.err")"
fi

# 5. memcached restarted under a dead winner's 30 s lease: before, a
# caller with a 500 ms bound times out (the control: the lease holds);
# after, the next callers fill at once
ks_in_ns "$NS" timeout 120 "$PY" "$HERD" --spec "$SPEC" --key herd:restart \
	--threads 1 --seconds 5 --ttl 2 --lease 30 --mode fetch \
	--die-in-fill-after 0 </dev/null >/dev/null 2>"$E2E_TMP/restart.winner.err"
winner_rc=$?
herd_run restart_before 1 --key herd:restart --threads 2 --seconds 1 --ttl 2 \
	--lease 30 --wait-ms 500 --mode fetch
ks_stop_pid "$MC_PID" TERM 5
herd_mc_start
if [ "$winner_rc" -ne 137 ]; then
	fail herd_restart_no_lease_left "the winner was not SIGKILLed in its fill (exit $winner_rc): $(tail -n 3 "$E2E_TMP/restart.winner.err")"
elif ! ks_wait_tcp "$NS" 127.0.0.1 11211 10; then
	fail herd_restart_no_lease_left "memcached did not start again"
elif herd_run restart_after 1 --key herd:restart --threads 2 --seconds 1 \
	--ttl 2 --lease 30 --wait-ms 500 --mode fetch; then
	"$PY" "$CHECK" restart --before "$E2E_TMP/restart_before.0.json" \
		"$E2E_TMP/restart_after.0.json" || E2E_FAILED=1
else
	fail herd_restart_no_lease_left "the caller process failed: $(tail -n 5 "$E2E_TMP/restart_after.0.err")"
fi

# 6. early refresh (run beside 1 and 2, above)
if [ "$refresh_rc" = 0 ] && [ "$norefresh_rc" = 0 ]; then
	"$PY" "$CHECK" refresh --ttl 3 --off "$E2E_TMP/norefresh.0.json" \
		"$E2E_TMP/refresh.0.json" || E2E_FAILED=1
else
	fail herd_refresh_no_expiry_seen "a caller process failed: $(tail -n 5 "$E2E_TMP"/*refresh.0.err)"
fi
exit "$E2E_FAILED"
