#!/usr/bin/env bash
# test_etcd_proxy.sh - what Debian 12's `etcd grpc-proxy` (3.4) serves, and
# that keysteer's clients cannot follow the fleet through it (issue 25;
# docs/fleet.md, "Beyond one etcd: grpc-proxy"). In a namespace of its own
# (its own loopback): one etcd on 127.0.0.1:2379 and a grpc-proxy in front
# of it on 127.0.0.1:23790.
#
# The proxy works for gRPC clients: etcdctl puts through it, and two
# etcdctl watches of one prefix through it are one watcher at etcd (a
# direct watch beside them is a second: the control). It serves /health
# and /metrics over HTTP/1.1. It does not serve etcd's JSON gateway
# (/v3/kv/range, /v3/watch, /v3beta/kv/range: 404, while etcd itself
# answers 200 to the same requests), which is all libkeysteer and the
# agents speak (user/net/etcd.c): a handle's open and `agent ring get`
# through the proxy fail at once, naming the 404, and the same through
# etcd succeed. Should a later etcd's proxy serve the gateway,
# etcd_proxy_no_json_gateway fails: the doc is then wrong, and clients
# could follow through the proxy. The control in full: two handles on etcd
# itself see a put made after they opened (their views reach its
# revision), and not a revision never written. Every process is stopped
# by its pid on every exit path, and the namespace deleted.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_init etcd_proxy

SWARM=$E2E_ROOT/${OUT:-build}/tests/ks_client_swarm
PNS=ks_px_$$
ETCD=http://127.0.0.1:2379
PROXY=127.0.0.1:23790
ETCD_PID=
PROXY_PID=
WATCH_PIDS=()

proxy_cleanup() {
	local rc=$? pid
	for pid in "${WATCH_PIDS[@]}"; do
		ks_stop_pid "$pid" TERM 3
	done
	ks_stop_pid "$PROXY_PID" TERM 5
	ks_stop_pid "$ETCD_PID" TERM 5
	ks_ns_delete "$PNS"
	(exit "$rc")
	e2e_cleanup
}
trap proxy_cleanup EXIT

e2e_require etcd_proxy "make deps: etcd-server, etcd-client, curl" \
	etcd etcdctl curl
if [ ! -x "$SWARM" ]; then
	fail etcd_proxy "$SWARM is missing; run 'make tests' first"
	exit 1
fi

inp() { ks_in_ns "$PNS" "$@"; }
# the HTTP status of a POST of JSON (a watch stays open: 2 s are enough
# for its status line)
status() { # URL BODY
	inp curl -s -m 2 -o /dev/null -w '%{http_code}' -X POST "$1" -d "$2"
}
# etcd's etcd_debugging_mvcc_watcher_total: the watchers it keeps
watchers() {
	sed -n 's/^etcd_debugging_mvcc_watcher_total \([0-9]*\)$/\1/p' \
		<<<"$(inp curl -s -m 5 "$ETCD/metrics")"
}
# WANT: 0 once etcd keeps WANT watchers (10 s)
wait_watchers() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(watchers)" = "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

if ! ip netns add "$PNS" || ! ip -n "$PNS" link set lo up; then
	fail etcd_proxy_setup "cannot create namespace $PNS"
	exit 1
fi
e2e_etcd_start "$PNS" px "$ETCD" 2380
ETCD_PID=$E2E_ETCD_PID
# the proxy at etcd's nice (lib.sh's KS_ETCD_NICE): it is etcd's front
ks_in_ns_bg "$PNS" nice -n "$KS_ETCD_NICE" etcd grpc-proxy start --endpoints 127.0.0.1:2379 \
	--listen-addr "$PROXY" --data-dir "$KS_ETCD_DATA/proxy.data" \
	</dev/null >"$E2E_TMP/proxy.log" 2>&1
PROXY_PID=$KS_BG_PID
ok=0
for ((i = 0; i < 100; i++)); do
	if grep -q true <<<"$(inp curl -s -m 2 "http://$PROXY/health" 2>/dev/null)"; then
		ok=1
		break
	fi
	kill -0 "$PROXY_PID" 2>/dev/null || break
	sleep 0.1
done
if [ "$ok" != 1 ] || ! kill -0 "$ETCD_PID" 2>/dev/null; then
	fail etcd_proxy_setup "etcd or the proxy did not start: $(tail -n 3 "$E2E_TMP/proxy.log")"
	exit 1
fi
note "$(etcd --version | head -n 1): etcd at $ETCD, grpc-proxy at $PROXY"

# 1. gRPC through the proxy: a put lands in etcd
if inp etcdctl --endpoints "$PROXY" put /keysteer/px/a via-proxy >"$E2E_TMP/put.out" 2>&1 &&
	[ "$(inp etcdctl --endpoints "$ETCD" get /keysteer/px/a --print-value-only 2>&1)" = via-proxy ]; then
	pass etcd_proxy_forwards_grpc
else
	fail etcd_proxy_forwards_grpc "a put through the proxy did not reach etcd: $(cat "$E2E_TMP/put.out")"
fi

# 2. two watches of one prefix through the proxy: one watcher at etcd;
# a direct watch: one more. Each watch has seen an event first, so it is
# established, not on its way.
base=$(watchers)
for w in p1 p2 d; do
	ep=$PROXY
	[ "$w" = d ] && ep=$ETCD
	ks_in_ns_bg "$PNS" etcdctl --endpoints "$ep" watch --prefix /keysteer/px/w/ \
		</dev/null >"$E2E_TMP/watch.$w" 2>&1
	WATCH_PIDS+=("$KS_BG_PID")
done
seen=0
for ((i = 0; i < 100 && seen < 3; i++)); do
	inp etcdctl --endpoints "$ETCD" put "/keysteer/px/w/$i" x >/dev/null 2>&1
	sleep 0.1
	seen=0
	for w in p1 p2 d; do
		grep -q /keysteer/px/w/ "$E2E_TMP/watch.$w" 2>/dev/null && seen=$((seen + 1))
	done
done
if [ "$seen" != 3 ]; then
	fail etcd_proxy_coalesces_watches "$seen of the three watches saw an event in 10 s: $(tail -c 300 "$E2E_TMP/watch.p1")"
elif wait_watchers "$((${base:-0} + 2))"; then
	pass etcd_proxy_coalesces_watches
else
	fail etcd_proxy_coalesces_watches "etcd keeps $(watchers) watchers (before: $base), want $((${base:-0} + 2)): one for the two proxied watches, one for the direct"
fi
for pid in "${WATCH_PIDS[@]}"; do
	ks_stop_pid "$pid" TERM 3
done
WATCH_PIDS=()

# 3. what the proxy serves over HTTP/1.1 besides gRPC
h=$(inp curl -s -m 5 -w ' %{http_code}' "http://$PROXY/health")
m=$(inp curl -s -m 5 -o /dev/null -w '%{http_code}' "http://$PROXY/metrics")
if [ "$h" = '{"health":"true"} 200' ] && [ "$m" = 200 ]; then
	pass etcd_proxy_serves_health_metrics
else
	fail etcd_proxy_serves_health_metrics "/health '$h', /metrics $m"
fi

# 4. the JSON gateway: etcd answers, the proxy does not
bad=
for req in '/v3/kv/range {"key":"L2tleXN0ZWVyL3B4L2E="}' \
	'/v3beta/kv/range {"key":"L2tleXN0ZWVyL3B4L2E="}' \
	'/v3/watch {"create_request":{"key":"L2tleXN0ZWVyL3B4L2E="}}' \
	'/v3/maintenance/status {}'; do
	path=${req%% *}
	body=${req#* }
	direct=$(status "$ETCD$path" "$body")
	proxied=$(status "http://$PROXY$path" "$body")
	note "POST $path: etcd $direct, grpc-proxy $proxied"
	if [ "$direct" != 200 ]; then
		bad+="etcd itself answered $path with $direct (the control); "
	elif [ "$proxied" != 404 ]; then
		bad+="the proxy answered $path with $proxied, not 404: docs/fleet.md ('Beyond one etcd: grpc-proxy') says it does not serve the gateway, and clients could follow through it; "
	fi
done
if [ -z "$bad" ]; then
	pass etcd_proxy_no_json_gateway
else
	fail etcd_proxy_no_json_gateway "$bad"
fi

# 5. the clients through the proxy: refused at once, naming the 404; the
# same through etcd: served (the control)
inp "$E2E_ROOT/${OUT:-build}/agent" ring set --etcd "$ETCD" --cluster px \
	--shards 198.18.8.1:11211,198.18.8.2:11211 >"$E2E_TMP/ring.out" 2>&1
inp timeout 30 "$SWARM" --spec "etcd=http://$PROXY cluster=px" --handles 1 \
	</dev/null >"$E2E_TMP/lib.proxy" 2>&1
rp=$?
inp timeout 30 "$SWARM" --spec "etcd=$ETCD cluster=px" --handles 1 \
	</dev/null >"$E2E_TMP/lib.etcd" 2>&1
rd=$?
if [ "$rd" != 0 ] || ! grep -q '^OPENED handles=1 ' "$E2E_TMP/lib.etcd"; then
	fail etcd_proxy_library_refused "the control: a handle on etcd itself did not open (exit $rd): $(tail -c 300 "$E2E_TMP/lib.etcd"; cat "$E2E_TMP/ring.out")"
elif [ "$rp" = 1 ] && grep -q 'HTTP 404' "$E2E_TMP/lib.proxy"; then
	pass etcd_proxy_library_refused
else
	fail etcd_proxy_library_refused "a handle through the proxy: exit $rp, want 1 with 'HTTP 404': $(tail -c 300 "$E2E_TMP/lib.proxy")"
fi

ap=$(inp timeout 30 "$AGENT" ring get --etcd "http://$PROXY" --cluster px 2>&1)
rp=$?
ad=$(inp timeout 30 "$AGENT" ring get --etcd "$ETCD" --cluster px 2>&1)
rd=$?
if [ "$rd" != 0 ]; then
	fail etcd_proxy_agent_refused "the control: ring get on etcd itself exited $rd: $ad"
elif [ "$rp" != 0 ] && [ "$rp" != 124 ] && grep -q 'HTTP 404' <<<"$ap"; then
	pass etcd_proxy_agent_refused
else
	fail etcd_proxy_agent_refused "ring get through the proxy: exit $rp, want an error naming HTTP 404: $ap"
fi
# 6. the control in full: handles on etcd itself follow it. A put made
# after they opened reaches their views (keysteer_view_revision, as make
# bench-clients polls it, reaches the put's revision); a revision never
# written is reported unseen, so the check can fail.
mkfifo "$E2E_TMP/swarm.in"
exec 4<>"$E2E_TMP/swarm.in"
# nsenter directly: a function's background command gets /dev/null as stdin
nsenter --net="$KS_NETNS_RUN/$PNS" -- "$SWARM" --spec "etcd=$ETCD cluster=px" \
	--handles 2 --wait-ms 10000 <"$E2E_TMP/swarm.in" >"$E2E_TMP/swarm.out" \
	2>"$E2E_TMP/swarm.err" &
WATCH_PIDS+=("$!")
rev=
if e2e_wait_line "$E2E_TMP/swarm.out" '^OPENED handles=2 ' "$!" 300; then
	rev=$(inp etcdctl --endpoints "$ETCD" put /keysteer/px/hot/00000000000000aa \
		'{"schema":1,"hash":"00000000000000aa","owner":"198.18.8.1:11211","copies":1,"state":"counting"}' \
		-w json 2>&1 | sed -n 's/.*"revision":\([0-9]*\).*/\1/p')
fi
if [ -n "$rev" ]; then
	printf 'W %s 0\nW %s 0\nQ\n' "$rev" "$((rev + 1000))" >&4
	e2e_wait_line "$E2E_TMP/swarm.out" '^BYE ' "${WATCH_PIDS[-1]}" 600
fi
if [ -z "$rev" ]; then
	fail etcd_proxy_control_view_follows "no handles opened, or no revision from the put: $(tail -c 300 "$E2E_TMP/swarm.err")"
elif grep -qE "^SEEN $rev 2 0 " "$E2E_TMP/swarm.out" &&
	grep -qE "^SEEN $((rev + 1000)) 0 0 -1 -1$" "$E2E_TMP/swarm.out"; then
	pass etcd_proxy_control_view_follows
else
	fail etcd_proxy_control_view_follows "want revision $rev seen by both views and $((rev + 1000)) by none: $(grep '^SEEN' "$E2E_TMP/swarm.out" | cut -c1-120)"
fi
exec 4>&-
exit "$E2E_FAILED"
