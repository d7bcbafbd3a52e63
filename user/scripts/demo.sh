#!/usr/bin/env bash
# demo.sh - keysteer in one command (`make demo`): a cache host running
# memcached, an application host sending it a skewed load with a flash-sale
# key, and the agent on the cache host's interface showing the hot keys live.
#
#   DEMO_SECONDS=20 user/scripts/demo.sh      (run as root; default 20 s)
#
# Builds a throwaway network: namespaces ks_app_PID (the application host,
# 198.18.0.1) and ks_cache_PID (the cache host, 198.18.0.2) joined by a veth
# pair, addresses from 198.18.0.0/15. Nothing outside them is touched, and
# everything is removed on exit, Ctrl-C included.
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/user/scripts/netns.sh"
# shellcheck source=demo_lib.sh
. "$ROOT/user/scripts/demo_lib.sh"
AGENT=$ROOT/${OUT:-build}/agent
CLIENT=$ROOT/user/scripts/demo_client.py
DEMO_SECONDS=${DEMO_SECONDS:-20}

APP_NS=ks_app_$$
CACHE_NS=ks_cache_$$
APP_IF=ks_app$$
CACHE_IF=ks_cache$$
APP_ADDR=198.18.0.1
CACHE_ADDR=198.18.0.2
PORT=11211
SAMPLE=8

AGENT_PID='' CLIENT_PID='' WATCH_PID='' KS_MEMCACHED_PID='' LOG=''

cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	echo
	say "cleaning up"
	[ -n "$NAP_PID" ] && ks_stop_pid "$NAP_PID" TERM 1
	[ -n "$WATCH_PID" ] && ks_stop_pid "$WATCH_PID" TERM 3
	[ -n "$CLIENT_PID" ] && ks_stop_pid "$CLIENT_PID" TERM 3
	# SIGINT is the agent's clean stop: it detaches and removes its pins.
	[ -n "$AGENT_PID" ] && ks_stop_pid "$AGENT_PID" INT 10
	if [ -e "/sys/fs/bpf/keysteer/$CACHE_IF" ]; then
		ks_in_ns "$CACHE_NS" "$AGENT" detach --iface "$CACHE_IF" >/dev/null 2>&1
	fi
	[ -n "$KS_MEMCACHED_PID" ] && ks_stop_pid "$KS_MEMCACHED_PID" TERM 5
	ks_ns_delete "$APP_NS" "$CACHE_NS"
	[ -n "$LOG" ] && rm -rf "$LOG"
	echo "removed namespaces $APP_NS and $CACHE_NS, memcached and the agent"
	exit "$rc"
}

demo_need_root
[ -x "$AGENT" ] || die "$AGENT is missing; run 'make' first"
demo_seconds DEMO_SECONDS "$DEMO_SECONDS" 1 3600
command -v memcached >/dev/null || die "memcached is missing; run 'make deps'"
"$PY" -c 'import pymemcache' 2>/dev/null ||
	die "python3-pymemcache is missing; run 'make deps'"

demo_traps cleanup
LOG=$(mktemp -d /tmp/ks_demo.XXXXXX)

say "network: application host $APP_NS ($APP_ADDR) <-veth-> cache host $CACHE_NS ($CACHE_ADDR)"
ks_pair_create "$APP_NS" "$CACHE_NS" "$APP_IF" "$CACHE_IF" \
	"$APP_ADDR/24" "$CACHE_ADDR/24" || die "could not create the namespaces"

say "memcached on $CACHE_ADDR:$PORT (TCP and UDP) in the cache host"
ks_start_memcached "$CACHE_NS" "$CACHE_ADDR" "$PORT" || die "memcached did not start"
ks_in_ns "$APP_NS" "$PY" "$CLIENT" preload --server "$CACHE_ADDR" --port "$PORT" ||
	die "could not fill memcached"
echo "filled 100,000 items and the flash-sale key"

say "agent run --iface $CACHE_IF --sample $SAMPLE (on the cache host)"
ks_in_ns_bg "$CACHE_NS" "$AGENT" run --iface "$CACHE_IF" --sample "$SAMPLE" \
	--interval 1 </dev/null >"$LOG/agent" 2>&1
AGENT_PID=$KS_BG_PID
for ((i = 0; i < 100; i++)); do
	grep -q "attached to $CACHE_IF" "$LOG/agent" && break
	kill -0 "$AGENT_PID" 2>/dev/null || break
	nap 0.1
done
cat "$LOG/agent"
grep -q "attached to $CACHE_IF" "$LOG/agent" || die "the agent did not attach"

say "load: Zipf over 100,000 keys + a flash-sale key in ~25% of requests;" \
	"gets, multi-gets and sets over TCP, gets over UDP"
ks_in_ns_bg "$APP_NS" "$PY" "$CLIENT" run --server "$CACHE_ADDR" --port "$PORT" \
	--seconds "$((DEMO_SECONDS + 20))" --rate 3000 </dev/null >"$LOG/client" 2>&1
CLIENT_PID=$KS_BG_PID
nap 2.2 # two intervals, so the first report has data

say "agent report (refreshed every interval, for $DEMO_SECONDS s)"
if [ -t 1 ]; then
	# On a terminal the dashboard redraws in place; timeout's SIGTERM is
	# the report's clean stop.
	timeout "$DEMO_SECONDS" nsenter --net="/run/netns/$CACHE_NS" -- \
		"$AGENT" report --iface "$CACHE_IF" --watch --top 15 &
	WATCH_PID=$!
	wait "$WATCH_PID"
	WATCH_PID=
else
	# Not a terminal (a log, CI): one report every few seconds instead of
	# screen redraws.
	end=$((SECONDS + DEMO_SECONDS))
	while [ "$SECONDS" -lt "$end" ]; do
		ks_in_ns "$CACHE_NS" "$AGENT" report --iface "$CACHE_IF" --top 10
		echo
		nap 4
	done
fi

say "last report, as JSON for scripts (agent report --json --top 3)"
ks_in_ns "$CACHE_NS" "$AGENT" report --iface "$CACHE_IF" --json --top 3 |
	"$PY" -c '
import json, sys
doc = json.load(sys.stdin)
total = sum(doc["classes"][c]["keys_per_s"] for c in ("read", "write", "other"))
print("keys/s seen: %.0f" % total)
for e in doc["top"]:
    print("  %-20s reads/s %8.0f  writes/s %6.0f  share %5.1f%%  +/- %.0f"
          % (e.get("key", e["hash"]), e["reads_per_s"], e["writes_per_s"],
             100 * e["share"], e["error_bound"]))
'
ks_stop_pid "$CLIENT_PID" TERM 3
CLIENT_PID=
cat "$LOG/client"
