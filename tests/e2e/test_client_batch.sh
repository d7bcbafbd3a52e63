#!/usr/bin/env bash
# test_client_batch.sh - keysteer_set_many against real memcached
# (build/tests/ks_client_batch, docs/client.md "Batches"): in a network
# namespace of this script's own, an owner on 127.0.0.1 and a replica on
# 127.0.0.2 (memcached 1.6, -t 1), and a second replica address with
# nothing listening. A bad item writes nothing; a batch invalidates every
# old copy (the control with batch_invalidate=off leaves them servable); a
# value memcached refuses makes its owner's unanswered items uncertain
# (-EIO) and the rest is stored and invalidated; after the servers closed
# the idle connections (idle_timeout=2), a batch still succeeds. The namespace and the
# memcacheds (by PID) are removed on every exit path. A few seconds.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init client_batch
e2e_require client_batch "make deps: memcached" memcached

BATCH=$E2E_ROOT/${OUT:-build}/tests/ks_client_batch
NS=ks_cbat_$$
MC_PIDS=()
batch_cleanup() {
	local rc=$? pid
	for pid in "${MC_PIDS[@]}"; do
		ks_stop_pid "$pid" TERM 5
	done
	ks_ns_delete "$NS"
	(exit "$rc")
	e2e_cleanup
}
trap batch_cleanup EXIT

if [ ! -x "$BATCH" ]; then
	fail client_batch_setup "$BATCH is missing; run 'make tests'"
	exit 1
fi
if ! ip netns add "$NS" || ! ip -n "$NS" link set lo up ||
	! ip -n "$NS" addr add 127.0.0.2/8 dev lo; then
	fail client_batch_setup "cannot make namespace $NS"
	exit 1
fi
for a in 127.0.0.1 127.0.0.2; do
	ks_in_ns_bg "$NS" memcached -u nobody -l "$a" -p 11211 -U 0 -m 64 -t 1 -o idle_timeout=2 \
		</dev/null >/dev/null 2>&1
	MC_PIDS+=("$KS_BG_PID")
	if ! ks_wait_tcp "$NS" "$a" 11211 5; then
		fail client_batch_setup "memcached did not start on $a"
		exit 1
	fi
done
# its control handle takes batch_invalidate=off, a test-only word
KEYSTEER_TEST_SWITCHES=1 ks_in_ns "$NS" timeout 60 "$BATCH" 127.0.0.1:11211 \
	127.0.0.2:11211 127.0.0.3:11211
