#!/usr/bin/env bash
# test_fleet_view.sh - 'agent fleet' over a real fleet (issue 12,
# docs/fleet.md "agent fleet"): the steering topology of steer_topo.sh (4
# shards, no replicas), one etcd 3.4 in the client namespace on the
# client's bridge address, the ring set in it, an agent per shard with
# --etcd --self and 1 s intervals, and a flash-key load from the client
# that makes one shard clearly the busiest. Checks: per-shard reads/s of
# 'fleet --json' agree with each memcached's own cmd_get rate (two 'stats'
# over a measured window) within 10%; the busiest shard it marks is the
# one with the most cmd_get; the text marks it with '*' and shows every
# shard up; the merged top keys carry the flash key's text, and none with
# --top 3 --hash-only; a hot/ entry of schema 1 is listed and a malformed
# one refused; one agent SIGKILLed shows as gone within its lease, both in
# a one-shot read and in a running --watch, which redraws at least twice
# (text) and prints one JSON document a line (--json); etcd SIGKILLed and
# started again under a --watch: its last line says it is reconnecting,
# then that the watch is up again, without a restart. etcd, the load and
# every agent are stopped by their PIDs on every exit path.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=fleet_lib.sh
. "$E2E_DIR/fleet_lib.sh"
e2e_init fleet_view
# shellcheck source=../../user/scripts/steer_topo.sh
. "$E2E_ROOT/user/scripts/steer_topo.sh"
LOAD=$E2E_ROOT/${OUT:-build}/ks_load
MC_STATS=$E2E_ROOT/user/scripts/mc_stats.py

ETCD_PID=
LOAD_PID=
WATCH_PID=
GW_PID=

view_cleanup() {
	local rc=$?
	[ -n "$WATCH_PID" ] && ks_stop_pid "$WATCH_PID" INT 3
	[ -n "$GW_PID" ] && ks_stop_pid "$GW_PID" TERM 3
	[ -n "$LOAD_PID" ] && ks_stop_pid "$LOAD_PID" TERM 3
	steer_topo_down
	[ -n "$ETCD_PID" ] && ks_stop_pid "$ETCD_PID" TERM 5
	(exit "$rc")
	e2e_cleanup
}
trap view_cleanup EXIT

e2e_need_etcd fleet_view
if [ ! -x "$LOAD" ]; then
	fail fleet_view "$LOAD is missing; run 'make' first"
	exit 1
fi
if ! steer_topo_up 4 0; then
	fail fleet_view_setup "the topology did not come up (see above)"
	exit 1
fi
CNS=$STEER_CLIENT_NS
URL=http://$STEER_CLIENT_ADDR:2379
SHARDS=()
for a in "${STEER_SHARD_ADDR[@]}"; do SHARDS+=("$a:$STEER_PORT"); done

# etcd only on the client's namespace address; started again on the same
# data after a SIGKILL. At nice -10 (lib.sh's KS_ETCD_NICE): at a load
# average of 52 an etcd at nice 0 went more than 5 s without serving,
# every agent's lease expired and `agent fleet` missed its 2 s deadline;
# what is tested here is what the fleet shows, not etcd's own stalls.
start_etcd() {
	local rc
	e2e_etcd_start "$CNS" view "$URL" 2380 >"$E2E_TMP/etcd_start.out"
	rc=$?
	ETCD_PID=$E2E_ETCD_PID
	return "$rc"
}
if ! start_etcd; then
	fail fleet_view_setup "$(cat "$E2E_TMP/etcd_start.out")"
	exit 1
fi
FLEET() { ks_in_ns "$CNS" "$AGENT" fleet --etcd "$URL" "$@"; }
# seq I: the interval number of agent I's last report (pinned maps)
seq_of() {
	"$AGENT" report --iface "${STEER_SHARD_IF[$1]}" --json 2>/dev/null |
		"$PY" -c 'import json,sys; print(json.load(sys.stdin)["seq"])' 2>/dev/null
}
# frame_has FILE PATTERN [first]: 0 when the last frame (or the first)
# that `fleet --watch` drew into FILE has a line matching PATTERN (grep -E)
frame_has() {
	"$PY" - "$@" <<'PYEOF'
import re, sys
f = open(sys.argv[1]).read().split("\033[H\033[2J")
frame = (f[1] if len(f) > 1 else "") if sys.argv[3:] == ["first"] else f[-1]
sys.exit(0 if any(re.search(sys.argv[2], l) for l in frame.splitlines()) else 1)
PYEOF
}
# wait_frame FILE PATTERN [first]: frame_has within 30 s
wait_frame() {
	local i
	for ((i = 0; i < 150; i++)); do
		frame_has "$@" && return 0
		sleep 0.2
	done
	return 1
}
ETCDCTL() { ks_in_ns "$CNS" etcdctl --endpoints "$URL" "$@" >/dev/null; }

out=$(ks_in_ns "$CNS" "$AGENT" ring set --etcd "$URL" --shards-file "$STEER_SHARDS_FILE" 2>&1)
REV=$(sed -n 's/^revision \([0-9]*\) .*/\1/p' <<<"$out")
if [ -z "$REV" ]; then
	fail fleet_view_setup "ring set: $out"
	exit 1
fi
for i in 0 1 2 3; do
	if ! steer_agent_start "$i" --etcd "$URL" --self "${SHARDS[i]}" \
		--interval 1 --sample 1 --export-keys --metrics 127.0.0.1:9180; then
		fail fleet_view_setup "agent $i did not start: $(tail -3 "$STEER_TMP/agent.$i.out")"
		exit 1
	fi
done

# A flash key on top of a Zipf load: its owner is busiest. It runs until
# the script stops it (after the etcd restart below), 600 s a guard: the
# reads/s window, the busiest mark and the merged top keys need it
# running, and it once ran a fixed 30 s, which the waits before them
# (every agent up, two intervals, the window's eight commands) can
# outlast on a loaded machine, so that cmd_get's window held the load's
# end while the fleet's figures did not.
ks_in_ns_bg "$CNS" nice -n "${KS_NICE:-0}" "$LOAD" --json --shards-file "$STEER_SHARDS_FILE" \
	--proto udp --mix get=100 --keys 2000 --flash flash:0.5 --rate 3000 \
	--conns 2 --duration 600 >"$E2E_TMP/load.json" 2>"$E2E_TMP/load.err"
LOAD_PID=$KS_BG_PID
LOAD_T0=$SECONDS

# wait until every agent has published a full interval under load (60 s a
# guard)
ok='' t0=$SECONDS
while [ $((SECONDS - t0)) -lt 60 ]; do
	FLEET --json >"$E2E_TMP/f.json" 2>/dev/null
	if "$PY" -c 'import json,sys
d = json.load(open(sys.argv[1]))
assert len(d["shards"]) == 4 and all(s["agent"] == "up" and s["reads_per_s"] > 0 for s in d["shards"])' \
		"$E2E_TMP/f.json" 2>/dev/null; then
		ok=1
		break
	fi
	sleep 0.25
done
if [ -z "$ok" ]; then
	fail fleet_view_setup "not every shard up with load: $(head -c 600 "$E2E_TMP/f.json") $(tail -2 "$E2E_TMP/load.err")"
	exit 1
fi
# one whole interval under load after the first: each agent's report
# two intervals on (its seq, not a guessed time; 30 s at most)
SEQ0=()
for i in 0 1 2 3; do SEQ0[i]=$(seq_of "$i"); done
for ((k = 0; k < 300; k++)); do
	n=0
	for i in 0 1 2 3; do
		q=$(seq_of "$i")
		[ -n "$q" ] && [ "$q" -ge $((${SEQ0[i]:-0} + 2)) ] && n=$((n + 1))
	done
	[ "$n" = 4 ] && break
	sleep 0.1
done

# ---- reads/s against memcached's own cmd_get over a measured window
ks_in_ns "$CNS" "$PY" "$MC_STATS" snap "${SHARDS[@]}" >"$E2E_TMP/before.json"
for k in 1 2 3 4; do
	FLEET --json >"$E2E_TMP/w$k.json" 2>>"$E2E_TMP/fleet.err"
	sleep 1 # a pace: four samples spread over the measured window
done
ks_in_ns "$CNS" "$PY" "$MC_STATS" snap "${SHARDS[@]}" >"$E2E_TMP/after.json"
note "the reads/s window ended $((SECONDS - LOAD_T0)) s after the load's start"
why=$("$PY" - "$E2E_TMP" <<'EOF'
import json, sys
tmp = sys.argv[1]
b = json.load(open(tmp + "/before.json")); a = json.load(open(tmp + "/after.json"))
ms = (a["time"] - b["time"]) * 1000.0  # the window between the two stats
docs = [json.load(open("%s/w%d.json" % (tmp, k))) for k in (1, 2, 3, 4)]
def stats(snap, addr):
    return snap["servers"][addr]
out, mc, fl = [], {}, {}
for s in docs[0]["shards"]:
    name = s["name"]
    x, y = stats(b, name), stats(a, name)
    mc[name] = (int(y["cmd_get"]) - int(x["cmd_get"])) * 1000.0 / ms
    reads = [next(t for t in d["shards"] if t["name"] == name)["reads_per_s"] for d in docs]
    fl[name] = sum(reads) / len(reads)
    err = abs(fl[name] - mc[name]) / mc[name] if mc[name] else 1
    print("  %s: fleet %.1f reads/s (%s), memcached cmd_get %.1f/s, %.1f%% apart"
          % (name, fl[name], ", ".join("%.0f" % r for r in reads), mc[name], 100 * err),
          file=sys.stderr)
    if err > 0.10:
        out.append("%s fleet %.1f vs cmd_get %.1f/s" % (name, fl[name], mc[name]))
top = max(mc, key=mc.get)
marked = [d["busiest"] for d in docs]
flags = [[t["name"] for t in d["shards"] if t["busiest"]] for d in docs]
print("  busiest by cmd_get %s (%.1f/s); fleet marks %s" % (top, mc[top], marked), file=sys.stderr)
if any(m != top for m in marked) or any(f != [top] for f in flags):
    out.append("busiest %s by cmd_get, fleet marks %s" % (top, marked))
if any(d["schema"] != 1 or d["ring_revision"] <= 0 for d in docs):
    out.append("schema or ring_revision")
print("; ".join(out))
open(tmp + "/busiest", "w").write(top)
EOF
)
if [ -z "$why" ] && [ -s "$E2E_TMP/busiest" ]; then
	pass fleet_view_reads_match_cmd_get
else
	fail fleet_view_reads_match_cmd_get "${why:-no figures}"
fi
BUSIEST=$(cat "$E2E_TMP/busiest" 2>/dev/null)

# ---- the text: the busiest marked, every shard up at the ring's revision
text=$(FLEET 2>&1)
echo "$text" >"$E2E_TMP/fleet.txt"
nup=$(grep -cE "^[* ] 198\.18\.2\.1[1-4]:11211 .* $REV  up\$" <<<"$text")
if [ -n "$BUSIEST" ] && grep -q "^\* $BUSIEST " <<<"$text" &&
	grep -q "^\* busiest $BUSIEST: " <<<"$text" && [ "$nup" = 4 ] &&
	[ "$(grep -c '^\* ' <<<"$text")" = 2 ]; then
	pass fleet_view_text_busiest_and_up
else
	fail fleet_view_text_busiest_and_up "busiest '$BUSIEST', $nup up: $text"
fi

# ---- the merged top keys: key text, and none with --hash-only
if grep -q "^  flash  " <<<"$text" &&
	FLEET --json | "$PY" -c 'import json,sys
d = json.load(sys.stdin); t = d["top_keys"]
assert len(t) == 10 and t[0]["key"] == "flash" and t[0]["hosts"] == 1, t[:2]'; then
	pass fleet_view_top_keys_merged
else
	fail fleet_view_top_keys_merged "$(sed -n '/^top /,/^$/p' <<<"$text")"
fi
ho=$(FLEET --top 3 --hash-only 2>&1)
rows=$(sed -n '/^top 3 keys/,/^$/p' <<<"$ho" | grep -cE '^  [0-9a-f]{16} ')
if [ "$rows" = 3 ] && ! grep -qE 'flash|key:' <<<"$ho" &&
	FLEET --json --hash-only | "$PY" -c 'import json,sys
d = json.load(sys.stdin); assert d["top_keys"] and all("key" not in t for t in d["top_keys"])'; then
	pass fleet_view_top_hash_only
else
	fail fleet_view_top_hash_only "$rows hash rows: $ho"
fi

# ---- hot/ entries: one of schema 1 listed, a malformed one refused
H1=0123456789abcdef
ETCDCTL put "/keysteer/default/hot/$H1" '{"schema":1,"hash":"'$H1'","key":"flash","owner":"'"$BUSIEST"'","read_hot":true,"write_hot":false,"pinned":false,"copies":3,"replicas":["198.18.2.101:11211","198.18.2.102:11211"],"subkeys":1,"state":"armed","write_seq":17,"reads_per_s":5120.0,"writes_per_s":0.2,"updated_at":"2026-12-01T12:00:00Z"}'
ETCDCTL put /keysteer/default/hot/ffffffffffffffff '{"schema":1,"hash":"ffffffffffffffff","owner":"x:1","state":"melting","copies":1}'
hot=$(FLEET 2>&1)
echo "$hot" >"$E2E_TMP/fleet_hot.txt"
if FLEET --json | "$PY" -c 'import json,sys
d = json.load(sys.stdin); h = d["hot"]; r = d["hot_refused"]
assert len(h) == 1 and h[0]["hash"] == "'$H1'" and h[0]["state"] == "armed" and h[0]["copies"] == 3, h
assert h[0]["owner"] == "'"$BUSIEST"'" and len(h[0]["replicas"]) == 2 and h[0]["write_seq"] == 17, h
assert r["count"] == 1 and r["entries"][0]["key"] == "ffffffffffffffff", r
assert "is not counting" in r["entries"][0]["reason"], r' &&
	grep -q "^hot keys: 1 (1 refused)" <<<"$hot" &&
	grep -qE "^  flash +$BUSIEST +read +3 +1 armed +17 " <<<"$hot" &&
	grep -q "^  refused hot/ffffffffffffffff: \"state\" is not counting" <<<"$hot"; then
	pass fleet_view_hot_table_and_refused
else
	fail fleet_view_hot_table_and_refused "$(sed -n '/^hot keys/,$p' <<<"$hot")"
fi

# ---- one agent SIGKILLed: gone within its lease, one-shot and --watch
VICTIM=0
[ "${SHARDS[0]}" = "$BUSIEST" ] && VICTIM=1
VNAME=${SHARDS[VICTIM]}
VPID=${STEER_AGENT_PIDS[VICTIM]}
# the text watch runs until its frames show the victim gone (SIGINT then;
# 60 s a guard); the JSON one until it has written two documents (SIGINT
# then; 60 s a guard: it once ran a fixed 3 s, which a loaded machine can
# spend starting it)
ks_in_ns_bg "$CNS" timeout -s INT --preserve-status 60 "$AGENT" fleet --etcd "$URL" --watch \
	>"$E2E_TMP/watch.txt" 2>"$E2E_TMP/watch.err"
WATCH_PID=$KS_BG_PID
ks_in_ns_bg "$CNS" timeout -s INT --preserve-status 60 "$AGENT" fleet --etcd "$URL" --watch --json \
	>"$E2E_TMP/watch.json" 2>"$E2E_TMP/watchj.err"
WJ_PID=$KS_BG_PID
# When the victim's entries went: etcd's watch of the cluster's prefix
# from the revision before the kill, each line stamped as it arrives (at
# nice -10, as the tests' clients). A poll of `agent fleet` says only
# that it was gone by the end of a call that took 0.5 s and more at load
# 13: timed so, a lease that expired in time read 7,014 ms against 6,500.
# Established before the kill (fleet_stamp_start: a second put of its
# probe delivered): test_fleet_faults' watch, not established, was still
# starting at load 42 when its wait ended.
if ! fleet_stamp_start "$CNS" "$URL" /keysteer/default/ "$E2E_TMP/gone.watch"; then
	echo "$WHY" >>"$E2E_TMP/gone.watch.err"
fi
GW_PID=$STAMP_PID
# the kill once the text watch has drawn the victim up
wait_frame "$E2E_TMP/watch.txt" "^[* ] $VNAME .* up\$" first
T_KILL_MS=$(date +%s%3N)
kill -KILL "$VPID"
wait "$VPID" 2>/dev/null
pids=()
for p in "${STEER_AGENT_PIDS[@]}"; do [ "$p" != "$VPID" ] && pids+=("$p"); done
STEER_AGENT_PIDS=("${pids[@]}")
# within its lease (the TTL it logged: 3 intervals, at least 5 s), etcd's
# expiry check (500 ms) and 1 s for a loaded machine
LEASE_S=$(sed -n 's/.*under a lease of \([0-9]*\) s.*/\1/p' "$STEER_TMP/agent.$VICTIM.out")
GONE_MAX_MS=$((${LEASE_S:-5} * 1000 + 1500))
# `agent fleet --json` shows it gone (polled: a guard of the bound and
# 5 s), and the watch has the delete, stamped
shown=
while [ $(($(date +%s%3N) - T_KILL_MS)) -le $((GONE_MAX_MS + 5000)) ]; do
	FLEET --json >"$E2E_TMP/k.json" 2>/dev/null
	if "$PY" -c 'import json,sys
d = json.load(open(sys.argv[1])); s = {t["name"]: t["agent"] for t in d["shards"]}
assert s.pop(sys.argv[2]) == "gone" and set(s.values()) == {"up"}
assert d["shards_without_agent"] == [sys.argv[2]]' "$E2E_TMP/k.json" "$VNAME" 2>/dev/null; then
		shown=$(($(date +%s%3N) - T_KILL_MS))
		break
	fi
	sleep 0.1
done
gone_at=
for ((i = 0; i < 100; i++)); do
	# from the kill on: a delete before it would be a lease lost alive
	gone_at=$("$PY" "$E2E_DIR/ks_watch_log.py" first-delete "$E2E_TMP/gone.watch" "/$VNAME" \
		"$T_KILL_MS" 2>/dev/null)
	[ -n "$gone_at" ] && break
	sleep 0.1
done
gone=${gone_at:+$((gone_at - T_KILL_MS))}
ks_stop_pid "$GW_PID" TERM 3
GW_PID=
text=$(FLEET 2>&1)
if [ -n "$LEASE_S" ] && [ -n "$shown" ] && [ -n "$gone" ] && [ "$gone" -le "$GONE_MAX_MS" ] &&
	grep -qE "^  $VNAME +- +- .* gone\$" <<<"$text" &&
	grep -q "^shards without an agent: $VNAME\$" <<<"$text"; then
	pass fleet_view_killed_agent_gone
	note "the killed agent's entries deleted ${gone} ms after SIGKILL (lease $LEASE_S s, bound $GONE_MAX_MS ms), its shard shown gone by a poll of agent fleet that ended ${shown} ms after the kill"
else
	fail fleet_view_killed_agent_gone "lease '${LEASE_S:-?}' s; deleted ${gone:-never} ms after SIGKILL (etcd's watch), want at most $GONE_MAX_MS; agent fleet showed it gone ${shown:-never} ms after: $text $(head -c 300 "$E2E_TMP/gone.watch.err")"
fi

t0=$SECONDS
while [ "$(wc -l <"$E2E_TMP/watch.json")" -lt 2 ] && kill -0 "$WJ_PID" 2>/dev/null &&
	[ $((SECONDS - t0)) -lt 60 ]; do
	sleep 0.2 # a poll's step
done
kill -INT "$WJ_PID" 2>/dev/null
wait "$WJ_PID"
wj_rc=$?
if [ "$wj_rc" = 0 ] && "$PY" -c 'import json,sys
lines = open(sys.argv[1]).read().splitlines()
docs = [json.loads(l) for l in lines]
assert len(docs) >= 2, len(docs)
assert all(d["schema"] == 1 and d["watch"]["up"] for d in docs[1:]), docs[-1].get("watch")' "$E2E_TMP/watch.json"; then
	pass fleet_view_watch_json_one_line_each
	note "--watch --json: $(wc -l <"$E2E_TMP/watch.json") documents"
else
	fail fleet_view_watch_json_one_line_each "rc $wj_rc: $(head -c 300 "$E2E_TMP/watch.json") $(cat "$E2E_TMP/watchj.err")"
fi
# the text watch's frames follow: the victim gone in one, then it stops
wait_frame "$E2E_TMP/watch.txt" "^  $VNAME .* gone\$"
kill -INT "$WATCH_PID" 2>/dev/null
wait "$WATCH_PID"
w_rc=$?
WATCH_PID=
frames=$(grep -o $'\033\\[H\033\\[2J' "$E2E_TMP/watch.txt" | wc -l)
# the first frame has the victim up, the last one gone
first=$("$PY" -c 'import sys; f = open(sys.argv[1]).read().split("\033[H\033[2J"); print(f[1] if len(f) > 1 else "")' "$E2E_TMP/watch.txt")
last=$("$PY" -c 'import sys; print(open(sys.argv[1]).read().split("\033[H\033[2J")[-1])' "$E2E_TMP/watch.txt")
if [ "$w_rc" = 0 ] && [ "$frames" -ge 2 ] &&
	grep -qE "^[* ] $VNAME .* up\$" <<<"$first" &&
	grep -qE "^  $VNAME .* gone\$" <<<"$last" &&
	grep -q "^etcd: watch up at " <<<"$last"; then
	pass fleet_view_watch_redraws_and_shows_gone
	note "--watch: $frames frames until the victim showed gone"
else
	fail fleet_view_watch_redraws_and_shows_gone "rc $w_rc, $frames frames; first: $first; last: $last; $(cat "$E2E_TMP/watch.err")"
fi

# ---- etcd away under a --watch: said in its last line, and back by itself
# each step on the watch's own frames: up, then reconnecting once etcd is
# gone, then up again after etcd's start (each within 30 s; the watch
# stopped by SIGINT then, 90 s a guard)
ks_in_ns_bg "$CNS" timeout -s INT --preserve-status 90 "$AGENT" fleet --etcd "$URL" --watch \
	>"$E2E_TMP/watch2.txt" 2>"$E2E_TMP/watch2.err"
WATCH_PID=$KS_BG_PID
wait_frame "$E2E_TMP/watch2.txt" "^etcd: watch up at "
kill -KILL "$ETCD_PID"
wait "$ETCD_PID" 2>/dev/null
ETCD_PID=
wait_frame "$E2E_TMP/watch2.txt" "^etcd: reconnecting: "
start_etcd
wait_frame "$E2E_TMP/watch2.txt" "^etcd: watch up at "
kill -INT "$WATCH_PID" 2>/dev/null
wait "$WATCH_PID"
w_rc=$?
WATCH_PID=
away=$(grep -c '^etcd: reconnecting: ' "$E2E_TMP/watch2.txt")
last=$("$PY" -c 'import sys; print(open(sys.argv[1]).read().split("\033[H\033[2J")[-1])' "$E2E_TMP/watch2.txt")
nup=$(grep -cE "^[* ] 198\.18\.2\.1[1-4]:11211 .* up\$" <<<"$last")
if [ "$w_rc" = 0 ] && [ "$away" -ge 1 ] && grep -q "^etcd: watch up at " <<<"$last" &&
	[ "$nup" = 3 ]; then
	pass fleet_view_watch_etcd_away_and_back
	note "--watch: $away frames said etcd was away; $(grep -m1 '^etcd: reconnecting' "$E2E_TMP/watch2.txt")"
else
	fail fleet_view_watch_etcd_away_and_back "rc $w_rc, $away frames away; last: $last; $(cat "$E2E_TMP/watch2.err")"
fi

note "the load stopped $((SECONDS - LOAD_T0)) s after its start"
ks_stop_pid "$LOAD_PID" TERM 3
LOAD_PID=
