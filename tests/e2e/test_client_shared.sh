#!/usr/bin/env bash
# test_client_shared.sh - one view per process (issue 25, docs/client.md
# "One view per process"): the library's handles of one process that
# follow the same fleet share one follower (one etcd client, one watch,
# one thread) and one view. On the library's usual fleet (2 shards, etcd
# in client 1's namespace, the ring in it; no agent is needed):
#
# 1. 50 handles in one process: one thread more than before the opens,
#    etcd's watcher total (its /metrics etcd_debugging_mvcc_watcher_total)
#    up by exactly one, and each handle's stats say 50 handles share its
#    view. Control: view=own, the follower per handle of before: 50
#    threads and 50 watches more.
# 2. 1,000 handles in one process, each having read one key (a memcached
#    connection each): within 256 MiB of RSS. Memory and open time per
#    handle printed (docs/client.md has the figures).
# 3. An open on a follower whose view lags (view_delay_ms=, test-only:
#    the watch's events held back 10 min): a key put under the prefix,
#    then a second handle opened: its view is at least at the put's
#    revision (the open's read), while the view it joined was older just
#    before (the control: what the open would have returned without it).
#
# 4. etcd SIGKILLed under two handles sharing one follower, with
#    stale_view_ms=1000 and 2500: both see the view down, and each turns
#    owners-only after its own stale_view_ms (from the drop, within 1 s
#    more on a loaded machine), not before (less the 250 ms poll turn:
#    the view was last seen up up to one turn before the kill). Last:
#    etcd stays dead.
#
# The control for a follower that skips events (view_skip=hot) is in
# test_client_faults.sh, where the L1 and copies show its stale reads.
# Everything is this script's own, by PID, removed on every exit path.
# About 30 s.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../../user/scripts/steer_topo.sh
. "$E2E_ROOT/user/scripts/steer_topo.sh"
# shellcheck source=client_lib.sh
. "$(dirname "$0")/client_lib.sh"
client_init client_shared

MANY=$E2E_ROOT/${OUT:-build}/tests/ks_client_many
client_need_bins client_shared "$MANY" || exit 1
CLUSTER=cshared
N=${CLIENT_SHARED_N:-50}
BIG=${CLIENT_SHARED_BIG:-1000}
LIMIT_KB=$((256 * 1024))

client_fleet_up client_shared 2 0 || exit 1
METRICS=$URL/metrics

jexpr() { "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$E2E_TMP/$1.json" "$2" 2>/dev/null; }
nodoc() { echo "no document: $(head -c 300 "$E2E_TMP/$1.json") $(head -c 300 "$E2E_TMP/$1.err")"; }
# many NAME N WANT [SPEC WORDS...]: N handles, etcd's watchers waited for
# until they rose by WANT
many() {
	local name=$1 n=$2 want=$3
	shift 3
	ks_in_ns "$CNS" timeout 300 "$MANY" many "$SPEC $*" "$n" "$METRICS" "$want" \
		>"$E2E_TMP/$name.json" 2>"$E2E_TMP/$name.err"
}
summary() {
	jexpr "$1" '"%d handles: RSS %d -> %d kB (%.1f kB a handle), threads %d -> %d, open first %.1f ms, mean %.2f ms, close all %.0f ms; view shared by %d; etcd watchers %d -> %d (waited %.0f ms)" % (d["handles"], d["rss_before_kb"], d["rss_after_kb"], d["rss_per_handle_kb"], d["threads_before"], d["threads_after"], d["open_first_ms"], d["open_mean_ms"], d["close_all_ms"], d["view_handles"], d["watchers_before"], d["watchers_after"], d["watch_wait_ms"])' ||
		nodoc "$1"
}

# --- 1. one follower for N handles -----------------------------------------
many shared "$N" 1
note "shared: $(summary shared)"
many own "$N" "$N" view=own
note "control, view=own: $(summary own)"
if [ "$(jexpr shared "int(d['view_handles'] == $N and d['gets'] == $N and d['threads_after'] - d['threads_before'] == 1 and d['watchers_before'] >= 0 and d['watchers_after'] - d['watchers_before'] == 1)")" = 1 ]; then
	pass client_shared_one_follower_per_process
else
	fail client_shared_one_follower_per_process "$(summary shared)"
fi
if [ "$(jexpr own "int(d['view_handles'] == 1 and d['threads_after'] - d['threads_before'] == $N and d['watchers_after'] - d['watchers_before'] == $N)")" = 1 ]; then
	pass client_shared_control_own_follower_each
else
	fail client_shared_control_own_follower_each "$(summary own)"
fi

# --- 2. 1,000 handles ------------------------------------------------------
many big "$BIG" 1
note "$(summary big)"
if [ "$(jexpr big "int(d['handles'] == $BIG and d['gets'] == $BIG and d['view_handles'] == $BIG and d['rss_after_kb'] <= $LIMIT_KB)")" = 1 ]; then
	pass client_shared_1000_handles_within_256mib
else
	fail client_shared_1000_handles_within_256mib "limit $LIMIT_KB kB: $(summary big)"
fi

# --- 3. an open's view is no older than etcd at its open ---------------------
PUT="etcdctl --endpoints $URL put /keysteer/$CLUSTER/probe/open x -w json >$E2E_TMP/put.json"
KEYSTEER_TEST_SWITCHES=1 ks_in_ns "$CNS" timeout 120 "$MANY" fresh \
	"$SPEC view_delay_ms=600000" "$PUT" >"$E2E_TMP/fresh.json" 2>"$E2E_TMP/fresh.err"
PUT_REV=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["header"]["revision"])' "$E2E_TMP/put.json" 2>/dev/null)
note "put at revision ${PUT_REV:-none}; $(jexpr fresh '"A opened at %d, A just before B %d, B opened at %d, A after B %d; %d handles" % (d["a_open_revision"], d["a_before_b_revision"], d["b_open_revision"], d["a_after_b_revision"], d["view_handles"])' || nodoc fresh)"
if [ -n "$PUT_REV" ] && [ "$(jexpr fresh "int(d['view_handles'] == 2 and d['b_open_revision'] >= $PUT_REV and d['a_after_b_revision'] >= $PUT_REV)")" = 1 ]; then
	pass client_shared_open_view_no_older_than_etcd
else
	fail client_shared_open_view_no_older_than_etcd "put ${PUT_REV:-none}: $(head -c 300 "$E2E_TMP/fresh.json")"
fi
if [ -n "$PUT_REV" ] && [ "$(jexpr fresh "int(d['a_before_b_revision'] < $PUT_REV)")" = 1 ]; then
	pass client_shared_open_control_joined_view_lagged
else
	fail client_shared_open_control_joined_view_lagged "the joined view was not behind the put (${PUT_REV:-none}): $(head -c 300 "$E2E_TMP/fresh.json")"
fi

# --- 4. etcd gone under a shared follower --------------------------------------
ks_in_ns "$CNS" timeout 60 "$MANY" down "$SPEC" "$ETCD_PID" \
	>"$E2E_TMP/down.json" 2>"$E2E_TMP/down.err"
ETCD_PID= # SIGKILLed by the driver
note "etcd killed: $(jexpr down '"%d handles on the follower; down at %s ms, owners only at %s ms (stale_view_ms %s)" % (d["view_handles"], d["down_ms"], d["owners_ms"], d["stale_ms"])' || nodoc down)"
if [ "$(jexpr down "int(d['view_handles'] == 2 and d['up_before'] == 1 and all(0 <= x <= 5000 for x in d['down_ms']) and all(o >= s - 300 and o - dn <= s + 1000 for o, dn, s in zip(d['owners_ms'], d['down_ms'], d['stale_ms'])))")" = 1 ]; then
	pass client_shared_etcd_gone_each_handle_owners_only_after_its_stale_view
else
	fail client_shared_etcd_gone_each_handle_owners_only_after_its_stale_view "$(head -c 300 "$E2E_TMP/down.json")"
fi
