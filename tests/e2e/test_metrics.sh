#!/usr/bin/env bash
# test_metrics.sh - 'agent run --metrics', end to end: refusals of a bad
# address, a port in use and --export-keys alone exit 2 with one line and
# leave nothing attached; a running agent's /metrics (scraped from inside
# the server namespace with python's urllib) passes `promtool check
# metrics`, is loopback only, its counters move with a paced load, the top
# and hot keys carry hashes and no key label; every metric name the Grafana
# dashboard (docs/grafana/keysteer.json) queries is in the scrape; then
# --metrics on the --listen address with --export-keys serves both paths
# from one port and labels the keys.
#
# Set-up (lib.sh): namespaces ks_cli_PID / ks_srv_PID on a veth pair
# (198.18.0.1 / 198.18.0.2), memcached in ks_srv, the agent attached to the
# server-side veth, build/ks_load in ks_cli. The ring has two shards (this
# host and 198.18.0.3, which receives nothing) so the per-shard families
# have two series; one replica where nothing listens makes every copy fail
# fast, so the steering families count failures (test_steer.sh steers).
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init metrics

LOAD=$E2E_ROOT/${OUT:-build}/ks_load
DASH=$E2E_ROOT/docs/grafana/keysteer.json
PROMTOOL=${PROMTOOL:-/usr/bin/promtool} # another path: to try the FAIL
MPORT=19190
LPORT=19191
if [ ! -x "$LOAD" ]; then
	fail metrics "$LOAD is missing; run 'make' first"
	exit 1
fi

e2e_net_up

# --- refusals: exit 2, one line, nothing attached ----------------------------
# refused NAME PATTERN ARGS...: `agent run --iface SIF ARGS` must exit 2 with
# one stderr line "agent: <what>; <what to do>" matching PATTERN.
refused() {
	local name=$1 pattern=$2 rc
	shift 2
	timeout 10 nsenter --net="/run/netns/$SNS" -- "$AGENT" run --iface "$SIF" \
		"$@" >/dev/null 2>"$E2E_TMP/refused.err"
	rc=$?
	if [ "$rc" = 2 ] && [ "$(wc -l <"$E2E_TMP/refused.err")" = 1 ] &&
		grep -q '^agent: .*; ' "$E2E_TMP/refused.err" &&
		grep -qiE -- "$pattern" "$E2E_TMP/refused.err" &&
		! e2e_pins_exist && ! e2e_xdp_attached; then
		pass "$name"
	else
		fail "$name" "exit $rc, attached: $(e2e_xdp_attached && echo yes || echo no), stderr: $(head -c 300 "$E2E_TMP/refused.err")"
	fi
}
refused metrics_bad_port "--metrics '127.0.0.1:99999': port" --metrics 127.0.0.1:99999
refused metrics_bad_address "--metrics 'localhost:9180'.*dotted" --metrics localhost:9180
refused metrics_export_keys_alone "--export-keys.*--metrics" --export-keys
# A port already taken in the server namespace.
ks_in_ns_bg "$SNS" "$PY" -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", '"$MPORT"')); s.listen(1); time.sleep(8)'
taker=$KS_BG_PID
sleep 0.5
refused metrics_port_in_use "in use.*give --metrics a free port" --metrics "$MPORT"
ks_stop_pid "$taker" TERM 2

# --- helpers -----------------------------------------------------------------
# scrape PORT PATH FILE: GET http://127.0.0.1:PORT/PATH in the server
# namespace into FILE; prints "STATUS CONTENT-TYPE".
# An answer that does not come (a timeout, no connection) is asked again
# until one does, 60 s a guard: at load 21 a scrape of 3 s timed out, and
# the counters compared with it read 0.
scrape() {
	ks_in_ns "$SNS" "$PY" - "$1" "$2" "$3" <<'PYEOF'
import sys, time, urllib.request, urllib.error
port, path, out = sys.argv[1:4]
end = time.monotonic() + 60
while True:
    try:
        r = urllib.request.urlopen("http://127.0.0.1:%s%s" % (port, path), timeout=10)
        body, status, ctype = r.read(), r.status, r.headers.get("Content-Type")
    except urllib.error.HTTPError as e:
        body, status, ctype = e.read(), e.code, e.headers.get("Content-Type")
    except OSError as e:
        body, status, ctype = str(e).encode(), 0, "-"
    if status or time.monotonic() > end:
        break
    time.sleep(0.2)
open(out, "wb").write(body)
print(status, ctype)
PYEOF
}

# value FILE NAME [LABEL=VALUE...]: the sum of NAME's samples with those
# labels (0 when there are none), parsed with the exposition's escapes.
value() {
	"$PY" - "$@" <<'PYEOF'
import re, sys
path, name, want = sys.argv[1], sys.argv[2], dict(a.split("=", 1) for a in sys.argv[3:])
pair = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
total = 0.0
for line in open(path):
    if line.startswith("#") or not line.strip():
        continue
    head, val = line.rstrip("\n").rsplit(" ", 1)
    n = head.split("{", 1)[0]
    labels = dict(pair.findall(head[len(n):]))
    if n == name and all(labels.get(k) == v for k, v in want.items()):
        total += float(val)
print("%.0f" % total)
PYEOF
}

# promtool_check NAME FILE: PASS when promtool finds nothing, FAIL without it.
promtool_check() {
	if [ ! -x "$PROMTOOL" ]; then
		fail "$1" "$PROMTOOL is missing (make deps: prometheus): the scrape was not validated"
	elif "$PROMTOOL" check metrics <"$2" >"$E2E_TMP/promtool.out" 2>&1; then
		pass "$1"
	else
		fail "$1" "$(head -c 400 "$E2E_TMP/promtool.out" | tr '\n' ';')"
	fi
}

# load_during SECONDS OUT PROM: paced gets and sets with a flash key from
# the client for SECONDS at least; PROM is scraped while the top and hot
# keys are the load's, and the routing document (--listen) into
# PROM.routing. Fails if ks_load does. The load's intervals are waited for
# by what they show (a top key at the flash key's ~600 reads/s, flash:1 in
# the routing document), as a loaded machine starts ks_load and renders
# late: the load goes on until they do (SIGTERM then: ks_load ends as at
# its --duration), 60 s a guard. (It once ran a fixed 3 s, and at load 15
# ended before the agent rendered an interval of it.)
load_during() {
	local loader rc t0=$SECONDS
	ks_in_ns_bg "$CNS" nice -n "$KS_NICE" "$LOAD" --server "$SADDR:$PORT" \
		--duration 60 --rate 2000 --keys 1000 --zipf 0.5 \
		--flash flash:1:0.3 --mix get=90,set=10 --json >"$2" 2>&1
	loader=$KS_BG_PID
	while kill -0 "$loader" 2>/dev/null; do
		scrape "$MPORT" /metrics "$3" >/dev/null
		scrape "$LPORT" /routing "$3.routing" >/dev/null
		"$PY" - "$3" <<'PYEOF' && grep -q '"flash:1"' "$3.routing" && break
import sys
top = [float(l.rsplit(" ", 1)[1]) for l in open(sys.argv[1])
       if l.startswith("keysteer_top_key_reads_per_second{")]
sys.exit(not top or max(top) < 300)
PYEOF
	done
	# the load's SECONDS at least, as when it ran a fixed time (a pace)
	while kill -0 "$loader" 2>/dev/null && [ $((SECONDS - t0)) -lt "$1" ]; do
		sleep 0.2
	done
	kill -TERM "$loader" 2>/dev/null
	wait "$loader"
	rc=$?
	[ "$rc" = 0 ] || note "ks_load exited with $rc: $(head -c 300 "$2")"
	return "$rc"
}

# wait_intervals N: waits until N more intervals were rendered (60 s a
# guard: an interval took 5 to 9 s at load 43).
wait_intervals() {
	local want t0=$SECONDS
	scrape "$MPORT" /metrics "$E2E_TMP/w.prom" >/dev/null
	want=$(($(value "$E2E_TMP/w.prom" keysteer_intervals_total) + $1))
	while [ $((SECONDS - t0)) -lt 60 ]; do
		scrape "$MPORT" /metrics "$E2E_TMP/w.prom" >/dev/null
		[ "$(value "$E2E_TMP/w.prom" keysteer_intervals_total)" -ge "$want" ] && return 0
		sleep 0.1 # a poll's step
	done
	return 1
}

# --- the agent with its own metrics server ---------------------------------
echo "pin pinned:key 3" >"$E2E_TMP/pins.txt"
ip netns exec "$SNS" sysctl -qw "net.ipv4.conf.$SIF.forwarding=1"
# agent_up INTERVAL: the agent of this section, with its metrics server.
agent_up() {
	e2e_agent_start --sample 1 --interval "$1" \
		--shards "$SADDR:$PORT,198.18.0.3:$PORT" --self "$SADDR:$PORT" \
		--shard-capacity 2000 --hot-fraction 0.1 --replicas "$SADDR:11299" \
		--pins "$E2E_TMP/pins.txt" --metrics "$MPORT" --listen "$LPORT"
}

# The first rendering is published at start: no 503 before an interval
# ends. Shown by a scrape inside the first interval (intervals_total 0),
# which a loaded machine may not reach within the 0.5 s the rest uses: an
# agent of its own with 60 s intervals.
if ! agent_up 60; then
	fail metrics "agent run did not attach"
	exit 1
fi
res=$(scrape "$MPORT" /metrics "$E2E_TMP/start.prom")
if [ "$res" = "200 text/plain; version=0.0.4; charset=utf-8" ] &&
	grep -q '^keysteer_intervals_total 0$' "$E2E_TMP/start.prom"; then
	pass metrics_served_at_start
else
	fail metrics_served_at_start "$res: $(grep -m1 '^keysteer_intervals_total' "$E2E_TMP/start.prom" || head -c 200 "$E2E_TMP/start.prom")"
fi
grep -q "metrics on http://127.0.0.1:$MPORT/metrics" "$E2E_TMP/agent.out" ||
	fail metrics_start_line "no 'metrics on' line: $(head -c 300 "$E2E_TMP/agent.out")"
e2e_agent_stop INT
[ "$E2E_AGENT_RC" = 0 ] || fail metrics_agent_exit "agent exited with status $E2E_AGENT_RC on SIGINT"
if ! agent_up 0.5; then
	fail metrics "agent run did not attach"
	exit 1
fi

wait_intervals 1
scrape "$MPORT" /metrics "$E2E_TMP/before.prom" >/dev/null
load_during 3 "$E2E_TMP/load.json" "$E2E_TMP/during.prom" || fail metrics_load "ks_load failed"
# Every request of the load is in the totals of the intervals ended since.
wait_intervals 2 || fail metrics_intervals "the interval counter stopped moving"
scrape "$MPORT" /metrics "$E2E_TMP/after.prom" >/dev/null
note "scrape under load: $(wc -l <"$E2E_TMP/during.prom") lines, $(grep -c '^# TYPE' "$E2E_TMP/during.prom") families, $(wc -c <"$E2E_TMP/during.prom") bytes"
promtool_check metrics_promtool "$E2E_TMP/during.prom"
promtool_check metrics_promtool_at_start "$E2E_TMP/start.prom"

# Counters against what ks_load says it sent.
sent=$("$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(sum(o["ops"] for o in d["ops"] if o["op"] == "get"), sum(o["ops"] for o in d["ops"] if o["op"] == "set"))' \
	"$E2E_TMP/load.json" 2>/dev/null)
read -r sent_gets sent_sets <<<"${sent:-0 0}"
# delta NAME [LABEL=VALUE...]: after - before.
delta() {
	echo $(($(value "$E2E_TMP/after.prom" "$@") - $(value "$E2E_TMP/before.prom" "$@")))
}
d_gets=$(delta keysteer_requests_total op=get)
d_sets=$(delta keysteer_requests_total class=write op=set)
d_pkts=$(delta keysteer_memcached_packets_total proto=tcp)
d_shard_r=$(delta keysteer_shard_reads_total)
d_shard_w=$(delta keysteer_shard_writes_total)
d_other=$(($(delta keysteer_shard_reads_total shard=1) + $(delta keysteer_shard_writes_total shard=1)))
d_mis=$(delta keysteer_shard_misdirected_total shard=1)
note "sent $sent_gets gets, $sent_sets sets; counted $d_gets gets, $d_sets sets, $d_pkts TCP packets; shards: $d_shard_r reads, $d_shard_w writes, $d_mis misdirected to 198.18.0.3"
# Every get and set the client sent went through the datapath in the
# intervals between the two scrapes: equal counts, not approximations.
if [ "$sent_gets" -gt 1000 ] && [ "$d_gets" = "$sent_gets" ] &&
	[ "$d_sets" = "$sent_sets" ] && [ "$d_pkts" -ge $((sent_gets + sent_sets)) ]; then
	pass metrics_counters_move
else
	fail metrics_counters_move "sent $sent_gets gets / $sent_sets sets, counted $d_gets / $d_sets, $d_pkts packets"
fi
# --sample 1: the per-shard estimates are exact too. ks_load sends every
# key here, so the keys the ring gives 198.18.0.3 are all misdirected.
if [ "$d_shard_r" = "$sent_gets" ] && [ "$d_shard_w" = "$sent_sets" ] &&
	[ "$d_other" -gt 0 ] && [ "$d_mis" = "$d_other" ] &&
	[ "$(delta keysteer_shard_misdirected_total shard=0)" = 0 ]; then
	pass metrics_shard_counters
else
	fail metrics_shard_counters "shards counted $d_shard_r reads, $d_shard_w writes for $sent_gets gets, $sent_sets sets; 198.18.0.3: $d_other keys, $d_mis misdirected"
fi

# The agent's own cost: its CPU moves with the intervals, and the loop
# thread's work of the last interval is part of it (that interval is in the
# window), under the largest so far.
cost=$("$PY" - "$E2E_TMP/before.prom" "$E2E_TMP/after.prom" <<'PYEOF'
import sys
def scrape(p):
    return {l.split()[0]: float(l.split()[1]) for l in open(p)
            if l.startswith(("keysteer_agent_cpu", "keysteer_interval_work", "keysteer_intervals_total"))}
a, b = scrape(sys.argv[1]), scrape(sys.argv[2])
cpu = b["keysteer_agent_cpu_seconds_total"] - a["keysteer_agent_cpu_seconds_total"]
ivl = b["keysteer_intervals_total"] - a["keysteer_intervals_total"]
work, top = b["keysteer_interval_work_cpu_seconds"], b["keysteer_interval_work_cpu_max_seconds"]
ok = ivl > 0 and cpu > 0 and 0 < work <= top and work <= cpu
print("%s %.3f ms CPU per interval over %d intervals, last work %.3f ms, max %.3f ms" % (
    "ok" if ok else "bad", 1e3 * cpu / max(ivl, 1), ivl, 1e3 * work, 1e3 * top))
PYEOF
)
note "agent cost: ${cost#* }"
case $cost in
ok*) pass metrics_agent_cost ;;
*) fail metrics_agent_cost "${cost:-no figures}" ;;
esac

# Keys: hashes, never key labels, without --export-keys.
# flash:1's hash as the agent computes it, from its routing document.
flash_hash=$("$PY" -c 'import json, sys
print("0x" + [k["hash"] for k in json.load(open(sys.argv[1]))["keys"] if k["key"] == "flash:1"][0])' \
	"$E2E_TMP/during.prom.routing" 2>/dev/null)
top_reads=$(value "$E2E_TMP/during.prom" keysteer_top_key_reads_per_second hash="$flash_hash")
hot_reads=$(value "$E2E_TMP/during.prom" keysteer_hot_key_reads_per_second hash="$flash_hash")
note "flash:1 ($flash_hash): top $top_reads reads/s, hot table $hot_reads reads/s"
if grep -q 'key="' "$E2E_TMP/during.prom" || grep -q 'flash:1\|pinned:key' "$E2E_TMP/during.prom"; then
	fail metrics_hash_only "a key in the scrape without --export-keys: $(grep -m1 'key="\|flash:1' "$E2E_TMP/during.prom")"
elif [ "$top_reads" -lt 100 ] || [ "$hot_reads" -lt 100 ]; then
	fail metrics_hash_only "flash:1 ($flash_hash) not among the top/hot keys by its hash"
else
	pass metrics_hash_only
fi

# Hot keys, steering and map fill have their series: flash:1 and the pin
# in the table and the datapath, copies to the dead replica failing.
P=$E2E_TMP/during.prom
slots=$(value "$P" keysteer_hot_slots)
copies=$(value "$P" keysteer_steer_copy_failures_total)
if [ "$(value "$P" keysteer_hot_table_keys)" -ge 2 ] && [ "$slots" -ge 2 ] &&
	[ "$(value "$P" keysteer_hot_datapath_keys)" = "$slots" ] && [ "$copies" -ge 1 ] &&
	grep -q "^keysteer_replica_up{replica=\"$SADDR:11299\"} [01]\$" "$P" &&
	[ "$(value "$P" keysteer_candidate_keys)" -gt 0 ] &&
	[ "$(value "$P" keysteer_candidate_slots)" -gt 0 ]; then
	pass metrics_hot_and_steering
else
	fail metrics_hot_and_steering "hot slots $slots, failed copies $copies: $(grep -E '^keysteer_(hot_table_keys|hot_datapath_keys|replica_up|candidate_)' "$P" | tr '\n' ';')"
fi

# Loopback only: nothing answers on the veth address.
res=$(ks_in_ns "$CNS" "$PY" -c 'import socket
s = socket.socket(); s.settimeout(2)
try:
    s.connect(("'"$SADDR"'", '"$MPORT"')); print("reachable")
except OSError:
    print("refused")' 2>&1)
if [ "$res" = refused ]; then
	pass metrics_loopback_only
else
	fail metrics_loopback_only "the metrics answered on $SADDR: $res"
fi

# --- the dashboard's metric names are all in the scrape ---------------------
res=$("$PY" - "$DASH" "$E2E_TMP/during.prom" <<'PYEOF'
import json, re, sys
dash = json.load(open(sys.argv[1]))
have = set()
for line in open(sys.argv[2]):
    if line.strip() and not line.startswith("#"):
        have.add(re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0))
exprs = []
def walk(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("expr", "definition") and isinstance(v, str):
                exprs.append(v)
            walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)
walk(dash)
names = set()
for e in exprs:
    names.update(re.findall(r"\bkeysteer_[a-zA-Z0-9_]+", e))
why = []
if dash.get("schemaVersion", 0) < 36:
    why.append("schemaVersion %s" % dash.get("schemaVersion"))
if not any(v.get("type") == "datasource" for v in dash["templating"]["list"]):
    why.append("no datasource variable")
missing = sorted(names - have)
if missing:
    why.append("not in the scrape: " + ", ".join(missing))
if len(exprs) < 20 or len(names) < 20:
    why.append("only %d queries over %d names" % (len(exprs), len(names)))
print("; ".join(why) or "ok %d queries, %d metric names" % (len(exprs), len(names)))
PYEOF
)
case $res in
ok*) pass metrics_dashboard_names; note "dashboard: ${res#ok }" ;;
*) fail metrics_dashboard_names "$res" ;;
esac

e2e_agent_stop INT
[ "$E2E_AGENT_RC" = 0 ] || fail metrics_agent_exit "agent exited with status $E2E_AGENT_RC on SIGINT"

# --- one server for both paths, with --export-keys ---------------------------
if ! e2e_agent_start --sample 1 --interval 0.5 --shard-capacity 2000 \
	--hot-fraction 0.1 --pins "$E2E_TMP/pins.txt" \
	--listen "$LPORT" --metrics "127.0.0.1:$LPORT" --export-keys; then
	fail metrics_shared "agent run did not attach"
	exit 1
fi
MPORT=$LPORT # the helpers scrape this one now
load_during 2 "$E2E_TMP/load2.json" "$E2E_TMP/keys.prom" || fail metrics_load "ks_load failed"
m=$(scrape "$LPORT" /metrics "$E2E_TMP/shared.prom")
r=$(scrape "$LPORT" /routing "$E2E_TMP/routing.json")
n=$(scrape "$LPORT" /nope "$E2E_TMP/nope.txt")
if [ "$m" = "200 text/plain; version=0.0.4; charset=utf-8" ] &&
	[ "$r" = "200 application/json" ] && [ "${n%% *}" = 404 ] &&
	grep -q '"pinned:key"' "$E2E_TMP/routing.json"; then
	pass metrics_shared_with_listen
else
	fail metrics_shared_with_listen "/metrics: $m; /routing: $r; /nope: $n"
fi
if grep -q '^keysteer_top_key_reads_per_second{hash="'"$flash_hash"'",key="flash:1"} ' "$E2E_TMP/keys.prom" &&
	grep -q '^keysteer_hot_key_copies{hash="0x[0-9a-f]*",key="pinned:key"} ' "$E2E_TMP/keys.prom"; then
	pass metrics_export_keys
else
	fail metrics_export_keys "no key=\"flash:1\" top key or key=\"pinned:key\" hot key: $(grep -m3 'key=' "$E2E_TMP/keys.prom" | tr '\n' ';')"
fi
promtool_check metrics_promtool_with_keys "$E2E_TMP/keys.prom"

e2e_agent_stop INT
if [ "$E2E_AGENT_RC" = 0 ]; then
	pass metrics_agent_exit
else
	fail metrics_agent_exit "agent exited with status $E2E_AGENT_RC on SIGINT"
fi
e2e_expect_clean metrics_detached
