#!/usr/bin/env bash
# test_client_limit_fleet.sh - a rate limit through libkeysteer over TCP
# held fleet-wide with no limit_share (docs/limits.md, "How the limit is
# shared"): each client process's view registers under its lease for the
# limited keys it calls (limit_clients/HASH/ID in etcd), every view counts
# the registrations, and each bucket takes rate / that count. Real
# memcached and real etcd on the loopback of a namespace of this test's
# own; the ring and `limit run:1 40/s` written by 'agent ring set' and
# 'agent pins set' (no agent); client processes of tests/e2e/ks_limit_fleet.py
# (the library through its Python adapter), each with its own view, each
# offering 100 gets/s of run:1 (the four together 10x the limit; a low
# rate, so that Python processes starved by a loaded machine still call
# faster than their shares).
#
# 1. Four processes, each open, then calling together for 6 s: from 1 s
#    after the last one's first call to the first one's end (W s), the
#    calls let through fleet-wide are at most 40 x W + 4 buckets' bursts
#    (the burst of a share of 10/s: 1), each bucket at a share of 4 in
#    the window's middle, each view registered with no refusal by etcd.
# 2. The control: the same with limit_clients=off (a test-only switch
#    under KEYSTEER_TEST_SWITCHES=1: no registration, each process the
#    whole rate, as before this change): more than that bound.
# 3. Join and leave: three processes; once each is at a share of 3, a
#    fourth for 3 s; once it has closed and each of the three is at 3
#    again, the three stop (each wait an event, 60 s at most). Each of
#    the three switches to a share of 4 within 5 s of the fourth's first
#    call and back to 3 within 5 s of its close (measured: milliseconds;
#    5 s leaves room for a loaded machine); from the three at 3 to the
#    first one's end, the fleet lets through at most 40 x W + 4 bursts +
#    what the three's old shares let through above their new ones until
#    they saw the fourth (rate/12 x 3 x the delay measured). The delays
#    and that over-admission are printed.
# 4. Every process's refusals equal its handle's limit_refused (a get
#    that fails, memcached slower than timeout_ms on a loaded machine, is
#    printed, not counted either way).
# Everything is this script's own (namespace kls_lf_PID, memcached, etcd
# and the clients by PID), removed on every exit path. About 30 s.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init client_limit_fleet
e2e_need_etcd client_limit_fleet || exit 1

LIB=$E2E_ROOT/${OUT:-build}/libkeysteer.so
CNS=kls_lf_$$ # e2e_cleanup deletes it
MC_PORT=42401
URL=http://127.0.0.1:42402
CLUSTER=klslf
RATE=40 OFFER=100
ETCD_PID=
CPIDS=()

fleet_cleanup() {
	local rc=$? p
	for p in "${CPIDS[@]}"; do
		ks_stop_pid "$p" TERM 5
	done
	[ -n "$ETCD_PID" ] && ks_stop_pid "$ETCD_PID" TERM 5
	(exit "$rc")
	e2e_cleanup
}
trap fleet_cleanup EXIT

if [ ! -e "$LIB" ]; then
	fail client_limit_fleet_setup "$LIB is missing; run 'make all'"
	exit 1
fi
e2e_one_shard_fleet client_limit_fleet_setup klslf 42403 || exit 1
printf 'limit run:1 %s/s\n' "$RATE" >"$E2E_TMP/limit.pins"
if ! out=$(ks_in_ns "$CNS" "$AGENT" pins set --etcd "$URL" --cluster "$CLUSTER" \
	--pins "$E2E_TMP/limit.pins" 2>&1); then
	fail client_limit_fleet_setup "pins set: $out"
	exit 1
fi

SPEC="etcd=$URL cluster=$CLUSTER timeout_ms=5000 etcd_timeout_ms=10000"

# client NAME SECONDS GO [SPEC_WORDS]: one process in the background, its
# JSON in $E2E_TMP/NAME.json, its first call's time in NAME.start; its
# calls wait for the file GO (NAME.json.ready says it is open).
client() {
	ks_in_ns_bg "$CNS" env KEYSTEER_LIB="$LIB" KEYSTEER_TEST_SWITCHES=1 \
		PYTHONPATH="$E2E_ROOT/user/client/python:$E2E_DIR" \
		timeout 180 "$PY" "$E2E_DIR/ks_limit_fleet.py" "$SPEC${4:+ $4}" run:1 \
		"$OFFER" "$2" "$E2E_TMP/$1.json" "$E2E_TMP/$1.start" "$E2E_TMP/$3" \
		"$E2E_TMP/stop.$1" \
		2>"$E2E_TMP/$1.err"
	CPIDS+=("$KS_BG_PID")
}

# go FILE NAME...: once each one is open (120 s at most), FILE made
go() {
	local f=$1 n deadline=$((SECONDS + 120))
	shift
	for n in "$@"; do
		while [ ! -e "$E2E_TMP/$n.json.ready" ]; do
			[ "$SECONDS" -ge "$deadline" ] && return 1
			sleep 0.05
		done
	done
	: >"$E2E_TMP/$f"
}

# wait_start NAME...: each one's first call made (60 s at most)
wait_start() {
	local n deadline=$((SECONDS + 60))
	for n in "$@"; do
		while [ ! -s "$E2E_TMP/$n.start" ]; do
			[ "$SECONDS" -ge "$deadline" ] && return 1
			sleep 0.05
		done
	done
}

# wait_share N NAME...: each one's bucket at a share of N (60 s at most)
wait_share() {
	local want=$1 n deadline=$((SECONDS + 60))
	shift
	for n in "$@"; do
		until [ "$(cat "$E2E_TMP/$n.json.share" 2>/dev/null)" = "$want" ]; do
			[ "$SECONDS" -ge "$deadline" ] && return 1
			sleep 0.05
		done
	done
}

# wait_all: every client process ended; 1 if one failed
wait_all() {
	local p rc=0
	for p in "${CPIDS[@]}"; do
		wait "$p" || rc=1
	done
	CPIDS=()
	return "$rc"
}

# analyse MODE NAME...: the checks of MODE (fleet, control, join) over
# the processes' JSON; PASS/FAIL lines
analyse() {
	"$PY" - "$E2E_TMP" "$RATE" "$@" <<'PYEOF'
import json, os, sys
tmp, rate, mode, names = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
d = {n: json.load(open(os.path.join(tmp, n + ".json"))) for n in names}

def burst(r):  # ks_limit_burst: a tenth of a second's worth, at least 1
    return max(1, r // 10)

def first(n):
    return d[n]["allowed"][0] if d[n]["allowed"] else d[n]["start"]

def admitted(lo, hi, who=None):
    return sum(1 for n in (who or names) for t in d[n]["allowed"] if lo <= t < hi)

def share_val(n, t):
    """n's share at time t (its last change at or before t)"""
    cur = None
    for ts, s in d[n]["shares"]:
        if ts > t:
            break
        cur = s
    return cur

def share_at(n, t0, want):
    """the first time at or after t0 that n's share was want"""
    cur = None
    for t, s in d[n]["shares"]:
        if t <= t0:
            cur = s
            continue
        if cur == want:
            return t0
        if s == want:
            return t
        cur = s
    return t0 if cur == want else None

ok = True
def check(name, cond, msg):
    global ok
    print(("PASS %s (%s)" if cond else "FAIL %s: %s") % (name, msg))
    ok = ok and cond

bad = ["%s: refused %d, limit_refused %d" % (n, d[n]["refused"], d[n]["limit_refused"])
       for n in names if d[n]["refused"] != d[n]["limit_refused"]]
# a get that failed (memcached slower than timeout_ms on a loaded
# machine) is neither let through nor refused: said, not a failure of
# the limit
for n in names:
    if d[n]["errors"]:
        print("  %s: %d gets failed (%s)" % (n, d[n]["errors"], "; ".join(d[n]["errors_why"])))

if mode in ("fleet", "control"):
    lo = max(first(n) for n in names) + 1.0
    hi = min(d[n]["end"] for n in names)
    w = hi - lo
    p = len(names)
    bound = rate * w + p * burst(rate // p)
    got = admitted(lo, hi)
    offered = sum(d[n]["calls"] for n in names) / (max(d[n]["end"] for n in names) - min(d[n]["start"] for n in names))
    mid = [share_val(n, (lo + hi) / 2) for n in names]
    msg = "%d let through in %.2f s, bound %.0f (%d/s x %.2f s + %d bursts of %d), %.0f/s; offered %.0f/s; shares in the window's middle %s" % (
        got, w, bound, rate, w, p, burst(rate // p), got / w, offered, mid)
    t_a = min(d[n]["start"] for n in names)
    print("  whole run, the start included: %d let through in %.2f s (%.0f/s)" % (
        admitted(t_a, hi), hi - t_a, admitted(t_a, hi) / (hi - t_a)))
    if mode == "fleet":
        check("client_limit_fleet_within_limit", w > 2 and got <= bound, msg)
        check("client_limit_fleet_shares_counted",
              all(x == p for x in mid) and all(d[n]["reg_puts"] >= 1 and not d[n]["reg_errors"] for n in names),
              "shares in the window's middle %s; registrations put %s, refused by etcd %s" % (
                  mid, [d[n]["reg_puts"] for n in names], [d[n]["reg_errors"] for n in names]))
        check("client_limit_fleet_counts_equal", not bad,
              "; ".join(bad) or "%d processes' refusals each = limit_refused" % p)
    else:
        check("client_limit_fleet_control_exceeds",
              w > 2 and got > bound and not any(d[n]["reg_puts"] for n in names), msg)
else:  # join: names = the three, then the fourth
    three, four = names[:3], names[3]
    j, l = first(four), d[four]["closing"]
    jd = [share_at(n, j, 4) for n in three]
    ld = [share_at(n, l, 3) for n in three]
    jdelay = max((t - j) if t is not None else 99 for t in jd)
    ldelay = max((t - l) if t is not None else 99 for t in ld)
    # from the three at a share of 3 (the fourth started after that)
    lo = max(share_at(n, d[n]["start"], 3) or d[n]["start"] for n in three)
    hi = min(d[n]["end"] for n in three)
    w = hi - lo
    # the three's shares of 1/3 where 1/4 was due, until they saw it
    over = rate / 12.0 * 3 * max(jdelay, 0)
    bound = rate * w + 4 * burst(rate // 3) + over
    got = admitted(lo, hi, names)
    jsec = admitted(j, j + 1.0, names)
    print("  window: %.2f s from the three at a share of 3, the fourth from %.2f s to %.2f s in it" % (w, j - lo, l - lo))
    print("  join: the three at a share of 4 %s s after the fourth's first call; "
          "%d let through fleet-wide in the second after it (the limit: %d)" % (
              " ".join("%.3f" % ((t - j) if t is not None else -1) for t in jd), jsec, rate))
    print("  leave: the three at a share of 3 %s s after the fourth began to close" % (
        " ".join("%.3f" % ((t - l) if t is not None else -1) for t in ld)))
    if bad:
        check("client_limit_fleet_counts_equal", False, "; ".join(bad))
    check("client_limit_fleet_join_adjusts", jdelay <= 5.0, "%.3f s" % jdelay)
    check("client_limit_fleet_leave_adjusts", ldelay <= 5.0, "%.3f s" % ldelay)
    check("client_limit_fleet_join_within_limit", lo < j < l < hi and got <= bound,
          "%d let through in %.2f s, bound %.0f (incl. %.1f over while the three had not seen the fourth)"
          % (got, w, bound, over))
sys.exit(0 if ok else 1)
PYEOF
}

# 1. four together
for n in a b c d; do
	client "f$n" 6 go.f
done
if ! go go.f fa fb fc fd || ! wait_all; then
	fail client_limit_fleet_run "a client failed: $(cat "$E2E_TMP"/f?.err | head -c 400)"
	exit 1
fi
analyse fleet fa fb fc fd

# 2. the control: each process the whole rate
for n in a b c d; do
	client "c$n" 6 go.c limit_clients=off
done
if ! go go.c ca cb cc cd || ! wait_all; then
	fail client_limit_fleet_run "a control client failed: $(cat "$E2E_TMP"/c?.err | head -c 400)"
	exit 1
fi
analyse control ca cb cc cd

# 3. join and leave: the fourth once the three run
for n in a b c; do
	client "j$n" 60 go.j
done
if ! go go.j ja jb jc || ! wait_start ja jb jc || ! wait_share 3 ja jb jc; then
	fail client_limit_fleet_run "the three did not start, or not reach a share of 3, within 60 s"
	exit 1
fi
client jd 3 go.j
# the fourth's end, then each of the three at a share of 3 again (their
# runs end on that event, 30 s at most, not at a time)
J4=$KS_BG_PID
wait "$J4"
j4rc=$?
CPIDS=("${CPIDS[@]:0:3}")
wait_share 3 ja jb jc # or 60 s: the check below says which
for n in ja jb jc; do
	: >"$E2E_TMP/stop.$n"
done
if ! wait_all || [ "$j4rc" != 0 ]; then
	fail client_limit_fleet_run "a client failed: $(cat "$E2E_TMP"/j?.err | head -c 400)"
	exit 1
fi
analyse join ja jb jc jd
exit "$E2E_FAILED"
