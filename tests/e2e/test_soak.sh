#!/usr/bin/env bash
# test_soak.sh - sustained load while the agent swaps rings and hot tables
# every interval. ks_load drives memcached as fast as it can over TCP (4
# connections, flat out) plus UDP gets at a fixed rate, for SOAK_SECONDS
# (default 40; `make soak` runs 600). Every 0.5 s (the interval) the shard
# file flips between two lists (a ring push each time) and the pin file
# names another key (the hot table changes each time). Checks: no request
# failed, the datapath counted every TCP request ks_load sent, no parse
# errors, every reload succeeded, and the agent's memory stayed flat
# (within 256 KiB from the tenth flip, when the allocator has warmed up, to
# the end).
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init soak

LOAD=$E2E_ROOT/${OUT:-build}/ks_load
SECS=${SOAK_SECONDS:-40}
SHARDS=$E2E_TMP/shards.txt
PINS=$E2E_TMP/pins.txt
e2e_net_up

list_a="$SADDR:$PORT"
list_b="$SADDR:$PORT
198.18.0.50:11211
198.18.0.51:11211"
echo "$list_a" >"$SHARDS"
echo "pin soak:0 2" >"$PINS"
if ! e2e_agent_start --interval 0.5 --shards-file "$SHARDS" --self "$SADDR:$PORT" \
	--pins "$PINS" -v; then
	fail soak "the agent did not attach"
	exit 1
fi
rss() { awk '$1 == "VmRSS:" {print $2}' "/proc/$E2E_AGENT_PID/status"; }
total_req() { # datapath requests of get+set, summed over CPUs (fast gets too)
	"$PY" "$E2E_ROOT/tests/e2e/ks_live_ops.py" "$PIN_ROOT/$SIF" 2>/dev/null |
		"$PY" -c 'import json,sys
d = json.load(sys.stdin)
print(sum(d.get(k, [0])[0] for k in ("get", "set")))'
}
errors_total() {
	e2e_agent report --iface "$SIF" --json 2>/dev/null | "$PY" -c 'import json,sys
d = json.load(sys.stdin)
print(sum(v["total"] for k, v in d["errors"].items() if k != "not_memcached"))'
}
sleep 1
req0=$(total_req)

ks_in_ns_bg "$CNS" "$LOAD" --server "$SADDR:$PORT" --proto tcp --conns 4 \
	--keys 50000 --zipf 0.99 --flash soak:1:0.2 --mix get=80,mget=0,set=20 \
	--duration "$SECS" --rate 0 --json </dev/null >"$E2E_TMP/tcp.json" 2>"$E2E_TMP/tcp.err"
TCP_PID=$KS_BG_PID
ks_in_ns_bg "$CNS" "$LOAD" --server "$SADDR:$PORT" --proto udp --conns 2 \
	--keys 50000 --flash soak:1:0.2 --mix get=100 --duration "$SECS" \
	--rate 5000 --timeout 1 --json </dev/null >"$E2E_TMP/udp.json" 2>"$E2E_TMP/udp.err"
UDP_PID=$KS_BG_PID
sleep 2
rss_start=

flips=0
end=$((SECONDS + SECS - 3))
while [ "$SECONDS" -lt "$end" ]; do
	flips=$((flips + 1))
	if [ $((flips % 2)) = 1 ]; then echo "$list_b" >"$SHARDS.new"; else echo "$list_a" >"$SHARDS.new"; fi
	mv "$SHARDS.new" "$SHARDS"
	echo "pin soak:$flips 2" >"$PINS.new"
	mv "$PINS.new" "$PINS"
	kill -HUP "$E2E_AGENT_PID" # reload both now, not at the next check
	sleep 0.6
	# the first flips warm the allocator up; from then on it must not grow
	[ "$flips" = 10 ] && rss_start=$(rss)
	[ $((flips % 10)) = 0 ] && echo "$SECONDS $(rss)" >>"$E2E_TMP/rss.log"
done
rss_end=$(rss)
wait "$TCP_PID" "$UDP_PID" 2>/dev/null
sleep 1
req1=$(total_req)
ring_v=$(e2e_agent report --iface "$SIF" --json 2>/dev/null |
	"$PY" -c 'import json,sys; d=json.load(sys.stdin); r=d["ring"]; print(r["version"], r.get("reload_errors", 0))')
errs=$(errors_total)

read -r tcp_ops tcp_bad <<<"$("$PY" -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(sum(o["ops"] for o in d["ops"]), sum(o["errors"] + o["timeouts"] for o in d["ops"]))' "$E2E_TMP/tcp.json" 2>/dev/null)"
read -r udp_ops udp_bad <<<"$("$PY" -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(sum(o["ops"] for o in d["ops"]), sum(o["errors"] + o["timeouts"] for o in d["ops"]))' "$E2E_TMP/udp.json" 2>/dev/null)"
note "$SECS s: TCP $tcp_ops requests ($((tcp_ops / SECS))/s flat out), UDP $udp_ops; $flips ring and pin flips"

if [ -n "$tcp_ops" ] && [ "$tcp_bad" = 0 ] && [ "$udp_bad" = 0 ] && [ "$tcp_ops" -gt 1000 ]; then
	pass soak_no_failed_requests
else
	fail soak_no_failed_requests "TCP ${tcp_ops:-?} sent, ${tcp_bad:-?} failed; UDP ${udp_ops:-?} sent, ${udp_bad:-?} failed: $(tail -n 1 "$E2E_TMP/tcp.err")"
fi
seen=$((req1 - req0))
if [ -n "$tcp_ops" ] && [ "$seen" -ge "$tcp_ops" ] && [ "$seen" -le $((tcp_ops + udp_ops)) ]; then
	pass soak_every_request_counted
	note "datapath get+set requests: $seen (TCP $tcp_ops + UDP $udp_ops sent)"
else
	fail soak_every_request_counted "datapath counted $seen, ks_load sent TCP ${tcp_ops:-?} + UDP ${udp_ops:-?}"
fi
read -r ver rerr <<<"$ring_v"
if [ "${errs:-x}" = 0 ] && [ "${rerr:-x}" = 0 ] && [ "${ver:-0}" -ge $((flips / 2)) ] &&
	! grep -qE "^agent: (warning|error)" "$E2E_TMP/agent.out"; then
	pass soak_swaps_without_errors
	note "ring v$ver after $flips flips, parse errors $errs, reload errors $rerr"
else
	fail soak_swaps_without_errors "ring v${ver:-?} after $flips flips, parse errors ${errs:-?}, reload errors ${rerr:-?}, log: $(grep -m2 -E '^agent: (warning|error)' "$E2E_TMP/agent.out" | tr '\n' ' ')"
fi
if [ -n "$rss_start" ] && [ -n "$rss_end" ] && [ $((rss_end - rss_start)) -le 256 ]; then
	pass soak_memory_flat
	note "agent RSS $rss_start KiB after 10 flips -> $rss_end KiB at the end"
else
	fail soak_memory_flat "agent RSS ${rss_start:-?} KiB -> ${rss_end:-?} KiB"
fi
e2e_agent_stop INT
exit "$E2E_FAILED"
