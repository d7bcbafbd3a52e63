#!/usr/bin/env bash
# test_fresh_pipeline.sh - freshness of a steered hot key under pipelined
# and fragmented writes (issue 10, "Freshness under pipelining"), on the
# steering topology (steer_topo.sh): a client, 1 shard host with memcached
# and an agent (--self, 2 --replicas, the key pinned to 3 copies, interval
# 0.5 s), 2 replica hosts, one bridge; 198.18.2.0/24, namespaces and veths
# named with this shell's PID.
#
# ks_fresh.py in the client namespace, for 8 s:
#   - a TCP writer: pymemcache set_many batches of 9 keys, values of 1 to
#     16384 bytes, the hot key's set in the middle; every other batch puts
#     the hot key's request line across a TCP segment boundary, the others
#     mid-segment where the random sizes leave it;
#   - a UDP writer: sets of the hot key in one datagram of 1600..12000
#     bytes, fragmented by IP (MTU 1500);
#   - 4 UDP readers, 1200 gets/s in all, each value read checked against
#     the last acknowledged write (and byte for byte against its N).
# 1. stream state on (the default): 0 stale reads, 0 corrupt, a fifth of
#    the reads or more steered (the control's bar), both kinds of write
#    made.
# 2. the control, --stream-state off (each TCP segment parsed on its own, so
#    a set whose line does not start a segment is never seen and the
#    replicas keep serving the old value): stale reads > 0, or the test
#    proves nothing and fails.
# --stream-state is a test-only switch: the control runs with
# KEYSTEER_TEST_SWITCHES=1, and its agent must say so; the run takes the
# default, without the variable.
# Also: a bad --stream-state value is refused before attaching; the flag
# reaches ks_config.flags (bpftool) in the control and not in the run; an
# agent taking over a SIGKILLed control agent's program clears it.
# Figures for both runs are printed. About 30 s.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../../user/scripts/steer_topo.sh
. "$E2E_ROOT/user/scripts/steer_topo.sh"
e2e_init fresh_pipeline
trap 'steer_topo_down; e2e_cleanup' EXIT

KEY=fresh:hot
DURATION=${FRESH_DURATION:-8}

if ! steer_topo_up 1 2 >"$E2E_TMP/topo.out" 2>&1; then
	fail fresh_pipeline_topology "$(tail -n 3 "$E2E_TMP/topo.out")"
	exit 1
fi
OADDR=${STEER_SHARD_ADDR[0]}
SIFN=${STEER_SHARD_IF[0]}
printf 'pin %s 3\n' "$KEY" >"$E2E_TMP/pins.txt"

# --- a bad value is refused before anything is attached ----------------------
out=$(KEYSTEER_TEST_SWITCHES=1 ks_in_ns "${STEER_SHARD_NS[0]}" "$AGENT" run \
	--iface "$SIFN" --stream-state maybe 2>&1)
rc=$?
if [ "$rc" = 2 ] && grep -q -- "--stream-state 'maybe' is not a state" <<<"$out" &&
	[ ! -e "$PIN_ROOT/$SIFN" ]; then
	pass fresh_stream_state_bad_value_refused
else
	fail fresh_stream_state_bad_value_refused "exit $rc, '$out'"
fi

# cfg_flags: ks_config.flags of the running agent, from its pinned map,
# its KS_CFG_NO_STREAM bit (1) alone: the other bits are other options'
# (KS_CFG_REPLIES, 2: --owner-replies, on by default).
cfg_flags() {
	bpftool -j map dump pinned "$PIN_ROOT/$SIFN/ks_config" 2>/dev/null |
		"$PY" -c 'import json, sys
d = json.load(sys.stdin)
v = d[0].get("formatted", {}).get("value", {})
f = v.get("flags")
print(f & 1 if isinstance(f, int) else "?")' 2>/dev/null
}

# run_case NAME STATE: an agent with --stream-state off (STATE off, the
# test-only switch allowed) or without it (on), ks_fresh.py, the agent
# stopped; the document in $E2E_TMP/NAME.json, exit status in .rc,
# ks_config.flags seen while it ran in .flags.
run_case() {
	local name=$1 state=$2 out=$E2E_TMP/$1.json sw=
	[ "$state" = off ] && sw=1
	if ! KEYSTEER_TEST_SWITCHES=$sw steer_agent_start 0 --interval 0.5 --sample 1 \
		--shard-capacity 100000 --shards-file "$STEER_SHARDS_FILE" \
		--self "$OADDR:$STEER_PORT" --replicas "$STEER_REPLICAS" \
		--pins "$E2E_TMP/pins.txt" ${sw:+--stream-state off}; then
		fail "fresh_${name}_agent" "did not attach: $(head -n 3 "$STEER_TMP/agent.0.out")"
		return 1
	fi
	cfg_flags >"$out.flags"
	ks_in_ns "$STEER_CLIENT_NS" timeout $((DURATION + 20)) "$PY" "$E2E_DIR/ks_fresh.py" \
		--owner "$OADDR:$STEER_PORT" --key "$KEY" --duration "$DURATION" \
		--readers 4 --rate 1200 --timeout 0.5 --examples 5 \
		--tcp-writer set-many --batch 9 --write-interval 0.04 \
		--value-size 1:16384 --filler-size 1:16384 \
		--udp-write-interval 0.1 --udp-size 1600:12000 \
		>"$out" 2>"$out.err"
	echo $? >"$out.rc"
	steer_agents_stop
	cp "$STEER_TMP/agent.0.out" "$E2E_TMP/$name.agent.out" 2>/dev/null
	return 0
}

# summary NAME: the figures on stderr; on stdout "OK", or what is wrong
# for that run (nothing at all, a crash, is wrong too).
summary() { # NAME WANT(none|some)
	"$PY" - "$E2E_TMP/$1.json" "$2" "$(cat "$E2E_TMP/$1.json.rc")" \
		"$(cat "$E2E_TMP/$1.json.flags")" <<'PYEOF'
import json, sys
path, want, rc, flags = sys.argv[1:5]
try:
    d = json.load(open(path))
except (OSError, ValueError):
    print("no document (exit %s)" % rc)
    sys.exit()
why = []
print("  reads %d, steered %d (%.1f%%), stale %d, corrupt %d, misses %d, timeouts %d; "
      "writes %d %s, UDP set timeouts %d; ks_config.flags %s" % (
          d["reads"], d["steered_reads"], 100 * d["steered_share"], d["stale_reads"],
          d["corrupt_reads"], d["misses"], d["timeouts"], d["writes"],
          json.dumps(d["writes_by_kind"], sort_keys=True), d["udp_write_timeouts"], flags),
      file=sys.stderr)
if d["stale_reads"]:
    print("  stale reads by the first write they missed: %s; %d writes missed: %s" % (
        json.dumps(d["stale_by_missed_write"], sort_keys=True), d["missed_writes"],
        d["missed_write_list"][:12]), file=sys.stderr)
    for e in d["stale_examples"][:3]:
        print("    e.g. %s" % json.dumps(e, sort_keys=True), file=sys.stderr)
p = d.get("rearm_ms_percentiles_after_first_steered")
if p:
    print("  write acknowledged -> steered again: p50 %.1f ms, p90 %.1f ms, max %.1f ms" % (
        p["p50"], p["p90"], p["max"]), file=sys.stderr)
if d["errors"]:
    why.append("errors %s" % d["errors"][:3])
if d["reads"] < 2000:
    why.append("only %d reads" % d["reads"])
# The share steered is how soon each refill follows a write (35 writes/s),
# which a loaded machine slows (49.5% at load 25, most of it above quiet):
# the bar is that of the control, which shows stale reads at it, so a
# clean run has read as many copies as one that caught the violation.
if d["steered_share"] < 0.2:
    why.append("only %d of %d reads steered" % (d["steered_reads"], d["reads"]))
kinds = d["writes_by_kind"]
tcp = sum(v for k, v in kinds.items() if k.startswith("tcp-set-many"))
if tcp < 50 or kinds.get("tcp-set-many/line-straddles", 0) < 20 or kinds.get("udp-set", 0) < 20:
    why.append("too few writes of a kind: %s" % kinds)
if d["timeouts"] > d["reads"] // 100:
    why.append("%d read timeouts" % d["timeouts"])
if want == "none":
    if d["stale_reads"] or d["corrupt_reads"]:
        why.append("%d stale and %d corrupt reads (examples above)" % (
            d["stale_reads"], d["corrupt_reads"]))
    if flags != "0":
        why.append("ks_config.flags %s, want 0" % flags)
    if rc != "0":
        why.append("exit %s" % rc)
else:
    if not d["stale_reads"]:
        why.append("the control run saw no stale read: the test proves nothing")
    if flags != "1":
        why.append("ks_config.flags %s, want 1 (KS_CFG_NO_STREAM)" % flags)
print("; ".join(why) or "OK")
PYEOF
}

check_case() { # NAME STATE WANT TEST
	local why
	run_case "$1" "$2" || return
	why=$(summary "$1" "$3" 2>"$E2E_TMP/$1.sum")
	# the control's agent warns that it runs with a test-only switch
	if [ "$2" = off ] && ! grep -q "warning: test-only switches in force (KEYSTEER_TEST_SWITCHES=1): --stream-state off;" "$E2E_TMP/$1.agent.out"; then
		why="$why${why:+; }no test-only switch warning from the control's agent"
	elif [ "$2" = on ] && grep -q "test-only" "$E2E_TMP/$1.agent.out"; then
		why="$why${why:+; }the run's agent warns of a test-only switch"
	fi
	note "stream state $2:"
	cat "$E2E_TMP/$1.sum"
	if [ "$why" = OK ]; then
		pass "$4"
	else
		fail "$4" "${why:-the summary crashed: $(tail -n 1 "$E2E_TMP/$1.sum")}; $(tail -n 2 "$E2E_TMP/$1.json.err" | tr '\n' ' ')"
	fi
}

check_case stream_on on none fresh_pipeline_no_stale_reads
check_case stream_off off some fresh_pipeline_control_shows_stale_reads

# --- a take-over puts this run's state in: a control agent SIGKILLed, then
# an agent with the default takes its program over and clears the flag.
# Not in a $(...) subshell: the EXIT trap must know the agents' PIDs.
TAKEOVER_FLAGS=
takeover() {
	local f1 f2 pid
	KEYSTEER_TEST_SWITCHES=1 steer_agent_start 0 --interval 0.5 --stream-state off ||
		return 1
	f1=$(cfg_flags)
	pid=${STEER_AGENT_PIDS[0]}
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	STEER_AGENT_PIDS=() # reaped: never signal that PID again
	steer_agent_start 0 --interval 0.5 || return 1
	grep -q "took over" "$STEER_TMP/agent.0.out" || return 1
	f2=$(cfg_flags)
	steer_agents_stop
	TAKEOVER_FLAGS="$f1 $f2"
}
takeover
flags=$TAKEOVER_FLAGS
if [ "$flags" = "1 0" ]; then
	pass fresh_stream_state_takeover
else
	fail fresh_stream_state_takeover "ks_config.flags before/after the take-over '$flags', want '1 0': $(tail -n 2 "$STEER_TMP/agent.0.out" | tr '\n' ' ')"
fi
exit "$E2E_FAILED"
