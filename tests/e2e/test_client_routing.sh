#!/usr/bin/env bash
# test_client_routing.sh - libkeysteer following agents' routing documents
# where there is no etcd (docs/client.md, "The view from routing
# documents"): the steering topology with 2 shards, 2 L1 replicas, agents
# with --replicas --listen (GET /routing.json on the shard's address) and
# no etcd; handles with servers=SHARDS routing=URL0,URL1.
#
# 1. A flash key read over UDP (ks_load) turns hot until a handle sees it
#    armed from the documents; the time printed.
# 2. build/tests/ks_client_fresh for 8 s: a writer through the library on
#    client 1, 2 readers through the library on client 2: 0 stale reads,
#    reads from copies, no failed request (writes invalidate the union of
#    the documents' replica sets).
# 3. Control: agents with --copy-protocol off --fill-delay-ms 20 and
#    writes in pairs 10 ms apart (a fill that read the owner before the
#    second write lands after its invalidation): the same check must find
#    stale reads from copies in a whole run; with --copy-protocol on and
#    the same delay and writes, none, with at least 0.5% of the reads from
#    copies.
# 4. A bad routing URL is refused at open with its message.
# Everything is this script's own, by PID, and removed on every exit path.
# About 60 s.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../../user/scripts/steer_topo.sh
. "$E2E_ROOT/user/scripts/steer_topo.sh"
# shellcheck source=client_lib.sh
. "$(dirname "$0")/client_lib.sh"
e2e_init client_routing
ETCD_PID=
LOAD_PID=
trap e2e_topo_etcd_cleanup EXIT

FRESH=$E2E_ROOT/${OUT:-build}/tests/ks_client_fresh
client_need_bins client_routing "$LOAD" "$FRESH" "$EXAMPLE" || exit 1
KEY=flash:1
HTTP_PORT=9180
DURATION=${CLIENT_ROUTING_DURATION:-8}

client_topo_up client_routing 2 2 || exit 1
SHARDS=$(awk '!/^#/ && NF {printf "%s%s", sep, $1; sep=","}' "$STEER_SHARDS_FILE")
ROUTING=http://${STEER_SHARD_ADDR[0]}:$HTTP_PORT/routing.json,http://${STEER_SHARD_ADDR[1]}:$HTTP_PORT/routing.json
# timeout_ms: no server here is down or slow on purpose, so a request's
# deadline only has to outlast a loaded machine (300 ms timed a write out
# at load 25 on 2 cores, and the runs below must have no failed request).
SPEC="servers=$SHARDS routing=$ROUTING timeout_ms=2000 routing_poll_ms=200"
note "spec: $SPEC"

# agents ARGS...: both agents, no etcd, their documents served
agents() {
	local i
	for i in 0 1; do
		if ! steer_agent_start "$i" --interval 0.5 --sample 1 \
			--shard-capacity 1000 --hot-fraction 0.1 \
			--shards-file "$STEER_SHARDS_FILE" \
			--self "${STEER_SHARD_ADDR[$i]}:$STEER_PORT" \
			--listen "${STEER_SHARD_ADDR[$i]}:$HTTP_PORT" \
			--replicas "$STEER_REPLICAS" "$@"; then
			fail client_routing_agents "agent $i ($*) did not attach: $(head -n 3 "$STEER_TMP/agent.$i.out")"
			return 1
		fi
	done
}
fresh() { client_fresh "$1" "$2"; }
# expect NAME WANT TEST [MIN_COPY_PERMILLE]: client_lib.sh's verdict
expect() { client_fresh_expect "$@"; }
jexpr() { "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$E2E_TMP/$1.json" "$2" 2>/dev/null; }
summary() {
	jexpr "$1" '"reads %d: %d from copies (%.1f%%), %d fallbacks, %d stale (%d from copies), %d failed; writes %d (%d failed), %d invalidations" % (d["reads"], d["copy_reads"], 100.0 * d["copy_reads"] / max(d["reads"], 1), d["fallbacks"], d["stale_reads"], d["stale_from_copies"], d["read_errors"], d["writes"], d["write_errors"], d["invalidations"])' ||
		echo "no document: $(head -c 300 "$E2E_TMP/$1.err")"
}
restart() {
	steer_agents_stop
	agents "$@" || return 1
	client_wait_armed "$EXAMPLE" || { fail client_routing_rearm "not armed again ($*): $ARMED_WHY"; return 1; }
}

agents || exit 1
client_hot_load client_routing "$EXAMPLE" "$LOAD" "$KEY" v0 100 || exit 1

# --- 1. armed from the documents -------------------------------------------
client_expect_armed client_routing || exit 1

# --- 2. no stale read ---------------------------------------------------------
fresh run 10
note "routing documents, copy protocol on: $(summary run)"
if [ "$(cat "$E2E_TMP/run.rc")" = 0 ] && [ "$(jexpr run 'int(d["copy_reads"] > 0 and d["writes"] > 100 and d["invalidations"] >= 2 * d["writes"])')" = 1 ]; then
	pass client_routing_no_stale_reads_copies_used
else
	fail client_routing_no_stale_reads_copies_used "exit $(cat "$E2E_TMP/run.rc"): $(summary run) $(head -c 300 "$E2E_TMP/run.err")"
fi

# --- 3. the control, then the protocol under the same race ------------------
# writes 10 ms then 90 ms apart: the first one's fill (20 ms late)
# overlaps the second in every cycle, the second's has time to be read
# (test_client_fresh.sh); 160 writes in 8 s, at least 50 on a loaded
# machine (test-only switches: these agents alone get
# KEYSTEER_TEST_SWITCHES=1)
if KEYSTEER_TEST_SWITCHES=1 restart --copy-protocol off --fill-delay-ms 20; then
	fresh control 10,90
	note "control (--copy-protocol off --fill-delay-ms 20): $(summary control)"
	expect control stale client_routing_control_finds_stale_reads 0 50
fi
if KEYSTEER_TEST_SWITCHES=1 restart --copy-protocol on --fill-delay-ms 20; then
	fresh delayed 10,90
	note "copy protocol on, --fill-delay-ms 20: $(summary delayed)"
	expect delayed clean client_routing_delayed_fills_no_stale_reads 5 50
fi

# --- 4. a bad URL -------------------------------------------------------------
out=$(ks_in_ns "$CNS2" "$EXAMPLE" "servers=$SHARDS routing=ftp://x/routing.json" stats 2>&1)
rc=$?
out2=$(ks_in_ns "$CNS2" "$EXAMPLE" "routing=$ROUTING" stats 2>&1)
rc2=$?
if [ "$rc" -ne 0 ] && grep -q 'routing=ftp://x/routing.json: want http' <<<"$out" &&
	[ "$rc2" -ne 0 ] && grep -q 'servers=' <<<"$out2"; then
	pass client_routing_bad_spec_refused
else
	fail client_routing_bad_spec_refused "exit $rc: $out; exit $rc2: $out2"
fi
