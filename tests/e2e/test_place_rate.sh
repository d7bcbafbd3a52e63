#!/usr/bin/env bash
# test_place_rate.sh - the ring placement's 1 in P under load, end to end
# (issue 27; docs/ring.md, "1 in P of the sampled keys under load"): the
# agent runs with --sample 1, a ring of 4 shards whose shard #1 is the
# memcached we send to (--self) and --place-target 64; a real client
# (pymemcache) gets 20,000 distinct keys, one request each, at most
# 4,000 a second (about 10 intervals of 0.5 s), far more than 64 a
# second on the CPU that carries them. Checked from every report (agent report --watch --json) and the
# last: some CPU placed 1 in P > 1 of its sampled keys while the load ran,
# every CPU is back at 1 once it stopped; every shard's reads_total is
# within 4 sqrt(true (Pmax - 1)) plus the slack of the moves of P of the
# keys `agent ring lookup` gives it, their sum within the slack of the
# keys sent (each placed key counted P), and misdirected_total follows
# (all of every other shard's, none of self's). Control: the placements
# themselves (ring_hit), what counting 1 a placement would sum to, must
# miss the sum's bound. The program tests (tests/prog/t_place.c) check
# the datapath's counts exactly; this checks the agent's choice of P,
# its epochs, and the report.
#
# Then real shards (issue 27, the shard load under P > 1): four memcacheds
# in the server namespace (ports 11211-11214), a ring of those four, the
# agent on all four ports with --sample 1 and --place-target 1000; a
# client sends each of 12,000 keys to the shard the ring gives it, and
# 8,000 more gets of shard #2's keys (a skewed load: shard #2 about 3x
# each other), shuffled, at most 5,000 a second (P 2-8 on the CPUs that
# carry it). Each shard's reads_total must agree with that memcached's own
# cmd_get delta within 4 sqrt(t (Pmax - 1)) + slack (the reasoning is in
# ks_ring_keys.py, cmd_shard_load: the shuffled requests make the placed
# keys a random sample of each CPU's), shard #2 must be the busiest by
# cmd_get, by reads_total and in every interval with the load, and some
# CPU must have placed 1 in P > 1. Control: the same run with the agent's
# test switch --place-scaling off (each placement adds 1, not P;
# KEYSTEER_TEST_SWITCHES=1) must miss the same bound. About 30 s more.
#
# Set-up as lib.sh: namespaces ks_cli_PID / ks_srv_PID joined by a veth
# pair (198.18.0.1 / 198.18.0.2), memcached in ks_srv, the agent on the
# server-side veth, everything removed by the EXIT trap. The other shards
# (198.18.0.3-5) exist only in the ring: no packet is sent to them.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init place_rate
e2e_require place_rate_setup "make deps: python3" "$PY"
e2e_net_up

KEYS=$E2E_TMP/keys.txt
SHARDS=$E2E_TMP/shards.txt
WATCH=$E2E_TMP/watch.jsonl
SELF=198.18.0.2:$PORT
NKEYS=20000
RK() { "$PY" "$E2E_DIR/ks_ring_keys.py" "$@"; }

printf '# the clients ring\n198.18.0.3:11211\n%s\n198.18.0.4:11211\n198.18.0.5:11211\n' \
	"$SELF" >"$SHARDS"
RK make "$KEYS" --count "$NKEYS"
"$AGENT" ring lookup --shards-file "$SHARDS" --distribution ketama <"$KEYS" >"$E2E_TMP/lookup.txt"
RK expect --lookup "$E2E_TMP/lookup.txt" --self 1 --nshards 4 \
	>"$E2E_TMP/expect.json"

if ! e2e_agent_start --sample 1 --interval 0.5 --shards-file "$SHARDS" \
	--self "$SELF" --distribution ketama --place-target 64; then
	fail place_rate_setup "the agent did not attach with a ring"
	exit 1
fi
# keys sent before the ring is pushed count on no shard
e2e_wait_line "$E2E_TMP/agent.out" '^keysteer: ring v1 ' "$E2E_AGENT_PID"
grep -q 'ring placements at most ~64/s per CPU' "$E2E_TMP/agent.out" ||
	fail place_rate_setup "the attach line does not name the target: $(head -c 400 "$E2E_TMP/agent.out")"
# every interval seen: polled 5 times an interval, at the e2e loads' nice
ks_in_ns_bg "$SNS" nice -n "$KS_NICE" "$AGENT" report --iface "$SIF" \
	--watch --json --interval 0.1 </dev/null >"$WATCH" 2>"$E2E_TMP/watch.err"
E2E_POLLER_PID=$KS_BG_PID
if ! e2e_wait_watch_seq "$WATCH" 1; then
	fail place_rate_setup "no interval reported in 60 s"
	exit 1
fi
t0=$SECONDS
# paced, so that the load spans about 10 intervals however fast the
# machine: the first, at P 1, places what it gets; the rest 1 in P
if ! e2e_client "$E2E_DIR/ks_ring_keys.py" send --server "$SADDR" \
	--port "$PORT" --keys "$KEYS" --rate 4000; then
	fail place_rate_setup "the client could not send the keys"
	exit 1
fi
note "$NKEYS gets in about $((SECONDS - t0)) s"
# every key in an interval closed after the load, then one at rest
n=$(e2e_watch_seq "$WATCH")
if ! e2e_wait_watch_seq "$WATCH" $((n + 3)); then
	fail place_rate_setup "the intervals stopped after the load"
	exit 1
fi
ks_stop_pid "$E2E_POLLER_PID" TERM 5
E2E_POLLER_PID=
e2e_agent report --iface "$SIF" --json >"$E2E_TMP/final.json" 2>/dev/null
RK place --watch "$WATCH" --report "$E2E_TMP/final.json" \
	--expect "$E2E_TMP/expect.json" --name place_rate || E2E_FAILED=1
e2e_agent_stop_clean place_rate

# ---- real shards: each shard's load against memcached's cmd_get ----
# the three more memcacheds are this script's, stopped by pid on every
# exit path before lib.sh's cleanup (which stops its own first one)
MC_PIDS=()
place_cleanup() {
	local rc=$? p
	for p in "${MC_PIDS[@]}"; do ks_stop_pid "$p" TERM 5; done
	(exit "$rc")
	e2e_cleanup
}
trap place_cleanup EXIT
MC0=$KS_MEMCACHED_PID
PORTS=$PORT
RING=$SADDR:$PORT
for i in 1 2 3; do
	if ! ks_start_memcached "$SNS" "$SADDR" $((PORT + i)); then
		KS_MEMCACHED_PID=$MC0
		fail place_shards_setup "memcached did not start on port $((PORT + i))"
		exit 1
	fi
	MC_PIDS+=("$KS_MEMCACHED_PID")
	PORTS+=,$((PORT + i))
	RING+=,$SADDR:$((PORT + i))
done
KS_MEMCACHED_PID=$MC0
HOT=2
head -n 12000 "$KEYS" >"$E2E_TMP/keys2.txt"
"$AGENT" ring lookup --shards "$RING" --distribution ketama \
	<"$E2E_TMP/keys2.txt" >"$E2E_TMP/lookup2.txt"
# stats NAME: every shard's memcached stats (ks_clients.py's reader) as
# a JSON list into $E2E_TMP/NAME.json, asked inside the server namespace
# (over its loopback, where the agent does not look)
stats() {
	local p sep=
	{
		echo '['
		for p in ${PORTS//,/ }; do
			echo "$sep"
			sep=,
			ks_in_ns "$SNS" "$PY" "$E2E_DIR/ks_clients.py" stats "$SADDR" "$p" ||
				return 1
		done
		echo ']'
	} >"$E2E_TMP/$1.json"
}
# shards_run NAME [--control] [AGENT ARGS...]: one agent run under the
# skewed load, checked by ks_ring_keys.py shard-load
shards_run() {
	local name=$1 ctl= n w
	shift
	[ "${1:-}" = --control ] && { ctl=--control; shift; }
	w=$E2E_TMP/$name.watch.jsonl
	if ! e2e_agent_start --sample 1 --interval 0.5 --shards "$RING" \
		--ports "$PORTS" --distribution ketama --place-target 1000 "$@"; then
		fail "${name}_setup" "the agent did not attach with the ring of 4 shards"
		return 1
	fi
	if ! e2e_wait_line "$E2E_TMP/agent.out" '^keysteer: ring v1 ' "$E2E_AGENT_PID"; then
		fail "${name}_setup" "no ring pushed: $(head -c 400 "$E2E_TMP/agent.out")"
		return 1
	fi
	ks_in_ns_bg "$SNS" nice -n "$KS_NICE" "$AGENT" report --iface "$SIF" \
		--watch --json --interval 0.1 </dev/null >"$w" 2>"$E2E_TMP/$name.watch.err"
	E2E_POLLER_PID=$KS_BG_PID
	if ! e2e_wait_watch_seq "$w" 1 || ! stats "$name.before"; then
		fail "${name}_setup" "no interval reported, or no stats"
		return 1
	fi
	if ! e2e_client "$E2E_DIR/ks_ring_keys.py" send-shards \
		--lookup "$E2E_TMP/lookup2.txt" --hot "$HOT" --extra 8000 --rate 5000; then
		fail "${name}_setup" "the client could not send the keys"
		return 1
	fi
	# every get in an interval closed after the load
	n=$(e2e_watch_seq "$w")
	if ! e2e_wait_watch_seq "$w" $((n + 2)) || ! stats "$name.after"; then
		fail "${name}_setup" "the intervals stopped after the load"
		return 1
	fi
	ks_stop_pid "$E2E_POLLER_PID" TERM 5
	E2E_POLLER_PID=
	e2e_agent report --iface "$SIF" --json >"$E2E_TMP/$name.final.json" 2>/dev/null
	RK shard-load --watch "$w" --report "$E2E_TMP/$name.final.json" \
		--before "$E2E_TMP/$name.before.json" --after "$E2E_TMP/$name.after.json" \
		--hot "$HOT" --name "$name" $ctl || E2E_FAILED=1
	e2e_agent_stop_clean "$name"
}
shards_run place_shards
# the control: each placement counted 1, not P
KEYSTEER_TEST_SWITCHES=1 shards_run place_shards_unit --control \
	--place-scaling off
grep -q 'place-scaling off' "$E2E_TMP/agent.out" ||
	fail place_shards_unit_switch "the agent did not warn of the test switch: $(head -c 300 "$E2E_TMP/agent.out")"
