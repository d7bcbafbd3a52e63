#!/usr/bin/env bash
# test_soak.sh - sustained load while the agent swaps rings and hot tables
# every interval. ks_load drives memcached as fast as it can over TCP (4
# connections, flat out) plus UDP gets at a fixed rate, for SOAK_SECONDS
# (default 40; `make soak` runs 600). Every 0.5 s (the interval) the shard
# file flips between two lists (a ring push each time) and the pin file
# names another key (the hot table changes each time). Checks: no request
# failed, the datapath counted exactly every request ks_load sent (UDP less
# what was lost in front of it; see the equations below), no parse errors,
# every reload succeeded, and the agent's memory stayed flat (within 256
# KiB from the floor of flips 10 to 20 to the end, after the last reload). Each flip builds a 1.5 MB ring and
# frees the old one (valgrind's massif: the heap goes 3.7 -> 5.3 -> 3.7 MB
# at every flip, its floor within 1.1 KiB over 31 flips); the agent
# keeps such blocks mmapped (cmd_run.c), so a freed ring leaves no RSS
# behind. Before that, glibc moved them onto the heap after some flip, a
# step of one ring whenever it came (after the tenth on a loaded machine).
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
# The purge off: the flips add two shards at once, which its gate refuses
# with a warning each time (docs/fleet.md), and what is soaked here is the
# swap itself; test_ring_purge.sh tests the purge.
if ! e2e_agent_start --interval 0.5 --shards-file "$SHARDS" --self "$SADDR:$PORT" \
	--pins "$PINS" --purge-rate 0 --purge-sweep-rate 0 -v; then
	fail soak "the agent did not attach"
	exit 1
fi
rss() { awk '$1 == "VmRSS:" {print $2}' "/proc/$E2E_AGENT_PID/status"; }
# dp_counts: the datapath's totals, summed over CPUs (fast gets too): get
# and set requests, UDP datagrams with a payload, UDP gets steered away.
dp_counts() {
	e2e_agent report --iface "$SIF" --json 2>/dev/null | "$PY" -c 'import json,sys
t = json.load(sys.stdin)["totals"]
print(t["ops"]["get"]["requests"] + t["ops"]["set"]["requests"],
      t["packets"]["udp"], t["packets"]["steered"])'
}
# udp_mib NS: the namespace's UDP counters "InDatagrams InErrors" (read by
# a socket; dropped at one, a full receive buffer among them).
udp_mib() {
	ks_in_ns "$1" cat /proc/net/snmp | awk '$1 == "Udp:" {
		if (!n++) { for (i = 2; i <= NF; i++) col[$i] = i; next }
		print $col["InDatagrams"], $col["InErrors"] }'
}
# veth_drops: packets our client-side veth could not hand to its peer (a
# full queue in front of the XDP hook: what the datapath cannot see).
veth_drops() {
	ip -n "$CNS" -s -j link show dev "$CIF" |
		"$PY" -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["tx"]["dropped"])'
}
errors_total() {
	e2e_agent report --iface "$SIF" --json 2>/dev/null | "$PY" -c 'import json,sys
d = json.load(sys.stdin)
print(sum(v["total"] for k, v in d["errors"].items() if k != "not_memcached"))'
}
read -r req0 udp0 steer0 <<<"$(dp_counts)"
read -r mib_in0 mib_err0 <<<"$(udp_mib "$SNS")"
vdrop0=$(veth_drops)

ks_in_ns_bg "$CNS" "$LOAD" --server "$SADDR:$PORT" --proto tcp --conns 4 \
	--keys 50000 --zipf 0.99 --flash soak:1:0.2 --mix get=80,mget=0,set=20 \
	--duration "$SECS" --rate 0 --json </dev/null >"$E2E_TMP/tcp.json" 2>"$E2E_TMP/tcp.err"
TCP_PID=$KS_BG_PID
# --timeout 5: a failed request is an error or a reply that never came; a
# reply late by what a loaded 2-core machine adds is not (beside stress-ng
# at load 61, 6 of 114,657 replies came after the 1 s it once had, every
# one of them read by memcached and counted)
ks_in_ns_bg "$CNS" "$LOAD" --server "$SADDR:$PORT" --proto udp --conns 2 \
	--keys 50000 --flash soak:1:0.2 --mix get=100 --duration "$SECS" \
	--rate 5000 --timeout 5 --json </dev/null >"$E2E_TMP/udp.json" 2>"$E2E_TMP/udp.err"
UDP_PID=$KS_BG_PID
# the flips start under load: both clients' requests counted by the
# datapath (its report, every interval; 30 s at most for a loaded machine)
for ((i = 0; i < 300; i++)); do
	read -r req udp _ <<<"$(dp_counts)"
	[ -n "$req" ] && [ -n "$udp" ] && [ "$udp" -gt "${udp0:-0}" ] &&
		[ $((req - ${req0:-0})) -gt $((udp - ${udp0:-0})) ] && break
	sleep 0.1
done
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
	sleep 0.6 # a pace: the soak's rate of flips, about one an interval
	# the first flips fill the agent's caches; from then on it must not
	# grow. A sample may land while a reload builds its new ring (RSS up
	# to ~650 KiB higher until the old one is freed, the longer on a
	# loaded machine): the baseline is the floor of flips 10 to 20.
	r=$(rss)
	if [ "$flips" -ge 10 ] && [ "$flips" -le 20 ] &&
		{ [ -z "$rss_start" ] || [ "$r" -lt "$rss_start" ]; }; then
		rss_start=$r
	fi
	echo "$SECONDS $flips $r" >>"$E2E_TMP/rss.log"
done
wait "$TCP_PID" "$UDP_PID" 2>/dev/null
# the end: 3 s after the last flip, no reload under way
rss_end=$(rss)
# Both clients have had every reply (or given up on it): every request
# they sent has been through the hook, so the counts are final.
read -r req1 udp1 steer1 <<<"$(dp_counts)"
read -r mib_in1 mib_err1 <<<"$(udp_mib "$SNS")"
vdrop1=$(veth_drops)
ring_v=$(e2e_agent report --iface "$SIF" --json 2>/dev/null |
	"$PY" -c 'import json,sys; d=json.load(sys.stdin); r=d["ring"]; print(r["version"], r.get("reload_errors", 0))')
errs=$(errors_total)

# sent: requests that left the client (msgs), not ops, which count a
# send that failed too.
read -r tcp_ops tcp_bad <<<"$("$PY" -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(sum(o["msgs"] for o in d["ops"]), sum(o["errors"] + o["timeouts"] for o in d["ops"]))' "$E2E_TMP/tcp.json" 2>/dev/null)"
read -r udp_ops udp_bad <<<"$("$PY" -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(sum(o["msgs"] for o in d["ops"]), sum(o["errors"] + o["timeouts"] for o in d["ops"]))' "$E2E_TMP/udp.json" 2>/dev/null)"
note "$SECS s: TCP $tcp_ops requests ($((tcp_ops / SECS))/s flat out), UDP $udp_ops; $flips ring and pin flips"

if [ -n "$tcp_ops" ] && [ "$tcp_bad" = 0 ] && [ "$udp_bad" = 0 ] && [ "$tcp_ops" -gt 1000 ]; then
	pass soak_no_failed_requests
else
	fail soak_no_failed_requests "TCP ${tcp_ops:-?} sent, ${tcp_bad:-?} failed; UDP ${udp_ops:-?} sent, ${udp_bad:-?} failed: $(tail -n 1 "$E2E_TMP/tcp.err")"
fi
# Exact, both ways. Every UDP datagram carries one get, so of the get+set
# requests the datapath counted, Δudp are UDP and the rest TCP.
#   TCP: counted == sent. A stream loses nothing: a dropped segment is
#        sent again and counted once (the stream state skips repeats).
#   UDP: counted == sent - dropped before the hook (veth_drops). The hook
#        sees a datagram before memcached's socket can drop it, so the
#        socket's drops are in the count; where every counted datagram
#        went is the second equation, from the server namespace's own
#        counters: counted == steered away + read by memcached
#        (InDatagrams) + dropped at a socket (InErrors).
if [ -n "${udp1:-}" ] && [ -n "${mib_in1:-}" ] && [ -n "${vdrop1:-}" ] && [ -n "$udp_ops" ]; then
	udp_seen=$((udp1 - udp0))
	tcp_seen=$((req1 - req0 - udp_seen))
	vdrops=$((vdrop1 - vdrop0))
	steered=$((steer1 - steer0))
	mib_in=$((mib_in1 - mib_in0))
	mib_err=$((mib_err1 - mib_err0))
	if [ -n "$tcp_ops" ] && [ "$tcp_seen" -eq "$tcp_ops" ] &&
		[ "$udp_seen" -eq $((udp_ops - vdrops)) ] &&
		[ "$udp_seen" -eq $((steered + mib_in + mib_err)) ]; then
		pass soak_every_request_counted
		note "TCP: $tcp_seen counted of $tcp_ops sent; UDP: $udp_seen counted of $udp_ops sent ($vdrops lost before the hook), then $mib_in read by memcached, $mib_err dropped at the socket, $steered steered"
	else
		fail soak_every_request_counted "TCP counted $tcp_seen, sent ${tcp_ops:-?}; UDP counted $udp_seen, sent $udp_ops less $vdrops lost before the hook; of those counted: $mib_in read, $mib_err dropped at the socket, $steered steered"
	fi
else
	fail soak_every_request_counted "a counter could not be read: datapath '${req1:-} ${udp1:-}', server UDP '${mib_in1:-}', veth drops '${vdrop1:-}', ks_load '$udp_ops'"
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
	note "agent RSS $rss_start KiB (floor of flips 10 to 20) -> $rss_end KiB at the end"
else
	fail soak_memory_flat "agent RSS ${rss_start:-?} KiB -> ${rss_end:-?} KiB"
fi
e2e_agent_stop INT
exit "$E2E_FAILED"
