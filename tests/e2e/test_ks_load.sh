#!/usr/bin/env bash
# test_ks_load.sh - the load generator against real memcached, end to end.
# memcached (TCP+UDP) runs in the server namespace on two ports; ks_load
# runs in the client namespace for 4000 operations paced at 2000/s with a
# mix of gets, multi-gets and sets, Zipf keys and a flash key, with --exact-counts and
# --json. memcached's own `stats` (cmd_get, get_hits, cmd_set), read before
# and after, must move by exactly what ks_load says it sent, over TCP and
# over UDP; the exact-counts file must sum to the same totals; with a ring of
# the two ports each memcached must see exactly the keys ks_load routed to
# it. --preload must set every key once (memcached's cmd_set) outside the
# run's figures, and with nothing steered every UDP reply must be counted
# as coming from the server asked (steered replies are tested in
# test_steer_topo.sh).
# Then the top rate over TCP and UDP is measured (reported, errors must
# be 0), and bad flags must be refused with exit 2 and one
# "ks_load: <what>; <what to do>" line.
#
# Set-up as lib.sh: namespaces ks_cli_PID / ks_srv_PID joined by a veth pair
# (198.18.0.1 / 198.18.0.2), everything removed by the EXIT trap.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init ks_load
LOAD=$E2E_ROOT/${OUT:-build}/ks_load
if [ ! -x "$LOAD" ]; then
	fail ks_load "$LOAD is missing; run 'make' first"
	exit 1
fi
PORT2=11212
MC2_PID=
# The second memcached is ours to stop; then lib.sh's cleanup runs with the
# exit status the script had.
load_cleanup() {
	local rc=$?
	ks_stop_pid "$MC2_PID" TERM 5
	(exit "$rc")
	e2e_cleanup
}
trap load_cleanup EXIT
e2e_net_up
MC1_PID=$KS_MEMCACHED_PID
if ! ks_start_memcached "$SNS" "$SADDR" "$PORT2"; then
	fail ks_load_setup "second memcached did not start"
	exit 1
fi
MC2_PID=$KS_MEMCACHED_PID
KS_MEMCACHED_PID=$MC1_PID

# stats PORT: "cmd_get get_hits cmd_set" of the memcached on PORT.
stats() { e2e_mc_stats "$SADDR" "$1" cmd_get get_hits cmd_set; }

# load OUT ARGS...: ks_load in the client namespace, JSON to OUT.
load() {
	local out=$1
	shift
	ks_in_ns "$CNS" nice -n "$KS_NICE" "$LOAD" --json "$@" >"$out" 2>"$out.err"
}

# summary JSON EXACT: "ops get_keys set_keys hits errors exact_gets
# exact_sets" from ks_load's JSON and its exact-counts file.
summary() {
	"$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
ops = sum(o["ops"] for o in d["ops"])
gk = sum(o["keys"] for o in d["ops"] if o["op"] != "set")
sk = sum(o["keys"] for o in d["ops"] if o["op"] == "set")
hits = sum(o["hits"] for o in d["ops"])
errs = sum(o["errors"] for o in d["ops"])
eg = es = 0
for line in open(sys.argv[2]):
    k, g, s = line.rstrip("\n").split("\t")
    eg += int(g); es += int(s)
print(ops, gk, sk, hits, errs, eg, es)
' "$1" "$2"
}

MIX=(--mix get=70,mget=20,set=10 --mget-size 5 --keys 1000 --zipf 0.99
	--flash flash:1:0.2 --value-size 100 --conns 4 --seed 7)
RATE=2000
SECS=2
# A reply later than this is an error. ks_load's default of 1 s is a loaded
# 2-core machine's TCP retransmission or a server kept off the CPU, not a
# lost request: 10 s is room for that, and a request really lost still
# fails.
TIMEOUT=(--timeout 10)

# exact_run NAME PROTO: $RATE x $SECS operations paced at $RATE/s against
# port 1, checked against stats. Bounded by count, not --duration: how many
# a loaded machine sends in 2 s is its pacing, not what reached memcached.
exact_run() {
	local name=$1 proto=$2 before after out=$E2E_TMP/$1.json
	local ops gk sk hits errs eg es b_get b_hit b_set a_get a_hit a_set
	before=$(stats "$PORT") || { fail "$name" "stats failed"; return; }
	if ! load "$out" --server "$SADDR:$PORT" --proto "$proto" "${MIX[@]}" \
		--rate "$RATE" --count $((RATE * SECS)) "${TIMEOUT[@]}" \
		--exact-counts "$out.tsv"; then
		fail "$name" "ks_load failed: $(head -c 300 "$out.err")"
		return
	fi
	after=$(stats "$PORT") || { fail "$name" "stats failed"; return; }
	read -r ops gk sk hits errs eg es < <(summary "$out" "$out.tsv")
	read -r b_get b_hit b_set <<<"$before"
	read -r a_get a_hit a_set <<<"$after"
	note "$name: ops $ops get_keys $gk set_keys $sk hits $hits errors $errs;" \
		"memcached cmd_get +$((a_get - b_get)) get_hits +$((a_hit - b_hit))" \
		"cmd_set +$((a_set - b_set))"
	local want=$((RATE * SECS)) why=""
	[ "$errs" -eq 0 ] || why="$errs errors"
	[ $((a_get - b_get)) -eq "$gk" ] || why="${why:+$why, }cmd_get moved $((a_get - b_get)), sent $gk"
	[ $((a_set - b_set)) -eq "$sk" ] || why="${why:+$why, }cmd_set moved $((a_set - b_set)), sent $sk"
	[ $((a_hit - b_hit)) -eq "$hits" ] || why="${why:+$why, }get_hits moved $((a_hit - b_hit)), saw $hits"
	[ "$eg" -eq "$gk" ] && [ "$es" -eq "$sk" ] ||
		why="${why:+$why, }exact counts sum to $eg/$es, totals $gk/$sk"
	[ "$ops" -eq "$want" ] || why="${why:+$why, }$ops ops, asked for $want"
	[ "$hits" -gt 0 ] || why="${why:+$why, }no hits at all"
	if [ -z "$why" ]; then pass "$name"; else fail "$name" "$why"; fi
}
exact_run ks_load_tcp_exact tcp
exact_run ks_load_udp_exact udp

# ---- a ring of the two ports: each memcached sees the keys routed to it
ring_run() {
	local name=ks_load_ring_routing out=$E2E_TMP/ring.json b1 b2 a1 a2 why=""
	b1=$(stats "$PORT") && b2=$(stats "$PORT2") || { fail "$name" "stats failed"; return; }
	if ! load "$out" --shards "$SADDR:$PORT,$SADDR:$PORT2" --distribution ketama \
		--proto udp-gets "${MIX[@]}" --count 3000 --rate 0; then
		fail "$name" "ks_load failed: $(head -c 300 "$out.err")"
		return
	fi
	a1=$(stats "$PORT") && a2=$(stats "$PORT2") || { fail "$name" "stats failed"; return; }
	why=$("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
errs = sum(o["errors"] for o in d["ops"])
out = []
if errs: out.append("%d errors" % errs)
for sh, b, a in zip(d["shards"], sys.argv[2:4], sys.argv[4:6]):
    b = list(map(int, b.split())); a = list(map(int, a.split()))
    g, s = a[0] - b[0], a[2] - b[2]
    print("  %s: sent get_keys %d set_keys %d, memcached +%d/+%d" %
          (sh["addr"], sh["get_keys"], sh["set_keys"], g, s), file=sys.stderr)
    if (g, s) != (sh["get_keys"], sh["set_keys"]): out.append("%s saw %d/%d" % (sh["addr"], g, s))
    if not sh["get_keys"]: out.append("%s got no keys" % sh["addr"])
print(", ".join(out))
' "$out" "$b1" "$b2" "$a1" "$a2" 2>&1 >"$E2E_TMP/ring.why")
	[ -n "$why" ] && echo "$why"
	why=$(cat "$E2E_TMP/ring.why")
	if [ -z "$why" ]; then pass "$name"; else fail "$name" "$why"; fi
}
ring_run

# ---- --preload: every key set once over TCP before the run (not counted
# in it), so a read-only run over UDP then hits on every key.
preload_run() {
	local name=ks_load_preload out=$E2E_TMP/preload.json before after why
	before=$(stats "$PORT2") || { fail "$name" "stats failed"; return; }
	if ! load "$out" --server "$SADDR:$PORT2" --proto udp --mix get=100 \
		--keys 3000 --key-prefix pre: --flash pflash:0.2 --preload \
		--count 3000 --rate 0 --conns 2; then
		fail "$name" "ks_load failed: $(head -c 300 "$out.err")"
		return
	fi
	after=$(stats "$PORT2") || { fail "$name" "stats failed"; return; }
	why=$("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
b = list(map(int, sys.argv[2].split())); a = list(map(int, sys.argv[3].split()))
gk = sum(o["keys"] for o in d["ops"]); hits = sum(o["hits"] for o in d["ops"])
errs = sum(o["errors"] for o in d["ops"])
out = []
print("  preload %s s; cmd_set +%d (want 3001); %d gets, %d hits" %
      (d["preload_s"], a[2] - b[2], gk, hits), file=sys.stderr)
if d["preload_s"] is None: out.append("no preload_s in the JSON")
if a[2] - b[2] != 3001: out.append("cmd_set moved %d, want 3001 keys" % (a[2] - b[2]))
if a[0] - b[0] != gk: out.append("cmd_get moved %d, sent %d (preload counted?)" % (a[0] - b[0], gk))
if errs or hits != gk: out.append("%d errors, %d hits of %d gets" % (errs, hits, gk))
print(", ".join(out))
' "$out" "$before" "$after" 2>"$E2E_TMP/preload.notes") ||
		why="no ks_load JSON: $(head -c 300 "$out.err")"
	cat "$E2E_TMP/preload.notes"
	if [ -z "$why" ]; then pass "$name"; else fail "$name" "$why"; fi
}
preload_run

# Not steered: every reply from the address the request went to.
unsteered_check() {
	local name=ks_load_unsteered_sources out=$E2E_TMP/ks_load_udp_exact.json why
	why=$("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
msgs = sum(o["msgs"] for o in d["ops"] if o["proto"] == "udp")
out = []
if d["steered"] != 0 or d["first_steered_ms"] is not None:
    out.append("steered %d, first %s" % (d["steered"], d["first_steered_ms"]))
if d["replies_by_source"] != {sys.argv[2]: msgs}:
    out.append("by source %s, want {%s: %d}" % (d["replies_by_source"], sys.argv[2], msgs))
print(", ".join(out))
' "$out" "$SADDR:$PORT") || why="no ks_load JSON from ks_load_udp_exact"
	if [ -z "$why" ]; then pass "$name"; else fail "$name" "$why"; fi
}
unsteered_check

# ---- the top rate on this machine (a figure; errors must be 0)
max_run() {
	local name=$1 proto=$2 out=$E2E_TMP/$1.json line
	if ! load "$out" --server "$SADDR:$PORT" --proto "$proto" --mix get=90,set=10 \
		--keys 100000 --conns 4 --rate 0 --duration 2 "${TIMEOUT[@]}"; then
		fail "$name" "ks_load failed: $(head -c 300 "$out.err")"
		return
	fi
	line=$("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
ops = sum(o["ops"] for o in d["ops"]); errs = sum(o["errors"] for o in d["ops"])
g = [o for o in d["ops"] if o["op"] == "get"][0]["latency_us"]
print(errs, "%.0f ops/s over %s, get p50 %.0f us p99 %.0f us p99.9 %.0f us, %d errors" %
      (ops / d["duration_s"], d["proto"], g["p50"], g["p99"], g["p99.9"], errs))
' "$out")
	note "$name: ${line#* }"
	if [ "${line%% *}" = 0 ]; then pass "$name"; else fail "$name" "${line#* }"; fi
}
max_run ks_load_max_tcp tcp
max_run ks_load_max_udp udp

# ---- refusals: exit 2, one line "ks_load: <what>; <what to do>"
expect_refused() {
	local name=$1 pattern=$2 rc
	shift 2
	"$LOAD" "$@" >"$E2E_TMP/ref.out" 2>"$E2E_TMP/ref.err"
	rc=$?
	if [ "$rc" -ne 2 ]; then
		fail "$name" "exit $rc, want 2: $(head -c 300 "$E2E_TMP/ref.err")"
	elif [ "$(wc -l <"$E2E_TMP/ref.err")" -ne 1 ] ||
		! grep -qE "^ks_load: $pattern.*; " "$E2E_TMP/ref.err"; then
		fail "$name" "stderr is not one line matching '$pattern': $(head -c 300 "$E2E_TMP/ref.err")"
	else
		pass "$name"
	fi
}
S=$SADDR:$PORT
expect_refused ks_load_refuses_unbounded "the run is unbounded" --server "$S"
expect_refused ks_load_refuses_no_target "no target given" --count 10
expect_refused ks_load_refuses_two_targets "more than one of" --server "$S" --shards "$S" --count 1
expect_refused ks_load_refuses_bad_zipf "--zipf '-1'" --server "$S" --count 1 --zipf -1
expect_refused ks_load_refuses_bad_flash "--flash 'x' is not KEY:SHARE" --server "$S" --count 1 --flash x
expect_refused ks_load_refuses_flash_sum "--flash shares add up" --server "$S" --count 1 \
	--flash a:0.6 --flash b:0.6
expect_refused ks_load_refuses_bad_mix "--mix op 'del'" --server "$S" --count 1 --mix get=1,del=1
expect_refused ks_load_refuses_bad_dist "unknown distribution" --shards "$S" --count 1 --distribution x
expect_refused ks_load_refuses_bad_shard "--shards" --shards "$SADDR:70000" --count 1
expect_refused ks_load_refuses_unknown_flag "unknown option '--bogus'" --server "$S" --count 1 --bogus
if grep -q '^USAGE' <<<"$("$LOAD" --help)" && grep -q '^EXAMPLES' <<<"$("$LOAD" --help)"; then
	pass ks_load_help
else
	fail ks_load_help "--help lacks USAGE or EXAMPLES"
fi
