#!/usr/bin/env bash
# purge_bench.sh - the ownership-loss purge's cost (issue 23, `make
# bench-purge`; a benchmark, not a test): one shard (memcached in a
# namespace, the agent on its veth with --shards-file and --self) holding
# ITEMS items (default 1,000,000, 8-byte values) loses about a quarter of
# them: the ring goes from {S} to {S:3, Z:1}. With the default rate bound
# (--purge-rate 5000) it reports the time the purge took, its items/s, and
# the p99 of gets to the shard (ks_load, RATE gets/s, Zipf over every
# item) during the purge against the same load without it. "Without it" is
# a twin memcached T on the same host, filled alike and loaded alike at the
# same time, which no ring change touches: on a shared machine the two see
# the same noise, so the ratio is the purge's own. A first window with no
# purge measures the pair's ratio with nothing to tell them apart.
#
#   tests/bench/purge_bench.sh [--items N] [--rate R] [--seconds S] [--json FILE]
#
# Everything is named by PID and removed on every exit path.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../user/scripts/netns.sh
. "$ROOT/user/scripts/netns.sh"
AGENT=$ROOT/${OUT:-build}/agent
LOAD=$ROOT/${OUT:-build}/ks_load
PY=/usr/bin/python3
ITEMS=1000000
RATE=5000
SECS=30
JSON=
while [ $# -gt 0 ]; do
	case $1 in
	--items) ITEMS=$2; shift 2 ;;
	--rate) RATE=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--json) JSON=$2; shift 2 ;;
	*) echo "usage: $0 [--items N] [--rate R] [--seconds S] [--json FILE]" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "purge_bench: needs root (namespaces, BPF)" >&2; exit 1; }
for t in memcached "$AGENT" "$LOAD"; do
	command -v "$t" >/dev/null || { echo "purge_bench: $t is missing (make deps; make)" >&2; exit 1; }
done

CNS=ks_pbc_$$ SNS=ks_pbs_$$ CIF=ks_pc$$ SIF=ks_ps$$
S=198.18.0.2:11211
T=198.18.0.3:11211
TMP=$(mktemp -d /tmp/ks_purge_bench.XXXXXX)
MC_PID='' MC2_PID='' AGENT_PID='' LOAD_PID='' LOAD2_PID=''
cleanup() {
	ks_stop_pid "$LOAD_PID" INT 5
	ks_stop_pid "$LOAD2_PID" INT 5
	ks_stop_pid "$AGENT_PID" INT 10
	[ -e "/sys/fs/bpf/keysteer/$SIF" ] &&
		ks_in_ns "$SNS" "$AGENT" detach --iface "$SIF" >/dev/null 2>&1
	ks_stop_pid "$MC_PID" TERM 5
	ks_stop_pid "$MC2_PID" TERM 5
	ks_ns_delete "$CNS" "$SNS"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ks_pair_create "$CNS" "$SNS" "$CIF" "$SIF" 198.18.0.1/24 198.18.0.2/24 ||
	{ echo "purge_bench: cannot create the namespaces" >&2; exit 1; }
# room for every item: about 100 bytes each with 8-byte values
ks_in_ns_bg "$SNS" memcached -u nobody -l 198.18.0.2 -p 11211 -U 0 -m 1024 \
	-t 2 -c 1024 </dev/null >/dev/null 2>&1
MC_PID=$KS_BG_PID
ip -n "$SNS" addr add 198.18.0.3/24 dev "$SIF"
ks_in_ns_bg "$SNS" memcached -u nobody -l 198.18.0.3 -p 11211 -U 0 -m 1024 \
	-t 2 -c 1024 </dev/null >/dev/null 2>&1
MC2_PID=$KS_BG_PID
if ! ks_wait_tcp "$SNS" 198.18.0.2 11211 5 || ! ks_wait_tcp "$SNS" 198.18.0.3 11211 5; then
	echo "purge_bench: memcached did not start" >&2
	exit 1
fi

echo "purge_bench: writing $ITEMS items to S and to its twin T"
for m in "$S" "$T"; do
	ks_in_ns "$CNS" "$LOAD" --server "$m" --keys "$ITEMS" --value-size 8 \
		--preload --count 1 --json >"$TMP/preload.json" ||
		{ echo "purge_bench: preload failed" >&2; exit 1; }
done
echo "$S" >"$TMP/shards.txt"
ks_in_ns_bg "$SNS" "$AGENT" run --iface "$SIF" --shards-file "$TMP/shards.txt" \
	--self "$S" --purge-sweep-rate 0 --interval 1 </dev/null >"$TMP/agent.out" 2>&1
AGENT_PID=$KS_BG_PID
for ((i = 0; i < 300; i++)); do
	grep -q "attached to $SIF" "$TMP/agent.out" && break
	kill -0 "$AGENT_PID" 2>/dev/null || { cat "$TMP/agent.out" >&2; exit 1; }
	sleep 0.1
done

report() { ks_in_ns "$SNS" "$AGENT" report --iface "$SIF" --json; }
field() { "$PY" -c 'import json,sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v[k] if isinstance(v, dict) else None
print(v)' "$1"; }
p99() { "$PY" -c 'import json,sys
d = json.load(open(sys.argv[1]))
print([o for o in d["ops"] if o["op"] == "get"][0]["latency_us"]["p99"])' "$1"; }
load() { # load SERVER OUT: RATE gets/s for SECS seconds
	ks_in_ns "$CNS" "$LOAD" --server "$1" --keys "$ITEMS" --mix get=100 \
		--rate "$RATE" --conns 4 --duration "$SECS" --json >"$2"
}
# window NAME: the same load on S and T at once
window() {
	load "$S" "$TMP/$1.s.json" &
	LOAD_PID=$!
	load "$T" "$TMP/$1.t.json" &
	LOAD2_PID=$!
	[ "$1" = during ] && kill -HUP "$AGENT_PID"
	if ! wait "$LOAD_PID" || ! wait "$LOAD2_PID"; then
		echo "purge_bench: load failed" >&2
		exit 1
	fi
	LOAD_PID='' LOAD2_PID=''
}

echo "purge_bench: no purge: $RATE gets/s to S and to T for $SECS s"
window calib
v0=$(report | field ring.version)

echo "purge_bench: S loses a quarter (SIGHUP); the same loads during the purge"
printf '%s:3\n198.18.0.9:11211:1\n' "$S" >"$TMP/shards.txt"
window during
# the purge's end: its first pass for the new ring reported
for ((i = 0; i < 1800; i++)); do
	report >"$TMP/rep.json" 2>/dev/null
	v=$(field ring.version <"$TMP/rep.json")
	if [ "$v" != "$v0" ] && [ "$(field ring.purge.ring_version <"$TMP/rep.json")" = "$v" ] &&
		[ "$(field ring.purge.passes <"$TMP/rep.json")" -ge 1 ]; then
		break
	fi
	sleep 0.5
done
took=$(field ring.purge.first_pass_s <"$TMP/rep.json")
items=$(field ring.purge.first_pass_items <"$TMP/rep.json")
listed=$(field ring.purge.listed_total <"$TMP/rep.json")
ips=$("$PY" -c "print(round($items / $took))" 2>/dev/null)
cs=$(p99 "$TMP/calib.s.json")
ct=$(p99 "$TMP/calib.t.json")
ds=$(p99 "$TMP/during.s.json")
dt=$(p99 "$TMP/during.t.json")
cr=$("$PY" -c "print(round($cs / $ct, 2))")
ratio=$("$PY" -c "print(round($ds / $dt, 2))")
echo "purge_bench: $ITEMS items, $listed listed, $items purged in $took s ($ips items/s, bound 5000/s)"
echo "purge_bench: get p99, $RATE gets/s each, $SECS s windows:"
echo "  no purge:     S ${cs} us, twin T ${ct} us (S/T x$cr)"
echo "  during purge: S ${ds} us, twin T ${dt} us (S/T x$ratio; goal <= 1.5)"
[ "$("$PY" -c "print($took >= $SECS)")" = True ] ||
	echo "purge_bench: note: the purge ($took s) ended before the window ($SECS s)"
grep -h "purge pass" "$TMP/agent.out" | head -n 3
if [ -n "$JSON" ]; then
	printf '{"items":%s,"listed":%s,"purged":%s,"purge_s":%s,"items_per_s":%s,"rate_bound":5000,"get_rate":%s,"seconds":%s,"p99_us_calib_s":%s,"p99_us_calib_twin":%s,"p99_us_during_s":%s,"p99_us_during_twin":%s,"p99_ratio":%s}\n' \
		"$ITEMS" "$listed" "$items" "$took" "$ips" "$RATE" "$SECS" "$cs" "$ct" "$ds" "$dt" "$ratio" >"$JSON"
fi
