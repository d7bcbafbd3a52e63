#!/usr/bin/env bash
# test_limit_auto_down.sh - the automatic cap decides from what the shard
# serves, not from the hot-key policy's verdict (docs/limits.md, "The
# automatic cap", "Which keys"): read-hot keys whose only replica is down
# keep their reads on the owner, and are capped.
#
# Real memcached in a namespace, the agent attached with --interval 0.5
# --sample 1 --shard-capacity 1000 --hot-fraction 0.1 --limit-auto 0.4 (a
# line and a cap of 400/s) and --replicas naming an address nothing
# listens on (the server's own address, port 11299: the replica's
# memcached is down, every copy's fill is refused, the datapath never arms
# the keys and leaves every get with the owner). build/ks_load sends,
# from the client namespace, down:1 600 gets/s over UDP and tcp:1 600
# gets/s over TCP (a plain client: it reads the owner whatever the
# copies): both read-hot with 2 copies wanted in the hot-key table (the
# verdict "copied"), all of it served by the owner.
#
# 1. The control (--limit-auto-residual verdict, a test switch: the
#    residual from the verdict, as before): for 12 of the agent's
#    intervals after the table's verdict, neither key is capped, nothing
#    refused, ks_limits empty, though the owner serves all their
#    1,200/s: the shard melts with the cap on.
# 2. Measured (the default): the table's verdict is the same (2 copies
#    wanted, nothing steered, not armed); the agent logs both keys capped
#    at 400/s (waited for, bounded); two intervals later with refusals
#    the loads stop, and the refusals ks_load saw for down:1 equal the
#    datapath's count for the key exactly, no get of it was answered by
#    another host and none timed out or failed; tcp:1's row counts its
#    TCP gets and refuses none (the datapath cannot refuse inside a TCP
#    stream: counted, reported), no error.
# 3. On SIGINT the agent exits 0 and leaves nothing behind.
#
# Names: namespaces kac_cli_$$ / kac_srv_$$, veths kac_c$$ / kac_s$$
# (198.18.0.1 / .2), all removed on every exit path.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../../user/scripts/steer_topo.sh
. "$E2E_ROOT/user/scripts/steer_topo.sh" # _steer_tx_csum_off only
e2e_init limit_auto_down
e2e_prefix kac
e2e_need_load limit_auto_down_setup
e2e_require limit_auto_down_setup "make deps: bpftool" bpftool
CAP=400 # 0.4 x 1000
DOWN=198.18.0.2:11299
LOAD_PIDS=()

down_cleanup() {
	local rc=$? p
	for p in "${LOAD_PIDS[@]}"; do
		ks_stop_pid "$p" INT 5
	done
	[ -n "$E2E_AGENT_PID" ] && e2e_agent_stop INT
	(exit "$rc")
	e2e_cleanup
}
trap down_cleanup EXIT

e2e_net_up
# steering needs forwarding for the next-hop lookup (agent run checks); a
# refusal's reply (XDP_TX) reaches the veth's peer only with an XDP
# program there; the client's frames carry whole checksums (steer_topo.sh
# says why)
EMPTY=$E2E_ROOT/${OUT:-build}/ks_empty.bpf.o
if ! ks_in_ns "$SNS" sysctl -qw "net.ipv4.conf.$SIF.forwarding=1" >/dev/null ||
	! ip -n "$CNS" link set dev "$CIF" xdpdrv obj "$EMPTY" sec xdp ||
	! _steer_tx_csum_off "$CNS" "$CIF"; then
	fail limit_auto_down_setup "cannot set up forwarding and XDP_TX in the namespaces"
	exit 1
fi
# nothing listens where the replica should be: a connection is refused
if ks_in_ns "$SNS" "$PY" -c '
import socket, sys
h, p = sys.argv[1].rsplit(":", 1)
socket.create_connection((h, int(p)), timeout=2)
' "$DOWN" 2>/dev/null; then
	fail limit_auto_down_setup "something listens on $DOWN"
	exit 1
fi
if ! ks_in_ns "$CNS" "$PY" - "$SADDR" "$PORT" <<'EOF'; then
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
for k in (b"down:1", b"tcp:1"):
    s.sendall(b"set %s 0 0 5\r\nvalue\r\n" % k)
    assert s.recv(100) == b"STORED\r\n"
EOF
	fail limit_auto_down_setup "cannot set the keys"
	exit 1
fi

agent_args=(--interval 0.5 --sample 1 --shard-capacity 1000 --hot-fraction 0.1
	--limit-auto 0.4 --shards "$SADDR:$PORT" --self "$SADDR:$PORT"
	--replicas "$DOWN" --log-keys -v)

# load_start: both loads in the background (bounded by a duration,
# stopped by SIGINT), their JSON in $E2E_TMP/{down,tcp}.json
load_start() {
	local name proto
	LOAD_PIDS=()
	for name in down tcp; do
		proto=udp
		[ "$name" = tcp ] && proto=tcp
		ks_in_ns_bg "$CNS" nice -n "$KS_NICE" "$LOAD" --json \
			--server "$SADDR:$PORT" --proto "$proto" --mix get=100 \
			--keys 1 --key-prefix "$name:" --value-size 5 --rate 600 \
			--conns 4 --duration 120 --timeout 2 \
			>"$E2E_TMP/$name.json" 2>"$E2E_TMP/$name.err"
		LOAD_PIDS+=("$KS_BG_PID")
	done
}
dp_limits() {
	ks_in_ns "$SNS" "$PY" "$E2E_DIR/ks_limits_dump.py" "$PIN_ROOT/$SIF"
}
# verdict FILE [KEY]: KEY (down:1) in the report's hot keys as "copies
# copies_wanted state steered": the datapath's copies, the table's (its
# verdict), ... (nothing when it is not there); FILE keeps the report
verdict() {
	[ -s "$1" ] || e2e_agent report --iface "$SIF" --json >"$1" 2>"$1.err" ||
		return 1
	"$PY" - "$1" "${2:-down:1}" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for h in d["hot_keys"]:
    if h.get("key") == sys.argv[2]:
        print(h["copies"], h["copies_wanted"], h["state"],
              h["steered_per_s"])
EOF
}
# wait_verdict: down:1 copied (copies >= 2) in the table, polled once an
# interval for at most 40 intervals; the line in $VERDICT
wait_verdict() {
	local i c
	VERDICT=
	for ((i = 0; i < 40; i++)); do
		e2e_wait_intervals 1 || return 1
		rm -f "$E2E_TMP/report.json"
		VERDICT=$(verdict "$E2E_TMP/report.json") || continue
		read -r _ c _ <<<"$VERDICT"
		[ "${c:-0}" -ge 2 ] && return 0
	done
	return 1
}

# --- 1. the control: the verdict's residual ------------------------------------------
if ! KEYSTEER_TEST_SWITCHES=1 e2e_agent_start "${agent_args[@]}" \
	--limit-auto-residual verdict; then
	fail limit_auto_down_control "agent run did not attach"
	exit 1
fi
load_start
if ! wait_verdict; then
	fail limit_auto_down_control "the table never copied down:1: '${VERDICT}' $(tail -n 3 "$E2E_TMP/agent.out")"
	exit 1
fi
note "control: down:1 in the report (copies, copies wanted, state, steered/s): $VERDICT"
if ! e2e_wait_intervals 12; then
	fail limit_auto_down_control "the agent logged no intervals"
	exit 1
fi
c_verdict=$(verdict "$E2E_TMP/report_c.json")
c_tverdict=$(verdict "$E2E_TMP/report_c.json" tcp:1)
lim=$(dp_limits) || lim="(cannot read ks_limits)"
if ! e2e_loads_stop; then
	fail limit_auto_down_control "a load failed: $(head -c 300 "$E2E_TMP"/*.err)"
	exit 1
fi
read -r c_ops c_ref c_err c_to c_steer < <(e2e_load_gets down)
read -r t_ops t_ref t_err _ _ < <(e2e_load_gets tcp)
read -r _ c_copies c_state _ <<<"$c_verdict"
read -r _ t_copies _ <<<"$c_tverdict"
note "control: down:1 $c_ops gets, $c_ref refused, $c_err errors, $c_to timeouts, $c_steer answered elsewhere; tcp:1 $t_ops gets, $t_err errors; verdicts at the end '$c_verdict' / '$c_tverdict'; ks_limits '${lim}'"
if [ "${c_copies:-0}" -ge 2 ] && [ "${t_copies:-0}" -ge 2 ] && [ "$c_state" != armed ] &&
	[ "$c_ops" -gt 0 ] && [ "$t_ops" -gt 0 ] && [ "$c_ref" = 0 ] &&
	[ "$c_steer" = 0 ] && [ -z "$lim" ] &&
	! grep -q "automatic cap: .*limited" "$E2E_TMP/agent.out"; then
	pass limit_auto_down_control_verdict_never_caps
else
	fail limit_auto_down_control_verdict_never_caps "verdicts '$c_verdict' / '$c_tverdict', $c_ref refused, $c_steer steered, ks_limits '${lim}'"
fi
e2e_agent_stop INT

# --- 2. measured -----------------------------------------------------------------------
if ! e2e_agent_start "${agent_args[@]}"; then
	fail limit_auto_down "agent run did not attach"
	exit 1
fi
load_start
for key in down:1 tcp:1; do
	if ! e2e_wait_line "$E2E_TMP/agent.out" "automatic cap: $key limited to $CAP/s" \
		"$E2E_AGENT_PID" 300; then
		fail limit_auto_down_capped "$key not capped in 30 s: $(tail -n 5 "$E2E_TMP/agent.out")"
		exit 1
	fi
done
pass limit_auto_down_capped
# the interval the table first held a key (-v) and the one down:1 was
# capped in, for docs/limits.md
v_seq=$(sed -n 's/^agent: debug: #\([0-9]*\) hot keys [1-9].*/\1/p' "$E2E_TMP/agent.out" | head -n 1)
cap_seq=$(awk '/automatic cap: down:1 limited/ { f = 1 } f && /^keysteer: #[0-9]+ / {
	sub(/^keysteer: #/, ""); print $1; exit }' "$E2E_TMP/agent.out")
note "$(grep -m 1 "automatic cap: down:1" "$E2E_TMP/agent.out") (a key in the table from #${v_seq:-?}, down:1 capped in #${cap_seq:-?})"
note "$(grep -m 1 "automatic cap: tcp:1" "$E2E_TMP/agent.out")"
seq=$(sed -n 's/^keysteer: #\([0-9]*\) .*/\1/p' "$E2E_TMP/agent.out" | tail -n 1)
e2e_wait_line "$E2E_TMP/agent.out" \
	"^keysteer: #$((seq + 2)) limits: 2 keys, [0-9.]+/s allowed, [1-9][0-9.]*/s refused.*; 2 automatic at $CAP/s" \
	"$E2E_AGENT_PID" 300
m_verdict=$(verdict "$E2E_TMP/report_m.json")
m_tverdict=$(verdict "$E2E_TMP/report_m.json" tcp:1)
if ! e2e_loads_stop; then
	fail limit_auto_down "a load failed: $(head -c 300 "$E2E_TMP"/*.err)"
	exit 1
fi
# read at once: the cap holds 5 intervals after the loads stopped
lim=$(dp_limits) || lim=""
read -r m_ops m_ref m_err m_to m_steer < <(e2e_load_gets down)
read -r t_ops t_ref t_err _ _ < <(e2e_load_gets tcp)
read -r _ m_copies m_state _ <<<"$m_verdict"
read -r _ t_copies _ <<<"$m_tverdict"
read -r _ _ l_ref _ <<<"$(grep '^down:1 ' <<<"$lim")"
read -r _ _ lt_ref _ lt_tcp <<<"$(grep '^tcp:1 ' <<<"$lim")"
note "measured: down:1 $m_ops gets, $m_ref refused, $m_err errors, $m_to timeouts, $m_steer answered elsewhere; tcp:1 $t_ops gets, $t_err errors; verdicts while capped '$m_verdict' / '$m_tverdict'; ks_limits '$(tr '\n' ';' <<<"$lim")'"
# the verdict was the control's: copied, though nothing went to a copy
if [ "${m_copies:-0}" -ge 2 ] && [ "${t_copies:-0}" -ge 2 ] && [ "$m_state" != armed ] &&
	[ "$m_steer" = 0 ]; then
	pass limit_auto_down_verdict_said_copied
else
	fail limit_auto_down_verdict_said_copied "verdicts '$m_verdict' / '$m_tverdict', $m_steer answered elsewhere"
fi
if [ "$(grep -c . <<<"$lim")" = 2 ] && [ "$m_ref" -gt 0 ] &&
	[ "${l_ref:-}" = "$m_ref" ] && [ "$m_err" = 0 ] && [ "$m_to" = 0 ]; then
	pass limit_auto_down_refused_counts_exact
else
	fail limit_auto_down_refused_counts_exact "ks_limits '${lim}', ks_load refused $m_ref, errors $m_err, timeouts $m_to"
fi
if [ "${lt_ref:-x}" = 0 ] && [ "${lt_tcp:-0}" -gt 0 ] && [ "$t_err" = 0 ] &&
	[ "$t_ref" = 0 ]; then
	pass limit_auto_down_tcp_counted_not_refused
else
	fail limit_auto_down_tcp_counted_not_refused "tcp:1 row '$(grep '^tcp:1 ' <<<"$lim")', ks_load errors $t_err refused $t_ref"
fi

# --- 3. stop ---------------------------------------------------------------------------
e2e_agent_stop_clean limit_auto_down
exit "$E2E_FAILED"
