#!/usr/bin/env bash
# scale_out.sh - `make bench-scale-out` (issue 23, docs/benchmarks.md
# "Scale-out"): how many reads reach the database when a fifth shard joins
# four under a read load, through libkeysteer with and without its warm-up
# from the old owner, and through a plain ketama client (pymemcache).
#
# In a network namespace of its own: etcd on 127.0.0.1:2379 and five
# memcacheds on 127.0.0.1..5:11211. For each client kind, in turn: the ring
# set to the first four, every memcached flushed, then
# tests/bench/scale_out.py: the cache filled, a Zipf read load with a
# counted read-through database, the fifth shard added mid-run (`agent
# ring set`), AFTER seconds of load from the moment the client follows.
#
#   sudo tests/bench/scale_out.sh [--keys N] [--before S] [--after S]
#        [--json FILE]
#
# Not a test: it prints a table (and --json FILE the runs). Everything is
# removed on every exit path. About 2 minutes with the defaults.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../user/scripts/netns.sh
. "$ROOT/user/scripts/netns.sh"
AGENT=$ROOT/${OUT:-build}/agent
PY=/usr/bin/python3
KEYS=20000 BEFORE=5 AFTER=30 JSON_OUT=''
while [ $# -gt 0 ]; do
	case $1 in
	--keys) KEYS=$2 ;;
	--before) BEFORE=$2 ;;
	--after) AFTER=$2 ;;
	--json) JSON_OUT=$2 ;;
	*) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
	esac
	shift 2
done
for t in memcached etcd; do
	command -v "$t" >/dev/null || { echo "scale_out.sh: $t is missing: make deps" >&2; exit 1; }
done
$PY -c 'import pymemcache' 2>/dev/null || { echo "scale_out.sh: apt-get install python3-pymemcache" >&2; exit 1; }
[ -x "$AGENT" ] && [ -e "$ROOT/${OUT:-build}/libkeysteer.so" ] || { echo "scale_out.sh: run 'make all'" >&2; exit 1; }

NS=ks_bso_$$
TMP=$(mktemp -d /tmp/ks_scale_out.XXXXXX)
URL=http://127.0.0.1:2379
PIDS=()
cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do
		ks_stop_pid "$pid" TERM 5
	done
	ks_ns_delete "$NS"
	rm -rf "$TMP"
}
trap cleanup EXIT
ip netns add "$NS" && ip -n "$NS" link set lo up || exit 1
for i in 1 2 3 4 5; do
	[ "$i" = 1 ] || ip -n "$NS" addr add "127.0.0.$i/8" dev lo
	ks_in_ns_bg "$NS" memcached -u nobody -l "127.0.0.$i" -p 11211 -U 0 -m 256 -t 1 \
		</dev/null >/dev/null 2>&1
	PIDS+=("$KS_BG_PID")
	ks_wait_tcp "$NS" "127.0.0.$i" 11211 5 || { echo "memcached on 127.0.0.$i did not start" >&2; exit 1; }
done
ks_start_etcd "$NS" scale_out "$URL" 2380 "$TMP" || exit 1
PIDS+=("$KS_ETCD_PID")
printf '127.0.0.%d:11211\n' 1 2 3 4 >"$TMP/s4"
printf '127.0.0.%d:11211\n' 1 2 3 4 5 >"$TMP/s5"
seq 0 $((KEYS - 1)) | sed 's/^/so:/' >"$TMP/keys"
for n in 4 5; do
	"$AGENT" ring lookup --shards-file "$TMP/s$n" <"$TMP/keys" >"$TMP/owners$n"
done

: >"$TMP/runs.json"
for kind in library library-off plain; do
	cluster=so_${kind//-/_}
	ks_in_ns "$NS" "$AGENT" ring set --etcd "$URL" --cluster "$cluster" \
		--shards-file "$TMP/s4" >/dev/null || exit 1
	ks_in_ns "$NS" $PY -c '
from pymemcache.client.base import Client
for i in range(1, 6):
    Client(("127.0.0.%d" % i, 11211)).flush_all()'
	echo "scale_out.sh: $kind ..." >&2
	# ring_union=off is a test-only switch (the library-off baseline)
	KEYSTEER_TEST_SWITCHES=1 KEYSTEER_LIB=$ROOT/${OUT:-build}/libkeysteer.so \
		ks_in_ns "$NS" $PY "$ROOT/tests/bench/scale_out.py" --kind "$kind" \
		--etcd "$URL" --cluster "$cluster" --keys "$KEYS" --before "$BEFORE" \
		--after "$AFTER" --owners4 "$TMP/owners4" --owners5 "$TMP/owners5" \
		--ring-cmd "$AGENT ring set --etcd $URL --cluster $cluster --shards-file $TMP/s5 >/dev/null" \
		>>"$TMP/runs.json" || exit 1
done
$PY - "$TMP/runs.json" <<'EOF'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
r0 = runs[0]
print("keys %d (Zipf %.2f), %d moved to the fifth shard; %g s after the change"
      % (r0["keys"], r0["zipf"], r0["moved_keys"], r0["after_s"]))
print("%-12s %8s %12s %12s %9s %10s %14s %12s" % (
    "client", "reads", "moved reads", "moved keys", "db reads",
    "db moved", "db/moved rd", "db/moved key"))
for r in runs:
    a = r["after"]
    print("%-12s %8d %12d %12d %9d %10d %13.2f%% %12.2f" % (
        r["kind"], a["reads"], a["moved_reads"], a["moved_keys_read"],
        a["db_reads"], a["db_reads_moved"],
        100.0 * a["db_reads_moved"] / max(1, a["moved_reads"]),
        a["db_reads_moved"] / max(1, a["moved_keys_read"])))
for r in runs:
    if "library" in r:
        print("%s: %s; before the change %d reads, %d db reads" % (
            r["kind"], r["library"], r["before"]["reads"],
            r["before"]["db_reads"]))
EOF
[ -n "$JSON_OUT" ] && cp "$TMP/runs.json" "$JSON_OUT"
exit 0
